/* kernels/matmul.c — matmul / mm / bmm / addmm through the backend gemm,
 * and embedding lookup.
 *
 * Every product is a loop of 2-D gemms over the (broadcast) batch dims. An
 * operand whose last two dims are row-major or column-major (a transposed
 * view) goes to gemm as is, with the transpose flag; anything else is copied
 * dense first. bf16/f16 operands go as they are to a kernel-running backend's
 * mixed-precision gemm (f32 products and sums), elsewhere they are widened to
 * f32 and multiplied in f32; either way the f32 result is
 * rounded once into the result. A backend without gemm (or one that answers
 * LT_UNSUPPORTED) falls back to a plain triple loop.
 */
#include "localtensor/kernels/math.h"

#include <stdlib.h>
#include <string.h>

#include "localtensor/kernels/backend.h"
#include "kernels/tensor_impl.h"
#include "kernels/cuda/kern.h"
#include "kernels/math_impl.h"
#include "kernels/status_impl.h"

/* Can a (rows, cols) matrix with element strides (s0, s1) go to gemm? Sets
 * *trans and *ld. Size-1 dims have arbitrary strides, so they are fixed up
 * first. */
static int blas_layout(int64_t rows, int64_t cols, int64_t s0, int64_t s1, int *trans,
                       int64_t *ld) {
    if (cols <= 1) s1 = 1;
    if (rows <= 1) s0 = cols > 1 ? cols : 1;
    if (s1 == 1 && s0 >= (cols > 1 ? cols : 1)) {
        *trans = 0;
        *ld = s0;
        return 1;
    }
    if (s0 == 1 && s1 >= (rows > 1 ? rows : 1)) {
        *trans = 1;
        *ld = s1;
        return 1;
    }
    return 0;
}

/* c (m, n) row-major, ldc n = alpha * a @ b + beta * c; c in dtype dt (f32/f64),
 * a and b in idt: dt, or bf16/f16 with dt f32 (the backend's mixed-precision
 * gemm: f32 products and sums). host: a, b, c are host memory and the host
 * loop may run; else (a backend's memory) LT_UNSUPPORTED where the host loop
 * would be needed, before writing. */
static lt_status gemm2(const lt_backend *be, int host, lt_dtype idt, lt_dtype dt, int64_t m,
                       int64_t n, int64_t k, double alpha, const char *a, int64_t as0, int64_t as1,
                       const char *b, int64_t bs0, int64_t bs1, double beta, char *c) {
    if (m == 0 || n == 0) return LT_OK;
    int64_t es = (int64_t)lt_dtype_size(dt), ies = (int64_t)lt_dtype_size(idt);
    if (k == 0 && !host) return LT_UNSUPPORTED;
    if (k == 0) { /* no products: c = beta * c */
        for (int64_t i = 0; i < m * n; i++) {
            double v = beta == 0 ? 0.0 : beta * lt_dtype_load(dt, c + i * es);
            lt_dtype_store(dt, c + i * es, v);
        }
        return LT_OK;
    }
    int ta, tb;
    int64_t lda, ldb;
    int ok_a = blas_layout(m, k, as0, as1, &ta, &lda),
        ok_b = blas_layout(k, n, bs0, bs1, &tb, &ldb);
    if (ok_a && ok_b && be->iface->gemm) {
        lt_status st =
            be->iface->gemm(be->ctx, idt, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
        if (st != LT_UNSUPPORTED) return st;
    }
    if (!host || idt != dt) return LT_UNSUPPORTED;
    for (int64_t i = 0; i < m; i++) /* host fallback */
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += lt_dtype_load(idt, a + (i * as0 + p * as1) * ies) *
                     lt_dtype_load(idt, b + (p * bs0 + j * bs1) * ies);
            double prev = beta == 0 ? 0.0 : beta * lt_dtype_load(dt, c + (i * n + j) * es);
            lt_dtype_store(dt, c + (i * n + j) * es, alpha * s + prev);
        }
    return LT_OK;
}

/* An operand ready for gemm: compute dtype cdt and a BLAS-able matrix layout
 * (a new reference in *out, a view when nothing had to change). */
static lt_status prepare(const lt_tensor *t, lt_dtype cdt, lt_tensor **out) {
    int nd = t->ndim, tr;
    int64_t ld;
    if (t->dtype == cdt && blas_layout(t->shape[nd - 2], t->shape[nd - 1], t->strides[nd - 2],
                                       t->strides[nd - 1], &tr, &ld))
        return lt_tensor_view(t, out);
    if (t->dtype == cdt) return lt_clone(t, out);
    return lt_cast(t, cdt, out);
}

