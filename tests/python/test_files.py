"""Files: save_file/load_file against the safetensors package both ways (NumPy and torch), Snapshot,
Store, zero-copy views and their lifetimes, save_state/load_state bit for bit, and the errors."""
import gc
import json
import os

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch
from torch import nn

import gradckpt
import gradckpt.torch as gt
from conftest import bits

NP_DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8, np.bool_,
             np.uint16, np.uint32, np.uint64]


def sample_arrays(rng):
    out = {}
    for i, dt in enumerate(NP_DTYPES):
        shape = [(3, 4), (7,), (), (2, 0, 3), (1, 1, 5)][i % 5]
        out[f"t{i}_{np.dtype(dt).name}"] = np.asarray((rng.standard_normal(shape) * 50).astype(dt))
    out["bf16"] = rng.standard_normal((4, 3)).astype(ml_dtypes.bfloat16)
    return out


def same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def test_numpy_files_both_ways_with_safetensors(tmp_path, rng):
    arrays = sample_arrays(rng)
    meta = {"epoch": "3", "note": "ünïcode"}
    ours = str(tmp_path / "ours.safetensors")
    gradckpt.save_file(arrays, ours, metadata=meta)
    theirs = safetensors.numpy.load_file(ours)
    assert set(theirs) == set(arrays)
    for k in arrays:
        same(theirs[k], arrays[k])
    with safetensors.safe_open(ours, "np") as f:
        got = f.metadata()
    assert {k: got[k] for k in meta} == meta
    # their file, read by us (mmap views and read copies)
    path = str(tmp_path / "theirs.safetensors")
    safetensors.numpy.save_file({k: v for k, v in arrays.items()}, path, metadata=meta)
    for mmap in (True, False):
        back = gradckpt.load_file(path, mmap=mmap)
        for k in arrays:
            same(back[k], arrays[k])
            assert back[k].flags.writeable == (not mmap)
    snap = gradckpt.Snapshot.load(path)
    assert snap.metadata == meta and snap.step == 0


def test_ml_dtypes_float8_round_trip(tmp_path, rng):
    a = {"e4m3": rng.standard_normal(9).astype(ml_dtypes.float8_e4m3fn),
         "e5m2": rng.standard_normal(5).astype(ml_dtypes.float8_e5m2)}
    path = str(tmp_path / "f8.safetensors")
    gradckpt.save_file(a, path)
    back = gradckpt.load_file(path)
    for k in a:
        same(back[k], a[k])
    t = gt.load_file(path)
    assert t["e4m3"].dtype == torch.float8_e4m3fn and t["e5m2"].dtype == torch.float8_e5m2


def raw(t):
    return t.reshape(-1).view(torch.uint8)


def test_torch_files_both_ways_with_safetensors(tmp_path):
    g = torch.Generator().manual_seed(0)
    ts = {"w": torch.randn(5, 6, generator=g), "b16": torch.randn(7, generator=g).bfloat16(),
          "h": torch.randn(3, generator=g).half(), "i": torch.arange(10), "flag": torch.tensor([True, False]),
          "s": torch.tensor(2.5, dtype=torch.float64), "f8": torch.randn(4, generator=g).to(torch.float8_e5m2)}
    ours = str(tmp_path / "ours.safetensors")
    gt.save_file(ts, ours, metadata={"k": "v"})
    theirs = safetensors.torch.load_file(ours)
    for k in ts:
        assert theirs[k].dtype == ts[k].dtype and torch.equal(raw(theirs[k]), raw(ts[k]))
    path = str(tmp_path / "theirs.safetensors")
    safetensors.torch.save_file(ts, path)
    back = gt.load_file(path)
    for k in ts:
        assert back[k].dtype == ts[k].dtype and back[k].shape == ts[k].shape
        assert torch.equal(raw(back[k]), raw(ts[k]))
    back["w"].add_(1)  # writable, its own memory


