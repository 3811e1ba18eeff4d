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
