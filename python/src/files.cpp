// python/src/files.cpp - Snapshot (safetensors files) and Store (versions with deltas).
#include "common.h"

#include <memory>
#include <string>
#include <vector>

// The read-only open is in the C library only once branch wt/storefix is in:
// a weak reference, so this extension builds either way and Store(readonly=True)
// works as soon as the library has it (nullptr until then).
extern "C" gck_status gck_store_open_readonly(const char *dir, gck_store **out) __attribute__((weak));

namespace gckpy {

bool has_readonly_store()
{
    return &gck_store_open_readonly != nullptr;
}

namespace {

nb::object torch_view_of(const gck_tensor_info &ti, nb::handle owner)
{
    nb::module_ torch = nb::module_::import_("torch");
    PyObject *tdt = torch_dtype_of(ti.dtype);
    if (tdt == nullptr)
        raise_msg(GCK_ERR_UNSUPPORTED,
                  std::string("tensor '") + ti.name + "': this torch has no " + dtype_label(ti.dtype) + " dtype");
    // Handed over as raw bytes of the right width, then viewed as the real
    // dtype: DLPack has no code for the f8 types, and every width reinterprets
    // exactly.
    std::vector<size_t> shape(ti.ndim);
    for (size_t i = 0; i < ti.ndim; i++)
        shape[i] = (size_t)ti.shape[i];
    nb::dlpack::dtype d;
    d.code = (uint8_t)nb::dlpack::dtype_code::UInt;
    d.bits = (uint8_t)(8 * gck_dtype_size(ti.dtype));
    d.lanes = 1;
    if (d.bits == 16 || d.bits == 32 || d.bits == 64) {
        // torch's from_dlpack only knows uint8 among unsigned types: use ints.
        d.code = (uint8_t)nb::dlpack::dtype_code::Int;
    }
    nb::ndarray<nb::pytorch> arr(const_cast<void *>(ti.data), ti.ndim, shape.data(), owner, nullptr, d);
    nb::object t = nb::cast(arr, nb::rv_policy::reference);
    return t.attr("view")(nb::handle(tdt));
}

class Snapshot {
public:
    explicit Snapshot(uint64_t step) { check(gck_snapshot_create(step, &s_)); }
    Snapshot(gck_snapshot *owned, bool mapped) : s_(owned), mapped_(mapped) {}
    Snapshot(const Snapshot &) = delete;
    Snapshot &operator=(const Snapshot &) = delete;
    // The snapshot goes first, then (with the members) the arrays it borrowed.
    ~Snapshot() { gck_snapshot_destroy(s_); }
    gck_snapshot *get() const { return s_; }
    // Hands the C snapshot over (to gck_store_save_async, which owns it from then on).
    gck_snapshot *release()
    {
        gck_snapshot *s = s_;
        s_ = nullptr;
        return s;
    }

    uint64_t step() const { return gck_snapshot_step(s_); }
    uint64_t timestamp() const { return gck_snapshot_timestamp(s_); }
    void set_timestamp(uint64_t t) { check(gck_snapshot_set_timestamp(s_, t)); }
    nb::object loss_cid() const
    {
        const char *c = gck_snapshot_loss_cid(s_);
        return c ? nb::object(nb::str(c)) : nb::none();
    }
    void set_loss_cid(const std::string &c) { check(gck_snapshot_set_loss_cid(s_, c.c_str())); }
    size_t len() const { return gck_snapshot_num_tensors(s_); }

    // copy = false: the snapshot borrows the array's memory (gck_snapshot_add_tensor_ref),
    // and this object keeps the array alive for as long as the snapshot lives.
    void add(const std::string &name, nb::handle array, bool copy)
    {
        if (copy) {
            Hold h;
            Array a;
            resolve(array, ArgName{ "array" }, Access::Read, h, a, true);
            add_resolved(name, a, true);
            return;
        }
        Array a;
        resolve(array, ArgName{ "array" }, Access::Read, refs_, a, true);
        refs_.keep(nb::borrow(array));
        add_resolved(name, a, false);
    }

    void add_resolved(const std::string &name, const Array &a, bool copy)
    {
        const gck_status st = maybe_nogil(a.n * a.itemsize, [&] {
            return copy ? gck_snapshot_add_tensor(s_, name.c_str(), a.dtype, a.shape.data(), a.shape.size(), a.data)
                        : gck_snapshot_add_tensor_ref(s_, name.c_str(), a.dtype, a.shape.data(), a.shape.size(),
                                                      a.data);
        });
        check(st);
    }

