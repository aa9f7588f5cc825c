/* tools/gradckpt.c - the gradckpt command-line tool: the command table, help and `info`.
 * Each command lives in its own file (cli_inspect.c, cli_diff.c, cli_verify.c,
 * cli_store.c, cli_bench.c, cli_gc_tmp.c); cli.h says what they share.
 * Exit status: 0 success, 1 a failed check, 2 a usage error. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static const cli_command *const commands[] = {
    &cli_cmd_info,       &cli_cmd_inspect,   &cli_cmd_diff,     &cli_cmd_verify, &cli_cmd_store_ls,
    &cli_cmd_store_restore, &cli_cmd_store_tag, &cli_cmd_store_untag, &cli_cmd_store_gc, &cli_cmd_bench,
    &cli_cmd_gc_tmp,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: gradckpt COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %s%s%s\n      %s\n", commands[i]->name, commands[i]->synopsis[0] ? " " : "",
                commands[i]->synopsis, commands[i]->summary);
    fprintf(out, "  help [COMMAND]\n      This text, or a command's details.\n"
                 "\n'gradckpt help COMMAND' or 'gradckpt COMMAND --help' for details.\n"
                 "Exit status: 0 success, 1 a failed check (unreadable, corrupt or missing file,\n"
                 "verify failure), 2 a usage error. Errors are one line on stderr.\n");
}

/* The command named by words[0] (and words[1] after "store"); *used = words taken. */
static const cli_command *find_command(int nwords, char **words, int *used)
{
    char name[64];
    *used = 1;
    snprintf(name, sizeof name, "%s", words[0]);
    if (strcmp(words[0], "store") == 0) {
        if (nwords < 2 || words[1][0] == '-')
            return NULL;
        snprintf(name, sizeof name, "store %s", words[1]);
        *used = 2;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

static void store_usage(FILE *out)
{
    fprintf(out, "usage: gradckpt store SUBCOMMAND ...\n\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strncmp(commands[i]->name, "store ", 6) == 0)
            fprintf(out, "  gradckpt %s %s\n      %s\n", commands[i]->name, commands[i]->synopsis,
                    commands[i]->summary);
}

/* `help [COMMAND...]` */
static int run_help(int argc, char **argv)
{
    if (argc == 0) {
        usage(stdout);
        return CLI_OK;
    }
    int used;
    const cli_command *c = find_command(argc, argv, &used);
    if (c != NULL && used == argc) {
        cli_print_help(c, stdout);
        return CLI_OK;
    }
    if (strcmp(argv[0], "store") == 0 && argc == 1) {
        store_usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[0], "help") == 0 && argc == 1) {
        usage(stdout);
        return CLI_OK;
    }
    fprintf(stderr, "gradckpt help: no command '%s%s%s' (try 'gradckpt help')\n", argv[0], argc > 1 ? " " : "",
            argc > 1 ? argv[1] : "");
    return CLI_USAGE;
}

static int info_run(const cli_command *c, int argc, char **argv)
{
    const int p = cli_parse(c, argc, argv, NULL, 0, NULL, 0);
    if (p != CLI_OK)
        return p < 0 ? CLI_OK : p;
    printf("gradckpt %s\n", gck_version_string());
    printf("active ISA: %s\n", gck_isa_name(gck_isa_active()));
    printf("ISAs:");
    for (int i = 0; i < GCK_ISA_COUNT; i++)
        printf(" %s=%s", gck_isa_name((gck_isa)i), gck_isa_available((gck_isa)i) ? "yes" : "no");
    printf("\n");
#ifdef _OPENMP
    printf("threads: %d (OpenMP)\n", omp_get_max_threads());
#else
    printf("threads: 1 (built without OpenMP)\n");
#endif
    return CLI_OK;
}

const cli_command cli_cmd_info = {
    "info",
    "",
    "Library version, kernel ISAs (active and available), thread count.",
    NULL,
    info_run,
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "gradckpt: missing command (try 'gradckpt help')\n");
        usage(stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        return run_help(argc - 2, argv + 2);
    int used;
    const cli_command *c = find_command(argc - 1, argv + 1, &used);
    if (c == NULL && strcmp(cmd, "store") == 0) {
        if (argc >= 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
            store_usage(stdout);
            return CLI_OK;
        }
        if (argc < 3)
            fprintf(stderr, "gradckpt store: missing subcommand (ls, restore, tag, gc)\n");
        else
            fprintf(stderr, "gradckpt store: unknown subcommand '%s' (ls, restore, tag, gc)\n", argv[2]);
        store_usage(stderr);
        return CLI_USAGE;
    }
    if (c == NULL) {
        fprintf(stderr, "gradckpt: unknown command '%s' (try 'gradckpt help')\n", cmd);
        usage(stderr);
        return CLI_USAGE;
    }
    int rc = c->run(c, argc - 1 - used, argv + 1 + used);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "gradckpt %s: cannot write the output\n", c->name);
        rc = rc == CLI_OK ? CLI_FAIL : rc;
    }
    return rc;
}
