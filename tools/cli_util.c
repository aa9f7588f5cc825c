/* tools/cli_util.c - the CLI's shared pieces: errors, argument parsing, JSON and
 * text formatting, loading a snapshot, opening an existing store. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- errors ---------------------------------------------------------------------- */

void cli_put_escaped(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\n')
            fputs("\\n", out);
        else if (*p == '\t')
            fputs("\\t", out);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
    }
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 0)))
#endif
static void cli_vline(const cli_command *c, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "gradckpt %s: ", c->name);
    cli_put_escaped(stderr, msg);
    fputc('\n', stderr);
}

int cli_fail(const cli_command *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_vline(c, fmt, ap);
    va_end(ap);
    return CLI_FAIL;
}

int cli_fail_gck(const cli_command *c)
{
    const char *m = gck_last_error();
    return cli_fail(c, "%s", m[0] ? m : "failed (no message)");
}

int cli_fail_oom(const cli_command *c, const char *what)
{
    return cli_fail(c, "out of memory: %s", what);
}

int cli_usage(const cli_command *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_vline(c, fmt, ap);
    va_end(ap);
    fprintf(stderr, "usage: gradckpt %s%s%s\n", c->name, c->synopsis[0] ? " " : "", c->synopsis);
    return CLI_USAGE;
}

void cli_print_help(const cli_command *c, FILE *out)
{
    fprintf(out, "usage: gradckpt %s%s%s\n\n%s\n", c->name, c->synopsis[0] ? " " : "", c->synopsis, c->summary);
    if (c->details != NULL)
        fprintf(out, "\n%s", c->details);
}

/* ---- arguments ------------------------------------------------------------------- */

int cli_parse(const cli_command *c, int argc, char **argv, const cli_opt *opts, size_t n_opts, const char **pos,
              size_t n_pos)
{
    size_t got = 0;
    int options_done = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!options_done && a[0] == '-' && a[1] != '\0') {
            if (strcmp(a, "--") == 0) {
                options_done = 1;
                continue;
            }
            if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
                cli_print_help(c, stdout);
                return -1;
            }
            const char *eq = strchr(a, '=');
            const size_t len = eq ? (size_t)(eq - a) : strlen(a);
            const cli_opt *o = NULL;
            for (size_t k = 0; k < n_opts; k++)
                if (strlen(opts[k].name) == len && strncmp(opts[k].name, a, len) == 0)
                    o = &opts[k];
            if (o == NULL)
                return cli_usage(c, "unknown option '%.*s'", (int)len, a);
            if (o->value == NULL) {
                if (eq != NULL)
                    return cli_usage(c, "option %s takes no value", o->name);
                *o->flag = 1;
            } else if (eq != NULL) {
                *o->value = eq + 1;
            } else if (i + 1 < argc) {
                *o->value = argv[++i];
            } else {
                return cli_usage(c, "option %s needs a value", o->name);
            }
            continue;
        }
        if (got == n_pos)
            return cli_usage(c, "unexpected argument '%s'", a);
        pos[got++] = a;
    }
    if (got < n_pos)
        return cli_usage(c, "missing argument%s", n_pos - got > 1 ? "s" : "");
    return CLI_OK;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return 0;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    errno = 0;
    char *end = NULL;
    const unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return 0;
    *out = (uint64_t)v;
    return 1;
}

/* ---- JSON ------------------------------------------------------------------------ */

int cli_print_json(const cli_command *c, json_t *root)
{
    if (root == NULL || json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
        return cli_fail(c, "cannot write the JSON output");
    fputc('\n', stdout);
    return CLI_OK;
}

int cli_finish_json(const cli_command *c, json_t *root, int bad)
{
    const int rc = bad ? cli_fail_oom(c, "JSON output") : cli_print_json(c, root);
    json_decref(root);
    return rc;
}

void cli_jset(json_t *obj, const char *key, json_t *v, int *bad)
{
    if (obj == NULL || v == NULL || json_object_set_new(obj, key, v) != 0) {
        json_decref(v);
        *bad = 1;
    }
}

void cli_jappend(json_t *arr, json_t *v, int *bad)
{
    if (arr == NULL || v == NULL || json_array_append_new(arr, v) != 0) {
        json_decref(v);
        *bad = 1;
    }
}

json_t *cli_jreal(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *cli_ju64(uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX)
        return json_integer((json_int_t)v);
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64, v);
    return json_string(b);
}

