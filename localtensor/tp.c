/* localtensor/tp.c — a tensor-parallel MLP built from DTensor ops.
 *
 * Linear(x) = x @ W^T + b with W of shape (out, in). A parallel style says
 * how W and b are placed on the TP mesh dim and which input layout the layer
 * wants (PyTorch's ColwiseParallel / RowwiseParallel / SequenceParallel):
 *
 *   style      W        b     input wanted   output of addmm
 *   colwise    S(0)     S(0)  R              S(-1)   (stays sharded)
 *   rowwise    S(1)     R     S(-1)          P(sum)  -> R, or S(0) when SP
 *   replicate  R        R     R              R
 *
 * Nothing here computes a layout by hand: the layer asks for its input
 * layout, and the op rules (transpose, addmm) derive the rest — so an
 * uneven hidden size (50257 over 2 ranks) takes exactly the path an even one
 * does, with the chunk rule on both sides of the contraction.
 */
#include <string.h>

#include "localtensor/ops.h"
#include "kernels/status_impl.h"
#include "localtensor/tp.h"

static const char *const style_names[] = {
#define LT__XX(e, s) s,
    LT_TP_STYLE_MAP(LT__XX)
#undef LT__XX
};

const char *lt_tp_style_name(lt_tp_style s) {
    return lt__name_of(style_names, LT_TP_STYLE_COUNT, (int)s);
}

lt_status lt_tp_style_parse(const char *s, lt_tp_style *out) {
    int i = lt__name_find(style_names, LT_TP_STYLE_COUNT, s);
    if (i >= 0) return *out = (lt_tp_style)i, LT_OK;
    char list[128];
    return lt__err(LT_INVALID, "unknown parallel style '%s' (known: %s)", s,
                   lt__name_join(style_names, LT_TP_STYLE_COUNT, list, sizeof list));
}

/* Placements with `p` on mesh dim tp and R elsewhere. */
static void on_tp(const lt_mesh *m, int tp, lt_placement p, lt_placement *pl) {
    for (int i = 0; i < m->ndim; i++) pl[i] = i == tp ? p : lt_replicate();
}

static lt_status redistribute_to(lt_dtensor **x, const lt_placement *pl,
                                 const lt_redistribute_opts *ro) {
    const lt_mesh *m = lt_dtensor_mesh(*x);
    if (lt_placements_equal((*x)->placements, pl, m->ndim)) return LT_OK;
    lt_dtensor *y = NULL;
    LT_TRY(lt_redistribute(*x, pl, m->ndim, ro, &y, NULL));
    lt_dtensor_free(*x);
    *x = y;
    return LT_OK;
}

/* One Linear on a DTensor input (taken: replaced by the output). */
static lt_status linear(const lt_mesh *m, int tp, lt_tp_style style, int last, int sp,
                        lt_dtensor **x, const lt_tensor *w, const lt_tensor *b,
                        const lt_redistribute_opts *ro) {
    lt_placement wpl[LT_MESH_MAX_DIMS], bpl[LT_MESH_MAX_DIMS], want[LT_MESH_MAX_DIMS];
    on_tp(m, tp,
          style == LT_TP_COLWISE   ? lt_shard(0)
          : style == LT_TP_ROWWISE ? lt_shard(1)
                                   : lt_replicate(),
          wpl);
    on_tp(m, tp, style == LT_TP_COLWISE ? lt_shard(0) : lt_replicate(), bpl);
    on_tp(m, tp, style == LT_TP_ROWWISE ? lt_shard(1) : lt_replicate(), want);
    lt_dtensor *dw = NULL, *db = NULL, *wt = NULL, *y = NULL;
    lt_status st = lt_distribute(m, w, wpl, m->ndim, &dw);
    if (!st) st = lt_distribute(m, b, bpl, m->ndim, &db);
    if (!st) st = redistribute_to(x, want, ro);
    if (!st) st = lt_dtensor_transpose(dw, 0, 1, &wt);
    if (!st) st = lt_dtensor_addmm(db, *x, wt, 1.0, 1.0, &y);
    lt_dtensor_free(dw);
    lt_dtensor_free(db);
    lt_dtensor_free(wt);
    if (st) return st;
    lt_dtensor_free(*x);
    *x = y;
    if (style == LT_TP_ROWWISE ||
        (last && style == LT_TP_COLWISE)) { /* reduce, or gather, the output */
        lt_placement o[LT_MESH_MAX_DIMS];
        on_tp(m, tp, sp ? lt_shard(0) : lt_replicate(), o);
        if (!last && style == LT_TP_ROWWISE) on_tp(m, tp, lt_replicate(), o);
        st = redistribute_to(x, o, ro);
    }
    return st;
}

