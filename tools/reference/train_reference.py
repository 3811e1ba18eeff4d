#!/usr/bin/env python3
# tools/reference/train_reference.py: trains a scenario with PyTorch + transformers on the CPU in
# fp32, from the harness's own initial weights, and writes a parity fixture and/or a baseline.
"""Usage:
  python tools/reference/train_reference.py SCENARIO --harness build/harness \\
      [--fixture DIR] [--baseline FILE] [--steps N]

What it does, step for step as harness/train/train.c and harness/formats/data.c do it:
  1. `harness init SCENARIO TMP` writes the scenario's initial weights and config as a Hugging
     Face model directory; GPT2LMHeadModel.from_pretrained(TMP) loads them (eager attention,
     fp32, dropout as the config says: the scenarios set it to 0);
  2. the data file is read as one text and tokenized: bytes for "byte", the tokenizers
     library's Tokenizer.encode(text).ids for "bpe" (tokenizer.json, or vocab.json +
     merges.txt through ByteLevelBPETokenizer); the ids are cut into blocks of seq_len
     (remainder dropped); row i of step s (from 0) is block (s*B + i) mod n_blocks;
  3. labels = input ids (GPT2LMHeadModel shifts them: B*(T-1) predictions, mean loss);
  4. AdamW (torch.optim.AdamW; one group with weight decay on every parameter when
     train.decay_all, else no decay on biases and LayerNorm weights), transformers'
     get_scheduler (name from train.schedule; "constant" with warmup is
     "constant_with_warmup"), clip_grad_norm_(clip) when clip > 0, in the order backward,
     norm/clip, optimizer.step(), scheduler.step(), zero_grad().

--fixture DIR writes DIR/reference.json (versions, per-step loss, grad norm and lr, the sha256
of the token ids and of the initial weights), DIR/grads0.safetensors (every parameter's
gradient after the first backward, before clipping, under the harness's names) and
DIR/grads0_fp64.safetensors (the same computed in float64, the yardstick for fp32 noise).
--baseline FILE writes the run in the harness's baseline text format (docs/baselines.md).
Needs torch, transformers, tokenizers, safetensors, numpy; the harness's tests never run it.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import GPT2LMHeadModel, get_scheduler

BASELINE_FORMAT = "harness-baseline 1"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_scenario(path):
    with open(path) as f:
        s = json.load(f)
    base = os.path.dirname(os.path.abspath(path))
    t = s["train"]
    d = s["data"]
    model = s["model"]
    model_dir = os.path.join(base, model["path"]) if "path" in model else None
    tok = d.get("tokenizer", "byte")
    tok_path = os.path.join(base, d["tokenizer_path"]) if "tokenizer_path" in d else model_dir
    return {
        "name": s["name"],
        "data": os.path.join(base, d["path"]),
        "tokenizer": tok,
        "tokenizer_path": tok_path,
        "seq_len": d["seq_len"],
        "steps": t["steps"],
        "batch": t["batch_size"],
        "lr": float(t["lr"]),
        "warmup": t.get("warmup_steps", 0),
        "schedule": t.get("schedule", "constant"),
        "weight_decay": float(t.get("weight_decay", 0.0)),
        "decay_all": t.get("decay_all", True),
        "betas": tuple(float(b) for b in t.get("betas", [0.9, 0.999])),
        "eps": float(t.get("eps", 1e-8)),
        "clip": float(t.get("clip", 1.0)),
        "world_size": s.get("world_size", 1),
    }


def tokenize(sc):
    if sc["tokenizer"] == "byte":
        with open(sc["data"], "rb") as f:
            return list(f.read()), "byte"
    from tokenizers import ByteLevelBPETokenizer, Tokenizer
    p = sc["tokenizer_path"]
    if os.path.isdir(p):
        p = os.path.join(p, "tokenizer.json") if os.path.exists(
            os.path.join(p, "tokenizer.json")) else os.path.join(p, "vocab.json")
    if p.endswith("vocab.json"):
        tok = ByteLevelBPETokenizer(p, os.path.join(os.path.dirname(p), "merges.txt"))
    else:
        tok = Tokenizer.from_file(p)
    with open(sc["data"], "r", encoding="utf-8", newline="") as f:
        return tok.encode(f.read()).ids, "bpe:" + os.path.basename(p)


def batch(blocks, step, B):
    rows = [blocks[(step * B + i) % len(blocks)] for i in range(B)]
    return torch.tensor(np.stack(rows), dtype=torch.long)


def harness_version(harness):
    """('0.1.0', 'commit') from `harness --version` ("harness 0.1.0 (commit abc)")."""
    out = subprocess.run([harness, "--version"], capture_output=True, text=True).stdout.split()
    version = out[1] if len(out) > 1 else ""
    commit = out[-1].rstrip(")") if len(out) > 3 else ""
    return version, "" if commit == "unknown" else commit


def harness_init(harness, scenario, out):
    r = subprocess.run([harness, "init", scenario, out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("harness init failed:\n" + r.stderr)
    for line in r.stdout.splitlines():
        if line.startswith("scenario_hash: "):
            return line.split(": ", 1)[1].strip()
    sys.exit("harness init did not print the scenario hash")


def param_groups(model, sc):
    named = list(model.named_parameters())  # the tied lm_head appears once, as wte
    if sc["decay_all"]:
        return [{"params": [p for _, p in named], "weight_decay": sc["weight_decay"]}]

    def no_decay(n):
        return n.endswith(".bias") or ".ln_" in n or n.startswith("transformer.ln_f")
    return [{"params": [p for n, p in named if not no_decay(n)], "weight_decay": sc["weight_decay"]},
            {"params": [p for n, p in named if no_decay(n)], "weight_decay": 0.0}]


def harness_names(model):
    """(harness name, parameter) in the harness's parameter order (harness/models/gpt2.c)."""
    params = dict(model.named_parameters())
    out = [("wte.weight", params["transformer.wte.weight"]),
           ("wpe.weight", params["transformer.wpe.weight"])]
    suffixes = ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"]
    for layer in range(model.config.n_layer):
        for s in suffixes:
            name = "h.%d.%s" % (layer, s)
            out.append((name, params["transformer." + name]))
    out += [("ln_f.weight", params["transformer.ln_f.weight"]),
            ("ln_f.bias", params["transformer.ln_f.bias"])]
    return out


