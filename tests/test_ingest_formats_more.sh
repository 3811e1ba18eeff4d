#!/usr/bin/env bash
# tests/test_ingest_formats_more.sh: exec and ingest on log shapes and stores an acceptance hunt found
# mishandled: Trainer dicts with num_input_tokens_seen, --compare of failed and diverged runs,
# ANSI colours, Python dicts with their own step, a locked store, workload metadata that names the
# recorder's keys, out-of-range step fields, jsonl's mem_used_bytes and --keys of every field,
# fractional steps, Megatron's iteration lines (at a line's start; the loss on the last rank),
# numbered rank files past 10 and compressed logs; Megatron's NAN/INF, a last line cut off, a
# replayed step, another rank's metadata. usage: HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 2
q() { sqlite3 "$1" "$2"; }
last() { q "$1" 'select max(id) from runs'; }
series() { q "$1" "select group_concat(step || ':' || loss, ' ') from (select * from steps where run_id = $2 order by step)"; }
extra() { q "$1" "select value from run_extra where run_id = $2 and key = '$3'"; }
tiny="$SRC/scenarios/gpt2-tiny.json"
# the verdict of the newest comparison (the baseline file imported makes a run after the judged one)
verdict() { q "$1" 'select verdict from comparisons order by rowid desc limit 1'; }

echo "Trainer with include_num_input_tokens_seen: every dict with a loss is a step; the summary is the last dict's"
cat > trtok.log <<'L'
{'loss': '3.889', 'grad_norm': '0.8189', 'learning_rate': '0.0008333', 'epoch': '0.125', 'num_input_tokens_seen': 128, 'train_runtime': '0.0161', 'train_tokens_per_second': '7974'}
{'loss': '3.902', 'grad_norm': '0.8149', 'learning_rate': '0.0005', 'epoch': '0.25', 'num_input_tokens_seen': 256, 'train_runtime': '0.0235', 'train_tokens_per_second': '1.09e+04'}
{'train_runtime': '0.0308', 'train_samples_per_second': '778.7', 'train_steps_per_second': '194.7', 'train_loss': '3.898', 'epoch': '0.375', 'num_input_tokens_seen': 384}
L
expect 0 "ingest a tokens-seen Trainer log" -- "$H" ingest trtok.log --device a100 --db t.db
grep -q "ok, 2 steps, final loss 3.902000 (format trainer)" out && pass || fail "tokens-seen Trainer: $(cat out)"
[ "$(series t.db 1)" = "1:3.889 2:3.902" ] && pass || fail "the Trainer steps: $(series t.db 1)"
# as the log printed them (the fewest digits that read back to the same double, not %.17g's)
[ "$(extra t.db 1 trainer_train_runtime)" = 0.0308 ] && [ "$(extra t.db 1 trainer_train_loss)" = 3.898 ] \
  && [ "$(extra t.db 1 trainer_train_samples_per_second)" = 778.7 ] \
  && pass || fail "the summary's values: train_runtime $(extra t.db 1 trainer_train_runtime), train_loss $(extra t.db 1 trainer_train_loss)"
# with HarnessCallback: the steps are the harness lines; the summary still the last dict's
{ echo 'HARNESS_META {"v":1,"device_name":"x"}'
  i=0; while IFS= read -r l; do i=$((i+1)); [ $i -le 2 ] && echo "HARNESS_STEP {\"v\":1,\"step\":$i,\"loss\":3.$i}"; echo "$l"; done < trtok.log; } > trcb.log
expect 0 "ingest a tokens-seen Trainer log with HarnessCallback" -- "$H" ingest trcb.log --device a100 --db t.db
id=$(last t.db)
[ "$(series t.db "$id")" = "1:3.1 2:3.2" ] && pass || fail "the callback's steps: $(series t.db "$id")"
[ "$(extra t.db "$id" trainer_train_runtime)" = "$(extra t.db 1 trainer_train_runtime)" ] && pass \
  || fail "the summary with HarnessCallback is step 1's: train_runtime $(extra t.db "$id" trainer_train_runtime)"

