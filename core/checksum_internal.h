/* core/checksum_internal.h - checksums over the little-endian bytes of values (internal). */
#ifndef GCK_CHECKSUM_INTERNAL_H
#define GCK_CHECKSUM_INTERNAL_H

#include <stdint.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack: no allocation */
#include <xxhash.h>

#include <gradckpt/checkpoint.h>
#include <gradckpt/dtype.h>

#include "dtype_internal.h"
#include "status_internal.h"

/* A running checksum of one algorithm over a byte stream. */
typedef struct gck_hasher {
    gck_checksum algo;
    uint64_t fnv;
    XXH3_state_t xxh;
} gck_hasher;

GCK_INTERNAL void gck_hasher_init(gck_hasher *h, gck_checksum algo);
/* Feeds n values of `dtype` as their little-endian bytes (swapped on
 * big-endian CPUs), so the checksum is the same on every machine. */
GCK_INTERNAL void gck_hasher_update_values(gck_hasher *h, const void *values, size_t n, gck_dtype dtype);
GCK_INTERNAL uint64_t gck_hasher_final(const gck_hasher *h);

#endif /* GCK_CHECKSUM_INTERNAL_H */
