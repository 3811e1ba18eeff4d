#!/usr/bin/env bash
# tests/test_hostile_readers.sh: every file reader given what is not a plain file of a sane size
# (/dev/zero, a symlink to it, a FIFO, a directory, a file over its cap: docs/limits.md), names
# holding terminal escapes, 100,000 added tokens and a catastrophic split regex. Each refusal
# exits 2 within a timeout (a FIFO must never block) with a message naming the path and what it
# is, stderr holds no raw ESC byte, and the store is byte-for-byte as it was.
# usage: test_hostile_readers.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
corpus="$SRC/scenarios/data/corpus.txt"
bpe="$SRC/tests/data/hf/bpe512"
MiB=$((1024 * 1024))

echo "setting up: a store with one run, a model directory, a tokenizer directory"
"$H" run "$SRC/scenarios/gpt2-tiny.json" --steps 1 --db "$T/s.db" >"$T/out" 2>&1 || fail "setup run"
"$H" init "$SRC/scenarios/gpt2-tiny.json" "$T/model" >"$T/out" 2>&1 || fail "setup init"
sum0=$(sha256sum <"$T/s.db")
ESC=$(printf '\033')

# no raw ESC byte on stderr or stdout of the last expect
no_esc() {
  if grep -q "$ESC" "$T/err" "$T/out"; then fail "$1: a raw ESC byte was printed"; else pass; fi
}
same_store() {
  if [ "$(sha256sum <"$T/s.db")" = "$sum0" ]; then pass; else fail "$1: the store changed"; sum0=$(sha256sum <"$T/s.db"); fi
}
# refused WHAT WANT -- CMD...: exit 2 (not a hang), WANT on stderr, no ESC, the store unchanged
refused() {
  local what="$1" want="$2"; shift 3
  expect 2 "$what" -- timeout $((60 * SLOW)) "$@"; says "$want"; no_esc "$what"; same_store "$what"
}

# hostile KIND PATH [CAP]: PATH becomes a symlink to /dev/zero, a FIFO, a directory or a sparse
# file one byte over CAP
hostile() {
  rm -rf "$2"
  case "$1" in
    link) ln -s /dev/zero "$2" ;;
    fifo) mkfifo "$2" ;;
    dir) mkdir "$2" ;;
    big) truncate -s $(($3 + 1)) "$2" ;;
  esac
}
# what the message says about each kind
says_kind() {
  case "$1" in
    link) echo "it is a character device, not a regular file" ;;
    fifo) echo "it is a FIFO (named pipe), not a regular file" ;;
    dir) echo "it is a directory, not a regular file" ;;
    big) echo "MiB limit for a" ;;
  esac
}

# scenario NAME MODEL DATA: a one-step scenario file $T/NAME.json
scenario() {
  cat >"$T/$1.json" <<EOF
{"name": "$1", "model": {"family": "gpt2", $2},
 "data": {$3, "seq_len": 32},
 "train": {"steps": 1, "batch_size": 2, "lr": 1e-3, "seed": 1}}
EOF
}
nodrop='"attn_pdrop": 0, "embd_pdrop": 0, "resid_pdrop": 0'
llama="$SRC/tests/data/hf/llama/llama2"
llama_cfg='"config": {"vocab_size": 700, "n_positions": 64, "n_embd": 16, "n_layer": 1, "n_head": 2, '"$nodrop}"
tiny_cfg='"config": {"vocab_size": 512, "n_positions": 64, "n_embd": 16, "n_layer": 1, "n_head": 2, '"$nodrop}"
byte_data="\"path\": \"$corpus\", \"tokenizer\": \"byte\""