echo "a Python dict with its own 'step' keeps it, either key order"
printf "{'loss': 2.5, 'step': 10}\n{'loss': 2.4, 'step': 20}\n" > own1.log
printf "{'step': 10, 'loss': 2.5}\n{'step': 20, 'loss': 2.4}\n" > own2.log
for f in own1 own2; do
  expect 0 "ingest $f" -- "$H" ingest $f.log --device a100 --db own.db
  [ "$(series own.db "$(last own.db)")" = "10:2.5 20:2.4" ] && pass || fail "$f steps: $(series own.db "$(last own.db)")"
done

echo "--compare judges every recorded run: a diverged one, a failed one (never exit 0)"
awk 'f && NF { printf "HARNESS_STEP {\"v\":1,\"step\":%s,\"loss\":%s,\"grad_norm\":%s,\"lr\":%s}\n", $1, $2, $3, $4 } /^step loss/ { f = 1 }' \
  "$SRC/baselines/gpt2-tiny.pytorch.baseline" > replay.log
{ head -2 replay.log; echo 'HARNESS_STEP {"v":1,"step":3,"loss":NaN}'; } > nan.log
cmp_args="--scenario $tiny --compare --baseline pytorch --baselines $SRC/baselines"
expect 1 "exec --compare of a NaN loss" -- "$H" exec $cmp_args --db c.db -- cat nan.log
says "verdict: diverged"
[ "$(verdict c.db)" = diverged ] && pass || fail "no diverged row in comparisons"
expect 1 "exec --compare of a command exiting 3 after one step" -- "$H" exec $cmp_args --db c.db -- sh -c 'head -1 replay.log; exit 3'
says "verdict: incomplete"
[ "$(verdict c.db)" = incomplete ] && [ "$(q c.db 'select count(*) from comparisons')" = 2 ] && pass || fail "no incomplete row in comparisons"
expect 1 "exec --compare of all steps right, then exit 3" -- "$H" exec $cmp_args --db c.db -- sh -c 'cat replay.log; exit 3'
says "verdict:"
[ "$(q c.db 'select count(*) from comparisons')" = 3 ] && pass || fail "the failed run is not judged"
expect 1 "ingest --compare of a NaN loss" -- "$H" ingest nan.log --device x $cmp_args --db c.db
says "verdict: diverged"
[ "$(verdict c.db)" = diverged ] && [ "$(q c.db 'select count(*) from comparisons')" = 4 ] && pass || fail "ingest: no diverged row"
printf 'hello\n' > none.log
expect 1 "ingest --compare of a log with no step" -- "$H" ingest none.log --device x $cmp_args --db c.db
[ "$(q c.db 'select count(*) from comparisons')" = 5 ] && pass || fail "a run with no step is not judged"

echo "ANSI colours: rank tags and JSON lines read through them (ingest and exec)"
printf '\033[32m[rank0]:\033[0m HARNESS_STEP {"v":1,"step":1,"loss":2.0}\n\033[32m[rank1]:\033[0m HARNESS_STEP {"v":1,"step":1,"loss":9.0}\n' > colour.log
printf '\033[32m{"step":1,"loss":2.0}\033[0m\n\033[1;33m{"step":2,"loss":1.5}\033[0m\n' > colour.jsonl
expect 0 "ingest coloured rank tags" -- "$H" ingest colour.log --device x --db a.db
grep -q "final loss 2.000000" out && pass || fail "rank 1's loss taken as rank 0's: $(cat out)"
[ "$(q a.db "select count(*) from rank_steps where run_id = 1 and rank = 1")" = 1 ] && pass || fail "rank 1's step not kept as rank 1's"
expect 0 "ingest coloured JSON lines" -- "$H" ingest colour.jsonl --device x --db a.db
[ "$(series a.db 2)" = "1:2.0 2:1.5" ] && pass || fail "coloured JSON: $(series a.db 2)"
expect 0 "exec printing coloured lines" -- "$H" exec --db a.db -- cat colour.log
[ "$(series a.db 3)" = "1:2.0" ] && pass || fail "exec, coloured rank tags: $(series a.db 3)"

