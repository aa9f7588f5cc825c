#!/usr/bin/env python3
"""Bandwidth ratios from ONE gradckpt-bench run, as markdown tables.

    gradckpt-bench --benchmark_out=res.json --benchmark_out_format=json
    python3 bench/ratios.py res.json [--in-cache 65536] [--out-of-cache 67108864]
    python3 bench/ratios.py res.json --peers peers.json   # + gradckpt vs NumPy/PyTorch (bench/peers.py)
    python3 bench/ratios.py store.json    # the store's sizes and speeds (bench/store_peers_seq.py)

Every number is bytes_per_second (wall-clock, reads + writes) from the JSON, so
ratios between benchmarks of the same run are comparable whatever they move.
With --benchmark_repetitions the median aggregate is used. Standard library only.
"""
import argparse
import json
import re
import statistics
import sys

KERNELS = ["sumsq", "l2norm", "dist2", "pnorm", "div_sumsq", "scale_sumsq", "add", "axpy", "axpy_init", "scale",
           "xor_shuffle", "unshuffle_xor", "unshuffle_xor_planes"]
DTYPES = {"f32": "s", "f64": "d"}  # -> BLAS precision prefix
ISAS = ["scalar", "avx2", "avx512", "neon"]

# Peers of each kernel, as format strings over {dt} (f32/f64) and {p} (s/d).
# Reductions stream like a read (dist2 like two); add/axpy like acc += x;
# scale like x *= s.
PEERS = {
    #         BLAS peer             BLAS nrm2             naive loop           bandwidth reference
    "sumsq": ("openblas_{p}dot_xx", "openblas_{p}nrm2", "naive_sumsq_{dt}", "ref_read_{dt}"),
    "l2norm": ("openblas_{p}dot_xx", "openblas_{p}nrm2", "naive_sumsq_{dt}", "ref_read_{dt}"),
    "dist2": ("openblas_{p}dot_ab", "openblas_{p}nrm2", "naive_dist2_{dt}", "ref_read2_{dt}"),
    "add": ("openblas_{p}axpy", None, None, "ref_rmw2_{dt}"),
    "axpy": ("openblas_{p}axpy", None, "naive_axpy_{dt}", "ref_rmw2_{dt}"),
    "scale": ("openblas_{p}scal", None, None, "ref_rmw1_{dt}"),
    # pnorm (p = 3) reads x twice (max |x|, then the pow terms), counted twice
    "pnorm": (None, None, None, "ref_read_{dt}"),
    # in place: dst = x / d or x * s, read and written, like x *= s
    "div_sumsq": (None, None, None, "ref_rmw1_{dt}"),
    "scale_sumsq": (None, None, None, "ref_rmw1_{dt}"),
    # dst written without being read, x read: like STREAM's copy
    "axpy_init": (None, None, None, "ref_copy_{dt}"),
    # byte planes: read a and b, write a third array, like STREAM's add
    "xor_shuffle": (None, None, None, "ref_add3_{dt}"),
    "unshuffle_xor": (None, None, None, "ref_add3_{dt}"),
    "unshuffle_xor_planes": (None, None, None, "ref_add3_{dt}"),
}


# Mixed-precision kernels, named in full: (family, dtype of the array written)
# -> the family's bandwidth reference in that dtype. No BLAS or naive peer.
MIXED = {
    "add_f32_to_f64": ("add", "f64"), "add_f64_to_f32": ("add", "f32"),
    "axpy_f32_to_f64": ("axpy", "f64"), "axpy_f64_to_f32": ("axpy", "f32"),
    "axpy_init_f32_to_f64": ("axpy_init", "f64"), "axpy_init_f64_to_f32": ("axpy_init", "f32"),
    "axpy_init_nt_f64": ("axpy_init", "f64"), "axpy_init_nt_f32": ("axpy_init", "f32"),
    "scale_into_f64": ("axpy_init", "f64"), "scale_into_f32": ("axpy_init", "f32"),
    "scale_into_nt_f64": ("axpy_init", "f64"), "scale_into_nt_f32": ("axpy_init", "f32"),
    # acc + (a + b): 4 arrays against the read-modify-write's 3, GB/s per byte
    "add_rfold_f64": ("add", "f64"), "add_rfold_f32": ("add", "f32"),
}

# bf16 / f16 inputs (2 bytes read per element) into f32 / f64 accumulators
MIXED.update({f"{op}_{h}_to_{dt}": (op, dt)
              for op in ("add", "axpy", "axpy_init") for h in ("bf16", "f16") for dt in ("f32", "f64")})

