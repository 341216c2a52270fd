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
const char *lt_status_str(lt_status st);

/* Sub-codes: what kind of failure, finer than the status. One list generates
 * the enum and the name table. */
#define LT_ERRCODE_MAP(XX)                                                      \
    XX(NONE,         "none")                                                    \
    XX(NOT_YET,      "not supported yet")      /* a feature not built yet */    \
    XX(NO_LAYOUT,    "layout does not exist")  /* a rule gave an impossible output layout */ \
    XX(WOULD_HANG,   "would hang")             /* per-rank collectives cannot all complete */ \
    XX(MEMORY_LIMIT, "memory limit")           /* refused up front: would not fit in memory */

typedef enum {
#define LT__XX(name, str) LT_ERR_##name,
    LT_ERRCODE_MAP(LT__XX)
#undef LT__XX
    LT_ERRCODE_COUNT
} lt_errcode;

/* Short name of a sub-code ("would hang"); never NULL. */
const char *lt_errcode_str(lt_errcode code);

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
const lt_error *lt_errinfo(void);

/* The message of the last failure on this thread ("" if none). Borrowed:
 * valid until the next lt__err* call on this thread. */
const char *lt_errmsg(void);

/* Sets this thread's message (printf format) and returns st, so callers write
 * `return lt__err(LT_INVALID, "shape: '%s' is not a number", s);`. */
lt_status lt__err(lt_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* lt__err with a sub-code. */
lt_status lt__err_code(lt_status st, lt_errcode code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* lt__err for a message that opens with the name `subject` (an op, a step,
 * a function): the message is subject followed by the formatted rest, e.g.
 * lt__err_in(LT_INVALID, "from_local", ": rank %d has no shard", r). */
lt_status lt__err_in(lt_status st, const char *subject, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prepends context to the current message: "ctx: old message". Keeps the
 * sub-code and at_pos; the message no longer opens with a subject or
 * "while". Returns st. */
lt_status lt__err_ctx(lt_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* lt__err_ctx whose context opens with `subject`: "subject<rest>: old". */
lt_status lt__err_ctx_in(lt_status st, const char *subject, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* lt__err_ctx with a "while ..." context: "while <ctx>: old message", and
 * the message is marked as carrying its own context (opens_with_while). */
lt_status lt__err_while(lt_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Marks the current message as naming a file position (at_pos). */
void lt__err_mark_pos(void);

/* Clears the message. */
void lt__err_clear(void);

/* Overflow-checked size arithmetic: return 0 and store the result, or return 1
 * (result untouched) when it does not fit or an operand is negative. */
int lt__mul_i64(int64_t a, int64_t b, int64_t *out);
int lt__add_i64(int64_t a, int64_t b, int64_t *out);

/* Checked element count of a shape (ndim may be 0: count 1). Sets the
 * message and returns LT_OVERFLOW when the product does not fit in int64 or
 * exceeds the byte budget for esize-byte elements; LT_INVALID for a
 * negative size. */
lt_status lt__numel_checked(int ndim, const int64_t *shape, size_t esize, int64_t *out);

/* Name tables (the X-macro lists): the index of s in names[n], or -1. */
int lt__name_find(const char *const *names, int n, const char *s);
/* "a, b, c" into buf (always NUL-terminated; cut when buf is full); returns buf. */
char *lt__name_join(const char *const *names, int n, char *buf, size_t cap);

/* Invariant check: never for user input (those get statuses). */
#define LT_ASSERT(cond)                                                          \
    do {                                                                         \
        if (!(cond)) lt__assert_fail(#cond, __FILE__, __LINE__);                 \
    } while (0)
void lt__assert_fail(const char *expr, const char *file, int line);

#define LT_TRY(expr)                                                             \
    do {                                                                         \
        lt_status lt__st_ = (expr);                                              \
        if (lt__st_ != LT_OK) return lt__st_;                                    \
    } while (0)

#endif