    Hold &refs() { return refs_; }

    gck_tensor_info info(const std::string &name) const
    {
        gck_tensor_info ti;
        const gck_status st = gck_snapshot_find_tensor(s_, name.c_str(), &ti);
        if (st == GCK_ERR_NOT_FOUND)
            raise_msg(st, "the snapshot has no tensor '" + name + "'");
        check(st);
        return ti;
    }

    nb::list names() const
    {
        nb::list out;
        gck_tensor_info ti;
        for (size_t i = 0; i < len(); i++) {
            check(gck_snapshot_tensor(s_, i, &ti));
            out.append(nb::str(ti.name));
        }
        return out;
    }

    bool contains(const std::string &name) const
    {
        gck_tensor_info ti;
        return gck_snapshot_find_tensor(s_, name.c_str(), &ti) == GCK_OK;
    }

    nb::object numpy_of(const gck_tensor_info &ti, nb::handle self, bool readonly) const
    {
        return numpy_view(ti.data, ti.dtype, ti.shape, ti.ndim, self, readonly || mapped_);
    }

    nb::object torch_of(const gck_tensor_info &ti, nb::handle self) const
    {
        if (mapped_)
            raise_msg(GCK_ERR_INVALID_ARGUMENT, std::string("tensor '") + ti.name +
                                                    "': the snapshot was loaded with mmap=True, whose memory is "
                                                    "read-only and torch tensors cannot be; load with mmap=False");
        return torch_view_of(ti, self);
    }

    nb::dict metadata() const
    {
        nb::dict d;
        const size_t n = gck_snapshot_num_metadata(s_);
        for (size_t i = 0; i < n; i++) {
            const char *k = gck_snapshot_metadata_key(s_, i);
            d[nb::str(k)] = nb::str(gck_snapshot_metadata(s_, k));
        }
        return d;
    }

    void set_metadata(const std::string &k, const std::string &v)
    {
        check(gck_snapshot_set_metadata(s_, k.c_str(), v.c_str()));
    }

    void set_optimizer_state(const std::string &param, nb::handle blob)
    {
        Hold h;
        Array a;
        resolve(blob, ArgName{ "blob" }, Access::Read, h, a);
        check(gck_snapshot_set_optimizer_state(s_, param.c_str(), a.data, a.n * a.itemsize));
    }

    nb::object optimizer_state(const std::string &param, nb::handle self) const
    {
        const void *blob;
        size_t len;
        const gck_status st = gck_snapshot_find_optimizer_state(s_, param.c_str(), &blob, &len);
        if (st == GCK_ERR_NOT_FOUND)
            raise_msg(st, "the snapshot has no optimizer state for '" + param + "'");
        check(st);
        const int64_t shape[1] = { (int64_t)len };
        return numpy_view(blob, GCK_DTYPE_U8, shape, 1, self, true);
    }

    nb::list optimizer_params() const
    {
        nb::list out;
        const size_t n = gck_snapshot_num_optimizer_states(s_);
        for (size_t i = 0; i < n; i++) {
            const char *p;
            const void *b;
            size_t l;
            check(gck_snapshot_optimizer_state(s_, i, &p, &b, &l));
            out.append(nb::str(p));
        }
        return out;
    }

