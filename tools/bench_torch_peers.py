#!/usr/bin/env python3
# tools/bench_torch_peers.py: PyTorch training step times on the CPU for the configs
# bench/bench_vs_torch.sh times on the harness: an own GPT-2 module (eager, SDPA), its
# torch.compile, and transformers' GPT2LMHeadModel / LlamaForCausalLM / BertForMaskedLM.
"""Usage: python tools/bench_torch_peers.py --family gpt2|llama|bert --threads N --peer P
          [--layers N] [--embd N] [--heads N] [--kv-heads N] [--inter N] [--seq N]
          [--batch N] [--vocab N] [--steps N] [--warmup N] [--dropout P] [--profile]

peer: eager (own module, SDPA attention; gpt2 only), compile (torch.compile of the own module
for gpt2, of the transformers model otherwise), hf (the transformers model, sdpa attention).
One step: forward, cross-entropy (causal: last position ignored; bert: every 7th position
labelled), backward, clip_grad_norm_(1.0), AdamW(lr 1e-4, betas (0.9, 0.999), eps 1e-8,
weight decay 0.1) -- bench_train's step. Prints one line
"torch_peer: PEER FAMILY ... median_ms X mean_ms Y tokens/s Z" after --warmup steps, the
median of --steps timed steps. torch.set_num_threads(N); exits 3 when torch is not importable.
--profile: after the timed steps, --steps more under torch.profiler, then the ops' self CPU
time per step (top 25) and the split "matmul ms/step" (aten::mm, addmm, bmm, matmul's
kernels) against the rest (the harness's GEMM-against-rest split in docs/benchmarks.md).
"""
import argparse
import math
import statistics
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="gpt2", choices=("gpt2", "llama", "bert"))
    ap.add_argument("--peer", default="eager", choices=("eager", "compile", "hf"))
    for k, v in dict(threads=2, layers=4, embd=256, heads=4, kv_heads=0, inter=0, seq=128,
                     batch=8, vocab=256, steps=10, warmup=3).items():
        ap.add_argument("--" + k.replace("_", "-"), type=int, default=v)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--profile", action="store_true")
    return ap.parse_args()


def own_gpt2(torch, a):
    """GPT-2 as nanoGPT writes it: fused qkv, SDPA causal attention, tied head."""
    nn, F = torch.nn, torch.nn.functional
    C, H, p = a.embd, a.heads, a.dropout

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(C, eps=1e-5), nn.LayerNorm(C, eps=1e-5)
            self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
            self.drop = nn.Dropout(p)

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               dropout_p=p if self.training else 0.0)
            x = x + self.drop(self.c_proj(y.transpose(1, 2).reshape(B, T, C)))
            h = F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
            return x + self.drop(self.mlp_proj(h))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(a.vocab, C), nn.Embedding(a.seq, C)
            self.h = nn.ModuleList(Block() for _ in range(a.layers))
            self.ln_f, self.drop = nn.LayerNorm(C, eps=1e-5), nn.Dropout(p)

        def forward(self, ids, targets):
            pos = torch.arange(ids.shape[1])
            x = self.drop(self.wte(ids) + self.wpe(pos))
            for blk in self.h:
                x = blk(x)
            logits = self.ln_f(x) @ self.wte.weight.t()
            return F.cross_entropy(logits.view(-1, a.vocab), targets.reshape(-1),
                                   ignore_index=-100)

    return GPT()


