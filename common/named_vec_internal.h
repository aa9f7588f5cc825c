/* common/named_vec_internal.h - a vector of named items kept sorted bytewise by name (internal). */
#ifndef GCK_NAMED_VEC_INTERNAL_H
#define GCK_NAMED_VEC_INTERNAL_H

#include <stddef.h>

#include "attributes.h"

/* Sorted (bytewise by name) array of pointers to structs whose first member
 * is `char *name`. */
typedef struct gck_named_vec {
    void **items;
    size_t n, cap;
} gck_named_vec;

/* Index of name, or where to insert it (*found = 0). */
GCK_INTERNAL size_t gck_named_find(const gck_named_vec *v, const char *name, int *found);
/* Makes room for one more item; the only step of an insert that can fail. */
GCK_INTERNAL int gck_named_reserve(gck_named_vec *v);
/* Makes room for k more items (so many inserts then cannot fail). */
GCK_INTERNAL int gck_named_reserve_n(gck_named_vec *v, size_t k);
/* Inserts at `at` after gck_named_reserve succeeded: cannot fail. */
GCK_INTERNAL void gck_named_insert(gck_named_vec *v, size_t at, void *item);

#endif /* GCK_NAMED_VEC_INTERNAL_H */