    void save(const std::string &path) const
    {
        const gck_status st = [&] {
            nb::gil_scoped_release nogil;
            return gck_snapshot_save(s_, path.c_str());
        }();
        check(st);
    }

private:
    Hold refs_;                // arrays borrowed by tensors added with copy=False
    gck_snapshot *s_ = nullptr;
    bool mapped_ = false;      // values may point into a read-only file mapping
};

Snapshot *load_snapshot(const std::string &path, bool mmap, bool verify)
{
    gck_snapshot *s = nullptr;
    const gck_status st = [&] {
        nb::gil_scoped_release nogil;
        return mmap ? gck_snapshot_load_mmap(path.c_str(), verify ? 1 : 0, &s) : gck_snapshot_load(path.c_str(), &s);
    }();
    check(st);
    return new Snapshot(s, mmap);
}

nb::dict tensor_meta(const gck_tensor_info &ti)
{
    nb::dict d;
    d["dtype"] = dtype_label(ti.dtype);
    nb::list shp;
    for (size_t i = 0; i < ti.ndim; i++)
        shp.append(ti.shape[i]);
    d["shape"] = nb::tuple(shp);
    d["nbytes"] = ti.nbytes;
    d["content_id"] = ti.content_id;
    return d;
}

// Builds a snapshot from Python arguments: tensors borrowed (no copy), kept
// alive by the Snapshot object; blobs and metadata copied.
std::unique_ptr<Snapshot> build_snapshot(nb::handle tensors, uint64_t step, nb::handle optimizer_state,
                                         nb::handle metadata, nb::handle timestamp)
{
    auto snap = std::make_unique<Snapshot>(step);
    gck_snapshot *s = snap->get();
    if (!timestamp.is_none())
        check(gck_snapshot_set_timestamp(s, nb::cast<uint64_t>(timestamp)));
    // every tensor resolved first, then added in one call (ids hashed on the
    // OpenMP threads, without the GIL)
    std::vector<std::string> names;
    std::vector<Array> arrays;
    size_t bytes = 0;
    for (nb::handle kv : tensors.attr("items")()) {
        names.push_back(nb::cast<std::string>(kv[0]));
        arrays.emplace_back();
        const std::string an = "tensors['" + names.back() + "']";
        resolve(kv[1], ArgName{ an.c_str() }, Access::Read, snap->refs(), arrays.back(), true);
        snap->refs().keep(nb::borrow(kv[1]));
        bytes += arrays.back().n * arrays.back().itemsize;
    }
    std::vector<gck_tensor_ref> refs(names.size());
    for (size_t i = 0; i < names.size(); i++)
        refs[i] = gck_tensor_ref{ names[i].c_str(), arrays[i].dtype, arrays[i].shape.data(), arrays[i].shape.size(),
                                  arrays[i].data };
    check(maybe_nogil(bytes, [&] { return gck_snapshot_add_tensors_ref(s, refs.data(), refs.size()); }));
    if (!optimizer_state.is_none())
        for (nb::handle kv : optimizer_state.attr("items")()) {
            const std::string p = nb::cast<std::string>(kv[0]);
            Hold h;
            Array a;
            const std::string an = "optimizer_state['" + p + "']";
            resolve(kv[1], ArgName{ an.c_str() }, Access::Read, h, a);
            check(gck_snapshot_set_optimizer_state(s, p.c_str(), a.data, a.n * a.itemsize));
        }
    if (!metadata.is_none())
        for (nb::handle kv : metadata.attr("items")()) {
            if (!nb::isinstance<nb::str>(kv[0]) || !nb::isinstance<nb::str>(kv[1]))
                raise_msg(GCK_ERR_INVALID_ARGUMENT, "metadata keys and values must be str");
            check(gck_snapshot_set_metadata(s, nb::cast<std::string>(kv[0]).c_str(),
                                            nb::cast<std::string>(kv[1]).c_str()));
        }
    return snap;
}

// The destinations of a *_into call: a mapping name -> writable array.
struct Dsts {
    Hold hold;
    std::vector<std::string> names;
    std::vector<const char *> namep;
    std::vector<void *> data;
    std::vector<size_t> sizes;
    size_t bytes = 0;
    explicit Dsts(nb::handle mapping)
    {
        nb::list items = nb::list(mapping.attr("items")());
        hold.keep(items);
        for (nb::handle kv : items) {
            names.push_back(nb::cast<std::string>(kv[0]));
            const std::string an = "dst['" + names.back() + "']";
            Array a;
            resolve(kv[1], ArgName{ an.c_str() }, Access::Write, hold, a);
            data.push_back(a.data);
            sizes.push_back(a.n * a.itemsize);
            bytes += sizes.back();
        }
        for (const auto &n : names)
            namep.push_back(n.c_str());
    }
};

Snapshot *load_into(const std::string &path, nb::handle dst)
{
    Dsts d(dst);
    gck_snapshot *fields = nullptr;
    const gck_status st = [&] {
        nb::gil_scoped_release nogil;
        return gck_snapshot_load_into(path.c_str(), d.namep.data(), d.data.data(), d.sizes.data(), d.names.size(),
                                      &fields);
    }();
    check(st);
    return new Snapshot(fields, false);
}

// A Python iterable of tags as C strings (valid while this lives).
struct Tags {
    std::vector<std::string> s;
    std::vector<const char *> p;
    explicit Tags(nb::handle tags)
    {
        for (nb::handle t : tags)
            s.push_back(nb::cast<std::string>(t));
        for (const auto &t : s)
            p.push_back(t.c_str());
    }
};

class Store {
public:
    Store(const std::string &dir, nb::object max_checkpoints, nb::object keep_every_n, nb::object delta_threshold,
          nb::object zstd_level, bool readonly)
        : dir_(dir)
    {
        const bool configure_ro = !max_checkpoints.is_none() || !keep_every_n.is_none() ||
                                  !delta_threshold.is_none() || !zstd_level.is_none();
        if (readonly) {
            if (!has_readonly_store())
                raise_msg(GCK_ERR_UNSUPPORTED, "Store(readonly=True) needs the read-only store open of the C "
                                               "library (gck_store_open_readonly), which this build does not have");
            if (configure_ro)
                raise_msg(GCK_ERR_INVALID_ARGUMENT, "a store opened read-only cannot be given a policy");
            const gck_status rc = [&] {
                nb::gil_scoped_release nogil;
                return gck_store_open_readonly(dir_.c_str(), &s_);
            }();
            check(rc);
            return;
        }
        const bool configure = !max_checkpoints.is_none() || !keep_every_n.is_none() ||
                               !delta_threshold.is_none() || !zstd_level.is_none();
        open_(nullptr);
        if (configure) {
            // Keep the recorded values of what the caller did not give.
            gck_store_config cfg;
            check(gck_store_config_get(s_, &cfg));
            if (!max_checkpoints.is_none())
                cfg.policy.max_checkpoints = nb::cast<size_t>(max_checkpoints);
            if (!keep_every_n.is_none())
                cfg.policy.keep_every_n = nb::cast<uint64_t>(keep_every_n);
            if (!delta_threshold.is_none())
                cfg.policy.delta_threshold_bytes = nb::cast<uint64_t>(delta_threshold);
            if (!zstd_level.is_none())
                cfg.zstd_level = nb::cast<int>(zstd_level);
            gck_store_close(s_);
            s_ = nullptr;
            open_(&cfg);
        }
    }
    Store(const Store &) = delete;
    Store &operator=(const Store &) = delete;
    ~Store() { gck_store_close(s_); }

