/* localtensor/ragged_ops.c — ops on RaggedShard DTensors (docs/SEMANTICS.md
 * §11.10). An elementwise op, or a reduction over every element, gives the
 * same values whatever shape the elements are viewed in, so it runs on the
 * operands' views (localtensor/ragged.h) through the ordinary rules; its
 * output is relabelled with the operands' shape and placements when the
 * rule kept their layout. Everything else says "not supported yet". */
#include "localtensor/ragged_impl.h"

#include <string.h>

#include "kernels/status_impl.h"
#include "localtensor/ops.h"

/* The rule family of each op, as LT_OP_MAP names it. */
static const char *const op_family[] = {
#define LT__XX(e, s, n, fam, pr) #fam,
    LT_OP_MAP(LT__XX)
#undef LT__XX
};

/* 1 when a and b have one shape and one placement list. */
static int same_spec(const lt_dtensor *a, const lt_dtensor *b) {
    if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim))
        return 0;
    return lt_placements_equal(a->placements, b->placements, lt_dtensor_mesh(a)->ndim);
}

/* LT_OK when op with args on in[nin] may run on the views; *elementwise
 * set when its output keeps the operands' layout. */
static lt_status ragged_op_ok(lt_op_kind op, const lt_dtensor *const *in, int nin,
                              const lt_op_args *args, int *elementwise) {
    const char *fam = op_family[op], *name = lt_op_name(op);
    *elementwise = !strcmp(fam, "POINTWISE") || !strcmp(fam, "BINARY");
    int full_reduce = !strcmp(fam, "REDUCE") && args->ndims == 0 && !args->keepdim;
    if ((!*elementwise && !full_reduce) || op == LT_OP_DROPOUT)
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: RaggedShard in %s (only elementwise ops and "
                            "reductions over every element take one)", name);
    for (int k = 0; k < nin; k++) {
        if (!in[k]) return lt__err(LT_INVALID, "%s: input %d is NULL", name, k);
        if (!same_spec(in[0], in[k]))
            return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                                "not supported yet: RaggedShard in %s with inputs 0 and %d of "
                                "different shapes or placements (redistribute one to the "
                                "other's placements first)", name, k);
    }
    return LT_OK;
}

/* out[j] (a view-space output of in[0]'s view v) relabelled with in[0]'s
 * spec when it has v's layout; LT_UNSUPPORTED when the rule chose another. */
static lt_status relabel_out(lt_op_kind op, const lt_dtensor *in0, const lt_dtensor *v,
                             lt_dtensor *o) {
    if (o->ndim == v->ndim && !memcmp(o->shape, v->shape, sizeof(int64_t) * (size_t)v->ndim) &&
        lt_placements_equal(o->placements, v->placements, lt_dtensor_mesh(v)->ndim)) {
        lt__ragged_relabel(o, in0->ndim, in0->shape, in0->placements);
        return LT_OK;
    }
    return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                        "not supported yet: RaggedShard in %s: its rule changes the layout",
                        lt_op_name(op));
}

lt_status lt__ragged_op(lt_op_kind op, const lt_dtensor *const *in, int nin,
                        const lt_op_args *args, const lt_op_opts *opts, lt_dtensor **out,
                        int max_out, int *nout) {
    static const lt_op_args zero_args;
    lt_dtensor views[LT_OP_MAX_INPUTS];
    const lt_dtensor *vin[LT_OP_MAX_INPUTS];
    int elementwise, n = 0;
    if (!args) args = &zero_args;
    LT_TRY(ragged_op_ok(op, in, nin, args, &elementwise));
    for (int k = 0; k < nin; k++) {
        LT_TRY(lt__ragged_as_view(in[k], &views[k]));
        vin[k] = &views[k];
    }
    LT_TRY(lt_op(op, vin, nin, args, opts, out, max_out, &n));
    lt_status st = LT_OK;
    for (int j = 0; j < n && !st && elementwise; j++) st = relabel_out(op, in[0], vin[0], out[j]);
    if (st) {
        for (int j = 0; j < max_out; j++) {
            lt_dtensor_free(out[j]);
            out[j] = NULL;
        }
        return st;
    }
    if (nout) *nout = n;
    return LT_OK;
}
