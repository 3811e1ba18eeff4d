#!/usr/bin/env python3
# workloads/hf_causal_lm.py: the seed DDP causal-LM demo done right and deterministic: trains a
# harness scenario with PyTorch + transformers on cuda/musa/npu/xpu/cpu, one HARNESS_STEP per step.
"""Usage (one process, or under torchrun for several):
  python workloads/hf_causal_lm.py --scenario scenarios/gpt2-tiny.json [--init DIR]
      [--device auto|cuda|musa|npu|xpu|cpu] [--steps N] [--threads N]
  harness exec --scenario S --device LABEL -- python workloads/hf_causal_lm.py --scenario S ...

What it does, as harness/train/train.c does it (docs/workloads.md):
  - model: --init DIR (the weights `harness init SCENARIO DIR` writes: identical bits), else the
    scenario's local model directory ("path", pretrained weights) or its config (inline or
    config_path) built with transformers' own initialisation (not the harness's); then the
    scenario's overrides with the rules of the seed's override_config.json (unknown key or a
    key whose value is None: warning, skipped; torch_dtype as a string: mapped; another type:
    TypeError). Dropout should be 0 in the overrides to compare devices.
  - data: the scenario's file tokenized (byte, or bpe via the tokenizers library), cut into
    blocks of seq_len (remainder dropped), labels = input ids; blocks dealt to ranks by
    DistributedSampler(shuffle=False, drop_last=False: an epoch padded to a multiple of the
    ranks by repeating its first blocks, as the harness pads it), epoch after epoch; with one rank row i
    of loader step s is block (s*B + i) mod n_blocks, as in the harness.
  - train.gradient_accumulation_steps A: each optimizer step is A micro-batches of batch_size
    rows (loader steps (step-1)*A to step*A-1, in order), each one's loss divided by A before
    backward (gradients summed over A; DDP reduces them with the last), the step's loss the
    mean of the A losses and its tokens B*A*seq_len*ranks (docs/scenario.md).
  - AdamW (decay on every parameter with train.decay_all, else not on biases and norms),
    transformers' get_scheduler, gradients clipped after backward (clip_grad_norm_), then
    optimizer.step(), scheduler.step(), zero_grad(); deterministic algorithms, seed fixed.
  - the scenario's dtype: "bf16" or "fp16" trains under torch.autocast(device, that dtype) with
    fp32 master weights and fp32 AdamW states, attention through SDPA (the fused kernel the
    harness's rule models, docs/precision.md); fp16 adds torch.amp.GradScaler (init 2^16,
    growth 2 every 2000 clean steps, backoff 0.5): gradients unscaled before clipping, a step
    with Inf/NaN gradients skipped and then, as Trainer does, the scheduler not stepped.
  - several ranks: torchrun's RANK/WORLD_SIZE/LOCAL_RANK; process group nccl (cuda), mccl
    (musa), hccl (npu), xccl (xpu) or gloo (cpu); DDP; the printed loss is the mean over ranks.
Prints HARNESS_META once per rank, then per step and rank one HARNESS_STEP line with the
step's loss (not a running mean), grad norm (before clipping), lr, tokens (all ranks), step time
(after a device synchronise), tokens/s and the device's peak and total memory.
"""
import argparse
import json
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

DEVICE_PLUGINS = {"musa": "torch_musa", "npu": "torch_npu"}
PG_BACKENDS = {"cuda": "nccl", "musa": "mccl", "npu": "hccl", "xpu": "xccl", "cpu": "gloo"}


def refuse_unsupported(path, s):
    """What this script does not train as the harness does is refused by name (exit 2), never
    trained another way: only causal LM training on a text file (data.format "text")."""
    d, m = s.get("data", {}), s.get("model", {})
    why = None
    if d.get("format", "text") != "text":
        why = "data.format %r (this script reads a text file only)" % d.get("format")
    elif d.get("objective", "clm") != "clm" or m.get("family", "gpt2") == "bert":
        why = "a masked-LM scenario (this script trains causal LMs)"
    if why:
        sys.stderr.write("hf_causal_lm: %s: %s: train it with `harness run`\n" % (path, why))
        sys.exit(2)


