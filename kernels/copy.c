/* kernels/copy.c — fill, copy, clone, contiguous, cast, cat.
 *
 * These move whole tensors around, often hundreds of MiB at a time, so the
 * invariant is speed: a dense same-dtype copy is one memcpy, a copy into a
 * slab of a larger tensor (cat) is one memcpy per outer index, and no path
 * calls a function per element unless it converts between dtypes.
 */
#include "kernels/tensor_impl.h"
#include "kernels/cuda/kern.h"
#include "kernels/status_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- fill -------------------------------------------------------------------- */

lt_status lt_fill(lt_tensor *t, double v) {
    if (!t) return lt__err(LT_INVALID, "fill: t is NULL");
    const lt_tensor *tk = t;
    lt_status kst = lt__klaunch(LT__K_FILL, 0, v, 0, 1, &tk); /* a backend's kernel */
    if (kst != LT_UNSUPPORTED) return kst ? lt__err_ctx(kst, "fill") : LT_OK;
    size_t es = lt_dtype_size(t->dtype);
    char one[8]; /* v stored once in t's dtype, then replicated bytewise */
    lt_dtype_store(t->dtype, one, v);
    lt__hostrun hr; /* off the host (no fill kernel): through a host copy */
    LT_TRY(lt__host_begin(&hr, 1, &tk));
    lt__walk w;
    char *p;
    lt__walk_init(&w, 1, hr.t);
    while (lt__walk_next(&w, &p)) {
        int64_t bs = w.step[0] * (int64_t)es;
        if (w.step[0] == 1 && es == 1) {
            memset(p, one[0], (size_t)w.n);
            continue;
        }
        switch (es) {
        case 2: for (int64_t i = 0; i < w.n; i++) memcpy(p + i * bs, one, 2); break;
        case 4: for (int64_t i = 0; i < w.n; i++) memcpy(p + i * bs, one, 4); break;
        case 8: for (int64_t i = 0; i < w.n; i++) memcpy(p + i * bs, one, 8); break;
        default: for (int64_t i = 0; i < w.n; i++) memcpy(p + i * bs, one, es); break;
        }
    }
    return lt__host_end(&hr, 1, LT_OK);
}

lt_status lt_arange_fill(lt_tensor *t) {
    if (!t) return lt__err(LT_INVALID, "arange_fill: t is NULL");
    const lt_tensor *tk = t;
    lt_status kst = lt__klaunch(LT__K_ARANGE, 0, 0, 0, 1, &tk); /* a backend's kernel */
    if (kst != LT_UNSUPPORTED) return kst ? lt__err_ctx(kst, "arange_fill") : LT_OK;
    double buf[LT__CHUNK];
    int64_t next = 0;
    size_t es = lt_dtype_size(t->dtype);
    lt__hostrun hr; /* off the host (no arange kernel): through a host copy */
    LT_TRY(lt__host_begin(&hr, 1, &tk));
    lt__walk w;
    char *p;
    lt__walk_init(&w, 1, hr.t);
    while (lt__walk_next(&w, &p)) {
        for (int64_t i = 0; i < w.n; i += LT__CHUNK) {
            int64_t m = w.n - i < LT__CHUNK ? w.n - i : LT__CHUNK;
            for (int64_t j = 0; j < m; j++) buf[j] = (double)next++;
            lt__store_f64(t->dtype, p + i * w.step[0] * (int64_t)es, w.step[0], m, buf);
        }
    }
    return lt__host_end(&hr, 1, LT_OK);
}

/* ---- copy ---------------------------------------------------------------------- */

/* Same dtype, one side dense along the rows and the other not (a transpose):
 * copy in TILE x TILE blocks so both sides stay in cache. */
#define TILE 64
static void copy_tiled(size_t es, lt__walk *w) {
    int64_t nrows, rb[2];
    int64_t ncols = w->n, s0 = w->step[0], s1 = w->step[1];
    char *p[2];
    lt__walk_planes(w, &nrows, rb);
    while (lt__walk_next(w, p)) {
        for (int64_t i0 = 0; i0 < nrows; i0 += TILE) {
            int64_t i1 = i0 + TILE < nrows ? i0 + TILE : nrows;
            for (int64_t j0 = 0; j0 < ncols; j0 += TILE) {
                int64_t m = ncols - j0 < TILE ? ncols - j0 : TILE;
                for (int64_t i = i0; i < i1; i++)
                    lt__copy_elems(es, p[0] + i * rb[0] + j0 * s0 * (int64_t)es, s0,
                                   p[1] + i * rb[1] + j0 * s1 * (int64_t)es, s1, m);
            }
        }
    }
}

