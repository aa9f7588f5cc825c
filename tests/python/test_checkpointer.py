"""Checkpointer and Checkpoint: the SPEC 1.3 formulas bit for bit, history, zero-copy views and their
lifetimes, diff, stats, flush_into, files, and every error class leaving everything unchanged."""
import errno
import gc
import math

import numpy as np
import pytest
import torch

import gradckpt
from gradckpt import _gradckpt
from conftest import bits


def reference(tensors, mode, weights, dtype):
    """SPEC 1.3: r = ((0 + t1) + t2) + ... / count, or r + t_i * w_i / sum(w)."""
    t = np.float32 if dtype == "float32" else np.float64
    r = np.zeros(tensors[0].shape, t)
    wsum = 0.0
    for i, x in enumerate(tensors):
        x = x.astype(t)
        if mode == "weighted_mean":
            w = weights[i] if i < len(weights) else 1.0
            r = r + x * t(w)
            wsum += w
        else:
            r = r + x
    if mode == "mean":
        r = r / t(len(tensors))
    elif mode == "weighted_mean" and wsum != 0.0:
        r = r / t(wsum)
    return r


@pytest.mark.parametrize("mode", ["sum", "mean", "weighted_mean"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("in_dt", [np.float32, np.float64])
def test_modes_bit_for_bit(rng, mode, dtype, in_dt):
    weights = [0.5, 3.0]
    cp = gradckpt.Checkpointer(mode=mode, weights=weights, dtype=dtype)
    layers = {"b": [rng.standard_normal(1000).astype(in_dt) for _ in range(3)],
              "a": [rng.standard_normal(70000).astype(in_dt) for _ in range(3)]}
    for i in range(3):
        cp.accumulate_many({k: v[i] for k, v in layers.items()}, step=10 + i)
    assert cp.global_step == 6 and cp.pending_count == 6 and cp.pending_layers == ["a", "b"]
    ck = cp.flush(now=123)
    assert (ck.id, ck.step, ck.created_at, ck.dtype, ck.layers) == (0, 6, 123, dtype, ["a", "b"])
    for k, v in layers.items():
        want = reference(v, mode, weights, dtype)
        assert bits(ck[k]) == bits(want), k
        assert ck.layer_step(k) == 12
        assert ck.layer_norm(k) == pytest.approx(float(np.linalg.norm(want.astype(np.float64))), rel=1e-12)
    want_norm = math.sqrt(gradckpt.sumsq(ck["a"]) + gradckpt.sumsq(ck["b"]))
    assert ck.global_norm == pytest.approx(want_norm, rel=1e-15)
    assert ck.verify()


def test_clipping_norm_before_clip_and_flush_into_equal_flush(rng):
    xs = {"w": rng.standard_normal(5000).astype(np.float32), "v": rng.standard_normal(7).astype(np.float32)}
    a = gradckpt.Checkpointer(mode="mean", dtype="float32", clip_norm=1.0, checksum="xxh3")
    b = gradckpt.Checkpointer(mode="mean", dtype="float32", clip_norm=1.0, checksum="xxh3")
    for cp in (a, b):
        cp.accumulate_many(xs)
        cp.accumulate_many(xs)
    ck = a.flush()
    dst = {"w": np.empty(5000, np.float32), "v": np.empty(7, np.float32)}
    total, coef, clipped, rec = b.flush_into(dst)
    assert rec is None and clipped and b.latest is None and b.flush_count == 1
    assert total == ck.norm_before_clip and coef == ck.clip_coef
    assert ck.global_norm == pytest.approx(1.0, rel=1e-6)
    for k in dst:
        assert bits(dst[k]) == bits(ck[k])
    # record=True records exactly what flush records
    b.accumulate_many(xs)
    b.accumulate_many(xs)
    _, _, _, rec = b.flush_into([np.empty(7, np.float32), np.empty(5000, np.float32)], record=True)  # v, w order
    assert rec.id == 0 and bits(rec["w"]) == bits(ck["w"]) and rec.checksum == ck.checksum


def test_history_eviction_and_view_lifetimes(rng):
    cp = gradckpt.Checkpointer(max_checkpoints=2)
    views, tviews = [], []
    for i in range(4):
        cp.accumulate("x", np.full(100, float(i)))
        ck = cp.flush()
        views.append(ck["x"])
        tviews.append(ck.torch("x"))
    assert [c.id for c in cp.history] == [2, 3]
    with pytest.raises(gradckpt.NotFoundError):
        cp.by_id(0)
    assert cp.by_id(3).id == 3 and cp.latest.id == 3
    del cp, ck
    gc.collect()
    for i, (v, t) in enumerate(zip(views, tviews)):
        assert (v == i).all() and not v.flags.writeable
        assert t.data_ptr() == v.ctypes.data and bool((t == i).all())
    with pytest.raises(ValueError):
        views[0][0] = 5.0


def test_diff_replay_stats_discard(rng):
    cp = gradckpt.Checkpointer(mode="sum")
    cp.accumulate_many([("a", np.ones(4)), ("b", np.ones(2))])
    c1 = cp.flush()
    cp.accumulate_many([("a", np.zeros(4)), ("c", np.full(3, 2.0))])
    c2 = cp.flush()
    d = cp.diff(c1, c2)
    assert list(d) == ["a", "b", "c"]
    assert d["a"] == 2.0 and d["b"] == pytest.approx(math.sqrt(2)) and d["c"] == pytest.approx(math.sqrt(12))
    names = [n for n, _ in cp.replay(c2)]
    assert names == ["a", "c"]
    st = cp.stats()
    assert st["total_checkpoints"] == 2 and st["total_steps"] == 4 and st["pending_tensors"] == 0
    assert st["max_checkpoint_norm"] == pytest.approx(math.sqrt(12))
    cp.accumulate("a", np.ones(4))
    cp.discard_pending()
    assert cp.pending_count == 0 and cp.global_step == 5
    with pytest.raises(gradckpt.NoAccumulatedGradientsError):
        cp.flush()


def test_checkpoint_files(tmp_path, rng):
    cp = gradckpt.Checkpointer(dtype="float32", checksum="xxh3")
    cp.accumulate("layer.0", rng.standard_normal(100).astype(np.float32))
    ck = cp.flush(now=99)
    path = str(tmp_path / "c.safetensors")
    ck.save(path)
    back = gradckpt.Checkpoint.load(path)
    assert (back.id, back.step, back.created_at, back.checksum, back.checksum_algo) == \
        (ck.id, ck.step, 99, ck.checksum, "xxh3")
    assert bits(back["layer.0"]) == bits(ck["layer.0"])


def test_errors_leave_everything_unchanged(rng):
    cp = gradckpt.Checkpointer(error_if_nonfinite=True)
    cp.accumulate("a", np.ones(4))
    with pytest.raises(gradckpt.DimensionMismatchError, match="dimension mismatch for layer 'a': expected 4, got 3"):
        cp.accumulate("a", np.ones(3))
    # all or nothing: the second pair is wrong, the first is not accumulated either
    with pytest.raises(gradckpt.DimensionMismatchError):
        cp.accumulate_many([("b", np.ones(2)), ("a", np.ones(5))])
    with pytest.raises(gradckpt.DTypeError):
        cp.accumulate_many([("b", np.ones(2)), ("c", np.ones(2, np.int32))])
    with pytest.raises(gradckpt.InvalidArgumentError):
        cp.accumulate_many([("b", np.ones(2)), ("", np.ones(2))])
    assert cp.pending_layers == ["a"] and cp.global_step == 1
    cp.accumulate("n", np.array([np.nan]))
    with pytest.raises(gradckpt.NonFiniteError) as e:
        cp.flush()
    assert isinstance(e.value, RuntimeError) and e.value.status_name == "GCK_ERR_NONFINITE"
    assert cp.pending_count == 2  # kept for inspection
    cp.discard_pending()
    for bad in (dict(max_checkpoints=0), dict(mode="median"), dict(clip_norm=-1.0), dict(checksum="md5")):
        with pytest.raises(gradckpt.InvalidArgumentError):
            gradckpt.Checkpointer(**bad)
    for bad in ("float16", "int32", "bfloat"):
        with pytest.raises(gradckpt.UnsupportedError, match="'float64', 'float32' or 'bfloat16'"):
            gradckpt.Checkpointer(dtype=bad)


def test_no_memory_and_io_errors(tmp_path):
    cp = gradckpt.Checkpointer()
    cp.accumulate("a", np.ones(4))
    _gradckpt._fail_alloc_after(0)
    try:
        with pytest.raises(gradckpt.NoMemoryError) as e:
            cp.accumulate("new-layer", np.ones(8))
    finally:
        _gradckpt._fail_alloc_after(-1)
    assert isinstance(e.value, MemoryError)
    assert cp.pending_layers == ["a"] and cp.global_step == 1
    ck = cp.flush()
    path = str(tmp_path / "c.safetensors")
    ck.save(path)
    before = open(path, "rb").read()
    cp.accumulate("a", np.full(4, 2.0))
    ck2 = cp.flush()
    _gradckpt._fail_io_after(0, errno.ENOSPC)
    try:
        with pytest.raises(gradckpt.IOError, match="No space left"):
            ck2.save(path)
    finally:
        _gradckpt._fail_io_after(-1, 0)
    assert open(path, "rb").read() == before  # the old file is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.safetensors"]  # no temporary left


def test_every_status_has_its_class():
    classes = {gradckpt.InvalidArgumentError: ValueError, gradckpt.NoMemoryError: MemoryError,
               gradckpt.NoAccumulatedGradientsError: RuntimeError, gradckpt.NotFoundError: KeyError,
               gradckpt.DimensionMismatchError: ValueError, gradckpt.NonFiniteError: RuntimeError,
               gradckpt.IOError: OSError, gradckpt.CorruptError: ValueError,
               gradckpt.UnsupportedError: NotImplementedError}
    assert sorted(c.status for c in classes) == list(range(1, 10))
    for cls, builtin in classes.items():
        assert issubclass(cls, gradckpt.Error) and issubclass(cls, builtin)
        assert cls.status_name.startswith("GCK_ERR_")
    assert issubclass(gradckpt.DTypeError, TypeError) and issubclass(gradckpt.DTypeError, gradckpt.UnsupportedError)


def test_accumulate_from_torch_without_copy():
    cp = gradckpt.Checkpointer(dtype="float32")
    t = torch.arange(6, dtype=torch.float32)
    cp.accumulate("t", t)
    cp.accumulate("t", t)
    assert list(cp.flush()["t"]) == [0, 2, 4, 6, 8, 10]
