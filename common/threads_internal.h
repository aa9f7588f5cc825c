/* common/threads_internal.h - how many OpenMP threads the library may start (internal). */
#ifndef GCK_THREADS_INTERNAL_H
#define GCK_THREADS_INTERNAL_H

#include "attributes.h"

/* omp_get_max_threads(), or 1: without OpenMP, and in a process forked from
 * one that had loaded the library. GCC's libgomp cannot start a team in such
 * a child once the parent's thread has one: the team's threads are not
 * copied by fork, and the child waits for them forever (a forked
 * multiprocessing or DataLoader worker calling a kernel hung so). Every
 * parallel region of the library takes its team size, or its decision to
 * run threaded, from here. Thread-safe. */
GCK_INTERNAL int gck_omp_threads(void);

#endif /* GCK_THREADS_INTERNAL_H */
