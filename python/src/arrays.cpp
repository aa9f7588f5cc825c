// python/src/arrays.cpp - errors, and arguments resolved to memory without copying.
#include "common.h"

#include <cstring>

namespace gckpy {

// ---- errors ------------------------------------------------------------------

static PyObject *g_errors[GCK_STATUS_COUNT];  // strong references, set once at import
static PyObject *g_dtype_error;

void register_errors(nb::dict by_status, nb::handle dtype_error)
{
    for (int s = 1; s < GCK_STATUS_COUNT; s++) {
        nb::object cls = by_status[nb::int_(s)];
        Py_XDECREF(g_errors[s]);
        g_errors[s] = cls.release().ptr();
    }
    Py_XDECREF(g_dtype_error);
    g_dtype_error = nb::borrow(dtype_error).release().ptr();
}

static PyObject *error_class(gck_status st)
{
    if (st > 0 && st < GCK_STATUS_COUNT && g_errors[st] != nullptr)
        return g_errors[st];
    return PyExc_RuntimeError;
}

void raise_msg(gck_status st, const std::string &msg)
{
    PyErr_SetString(error_class(st), msg.c_str());
    throw nb::python_error();
}

void raise_status(gck_status st)
{
    std::string msg = gck_last_error();
    if (msg.empty())
        msg = gck_status_name(st);
    raise_msg(st, msg);
}

void raise_dtype(const std::string &msg)
{
    PyErr_SetString(g_dtype_error ? g_dtype_error : PyExc_TypeError, msg.c_str());
    throw nb::python_error();
}

// ---- dtypes ------------------------------------------------------------------

const char *dtype_label(gck_dtype dt)
{
    switch (dt) {
    case GCK_DTYPE_F64: return "float64";
    case GCK_DTYPE_F32: return "float32";
    case GCK_DTYPE_F16: return "float16";
    case GCK_DTYPE_BF16: return "bfloat16";
    case GCK_DTYPE_I64: return "int64";
    case GCK_DTYPE_I32: return "int32";
    case GCK_DTYPE_I16: return "int16";
    case GCK_DTYPE_I8: return "int8";
    case GCK_DTYPE_U8: return "uint8";
    case GCK_DTYPE_BOOL: return "bool";
    case GCK_DTYPE_U16: return "uint16";
    case GCK_DTYPE_U32: return "uint32";
    case GCK_DTYPE_U64: return "uint64";
    case GCK_DTYPE_F8_E5M2: return "float8_e5m2";
    case GCK_DTYPE_F8_E4M3: return "float8_e4m3fn";
    }
    return "unknown";
}

bool is_kernel_dtype(gck_dtype dt)
{
    return dt == GCK_DTYPE_F32 || dt == GCK_DTYPE_F64 || dt == GCK_DTYPE_BF16 || dt == GCK_DTYPE_F16;
}

void need_float(const Array &a, const ArgName &name)
{
    if (!is_kernel_dtype(a.dtype))
        raise_dtype(name.str() + ": expected float32, float64, bfloat16 or float16, got " + dtype_label(a.dtype));
}

void need_wide(const Array &a, const ArgName &name)
{
    if (a.dtype != GCK_DTYPE_F32 && a.dtype != GCK_DTYPE_F64)
        raise_dtype(name.str() + ": expected float32 or float64 here, got " + dtype_label(a.dtype) +
                    (a.dtype == GCK_DTYPE_BF16 || a.dtype == GCK_DTYPE_F16
                         ? " (16-bit values are accumulated into float32/float64 arrays, not into 16-bit ones)"
                         : ""));
}

std::string ArgName::str() const
{
    if (index < 0)
        return name;
    return std::string(name) + "[" + std::to_string(index) + "]";
}

// ---- holding buffers -----------------------------------------------------------

Hold::~Hold()
{
    for (Py_buffer &v : views_)
        PyBuffer_Release(&v);  // a no-op for a view that was never filled (obj NULL)
}

Py_buffer *Hold::new_view()
{
    views_.emplace_back();
    views_.back().obj = nullptr;
    return &views_.back();
}

// ---- torch -------------------------------------------------------------------

namespace {
struct TorchCache {
    bool tried = false;
    PyTypeObject *tensor = nullptr;
    PyObject *dtypes[GCK_DTYPE_COUNT] = {};
    PyObject *s_data_ptr, *s_numel, *s_is_contiguous, *s_dtype, *s_is_cpu, *s_device, *s_shape;
    PyObject *to_dlpack = nullptr;  // torch.utils.dlpack.to_dlpack (a C function), if present
};
TorchCache g_torch;

void torch_init()
{
    if (g_torch.tried)
        return;
    // torch is only used if the program imported it: never import it here.
    PyObject *mods = PyImport_GetModuleDict();
    PyObject *torch = PyDict_GetItemString(mods, "torch");
    if (torch == nullptr)
        return;
    PyObject *t = PyObject_GetAttrString(torch, "Tensor");
    if (t == nullptr || !PyType_Check(t)) {
        PyErr_Clear();
        Py_XDECREF(t);
        return;
    }
    g_torch.tensor = (PyTypeObject *)t;
    static const struct { gck_dtype dt; const char *name; } names[] = {
        { GCK_DTYPE_F64, "float64" }, { GCK_DTYPE_F32, "float32" }, { GCK_DTYPE_F16, "float16" },
        { GCK_DTYPE_BF16, "bfloat16" }, { GCK_DTYPE_I64, "int64" }, { GCK_DTYPE_I32, "int32" },
        { GCK_DTYPE_I16, "int16" }, { GCK_DTYPE_I8, "int8" }, { GCK_DTYPE_U8, "uint8" },
        { GCK_DTYPE_BOOL, "bool" }, { GCK_DTYPE_U16, "uint16" }, { GCK_DTYPE_U32, "uint32" },
        { GCK_DTYPE_U64, "uint64" }, { GCK_DTYPE_F8_E5M2, "float8_e5m2" }, { GCK_DTYPE_F8_E4M3, "float8_e4m3fn" },
    };
    for (const auto &n : names) {
        PyObject *d = PyObject_GetAttrString(torch, n.name);
        if (d == nullptr)
            PyErr_Clear();  // an older torch without the unsigned or f8 types
        g_torch.dtypes[n.dt] = d;
    }
    g_torch.s_data_ptr = PyUnicode_InternFromString("data_ptr");
    g_torch.s_numel = PyUnicode_InternFromString("numel");
    g_torch.s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
    g_torch.s_dtype = PyUnicode_InternFromString("dtype");
    g_torch.s_is_cpu = PyUnicode_InternFromString("is_cpu");
    g_torch.s_device = PyUnicode_InternFromString("device");
    g_torch.s_shape = PyUnicode_InternFromString("shape");
    PyObject *c = PyObject_GetAttrString(torch, "_C");
    if (c != nullptr) {
        g_torch.to_dlpack = PyObject_GetAttrString(c, "_to_dlpack");
        Py_DECREF(c);
    }
    if (g_torch.to_dlpack == nullptr)
        PyErr_Clear();
    g_torch.tried = true;
}

nb::object call0(nb::handle o, PyObject *name)
{
    PyObject *r = PyObject_CallMethodNoArgs(o.ptr(), name);
    if (r == nullptr)
        throw nb::python_error();
    return nb::steal(r);
}

nb::object attr(nb::handle o, PyObject *name)
{
    PyObject *r = PyObject_GetAttr(o.ptr(), name);
    if (r == nullptr)
        throw nb::python_error();
    return nb::steal(r);
}

// The common case of a torch tensor in one C call: torch.utils.dlpack.to_dlpack
// (torch's C function; Tensor.__dlpack__ is Python code costing ~2 us) gives
// data, device, dtype, shape and strides at once. False (nothing kept) for
// anything it refuses (a tensor that requires grad, a conjugate view) or that
// is not a plain C-contiguous CPU tensor: the attribute path then decides.
bool resolve_torch_dlpack(nb::handle o, Hold &hold, Array &a, bool want_shape)
{
    if (g_torch.to_dlpack == nullptr)
        return false;
    PyObject *cap = PyObject_CallOneArg(g_torch.to_dlpack, o.ptr());
    if (cap == nullptr) {
        PyErr_Clear();
        return false;
    }
    nb::object capo = nb::steal(cap);  // unconsumed: its destructor releases the tensor
    auto *t = (const nb::dlpack::dltensor *)PyCapsule_GetPointer(cap, "dltensor");
    if (t == nullptr) {
        PyErr_Clear();
        return false;
    }
    if (t->device.device_type != nb::device::cpu::value || t->dtype.lanes != 1)
        return false;
    using C = nb::dlpack::dtype_code;
    const auto code = (C)t->dtype.code;
    gck_dtype dt;
    if (code == C::Float && t->dtype.bits == 32)
        dt = GCK_DTYPE_F32;
    else if (code == C::Float && t->dtype.bits == 64)
        dt = GCK_DTYPE_F64;
    else if (code == C::Float && t->dtype.bits == 16)
        dt = GCK_DTYPE_F16;
    else if (code == C::Bfloat && t->dtype.bits == 16)
        dt = GCK_DTYPE_BF16;
    else
        return false;  // everything else: the attribute path
    size_t n = 1;
    int64_t expect = 1;
    for (int32_t i = t->ndim; i-- > 0;) {
        if (t->strides != nullptr && t->shape[i] != 1 && t->strides[i] != expect)
            return false;
        expect *= t->shape[i];
        n *= (size_t)t->shape[i];
    }
    a.dtype = dt;
    a.itemsize = gck_dtype_size(dt);
    a.n = n;
    a.data = (char *)t->data + t->byte_offset;
    a.readonly = false;
    if (want_shape)
        a.shape.assign(t->shape, t->shape + t->ndim);
    hold.keep(std::move(capo));
    return true;
}

// A torch tensor: to_dlpack, else five cheap attribute reads (with the
// messages for what cannot be taken).
void resolve_torch(nb::handle o, const ArgName &name, Hold &hold, Array &a, bool want_shape)
{
    if (resolve_torch_dlpack(o, hold, a, want_shape))
        return;
    nb::object cpu = attr(o, g_torch.s_is_cpu);
    if (cpu.ptr() != Py_True) {
        nb::object dev = attr(o, g_torch.s_device);
        raise_msg(GCK_ERR_INVALID_ARGUMENT, name.str() + ": expected a CPU tensor, got one on device '" +
                                                std::string(nb::str(dev).c_str()) + "'");
    }
    nb::object dt = attr(o, g_torch.s_dtype);
    int found = -1;
    for (int i = 0; i < GCK_DTYPE_COUNT; i++)
        if (g_torch.dtypes[i] == dt.ptr()) {
            found = i;
            break;
        }
    if (found < 0)
        raise_dtype(name.str() + ": tensor dtype " + std::string(nb::str(dt).c_str()) + " is not supported");
    nb::object contig = call0(o, g_torch.s_is_contiguous);
    if (contig.ptr() != Py_True)
        raise_msg(GCK_ERR_INVALID_ARGUMENT,
                  name.str() + ": expected a C-contiguous tensor (call .contiguous() to make a copy)");
    a.dtype = (gck_dtype)found;
    a.itemsize = gck_dtype_size(a.dtype);
    a.n = (size_t)PyLong_AsSsize_t(call0(o, g_torch.s_numel).ptr());
    a.data = PyLong_AsVoidPtr(call0(o, g_torch.s_data_ptr).ptr());
    a.readonly = false;  // torch has no read-only tensors
    if (PyErr_Occurred())
        throw nb::python_error();
    if (want_shape) {
        nb::object shp = attr(o, g_torch.s_shape);
        a.shape.clear();
        for (nb::handle d : shp)
            a.shape.push_back(nb::cast<int64_t>(d));
    }
    (void)hold;  // the caller's reference keeps the tensor alive
}
}  // namespace

PyTypeObject *torch_tensor_type()
{
    torch_init();
    return g_torch.tensor;
}

PyObject *torch_dtype_of(gck_dtype dt)
{
    torch_init();
    return (dt >= 0 && dt < GCK_DTYPE_COUNT) ? g_torch.dtypes[dt] : nullptr;
}

// ---- the buffer protocol -----------------------------------------------------

// The dtype of a buffer from its struct format; false for anything else.
static bool dtype_of_format(const char *fmt, Py_ssize_t itemsize, gck_dtype *out)
{
    if (fmt == nullptr)
        fmt = "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '<')
        fmt++;
    else if (*fmt == '>' || *fmt == '!')
        return false;  // big-endian on this little-endian host
    if (fmt[0] == '\0' || fmt[1] != '\0')
        return false;
    const char c = fmt[0];
    switch (c) {
    case 'f': *out = GCK_DTYPE_F32; return itemsize == 4;
    case 'd': *out = GCK_DTYPE_F64; return itemsize == 8;
    case 'e': *out = GCK_DTYPE_F16; return itemsize == 2;
    case '?': *out = GCK_DTYPE_BOOL; return itemsize == 1;
    case 'b': *out = GCK_DTYPE_I8; return itemsize == 1;
    case 'B': *out = GCK_DTYPE_U8; return itemsize == 1;
    case 'h': *out = GCK_DTYPE_I16; return itemsize == 2;
    case 'H': *out = GCK_DTYPE_U16; return itemsize == 2;
    case 'i': case 'l': case 'q':
        *out = itemsize == 4 ? GCK_DTYPE_I32 : GCK_DTYPE_I64;
        return itemsize == 4 || itemsize == 8;
    case 'I': case 'L': case 'Q':
        *out = itemsize == 4 ? GCK_DTYPE_U32 : GCK_DTYPE_U64;
        return itemsize == 4 || itemsize == 8;
    default: return false;
    }
}

// NumPy dtypes from ml_dtypes have no buffer format: their bits are taken
// through an unsigned view of the same width.
static bool resolve_ml_dtype(nb::handle o, const ArgName &name, Access acc, Hold &hold, Array &a, bool want_shape)
{
    PyObject *dt = PyObject_GetAttrString(o.ptr(), "dtype");
    if (dt == nullptr) {
        PyErr_Clear();
        return false;
    }
    nb::object dto = nb::steal(dt);
    PyObject *nm = PyObject_GetAttrString(dt, "name");
    if (nm == nullptr) {
        PyErr_Clear();
        return false;
    }
    nb::object nmo = nb::steal(nm);
    if (!PyUnicode_Check(nm))
        return false;
    const std::string s = PyUnicode_AsUTF8(nm);
    gck_dtype real;
    const char *raw;
    if (s == "bfloat16") {
        real = GCK_DTYPE_BF16;
        raw = "u2";
    } else if (s == "float8_e5m2") {
        real = GCK_DTYPE_F8_E5M2;
        raw = "u1";
    } else if (s == "float8_e4m3fn") {
        real = GCK_DTYPE_F8_E4M3;
        raw = "u1";
    } else {
        return false;
    }
    PyObject *v = PyObject_CallMethod(o.ptr(), "view", "s", raw);
    if (v == nullptr)
        throw nb::python_error();
    nb::object view = nb::steal(v);
    hold.keep(view);
    resolve(view, name, acc, hold, a, want_shape);
    a.dtype = real;
    return true;
}

static bool c_contiguous(const Py_buffer *v)
{
    return PyBuffer_IsContiguous(v, 'C') != 0;
}

// ---- anything with __dlpack__ that has no buffer (and is not torch) ------------

static void resolve_dlpack(nb::handle o, const ArgName &name, Access acc, Hold &hold, Array &a, bool want_shape)
{
    nb::ndarray<nb::ro> arr;
    if (!nb::try_cast(o, arr, false))
        raise_dtype(name.str() + ": expected an array (NumPy, a PyTorch CPU tensor, or an object with "
                                 "__dlpack__ or the buffer protocol), got " +
                    std::string(nb::inst_name(o).c_str()));
    if (acc == Access::Write) {
        nb::ndarray<> w;
        if (!nb::try_cast(o, w, false))
            raise_msg(GCK_ERR_INVALID_ARGUMENT, name.str() + ": the array is read-only but is written in place");
    }
    if (arr.device_type() != nb::device::cpu::value)
        raise_msg(GCK_ERR_INVALID_ARGUMENT, name.str() + ": expected an array in CPU memory");
    const nb::dlpack::dtype d = arr.dtype();
    gck_dtype dt;
    const auto code = (nb::dlpack::dtype_code)d.code;
    if (d.lanes != 1)
        raise_dtype(name.str() + ": vector dtypes are not supported");
    if (code == nb::dlpack::dtype_code::Float && d.bits == 32)
        dt = GCK_DTYPE_F32;
    else if (code == nb::dlpack::dtype_code::Float && d.bits == 64)
        dt = GCK_DTYPE_F64;
    else if (code == nb::dlpack::dtype_code::Float && d.bits == 16)
        dt = GCK_DTYPE_F16;
    else if (code == nb::dlpack::dtype_code::Bfloat && d.bits == 16)
        dt = GCK_DTYPE_BF16;
    else if (code == nb::dlpack::dtype_code::Int && d.bits == 8)
        dt = GCK_DTYPE_I8;
    else if (code == nb::dlpack::dtype_code::Int && d.bits == 16)
        dt = GCK_DTYPE_I16;
    else if (code == nb::dlpack::dtype_code::Int && d.bits == 32)
        dt = GCK_DTYPE_I32;
    else if (code == nb::dlpack::dtype_code::Int && d.bits == 64)
        dt = GCK_DTYPE_I64;
    else if (code == nb::dlpack::dtype_code::UInt && d.bits == 8)
        dt = GCK_DTYPE_U8;
    else if (code == nb::dlpack::dtype_code::UInt && d.bits == 16)
        dt = GCK_DTYPE_U16;
    else if (code == nb::dlpack::dtype_code::UInt && d.bits == 32)
        dt = GCK_DTYPE_U32;
    else if (code == nb::dlpack::dtype_code::UInt && d.bits == 64)
        dt = GCK_DTYPE_U64;
    else if (code == nb::dlpack::dtype_code::Bool && d.bits == 8)
        dt = GCK_DTYPE_BOOL;
    else
        raise_dtype(name.str() + ": unsupported dtype (DLPack code " + std::to_string(d.code) + ", " +
                    std::to_string(d.bits) + " bits)");
    // C order: the stride of each dimension (of extent > 1) is the product of
    // the extents after it.
    int64_t expect = 1;
    for (size_t i = arr.ndim(); i-- > 0;) {
        if (arr.shape(i) != 1 && arr.stride(i) != expect)
            raise_msg(GCK_ERR_INVALID_ARGUMENT, name.str() + ": expected a C-contiguous array");
        expect *= (int64_t)arr.shape(i);
    }
    a.dtype = dt;
    a.itemsize = gck_dtype_size(dt);
    a.n = arr.size();
    a.data = const_cast<void *>(arr.data());
    a.readonly = false;
    if (want_shape) {
        a.shape.clear();
        for (size_t i = 0; i < arr.ndim(); i++)
            a.shape.push_back((int64_t)arr.shape(i));
    }
    hold.keep(nb::cast(arr));
}

void resolve(nb::handle o, const ArgName &name, Access acc, Hold &hold, Array &a, bool want_shape)
{
    PyTypeObject *tt = torch_tensor_type();
    if (tt != nullptr && PyObject_TypeCheck(o.ptr(), tt)) {
        resolve_torch(o, name, hold, a, want_shape);
        return;
    }
    if (PyObject_CheckBuffer(o.ptr())) {
        Py_buffer *v = hold.new_view();
        if (PyObject_GetBuffer(o.ptr(), v, PyBUF_RECORDS_RO) != 0) {
            // Not exportable this way (e.g. an ml_dtypes array): forget the view.
            PyErr_Clear();
            v->obj = nullptr;
            if (resolve_ml_dtype(o, name, acc, hold, a, want_shape))
                return;
            resolve_dlpack(o, name, acc, hold, a, want_shape);
            return;
        }
        gck_dtype dt;
        if (!dtype_of_format(v->format, v->itemsize, &dt)) {
            if (resolve_ml_dtype(o, name, acc, hold, a, want_shape))
                return;
            raise_dtype(name.str() + ": unsupported element format '" + std::string(v->format ? v->format : "B") +
                        "'");
        }
        if (!c_contiguous(v))
            raise_msg(GCK_ERR_INVALID_ARGUMENT,
                      name.str() + ": expected a C-contiguous array (np.ascontiguousarray makes a copy)");
        if (acc == Access::Write && v->readonly)
            raise_msg(GCK_ERR_INVALID_ARGUMENT, name.str() + ": the array is read-only but is written in place");
        a.dtype = dt;
        a.itemsize = (size_t)v->itemsize;
        a.n = (size_t)(v->len / v->itemsize);
        a.data = v->buf;
        a.readonly = v->readonly != 0;
        if (want_shape) {
            a.shape.assign(v->shape, v->shape + v->ndim);
        }
        return;
    }
    resolve_dlpack(o, name, acc, hold, a, want_shape);
}

void resolve_list(nb::handle seq, const char *name, Access acc, Hold &hold, List &out)
{
    // A single array is a list of one (torch's clip_grad_norm_ takes either).
    PyTypeObject *tt = torch_tensor_type();
    if ((tt != nullptr && PyObject_TypeCheck(seq.ptr(), tt)) || PyObject_CheckBuffer(seq.ptr())) {
        Array a;
        resolve(seq, ArgName{ name }, acc, hold, a);
        need_float(a, ArgName{ name });
        out.push(a);
        return;
    }
    PyObject *fast = PySequence_Fast(seq.ptr(), "expected a sequence or an iterable of arrays");
    if (fast == nullptr)
        throw nb::python_error();
    nb::object f = nb::steal(fast);
    hold.keep(f);  // the items stay referenced by it
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    out.data.reserve((size_t)n);
    out.lens.reserve((size_t)n);
    out.dtypes.reserve((size_t)n);
    Array a;
    for (Py_ssize_t i = 0; i < n; i++) {
        const ArgName an{ name, i };
        resolve(items[i], an, acc, hold, a);
        need_float(a, an);
        out.push(a);
    }
}

// ---- arrays handed to Python -----------------------------------------------------

static nb::dlpack::dtype dl_dtype(gck_dtype dt)
{
    using C = nb::dlpack::dtype_code;
    auto mk = [](C c, int bits) {
        nb::dlpack::dtype d;
        d.code = (uint8_t)c;
        d.bits = (uint8_t)bits;
        d.lanes = 1;
        return d;
    };
    switch (dt) {
    case GCK_DTYPE_F64: return mk(C::Float, 64);
    case GCK_DTYPE_F32: return mk(C::Float, 32);
    case GCK_DTYPE_F16: return mk(C::Float, 16);
    case GCK_DTYPE_I64: return mk(C::Int, 64);
    case GCK_DTYPE_I32: return mk(C::Int, 32);
    case GCK_DTYPE_I16: return mk(C::Int, 16);
    case GCK_DTYPE_I8: return mk(C::Int, 8);
    case GCK_DTYPE_BOOL: return mk(C::Bool, 8);
    case GCK_DTYPE_U16:
    case GCK_DTYPE_BF16: return mk(C::UInt, 16);  // viewed as bfloat16 by the caller
    case GCK_DTYPE_U32: return mk(C::UInt, 32);
    case GCK_DTYPE_U64: return mk(C::UInt, 64);
    case GCK_DTYPE_U8:
    case GCK_DTYPE_F8_E5M2:
    case GCK_DTYPE_F8_E4M3: return mk(C::UInt, 8);
    }
    return mk(C::UInt, 8);
}

nb::object numpy_view(const void *data, gck_dtype dt, const int64_t *shape, size_t ndim, nb::handle owner,
                      bool readonly)
{
    std::vector<size_t> shp(shape, shape + ndim);
    nb::ndarray<nb::numpy> arr(const_cast<void *>(data), ndim, shp.data(), owner, nullptr, dl_dtype(dt),
                               nb::device::cpu::value, 0, 'C');
    nb::object o = nb::cast(arr, nb::rv_policy::reference);
    if (readonly)
        o.attr("flags").attr("writeable") = false;
    if (dt == GCK_DTYPE_BF16 || dt == GCK_DTYPE_F8_E5M2 || dt == GCK_DTYPE_F8_E4M3) {
        PyObject *ml = PyImport_ImportModule("ml_dtypes");
        if (ml == nullptr) {
            PyErr_Clear();
            raise_msg(GCK_ERR_UNSUPPORTED, std::string("a ") + dtype_label(dt) +
                                               " tensor needs the ml_dtypes package to be seen from NumPy "
                                               "(pip install ml_dtypes), or use gradckpt.torch");
        }
        nb::object mlo = nb::steal(ml);
        o = o.attr("view")(mlo.attr(dtype_label(dt)));
    }
    return o;
}

}  // namespace gckpy