json_t *cli_jshape(const int64_t *shape, size_t ndim)
{
    json_t *a = json_array();
    int bad = 0;
    for (size_t d = 0; d < ndim; d++)
        cli_jappend(a, json_integer((json_int_t)shape[d]), &bad);
    if (bad) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* ---- text ------------------------------------------------------------------------ */

void cli_format_shape(char *buf, size_t cap, const int64_t *shape, size_t ndim)
{
    size_t at = 0;
    at += (size_t)snprintf(buf, cap, "[");
    for (size_t d = 0; d < ndim && at < cap; d++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%" PRId64, d ? ", " : "", shape[d]);
    if (at < cap)
        at += (size_t)snprintf(buf + at, cap - at, "]");
    if (at >= cap && cap > 4)
        memcpy(buf + cap - 4, "...", 4);
}

void cli_format_time(char *buf, size_t cap, uint64_t secs)
{
    struct tm tm;
    const time_t t = (time_t)secs;
    if ((uint64_t)t == secs && secs <= (uint64_t)INT64_MAX && gmtime_r(&t, &tm) != NULL)
        snprintf(buf, cap, "%" PRIu64 " (%04d-%02d-%02dT%02d:%02d:%02dZ)", secs, tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    else
        snprintf(buf, cap, "%" PRIu64, secs);
}

void cli_format_bytes(char *buf, size_t cap, uint64_t bytes)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, cap, "%" PRIu64 " B", bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0])
        v /= 1024.0, u++;
    snprintf(buf, cap, "%.1f %s", v, units[u]);
}

/* ---- snapshots ------------------------------------------------------------------- */

uint64_t cli_elements(const gck_tensor_info *t)
{
    const size_t esz = gck_dtype_size(t->dtype);
    return esz ? (uint64_t)(t->nbytes / esz) : 0;
}

int cli_is_float(gck_dtype d)
{
    return d == GCK_DTYPE_F64 || d == GCK_DTYPE_F32 || d == GCK_DTYPE_F16 || d == GCK_DTYPE_BF16;
}

/* The kernels read the tensor in place (F16/BF16 as their 16-bit words in
 * this CPU's byte order, widened exactly): no copy. */
double cli_tensor_l2norm(const gck_tensor_info *t, int *computed)
{
    *computed = cli_is_float(t->dtype);
    return *computed ? cli_dist2_or_norm(t, NULL) : NAN;
}

double cli_dist2_or_norm(const gck_tensor_info *a, const gck_tensor_info *b)
{
    const size_t n = (size_t)cli_elements(a);
    const void *x = a->data, *y = b != NULL ? b->data : NULL;
    switch (a->dtype) {
    case GCK_DTYPE_F64: return y ? gck_dist2_f64(x, y, n) : gck_l2norm_f64(x, n);
    case GCK_DTYPE_F32: return y ? gck_dist2_f32(x, y, n) : gck_l2norm_f32(x, n);
    case GCK_DTYPE_BF16: return y ? gck_dist2_bf16(x, y, n) : gck_l2norm_bf16(x, n);
    case GCK_DTYPE_F16: return y ? gck_dist2_f16(x, y, n) : gck_l2norm_f16(x, n);
    default: return NAN;
    }
}

int cli_load_snapshot(const cli_command *c, const char *path, gck_snapshot **out)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return cli_fail(c, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode) && cli_is_sharded(path)) {
        /* every item, each checked against the index's content id */
        if (gck_snapshot_load_sharded(path, NULL, 0, out) != GCK_OK)
            return cli_fail_gck(c);
        return CLI_OK;
    }
    if (S_ISDIR(st.st_mode))
        return cli_fail(c, "%s: is a directory without %s, not a safetensors file or a sharded snapshot", path,
                        GCK_SHARDED_INDEX);
    if (!S_ISREG(st.st_mode))
        return cli_fail(c, "%s: not a regular file", path);
    /* mapped, every byte hashed and checked against the recorded content ids */
    if (gck_snapshot_load_mmap(path, 1, out) != GCK_OK)
        return cli_fail_gck(c);
    return CLI_OK;
}

int cli_is_sharded(const char *path)
{
    char p[PATH_MAX];
    struct stat st;
    const int k = snprintf(p, sizeof p, "%s/%s", path, GCK_SHARDED_INDEX);
    return k > 0 && (size_t)k < sizeof p && stat(path, &st) == 0 && S_ISDIR(st.st_mode) && stat(p, &st) == 0 &&
           S_ISREG(st.st_mode);
}

