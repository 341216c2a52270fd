/* kernels/views.c — views: narrow, select, transpose, permute, reshape,
 * unsqueeze, squeeze, and the split family.
 *
 * A view is a new lt_tensor header over the same storage (one more
 * reference), so it stays valid after the tensor it came from is freed. The
 * only function here that may copy is lt_reshape, when no strides can express
 * the new shape. Views that change the shape drop the placeholder flag: the
 * logical shape no longer describes them.
 */
#include "kernels/tensor_impl.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"

#include <stdlib.h>
#include <string.h>

static lt_status check_args(const char *fn, const lt_tensor *t, lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "%s: out is NULL", fn);
    *out = NULL;
    if (!t) return lt__err(LT_INVALID, "%s: t is NULL", fn);
    return LT_OK;
}

static lt_status check_dim(const char *fn, const lt_tensor *t, int dim) {
    if (dim < 0 || dim >= t->ndim)
        return lt__err(LT_INVALID, "%s: dim %d is out of range for a %d-d tensor", fn, dim,
                       t->ndim);
    return LT_OK;
}

/* ---- narrow, select, transpose, permute -------------------------------------------- */

lt_status lt_narrow(const lt_tensor *t, int dim, int64_t start, int64_t len, lt_tensor **out) {
    LT_TRY(check_args("narrow", t, out));
    LT_TRY(check_dim("narrow", t, dim));
    if (start < 0 || len < 0 || start > t->shape[dim] || len > t->shape[dim] - start)
        return lt__err(LT_INVALID, "narrow: [%lld, %lld + %lld) is not inside dim %d of size %lld",
                       (long long)start, (long long)start, (long long)len, dim,
                       (long long)t->shape[dim]);
    lt_tensor *v = NULL;
    LT_TRY(lt__alias(t, &v));
    v->offset += start * t->strides[dim];
    v->shape[dim] = len;
    *out = v;
    return LT_OK;
}

lt_status lt_select(const lt_tensor *t, int dim, int64_t i, lt_tensor **out) {
    LT_TRY(check_args("select", t, out));
    LT_TRY(check_dim("select", t, dim));
    if (i < 0 || i >= t->shape[dim])
        return lt__err(LT_INVALID, "select: index %lld is out of range for dim %d of size %lld",
                       (long long)i, dim, (long long)t->shape[dim]);
    lt_tensor *v = NULL;
    LT_TRY(lt__alias(t, &v));
    v->offset += i * t->strides[dim];
    for (int d = dim; d + 1 < t->ndim; d++) {
        v->shape[d] = t->shape[d + 1];
        v->strides[d] = t->strides[d + 1];
    }
    v->ndim = t->ndim - 1;
    v->shape[v->ndim] = 0;
    v->strides[v->ndim] = 0;
    *out = v;
    return LT_OK;
}

lt_status lt_transpose(const lt_tensor *t, int d0, int d1, lt_tensor **out) {
    LT_TRY(check_args("transpose", t, out));
    if (t->ndim == 0 && d0 == 0 && d1 == 0)
        return lt__alias(t, out); /* torch: a 0-d tensor has dim 0 */
    LT_TRY(check_dim("transpose", t, d0));
    LT_TRY(check_dim("transpose", t, d1));
    lt_tensor *v = NULL;
    LT_TRY(lt__alias(t, &v));
    v->shape[d0] = t->shape[d1];
    v->shape[d1] = t->shape[d0];
    v->strides[d0] = t->strides[d1];
    v->strides[d1] = t->strides[d0];
    *out = v;
    return LT_OK;
}

lt_status lt_permute(const lt_tensor *t, const int *perm, lt_tensor **out) {
    LT_TRY(check_args("permute", t, out));
    if (!perm && t->ndim > 0) return lt__err(LT_INVALID, "permute: perm is NULL");
    int seen[LT_MAX_DIMS] = {0};
    for (int d = 0; d < t->ndim; d++) {
        if (perm[d] < 0 || perm[d] >= t->ndim || seen[perm[d]]++)
            return lt__err(LT_INVALID, "permute: perm[%d] = %d: not a permutation of 0..%d", d,
                           perm[d], t->ndim - 1);
    }
    lt_tensor *v = NULL;
    LT_TRY(lt__alias(t, &v));
    for (int d = 0; d < t->ndim; d++) {
        v->shape[d] = t->shape[perm[d]];
        v->strides[d] = t->strides[perm[d]];
    }
    *out = v;
    return LT_OK;
}

/* ---- reshape ------------------------------------------------------------------------- */

