#!/usr/bin/env bash
# tests/test_moe_pytorch.sh: HarnessCallback on a transformers Mixtral (a tiny config built here, no
# hub) under `harness exec`: its "expert_tokens" equal the experts the model's own routers chose,
# recorded per step, and show/compare read them. Needs torch + transformers (tools/pyenv.sh's
# BUILD/venv, or HARNESS_PYTHON): skipped without. usage: HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch; from transformers import MixtralConfig' 2>/dev/null; then
  echo "test_moe_pytorch: skipped: no Python with torch and transformers (Mixtral) at $PY"
  exit 77
fi
db="$T/x.db"
# The reference: a hook on every router (MixtralTopKRouter, model.model.layers[i].mlp.gate) keeps
# the expert indices the model itself routed with, printed as REF_ROUTING per step.
cat > "$T/trainer.py" <<'P'
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
from transformers import (MixtralConfig, MixtralForCausalLM, Trainer, TrainerCallback,
                          TrainingArguments)
from harness_callback import HarnessCallback
torch.manual_seed(0)
config = MixtralConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                       num_attention_heads=2, num_key_value_heads=1, num_local_experts=4,
                       num_experts_per_tok=2, max_position_embeddings=32,
                       output_router_logits=True, router_aux_loss_coef=0.02)
model = MixtralForCausalLM(config)
chosen = [[0] * 4 for _ in range(2)]
def keep(layer):
    def hook(module, inputs, output):
        if module.training:
            for e in output[2].reshape(-1).tolist():
                chosen[layer][e] += 1
    return hook
for i, block in enumerate(model.model.layers):
    block.mlp.gate.register_forward_hook(keep(i))
class Reference(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            print("REF_ROUTING %d %s" % (state.global_step, json.dumps(chosen, separators=(",", ":"))), flush=True)
            for row in chosen:
                row[:] = [0] * 4
data = [{"input_ids": torch.randint(0, 64, (16,)), "labels": torch.randint(0, 64, (16,))} for _ in range(12)]
args = TrainingArguments(output_dir=sys.argv[2], per_device_train_batch_size=2, max_steps=3,
                         logging_steps=1, report_to=[], save_strategy="no", use_cpu=True)
Trainer(model=model, args=args, train_dataset=data,
        callbacks=[HarnessCallback(tokens_per_step=32), Reference()]).train()
P
echo "a Mixtral Trainer with output_router_logits under harness exec"
expect 0 "exec" -- timeout $((300 * SLOW)) "$H" exec --device pytorch-cpu --db "$db" -- "$PY" "$T/trainer.py" "$SRC/workloads" "$T/out-dir"
says "ok, 3 steps"
grep -c '^HARNESS_STEP .*"expert_tokens":\[\[' "$T/out" | grep -qx 3 && pass || fail "not 3 steps with expert_tokens: $(grep HARNESS_STEP "$T/out" | head -3)"
cp "$T/out" "$T/log"
expect 0 "show --json" -- "$H" show 1 --db "$db" --json
tr -d ' \n' <"$T/out" >"$T/flat"
grep -qF '"moe":{"layers":2,"experts":4}' "$T/flat" && pass || fail "show: no moe shape"
for s in 1 2 3; do
  ref=$(grep "^REF_ROUTING $s " "$T/log" | cut -d' ' -f3)
  [ -n "$ref" ] || { fail "no reference for step $s"; continue; }
  # the router's own choices: each layer routes every token of the batch (2 x 16) twice (top-2)
  echo "$ref" | tr -d '[]' | awk -F, '{ if ($1+$2+$3+$4 != 64 || $5+$6+$7+$8 != 64) exit 1 }' \
    && pass || fail "step $s: reference counts do not sum to 64 per layer: $ref"
  grep -qF "\"step\":$s,\"loss\"" "$T/flat" && grep -qF "\"expert_tokens\":$ref" "$T/flat" \
    && pass || fail "step $s: stored counts differ from the routers' $ref"
done
expect 0 "compare with itself" -- "$H" compare 1 --baseline 1 --db "$db"
grep -q "^routing     3 steps compared (2 layers x 4 experts); identical counts" "$T/out" && pass \
  || fail "compare: $(grep routing "$T/out")"
finish
