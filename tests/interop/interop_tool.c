/* tests/interop/interop_tool.c - helper for test_interop.py: writes a known snapshot, or dumps a file.
 *
 *   interop_tool write PATH   a snapshot of every dtype, metadata and an optimizer blob
 *   interop_tool dump PATH    one line per tensor: name dtype shape hex-bytes (little-endian),
 *                             then "meta key=value" lines; exit 1 with the error if it fails */
#include <stdio.h>
#include <string.h>

#include <gradckpt/gradckpt.h>

static int write_known(const char *path)
{
    gck_snapshot *s = NULL;
    if (gck_snapshot_create(1234, &s) != GCK_OK)
        return 1;
    gck_snapshot_set_timestamp(s, 1700000000);
    const float f32[6] = {0.5f, -1.0f, 2.25f, 3.0f, -0.0f, 1e-8f};
    const double f64[3] = {1.0 / 3.0, -2e300, 4.0};
    const long long i64[2] = {-5, 1LL << 40};
    const int i32[3] = {7, -8, 9};
    const short i16[2] = {-300, 300};
    const signed char i8[3] = {-1, 2, -3};
    const unsigned char u8[4] = {0, 1, 254, 255}, b[3] = {1, 0, 1};
    const unsigned short f16[2] = {0x3c00, 0xc000}, bf16[2] = {0x3f80, 0xc000}, u16[2] = {1, 65535};
    const unsigned u32[2] = {7, 4000000000u};
    const unsigned long long u64[2] = {3, 18000000000000000000ull};
    const unsigned char e5m2[2] = {0x3c, 0xc0}, e4m3[2] = {0x38, 0xb8};
    const int64_t s23[2] = {2, 3}, s3[1] = {3}, s2[1] = {2}, s4[1] = {4};
    int bad = 0;
    bad |= gck_snapshot_add_tensor(s, "layer.weight", GCK_DTYPE_F32, s23, 2, f32);
    bad |= gck_snapshot_add_tensor(s, "layer.bias", GCK_DTYPE_F64, s3, 1, f64);
    bad |= gck_snapshot_add_tensor(s, "i64", GCK_DTYPE_I64, s2, 1, i64);
    bad |= gck_snapshot_add_tensor(s, "i32", GCK_DTYPE_I32, s3, 1, i32);
    bad |= gck_snapshot_add_tensor(s, "i16", GCK_DTYPE_I16, s2, 1, i16);
    bad |= gck_snapshot_add_tensor(s, "i8", GCK_DTYPE_I8, s3, 1, i8);
    bad |= gck_snapshot_add_tensor(s, "u8", GCK_DTYPE_U8, s4, 1, u8);
    bad |= gck_snapshot_add_tensor(s, "mask", GCK_DTYPE_BOOL, s3, 1, b);
    bad |= gck_snapshot_add_tensor(s, "half", GCK_DTYPE_F16, s2, 1, f16);
    bad |= gck_snapshot_add_tensor(s, "brain", GCK_DTYPE_BF16, s2, 1, bf16);
    bad |= gck_snapshot_add_tensor(s, "u16", GCK_DTYPE_U16, s2, 1, u16);
    bad |= gck_snapshot_add_tensor(s, "u32", GCK_DTYPE_U32, s2, 1, u32);
    bad |= gck_snapshot_add_tensor(s, "u64", GCK_DTYPE_U64, s2, 1, u64);
    bad |= gck_snapshot_add_tensor(s, "e5m2", GCK_DTYPE_F8_E5M2, s2, 1, e5m2);
    bad |= gck_snapshot_add_tensor(s, "e4m3", GCK_DTYPE_F8_E4M3, s2, 1, e4m3);
    bad |= gck_snapshot_set_optimizer_state(s, "layer.weight", "moments", 7);
    bad |= gck_snapshot_set_metadata(s, "run", "interop");
    bad |= gck_snapshot_set_loss_cid(s, "xxh3:0123456789abcdef");
    if (bad || gck_snapshot_save(s, path) != GCK_OK) {
        fprintf(stderr, "interop_tool: %s\n", gck_last_error());
        return 1;
    }
    gck_snapshot_destroy(s);
    return 0;
}

static int dump(const char *path)
{
    gck_snapshot *s = NULL;
    if (gck_snapshot_load(path, &s) != GCK_OK) {
        fprintf(stderr, "interop_tool: %s\n", gck_last_error());
        return 1;
    }
    for (size_t i = 0; i < gck_snapshot_num_tensors(s); i++) {
        gck_tensor_info t;
        gck_snapshot_tensor(s, i, &t);
        printf("tensor %s %s [", t.name, gck_dtype_name(t.dtype));
        for (size_t d = 0; d < t.ndim; d++)
            printf("%s%lld", d ? "," : "", (long long)t.shape[d]);
        printf("] ");
        /* little-endian bytes of each element */
        const size_t esz = gck_dtype_size(t.dtype);
        const unsigned char *p = t.data;
        const unsigned one = 1;
        const int le = *(const unsigned char *)&one == 1;
        for (size_t e = 0; e < t.nbytes; e += esz)
            for (size_t k = 0; k < esz; k++)
                printf("%02x", p[e + (le ? k : esz - 1 - k)]);
        printf("\n");
    }
    for (size_t i = 0; i < gck_snapshot_num_metadata(s); i++) {
        const char *k = gck_snapshot_metadata_key(s, i);
        printf("meta %s=%s\n", k, gck_snapshot_metadata(s, k));
    }
    printf("step %llu\n", (unsigned long long)gck_snapshot_step(s));
    gck_snapshot_destroy(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "write") == 0)
        return write_known(argv[2]);
    if (argc == 3 && strcmp(argv[1], "dump") == 0)
        return dump(argv[2]);
    fprintf(stderr, "usage: interop_tool write|dump PATH\n");
    return 2;
}
