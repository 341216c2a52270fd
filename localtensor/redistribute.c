/* localtensor/redistribute.c — the executor: runs a plan step by step.
 *
 * Each step maps every rank's shard of the current state to its shard of the
 * next state, through ONE collective of collectives_sim along the step's mesh
 * dim or through local slicing (see the table in localtensor/redistribute.h).
 * Every intermediate is wrapped as a DTensor (lt__dtensor_wrap checks each
 * shard's shape against layout math) and, with opts->verify, compared with
 * the verifier's direct reshard of the source, so a wrong step is named the
 * moment it produces a wrong state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/layout.h"
#include "localtensor/redistribute.h"

/* ---- local steps ---------------------------------------------------------------- */

/* Piece c of m of t along dim d by rule: a new contiguous tensor. */
static lt_status slice_piece(const lt_tensor *t, int d, const lt_split_rule *rule, int m, int c,
                             lt_tensor **out) {
    int64_t size, off;
    LT_TRY(lt_split_piece(rule, t->shape[d], m, c, &size, &off));
    lt_tensor *v = NULL;
    lt_status st = lt_narrow(t, d, off, size, &v);
    if (!st) st = lt_clone(v, out);
    lt_tensor_free(v);
    return st;
}

/* Member c's strided pick of t along d (SS(d, sf) over m members). */
static lt_status strided_pick(const lt_tensor *t, int d, int sf, int m, int c, lt_tensor **out) {
    int64_t n = t->shape[d];
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!pos) return lt__err(LT_NOMEM, "out of memory");
    int64_t k = lt_split_strided_positions(n, sf, m, c, pos);
    lt_status st = lt_index_select(t, d, pos, k, out);
    free(pos);
    return st;
}

/* The permutation that undoes the order of a strided all_gather of n
 * elements along d: the gathered tensor holds member 0's pick, then member
 * 1's, ...; perm[parent position] = gathered position. *perm is new
 * (caller frees). It depends on (n, sf, m) only, so one serves a group. */
static lt_status unstride_perm(int64_t n, int d, int sf, int m, int64_t **perm) {
    size_t cnt = (size_t)(n ? n : 1);
    int64_t *pos = malloc(sizeof(int64_t) * cnt);
    *perm = malloc(sizeof(int64_t) * cnt);
    if (!pos || !*perm) {
        free(pos);
        free(*perm);
        *perm = NULL;
        return lt__err(LT_NOMEM, "out of memory");
    }
    int64_t q = 0;
    for (int c = 0; c < m; c++) {
        int64_t k = lt_split_strided_positions(n, sf, m, c, pos);
        for (int64_t j = 0; j < k; j++) (*perm)[pos[j]] = q + j;   /* parent position -> gathered */
        q += k;
    }
    free(pos);
    if (q == n) return LT_OK;
    free(*perm);
    *perm = NULL;
    return lt__err(LT_SHAPE, "strided gather: %lld elements gathered along dim %d, the picks cover %lld",
                   (long long)n, d, (long long)q);
}

