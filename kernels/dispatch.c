/* kernels/dispatch.c - ISA policy: best choice, GRADCKPT_ISA, once-init, gck_isa_* API, gck_max_threads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status_internal.h"
#include "threads_internal.h"
#include "cpu.h"
#include "kernels_internal.h"

static const char *const gck_isa_names[GCK_ISA_COUNT] = {
    [GCK_ISA_SCALAR] = "scalar",
    [GCK_ISA_AVX2] = "avx2",
    [GCK_ISA_AVX512] = "avx512",
    [GCK_ISA_NEON] = "neon",
};

static int gck_isa_is_valid(gck_isa isa)
{
    return (unsigned)isa < GCK_ISA_COUNT;
}

const char *gck_isa_name(gck_isa isa)
{
    return gck_isa_is_valid(isa) ? gck_isa_names[isa] : "unknown";
}

gck_status gck_isa_from_name(const char *name, gck_isa *out)
{
    GCK_CHECK_ARG(name != NULL && out != NULL, "gck_isa_from_name: NULL argument");
    for (int i = 0; i < GCK_ISA_COUNT; i++) {
        if (strcmp(name, gck_isa_names[i]) == 0) {
            *out = (gck_isa)i;
            return GCK_OK;
        }
    }
    return gck_fail(GCK_ERR_INVALID_ARGUMENT, "unknown ISA name '%.64s' (expected scalar|avx2|avx512|neon)",
                    name);
}

const gck_kernel_table *gck_kernels_compiled(gck_isa isa)
{
    switch (isa) {
    case GCK_ISA_SCALAR:
        return &gck_kernels_scalar;
#if GCK_HAVE_AVX2
    case GCK_ISA_AVX2:
        return &gck_kernels_avx2;
#endif
#if GCK_HAVE_AVX512
    case GCK_ISA_AVX512:
        return &gck_kernels_avx512;
#endif
#if GCK_HAVE_NEON
    case GCK_ISA_NEON:
        return &gck_kernels_neon;
#endif
    default:
        return NULL;
    }
}

/* The CPU is asked once; pthread_once publishes the answers to every thread. */
static pthread_once_t gck_cpu_once = PTHREAD_ONCE_INIT;
static gck_cpu_features gck_cpu;
_Atomic unsigned char gck_tune_zmm_widen, gck_tune_page_streams;

/* 0 for value a, 1 for b of the variable name, else dflt (0 or 1), an
 * unset or empty variable silently, any other value with one stderr line. */
static int gck_env_choice(const char *name, const char *a, const char *b, int dflt)
{
    const char *env = getenv(name);
    if (env == NULL || env[0] == '\0')
        return dflt;
    if (strcmp(env, a) == 0 || strcmp(env, b) == 0)
        return strcmp(env, b) == 0;
    fprintf(stderr, "gradckpt: %s='%.64s' is not %s|%s; using %s\n", name, env, a, b, dflt ? b : a);
    return dflt;
}

static void gck_cpu_probe_once(void)
{
    for (int i = 0; i < GCK_ISA_COUNT; i++)
        gck_cpu.can_run[i] = (unsigned char)(gck_cpu_can_run((gck_isa)i) != 0);
    gck_cpu.fma = (unsigned char)(gck_cpu_has_fma() != 0);
    /* The shape and the page walk change speed only, never a bit of a
     * result: the variables let tests and benchmarks run both ways on any
     * CPU. */
    const int zmm = gck_env_choice("GRADCKPT_AVX512_WIDEN", "ymm", "zmm", gck_cpu_zmm_widen());
    const int pages = gck_env_choice("GRADCKPT_PAGE_STREAMS", "1", "4", gck_cpu_page_streams() == 4) ? 4 : 1;
    atomic_store_explicit(&gck_tune_zmm_widen, (unsigned char)zmm, memory_order_relaxed);
    atomic_store_explicit(&gck_tune_page_streams, (unsigned char)pages, memory_order_relaxed);
}

const gck_cpu_features *gck_cpu_features_get(void)
{
    pthread_once(&gck_cpu_once, gck_cpu_probe_once);
    return &gck_cpu;
}

const gck_kernel_table *gck_kernels_for(gck_isa isa)
{
    const gck_kernel_table *t = gck_kernels_compiled(isa);
    return (t != NULL && gck_cpu_features_get()->can_run[isa]) ? t : NULL;
}

int gck_isa_available(gck_isa isa)
{
    return gck_kernels_for(isa) != NULL;
}

/* Best first: the widest vectors this CPU/OS can run. */
static const gck_kernel_table *gck_kernels_best(void)
{
    static const gck_isa order[] = {GCK_ISA_AVX512, GCK_ISA_AVX2, GCK_ISA_NEON};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const gck_kernel_table *t = gck_kernels_for(order[i]);
        if (t != NULL)
            return t;
    }
    return &gck_kernels_scalar;
}

/* pthread_once for the one-time choice, an atomic pointer for publication so
 * that gck_isa_select() may race with kernel calls without a data race. */
static pthread_once_t gck_isa_once = PTHREAD_ONCE_INIT;
static _Atomic(const gck_kernel_table *) gck_active;

static void gck_isa_init_once(void)
{
    const gck_kernel_table *t = gck_kernels_best();
    const char *env = getenv("GRADCKPT_ISA");
    if (env != NULL && env[0] != '\0') {
        gck_isa want;
        if (gck_isa_from_name(env, &want) != GCK_OK)
            fprintf(stderr, "gradckpt: GRADCKPT_ISA='%.64s' is not scalar|avx2|avx512|neon; using %s\n",
                    env, t->name);
        else if (gck_kernels_for(want) == NULL)
            fprintf(stderr, "gradckpt: GRADCKPT_ISA='%s' is not available on this CPU/OS or build; using %s\n",
                    env, t->name);
        else
            t = gck_kernels_for(want);
    }
    atomic_store_explicit(&gck_active, t, memory_order_release);
}

const gck_kernel_table *gck_kernels_active(void)
{
    const gck_kernel_table *t = atomic_load_explicit(&gck_active, memory_order_acquire);
    if (t == NULL) {
        pthread_once(&gck_isa_once, gck_isa_init_once);
        t = atomic_load_explicit(&gck_active, memory_order_acquire);
    }
    return t;
}

gck_isa gck_isa_active(void)
{
    return gck_kernels_active()->isa;
}

gck_status gck_isa_select(gck_isa isa)
{
    if (!gck_isa_is_valid(isa))
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "unknown ISA value %d", (int)isa);
    const gck_kernel_table *t = gck_kernels_for(isa);
    if (t == NULL) {
        if (gck_kernels_compiled(isa) == NULL)
            return gck_fail(GCK_ERR_UNSUPPORTED, "ISA '%s' is not compiled into this build of gradckpt",
                            gck_isa_name(isa));
        return gck_fail(GCK_ERR_UNSUPPORTED, "ISA '%s' is not available on this CPU/OS", gck_isa_name(isa));
    }
    /* Run the first-use init now so it cannot later overwrite this choice. */
    pthread_once(&gck_isa_once, gck_isa_init_once);
    atomic_store_explicit(&gck_active, t, memory_order_release);
    return GCK_OK;
}

int gck_max_threads(void)
{
    return gck_omp_threads();
}
