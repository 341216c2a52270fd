/* kernels/tensor.c — tensor creation and lifetime, queries, element access.
 *
 * Invariant kept here: every lt_tensor a caller can see has a checked shape
 * (ndim 0..8, sizes >= 0, numel and bytes without overflow), strides and an
 * offset that stay inside its storage, and holds one reference on that
 * storage. The storage (and its backend buffer) is released when the last
 * tensor referring to it is freed, whichever is freed first.
 */
#include "kernels/tensor_impl.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reference counts are updated atomically where the compiler allows, so that
 * threads that each drive their own simulation may share read-only storage. */
#if defined(__GNUC__)
#define LT__REF_INC(p) __atomic_add_fetch((p), 1, __ATOMIC_RELAXED)
#define LT__REF_DEC(p) __atomic_sub_fetch((p), 1, __ATOMIC_ACQ_REL)
#define LT__REF_GET(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#else
#define LT__REF_GET(p) (*(p))
#define LT__REF_INC(p) (++*(p))
#define LT__REF_DEC(p) (--*(p))
#endif

/* ---- storage ------------------------------------------------------------- */

/* New storage of nbytes from backend b, refcount 1, zero-filled when zero. */
static lt_status storage_new(const lt_backend *b, size_t nbytes, int zero, lt_storage **out) {
    lt_storage *s = lt__malloc(sizeof *s);
    if (!s) return lt__err(LT_NOMEM, "out of memory allocating a storage header");
    s->data = b->iface->alloc(b->ctx, nbytes);
    if (!s->data) {
        lt__free(s);
        return lt__err(LT_NOMEM, "out of memory allocating %zu bytes on backend '%s'", nbytes,
                       b->iface->name ? b->iface->name : "?");
    }
    if (zero && nbytes) memset(s->data, 0, nbytes);
    s->refcount = 1;
    s->nbytes = nbytes;
    s->backend = b;
    *out = s;
    return LT_OK;
}

static void storage_release(lt_storage *s) {
    if (LT__REF_DEC(&s->refcount) == 0) {
        s->backend->iface->free(s->backend->ctx, s->data);
        lt__free(s);
    }
}

/* ---- creation ------------------------------------------------------------- */

int lt__contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t st = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = st;
        /* dim 0's size never enters a stride: [2^40, 0, 2^40] has strides that fit */
        if (d > 0 && lt__mul_i64(st, shape[d] > 1 ? shape[d] : 1, &st)) return 1;
    }
    return 0;
}

static lt_status check_shape(const char *fn, int ndim, const int64_t *shape, size_t esize,
                             int64_t *numel) {
    if (ndim < 0 || ndim > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "%s: ndim %d is out of range 0..%d", fn, ndim, LT_MAX_DIMS);
    if (ndim > 0 && !shape) return lt__err(LT_INVALID, "%s: shape is NULL", fn);
    char buf[256];
    lt_status st = lt__numel_checked(ndim, shape, esize, numel);
    if (st != LT_OK)
        return lt__err_ctx(st, "%s: shape %s", fn, lt_shape_format(ndim, shape, buf, sizeof buf));
    int64_t strides[LT_MAX_DIMS];
    if (lt__contiguous_strides(ndim, shape, strides))
        return lt__err(LT_OVERFLOW, "%s: shape %s: strides overflow 64 bits", fn,
                       lt_shape_format(ndim, shape, buf, sizeof buf));
    return LT_OK;
}

