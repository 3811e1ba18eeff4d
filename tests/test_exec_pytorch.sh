#!/usr/bin/env bash
# tests/test_exec_pytorch.sh: one table across implementations: gpt2-tiny from the same `harness
# init` weights trained by workloads/hf_causal_lm.py under `harness exec` (PyTorch CPU), by the C
# runner on cpu and (when present) opencl; the PyTorch run must pass against the cpu run, and
# `harness report` shows every row. Needs the venv of tools/pyenv.sh (BUILD/venv): skipped without.
# usage: test_exec_pytorch.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "test_exec_pytorch: skipped: no Python with torch and transformers at $PY"
  echo "  (make it with: bash tools/pyenv.sh $(dirname "$H"), or set HARNESS_PYTHON)"
  exit 77
fi
tiny="$SRC/scenarios/gpt2-tiny.json"
db="$T/x.db"
echo "harness init gpt2-tiny"
expect 0 "init" -- "$H" init "$tiny" "$T/init"
echo "harness exec: workloads/hf_causal_lm.py on PyTorch CPU (40 steps)"
expect 0 "exec hf_causal_lm.py" -- "$H" exec --scenario "$tiny" --device pytorch-cpu --db "$db" \
  -- "$PY" "$SRC/workloads/hf_causal_lm.py" --scenario "$tiny" --init "$T/init" --threads 1 --device cpu
grep -q "run 1: ok, 40 steps" "$T/err" && pass || fail "exec recorded 40 steps: $(tail -1 "$T/err")"
[ "$(grep -c '^HARNESS_STEP ' "$T/out")" = 40 ] && pass || fail "the workload's stdout passed through"
echo "harness run on cpu"
expect 0 "run cpu" -- "$H" run "$tiny" --device cpu --db "$db" --quiet
runs="1 2"
if "$H" devices 2>/dev/null | grep -q '^opencl'; then
  echo "harness run on opencl"
  expect 0 "run opencl" -- "$H" run "$tiny" --device opencl --db "$db" --quiet
  runs="1 2 3"
fi
echo "harness compare: PyTorch CPU (run 1) against the C runner on cpu (run 2)"
expect 0 "compare pytorch vs cpu" -- "$H" compare 1 --baseline 2 --db "$db"
grep -E '^(loss|grad_norm|verdict)' "$T/out"
grep -q '^verdict: pass' "$T/out" && pass || fail "PyTorch CPU within the fp32 tolerance of cpu"
if [ "$runs" = "1 2 3" ]; then
  expect 0 "compare opencl vs pytorch" -- "$H" compare 3 --baseline 1 --db "$db"
  grep -E '^(loss|verdict)' "$T/out"
fi
echo "harness report of every run"
# shellcheck disable=SC2086
"$H" report $runs --baseline 2 --out "$T/report" --db "$db" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 0 ] && pass || { fail "report: exit $rc"; head -5 "$T/err"; }
[ "$(grep -c 'gpt2-tiny' "$T/report/report.md")" -ge "$(echo $runs | wc -w)" ] && pass \
  || fail "report.md has a row per run"
grep -q 'pytorch-cpu' "$T/report/report.md" && pass || fail "report.md lists the pytorch-cpu run"
finish
