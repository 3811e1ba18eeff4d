#!/usr/bin/env bash
# tests/test_blas_core.sh: OpenBLAS's kernel choice (devices/blas_core.c): `devices` names it and a
# run records it; when OpenBLAS fell back to its generic Prescott kernels on a CPU with AVX2 (seen
# on a VM whose CPU OpenBLAS 0.3.21 does not know: dgemm 7x slower), the harness sets
# OPENBLAS_CORETYPE and executes itself again with the same arguments; a user's OPENBLAS_CORETYPE
# is obeyed. HARNESS_BLAS_CORE_AS=Prescott makes the fallback happen on any machine.
# usage: test_blas_core.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
tiny="$SRC/scenarios/gpt2-tiny.json"
unset OPENBLAS_CORETYPE HARNESS_BLAS_CORE_WAS HARNESS_BLAS_CORE_AS

echo "devices names the kernels, a run records them"
expect 0 "devices" -- "$H" devices
grep -q "^cpu: OpenBLAS kernels [A-Za-z0-9]" "$T/out" && pass || fail "devices: no OpenBLAS kernel line: $(tail -2 "$T/out")"
grep -qF "the harness set OPENBLAS_CORETYPE" "$T/out" && fail "devices: a fix named where OpenBLAS chose by itself" || pass
expect 0 "a run" -- "$H" run "$tiny" --steps 1 --db "$T/a.db" --quiet
expect 0 "show it" -- "$H" show 1 --db "$T/a.db"
grep -qE "^runtime .*OpenBLAS \([A-Za-z0-9]+\)" "$T/out" && pass || fail "the run's runtime_version lacks OpenBLAS's kernels: $(grep runtime "$T/out")"

echo "a user's OPENBLAS_CORETYPE is obeyed, even the generic one"
expect 0 "devices, OPENBLAS_CORETYPE=Prescott" -- env OPENBLAS_CORETYPE=Prescott "$H" devices
grep -q "^cpu: OpenBLAS kernels Prescott$" "$T/out" && pass || fail "OPENBLAS_CORETYPE=Prescott not obeyed: $(tail -1 "$T/out")"

flags="$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)"
case "$flags" in *avx512f*) want=SkylakeX ;; *avx2*fma*|*fma*avx2*) want=Haswell ;; *) want="" ;; esac
if [ -z "$want" ]; then
  echo "skipped: the fallback's replacement (this CPU has neither AVX-512F nor AVX2 with FMA)"
else
  echo "the generic fallback replaced by $want, the arguments kept"
  expect 0 "devices as if OpenBLAS chose Prescott" -- env HARNESS_BLAS_CORE_AS=Prescott "$H" devices
  grep -qF "cpu: OpenBLAS kernels $want (OpenBLAS chose its generic Prescott kernels for this CPU; the harness set OPENBLAS_CORETYPE=$want)" "$T/out" \
    && pass || fail "devices after the fallback: $(tail -1 "$T/out")"
  mkdir -p "$T/a dir"
  expect 0 "a run as if OpenBLAS chose Prescott, a store path with a space" -- \
    env HARNESS_BLAS_CORE_AS=Prescott "$H" run "$tiny" --steps 2 --db "$T/a dir/b.db" --quiet
  expect 0 "show it" -- "$H" show 1 --db "$T/a dir/b.db"
  grep -qE "^runtime .*OpenBLAS \($want\)" "$T/out" && pass || fail "the run ran on other kernels: $(grep runtime "$T/out")"
  grep -qE "^steps +2" "$T/out" && pass || fail "the run executed again lost --steps 2: $(grep -E '^steps' "$T/out")"
  expect 2 "a usage error is still exit 2 after executing again" -- env HARNESS_BLAS_CORE_AS=Prescott "$H" run "$tiny" --steps nope
  says "--steps"
  # the variables were for the harness's own OpenBLAS: a command it starts gets the user's environment
  expect 0 "exec after executing again" -- env HARNESS_BLAS_CORE_AS=Prescott "$H" exec --db "$T/e.db" -- sh -c 'env >"$0"; echo "{\"step\": 1, \"loss\": 2.5}"' "$T/child.env"
  grep -q "^OPENBLAS_CORETYPE=\|^HARNESS_BLAS_CORE_WAS=" "$T/child.env" && fail "exec's command inherited $(grep -E '^(OPENBLAS_CORETYPE|HARNESS_BLAS_CORE_WAS)=' "$T/child.env" | tr '\n' ' ')" || pass
  expect 0 "exec with the user's OPENBLAS_CORETYPE" -- env OPENBLAS_CORETYPE=Haswell "$H" exec --db "$T/e.db" -- sh -c 'env >"$0"; echo "{\"step\": 1, \"loss\": 2.5}"' "$T/child2.env"
  grep -q "^OPENBLAS_CORETYPE=Haswell$" "$T/child2.env" && pass || fail "exec's command lost the user's OPENBLAS_CORETYPE"
fi
finish
