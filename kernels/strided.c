/* kernels/strided.c — the row walk over strided tensors and typed row loops.
 *
 * Every elementwise kernel (copy, fill, accumulate, scale, compare) is "walk
 * the rows, run a typed loop on each row". This file holds both halves so the
 * kernels never call a function per element on their fast paths: dims are
 * merged until a dense tensor is a single row, and the row loops switch on
 * the dtype once per row, not once per element.
 */
#include "kernels/tensor_impl.h"

#include <string.h>

/* ---- the walk -------------------------------------------------------------- */

void lt__walk_init(lt__walk *w, int nops, const lt_tensor *const *ts) {
    const lt_tensor *t0 = ts[0];
    int64_t el[LT__WALK_MAX_OPS][LT_MAX_DIMS]; /* element strides of the kept dims */
    int64_t numel = lt_numel(t0);
    w->nops = nops;
    w->ndim = 0;
    for (int k = 0; k < nops; k++) w->row[k] = lt_data(ts[k]);
    if (numel == 0) {
        w->ndim = 1;
        w->shape[0] = 0;
        w->rows_left = 0;
        w->n = 0;
        for (int k = 0; k < nops; k++) w->step[k] = 1;
        return;
    }
    for (int d = 0; d < t0->ndim; d++) {
        if (t0->shape[d] == 1) continue;
        int merge = w->ndim > 0;
        for (int k = 0; k < nops && merge; k++)
            if (el[k][w->ndim - 1] != ts[k]->strides[d] * t0->shape[d]) merge = 0;
        if (merge) {
            w->shape[w->ndim - 1] *= t0->shape[d];
            for (int k = 0; k < nops; k++) el[k][w->ndim - 1] = ts[k]->strides[d];
        } else {
            w->shape[w->ndim] = t0->shape[d];
            for (int k = 0; k < nops; k++) el[k][w->ndim] = ts[k]->strides[d];
            w->ndim++;
        }
    }
    if (w->ndim == 0) { /* a single element */
        w->ndim = 1;
        w->shape[0] = 1;
        for (int k = 0; k < nops; k++) el[k][0] = 1;
    }
    w->n = w->shape[w->ndim - 1];
    w->rows_left = numel / w->n;
    for (int k = 0; k < nops; k++) {
        int64_t es = (int64_t)lt_dtype_size(ts[k]->dtype);
        w->step[k] = el[k][w->ndim - 1];
        for (int d = 0; d < w->ndim; d++) w->bstride[k][d] = el[k][d] * es;
    }
    for (int d = 0; d < w->ndim; d++) w->pos[d] = 0;
}

int lt__walk_next(lt__walk *w, char **ptrs) {
    if (w->rows_left == 0) return 0;
    for (int k = 0; k < w->nops; k++) ptrs[k] = w->row[k];
    if (--w->rows_left == 0) return 1;
    for (int d = w->ndim - 2; d >= 0; d--) {
        for (int k = 0; k < w->nops; k++) w->row[k] += w->bstride[k][d];
        if (++w->pos[d] < w->shape[d]) break;
        for (int k = 0; k < w->nops; k++) w->row[k] -= w->bstride[k][d] * w->shape[d];
        w->pos[d] = 0;
    }
    return 1;
}

void lt__walk_planes(lt__walk *w, int64_t *rows, int64_t *rbstride) {
    int r = w->ndim - 2;
    *rows = w->shape[r];
    for (int k = 0; k < w->nops; k++) rbstride[k] = w->bstride[k][r];
    if (w->shape[r] > 0) w->rows_left /= w->shape[r];
    w->ndim--; /* the odometer now skips the row dim as well */
}

/* ---- typed rows -------------------------------------------------------------- */

void lt__load_f64(lt_dtype dt, const char *p, int64_t step, int64_t n, double *out) {
    int64_t bs = step * (int64_t)lt_dtype_size(dt);
    switch (dt) {
    case LT_F32:
        if (step == 1) {
            const float *f = (const void *)p; /* (n) */
            for (int64_t i = 0; i < n; i++) out[i] = f[i];
        } else {
            for (int64_t i = 0; i < n; i++) { float v; memcpy(&v, p + i * bs, 4); out[i] = v; }
        }
        break;
    case LT_F64:
        for (int64_t i = 0; i < n; i++) memcpy(&out[i], p + i * bs, 8);
        break;
    case LT_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + i * bs, 2);
            out[i] = lt_bf16_to_f32(h);
        }
        break;
    case LT_F16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + i * bs, 2);
            out[i] = lt_f16_to_f32(h);
        }
        break;
    case LT_I32:
        for (int64_t i = 0; i < n; i++) { int32_t v; memcpy(&v, p + i * bs, 4); out[i] = v; }
        break;
    case LT_I64:
        for (int64_t i = 0; i < n; i++) {
            int64_t v;
            memcpy(&v, p + i * bs, 8);
            out[i] = (double)v;
        }
        break;
    case LT_BOOL:
        for (int64_t i = 0; i < n; i++) out[i] = p[i * bs] ? 1.0 : 0.0;
        break;
    default:
        for (int64_t i = 0; i < n; i++) out[i] = 0.0;
        break;
    }
}

