#!/usr/bin/env python3
"""gradckpt files open in the Python `safetensors` package, and its files open in gradckpt.

Usage: test_interop.py INTEROP_TOOL   (run by CTest). Needs numpy, safetensors and xxhash
(scripts/setup.sh installs them with pip). Prints 'N passed, N failed'."""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import xxhash
from safetensors import safe_open
from safetensors.numpy import save_file

TOOL = sys.argv[1]
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def ours_open_in_theirs(tmp):
    path = os.path.join(tmp, "ours.safetensors")
    subprocess.run([TOOL, "write", path], check=True)
    # numpy has no bfloat16 or 8-bit floats: read the others by name
    with safe_open(path, framework="np") as f:
        t = {k: f.get_tensor(k) for k in f.keys() if k not in ("brain", "e5m2", "e4m3")}
    check("f32 values", np.array_equal(t["layer.weight"], np.array([[0.5, -1.0, 2.25], [3.0, -0.0, 1e-8]], np.float32)))
    check("f32 shape", t["layer.weight"].shape == (2, 3))
    check("f64 values", np.array_equal(t["layer.bias"], np.array([1 / 3, -2e300, 4.0])))
    check("i64", np.array_equal(t["i64"], np.array([-5, 1 << 40], np.int64)))
    check("i32", np.array_equal(t["i32"], np.array([7, -8, 9], np.int32)))
    check("i16", np.array_equal(t["i16"], np.array([-300, 300], np.int16)))
    check("i8", np.array_equal(t["i8"], np.array([-1, 2, -3], np.int8)))
    check("u8", np.array_equal(t["u8"], np.array([0, 1, 254, 255], np.uint8)))
    check("bool", np.array_equal(t["mask"], np.array([True, False, True])))
    check("f16", np.array_equal(t["half"], np.array([1.0, -2.0], np.float16)))
    check("u16", np.array_equal(t["u16"], np.array([1, 65535], np.uint16)))
    check("u32", np.array_equal(t["u32"], np.array([7, 4000000000], np.uint32)))
    check("u64", np.array_equal(t["u64"], np.array([3, 18000000000000000000], np.uint64)))
    check("optimizer blob", bytes(t["__optimizer__/layer.weight"]) == b"moments")
    with safe_open(path, framework="np") as f:
        md = f.metadata()
        check("bf16 listed", "brain" in f.keys())
    check("user metadata", md.get("run") == "interop")
    check("our step", md.get("gradckpt.step") == "1234")
    check("our timestamp", md.get("gradckpt.timestamp") == "1700000000")
    check("loss cid", md.get("gradckpt.loss_cid") == "xxh3:0123456789abcdef")
    # the header as the reference writes it: 8-byte aligned, space padded, data after it
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    check("header multiple of 8", n % 8 == 0)
    hdr = json.loads(raw[8:8 + n])
    check("metadata first", next(iter(hdr)) == "__metadata__")
    # every tensor (optimizer blobs too) has its content id: "xxh3:" and the
    # 16 hex digits of XXH3-64 over its stored little-endian bytes; no other
    names = [k for k in hdr if k != "__metadata__"]
    cids = {k[len("gradckpt.cid."):]: v for k, v in md.items() if k.startswith("gradckpt.cid.")}
    check("a content id per tensor", sorted(cids) == sorted(names), f"{sorted(cids)} vs {sorted(names)}")
    for k in names:
        lo, hi = hdr[k]["data_offsets"]
        want = "xxh3:%016x" % xxhash.xxh3_64_intdigest(raw[8 + n + lo:8 + n + hi])
        check(f"content id of {k}", cids.get(k) == want, f"{cids.get(k)} vs {want}")
    check("f8 dtypes", hdr["e5m2"]["dtype"] == "F8_E5M2" and hdr["e4m3"]["dtype"] == "F8_E4M3", str(hdr.get("e5m2")))
    # the tensor order is the reference writer's for the same tensors (dtype, then name)
    mine = [k for k in hdr if k != "__metadata__"]
    theirs_path = os.path.join(tmp, "order.safetensors")
    save_file({k: t[k] for k in mine if k in t}, theirs_path)
    raw2 = open(theirs_path, "rb").read()
    (n2,) = struct.unpack("<Q", raw2[:8])
    theirs = [k for k in json.loads(raw2[8:8 + n2]) if k != "__metadata__"]
    check("tensor order as the reference's", [k for k in mine if k in t] == theirs, f"{mine} vs {theirs}")


def theirs_open_in_ours(tmp):
    path = os.path.join(tmp, "theirs.safetensors")
    tensors = {
        "emb.weight": np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5,
        "scale": np.array([2.5], np.float64),
        "steps": np.array([[1, -2], [3, -4]], np.int64),
        "flags": np.array([True, False]),
        "h": np.array([0.5, -8.0], np.float16),
        "scalar": np.array(3, np.int32),
        "u16": np.array([1, 65535], np.uint16),
        "u32": np.array([[4000000000]], np.uint32),
        "u64": np.array([2**64 - 1], np.uint64),
    }
    save_file(tensors, path, metadata={"format": "np", "note": "from python"})
    out = subprocess.run([TOOL, "dump", path], check=False, capture_output=True, text=True)
    check("loads", out.returncode == 0, out.stderr)
    lines = out.stdout.splitlines()
    got = {l.split()[1]: l.split() for l in lines if l.startswith("tensor ")}
    names = {"emb.weight": "F32", "scale": "F64", "steps": "I64", "flags": "BOOL", "h": "F16", "scalar": "I32",
             "u16": "U16", "u32": "U32", "u64": "U64"}
    for name, dt in names.items():
        arr = tensors[name]
        ok = name in got and got[name][2] == dt
        check(f"{name} dtype", ok, str(got.get(name)))
        if ok:
            shape = "[" + ",".join(str(d) for d in arr.shape) + "]"
            check(f"{name} shape", got[name][3] == shape, got[name][3])
            want = arr.astype(arr.dtype.newbyteorder("<")).tobytes().hex()
            check(f"{name} bytes", (got[name][4] if len(got[name]) > 4 else "") == want)
    check("metadata", "meta format=np" in lines and "meta note=from python" in lines, str(lines))
    check("step 0", "step 0" in lines)


with tempfile.TemporaryDirectory() as tmp:
    ours_open_in_theirs(tmp)
    theirs_open_in_ours(tmp)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
