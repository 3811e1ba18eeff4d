# workloads/bench_gpt2_torch.py: PyTorch eager training throughput of a GPT-2 configuration, the
# same steps bench/bench_train.c times on a harness device, for tools/gpu-check.sh's comparison.
"""Trains GPT2LMHeadModel (transformers) in fp32 with PyTorch eager on random tokens: forward,
cross-entropy with the last position ignored, backward, clip_grad_norm_(1.0), AdamW(lr 1e-4,
betas (0.9, 0.999), eps 1e-8, weight decay 0.1) -- bench_train's step -- and prints tokens/s as
one line "torch_bench: ... tokens/s N". TF32 is off (PyTorch's float32 default for matmul).

usage: python workloads/bench_gpt2_torch.py [--device cuda] [--layers 12] [--embd 768]
       [--heads 12] [--seq 1024] [--batch 4] [--vocab 50257] [--steps 10]
       [--attn eager|sdpa]
"""
import argparse
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    for name, default in (("layers", 12), ("embd", 768), ("heads", 12), ("seq", 1024),
                          ("batch", 4), ("vocab", 50257), ("steps", 10)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--attn", default="eager", choices=("eager", "sdpa"),
                   help="transformers' attention implementation (eager: the materialized "
                        "softmax the harness computes)")
    return p.parse_args()


def main():
    a = parse_args()
    try:
        import torch
        import torch.nn.functional as F
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as e:
        print(f"torch_bench: cannot import torch/transformers: {e}", file=sys.stderr)
        return 2
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("torch_bench: no CUDA device visible to torch", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(1)
    cfg = GPT2Config(vocab_size=a.vocab, n_positions=a.seq, n_embd=a.embd, n_layer=a.layers,
                     n_head=a.heads, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     attn_implementation=a.attn)
    model = GPT2LMHeadModel(cfg).to(a.device).float().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.1)
    gen = torch.Generator(device="cpu").manual_seed(1)

    def step():
        ids = torch.randint(0, a.vocab, (a.batch, a.seq), generator=gen).to(a.device)
        targets = torch.cat([ids[:, 1:], torch.full((a.batch, 1), -100, device=a.device)], dim=1)
        logits = model(input_ids=ids).logits
        loss = F.cross_entropy(logits.view(-1, a.vocab), targets.reshape(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    cuda = a.device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for _ in range(2):  # warm-up: kernel selection, allocator
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    sync()
    ms = (time.perf_counter() - t0) * 1e3 / a.steps
    tokens = a.batch * a.seq
    params = sum(p.numel() for p in model.parameters())
    name = torch.cuda.get_device_name() if cuda else a.device
    peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else 0.0
    print(f"torch_bench: torch {torch.__version__} {name} attn {a.attn}, "
          f"GPT-2 n_layer {a.layers} n_embd {a.embd} seq {a.seq} batch {a.batch} vocab {a.vocab}, "
          f"{params} params; step {ms:.2f} ms; peak memory {peak:.0f} MiB; "
          f"tokens/s {tokens / (ms / 1e3):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
