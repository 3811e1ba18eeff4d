#!/usr/bin/env bash
# tests/test_sft_unlabelled.sh: an SFT micro-batch whose labels are all -100 (its prompt fills
# model_max_length) has loss NaN, as PyTorch's mean cross-entropy (0/0): the run ends diverged
# at that step, naming the micro-batch; transformers' loss on that batch is NaN too (with Python).
# usage: test_sft_unlabelled.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
bpe="$SRC/tests/data/hf/bpe512/tokenizer.json"
# record A: a short prompt and answer; record B: a prompt longer than model_max_length, so the
# truncated example is all prompt and every label is -100
long=$(for i in $(seq 80); do printf 'word%d and ' "$i"; done)
printf '{"instruction": "Name a colour.", "output": "Blue."}\n' >"$T/a.jsonl"
{ cat "$T/a.jsonl"; printf '{"instruction": "%s", "output": "Never seen."}\n' "$long"; } >"$T/ab.jsonl"
printf '{"instruction": "%s", "output": "Never seen."}\n' "$long" >"$T/b.jsonl"
# scenario NAME DATA ACCUMULATION: GPT-2 on DATA, batch 1, 3 steps
scenario() {
  cat >"$T/$1.json" <<EOF
{"name": "$1", "model": {"family": "gpt2", "config": {"vocab_size": 512, "n_positions": 256,
   "n_embd": 32, "n_layer": 2, "n_head": 4, "attn_pdrop": 0, "embd_pdrop": 0, "resid_pdrop": 0}},
 "data": {"format": "alpaca", "path": "$2", "tokenizer": "bpe", "tokenizer_path": "$bpe",
   "seq_len": 240, "model_max_length": 200, "eos_token": "<|endoftext|>", "pad_token": "eos"},
 "train": {"steps": 3, "batch_size": 1, "gradient_accumulation_steps": $3, "lr": 1e-3, "seed": 3}}
EOF
}
# loss_of STEP: the loss of STEP in the last `show`
loss_of() { awk -v s="$1" '$1 == s { print $2 }' "$T/out"; }

echo "labelled rows only: every step's loss is finite"
scenario a "$T/a.jsonl" 1
expect 0 "run on record A" -- "$H" run "$T/a.json" --db "$T/a.db"
expect 0 "show" -- "$H" show 1 --db "$T/a.db"
grep -q '^status  *ok' "$T/out" && pass || fail "record A alone: not ok: $(grep '^status' "$T/out")"

echo "step 2 has no label: loss NaN at step 2, diverged, the micro-batch named"
scenario ab "$T/ab.jsonl" 1
expect 1 "run on A then B" -- "$H" run "$T/ab.json" --db "$T/ab.db"
expect 0 "show" -- "$H" show 1 --db "$T/ab.db"
grep -q '^status  *diverged' "$T/out" && pass || fail "status: $(grep '^status' "$T/out")"
l1=$(loss_of 1); l2=$(loss_of 2)
case "$l1" in ''|*nan*|*inf*) fail "step 1 (record A) loss not finite: '$l1'" ;; *) pass ;; esac
[ "$l2" = nan ] && pass || fail "step 2 (record B, no label) loss '$l2', want nan"
[ -z "$(loss_of 3)" ] && pass || fail "a step after the NaN was run"
grep -qF "at step 2: micro-batch 1 of rank 0 has every label -100" "$T/out" && pass \
  || fail "the error does not name the unlabelled micro-batch: $(grep -i error "$T/out")"

echo "accumulated with a labelled micro-batch: the step's loss is still NaN (loss / accumulation)"
scenario ab2 "$T/ab.jsonl" 2
expect 1 "run A+B in one step" -- "$H" run "$T/ab2.json" --db "$T/ab2.db"
expect 0 "show" -- "$H" show 1 --db "$T/ab2.db"
[ "$(loss_of 1)" = nan ] && pass || fail "step 1 of A+B loss '$(loss_of 1)', want nan"
grep -qF "at step 1: micro-batch 2 of rank 0 has every label -100" "$T/out" && pass \
  || fail "the error does not name micro-batch 2: $(grep -i error "$T/out")"

if "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "transformers' loss on record B's batch is NaN too"
  scenario b "$T/b.jsonl" 1
  expect 0 "init" -- "$H" init "$T/b.json" "$T/init"
  expect 0 "transformers' loss" -- "$PY" "$SRC/tools/alpaca_loss.py" --init "$T/init" \
    --data "$T/b.jsonl" --tokenizer "$bpe" --model-max-length 200 --batch 1
  [ "$(tail -1 "$T/out")" = nan ] && pass || fail "transformers' loss on record B: $(tail -1 "$T/out")"
else
  echo "transformers' part skipped: no Python with torch and transformers at $PY"
fi
finish
