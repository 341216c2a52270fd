/* localtensor/ops/ops_align.c — the alignment check of elementwise binary ops on
 * DTensors built by from_local (docs/SEMANTICS.md §11.6).
 *
 * from_local takes per-rank shards as the data of an SPMD program: each rank
 * is meant to combine its own shards locally. When two operands of an
 * elementwise op do not hold the same global indices on some rank (uneven
 * shards of different sizes, [3, 1] against [2, 2]), a rank-local add would
 * combine different elements — PyTorch does exactly that, since Shard(0)
 * records no sizes and the placements compare equal. Redistributing one
 * operand would hide the bug behind communication the real program never
 * issues, so the op is refused (LT_INVALID, sub-code LT_ERR_MISALIGNED),
 * naming the first rank and both operands' index ranges.
 *
 * The operands are judged as the op consumes them, after the redistributes
 * its plan asks for (ops.c runs this check after propagation). Mesh dim by
 * mesh dim, an input is consumed with its own placement ("as is") where the
 * plan keeps it or changes only its split sizes (S(0,[3,1]) -> S(0): PyTorch
 * sees Shard(0) == Shard(0) and redistributes nothing, which is the bug
 * above), and with the plan's target where the plan really redistributes it
 * (another kind or dim: P(sum) -> S(0), R -> S(0)), in the target's sizes.
 * The check fires only when a from_local operand is consumed as is on some
 * mesh dim and the consumed layouts of the two operands hold different
 * global indices on some rank. */
#include <stdio.h>
#include <string.h>

#include "localtensor/layout.h"
#include "localtensor/ops/ops_impl.h"

/* "[0, 3)" for a contiguous run, else "{0, 2, 4, ...}"; "[] (empty)" for none. */
static void fmt_range(const lt_rank_layout *l, int d, int64_t full, char *buf, size_t n) {
    int64_t len = l->local_shape[d];
    if (len == 0) {
        snprintf(buf, n, "[] (empty)");
    } else if (!l->idx[d]) {
        snprintf(buf, n, "[0, %lld)", (long long)full);
    } else if (l->contiguous[d]) {
        snprintf(buf, n, "[%lld, %lld)", (long long)l->idx[d][0], (long long)(l->idx[d][0] + len));
    } else {
        size_t used = (size_t)snprintf(buf, n, "{");
        for (int64_t i = 0; i < len && i < 6 && used < n; i++)
            used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? ", " : "",
                                     (long long)l->idx[d][i]);
        if (used < n) snprintf(buf + used, n - used, "%s}", len > 6 ? ", ..." : "");
    }
}

static int same_indices(const lt_rank_layout *a, const lt_rank_layout *b, int d) {
    int64_t len = a->local_shape[d];
    if (len != b->local_shape[d]) return 0;
    if (!a->idx[d] || !b->idx[d]) return !a->idx[d] && !b->idx[d];
    return !memcmp(a->idx[d], b->idx[d], sizeof(int64_t) * (size_t)len);
}

/* Input x's placements as plan target tgt consumes them, into out[mesh
 * ndim] (see the top of this file): per mesh dim its own where tgt is equal
 * or differs only in split sizes, else tgt's; where that mix is no layout
 * (a nested split that no longer fits), tgt whole. Returns 1 when out keeps
 * x's own placement on some mesh dim. Borrows everything. */
static int consumed(const lt_mesh *m, const lt_dtensor *x, const lt_placement *tgt,
                    lt_placement *out) {
    int kept = 0, moved = 0;
    for (int i = 0; i < m->ndim; i++) {
        const lt_placement *own = &x->placements[i];
        int as_is =
            lt_placement_equal(own, &tgt[i]) ||
            (own->kind == LT_PL_SHARD && tgt[i].kind == LT_PL_SHARD && own->dim == tgt[i].dim);
        out[i] = as_is ? *own : tgt[i];
        kept |= as_is, moved |= !as_is;
    }
    if (kept && moved && lt_layout_check(m, x->ndim, x->shape, out) != LT_OK) {
        memcpy(out, tgt, sizeof(lt_placement) * (size_t)m->ndim);
        return 0;
    }
    return kept;
}

lt_status lt__op_check_aligned(const lt_op_plan *p, const lt_dtensor *const *in) {
    lt_op_kind op = p->op;
    if (p->nin != 2 || !(op == LT_OP_ADD || op == LT_OP_SUB || op == LT_OP_MUL || op == LT_OP_DIV ||
                         op == LT_OP_MAXIMUM || op == LT_OP_MINIMUM))
        return LT_OK;
    const lt_dtensor *a = in[0], *b = in[1];
    if (!a->from_local && !b->from_local) return LT_OK;
    /* broadcasting operands are left to propagation */
    if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim))
        return LT_OK;
    const lt_mesh *m = lt_dtensor_mesh(a);
    lt_placement ca[LT_MESH_MAX_DIMS], cb[LT_MESH_MAX_DIMS]; /* as the op consumes a and b */
    int keep_a = consumed(m, a, p->in_target[0], ca), keep_b = consumed(m, b, p->in_target[1], cb);
    if (!(a->from_local && keep_a) && !(b->from_local && keep_b)) return LT_OK;
    for (int r = 0; r < m->world; r++) {
        lt_rank_layout la, lb;
        LT_TRY(lt_layout_rank(m, a->ndim, a->shape, ca, r, &la));
        lt_status st = lt_layout_rank(m, b->ndim, b->shape, cb, r, &lb);
        if (st) {
            lt_rank_layout_free(&la);
            return st;
        }
        for (int d = 0; d < a->ndim && la.lists && !st; d++) {
            if (same_indices(&la, &lb, d)) continue;
            char ra[160], rb[160], pa[128], pb[128];
            fmt_range(&la, d, a->shape[d], ra, sizeof ra);
            fmt_range(&lb, d, b->shape[d], rb, sizeof rb);
            lt_placements_format(ca, m->ndim, pa, sizeof pa);
            lt_placements_format(cb, m->ndim, pb, sizeof pb);
            st = lt__err_code(LT_INVALID, LT_ERR_MISALIGNED,
                              "%s: operands are not aligned on rank %d: input 1 %s holds global "
                              "indices %s of dim %d, "
                              "input 2 %s holds %s; a rank-local %s would combine different "
                              "elements (at least one "
                              "operand comes from from_local, whose shards are used as they are: "
                              "docs/SEMANTICS.md "
                              "§11.6). Give both the same shard sizes, or redistribute one to the "
                              "other's placements "
                              "first",
                              lt_op_name(op), r, pa, ra, d, pb, rb, lt_op_name(op));
        }
        lt_rank_layout_free(&la);
        lt_rank_layout_free(&lb);
        if (st) return st;
    }
    return LT_OK;
}
