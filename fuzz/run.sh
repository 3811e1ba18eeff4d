#!/usr/bin/env bash
# fuzz/run.sh: a bounded fuzzing run of one target from its seed corpus (new inputs go to
# build-fuzz/corpus-TARGET; crashes to build-fuzz/crash-*). usage: bash fuzz/run.sh TARGET [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: fuzz/run.sh safetensors|tokenizer|logparse|mmidx [SECONDS]}"; secs="${2:-60}"
[ -x "build-fuzz/fuzz_$target" ] || bash fuzz/build.sh
mkdir -p "build-fuzz/corpus-$target"
cd build-fuzz
export HARNESS_SOURCE="${HARNESS_SOURCE:-$(cd .. && pwd)}"
dict=(); [ -f "../fuzz/$target.dict" ] && dict=(-dict="../fuzz/$target.dict")
"./fuzz_$target" "${dict[@]}" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix=./ "corpus-$target" "../fuzz/corpus/$target"
