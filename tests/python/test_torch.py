"""gradckpt.torch against torch.nn.utils: clip_grad_norm_ (cases modelled on PyTorch's own tests),
get_total_norm, clip_grads_with_norm_, the fallback, thread-count independence, and GradientAccumulator."""
import itertools
import math
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import gradckpt
import gradckpt.torch as gt
from conftest import bits, run_python

inf, nan = math.inf, math.nan


def linear_with_grads(grads):
    l = nn.Linear(10, 10)
    for p, g in zip(l.parameters(), grads):
        p._grad = g.clone().view_as(p.data)
    return l


def compute_norm(l, norm_type):
    norm_type = float(norm_type)
    if norm_type != inf:
        total = 0
        for p in l.parameters():
            total += p.grad.data.abs().pow(norm_type).sum()
        return pow(total, 1.0 / norm_type)
    return max(p.grad.data.abs().max() for p in l.parameters())


@pytest.mark.parametrize("foreach", [None, False, True])
def test_clip_grad_norm_as_pytorch_tests_it(foreach):
    max_norm = 2
    grads = torch.arange(1.0, 101).view(10, 10), torch.ones(10).div(1000)
    for norm_type in [0.5, 1.5, 2, 4, "inf"]:
        l = linear_with_grads(grads)
        norm_before = compute_norm(l, norm_type)
        norm = gt.clip_grad_norm_(l.parameters(), max_norm, norm_type=norm_type, foreach=foreach)
        norm_after = compute_norm(l, norm_type)
        torch.testing.assert_close(norm, norm_before)
        torch.testing.assert_close(norm_after, torch.tensor(float(max_norm)))
        assert norm_after <= norm_before
        scale = torch.cat([p.grad.data.div(g).view(-1) for p, g in zip(l.parameters(), grads)])
        torch.testing.assert_close(scale.std(), torch.tensor(0.0), atol=1e-5, rtol=0)
    # small gradients are left unchanged
    grads = torch.rand(10, 10).div(10000), torch.ones(10).div(500)
    for norm_type in [0.5, 1.5, 2, 4, "inf"]:
        l = linear_with_grads(grads)
        norm_before = compute_norm(l, norm_type)
        norm = gt.clip_grad_norm_(l.parameters(), max_norm, norm_type=norm_type, foreach=foreach)
        torch.testing.assert_close(norm, norm_before)
        for p, g in zip(l.parameters(), grads):
            assert torch.equal(p.grad.data, g.view_as(p.data))
    # a single tensor
    p1, p2 = torch.randn(10, 10), torch.randn(10, 10)
    g = torch.arange(1.0, 101).view(10, 10)
    p1._grad, p2._grad = g.clone(), g.clone()
    gt.clip_grad_norm_(p1, max_norm, foreach=foreach)
    gt.clip_grad_norm_([p2], max_norm, foreach=foreach)
    assert torch.equal(p1.grad, p2.grad)
    # an exhausted generator warns
    params = nn.Linear(3, 3).parameters()
    for _ in params:
        pass
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = gt.clip_grad_norm_(params, max_norm, foreach=foreach)
    assert len(w) == 1
    assert str(w[0].message) == "`parameters` is an empty generator, no gradient clipping will occur."
    assert out.item() == 0.0 and out.dtype == torch.float32


