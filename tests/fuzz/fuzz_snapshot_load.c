/* tests/fuzz/fuzz_snapshot_load.c - libFuzzer target: gck_snapshot_load on arbitrary bytes.
 *
 * Every input must give GCK_OK or a clean error status: no crash, hang,
 * leak, sanitizer report, or allocation beyond the input's size. A loaded
 * snapshot is saved again and reloaded, which must succeed. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gradckpt/gradckpt.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_in[64], g_out[64];

/* The two files, at exit: each run would otherwise leave them in /dev/shm. */
static void gck_fuzz_remove(void)
{
    (void)unlink(g_in);
    (void)unlink(g_out);
}

static void gck_fuzz_paths(void)
{
    if (g_in[0] == '\0') {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(g_in, sizeof g_in, "%s/gck_fuzz_in_%d", dir, (int)getpid());
        snprintf(g_out, sizeof g_out, "%s/gck_fuzz_out_%d", dir, (int)getpid());
        atexit(gck_fuzz_remove);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gck_fuzz_paths();
    const int fd = open(g_in, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return 0;
    const ssize_t w = write(fd, data, size);
    close(fd);
    if (w != (ssize_t)size)
        return 0;
    gck_snapshot *s = NULL;
    const gck_status st = gck_snapshot_load(g_in, &s);
    if (st == GCK_OK) {
        /* what loads must save and load again */
        if (gck_snapshot_save(s, g_out) != GCK_OK)
            abort();
        gck_snapshot *t = NULL;
        if (gck_snapshot_load(g_out, &t) != GCK_OK)
            abort();
        if (gck_snapshot_num_tensors(t) != gck_snapshot_num_tensors(s))
            abort();
        gck_snapshot_destroy(t);
        gck_snapshot_destroy(s);
    } else if (gck_last_error()[0] == '\0') {
        abort(); /* every failure must say why */
    }
    return 0;
}
