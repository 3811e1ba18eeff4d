#!/usr/bin/env python3
# tools/reference/bert_train_check.py: replays a harness BERT run in transformers' BertForMaskedLM
# from the same weights and batches and compares every step's loss; run by tests/test_minilm.sh.
"""Usage:
  python tools/reference/bert_train_check.py --scenario SCN.json --init DIR --batches FILE
         --db FILE [--checkpoint DIR] [--corpus FILE --tokenizer DIR] [--rtol 1e-5]

  --scenario    the scenario the harness ran (its train section gives the optimizer settings)
  --init        what 'harness init SCN DIR' wrote: the run's initial weights as a
                BertForMaskedLM directory; it must load with no missing or unexpected keys
  --batches     what 'harness run SCN --dump-batches FILE' wrote: one JSON line per step
  --db          the harness store of that run (the last run in it is compared)
  --checkpoint  the published checkpoint the run started from: every tensor of it that
                BertForMaskedLM uses must be bit-equal in --init (the harness loaded it)
  --corpus, --tokenizer  line-by-line data: every row of every batch, unmasked (the label where
                there is one, else the input id), must equal transformers' tokenizer on that
                corpus line (truncation and padding to the batch's T)

Training as the harness does: dropout 0 (the --init config), torch.optim.AdamW with weight decay
on every weight but the biases and LayerNorm weights (transformers' Trainer), the scenario's
betas and eps, clip_grad_norm_(clip), the learning rate times transformers' schedule
multiplier; per step: forward, backward, clip, step, zero_grad. Exit 0 when every step's loss is
within --rtol (relative) of the harness's, 1 when not, 2 on bad input.
"""
import argparse
import json
import math
import sqlite3
import sys

import torch
from safetensors import safe_open
from transformers import AutoTokenizer, BertForMaskedLM


def fail(msg, code=1):
    print("bert_train_check: " + msg, file=sys.stderr)
    sys.exit(code)


def lr_multiplier(schedule, step, warmup, total):
    """harness/train/train.c lr_multiplier (transformers' get_scheduler)."""
    if step < warmup:
        return step / max(warmup, 1)
    if schedule == "constant":
        return 1.0
    span = max(total - warmup, 1)
    progress = (step - warmup) / span
    if schedule == "linear":
        return max(0.0, 1.0 - progress)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))


def load_model(init_dir):
    model, info = BertForMaskedLM.from_pretrained(init_dir, output_loading_info=True,
                                                  attn_implementation="eager")
    bad = {k: v for k, v in info.items() if v}
    if bad:
        fail(f"{init_dir}: BertForMaskedLM.from_pretrained reports {bad}")
    if model.config.hidden_dropout_prob or model.config.attention_probs_dropout_prob:
        fail(f"{init_dir}: dropout is not 0 in config.json", 2)
    print(f"{init_dir}: loads as BertForMaskedLM, no missing or unexpected keys")
    return model


def check_checkpoint(model, ckpt_dir):
    state = model.state_dict()
    n = 0
    with safe_open(f"{ckpt_dir}/model.safetensors", "pt") as f:
        for key in f.keys():
            name = key if key.startswith(("bert.", "cls.")) else "bert." + key
            if name not in state:
                continue  # the pooler, the position_ids buffer: not BertForMaskedLM's
            if not torch.equal(f.get_tensor(key).to(torch.float32), state[name]):
                fail(f"{ckpt_dir}: {key} differs from the harness's initial weights")
            n += 1
    print(f"{ckpt_dir}: {n} tensors bit-equal in the harness's initial weights")


def read_batches(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def check_ids(batches, corpus, tok_dir):
    tok = AutoTokenizer.from_pretrained(tok_dir)
    with open(corpus, encoding="utf-8") as f:
        lines = [l for l in f.read().split("\n") if l.strip()]
    for b in batches:
        B, T, step = b["B"], b["T"], b["step"]
        for i in range(B):
            row = ((step - 1) * B + i) % len(lines)
            want = tok(lines[row], truncation=True, max_length=T, padding="max_length")["input_ids"]
            got = [lab if lab != -100 else x for x, lab in
                   zip(b["input_ids"][i * T:(i + 1) * T], b["labels"][i * T:(i + 1) * T])]
            if got != want:
                fail(f"step {step} row {i} (corpus line {row + 1}): harness ids {got} "
                     f"!= transformers' {want}")
    print(f"{corpus}: every batch row's ids equal transformers' tokenizer ({tok_dir})")


def harness_steps(db):
    con = sqlite3.connect(db)
    run = con.execute("select max(run_id) from steps").fetchone()[0]
    rows = con.execute("select step, loss, grad_norm from steps where run_id = ? order by step",
                       (run,)).fetchall()
    con.close()
    return rows


def optimizer(model, train):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": train.get("weight_decay", 0.0)},
              {"params": no_decay, "weight_decay": 0.0}]
    if train.get("decay_all"):
        groups = [{"params": decay + no_decay, "weight_decay": train.get("weight_decay", 0.0)}]
    betas = tuple(train.get("betas", [0.9, 0.999]))
    return torch.optim.AdamW(groups, lr=train["lr"], betas=betas, eps=train.get("eps", 1e-8))


def tensor(b, key):
    v = b.get(key)
    return None if v is None else torch.tensor(v, dtype=torch.long).view(b["B"], b["T"])


def train_and_compare(model, batches, train, ref, rtol):
    opt = optimizer(model, train)
    model.train()
    total, worst = train["steps"], 0.0
    if len(ref) != len(batches):
        fail(f"the store has {len(ref)} steps, the batch dump {len(batches)}", 2)
    for b, (step, h_loss, h_norm) in zip(batches, ref):
        mult = lr_multiplier(train.get("schedule", "constant"), step - 1,
                             train.get("warmup_steps", 0), total)
        for g in opt.param_groups:
            g["lr"] = train["lr"] * mult
        out = model(input_ids=tensor(b, "input_ids"), token_type_ids=tensor(b, "token_type_ids"),
                    attention_mask=tensor(b, "attention_mask"), labels=tensor(b, "labels"))
        out.loss.backward()
        clip = train.get("clip", 0.0)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip if clip > 0 else 1e30)
        opt.step()
        opt.zero_grad()
        loss = out.loss.item()
        rel = abs(loss - h_loss) / abs(loss)
        worst = max(worst, rel)
        print(f"step {step}: transformers loss {loss:.8f} grad_norm {norm.item():.6f}; harness "
              f"{h_loss:.8f} {h_norm:.6f}; loss rel diff {rel:.2e}")
        if rel > rtol:
            fail(f"step {step}: loss differs by {rel:.2e} relative, over {rtol:g}")
    print(f"every step's loss within {rtol:g} relative (worst {worst:.2e})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--init", required=True)
    ap.add_argument("--batches", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--checkpoint")
    ap.add_argument("--corpus")
    ap.add_argument("--tokenizer")
    ap.add_argument("--rtol", type=float, default=1e-5)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    with open(a.scenario) as f:
        train = json.load(f)["train"]
    model = load_model(a.init)
    if a.checkpoint:
        check_checkpoint(model, a.checkpoint)
    batches = read_batches(a.batches)
    if a.corpus and a.tokenizer:
        check_ids(batches, a.corpus, a.tokenizer)
    train_and_compare(model, batches, train, harness_steps(a.db), a.rtol)


if __name__ == "__main__":
    main()
