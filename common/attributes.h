/* common/attributes.h - the one set of attribute macros every layer uses (internal). */
#ifndef GCK_ATTRIBUTES_H
#define GCK_ATTRIBUTES_H

/* Internal symbols shared between the library's files: hidden from the
 * shared library's export table, so they are not part of the ABI. */
#if defined(__GNUC__)
#  define GCK_INTERNAL __attribute__((visibility("hidden")))
#else
#  define GCK_INTERNAL
#endif

/* Helpers of SIMD kernels: always inlined into the kernel that calls them,
 * so each instance is compiled with its ISA file's flags and its constant
 * arguments (element size, masks) fold away. */
#if defined(__GNUC__)
#  define GCK_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#  define GCK_ALWAYS_INLINE static inline
#endif

#endif /* GCK_ATTRIBUTES_H */
