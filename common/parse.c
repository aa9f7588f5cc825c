/* common/parse.c - the strict number parsers (and the f64 writer) of our metadata and manifests. */
#include "parse_internal.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The "C" locale, made once: printf and strtod follow LC_NUMERIC, and a
 * program that set a locale with a decimal comma must still write and read
 * "0.001". (locale_t)0 if it cannot be made (then the current one is used). */
static locale_t gck_c_locale(void)
{
    static _Atomic(locale_t) made;
    locale_t l = atomic_load(&made);
    if (l != (locale_t)0)
        return l;
    locale_t fresh = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (fresh == (locale_t)0)
        return (locale_t)0;
    if (!atomic_compare_exchange_strong(&made, &l, fresh)) {
        freelocale(fresh); /* another thread won; l is its locale */
        return l;
    }
    return fresh;
}

static uint64_t gck_f64_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

#define GCK_NAN_BITS UINT64_C(0x7ff8000000000000)
#define GCK_NEG_NAN_BITS UINT64_C(0xfff8000000000000)

void gck_format_f64(double v, char out[GCK_F64_TEXT_MAX])
{
    if (isnan(v)) {
        const uint64_t b = gck_f64_bits(v);
        if (b == GCK_NAN_BITS)
            snprintf(out, GCK_F64_TEXT_MAX, "nan");
        else if (b == GCK_NEG_NAN_BITS)
            snprintf(out, GCK_F64_TEXT_MAX, "-nan");
        else
            snprintf(out, GCK_F64_TEXT_MAX, "nan:0x%016llx", (unsigned long long)b);
        return;
    }
    if (isinf(v)) {
        snprintf(out, GCK_F64_TEXT_MAX, "%s", v < 0 ? "-inf" : "inf");
        return;
    }
    const locale_t c = gck_c_locale();
    const locale_t old = c != (locale_t)0 ? uselocale(c) : (locale_t)0;
    snprintf(out, GCK_F64_TEXT_MAX, "%.17g", v); /* 17 significant digits: every double round-trips */
    if (old != (locale_t)0)
        uselocale(old);
}

/* [-] (digits [. digits*] | . digits) [(e|E) [+|-] digits], the whole string. */
static int gck_decimal_syntax(const char *s)
{
    size_t i = s[0] == '-', before = 0, after = 0;
    while (s[i] >= '0' && s[i] <= '9')
        i++, before++;
    if (s[i] == '.') {
        i++;
        while (s[i] >= '0' && s[i] <= '9')
            i++, after++;
    }
    if (before + after == 0)
        return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        i++;
        if (s[i] == '+' || s[i] == '-')
            i++;
        size_t exp = 0;
        while (s[i] >= '0' && s[i] <= '9')
            i++, exp++;
        if (exp == 0)
            return 0;
    }
    return s[i] == '\0';
}

static int gck_hex_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    size_t k = 0;
    for (; s[k] != '\0'; k++) {
        const char ch = s[k];
        const int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (d < 0 || k == 16)
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    if (k != 16)
        return 0;
    *out = v;
    return 1;
}

int gck_parse_f64(const char *s, double *out)
{
    if (s == NULL)
        return 0;
    uint64_t bits = 0;
    double v;
    if (strcmp(s, "inf") == 0 || strcmp(s, "-inf") == 0) {
        v = s[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    } else if (strcmp(s, "nan") == 0 || strcmp(s, "-nan") == 0 ||
               (strncmp(s, "nan:0x", 6) == 0 && gck_hex_u64(s + 6, &bits))) {
        if (s[0] == 'n' && s[3] == '\0')
            bits = GCK_NAN_BITS;
        else if (s[0] == '-')
            bits = GCK_NEG_NAN_BITS;
        memcpy(&v, &bits, sizeof v);
        if (!isnan(v))
            return 0; /* "nan:0x..." with the bits of a number */
    } else {
        if (!gck_decimal_syntax(s))
            return 0;
        const locale_t c = gck_c_locale();
        const locale_t old = c != (locale_t)0 ? uselocale(c) : (locale_t)0;
        char *end = NULL;
        errno = 0;
        v = strtod(s, &end);
        const int err = errno;
        if (old != (locale_t)0)
            uselocale(old);
        if (end == NULL || *end != '\0' || (err == ERANGE && isinf(v)))
            return 0; /* beyond the largest double ("inf" is written as such); underflow rounds as strtod does */
    }
    *out = v;
    return 1;
}
