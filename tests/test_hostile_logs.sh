#!/usr/bin/env bash
# tests/test_hostile_logs.sh: hostile and unusual-but-legal input to exec, ingest, preprocess and
# comm-check (an adversarial hunt's findings): each case exits as documented and writes nothing on error.
# usage: test_hostile_logs.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 2
q() { sqlite3 "$1" "$2"; }
STEP='HARNESS_STEP {"v":1,"step":%d,"loss":%s}\n'

echo "ingest: a UTF-8 byte order mark does not hide the first line"
printf '\xef\xbb\xbf{"step":1,"loss":2.0}\r\n{"step":2,"loss":2.1}\r\n' > bom.jsonl
expect 0 "ingest a jsonl with a BOM" -- "$H" ingest bom.jsonl --device a100 --db x.db
[ "$(q x.db 'select group_concat(step || ":" || loss, " ") from (select * from steps where run_id = 1 order by step)')" = "1:2.0 2:2.1" ] \
  && pass || fail "both steps of the BOM file: $(q x.db 'select step, loss from steps where run_id = 1')"

echo "ingest: a UTF-16 log (Windows PowerShell's >) is read as its text, little- and big-endian"
printf '{"step":1,"loss":2.0}\r\n{"step":2,"loss":2.1,"note":"\xc3\xa9\xf0\x9f\x98\x80"}\r\n' > u8.jsonl
iconv -f UTF-8 -t UTF-16 u8.jsonl > le.jsonl          # glibc writes FF FE, then little-endian
{ printf '\xfe\xff'; iconv -f UTF-8 -t UTF-16BE u8.jsonl; } > be.jsonl
for e in le be; do
  rm -f x.db
  expect 0 "ingest a UTF-16 ($e) jsonl" -- "$H" ingest $e.jsonl --device a100 --db x.db
  [ "$(q x.db 'select group_concat(step || ":" || loss, " ") from (select * from steps where run_id = 1 order by step)')" = "1:2.0 2:2.1" ] \
    && pass || fail "both steps of the UTF-16 ($e) file: $(q x.db 'select step, loss from steps where run_id = 1')"
  q x.db 'select data from run_logs where run_id = 1 order by seq' | grep -qF "$(printf '\xc3\xa9\xf0\x9f\x98\x80')" \
    && pass || fail "the UTF-16 ($e) log's text kept as UTF-8"
done
# a surrogate pair cut by the 1 MiB read, an unpaired surrogate and an odd last byte: the pair
# whole, U+FFFD for the rest, the steps after them read
{ printf '{"step":1,"loss":2.0}\n'; head -c 524264 /dev/zero | tr '\0' 'x'; printf '\xf0\x9f\x98\x80\n{"step":2,"loss":2.1}\n'; } > long.txt
{ iconv -f UTF-8 -t UTF-16 long.txt; printf '\x00\xd8{\x00'; printf '\x0a'; } > cut.jsonl
rm -f x.db
expect 0 "ingest a UTF-16 log with a pair cut at 1 MiB and an unpaired surrogate" -- "$H" ingest cut.jsonl --device a100 --db x.db
[ "$(q x.db 'select group_concat(step || ":" || loss, " ") from (select * from steps where run_id = 1 order by step)')" = "1:2.0 2:2.1" ] \
  && pass || fail "the steps around the cut pair: $(q x.db 'select step, loss from steps where run_id = 1')"
q x.db "select group_concat(data, '') from (select data from run_logs where run_id = 1 order by seq)" | grep -qF "x$(printf '\xf0\x9f\x98\x80')" \
  && pass || fail "the surrogate pair cut by the read is not whole"
q x.db 'select data from run_logs where run_id = 1 order by seq' | grep -qF "$(printf '\xef\xbf\xbd{')" \
  && pass || fail "the unpaired surrogate is not U+FFFD"

echo "ingest: a step logged twice (a resumed run) is one step; the final loss is the last step's"
printf "$STEP$STEP$STEP$STEP" 1 3.0 2 2.0 1 2.9 2 1.5 > dup.log
expect 0 "ingest duplicated steps" -- "$H" ingest dup.log --device a100 --db x.db
grep -q "2 steps, final loss 1.500000" out && pass || fail "summary of duplicated steps: $(cat out)"
printf "$STEP$STEP$STEP" 3 1.0 2 2.0 1 3.0 > back.log
expect 0 "ingest steps in falling order" -- "$H" ingest back.log --device a100 --db x.db
grep -q "3 steps, final loss 1.000000" out && pass || fail "summary of falling steps: $(cat out)"

