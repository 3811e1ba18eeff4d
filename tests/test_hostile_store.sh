#!/usr/bin/env bash
# tests/test_hostile_store.sh: compare, report and baseline refusing hostile or inconsistent input
# with exit 2 and the store left byte for byte as it was (no baseline imported, no verdict kept).
# usage: test_hostile_store.sh HARNESS_EXE SOURCE_DIR
set -u
H="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"

tiny="$SRC/scenarios/gpt2-tiny.json"
db="$T/h.db"
cd "$T"   # no ./baselines here: the committed file is found in the source tree
# unchanged WHAT: the store is byte for byte what it was at the last `snapshot`, with no -wal left
snapshot() { sha256sum <"$db" >"$T/db.sha"; }
unchanged() {
  if sha256sum <"$db" | cmp -s - "$T/db.sha"; then pass; else fail "$1 changed the store"; fi
  [ ! -e "$db-wal" ] && pass || fail "$1 left $db-wal behind"
}

# run 1: gpt2-tiny as committed (its baseline applies); run 2: 2 steps, another scenario
expect 0 "run tiny" -- "$H" run "$tiny" --db "$db" --quiet
expect 0 "run tiny, 2 steps" -- "$H" run "$tiny" --steps 2 --db "$db" --quiet
snapshot
mkdir -p "$T/par"; cp "$db" "$T/par/h.db"   # as trained: no baseline label yet

# ---- compare: a committed baseline is imported on first use, but not when the comparison is
# then refused (it was kept before: an input error wrote a run and a label into the store)
expect 2 "compare a run of another scenario" -- "$H" compare 2 --db "$db"
says "ran different scenarios"; unchanged "compare of another scenario"
grep -qF "imported as run" "$T/err" && fail "a refused compare says it imported the baseline" || pass
expect 2 "compare --golden of no such label" -- "$H" compare 1 --golden nosuch --db "$db"
says "no golden 'nosuch'"; unchanged "compare --golden nosuch"
expect 2 "compare --golden of no such run" -- "$H" compare 1 --golden 99 --db "$db"
says "no run 99"; unchanged "compare --golden 99"
expect 2 "compare --golden of an fp32 run" -- "$H" compare 1 --golden 1 --db "$db"
says "a golden is an fp64 run"; unchanged "compare --golden 1"
expect 2 "compare --verdict ensemble without an ensemble" -- "$H" compare 1 --verdict ensemble --db "$db"
says "needs an ensemble baseline"; unchanged "compare --verdict ensemble"
expect 2 "compare --verdict error_ratio without a golden" -- "$H" compare 1 --verdict error_ratio --db "$db"
says "needs a golden run"; unchanged "compare --verdict error_ratio"
# --baselines that is no folder or a --baseline FILE that does not read: exit 2 before the store
# is opened (compare fell back to the repository's baselines/ without a word)
for c in compare report; do
  out=(); [ $c = report ] && out=(--out "$T/rb")
  expect 2 "$c --baselines missing folder" -- "$H" $c 1 --baselines "$T/nodir" --db "$db" "${out[@]}"
  says "--baselines $T/nodir: No such file or directory"; unchanged "$c --baselines missing"
  expect 2 "$c --baselines a file" -- "$H" $c 1 --baselines "$tiny" --db "$db" "${out[@]}"
  says "--baselines $tiny: not a folder"; unchanged "$c --baselines a file"
  expect 2 "$c --baseline unreadable file" -- "$H" $c 1 --baseline "$T/no.baseline" --db "$db" "${out[@]}"
  says "no.baseline: cannot read the baseline"; unchanged "$c --baseline missing file"
done
expect 0 "report: run 2 against another scenario (a row without baseline)" -- "$H" report 2 --db "$db" --out "$T/r" --no-plots
unchanged "report with a refused baseline"
expect 2 "report --golden of no such label (as compare)" -- "$H" report 2 --db "$db" --out "$T/r2" --no-plots --golden nosuch
says "no golden 'nosuch'"; unchanged "report --golden nosuch"

