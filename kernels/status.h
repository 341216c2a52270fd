/* kernels/status.h — status codes and the thread-local last error message.
 *
 * Every fallible function in localtensor returns an lt_status and, on failure,
 * leaves a message saying what was wrong and where in lt_errmsg(). The message
 * lives in thread-local storage (never a process global), so two threads that
 * each drive their own simulation do not clobber each other's errors.
 *
 * Beside the text, the last failure is kept as a structured value
 * (lt_errinfo()): the status, a sub-code (lt_errcode: "not supported yet",
 * "would hang", ...) and what the message opens with (its own "while ..."
 * context, the name of an op or step, a file position). Code that decides
 * something from a failure reads those fields, never the message text.
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

/* Sub-codes: what kind of failure, finer than the status. One list generates
 * the enum and the name table. */
#define LT_ERRCODE_MAP(XX)                                                      \
    XX(NONE,         "none")                                                    \
    XX(NOT_YET,      "not supported yet")      /* a feature not built yet */    \
    XX(NO_LAYOUT,    "layout does not exist")  /* a rule gave an impossible output layout */ \
    XX(WOULD_HANG,   "would hang")             /* per-rank collectives cannot all complete */ \
    XX(MEMORY_LIMIT, "memory limit")           /* refused up front: would not fit in memory */ \
    XX(MISALIGNED,   "operands misaligned")    /* from_local operands hold different indices on a rank */

typedef enum {
#define LT__XX(name, str) LT_ERR_##name,
    LT_ERRCODE_MAP(LT__XX)
#undef LT__XX
    LT_ERRCODE_COUNT
} lt_errcode;

/* Short name of a sub-code ("would hang"); never NULL. */
LT_API const char *lt_errcode_str(lt_errcode code);

#define LT_ERR_SUBJECT_MAX 32

/* The last failure on this thread, as a value. Every field is reset by each
 * new message; prepending context keeps code and at_pos. */
typedef struct lt_error {
    lt_status status;                  /* as returned (LT_OK when none) */
    lt_errcode code;                   /* LT_ERR_NONE unless the failure says more */
    int opens_with_while;              /* the message opens with its own "while ..." context */
    int at_pos;                        /* the message names a file position (file:line:col) */
    char subject[LT_ERR_SUBJECT_MAX];  /* the op, step or function the message opens
                                        * with ("from_local", "distribute"), or "" */
} lt_error;

/* This thread's last failure. Borrowed, like lt_errmsg(). */
LT_API const lt_error *lt_errinfo(void);

#endif
