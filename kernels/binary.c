/* kernels/binary.c — elementwise binary ops with broadcasting, and their
 * scalar forms.
 *
 * Broadcasting never copies: each operand gets a stack header with the output
 * shape and stride 0 on every broadcast dim, and the row walk of
 * kernels/tensor_impl.h merges dims across all three operands. Integer
 * add/sub/mul wrap (two's complement), as torch's do.
 */
#include "localtensor/kernels/math.h"

#include <math.h>
#include <string.h>

#include "kernels/tensor_impl.h"
#include "kernels/cuda/kern.h"
#include "kernels/math_impl.h"
#include "kernels/status_impl.h"

lt_status lt_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                              int64_t *out) {
    int n = na > nb ? na : nb;
    int64_t res[LT_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int ia = na - n + i, ib = nb - n + i;
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            char s1[160], s2[160];
            return lt__err(LT_SHAPE, "shapes %s and %s do not broadcast (dim %d: %lld vs %lld)",
                           lt_shape_format(na, a, s1, sizeof s1),
                           lt_shape_format(nb, b, s2, sizeof s2), i - n, (long long)sa,
                           (long long)sb);
        }
        res[i] = sa == 1 ? sb : sa;
    }
    *nout = n;
    memcpy(out, res, sizeof(int64_t) * (size_t)n);
    return LT_OK;
}

/* A header over t's memory with shape (n, shape) and stride 0 on broadcast
 * dims. Borrowed storage: never freed. */
static lt_tensor expand_view(const lt_tensor *t, int n, const int64_t *shape) {
    lt_tensor v = *t;
    v.ndim = n;
    for (int i = 0; i < n; i++) {
        int it = t->ndim - n + i;
        v.shape[i] = shape[i];
        v.strides[i] = (it >= 0 && t->shape[it] == shape[i]) ? t->strides[it] : 0;
    }
    return v;
}

/* a[i] = a[i] op b[i] in each domain. The float loops are one template,
 * instantiated for f32 and f64 (NaN propagates through maximum/minimum). */
