// python/src/checkpointer.cpp - Checkpointer and Checkpoint (zero-copy read-only views of layers).
#include "common.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <ctime>

namespace gckpy {

namespace {

void release_ckpt_capsule(void *p) noexcept
{
    gck_checkpoint_release((gck_checkpoint *)p);
}

// A capsule holding one reference of c: the owner of the arrays we hand out,
// so a view keeps its checkpoint alive after eviction and after the
// checkpointer and the Checkpoint object are gone.
nb::object ckpt_owner(const gck_checkpoint *c)
{
    return nb::capsule(gck_checkpoint_retain(c), release_ckpt_capsule);
}

class Checkpoint {
public:
    explicit Checkpoint(gck_checkpoint *owned) : c_(owned) {}  // takes one reference
    Checkpoint(const Checkpoint &) = delete;
    Checkpoint &operator=(const Checkpoint &) = delete;
    ~Checkpoint() { gck_checkpoint_release(c_); }
    const gck_checkpoint *get() const { return c_; }

    uint64_t id() const { return gck_checkpoint_id(c_); }
    uint64_t step() const { return gck_checkpoint_step(c_); }
    uint64_t created_at() const { return gck_checkpoint_created_at(c_); }
    uint64_t checksum() const { return gck_checkpoint_checksum(c_); }
    std::string checksum_algo() const { return algo_name(gck_checkpoint_checksum_algo(c_)); }
    std::string dtype() const { return dtype_label(gck_checkpoint_dtype(c_)); }
    size_t compressed_size() const { return gck_checkpoint_compressed_size(c_); }
    size_t num_values() const { return gck_checkpoint_num_values(c_); }
    double global_norm() const { return gck_checkpoint_global_norm(c_); }
    double norm_before_clip() const { return gck_checkpoint_norm_before_clip(c_); }
    double clip_coef() const { return gck_checkpoint_clip_coef(c_); }
    size_t len() const { return gck_checkpoint_num_layers(c_); }

    nb::list layers() const
    {
        nb::list out;
        gck_tensor_view v;
        for (size_t i = 0; i < len(); i++) {
            check(gck_checkpoint_layer(c_, i, &v));
            out.append(nb::str(v.layer_id));
        }
        return out;
    }

    gck_tensor_view find(const std::string &layer) const
    {
        gck_tensor_view v;
        const gck_status st = gck_checkpoint_find(c_, layer.c_str(), &v);
        if (st == GCK_ERR_NOT_FOUND)
            raise_msg(st, "checkpoint " + std::to_string(id()) + " has no layer '" + layer + "'");
        check(st);
        return v;
    }

    nb::object view_of(const gck_tensor_view &v) const
    {
        const int64_t shape[1] = { (int64_t)v.n };
        return numpy_view(v.values, v.dtype, shape, 1, ckpt_owner(c_), true);
    }

    nb::object getitem(const std::string &layer) const { return view_of(find(layer)); }
    bool contains(const std::string &layer) const
    {
        gck_tensor_view v;
        return gck_checkpoint_find(c_, layer.c_str(), &v) == GCK_OK;
    }
    double layer_norm(const std::string &layer) const { return find(layer).norm; }
    uint64_t layer_step(const std::string &layer) const { return find(layer).step; }

    nb::object torch_view(const std::string &layer) const
    {
        const gck_tensor_view v = find(layer);
        nb::module_ torch = nb::module_::import_("torch");
        const size_t shape[1] = { v.n };
        nb::dlpack::dtype d;
        // a BF16 checkpoint (gck_checkpoint_load of a C-written file) is a bfloat16 tensor of 2-byte values
        d.code = (uint8_t)(v.dtype == GCK_DTYPE_BF16 ? nb::dlpack::dtype_code::Bfloat : nb::dlpack::dtype_code::Float);
        d.bits = v.dtype == GCK_DTYPE_F64 ? 64 : v.dtype == GCK_DTYPE_BF16 ? 16 : 32;
        d.lanes = 1;
        nb::ndarray<nb::pytorch> arr(const_cast<void *>(v.values), 1, shape, ckpt_owner(c_), nullptr, d);
        return nb::cast(arr, nb::rv_policy::reference);
    }

    nb::list replay() const
    {
        nb::list out;
        gck_tensor_view v;
        for (size_t i = 0; i < len(); i++) {
            check(gck_checkpoint_layer(c_, i, &v));
            out.append(nb::make_tuple(nb::str(v.layer_id), view_of(v)));
        }
        return out;
    }

