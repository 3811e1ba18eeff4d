#!/usr/bin/env bash
# tests/test_compare_cli.sh: baseline, compare, report and run --compare end to end: every verdict
# and exit code, the committed baseline as the CI gate, round trips, malformed baselines (exit 2),
# history, report files (JUnit through an XML parser, PNG, SVG) and hostile names run nothing.
# usage: test_compare_cli.sh HARNESS_EXE SOURCE_DIR
set -u
H="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
trap 'rm -rf "$T" /tmp/harness-pwned-$$*' EXIT
prints() { if grep -qF -- "$1" "$T/out"; then pass; else fail "stdout lacks '$1':"; sed 's/^/    /' "$T/out" | head -20; fi; }
# an XML parser accepts the file
xml_ok() {
  if command -v xmllint >/dev/null; then xmllint --noout "$1" 2>"$T/xml.err"
  elif command -v python3 >/dev/null; then python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$1" 2>"$T/xml.err"
  else echo "no XML parser (xmllint or python3) to check $1"; return 1; fi
}
# section: says what the test does next (it trains several small runs: minutes on a busy machine)
section() { echo "== $NAME: $*"; }
png_ok() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }

tiny="$SRC/scenarios/gpt2-tiny.json"
committed="$SRC/baselines/gpt2-tiny.cpu.baseline"
db="$T/h.db"
cd "$T"   # no ./baselines here: the committed file is found next to the scenario

# ---- usage errors
section "usage errors"
for c in compare baseline report; do expect 0 "$c --help" -- "$H" $c --help; done
# labels --baseline could never name again (a run id, a file) are refused before the store opens
for l in 77 a/b lbl.baseline; do
  expect 2 "import --label $l" -- "$H" baseline import "$committed" --label "$l" --db "$T/labels.db"; says "would never find it"
  expect 2 "record --label $l" -- "$H" baseline record 1 --label "$l" --db "$T/labels.db"; says "would never find it"
done
[ ! -e "$T/labels.db" ] && pass || fail "a refused label made the store"
expect 2 "compare without run" -- "$H" compare --db "$db"
expect 2 "compare abc" -- "$H" compare abc --db "$db"; says "abc"
expect 2 "compare no db" -- "$H" compare 1 --db "$T/none.db"; says "no database"
[ ! -e "$T/none.db" ] && pass || fail "compare created a database"
expect 2 "compare --history with --baseline" -- "$H" compare 1 --history --baseline cpu --db "$db"
expect 2 "compare --warmup x" -- "$H" compare 1 --warmup x --db "$db"; says "--warmup"
expect 2 "baseline without subcommand" -- "$H" baseline
expect 2 "baseline frob" -- "$H" baseline frob; says "frob"
expect 2 "baseline record without label" -- "$H" baseline record 1 --db "$db"
expect 2 "report --out ''" -- "$H" report --out "" --db "$db"; says "--out"

# ---- pass: a cpu run against the committed baseline (imported on first use); the CI gate
section "training gpt2-tiny, comparing with the committed baseline"
expect 0 "run tiny" -- "$H" run "$tiny" --db "$db" --quiet
expect 0 "history of the first run" -- "$H" compare 1 --history --db "$db"
prints "no history: no previous ok run"
grep -q nan "$T/out" && fail "compare --history without history prints nan" || pass
expect 0 "history of the first run, JSON" -- "$H" compare 1 --history --db "$db" --json
prints '"median": null'
expect 0 "compare with the committed baseline" -- "$H" compare 1 --db "$db"
prints "verdict: pass"; prints "gpt2-tiny.cpu.baseline (imported as run 2)"
prints "hosts      run: "; prints "; baseline: vm, imported"
prints "(informational, not gated: the scenario sets no min_throughput_ratio)"
grep -qF "scenarios/../baselines" "$T/out" && fail "compare prints scenarios/../baselines" || pass
expect 0 "compare again uses the stored label" -- "$H" compare 1 --db "$db" --json
prints '"verdict": "pass"'; prints "label 'cpu' in the store (run 2)"
prints '"gated": false'; prints '"same_host": '; prints '"imported": true'
prints '"rtol": 0.0001,'   # the shortest real that reads back, not 0.00010000000000000001
expect 0 "runs marks the imported baseline" -- "$H" runs --db "$db"
prints "newest first (by id: the order recorded or imported)"; prints "imported"
expect 0 "runs --json" -- "$H" runs --db "$db" --json; prints '"imported": true'; prints '"threads": '
expect 0 "show the imported baseline" -- "$H" show 2 --db "$db"; prints "imported (a baseline from a file"
expect 0 "show the run: threads recorded" -- "$H" show 1 --db "$db" --json; prints '"imported": false'
grep -q '"threads": [1-9]' "$T/out" && pass || fail "show --json: no thread count recorded for run 1"
expect 2 "compare an unknown run" -- "$H" compare 99 --db "$db"; says "no run 99"
expect 2 "compare with an unknown label" -- "$H" compare 1 --baseline nosuch --db "$db"; says "no baseline 'nosuch'"
says "$SRC/baselines/gpt2-tiny.nosuch.baseline"
grep -qF "scenarios/../baselines" "$T/err" && fail "the message names scenarios/../baselines" || pass