/* R -> P(op) on mesh dim i: sum divides by the mesh dim size (as distribute). */
static lt_status partition(const lt_tensor *t, const lt_mesh *mesh, int i, lt_redop op, lt_tensor **out) {
    LT_TRY(lt_clone(t, out));
    if (op != LT_REDOP_SUM) return LT_OK;
    lt_placement pl[LT_MESH_MAX_DIMS];
    for (int j = 0; j < mesh->ndim; j++) pl[j] = j == i ? lt_partial(LT_REDOP_SUM) : lt_replicate();
    lt_status st = lt__partition(*out, mesh, pl);
    if (st) {
        lt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* ---- one step -------------------------------------------------------------------- */

static lt_status run_step(lt_comm *comm, const lt_mesh *mesh, const lt_placement *before,
                          const lt_plan_step *ps, lt_tensor *const *in, lt_tensor **out) {
    int i = ps->mesh_dim, m = mesh->shape[i], W = mesh->world;
    const lt_placement *a = &ps->from, *b = &ps->to;
    lt__step_kind k = lt__step_kind_of(mesh, before, i, b);
    lt_status st = LT_OK;
    switch (k) {
    case LT__STEP_ALL_GATHER:
        return lt_all_gather(comm, i, in, a->dim, out);
    case LT__STEP_ALL_REDUCE:
        return lt_all_reduce(comm, i, in, a->op, out);
    case LT__STEP_REDUCE_SCATTER:
        return lt_reduce_scatter(comm, i, in, a->op, b->dim, &b->rule, out);
    case LT__STEP_ALL_TO_ALL:
        return lt_all_to_all(comm, i, in, b->dim, a->dim, &b->rule, out);
    case LT__STEP_GATHER_STRIDED: {
        lt_tensor **g = calloc((size_t)W, sizeof *g);
        if (!g) return lt__err(LT_NOMEM, "out of memory");
        st = lt_all_gather(comm, i, in, a->dim, g);
        int64_t *perm = NULL, pn = -1;   /* (pn) */
        for (int r = 0; r < W && !st; r++) {
            int64_t n = g[r]->shape[a->dim];
            if (n != pn) {
                free(perm);
                st = unstride_perm(n, a->dim, a->split_factor, m, &perm);
                pn = n;
            }
            if (!st) st = lt_index_select(g[r], a->dim, perm, n, &out[r]);
        }
        free(perm);
        for (int r = 0; r < W; r++) lt_tensor_free(g[r]);
        free(g);
        break;
    }
    case LT__STEP_SLICE:
    case LT__STEP_STRIDED_SLICE:
    case LT__STEP_PARTITION:
        for (int r = 0; r < W && !st; r++) {
            int c;
            lt_mesh_group_of(mesh, i, r, &c);
            if (k == LT__STEP_SLICE) st = slice_piece(in[r], b->dim, &b->rule, m, c, &out[r]);
            else if (k == LT__STEP_STRIDED_SLICE) st = strided_pick(in[r], b->dim, b->split_factor, m, c, &out[r]);
            else st = partition(in[r], mesh, i, b->op, &out[r]);
        }
        break;
    default:
        return lt__err(LT_INVALID, "internal: the step is not a single legal step");
    }
    if (st)
        for (int r = 0; r < W; r++) {
            lt_tensor_free(out[r]);
            out[r] = NULL;
        }
    return st;
}

/* ---- redistribute ------------------------------------------------------------------- */

static void step_str(const lt_plan *p, int s, char *buf, size_t n) {
    const lt_plan_step *ps = &p->steps[s];
    char f[128], t[128];
    lt_placement_format(&ps->from, f, sizeof f);
    lt_placement_format(&ps->to, t, sizeof t);
    snprintf(buf, n, "step %d of %d (mesh dim %d: %s -> %s, %s%s%s)", s + 1, p->nsteps, ps->mesh_dim, f, t,
             ps->comm ? ps->collective : "local ", ps->comm && ps->local_op[0] ? " + " : "", ps->local_op);
}

static void run_ctx(const lt_redistribute_opts *o, const lt_plan *p, char *buf, size_t n) {
    char a[512], b[512];
    lt_placements_format(p->src, p->mesh.ndim, a, sizeof a);
    lt_placements_format(p->dst, p->mesh.ndim, b, sizeof b);
    if (o && o->name && o->name[0]) snprintf(buf, n, "redistribute of '%s' %s -> %s", o->name, a, b);
    else snprintf(buf, n, "redistribute of an unnamed tensor %s -> %s", a, b);
}

/* A DTensor whose shards are views of dt's, with placements pl. */
static lt_status view_as(const lt_dtensor *dt, const lt_placement *pl, lt_dtensor **out) {
    lt_local *local;
    LT_TRY(lt_local_new(lt_dtensor_mesh(dt), &local));
    for (int r = 0; r < local->mesh.world; r++) {
        lt_status st = lt_tensor_view(dt->local->shards[r], &local->shards[r]);
        if (st) {
            lt_local_free(local);
            return st;
        }
    }
    return lt__dtensor_wrap(local, dt->dtype, dt->ndim, dt->shape, pl, out);
}

lt_status lt_redistribute(const lt_dtensor *dt, const lt_placement *dst, int np,
                          const lt_redistribute_opts *opts, lt_dtensor **out, lt_plan **planp) {
    const lt_mesh *mesh = lt_dtensor_mesh(dt);
    lt_verify_report local_rep;
    lt_verify_report *rep = opts && opts->report ? opts->report : &local_rep;
    int verify = opts && opts->verify;
    *out = NULL;
    if (planp) *planp = NULL;
    memset(rep, 0, sizeof *rep);
    rep->step = rep->mesh_dim = rep->rank = -1;
    lt_plan *plan;
    LT_TRY(lt_plan_redistribute(mesh, dt->dtype, dt->ndim, dt->shape, dt->placements, dst, np, opts, &plan));
    char ctx[1200], sd[400];   /* context, formatted only on error */
    lt_comm *comm = opts ? opts->comm : NULL, *own = NULL;
    lt_status st = LT_OK;
    if (comm && !lt_mesh_equal(lt_comm_mesh(comm), mesh)) {
        char a[128], b[128];
        lt_mesh_str(lt_comm_mesh(comm), a, sizeof a);
        lt_mesh_str(mesh, b, sizeof b);
        run_ctx(opts, plan, ctx, sizeof ctx);
        st = lt__err(LT_INVALID, "%s: the communicator's mesh %s is not the tensor's mesh %s", ctx, a, b);
    } else if (!comm && plan->ncomm) {
        st = lt_comm_new(mesh, &own);
        comm = own;
    }
    const lt_dtensor *cur = dt;
    lt_dtensor *owned = NULL;
    int M = mesh->ndim;
    /* every step holds its input and its output at once */
    uint64_t prev = 0, next = 0;
    size_t es = lt_dtype_size(dt->dtype);
    if (!st) st = lt_layout_total_bytes(mesh, dt->ndim, dt->shape, dt->placements, es, &prev);
    for (int s = 0; s < plan->nsteps && !st; s++) {
        st = lt_layout_total_bytes(mesh, dt->ndim, dt->shape, plan->steps[s].after, es, &next);
        if (!st) st = lt_check_memory(prev + next, mesh->world, "a step of this redistribute");
        prev = next;
    }
    if (st) {
        run_ctx(opts, plan, ctx, sizeof ctx);
        st = lt__err_ctx(st, "%s", ctx);
    }
    for (int s = 0; s < plan->nsteps && !st; s++) {
        const lt_plan_step *ps = &plan->steps[s];
        const lt_placement *before = plan->states_ + (size_t)s * (size_t)M;
        lt_local *local = NULL;
        lt_dtensor *nx = NULL;
        st = lt_local_new(mesh, &local);
        if (!st) st = run_step(comm, mesh, before, ps, cur->local->shards, local->shards);
        if (!st) st = lt__dtensor_wrap(local, dt->dtype, dt->ndim, dt->shape, ps->after, &nx);
        else lt_local_free(local);
        if (st) {
            step_str(plan, s, sd, sizeof sd);
            run_ctx(opts, plan, ctx, sizeof ctx);
            st = lt__err_ctx(st, "%s: %s", ctx, sd);
            break;
        }
        lt_dtensor_free(owned);
        cur = owned = nx;
        if (verify) {
            st = lt_verify_reshard(dt, nx, s, rep);
            if (st) {
                step_str(plan, s, sd, sizeof sd);
                run_ctx(opts, plan, ctx, sizeof ctx);
                /* only a mismatch is a failed verification; anything else kept it from running */
                const char *what = st == LT_MISMATCH ? "verification failed" : "could not verify";
                if (st == LT_MISMATCH && rep->step < 0)
                    st = lt__err_ctx(st, "%s: %s", ctx, what);
                else
                    st = lt__err_ctx(st, "%s: %s after %s", ctx, what, sd);
                if (rep->step >= 0) rep->mesh_dim = ps->mesh_dim;
                snprintf(rep->message, sizeof rep->message, "%s", lt_errmsg());
            }
        }
    }
    if (!st && plan->nsteps == 0) {
        st = view_as(dt, plan->dst, &owned);
        if (!st && verify) {
            st = lt_verify_reshard(dt, owned, -1, rep);
            if (st) {
                run_ctx(opts, plan, ctx, sizeof ctx);
                st = lt__err_ctx(st, "%s: %s", ctx, st == LT_MISMATCH ? "verification failed" : "could not verify");
                snprintf(rep->message, sizeof rep->message, "%s", lt_errmsg());
            }
        }
    }
    lt_comm_free(own);
    if (st) {
        lt_dtensor_free(owned);
        if (planp) *planp = plan;
        else lt_plan_free(plan);
        return st;
    }
    *out = owned;
    if (planp) *planp = plan;
    else lt_plan_free(plan);
    return LT_OK;
}

lt_status lt_full_tensor(const lt_dtensor *dt, lt_tensor **out) {
    lt_placement r[LT_MESH_MAX_DIMS];
    const lt_mesh *mesh = lt_dtensor_mesh(dt);
    *out = NULL;
    for (int i = 0; i < mesh->ndim; i++) r[i] = lt_replicate();
    lt_dtensor *rep;
    LT_TRY(lt_redistribute(dt, r, mesh->ndim, NULL, &rep, NULL));
    lt_status st = lt_tensor_view(rep->local->shards[0], out);   /* keeps the storage alive */
    lt_dtensor_free(rep);
    return st;
}
