#!/usr/bin/env bash
# tests/test_exec_signals_and_lines.sh: exec and ingest on what an acceptance hunt found wrong: the
# default tokens per step of a scenario with gradient accumulation (as `harness run` counts
# them), signals the harness inherited as ignored (nohup's SIGHUP, a background job's SIGINT)
# staying ignored for it and for CMD, divergence judged on the values a step keeps (a NaN/Inf a
# later line of the step replaced is no divergence), a failed run's last lines as valid UTF-8
# whatever bytes the log held, and the command line kept whole past 8 KiB, cut with "..." and a
# warning past 64 KiB. No Python. usage: HARNESS_EXE SOURCE_DIR
set -u
H="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 2
q() { sqlite3 "$1" "$2"; }
last() { q "$1" 'select max(id) from runs'; }
extra() { q "$1" "select value from run_extra where run_id = $2 and key = '$3'"; }
workload() { local f="$1"; shift; printf '#!/bin/sh\n%s\n' "$*" >"$f"; chmod +x "$f"; }

echo "tokens per step of a scenario with gradient accumulation: as harness run records them"
sed -e 's/"seed": 123/"seed": 123, "gradient_accumulation_steps": 2/' -e 's/"steps": 40/"steps": 1/' \
    -e "s|\"data/corpus.txt\"|\"$SRC/scenarios/data/corpus.txt\"|" "$SRC/scenarios/gpt2-tiny.json" > ga2.json
grep -q '"gradient_accumulation_steps": 2' ga2.json && pass || fail "the scenario has no accumulation"
expect 0 "harness run ga2" -- env -u WORLD_SIZE "$H" run ga2.json --device cpu --db tok.db --quiet
want=$(q tok.db "select tokens from steps where run_id = 1 and step = 1")
printf 'HARNESS_STEP {"v":1,"step":1,"loss":5.5,"step_ms":10}\n' > notok.log
workload notok.sh "cat $T/notok.log"
expect 0 "exec ga2 without tokens in the lines" -- env -u WORLD_SIZE "$H" exec --scenario ga2.json --db tok.db -- ./notok.sh
[ -n "$want" ] && [ "$(q tok.db "select tokens from steps where run_id = $(last tok.db)")" = "$want" ] && pass \
  || fail "exec's tokens per step $(q tok.db "select tokens from steps where run_id = $(last tok.db)"), harness run's $want"
expect 0 "ingest ga2 without tokens in the lines" -- env -u WORLD_SIZE "$H" ingest notok.log --scenario ga2.json --device x --db tok.db
[ "$(q tok.db "select tokens from steps where run_id = $(last tok.db)")" = "$want" ] && pass \
  || fail "ingest's tokens per step $(q tok.db "select tokens from steps where run_id = $(last tok.db)"), harness run's $want"