section "verdicts: fail, gate, different scenarios, diverged, incomplete"
# ---- fail: the committed file with one loss moved by 1e-3 (relative), first failing step 7
awk '$1 == 7 && NF == 10 { $2 = $2 * 1.001 } { print }' "$committed" | sed 's/^label: cpu$/label: moved/' >"$T/moved.baseline"
expect 1 "compare against a moved baseline" -- "$H" compare 1 --baseline "$T/moved.baseline" --db "$db"
prints "verdict: fail"; prints "first failing step: 7 (loss)"
expect 1 "--json on fail" -- "$H" compare 1 --baseline "$T/moved.baseline" --db "$db" --json
prints '"first_failing_step": 7'
# a throughput gate the run cannot meet (tolerances are part of the scenario: --force)
sed -e "s#\"data/corpus.txt\"#\"$SRC/scenarios/data/corpus.txt\"#" -e 's/"grad_norm_rtol": 1e-3}/"grad_norm_rtol": 1e-3, "min_throughput_ratio": 1000}/' "$tiny" >"$T/gate.json"
expect 0 "run the gated scenario" -- "$H" run "$T/gate.json" --db "$db" --quiet
gate_run=$(sed -n 's/^run \([0-9]*\):.*/\1/p' "$T/out")
expect 1 "throughput gate" -- "$H" compare "$gate_run" --baseline 1 --force --db "$db"
prints "[gate >= 1000x]"; prints "verdict: fail: throughput"

# ---- scenario hash mismatch: exit 2 naming the field; --force compares and says so
sed -e "s#\"data/corpus.txt\"#\"$SRC/scenarios/data/corpus.txt\"#" -e 's/"lr": 3e-3/"lr": 2e-3/' "$tiny" >"$T/lr.json"
expect 0 "run another lr" -- "$H" run "$T/lr.json" --db "$db" --quiet --steps 5
lr_run=$(sed -n 's/^run \([0-9]*\):.*/\1/p' "$T/out")
expect 2 "different scenario refused" -- "$H" compare "$lr_run" --db "$db"; says "train.lr"; says "--force"
expect 1 "different scenario forced" -- "$H" compare "$lr_run" --baseline cpu --force --db "$db"
prints "FORCED"; prints "train.lr"

# ---- diverged: NaN/Inf loss
sed -e "s#\"data/corpus.txt\"#\"$SRC/scenarios/data/corpus.txt\"#" -e 's/"lr": 3e-3/"lr": 1e30/; s/"warmup_steps": 5/"warmup_steps": 0/; s/"clip": 1.0/"clip": 0/' "$tiny" >"$T/huge.json"
expect 1 "diverging run" -- "$H" run "$T/huge.json" --steps 20 --db "$db" --quiet
div_run=$(sed -n 's/^run \([0-9]*\):.*/\1/p' "$T/out")
expect 1 "diverged verdict" -- "$H" compare "$div_run" --baseline 1 --force --db "$db"; prints "verdict: diverged"
# a failing verdict lost on stdout (a full disk) is an output error too: 2, as for a pass
if [ -w /dev/full ]; then
  expect 2 "diverged verdict > /dev/full" -- sh -c 'exec "$0" "$@" >/dev/full' "$H" compare "$div_run" --baseline 1 --force --db "$db"
  says "writing the output to stdout failed"
