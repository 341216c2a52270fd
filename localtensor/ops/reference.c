/* localtensor/ops/reference.c — the unsharded reference of every op, and the
 * check of a sharded result against it (lt_op_check_reference).
 *
 * It is written apart from propagation on purpose: it reads the op's
 * arguments itself (negative dims, reduced dims, split sizes, flatten and
 * reshape targets) and calls the dense kernels directly, never a plan. So a
 * rule that derives a wrong kernel argument (a wrong mean divisor, a wrong
 * keepdim mapping, wrong split sizes) makes the sharded result differ from
 * this one, and the reference check and the rule validator see it.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/status_impl.h"
#include "localtensor/ops/ops_impl.h"
#include "localtensor/reference.h"

/* d in [-n, n) -> [0, n) */
static lt_status norm(const char *name, int d, int n, int *out) {
    if (d < -n || d >= n || n == 0)
        return lt__err(LT_INVALID, "%s: dim %d is out of range for a %d-d tensor", name, d, n);
    *out = d < 0 ? d + n : d;
    return LT_OK;
}

/* torch's dim wrapping for ops that accept a 0-d tensor: there the range is
 * [-1, 0], as if the tensor had one dim. */
static lt_status wrap(const char *name, int d, int n, int *out) {
    return norm(name, d, n > 0 ? n : 1, out);
}

/* sum/mean/max/min over dims (none: all). A 0-d tensor reduced over its dim
 * 0 / -1 is itself (keepdim or not). */
static lt_status ref_reduce(lt_reduce_op kind, const char *name, const lt_tensor *x,
                            const lt_op_args *a, lt_tensor **out) {
    int dims[LT_MAX_DIMS], seen[LT_MAX_DIMS] = {0};
    if (a->ndims < 0 || a->ndims > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "%s: %d dims", name, a->ndims);
    for (int i = 0; i < a->ndims; i++) {
        LT_TRY(wrap(name, a->dims[i], x->ndim, &dims[i]));
        if (seen[dims[i]]++)
            return lt__err(LT_INVALID, "%s: dim %d appears twice", name, a->dims[i]);
    }
    if (x->ndim == 0) return lt_reduce(kind, x, 0, NULL, a->keepdim, out);
    return lt_reduce(kind, x, a->ndims, dims, a->keepdim, out);
}

/* torch.squeeze(x), torch.squeeze(x, dim), torch.squeeze(x, dims): every
 * named dim (all of them when none is named) whose size is 1 is removed;
 * a named dim of another size stays. Written as a reshape to the shape
 * without those dims. */
static lt_status ref_squeeze(const char *name, const lt_tensor *x, const lt_op_args *a,
                             lt_tensor **out) {
    int named[LT_MAX_DIMS] = {0}, d = 0, k = 0;
    int64_t shape[LT_MAX_DIMS];
    if (a->dim_set && a->ndims > 0) return lt__err(LT_INVALID, "%s: dim and dims both given", name);
    if (a->ndims < 0 || a->ndims > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "%s: %d dims", name, a->ndims);
    if (a->dim_set) {
        LT_TRY(wrap(name, a->dim, x->ndim, &d));
        named[d] = 1;
    }
    for (int i = 0; i < a->ndims; i++) {
        LT_TRY(wrap(name, a->dims[i], x->ndim, &d));
        if (named[d]++) return lt__err(LT_INVALID, "%s: dim %d appears twice", name, a->dims[i]);
    }
    int all = !a->dim_set && a->ndims == 0;
    for (d = 0; d < x->ndim; d++)
        if (!((all || named[d]) && x->shape[d] == 1)) shape[k++] = x->shape[d];
    return lt_reshape(x, k, shape, out);
}

static lt_status ref_flatten(const char *name, const lt_tensor *x, const lt_op_args *a,
                             lt_tensor **out) {
    int n = x->ndim;
    if (n == 0) {
        int64_t one = 1;
        return lt_reshape(x, 1, &one, out);
    }
    int s = 0, e = 0;
    LT_TRY(norm(name, a->dim, n, &s));
    LT_TRY(norm(name, a->flatten_end_set ? a->dim2 : -1, n, &e));
    if (e < s) return lt__err(LT_INVALID, "%s: end dim %d comes before start dim %d", name, e, s);
    int64_t shape[LT_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < s; d++) shape[k++] = x->shape[d];
    int64_t merged = 1;
    for (int d = s; d <= e; d++)
        if (lt__mul_i64(merged, x->shape[d], &merged))
            return lt__err(LT_OVERFLOW, "%s: size overflows", name);
    shape[k++] = merged;
    for (int d = e + 1; d < n; d++) shape[k++] = x->shape[d];
    return lt_reshape(x, k, shape, out);
}