def sha256_f32(tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().numpy().astype("<f4").tobytes())
    return h.hexdigest()


def train(sc, model, blocks, steps, grads_out):
    opt = torch.optim.AdamW(param_groups(model, sc), lr=sc["lr"], betas=sc["betas"],
                            eps=sc["eps"], foreach=False)
    name = sc["schedule"]
    if name == "constant" and sc["warmup"] > 0:
        name = "constant_with_warmup"
    sched = get_scheduler(name, opt, num_warmup_steps=sc["warmup"], num_training_steps=steps)
    model.train()
    rows = []
    for step in range(steps):
        x = batch(blocks, step, sc["batch"])
        lr = opt.param_groups[0]["lr"]
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        if step == 0:
            grads_out.update({n: p.grad.detach().clone() for n, p in harness_names(model)})
        params = [p for p in model.parameters()]
        if sc["clip"] > 0:
            norm = torch.nn.utils.clip_grad_norm_(params, sc["clip"])
        else:
            norm = torch.linalg.vector_norm(torch.stack(
                [torch.linalg.vector_norm(p.grad) for p in params]))
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        rows.append({"step": step + 1, "loss": loss.item(), "grad_norm": norm.item(), "lr": lr})
        print("step %3d  loss %.7f  grad_norm %.5f  lr %.4e" % (step + 1, rows[-1]["loss"],
                                                                rows[-1]["grad_norm"], lr))
    return rows


def grads_fp64(init_dir, x):
    """Every parameter's step-0 gradient with the model in float64. transformers' loss casts
    the logits to float32 (ForCausalLMLoss), so the same mean cross-entropy over the shifted
    labels is computed here in float64 instead."""
    m = GPT2LMHeadModel.from_pretrained(init_dir, attn_implementation="eager",
                                        dtype=torch.float64)
    m.train()
    logits = m(input_ids=x).logits
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                             x[:, 1:].reshape(-1))
    loss.backward()
    return {n: p.grad.detach().clone() for n, p in harness_names(m)}


def versions():
    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "tokenizers": __import__("tokenizers").__version__,
            "safetensors": __import__("safetensors").__version__, "numpy": np.__version__,
            "python": platform.python_version(), "cpu": cpu_name(),
            "torch_threads": torch.get_num_threads()}


