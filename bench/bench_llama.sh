#!/usr/bin/env bash
# bench/bench_llama.sh: llama-family training throughput on cpu, the harness (bench_llama) beside
# transformers' LlamaForCausalLM / MixtralForCausalLM (tools/bench_llama_torch.py) in the same
# run, same config, threads and batch, for the tiny and a mid-size config.
# usage: bash bench/bench_llama.sh [BUILD_DIR] [THREADS] [STEPS]
# The torch lines need $HARNESS_PYTHON (or BUILD_DIR/venv) with torch and transformers; skipped
# with a note otherwise. No figure is asserted.
set -u
BUILD="${1:-build}"; THREADS="${2:-1}"; STEPS="${3:-5}"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
BENCH="$BUILD/bench_llama"
[ -x "$BENCH" ] || { echo "bench_llama.sh: $BENCH not built (cmake --build $BUILD)" >&2; exit 2; }
PY="${HARNESS_PYTHON:-$BUILD/venv/bin/python}"
torch_ok=0
"$PY" -c 'import torch, transformers' 2>/dev/null && torch_ok=1
[ "$torch_ok" = 1 ] || echo "bench_llama.sh: no Python with torch and transformers at $PY: harness figures only"
export OMP_NUM_THREADS="$THREADS"
# name, then the flags both sides take
configs=(
  "tiny (llama-tiny's sizes)|--layers 2 --hidden 64 --heads 4 --kv-heads 2 --inter 128 --seq 64 --batch 8 --vocab 256"
  "tiny mixtral (mixtral-tiny's sizes)|--layers 2 --hidden 64 --heads 4 --kv-heads 2 --inter 64 --seq 64 --batch 8 --vocab 256 --experts 4 --topk 2"
  "mid-size llama|--layers 4 --hidden 512 --heads 8 --kv-heads 4 --inter 1376 --seq 256 --batch 4 --vocab 32000"
)
status=0
for c in "${configs[@]}"; do
  name="${c%%|*}"; flags="${c#*|}"
  echo "== $name, $THREADS thread(s), $STEPS steps"
  # shellcheck disable=SC2086
  "$BENCH" $flags --steps "$STEPS" || status=1
  if [ "$torch_ok" = 1 ]; then
    # shellcheck disable=SC2086
    "$PY" "$SRC/tools/bench_llama_torch.py" --threads "$THREADS" $flags --steps "$STEPS" || status=1
  fi
done
exit $status
