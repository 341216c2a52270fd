/* kernels/accumulate.c — elementwise accumulate (the reduction step of every
 * reducing collective) and scale (the divide of avg).
 *
 * Dense f32 runs go to the backend's accumulate; everything else runs a
 * typed host loop here. The semantics are fixed in one place,
 * lt__accumulate_run, so the backend path and the host path agree:
 *   - avg accumulates as sum (the caller divides once, with lt_scale);
 *   - max/min propagate NaN (torch.maximum / torch.minimum);
 *   - bf16/f16 widen both sides to f32, combine in f32, round once to 16 bits
 *     (a collective that reduces many inputs should accumulate into an f32
 *     temporary itself, so it rounds once overall);
 *   - i32/i64 wrap on overflow (two's complement, as torch does);
 *   - bool: sum and max are or, product and min are and.
 */
#include "kernels/tensor_impl.h"
#include "kernels/cuda/kern.h"
#include "kernels/status_impl.h"

#include <string.h>

static float op_f32(float d, float s, lt_redop op) {
    switch (op) {
    case LT_REDOP_MAX: return (s > d || s != s) ? s : d;
    case LT_REDOP_MIN: return (s < d || s != s) ? s : d;
    case LT_REDOP_PRODUCT: return d * s;
    default: return d + s; /* SUM, AVG */
    }
}

static double op_f64(double d, double s, lt_redop op) {
    switch (op) {
    case LT_REDOP_MAX: return (s > d || s != s) ? s : d;
    case LT_REDOP_MIN: return (s < d || s != s) ? s : d;
    case LT_REDOP_PRODUCT: return d * s;
    default: return d + s;
    }
}

static int64_t op_i64(int64_t d, int64_t s, lt_redop op) {
    switch (op) {
    case LT_REDOP_MAX: return s > d ? s : d;
    case LT_REDOP_MIN: return s < d ? s : d;
    case LT_REDOP_PRODUCT: return (int64_t)((uint64_t)d * (uint64_t)s);
    default: return (int64_t)((uint64_t)d + (uint64_t)s);
    }
}

static int32_t op_i32(int32_t d, int32_t s, lt_redop op) {
    switch (op) {
    case LT_REDOP_MAX: return s > d ? s : d;
    case LT_REDOP_MIN: return s < d ? s : d;
    case LT_REDOP_PRODUCT: return (int32_t)((uint32_t)d * (uint32_t)s);
    default: return (int32_t)((uint32_t)d + (uint32_t)s);
    }
}

static uint8_t op_bool(uint8_t d, uint8_t s, lt_redop op) {
    switch (op) {
    case LT_REDOP_PRODUCT:
    case LT_REDOP_MIN: return (uint8_t)(d && s);
    default: return (uint8_t)(d || s);
    }
}

lt_status lt__accumulate_run(const lt_backend *b, lt_dtype dt, char *d, int64_t dstep,
                             const char *s, int64_t sstep, int64_t n, lt_redop op) {
    if (n <= 0) return LT_OK;
    if (dstep == 1 && sstep == 1 && b && b->iface && b->iface->accumulate) {
        lt_status st = b->iface->accumulate(b->ctx, dt, d, s, n, op);
        if (st == LT_OK) return LT_OK;
        if (st != LT_UNSUPPORTED) return st; /* unsupported: the host loop below */
    }
    int64_t es = (int64_t)lt_dtype_size(dt), db = dstep * es, sb = sstep * es;
    /* one strided loop per C type: x = op(x, y) through memcpy (no aliasing) */
#define LT__ACC_LOOP(T, fn)                                                      \
    for (int64_t i = 0; i < n; i++) {                                            \
        T x, y;                                                                  \
        memcpy(&x, d + i * db, sizeof x);                                        \
        memcpy(&y, s + i * sb, sizeof y);                                        \
        x = fn(x, y, op);                                                        \
        memcpy(d + i * db, &x, sizeof x);                                        \
    }
    switch (dt) {
    case LT_F32: LT__ACC_LOOP(float, op_f32) break;
    case LT_F64: LT__ACC_LOOP(double, op_f64) break;
    case LT_I32: LT__ACC_LOOP(int32_t, op_i32) break;
    case LT_I64: LT__ACC_LOOP(int64_t, op_i64) break;
    case LT_BF16:
    case LT_F16: {
        int bf = dt == LT_BF16;
        for (int64_t i = 0; i < n; i++) {
            uint16_t hx, hy;
            memcpy(&hx, d + i * db, 2);
            memcpy(&hy, s + i * sb, 2);
            float x = bf ? lt_bf16_to_f32(hx) : lt_f16_to_f32(hx);
            float y = bf ? lt_bf16_to_f32(hy) : lt_f16_to_f32(hy);
            x = op_f32(x, y, op);
            hx = bf ? lt_f32_to_bf16(x) : lt_f32_to_f16(x);
            memcpy(d + i * db, &hx, 2);
        }
        break;
    }
    case LT_BOOL:
        for (int64_t i = 0; i < n; i++)
            d[i * db] = (char)op_bool((uint8_t)d[i * db], (uint8_t)s[i * sb], op);
        break;
    default:
        return lt__err(LT_INVALID, "accumulate: unknown dtype %d", (int)dt);
    }
#undef LT__ACC_LOOP
    return LT_OK;
}

