#!/usr/bin/env bash
# tests/test_exec_edges.sh: exec/ingest/report cases found by acceptance testing: a program that is
# a directory, logs that are not regular files, srun --label rank tags, a report without tokens/s.
# usage: test_exec_edges.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 2

echo "exec of a directory: exit 2 before the store is created"
mkdir prog.d && chmod 755 prog.d
expect 2 "exec a directory" -- "$H" exec --db x.db -- ./prog.d
says "Is a directory"
[ ! -e x.db ] && pass || fail "exec of a directory created the store"
mkdir -p bin/fakeprog && chmod 755 bin/fakeprog
expect 2 "exec a directory found in PATH" -- env PATH="$T/bin:/usr/bin:/bin" "$H" exec --db x.db -- fakeprog
[ ! -e x.db ] && pass || fail "exec of a directory in PATH created the store"

echo "ingest of what is not a regular file says what it is"
mkfifo pipe
expect 2 "ingest a FIFO" -- timeout $((20 * SLOW)) "$H" ingest pipe --device a100 --db x.db
says "FIFO"
expect 2 "ingest /dev/zero" -- timeout $((20 * SLOW)) "$H" ingest /dev/zero --device a100 --db x.db
says "character device"
expect 2 "ingest a directory" -- "$H" ingest prog.d --device a100 --db x.db
says "directory"
[ ! -e x.db ] && pass || fail "a refused ingest created the store"

echo "srun --label: '0: ' and ' 1: ' tag the ranks of one interleaved log"
printf "0: {'loss': 2.5, 'learning_rate': 1e-4}\n1: {'loss': 2.6, 'learning_rate': 1e-4}\n0: {'loss': 2.4, 'learning_rate': 1e-4}\n1: {'loss': 2.3, 'learning_rate': 1e-4}\n" > srun.log
expect 0 "ingest srun trainer log" -- "$H" ingest srun.log --device a100 --db x.db
[ "$(sqlite3 x.db 'select group_concat(step || ":" || loss, " ") from (select * from steps where run_id = 1 order by step)')" = "1:2.5 2:2.4" ] \
  && pass || fail "rank 0's Trainer series: $(sqlite3 x.db 'select step, loss from steps where run_id = 1')"
[ "$(sqlite3 x.db 'select count(*) from rank_steps where run_id = 1 and rank = 1')" = 2 ] \
  && pass || fail "rank 1's steps kept"
printf ' 0: HARNESS_STEP {"v":1,"step":1,"loss":2.0}\n 1: HARNESS_STEP {"v":1,"step":1,"loss":3.0}\n10: HARNESS_STEP {"v":1,"step":1,"loss":4.0}\n 0: HARNESS_STEP {"v":1,"step":2,"loss":1.0}\n' > srun2.log
expect 0 "ingest padded srun labels" -- "$H" ingest srun2.log --device a100 --db x.db
[ "$(sqlite3 x.db 'select group_concat(loss, " ") from (select * from steps where run_id = 2 order by step)')" = "2.0 1.0" ] \
  && pass || fail "rank 0's series under padded labels: $(sqlite3 x.db 'select step, loss from steps where run_id = 2')"

echo "baseline record of a run without a scenario: exit 2, no file (it would not import)"
cp x.db x.before
expect 2 "record a run without scenario" -- "$H" baseline record 1 --label a100 --out b.baseline --db x.db
says "no scenario"
[ ! -e b.baseline ] && pass || fail "a baseline file that cannot be imported was written"
cmp -s x.db x.before && pass || fail "the store changed"

echo "report of runs whose logs have no step time or memory (a Trainer's) still plots"
if command -v gnuplot >/dev/null; then
  expect 0 "report without tokens/s" -- "$H" report 1 2 --db x.db --out rep
  [ -s rep/plots/throughput.png ] && [ -s rep/plots/memory.png ] && pass \
    || fail "the throughput and memory plots were drawn"
