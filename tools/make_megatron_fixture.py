#!/usr/bin/env python3
# tools/make_megatron_fixture.py: writes small Megatron-LM binarized datasets with numpy, laid out
# as Megatron's indexed_dataset.py writes them, plus GPTDataset samples and blending indices.
"""Usage: PYTHON tools/make_megatron_fixture.py [--check]

PYTHON is a Python with numpy and tokenizers (tools/pyenv.sh makes one). Writes, under
tests/data/megatron/:
  docs.jsonl, docs.txt       generated documents (JSON lines with "text"; the same as lines)
  docs_text_document.bin/.idx   what `harness preprocess --input docs.jsonl --output-prefix docs
                             --tokenizer bpe:tests/data/hf/bpe512/tokenizer.json --append-eod
                             --eod-token "<|endoftext|>"` must write byte for byte (and, from
                             docs.txt, the same files): ids from the tokenizers library
                             (Tokenizer.encode(text).ids), documents with no ids skipped, EOD
                             appended, uint16 (Megatron's best_fitting_dtype below 65500 ids)
  wide_text_document.bin/.idx   the same documents reversed, as int32 (dtype code 4), with
                             pointers and doc_idx as the builder writes them
  megatron_expected.json     every document's ids; the first samples of GPTDataset over
                             docs_text_document with seq_len 16 and over wide_text_document
                             (Megatron's _build_sample_idx walk over doc_idx, unshuffled, as many
                             epochs as 60 samples need: more than one); build_blending_indices for weights [3, 5, 2] over 200
                             samples.

The index layout follows MMapIndexedDataset.Index.writer: magic b"MMIDIDX\\x00\\x00", <Q version 1,
<B dtype code, <Q len(sizes), <Q len(doc_idx), sizes int32, pointers int64 (byte offsets, the
running sum of sizes * itemsize), doc_idx int64 (0, then one entry per document). The sample index
and the blending rule are written here from their documented rules, independently of the harness.
With --check nothing is written: the script says whether the committed files still match.
"""
import argparse
import json
import os
import random
import struct
import sys

import numpy as np
from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "megatron")
TOKENIZER = os.path.join(ROOT, "tests", "data", "hf", "bpe512", "tokenizer.json")
CORPUS = os.path.join(ROOT, "scenarios", "data", "corpus.txt")
SEQ_LEN = 16
N_SAMPLES = 60
BLEND_WEIGHTS = [3.0, 5.0, 2.0]
BLEND_SIZE = 200
DTYPE_CODES = {np.uint8: 1, np.int8: 2, np.int16: 3, np.int32: 4, np.int64: 5, np.uint16: 8}


def make_docs():
    rng = random.Random(5)
    with open(CORPUS, encoding="utf-8") as f:
        lines = [l for l in f.read().split("\n") if l.strip()]
    docs = [rng.choice(lines)[: rng.randint(5, 120)] for _ in range(14)]
    docs[3] = ""                       # no ids: skipped, no EOD
    docs[6] = "naïve café 日本語 🙂"     # multi-byte text
    docs[9] = "one <|endoftext|> two"  # the special token's text inside a document
    return docs


def write_dataset(prefix, docs_ids, dtype):
    """MMapIndexedDatasetBuilder: add_item per document, end_document, finalize."""
    sizes = [len(d) for d in docs_ids]
    with open(prefix + ".bin", "wb") as f:
        for d in docs_ids:
            f.write(np.array(d, dtype=dtype).tobytes(order="C"))
    itemsize = np.dtype(dtype).itemsize
    pointers = np.zeros(len(sizes), dtype=np.int64)
    if sizes:
        np.cumsum(np.array(sizes[:-1], dtype=np.int64), out=pointers[1:])
    pointers *= itemsize
    doc_idx = np.arange(len(sizes) + 1, dtype=np.int64)
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", DTYPE_CODES[dtype]))
        f.write(struct.pack("<Q", len(sizes)))
        f.write(struct.pack("<Q", len(doc_idx)))
        f.write(np.array(sizes, dtype=np.int32).tobytes(order="C"))
        f.write(pointers.tobytes(order="C"))
        f.write(doc_idx.tobytes(order="C"))


