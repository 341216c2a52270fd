/* kernels/unary.c — elementwise unary ops, op names, and the typed row
 * helpers shared by the math kernels (binary.c, reduce.c, matmul.c).
 *
 * Every kernel walks its operands as rows (kernels/tensor_impl.h) and runs a
 * loop over a chunk of each row in one of three compute domains: f32 (f32,
 * bf16, f16: rounded once on store), f64, or int64 (i32, i64). The switch on
 * the op happens once per chunk, never per element.
 */
#include "localtensor/kernels/math.h"

#include <math.h>
#include <string.h>

#include "kernels/tensor_impl.h"
#include "kernels/cuda/kern.h"
#include "kernels/math_impl.h"
#include "kernels/status_impl.h"

/* ---- names ------------------------------------------------------------------------ */

static const char *const unary_names[] = {
#define LT__XX(e, s) s,
    LT_UNARY_MAP(LT__XX)
#undef LT__XX
};
static const char *const binary_names[] = {
#define LT__XX(e, s) s,
    LT_BINARY_MAP(LT__XX)
#undef LT__XX
};
static const char *const reduce_names[] = {
#define LT__XX(e, s) s,
    LT_REDUCE_MAP(LT__XX)
#undef LT__XX
};

const char *lt_unary_name(lt_unary_op op) {
    return lt__name_of(unary_names, LT_UNARY_COUNT, (int)op);
}
const char *lt_binary_name(lt_binary_op op) {
    return lt__name_of(binary_names, LT_BINARY_COUNT, (int)op);
}
const char *lt_reduce_name(lt_reduce_op op) {
    return lt__name_of(reduce_names, LT_REDUCE_COUNT, (int)op);
}

/* ---- shared helpers ---------------------------------------------------------------- */

lt_status lt__norm_dim(const char *fn, int dim, int ndim, int *out) {
    int d = dim < 0 ? dim + ndim : dim;
    if (d < 0 || d >= ndim)
        return lt__err(LT_INVALID, "%s: dim %d is out of range for a %d-d tensor", fn, dim, ndim);
    *out = d;
    return LT_OK;
}

lt_status lt__math_out(const lt_tensor *like, lt_dtype dt, int ndim, const int64_t *shape,
                       lt_tensor **out) {
    const lt_backend *b = lt__backend_of(like);
    if (b == lt_backend_default()) return lt_tensor_empty(dt, ndim, shape, out);
    return lt_tensor_new_on(b, dt, ndim, shape, out);
}

lt_status lt__math_unsupported(const char *op, lt_dtype dt) {
    return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET, "not supported yet: %s of %s tensors", op,
                        lt_dtype_name(dt));
}

void lt__load_f32(lt_dtype dt, const char *p, int64_t step, int64_t n, float *out) {
    int64_t bs = step * (int64_t)lt_dtype_size(dt);
    uint16_t h;
    switch (dt) {
    case LT_F32:
        if (step == 1) memcpy(out, p, (size_t)n * 4);
        else for (int64_t i = 0; i < n; i++) memcpy(&out[i], p + i * bs, 4);
        return;
    case LT_BF16:
        for (int64_t i = 0; i < n; i++) { memcpy(&h, p + i * bs, 2); out[i] = lt_bf16_to_f32(h); }
        return;
    case LT_F16:
        for (int64_t i = 0; i < n; i++) { memcpy(&h, p + i * bs, 2); out[i] = lt_f16_to_f32(h); }
        return;
    default:
        for (int64_t i = 0; i < n; i++) out[i] = (float)lt_dtype_load(dt, p + i * bs);
        return;
    }
}

void lt__store_f32(lt_dtype dt, char *p, int64_t step, int64_t n, const float *in) {
    int64_t bs = step * (int64_t)lt_dtype_size(dt);
    uint16_t h;
    switch (dt) {
    case LT_F32:
        if (step == 1) memcpy(p, in, (size_t)n * 4);
        else for (int64_t i = 0; i < n; i++) memcpy(p + i * bs, &in[i], 4);
        return;
    case LT_BF16:
        for (int64_t i = 0; i < n; i++) { h = lt_f32_to_bf16(in[i]); memcpy(p + i * bs, &h, 2); }
        return;
    case LT_F16:
        for (int64_t i = 0; i < n; i++) { h = lt_f32_to_f16(in[i]); memcpy(p + i * bs, &h, 2); }
        return;
    default:
        for (int64_t i = 0; i < n; i++) lt_dtype_store(dt, p + i * bs, in[i]);
        return;
    }
}

