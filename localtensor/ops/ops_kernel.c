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

lt_status lt__op_kernel(const lt_op_plan *p, const lt_op_args *a, int rank, const lt_tensor *const *sh,
                        lt_tensor **res) {
    const lt_tensor *x = sh[0];
    size_t nd = (size_t)(p->out_ndim > 0 ? p->out_ndim : 1);
    switch (p->op) {
    case LT_OP_NEG: return lt_unary(LT_UNARY_NEG, x, res);
    case LT_OP_ABS: return lt_unary(LT_UNARY_ABS, x, res);
    case LT_OP_EXP: return lt_unary(LT_UNARY_EXP, x, res);
    case LT_OP_LOG: return lt_unary(LT_UNARY_LOG, x, res);
    case LT_OP_SQRT: return lt_unary(LT_UNARY_SQRT, x, res);
    case LT_OP_TANH: return lt_unary(LT_UNARY_TANH, x, res);
    case LT_OP_RELU: return lt_unary(LT_UNARY_RELU, x, res);
    case LT_OP_GELU: return lt_unary(LT_UNARY_GELU, x, res);
    case LT_OP_SIGMOID: return lt_unary(LT_UNARY_SIGMOID, x, res);
    case LT_OP_ADD_SCALAR:
    case LT_OP_SUB_SCALAR:
    case LT_OP_RSUB_SCALAR:
    case LT_OP_MUL_SCALAR:
    case LT_OP_DIV_SCALAR:
    case LT_OP_MAXIMUM_SCALAR:
    case LT_OP_MINIMUM_SCALAR: return scalar_op(p->op, x, a->scalar, res);
    case LT_OP_DROPOUT: {
        /* the output's layout was checked when the plan was built */
        lt_spec s = {0};
        s.mesh = &p->mesh_;
        s.dtype = p->out_dtype;
        s.ndim = p->out_ndim;
        memcpy(s.shape, p->out_shape[0], sizeof(int64_t) * (size_t)p->out_ndim);
        memcpy(s.placements, p->out_pl, sizeof(lt_placement) * (size_t)p->mesh_.ndim);
        return lt__dropout_shard(x, a->scalar, a->seed, &s, rank, res);
    }
    case LT_OP_ADD: return lt_binary(LT_BINARY_ADD, x, sh[1], res);
    case LT_OP_SUB: return lt_binary(LT_BINARY_SUB, x, sh[1], res);
    case LT_OP_MUL: return lt_binary(LT_BINARY_MUL, x, sh[1], res);
    case LT_OP_DIV: return lt_binary(LT_BINARY_DIV, x, sh[1], res);
    case LT_OP_MAXIMUM: return lt_binary(LT_BINARY_MAXIMUM, x, sh[1], res);
    case LT_OP_MINIMUM: return lt_binary(LT_BINARY_MINIMUM, x, sh[1], res);
    case LT_OP_MATMUL: return lt_matmul(x, sh[1], res);
    case LT_OP_MM: return lt_mm(x, sh[1], res);
    case LT_OP_BMM: return lt_bmm(x, sh[1], res);
    case LT_OP_ADDMM:
        return lt_addmm(x, sh[1], sh[2], a->scale_set ? a->beta : 1.0, a->scale_set ? a->alpha : 1.0, res);
    case LT_OP_SUM: return lt_reduce_ex(LT_REDUCE_SUM, x, p->nkdims_, p->kdims_, a->keepdim, 0, res);
    case LT_OP_MEAN:
        return lt_reduce_ex(LT_REDUCE_MEAN, x, p->nkdims_, p->kdims_, a->keepdim, p->mean_div_, res);
    case LT_OP_AMAX: return lt_reduce_ex(LT_REDUCE_MAX, x, p->nkdims_, p->kdims_, a->keepdim, 0, res);
    case LT_OP_AMIN: return lt_reduce_ex(LT_REDUCE_MIN, x, p->nkdims_, p->kdims_, a->keepdim, 0, res);
    case LT_OP_SOFTMAX: return lt_softmax(x, p->kdim_, 0, res);
    case LT_OP_LOG_SOFTMAX: return lt_softmax(x, p->kdim_, 1, res);
    case LT_OP_RESHAPE:
    case LT_OP_VIEW:
    case LT_OP_FLATTEN: /* every rank reshapes to its own output shape */
        return lt_reshape(x, p->out_ndim, p->local_shapes_ + (size_t)rank * nd, res);
    case LT_OP_TRANSPOSE: return lt_transpose(x, p->kdim_, p->kdim2_, res);
    case LT_OP_PERMUTE: return lt_permute(x, p->kdims_, res);
    case LT_OP_UNSQUEEZE: return lt_unsqueeze(x, p->kdim_, res);
    case LT_OP_SQUEEZE: return squeeze_shard(x, p->nkdims_, p->kdims_, res);
    case LT_OP_CAT: return lt_cat(sh, p->nin, p->kdim_, res);
    case LT_OP_SPLIT:
    case LT_OP_CHUNK: return lt_split_sizes_views(x, p->kdim_, p->nout, p->split_sizes_, res);
    case LT_OP_EMBEDDING:
        if (p->masked_) { /* the masked kernel zeroes rows it does not hold: check the global range */
            const lt_tensor *ix = sh[1];
            int64_t n = lt_numel(ix);
            for (int64_t i = 0; i < n; i++) {
                double v = lt_get_flat(ix, i);
                if (!(v >= 0 && v < (double)p->vocab_))
                    return lt__err(LT_INVALID, "embedding: index %.0f (element %lld) is out of range for %lld rows",
                                   v, (long long)i, (long long)p->vocab_);
            }
        }
        return lt_embedding(x, sh[1], p->masked_ ? p->row_offset_[rank] : 0, p->masked_, res);
    default:
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET, "not supported yet: %s has no per-shard kernel", lt_op_name(p->op));
    }
}

lt_status lt__dropout_shard(const lt_tensor *x, double p, uint64_t seed, const lt_spec *s, int rank,
                            lt_tensor **out) {
    int ndim = s->ndim;
    const int64_t *gshape = s->shape;
    *out = NULL;
    if (!(p >= 0 && p <= 1)) return lt__err(LT_INVALID, "dropout: p = %g is not in [0, 1]", p);
    if (!lt_dtype_is_float(x->dtype)) return lt__math_unsupported("dropout", x->dtype);
    if (x->ndim != ndim) return lt__err(LT_SHAPE, "dropout: shard has %d dims, tensor %d", x->ndim, ndim);
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
        for (int d = 0; d < ndim; d++) g += (uint64_t)((l.idx[d] ? l.idx[d][idx[d]] : idx[d]) * gstride[d]);
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
