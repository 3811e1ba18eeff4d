#!/usr/bin/env bash
# tests/test_lowp_parity.sh: mixed-precision parity with PyTorch: gpt2-tiny-bf16 (and -fp16) from
# the same `harness init` weights trained by the harness on cpu and by PyTorch CPU autocast
# (workloads/hf_causal_lm.py), each loss curve's RMSE against the fp64 golden (gpt2-tiny, the same
# model, data and schedule, on cpu64); the two error ratios must be within a factor 3 of each
# other (docs/precision.md). Needs the venv of tools/pyenv.sh (BUILD/venv): skipped without.
# usage: test_lowp_parity.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "test_lowp_parity: skipped: no Python with torch and transformers at $PY"
  echo "  (make it with: bash tools/pyenv.sh $(dirname "$H"), or set HARNESS_PYTHON)"
  exit 77
fi
db="$T/p.db"
golden_scenario="$SRC/scenarios/gpt2-tiny.json"

# the last run's id in the store
last_run() { "$H" runs --db "$db" --limit 1 | awk '/^ID / {f = 1; next} f {print $1; exit}'; }
# the losses of run $1, one per line in step order
losses() { "$H" show "$1" --db "$db" | awk 'f && $1 ~ /^[0-9]+$/ {print $2} /^ *step +loss/ {f = 1}'; }
# RMSE over the steps of run $1's loss minus run $2's
rmse() {
  paste <(losses "$1") <(losses "$2") |
    awk '{d = $1 - $2; s += d * d; n++} END {if (n) printf "%.6e\n", sqrt(s / n); else print "none"}'
}

echo "golden: gpt2-tiny on cpu64 (fp64, no rounding), 30 steps"
expect 0 "golden run" -- "$H" run "$golden_scenario" --steps 30 --device cpu64 --db "$db" --quiet
golden="$(last_run)"

for dt in bf16 fp16; do
  S="$SRC/scenarios/gpt2-tiny-$dt.json"
  echo "== $dt"
  expect 0 "init $dt" -- "$H" init "$S" "$T/init-$dt"
  expect 0 "exec PyTorch CPU autocast $dt" -- "$H" exec --scenario "$S" --device "pytorch-cpu-$dt" \
    --db "$db" -- "$PY" "$SRC/workloads/hf_causal_lm.py" --scenario "$S" --init "$T/init-$dt" \
    --threads 1 --device cpu
  torch_run="$(last_run)"
  expect 0 "harness run $dt on cpu" -- "$H" run "$S" --device cpu --db "$db" --quiet
  grep -q "run .*: ok, 30 steps" "$T/out" && pass || fail "the $dt run trained 30 steps"
  harness_run="$(last_run)"
  e_torch="$(rmse "$torch_run" "$golden")"
  e_harness="$(rmse "$harness_run" "$golden")"
  echo "$dt loss RMSE vs the fp64 golden: PyTorch autocast $e_torch, harness cpu $e_harness"
  if awk -v a="$e_torch" -v b="$e_harness" 'BEGIN {exit !(a > 0 && b > 0 && a <= 3 * b && b <= 3 * a)}'
  then pass; else fail "$dt: error ratios $e_torch and $e_harness are not within a factor 3"; fi
done
finish
