#!/usr/bin/env bash
# tests/test_tied_head.sh: a tied head saved in a checkpoint anyway (GPT-2's lm_head.weight,
# qwen2's with tie_word_embeddings) trains when it holds the embedding's values and is refused
# (exit 2, no store) when it differs: transformers 4 tied it, 5 keeps it untied.
# usage: test_tied_head.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
corpus="$SRC/scenarios/data/corpus.txt"
# add_head DIR FROM CHANGE: a copy of tensor FROM named as the tied head (lm_head.weight), its
# first element changed when CHANGE is 1 (the header's offsets kept valid; stdlib only)
add_head() {
  python3 - "$1/model.safetensors" "$2" "$3" <<'EOF'
import json, struct, sys
path, src, change = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head, data = json.loads(raw[8:8 + n]), bytearray(raw[8 + n:])
b, e = head[src]["data_offsets"]
extra = bytearray(data[b:e])
if change:
    extra[0:4] = struct.pack("<f", struct.unpack("<f", bytes(extra[0:4]))[0] + 0.5)
head["lm_head.weight"] = dict(head[src], data_offsets=[len(data), len(data) + len(extra)])
text = json.dumps(head).encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + bytes(data) + bytes(extra))
EOF
}
scenario() { # scenario NAME DIR FAMILY
  cat >"$T/$1.json" <<JSON
{"name": "$1", "model": {"family": "$3", "path": "$2", "weights": "pretrained"},
 "data": {"path": "$corpus", "tokenizer": "byte", "seq_len": 32},
 "train": {"steps": 2, "batch_size": 2, "lr": 1e-3}}
JSON
}
for v in gpt2:transformer.wte.weight qwen2:model.embed_tokens.weight; do
  name="${v%%:*}"; wte="${v#*:}"; family=gpt2; [ "$name" = qwen2 ] && family=llama
  expect 0 "$name init" -- "$H" init "$SRC/scenarios/$name-tiny.json" "$T/$name-same"
  cp -r "$T/$name-same" "$T/$name-diff"
  add_head "$T/$name-same" "$wte" 0 && add_head "$T/$name-diff" "$wte" 1 && pass || fail "$name: fixture"
  scenario "$name-same" "$T/$name-same" "$family"; scenario "$name-diff" "$T/$name-diff" "$family"
  expect 0 "$name: a saved tied head equal to the embedding" -- "$H" run "$T/$name-same.json" --db "$T/$name.db" --quiet
  expect 2 "$name: a saved tied head that differs" -- "$H" run "$T/$name-diff.json" --db "$T/$name-no.db" --quiet
  says "lm_head.weight differs from"
  [ ! -e "$T/$name-no.db" ] && pass || fail "$name: the refused run made the store"
done
finish
