#!/usr/bin/env python3
"""NumPy (and PyTorch, when installed) doing the checkpointer benchmark's work.

The same model shapes as bench/bench_checkpointer.c, f32 gradients, k
micro-batches accumulated per tensor, mean, global-norm clipping that
triggers; no checksum (neither peer has one). Prints the time per
accumulate+flush and the rate of the same traffic bound gradckpt-bench uses
(4 * (3k + 3) bytes per parameter without a checksum), so the GB/s column
compares with flush/<model>/k<k>/none/1t from one gradckpt-bench run.

    python3 bench/peers_checkpointer.py [--models small2k,resnet50] [--k 1,4,16]

bench/peers.py imports MODELS from here and runs the same step (plus PyTorch's
foreach variants and the kernels) with google-benchmark JSON output.
"""
import argparse
import math
import time

import numpy as np

MASK = (1 << 64) - 1


def gpt2s():
    shapes = [50257 * 768, 1024 * 768]
    per_layer = [768, 768, 768 * 2304, 2304, 768 * 768, 768, 768, 768, 768 * 3072, 3072, 3072 * 768, 768]
    shapes += per_layer * 12
    return shapes + [768, 768]


def small(count):
    s, out = 12345, []
    for _ in range(count):
        s = (s * 6364136223846793005 + 1442695040888963407) & MASK
        u = (s >> 11) * 2.0 ** -53
        out.append(int(2.0 ** (u * 16.0)))
    return out


def resnet50():
    out = [64 * 3 * 7 * 7, 64, 64]
    cin = 64
    for st, blocks in enumerate([3, 4, 6, 3]):
        c = 64 << st
        for b in range(blocks):
            i = cin if b == 0 else 4 * c
            out += [i * c, c, c, c * c * 9, c, c, c * 4 * c, 4 * c, 4 * c]
            if b == 0:
                out.append(i * 4 * c)
        cin = 4 * c
    return out + [2048 * 1000, 1000]


MODELS = {"gpt2s": gpt2s, "small2k": lambda: small(2000), "small147": lambda: small(147), "resnet50": resnet50}


def numpy_step(grads, acc, k, clip):
    for j in range(k):
        for a, g in zip(acc, grads):
            if j == 0:
                np.copyto(a, g)
            else:
                a += g
    for a in acc:
        a /= np.float32(k)
    total = math.sqrt(sum(float(np.dot(a, a)) for a in acc))
    if total > clip:
        s = np.float32(clip / total)
        for a in acc:
            a *= s
    return total


def torch_step(torch, grads, params, k, clip):
    for j in range(k):
        for p, g in zip(params, grads):
            if j == 0:
                p.grad = g.clone()
            else:
                p.grad += g
    for p in params:
        p.grad /= k
    return float(torch.nn.utils.clip_grad_norm_(params, clip))


def timeit(fn, min_time=0.5):
    fn()  # warm up
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return dt / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="small147,small2k,resnet50")
    ap.add_argument("--k", default="1,4,16")
    ap.add_argument("--clip", type=float, default=0.1)
    args = ap.parse_args()
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    rng = np.random.default_rng(99)
    print("| peer | model | k | tensors | params | ms per step | GB/s of the traffic bound |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        shapes = MODELS[name]()
        params = sum(shapes)
        grads = [(rng.random(n, dtype=np.float32) - 0.5) * 0.01 for n in shapes]
        acc = [np.empty(n, dtype=np.float32) for n in shapes]
        for k in (int(x) for x in args.k.split(",")):
            bound = 4.0 * (3 * k + 3) * params
            t = timeit(lambda: numpy_step(grads, acc, k, args.clip))
            print(f"| numpy {np.__version__} | {name} | {k} | {len(shapes)} | {params} | {t * 1e3:.2f} | {bound / t / 1e9:.2f} |")
            if torch is not None:
                tg = [torch.from_numpy(g) for g in grads]
                tp = [torch.nn.Parameter(torch.zeros(n)) for n in shapes]
                t = timeit(lambda: torch_step(torch, tg, tp, k, args.clip))
                print(f"| torch {torch.__version__} | {name} | {k} | {len(shapes)} | {params} | {t * 1e3:.2f} | {bound / t / 1e9:.2f} |")
    if torch is None:
        print("\n(PyTorch not installed: `pip install torch` to add it; it is not needed by the tests.)")


if __name__ == "__main__":
    main()