    bool verify() const
    {
        const gck_checksum algo = gck_checkpoint_checksum_algo(c_);
        return gck_checkpoint_compute_checksum(c_, algo) == gck_checkpoint_checksum(c_);
    }

    void save(const std::string &path) const
    {
        const gck_status st = [&] {
            nb::gil_scoped_release nogil;
            return gck_checkpoint_save(c_, path.c_str());
        }();
        check(st);
    }

    static std::string algo_name(gck_checksum a)
    {
        switch (a) {
        case GCK_CHECKSUM_FNV1A64: return "fnv1a64";
        case GCK_CHECKSUM_XXH3_64: return "xxh3";
        case GCK_CHECKSUM_NONE: return "none";
        }
        return "unknown";
    }

private:
    gck_checkpoint *c_;
};

Checkpoint *wrap(const gck_checkpoint *c)
{
    return new Checkpoint(gck_checkpoint_retain(c));
}

Checkpoint *load_checkpoint(const std::string &path)
{
    gck_checkpoint *c = nullptr;
    const gck_status st = [&] {
        nb::gil_scoped_release nogil;
        return gck_checkpoint_load(path.c_str(), &c);
    }();
    check(st);
    return new Checkpoint(c);
}

nb::dict diff_of(const Checkpoint &a, const Checkpoint &b)
{
    gck_layer_distance *d = nullptr;
    size_t n = 0;
    check(gck_checkpoint_diff(a.get(), b.get(), &d, &n));
    nb::dict out;
    for (size_t i = 0; i < n; i++)
        out[nb::str(d[i].layer_id)] = d[i].distance;
    gck_free(d);
    return out;
}

gck_accum_mode parse_mode(const std::string &m)
{
    if (m == "sum")
        return GCK_ACCUM_SUM;
    if (m == "mean")
        return GCK_ACCUM_MEAN;
    if (m == "weighted_mean")
        return GCK_ACCUM_WEIGHTED_MEAN;
    raise_msg(GCK_ERR_INVALID_ARGUMENT, "mode must be 'sum', 'mean' or 'weighted_mean', got '" + m + "'");
}

gck_checksum parse_checksum(const std::string &c)
{
    if (c == "fnv1a64")
        return GCK_CHECKSUM_FNV1A64;
    if (c == "xxh3" || c == "xxh3_64")
        return GCK_CHECKSUM_XXH3_64;
    if (c == "none")
        return GCK_CHECKSUM_NONE;
    raise_msg(GCK_ERR_INVALID_ARGUMENT, "checksum must be 'fnv1a64', 'xxh3' or 'none', got '" + c + "'");
}

gck_dtype parse_storage(const std::string &d)
{
    if (d == "float64" || d == "f64")
        return GCK_DTYPE_F64;
    if (d == "float32" || d == "f32")
        return GCK_DTYPE_F32;
    if (d == "bfloat16" || d == "bf16")
        return GCK_DTYPE_BF16;
    raise_msg(GCK_ERR_UNSUPPORTED, "dtype must be 'float64', 'float32' or 'bfloat16', got '" + d + "'");
}

uint64_t now_secs() { return (uint64_t)time(nullptr); }

class Checkpointer {
public:
    Checkpointer(size_t max_checkpoints, const std::string &mode, nb::object weights, nb::object clip_norm,
                 bool error_if_nonfinite, const std::string &dtype, const std::string &checksum,
                 size_t compression_threshold)
    {
        gck_config cfg;
        gck_config_init(&cfg);
        cfg.max_checkpoints = max_checkpoints;
        cfg.compression_threshold = compression_threshold;
        cfg.accumulation_mode = parse_mode(mode);
        if (!weights.is_none()) {
            for (nb::handle w : weights)
                weights_.push_back(nb::cast<double>(w));
            cfg.weights = weights_.data();
            cfg.n_weights = weights_.size();
        }
        if (!clip_norm.is_none()) {
            cfg.clip_enabled = 1;
            cfg.clip_norm = nb::cast<double>(clip_norm);
        }
        cfg.error_if_nonfinite = error_if_nonfinite ? 1 : 0;
        cfg.dtype = parse_storage(dtype);
        cfg.checksum = parse_checksum(checksum);
        check(gck_checkpointer_create(&cfg, &cp_));
    }
    Checkpointer(const Checkpointer &) = delete;
    Checkpointer &operator=(const Checkpointer &) = delete;
    ~Checkpointer() { gck_checkpointer_destroy(cp_); }