/* The strided copy proper: shapes equal, no overlap (checked by callers).
 * Fails only when a backend's copy kernel does. */
static lt_status copy_rows(lt_tensor *dst, const lt_tensor *src) {
    const lt_tensor *ts[2] = {dst, src};
    lt_status kst = lt__klaunch(LT__K_COPY, 0, 0, 0, 2, ts); /* a backend's kernel */
    if (kst != LT_UNSUPPORTED) return kst;
    if (!lt__on_host(dst) || !lt__on_host(src)) { /* no kernel, or two backends */
        if (lt_is_contiguous(dst) && lt_is_contiguous(src) && dst->dtype == src->dtype) {
            const lt_backend *b = lt__backend_of(dst); /* dense bytes: one copy */
            if (b == lt__backend_of(src)) {
                b->iface->memcpy(b->ctx, lt_data(dst), lt_data(src),
                                 lt_nbytes(dst)); /* the backend's own */
                return LT_OK;
            }
            if (lt__on_host(src))
                return lt__from_host_bytes(dst, dst->offset, lt_data(src), lt_nbytes(dst));
            if (lt__on_host(dst))
                return lt__to_host_bytes(src, src->offset, lt_data(dst), lt_nbytes(dst));
        }
        lt__hostrun hr;
        LT_TRY(lt__host_begin(&hr, 2, ts));
        lt_status st = copy_rows((lt_tensor *)(uintptr_t)hr.t[0], hr.t[1]);
        return lt__host_end(&hr, 1, st);
    }
    lt__walk w;
    char *p[2];
    lt__walk_init(&w, 2, ts);
    if (dst->dtype == src->dtype && w.ndim >= 2 && w.n > 1 &&
        (w.step[0] == 1) != (w.step[1] == 1)) {
        copy_tiled(lt_dtype_size(dst->dtype), &w);
        return LT_OK;
    }
    if (dst->dtype == src->dtype) {
        size_t es = lt_dtype_size(dst->dtype);
        while (lt__walk_next(&w, p)) lt__copy_elems(es, p[0], w.step[0], p[1], w.step[1], w.n);
    } else {
        while (lt__walk_next(&w, p))
            lt__convert_elems(dst->dtype, p[0], w.step[0], src->dtype, p[1], w.step[1], w.n);
    }
    return LT_OK;
}

static lt_status check_same_shape(const char *fn, const lt_tensor *a, const char *an,
                                  const lt_tensor *b, const char *bn) {
    if (lt_same_shape(a, b)) return LT_OK;
    char sa[256], sb[256];
    return lt__err(LT_SHAPE, "%s: %s has shape %s but %s has shape %s", fn, an,
                   lt_shape_format(a->ndim, a->shape, sa, sizeof sa), bn,
                   lt_shape_format(b->ndim, b->shape, sb, sizeof sb));
}

static lt_status clone_as(const char *fn, const lt_tensor *src, lt_dtype dt, lt_tensor **out) {
    lt_tensor *t = NULL;
    lt_status st = lt__tensor_new_uninit(lt__backend_of(src), dt, src->ndim, src->shape, &t);
    if (st != LT_OK) return lt__err_ctx(st, "%s", fn);
    st = copy_rows(t, src);
    if (st != LT_OK) {
        lt_tensor_free(t);
        return lt__err_ctx(st, "%s", fn);
    }
    /* same shape, same meaning: a copy of a placeholder stands for the same */
    t->placeholder = src->placeholder;
    t->logical_ndim = src->logical_ndim;
    memcpy(t->logical, src->logical, sizeof t->logical);
    *out = t;
    return LT_OK;
}

