#!/usr/bin/env bash
# tests/test_llama_sft.sh: the llama family on Alpaca SFT data, end to end: a tiny Qwen2 with the
# Qwen2-style byte-level BPE and a tiny Mixtral with the Llama-2-style BPE (BOS, byte fallback)
# train on tests/data/sft/alpaca.json with right padding and prompt labels -100; step 1's loss
# equals transformers' on the very batch the harness trained on (attention mask given), that part
# skipped without Python. usage: test_llama_sft.sh HARNESS SRC
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
# scenario NAME MODEL_TYPE TOKENIZER_DIR EXTRA_CONFIG EXTRA_DATA: a tiny model on the Alpaca
# fixture, NAME.json with the config inline, NAME-dir.json on the directory harness init writes
scenario() {
  model "$1" "{\"family\": \"llama\", \"config\": {\"model_type\": \"$2\", \"vocab_size\": 768,
   \"hidden_size\": 64, \"intermediate_size\": 96, \"num_hidden_layers\": 2,
   \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"max_position_embeddings\": 320,
   \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000.0 $4}}" "$3" "$5"
  model "$1-dir" "{\"family\": \"llama\", \"path\": \"$T/$1-init\", \"weights\": \"pretrained\"}" "$3" "$5"
}
# model FILE MODEL_JSON TOKENIZER_DIR EXTRA_DATA
model() {
  cat >"$T/$1.json" <<JSON
{"name": "${1%-dir}",
 "model": $2,
 "data": {"format": "alpaca", "path": "$SRC/tests/data/sft/alpaca.json", "tokenizer": "bpe",
          "tokenizer_path": "$SRC/tests/data/hf/llama/$3", "seq_len": 320 $4},
 "train": {"steps": 3, "batch_size": 4, "lr": 1e-3, "warmup_steps": 0, "schedule": "constant",
           "weight_decay": 0.0, "clip": 1.0, "seed": 7}}
JSON
}
scenario qwen2-sft qwen2 qwen2 ', "tie_word_embeddings": true' ''
scenario mixtral-sft mixtral llama2 ', "num_local_experts": 4, "num_experts_per_tok": 2, "output_router_logits": true, "router_aux_loss_coef": 0.02, "tie_word_embeddings": false' ', "pad_token": "unk"'
declare -A ARCH=([qwen2-sft]=Qwen2ForCausalLM [mixtral-sft]=MixtralForCausalLM)
for v in qwen2-sft mixtral-sft; do
  echo "$v: harness init, then 3 steps on the Alpaca records from that directory"
  expect 0 "$v init" -- "$H" init "$T/$v.json" "$T/$v-init"
  expect 0 "$v run" -- "$H" run "$T/$v-dir.json" --db "$T/sft.db" --dump-batches "$T/$v.batches"
  cp "$T/out" "$T/$v.out"
  [ "$(grep -c '^step ' "$T/$v.out")" = 3 ] && pass || fail "$v: 3 steps"
  grep -q '"attention_mask":\[' "$T/$v.batches" && pass || fail "$v: the batch has no attention mask"
  grep -q '"attention_mask":\[[^]]*,0' "$T/$v.batches" && pass || fail "$v: no padding in the batch"
  grep -q -- '-100' "$T/$v.batches" && pass || fail "$v: no label is -100"
done
expect 0 "mixtral-sft show" -- "$H" show 2 --db "$T/sft.db" --json
grep -q '"expert_tokens"' "$T/out" && pass || fail "mixtral-sft: no expert counts recorded"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "test_llama_sft: transformers checks skipped: no Python with torch and transformers at $PY"
  finish; exit $?
fi
for v in qwen2-sft mixtral-sft; do
  echo "transformers: ${ARCH[$v]} on the harness's step-1 batch"
  loss1="$(grep '^step ' "$T/$v.out" | head -1 | awk '{print $4}')"
  expect 0 "$v: step-1 loss in transformers" -- "$PY" -c '
import json, sys, torch, transformers
cls = getattr(transformers, sys.argv[2])
m = cls.from_pretrained(sys.argv[1], torch_dtype=torch.float32).eval()
b = json.loads(open(sys.argv[3]).readline())
shape = (b["B"], b["T"])
ids = torch.tensor(b["input_ids"]).view(shape)
mask = torch.tensor(b["attention_mask"]).view(shape)
labels = torch.tensor(b["labels"]).view(-1)  # the harness shifts labels in its batches
out = m(ids, attention_mask=mask, output_router_logits=m.config.model_type == "mixtral")
loss = torch.nn.functional.cross_entropy(out.logits.view(-1, out.logits.shape[-1]).float(), labels,
                                         ignore_index=-100)
if m.config.model_type == "mixtral":
    from transformers.models.mixtral.modeling_mixtral import load_balancing_loss_func
    aux = load_balancing_loss_func(out.router_logits, m.config.num_local_experts,
                                   m.config.num_experts_per_tok, mask)
    loss = loss + m.config.router_aux_loss_coef * aux
want = float(sys.argv[4])
print("transformers", loss.item(), "harness", want)
sys.exit(0 if abs(loss.item() - want) <= 1e-5 * abs(want) else 1)' "$T/$v-init" "${ARCH[$v]}" "$T/$v.batches" "$loss1"
  sed 's/^/    /' "$T/out"
done
finish
