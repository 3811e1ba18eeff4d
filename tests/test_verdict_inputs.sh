#!/usr/bin/env bash
# tests/test_verdict_inputs.sh: a golden or a deciding verdict's input that is not there is
# exit 2 in report (plain and --since) and in run --compare before anything trains; transitions;
# a committed golden file is imported on first use, as a baseline file is.
# usage: test_verdict_inputs.sh HARNESS_EXE SOURCE_DIR
set -u
H="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
prints() { if grep -qF -- "$1" "$T/out"; then pass; else fail "stdout lacks '$1':"; sed 's/^/    /' "$T/out" | head -20; fi; }
snapshot() { sha256sum <"$1" >"$T/db.sha"; }
unchanged() { if sha256sum <"$1" | cmp -s - "$T/db.sha"; then pass; else fail "$2 changed the store"; fi; }
no_dir() { [ ! -e "$1" ] && pass || fail "$2 made $1"; }

cd "$T"
# a short gpt2-tiny (another hash than the committed baseline's: no usable default baseline)
sed -e "s#\"data/corpus.txt\"#\"$SRC/scenarios/data/corpus.txt\"#" -e 's/"steps": 40/"steps": 6/' \
  "$SRC/scenarios/gpt2-tiny.json" >"$T/s.json"
db="$T/h.db"
expect 0 "run 1" -- "$H" run "$T/s.json" --db "$db" --quiet
expect 0 "run 2" -- "$H" run "$T/s.json" --db "$db" --quiet
sed 's/^world_size: 1/world_size: 0/' "$SRC/baselines/gpt2-tiny.cpu.baseline" >"$T/bad.baseline"
snapshot "$db"

# ---- report: what was asked for beyond the baseline is an input error, before anything is made
expect 2 "report --golden a malformed file" -- "$H" report 2 --golden ./bad.baseline --db "$db" --out r1 --no-plots
says "bad.baseline:14: world_size"; no_dir r1 "a bad --golden file"
expect 2 "report --golden no such run" -- "$H" report 2 --golden 999 --db "$db" --out r1 --no-plots
says "--golden 999"; no_dir r1 "--golden 999"
expect 2 "report --golden no such run, no run given" -- "$H" report --golden 999 --db "$db" --out r1 --no-plots
expect 2 "report --golden no such label" -- "$H" report 2 --golden nosuch --db "$db" --out r1 --no-plots
says "no golden 'nosuch'"; no_dir r1 "--golden nosuch"
expect 2 "report --golden an fp32 run" -- "$H" report 2 --golden 1 --baseline 1 --db "$db" --out r1 --no-plots
says "a golden is an fp64 run"; no_dir r1 "--golden 1"
expect 2 "report --verdict error_ratio without a golden" -- "$H" report 2 --verdict error_ratio --db "$db" --out r1 --no-plots
says "the error_ratio verdict needs a golden run"; no_dir r1 "--verdict error_ratio"
expect 2 "report --verdict error_ratio, a usable baseline, no golden" -- "$H" report 2 --baseline 1 --verdict error_ratio --db "$db" --out r1 --no-plots
says "the error_ratio verdict needs a golden run"
expect 2 "report --verdict ensemble against a single run" -- "$H" report 2 --baseline 1 --verdict ensemble --db "$db" --out r1 --no-plots
says "the ensemble verdict needs an ensemble baseline"; no_dir r1 "--verdict ensemble"
unchanged "$db" "the refused reports"
# a run whose baseline cannot be used still gets its row: not an input error
expect 0 "report --verdict ensemble, no usable baseline: a row" -- "$H" report 2 --verdict ensemble --db "$db" --out r2 --no-plots
prints "1 without baseline"
expect 0 "report with a usable baseline" -- "$H" report 2 --baseline 1 --db "$db" --out r3 --no-plots
prints "1 pass"
# --since: the same inputs refused
expect 2 "report --since, --golden a malformed file" -- "$H" report --since 1 --golden ./bad.baseline --db "$db"
expect 2 "report --since, --golden no such run" -- "$H" report --since 1 --golden 999 --db "$db"
expect 2 "report --since, --golden no such label" -- "$H" report --since 1 --golden nosuch --db "$db"
says "no golden 'nosuch'"
expect 2 "report --since, --verdict error_ratio without a golden" -- "$H" report --since 1 --verdict error_ratio --db "$db"
says "the error_ratio verdict needs a golden run"

