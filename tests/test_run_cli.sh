#!/usr/bin/env bash
# tests/test_run_cli.sh: the `harness` executable and `harness run` end to end: help, version,
# bad arguments and files (exit 2, data kept), a recorded run, diverged, killed and stopped runs.
# usage: test_run_cli.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"

tiny="$SRC/scenarios/gpt2-tiny.json"
# a scenario copy in the temp dir with an absolute data path and one field changed
variant() { sed -e "s#\"data/corpus.txt\"#\"$SRC/scenarios/data/corpus.txt\"#" -e "$1" "$tiny" >"$2"; }

expect 0 "--help" -- "$H" --help
expect 0 "--version" -- "$H" --version
grep -q '^harness ' "$T/out" && pass || fail "--version prints 'harness VERSION'"
expect 2 "no command" -- "$H"
expect 2 "unknown command" -- "$H" frobnicate; says "frobnicate"
expect 0 "run --help" -- "$H" run --help
expect 2 "run without scenario" -- "$H" run
expect 2 "run missing file" -- "$H" run "$T/nope.json" --db "$T/a.db"; says "$T/nope.json"
printf '{"name": "x", ' >"$T/trunc.json"
expect 2 "run truncated scenario" -- "$H" run "$T/trunc.json" --db "$T/a.db"; says "trunc.json"
head -c 300 /dev/urandom >"$T/garbage.json"
expect 2 "run binary garbage" -- "$H" run "$T/garbage.json" --db "$T/a.db"
expect 2 "run --steps abc" -- "$H" run "$tiny" --steps abc --db "$T/a.db"; says "--steps"
expect 2 "run --steps 0" -- "$H" run "$tiny" --steps 0 --db "$T/a.db"
expect 2 "run --steps without value" -- "$H" run "$tiny" --steps
expect 2 "run unknown option" -- "$H" run "$tiny" --bogus --db "$T/a.db"; says "--bogus"
expect 2 "run unknown device" -- "$H" run "$tiny" --device nosuch --db "$T/a.db"; says "nosuch"
expect 2 "run cpu:3" -- "$H" run "$tiny" --device cpu:3 --db "$T/a.db"
expect 2 "run two scenarios" -- "$H" run "$tiny" "$tiny" --db "$T/a.db"

# a recorded run
expect 0 "run 3 steps" -- "$H" run "$tiny" --steps 3 --db "$T/a.db"
grep -q "^run 1: ok, 3 steps" "$T/out" && pass || fail "final line 'run 1: ok, 3 steps': $(tail -1 "$T/out")"
[ "$(grep -c '^step ' "$T/out")" = 3 ] && pass || fail "one line per step"
expect 0 "show 1" -- "$H" show 1 --db "$T/a.db"
cp "$T/out" "$T/show1"
# bad input afterwards loses nothing already stored
expect 2 "bad scenario into the same db" -- "$H" run "$T/trunc.json" --db "$T/a.db"
variant 's/"lr": 3e-3/"lr": -1/' "$T/neglr.json"
expect 2 "negative lr" -- "$H" run "$T/neglr.json" --db "$T/a.db"; says "train.lr"
variant 's/"seed": 123/"seed": 123, "eval_every": 5/' "$T/eval.json"
expect 2 "eval_every refused, not ignored" -- "$H" run "$T/eval.json" --db "$T/a.db"; says "train.eval_every"
variant 's/"world_size": 1/"world_size": 2/' "$T/ranks.json"
expect 2 "world_size 2 without a communicator" -- "$H" run "$T/ranks.json" --db "$T/a.db"; says "world_size 2"
expect 0 "show 1 again" -- "$H" show 1 --db "$T/a.db"
cmp -s "$T/out" "$T/show1" && pass || fail "run 1 changed after bad input"
# a file that is not a database is refused and left as it was
printf 'not a database\n' >"$T/text.db"; cp "$T/text.db" "$T/text.copy"
expect 2 "run into a text file" -- "$H" run "$tiny" --steps 1 --db "$T/text.db"
cmp -s "$T/text.db" "$T/text.copy" && pass || fail "non-database file was modified"

# diverged: a huge learning rate overflows the weights -> NaN/Inf loss, status diverged, exit 1
variant 's/"lr": 3e-3/"lr": 1e30/; s/"warmup_steps": 5/"warmup_steps": 0/; s/"clip": 1.0/"clip": 0/' "$T/huge.json"
expect 1 "diverging run" -- "$H" run "$T/huge.json" --steps 20 --db "$T/a.db"
grep -q "diverged" "$T/out" && pass || fail "diverged run says so: $(tail -1 "$T/out")"
expect 0 "runs" -- "$H" runs --db "$T/a.db"
grep -q "diverged" "$T/out" && pass || fail "runs lists the diverged status"

# --dump-batches with gradient accumulation: one line per micro-batch, each with its step
variant 's/"seed": 123/"seed": 123, "gradient_accumulation_steps": 3/' "$T/accum.json"
expect 0 "dump with 3 micro-batches a step" -- "$H" run "$T/accum.json" --steps 2 --db "$T/d.db" --dump-batches "$T/accum.jsonl"
[ "$(sed 's/^{"step":\([0-9]*\),.*/\1/' "$T/accum.jsonl" | tr '\n' ' ')" = "1 1 1 2 2 2 " ] && pass ||
  fail "the dump's steps: $(cut -c1-12 "$T/accum.jsonl" | tr '\n' ' ')"