/* The new shape with -1 resolved, into res. */
static lt_status infer_shape(const lt_tensor *t, int ndim, const int64_t *shape, int64_t *res) {
    char sa[256], sb[256];
    if (ndim < 0 || ndim > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "reshape: ndim %d is out of range 0..%d", ndim, LT_MAX_DIMS);
    if (ndim > 0 && !shape) return lt__err(LT_INVALID, "reshape: shape is NULL");
    int infer = -1, zero = 0;
    for (int d = 0; d < ndim; d++) {
        res[d] = shape[d];
        if (shape[d] == -1) {
            if (infer >= 0)
                return lt__err(LT_INVALID, "reshape: dims %d and %d are both -1; only one may be",
                               infer, d);
            infer = d;
        } else if (shape[d] < 0) {
            return lt__err(LT_INVALID, "reshape: size %lld of dim %d is negative",
                           (long long)shape[d], d);
        } else if (shape[d] == 0) {
            zero = 1;
        }
    }
    int64_t prod = 1, numel = lt_numel(t);
    for (int d = 0; d < ndim && !zero; d++) {
        if (d == infer) continue;
        if (lt__mul_i64(prod, shape[d], &prod)) {
            prod = -1; /* more than any numel: a mismatch below */
            break;
        }
    }
    if (zero) prod = 0;
    if (infer >= 0) {
        if (prod == 0)
            return lt__err(LT_INVALID,
                           "reshape: cannot infer the -1 in %s: the other sizes multiply to 0",
                           lt_shape_format(ndim, shape, sb, sizeof sb));
        if (prod < 0 || numel % prod != 0)
            return lt__err(LT_SHAPE, "reshape: shape %s does not fit %s (%lld elements)",
                           lt_shape_format(ndim, shape, sb, sizeof sb),
                           lt_shape_format(t->ndim, t->shape, sa, sizeof sa), (long long)numel);
        res[infer] = numel / prod;
    } else if (prod != numel) {
        return lt__err(LT_SHAPE, "reshape: cannot reshape %s (%lld elements) into %s", 
                       lt_shape_format(t->ndim, t->shape, sa, sizeof sa), (long long)numel,
                       lt_shape_format(ndim, shape, sb, sizeof sb));
    }
    return LT_OK;
}

/* PyTorch's computeStride (aten/src/ATen/TensorUtils.cpp): strides for the
 * new shape over the same memory, or 0 when none exist. Returns -1 on
 * overflow of contiguous strides for an empty tensor. */
