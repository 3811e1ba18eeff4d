#!/usr/bin/env python3
# tools/make_topk_fixture.py: writes tests/data/topk_ties.txt, rows of tied and near-tied router
# logits with the ids torch.topk and transformers' MixtralTopKRouter choose for them.
"""Usage: PYTHON tools/make_topk_fixture.py [OUT]   (default tests/data/topk_ties.txt)

Every line is one row: E K, the E logits (float32, printed so that strtof reads them back
exactly), the K indices torch.topk(logits, K) gives on CPU, then the K indices that
transformers' MixtralTopKRouter gives (softmax of the float32 logits, then torch.topk of the
probabilities): the router runs with hidden size E and an identity weight, so its linear layer
hands the logits through unchanged. Rows hold issue 11's four examples, all-equal values, pairs, runs, few levels,
neighbouring floats (distinct logits whose probabilities may round equal) and plain random
values, for E in {2,4,8,16,64,160} and K in {1,2,4,6,8} (K <= E), plus K = 24 and 40 for
E >= 64 (std::sort's introsort beyond its 16-element insertion sort); K * 64 <= E takes ATen's
partial_sort path, the rest its nth_element path. PYTHON needs torch and transformers
(tools/pyenv.sh). Seeded: the same versions write the same file.
"""
import os
import sys

import torch
import transformers
from transformers.models.mixtral.configuration_mixtral import MixtralConfig
from transformers.models.mixtral.modeling_mixtral import MixtralTopKRouter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "topk_ties.txt")
SIZES = (2, 4, 8, 16, 64, 160)
KS = (1, 2, 4, 6, 8)
EXAMPLES = (([3.0, 3.0, 3.0, 3.0], 2), ([1.0, 2.0, 2.0, 0.0], 2),  # issue 11's examples
            ([2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0], 2), ([0.5, 1.0, 0.5, 1.0, 1.0, 0.0], 3))


def rows_for(E, gen):
    """the logit rows for E experts: tied and near-tied patterns, then random ones"""
    g = lambda *shape: torch.randn(*shape, generator=gen)
    rows = [torch.full((E,), 3.0), torch.zeros(E)]
    levels = torch.randint(0, 3, (E,), generator=gen).float()
    rows.append(levels)                                   # few levels, many ties
    rows.append(torch.arange(E).div(2, rounding_mode="floor").float())  # pairs, ascending
    rows.append(torch.arange(E).flip(0).div(2, rounding_mode="floor").float())
    runs = torch.zeros(E)
    for s in range(0, E, 5):                              # runs of 5 equal values
        runs[s:s + 5] = float(torch.randint(0, 4, (1,), generator=gen)) * 0.5
    rows.append(runs)
    alt = torch.tensor([2.0 if e % 2 == 0 else 1.0 for e in range(E)])
    rows.append(alt)                                      # alternating
    base = g(1).item()
    near = torch.full((E,), base, dtype=torch.float32)
    steps = torch.randint(-2, 3, (E,), generator=gen)
    for e in range(E):                                    # neighbouring floats
        v = near[e]
        for _ in range(abs(int(steps[e]))):
            v = torch.nextafter(v, torch.tensor(10.0 if steps[e] > 0 else -10.0))
        near[e] = v
    rows.append(near)
    rows.append((g(E) * 4).round() / 4)                   # quarter steps, some ties
    rows.append(g(E))                                     # no ties
    return [r.to(torch.float32) for r in rows]


def router_ids(logits, K):
    """the ids transformers' MixtralTopKRouter picks for one row of logits"""
    E = logits.numel()
    cfg = MixtralConfig(hidden_size=E, num_local_experts=E, num_experts_per_tok=K)
    router = MixtralTopKRouter(cfg)
    with torch.no_grad():
        router.weight.copy_(torch.eye(E))
        out_logits, _, ids = router(logits.reshape(1, E))
    assert torch.equal(out_logits.reshape(-1), logits), "the identity router changed the logits"
    return ids.reshape(-1).tolist()


def line(row, K):
    vals = " ".join(repr(float(v)) for v in row.tolist())
    top = torch.topk(row, K).indices.tolist()
    return f"{row.numel()} {K} {vals} {' '.join(map(str, top))} {' '.join(map(str, router_ids(row, K)))}"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else OUT
    gen = torch.Generator().manual_seed(11)
    lines = [f"# written by tools/make_topk_fixture.py (torch {torch.__version__}, "
             f"transformers {transformers.__version__}): E K logits[E] topk_ids[K] router_ids[K]"]
    for vals, K in EXAMPLES:
        lines.append(line(torch.tensor(vals, dtype=torch.float32), K))
    for E in SIZES:
        ks = [k for k in KS if k <= E] + ([24, 40] if E >= 64 else [])
        for row in rows_for(E, gen):
            for K in ks:
                lines.append(line(row, K))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{out}: {len(lines) - 1} rows")


if __name__ == "__main__":
    main()