/* torch.split / torch.chunk piece sizes of a dim of len. */
static lt_status ref_pieces(lt_op_kind op, const char *name, int64_t len, const lt_op_args *a,
                            int64_t *sizes, int *np) {
    int64_t ps;
    if (op == LT_OP_SPLIT && a->nsizes > 0) {
        int64_t tot = 0;
        for (int j = 0; j < a->nsizes; j++) {
            if (a->sizes[j] < 0 || lt__add_i64(tot, a->sizes[j], &tot))
                return lt__err(LT_INVALID, "%s: bad split sizes", name);
            sizes[j] = a->sizes[j];
        }
        if (tot != len)
            return lt__err(LT_SHAPE, "%s: sizes sum to %lld, not %lld", name, (long long)tot,
                           (long long)len);
        *np = a->nsizes;
        return LT_OK;
    }
    if (op == LT_OP_SPLIT) {
        if (a->split_size <= 0) return lt__err(LT_INVALID, "%s: split_size must be > 0", name);
        ps = a->split_size;
    } else {
        if (a->chunks <= 0) return lt__err(LT_INVALID, "%s: chunks must be > 0", name);
        if (len == 0) { /* every chunk of an empty dim is empty */
            if (a->chunks > LT_OP_MAX_OUTPUTS)
                return lt__err(LT_UNSUPPORTED, "%s: too many pieces", name);
            for (int j = 0; j < a->chunks; j++) sizes[j] = 0;
            *np = a->chunks;
            return LT_OK;
        }
        ps = len / a->chunks + (len % a->chunks != 0);
    }
    int n = 0;
    for (int64_t start = 0; start < len || (len == 0 && n == 0); start += ps) {
        if (n == LT_OP_MAX_OUTPUTS) return lt__err(LT_UNSUPPORTED, "%s: too many pieces", name);
        sizes[n++] = len - start < ps ? len - start : ps;
        if (len == 0) break;
    }
    *np = n;
    return LT_OK;
}

/* The elementwise ops' kernels, as data: a unary op, a binary op with a
 * scalar (reverse: scalar - x), a binary op of two tensors. */
static const struct {
    lt_op_kind op;
    lt_unary_op u;
} unary_refs[] = {
    {LT_OP_NEG, LT_UNARY_NEG},   {LT_OP_ABS, LT_UNARY_ABS},   {LT_OP_EXP, LT_UNARY_EXP},
    {LT_OP_LOG, LT_UNARY_LOG},   {LT_OP_SQRT, LT_UNARY_SQRT}, {LT_OP_TANH, LT_UNARY_TANH},
    {LT_OP_RELU, LT_UNARY_RELU}, {LT_OP_GELU, LT_UNARY_GELU}, {LT_OP_SIGMOID, LT_UNARY_SIGMOID},
};
static const struct {
    lt_op_kind op;
    lt_binary_op b;
    int reverse;
} scalar_refs[] = {
    {LT_OP_ADD_SCALAR, LT_BINARY_ADD, 0},         {LT_OP_SUB_SCALAR, LT_BINARY_SUB, 0},
    {LT_OP_RSUB_SCALAR, LT_BINARY_SUB, 1},        {LT_OP_MUL_SCALAR, LT_BINARY_MUL, 0},
    {LT_OP_DIV_SCALAR, LT_BINARY_DIV, 0},         {LT_OP_MAXIMUM_SCALAR, LT_BINARY_MAXIMUM, 0},
    {LT_OP_MINIMUM_SCALAR, LT_BINARY_MINIMUM, 0},
};
static const struct {
    lt_op_kind op;
    lt_binary_op b;
} binary_refs[] = {
    {LT_OP_ADD, LT_BINARY_ADD},         {LT_OP_SUB, LT_BINARY_SUB},
    {LT_OP_MUL, LT_BINARY_MUL},         {LT_OP_DIV, LT_BINARY_DIV},
    {LT_OP_MAXIMUM, LT_BINARY_MAXIMUM}, {LT_OP_MINIMUM, LT_BINARY_MINIMUM},
};