def test_clip_grad_norm_error_if_nonfinite():
    norms_pos = [0.1, 1, 2, 3.5, inf]
    norms_neg = [-0.1, -1, -2, -3.5]
    norms_except_0 = norms_pos + norms_neg
    norms_all = norms_except_0 + [0]
    # grad_only_one_elem, prefix_finite_grad_param, scalars, norms_nonfinite, norms_finite
    cases = [
        (False, False, [inf, -inf], norms_except_0, [0]),
        (False, True, [inf, -inf], norms_pos, norms_neg + [0]),
        (True, False, [inf, -inf], norms_pos, norms_neg + [0]),
        (True, True, [inf, -inf], norms_pos, norms_neg + [0]),
        (False, False, [nan], norms_except_0, [0]),
        (False, True, [nan], norms_except_0, [0]),
        (True, False, [nan], norms_except_0, [0]),
        (True, True, [nan], norms_except_0, [0]),
        (False, False, [2e22, -2e22], [], norms_all),
        (False, True, [2e22, -2e22], [], norms_all),
        (True, False, [2e22, -2e22], [], norms_all),
        (True, True, [2e22, -2e22], [], norms_all),
        (False, False, [2e200, -2e200], [3.5, 2, -2, -3.5], [inf, 1, 0.1, 0, -1, -0.1]),
        (False, True, [2e200, -2e200], [3.5, 2], norms_neg + [inf, 1, 0.1, 0]),
        (True, False, [2e200, -2e200], [3.5, 2], norms_neg + [inf, 1, 0.1, 0]),
        (True, True, [2e200, -2e200], [3.5, 2], norms_neg + [inf, 1, 0.1, 0]),
    ]

    def gen_parameters(scalar, grad_only_one_elem, prefix_finite_grad_param):
        param = torch.ones(10, dtype=torch.float64, requires_grad=True)
        if grad_only_one_elem:
            param[1].mul(scalar).sum().backward()
        else:
            param.mul(scalar).sum().backward()
        if prefix_finite_grad_param:
            prefix = torch.ones(1, dtype=torch.float64, requires_grad=True)
            prefix.mul(1e-10).sum().backward()
            return [prefix, param]
        return [param]

    def run(norm_type, error_if_nonfinite, scalar, one, prefix, nonfinite):
        parameters = gen_parameters(scalar, one, prefix)
        if nonfinite and error_if_nonfinite:
            before = [p.grad.clone() for p in parameters]
            with pytest.raises(RuntimeError, match=f"The total norm of order {float(norm_type)} for gradients"):
                gt.clip_grad_norm_(parameters, 1, norm_type=norm_type, error_if_nonfinite=True)
            for a, b in zip(before, [p.grad for p in parameters]):
                torch.testing.assert_close(a, b, equal_nan=True)
        else:
            # the same gradients and norm as torch's own function
            ref = gen_parameters(scalar, one, prefix)
            got = gt.clip_grad_norm_(parameters, 1, norm_type=norm_type, error_if_nonfinite=error_if_nonfinite)
            want = torch.nn.utils.clip_grad_norm_(ref, 1, norm_type=norm_type, error_if_nonfinite=error_if_nonfinite)
            torch.testing.assert_close(got, want, equal_nan=True)
            for a, b in zip(parameters, ref):
                torch.testing.assert_close(a.grad, b.grad, equal_nan=True)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # p <= 0 goes to torch
        for one, prefix, scalars, nonfinite, finite in cases:
            for err in (False, True):
                for norm_type, scalar in itertools.product(nonfinite, scalars):
                    run(norm_type, err, scalar, one, prefix, True)
                for norm_type, scalar in itertools.product(finite, scalars):
                    run(norm_type, err, scalar, one, prefix, False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, inf, 3.0, 0.5])
def test_clip_within_1e6_of_torch(dtype, norm_type):
    """Against torch's clip_grad_norm_ run in float64 (the exact answer to 1e-12): within 1e-6.
    torch's own float32 result sums in float32, itself off by up to ~2e-6 for p != 2."""
    g = torch.Generator().manual_seed(3)
    shapes = [(64, 33), (1,), (), (1000,), (7, 7, 7), (4096,)] + ([] if norm_type == inf else [(0,)])
    grads = [torch.randn(s, generator=g, dtype=dtype) * 0.1 for s in shapes]
    ours = [nn.Parameter(torch.empty(s, dtype=dtype)) for s in shapes]
    ref = [nn.Parameter(torch.empty(s, dtype=dtype)) for s in shapes]
    exact = [nn.Parameter(torch.empty(s, dtype=torch.float64)) for s in shapes]
    for p, q, e, x in zip(ours, ref, exact, grads):
        p.grad, q.grad, e.grad = x.clone(), x.clone(), x.double()
    loose = 1e-6 if norm_type in (2.0, inf) or dtype == torch.float64 else 3e-6
    for max_norm in (0.5, 1e9):  # clipping, and not
        a = gt.clip_grad_norm_(ours, max_norm, norm_type)
        b = torch.nn.utils.clip_grad_norm_(ref, max_norm, norm_type)
        c = torch.nn.utils.clip_grad_norm_(exact, max_norm, norm_type)
        assert a.dtype == b.dtype == dtype and a.shape == ()
        torch.testing.assert_close(a.double(), c, rtol=1e-6, atol=0)
        torch.testing.assert_close(a, b, rtol=loose, atol=0)
        for p, q, e in zip(ours, ref, exact):
            torch.testing.assert_close(p.grad.double(), e.grad, rtol=1e-6, atol=1e-30)
            torch.testing.assert_close(p.grad, q.grad, rtol=loose, atol=1e-30)