# ---- transitions: the newest run fails while the one before could not be judged -> exit 1
cp "$db" "$T/rec.db"
expect 0 "record run 1 as a file" -- "$H" baseline record 1 --label ref --out "$T/ref.baseline" --db "$T/rec.db"
awk '$1 == 3 && NF == 10 { $2 = $2 * 1.01 } { print }' "$T/ref.baseline" | sed 's/^label: ref$/label: moved/' >"$T/moved.baseline"
cp "$db" "$T/t.db"
expect 1 "compare run 2 against a moved baseline: fail stored" -- "$H" compare 2 --baseline "$T/moved.baseline" --db "$T/t.db"
expect 1 "transitions: none before, fail since" -- "$H" report --since 1 --db "$T/t.db" --out tr
grep -E '^\| gpt2-tiny \| cpu \| none \(run 1\) \| fail \(run 2\) \|' "$T/out" >/dev/null && pass || fail "the row: $(grep gpt2 "$T/out")"
grep -q '<failure type="fail"' tr/transitions.xml && pass || fail "no <failure> in transitions.xml: $(cat tr/transitions.xml)"
grep -q 'failures="1"' tr/transitions.xml && pass || fail "failures is not 1"
grep -q '<skipped' tr/transitions.xml && fail "a failing newest run is <skipped>" || pass
# the same with a pass since: no failure
cp "$db" "$T/p.db"
expect 0 "compare run 2 against run 1: pass stored" -- "$H" compare 2 --baseline 1 --db "$T/p.db"
expect 0 "transitions: none before, pass since" -- "$H" report --since 1 --db "$T/p.db" --out tp
grep -q 'failures="0"' tp/transitions.xml && pass || fail "a passing newest run failed"
# neither side judged: not judged, skipped, exit 0
expect 0 "transitions: nothing judged" -- "$H" report --since 1 --db "$db" --out tn
prints "**not judged**"; grep -q '<skipped' tn/transitions.xml && pass || fail "not judged is not <skipped>"

# ---- run --compare: the deciding verdict's input checked before any cell trains
python3 - "$T/s.json" "$T/er.json" "$T/en.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for path, verdict in ((sys.argv[2], "error_ratio"), (sys.argv[3], "ensemble")):
    s["tolerances"]["verdict"] = verdict
    json.dump(s, open(path, "w"))
EOF
mkdir -p "$T/b_er" "$T/b_en"
expect 0 "run er" -- "$H" run "$T/er.json" --db "$T/er_src.db" --quiet
expect 0 "its baseline, no golden" -- "$H" baseline record 1 --label cpu --dir "$T/b_er" --db "$T/er_src.db"
expect 0 "run en" -- "$H" run "$T/en.json" --db "$T/en_src.db" --quiet
expect 0 "its single-run baseline" -- "$H" baseline record 1 --label cpu --dir "$T/b_en" --db "$T/en_src.db"
expect 2 "run --compare, error_ratio, no golden" -- "$H" run "$T/er.json" --compare --baselines "$T/b_er" --db "$T/n.db" --quiet
says "the error_ratio verdict needs a golden run"; prints "no golden run, which the error_ratio verdict needs"
prints "nothing was trained or recorded"; no_dir "$T/n.db" "run --compare without a golden"
expect 2 "run --compare, ensemble, a single-run baseline" -- "$H" run "$T/en.json" --compare --baselines "$T/b_en" --db "$T/n.db" --quiet
says "the ensemble verdict needs an ensemble baseline"; prints "the ensemble verdict needs an ensemble"
no_dir "$T/n.db" "run --compare without an ensemble"
# an existing store is left as it was
cp "$db" "$T/e.db"; snapshot "$T/e.db"
expect 2 "run --compare into a store, no golden" -- "$H" run "$T/er.json" --compare --baselines "$T/b_er" --db "$T/e.db" --quiet
unchanged "$T/e.db" "run --compare without a golden"
# with the golden there, the matrix runs and the error ratio decides
expect 0 "run --golden" -- "$H" run "$T/er.json" --golden --db "$T/g.db" --quiet
expect 0 "run --compare, error_ratio, with a golden" -- "$H" run "$T/er.json" --compare --baselines "$T/b_er" --db "$T/g.db"
prints "[decides]"; prints "worst verdict: pass"
# ---- a golden found as a committed file by run --compare is imported and labelled, as the
# baseline is: report and compare from another folder find it in the store (they exited 2)
mkdir -p er/scenarios er/baselines
python3 - "$T/s.json" er/scenarios/s-er.json <<'EOF'
import json, sys
s = json.load(open(sys.argv[1])); s["name"] = "s-er"; s.setdefault("tolerances", {})["verdict"] = "error_ratio"
json.dump(s, open(sys.argv[2], "w"))
EOF
expect 0 "an error_ratio scenario's reference" -- "$H" run er/scenarios/s-er.json --db ref.db --quiet
expect 0 "its baseline file" -- "$H" baseline record 1 --label cpu --dir er/baselines --db ref.db
expect 0 "its golden" -- "$H" run er/scenarios/s-er.json --golden --db ref.db --quiet
expect 0 "its golden file" -- "$H" baseline record 2 --label golden --dir er/baselines --db ref.db
expect 0 "the gate, decided by the error ratio" -- "$H" run er/scenarios/s-er.json --compare --db er.db --quiet
expect 0 "report from another folder" -- sh -c "mkdir -p elsewhere && cd elsewhere && exec '$H' report --db '$T/er.db' --out rep --no-plots"
expect 0 "compare from another folder" -- sh -c "cd elsewhere && exec '$H' compare 1 --db '$T/er.db'"
prints "decided by: error_ratio"

finish
