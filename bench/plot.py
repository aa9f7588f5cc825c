#!/usr/bin/env python3
"""PNG plots of gradckpt-bench results, drawn by gnuplot (no matplotlib).

    python3 bench/plot.py RESULTS.json OUTDIR [--peers PEERS.json] [--keep-scripts]

RESULTS.json is a gradckpt-bench --benchmark_out JSON (google-benchmark
format); with --benchmark_repetitions the medians are plotted. Peer results
from bench/peers.py are read from --peers, or from RESULTS.json itself when
they were merged into it. Writes, for what the files contain:

  kernel_<family>_<dt>.png   GB/s vs element count (log x), one line per ISA
                             (1 thread; the best ISA's 2-thread points dotted),
                             the bandwidth reference of bench/ratios.py (dashed;
                             for f32 reductions also ref_widen_f32, the widening
                             alone, their in-cache ceiling),
                             OpenBLAS and the naive C loop (thin), NumPy and
                             PyTorch points when peer results are there, and
                             where the working set leaves L1/L2/L3
  peers_kernels_<n>_<t>t.png gradckpt (its best ISA) vs NumPy vs PyTorch, GB/s
                             per kernel and type at n elements
  peers_checkpointer_k<k>_<t>t.png  accumulate k + mean + clip: ms per step
                             per model shape, gradckpt (flush/<model>/k<k>/none)
                             vs NumPy vs PyTorch's three ways (log y)

and prints the files written. Families absent from the input are skipped.
--keep-scripts leaves the generated gnuplot scripts and data files in
OUTDIR/gnuplot/ (re-run one with `gnuplot FILE.gp` from OUTDIR).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratios import DTYPES, ISAS, KERNELS, PEERS  # noqa: E402  (one mapping for both scripts)

ESZ = {"f32": 4, "f64": 8}
# Distinct arrays a kernel keeps live (for where it falls out of a cache level):
# dist2 a and b; add/axpy acc and x; xor_shuffle a, b and the output.
FOOTPRINT = {"sumsq": 1, "l2norm": 1, "dist2": 2, "add": 2, "axpy": 2, "scale": 1,
             "xor_shuffle": 3, "unshuffle_xor": 3}
# Arrays counted in bytes_per_second (reads + writes), as bench_kernels.c.
TRAFFIC = {"sumsq": 1, "l2norm": 1, "dist2": 2, "add": 3, "axpy": 3, "scale": 2,
           "xor_shuffle": 3, "unshuffle_xor": 3}
ISA_COLOR = {"scalar": "#7f7f7f", "avx2": "#1f77b4", "avx512": "#d62728", "neon": "#2ca02c"}
NUMPY_COLOR, TORCH_COLOR = "#2ca02c", "#e377c2"
TIME_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
FLUSH_VARIANTS = [  # (name prefix in the peer JSON, legend, colour)
    ("peer_numpy/flush", "NumPy (np.dot norms)", NUMPY_COLOR),
    ("peer_torch/clip_grad_norm", "PyTorch clip_grad_norm_(foreach=False)", "#f7b6d2"),
    ("peer_torch/clip_grad_norm_foreach", "PyTorch clip_grad_norm_(foreach=True)", TORCH_COLOR),
    ("peer_torch/foreach_norm", "PyTorch _foreach_add_/_foreach_norm/_foreach_mul_", "#9467bd"),
]
GRADCKPT_COLOR = "#d62728"
PEER_CTX = {}  # the context of bench/peers.py's JSON, when one was read
MODEL_ORDER = ["small147", "small2k", "resnet50", "gpt2s"]


# ---------------------------------------------------------------------------
# input


def split_name(run_name):
    """'sumsq_f32/avx2/1t/65536' -> ('sumsq_f32/avx2', 1, 65536), or None."""
    parts = run_name.split("/")
    if len(parts) < 3 or not parts[-2].endswith("t") or not parts[-2][:-1].isdigit():
        return None
    try:
        return "/".join(parts[:-2]), int(parts[-2][:-1]), int(parts[-1])
    except ValueError:
        return None


def load(paths):
    """{(name, threads, n): {"bps", "secs", "label"}} (medians) and the first file's context."""
    samples, medians, ctx = {}, {}, None
    global PEER_CTX
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"plot.py: {path}: not a google-benchmark JSON file ({e})")
        if ctx is None:  # RESULTS.json's: the host, caches and ISAs of the C run
            ctx = doc.get("context", {})
        if doc.get("context", {}).get("executable") == "bench/peers.py":
            PEER_CTX = doc["context"]
        for b in doc.get("benchmarks", []):
            if b.get("error_occurred") or "real_time" not in b:
                continue
            key = split_name(b.get("run_name", b.get("name", "")))
            if key is None:
                continue
            v = {"bps": b.get("bytes_per_second"),
                 "secs": b["real_time"] * TIME_UNIT.get(b.get("time_unit", "ns"), 1e-9),
                 "label": b.get("label", "")}
            if b.get("run_type") == "aggregate":
                if b.get("aggregate_name") == "median":
                    medians[key] = v
            else:
                samples.setdefault(key, []).append(v)
    out = {}
    for key, vs in samples.items():
        bps = [v["bps"] for v in vs if v["bps"] is not None]
        out[key] = {"bps": statistics.median(bps) if bps else None,
                    "secs": statistics.median(v["secs"] for v in vs), "label": vs[0]["label"],
                    "reps": len(vs)}
    for key, v in medians.items():
        out[key] = dict(v, reps=len(samples.get(key, [])) or 1)
    return ctx or {}, out


