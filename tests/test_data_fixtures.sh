#!/usr/bin/env bash
# tests/test_data_fixtures.sh: the committed Alpaca and Megatron fixtures are still what transformers,
# tokenizers and numpy give (tools/make_alpaca_fixture.py and tools/make_megatron_fixture.py
# --check). Needs the venv of tools/pyenv.sh (BUILD/venv) or HARNESS_PYTHON: skipped without.
# usage: test_data_fixtures.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import torch, transformers, tokenizers, numpy' 2>/dev/null; then
  echo "test_data_fixtures: skipped: no Python with torch, transformers, tokenizers and numpy at $PY"
  echo "  (make it with: bash tools/pyenv.sh $(dirname "$H"), or set HARNESS_PYTHON)"
  exit 77
fi
for tool in make_alpaca_fixture.py make_megatron_fixture.py; do
  expect 0 "$tool --check" -- "$PY" "$SRC/tools/$tool" --check
  grep -qx ok "$T/out" && pass || fail "$tool --check: $(cat "$T/out")"
done
finish
