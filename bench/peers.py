#!/usr/bin/env python3
"""NumPy and PyTorch doing gradckpt-bench's work, written as google-benchmark JSON.

    python3 bench/peers.py --out peers.json [--quick] [--reps 5] [--threads 1,2]
    python3 bench/ratios.py res.json --peers peers.json     # time ratios
    python3 bench/plot.py res.json plots/ --peers peers.json  # bar charts

The same operations, element types and sizes as gradckpt-bench, each timed
with time.perf_counter after a warm-up, --reps times (one JSON entry per
repetition plus mean/median/stddev/cv aggregates, as google-benchmark writes
with --benchmark_repetitions). bytes_per_second counts the same traffic as
the C benchmark of the same name, so GB/s and times compare directly.

Kernels, f32 and f64, 64 Ki and 16 Mi elements (2 threads: 16 Mi only, as in
gradckpt-bench), named peer_<lib>/<op>_<dt>/<t>t/<n>:
    sumsq   np.dot(x, x)                      torch.dot(x, x)
    l2norm  np.linalg.norm(x)                 torch.linalg.vector_norm(x)
    dist2   np.subtract(a, b, out=d); np.dot(d, d)     same with torch.sub/dot
    add     a += b                            a.add_(b)
    axpy    a += w * b  (w = +-0.5)           a.add_(b, alpha=w)
    scale   a *= -1                           a.mul_(-1)
NumPy's dot is BLAS ?dot, which accumulates f32 in f32; gradckpt's
reductions accumulate in f64.

2-byte floats, the same sizes, named <who>/<op>_<dt>/<t>t/<n> like gradckpt-bench's
l2norm_bf16, add_bf16_to_f32 and scale_bf16 (bf16 with torch, f16 with torch
and NumPy, and gradckpt's Python calls on the very same arrays):
    l2norm           torch.linalg.vector_norm(x) (f32 accumulation, the result rounded to x's dtype)
                     np.linalg.norm(x16): NumPy's float16 dot, a float32 running sum in element
                     order, the sum of squares rounded to float16 (+inf once it passes 65504) before
                     the square root; gradckpt.l2norm(x): f64 sum of the exactly widened squares
    add_<dt>_to_f32  a32.add_(x) / np.add(a32, x16, out=a32) / gradckpt.add_(a32, x)
    scale            x.mul_(-1) / np.multiply(x16, -1, out=x16) / gradckpt.scale_(x, -1)
                     (NumPy's float16 multiply by a Python float rounds the factor to float16
                     first (NEP 50), torch and gradckpt round it to float32)
bytes_per_second counts 2 bytes per 16-bit element (4 per f32 one), as gradckpt-bench.

Checkpointer, the model shapes of bench/bench_checkpointer.c (taken from
bench/peers_checkpointer.py): k f32 micro-batch gradients accumulated per
tensor into preallocated buffers (no allocation in the loop), mean, global
L2-norm clipping that triggers (clip 0.1), no checksum; compare with
flush/<model>/k<k>/none/<t>t/<params>. Named peer_<lib>/<variant>/<model>/k<k>/<t>t/<params>:
    peer_numpy/flush                     copyto / +=, /= k, sqrt(sum np.dot(a, a)), *= coef
    peer_torch/clip_grad_norm            per tensor copy_/add_/div_, clip_grad_norm_(foreach=False)
    peer_torch/clip_grad_norm_foreach    per tensor copy_/add_ (as autograd accumulates),
                                         _foreach_div_, clip_grad_norm_(foreach=True)
    peer_torch/foreach_norm              _foreach_copy_/_foreach_add_/_foreach_div_,
                                         _foreach_norm + vector_norm, _foreach_mul_
The peers keep no history: gradckpt's flush also copies the buffer into a
checkpoint, which they do not.

gradckpt from Python (when the gradckpt package is installed: pip install ./python),
the same shapes, f32 gradients, clipping that triggers on every call:
    gradckpt_py/clip_grad_norm_/<model>/<t>t/<params>  gradckpt.torch.clip_grad_norm_ (one C call)
    peer_torch/clip_only/...                           torch.nn.utils.clip_grad_norm_(foreach=False)
    peer_torch/clip_only_foreach/...                   torch.nn.utils.clip_grad_norm_(foreach=True)
    gradckpt_c/clip_by_norm/...                        gck_tensors_clip_by_norm on the same buffers,
                                                       timed in C (gradckpt._gradckpt._bench_c)
    (bytes_per_second counts the clip's traffic: one read for the norm, one
    read and write to scale: 12 bytes per parameter). Each call clips to 0.99
    of the current norm, and every 256 calls the gradients are scaled back up
    (untimed share < 0.5 %), so every call scales and nothing underflows.
    gradckpt_py/accumulator/<model>/k<k>/<t>t/<params>  GradientAccumulator, mean, clip 0.1:
        k x (p.grad = g_j for every parameter; accumulate()), step(); compare with
        peer_torch/clip_grad_norm_foreach (copy_/add_ per tensor, _foreach_div_, clip)
    per call, 16 elements (f32): gradckpt_py/sumsq/16 (NumPy array), gradckpt_py/sumsq_torch/16,
        peer_numpy/dot/16 (np.dot(x, x)), gradckpt_c/sumsq/16 (the C call alone);
        per extra tensor of a list call: gradckpt_py/global_norm/k<k>/16 and gradckpt_c/norm/k<k>/16
        for k = 1 and 147 tensors of 16 elements ((t147 - t1) / 146 is the cost per tensor).
The RSS growth during a gpt2s clip is printed as a note ("clip RSS growth").
bf16 gradients of the same shapes, clipping that triggers on every call (6 bytes per parameter):
    gradckpt_py/clip_grad_norm_bf16/<model>/<t>t/<params>   gradckpt.torch.clip_grad_norm_ (norm in one
                                                            C call, torch's coefficient, one C scaling call)
    peer_torch/clip_only_foreach_bf16/<model>/<t>t/<params> torch.nn.utils.clip_grad_norm_(foreach=True)

NumPy asks for transparent huge pages on its big arrays (madvise), which
gradckpt-bench's inputs do not: where THP is in madvise mode, out-of-cache
reads then run up to ~1.4x faster for the peers alone. --no-hugepages turns
that off for a like-for-like kernel comparison.

Each thread count runs in its own child process with OMP_NUM_THREADS,
OPENBLAS_NUM_THREADS and MKL_NUM_THREADS set (NumPy's BLAS reads them at
import) and torch.set_num_threads(t). NumPy's elementwise ops are
single-threaded whatever t is. PyTorch is optional: without it the torch
benchmarks are skipped with a note (CI has no torch).
"""
import argparse
import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone

