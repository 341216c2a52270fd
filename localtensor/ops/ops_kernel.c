/* localtensor/ops/ops_kernel.c — the per-shard kernel of every op.
 *
 * lt__op_kernel maps an op to its kernels/math.h (or kernels/tensor.h view)
 * call with the arguments propagation derived; lt__dropout_shard is dropout
 * on one shard, its keep mask drawn per global index. The reference check
 * (localtensor/ops/reference.c) compares the sharded result with the unsharded
 * reference, which is written apart from propagation, so a wrongly derived
 * kernel argument is caught too.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/kern.h"
#include "kernels/math_impl.h"
#include "kernels/tensor_impl.h"
#include "kernels/status_impl.h"
#include "localtensor/layout.h"
#include "localtensor/ops/ops_impl.h"
#include "localtensor/random.h"

static lt_status scalar_op(lt_op_kind op, const lt_tensor *x, double s, lt_tensor **out) {
    switch (op) {
    case LT_OP_ADD_SCALAR: return lt_binary_scalar(LT_BINARY_ADD, x, s, 0, out);
    case LT_OP_SUB_SCALAR: return lt_binary_scalar(LT_BINARY_SUB, x, s, 0, out);
    case LT_OP_RSUB_SCALAR: return lt_binary_scalar(LT_BINARY_SUB, x, s, 1, out);
    case LT_OP_MUL_SCALAR: return lt_binary_scalar(LT_BINARY_MUL, x, s, 0, out);
    case LT_OP_DIV_SCALAR: return lt_binary_scalar(LT_BINARY_DIV, x, s, 0, out);
    case LT_OP_MAXIMUM_SCALAR: return lt_binary_scalar(LT_BINARY_MAXIMUM, x, s, 0, out);
    default: return lt_binary_scalar(LT_BINARY_MINIMUM, x, s, 0, out);
    }
}

/* Drops dims[n] (ascending, each of size 1 in the global shape, so also in
 * every shard: a sharded size-1 dim was replicated first) from one shard,
 * last first so the earlier indices stay valid. *res: a new view. */
static lt_status squeeze_shard(const lt_tensor *x, int n, const int *dims, lt_tensor **res) {
    lt_tensor *cur = NULL;
    LT_TRY(lt_tensor_view(x, &cur));
    for (int j = n - 1; j >= 0; j--) {
        lt_tensor *next = NULL;
        lt_status st = lt_squeeze(cur, dims[j], &next);
        lt_tensor_free(cur);
        if (st) return st;
        cur = next;
    }
    *res = cur;
    return LT_OK;
}

/* The kernel of each one-input elementwise op and each two-input one: op ->
 * lt_unary / lt_binary kind, -1 for the others (tables as data). */
static int unary_kind(lt_op_kind op) {
    switch (op) {
    case LT_OP_NEG: return LT_UNARY_NEG;
    case LT_OP_ABS: return LT_UNARY_ABS;
    case LT_OP_EXP: return LT_UNARY_EXP;
    case LT_OP_LOG: return LT_UNARY_LOG;
    case LT_OP_SQRT: return LT_UNARY_SQRT;
    case LT_OP_TANH: return LT_UNARY_TANH;
    case LT_OP_RELU: return LT_UNARY_RELU;
    case LT_OP_GELU: return LT_UNARY_GELU;
    case LT_OP_SIGMOID: return LT_UNARY_SIGMOID;
    default: return -1;
    }
}

static int binary_kind(lt_op_kind op) {
    switch (op) {
    case LT_OP_ADD: return LT_BINARY_ADD;
    case LT_OP_SUB: return LT_BINARY_SUB;
    case LT_OP_MUL: return LT_BINARY_MUL;
    case LT_OP_DIV: return LT_BINARY_DIV;
    case LT_OP_MAXIMUM: return LT_BINARY_MAXIMUM;
    case LT_OP_MINIMUM: return LT_BINARY_MINIMUM;
    default: return -1;
    }
}

/* Dropout of rank's shard x: the output's layout was checked when the plan
 * was built. *res: a new tensor (the caller frees). */
static lt_status dropout_kernel(const lt_op_plan *p, const lt_op_args *a, int rank,
                                const lt_tensor *x, lt_tensor **res) {
    const lt__op_plan_x *px = lt__op_plan_x_of(p);
    lt_spec s = {0};
    s.mesh = &px->mesh;
    s.dtype = p->out_dtype;
    s.ndim = p->out_ndim;
    memcpy(s.shape, p->out_shape[0], sizeof(int64_t) * (size_t)p->out_ndim);
    memcpy(s.placements, p->out_pl, sizeof(lt_placement) * (size_t)px->mesh.ndim);
    return lt__dropout_shard(x, a->scalar, a->seed, &s, rank, res);
}

