#!/usr/bin/env bash
# tests/test_callback_device.sh: workloads/harness_callback.py names the device the training
# runs on, not the first accelerator torch has: on a (mocked) GPU host, a model on the CPU, or
# hf_causal_lm.py --device cpu, reports the CPU's name, type and the host's memory in HARNESS_META
# and HARNESS_STEP; a model on the GPU reports the GPU. And a real Trainer with
# include_num_input_tokens_seen under exec, with and without HarnessCallback. Needs torch +
# transformers (BUILD/venv or HARNESS_PYTHON): skipped without. usage: HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "test_callback_device: skipped: no Python with torch and transformers at $PY"
  exit 77
fi
# fake_gpu.py: torch.cuda made to look like a GPU host (one "Fake GPU 9" of 456 bytes whose
# peak is 123) to the workload scripts (torch's own code, as the optimizer's, sees the truth),
# then runs the script named by argv[1] with the rest of argv
cat > "$T/fake_gpu.py" <<'P'
import runpy, sys
import torch
class Props:
    total_memory = 456
real_is_available = torch.cuda.is_available
def is_available():
    caller = sys._getframe(1).f_globals.get("__name__", "")
    return caller in ("harness_callback", "__main__", "<run_path>") or real_is_available()
torch.cuda.is_available = is_available
torch.cuda.current_device = lambda: 0
torch.cuda.device_count = lambda: 1
torch.cuda.get_device_name = lambda idx=None: "Fake GPU 9"
torch.cuda.get_device_properties = lambda idx=None: Props()
torch.cuda.max_memory_allocated = lambda idx=None: 123
torch.cuda.set_device = lambda idx: None
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
P
# the callback itself, on a model on the CPU and on the (fake) GPU
cat > "$T/callback.py" <<'P'
import json, os, sys, types
sys.path.insert(0, sys.argv[1])
import torch
import harness_callback as hc
host_total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
for dev in ("cpu", torch.device("cpu")):
    meta = hc.describe_device(torch, dev)
    print("DESCRIBE", json.dumps({"type": meta["device_type"], "name": meta["device_name"],
                                  "total": meta["mem_total_bytes"], "driver": meta.get("driver")}))
    print("MEMORY", json.dumps(list(hc.memory(torch, dev))))
print("GPU", json.dumps(hc.describe_device(torch, "cuda:0")["device_name"]), json.dumps(list(hc.memory(torch, "cuda:0"))))
print("HOST", json.dumps({"total": host_total, "cpu": hc.cpu_name()}))
cb = hc.HarnessCallback(tokens_per_step=8)
args = types.SimpleNamespace(world_size=1, device=torch.device("cuda", 0))
state = types.SimpleNamespace(global_step=0, num_input_tokens_seen=None)
cb.on_train_begin(args, state, None, model=torch.nn.Linear(2, 2))
state.global_step = 1
cb.on_log(args, state, None, logs={"loss": 2.5, "learning_rate": 1e-3, "grad_norm": 1.0})
P
expect 0 "the callback under a fake GPU" -- "$PY" "$T/fake_gpu.py" "$T/callback.py" "$SRC/workloads"
cp "$T/out" "$T/cb.out"
host_total=$(sed -n 's/^HOST {"total": \([0-9]*\).*/\1/p' "$T/cb.out")
cpu=$(sed -n 's/^HOST {.*"cpu": \(".*"\)}$/\1/p' "$T/cb.out")
[ -n "$host_total" ] && [ "$host_total" -gt 1000 ] && pass || fail "the host's memory: $(grep HOST "$T/cb.out")"
[ "$(grep -c '^DESCRIBE {"type": "cpu", "name": '"$cpu"', "total": '"$host_total"', "driver": null}$' "$T/cb.out")" = 2 ] \
  && pass || fail "describe_device(cpu) on a GPU host: $(grep DESCRIBE "$T/cb.out")"
[ "$(grep -c "^MEMORY \[[1-9][0-9]*, $host_total\]$" "$T/cb.out")" = 2 ] \
  && pass || fail "memory(cpu) on a GPU host is not the host's: $(grep MEMORY "$T/cb.out")"
