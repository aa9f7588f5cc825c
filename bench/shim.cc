// bench/shim.cc - turns the C specs of shim.h into google-benchmark (1.7.1) benchmarks.
#include "shim.h"

#include <chrono>
#include <string>
#include <utility>

#include <benchmark/benchmark.h>
#include <gradckpt/status.h>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

struct Spec {  // the caller's spec, minus the pointers it may free, plus its label
    gck_bench_spec c;
    std::string label;
};

void run(benchmark::State &st, const Spec &spec)
{
    const gck_bench_spec &s = spec.c;
    const int64_t n = st.range(0);
    // 1.7.1 has no SkipWithMessage: SkipWithError before the loop, then return.
    if (s.select_isa && gck_isa_select(s.isa) != GCK_OK) {
        st.SkipWithError(gck_last_error());
        return;
    }
#ifdef _OPENMP
    omp_set_num_threads(s.threads);
#else
    if (s.threads > 1) {
        st.SkipWithError("built without OpenMP (GRADCKPT_OPENMP=OFF)");
        return;
    }
#endif
    if (s.prepare != nullptr) {
        if (const char *err = s.prepare(s.ctx, n, s.threads)) {
            st.SkipWithError(err);
            return;
        }
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : st)
        benchmark::DoNotOptimize(s.body(s.ctx, n));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    // Bandwidth is a wall-clock rate (a 2-thread run's main thread may sleep
    // at the barrier, so its CPU time undercounts), but UseRealTime() would
    // append "/real_time" to every name and break filters ending in "/<n>$".
    // So the rates google-benchmark would derive from CPU time are replaced
    // by rates over the loop's wall time, under the same JSON keys.
    const double elems = static_cast<double>(st.iterations()) * static_cast<double>(n);
    using C = benchmark::Counter;
    st.counters["bytes_per_second"] = C(elems * s.bytes_per_elem / wall, C::kDefaults, C::kIs1024);
    st.counters["items_per_second"] = C(elems / wall);
    st.counters["elems"] = static_cast<double>(n);
    if (!spec.label.empty())
        st.SetLabel(spec.label);
    if (s.report != nullptr) {
        const char *names[8];
        double values[8];
        const size_t k = s.report(s.ctx, names, values, 8);
        for (size_t i = 0; i < k && i < 8; i++)
            st.counters[names[i]] = values[i];
    }
}

}  // namespace

extern "C" void gck_bench_register(const gck_bench_spec *spec)
{
    Spec s{*spec, spec->label ? spec->label : ""};
    s.c.threads = spec->threads > 0 ? spec->threads : 1;
    s.c.name = s.c.label = nullptr;  // may be temporaries
    s.c.sizes = nullptr;
    auto *b = benchmark::RegisterBenchmark(
        spec->name, [s = std::move(s)](benchmark::State &st) { run(st, s); });
    for (size_t i = 0; i < spec->nsizes; i++)
        b->Arg(spec->sizes[i]);
    if (spec->iterations > 0)
        b->Iterations(spec->iterations);
}

extern "C" void gck_bench_context(const char *key, const char *value)
{
    benchmark::AddCustomContext(key, value);
}

extern "C" int gck_bench_run(int *argc, char **argv)
{
    benchmark::Initialize(argc, argv);
    if (benchmark::ReportUnrecognizedArguments(*argc, argv))
        return 1;
    // No benchmark matching the filter is an error, so a smoke test whose
    // filter has gone stale fails instead of passing with nothing run.
    const size_t matched = benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return matched == 0 ? 1 : 0;
}
