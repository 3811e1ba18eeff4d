#!/usr/bin/env bash
# tests/test_hostile_run.sh: `harness run` and `init` given hostile inputs (data, tokenizer, weights,
# device, overflowing sizes, empty paths, a signal during setup): exit 2 and a message naming the
# file and field, the store byte-for-byte as it was and no store created where there was none.
# usage: test_hostile_run.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"

tiny="$SRC/scenarios/gpt2-tiny.json"
corpus="$SRC/scenarios/data/corpus.txt"
bpe_json="$SRC/tests/data/hf/bpe512/tokenizer.json"
db="$T/store.db"      # holds one run; every hostile run must leave it as it was
fresh="$T/fresh.db"   # never exists; no hostile run may create it
# scenario NAME MODEL DATA [TRAIN]: a scenario file $T/NAME.json (MODEL and DATA are JSON members)
scenario() {
  cat >"$T/$1.json" <<EOF
{"name": "$1", "model": {"family": "gpt2", $2},
 "data": {$3},
 "train": {"steps": 2, "batch_size": ${4:-8}, "lr": 3e-3, "seed": 123}}
EOF
}
cfg() { # cfg [KEY=VALUE...]: an inline GPT-2 config, gpt2-tiny's sizes unless given; other
        # members as "KEY": VALUE
  local v=256 p=128 e=64 l=2 h=4 extra="" kv
  for kv in "$@"; do
    case "$kv" in
      vocab_size=*) v=${kv#*=} ;; n_positions=*) p=${kv#*=} ;; n_embd=*) e=${kv#*=} ;;
      n_layer=*) l=${kv#*=} ;; n_head=*) h=${kv#*=} ;; *) extra="$extra, \"${kv%%=*}\": ${kv#*=}" ;;
    esac
  done
  echo "\"config\": {\"vocab_size\": $v, \"n_positions\": $p, \"n_embd\": $e, \"n_layer\": $l,
       \"n_head\": $h, \"attn_pdrop\": 0, \"embd_pdrop\": 0, \"resid_pdrop\": 0$extra}"
}
bytes="\"path\": \"$corpus\", \"tokenizer\": \"byte\", \"seq_len\": 64"

# hostile WHAT TEXT -- ARGS...: `harness ARGS --db` into the store and into no store: exit 2,
# stderr says TEXT, the store unchanged, the fresh one not created
hostile() {
  local what="$1" text="$2"; shift 3
  local before; before=$(sha256sum "$db")
  expect 2 "$what" -- "$H" "$@" --db "$db"; says "$text"
  [ -z "${SHOW_ERR:-}" ] || sed 's/^/  | /' "$T/err"
  [ "$(sha256sum "$db")" = "$before" ] && pass || fail "$what: the store changed"
  expect 2 "$what (no store yet)" -- "$H" "$@" --db "$fresh"; says "$text"
  [ -e "$fresh" ] && { fail "$what: created the store $fresh"; rm -f "$fresh"; } || pass
}

echo "# a store with one run, and a model directory"
expect 0 "first run" -- "$H" run "$tiny" --steps 1 --db "$db"
expect 0 "init a model directory" -- "$H" init "$tiny" "$T/m"

echo "# numbers given with a leading space or in hexadecimal are refused (strtol/strtod took them)"
hostile "--steps with a leading space" "--steps: ' 2' is not a number" -- run "$tiny" --steps " 2"
hostile "--comm-timeout in hexadecimal" "--comm-timeout: '0x10'" -- run "$tiny" --comm-timeout 0x10
scenario ok "\"path\": \"$T/m\"" "$bytes"
expect 0 "the model directory trains" -- "$H" run "$T/ok.json" --steps 1 --db "$T/other.db"

echo "# scenario files"
{ printf '\357\273\277'; cat "$tiny"; } >"$T/bom.json"
hostile "a scenario with a UTF-8 BOM" "bom.json:1:1: invalid JSON: the file starts with a UTF-8 byte-order mark (BOM)" -- run "$T/bom.json"