lt_status lt_tp_mlp(const lt_mesh *mesh, const lt_tp_mlp_cfg *cfg, const lt_tensor *x,
                    const lt_tensor *w1, const lt_tensor *b1, const lt_tensor *w2,
                    const lt_tensor *b2, const lt_redistribute_opts *ropts, lt_dtensor **y) {
    *y = NULL;
    int tp = cfg->tp_dim;
    if (tp < 0 || tp >= mesh->ndim)
        return lt__err_in(LT_INVALID, "tp_mlp", ": tp_dim %d is not a mesh dim", tp);
    if ((unsigned)cfg->style1 >= LT_TP_STYLE_COUNT || (unsigned)cfg->style2 >= LT_TP_STYLE_COUNT)
        return lt__err_in(LT_INVALID, "tp_mlp", ": unknown parallel style");
    if (x->ndim != 2 || w1->ndim != 2 || w2->ndim != 2 || b1->ndim != 1 || b2->ndim != 1 ||
        w1->shape[1] != x->shape[1] || b1->shape[0] != w1->shape[0] ||
        w2->shape[1] != w1->shape[0] || b2->shape[0] != w2->shape[0])
        return lt__err_in(LT_SHAPE, "tp_mlp",
                          ": shapes do not chain: x (tokens, in), w1 (hidden, in), b1 (hidden), w2 "
                          "(out, hidden), b2 (out)");
    lt_placement xpl[LT_MESH_MAX_DIMS];
    on_tp(mesh, tp, cfg->sequence_parallel ? lt_shard(0) : lt_replicate(), xpl);
    lt_dtensor *h = NULL, *a = NULL;
    lt_status st = lt_distribute(mesh, x, xpl, mesh->ndim, &h);
    if (!st) st = linear(mesh, tp, cfg->style1, 0, cfg->sequence_parallel, &h, w1, b1, ropts);
    if (!st) st = lt_dtensor_unary(cfg->act, h, &a);
    lt_dtensor_free(h);
    if (!st) st = linear(mesh, tp, cfg->style2, 1, cfg->sequence_parallel, &a, w2, b2, ropts);
    if (!st) { /* the model's output layout: R, or tokens sharded with SP */
        lt_placement o[LT_MESH_MAX_DIMS];
        on_tp(mesh, tp, cfg->sequence_parallel ? lt_shard(0) : lt_replicate(), o);
        st = redistribute_to(&a, o, ropts);
    }
    if (st) {
        lt_dtensor_free(a);
        return lt__err_ctx_in(st, "tp_mlp", " (%s, %s%s)", lt_tp_style_name(cfg->style1),
                              lt_tp_style_name(cfg->style2),
                              cfg->sequence_parallel ? ", sequence parallel" : "");
    }
    *y = a;
    return LT_OK;
}

lt_status lt_mlp_dense(const lt_tensor *x, const lt_tensor *w1, const lt_tensor *b1,
                       const lt_tensor *w2, const lt_tensor *b2, lt_unary_op act, lt_tensor **y) {
    lt_tensor *t1 = NULL, *h = NULL, *a = NULL, *t2 = NULL;
    *y = NULL;
    lt_status st = lt_transpose(w1, 0, 1, &t1);
    if (!st) st = lt_addmm(b1, x, t1, 1.0, 1.0, &h);
    if (!st) st = lt_unary(act, h, &a);
    if (!st) st = lt_transpose(w2, 0, 1, &t2);
    if (!st) st = lt_addmm(b2, a, t2, 1.0, 1.0, y);
    lt_tensor_free(t1);
    lt_tensor_free(h);
    lt_tensor_free(a);
    lt_tensor_free(t2);
    return st;
}
