/* gradckpt/dtype.h - element types of checkpoints and snapshot tensors. */
#ifndef GRADCKPT_DTYPE_H
#define GRADCKPT_DTYPE_H

#include <stddef.h>

#include <gradckpt/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Element types: every fixed-width type of the safetensors format. The
 * checkpointer stores F64, F32 or BF16; snapshots take all (values are opaque
 * bytes to them, kept in this CPU's byte order, written little-endian).
 * Values after GCK_DTYPE_BOOL were added later; their numbers stay fixed. */
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
    GCK_DTYPE_BOOL,
    GCK_DTYPE_U16,
    GCK_DTYPE_U32,
    GCK_DTYPE_U64,
    GCK_DTYPE_F8_E5M2, /**< 8-bit float, 5 exponent bits (stored, not computed on) */
    GCK_DTYPE_F8_E4M3  /**< 8-bit float, 4 exponent bits (stored, not computed on) */
} gck_dtype;

/** Number of gck_dtype values. */
#define GCK_DTYPE_COUNT 15

/**
 * Bytes per element of a dtype (8, 4, 2, 2, 8, 4, 2, 1, 1, 1, 2, 4, 8, 1, 1
 * in enum order); 0 for a value outside the enum.
 *
 * Ownership: none.  Errors: none.  Thread-safety: safe from any thread.
 */
GCK_API size_t gck_dtype_size(gck_dtype dtype);

/**
 * The safetensors name of a dtype ("F64", "F32", "F16", "BF16", "I64", "I32",
 * "I16", "I8", "U8", "BOOL", "U16", "U32", "U64", "F8_E5M2", "F8_E4M3");
 * "unknown" outside the enum. Never NULL.
 *
 * Ownership: static string.  Errors: none.  Thread-safety: safe from any thread.
 */
GCK_API const char *gck_dtype_name(gck_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_DTYPE_H */