lt_status lt_copy(lt_tensor *dst, const lt_tensor *src) {
    if (!dst || !src) return lt__err(LT_INVALID, "copy: %s is NULL", dst ? "src" : "dst");
    LT_TRY(check_same_shape("copy", dst, "dst", src, "src"));
    if (lt_numel(dst) == 0) return LT_OK;
    if (lt__may_overlap(dst, src)) {
        /* Same elements in the same places: nothing to do. Otherwise stage
         * the source through a private copy so the result is well defined. */
        if (dst->dtype == src->dtype && dst->offset == src->offset &&
            memcmp(dst->strides, src->strides, sizeof dst->strides[0] * (size_t)dst->ndim) == 0)
            return LT_OK;
        lt_tensor *tmp = NULL;
        LT_TRY(clone_as("copy", src, src->dtype, &tmp));
        lt_status st = copy_rows(dst, tmp);
        lt_tensor_free(tmp);
        return st ? lt__err_ctx(st, "copy") : LT_OK;
    }
    lt_status st = copy_rows(dst, src);
    return st ? lt__err_ctx(st, "copy") : LT_OK;
}

lt_status lt_clone(const lt_tensor *src, lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "clone: out is NULL");
    *out = NULL;
    if (!src) return lt__err(LT_INVALID, "clone: src is NULL");
    LT_TRY(clone_as("clone", src, src->dtype, out));
    return LT_OK;
}

lt_status lt_contiguous(const lt_tensor *src, lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "contiguous: out is NULL");
    *out = NULL;
    if (!src) return lt__err(LT_INVALID, "contiguous: src is NULL");
    if (lt_is_contiguous(src)) return lt_tensor_view(src, out);
    return clone_as("contiguous", src, src->dtype, out);
}

lt_status lt_cast(const lt_tensor *src, lt_dtype dt, lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "cast: out is NULL");
    *out = NULL;
    if (!src) return lt__err(LT_INVALID, "cast: src is NULL");
    if ((int)dt < 0 || dt >= LT_DTYPE_COUNT)
        return lt__err(LT_INVALID, "cast: unknown dtype %d", (int)dt);
    return clone_as("cast", src, dt, out);
}

/* ---- cat ------------------------------------------------------------------------ */

lt_status lt_cat(const lt_tensor *const *ts, int n, int dim, lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "cat: out is NULL");
    *out = NULL;
    if (!ts || n < 1) return lt__err(LT_INVALID, "cat: needs at least one input (got %d)", n);
    for (int i = 0; i < n; i++)
        if (!ts[i]) return lt__err(LT_INVALID, "cat: input %d is NULL", i);
    const lt_tensor *t0 = ts[0];
    if (dim < 0 || dim >= t0->ndim)
        return lt__err(LT_INVALID, "cat: dim %d is out of range for %d-d inputs", dim, t0->ndim);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const lt_tensor *t = ts[i];
        char s0[256], si[256];
        if (t->dtype != t0->dtype)
            return lt__err(LT_DTYPE, "cat: input %d has dtype %s but input 0 has %s", i,
                           lt_dtype_name(t->dtype), lt_dtype_name(t0->dtype));
        int bad = t->ndim != t0->ndim;
        for (int d = 0; d < t0->ndim && !bad; d++)
            if (d != dim && t->shape[d] != t0->shape[d]) bad = 1;
        if (bad)
            return lt__err(LT_SHAPE, "cat along dim %d: input %d has shape %s but input 0 has %s",
                           dim, i, lt_shape_format(t->ndim, t->shape, si, sizeof si),
                           lt_shape_format(t0->ndim, t0->shape, s0, sizeof s0));
        if (lt__add_i64(total, t->shape[dim], &total))
            return lt__err(LT_OVERFLOW, "cat: the size of dim %d overflows", dim);
    }
    int64_t shape[LT_MAX_DIMS];
    memcpy(shape, t0->shape, sizeof shape);
    shape[dim] = total;
    lt_tensor *o = NULL;
    lt_status st = lt__tensor_new_uninit(lt__backend_of(t0), t0->dtype, t0->ndim, shape, &o);
    if (st != LT_OK) return lt__err_ctx(st, "cat");
    /* Each input goes into its slab of o: a borrowed view on the stack (no
     * reference taken, never freed). For contiguous inputs the walk merges
     * everything inside dim, so this is one memcpy per outer index. */
    int64_t pos = 0;
    for (int i = 0; i < n; i++) {
        lt_tensor slab = *o;
        slab.shape[dim] = ts[i]->shape[dim];
        slab.offset = o->offset + pos * o->strides[dim];
        if (lt_numel(&slab) > 0 && (st = copy_rows(&slab, ts[i])) != LT_OK) {
            lt_tensor_free(o);
            return lt__err_ctx(st, "cat");
        }
        pos += ts[i]->shape[dim];
    }
    *out = o;
    return LT_OK;
}
