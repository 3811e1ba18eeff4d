#!/usr/bin/env bash
# tests/test_lowp_cli.sh: bf16/fp16 runs end to end: the dtype recorded, bit-reproducible cpu runs,
# an injected Inf gradient skipping an fp16 step (scale halved, no update, LR held), loss scales in
# show, show --json and baseline files, and hostile dtypes, hook values and baseline columns.
# usage: test_lowp_cli.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
db="$T/l.db"

# scenario $1 (a file of scenarios/) as $T/$2 with the data path made absolute, then sed $3
scenario() {
  sed -e "s|\"data/corpus.txt\"|\"$SRC/scenarios/data/corpus.txt\"|" -e "${3:-}" \
    "$SRC/scenarios/$1" >"$T/$2"
}
# the table rows of `harness show $1` as "step loss grad_norm lr [loss_scale skipped]"
rows() {
  "$H" show "$1" --db "$db" |
    awk 'f && $1 ~ /^[0-9]+$/ {print $1, $2, $3, $4, $9, $10} /^ *step +loss/ {f = 1}'
}

scenario gpt2-tiny-bf16.json bf16.json
scenario gpt2-tiny-fp16.json fp16.json
echo "bf16: twice on cpu, the same bits; the run's dtype is bf16"
expect 0 "bf16 run 1" -- "$H" run "$T/bf16.json" --device cpu --steps 6 --db "$db" --quiet
expect 0 "bf16 run 2" -- "$H" run "$T/bf16.json" --device cpu --steps 6 --db "$db" --quiet
rows 1 >"$T/r1"; rows 2 >"$T/r2"
[ -s "$T/r1" ] && cmp -s "$T/r1" "$T/r2" && pass || fail "two bf16 cpu runs differ: $(diff "$T/r1" "$T/r2" | head -3)"
"$H" runs --db "$db" | grep -qE '^ *1 +gpt2-tiny-bf16 +cpu +bf16 ' && pass || fail "run 1's dtype is not bf16"
"$H" show 1 --db "$db" | grep -q 'loss_scale' && fail "a bf16 run shows loss scales" || pass
"$H" show 1 --db "$db" --json | grep -q '"loss_scale": null' && pass || fail "bf16 --json: loss_scale null"

echo "fp16: twice on cpu, the same bits"
expect 0 "fp16 run 1" -- "$H" run "$T/fp16.json" --device cpu --steps 6 --db "$db" --quiet
expect 0 "fp16 run 2" -- "$H" run "$T/fp16.json" --device cpu --steps 6 --db "$db" --quiet
rows 3 >"$T/r3"; rows 4 >"$T/r4"
[ -s "$T/r3" ] && cmp -s "$T/r3" "$T/r4" && pass || fail "two fp16 cpu runs differ"
awk '$5 != 65536 || $6 != "no" {bad = 1} END {exit bad}' "$T/r3" && pass \
  || fail "fp16 steps without Inf: scale 65536, none skipped: $(head -2 "$T/r3")"

echo "fp16 with an Inf gradient injected at step 3 (HARNESS_INJECT_INF_GRAD)"
expect 0 "inject at 3" -- env HARNESS_INJECT_INF_GRAD=3 "$H" run "$T/fp16.json" --device cpu \
  --steps 3 --save "$T/skip3" --db "$db"
says "gradient 0 set to +Inf"
grep -q "step     3/3  skipped: Inf/NaN gradients at loss scale 65536" "$T/out" && pass \
  || fail "the run says step 3 was skipped"
expect 0 "inject at 3, 5 steps" -- env HARNESS_INJECT_INF_GRAD=3 "$H" run "$T/fp16.json" \
  --device cpu --steps 5 --db "$db" --quiet
rows 6 >"$T/r6"
[ "$(awk '$1 == 3 {print $3, $5, $6}' "$T/r6")" = "inf 65536 yes" ] && pass \
  || fail "step 3: grad_norm inf, scale 65536, skipped: $(awk '$1 == 3' "$T/r6")"
[ "$(awk '$1 == 4 {print $5, $6}' "$T/r6")" = "32768 no" ] && pass \
  || fail "step 4: the scale halved: $(awk '$1 == 4' "$T/r6")"
[ "$(awk '$1 == 3 {print $4}' "$T/r6")" = "$(awk '$1 == 4 {print $4}' "$T/r6")" ] && pass \
  || fail "the scheduler did not step over the skipped step (lr of steps 3 and 4)"
