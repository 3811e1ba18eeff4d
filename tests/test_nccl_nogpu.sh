#!/usr/bin/env bash
# tests/test_nccl_nogpu.sh: --comm nccl without a GPU (CI): run and comm-check, one rank and two
# under mpirun, exit 2 with the driver's reason and nothing recorded; a build without NCCL says so;
# and (GPU or not) the id exchange and device checks of tests/test_comm_device.c over 2 MPI ranks.
# usage: test_nccl_nogpu.sh HARNESS_EXE SOURCE_DIR

# Exit 77 (skipped) after the MPI exchanges when a CUDA device is present: tools/gpu-check.sh runs
# NCCL on it then.
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"

# the host-side exchanges before NCCL starts, over MPI with two ranks (GPU or not): rank 0's id
# (or its failure) reaches rank 1, a rank without a device or two ranks on one stop both
UNIT="$(dirname "$H")/test_comm_device"
if command -v mpirun >/dev/null && [ -x "$UNIT" ] &&
   "$H" comm-check --help | grep -q "^Communicators in this build: single, mpi"; then
  expect 0 "mpirun -np 2 test_comm_device" -- env OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 HARNESS_SOURCE="$SRC" \
    timeout $((120 * SLOW)) mpirun -np 2 -x ASAN_OPTIONS=detect_leaks=0 --output-filename "$T/unit" "$UNIT"
  for r in 0 1; do # cmocka's verdict, on each rank's own stderr
    if grep -q "PASSED.*1 test" "$T/unit/1/rank.$r/stderr" 2>/dev/null; then pass
    else fail "mpirun -np 2 test_comm_device: rank $r did not pass"; fi
  done
else
  echo "no mpirun, no MPI build or no $UNIT: the two-rank exchanges are skipped"
fi

"$H" devices >"$T/dev" 2>&1
if grep -q "^cuda:[0-9]" "$T/dev"; then
  echo "SKIP: a CUDA device is present; run tools/gpu-check.sh"; exit 77
fi
"$H" comm-check --help >"$T/help"
if grep -q "^Communicators in this build: .*nccl" "$T/help"; then have_nccl=1; else have_nccl=0; fi
SCN="$T/gpt2.json"
sed -e "s|\"data/corpus.txt\"|\"$SRC/scenarios/data/corpus.txt\"|" "$SRC/scenarios/gpt2-tiny.json" >"$SCN"
sed -e 's|"world_size": 1|"world_size": 2|' "$SCN" >"$T/two.json"

# nothing_recorded DB: the store was not even created
nothing_recorded() { if [ ! -e "$1" ]; then pass; else fail "$1 was created"; fi; }

# options refused whatever the build (exit 2, before anything starts)
expect 2 "run --comm bogus" -- "$H" run "$SCN" --comm bogus --db "$T/a.db"
says "--comm: 'bogus' is not mpi, nccl or auto"
expect 2 "run --comm without a value" -- "$H" run "$SCN" --comm
expect 2 "run --compare --comm nccl" -- "$H" run "$SCN" --compare --comm nccl --db "$T/a.db"
says "--comm goes with one run, not with --compare"
expect 2 "comm-check --comm bogus" -- "$H" comm-check --comm bogus --db "$T/a.db"
says "comm-check: --comm: 'bogus' is not mpi, nccl or auto"
expect 2 "comm-check --comm ''" -- "$H" comm-check --comm "" --db "$T/a.db"
# an unknown option is named alone (the next argument was glued to it), an empty --db is said so
expect 2 "comm-check --bogus --db F" -- "$H" comm-check --bogus --db "$T/a.db"; says "unknown option '--bogus'"
expect 2 "comm-check --db ''" -- "$H" comm-check --db ""; says "--db: an empty value"
nothing_recorded "$T/a.db"

if [ "$have_nccl" = 0 ]; then
  echo "this build has no NCCL communicator: --comm nccl must say so"
  for dev in cuda cpu; do
    expect 2 "run --comm nccl --device $dev (no NCCL)" -- "$H" run "$SCN" --comm nccl --device "$dev" --db "$T/b.db"
    says "--comm nccl: this build has no NCCL communicator"
  done
  expect 2 "comm-check --comm nccl (no NCCL)" -- "$H" comm-check --comm nccl --db "$T/b.db"
  says "--comm nccl: this build has no NCCL communicator"
  nothing_recorded "$T/b.db"
  finish; exit $?
fi

echo "this build has NCCL and no GPU: --comm nccl is exit 2 with the driver's reason"
REASON="cuda: no CUDA device (cudaGetDeviceCount: "
expect 2 "comm-check --comm nccl, one rank" -- "$H" comm-check --comm nccl --sizes 8B:8B --db "$T/c.db"
says "comm-check: rank 0: --device cuda: $REASON"
expect 2 "comm-check --comm nccl --device cuda:0" -- "$H" comm-check --comm nccl --device cuda:0 --db "$T/c.db"
says "$REASON"
expect 2 "comm-check --comm nccl --device cpu" -- "$H" comm-check --comm nccl --device cpu --db "$T/c.db"
says "--comm nccl moves cuda device memory, but --device 'cpu' is not a cuda device"
expect 2 "run --comm nccl --device cuda, world 1" -- "$H" run "$SCN" --comm nccl --device cuda --db "$T/c.db"
says "run: rank 0: --device cuda: $REASON"
expect 2 "run --comm nccl on cpu" -- "$H" run "$SCN" --comm nccl --db "$T/c.db"
says "--device 'cpu' is not a cuda device"
nothing_recorded "$T/c.db"
# mpi asked on cuda: the host communicator, the device's own reason
expect 2 "run --comm mpi --device cuda" -- "$H" run "$SCN" --comm mpi --device cuda --db "$T/c.db"
says "$REASON"
nothing_recorded "$T/c.db"

if ! command -v mpirun >/dev/null; then
  echo "no mpirun: the two-rank cases are skipped"; finish; exit $?
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# each rank's stderr in a file of its own (Open MPI's --output-filename DIR/1/rank.N/stderr): the
# ranks' unbuffered writes would interleave on one stream
MPI="timeout $((120 * SLOW)) mpirun -np 2 -x ASAN_OPTIONS=detect_leaks=0 --output-filename $T/ranks"
# rank_says R TEXT: rank R's stderr of the last mpirun contains TEXT
rank_says() {
  if grep -qF -- "$2" "$T/ranks/1/rank.$1/stderr" 2>/dev/null; then pass
  else fail "rank $1's stderr lacks '$2':"; sed 's/^/    /' "$T/ranks/1/rank.$1/stderr" 2>/dev/null | head -5; fi
}
mpi() { rm -rf "$T/ranks"; expect "$@"; }
# two ranks: every rank stops with exit 2 after the device check, none waits in NCCL
mpi 2 "mpirun -np 2 comm-check --comm nccl" -- $MPI "$H" comm-check --comm nccl --sizes 8B:8B --db "$T/d.db"
rank_says 0 "comm-check: rank 0: --device cuda: $REASON"
rank_says 1 "comm-check: rank 1: --device cuda: $REASON"
mpi 2 "mpirun -np 2 run (auto: nccl on cuda)" -- $MPI "$H" run "$T/two.json" --device cuda --db "$T/d.db"
rank_says 1 "run: rank 1: --device cuda: $REASON"
mpi 2 "mpirun -np 2 run --comm nccl --device cpu" -- $MPI "$H" run "$T/two.json" --comm nccl --device cpu --db "$T/d.db"
rank_says 0 "--device 'cpu' is not a cuda device"
nothing_recorded "$T/d.db"
finish