fi

# ---- incomplete: killed mid-way
# (--steps is part of the scenario's hash, so the baseline runs the same 40 steps, of a model
# wide enough that a step takes long enough to be killed before the last one)
sed -e "s#\"data/corpus.txt\"#\"$SRC/scenarios/data/corpus.txt\"#" -e 's/"cosine"/"constant"/; s/"n_embd": 64/"n_embd": 256/' "$tiny" >"$T/const.json"
expect 0 "run the constant-lr baseline" -- "$H" run "$T/const.json" --db "$T/k.db" --quiet
expect 0 "record it" -- "$H" baseline record 1 --label const --dir "$T" --db "$T/k.db"
"$H" run "$T/const.json" --db "$T/k.db" >"$T/kill.out" 2>&1 &
pid=$!
printed_at_least() { local n; n=$(grep -c '^step ' "$2" 2>/dev/null); [ "${n:-0}" -ge "$1" ]; }  # the file may not be there yet
wait_until 120 "3 steps printed" -- printed_at_least 3 "$T/kill.out"
kill -9 "$pid"; wait "$pid" 2>/dev/null
expect 1 "incomplete verdict" -- "$H" compare 2 --baseline const --db "$T/k.db"; prints "verdict: incomplete"

# ---- round trip: record -> file -> import -> record: identical
section "baseline files: round trip, extra keys, malformed files, history"
mkdir -p "$T/rt1" "$T/rt2"
expect 0 "record" -- "$H" baseline record 1 --label rt --dir "$T/rt1" --db "$db"
expect 0 "import into a new store" -- "$H" baseline import "$T/rt1/gpt2-tiny.rt.baseline" --db "$T/rt.db"
expect 0 "record the import" -- "$H" baseline record 1 --label rt --dir "$T/rt2" --db "$T/rt.db"
cmp -s "$T/rt1/gpt2-tiny.rt.baseline" "$T/rt2/gpt2-tiny.rt.baseline" && pass || fail "round trip changed the file"
expect 0 "import again: already there" -- "$H" baseline import "$T/rt1/gpt2-tiny.rt.baseline" --db "$T/rt.db"; prints "already in the store"
expect 2 "import a different file under a taken label" -- "$H" baseline import "$T/moved.baseline" --label rt --db "$T/rt.db"; says "--replace"
expect 0 "--replace" -- "$H" baseline import "$T/moved.baseline" --label rt --replace --db "$T/rt.db"
expect 2 "record a diverged run" -- "$H" baseline record "$div_run" --label bad --db "$db" --dir "$T"; says "diverged"
# extra metadata from other tools is kept and printed
sed 's/^status: ok$/status: ok\nsource: pytorch\ntorch_version: 2.1.0/; s/^label: cpu$/label: torch/' "$committed" >"$T/torch.baseline"
expect 0 "import with extra keys" -- "$H" baseline import "$T/torch.baseline" --db "$db"
torch_run=$(sed -n 's/.* as run \([0-9]*\).*/\1/p' "$T/out")
expect 0 "list" -- "$H" baseline list --db "$db"; prints "torch_version: 2.1.0"; prints "torch"
expect 0 "list --json" -- "$H" baseline list --db "$db" --json; prints '"source": "pytorch"'
expect 0 "compare prints the extra keys" -- "$H" compare 1 --baseline torch --db "$db"; prints "source: pytorch"