# Arrays streamed per element, as in bench_kernels.c (reads + writes).
KERNEL_ARRAYS = {"sumsq": 1, "l2norm": 1, "dist2": 2, "add": 3, "axpy": 3, "scale": 2}
DTYPES = ("f32", "f64")
SIZES = (65536, 16777216)
SIZES_2T_MIN = 4194304  # gradckpt-bench has 2t variants from 4 Mi elements up

# bench/bench_checkpointer.c's models: (tensors, parameters). Checked against
# the shapes peers_checkpointer.py builds, so the two cannot drift apart.
MODEL_SIZES = {
    "small147": (147, 875136),
    "small2k": (2000, 12681674),
    "resnet50": (153, 25549352),
    "gpt2s": (148, 124439808),
}
CLIP = 0.1  # as bench_checkpointer.c: below the gradients' norm, so clipping triggers


def note(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# timing


def measure(fn, reps, min_time):
    """Warm up, then reps timings of a fixed iteration count (chosen so one
    repetition lasts about min_time). Returns (iterations, [(wall, cpu)] per call)."""
    t0 = time.perf_counter()
    fn()
    calls = 1
    warm = max(min_time / 2, 0.01)
    while time.perf_counter() - t0 < warm:
        fn()
        calls += 1
    per_call = (time.perf_counter() - t0) / calls
    iters = max(1, int(min_time / per_call))
    out = []
    for _ in range(reps):
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(iters):
            fn()
        w1, c1 = time.perf_counter(), time.process_time()
        out.append(((w1 - w0) / iters, (c1 - c0) / iters))
    return iters, out


def entries(run_name, label, iters, samples, nbytes, items):
    """google-benchmark 1.7.1-style entries: one per repetition, then aggregates."""
    reps = len(samples)
    base = {"run_name": run_name, "family_index": 0, "per_family_instance_index": 0,
            "repetitions": reps, "threads": 1, "time_unit": "ns", "label": label}
    out = []
    for i, (wall, cpu) in enumerate(samples):
        out.append(dict(base, name=run_name, run_type="iteration", repetition_index=i,
                        iterations=iters, real_time=wall * 1e9, cpu_time=cpu * 1e9,
                        bytes_per_second=nbytes / wall, items_per_second=items / wall,
                        elems=float(items)))
    if reps > 1:
        walls = [w for w, _ in samples]
        cpus = [c for _, c in samples]
        rates = [nbytes / w for w in walls]
        irates = [items / w for w in walls]
        aggs = {
            "mean": (statistics.mean, "time"),
            "median": (statistics.median, "time"),
            "stddev": (statistics.stdev, "time"),
        }
        for agg, (f, unit) in aggs.items():
            out.append(dict(base, name=f"{run_name}_{agg}", run_type="aggregate", aggregate_name=agg,
                            aggregate_unit=unit, iterations=reps, real_time=f(walls) * 1e9,
                            cpu_time=f(cpus) * 1e9, bytes_per_second=f(rates),
                            items_per_second=f(irates), elems=float(items)))
        mean_w = statistics.mean(walls)
        out.append(dict(base, name=f"{run_name}_cv", run_type="aggregate", aggregate_name="cv",
                        aggregate_unit="percentage", iterations=reps,
                        real_time=statistics.stdev(walls) / mean_w if mean_w else 0.0,
                        cpu_time=0.0, bytes_per_second=0.0, items_per_second=0.0,
                        elems=float(items)))
    return out


# ---------------------------------------------------------------------------
# kernels


def numpy_kernels(np, dt, n, rng):
    t = np.float32 if dt == "f32" else np.float64
    a = rng.uniform(-1, 1, n).astype(t)
    b = rng.uniform(-1, 1, n).astype(t)
    d = np.empty_like(a)
    w = [t(0.5)]
    s = t(-1.0)

    def dist2():
        np.subtract(a, b, out=d)
        return np.dot(d, d)

    def add():  # a += b
        np.add(a, b, out=a)

    def axpy():  # a += w * b
        w[0] = -w[0]
        np.add(a, w[0] * b, out=a)

    def scale():  # a *= s
        np.multiply(a, s, out=a)

    return {
        "sumsq": ("np.dot(x, x)", lambda: np.dot(a, a)),
        "l2norm": ("np.linalg.norm(x)", lambda: np.linalg.norm(a)),
        "dist2": ("np.subtract(a, b, out=d); np.dot(d, d)", dist2),
        "add": ("a += b", add),
        "axpy": ("a += w * b", axpy),
        "scale": ("a *= -1", scale),
    }


def torch_kernels(torch, np, dt, n, rng):
    t = np.float32 if dt == "f32" else np.float64
    a = torch.from_numpy(rng.uniform(-1, 1, n).astype(t))
    b = torch.from_numpy(rng.uniform(-1, 1, n).astype(t))
    d = torch.empty_like(a)
    w = [0.5]

    def dist2():
        torch.sub(a, b, out=d)
        return torch.dot(d, d)

    def axpy():
        w[0] = -w[0]
        a.add_(b, alpha=w[0])

    return {
        "sumsq": ("torch.dot(x, x)", lambda: torch.dot(a, a)),
        "l2norm": ("torch.linalg.vector_norm(x)", lambda: torch.linalg.vector_norm(a)),
        "dist2": ("torch.sub(a, b, out=d); torch.dot(d, d)", dist2),
        "add": ("a.add_(b)", lambda: a.add_(b)),
        "axpy": ("a.add_(b, alpha=w)", axpy),
        "scale": ("a.mul_(-1)", lambda: a.mul_(-1.0)),
    }


def run_kernels(args, threads, np, torch, out):
    rng = np.random.default_rng(7)
    for n in args.sizes:
        if threads > 1 and n < SIZES_2T_MIN:
            continue
        for dt in DTYPES:
            esz = 4 if dt == "f32" else 8
            libs = [("numpy", f"numpy {np.__version__}", numpy_kernels(np, dt, n, rng))]
            if torch is not None:
                libs.append(("torch", f"torch {torch.__version__}", torch_kernels(torch, np, dt, n, rng)))
            for lib, ver, ops in libs:
                for op, (expr, fn) in ops.items():
                    name = f"peer_{lib}/{op}_{dt}/{threads}t/{n}"
                    iters, samples = measure(fn, args.reps, args.min_time)
                    out += entries(name, f"{ver}: {expr}", iters, samples,
                                   KERNEL_ARRAYS[op] * esz * n, n)
                    med = statistics.median(w for w, _ in samples)
                    note(f"  {name:42s} {med * 1e6:11.2f} us  {KERNEL_ARRAYS[op] * esz * n / med / 1e9:6.1f} GB/s")
            del libs


def run_half_kernels(args, threads, np, torch, out):
    """bf16 / f16 kernels: torch (bf16, f16), NumPy (f16) and gradckpt's Python calls on the same arrays."""
    try:
        import gradckpt
    except ImportError:
        gradckpt = None
    if gradckpt is not None:
        gradckpt.set_num_threads(threads)
    rng = np.random.default_rng(11)
    for n in args.sizes:
        if threads > 1 and n < SIZES_2T_MIN:
            continue
        for dt in ("bf16", "f16"):
            x32 = rng.uniform(-1, 1, n).astype(np.float32)
            a32 = np.zeros(n, np.float32)
            cases = []
            if torch is not None:
                tdt = torch.bfloat16 if dt == "bf16" else torch.float16
                xt = torch.from_numpy(x32.copy()).to(tdt)
                at = torch.from_numpy(a32.copy())
                tver = f"torch {torch.__version__}"
                cases += [
                    (f"peer_torch/l2norm_{dt}", f"{tver}: torch.linalg.vector_norm(x)",
                     lambda xt=xt: torch.linalg.vector_norm(xt), 2),
                    (f"peer_torch/add_{dt}_to_f32", f"{tver}: a32.add_(x)", lambda at=at, xt=xt: at.add_(xt), 10),
                    (f"peer_torch/scale_{dt}", f"{tver}: x.mul_(-1)", lambda xt=xt: xt.mul_(-1.0), 4),
                ]
                if gradckpt is not None:
                    gver = f"gradckpt {gradckpt.__version__}"
                    cases += [
                        (f"gradckpt_py/l2norm_{dt}", f"{gver}: gradckpt.l2norm(torch {dt})",
                         lambda xt=xt: gradckpt.l2norm(xt), 2),
                        (f"gradckpt_py/add_{dt}_to_f32", f"{gver}: gradckpt.add_(a32, torch {dt})",
                         lambda at=at, xt=xt: gradckpt.add_(at, xt), 10),
                        (f"gradckpt_py/scale_{dt}", f"{gver}: gradckpt.scale_(torch {dt}, -1)",
                         lambda xt=xt: gradckpt.scale_(xt, -1.0), 4),
                    ]
            if dt == "f16":
                xn = x32.astype(np.float16)
                an = a32.copy()
                nver = f"numpy {np.__version__}"
                cases += [
                    ("peer_numpy/l2norm_f16", f"{nver}: np.linalg.norm(x16) (float16 result)",
                     lambda: np.linalg.norm(xn), 2),
                    ("peer_numpy/add_f16_to_f32", f"{nver}: np.add(a32, x16, out=a32)",
                     lambda: np.add(an, xn, out=an), 10),
                    ("peer_numpy/scale_f16", f"{nver}: np.multiply(x16, -1, out=x16)",
                     lambda: np.multiply(xn, -1, out=xn), 4),
                ]
                if gradckpt is not None:
                    gver = f"gradckpt {gradckpt.__version__}"
                    cases += [
                        ("gradckpt_py/l2norm_f16_np", f"{gver}: gradckpt.l2norm(np.float16)",
                         lambda: gradckpt.l2norm(xn), 2),
                        ("gradckpt_py/add_f16_to_f32_np", f"{gver}: gradckpt.add_(a32, np.float16)",
                         lambda: gradckpt.add_(an, xn), 10),
                        ("gradckpt_py/scale_f16_np", f"{gver}: gradckpt.scale_(np.float16, -1)",
                         lambda: gradckpt.scale_(xn, -1.0), 4),
                    ]
            # interleaved: one repetition of every case per round, so a busy minute of the shared
            # machine hits them all alike (ratios between them are what these entries are for)
            iters = [measure(fn, 1, args.min_time / 2)[0] for _, _, fn, _ in cases]
            samples = [[] for _ in cases]
            for _ in range(args.reps):
                for i, (_, _, fn, _) in enumerate(cases):
                    c0, w0 = time.process_time(), time.perf_counter()
                    for _ in range(iters[i]):
                        fn()
                    w1, c1 = time.perf_counter(), time.process_time()
                    samples[i].append(((w1 - w0) / iters[i], (c1 - c0) / iters[i]))
            for i, (base, label, _, bpe) in enumerate(cases):
                name = f"{base}/{threads}t/{n}"
                out += entries(name, label, iters[i], samples[i], bpe * n, n)
                med = statistics.median(w for w, _ in samples[i])
                note(f"  {name:42s} {med * 1e6:11.2f} us  {bpe * n / med / 1e9:6.1f} GB/s")


def run_half_clip(args, threads, np, torch, out, gradckpt, gt):
    """clip_grad_norm_ of bf16 gradients: gradckpt.torch beside torch's foreach, interleaved."""
    ver = f"gradckpt {gradckpt.__version__}"
    tver = f"torch {torch.__version__}"
    rng = np.random.default_rng(6)
    for model in args.models:
        shapes = model_shapes(model)
        params = sum(shapes)
        tail = f"{model}/{threads}t/{params}"
        grads = [torch.from_numpy((rng.random(n, dtype=np.float32) - 0.5) * 0.01).to(torch.bfloat16)
                 for n in shapes]
        tp = [torch.nn.Parameter(torch.empty(n, dtype=torch.bfloat16)) for n in shapes]
        for p, g in zip(tp, grads):
            p.grad = g
        start = float(gradckpt.global_norm(grads))

        def renorm(f):
            torch._foreach_mul_(grads, f)

        cases = [
            ("gradckpt_py/clip_grad_norm_bf16", f"{ver}: gradckpt.torch.clip_grad_norm_ (bf16 grads)",
             Decaying(lambda m: gt.clip_grad_norm_(tp, m), renorm, start)),
            ("peer_torch/clip_only_foreach_bf16", f"{tver}: clip_grad_norm_(foreach=True) (bf16 grads)",
             Decaying(lambda m: torch.nn.utils.clip_grad_norm_(tp, m, foreach=True), renorm, start)),
        ]
        iters = {name: measure(fn, 1, args.min_time / 2)[0] for name, _, fn in cases}
        samples = {name: [] for name, _, _ in cases}
        for _ in range(args.reps):
            for name, _, fn in cases:
                c0, w0 = time.process_time(), time.perf_counter()
                for _ in range(iters[name]):
                    fn()
                w1, c1 = time.perf_counter(), time.process_time()
                samples[name].append(((w1 - w0) / iters[name], (c1 - c0) / iters[name]))
        for name, label, _ in cases:
            out.extend(entries(f"{name}/{tail}", label, iters[name], samples[name], 6.0 * params, params))
            note(f"  {name + '/' + tail:58s} {statistics.median(w for w, _ in samples[name]) * 1e6:11.2f} us")
        del tp, grads


# ---------------------------------------------------------------------------
# checkpointer


def model_shapes(name):
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import peers_checkpointer  # the shapes and the NumPy step, shared with the older markdown script

    shapes = peers_checkpointer.MODELS[name]()
    want = MODEL_SIZES[name]
    got = (len(shapes), sum(shapes))
    if got != want:
        sys.exit(f"peers.py: model {name}: {got[0]} tensors / {got[1]} parameters, but "
                 f"bench_checkpointer.c has {want[0]} / {want[1]}: fix peers_checkpointer.py")
    return shapes


def torch_clip_step(torch, grads, params, gl, k, clip, foreach):
    for j in range(k):
        for p, g in zip(params, grads):
            if j == 0:
                p.grad.copy_(g)
            else:
                p.grad.add_(g)
    if foreach:
        torch._foreach_div_(gl, float(k))
    else:
        for g in gl:
            g.div_(k)
    return float(torch.nn.utils.clip_grad_norm_(params, clip, foreach=foreach))


def torch_foreach_step(torch, grads, gl, k, clip):
    for j in range(k):
        if j == 0:
            torch._foreach_copy_(gl, grads)
        else:
            torch._foreach_add_(gl, grads)
    torch._foreach_div_(gl, float(k))
    total = float(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(gl, 2.0)), 2.0))
    coef = clip / (total + 1e-6)
    if coef < 1.0:
        torch._foreach_mul_(gl, coef)
    return total