# ---- eight compares at once on a store without the label: the committed baseline is imported
# once (each compare used to import its own copy, the label pointing at the last)
for i in 1 2 3 4 5 6 7 8; do "$H" compare 1 --db "$T/par/h.db" >"$T/par/out$i" 2>&1 & done
wait
[ "$(grep -l "verdict: pass" "$T/par/out"* | wc -l)" = 8 ] && pass || fail "parallel compares: not eight passes: $(cat "$T/par/out"*)"
expect 0 "runs of the parallel compares' store" -- "$H" runs --db "$T/par/h.db" --json
[ "$(grep -c '"imported": true' "$T/out")" = 1 ] && pass || fail "parallel compares imported the committed baseline $(grep -c '"imported": true' "$T/out") times"

# ---- the history options belong to --history: refused without it (they were ignored, even
# when malformed), and checked before the store is opened
for o in "--k nan" "--k 3" "--window 0" "--window 5" "--min-drop 2" "--min-runs -1"; do
  expect 2 "compare $o without --history" -- "$H" compare 1 $o --db "$db"
  says "belong to --history"; unchanged "compare $o"
done
expect 2 "compare --history --k nan" -- "$H" compare 1 --history --k nan --db "$db"
says "--k: 'nan'"; unchanged "compare --history --k nan"
expect 0 "compare --history with every option" -- "$H" compare 1 --history --k 2 --window 3 --min-drop 0.5 --min-runs 1 --db "$db"
grep -qF "(window 3)" "$T/out" && pass || fail "compare --history --window 3: not used"

# ---- and the comparison that is accepted keeps its import and verdict
expect 0 "compare with the committed baseline" -- "$H" compare 1 --db "$db"
grep -qF "(imported as run 3)" "$T/out" && pass || fail "the committed baseline was not imported"
expect 0 "the import is kept" -- "$H" show 3 --db "$db"

# ---- baseline record's output place is checked before anything is trained, labelled or
# written: an ensemble used to train and record its members, import and label the ensemble,
# then fail to write the file (exit 1)
snapshot
mkdir -p "$T/afolder"; : >"$T/afile"
for o in "--out $T/nonexistent/x.baseline" "--out $T/afolder" "--dir $T/nonexistent/deeper" "--dir $T/afile"; do
  expect 2 "baseline record --ensemble 2 $o" -- "$H" baseline record "$tiny" --ensemble 2 --label ens --db "$db" $o
  says "(see 'harness baseline --help')"; unchanged "baseline record --ensemble $o"
  expect 2 "baseline record 1 $o" -- "$H" baseline record 1 --label x --db "$db" $o
  says "(see 'harness baseline --help')"; unchanged "baseline record 1 $o"
done
[ ! -e "$T/nonexistent" ] && [ -z "$(ls "$T/afolder")" ] && pass || fail "baseline record wrote where it was refused"
expect 0 "baseline record into a new --dir" -- "$H" baseline record 1 --label x --db "$db" --dir "$T/afolder/new"
[ -s "$T/afolder/new/gpt2-tiny.x.baseline" ] && pass || fail "baseline record --dir: no file in the new folder"

# ---- expert counts whose sums overflow 64 bits: a file's count over 2^40 is refused (import
# took 2^63 - 1, and show then overflowed summing it over the layers: UBSan); a stored one (a
# row another program wrote) is refused on reading, never summed
moe="$SRC/baselines/mixtral-tiny.cpu.baseline"
snapshot
awk '/^expert_tokens/ { section = 1 } section && $1 == 1 && NF > 3 { $3 = "9223372036854775807" } { print }' \
  "$moe" | sed 's/^label: cpu$/label: huge/' >"$T/huge.baseline"
expect 2 "import a count of 2^63 - 1" -- "$H" baseline import "$T/huge.baseline" --db "$db"
says "huge.baseline:73: expert_tokens: step 1 layer 0 e0: '9223372036854775807' is not a whole number >= 0 (and at most 1099511627776)"
unchanged "baseline import of a huge count"
awk '/^expert_tokens/ { section = 1 } section && $1 == 1 && NF > 3 { $3 = "1099511627777" } { print }' \
  "$moe" | sed 's/^label: cpu$/label: huge/' >"$T/huge.baseline"
