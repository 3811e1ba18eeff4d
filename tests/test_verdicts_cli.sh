#!/usr/bin/env bash
# tests/test_verdicts_cli.sh: golden runs (run --golden, found by compare), the error-ratio and
# ensemble verdicts on cpu runs, the transitions table, and hostile inputs that exit 2 unwritten.
# usage: test_verdicts_cli.sh HARNESS_EXE SOURCE_DIR
set -u
H="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
prints() { if grep -qF -- "$1" "$T/out"; then pass; else fail "stdout lacks '$1':"; sed 's/^/    /' "$T/out" | head -20; fi; }
# rows TABLE: the rows of a table of $db (0 when there is no database)
rows() {
  [ -f "$db" ] || { echo 0; return; }
  if command -v sqlite3 >/dev/null; then sqlite3 "$db" "SELECT count(*) FROM $1"
  else python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM " + sys.argv[2]).fetchone()[0])' "$db" "$1"; fi
}
# unwritten WHAT -- cmd...: exits 2 and adds no run, comparison or label
unwritten() {
  local what="$1"; shift
  local before; before="$(rows runs) $(rows comparisons) $(rows baselines)"
  expect 2 "$what" "$@"
  local after; after="$(rows runs) $(rows comparisons) $(rows baselines)"
  [ "$before" = "$after" ] && pass || fail "$what wrote the store: $before -> $after"
}
run_id() { sed -n 's/^run \([0-9]*\): ok,.*/\1/p' "$T/out" | tail -1; }

cd "$T"
db="$T/v.db"
tiny="$SRC/scenarios/gpt2-tiny.json"
# a short gpt2-tiny: the same scenario (and hash) for every run here
sed 's/"steps": 40/"steps": 6/' "$tiny" >"$T/tiny.json"
sed -i "s#\"data/corpus.txt\"#\"$SRC/scenarios/data/corpus.txt\"#" "$T/tiny.json"
S="$T/tiny.json"

# ---- golden run: trained on cpu64, labelled golden, found by compare ----
expect 2 "run --golden on opencl" -- "$H" run "$S" --golden --device opencl --db "$db"
says "--golden trains on cpu64"
[ ! -f "$db" ] && pass || fail "run --golden --device opencl created the store"
expect 2 "run --golden --compare" -- "$H" run "$S" --golden --compare --db "$db"
expect 0 "run --golden" -- "$H" run "$S" --golden --db "$db" --quiet
golden=$(run_id); prints "golden run of gpt2-tiny: run $golden (label 'golden')"
expect 0 "baseline list" -- "$H" baseline list --db "$db"
grep -qE "^gpt2-tiny +golden +$golden +cpu64 +fp64" "$T/out" && pass || fail "the golden label is not listed: $(cat "$T/out")"
expect 0 "cpu reference run" -- "$H" run "$S" --db "$db" --quiet; ref=$(run_id)
expect 0 "cpu run" -- "$H" run "$S" --db "$db" --quiet; again=$(run_id)
# history: the cpu runs before, not the golden (cpu64, fp64, on the same processor name)
expect 0 "history of a cpu run beside a golden" -- "$H" compare "$again" --history --json --db "$db"
tr -d ' \n' <"$T/out" | grep -q "\"previous_runs\":\[$ref\]" && pass || { fail "history of run $again is not run $ref alone"; grep -A3 previous_runs "$T/out"; }

# the repeated cpu run against the cpu reference: same bits, same error: ratio 1, pass
expect 0 "compare --verdict error_ratio" -- "$H" compare "$again" --baseline "$ref" --verdict error_ratio --db "$db"
prints "golden      golden label 'golden' in the store (run $golden): gpt2-tiny on cpu64, fp64"
grep -qE "^error_ratio .* ratio 1; rule <= 3 \* ref \+ 1e-06: pass; msprobe pass.*\[decides\]" "$T/out" && pass || fail "no passing error ratio 1: $(grep error_ratio "$T/out")"
prints "decided by: error_ratio"
expect 0 "compare --json" -- "$H" compare "$again" --baseline "$ref" --golden "$golden" --json --db "$db"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); e=d["error_ratio"]; assert e["golden_run"]==int(sys.argv[2]) and e["ratio"]==1 and e["passed"] and len(e["steps"])==6 and d["decided_by"]=="band", d' "$T/out" "$golden" && pass || fail "the JSON error_ratio is not as expected"
# a reference equal to the golden: RMSE(baseline - golden) is 0, only the floor is left
expect 0 "compare with the golden as reference" -- "$H" compare "$again" --baseline "$golden" --db "$db"
grep -qE "^error_ratio .*RMSE\(baseline - golden\) 0 " "$T/out" && pass || fail "the golden as its own reference: $(grep error_ratio "$T/out")"
# a deliberately wrong run: the reference's file with every loss shifted by 1e-3 as the "run"
expect 0 "baseline record" -- "$H" baseline record "$ref" --label cpu --dir "$T/bl" --db "$db"
awk 'BEGIN{t=0} /^step /{t=1; print; next} t && NF>2 {$2=$2+1e-3} {print}' "$T/bl/gpt2-tiny.cpu.baseline" |
  sed 's/^label: cpu$/label: shifted/' >"$T/shifted.baseline"