echo "ingest: a workload that names a new metadata key per line is capped, not stored forever"
for i in $(seq 1 300); do printf 'HARNESS_META {"v":1,"k%d":%d}\n' "$i" "$i"; done > meta.log
printf "$STEP" 1 2.0 >> meta.log
expect 0 "ingest 300 metadata keys" -- "$H" ingest meta.log --device a100 --db x.db
says "more than 128 metadata keys"
id=$(q x.db 'select max(id) from runs')
[ "$(q x.db "select count(*) from run_extra where run_id = $id and key like 'k%'")" = 128 ] \
  && pass || fail "metadata keys kept: $(q x.db "select count(*) from run_extra where run_id = $id")"
[ "$(q x.db "select value from run_extra where run_id = $id and key = 'log_format'")" = harness ] \
  && pass || fail "the recorder's own keys still kept after the cap"

echo "ingest: ranks up to 1023 are kept; a higher one is warned about, never taken as rank 0"
printf "[rank0]:$STEP[rank200]:$STEP[rank5000]:$STEP[rank0]:$STEP" 1 2.0 1 7.0 1 9.0 2 1.0 > ranks.log
expect 0 "ingest 5000 ranks" -- "$H" ingest ranks.log --device a100 --db x.db
says "rank 5000"
id=$(q x.db 'select max(id) from runs')
[ "$(q x.db "select group_concat(loss, ' ') from (select * from steps where run_id = $id order by step)")" = "2.0 1.0" ] \
  && pass || fail "rank 0's series: $(q x.db "select step, loss from steps where run_id = $id")"
[ "$(q x.db "select count(*) from rank_steps where run_id = $id and rank = 200")" = 1 ] \
  && pass || fail "rank 200's step kept"
[ "$(q x.db "select world_size from runs where id = $id")" = 201 ] \
  && pass || fail "world size from the ranks seen: $(q x.db "select world_size from runs where id = $id")"

echo "ingest: a log whose path is longer than 255 bytes is stored under its whole path"
deep="$T/$(printf 'd%.0s' $(seq 60))/$(printf 'e%.0s' $(seq 60))/$(printf 'f%.0s' $(seq 60))/$(printf 'g%.0s' $(seq 60))"
mkdir -p "$deep" && printf "$STEP" 1 2.0 > "$deep/rank0.log" && cp "$deep/rank0.log" "$deep/rank0.log.copy"
expect 0 "ingest two logs under a long path" -- "$H" ingest "$deep/rank0.log" "$deep/rank0.log.copy" --device a100 --db x.db
id=$(q x.db 'select max(id) from runs')
[ "$(q x.db "select count(distinct source) from run_logs where run_id = $id")" = 2 ] \
  && [ "$(q x.db "select count(*) from run_logs where run_id = $id and source = '$deep/rank0.log'")" = 1 ] \
  && pass || fail "the logs' sources: $(q x.db "select source from run_logs where run_id = $id")"

echo "ingest: a log over 1 GiB is read a piece at a time; the raw log kept stops at 256 MiB, noted"
truncate -s 1100M huge.log && printf '\nHARNESS_STEP {"v":1,"step":1,"loss":2.0}\n' >> huge.log
expect 0 "ingest a 1.1 GB log" -- "$H" ingest huge.log --device a100 --db huge.db
grep -q "1 steps, final loss 2.000000" out && pass || fail "the step after 1.1 GB: $(cat out)"
[ -n "$(q huge.db "select value from run_extra where key = 'log_truncated'")" ] && pass \
  || fail "log_truncated not noted"
[ "$(q huge.db "select sum(length(data)) from run_logs")" = $((256 << 20)) ] && pass \
  || fail "raw log bytes kept: $(q huge.db "select sum(length(data)) from run_logs")"
rm -f huge.log huge.db*

echo "ingest: steps of rank 1 only are said to be so, not 'no training step recognised'"
printf "[rank1]:$STEP[rank1]:$STEP" 1 5.0 2 5.1 > only1.log
expect 1 "ingest rank 1's steps only" -- "$H" ingest only1.log --device a100 --db x.db
grep -q "no step of rank 0 with a loss in 2 lines of output (2 harness step lines" out && pass \
  || fail "the message: $(cat out)"

