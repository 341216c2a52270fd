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

/* Prepends context to the current message: "ctx: old message". Returns st. */
lt_status lt__err_ctx(lt_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

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
