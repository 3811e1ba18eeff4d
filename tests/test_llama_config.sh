#!/usr/bin/env bash
# tests/test_llama_config.sh: the llama family's config reader and checks from the CLI: each
# variant by model_type, and hostile or unsupported configs refused by name with exit 2 before the
# store is created (Baichuan2, rope_scaling, sliding windows, bad sizes and types).
# usage: test_llama_config.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
corpus="$SRC/scenarios/data/corpus.txt"
# run_cfg NAME CONFIG_JSON [SEQ_LEN]: a 1-step scenario with that inline config
run_cfg() {
  cat >"$T/$1.json" <<JSON
{"name": "$1", "model": {"family": "llama", "config": $2},
 "data": {"path": "$corpus", "tokenizer": "byte", "seq_len": ${3:-32}},
 "train": {"steps": 1, "batch_size": 2, "lr": 1e-3, "seed": 1}}
JSON
}
base='"vocab_size": 256, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64'
ok() { run_cfg "$1" "$2" "${3:-32}"; expect 0 "$1" -- "$H" run "$T/$1.json" --db "$T/ok.db" --quiet; }
refused() { # refused NAME CONFIG TEXT [SEQ_LEN]
  rm -f "$T/no.db"; run_cfg "$1" "$2" "${4:-32}"
  expect 2 "$1" -- "$H" run "$T/$1.json" --db "$T/no.db"; says "$3"
  [ ! -e "$T/no.db" ] && pass || fail "$1: the refused run created the store"
}
echo "every variant by model_type"
ok llama "{\"model_type\": \"llama\", $base}"
ok qwen2 "{\"model_type\": \"qwen2\", $base}"
ok mistral "{\"model_type\": \"mistral\", $base, \"sliding_window\": 64}"
# LlamaForCausalLM has no sliding window: the key (some exported configs carry it) changes nothing
ok llama-window-ignored "{\"model_type\": \"llama\", $base, \"sliding_window\": 8}"
ok mixtral "{\"model_type\": \"mixtral\", $base, \"num_local_experts\": 3, \"num_experts_per_tok\": 2}"
ok no-type "{$base}"
ok rope-params "{$base, \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 500000.0}, \"rope_scaling\": null}"
ok head-dim "{$base, \"head_dim\": 16}"
echo "an unknown key is warned about, not refused"
ok unknown "{$base, \"no_such_key\": 3}"
grep -qF "no_such_key" "$T/err" && pass || fail "no warning naming no_such_key"
echo "what the harness does not implement, refused by name"
refused baichuan "{\"model_type\": \"baichuan\", $base}" "W_pack"
refused gpt2-type "{\"model_type\": \"gpt2\", $base}" "not a llama config"
refused rope-scaling "{$base, \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2.0}}" "rope_scaling"
refused rope-theta-params "{$base, \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": -1}}" "model.config.rope_parameters: rope_theta must be > 0, got -1"
refused odd-derived-head "{\"model_type\": \"qwen2\", \"vocab_size\": 256, \"hidden_size\": 28, \"intermediate_size\": 48, \"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"max_position_embeddings\": 64}" "model.config.hidden_size: 28 / num_attention_heads 4 gives a head size of 7"
refused rope-yarn "{$base, \"rope_parameters\": {\"rope_type\": \"yarn\", \"rope_theta\": 1e4}}" "yarn"
refused window "{\"model_type\": \"mistral\", $base, \"sliding_window\": 16}" "sliding_window 16"
refused qwen2-window "{\"model_type\": \"qwen2\", $base, \"use_sliding_window\": true, \"sliding_window\": 8, \"max_window_layers\": 0}" "sliding_window 8"
refused qwen2-window-types "{\"model_type\": \"qwen2\", $base, \"use_sliding_window\": true, \"sliding_window\": 8, \"layer_types\": [\"sliding_attention\"]}" "sliding_window 8"
refused qwen2-layer-types-type "{\"model_type\": \"qwen2\", $base, \"layer_types\": \"full_attention\"}" "layer_types"
refused qwen2-layer-types-entry "{\"model_type\": \"qwen2\", $base, \"layer_types\": [3]}" "layer_types"
refused qwen2-layer-types-length "{\"model_type\": \"qwen2\", $base, \"layer_types\": [\"full_attention\", \"full_attention\"]}" "layer_types: has 2 entries for num_hidden_layers 1"
refused window-1 "{\"model_type\": \"mistral\", $base, \"sliding_window\": 1}" "use sliding_window null, or one >= seq_len"
refused mixtral-513 "{\"model_type\": \"mixtral\", $base, \"num_local_experts\": 513, \"num_experts_per_tok\": 2}" "num_local_experts: must be in [1, 512]"
refused init-range-1e38 "{$base, \"initializer_range\": 1e38}" "initializer_range: must be in [0, 1e30]"
refused qwen2-layer-types-unknown "{\"model_type\": \"qwen2\", $base, \"layer_types\": [\"chunked_attention\"]}" "layer_types: entry 0: \"chunked_attention\" is not implemented"
refused head-dim-0 "{$base, \"head_dim\": 0}" "model.config.head_dim: 0: the rotary embedding needs an even head size"
refused qwen2-head-dim-null "{\"model_type\": \"qwen2\", $base, \"head_dim\": null}" "model.config.head_dim: null is no head size for Qwen2"
refused qwen2-max-window-type "{\"model_type\": \"qwen2\", $base, \"max_window_layers\": \"28\"}" "max_window_layers"
echo "qwen2's window only on layers i >= max_window_layers (or layer_types' sliding ones), as Qwen2Config"
ok qwen2-window-unused "{\"model_type\": \"qwen2\", $base, \"use_sliding_window\": true, \"sliding_window\": 8}"
ok qwen2-window-max1 "{\"model_type\": \"qwen2\", $base, \"use_sliding_window\": true, \"sliding_window\": 8, \"max_window_layers\": 1}"
ok qwen2-window-full-types "{\"model_type\": \"qwen2\", $base, \"use_sliding_window\": true, \"sliding_window\": 8, \"max_window_layers\": 0, \"layer_types\": [\"full_attention\"]}"
echo "harness init writes what decides qwen2's window, so transformers trains the same"
run_cfg qwen2-init "{\"model_type\": \"qwen2\", $base, \"use_sliding_window\": true, \"sliding_window\": 8, \"max_window_layers\": 5}"
expect 0 "qwen2 init" -- "$H" init "$T/qwen2-init.json" "$T/qwen2-init"
grep -q '"max_window_layers": 5' "$T/qwen2-init/config.json" && pass || fail "init: max_window_layers not written"
run_cfg qwen2-init-types "{\"model_type\": \"qwen2\", $base, \"use_sliding_window\": true, \"sliding_window\": 8, \"max_window_layers\": 0, \"layer_types\": [\"full_attention\"]}"
expect 0 "qwen2 init (layer_types)" -- "$H" init "$T/qwen2-init-types.json" "$T/qwen2-init-types"
tr -d ' \n' <"$T/qwen2-init-types/config.json" | grep -q '"layer_types":\["full_attention"\]' && pass || fail "init: layer_types not written"
echo "hidden_size not a multiple of the heads: LlamaConfig refuses it, the others floor head_dim"
odd='"vocab_size": 256, "hidden_size": 34, "intermediate_size": 48, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64'
refused llama-hidden-34 "{\"model_type\": \"llama\", $odd}" "hidden_size: 34 is not divisible"
# an explicit head_dim does not make LlamaConfig take it either (it was accepted here)
refused llama-hidden-34-hd "{\"model_type\": \"llama\", $odd, \"head_dim\": 8}" "hidden_size: 34 is not divisible"
ok qwen2-hidden-34-hd "{\"model_type\": \"qwen2\", $odd, \"head_dim\": 8}"
for v in qwen2 mistral mixtral; do
  ok "$v-hidden-34" "{\"model_type\": \"$v\", $odd}"