# ---------------------------------------------------------------------------
# gnuplot plumbing


def q(s):
    """A gnuplot double-quoted string."""
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def size_label(n):
    for unit, div in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return str(n)


def bytes_label(b):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div:
            return f"{b / div:g} {unit}"
    return f"{b} B"


class Plotter:
    def __init__(self, outdir, keep):
        self.outdir = outdir
        self.keep = keep
        self.work = os.path.join(outdir, "gnuplot") if keep else tempfile.mkdtemp(prefix="gck-plot-")
        os.makedirs(self.work, exist_ok=True)
        self.written = []

    def run(self, stem, script, data):
        dat = os.path.join(self.work, stem + ".dat")
        gp = os.path.join(self.work, stem + ".gp")
        png = os.path.join(self.outdir, stem + ".png")
        with open(dat, "w", encoding="utf-8") as f:
            f.write(data)
        header = (f"# generated by bench/plot.py\n"
                  f"set terminal pngcairo size 1400,720 font 'DejaVu Sans,11' noenhanced\n"
                  f"set output {q(os.path.abspath(png))}\n"
                  f"DAT = {q(os.path.abspath(dat))}\n")
        with open(gp, "w", encoding="utf-8") as f:
            f.write(header + script)
        r = subprocess.run(["gnuplot", gp], capture_output=True, text=True, check=False)
        if r.returncode != 0 or not os.path.exists(png):
            sys.exit(f"plot.py: gnuplot failed on {gp}:\n{r.stderr}")
        if r.stderr.strip():
            print(f"plot.py: gnuplot warnings for {stem}:\n{r.stderr.strip()}", file=sys.stderr)
        self.written.append(png)

    def close(self):
        if not self.keep:
            shutil.rmtree(self.work, ignore_errors=True)


def footer(ctx, extra=""):
    load_avg = " ".join(f"{x:.2f}" for x in ctx.get("load_avg", []))
    host = f"{ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs"
    if ctx.get("gradckpt_isas_available"):
        host += f" (ISAs: {ctx['gradckpt_isas_available']})"
    text = f"gradckpt-bench: {host}, load average {load_avg or '?'}, {ctx.get('date', '')[:16]}."
    out = f"set label 98 {q(text)} at screen 0.01, screen {0.045 if extra else 0.02} left font ',9' tc rgb '#555555'\n"
    if extra:
        out += f"set label 99 {q(extra)} at screen 0.01, screen 0.02 left font ',9' tc rgb '#555555'\n"
    return out


# ---------------------------------------------------------------------------
# (a) kernel bandwidth vs size


def series(data, name, threads):
    pts = sorted((n, v["bps"]) for (nm, t, n), v in data.items()
                 if nm == name and t == threads and v["bps"])
    return pts