lt_status lt_accumulate(lt_tensor *dst, const lt_tensor *src, lt_redop op) {
    if (!dst || !src) return lt__err(LT_INVALID, "accumulate: %s is NULL", dst ? "src" : "dst");
    if ((int)op < 0 || op >= LT_REDOP_COUNT)
        return lt__err(LT_INVALID, "accumulate: unknown reduce op %d", (int)op);
    if (!lt_same_shape(dst, src)) {
        char sa[256], sb[256];
        return lt__err(LT_SHAPE, "accumulate (%s): dst has shape %s but src has shape %s",
                       lt_redop_name(op), lt_shape_format(dst->ndim, dst->shape, sa, sizeof sa),
                       lt_shape_format(src->ndim, src->shape, sb, sizeof sb));
    }
    if (dst->dtype != src->dtype)
        return lt__err(LT_DTYPE, "accumulate (%s): dst has dtype %s but src has %s",
                       lt_redop_name(op), lt_dtype_name(dst->dtype), lt_dtype_name(src->dtype));
    const lt_backend *be = lt__backend_of(dst) == lt__backend_of(src) ? lt__backend_of(dst) : NULL;
    const lt_tensor *ts[2] = {dst, src};
    lt_status kst = lt__klaunch(LT__K_ACCUMULATE, (int)op, 0, 0, 2, ts); /* a backend's kernel */
    if (kst != LT_UNSUPPORTED)
        return kst ? lt__err_ctx(kst, "accumulate (%s)", lt_redop_name(op)) : LT_OK;
    lt__hostrun hr; /* off the host (no kernel, two backends): through host copies */
    LT_TRY(lt__host_begin(&hr, 2, ts));
    if (hr.copied) be = NULL; /* host memory now: the host loop */
    lt__walk w;
    char *p[2];
    lt__walk_init(&w, 2, hr.t);
    lt_status st = LT_OK;
    while (st == LT_OK && lt__walk_next(&w, p))
        st = lt__accumulate_run(be, dst->dtype, p[0], w.step[0], p[1], w.step[1], w.n, op);
    st = lt__host_end(&hr, 1, st);
    return st ? lt__err_ctx(st, "accumulate (%s)", lt_redop_name(op)) : LT_OK;
}

lt_status lt_scale(lt_tensor *t, double s) {
    if (!t) return lt__err(LT_INVALID, "scale: t is NULL");
    const lt_tensor *tk = t;
    lt_status kst = lt__klaunch(LT__K_SCALE, 0, s, 0, 1, &tk); /* a backend's kernel */
    if (kst != LT_UNSUPPORTED) return kst ? lt__err_ctx(kst, "scale") : LT_OK;
    double buf[LT__CHUNK];
    int64_t es = (int64_t)lt_dtype_size(t->dtype);
    lt__hostrun hr; /* off the host (no scale kernel): through a host copy */
    LT_TRY(lt__host_begin(&hr, 1, &tk));
    lt__walk w;
    char *p;
    lt__walk_init(&w, 1, hr.t);
    while (lt__walk_next(&w, &p)) {
        if (t->dtype == LT_F32 && w.step[0] == 1) { /* the common case, without the buffer */
            float *f = (void *)p; /* (w.n) */
            for (int64_t i = 0; i < w.n; i++) f[i] = (float)((double)f[i] * s);
            continue;
        }
        for (int64_t i = 0; i < w.n; i += LT__CHUNK) {
            int64_t m = w.n - i < LT__CHUNK ? w.n - i : LT__CHUNK;
            char *q = p + i * w.step[0] * es;
            lt__load_f64(t->dtype, q, w.step[0], m, buf);
            for (int64_t j = 0; j < m; j++) buf[j] *= s;
            lt__store_f64(t->dtype, q, w.step[0], m, buf);
        }
    }
    return lt__host_end(&hr, 1, LT_OK);
}