echo "# data files"
printf 'too short' >"$T/short.txt"
scenario short "$(cfg)" "\"path\": \"$T/short.txt\", \"tokenizer\": \"byte\", \"seq_len\": 64"
hostile "data shorter than a block" "short.txt" -- run "$T/short.json"
: >"$T/empty.txt"
scenario empty "$(cfg)" "\"path\": \"$T/empty.txt\", \"tokenizer\": \"byte\", \"seq_len\": 64"
hostile "empty data file" "empty.txt" -- run "$T/empty.json"
scenario vocab "$(cfg vocab_size=300)" "\"path\": \"$corpus\", \"tokenizer\": \"bpe\", \"tokenizer_path\": \"$bpe_json\", \"seq_len\": 64"
hostile "tokenizer larger than vocab_size" "vocab_size is 300" -- run "$T/vocab.json"

echo "# Megatron binarized datasets (data.format megatron)"
mdata="$SRC/tests/data/megatron/docs_text_document"
mkdir -p "$T/mm" # the files of this part (the empty-path check below lists what else is in $T)
mm() { # mm NAME: $T/mm/NAME.idx and .bin copied from the fixture, scenario $T/NAME.json reading them
  cp "$mdata.idx" "$T/mm/$1.idx"; cp "$mdata.bin" "$T/mm/$1.bin"
  scenario "$1" "$(cfg vocab_size=512)" "\"format\": \"megatron\", \"path\": \"$T/mm/$1\", \"seq_len\": 16"
}
# patch FILE OFFSET BYTES: BYTES (printf escapes) written over FILE at OFFSET
patch() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
mm magic; patch "$T/mm/magic.idx" 0 'X'
hostile "an .idx with a bad magic" "magic.idx: offset 0: bad magic" -- run "$T/magic.json"
mm version; patch "$T/mm/version.idx" 9 '\002'
hostile "an .idx of version 2" "version 2" -- run "$T/version.json"
mm float; patch "$T/mm/float.idx" 17 '\007'
hostile "an .idx of float tokens" "dtype code 7 is a float" -- run "$T/float.json"
mm trunc; truncate -s 100 "$T/mm/trunc.idx"
hostile "a truncated .idx" "truncated index" -- run "$T/trunc.json"
mm trail; printf 'xxxxxxxx' >>"$T/mm/trail.idx"
hostile "an .idx with trailing bytes" "trailing data" -- run "$T/trail.json"
mm count; patch "$T/mm/count.idx" 25 '\377'
hostile "an .idx whose count overflows" "truncated index" -- run "$T/count.json"
mm ptr; truncate -s 100 "$T/mm/ptr.bin"
hostile "sequences outside the .bin" "lie outside the 100-byte .bin" -- run "$T/ptr.json"
mm nobin; rm "$T/mm/nobin.bin"
hostile "no .bin" "nobin.bin" -- run "$T/nobin.json"
scenario mvocab "$(cfg)" "\"format\": \"megatron\", \"path\": \"$mdata\", \"seq_len\": 16"
hostile "token ids beyond vocab_size" "$(basename "$mdata").bin holds token id 509, outside the model's vocab_size 256" -- run "$T/mvocab.json"
# with --steps the stored JSON is re-dumped; the message still names the file's own line
line=$(grep -o '[^ ]*mvocab.json:[0-9]*' "$T/err" | head -1); [ -n "$line" ] && pass || fail "no FILE:LINE in the vocab message"
hostile "token ids beyond vocab_size, --steps 1" "$line: data.path:" -- run "$T/mvocab.json" --steps 1
cp "$mdata.idx" "$T/mm/short.idx"; head -c 64 "$mdata.bin" >"$T/mm/short.bin"
scenario mshort "$(cfg vocab_size=512)" "\"format\": \"megatron\", \"path\": \"$T/mm/short\", \"seq_len\": 16"
hostile "a .bin shorter than its index" "short.idx: pointers[" -- run "$T/mshort.json"
scenario mtok "$(cfg vocab_size=512)" "\"format\": \"megatron\", \"path\": \"$mdata\", \"seq_len\": 16, \"tokenizer\": \"byte\""
hostile "a tokenizer for token ids" "data.tokenizer: is not used by the megatron format" -- run "$T/mtok.json"
scenario both "$(cfg vocab_size=512)" "\"format\": \"megatron\", \"path\": \"$mdata\", \"seq_len\": 16, \"blend\": [1, \"$mdata\"]"
hostile "path and blend" "data.blend: give data.path" -- run "$T/both.json"
scenario w0 "$(cfg vocab_size=512)" "\"format\": \"megatron\", \"seq_len\": 16, \"blend\": [{\"path\": \"$mdata\", \"weight\": 0}]"
hostile "a blend weight of 0" "the weight must be a number in (0, 1e300], got 0" -- run "$T/w0.json"
scenario whex "$(cfg vocab_size=512)" "\"format\": \"megatron\", \"seq_len\": 16, \"blend\": [\"0x10\", \"$mdata\"]"
hostile "a hexadecimal blend weight (Python's float refuses it)" "items 0 and 1: must be a weight" -- run "$T/whex.json"
scenario wbig "$(cfg vocab_size=512)" "\"format\": \"megatron\", \"seq_len\": 16, \"blend\": [1e308, \"$mdata\"]"
hostile "a blend weight of 1e308" "the weight must be a number in (0, 1e300], got 1e+308" -- run "$T/wbig.json"
scenario wspace "$(cfg vocab_size=512)" "\"format\": \"megatron\", \"seq_len\": 16, \"blend\": [\" 0.5 \", \"$mdata\", \"0.5\\n\", \"$mdata\"]"
expect 0 "blend weights with white space around them (Python's float reads them)" -- "$H" run "$T/wspace.json" --db "$T/other.db"
scenario odd "$(cfg vocab_size=512)" "\"format\": \"megatron\", \"seq_len\": 16, \"blend\": [1, \"$mdata\", 2]"
hostile "a flat blend list of odd length" "pairs a weight with a prefix" -- run "$T/odd.json"
scenario textblend "$(cfg)" "$bytes, \"blend\": [1, \"$mdata\"]"
hostile "blend with the text format" "data.blend: is only for" -- run "$T/textblend.json"

