/* tools/cli.h - what the gradckpt command-line tool's files share: the command
 * table entry, argument parsing, error lines, loading and formatting helpers.
 *
 * Exit status of every command: 0 success, 1 a failed check (unreadable,
 * corrupt or missing file, verify failure, version not in the store),
 * 2 a usage error. Every error is one line on stderr starting with
 * "gradckpt <command>: "; a usage error is followed by the command's synopsis. */
#ifndef GRADCKPT_TOOLS_CLI_H
#define GRADCKPT_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include <gradckpt/gradckpt.h>

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

typedef struct cli_command cli_command;
struct cli_command {
    const char *name;     /**< "inspect", "store ls" */
    const char *synopsis; /**< arguments, e.g. "FILE [--json]" */
    const char *summary;  /**< one line for the command list */
    const char *details;  /**< the rest of `help COMMAND` (may be NULL) */
    /** Runs with the arguments after the command name. */
    int (*run)(const cli_command *self, int argc, char **argv);
};

/* One entry per command (cli_*.c); gradckpt.c lists them. */
extern const cli_command cli_cmd_info, cli_cmd_inspect, cli_cmd_diff, cli_cmd_verify, cli_cmd_store_ls,
    cli_cmd_store_restore, cli_cmd_store_tag, cli_cmd_store_untag, cli_cmd_store_gc, cli_cmd_bench, cli_cmd_gc_tmp;

/** Prints `help COMMAND` for c to out. */
void cli_print_help(const cli_command *c, FILE *out);

/* ---- errors ------------------------------------------------------------------- */

/** "gradckpt <cmd>: <message>" on stderr, as one line (control characters
 *  escaped). Returns CLI_FAIL. */
int cli_fail(const cli_command *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** cli_fail with gck_last_error() as the message. */
int cli_fail_gck(const cli_command *c);

/** The one out-of-memory line, as the library words it: "out of memory: <what>". Returns CLI_FAIL. */
int cli_fail_oom(const cli_command *c, const char *what);

/** The error line, then "usage: gradckpt <cmd> <synopsis>". Returns CLI_USAGE. */
int cli_usage(const cli_command *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- arguments ---------------------------------------------------------------- */

/** An option: a flag (value == NULL) or one taking a value ("--size N" or "--size=N"). */
typedef struct cli_opt {
    const char *name; /**< "--json" */
    int *flag;        /**< set to 1 when given (flags) */
    const char **value; /**< receives the value (options with a value) */
} cli_opt;

/**
 * Splits argv into positionals (exactly n_pos of them) and the options in
 * opts[0..n_opts); "--" ends the options; "-h"/"--help" prints the help.
 * Returns CLI_OK to go on, CLI_USAGE after printing a usage error, or -1
 * after printing the help (the command then exits 0).
 */
int cli_parse(const cli_command *c, int argc, char **argv, const cli_opt *opts, size_t n_opts, const char **pos,
              size_t n_pos);

/** Parses a decimal u64 (digits only). 1 on success. */
int cli_parse_u64(const char *s, uint64_t *out);

/* ---- output ------------------------------------------------------------------- */

/** Writes s with control characters and backslashes escaped (\n, \xNN). */
void cli_put_escaped(FILE *out, const char *s);

/** Prints the JSON value (2-space indent, keys in insertion order) and a newline. */
int cli_print_json(const cli_command *c, json_t *root);

/** The end of a --json command: cli_print_json, or when `bad` (a builder ran
 *  out of memory) the out-of-memory line; root is released either way. */
int cli_finish_json(const cli_command *c, json_t *root, int bad);

/** Builders that tolerate NULL (out of memory) by marking *bad. */
void cli_jset(json_t *obj, const char *key, json_t *v, int *bad);
void cli_jappend(json_t *arr, json_t *v, int *bad);
/** A real, or null when it is not finite (JSON has no NaN/Inf). */
json_t *cli_jreal(double v);
/** An integer, or its decimal string beyond INT64_MAX. */
json_t *cli_ju64(uint64_t v);
/** A shape as a JSON array. */
json_t *cli_jshape(const int64_t *shape, size_t ndim);

/** "[2, 3]" into buf (cut with "..." when too long). */
void cli_format_shape(char *buf, size_t cap, const int64_t *shape, size_t ndim);
/** "1700000000 (2023-11-14T22:13:20Z)" into buf. */
void cli_format_time(char *buf, size_t cap, uint64_t secs);
/** "12.3 MiB" style into buf (exact bytes below 1 KiB). */
void cli_format_bytes(char *buf, size_t cap, uint64_t bytes);

/* ---- snapshots ---------------------------------------------------------------- */

/** Number of elements of a tensor (1 for a scalar). */
uint64_t cli_elements(const gck_tensor_info *t);

/** 1 for the dtypes whose values are floating point (F64, F32, F16, BF16). */
int cli_is_float(gck_dtype d);

/**
 * Of a floating-point tensor a (F64, F32, BF16, F16, read in place by the
 * kernels, 2-byte floats widened exactly): with b NULL its L2 norm, else the
 * squared L2 distance to b (same dtype and element count). NaN for another
 * dtype.
 */
double cli_dist2_or_norm(const gck_tensor_info *a, const gck_tensor_info *b);

/** L2 norm of a floating-point tensor (NaN when not one, or out of memory; see *computed). */
double cli_tensor_l2norm(const gck_tensor_info *t, int *computed);

/** What the file's safetensors header says beyond what the snapshot holds. */
typedef struct cli_header_info {
    int ours;              /**< has gradckpt.* keys (step, timestamp, format) */
    size_t recorded_cids;  /**< gradckpt.cid.* entries (all checked by the load) */
    size_t shards;         /**< a sharded directory: the shard files its index names; 0 for a file */
} cli_header_info;

/** Reads the header of a file (or the index of a sharded directory) that
 *  loaded. 0 on success; else the error is printed. */
int cli_read_header_info(const cli_command *c, const char *path, cli_header_info *out);

/** 1 when path is a directory holding a sharded snapshot's index (GCK_SHARDED_INDEX). */
int cli_is_sharded(const char *path);

/** Loads FILE with every content id checked (values mapped, not copied), or
 *  every item of a sharded directory (gck_snapshot_load_sharded). */
int cli_load_snapshot(const cli_command *c, const char *path, gck_snapshot **out);

/* ---- stores ------------------------------------------------------------------- */

/**
 * Opens an existing store (refusing a directory without manifest.json rather
 * than creating a store there): with the writer's lock, or readonly (no
 * lock, nothing written: beside a running writer, on a read-only file
 * system). Returns CLI_OK or CLI_FAIL (printed).
 */
int cli_open_store(const cli_command *c, const char *dir, int readonly, gck_store **out);

/** Resolves "latest", a version number or a tag. Returns CLI_OK or CLI_FAIL (printed). */
int cli_resolve_version(const cli_command *c, gck_store *s, const char *dir, const char *ref, uint64_t *out);

#endif /* GRADCKPT_TOOLS_CLI_H */
