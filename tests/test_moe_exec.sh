#!/usr/bin/env bash
# tests/test_moe_exec.sh: sparse-MoE routing counts through the commands without Python: HARNESS_STEP
# lines with "expert_tokens" recorded by `harness exec`, then show, baseline record/import, compare and
# report. usage: test_moe_exec.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
# gpt2-tiny cut to the 4 steps the fake workloads log (a run that stops before its scenario's
# train.steps is incomplete)
tiny="$T/gpt2-tiny-4.json"
sed -e 's/"steps": 40/"steps": 4/' -e "s#\"data/corpus.txt\"#\"$SRC/scenarios/data/corpus.txt\"#" "$SRC/scenarios/gpt2-tiny.json" >"$tiny"
db="$T/a.db"
# counts of step $1 with $2 extra tokens on layer 1 expert 2: [[...4 counts...],[...4 counts...]]
counts() { echo "[[$((10*$1)),$((20+$1)),30,40],[5,15,$((25+$2)),35]]"; }
# a workload printing 4 steps; drift $1 extra tokens from step 3 on
workload() {
  local f="$1" drift="$2"
  { echo '#!/bin/sh'
    for s in 1 2 3 4; do
      local d=0; [ "$s" -ge 3 ] && d="$drift"
      echo "echo 'HARNESS_STEP {\"v\":1,\"step\":$s,\"loss\":2.5,\"grad_norm\":1.5,\"lr\":0.001,\"tokens\":512,\"step_ms\":10,\"expert_tokens\":$(counts $s $d)}'"
    done; } >"$f"
  chmod +x "$f"
}
flat() { tr -d ' \n' <"$T/out"; }

echo "exec records the counts of every step"
workload "$T/base.sh" 0
expect 0 "exec the baseline workload" -- "$H" exec --scenario "$tiny" --device fake --db "$db" -- "$T/base.sh"
expect 0 "show --json" -- "$H" show 1 --db "$db" --json
flat | grep -qF '"moe":{"layers":2,"experts":4}' && pass || fail "show --json: no moe shape"
for s in 1 2 3 4; do
  flat | grep -qF "\"step\":$s,\"loss\":2.5" || fail "show --json: no step $s"
  flat | grep -qF "\"expert_tokens\":$(counts $s 0)" && pass || fail "show --json: step $s counts"
done
expect 0 "show text" -- "$H" show 1 --db "$db"
grep -q "routing: tokens per expert summed over 2 MoE layers" "$T/out" && pass || fail "show: no routing section"
# step 2: experts 20+5, 22+15, 30+25, 40+35
grep -Eq "^ +2 +25 +37 +55 +75 " "$T/out" && pass || fail "show: step 2 totals: $(grep -E '^ +2 ' "$T/out")"

echo "baseline record keeps them (format 2), import reads them back"
expect 0 "baseline record" -- "$H" baseline record 1 --label moe --out "$T/moe.baseline" --db "$db"
grep -q "^format: harness-baseline 2$" "$T/moe.baseline" && pass || fail "record: not format 2"
grep -q "^expert_tokens step layer e0 e1 e2 e3$" "$T/moe.baseline" && pass || fail "record: no section"
grep -q "^3 1 5 15 25 35$" "$T/moe.baseline" && pass || fail "record: step 3 layer 1"
expect 0 "baseline import" -- "$H" baseline import "$T/moe.baseline" --label moe2 --db "$T/b.db"
expect 0 "baseline record of the import" -- "$H" baseline record 1 --label moe --out "$T/again.baseline" --db "$T/b.db"
grep -v '^\(date\|finished_at\|label\|threads\|load_avg\):' "$T/moe.baseline" >"$T/x1"
grep -v '^\(date\|finished_at\|label\|threads\|load_avg\):' "$T/again.baseline" >"$T/x2"
cmp -s "$T/x1" "$T/x2" && pass || fail "import + record changed the counts: $(diff "$T/x1" "$T/x2" | head -5)"
sed 's/^3 1 5 15 25 35$/3 1 5 15 -25 35/' "$T/moe.baseline" >"$T/bad.baseline"
line=$(grep -n "^3 1 5 15 -25 35$" "$T/bad.baseline" | cut -d: -f1)
expect 2 "baseline import of a negative count" -- "$H" baseline import "$T/bad.baseline" --db "$T/c.db"
says "bad.baseline:$line: expert_tokens: step 3 layer 1 e2: '-25' is not a whole number >= 0"
[ ! -e "$T/c.db" ] && pass || fail "a refused baseline created the store"