/* Our keys in a metadata object: content ids, and whether any other is there. */
static void cli_count_keys(json_t *md, cli_header_info *out)
{
    const char *key;
    json_t *v;
    const size_t pl = strlen(GCK_METADATA_PREFIX);
    json_object_foreach(md, key, v) {
        if (strncmp(key, GCK_METADATA_PREFIX, pl) != 0)
            continue;
        if (strncmp(key + pl, "cid.", 4) == 0)
            out->recorded_cids++;
        else
            out->ours = 1;
    }
}

/* cli_read_header_info of a sharded directory: its index's metadata. */
static int cli_read_index_info(const cli_command *c, const char *path, cli_header_info *out)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", path, GCK_SHARDED_INDEX);
    json_t *root = json_load_file(p, 0, NULL);
    json_t *wm = json_object_get(root, "weight_map"), *md = json_object_get(root, "metadata");
    if (!json_is_object(wm)) {
        json_decref(root);
        return cli_fail(c, "%s: cannot re-read the index (did it change?)", p);
    }
    cli_count_keys(md, out);
    const char *key;
    json_t *v;
    /* distinct shard files: a set of the names as a JSON object */
    json_t *files = json_object();
    json_object_foreach(wm, key, v) if (files != NULL && json_is_string(v))
        json_object_set(files, json_string_value(v), json_true());
    out->shards = json_object_size(files);
    json_decref(files);
    json_decref(root);
    return CLI_OK;
}

int cli_read_header_info(const cli_command *c, const char *path, cli_header_info *out)
{
    memset(out, 0, sizeof *out);
    if (cli_is_sharded(path))
        return cli_read_index_info(c, path, out);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return cli_fail(c, "%s: cannot open: %s", path, strerror(errno));
    unsigned char len8[8];
    uint64_t hlen = 0;
    int ok = fread(len8, 1, 8, f) == 8;
    for (int i = 7; ok && i >= 0; i--)
        hlen = hlen << 8 | len8[i];
    ok = ok && hlen <= (uint64_t)100 * 1000 * 1000; /* the loader's limit, already checked */
    char *hdr = ok ? malloc((size_t)hlen + 1) : NULL;
    ok = hdr != NULL && fread(hdr, 1, (size_t)hlen, f) == (size_t)hlen;
    fclose(f);
    json_t *root = ok ? json_loadb(hdr, (size_t)hlen, 0, NULL) : NULL;
    free(hdr);
    if (root == NULL)
        return cli_fail(c, "%s: cannot re-read the header (did the file change?)", path);
    json_t *md = json_object_get(root, "__metadata__");
    cli_count_keys(md, out);
    json_decref(root);
    return CLI_OK;
}

/* ---- stores ---------------------------------------------------------------------- */

int cli_open_store(const cli_command *c, const char *dir, int readonly, gck_store **out)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return cli_fail(c, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cli_fail(c, "%s: not a directory", dir);
    const size_t len = strlen(dir) + sizeof "/manifest.json";
    char *m = malloc(len);
    if (m == NULL)
        return cli_fail_oom(c, "manifest path");
    snprintf(m, len, "%s/manifest.json", dir);
    const int have = stat(m, &st) == 0;
    const int err = errno;
    free(m);
    /* gck_store_open would create an empty store here: refuse instead */
    if (!have)
        return err == ENOENT ? cli_fail(c, "%s: not a gradckpt store (no manifest.json)", dir)
                             : cli_fail(c, "%s/manifest.json: %s", dir, strerror(err));
    if ((readonly ? gck_store_open_readonly(dir, out) : gck_store_open(dir, NULL, out)) != GCK_OK)
        return cli_fail_gck(c);
    return CLI_OK;
}

int cli_resolve_version(const cli_command *c, gck_store *s, const char *dir, const char *ref, uint64_t *out)
{
    if (strcmp(ref, "latest") == 0) {
        const gck_entry *e = gck_store_latest(s);
        if (e == NULL)
            return cli_fail(c, "%s: the store has no versions", dir);
        *out = e->version;
        return CLI_OK;
    }
    uint64_t v;
    if (cli_parse_u64(ref, &v)) {
        if (gck_store_get(s, v) == NULL)
            return cli_fail(c, "%s: version %" PRIu64 " is not in the store", dir, v);
        *out = v;
        return CLI_OK;
    }
    if (gck_store_find_tag(s, ref, out) != GCK_OK)
        return cli_fail(c, "%s: no version tagged '%s' (a version is a number, 'latest' or a tag)", dir, ref);
    return CLI_OK;
}