def kernel_plots(pl, ctx, data):
    caches = [(c.get("level"), c.get("size")) for c in ctx.get("caches", [])
              if c.get("type") in ("Data", "Unified") and c.get("size")]
    for fam in KERNELS:
        for dt, p in DTYPES.items():
            base = f"{fam}_{dt}"
            lines = []  # (title, style, points)
            isas = [isa for isa in ISAS if series(data, f"{base}/{isa}", 1)]
            if not isas:
                continue
            for isa in isas:
                lines.append((f"gradckpt {isa}", f"lc rgb '{ISA_COLOR[isa]}' lw 2.5 pt 7 ps 0.8",
                              "linespoints", series(data, f"{base}/{isa}", 1)))
            blas, nrm2, naive, ref = (s.format(dt=dt, p=p) if s else None for s in PEERS[fam])
            if ref and series(data, ref, 1):
                lines.append((f"{ref} (bandwidth reference)", "lc rgb 'black' lw 2 dt 2",
                              "lines", series(data, ref, 1)))
            widen = "ref_widen_f32"  # the f32 -> f64 widening alone: f32 reductions' in-cache ceiling
            if dt == "f32" and fam in ("sumsq", "l2norm", "dist2") and series(data, widen, 1):
                lines.append((f"{widen} (widening alone)", "lc rgb '#777777' lw 2 dt 4",
                              "lines", series(data, widen, 1)))
            for peer, title, color in ((blas, "OpenBLAS {}", "#ff7f0e"), (nrm2, "OpenBLAS {}", "#8c564b"),
                                       (naive, "naive C loop ({})", "#bcbd22")):
                if peer and series(data, peer, 1):
                    short = peer.replace("openblas_", "")
                    lines.append((title.format(short), f"lc rgb '{color}' lw 1 pt 6 ps 0.5",
                                  "linespoints", series(data, peer, 1)))
            for lib, color, pt in (("numpy", NUMPY_COLOR, 9), ("torch", TORCH_COLOR, 13)):
                pts = series(data, f"peer_{lib}/{base}", 1)
                if pts:
                    label = next((v["label"] for (nm, t, n), v in data.items()
                                  if nm == f"peer_{lib}/{base}" and t == 1), lib)
                    lines.append((label, f"lc rgb '{color}' pt {pt} ps 2.0", "points", pts))
            best = isas[-1]
            pts2 = series(data, f"{base}/{best}", 2)
            if pts2:
                lines.append((f"gradckpt {best}, 2 threads", f"lc rgb '{ISA_COLOR[best]}' lw 1.5 dt 3 pt 6 ps 1",
                              "linespoints", pts2))
            if pts2 and ref and series(data, ref, 2):
                lines.append((f"{ref}, 2 threads", "lc rgb '#555555' lw 1.5 dt 3", "lines", series(data, ref, 2)))

            ns = sorted({n for *_, pts in lines for n, _ in pts})
            lo, hi = ns[0], ns[-1]
            dat = "".join(f"# {t}\n" + "".join(f"{n} {b / 1e9:.6g}\n" for n, b in pts) + "\n\n"
                          for t, _, _, pts in lines)
            script = []
            esz = ESZ[dt]
            script.append(f"set title {q(f'{base}: bandwidth vs array length, one line per ISA (1 thread unless marked)')}"
                          " font ',14'\n")
            script.append("set xlabel 'elements per call (n, log scale)'\n")
            script.append(f"set ylabel {q(f'GB/s  (reads + writes: {TRAFFIC[fam]} x {esz} B per element)')}\n")
            script.append("set logscale x 2\n")
            tics = []
            n = 1
            while n <= hi * 4:
                if lo / 4 <= n <= hi * 4 and (n & (n - 1)) == 0 and (n.bit_length() - 1) % 2 == 0:
                    tics.append(f"{q(size_label(n))} {n}")
                n *= 2
            script.append(f"set xtics ({', '.join(tics)})\n")
            script.append(f"set xrange [{lo / 1.6}:{hi * 1.6}]\nset yrange [0:*]\n")
            script.append("set grid xtics ytics lc rgb '#e0e0e0' lw 1 dt 1\n")
            script.append("set key outside right top vertical Left reverse box lc rgb '#cccccc' "
                          "spacing 1.3 font ',10'\n")
            script.append("set bmargin 6\n")
            for i, (level, size) in enumerate(caches):
                x = size / (FOOTPRINT[fam] * esz)
                if lo <= x <= hi:
                    script.append(f"set arrow {i + 1} from {x}, graph 0 to {x}, graph 1 nohead "
                                  "lc rgb '#999999' dt 3 lw 1\n")
                    script.append(f"set label {i + 1} {q(f'L{level} {bytes_label(size)}')} at {x}, graph 0.97 "
                                  "right offset -0.5,0 font ',9' tc rgb '#777777'\n")
            script.append(footer(ctx, f"Dotted verticals: working set ({FOOTPRINT[fam]} array(s)) = cache size. "
                                      "Medians of the repetitions."))
            plots = [f"DAT index {i} using 1:2 with {w} {style} title {q(t)}"
                     for i, (t, style, w, _) in enumerate(lines)]
            script.append("plot " + ", \\\n     ".join(plots) + "\n")
            pl.run(f"kernel_{fam}_{dt}", "".join(script), dat)


