// python/src/kernels.cpp - the kernels, the multi-tensor calls and ISA selection.
#include "common.h"

#include <cmath>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace gckpy {

namespace {

Array read1(nb::handle o, const char *name, Hold &h)
{
    Array a;
    resolve(o, ArgName{ name }, Access::Read, h, a);
    need_float(a, ArgName{ name });
    return a;
}

Array write1(nb::handle o, const char *name, Hold &h)
{
    Array a;
    resolve(o, ArgName{ name }, Access::Write, h, a);
    need_float(a, ArgName{ name });
    return a;
}

void same_len(const Array &a, const char *an, const Array &b, const char *bn)
{
    if (a.n != b.n)
        raise_msg(GCK_ERR_DIMENSION_MISMATCH, std::string(bn) + " has " + std::to_string(b.n) + " elements but " + an +
                                                  " has " + std::to_string(a.n));
}

// In-place kernels allow x == acc exactly, never a partial overlap.
void no_partial_overlap(const Array &acc, const char *an, const Array &x, const char *xn)
{
    const char *a0 = (const char *)acc.data, *a1 = a0 + acc.n * acc.itemsize;
    const char *x0 = (const char *)x.data, *x1 = x0 + x.n * x.itemsize;
    if (acc.n == 0 || x.n == 0)
        return;
    if (a0 == x0 && acc.dtype == x.dtype)
        return;
    if (a0 < x1 && x0 < a1)
        raise_msg(GCK_ERR_INVALID_ARGUMENT, std::string(xn) + " overlaps " + an + " (only the very same array is allowed)");
}

void check_p(double p, const char *name)
{
    if (!(p > 0))
        raise_msg(GCK_ERR_INVALID_ARGUMENT,
                  std::string(name) + " must be > 0 (1, 2, inf or any finite p > 0), got " + std::to_string(p));
}

// One reduction over one array, the kernel chosen by its dtype: k(dtype,
// data, n) with data typed by the caller's switch.
template <typename K> double reduce_one(nb::handle x, K k)
{
    Hold h;
    const Array a = read1(x, "x", h);
    return maybe_nogil(a.n * a.itemsize, [&] { return k(a.dtype, a.data, a.n); });
}

double sumsq(nb::handle x)
{
    return reduce_one(x, [](gck_dtype dt, const void *d, size_t n) {
        switch (dt) {
        case GCK_DTYPE_F32: return gck_sumsq_f32((const float *)d, n);
        case GCK_DTYPE_BF16: return gck_sumsq_bf16((const uint16_t *)d, n);
        case GCK_DTYPE_F16: return gck_sumsq_f16((const uint16_t *)d, n);
        default: return gck_sumsq_f64((const double *)d, n);
        }
    });
}

double l2norm(nb::handle x)
{
    return reduce_one(x, [](gck_dtype dt, const void *d, size_t n) {
        switch (dt) {
        case GCK_DTYPE_F32: return gck_l2norm_f32((const float *)d, n);
        case GCK_DTYPE_BF16: return gck_l2norm_bf16((const uint16_t *)d, n);
        case GCK_DTYPE_F16: return gck_l2norm_f16((const uint16_t *)d, n);
        default: return gck_l2norm_f64((const double *)d, n);
        }
    });
}

double pnorm(nb::handle x, double p)
{
    check_p(p, "p");
    return reduce_one(x, [p](gck_dtype dt, const void *d, size_t n) {
        switch (dt) {
        case GCK_DTYPE_F32: return gck_pnorm_f32((const float *)d, n, p);
        case GCK_DTYPE_BF16: return gck_pnorm_bf16((const uint16_t *)d, n, p);
        case GCK_DTYPE_F16: return gck_pnorm_f16((const uint16_t *)d, n, p);
        default: return gck_pnorm_f64((const double *)d, n, p);
        }
    });
}

double dist2(nb::handle ao, nb::handle bo)
{
    Hold h;
    const Array a = read1(ao, "a", h), b = read1(bo, "b", h);
    if (a.dtype != b.dtype)
        raise_dtype(std::string("b: expected ") + dtype_label(a.dtype) + " like a, got " + dtype_label(b.dtype));
    same_len(a, "a", b, "b");
    return maybe_nogil(2 * a.n * a.itemsize, [&] {
        switch (a.dtype) {
        case GCK_DTYPE_F32: return gck_dist2_f32((const float *)a.data, (const float *)b.data, a.n);
        case GCK_DTYPE_BF16: return gck_dist2_bf16((const uint16_t *)a.data, (const uint16_t *)b.data, a.n);
        case GCK_DTYPE_F16: return gck_dist2_f16((const uint16_t *)a.data, (const uint16_t *)b.data, a.n);
        default: return gck_dist2_f64((const double *)a.data, (const double *)b.data, a.n);
        }
    });
}

// acc (F32 or F64) and x (any kernel dtype) of add_ / axpy_.
void pair1(nb::handle acco, nb::handle xo, Hold &h, Array &acc, Array &x)
{
    resolve(acco, ArgName{ "acc" }, Access::Write, h, acc);
    need_wide(acc, ArgName{ "acc" });
    x = read1(xo, "x", h);
    same_len(acc, "acc", x, "x");
    no_partial_overlap(acc, "acc", x, "x");
}

nb::object add_(nb::handle acco, nb::handle xo)
{
    Hold h;
    Array acc, x;
    pair1(acco, xo, h, acc, x);
    maybe_nogil(acc.n * (acc.itemsize * 2 + x.itemsize), [&] {
        const uint16_t *x16 = (const uint16_t *)x.data;
        float *a32 = (float *)acc.data;
        double *a64 = (double *)acc.data;
        const bool f32 = acc.dtype == GCK_DTYPE_F32;
        switch (x.dtype) {
        case GCK_DTYPE_F32:
            f32 ? gck_add_f32(a32, (const float *)x.data, acc.n)
                : gck_add_f32_to_f64(a64, (const float *)x.data, acc.n);
            break;
        case GCK_DTYPE_BF16: f32 ? gck_add_bf16_to_f32(a32, x16, acc.n) : gck_add_bf16_to_f64(a64, x16, acc.n); break;
        case GCK_DTYPE_F16: f32 ? gck_add_f16_to_f32(a32, x16, acc.n) : gck_add_f16_to_f64(a64, x16, acc.n); break;
        default:
            f32 ? gck_add_f64_to_f32(a32, (const double *)x.data, acc.n)
                : gck_add_f64(a64, (const double *)x.data, acc.n);
            break;
        }
    });
    return nb::borrow(acco);
}

nb::object axpy_(nb::handle acco, double w, nb::handle xo)
{
    Hold h;
    Array acc, x;
    pair1(acco, xo, h, acc, x);
    maybe_nogil(acc.n * (acc.itemsize * 2 + x.itemsize), [&] {
        const uint16_t *x16 = (const uint16_t *)x.data;
        float *a32 = (float *)acc.data;
        double *a64 = (double *)acc.data;
        const float wf = (float)w;
        const bool f32 = acc.dtype == GCK_DTYPE_F32;
        switch (x.dtype) {
        case GCK_DTYPE_F32:
            f32 ? gck_axpy_f32(a32, wf, (const float *)x.data, acc.n)
                : gck_axpy_f32_to_f64(a64, w, (const float *)x.data, acc.n);
            break;
        case GCK_DTYPE_BF16:
            f32 ? gck_axpy_bf16_to_f32(a32, wf, x16, acc.n) : gck_axpy_bf16_to_f64(a64, w, x16, acc.n);
            break;
        case GCK_DTYPE_F16:
            f32 ? gck_axpy_f16_to_f32(a32, wf, x16, acc.n) : gck_axpy_f16_to_f64(a64, w, x16, acc.n);
            break;
        default:
            f32 ? gck_axpy_f64_to_f32(a32, wf, (const double *)x.data, acc.n)
                : gck_axpy_f64(a64, w, (const double *)x.data, acc.n);
            break;
        }
    });
    return nb::borrow(acco);
}

nb::object scale_(nb::handle xo, double s)
{
    Hold h;
    const Array x = write1(xo, "x", h);
    maybe_nogil(2 * x.n * x.itemsize, [&] {
        switch (x.dtype) {
        case GCK_DTYPE_F32: gck_scale_f32((float *)x.data, (float)s, x.n); break;
        case GCK_DTYPE_BF16: gck_scale_bf16((uint16_t *)x.data, (float)s, x.n); break;
        case GCK_DTYPE_F16: gck_scale_f16((uint16_t *)x.data, (float)s, x.n); break;
        default: gck_scale_f64((double *)x.data, s, x.n); break;
        }
    });
    return nb::borrow(xo);
}

uint64_t fnv1a64(nb::handle data, uint64_t hval)
{
    Hold h;
    Array a;
    resolve(data, ArgName{ "data" }, Access::Read, h, a);
    const size_t bytes = a.n * a.itemsize;
    return maybe_nogil(bytes, [&] { return gck_fnv1a64(a.data, bytes, hval); });
}

// ---- lists -------------------------------------------------------------------

double global_norm(nb::handle tensors, double p)
{
    check_p(p, "p");
    Hold h;
    List l;
    resolve_list(tensors, "tensors", Access::Read, h, l);
    const gck_tensor_list t = l.view();
    double total = 0;
    const gck_status st = maybe_nogil(l.total_bytes, [&] { return gck_tensors_norm(&t, p, nullptr, &total); });
    check(st);
    return total;
}

gck_clip_info clip_list(nb::handle tensors, double max_norm, double p, bool error_if_nonfinite, double eps)
{
    check_p(p, "p");
    Hold h;
    List l;
    resolve_list(tensors, "tensors", Access::Write, h, l);
    const gck_tensor_list t = l.view();
    gck_clip_info info{};
    const unsigned flags = error_if_nonfinite ? GCK_CLIP_ERROR_IF_NONFINITE : 0u;
    check(maybe_nogil(3 * l.total_bytes,
                      [&] { return gck_tensors_clip_by_norm(&t, max_norm, p, eps, flags, &info); }));
    return info;
}

double clip_(nb::handle tensors, double max_norm, double p, bool error_if_nonfinite, double eps)
{
    return clip_list(tensors, max_norm, p, error_if_nonfinite, eps).total_norm;
}

nb::tuple clip_info(nb::handle tensors, double max_norm, double p, bool error_if_nonfinite, double eps)
{
    const gck_clip_info info = clip_list(tensors, max_norm, p, error_if_nonfinite, eps);
    return nb::make_tuple(info.total_norm, info.coef, (bool)info.clipped);
}

void pair_lists(nb::handle acc, const char *an, nb::handle x, const char *xn, Hold &h, List &la, List &lx)
{
    resolve_list(acc, an, Access::Write, h, la);
    resolve_list(x, xn, Access::Read, h, lx);
    if (la.data.size() != lx.data.size())
        raise_msg(GCK_ERR_DIMENSION_MISMATCH, std::string(xn) + " has " + std::to_string(lx.data.size()) +
                                                  " tensors but " + an + " has " + std::to_string(la.data.size()));
}

void tensors_add_(nb::handle acc, nb::handle x)
{
    Hold h;
    List la, lx;
    pair_lists(acc, "acc", x, "x", h, la, lx);
    const gck_tensor_list a = la.view(), b = lx.view();
    check(maybe_nogil(2 * la.total_bytes + lx.total_bytes, [&] { return gck_tensors_add(&a, &b); }));
}

void tensors_axpy_(nb::handle acc, double w, nb::handle x)
{
    Hold h;
    List la, lx;
    pair_lists(acc, "acc", x, "x", h, la, lx);
    const gck_tensor_list a = la.view(), b = lx.view();
    check(maybe_nogil(2 * la.total_bytes + lx.total_bytes, [&] { return gck_tensors_axpy(&a, w, &b); }));
}

void tensors_axpy_init_(nb::handle dst, double w, nb::handle x)
{
    Hold h;
    List la, lx;
    pair_lists(dst, "dst", x, "x", h, la, lx);
    const gck_tensor_list a = la.view(), b = lx.view();
    check(maybe_nogil(la.total_bytes + lx.total_bytes, [&] { return gck_tensors_axpy_init(&a, w, &b); }));
}

void tensors_scale_(nb::handle tensors, double s)
{
    Hold h;
    List l;
    resolve_list(tensors, "tensors", Access::Write, h, l);
    const gck_tensor_list t = l.view();
    check(maybe_nogil(2 * l.total_bytes, [&] { return gck_tensors_scale(&t, s); }));
}

double tensors_div_sumsq_(nb::handle tensors, double d)
{
    Hold h;
    List l;
    resolve_list(tensors, "tensors", Access::Write, h, l);
    const gck_tensor_list t = l.view();
    double total = 0;
    check(maybe_nogil(2 * l.total_bytes, [&] { return gck_tensors_div_sumsq(&t, d, nullptr, &total); }));
    return total;
}

// The trainer's last micro-batch: acc += w * x, then acc /= d and the sum of
// squares of the result, in one pass over memory.
double tensors_axpy_div_sumsq_(nb::handle acc, double w, nb::handle x, double d)
{
    Hold h;
    List la, lx;
    pair_lists(acc, "acc", x, "x", h, la, lx);
    const gck_tensor_list a = la.view(), b = lx.view();
    double total = 0;
    check(maybe_nogil(2 * la.total_bytes + lx.total_bytes,
                      [&] { return gck_tensors_axpy_div_sumsq(&a, w, &b, d, nullptr, &total); }));
    return total;
}

// ---- ISA, threads, version ---------------------------------------------------

std::string isa() { return gck_isa_name(gck_isa_active()); }

nb::list available_isas()
{
    nb::list out;
    for (int i = 0; i < GCK_ISA_COUNT; i++)
        if (gck_isa_available((gck_isa)i))
            out.append(gck_isa_name((gck_isa)i));
    return out;
}

void select_isa(const std::string &name)
{
    gck_isa want;
    if (gck_isa_from_name(name.c_str(), &want) != GCK_OK)
        raise_msg(GCK_ERR_INVALID_ARGUMENT, "unknown ISA '" + name + "' (scalar, avx2, avx512 or neon)");
    check(gck_isa_select(want));
}

int get_num_threads()
{
    return gck_max_threads();
}

void set_num_threads(int n)
{
    if (n < 1)
        raise_msg(GCK_ERR_INVALID_ARGUMENT, "n must be >= 1, got " + std::to_string(n));
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
}

// Benchmark helper: `iters` calls of one C function on the same arguments,
// timed in C, so the binding's own cost can be told apart from the C call's:
// "sumsq" (gck_sumsq_* of tensors[0]), "norm" (gck_tensors_norm, p = 2),
// "clip" (gck_tensors_clip_by_norm with max_norm, torch's eps).
double bench_c(const std::string &op, nb::handle tensors, int64_t iters, double max_norm)
{
    Hold h;
    List l;
    resolve_list(tensors, "tensors", op == "clip" ? Access::Write : Access::Read, h, l);
    if (op != "sumsq" && op != "norm" && op != "clip")
        raise_msg(GCK_ERR_INVALID_ARGUMENT, "op must be 'sumsq', 'norm' or 'clip', got '" + op + "'");
    if (l.data.empty())
        raise_msg(GCK_ERR_INVALID_ARGUMENT, "tensors is empty");
    const gck_tensor_list t = l.view();
    nb::gil_scoped_release nogil;
    volatile double sink = 0;
    gck_clip_info info{};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t i = 0; i < iters; i++) {
        if (op == "sumsq")
            switch (l.dtypes[0]) {
            case GCK_DTYPE_F32: sink = gck_sumsq_f32((const float *)l.data[0], l.lens[0]); break;
            case GCK_DTYPE_BF16: sink = gck_sumsq_bf16((const uint16_t *)l.data[0], l.lens[0]); break;
            case GCK_DTYPE_F16: sink = gck_sumsq_f16((const uint16_t *)l.data[0], l.lens[0]); break;
            default: sink = gck_sumsq_f64((const double *)l.data[0], l.lens[0]); break;
            }
        else if (op == "norm") {
            double total;
            gck_tensors_norm(&t, 2.0, nullptr, &total);
            sink = total;
        } else {
            gck_tensors_clip_by_norm(&t, max_norm, 2.0, GCK_CLIP_EPS_DEFAULT, 0, &info);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    (void)sink;
    return ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / (double)iters;
}

}  // namespace

void init_kernels(nb::module_ &m)
{
    const char *arr = "NDArray | torch.Tensor | ArrayLike";
    (void)arr;
    m.def("sumsq", &sumsq, nb::arg("x"),
          nb::sig("def sumsq(x: Array, /) -> float"),
          "Sum of squares of a float32/float64/bfloat16/float16 array, accumulated in float64 (elements widened\n"
          "exactly; a 16-bit array gives exactly the sum of its float32 copy).\n\n"
          "Bit-identical on every ISA and OpenMP thread count. Reads ``x`` in place (no copy).\n\n"
          "Raises DTypeError for another dtype, InvalidArgumentError for a non-contiguous or non-CPU array.");
    m.def("l2norm", &l2norm, nb::arg("x"), nb::sig("def l2norm(x: Array, /) -> float"),
          "Euclidean norm of a float32/float64/bfloat16/float16 array; never spuriously overflows or underflows\n"
          "(within 2 ulp). 16-bit arrays: exactly the norm of their float32 copy.");
    m.def("dist2", &dist2, nb::arg("a"), nb::arg("b"), nb::sig("def dist2(a: Array, b: Array, /) -> float"),
          "Squared distance sum((a - b)**2) of two arrays of the same dtype and length, accumulated in float64.");
    m.def("pnorm", &pnorm, nb::arg("x"), nb::arg("p"), nb::sig("def pnorm(x: Array, p: float, /) -> float"),
          "p-norm (sum |x|**p)**(1/p) for p = 1, 2, inf or any finite p > 0 (PyTorch's norm_type); 16-bit\n"
          "arrays: exactly the p-norm of their float32 copy.\n\n"
          "Raises InvalidArgumentError for p <= 0 or NaN.");
    m.def("add_", &add_, nb::arg("acc"), nb::arg("x"), nb::sig("def add_(acc: ArrayT, x: Array, /) -> ArrayT"),
          "acc += x in place, elementwise, one rounding (float32 or float64; acc float64 with x float32, or acc\n"
          "float32 with x float64 rounded to float first; x bfloat16/float16 widened exactly into a float32 or\n"
          "float64 acc: a 16-bit acc raises DTypeError). x may be acc itself, not a partial overlap. Returns acc.");
    m.def("axpy_", &axpy_, nb::arg("acc"), nb::arg("w"), nb::arg("x"),
          nb::sig("def axpy_(acc: ArrayT, w: float, x: Array, /) -> ArrayT"),
          "acc += w * x in place with two roundings (no fused multiply-add); w is rounded to float for a float32\n"
          "acc. Mixed dtypes as add_. Returns acc.");
    m.def("scale_", &scale_, nb::arg("x"), nb::arg("s"), nb::sig("def scale_(x: ArrayT, s: float, /) -> ArrayT"),
          "x *= s in place (float32 arrays multiply by float(s) rounded to float32). bfloat16/float16 arrays:\n"
          "x.float() * float32(s) rounded to the 16-bit dtype (nearest even), bit-identical to torch's\n"
          "x.mul_(s). Returns x.");
    m.def("fnv1a64", &fnv1a64, nb::arg("data"), nb::arg("h") = (uint64_t)GCK_FNV1A64_INIT,
          nb::sig("def fnv1a64(data: Buffer | Array, /, h: int = 14695981039346656037) -> int"),
          "FNV-1a 64 of the bytes of any C-contiguous array or buffer, continuing from h (chainable).");
    m.def("global_norm", &global_norm, nb::arg("tensors"), nb::arg("p") = 2.0,
          nb::sig("def global_norm(tensors: Array | Iterable[Array], p: float = 2.0) -> float"),
          "The p-norm of all tensors as if concatenated, in ONE call of gck_tensors_norm over the list.\n\n"
          "Per-tensor norms are combined in list order, so the result is the same on every ISA and thread\n"
          "count. p = 2 never spuriously overflows. float32, float64, bfloat16 and float16 tensors may be mixed\n"
          "(16-bit ones widened exactly: the result is that of their float32 copies).");
    m.def("clip_", &clip_, nb::arg("tensors"), nb::arg("max_norm"), nb::arg("p") = 2.0,
          nb::arg("error_if_nonfinite") = false, nb::arg("eps") = GCK_CLIP_EPS_DEFAULT,
          nb::sig("def clip_(tensors: Array | Iterable[Array], max_norm: float, p: float = 2.0, "
                  "error_if_nonfinite: bool = False, eps: float = 1e-06) -> float"),
          "Clips the tensors in place by their total p-norm, as torch.nn.utils.clip_grad_norm_: coef =\n"
          "max_norm / (total + eps); when coef < 1 every element is multiplied by it (float32: by float32(coef);\n"
          "bfloat16/float16: by float32(coef), the product rounded to the 16-bit dtype, as torch's mul_).\n"
          "ONE call of gck_tensors_clip_by_norm. Returns the total norm before clipping.\n\n"
          "With error_if_nonfinite a NaN/inf total raises NonFiniteError and no tensor is touched.");
    m.def("clip_info_", &clip_info, nb::arg("tensors"), nb::arg("max_norm"), nb::arg("p") = 2.0,
          nb::arg("error_if_nonfinite") = false, nb::arg("eps") = GCK_CLIP_EPS_DEFAULT,
          nb::sig("def clip_info_(tensors: Array | Iterable[Array], max_norm: float, p: float = 2.0, "
                  "error_if_nonfinite: bool = False, eps: float = 1e-06) -> tuple[float, float, bool]"),
          "As clip_, returning (total_norm, coef, clipped).");
    m.def("tensors_add_", &tensors_add_, nb::arg("acc"), nb::arg("x"),
          nb::sig("def tensors_add_(acc: Iterable[Array], x: Iterable[Array]) -> None"),
          "acc[i] += x[i] for every pair of the two lists, in one call (gck_tensors_add). x may hold\n"
          "bfloat16/float16 tensors (widened exactly); acc float32/float64 only.");
    m.def("tensors_axpy_", &tensors_axpy_, nb::arg("acc"), nb::arg("w"), nb::arg("x"),
          nb::sig("def tensors_axpy_(acc: Iterable[Array], w: float, x: Iterable[Array]) -> None"),
          "acc[i] += w * x[i] (two roundings) for every pair, in one call (gck_tensors_axpy).");
    m.def("tensors_axpy_init_", &tensors_axpy_init_, nb::arg("dst"), nb::arg("w"), nb::arg("x"),
          nb::sig("def tensors_axpy_init_(dst: Iterable[Array], w: float, x: Iterable[Array]) -> None"),
          "dst[i] = 0 + w * x[i] for every pair without reading dst: the first term of an accumulation.");
    m.def("tensors_scale_", &tensors_scale_, nb::arg("tensors"), nb::arg("s"),
          nb::sig("def tensors_scale_(tensors: Iterable[Array], s: float) -> None"),
          "t *= s for every tensor, in one call (gck_tensors_scale; float32 by float32(s); bfloat16/float16 as\n"
          "torch's mul_: the float32 product rounded to the 16-bit dtype).");
    m.def("tensors_div_sumsq_", &tensors_div_sumsq_, nb::arg("tensors"), nb::arg("d"),
          nb::sig("def tensors_div_sumsq_(tensors: Iterable[Array], d: float) -> float"),
          "t /= d (a true division) for every tensor, returning the total sum of squares of the results\n"
          "(float32/float64 tensors only: a 16-bit one raises UnsupportedError).");
    m.def("tensors_axpy_div_sumsq_", &tensors_axpy_div_sumsq_, nb::arg("acc"), nb::arg("w"), nb::arg("x"),
          nb::arg("d"),
          nb::sig("def tensors_axpy_div_sumsq_(acc: Iterable[Array], w: float, x: Iterable[Array], d: float) -> "
                  "float"),
          "The last micro-batch and the mean in one pass (gck_tensors_axpy_div_sumsq): acc[i] += w * x[i], then\n"
          "acc[i] /= d, returning the total sum of squares of the results; bit for bit tensors_axpy_(acc, w, x)\n"
          "followed by tensors_div_sumsq_(acc, d), reading and writing acc once. acc float32/float64 (a 16-bit\n"
          "acc raises UnsupportedError), x any of float32/float64/bfloat16/float16 (or acc itself). On an error\n"
          "nothing is written.");
    m.def("isa", &isa, "The instruction set the kernels run on now: 'scalar', 'avx2', 'avx512' or 'neon'.");
    m.def("available_isas", &available_isas, nb::sig("def available_isas() -> list[str]"),
          "The instruction sets this build and CPU can run (every one gives the same bits).");
    m.def("select_isa", &select_isa, nb::arg("name"),
          "Forces the kernels onto one ISA (tests, benchmarks). UnsupportedError if this CPU cannot run it,\n"
          "InvalidArgumentError for an unknown name. Environment: GRADCKPT_ISA picks one at start-up.");
    m.def("get_num_threads", &get_num_threads,
          "OpenMP threads gradckpt's calls use for large arrays: 1 in a process forked from one that "
          "loaded gradckpt (a fork-started multiprocessing or DataLoader worker), where they run "
          "single-threaded with the same bits.");
    m.def("set_num_threads", &set_num_threads, nb::arg("n"),
          "Sets the OpenMP threads for large arrays (results do not depend on it).");
    m.def("_bench_c", &bench_c, nb::arg("op"), nb::arg("tensors"), nb::arg("iters"), nb::arg("max_norm") = 0.1,
          "Benchmarks only: seconds per C call ('sumsq', 'norm' or 'clip') on the same arrays, timed in C.");
}

}  // namespace gckpy