def test_grads_clipped_in_place_and_params_without_grad_skipped():
    ps = [nn.Parameter(torch.ones(100)) for _ in range(3)]
    ps[0].grad = torch.full((100,), 3.0)
    ps[2].grad = torch.full((100,), 4.0)
    ptrs = [ps[0].grad.data_ptr(), ps[2].grad.data_ptr()]
    total = gt.clip_grad_norm_(ps, 1.0)
    assert total.item() == pytest.approx(50.0)
    assert ps[1].grad is None
    assert [ps[0].grad.data_ptr(), ps[2].grad.data_ptr()] == ptrs
    assert ps[0].grad[0].item() == pytest.approx(3 / 50, rel=1e-6)


def test_get_total_norm_and_clip_grads_with_norm():
    g = torch.Generator().manual_seed(9)
    ts = [torch.randn(n, generator=g) for n in (10, 1000, 3)]
    for p in (2.0, 1.0, inf, 4.0):
        exact = torch.nn.utils.get_total_norm([t.double() for t in ts], p)
        torch.testing.assert_close(gt.get_total_norm(ts, p).double(), exact, rtol=1e-7, atol=0)
        torch.testing.assert_close(gt.get_total_norm(ts, p), torch.nn.utils.get_total_norm(ts, p), rtol=3e-6, atol=0)
    assert gt.get_total_norm([]).item() == 0.0
    bad = [torch.tensor([1.0, inf])]
    assert gt.get_total_norm(bad).item() == inf
    with pytest.raises(RuntimeError, match="The total norm of order 2.0"):
        gt.get_total_norm(bad, error_if_nonfinite=True)
    # clip_grads_with_norm_ with the same total gives torch's bits exactly
    ps = [nn.Parameter(torch.empty(t.shape)) for t in ts]
    qs = [nn.Parameter(torch.empty(t.shape)) for t in ts]
    for p, q, t in zip(ps, qs, ts):
        p.grad, q.grad = t.clone(), t.clone()
    total = torch.nn.utils.get_total_norm([p.grad for p in ps])
    gt.clip_grads_with_norm_(ps, 1.0, total)
    torch.nn.utils.clip_grads_with_norm_(qs, 1.0, total)
    for p, q in zip(ps, qs):
        assert torch.equal(p.grad, q.grad)


def test_fallback_for_other_dtypes_warns_once():
    gt._warned.clear()
    ps = [nn.Parameter(torch.ones(8, dtype=torch.complex64))]
    ps[0].grad = torch.full((8,), 2.0, dtype=torch.complex64)
    qs = [nn.Parameter(torch.ones(8, dtype=torch.complex64))]
    qs[0].grad = ps[0].grad.clone()
    with pytest.warns(RuntimeWarning, match="clip_grad_norm_"):
        a = gt.clip_grad_norm_(ps, 1.0)
    b = torch.nn.utils.clip_grad_norm_(qs, 1.0)
    assert torch.equal(a, b) and torch.equal(ps[0].grad, qs[0].grad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gt.clip_grad_norm_(ps, 1.0)  # no second warning
    # a non-contiguous gradient goes to torch as well, untouched by gradckpt
    p = nn.Parameter(torch.ones(4, 4))
    p.grad = torch.full((4, 8), 5.0)[:, ::2]
    torch.testing.assert_close(gt.clip_grad_norm_([p], 1.0), torch.tensor(20.0))
    with pytest.raises(AttributeError):  # as torch: not a parameter
        gt.clip_grad_norm_([np.zeros(3)], 1.0)


def test_clip_same_bits_on_1_and_2_torch_threads_and_every_isa():
    code = r"""
import torch, gradckpt, gradckpt.torch as gt, sys
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
g = torch.Generator().manual_seed(1)
ps = [torch.nn.Parameter(torch.empty(n)) for n in (3, 70000, 1 << 20, 5)]
out = []
for isa in gradckpt.available_isas():
    gradckpt.select_isa(isa)
    for p in ps:
        p.grad = torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel()))
    t = gt.clip_grad_norm_(ps, 0.5)
    out.append(t.item().hex() + ":" + str(hash(b"".join(p.grad.numpy().tobytes() for p in ps))))
assert len(set(out)) == 1, out
print(out[0])
"""
    outs = set()
    for threads in (1, 2):
        outs.add(run_python(code.replace("int(sys.argv[1]) if len(sys.argv) > 1 else 1", str(threads)),
                            env={"OMP_NUM_THREADS": str(threads), "PYTHONHASHSEED": "0"}))
    assert len(outs) == 1


# ---- GradientAccumulator -------------------------------------------------------


def make_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))