    // Waits for an asynchronous save in flight; raises its error if nobody was told of it yet.
    void close()
    {
        gck_store *st = s_;
        s_ = nullptr;
        const gck_status rc = [&] {
            nb::gil_scoped_release nogil;
            return gck_store_close(st);
        }();
        check(rc);
    }

    gck_store *get() const
    {
        if (s_ == nullptr)
            raise_msg(GCK_ERR_INVALID_ARGUMENT, "the store '" + dir_ + "' is closed");
        return s_;
    }

    uint64_t save(nb::handle tensors, uint64_t step, nb::handle optimizer_state, nb::handle metadata,
                  nb::handle tags, nb::handle timestamp)
    {
        gck_store *st = get();
        const Tags tg(tags);
        const std::vector<const char *> &tag_p = tg.p;
        std::unique_ptr<Snapshot> snap = build_snapshot(tensors, step, optimizer_state, metadata, timestamp);
        uint64_t v = 0;
        gck_snapshot *s = snap->get();
        const gck_status rc = [&] {
            nb::gil_scoped_release nogil;
            return gck_store_save(st, s, tag_p.data(), tag_p.size(), &v);
        }();
        check(rc);
        return v;
    }

    // The tensors are copied (one copy, made by gck_store_save_async into the
    // buffers of the previous asynchronous save's copy): the caller may change
    // its arrays as soon as this returns; the save runs on the store's thread.
    void save_async(nb::handle tensors, uint64_t step, nb::handle optimizer_state, nb::handle metadata,
                    nb::handle tags, nb::handle timestamp)
    {
        gck_store *st = get();
        const Tags tg(tags);
        const std::vector<const char *> &tag_p = tg.p;
        std::unique_ptr<Snapshot> snap = build_snapshot(tensors, step, optimizer_state, metadata, timestamp);
        gck_snapshot *s = snap->release();
        const gck_status rc = [&] {
            nb::gil_scoped_release nogil;
            return gck_store_save_async(st, s, tag_p.data(), tag_p.size());
        }();
        check(rc);
    }

