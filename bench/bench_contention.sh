#!/usr/bin/env bash
# bench/bench_contention.sh: what a busy machine costs a cpu run: gpt2-tiny beside N CPU-bound
# processes with the default (adaptive) thread count, pinned to 1 thread, and pinned to every CPU.
# usage: bench/bench_contention.sh [HARNESS_EXE] [ROUNDS] [BUSY_PROCESSES]
# Prints each setting's median wall time over ROUNDS (taken in turn, A B C A B C ..., so drift in
# the machine's speed hits all alike) and its ratio to the 1-thread median. Nothing is asserted.
set -u
H="${1:-build/harness}"; ROUNDS="${2:-5}"; BUSY="${3:-1}"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
T="$(mktemp -d)"; trap 'kill $busy_pids 2>/dev/null; rm -rf "$T"' EXIT
CPUS="$(nproc)"
tiny="$SRC/scenarios/gpt2-tiny.json"
busy_pids=""
for _ in $(seq "$BUSY"); do
  timeout 3600 sh -c 'while :; do :; done' & busy_pids="$busy_pids $!"
done
sleep 1
echo "gpt2-tiny (40 steps) beside $BUSY CPU-bound process(es) on $CPUS CPUs, $ROUNDS rounds; load now $(cut -d' ' -f1-3 /proc/loadavg)"
settings=("adaptive (default)|" "OMP_NUM_THREADS=1|OMP_NUM_THREADS=1" "OMP_NUM_THREADS=$CPUS|OMP_NUM_THREADS=$CPUS")
for r in $(seq "$ROUNDS"); do
  for i in "${!settings[@]}"; do
    envs="${settings[$i]#*|}"
    rm -f "$T/b.db"
    s=$(date +%s.%N)
    env -u OMP_NUM_THREADS -u HARNESS_THREADS $envs "$H" run "$tiny" --db "$T/b.db" --quiet >/dev/null 2>&1
    e=$(date +%s.%N)
    echo "$i $(echo "$e - $s" | bc)" >>"$T/times"
  done
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
one=$(awk '$1 == 1 {print $2}' "$T/times" | median)
printf "%-24s %10s %10s %10s %12s\n" setting "min s" "median s" "max s" "vs 1 thread"
for i in "${!settings[@]}"; do
  vals=$(awk -v i="$i" '$1 == i {print $2}' "$T/times")
  printf "%-24s %10.3f %10.3f %10.3f %11.2fx\n" "${settings[$i]%%|*}" \
    "$(echo "$vals" | sort -n | head -1)" "$(echo "$vals" | median)" "$(echo "$vals" | sort -n | tail -1)" \
    "$(echo "$(echo "$vals" | median) / $one" | bc -l)"
done
