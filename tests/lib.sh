# tests/lib.sh: what the shell tests share, sourced by each: the temp dir $T (removed on exit),
# pass/fail counters, `expect CODE WHAT -- cmd...`, `says TEXT` and the closing `finish` line.
NAME="$(basename "$0" .sh)"
T="$(mktemp -d "${TMPDIR:-/tmp}/$NAME.XXXXXX")"; trap 'rm -rf "$T"' EXIT
fails=0; passes=0
pass() { passes=$((passes+1)); }
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
# expect CODE WHAT -- command...: checks the exit code; stdout in $T/out, stderr in $T/err
expect() {
  local want="$1" what="$2"; shift 3
  "$@" >"$T/out" 2>"$T/err"; local got=$?
  if [ "$got" = "$want" ]; then pass; else
    fail "$what: exit $got, want $want"; sed 's/^/    /' "$T/err" | head -5; grep -v PASS "$T/out" | head -20 | sed 's/^/    /'
  fi
}
# says TEXT: the last expect's stderr contains TEXT
says() { if grep -qF -- "$1" "$T/err"; then pass; else fail "stderr lacks '$1':"; sed 's/^/    /' "$T/err" | head -5; fi; }
# the closing line, "NAME: N passed, M failed"; its status is the script's (0 when none failed)
finish() { echo "$NAME: $passes passed, $fails failed"; [ "$fails" = 0 ]; }
# Waiting without guessing: a test that signals or kills a process waits for a condition (a line
# printed, a step recorded), never a fixed sleep. The limits are generous, as they cost time only
# when something is wrong; HARNESS_TEST_SLOW (a whole number, default 1) multiplies them for a
# slow machine or build (the ASan run of tools/test.sh sets 4).
SLOW="${HARNESS_TEST_SLOW:-1}"
case "$SLOW" in ''|*[!0-9]*|0*) echo "$NAME: HARNESS_TEST_SLOW must be a whole number from 1, got '$SLOW'" >&2; exit 2;; esac
# wait_until SECONDS WHAT -- command...: runs the command every 0.1 s until it succeeds, for at
# most SECONDS x HARNESS_TEST_SLOW; 0 when it did, else a fail naming WHAT, and 1
wait_until() {
  local limit=$(($1 * SLOW)) what="$2"; shift 3
  local end=$((SECONDS + limit))
  until "$@"; do
    if [ "$SECONDS" -ge "$end" ]; then fail "waited $limit s for $what"; return 1; fi
    sleep 0.1
  done
}