echo "# Alpaca instruction data (data.format alpaca)"
sft="\"tokenizer\": \"bpe\", \"tokenizer_path\": \"$bpe_json\", \"seq_len\": 224, \"eos_token\": \"<|endoftext|>\", \"pad_token\": \"eos\""
printf '[{"instruction": "a", "output": "b"}, {"instruction": "c"}]' >"$T/mm/noout.json"
scenario sftbad "$(cfg vocab_size=512 n_positions=256)" "\"format\": \"alpaca\", \"path\": \"$T/mm/noout.json\", $sft"
hostile "a record without output" "noout.json: record 1: \"output\" is missing" -- run "$T/sftbad.json"
printf '{"instruction": "a", "output": "b"}\n{"instruction": "a", "output": 3}\n' >"$T/mm/three.jsonl"
scenario sftline "$(cfg vocab_size=512 n_positions=256)" "\"format\": \"alpaca\", \"path\": \"$T/mm/three.jsonl\", $sft"
hostile "a JSON line with a number as output" "three.jsonl:2: \"output\" must be a string" -- run "$T/sftline.json"
sftdata="\"format\": \"alpaca\", \"path\": \"$SRC/tests/data/sft/alpaca.json\""
scenario noeos "$(cfg)" "$sftdata, \"tokenizer\": \"byte\", \"seq_len\": 64, \"pad_token\": \"a\""
hostile "a tokenizer without EOS" "noeos.json:3: data.eos_token: the tokenizer (byte) has no eos token" -- run "$T/noeos.json"
scenario nopad "$(cfg)" "$sftdata, \"tokenizer\": \"byte\", \"seq_len\": 64, \"eos_token\": \"a\""
hostile "a tokenizer without pad" "nopad.json:3: data.pad_token: the tokenizer (byte) has no pad token. Alpaca's train.py would add \"[PAD]\" and resize the embeddings" -- run "$T/nopad.json"
scenario sftlen "$(cfg vocab_size=512 n_positions=256)" "$sftdata, $sft, \"model_max_length\": 225"
hostile "model_max_length above seq_len" "data.model_max_length: 225 is larger than seq_len 224" -- run "$T/sftlen.json"
scenario sfttext "$(cfg)" "$bytes, \"eos_token\": \"x\""
hostile "eos_token with the text format" "data.eos_token: is only for \"format\": \"alpaca\"" -- run "$T/sfttext.json"
scenario sftfmt "$(cfg)" "$bytes, \"format\": \"csv\""
hostile "an unknown data.format" "data.format: unknown value \"csv\"" -- run "$T/sftfmt.json"

