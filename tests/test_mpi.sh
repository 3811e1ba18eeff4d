#!/usr/bin/env bash
# tests/test_mpi.sh: data-parallel runs under mpirun: np 2 with batch B equals one rank with 2B
# (and with accumulation) on cpu and opencl, per-rank rows, launcher checks, dead ranks, comm-check.
# usage: test_mpi.sh HARNESS_EXE SOURCE_DIR (skipped, 77, without mpirun or an MPI build)
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (Debian: openmpi-bin)"; exit 77; }
command -v sqlite3 >/dev/null || { echo "SKIP: no sqlite3"; exit 77; }
# as root Open MPI wants these; 2 ranks on a 2-core machine need --oversubscribe
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Under ASan, Open MPI's components (dlopen'ed, unloaded in MPI_Finalize before LeakSanitizer
# runs, so their frames have no module to suppress) report leaks of their own: leak checking is
# off in the processes that start MPI; ASan's and UBSan's other checks stay on.
MPI="timeout $((120 * SLOW)) mpirun -np 2 -x ASAN_OPTIONS=detect_leaks=0"
$MPI "$H" comm-check --sizes 8B:8B --op allreduce --iters 1 --db "$T/probe.db" >/dev/null 2>"$T/probe"
if grep -q "no MPI communicator" "$T/probe"; then echo "SKIP: harness built without MPI"; exit 77; fi

# scenario NAME BATCH WORLD ACCUM STEPS: gpt2-tiny with those
scenario() {
  sed -e "s|\"data/corpus.txt\"|\"$SRC/scenarios/data/corpus.txt\"|" \
      -e "s|\"batch_size\": 8|\"batch_size\": $2, \"gradient_accumulation_steps\": $4|" \
      -e "s|\"steps\": 40|\"steps\": $5|" -e "s|\"world_size\": 1|\"world_size\": $3|" \
      "$SRC/scenarios/gpt2-tiny.json" >"$T/$1.json"
}
scenario one8 8 1 1 6; scenario two4 4 2 1 6; scenario acc 4 1 2 6; scenario two2x2 2 2 2 6
scenario long 4 2 1 100000
# same DB FILE_A RUN_A FILE_B RUN_B WHAT: every step's loss within 1e-4 relative (+1e-6) and grad
# norm within 1e-3 relative, the scenario's fp32 tolerances
same() {
  sqlite3 "$1" "select step, loss, grad_norm from steps where run_id=$2 order by step" >"$T/a"
  sqlite3 "$3" "select step, loss, grad_norm from steps where run_id=$4 order by step" >"$T/b"
  if [ -s "$T/a" ] && [ "$(wc -l <"$T/a")" = "$(wc -l <"$T/b")" ] && paste -d'|' "$T/a" "$T/b" |
     awk -F'|' '{ dl=$2-$5; if (dl<0) dl=-dl; dg=$3-$6; if (dg<0) dg=-dg;
                  if (dl > 1e-4*($5<0?-$5:$5) + 1e-6 || dg > 1e-3*$6 + 1e-6) { print; bad=1 } }
                END { exit bad }'; then pass; else fail "$5"; paste -d'|' "$T/a" "$T/b" | head -3; fi
}

for dev in cpu opencl; do
  if [ "$dev" = opencl ] && ! "$H" devices 2>/dev/null | grep -q '^ *opencl'; then
    echo "no opencl device: the opencl equivalence is skipped"; continue; fi
  echo "$dev: np 2 x batch 4 = 1 rank x batch 8; accumulation 2 x 4 and np 2 x (2 x 2) too"
  db="$T/$dev.db"
  expect 0 "$dev one rank batch 8" -- "$H" run "$T/one8.json" --device "$dev" --db "$db" --quiet
  expect 0 "$dev np 2 batch 4" -- $MPI "$H" run "$T/two4.json" --device "$dev" --db "$db" --quiet
  expect 0 "$dev accumulation 2 x 4" -- "$H" run "$T/acc.json" --device "$dev" --db "$db" --quiet
  expect 0 "$dev np 2 accumulation 2 x 2" -- $MPI "$H" run "$T/two2x2.json" --device "$dev" --db "$db" --quiet
  same "$db" 1 "$db" 2 "$dev: np 2 x 4 differs from 1 x 8"
  same "$db" 1 "$db" 3 "$dev: accumulation 2 x 4 differs from 1 x 8"
  same "$db" 1 "$db" 4 "$dev: np 2 x (2 x 2) differs from 1 x 8"
  rows=$(sqlite3 "$db" "select count(*) from rank_steps where run_id=2 and mem_peak_bytes > 0")
  [ "$rows" = 12 ] && pass || fail "$dev: rank_steps of the np 2 run: $rows rows with memory, want 12"
  expect 0 "$dev show np 2 run" -- "$H" show 2 --db "$db"
  grep -Eq "peak memory +max [0-9.]+ MiB \(rank [01]\); rank 0 [0-9.]+ MiB, rank 1 [0-9.]+ MiB" "$T/out" && pass ||
    fail "$dev: show lacks each rank's peak memory"
  expect 0 "$dev report np 2 run" -- "$H" report 2 --db "$db" --out "$T/$dev-report"
  for f in report.md report.html; do
    grep -Eq "rank 0 [0-9.]+ MiB, rank 1 [0-9.]+ MiB" "$T/$dev-report/$f" && pass ||
      fail "$dev: $f lacks each rank's peak memory"
  done
  tok=$(sqlite3 "$db" "select tokens from steps where run_id=2 and step=1")
  [ "$tok" = 512 ] && pass || fail "$dev: the np 2 step counts $tok tokens, want 512 (2 ranks x 4 x 64)"
