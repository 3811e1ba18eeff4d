#!/usr/bin/env bash
# fuzz/build.sh: builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined)
# into build-fuzz/. usage: bash fuzz/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CC="${CC:-clang}"
command -v "$CC" >/dev/null || { echo "fuzz: $CC not found (apt-get install clang)"; exit 2; }
mkdir -p build-fuzz
FLAGS=(-g -O1 -std=c11 -Wall -Wextra -Werror -Wno-unused-parameter
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iharness)
LIBS=$(pkg-config --cflags --libs jansson libcrypto oniguruma libutf8proc)
COMMON=(harness/util/util.c harness/util/escape.c harness/util/input_file.c)
"$CC" "${FLAGS[@]}" fuzz/fuzz_safetensors.c harness/formats/safetensors.c harness/formats/safetensors_set.c \
  "${COMMON[@]}" $LIBS -o build-fuzz/fuzz_safetensors
"$CC" "${FLAGS[@]}" fuzz/fuzz_tokenizer.c harness/formats/tokenizer*.c harness/formats/unicode_bert*.c \
  "${COMMON[@]}" $LIBS \
  -o build-fuzz/fuzz_tokenizer
# the routing check of HARNESS_STEP's expert_tokens shares the store's shape limits
"$CC" "${FLAGS[@]}" fuzz/fuzz_logparse.c harness/ingest/logparse*.c harness/store/store_routing.c \
  harness/store/store.c harness/store/store_values.c "${COMMON[@]}" $LIBS $(pkg-config --libs sqlite3) -lm -o build-fuzz/fuzz_logparse
"$CC" "${FLAGS[@]}" fuzz/fuzz_mmidx.c harness/formats/data_mmidx.c "${COMMON[@]}" $LIBS \
  -o build-fuzz/fuzz_mmidx
echo "fuzz: built build-fuzz/fuzz_safetensors, build-fuzz/fuzz_tokenizer, build-fuzz/fuzz_logparse and build-fuzz/fuzz_mmidx"