# ---------------------------------------------------------------------------
# (b) peer bar charts


def bar_chart(pl, stem, title, ylabel, cats, bars, ctx, logy=False, note="", fmt=None):
    """cats: x labels; bars: [(title, colour, [value or None per cat])]."""
    bars = [b for b in bars if any(b[2])]
    nb = len(bars)
    vals = [v for _, _, vs in bars for v in vs if v]
    if not vals:
        return
    rows = []
    for i, _ in enumerate(cats):
        cells = [f"{vs[i]:.6g}" if vs[i] else "?" for _, _, vs in bars]
        labels = [q(fmt(vs[i])) if vs[i] else '""' for _, _, vs in bars]
        rows.append(f"{i} " + " ".join(cells) + " " + " ".join(labels))
    dat = "\n".join(rows) + "\n"
    gap = 1
    width = 1.0 / (nb + gap)
    s = [f"set title {q(title)} font ',14'\n", f"set ylabel {q(ylabel)}\n",
         "set style data histograms\n", f"set style histogram clustered gap {gap}\n",
         "set style fill solid 0.9 border rgb '#404040'\n", "set datafile missing '?'\n",
         "set grid ytics lc rgb '#e0e0e0'\n",
         "set key top left Left reverse box lc rgb '#cccccc' opaque font ',10' spacing 1.2\n",
         f"set xrange [-0.6:{len(cats) - 0.4}]\n", "set bmargin 7\n",
         "set xtics (" + ", ".join(f"{q(c)} {i}" for i, c in enumerate(cats)) + ") nomirror font ',10'\n"]
    if logy:
        lo, hi = min(vals), max(vals)
        s.append(f"set logscale y\nset yrange [{lo / 3}:{hi * 12}]\n")
    else:
        s.append(f"set yrange [0:{max(vals) * 1.3}]\n")
    s.append(footer(ctx, note))
    plots = []
    for j, (t, color, _) in enumerate(bars):
        plots.append(f"DAT using {j + 2} title {q(t)} lc rgb '{color}'")
    for j in range(nb):
        off = (j - (nb - 1) / 2) * width
        plots.append(f"DAT using ($1 + {off:.4f}):{j + 2}:{nb + j + 2} with labels "
                     "offset 0,0.6 font ',8' notitle")
    s.append("plot " + ", \\\n     ".join(plots) + "\n")
    pl.run(stem, "".join(s), dat)


def peer_note():
    c = PEER_CTX
    if not c:
        return "Peers: bench/peers.py."
    vers = ", ".join(f"{k.split('_')[0]} {c[k]}" for k in ("numpy_version", "torch_version") if k in c)
    load_avg = " ".join(f"{x:.2f}" for x in c.get("load_avg", []))
    hp = ", NumPy huge pages off" if c.get("numpy_hugepages") == "off" else ""
    return f"Peers (bench/peers.py): {vers}{hp}, load average {load_avg or '?'}, {c.get('date', '')[:16]}."


def best_isa(data, base, threads, n):
    for isa in reversed(ISAS):
        v = data.get((f"{base}/{isa}", threads, n))
        if v and v["bps"]:
            return isa, v
    return None, None