# ---- malformed baseline files: exit 2 with FILE:LINE
head -n 30 "$committed" >"$T/trunc.baseline"
expect 2 "truncated" -- "$H" baseline import "$T/trunc.baseline" --db "$db"; says "trunc.baseline:"; says "steps:"
head -c 2000 /dev/urandom >"$T/garbage.baseline"
expect 2 "garbage" -- "$H" baseline import "$T/garbage.baseline" --db "$db"; says "garbage.baseline:"
: >"$T/empty.baseline"
expect 2 "empty" -- "$H" baseline import "$T/empty.baseline" --db "$db"; says "empty.baseline:1: format: missing"
sed 's/^format: harness-baseline 1/format: harness-baseline 9/' "$committed" >"$T/v9.baseline"
expect 2 "newer format" -- "$H" baseline import "$T/v9.baseline" --db "$db"; says "v9.baseline:4: format"
sed 's/^10 \([^ ]*\) /10 x\1 /' "$committed" >"$T/num.baseline"
expect 2 "bad number" -- "$H" baseline import "$T/num.baseline" --db "$db"; says "num.baseline:35: loss"
sed 's/"lr":0.003/"lr":0.004/' "$committed" >"$T/edited.baseline"
expect 2 "edited scenario_json" -- "$H" baseline import "$T/edited.baseline" --db "$db"; says "scenario_hash: does not match"
expect 2 "compare with a malformed file" -- "$H" compare 1 --baseline "$T/trunc.baseline" --db "$db"
expect 2 "import a missing file" -- "$H" baseline import "$T/nope.baseline" --db "$db"; says "nope.baseline"
sed 's/^dtype: fp32$/dtype: fp8/' "$committed" >"$T/fp8.baseline"
expect 2 "import a baseline of an unknown dtype" -- "$H" baseline import "$T/fp8.baseline" --label fp8 --db "$db"; says "dtype: 'fp8' is not fp64, fp32, bf16 or fp16"

# ---- history: copies of the baseline with scaled throughput form the history; imported runs
# (another machine's) are never history, so the copies are made to read as runs of this machine
hist() { awk -v f="$1" 'NF == 10 && $1 ~ /^[0-9]+$/ { $7 = $7 * f } { print }' "$committed" | sed "s/^label: cpu$/label: h$2/" >"$T/h$2.baseline"; "$H" baseline import "$T/h$2.baseline" --db "$T/hist.db" | sed -n 's/.* as run \([0-9]*\).*/\1/p'; }
for i in 1 2 3 4; do hist "1.0$i" $i >/dev/null; done
ok_run=$(hist 0.99 5); slow_run=$(hist 0.5 6)
expect 0 "history: imported runs are none" -- "$H" compare "$slow_run" --history --db "$T/hist.db"; prints "0 previous ok runs"
sqlite3 "$T/hist.db" "UPDATE runs SET imported = 0"
expect 0 "history: within the noise" -- "$H" compare "$ok_run" --history --db "$T/hist.db"; prints "verdict: pass"
expect 1 "history: a halved throughput" -- "$H" compare "$slow_run" --history --db "$T/hist.db"; prints "throughput regression"
expect 0 "history: too few runs" -- "$H" compare 2 --history --db "$T/hist.db"; prints "not enough history"

# ---- report: every file, JUnit through an XML parser, PNG and SVG
expect 1 "report (a failing run inside)" -- "$H" report 1 "$lr_run" "$div_run" --out "$T/rep" --db "$db" --force
grep -q 'name="forced" value=' "$T/rep/junit.xml" && pass || fail "junit.xml lacks the forced property"
head -1 "$T/rep/report.csv" | tr -d '\r' | grep -q ',forced$' && pass || fail "report.csv lacks the forced column"
for f in report.md report.html report.csv junit.xml plots/loss_1.png plots/dloss_1.svg plots/throughput.png plots/memory.svg; do
  [ -s "$T/rep/$f" ] && pass || fail "report lacks $f"