def write_fixture(out, sc, rows, grads, grads64, ids, weights_sha, scenario_hash, tok_name):
    os.makedirs(out, exist_ok=True)
    save_file({k: v.contiguous() for k, v in grads.items()},
              os.path.join(out, "grads0.safetensors"), metadata={"format": "pt"})
    save_file({k: v.contiguous() for k, v in grads64.items()},
              os.path.join(out, "grads0_fp64.safetensors"), metadata={"format": "pt"})
    ref = {
        "made_by": "tools/reference/train_reference.py",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "versions": versions(),
        "scenario": sc["name"],
        "scenario_hash": scenario_hash,
        "tokenizer": tok_name,
        "tokens": {"n": len(ids), "sha256": hashlib.sha256(
            np.asarray(ids, dtype="<i4").tobytes()).hexdigest()},
        "initial_weights_sha256": weights_sha,
        "grads": {"grads0.safetensors": "step-0 gradients of the fp32 run (before clipping)",
                  "grads0_fp64.safetensors": "the same in float64, loss in float64 too"},
        "steps": rows,
    }
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")


def write_baseline(path, sc, rows, scenario_hash, harness):
    v = versions()
    hv, commit = harness_version(harness)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    tokens = sc["batch"] * sc["seq_len"] * sc["world_size"]
    meta = [("format", BASELINE_FORMAT), ("label", "pytorch"), ("scenario", sc["name"]),
            ("scenario_hash", scenario_hash), ("device", "pytorch-cpu"),
            ("device_name", v["cpu"]), ("vendor", ""), ("driver_version", ""),
            ("runtime_version", "torch " + v["torch"]), ("dtype", "fp32"),
            ("world_size", str(sc["world_size"])), ("mem_total_bytes", "0"),
            ("host", platform.node()), ("date", now), ("finished_at", now),
            ("harness_version", hv), ("git_commit", commit), ("status", "ok"),
            ("source", "tools/reference/train_reference.py (transformers GPT2LMHeadModel, CPU)"),
            ("torch", v["torch"]), ("transformers", v["transformers"]),
            ("tokenizers", v["tokenizers"]), ("python", v["python"]),
            ("torch_threads", str(v["torch_threads"])), ("steps", str(len(rows)))]
    with open(path, "w") as f:
        f.write("# harness baseline: a finished reference run of one scenario on one device.\n"
                "# Format: docs/baselines.md. Made by tools/reference/train_reference.py: the\n"
                "# PyTorch/transformers run of the scenario on the CPU from the initial weights\n"
                "# of 'harness init' (harness_version, git_commit); step_ms, throughput and\n"
                "# memory are not measured ('-').\n")
        for k, val in meta:
            f.write("%s: %s\n" % (k, val))
        f.write("\n")
        f.write("step loss grad_norm lr tokens step_ms tokens_per_s mem_peak_bytes "
                "mem_used_bytes mem_total_bytes\n")
        for r in rows:
            f.write("%d %s %s %s %d - - - - -\n" % (r["step"], fmt17(r["loss"]),
                                                    fmt17(r["grad_norm"]), fmt17(r["lr"]), tokens))


def fmt17(x):
    return "%.17g" % x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("--harness", required=True, help="the harness executable (for init)")
    ap.add_argument("--fixture", help="write a parity fixture into this directory")
    ap.add_argument("--baseline", help="write a baseline file")
    ap.add_argument("--steps", type=int, help="instead of the scenario's train.steps")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)  # nothing random is drawn: dropout is 0, weights come from the harness
    sc = load_scenario(args.scenario)
    steps = args.steps or sc["steps"]
    ids, tok_name = tokenize(sc)
    T = sc["seq_len"]
    blocks = [ids[i * T:(i + 1) * T] for i in range(len(ids) // T)]
    with tempfile.TemporaryDirectory() as tmp:
        scenario_hash = harness_init(args.harness, args.scenario, tmp)
        model = GPT2LMHeadModel.from_pretrained(tmp, attn_implementation="eager",
                                                dtype=torch.float32)
        grads64 = grads_fp64(tmp, batch(blocks, 0, sc["batch"])) if args.fixture else None
    weights_sha = sha256_f32([p for _, p in harness_names(model)])
    grads = {}
    rows = train(sc, model, blocks, steps, grads)
    if args.fixture:
        write_fixture(args.fixture, sc, rows, grads, grads64, ids, weights_sha, scenario_hash,
                      tok_name)
    if args.baseline:
        write_baseline(args.baseline, sc, rows, scenario_hash, args.harness)
    return 0


if __name__ == "__main__":
    sys.exit(main())
