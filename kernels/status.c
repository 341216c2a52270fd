/* kernels/status.c — status names, the thread-local error message, checked
 * size arithmetic. */
#include "kernels/status.h"
#include "kernels/status_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LT__ERRMSG_MAX 2048

static _Thread_local char errbuf[LT__ERRMSG_MAX];

static const char *const status_names[] = {
#define LT__XX(name, str) str,
    LT_STATUS_MAP(LT__XX)
#undef LT__XX
};

const char *lt_status_str(lt_status st) {
    if ((int)st < 0 || st >= LT_STATUS_COUNT) return "unknown status";
    return status_names[st];
}

const char *lt_errmsg(void) { return errbuf; }

void lt__err_clear(void) { errbuf[0] = '\0'; }

/* Formats into a copy first: callers may pass lt_errmsg() itself as an
 * argument ("... (%s)", lt_errmsg()), which vsnprintf must not read while
 * it writes the same buffer. */
lt_status lt__err(lt_status st, const char *fmt, ...) {
    char msg[LT__ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(errbuf, msg, sizeof errbuf);
    return st;
}

lt_status lt__err_ctx(lt_status st, const char *fmt, ...) {
    char old[LT__ERRMSG_MAX];
    va_list ap;
    memcpy(old, errbuf, sizeof old);
    va_start(ap, fmt);
    int n = vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    size_t used = n < 0 ? 0 : (size_t)n;
    if (used >= sizeof errbuf) used = sizeof errbuf - 1;
    if (old[0] && used + 2 < sizeof errbuf) {
        size_t room = sizeof errbuf - used - 3;
        size_t len = strlen(old);
        if (len > room) len = room;
        errbuf[used] = ':';
        errbuf[used + 1] = ' ';
        memcpy(errbuf + used + 2, old, len);
        errbuf[used + 2 + len] = '\0';
    }
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
