#!/usr/bin/env python3
# tools/reference/llama_reference.py: small LlamaForCausalLM, Qwen2ForCausalLM and
# MixtralForCausalLM models trained with PyTorch + transformers on the CPU, written as the llama
# family's parity fixtures (tests/test_llama_parity.c reads them).
"""Usage:
  python tools/reference/llama_reference.py OUT_DIR [--variant llama|qwen2|mixtral|all]
                                            [--steps 25] [--seed 1234]

With --variant all (the default) it writes OUT_DIR/llama-a, OUT_DIR/qwen2-a, OUT_DIR/mixtral-a:
  llama-a    LlamaForCausalLM: GQA (4 query, 2 key/value heads), RoPE, untied lm_head,
             pad_token_id 0 (nn.Embedding's padding_idx)
  qwen2-a    Qwen2ForCausalLM: q/k/v biases, tied head, GQA
  mixtral-a  MixtralForCausalLM: 4 experts, top-2, output_router_logits on (the aux loss with
             router_aux_loss_coef 0.02 is part of the loss), GQA

What each directory holds:
  config.json, model.safetensors  the initial weights (transformers' own _init_weights under
                                  torch.manual_seed), under the checkpoint names the harness
                                  uses (model.*, lm_head.weight; Mixtral's experts in the
                                  classic block_sparse_moe.experts.{e}.w1/w2/w3 layout)
  batches.json                    one batch per step: input_ids, attention_mask (right
                                  padding), labels (next token; -100 at the last real token
                                  and at padding), [B*T] each
  grads0.safetensors              every parameter's gradient after the first backward (float32)
  grads0_fp64.safetensors         the same with the model in float64
  reference.json                  versions, optimizer, step-0 losses (fp32, fp64), every
                                  step's loss and gradient norm, and for mixtral the experts
                                  each layer's router chose at step 0 ([B*T][top_k])

The loss is transformers' causal-LM loss written out: mean cross-entropy of the logits against
the (already shifted) labels, plus router_aux_loss_coef * aux_loss for mixtral (the model's own
load_balancing_loss_func with the attention mask). Training: eager attention and experts,
torch.optim.AdamW (no decay on biases and RMSNorm weights), clip_grad_norm_, a constant rate.
Needs torch, transformers, safetensors, numpy; the harness's tests never run it.
"""
import argparse
import copy
import datetime
import json
import os
import platform
import sys

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import (LlamaConfig, LlamaForCausalLM, MixtralConfig, MixtralForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM)

COMMON = dict(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
              rms_norm_eps=1e-6, initializer_range=0.02, attention_dropout=0.0,
              bos_token_id=None, eos_token_id=None)