echo "# tokenizer.json"
head -c 2000 "$bpe_json" >"$T/tokenizer.json"
scenario tok "$(cfg vocab_size=512)" "\"path\": \"$corpus\", \"tokenizer\": \"bpe\", \"tokenizer_path\": \"$T/tokenizer.json\", \"seq_len\": 64"
hostile "truncated tokenizer.json" "tokenizer.json" -- run "$T/tok.json"
printf '{"model": {"type": "BPE", "vocab": 7, "merges": []}}' >"$T/tokenizer.json"
hostile "tokenizer.json with a bad vocab" "tokenizer.json" -- run "$T/tok.json"

echo "# model.safetensors"
weights() { # weights NAME: a copy of the model directory $T/m as $T/NAME, scenario $T/NAME.json
  rm -rf "$T/$1"; cp -r "$T/m" "$T/$1"; scenario "$1" "\"path\": \"$T/$1\"" "$bytes"
}
weights garbage; head -c 300 /dev/urandom >"$T/garbage/model.safetensors"
hostile "garbage weights" "model.safetensors" -- run "$T/garbage.json"
weights trunc; head -c 5000 "$T/m/model.safetensors" >"$T/trunc/model.safetensors"
hostile "truncated weights" "model.safetensors" -- run "$T/trunc.json"
scenario narrow "$(cfg n_embd=32)" "$bytes"
expect 0 "init a narrower model" -- "$H" init "$T/narrow.json" "$T/m32"
weights shape; cp "$T/m32/model.safetensors" "$T/shape/model.safetensors"
hostile "misshapen weights" "wte.weight" -- run "$T/shape.json"

echo "# devices"
hostile "unknown device" "nosuch" -- run "$tiny" --device nosuch
hostile "cpu:7" "cpu:7" -- run "$tiny" --device cpu:7
hostile "cpu: (ran on cpu:0)" "expected cpu or cpu:DEVICE, got 'cpu:'" -- run "$tiny" --device cpu:
hostile "opencl: in a --compare list" "got 'opencl:' (nothing after the colon)" -- run "$tiny" --compare --device opencl:
hostile "compare: every cell an input error" "short.txt" -- run "$T/short.json" --compare --device cpu,cpu64
# a --baselines folder or --baseline file that cannot be used was found only after every run was
# trained and recorded (a missing folder not at all)
hostile "compare: --baselines not there" "--baselines $T/nodir: No such file" -- run "$tiny" --steps 1 --compare --baselines "$T/nodir"
hostile "compare: --baselines a file" "not a folder" -- run "$tiny" --steps 1 --compare --baselines "$tiny"
hostile "compare: --baseline FILE not there" "nofile.baseline: cannot read the baseline" -- run "$tiny" --steps 1 --compare --baseline "$T/nofile.baseline"
sed 's#"baseline": "cpu"#"baseline": "'"$T"'/nofile.baseline"#; s#"data/corpus.txt"#"'"$corpus"'"#' "$tiny" >"$T/basefile.json"
grep -q nofile.baseline "$T/basefile.json" && pass || fail "basefile.json names its baseline file"
hostile "compare: the scenario's baseline file not there" "nofile.baseline: cannot read the baseline" -- run "$T/basefile.json" --steps 1 --compare
hostile "compare: --baseline FILE not a baseline" "gpt2-tiny.json:1: expected 'key: value'" -- run "$tiny" --steps 1 --compare --baseline "$tiny"