else
  echo "  (no gnuplot: report check skipped)"
fi

echo "history keeps device labels apart: an a100 log is no history of an s4000 run"
printf 'HARNESS_STEP {"v":1,"step":1,"loss":2.0,"step_ms":10,"tokens":100}\n' > h.log
for d in a100 s4000 s4000; do
  expect 0 "ingest as $d" -- "$H" ingest h.log --device $d --scenario "$SRC/scenarios/gpt2-tiny.json" --db hist.db
done
expect 0 "history of the second s4000 run" -- "$H" compare 3 --history --db hist.db --json
tr -d ' \n' <"$T/out" | grep -q '"previous_runs":\[2\]' && pass \
  || { fail "history of run 3 is run 2 alone (same label)"; grep -A4 previous_runs "$T/out"; }
echo "a grad norm never logged is NULL and not compared; one logged NaN at every step diverges"
for i in 1 2 3; do echo "HARNESS_STEP {\"v\":1,\"step\":$i,\"loss\":2.$i,\"grad_norm\":1.0}"; done > gA.log
for i in 1 2 3; do echo "HARNESS_STEP {\"v\":1,\"step\":$i,\"loss\":2.$i,\"grad_norm\":NaN}"; done > gC.log
for i in 1 2 3; do echo "HARNESS_STEP {\"v\":1,\"step\":$i,\"loss\":2.$i}"; done > gE.log
expect 0 "ingest the reference" -- "$H" ingest gA.log --device a --db gn.db
expect 1 "NaN grad norm at every step" -- "$H" ingest gC.log --device c --db gn.db --compare --baseline 1
grep -q "verdict: diverged" "$T/err" && pass || fail "a NaN grad norm at every step did not diverge"
expect 0 "no grad norm logged" -- "$H" ingest gE.log --device e --db gn.db --compare --baseline 1
grep -q "grad_norm   not compared: the run does not record it" "$T/err" && pass || fail "the message does not name the run"
expect 0 "show the run without grad norms" -- "$H" show 3 --db gn.db --json
tr -d ' \n' <"$T/out" | grep -q '"grad_norm":null' && pass || fail "a grad norm never logged is not null in show --json"
# the same run as a baseline file: '-' (not recorded), and read back the same way
expect 0 "record it with a scenario" -- "$H" ingest gE.log --device e --db gn.db --scenario "$SRC/scenarios/gpt2-tiny.json"
expect 0 "baseline record" -- "$H" baseline record 4 --label e --out e.baseline --db gn.db
awk '$1 == "1" {print $3}' e.baseline | grep -qx -- - && pass || { fail "the grad norm column is not '-'"; cat e.baseline; }
echo "a run that stops before its scenario's train.steps passes nothing: incomplete"
# the committed cpu baseline's own first 3 steps (loss and grad norm): right so far, but short
awk '$1 == "step" {t = 1; next} t && $1 >= 1 && $1 <= 3 {printf "HARNESS_STEP {\"v\":1,\"step\":%s,\"loss\":%s,\"grad_norm\":%s}\n", $1, $2, $3}' "$SRC/baselines/gpt2-tiny.cpu.baseline" > short.log
expect 1 "3 steps of a 40-step scenario, --compare" -- "$H" ingest short.log --device a --db short.db --scenario "$SRC/scenarios/gpt2-tiny.json" --compare
grep -q "verdict: incomplete: the run recorded steps up to 3 of its scenario's 40 (train.steps; the baseline's go to 40)" "$T/err" && pass || { fail "a 3-step run of a 40-step scenario is not incomplete"; tail -3 "$T/err"; }

echo "tokens per step follow WORLD_SIZE from the environment, as the run's world size does"
expect 0 "exec under WORLD_SIZE=4" -- env WORLD_SIZE=4 "$H" exec --db ws.db --scenario "$SRC/scenarios/gpt2-tiny.json" -- sh -c "echo \"{'loss': 2.0, 'learning_rate': 0.001, 'epoch': 0.1}\""
[ "$(sqlite3 ws.db 'select world_size || " " || (select tokens from steps) from runs')" = "4 2048" ] && pass || fail "world size 4: tokens are not 8 x 64 x 4"

