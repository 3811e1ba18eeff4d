#!/usr/bin/env bash
# tests/test_report_baseline_fields.sh: the report's model column for every config naming, JUnit of
# a run with no failing step, whole-number options, baseline header checks and import reuse.
# usage: test_report_baseline_fields.sh HARNESS_EXE SOURCE_DIR
set -u
H="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
prints() { if grep -qF -- "$1" "$T/out"; then pass; else fail "stdout lacks '$1':"; sed 's/^/    /' "$T/out" | head -20; fi; }
has() { if grep -qF -- "$2" "$1"; then pass; else fail "$1 lacks '$2':"; sed 's/^/    /' "$1" | head -20; fi; }
lacks() { if grep -qF -- "$2" "$1"; then fail "$1 has '$2'"; else pass; fi; }
imported() { "$H" runs --db "$1" --json | grep -c '"imported": true'; }

cd "$T"
committed="$SRC/baselines/gpt2-tiny.cpu.baseline"
sed -e "s#\"data/corpus.txt\"#\"$SRC/scenarios/data/corpus.txt\"#" -e 's/"steps": 40/"steps": 6/' \
  "$SRC/scenarios/gpt2-tiny.json" >"$T/s.json"
db="$T/h.db"
expect 0 "run 1" -- "$H" run "$T/s.json" --db "$db" --quiet
expect 0 "run 2" -- "$H" run "$T/s.json" --db "$db" --quiet

# ---- the model column: each family's config keys, overrides over config, a config elsewhere
# mkbase FILE NAME MODEL_JSON: a one-step baseline of a scenario with that model
mkbase() {
  python3 - "$@" <<'EOF'
import hashlib, json, sys
path, name, model = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
scn = json.dumps({"name": name, "model": model}, sort_keys=True, separators=(",", ":"))
digest = hashlib.sha256(scn.encode()).hexdigest()
open(path, "w").write(f"format: harness-baseline 1\nlabel: m\nscenario: {name}\nscenario_hash: {digest}\n"
                      f"device: cpu\ndtype: fp32\nworld_size: 1\nscenario_json: {scn}\nsteps: 1\n\n"
                      "step loss\n1 2.5\n")
EOF
}
mkbase m1.baseline bert-x '{"family":"bert","config":{"num_hidden_layers":3,"hidden_size":48,"num_attention_heads":6}}'
mkbase m2.baseline llama-x '{"family":"llama","config":{"model_type":"qwen2","num_hidden_layers":5,"hidden_size":80,"num_attention_heads":10},"overrides":{"num_hidden_layers":1}}'
mkbase m3.baseline mixtral-x '{"family":"llama","path":"models/mx","overrides":{"num_hidden_layers":2}}'
mkbase m4.baseline gpt2-x '{"family":"gpt2","config":{"n_layer":7,"n_embd":24,"n_head":3}}'
mkbase m5.baseline repo-x '{"family":"llama","repo":"org/name"}'
mdb="$T/m.db"
for k in 1 2 3 4 5; do expect 0 "import model $k" -- "$H" baseline import "m$k.baseline" --db "$mdb"; done
expect 0 "report of the five" -- "$H" report 1 2 3 4 5 --db "$mdb" --out rm --no-plots
has rm/report.md "bert, 3 layers, 48 wide, 6 heads"
has rm/report.md "llama, 1 layers, 80 wide, 10 heads"
has rm/report.md "llama (config in models/mx), 2 layers"
has rm/report.md "gpt2, 7 layers, 24 wide, 3 heads"
has rm/report.md "llama (config in org/name)"
for f in rm/report.md rm/report.csv; do
  grep -qE '(^|[^0-9.])0 (layers|wide|heads)' "$f" && fail "$f shows a size of 0" || pass
done
has rm/report.csv '"bert, 3 layers, 48 wide, 6 heads"'

# ---- JUnit of an incomplete run: no "first failing step 0"
"$H" show 1 --db "$db" --json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["steps"][:3]:
    print("HARNESS_STEP " + json.dumps({"v": 1, "step": s["step"], "loss": s["loss"], "grad_norm": s["grad_norm"]}))' >"$T/part.log"
cp "$db" "$T/k.db"
expect 0 "ingest 3 of 6 steps" -- "$H" ingest "$T/part.log" --device cpu --scenario "$T/s.json" --db "$T/k.db"
expect 1 "report the incomplete run" -- "$H" report 3 --baseline 1 --db "$T/k.db" --out rk --no-plots
has rk/junit.xml 'type="incomplete"'; has rk/junit.xml "no failing step"
lacks rk/junit.xml "first failing step 0"

# ---- whole-number options: refused, never cut
for o in "--warmup 2.5" "--warmup 1.0000001"; do
  expect 2 "compare $o" -- "$H" compare 2 --baseline 1 $o --db "$db"; says "is not a whole number"
