#!/usr/bin/env bash
# tests/test_alpaca_loss.sh: the first step's loss of GPT-2 on Alpaca data equals transformers' loss
# on train.py's batch (padded to the longest row, labels shifted inside the model) from the same
# `harness init` weights: padding to seq_len and the harness's shifted labels change nothing.
# Needs the venv of tools/pyenv.sh (BUILD/venv) or HARNESS_PYTHON: skipped without.
# usage: test_alpaca_loss.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "test_alpaca_loss: skipped: no Python with torch and transformers at $PY"
  echo "  (make it with: bash tools/pyenv.sh $(dirname "$H"), or set HARNESS_PYTHON)"
  exit 77
fi
bpe="$SRC/tests/data/hf/bpe512/tokenizer.json"
for data in alpaca.json alpaca.jsonl; do
  cat >"$T/sft.json" <<EOF2
{"name": "sft", "model": {"family": "gpt2", "config": {"vocab_size": 512, "n_positions": 256,
   "n_embd": 32, "n_layer": 2, "n_head": 4, "attn_pdrop": 0, "embd_pdrop": 0, "resid_pdrop": 0}},
 "data": {"format": "alpaca", "path": "$SRC/tests/data/sft/$data", "tokenizer": "bpe",
   "tokenizer_path": "$bpe", "seq_len": 240, "model_max_length": 200,
   "eos_token": "<|endoftext|>", "pad_token": "eos"},
 "train": {"steps": 1, "batch_size": 6, "lr": 1e-3, "seed": 3}}
EOF2
  rm -rf "$T/init" "$T/s.db"
  expect 0 "init ($data)" -- "$H" init "$T/sft.json" "$T/init"
  expect 0 "run ($data)" -- "$H" run "$T/sft.json" --db "$T/s.db"
  expect 0 "show ($data)" -- "$H" show 1 --db "$T/s.db" --json
  ours=$("$PY" -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["steps"][0]["loss"]))' "$T/out")
  expect 0 "transformers' loss ($data)" -- "$PY" "$SRC/tools/alpaca_loss.py" --init "$T/init" \
    --data "$SRC/tests/data/sft/$data" --tokenizer "$bpe" --model-max-length 200 --batch 6
  theirs=$(tail -1 "$T/out")
  if "$PY" -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - b) <= 1e-5 * abs(b) else 1)' "$ours" "$theirs"; then
    pass; echo "  $data: harness $ours, transformers $theirs"
  else
    fail "$data: the harness's step-1 loss $ours is not transformers' $theirs (1e-5 relative)"
  fi
done
finish
