/* tools/cli_store.c - `gradckpt store ls|restore|tag|gc`: a store directory's versions. */
#include "cli.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the manifest's per-version step (not in gck_entry) -------------------------- */

/* The manifest's "versions" array (read after gck_store_open validated it), or NULL. */
static json_t *store_manifest_versions(const char *dir, json_t **root)
{
    const size_t len = strlen(dir) + sizeof "/manifest.json";
    char *p = malloc(len);
    *root = NULL;
    if (p == NULL)
        return NULL;
    snprintf(p, len, "%s/manifest.json", dir);
    *root = json_load_file(p, 0, NULL);
    free(p);
    json_t *v = json_object_get(*root, "versions");
    return json_is_array(v) ? v : NULL;
}

/* The step the manifest records for version v; 0 and *known = 0 when absent. */
static uint64_t store_step(json_t *versions, uint64_t v, int *known)
{
    size_t i;
    json_t *o;
    *known = 0;
    json_array_foreach(versions, i, o) {
        uint64_t ver, step;
        if (cli_parse_u64(json_string_value(json_object_get(o, "version")), &ver) && ver == v &&
            cli_parse_u64(json_string_value(json_object_get(o, "step")), &step)) {
            *known = 1;
            return step;
        }
    }
    return 0;
}

/* ---- store ls -------------------------------------------------------------------- */

static int ls_json(const cli_command *c, const char *dir, gck_store *s, const uint64_t *vs, size_t nv,
                   json_t *mversions, const gck_store_stats *st)
{
    int bad = 0;
    json_t *root = json_object(), *arr = json_array();
    cli_jset(root, "store", json_string(dir), &bad);
    for (size_t i = 0; i < nv; i++) {
        const gck_entry *e = gck_store_get(s, vs[i]);
        if (e == NULL)
            continue;
        int known;
        const uint64_t step = store_step(mversions, e->version, &known);
        json_t *o = json_object(), *tags = json_array();
        for (size_t t = 0; t < e->n_tags; t++)
            cli_jappend(tags, json_string(e->tags[t]), &bad);
        cli_jset(o, "version", cli_ju64(e->version), &bad);
        cli_jset(o, "kind", json_string(e->is_delta ? "delta" : "full"), &bad);
        cli_jset(o, "base", e->is_delta ? cli_ju64(e->delta_from) : json_null(), &bad);
        cli_jset(o, "step", known ? cli_ju64(step) : json_null(), &bad);
        cli_jset(o, "timestamp", cli_ju64(e->timestamp_secs), &bad);
        cli_jset(o, "tags", tags, &bad);
        cli_jset(o, "logical_bytes", cli_ju64(e->full_bytes), &bad);
        cli_jset(o, "disk_bytes", cli_ju64(gck_store_version_disk_bytes(s, e->version)), &bad);
        cli_jappend(arr, o, &bad);
    }
    cli_jset(root, "versions", arr, &bad);
    json_t *tot = json_object();
    cli_jset(tot, "versions", cli_ju64(st->versions), &bad);
    cli_jset(tot, "full", cli_ju64(st->full_versions), &bad);
    cli_jset(tot, "delta", cli_ju64(st->delta_versions), &bad);
    cli_jset(tot, "logical_bytes", cli_ju64(st->logical_bytes), &bad);
    cli_jset(tot, "disk_bytes", cli_ju64(st->disk_bytes), &bad);
    cli_jset(tot, "hidden_bases", cli_ju64(st->hidden_bases), &bad);
    cli_jset(tot, "hidden_bytes", cli_ju64(st->hidden_bytes), &bad);
    cli_jset(tot, "disk_ratio",
             st->logical_bytes ? cli_jreal((double)st->disk_bytes / (double)st->logical_bytes) : json_null(), &bad);
    cli_jset(root, "totals", tot, &bad);
    return cli_finish_json(c, root, bad);
}

