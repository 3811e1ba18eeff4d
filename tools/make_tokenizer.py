#!/usr/bin/env python3
# tools/make_tokenizer.py: trains the test tokenizer (a 512-token byte-level BPE, GPT-2's kind)
# on the shipped corpus with Hugging Face's tokenizers library and writes the ids it produces.
"""Usage: /opt/refvenv/bin/python tools/make_tokenizer.py [--check]

Writes, under tests/data/hf/:
  bpe512/tokenizer.json, bpe512/vocab.json, bpe512/merges.txt   the tokenizer (both forms)
  tokenizer_expected.json   the ids the tokenizers library gives for
    - tokenizer_cases.txt (unicode, whitespace runs, contractions, numbers, an added token),
      with tokenizer.json and with vocab.json + merges.txt, every id;
    - scenarios/data/corpus.txt with tokenizer.json: count, sha256 of the int32 little-endian
      ids per chunk of 4096 ids;
    - the code point probe: for every block of 4096 code points, the text made by probe_text()
      (every code point but the surrogates in a few contexts), sha256 of its ids.
With --check nothing is written: the script says whether the committed files still match.

Needs only the tokenizers package (pip install tokenizers). The harness's tests read these
files; they never run Python.
"""
import argparse
import hashlib
import json
import os
import struct
import sys

from tokenizers import ByteLevelBPETokenizer, Tokenizer, __version__ as TOKENIZERS_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HF = os.path.join(ROOT, "tests", "data", "hf")
TOK_DIR = os.path.join(HF, "bpe512")
CORPUS = os.path.join(ROOT, "scenarios", "data", "corpus.txt")
CASES = os.path.join(HF, "tokenizer_cases.txt")
EXPECTED = os.path.join(HF, "tokenizer_expected.json")
VOCAB_SIZE = 512
CHUNK = 4096
PROBE_BLOCK = 4096


def probe_text(block):
    """The probe text of one block of code points (tests/test_tokenizer.c builds the same)."""
    out = []
    for cp in range(block * PROBE_BLOCK, (block + 1) * PROBE_BLOCK):
        if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
            continue
        c = chr(cp)
        out.append("x" + c + "x " + c + "9" + c + c + " x\n")
    return "".join(out)


def ids_sha256(ids):
    return hashlib.sha256(struct.pack("<%di" % len(ids), *ids)).hexdigest()


def read_text(path):
    with open(path, "r", encoding="utf-8", newline="") as f:
        return f.read()


def train(out_dir):
    tok = ByteLevelBPETokenizer()
    tok.train([CORPUS], vocab_size=VOCAB_SIZE, min_frequency=2, special_tokens=["<|endoftext|>"],
              show_progress=False)
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    tok.save_model(out_dir)  # vocab.json + merges.txt


def expected(tok_dir):
    full = Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
    vm = ByteLevelBPETokenizer(os.path.join(tok_dir, "vocab.json"),
                               os.path.join(tok_dir, "merges.txt"))
    cases = read_text(CASES)
    corpus_ids = full.encode(read_text(CORPUS)).ids
    probe = [ids_sha256(full.encode(probe_text(b)).ids) for b in range(0x110000 // PROBE_BLOCK)]
    return {
        "made_by": "tools/make_tokenizer.py",
        "tokenizers_version": TOKENIZERS_VERSION,
        "vocab_size": full.get_vocab_size(),
        "cases": {
            "text": "tokenizer_cases.txt",
            "tokenizer_json_ids": full.encode(cases).ids,
            "vocab_merges_ids": vm.encode(cases).ids,
        },
        "corpus": {
            "text": "scenarios/data/corpus.txt",
            "n_ids": len(corpus_ids),
            "chunk": CHUNK,
            "chunk_sha256": [ids_sha256(corpus_ids[i:i + CHUNK])
                             for i in range(0, len(corpus_ids), CHUNK)],
        },
        "probe": {"block": PROBE_BLOCK, "block_sha256": probe},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files")
    args = ap.parse_args()
    if args.check:
        exp = expected(TOK_DIR)
        with open(EXPECTED) as f:
            old = json.load(f)
        same = all(old[k] == exp[k] for k in ("cases", "corpus", "probe"))
        print("tokenizer_expected.json %s" % ("matches" if same else "DIFFERS"))
        return 0 if same else 1
    train(TOK_DIR)
    exp = expected(TOK_DIR)
    with open(EXPECTED, "w") as f:
        json.dump(exp, f, indent=1)
        f.write("\n")
    print("wrote %s and %s (tokenizers %s)" % (TOK_DIR, EXPECTED, TOKENIZERS_VERSION))
    return 0


if __name__ == "__main__":
    sys.exit(main())
