#!/usr/bin/env python3
# tools/reference/bert_reference.py: a small BertForMaskedLM trained with PyTorch + transformers on
# the CPU, written as the BERT parity fixture that tests/test_bert_parity.c reads.
"""Usage:
  python tools/reference/bert_reference.py OUT_DIR [--steps 25] [--seed 1234]

What it writes into OUT_DIR:
  config.json, model.safetensors  the initial weights, as BertForMaskedLM.save_pretrained writes
                                  them (transformers' own _init_weights under torch.manual_seed;
                                  the tied decoder weight is not listed); the harness loads them
                                  by name, so both sides start from the same weights
  batches.json                    one batch per step: input_ids, token_type_ids, attention_mask,
                                  labels ([B*T] each, row-major), with padding, two segments and
                                  MLM labels (-100 where there is no prediction)
  grads0.safetensors              every parameter's gradient after the first backward (float32),
                                  under the harness's names (bert.*, cls.predictions.*; the word
                                  embeddings' gradient includes the tied decoder's)
  grads0_fp64.safetensors         the same with the model in float64 (loss in float64 too)
  reference.json                  versions, the optimizer settings, the step-0 losses (fp32,
                                  fp64) and every step's loss and gradient norm

Training: eager attention, dropout 0, torch.optim.AdamW (weight decay on every weight but the
biases and LayerNorm weights, as transformers' Trainer), clip_grad_norm_(clip), a constant
learning rate; per step: forward, backward, clip, step, zero_grad.
Needs torch, transformers, safetensors, numpy; the harness's tests never run it.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import tempfile

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import BertConfig, BertForMaskedLM

CONFIG = dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=128, max_position_embeddings=64, type_vocab_size=2,
              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pad_token_id=0)
B, T = 4, 32
PAD, CLS, SEP, MASK, FIRST_WORD = 0, 2, 3, 4, 5
OPT = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, clip=1.0)


def make_row(rng):
    """[CLS] a [SEP] b [SEP] then padding; types 0 for [CLS] a [SEP], 1 for b [SEP]."""
    length = int(rng.integers(T // 2, T + 1))
    split = int(rng.integers(2, length - 2))
    words = rng.integers(FIRST_WORD, CONFIG["vocab_size"], size=length).tolist()
    ids = [CLS] + words[1:split] + [SEP] + words[split + 1:length - 1] + [SEP]
    types = [0] * (split + 1) + [1] * (length - split - 1)
    pad = T - length
    return ids + [PAD] * pad, types + [0] * pad, [1] * length + [0] * pad


def mask_row(ids, attn, rng):
    """DataCollatorForLanguageModeling's rule on the real, non-special tokens: 15% chosen, of
    those 80% [MASK], 10% a random word, 10% kept; labels -100 elsewhere."""
    ids = list(ids)
    labels = [-100] * T
    for t in range(T):
        if attn[t] and ids[t] >= FIRST_WORD and rng.random() < 0.15:
            labels[t] = ids[t]
            r = rng.random()
            if r < 0.8:
                ids[t] = MASK
            elif r < 0.9:
                ids[t] = int(rng.integers(FIRST_WORD, CONFIG["vocab_size"]))
    if all(l == -100 for l in labels):  # at least one prediction per row
        labels[1], ids[1] = ids[1], MASK
    return ids, labels


def make_batches(steps, seed):
    rng = np.random.default_rng(seed)
    out = []
    for step in range(steps):
        cols = {"input_ids": [], "token_type_ids": [], "attention_mask": [], "labels": []}
        for row in range(B):
            ids, types, attn = make_row(rng)
            ids, labels = mask_row(ids, attn, rng)
            if step == 0 and row == 0:
                ids[2] = PAD  # a pad id that is attended to: nn.Embedding's padding_idx rule
                labels[2] = -100
            for k, v in (("input_ids", ids), ("token_type_ids", types),
                         ("attention_mask", attn), ("labels", labels)):
                cols[k] += v
        out.append(cols)
    return out


def tensors(b):
    return {k: torch.tensor(v, dtype=torch.long).view(B, T) for k, v in b.items()}


def grads_of(model):
    return {n: p.grad.detach().clone().contiguous() for n, p in model.named_parameters()}


def step0_fp64(init_dir, b):
    """Step-0 gradients with the model in float64 and the mean cross-entropy in float64."""
    m = BertForMaskedLM.from_pretrained(init_dir, attn_implementation="eager",
                                        dtype=torch.float64)
    m.train()
    x = tensors(b)
    logits = m(input_ids=x["input_ids"], token_type_ids=x["token_type_ids"],
               attention_mask=x["attention_mask"]).logits
    loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]),
                                             x["labels"].view(-1), ignore_index=-100)
    loss.backward()
    return loss.item(), grads_of(m)


def param_groups(model):
    def no_decay(n):
        return n.endswith(".bias") or "LayerNorm.weight" in n
    named = list(model.named_parameters())
    return [{"params": [p for n, p in named if not no_decay(n)],
             "weight_decay": OPT["weight_decay"]},
            {"params": [p for n, p in named if no_decay(n)], "weight_decay": 0.0}]


def train(model, batches):
    opt = torch.optim.AdamW(param_groups(model), lr=OPT["lr"], betas=OPT["betas"],
                            eps=OPT["eps"], foreach=False)
    model.train()
    rows, grads0 = [], None
    for step, b in enumerate(batches):
        x = tensors(b)
        loss = model(**x).loss
        loss.backward()
        if step == 0:
            grads0 = grads_of(model)
        norm = torch.nn.utils.clip_grad_norm_(list(model.parameters()), OPT["clip"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        rows.append({"step": step + 1, "loss": loss.item(), "grad_norm": norm.item()})
        print("step %3d  loss %.7f  grad_norm %.5f" % (step + 1, rows[-1]["loss"],
                                                       rows[-1]["grad_norm"]))
    return rows, grads0


def versions():
    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "safetensors": __import__("safetensors").__version__, "numpy": np.__version__,
            "python": platform.python_version(), "torch_threads": torch.get_num_threads()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    model = BertForMaskedLM(BertConfig(**CONFIG, attn_implementation="eager"))
    batches = make_batches(args.steps, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        for f in ("config.json", "model.safetensors"):
            shutil.copy(os.path.join(tmp, f), os.path.join(args.out, f))
        loss64, grads64 = step0_fp64(tmp, batches[0])
    rows, grads = train(model, batches)
    save_file(grads, os.path.join(args.out, "grads0.safetensors"), metadata={"format": "pt"})
    save_file(grads64, os.path.join(args.out, "grads0_fp64.safetensors"),
              metadata={"format": "pt"})
    with open(os.path.join(args.out, "batches.json"), "w") as f:
        json.dump({"batch_size": B, "seq_len": T, "steps": batches}, f, separators=(",", ":"))
        f.write("\n")
    ref = {
        "made_by": "tools/reference/bert_reference.py --steps %d --seed %d" % (args.steps,
                                                                                args.seed),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "versions": versions(),
        "optimizer": {"name": "AdamW", "lr": OPT["lr"], "betas": list(OPT["betas"]),
                      "eps": OPT["eps"], "weight_decay": OPT["weight_decay"],
                      "no_decay": "biases and LayerNorm weights", "clip": OPT["clip"],
                      "schedule": "constant"},
        "step0_loss_fp32": rows[0]["loss"],
        "step0_loss_fp64": loss64,
        "steps": rows,
    }
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
