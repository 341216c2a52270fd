/* localtensor/ragged_plan.c — redistribute with a RaggedShard through the
 * ordinary planner (docs/SEMANTICS.md §11.10). When both sides can be
 * written in one view — the tensor with dims 0..K-1 flattened, K the
 * largest k of the RaggedShards on either side (localtensor/ragged.c's
 * view rule) — the pair is an ordinary explicit-sizes problem on the view:
 * the source's shards are reshaped to the view (no copy), lt_redistribute
 * plans and runs it with the caller's options, and the result and the plan
 * are spelled back with the tensor's shape and placements. Its plans are
 * min-cost because the view problem is an ordinary explicit-sizes one,
 * which test/test_planner.c's brute force covers. The pairs that cannot
 * share a view, that the planner rejects, or (min-cost, no Partial) that
 * the exchange serves with fewer bytes take localtensor/ragged_redist.c's
 * exchange. */
#include "localtensor/ragged_impl.h"

#include <stdio.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/layout.h"
#include "localtensor/plan/plan_impl.h"

/* The largest k of the RaggedShards in a[np] and b[np] (1 when none). */
static int common_k(const lt_placement *a, const lt_placement *b, int np) {
    int k = 1;
    for (int i = 0; i < np; i++) {
        if (a[i].kind == LT_PL_RAGGED && a[i].dim > k) k = a[i].dim;
        if (b[i].kind == LT_PL_RAGGED && b[i].dim > k) k = b[i].dim;
    }
    return k;
}

void lt__ragged_spell(const lt_ragged_view *sv, const lt_placement *stp, const lt_ragged_view *dv,
                      const lt_placement *dtp, const lt_placement *vp, int np,
                      lt_placement *out) {
    for (int i = 0; i < np; i++) {
        out[i] = vp[i];
        if (i == sv->mesh_dim && lt_placement_equal(&vp[i], &sv->pl[i])) out[i] = stp[i];
        else if (i == dv->mesh_dim && lt_placement_equal(&vp[i], &dv->pl[i])) out[i] = dtp[i];
        else if (lt_placement_is_shard_like(&vp[i]) && vp[i].dim >= 1) out[i].dim += sv->k - 1;
    }
}

/* A plan state vp[np] of the k-view spelled for the tensor of shape
 * (ndim) into out: lt__ragged_spell's spelling when its view is vp again
 * (a RaggedShard stands for its explicit sizes only in the layout it came
 * from), else vp with only the dims of Shard-likes renumbered. */
static void spell_state(const lt_mesh *mesh, int ndim, const int64_t *shape,
                        const lt_ragged_view *sv, const lt_placement *stp,
                        const lt_ragged_view *dv, const lt_placement *dtp,
                        const lt_placement *vp, lt_placement *out) {
    int np = mesh->ndim, ok = 0;
    lt_placement norm[LT_MESH_MAX_DIMS];
    lt_ragged_view back;
    lt__ragged_spell(sv, stp, dv, dtp, vp, np, out);
    if (!lt_placements_check(mesh, ndim, out, np, norm) &&
        !lt__ragged_view_k(mesh, ndim, shape, norm, sv->k, &back, &ok) && ok &&
        lt_placements_equal(back.pl, vp, np))
        return;
    lt_ragged_view none = *sv;
    none.mesh_dim = -1;
    lt__ragged_spell(&none, stp, &none, dtp, vp, np, out);
}

/* The view plan vp (its reference taken: kept as the new plan's part)
 * spelled for dt's tensor and the destination norm, into *out (new). */
