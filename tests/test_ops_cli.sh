#!/usr/bin/env bash
# tests/test_ops_cli.sh: `harness ops` end to end: bad arguments (exit 2), cpu devices, --json and
# --db, the opencl device in every mode (skipped, with a message, when there is none).
# usage: test_ops_cli.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
prints() { if grep -qE -- "$1" "$T/out"; then pass; else fail "output lacks /$1/"; tail -3 "$T/out" | sed 's/^/    /'; fi; }

# ---- arguments ----
expect 0 "ops --help" -- "$H" ops --help
prints "--mode test"
expect 2 "unknown option" -- "$H" ops --bogus; says "--bogus"
expect 2 "unknown op" -- "$H" ops --op nosuch --device cpu; says "nosuch"
expect 2 "unknown op in a list" -- "$H" ops --op gelu_forward,nosuch --device cpu; says "nosuch"
expect 2 "bad mode" -- "$H" ops --mode fast; says "fast"
# a device list is checked whole before any check runs (cpu's checks ran first, then exit 2)
expect 2 "an unknown device after a known one" -- "$H" ops --device cpu,nosuch --op add; says "unknown device 'nosuch'"
[ ! -s "$T/out" ] && pass || fail "ops ran checks before refusing the device list: $(head -3 "$T/out")"
# a device given twice: refused (perf mode printed the first one's figures in both columns)
expect 2 "a device given twice" -- "$H" ops --mode perf --device cpu,cpu --op sum; says "--device cpu is given twice"
expect 2 "--mode without value" -- "$H" ops --mode
expect 2 "--device without value" -- "$H" ops --device
expect 2 "empty --device" -- "$H" ops --device=
expect 2 "unknown device" -- "$H" ops --device nosuch; says "nosuch"
expect 2 "cpu:3" -- "$H" ops --device cpu:3
expect 2 "positional argument" -- "$H" ops gemm
# an empty item ran every op (--op ,) or every device (--device ,); a long spec was cut at 63
# bytes and the cut one opened
expect 2 "--op ," -- "$H" ops --op , --device cpu64; says "--op: an empty name"
expect 2 "--op with a trailing comma" -- "$H" ops --op gemm, --device cpu64; says "--op: an empty name"
expect 2 "--device ," -- "$H" ops --device , --op sum; says "--device: an empty name"
expect 2 "--device with an empty item" -- "$H" ops --device cpu,,cpu64 --op sum; says "--device: an empty name"
# a device that cannot be opened is exit 2: the --db store must not be created by it
expect 2 "unknown device with --db" -- "$H" ops --device nosuch --op sum --db "$T/new.db"; says "nosuch"
[ -e "$T/new.db" ] && fail "a usage error created the --db store" || pass
: >"$T/empty.db"
expect 2 "unknown device with an empty --db file" -- "$H" ops --device nosuch --op sum --db "$T/empty.db"
[ -s "$T/empty.db" ] && fail "a usage error made the empty --db file a store" || pass
expect 2 "--db in no folder" -- "$H" ops --device cpu64 --op sum --db "$T/nodir/x.db"; says "nodir"
# a spec longer than a list holds (1023 bytes) is refused, not cut
long="plugin:$T/$(printf 'd%.0s' $(seq 1100))/example_cpu.so"
expect 2 "a 1100-byte device spec" -- "$H" ops --device "$long" --op sum; says "longer than 1023 bytes"
expect 2 "run --compare, a 1100-byte device spec" -- "$H" run "$SRC/scenarios/gpt2-tiny.json" --compare --device "$long" --db "$T/none.db"
says "longer than 1023 bytes"; [ -e "$T/none.db" ] && fail "run --compare created the store" || pass
# every op named, twice over: a name given twice counts once
all=$("$H" ops --device cpu --op nosuch 2>&1 | sed -n 's/.*the ops are: //p' | tr ' ' ',')
expect 0 "every op named twice" -- "$H" ops --device cpu64 --op "$all,$all" --mode perf
printf 'not a database\n' >"$T/text.db"; cp "$T/text.db" "$T/text.copy"
expect 2 "--db on a text file" -- "$H" ops --device cpu --op sum --db "$T/text.db"
cmp -s "$T/text.db" "$T/text.copy" && pass || fail "a non-database --db file was modified"

