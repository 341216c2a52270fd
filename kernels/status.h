/* kernels/status.h — status codes and the thread-local last error message.
 *
 * Every fallible function in localtensor returns an lt_status and, on failure,
 * leaves a message saying what was wrong and where in lt_errmsg(). The message
 * lives in thread-local storage (never a process global), so two threads that
 * each drive their own simulation do not clobber each other's errors.
 *
 * Exit-code convention used by the CLI: LT_MISMATCH (a check failed) -> 1,
 * every other non-OK status (bad input, unsupported, out of memory) -> 2.
 */
#ifndef LT_STATUS_H
#define LT_STATUS_H

#include <stdint.h>
#include <stddef.h>
#include "kernels/export.h"

/* One list generates the enum and the name table so they cannot drift. */
#define LT_STATUS_MAP(XX)                                   \
    XX(OK,          "ok")                                   \
    XX(NOMEM,       "out of memory")                        \
    XX(INVALID,     "invalid argument")                     \
    XX(SHAPE,       "shape mismatch")                       \
    XX(DTYPE,       "dtype mismatch")                       \
    XX(OVERFLOW,    "size overflow")                        \
    XX(UNSUPPORTED, "not supported")                        \
    XX(MISMATCH,    "check failed")                         \
    XX(IO,          "i/o error")

typedef enum {
#define LT__XX(name, str) LT_##name,
    LT_STATUS_MAP(LT__XX)
#undef LT__XX
    LT_STATUS_COUNT
} lt_status;

/* Short name of a status ("out of memory"); never NULL. */
LT_API const char *lt_status_str(lt_status st);

/* The message of the last failure on this thread ("" if none). Borrowed:
 * valid until the next failing call on this thread. */
LT_API const char *lt_errmsg(void);

#endif