    void accumulate(const std::string &layer, nb::handle grad, nb::object step)
    {
        Hold h;
        Array a;
        const ArgName an{ "grad" };
        resolve(grad, an, Access::Read, h, a);
        need_float(a, an);
        const uint64_t s = step.is_none() ? gck_global_step(cp_) : nb::cast<uint64_t>(step);
        accumulate_one(layer, a, s);
        lens_[layer] = a.n;
    }

    // Every pair is checked (arrays, ids, lengths against this window and
    // against each other) before the first is accumulated, so a failure
    // leaves nothing half-done.
    void accumulate_many(nb::handle pairs, nb::object step)
    {
        nb::object items = nb::borrow(pairs);
        if (PyDict_Check(pairs.ptr()) || nb::hasattr(pairs, "items"))
            items = pairs.attr("items")();
        Hold h;
        std::vector<std::string> ids;
        std::vector<Array> arrs;
        std::map<std::string, size_t> seen;
        Py_ssize_t i = 0;
        for (nb::handle item : items) {
            nb::sequence pair = nb::borrow<nb::sequence>(item);
            if (nb::len(pair) != 2)
                raise_msg(GCK_ERR_INVALID_ARGUMENT, "accumulate_many: item " + std::to_string(i) +
                                                        " is not a (layer_id, grad) pair");
            nb::handle id = pair[0];
            if (!nb::isinstance<nb::str>(id))
                raise_msg(GCK_ERR_INVALID_ARGUMENT,
                          "accumulate_many: the layer id of item " + std::to_string(i) + " is not a str");
            std::string sid = nb::cast<std::string>(id);
            if (sid.empty() || sid.size() > GCK_LAYER_ID_MAX || sid.find('\0') != std::string::npos)
                raise_msg(GCK_ERR_INVALID_ARGUMENT, "accumulate_many: layer id of item " + std::to_string(i) +
                                                        " is empty, longer than 4096 bytes or holds NUL");
            Array a;
            const ArgName an{ "grads", i };
            resolve(pair[1], an, Access::Read, h, a);
            need_float(a, an);
            auto known = lens_.find(sid);
            auto now = seen.find(sid);
            const size_t want = now != seen.end() ? now->second : known != lens_.end() ? known->second : a.n;
            if (a.n != want)
                raise_msg(GCK_ERR_DIMENSION_MISMATCH, "dimension mismatch for layer '" + sid + "': expected " +
                                                          std::to_string(want) + ", got " + std::to_string(a.n));
            seen[sid] = a.n;
            ids.push_back(std::move(sid));
            arrs.push_back(a);
            i++;
        }
        const uint64_t s = step.is_none() ? gck_global_step(cp_) : nb::cast<uint64_t>(step);
        accumulate_list(ids, arrs, s);
    }

    // gradckpt.torch.GradientAccumulator: the .grad of each parameter into the
    // layer of the same index in `names` (parameters without one are skipped),
    // every gradient checked before the first is accumulated.
    size_t accumulate_grads(nb::handle names, nb::handle params, nb::object step, bool set_to_none)
    {
        Hold h;
        nb::list nl = nb::borrow<nb::list>(names), pl = nb::borrow<nb::list>(params);
        if (nb::len(nl) != nb::len(pl))
            raise_msg(GCK_ERR_INVALID_ARGUMENT, "accumulate_grads: names and params differ in length");
        std::vector<size_t> idx;
        std::vector<std::string> ids;
        std::vector<Array> arrs;
        for (size_t i = 0; i < nb::len(pl); i++) {
            nb::object g = pl[i].attr("grad");
            if (g.is_none())
                continue;
            h.keep(g);
            std::string id = nb::cast<std::string>(nl[i]);
            const std::string an = "the gradient of '" + id + "'";
            Array a;
            resolve(g, ArgName{ an.c_str() }, Access::Read, h, a);
            need_float(a, ArgName{ an.c_str() });
            auto known = lens_.find(id);
            if (known != lens_.end() && known->second != a.n)
                raise_msg(GCK_ERR_DIMENSION_MISMATCH, "dimension mismatch for layer '" + id + "': expected " +
                                                          std::to_string(known->second) + ", got " + std::to_string(a.n));
            ids.push_back(std::move(id));
            arrs.push_back(a);
        }
        const uint64_t s = step.is_none() ? gck_global_step(cp_) : nb::cast<uint64_t>(step);
        accumulate_list(ids, arrs, s);
        if (set_to_none) {
            static PyObject *grad = PyUnicode_InternFromString("grad");
            for (size_t i = 0; i < nb::len(pl); i++)
                if (PyObject_SetAttr(pl[i].ptr(), grad, Py_None) != 0)
                    throw nb::python_error();
        }
        return ids.size();
    }

