#!/usr/bin/env bash
# tests/test_shipped_scenarios.sh: every scenario shipped in scenarios/ reads: `init` makes its model
# directory, or stops only at a model directory the repository does not ship (the 7B-size ones).
# usage: test_shipped_scenarios.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
for s in "$SRC"/scenarios/*.json; do
  n="$(basename "$s" .json)"
  "$H" init "$s" "$T/$n" >"$T/out" 2>"$T/err"; got=$?
  if [ "$got" = 0 ]; then pass
  elif [ "$got" = 2 ] && grep -q 'model.path: .* is not a directory' "$T/err"; then pass
  else fail "$n: init exit $got: $(tail -1 "$T/err")"; fi
done
finish
