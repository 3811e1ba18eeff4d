#!/usr/bin/env python3
# tools/alpaca_loss.py: the loss transformers computes for the first batch of Alpaca SFT data, from
# train.py's preprocessing and collator (padded to the longest row), for tests/test_alpaca_loss.sh.
"""Usage: PYTHON tools/alpaca_loss.py --init DIR --data FILE --tokenizer tokenizer.json
                                      --model-max-length N --batch B

Loads GPT2LMHeadModel from DIR (what `harness init SCENARIO DIR` wrote), tokenizes FILE (a JSON
array or JSON lines of instruction/input/output) as tools/make_alpaca_fixture.py does (Stanford
Alpaca's train.py: eos_token "<|endoftext|>", pad_token = eos), collates rows 0 .. B-1 with
DataCollatorForSupervisedDataset's rule and prints model(input_ids, attention_mask=...,
labels=...).loss in float64 text: the loss the harness's first step must give.
"""
import argparse
import json
import os
import sys

import torch
from transformers import GPT2LMHeadModel, PreTrainedTokenizerFast

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_alpaca_fixture import collate, preprocess  # noqa: E402


def read_records(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--init", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--model-max-length", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    tok = PreTrainedTokenizerFast(tokenizer_file=a.tokenizer, eos_token="<|endoftext|>",
                                  pad_token="<|endoftext|>", model_max_length=a.model_max_length,
                                  padding_side="right")
    records = read_records(a.data)[: a.batch]
    input_ids, labels = preprocess(records, tok)
    ids, lab, mask = collate(input_ids, labels, tok)
    model = GPT2LMHeadModel.from_pretrained(a.init, torch_dtype=torch.float32)
    model.eval()  # the scenario's dropouts are 0: eval and train give the same loss
    with torch.no_grad():
        loss = model(input_ids=ids, attention_mask=mask.long(), labels=lab).loss
    print(repr(float(loss)))


if __name__ == "__main__":
    main()