    Checkpoint *flush(nb::object now)
    {
        const uint64_t t = now.is_none() ? now_secs() : nb::cast<uint64_t>(now);
        gck_checkpoint *out = nullptr;
        const gck_status st = [&] {
            nb::gil_scoped_release nogil;
            return gck_flush(cp_, t, &out);
        }();
        check(st);
        lens_.clear();
        return new Checkpoint(out);
    }

    nb::object latest() const
    {
        const gck_checkpoint *c = gck_latest_checkpoint(cp_);
        if (c == nullptr)
            return nb::none();
        return nb::cast(wrap(c), nb::rv_policy::take_ownership);
    }

    Checkpoint *by_id(uint64_t id) const
    {
        const gck_checkpoint *c = gck_checkpoint_by_id(cp_, id);
        if (c == nullptr)
            raise_msg(GCK_ERR_NOT_FOUND, "no checkpoint with id " + std::to_string(id) + " in the history");
        return wrap(c);
    }

    nb::list history() const
    {
        // The history holds the most recent flushes, whose ids are consecutive.
        nb::list out;
        const gck_checkpoint *last = gck_latest_checkpoint(cp_);
        if (last == nullptr)
            return out;
        uint64_t first = gck_checkpoint_id(last);
        while (first > 0 && gck_checkpoint_by_id(cp_, first - 1) != nullptr)
            first--;
        for (uint64_t id = first; id <= gck_checkpoint_id(last); id++)
            out.append(nb::cast(wrap(gck_checkpoint_by_id(cp_, id)), nb::rv_policy::take_ownership));
        return out;
    }

    nb::list pending_layers() const
    {
        const size_t n = gck_pending_layers(cp_, nullptr, 0);
        std::vector<const char *> names(n);
        gck_pending_layers(cp_, names.data(), n);
        nb::list out;
        for (const char *s : names)
            out.append(nb::str(s));
        return out;
    }

    size_t pending_count() const { return gck_pending_count(cp_); }
    uint64_t global_step() const { return gck_global_step(cp_); }

    nb::dict stats() const
    {
        const gck_checkpointer_stats s = gck_checkpointer_stats_get(cp_);
        nb::dict d;
        d["total_checkpoints"] = s.total_checkpoints;
        d["total_steps"] = s.total_steps;
        d["avg_checkpoint_norm"] = s.avg_checkpoint_norm;
        d["max_checkpoint_norm"] = s.max_checkpoint_norm;
        d["pending_tensors"] = s.pending_tensors;
        return d;
    }

    void discard_pending()
    {
        check(gck_checkpointer_discard_pending(cp_));
        lens_.clear();
    }

    // Finishes the window into the caller's arrays (gck_flush_into): dst is a
    // mapping layer -> array, or a sequence in pending-layer (bytewise) order.
    nb::tuple flush_into(nb::handle dst, nb::object now, bool record)
    {
        Hold h;
        List l;
        std::vector<std::string> ids;
        std::vector<const char *> idp;
        if (nb::hasattr(dst, "items")) {
            nb::list items = nb::list(dst.attr("items")());
            h.keep(items);
            Py_ssize_t i = 0;
            for (nb::handle kv : items) {
                ids.push_back(nb::cast<std::string>(kv[0]));
                const std::string an = "dst['" + ids.back() + "']";
                Array a;
                resolve(kv[1], ArgName{ an.c_str() }, Access::Write, h, a);
                need_float(a, ArgName{ an.c_str() });
                l.push(a);
                i++;
            }
            for (const auto &id : ids)
                idp.push_back(id.c_str());
        } else {
            resolve_list(dst, "dst", Access::Write, h, l);
        }
        return flush_list(l, idp.empty() && ids.empty() ? nullptr : idp.data(), now, record);
    }