# The other 2-byte kernels: name -> (bandwidth reference, in-cache widening
# ceiling). GB/s compare like for like: the reductions with the 16-bit read,
# scale with f32's x *= s, the conversions with f32's copy.
HALF = {f"{k}_{h}": ("ref_read2_16" if k == "dist2" else "ref_read_16", f"ref_widen_{h}" if k != "pnorm" else None)
        for k in ("sumsq", "l2norm", "dist2", "pnorm") for h in ("bf16", "f16")}
HALF.update({f"pnorm_{h}_inf": ("ref_read_16", f"ref_widen_{h}") for h in ("bf16", "f16")})  # amax
HALF.update({f"scale_{h}": ("ref_rmw1_f32", None) for h in ("bf16", "f16")})
HALF.update({f"convert_{a}_to_{b}": ("ref_copy_f32", None)
             for a, b in (("f32", "bf16"), ("f32", "f16"), ("bf16", "f32"), ("f16", "f32"))})


def kernel_bases():
    """(benchmark base name, dtype, (blas, nrm2, naive, ref)) of every kernel row: each family
    in both dtypes, followed by its mixed-precision kernels into that dtype."""
    out = []
    for k in KERNELS:
        for dt, p in DTYPES.items():
            out.append((f"{k}_{dt}", dt, tuple(s.format(dt=dt, p=p) if s else None for s in PEERS[k])))
            if k == "pnorm":  # p = inf (amax): one read of x
                out.append((f"pnorm_{dt}_inf", dt, (None, None, None, f"ref_read_{dt}")))
            out += [(name, dt, (None, None, None, PEERS[fam][3].format(dt=dt, p=p)))
                    for name, (fam, acc_dt) in MIXED.items() if fam == k and acc_dt == dt]
    out += [(name, "16", (None, None, None, ref)) for name, (ref, _) in HALF.items()]
    return out


