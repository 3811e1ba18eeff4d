#!/usr/bin/env bash
# tests/test_workload_accumulation.sh: workloads/hf_causal_lm.py trains train.gradient_accumulation_steps
# as `harness run` does (micro-batches of batch_size rows in the native loader's order, gradients
# summed over the count, the step's loss their mean, tokens batch x accumulation x seq_len): from
# the same `harness init` weights its run passes --compare against the harness's, with the same
# tokens per step; also where the micro-batches wrap around the data (a second epoch). Needs
# torch + transformers (BUILD/venv or HARNESS_PYTHON): skipped without. usage: HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "test_workload_accumulation: skipped: no Python with torch and transformers at $PY"
  exit 77
fi
W="${TEST_WORKLOAD_SCRIPT:-$SRC/workloads/hf_causal_lm.py}"  # TEST_WORKLOAD_SCRIPT: another copy to check
db="$T/x.db"
q() { sqlite3 "$db" "$1"; }
# scenario NAME ACCUM BATCH STEPS DATA: gpt2-tiny with those train settings, the data's absolute path
scenario() {
  "$PY" - "$SRC/scenarios/gpt2-tiny.json" "$T/$1.json" "$2" "$3" "$4" "$5" <<'P'
import json, sys
src, out, accum, batch, steps, data = sys.argv[1:]
s = json.load(open(src))
s["name"] = "gpt2-tiny-accum"
s["train"].update({"gradient_accumulation_steps": int(accum), "batch_size": int(batch), "steps": int(steps)})
s["data"]["path"] = data
json.dump(s, open(out, "w"))
P
}
head -c 700 "$SRC/scenarios/data/corpus.txt" > "$T/small.txt"  # 10 blocks of 64
scenario ga2 2 8 3 "$SRC/scenarios/data/corpus.txt"
scenario wrap 3 2 3 "$T/small.txt"  # 18 rows of 10 blocks: step 2's micro-batches wrap around
for sc in ga2 wrap; do
  echo "$sc: harness run, then hf_causal_lm.py under exec --compare against it"
  expect 0 "init $sc" -- "$H" init "$T/$sc.json" "$T/init-$sc"
  expect 0 "harness run $sc" -- "$H" run "$T/$sc.json" --device cpu --db "$db" --quiet
  ref=$(q "select max(id) from runs")
  expect 0 "exec hf_causal_lm.py $sc --compare" -- timeout $((300 * SLOW)) "$H" exec --scenario "$T/$sc.json" \
    --device pytorch-cpu --db "$db" --compare --baseline "$ref" \
    -- "$PY" "$W" --scenario "$T/$sc.json" --init "$T/init-$sc" --threads 1 --device cpu
  grep -q '^verdict: pass' "$T/err" "$T/out" && pass || fail "$sc: $(grep -E '^(loss|grad_norm|verdict)' "$T/err" "$T/out")"
  got=$(q "select max(id) from runs")
  # every step's tokens as the harness counted them, and its loss within the scenario's tolerance
  same=$(q "select count(*) from steps a join steps b on a.step = b.step where a.run_id = $got and b.run_id = $ref and a.tokens = b.tokens")
  [ "$same" = "$(q "select count(*) from steps where run_id = $ref")" ] && [ "$same" -gt 0 ] && pass \
    || fail "$sc: tokens per step $(q "select group_concat(tokens) from steps where run_id = $got"), the harness's $(q "select group_concat(tokens) from steps where run_id = $ref")"
done
finish