/* The batch loop of batched over ts = {c, a, b} (prepared; host: see gemm2). */
static lt_status batched_run(const lt_tensor *const *ts, int host, int nb, const int64_t *bshape,
                             const int64_t *ast, const int64_t *bst, int64_t nbatch, int64_t m,
                             int64_t n, int64_t k, double alpha, double beta) {
    const lt_tensor *c = ts[0], *pa = ts[1], *pb = ts[2];
    lt_dtype cdt = c->dtype, idt = pa->dtype;
    lt_status st = LT_OK;
    int64_t es = (int64_t)lt_dtype_size(cdt), ies = (int64_t)lt_dtype_size(idt),
            idx[LT_MAX_DIMS] = {0};
    const char *a0 = lt_data(pa), *b0 = lt_data(pb);
    char *c0 = lt_data(c);
    for (int64_t bi = 0; bi < nbatch && !st; bi++) {
        int64_t ao = 0, bo = 0;
        for (int i = 0; i < nb; i++) {
            ao += idx[i] * ast[i];
            bo += idx[i] * bst[i];
        }
        st =
            gemm2(lt__backend_of(c), host, idt, cdt, m, n, k, alpha, a0 + ao * ies,
                  pa->strides[pa->ndim - 2], pa->strides[pa->ndim - 1], b0 + bo * ies,
                  pb->strides[pb->ndim - 2], pb->strides[pb->ndim - 1], beta, c0 + bi * m * n * es);
        if (st == LT_UNSUPPORTED && bi > 0)
            st = lt__err(LT_INVALID, "gemm: the backend refused batch %lld after running batch 0",
                         (long long)bi);
        for (int i = nb - 1; i >= 0; i--) {
            if (++idx[i] < bshape[i]) break;
            idx[i] = 0;
        }
    }
    return st;
}

/* batched with the operands in idt (c's dtype, or bf16/f16 for the mixed-
 * precision gemm: then only on the backend's memory, LT_UNSUPPORTED before
 * any write when it cannot). */
static lt_status batched_as(const lt_tensor *a, const lt_tensor *b, lt_dtype idt, int nb,
                            const int64_t *bshape, double alpha, double beta, lt_tensor *c) {
    lt_tensor *pa = NULL, *pb = NULL;
    lt_status st = prepare(a, idt, &pa);
    if (!st) st = prepare(b, idt, &pb);
    if (st) goto done;
    int64_t m = pa->shape[pa->ndim - 2], k = pa->shape[pa->ndim - 1], n = pb->shape[pb->ndim - 1];
    int64_t ast[LT_MAX_DIMS] = {0}, bst[LT_MAX_DIMS] = {0}, nbatch = 1;
    for (int i = 0; i < nb; i++) {
        int ia = pa->ndim - 2 - nb + i, ib = pb->ndim - 2 - nb + i;
        ast[i] = (ia >= 0 && pa->shape[ia] == bshape[i]) ? pa->strides[ia] : 0;
        bst[i] = (ib >= 0 && pb->shape[ib] == bshape[i]) ? pb->strides[ib] : 0;
        nbatch = bshape[i] ? lt__mul_sat(nbatch, bshape[i]) : 0;
    }
    const lt_tensor *ts[3] = {c, pa, pb};
    int host = lt__on_host(c) && lt__on_host(pa) && lt__on_host(pb);
    if (!host && lt__backend_of(pa) == lt__backend_of(c) &&
        lt__backend_of(pb) == lt__backend_of(c)) {
        /* the backend's gemm on its own memory; what it cannot do (k == 0,
         * sizes over its limits) answers before the first write */
        st = batched_run(ts, 0, nb, bshape, ast, bst, nbatch, m, n, k, alpha, beta);
        if (st != LT_UNSUPPORTED || idt != c->dtype) goto done;
    }
    if (idt != c->dtype) {
        st = LT_UNSUPPORTED;
        goto done;
    }
    if (!host) { /* the host loop (or BLAS) on explicit host copies */
        lt__hostrun hr;
        st = lt__host_begin(&hr, 3, ts);
        if (st) goto done;
        st = lt__host_end(&hr, 1,
                          batched_run(hr.t, 1, nb, bshape, ast, bst, nbatch, m, n, k, alpha, beta));
        goto done;
    }
    st = batched_run(ts, 1, nb, bshape, ast, bst, nbatch, m, n, k, alpha, beta);
done:
    lt_tensor_free(pa);
    lt_tensor_free(pb);
    return st;
}