def read_runs(path, value, labels=None):
    """(context, {(name, threads, n): median}) for every benchmark named
    <name>/<t>t/<n> where value(entry) is not None: the median aggregate when
    the file has one, else the median of the repetitions. labels (a dict), if
    given, receives each name's first label."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: not a google-benchmark JSON file ({e})")
    samples, medians = {}, {}
    for b in doc.get("benchmarks", []):
        v = None if b.get("error_occurred") else value(b)
        if v is None:
            continue
        parts = b["run_name"].split("/")
        if len(parts) < 3 or not parts[-2].endswith("t") or not parts[-1].isdigit():
            continue
        key = ("/".join(parts[:-2]), int(parts[-2][:-1]), int(parts[-1]))
        if labels is not None:
            labels.setdefault(key[0], b.get("label", ""))
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[key] = v
        else:
            samples.setdefault(key, []).append(v)
    out = {k: statistics.median(v) for k, v in samples.items()}
    out.update(medians)
    return doc.get("context", {}), out


def load(path):
    """{(name, threads, n): bytes_per_second}; name is run_name without /<t>t/<n>."""
    return read_runs(path, lambda b: b.get("bytes_per_second"))


def gbs(v):
    return "–" if v is None else f"{v / 1e9:.1f}"


def ratio(a, b):
    return "–" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def busy_rows(bw, small, big):
    """The busy references (ref_read2_16_busy<K>) beside the 2-byte dist2 kernels, 1 thread: GB/s in and
    out of cache and out ÷ ref_read2_16, sorted by in-cache speed."""
    ref = bw.get(("ref_read2_16", 1, big))
    names = sorted({name for (name, t, _) in bw if t == 1 and (name.startswith("ref_read2_16_busy")
                                                                or name.startswith(("dist2_bf16/", "dist2_f16/")))})
    rows = [(bw.get((nm, 1, small)), bw.get((nm, 1, big)), nm) for nm in names]
    rows = [r for r in rows if r[0] is not None and r[1] is not None]
    rows.sort(key=lambda r: -r[0])
    return [[nm, gbs(i), gbs(o), ratio(o, ref)] for i, o, nm in rows]


def kernel_rows(bw, small, big):
    def at(name, n, threads=1):
        return bw.get((name, threads, n)) if name else None

    rows = []
    for base, dt, (blas, nrm2, naive, ref) in kernel_bases():
        k = base.rsplit("_", 1)[0]
        widen = "ref_widen_f32" if dt == "f32" and k in ("sumsq", "l2norm", "dist2") else None
        if base in HALF:
            widen = HALF[base][1]
        for isa in ISAS:
            name = f"{base}/{isa}"
            s1, b1, b2 = at(name, small), at(name, big), at(name, big, 2)
            if s1 is None and b1 is None and b2 is None:
                continue  # ISA not compiled in or not runnable here
            rows.append([
                base, isa, gbs(s1),
                ratio(s1, at(blas, small)), ratio(s1, at(nrm2, small)), ratio(s1, at(naive, small)),
                ratio(s1, at(widen, small)),
                ratio(s1, at(f"{base}/scalar", small)) if isa != "scalar" else "–",
                ratio(s1, at(f"{base}/avx2", small)) if isa == "avx512" else "–",
                gbs(b1), ratio(b1, at(ref, big)),
                gbs(b2), ratio(b2, at(ref, big, 2)),
            ])
    return rows


def peer_rows(bw, small, big):
    kernel = tuple(f"{k}_" for k in KERNELS) + ("trainer_", "tensors_call/")
    names = sorted({name for name, _, _ in bw if not name.startswith(kernel)})
    return [[name, gbs(bw.get((name, 1, small))), gbs(bw.get((name, 1, big))),
             gbs(bw.get((name, 2, big)))] for name in names]


TIME_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load_times(path, field="real_time"):
    """{(name, threads, n): (seconds per iteration, label)}: medians of real_time
    (or of another time field, e.g. cpu_time)."""
    def secs(b):
        return b[field] * TIME_UNIT.get(b.get("time_unit", "ns"), 1e-9) if field in b else None
    labels = {}
    ctx, times = read_runs(path, secs, labels)
    return ctx, {k: (t, labels.get(k[0], "")) for k, t in times.items()}


def fmt_time(s):
    if s is None:
        return "–"
    for unit, mul in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= mul:
            return f"{s / mul:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def peer_tables(times, peers, isas):
    """Two markdown tables of peer time ÷ gradckpt time, one row per operation.

    peer_<lib>/<op>_<dt>/<t>t/<n> is matched with <op>_<dt>/<isa>/<t>t/<n> on the
    best ISA present (the last of `isas` with a result), and
    peer_<lib>/<variant>/<model>/k<k>/<t>t/<n> with flush/<model>/k<k>/none/<t>t/<n>."""
    kern, flush = {}, {}
    for (name, t, n) in peers:
        parts = name.split("/")
        if len(parts) == 2 and parts[1].rsplit("_", 1)[0] in KERNELS:
            kern.setdefault((parts[1], t, n), {})[parts[0]] = peers[(name, t, n)][0]
        elif len(parts) == 4 and parts[3].startswith("k"):
            col = parts[0] + "/" + parts[1]
            flush.setdefault((parts[2], parts[3], t, n), {})[col] = peers[(name, t, n)][0]
    out = []

    def cols_of(groups):
        return sorted({c for g in groups.values() for c in g})

    if kern:
        libs = cols_of(kern)
        header = ["operation", "n", "threads", "gradckpt (ISA)"]
        for lib in libs:
            header += [lib.replace("peer_", ""), "÷"]
        order = {k: i for i, k in enumerate(KERNELS)}
        rows = []
        for (op, t, n) in sorted(kern, key=lambda k: (order[k[0].rsplit("_", 1)[0]], k[0], k[2], k[1])):
            g, isa = None, None
            for i in isas:
                v = times.get((f"{op}/{i}", t, n))
                if v is not None:
                    g, isa = v[0], i
            row = [op, str(n), str(t), f"{fmt_time(g)} ({isa})" if isa else "–"]
            for lib in libs:
                p = kern[(op, t, n)].get(lib)
                row += [fmt_time(p), ratio(p, g)]
            rows.append(row)
        out.append(table(header, rows))
    if flush:
        cols = cols_of(flush)
        header = ["model", "k", "threads", "gradckpt (no checksum)"]
        for c in cols:
            header += [c.replace("peer_", ""), "÷"]
        rows = []
        models = ["small147", "small2k", "resnet50", "gpt2s"]
        for (m, k, t, n) in sorted(flush, key=lambda x: (models.index(x[0]) if x[0] in models else 99,
                                                         x[0], int(x[1][1:]), x[2])):
            g = times.get((f"flush/{m}/{k}/none", t, n))
            g = g[0] if g else None
            row = [m, k[1:], str(t), fmt_time(g)]
            for c in cols:
                p = flush[(m, k, t, n)].get(c)
                row += [fmt_time(p), ratio(p, g)]
            rows.append(row)
        out.append(table(header, rows))
    return out


SMALL_SAVE_REF = "small_save/raw_durable"


def small_save_rows(path):
    """Rows for the small-save table: each small_save/<case> against
    small_save/raw_durable of the same file. Per case the median real time
    and its range over the repetitions, and the ratio to raw_durable: the
    median over repetitions of (case rep i) / (raw_durable rep i), with its
    range (repetition i of every case ran in the same round when the run used
    --benchmark_enable_random_interleaving)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    reps = {}
    for b in doc.get("benchmarks", []):
        if b.get("error_occurred") or b.get("run_type") == "aggregate" or "real_time" not in b:
            continue
        name = b["run_name"]
        if not name.startswith("small_save/"):
            continue
        # small_save/<case>/<t>t/<n>[/iterations:<k>] -> (<case>, t)
        parts = name.split("/")
        case = "/".join(p for p in parts if not re.fullmatch(r"\d+t|\d+|iterations:\d+", p))
        threads = next((int(p[:-1]) for p in parts if re.fullmatch(r"\d+t", p)), 1)
        secs = b["real_time"] * TIME_UNIT.get(b.get("time_unit", "ns"), 1e-9)
        rep = reps.setdefault((case, threads), {})
        rep[b.get("repetition_index", len(rep))] = (secs, b.get("disk_bytes"))
    rows = []
    # each case against raw_durable with the same thread count
    for case, threads in sorted(reps, key=lambda c: (c[1], c[0] != SMALL_SAVE_REF, c[0])):
        ref = reps.get((SMALL_SAVE_REF, threads), {})
        ts = [t for t, _ in reps[(case, threads)].values()]
        disk = next(iter(reps[(case, threads)].values()))[1]
        r = [reps[(case, threads)][i][0] / ref[i][0] for i in reps[(case, threads)] if i in ref]
        med_ref = statistics.median(t for t, _ in ref.values()) if ref else None
        label = case.replace("small_save/", "") + ("" if threads == 1 else f", {threads} threads")
        rows.append([label, str(len(ts)),
                     f"{fmt_time(statistics.median(ts))} ({fmt_time(min(ts))} – {fmt_time(max(ts))})",
                     f"{disk / 1e6:.3f}" if disk else "–", ratio(statistics.median(ts), med_ref),
                     f"{statistics.median(r):.2f} ({min(r):.2f} – {max(r):.2f})" if r else "–"])
    return rows


