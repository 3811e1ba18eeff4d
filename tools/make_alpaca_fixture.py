#!/usr/bin/env python3
# tools/make_alpaca_fixture.py: writes a small Alpaca instruction file and the ids, labels and
# attention masks that Stanford Alpaca's SFT preprocessing (train.py) gives for it with transformers.
"""Usage: PYTHON tools/make_alpaca_fixture.py [--check]

PYTHON is a Python with torch and transformers (tools/pyenv.sh makes one). Writes, under
tests/data/sft/:
  alpaca.json    generated records (instruction, input: present, empty or missing, output),
                 a JSON array as Alpaca ships its data
  alpaca.jsonl   the same records as JSON lines
  alpaca_expected.json   for every record, train.py's input_ids and labels (before padding),
                 and DataCollatorForSupervisedDataset's batch of all records (input_ids,
                 labels, attention_mask padded to the longest), with model_max_length, the
                 eos and pad ids.

The preprocessing is written from train.py's documented behaviour: source = PROMPT_DICT's
prompt_input (input not empty) or prompt_no_input, target = output + tokenizer.eos_token;
examples = source + target; both lists tokenized one text at a time with
padding="longest", max_length=tokenizer.model_max_length, truncation=True; labels = a copy of
the example's ids with the first source_len set to -100 (source_len: the source's ids that are
not the pad id); the collator pads input_ids with the pad id, labels with -100, and
attention_mask = input_ids != pad id. The tokenizer is the test BPE (tests/data/hf/bpe512, GPT-2's
byte-level kind) as PreTrainedTokenizerFast with eos_token "<|endoftext|>" and, as GPT-2 has no
pad token, pad_token = eos_token (the SFT scripts' choice; train.py would add "[PAD]" and resize
the embeddings, which the harness refuses). With --check nothing is written: the script says
whether the committed files still match. The harness's tests read these files; they never run
Python.
"""
import argparse
import copy
import json
import os
import random
import sys

import torch
import transformers
from transformers import PreTrainedTokenizerFast

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "sft")
TOKENIZER = os.path.join(ROOT, "tests", "data", "hf", "bpe512", "tokenizer.json")
CORPUS = os.path.join(ROOT, "scenarios", "data", "corpus.txt")
MODEL_MAX_LENGTH = 200
IGNORE_INDEX = -100
PROMPT_DICT = {
    "prompt_input": (
        "Below is an instruction that describes a task, paired with an input that provides "
        "further context. Write a response that appropriately completes the request.\n\n"
        "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:"
    ),
    "prompt_no_input": (
        "Below is an instruction that describes a task. Write a response that appropriately "
        "completes the request.\n\n### Instruction:\n{instruction}\n\n### Response:"
    ),
}


def make_records():
    """Sentences of the shipped corpus, some unicode and braces, lengths that truncate."""
    rng = random.Random(11)
    with open(CORPUS, encoding="utf-8") as f:
        words = f.read().split()
    extra = ["café", "naïve", "日本語", "{braces}", "emoji 🙂", "tab\tsep", "<|endoftext|>"]

    def text(n):
        return " ".join(rng.choice(words) if rng.random() > 0.1 else rng.choice(extra)
                        for _ in range(n))

    records = []
    for i in range(12):
        r = {"instruction": text(rng.randint(3, 12))}
        kind = i % 3
        if kind == 0:
            r["input"] = text(rng.randint(2, 8))
        elif kind == 1:
            r["input"] = ""
        r["output"] = text(rng.randint(1, 20))
        records.append(r)
    records[4]["output"] = text(60)          # the example is truncated, its EOS cut
    records[7]["instruction"] = text(90)     # the prompt alone is longer than model_max_length
    records[9]["output"] = ""                # an empty output: the target is the EOS alone
    return records


def tokenize_fn(strings, tokenizer):
    tokenized_list = [
        tokenizer(text, return_tensors="pt", padding="longest",
                  max_length=tokenizer.model_max_length, truncation=True)
        for text in strings
    ]
    input_ids = [t.input_ids[0] for t in tokenized_list]
    lens = [t.input_ids.ne(tokenizer.pad_token_id).sum().item() for t in tokenized_list]
    return input_ids, lens


def preprocess(records, tokenizer):
    sources = [
        PROMPT_DICT["prompt_input"].format_map(r) if r.get("input", "") != ""
        else PROMPT_DICT["prompt_no_input"].format_map(r)
        for r in records
    ]
    targets = [f"{r['output']}{tokenizer.eos_token}" for r in records]
    examples = [s + t for s, t in zip(sources, targets)]
    input_ids, _ = tokenize_fn(examples, tokenizer)
    _, source_lens = tokenize_fn(sources, tokenizer)
    labels = copy.deepcopy(input_ids)
    for label, source_len in zip(labels, source_lens):
        label[:source_len] = IGNORE_INDEX
    return input_ids, labels


def collate(input_ids, labels, tokenizer):
    ids = torch.nn.utils.rnn.pad_sequence(input_ids, batch_first=True,
                                          padding_value=tokenizer.pad_token_id)
    lab = torch.nn.utils.rnn.pad_sequence(labels, batch_first=True, padding_value=IGNORE_INDEX)
    return ids, lab, ids.ne(tokenizer.pad_token_id)


def build():
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=TOKENIZER, eos_token="<|endoftext|>",
                                        pad_token="<|endoftext|>",
                                        model_max_length=MODEL_MAX_LENGTH, padding_side="right")
    records = make_records()
    input_ids, labels = preprocess(records, tokenizer)
    ids, lab, mask = collate(input_ids, labels, tokenizer)
    expected = {
        "made_by": "tools/make_alpaca_fixture.py",
        "transformers_version": transformers.__version__,
        "model_max_length": MODEL_MAX_LENGTH,
        "eos_id": tokenizer.eos_token_id,
        "pad_id": tokenizer.pad_token_id,
        "records": [{"input_ids": i.tolist(), "labels": l.tolist()}
                    for i, l in zip(input_ids, labels)],
        "batch": {"input_ids": ids.tolist(), "labels": lab.tolist(),
                  "attention_mask": mask.long().tolist()},
    }
    files = {
        "alpaca.json": json.dumps(records, ensure_ascii=False, indent=1) + "\n",
        "alpaca.jsonl": "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
        "alpaca_expected.json": json.dumps(expected) + "\n",
    }
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, write nothing")
    args = ap.parse_args()
    files = build()
    stale = []
    for name, text in files.items():
        path = os.path.join(OUT, name)
        if args.check:
            with open(path, encoding="utf-8") as f:
                if f.read() != text:
                    stale.append(name)
        else:
            os.makedirs(OUT, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if stale:
        print("stale: " + ", ".join(stale))
        return 1
    print("ok" if args.check else "wrote " + ", ".join(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
