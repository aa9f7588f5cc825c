/* kernels/hash.c - FNV-1a 64: byte-serial by definition, so one portable version. */
#include <gradckpt/kernels.h>

#define GCK_FNV1A64_PRIME UINT64_C(1099511628211)

uint64_t gck_fnv1a64(const void *data, size_t len, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= GCK_FNV1A64_PRIME;
    }
    return h;
}
