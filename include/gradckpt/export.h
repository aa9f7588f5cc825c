/* gradckpt/export.h - symbol visibility for the public API. */
#ifndef GRADCKPT_EXPORT_H
#define GRADCKPT_EXPORT_H

#if defined(GCK_STATIC_DEFINE)
#  define GCK_API
#elif defined(_WIN32)
#  if defined(gradckpt_EXPORTS)
#    define GCK_API __declspec(dllexport)
#  else
#    define GCK_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define GCK_API __attribute__((visibility("default")))
#else
#  define GCK_API
#endif

#if defined(__GNUC__)
#  define GCK_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#  define GCK_PRINTF(fmt, args)
#endif

#endif /* GRADCKPT_EXPORT_H */
