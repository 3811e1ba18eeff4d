#!/usr/bin/env bash
# tests/test_preprocess_blank_lines.sh: `harness preprocess` skips blank lines (empty, or only spaces,
# tabs, carriage returns) of text and JSON-lines input even when the tokenizer's template would
# give them ids (<s>, [CLS] [SEP]), and reads "\u0000" in JSON text as Python's json does; every
# document's ids checked against the tokenizers library's.
# usage: test_preprocess_blank_lines.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
HF="$SRC/tests/data/hf"
if ! "$PY" -c 'import tokenizers' 2>/dev/null; then
  echo "$NAME: skipped: no Python with the tokenizers package at $PY"
  finish; exit $?
fi
# the library's ids of each document of INPUT (.txt: lines; else JSON lines' "text"), blank lines
# skipped, EOD (the eos token of tokenizer_config.json beside it) appended when given
cat >"$T/want.py" <<'EOF'
import json, sys
from tokenizers import Tokenizer
tok, path, eod = Tokenizer.from_file(sys.argv[1]), sys.argv[2], sys.argv[3:]
raw = open(path, "rb").read().decode("utf-8").split("\n")
for line in raw[:-1] if raw[-1] == "" else raw:
    if line.strip(" \t\r") == "":
        continue
    text = line[:-1] if line.endswith("\r") else line
    if not path.endswith(".txt"):
        text = json.loads(line)["text"]
    ids = tok.encode(text).ids
    if ids:
        print(json.dumps(ids + [tok.token_to_id(eod[0])] if eod else ids))
EOF
cat >"$T/read.py" <<'EOF'
import json, struct, sys
idx = open(sys.argv[1] + ".idx", "rb").read()
code, n = idx[17], struct.unpack_from("<Q", idx, 18)[0]
sizes = struct.unpack_from(f"<{n}i", idx, 34)
fmt, width = {8: ("H", 2), 4: ("i", 4)}[code]
data, at = open(sys.argv[1] + ".bin", "rb").read(), 0
for s in sizes:
    print(json.dumps(list(struct.unpack_from(f"<{s}{fmt}", data, at))))
    at += s * width
EOF
# check NAME INPUT TOKENIZER_JSON KIND:PATH [EOD_TEXT]: the harness's documents are the library's
check() {
  local name="$1" input="$2" json="$3" spec="$4" eod="${5:-}"
  local extra=(); [ -n "$eod" ] && extra=(--append-eod --eod-token "$eod")
  expect 0 "$name" -- "$H" preprocess --input "$input" --output-prefix "$T/$name" --tokenizer "$spec" "${extra[@]}"
  "$PY" "$T/want.py" "$json" "$input" $eod >"$T/$name.want" && [ -s "$T/$name.want" ] && pass || fail "$name: the library's ids"
  "$PY" "$T/read.py" "$T/${name}_text_document" >"$T/$name.got" && pass || fail "$name: reading the output"
  if cmp -s "$T/$name.got" "$T/$name.want"; then pass; else
    fail "$name: the documents differ from the library's (want, got)"; diff "$T/$name.want" "$T/$name.got" | head -6
  fi
}

echo "# blank lines are no documents, with a template too"
printf 'hello world\n\nfoo\n  \t \n\r\n\t\nbar baz\n' >"$T/b.txt"
check llama_txt "$T/b.txt" "$HF/llama/llama2/tokenizer.json" "bpe:$HF/llama/llama2" "</s>"
check bert_txt "$T/b.txt" "$HF/wordpiece/tokenizer.json" "wordpiece:$HF/wordpiece/tokenizer.json"
check bpe_txt "$T/b.txt" "$HF/bpe512/tokenizer.json" "bpe:$HF/bpe512/tokenizer.json" "<|endoftext|>"
printf '{"text": "hello world"}\n\n   \n{"text": "foo"}\n\t\r\n{"text": ""}\n' >"$T/b.jsonl"
check llama_jsonl "$T/b.jsonl" "$HF/llama/llama2/tokenizer.json" "bpe:$HF/llama/llama2" "</s>"
printf '\n \n\t\n' >"$T/blank.txt"
expect 2 "only blank lines" -- "$H" preprocess --input "$T/blank.txt" --output-prefix "$T/blank" --tokenizer "bpe:$HF/llama/llama2"
says "no document with any token"

echo "# \\u0000 in JSON text: read as Python's json reads it"
printf '{"text": "a\\u0000b"}\n{"text": "\\u0000"}\n{"text": "x y"}\n' >"$T/nul.jsonl"
check nul_jsonl "$T/nul.jsonl" "$HF/bpe512/tokenizer.json" "bpe:$HF/bpe512/tokenizer.json" "<|endoftext|>"
printf 'a\000b\n\000\nx y\n' >"$T/nul.txt"
expect 0 "a literal NUL in text" -- "$H" preprocess --input "$T/nul.txt" --output-prefix "$T/nul_txt" --tokenizer "bpe:$HF/bpe512/tokenizer.json" --append-eod --eod-token "<|endoftext|>"
cmp -s "$T/nul_txt_text_document.bin" "$T/nul_jsonl_text_document.bin" && pass || fail "\\u0000 in JSON and a NUL byte in text give other ids"
finish
