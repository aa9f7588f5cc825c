/* Uses the installed headers and library; exits 0 when the answers are right. */
#include <stdio.h>
#include <string.h>

#include <gradckpt/gradckpt.h>

int main(void)
{
    const double x[3] = {3.0, 4.0, 12.0};
    if (gck_sumsq_f64(x, 3) != 169.0 || gck_l2norm_f64(x, 3) != 13.0)
        return 1;
    if (strcmp(gck_status_name(GCK_ERR_IO), "GCK_ERR_IO") != 0)
        return 1;
    if (strcmp(gck_version_string(), GCK_VERSION_STRING) != 0)
        return 1;
    printf("consumer ok: gradckpt %s on %s\n", gck_version_string(), gck_isa_name(gck_isa_active()));
    return 0;
}
