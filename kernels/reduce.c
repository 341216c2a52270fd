/* kernels/reduce.c — reductions over dims (sum, mean, max, min) and
 * softmax / log_softmax.
 *
 * A reduction permutes the kept dims to the front and the reduced dims to
 * the back, takes a contiguous copy only when that view is not already dense,
 * and reduces each row of R elements: floats accumulate in f64 and round
 * once, integers in int64 (wrapping). An empty row gives the op's identity,
 * so that a zero-size shard contributes nothing to a Partial reduction.
 */
#include "localtensor/kernels/math.h"
#include "kernels/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/tensor_impl.h"
#include "kernels/cuda/kern.h"
#include "kernels/math_impl.h"
#include "kernels/status_impl.h"

/* Reduces one dense row of r elements of dt starting at p. */
static double reduce_row_f(lt_reduce_op op, lt_dtype dt, const char *p, int64_t r) {
    double acc = op == LT_REDUCE_MAX ? -INFINITY : op == LT_REDUCE_MIN ? INFINITY : 0.0;
    if (dt == LT_F32 && (op == LT_REDUCE_SUM || op == LT_REDUCE_MEAN)) {
        const float *f = (const float *)(const void *)p; /* (r) */
        for (int64_t i = 0; i < r; i++) acc += f[i];
        return acc;
    }
    double buf[LT__CHUNK];
    int64_t es = (int64_t)lt_dtype_size(dt);
    for (int64_t j = 0; j < r; j += LT__CHUNK) {
        int64_t m = r - j < LT__CHUNK ? r - j : LT__CHUNK;
        lt__load_f64(dt, p + j * es, 1, m, buf);
        switch (op) {
        case LT_REDUCE_SUM:
        case LT_REDUCE_MEAN: for (int64_t i = 0; i < m; i++) acc += buf[i]; break;
        /* NaN propagates (torch.amax) */
        case LT_REDUCE_MAX:
            for (int64_t i = 0; i < m; i++)
                if (buf[i] > acc || buf[i] != buf[i]) acc = buf[i];
            break;
        case LT_REDUCE_MIN:
            for (int64_t i = 0; i < m; i++)
                if (buf[i] < acc || buf[i] != buf[i]) acc = buf[i];
            break;
        default: break;
        }
        if (acc != acc && op != LT_REDUCE_SUM && op != LT_REDUCE_MEAN) break;
    }
    return acc;
}

static int64_t reduce_row_i(lt_reduce_op op, lt_dtype dt, const char *p, int64_t r) {
    int64_t acc = op == LT_REDUCE_MAX ? INT64_MIN : op == LT_REDUCE_MIN ? INT64_MAX : 0;
    int64_t buf[LT__CHUNK];
    int64_t es = (int64_t)lt_dtype_size(dt);
    for (int64_t j = 0; j < r; j += LT__CHUNK) {
        int64_t m = r - j < LT__CHUNK ? r - j : LT__CHUNK;
        lt__load_i64(dt, p + j * es, 1, m, buf);
        switch (op) {
        case LT_REDUCE_SUM:
            for (int64_t i = 0; i < m; i++) acc = (int64_t)((uint64_t)acc + (uint64_t)buf[i]);
            break;
        case LT_REDUCE_MAX: for (int64_t i = 0; i < m; i++) if (buf[i] > acc) acc = buf[i]; break;
        case LT_REDUCE_MIN: for (int64_t i = 0; i < m; i++) if (buf[i] < acc) acc = buf[i]; break;
        default: break;
        }
    }
    return acc;
}

/* The reduced dims of x (red[ndim]: 1 when reduced; none listed: all),
 * each listed once and in range; a 0-d tensor's dim 0 or -1 is the whole
 * tensor (torch). */
static lt_status reduced_dims(const char *name, const lt_tensor *x, int ndims, const int *dims,
                              int *red) {
    if (ndims < 0 || ndims > (x->ndim > 0 ? x->ndim : 1) || (ndims > 0 && !dims))
        return lt__err(LT_INVALID, "%s: %d dims given for a %d-d tensor", name, ndims, x->ndim);
    if (x->ndim == 0 && ndims == 1) {
        if (dims[0] != 0 && dims[0] != -1)
            return lt__err(LT_INVALID,
                           "%s: dim %d is out of range for a 0-d tensor (only 0 and -1 are)", name,
                           dims[0]);
        ndims = 0;
    }
    for (int i = 0; i < ndims; i++) {
        int d;
        LT_TRY(lt__norm_dim(name, dims[i], x->ndim, &d));
        if (red[d]) return lt__err(LT_INVALID, "%s: dim %d is listed twice", name, dims[i]);
        red[d] = 1;
    }
    if (ndims == 0)
        for (int d = 0; d < x->ndim; d++) red[d] = 1;
    return LT_OK;
}

