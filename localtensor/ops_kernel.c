/* localtensor/ops_kernel.c — the per-shard kernel of every op, and the
 * unsharded reference.
 *
 * lt__op_kernel maps an op to its kernels/math.h (or kernels/tensor.h view)
 * call with the arguments propagation derived. The reference check compares
 * the sharded result with lt_op_reference (ops_reference.c), which is written
 * apart from propagation, so a wrongly derived kernel argument is caught too.
 */
#include <stdlib.h>
#include <string.h>

#include "localtensor/ops.h"

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
    case LT_OP_DROPOUT:
        return lt__dropout_shard(x, a->scalar, a->seed, &p->mesh_, p->out_ndim, p->out_shape[0],
                                 p->out_pl, rank, res);
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

lt_status lt_op_check_reference(lt_op_kind op, const lt_dtensor *const *in, int nin,
                                const lt_op_args *args, lt_dtensor *const *out, int nout,
                                double rtol, double atol) {
    const char *name = lt_op_name(op);
    lt_tensor *full[LT_OP_MAX_INPUTS] = {0}, *ref[LT_OP_MAX_OUTPUTS] = {0};
    lt_status st = LT_OK;
    int nref = 0;
    if (nin < 0 || nin > LT_OP_MAX_INPUTS || nout < 0 || nout > LT_OP_MAX_OUTPUTS)
        return lt__err(LT_INVALID, "%s: bad input/output counts", name);
    for (int k = 0; k < nin && !st; k++) st = lt_full_tensor_direct(in[k], &full[k]);
    if (!st) st = lt_op_reference(op, (const lt_tensor *const *)full, nin, args, ref, LT_OP_MAX_OUTPUTS, &nref);
    if (!st && nref != nout)
        st = lt__err(LT_MISMATCH, "%s: %d outputs but the unsharded reference gives %d", name, nout, nref);
    for (int j = 0; j < nout && !st; j++) {
        lt_tensor *got = NULL;
        st = lt_full_tensor_direct(out[j], &got);
        if (st) break;
        double rt = rtol, at = atol;
        if (rt == 0 && at == 0) lt_dtype_default_tol(got->dtype, &rt, &at);
        lt_compare_result cr;
        st = lt_compare(got, ref[j], rt, at, &cr);
        if (!st && !cr.equal) {
            char idx[160];
            lt_shape_str(got->ndim, cr.first_idx, idx, sizeof idx);
            idx[0] = '[';
            size_t L = strlen(idx);
            if (L) idx[L - 1] = ']';
            st = lt__err(LT_MISMATCH, "%s: output %d differs from the unsharded reference at %s: expected %.9g, got %.9g (%lld elements differ)",
                         name, j, idx, cr.expected, cr.actual, (long long)cr.ndiff);
        } else if (st == LT_SHAPE) {
            st = lt__err(LT_MISMATCH, "%s: output %d: %s", name, j, lt_errmsg());
        }
        lt_tensor_free(got);
    }
    for (int k = 0; k < nin; k++) lt_tensor_free(full[k]);
    for (int j = 0; j < LT_OP_MAX_OUTPUTS; j++) lt_tensor_free(ref[j]);
    return st;
}
