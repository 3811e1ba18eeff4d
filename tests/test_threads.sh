#!/usr/bin/env bash
# tests/test_threads.sh: the cpu backend's thread count does not change a run's numbers: pinned
# to 1 and 2 threads, and adapted beside a CPU-bound process, gpt2-tiny, bert-tiny (its decoder's
# GEMM sums 1181 vocabulary rows) and mixtral-tiny (its expert GEMMs a varying, odd number of
# rows) give the same bits.
# usage: test_threads.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
# the loss and grad norm of every step, as the store holds them (17 significant digits)
series() { "$H" show "$1" --db "$2" --json | grep -E '^ *"(loss|grad_norm)":'; }
unset OMP_NUM_THREADS

# same_bits NAME STEPS: runs 1 (1 thread), 2 (2 threads), 3 (adaptive under load) must agree
same_bits() {
    local tiny="$SRC/scenarios/$1.json" db="$T/$1.db" n="$2"
    echo "$1: pinned to 1 thread, then 2"
    expect 0 "$1 HARNESS_THREADS=1" -- env HARNESS_THREADS=1 "$H" run "$tiny" --steps "$n" --db "$db" --quiet
    expect 0 "$1 HARNESS_THREADS=2" -- env HARNESS_THREADS=2 "$H" run "$tiny" --steps "$n" --db "$db" --quiet
    echo "$1: adaptive, beside a CPU-bound process"
    timeout 60 sh -c 'while :; do :; done' & busy=$!
    expect 0 "$1 adaptive under load" -- "$H" run "$tiny" --steps "$n" --db "$db" --quiet
    kill "$busy" 2>/dev/null; wait "$busy" 2>/dev/null
    series 1 "$db" >"$T/s1"; series 2 "$db" >"$T/s2"; series 3 "$db" >"$T/s3"
    [ "$(wc -l <"$T/s1")" = $((2 * n)) ] && pass || fail "$1: run 1 has not $n steps of loss and grad norm"
    cmp -s "$T/s1" "$T/s2" && pass || { fail "$1: 1 and 2 threads differ"; diff "$T/s1" "$T/s2" | head; }
    cmp -s "$T/s1" "$T/s3" && pass || { fail "$1: adaptive differs from 1 thread"; diff "$T/s1" "$T/s3" | head; }
}
same_bits gpt2-tiny 12
same_bits bert-tiny 6
same_bits mixtral-tiny 6

echo "a thread count that is not one is refused with a warning, not obeyed"
expect 0 "HARNESS_THREADS=abc" -- env HARNESS_THREADS=abc "$H" run "$SRC/scenarios/gpt2-tiny.json" --steps 2 --db "$T/t.db" --quiet
says "HARNESS_THREADS=abc is not a thread count"
finish