grep -qx 'GPU "Fake GPU 9" \[123, 456\]' "$T/cb.out" && pass || fail "the GPU when asked for: $(grep '^GPU' "$T/cb.out")"
grep -q '^HARNESS_META .*"device_type":"cpu"' "$T/cb.out" && grep -q "^HARNESS_META .*\"mem_total_bytes\":$host_total" "$T/cb.out" \
  && ! grep -q 'Fake GPU' <(grep '^HARNESS_' "$T/cb.out") && pass || fail "HarnessCallback with a CPU model: $(grep HARNESS_META "$T/cb.out")"
grep -q "^HARNESS_STEP .*\"mem_total_bytes\":$host_total" "$T/cb.out" && pass || fail "HARNESS_STEP memory of a CPU model: $(grep HARNESS_STEP "$T/cb.out")"

echo "hf_causal_lm.py --device cpu on a (fake) GPU host records the CPU"
expect 0 "init" -- "$H" init "$SRC/scenarios/gpt2-tiny.json" "$T/init"
expect 0 "exec hf_causal_lm --device cpu under a fake GPU" -- timeout $((300 * SLOW)) "$H" exec --device pytorch-cpu --db "$T/x.db" \
  -- "$PY" "$T/fake_gpu.py" "$SRC/workloads/hf_causal_lm.py" --scenario "$SRC/scenarios/gpt2-tiny.json" --init "$T/init" --threads 1 --device cpu --steps 2
says "ok, 2 steps"
[ "$(sqlite3 "$T/x.db" "select value from run_extra where key = 'device_type'")" = cpu ] && pass \
  || fail "device_type: $(sqlite3 "$T/x.db" "select value from run_extra where key = 'device_type'")"
[ "$(sqlite3 "$T/x.db" "select device_name from runs")" = "$(echo "$cpu" | sed 's/^"//; s/"$//')" ] && pass \
  || fail "device name: $(sqlite3 "$T/x.db" "select device_name from runs")"
[ "$(sqlite3 "$T/x.db" "select count(*) from steps where mem_total_bytes = $host_total")" = 2 ] && pass \
  || fail "the steps' total memory is not the host's: $(sqlite3 "$T/x.db" "select mem_total_bytes from steps")"

echo "a real Trainer with include_num_input_tokens_seen (logging_steps=2) under exec"
cat > "$T/trainer.py" <<'P'
import sys
sys.path.insert(0, sys.argv[1])
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=16, n_layer=1, n_head=2, n_positions=32))
data = [{"input_ids": torch.randint(0, 64, (16,)), "labels": torch.randint(0, 64, (16,))} for _ in range(24)]
args = TrainingArguments(output_dir=sys.argv[2], per_device_train_batch_size=4, max_steps=6,
                         logging_steps=2, report_to=[], save_strategy="no", use_cpu=True,
                         include_num_input_tokens_seen=True)
callbacks = []
if sys.argv[3] == "callback":
    from harness_callback import HarnessCallback
    callbacks = [HarnessCallback()]
Trainer(model=model, args=args, train_dataset=data, callbacks=callbacks).train()
P
for how in plain callback; do
  expect 0 "exec a tokens-seen Trainer ($how)" -- timeout $((300 * SLOW)) "$H" exec --device pytorch-cpu --db "$T/tr.db" \
    -- "$PY" "$T/trainer.py" "$SRC/workloads" "$T/out-$how" "$how"
  says "ok, 3 steps"
  # the summary dict's train_runtime, as the log printed it, is the run's
  want=$(grep -o "{'train_runtime': '[0-9.e+-]*', 'train_samples_per_second'" "$T/out" | sed "s/.*'train_runtime': '\([^']*\)'.*/\1/")
  got=$(sqlite3 "$T/tr.db" "select value from run_extra where key = 'trainer_train_runtime' and run_id = (select max(id) from runs)")
  [ -n "$want" ] && awk -v a="$want" -v b="$got" 'BEGIN { exit !(a + 0 == b + 0) }' && pass \
    || fail "$how: trainer_train_runtime $got, the summary's $want"
done
finish
