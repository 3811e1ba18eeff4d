#!/usr/bin/env bash
# tests/test_opencl_fault.sh: a check that can fail: an opencl build with gelu_forward made
# deliberately wrong must be caught by `harness ops` and by training against cpu.
# usage: test_opencl_fault.sh HARNESS_EXE SOURCE_DIR

# Builds the harness a second time with -DHARNESS_OPENCL_FAULT=gelu_forward (the opencl
# gelu_forward adds 1e-3 to every output) and shows that `harness ops` names that op as FAIL
# (exit 1) while every other op passes, and that training gpt2-tiny (40 steps) with it leaves
# cpu's losses beyond rtol 1e-4 while the real build stays within it. Exit 77 (skipped) without
# an OpenCL device.
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
FAULT=gelu_forward
STEPS=40
RTOL=1e-4
B="$(cd "$(dirname "$H")" && pwd)/opencl-fault"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
fails=0; passes=0
pass() { passes=$((passes+1)); }
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

"$H" ops --device opencl --op sum >"$T/out" 2>"$T/err"
if [ $? = 2 ] && grep -qE "no OpenCL device|unknown device 'opencl'" "$T/err"; then
  echo "SKIP: no OpenCL device: $(head -1 "$T/err")"
  exit 77
fi

# ---- the fault build: only the harness target, in a folder of the build tree (kept between
# runs, so a rerun only relinks) ----
echo "building the fault-injection harness in $B"
CMAKE="${CMAKE_COMMAND:-cmake}" # ctest passes the cmake that configured this build
if ! "$CMAKE" -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release -DHARNESS_SANITIZE=OFF -DHARNESS_OPENCL=ON \
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

# ---- training: losses of `harness run` (one 'step' line per step) against cpu ----
tiny="$SRC/scenarios/gpt2-tiny.json"
losses() { # EXE DEVICE OUT: the loss of every step, one per line
  "$1" run "$tiny" --device "$2" --steps $STEPS --db "$T/runs.db" 2>>"$T/run.err" |
    awk '$1 == "step" { for (i = 2; i < NF; i++) if ($i == "loss") print $(i + 1) }' >"$3"
  [ "$(wc -l <"$3")" = $STEPS ] || fail "$1 run on $2 printed $(wc -l <"$3") of $STEPS losses"
}
# max |a - b| / |b| over the steps, and the first step beyond RTOL
compare() {
  paste "$1" "$2" | awk -v rtol=$RTOL '{ d = $1 - $2; if (d < 0) d = -d; r = d / ($2 < 0 ? -$2 : $2);
    if (r > m) m = r; if (r > rtol && !first) first = NR }
    END { printf "%.3g %d\n", m, first }'
}
losses "$H" cpu "$T/cpu"
losses "$H" opencl "$T/ocl"
losses "$F" opencl "$T/fault"
read -r real_rel real_first <<<"$(compare "$T/ocl" "$T/cpu")"
read -r fault_rel fault_first <<<"$(compare "$T/fault" "$T/cpu")"
echo "max relative loss difference to cpu over $STEPS steps: opencl $real_rel, opencl with the $FAULT fault $fault_rel (first beyond $RTOL at step $fault_first)"
awk -v r="$real_rel" -v t=$RTOL 'BEGIN { exit !(r <= t) }' && pass || fail "the real opencl build leaves cpu by $real_rel > $RTOL"
awk -v r="$fault_rel" -v t=$RTOL 'BEGIN { exit !(r > t) }' && pass || fail "the fault build stays within $RTOL of cpu ($fault_rel)"

echo "test_opencl_fault: $passes passed, $fails failed"
[ "$fails" = 0 ]