done
xml_ok "$T/rep/junit.xml" && pass || { fail "junit.xml is not XML"; cat "$T/xml.err"; }
xml_ok "$T/rep/plots/dloss_1.svg" && pass || fail "dloss_1.svg is not XML"
png_ok "$T/rep/plots/loss_1.png" && pass || fail "loss_1.png is not a PNG"
grep -q '<failure type="diverged"' "$T/rep/junit.xml" && pass || fail "junit has the diverged failure"
grep -q '<property name="baseline_run"' "$T/rep/junit.xml" && pass || fail "junit names the baseline run"
grep -q "^| 1 | gpt2-tiny |" "$T/rep/report.md" && pass || fail "report.md: the run id leads the row"
grep -q 'first failing step' "$T/rep/junit.xml" && pass || fail "junit failure names the first failing step"
[ "$(grep -c '^| ' "$T/rep/report.md")" = 4 ] && pass || fail "markdown table: header + 3 rows"
expect 0 "report of the passing run" -- "$H" report 1 --out "$T/rep1" --db "$db" --no-plots
[ ! -e "$T/rep1/plots" ] && pass || fail "--no-plots made plots"
# rt.db holds imported baselines only: none of them is a run under test
expect 0 "report of the newest runs: imported ones are not runs under test" -- "$H" report --out "$T/rep2" --db "$T/rt.db"
[ "$(grep -c '^| ' "$T/rep2/report.md")" = 1 ] && pass || { fail "report.md of imported runs only: the header line, no rows"; cat "$T/rep2/report.md"; "$H" runs --db "$T/rt.db"; }
# the newest gpt2-tiny run on cpu in $db is the torch import: the report takes a run of this harness
"$H" report --out "$T/rep4" --db "$db" --force --no-plots >/dev/null 2>&1
[ -n "$torch_run" ] && ! grep -q "^| $torch_run |" "$T/rep4/report.md" && pass || fail "report took imported run '$torch_run' as the newest"
# without --out: reports/SCENARIO under the current directory
expect 0 "report without --out" -- "$H" report 1 --db "$db" --no-plots
[ -s "$T/reports/gpt2-tiny/report.md" ] && pass || fail "no reports/gpt2-tiny/report.md"
prints "reports/gpt2-tiny/report.md"
# planted links and hard links in the output folder are replaced, never written through
mkdir -p "$T/lnrep/plots"; printf 'keep me\n' >"$T/victim"; printf 'keep me too\n' >"$T/victim2"
ln -s "$T/victim" "$T/lnrep/report.md"; ln -s "$T/victim" "$T/lnrep/report.csv"; ln "$T/victim2" "$T/lnrep/junit.xml"
ln -s "$T/victim" "$T/lnrep/plots/loss_1.png"; ln "$T/victim2" "$T/lnrep/plots/loss_1.svg"
ln -s "$T/victim" "$T/lnrep/plots/plots_0.gp"; ln -s "$T/victim" "$T/lnrep/plots/plots_0.log"
expect 0 "report beside planted links" -- "$H" report 1 --out "$T/lnrep" --db "$db"
[ "$(cat "$T/victim")" = "keep me" ] && [ "$(cat "$T/victim2")" = "keep me too" ] && pass || fail "report wrote through a planted link"
for f in report.md report.csv junit.xml plots/loss_1.png plots/loss_1.svg; do
  [ -f "$T/lnrep/$f" ] && [ ! -L "$T/lnrep/$f" ] && [ -s "$T/lnrep/$f" ] && pass || fail "report: $f is not a fresh file"
done
png_ok "$T/lnrep/plots/loss_1.png" && pass || fail "report: loss_1.png is no PNG"
ln -s "$T/nowhere" "$T/dangling-rep"
expect 2 "report --out a dangling link" -- "$H" report 1 --out "$T/dangling-rep" --db "$db"; says "target is missing"
expect 2 "report of an unknown run" -- "$H" report 99 --out "$T/rep3" --db "$db"
# without a usable baseline (the scenario's default label is nowhere) a run that finished ok is
# skipped, one that diverged still fails; a --baseline given that is not there is an input error
sed 's/"baseline": "cpu"/"baseline": "nolabel"/' "$T/lr.json" >"$T/nolabel.json"
sed 's/"baseline": "cpu"/"baseline": "nolabel"/' "$T/huge.json" >"$T/nolabel-huge.json"
grep -q '"nolabel"' "$T/nolabel.json" && grep -q '"nolabel"' "$T/nolabel-huge.json" && pass || fail "the nolabel scenarios name no label nolabel"
expect 0 "a run of a scenario without baseline" -- "$H" run "$T/nolabel.json" --steps 3 --db "$db" --quiet
nl_run=$(sed -n 's/^run \([0-9]*\):.*/\1/p' "$T/out")
expect 1 "a diverged run of a scenario without baseline" -- "$H" run "$T/nolabel-huge.json" --steps 20 --db "$db" --quiet
nl_div_run=$(sed -n 's/^run \([0-9]*\):.*/\1/p' "$T/out")
expect 2 "report --baseline of no such label" -- "$H" report 1 --baseline nosuch --out "$T/rep-nosuch" --db "$db" --no-plots
says "no baseline 'nosuch'"; [ ! -e "$T/rep-nosuch" ] && pass || fail "report --baseline nosuch made its folder"
expect 2 "report --baseline of no such run" -- "$H" report 1 --baseline 999 --out "$T/rep-nosuch" --db "$db" --no-plots
expect 2 "report --since --baseline of no such label" -- "$H" report --since 1 --baseline nosuch --db "$db"
expect 0 "report, no usable baseline, a run that finished" -- "$H" report "$nl_run" --out "$T/rep5" --db "$db" --no-plots
grep -q '<skipped' "$T/rep5/junit.xml" && pass || fail "junit: a run without baseline is not skipped"
expect 1 "report, no usable baseline, a diverged run" -- "$H" report "$nl_div_run" --out "$T/rep6" --db "$db" --no-plots
grep -q '<failure type="diverged" message="the run.s status is diverged' "$T/rep6/junit.xml" && pass || { fail "junit: a diverged run without baseline is no failure"; cat "$T/rep6/junit.xml"; }
grep -q 'diverged (no baseline)' "$T/rep6/report.md" && pass || fail "report.md: no 'diverged (no baseline)'"
xml_ok "$T/rep6/junit.xml" && pass || fail "junit.xml of a diverged run without baseline is not XML"

