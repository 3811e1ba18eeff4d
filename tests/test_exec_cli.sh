#!/usr/bin/env bash
# tests/test_exec_cli.sh: `harness exec` and `harness ingest` end to end without Python: output
# passed through, exit codes and signals reaching the run, crashes, kills, every log fixture.
# usage: test_exec_cli.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
LOGS="$SRC/tests/data/logs"
tiny="$SRC/scenarios/gpt2-tiny.json"
db="$T/a.db"
# a workload script: $1 = file, rest = its body
workload() { local f="$1"; shift; printf '#!/bin/sh\n%s\n' "$*" >"$f"; chmod +x "$f"; }
step_line() { echo "echo 'HARNESS_STEP {\"v\":1,\"step\":$1,\"loss\":$2,\"grad_norm\":1.5,\"lr\":0.001,\"tokens\":512,\"step_ms\":10}'"; }
# show RUN: the run as text into $T/show
show() { "$H" show "$1" --db "$db" >"$T/show" 2>&1; }
field() { grep "^$1 " "$T/show" | sed "s/^$1 *//"; }
has_sqlite=0; command -v sqlite3 >/dev/null && has_sqlite=1

echo "usage and input errors (exit 2, nothing recorded)"
expect 0 "exec --help" -- "$H" exec --help
expect 0 "ingest --help" -- "$H" ingest --help
expect 2 "exec without a command" -- "$H" exec --db "$db"; says "no command"
expect 2 "exec with -- and nothing" -- "$H" exec --db "$db" --
expect 2 "exec --format bogus" -- "$H" exec --format bogus --db "$db" -- true; says "bogus"
expect 2 "exec --keys without loss" -- "$H" exec --format jsonl --keys step=iter --db "$db" -- true; says "--keys"
expect 2 "exec --keys bad field" -- "$H" exec --format jsonl --keys steps=iter,loss=l --db "$db" -- true; says "steps=iter"
expect 2 "exec --keys with another format" -- "$H" exec --format seed --keys step=a,loss=b --db "$db" -- true
expect 2 "exec a missing program" -- "$H" exec --db "$db" -- "$T/no-such-program"; says "no-such-program"
expect 2 "exec a bad scenario" -- "$H" exec --scenario "$T/nope.json" --db "$db" -- true
expect 2 "exec --compare without scenario" -- "$H" exec --compare --db "$db" -- true
[ ! -e "$db" ] && pass || fail "input errors created the store"
expect 2 "ingest without --device" -- "$H" ingest "$LOGS/seed.log" --db "$db"; says "--device"
expect 2 "ingest without logs" -- "$H" ingest --device x --db "$db"
expect 2 "ingest a missing log" -- "$H" ingest "$T/none.log" --device x --db "$db"; says "none.log"
[ ! -e "$db" ] && pass || fail "ingest input errors created the store"

echo "a run that ends ok: output passed through unchanged, metadata kept"
workload "$T/ok.sh" "echo 'HARNESS_META {\"v\":1,\"device_name\":\"Fake GPU 9\",\"torch\":\"9.9\",\"driver\":\"123.4\",\"mem_total_bytes\":1000}'
$(step_line 1 2.5)
echo 'to stderr' >&2
$(step_line 2 2.25)
printf 'no newline at the end'"
"$T/ok.sh" >"$T/direct.out" 2>"$T/direct.err"
CUDA_VISIBLE_DEVICES=3 SLURM_JOB_ID=42 expect 0 "exec ok" -- "$H" exec --device fake --db "$db" -- "$T/ok.sh"
cmp -s "$T/out" "$T/direct.out" && pass || fail "stdout not passed through unchanged"
grep -q '^to stderr$' "$T/err" && pass || fail "stderr not passed through"
grep -q "run 1: ok, 2 steps" "$T/err" && pass || fail "final line: $(tail -1 "$T/err")"
show 1
[ "$(field status)" = ok ] && [ "$(field steps)" = 2 ] && pass || fail "run 1 ok with 2 steps"
[ "$(field 'device name')" = "Fake GPU 9" ] && pass || fail "device name from HARNESS_META: $(field 'device name')"
[ "$(field runtime)" = "torch 9.9" ] && [ "$(field driver)" = "123.4" ] && pass || fail "runtime/driver"
if [ "$has_sqlite" = 1 ]; then
  extra="$(sqlite3 "$db" "SELECT key || '=' || value FROM run_extra WHERE run_id = 1")"
  for want in "env.CUDA_VISIBLE_DEVICES=3" "env.SLURM_JOB_ID=42" "command=$T/ok.sh" "exit_code=exit code 0" "log_format=harness" "cwd="; do
    echo "$extra" | grep -qF "$want" && pass || fail "run_extra lacks $want"
  done
  # the chunks joined as they came (as hex: sqlite3 would end each row with a newline, and how
  # many chunks there are depends on how the workload's writes met the harness's reads)
  hex=$(sqlite3 "$db" "SELECT hex(data) FROM run_logs WHERE run_id = 1 AND source = 'stdout' ORDER BY seq" | tr -d '\n')
  printf '%b' "$(printf '%s' "$hex" | sed 's/../\\x&/g')" >"$T/log1"
  cmp -s "$T/log1" "$T/direct.out" && pass || fail "raw stdout log not stored whole"