def repo_snapshot(spec):
    """model.repo ("ORG/NAME[@REV]") as the harness reads it: the snapshot in the hub cache."""
    repo, _, rev = spec.partition("@")
    try:
        from huggingface_hub import snapshot_download
        return snapshot_download(repo, revision=rev or None, local_files_only=True)
    except Exception as e:  # not installed, or not in the cache
        sys.stderr.write("hf_causal_lm: model.repo %s: not in the hub cache (%s)\n" % (spec, e))
        sys.exit(2)


def load_scenario(path):
    with open(path) as f:
        s = json.load(f)
    refuse_unsupported(path, s)
    base = os.path.dirname(os.path.abspath(path))
    t, d, m = s["train"], s["data"], s["model"]
    model_dir = os.path.join(base, m["path"]) if "path" in m else None
    if "repo" in m:
        model_dir = repo_snapshot(m["repo"])
    overrides = dict(m.get("overrides", {}))
    overrides_path = os.path.join(base, m["overrides_path"]) if "overrides_path" in m else None
    if model_dir and "overrides" not in m and not overrides_path:  # as the harness: the
        overrides_path = os.path.join(model_dir, "override_config.json")  # folder's own file
        if not os.path.isfile(overrides_path):
            overrides_path = None
    if overrides_path:
        with open(overrides_path) as f:
            overrides.update(json.load(f))
    config = m.get("config")
    if "config_path" in m:
        config_path = os.path.join(base, m["config_path"])
        if os.path.isdir(config_path):  # a folder holding config.json (docs/scenario.md)
            config_path = os.path.join(config_path, "config.json")
        with open(config_path) as f:
            config = json.load(f)
    return {
        "name": s["name"], "family": m.get("family", "gpt2"), "model_dir": model_dir,
        "config": config, "overrides": overrides,
        "weights": m.get("weights", "pretrained" if model_dir else "seeded"),
        "data": os.path.join(base, d["path"]), "tokenizer": d.get("tokenizer", "byte"),
        "tokenizer_path": os.path.join(base, d["tokenizer_path"]) if "tokenizer_path" in d
        else model_dir,
        "seq_len": d["seq_len"], "steps": t["steps"], "batch": t["batch_size"],
        "lr": float(t["lr"]), "warmup": t.get("warmup_steps", 0),
        "schedule": t.get("schedule", "constant"),
        "weight_decay": float(t.get("weight_decay", 0.0)), "decay_all": t.get("decay_all", True),
        "betas": tuple(float(b) for b in t.get("betas", [0.9, 0.999])),
        "eps": float(t.get("eps", 1e-8)), "clip": float(t.get("clip", 1.0)),
        "seed": int(t.get("seed", 0)), "dtype": s.get("dtype", "fp32"),
        "accum": int(t.get("gradient_accumulation_steps", 1)),
    }


def apply_overrides(config, overrides, torch):
    """The seed's override_config.json rules."""
    for key, value in overrides.items():
        if not hasattr(config, key):
            warnings.warn("override %s: not a key of the config, skipped" % key)
            continue
        current = getattr(config, key)
        if current is None:
            warnings.warn("override %s: the config's value is None, skipped" % key)
            continue
        if key in ("torch_dtype", "dtype") and isinstance(value, str):
            value = getattr(torch, value[len("torch."):] if value.startswith("torch.") else value)
        elif type(value) is not type(current) and not (
                isinstance(current, float) and isinstance(value, int)):
            raise TypeError("override %s: %s given, the config has %s" %
                            (key, type(value).__name__, type(current).__name__))
        setattr(config, key, value)


def tokenize(sc):
    if sc["tokenizer"] == "byte":
        with open(sc["data"], "rb") as f:
            return list(f.read())
    from tokenizers import ByteLevelBPETokenizer, Tokenizer
    p = sc["tokenizer_path"]
    if os.path.isdir(p):
        tj = os.path.join(p, "tokenizer.json")
        p = tj if os.path.exists(tj) else os.path.join(p, "vocab.json")
    if p.endswith("vocab.json"):
        tok = ByteLevelBPETokenizer(p, os.path.join(os.path.dirname(p), "merges.txt"))
    else:
        tok = Tokenizer.from_file(p)
    with open(sc["data"], "r", encoding="utf-8", newline="") as f:
        return tok.encode(f.read()).ids


