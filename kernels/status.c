/* kernels/status.c — status names, the thread-local last failure (message
 * and structured value), checked size arithmetic. */
#include "kernels/status.h"
#include "kernels/status_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LT__ERRMSG_MAX 2048

static _Thread_local char errbuf[LT__ERRMSG_MAX];
static _Thread_local lt_error errinfo;

static const char *const status_names[] = {
#define LT__XX(name, str) str,
    LT_STATUS_MAP(LT__XX)
#undef LT__XX
};

const char *lt_status_str(lt_status st) {
    if ((int)st < 0 || st >= LT_STATUS_COUNT) return "unknown status";
    return status_names[st];
}

static const char *const errcode_names[] = {
#define LT__XX(name, str) str,
    LT_ERRCODE_MAP(LT__XX)
#undef LT__XX
};

const char *lt_errcode_str(lt_errcode code) {
    if ((int)code < 0 || code >= LT_ERRCODE_COUNT) return "unknown sub-code";
    return errcode_names[code];
}

const char *lt_errmsg(void) { return errbuf; }

const lt_error *lt_errinfo(void) { return &errinfo; }

void lt__err_clear(void) {
    errbuf[0] = '\0';
    memset(&errinfo, 0, sizeof errinfo);
}

lt_status lt__err_restore(lt_status st, const char *msg, const lt_error *info) {
    snprintf(errbuf, sizeof errbuf, "%s", msg ? msg : "");
    if (info) errinfo = *info;
    else memset(&errinfo, 0, sizeof errinfo);
    errinfo.status = st;
    return st;
}

static void set_subject(const char *subject) {
    snprintf(errinfo.subject, sizeof errinfo.subject, "%s", subject ? subject : "");
}

/* A new message: subject (may be NULL) then fmt. Formats into a copy first:
 * callers may pass lt_errmsg() itself as an argument ("... (%s)",
 * lt_errmsg()), which vsnprintf must not read while it writes the same
 * buffer. */
static lt_status set_msg(lt_status st, lt_errcode code, const char *subject, const char *fmt, va_list ap) {
    char msg[LT__ERRMSG_MAX];
    int n = subject ? snprintf(msg, sizeof msg, "%s", subject) : 0;
    size_t used = n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
    vsnprintf(msg + used, sizeof msg - used, fmt, ap);
    memcpy(errbuf, msg, sizeof errbuf);
    memset(&errinfo, 0, sizeof errinfo);
    errinfo.status = st;
    errinfo.code = code;
    set_subject(subject);
    return st;
}

lt_status lt__err(lt_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_msg(st, LT_ERR_NONE, NULL, fmt, ap);
    va_end(ap);
    return st;
}

lt_status lt__err_code(lt_status st, lt_errcode code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_msg(st, code, NULL, fmt, ap);
    va_end(ap);
    return st;
}

lt_status lt__err_in(lt_status st, const char *subject, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_msg(st, LT_ERR_NONE, subject, fmt, ap);
    va_end(ap);
    return st;
}

void lt__err_mark_pos(void) { errinfo.at_pos = 1; }

/* Prepends lead (may be NULL) then fmt, then ": old message". Formats into
 * a copy, like set_msg. */
static lt_status prepend(lt_status st, const char *lead, const char *fmt, va_list ap) {
    char buf[LT__ERRMSG_MAX];
    int n = lead ? snprintf(buf, sizeof buf, "%s", lead) : 0;
    size_t used = n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    n = vsnprintf(buf + used, sizeof buf - used, fmt, ap);
    used += n < 0 ? 0 : (size_t)n;
    if (used >= sizeof buf) used = sizeof buf - 1;
    if (errbuf[0] && used + 2 < sizeof buf) {
        size_t room = sizeof buf - used - 3;
        size_t len = strlen(errbuf);
        if (len > room) len = room;
        buf[used] = ':';
        buf[used + 1] = ' ';
        memcpy(buf + used + 2, errbuf, len);
        buf[used + 2 + len] = '\0';
    }
    memcpy(errbuf, buf, sizeof errbuf);
    errinfo.status = st;
    errinfo.opens_with_while = 0;
    errinfo.subject[0] = '\0';
    return st;
}

lt_status lt__err_ctx(lt_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    prepend(st, NULL, fmt, ap);
    va_end(ap);
    return st;
}

lt_status lt__err_ctx_in(lt_status st, const char *subject, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    prepend(st, subject, fmt, ap);
    va_end(ap);
    set_subject(subject);
    return st;
}

lt_status lt__err_while(lt_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    prepend(st, "while ", fmt, ap);
    va_end(ap);
    errinfo.opens_with_while = 1;
    return st;
}

int lt__mul_i64(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0) return 1;
    if (a != 0 && b > INT64_MAX / a) return 1;
    *out = a * b;
    return 0;
}

int lt__add_i64(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0) return 1;
    if (a > INT64_MAX - b) return 1;
    *out = a + b;
    return 0;
}

int64_t lt__mul_sat(int64_t a, int64_t b) {
    int64_t r;
    return lt__mul_i64(a, b, &r) ? INT64_MAX : r;
}

int64_t lt__numel_sat(int ndim, const int64_t *shape) {
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) return 0;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n = lt__mul_sat(n, shape[i]);
    return n;
}

lt_status lt__numel_checked(int ndim, const int64_t *shape, size_t esize, int64_t *out) {
    int64_t n = 1;
    int zero = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return lt__err(LT_INVALID, "size %lld of dim %d is negative", (long long)shape[i], i);
        if (shape[i] == 0) zero = 1;
    }
    if (zero) { *out = 0; return LT_OK; }
    for (int i = 0; i < ndim; i++) {
        if (lt__mul_i64(n, shape[i], &n))
            return lt__err(LT_OVERFLOW, "element count overflows 64 bits at dim %d", i);
    }
    int64_t bytes;
    if (lt__mul_i64(n, (int64_t)esize, &bytes) || (uint64_t)bytes > (uint64_t)SIZE_MAX / 2)
        return lt__err(LT_OVERFLOW, "%lld elements of %zu bytes overflow the address space",
                       (long long)n, esize);
    *out = n;
    return LT_OK;
}

const char *lt__name_of(const char *const *names, int n, int v) {
    return v >= 0 && v < n && names[v] ? names[v] : "?";
}

int lt__name_find(const char *const *names, int n, const char *s) {
    for (int i = 0; i < n; i++)
        if (names[i] && strcmp(s, names[i]) == 0) return i;
    return -1;
}

char *lt__name_join(const char *const *names, int n, char *buf, size_t cap) {
    size_t used = 0;
    if (cap) buf[0] = '\0';
    for (int i = 0; i < n && used < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", names[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

char *lt__name_join_or(const char *const *names, int n, char *buf, size_t cap) {
    size_t used = 0;
    if (cap) buf[0] = '\0';
    for (int i = 0; i < n && used < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", names[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

void lt__assert_fail(const char *expr, const char *file, int line) {
    fprintf(stderr, "localtensor: internal invariant failed: %s (%s:%d)\n", expr, file, line);
    abort();
}

void lt__sb_printf(lt__sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->len < b->cap ? b->cap - b->len : 0;
    int w = vsnprintf(room ? b->buf + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (w > 0) b->len += (size_t)w;
}

size_t lt__sb_finish(lt__sbuf *b) {
    if (b->cap) b->buf[b->len < b->cap ? b->len : b->cap - 1] = '\0';
    return b->len;
}
