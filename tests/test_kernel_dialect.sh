#!/usr/bin/env bash
# tests/test_kernel_dialect.sh: the kernels of devices/kernels/ are one source for the opencl and
# cuda backends: the kernel list, the kernel files and the cuda build's includes agree.
# usage: test_kernel_dialect.sh HARNESS_EXE SOURCE_DIR

# Checks that every KERNEL in devices/kernels/*.cl is in kernel_list.h and back, that
# devices/cuda/cu_kernels.cu includes every kernel file, and that no kernel file uses OpenCL C
# words the dialect maps (a raw __kernel, __global, barrier() would build for one backend only).
set -u
SRC="$2"
. "$(dirname "$0")/lib.sh"
K="$SRC/devices/kernels"

grep -ohE '^KERNEL void [a-z_0-9]+' "$K"/*.cl | awk '{print $3}' | sort >"$T/defined"
sed -nE 's/^ *X\(K_[A-Z0-9_]+, ([a-z_0-9]+)\).*/\1/p' "$K/kernel_list.h" | sort >"$T/listed"
if [ -s "$T/defined" ] && diff "$T/defined" "$T/listed" >"$T/diff"; then pass
else fail "kernels defined vs listed in kernel_list.h differ:"; cat "$T/diff"; fi

for f in "$K"/*.cl; do
  b="$(basename "$f")"
  if grep -q "^#include \"kernels/$b\"" "$SRC/devices/cuda/cu_kernels.cu"; then pass
  else fail "devices/cuda/cu_kernels.cu does not include kernels/$b"; fi
done

raw="$(grep -nE '__kernel|__global|__local|get_(global|local|group)_(id|size)|barrier\(|atomic_cmpxchg' \
       "$K"/*.cl | grep -v '^[^:]*:[0-9]*: *\*\|/\*' || true)"
if [ -z "$raw" ]; then pass; else fail "OpenCL C words outside the dialect:"; echo "$raw" | head; fi
finish