VARIANTS = {
    "llama": (LlamaConfig, LlamaForCausalLM,
              dict(COMMON, tie_word_embeddings=False, pad_token_id=0,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    "qwen2": (Qwen2Config, Qwen2ForCausalLM,
              dict(COMMON, tie_word_embeddings=True, pad_token_id=None, use_sliding_window=False,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    "mixtral": (MixtralConfig, MixtralForCausalLM,
                dict(COMMON, intermediate_size=32, tie_word_embeddings=False, pad_token_id=None,
                     num_local_experts=4, num_experts_per_tok=2, output_router_logits=True,
                     router_aux_loss_coef=0.02, router_jitter_noise=0.0, sliding_window=None,
                     rope_parameters={"rope_type": "default", "rope_theta": 1e6})),
}
B, T = 4, 16
OPT = dict(lr=3e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, clip=1.0)


def make_batches(steps, seed, vocab):
    """Rows of random tokens, right-padded to T (one row full length); labels the next token."""
    rng = np.random.default_rng(seed)
    out = []
    for step in range(steps):
        cols = {"input_ids": [], "attention_mask": [], "labels": []}
        for row in range(B):
            length = T if row == 0 else int(rng.integers(T // 2, T + 1))
            ids = rng.integers(1, vocab, size=length).tolist()
            if step == 0 and row == 1:
                ids[3] = 0  # a pad id that is attended to: nn.Embedding's padding_idx rule
            labels = ids[1:] + [-100]
            pad = T - length
            cols["input_ids"] += ids + [0] * pad
            cols["attention_mask"] += [1] * length + [0] * pad
            cols["labels"] += labels + [-100] * pad
        out.append(cols)
    return out


def tensors(b):
    return {k: torch.tensor(v, dtype=torch.long).view(B, T) for k, v in b.items()}


def harness_names(named, variant):
    """name -> tensor under the harness's checkpoint names (Mixtral's experts split)."""
    out = {}
    for n, t in named:
        t = t.detach().clone().contiguous()
        if variant == "mixtral" and ".mlp.experts.gate_up_proj" in n:
            stem = n.replace(".mlp.experts.gate_up_proj", ".block_sparse_moe.experts")
            inter = t.shape[1] // 2
            for e in range(t.shape[0]):
                out["%s.%d.w1.weight" % (stem, e)] = t[e, :inter].contiguous()
                out["%s.%d.w3.weight" % (stem, e)] = t[e, inter:].contiguous()
            continue
        if variant == "mixtral" and ".mlp.experts.down_proj" in n:
            stem = n.replace(".mlp.experts.down_proj", ".block_sparse_moe.experts")
            for e in range(t.shape[0]):
                out["%s.%d.w2.weight" % (stem, e)] = t[e].contiguous()
            continue
        if variant == "mixtral":
            n = n.replace(".mlp.gate.weight", ".block_sparse_moe.gate.weight")
        out[n] = t
    return out


def aux_loss_fp64(router_logits, num_experts, top_k, mask):
    """transformers' load_balancing_loss_func (mask variant) kept in float64: the library sums
    in float32 whatever the model's dtype, which would cap the fp64 reference at fp32."""
    flat = mask.reshape(-1).to(torch.float64)
    tokens = torch.zeros(num_experts, dtype=torch.float64)
    probs = torch.zeros(num_experts, dtype=torch.float64)
    rows = 0.0
    for gate in router_logits:
        weights = torch.nn.functional.softmax(gate, dim=-1)
        _, selected = torch.topk(weights, top_k, dim=-1)
        tokens = tokens + torch.zeros(num_experts, dtype=torch.float64).scatter_add_(
            0, selected.reshape(-1), flat.repeat_interleave(top_k))
        probs = probs + (weights * flat.unsqueeze(-1)).sum(dim=0)
        rows = rows + flat.sum()
    return torch.sum((tokens / rows) * (probs / rows)) * num_experts


def router_forward_fp64(self, hidden_states):
    """MixtralTopKRouter.forward without its cast of the logits to float32 (fp64 pass only)."""
    hidden_states = hidden_states.reshape(-1, self.hidden_dim)
    router_logits = torch.nn.functional.linear(hidden_states, self.weight)
    router_probs = torch.nn.functional.softmax(router_logits, dim=-1)
    top_value, top_index = torch.topk(router_probs, self.top_k, dim=-1)
    top_value /= top_value.sum(dim=-1, keepdim=True)
    return router_logits, top_value, top_index


def rmsnorm_forward_fp64(self, hidden_states):
    """LlamaRMSNorm.forward without its cast to float32 (fp64 pass only)."""
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
    return self.weight * hidden_states


def all_fp64(model, variant):
    """The fp64 model computes in float64 throughout: transformers casts RMSNorm's input, the
    eager attention's softmax and Mixtral's router logits to float32 whatever the model's
    dtype, so those forwards are replaced by the same formulas without the cast (attention by
    transformers' sdpa path, which keeps the dtype). The rotary cos/sin tables stay float32,
    as transformers builds them, and as the harness's cpu64 takes them (devices/rope.h)."""
    model.config._attn_implementation = "sdpa"
    for mod in model.modules():
        if type(mod).__name__.endswith("RMSNorm"):
            mod.forward = rmsnorm_forward_fp64.__get__(mod)
    if variant == "mixtral":
        for layer in model.model.layers:
            layer.mlp.gate.forward = router_forward_fp64.__get__(layer.mlp.gate)


def loss_of(model, x, variant):
    out = model(input_ids=x["input_ids"], attention_mask=x["attention_mask"])
    logits = out.logits if out.logits.dtype == torch.float64 else out.logits.float()
    loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]),
                                             x["labels"].view(-1), ignore_index=-100)
    if variant == "mixtral" and logits.dtype == torch.float64:
        c = model.config
        aux = aux_loss_fp64(out.router_logits, c.num_local_experts, c.num_experts_per_tok,
                            x["attention_mask"])
        assert abs(aux.item() - out.aux_loss.item()) <= 1e-6 * abs(aux.item()), \
            "the fp64 aux loss %r is not the library's %r" % (aux.item(), out.aux_loss.item())
        loss = loss + c.router_aux_loss_coef * aux
    elif variant == "mixtral":
        loss = loss + model.config.router_aux_loss_coef * out.aux_loss
    return loss


def grads_of(model, variant):
    return harness_names(((n, p.grad) for n, p in model.named_parameters()), variant)


def param_groups(model):
    def no_decay(n):
        return n.endswith(".bias") or n.endswith("norm.weight")
    named = list(model.named_parameters())
    return [{"params": [p for n, p in named if not no_decay(n)],
             "weight_decay": OPT["weight_decay"]},
            {"params": [p for n, p in named if no_decay(n)], "weight_decay": 0.0}]


def routing_ids(model, x):
    """The experts each layer's router picks for the batch (a forward hook on the router)."""
    picked = []
    hooks = [layer.mlp.gate.register_forward_hook(
        lambda mod, inp, out: picked.append(out[2].tolist())) for layer in model.model.layers]
    with torch.no_grad():
        model(input_ids=x["input_ids"], attention_mask=x["attention_mask"])
    for h in hooks:
        h.remove()
    return picked


def train(model, batches, variant):
    opt = torch.optim.AdamW(param_groups(model), lr=OPT["lr"], betas=OPT["betas"],
                            eps=OPT["eps"], foreach=False)
    model.train()
    rows, grads0 = [], None
    for step, b in enumerate(batches):
        loss = loss_of(model, tensors(b), variant)
        loss.backward()
        if step == 0:
            grads0 = grads_of(model, variant)
        norm = torch.nn.utils.clip_grad_norm_(list(model.parameters()), OPT["clip"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        rows.append({"step": step + 1, "loss": loss.item(), "grad_norm": norm.item()})
        print("%s step %3d  loss %.7f  grad_norm %.5f" % (variant, step + 1, rows[-1]["loss"],
                                                          rows[-1]["grad_norm"]))
    return rows, grads0


def versions():
    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "safetensors": __import__("safetensors").__version__, "numpy": np.__version__,
            "python": platform.python_version(), "torch_threads": torch.get_num_threads()}


def harness_config(model, variant):
    """config.json as the harness reads it: the saved config's keys, plain values."""
    cfg = model.config.to_dict()
    keep = {k: v for k, v in cfg.items() if not k.startswith("_")}
    keep["model_type"] = variant
    return keep


def make(variant, out, steps, seed):
    cls_cfg, cls_model, kw = VARIANTS[variant]
    torch.manual_seed(seed)
    cfg = cls_cfg(**kw, attn_implementation="eager")
    if variant == "mixtral":
        cfg._experts_implementation = "eager"
    model = cls_model(cfg)
    os.makedirs(out, exist_ok=True)
    batches = make_batches(steps, seed, kw["vocab_size"])
    init = harness_names(model.named_parameters(), variant)
    save_file(init, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(harness_config(model, variant), f, indent=1, sort_keys=True)
        f.write("\n")
    m64 = cls_model(copy.deepcopy(cfg)).to(torch.float64)
    m64.load_state_dict(model.state_dict())
    m64.train()
    all_fp64(m64, variant)
    x0 = tensors(batches[0])
    loss64 = loss_of(m64, x0, variant)
    loss64.backward()
    grads64 = grads_of(m64, variant)
    routing = routing_ids(model, x0) if variant == "mixtral" else None
    assert model.config._attn_implementation == "eager", "the fp32 model must stay eager"
    rows, grads = train(model, batches, variant)
    save_file(grads, os.path.join(out, "grads0.safetensors"), metadata={"format": "pt"})
    save_file(grads64, os.path.join(out, "grads0_fp64.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out, "batches.json"), "w") as f:
        json.dump({"batch_size": B, "seq_len": T, "steps": batches}, f, separators=(",", ":"))
        f.write("\n")
    ref = {
        "made_by": "tools/reference/llama_reference.py --variant %s --steps %d --seed %d"
                   % (variant, steps, seed),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "versions": versions(),
        "optimizer": {"name": "AdamW", "lr": OPT["lr"], "betas": list(OPT["betas"]),
                      "eps": OPT["eps"], "weight_decay": OPT["weight_decay"],
                      "no_decay": "biases and RMSNorm weights", "clip": OPT["clip"],
                      "schedule": "constant"},
        "step0_loss_fp32": rows[0]["loss"],
        "step0_loss_fp64": loss64.item(),
        "steps": rows,
    }
    if routing is not None:
        ref["step0_routing"] = routing
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--variant", default="all", choices=["all"] + list(VARIANTS))
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    torch.set_num_threads(1)
    for v in (list(VARIANTS) if args.variant == "all" else [args.variant]):
        make(v, os.path.join(args.out, v + "-a") if args.variant == "all" else args.out,
             args.steps, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