expect 0 "import the shifted run" -- "$H" baseline import "$T/shifted.baseline" --db "$db"
shifted=$(sed -n 's/.* imported as run \([0-9]*\).*/\1/p' "$T/out")
expect 1 "shifted run fails the error ratio" -- "$H" compare "$shifted" --baseline "$ref" --verdict error_ratio --db "$db"
grep -qE "^verdict: fail: error ratio .*: RMSE\(run - golden\) .* > 3 \* RMSE\(baseline - golden\)" "$T/out" && pass || fail "no error-ratio failure: $(grep verdict "$T/out")"

# ---- ensemble: recorded on cpu, the repeated run passes, the shifted one fails ----
expect 0 "baseline record --ensemble 4" -- "$H" baseline record "$S" --ensemble 4 --label ens --dir "$T/bl" --db "$db"
prints "ensemble baseline 'ens' of gpt2-tiny: mean and std of 4 runs, 6 steps"
grep -q "^format: harness-baseline 3$" "$T/bl/gpt2-tiny.ens.baseline" && pass || fail "the ensemble file is not format 3"
m0=$(sed -n 's/^ensemble member 1 (perturbation 0): run \([0-9]*\)$/\1/p' "$T/out")
m1=$(sed -n 's/^ensemble member 2 (perturbation 1): run \([0-9]*\)$/\1/p' "$T/out")
# perturbation 0 is the normal bits; perturbation 1 sums the GEMMs in another order
expect 0 "member 0 against a plain run" -- "$H" compare "$m0" --baseline "$ref" --db "$db"
grep -qE "^loss +6 steps compared, 0 out of tolerance; max \|diff\| 0 \(step 1\)" "$T/out" && pass || fail "perturbation 0 is not bit-identical: $(grep ^loss "$T/out")"
expect 0 "member 1 against a plain run" -- "$H" compare "$m1" --baseline "$ref" --db "$db"
grep -qE "^loss +6 steps compared, 0 out of tolerance; max \|diff\| 0 " "$T/out" && fail "perturbation 1 changed no bit" || pass
grep -q "^ensemble_runs: 4$" "$T/bl/gpt2-tiny.ens.baseline" && pass || fail "no ensemble_runs: 4"
grep -q " loss_std$" "$T/bl/gpt2-tiny.ens.baseline" && pass || fail "no loss_std column"
expect 0 "repeated cpu run in the ensemble band" -- "$H" compare "$again" --baseline ens --verdict ensemble --db "$db"
grep -qE "^ensemble +4 runs; 6 steps compared, 0 outside mean \+- 3 \* std \+ 1e-06" "$T/out" && pass || fail "no passing ensemble line: $(grep ^ensemble "$T/out")"
expect 1 "shifted run out of the ensemble band" -- "$H" compare "$shifted" --baseline ens --verdict ensemble --db "$db"
grep -qE "^verdict: fail: loss at step 1: .* vs ensemble mean .* > 3 \* std" "$T/out" && pass || fail "no ensemble failure: $(grep verdict "$T/out")"
# the file into another store: same verdicts (the spread is stored with it)
db2="$T/v2.db"
expect 0 "import the ensemble" -- "$H" baseline import "$T/bl/gpt2-tiny.ens.baseline" --db "$db2"
expect 0 "a cpu run in the second store" -- "$H" run "$S" --db "$db2" --quiet; r2=$(run_id)
expect 0 "ensemble verdict from the imported file" -- "$H" compare "$r2" --baseline ens --verdict ensemble --db "$db2"
# the scenario's tolerances.verdict decides when no --verdict is given
sed 's/"tolerances": {/"tolerances": {"verdict": "ensemble", "ensemble_k": 3, "ensemble_floor": 1e-6, "error_ratio_k": 3, /' "$S" >"$T/tiny_ens.json"
grep -q '"verdict": "ensemble"' "$T/tiny_ens.json" && pass || fail "the scenario edit did not apply"

