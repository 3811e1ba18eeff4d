#!/usr/bin/env bash
# tests/test_cuda_nogpu.sh: the cuda backend built on a machine without a GPU (CI): `harness
# devices` says why in one line and exits 0; `--device cuda` is exit 2 with the driver's reason.
# usage: test_cuda_nogpu.sh HARNESS_EXE SOURCE_DIR

# Exit 77 (skipped) when the build has no cuda backend, or when a CUDA device is present (then
# tools/gpu-check.sh is the test).
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"

"$H" devices >"$T/dev" 2>&1
if ! grep -q "^backends in this build:.* cuda" "$T/dev"; then
  echo "SKIP: this build has no cuda backend (HARNESS_CUDA=OFF or no nvcc)"; exit 77
fi
if grep -q "^cuda:[0-9]" "$T/dev"; then
  echo "SKIP: a CUDA device is present; run tools/gpu-check.sh"; exit 77
fi

expect 0 "harness devices without a GPU" -- "$H" devices
n="$(grep -c '^cuda' "$T/out")"
if [ "$n" = 1 ] && grep -q "^cuda: no CUDA device on this machine (cudaGetDeviceCount: " "$T/out"; then pass
else fail "want one line 'cuda: no CUDA device on this machine (...)', got $n:"; grep '^cuda' "$T/out"; fi
if [ ! -s "$T/err" ]; then pass; else fail "harness devices wrote to stderr"; fi
expect 0 "harness devices --json without a GPU" -- "$H" devices --json
if ! grep -q '"cuda' "$T/out"; then pass; else fail "the JSON lists a cuda device"; fi

# cuBLAS is loaded at a cuda device's open (devices/cuda/cu_blas.c), never at start: linked, its
# 0.5 GB libcublasLt was mapped by every command, cpu runs and --help included
LD_DEBUG=files "$H" devices >"$T/ld.out" 2>"$T/ld.err"
if grep -q "file=libcublas" "$T/ld.err"; then fail "harness devices loaded cuBLAS:"; grep "file=libcublas" "$T/ld.err" | head -2
elif ! grep -q "file=" "$T/ld.err"; then fail "LD_DEBUG=files printed no loaded file: the check sees nothing"
else pass; fi

for spec in cuda cuda:0 cuda:H100; do
  expect 2 "ops --device $spec" -- "$H" ops --device "$spec"
  says "cuda: no CUDA device (cudaGetDeviceCount: "
done
expect 2 "run --device cuda" -- "$H" run "$SRC/scenarios/gpt2-tiny.json" --device cuda --db "$T/r.db"
says "cuda: no CUDA device (cudaGetDeviceCount: "
if [ ! -e "$T/r.db" ] || [ "$(sqlite3 "$T/r.db" 'SELECT count(*) FROM runs' 2>/dev/null || echo 0)" = 0 ]; then pass
else fail "a run was recorded for a device that cannot open"; fi
finish
