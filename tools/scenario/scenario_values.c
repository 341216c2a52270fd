/* tools/scenario/scenario_values.c — the numbers a scenario writes: nested lists read
 * into a flat row-major array with their shape, and the check that every
 * value is exactly what a tensor of the chosen dtype will hold (an i32 tensor
 * must not silently clamp 3000000000, an i64 one must not round a value past
 * 2^53, f16 must not turn 70000 into inf).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/scenario/scenario_impl.h"
#include "kernels/status_impl.h"

/* Largest finite value of a float dtype; 0 for the others. */
static double float_max(lt_dtype dt) {
    switch (dt) {
    case LT_F16: return 65504.0;
    case LT_BF16: return 3.3895313892515355e38;
    case LT_F32: return 3.4028234663852886e38;
    default: return 0;
    }
}

/* 1 when s is an optional sign and decimal digits. */
static int integer_text(const char *s) {
    if (*s == '+' || *s == '-') s++;
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

static lt_status value_fits(const sc_node *n, lt_dtype dt, const char *what) {
    double v;
    LT_TRY(lt__sc_f64(n, what, &v));
    const char *name = lt_dtype_name(dt);
    switch (dt) {
    case LT_I32:
    case LT_I64: {
        /* i64 values travel through a double: past 2^53 they stop being exact */
        double lo = dt == LT_I32 ? -2147483648.0 : -9007199254740992.0;
        double hi = dt == LT_I32 ? 2147483647.0 : 9007199254740992.0;
        if (n->kind == SC_SCALAR &&
            integer_text(n->str)) { /* judge the digits, not their rounded double */
            errno = 0;
            long long iv = strtoll(n->str, NULL, 10);
            if (errno == ERANGE || (double)iv < lo || (double)iv > hi || iv > 9007199254740992LL ||
                iv < -9007199254740992LL)
                v = iv < 0 ? -INFINITY : INFINITY;
        }
        if (isnan(v) || (isfinite(v) && v != floor(v)))
            return lt__sc_err(n, LT_INVALID, "%s: %s is not an integer, but the tensor is %s", what,
                              n->str, name);
        if (v < lo || v > hi)
            return lt__sc_err(n, LT_OVERFLOW, "%s: %s is out of range for %s (%.0f..%.0f%s)", what,
                              n->str, name, lo, hi,
                              dt == LT_I64 ? ": scenario values are exact up to 2^53" : "");
        return LT_OK;
    }
    case LT_BOOL:
        if (v != 0 && v != 1)
            return lt__sc_err(n, LT_INVALID, "%s: %s is not a bool value (0, 1, true or false)",
                              what, n->str);
        return LT_OK;
    default:
        if (float_max(dt) > 0 && isfinite(v) && fabs(v) > float_max(dt))
            return lt__sc_err(n, LT_OVERFLOW,
                              "%s: %s is out of range for %s (largest finite value %g)", what,
                              n->str, name, float_max(dt));
        return LT_OK;
    }
}

lt_status lt__sc_values_fit(const sc_node *n, lt_dtype dt, const char *what) {
    if (dt == LT_F64) return LT_OK;
    /* the literal was checked (depth <= LT_MAX_DIMS, rectangular): walk it */
    const sc_node *lists[LT_MAX_DIMS + 1];
    int pos[LT_MAX_DIMS + 1], d = 0;
    if (n->kind != SC_SEQ) return value_fits(n, dt, what);
    lists[0] = n;
    pos[0] = 0;
    while (d >= 0) {
        if (pos[d] == lists[d]->n) {
            if (--d >= 0) pos[d]++;
            continue;
        }
        const sc_node *it = lists[d]->kids[pos[d]];
        if (it->kind == SC_SEQ && d < LT_MAX_DIMS) {
            lists[++d] = it;
            pos[d] = 0;
            continue;
        }
        LT_TRY(value_fits(it, dt, what));
        pos[d]++;
    }
    return LT_OK;
}

/* Shape of nested lists along the first items; then a walk that checks every
 * list against it. Iterative over the flat order, depth <= LT_MAX_DIMS. */
lt_status lt__sc_literal(sc_arena *a, const sc_node *n, const char *what, sc_literal *out) {
    memset(out, 0, sizeof *out);
    out->at = n;
    const sc_node *p = n;
    int nd = 0;
    while (p && p->kind == SC_SEQ) {
        if (nd == LT_MAX_DIMS)
            return lt__sc_err(p, LT_INVALID, "%s: lists nested deeper than %d", what, LT_MAX_DIMS);
        out->shape[nd++] = p->n;
        p = p->n ? p->kids[0] : NULL;
    }
    if (p && p->kind == SC_MAP)
        return lt__sc_err(p, LT_INVALID, "%s: expected numbers, got a mapping", what);
    out->ndim = nd;
    int64_t total;
    lt_status st = lt__numel_checked(nd, out->shape, 8, &total);
    if (st) return lt__sc_err_at(n, st);
    if (total > LT_SC_MAX_ELEMS)
        return lt__sc_err(n, LT_OVERFLOW, "%s: %lld values; the limit is %d", what,
                          (long long)total, LT_SC_MAX_ELEMS);
    out->n = total;
    out->v = lt__sc_alloc(a, sizeof(double) * (size_t)(total ? total : 1));
    if (!out->v) return LT_NOMEM;
    /* walk with an explicit index stack */
    const sc_node *lists[LT_MAX_DIMS + 1];
    int pos[LT_MAX_DIMS + 1];
    int64_t k = 0;
    if (nd == 0) return lt__sc_f64(n, what, &out->v[0]);
    int d = 0;
    lists[0] = n;
    pos[0] = 0;
    while (d >= 0) {
        const sc_node *l = lists[d];
        if (pos[d] == l->n) {
            d--;
            if (d >= 0) pos[d]++;
            continue;
        }
        const sc_node *it = l->kids[pos[d]];
        if (d + 1 < nd) {
            if (it->kind != SC_SEQ || it->n != out->shape[d + 1]) {
                char got[64];
                if (it->kind == SC_SEQ) snprintf(got, sizeof got, "a list of %d", it->n);
                else snprintf(got, sizeof got, "%s", lt__sc_kind_name(it));
                return lt__sc_err(it, LT_INVALID,
                                  "%s: ragged nesting: expected a list of %lld, got %s", what,
                                  (long long)out->shape[d + 1], got);
            }
            lists[++d] = it;
            pos[d] = 0;
            continue;
        }
        if (it->kind != SC_SCALAR)
            return lt__sc_err(it, LT_INVALID, "%s: ragged nesting: expected a number, got %s", what,
                              lt__sc_kind_name(it));
        LT_TRY(lt__sc_f64(it, what, &out->v[k]));
        k++;
        pos[d]++;
    }
    return LT_OK;
}