# ---- hostile inputs: exit 2, nothing written ----
for bad in '"verdict": "median"' '"verdict": 3' '"error_ratio_k": 0' '"error_ratio_k": -1' \
           '"ensemble_k": "3"' '"ensemble_floor": -1e-6' '"error_ratio_floor": null'; do
  sed "s/\"tolerances\": {/\"tolerances\": {$bad, /" "$S" >"$T/bad.json"
  unwritten "scenario with $bad" -- "$H" run "$T/bad.json" --db "$db"
  says "tolerances"
done
unwritten "compare --verdict median" -- "$H" compare "$again" --verdict median --db "$db"
says "--verdict: 'median' is not band, error_ratio or ensemble"
unwritten "compare --golden ''" -- "$H" compare "$again" --golden "" --db "$db"
unwritten "history with --golden" -- "$H" compare "$again" --history --golden "$golden" --db "$db"
unwritten "golden that is no fp64 run" -- "$H" compare "$again" --baseline "$ref" --golden "$ref" --db "$db"
says "a golden is an fp64 run"
unwritten "golden label that does not exist" -- "$H" compare "$again" --baseline "$ref" --golden nosuch --db "$db"
says "no golden 'nosuch' for scenario 'gpt2-tiny'"
unwritten "golden run that does not exist" -- "$H" compare "$again" --baseline "$ref" --golden 999 --db "$db"
# a golden of another scenario (the full 40-step gpt2-tiny on cpu64)
expect 0 "another scenario's cpu64 run" -- "$H" run "$tiny" --device cpu64 --steps 3 --db "$db" --quiet; other=$(run_id)
unwritten "golden of another scenario" -- "$H" compare "$again" --baseline "$ref" --golden "$other" --db "$db"
says "a golden must be of the run's scenario"
unwritten "ensemble verdict on a single-run baseline" -- "$H" compare "$again" --baseline "$ref" --verdict ensemble --db "$db"
says "the ensemble verdict needs an ensemble baseline"
db3="$T/nogolden.db"
expect 0 "a run without golden" -- "$H" run "$S" --db "$db3" --quiet; lone=$(run_id)
expect 0 "its reference" -- "$H" run "$S" --db "$db3" --quiet; lref=$(run_id)
expect 0 "compare without golden: no error ratio, band decides" -- "$H" compare "$lone" --baseline "$lref" --db "$db3"
grep -q "^error_ratio" "$T/out" && fail "an error ratio without a golden" || pass
unwritten "error_ratio verdict without golden" -- "$H" compare "$lone" --baseline "$lref" --verdict error_ratio --db "$db3"
says "the error_ratio verdict needs a golden run"
# the default golden of another length (--golden --steps 2): left out with a warning, the band
# decides; named with --golden it is an input error, and so is the error_ratio verdict then
expect 0 "a short golden under the default label" -- "$H" run "$S" --golden --steps 2 --db "$db3" --quiet
expect 0 "compare beside a golden of another length" -- "$H" compare "$lone" --baseline "$lref" --db "$db3"
says "the default golden is left out: no error ratio"; prints "verdict: pass"
grep -q "^error_ratio" "$T/out" && fail "an error ratio from a golden of another length" || pass
unwritten "error_ratio verdict beside a golden of another length" -- "$H" compare "$lone" --baseline "$lref" --verdict error_ratio --db "$db3"
says "the error_ratio verdict needs a golden run"
unwritten "--golden golden of another length" -- "$H" compare "$lone" --baseline "$lref" --golden golden --db "$db3"
says "a golden must be of the run's scenario"
for n in 1 9 0 abc 2.5 ''; do
  unwritten "--ensemble '$n'" -- "$H" baseline record "$S" --ensemble "$n" --label x --dir "$T/bl" --db "$db"