/* The elementwise op (by the tables above) on in[]; *found 0 when op is
 * not one of them. */
static lt_status ref_elementwise(lt_op_kind op, const lt_tensor *const *in, const lt_op_args *a,
                                 lt_tensor **out, int *found) {
    *found = 1;
    for (size_t i = 0; i < sizeof unary_refs / sizeof *unary_refs; i++)
        if (unary_refs[i].op == op) return lt_unary(unary_refs[i].u, in[0], out);
    for (size_t i = 0; i < sizeof scalar_refs / sizeof *scalar_refs; i++)
        if (scalar_refs[i].op == op)
            return lt_binary_scalar(scalar_refs[i].b, in[0], a->scalar, scalar_refs[i].reverse,
                                    out);
    for (size_t i = 0; i < sizeof binary_refs / sizeof *binary_refs; i++)
        if (binary_refs[i].op == op) return lt_binary(binary_refs[i].b, in[0], in[1], out);
    *found = 0;
    return LT_OK;
}

/* Dropout of x on one rank alone (a mesh of one rank). */
static lt_status ref_dropout(const lt_tensor *x, const lt_op_args *a, lt_tensor **out) {
    lt_mesh one;
    int size1 = 1;
    lt_placement r = lt_replicate();
    lt_spec s;
    LT_TRY(lt_mesh_init(&one, 1, &size1, NULL));
    LT_TRY(lt_spec_init(&one, x->dtype, x->ndim, x->shape, &r, 1, &s));
    return lt__dropout_shard(x, a->scalar, a->seed, &s, 0, out);
}

/* Permute of x by a->dims. */
static lt_status ref_permute(const char *name, const lt_tensor *x, const lt_op_args *a,
                             lt_tensor **out) {
    int perm[LT_MAX_DIMS];
    if (a->ndims != x->ndim)
        return lt__err(LT_INVALID, "%s: %d dims for a %d-d tensor", name, a->ndims, x->ndim);
    for (int i = 0; i < a->ndims; i++) LT_TRY(norm(name, a->dims[i], x->ndim, &perm[i]));
    return lt_permute(x, perm, out);
}

/* Split or chunk of x into up to max_out views (*nout of them). */
static lt_status ref_split(lt_op_kind op, const char *name, const lt_tensor *x, const lt_op_args *a,
                           lt_tensor **out, int max_out, int *nout) {
    int64_t sizes[LT_OP_MAX_OUTPUTS];
    int np = 0, d = 0;
    LT_TRY(norm(name, a->dim, x->ndim, &d));
    LT_TRY(ref_pieces(op, name, x->shape[d], a, sizes, &np));
    if (np > max_out)
        return lt__err(LT_INVALID, "%s: %d pieces but room for %d", name, np, max_out);
    *nout = np;
    return lt_split_sizes_views(x, d, np, sizes, out);
}

/* rand / randn: a new tensor of a->shape from a->seed. */
static lt_status ref_rand(lt_op_kind op, const lt_op_args *a, lt_tensor **out) {
    lt_init init = {op == LT_OP_RANDN ? LT_INIT_RANDN : LT_INIT_RANDOM, a->seed};
    LT_TRY(lt_tensor_new(a->dtype, a->shape_ndim, a->shape, out));
    return lt_init_fill(out[0], &init);
}