echo "a locked store: exec and ingest wait its busy timeout, then exit 2 without running CMD"
printf '{"step":1,"loss":2.0}\n' > plain.jsonl
expect 0 "a store" -- "$H" ingest plain.jsonl --device x --db lock.db
( echo '.timeout 10000'; echo 'BEGIN EXCLUSIVE;'; while [ ! -e release ]; do sleep 0.1; done; echo 'COMMIT;' ) | sqlite3 lock.db &
holder=$!
locked() { ! sqlite3 lock.db 'BEGIN IMMEDIATE; ROLLBACK;' 2>/dev/null; }
wait_until 20 "the store to be locked" -- locked
expect 2 "exec into a locked store" -- "$H" exec --db lock.db -- sh -c 'touch ran; cat plain.jsonl'
says "database is locked"
[ ! -e ran ] && pass || fail "exec ran CMD although the store could not take its run"
expect 2 "ingest into a locked store" -- "$H" ingest plain.jsonl --device x --db lock.db
says "database is locked"
touch release; wait "$holder"
[ "$(q lock.db 'select count(*) from runs')" = 1 ] && pass || fail "runs added to the locked store: $(q lock.db 'select count(*) from runs')"
expect 0 "exec once the lock is gone" -- "$H" exec --db lock.db -- sh -c 'touch ran; cat plain.jsonl'
[ -e ran ] && pass || fail "CMD did not run"
expect 2 "exec into a read-only store" -- "$H" exec --db /dev/null/x.db -- sh -c 'touch ran2'
[ ! -e ran2 ] && pass || fail "exec ran CMD with no store"

echo "HARNESS_META cannot take the recorder's own run_extra keys"
printf '#!/bin/sh\necho %s\necho %s\nexit 7\n' \
  "'HARNESS_META {\"v\":1,\"exit_code\":\"exit code 0\",\"log_format\":\"mllog\",\"signal\":\"none\",\"log_truncated\":\"no\",\"log.0\":\"a\",\"loss_kind\":\"k\",\"mine\":\"m\"}'" \
  "'HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.0}'" > meta7.sh
chmod +x meta7.sh
expect 1 "exec a workload naming the recorder's keys, exit 7" -- "$H" exec --db m.db -- ./meta7.sh
says "HARNESS_META key 'exit_code' is the recorder's own"
[ "$(extra m.db 1 exit_code)" = "exit code 7" ] && [ "$(extra m.db 1 log_format)" = harness ] && pass \
  || fail "the recorder's keys: exit_code '$(extra m.db 1 exit_code)', log_format '$(extra m.db 1 log_format)'"
[ -z "$(extra m.db 1 signal)$(extra m.db 1 log_truncated)$(extra m.db 1 log.0)$(extra m.db 1 loss_kind)" ] && pass \
  || fail "the workload's values kept under the recorder's keys: $(q m.db "select key || '=' || value from run_extra where run_id = 1")"
[ "$(extra m.db 1 workload.exit_code)" = "exit code 0" ] && [ "$(extra m.db 1 workload.signal)" = none ] && [ "$(extra m.db 1 workload.log.0)" = a ] \
  && [ "$(extra m.db 1 mine)" = m ] && pass || fail "the workload's values renamed: $(q m.db "select key || '=' || value from run_extra where run_id = 1 and key like 'workload.%'")"
[ "$(q m.db "select status from runs where id = 1")" = failed ] && pass || fail "status of exit 7"
printf 'HARNESS_META {"v":1,"log format":"mllog"}\nHARNESS_STEP {"v":1,"step":1,"loss":2.0}\n' > spaced.log
expect 0 "ingest a workload key that is the recorder's once its odd characters are '_'" -- "$H" ingest spaced.log --device x --db m.db
[ "$(extra m.db 2 log_format)" = harness ] && [ "$(extra m.db 2 workload.log_format)" = mllog ] && pass \
  || fail "'log format': log_format '$(extra m.db 2 log_format)', workload.log_format '$(extra m.db 2 workload.log_format)'"

