#!/usr/bin/env python3
"""Bandwidth ratios from ONE gradckpt-bench run, as markdown tables.

    gradckpt-bench --benchmark_out=res.json --benchmark_out_format=json
    python3 bench/ratios.py res.json [--in-cache 65536] [--out-of-cache 67108864]

Every number is bytes_per_second (wall-clock, reads + writes) from the JSON, so
ratios between benchmarks of the same run are comparable whatever they move.
With --benchmark_repetitions the median aggregate is used. Standard library only.
"""
import argparse
import json
import statistics
import sys

KERNELS = ["sumsq", "l2norm", "dist2", "add", "axpy", "scale", "xor_shuffle", "unshuffle_xor"]
DTYPES = {"f32": "s", "f64": "d"}  # -> BLAS precision prefix
ISAS = ["scalar", "avx2", "avx512", "neon"]

# Peers of each kernel, as format strings over {dt} (f32/f64) and {p} (s/d).
# Reductions stream like a read (dist2 like two); add/axpy like acc += x;
# scale like x *= s.
PEERS = {
    #         BLAS peer             BLAS nrm2             naive loop           bandwidth reference
    "sumsq": ("openblas_{p}dot_xx", "openblas_{p}nrm2", "naive_sumsq_{dt}", "ref_read_{dt}"),
    "l2norm": ("openblas_{p}dot_xx", "openblas_{p}nrm2", "naive_sumsq_{dt}", "ref_read_{dt}"),
    "dist2": ("openblas_{p}dot_ab", "openblas_{p}nrm2", "naive_dist2_{dt}", "ref_read_{dt}"),
    "add": ("openblas_{p}axpy", None, None, "ref_rmw2_{dt}"),
    "axpy": ("openblas_{p}axpy", None, "naive_axpy_{dt}", "ref_rmw2_{dt}"),
    "scale": ("openblas_{p}scal", None, None, "ref_rmw1_{dt}"),
    # byte planes: read a and b, write a third array, like STREAM's add
    "xor_shuffle": (None, None, None, "ref_add3_{dt}"),
    "unshuffle_xor": (None, None, None, "ref_add3_{dt}"),
}


def load(path):
    """{(name, threads, n): bytes_per_second}; name is run_name without /<t>t/<n>."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: not a google-benchmark JSON file ({e})")
    samples, medians = {}, {}
    for b in doc.get("benchmarks", []):
        if b.get("error_occurred") or "bytes_per_second" not in b:
            continue
        parts = b["run_name"].split("/")
        if len(parts) < 3 or not parts[-2].endswith("t"):
            continue
        key = ("/".join(parts[:-2]), int(parts[-2][:-1]), int(parts[-1]))
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[key] = b["bytes_per_second"]
        else:
            samples.setdefault(key, []).append(b["bytes_per_second"])
    bw = {k: statistics.median(v) for k, v in samples.items()}
    bw.update(medians)
    return doc.get("context", {}), bw


def gbs(v):
    return "–" if v is None else f"{v / 1e9:.1f}"


def ratio(a, b):
    return "–" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def kernel_rows(bw, small, big):
    def at(name, n, threads=1):
        return bw.get((name, threads, n)) if name else None

    rows = []
    for k in KERNELS:
        for dt, p in DTYPES.items():
            blas, nrm2, naive, ref = (s.format(dt=dt, p=p) if s else None for s in PEERS[k])
            base = f"{k}_{dt}"
            for isa in ISAS:
                name = f"{base}/{isa}"
                s1, b1, b2 = at(name, small), at(name, big), at(name, big, 2)
                if s1 is None and b1 is None and b2 is None:
                    continue  # ISA not compiled in or not runnable here
                rows.append([
                    base, isa, gbs(s1),
                    ratio(s1, at(blas, small)), ratio(s1, at(nrm2, small)), ratio(s1, at(naive, small)),
                    ratio(s1, at(f"{base}/scalar", small)) if isa != "scalar" else "–",
                    ratio(s1, at(f"{base}/avx2", small)) if isa == "avx512" else "–",
                    gbs(b1), ratio(b1, at(ref, big)),
                    gbs(b2), ratio(b2, at(ref, big, 2)),
                ])
    return rows


def peer_rows(bw, small, big):
    kernel = tuple(f"{k}_" for k in KERNELS)
    names = sorted({name for name, _, _ in bw if not name.startswith(kernel)})
    return [[name, gbs(bw.get((name, 1, small))), gbs(bw.get((name, 1, big))),
             gbs(bw.get((name, 2, big)))] for name in names]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="google-benchmark JSON (--benchmark_out_format=json)")
    ap.add_argument("--in-cache", type=int, default=65536, metavar="N",
                    help="elements for the in-cache columns (default 64 Ki)")
    ap.add_argument("--out-of-cache", type=int, default=67108864, metavar="N",
                    help="elements for the out-of-cache columns (default 64 Mi)")
    args = ap.parse_args()
    ctx, bw = load(args.json)
    if not bw:
        sys.exit(f"{args.json}: no benchmark with bytes_per_second")
    small, big = args.in_cache, args.out_of_cache

    load_avg = " ".join(f"{x:.2f}" for x in ctx.get("load_avg", []))
    print(f"# gradckpt-bench ratios ({ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs, "
          f"ISAs: {ctx.get('gradckpt_isas_available', '?')}, load average {load_avg or '?'})\n")
    print(f"In cache = {small} elements, out of cache = {big} elements. GB/s = 1e9 bytes/s of "
          "reads + writes; a ratio > 1 means the kernel moves more bytes per second than the peer.\n"
          "BLAS peer: dot(x,x) for sumsq/l2norm, dot(a,b) for dist2, axpy for add/axpy, scal for "
          "scale. Naive: the plain C loop with the project's flags. Ref: ref_read (reductions), "
          "ref_rmw2 (add/axpy), ref_rmw1 (scale), ref_add3 (xor_shuffle/unshuffle_xor), "
          "-O3 -march=native -ffast-math.\n")
    print(table([
        "kernel", "ISA", "GB/s in", "÷ BLAS", "÷ nrm2", "÷ naive", "÷ scalar", "÷ avx2",
        "GB/s out", "÷ ref", "GB/s out 2t", "÷ ref 2t",
    ], kernel_rows(bw, small, big)))
    print("\n## Peers and references (GB/s)\n")
    print(table(["benchmark", "in cache 1t", "out of cache 1t", "out of cache 2t"],
                peer_rows(bw, small, big)))


if __name__ == "__main__":
    main()