echo "Trainer dicts number records, not steps: two whole runs logged every 10 steps pass"
for i in 1 2 3 4; do echo "{'loss': 2.$i, 'grad_norm': 1.$i, 'learning_rate': 0.001, 'epoch': 0.$i}"; done > every10.log
expect 0 "the reference, 4 dicts" -- "$H" ingest every10.log --device a100 --db ten.db --scenario "$SRC/scenarios/gpt2-tiny.json"
expect 0 "the port, 4 dicts, against it" -- "$H" ingest every10.log --device mi300 --db ten.db --scenario "$SRC/scenarios/gpt2-tiny.json" --compare --baseline 1
grep -q "verdict: pass" "$T/err" && pass || { fail "two whole Trainer logs are not a pass"; tail -2 "$T/err"; }

echo "a store of schema 9 (exec/ingest wrote 'nan' for what a log never gave) is migrated to NULL"
for i in 1 2 3; do echo "HARNESS_STEP {\"v\":1,\"step\":$i,\"loss\":5.$i}"; done > nogn.log
expect 0 "ingest a log without grad norms" -- "$H" ingest nogn.log --device old --db v9.db
sqlite3 v9.db "UPDATE steps SET grad_norm = 'nan', lr = 'nan'; UPDATE rank_steps SET grad_norm = 'nan'; PRAGMA user_version = 9;"
expect 0 "open it for writing" -- "$H" ingest nogn.log --device new --db v9.db
[ "$(sqlite3 v9.db "SELECT count(*) FROM steps WHERE grad_norm IS NULL AND lr IS NULL AND loss = 5.1")" = 2 ] && pass || fail "schema 9's 'nan' of an ingested run is not NULL after the migration"

echo "a SIGABRT sent to the harness (timeout -s ABRT, a batch system) ends it, message or not"
"$H" exec --db abrt.db -- sh -c 'sleep 30' >/dev/null 2>"$T/abrt.err" &
pid=$!
wait_until 20 "the run row" -- test -s abrt.db
kill -ABRT "$pid"; wait "$pid"; got=$?
[ "$got" -ge 128 ] && pass || fail "a SIGABRT sent to exec was swallowed: exit $got"

echo "# a write the store refuses mid-run (a lock held past the busy timeout): the run is failed, not ok"
cat >loop.sh <<'EOF'
#!/bin/sh
i=1; while [ $i -le 20 ]; do echo "HARNESS_STEP {\"v\":1,\"step\":$i,\"loss\":2}"; i=$((i+1)); sleep 0.5; done
EOF
chmod +x loop.sh
"$H" exec --device x --db lk.db -- ./loop.sh >lk.out 2>lk.err & pid=$!
wait_until 20 "the run's first step" -- sh -c 'sqlite3 lk.db "select count(*) from steps" 2>/dev/null | grep -q "^[1-9]"'
(echo "BEGIN EXCLUSIVE;"; echo "select 1;"; sleep 7; echo "COMMIT;") | sqlite3 lk.db >/dev/null
wait "$pid"; got=$?
[ "$got" = 1 ] && pass || fail "exec after a refused write: exit $got, want 1"
st="$(sqlite3 lk.db "select status from runs order by id desc limit 1")"
[ "$st" = failed ] && pass || fail "a run whose writes were refused is '$st', not failed"
grep -q "recording stopped" lk.err && ! grep -q ": ok," lk.err && pass || fail "the final line claims the run: $(tail -2 lk.err)"
n="$(sqlite3 lk.db "select count(*) from steps")"
grep -q "after the $n recorded" lk.err && pass || fail "the final line's count is not the $n steps stored: $(tail -1 lk.err)"

finish