static lt_status tensor_new(const char *fn, const lt_backend *b, lt_dtype dt, int ndim,
                            const int64_t *shape, int zero, lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "%s: out is NULL", fn);
    *out = NULL;
    if ((int)dt < 0 || dt >= LT_DTYPE_COUNT)
        return lt__err(LT_INVALID, "%s: unknown dtype %d", fn, (int)dt);
    if (!b) b = lt_backend_default();
    if (!b->iface || !b->iface->alloc || !b->iface->free)
        return lt__err(LT_INVALID, "%s: backend has no alloc/free", fn);
    size_t es = lt_dtype_size(dt);
    int64_t numel;
    LT_TRY(check_shape(fn, ndim, shape, es, &numel));
    lt_tensor *t = lt__calloc(1, sizeof *t);
    if (!t) return lt__err(LT_NOMEM, "%s: out of memory allocating a tensor header", fn);
    /* a backend that runs kernels zero-fills with its fill kernel (below), so
     * the host never writes device memory */
    int kzero = zero && b->iface->launch;
    lt_status st = storage_new(b, (size_t)numel * es, zero && !kzero, &t->storage);
    if (st != LT_OK) {
        lt__free(t);
        return lt__err_ctx(st, "%s", fn);
    }
    t->dtype = dt;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
    lt__contiguous_strides(ndim, t->shape, t->strides);
    if (kzero && (st = lt_fill(t, 0.0)) != LT_OK) {
        lt_tensor_free(t);
        return lt__err_ctx(st, "%s", fn);
    }
    *out = t;
    return LT_OK;
}

lt_status lt_tensor_new(lt_dtype dt, int ndim, const int64_t *shape, lt_tensor **out) {
    return tensor_new("tensor_new", NULL, dt, ndim, shape, 1, out);
}

lt_status lt_tensor_new_on(const lt_backend *b, lt_dtype dt, int ndim, const int64_t *shape,
                           lt_tensor **out) {
    return tensor_new("tensor_new_on", b, dt, ndim, shape, 1, out);
}

lt_status lt_tensor_empty(lt_dtype dt, int ndim, const int64_t *shape, lt_tensor **out) {
    return tensor_new("tensor_empty", NULL, dt, ndim, shape, 0, out);
}

lt_status lt__tensor_new_uninit(const lt_backend *b, lt_dtype dt, int ndim, const int64_t *shape,
                                lt_tensor **out) {
    return tensor_new("tensor_new", b, dt, ndim, shape, 0, out);
}

lt_status lt_tensor_new_like(const lt_tensor *t, lt_tensor **out) {
    if (out) *out = NULL;
    if (!t) return lt__err(LT_INVALID, "tensor_new_like: t is NULL");
    return tensor_new("tensor_new_like", lt__backend_of(t), t->dtype, t->ndim, t->shape, 1, out);
}

lt_status lt_tensor_from_doubles(lt_dtype dt, int ndim, const int64_t *shape, const double *vals,
                                 int64_t n, lt_tensor **out) {
    lt_tensor *t = NULL;
    LT_TRY(tensor_new("tensor_from_doubles", NULL, dt, ndim, shape, 0, &t));
    int64_t numel = lt_numel(t);
    if (n != numel) {
        char buf[256];
        lt_tensor_free(t);
        return lt__err(
            LT_SHAPE, "tensor_from_doubles: %lld values given for shape %s (%lld elements)",
            (long long)n, lt_shape_format(ndim, shape, buf, sizeof buf), (long long)numel);
    }
    if (numel > 0 && !vals) {
        lt_tensor_free(t);
        return lt__err(LT_INVALID, "tensor_from_doubles: vals is NULL");
    }
    if (numel > 0) {
        lt__hostrun hr; /* t on a backend the host cannot write: through a host copy */
        const lt_tensor *tc = t;
        lt_status st = lt__host_begin(&hr, 1, &tc);
        if (st == LT_OK) {
            lt__store_f64(dt, lt_data(hr.t[0]), 1, numel, vals);
            st = lt__host_end(&hr, 1, LT_OK);
        }
        if (st != LT_OK) {
            lt_tensor_free(t);
            return lt__err_ctx(st, "tensor_from_doubles");
        }
    }
    *out = t;
    return LT_OK;
}

lt_status lt_tensor_placeholder(lt_dtype dt, int ndim, const int64_t *shape, lt_tensor **out) {
    if (out) *out = NULL;
    int64_t numel;
    if ((int)dt < 0 || dt >= LT_DTYPE_COUNT)
        return lt__err(LT_INVALID, "tensor_placeholder: unknown dtype %d", (int)dt);
    LT_TRY(check_shape("tensor_placeholder", ndim, shape, lt_dtype_size(dt), &numel));
    int64_t real[LT_MAX_DIMS];
    int rnd = ndim > 0 ? ndim : 1;
    for (int d = 0; d < ndim; d++) real[d] = shape[d];
    real[0] = 0;
    lt_tensor *t = NULL;
    LT_TRY(tensor_new("tensor_placeholder", NULL, dt, rnd, real, 1, &t));
    t->placeholder = 1;
    t->logical_ndim = ndim;
    for (int d = 0; d < ndim; d++) t->logical[d] = shape[d];
    *out = t;
    return LT_OK;
}

