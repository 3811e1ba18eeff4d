#!/usr/bin/env bash
# tests/test_tied_head.sh: a tied head saved in a checkpoint anyway (GPT-2's lm_head.weight,
# qwen2's with tie_word_embeddings) trains when it holds the embedding's values (-0 for 0 too)
# and is refused (exit 2, no store) when it differs: transformers 4 tied it, 5 keeps it untied;
# a checkpoint of the head alone trains as with both; BERT's two decoder biases likewise.
# usage: test_tied_head.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
corpus="$SRC/scenarios/data/corpus.txt"
# add_copy DIR FROM TO CHANGE: a copy of tensor FROM named TO, its first element changed (CHANGE
# 1: +0.5; negzero: -0.0 in the copy, +0.0 in FROM; move: FROM renamed TO, no copy), the
# header's offsets kept valid (stdlib only)
add_copy() {
  python3 - "$1/model.safetensors" "$2" "$3" "$4" <<'EOF'
import json, struct, sys
path, src, dst, change = sys.argv[1:5]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head, data = json.loads(raw[8:8 + n]), bytearray(raw[8 + n:])
b, e = head[src]["data_offsets"]
if change == "move":
    head[dst] = head.pop(src)
else:
    extra = bytearray(data[b:e])
    if change == "1":
        extra[0:4] = struct.pack("<f", struct.unpack("<f", bytes(extra[0:4]))[0] + 0.5)
    elif change == "negzero":
        data[b:b + 4] = struct.pack("<f", 0.0)
        extra[0:4] = struct.pack("<f", -0.0)
    head[dst] = dict(head[src], data_offsets=[len(data), len(data) + len(extra)])
    data += extra
text = json.dumps(head).encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + bytes(data))
EOF
}
add_head() { add_copy "$1" "$2" lm_head.weight "$3"; }
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
  # -0 in the head where the embedding holds 0: equal, as torch.equal has it (bytes differed)
  expect 0 "$name init again" -- "$H" init "$SRC/scenarios/$name-tiny.json" "$T/$name-negzero"
  add_copy "$T/$name-negzero" "$wte" lm_head.weight negzero && pass || fail "$name: fixture -0"
  scenario "$name-negzero" "$T/$name-negzero" "$family"
  expect 0 "$name: a tied head with -0 where the embedding has 0" -- "$H" run "$T/$name-negzero.json" --db "$T/$name.db" --quiet
  # only the head (the embedding not saved): the embedding is read from it, as from_pretrained
  # ties it; the same losses as the directory with both
  expect 0 "$name init once more" -- "$H" init "$SRC/scenarios/$name-tiny.json" "$T/$name-only"
  add_copy "$T/$name-only" "$wte" lm_head.weight move && pass || fail "$name: fixture head only"
  scenario "$name-only" "$T/$name-only" "$family"
  expect 0 "$name: a tied checkpoint holding only the head" -- "$H" run "$T/$name-only.json" --db "$T/$name-only.db"
  awk '/^step/ {print $2, $4, $6}' "$T/out" >"$T/only.losses"
  expect 0 "$name: the same weights with the embedding" -- "$H" run "$T/$name-same.json" --db "$T/$name-only.db"
  awk '/^step/ {print $2, $4, $6}' "$T/out" | cmp -s - "$T/only.losses" && pass || fail "$name: the head-only checkpoint trains otherwise"
done
# BERT's decoder bias beside cls.predictions.bias: equal values train, differing ones are refused
# (transformers 5 reads the decoder's, 4 the other: the harness silently took the other)
expect 0 "bert init" -- "$H" init "$SRC/scenarios/bert-tiny.json" "$T/bert-same"
cp -r "$T/bert-same" "$T/bert-diff"
bias=$(python3 -c 'import json, struct, sys; r = open(sys.argv[1], "rb").read(); h = json.loads(r[8:8 + struct.unpack("<Q", r[:8])[0]]); print([k for k in h if k.endswith("cls.predictions.bias")][0])' "$T/bert-same/model.safetensors")
add_copy "$T/bert-same" "$bias" "${bias%bias}decoder.bias" 0 && add_copy "$T/bert-diff" "$bias" "${bias%bias}decoder.bias" 1 && pass || fail "bert: fixture"
for v in same diff; do
  cat >"$T/bert-$v.json" <<JSON
{"name": "bert-$v", "model": {"family": "bert", "path": "$T/bert-$v", "weights": "pretrained"},
 "data": {"path": "$corpus", "tokenizer": "wordpiece", "tokenizer_path": "$SRC/scenarios/data/wordpiece/tokenizer.json", "objective": "mlm", "seq_len": 32},
 "train": {"steps": 2, "batch_size": 2, "lr": 1e-3}}
JSON
done
expect 0 "bert: decoder.bias equal to cls.predictions.bias" -- "$H" run "$T/bert-same.json" --db "$T/bert.db" --quiet
expect 2 "bert: decoder.bias that differs" -- "$H" run "$T/bert-diff.json" --db "$T/bert-no.db" --quiet
says "is given again as"
[ ! -e "$T/bert-no.db" ] && pass || fail "bert: the refused run made the store"
finish

