#!/usr/bin/env bash
# tests/test_workloads.sh: workloads/ as a user runs them: hf_causal_lm.py's --help, scenarios whose
# model is a config folder or a local HF directory (its override_config.json applied), data too
# small for a block, and HarnessCallback in a real Trainer under `harness exec`. Needs the venv of
# tools/pyenv.sh (BUILD/venv) or HARNESS_PYTHON: skipped without. usage: HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "test_workloads: skipped: no Python with torch and transformers at $PY"
  exit 77
fi
W="$SRC/workloads/hf_causal_lm.py"
db="$T/x.db"

echo "hf_causal_lm.py --help shows its whole usage"
expect 0 "--help" -- "$PY" "$W" --help
grep -q "What it does" "$T/out" && grep -q "override_config.json" "$T/out" && pass \
  || fail "--help lacks the description"

echo "a scenario whose config_path is a folder holding config.json (1 step, PyTorch CPU)"
mkdir -p "$T/s/gpt2-tiny"
cp "$SRC/tests/data/scenarios/gpt2-tiny/config.json" "$SRC/tests/data/scenarios/gpt2-tiny/override_config.json" "$T/s/gpt2-tiny/"
cp "$SRC/scenarios/data/corpus.txt" "$T/s/corpus.txt"
cat > "$T/s/folder.json" <<'J'
{"name": "config-folder", "model": {"family": "gpt2", "config_path": "gpt2-tiny",
 "overrides_path": "gpt2-tiny/override_config.json"},
 "data": {"path": "corpus.txt", "seq_len": 32}, "train": {"steps": 2, "batch_size": 1, "lr": 1e-3}}
J
expect 0 "init folder" -- "$H" init "$T/s/folder.json" "$T/init"
expect 0 "exec folder scenario" -- timeout $((300 * SLOW)) "$H" exec --scenario "$T/s/folder.json" --device pytorch-cpu --db "$db" \
  -- "$PY" "$W" --scenario "$T/s/folder.json" --init "$T/init" --threads 1 --device cpu
says "ok, 2 steps"

echo "without --init: the scenario's family and model_type, not a GPT-2 (llama-tiny, 1 step)"
expect 0 "exec llama-tiny without --init" -- timeout $((300 * SLOW)) "$H" exec --scenario "$SRC/scenarios/llama-tiny.json" --device pytorch-cpu --db "$db" \
  -- "$PY" "$W" --scenario "$SRC/scenarios/llama-tiny.json" --threads 1 --device cpu --steps 1
grep -q "HARNESS_META .*\"model_class\":\"LlamaForCausalLM\"" "$T/out" && pass || fail "llama-tiny without --init did not build LlamaForCausalLM: $(grep -o '"model_class":"[A-Za-z0-9]*"' "$T/out")"

echo "a scenario naming a local HF directory: its override_config.json switches dropout off"
mkdir -p "$T/s/hfdir"
cp "$T/init/model.safetensors" "$T/s/hfdir/"
cp "$SRC/tests/data/scenarios/gpt2-tiny/config.json" "$SRC/tests/data/scenarios/gpt2-tiny/override_config.json" "$T/s/hfdir/"
cat > "$T/s/hfdir.json" <<'J'
{"name": "hf-dir", "model": {"family": "gpt2", "path": "hfdir"},
 "data": {"path": "corpus.txt", "seq_len": 32}, "train": {"steps": 3, "batch_size": 1, "lr": 1e-3}}
J
expect 0 "harness run hf dir" -- "$H" run "$T/s/hfdir.json" --device cpu --db "$db" --quiet
ref=$(sqlite3 "$db" "select max(id) from runs")
expect 0 "exec hf dir scenario" -- timeout $((300 * SLOW)) "$H" exec --scenario "$T/s/hfdir.json" --device pytorch-cpu --db "$db" \
  -- "$PY" "$W" --scenario "$T/s/hfdir.json" --threads 1 --device cpu
says "ok, 3 steps"
got=$(sqlite3 "$db" "select max(id) from runs")
expect 0 "PyTorch on the HF dir matches the harness (dropout off)" -- "$H" compare "$got" --baseline "$ref" --db "$db"
grep -q '^verdict: pass' "$T/out" && pass || fail "verdict: $(grep verdict "$T/out")"

echo "data smaller than one block: a message and exit 1, not a hang"
printf 'too short' > "$T/s/short.txt"
sed 's/corpus.txt/short.txt/' "$T/s/folder.json" > "$T/s/short.json"
expect 1 "too little data" -- timeout $((120 * SLOW)) "$PY" "$W" --scenario "$T/s/short.json" --device cpu --threads 1
says "do not fill one block"

echo "HarnessCallback in a real Trainer (a small GPT-2 built here, no hub) under harness exec"
cat > "$T/trainer.py" <<'P'
import sys
sys.path.insert(0, sys.argv[1])
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
from harness_callback import HarnessCallback
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2))
data = [{"input_ids": torch.randint(0, 64, (16,)), "labels": torch.randint(0, 64, (16,))} for _ in range(16)]
args = TrainingArguments(output_dir=sys.argv[2], per_device_train_batch_size=2, max_steps=5,
                         logging_steps=1, report_to=[], save_strategy="no", use_cpu=True)
Trainer(model=model, args=args, train_dataset=data,
        callbacks=[HarnessCallback(tokens_per_step=32)]).train()
P
expect 0 "exec Trainer + HarnessCallback" -- timeout $((300 * SLOW)) "$H" exec --device pytorch-cpu --db "$db" \
  -- "$PY" "$T/trainer.py" "$SRC/workloads" "$T/trainer-out"
says "ok, 5 steps"
says "format harness"
run=$(sqlite3 "$db" "select max(id) from runs")
[ "$(sqlite3 "$db" "select count(*) from steps where run_id = $run and tokens = 32 and tokens_per_s > 0 and mem_peak_bytes > 0")" = 5 ] \
  && pass || fail "each step has tokens, tokens/s and memory: $(sqlite3 "$db" "select * from steps where run_id = $run")"
finish