echo "compare and report: the routing drift"
workload "$T/drift.sh" 20
expect 0 "exec the drifting workload" -- "$H" exec --scenario "$tiny" --device fake --db "$db" -- "$T/drift.sh"
expect 0 "compare (informational drift)" -- "$H" compare 2 --baseline "$T/moe.baseline" --db "$db"
grep -q "^routing     4 steps compared (2 layers x 4 experts); first differing step 3; max |diff| 20 tokens (step 3, layer 1, expert 2), max rel 0.8 (step 3, layer 1, expert 2) (informational" "$T/out" && pass || fail "compare text: $(grep routing "$T/out")"
grep -q "^verdict: pass" "$T/out" && pass || fail "compare verdict: $(grep verdict "$T/out")"
expect 0 "compare --json" -- "$H" compare 2 --baseline "$T/moe.baseline" --db "$db" --json
flat | grep -qF '"first_differing_step":3' && pass || fail "compare --json: first differing step"
flat | grep -qF '{"step":3,"max_abs":20.0,"max_rel":0.8,"layer":1,"expert":2}' && pass || fail "compare --json: step 3"
expect 0 "report" -- "$H" report 2 --baseline "$T/moe.baseline" --db "$db" --out "$T/rep" --no-plots
grep -q "first at step 3; max 20 tokens (step 3, layer 1, expert 2), rel 0.8; informational" "$T/rep/report.md" && pass || fail "report.md: no routing drift"

echo "a malformed expert_tokens field: warned about, the step kept without counts"
printf '#!/bin/sh\necho %s\n' "'HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5,\"expert_tokens\":[[1,2],[3]]}'" >"$T/badline.sh"
chmod +x "$T/badline.sh"
expect 0 "exec a bad field" -- "$H" exec --device fake --db "$db" -- "$T/badline.sh"
says "step 1: expert_tokens left out: layer 1: not an array of 2 counts (layer 0's length)"
id=$(grep -o "^run [0-9]*: ok" "$T/err" | grep -o "[0-9]*")
expect 0 "show it" -- "$H" show "$id" --db "$db"
grep -q "routing:" "$T/out" && fail "a bad field was recorded" || pass
grep -Eq "^ +1 +2.5 " "$T/out" && pass || fail "the step was not kept"
# expert counts of another shape at a later step are left out with a warning: the run stays one
# table of layers x experts, so show, report and baseline record read it
printf '%s\n' 'HARNESS_STEP {"v":1,"step":1,"loss":2,"expert_tokens":[[1,2],[3,4]]}' \
  'HARNESS_STEP {"v":1,"step":2,"loss":2,"expert_tokens":[[1,2,3],[3,4,5]]}' \
  'HARNESS_STEP {"v":1,"step":3,"loss":2,"expert_tokens":[[1,2],[3,4],[5,6]]}' >"$T/shape.log"
expect 0 "exec of counts that change shape" -- "$H" exec --db "$T/shape.db" -- cat "$T/shape.log"
says "step 2: expert_tokens left out: 2 layers x 3 experts"; says "step 3: expert_tokens left out: 3 layers x 2 experts"
expect 0 "show it" -- "$H" show 1 --db "$T/shape.db"
expect 0 "show --json of it" -- "$H" show 1 --json --db "$T/shape.db"
expect 0 "report of it" -- "$H" report 1 --no-plots --out "$T/shape-rep" --db "$T/shape.db"

finish