done
expect 0 "qwen2 init, hidden 34" -- "$H" init "$T/qwen2-hidden-34.json" "$T/qwen2-hidden-34"
grep -q '"head_dim": 8' "$T/qwen2-hidden-34/config.json" && pass || fail "init: head_dim 34 // 4 = 8 not written"
refused act "{$base, \"hidden_act\": \"gelu\"}" "hidden_act"
refused mlp-bias "{$base, \"mlp_bias\": true}" "mlp_bias"
refused attn-drop "{$base, \"attention_dropout\": 0.1}" "attention_dropout"
refused jitter "{\"model_type\": \"mixtral\", $base, \"router_jitter_noise\": 0.1}" "router_jitter_noise"
refused topk "{\"model_type\": \"mixtral\", $base, \"num_local_experts\": 2, \"num_experts_per_tok\": 3}" "num_experts_per_tok"
refused qwen2-attn-bias "{\"model_type\": \"qwen2\", $base, \"attention_bias\": true}" "attention_bias"
echo "hostile values and types"
nokv="${base/, \"num_key_value_heads\": 2/}"
refused kv-heads "{$nokv, \"num_key_value_heads\": 3}" "num_key_value_heads"
refused kv-zero "{$nokv, \"num_key_value_heads\": 0}" "num_key_value_heads"
refused odd-head "{$base, \"head_dim\": 7}" "head_dim"
refused neg-head "{$base, \"head_dim\": -2}" "head_dim"
refused str-size "{$base, \"hidden_size\": \"32\"}" "hidden_size"
refused zero-layers "{$base, \"num_hidden_layers\": 0}" "num_hidden_layers"
refused huge-vocab "{$base, \"vocab_size\": 2000000000}" "vocab_size"
refused bad-eps "{$base, \"rms_norm_eps\": 0}" "rms_norm_eps"
refused bad-theta "{$base, \"rope_theta\": -1}" "rope_theta"
refused bool-type "{$base, \"tie_word_embeddings\": 1}" "tie_word_embeddings"
refused type-type "{\"model_type\": 3, $base}" "model_type"
refused rope-type "{$base, \"rope_scaling\": [1]}" "rope_scaling"
refused pad "{$base, \"pad_token_id\": 300}" "pad_token_id"
refused seq "{$base}" "max_position_embeddings" 128
refused dtype "{$base, \"torch_dtype\": \"int8\"}" "torch_dtype"
echo "overrides with the family's keys (override_config.json rules)"
cat >"$T/ovr.json" <<JSON
{"name": "ovr", "model": {"family": "llama", "config": {"model_type": "qwen2", $base},
 "overrides": {"rms_norm_eps": 1e-5, "no_such_key": 1}},
 "data": {"path": "$corpus", "tokenizer": "byte", "seq_len": 32},
 "train": {"steps": 1, "batch_size": 2, "lr": 1e-3, "seed": 1}}