void lt__load_i64(lt_dtype dt, const char *p, int64_t step, int64_t n, int64_t *out) {
    int64_t bs = step * (int64_t)lt_dtype_size(dt);
    if (dt == LT_I64) {
        for (int64_t i = 0; i < n; i++) memcpy(&out[i], p + i * bs, 8);
    } else if (dt == LT_I32) {
        for (int64_t i = 0; i < n; i++) { int32_t v; memcpy(&v, p + i * bs, 4); out[i] = v; }
    } else {
        for (int64_t i = 0; i < n; i++) out[i] = (int64_t)lt_dtype_load(dt, p + i * bs);
    }
}

void lt__store_i64(lt_dtype dt, char *p, int64_t step, int64_t n, const int64_t *in) {
    int64_t bs = step * (int64_t)lt_dtype_size(dt);
    if (dt == LT_I64) {
        for (int64_t i = 0; i < n; i++) memcpy(p + i * bs, &in[i], 8);
    } else if (dt == LT_I32) {
        for (int64_t i = 0; i < n; i++) {
            int32_t v = (int32_t)(uint32_t)(uint64_t)in[i]; /* wraps */
            memcpy(p + i * bs, &v, 4);
        }
    } else {
        for (int64_t i = 0; i < n; i++) lt_dtype_store(dt, p + i * bs, (double)in[i]);
    }
}

/* ---- unary ---------------------------------------------------------------------------- */

static int unary_int_ok(lt_unary_op op) {
    return op == LT_UNARY_NEG || op == LT_UNARY_ABS || op == LT_UNARY_RELU;
}

static void unary_f32(lt_unary_op op, float *v, int64_t n) {
    switch (op) {
    case LT_UNARY_NEG: for (int64_t i = 0; i < n; i++) v[i] = -v[i]; break;
    case LT_UNARY_ABS: for (int64_t i = 0; i < n; i++) v[i] = fabsf(v[i]); break;
    case LT_UNARY_EXP: for (int64_t i = 0; i < n; i++) v[i] = expf(v[i]); break;
    case LT_UNARY_LOG: for (int64_t i = 0; i < n; i++) v[i] = logf(v[i]); break;
    case LT_UNARY_SQRT: for (int64_t i = 0; i < n; i++) v[i] = sqrtf(v[i]); break;
    case LT_UNARY_TANH: for (int64_t i = 0; i < n; i++) v[i] = tanhf(v[i]); break;
    /* NaN stays NaN (torch.relu) */
    case LT_UNARY_RELU: for (int64_t i = 0; i < n; i++) v[i] = v[i] < 0.0f ? 0.0f : v[i]; break;
    case LT_UNARY_GELU:
        for (int64_t i = 0; i < n; i++)
            v[i] = 0.5f * v[i] * (1.0f + erff(v[i] * 0.70710678118654752f));
        break;
    case LT_UNARY_SIGMOID:
        for (int64_t i = 0; i < n; i++) v[i] = 1.0f / (1.0f + expf(-v[i]));
        break;
    default: break;
    }
}

static void unary_f64(lt_unary_op op, double *v, int64_t n) {
    switch (op) {
    case LT_UNARY_NEG: for (int64_t i = 0; i < n; i++) v[i] = -v[i]; break;
    case LT_UNARY_ABS: for (int64_t i = 0; i < n; i++) v[i] = fabs(v[i]); break;
    case LT_UNARY_EXP: for (int64_t i = 0; i < n; i++) v[i] = exp(v[i]); break;
    case LT_UNARY_LOG: for (int64_t i = 0; i < n; i++) v[i] = log(v[i]); break;
    case LT_UNARY_SQRT: for (int64_t i = 0; i < n; i++) v[i] = sqrt(v[i]); break;
    case LT_UNARY_TANH: for (int64_t i = 0; i < n; i++) v[i] = tanh(v[i]); break;
    case LT_UNARY_RELU: for (int64_t i = 0; i < n; i++) v[i] = v[i] < 0.0 ? 0.0 : v[i]; break;
    case LT_UNARY_GELU:
        for (int64_t i = 0; i < n; i++)
            v[i] = 0.5 * v[i] * (1.0 + erf(v[i] * 0.70710678118654752440));
        break;
    case LT_UNARY_SIGMOID: for (int64_t i = 0; i < n; i++) v[i] = 1.0 / (1.0 + exp(-v[i])); break;
    default: break;
    }
}