def print_small_save(rows):
    print("\n## Small durable saves (1.44 MB trainer state, real disk)\n")
    print("Median wall time per save and its range over the repetitions; ÷ raw: the median time ÷ "
          "raw_durable's median; per repetition: median (range) over repetitions of case time ÷ "
          "raw_durable time of the same repetition index. raw_durable = write, fsync, rename, "
          "directory fsync of the same bytes.\n")
    print(table(["case", "reps", "time (range)", "MB written", "÷ raw", "÷ raw per repetition (range)"], rows))


TRAINER_MODELS = ["gpt120k", "small147", "small2k", "resnet50", "gpt2s"]
TRAINER_2T_MIN = 4_000_000  # the 2-thread target applies from 4 M parameters


def trainer_table(times):
    """One step's time per model, k and thread count for trainer_hand and every
    other trainer_<path>/<model>/k<k>[/<variant>] of the run (the trainer path
    "tensors", the checkpointer path "ckpt/<checksum>"), and path ÷ hand of the
    same thread count; for 2 threads also ÷ the 1-thread hand loop."""
    hand, paths, cols = {}, {}, []
    for (name, t, n), (sec, _) in times.items():
        parts = name.split("/")
        if not parts[0].startswith("trainer_") or len(parts) < 3 or not parts[2].startswith("k"):
            continue
        path = "/".join([parts[0][len("trainer_"):]] + parts[3:])
        key = (parts[1], int(parts[2][1:]), t, n)
        if path == "hand":
            hand[key] = sec
        else:
            paths.setdefault(key, {})[path] = sec
            if path not in cols:
                cols.append(path)
    if not hand:
        return None
    cols.sort(key=lambda c: (c != "tensors", c))
    header = ["model", "params", "k", "threads", "hand"]
    for c in cols:
        header += [c, "÷ hand"]
    header += [f"{c} ÷ hand 1t" for c in cols]
    rows = []
    for key in sorted(hand, key=lambda x: (TRAINER_MODELS.index(x[0]) if x[0] in TRAINER_MODELS else 99,
                                           x[0], x[1], x[2])):
        m, k, t, n = key
        row = [m, f"{n / 1e6:.3g} M", str(k), str(t), fmt_time(hand[key])]
        got = paths.get(key, {})
        for c in cols:
            row += [fmt_time(got.get(c)), ratio(got.get(c), hand[key])]
        h1 = hand.get((m, k, 1, n))
        row += [ratio(got.get(c), h1) if t > 1 else "–" for c in cols]
        rows.append(row)
    return table(header, rows)


