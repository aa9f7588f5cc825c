#!/usr/bin/env python3
"""The store's compression beside its peers on the same snapshots, in one run.

    python3 bench/store_peers.py V1.safetensors V2.safetensors ... [--reps 3] [--dir /dev/shm]

The files are consecutive versions of one training state (e.g. the demo's,
restored with `gradckpt store restore`). For each version after the first
(its delta against the one before) and for each version whole it prints,
as a fraction of the logical bytes:

  entropy   order-0 entropy of the byte planes (XOR with the previous
            version / the values): the limit of a per-plane order-0 coder;
  gradckpt  the store's delta file (Store.save after the previous version;
            a full version: the plain safetensors file), save and restore
            GB/s of logical data;
  zipnn     ZipNN (pip zipnn; Huffman over byte planes) on the same bytes
            (the XOR delta as float32 / the values), 1 thread;
  zstd-1    zstd level 1 alone (pip zstandard) on the same bytes.

Sizes are exact; speeds are single measurements of a loaded machine unless
--reps is raised (the best of the repetitions is printed). The store runs
in --dir (default /dev/shm: CPU cost, not a disk's).
"""
import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import safetensors.numpy
import zipnn
import zstandard

import gradckpt


def planes_entropy(raw: np.ndarray, esz: int) -> float:
    """Order-0 entropy, in bits, of the esz byte planes of raw (uint8, whole elements)."""
    bits = 0.0
    v = raw.reshape(-1, esz)
    for k in range(esz):
        counts = np.bincount(v[:, k], minlength=256).astype(np.float64)
        p = counts[counts > 0] / v.shape[0]
        bits += float(-(p * np.log2(p)).sum()) * v.shape[0]
    return bits


def best(fn, reps):
    t = float("inf")
    out = None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def peers(name, chunks, logical, reps):
    """zipnn and zstd-1 on the byte strings `chunks`: (ratio, comp GB/s, dec GB/s) each."""
    z = zipnn.ZipNN(bytearray_dtype="float32", threads=1)
    zc = zstandard.ZstdCompressor(level=1, threads=0)
    zd = zstandard.ZstdDecompressor()
    res = {}
    # ZipNN 0.5.4 round-trips a bytearray but not a bytes object of the same
    # content: it gets a fresh bytearray (the copy is timed, ~1 % of its time)
    for label, comp, dec in (("zipnn", lambda c: z.compress(bytearray(c)), z.decompress),
                             ("zstd-1", zc.compress, zd.decompress)):
        tc, packed = best(lambda: [comp(c) for c in chunks], reps)
        td, back = best(lambda: [dec(p) for p in packed], reps)
        assert all(bytes(b) == c for b, c in zip(back, chunks)), f"{label} round trip ({name})"
        res[label] = (sum(len(p) for p in packed) / logical, logical / tc / 1e9, logical / td / 1e9)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--dir", default="/dev/shm")
    a = ap.parse_args()
    vs = [safetensors.numpy.load_file(f) for f in a.files]
    root = tempfile.mkdtemp(prefix="gck_store_peers.", dir=a.dir)
    rows = []
    try:
        for i, cur in enumerate(vs):
            logical = sum(t.nbytes for t in cur.values())
            full_raw = [np.ascontiguousarray(t).view(np.uint8).reshape(-1) for t in cur.values()]
            cases = [("full", i, full_raw)]
            if i > 0:
                prev = vs[i - 1]
                # XOR with the previous value where the layout is the same; a new or resized tensor whole (as the store)
                xr = [(np.ascontiguousarray(t).view(np.uint8) ^ np.ascontiguousarray(prev[k]).view(np.uint8)).reshape(-1)
                      if k in prev and prev[k].shape == t.shape and prev[k].dtype == t.dtype else
                      np.ascontiguousarray(t).view(np.uint8).reshape(-1) for k, t in cur.items()]
                cases.append(("delta", i, xr))
            for kind, _, raws in cases:
                h = sum(planes_entropy(r, cur_t.dtype.itemsize) for r, cur_t in zip(raws, cur.values())) / 8 / logical
                # the store: a fresh store per case, the previous version saved first (untimed)
                d = os.path.join(root, f"{kind}{i}")
                with gradckpt.Store(d, max_checkpoints=4, keep_every_n=0 if kind == "delta" else 1,
                                    delta_threshold_bytes=0) as st:
                    if kind == "delta":
                        st.save(vs[i - 1], i)
                    ts, v = best(lambda: st.save(cur, i + 1), 1)
                    disk = st.info(v)["disk_bytes"]
                with gradckpt.Store(d) as st:  # reopened: nothing of v in memory
                    tr, _ = best(lambda: st.restore(v), a.reps)
                # one byte string (every tensor of these states is f32): ZipNN mangles some tiny inputs
                p = peers(f"{kind} {a.files[i]}", [b"".join(r.tobytes() for r in raws)], logical, a.reps)
                rows.append((f"{kind} {os.path.basename(a.files[i]).split('.')[0]}", h, disk / logical, logical / ts / 1e9, logical / tr / 1e9, p))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{'case':<10} {'entropy':>8} {'gradckpt':>9} {'÷entropy':>9} {'save':>6} {'restore':>8}"
          f" {'zipnn':>7} {'comp':>6} {'dec':>6} {'zstd-1':>7} {'comp':>6} {'dec':>6}   (ratios of logical bytes; GB/s)")
    for name, h, g, gs, gr, p in rows:
        zn, zs = p["zipnn"], p["zstd-1"]
        print(f"{name:<10} {h:8.4f} {g:9.4f} {g / h:9.3f} {gs:6.2f} {gr:8.2f} {zn[0]:7.4f} {zn[1]:6.2f} {zn[2]:6.2f}"
              f" {zs[0]:7.4f} {zs[1]:6.2f} {zs[2]:6.2f}")


if __name__ == "__main__":
    main()