expect 2 "import a count of 2^40 + 1" -- "$H" baseline import "$T/huge.baseline" --db "$db"
says "is not a whole number >= 0 (and at most 1099511627776)"; unchanged "baseline import of 2^40 + 1"
# routing on both sides but at no step in common: "not compared", never "identical counts", and
# JSON figures null (max_abs 0.0 and a step-0 cell were given)
python3 - "$moe" "$T/norouted.baseline" <<'EOF'
import sys
lines = open(sys.argv[1]).read().split("\n"); out = []; table = routing = False; last = None
for l in lines:
    if l.startswith("label:"): l = "label: norouted"
    if l.startswith("steps:"): l = "steps: 41"
    if l.startswith("routed_steps:"): l = "routed_steps: 1"
    if l.startswith("expert_tokens "):
        routing = True; out.append(l); continue
    if routing:
        f = l.split()
        if f and f[0] == "1": out.append(" ".join(["41"] + f[1:]))
        continue
    if l.startswith("step "): table = True
    elif table and l.strip() and not l.startswith("#"): last = l
    elif table and not l.strip() and last:
        f = last.split(); f[0] = "41"; out.append(" ".join(f)); table = False
    out.append(l)
open(sys.argv[2], "w").write("\n".join(out))
EOF
expect 0 "import the mixtral baseline again" -- "$H" baseline import "$moe" --label moe2 --db "$T/nr.db"
expect 0 "compare with counts at no step in common" -- "$H" compare 1 --baseline "$T/norouted.baseline" --db "$T/nr.db"
grep -qF "routing     not compared: no step has counts on both sides" "$T/out" && pass || fail "routing with no step in common: $(grep routing "$T/out")"
expect 0 "its JSON" -- "$H" compare 1 --baseline "$T/norouted.baseline" --json --db "$T/nr.db"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["expert_tokens"]; sys.exit(not (d["compared"] == 0 and d["max_abs"] is None and d["max_abs_at"] is None and d["max_rel_at"] is None))' "$T/out" && pass || fail "routing JSON with nothing compared: $(cat "$T/out" | head -c 600)"
if command -v sqlite3 >/dev/null; then
  cp "$db" "$T/moe.db"
  expect 0 "import the mixtral baseline" -- "$H" baseline import "$moe" --db "$T/moe.db"
  id=$(sed -n 's/.* imported as run \([0-9]*\) .*/\1/p' "$T/out")
  sqlite3 "$T/moe.db" "UPDATE expert_tokens SET tokens = 9223372036854775807 WHERE step = 1 AND expert = 0"
  for c in "show $id" "show $id --json" "baseline record $id --label x --out $T/x.baseline"; do
    expect 2 "$c of a stored count of 2^63 - 1" -- "$H" $c --db "$T/moe.db"
    says "run $id: malformed expert counts: a count of 9223372036854775807 tokens (at most 1099511627776)"
  done
  # a count stored as text: min/max order text above every number, so the limits missed it and
  # compare read '-9223372036854775808x' as INT64_MIN (the difference overflowed: a PASS)
  sqlite3 "$T/moe.db" "UPDATE expert_tokens SET tokens = '-9223372036854775808x' WHERE step = 1 AND expert = 0"
  for c in "show $id" "compare $id --baseline $id --force"; do
    expect 2 "$c of a count stored as text" -- "$H" $c --db "$T/moe.db"
    says "rows hold text, a real or a blob where a whole number goes"
  done
else
  echo "skip: sqlite3 CLI not found (a stored count over the limit)"
fi

# ---- a store this process may not write (a colleague's, a read-only folder): read without
# leaving -wal and -shm files beside it (they were left; in a read-only folder runs, show and
# baseline list failed with 'attempt to write a readonly database'); writes refused, exit 1.
# Needs a user who is not root: this one, or nobody through setpriv when this is root.
other=""
if [ "$(id -u)" != 0 ]; then other=" "
elif command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 && [ -x "$H" ] &&
     setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups test -x "$H"; then
  other="setpriv --reuid=$(id -u nobody) --regid=$(id -g nobody) --clear-groups"
