// python/src/common.h - shared pieces of the extension: errors, array access, lists of arrays.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

extern "C" {
#include <gradckpt/gradckpt.h>
}

namespace nb = nanobind;

namespace gckpy {

// ---- errors ------------------------------------------------------------------

// Python classes for each gck_status, registered by gradckpt/__init__.py at
// import (they derive from the matching built-ins, which is easier to say in
// Python), plus DTypeError for arguments of an unsupported type.
void register_errors(nb::dict by_status, nb::handle dtype_error);

// Raises the class of `st` with gck_last_error() (read on this thread, right
// after the failing call) as the message.
[[noreturn]] void raise_status(gck_status st);
// Raises the class of `st` with a message of our own.
[[noreturn]] void raise_msg(gck_status st, const std::string &msg);
// Raises DTypeError (an UnsupportedError and a TypeError).
[[noreturn]] void raise_dtype(const std::string &msg);

inline void check(gck_status st)
{
    if (st != GCK_OK)
        raise_status(st);
}

// ---- arrays ------------------------------------------------------------------

// What an argument is used for: read only, or written in place.
enum class Access { Read, Write };

// One array argument, resolved to its memory. Valid while the Hold it was
// resolved into is alive.
struct Array {
    void *data = nullptr;
    size_t n = 0;           // elements
    gck_dtype dtype = GCK_DTYPE_F32;
    size_t itemsize = 4;
    bool readonly = false;
    std::vector<int64_t> shape;  // filled only when asked for
};

// Keeps the buffers and objects behind resolved arrays alive (buffer views
// are released with the GIL held, when the Hold goes out of scope).
class Hold {
public:
    Hold() = default;
    Hold(const Hold &) = delete;
    Hold &operator=(const Hold &) = delete;
    ~Hold();
    Py_buffer *new_view();
    void keep(nb::object o) { objs_.push_back(std::move(o)); }
    void reserve(size_t n) { objs_.reserve(n); }

private:
    std::deque<Py_buffer> views_;  // a deque: no allocation per view, stable addresses
    std::vector<nb::object> objs_;
};

// The name of an argument for messages: "x" or "tensors[3]".
struct ArgName {
    const char *name;
    Py_ssize_t index = -1;
    std::string str() const;
};

// Resolves one argument: a NumPy array, a PyTorch CPU tensor, or anything with
// __dlpack__ or the buffer protocol, C-contiguous, without copying. Raises a
// clear error naming the argument for anything else (non-contiguous, not on
// the CPU, read-only where written, not an array). Any dtype is accepted here;
// callers check the dtype they need (need_float). want_shape fills a.shape.
void resolve(nb::handle o, const ArgName &name, Access acc, Hold &hold, Array &a, bool want_shape = false);

// dtype checks of the numeric functions: F32, F64, BF16 or F16 (need_float);
// F32 or F64 where a value is written by accumulation (need_wide: acc of
// add_/axpy_, with a hint for 16-bit arrays).
bool is_kernel_dtype(gck_dtype dt);
void need_float(const Array &a, const ArgName &name);
void need_wide(const Array &a, const ArgName &name);
const char *dtype_label(gck_dtype dt);  // "float32", "bfloat16", ...

// A list of arrays as the C multi-tensor API takes it (tensors.h).
struct List {
    std::vector<void *> data;
    std::vector<size_t> lens;
    std::vector<gck_dtype> dtypes;
    size_t total = 0;  // elements
    size_t total_bytes = 0;
    gck_tensor_list view() const
    {
        gck_tensor_list t;
        t.count = data.size();
        t.data = data.data();
        t.lens = lens.data();
        t.dtype = dtypes.empty() ? GCK_DTYPE_F32 : dtypes[0];
        t.dtypes = dtypes.data();
        return t;
    }
    void push(const Array &a)
    {
        data.push_back(a.data);
        lens.push_back(a.n);
        dtypes.push_back(a.dtype);
        total += a.n;
        total_bytes += a.n * a.itemsize;
    }
};

// Resolves a sequence (or any iterable, or a single array) of float arrays.
void resolve_list(nb::handle seq, const char *name, Access acc, Hold &hold, List &out);

// Calls longer than this many bytes run with the GIL released.
constexpr size_t kReleaseGilBytes = 64 * 1024;

// Runs f with the GIL released when `bytes` is large (short calls keep it:
// releasing and taking it back costs more than they do).
template <typename F> auto maybe_nogil(size_t bytes, F &&f) -> decltype(f())
{
    if (bytes >= kReleaseGilBytes) {
        nb::gil_scoped_release nogil;
        return f();
    }
    return f();
}

// ---- torch -------------------------------------------------------------------

// The torch.Tensor type if torch has been imported, else nullptr.
PyTypeObject *torch_tensor_type();
// The torch dtype object for a gck_dtype (torch must be imported); nullptr if none.
PyObject *torch_dtype_of(gck_dtype dt);

// ---- module parts ------------------------------------------------------------

void init_kernels(nb::module_ &m);
void init_checkpointer(nb::module_ &m);
void init_files(nb::module_ &m);
void init_torch_ops(nb::module_ &m);

// A read-only (or writable) NumPy array over memory owned by `owner`.
nb::object numpy_view(const void *data, gck_dtype dt, const int64_t *shape, size_t ndim, nb::handle owner,
                      bool readonly);

}  // namespace gckpy