static lt_status ref_one(lt_op_kind op, const lt_tensor *const *in, int nin, const lt_op_args *a,
                         lt_tensor **out, int max_out, int *nout) {
    const char *name = lt_op_name(op);
    const lt_tensor *x = nin > 0 ? in[0] : NULL;
    int d = 0, d2 = 0, found;
    *nout = 1;
    lt_status st = ref_elementwise(op, in, a, out, &found);
    if (found) return st;
    switch (op) {
    case LT_OP_DROPOUT: return ref_dropout(x, a, out);
    case LT_OP_MATMUL: return lt_matmul(x, in[1], out);
    case LT_OP_MM: return lt_mm(x, in[1], out);
    case LT_OP_BMM: return lt_bmm(x, in[1], out);
    case LT_OP_ADDMM:
        return lt_addmm(x, in[1], in[2], a->scale_set ? a->beta : 1.0,
                        a->scale_set ? a->alpha : 1.0, out);
    case LT_OP_SUM: return ref_reduce(LT_REDUCE_SUM, name, x, a, out);
    case LT_OP_MEAN: return ref_reduce(LT_REDUCE_MEAN, name, x, a, out);
    case LT_OP_AMAX: return ref_reduce(LT_REDUCE_MAX, name, x, a, out);
    case LT_OP_AMIN: return ref_reduce(LT_REDUCE_MIN, name, x, a, out);
    case LT_OP_SOFTMAX:
    case LT_OP_LOG_SOFTMAX:
        if (x->ndim == 0) return lt_softmax(x, a->dim, op == LT_OP_LOG_SOFTMAX, out);
        LT_TRY(norm(name, a->dim, x->ndim, &d));
        return lt_softmax(x, d, op == LT_OP_LOG_SOFTMAX, out);
    case LT_OP_RESHAPE:
    case LT_OP_VIEW: return lt_reshape(x, a->shape_ndim, a->shape, out);
    case LT_OP_FLATTEN: return ref_flatten(name, x, a, out);
    case LT_OP_TRANSPOSE:
        LT_TRY(wrap(name, a->dim, x->ndim, &d));
        LT_TRY(wrap(name, a->dim2, x->ndim, &d2));
        if (x->ndim == 0) return lt_tensor_view(x, out); /* a 0-d tensor: itself */
        return lt_transpose(x, d, d2, out);
    case LT_OP_PERMUTE: return ref_permute(name, x, a, out);
    case LT_OP_UNSQUEEZE:
        LT_TRY(norm(name, a->dim, x->ndim + 1, &d));
        return lt_unsqueeze(x, d, out);
    case LT_OP_SQUEEZE: return ref_squeeze(name, x, a, out);
    case LT_OP_CAT:
        if (nin < 1) return lt__err(LT_INVALID, "%s: no inputs", name);
        LT_TRY(norm(name, a->dim, x->ndim, &d));
        return lt_cat(in, nin, d, out);
    case LT_OP_SPLIT:
    case LT_OP_CHUNK: return ref_split(op, name, x, a, out, max_out, nout);
    case LT_OP_EMBEDDING: return lt_embedding(x, in[1], 0, 0, out);
    case LT_OP_RAND:
    case LT_OP_RANDN: return ref_rand(op, a, out);
    default:
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: no reference for %s", name);
    }
}

lt_status lt_op_reference(lt_op_kind op, const lt_tensor *const *in, int nin,
                          const lt_op_args *args, lt_tensor **out, int max_out, int *nout) {
    static const lt_op_args zero_args;
    *nout = 0;
    if (!out || max_out < 1) return lt__err_in(LT_INVALID, "op", " reference: no room for outputs");
    for (int j = 0; j < max_out; j++) out[j] = NULL;
    if ((unsigned)op >= LT_OP_COUNT) return lt__err(LT_INVALID, "unknown op %d", (int)op);
    int want = lt_op_arity(op);
    if (want >= 0 && nin != want)
        return lt__err(LT_INVALID, "%s: %d inputs given, %d expected", lt_op_name(op), nin, want);
    for (int k = 0; k < nin; k++)
        if (!in[k]) return lt__err(LT_INVALID, "%s: input %d is NULL", lt_op_name(op), k);
    int n = 1;
    lt_status st = ref_one(op, in, nin, args ? args : &zero_args, out, max_out, &n);
    if (st) {
        for (int j = 0; j < max_out; j++) {
            lt_tensor_free(out[j]);
            out[j] = NULL;
        }
        return st;
    }
    *nout = n;
    return LT_OK;
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
    if (!st)
        st = lt_op_reference(op, (const lt_tensor *const *)full, nin, args, ref, LT_OP_MAX_OUTPUTS,
                             &nref);
    if (!st && nref != nout)
        st = lt__err(LT_MISMATCH, "%s: %d outputs but the unsharded reference gives %d", name, nout,
                     nref);
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
            lt_shape_format(got->ndim, cr.first_idx, idx, sizeof idx);
            idx[0] = '[';
            size_t L = strlen(idx);
            if (L) idx[L - 1] = ']';
            st = lt__err(LT_MISMATCH,
                         "%s: output %d differs from the unsharded reference at %s: expected %.9g, "
                         "got %.9g (%lld elements differ)",
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