fi
if [ -n "$other" ]; then
  chmod 755 "$T"
  mkdir -p "$T/rofolder" "$T/rwfolder"
  cp "$db" "$T/rofolder/h.db"; cp "$db" "$T/rwfolder/h.db"
  chmod 444 "$T/rofolder/h.db" "$T/rwfolder/h.db"; chmod 555 "$T/rofolder"; chmod 777 "$T/rwfolder"
  sha256sum <"$db" >"$T/db.sha"
  for f in rofolder rwfolder; do
    for c in "runs" "show 1" "show 1 --json" "baseline list" "report 1 --out $T/rwfolder/r$f --no-plots"; do
      expect 0 "$c of a write-protected store in $f" -- $other "$H" $c --db "$T/$f/h.db"
    done
    expect 1 "compare with a write-protected store in $f" -- $other "$H" compare 1 --db "$T/$f/h.db"
    says "recording a comparison: the store is write-protected here"
    expect 1 "baseline record with a write-protected store in $f" -- $other "$H" baseline record 1 --label x --out "$T/rwfolder/x$f.baseline" --db "$T/$f/h.db"
    says "the store is write-protected here"
    [ ! -e "$T/rwfolder/x$f.baseline" ] && pass || fail "baseline record wrote a file it could not label"
    # ops ran every check, then failed on SQLite's 'attempt to write a readonly database', exit 2
    expect 1 "ops with a write-protected store in $f" -- $other "$H" ops --device cpu --op add --db "$T/$f/h.db"
    says "the store is write-protected here"; [ ! -s "$T/out" ] && pass || fail "ops ran its checks before refusing the store"
    sha256sum <"$T/$f/h.db" | cmp -s - "$T/db.sha" && pass || fail "the write-protected store in $f changed"
    ls "$T/$f/h.db-"* >/dev/null 2>&1 && fail "reading a write-protected store left $(ls "$T/$f/h.db-"*)" || pass
  done
  chmod 755 "$T/rofolder"
else
  echo "skip: no user but root to try a write-protected store with"
fi

# ---- report without gnuplot: refused before anything is made (it used to leave DIR/plots with
# the scripts and no report); --no-plots still writes the report
mkdir -p "$T/nobin"
PATH="$T/nobin" expect 2 "report without gnuplot" -- "$H" report 1 --db "$db" --out "$T/nogp"
says "gnuplot is not installed"
[ "$(grep -c "gnuplot is not installed" "$T/err")" = 1 ] && pass || fail "report without gnuplot: the message is not said once"
[ ! -e "$T/nogp" ] && pass || fail "report without gnuplot left $T/nogp behind"
cd "$T/nobin"
PATH="$T/nobin" expect 2 "report without gnuplot, default folder" -- "$H" report 1 --db "$db"
[ ! -e reports ] && pass || fail "report without gnuplot made reports/"
cd "$T"
PATH="$T/nobin" expect 0 "report --no-plots without gnuplot" -- "$H" report 1 --db "$db" --out "$T/nogp" --no-plots
[ -s "$T/nogp/report.md" ] && [ ! -e "$T/nogp/plots" ] && pass || fail "report --no-plots: no report.md, or a plots folder"

# ---- a result lost on stdout (a full disk) is not a pass: runs and show said so already;
# baseline list, compare, report --since, --help and --version exited 0
if [ -w /dev/full ]; then
  for c in "runs" "show 1" "baseline list" "compare 1" "compare 1 --history" "report --since 1"; do
    expect 2 "$c > /dev/full" -- sh -c "exec \"\$0\" \"\$@\" >/dev/full" "$H" $c --db "$db"
    says "writing the output to stdout failed"
  done
  for c in "--help" "--version" "compare --help" "baseline --help" "report --help" "run --help" \
           "init --help" "ops --help" "exec --help" "ingest --help" "fetch --help" \
           "preprocess --help" "comm-check --help"; do
    expect 2 "harness $c > /dev/full" -- sh -c "exec \"\$0\" \"\$@\" >/dev/full" "$H" $c
    says "writing the output to stdout failed"
  done
fi

