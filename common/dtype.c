/* common/dtype.c - element sizes and safetensors names of dtypes; little-endian byte order. */
#include "dtype_internal.h"

#include <string.h>

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