def micro_grads(model, xs):
    out = []
    for x in xs:
        model.zero_grad(set_to_none=True)
        model(x).square().sum().backward()
        out.append({n: p.grad.clone() for n, p in model.named_parameters()})
    model.zero_grad(set_to_none=True)
    return out


@pytest.mark.parametrize("mode", ["sum", "mean", "weighted_mean"])
@pytest.mark.parametrize("clip", [None, 0.5])
def test_gradient_accumulator_equals_the_formulas(mode, clip):
    model = make_model()
    xs = [torch.randn(5, 8, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    weights = [0.5, 2.0, 1.5]
    per = micro_grads(model, xs)
    acc = gt.GradientAccumulator(model.named_parameters(), mode=mode, clip_norm=clip,
                                 weights=weights if mode == "weighted_mean" else None)
    for x in xs:
        model(x).square().sum().backward()
        assert acc.accumulate() == 4
        assert all(p.grad is None for p in model.parameters())
    total = acc.step()
    # SPEC 1.3: r = ((0 + t1) + t2) + ... in float32, then / count (or r + t_i * w_i, / sum w)
    want = {}
    for n, _ in model.named_parameters():
        r = torch.zeros_like(per[0][n])
        for i, g in enumerate(per):
            r = r + (g[n] * weights[i] if mode == "weighted_mean" else g[n])
        if mode == "mean":
            r = r / float(len(per))
        elif mode == "weighted_mean":
            r = r / float(sum(weights))
        want[n] = r
    norm = math.sqrt(math.fsum(float(gradckpt.sumsq(want[n].reshape(-1))) for n in sorted(want)))
    assert total == pytest.approx(norm, rel=1e-12)
    if clip is not None and norm > clip:
        s = torch.tensor(clip / norm, dtype=torch.float32)
        want = {n: w * s for n, w in want.items()}
    for n, p in model.named_parameters():
        assert torch.equal(p.grad, want[n]), n


def test_gradient_accumulator_writes_into_existing_grads_and_errors():
    model = make_model()
    acc = gt.GradientAccumulator(model.named_parameters(), mode="sum")
    with pytest.raises(gradckpt.NoAccumulatedGradientsError):
        acc.step()
    model(torch.ones(2, 8)).sum().backward()
    acc.accumulate(set_to_none=False)
    ptrs = [p.grad.data_ptr() for p in model.parameters()]
    acc.step()
    assert [p.grad.data_ptr() for p in model.parameters()] == ptrs
    # a gradient of the wrong length leaves nothing accumulated
    model(torch.ones(2, 8)).sum().backward()
    acc.accumulate()
    p0 = list(model.parameters())[-2]  # the (4, 16) weight
    model(torch.ones(2, 8)).sum().backward()
    p0.grad = torch.zeros(16, 4).t()  # same shape, not contiguous
    with pytest.raises(gradckpt.InvalidArgumentError, match="C-contiguous"):
        acc.accumulate()
    assert acc.pending == 4
    with pytest.raises(gradckpt.InvalidArgumentError):
        gt.GradientAccumulator([("w", nn.Parameter(torch.ones(2, dtype=torch.float16)))])


def test_clip_of_124m_parameters_copies_nothing():
    """RSS grows by less than 1 MB while 124 M float32 gradients (497 MB) are clipped."""
    def rss_kb():
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

    n, count = 124_439_808, 148
    flat = torch.full((n,), 1e-3)
    chunks = flat.chunk(count)  # views of one buffer, as a trainer's flat gradient buffer
    ps = [nn.Parameter(torch.empty(g.shape)) for g in chunks]  # never touched: no RSS
    for p, g in zip(ps, chunks):
        p.grad = g
    warm = [nn.Parameter(torch.empty(1 << 20))]
    warm[0].grad = torch.ones(1 << 20)
    gt.clip_grad_norm_(warm, 0.5)  # OpenMP threads and first-call allocations happen here
    before = rss_kb()
    total = gt.clip_grad_norm_(ps, 1.0)
    gradckpt.clip_([p.grad for p in ps], 0.5)
    grown = rss_kb() - before
    assert total.item() == pytest.approx(1e-3 * math.sqrt(n), rel=1e-6)
    assert grown < 1024, f"RSS grew by {grown} kB"