/* c (batch..., m, n) contiguous in its dtype (f32/f64) = alpha * a @ b + beta
 * * c, where a is (abatch..., m, k), b (bbatch..., k, n) and the batch dims
 * broadcast to c's nb leading dims. bf16/f16 operands on a backend that runs
 * kernels go to its gemm as they are (mixed precision: f32 products and sums
 * into c); elsewhere, or when it answers LT_UNSUPPORTED, they are cast to f32
 * first. */
static lt_status batched(const lt_tensor *a, const lt_tensor *b, int nb, const int64_t *bshape,
                         double alpha, double beta, lt_tensor *c) {
    const lt_backend *be = lt__backend_of(c);
    if (a->dtype == b->dtype && (a->dtype == LT_BF16 || a->dtype == LT_F16) && c->dtype == LT_F32 &&
        be->iface->launch && lt__backend_of(a) == be && lt__backend_of(b) == be) {
        lt_status st = batched_as(a, b, a->dtype, nb, bshape, alpha, beta, c);
        if (st != LT_UNSUPPORTED) return st;
    }
    return batched_as(a, b, c->dtype, nb, bshape, alpha, beta, c);
}

static lt_dtype compute_dtype(lt_dtype dt) { return dt == LT_F64 ? LT_F64 : LT_F32; }

/* The result in dtype dt from c (compute dtype): c itself, or a cast. Takes c. */
static lt_status finish(lt_tensor *c, lt_dtype dt, int ndim, const int64_t *shape,
                        lt_tensor **out) {
    lt_tensor *r = c;
    if (c->dtype != dt) {
        lt_status st = lt_cast(c, dt, &r);
        lt_tensor_free(c);
        if (st) return st;
    }
    /* dropping the size-1 dims of a 1-D operand keeps the dense layout */
    r->ndim = ndim;
    memcpy(r->shape, shape, sizeof(int64_t) * (size_t)ndim);
    lt__contiguous_strides(ndim, r->shape, r->strides);
    *out = r;
    return LT_OK;
}

static lt_status check_pair(const char *fn, const lt_tensor *a, const lt_tensor *b,
                            lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "%s: out is NULL", fn);
    *out = NULL;
    if (!a || !b) return lt__err(LT_INVALID, "%s: an operand is NULL", fn);
    if (a->dtype != b->dtype)
        return lt__err(LT_DTYPE, "%s: operands have dtypes %s and %s", fn, lt_dtype_name(a->dtype),
                       lt_dtype_name(b->dtype));
    if (!lt_dtype_is_float(a->dtype)) return lt__math_unsupported(fn, a->dtype);
    return LT_OK;
}

static lt_status shape_err(const char *fn, const lt_tensor *a, const lt_tensor *b) {
    char s1[160], s2[160];
    return lt__err(LT_SHAPE, "%s: shapes %s and %s cannot be multiplied", fn,
                   lt_shape_format(a->ndim, a->shape, s1, sizeof s1),
                   lt_shape_format(b->ndim, b->shape, s2, sizeof s2));
}

lt_status lt_matmul(const lt_tensor *a, const lt_tensor *b, lt_tensor **out) {
    LT_TRY(check_pair("matmul", a, b, out));
    if (a->ndim == 0 || b->ndim == 0) return shape_err("matmul", a, b);
    lt_tensor va = *a, vb = *b; /* borrowed headers: 1-D operands become matrices */
    if (a->ndim == 1) {
        va.ndim = 2;
        va.shape[0] = 1, va.shape[1] = a->shape[0];
        va.strides[0] = 0, va.strides[1] = a->strides[0];
    }
    if (b->ndim == 1) {
        vb.ndim = 2;
        vb.shape[0] = b->shape[0], vb.shape[1] = 1;
        vb.strides[0] = b->strides[0], vb.strides[1] = 0;
    }
    if (va.shape[va.ndim - 1] != vb.shape[vb.ndim - 2]) return shape_err("matmul", a, b);
    int nb;
    int64_t bshape[LT_MAX_DIMS];
    lt_status st = lt_broadcast_shapes(va.ndim - 2, va.shape, vb.ndim - 2, vb.shape, &nb, bshape);
    if (st) return lt__err_ctx(st, "matmul");
    if (nb + 2 > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "matmul: result has more than %d dims", LT_MAX_DIMS);
    int64_t cshape[LT_MAX_DIMS], oshape[LT_MAX_DIMS];
    memcpy(cshape, bshape, sizeof(int64_t) * (size_t)nb);
    memcpy(oshape, bshape, sizeof(int64_t) * (size_t)nb);
    int ond = nb;
    cshape[nb] = va.shape[va.ndim - 2];
    cshape[nb + 1] = vb.shape[vb.ndim - 1];
    if (a->ndim > 1) oshape[ond++] = cshape[nb];
    if (b->ndim > 1) oshape[ond++] = cshape[nb + 1];
    lt_tensor *c;
    LT_TRY(lt__math_out(a, compute_dtype(a->dtype), nb + 2, cshape,
                        &c)); /* gemm with beta 0 writes all */
    st = batched(&va, &vb, nb, bshape, 1.0, 0.0, c);
    if (st) {
        lt_tensor_free(c);
        return lt__err_ctx(st, "matmul");
    }
    return finish(c, a->dtype, ond, oshape, out);
}