echo "step fields out of range are left out with a warning naming file:line and field"
printf 'HARNESS_STEP {"v":1,"step":1,"loss":2.0,"grad_norm":1.0}\nHARNESS_STEP {"v":1,"step":2,"loss":1.5,"grad_norm":-1,"lr":Infinity,"step_ms":-5,"tokens_per_s":1e308,"mem_peak_bytes":-1,"tokens":64}\n' > range.log
expect 0 "ingest out-of-range fields" -- "$H" ingest range.log --device x --db r.db
for f in grad_norm lr step_ms tokens_per_s mem_peak_bytes; do says "range.log:2: $f"; done
[ "$(q r.db "select coalesce(grad_norm, 'null') || ' ' || coalesce(lr, 'null') || ' ' || coalesce(step_ms, 'null') || ' ' || coalesce(tokens_per_s, 'null') || ' ' || mem_peak_bytes || ' ' || tokens || ' ' || loss from steps where run_id = 1 and step = 2")" = "null null null null 0 64 1.5" ] \
  && pass || fail "the step's fields: $(q r.db "select * from steps where run_id = 1 and step = 2")"
[ "$(extra r.db 1 fields_out_of_range)" = 5 ] && pass || fail "fields_out_of_range: $(extra r.db 1 fields_out_of_range)"
printf 'HARNESS_STEP {"v":1,"step":1,"loss":NaN,"grad_norm":Infinity}\n' > div.log
expect 1 "a NaN loss and an infinite grad norm are divergence, not out of range" -- "$H" ingest div.log --device x --db r.db
! grep -q "out of range" err && grep -q "diverged" out && pass || fail "divergence taken as out of range: $(cat err out)"

echo "jsonl: mem_used_bytes by default; --keys of all 11 fields"
printf '{"step":1,"loss":2,"mem_used_bytes":1000}\n' > mu.jsonl
expect 0 "ingest mem_used_bytes" -- "$H" ingest mu.jsonl --device x --db j.db
[ "$(q j.db 'select mem_used_bytes from steps where run_id = 1')" = 1000 ] && pass || fail "mem_used_bytes: $(q j.db 'select mem_used_bytes from steps')"
printf '{"a":1,"b":2,"c":1,"d":0.1,"e":8,"f":10,"g":800,"h":5,"i":6,"j":7,"k":0}\n' > all.jsonl
expect 0 "--keys with 11 pairs" -- "$H" ingest all.jsonl --format jsonl --device x --db j.db \
  --keys step=a,loss=b,grad_norm=c,lr=d,tokens=e,step_ms=f,tokens_per_s=g,mem_peak_bytes=h,mem_used_bytes=i,mem_total_bytes=j,rank=k
[ "$(q j.db 'select mem_peak_bytes || " " || mem_used_bytes || " " || mem_total_bytes from steps where run_id = 2')" = "5 6 7" ] \
  && pass || fail "11 keys: $(q j.db 'select * from steps where run_id = 2')"

echo "fractional steps skip their line"
printf ' iteration        1/ 100 | lm loss: 2.6 |\n iteration      1.5/ 100 | lm loss: 2.5 |\n' > frac.log
expect 0 "ingest a Megatron step 1.5" -- "$H" ingest frac.log --device x --db f.db
[ "$(series f.db 1)" = "1:2.6" ] && pass || fail "Megatron 1.5: $(series f.db 1)"
printf ':::MLLOG {"key":"train_loss","value":2.6,"metadata":{"step":1}}\n:::MLLOG {"key":"train_loss","value":2.5,"metadata":{"step":2.5}}\n' > frac.mllog
expect 0 "ingest an MLPerf step 2.5" -- "$H" ingest frac.mllog --device x --db f.db
[ "$(series f.db 2)" = "1:2.6" ] && pass || fail "mllog 2.5: $(series f.db 2)"