void lt__store_f64(lt_dtype dt, char *p, int64_t step, int64_t n, const double *in) {
    int64_t bs = step * (int64_t)lt_dtype_size(dt);
    switch (dt) {
    case LT_F32:
        if (step == 1) {
            float *f = (void *)p; /* (n) */
            for (int64_t i = 0; i < n; i++) f[i] = (float)in[i];
        } else {
            for (int64_t i = 0; i < n; i++) { float v = (float)in[i]; memcpy(p + i * bs, &v, 4); }
        }
        break;
    case LT_F64:
        for (int64_t i = 0; i < n; i++) memcpy(p + i * bs, &in[i], 8);
        break;
    case LT_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = lt_f32_to_bf16((float)in[i]);
            memcpy(p + i * bs, &h, 2);
        }
        break;
    case LT_F16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = lt_f32_to_f16((float)in[i]);
            memcpy(p + i * bs, &h, 2);
        }
        break;
    case LT_BOOL:
        for (int64_t i = 0; i < n; i++) p[i * bs] = (char)(in[i] != 0.0);
        break;
    default: /* integers: truncation and saturation exactly as lt_dtype_store */
        for (int64_t i = 0; i < n; i++) lt_dtype_store(dt, p + i * bs, in[i]);
        break;
    }
}

void lt__copy_elems(size_t esize, char *d, int64_t dstep, const char *s, int64_t sstep,
                    int64_t n) {
    if (n <= 0) return;
    if (dstep == 1 && sstep == 1) {
        memcpy(d, s, (size_t)n * esize);
        return;
    }
    int64_t db = dstep * (int64_t)esize, sb = sstep * (int64_t)esize;
    switch (esize) {
    case 1: for (int64_t i = 0; i < n; i++) d[i * db] = s[i * sb]; break;
    case 2: for (int64_t i = 0; i < n; i++) memcpy(d + i * db, s + i * sb, 2); break;
    case 4: for (int64_t i = 0; i < n; i++) memcpy(d + i * db, s + i * sb, 4); break;
    case 8: for (int64_t i = 0; i < n; i++) memcpy(d + i * db, s + i * sb, 8); break;
    default: for (int64_t i = 0; i < n; i++) memcpy(d + i * db, s + i * sb, esize); break;
    }
}

/* f32 <-> bf16/f16 skip the double buffer: the result is the same (the f32
 * value is exact in double), the loop is tighter. */
static int convert_direct(lt_dtype ddt, char *d, int64_t dstep, lt_dtype sdt, const char *s,
                          int64_t sstep, int64_t n) {
    int64_t db = dstep * (int64_t)lt_dtype_size(ddt), sb = sstep * (int64_t)lt_dtype_size(sdt);
    if (sdt == LT_F32 && (ddt == LT_BF16 || ddt == LT_F16)) {
        for (int64_t i = 0; i < n; i++) {
            float f;
            memcpy(&f, s + i * sb, 4);
            uint16_t h = ddt == LT_BF16 ? lt_f32_to_bf16(f) : lt_f32_to_f16(f);
            memcpy(d + i * db, &h, 2);
        }
        return 1;
    }
    if (ddt == LT_F32 && (sdt == LT_BF16 || sdt == LT_F16)) {
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, s + i * sb, 2);
            float f = sdt == LT_BF16 ? lt_bf16_to_f32(h) : lt_f16_to_f32(h);
            memcpy(d + i * db, &f, 4);
        }
        return 1;
    }
    return 0;
}

void lt__convert_elems(lt_dtype ddt, char *d, int64_t dstep, lt_dtype sdt, const char *s,
                       int64_t sstep, int64_t n) {
    if (ddt == sdt) {
        lt__copy_elems(lt_dtype_size(ddt), d, dstep, s, sstep, n);
        return;
    }
    if (convert_direct(ddt, d, dstep, sdt, s, sstep, n)) return;
    double buf[LT__CHUNK];
    int64_t db = dstep * (int64_t)lt_dtype_size(ddt), sb = sstep * (int64_t)lt_dtype_size(sdt);
    for (int64_t i = 0; i < n; i += LT__CHUNK) {
        int64_t m = n - i < LT__CHUNK ? n - i : LT__CHUNK;
        lt__load_f64(sdt, s + i * sb, sstep, m, buf);
        lt__store_f64(ddt, d + i * db, dstep, m, buf);
    }
}