lt_status lt_mm(const lt_tensor *a, const lt_tensor *b, lt_tensor **out) {
    LT_TRY(check_pair("mm", a, b, out));
    if (a->ndim != 2 || b->ndim != 2 || a->shape[1] != b->shape[0]) return shape_err("mm", a, b);
    return lt_matmul(a, b, out);
}

lt_status lt_bmm(const lt_tensor *a, const lt_tensor *b, lt_tensor **out) {
    LT_TRY(check_pair("bmm", a, b, out));
    if (a->ndim != 3 || b->ndim != 3 || a->shape[0] != b->shape[0] || a->shape[2] != b->shape[1])
        return shape_err("bmm", a, b);
    return lt_matmul(a, b, out);
}

lt_status lt_addmm(const lt_tensor *bias, const lt_tensor *a, const lt_tensor *b, double beta,
                   double alpha, lt_tensor **out) {
    LT_TRY(check_pair("addmm", a, b, out));
    if (!bias) return lt__err(LT_INVALID, "addmm: bias is NULL");
    if (bias->dtype != a->dtype)
        return lt__err(LT_DTYPE, "addmm: bias is %s but the operands are %s",
                       lt_dtype_name(bias->dtype), lt_dtype_name(a->dtype));
    if (a->ndim != 2 || b->ndim != 2 || a->shape[1] != b->shape[0]) return shape_err("addmm", a, b);
    int64_t shape[2] = {a->shape[0], b->shape[1]}, bs[LT_MAX_DIMS];
    int nbs;
    lt_status st = lt_broadcast_shapes(bias->ndim, bias->shape, 2, shape, &nbs, bs);
    if (st || nbs != 2 || bs[0] != shape[0] || bs[1] != shape[1]) {
        char s1[160], s2[160];
        return lt__err(LT_SHAPE, "addmm: bias of shape %s does not broadcast to the product's %s",
                       lt_shape_format(bias->ndim, bias->shape, s1, sizeof s1),
                       lt_shape_format(2, shape, s2, sizeof s2));
    }
    lt_tensor *c;
    /* with beta != 0 the bias is copied in first; with beta 0 gemm writes all */
    LT_TRY(lt__math_out(a, compute_dtype(a->dtype), 2, shape, &c));
    if (beta != 0) {
        lt_tensor ev = *bias; /* expand view: stride 0 on broadcast dims */
        ev.ndim = 2;
        for (int i = 0; i < 2; i++) {
            int ib = bias->ndim - 2 + i;
            ev.shape[i] = shape[i];
            ev.strides[i] = (ib >= 0 && bias->shape[ib] == shape[i]) ? bias->strides[ib] : 0;
        }
        ev.placeholder = 0;
        st = lt_copy(c, &ev);
    }
    if (!st) st = batched(a, b, 0, NULL, alpha, beta, c);
    if (st) {
        lt_tensor_free(c);
        return lt__err_ctx(st, "addmm");
    }
    return finish(c, a->dtype, 2, shape, out);
}

/* ---- embedding --------------------------------------------------------------------------- */

/* Embedding on a backend's kernel (one thread per output element), when
 * weight, idx and o share a backend that launches kernels: the indices go to
 * i64 there first, and without `masked` their min and max (reduced there
 * too) must lie in range, else LT_UNSUPPORTED sends the caller to the host
 * loop, which names the first bad index. */