echo "Megatron: an iteration line at the line's start; the loss printed by the last rank only"
printf 'iteration        %d/     100 | consumed samples: 8 | elapsed time per iteration (ms): 1234.5 | learning rate: 1.0E-04 | lm loss: 1.0%dE+01 |\n' 1 8 2 7 > mstart.log
expect 0 "ingest iteration lines without a leading space" -- "$H" ingest mstart.log --device x --db g.db
[ "$(series g.db 1)" = "1:10.8 2:10.7" ] && pass || fail "line-start iterations: $(series g.db 1)"
{ echo '0: [2024-05-01 10:00:00] [INFO] building GPT model ...'
  for i in 1 2; do printf '3:  [2024-05-01 10:00:0%d] iteration        %d/     100 | elapsed time per iteration (ms): 100.0 | lm loss: 1.0%dE+01 | grad norm: 2.0 |\n' $i $i $((9 - i)); done; } > mlast.log
expect 0 "ingest a Megatron log whose loss is the last rank's" -- "$H" ingest mlast.log --device x --db g.db
[ "$(series g.db 2)" = "1:10.8 2:10.7" ] && pass || fail "the last rank's series: $(series g.db 2); $(cat out)"
[ "$(extra g.db 2 series_rank | cut -d' ' -f1)" = 3 ] && pass || fail "series_rank: $(extra g.db 2 series_rank)"
{ printf '1: iteration 1/ 10 | lm loss: 1.0E+01 |\n'; printf '2: iteration 1/ 10 | lm loss: 2.0E+01 |\n'; } > mtwo.log
expect 1 "two ranks with a loss, none of rank 0: no series is guessed" -- "$H" ingest mtwo.log --device x --db g.db
grep -q "no step of rank 0 with a loss" out && pass || fail "two lossy ranks: $(cat out)"

echo "rank files past 10 in the order of their numbers; a compressed log is exit 2"
for i in $(seq 0 11); do printf 'HARNESS_STEP {"v":1,"step":1,"loss":%d}\n' "$i" > "rank$i.log"; done
expect 0 "ingest rank*.log of 12 files" -- "$H" ingest rank*.log --device x --db k.db
[ "$(q k.db "select group_concat(rank || ':' || loss, ' ') from (select * from rank_steps order by rank)")" = "0:0.0 1:1.0 2:2.0 3:3.0 4:4.0 5:5.0 6:6.0 7:7.0 8:8.0 9:9.0 10:10.0 11:11.0" ] \
  && pass || fail "ranks of rank*.log: $(q k.db "select group_concat(rank || ':' || loss, ' ') from (select * from rank_steps order by rank)")"
expect 0 "ingest of files in the order given when they are no numbered family" -- "$H" ingest rank1.log plain.jsonl --device x --db k2.db
[ "$(q k2.db "select loss from rank_steps where rank = 0")" = 1.0 ] && pass || fail "the order given was changed"
gzip -c range.log > range.log.gz
expect 2 "ingest a gzip'd log" -- "$H" ingest range.log.gz --device x --db z.db
says "range.log.gz: binary file (gzip?): not a text log"
[ ! -e z.db ] && pass || fail "a store was created for a gzip'd log"
# a harness store (its raw logs inside would parse) and a program are refused by what they are
expect 2 "ingest a harness store" -- "$H" ingest k.db --device x --db z.db; says "an SQLite database, a harness store"
expect 2 "ingest a program" -- "$H" ingest "$H" --device x --db z.db; says "an ELF program"
[ ! -e z.db ] && pass || fail "a store was created for a binary file"
head -c 4000 /dev/urandom > noise.bin
expect 1 "ingest binary noise" -- "$H" ingest noise.bin --device x --db z.db
# the message is text: the noise's bytes that are no UTF-8 are '?', not printed raw
grep -q "binary data (NUL bytes)" out && iconv -f UTF-8 -t UTF-8 out >/dev/null 2>&1 \
  && pass || fail "the failure of binary noise: $(head -c 300 out)"
