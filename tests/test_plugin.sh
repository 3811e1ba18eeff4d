#!/usr/bin/env bash
# tests/test_plugin.sh: out-of-tree device backends (devices/device_plugin.h): the example plugin
# built from the cpu backend's sources passes `harness ops` and trains gpt2-tiny as cpu does.
# usage: test_plugin.sh HARNESS_EXE SOURCE_DIR (run in the build folder, where the plugins are)

# Broken plugins (tests/plugins/broken_plugin.c) each fail with a clear message: a wrong ABI
# version, a struct size of another device.h and a missing entry point exit 2 before anything
# runs; an op that fails is a device error naming the op (ops: FAIL, exit 1; run: exit 1).
set -u
H="$1"; SRC="$2"
B="$(cd "$(dirname "$H")" && pwd)"
. "$(dirname "$0")/lib.sh"

# ---- the example plugin: every op against the cpu reference, by path and by name ----
expect 0 "ops on the example plugin (path)" -- "$H" ops --device "plugin:$B/example_cpu.so"
if grep -q " 0 failed" "$T/out" && ! grep -q FAIL "$T/out"; then pass; else fail "ops table has failures"; fi
expect 0 "ops grad on the example plugin" -- "$H" ops --mode grad --device "plugin:$B/example_cpu.so"
HARNESS_PLUGIN_PATH="/nonexistent:$B" expect 0 "ops by name through HARNESS_PLUGIN_PATH" -- \
  "$H" ops --device plugin:example_cpu:0 --op gelu_forward

# ---- gpt2-tiny on cpu and on the plugin: the same losses and gradient norms, bit for bit ----
expect 0 "gpt2-tiny on cpu" -- "$H" run "$SRC/scenarios/gpt2-tiny.json" --device cpu --db "$T/s.db" --quiet
HARNESS_PLUGIN_PATH="$B" expect 0 "gpt2-tiny on the plugin" -- \
  "$H" run "$SRC/scenarios/gpt2-tiny.json" --device plugin:example_cpu --db "$T/s.db" --quiet
if command -v sqlite3 >/dev/null; then
  a="$(sqlite3 "$T/s.db" "SELECT step, loss, grad_norm FROM steps WHERE run_id = 1 ORDER BY step")"
  b="$(sqlite3 "$T/s.db" "SELECT step, loss, grad_norm FROM steps WHERE run_id = 2 ORDER BY step")"
  if [ -n "$a" ] && [ "$(echo "$a" | wc -l)" = 40 ] && [ "$a" = "$b" ]; then pass
  else fail "the plugin's 40 steps differ from cpu's"; diff <(echo "$a") <(echo "$b") | head -5; fi
else
  echo "note: sqlite3 absent, the step-by-step comparison is skipped"
fi

# ---- load errors: exit 2, a message that says what is wrong ----
expect 2 "wrong ABI version" -- "$H" ops --device "plugin:$B/broken_version.so"
says "built for device plugin ABI version 3, this harness speaks version 2"
expect 2 "wrong struct size" -- "$H" run "$SRC/scenarios/gpt2-tiny.json" --device "plugin:$B/broken_size.so" --db "$T/x.db"
says "struct device_i is"
says "rebuild the plugin"
expect 2 "no entry point" -- "$H" ops --device "plugin:$B/broken_no_entry.so"
says "does not export harness_device_plugin_v1"
expect 2 "no such file" -- "$H" ops --device "plugin:$B/absent.so"
says "plugin: cannot load $B/absent.so"
env -u HARNESS_PLUGIN_PATH "$H" ops --device plugin:example_cpu >"$T/out" 2>"$T/err"
if [ $? = 2 ]; then pass; else fail "a name without HARNESS_PLUGIN_PATH: not exit 2"; fi
says "HARNESS_PLUGIN_PATH is not set"
# a folder named example_cpu.so earlier on the path is no plugin: the search goes on
mkdir -p "$T/shadow/example_cpu.so"
HARNESS_PLUGIN_PATH="$T/shadow:$B" expect 0 "a folder named NAME.so on the path is passed over" -- \
  "$H" ops --device plugin:example_cpu --op gelu_forward
HARNESS_PLUGIN_PATH="$T" expect 2 "a name not on the path" -- "$H" ops --device plugin:example_cpu
says "no example_cpu.so or libexample_cpu.so in HARNESS_PLUGIN_PATH"
# a plugin that names itself as a built-in backend, sizes its elements unlike its dtype, or
# refuses with a message that fills the buffer unterminated: exit 2, nothing recorded
expect 2 "a plugin named MUSA" -- "$H" run "$SRC/scenarios/gpt2-tiny.json" --device "plugin:$B/broken_name.so" --db "$T/clash.db"
says "the backend name 'MUSA' is a built-in backend's"
[ -e "$T/clash.db" ] && fail "a plugin named MUSA created the store" || pass
expect 2 "a plugin whose real_size is not its dtype's" -- "$H" ops --device "plugin:$B/broken_element.so" --op add
says "the device says dtype 'fp32' with real_size 2"
expect 2 "a plugin refusal without a terminator" -- "$H" ops --device "plugin:$B/broken_err.so" --op add
says "cannot open device 0: xxxx"
expect 2 "a device number the plugin lacks" -- "$H" ops --device "plugin:$B/example_cpu.so:3"
says "there is one device (0), not 3"

