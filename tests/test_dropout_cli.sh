#!/usr/bin/env bash
# tests/test_dropout_cli.sh: dropout 0.1 end to end through `harness run` and `harness compare`:
# gpt2-tiny and bert-tiny on cpu and opencl draw the same Philox masks, so the opencl run passes
# against the cpu run within the fp32 tolerance, and dropout really changes the losses.
# usage: test_dropout_cli.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
if ! "$H" devices 2>/dev/null | grep -q '^opencl'; then
  echo "SKIP: no OpenCL device to compare with cpu"; exit 77
fi
# NAME KEY... : the shipped scenario with each dropout KEY set to 0.1, data path made absolute
with_dropout() {
  local name="$1"; shift
  local expr="s#\"data/#\"$SRC/scenarios/data/#g"
  for k in "$@"; do expr="$expr; s/\"$k\": 0.0/\"$k\": 0.1/"; done
  sed -e "$expr" "$SRC/scenarios/$name.json" >"$T/$name-drop.json"
}
with_dropout gpt2-tiny attn_pdrop embd_pdrop resid_pdrop
with_dropout bert-tiny hidden_dropout_prob attention_probs_dropout_prob
n=0
for s in gpt2-tiny bert-tiny; do
  echo "$s with dropout 0.1: cpu, then opencl compared with it"
  expect 0 "$s cpu" -- "$H" run "$T/$s-drop.json" --device cpu --db "$T/d.db" --quiet
  expect 0 "$s opencl" -- "$H" run "$T/$s-drop.json" --device opencl --db "$T/d.db" --quiet
  expect 0 "$s without dropout" -- "$H" run "$SRC/scenarios/$s.json" --device cpu --db "$T/d.db" --quiet
  cpu=$((n + 1)); ocl=$((n + 2)); plain=$((n + 3)); n=$((n + 3))
  expect 0 "$s opencl vs cpu" -- "$H" compare "$ocl" --baseline "$cpu" --db "$T/d.db"
  grep -E '^(loss|verdict)' "$T/out"
  grep -q '^verdict: pass' "$T/out" && pass || fail "$s: opencl with dropout within the fp32 tolerance of cpu"
  expect 1 "$s dropout changes the losses" -- "$H" compare "$plain" --baseline "$cpu" --force --db "$T/d.db"
  grep -q '^verdict: fail' "$T/out" && pass || fail "$s: dropout 0.1 left the losses as without"
done
# ---- each micro-batch of a step draws its own masks: on one 16-byte block, accumulation 2
# differs from accumulation 1 (the same row twice with the same masks gave the same step), and
# opencl draws as cpu does
printf 'abcdefghijklmnop' >"$T/one.txt"
for A in 1 2; do
  cat >"$T/acc$A.json" <<EOF
{"name": "acc$A", "model": {"family": "gpt2", "config": {"vocab_size": 256, "n_positions": 32,
   "n_embd": 32, "n_layer": 2, "n_head": 2, "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1}},
 "data": {"path": "$T/one.txt", "tokenizer": "byte", "seq_len": 16},
 "train": {"steps": 2, "batch_size": 1, "lr": 1e-3, "seed": 1, "gradient_accumulation_steps": $A}}
EOF
  expect 0 "accumulation $A" -- "$H" run "$T/acc$A.json" --db "$T/acc.db"
  grep '^step ' "$T/out" | awk '{print $4, $6}' >"$T/acc$A.loss"
done
cmp -s "$T/acc1.loss" "$T/acc2.loss" && fail "accumulation 2 drew the same masks for both micro-batches" || pass
expect 0 "accumulation 2 on opencl" -- "$H" run "$T/acc2.json" --device opencl --compare --baseline 2 --db "$T/acc.db" --quiet
finish
