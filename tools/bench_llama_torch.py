#!/usr/bin/env python3
# tools/bench_llama_torch.py: transformers' LlamaForCausalLM (or MixtralForCausalLM) training
# throughput for the config bench/bench_llama.c takes (CPU, or --device cuda for tools/gpu-check.sh).
"""Usage: python tools/bench_llama_torch.py --threads N [--layers N] [--hidden N] [--heads N]
          [--kv-heads N] [--inter N] [--seq N] [--batch N] [--vocab N] [--steps N]
          [--experts N --topk K] [--attn eager|sdpa] [--device cpu|cuda]

Prints one line like bench_llama's: mean step time (forward, backward, clip_grad_norm_ 1.0,
AdamW), tokens/s and GFLOP/s counted as bench_llama counts them (6 x the matrix parameters a
token runs through, the top-k experts only, + 12 x layers x seq x heads x head_dim), after two
warm-up steps, random tokens, torch.set_num_threads(N); on cuda fp32 with TF32 off, timed
between synchronizations.
"""
import argparse
import sys
import time

import torch
import transformers


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for k, v in dict(threads=1, layers=2, hidden=64, heads=4, kv_heads=2, inter=128, seq=64,
                     batch=8, vocab=256, steps=10, experts=0, topk=0).items():
        ap.add_argument("--" + k.replace("_", "-"), type=int, default=v)
    ap.add_argument("--attn", default="sdpa", choices=["eager", "sdpa"])
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(1)
    kw = dict(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=a.inter,
              num_hidden_layers=a.layers, num_attention_heads=a.heads,
              num_key_value_heads=a.kv_heads, max_position_embeddings=a.seq,
              bos_token_id=None, eos_token_id=None, attn_implementation=a.attn)
    if a.experts:
        cfg = transformers.MixtralConfig(**kw, num_local_experts=a.experts,
                                         num_experts_per_tok=a.topk, output_router_logits=True)
        model = transformers.MixtralForCausalLM(cfg)
    else:
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**kw))
    model = model.to(a.device).float().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    gen = torch.Generator().manual_seed(1)

    def step():
        ids = torch.randint(0, a.vocab, (a.batch, a.seq), generator=gen).to(a.device)
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    sync = torch.cuda.synchronize if a.device.startswith("cuda") else (lambda: None)
    for _ in range(2):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    sync()
    ms = (time.perf_counter() - t0) * 1e3 / a.steps
    hd = a.hidden / a.heads
    mlp = 3.0 * a.hidden * a.inter
    layer = a.hidden * (a.heads * hd + 2 * a.kv_heads * hd) + a.heads * hd * a.hidden + \
        (a.experts * a.hidden + a.topk * mlp if a.experts else mlp)
    active = a.layers * layer + a.vocab * a.hidden
    tokens = a.batch * a.seq
    flops = tokens * (6.0 * active + 12.0 * a.layers * a.seq * a.heads * hd)
    print("  torch    step %9.2f ms  tokens/s %9.0f  GFLOP/s %8.2f  (mean of %d steps; "
          "transformers %s %s attention, torch %s, %s, %d threads)"
          % (ms, tokens / (ms / 1e3), flops / (ms / 1e3) / 1e9, a.steps,
             transformers.__version__, a.attn, torch.__version__, a.device, a.threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