/* The rows to reduce: x permuted so that the kept dims come first (O
 * output elements) and the reduced ones last (R each), made contiguous
 * (*c: new), and the output (*o: new, oshape with size-1 dims kept when
 * keepdim). */
static lt_status reduce_rows(const lt_tensor *x, const int *red, int keepdim, lt_tensor **c,
                             lt_tensor **o, int64_t *O, int64_t *R) {
    int perm[LT_MAX_DIMS], np = 0, ond = 0;
    int64_t oshape[LT_MAX_DIMS];
    *O = 1, *R = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (red[d]) {
            if (keepdim) oshape[ond++] = 1;
            continue;
        }
        perm[np++] = d;
        oshape[ond++] = x->shape[d];
        *O = x->shape[d] ? lt__mul_sat(*O, x->shape[d]) : 0;
    }
    for (int d = 0; d < x->ndim; d++)
        if (red[d]) {
            perm[np++] = d;
            *R = x->shape[d] ? lt__mul_sat(*R, x->shape[d]) : 0;
        }
    lt_tensor *pv = NULL;
    lt_status st = lt_permute(x, perm, &pv);
    if (!st) st = lt_contiguous(pv, c);
    lt_tensor_free(pv);
    if (!st) st = lt__math_out(x, x->dtype, ond, oshape, o);
    return st;
}

/* The reduction on the host: every output element the op of its row of R
 * elements (mean: divided by div); off the host through host copies. */
static lt_status reduce_host(lt_reduce_op op, lt_tensor *o, const lt_tensor *c, int64_t O,
                             int64_t R, double div) {
    const lt_tensor *hts[2] = {o, c};
    lt__hostrun hr;
    LT_TRY(lt__host_begin(&hr, 2, hts));
    lt_dtype dt = o->dtype;
    const char *base = lt_data(hr.t[1]);
    int64_t es = (int64_t)lt_dtype_size(dt);
    char *po = lt_data(hr.t[0]);
    for (int64_t i = 0; i < O; i++) {
        const char *row = R > 0 ? base + i * R * es : base;
        if (lt_dtype_is_float(dt)) {
            double v = reduce_row_f(op, dt, row, R);
            if (op == LT_REDUCE_MEAN) v /= div;
            lt__store_f64(dt, po + i * es, 1, 1, &v);
        } else {
            int64_t v = reduce_row_i(op, dt, row, R);
            lt__store_i64(dt, po + i * es, 1, 1, &v);
        }
    }
    return lt__host_end(&hr, 1, LT_OK);
}

lt_status lt_reduce_ex(lt_reduce_op op, const lt_tensor *x, int ndims, const int *dims,
                       int keepdim, double divisor, lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "reduce: out is NULL");
    *out = NULL;
    if (!x) return lt__err(LT_INVALID, "reduce: x is NULL");
    if ((unsigned)op >= LT_REDUCE_COUNT)
        return lt__err(LT_INVALID, "reduce: unknown op %d", (int)op);
    const char *name = lt_reduce_name(op);
    lt_dtype dt = x->dtype;
    if (dt == LT_BOOL || (!lt_dtype_is_float(dt) && op == LT_REDUCE_MEAN))
        return lt__math_unsupported(name, dt);
    int red[LT_MAX_DIMS] = {0};
    LT_TRY(reduced_dims(name, x, ndims, dims, red));
    lt_tensor *c = NULL, *o = NULL;
    int64_t O, R;
    lt_status st = reduce_rows(x, red, keepdim, &c, &o, &O, &R);
    if (st) {
        lt_tensor_free(c);
        return st;
    }
    double div = divisor > 0 || divisor < 0 ? divisor : (double)R;
    lt__kargs ka; /* a backend's kernel: one thread per output element */
    memset(&ka, 0, sizeof ka);
    ka.kernel = LT__K_REDUCE;
    ka.op = (int)op;
    ka.n = O;
    ka.k = R;
    ka.s = div;
    ka.o[0] = (lt__kop){lt_data(o), (int)dt, {1}};
    ka.o[1] = (lt__kop){lt_data(c), (int)dt, {1}};
    st = lt__backend_of(c) == lt__backend_of(o) ? lt__klaunch_raw(lt__backend_of(c), &ka)
                                                : LT_UNSUPPORTED;
    if (st == LT_UNSUPPORTED)
        st = reduce_host(op, o, c, O, R, div); /* no kernel, or two backends */
    lt_tensor_free(c);
    if (st) {
        lt_tensor_free(o);
        return lt__err_ctx(st, "%s", name);
    }
    *out = o;
    return LT_OK;
}