fi

echo "a workload that crashes mid-run, one killed by a signal, one that prints nothing, a NaN"
workload "$T/crash.sh" "$(step_line 1 2.5)
$(step_line 2 2.4)
echo 'Traceback: RuntimeError: boom' >&2
exit 3"
expect 1 "exec crash" -- "$H" exec --db "$db" -- "$T/crash.sh"
show 2
[ "$(field status)" = failed ] && [ "$(field steps)" = 2 ] && pass || fail "crash: failed with 2 steps kept"
grep -q "exit code 3.*RuntimeError: boom" "$T/show" && pass || fail "crash: error names exit code and last output"
workload "$T/killed.sh" "$(step_line 1 2.5)
kill -9 \$\$"
expect 1 "exec killed" -- "$H" exec --db "$db" -- "$T/killed.sh"
show 3
grep -q "killed by signal 9" "$T/show" && [ "$(field steps)" = 1 ] && pass || fail "killed: signal 9 in the error"
workload "$T/quiet.sh" "echo 'hello'; exit 0"
expect 1 "exec prints no step" -- "$H" exec --db "$db" -- "$T/quiet.sh"
show 4
grep -q "no training step recognised.*formats tried: harness, trainer, seed, mllog, deepspeed, jsonl" "$T/show" \
  && pass || fail "nothing recognised: formats listed"
workload "$T/nan.sh" "$(step_line 1 2.5)
echo 'HARNESS_STEP {\"v\":1,\"step\":2,\"loss\":NaN}'"
expect 1 "exec NaN loss" -- "$H" exec --db "$db" -- "$T/nan.sh"
show 5
[ "$(field status)" = diverged ] && pass || fail "NaN loss: diverged, got $(field status)"

echo "SIGTERM to the harness reaches the workload's process group"
# the workload waits for the signal, ending by itself (exit 0) only after the longest wait of
# this test, so that a signal that never reaches it fails the test rather than hanging it
idle_limit=$((300 * SLOW))
workload "$T/long.sh" "trap 'echo got-TERM; exit 143' TERM
$(step_line 1 2.5)
end=\$((\$(date +%s) + $idle_limit)); while [ \$(date +%s) -lt \$end ]; do sleep 0.1; done"
# a file of its own: $T/out still holds the HARNESS_STEP lines of the run before, which a poll
# could read before the background shell truncates it, and signal a harness not yet started
"$H" exec --db "$db" -- "$T/long.sh" >"$T/term.out" 2>"$T/err" &
hpid=$!
# its step passed through: the harness forwards signals and the workload's trap is set
wait_until 120 "the workload's step on the harness's stdout" -- grep -q HARNESS_STEP "$T/term.out"
kill -TERM "$hpid"; wait "$hpid"; rc=$?
[ "$rc" = 1 ] && pass || fail "harness after SIGTERM: exit $rc, want 1"
grep -q got-TERM "$T/term.out" && pass || fail "the workload did not get SIGTERM"
show 6
[ "$(field status)" = failed ] && [ "$(field steps)" = 1 ] && pass || fail "SIGTERM: failed, 1 step"

echo "a workload that catches the passed-on SIGTERM and exits 0 is still an interrupted run"
workload "$T/long0.sh" "trap 'echo got-TERM; exit 0' TERM
$(step_line 1 2.5)
end=\$((\$(date +%s) + $idle_limit)); while [ \$(date +%s) -lt \$end ]; do sleep 0.1; done"
"$H" exec --db "$T/t0.db" -- "$T/long0.sh" >"$T/term0.out" 2>"$T/err" &
hpid=$!
wait_until 120 "the workload's step on the harness's stdout" -- grep -q HARNESS_STEP "$T/term0.out"
kill -TERM "$hpid"; wait "$hpid"; rc=$?
[ "$rc" = 1 ] && pass || fail "harness after SIGTERM, workload exit 0: exit $rc, want 1"
"$H" runs --db "$T/t0.db" --json >"$T/t0.json" 2>&1
grep -q '"status": "failed"' "$T/t0.json" && pass || fail "SIGTERM then exit 0: recorded $(grep -o '"status": "[a-z]*"' "$T/t0.json")"

