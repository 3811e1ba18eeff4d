#!/usr/bin/env python3
# tools/reference/grad_noise.py: measures the fp32 noise of step-0 gradients: transformers fp32,
# the harness's cpu and cpu64 against float64, as docs/checkpoints.md ("Parity") reports.
"""Usage:
  HARNESS_PARITY_DUMP=/tmp/dump ./build/test_parity      # the harness's gradients (F64)
  /opt/refvenv/bin/python tools/reference/grad_noise.py /tmp/dump [FIXTURE ...]

For each fixture (default parity-a parity-b) it reads grads0.safetensors (transformers fp32)
and grads0_fp64.safetensors (float64) from tests/fixtures/NAME, and DUMP/NAME.cpu.safetensors
and DUMP/NAME.cpu64.safetensors, and prints worst cosines, max relative errors above 1e-6 and
above raised floors, and the ratio of the harness's fp32 error to transformers' own.
"""
import os
import sys

import numpy as np
from safetensors.numpy import load_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(path):
    return {k: v.astype(np.float64) for k, v in load_file(path).items()}


def rel_err(got, ref, floor):
    mask = np.abs(ref) > floor
    return (np.abs(got - ref)[mask] / np.abs(ref)[mask]).max() if mask.any() else 0.0


def cosine(a, b):
    d = np.sqrt((a * a).sum() * (b * b).sum())
    return (a * b).sum() / d if d > 0 else 1.0


def report(name, dump):
    fx = os.path.join(ROOT, "tests", "fixtures", name)
    g = {"t32": load(os.path.join(fx, "grads0.safetensors")),
         "c32": load(os.path.join(dump, name + ".cpu.safetensors")),
         "c64": load(os.path.join(dump, name + ".cpu64.safetensors"))}
    ref = load(os.path.join(fx, "grads0_fp64.safetensors"))
    print(name)
    for tag in ("t32", "c32", "c64"):
        cos = min((cosine(g[tag][k], r), k) for k, r in ref.items())
        rel = max((rel_err(g[tag][k], r, 1e-6), k) for k, r in ref.items())
        n_bad = sum(int(((np.abs(g[tag][k] - r) / np.maximum(np.abs(r), 1e-300)) > 1e-3)
                        [np.abs(r) > 1e-6].sum()) for k, r in ref.items())
        n_all = sum(int((np.abs(r) > 1e-6).sum()) for r in ref.values())
        print("  %s vs float64: worst cosine %.12f (%s), max rel err above 1e-6 %.3e (%s), "
              "%d of %d elements above 1e-3" % (tag, cos[0], cos[1], rel[0], rel[1], n_bad, n_all))
    for r_ in (0, 1e-4, 1e-3):
        worst = max(rel_err(g["c32"][k], t, max(1e-6, r_ * np.abs(t).max()))
                    for k, t in g["t32"].items())
        print("  cpu vs transformers fp32, floor max(1e-6, %g x max): max rel err %.3e" % (r_, worst))
    ratios = sorted(np.abs(g["c32"][k] - r).max() / max(np.abs(g["t32"][k] - r).max(), 1e-300)
                    for k, r in ref.items())
    print("  cpu error / transformers fp32 error against float64: worst %.2f, median %.2f"
          % (ratios[-1], ratios[len(ratios) // 2]))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for name in sys.argv[2:] or ["parity-a", "parity-b"]:
        report(name, sys.argv[1])


if __name__ == "__main__":
    main()