lt_status lt_reduce(lt_reduce_op op, const lt_tensor *x, int ndims, const int *dims, int keepdim,
                    lt_tensor **out) {
    return lt_reduce_ex(op, x, ndims, dims, keepdim, 0.0, out);
}

/* Softmax (or log-softmax) of one row of n values in place, as torch:
 * the max subtracted first, NaN kept, a row of -inf all zeros. */
static void softmax_row(double *buf, int64_t n, int use_log) {
    double mx = -INFINITY;
    for (int64_t j = 0; j < n; j++)
        if (buf[j] > mx || buf[j] != buf[j]) mx = buf[j];
    if (mx == -INFINITY) mx = 0; /* all -inf: exp gives 0s, as torch */
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += exp(buf[j] - mx);
    if (use_log) {
        double ls = mx + log(s);
        for (int64_t j = 0; j < n; j++) buf[j] -= ls;
    } else {
        for (int64_t j = 0; j < n; j++) buf[j] = exp(buf[j] - mx) / s;
    }
}

/* The host loop over outer x inner rows of n values (stride inner) of c
 * into o, off the host through host copies. */
static lt_status softmax_host(lt_tensor *o, const lt_tensor *c, int64_t outer, int64_t n,
                              int64_t inner, int use_log) {
    double *buf = lt__malloc(sizeof(double) * (size_t)(n > 0 ? n : 1)); /* (n) */
    if (!buf) return lt__err(LT_NOMEM, "out of memory");
    const lt_tensor *hts[2] = {o, c};
    lt__hostrun hr;
    lt_status st = lt__host_begin(&hr, 2, hts);
    if (st) {
        lt__free(buf);
        return st;
    }
    lt_dtype dt = c->dtype;
    int64_t es = (int64_t)lt_dtype_size(dt);
    const char *src = lt_data(hr.t[1]);
    char *dst = lt_data(hr.t[0]);
    for (int64_t a = 0; a < outer && n > 0; a++)
        for (int64_t b = 0; b < inner; b++) {
            int64_t off = (a * n * inner + b) * es;
            lt__load_f64(dt, src + off, inner, n, buf);
            softmax_row(buf, n, use_log);
            lt__store_f64(dt, dst + off, inner, n, buf);
        }
    lt__free(buf);
    return lt__host_end(&hr, 1, LT_OK);
}

lt_status lt_softmax(const lt_tensor *x, int dim, int use_log, lt_tensor **out) {
    const char *name = use_log ? "log_softmax" : "softmax";
    if (!out) return lt__err(LT_INVALID, "%s: out is NULL", name);
    *out = NULL;
    if (!x) return lt__err(LT_INVALID, "%s: x is NULL", name);
    if (!lt_dtype_is_float(x->dtype)) return lt__math_unsupported(name, x->dtype);
    int d = -1;
    if (x->ndim == 0 && dim != 0 && dim != -1)
        return lt__err(LT_INVALID, "%s: dim %d of a 0-d tensor", name, dim);
    if (x->ndim > 0) LT_TRY(lt__norm_dim(name, dim, x->ndim, &d));
    int64_t outer = 1, n = 1, inner = 1;
    for (int i = 0; i < x->ndim; i++) {
        if (i < d) outer = x->shape[i] ? lt__mul_sat(outer, x->shape[i]) : 0;
        else if (i == d) n = x->shape[i];
        else inner = x->shape[i] ? lt__mul_sat(inner, x->shape[i]) : 0;
    }
    lt_tensor *c = NULL, *o = NULL;
    LT_TRY(lt_contiguous(x, &c));
    lt_status st = lt__math_out(x, x->dtype, x->ndim, x->shape, &o);
    if (st) {
        lt_tensor_free(c);
        return st;
    }
    lt__kargs ka; /* a backend's kernel: one thread per row */
    memset(&ka, 0, sizeof ka);
    ka.kernel = LT__K_SOFTMAX;
    ka.rev = use_log;
    ka.n = n > 0 ? outer * inner : 0;
    ka.m = n;
    ka.k = inner;
    ka.o[0] = (lt__kop){lt_data(o), (int)x->dtype, {1}};
    ka.o[1] = (lt__kop){lt_data(c), (int)x->dtype, {1}};
    st = lt__backend_of(c) == lt__backend_of(o) ? lt__klaunch_raw(lt__backend_of(c), &ka)
                                                : LT_UNSUPPORTED;
    if (st == LT_UNSUPPORTED)
        st = softmax_host(o, c, outer, n, inner, use_log); /* no kernel, or two backends */
    lt_tensor_free(c);
    if (st) {
        lt_tensor_free(o);
        return lt__err_ctx(st, "%s", name);
    }
    *out = o;
    return LT_OK;
}