    // gradckpt.torch.GradientAccumulator.step: every parameter whose layer is
    // pending receives the finished values in p.grad (a buffer from `spares`,
    // made once with torch.empty_like, where p.grad is None); one
    // gck_flush_into, nothing recorded.
    nb::tuple step_params(nb::list names, nb::list params, nb::dict spares)
    {
        const size_t np = gck_pending_layers(cp_, nullptr, 0);
        std::vector<const char *> pend(np);
        gck_pending_layers(cp_, pend.data(), np);  // bytewise order
        static PyObject *grad = PyUnicode_InternFromString("grad");
        Hold h;
        List l;
        std::vector<const char *> idp;
        nb::object empty_like, contiguous;
        for (size_t i = 0; i < nb::len(params); i++) {
            const char *id = PyUnicode_AsUTF8(names[i].ptr());
            if (id == nullptr)
                throw nb::python_error();
            if (!std::binary_search(pend.begin(), pend.end(), id,
                                    [](const char *x, const char *y) { return strcmp(x, y) < 0; }))
                continue;
            nb::handle p = params[i];
            nb::object g = nb::steal(PyObject_GetAttr(p.ptr(), grad));
            if (!g.is_valid())
                throw nb::python_error();
            if (g.is_none()) {
                nb::handle key = names[i];
                if (spares.contains(key)) {
                    g = spares[key];
                } else {
                    if (!empty_like.is_valid()) {
                        nb::module_ torch = nb::module_::import_("torch");
                        empty_like = torch.attr("empty_like");
                        contiguous = torch.attr("contiguous_format");
                    }
                    g = empty_like(p, nb::arg("memory_format") = contiguous);
                    spares[key] = g;
                }
                if (PyObject_SetAttr(p.ptr(), grad, g.ptr()) != 0)
                    throw nb::python_error();
            }
            const std::string an = std::string("the gradient of '") + id + "'";
            Array a;
            resolve(g, ArgName{ an.c_str() }, Access::Write, h, a);
            need_float(a, ArgName{ an.c_str() });
            h.keep(g);
            l.push(a);
            idp.push_back(id);
        }
        return flush_list(l, idp.data(), nb::int_(0), false);
    }

    uint64_t flush_count() const { return gck_flush_count(cp_); }

private:
    nb::tuple flush_list(const List &l, const char *const *ids, nb::object now, bool record)
    {
        const uint64_t t = now.is_none() ? now_secs() : nb::cast<uint64_t>(now);
        gck_flush_dst d;
        d.layer_ids = ids;
        d.tensors = l.view();
        gck_clip_info info{};
        gck_checkpoint *out = nullptr;
        const gck_status st = maybe_nogil(3 * l.total_bytes, [&] {
            return gck_flush_into(cp_, t, &d, &info, record ? &out : nullptr);
        });
        check(st);
        lens_.clear();
        nb::object ck = out ? nb::cast(new Checkpoint(out), nb::rv_policy::take_ownership) : nb::none();
        return nb::make_tuple(info.total_norm, info.coef, (bool)info.clipped, ck);
    }

    // One gck_accumulate_many call per run of tensors of one dtype (one call
    // for the usual all-float32 list); the caller has checked every tensor
    // against the window's lengths, so a mixed list cannot fail half-way but
    // for memory.
    void accumulate_list(const std::vector<std::string> &ids, const std::vector<Array> &arrs, uint64_t step)
    {
        size_t k = 0;
        std::vector<const char *> idp;
        std::vector<const void *> vals;
        std::vector<size_t> lens;
        while (k < ids.size()) {
            const gck_dtype dt = arrs[k].dtype;
            idp.clear();
            vals.clear();
            lens.clear();
            size_t bytes = 0;
            size_t e = k;
            for (; e < ids.size() && arrs[e].dtype == dt; e++) {
                idp.push_back(ids[e].c_str());
                vals.push_back(arrs[e].data);
                lens.push_back(arrs[e].n);
                bytes += arrs[e].n * arrs[e].itemsize;
            }
            const gck_status st = maybe_nogil(3 * bytes, [&] {
                const size_t c = idp.size();
                switch (dt) {
                case GCK_DTYPE_F32:
                    return gck_accumulate_many_f32(cp_, idp.data(), (const float *const *)vals.data(), lens.data(), c,
                                                   step);
                case GCK_DTYPE_BF16:
                    return gck_accumulate_many_bf16(cp_, idp.data(), (const uint16_t *const *)vals.data(),
                                                    lens.data(), c, step);
                case GCK_DTYPE_F16:
                    return gck_accumulate_many_f16(cp_, idp.data(), (const uint16_t *const *)vals.data(),
                                                   lens.data(), c, step);
                default:
                    return gck_accumulate_many_f64(cp_, idp.data(), (const double *const *)vals.data(), lens.data(),
                                                   c, step);
                }
            });
            check(st);
            for (size_t i = k; i < e; i++)
                lens_[ids[i]] = arrs[i].n;
            k = e;
        }
    }