# ---- baseline record --out through a link, into a device, and two names that make one file
section "baseline record: links, devices, file names"
echo old >"$T/target.baseline"; ln -sf "$T/target.baseline" "$T/link.baseline"
expect 0 "record through a symbolic link" -- "$H" baseline record 1 --label viaLink --out "$T/link.baseline" --db "$db"
[ -L "$T/link.baseline" ] && grep -q "^label: viaLink" "$T/target.baseline" && pass || fail "the link was replaced, or its target not written"
ln -sf "$T/nothere.baseline" "$T/dangling.baseline"
expect 2 "record through a dangling link" -- "$H" baseline record 1 --label dang --out "$T/dangling.baseline" --db "$db"; says "a symbolic link to a missing file"
if mknod "$T/null" c 1 3 2>/dev/null; then
  expect 0 "record into a character device" -- "$H" baseline record 1 --label dev --out "$T/null" --db "$db"
  [ -c "$T/null" ] && pass || fail "record replaced a device with a file"
fi
for n in "x y" "x_y"; do
  sed -e "s#\"data/corpus.txt\"#\"$SRC/scenarios/data/corpus.txt\"#" -e "s/\"name\": \"gpt2-tiny\"/\"name\": \"$n\"/" "$tiny" >"$T/$n.json"
  expect 0 "a run of '$n'" -- "$H" run "$T/$n.json" --steps 2 --db "$T/names.db" --quiet
done
expect 0 "record the first (--dir with a trailing slash, missing: made)" -- "$H" baseline record 1 --label n --dir "$T/names/" --db "$T/names.db"
expect 2 "record the second onto the same file name" -- "$H" baseline record 2 --label n --dir "$T/names" --db "$T/names.db"
says "another scenario or label whose name makes the same file name"
grep -q '^scenario: x y$' "$T/names/x_y.n.baseline" && pass || fail "the first scenario's baseline file was replaced"

# ---- two imports of one file at once: one copy, one label (each step was its own transaction:
# both imported, 7 rounds in 8 here)
for r in 1 2 3; do
  rm -f "$T/race.db"*; cp "$T/names.db" "$T/race.db"
  "$H" baseline import "$committed" --label race --db "$T/race.db" >/dev/null 2>&1 & p1=$!
  "$H" baseline import "$committed" --label race --db "$T/race.db" >/dev/null 2>&1 & p2=$!
  wait $p1; wait $p2
  n=$(sqlite3 "$T/race.db" "select count(*) from runs where imported = 1")
  [ "$n" = 1 ] && pass || fail "round $r: two imports at once made $n imported runs"
done

# ---- hostile names: nothing runs, the HTML stays inert
section "hostile names, run --compare"
pw="/tmp/harness-pwned-$$"
cat >"$T/name.txt" <<EOS
  "name": "evil' \`touch $pw-a\` system(\"touch $pw-b\") '; system('touch $pw-c'); x='<script>alert(1)</script> @x ]]> ]]]>",