echo "# --dump-batches: never over the store or an input, never left behind by an input error"
mkdir -p "$T/mdump"; cp "$corpus" "$T/mdump/data.txt"
scenario mdump/in "$(cfg)" "\"path\": \"$T/mdump/data.txt\", \"tokenizer\": \"byte\", \"seq_len\": 64"
inputs_before=$(cat "$T/mdump/in.json" "$T/mdump/data.txt" | sha256sum)
hostile "--dump-batches at the data file" "data.txt: cannot write the batch dump there: it is a file this run reads" -- run "$T/mdump/in.json" --dump-batches "$T/mdump/data.txt"
hostile "--dump-batches at the scenario" "in.json: cannot write the batch dump there" -- run "$T/mdump/in.json" --dump-batches "$T/mdump/in.json"
hostile "--dump-batches at the weights" "model.safetensors: cannot write the batch dump there" -- run "$T/ok.json" --dump-batches "$T/m/model.safetensors"
[ "$(cat "$T/mdump/in.json" "$T/mdump/data.txt" | sha256sum)" = "$inputs_before" ] && pass || fail "a dump overwrote an input"
weights_before=$(cat "$T/m/config.json" "$T/m/model.safetensors" | sha256sum)
hostile "--save into the run's own model directory" "config.json is a file this run reads (its model directory)" -- run "$T/ok.json" --save "$T/m"
[ "$(cat "$T/m/config.json" "$T/m/model.safetensors" | sha256sum)" = "$weights_before" ] && pass || fail "--save overwrote the scenario's weights"
before=$(sha256sum "$db")
expect 2 "--dump-batches at the store" -- "$H" run "$tiny" --steps 1 --db "$db" --dump-batches "$T/./store.db"
says "is the store (--db"
[ "$(sha256sum "$db")" = "$before" ] && pass || fail "--dump-batches at the store: the store changed"
expect 2 "--dump-batches at a new store" -- "$H" run "$tiny" --steps 1 --db "$fresh" --dump-batches "$T/./fresh.db"
says "is the store (--db"; [ -e "$fresh" ] && { fail "created the store $fresh"; rm -f "$fresh"; } || pass
hostile "--dump-batches at what --save writes" "is the model.safetensors that --save" -- run "$tiny" --save "$T/mdump" --dump-batches "$T/mdump/model.safetensors"
hostile "--dump-batches at a directory" "cannot write the batch dump: it is a directory" -- run "$tiny" --dump-batches "$T/mdump"
hostile "--dump-batches in no directory" "cannot write the batch dump" -- run "$tiny" --dump-batches "$T/mdump/none/b.jsonl"
hostile "--dump-batches with garbage weights" "model.safetensors" -- run "$T/garbage.json" --dump-batches "$T/mdump/new.jsonl"
[ -e "$T/mdump/new.jsonl" ] && fail "an input error left the batch dump behind" || pass
printf 'kept\n' >"$T/mdump/old.jsonl"
hostile "--dump-batches over a file, garbage weights" "model.safetensors" -- run "$T/garbage.json" --dump-batches "$T/mdump/old.jsonl"
[ "$(cat "$T/mdump/old.jsonl")" = kept ] && pass || fail "an input error truncated the existing file"
expect 0 "--dump-batches over an old file" -- "$H" run "$tiny" --steps 2 --db "$T/other.db" --dump-batches "$T/mdump/old.jsonl"
[ "$(grep -c '^{"step":' "$T/mdump/old.jsonl")" = 2 ] && pass || fail "the dump does not hold the 2 steps"