echo "ingest: untagged rank files (file k is rank k) each keep their own parser state"
# rank_of DB RUN RANK: "step:loss ..." of one rank in rank_steps
rank_of() { q "$1" "select group_concat(step || ':' || loss, ' ') from (select * from rank_steps where run_id = $2 and rank = $3 order by step)"; }
for f in t0 t1; do
  for i in 1 2 3; do echo "{'loss': 0.$i, 'grad_norm': 1.0, 'learning_rate': 5e-05, 'epoch': 0.1}"; done > $f.log
done
expect 0 "ingest two untagged Trainer rank files" -- "$H" ingest t0.log t1.log --device x --db fr.db
[ "$(rank_of fr.db 1 1)" = "1:0.1 2:0.2 3:0.3" ] && pass || fail "rank 1's Trainer steps: $(rank_of fr.db 1 1)"
[ "$(rank_of fr.db 1 0)" = "1:0.1 2:0.2 3:0.3" ] && pass || fail "rank 0's Trainer steps: $(rank_of fr.db 1 0)"
# the seed demo's running means: rank 1's own (8, then 6 over 2 steps: 8 and 4)
printf 'epoch[0/9], step[0/100]: train_loss: %s, train_tokens_throughput: 1 tokens/s\nepoch[0/9], step[1/100]: train_loss: %s, train_tokens_throughput: 1 tokens/s\n' 4.0 3.0 > s0.log
printf 'epoch[0/9], step[0/100]: train_loss: %s, train_tokens_throughput: 1 tokens/s\nepoch[0/9], step[1/100]: train_loss: %s, train_tokens_throughput: 1 tokens/s\n' 8.0 6.0 > s1.log
expect 0 "ingest two untagged seed rank files" -- "$H" ingest s0.log s1.log --device x --db fr.db
[ "$(rank_of fr.db 2 1)" = "1:8.0 2:4.0" ] && pass || fail "rank 1's seed steps: $(rank_of fr.db 2 1)"
[ "$(rank_of fr.db 2 0)" = "1:4.0 2:2.0" ] && pass || fail "rank 0's seed steps: $(rank_of fr.db 2 0)"
printf ':::MLLOG {"key": "train_loss", "value": %s, "metadata": {}}\n' 5.5 5.0 > m0.log; cp m0.log m1.log
expect 0 "ingest two untagged mllog rank files" -- "$H" ingest m0.log m1.log --device x --db fr.db
[ "$(rank_of fr.db 3 1)" = "1:5.5 2:5.0" ] && pass || fail "rank 1's mllog steps: $(rank_of fr.db 3 1)"

echo "ingest: --keys naming the step wins over a Trainer look-alike JSON line with loss first"
printf '{"loss": 2.3, "iter": 10}\n{"loss": 2.2, "iter": 20}\n' > kl.log
expect 0 "ingest loss-first JSON lines with --keys" -- "$H" ingest kl.log --keys step=iter,loss=loss --device x --db kl.db
[ "$(q kl.db 'select group_concat(step || ":" || loss, " ") from (select * from steps order by step)')" = "10:2.3 20:2.2" ] \
  && pass || fail "the --keys steps: $(q kl.db 'select step, loss from steps')"

echo "ingest: Hugging Face Trainer + DeepSpeed: the engine's loss-less lines give way to the Trainer dicts"
ds() { printf '[2024-05-01 10:00:0%d,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=%d, skipped=0, lr=[5e-05], mom=[(0.9, 0.999)]\n' "$1" "$1"; }
{ ds 1; echo "{'loss': 2.3, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.1}"
  ds 2; echo "{'loss': 2.2, 'grad_norm': 1.1, 'learning_rate': 5e-05, 'epoch': 0.2}"; } > hfds.log
expect 0 "ingest a Trainer + DeepSpeed log" -- "$H" ingest hfds.log --device x --db ds.db
grep -q "ok, 2 steps, final loss 2.200000 (format trainer)" out && pass || fail "Trainer + DeepSpeed: $(cat out)"
[ "$(q ds.db 'select group_concat(step || ":" || loss || ":" || grad_norm, " ") from (select * from steps order by step)')" = "1:2.3:1.2 2:2.2:1.1" ] \
  && pass || fail "the Trainer steps: $(q ds.db 'select step, loss, grad_norm from steps')"

echo "ingest: DeepSpeed's [Rank 0] line and Megatron's untagged loss line are one row of rank 0 in rank_steps"
{ ds 1; echo ' iteration        1/     100 | consumed samples: 8 | lm loss: 7.1E+00 | grad norm: 2.3 |'
  ds 2; echo ' iteration        2/     100 | consumed samples: 16 | lm loss: 6.9E+00 | grad norm: 2.1 |'; } > mgds.log