# ---- a report name taken by a folder (or plots/ by a file): refused before anything is made
# (report.md and report.csv were written, then junit.xml failed: a half-written report)
for name in junit.xml report.md; do
  rm -rf "$T/taken"; mkdir -p "$T/taken/$name"
  expect 2 "report with $name a folder" -- "$H" report 1 --db "$db" --out "$T/taken" --no-plots
  says "taken/$name is a folder"
  [ "$(ls "$T/taken")" = "$name" ] && pass || fail "report with $name a folder wrote $(ls "$T/taken" | tr '\n' ' ')"
done
rm -rf "$T/taken"; mkdir -p "$T/taken"; : >"$T/taken/plots"
expect 2 "report with plots a file" -- "$H" report 1 --db "$db" --out "$T/taken"; says "plots is not a folder"
[ "$(ls "$T/taken")" = "plots" ] && pass || fail "report with plots a file wrote $(ls "$T/taken" | tr '\n' ' ')"
expect 2 "report --out a file" -- "$H" report 1 --db "$db" --out "$T/taken/plots"; says "not a folder"
rm -rf "$T/taken"; mkdir -p "$T/taken/transitions.xml"
expect 2 "report --since with transitions.xml a folder" -- "$H" report --since 1 --db "$db" --out "$T/taken"
says "transitions.xml is a folder"; [ ! -s "$T/out" ] && pass || fail "report --since printed a table it then refused to write"

# ---- a baseline of no steps (it reads: steps 0): it records no loss, so compare refuses it
# (exit 2, as a baseline without losses), and report makes its 'no baseline' row (the report's
# baseline cache copied it with memcpy from NULL: UBSan in the sanitized run)
awk '/^steps:/ { print "steps: 0"; next } /^step / { print; exit } { print }' \
  "$SRC/baselines/gpt2-tiny.cpu.baseline" | sed 's/^label: cpu$/label: nosteps/' >"$T/nosteps.baseline"
expect 0 "import a baseline of no steps" -- "$H" baseline import "$T/nosteps.baseline" --db "$db"
expect 2 "compare with a baseline of no steps" -- "$H" compare 1 --baseline nosteps --db "$db"
says "no steps ('steps: 0'): a baseline without losses cannot judge a run"
expect 0 "report with a baseline of no steps" -- "$H" report 1 --baseline nosteps --db "$db" --out "$T/nosteps"
grep -qF "no baseline" "$T/nosteps/report.md" && pass || fail "report with a baseline of no steps: no 'no baseline' row"
# and a run that recorded no step (one that failed at its first): its row has no loss plot
# (gnuplot refused the empty plot, 'x range is invalid', and the whole report failed, exit 2)
if command -v sqlite3 >/dev/null; then
  cp "$db" "$T/nostep.db"
  sqlite3 "$T/nostep.db" "INSERT INTO runs(scenario, scenario_json, scenario_hash, device, device_name, dtype, started_at, status) SELECT scenario, scenario_json, scenario_hash, device, 'another cpu', dtype, started_at, 'failed' FROM runs WHERE id = 1"
  expect 1 "report of a run with no step" -- "$H" report --db "$T/nostep.db" --out "$T/nostep"
  [ -s "$T/nostep/report.md" ] && [ -s "$T/nostep/plots/throughput.svg" ] && pass || fail "report of a run with no step: no report.md or plots"
fi