echo "kill -9 of the harness keeps every step seen"
workload "$T/slow.sh" "echo \$\$ >$T/slow.pid
$(step_line 1 2.5)
$(step_line 2 2.4)
end=\$((\$(date +%s) + $idle_limit)); while [ \$(date +%s) -lt \$end ]; do sleep 0.1; done"
"$H" exec --db "$db" -- "$T/slow.sh" >"$T/out" 2>"$T/err" &
hpid=$!
steps_recorded() { show 7; [ "$(field steps)" = 2 ]; }
wait_until 120 "run 7 to record its 2 steps" -- steps_recorded
kill -KILL "$hpid"; wait "$hpid" 2>/dev/null
# the orphaned workload leads its own process group (exec_child.c): end it and its sleep
[ -s "$T/slow.pid" ] && kill -TERM -- "-$(cat "$T/slow.pid")" 2>/dev/null
show 7
[ "$(field steps)" = 2 ] && [ "$(field status)" = running ] && pass || fail "after kill -9: $(field steps) steps, $(field status)"

echo "ingest every real log fixture"
# ingest_check FILE... -- STEPS FORMAT: one run with STEPS steps in FORMAT
n=7
ingest_check() {
  local files=() ; while [ "$1" != -- ]; do files+=("$1"); shift; done; shift
  n=$((n+1))
  expect 0 "ingest ${files[*]##*/}" -- "$H" ingest "${files[@]}" --device fixture --db "$db"
  grep -q "run $n: ok, $1 steps.*(format $2)" "$T/out" && pass || fail "ingest ${files[*]##*/}: $(tail -1 "$T/out")"
  show "$n"
}
step_loss() { awk -v s="$1" '$1 == s { print $2 }' "$T/show"; }
ingest_check "$LOGS/trainer.log" -- 6 trainer
[ "$(step_loss 1)" = 5.458 ] && [ "$(step_loss 6)" = 3.907 ] && pass || fail "trainer losses: $(step_loss 1) $(step_loss 6)"
ingest_check "$LOGS/trainer-callback.log" -- 12 harness
# Trainer shuffles (RandomSampler): its step 1 is not the harness's; the value is the log's
[ "$(step_loss 1)" = 5.46274042 ] && pass || fail "HarnessCallback step 1 loss: $(step_loss 1)"
ingest_check "$LOGS/seed.log" -- 8 seed
# step 2 = 2 x mean(0..1) - mean(0) = 2*5.337170839309692 - 5.537014961242676
[ "$(step_loss 1)" = 5.53701496 ] && [ "$(step_loss 2)" = 5.13732672 ] && pass || fail "seed recovered losses: $(step_loss 1) $(step_loss 2)"
[ "$(step_loss 26)" = 3.05159283 ] && pass || fail "seed epoch 2 restarts the mean: $(step_loss 26)"
ingest_check "$LOGS/mllog.log" -- 8 mllog
[ "$(step_loss 1)" = 5.53701496 ] && pass || fail "mllog step 1 loss: $(step_loss 1)"
ingest_check "$LOGS/deepspeed.log" -- 6 deepspeed
[ "$(step_loss 1)" = 5.537015 ] && pass || fail "deepspeed step 1 loss: $(step_loss 1)"
awk '$1 == 3 { exit !($7 > 800) }' "$T/show" && pass || fail "deepspeed MaxMemAllocated merged into step 3"
ingest_check "$LOGS/torchrun-2ranks.log" -- 6 harness
[ "$(field 'world size')" = 2 ] && pass || fail "interleaved ranks: world size $(field 'world size')"
ingest_check "$LOGS/rank0.stdout.log" "$LOGS/rank1.stdout.log" -- 6 harness
if [ "$has_sqlite" = 1 ]; then
  [ "$(sqlite3 "$db" "SELECT count(DISTINCT rank) || ' ' || count(*) || ' ' || min(mem_peak_bytes > 0) FROM rank_steps WHERE run_id = $n")" = "2 12 1" ] \
    && pass || fail "per-rank steps and memory of both rank files"
