#!/usr/bin/env bash
# bench/bench_ops.sh: the per-op perf table, cpu and opencl side by side (harness ops --mode perf
# on every device of the build); figures only, nothing asserted. usage: bench_ops.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build}"
devices=$("$build/harness" devices --json | grep -o '"spec": "[^"]*"' | cut -d'"' -f4 |
          grep -v '^cpu64$' | paste -sd, -)
echo "bench_ops: devices $devices"
exec "$build/harness" ops --mode perf --device "$devices"
