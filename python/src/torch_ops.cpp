// python/src/torch_ops.cpp - the hot paths of gradckpt.torch: gradients of parameters into one C call.
#include "common.h"

#include <cfloat>
#include <cmath>
#include <string>

namespace gckpy {

namespace {

PyObject *s_grad()
{
    static PyObject *s = PyUnicode_InternFromString("grad");
    return s;
}

// What a list of torch tensors resolved to: the C list, or a reason to let
// torch do it (another device or dtype, a non-contiguous tensor).
struct TorchList {
    List list;
    bool fallback = false;
    bool mixed = false;
    gck_dtype dtype = GCK_DTYPE_F32;
    bool any[GCK_DTYPE_COUNT] = {};  // the dtypes present
};

bool usable(nb::handle t, Array &a, Hold &h, const ArgName &name)
{
    // Anything torch itself would accept but we cannot take falls back; only
    // a non-tensor is an error here.
    PyTypeObject *tt = torch_tensor_type();
    if (tt == nullptr || !PyObject_TypeCheck(t.ptr(), tt))
        raise_dtype(name.str() + ": expected a torch.Tensor, got " + std::string(nb::inst_name(t).c_str()));
    try {
        resolve(t, name, Access::Write, h, a);
    } catch (nb::python_error &) {
        PyErr_Clear();
        return false;
    }
    return is_kernel_dtype(a.dtype);
}

void add(TorchList &out, const Array &a)
{
    if (out.list.data.empty())
        out.dtype = a.dtype;
    else if (a.dtype != out.dtype)
        out.mixed = true;
    out.any[a.dtype] = true;
    out.list.push(a);
}

// The tensors themselves (grads = false) or the .grad of each parameter
// that has one (grads = true); a single tensor counts as a list of one.
void collect(nb::handle seq, bool grads, const char *name, Hold &h, TorchList &out)
{
    PyTypeObject *tt = torch_tensor_type();
    nb::object items;
    if (tt != nullptr && PyObject_TypeCheck(seq.ptr(), tt))
        items = nb::make_tuple(seq);
    else {
        PyObject *fast = PySequence_Fast(seq.ptr(), "expected a tensor or an iterable of tensors");
        if (fast == nullptr)
            throw nb::python_error();
        items = nb::steal(fast);
    }
    h.keep(items);
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(items.ptr());
    PyObject **it = PySequence_Fast_ITEMS(items.ptr());
    out.list.data.reserve((size_t)n);
    out.list.lens.reserve((size_t)n);
    out.list.dtypes.reserve((size_t)n);
    Array a;
    for (Py_ssize_t i = 0; i < n; i++) {
        nb::handle t = it[i];
        nb::object g;
        if (grads) {
            PyObject *gp = PyObject_GetAttr(t.ptr(), s_grad());
            if (gp == nullptr)
                throw nb::python_error();
            g = nb::steal(gp);
            if (g.is_none())
                continue;
            h.keep(g);
            t = g;
        }
        if (!usable(t, a, h, ArgName{ name, i })) {
            out.fallback = true;
            return;
        }
        add(out, a);
    }
}

// The dtype of torch's total: its per-tensor norms (each in its tensor's
// dtype) stacked, so torch's type promotion: float64 if any, else float32 if
// any (or bfloat16 with float16), else the one 16-bit dtype.
gck_dtype result_gck_dtype(const TorchList &l)
{
    if (l.any[GCK_DTYPE_F64])
        return GCK_DTYPE_F64;
    if (l.any[GCK_DTYPE_F32] || (l.any[GCK_DTYPE_BF16] && l.any[GCK_DTYPE_F16]))
        return GCK_DTYPE_F32;
    return l.any[GCK_DTYPE_BF16] ? GCK_DTYPE_BF16 : l.any[GCK_DTYPE_F16] ? GCK_DTYPE_F16 : GCK_DTYPE_F32;
}

bool is_half(gck_dtype dt) { return dt == GCK_DTYPE_BF16 || dt == GCK_DTYPE_F16; }

nb::object result_dtype(const TorchList &l) { return nb::borrow(torch_dtype_of(result_gck_dtype(l))); }

// torch computes a p-norm as (sum |x|^p)^(1/p) in the tensors' dtype (float32
// sums of squares in float32; bfloat16/float16 ones in float32 too), so its total is +inf wherever total^p exceeds
// that dtype's largest value, where gradckpt's (accumulated in float64,
// rescaled when needed) is still finite. The drop-in reports torch's total
// there, so that error_if_nonfinite and the clipping (coef 0) agree with torch.
bool torch_overflows(double total, double p, const TorchList &l)
{
    if (!std::isfinite(total) || total <= 0 || p == 1.0 || std::isinf(p))
        return false;
    const double lim = result_gck_dtype(l) == GCK_DTYPE_F64 ? DBL_MAX : FLT_MAX;
    return p * std::log(total) > std::log(lim);
}

[[noreturn]] void raise_nonfinite(double p)
{
    raise_msg(GCK_ERR_NONFINITE, "the total norm of order " + std::to_string(p) + " is non-finite");
}

// clip_grad_norm_: (total_norm, dtype, count, scaled) or None when torch must
// do it. One gck_tensors_clip_by_norm call; with error_if_nonfinite, the norm
// first (gck_tensors_norm) and the scaling only if it is finite by torch's
// rule (gck_tensors_clip_with_norm: the same bits), so nothing is touched on
// error. Grads all bfloat16 (or all float16): torch's total and coefficient
// are tensors of that dtype, so only the norm is computed here (scaled
// False) and gradckpt.torch derives the coefficient from the rounded total
// as torch does, then scales with _torch_scale_params.
nb::object clip_params(nb::handle parameters, double max_norm, double norm_type, bool error_if_nonfinite)
{
    Hold h;
    TorchList l;
    collect(parameters, true, "parameters", h, l);
    if (l.fallback)
        return nb::none();
    const gck_tensor_list t = l.list.view();
    gck_clip_info info{};
    const size_t bytes = 3 * l.list.total_bytes;
    double total;
    if (is_half(result_gck_dtype(l))) {
        check(maybe_nogil(bytes, [&] { return gck_tensors_norm(&t, norm_type, nullptr, &total); }));
        if (torch_overflows(total, norm_type, l))
            total = INFINITY;
        return nb::make_tuple(total, result_dtype(l), l.list.data.size(), false);
    }
    if (!error_if_nonfinite) {
        check(maybe_nogil(bytes, [&] {
            return gck_tensors_clip_by_norm(&t, max_norm, norm_type, GCK_CLIP_EPS_DEFAULT, 0, &info);
        }));
        total = info.total_norm;
        if (torch_overflows(total, norm_type, l)) {
            // torch's coef max_norm / (inf + eps) is 0: what it writes is x * 0
            // (the same bits as x * coef * 0, Inf and NaN included).
            check(maybe_nogil(bytes, [&] { return gck_tensors_scale(&t, 0.0); }));
            total = INFINITY;
        }
    } else {
        check(maybe_nogil(bytes, [&] { return gck_tensors_norm(&t, norm_type, nullptr, &total); }));
        if (!std::isfinite(total) || torch_overflows(total, norm_type, l))
            raise_nonfinite(norm_type);
        check(maybe_nogil(bytes, [&] {
            return gck_tensors_clip_with_norm(&t, max_norm, total, GCK_CLIP_EPS_DEFAULT, 0, &info);
        }));
    }
    return nb::make_tuple(total, result_dtype(l), l.list.data.size(), true);
}

// get_total_norm: (total_norm, dtype) or None.
nb::object norm_tensors(nb::handle tensors, double norm_type)
{
    Hold h;
    TorchList l;
    collect(tensors, false, "tensors", h, l);
    if (l.fallback)
        return nb::none();
    const gck_tensor_list t = l.list.view();
    double total = 0;
    const gck_status st =
        maybe_nogil(l.list.total_bytes, [&] { return gck_tensors_norm(&t, norm_type, nullptr, &total); });
    check(st);
    if (torch_overflows(total, norm_type, l))
        total = INFINITY;
    return nb::make_tuple(total, result_dtype(l), l.list.data.size());
}

// clip_grads_with_norm_: the grads of `parameters` times coef; False when
// torch must do it.
bool scale_params(nb::handle parameters, double coef)
{
    Hold h;
    TorchList l;
    collect(parameters, true, "parameters", h, l);
    if (l.fallback)
        return false;
    const gck_tensor_list t = l.list.view();
    check(maybe_nogil(2 * l.list.total_bytes, [&] { return gck_tensors_scale(&t, coef); }));
    return true;
}

}  // namespace

void init_torch_ops(nb::module_ &m)
{
    m.def("_torch_clip_params", &clip_params, nb::arg("parameters"), nb::arg("max_norm"), nb::arg("norm_type"),
          nb::arg("error_if_nonfinite"),
          nb::sig("def _torch_clip_params(parameters: object, max_norm: float, norm_type: float, "
                  "error_if_nonfinite: bool) -> tuple[float, torch.dtype, int, bool] | None"),
          "gradckpt.torch internals: clips the .grad of every parameter in one gck_tensors_clip_by_norm call;\n"
          "(total_norm, dtype, count, scaled), or None when a gradient must go to torch (device, dtype, layout).\n"
          "scaled False (16-bit grads only): the norm alone, the caller scales.");
    m.def("_torch_norm_tensors", &norm_tensors, nb::arg("tensors"), nb::arg("norm_type"),
          nb::sig("def _torch_norm_tensors(tensors: object, norm_type: float) -> tuple[float, torch.dtype, int] | None"),
          "gradckpt.torch internals: one gck_tensors_norm over torch tensors, or None (torch's turn).");
    m.def("_torch_scale_params", &scale_params, nb::arg("parameters"), nb::arg("coef"),
          "gradckpt.torch internals: one gck_tensors_scale over the .grad of every parameter; False: torch's turn.");
}

}  // namespace gckpy