def pick_device(torch, want, local_rank):
    """(torch.device, type name); imports torch_musa / torch_npu when asked for"""
    if want in DEVICE_PLUGINS:
        __import__(DEVICE_PLUGINS[want])
    if want == "auto":
        for name in ("cuda", "musa", "npu", "xpu"):
            mod = getattr(torch, name, None)
            if mod is not None and mod.is_available():
                want = name
                break
        else:
            want = "cpu"
    if want == "cpu":
        return torch.device("cpu"), "cpu"
    mod = getattr(torch, want, None)
    if mod is None or not mod.is_available():
        sys.exit("hf_causal_lm: device %s is not available to torch %s" % (want, torch.__version__))
    mod.set_device(local_rank)
    return torch.device(want, local_rank), want


def build_model(sc, init_dir, torch, attn="eager"):
    from transformers import AutoConfig, AutoModelForCausalLM
    src = init_dir or (sc["model_dir"] if sc["weights"] == "pretrained" else None)
    if src:
        config = AutoConfig.from_pretrained(src)
    elif sc["model_dir"]:
        config = AutoConfig.from_pretrained(sc["model_dir"])
    else:  # the family's config class: llama by model_type (qwen2, mistral, mixtral), as the harness
        cfg = dict(sc["config"] or {})
        model_type = cfg.pop("model_type", None) or ("llama" if sc["family"] == "llama" else "gpt2")
        config = AutoConfig.for_model(model_type, **cfg)
    apply_overrides(config, sc["overrides"], torch)
    config._attn_implementation = attn
    if src:
        return AutoModelForCausalLM.from_pretrained(src, config=config, dtype=torch.float32)
    warnings.warn("no --init: weights from transformers' initialisation, not the harness's; "
                  "losses will not match a harness run")
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32)


def param_groups(model, sc):
    named = list(model.named_parameters())
    if sc["decay_all"]:
        return [{"params": [p for _, p in named], "weight_decay": sc["weight_decay"]}]

    def no_decay(n):
        return n.endswith(".bias") or ".ln_" in n or "norm" in n or n.startswith("transformer.ln_f")
    return [{"params": [p for n, p in named if not no_decay(n)], "weight_decay": sc["weight_decay"]},
            {"params": [p for n, p in named if no_decay(n)], "weight_decay": 0.0}]


def block_stream(n_blocks, world, rank, torch):
    """block ids for this rank, epoch after epoch (DistributedSampler without shuffle)"""
    from torch.utils.data.distributed import DistributedSampler
    epoch = 0
    while True:
        sampler = DistributedSampler(range(n_blocks), num_replicas=world, rank=rank,
                                     shuffle=False, drop_last=False)
        sampler.set_epoch(epoch)
        yield from iter(sampler)
        epoch += 1


def accumulate(torch, ddp, batches, A, dev_type, lowp, scaler, several):
    """forward and backward of the step's A micro-batches (as harness/train/train.c
    micro_batches does them): each one's loss divided by A before backward, so the gradients are
    their sum over A; under DDP reduced once, with the last. Returns the step's loss, the mean
    of the micro-batches' (detached)."""
    import contextlib
    total = None
    for a, x in enumerate(batches):
        defer = several and a < A - 1  # DDP's all-reduce waits for the last micro-batch
        with ddp.no_sync() if defer else contextlib.nullcontext():
            with torch.autocast(dev_type, dtype=lowp or torch.float32, enabled=lowp is not None):
                loss = ddp(input_ids=x, labels=x).loss / A
            (scaler.scale(loss) if scaler else loss).backward()
        total = loss.detach() if total is None else total + loss.detach()
    return total


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--init", help="the weights `harness init SCENARIO DIR` wrote")
    ap.add_argument("--device", default="auto", choices=["auto", "cuda", "musa", "npu", "xpu", "cpu"])
    ap.add_argument("--steps", type=int, help="instead of the scenario's train.steps")
    ap.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    return ap.parse_args()