/* Embedding of rank's weight shard w at indices ix. The masked (vocab-
 * sharded) kernel zeroes the rows it does not hold, so the global range is
 * checked first. *res: a new tensor (the caller frees). */
static lt_status embedding_kernel(const lt_op_plan *p, int rank, const lt_tensor *w,
                                  const lt_tensor *ix, lt_tensor **res) {
    const lt__op_plan_x *px = lt__op_plan_x_of(p);
    if (px->masked) {
        int64_t n = lt_numel(ix);
        for (int64_t i = 0; i < n; i++) {
            double v = lt_get_flat(ix, i);
            if (!(v >= 0 && v < (double)px->vocab))
                return lt__err(LT_INVALID,
                               "embedding: index %.0f (element %lld) is out of range for %lld rows",
                               v, (long long)i, (long long)px->vocab);
        }
    }
    return lt_embedding(w, ix, px->masked ? px->row_offset[rank] : 0, px->masked, res);
}

/* Reductions, softmax and the ops that reshape or regroup a shard: their
 * dims are the plan's normalized ones. */
static lt_status shape_kernel(const lt_op_plan *p, const lt_op_args *a, int rank,
                              const lt_tensor *const *sh, lt_tensor **res) {
    const lt__op_plan_x *px = lt__op_plan_x_of(p);
    const lt_tensor *x = sh[0];
    size_t nd = (size_t)(p->out_ndim > 0 ? p->out_ndim : 1);
    switch (p->op) {
    case LT_OP_SUM:
        return lt_reduce_ex(LT_REDUCE_SUM, x, px->nkdims, px->kdims, a->keepdim, 0, res);
    case LT_OP_MEAN:
        return lt_reduce_ex(LT_REDUCE_MEAN, x, px->nkdims, px->kdims, a->keepdim, px->mean_div,
                            res);
    case LT_OP_AMAX:
        return lt_reduce_ex(LT_REDUCE_MAX, x, px->nkdims, px->kdims, a->keepdim, 0, res);
    case LT_OP_AMIN:
        return lt_reduce_ex(LT_REDUCE_MIN, x, px->nkdims, px->kdims, a->keepdim, 0, res);
    case LT_OP_SOFTMAX: return lt_softmax(x, px->kdim, 0, res);
    case LT_OP_LOG_SOFTMAX: return lt_softmax(x, px->kdim, 1, res);
    case LT_OP_RESHAPE:
    case LT_OP_VIEW:
    case LT_OP_FLATTEN: /* every rank reshapes to its own output shape */
        return lt_reshape(x, p->out_ndim, px->local_shapes + (size_t)rank * nd, res);
    case LT_OP_TRANSPOSE: return lt_transpose(x, px->kdim, px->kdim2, res);
    case LT_OP_PERMUTE: return lt_permute(x, px->kdims, res);
    case LT_OP_UNSQUEEZE: return lt_unsqueeze(x, px->kdim, res);
    case LT_OP_SQUEEZE: return squeeze_shard(x, px->nkdims, px->kdims, res);
    case LT_OP_CAT: return lt_cat(sh, p->nin, px->kdim, res);
    case LT_OP_SPLIT:
    case LT_OP_CHUNK: return lt_split_sizes_views(x, px->kdim, p->nout, px->split_sizes, res);
    default:
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: %s has no per-shard kernel", lt_op_name(p->op));
    }
}

lt_status lt__op_kernel(const lt_op_plan *p, const lt_op_args *a, int rank,
                        const lt_tensor *const *sh, lt_tensor **res) {
    const lt_tensor *x = sh[0];
    int k = unary_kind(p->op);
    if (k >= 0) return lt_unary((lt_unary_op)k, x, res);
    if ((k = binary_kind(p->op)) >= 0) return lt_binary((lt_binary_op)k, x, sh[1], res);
    switch (p->op) {
    case LT_OP_ADD_SCALAR:
    case LT_OP_SUB_SCALAR:
    case LT_OP_RSUB_SCALAR:
    case LT_OP_MUL_SCALAR:
    case LT_OP_DIV_SCALAR:
    case LT_OP_MAXIMUM_SCALAR:
    case LT_OP_MINIMUM_SCALAR: return scalar_op(p->op, x, a->scalar, res);
    case LT_OP_DROPOUT: return dropout_kernel(p, a, rank, x, res);
    case LT_OP_MATMUL: return lt_matmul(x, sh[1], res);
    case LT_OP_MM: return lt_mm(x, sh[1], res);
    case LT_OP_BMM: return lt_bmm(x, sh[1], res);
    case LT_OP_ADDMM:
        return lt_addmm(x, sh[1], sh[2], a->scale_set ? a->beta : 1.0,
                        a->scale_set ? a->alpha : 1.0, res);
    case LT_OP_EMBEDDING: return embedding_kernel(p, rank, x, sh[1], res);
    default: return shape_kernel(p, a, rank, sh, res);
    }
}

