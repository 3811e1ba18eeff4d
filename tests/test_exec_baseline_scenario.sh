#!/usr/bin/env bash
# tests/test_exec_baseline_scenario.sh: exec/ingest --compare without --scenario against a
# baseline that ran a scenario is exit 2 before CMD runs or anything is recorded; against a
# baseline without one (an earlier exec), it is judged.
# usage: test_exec_baseline_scenario.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
cd "$T"
export HARNESS_THREADS=1
expect 0 "a native run" -- "$H" run "$SRC/scenarios/gpt2-tiny.json" --steps 2 --db e.db --quiet
sum=$(sha256sum <e.db)
expect 2 "exec --compare, no scenario, a scenario's baseline" -- "$H" exec --db e.db --compare --baseline 1 -- touch touched
says "give --scenario FILE"
[ ! -e touched ] && pass || fail "CMD ran although the baseline could not be used"
[ "$(sha256sum <e.db)" = "$sum" ] && pass || fail "exec recorded a run it then refused to judge"
printf 'HARNESS_STEP {"v":1,"step":1,"loss":2}\n' >l.log
expect 2 "ingest --compare, no scenario, a scenario's baseline" -- "$H" ingest l.log --device x --db e.db --compare --baseline 1
[ "$(sha256sum <e.db)" = "$sum" ] && pass || fail "ingest recorded a run it then refused to judge"
expect 0 "exec without a scenario" -- "$H" exec --db e.db -- cat l.log
expect 0 "exec --compare against an exec baseline without a scenario" -- "$H" exec --db e.db --compare --baseline 2 -- cat l.log
grep -q "^verdict: pass" "$T/err" && pass || fail "no pass verdict against the exec baseline"
finish