    void accumulate_one(const std::string &layer, const Array &a, uint64_t step)
    {
        const gck_status st = maybe_nogil(a.n * a.itemsize * 3, [&] {
            switch (a.dtype) {
            case GCK_DTYPE_F32: return gck_accumulate_f32(cp_, layer.c_str(), (const float *)a.data, a.n, step);
            case GCK_DTYPE_BF16: return gck_accumulate_bf16(cp_, layer.c_str(), (const uint16_t *)a.data, a.n, step);
            case GCK_DTYPE_F16: return gck_accumulate_f16(cp_, layer.c_str(), (const uint16_t *)a.data, a.n, step);
            default: return gck_accumulate_f64(cp_, layer.c_str(), (const double *)a.data, a.n, step);
            }
        });
        check(st);
    }

    gck_checkpointer *cp_ = nullptr;
    std::vector<double> weights_;
    std::map<std::string, size_t> lens_;  // layer lengths fixed in this flush window
};

}  // namespace

void init_checkpointer(nb::module_ &m)
{
    nb::class_<Checkpoint>(m, "Checkpoint",
                           "A flushed gradient checkpoint: immutable, reference counted, layers in bytewise id order.\n\n"
                           "``cp[layer]`` is a read-only NumPy view of the checkpoint's own memory (no copy); the view\n"
                           "keeps the checkpoint alive after it is evicted and after the Checkpointer is gone.")
        .def_prop_ro("id", &Checkpoint::id, "0, 1, 2, ... in flush order.")
        .def_prop_ro("step", &Checkpoint::step, "The checkpointer's global step (accumulate calls) at flush.")
        .def_prop_ro("created_at", &Checkpoint::created_at, "The flush's `now` (seconds).")
        .def_prop_ro("checksum", &Checkpoint::checksum, "Checksum of the stored values (see checksum_algo).")
        .def_prop_ro("checksum_algo", &Checkpoint::checksum_algo, "'fnv1a64', 'xxh3' or 'none'.")
        .def_prop_ro("dtype", &Checkpoint::dtype, "'float64', 'float32' or 'bfloat16': how the values are stored.")
        .def_prop_ro("compressed_size", &Checkpoint::compressed_size, "The seed's compressed-size estimate (bytes).")
        .def_prop_ro("num_values", &Checkpoint::num_values, "Values over all layers.")
        .def_prop_ro("global_norm", &Checkpoint::global_norm, "L2 norm of the stored (clipped) values.")
        .def_prop_ro("norm_before_clip", &Checkpoint::norm_before_clip,
                     "The global L2 norm before clipping (equal to global_norm when nothing was clipped).")
        .def_prop_ro("clip_coef", &Checkpoint::clip_coef, "The clip factor applied (1.0 when not clipped).")
        .def_prop_ro("layers", &Checkpoint::layers, nb::sig("def layers(self) -> list[str]"),
                     "Layer ids in bytewise order.")
        .def("__len__", &Checkpoint::len)
        .def("__contains__", &Checkpoint::contains, nb::arg("layer"))
        .def("__getitem__", &Checkpoint::getitem, nb::arg("layer"),
             nb::sig("def __getitem__(self, layer: str) -> NDArray"),
             "Read-only NumPy view of a layer's values (zero-copy; a bfloat16 checkpoint's is an ml_dtypes.bfloat16\n"
             "array). NotFoundError (a KeyError) if absent.")
        .def("torch", &Checkpoint::torch_view, nb::arg("layer"),
             nb::sig("def torch(self, layer: str) -> torch.Tensor"),
             "A layer as a torch tensor over the checkpoint's memory (zero-copy; it keeps the checkpoint alive;\n"
             "a torch.bfloat16 tensor for a bfloat16 checkpoint).\n"
             "torch has no read-only tensors: do not write to it (the checkpoint is immutable and checksummed).")
        .def("layer_norm", &Checkpoint::layer_norm, nb::arg("layer"), "L2 norm of a layer (after clipping).")
        .def("layer_step", &Checkpoint::layer_step, nb::arg("layer"),
             "Step recorded by the last tensor accumulated into the layer.")
        .def("replay", &Checkpoint::replay, nb::sig("def replay(self) -> list[tuple[str, NDArray]]"),
             "(layer_id, read-only view) pairs in layer-id order (the seed's replay).")
        .def("verify", &Checkpoint::verify, "True when the values still match the checksum.")
        .def("save", &Checkpoint::save, nb::arg("path"),
             "Saves as a safetensors file (atomic and durable: temporary file, fsync, rename, directory fsync).")
        .def_static("load", &load_checkpoint, nb::arg("path"),
                    "Loads a file written by save(), checking its checksum. CorruptError for a bad file.")
        .def("__repr__", [](const Checkpoint &c) {
            return "Checkpoint(id=" + std::to_string(c.id()) + ", step=" + std::to_string(c.step()) +
                   ", layers=" + std::to_string(c.len()) + ", dtype=" + c.dtype() + ")";
        });

    nb::class_<Checkpointer>(
        m, "Checkpointer",
        "The gradient checkpointer: accumulates per-layer gradients over micro-batches (sum, mean or weighted\n"
        "mean, streaming: one buffer per layer), flushes them into immutable checkpoints with L2 norms, optional\n"
        "global-norm clipping and a checksum, and keeps a bounded history. One owner at a time (not thread-safe).")
        .def(nb::init<size_t, const std::string &, nb::object, nb::object, bool, const std::string &,
                      const std::string &, size_t>(),
             nb::arg("max_checkpoints") = 10, nb::arg("mode") = "sum", nb::arg("weights") = nb::none(),
             nb::arg("clip_norm") = nb::none(), nb::arg("error_if_nonfinite") = false,
             nb::arg("dtype") = "float64", nb::arg("checksum") = "fnv1a64", nb::arg("compression_threshold") = 1000,
             nb::sig("def __init__(self, max_checkpoints: int = 10, mode: str = 'sum', "
                     "weights: Sequence[float] | None = None, clip_norm: float | None = None, "
                     "error_if_nonfinite: bool = False, dtype: str = 'float64', checksum: str = 'fnv1a64', "
                     "compression_threshold: int = 1000) -> None"),
             "mode: 'sum' | 'mean' | 'weighted_mean' (weights[i] for the i-th tensor of a layer in a window, 1.0\n"
             "past the end); clip_norm: clip the global L2 norm at flush; dtype: storage 'float64', 'float32' or\n"
             "'bfloat16' (accumulated in float32, each layer finished in float32 and rounded once to bfloat16 at\n"
             "flush; the norms, the clipping decision and the checksum are those of the rounded values);\n"
             "checksum: 'fnv1a64' (the seed's), 'xxh3' (fast) or 'none'.")
        .def("accumulate", &Checkpointer::accumulate, nb::arg("layer_id"), nb::arg("grad"),
             nb::arg("step") = nb::none(),
             nb::sig("def accumulate(self, layer_id: str, grad: Array, step: int | None = None) -> None"),
             "Adds one float32/float64/bfloat16/float16 tensor to the layer's pending buffer (read in place, no\n"
             "copy; 16-bit values are widened exactly into the float32/float64 accumulators). The first\n"
             "tensor of a window fixes the layer's length: another length raises DimensionMismatchError and\n"
             "nothing changes. step (default: the global step) is recorded as the layer's step.")
        .def("accumulate_many", &Checkpointer::accumulate_many, nb::arg("grads"), nb::arg("step") = nb::none(),
             nb::sig("def accumulate_many(self, grads: Mapping[str, Array] | Iterable[tuple[str, Array]], "
                     "step: int | None = None) -> None"),
             "Accumulates every (layer_id, grad) of a mapping or of pairs. All of them are checked first: on any\n"
             "error nothing was accumulated.")
        .def("_accumulate_grads", &Checkpointer::accumulate_grads, nb::arg("names"), nb::arg("params"),
             nb::arg("step") = nb::none(), nb::arg("set_to_none") = false,
             nb::sig("def _accumulate_grads(self, names: list[str], params: list[object], step: int | None = None, "
                     "set_to_none: bool = False) -> int"),
             "gradckpt.torch internals: accumulates p.grad of every parameter that has one (then sets them to\n"
             "None when asked); returns how many.")
        .def("flush_into", &Checkpointer::flush_into, nb::arg("dst"), nb::arg("now") = nb::none(),
             nb::arg("record") = false,
             nb::sig("def flush_into(self, dst: Mapping[str, Array] | Iterable[Array], now: int | None = None, "
                     "record: bool = False) -> tuple[float, float, bool, Checkpoint | None]"),
             "Finishes the window into your arrays (gck_flush_into): dst maps every pending layer to a writable\n"
             "array of the storage dtype and the layer's length (or is a list in pending_layers order). The values\n"
             "are bit for bit what flush() would store. Only the storage dtype is written: bfloat16 storage fills\n"
             "bfloat16 arrays (torch.bfloat16 tensors, ml_dtypes.bfloat16 arrays); any other dst dtype raises\n"
             "UnsupportedError (float16 never matches: there is no float16 storage). record=False adds nothing\n"
             "to the history and copies nothing; record=True also records the checkpoint. Returns\n"
             "(norm_before_clip, clip_coef, clipped, checkpoint or None). On any error nothing changes.")
        .def("_step_params", &Checkpointer::step_params, nb::arg("names"), nb::arg("params"), nb::arg("spares"),
             nb::sig("def _step_params(self, names: list[str], params: list[object], spares: dict[str, object]) -> "
                     "tuple[float, float, bool, None]"),
             "gradckpt.torch internals: flush_into p.grad of every parameter with a pending layer (p.grad made\n"
             "from spares, or new ones kept there, where it is None), recording nothing.")
        .def_prop_ro("flush_count", &Checkpointer::flush_count, "Flush windows completed (flush and flush_into).")
        .def("flush", &Checkpointer::flush, nb::arg("now") = nb::none(),
             "Finishes every pending layer (mean division, norms, clipping, checksum) into a new Checkpoint added\n"
             "to the history. now: seconds (default: time.time()). NoAccumulatedGradientsError when nothing is\n"
             "pending; NonFiniteError (pending state kept) with error_if_nonfinite.")
        .def_prop_ro("latest", &Checkpointer::latest, nb::sig("def latest(self) -> Checkpoint | None"),
                     "The most recent checkpoint in the history, or None.")
        .def("by_id", &Checkpointer::by_id, nb::arg("id"),
             "The checkpoint with that id; NotFoundError when it left the history.")
        .def_prop_ro("history", &Checkpointer::history, nb::sig("def history(self) -> list[Checkpoint]"),
                     "Checkpoints in the history, oldest first.")
        .def("diff", [](const Checkpointer &, const Checkpoint &a, const Checkpoint &b) { return diff_of(a, b); },
             nb::arg("a"), nb::arg("b"), nb::sig("def diff(self, a: Checkpoint, b: Checkpoint) -> dict[str, float]"),
             "Per-layer L2 distance between two checkpoints (layer-id order; a layer in one only: its norm).")
        .def("global_norm", [](const Checkpointer &, const Checkpoint &c) { return c.global_norm(); }, nb::arg("cp"),
             "The global L2 norm of a checkpoint's stored values.")
        .def("replay", [](const Checkpointer &, const Checkpoint &c) { return c.replay(); }, nb::arg("cp"),
             nb::sig("def replay(self, cp: Checkpoint) -> list[tuple[str, NDArray]]"),
             "(layer_id, read-only view) pairs of a checkpoint in layer-id order.")
        .def_prop_ro("pending_layers", &Checkpointer::pending_layers, nb::sig("def pending_layers(self) -> list[str]"),
                     "Layer ids with pending tensors, bytewise order.")
        .def_prop_ro("pending_count", &Checkpointer::pending_count, "Tensors accumulated since the last flush.")
        .def_prop_ro("global_step", &Checkpointer::global_step, "accumulate calls so far.")
        .def("stats", &Checkpointer::stats, nb::sig("def stats(self) -> dict[str, float]"),
             "total_checkpoints, total_steps, avg/max_checkpoint_norm, pending_tensors.")
        .def("discard_pending", &Checkpointer::discard_pending,
             "Drops every pending tensor and starts a new window (the global step is kept).");
}

}  // namespace gckpy