# ---- run, exec and ingest --compare: a baseline label or run id that cannot be found is known
# before anything is trained or recorded (it was found only after the run was recorded: exit 2
# with a new run in the store, or a new store where there was none)
snapshot
expect 2 "run --compare --baseline of no such label" -- "$H" run "$tiny" --steps 2 --compare --baseline nosuch --db "$db"
says "no baseline 'nosuch' for scenario 'gpt2-tiny'"; unchanged "run --compare --baseline nosuch"
grep -qF "not trained" "$T/out" && pass || fail "run --compare --baseline nosuch: the summary does not say the cell was not trained"
grep -q "^step " "$T/out" && fail "run --compare --baseline nosuch trained" || pass
expect 2 "run --compare --baseline of no such run" -- "$H" run "$tiny" --steps 2 --compare --baseline 99 --db "$db"
says "no run 99"; unchanged "run --compare --baseline 99"
expect 2 "run --compare --baseline 1 into no store" -- "$H" run "$tiny" --steps 2 --compare --baseline 1 --db "$T/none.db"
says "no run 1 to compare with: the store does not exist yet"
[ ! -e "$T/none.db" ] && pass || fail "run --compare --baseline 1 created $T/none.db"
printf '{"step": 1, "loss": 2.5}\n{"step": 2, "loss": 2.25}\n' >"$T/steps.jsonl"
expect 2 "ingest --compare --baseline of no such label" -- "$H" ingest "$T/steps.jsonl" --device d --compare --baseline nosuch --db "$db"
says "no baseline 'nosuch' for scenario 'ingest:steps.jsonl'"; unchanged "ingest --compare --baseline nosuch"
expect 2 "ingest --compare --baseline into no store" -- "$H" ingest "$T/steps.jsonl" --device d --compare --baseline nosuch --db "$T/none.db"
[ ! -e "$T/none.db" ] && pass || fail "ingest --compare --baseline nosuch created $T/none.db"
expect 2 "exec --compare --baseline of no such run" -- "$H" exec --compare --baseline 99 --db "$db" -- sh -c 'echo ran >"$0"' "$T/exec-ran"
says "no run 99"; unchanged "exec --compare --baseline 99"
[ ! -e "$T/exec-ran" ] && pass || fail "exec --compare --baseline 99 ran the command"
expect 2 "exec --compare --scenario, no such label" -- "$H" exec --compare --scenario "$tiny" --baseline nosuch --db "$T/none.db" -- true
[ ! -e "$T/none.db" ] && pass || fail "exec --compare --baseline nosuch created $T/none.db"
# the same with a label that exists runs and judges as before
expect 0 "label run 1 as lab" -- "$H" baseline record 1 --label lab --db "$db"
expect 0 "run --compare --baseline lab" -- "$H" run "$tiny" --compare --baseline lab --db "$db" --quiet
says_out() { grep -qF -- "$1" "$T/out" && pass || fail "stdout lacks '$1': $(head -c 600 "$T/out")"; }
says_out "worst verdict: pass"

# ---- run --compare checks the whole matrix before any cell trains: an unknown device, a bad
# scenario file, a baseline of another scenario (--steps) or one that is not finished anywhere
# in it leaves the store as it was (the good cells before it were trained and recorded, exit 2)
snapshot
expect 2 "run --compare --device cpu,nosuch" -- "$H" run "$tiny" --compare --device cpu,nosuch --db "$db" --quiet
says "unknown device 'nosuch'"; unchanged "run --compare --device cpu,nosuch"
says_out "nothing was trained or recorded"
grep -q "^run [0-9]" "$T/out" && fail "run --compare --device cpu,nosuch trained the cpu cell" || pass
printf '{"name": "x",' >"$T/cut.json"
expect 2 "run --compare with a cut scenario second" -- "$H" run "$tiny" "$T/cut.json" --compare --db "$db" --quiet
says "cut.json"; unchanged "run --compare with a cut scenario second"
expect 2 "run --compare --steps 3 against the 40-step baseline" -- "$H" run "$tiny" --steps 3 --compare --db "$db" --quiet
says "differ in train.steps (3 vs 40)"; unchanged "run --compare --steps 3"
grep -q "^step " "$T/out" && fail "run --compare --steps 3 trained" || pass
if command -v sqlite3 >/dev/null; then
  cp "$db" "$T/unfinished.db"
  sqlite3 "$T/unfinished.db" "UPDATE runs SET status = 'failed' WHERE id = 1"
  sha256sum <"$T/unfinished.db" >"$T/unfinished.sha"
  expect 2 "run --compare --baseline of a failed run" -- "$H" run "$tiny" --compare --baseline 1 --db "$T/unfinished.db" --quiet
  says "is failed: a baseline must be a finished run"
  sha256sum <"$T/unfinished.db" | cmp -s - "$T/unfinished.sha" && pass || fail "run --compare --baseline of a failed run changed the store"
fi