#define LT__BIN_FLOAT(name, T)                                                                     \
    static void name(lt_binary_op op, T *a, const T *b, int64_t n) {                               \
        switch (op) {                                                                              \
        case LT_BINARY_ADD:                                                                        \
            for (int64_t i = 0; i < n; i++) a[i] += b[i];                                          \
            break;                                                                                 \
        case LT_BINARY_SUB:                                                                        \
            for (int64_t i = 0; i < n; i++) a[i] -= b[i];                                          \
            break;                                                                                 \
        case LT_BINARY_MUL:                                                                        \
            for (int64_t i = 0; i < n; i++) a[i] *= b[i];                                          \
            break;                                                                                 \
        case LT_BINARY_DIV:                                                                        \
            for (int64_t i = 0; i < n; i++) a[i] /= b[i];                                          \
            break;                                                                                 \
        case LT_BINARY_MAXIMUM:                                                                    \
            for (int64_t i = 0; i < n; i++) a[i] = (a[i] > b[i] || a[i] != a[i]) ? a[i] : b[i];    \
            break;                                                                                 \
        case LT_BINARY_MINIMUM:                                                                    \
            for (int64_t i = 0; i < n; i++) a[i] = (a[i] < b[i] || a[i] != a[i]) ? a[i] : b[i];    \
            break;                                                                                 \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
    }
LT__BIN_FLOAT(bin_f32, float)
LT__BIN_FLOAT(bin_f64, double)
#undef LT__BIN_FLOAT

static void bin_i64(lt_binary_op op, int64_t *a, const int64_t *b, int64_t n) {
    switch (op) {
    case LT_BINARY_ADD:
        for (int64_t i = 0; i < n; i++) a[i] = (int64_t)((uint64_t)a[i] + (uint64_t)b[i]);
        break;
    case LT_BINARY_SUB:
        for (int64_t i = 0; i < n; i++) a[i] = (int64_t)((uint64_t)a[i] - (uint64_t)b[i]);
        break;
    case LT_BINARY_MUL:
        for (int64_t i = 0; i < n; i++) a[i] = (int64_t)((uint64_t)a[i] * (uint64_t)b[i]);
        break;
    case LT_BINARY_MAXIMUM: for (int64_t i = 0; i < n; i++) if (b[i] > a[i]) a[i] = b[i]; break;
    case LT_BINARY_MINIMUM: for (int64_t i = 0; i < n; i++) if (b[i] < a[i]) a[i] = b[i]; break;
    default: break;
    }
}

static lt_status check_op(lt_binary_op op, lt_dtype dt) {
    if ((unsigned)op >= LT_BINARY_COUNT)
        return lt__err(LT_INVALID, "binary: unknown op %d", (int)op);
    if (dt == LT_BOOL || (!lt_dtype_is_float(dt) && op == LT_BINARY_DIV))
        return lt__math_unsupported(lt_binary_name(op), dt);
    return LT_OK;
}

typedef union {
    float f[LT__CHUNK];
    double d[LT__CHUNK];
    int64_t i[LT__CHUNK];
} chunk_buf;

/* Loads m elements of a row into the domain buffer of dt. */
static void load_dom(lt_dtype dt, const char *p, int64_t step, int64_t m, chunk_buf *b) {
    if (dt == LT_F64) lt__load_f64(dt, p, step, m, b->d);
    else if (lt_dtype_is_float(dt)) lt__load_f32(dt, p, step, m, b->f);
    else lt__load_i64(dt, p, step, m, b->i);
}

static void store_dom(lt_dtype dt, char *p, int64_t step, int64_t m, const chunk_buf *b) {
    if (dt == LT_F64) lt__store_f64(dt, p, step, m, b->d);
    else if (lt_dtype_is_float(dt)) lt__store_f32(dt, p, step, m, b->f);
    else lt__store_i64(dt, p, step, m, b->i);
}

static void compute_dom(lt_binary_op op, lt_dtype dt, chunk_buf *a, const chunk_buf *b, int64_t m) {
    if (dt == LT_F64) bin_f64(op, a->d, b->d, m);
    else if (lt_dtype_is_float(dt)) bin_f32(op, a->f, b->f, m);
    else bin_i64(op, a->i, b->i, m);
}

/* Dense f32 rows: no buffers. */
static int fast_f32(lt_binary_op op, char *o, const char *a, const char *b, const int64_t *step,
                    int64_t n) {
    if (step[0] != 1 || step[1] != 1 || (step[2] != 1 && step[2] != 0)) return 0;
    float *po = (float *)(void *)o;              /* (n) */
    const float *pa = (const float *)(const void *)a; /* (n) */
    const float *pb = (const float *)(const void *)b; /* (n) or (1) when step[2] == 0 */
    if (step[2] == 1) {
        switch (op) {
        case LT_BINARY_ADD: for (int64_t i = 0; i < n; i++) po[i] = pa[i] + pb[i]; return 1;
        case LT_BINARY_SUB: for (int64_t i = 0; i < n; i++) po[i] = pa[i] - pb[i]; return 1;
        case LT_BINARY_MUL: for (int64_t i = 0; i < n; i++) po[i] = pa[i] * pb[i]; return 1;
        case LT_BINARY_DIV: for (int64_t i = 0; i < n; i++) po[i] = pa[i] / pb[i]; return 1;
        default: return 0;
        }
    }
    float s = pb[0];
    switch (op) {
    case LT_BINARY_ADD: for (int64_t i = 0; i < n; i++) po[i] = pa[i] + s; return 1;
    case LT_BINARY_SUB: for (int64_t i = 0; i < n; i++) po[i] = pa[i] - s; return 1;
    case LT_BINARY_MUL: for (int64_t i = 0; i < n; i++) po[i] = pa[i] * s; return 1;
    case LT_BINARY_DIV: for (int64_t i = 0; i < n; i++) po[i] = pa[i] / s; return 1;
    default: return 0;
    }
}

/* After a backend ran the kernel: hands o out, or frees it on failure. */
static lt_status kernel_done(lt_status st, lt_binary_op op, lt_tensor *o, lt_tensor **out) {
    if (st != LT_OK) {
        lt_tensor_free(o);
        return lt__err_ctx(st, "%s", lt_binary_name(op));
    }
    *out = o;
    return LT_OK;
}

lt_status lt_binary(lt_binary_op op, const lt_tensor *a, const lt_tensor *b, lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "binary: out is NULL");
    *out = NULL;
    if (!a || !b) return lt__err(LT_INVALID, "binary: an operand is NULL");
    if (a->dtype != b->dtype)
        return lt__err(LT_DTYPE, "%s: operands have dtypes %s and %s", lt_binary_name(op),
                       lt_dtype_name(a->dtype), lt_dtype_name(b->dtype));
    lt_dtype dt = a->dtype;
    LT_TRY(check_op(op, dt));
    int n;
    int64_t shape[LT_MAX_DIMS];
    lt_status st = lt_broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &n, shape);
    if (st) return lt__err_ctx(st, "%s", lt_binary_name(op));
    lt_tensor *o;
    LT_TRY(lt__math_out(a, dt, n, shape, &o));
    lt_tensor va = expand_view(a, n, shape), vb = expand_view(b, n, shape);
    const lt_tensor *ops[3] = {o, &va, &vb};
    lt_status kst = lt__klaunch(LT__K_BINARY, (int)op, 0, 0, 3, ops); /* a backend's kernel */
    if (kst != LT_UNSUPPORTED) return kernel_done(kst, op, o, out);
    lt__hostrun hr; /* off the host (no kernel, two backends): through host copies */
    lt_status hst = lt__host_begin(&hr, 3, ops);
    if (hst != LT_OK) return kernel_done(hst, op, o, out);
    lt__walk w;
    lt__walk_init(&w, 3, hr.t);
    char *p[3];
    int64_t es = (int64_t)lt_dtype_size(dt);
    chunk_buf ba, bb;
    while (lt__walk_next(&w, p)) {
        if (dt == LT_F32 && fast_f32(op, p[0], p[1], p[2], w.step, w.n)) continue;
        for (int64_t j = 0; j < w.n; j += LT__CHUNK) {
            int64_t m = w.n - j < LT__CHUNK ? w.n - j : LT__CHUNK;
            load_dom(dt, p[1] + j * w.step[1] * es, w.step[1], m, &ba);
            load_dom(dt, p[2] + j * w.step[2] * es, w.step[2], m, &bb);
            compute_dom(op, dt, &ba, &bb, m);
            store_dom(dt, p[0] + j * w.step[0] * es, w.step[0], m, &ba);
        }
    }
    return kernel_done(lt__host_end(&hr, 1, LT_OK), op, o, out);
}

