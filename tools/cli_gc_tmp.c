/* tools/cli_gc_tmp.c - `gradckpt gc-tmp DIR`: remove what interrupted saves left behind. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

/* Files younger than this are kept unless --min-age says otherwise: a
 * writer of a gradckpt version that took no lock touches its file while it
 * writes; an hour of silence is far past any fsync. */
#define CLI_GC_TMP_MIN_AGE 3600

static int gc_tmp_run(const cli_command *c, int argc, char **argv)
{
    const char *dir, *age = NULL, *target = NULL;
    const cli_opt opts[] = {{"--min-age", NULL, &age}, {"--target", NULL, &target}};
    const int p = cli_parse(c, argc, argv, opts, 2, &dir, 1);
    if (p != CLI_OK)
        return p < 0 ? CLI_OK : p;
    uint64_t min_age = CLI_GC_TMP_MIN_AGE;
    if (age != NULL && !cli_parse_u64(age, &min_age))
        return cli_usage(c, "--min-age '%s' is not a number of seconds", age);
    if (target != NULL && (target[0] == '\0' || strchr(target, '/') != NULL))
        return cli_usage(c, "--target '%s' is not a file name", target);
    struct stat st;
    if (stat(dir, &st) != 0)
        return cli_fail(c, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cli_fail(c, "%s: not a directory", dir);
    gck_sweep_stats r;
    if (gck_snapshot_sweep_temporaries(dir, target, min_age, &r) != GCK_OK)
        return cli_fail_gck(c);
    char b[32];
    cli_format_bytes(b, sizeof b, r.bytes_freed);
    printf("gc-tmp: removed %zu temporary files, %" PRIu64 " bytes (%s); kept %zu a live writer holds and %zu "
           "modified in the last %" PRIu64 " s\n",
           r.removed, r.bytes_freed, b, r.live, r.young, min_age);
    return CLI_OK;
}

const cli_command cli_cmd_gc_tmp = {
    "gc-tmp",
    "DIR [--min-age SECONDS] [--target NAME]",
    "Remove the temporary files interrupted saves left in a directory.",
    "A save writes '.<name>.tmp.<pid>.<n>' next to its target <name> and renames it\n"
    "over the target; a writer killed in between leaves it behind. Removed: regular\n"
    "files in DIR named exactly so (for target NAME only with --target) whose lock\n"
    "no live writer holds and that were not modified for --min-age seconds\n"
    "(default 3600; 0 = no age rule). Nothing else is touched: other names,\n"
    "symbolic links, directories, files a running save is writing.\n",
    gc_tmp_run,
};
