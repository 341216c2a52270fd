/* kernels/export.h — LT_API, the mark of what the shared library exports.
 *
 * The library is compiled with -fvisibility=hidden, so a function is visible
 * to programs linking liblocaltensor.so only when its declaration in a
 * public header carries LT_API. Every public `lt_` function does; internal
 * `lt__` functions (declared in the *_impl.h headers, which are not
 * installed) never do, so they stay callable between the library's own
 * files (and from programs linking the static library) without becoming
 * part of the shared library's interface.
 */
#ifndef LT_EXPORT_H
#define LT_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define LT_API __attribute__((visibility("default")))
#else
#define LT_API
#endif

#endif
