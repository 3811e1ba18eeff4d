#!/usr/bin/env python3
# tools/make_log_fixtures.py: makes the real training logs under tests/data/logs/ that the parser
# tests read: a Trainer run with and without HarnessCallback, the seed demo's line, MLPerf mllog.
"""Usage: python tools/make_log_fixtures.py KIND INIT_DIR SCENARIO
KIND: trainer | trainer-callback | seed | mllog. INIT_DIR: `harness init SCENARIO INIT_DIR`.
Trains the scenario's GPT-2 on the CPU for a few steps and prints what that library prints;
capture stdout and stderr together (2>&1) into the fixture. tests/data/logs/README.md says how
each fixture was made."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads"))

import torch  # noqa: E402
from transformers import GPT2LMHeadModel  # noqa: E402

import hf_causal_lm as w  # noqa: E402


def blocks_of(sc):
    ids = w.tokenize(sc)
    T = sc["seq_len"]
    return torch.tensor(ids[:len(ids) // T * T], dtype=torch.long).view(-1, T)


def trainer_run(sc, init, callback):
    from transformers import Trainer, TrainingArguments
    import tempfile
    blocks = blocks_of(sc)
    data = [{"input_ids": b, "labels": b} for b in blocks[:64]]
    model = GPT2LMHeadModel.from_pretrained(init, attn_implementation="eager")
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, max_steps=12, per_device_train_batch_size=sc["batch"],
                                 learning_rate=sc["lr"], logging_steps=1 if callback else 2,
                                 report_to=[], save_strategy="no", use_cpu=True, seed=sc["seed"],
                                 lr_scheduler_type="cosine", warmup_steps=sc["warmup"],
                                 max_grad_norm=sc["clip"], weight_decay=sc["weight_decay"])
        cbs = []
        if callback:
            from harness_callback import HarnessCallback
            cbs = [HarnessCallback(tokens_per_step=sc["batch"] * sc["seq_len"])]
        Trainer(model=model, args=args, train_dataset=data, callbacks=cbs).train()


def seed_run(sc, init):
    """the seed demo's loop and print, bugs left out: a running mean printed every 10 steps"""
    blocks = blocks_of(sc)
    model = GPT2LMHeadModel.from_pretrained(init, attn_implementation="eager")
    opt = torch.optim.AdamW(model.parameters(), lr=sc["lr"], weight_decay=0.1)
    B, T, epochs, per_epoch = sc["batch"], sc["seq_len"], 2, 25
    for epoch in range(epochs):
        total = 0.0
        for i in range(per_epoch):
            t0 = time.perf_counter()
            x = blocks[[(i * B + k) % len(blocks) for k in range(B)]]
            loss = model(input_ids=x, labels=x).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
            total += loss.item()
            dt = time.perf_counter() - t0
            if i % 10 == 0 or i == 1:
                print(f"epoch[{epoch}/{epochs}], step[{i}/{per_epoch}]: train_loss: "
                      f"{total / (i + 1)}, train_tokens_throughput: {B * T / dt} tokens/s",
                      flush=True)


def mllog_run(sc, init):
    from mlperf_logging import mllog
    mllog.config(default_stack_offset=1)  # mllog's own handler prints to stdout
    logger = mllog.get_mllogger()
    blocks = blocks_of(sc)
    B = sc["batch"]
    logger.event(key=mllog.constants.SUBMISSION_BENCHMARK, value="gpt2-tiny")
    logger.event(key=mllog.constants.SUBMISSION_ORG, value="harness fixtures")
    logger.event(key=mllog.constants.GLOBAL_BATCH_SIZE, value=B)
    logger.start(key=mllog.constants.RUN_START)
    model = GPT2LMHeadModel.from_pretrained(init, attn_implementation="eager")
    opt = torch.optim.AdamW(model.parameters(), lr=sc["lr"])
    for step in range(8):
        x = blocks[[(step * B + k) % len(blocks) for k in range(B)]]
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        logger.event(key="train_loss", value=loss.item(),
                     metadata={"samples_count": (step + 1) * B})
    logger.end(key=mllog.constants.RUN_STOP, metadata={"status": "success"})


def main():
    kind, init, scenario = sys.argv[1:4]
    torch.set_num_threads(1)
    torch.manual_seed(0)
    sc = w.load_scenario(scenario)
    if kind in ("trainer", "trainer-callback"):
        trainer_run(sc, init, kind == "trainer-callback")
    elif kind == "seed":
        seed_run(sc, init)
    elif kind == "mllog":
        mllog_run(sc, init)
    else:
        sys.exit("make_log_fixtures.py: unknown kind " + kind)


if __name__ == "__main__":
    main()