    nb::object wait()
    {
        gck_store *st = get();
        uint64_t v = 0;
        const gck_status rc = [&] {
            nb::gil_scoped_release nogil;
            return gck_store_wait(st, &v);
        }();
        check(rc);
        return v ? nb::object(nb::int_(v)) : nb::none();
    }

    uint64_t resolve_version(nb::handle which) const
    {
        gck_store *st = get();
        if (nb::isinstance<nb::int_>(which))
            return nb::cast<uint64_t>(which);
        const std::string w = nb::cast<std::string>(which);
        if (w == "latest") {
            const gck_entry *e = gck_store_latest(st);
            if (e == nullptr)
                raise_msg(GCK_ERR_NOT_FOUND, "the store '" + dir_ + "' has no version");
            return e->version;
        }
        uint64_t v = 0;
        check(gck_store_find_tag(st, w.c_str(), &v));
        return v;
    }

    Snapshot *restore(nb::handle which)
    {
        const uint64_t v = resolve_version(which);
        gck_snapshot *s = nullptr;
        gck_store *st = get();
        const gck_status rc = [&] {
            nb::gil_scoped_release nogil;
            return gck_store_restore(st, v, &s);
        }();
        check(rc);
        return new Snapshot(s, false);
    }

    Snapshot *restore_into(nb::handle which, nb::handle dst)
    {
        const uint64_t v = resolve_version(which);
        Dsts d(dst);
        gck_store *st = get();
        gck_snapshot *fields = nullptr;
        const gck_status rc = maybe_nogil(d.bytes, [&] {
            return gck_store_restore_into(st, v, d.namep.data(), d.data.data(), d.sizes.data(), d.names.size(),
                                          &fields);
        });
        check(rc);
        return new Snapshot(fields, false);
    }

    nb::list versions() const
    {
        gck_store *st = get();
        const size_t n = gck_store_versions(st, nullptr, 0);
        std::vector<uint64_t> v(n);
        gck_store_versions(st, v.data(), n);
        nb::list out;
        for (uint64_t x : v)
            out.append(x);
        return out;
    }

    nb::object latest() const
    {
        const gck_entry *e = gck_store_latest(get());
        return e ? nb::object(nb::int_(e->version)) : nb::none();
    }

    void tag(nb::handle which, const std::string &t) { check(gck_store_tag(get(), resolve_version(which), t.c_str())); }
    void untag(nb::handle which, const std::string &t)
    {
        check(gck_store_untag(get(), resolve_version(which), t.c_str()));
    }

    nb::dict info(nb::handle which) const
    {
        const uint64_t v = resolve_version(which);
        gck_version_info vi;
        check(gck_store_version_info(get(), v, &vi));
        nb::dict d;
        d["version"] = vi.version;
        d["step"] = vi.step;
        d["timestamp"] = vi.timestamp_secs;
        nb::list tags;
        for (size_t i = 0; i < vi.n_tags; i++)
            tags.append(nb::str(vi.tags[i]));
        nb::dict cids;
        for (size_t i = 0; i < vi.n_tensors; i++)
            cids[nb::str(vi.tensor_names[i])] = nb::str(vi.content_ids[i]);
        d["tags"] = tags;
        d["content_ids"] = cids;
        d["full_bytes"] = vi.full_bytes;
        d["disk_bytes"] = vi.stored_bytes;
        d["file"] = vi.file;
        d["is_delta"] = (bool)vi.is_delta;
        d["delta_from"] = vi.is_delta ? nb::object(nb::int_(vi.delta_from)) : nb::none();
        return d;
    }

    nb::dict stats() const
    {
        gck_store_stats s;
        check(gck_store_stats_get(get(), &s));
        nb::dict d;
        d["versions"] = s.versions;
        d["full_versions"] = s.full_versions;
        d["delta_versions"] = s.delta_versions;
        d["logical_bytes"] = s.logical_bytes;
        d["disk_bytes"] = s.disk_bytes;
        return d;
    }

    nb::dict config() const
    {
        gck_store_config c;
        check(gck_store_config_get(get(), &c));
        nb::dict d;
        d["max_checkpoints"] = c.policy.max_checkpoints;
        d["keep_every_n"] = c.policy.keep_every_n;
        d["delta_threshold_bytes"] = c.policy.delta_threshold_bytes;
        d["zstd_level"] = c.zstd_level;
        d["zstd_max_entropy"] = c.zstd_max_entropy;
        return d;
    }