static void fill_scalar(lt_dtype dt, double s, int64_t m, chunk_buf *b) {
    if (dt == LT_F64) for (int64_t i = 0; i < m; i++) b->d[i] = s;
    else if (lt_dtype_is_float(dt)) for (int64_t i = 0; i < m; i++) b->f[i] = (float)s;
    else for (int64_t i = 0; i < m; i++) b->i[i] = (int64_t)s;
}

lt_status lt_binary_scalar(lt_binary_op op, const lt_tensor *a, double s, int reverse,
                           lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "binary_scalar: out is NULL");
    *out = NULL;
    if (!a) return lt__err(LT_INVALID, "binary_scalar: a is NULL");
    lt_dtype dt = a->dtype;
    LT_TRY(check_op(op, dt));
    if (!lt_dtype_is_float(dt) && (s != floor(s) || fabs(s) > 9.2e18))
        return lt__err(LT_INVALID, "%s: scalar %g is not an integer but the tensor is %s",
                       lt_binary_name(op), s, lt_dtype_name(dt));
    lt_tensor *o;
    LT_TRY(lt__math_out(a, dt, a->ndim, a->shape, &o));
    const lt_tensor *ops[2] = {o, a};
    lt_status kst = lt__klaunch(LT__K_SCALAR, (int)op, s, reverse, 2, ops); /* a backend's kernel */
    if (kst != LT_UNSUPPORTED) return kernel_done(kst, op, o, out);
    lt__hostrun hr; /* off the host (no kernel, two backends): through host copies */
    lt_status hst = lt__host_begin(&hr, 2, ops);
    if (hst != LT_OK) return kernel_done(hst, op, o, out);
    lt__walk w;
    lt__walk_init(&w, 2, hr.t);
    char *p[2];
    int64_t es = (int64_t)lt_dtype_size(dt);
    chunk_buf bt, bs;
    while (lt__walk_next(&w, p)) {
        for (int64_t j = 0; j < w.n; j += LT__CHUNK) {
            int64_t m = w.n - j < LT__CHUNK ? w.n - j : LT__CHUNK;
            if (reverse) {
                fill_scalar(dt, s, m, &bs);
                load_dom(dt, p[1] + j * w.step[1] * es, w.step[1], m, &bt);
                compute_dom(op, dt, &bs, &bt, m);
                store_dom(dt, p[0] + j * w.step[0] * es, w.step[0], m, &bs);
            } else {
                fill_scalar(dt, s, m, &bs);
                load_dom(dt, p[1] + j * w.step[1] * es, w.step[1], m, &bt);
                compute_dom(op, dt, &bt, &bs, m);
                store_dom(dt, p[0] + j * w.step[0] * es, w.step[0], m, &bt);
            }
        }
    }
    return kernel_done(lt__host_end(&hr, 1, LT_OK), op, o, out);
}
