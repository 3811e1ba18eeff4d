#!/usr/bin/env bash
# tests/test_bench_vs_torch.sh: bench_train's new options and bench/bench_vs_torch.sh refuse bad
# input (exit 2, naming it), and the script runs and says so when torch is absent. No timing.
# usage: test_bench_vs_torch.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
BUILD="$(dirname "$H")"
BT="$BUILD/bench_train"
[ -x "$BT" ] || { echo "no $BT: skipped"; exit 77; }
export OMP_NUM_THREADS=1

expect 2 "dropout above 1" -- "$BT" --dropout 1.5
says "--dropout '1.5' is not in [0, 1)"
expect 2 "dropout not a number" -- "$BT" --dropout 0.1x
says "--dropout '0.1x'"
expect 2 "unknown family" -- "$BT" --family t5
says "--family 't5': gpt2 or bert"
expect 2 "option without its value" -- "$BT" --steps
says "--steps has no value"
expect 2 "inter not a number" -- "$BT" --inter -3
says "--inter"

S="$SRC/bench/bench_vs_torch.sh"
expect 2 "threads not a number" -- bash "$S" "$BUILD" two 1
says "THREADS and ROUNDS are positive integers"
expect 2 "zero rounds" -- bash "$S" "$BUILD" 1 0
says "must be >= 1"
expect 2 "no build there" -- bash "$S" "$T/nothing" 1 1
says "not built"

# torch absent: the harness figures alone, said plainly; bert-tiny is a few ms a step
expect 0 "torch absent" -- env HARNESS_PYTHON="$T/no-python" bash "$S" "$BUILD" 1 1 bert-tiny
grep -q "torch is ABSENT" "$T/out" && pass || fail "no 'torch is ABSENT' line"
grep -Eq "harness cpu \(fp32\) +[0-9.]+ +[0-9]+" "$T/out" && pass || fail "no cpu figure"
grep -Eq "harness cpu64 \(fp64, golden\) +[0-9.]+" "$T/out" && pass || fail "no cpu64 figure"
grep -q "cpu64 / cpu speed:" "$T/out" && pass || fail "no cpu64 / cpu ratio"
grep -Eq "^  (torch|transformers)" "$T/out" && fail "a torch row without torch" || pass

# with torch: one step of a peer prints its line (skipped without a Python that has torch)
PY="${HARNESS_PYTHON:-$BUILD/venv/bin/python}"
if "$PY" -c 'import torch, transformers' 2>/dev/null; then
  expect 0 "torch peer" -- "$PY" "$SRC/tools/bench_torch_peers.py" --family bert --peer hf \
    --threads 1 --layers 1 --embd 32 --heads 2 --inter 64 --seq 16 --batch 2 --vocab 100 \
    --steps 1 --warmup 0
  grep -Eq "^torch_peer: hf bert .* median_ms [0-9.]+" "$T/out" && pass || fail "no torch_peer line"
  # --profile: the ops' table and the matmul split of the profiled steps
  expect 0 "torch peer profiled" -- "$PY" "$SRC/tools/bench_torch_peers.py" --family gpt2 \
    --peer eager --threads 1 --layers 1 --embd 32 --heads 2 --seq 16 --batch 2 --vocab 100 \
    --steps 1 --warmup 0 --profile
  grep -Eq "^torch_profile: aten::(mm|addmm) +[0-9.]+ ms/step" "$T/out" && pass ||
    fail "no matmul op in the profile table"
  grep -Eq "^torch_profile: matmul .* [0-9.]+ ms/step, the rest [0-9.]+ ms/step" "$T/out" && pass ||
    fail "no matmul split line"
else
  echo "no Python with torch at $PY: the peer's run skipped"
fi
# the peer's own checks come before torch is imported: any python3 runs them
if command -v python3 >/dev/null; then
  expect 2 "own module for llama" -- python3 "$SRC/tools/bench_torch_peers.py" --family llama \
    --peer eager
  says "written for gpt2 only"
  expect 2 "zero steps" -- python3 "$SRC/tools/bench_torch_peers.py" --steps 0
  says "must be >= 1"
  expect 2 "dropout 1" -- python3 "$SRC/tools/bench_torch_peers.py" --dropout 1
  says "dropout in [0, 1)"
fi
finish