static int compute_stride(const lt_tensor *t, int nd, const int64_t *ns, int64_t *nst) {
    if (t->ndim == 0) {
        for (int d = 0; d < nd; d++) nst[d] = 1;
        return 1;
    }
    if (lt_numel(t) == 0) {
        if (nd == t->ndim && memcmp(ns, t->shape, sizeof ns[0] * (size_t)nd) == 0) {
            memcpy(nst, t->strides, sizeof nst[0] * (size_t)nd);
            return 1;
        }
        return lt__contiguous_strides(nd, ns, nst) ? -1 : 1;
    }
    int view_d = nd - 1;
    int64_t chunk_base_stride = t->strides[t->ndim - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int td = t->ndim - 1; td >= 0; td--) {
        tensor_numel *= t->shape[td];
        if (td == 0 ||
            (t->shape[td - 1] != 1 && t->strides[td - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || ns[view_d] == 1)) {
                nst[view_d] = view_numel * chunk_base_stride;
                view_numel *= ns[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return 0;
            if (td > 0) {
                chunk_base_stride = t->strides[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

lt_status lt_reshape(const lt_tensor *t, int ndim, const int64_t *shape, lt_tensor **out) {
    LT_TRY(check_args("reshape", t, out));
    int64_t ns[LT_MAX_DIMS], nst[LT_MAX_DIMS];
    LT_TRY(infer_shape(t, ndim, shape, ns));
    int ok = compute_stride(t, ndim, ns, nst);
    if (ok < 0) return lt__err(LT_OVERFLOW, "reshape: strides of the new shape overflow 64 bits");
    lt_tensor *v = NULL;
    if (ok) {
        LT_TRY(lt__alias(t, &v));
    } else {
        lt_status st = lt_clone(t, &v);
        if (st != LT_OK) return lt__err_ctx(st, "reshape");
        v->placeholder = 0;
        v->logical_ndim = 0;
        lt__contiguous_strides(ndim, ns, nst); /* numel > 0 here: cannot overflow */
    }
    v->ndim = ndim;
    memset(v->shape, 0, sizeof v->shape);
    memset(v->strides, 0, sizeof v->strides);
    memcpy(v->shape, ns, sizeof ns[0] * (size_t)ndim);
    memcpy(v->strides, nst, sizeof nst[0] * (size_t)ndim);
    *out = v;
    return LT_OK;
}

/* ---- unsqueeze, squeeze ------------------------------------------------------------------ */

lt_status lt_unsqueeze(const lt_tensor *t, int dim, lt_tensor **out) {
    LT_TRY(check_args("unsqueeze", t, out));
    if (dim < 0 || dim > t->ndim)
        return lt__err(LT_INVALID, "unsqueeze: dim %d is out of range 0..%d", dim, t->ndim);
    if (t->ndim >= LT_MAX_DIMS)
        return lt__err(LT_INVALID, "unsqueeze: a %d-d tensor cannot get another dim (max %d)",
                       t->ndim, LT_MAX_DIMS);
    lt_tensor *v = NULL;
    LT_TRY(lt__alias(t, &v));
    for (int d = t->ndim; d > dim; d--) {
        v->shape[d] = t->shape[d - 1];
        v->strides[d] = t->strides[d - 1];
    }
    v->shape[dim] = 1;
    v->strides[dim] = dim < t->ndim ? t->shape[dim] * t->strides[dim] : 1;
    v->ndim = t->ndim + 1;
    *out = v;
    return LT_OK;
}

lt_status lt_squeeze(const lt_tensor *t, int dim, lt_tensor **out) {
    LT_TRY(check_args("squeeze", t, out));
    if (t->ndim == 0 && dim == 0) return lt__alias(t, out); /* torch: squeeze(0-d, 0) is itself */
    LT_TRY(check_dim("squeeze", t, dim));
    if (t->shape[dim] != 1)
        return lt__err(LT_INVALID, "squeeze: dim %d has size %lld, not 1", dim,
                       (long long)t->shape[dim]);
    lt_status st = lt_select(t, dim, 0, out);
    if (st != LT_OK) return lt__err_ctx(st, "squeeze");
    return LT_OK;
}

/* ---- split ---------------------------------------------------------------------------- */

/* outs[j] = narrow(t, dim, offset_j, sizes[j]); on error all outs are NULL. */
static lt_status views_by_sizes(const char *fn, const lt_tensor *t, int dim, int k,
                                const int64_t *sizes, lt_tensor **outs) {
    int64_t off = 0;
    for (int j = 0; j < k; j++) {
        lt_status st = lt_narrow(t, dim, off, sizes[j], &outs[j]);
        if (st != LT_OK) {
            for (int i = 0; i < j; i++) {
                lt_tensor_free(outs[i]);
                outs[i] = NULL;
            }
            return lt__err_ctx(st, "%s: piece %d", fn, j);
        }
        off += sizes[j];
    }
    return LT_OK;
}

static lt_status split_args(const char *fn, const lt_tensor *t, int dim, int k, lt_tensor **outs) {
    if (!outs) return lt__err(LT_INVALID, "%s: outs is NULL", fn);
    for (int j = 0; j < k; j++) outs[j] = NULL;
    if (!t) return lt__err(LT_INVALID, "%s: t is NULL", fn);
    return check_dim(fn, t, dim);
}

lt_status lt_split_rule_views(const lt_tensor *t, int dim, const lt_split_rule *rule, int k,
                              lt_tensor **outs) {
    LT_TRY(split_args("split_rule_views", t, dim, k, outs));
    if (k < 1) return lt__err(LT_INVALID, "split_rule_views: cannot split into %d pieces", k);
    lt_split_rule chunk = lt_split_chunk();
    int64_t *sizes = lt__malloc(sizeof *sizes * (size_t)k); /* (k) */
    if (!sizes) return lt__err(LT_NOMEM, "split_rule_views: out of memory");
    lt_status st = lt_split_sizes(rule ? rule : &chunk, t->shape[dim], k, sizes);
    if (st != LT_OK) {
        lt__free(sizes);
        return lt__err_ctx(st, "split_rule_views: dim %d", dim);
    }
    st = views_by_sizes("split_rule_views", t, dim, k, sizes, outs);
    lt__free(sizes);
    return st;
}

lt_status lt_chunk(const lt_tensor *t, int dim, int k, lt_tensor **outs) {
    lt_split_rule chunk = lt_split_chunk();
    return lt_split_rule_views(t, dim, &chunk, k, outs);
}

lt_status lt_split_sizes_views(const lt_tensor *t, int dim, int k, const int64_t *sizes,
                               lt_tensor **outs) {
    LT_TRY(split_args("split_sizes_views", t, dim, k, outs));
    if (k < 0) return lt__err(LT_INVALID, "split_sizes_views: k = %d is negative", k);
    if (k > 0 && !sizes) return lt__err(LT_INVALID, "split_sizes_views: sizes is NULL");
    int64_t sum = 0;
    for (int j = 0; j < k; j++) {
        if (sizes[j] < 0)
            return lt__err(LT_INVALID, "split_sizes_views: sizes[%d] = %lld is negative", j,
                           (long long)sizes[j]);
        if (lt__add_i64(sum, sizes[j], &sum))
            return lt__err(LT_INVALID, "split_sizes_views: sizes overflow");
    }
    if (sum != t->shape[dim])
        return lt__err(LT_INVALID, "split_sizes_views: sizes sum to %lld but dim %d has size %lld",
                       (long long)sum, dim, (long long)t->shape[dim]);
    return views_by_sizes("split_sizes_views", t, dim, k, sizes, outs);
}
