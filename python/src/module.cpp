// python/src/module.cpp - the gradckpt._gradckpt extension module.
#include "common.h"

extern "C" {
#include "alloc_internal.h"
#include "io_internal.h"
}

NB_MODULE(_gradckpt, m)
{
    m.doc() = "gradckpt's C library, bound with nanobind (use the gradckpt package, not this module).";
    m.def("_register_errors", &gckpy::register_errors, nb::arg("by_status"), nb::arg("dtype_error"),
          "Internal: the exception class for each gck_status value (called once by gradckpt/__init__.py).");
    m.def("version", [] { return std::string(gck_version_string()); }, "The C library's version, e.g. '0.1.0'.");
    m.def("status_name", [](int s) { return std::string(gck_status_name((gck_status)s)); }, nb::arg("status"),
          "The C name of a status code, e.g. 'GCK_ERR_NOT_FOUND'.");
    m.attr("STATUS_COUNT") = GCK_STATUS_COUNT;
    m.attr("FNV1A64_INIT") = (uint64_t)GCK_FNV1A64_INIT;
    m.attr("CLIP_EPS_DEFAULT") = GCK_CLIP_EPS_DEFAULT;
    // Fault injection for the tests (the C library's own hooks): the k-th
    // allocation / file-system call from now fails once; k < 0 disables.
    m.def("_fail_alloc_after", [](long k) { gck_alloc_fail_after(k); }, nb::arg("k"),
          "Tests only: the k-th allocation of the C library from now fails (k < 0: none).");
    m.def("_fail_io_after", [](long k, int err) { gck_io_fail_after(k, err); }, nb::arg("k"), nb::arg("errno"),
          "Tests only: the k-th open/write/fsync/close/rename from now fails with errno (k < 0: none).");
    gckpy::init_kernels(m);
    gckpy::init_checkpointer(m);
    gckpy::init_files(m);
    gckpy::init_torch_ops(m);
}
