#!/usr/bin/env bash
# tests/test_workload_refusals.sh: workloads/hf_causal_lm.py refuses by name (exit 2, no
# traceback) the scenarios it would train another way than `harness run`: other data formats and
# masked LM. usage: test_workload_refusals.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "test_workload_refusals: skipped: no Python with torch and transformers at $PY"
  exit 77
fi
W="$SRC/workloads/hf_causal_lm.py"
"$PY" - "$SRC/scenarios/gpt2-tiny.json" "$T" <<'EOF2'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
s = json.load(open(src))
s["data"]["path"] = os.path.join(os.path.dirname(src), s["data"]["path"])
for name, change in (("alpaca", {"format": "alpaca"}), ("megatron", {"format": "megatron"}),
                     ("mlm", {"objective": "mlm"})):
    d = json.loads(json.dumps(s)); d["data"].update(change)
    json.dump(d, open(os.path.join(out, name + ".json"), "w"))
EOF2
for kind in alpaca megatron mlm; do
  expect 2 "hf_causal_lm refuses $kind" -- "$PY" "$W" --scenario "$T/$kind.json" --device cpu
  says "train it with \`harness run\`"
  grep -q Traceback "$T/err" && fail "$kind: a traceback instead of a message" || pass
done
finish