static void ls_text(const char *dir, gck_store *s, const uint64_t *vs, size_t nv, json_t *mversions,
                    const gck_store_stats *st)
{
    printf("store: ");
    cli_put_escaped(stdout, dir);
    printf(" (%zu versions: %zu full, %zu delta)\n", st->versions, st->full_versions, st->delta_versions);
    if (nv > 0)
        printf("  %-8s  %-16s  %-10s  %-33s  %14s  %14s  %s\n", "version", "kind", "step", "timestamp",
               "logical bytes", "on disk", "tags");
    for (size_t i = 0; i < nv; i++) {
        const gck_entry *e = gck_store_get(s, vs[i]);
        if (e == NULL)
            continue;
        char kind[48], step[32], ts[64];
        if (e->is_delta)
            snprintf(kind, sizeof kind, "delta from %" PRIu64, e->delta_from);
        else
            snprintf(kind, sizeof kind, "full");
        int known;
        const uint64_t sv = store_step(mversions, e->version, &known);
        if (known)
            snprintf(step, sizeof step, "%" PRIu64, sv);
        else
            snprintf(step, sizeof step, "-");
        cli_format_time(ts, sizeof ts, e->timestamp_secs);
        printf("  %-8" PRIu64 "  %-16s  %-10s  %-33s  %14" PRIu64 "  %14" PRIu64 "  ", e->version, kind, step, ts,
               e->full_bytes, gck_store_version_disk_bytes(s, e->version));
        if (e->n_tags == 0)
            fputs("-", stdout);
        for (size_t t = 0; t < e->n_tags; t++) {
            fputs(t ? "," : "", stdout);
            cli_put_escaped(stdout, e->tags[t]);
        }
        fputc('\n', stdout);
    }
    char lb[32], db[32];
    if (st->hidden_bases > 0) {
        cli_format_bytes(db, sizeof db, st->hidden_bytes);
        printf("hidden bases: %zu evicted version%s whose file%s retained deltas read, %" PRIu64 " bytes (%s)\n",
               st->hidden_bases, st->hidden_bases == 1 ? "" : "s", st->hidden_bases == 1 ? "" : "s",
               st->hidden_bytes, db);
    }
    cli_format_bytes(lb, sizeof lb, st->logical_bytes);
    cli_format_bytes(db, sizeof db, st->disk_bytes);
    printf("total: %" PRIu64 " logical bytes (%s), %" PRIu64 " bytes on disk with the manifest (%s)", st->logical_bytes,
           lb, st->disk_bytes, db);
    if (st->logical_bytes > 0)
        printf(": on disk = %.1f%% of logical", 100.0 * (double)st->disk_bytes / (double)st->logical_bytes);
    if (st->disk_bytes > 0 && st->disk_bytes < st->logical_bytes)
        printf(" (%.2fx smaller)", (double)st->logical_bytes / (double)st->disk_bytes);
    fputc('\n', stdout);
}

static int ls_run(const cli_command *c, int argc, char **argv)
{
    int json = 0;
    const char *dir;
    const cli_opt opts[] = {{"--json", &json, NULL}};
    const int p = cli_parse(c, argc, argv, opts, 1, &dir, 1);
    if (p != CLI_OK)
        return p < 0 ? CLI_OK : p;
    gck_store *s = NULL;
    if (cli_open_store(c, dir, 1, &s) != CLI_OK)
        return CLI_FAIL;
    const size_t nv = gck_store_versions(s, NULL, 0);
    uint64_t *vs = malloc((nv ? nv : 1) * sizeof *vs);
    json_t *mroot = NULL;
    json_t *mversions = store_manifest_versions(dir, &mroot);
    gck_store_stats st;
    int rc;
    if (vs == NULL) {
        rc = cli_fail_oom(c, "version list");
    } else if (gck_store_stats_get(s, &st) != GCK_OK) {
        rc = cli_fail_gck(c);
    } else {
        gck_store_versions(s, vs, nv);
        rc = CLI_OK;
        if (json)
            rc = ls_json(c, dir, s, vs, nv, mversions, &st);
        else
            ls_text(dir, s, vs, nv, mversions, &st);
    }
    json_decref(mroot);
    free(vs);
    gck_store_close(s);
    return rc;
}