# ---- a failing op: a device error naming the op ----
expect 1 "failing op in ops" -- "$H" ops --device "plugin:$B/broken_op.so" --op gelu_forward
if grep -q "FAIL  broken: gelu_forward: the accelerator rejected the kernel" "$T/out"; then pass
else fail "ops does not name the failing op"; head -5 "$T/out"; fi
expect 0 "the other ops of that plugin pass" -- "$H" ops --device "plugin:$B/broken_op.so" --op add,gemm
expect 1 "failing op in a run" -- "$H" run "$SRC/scenarios/gpt2-tiny.json" --device "plugin:$B/broken_op.so" --db "$T/f.db"
says "gelu_forward: the accelerator rejected the kernel"
# ---- a device that cannot be opened again after its error: the rows so far kept, exit 1 ----
expect 1 "a device lost after a failing op" -- "$H" ops --device "plugin:$B/broken_reopen.so,cpu" --op gelu_forward --json --db "$T/lost.db"
says "could not be opened again after its error"
python3 -c 'import json, sys; rows = json.load(open(sys.argv[1])); assert [r["status"] for r in rows][0] == "fail" and any(r["device"] == "cpu" for r in rows), rows' "$T/out" && pass || { fail "the JSON lacks the failed row or the next device's"; cat "$T/out"; }
# ---- an op that faults: the process dies as it would, but says so first ----
"$H" ops --device "plugin:$B/broken_crash.so" --op gelu_forward >"$T/out" 2>"$T/err"; got=$?
[ "$got" -ne 0 ] && pass || fail "a crashing op exited 0"
# (a sanitizer build reports the null store itself, first)
if grep -q "Sanitizer\|runtime error" "$T/err"; then pass; else says "fatal: SIGSEGV in 'harness ops'"; fi
# ---- an op that calls exit(0): no pass for a CI gate to read ----
expect 1 "an op that calls exit(0)" -- "$H" ops --device "plugin:$B/broken_exit.so" --op gelu_forward
says "something called exit(0) inside 'harness ops'"
expect 1 "a run whose op calls exit(0)" -- "$H" run "$SRC/scenarios/gpt2-tiny.json" --device "plugin:$B/broken_exit.so" --db "$T/exit.db" --quiet
# ---- an op right out of place and wrong in place, as the models call it: ops must fail it ----
expect 1 "rope_forward wrong only in place" -- "$H" ops --device "plugin:$B/broken_alias.so" --op rope_forward
grep -q "in-place .*FAIL" "$T/out" && pass || { fail "ops passed an in-place rope_forward that is wrong"; cat "$T/out"; }
grep -q "hs=6  .*PASS" "$T/out" && pass || fail "the out-of-place rope_forward cases should pass"
# ---- an op that writes past its view the input's own neighbours (GELU is the identity at the
# guard values): the guards differ per tensor, so the copy is caught ----
expect 1 "gelu_forward writing 5 elements past its view" -- "$H" ops --device "plugin:$B/broken_past.so" --op gelu_forward
grep -q "wrote outside its view" "$T/out" && pass || { fail "ops passed an op that wrote past its view"; cat "$T/out"; }
# ---- a backward op with one gradient all NaN before two right ones: grad mode fails it (the
# NaN was replaced as the worst by the next finite gradient, and the row passed) ----
expect 1 "layernorm_backward with a NaN dinp in grad mode" -- "$H" ops --mode grad --device "plugin:$B/broken_nangrad.so" --op layernorm_backward --db "$T/nangrad.db"
grep -q "layernorm_backward .*FAIL" "$T/out" && pass || { fail "grad mode passed a NaN gradient"; cat "$T/out"; }
[ "$(sqlite3 "$T/nangrad.db" "select status from op_results")" = fail ] && pass || fail "the NaN gradient's row is stored as $(sqlite3 "$T/nangrad.db" "select status from op_results")"
# ---- an alloc that fails without device_fail: a device error, never a crash or "(null)" ----
expect 1 "a silent alloc failure in ops" -- "$H" ops --device "plugin:$B/broken_alloc.so" --op add
grep -q "allocating .* failed (the backend gave no reason)" "$T/out" && pass || { fail "ops: no reason for the failed alloc"; cat "$T/out"; }
expect 1 "a silent alloc failure in run" -- "$H" run "$SRC/scenarios/gpt2-tiny.json" --device "plugin:$B/broken_alloc.so" --db "$T/alloc.db" --quiet
says "the backend gave no reason"
# ---- perf with a device lost partway: every op and device in its own column ----
expect 1 "perf with a device lost partway" -- "$H" ops --mode perf --device "plugin:$B/broken_reopen.so,cpu" --op gelu_forward,add,scale
for op in gelu_forward add scale; do
  grep -q "^$op " "$T/out" && pass || { fail "the perf table lacks $op"; cat "$T/out"; }
done
grep -q "^add .*| not run .*| *[0-9.]* " "$T/out" && pass || { fail "add: the lost device is not 'not run' beside cpu's time"; cat "$T/out"; }
# ---- a plugin by a long full path (100 bytes and more) is taken, in ops as in run ----
longdir="$T/$(printf 'd%.0s' $(seq 70))"; mkdir -p "$longdir"; cp "$B/example_cpu.so" "$longdir/"
expect 0 "a 100-byte plugin path" -- "$H" ops --device "plugin:$longdir/example_cpu.so" --op add
grep -qF "plugin:$longdir/example_cpu.so" "$T/out" && pass || fail "the long spec is not printed whole"
finish