echo "# GPT2Config keys the harness does not implement: refused by name and line"
scenario inner "$(cfg n_inner=7)" "$bytes"
hostile "n_inner 7" "inner.json:2: model.config.n_inner: only null (4 * n_embd = 256) is implemented" -- run "$T/inner.json"
scenario scale "$(cfg scale_attn_weights=false)" "$bytes"
hostile "scale_attn_weights false" "scale.json:2: model.config.scale_attn_weights: false is not implemented" -- run "$T/scale.json"
scenario tie "$(cfg tie_word_embeddings=0)" "$bytes"
hostile "tie_word_embeddings 0" "tie.json:2: model.config.tie_word_embeddings: must be true or false" -- run "$T/tie.json"

echo "# sizes that overflow"
scenario wide "$(cfg n_embd=1073741824 n_inner=4294967296 n_head=1)" "$bytes"
hostile "inline n_embd 2^30" "model.config.n_embd" -- run "$T/wide.json"
says "wide.json"
scenario vocab_big "$(cfg vocab_size=2000000000)" "$bytes"
hostile "inline vocab_size 2e9" "model.config.vocab_size" -- run "$T/vocab_big.json"
scenario deep "$(cfg n_layer=2000000000)" "$bytes"
hostile "inline n_layer 2e9" "model.config.n_layer" -- run "$T/deep.json"
scenario batch "$(cfg)" "$bytes" 100000000
hostile "batch_size 1e8" "train.batch_size 100000000" -- run "$T/batch.json"
says "batch.json"
scenario huge "$(cfg n_layer=1000)" "$bytes" 4096
hostile "activations larger than the device" "GiB" -- run "$T/huge.json"
says "train.batch_size 4096"
weights cfgwide; sed -i 's/"n_embd": 64/"n_embd": 1073741824/' "$T/cfgwide/config.json"
grep -q 1073741824 "$T/cfgwide/config.json" && pass || fail "config.json edited"
hostile "config.json n_embd 2^30" "config.json" -- run "$T/cfgwide.json"
says "n_embd"
expect 2 "init with n_embd 2^30" -- "$H" init "$T/wide.json" "$T/wide_out"; says "n_embd"
[ -e "$T/wide_out" ] && fail "init created its directory" || pass

echo "# empty paths"
printf 'x' >"$T/afile"
hostile "--save under a file" "afile" -- run "$tiny" --save "$T/afile/sub"
hostile "--save \"\"" "--save" -- run "$tiny" --save ""
# a directory that passes access() but takes no new entry (procfs, even for root) is found before
# training, not when the weights are written after it (the run recorded, then failed)
if [ -d /proc/self ]; then
  hostile "--save under /proc" "nothing can be created in /proc" -- run "$tiny" --steps 1 --save /proc/harness-nope
  hostile "--dump-batches under /proc" "nothing can be created in /proc" -- run "$tiny" --steps 1 --dump-batches /proc/harness-nope.jsonl
fi
# the probe that finds it leaves nothing behind
mkdir -p "$T/mprobe"
expect 0 "--save into a fresh directory" -- "$H" run "$tiny" --steps 1 --save "$T/mprobe/ck" --db "$T/mprobe.db"
ls -A "$T/mprobe" | grep -q harness-probe && fail "a probe was left in $T/mprobe" || pass
hostile "empty scenario path" "SCENARIO" -- run ""
hostile "empty --device" "--device" -- run "$tiny" --device ""
cd "$T" && before=$(sha256sum "$db")
expect 2 "run --db \"\"" -- "$H" run "$tiny" --steps 1 --db ""; says "--db"
grep -q '^step' "$T/out" && fail "run --db \"\" trained" || pass
expect 2 "init SCENARIO \"\"" -- "$H" init "$tiny" ""; says "OUT_DIR"
expect 2 "runs --db \"\"" -- "$H" runs --db ""; says "--db"
expect 2 "runs --db=" -- "$H" runs --db=; says "--db"
expect 2 "show \"\"" -- "$H" show "" --db "$db"
expect 2 "compare --baselines \"\"" -- "$H" compare 1 --baselines "" --db "$db"
expect 2 "report --out \"\"" -- "$H" report 1 --out "" --db "$db"
expect 2 "baseline export --out \"\"" -- "$H" baseline export 1 --out "" --db "$db"
[ "$(sha256sum "$db")" = "$before" ] && pass || fail "the store changed"
[ -z "$(ls "$T" | grep -v -e '\.json$' -e '\.txt$' -e '^store\.db$' -e '^other\.db$' -e '^m' \
  -e '^out$' -e '^err$' -e '^afile$' -e '^garbage$' -e '^trunc$' -e '^shape$' -e '^cfgwide$')" ] \
  && pass || fail "an empty path created something in the working directory: $(ls "$T")"
