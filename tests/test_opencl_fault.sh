#!/usr/bin/env bash
# tests/test_opencl_fault.sh: a check that can fail: an opencl build with gelu_forward made
# deliberately wrong must be caught by `harness ops` and by training against cpu.
# usage: test_opencl_fault.sh HARNESS_EXE SOURCE_DIR

# Builds the harness a second time with -DHARNESS_OPENCL_FAULT=gelu_forward (the opencl
# gelu_forward adds 1e-3, or $HARNESS_OPENCL_FAULT_SIZE, to every output) and shows that `harness ops` names that op as FAIL
# (exit 1) while every other op passes, and that `harness compare` fails a gpt2-tiny run of it
# against the cpu run (the scenario's tolerances) while the real build passes; the same for the
# error-ratio verdict (golden: cpu64), also in bf16, and the ensemble band (5 perturbed cpu runs). Exit 77 (skipped)
# without an OpenCL device.
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
FAULT=gelu_forward
B="$(cd "$(dirname "$H")" && pwd)/opencl-fault"
. "$(dirname "$0")/lib.sh"

"$H" ops --device opencl --op sum >"$T/out" 2>"$T/err"
if [ $? = 2 ] && grep -qE "no OpenCL device|unknown device 'opencl'" "$T/err"; then
  echo "SKIP: no OpenCL device: $(head -1 "$T/err")"
  exit 77
fi

# ---- the fault build: only the harness target, in a folder of the build tree (kept between
# runs, so a rerun only relinks) ----
echo "building the fault-injection harness in $B"
CMAKE="${CMAKE_COMMAND:-cmake}" # ctest passes the cmake that configured this build
if ! "$CMAKE" -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release -DHARNESS_SANITIZE=OFF -DHARNESS_OPENCL=ON -DHARNESS_CUDA=OFF \
      -DHARNESS_OPENCL_FAULT=$FAULT >"$T/cfg" 2>&1 ||
   ! "$CMAKE" --build "$B" --target harness -j2 >"$T/build" 2>&1; then
  echo "FAIL: the fault build did not build"; tail -20 "$T/cfg" "$T/build"
  exit 1
fi
F="$B/harness"

# ---- harness ops finds it, and only it ----
"$F" ops --device opencl >"$T/ops" 2>"$T/ops.err"; code=$?
[ "$code" = 1 ] && pass || fail "ops on the fault build exits $code, want 1"
grep -qE "^$FAULT .* FAIL" "$T/ops" && pass || fail "ops does not report $FAULT as FAIL"
others=$(grep -E " FAIL" "$T/ops" | grep -vc "^$FAULT ")
[ "$others" = 0 ] && pass || fail "$others other ops fail too: $(grep ' FAIL' "$T/ops" | grep -v "^$FAULT " | head -3)"
grep -qE "^[0-9]+ passed, [1-9][0-9]* failed$" "$T/ops" && pass || fail "no 'N passed, M failed' summary"
grep -q "fault-injection build" "$T/ops.err" && pass || fail "the fault build does not warn about itself"
"$F" ops --device opencl --op $FAULT --json >"$T/json" 2>/dev/null
grep -q '"status": "fail"' "$T/json" && pass || fail "--json does not say fail"

# ---- training: `harness compare` holds each opencl run against the cpu run of gpt2-tiny ----
tiny="$SRC/scenarios/gpt2-tiny.json"
run_id() { # EXE DEVICE: trains, prints the new run's id
  "$1" run "$tiny" --device "$2" --db "$T/runs.db" --quiet 2>>"$T/run.err" |
    sed -n 's/^run \([0-9]*\): ok,.*/\1/p'
}
cpu_run=$(run_id "$H" cpu); real_run=$(run_id "$H" opencl); fault_run=$(run_id "$F" opencl)
[ -n "$cpu_run" ] && [ -n "$real_run" ] && [ -n "$fault_run" ] && pass ||
  { fail "a training run did not finish ok"; tail -5 "$T/run.err"; }
"$H" compare "$real_run" --baseline "$cpu_run" --db "$T/runs.db" >"$T/real.cmp" 2>&1; code=$?
[ "$code" = 0 ] && pass || { fail "compare of the real opencl build exits $code, want 0"; cat "$T/real.cmp"; }
"$H" compare "$fault_run" --baseline "$cpu_run" --db "$T/runs.db" >"$T/fault.cmp" 2>&1; code=$?
[ "$code" = 1 ] && pass || { fail "compare of the fault build exits $code, want 1"; cat "$T/fault.cmp"; }
grep -q "^verdict: fail: loss at step" "$T/fault.cmp" && pass || fail "compare does not give a loss failure"
# ---- the error-ratio verdict (golden: cpu64) and the ensemble band (docs/compare.md) ----
"$H" run "$tiny" --golden --db "$T/runs.db" --quiet >"$T/golden.out" 2>>"$T/run.err" &&
  grep -q "golden run of gpt2-tiny" "$T/golden.out" && pass || fail "run --golden did not record a golden run"