# ---- each reader, each kind of hostile file ------------------------------------------------
for kind in link fifo dir big; do
  echo "readers given a $kind"
  want=$(says_kind "$kind")
  x="$T/hostile.$kind"

  hostile "$kind" "$x" $((4 * MiB))
  refused "scenario ($kind)" "$want" -- "$H" run "$x" --db "$T/s.db"

  hostile "$kind" "$x" $((1024 * MiB))
  scenario data "$tiny_cfg" "\"path\": \"$x\", \"tokenizer\": \"byte\""
  refused "data file ($kind)" "$want" -- "$H" run "$T/data.json" --db "$T/s.db"

  hostile "$kind" "$x" $((1024 * MiB))
  scenario sft "$tiny_cfg" "\"format\": \"alpaca\", \"path\": \"$x\", \"tokenizer\": \"byte\", \"pad_token\": \"a\", \"eos_token\": \"b\""
  refused "alpaca data file ($kind)" "$want" -- "$H" run "$T/sft.json" --db "$T/s.db"
  refused "preprocess --input ($kind)" "$want" -- "$H" preprocess --input "$x" --output-prefix "$T/pp" --tokenizer byte
  [ -e "$T/pp_text_document.bin" ] && fail "preprocess ($kind) wrote a .bin" || pass

  if [ "$kind" != big ]; then # .idx and .bin are mapped, never read whole: no cap
    for ext in idx bin; do
      rm -rf "$T/mm"; mkdir "$T/mm"
      cp "$SRC/tests/data/megatron/docs_text_document.idx" "$SRC/tests/data/megatron/docs_text_document.bin" "$T/mm/"
      hostile "$kind" "$T/mm/docs_text_document.$ext"
      scenario mm "$tiny_cfg" "\"format\": \"megatron\", \"path\": \"$T/mm/docs_text_document\""
      refused "megatron .$ext ($kind)" "$want" -- "$H" run "$T/mm.json" --db "$T/s.db"
    done
  fi

  hostile "$kind" "$x" $((4 * MiB))
  scenario cfgpath "\"config_path\": \"$x\"" "$byte_data"
  [ "$kind" = dir ] && want_cfg="$x/config.json" || want_cfg="$want"
  refused "model.config_path ($kind)" "$want_cfg" -- "$H" run "$T/cfgpath.json" --db "$T/s.db"

  scenario ovrpath "$tiny_cfg, \"overrides_path\": \"$x\"" "$byte_data"
  refused "model.overrides_path ($kind)" "$want" -- "$H" run "$T/ovrpath.json" --db "$T/s.db"

  for f in config.json override_config.json; do
    rm -rf "$T/md"; cp -r "$T/model" "$T/md"
    hostile "$kind" "$T/md/$f" $((4 * MiB))
    scenario md "\"path\": \"$T/md\"" "$byte_data"
    refused "model directory $f ($kind)" "$want" -- "$H" run "$T/md.json" --db "$T/s.db"
  done

  if [ "$kind" != big ]; then # weights are mapped, not read: their cap is the header's (below)
    rm -rf "$T/md"; cp -r "$T/model" "$T/md"
    hostile "$kind" "$T/md/model.safetensors"
    scenario md "\"path\": \"$T/md\"" "$byte_data"
    refused "model.safetensors ($kind)" "$want" -- "$H" run "$T/md.json" --db "$T/s.db"
  fi
  rm -rf "$T/md"; mkdir "$T/md"; cp "$T/model/config.json" "$T/md/"
  hostile "$kind" "$T/md/model.safetensors.index.json" $((16 * MiB))
  scenario md "\"path\": \"$T/md\"" "$byte_data"
  refused "model.safetensors.index.json ($kind)" "$want" -- "$H" run "$T/md.json" --db "$T/s.db"

  for f in tokenizer.json vocab.json merges.txt; do
    rm -rf "$T/tok"; cp -r "$bpe" "$T/tok"
    [ "$f" = tokenizer.json ] || rm "$T/tok/tokenizer.json"
    hostile "$kind" "$T/tok/$f" $((256 * MiB))
    scenario tok "$tiny_cfg" "\"path\": \"$corpus\", \"tokenizer\": \"bpe\", \"tokenizer_path\": \"$T/tok\""
    refused "tokenizer $f ($kind)" "$want" -- "$H" run "$T/tok.json" --db "$T/s.db"
  done

  rm -rf "$T/ltok"; cp -r "$llama" "$T/ltok"
  hostile "$kind" "$T/ltok/tokenizer_config.json" $((256 * MiB))
  scenario ltok "$llama_cfg" "\"path\": \"$corpus\", \"tokenizer\": \"bpe\", \"tokenizer_path\": \"$T/ltok\""
  refused "tokenizer_config.json beside a Llama tokenizer.json ($kind)" "$want" -- "$H" run "$T/ltok.json" --db "$T/s.db"

  hostile "$kind" "$x" $((256 * MiB))
  refused "baseline import ($kind)" "$want" -- "$H" baseline import "$x" --db "$T/s.db"
  refused "compare --baseline FILE ($kind)" "$want" -- "$H" compare 1 --baseline "$x" --db "$T/s.db"
  rm -rf "$x"