EOS
sed -e "s#\"data/corpus.txt\"#\"$SRC/scenarios/data/corpus.txt\"#" "$tiny" |
  awk 'FNR == NR { line = $0; next } /"name":/ { print line; next } { print }' "$T/name.txt" - >"$T/evil.json"
expect 0 "run the evil scenario" -- "$H" run "$T/evil.json" --db "$db" --quiet --steps 5
evil_run=$(sed -n 's/^run \([0-9]*\):.*/\1/p' "$T/out")
# the label: bytes that are not UTF-8 (\xff, a cut sequence) and U+FFFF, which XML forbids
evil_label="<b>'\`x\`"$'\xff\xe2\x82 \xef\xbf\xbf]]>'
expect 0 "record its baseline" -- "$H" baseline record "$evil_run" --label "$evil_label" --dir "$T/evilb" --db "$db"
expect 0 "compare it" -- "$H" compare "$evil_run" --baseline "$evil_label" --db "$db"
expect 0 "report it" -- "$H" report "$evil_run" --baseline "$evil_label" --out "$T/evilrep" --db "$db"
ls "$pw"* >/dev/null 2>&1 && fail "gnuplot ran a command: $(ls "$pw"*)" || pass
grep -qi '<script' "$T/evilrep/report.html" && fail "report.html holds a raw <script>" || pass
grep -qi '<script' "$T/evilrep/plots/"*.svg && fail "an SVG holds a raw <script>" || pass
grep -qF '&lt;script&gt;' "$T/evilrep/report.html" && pass || fail "the name is shown escaped"
xml_ok "$T/evilrep/junit.xml" && pass || fail "junit.xml with hostile names is not XML"
for f in "$T/evilrep/plots/"*.svg; do # every plot, whose titles hold the name and the label
  xml_ok "$f" && pass || { fail "$(basename "$f") with hostile names is not XML"; head -3 "$T/xml.err"; }
done
grep -qF 'dloss_1.svg' <(ls "$T/evilrep/plots") && pass || fail "the report drew no dloss plot"
# the CSV reads as UTF-8 through Python's csv module, with no raw control bytes
python3 -c 'import csv, sys; rows = list(csv.reader(open(sys.argv[1], newline="", encoding="utf-8"))); assert len(rows) >= 2' "$T/evilrep/report.csv" && pass || fail "report.csv with hostile names does not read as UTF-8 CSV"
LC_ALL=C grep -q $'[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]' "$T/evilrep/report.csv" && fail "report.csv holds raw control bytes" || pass

# ---- run --compare: the matrix and its exit codes
expect 0 "run --compare on cpu" -- "$H" run "$tiny" --compare --device cpu --db "$T/m.db" --quiet
# the committed baseline is imported: another machine, whatever its host name; no gate
prints "not gated, another host; baseline: "
prints "== summary: 1 scenario x 1 device"; prints "worst verdict: pass"
expect 2 "run --compare with an unknown device" -- "$H" run "$tiny" --compare --device cpu,nosuch --db "$T/m.db" --quiet
prints "worst verdict: error"; says "nosuch"
expect 2 "run --compare, bad device list" -- "$H" run "$tiny" --compare --device cpu,,cpu --db "$T/m.db"
expect 1 "run --compare against a moved baseline" -- "$H" run "$tiny" --compare --baseline "$T/moved.baseline" --db "$T/m.db" --quiet
prints "worst verdict: fail"
expect 2 "run two scenarios without --compare" -- "$H" run "$tiny" "$tiny" --db "$T/m.db"

# ---- the spelling of a number: "clip": 1 and "clip": 1.0 are one scenario to compare
python3 - "$tiny" "$T/one.json" "$T/onef.json" <<'EOF2'
import json, os, sys
d = json.load(open(sys.argv[1])); d["train"]["steps"] = 3
d["data"]["path"] = os.path.join(os.path.dirname(sys.argv[1]), d["data"]["path"])
d["train"]["clip"] = 1; json.dump(d, open(sys.argv[2], "w"))
d["train"]["clip"] = 1.0; json.dump(d, open(sys.argv[3], "w"))
EOF2
grep -q '"clip": 1.0' "$T/onef.json" && pass || fail "the fixture lost 1.0"
expect 0 "run clip 1" -- "$H" run "$T/one.json" --db "$T/num.db" --quiet
expect 0 "run clip 1.0" -- "$H" run "$T/onef.json" --db "$T/num.db" --quiet
expect 0 "compare clip 1.0 against clip 1" -- "$H" compare 2 --baseline 1 --db "$T/num.db"
prints "verdict: pass"