def peer_kernel_charts(pl, ctx, data):
    sizes = sorted({(n, t) for (nm, t, n) in data if nm.startswith(("peer_numpy/", "peer_torch/"))
                    and nm.split("/")[1].rsplit("_", 1)[0] in KERNELS})
    for n, t in sizes:
        cats, g, npv, tv, used = [], [], [], [], set()
        for fam in KERNELS:
            for dt in DTYPES:
                base = f"{fam}_{dt}"
                pn = data.get((f"peer_numpy/{base}", t, n))
                pt = data.get((f"peer_torch/{base}", t, n))
                if not pn and not pt:
                    continue
                isa, gv = best_isa(data, base, t, n)
                if isa:
                    used.add(isa)
                cats.append(f"{fam}\n{dt}")
                g.append(gv["bps"] / 1e9 if gv else None)
                npv.append(pn["bps"] / 1e9 if pn else None)
                tv.append(pt["bps"] / 1e9 if pt else None)
        if not cats:
            continue
        bars = [(f"gradckpt ({'/'.join(sorted(used)) or 'not in RESULTS.json'})", GRADCKPT_COLOR, g),
                ("NumPy", NUMPY_COLOR, npv)]
        if any(tv):
            bars.append(("PyTorch (CPU)", TORCH_COLOR, tv))
        thr = "1 thread" if t == 1 else f"{t} threads"
        bar_chart(pl, f"peers_kernels_{n}_{t}t",
                  f"Kernels vs NumPy and PyTorch at n = {size_label(n)} elements, {thr} (higher is better)",
                  "GB/s (same bytes counted for every bar)", cats, bars, ctx,
                  note=peer_note() + " Medians.",
                  fmt=lambda v: f"{v:.0f}" if v >= 10 else f"{v:.1f}")


def peer_checkpointer_charts(pl, ctx, data):
    keys = {}
    for (nm, t, n) in data:
        parts = nm.split("/")
        if nm.startswith("peer_") and len(parts) == 4 and parts[2] in MODEL_ORDER and parts[3].startswith("k"):
            keys.setdefault((parts[3], t), set()).add((parts[2], n))
    for (k, t), models in sorted(keys.items(), key=lambda kv: (int(kv[0][0][1:]), kv[0][1])):
        models = sorted(models, key=lambda mn: MODEL_ORDER.index(mn[0]))
        cats = []
        for m, n in models:
            ntensors = next((v["label"] for (nm, tt, nn), v in data.items()
                             if nm == f"flush/{m}/{k}/none" and nn == n), "")
            cats.append(f"{m}\n{n / 1e6:.1f} M params" + (f", {ntensors}" if ntensors else ""))
        bars = [("gradckpt (flush, no checksum)", GRADCKPT_COLOR,
                 [(data.get((f"flush/{m}/{k}/none", t, n)) or {}).get("secs") for m, n in models])]
        for prefix, title, color in FLUSH_VARIANTS:
            vals = [(data.get((f"{prefix}/{m}/{k}", t, n)) or {}).get("secs") for m, n in models]
            if any(vals):
                bars.append((title, color, vals))
        bars = [(tt, c, [v * 1e3 if v else None for v in vs]) for tt, c, vs in bars]
        thr = "1 thread" if t == 1 else f"{t} threads"
        bar_chart(pl, f"peers_checkpointer_{k}_{t}t",
                  f"Accumulate {k[1:]} micro-batches + mean + global-norm clip (f32), {thr}: time per step "
                  "(lower is better)",
                  "ms per step (log scale)", cats, bars, ctx, logy=True,
                  note="gradckpt: flush/<model>/" + k + "/none (also writes a checkpoint). " + peer_note() +
                       " Medians.",
                  fmt=lambda v: f"{v:.3g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="gradckpt-bench JSON (--benchmark_out_format=json)")
    ap.add_argument("outdir", help="directory for the PNG files (created)")
    ap.add_argument("--peers", action="append", default=[], metavar="PEERS.json",
                    help="bench/peers.py output (repeatable)")
    ap.add_argument("--keep-scripts", action="store_true",
                    help="keep the gnuplot scripts and data in OUTDIR/gnuplot/")
    args = ap.parse_args()
    if shutil.which("gnuplot") is None:
        sys.exit("plot.py: gnuplot not found (Debian: apt-get install gnuplot-nox)")
    ctx, data = load([args.results] + args.peers)
    if not data:
        sys.exit(f"plot.py: {args.results}: no benchmark results")
    os.makedirs(args.outdir, exist_ok=True)
    pl = Plotter(args.outdir, args.keep_scripts)
    try:
        kernel_plots(pl, ctx, data)
        peer_kernel_charts(pl, ctx, data)
        peer_checkpointer_charts(pl, ctx, data)
    finally:
        pl.close()
    if not pl.written:
        print("plot.py: nothing to plot (no kernel families or peer results in the input)")
    for f in pl.written:
        print(f)


if __name__ == "__main__":
    main()