done

# an fp64 device (cpu64, the golden runs') keeps its gradients fp64 through accumulation and the
# ranks' sum: np 2 x 4 and accumulation 2 x 4 against one batch of 8 within 1e-12 relative (they
# were 3e-9 apart, fp32's rounding, when the host buffers were fp32)
same64() {
  sqlite3 "$1" "select step, loss, grad_norm from steps where run_id=$2 order by step" >"$T/a"
  sqlite3 "$1" "select step, loss, grad_norm from steps where run_id=$3 order by step" >"$T/b"
  if [ -s "$T/a" ] && [ "$(wc -l <"$T/a")" = "$(wc -l <"$T/b")" ] && paste -d'|' "$T/a" "$T/b" |
     awk -F'|' '{ dl=$2-$5; if (dl<0) dl=-dl; dg=$3-$6; if (dg<0) dg=-dg;
                  if (dl > 1e-12*$5 || dg > 1e-12*$6) { print; bad=1 } } END { exit bad }'
  then pass; else fail "$4"; paste -d'|' "$T/a" "$T/b" | head -3; fi
}
db="$T/cpu64.db"
expect 0 "cpu64 one rank batch 8" -- "$H" run "$T/one8.json" --device cpu64 --db "$db" --quiet
expect 0 "cpu64 np 2 batch 4" -- $MPI "$H" run "$T/two4.json" --device cpu64 --db "$db" --quiet
expect 0 "cpu64 accumulation 2 x 4" -- "$H" run "$T/acc.json" --device cpu64 --db "$db" --quiet
expect 0 "cpu64 np 2 accumulation 2 x 2" -- $MPI "$H" run "$T/two2x2.json" --device cpu64 --db "$db" --quiet
same64 "$db" 1 2 "cpu64: np 2 x 4 is not 1 x 8 in fp64"
same64 "$db" 1 3 "cpu64: accumulation 2 x 4 is not 1 x 8 in fp64"
same64 "$db" 1 4 "cpu64: np 2 x (2 x 2) is not 1 x 8 in fp64"

echo "the launcher's world must be the scenario's: exit 2, nothing recorded"
expect 2 "np 2, world_size 1" -- $MPI "$H" run "$T/one8.json" --db "$T/none.db"
says "world_size 1, but mpirun started 2 ranks"
expect 2 "one process, world_size 2" -- "$H" run "$T/two4.json" --db "$T/none.db"
says "world_size 2, but no launcher started 1 rank"
[ ! -e "$T/none.db" ] && pass || fail "a refused run created the store"
expect 2 "a malformed launcher variable" -- env OMPI_COMM_WORLD_SIZE=abc OMPI_COMM_WORLD_RANK=0 "$H" run "$T/one8.json" --db "$T/none.db"
says "OMPI_COMM_WORLD_SIZE='abc' is not a number"
expect 2 "a rank outside the world" -- env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=2 "$H" run "$T/two4.json" --db "$T/none.db"
says "OMPI_COMM_WORLD_RANK='2' is not a number in [0, 1]"
# half a launcher's pair: two such processes would each record as the one rank 0 (RANK=1
# alone ran as one process, exit 0)
expect 2 "RANK=1 without WORLD_SIZE" -- env RANK=1 "$H" run "$T/one8.json" --db "$T/none.db"
says "RANK=1 is set but WORLD_SIZE is not"
expect 2 "WORLD_SIZE=2 without RANK" -- env WORLD_SIZE=2 "$H" run "$T/one8.json" --db "$T/none.db"
says "WORLD_SIZE=2 is set but RANK is not"
[ ! -e "$T/none.db" ] && pass || fail "a half launcher pair created the store"