cd - >/dev/null

echo "# SIGTERM while a large data file is tokenized"
for _ in $(seq 200); do cat "$corpus"; done >"$T/big.txt"
scenario slow "$(cfg vocab_size=512)" "\"path\": \"$T/big.txt\", \"tokenizer\": \"bpe\", \"tokenizer_path\": \"$bpe_json\", \"seq_len\": 64"
# harness_running PID: PID has exec'd the harness (a signal before that would reach the shell
# forking it and prove nothing); then 0.3 s into its own time it is tokenizing big.txt (seconds)
harness_running() { [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$(readlink -f "$H")" ]; }
"$H" run "$T/slow.json" --db "$fresh" >"$T/out" 2>"$T/err" &
pid=$!
[ -d /proc/self ] && wait_until 60 "the harness to start" -- harness_running "$pid"
sleep 0.3
if [ -e "$fresh" ]; then
  fail "the store exists 0.3 s in: it was opened before setup, or setup ended that soon (make big.txt larger)"
fi
kill -TERM "$pid"; wait "$pid"; code=$?
[ "$code" = 143 ] && pass || fail "SIGTERM during setup: exit $code, want 143 (killed by SIGTERM)"
[ -e "$fresh" ] && fail "SIGTERM during setup created the store" || pass
before=$(sha256sum "$db")
"$H" run "$T/slow.json" --db "$db" >"$T/out" 2>"$T/err" &
pid=$!
[ -d /proc/self ] && wait_until 60 "the harness to start" -- harness_running "$pid"
sleep 0.3; kill -TERM "$pid"; wait "$pid"; code=$?
[ "$code" = 143 ] && pass || fail "SIGTERM during setup (existing store): exit $code, want 143"
[ "$(sha256sum "$db")" = "$before" ] && pass || fail "SIGTERM during setup changed the store"

echo "# outputs that only fail when written: a directory at a checkpoint file's temporary twin,"
echo "# a file of /proc (root opens it for writing, the write fails): refused before the run"
mkdir -p "$T/tmpdir/model.safetensors.tmp"
hostile "--save over a directory at model.safetensors.tmp" "model.safetensors.tmp is a directory" -- run "$tiny" --steps 1 --save "$T/tmpdir"
mkdir -p "$T/tmpinit/config.json.tmp"
expect 2 "init over a directory at config.json.tmp" -- "$H" init "$tiny" "$T/tmpinit"; says "config.json.tmp is a directory"
[ ! -e "$T/tmpinit/model.safetensors" ] && pass || fail "init left model.safetensors without config.json"
hostile "--dump-batches at /proc/version" "a file of the kernel's /proc or /sys" -- run "$tiny" --steps 1 --dump-batches /proc/version

echo "# model_type of another JSON type is refused for every family (gpt2 and bert took it)"
sed 's/"config": {/"config": {"model_type": 1, /' "$tiny" >"$T/mtype.json"
grep -q '"model_type": 1' "$T/mtype.json" && pass || fail "mtype.json lacks its model_type"
hostile "model_type 1" "model_type: must be a string, not an integer" -- run "$T/mtype.json" --steps 1

finish