def test_load_views_are_zero_copy_and_outlive_everything(tmp_path, rng):
    a = rng.standard_normal(1 << 16).astype(np.float32)
    path = str(tmp_path / "x.safetensors")
    gradckpt.save_file({"a": a}, path)
    snap = gradckpt.Snapshot.load(path, mmap=False)
    v1, v2 = snap["a"], snap["a"]
    assert np.shares_memory(v1, v2) and not v1.flags.writeable
    t = snap.torch("a")
    assert t.data_ptr() == v1.ctypes.data
    del snap
    gc.collect()
    same(v1, a)
    assert torch.equal(t, torch.from_numpy(a))
    views = gradckpt.load_file(path)  # mmap
    gc.collect()
    same(views["a"], a)
    with pytest.raises(gradckpt.InvalidArgumentError, match="mmap=True"):
        gradckpt.Snapshot.load(path).torch("a")


def test_save_borrows_instead_of_copying(tmp_path, rng):
    a = rng.standard_normal(1000).astype(np.float32)
    snap = gradckpt.Snapshot(7)
    snap.add("a", a, copy=False)
    assert snap["a"].ctypes.data == a.ctypes.data  # the snapshot's tensor is the array itself
    snap.add("b", a)  # copy
    assert snap["b"].ctypes.data != a.ctypes.data
    del a
    gc.collect()  # the snapshot keeps the borrowed array alive
    snap.save(str(tmp_path / "s.safetensors"))
    back = gradckpt.Snapshot.load(str(tmp_path / "s.safetensors"))
    same(back["a"], back["b"])
    assert back.step == 7


def test_snapshot_fields_blobs_and_load_into(tmp_path):
    s = gradckpt.Snapshot(42)
    s.add("w", np.arange(6, dtype=np.float32).reshape(2, 3))
    s.set_metadata("lr", "0.001")
    s.set_optimizer_state("w", b"\x01\x02\x03")
    s.loss_cid = "xxh3:0123456789abcdef"
    s.timestamp = 1700000000
    path = str(tmp_path / "s.safetensors")
    s.save(path)
    b = gradckpt.Snapshot.load(path)
    assert (b.step, b.timestamp, b.loss_cid, b.metadata) == (42, 1700000000, "xxh3:0123456789abcdef",
                                                              {"lr": "0.001"})
    assert b.optimizer_params == ["w"] and bytes(b.optimizer_state("w")) == b"\x01\x02\x03"
    assert b.names() == ["w"] and "w" in b and len(b) == 1
    info = b.tensor_info("w")
    assert info["dtype"] == "float32" and info["shape"] == (2, 3) and info["content_id"].startswith("xxh3:")
    dst = np.zeros((2, 3), np.float32)
    blob = np.zeros(3, np.uint8)
    fields = gradckpt.Snapshot.load_into(path, {"w": dst, "__optimizer__/w": blob})
    assert fields.step == 42 and len(fields) == 0
    assert (dst == np.arange(6).reshape(2, 3)).all() and bytes(blob) == b"\x01\x02\x03"
    with pytest.raises(gradckpt.DimensionMismatchError):
        gradckpt.Snapshot.load_into(path, {"w": np.zeros(5, np.float32)})
    with pytest.raises(gradckpt.NotFoundError):
        gradckpt.Snapshot.load_into(path, {"nope": np.zeros(5, np.float32)})


