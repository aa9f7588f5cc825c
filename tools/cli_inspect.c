/* tools/cli_inspect.c - `gradckpt inspect FILE|SHARDDIR [--json]`: what a safetensors file or sharded snapshot holds. */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int inspect_json(const cli_command *c, const char *path, const gck_snapshot *s, const cli_header_info *h)
{
    int bad = 0;
    json_t *root = json_object();
    cli_jset(root, "file", json_string(path), &bad);
    cli_jset(root, "format", json_string(h->ours ? "gradckpt" : "safetensors"), &bad);
    if (h->shards > 0) /* a sharded directory: only then, so a file's output is as before */
        cli_jset(root, "shards", cli_ju64(h->shards), &bad);
    cli_jset(root, "step", h->ours ? cli_ju64(gck_snapshot_step(s)) : json_null(), &bad);
    cli_jset(root, "timestamp", h->ours ? cli_ju64(gck_snapshot_timestamp(s)) : json_null(), &bad);
    const char *loss = gck_snapshot_loss_cid(s);
    cli_jset(root, "loss_cid", loss ? json_string(loss) : json_null(), &bad);

    json_t *md = json_object();
    for (size_t i = 0; i < gck_snapshot_num_metadata(s); i++) {
        const char *k = gck_snapshot_metadata_key(s, i);
        cli_jset(md, k, json_string(gck_snapshot_metadata(s, k)), &bad);
    }
    cli_jset(root, "metadata", md, &bad);

    json_t *tensors = json_array();
    for (size_t i = 0; i < gck_snapshot_num_tensors(s); i++) {
        gck_tensor_info t;
        if (gck_snapshot_tensor(s, i, &t) != GCK_OK) {
            bad = 1;
            break;
        }
        int computed;
        const double norm = cli_tensor_l2norm(&t, &computed);
        json_t *o = json_object();
        cli_jset(o, "name", json_string(t.name), &bad);
        cli_jset(o, "dtype", json_string(gck_dtype_name(t.dtype)), &bad);
        cli_jset(o, "shape", cli_jshape(t.shape, t.ndim), &bad);
        cli_jset(o, "elements", cli_ju64(cli_elements(&t)), &bad);
        cli_jset(o, "bytes", cli_ju64(t.nbytes), &bad);
        cli_jset(o, "l2norm", computed ? cli_jreal(norm) : json_null(), &bad);
        cli_jset(o, "content_id", json_string(t.content_id), &bad);
        cli_jappend(tensors, o, &bad);
    }
    cli_jset(root, "tensors", tensors, &bad);

    json_t *opt = json_array();
    const size_t nopt = gck_snapshot_num_optimizer_states(s);
    for (size_t i = 0; i < nopt; i++) {
        const char *param;
        const void *blob;
        size_t len;
        if (gck_snapshot_optimizer_state(s, i, &param, &blob, &len) != GCK_OK) {
            bad = 1;
            break;
        }
        json_t *o = json_object();
        cli_jset(o, "param", json_string(param), &bad);
        cli_jset(o, "bytes", cli_ju64(len), &bad);
        cli_jappend(opt, o, &bad);
    }
    cli_jset(root, "optimizer_states", opt, &bad);

    json_t *ids = json_object();
    cli_jset(ids, "algorithm", json_string("xxh3-64"), &bad);
    cli_jset(ids, "recorded", cli_ju64(h->recorded_cids), &bad);
    cli_jset(ids, "total", cli_ju64(gck_snapshot_num_tensors(s) + nopt), &bad);
    cli_jset(ids, "verified", json_true(), &bad);
    cli_jset(root, "content_ids", ids, &bad);

    return cli_finish_json(c, root, bad);
}

