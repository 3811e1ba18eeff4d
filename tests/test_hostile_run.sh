#!/usr/bin/env bash
# tests/test_hostile_run.sh: `harness run` and `init` given hostile inputs (data, tokenizer, weights,
# device, overflowing sizes, empty paths, a signal during setup): exit 2 and a message naming the
# file and field, the store byte-for-byte as it was and no store created where there was none.
# usage: test_hostile_run.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"

tiny="$SRC/scenarios/gpt2-tiny.json"
corpus="$SRC/scenarios/data/corpus.txt"
bpe_json="$SRC/tests/data/hf/bpe512/tokenizer.json"
db="$T/store.db"      # holds one run; every hostile run must leave it as it was
fresh="$T/fresh.db"   # never exists; no hostile run may create it
# scenario NAME MODEL DATA [TRAIN]: a scenario file $T/NAME.json (MODEL and DATA are JSON members)
scenario() {
  cat >"$T/$1.json" <<EOF
{"name": "$1", "model": {"family": "gpt2", $2},
 "data": {$3},
 "train": {"steps": 2, "batch_size": ${4:-8}, "lr": 3e-3, "seed": 123}}
EOF
}
cfg() { # cfg [KEY=VALUE...]: an inline GPT-2 config, gpt2-tiny's sizes unless given; other
        # members as "KEY": VALUE
  local v=256 p=128 e=64 l=2 h=4 extra="" kv
  for kv in "$@"; do
    case "$kv" in
      vocab_size=*) v=${kv#*=} ;; n_positions=*) p=${kv#*=} ;; n_embd=*) e=${kv#*=} ;;
      n_layer=*) l=${kv#*=} ;; n_head=*) h=${kv#*=} ;; *) extra="$extra, \"${kv%%=*}\": ${kv#*=}" ;;
    esac
  done
  echo "\"config\": {\"vocab_size\": $v, \"n_positions\": $p, \"n_embd\": $e, \"n_layer\": $l,
       \"n_head\": $h, \"attn_pdrop\": 0, \"embd_pdrop\": 0, \"resid_pdrop\": 0$extra}"
}
bytes="\"path\": \"$corpus\", \"tokenizer\": \"byte\", \"seq_len\": 64"

# hostile WHAT TEXT -- ARGS...: `harness ARGS --db` into the store and into no store: exit 2,
# stderr says TEXT, the store unchanged, the fresh one not created
hostile() {
  local what="$1" text="$2"; shift 3
  local before; before=$(sha256sum "$db")
  expect 2 "$what" -- "$H" "$@" --db "$db"; says "$text"
  [ -z "${SHOW_ERR:-}" ] || sed 's/^/  | /' "$T/err"
  [ "$(sha256sum "$db")" = "$before" ] && pass || fail "$what: the store changed"
  expect 2 "$what (no store yet)" -- "$H" "$@" --db "$fresh"; says "$text"
  [ -e "$fresh" ] && { fail "$what: created the store $fresh"; rm -f "$fresh"; } || pass
}

echo "# a store with one run, and a model directory"
expect 0 "first run" -- "$H" run "$tiny" --steps 1 --db "$db"
expect 0 "init a model directory" -- "$H" init "$tiny" "$T/m"
scenario ok "\"path\": \"$T/m\"" "$bytes"
expect 0 "the model directory trains" -- "$H" run "$T/ok.json" --steps 1 --db "$T/other.db"

echo "# data files"
printf 'too short' >"$T/short.txt"
scenario short "$(cfg)" "\"path\": \"$T/short.txt\", \"tokenizer\": \"byte\", \"seq_len\": 64"
hostile "data shorter than a block" "short.txt" -- run "$T/short.json"
: >"$T/empty.txt"
scenario empty "$(cfg)" "\"path\": \"$T/empty.txt\", \"tokenizer\": \"byte\", \"seq_len\": 64"
hostile "empty data file" "empty.txt" -- run "$T/empty.json"
scenario vocab "$(cfg vocab_size=300)" "\"path\": \"$corpus\", \"tokenizer\": \"bpe\", \"tokenizer_path\": \"$bpe_json\", \"seq_len\": 64"
hostile "tokenizer larger than vocab_size" "vocab_size is 300" -- run "$T/vocab.json"

echo "# tokenizer.json"
head -c 2000 "$bpe_json" >"$T/tokenizer.json"
scenario tok "$(cfg vocab_size=512)" "\"path\": \"$corpus\", \"tokenizer\": \"bpe\", \"tokenizer_path\": \"$T/tokenizer.json\", \"seq_len\": 64"
hostile "truncated tokenizer.json" "tokenizer.json" -- run "$T/tok.json"
printf '{"model": {"type": "BPE", "vocab": 7, "merges": []}}' >"$T/tokenizer.json"
hostile "tokenizer.json with a bad vocab" "tokenizer.json" -- run "$T/tok.json"

echo "# model.safetensors"
weights() { # weights NAME: a copy of the model directory $T/m as $T/NAME, scenario $T/NAME.json
  rm -rf "$T/$1"; cp -r "$T/m" "$T/$1"; scenario "$1" "\"path\": \"$T/$1\"" "$bytes"
}
weights garbage; head -c 300 /dev/urandom >"$T/garbage/model.safetensors"
hostile "garbage weights" "model.safetensors" -- run "$T/garbage.json"
weights trunc; head -c 5000 "$T/m/model.safetensors" >"$T/trunc/model.safetensors"
hostile "truncated weights" "model.safetensors" -- run "$T/trunc.json"
scenario narrow "$(cfg n_embd=32)" "$bytes"
expect 0 "init a narrower model" -- "$H" init "$T/narrow.json" "$T/m32"
weights shape; cp "$T/m32/model.safetensors" "$T/shape/model.safetensors"
hostile "misshapen weights" "wte.weight" -- run "$T/shape.json"