def order_table(times):
    """The two micro-batch orders per model and k: the checkpointer's flush
    (checksum none) in tree and sequential order, and the hand loops of both
    orders (bench_tree_hand.c): hand tree ÷ hand seq is what the tree's
    working set costs on this machine, whatever the code."""
    lib, hand = {}, {}
    for (name, t, n), (sec, _) in times.items():
        parts = name.split("/")
        if t != 1 or len(parts) < 3:
            continue
        if parts[0] in ("flush", "flush_tree") and parts[-1] == "none":
            lib[(parts[1], parts[2], parts[0])] = sec
        elif parts[0] == "order_hand" and len(parts) == 4:
            hand[(parts[2], parts[3], parts[1])] = sec
    keys = sorted({k[:2] for k in hand} & {k[:2] for k in lib},
                  key=lambda x: (TRAINER_MODELS.index(x[0]) if x[0] in TRAINER_MODELS else 99, int(x[1][1:])))
    rows = []
    for m, k in keys:
        seq, tree = lib.get((m, k, "flush")), lib.get((m, k, "flush_tree"))
        hs, ht, hn = (hand.get((m, k, o)) for o in ("seq", "tree", "tree_nt"))
        best = min(v for v in (ht, hn) if v is not None) if (ht or hn) else None
        rows.append([m, k, fmt_time(seq), fmt_time(tree), ratio(tree, seq), fmt_time(hs), fmt_time(ht),
                     fmt_time(hn), ratio(best, hs), ratio(tree, best)])
    if not rows:
        return None
    return table(["model", "k", "flush", "flush_tree", "÷ flush", "hand seq", "hand tree", "hand tree_nt",
                  "best hand tree ÷ hand seq", "flush_tree ÷ best hand tree"], rows)


def call_table(times):
    """tensors_call/<op>/1t/<count>: time per call at each count, and the
    per-call and per-extra-tensor costs (the smallest and largest count)."""
    by_op = {}
    for (name, t, n), (sec, _) in times.items():
        parts = name.split("/")
        if parts[0] == "tensors_call" and len(parts) == 2 and t == 1:
            by_op.setdefault(parts[1], {})[n] = sec
    if not by_op:
        return None
    counts = sorted({n for v in by_op.values() for n in v})
    rows = []
    for op in sorted(by_op):
        v = by_op[op]
        lo, hi = min(v), max(v)
        extra = (v[hi] - v[lo]) / (hi - lo) if hi > lo else None
        rows.append([op] + [fmt_time(v.get(c)) for c in counts] + [fmt_time(v[lo]), fmt_time(extra)])
    return table(["list function"] + [f"{c} tensors" for c in counts] + ["per call", "per extra tensor"], rows)


STORE_SEQS = ["adamw", "sgd", "finetune", "bf16"]
STORE_PREFIXES = ("store_", "zstd_", "peer_zipnn_")
# The targets (1 thread unless said): sizes ÷ the order-0 entropy and
# ÷ ZipNN's, logical GB/s, 2-thread ÷ 1-thread, finetune delta ÷ logical.
STORE_TARGETS = {"size_entropy": 1.03, "size_zipnn": 1.0, "save_gbs": 1.0, "restore_gbs": 1.5,
                 "vs_zipnn": 2.0, "scale_2t": 1.8, "finetune_delta": 0.05}