done
refused "/dev/zero as the scenario" "it is a character device" -- "$H" run /dev/zero --db "$T/s.db"
scenario data "$tiny_cfg" "\"path\": \"/dev/zero\", \"tokenizer\": \"byte\""
refused "/dev/zero as the data file" "it is a character device" -- "$H" run "$T/data.json" --db "$T/s.db"

# ---- safetensors: the header's own cap, names with terminal escapes ------------------------
# st_write OUT HEADER: a safetensors file (8-byte little-endian header length, header, 4 bytes)
st_write() {
  local n=${#2} le="" i
  for i in 0 1 2 3 4 5 6 7; do le="$le$(printf '\\%03o' $(( (n >> (8 * i)) & 255 )))"; done
  { printf "$le"; printf '%s' "$2"; printf '\0\0\0\0'; } >"$1"
}
echo "safetensors: header cap, escapes in tensor and shard names"
rm -rf "$T/md"; mkdir "$T/md"; cp "$T/model/config.json" "$T/md/"
printf '\001\000\100\006\000\000\000\000{}' >"$T/md/model.safetensors" # 100 MiB + 1
truncate -s $((101 * MiB)) "$T/md/model.safetensors" # sparse: the header fits in the file
scenario md "\"path\": \"$T/md\"" "$byte_data"
refused "safetensors header over 100 MiB" "exceeds the limit" -- "$H" run "$T/md.json" --db "$T/s.db"
st_write "$T/md/model.safetensors" '{"\u001b]0;pwned\u0007":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
refused "a tensor name with ESC" '"\e]0;pwned\x07"' -- "$H" run "$T/md.json" --db "$T/s.db"
rm "$T/md/model.safetensors"
printf '{"weight_map": {"wte.weight": "\\u001b]0;shard\\u0007.safetensors"}}' >"$T/md/model.safetensors.index.json"
refused "a shard name with ESC" '\e]0;shard\x07.safetensors' -- "$H" run "$T/md.json" --db "$T/s.db"

# ---- baselines with terminal escapes in their fields ---------------------------------------
echo "baselines: escapes in fields"
base="$SRC/baselines/gpt2-tiny.cpu.baseline"
sed "s/^mem_total_bytes: .*/mem_total_bytes: 12${ESC}]0;x/" "$base" >"$T/bad.baseline"
refused "a malformed baseline field with ESC" '12\e]0;x' -- "$H" baseline import "$T/bad.baseline" --db "$T/s.db"
cp "$T/s.db" "$T/b.db"
sed "s/^label: .*/label: ${ESC}]0;lab$(printf '\007')/; s/^device_name: .*/device_name: ${ESC}[31mred/" \
  "$base" >"$T/evil.baseline"
expect 0 "import a baseline with ESC in label and device name" -- "$H" baseline import "$T/evil.baseline" --db "$T/b.db"
no_esc "baseline import output"
grep -qF '\e]0;lab\x07' "$T/out" && pass || fail "the label is shown escaped"
id=$(sed -n 's/.* imported as run \([0-9]*\).*/\1/p' "$T/out")
expect 0 "baseline list" -- "$H" baseline list --db "$T/b.db"; no_esc "baseline list"
grep -qF '\e[31mred' "$T/out" && pass || fail "the device name is listed escaped"
expect 0 "runs" -- "$H" runs --db "$T/b.db"; no_esc "runs"
expect 0 "show the imported run" -- "$H" show "${id:-0}" --db "$T/b.db"; no_esc "show"
grep -qF '\e[31mred' "$T/out" && pass || fail "show prints the device name escaped"
# a second import of it (another date: another run) to judge it against (an imported run judged
# against itself is refused)
sed "s/^label: .*/label: evil2/; s/^date: .*/date: 2026-01-02T00:00:00Z/" "$T/evil.baseline" >"$T/evil2.baseline"
"$H" baseline import "$T/evil2.baseline" --db "$T/b.db" >"$T/out" 2>"$T/err"
id2=$(sed -n 's/.* imported as run \([0-9]*\).*/\1/p' "$T/out")
"$H" compare "${id:-0}" --baseline "${id2:-0}" --db "$T/b.db" >"$T/out" 2>"$T/err"
no_esc "compare of the imported run with another"
grep -qF '\e[31mred' "$T/out" && pass || fail "compare prints the device name escaped"

# ---- tokenizers: 100,000 added tokens, a catastrophic split regex --------------------------
echo "tokenizer: 100,000 added tokens (quadratic matching took minutes before)"
mkdir -p "$T/many"
awk '{print} /"added_tokens": \[/ {for (i = 0; i < 100000; i++) printf "{\"id\": %d, \"content\": \"<|extra_%d|>\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true},\n", 512 + i, i}' \
  "$bpe/tokenizer.json" >"$T/many/tokenizer.json"
{ for i in 1 2 3 4 5 6 7 8; do cat "$corpus"; done; } >"$T/many/data.txt"
scenario many '"config": {"vocab_size": 100512, "n_positions": 64, "n_embd": 8, "n_layer": 1, "n_head": 2, '"$nodrop}" \
  "\"path\": \"$T/many/data.txt\", \"tokenizer\": \"bpe\", \"tokenizer_path\": \"$T/many/tokenizer.json\""
expect 0 "a run with 100,000 added tokens ends" -- timeout $((300 * SLOW)) "$H" run "$T/many.json" --db "$T/b.db"

echo "tokenizer: a catastrophic split regex"
awk '/^  "pre_tokenizer": \{/ {print "  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\\\\p{L}+)+\\\\d\"}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false}]},"; skip = 1; next}
     skip && /^  \},/ {skip = 0; next} !skip {print}' "$bpe/tokenizer.json" >"$T/regex-tok.json"
