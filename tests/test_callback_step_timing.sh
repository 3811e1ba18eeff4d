#!/usr/bin/env bash
# tests/test_callback_step_timing.sh: HarnessCallback's step_ms is the wall time of the training
# steps only: a real Trainer that evaluates (slowly) and saves a checkpoint after every step,
# under harness exec; no step may carry the evaluation's or the save's time. Needs torch +
# transformers (BUILD/venv or HARNESS_PYTHON): skipped without. usage: HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "test_callback_step_timing: skipped: no Python with torch and transformers at $PY"
  exit 77
fi
# where harness_callback.py is (TEST_WORKLOADS_DIR: another copy, to check this test against it)
WORKLOADS="${TEST_WORKLOADS_DIR:-$SRC/workloads}"
# the Trainer's evaluate and checkpoint save each sleep PAUSE seconds (and say how long they
# took, measured here), after every step; the training steps of the tiny GPT-2 take milliseconds
cat > "$T/trainer.py" <<'P'
import sys, time
sys.path.insert(0, sys.argv[1])
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
from harness_callback import HarnessCallback
PAUSE = float(sys.argv[3])
class SlowTrainer(Trainer):
    def evaluate(self, *a, **k):
        t0 = time.perf_counter(); time.sleep(PAUSE)
        print("EVAL_MS %.3f" % ((time.perf_counter() - t0) * 1000.0), flush=True)
        return {"eval_loss": 1.0}
    def _save_checkpoint(self, *a, **k):
        t0 = time.perf_counter(); time.sleep(PAUSE)
        print("SAVE_MS %.3f" % ((time.perf_counter() - t0) * 1000.0), flush=True)
torch.manual_seed(0)
torch.set_num_threads(1)
model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2))
data = [{"input_ids": torch.randint(0, 64, (16,)), "labels": torch.randint(0, 64, (16,))} for _ in range(16)]
args = TrainingArguments(output_dir=sys.argv[2], per_device_train_batch_size=2, max_steps=4,
                         logging_steps=1, eval_strategy="steps", eval_steps=1,
                         save_strategy="steps", save_steps=1, report_to=[], use_cpu=True)
SlowTrainer(model=model, args=args, train_dataset=data, eval_dataset=data,
            callbacks=[HarnessCallback(tokens_per_step=32)]).train()
P
pause=$SLOW  # seconds; a step of this model takes milliseconds, also on a loaded machine
echo "Trainer evaluating and saving after every step: step_ms holds neither"
expect 0 "exec a Trainer that evaluates and saves each step" -- timeout $((300 * SLOW)) "$H" exec --device pytorch-cpu --db "$T/x.db" \
  -- "$PY" "$T/trainer.py" "$WORKLOADS" "$T/trainer-out" "$pause"
says "ok, 4 steps"
# what the pauses took, as the script measured them (the shortest of each kind)
eval_ms=$(sed -n 's/^EVAL_MS //p' "$T/out" | sort -n | head -1)
save_ms=$(sed -n 's/^SAVE_MS //p' "$T/out" | sort -n | head -1)
[ "$(grep -c '^EVAL_MS ' "$T/out")" -ge 3 ] && [ "$(grep -c '^SAVE_MS ' "$T/out")" -ge 3 ] && pass \
  || fail "the Trainer did not evaluate and save after each step: $(grep -c '^EVAL_MS ' "$T/out") evals, $(grep -c '^SAVE_MS ' "$T/out") saves"
# each step after the first followed an evaluation and a save: its step_ms must be below
# either pause alone (a step of this model takes milliseconds)
q="select count(*) from steps where step >= 2 and step_ms < min($eval_ms, $save_ms) and step_ms > 0"
[ "$(sqlite3 "$T/x.db" "$q")" = 3 ] && pass \
  || fail "step_ms counts the evaluation ($eval_ms ms) or the save ($save_ms ms): $(sqlite3 "$T/x.db" "select group_concat(step || ':' || step_ms, ' ') from steps")"
# tokens/s follows the training time: tokens / step_ms
[ "$(sqlite3 "$T/x.db" "select count(*) from steps where abs(tokens_per_s - tokens / (step_ms / 1000.0)) <= 1e-6 * tokens_per_s")" = 4 ] \
  && pass || fail "tokens/s is not tokens / step_ms: $(sqlite3 "$T/x.db" "select group_concat(step || ':' || tokens_per_s, ' ') from steps")"
finish
