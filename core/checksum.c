/* core/checksum.c - FNV-1a 64 / XXH3-64 over values as little-endian bytes; dtype sizes and names. */
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

static const size_t gck_dtype_sizes[GCK_DTYPE_COUNT] = {8, 4, 2, 2, 8, 4, 2, 1, 1, 1, 2, 4, 8, 1, 1};
static const char *const gck_dtype_names[GCK_DTYPE_COUNT] = {
    "F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL", "U16", "U32", "U64", "F8_E5M2", "F8_E4M3"};

size_t gck_dtype_size(gck_dtype dtype)
{
    return (unsigned)dtype < GCK_DTYPE_COUNT ? gck_dtype_sizes[dtype] : 0;
}

const char *gck_dtype_name(gck_dtype dtype)
{
    return (unsigned)dtype < GCK_DTYPE_COUNT ? gck_dtype_names[dtype] : "unknown";
}

void gck_swap_le(void *data, size_t nbytes, size_t esz)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    unsigned char *p = data;
    for (size_t e = 0; esz > 1 && e < nbytes; e += esz)
        for (size_t b = 0; b < esz / 2; b++) {
            const unsigned char t = p[e + b];
            p[e + b] = p[e + esz - 1 - b];
            p[e + esz - 1 - b] = t;
        }
#else
    (void)data, (void)nbytes, (void)esz;
#endif
}

int gck_dtype_parse(const char *name, gck_dtype *out)
{
    for (int d = 0; d < GCK_DTYPE_COUNT; d++)
        if (strcmp(name, gck_dtype_names[d]) == 0) {
            *out = (gck_dtype)d;
            return 1;
        }
    return 0;
}