head -c 5000 /dev/zero | tr '\0' a >"$T/aaa.txt"; echo '!' >>"$T/aaa.txt"
scenario regex "$tiny_cfg" "\"path\": \"$T/aaa.txt\", \"tokenizer\": \"bpe\", \"tokenizer_path\": \"$T/regex-tok.json\""
refused "a catastrophic split regex" "exceeded the backtracking limit (10000000 retries" -- \
  "$H" run "$T/regex.json" --db "$T/s.db"
says "regex-tok.json"

# ---- Llama/Mistral-style tokenizer.json: an unsupported component, a million bad merges ------
echo "tokenizer: a SentencePiece normalizer (Precompiled) is refused by its JSON path"
rm -rf "$T/ltok"; cp -r "$llama" "$T/ltok"
sed -i 's/"normalizers": \[{"type": "Prepend"/"normalizers": [{"type": "Precompiled"}, {"type": "Prepend"/' "$T/ltok/tokenizer.json"
scenario ltok "$llama_cfg" "\"path\": \"$corpus\", \"tokenizer\": \"bpe\", \"tokenizer_path\": \"$T/ltok\""
refused "a Precompiled normalizer" 'normalizer.normalizers[0]: type: "Precompiled" is not supported' -- \
  "$H" run "$T/ltok.json" --db "$T/s.db"

echo "tokenizer: a million merges of tokens not in the vocabulary"
awk 'BEGIN {printf "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": false, \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": ["; for (i = 0; i < 1000000; i++) printf "%s\"a%d b\"", (i ? "," : ""), i; print "]}}"}' >"$T/ltok/tokenizer.json"
rm -f "$T/ltok/tokenizer_config.json"
refused "a million bad merges" 'merge 1 "a0 b": "left part" is not in the vocabulary' -- \
  "$H" run "$T/ltok.json" --db "$T/s.db"

finish
