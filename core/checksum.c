/* core/checksum.c - FNV-1a 64 / XXH3-64 over values as little-endian bytes. */
#include "checksum_internal.h"

#include <string.h>

#include <gradckpt/kernels.h>

#ifdef GCK_HAVE_XXH_DISPATCH
/* The same XXH3 stream, with the widest vector code the CPU runs (the
 * library's own choice; results never depend on it). The reference is weak:
 * Debian's static libxxhash.a and libxxhash builds for other setups lack the
 * entry point, and a library that then resolves it to NULL still loads and
 * uses the plain update. */
#  define XXH_DISPATCH_DISABLE_REPLACE
#  include <xxh_x86dispatch.h>
#  pragma weak XXH3_64bits_update_dispatch

static void gck_xxh3_update(XXH3_state_t *s, const void *p, size_t len)
{
    if (XXH3_64bits_update_dispatch != NULL)
        XXH3_64bits_update_dispatch(s, p, len);
    else
        XXH3_64bits_update(s, p, len);
}
#else
static void gck_xxh3_update(XXH3_state_t *s, const void *p, size_t len)
{
    XXH3_64bits_update(s, p, len);
}
#endif

void gck_hasher_init(gck_hasher *h, gck_checksum algo)
{
    h->algo = algo;
    h->fnv = GCK_FNV1A64_INIT;
    if (algo == GCK_CHECKSUM_XXH3_64)
        XXH3_64bits_reset(&h->xxh);
}

static void gck_hasher_update_bytes(gck_hasher *h, const void *p, size_t len)
{
    switch (h->algo) {
    case GCK_CHECKSUM_FNV1A64: h->fnv = gck_fnv1a64(p, len, h->fnv); break;
    case GCK_CHECKSUM_XXH3_64: gck_xxh3_update(&h->xxh, p, len); break;
    default: break;
    }
}

void gck_hasher_update_values(gck_hasher *h, const void *values, size_t n, gck_dtype dtype)
{
    const size_t esz = gck_dtype_size(dtype);
    if (h->algo == GCK_CHECKSUM_NONE || n == 0)
        return;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    if (esz > 1) {
        /* byte-swap a chunk at a time into a small buffer */
        unsigned char buf[4096];
        const unsigned char *src = values;
        const size_t per = sizeof buf / esz;
        for (size_t i = 0; i < n; i += per) {
            const size_t k = n - i < per ? n - i : per;
            for (size_t e = 0; e < k; e++)
                for (size_t b = 0; b < esz; b++)
                    buf[e * esz + b] = src[(i + e) * esz + (esz - 1 - b)];
            gck_hasher_update_bytes(h, buf, k * esz);
        }
        return;
    }
#endif
    gck_hasher_update_bytes(h, values, n * esz);
}

uint64_t gck_hasher_final(const gck_hasher *h)
{
    switch (h->algo) {
    case GCK_CHECKSUM_FNV1A64: return h->fnv;
    case GCK_CHECKSUM_XXH3_64: return XXH3_64bits_digest(&h->xxh);
    default: return 0;
    }
}
