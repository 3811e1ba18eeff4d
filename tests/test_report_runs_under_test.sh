#!/usr/bin/env bash
# tests/test_report_runs_under_test.sh: which runs are "the run under test": ensemble members (perturbed
# runs) are marked in the store and left out of report, report --since and compare --history, and
# are no baseline of their own; imported runs are left out of --history; a new row whose newest
# run is not judged is "not judged" (JUnit skipped, with skipped= and errors= counts); a run
# --steps made another scenario of has a row of its own.
# usage: test_report_runs_under_test.sh HARNESS_EXE SOURCE_DIR
set -u
H="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
prints() { if grep -qF -- "$1" "$T/out"; then pass; else fail "stdout lacks '$1':"; sed 's/^/    /' "$T/out" | head -20; fi; }
has() { if grep -qF -- "$2" "$1"; then pass; else fail "$1 lacks '$2':"; sed 's/^/    /' "$1" | head -20; fi; }
lacks() { if grep -qF -- "$2" "$1"; then fail "$1 has '$2'"; else pass; fi; }
# the run id of the last "run N: ..." line of stdout
last_run() { sed -n 's/^run \([0-9]*\):.*/\1/p' "$T/out" | tail -1; }
# previous runs compare --history found for run $1 in store $2
history_of() { "$H" compare "$1" --history --min-runs 1 --json --db "$2" | python3 -c '
import json, sys; print(" ".join(str(r) for r in json.load(sys.stdin)["previous_runs"]))'; }

cd "$T"
# t32: gpt2-tiny with 8 steps, an absolute data path, no tolerances, no committed baseline
python3 - "$SRC/scenarios/gpt2-tiny.json" "$T/t32.json" <<'EOF'
import json, os, sys
s = json.load(open(sys.argv[1]))
s["name"] = "t32"; s["train"]["steps"] = 8; s.pop("tolerances", None)
s["data"]["path"] = os.path.join(os.path.dirname(sys.argv[1]), s["data"]["path"])
json.dump(s, open(sys.argv[2], "w"))
EOF
db="$T/h.db"

# ---- a new row whose newest run cannot be judged (no baseline): "not judged", skipped
expect 0 "the first run" -- "$H" run "$T/t32.json" --db "$db" --quiet
real=$(last_run)
expect 0 "report --since of a run without baseline" -- "$H" report --since 2000-01-01 --out tr --db "$db"
prints "| t32 | cpu | - | none (run $real) | **not judged** |"
has tr/transitions.xml '<skipped message="not judged'
has tr/transitions.xml 'tests="1" failures="0" errors="0" skipped="1"'
python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' tr/transitions.xml && pass || fail "transitions.xml is not XML"

# ---- an ensemble after the real run: its members are perturbed runs, not the run under test
expect 0 "record an ensemble of 2" -- "$H" baseline record "$T/t32.json" --ensemble 2 --label ens --dir "$T/eb" --db "$db"
members=$(sed -n 's/^ensemble member [0-9]* (perturbation [0-9]*): run \([0-9]*\)$/\1/p' "$T/out" | tr '\n' ' ')
[ "$(echo $members | wc -w)" = 2 ] && pass || fail "the two members' runs: '$members'"
for m in $members; do
  [ "$(sqlite3 "$db" "SELECT count(*) FROM run_extra WHERE run_id = $m AND key = 'ensemble_member'")" = 1 ] && pass || fail "member run $m is not marked"
done
mean=$(sqlite3 "$db" "SELECT run_id FROM baselines WHERE label = 'ens'")
[ "$(sqlite3 "$db" "SELECT count(*) FROM run_extra WHERE run_id = $mean AND key = 'ensemble_member'")" = 0 ] && pass || fail "the ensemble's mean run $mean is marked a member"
grep -q '^ensemble_member:' "$T/eb/t32.ens.baseline" && fail "the ensemble file carries member 0's mark" || pass

expect 0 "report of the newest runs" -- "$H" report --out rn --no-plots --db "$db"
grep -q "^$real,t32," rn/report.csv && pass || fail "the report lacks the real run $real"
for m in $members; do grep -q "^$m,t32," rn/report.csv && fail "the report took member run $m" || pass; done
expect 0 "report --since after the ensemble" -- "$H" report --since 2000-01-01 --db "$db"
prints "none (run $real)"

m0=$(echo $members | cut -d' ' -f1)
expect 2 "baseline record of a member" -- "$H" baseline record "$m0" --label m --dir "$T/mb" --db "$db"
says "run $m0 is a member of an ensemble"
[ ! -e "$T/mb" ] && pass || fail "baseline record of a member made $T/mb"
[ "$(sqlite3 "$db" "SELECT count(*) FROM baselines WHERE label = 'm'")" = 0 ] && pass || fail "the member was labelled"
expect 0 "baseline record of the real run" -- "$H" baseline record "$real" --label plain --dir "$T/pb" --db "$db"

# ---- history: runs of this machine only (no member, no imported mean or baseline file)
expect 0 "a second real run" -- "$H" run "$T/t32.json" --db "$db" --quiet
second=$(last_run)
expect 0 "import a baseline file of the same scenario" -- "$H" baseline import "$T/pb/t32.plain.baseline" --label other --db "$db"
expect 0 "a third real run" -- "$H" run "$T/t32.json" --db "$db" --quiet
third=$(last_run)
got=$(history_of "$third" "$db")
[ "$got" = "$second $real" ] && pass || fail "run $third's history is runs '$got', want '$second $real' (no member, no import)"

# ---- a workload cannot mark its run a member: exec and ingest keep its key apart
printf 'HARNESS_META {"v": 1, "ensemble_member": "0"}\nHARNESS_STEP {"v": 1, "step": 1, "loss": 5.5}\n' >"$T/m.log"
expect 0 "ingest a log naming ensemble_member" -- "$H" ingest "$T/m.log" --device cpu --scenario "$T/t32.json" --db "$db"
ing=$(last_run)
[ "$(sqlite3 "$db" "SELECT key FROM run_extra WHERE run_id = $ing AND key LIKE '%ensemble_member'")" = "workload.ensemble_member" ] && pass || fail "the workload's key was stored as the marker"

# ---- report --since keeps devices of one spec apart, as the report's rows do (an A100 that
# failed and an H100 that passed were one "fixed" row); a --verdict or --golden given is judged
# now, its inputs checked (a stored verdict was taken and a missing golden went unsaid)
expect 0 "a run on one device" -- "$H" run t32.json --steps 2 --db devs.db --quiet
expect 0 "a run on another" -- "$H" run t32.json --steps 2 --db devs.db --quiet
sqlite3 devs.db "update runs set device_name = 'Device A', started_at = '2026-01-01T00:00:00Z' where id = 1; update runs set device_name = 'Device B', started_at = '2026-06-01T00:00:00Z' where id = 2"
expect 0 "report --since between the two devices' runs" -- "$H" report --since 2026-03-01 --db devs.db
prints "| t32 (--steps 2) | cpu (Device A) | none (run 1) | - | **gone** |"
prints "| t32 (--steps 2) | cpu (Device B) | - | none (run 2) | **not judged** |"
"$H" compare 2 --baseline 1 --force --db devs.db >/dev/null 2>&1 # a stored verdict for each run
"$H" compare 1 --baseline 2 --force --db devs.db >/dev/null 2>&1
[ "$(sqlite3 devs.db "select count(distinct run_id) from comparisons")" = 2 ] && pass || fail "the runs have no stored verdicts"
expect 2 "report --since --verdict error_ratio without a golden" -- "$H" report --since 2026-03-01 --verdict error_ratio --db devs.db
says "needs a golden run"

# ---- a failing gate, then a --steps smoke run of the same scenario (another scenario: its hash
# differs): the smoke run has a row of its own and does not hide the failure (report and
# report --since exited 0, the failing run gone from both)
sdb="$T/smoke.db"
python3 - "$T/t32.json" "$T/b8" <<'EOF'
import os, sys
os.makedirs(sys.argv[2], exist_ok=True)
EOF
expect 0 "a reference run" -- "$H" run "$T/t32.json" --db "$T/ref8.db" --quiet
expect 0 "its baseline" -- "$H" baseline record 1 --label cpu --dir "$T/b8" --db "$T/ref8.db"
sed -i '/^step /,$ s/^5 \([^ ]*\)/5 9.5/' "$T/b8/t32.cpu.baseline"
expect 1 "the gate fails at step 5" -- "$H" run "$T/t32.json" --compare --baselines "$T/b8" --db "$sdb" --quiet
expect 0 "a smoke run with --steps 3" -- "$H" run "$T/t32.json" --steps 3 --db "$sdb" --quiet
expect 1 "report after the smoke run still fails" -- "$H" report --baselines "$T/b8" --out sm --no-plots --db "$sdb"
has sm/junit.xml 'failures="1"'
expect 1 "report --since after the smoke run still fails" -- "$H" report --since 2000-01-01 --baselines "$T/b8" --out smt --db "$sdb"
prints "| t32 (--steps 3) | cpu |"
# the baseline the gate imported (run 2) judged against itself: refused (it passed, "other host")
expect 2 "compare of an imported baseline against itself" -- "$H" compare 2 --baselines "$T/b8" --db "$sdb"
says "a baseline judged against itself proves nothing"

finish