fi
# one log per rank without rank tags: log k is rank k
grep -v HARNESS_META "$LOGS/seed.log" >"$T/r0.log"; cp "$T/r0.log" "$T/r1.log"
ingest_check "$T/r0.log" "$T/r1.log" -- 8 seed

echo "jsonl with named keys; forced formats; garbage"
printf '{"iter": 0, "lm_loss": 3.5}\n{"iter": 1, "lm_loss": 3.25, "other": [1, {"a": "}"}]}\nnot json\n{"iter": 2, "lm_lo\n' >"$T/j.log"
n=$((n+1))
expect 0 "ingest jsonl --keys" -- "$H" ingest "$T/j.log" --format jsonl --keys step=iter,loss=lm_loss --device x --db "$db"
grep -q "run $n: ok, 2 steps" "$T/out" && pass || fail "jsonl: $(tail -1 "$T/out")"
n=$((n+1))
expect 1 "forced format that does not match" -- "$H" ingest "$LOGS/seed.log" --format mllog --device x --db "$db"
grep -q "formats tried: mllog)" "$T/out" && pass || fail "forced format named: $(tail -1 "$T/out")"
head -c 20000 /dev/urandom >"$T/garbage.log"
n=$((n+1))
expect 1 "binary garbage" -- "$H" ingest "$T/garbage.log" --device x --db "$db"
# truncated and interleaved bytes around good lines
{ head -c 300 "$LOGS/trainer-callback.log"; printf '\n'; head -c 5000 /dev/urandom | tr -d '\n'; printf '\n'; cat "$LOGS/trainer-callback.log"; } >"$T/mixed.log"
n=$((n+1))
expect 0 "garbage around a good log" -- "$H" ingest "$T/mixed.log" --device x --db "$db"
grep -q "run $n: ok, 12 steps" "$T/out" && pass || fail "mixed: $(tail -1 "$T/out")"

echo "--compare judges as harness run --compare does"
awk 'f && NF { printf "HARNESS_STEP {\"v\":1,\"step\":%s,\"loss\":%s,\"grad_norm\":%s,\"lr\":%s}\n", $1, $2, $3, $4 } /^step loss/ { f = 1 }' \
  "$SRC/baselines/gpt2-tiny.pytorch.baseline" >"$T/replay.log"
expect 0 "exec --compare pass" -- "$H" exec --scenario "$tiny" --compare --baseline pytorch \
  --baselines "$SRC/baselines" --db "$db" -- cat "$T/replay.log"
grep -q "verdict: pass" "$T/err" && pass || fail "compare pass: $(grep verdict "$T/err")"
sed '5s/"loss":[0-9.]*/"loss":9.5/' "$T/replay.log" >"$T/bad.log"
expect 1 "exec --compare fail" -- "$H" exec --scenario "$tiny" --compare --baseline pytorch \
  --baselines "$SRC/baselines" --db "$db" -- cat "$T/bad.log"
grep -q "verdict: fail" "$T/err" && pass || fail "compare fail: $(grep verdict "$T/err")"
expect 0 "ingest --compare" -- "$H" ingest "$T/replay.log" --scenario "$tiny" --device a100 --compare \
  --baseline pytorch --baselines "$SRC/baselines" --db "$db"

echo "--compare with a baseline label or run id that is not there: exit 2 before CMD runs, as --help says"
runs() { [ "$has_sqlite" = 1 ] && sqlite3 "$db" "select count(*) from runs"; }
runs_before=$(runs)
for b in nosuch 99999; do
  expect 2 "exec --compare --baseline $b" -- "$H" exec --scenario "$tiny" --compare --baseline "$b" --db "$db" \
    -- sh -c "touch '$T/ran-$b'; cat '$T/replay.log'"
  says "$b"
  [ ! -e "$T/ran-$b" ] && pass || fail "exec --compare --baseline $b ran CMD"
done
[ "$(runs)" = "$runs_before" ] && pass || fail "a refused --compare recorded a run: $(runs) runs, $runs_before before"
expect 0 "exec --help" -- "$H" exec --help
grep -q "found before CMD runs" "$T/out" && ! grep -q "after the run" "$T/out" && pass \
  || fail "exec --help on a missing --compare baseline: $(grep -A1 'Exit codes' "$T/out")"