# killed mid-way (SIGKILL): the steps it recorded stay, the status never says ok
"$H" run "$tiny" --steps 1000000 --db "$T/k.db" >"$T/kill.out" 2>&1 &
pid=$!
printed_at_least() { [ "$(grep -c '^step ' "$2")" -ge "$1" ]; }
# a step is printed before it is stored, so a kill can lose the last one printed: 4 printed, 3 kept
wait_until 120 "4 steps printed" -- printed_at_least 4 "$T/kill.out"
kill -9 "$pid"; wait "$pid" 2>/dev/null
printed=$(grep -c '^step ' "$T/kill.out")
expect 0 "show killed run" -- "$H" show 1 --db "$T/k.db"
grep -qi "running" "$T/out" && pass || fail "killed run shows status running"
stored=$(grep -cE '^ *[0-9]+ ' "$T/out")
[ "$stored" -ge 3 ] && [ "$stored" -ge "$((printed - 1))" ] && pass || fail "killed run kept $stored steps of $printed printed"

# stopped by SIGTERM: status failed, exit 1
"$H" run "$tiny" --steps 1000000 --db "$T/s.db" >"$T/term.out" 2>&1 &
pid=$!
wait_until 120 "2 steps printed" -- printed_at_least 2 "$T/term.out"
kill -TERM "$pid"; wait "$pid"; code=$?
[ "$code" = 1 ] && pass || fail "SIGTERM run exits 1, got $code"
grep -q "failed" "$T/term.out" && pass || fail "SIGTERM run ends as failed"

# the terminal closed (SIGHUP), the output piped to a reader that left (SIGPIPE): they killed the
# process mid-run and left the run "running" for ever; now the run ends after the step, recorded
# as failed ("interrupted"), exit 1
"$H" run "$tiny" --steps 1000000 --db "$T/h.db" >"$T/hup.out" 2>&1 &
pid=$!
wait_until 120 "2 steps printed" -- printed_at_least 2 "$T/hup.out"
kill -HUP "$pid"; wait "$pid"; code=$?
[ "$code" = 1 ] && pass || fail "SIGHUP run exits 1, got $code"
# interrupted DB: the one run of DB is failed, "interrupted by a signal"
interrupted() {
  "$H" runs --db "$1" --json >"$T/runs.json" 2>&1 && grep -q '"status": "failed"' "$T/runs.json" &&
    grep -q '"error": "interrupted by a signal"' "$T/runs.json" && grep -c '"id":' "$T/runs.json" | grep -qx 1
}
interrupted "$T/h.db" && pass || fail "SIGHUP run: $(grep -E '"(status|error)"' "$T/runs.json")"
# started under nohup (SIGHUP ignored): a hangup leaves the run going; it then ends by SIGTERM
(trap '' HUP; exec "$H" run "$tiny" --steps 1000000 --db "$T/nh.db" >"$T/nh.out" 2>&1) &
pid=$!
wait_until 120 "2 steps printed" -- printed_at_least 2 "$T/nh.out"
kill -HUP "$pid"
before=$(grep -c '^step ' "$T/nh.out")
wait_until 120 "2 more steps after the ignored SIGHUP" -- printed_at_least $((before + 2)) "$T/nh.out"
kill -TERM "$pid"; wait "$pid"; code=$?
[ "$code" = 1 ] && pass || fail "the nohup run stopped by SIGTERM exits 1, got $code"
grep -q "interrupted by a signal" "$T/nh.out" && pass || fail "the nohup run: $(tail -2 "$T/nh.out")"
"$H" run "$tiny" --steps 1000000 --db "$T/p.db" 2>"$T/pipe.err" | head -2 >/dev/null
code=${PIPESTATUS[0]}
[ "$code" = 1 ] && pass || fail "run piped to head -2 exits 1, got $code"
[ -s "$T/pipe.err" ] && fail "run piped to head -2 says: $(head -3 "$T/pipe.err")" || pass
interrupted "$T/p.db" && pass || fail "run piped to head -2: $(grep -E '"(status|error)"' "$T/runs.json")"

# an option where a value goes ("--db --quiet"): exit 2, nothing written (run made a store named
# --quiet and --dump-batches --quiet overwrote it; ops and comm-check took the option as the value)
mkdir -p "$T/optval"
for args in "--db --quiet" "--db --json" "--dump-batches --quiet" "--baseline --db $T/optval/h.db" "--save --compare" "--steps --golden"; do
  expect 2 "run $args" -- sh -c "cd '$T/optval' && exec '$H' run '$tiny' $args"
  says "needs a value (the next argument"
done
[ -z "$(ls -A "$T/optval")" ] && pass || fail "a refused option wrote: $(ls -A "$T/optval")"
expect 2 "ops --db --device cpu" -- sh -c "cd '$T/optval' && exec '$H' ops --db --device cpu"; says "--db needs a value"
expect 2 "comm-check --db --sizes 8B" -- sh -c "cd '$T/optval' && exec '$H' comm-check --db --sizes 8B"; says "--db needs a value"
[ -z "$(ls -A "$T/optval")" ] && pass || fail "ops or comm-check wrote: $(ls -A "$T/optval")"

finish