lt_status lt_tensor_absent(lt_dtype dt, int ndim, const int64_t *shape, lt_tensor **out) {
    if (out) *out = NULL;
    int64_t numel;
    if ((int)dt < 0 || dt >= LT_DTYPE_COUNT)
        return lt__err(LT_INVALID, "tensor_absent: unknown dtype %d", (int)dt);
    LT_TRY(check_shape("tensor_absent", ndim, shape, lt_dtype_size(dt), &numel));
    int64_t none[LT_MAX_DIMS] = {0};   /* no bytes behind it */
    lt_tensor *t = NULL;
    LT_TRY(tensor_new("tensor_absent", NULL, dt, ndim > 0 ? ndim : 1, none, 1, &t));
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
    lt__contiguous_strides(ndim, t->shape, t->strides);
    t->absent = 1;
    *out = t;
    return LT_OK;
}

void lt_tensor_free(lt_tensor *t) {
    if (!t) return;
    storage_release(t->storage);
    lt__free(t);
}

lt_status lt_tensor_view(const lt_tensor *t, lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "tensor_view: out is NULL");
    *out = NULL;
    if (!t) return lt__err(LT_INVALID, "tensor_view: t is NULL");
    lt_tensor *v = lt__malloc(sizeof *v);
    if (!v) return lt__err(LT_NOMEM, "tensor_view: out of memory allocating a tensor header");
    *v = *t; /* a view of a placeholder is the same placeholder */
    LT__REF_INC(&v->storage->refcount);
    *out = v;
    return LT_OK;
}

lt_status lt__alias(const lt_tensor *t, lt_tensor **out) {
    LT_TRY(lt_tensor_view(t, out));
    (*out)->placeholder = 0;
    (*out)->logical_ndim = 0;
    memset((*out)->logical, 0, sizeof (*out)->logical);
    return LT_OK;
}

int lt_tensor_same_view(const lt_tensor *a, const lt_tensor *b) {
    if (a == b) return 1;
    if (!a || !b) return 0;
    if (a->storage != b->storage || a->offset != b->offset || a->dtype != b->dtype ||
        a->ndim != b->ndim || a->placeholder != b->placeholder)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->strides[d] != b->strides[d]))
            return 0;
    return 1;
}

int lt_tensor_is_shared(const lt_tensor *t) {
    return LT__REF_GET(&t->storage->refcount) > 1;
}

lt_status lt_tensor_make_writable(lt_tensor *t) {
    if (!t) return lt__err(LT_INVALID, "tensor_make_writable: t is NULL");
    if (!lt_tensor_is_shared(t)) return LT_OK;
    lt_tensor *c = NULL;
    LT_TRY(lt_clone(t, &c));   /* contiguous, its own storage */
    lt_storage *old = t->storage;
    t->storage = c->storage;
    t->offset = 0;
    memcpy(t->strides, c->strides, sizeof t->strides);
    c->storage = old;          /* c takes the old reference away */
    lt_tensor_free(c);
    return LT_OK;
}

const lt_backend *lt__backend_of(const lt_tensor *t) { return t->storage->backend; }

/* ---- queries ---------------------------------------------------------------- */

int64_t lt_numel(const lt_tensor *t) { return lt__numel_sat(t->ndim, t->shape); }

size_t lt_nbytes(const lt_tensor *t) { return (size_t)lt_numel(t) * lt_dtype_size(t->dtype); }

int lt_is_contiguous(const lt_tensor *t) {
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] == 0) return 1;
        if (t->shape[d] == 1) continue;
        if (t->strides[d] != expect) return 0;
        expect *= t->shape[d];
    }
    return 1;
}