echo "the A100 flow: an exec'd run with HARNESS_META becomes a baseline file that imports again"
{ echo 'HARNESS_META {"v":1,"device_name":"NVIDIA A100-SXM4-80GB","host":"node7","world_size":1,"mem_total_bytes":85899345920,"odd key!":"x"}'; cat "$T/replay.log"; } >"$T/a100.log"
expect 0 "exec the A100 log" -- "$H" exec --scenario "$tiny" --device a100 --db "$db" -- cat "$T/a100.log"
run_a100=$(sed -n 's/^run \([0-9]*\): ok.*/\1/p' "$T/err")
expect 0 "baseline record" -- "$H" baseline record "$run_a100" --label a100 --out "$T/a100.baseline" --db "$db"
grep -q '^workload.host: node7' "$T/a100.baseline" && grep -q '^odd_key_: x' "$T/a100.baseline" && pass \
  || fail "workload keys that clash or have odd characters are renamed"
expect 0 "baseline import" -- "$H" baseline import "$T/a100.baseline" --db "$T/b.db"
expect 0 "exec --compare against it" -- "$H" exec --scenario "$tiny" --device s4000 --compare --baseline a100 \
  --db "$T/b.db" -- cat "$T/replay.log"
# SIGTERM while ingest reads a long log: the run ends failed ("interrupted"), never left running
awk 'BEGIN{for(i=1;i<=400000;i++) printf "HARNESS_STEP {\"v\":1,\"step\":%d,\"loss\":2}\n", i}' >"$T/long.log"
"$H" ingest "$T/long.log" --device x --db "$T/sig.db" >"$T/sig.out" 2>&1 & pid=$!
wait_until 30 "the ingest's run row" -- sh -c "sqlite3 '$T/sig.db' 'select count(*) from runs' 2>/dev/null | grep -q '^1'"
kill -TERM "$pid"; wait "$pid"; got=$?
st="$(sqlite3 "$T/sig.db" "select status from runs")"
if [ "$st" = ok ] && [ "$got" = 0 ]; then echo "$NAME: the ingest finished before the signal (a fast machine): nothing to check"
else [ "$got" = 1 ] && [ "$st" = failed ] && grep -q "interrupted by signal 15" "$T/sig.out" && pass || fail "ingest after SIGTERM: exit $got, status '$st': $(tail -1 "$T/sig.out")"; fi

# JSON's \uXXXX escapes (Python's json.dumps writes non-ASCII so) are stored as UTF-8, a surrogate
# pair as one character, a lone surrogate as U+FFFD
printf '%s\n' 'HARNESS_META {"v": 1, "device_name": "\u6469\u5c14 MTT S4000 \ud83d\ude00 \ud800x"}' \
  'HARNESS_STEP {"v": 1, "step": 1, "loss": 2}' >"$T/utf.log"
expect 0 "ingest a log with \\u escapes" -- "$H" ingest "$T/utf.log" --device x --db "$T/utf.db"
[ "$(sqlite3 "$T/utf.db" "select device_name from runs")" = "摩尔 MTT S4000 😀 �x" ] && pass || fail "\\u escapes stored as '$(sqlite3 "$T/utf.db" "select device_name from runs")'"

# a metadata line's keys past 32, keys of 64 bytes or more and values past 255 bytes: warned about
python3 -c "
import json
d = {'v': 1}
d.update({'k%02d' % i: str(i) for i in range(40)})
d['K' * 100] = 'x'
d['device_name'] = 'D' * 300
print('HARNESS_META ' + json.dumps(d))
print('HARNESS_STEP {\"v\": 1, \"step\": 1, \"loss\": 2}')" >"$T/meta.log"
expect 0 "ingest an over-full metadata line" -- "$H" ingest "$T/meta.log" --device x --db "$T/meta.db"
says "keys left out and 1 values cut"

# show: a value never recorded is '-', a recorded NaN stays nan
printf '%s\n' 'HARNESS_STEP {"v":1,"step":1,"loss":2,"grad_norm":NaN}' 'HARNESS_STEP {"v":1,"step":2,"loss":2}' >"$T/nn.log"
expect 0 "ingest a NaN and a missing grad norm" -- "$H" ingest "$T/nn.log" --device x --db "$T/nn.db"
expect 0 "show them" -- "$H" show 1 --db "$T/nn.db"
grep -Eq '^ +1 +2 +nan ' "$T/out" && grep -Eq '^ +2 +2 +- ' "$T/out" && pass || fail "show does not tell a recorded NaN from a value never recorded: $(tail -2 "$T/out")"

finish