# ---- figures at their edges, as docs/compare.md and docs/report.md define them: an infinite
# difference is inf in the CSV (the cell was empty, read as unknown), an infinite RMSE is "inf"
# in --json (it was null), nothing compared is NULL in the comparisons table (it was 0.0), a
# -0 in a baseline file is the same baseline on every compare (it was imported again each time),
# a failed gate prints the digits that tell the ratio from the gate
section "figures at their edges"
sed -e "s#\"data/corpus.txt\"#\"$SRC/scenarios/data/corpus.txt\"#" -e 's/"steps": 40/"steps": 10/' -e 's/"name": "gpt2-tiny"/"name": "g10"/' "$tiny" >"$T/g10.json"
expect 0 "g10 run 1" -- "$H" run "$T/g10.json" --db "$T/e.db" --quiet
expect 0 "g10 run 2" -- "$H" run "$T/g10.json" --db "$T/e.db" --quiet
expect 0 "g10 golden" -- "$H" run "$T/g10.json" --golden --db "$T/e.db" --quiet
expect 0 "g10 baseline" -- "$H" baseline record 1 --label cpu --out "$T/g10.baseline" --db "$T/e.db"
sed '/^label:/d; s/^4 [^ ]*/4 nan/' "$T/g10.baseline" >"$T/g10nan.baseline"
expect 1 "report against a baseline with a nan loss" -- "$H" report 2 --db "$T/e.db" --baseline "$T/g10nan.baseline" --no-plots --out "$T/repinf"
grep -q ',fail,(by file),[0-9]*,10,inf,inf,4,' "$T/repinf/report.csv" && pass || fail "report.csv: an infinite max |dloss| is not inf: $(sed -n 2p "$T/repinf/report.csv")"
grep -q "(by file)" "$T/repinf/report.md" && pass || fail "a baseline file without a label is not said to be by file"
cp "$T/e.db" "$T/einf.db"; sqlite3 "$T/einf.db" "update steps set loss = 'inf' where run_id = 2 and step = 5"
expect 1 "error_ratio of a run with an inf loss" -- "$H" compare 2 --db "$T/einf.db" --baseline "$T/g10.baseline" --verdict error_ratio --json
grep -q '"rmse_run": "inf"' "$T/out" && pass || fail "--json: an infinite rmse_run is not \"inf\": $(grep rmse_run "$T/out")"
awk '/^[0-9]+ / { if ($1 + 0 <= 6) next } { print }' "$T/g10.baseline" | sed -e '/^label:/d' -e 's/^steps: 10/steps: 4/' >"$T/g10late.baseline"
cp "$T/e.db" "$T/enone.db"; sqlite3 "$T/enone.db" "delete from steps where run_id = 2 and step > 6"
expect 1 "no step in common" -- "$H" compare 2 --db "$T/enone.db" --baseline "$T/g10late.baseline"
[ "$(sqlite3 "$T/enone.db" "select quote(max_abs) || quote(max_rel) || quote(json_extract(details_json, '\$.loss.max_abs_step')) from comparisons")" = NULLNULLNULL ] && pass || fail "nothing compared is stored as $(sqlite3 "$T/enone.db" "select quote(max_abs), quote(max_rel) from comparisons")"
sed '/^label:/d; s/^3 [^ ]*/3 -0/' "$T/g10.baseline" >"$T/g10neg0.baseline"
before=$(sqlite3 "$T/e.db" "select count(*) from runs where imported = 1")
for i in 1 2 3; do "$H" compare 2 --db "$T/e.db" --baseline "$T/g10neg0.baseline" >/dev/null 2>&1; done
[ "$(sqlite3 "$T/e.db" "select count(*) from runs where imported = 1")" = $((before + 1)) ] && pass || fail "a -0 baseline imported $(( $(sqlite3 "$T/e.db" "select count(*) from runs where imported = 1") - before )) times in 3 compares"

finish