def build_sample_idx(sizes, doc_idx, seq_length, num_samples):
    """GPTDataset's sample index: (position in doc_idx, offset) where each sample starts."""
    sample_idx = [(0, 0)]
    doc_idx_index, doc_offset = 0, 0
    while len(sample_idx) <= num_samples:
        remaining = seq_length + 1
        while remaining != 0:
            doc_length = sizes[doc_idx[doc_idx_index]] - doc_offset
            remaining -= doc_length
            if remaining <= 0:
                doc_offset += remaining + doc_length - 1
                remaining = 0
            else:
                doc_idx_index += 1
                doc_offset = 0
        sample_idx.append((doc_idx_index, doc_offset))
    return sample_idx


def num_epochs(tokens_per_epoch, seq_length, num_samples):
    """GPTDataset's _num_epochs: enough epochs for num_samples samples."""
    epochs = 1
    while (epochs * tokens_per_epoch - 1) // seq_length < num_samples:
        epochs += 1
    return epochs


def gpt_samples(docs_ids, seq_length, num_samples):
    """GPTDataset.__getitem__ over unshuffled epochs: seq_length + 1 tokens per sample."""
    sizes = [len(d) for d in docs_ids]
    epochs = num_epochs(sum(sizes), seq_length, num_samples)
    doc_idx = list(range(len(docs_ids))) * epochs
    idx = build_sample_idx(sizes, doc_idx, seq_length, num_samples)
    out = []
    for i in range(num_samples):
        (f, of), (l, ol) = idx[i], idx[i + 1]
        if f == l:
            toks = docs_ids[doc_idx[f]][of: ol + 1]
        else:
            toks = list(docs_ids[doc_idx[f]][of:])
            for k in range(f + 1, l):
                toks += docs_ids[doc_idx[k]]
            toks += docs_ids[doc_idx[l]][: ol + 1]
        assert len(toks) == seq_length + 1
        out.append(list(toks))
    return out


def blending_indices(weights, size):
    """build_blending_indices: the dataset with the largest weight * max(i, 1) - taken."""
    w = np.array(weights, dtype=np.float64)
    w /= np.sum(w)
    taken = [0] * len(w)
    index, sample = [], []
    for i in range(size):
        x = max(float(i), 1.0)
        errors = [w[d] * x - taken[d] for d in range(len(w))]
        best = max(range(len(w)), key=lambda d: (errors[d], -d))
        index.append(best)
        sample.append(taken[best])
        taken[best] += 1
    return index, sample


def build(tmp):
    tok = Tokenizer.from_file(TOKENIZER)
    eod = tok.token_to_id("<|endoftext|>")
    docs = make_docs()
    ids = [tok.encode(d).ids for d in docs]
    kept = [i + [eod] for i in ids if i]
    write_dataset(os.path.join(tmp, "docs_text_document"), kept, np.uint16)
    write_dataset(os.path.join(tmp, "wide_text_document"), kept[::-1], np.int32)
    index, sample = blending_indices(BLEND_WEIGHTS, BLEND_SIZE)
    expected = {
        "made_by": "tools/make_megatron_fixture.py",
        "eod": eod,
        "documents": kept,
        "seq_len": SEQ_LEN,
        "samples": gpt_samples(kept, SEQ_LEN, N_SAMPLES),
        "wide_samples": gpt_samples(kept[::-1], SEQ_LEN, N_SAMPLES),
        "blend": {"weights": BLEND_WEIGHTS, "dataset_index": index, "dataset_sample_index": sample},
    }
    texts = {
        "docs.jsonl": "".join(json.dumps({"text": d, "id": i}, ensure_ascii=False) + "\n"
                              for i, d in enumerate(docs)),
        "docs.txt": "".join(d + "\n" for d in docs),
        "megatron_expected.json": json.dumps(expected) + "\n",
    }
    for name, text in texts.items():
        with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
            f.write(text)
    return sorted(os.listdir(tmp))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, write nothing")
    args = ap.parse_args()
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        names = build(tmp)
        stale = []
        for name in names:
            with open(os.path.join(tmp, name), "rb") as f:
                data = f.read()
            path = os.path.join(OUT, name)
            if args.check:
                if not os.path.exists(path) or open(path, "rb").read() != data:
                    stale.append(name)
            else:
                os.makedirs(OUT, exist_ok=True)
                with open(path, "wb") as f:
                    f.write(data)
    if stale:
        print("stale: " + ", ".join(stale))
        return 1
    print("ok" if args.check else "wrote " + ", ".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
