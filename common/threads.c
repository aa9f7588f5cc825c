/* common/threads.c - the OpenMP team size the library may use, 1 in a forked child (threads_internal.h). */
#include "threads_internal.h"

#include <pthread.h>
#include <stdatomic.h>

#ifdef _OPENMP
#include <omp.h>
#endif

static atomic_int gck_forked;

static void gck_mark_forked(void)
{
    atomic_store_explicit(&gck_forked, 1, memory_order_relaxed);
}

/* Registered when the library is loaded, so that a fork from any thread of
 * the process, before or after the library's first parallel region, marks
 * the child. A failed registration leaves the library as it was before. */
__attribute__((constructor)) static void gck_threads_init(void)
{
    (void)pthread_atfork(NULL, NULL, gck_mark_forked);
}

int gck_omp_threads(void)
{
#ifdef _OPENMP
    return atomic_load_explicit(&gck_forked, memory_order_relaxed) ? 1 : omp_get_max_threads();
#else
    return 1;
#endif
}
