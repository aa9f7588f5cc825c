/* gradckpt/dtype.h - element types of checkpoints and snapshot tensors. */
#ifndef GRADCKPT_DTYPE_H
#define GRADCKPT_DTYPE_H

#include <stddef.h>

#include <gradckpt/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Element types. The checkpointer stores F64 or F32; snapshots take all. */
typedef enum gck_dtype {
    GCK_DTYPE_F64, /**< IEEE binary64 */
    GCK_DTYPE_F32, /**< IEEE binary32 */
    GCK_DTYPE_F16, /**< IEEE binary16 */
    GCK_DTYPE_BF16, /**< bfloat16 */
    GCK_DTYPE_I64,
    GCK_DTYPE_I32,
    GCK_DTYPE_I16,
    GCK_DTYPE_I8,
    GCK_DTYPE_U8,
    GCK_DTYPE_BOOL
} gck_dtype;

/** Number of gck_dtype values. */
#define GCK_DTYPE_COUNT 10

/**
 * Bytes per element of a dtype (8, 4, 2, 2, 8, 4, 2, 1, 1, 1); 0 for a value
 * outside the enum.
 *
 * Ownership: none.  Errors: none.  Thread-safety: safe from any thread.
 */
GCK_API size_t gck_dtype_size(gck_dtype dtype);

/**
 * The safetensors name of a dtype ("F64", "F32", "F16", "BF16", "I64", "I32",
 * "I16", "I8", "U8", "BOOL"); "unknown" outside the enum. Never NULL.
 *
 * Ownership: static string.  Errors: none.  Thread-safety: safe from any thread.
 */
GCK_API const char *gck_dtype_name(gck_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_DTYPE_H */