static lt_status relabel_plan(lt_plan *vp, const lt_dtensor *dt, const lt_placement *norm,
                              const lt_ragged_view *sv, const lt_ragged_view *dv,
                              lt_plan **out) {
    const lt_mesh *mesh = lt_dtensor_mesh(dt);
    int np = mesh->ndim, n = vp->nsteps;
    lt__plan_head h = {&vp->mesh, vp->dtype, dt->ndim, dt->shape, dt->placements, norm,
                       vp->planner};
    lt_plan *p = lt__plan_new(&h, n, 0, 0, "the RaggedShard plan");
    if (!p) {
        lt_plan_free(vp);
        return LT_NOMEM;
    }
    lt__plan_x *px = lt__plan_x_of(p);
    px->parts[0] = vp;   /* the steps' moves point into it */
    p->ncomm = vp->ncomm;
    p->total_bytes = vp->total_bytes;
    p->states_explored = vp->states_explored;
    p->search_truncated = vp->search_truncated;
    for (int s = 0; s < n; s++) {
        lt_placement *before = px->states + (size_t)s * (size_t)np, *after = before + np;
        if (s == n - 1) memcpy(after, norm, sizeof(lt_placement) * (size_t)np);
        else spell_state(mesh, dt->ndim, dt->shape, sv, dt->placements, dv, norm,
                         vp->steps[s].after, after);
        p->steps[s] = vp->steps[s];
        p->steps[s].from = before[vp->steps[s].mesh_dim];
        p->steps[s].to = after[vp->steps[s].mesh_dim];
        p->steps[s].after = after;
    }
    *out = p;
    return LT_OK;
}

/* dt's shards reshaped to the local shapes of spec vs (views when their
 * strides allow: the storage is dt's) as *out (new; free with
 * lt_dtensor_free, which leaves dt's shards alone). */
static lt_status view_dtensor(const lt_dtensor *dt, const lt_spec *vs, lt_dtensor **out) {
    lt_local *local = NULL;
    LT_TRY(lt_local_new(lt_dtensor_mesh(dt), &local));
    for (int r = 0; r < local->mesh.world; r++) {
        int64_t ls[LT_MAX_DIMS];
        lt_status st = lt_spec_local_shape(vs, r, ls, NULL);
        if (!st) st = lt_reshape(dt->local->shards[r], vs->ndim, ls, &local->shards[r]);
        if (st) {
            lt_local_free(local);
            return st;
        }
    }
    LT_TRY(lt__dtensor_wrap(local, vs, out));
    (*out)->from_local = dt->from_local;
    return LT_OK;
}

/* b (the view's result) made the tensor's: each shard reshaped to the local
 * shape of (ndim, shape, norm) (in place), then relabelled. */
static lt_status unview(lt_dtensor *b, int ndim, const int64_t *shape, const lt_placement *norm) {
    const lt_mesh *mesh = lt_dtensor_mesh(b);
    for (int r = 0; r < mesh->world; r++) {
        int64_t ls[LT_MAX_DIMS];
        int lnd;
        lt_tensor *t = NULL;
        LT_TRY(lt_ragged_local_shape(mesh, ndim, shape, norm, mesh->ndim, r, &lnd, ls, NULL,
                                     NULL));
        LT_TRY(lt_reshape(b->local->shards[r], lnd, ls, &t));
        lt_tensor_free(b->local->shards[r]);
        b->local->shards[r] = t;
    }
    lt__ragged_relabel(b, ndim, shape, norm);
    return LT_OK;
}

/* 1 when every shard of dt is held here with its values. */
static int all_held(const lt_dtensor *dt) {
    for (int r = 0; r < dt->local->mesh.world; r++)
        if (!dt->local->shards[r] || dt->local->shards[r]->absent) return 0;
    return 1;
}

/* 1 when pl[np] has a Partial. */
static int has_partial(const lt_placement *pl, int np) {
    for (int i = 0; i < np; i++)
        if (pl[i].kind == LT_PL_PARTIAL) return 1;
    return 0;
}

/* *take = 1 when the view pair vs -> dpl goes through the planner: it
 * plans the pair (a rejection, such as SS(d) -> P(sum), leaves the
 * exchange, which takes any pair) and, for min-cost without Partial, its
 * plan costs no more than the exchange under the objective bytes or
 * max-rank-bytes (the exchange's bytes are the lower bound of both there:
 * docs/SEMANTICS.md §11.10; for time, greedy, or with Partial the
 * planner's plan is taken). */
