/* kernels/status.h — status codes and the thread-local last error message.
 *
 * Every fallible function in localtensor returns an lt_status and, on failure,
 * leaves a message saying what was wrong and where in lt_errmsg(). The message
 * lives in thread-local storage (never a process global), so two threads that
 * each drive their own simulation do not clobber each other's errors.
 *
 * The last failure is kept as data (lt_errinfo()): the status, a sub-code
 * (lt_errcode: "not supported yet", "would hang", ...), the subject and the
 * problem, a file position, and the contexts around it; one formatter
 * (lt_error_format) makes the text lt_errmsg() returns. Code that decides
 * something from a failure reads those fields, never the message text.
 *
 * Exit-code convention used by the CLI: LT_MISMATCH (a check failed) -> 1,
 * every other non-OK status (bad input, unsupported, out of memory) -> 2.
 */
#ifndef LT_STATUS_H
#define LT_STATUS_H

#include <stdint.h>
#include <stddef.h>
#include "localtensor/kernels/export.h"

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
LT_API const char *lt_status_name(lt_status st);

/* The message of the last failure on this thread ("" if none). Borrowed:
 * valid until the next failing call on this thread. */
LT_API const char *lt_errmsg(void);

/* Sub-codes: what kind of failure, finer than the status. One list generates
 * the enum and the name table. */
#define LT_ERRCODE_MAP(XX)                                                                         \
    XX(NONE, "none")                                                                               \
    XX(NOT_YET, "not supported yet") /* a feature not built yet */                                 \
    XX(NO_LAYOUT, "layout does not exist") /* a rule gave an impossible output layout */           \
    XX(WOULD_HANG, "would hang") /* per-rank collectives cannot all complete */                    \
    XX(MEMORY_LIMIT, "memory limit") /* refused up front: would not fit in memory */               \
    XX(MISALIGNED, "operands misaligned") /* from_local operands hold different indices on a rank  \
                                           */

typedef enum {
#define LT__XX(name, str) LT_ERR_##name,
    LT_ERRCODE_MAP(LT__XX)
#undef LT__XX
    LT_ERRCODE_COUNT
} lt_errcode;

/* Short name of a sub-code ("would hang"); never NULL. */
LT_API const char *lt_errcode_name(lt_errcode code);

#define LT_ERR_SUBJECT_MAX 32
#define LT_ERR_TEXT_MAX 2048
#define LT_ERR_CONTEXT_MAX 4

/* One context around a failure: what was being done when it happened,
 * rendered "<subject><text>: " before what it surrounds, or "while
 * <text>: " when is_while (the context names the work that was running:
 * "while planning ..."). */
typedef struct lt_error_context {
    int is_while;
    char subject[LT_ERR_SUBJECT_MAX];  /* the op or step it opens with, or "" */
    char text[512];
} lt_error_context;

/* The last failure on this thread, as data: every part a field, and
 * lt_error_format the one place that spells them as text (lt_errmsg() is
 * its output). A new failure resets every field; a context added around
 * it (library code: lt__err_ctx, lt__err_while) keeps the others. */
typedef struct lt_error {
    lt_status status;                  /* as returned (LT_OK when none) */
    lt_errcode code;                   /* LT_ERR_NONE unless the failure says more */
    char subject[LT_ERR_SUBJECT_MAX];  /* the op, step or function the problem is
                                        * about ("from_local", "distribute"), or "" */
    char problem[LT_ERR_TEXT_MAX];     /* the problem itself, after its subject */
    struct {
        char file[256];
        int line, col;                 /* line 0: the failure names no position */
    } position;                        /* where in an input file (file:line:col) */
    int ncontext;                      /* contexts around it, innermost first */
    lt_error_context context[LT_ERR_CONTEXT_MAX];
} lt_error;

/* The text of e into buf[cap] (always NUL-terminated when cap > 0): its
 * contexts, outermost first, then "file:line:col: " when it has a position,
 * then subject and problem; a text longer than cap keeps its beginning and
 * its end around " ... ". Returns the length of the whole text. */
LT_API size_t lt_error_format(const lt_error *e, char *buf, size_t cap);

/* What e's text opens with: the subject of its outermost part ("" when that
 * part has none, is a "while" context or a file position); *is_while (may
 * be NULL): whether the outermost part is a "while" context. Borrowed from e. */
LT_API const char *lt_error_lead(const lt_error *e, int *is_while);

/* This thread's last failure. Borrowed, like lt_errmsg(). */
LT_API const lt_error *lt_errinfo(void);

#endif