def setup(args, torch):
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    device, dtype_name = pick_device(torch, args.device, local_rank)
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group(PG_BACKENDS[dtype_name], rank=rank, world_size=world)
    return world, rank, device, dtype_name


def main():
    args = parse_args()
    import torch
    import harness_callback as hc
    from transformers import get_scheduler
    sc = load_scenario(args.scenario)
    steps = args.steps or sc["steps"]
    world, rank, device, dev_type = setup(args, torch)
    torch.manual_seed(sc["seed"])
    meta = hc.describe_device(torch, device)  # the device chosen, not the first accelerator
    meta.update({"world_size": world, "rank": rank, "scenario": sc["name"],
                 "workload": "workloads/hf_causal_lm.py", "deterministic": True,
                 "torch_threads": torch.get_num_threads()})
    if world > 1:
        meta["process_group"] = PG_BACKENDS[dev_type]
    hc.emit("HARNESS_META", meta)

    ids = tokenize(sc)
    T, B, A = sc["seq_len"], sc["batch"], sc["accum"]
    if len(ids) // T < world:  # the sampler would deal no block to a rank: loop forever
        sys.exit("hf_causal_lm: %s: %d tokens do not fill one block of seq_len %d per rank "
                 "(%d ranks)" % (sc["data"], len(ids), T, world))
    blocks = torch.tensor(ids[:len(ids) // T * T], dtype=torch.long).view(-1, T)
    lowp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(sc["dtype"])
    model = build_model(sc, args.init, torch, "sdpa" if lowp else "eager").to(device)
    hc.emit("HARNESS_META", {"v": 1, "model_class": type(model).__name__})
    model.train()
    ddp = model
    if world > 1:
        ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(param_groups(model, sc), lr=sc["lr"], betas=sc["betas"],
                            eps=sc["eps"], foreach=False)
    name = sc["schedule"]
    if name == "constant" and sc["warmup"] > 0:
        name = "constant_with_warmup"
    sched = get_scheduler(name, opt, num_warmup_steps=sc["warmup"], num_training_steps=steps)
    stream = block_stream(blocks.shape[0], world, rank, torch)
    dev_mod = getattr(torch, dev_type, None) if dev_type != "cpu" else None
    params = list(model.parameters())
    scaler = torch.amp.GradScaler(dev_type) if lowp == torch.float16 else None
    for step in range(1, steps + 1):
        if dev_mod:
            dev_mod.synchronize()
        t0 = time.perf_counter()
        lr = opt.param_groups[0]["lr"]
        scale = scaler.get_scale() if scaler else None
        micro = (blocks[[next(stream) for _ in range(B)]].to(device) for _ in range(A))
        loss = accumulate(torch, ddp, micro, A, dev_type, lowp, scaler, world > 1)
        if scaler:
            scaler.unscale_(opt)
        norm = torch.nn.utils.clip_grad_norm_(params, sc["clip"] if sc["clip"] > 0 else float("inf"))
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        skipped = scaler is not None and scaler.get_scale() < scale
        if not skipped:
            sched.step()
        opt.zero_grad(set_to_none=True)
        mean_loss = loss.detach()
        if world > 1:
            torch.distributed.all_reduce(mean_loss)
            mean_loss /= world
        loss_v, norm_v = mean_loss.item(), norm.item()
        if dev_mod:
            dev_mod.synchronize()
        ms = (time.perf_counter() - t0) * 1000.0
        peak, total = hc.memory(torch, device)
        tokens = B * A * T * world
        record = {"v": 1, "step": step, "loss": loss_v, "grad_norm": norm_v,
                  "lr": lr, "tokens": tokens, "step_ms": ms,
                  "tokens_per_s": tokens / (ms / 1000.0) if ms > 0 else 0.0,
                  "mem_peak_bytes": peak, "mem_total_bytes": total, "rank": rank}
        if scaler:
            record.update({"loss_scale": scale, "skipped": skipped})
        hc.emit("HARNESS_STEP", record)
    if world > 1:
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
