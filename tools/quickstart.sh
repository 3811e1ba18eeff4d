#!/usr/bin/env bash
# tools/quickstart.sh: the README's first command: installs what is missing, builds the harness
# and trains the default scenario on the cpu backend into harness.db (SQLite).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
./build/harness run scenarios/gpt2-tiny.json --device cpu --db harness.db
./build/harness runs --db harness.db --limit 5