# a --db that is no store: every rank stops with rank 0's exit 2 before the first step (not rank
# 0 alone, leaving rank 1 waiting until mpirun kills it), the file untouched
printf 'not a database\n' >"$T/text.db"; cp "$T/text.db" "$T/text.copy"
expect 2 "np 2, a --db that is no store" -- $MPI "$H" run "$T/two4.json" --db "$T/text.db" --quiet
says "not a SQLite database"
grep -q "interrupted by a signal" "$T/err" && fail "rank 1 was killed waiting instead of stopping with rank 0" || pass
cmp -s "$T/text.db" "$T/text.copy" && pass || fail "a --db that is no store was modified"

# ranks given different step counts (or scenarios): rank 0 recorded its 3 steps 'ok' while rank 1
# waited for a 4th until its timeout; now every rank stops with exit 2 before anything is opened
cat >"$T/steps_by_rank.sh" <<'WRAP'
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec "$@" --steps 5; else exec "$@" --steps 3; fi
WRAP
expect 2 "np 2, ranks given different --steps" -- $MPI bash "$T/steps_by_rank.sh" "$H" run "$T/two4.json" --db "$T/none.db" --quiet --comm-timeout $((20 * SLOW))
says "rank 1 runs another scenario"
[ ! -e "$T/none.db" ] && pass || fail "ranks with different scenarios created the store"

# a rank on another backend and precision (cpu64's doubles against rank 0's floats overran
# rank 0's buffers: heap corruption, a row left running); now exit 2 on every rank, nothing made
cat >"$T/device_by_rank.sh" <<'WRAP'
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec "$@" --device cpu64; else exec "$@"; fi
WRAP
expect 2 "np 2, rank 1 on cpu64" -- $MPI bash "$T/device_by_rank.sh" "$H" run "$T/two4.json" --db "$T/none.db" --quiet --comm-timeout $((20 * SLOW))
says "rank 1 trains on cpu64 in fp64, rank 0 on cpu in fp32"
[ ! -e "$T/none.db" ] && pass || fail "ranks on different devices created the store"
# a rank whose scenario does not load still joins the job, so the others stop too (under srun,
# which ends no step when one task exits, rank 0 waited in MPI_Init for ever)
cat >"$T/missing_on_rank1.sh" <<'WRAP'
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec "$1" run /nonexistent/scenario.json "${@:4}"; else exec "$@"; fi
WRAP
expect 2 "np 2, rank 1's scenario missing" -- $MPI bash "$T/missing_on_rank1.sh" "$H" run "$T/two4.json" --db "$T/none.db" --quiet --comm-timeout $((20 * SLOW))
says "rank 1 could not load the scenario"
[ ! -e "$T/none.db" ] && pass || fail "a rank without its scenario let the store be created"

expect 2 "run --compare under mpirun" -- $MPI "$H" run "$T/one8.json" --compare --db "$T/none.db"
says "the matrix runs one rank per run"
[ ! -e "$T/none.db" ] && pass || fail "a refused --compare created the store"

echo "torchrun's variables: they name the rank; the ranks talk over MPI"
expect 0 "torchrun env, world 1" -- env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 "$H" run "$T/one8.json" --db "$T/torch.db" --quiet
expect 2 "torchrun env, world 2, no MPI job" -- env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 "$H" run "$T/two4.json" --db "$T/torch.db"
says "not part of an MPI job"
# the ranks of an MPI job that carry only torchrun's variables (as a torchrun-style wrapper sets)
cat >"$T/torchrun_env.sh" <<'WRAP'
export RANK=$OMPI_COMM_WORLD_RANK WORLD_SIZE=$OMPI_COMM_WORLD_SIZE LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK MASTER_ADDR=127.0.0.1 MASTER_PORT=29500
unset OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK
exec "$@"
WRAP
expect 0 "torchrun env under mpirun" -- $MPI bash "$T/torchrun_env.sh" "$H" run "$T/two4.json" --db "$T/torch.db" --quiet
same "$T/cpu.db" 2 "$T/torch.db" 2 "np 2 with torchrun's variables differs from mpirun's"
expect 2 "RANK disagreeing with mpirun's" -- $MPI env RANK=0 WORLD_SIZE=2 "$H" run "$T/two4.json" --db "$T/none.db"
says "disagree with mpirun's rank 1 of 2"

