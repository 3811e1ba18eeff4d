#!/usr/bin/env bash
# tests/test_slurm_template.sh: scenarios/slurm/harness.sbatch's own defaults work together:
# the default scenario's world_size is the template's nodes x tasks per node, and the template
# run as it is (srun standing in for Slurm: mpirun with that many ranks) trains it.
# usage: test_slurm_template.sh HARNESS_EXE SOURCE_DIR (the run skipped without mpirun)
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
tpl="$SRC/scenarios/slurm/harness.sbatch"
nodes=$(sed -n 's/^#SBATCH --nodes=\([0-9]*\).*/\1/p' "$tpl")
tasks=$(sed -n 's/^#SBATCH --ntasks-per-node=\([0-9]*\).*/\1/p' "$tpl")
scn=$(sed -n 's/^SCENARIO="${SCENARIO:-\([^}]*\)}".*/\1/p' "$tpl")
[ -n "$nodes" ] && [ -n "$tasks" ] && [ -n "$scn" ] && pass ||
  { fail "cannot read the template's nodes ('$nodes'), tasks ('$tasks') or scenario ('$scn')"; finish; exit; }
[ -f "$SRC/$scn" ] && pass || { fail "the template's default scenario $scn is not shipped"; finish; exit; }
world=$(sed -n 's/.*"world_size": *\([0-9]*\).*/\1/p' "$SRC/$scn")
[ "$world" = $((nodes * tasks)) ] && pass ||
  fail "$scn has world_size '$world', the template starts $nodes x $tasks ranks"

if ! command -v mpirun >/dev/null; then echo "no mpirun: the template's run is skipped"; finish; exit; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
command -v sqlite3 >/dev/null || { echo "no sqlite3: the template's run is skipped"; finish; exit; }
if ! "$H" comm-check --help | grep -q "single, mpi"; then echo "no MPI in this build: the run is skipped"; finish; exit; fi
# srun as Slurm would start the job's ranks: one per task (the template's own --mpi=pmix dropped)
mkdir -p "$T/bin"
cat >"$T/bin/srun" <<WRAP
#!/usr/bin/env bash
[ "\$1" = --mpi=pmix ] && shift
exec timeout $((300 * SLOW)) mpirun -np $((nodes * tasks)) "\$@"
WRAP
chmod +x "$T/bin/srun"
# the template's own example: its defaults, from the repository (its paths are relative to it)
expect 0 "the template with its default scenario" -- env -C "$SRC" PATH="$T/bin:$PATH" HARNESS="$H" \
  DB="$T/t.db" COMM_TIMEOUT=$((30 * SLOW)) bash "$tpl"
n=$(sqlite3 "$T/t.db" "select count(*) from runs where status = 'ok'" 2>/dev/null)
[ "$n" = 1 ] && pass || fail "the template's run: $n ok runs in its store, want 1"
finish