echo "Megatron's '{:E}' losses NAN and INF are divergence (they were dropped: an 'ok' run)"
mg() { printf ' iteration %8d/     100 | elapsed time per iteration (ms): 1200.0 | learning rate: 3.000000E-04 | lm loss: %s | grad norm: %s |' "$1" "$2" "$3"; }
{ mg 1 1.234567E+01 5.4; echo; mg 2 NAN nan; echo; mg 3 INF inf; echo; } >mnan.log
expect 1 "Megatron NAN/INF" -- "$H" ingest mnan.log --device x --db mnan.db
[ "$(q mnan.db 'select status || count(*) from runs join steps on steps.run_id = runs.id')" = diverged3 ] && pass || fail "Megatron NAN/INF: $(q mnan.db 'select status from runs') $(series mnan.db 1)"

echo "a last line cut mid-number is skipped (1.134567E+0 was recorded as 1.134567); another rank's text inside the number too"
{ mg 1 1.234567E+01 5.4; echo; printf ' iteration        2/     100 | elapsed time per iteration (ms): 1200.1 | learning rate: 3.000000E-04 | lm loss: 1.134567E+0'; } >mcut.log
expect 0 "a cut last line" -- "$H" ingest mcut.log --device x --db mcut.db; says "the last line has no newline and ends in a number that may be cut"
[ "$(series mcut.db 1)" = "1:12.34567" ] && pass || fail "a cut last line: $(series mcut.db 1)"
{ mg 1 1.234567E+01 5.4; echo; printf ' iteration        2/     100 | elapsed time per iteration (ms): 1200.1 | learning rate: 3.000000E-04 | lm loss: 1.13[W reducer.cpp:1545] Warning\n4567E+01 | grad norm: 5.4 |\n'; } >mmix.log
expect 0 "another rank's text in the loss" -- "$H" ingest mmix.log --device x --db mmix.db
[ "$(series mmix.db 1)" = "1:12.34567" ] && pass || fail "another rank's text in the loss: $(series mmix.db 1)"
mg 1 1.234567E+01 5.4 >mwhole.log # a whole line without its newline is read
expect 0 "a whole last line without a newline" -- "$H" ingest mwhole.log --device x --db mwhole.db
[ "$(series mwhole.db 1)" = "1:12.34567" ] && pass || fail "a whole last line: $(series mwhole.db 1)"
# whole last lines of the other formats, and one ending in a colour reset, are read (the first
# version of the rule kept only '}' and '|' endings); text that is no log line is not warned about
printf 'epoch[0/1], step[0/2]: train_loss: 2.5, train_tokens_throughput: 100.0 tokens/s\nepoch[0/1], step[1/2]: train_loss: 2.4, train_tokens_throughput: 100.0 tokens/s' >seedn.log
expect 0 "a seed log without a final newline" -- "$H" ingest seedn.log --device x --db seedn.db
[ "$(q seedn.db 'select count(*) from steps')" = 2 ] && pass || fail "a seed log's whole last line: $(series seedn.db 1)"
printf 'HARNESS_STEP {"v":1,"step":1,"loss":2.5}\nHARNESS_STEP {"v":1,"step":2,"loss":2.4}\033[0m' >ansin.log
expect 0 "a last line ending in a colour reset" -- "$H" ingest ansin.log --device x --db ansin.db
[ "$(q ansin.db 'select count(*) from steps')" = 2 ] && pass || fail "a last line ending in a colour reset: $(series ansin.db 1)"
printf 'HARNESS_STEP {"v":1,"step":1,"loss":2.5}\nTraining done, 100' >done.log
expect 0 "a last line that is no log line" -- "$H" ingest done.log --device x --db done.db
[ ! -s "$T/err" ] && pass || fail "a last line that is no log line was warned about: $(cat "$T/err")"
{ mg 1 1.234567E+01 5.4; echo; printf ' iteration        2/     100 | elapsed time per iteration (ms): 1200.1 | learning rate: 3.000000E-04 | lm loss: 2.4000 > building GPT2BPETokenizer tokenizer ...\n'; } >mnext.log
expect 0 "a Megatron loss cut by the next job's text" -- "$H" ingest mnext.log --device x --db mnext.db
[ "$(series mnext.db 1)" = "1:12.34567" ] && pass || fail "a Megatron loss cut by the next job's text: $(series mnext.db 1)"