void *lt_data(const lt_tensor *t) {
    return (char *)t->storage->data + t->offset * (int64_t)lt_dtype_size(t->dtype);
}

int lt_same_shape(const lt_tensor *a, const lt_tensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

char *lt_shape_format(int ndim, const int64_t *shape, char *buf, size_t n) {
    if (!buf || n == 0) return buf;
    size_t used = 0;
    buf[0] = '\0';
    for (int d = -1; d <= ndim && used < n; d++) {
        int w;
        if (d < 0) w = snprintf(buf + used, n - used, "(");
        else if (d == ndim) w = snprintf(buf + used, n - used, ")");
        else w = snprintf(buf + used, n - used, "%s%lld", d ? ", " : "", (long long)shape[d]);
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

int lt__may_overlap(const lt_tensor *a, const lt_tensor *b) {
    if (a->storage != b->storage) return 0;
    int64_t na = lt_numel(a), nb = lt_numel(b);
    if (na == 0 || nb == 0) return 0;
    int64_t ea = (int64_t)lt_dtype_size(a->dtype), eb = (int64_t)lt_dtype_size(b->dtype);
    int64_t alo = a->offset * ea, ahi = alo + ea, blo = b->offset * eb, bhi = blo + eb;
    for (int d = 0; d < a->ndim; d++) ahi += (a->shape[d] - 1) * a->strides[d] * ea;
    for (int d = 0; d < b->ndim; d++) bhi += (b->shape[d] - 1) * b->strides[d] * eb;
    return alo < bhi && blo < ahi;
}

/* ---- element access ------------------------------------------------------ */

/* Offset in elements of multi-index idx, or -1 when it is out of range. */
static int64_t index_offset(const lt_tensor *t, const int64_t *idx) {
    int64_t off = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        if (idx[d] < 0 || idx[d] >= t->shape[d]) return -1;
        off += idx[d] * t->strides[d];
    }
    return off;
}

static int64_t flat_offset(const lt_tensor *t, int64_t i) {
    if (i < 0 || i >= lt_numel(t)) return -1;
    int64_t off = t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (i % t->shape[d]) * t->strides[d];
        i /= t->shape[d];
    }
    return off;
}

/* Out-of-range indices read NaN and write nothing (these calls cannot fail). */
/* The element at storage offset off (elements): read in place on the host,
 * else one explicit copy of its bytes (a failed copy reads NaN). */
static double load_at(const lt_tensor *t, int64_t off) {
    if (off < 0) return NAN;
    char one[8];
    if (lt__to_host_bytes(t, off, one, lt_dtype_size(t->dtype)) != LT_OK) return NAN;
    return lt_dtype_load(t->dtype, one);
}

static void store_at(lt_tensor *t, int64_t off, double v) {
    if (off < 0) return;
    char one[8];
    lt_dtype_store(t->dtype, one, v);
    (void)lt__from_host_bytes(t, off, one, lt_dtype_size(t->dtype)); /* cannot fail on the host */
}

double lt_get(const lt_tensor *t, const int64_t *idx) { return load_at(t, index_offset(t, idx)); }

void lt_set(lt_tensor *t, const int64_t *idx, double v) { store_at(t, index_offset(t, idx), v); }

double lt_get_flat(const lt_tensor *t, int64_t i) { return load_at(t, flat_offset(t, i)); }

void lt_set_flat(lt_tensor *t, int64_t i, double v) { store_at(t, flat_offset(t, i), v); }

void lt_to_doubles(const lt_tensor *t, double *out) {
    lt__hostrun hr; /* off the host: one copy of the bytes t spans */
    if (lt__host_begin(&hr, 1, &t) != LT_OK) {
        /* no memory for the copy: element by element (cannot fail) */
        for (int64_t i = 0, n = lt_numel(t); i < n; i++) out[i] = lt_get_flat(t, i);
        return;
    }
    lt__walk w;
    char *p;
    lt__walk_init(&w, 1, hr.t);
    while (lt__walk_next(&w, &p)) {
        lt__load_f64(t->dtype, p, w.step[0], w.n, out);
        out += w.n;
    }
    lt__host_end(&hr, 0, LT_OK);
}
