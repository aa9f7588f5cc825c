/* common/parse_internal.h - strict numbers of our metadata and manifests (internal). */
#ifndef GCK_PARSE_INTERNAL_H
#define GCK_PARSE_INTERNAL_H

#include <stdint.h>

#include "attributes.h"

/* Decimal text as written in our metadata and manifests: "0" or digits
 * without a leading zero, no sign or space, no overflow. 1 and *out set, or 0
 * (also for NULL). */
GCK_INTERNAL int gck_parse_u64(const char *s, uint64_t *out);

/* Room for any text gck_format_f64 writes, NUL included. */
#define GCK_F64_TEXT_MAX 32

/* A double as text that gck_parse_f64 turns back into the same bits, in any
 * locale: a finite value as "%.17g" in the "C" locale ("0.001",
 * "1.0000000000000001e-05", "-0", "4.9406564584124654e-324"), infinities as
 * "inf" / "-inf", the quiet NaN 0x7ff8000000000000 as "nan", its negative
 * (what x86 arithmetic produces) as "-nan", any other NaN as
 * "nan:0x<16 lowercase hex digits of its bits>". */
GCK_INTERNAL void gck_format_f64(double v, char out[GCK_F64_TEXT_MAX]);

/* The inverse, strict: exactly the forms above for inf and NaN; otherwise a
 * plain decimal "[-](digits[.digits]|.digits)[(e|E)[+|-]digits]" with no
 * space, '+' sign, hex or other spelling, read in the "C" locale and rounded
 * correctly (strtod), refused when it overflows. 1 and *out set, or 0. */
GCK_INTERNAL int gck_parse_f64(const char *s, double *out);

#endif /* GCK_PARSE_INTERNAL_H */
