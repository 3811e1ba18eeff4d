#!/usr/bin/env bash
# tests/test_preprocess_cli.sh: `harness preprocess` writes the .bin/.idx that the numpy writer of
# tools/make_megatron_fixture.py wrote, byte for byte; refuses bad input writing nothing; and
# `harness run` trains GPT-2 end to end on Alpaca data and on binarized datasets, one and blended.
# usage: test_preprocess_cli.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
M="$SRC/tests/data/megatron"
bpe="$SRC/tests/data/hf/bpe512/tokenizer.json"
pre() { "$H" preprocess --tokenizer "bpe:$bpe" --append-eod --eod-token '<|endoftext|>' "$@"; }

echo "# the numpy writer's bytes, from JSON lines and from text"
for input in docs.jsonl docs.txt; do
  expect 0 "preprocess $input" -- pre --input "$M/$input" --output-prefix "$T/out-$input"
  for ext in bin idx; do
    cmp -s "$T/out-${input}_text_document.$ext" "$M/docs_text_document.$ext" && pass ||
      fail "$input: the .$ext differs from tools/make_megatron_fixture.py's"
  done
done
grep -q "13 documents, 259 tokens" "$T/out" && pass || fail "the summary line: $(cat "$T/out")"
expect 0 "preprocess --help" -- "$H" preprocess --help
grep -q -- "--output-prefix" "$T/out" && pass || fail "--help names --output-prefix"
expect 0 "--json-key names the output" -- pre --input "$M/docs.jsonl" --output-prefix "$T/k" --json-key text
[ -s "$T/k_text_document.idx" ] && pass || fail "--json-key text: no k_text_document.idx"

echo "# bad arguments and bad input: exit 2, nothing written, earlier files kept"
expect 2 "no --input" -- "$H" preprocess --output-prefix "$T/x" --tokenizer byte
# an output named as the input would replace it: refused, the input kept
printf '{"text": "hello"}\n' >"$T/q_text_document.bin"
expect 2 "an output prefix whose .bin is the input" -- "$H" preprocess --input "$T/q_text_document.bin" --output-prefix "$T/q" --tokenizer byte
says "this preprocess reads"; [ "$(cat "$T/q_text_document.bin")" = '{"text": "hello"}' ] && pass || fail "preprocess replaced its own input"
expect 2 "--eod-token without --append-eod" -- "$H" preprocess --input "$M/docs.jsonl" --output-prefix "$T/x" --tokenizer byte --eod-token a
expect 2 "an unknown tokenizer" -- "$H" preprocess --input "$M/docs.jsonl" --output-prefix "$T/x" --tokenizer sentencepiece
expect 2 "the byte tokenizer has no EOD" -- "$H" preprocess --input "$M/docs.jsonl" --output-prefix "$T/x" --tokenizer byte --append-eod
says "has no eos token"
expect 2 "an EOD text of two tokens" -- pre --input "$M/docs.jsonl" --output-prefix "$T/x" --eod-token "ab cd"
cp "$M/docs_text_document.bin" "$T/keep_text_document.bin"; cp "$M/docs_text_document.idx" "$T/keep_text_document.idx"
bad() { # bad WHAT TEXT CONTENT: a JSON-lines input refused with TEXT, nothing written
  printf '%b' "$3" >"$T/bad.jsonl"
  expect 2 "$1" -- pre --input "$T/bad.jsonl" --output-prefix "$T/keep"; says "$2"
  cmp -s "$T/keep_text_document.bin" "$M/docs_text_document.bin" &&
    cmp -s "$T/keep_text_document.idx" "$M/docs_text_document.idx" && pass || fail "$1: the earlier files changed"
  ls "$T" | grep -q '\.tmp$' && fail "$1: a .tmp file was left" || pass
}
bad "invalid JSON on line 3" "bad.jsonl:3" '{"text": "a"}\n\n{"text": "b"\n'
bad "a line without the key" "bad.jsonl:2: key \"text\": the key is missing" '{"text": "a"}\n{"body": "b"}\n'
bad "a key that is no string" "the key's value must be a string" '{"text": 5}\n'
bad "a line that is no object" "a line must be a JSON object" '["text"]\n'
bad "no document with tokens" "no document with any token" '{"text": ""}\n\n'
bad "invalid UTF-8 in text" "bad.jsonl:1" 'caf\xe9\n'
expect 2 "a missing input" -- pre --input "$T/absent.jsonl" --output-prefix "$T/keep"; says "absent.jsonl"
# a folder at a .tmp name: refused before tokenizing, and never removed (remove() took an empty
# one away after the whole input was tokenized, exit 1)
for x in bin idx; do
  mkdir "$T/keep_text_document.$x.tmp"
  expect 2 "a folder at the .$x.tmp name" -- "$H" preprocess --input "$M/docs.jsonl" --output-prefix "$T/keep" --tokenizer byte
  says "keep_text_document.$x.tmp: exists and is not a regular file; nothing written"
  [ -d "$T/keep_text_document.$x.tmp" ] && pass || fail "the folder at .$x.tmp was removed"
  rmdir "$T/keep_text_document.$x.tmp"