    size_t verify()
    {
        size_t n = 0;
        gck_store *st = get();
        const gck_status rc = [&] {
            nb::gil_scoped_release nogil;
            return gck_store_verify(st, &n);
        }();
        check(rc);
        return n;
    }

    uint64_t gc()
    {
        uint64_t freed = 0;
        check(gck_store_gc(get(), &freed));
        return freed;
    }

    const std::string &dir() const { return dir_; }
    bool closed() const { return s_ == nullptr; }

private:
    void open_(const gck_store_config *cfg)
    {
        const gck_status rc = [&] {
            nb::gil_scoped_release nogil;
            return gck_store_open(dir_.c_str(), cfg, &s_);
        }();
        check(rc);
    }

    std::string dir_;
    gck_store *s_ = nullptr;
};

}  // namespace

void init_files(nb::module_ &m)
{
    m.attr("HAS_READONLY_STORE") = has_readonly_store();
    nb::class_<Snapshot>(m, "Snapshot",
                         "A training snapshot: named tensors of any safetensors dtype, the step, optimizer-state blobs,\n"
                         "a timestamp, a loss content id and string metadata; saved as a safetensors file.\n\n"
                         "``snap[name]`` is a read-only NumPy view of the snapshot's memory (no copy); the view keeps the\n"
                         "snapshot alive.")
        .def(nb::init<uint64_t>(), nb::arg("step") = 0, "An empty snapshot at `step`, timestamped now.")
        .def_prop_ro("step", &Snapshot::step, "The training step it was saved at.")
        .def_prop_rw("timestamp", &Snapshot::timestamp, &Snapshot::set_timestamp, "Creation time (seconds).")
        .def_prop_rw("loss_cid", &Snapshot::loss_cid, &Snapshot::set_loss_cid, "The loss content id, or None.")
        .def("add", &Snapshot::add, nb::arg("name"), nb::arg("array"), nb::arg("copy") = true,
             nb::sig("def add(self, name: str, array: Array, copy: bool = True) -> None"),
             "Adds a tensor (any dtype and shape, C-contiguous). copy=True copies its bytes; copy=False borrows\n"
             "the array (zero-copy: the snapshot keeps it alive and saves its memory as it is at save time; do\n"
             "not change it in between). InvalidArgumentError for a name already present or reserved.")
        .def("__setitem__", [](Snapshot &s, const std::string &n, nb::handle a) { s.add(n, a, true); },
             nb::arg("name"), nb::arg("array"),
             nb::sig("def __setitem__(self, name: str, array: Array) -> None"), "Same as add(name, array).")
        .def("__getitem__",
             [](nb::handle self, const std::string &name) {
                 const Snapshot &s = nb::cast<const Snapshot &>(self);
                 return s.numpy_of(s.info(name), self, true);
             },
             nb::arg("name"), nb::sig("def __getitem__(self, name: str) -> NDArray"),
             "Read-only NumPy view of a tensor (zero-copy). NotFoundError (a KeyError) if absent.")
        .def("numpy",
             [](nb::handle self, const std::string &name, bool writable) {
                 const Snapshot &s = nb::cast<const Snapshot &>(self);
                 return s.numpy_of(s.info(name), self, !writable);
             },
             nb::arg("name"), nb::arg("writable") = false,
             nb::sig("def numpy(self, name: str, writable: bool = False) -> NDArray"),
             "NumPy view of a tensor; writable=True gives a writable view of a snapshot not loaded with mmap\n"
             "(writing changes the values the snapshot would save, not their recorded content id).")
        .def("torch",
             [](nb::handle self, const std::string &name) {
                 const Snapshot &s = nb::cast<const Snapshot &>(self);
                 return s.torch_of(s.info(name), self);
             },
             nb::arg("name"), nb::sig("def torch(self, name: str) -> torch.Tensor"),
             "A tensor as a torch tensor over the snapshot's memory (zero-copy, keeps it alive). Refused for a\n"
             "snapshot loaded with mmap=True (read-only memory).")
        .def("tensor_info", [](const Snapshot &s, const std::string &name) { return tensor_meta(s.info(name)); },
             nb::arg("name"), nb::sig("def tensor_info(self, name: str) -> dict[str, Any]"),
             "dtype, shape, nbytes and content_id ('xxh3:<16 hex>') of a tensor.")
        .def("names", &Snapshot::names, nb::sig("def names(self) -> list[str]"), "Tensor names in name order.")
        .def("__len__", &Snapshot::len)
        .def("__contains__", &Snapshot::contains, nb::arg("name"))
        .def_prop_ro("metadata", &Snapshot::metadata, nb::sig("def metadata(self) -> dict[str, str]"),
                     "A copy of the user metadata.")
        .def("set_metadata", &Snapshot::set_metadata, nb::arg("key"), nb::arg("value"),
             "Sets (or replaces) one metadata entry; keys may not start with 'gradckpt.'.")
        .def("set_optimizer_state", &Snapshot::set_optimizer_state, nb::arg("param"), nb::arg("blob"),
             nb::sig("def set_optimizer_state(self, param: str, blob: Buffer | Array) -> None"),
             "Sets (or replaces) the optimizer-state blob of a parameter (its bytes are copied).")
        .def("optimizer_state",
             [](nb::handle self, const std::string &p) {
                 return nb::cast<const Snapshot &>(self).optimizer_state(p, self);
             },
             nb::arg("param"), nb::sig("def optimizer_state(self, param: str) -> NDArray"),
             "A parameter's optimizer blob as a read-only uint8 view.")
        .def_prop_ro("optimizer_params", &Snapshot::optimizer_params,
                     nb::sig("def optimizer_params(self) -> list[str]"), "Parameters with an optimizer blob.")
        .def("save", &Snapshot::save, nb::arg("path"),
             "Writes a safetensors file atomically and durably (temporary file, fsync, rename, directory fsync).")
        .def_static("load_into", &load_into, nb::arg("path"), nb::arg("dst"),
                    nb::sig("def load_into(path: str, dst: Mapping[str, Array]) -> Snapshot"),
                    "Reads the named tensors of a file straight into your arrays (each exactly the tensor's byte\n"
                    "size; '__optimizer__/<param>' for a blob), checking every content id; returns a Snapshot with\n"
                    "the file's step, timestamp and metadata and no tensors. Errors found while reading (IOError,\n"
                    "CorruptError) leave the arrays with unspecified bytes; the others leave them untouched.")
        .def_static("load", &load_snapshot, nb::arg("path"), nb::arg("mmap") = true, nb::arg("verify") = true,
                    "Reads and validates a safetensors file (ours or another writer's). mmap=True maps it read-only\n"
                    "and tensors are views of the mapping; verify=True checks every content id. CorruptError for a\n"
                    "bad file, IOError if it cannot be read.");

    nb::class_<Store>(m, "Store",
                      "Versioned snapshots in a directory: full versions are safetensors files, delta versions store only\n"
                      "what changed (XOR of the bits, byte planes, zstd); crash-safe manifest; one process at a time.")
        .def(nb::init<const std::string &, nb::object, nb::object, nb::object, nb::object, bool>(), nb::arg("dir"),
             nb::arg("max_checkpoints") = nb::none(), nb::arg("keep_every_n") = nb::none(),
             nb::arg("delta_threshold_bytes") = nb::none(), nb::arg("zstd_level") = nb::none(),
             nb::arg("readonly") = false,
             nb::sig("def __init__(self, dir: str | os.PathLike[str], max_checkpoints: int | None = None, "
                     "keep_every_n: int | None = None, delta_threshold_bytes: int | None = None, "
                     "zstd_level: int | None = None, readonly: bool = False) -> None"),
             "Opens (or creates) the store. Policy values left None keep the store's recorded ones (defaults for a\n"
             "new store: 10, 5, 1 MiB, zstd level 1). IOError if another writer has it open. readonly=True: a\n"
             "reader beside a writer (no lock, nothing written; save/tag/untag/gc refused), when the C library has\n"
             "gck_store_open_readonly (HAS_READONLY_STORE), else UnsupportedError.")
        .def("save", &Store::save, nb::arg("tensors"), nb::arg("step"), nb::arg("optimizer_state") = nb::none(),
             nb::arg("metadata") = nb::none(), nb::arg("tags") = nb::tuple(), nb::arg("timestamp") = nb::none(),
             nb::sig("def save(self, tensors: Mapping[str, Array], step: int, "
                     "optimizer_state: Mapping[str, Buffer | Array] | None = None, "
                     "metadata: Mapping[str, str] | None = None, tags: Iterable[str] = (), "
                     "timestamp: int | None = None) -> int"),
             "Saves a new version (full or delta by the policy) and returns its number.")
        .def("save_async", &Store::save_async, nb::arg("tensors"), nb::arg("step"),
             nb::arg("optimizer_state") = nb::none(), nb::arg("metadata") = nb::none(), nb::arg("tags") = nb::tuple(),
             nb::arg("timestamp") = nb::none(),
             nb::sig("def save_async(self, tensors: Mapping[str, Array], step: int, "
                     "optimizer_state: Mapping[str, Buffer | Array] | None = None, "
                     "metadata: Mapping[str, str] | None = None, tags: Iterable[str] = (), "
                     "timestamp: int | None = None) -> None"),
             "As save, on the store's background thread: copies the tensors (change your arrays at once; the\n"
             "store keeps that copy's memory for the next save's copy, until close) and returns; one save in\n"
             "flight at most (a second waits for the first, then copies). The save is acknowledged once\n"
             "wait() returns; its error is raised by wait(), the next save or close(), never lost. Every other\n"
             "method waits for the save in flight first.")
        .def("wait", &Store::wait, nb::sig("def wait(self) -> int | None"),
             "Waits for the asynchronous save in flight, and for the deletion of the files the last save dropped\n"
             "(evicted versions; a save deletes them on a thread of its own); returns the version the last\n"
             "asynchronous save became (None if none completed) or raises its error.")
        .def("restore", &Store::restore, nb::arg("version") = "latest",
             nb::sig("def restore(self, version: int | str = 'latest') -> Snapshot"),
             "Rebuilds a version (a number, 'latest' or a tag) bit for bit as a Snapshot.")
        .def("restore_into", &Store::restore_into, nb::arg("version"), nb::arg("dst"),
             nb::sig("def restore_into(self, version: int | str, dst: Mapping[str, Array]) -> Snapshot"),
             "Restores the named tensors of a version straight into your arrays (no other copy), every content id\n"
             "checked; returns a Snapshot of its step and metadata without tensors (dst {} reads only those).\n"
             "Errors while reading leave the arrays with unspecified bytes; argument errors leave them untouched.")
        .def_prop_ro("versions", &Store::versions, nb::sig("def versions(self) -> list[int]"),
                     "Retained versions, ascending.")
        .def_prop_ro("latest", &Store::latest, nb::sig("def latest(self) -> int | None"),
                     "The newest version, or None.")
        .def("tag", &Store::tag, nb::arg("version"), nb::arg("tag"),
             nb::sig("def tag(self, version: int | str, tag: str) -> None"),
             "Tags a version (tagged versions are never evicted).")
        .def("untag", &Store::untag, nb::arg("version"), nb::arg("tag"),
             nb::sig("def untag(self, version: int | str, tag: str) -> None"), "Removes a tag from a version.")
        .def("info", &Store::info, nb::arg("version") = "latest",
             nb::sig("def info(self, version: int | str = 'latest') -> dict[str, Any]"),
             "What the manifest records (no data read): step, timestamp, tags, content_ids (tensor -> id),\n"
             "full_bytes, disk_bytes, file, is_delta, delta_from.")
        .def("stats", &Store::stats, nb::sig("def stats(self) -> dict[str, int]"),
             "versions, full_versions, delta_versions, logical_bytes, disk_bytes.")
        .def("config", &Store::config, nb::sig("def config(self) -> dict[str, float]"), "The recorded policy.")
        .def("verify", &Store::verify, "Re-reads every version from disk and checks every byte; returns how many.")
        .def("gc", &Store::gc, "Removes files the manifest does not name; returns the bytes freed.")
        .def("close", &Store::close,
             "Waits for an asynchronous save in flight (raising its error if nobody was told of it), releases the\n"
             "lock; the object cannot be used afterwards.")
        .def_prop_ro("dir", &Store::dir, "The store's directory.")
        .def_prop_ro("closed", &Store::closed, "True after close().")
        .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
        .def("__exit__", [](Store &s, nb::handle, nb::handle, nb::handle) { s.close(); }, nb::arg("exc_type").none(),
             nb::arg("exc").none(), nb::arg("tb").none());
}

}  // namespace gckpy