steps_at_least() { [ "$(sqlite3 "$2" "select count(*) from steps" 2>/dev/null)" -ge "$1" ] 2>/dev/null; }
# dead RANK SIGNAL: the long run under mpirun, rank 1 sent SIGNAL once rank 0 recorded 3 steps;
# the run must end failed on rank 0 naming rank 1, within the test's bound
dead() {
  local db="$T/dead$2.db"
  $MPI bash -c 'echo $$ >"$0.pid.$OMPI_COMM_WORLD_RANK"; exec "$@"' "$T/long" "$H" run "$T/long.json" \
    --db "$db" --comm-timeout $((3 * SLOW)) --quiet >"$T/out" 2>"$T/err" & local mp=$!
  wait_until 120 "rank 0 to record 3 steps" -- steps_at_least 3 "$db"
  kill -"$2" "$(cat "$T/long.pid.$1")"
  wait "$mp"; local rc=$?
  kill -CONT "$(cat "$T/long.pid.$1")" 2>/dev/null
  [ "$rc" != 0 ] && pass || fail "mpirun exit 0 after rank $1 got SIG$2"
  local row; row=$(sqlite3 "$db" "select status || ': ' || error from runs")
  case "$row" in failed:*"rank $1"*) pass ;; *) fail "SIG$2 to rank $1: run row '$row'" ;; esac
}
echo "a hung rank (SIGSTOP): rank 0 times out after --comm-timeout $((3 * SLOW)) and names it"
dead 1 STOP
echo "a killed rank (SIGKILL): the run ends failed naming it"
dead 1 KILL

echo "comm-check: every op at a few sizes, exact and fp32-bound; a fault injected is caught and named"
expect 0 "comm-check np 2" -- $MPI "$H" comm-check --sizes 8B:64K --iters 2 --db "$T/cc.db"
grep -q "busbw" "$T/out" && pass || fail "comm-check printed no busbw column"
n=$(sqlite3 "$T/cc.db" "select count(*) from comm_checks where launcher='mpirun' and comm='mpi' and world_size=2 and device='cpu' and status='ok'")
[ "$n" = 56 ] && pass || fail "comm_checks holds $n ok rows of mpirun, want 56 (4 ops x 14 sizes)"
expect 0 "comm-check float values" -- $MPI "$H" comm-check --sizes 4K:4K --values float --iters 1 --db "$T/cc.db"
for op in allreduce allgather reducescatter broadcast; do
  expect 1 "fault on rank 1, $op" -- $MPI -x HARNESS_COMM_FAULT=1 "$H" comm-check --sizes 1K:1K --op "$op" --iters 1 --db "$T/cc.db"
  grep -q "WRONG: $op 1024 B: .*first on rank 1" "$T/out" && pass || { fail "$op: the fault on rank 1 not named"; head -5 "$T/out"; }
done
n=$(sqlite3 "$T/cc.db" "select count(*) from comm_checks where status='wrong' and first_bad_rank=1")
[ "$n" = 4 ] && pass || fail "comm_checks holds $n wrong rows naming rank 1, want 4"
# sizes under one float per rank measure that one float: one row each, not a row per size asked
expect 0 "comm-check sizes below a float" -- $MPI "$H" comm-check --sizes 1B:16B --op allgather --iters 1 --db "$T/small.db"
sizes=$(sqlite3 "$T/small.db" "select group_concat(bytes, ' ') from (select bytes from comm_checks order by id)")
[ "$sizes" = "8 16" ] && pass || fail "comm-check 1B:16B allgather on 2 ranks stored sizes '$sizes', want '8 16'"
# a fault rank outside the world would inject nothing: a check that cannot fail, so exit 2
expect 2 "comm-check fault on a rank outside the world" -- $MPI -x HARNESS_COMM_FAULT=2 "$H" comm-check --sizes 1K:1K --op allreduce --iters 1 --db "$T/nofault.db"
says "HARNESS_COMM_FAULT=2 names no rank of this world of 2"
[ ! -e "$T/nofault.db" ] && pass || fail "a fault rank outside the world created the store"
expect 2 "comm-check bad sizes" -- "$H" comm-check --sizes 8B:4Q
says "is not MIN:MAX"
expect 2 "comm-check bad op" -- "$H" comm-check --op alltoall
finish