def rss_kb():
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Decaying:
    """fn(max_norm) called with 0.99 of the last norm each time, so every call clips; every 256
    calls the gradients are scaled back up (renorm), so they never underflow."""

    def __init__(self, clip, renorm, start):
        self.clip, self.renorm, self.norm, self.calls = clip, renorm, start, 0

    def __call__(self):
        self.norm *= 0.99
        self.clip(self.norm)
        self.calls += 1
        if self.calls % 256 == 0:
            self.renorm(0.99 ** -256)
            self.norm *= 0.99 ** -256


def run_gradckpt_py(args, threads, np, torch, out):
    """gradckpt's Python package beside torch: clip only, the accumulator, per-call costs."""
    try:
        import gradckpt
        import gradckpt.torch as gt
        from gradckpt import _gradckpt
    except ImportError as e:
        note(f"peers.py: gradckpt not importable ({e}): gradckpt_py benchmarks skipped (pip install ./python)")
        return
    gradckpt.set_num_threads(threads)
    ver = f"gradckpt {gradckpt.__version__}"
    tver = f"torch {torch.__version__}"
    rng = np.random.default_rng(5)
    if args.only_half:
        if torch is not None:
            run_half_clip(args, threads, np, torch, out, gradckpt, gt)
        return

    def add(name, label, fn, nbytes, items):
        iters, samples = measure(fn, args.reps, args.min_time)
        out.extend(entries(name, label, iters, samples, nbytes, items))
        med = statistics.median(w for w, _ in samples)
        note(f"  {name:58s} {med * 1e6:11.2f} us")

    # per call, 16 elements
    x = rng.standard_normal(16).astype(np.float32)
    xt = torch.from_numpy(x.copy())
    add("gradckpt_py/sumsq/16", f"{ver}: gradckpt.sumsq(np 16)", lambda: gradckpt.sumsq(x), 64, 16)
    add("gradckpt_py/sumsq_torch/16", f"{ver}: gradckpt.sumsq(torch 16)", lambda: gradckpt.sumsq(xt), 64, 16)
    add("peer_numpy/dot/16", f"numpy {np.__version__}: np.dot(x, x)", lambda: np.dot(x, x), 64, 16)
    c_iters = 200000
    samples = [(_gradckpt._bench_c("sumsq", [x], c_iters),) * 2 for _ in range(args.reps)]
    out.extend(entries("gradckpt_c/sumsq/16", f"{ver}: gck_sumsq_f32 timed in C", c_iters, samples, 64, 16))
    for k in (1, 147):
        xs = [rng.standard_normal(16).astype(np.float32) for _ in range(k)]
        add(f"gradckpt_py/global_norm/k{k}/16", f"{ver}: gradckpt.global_norm({k} x 16)",
            lambda xs=xs: gradckpt.global_norm(xs), 64 * k, 16 * k)
        samples = [(_gradckpt._bench_c("norm", xs, c_iters // k),) * 2 for _ in range(args.reps)]
        out.extend(entries(f"gradckpt_c/norm/k{k}/16", f"{ver}: gck_tensors_norm timed in C", c_iters // k,
                           samples, 64 * k, 16 * k))

    if torch is None:
        return
    if args.half:
        run_half_clip(args, threads, np, torch, out, gradckpt, gt)
    for model in args.models:
        shapes = model_shapes(model)
        params = sum(shapes)
        tail = f"{model}/{threads}t/{params}"
        grads = [torch.from_numpy((rng.random(n, dtype=np.float32) - 0.5) * 0.01) for n in shapes]
        tp = [torch.nn.Parameter(torch.empty(n)) for n in shapes]  # never touched: no RSS
        for p, g in zip(tp, grads):
            p.grad = g
        start = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))

        def renorm(f):
            torch._foreach_mul_(grads, f)

        nbytes = 12.0 * params
        cases = [
            ("gradckpt_py/clip_grad_norm_", f"{ver}: gradckpt.torch.clip_grad_norm_",
             Decaying(lambda m: gt.clip_grad_norm_(tp, m), renorm, start)),
            ("peer_torch/clip_only", f"{tver}: clip_grad_norm_(foreach=False)",
             Decaying(lambda m: torch.nn.utils.clip_grad_norm_(tp, m, foreach=False), renorm, start)),
            ("peer_torch/clip_only_foreach", f"{tver}: clip_grad_norm_(foreach=True)",
             Decaying(lambda m: torch.nn.utils.clip_grad_norm_(tp, m, foreach=True), renorm, start)),
        ]
        # The C call on the same buffers, timed in C: clipping to a fixed max_norm m clips
        # on every call (each finds m * n / (n + 1e-6) + 1e-6 > m).
        c_name = "gradckpt_c/clip_by_norm"

        def c_clip(iters):
            renorm(start / max(1e-30, float(gt.get_total_norm(grads))))
            return _gradckpt._bench_c("clip", grads, iters, 0.5 * start)

        # Interleaved: one repetition of every case per round, so a slow minute of the
        # shared machine hits them all alike.
        iters = {}
        for name, _, fn in cases:
            iters[name], _ = measure(fn, 1, args.min_time / 2)
        iters[c_name] = iters[cases[0][0]]
        samples = {name: [] for name in iters}
        for _ in range(args.reps):
            for name, _, fn in cases:
                c0, w0 = time.process_time(), time.perf_counter()
                for _ in range(iters[name]):
                    fn()
                w1, c1 = time.perf_counter(), time.process_time()
                samples[name].append(((w1 - w0) / iters[name], (c1 - c0) / iters[name]))
            c0 = time.process_time()
            t = c_clip(iters[c_name])
            samples[c_name].append((t, (time.process_time() - c0) / iters[c_name]))
        labels = {name: label for name, label, _ in cases}
        labels[c_name] = f"{ver}: gck_tensors_clip_by_norm timed in C"
        for name in samples:
            out.extend(entries(f"{name}/{tail}", labels[name], iters[name], samples[name], nbytes, params))
            note(f"  {name + '/' + tail:58s} {statistics.median(w for w, _ in samples[name]) * 1e6:11.2f} us")
        if model == "gpt2s" or model == args.models[-1]:
            before = rss_kb()
            gt.clip_grad_norm_(tp, 0.05)
            gradckpt.clip_(grads, 0.02)
            note(f"  clip RSS growth ({model}, {params} parameters): {rss_kb() - before} kB")
        # the accumulator, k micro-batches, against torch's per-tensor add + clip (run_checkpointer)
        k = args.k
        acc = gt.GradientAccumulator([(str(i), p) for i, p in enumerate(tp)], mode="mean", clip_norm=CLIP)
        for p in tp:
            p.grad = None

        def accum_step():
            for _ in range(k):
                for p, g in zip(tp, grads):
                    p.grad = g
                acc.accumulate()
            return acc.step()

        accum_step()
        add(f"gradckpt_py/accumulator/{model}/k{k}/{threads}t/{params}",
            f"{ver}: k x (p.grad = g; GradientAccumulator.accumulate()), step() (mean, clip {CLIP})",
            accum_step, 4.0 * (3 * k + 3) * params, params)
        del acc, tp, grads


def run_checkpointer(args, threads, np, torch, out):
    rng = np.random.default_rng(99)
    k = args.k
    for model in args.models:
        shapes = model_shapes(model)
        params = sum(shapes)
        nbytes = 4.0 * (3 * k + 3) * params  # traffic_bytes(k, GCK_CHECKSUM_NONE) of the C bench
        tail = f"{model}/k{k}/{threads}t/{params}"
        grads = [(rng.random(n, dtype=np.float32) - 0.5) * 0.01 for n in shapes]
        acc = [np.empty(n, dtype=np.float32) for n in shapes]
        name = "peer_numpy/flush"
        iters, samples = measure(lambda: sys.modules["peers_checkpointer"].numpy_step(grads, acc, k, CLIP),
                                 args.reps, args.min_time)
        out += entries(f"{name}/{tail}", f"numpy {np.__version__}: copyto/+=, /=k, np.dot norms, *=coef",
                       iters, samples, nbytes, params)
        note(f"  {name + '/' + tail:58s} {statistics.median(w for w, _ in samples) * 1e3:9.2f} ms")
        del acc
        if torch is not None:
            tg = [torch.from_numpy(g) for g in grads]
            tp = [torch.nn.Parameter(torch.empty(n)) for n in shapes]  # never touched: no RSS
            for p in tp:
                p.grad = torch.empty(p.shape[0])
            gl = [p.grad for p in tp]
            ver = f"torch {torch.__version__}"
            cases = [
                ("peer_torch/clip_grad_norm", f"{ver}: per-tensor copy_/add_/div_, clip_grad_norm_(foreach=False)",
                 lambda: torch_clip_step(torch, tg, tp, gl, k, CLIP, False)),
                ("peer_torch/clip_grad_norm_foreach",
                 f"{ver}: per-tensor copy_/add_, _foreach_div_, clip_grad_norm_(foreach=True)",
                 lambda: torch_clip_step(torch, tg, tp, gl, k, CLIP, True)),
                ("peer_torch/foreach_norm",
                 f"{ver}: _foreach_copy_/_foreach_add_/_foreach_div_, _foreach_norm, _foreach_mul_",
                 lambda: torch_foreach_step(torch, tg, gl, k, CLIP)),
            ]
            for name, label, fn in cases:
                try:
                    iters, samples = measure(fn, args.reps, args.min_time)
                except RuntimeError as e:  # e.g. a torch without CPU foreach support
                    note(f"  {name}/{tail}: skipped ({e})")
                    continue
                out += entries(f"{name}/{tail}", label, iters, samples, nbytes, params)
                med = statistics.median(w for w, _ in samples)
                note(f"  {name + '/' + tail:58s} {med * 1e3:9.2f} ms")
            del tp, gl, tg
        del grads


# ---------------------------------------------------------------------------
# driver


def worker(args):
    """Runs every benchmark on args.worker threads; prints the entries as JSON."""
    t = args.worker
    import numpy as np

    if args.no_hugepages:  # 4 KiB pages, like gradckpt-bench's inputs (NumPy madvises huge pages for big arrays)
        try:
            from numpy._core.multiarray import _set_madvise_hugepage
        except ImportError:
            from numpy.core.multiarray import _set_madvise_hugepage
        _set_madvise_hugepage(False)

    torch, why = None, None
    if not args.no_torch:
        try:
            import torch  # noqa: F811

            torch.set_num_threads(t)
        except ImportError as e:
            why = f"PyTorch not installed ({e}): torch benchmarks skipped"
    else:
        why = "--no-torch: torch benchmarks skipped"
    if why and t == args.threads[0]:
        note(f"peers.py: {why}")
    out = []
    note(f"peers.py: {t} thread(s)")
    if not args.no_kernels:
        if not args.only_half:
            run_kernels(args, t, np, torch, out)
        if args.half:
            run_half_kernels(args, t, np, torch, out)
    if not args.no_checkpointer:
        run_checkpointer(args, t, np, torch, out)
    if not args.no_gradckpt:
        run_gradckpt_py(args, t, np, torch, out)
    info = {"numpy_version": np.__version__, "numpy_hugepages": "off" if args.no_hugepages else "default"}
    try:
        info["numpy_blas"] = np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]
    except (AttributeError, KeyError, TypeError):
        pass
    if torch is not None:
        info["torch_version"] = torch.__version__
    else:
        info["torch"] = why
    json.dump({"info": info, "benchmarks": out}, sys.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, metavar="OUT.json", help="google-benchmark-format JSON to write")
    ap.add_argument("--quick", action="store_true",
                    help="3 reps of 0.05 s, 64 Ki elements only, no gpt2s (about 15 s)")
    ap.add_argument("--reps", type=int, help="repetitions per benchmark (default 5, --quick 3)")
    ap.add_argument("--min-time", type=float, help="seconds per repetition (default 0.1, --quick 0.05)")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--sizes", help="kernel element counts (default 65536,16777216; --quick 65536)")
    ap.add_argument("--models", help="checkpointer models (default small147,small2k,resnet50,gpt2s; "
                                     "--quick without gpt2s)")
    ap.add_argument("--k", type=int, default=4, help="micro-batches per flush (default 4)")
    ap.add_argument("--no-torch", action="store_true", help="NumPy only")
    ap.add_argument("--no-hugepages", action="store_true",
                    help="stop NumPy from madvising huge pages for its arrays (gradckpt-bench's inputs use 4 KiB "
                         "pages; with THP in madvise mode that alone makes out-of-cache reads ~1.4x faster)")
    ap.add_argument("--no-kernels", action="store_true", help="skip the kernel benchmarks")
    ap.add_argument("--no-checkpointer", action="store_true", help="skip the checkpointer benchmarks")
    ap.add_argument("--no-gradckpt", action="store_true", help="skip the gradckpt Python package's benchmarks")
    ap.add_argument("--half", action="store_true",
                    help="also the bf16/f16 kernels and the bf16 clip_grad_norm_ (see the docstring)")
    ap.add_argument("--only-half", action="store_true",
                    help="only the bf16/f16 benchmarks (implies --half, --no-checkpointer; the f32 clip cases skipped)")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.only_half:
        args.half = args.no_checkpointer = True
    args.reps = args.reps or (3 if args.quick else 5)
    args.min_time = args.min_time or (0.05 if args.quick else 0.1)
    args.threads = [int(x) for x in args.threads.split(",")]
    args.sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else \
        ([65536] if args.quick else list(SIZES))
    args.models = args.models.split(",") if args.models else \
        (["small147", "small2k", "resnet50"] if args.quick else list(MODEL_SIZES))
    for m in args.models:
        if m not in MODEL_SIZES:
            sys.exit(f"peers.py: unknown model {m} (have {', '.join(MODEL_SIZES)})")
    if args.reps < 1 or args.min_time <= 0:
        sys.exit("peers.py: --reps must be >= 1 and --min-time > 0")
    if args.worker is not None:
        worker(args)
        return

    try:
        import numpy  # noqa: F401  (fail here, not in a child)
    except ImportError:
        sys.exit("peers.py: NumPy is required (pip install numpy)")

    benchmarks, info = [], {}
    for t in args.threads:
        env = dict(os.environ, OMP_NUM_THREADS=str(t), OPENBLAS_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t))
        cmd = [sys.executable, os.path.abspath(__file__), "--out", args.out, "--worker", str(t),
               "--reps", str(args.reps), "--min-time", str(args.min_time), "--threads", ",".join(map(str, args.threads)),
               "--sizes", ",".join(map(str, args.sizes)), "--models", ",".join(args.models), "--k", str(args.k)]
        cmd += [f for f, on in (("--no-torch", args.no_torch), ("--no-hugepages", args.no_hugepages),
                                ("--no-kernels", args.no_kernels),
                                ("--no-checkpointer", args.no_checkpointer),
                                ("--no-gradckpt", args.no_gradckpt), ("--half", args.half),
                                ("--only-half", args.only_half)) if on]
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, check=False)
        if r.returncode != 0:
            sys.exit(f"peers.py: the {t}-thread worker failed (exit {r.returncode})")
        doc = json.loads(r.stdout)
        benchmarks += doc["benchmarks"]
        info.update(doc["info"])

    families = {}
    for b in benchmarks:
        b["family_index"] = families.setdefault(b["run_name"], len(families))
    ctx = {
        "date": datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "executable": "bench/peers.py",
        "num_cpus": os.cpu_count(),
        "load_avg": list(os.getloadavg()) if hasattr(os, "getloadavg") else [],
        "library_build_type": "release",
        "python_version": platform.python_version(),
        "peers_reps": args.reps,
        "peers_min_time": args.min_time,
        "peers_threads": ",".join(map(str, args.threads)),
        **info,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"context": ctx, "benchmarks": benchmarks}, f, indent=1)
        f.write("\n")
    runs = len({b["run_name"] for b in benchmarks})
    print(f"peers.py: {runs} benchmarks x {args.reps} repetitions -> {args.out}")
    if "torch" in info:
        print(f"peers.py: note: {info['torch']}")


if __name__ == "__main__":
    main()
