/* common/json_text.c - compact JSON text written straight into a buffer. */
#include "json_text_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"

/* Room for n more bytes and the NUL; 0 when the text is (now) bad. */
static int gck_jt_room(gck_jtext *t, size_t n)
{
    if (t->bad)
        return 0;
    if (t->len + n + 1 <= t->cap)
        return 1;
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + n + 1) {
        if (cap > SIZE_MAX / 2) {
            t->bad = 1;
            return 0;
        }
        cap *= 2;
    }
    char *np = gck_realloc(t->p, cap);
    if (np == NULL) {
        t->bad = 1;
        return 0;
    }
    t->p = np, t->cap = cap;
    return 1;
}

void gck_jt_raw(gck_jtext *t, const char *s, size_t n)
{
    if (!gck_jt_room(t, n))
        return;
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

void gck_jt_lit(gck_jtext *t, const char *s)
{
    gck_jt_raw(t, s, strlen(s));
}

/* The length of the UTF-8 sequence at s (its first byte >= 0x80) as
 * jansson accepts it, or 0. */
static size_t gck_utf8_len(const unsigned char *s)
{
    const unsigned c = s[0];
    size_t n;
    unsigned v;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, v = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, v = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, v = c & 0x07;
    else
        return 0; /* a continuation byte, an overlong 2-byte lead, or above U+10FFFF */
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) /* also stops at the NUL */
            return 0;
        v = v << 6 | (s[i] & 0x3F);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    return n;
}

int gck_utf8_valid(const char *s)
{
    for (const unsigned char *u = (const unsigned char *)s; *u != '\0';) {
        if (*u < 0x80) {
            u++;
            continue;
        }
        const size_t n = gck_utf8_len(u);
        if (n == 0)
            return 0;
        u += n;
    }
    return 1;
}

void gck_jt_str(gck_jtext *t, const char *s)
{
    if (t->bad)
        return;
    const unsigned char *u = (const unsigned char *)s;
    gck_jt_raw(t, "\"", 1);
    while (*u != '\0' && !t->bad) {
        /* a run that needs no escaping, copied at once */
        const unsigned char *run = u;
        while (*u >= 0x20 && *u < 0x80 && *u != '"' && *u != '\\')
            u++;
        if (u > run)
            gck_jt_raw(t, (const char *)run, (size_t)(u - run));
        if (*u == '\0')
            break;
        if (*u >= 0x80) {
            const size_t n = gck_utf8_len(u);
            if (n == 0) {
                t->bad = 2;
                return;
            }
            gck_jt_raw(t, (const char *)u, n);
            u += n;
            continue;
        }
        char esc[8];
        const char *e = esc;
        switch (*u) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        default: snprintf(esc, sizeof esc, "\\u%04X", (unsigned)*u); break; /* jansson's upper-case hex */
        }
        gck_jt_lit(t, e);
        u++;
    }
    gck_jt_raw(t, "\"", 1);
}

void gck_jt_int(gck_jtext *t, long long v)
{
    char b[24];
    const int n = snprintf(b, sizeof b, "%lld", v);
    gck_jt_raw(t, b, (size_t)n);
}

void gck_jt_key(gck_jtext *t, const char *key)
{
    gck_jt_str(t, key);
    gck_jt_raw(t, ":", 1);
}