# ---- a baseline value that overflows a double (1e999) is refused; "inf", a diverged run's
# loss, is still read
awk 'BEGIN{d=0} /^1 / && !d {$2="1e999"; d=1} {print}' "$SRC/baselines/gpt2-tiny.cpu.baseline" >"$T/over.baseline"
snapshot
expect 2 "baseline import of a loss of 1e999" -- "$H" baseline import "$T/over.baseline" --db "$db"
says "over.baseline:26: loss: '1e999' is out of range for a double"; unchanged "baseline import of 1e999"
awk 'BEGIN{d=0} /^1 / && !d {$2="inf"; d=1} {print}' "$SRC/baselines/gpt2-tiny.cpu.baseline" >"$T/inf.baseline"
expect 0 "baseline import of a loss of inf" -- "$H" baseline import "$T/inf.baseline" --label inf --db "$db"

# ---- report --since has no plots: --no-plots there is a mistake, not ignored
expect 2 "report --since 1 --no-plots" -- "$H" report --since 1 --no-plots --db "$db"
says "--no-plots: the transitions of --since have no plots"
expect 0 "report --help names --since's options" -- "$H" report --help
grep -qF -- "--since RUN|DATE [--out DIR] [--baseline LABEL|RUN|FILE]" "$T/out" && pass || fail "report --help: --since's line lacks --baseline"

# ---- a --warmup as long as the run leaves no step out: compare says so (it printed 'after
# 1000 and 1000 warm-up steps' while the median was over every step)
expect 0 "compare --warmup 1000" -- "$H" compare 1 --warmup 1000 --db "$db"
grep -qF "(median tokens/s after 0 and 0 warm-up steps)" "$T/out" && pass || fail "compare --warmup 1000: the warm-up printed is not the one used"
expect 0 "compare --warmup 39" -- "$H" compare 1 --warmup 39 --db "$db"
grep -qF "(median tokens/s after 39 and 39 warm-up steps)" "$T/out" && pass || fail "compare --warmup 39: not printed as used"

# ---- baseline without a subcommand names every subcommand
expect 2 "baseline" -- "$H" baseline
says "record, import, list, pull or push"

# ---- an empty (0-byte) --db is no store yet: the commands that read runs refuse it and leave
# it empty (compare made it a store, schema and all, before saying 'no run 1'); a run whose
# baseline cannot be found leaves it empty too
: >"$T/zero.db"
expect 2 "compare on an empty file" -- "$H" compare 1 --db "$T/zero.db"; says "an empty file, not a harness store yet"
expect 2 "report on an empty file" -- "$H" report --db "$T/zero.db" --out "$T/zero-report"; says "not a harness store yet"
expect 2 "baseline record on an empty file" -- "$H" baseline record 1 --label x --db "$T/zero.db" --out "$T/zero.baseline"
says "not a harness store yet"
expect 2 "run --compare, no such baseline, on an empty file" -- "$H" run "$tiny" --steps 2 --compare --baseline nosuch --db "$T/zero.db"
[ ! -s "$T/zero.db" ] && pass || fail "an empty --db was written: $(stat -c %s "$T/zero.db") bytes"
[ ! -e "$T/zero-report" ] && [ ! -e "$T/zero.baseline" ] && pass || fail "a refused command on an empty store wrote its output"

