/* common/json_text_internal.h - compact JSON text written straight into a buffer (internal).
 *
 * For the texts a save writes every time (a file's header, a delta's
 * description): building them as jansson values and dumping them cost more
 * CPU than the rest of a small delta save but its coding (a 1.44 MB state
 * of 48 tensors: 0.33 of 2.2 ms). The text is byte for byte what jansson's
 * json_dumps(JSON_COMPACT | JSON_PRESERVE_ORDER) makes of the same values,
 * so files do not change; tests/test_json_text.c checks that against
 * jansson. Reading stays with jansson. */
#ifndef GCK_JSON_TEXT_INTERNAL_H
#define GCK_JSON_TEXT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "attributes.h"

/* A growing text. Start from {0}; after a failure (no memory, a string that
 * is not UTF-8) every later call does nothing and `bad` stays set. */
typedef struct gck_jtext {
    char *p;     /* NUL-terminated while not bad; owned: free() it */
    size_t len, cap;
    int bad;     /* 1: out of memory, 2: a string was not valid UTF-8 */
} gck_jtext;

/* Appends n bytes as they are (punctuation, or text already JSON). */
GCK_INTERNAL void gck_jt_raw(gck_jtext *t, const char *s, size_t n);

/* Appends a NUL-terminated literal or JSON text as it is. */
GCK_INTERNAL void gck_jt_lit(gck_jtext *t, const char *s);

/* Appends s as a JSON string: quoted, '"' '\\' and control characters
 * escaped as jansson escapes them (\b \f \n \r \t, else \u00XX), other
 * bytes as they are. s must be UTF-8 (jansson's rules: no overlong forms,
 * surrogates or code points above U+10FFFF), else bad = 2. */
GCK_INTERNAL void gck_jt_str(gck_jtext *t, const char *s);

/* 1 when s is UTF-8 by the rules gck_jt_str (and jansson, reading) apply,
 * else 0: what the snapshot checks names and metadata against when they are
 * added, so that a save never meets one it cannot write. */
GCK_INTERNAL int gck_utf8_valid(const char *s);

/* Appends a signed decimal integer. */
GCK_INTERNAL void gck_jt_int(gck_jtext *t, long long v);

/* Appends "\"key\":" (key escaped as by gck_jt_str). */
GCK_INTERNAL void gck_jt_key(gck_jtext *t, const char *key);

#endif /* GCK_JSON_TEXT_INTERNAL_H */