done
unwritten "--ensemble on opencl" -- "$H" baseline record "$S" --ensemble 2 --device opencl --label x --dir "$T/bl" --db "$db"
unwritten "--ensemble without label" -- "$H" baseline record "$S" --ensemble 2 --dir "$T/bl" --db "$db"
unwritten "--ensemble of a missing scenario" -- "$H" baseline record "$T/nosuch.json" --ensemble 2 --label x --dir "$T/bl" --db "$db"
[ ! -f "$T/bl/gpt2-tiny.x.baseline" ] && pass || fail "a refused ensemble wrote its file"
# ensemble files whose arrays do not match
ens="$T/bl/gpt2-tiny.ens.baseline"
sed 's/ loss_std$//' "$ens" >"$T/e1.baseline"                            # no std column
awk '/^step /{t=1; print; next} t{NF=NF-1} {print}' "$ens" >"$T/e2.baseline"  # a value short
sed 's/^ensemble_runs: 4$/ensemble_runs: 12/' "$ens" >"$T/e3.baseline"
sed '/^ensemble_runs: 4$/d' "$ens" >"$T/e4.baseline"
sed 's/^format: harness-baseline 3$/format: harness-baseline 1/' "$ens" >"$T/e5.baseline"
awk '/^step /{t=1; print; next} t && !d {$NF="-0.5"; d=1} {print}' "$ens" >"$T/e6.baseline"
for k in 1 2 3 4 5 6; do
  unwritten "malformed ensemble file e$k" -- "$H" baseline import "$T/e$k.baseline" --label e$k --db "$db"
done

# ---- transitions: pass -> fail is a new failure, fail -> pass fixed ----
db4="$T/t.db"
expect 0 "cpu64 run (gone later)" -- "$H" run "$S" --device cpu64 --db "$db4" --quiet; t0=$(run_id)
expect 0 "t1" -- "$H" run "$S" --db "$db4" --quiet; t1=$(run_id)
expect 0 "t1 passes" -- "$H" compare "$t1" --baseline "$T/bl/gpt2-tiny.cpu.baseline" --db "$db4"
expect 0 "t2" -- "$H" run "$S" --db "$db4" --quiet; t2=$(run_id)
expect 1 "t2 fails against the shifted baseline" -- "$H" compare "$t2" --baseline "$T/shifted.baseline" --db "$db4"
expect 1 "report --since t1: new failure" -- "$H" report --since "$t1" --db "$db4" --out "$T/tr"
prints "| gpt2-tiny | cpu | pass (run $t1) | fail (run $t2) | **new failure** |"
prints "| gpt2-tiny | cpu64 |"
grep -q "| gpt2-tiny | cpu64 | .* | - | \*\*gone\*\* |" "$T/out" && pass || fail "no gone row: $(cat "$T/out")"
[ -s "$T/tr/transitions.md" ] && [ -s "$T/tr/transitions.html" ] && pass || fail "no transitions files"
python3 -c 'import sys, xml.dom.minidom as m; d=m.parse(sys.argv[1]); f=d.getElementsByTagName("failure"); s=d.getElementsByTagName("skipped"); assert len(f)==1 and f[0].getAttribute("type")=="fail" and "new failure" in f[0].getAttribute("message") and len(s)==1, (len(f), len(s))' "$T/tr/transitions.xml" && pass || fail "transitions.xml: not one failure (cpu) and one skipped (cpu64)"
expect 0 "t3" -- "$H" run "$S" --db "$db4" --quiet; t3=$(run_id)
expect 0 "t3 passes" -- "$H" compare "$t3" --baseline "$T/bl/gpt2-tiny.cpu.baseline" --db "$db4"
expect 0 "report --since t2: fixed" -- "$H" report --since "$t2" --db "$db4"
prints "| gpt2-tiny | cpu | fail (run $t2) | pass (run $t3) | **fixed** |"
expect 0 "report --since a date before every run: all new" -- "$H" report --since 2000-01-01 --db "$db4"
prints "| gpt2-tiny | cpu | - | pass (run $t3) | **new** |"
expect 0 "report --since a leap day" -- "$H" report --since 2024-02-29 --db "$db4"
for bad in 2026-13 2026-01-01T25 yesterday -1 '' 2026-13-40 2026-00-10 2026-02-29 2026-11-24T24:00 2026-11-24T10:60 2026-11-24T10:59:60Z; do
  unwritten "report --since '$bad'" -- "$H" report --since "$bad" --db "$db4"
done
unwritten "report --since a missing run" -- "$H" report --since 9999 --db "$db4"
unwritten "report --since with RUN" -- "$H" report "$t1" --since "$t1" --db "$db4"

finish