# ---- an output named like the store: baseline record --out the store (or its -wal, or a link
# to it) renamed the baseline text over the store; report --out DIR with the store at one of
# the report's names, or inside DIR/plots, wrote over it. Each is refused, the store unchanged.
snapshot
expect 2 "baseline record --out the store" -- "$H" baseline record 1 --label z --out "$db" --db "$db"; says "is the store"
expect 2 "baseline record --out the store's -wal" -- "$H" baseline record 1 --label z --out "$db-wal" --db "$db"; says "is the store"
ln -sf "$db" "$T/store-link.db"
expect 2 "baseline record --out a link to the store" -- "$H" baseline record 1 --label z --out "$T/store-link.db" --db "$db"; says "is the store"
unchanged "baseline record --out the store"
mkdir -p "$T/inrep/plots"; cp "$db" "$T/inrep/report.csv"; cp "$db" "$T/inrep/plots/loss_1.png"
sum_before="$(cat "$T/inrep/report.csv" "$T/inrep/plots/loss_1.png" | sha256sum)"
expect 2 "report with the store at report.csv" -- "$H" report 1 --out "$T/inrep" --db "$T/inrep/report.csv" --no-plots; says "is the store"
expect 2 "report with the store in plots/" -- "$H" report 1 --out "$T/inrep" --db "$T/inrep/plots/loss_1.png"; says "where the report writes its plots"
cp "$db" "$T/inrep/transitions.md"
expect 2 "report --since with the store at transitions.md" -- "$H" report --since 1 --out "$T/inrep" --db "$T/inrep/transitions.md"; says "is the store"
[ "$(cat "$T/inrep/report.csv" "$T/inrep/plots/loss_1.png" | sha256sum)" = "$sum_before" ] && pass || fail "report wrote over a store in its --out"
[ ! -e "$T/inrep/report.md" ] && pass || fail "a refused report wrote report.md"

# ---- baseline subcommands take only their own options (import took --json, --device,
# --ensemble and recorded a run); pull checks its label and store before the network; an
# over-long --out is a usage error (it was exit 1 after the write failed)
snapshot
expect 2 "baseline import --json" -- "$H" baseline import "$SRC/baselines/gpt2-tiny.cpu.baseline" --json --db "$db"; says "--json does not go with 'baseline import'"
expect 2 "baseline import --device" -- "$H" baseline import "$SRC/baselines/gpt2-tiny.cpu.baseline" --device nosuch --db "$db"; says "--device does not go with"
expect 2 "baseline list --replace" -- "$H" baseline list --replace --db "$db"; says "--replace does not go with 'baseline list'"
expect 2 "baseline push --label" -- "$H" baseline push "$SRC/baselines/gpt2-tiny.cpu.baseline" http://127.0.0.1:1/x --label y; says "--label does not go with 'baseline push'"
expect 2 "baseline pull, a bad label, before the network" -- env HARNESS_BASELINE_CACHE="$T/bcache" "$H" baseline pull http://127.0.0.1:1/x.baseline --sha256 "$(printf '%064d' 0)" --label a/b --db "$db"
says "label 'a/b' holds '/'"; [ ! -e "$T/bcache" ] && pass || fail "pull with a bad label fetched into the cache"
echo "not a db" >"$T/notdb.txt"
expect 2 "baseline pull into a non-store, before the network" -- "$H" baseline pull http://127.0.0.1:1/x.baseline --sha256 "$(printf '%064d' 0)" --db "$T/notdb.txt"; says "not a SQLite database"
expect 2 "baseline record --out an over-long name" -- "$H" baseline record 1 --label long --out "$T/$(printf 'a%.0s' $(seq 300))" --db "$db"; says "the path is too long"
unchanged "baseline subcommands with options of others"

# ---- an option given another option as its value: the value is said to be missing (report
# --out --db F said 'no database at harness.db', ingest --device --db F 'F: No such file')
expect 2 "report --out --db" -- "$H" report 1 --out --db "$db"; says "--out needs a value (the next argument, --db"
expect 2 "compare --baseline --db" -- "$H" compare 1 --baseline --db "$db"; says "--baseline needs a value"
expect 2 "ingest --device --db" -- "$H" ingest "$T/none.log" --device --db "$db"; says "--device needs a value"

# ---- a last step whose loss was never recorded (NULL) is '-' and null, not "nan" (a recorded
# NaN: a diverged run)
cp "$db" "$T/nullloss.db"
sqlite3 "$T/nullloss.db" "update steps set loss = NULL where run_id = 1 and step = (select max(step) from steps where run_id = 1)"
expect 0 "runs --json with an unrecorded last loss" -- "$H" runs --json --db "$T/nullloss.db"
grep -q '"last_loss": null' "$T/out" && pass || fail "an unrecorded last loss: $(grep last_loss "$T/out" | head -1)"
expect 0 "runs with an unrecorded last loss" -- "$H" runs --db "$T/nullloss.db"
grep -q "nan" "$T/out" && fail "runs printed nan for an unrecorded loss: $(tail -1 "$T/out")" || pass

finish