echo "a step logged again right after itself keeps its latest values alone (the replay merged the old line's)"
cat >replay.log <<'L'
HARNESS_STEP {"v":1,"step":1,"loss":2.5,"grad_norm":1.0}
HARNESS_STEP {"v":1,"step":2,"loss":2.4,"grad_norm":1.1,"lr":0.001}
HARNESS_STEP {"v":1,"step":2,"loss":2.45}
L
expect 0 "a replayed step" -- "$H" ingest replay.log --device x --db replay.db
[ "$(q replay.db 'select loss || "," || ifnull(grad_norm, "null") || "," || ifnull(lr, "null") from steps where step = 2')" = "2.45,null,null" ] && pass || fail "a replayed step: $(q replay.db 'select * from steps where step = 2')"
# two lines of one step with the same loss merge (MLPerf's tracked_stats, then train_loss)
cat >mlm.log <<'L'
:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "tracked_stats", "value": {"loss": 2.5, "throughput": 99.5}, "metadata": {"step": 1}}
:::MLLOG {"namespace": "", "time_ms": 2, "event_type": "POINT_IN_TIME", "key": "train_loss", "value": 2.5, "metadata": {"step": 1}}
L
expect 0 "MLPerf's two lines of a step" -- "$H" ingest mlm.log --device x --db mlm.db
[ "$(q mlm.db 'select tokens_per_s from steps where step = 1')" = 99.5 ] && pass || fail "MLPerf's throughput lost: $(q mlm.db 'select * from steps')"

echo "an Inf grad norm diverges a run that does not scale its loss (exec said ok); an fp16 step GradScaler skipped is recorded, not diverged"
printf 'HARNESS_STEP {"v":1,"step":1,"loss":2.5,"grad_norm":1.0}\nHARNESS_STEP {"v":1,"step":2,"loss":2.4,"grad_norm":Infinity}\n' >ginf.log
expect 1 "an Inf grad norm, an fp32 scenario" -- "$H" ingest ginf.log --device x --scenario "$tiny" --db ginf.db
[ "$(q ginf.db 'select status from runs')" = diverged ] && pass || fail "an Inf grad norm: $(q ginf.db 'select status, error from runs')"
expect 0 "an Inf grad norm, no scenario (a Trainer fp16 log would say nothing of skipped steps)" -- "$H" ingest ginf.log --device x --db ginf0.db
printf 'HARNESS_STEP {"v":1,"step":1,"loss":2.5,"grad_norm":1.0,"loss_scale":65536,"skipped":false}\nHARNESS_STEP {"v":1,"step":2,"loss":2.4,"grad_norm":Infinity,"loss_scale":65536,"skipped":true}\n' >gskip.log
expect 0 "a skipped fp16 step" -- "$H" ingest gskip.log --device x --scenario "$SRC/scenarios/gpt2-tiny-fp16.json" --db gskip.db
[ "$(q gskip.db 'select group_concat(step || ":" || loss_scale || ":" || skipped, " ") from steps')" = "1:65536.0:0 2:65536.0:1" ] && pass || fail "loss_scale and skipped: $(q gskip.db 'select step, loss_scale, skipped from steps')"
# a skipped flag not given validly ("yes", null, missing) is no "no": the loss scale is left out
# with it, and the fp16 scenario decides (the run was judged diverged, skipped shown 'no')
for v in '"yes"' null 2 0.5; do
  printf 'HARNESS_STEP {"v":1,"step":1,"loss":2.5,"grad_norm":Infinity,"loss_scale":65536,"skipped":%s}\n' "$v" >gbad.log
  rm -f gbad.db
  expect 0 "skipped $v" -- "$H" ingest gbad.log --device x --scenario "$SRC/scenarios/gpt2-tiny-fp16.json" --db gbad.db
  [ "$(q gbad.db 'select ifnull(loss_scale, "null") || ifnull(skipped, "null") from steps')" = nullnull ] && pass || fail "skipped $v stored: $(q gbad.db 'select loss_scale, skipped from steps')"