expect 0 "ingest a Megatron-DeepSpeed log" -- "$H" ingest mgds.log --device x --db mg.db
[ "$(rank_of mg.db 1 0)" = "1:7.1 2:6.9" ] && pass || fail "rank 0's rank_steps: $(rank_of mg.db 1 0)"
[ "$(q mg.db 'select group_concat(step || ":" || loss, " ") from (select * from steps order by step)')" = "1:7.1 2:6.9" ] \
  && pass || fail "the steps: $(q mg.db 'select step, loss from steps')"

echo "ingest: 65 logs is exit 2 naming the limit of 64"
for i in $(seq 0 64); do printf "$STEP" 1 2.0 > "r$i.log"; done
expect 2 "ingest 65 logs" -- "$H" ingest $(for i in $(seq 0 64); do echo "r$i.log"; done) --device a100 --db many.db
says "more than 64 log files"
[ ! -e many.db ] && pass || fail "the store was created"
expect 0 "ingest 64 logs" -- "$H" ingest $(for i in $(seq 0 63); do echo "r$i.log"; done) --device a100 --db many.db

echo "exec: a script whose interpreter is missing is exit 2 and leaves no store behind"
printf '#!/nonexistent/interpreter\necho hi\n' > noint.sh && chmod 755 noint.sh
expect 2 "exec a script without its interpreter" -- "$H" exec --db e.db -- ./noint.sh
says "cannot run './noint.sh': its #! interpreter '/nonexistent/interpreter' is not there"
[ ! -e e.db ] && [ ! -e e.db-wal ] && [ ! -e e.db-shm ] && pass || fail "the refused exec created the store: $(ls e.db*)"
expect 1 "exec true (no step)" -- "$H" exec --db e.db -- true
sum=$(sha256sum e.db)
expect 2 "exec a script without its interpreter into a store" -- "$H" exec --db e.db -- ./noint.sh
[ -e e.db ] && [ "$(sha256sum e.db)" = "$sum" ] && pass || fail "an existing store was changed or removed"

echo "exec: a process CMD leaves behind that keeps printing does not hold the harness"
start=$SECONDS
expect 0 "exec leaving a chatty background process" -- timeout $((20 * SLOW)) "$H" exec --db e.db -- \
  sh -c 'printf "HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5}\n"; (while :; do echo tick; sleep 0.2; done) & exit 0'
says "1 steps"
echo "exec: a line a background process prints soon after CMD ended is still read"
expect 0 "exec with a late line" -- "$H" exec --db e.db -- \
  sh -c '(sleep 0.3; printf "HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5}\n") & exit 0'
says "1 steps"

echo "exec/ingest --compare: a missing baseline FILE or --baselines folder is exit 2 before anything runs"
S="$SRC/scenarios/gpt2-tiny.json"
expect 2 "exec --baseline missing file" -- "$H" exec --db p.db --compare --scenario "$S" --baseline nope/x.baseline -- touch ran
says "nope/x.baseline: cannot read the baseline: No such file or directory"
expect 2 "exec --baselines missing folder" -- "$H" exec --db p.db --compare --scenario "$S" --baselines nope -- touch ran
says "--baselines nope: No such file or directory"
expect 2 "ingest --baselines a file" -- "$H" ingest dup.log --device a100 --db p.db --compare --scenario "$S" --baselines dup.log
says "--baselines dup.log: not a folder"
[ ! -e ran ] && [ ! -e p.db ] && pass || fail "the command ran or the store was created: $(ls ran p.db 2>&1)"

echo "preprocess: CRLF line ends of a .txt input are not part of its documents"
printf 'hello\r\nworld\r\n' > crlf.txt
printf 'hello\nworld\n' > lf.txt
expect 0 "preprocess CRLF text" -- "$H" preprocess --input crlf.txt --output-prefix crlf --tokenizer byte
expect 0 "preprocess LF text" -- "$H" preprocess --input lf.txt --output-prefix lf --tokenizer byte
cmp -s crlf_text_document.bin lf_text_document.bin && cmp -s crlf_text_document.idx lf_text_document.idx \
  && pass || fail "CRLF and LF inputs give different datasets: $(od -An -tu2 crlf_text_document.bin)"

