/* kernels/status.c — status names, the thread-local last failure (message
 * and structured value), checked size arithmetic, text echoed in messages. */
#include "localtensor/kernels/status.h"
#include "kernels/status_impl.h"

#include "kernels/alloc.h"

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

const char *lt_status_name(lt_status st) {
    if ((int)st < 0 || st >= LT_STATUS_COUNT) return "unknown status";
    return status_names[st];
}

static const char *const errcode_names[] = {
#define LT__XX(name, str) str,
    LT_ERRCODE_MAP(LT__XX)
#undef LT__XX
};

const char *lt_errcode_name(lt_errcode code) {
    if ((int)code < 0 || code >= LT_ERRCODE_COUNT) return "unknown sub-code";
    return errcode_names[code];
}

/* Start of the UTF-8 character at or before s[i] (never before s[0]). */
static size_t char_start(const char *s, size_t i) {
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    return i;
}

/* Copies text[len] into dst[cap]: whole when it fits, else its beginning
 * and its end around " ... ", so that a message that echoes a long name or
 * argument still ends with its reason. */
static void fit_msg(char *dst, size_t cap, const char *text, size_t len) {
    if (len < cap) {
        memcpy(dst, text, len + 1);
        return;
    }
    static const char gap[] = " ... ";
    size_t room = cap - sizeof gap;   /* the text's bytes kept, gap and NUL aside */
    size_t head = char_start(text, room / 2), tail = len - (room - head);
    while (tail < len && ((unsigned char)text[tail] & 0xC0) == 0x80) tail++;
    memcpy(dst, text, head);
    memcpy(dst + head, gap, sizeof gap - 1);
    memcpy(dst + head + sizeof gap - 1, text + tail, len - tail + 1);
}

const char *lt_errmsg(void) { return errbuf; }

const lt_error *lt_errinfo(void) { return &errinfo; }

/* Formats fmt into dst[cap] through fit_msg: a text longer than the stack
 * buffer is formatted again on the heap (when that fails, its end is lost,
 * as snprintf would lose it). */
static void vformat(char *dst, size_t cap, const char *fmt, va_list ap) {
    char small[LT__ERRMSG_MAX];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    char *big = n >= (int)sizeof small ? lt__malloc((size_t)n + 1) : NULL;
    if (n < 0) {
        dst[0] = '\0';
    } else if (big) {
        vsnprintf(big, (size_t)n + 1, fmt, again);
        fit_msg(dst, cap, big, (size_t)n);
        lt__free(big);
    } else {
        fit_msg(dst, cap, small, strlen(small));
    }
    va_end(again);
}

size_t lt_error_format(const lt_error *e, char *buf, size_t cap) {
    char text[LT__ERRMSG_MAX * 4];   /* every part at its cap fits */
    lt__sbuf b = {text, sizeof text, 0};
    for (int i = e->ncontext - 1; i >= 0; i--) {
        const lt_error_context *c = &e->context[i];
        lt__sb_printf(&b, "%s%s%s: ", c->is_while ? "while " : "", c->subject, c->text);
    }
    if (e->position.line > 0)
        lt__sb_printf(&b, "%s:%d:%d: ", e->position.file, e->position.line, e->position.col);
    lt__sb_printf(&b, "%s%s", e->subject, e->problem);
    size_t len = lt__sb_finish(&b);
    if (cap) fit_msg(buf, cap, text, len < sizeof text ? len : sizeof text - 1);
    return len;
}

static void render(void) { lt_error_format(&errinfo, errbuf, sizeof errbuf); }

void lt__err_clear(void) {
    errbuf[0] = '\0';
    memset(&errinfo, 0, sizeof errinfo);
}

lt_status lt__err_restore(lt_status st, const char *msg, const lt_error *info) {
    if (info) {
        errinfo = *info;
    } else {
        memset(&errinfo, 0, sizeof errinfo);
        fit_msg(errinfo.problem, sizeof errinfo.problem, msg ? msg : "", strlen(msg ? msg : ""));
    }
    errinfo.status = st;
    render();
    return st;
}

static void copy_subject(char *dst, const char *subject) {
    snprintf(dst, LT_ERR_SUBJECT_MAX, "%s", subject ? subject : "");
}

/* A new failure: subject (may be NULL) and the problem fmt; every other
 * part reset. Formats into a copy first: callers may pass lt_errmsg()
 * itself as an argument ("... (%s)", lt_errmsg()). */
