#!/usr/bin/env bash
# tests/test_hf_dir.sh: local Hugging Face model directories end to end: `harness init`, a
# scenario's model.path (weights, override_config.json), `run --save`, malformed weights and
# configs (exit 2 with a message, never a crash). usage: test_hf_dir.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
losses() { grep '^step ' "$1" | awk '{print $4}'; }

tiny="$SRC/scenarios/gpt2-tiny.json"
corpus="$SRC/scenarios/data/corpus.txt"
# scenario DIR NAME [EXTRA MODEL KEYS] [TOKENIZER KEYS]: gpt2-tiny's training on a model directory
scenario() {
  cat >"$T/$2.json" <<EOF
{"name": "$2", "model": {"family": "gpt2", "path": "$1"${3:+, $3}},
 "data": {"path": "$corpus", ${4:-\"tokenizer\": \"byte\"}, "seq_len": 64},
 "train": {"steps": 40, "batch_size": 8, "lr": 3e-3, "warmup_steps": 5, "schedule": "cosine",
           "weight_decay": 0.1, "decay_all": true, "betas": [0.9, 0.999], "eps": 1e-8,
           "clip": 1.0, "seed": 123}}
EOF
}

# ---- init -------------------------------------------------------------------------------------
expect 0 "init --help" -- "$H" init --help
expect 2 "init without arguments" -- "$H" init
expect 2 "init without OUT_DIR" -- "$H" init "$tiny"
expect 2 "init unknown option" -- "$H" init "$tiny" "$T/x" --bogus; says "--bogus"
expect 2 "init missing scenario" -- "$H" init "$T/nope.json" "$T/x"; says "nope.json"
expect 0 "init gpt2-tiny" -- "$H" init "$tiny" "$T/init"
[ -f "$T/init/config.json" ] && [ -f "$T/init/model.safetensors" ] && pass || fail "init wrote config.json and model.safetensors"
grep -q '"model_type": "gpt2"' "$T/init/config.json" && pass || fail "config.json names model_type gpt2"
grep -q '"attn_pdrop": 0' "$T/init/config.json" && pass || fail "config.json carries the scenario's overrides"
expect 0 "init again is deterministic" -- "$H" init "$tiny" "$T/init2"
cmp -s "$T/init/model.safetensors" "$T/init2/model.safetensors" && pass || fail "two inits wrote different weights"
printf 'x' >"$T/afile"
expect 2 "init under a file (an input error, as for --save)" -- "$H" init "$tiny" "$T/afile/sub"; says "afile"

# ---- the directory's weights train exactly like the seeded ones -----------------------------
expect 0 "seeded run" -- "$H" run "$tiny" --steps 3 --db "$T/a.db"
losses "$T/out" >"$T/seeded"
scenario "$T/init" dir
expect 0 "run on the init directory" -- "$H" run "$T/dir.json" --steps 3 --db "$T/a.db"
losses "$T/out" >"$T/fromdir"
[ -s "$T/seeded" ] && cmp -s "$T/seeded" "$T/fromdir" && pass || fail "losses from the directory differ from the seeded run"
scenario "$T/init" dirseeded '"weights": "seeded"'
expect 0 "model.path with seeded weights" -- "$H" run "$T/dirseeded.json" --steps 3 --db "$T/a.db"
losses "$T/out" | cmp -s - "$T/seeded" && pass || fail "seeded weights on a directory config"

# ---- run --save ------------------------------------------------------------------------------
expect 0 "run --save" -- "$H" run "$tiny" --steps 2 --save "$T/saved" --db "$T/a.db"
[ -f "$T/saved/model.safetensors" ] && pass || fail "--save wrote model.safetensors"
cmp -s "$T/saved/model.safetensors" "$T/init/model.safetensors" && fail "--save wrote the initial weights" || pass
scenario "$T/saved" saved
expect 0 "run from saved weights" -- "$H" run "$T/saved.json" --steps 1 --db "$T/a.db"
# init never writes over the model directory it reads (seeded weights would replace trained ones)
scenario "$T/saved" seeded '"weights": "seeded"'
sum_before=$(md5sum <"$T/saved/model.safetensors")
expect 2 "init into its own model directory" -- "$H" init "$T/seeded.json" "$T/saved"; says "is a file this run reads"
expect 2 "init into its own model directory, spelt ./" -- "$H" init "$T/seeded.json" "$T/saved/./"
[ "$(md5sum <"$T/saved/model.safetensors")" = "$sum_before" ] && pass || fail "init wrote over the weights it was given"
: >"$T/afile"
expect 2 "init into a file" -- "$H" init "$tiny" "$T/afile"; says "not a directory"
# --dump-batches onto SQLite's files beside the store, or onto the folder --save writes into:
# refused before anything runs (a dump on the -wal wiped the store; the folder failed the save)
for side in -wal -shm -journal; do
  expect 2 "--dump-batches the store's $side" -- "$H" run "$tiny" --steps 1 --db "$T/a.db" --dump-batches "$T/a.db$side"
  says "beside the store"
done
"$H" runs --db "$T/a.db" >/dev/null && pass || fail "the store does not read after the refused dumps"
expect 2 "--dump-batches the --save folder" -- "$H" run "$tiny" --steps 1 --db "$T/sd.db" --save "$T/sdir" --dump-batches "$T/sdir"
says "that --save"; [ ! -e "$T/sd.db" ] && pass || fail "a refused dump recorded a run"
expect 2 "--dump-batches a folder above --save" -- "$H" run "$tiny" --steps 1 --db "$T/sd.db" --save "$T/sup/sub" --dump-batches "$T/sup"
# a symbolic link planted where --save writes its temporary file is replaced, not written through
mkdir -p "$T/planted"; printf 'keep me\n' >"$T/victim"; ln -s "$T/victim" "$T/planted/model.safetensors.tmp"
expect 0 "--save beside a planted link" -- "$H" run "$tiny" --steps 1 --db "$T/a.db" --save "$T/planted" --quiet
[ "$(cat "$T/victim")" = "keep me" ] && [ ! -L "$T/planted/model.safetensors" ] && pass || fail "--save wrote through the planted link"
expect 2 "run --save without value" -- "$H" run "$tiny" --save

# ---- BPE tokenizer: init copies its files; a directory's tokenizer.json is found -------------
expect 0 "init parity-b (bpe)" -- "$H" init "$SRC/tests/fixtures/parity-b/scenario.json" "$T/bpe"
[ -f "$T/bpe/tokenizer.json" ] && pass || fail "init copied tokenizer.json"
# a tokenizer file by another name was not copied at all: it goes under the name the harness
# reads it as (a name ending in vocab.json: vocab.json + merges.txt; else tokenizer.json)
mkdir -p "$T/named"
cp "$SRC/tests/data/hf/bpe512/tokenizer.json" "$T/named/bpe512.json"
cp "$SRC/tests/data/hf/bpe512/vocab.json" "$T/named/gpt2-vocab.json"
cp "$SRC/tests/data/hf/bpe512/merges.txt" "$T/named/merges.txt"
printf '{"eos_token": "<|endoftext|>"}\n' >"$T/named/tokenizer_config.json"
for f in bpe512.json gpt2-vocab.json; do
  sed "s#\"tokenizer_path\": \"[^\"]*\"#\"tokenizer_path\": \"$T/named/$f\"#; s#\"path\": \"[^\"]*corpus.txt\"#\"path\": \"$corpus\"#" \
    "$SRC/tests/fixtures/parity-b/scenario.json" >"$T/named-$f.scenario"
  expect 0 "init with the tokenizer $f" -- "$H" init "$T/named-$f.scenario" "$T/named-$f"
done
cmp -s "$T/named-bpe512.json/tokenizer.json" "$T/named/bpe512.json" && pass || fail "bpe512.json not copied as tokenizer.json"
cmp -s "$T/named-gpt2-vocab.json/vocab.json" "$T/named/gpt2-vocab.json" && pass || fail "gpt2-vocab.json not copied as vocab.json"
cmp -s "$T/named-gpt2-vocab.json/merges.txt" "$T/named/merges.txt" && pass || fail "merges.txt not copied beside vocab.json"
cmp -s "$T/named-bpe512.json/tokenizer_config.json" "$T/named/tokenizer_config.json" && pass || fail "tokenizer_config.json not copied"
[ -e "$T/named-bpe512.json/vocab.json" ] && fail "init copied vocab.json for a tokenizer.json" || pass
scenario "$T/bpe" bpedir "" '"tokenizer": "bpe"'
sed -i 's/"seq_len": 64/"seq_len": 48/' "$T/bpedir.json"
expect 0 "run with the directory's tokenizer" -- "$H" run "$T/bpedir.json" --steps 1 --db "$T/a.db"
head -c 3000 "$T/bpe/tokenizer.json" >"$T/bpe/tokenizer.json.part" && mv "$T/bpe/tokenizer.json.part" "$T/bpe/tokenizer.json"
expect 2 "a truncated tokenizer.json" -- "$H" run "$T/bpedir.json" --steps 1 --db "$T/a.db"; says "tokenizer.json"
cp "$SRC/tests/data/hf/bpe512/tokenizer.json" "$T/bpe/"
printf 'caf\351 au lait\n' >"$T/latin1.txt"
sed "s#\"$corpus\"#\"$T/latin1.txt\"#; s/\"seq_len\": 48/\"seq_len\": 2/" "$T/bpedir.json" >"$T/latin1.json"
expect 2 "data that is not UTF-8" -- "$H" run "$T/latin1.json" --steps 1 --db "$T/a.db"; says "not valid UTF-8 at byte 3"
scenario "$T/init" bpenotok "" '"tokenizer": "bpe"'
expect 2 "bpe with a directory lacking a tokenizer" -- "$H" run "$T/bpenotok.json" --steps 1 --db "$T/a.db"; says "tokenizer"
cat >"$T/nobpe.json" <<EOF
{"name": "x", "model": {"family": "gpt2", "config": {"vocab_size": 512, "n_layer": 1, "n_embd": 8, "n_head": 2, "n_positions": 64},
 "overrides": {"attn_pdrop": 0, "embd_pdrop": 0, "resid_pdrop": 0}},
 "data": {"path": "$corpus", "tokenizer": "bpe", "seq_len": 8}, "train": {"steps": 1, "batch_size": 1, "lr": 1e-3}}
EOF
expect 2 "bpe without a tokenizer path" -- "$H" run "$T/nobpe.json" --db "$T/a.db"; says "tokenizer_path"

# ---- override_config.json beside the weights ---------------------------------------------------
cp -r "$T/init" "$T/ovr"
printf '{"attn_pdrop": 0.0, "no_such_key": 3}\n' >"$T/ovr/override_config.json"
scenario "$T/ovr" ovr
expect 0 "override_config.json: unknown key skipped" -- "$H" run "$T/ovr.json" --steps 1 --db "$T/a.db"; says "no_such_key"
printf '{"n_layer": "two"}\n' >"$T/ovr/override_config.json"
expect 2 "override_config.json: type mismatch" -- "$H" run "$T/ovr.json" --steps 1 --db "$T/a.db"; says "n_layer"
sed -i 's/"n_positions": 128/"n_positions": 128, "n_inner": null/' "$T/ovr/config.json"
printf '{"n_inner": 256}\n' >"$T/ovr/override_config.json"
expect 0 "override_config.json: null key skipped" -- "$H" run "$T/ovr.json" --steps 1 --db "$T/a.db"; says "null"
printf '{"torch_dtype": "bfloat16"}\n' >"$T/ovr/override_config.json"
expect 0 "override_config.json: torch_dtype" -- "$H" run "$T/ovr.json" --steps 1 --db "$T/a.db"
printf '{"torch_dtype": "float8"}\n' >"$T/ovr/override_config.json"
expect 2 "override_config.json: unknown dtype" -- "$H" run "$T/ovr.json" --steps 1 --db "$T/a.db"; says "float8"
rm "$T/ovr/override_config.json"

# ---- configs the harness cannot honour --------------------------------------------------------
cp -r "$T/init" "$T/cfg"
sed -i 's/"n_positions": 128/"n_positions": 128, "n_inner": 100/' "$T/cfg/config.json"
scenario "$T/cfg" cfg
expect 2 "n_inner other than 4*n_embd" -- "$H" run "$T/cfg.json" --steps 1 --db "$T/a.db"; says "n_inner"
sed -i 's/"n_inner": 100/"tie_word_embeddings": false/; s/"tie_word_embeddings": true,//' "$T/cfg/config.json"
expect 2 "untied embeddings" -- "$H" run "$T/cfg.json" --steps 1 --db "$T/a.db"; says "tie_word_embeddings"
scenario "$T/nodir" nodir
expect 2 "model.path that does not exist" -- "$H" run "$T/nodir.json" --db "$T/a.db"; says "model.path"
scenario "$T/init" both '"config": {}'
expect 2 "model.path and model.config" -- "$H" run "$T/both.json" --db "$T/a.db"; says "not both"
sed 's/"family": "gpt2",/"family": "gpt2", "weights": "pretrained",/' "$tiny" >"$T/pre.json"
sed -i "s#\"data/corpus.txt\"#\"$corpus\"#" "$T/pre.json"
expect 2 "pretrained without model.path" -- "$H" run "$T/pre.json" --db "$T/a.db"; says "model.path"
mkdir -p "$T/noweights" && cp "$T/init/config.json" "$T/noweights/"
scenario "$T/noweights" noweights
expect 2 "a directory without weights" -- "$H" run "$T/noweights.json" --db "$T/a.db"; says "model.safetensors"

# ---- malformed weights: exit 2 with the file named, never a crash -----------------------------
bad_weights() { # NAME COMMAND...: makes $T/bw/model.safetensors with the command, runs on it
  local name="$1"; shift
  rm -rf "$T/bw"; cp -r "$T/init" "$T/bw"; "$@"
  scenario "$T/bw" bw
  expect 2 "malformed weights: $name" -- "$H" run "$T/bw.json" --steps 1 --db "$T/a.db"; says "model.safetensors"
}
bad_weights "truncated" truncate -s 4000 "$T/bw/model.safetensors"
bad_weights "empty" truncate -s 0 "$T/bw/model.safetensors"
bad_weights "garbage" sh -c "head -c 3000 /dev/urandom >'$T/bw/model.safetensors'"
bad_weights "huge header length" sh -c "printf '\377\377\377\377\377\377\377\177{}' >'$T/bw/model.safetensors'"
bad_weights "header not JSON" sh -c "printf '\010\000\000\000\000\000\000\000{\"a\":[}  ' >'$T/bw/model.safetensors'"
rm -rf "$T/bw"; cp -r "$T/init" "$T/bw"
sed -i 's/"n_embd": 64/"n_embd": 32/' "$T/bw/config.json"
scenario "$T/bw" bw
expect 2 "weights of another shape" -- "$H" run "$T/bw.json" --steps 1 --db "$T/a.db"; says "transformer.wte.weight"
sed -i 's/"n_embd": 32/"n_embd": 64/; s/"n_layer": 2/"n_layer": 3/' "$T/bw/config.json"
expect 2 "weights missing a layer" -- "$H" run "$T/bw.json" --steps 1 --db "$T/a.db"; says "transformer.h.2"

# ---- GPT2Config's aliases (attribute_map) are its keys, and win over the keys they name, as in
# transformers: num_hidden_layers 1 beside n_layer 2 trains one layer (it trained two); a config
# with hidden_size alone is read (it was refused for n_embd's default 768); init and --save drop
# them from the config they write
rm -rf "$T/al"; cp -r "$T/init" "$T/al"
python3 - "$T/al/config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1])); c["num_hidden_layers"] = 1; json.dump(c, open(sys.argv[1], "w"))
EOF
scenario "$T/al" al
expect 0 "num_hidden_layers beside n_layer" -- "$H" run "$T/al.json" --steps 1 --db "$T/al.db"
says "tensors of layers the config does not have were not used"
rm -rf "$T/al-init"
expect 0 "init from it" -- "$H" init "$T/al.json" "$T/al-init"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); sys.exit(not (c["n_layer"] == 1 and "num_hidden_layers" not in c))' "$T/al-init/config.json" && pass || fail "init wrote: $(grep -E 'layer' "$T/al-init/config.json")"
rm -rf "$T/hs"; cp -r "$T/init" "$T/hs"
python3 - "$T/hs/config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1])); c["hidden_size"] = c.pop("n_embd"); json.dump(c, open(sys.argv[1], "w"))
EOF
scenario "$T/hs" hs
expect 0 "hidden_size in place of n_embd" -- "$H" run "$T/hs.json" --steps 1 --db "$T/al.db"

# ---- --save into a directory holding an override_config.json from before: removed (the config
# written has the overrides applied; a run on the directory applied the old file again)
rm -rf "$T/so"; mkdir "$T/so"; echo '{"n_layer": 1}' >"$T/so/override_config.json"
expect 0 "--save over an old override_config.json" -- "$H" run "$tiny" --steps 1 --db "$T/so.db" --save "$T/so" --quiet
[ ! -e "$T/so/override_config.json" ] && pass || fail "--save left the old override_config.json"
rm -rf "$T/so2"; mkdir -p "$T/so2/override_config.json"
expect 2 "--save with a folder at override_config.json" -- "$H" run "$tiny" --steps 1 --db "$T/so.db" --save "$T/so2" --quiet
says "override_config.json is a directory"

finish
