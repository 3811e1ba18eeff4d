#!/usr/bin/env bash
# tests/test_threads.sh: the cpu backend's thread count does not change a run's numbers: pinned
# to 1 and 2 threads, and adapted beside a CPU-bound process, gpt2-tiny gives the same bits.
# usage: test_threads.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
tiny="$SRC/scenarios/gpt2-tiny.json"
# the loss and grad norm of every step, as the store holds them (17 significant digits)
series() { "$H" show "$1" --db "$T/t.db" --json | grep -E '^ *"(loss|grad_norm)":'; }
unset OMP_NUM_THREADS

echo "pinned to 1 thread, then 2"
expect 0 "HARNESS_THREADS=1" -- env HARNESS_THREADS=1 "$H" run "$tiny" --steps 12 --db "$T/t.db" --quiet
expect 0 "HARNESS_THREADS=2" -- env HARNESS_THREADS=2 "$H" run "$tiny" --steps 12 --db "$T/t.db" --quiet
echo "adaptive, beside a CPU-bound process"
timeout 60 sh -c 'while :; do :; done' & busy=$!
expect 0 "adaptive under load" -- "$H" run "$tiny" --steps 12 --db "$T/t.db" --quiet
kill "$busy" 2>/dev/null; wait "$busy" 2>/dev/null
series 1 >"$T/s1"; series 2 >"$T/s2"; series 3 >"$T/s3"
[ "$(wc -l <"$T/s1")" = 24 ] && pass || fail "run 1 has not 12 steps of loss and grad norm"
cmp -s "$T/s1" "$T/s2" && pass || { fail "1 and 2 threads differ"; diff "$T/s1" "$T/s2" | head; }
cmp -s "$T/s1" "$T/s3" && pass || { fail "adaptive differs from 1 thread"; diff "$T/s1" "$T/s3" | head; }

echo "a thread count that is not one is refused with a warning, not obeyed"
expect 0 "HARNESS_THREADS=abc" -- env HARNESS_THREADS=abc "$H" run "$tiny" --steps 2 --db "$T/t.db" --quiet
says "HARNESS_THREADS=abc is not a thread count"
finish