done
expect 2 "a FIFO as input" -- timeout $((30 * SLOW)) "$H" preprocess --input /dev/stdin --output-prefix "$T/keep" --tokenizer byte </dev/null

echo "# GPT-2 trained on Alpaca data and on binarized datasets"
cfg='"config": {"vocab_size": 512, "n_positions": 256, "n_embd": 32, "n_layer": 2, "n_head": 4, "attn_pdrop": 0, "embd_pdrop": 0, "resid_pdrop": 0}'
scenario() { # scenario NAME DATA
  cat >"$T/$1.json" <<EOF
{"name": "$1", "model": {"family": "gpt2", $cfg}, "data": {$2},
 "train": {"steps": 3, "batch_size": 4, "lr": 3e-3, "seed": 7}}
EOF
}
scenario sft "\"format\": \"alpaca\", \"path\": \"$SRC/tests/data/sft/alpaca.json\", \"tokenizer\": \"bpe\",
  \"tokenizer_path\": \"$bpe\", \"seq_len\": 224, \"model_max_length\": 200,
  \"eos_token\": \"<|endoftext|>\", \"pad_token\": \"eos\""
expect 0 "run on Alpaca data" -- "$H" run "$T/sft.json" --db "$T/s.db" --dump-batches "$T/sft.jsonl"
grep -q "run 1: ok" "$T/out" && pass || fail "the Alpaca run did not end ok"
head -1 "$T/sft.jsonl" | grep -q '"attention_mask":\[1,' && pass || fail "the Alpaca batch has no attention mask"
head -1 "$T/sft.jsonl" | grep -q '"labels":\[-100,-100,' && pass || fail "the prompt is not labelled -100"
scenario mm "\"format\": \"megatron\", \"path\": \"$M/docs_text_document\", \"seq_len\": 16"
expect 0 "run on a binarized dataset" -- "$H" run "$T/mm.json" --db "$T/s.db"
grep -q "run 2: ok" "$T/out" && pass || fail "the megatron run did not end ok"
scenario blend "\"format\": \"megatron\", \"seq_len\": 16, \"blend\": [{\"path\": \"$M/docs_text_document\", \"weight\": 0.3}, {\"path\": \"$M/wide_text_document\", \"weight\": 0.7}]"
expect 0 "run on two blended datasets" -- "$H" run "$T/blend.json" --db "$T/s.db" --dump-batches "$T/b1.jsonl"
scenario flat "\"format\": \"megatron\", \"seq_len\": 16, \"blend\": [3, \"$M/docs_text_document\", 7, \"$M/wide_text_document\"]"
expect 0 "run on Megatron's flat blend list" -- "$H" run "$T/flat.json" --db "$T/s.db" --dump-batches "$T/b2.jsonl"
cmp -s "$T/b1.jsonl" "$T/b2.jsonl" && pass || fail "the flat list and the objects (same weights, normalised) gave other batches"
scenario words "\"format\": \"megatron\", \"seq_len\": 16, \"blend\": [\"0.3\", \"$M/docs_text_document\", \"0.7\", \"$M/wide_text_document\"]"
expect 0 "run on the flat list with weights as strings (--data-path's words)" -- "$H" run "$T/words.json" --db "$T/s.db" --dump-batches "$T/b3.jsonl"
cmp -s "$T/b1.jsonl" "$T/b3.jsonl" && pass || fail "weights as strings gave other batches"
scenario nan "\"format\": \"megatron\", \"seq_len\": 16, \"blend\": [\"0.3x\", \"$M/docs_text_document\"]"
expect 2 "a weight that is no number" -- "$H" run "$T/nan.json" --db "$T/s.db"; says "must be a weight"
cp "$M/docs_text_document.bin" "$T/own_text_document.bin"
pre --input "$M/docs.txt" --output-prefix "$T/own" >/dev/null 2>&1
scenario own "\"format\": \"megatron\", \"path\": \"own_text_document\", \"seq_len\": 16"
expect 0 "run on what preprocess wrote (a path relative to the scenario)" -- "$H" run "$T/own.json" --db "$T/s.db"

finish