static void unary_i64(lt_unary_op op, int64_t *v, int64_t n) {
    switch (op) {
    /* through uint64 so INT64_MIN wraps instead of overflowing */
    case LT_UNARY_NEG: for (int64_t i = 0; i < n; i++) v[i] = (int64_t)(0u - (uint64_t)v[i]); break;
    case LT_UNARY_ABS:
        for (int64_t i = 0; i < n; i++) if (v[i] < 0) v[i] = (int64_t)(0u - (uint64_t)v[i]);
        break;
    case LT_UNARY_RELU: for (int64_t i = 0; i < n; i++) if (v[i] < 0) v[i] = 0; break;
    default: break;
    }
}

/* After the host loop: hands o out, or frees it when copying it back failed. */
static lt_status kernel_result(lt_status st, const char *name, lt_tensor *o, lt_tensor **out) {
    if (st != LT_OK) {
        lt_tensor_free(o);
        return lt__err_ctx(st, "%s", name);
    }
    *out = o;
    return LT_OK;
}

lt_status lt_unary(lt_unary_op op, const lt_tensor *x, lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "unary: out is NULL");
    *out = NULL;
    if (!x) return lt__err(LT_INVALID, "unary: x is NULL");
    if ((unsigned)op >= LT_UNARY_COUNT) return lt__err(LT_INVALID, "unary: unknown op %d", (int)op);
    lt_dtype dt = x->dtype;
    int isf = lt_dtype_is_float(dt);
    if (dt == LT_BOOL || (!isf && !unary_int_ok(op)))
        return lt__math_unsupported(lt_unary_name(op), dt);
    lt_tensor *o;
    LT_TRY(lt__math_out(x, dt, x->ndim, x->shape, &o));
    const lt_tensor *ops[2] = {o, x};
    lt_status kst = lt__klaunch(LT__K_UNARY, (int)op, 0, 0, 2, ops); /* a backend's kernel */
    if (kst != LT_UNSUPPORTED) {
        if (kst != LT_OK) {
            lt_tensor_free(o);
            return lt__err_ctx(kst, "%s", lt_unary_name(op));
        }
        *out = o;
        return LT_OK;
    }
    lt__hostrun hr; /* off the host (no kernel, two backends): through host copies */
    lt_status hst = lt__host_begin(&hr, 2, ops);
    if (hst != LT_OK) {
        lt_tensor_free(o);
        return lt__err_ctx(hst, "%s", lt_unary_name(op));
    }
    lt__walk w;
    lt__walk_init(&w, 2, hr.t);
    char *p[2];
    union { float f[LT__CHUNK]; double d[LT__CHUNK]; int64_t i[LT__CHUNK]; } buf;
    while (lt__walk_next(&w, p)) {
        size_t es = lt_dtype_size(dt);
        for (int64_t j = 0; j < w.n; j += LT__CHUNK) {
            int64_t m = w.n - j < LT__CHUNK ? w.n - j : LT__CHUNK;
            char *po = p[0] + j * w.step[0] * (int64_t)es;
            const char *px = p[1] + j * w.step[1] * (int64_t)es;
            if (dt == LT_F64) {
                lt__load_f64(dt, px, w.step[1], m, buf.d);
                unary_f64(op, buf.d, m);
                lt__store_f64(dt, po, w.step[0], m, buf.d);
            } else if (isf) {
                lt__load_f32(dt, px, w.step[1], m, buf.f);
                unary_f32(op, buf.f, m);
                lt__store_f32(dt, po, w.step[0], m, buf.f);
            } else {
                lt__load_i64(dt, px, w.step[1], m, buf.i);
                unary_i64(op, buf.i, m);
                lt__store_i64(dt, po, w.step[0], m, buf.i);
            }
        }
    }
    return kernel_result(lt__host_end(&hr, 1, LT_OK), lt_unary_name(op), o, out);
}
