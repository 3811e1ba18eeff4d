#!/usr/bin/env bash
# tests/test_slurm.sh: a one-node Slurm cluster for real (munged, slurmctld, slurmd from a
# generated slurm.conf in a temp dir): `srun -n 2 --mpi=pmix harness run` and the sbatch template.
# usage: test_slurm.sh HARNESS_EXE SOURCE_DIR (skipped, 77, with the reason, where Slurm cannot start)
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
skip() { echo "SKIP: $*"; exit 77; }
for x in munged munge slurmctld slurmd srun sbatch sinfo squeue sqlite3; do
  command -v "$x" >/dev/null || skip "no $x (Debian: slurm-wlm munge sqlite3)"; done
[ "$(id -u)" = 0 ] || skip "slurmd runs jobs as their users: this test starts it as root only"
D="$T/slurm"; mkdir -p "$D/state" "$D/spool" "$D/log"
# teardown whatever happens: the daemons this test started, by their pid files, then the temp dir
teardown() {
  for p in slurmd slurmctld munged; do
    [ -s "$D/$p.pid" ] && kill "$(cat "$D/$p.pid")" 2>/dev/null; done
  sleep 0.5; rm -rf "$T"
}
trap teardown EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's dlopen'ed components leak at MPI_Finalize (test_mpi.sh): no leak check under ASan
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
node=$(hostname -s); port=$((20000 + $$ % 20000))
head -c 1024 /dev/urandom >"$D/munge.key"; chmod 600 "$D/munge.key"
munged --force --key-file="$D/munge.key" --socket="$D/munge.sock" --pid-file="$D/munged.pid" \
  --log-file="$D/log/munged.log" --seed-file="$D/munge.seed" || skip "munged did not start"
cat >"$D/slurm.conf" <<CONF
ClusterName=harnesstest
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
AuthType=auth/munge
AuthInfo=socket=$D/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=pmix
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
NodeName=$node CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=10 State=UP OverSubscribe=FORCE
CONF
export SLURM_CONF="$D/slurm.conf"
slurmctld -i || skip "slurmctld did not start ($(tail -2 "$D/log/slurmctld.log" 2>/dev/null))"
slurmd || skip "slurmd did not start ($(tail -2 "$D/log/slurmd.log" 2>/dev/null))"
for _ in $(seq 60); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 0.5; done
sinfo -h -o %t | grep -q idle || skip "the node did not become idle: $(tail -2 "$D/log/slurmd.log")"
timeout $((60 * SLOW)) srun -n 2 --mpi=pmix true 2>"$T/probe" || skip "srun --mpi=pmix fails here: $(head -2 "$T/probe")"

sed -e "s|\"data/corpus.txt\"|\"$SRC/scenarios/data/corpus.txt\"|" -e 's|"batch_size": 8|"batch_size": 4|' \
    -e 's|"steps": 40|"steps": 4|' -e 's|"world_size": 1|"world_size": 2|' \
    "$SRC/scenarios/gpt2-tiny.json" >"$T/two4.json"
echo "srun -n 2 --mpi=pmix harness run"
expect 0 "srun -n 2" -- timeout $((120 * SLOW)) srun -n 2 --mpi=pmix "$H" run "$T/two4.json" --db "$T/s.db" --quiet
n=$(sqlite3 "$T/s.db" "select count(*) from rank_steps where run_id=1")
[ "$n" = 8 ] && pass || fail "srun run: $n rank_steps rows, want 8 (2 ranks x 4 steps)"
expect 2 "srun -n 2 with world_size 1" -- timeout $((120 * SLOW)) srun -n 2 --mpi=pmix "$H" run "$SRC/scenarios/gpt2-tiny.json" --db "$T/none.db"
says "but slurm started 2 ranks"
# a rank whose scenario file is missing: srun ends no step when one task exits, so rank 0 waited
# in MPI_Init for ever; now that rank joins the job and every rank stops with exit 2
cat >"$T/missing_on_rank1.sh" <<'WRAP'
if [ "$SLURM_PROCID" = 1 ]; then exec "$1" run /nonexistent/scenario.json "${@:4}"; else exec "$@"; fi
WRAP
expect 2 "srun -n 2, rank 1's scenario missing" -- timeout $((120 * SLOW)) srun -n 2 --mpi=pmix bash "$T/missing_on_rank1.sh" "$H" run "$T/two4.json" --db "$T/none.db" --quiet --comm-timeout 10
says "rank 1 could not load the scenario"

echo "sbatch scenarios/slurm/harness.sbatch"
job=$(cd "$T" && sbatch --parsable --export=ALL,HARNESS="$H",SCENARIO="$T/two4.json",DB="$T/b.db" \
      "$SRC/scenarios/slurm/harness.sbatch") && pass || fail "sbatch refused the template"
for _ in $(seq 240); do [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break; sleep 0.5; done
st=$(sqlite3 "$T/b.db" "select status from runs where id=1" 2>/dev/null)
[ "$st" = ok ] && pass || { fail "the sbatch job's run: '$st'"; cat "$T"/harness-*.out 2>/dev/null | tail -5; }
finish