int lt__op_kernel_same(const lt_op_plan *p, int r, int q) {
    lt__op_plan_x *px = lt__op_plan_x_of(p);
    size_t nd = (size_t)(p->out_ndim > 0 ? p->out_ndim : 1),
           W = (size_t)px->mesh.world;
    switch (p->op) {   /* the per-rank parameters lt__op_kernel reads */
    case LT_OP_DROPOUT: return 0;   /* its mask follows the rank's global indices */
    case LT_OP_EMBEDDING:
        if (px->masked &&
            px->row_offset[r] != px->row_offset[q])
            return 0;
        break;
    default: break;
    }
    for (int j = 0; j < p->nout; j++) { /* the output shapes the plan gives r and q */
        const int64_t *a = px->local_shapes + ((size_t)j * W + (size_t)r) * nd;
        const int64_t *b = px->local_shapes + ((size_t)j * W + (size_t)q) * nd;
        /* out_ndim sizes: a 0-d output keeps one unwritten slot per rank */
        if (memcmp(a, b, sizeof(int64_t) * (nd - (p->out_ndim <= 0))) != 0) return 0;
    }
    return 1;
}

lt_status lt__dropout_shard(const lt_tensor *x, double p, uint64_t seed, const lt_spec *s, int rank,
                            lt_tensor **out) {
    int ndim = s->ndim;
    const int64_t *gshape = s->shape;
    *out = NULL;
    if (!(p >= 0 && p <= 1)) return lt__err(LT_INVALID, "dropout: p = %g is not in [0, 1]", p);
    if (!lt_dtype_is_float(x->dtype)) return lt__math_unsupported("dropout", x->dtype);
    if (x->ndim != ndim)
        return lt__err(LT_SHAPE, "dropout: shard has %d dims, tensor %d", x->ndim, ndim);
    lt_rank_layout l;
    LT_TRY(lt_spec_layout_rank(s, rank, &l));
    lt_tensor *o = NULL;
    lt_status st = lt_tensor_empty(x->dtype, x->ndim, x->shape, &o); /* every element is written */
    int64_t gstride[LT_MAX_DIMS], idx[LT_MAX_DIMS] = {0}, n = st ? 0 : lt_numel(x);
    lt_contiguous_strides(ndim, gshape, gstride);
    double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
    if (!st && lt__backend_of(o) == lt__backend_of(x)) { /* a backend's kernel */
        lt__kargs ka;
        memset(&ka, 0, sizeof ka);
        ka.kernel = LT__K_DROPOUT;
        ka.s = p;
        ka.alpha = scale;
        ka.p0 = (int64_t)seed;
        ka.ndim = ndim;
        ka.n = n;
        ka.o[0] = (lt__kop){lt_data(o), (int)o->dtype, {0}};
        ka.o[1] = (lt__kop){lt_data(x), (int)x->dtype, {0}};
        for (int d = 0; d < ndim; d++) {
            ka.shape[d] = x->shape[d];
            ka.o[0].st[d] = o->strides[d];
            ka.o[1].st[d] = x->strides[d];
            ka.o[2].st[d] = gstride[d];
            ka.ix[d] = l.idx[d];
        }
        st = lt__klaunch_raw(lt__backend_of(o), &ka);
        if (st != LT_UNSUPPORTED) {
            lt_rank_layout_free(&l);
            if (st) {
                lt_tensor_free(o);
                return lt__err_ctx(st, "dropout");
            }
            *out = o;
            return LT_OK;
        }
        st = LT_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        uint64_t g = 0;
        for (int d = 0; d < ndim; d++)
            g += (uint64_t)((l.idx[d] ? l.idx[d][idx[d]] : idx[d]) * gstride[d]);
        double v = lt_rand_uniform(seed, g) >= p ? lt_get_flat(x, i) * scale : 0.0;
        lt_set_flat(o, i, v);
        for (int d = ndim - 1; d >= 0; d--) {
            if (++idx[d] < x->shape[d]) break;
            idx[d] = 0;
        }
    }
    lt_rank_layout_free(&l);
    if (st) return st;
    *out = o;
    return LT_OK;
}
