/* tools/cli_diff.c - `gradckpt diff A B [--json]`: per-tensor L2 distance between two files. */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One tensor present in both files with the same dtype and shape. */
typedef struct diff_pair {
    int identical;
    int computed; /* distances are defined (floating-point dtype) */
    double dist, rel;
} diff_pair;

static int diff_same_layout(const gck_tensor_info *a, const gck_tensor_info *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->nbytes != b->nbytes)
        return 0;
    for (size_t d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

/* Returns 0 (the kernels read both tensors in place: nothing to allocate). */
static int diff_compare(const gck_tensor_info *a, const gck_tensor_info *b, diff_pair *out)
{
    memset(out, 0, sizeof *out);
    out->identical = a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
    if (cli_is_float(a->dtype)) {
        const double norm = cli_dist2_or_norm(a, NULL);
        out->computed = 1;
        out->dist = sqrt(cli_dist2_or_norm(a, b));
        out->rel = norm > 0 ? out->dist / norm : (out->dist == 0 ? 0.0 : INFINITY);
    }
    return 0;
}

static void diff_fmt(char *buf, size_t cap, int computed, double v)
{
    if (computed)
        snprintf(buf, cap, "%.17g", v);
    else
        snprintf(buf, cap, "-");
}

static json_t *diff_layout_json(const gck_tensor_info *t)
{
    int bad = 0;
    json_t *o = json_object();
    cli_jset(o, "dtype", json_string(gck_dtype_name(t->dtype)), &bad);
    cli_jset(o, "shape", cli_jshape(t->shape, t->ndim), &bad);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

typedef struct diff_counts {
    size_t compared, identical, only_a, only_b, mismatched;
    size_t opt_identical, opt_differ, opt_only_a, opt_only_b;
} diff_counts;

static int diff_run2(const cli_command *c, const char *pa, const char *pb, const gck_snapshot *a,
                     const gck_snapshot *b, int json)
{
    int bad = 0, nomem = 0;
    diff_counts k = {0};
    json_t *root = NULL, *jt = NULL, *jonly_a = NULL, *jonly_b = NULL, *jmis = NULL, *jopt = NULL;
    char sh[256], d1[64], d2[64];
    if (json) {
        root = json_object();
        cli_jset(root, "a", json_string(pa), &bad);
        cli_jset(root, "b", json_string(pb), &bad);
        cli_jset(root, "step_a", cli_ju64(gck_snapshot_step(a)), &bad);
        cli_jset(root, "step_b", cli_ju64(gck_snapshot_step(b)), &bad);
        jt = json_array(), jonly_a = json_array(), jonly_b = json_array(), jmis = json_array(), jopt = json_array();
    } else {
        printf("a: ");
        cli_put_escaped(stdout, pa);
        printf(" (step %" PRIu64 ", %zu tensors)\nb: ", gck_snapshot_step(a), gck_snapshot_num_tensors(a));
        cli_put_escaped(stdout, pb);
        printf(" (step %" PRIu64 ", %zu tensors)\n", gck_snapshot_step(b), gck_snapshot_num_tensors(b));
    }

    /* tensors of A, in name order: compared, mismatched or only in A */
    int header = 0;
    for (size_t i = 0; i < gck_snapshot_num_tensors(a); i++) {
        gck_tensor_info ta, tb;
        gck_snapshot_tensor(a, i, &ta);
        if (gck_snapshot_find_tensor(b, ta.name, &tb) != GCK_OK) {
            k.only_a++;
            if (json)
                cli_jappend(jonly_a, json_string(ta.name), &bad);
            continue;
        }
        if (!diff_same_layout(&ta, &tb)) {
            k.mismatched++;
            if (json) {
                json_t *o = json_object();
                cli_jset(o, "name", json_string(ta.name), &bad);
                cli_jset(o, "a", diff_layout_json(&ta), &bad);
                cli_jset(o, "b", diff_layout_json(&tb), &bad);
                cli_jappend(jmis, o, &bad);
            }
            continue;
        }
        diff_pair p;
        if (diff_compare(&ta, &tb, &p) != 0) {
            nomem = 1;
            break;
        }
        k.compared++;
        k.identical += p.identical;
        if (json) {
            json_t *o = json_object();
            cli_jset(o, "name", json_string(ta.name), &bad);
            cli_jset(o, "dtype", json_string(gck_dtype_name(ta.dtype)), &bad);
            cli_jset(o, "shape", cli_jshape(ta.shape, ta.ndim), &bad);
            cli_jset(o, "identical", json_boolean(p.identical), &bad);
            cli_jset(o, "l2_distance", p.computed ? cli_jreal(p.dist) : json_null(), &bad);
            cli_jset(o, "relative_distance", p.computed ? cli_jreal(p.rel) : json_null(), &bad);
            cli_jappend(jt, o, &bad);
            continue;
        }
        if (!header) {
            printf("  %-32s  %-5s  %-16s  %-24s  %-24s  %s\n", "name", "dtype", "shape", "l2 distance",
                   "relative distance", "content");
            header = 1;
        }
        cli_format_shape(sh, sizeof sh, ta.shape, ta.ndim);
        diff_fmt(d1, sizeof d1, p.computed, p.dist);
        diff_fmt(d2, sizeof d2, p.computed, p.rel);
        fputs("  ", stdout);
        cli_put_escaped(stdout, ta.name);
        const int ln = (int)strlen(ta.name);
        printf("%*s  %-5s  %-16s  %-24s  %-24s  %s\n", ln < 32 ? 32 - ln : 0, "", gck_dtype_name(ta.dtype), sh, d1,
               d2, p.identical ? "identical" : "differs");
    }
    /* mismatched dtype/shape and tensors only in A, listed in text after the table */
    for (size_t i = 0; !json && !nomem && i < gck_snapshot_num_tensors(a); i++) {
        gck_tensor_info ta, tb;
        gck_snapshot_tensor(a, i, &ta);
        const int in_b = gck_snapshot_find_tensor(b, ta.name, &tb) == GCK_OK;
        if (in_b && diff_same_layout(&ta, &tb))
            continue;
        fputs(in_b ? "dtype/shape differ: " : "only in a: ", stdout);
        cli_put_escaped(stdout, ta.name);
        if (in_b) {
            cli_format_shape(sh, sizeof sh, ta.shape, ta.ndim);
            printf(" (a: %s %s, ", gck_dtype_name(ta.dtype), sh);
            cli_format_shape(sh, sizeof sh, tb.shape, tb.ndim);
            printf("b: %s %s)", gck_dtype_name(tb.dtype), sh);
        }
        fputc('\n', stdout);
    }
    for (size_t i = 0; !nomem && i < gck_snapshot_num_tensors(b); i++) {
        gck_tensor_info tb, ta;
        gck_snapshot_tensor(b, i, &tb);
        if (gck_snapshot_find_tensor(a, tb.name, &ta) == GCK_OK)
            continue;
        k.only_b++;
        if (json) {
            cli_jappend(jonly_b, json_string(tb.name), &bad);
        } else {
            fputs("only in b: ", stdout);
            cli_put_escaped(stdout, tb.name);
            fputc('\n', stdout);
        }
    }

    /* optimizer-state blobs: compared byte for byte */
    for (int side = 0; side < 2 && !nomem; side++) {
        const gck_snapshot *x = side ? b : a, *y = side ? a : b;
        for (size_t i = 0; i < gck_snapshot_num_optimizer_states(x); i++) {
            const char *param;
            const void *bx, *by;
            size_t lx, ly;
            gck_snapshot_optimizer_state(x, i, &param, &bx, &lx);
            const int in_y = gck_snapshot_find_optimizer_state(y, param, &by, &ly) == GCK_OK;
            if (side == 1 && in_y)
                continue; /* seen from A */
            const char *status;
            if (!in_y) {
                status = side ? "only_in_b" : "only_in_a";
                *(side ? &k.opt_only_b : &k.opt_only_a) += 1;
            } else if (lx == ly && (lx == 0 || memcmp(bx, by, lx) == 0)) {
                status = "identical";
                k.opt_identical++;
            } else {
                status = "differ";
                k.opt_differ++;
            }
            if (json) {
                json_t *o = json_object();
                cli_jset(o, "param", json_string(param), &bad);
                cli_jset(o, "status", json_string(status), &bad);
                cli_jappend(jopt, o, &bad);
            } else if (strcmp(status, "identical") != 0) {
                printf("optimizer state ");
                cli_put_escaped(stdout, param);
                printf(": %s\n", !in_y ? (side ? "only in b" : "only in a") : "differs");
            }
        }
    }
    if (nomem) {
        json_decref(root), json_decref(jt), json_decref(jonly_a), json_decref(jonly_b), json_decref(jmis);
        json_decref(jopt);
        return cli_fail_oom(c, "F16/BF16 values converted to F32");
    }
    const int same = k.identical == k.compared && k.only_a == 0 && k.only_b == 0 && k.mismatched == 0 &&
                     k.opt_differ == 0 && k.opt_only_a == 0 && k.opt_only_b == 0;
    if (json) {
        cli_jset(root, "tensors", jt, &bad);
        cli_jset(root, "only_in_a", jonly_a, &bad);
        cli_jset(root, "only_in_b", jonly_b, &bad);
        cli_jset(root, "mismatched", jmis, &bad);
        cli_jset(root, "optimizer_states", jopt, &bad);
        cli_jset(root, "identical", json_boolean(same), &bad);
        return cli_finish_json(c, root, bad);
    }
    printf("summary: %zu compared (%zu identical, %zu differ), %zu only in a, %zu only in b, %zu dtype/shape "
           "differ; optimizer states: %zu identical, %zu differ, %zu only in a, %zu only in b\n",
           k.compared, k.identical, k.compared - k.identical, k.only_a, k.only_b, k.mismatched, k.opt_identical,
           k.opt_differ, k.opt_only_a, k.opt_only_b);
    printf("%s\n", same ? "identical: every tensor and optimizer state is the same"
                        : "different: see above");
    return CLI_OK;
}

static int diff_run(const cli_command *c, int argc, char **argv)
{
    int json = 0;
    const char *pos[2];
    const cli_opt opts[] = {{"--json", &json, NULL}};
    const int p = cli_parse(c, argc, argv, opts, 1, pos, 2);
    if (p != CLI_OK)
        return p < 0 ? CLI_OK : p;
    gck_snapshot *a = NULL, *b = NULL;
    int rc = cli_load_snapshot(c, pos[0], &a);
    if (rc != CLI_OK)
        goto done;
    rc = cli_load_snapshot(c, pos[1], &b);
    if (rc != CLI_OK)
        goto done;
    rc = diff_run2(c, pos[0], pos[1], a, b, json);
done:
    gck_snapshot_destroy(a);
    gck_snapshot_destroy(b);
    return rc;
}

const cli_command cli_cmd_diff = {
    "diff",
    "A B [--json]",
    "Compare two safetensors files tensor by tensor.",
    "For each tensor in both files with the same dtype and shape: whether the bytes\n"
    "are identical, the L2 distance ||a - b|| and the relative distance\n"
    "||a - b|| / ||a|| (floating-point tensors; F16/BF16 widened exactly by the kernels;\n"
    "'-' / null otherwise). Then the tensors only in A, only in B, or with another\n"
    "dtype/shape, and the optimizer-state blobs (same bytes or not).\n"
    "Differences are a report, not a failure: the exit status is 0 whenever both\n"
    "files load (1 when one is unreadable or corrupt).\n"
    "\n"
    "  --json   one JSON object: a, b, step_a, step_b, tensors [name, dtype, shape,\n"
    "           identical, l2_distance, relative_distance], only_in_a, only_in_b,\n"
    "           mismatched [name, a, b], optimizer_states [param, status], identical.\n",
    diff_run,
};
