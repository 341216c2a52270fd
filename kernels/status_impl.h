/* kernels/status_impl.h — how library code sets the error message, checks
 * size arithmetic and guards invariants (internal: not installed).
 *
 * kernels/status.h is what users see: the status codes and lt_errmsg(). This
 * header is what every module of the library (and the tools built on it)
 * uses to produce them, so that every message goes through one door.
 */
#ifndef LT_STATUS_IMPL_H
#define LT_STATUS_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "localtensor/kernels/status.h"

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

/* lt__err for a failure at a position of an input file: the text reads
 * "file:line:col: <fmt>" (lt_errinfo()->position). */
lt_status lt__err_at(lt_status st, const char *file, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Adds a context around the current failure: "ctx: old message". Keeps the
 * sub-code, the subject, the problem and the position. Returns st. */
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

/* lt__err_ctx with a "while ..." context: "while <ctx>: old message"
 * (is_while: the failure names the work that was running). */
lt_status lt__err_while(lt_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Messages keep their reason: one longer than the message buffer (2047
 * bytes) keeps its beginning and its end around " ... ", not its
 * beginning alone.
 *
 * Text a message echoes (a name, a path, a command-line argument) cannot
 * act on a terminal: control bytes (and DEL) print as \xHH (ESC as \x1b),
 * the C1 controls U+0080..U+009F as \xc2\xHH. lt__echo writes s so into
 * buf[n] (always NUL-terminated, cut at a whole escape when buf is full);
 * when s is longer than max bytes (max >= 8; 0: no limit) only its first
 * and last parts are kept, around "...", about max bytes before escaping,
 * so that what the message says after it stays in view. Returns buf. */
char *lt__echo(const char *s, size_t max, char *buf, size_t n);
/* fputs of s escaped as by lt__echo, nothing cut; tab and newline kept
 * when keep_nl (a whole message), escaped too when not (a name, a path).
 * EOF when a write failed, else 0. */
int lt__fputs_echo(const char *s, int keep_nl, FILE *f);

/* Clears the message. */
void lt__err_clear(void);

/* Sets this thread's message and lt_errinfo() to copies of msg and *info
 * (taken on another thread: how kernels/pool.c hands a worker's failure to
 * the caller). Returns st. */
lt_status lt__err_restore(lt_status st, const char *msg, const lt_error *info);

/* Overflow-checked size arithmetic: return 0 and store the result, or return 1
 * (result untouched) when it does not fit or an operand is negative. Inline
 * (the compiler's overflow builtins, no division): the planner calls them
 * in its innermost loops. */
static inline int lt__mul_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return 1;
    *out = r;
    return 0;
}
static inline int lt__add_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r)) return 1;
    *out = r;
    return 0;
}
/* a * b for sizes (a, b >= 0), INT64_MAX when it does not fit: a count past
 * 64 bits then fails the checked allocation it feeds, never wraps. */
static inline int64_t lt__mul_sat(int64_t a, int64_t b) {
    int64_t r;
    return lt__mul_i64(a, b, &r) ? INT64_MAX : r;
}
/* Elements of shape[ndim] (sizes >= 0): 0 when any size is 0, whatever the
 * others (a huge dim beside an empty one multiplies to 0, not past 64 bits),
 * else their product saturated at INT64_MAX. */
int64_t lt__numel_sat(int ndim, const int64_t *shape);

/* Checked element count of a shape (ndim may be 0: count 1). Sets the
 * message and returns LT_OVERFLOW when the product does not fit in int64 or
 * exceeds the byte budget for esize-byte elements; LT_INVALID for a
 * negative size. */
lt_status lt__numel_checked(int ndim, const int64_t *shape, size_t esize, int64_t *out);

/* Name tables. Every closed enum has one X-macro list in its header that
 * generates the enum; its .c file generates the name table from the same
 * list, and the name, parse and "expected ..." message all read that table
 * through these helpers, so none of them can drift from the enum. */
/* names[v], or "?" when v is outside [0, n). Never NULL. */
const char *lt__name_of(const char *const *names, int n, int v);
/* The index of s in names[n], or -1. */
int lt__name_find(const char *const *names, int n, const char *s);
/* "a, b, c" into buf (always NUL-terminated; cut when buf is full); returns buf. */
char *lt__name_join(const char *const *names, int n, char *buf, size_t cap);
/* "a, b or c" (the same, with "or" before the last name); returns buf. */
char *lt__name_join_or(const char *const *names, int n, char *buf, size_t cap);

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

/* Text built by appending formatted pieces into a caller's buffer (reports,
 * tables): `len` counts what the whole text needs, as snprintf does, so a
 * first pass with cap 0 sizes the buffer of a second one. */
typedef struct lt__sbuf {
    char *buf;            /* (cap) the caller's, may be NULL when cap is 0 */
    size_t cap, len;      /* len: what the full text needs so far */
} lt__sbuf;

void lt__sb_printf(lt__sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* NUL-terminates what fitted (when cap > 0); returns len. */
size_t lt__sb_finish(lt__sbuf *b);

#endif
