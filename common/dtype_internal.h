/* common/dtype_internal.h - dtype names and byte order, beside the public gck_dtype_size/name (internal). */
#ifndef GCK_DTYPE_INTERNAL_H
#define GCK_DTYPE_INTERNAL_H

#include <stddef.h>

#include <gradckpt/dtype.h>

#include "attributes.h"

/* The dtype whose safetensors name is `name`: 1 and *out set, or 0. */
GCK_INTERNAL int gck_dtype_parse(const char *name, gck_dtype *out);

/* In place: values of esz bytes between little-endian and this CPU's order
 * (nothing on little-endian CPUs; the conversion is its own inverse). */
GCK_INTERNAL void gck_swap_le(void *data, size_t nbytes, size_t esz);

#endif /* GCK_DTYPE_INTERNAL_H */