echo "preprocess: a folder where the .idx goes is exit 2 before anything is replaced"
cp lf_text_document.bin old_text_document.bin
mkdir old_text_document.idx
expect 2 "preprocess onto a folder" -- "$H" preprocess --input crlf.txt --output-prefix old --tokenizer byte
says "old_text_document.idx: exists and is not a regular file"
cmp -s old_text_document.bin lf_text_document.bin && pass || fail "the old .bin was replaced"
[ -z "$(ls old_* | grep tmp)" ] && pass || fail "a .tmp file was left: $(ls old_*)"

echo "preprocess: a symlink planted at the .tmp name is replaced, never written through"
ln -s "$T/victim" lnk_text_document.bin.tmp
expect 0 "preprocess past a planted .tmp link" -- "$H" preprocess --input lf.txt --output-prefix lnk --tokenizer byte
[ ! -e victim ] && pass || fail "the link's target was written"
cmp -s lnk_text_document.bin lf_text_document.bin && pass || fail "the dataset behind a planted link"

echo "preprocess: byte:PATH is refused (the byte tokenizer reads no file; the path was ignored)"
expect 2 "preprocess --tokenizer byte:PATH" -- "$H" preprocess --input lf.txt --output-prefix bp --tokenizer byte:vocab.json
says "the byte tokenizer takes no path"
[ ! -e bp_text_document.bin ] && pass || fail "a dataset was written"

echo "fetch: --include longer than its 1 KiB buffer is exit 2, not cut silently"
expect 2 "fetch with 2000 bytes of --include" -- "$H" fetch org/name --endpoint http://127.0.0.1:9 \
  --cache "$T/hub" --include "$(printf 'a%.0s' $(seq 2000))"
says "--include: more than 1023 bytes of globs"
[ ! -e "$T/hub" ] && pass || fail "the cache was created"

echo "comm-check: a store or device that cannot be used is exit 2 before any collective"
mkdir adir
expect 2 "comm-check into a folder" -- "$H" comm-check --sizes 8B:8B --db adir
says "adir: not a regular file"
grep -q allreduce out && fail "collectives ran before the store was checked" || pass
expect 2 "comm-check into a missing folder" -- "$H" comm-check --sizes 8B:8B --db "$T/no/such/dir/x.db"
expect 2 "comm-check of an unknown device" -- "$H" comm-check --sizes 8B:8B --db cc.db --device nope
says "--device nope: unknown device"
[ ! -e cc.db ] && pass || fail "a refused comm-check created the store"
expect 0 "comm-check on cpu" -- "$H" comm-check --sizes 8B:8B --op allreduce --db cc.db
[ "$(q cc.db 'select count(*) from comm_checks')" = 1 ] && pass || fail "the cpu row stored"

echo "exec/ingest: two ranks' HARNESS lines run together on one line are both recorded"
# (print() writes text and newline apart when Python is unbuffered; torchrun's ranks share a pipe)
{
  for i in 1 2 3; do
    printf 'HARNESS_STEP {"v":1,"step":%d,"loss":2.%d,"rank":0}HARNESS_STEP {"v":1,"step":%d,"loss":3.%d,"rank":1}\n' $i $i $i $i
  done
} >merged.log
expect 0 "ingest a log of merged rank lines" -- "$H" ingest merged.log --device a --db merged.db
[ "$(q merged.db 'select count(*) from steps')" = 3 ] && pass || fail "rank 0's steps of merged lines"
[ "$(q merged.db 'select group_concat(rank || ":" || step || ":" || loss, " ") from (select * from rank_steps order by rank, step)')" = "0:1:2.1 0:2:2.2 0:3:2.3 1:1:3.1 1:2:3.2 1:3:3.3" ] && pass || { fail "rank_steps of merged lines"; q merged.db 'select rank, step, loss from rank_steps'; }

# ---- DeepSpeed's MaxMemAllocated out of range is said and counted like every other field (it
# was filtered before the range check: left out without a word)
printf '[Rank 0] step=1, skipped=0, lr=[5e-05]\n[timer] epoch=0/micro_step=1/global_step=1, MaxMemAllocated=1e30GB\n iteration 1/ 100 | lm loss: 2.5 | grad norm: 1.0 |\n' >dsmem.log
expect 0 "ingest a DeepSpeed MaxMemAllocated of 1e30 GB" -- "$H" ingest dsmem.log --device a --db dsmem.db
grep -qF "dsmem.log:2: mem_peak_bytes" "$T/err" && pass || fail "MaxMemAllocated out of range not said: $(cat "$T/err")"
[ "$(q dsmem.db "select value from run_extra where key = 'fields_out_of_range'")" = 1 ] && pass || fail "MaxMemAllocated out of range not counted"

finish