/* ---- store restore / tag --------------------------------------------------------- */

static int restore_run(const cli_command *c, int argc, char **argv)
{
    /* "--only NAME..." ends the arguments: every word after it is a name */
    int only = argc;
    for (int i = 0; i < argc && only == argc; i++)
        if (strcmp(argv[i], "--") == 0)
            break;
        else if (strcmp(argv[i], "--only") == 0)
            only = i;
    const char *pos[3];
    const int p = cli_parse(c, only, argv, NULL, 0, pos, 3);
    if (p != CLI_OK)
        return p < 0 ? CLI_OK : p;
    if (only < argc && only + 1 == argc)
        return cli_usage(c, "--only needs at least one tensor name");
    gck_store *s = NULL;
    if (cli_open_store(c, pos[0], 1, &s) != CLI_OK)
        return CLI_FAIL;
    uint64_t v = 0;
    gck_snapshot *snap = NULL;
    int rc = cli_resolve_version(c, s, pos[0], pos[1], &v);
    if (rc != CLI_OK)
        goto done;
    const gck_status rs = only < argc ? gck_store_restore_select(s, v, (const char *const *)argv + only + 1,
                                                                 (size_t)(argc - only - 1), &snap)
                                      : gck_store_restore(s, v, &snap);
    if (rs != GCK_OK || gck_snapshot_save(snap, pos[2]) != GCK_OK) {
        rc = cli_fail_gck(c);
        goto done;
    }
    printf("restored version %" PRIu64 " (step %" PRIu64 ", %zu tensors) to ", v, gck_snapshot_step(snap),
           gck_snapshot_num_tensors(snap));
    cli_put_escaped(stdout, pos[2]);
    fputc('\n', stdout);
done:
    gck_snapshot_destroy(snap);
    gck_store_close(s);
    return rc;
}

/* store tag / store untag: add or remove a tag, durably. */
static int retag(const cli_command *c, int argc, char **argv, int add)
{
    const char *pos[3];
    const int p = cli_parse(c, argc, argv, NULL, 0, pos, 3);
    if (p != CLI_OK)
        return p < 0 ? CLI_OK : p;
    if (pos[2][0] == '\0')
        return cli_usage(c, "the tag is empty");
    gck_store *s = NULL;
    if (cli_open_store(c, pos[0], 0, &s) != CLI_OK)
        return CLI_FAIL;
    uint64_t v = 0;
    int rc = cli_resolve_version(c, s, pos[0], pos[1], &v);
    if (rc != CLI_OK)
        goto done;
    if ((add ? gck_store_tag(s, v, pos[2]) : gck_store_untag(s, v, pos[2])) != GCK_OK) {
        rc = cli_fail_gck(c);
        goto done;
    }
    printf("%s version %" PRIu64 " '", add ? "tagged" : "untagged", v);
    cli_put_escaped(stdout, pos[2]);
    printf("'\n");
done:
    gck_store_close(s);
    return rc;
}

static int tag_run(const cli_command *c, int argc, char **argv)
{
    return retag(c, argc, argv, 1);
}

static int untag_run(const cli_command *c, int argc, char **argv)
{
    return retag(c, argc, argv, 0);
}

/* ---- store gc -------------------------------------------------------------------- */

