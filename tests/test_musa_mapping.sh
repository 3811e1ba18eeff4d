#!/usr/bin/env bash
# tests/test_musa_mapping.sh: the MUSA build maps every CUDA runtime, cuBLAS and NCCL name the cuda
# backend's and the nccl communicator's sources use (devices/cuda/musa_compat.h), so
# -DHARNESS_MUSA=ON cannot miss one.
# usage: test_musa_mapping.sh HARNESS_EXE SOURCE_DIR

# The MUSA toolchain is not here: this greps devices/cuda/ (and the kernels it compiles, and
# harness/comm/comm_nccl.c, which calls NCCL and the CUDA runtime) for
# cuda*/cublas*/CUBLAS_*/nccl*/NCCL_* identifiers and fails on any without a #define in the
# header, or a #define whose target is not a MUSA (musa*, mublas*, MUBLAS_*, mccl*) name.
set -u
SRC="$2"
. "$(dirname "$0")/lib.sh"
HDR="$SRC/devices/cuda/musa_compat.h"
NAMES='\b(cuda[A-Z][A-Za-z0-9_]*|cublas[A-Z][A-Za-z0-9_]*|CUBLAS_[A-Z0-9_]+|CUDA_[A-Z0-9_]+|nccl[A-Z][A-Za-z0-9_]*|NCCL_[A-Z0-9_]+|cu[A-Z][a-z][A-Za-z0-9_]*)\b'

# the names used: every source of the backend but the mapping itself, the kernel sources, and
# the nccl communicator
files=$(ls "$SRC"/devices/cuda/*.c "$SRC"/devices/cuda/*.h "$SRC"/devices/cuda/*.cu \
          "$SRC"/devices/kernels/* "$SRC"/devices/philox.h "$SRC"/harness/comm/comm_nccl.c |
        grep -v musa_compat.h)
grep -ohE "$NAMES" $files | sort -u >"$T/used"
if [ -s "$T/used" ]; then pass; else fail "no CUDA name found in devices/cuda (is the grep broken?)"; fi
# the communicator's NCCL calls are among them (the grep reads comm_nccl.c)
for name in ncclAllReduce ncclCommInitRankConfig ncclCommAbort; do
  if grep -qx "$name" "$T/used"; then pass; else fail "$name not found in comm_nccl.c's names"; fi
done
# the names mapped, and what they map to
sed -nE 's/^#define ([A-Za-z_][A-Za-z0-9_]*) ([A-Za-z_][A-Za-z0-9_]*)$/\1 \2/p' "$HDR" >"$T/map"
missing=0
while read -r name; do
  if ! grep -q "^$name " "$T/map"; then
    fail "devices/cuda uses $name, which musa_compat.h does not map"; missing=1
  fi
done <"$T/used"
[ "$missing" = 0 ] && pass
bad="$(awk '$2 !~ /^(musa|mublas|MUBLAS_|mccl|MCCL_)/' "$T/map")"
if [ -z "$bad" ]; then pass; else fail "mapped to a non-MUSA name: $bad"; fi
# the grep itself catches a name: a planted use of an unmapped function is reported
printf 'cudaMallocManaged(&p, 1);\nncclCommSplit(c, 0, 0, &d, NULL);\n' >"$T/planted.c"
grep -ohE "$NAMES" "$T/planted.c" | while read -r n; do grep -q "^$n " "$T/map" || echo "$n"; done >"$T/caught"
for name in cudaMallocManaged ncclCommSplit; do
  if grep -qx "$name" "$T/caught"; then pass; else fail "a planted unmapped name ($name) was not caught"; fi
done
echo "$(wc -l <"$T/used") CUDA names used, $(wc -l <"$T/map") mapped"
finish