# ---- the cpu devices: cpu64 against cpu, cpu against itself, gradients ----
expect 0 "cpu64 test mode" -- "$H" ops --device cpu64
prints "^[0-9]+ passed, 0 failed$"
expect 0 "cpu against itself" -- "$H" ops --device cpu --op layernorm_forward,gemm
expect 0 "cpu grad mode" -- "$H" ops --device cpu --mode grad
prints "layernorm_backward"
expect 0 "cpu64 grad mode" -- "$H" ops --device cpu64 --mode grad
# grad mode checks only ops with a gradient case: an --op that has none would check nothing and
# pass (0 passed, 0 failed, exit 0) and create the --db store; it is exit 2 naming the op
expect 2 "grad mode of an op without a gradient check" -- "$H" ops --device cpu --mode grad --op gelu_forward,add --db "$T/grad.db"
says "--mode grad has no gradient check of 'add'"; says "gelu_forward/gelu_backward"
[ -e "$T/grad.db" ] && fail "grad mode of an unchecked op created the --db store" || pass
expect 0 "grad mode by the forward op's name" -- "$H" ops --device cpu --mode grad --op gelu_forward
prints "^1 passed, 0 failed$"
expect 0 "--json" -- "$H" ops --device cpu64 --op sum --json
head -c 1 "$T/out" | grep -q '\[' && pass || fail "--json prints a JSON array"
[ "$(grep -c '"status": "pass"' "$T/out")" -ge 3 ] && pass || fail "--json has a pass per sum shape"
expect 0 "--db" -- "$H" ops --device cpu64 --op add,scale --db "$T/ops.db"
expect 0 "--db again" -- "$H" ops --device cpu64 --op add --mode perf --db "$T/ops.db"
expect 0 "the --db file is still a store harness runs reads" -- "$H" runs --db "$T/ops.db"
if command -v sqlite3 >/dev/null; then
  n=$(sqlite3 "$T/ops.db" "select count(*) from op_results")
  [ "$n" = 5 ] && pass || fail "op_results holds 5 rows, got $n"
  # an op without a FLOP count stores no GFLOP/s (NULL), as the table's "-" and --json's null
  n=$(sqlite3 "$T/ops.db" "select count(*) from op_results where mode = 'perf' and gflops is null")
  [ "$n" = 1 ] && pass || fail "add's perf row stores a GFLOP/s, got $n NULL rows"
fi

# ---- opencl ----
"$H" ops --device opencl --op sum >"$T/out" 2>"$T/err"; probe=$?
if [ "$probe" = 2 ] && grep -qE "no OpenCL device|unknown device 'opencl'" "$T/err"; then
  echo "SKIP: opencl part: $(head -1 "$T/err")"
else
  expect 0 "opencl test mode" -- "$H" ops --device opencl
  prints "^[0-9]+ passed, 0 failed$"
  prints "softmax_xent_forward +N=7 V=11 "
  expect 0 "opencl grad mode" -- "$H" ops --device opencl --mode grad
  prints "attention_backward"
  expect 0 "opencl perf mode, two devices" -- "$H" ops --device cpu,opencl --mode perf --op add,gemm
  prints "^gemm .*\| .*\| "
  name=$("$H" devices | awk '/^opencl:0/ {print toupper(substr($2, 1, 6))}')
  expect 0 "opencl by part of its name, any case ($name)" -- "$H" ops --device "opencl:$name" --op add
  expect 2 "opencl:99" -- "$H" ops --device opencl:99; says "opencl:99"
fi

finish
