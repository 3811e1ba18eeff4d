#!/usr/bin/env bash
# tests/test_pytorch_baseline.sh: the cpu backend against the committed PyTorch/transformers run
# of gpt2-tiny (baselines/gpt2-tiny.pytorch.baseline, made by tools/reference/train_reference.py):
# every step's loss and grad norm within the scenario's tolerances; no "nanx" ratio in the summary.
# usage: test_pytorch_baseline.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
"$H" run "$SRC/scenarios/gpt2-tiny.json" --compare --baseline pytorch \
  --baselines "$SRC/baselines" --db "$T/a.db" >"$T/out" 2>&1
rc=$?
grep -E '^(loss|grad_norm) ' "$T/out"
# the baseline has no throughput: the summary's "vs base" is "-", never "nanx"
if [ "$rc" = 0 ] && grep -q '^verdict: pass' "$T/out" && ! grep -q 'nanx' "$T/out"; then
  echo "test_pytorch_baseline: 1 passed, 0 failed"
else
  tail -20 "$T/out"; echo "test_pytorch_baseline: 0 passed, 1 failed (exit $rc)"; exit 1
fi
