/* common/parse.c - the strict decimal parser of our metadata and manifests. */
#include "parse_internal.h"

#include <stddef.h>

int gck_parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (s == NULL || *s == '\0' || (s[0] == '0' && s[1] != '\0'))
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 1;
}