done
# the reason names the grad norm when it is the grad norm that diverged
printf 'HARNESS_STEP {"v":1,"step":1,"loss":2.5,"grad_norm":Infinity,"loss_scale":65536,"skipped":false}\n' >gns.log
expect 1 "an Inf grad norm of a step not skipped" -- "$H" ingest gns.log --device x --scenario "$SRC/scenarios/gpt2-tiny-fp16.json" --db gns.db
grep -qF "NaN/Inf grad norm at step 1" "$T/out" && pass || fail "the reason: $(cat "$T/out")"
# two ranks' lines glued at the log's end, the second cut: the first one's step is kept
printf 'HARNESS_STEP {"v":1,"step":1,"loss":2.5,"rank":0}\nHARNESS_STEP {"v":1,"step":2,"loss":2.4,"rank":0}HARNESS_STEP {"v":1,"step":2,"loss":2.4' >glued.log
expect 0 "two ranks glued at the end, the second cut" -- "$H" ingest glued.log --device x --db glued.db
[ "$(q glued.db 'select count(*) from steps')" = 2 ] && pass || fail "the glued whole step was lost: $(series glued.db 1)"

echo "HARNESS_META of a rank other than 0 is not the run's (rank 1's could come first)"
cat >meta.log <<'L'
HARNESS_META {"v":1,"rank":1,"device_name":"GPU of rank 1"}
HARNESS_META {"v":1,"rank":0,"device_name":"GPU of rank 0"}
HARNESS_STEP {"v":1,"step":1,"loss":2.5}
L
expect 0 "META of two ranks" -- "$H" ingest meta.log --device x --db meta.db
[ "$(q meta.db 'select device_name from runs')" = "GPU of rank 0" ] && pass || fail "META of two ranks: $(q meta.db 'select device_name from runs')"
printf '[rank1]:HARNESS_META {"v":1,"device_name":"GPU of rank 1"}\n[rank0]:HARNESS_META {"v":1,"device_name":"GPU of rank 0"}\n[rank0]:HARNESS_STEP {"v":1,"step":1,"loss":2.5}\n' >metatag.log
expect 0 "META told by its rank tag" -- "$H" ingest metatag.log --device x --db metatag.db
[ "$(q metatag.db 'select device_name from runs')" = "GPU of rank 0" ] && pass || fail "META by tag: $(q metatag.db 'select device_name from runs')"
# a rank's tag glued after another rank's line goes with its own line (it stayed with the one
# before: rank 1's META named the device, rank 1's loss replaced rank 0's step)
printf '[rank0]:HARNESS_STEP {"v":1,"step":1,"loss":2.5}[rank1]:HARNESS_META {"v":1,"device_name":"GPU of rank 1"}\n[rank0]:HARNESS_META {"v":1,"device_name":"GPU of rank 0"}\n[rank0]:HARNESS_STEP {"v":1,"step":2,"loss":2.4}[rank1]:HARNESS_STEP {"v":1,"step":2,"loss":2.9}\n' >glued2.log
expect 0 "tagged lines glued" -- "$H" ingest glued2.log --device x --db glued2.db
[ "$(q glued2.db 'select device_name || "," || world_size from runs')" = "GPU of rank 0,2" ] && pass || fail "tagged lines glued: $(q glued2.db 'select device_name, world_size from runs')"
[ "$(series glued2.db 1)" = "1:2.5 2:2.4" ] && pass || fail "rank 1's loss in rank 0's step: $(series glued2.db 1)"

finish