static lt_status set_msg(lt_status st, lt_errcode code, const char *subject, const char *fmt,
                         va_list ap) {
    char problem[LT_ERR_TEXT_MAX];
    vformat(problem, sizeof problem, fmt, ap);
    memset(&errinfo, 0, sizeof errinfo);
    errinfo.status = st;
    errinfo.code = code;
    copy_subject(errinfo.subject, subject);
    memcpy(errinfo.problem, problem, sizeof problem);
    render();
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

lt_status lt__err_at(lt_status st, const char *file, int line, int col, const char *fmt, ...) {
    char name[sizeof errinfo.position.file];
    snprintf(name, sizeof name, "%s", file ? file : "");   /* file may be part of the old message */
    va_list ap;
    va_start(ap, fmt);
    set_msg(st, LT_ERR_NONE, NULL, fmt, ap);
    va_end(ap);
    memcpy(errinfo.position.file, name, sizeof name);
    errinfo.position.line = line;
    errinfo.position.col = col;
    render();
    return st;
}

/* Adds a context around the failure (is_while: "while <text>"; subject may
 * be NULL). When every slot is taken the outermost one absorbs the new
 * context, so the text stays whole. */
static lt_status push_ctx(lt_status st, int is_while, const char *subject, const char *fmt,
                          va_list ap) {
    lt_error_context c;
    memset(&c, 0, sizeof c);
    c.is_while = is_while;
    copy_subject(c.subject, subject);
    vformat(c.text, sizeof c.text, fmt, ap);
    if (errinfo.ncontext == LT_ERR_CONTEXT_MAX) {
        lt_error_context *o = &errinfo.context[LT_ERR_CONTEXT_MAX - 1];
        char merged[sizeof c.text * 2];
        int n = snprintf(merged, sizeof merged, "%s: %s%s%s", c.text, o->is_while ? "while " : "",
                         o->subject, o->text);
        fit_msg(c.text, sizeof c.text, merged, n < 0 ? 0 : strlen(merged));
        *o = c;
    } else {
        errinfo.context[errinfo.ncontext++] = c;
    }
    errinfo.status = st;
    render();
    return st;
}

lt_status lt__err_ctx(lt_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    push_ctx(st, 0, NULL, fmt, ap);
    va_end(ap);
    return st;
}

lt_status lt__err_ctx_in(lt_status st, const char *subject, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    push_ctx(st, 0, subject, fmt, ap);
    va_end(ap);
    return st;
}

lt_status lt__err_while(lt_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    push_ctx(st, 1, NULL, fmt, ap);
    va_end(ap);
    return st;
}

const char *lt_error_lead(const lt_error *e, int *is_while) {
    const lt_error_context *c = e->ncontext ? &e->context[e->ncontext - 1] : NULL;
    if (is_while) *is_while = c ? c->is_while : 0;
    if (c) return c->is_while ? "" : c->subject;
    return e->position.line > 0 ? "" : e->subject;
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
        if (shape[i] < 0)
            return lt__err(LT_INVALID, "size %lld of dim %d is negative", (long long)shape[i], i);
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
        int w = snprintf(buf + used, cap - used, "%s%s",
                         i == 0       ? ""
                         : i == n - 1 ? " or "
                                      : ", ",
                         names[i]);
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

/* One unit of s echoed: a control byte (C0, or DEL) as \xHH, a C1 control
 * (U+0080..U+009F, two bytes in UTF-8) as \xc2\xHH; tab and newline kept
 * when keep_nl; any other byte as it is. out gets the text (NUL-terminated);
 * returns the bytes of s consumed. */
static size_t echo_unit(const char *s, int keep_nl, char out[12]) {
    unsigned char c = (unsigned char)s[0], d = (unsigned char)s[1];
    if ((c < 0x20 && !(keep_nl && (c == '\n' || c == '\t'))) || c == 0x7F) {
        snprintf(out, 12, "\\x%02x", c);
        return 1;
    }
    if (c == 0xC2 && d >= 0x80 && d <= 0x9F) {
        snprintf(out, 12, "\\xc2\\x%02x", d);
        return 2;
    }
    out[0] = (char)c;
    out[1] = '\0';
    return 1;
}

/* Appends s[from, to) escaped to buf[n] at *used; stops before a unit that
 * does not fit. */
static void echo_range(const char *s, size_t from, size_t to, char *buf, size_t n, size_t *used) {
    char u[12];
    for (size_t i = from; i < to;) {
        i += echo_unit(s + i, 0, u);
        size_t k = strlen(u);
        if (*used + k >= n) break;
        memcpy(buf + *used, u, k);
        *used += k;
    }
    buf[*used] = '\0';
}

char *lt__echo(const char *s, size_t max, char *buf, size_t n) {
    if (!n) return buf;
    size_t len = strlen(s), head = len, tail = len, used = 0;
    if (max >= 8 && len > max) {
        head = char_start(s, max - max / 4 - 3);
        tail = len - max / 4;
        while (tail < len && ((unsigned char)s[tail] & 0xC0) == 0x80) tail++;
    }
    echo_range(s, 0, head, buf, n, &used);
    if (tail < len) {
        if (used + 3 < n) memcpy(buf + used, "...", 4), used += 3;
        echo_range(s, tail, len, buf, n, &used);
    }
    return buf;
}

int lt__fputs_echo(const char *s, int keep_nl, FILE *f) {
    char u[12];
    int rc = 0;
    for (size_t i = 0; s[i];) {
        i += echo_unit(s + i, keep_nl, u);
        if (fputs(u, f) == EOF) rc = EOF;
    }
    return rc;
}
