/* tools/cli_verify.c - `gradckpt verify FILE|SHARDDIR|STOREDIR`: check every byte of a file, a sharded snapshot or a store. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int verify_file(const cli_command *c, const char *path, int sharded)
{
    gck_snapshot *s = NULL;
    /* every rule, every content id (of every shard the index names) */
    const gck_status st = sharded ? gck_snapshot_load_sharded(path, NULL, 0, &s) : gck_snapshot_load(path, &s);
    if (st != GCK_OK)
        return cli_fail_gck(c);
    cli_header_info h;
    if (cli_read_header_info(c, path, &h) != CLI_OK) {
        gck_snapshot_destroy(s);
        return CLI_FAIL;
    }
    const size_t n = gck_snapshot_num_tensors(s), nopt = gck_snapshot_num_optimizer_states(s);
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        gck_tensor_info t;
        gck_snapshot_tensor(s, i, &t);
        bytes += t.nbytes;
    }
    for (size_t i = 0; i < nopt; i++) {
        const char *param;
        const void *blob;
        size_t len;
        gck_snapshot_optimizer_state(s, i, &param, &blob, &len);
        bytes += len;
    }
    gck_snapshot_destroy(s);
    if (sharded)
        printf("OK: %zu shard%s, ", h.shards, h.shards == 1 ? "" : "s");
    else
        printf("OK: ");
    printf("%zu tensors, %zu optimizer states, %" PRIu64 " bytes, ", n, nopt, bytes);
    if (h.recorded_cids == n + nopt)
        printf("all %zu content ids match\n", h.recorded_cids);
    else if (h.recorded_cids > 0)
        printf("the %zu content ids the file records match (%zu entries have none)\n", h.recorded_cids,
               n + nopt - h.recorded_cids);
    else
        printf("structure valid; the file records no content ids to check\n");
    return CLI_OK;
}

/* Prints each version as gck_store_verify_each reports it. */
typedef struct verify_ctx {
    gck_store *s;
    size_t evicted;
} verify_ctx;

static void verify_line(void *ctx, uint64_t version, gck_status st)
{
    verify_ctx *vc = ctx;
    const gck_entry *e = gck_store_get(vc->s, version);
    char kind[48];
    if (e != NULL && e->is_delta)
        snprintf(kind, sizeof kind, "delta from %" PRIu64, e->delta_from);
    else
        snprintf(kind, sizeof kind, "full");
    if (st == GCK_OK) {
        printf("  version %-8" PRIu64 " %-20s ok\n", version, kind);
    } else if (st == GCK_ERR_NOT_FOUND) {
        printf("  version %-8" PRIu64 " %-20s evicted meanwhile by the store's writer (not checked)\n", version,
               kind);
        vc->evicted++;
    }
}

static int verify_store(const cli_command *c, const char *dir)
{
    gck_store *s = NULL;
    if (cli_open_store(c, dir, 1, &s) != CLI_OK)
        return CLI_FAIL;
    printf("store: ");
    cli_put_escaped(stdout, dir);
    printf("\n");
    verify_ctx vc = {s, 0};
    size_t checked = 0;
    const gck_status st = gck_store_verify_each(s, verify_line, &vc, &checked);
    char err[2048];
    snprintf(err, sizeof err, "%s", gck_last_error());
    gck_store_stats stats;
    gck_store_stats_get(s, &stats);
    gck_store_close(s);
    if (st != GCK_OK)
        return cli_fail(c, "%s: %s", dir, err);
    printf("OK: %zu versions (%zu full, %zu delta) verified", checked, stats.full_versions, stats.delta_versions);
    if (vc.evicted > 0)
        printf(", %zu evicted meanwhile", vc.evicted);
    printf("; %" PRIu64 " logical bytes, %" PRIu64 " bytes on disk (%.1f%%)\n", stats.logical_bytes, stats.disk_bytes,
           stats.logical_bytes ? 100.0 * (double)stats.disk_bytes / (double)stats.logical_bytes : 0.0);
    return CLI_OK;
}

static int verify_run(const cli_command *c, int argc, char **argv)
{
    const char *path;
    const int p = cli_parse(c, argc, argv, NULL, 0, &path, 1);
    if (p != CLI_OK)
        return p < 0 ? CLI_OK : p;
    struct stat st;
    if (stat(path, &st) != 0)
        return cli_fail(c, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return cli_is_sharded(path) ? verify_file(c, path, 1) : verify_store(c, path);
    if (!S_ISREG(st.st_mode))
        return cli_fail(c, "%s: not a regular file or a directory", path);
    return verify_file(c, path, 0);
}

const cli_command cli_cmd_verify = {
    "verify",
    "FILE|SHARDDIR|STOREDIR",
    "Check every byte of a safetensors file, of a sharded snapshot, or of every version in a store.",
    "FILE: every safetensors rule and every content id the file records.\n"
    "SHARDDIR (a directory holding model.safetensors.index.json): the index, and\n"
    "every shard it names by the same rules, each item against the index's content\n"
    "id (files the index does not name are not read).\n"
    "STOREDIR: each retained version is re-read from disk and rebuilt (deltas\n"
    "against their bases); every tensor, the step, timestamp, loss cid, metadata,\n"
    "dtypes and shapes are checked against the manifest; the versions that pass\n"
    "are listed, then the store's totals. The store is opened read-only (no lock,\n"
    "nothing written): it may be checked while a training job saves to it; a\n"
    "version that job evicts meanwhile is listed as such and is not a failure.\n"
    "Any failure: exit status 1 and one line on stderr naming the file or version.\n",
    verify_run,
};