def store_results(path):
    """{(op, seq, kind, threads): {counter: median over repetitions}} for the
    store benchmarks (bench_store.c) and their peers (zstd_* there,
    peer_zipnn_* from store_peers_seq.py); kind is "delta", "full" or "" (the
    store's own ops say it in the op)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    samples = {}
    for b in doc.get("benchmarks", []):
        if b.get("error_occurred") or b.get("run_type") == "aggregate":
            continue
        parts = [p for p in b["run_name"].split("/") if not p.startswith("iterations:")]
        if not parts[0].startswith(STORE_PREFIXES) or parts[0].startswith("store_peers") or len(parts) < 4:
            continue
        t = parts[-2]
        if not t.endswith("t") or not t[:-1].isdigit():
            continue
        key = (parts[0], parts[1], parts[2] if len(parts) == 5 else "", int(t[:-1]))
        d = samples.setdefault(key, {})
        for c in ("bytes_per_second", "disk_ratio", "entropy_ratio", "logical_bytes"):
            if c in b:
                d.setdefault(c, []).append(b[c])
        if b.get("cpu_time") and "bytes_per_second" in b:  # bytes per second of the main thread's CPU time
            d.setdefault("cpu_bytes_per_second", []).append(b["bytes_per_second"] * b["real_time"] / b["cpu_time"])
    return doc.get("context", {}), {k: {c: statistics.median(v) for c, v in d.items()} for k, d in samples.items()}


def store_tables(res, cpu_time=False):
    """Markdown: sizes and speeds per sequence, then the targets; speeds from
    CPU time (the main thread's; the process's for ZipNN) with cpu_time."""
    seqs = [q for q in STORE_SEQS if any(k[1] == q for k in res)]
    if not seqs:
        return None

    def get(op, q, kind, t, c):
        return res.get((op, q, kind, t), {}).get(c)

    def f4(v):
        return "–" if v is None else f"{v:.4f}"

    def r3(a, b):
        return "–" if a is None or b is None or b == 0 else f"{a / b:.3f}"

    def gb(v):
        return "–" if v is None else f"{v / 1e9:.2f}"

    size_rows = []
    for kind, ours in (("delta", "store_save"), ("full", "store_full_save")):
        size_rows.append([f"{kind}: order-0 entropy"] + [f4(get(ours, q, "", 1, "entropy_ratio")) for q in seqs])
        size_rows.append([f"{kind}: gradckpt" + (" (compress_full)" if kind == "full" else "")] +
                         [f4(get(ours, q, "", 1, "disk_ratio")) for q in seqs])
        size_rows.append([f"{kind}: ZipNN"] + [f4(get("peer_zipnn_compress", q, kind, 1, "disk_ratio")) for q in seqs])
        size_rows.append([f"{kind}: zstd-1"] + [f4(get("zstd_compress", q, kind, 1, "disk_ratio")) for q in seqs])
        size_rows.append([f"{kind}: gradckpt ÷ entropy"] + [r3(get(ours, q, "", 1, "disk_ratio"),
                                                                  get(ours, q, "", 1, "entropy_ratio")) for q in seqs])
        size_rows.append([f"{kind}: gradckpt ÷ ZipNN"] + [r3(get(ours, q, "", 1, "disk_ratio"),
                                                                get("peer_zipnn_compress", q, kind, 1, "disk_ratio"))
                                                          for q in seqs])
    size_rows.append(["plain full version (store_plain_save)"] + [f4(get("store_plain_save", q, "", 1, "disk_ratio"))
                                                                  for q in seqs])
    bps = "cpu_bytes_per_second" if cpu_time else "bytes_per_second"
    speed_rows = []
    for label, op, kind in (("delta save", "store_save", ""), ("delta restore", "store_restore", ""),
                            ("delta restore into caller buffers", "store_restore_into", ""),
                            ("full save (compress_full)", "store_full_save", ""),
                            ("full restore (compress_full)", "store_full_restore", "")):
        for t in (1, 2):
            speed_rows.append([f"{label} {t}t"] + [gb(get(op, q, kind, t, bps)) for q in seqs])
        speed_rows.append([f"{label} 2t ÷ 1t"] + [ratio(get(op, q, kind, 2, bps), get(op, q, kind, 1, bps))
                                                  for q in seqs])
    speed_rows.append(["plain full save 1t"] + [gb(get("store_plain_save", q, "", 1, bps)) for q in seqs])
    for kind in ("delta", "full"):
        for op in ("compress", "decompress"):
            for t in (1, 2):
                speed_rows.append([f"ZipNN {op} {kind} {t}t"] + [gb(get(f"peer_zipnn_{op}", q, kind, t, bps))
                                                                 for q in seqs])
            speed_rows.append([f"zstd-1 {op} {kind} 1t"] + [gb(get(f"zstd_{op}", q, kind, 1, bps)) for q in seqs])
    T = STORE_TARGETS
    tgt = []

    def row(label, target, vals):
        tgt.append([label, target] + vals)

    row("delta ÷ entropy", f"≤ {T['size_entropy']}", [r3(get("store_save", q, "", 1, "disk_ratio"),
                                                            get("store_save", q, "", 1, "entropy_ratio")) for q in seqs])
    row("delta ÷ ZipNN", f"≤ {T['size_zipnn']}", [r3(get("store_save", q, "", 1, "disk_ratio"),
                                                        get("peer_zipnn_compress", q, "delta", 1, "disk_ratio"))
                                                  for q in seqs])
    row("full ÷ entropy", f"≤ {T['size_entropy']}", [r3(get("store_full_save", q, "", 1, "disk_ratio"),
                                                           get("store_full_save", q, "", 1, "entropy_ratio"))
                                                     for q in seqs])
    row("full ÷ ZipNN", f"≤ {T['size_zipnn']}", [r3(get("store_full_save", q, "", 1, "disk_ratio"),
                                                       get("peer_zipnn_compress", q, "full", 1, "disk_ratio"))
                                                 for q in seqs])
    row("delta save GB/s ÷ target", f"≥ 1 ({T['save_gbs']} GB/s)",
        [ratio(get("store_save", q, "", 1, bps), T["save_gbs"] * 1e9) for q in seqs])
    row("delta restore GB/s ÷ target", f"≥ 1 ({T['restore_gbs']} GB/s)",
        [ratio(get("store_restore", q, "", 1, bps), T["restore_gbs"] * 1e9) for q in seqs])
    row("restore into caller buffers ÷ target", f"≥ 1 ({T['restore_gbs']} GB/s)",
        [ratio(get("store_restore_into", q, "", 1, bps), T["restore_gbs"] * 1e9) for q in seqs])
    row("delta save ÷ ZipNN compress", f"≈ {T['vs_zipnn']}",
        [ratio(get("store_save", q, "", 1, bps), get("peer_zipnn_compress", q, "delta", 1, bps)) for q in seqs])
    row("delta restore ÷ ZipNN decompress", f"≈ {T['vs_zipnn']}",
        [ratio(get("store_restore", q, "", 1, bps), get("peer_zipnn_decompress", q, "delta", 1, bps)) for q in seqs])
    row("full save ÷ ZipNN compress", f"≈ {T['vs_zipnn']}",
        [ratio(get("store_full_save", q, "", 1, bps), get("peer_zipnn_compress", q, "full", 1, bps)) for q in seqs])
    row("full restore ÷ ZipNN decompress", f"≈ {T['vs_zipnn']}",
        [ratio(get("store_full_restore", q, "", 1, bps), get("peer_zipnn_decompress", q, "full", 1, bps))
         for q in seqs])
    for op in ("store_save", "store_restore"):
        row(f"{op.split('_')[1]} 2t ÷ 1t", f"≥ {T['scale_2t']}", [ratio(get(op, q, "", 2, bps), get(op, q, "", 1, bps))
                                                                 for q in seqs])
    row("finetune delta ÷ logical", f"≤ {T['finetune_delta']}",
        [f4(get("store_save", q, "", 1, "disk_ratio")) if q == "finetune" else "–" for q in seqs])
    return (table(["bytes ÷ logical (1t; medians)"] + seqs, size_rows),
            table([f"logical GB/s ({'CPU' if cpu_time else 'wall'} time, medians)"] + seqs, speed_rows),
            table(["target (issue 17)", "target"] + seqs, tgt))


def print_store(path, cpu_time=False):
    ctx, res = store_results(path)
    t = store_tables(res, cpu_time)
    if t is None:
        return False
    load_avg = " ".join(f"{x:.2f}" for x in ctx.get("load_avg", []))
    print(f"\n## Store: sizes and speeds on the benchmark sequences ({ctx.get('num_cpus', '?')} CPUs, "
          f"load average at the start {load_avg or '?'}; {ctx.get('store_peers_seq', 'one run')})\n")
    print("Sizes ÷ logical bytes (entropy: order-0 of each tensor's byte planes, the XOR with the previous "
          "version for deltas; gradckpt: the version's file; ZipNN and zstd-1: tensor by tensor on the same "
          "bytes). Speeds in GB/s of logical data (wall clock, medians over repetitions; on tmpfs).\n")
    print(t[0])
    print()
    print(t[1])
    print("\n### Against the targets\n")
    print(t[2])
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="google-benchmark JSON (--benchmark_out_format=json)")
    ap.add_argument("--in-cache", type=int, default=65536, metavar="N",
                    help="elements for the in-cache columns (default 64 Ki)")
    ap.add_argument("--out-of-cache", type=int, default=67108864, metavar="N",
                    help="elements for the out-of-cache columns (default 64 Mi)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="trainer, per-call and store speed tables from cpu_time (the main thread's: on a "
                         "loaded machine it leaves out time given to other processes; 1-thread rows only)")
    ap.add_argument("--peers", metavar="PEERS.json",
                    help="bench/peers.py output: add a table of NumPy/PyTorch time ÷ gradckpt time")
    args = ap.parse_args()
    ctx, bw = load(args.json)
    small_rows = small_save_rows(args.json)
    if bw and all(name.startswith(STORE_PREFIXES + ("small_save/",)) for name, _, _ in bw):
        print_store(args.json, args.cpu_time)  # a run of the store benchmarks alone (and their peers)
        if small_rows:
            print_small_save(small_rows)
        return
    if not bw and small_rows:
        print_small_save(small_rows)  # a run of the small-save benchmarks alone
        return
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
          "ref_rmw2 (add/axpy, mixed ones in the written dtype), ref_rmw1 (scale and the fused in-place kernels), "
          "ref_copy (axpy_init), ref_add3 (xor_shuffle/unshuffle_xor), "
          "-O3 -march=native -ffast-math. Widen: ref_widen_f32, the f32 -> f64 conversion alone "
          "that f32 reductions need (their in-cache ceiling).\n")
    print(table([
        "kernel", "ISA", "GB/s in", "÷ BLAS", "÷ nrm2", "÷ naive", "÷ widen", "÷ scalar", "÷ avx2",
        "GB/s out", "÷ ref", "GB/s out 2t", "÷ ref 2t",
    ], kernel_rows(bw, small, big)))
    print("\n## Peers and references (GB/s)\n")
    print(table(["benchmark", "in cache 1t", "out of cache 1t", "out of cache 2t"],
                peer_rows(bw, small, big)))
    busy = busy_rows(bw, small, big)
    if any(r[0].startswith("ref_") for r in busy):
        print("\n## Out of cache, by speed in cache: dist2 of 2-byte floats beside the busy references\n")
        print("ref_read2_16_busy<K>: ref_read2_16 with the dist2 kernels' prefetching and K vector adds "
              "per 16 elements (bench_baseline.c). A kernel as fast in cache as a busy reference can "
              "expect about its share of ref_read2_16 out of cache.\n")
        print(table(["benchmark (1 thread)", "GB/s in", "GB/s out", "÷ ref_read2_16"], busy))
    _, times = load_times(args.json, "cpu_time" if args.cpu_time else "real_time")
    trainer = trainer_table(times)
    if trainer:
        print(f"\n## Trainer step: gradckpt paths ÷ the hand loop ({'cpu' if args.cpu_time else 'real'} "
              "time, same run)\n")
        print("One optimizer step's gradient bookkeeping in f32 (bench/bench_trainer.c): k micro-batches "
              "accumulated in place, mean, global 2-norm, clip that triggers. hand: plain C over the "
              "contiguous buffer, -O3 -march=native -ffast-math; tensors: gck_tensors_* on the same "
              "buffers; hand_staged: the hand loop summing into a buffer of its own and writing the "
              "clipped mean into the gradient, the floor of the checkpointer path (ckpt/*), which must "
              "copy. Targets: tensors ÷ hand <= 1.0 at 1 thread; 2 threads ÷ the 1-thread hand "
              f"loop <= 0.6 from {TRAINER_2T_MIN / 1e6:g} M parameters.\n")
        print(trainer)
        # the machine's own 2-thread scaling of a read-modify-write stream, if the run has it
        sizes = sorted(n for (name, t, n) in times if name == "ref_rmw2_f32" and t == 2
                       and ("ref_rmw2_f32", 1, n) in times)
        if sizes:
            n = sizes[-1]
            print(f"\nCeiling for the 2-thread column: ref_rmw2_f32 (acc += x) at {n} elements takes "
                  f"{ratio(times[('ref_rmw2_f32', 2, n)][0], times[('ref_rmw2_f32', 1, n)][0])} × "
                  "its 1-thread time on 2 threads in this run.")
    orders = order_table(times)
    if orders:
        print("\n## Tree order ÷ sequential order, beside the same orders written by hand (1 thread)\n")
        print("flush / flush_tree: bench_checkpointer.c, k micro-batches accumulated and flushed (mean, "
              "clip, checksum none). hand: bench_tree_hand.c on one contiguous buffer of the model's "
              "parameters, the fewest passes of each order. Target: flush_tree ÷ flush <= 1.1.\n")
        print(orders)
    calls = call_table(times)
    if calls:
        print("\n## Per-call cost of the list functions (16-float tensors, 1 thread)\n")
        print(calls)
    if args.peers:
        pctx, peers = load_times(args.peers)
        versions = ", ".join(f"{k.split('_')[0]} {pctx[k]}" for k in ("numpy_version", "torch_version") if k in pctx)
        if "torch" in pctx:
            versions += f"; {pctx['torch']}"
        pload = " ".join(f"{x:.2f}" for x in pctx.get("load_avg", []))
        print(f"\n## gradckpt vs NumPy/PyTorch ({versions or '?'}; peers' load average {pload or '?'})\n")
        print("Median time per call (kernels) or per accumulate + flush step (checkpointer); "
              "÷ = peer time ÷ gradckpt time, so > 1 means gradckpt is faster. gradckpt: the best "
              "ISA in the results for kernels; flush/<model>/k<k>/none for the checkpointer "
              "(it also writes a checkpoint, which the peers do not).\n")
        tables = peer_tables(times, peers, ISAS)
        print("\n\n".join(tables) if tables else f"({args.peers}: no peer benchmarks)")
    print_store(args.json, args.cpu_time)
    if small_rows:
        print_small_save(small_rows)


if __name__ == "__main__":
    main()