JSON
expect 0 "overrides" -- "$H" run "$T/ovr.json" --db "$T/ok.db" --quiet; says "no_such_key"
sed -i 's/"rms_norm_eps": 1e-5/"rms_norm_eps": "small"/' "$T/ovr.json"
expect 2 "an override of the wrong type" -- "$H" run "$T/ovr.json" --db "$T/no2.db"; says "rms_norm_eps"
echo "a non-empty rope_scaling replaces rope_parameters whole, as transformers 5 resolves them"
echo "(its rope_theta was taken from rope_parameters: another model than transformers trains)"
ok rope-theta-1e4 "{$base, \"rope_theta\": 10000.0}"
ok rope-scaling-over-params "{$base, \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1e6}, \"rope_scaling\": {\"rope_type\": \"default\"}}"
ok rope-params-1e6 "{$base, \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1e6}}"
loss_of() { sqlite3 "$T/ok.db" "select loss from steps s join runs r on r.id = s.run_id where r.scenario = '$1'"; }
[ "$(loss_of rope-scaling-over-params)" = "$(loss_of rope-theta-1e4)" ] && pass || fail "rope_scaling over rope_parameters: loss $(loss_of rope-scaling-over-params), theta 1e4's $(loss_of rope-theta-1e4)"
[ "$(loss_of rope-params-1e6)" != "$(loss_of rope-theta-1e4)" ] && pass || fail "rope_parameters' theta 1e6 trained as 1e4"

echo "an override cannot change the model type (qwen2 with overrides.model_type mistral trained qwen2)"
cat >"$T/ovtype.json" <<JSON
{"name": "ovtype", "model": {"family": "llama", "config": {"model_type": "qwen2", $base},
 "overrides": {"model_type": "mistral"}},
 "data": {"path": "$corpus", "tokenizer": "byte", "seq_len": 32},
 "train": {"steps": 1, "batch_size": 2, "lr": 1e-3, "seed": 1}}
JSON
rm -f "$T/no.db"
expect 2 "overrides.model_type another type" -- "$H" run "$T/ovtype.json" --db "$T/no.db"
says "model.overrides.model_type: an override cannot change the model type"
[ ! -e "$T/no.db" ] && pass || fail "the refused override created the store"

finish