"$H" compare "$real_run" --baseline "$cpu_run" --verdict error_ratio --db "$T/runs.db" >"$T/real.er" 2>&1; code=$?
[ "$code" = 0 ] && pass || { fail "error ratio of the real opencl build exits $code, want 0"; cat "$T/real.er"; }
"$H" compare "$fault_run" --baseline "$cpu_run" --verdict error_ratio --db "$T/runs.db" >"$T/fault.er" 2>&1; code=$?
[ "$code" = 1 ] && pass || { fail "error ratio of the fault build exits $code, want 1"; cat "$T/fault.er"; }
grep -q "^verdict: fail: error ratio" "$T/fault.er" && pass || fail "compare does not give an error-ratio failure"
"$H" baseline record "$tiny" --ensemble 5 --label ens --dir "$T/bl" --db "$T/runs.db" >"$T/ens.out" 2>&1 &&
  pass || { fail "baseline record --ensemble 5 failed"; cat "$T/ens.out"; }
again_run=$(run_id "$H" cpu)
"$H" compare "$again_run" --baseline ens --verdict ensemble --db "$T/runs.db" >"$T/again.ens" 2>&1; code=$?
[ "$code" = 0 ] && pass || { fail "a repeated cpu run against the ensemble exits $code, want 0"; cat "$T/again.ens"; }
"$H" compare "$fault_run" --baseline ens --verdict ensemble --db "$T/runs.db" >"$T/fault.ens" 2>&1; code=$?
[ "$code" = 1 ] && pass || { fail "the fault build against the ensemble exits $code, want 1"; cat "$T/fault.ens"; }
grep -q "^verdict: fail: loss at step .* vs ensemble mean" "$T/fault.ens" && pass || fail "compare does not give an ensemble failure"
"$H" compare "$real_run" --baseline ens --db "$T/runs.db" >"$T/real.ens" 2>&1
# ---- the same in bf16 (issue 13): the opencl bf16 run judged against the committed bf16 cpu
# reference by its error to the bf16 scenario's cpu64 golden (fp64, no rounding). The fault is
# 1e-2 here (HARNESS_OPENCL_FAULT_SIZE, about one bf16 ulp at 1): the default 1e-3 is below bf16's
# resolution for most GELU outputs and measured inside the noise (ratio 1.95 of 3, printed) ----
bf16="$SRC/scenarios/gpt2-tiny-bf16.json"
bf16_base="$SRC/baselines/gpt2-tiny-bf16.cpu.baseline"
bf16_run() { # EXE: trains the bf16 scenario on opencl, prints the new run's id
  HARNESS_OPENCL_FAULT_SIZE=1e-2 "$1" run "$bf16" --device opencl --db "$T/bf16.db" --quiet 2>>"$T/run.err" |
    sed -n 's/^run \([0-9]*\): ok,.*/\1/p'
}
"$H" run "$bf16" --golden --db "$T/bf16.db" --quiet >"$T/bf16.golden" 2>>"$T/run.err" &&
  grep -q "golden run of gpt2-tiny-bf16" "$T/bf16.golden" && pass || fail "run --golden of the bf16 scenario failed"
"$H" runs --db "$T/bf16.db" | grep -q " cpu64 *fp64 *ok" && pass || fail "the bf16 scenario's golden is not an fp64 cpu64 run"
bf16_real=$(bf16_run "$H"); bf16_fault=$(bf16_run "$F")
[ -n "$bf16_real" ] && [ -n "$bf16_fault" ] && pass || { fail "a bf16 opencl run did not finish ok"; tail -5 "$T/run.err"; }
"$H" compare "$bf16_real" --baseline "$bf16_base" --verdict error_ratio --db "$T/bf16.db" >"$T/bf16.real" 2>&1; code=$?
[ "$code" = 0 ] && pass || { fail "bf16 error ratio of the real opencl build exits $code, want 0"; cat "$T/bf16.real"; }
grep -q "^golden .*cpu64, fp64" "$T/bf16.real" && pass || fail "the bf16 compare did not use the fp64 golden"
"$H" compare "$bf16_fault" --baseline "$bf16_base" --verdict error_ratio --db "$T/bf16.db" >"$T/bf16.fault" 2>&1; code=$?
[ "$code" = 1 ] && pass || { fail "bf16 error ratio of the fault build exits $code, want 1"; cat "$T/bf16.fault"; }
grep -q "^verdict: fail: error ratio" "$T/bf16.fault" && pass || fail "the bf16 fault compare does not give an error-ratio failure"
echo "bf16, real opencl build: $(grep '^error_ratio' "$T/bf16.real")"
echo "bf16, with the $FAULT fault of 1e-2: $(grep '^error_ratio' "$T/bf16.fault")"
small=$("$F" run "$bf16" --device opencl --db "$T/bf16.db" --quiet 2>>"$T/run.err" | sed -n 's/^run \([0-9]*\): ok,.*/\1/p')
[ -n "$small" ] && "$H" compare "$small" --baseline "$bf16_base" --verdict error_ratio --db "$T/bf16.db" >"$T/bf16.small" 2>&1
echo "bf16, with the $FAULT fault of 1e-3 (figure only): $(grep '^error_ratio' "$T/bf16.small")"
echo "real opencl build: $(grep '^error_ratio' "$T/real.er")"
echo "real opencl build: $(grep '^ensemble' "$T/real.ens")"
echo "with the $FAULT fault: $(grep '^error_ratio' "$T/fault.er")"
echo "with the $FAULT fault: $(grep '^ensemble' "$T/fault.ens")"
echo "real opencl build: $(grep '^loss' "$T/real.cmp")"
echo "with the $FAULT fault: $(grep '^loss' "$T/fault.cmp"); $(grep '^first failing step' "$T/fault.cmp")"

finish
