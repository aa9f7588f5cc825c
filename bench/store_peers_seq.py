#!/usr/bin/env python3
"""The store benchmark's sequences through gradckpt-bench and ZipNN, interleaved, into one JSON.

    python3 bench/store_peers_seq.py --bench B --out store.json [--reps 3] [--seqs adamw,sgd,finetune,bf16]
    python3 bench/ratios.py store.json       # the "Store" table

Each repetition runs gradckpt-bench's store benchmarks (`store_*` and the
zstd-alone peer `zstd_*`, on the sequences asked for) in a child process,
then ZipNN (pip zipnn) on the same bytes, so the two alternate and see the
same machine. The first repetition sets GCK_BENCH_STORE_EXPORT, so the
benchmark writes each sequence's versions, as it generated them, to
safetensors files; ZipNN reads those: the XOR of version k with version k-1
tensor by tensor for k = 2..9 (the versions store_save writes as deltas)
and each version's values for k = 1..9 (those store_full_save writes),
compressed tensor by tensor with bytearray_dtype float32 or bfloat16, at
each --threads (ZipNN's own threads). Every round trip is checked.

Output: google-benchmark JSON (the first run's context, every repetition's
`iteration` entries, repetition_index set), with the peer entries named
`peer_zipnn_{compress,decompress}/<seq>/<delta|full>/<t>t/<elements>`:
real_time and cpu_time per version (ns), bytes_per_second of logical bytes,
disk_ratio (compressed bytes ÷ logical) and entropy_ratio (order-0 entropy
of the same byte planes, computed here: it must equal the C counter).
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import zipnn

SEQS = ("adamw", "sgd", "finetune", "bf16")
NVERSIONS = 10
DTYPES = {"F32": (np.uint8, 4, "float32"), "BF16": (np.uint8, 2, "bfloat16")}


def read_safetensors(path):
    """[(name, dtype, raw uint8 array)] in file order (the store's order)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    items = sorted(((k, v) for k, v in head.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"][0])
    return [(k, v["dtype"], np.frombuffer(data, np.uint8, v["data_offsets"][1] - v["data_offsets"][0],
                                          v["data_offsets"][0])) for k, v in items]


def planes_entropy(raw, esz):
    """Order-0 entropy, in bytes, of the esz byte planes of raw (uint8, whole elements)."""
    bits = 0.0
    v = raw.reshape(-1, esz)
    for k in range(esz):
        c = np.bincount(v[:, k], minlength=256).astype(np.float64)
        p = c[c > 0] / v.shape[0]
        bits += float(-(p * np.log2(p)).sum()) * v.shape[0]
    return bits / 8


def zipnn_seq(seq, d, threads, rep):
    """Peer entries for one sequence: ZipNN on the delta and full bytes."""
    vs = [read_safetensors(os.path.join(d, seq, f"v{k}.safetensors")) for k in range(NVERSIONS)]
    dt = vs[0][0][1]
    esz, zdt = DTYPES[dt][1], DTYPES[dt][2]
    logical = sum(len(r) for _, _, r in vs[0])
    elems = logical // esz
    out = []
    for kind, first in (("delta", 2), ("full", 1)):
        inputs = []  # per version: the tensors' byte strings
        h = 0.0
        for k in range(first, NVERSIONS):
            ts = [(r ^ vs[k - 1][j][2]) if kind == "delta" else r for j, (_, _, r) in enumerate(vs[k])]
            h += sum(planes_entropy(t, esz) for t in ts) / logical
            inputs.append([bytearray(t.tobytes()) for t in ts])
        h /= len(inputs)
        for t in threads:
            z = zipnn.ZipNN(bytearray_dtype=zdt, threads=t)
            packed, ct, cc, dtm, dc = [], [], [], [], []
            for ver in inputs:
                # ZipNN 0.5.4 round-trips a bytearray, not a bytes object: a fresh one per call
                c0, w0 = time.process_time(), time.perf_counter()
                p = [z.compress(bytearray(b)) for b in ver]
                ct.append(time.perf_counter() - w0), cc.append(time.process_time() - c0)
                c0, w0 = time.process_time(), time.perf_counter()
                back = [z.decompress(x) for x in p]
                dtm.append(time.perf_counter() - w0), dc.append(time.process_time() - c0)
                if any(bytes(b) != bytes(a) for a, b in zip(ver, back)):
                    sys.exit(f"store_peers_seq: ZipNN round trip failed ({seq} {kind})")
                packed.append(sum(len(x) for x in p))
            disk = sum(packed) / (logical * len(inputs))
            for op, wall, cpu in (("compress", ct, cc), ("decompress", dtm, dc)):
                n = len(wall)
                entry = {
                    "name": f"peer_zipnn_{op}/{seq}/{kind}/{t}t/{elems}",
                    "run_name": f"peer_zipnn_{op}/{seq}/{kind}/{t}t/{elems}",
                    "run_type": "iteration", "repetitions": 0, "repetition_index": rep, "threads": 1,
                    "iterations": n, "real_time": sum(wall) / n * 1e9, "cpu_time": sum(cpu) / n * 1e9,
                    "time_unit": "ns", "bytes_per_second": logical * n / sum(wall), "elems": elems,
                    "logical_bytes": logical, "entropy_ratio": h,
                    "label": f"zipnn {zipnn.__version__ if hasattr(zipnn, '__version__') else ''} {zdt}".strip(),
                }
                if op == "compress":
                    entry["disk_ratio"] = disk
                out.append(entry)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True, help="gradckpt-bench")
    ap.add_argument("--out", required=True, help="the JSON to write")
    ap.add_argument("--reps", type=int, default=3, help="repetitions, C then peers each time (default 3)")
    ap.add_argument("--seqs", default=",".join(SEQS))
    ap.add_argument("--threads", default="1,2", help="ZipNN thread counts (default 1,2)")
    ap.add_argument("--min-time", default="0.05", help="gradckpt-bench --benchmark_min_time (restores)")
    # Not /dev/shm: 2.5 GB of exported versions there made the store's own
    # tmpfs writes (store_save writes on /dev/shm) 9x slower on the Intel VM
    # (a 52 MB delta file 140 ms instead of 15 ms), so the save speeds
    # measured the exports, not the store. ZipNN reads them from the page cache.
    ap.add_argument("--dir", default=tempfile.gettempdir(),
                    help="where the versions are exported (default: the temporary directory, not /dev/shm)")
    a = ap.parse_args()
    seqs = [s for s in a.seqs.split(",") if s]
    bad = [s for s in seqs if s not in SEQS]
    if bad:
        sys.exit(f"store_peers_seq: unknown sequence(s) {bad}; known: {SEQS}")
    threads = [int(t) for t in a.threads.split(",")]
    flt = f"^(store_(save|restore|restore_into|full_save|full_restore|plain_save)|zstd_(compress|decompress))/({'|'.join(seqs)})/"
    root = tempfile.mkdtemp(prefix="gck_store_seq.", dir=a.dir)
    export = os.path.join(root, "versions")
    merged = None
    try:
        for rep in range(a.reps):
            js = os.path.join(root, f"c{rep}.json")
            env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "passive"))
            if rep == 0:
                env["GCK_BENCH_STORE_EXPORT"] = export
            cmd = [a.bench, f"--benchmark_filter={flt}", f"--benchmark_min_time={a.min_time}",
                   f"--benchmark_out={js}", "--benchmark_out_format=json"]
            print(f"[rep {rep + 1}/{a.reps}] {' '.join(cmd)}", file=sys.stderr, flush=True)
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
            with open(js) as f:
                run = json.load(f)
            for b in run["benchmarks"]:
                b["repetition_index"] = rep
            if merged is None:
                merged = run
            else:
                merged["benchmarks"] += run["benchmarks"]
            print(f"[rep {rep + 1}/{a.reps}] ZipNN on {', '.join(seqs)}", file=sys.stderr, flush=True)
            for s in seqs:
                peer = zipnn_seq(s, export, threads, rep)
                merged["benchmarks"] += peer
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for b in merged["benchmarks"]:
        b["repetitions"] = a.reps
    merged["context"]["store_peers_seq"] = f"{a.reps} repetitions, gradckpt-bench then ZipNN each time"
    with open(a.out, "w") as f:
        json.dump(merged, f, indent=1)
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