static lt_status embed_kernel(const lt_tensor *weight, const lt_tensor *idx, int64_t row_offset,
                              int masked, lt_tensor *o) {
    const lt_backend *b = lt__backend_of(o);
    if (!b->iface->launch || lt__backend_of(weight) != b || lt__backend_of(idx) != b)
        return LT_UNSUPPORTED;
    lt_tensor *ix = NULL;
    LT_TRY(lt_cast(idx, LT_I64, &ix));
    int64_t n = lt_numel(ix), rows = weight->shape[0];
    if (!masked && n > 0) {
        lt_tensor *lo = NULL, *hi = NULL;
        lt_status st = lt_reduce(LT_REDUCE_MIN, ix, 0, NULL, 0, &lo);
        if (!st) st = lt_reduce(LT_REDUCE_MAX, ix, 0, NULL, 0, &hi);
        int64_t vlo = 0, vhi = 0;
        if (!st) st = lt__to_host_bytes(lo, lo->offset, &vlo, sizeof vlo); /* two scalars, */
        if (!st) st = lt__to_host_bytes(hi, hi->offset, &vhi, sizeof vhi); /* copied explicitly */
        lt_tensor_free(lo);
        lt_tensor_free(hi);
        if (!st && (vlo < row_offset || vhi - row_offset >= rows)) st = LT_UNSUPPORTED;
        if (st) {
            lt_tensor_free(ix);
            return st;
        }
    }
    lt__kargs ka;
    memset(&ka, 0, sizeof ka);
    ka.kernel = LT__K_EMBED;
    ka.n = lt_numel(o);
    ka.m = rows;
    ka.nn = weight->shape[1];
    ka.p0 = row_offset;
    ka.ix[0] = lt_data(ix);
    ka.o[0] = (lt__kop){lt_data(o), (int)o->dtype, {1}};
    ka.o[1] =
        (lt__kop){lt_data(weight), (int)weight->dtype, {weight->strides[0], weight->strides[1]}};
    lt_status st = lt__klaunch_raw(b, &ka);
    lt_tensor_free(ix);
    return st;
}

lt_status lt_embedding(const lt_tensor *weight, const lt_tensor *idx, int64_t row_offset,
                       int masked, lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "embedding: out is NULL");
    *out = NULL;
    if (!weight || !idx) return lt__err(LT_INVALID, "embedding: an operand is NULL");
    if (weight->ndim != 2)
        return lt__err(LT_SHAPE, "embedding: weight must be 2-D, got %d-D", weight->ndim);
    if (idx->dtype != LT_I32 && idx->dtype != LT_I64)
        return lt__err(LT_DTYPE, "embedding: indices must be i32 or i64, got %s",
                       lt_dtype_name(idx->dtype));
    if (idx->ndim + 1 > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "embedding: indices have too many dims");
    int64_t shape[LT_MAX_DIMS], rows = weight->shape[0], D = weight->shape[1];
    memcpy(shape, idx->shape, sizeof(int64_t) * (size_t)idx->ndim);
    shape[idx->ndim] = D;
    lt_tensor *o;
    if (masked)
        LT_TRY(lt_tensor_new_on(lt__backend_of(weight), weight->dtype, idx->ndim + 1, shape, &o));
    else LT_TRY(lt__math_out(weight, weight->dtype, idx->ndim + 1, shape, &o));
    int64_t n = lt_numel(idx), es = (int64_t)lt_dtype_size(weight->dtype);
    lt_status kst = embed_kernel(weight, idx, row_offset, masked, o);
    if (kst != LT_UNSUPPORTED) {
        if (kst != LT_OK) {
            lt_tensor_free(o);
            return lt__err_ctx(kst, "embedding");
        }
        *out = o;
        return LT_OK;
    }
    const lt_tensor *hts[3] = {o, weight, idx};
    lt__hostrun hr; /* off the host (no kernel, bad index, two backends): host copies */
    lt_status st = lt__host_begin(&hr, 3, hts);
    if (st != LT_OK) {
        lt_tensor_free(o);
        return lt__err_ctx(st, "embedding");
    }
    const char *w0 = lt_data(hr.t[1]);
    char *o0 = lt_data(hr.t[0]);
    for (int64_t i = 0; i < n && st == LT_OK; i++) {
        int64_t v = (int64_t)lt_get_flat(hr.t[2], i), r = v - row_offset;
        if (r < 0 || r >= rows) {
            if (masked) continue; /* row stays zero */
            st = lt__err(LT_INVALID,
                         "embedding: index %lld (element %lld) is out of range for %lld rows",
                         (long long)v, (long long)i, (long long)rows);
            break;
        }
        lt__copy_elems((size_t)es, o0 + i * D * es, 1, w0 + r * weight->strides[0] * es,
                       weight->strides[1], D);
    }
    st = lt__host_end(&hr, 1, st);
    if (st != LT_OK) {
        lt_tensor_free(o);
        return st;
    }
    *out = o;
    return LT_OK;
}
