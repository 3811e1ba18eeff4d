#!/usr/bin/env bash
# tests/test_bert_hf_dir.sh: the bert family's Hugging Face directories: `harness init` and
# `run --save` of bert-tiny write a BertForMaskedLM directory that the harness loads back and
# transformers loads with no missing or unexpected keys (that part skipped without the venv).
# usage: test_bert_hf_dir.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
tiny="$SRC/scenarios/bert-tiny.json"
data="$SRC/scenarios/data"
echo "harness init and run --save of bert-tiny"
expect 0 "init" -- "$H" init "$tiny" "$T/init"
expect 0 "run --save" -- "$H" run "$tiny" --steps 3 --db "$T/x.db" --save "$T/saved" --quiet
for d in init saved; do
  grep -q '"model_type": "bert"' "$T/$d/config.json" && pass || fail "$d: model_type bert"
  grep -q '"BertForMaskedLM"' "$T/$d/config.json" && pass || fail "$d: architectures"
done
# a scenario on a model directory; $1 the directory, $2 extra data keys
scenario() {
  cat <<JSON
{"name": "bert-dir", "model": {"family": "bert", "path": "$1", "weights": "pretrained"},
 "data": {"path": "$data/corpus.txt", "tokenizer": "wordpiece",
          "tokenizer_path": "$data/wordpiece/tokenizer.json", "seq_len": 64 $2},
 "train": {"steps": 1, "batch_size": 8, "lr": 1e-3, "seed": 123}}
JSON
}
echo "the saved directory loads back and trains (model.path, weights pretrained)"
scenario "$T/saved" ', "objective": "mlm"' >"$T/again.json"
expect 0 "run on the saved weights" -- "$H" run "$T/again.json" --db "$T/y.db"
grep -q "run 1: ok, 1 steps" "$T/out" && pass || fail "a run on the saved directory"
echo "a bert scenario without data.objective mlm is refused"
scenario "$T/saved" '' >"$T/clm.json"
expect 2 "bert with clm" -- "$H" run "$T/clm.json" --db "$T/z.db"
says 'the bert family trains masked LM'
[ ! -e "$T/z.db" ] && pass || fail "the refused run created the store"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "test_bert_hf_dir: transformers checks skipped: no Python with torch and transformers at $PY"
  finish; exit $?
fi
for d in init saved; do
  echo "transformers: BertForMaskedLM.from_pretrained($d)"
  expect 0 "from_pretrained $d" -- "$PY" -c '
import sys
from transformers import BertForMaskedLM
m, info = BertForMaskedLM.from_pretrained(sys.argv[1], output_loading_info=True)
bad = {k: v for k, v in info.items() if v}
print("loading info:", bad or "no missing or unexpected keys")
sys.exit(1 if bad else 0)' "$T/$d"
  grep -q "no missing or unexpected keys" "$T/out" && pass || fail "$d: $(cat "$T/out")"
done
finish