def hf_model(torch, transformers, a):
    """the transformers model of the family with sdpa attention, returning the loss"""
    F = torch.nn.functional
    if a.family == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=a.vocab, n_positions=a.seq, n_embd=a.embd,
                                      n_layer=a.layers, n_head=a.heads, resid_pdrop=a.dropout,
                                      embd_pdrop=a.dropout, attn_pdrop=a.dropout,
                                      attn_implementation="sdpa")
        model = transformers.GPT2LMHeadModel(cfg)
    elif a.family == "llama":
        cfg = transformers.LlamaConfig(vocab_size=a.vocab, hidden_size=a.embd,
                                       intermediate_size=a.inter, num_hidden_layers=a.layers,
                                       num_attention_heads=a.heads,
                                       num_key_value_heads=a.kv_heads or a.heads,
                                       max_position_embeddings=a.seq, bos_token_id=None,
                                       eos_token_id=None, attn_implementation="sdpa")
        model = transformers.LlamaForCausalLM(cfg)
    else:
        cfg = transformers.BertConfig(vocab_size=a.vocab, hidden_size=a.embd,
                                      num_hidden_layers=a.layers, num_attention_heads=a.heads,
                                      intermediate_size=a.inter or 4 * a.embd,
                                      max_position_embeddings=a.seq,
                                      hidden_dropout_prob=a.dropout,
                                      attention_probs_dropout_prob=a.dropout,
                                      attn_implementation="sdpa")
        model = transformers.BertForMaskedLM(cfg)

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, ids, targets):
            logits = self.inner(input_ids=ids).logits
            return F.cross_entropy(logits.reshape(-1, a.vocab), targets.reshape(-1),
                                   ignore_index=-100)

    return Wrapped()


def make_batch(torch, a, gen):
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), generator=gen)
    if a.family == "bert":
        targets = torch.full_like(ids, -100)
        targets[:, ::7] = ids[:, ::7]
    else:
        targets = torch.cat([ids[:, 1:], torch.full((a.batch, 1), -100)], dim=1)
    return ids, targets


GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


def profile_steps(torch, step, n):
    """n steps under torch.profiler: the top ops by self CPU time and the matmul split, per step"""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        wall_ms = (time.perf_counter() - t0) * 1e3 / n
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total_us = sum(e.self_cpu_time_total for e in events)
    print(f"torch_profile: {n} steps, wall {wall_ms:.2f} ms/step (profiled), "
          f"self CPU {total_us / 1e3 / n:.2f} ms/step")
    for e in events[:25]:
        print(f"torch_profile: {e.key:<48} {e.self_cpu_time_total / 1e3 / n:9.2f} ms/step "
              f"{100 * e.self_cpu_time_total / total_us:6.2f} % calls/step {e.count / n:.0f}")
    mm_us = sum(e.self_cpu_time_total for e in events if e.key in GEMM_OPS)
    print(f"torch_profile: matmul (self time of {', '.join(GEMM_OPS)}) {mm_us / 1e3 / n:.2f} "
          f"ms/step, the rest {(total_us - mm_us) / 1e3 / n:.2f} ms/step")


def main():
    a = parse_args()
    if a.peer == "eager" and a.family != "gpt2":
        print("torch_peer: the own eager module is written for gpt2 only", file=sys.stderr)
        return 2
    if min(a.threads, a.layers, a.embd, a.heads, a.seq, a.batch, a.vocab, a.steps) < 1 or \
            a.warmup < 0 or not 0 <= a.dropout < 1:
        print("torch_peer: sizes, threads and steps must be >= 1, warmup >= 0, dropout in [0, 1)",
              file=sys.stderr)
        return 2
    try:
        import torch
        import transformers
    except ImportError as e:
        print(f"torch_peer: cannot import torch/transformers: {e}", file=sys.stderr)
        return 3
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    if a.family == "gpt2" and a.peer != "hf":
        model = own_gpt2(torch, a)
    else:
        model = hf_model(torch, transformers, a)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.1)
    run = torch.compile(model) if a.peer == "compile" else model
    gen = torch.Generator().manual_seed(1)

    def step():
        ids, targets = make_batch(torch, a, gen)
        loss = run(ids, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        loss = step()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - t0) * 1e3)
    if a.profile:
        profile_steps(torch, step, a.steps)
    if not math.isfinite(loss):
        print(f"torch_peer: loss {loss} is not finite", file=sys.stderr)
        return 1
    med, mean = statistics.median(times), statistics.fmean(times)
    params = sum(p.numel() for p in model.parameters())
    print(f"torch_peer: {a.peer} {a.family} torch {torch.__version__} threads {a.threads} "
          f"params {params} median_ms {med:.2f} mean_ms {mean:.2f} "
          f"tokens/s {a.batch * a.seq / (med / 1e3):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
