// bench/shim.cc - turns the C specs of shim.h into google-benchmark (1.7.1) benchmarks.
#include "shim.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <gradckpt/status.h>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

struct Spec {  // the caller's spec, minus the pointers it may free, plus its name and label
    gck_bench_spec c;
    std::string name, label;
    std::vector<std::pair<int64_t, double>> slow;  // GCK_BENCH_SLOW: (n, FACTOR - 1) per matched size
};

// Benchmarks that called SkipWithError, by full name. A run with any of them
// fails (exit 1), so a benchmark that cannot run is never passed over in
// silence; the one exception is an ISA this CPU cannot run, for a benchmark
// whose name says that ISA ("sumsq_f32/neon/1t" on x86-64): it is listed as
// skipped and does not fail the run.
struct Outcomes {
    std::mutex mu;
    std::set<std::string> failed, isa_skipped;
};

Outcomes &outcomes()
{
    static Outcomes o;
    return o;
}

void skip(benchmark::State &st, const Spec &spec, const char *why, bool isa_unavailable)
{
    st.SkipWithError(why);
    const std::string full = spec.name + "/" + std::to_string(st.range(0)) + ": " + why;
    const std::string isa = std::string("/") + gck_isa_name(spec.c.isa) + "/";
    const bool named = (spec.name + "/").find(isa) != std::string::npos;
    Outcomes &o = outcomes();
    std::lock_guard<std::mutex> lock(o.mu);
    (isa_unavailable && named ? o.isa_skipped : o.failed).insert(full);
}

// GCK_BENCH_SMOKE=1: every benchmark runs exactly one iteration at one size
// (its smallest), for a test that the harness and every body work, not for
// timing.
bool smoke()
{
    static const bool on = [] {
        const char *env = std::getenv("GCK_BENCH_SMOKE");
        return env != nullptr && std::strcmp(env, "0") != 0 && *env != '\0';
    }();
    return on;
}

// GCK_BENCH_SLOW="REGEX:FACTOR" makes the benchmarks whose full name matches
// REGEX (std::regex_search, like --benchmark_filter) FACTOR times slower, to
// test a regression gate (bench/compare.py) against a known slowdown. Read
// once; a malformed value stops the program, since silently ignoring it would
// make the gate's test pass for the wrong reason.
struct Slowdown {
    bool on = false;
    std::regex re;
    double extra = 0;  // FACTOR - 1
};

const Slowdown &slowdown()
{
    static const Slowdown sd = [] {
        Slowdown r;
        const char *env = std::getenv("GCK_BENCH_SLOW");
        if (env == nullptr || *env == '\0')
            return r;
        const std::string v(env);
        const size_t colon = v.rfind(':');  // the last one: REGEX may contain ':'
        char *end = nullptr;
        const double factor = colon == std::string::npos ? 0 : std::strtod(v.c_str() + colon + 1, &end);
        if (colon == std::string::npos || end == v.c_str() + colon + 1 || *end != '\0' || !(factor >= 1)) {
            std::fprintf(stderr, "GCK_BENCH_SLOW=\"%s\": want REGEX:FACTOR with FACTOR >= 1\n", env);
            std::exit(2);
        }
        try {
            r.re = std::regex(v.substr(0, colon));
        } catch (const std::regex_error &e) {
            std::fprintf(stderr, "GCK_BENCH_SLOW: bad regex \"%s\": %s\n", v.substr(0, colon).c_str(), e.what());
            std::exit(2);
        }
        r.extra = factor - 1;
        r.on = r.extra > 0;
        return r;
    }();
    return sd;
}

void run(benchmark::State &st, const Spec &spec)
{
    const gck_bench_spec &s = spec.c;
    const int64_t n = st.range(0);
    // 1.7.1 has no SkipWithMessage: SkipWithError before the loop, then return.
    if (s.select_isa && gck_isa_select(s.isa) != GCK_OK) {
        skip(st, spec, gck_last_error(), !gck_isa_available(s.isa));
        return;
    }
#ifdef _OPENMP
    omp_set_num_threads(s.threads);
#endif
    if (s.prepare != nullptr) {
        if (const char *err = s.prepare(s.ctx, n, s.threads)) {
            skip(st, spec, err, false);
            return;
        }
    }
    double slow = 0;
    for (const auto &p : spec.slow)
        if (p.first == n)
            slow = p.second;
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    if (slow > 0) {
        // Spin (FACTOR - 1) x this iteration's own body time (wall clock),
        // so each timed iteration takes FACTOR x as long as its body did,
        // however fast the body ran; a busy-wait, not a sleep, so CPU time
        // grows too. The clock reads count as body time: sub-microsecond
        // bodies slow by more than FACTOR.
        for (auto _ : st) {
            const auto b0 = Clock::now();
            benchmark::DoNotOptimize(s.body(s.ctx, n));
            const auto b1 = Clock::now();
            const auto until = b1 + std::chrono::duration_cast<Clock::duration>((b1 - b0) * slow);
            while (Clock::now() < until) {
            }
        }
    } else {
        for (auto _ : st)
            benchmark::DoNotOptimize(s.body(s.ctx, n));
    }
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();

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
#ifndef _OPENMP
    if (spec->threads > 1)
        return;  // built without OpenMP (GRADCKPT_OPENMP=OFF): there is no second thread to measure
#endif
    // A smoke run leaves out what runs only at a model's full size above
    // 16 Mi elements (gpt2s, resnet50-sized snapshots): the same code runs
    // on the smaller models, and those sizes took most of bench_smoke's time.
    if (smoke() && spec->nsizes > 0 &&
        *std::min_element(spec->sizes, spec->sizes + spec->nsizes) > (int64_t{1} << 24))
        return;
    Spec s{*spec, spec->name, spec->label ? spec->label : "", {}};
    s.c.threads = spec->threads > 0 ? spec->threads : 1;
    s.c.name = s.c.label = nullptr;  // may be temporaries
    s.c.sizes = nullptr;
    const Slowdown &sd = slowdown();
    for (size_t i = 0; sd.on && i < spec->nsizes; i++) {
        // The full name as google-benchmark reports it (run_name in the JSON).
        std::string full = std::string(spec->name) + "/" + std::to_string(spec->sizes[i]);
        if (spec->iterations > 0)
            full += "/iterations:" + std::to_string(spec->iterations);
        if (std::regex_search(full, sd.re))
            s.slow.emplace_back(spec->sizes[i], sd.extra);
    }
    auto *b = benchmark::RegisterBenchmark(
        spec->name, [s = std::move(s)](benchmark::State &st) { run(st, s); });
    if (smoke() && spec->nsizes > 0)
        b->Arg(*std::min_element(spec->sizes, spec->sizes + spec->nsizes));
    for (size_t i = 0; !smoke() && i < spec->nsizes; i++)
        b->Arg(spec->sizes[i]);
    if (smoke())
        b->Iterations(1);
    else if (spec->iterations > 0)
        b->Iterations(spec->iterations);
}

extern "C" int gck_bench_smoke(void)
{
    return smoke() ? 1 : 0;
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
    Outcomes &o = outcomes();
    for (const std::string &n : o.isa_skipped)
        std::fprintf(stderr, "gradckpt-bench: skipped (this CPU cannot run its ISA): %s\n", n.c_str());
    for (const std::string &n : o.failed)
        std::fprintf(stderr, "gradckpt-bench: FAILED: %s\n", n.c_str());
    if (!o.failed.empty())
        std::fprintf(stderr, "gradckpt-bench: %zu benchmarks could not run\n", o.failed.size());
    return matched == 0 || !o.failed.empty() ? 1 : 0;
}