static lt_status planner_takes(const lt_spec *vs, const lt_placement *dpl,
                               const lt_redistribute_opts *opts, int *take) {
    int np = vs->mesh->ndim;
    lt_plan *vp = NULL;
    lt_objective obj = opts && opts->cost ? opts->cost->objective : LT_OBJECTIVE_BYTES;
    lt_spec ds;
    size_t total, max;
    *take = 0;
    lt_status st = lt__plan_redistribute_from(vs, dpl, np, opts, &vp);
    if (st == LT_UNSUPPORTED) return LT_OK;
    LT_TRY(st);
    *take = 1;
    int greedy = opts && opts->planner == LT_PLANNER_GREEDY;   /* PyTorch's order: as planned */
    if (greedy || obj == LT_OBJECTIVE_TIME || has_partial(vs->placements, np) ||
        has_partial(dpl, np)) {
        lt_plan_free(vp);
        return LT_OK;
    }
    st = lt_spec_init(vs->mesh, vs->dtype, vs->ndim, vs->shape, dpl, np, &ds);
    if (!st) st = lt__ragged_lack_bytes(vs, &ds, &total, &max);
    if (!st && obj == LT_OBJECTIVE_BYTES) *take = vp->total_bytes <= total;
    if (!st && obj == LT_OBJECTIVE_MAX_RANK_BYTES) *take = lt_plan_max_rank_bytes(vp) <= max;
    lt_plan_free(vp);
    return st;
}

lt_status lt__ragged_view_route(const lt_dtensor *dt, const lt_placement *norm,
                                const lt_redistribute_opts *opts, lt_dtensor **out,
                                lt_plan **plan, int *done) {
    const lt_mesh *mesh = lt_dtensor_mesh(dt);
    int np = mesh->ndim, k = common_k(dt->placements, norm, np), oks = 0, okd = 0;
    lt_ragged_view sv, dv;
    lt_spec vs;
    *done = 0;
    LT_TRY(lt__ragged_view_k(mesh, dt->ndim, dt->shape, dt->placements, k, &sv, &oks));
    LT_TRY(lt__ragged_view_k(mesh, dt->ndim, dt->shape, norm, k, &dv, &okd));
    if (!oks || !okd || !all_held(dt)) return LT_OK;
    lt_dtensor *va = NULL, *vb = NULL;
    lt_plan *vp = NULL;
    LT_TRY(lt_spec_init(mesh, dt->dtype, sv.ndim, sv.shape, sv.pl, np, &vs));
    int take = 0;
    LT_TRY(planner_takes(&vs, dv.pl, opts, &take));
    if (!take) return LT_OK;
    *done = 1;
    LT_TRY(view_dtensor(dt, &vs, &va));
    lt_status st = lt_redistribute(va, dv.pl, np, opts, &vb, plan ? &vp : NULL);
    lt_dtensor_free(va);
    if (!st) st = unview(vb, dt->ndim, dt->shape, norm);
    if (st == LT_MISMATCH) {
        char sh[96];
        st = lt__err_ctx_in(st, "redistribute", " (the RaggedShard route, planned on the view "
                            "of shape %s)", lt_shape_format(sv.ndim, sv.shape, sh, sizeof sh));
        if (opts && opts->report)
            snprintf(opts->report->message, sizeof opts->report->message, "%s", lt_errmsg());
    }
    if (vp && (!st || st == LT_MISMATCH)) {
        lt_status ps = relabel_plan(vp, dt, norm, &sv, &dv, plan);
        st = st ? st : ps;
    } else {
        lt_plan_free(vp);
    }
    if (st) {
        lt_dtensor_free(vb);
        if (plan && st != LT_MISMATCH) lt_plan_free(*plan), *plan = NULL;
        return st;   /* a failed check keeps the plan, as lt_redistribute does */
    }
    *out = vb;
    return LT_OK;
}