def test_file_errors(tmp_path):
    path = str(tmp_path / "bad.safetensors")
    with open(path, "wb") as f:
        f.write(b"\xff" * 64)
    with pytest.raises(gradckpt.CorruptError):
        gradckpt.load_file(path)
    with pytest.raises(gradckpt.IOError) as e:
        gradckpt.load_file(str(tmp_path / "missing.safetensors"))
    assert isinstance(e.value, OSError) and e.value.status == 7
    with pytest.raises(gradckpt.IOError):
        gradckpt.save_file({"a": np.zeros(3)}, str(tmp_path / "no" / "dir" / "x.safetensors"))
    with pytest.raises(gradckpt.InvalidArgumentError):
        gradckpt.save_file({"a": np.zeros(3)}, path, metadata={"gradckpt.step": "1"})
    s = gradckpt.Snapshot()
    s.add("a", np.zeros(2))
    with pytest.raises(gradckpt.InvalidArgumentError):
        s.add("a", np.zeros(2))
    with pytest.raises(gradckpt.InvalidArgumentError, match="C-contiguous"):
        s.add("b", np.zeros((4, 4))[:, 1])
    assert s.names() == ["a"]
    with pytest.raises(gradckpt.NotFoundError) as e:
        s["zz"]
    assert isinstance(e.value, KeyError) and str(e.value) == "the snapshot has no tensor 'zz'"
    # the old file is untouched by a failed save
    with open(path, "rb") as f:
        assert f.read() == b"\xff" * 64


# ---- Store -----------------------------------------------------------------


def test_store_versions_deltas_tags_restore(tmp_path, rng):
    d = str(tmp_path / "store")
    w = rng.standard_normal(300000).astype(np.float32)
    with gradckpt.Store(d, max_checkpoints=3, keep_every_n=0, delta_threshold_bytes=1000) as st:
        vs = []
        for step in range(5):
            w[:100] += 1
            vs.append(st.save({"w": w, "frozen": np.ones(1000)}, step, optimizer_state={"w": b"m" * step},
                              metadata={"s": str(step)}, tags=("first",) if step == 0 else ()))
        assert vs == [1, 2, 3, 4, 5]
        assert st.versions == [1, 4, 5]  # the tagged first one stays
        assert st.latest == 5
        info = st.info(5)
        assert info["is_delta"] and info["delta_from"] == 4 and info["step"] == 4
        assert info["disk_bytes"] < 0.2 * info["full_bytes"]
        snap = st.restore("latest")
        same(snap["w"], w)
        assert snap.metadata == {"s": "4"} and bytes(snap.optimizer_state("w")) == b"mmmm"
        first = st.restore("first")
        assert first.step == 0
        st.tag(4, "best")
        assert st.restore("best").step == 3
        st.untag(4, "best")
        with pytest.raises(gradckpt.NotFoundError):
            st.restore("best")
        with pytest.raises(gradckpt.NotFoundError):
            st.restore(2)
        dst = np.zeros_like(w)
        fields = st.restore_into(5, {"w": dst})
        same(dst, w)
        assert fields.step == 4
        assert st.verify() == 3
        stats = st.stats()
        assert stats["versions"] == 3 and stats["disk_bytes"] < stats["logical_bytes"]
        assert st.config()["max_checkpoints"] == 3
        with pytest.raises(gradckpt.IOError, match="open"):
            gradckpt.Store(d)  # one handle at a time
    assert st.closed
    with pytest.raises(gradckpt.InvalidArgumentError, match="closed"):
        st.versions
    with gradckpt.Store(d) as st2:  # reopened: the recorded policy is kept
        assert st2.config()["max_checkpoints"] == 3 and st2.versions == [1, 4, 5]


def test_store_save_async(tmp_path, rng):
    d = str(tmp_path / "async")
    w = rng.standard_normal(100000).astype(np.float32)
    saved = []
    with gradckpt.Store(d, max_checkpoints=4, keep_every_n=0, delta_threshold_bytes=1000) as st:
        for step in range(6):
            w[: 50 + step] += 1
            st.save_async({"w": w}, step, metadata={"s": str(step)}, tags=("first",) if step == 0 else ())
            saved.append(w.copy())
            w[:] = -7.0  # the store copied the arrays: changing them at once changes nothing saved
            w[:] = saved[-1]
        assert st.wait() == 6
        assert st.latest == 6  # every query waits for the save in flight
        for v in st.versions:
            same(st.restore(v)["w"], saved[v - 1])
        assert st.verify() == len(st.versions)
    with gradckpt.Store(d) as st2:
        same(st2.restore("latest")["w"], saved[-1])
        assert st2.wait() is None  # nothing saved asynchronously by this handle


