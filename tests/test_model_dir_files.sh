#!/usr/bin/env bash
# tests/test_model_dir_files.sh: model directories the harness reads and writes: a dangling link
# where it looks for a file is refused, never taken for no file; weights holding NaN or infinity
# and layers spelt with leading zeros are refused; `dtype` is checked as a dtype under its name;
# init and run --save never write through a planted link and copy the tokenizer beside the weights.
# usage: test_model_dir_files.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
corpus="$SRC/scenarios/data/corpus.txt"
bpe512="$SRC/tests/data/hf/bpe512"
# scn NAME DIR DATA: a short GPT-2 (or, with DIR's config, BERT) run on the model directory DIR
scn() {
  cat >"$T/$1.json" <<EOF
{"name": "$1", "model": {"family": "${FAMILY:-gpt2}", "path": "$2"},
 "data": {"path": "$corpus", ${3:-\"tokenizer\": \"byte\"}, "seq_len": 32},
 "train": {"steps": 1, "batch_size": 2, "lr": 1e-3, "seed": 5}}
EOF
}
# refused NAME TEXT SCENARIO: exit 2 naming TEXT, and no store made
refused() {
  rm -f "$T/r.db"
  expect 2 "$1" -- "$H" run "$3" --db "$T/r.db"; says "$2"
  [ ! -e "$T/r.db" ] && pass || fail "$1: the refused run made the store"
}
expect 0 "init gpt2-tiny" -- "$H" init "$SRC/scenarios/gpt2-tiny.json" "$T/init"

echo "# a dangling link where a model directory names a file: refused, not skipped"
cp -r "$T/init" "$T/ovr"; ln -s "$T/nowhere.json" "$T/ovr/override_config.json"
scn ovr "$T/ovr"; refused "a dangling override_config.json" "override_config.json" "$T/ovr.json"
cp -r "$T/init" "$T/cfg"; rm "$T/cfg/config.json"; ln -s "$T/nowhere.json" "$T/cfg/config.json"
scn cfg "$T/cfg"; refused "a dangling config.json" "config.json" "$T/cfg.json"
# weights: a dangling model.safetensors beside a complete sharded index is not skipped for it
mkdir -p "$T/shard"; cp "$T/init/config.json" "$T/shard/"
cp "$T/init/model.safetensors" "$T/shard/model-00001-of-00001.safetensors"
names=$(head -c 20000 "$T/init/model.safetensors" | grep -ao '"transformer\.[^"]*":{' | sed 's/:{$//')
{ printf '{"metadata": {}, "weight_map": {'; sep=""
  for n in $names; do printf '%s%s: "model-00001-of-00001.safetensors"' "$sep" "$n"; sep=", "; done
  printf '}}\n'; } >"$T/shard/model.safetensors.index.json"
scn shard "$T/shard"
expect 0 "the sharded directory trains" -- "$H" run "$T/shard.json" --db "$T/ok.db" --quiet
ln -s "$T/nowhere.safetensors" "$T/shard/model.safetensors"
refused "a dangling model.safetensors beside an index" "model.safetensors" "$T/shard.json"
rm "$T/shard/model.safetensors" "$T/shard/model-00001-of-00001.safetensors"
ln -s "$T/nowhere.safetensors" "$T/shard/model-00001-of-00001.safetensors"
refused "a dangling shard" "model-00001-of-00001.safetensors" "$T/shard.json"
# tokenizer files: a dangling tokenizer.json is not passed over for vocab.json + merges.txt
mkdir -p "$T/tok"; cp "$bpe512/vocab.json" "$bpe512/merges.txt" "$T/tok/"
expect 0 "vocab.json + merges.txt" -- "$H" preprocess --input "$corpus" --output-prefix "$T/p" --tokenizer "bpe:$T/tok"
ln -s "$T/nowhere.json" "$T/tok/tokenizer.json"
expect 2 "a dangling tokenizer.json" -- "$H" preprocess --input "$corpus" --output-prefix "$T/p" --tokenizer "bpe:$T/tok"
says "tokenizer.json"
rm "$T/tok/tokenizer.json"; cp "$bpe512/tokenizer.json" "$T/tok/"
ln -s "$T/nowhere.json" "$T/tok/tokenizer_config.json"
expect 2 "a dangling tokenizer_config.json beside tokenizer.json" -- "$H" preprocess --input "$corpus" --output-prefix "$T/p" --tokenizer "bpe:$T/tok"
says "tokenizer_config.json"
mkdir -p "$T/wp"; cp "$SRC/tests/data/hf/wordpiece/vocab.txt" "$T/wp/"
ln -s "$T/nowhere.json" "$T/wp/tokenizer_config.json"
expect 2 "a dangling tokenizer_config.json beside vocab.txt" -- "$H" preprocess --input "$corpus" --output-prefix "$T/p" --tokenizer "wordpiece:$T/wp/vocab.txt"
says "tokenizer_config.json"

# transformers' tokenizer_config.json holds "model_max_length": 1000000000000000019884624838656, past
# a 64-bit integer: read as it is (BPE and WordPiece); one that is JSON but no object says what it is
big='{"model_max_length": 1000000000000000019884624838656, "clean_up_tokenization_spaces": false}'
rm -f "$T/tok/tokenizer_config.json"; printf '%s\n' "$big" >"$T/tok/tokenizer_config.json"
expect 0 "a BPE tokenizer_config.json with transformers' model_max_length" -- "$H" preprocess --input "$corpus" --output-prefix "$T/p" --tokenizer "bpe:$T/tok"
rm -f "$T/wp/tokenizer_config.json"; printf '%s\n' "$big" >"$T/wp/tokenizer_config.json"
expect 0 "a WordPiece tokenizer_config.json with transformers' model_max_length" -- "$H" preprocess --input "$corpus" --output-prefix "$T/p" --tokenizer "wordpiece:$T/wp/vocab.txt"
printf '[]\n' >"$T/tok/tokenizer_config.json"
expect 2 "a BPE tokenizer_config.json that is an array" -- "$H" preprocess --input "$corpus" --output-prefix "$T/p" --tokenizer "bpe:$T/tok"; says "must be a JSON object, not an array"
rm -f "$T/tok/tokenizer_config.json" "$T/wp/tokenizer_config.json"
echo "# weights holding NaN or an infinity: refused naming the tensor, nothing recorded"
hlen=$(od -An -tu8 -N8 "$T/init/model.safetensors" | tr -d ' ')
first=$(head -c $((8 + hlen)) "$T/init/model.safetensors" | grep -ao '"[^"]*":{[^}]*"data_offsets":\[0,' | sed 's/":{.*//; s/^"//')
for bad in 'NaN:\000\000\300\177' 'an infinity:\000\000\200\377'; do
  cp -r "$T/init" "$T/nan"
  printf "${bad#*:}" | dd of="$T/nan/model.safetensors" bs=1 seek=$((8 + hlen + 4)) conv=notrunc 2>/dev/null
  scn nan "$T/nan"; refused "weights holding ${bad%%:*}" "tensor \"$first\" holds ${bad%%:*} at element 1" "$T/nan.json"
  expect 2 "init from weights holding ${bad%%:*}" -- "$H" init "$T/nan.json" "$T/nan-out"; says "$first"
  rm -rf "$T/nan"
done

echo "# a layer number with a leading zero is no layer: an unexpected tensor"
if "$PY" -c 'import safetensors, numpy' 2>/dev/null; then
  for extra in h.00.ln_1.bias h.01.ln_1.bias h.007.ln_1.bias; do
    cp -r "$T/init" "$T/lz"
    "$PY" - "$T/lz/model.safetensors" "transformer.$extra" <<'EOF'
import sys
from safetensors.numpy import load_file, save_file
t = load_file(sys.argv[1])
t[sys.argv[2]] = t["transformer.h.0.ln_1.bias"].copy()
save_file(t, sys.argv[1], metadata={"format": "pt"})
EOF
    scn lz "$T/lz"; refused "tensor $extra" "unexpected tensor \"transformer.$extra\"" "$T/lz.json"
    rm -rf "$T/lz"
  done
  cp -r "$T/init" "$T/f64"
  "$PY" - "$T/f64/model.safetensors" <<'EOF'
import sys
from safetensors.numpy import load_file, save_file
t = {k: v.astype("float64") for k, v in load_file(sys.argv[1]).items()}
t["transformer.ln_f.weight"][3] = 1e300
save_file(t, sys.argv[1], metadata={"format": "pt"})
EOF
  scn f64 "$T/f64"; refused "an F64 weight beyond float32's range" "tensor \"transformer.ln_f.weight\" holds a value beyond float32's range" "$T/f64.json"
else
  echo "$NAME: the leading-zero and F64 checks skipped: no Python with safetensors and numpy at $PY"
fi
echo "# an expert past the config's count in layer 0 is unexpected, not a layer to skip"
if "$PY" -c 'import safetensors, numpy' 2>/dev/null; then
  cat >"$T/moe.json" <<EOF
{"name": "moe", "model": {"family": "llama", "config": {"model_type": "mixtral", "vocab_size": 256,
 "hidden_size": 32, "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 4,
 "num_key_value_heads": 2, "max_position_embeddings": 64, "num_local_experts": 4, "num_experts_per_tok": 2}},
 "data": {"path": "$corpus", "tokenizer": "byte", "seq_len": 32},
 "train": {"steps": 1, "batch_size": 2, "lr": 1e-3, "seed": 5}}
EOF
  expect 0 "init a 4-expert mixtral" -- "$H" init "$T/moe.json" "$T/moe"
  "$PY" - "$T/moe/model.safetensors" <<'EOF'
import sys
from safetensors.numpy import load_file, save_file
t = load_file(sys.argv[1])
t["model.layers.0.block_sparse_moe.experts.4.w1.weight"] = t["model.layers.0.block_sparse_moe.experts.0.w1.weight"].copy()
save_file(t, sys.argv[1], metadata={"format": "pt"})
EOF
  FAMILY=llama scn moe5 "$T/moe"
  refused "expert 4 of 4" 'unexpected tensor "model.layers.0.block_sparse_moe.experts.4.w1.weight"' "$T/moe5.json"
fi
# a layer past the config's count is still skipped with a warning, as from_pretrained does
FAMILY=gpt2 scn fewer "$T/init"; sed -i 's#"path": "[^"]*init"#&, "overrides": {"n_layer": 1}#' "$T/fewer.json"
expect 0 "a checkpoint with more layers than the config" -- "$H" run "$T/fewer.json" --db "$T/ok.db" --quiet
says "were not used"

echo "# dtype (transformers 5's torch_dtype) is a dtype, named as the file spells it"
cp -r "$T/init" "$T/dt"
printf '{"dtype": "garbage"}\n' >"$T/dt/override_config.json"
scn dt "$T/dt"; refused "override dtype garbage" 'dtype: unknown dtype "garbage"' "$T/dt.json"
grep -q 'torch_dtype' "$T/err" && fail "the dtype override is named torch_dtype: $(cat "$T/err")" || pass
printf '{"dtype": 5}\n' >"$T/dt/override_config.json"
refused "override dtype 5" "dtype: must be a string" "$T/dt.json"
printf '{"dtype": "bfloat16"}\n' >"$T/dt/override_config.json"
expect 0 "override dtype bfloat16" -- "$H" run "$T/dt.json" --db "$T/ok.db" --quiet
rm "$T/dt/override_config.json"
sed -i 's/"torch_dtype": "float32"/"dtype": "float8"/' "$T/dt/config.json"
grep -q '"dtype": "float8"' "$T/dt/config.json" && pass || fail "the config.json edit"
refused "config.json dtype float8" 'dtype: unknown dtype "float8"' "$T/dt.json"
grep -q 'torch_dtype' "$T/err" && fail "config.json's dtype is named torch_dtype: $(cat "$T/err")" || pass
sed -i 's/"dtype": "float8"/"dtype": "float8", "torch_dtype": "float32"/' "$T/dt/config.json"
refused "config.json dtype float8 beside torch_dtype" 'dtype: unknown dtype "float8"' "$T/dt.json"

echo "# init and run --save write afresh: a planted link is replaced, never written through"
bpe_scn="$T/bpe.json"
sed "s#\"path\": \"[^\"]*corpus.txt\"#\"path\": \"$corpus\"#; s#\"tokenizer_path\": \"[^\"]*\"#\"tokenizer_path\": \"$bpe512/tokenizer.json\"#" \
  "$SRC/tests/fixtures/parity-b/scenario.json" >"$bpe_scn"
for name in config.json tokenizer.json config.json.tmp tokenizer.json.tmp; do
  rm -rf "$T/o"; mkdir -p "$T/o"; printf 'keep me\n' >"$T/victim"; ln -s "$T/victim" "$T/o/$name"
  expect 0 "init beside a planted $name" -- "$H" init "$bpe_scn" "$T/o"
  [ "$(cat "$T/victim")" = "keep me" ] && pass || fail "init wrote through the planted $name"
  [ -f "$T/o/${name%.tmp}" ] && [ ! -L "$T/o/${name%.tmp}" ] && pass || fail "init: ${name%.tmp} is not a fresh file"
  tmp="$T/o/${name%.tmp}.tmp"; [ ! -e "$tmp" ] && [ ! -L "$tmp" ] && pass || fail "init left $tmp"
done
rm -rf "$T/o"; mkdir -p "$T/o"; printf 'keep me\n' >"$T/victim"; ln -s "$T/victim" "$T/o/config.json"
ln -s "$T/victim" "$T/o/tokenizer.json"
expect 0 "run --save beside planted links" -- "$H" run "$bpe_scn" --steps 1 --db "$T/ok.db" --save "$T/o" --quiet
[ "$(cat "$T/victim")" = "keep me" ] && [ ! -L "$T/o/config.json" ] && [ ! -L "$T/o/tokenizer.json" ] && pass || fail "--save wrote through a planted link"

# a tokenizer file left from before that this tokenizer lacks is removed: a stale tokenizer.json
# beside the new vocab.json + merges.txt would be read first, by the harness and by transformers
sed 's#bpe512/tokenizer.json#bpe512/vocab.json#' "$bpe_scn" >"$T/vm.json"
rm -rf "$T/stale"; mkdir -p "$T/stale"; printf '{"stale": true}\n' >"$T/stale/tokenizer.json"
expect 0 "init over a stale tokenizer.json" -- "$H" init "$T/vm.json" "$T/stale"
[ ! -e "$T/stale/tokenizer.json" ] && [ -s "$T/stale/vocab.json" ] && [ -s "$T/stale/merges.txt" ] && pass || fail "init left the stale tokenizer.json beside the new vocab.json"
printf '{"stale": true}\n' >"$T/stale/tokenizer.json"
expect 0 "run --save over a stale tokenizer.json" -- "$H" run "$T/vm.json" --steps 1 --db "$T/ok.db" --save "$T/stale" --quiet
[ ! -e "$T/stale/tokenizer.json" ] && pass || fail "--save left the stale tokenizer.json"
ln -s "$T/nowhere" "$T/dangling-out"
expect 2 "init into a dangling link" -- "$H" init "$bpe_scn" "$T/dangling-out"; says "target is missing"
rm -f "$T/r.db"
expect 2 "run --save into a dangling link" -- "$H" run "$bpe_scn" --steps 1 --db "$T/r.db" --save "$T/dangling-out/sub"
says "target is missing"; [ ! -e "$T/r.db" ] && pass || fail "a refused --save made the store"

echo "# run --save copies the tokenizer: the saved directory trains with its own tokenizer"
expect 0 "run --save (bpe)" -- "$H" run "$bpe_scn" --steps 1 --db "$T/ok.db" --save "$T/saved" --quiet
cmp -s "$T/saved/tokenizer.json" "$bpe512/tokenizer.json" && pass || fail "--save did not copy tokenizer.json"
scn again "$T/saved" '"tokenizer": "bpe"'
expect 0 "run on the saved directory's tokenizer" -- "$H" run "$T/again.json" --db "$T/ok.db" --quiet
mkdir -p "$T/named"; cp "$bpe512/vocab.json" "$T/named/gpt2-vocab.json"; cp "$bpe512/merges.txt" "$T/named/"
sed "s#\"tokenizer_path\": \"[^\"]*\"#\"tokenizer_path\": \"$T/named/gpt2-vocab.json\"#" "$bpe_scn" >"$T/named.json"
expect 0 "run --save (vocab.json + merges.txt)" -- "$H" run "$T/named.json" --steps 1 --db "$T/ok.db" --save "$T/saved2" --quiet
cmp -s "$T/saved2/vocab.json" "$T/named/gpt2-vocab.json" && cmp -s "$T/saved2/merges.txt" "$T/named/merges.txt" && pass || fail "--save did not copy vocab.json and merges.txt"
scn again2 "$T/saved2" '"tokenizer": "bpe"'
expect 0 "run on the saved vocab.json + merges.txt" -- "$H" run "$T/again2.json" --db "$T/ok.db" --quiet
sed "s#\"data/corpus.txt\"#\"$corpus\"#; s#\"data/wordpiece/tokenizer.json\"#\"$SRC/scenarios/data/wordpiece/tokenizer.json\"#" \
  "$SRC/scenarios/bert-tiny.json" >"$T/bert.json"
expect 0 "run --save (wordpiece)" -- "$H" run "$T/bert.json" --steps 1 --db "$T/ok.db" --save "$T/bsaved" --quiet
cmp -s "$T/bsaved/tokenizer.json" "$SRC/scenarios/data/wordpiece/tokenizer.json" && pass || fail "--save did not copy the wordpiece tokenizer.json"
FAMILY=bert scn bagain "$T/bsaved" '"tokenizer": "wordpiece", "objective": "mlm"'
expect 0 "run on the saved directory's wordpiece tokenizer" -- "$H" run "$T/bagain.json" --db "$T/ok.db" --quiet
finish