/* Bytes in the regular files directly in dir (the store keeps no subdirectories). */
static uint64_t store_dir_bytes(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    uint64_t sum = 0;
    struct dirent *de;
    const size_t dl = strlen(dir);
    while ((de = readdir(d)) != NULL) {
        const size_t len = dl + strlen(de->d_name) + 2;
        char *p = malloc(len);
        struct stat st;
        if (p == NULL)
            break;
        snprintf(p, len, "%s/%s", dir, de->d_name);
        if (lstat(p, &st) == 0 && S_ISREG(st.st_mode))
            sum += (uint64_t)st.st_size;
        free(p);
    }
    closedir(d);
    return sum;
}

static int gc_run(const cli_command *c, int argc, char **argv)
{
    const char *dir;
    const int p = cli_parse(c, argc, argv, NULL, 0, &dir, 1);
    if (p != CLI_OK)
        return p < 0 ? CLI_OK : p;
    /* gck_store_open already removes leftovers; measure the directory around
     * open + gc so those bytes are counted too */
    const uint64_t before = store_dir_bytes(dir);
    gck_store *s = NULL;
    if (cli_open_store(c, dir, 0, &s) != CLI_OK)
        return CLI_FAIL;
    uint64_t freed = 0;
    const gck_status st = gck_store_gc(s, &freed);
    const uint64_t after = store_dir_bytes(dir);
    if (st != GCK_OK) {
        const int rc = cli_fail_gck(c);
        gck_store_close(s);
        return rc;
    }
    gck_store_close(s);
    if (before > after && before - after > freed)
        freed = before - after;
    char b[32];
    cli_format_bytes(b, sizeof b, freed);
    printf("gc: freed %" PRIu64 " bytes (%s) of files the manifest does not name\n", freed, b);
    return CLI_OK;
}

const cli_command cli_cmd_store_ls = {
    "store ls",
    "DIR [--json]",
    "List a store's versions and its space on disk.",
    "Per version: number, full or delta (and its base), step, timestamp, logical\n"
    "bytes (the snapshot's size), bytes on disk, tags; then the hidden bases, if\n"
    "any (evicted versions whose files retained deltas still read: not versions,\n"
    "but on disk), and the totals: logical bytes against bytes on disk (data\n"
    "files, hidden bases' included, plus the manifest).\n"
    "DIR must hold a store (manifest.json). It is opened read-only: no lock, nothing\n"
    "written, so it works while a training job saves to the store (one manifest is\n"
    "read: the listing is one consistent state) and on a read-only file system.\n"
    "\n"
    "  --json   one JSON object: store, versions [version, kind, base, step,\n"
    "           timestamp, tags, logical_bytes, disk_bytes], totals [versions, full,\n"
    "           delta, logical_bytes, disk_bytes, hidden_bases, hidden_bytes,\n"
    "           disk_ratio = disk / logical].\n",
    ls_run,
};

const cli_command cli_cmd_store_restore = {
    "store restore",
    "DIR VERSION|latest|TAG OUT.safetensors [--only NAME...]",
    "Rebuild a version (every content id checked) and save it as a safetensors file.",
    "VERSION is a version number, 'latest', or a tag (the newest version carrying it).\n"
    "--only NAME...: only those tensors (optimizer blobs as __optimizer__/PARAM),\n"
    "reading only their bytes from each file of the version's chain.\n"
    "OUT is replaced atomically. The store is opened read-only (as for store ls):\n"
    "a version that a running writer evicts meanwhile fails with \"version N was\n"
    "evicted meanwhile\".\n",
    restore_run,
};

const cli_command cli_cmd_store_tag = {
    "store tag",
    "DIR VERSION|latest|TAG NEWTAG",
    "Tag a version (tagged versions are never evicted).",
    NULL,
    tag_run,
};

const cli_command cli_cmd_store_untag = {
    "store untag",
    "DIR VERSION|latest|TAG OLDTAG",
    "Remove a tag from a version (with its last tag gone it can be evicted again).",
    NULL,
    untag_run,
};

const cli_command cli_cmd_store_gc = {
    "store gc",
    "DIR",
    "Remove files the manifest does not name (left by a crash) and report the bytes freed.",
    NULL,
    gc_run,
};
