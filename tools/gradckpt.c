/* tools/gradckpt.c - the gradckpt command-line tool.
 * Exit status: 0 success, 1 a failed check, 2 a usage error. */
#include <stdio.h>
#include <string.h>

#include <gradckpt/gradckpt.h>

#ifdef _OPENMP
#include <omp.h>
#endif

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gradckpt COMMAND [ARGS]\n"
            "\n"
            "commands:\n"
            "  info        library version, kernel ISAs (active and available), thread count\n"
            "  help        this text\n");
}

static int cmd_info(int argc, char **argv)
{
    (void)argv;
    if (argc != 0) {
        fprintf(stderr, "gradckpt info: takes no arguments\n");
        return 2;
    }
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
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "info") == 0)
        return cmd_info(argc - 2, argv + 2);
    fprintf(stderr, "gradckpt: unknown command '%s' (try 'gradckpt help')\n", cmd);
    return 2;
}
