/* common/parse_internal.h - strict decimal numbers of our metadata and manifests (internal). */
#ifndef GCK_PARSE_INTERNAL_H
#define GCK_PARSE_INTERNAL_H

#include <stdint.h>

#include "attributes.h"

/* Decimal text as written in our metadata and manifests: "0" or digits
 * without a leading zero, no sign or space, no overflow. 1 and *out set, or 0
 * (also for NULL). */
GCK_INTERNAL int gck_parse_u64(const char *s, uint64_t *out);

#endif /* GCK_PARSE_INTERNAL_H */