static int inspect_text(const char *path, const gck_snapshot *s, const cli_header_info *h)
{
    char buf[256];
    fputs("file: ", stdout);
    cli_put_escaped(stdout, path);
    if (h->shards > 0)
        printf("\nformat: %s, %zu shard%s\n", h->ours ? "gradckpt sharded snapshot" : "sharded safetensors (no gradckpt keys)",
               h->shards, h->shards == 1 ? "" : "s");
    else
        printf("\nformat: %s\n", h->ours ? "gradckpt snapshot" : "safetensors (no gradckpt keys)");
    if (h->ours) {
        printf("step: %" PRIu64 "\n", gck_snapshot_step(s));
        cli_format_time(buf, sizeof buf, gck_snapshot_timestamp(s));
        printf("timestamp: %s\n", buf);
    }
    if (gck_snapshot_loss_cid(s) != NULL) {
        fputs("loss cid: ", stdout);
        cli_put_escaped(stdout, gck_snapshot_loss_cid(s));
        fputc('\n', stdout);
    }
    const size_t nmd = gck_snapshot_num_metadata(s);
    printf("metadata: %zu entr%s\n", nmd, nmd == 1 ? "y" : "ies");
    for (size_t i = 0; i < nmd; i++) {
        const char *k = gck_snapshot_metadata_key(s, i);
        fputs("  ", stdout);
        cli_put_escaped(stdout, k);
        fputs(" = ", stdout);
        cli_put_escaped(stdout, gck_snapshot_metadata(s, k));
        fputc('\n', stdout);
    }

    const size_t n = gck_snapshot_num_tensors(s);
    uint64_t total = 0;
    int wname = 4, wshape = 5;
    for (size_t i = 0; i < n; i++) {
        gck_tensor_info t;
        gck_snapshot_tensor(s, i, &t);
        total += t.nbytes;
        const int ln = (int)strlen(t.name);
        wname = ln > wname ? (ln < 48 ? ln : 48) : wname;
        cli_format_shape(buf, sizeof buf, t.shape, t.ndim);
        wshape = (int)strlen(buf) > wshape ? (int)strlen(buf) : wshape;
    }
    char hb[32];
    cli_format_bytes(hb, sizeof hb, total);
    printf("tensors: %zu, %" PRIu64 " bytes (%s)\n", n, total, hb);
    if (n > 0)
        printf("  %-*s  %-5s  %-*s  %12s  %12s  %-24s  %s\n", wname, "name", "dtype", wshape, "shape", "elements",
               "bytes", "l2norm", "content id");
    for (size_t i = 0; i < n; i++) {
        gck_tensor_info t;
        gck_snapshot_tensor(s, i, &t);
        int computed;
        const double norm = cli_tensor_l2norm(&t, &computed);
        char nb[64];
        if (computed)
            snprintf(nb, sizeof nb, "%.17g", norm);
        else
            snprintf(nb, sizeof nb, "-");
        fputs("  ", stdout);
        cli_put_escaped(stdout, t.name);
        const int ln = (int)strlen(t.name);
        printf("%*s  %-5s  ", ln < wname ? wname - ln : 0, "", gck_dtype_name(t.dtype));
        cli_format_shape(buf, sizeof buf, t.shape, t.ndim);
        printf("%-*s  %12" PRIu64 "  %12zu  %-24s  %s\n", wshape, buf, cli_elements(&t), t.nbytes, nb, t.content_id);
    }

    const size_t nopt = gck_snapshot_num_optimizer_states(s);
    printf("optimizer states: %zu\n", nopt);
    int wparam = 0;
    for (size_t i = 0; i < nopt; i++) {
        const char *param;
        const void *blob;
        size_t len;
        gck_snapshot_optimizer_state(s, i, &param, &blob, &len);
        const int ln = (int)strlen(param);
        wparam = ln > wparam ? (ln < 48 ? ln : 48) : wparam;
    }
    for (size_t i = 0; i < nopt; i++) {
        const char *param;
        const void *blob;
        size_t len;
        gck_snapshot_optimizer_state(s, i, &param, &blob, &len);
        fputs("  ", stdout);
        cli_put_escaped(stdout, param);
        const int ln = (int)strlen(param);
        printf("%*s  %12zu bytes\n", ln < wparam ? wparam - ln : 0, "", len);
    }
    if (h->recorded_cids > 0)
        printf("checksum: OK, %zu of %zu content ids recorded in the %s match the data (XXH3-64)\n",
               h->recorded_cids, n + nopt, h->shards > 0 ? "index" : "file");
    else
        printf("checksum: the file records no content ids; the ids above were computed from the data (XXH3-64)\n");
    return CLI_OK;
}

static int inspect_run(const cli_command *c, int argc, char **argv)
{
    int json = 0;
    const char *path;
    const cli_opt opts[] = {{"--json", &json, NULL}};
    const int p = cli_parse(c, argc, argv, opts, 1, &path, 1);
    if (p != CLI_OK)
        return p < 0 ? CLI_OK : p;
    gck_snapshot *s = NULL;
    if (cli_load_snapshot(c, path, &s) != CLI_OK)
        return CLI_FAIL;
    cli_header_info h;
    int rc = cli_read_header_info(c, path, &h);
    if (rc != CLI_OK)
        goto done;
    rc = json ? inspect_json(c, path, s, &h) : inspect_text(path, s, &h);
done:
    gck_snapshot_destroy(s);
    return rc;
}

const cli_command cli_cmd_inspect = {
    "inspect",
    "FILE|SHARDDIR [--json]",
    "Show what a safetensors file or sharded snapshot holds (ours or another writer's) and check its content ids.",
    "Prints, per tensor: name, dtype, shape, element count, bytes, L2 norm (F32/F64;\n"
    "F16/BF16 widened exactly by the kernels; '-' / null for integer and bool tensors)\n"
    "and content id; then the step, timestamp and loss content id when the file has\n"
    "gradckpt's keys, the user metadata, the optimizer-state blobs (parameter, bytes)\n"
    "and a checksum line. Every content id the file records is checked against the\n"
    "data: a mismatch, or any other defect, fails with exit status 1.\n"
    "SHARDDIR: a directory holding model.safetensors.index.json (the Hugging Face\n"
    "sharded layout, as gck_snapshot_save_sharded and gck_mpi_snapshot_save write\n"
    "it): every item the index names, from its shard, checked against the index's\n"
    "content ids; the fields are the index's; the format line gives the shard count\n"
    "(--json: \"shards\").\n"
    "\n"
    "  --json   one JSON object: file (as given), format, step, timestamp, loss_cid,\n"
    "           metadata, tensors [name, dtype, shape, elements, bytes, l2norm,\n"
    "           content_id], optimizer_states [param, bytes], content_ids.\n"
    "           Non-finite norms are null.\n",
    inspect_run,
};