echo "a signal inherited as ignored (nohup, a script's background job) stays ignored"
# bit N-1 of /proc/PID/status's mask LINE (SigIgn: ignored, SigCgt: caught) for signal N
sigbit() { local m; m=$(sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status"); echo $(( (0x$m >> ($3 - 1)) & 1 )); }
workload sig.sh "echo \$\$ > $T/sig.pid
echo 'HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5}'
end=\$((\$(date +%s) + $((300 * SLOW)))); while [ ! -e $T/go ] && [ \$(date +%s) -lt \$end ]; do sleep 0.1; done
echo 'HARNESS_STEP {\"v\":1,\"step\":2,\"loss\":2.4}'"
( trap '' HUP INT; exec "$H" exec --db sig.db -- ./sig.sh ) > sig.out 2> sig.err &
hpid=$!
wait_until 120 "the workload's first step" -- grep -q HARNESS_STEP sig.out
cpid=$(cat sig.pid)
for s in 1:HUP 2:INT; do
  n=${s%%:*}; name=${s#*:}
  [ "$(sigbit "$hpid" SigIgn "$n")" = 1 ] && pass || fail "the harness does not ignore SIG$name (SigCgt $(sigbit "$hpid" SigCgt "$n"))"
  [ "$(sigbit "$cpid" SigIgn "$n")" = 1 ] && pass || fail "CMD does not ignore SIG$name"
done
# SIGTERM was not ignored: the harness still catches it, to pass it on
[ "$(sigbit "$hpid" SigCgt 15)" = 1 ] && [ "$(sigbit "$cpid" SigIgn 15)" = 0 ] && pass || fail "SIGTERM: not caught by the harness or ignored by CMD"
kill -HUP "$hpid"; kill -INT "$hpid"; kill -HUP -- "-$cpid"; kill -INT -- "-$cpid"
touch go
wait "$hpid"; rc=$?
[ "$rc" = 0 ] && grep -q "ok, 2 steps" sig.err && pass || fail "after SIGHUP and SIGINT (ignored): exit $rc, $(tail -1 sig.err)"

echo "a step's NaN/Inf loss that a later line of the step replaces is no divergence"
div() { printf '%s\n' "$@" | sed 's/^\(.*\)$/HARNESS_STEP {"v":1,\1}/' > div.log; "$H" ingest div.log --device x --db div.db >div.out 2>&1; }
div '"step":1,"loss":2.0' '"step":1,"loss":Infinity' '"step":1,"loss":1.0'
[ $? = 0 ] && [ "$(q div.db "select status from runs where id = $(last div.db)")" = ok ] && pass \
  || fail "Inf replaced by 1.0: $(cat div.out)"
div '"step":1,"loss":2.0' '"step":1,"loss":NaN'
[ $? = 1 ] && grep -q "diverged, 1 steps.*NaN/Inf loss at step 1" div.out && pass || fail "2.0 replaced by NaN: $(cat div.out)"
# a step logged again later (a resumed run) replaces its NaN too; the first step still NaN counts
div '"step":1,"loss":2.0' '"step":2,"loss":NaN' '"step":3,"loss":NaN' '"step":2,"loss":1.5'
[ $? = 1 ] && grep -q "NaN/Inf loss at step 3" div.out && pass || fail "step 2's NaN replaced, step 3's kept: $(cat div.out)"
div '"step":1,"loss":NaN' '"step":2,"loss":1.0' '"step":1,"loss":1.5'
[ $? = 0 ] && grep -q "ok, 2 steps" div.out && pass || fail "step 1's NaN replaced after step 2: $(cat div.out)"

echo "the last lines of a failed run are text: surrogates, overlong forms, past U+10FFFF as '?'"
printf 'a \355\240\200 b \340\200\200 c \364\220\200\200 d \303\251\n' > badutf8.log
expect 1 "ingest a log of no steps with invalid UTF-8" -- "$H" ingest badutf8.log --device x --db u.db
grep -q "last output: a ??? b ??? c ???? d é" out && iconv -f UTF-8 -t UTF-8 out >/dev/null 2>&1 \
  && pass || fail "the last output of invalid UTF-8: $(grep -o 'last output:.*' out | od -c | head -3)"

echo "the command line: whole past 8 KiB; past 64 KiB cut with '...' and a warning"
workload cmd.sh "echo 'HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5}'"
long=$(head -c 20000 /dev/zero | tr '\0' a)
expect 0 "exec with a 20000-byte argument" -- "$H" exec --db cmd.db -- ./cmd.sh "$long" "it's"
[ "$(extra cmd.db "$(last cmd.db)" command)" = "./cmd.sh $long 'it'\\''s'" ] && pass \
  || fail "the 20 KB command line was not kept whole: $(extra cmd.db "$(last cmd.db)" command | wc -c) bytes"
! grep -q "command line" err && pass || fail "a warning for a command line under the cap: $(cat err)"
huge=$(head -c 100000 /dev/zero | tr '\0' b)
expect 0 "exec with a 100000-byte argument" -- "$H" exec --db cmd.db -- ./cmd.sh "$huge"
kept=$(extra cmd.db "$(last cmd.db)" command)
full="./cmd.sh $huge"
[ "${#kept}" = 65536 ] && [ "${kept%...}" != "$kept" ] && [ "${full#"${kept%...}"}" != "$full" ] && pass \
  || fail "the 100 KB command line: ${#kept} bytes kept, ending '${kept: -5}'"
says "the command line is ${#full} bytes"
echo "a signal while the harness's own reader has stopped reading: it records and exits, no wait"
# the pass-through retried its blocked write after the signal: the harness stayed in it (and
# the run 'running') until the reader went away
pad=$(head -c 4000 /dev/zero | tr '\0' x)
workload flood.sh "i=0; while :; do i=\$((i + 1)); echo \"HARNESS_STEP {\\\"v\\\":1,\\\"step\\\":\$i,\\\"loss\\\":2.5}\"; echo $pad; done"
rm -f flood.rc flood.pid
( "$H" exec --db flood.db -- ./flood.sh 2>/dev/null & echo $! > flood.pid; wait $!; echo $? > flood.rc ) | sleep $((120 * SLOW)) &
reader=$!
wait_until 60 "the flood's first step recorded" -- sh -c "[ -s flood.db ] && [ \"\$(sqlite3 flood.db 'select count(*) from steps' 2>/dev/null)\" -gt 0 ]"
kill -TERM "$(cat flood.pid)"
wait_until 20 "the harness to exit after SIGTERM with its reader stalled" -- test -s flood.rc
[ "$(cat flood.rc 2>/dev/null)" = 1 ] && pass || fail "exec stopped by SIGTERM: exit $(cat flood.rc 2>/dev/null), want 1"
[ "$(q flood.db 'select status from runs')" = failed ] && pass || fail "the flood run is $(q flood.db 'select status from runs'), want failed"
pkill -P "$reader" sleep 2>/dev/null; kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null
echo "exec --compare of a CMD that cannot start: its one error, no judging of a run rolled back"
printf '#!/nonexistent/python\n' > noint.sh; chmod +x noint.sh
expect 2 "exec --compare, CMD with a missing interpreter" -- "$H" exec --db noint.db --scenario "$SRC/scenarios/gpt2-tiny.json" --compare --baseline "$SRC/baselines/gpt2-tiny.cpu.baseline" -- ./noint.sh
says "interpreter '/nonexistent/python' is not there"
[ "$(grep -c 'error:' err)" = 1 ] && pass || fail "exec --compare of a CMD not started: $(cat err)"

echo "ingest of any number of logs past 64 says so (past 65 it said 'unexpected argument')"
mkdir -p many; for i in $(seq 0 99); do echo "HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":$i}" > many/r$i.log; done
expect 2 "ingest of 100 logs" -- "$H" ingest many/*.log --device a --db many.db; says "more than 64 log files"
[ ! -e many.db ] && pass || fail "ingest of 100 logs made a store"
finish