echo "# devices"
hostile "unknown device" "nosuch" -- run "$tiny" --device nosuch
hostile "cpu:7" "cpu:7" -- run "$tiny" --device cpu:7
hostile "compare: every cell an input error" "short.txt" -- run "$T/short.json" --compare --device cpu,cpu64

echo "# sizes that overflow"
scenario wide "$(cfg n_embd=1073741824 n_inner=4294967296 n_head=1)" "$bytes"
hostile "inline n_embd 2^30" "model.config.n_embd" -- run "$T/wide.json"
says "wide.json"
scenario vocab_big "$(cfg vocab_size=2000000000)" "$bytes"
hostile "inline vocab_size 2e9" "model.config.vocab_size" -- run "$T/vocab_big.json"
scenario deep "$(cfg n_layer=2000000000)" "$bytes"
hostile "inline n_layer 2e9" "model.config.n_layer" -- run "$T/deep.json"
scenario batch "$(cfg)" "$bytes" 100000000
hostile "batch_size 1e8" "train.batch_size 100000000" -- run "$T/batch.json"
says "batch.json"
scenario huge "$(cfg n_layer=1000)" "$bytes" 4096
hostile "activations larger than the device" "GiB" -- run "$T/huge.json"
says "train.batch_size 4096"
weights cfgwide; sed -i 's/"n_embd": 64/"n_embd": 1073741824/' "$T/cfgwide/config.json"
grep -q 1073741824 "$T/cfgwide/config.json" && pass || fail "config.json edited"
hostile "config.json n_embd 2^30" "config.json" -- run "$T/cfgwide.json"
says "n_embd"
expect 2 "init with n_embd 2^30" -- "$H" init "$T/wide.json" "$T/wide_out"; says "n_embd"
[ -e "$T/wide_out" ] && fail "init created its directory" || pass

echo "# empty paths"
printf 'x' >"$T/afile"
hostile "--save under a file" "afile" -- run "$tiny" --save "$T/afile/sub"
hostile "--save \"\"" "--save" -- run "$tiny" --save ""
hostile "empty scenario path" "SCENARIO" -- run ""
hostile "empty --device" "--device" -- run "$tiny" --device ""
cd "$T" && before=$(sha256sum "$db")
expect 2 "run --db \"\"" -- "$H" run "$tiny" --steps 1 --db ""; says "--db"
grep -q '^step' "$T/out" && fail "run --db \"\" trained" || pass
expect 2 "init SCENARIO \"\"" -- "$H" init "$tiny" ""; says "OUT_DIR"
expect 2 "runs --db \"\"" -- "$H" runs --db ""; says "--db"
expect 2 "runs --db=" -- "$H" runs --db=; says "--db"
expect 2 "show \"\"" -- "$H" show "" --db "$db"
expect 2 "compare --baselines \"\"" -- "$H" compare 1 --baselines "" --db "$db"
expect 2 "report --out \"\"" -- "$H" report 1 --out "" --db "$db"
expect 2 "baseline export --out \"\"" -- "$H" baseline export 1 --out "" --db "$db"
[ "$(sha256sum "$db")" = "$before" ] && pass || fail "the store changed"
[ -z "$(ls "$T" | grep -v -e '\.json$' -e '\.txt$' -e '^store\.db$' -e '^other\.db$' -e '^m' \
  -e '^out$' -e '^err$' -e '^afile$' -e '^garbage$' -e '^trunc$' -e '^shape$' -e '^cfgwide$')" ] \
  && pass || fail "an empty path created something in the working directory: $(ls "$T")"
cd - >/dev/null

echo "# SIGTERM while a large data file is tokenized"
for _ in $(seq 200); do cat "$corpus"; done >"$T/big.txt"
scenario slow "$(cfg vocab_size=512)" "\"path\": \"$T/big.txt\", \"tokenizer\": \"bpe\", \"tokenizer_path\": \"$bpe_json\", \"seq_len\": 64"
"$H" run "$T/slow.json" --db "$fresh" >"$T/out" 2>"$T/err" &
pid=$!
sleep 0.3
if [ -e "$fresh" ]; then
  fail "the store exists 0.3 s in: it was opened before setup, or setup ended that soon (make big.txt larger)"
fi
kill -TERM "$pid"; wait "$pid"; code=$?
[ "$code" = 143 ] && pass || fail "SIGTERM during setup: exit $code, want 143 (killed by SIGTERM)"
[ -e "$fresh" ] && fail "SIGTERM during setup created the store" || pass
before=$(sha256sum "$db")
"$H" run "$T/slow.json" --db "$db" >"$T/out" 2>"$T/err" &
pid=$!
sleep 0.3; kill -TERM "$pid"; wait "$pid"; code=$?
[ "$code" = 143 ] && pass || fail "SIGTERM during setup (existing store): exit $code, want 143"
[ "$(sha256sum "$db")" = "$before" ] && pass || fail "SIGTERM during setup changed the store"

finish