def test_store_readonly(tmp_path):
    d = str(tmp_path / "s")
    if not gradckpt._gradckpt.HAS_READONLY_STORE:
        # this build's C library has no gck_store_open_readonly: refused clearly, nothing created
        with pytest.raises(gradckpt.UnsupportedError, match="read-only store open"):
            gradckpt.Store(d, readonly=True)
        assert not os.path.exists(d)
        return
    with gradckpt.Store(d) as writer:
        writer.save({"w": np.arange(4.0)}, 1)
        with gradckpt.Store(d, readonly=True) as reader:  # beside the writer
            assert reader.versions == [1] and list(reader.restore("latest")["w"]) == [0, 1, 2, 3]
            with pytest.raises(gradckpt.InvalidArgumentError, match="read-only"):
                reader.save({"w": np.zeros(4)}, 2)
            with pytest.raises(gradckpt.InvalidArgumentError, match="read-only"):
                reader.tag(1, "x")
        assert writer.versions == [1]
    with pytest.raises(gradckpt.InvalidArgumentError):
        gradckpt.Store(d, readonly=True, max_checkpoints=3)


def test_save_state_load_state_round_trip_bit_for_bit(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 3))
    model.register_buffer("counter", torch.tensor([3], dtype=torch.int64))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.8, 0.95), weight_decay=0.1)
    for _ in range(3):
        model(torch.randn(4, 6)).square().sum().backward()
        opt.step()
        opt.zero_grad()
    with gradckpt.Store(str(tmp_path / "st")) as st:
        v = gt.save_state(st, model, opt, 3, loss=0.25, note="hi")
        torch.manual_seed(1)
        model2 = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 3))
        model2.register_buffer("counter", torch.tensor([0], dtype=torch.int64))
        opt2 = torch.optim.AdamW(model2.parameters(), lr=5.0)
        ptrs = [p.data_ptr() for p in model2.parameters()]
        r = gt.load_state(st, model2, opt2)
    assert r == (3, v, {"loss": 0.25, "note": "hi"})
    assert [p.data_ptr() for p in model2.parameters()] == ptrs  # restored in place
    for (k, a), (_, b) in zip(model.state_dict().items(), model2.state_dict().items()):
        assert bits(a.numpy()) == bits(b.numpy()), k
    s1, s2 = opt.state_dict(), opt2.state_dict()
    assert s1["param_groups"] == s2["param_groups"]
    for i in s1["state"]:
        for key in s1["state"][i]:
            assert torch.equal(s1["state"][i][key], s2["state"][i][key]), (i, key)
    # both continue identically
    x = torch.randn(4, 6)
    for m, o in ((model, opt), (model2, opt2)):
        m(x).square().sum().backward()
        o.step()
    for a, b in zip(model.parameters(), model2.parameters()):
        assert torch.equal(a, b)


def test_load_state_refuses_another_model_untouched(tmp_path):
    model = nn.Linear(4, 4)
    with gradckpt.Store(str(tmp_path / "st")) as st:
        gt.save_state(st, model, None, 1)
        other = nn.Linear(4, 5)
        before = [p.clone() for p in other.parameters()]
        with pytest.raises(gradckpt.InvalidArgumentError, match="weight"):
            gt.load_state(st, other, None)
        for a, b in zip(before, other.parameters()):
            assert torch.equal(a, b)
        with pytest.raises(gradckpt.InvalidArgumentError, match="no optimizer state"):
            gt.load_state(st, model, torch.optim.SGD(model.parameters(), lr=0.1))
    with gradckpt.Store(str(tmp_path / "empty")) as st:
        with pytest.raises(gradckpt.NotFoundError):
            gt.load_state(st, model, None)