"$H" show 6 --db "$db" --json | tr -d ' \n' | grep -q '"step":3,[^}]*"loss_scale":65536.0,"skipped":true' \
  && pass || fail "show --json: step 3 loss_scale 65536, skipped true"
echo "compare: a step skipped on both sides is no divergence; skipped on one side only fails"
expect 0 "inject at 3 again" -- env HARNESS_INJECT_INF_GRAD=3 "$H" run "$T/fp16.json" \
  --device cpu --steps 5 --db "$db" --quiet
expect 0 "compare skipped vs skipped" -- "$H" compare 7 --baseline 6 --db "$db"
grep -q '^verdict: pass' "$T/out" && pass || fail "two runs skipping step 3 do not pass: $(grep verdict "$T/out")"
expect 0 "5 steps, none skipped" -- "$H" run "$T/fp16.json" --device cpu --steps 5 --db "$db" --quiet
expect 1 "compare not skipped vs skipped" -- "$H" compare 8 --baseline 6 --db "$db"
grep -q '^verdict: fail' "$T/out" && pass || fail "a run not skipping step 3 passes against one that did"
echo "the skipped step changed no weight: 3 steps with step 3 skipped = 2 steps"
expect 0 "2 steps" -- "$H" run "$T/fp16.json" --device cpu --steps 2 --save "$T/two" --db "$db" --quiet
cmp -s "$T/skip3/model.safetensors" "$T/two/model.safetensors" && pass \
  || fail "weights after a skipped step 3 differ from those after step 2"

echo "bf16 has no loss scaling: an Inf gradient diverges the run"
expect 1 "bf16 inject" -- env HARNESS_INJECT_INF_GRAD=2 "$H" run "$T/bf16.json" --device cpu \
  --steps 3 --db "$db" --quiet
"$H" runs --db "$db" --limit 1 | grep -q diverged && pass || fail "the bf16 run is diverged"

echo "an fp16 baseline keeps the loss scales through record and import"
expect 0 "record" -- "$H" baseline record 6 --label skip --out "$T/b.baseline" --db "$db"
grep -q 'loss_scale skipped$' "$T/b.baseline" && pass || fail "the baseline's header lacks the columns"
expect 0 "import" -- "$H" baseline import "$T/b.baseline" --db "$T/other.db"
"$H" show 1 --db "$T/other.db" | awk '$1 == 3 {exit !($9 == 65536 && $10 == "yes")}' && pass \
  || fail "the imported run's step 3 lost its scale or skip"
sed 's/^\(3 .*\) 65536 1$/\1 65536 2/' "$T/b.baseline" >"$T/bad.baseline"
expect 2 "skipped 2" -- "$H" baseline import "$T/bad.baseline" --db "$T/bad.db"
says "skipped"
for v in 0 -65536 nan inf x; do
  sed "s/^\(3 .*\) 65536 1\$/\1 $v 1/" "$T/b.baseline" >"$T/bad.baseline"
  expect 2 "loss_scale $v" -- "$H" baseline import "$T/bad.baseline" --db "$T/bad.db"
  says "loss_scale"
done
[ ! -e "$T/bad.db" ] || [ "$("$H" runs --db "$T/bad.db" | grep -c gpt2)" = 0 ] && pass \
  || fail "a refused baseline was imported"

echo "hostile input"
scenario gpt2-tiny-bf16.json bad.json 's/"dtype": "bf16"/"dtype": "bf8"/'
expect 2 "dtype bf8" -- "$H" run "$T/bad.json" --device cpu --db "$T/none.db"
says "dtype"
scenario gpt2-tiny-bf16.json bad2.json 's/"dtype": "bf16"/"dtype": 16/'
expect 2 "dtype a number" -- "$H" run "$T/bad2.json" --device cpu --db "$T/none.db"
says "dtype"
for v in abc 0 -1 3x 99999999999; do
  expect 2 "hook $v" -- env HARNESS_INJECT_INF_GRAD="$v" "$H" run "$T/fp16.json" --device cpu \
    --steps 2 --db "$T/none.db"
  says "HARNESS_INJECT_INF_GRAD"
done
[ ! -e "$T/none.db" ] && pass || fail "a refused run wrote a store"
finish
