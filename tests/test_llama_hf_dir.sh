#!/usr/bin/env bash
# tests/test_llama_hf_dir.sh: the llama family's Hugging Face directories: `harness init` and
# `run --save` of llama-tiny, qwen2-tiny and mixtral-tiny write directories the harness loads back
# (model.path, weights pretrained, the same losses) and transformers loads with no missing or
# unexpected keys (that part skipped without the venv). usage: test_llama_hf_dir.sh HARNESS SRC
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
corpus="$SRC/scenarios/data/corpus.txt"
losses() { grep '^step ' "$1" | awk '{print $4}'; }
# scenario DIR NAME: the tiny scenarios' training on a model directory
scenario() {
  cat >"$T/$2.json" <<JSON
{"name": "$2", "model": {"family": "llama", "path": "$1", "weights": "pretrained"},
 "data": {"path": "$corpus", "tokenizer": "byte", "seq_len": 64},
 "train": {"steps": 40, "batch_size": 8, "lr": 3e-3, "warmup_steps": 5, "schedule": "cosine",
           "weight_decay": 0.1, "decay_all": true, "betas": [0.9, 0.999], "eps": 1e-8,
           "clip": 1.0, "seed": 123}}
JSON
}
declare -A ARCH=([llama]=LlamaForCausalLM [qwen2]=Qwen2ForCausalLM [mixtral]=MixtralForCausalLM)
for v in llama qwen2 mixtral; do
  tiny="$SRC/scenarios/$v-tiny.json"
  echo "$v: harness init and run --save"
  expect 0 "$v init" -- "$H" init "$tiny" "$T/$v-init"
  expect 0 "$v run --save" -- "$H" run "$tiny" --steps 3 --db "$T/$v.db" --save "$T/$v-saved"
  losses "$T/out" >"$T/$v-seeded"
  [ "$(wc -l <"$T/$v-seeded")" = 3 ] && pass || fail "$v: 3 step losses"
  for d in init saved; do
    grep -q "\"model_type\": \"$v\"" "$T/$v-$d/config.json" && pass || fail "$v $d: model_type"
    grep -q "\"${ARCH[$v]}\"" "$T/$v-$d/config.json" && pass || fail "$v $d: architectures"
  done
  echo "$v: the init directory trains exactly like the seeded scenario"
  scenario "$T/$v-init" "$v-dir"
  expect 0 "$v run on the init directory" -- "$H" run "$T/$v-dir.json" --steps 3 --db "$T/$v.db"
  losses "$T/out" | cmp -s - "$T/$v-seeded" && pass || fail "$v: losses from the directory differ"
  scenario "$T/$v-saved" "$v-again"
  expect 0 "$v run on the saved directory" -- "$H" run "$T/$v-again.json" --steps 1 --db "$T/$v.db"
done
grep -q '"lm_head.weight"' "$T/qwen2-init/model.safetensors" && fail "qwen2 (tied) saved lm_head" || pass
grep -q '"lm_head.weight"' "$T/llama-init/model.safetensors" && pass || fail "llama (untied) lacks lm_head"
grep -q 'block_sparse_moe.experts.3.w2.weight' "$T/mixtral-init/model.safetensors" && pass || fail "mixtral expert names"
# a checkpoint of more layers than the config keeps (seed 1's num_hidden_layers: 1 for
# mixtral-8x7B): the tensors of the dropped layers are skipped with one warning, as
# from_pretrained does; any other unknown tensor is still an error
for v in llama mixtral; do
  echo "$v: a 2-layer directory trained with num_hidden_layers 1"
  scenario "$T/$v-init" "$v-one"
  sed -i 's/"weights": "pretrained"}/"weights": "pretrained", "overrides": {"num_hidden_layers": 1}}/' "$T/$v-one.json"
  expect 0 "$v one layer of two" -- "$H" run "$T/$v-one.json" --steps 1 --db "$T/$v.db" --dump-batches "$T/$v-one.batches"
  cp "$T/out" "$T/$v-one.out"
  says "tensors of layers the config does not have were not used"
  says "layers.1."
done
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  echo "test_llama_hf_dir: transformers checks skipped: no Python with torch and transformers at $PY"
  finish; exit $?
fi
for v in llama qwen2 mixtral; do
  for d in init saved; do
    echo "transformers: ${ARCH[$v]}.from_pretrained($v-$d)"
    expect 0 "from_pretrained $v-$d" -- "$PY" -c '
import sys, torch, transformers
cls = getattr(transformers, sys.argv[2])
m, info = cls.from_pretrained(sys.argv[1], output_loading_info=True)
bad = {k: v for k, v in info.items() if v}
out = m(torch.tensor([[72, 101, 108, 108, 111]]))
ok = bool(torch.isfinite(out.logits).all())
print("loading info:", bad or "no missing or unexpected keys", "finite logits:", ok)
sys.exit(1 if bad or not ok else 0)' "$T/$v-$d" "${ARCH[$v]}"
    grep -q "no missing or unexpected keys finite logits: True" "$T/out" && pass || fail "$v-$d: $(cat "$T/out")"
  done
done
echo "transformers: LlamaForCausalLM.from_pretrained(llama-init, num_hidden_layers=1) on the harness's batch"
loss1="$(grep '^step ' "$T/llama-one.out" | awk '{print $4}')"
expect 0 "one-layer loss in transformers" -- "$PY" -c '
import json, sys, torch, transformers
m = transformers.LlamaForCausalLM.from_pretrained(sys.argv[1], num_hidden_layers=1)
b = json.loads(open(sys.argv[2]).readline())
ids = torch.tensor(b["input_ids"]).view(b["B"], b["T"])
labels = torch.tensor(b["labels"]).view(-1)  # the harness shifts the labels in its batches
logits = m(ids).logits.view(-1, m.config.vocab_size)
loss = torch.nn.functional.cross_entropy(logits.float(), labels, ignore_index=-100).item()
want = float(sys.argv[3])
print("transformers", loss, "harness", want)
sys.exit(0 if abs(loss - want) <= 1e-5 * abs(want) else 1)' "$T/llama-init" "$T/llama-one.batches" "$loss1"
finish