done
expect 2 "compare --history --window 2.5" -- "$H" compare 2 --history --window 2.5 --db "$db"; says "--window: '2.5' is not a whole number"
expect 2 "compare --history --min-runs 1.5" -- "$H" compare 2 --history --min-runs 1.5 --db "$db"; says "--min-runs: '1.5' is not a whole number"
expect 2 "compare --history --warmup 0.5" -- "$H" compare 2 --history --warmup 0.5 --db "$db"; says "--warmup"
expect 0 "compare --warmup 2" -- "$H" compare 2 --baseline 1 --warmup 2 --db "$db"; prints "after 2 and 2 warm-up steps"
# whole numbers are taken (the verdict itself rests on throughput, which no test asserts: a slow
# machine may flag the run, exit 1; an option refused would be exit 2)
"$H" compare 2 --history --window 3 --min-runs 1 --db "$db" >"$T/out" 2>"$T/err"; code=$?
[ "$code" = 0 ] || [ "$code" = 1 ] && pass || fail "compare --history --window 3 --min-runs 1: exit $code"
grep -q "(window 3)" "$T/out" "$T/err" && pass || fail "the history window is not 3"
expect 2 "baseline record --ensemble 2.5" -- "$H" baseline record "$T/s.json" --ensemble 2.5 --label e --db "$T/e.db"
says "is not a whole number"

# ---- baseline headers: required keys not empty, the scenario is scenario_json's name; \x00
hdb="$T/hd.db"
check_refused() { # WHAT FILE TEXT...: import refused naming file, line and field; no store made
  local what="$1" file="$2"; shift 2
  expect 2 "import $what" -- "$H" baseline import "$file" --label x --db "$hdb"
  for t in "$@"; do says "$t"; done
  [ ! -e "$hdb" ] && pass || fail "import $what made the store"
}
sed 's/^scenario: gpt2-tiny$/scenario: /' "$committed" >empty_scn.baseline
check_refused "an empty scenario" empty_scn.baseline "empty_scn.baseline:6: scenario: empty"
sed 's/^device: cpu$/device:/' "$committed" >empty_dev.baseline
check_refused "an empty device" empty_dev.baseline "empty_dev.baseline:8: device: empty"
sed 's/^scenario: gpt2-tiny$/scenario: other-name/' "$committed" >other.baseline
check_refused "another scenario name" other.baseline "other.baseline:6: scenario: 'other-name' is not the name in scenario_json ('gpt2-tiny')"
sed 's/^host: vm$/host: a\\x00b/' "$committed" >nul.baseline
check_refused "a \\x00 in a value" nul.baseline "nul.baseline:16: host: '\\x00' is a NUL byte"
sed 's/^host: vm$/host: a\\x0/' "$committed" >short.baseline
check_refused "a \\x with one digit" short.baseline "short.baseline:16: host: '\\x' needs two hex digits"
expect 0 "the committed file imports" -- "$H" baseline import "$committed" --label x --db "$hdb"

# ---- a scenario diff cuts long values with a marker
python3 - "$T/s.json" "$T/notol.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1])); del s["tolerances"]; json.dump(s, open(sys.argv[2], "w"))
EOF
expect 0 "run without tolerances" -- "$H" run "$T/notol.json" --db "$db" --quiet
expect 2 "compare against another scenario" -- "$H" compare 3 --baseline 1 --db "$db"
says 'tolerances (absent vs {"grad_norm_rtol":0.001,'; says '...)'
grep -qE 'tolerances \(absent vs \{[^)]*[^.]\)' "$T/err" && fail "a cut value without its marker" || pass

# ---- a file without a label, or with a scenario_json not in canonical form, imported once
expect 0 "record run 1" -- "$H" baseline record 1 --label cpu6 --out "$T/r1.baseline" --db "$db"
grep -v '^label:' "$T/r1.baseline" >nolabel.baseline
cp "$db" "$T/u.db"
n0=$(imported "$T/u.db")
expect 0 "compare with an unlabelled file" -- "$H" compare 2 --baseline ./nolabel.baseline --db "$T/u.db"
expect 0 "again" -- "$H" compare 2 --baseline ./nolabel.baseline --db "$T/u.db"
prints "stored as run"
[ "$(imported "$T/u.db")" = $((n0 + 1)) ] && pass || fail "an unlabelled file imported $(( $(imported "$T/u.db") - n0 )) times"
python3 - "$T/r1.baseline" "$T/spaced.baseline" <<'EOF'
import json, sys
out = []
for line in open(sys.argv[1]):
    if line.startswith("scenario_json: "):
        scn = json.loads(line[len("scenario_json: "):])
        line = "scenario_json: " + json.dumps(scn, indent=None, separators=(", ", ": ")) + "\n"
    out.append(line.replace("label: cpu6", "label: spaced"))
open(sys.argv[2], "w").write("".join(out))
EOF
cp "$db" "$T/c.db"
n1=$(imported "$T/c.db")
expect 0 "compare with a non-canonical file" -- "$H" compare 2 --baseline ./spaced.baseline --db "$T/c.db"
expect 0 "again" -- "$H" compare 2 --baseline ./spaced.baseline --db "$T/c.db"
prints "stored as run"
[ "$(imported "$T/c.db")" = $((n1 + 1)) ] && pass || fail "a non-canonical file imported $(( $(imported "$T/c.db") - n1 )) times"
# the same content under a new label in a store that holds it: reused, and the free label set
expect 0 "compare with the spaced file in the store of the unlabelled one" -- "$H" compare 2 --baseline ./spaced.baseline --db "$T/u.db"
prints "stored as run"
[ "$(imported "$T/u.db")" = $((n0 + 1)) ] && pass || fail "the same content imported again under a new label"
expect 0 "the label is set" -- "$H" baseline list --db "$T/u.db"; prints "spaced"
finish
