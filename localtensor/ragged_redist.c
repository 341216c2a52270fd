/* localtensor/ragged_redist.c — redistribute to or from a RaggedShard
 * (docs/SEMANTICS.md §11.10). A pair whose sides share a view goes through
 * the ordinary planner there (localtensor/ragged_plan.c); this file holds
 * the generic route every other pair takes: a side that cannot be written
 * in the common view (a Shard of a flattened dim d < K when K > 1), a pair
 * the planner rejects (SS(d) -> P(sum), ...), a source with shards held by
 * other processes, and a pair without Partial whose min-cost view plan
 * moves more bytes than this route's exchange (its lower bound: the
 * planner's moves are collectives, the exchange is not). The route, in three
 * parts on the views (localtensor/ragged.h): Partial source dims are
 * reduced first by an ordinary redistribute (P -> R); then one
 * point-to-point exchange over the whole mesh gives each rank exactly the
 * elements of its destination shard that its source shard lacks, each from
 * the lowest rank that holds it (recorded in the comm's trace as one
 * all_to_all over the whole mesh: mesh_dim 0, groups of every rank); last,
 * Partial destination dims are made by an ordinary redistribute (R -> P).
 * The route is returned as one plan (its parts' steps around the exchange
 * step, spelled with the tensor's placements) and, with opts->verify, its
 * result is checked by the verifier (localtensor/verify.h) against the
 * source's full tensor. */
#include "localtensor/ragged_impl.h"

#include <string.h>

#include "collectives_sim/trace_impl.h"
#include "kernels/alloc.h"
#include "localtensor/kernels/backend.h"
#include "kernels/status_impl.h"
#include "kernels/tensor_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/layout.h"
#include "localtensor/plan/plan_impl.h"

/* The flat index (in the tensor; a view's equals the tensor's) of each
 * element of rank r's shard under checked spec s, in local row-major order:
 * *out (*n entries; caller frees with lt__free; NULL when *n is 0). */
static lt_status flat_list(const lt_spec *s, int r, int64_t **out, int64_t *n) {
    lt_rank_layout l;
    int64_t st[LT_MAX_DIMS], j[LT_MAX_DIMS] = {0};
    *out = NULL;
    LT_TRY(lt_spec_layout_rank(s, r, &l));
    *n = l.lists ? lt__numel_sat(s->ndim, l.local_shape) : 0;
    if (*n == 0) {
        lt_rank_layout_free(&l);
        return LT_OK;
    }
    lt_contiguous_strides(s->ndim, s->shape, st);
    int64_t *g = lt__malloc(sizeof(int64_t) * (size_t)*n);   /* (n) */
    if (!g) {
        lt_rank_layout_free(&l);
        return lt__err(LT_NOMEM, "out of memory for rank %d's index list", r);
    }
    for (int64_t e = 0; e < *n; e++) {
        int64_t f = 0;
        for (int d = 0; d < s->ndim; d++) f += (l.idx[d] ? l.idx[d][j[d]] : j[d]) * st[d];
        g[e] = f;
        for (int d = s->ndim - 1; d >= 0; d--) {   /* the next local index, row-major */
            if (++j[d] < l.local_shape[d]) break;
            j[d] = 0;
        }
    }
    lt_rank_layout_free(&l);
    *out = g;
    return LT_OK;
}

lt_status lt__ragged_lack_bytes(const lt_spec *src, const lt_spec *dst, size_t *total,
                                size_t *max) {
    int64_t N = lt__numel_sat(dst->ndim, dst->shape);
    size_t es = lt_dtype_size(dst->dtype);
    *total = *max = 0;
    unsigned char *have = lt__calloc(N ? (size_t)N : 1, 1);   /* (N) held by the rank */
    if (!have) return lt__err(LT_NOMEM, "out of memory for the RaggedShard exchange's bytes");
    lt_status st = LT_OK;
    for (int r = 0; !st && r < src->mesh->world; r++) {
        int64_t *a = NULL, *b = NULL, na = 0, nb = 0;
        size_t lack = 0;
        st = flat_list(src, r, &a, &na);
        if (!st) st = flat_list(dst, r, &b, &nb);
        for (int64_t j = 0; !st && j < na; j++) have[a[j]] = 1;
        for (int64_t j = 0; !st && j < nb; j++) lack += have[b[j]] ? 0 : es;
        for (int64_t j = 0; !st && j < na; j++) have[a[j]] = 0;
        lt__free(a);
        lt__free(b);
        *total += lack;
        if (lack > *max) *max = lack;
    }
    lt__free(have);
    return st;
}

/* The exchange's working state: for each flat index the lowest source rank
 * holding it and where, and the source shards' bytes. */
typedef struct xchg {
    const lt_spec *src, *dst;
    int W;
    size_t es;
    int64_t N;
    int *holder;                  /* (N) lowest source rank holding the element */
    int64_t *hpos;                /* (N) its position in that rank's shard */
    int64_t *where;               /* (N) position in the current rank's source shard, or -1 */
    lt_tensor **sc;               /* (W) contiguous host copies (or views) of the source
                                   * shards (owned) */
    const lt_backend *be;         /* where the source shards live: the new ones go there */
    size_t *sent, *recv;          /* (W) bytes each rank sent / received from others */
} xchg;

/* Frees what xchg_init allocated in x (not x itself). */
static void xchg_free(xchg *x) {
    for (int r = 0; x->sc && r < x->W; r++) lt_tensor_free(x->sc[r]);
    lt__free(x->sc);
    lt__free(x->holder);
    lt__free(x->hpos);
    lt__free(x->where);
    lt__free(x->sent);
    lt__free(x->recv);
}

/* Allocates x's arrays and fills holder/hpos from the source shards of a. */
static lt_status xchg_init(xchg *x, const lt_dtensor *a) {
    size_t N = (size_t)x->N ? (size_t)x->N : 1;
    x->holder = lt__malloc(sizeof(int) * N);
    x->hpos = lt__malloc(sizeof(int64_t) * N);
    x->where = lt__malloc(sizeof(int64_t) * N);
    x->sc = lt__calloc((size_t)x->W, sizeof(lt_tensor *));
    x->sent = lt__calloc((size_t)x->W, sizeof(size_t));
    x->recv = lt__calloc((size_t)x->W, sizeof(size_t));
    if (!x->holder || !x->hpos || !x->where || !x->sc || !x->sent || !x->recv)
        return lt__err(LT_NOMEM, "out of memory for the RaggedShard exchange");
    for (int64_t g = 0; g < x->N; g++) x->holder[g] = -1;
    for (int r = 0; r < x->W; r++) {
        const lt_tensor *t = a->local->shards[r];
        lt_tensor *h = NULL;
        if (!t || t->absent)
            return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                                "not supported yet: a RaggedShard redistribute of a DTensor whose "
                                "shard of rank %d is not held here", r);
        x->be = lt__backend_of(t);
        LT_TRY(lt__host_copy_out(t, &h));
        lt_status st = lt_contiguous(h, &x->sc[r]);
        lt_tensor_free(h);
        LT_TRY(st);
        int64_t *g, n;
        LT_TRY(flat_list(x->src, r, &g, &n));
        for (int64_t j = 0; j < n; j++)
            if (x->holder[g[j]] < 0) {
                x->holder[g[j]] = r;
                x->hpos[g[j]] = j;
            }
        lt__free(g);
    }
    for (int64_t g = 0; g < x->N; g++)
        if (x->holder[g] < 0)
            return lt__err(LT_INVALID, "RaggedShard exchange: no rank holds element %lld",
                           (long long)g);
    return LT_OK;
}

/* Rank r's destination shard into *out (new, contiguous): its own source
 * elements copied locally, the rest received from their holders. */
static lt_status xchg_rank(xchg *x, int r, lt_tensor **out) {
    int64_t ls[LT_MAX_DIMS], *g = NULL, *mine = NULL, n = 0, nm = 0;
    LT_TRY(lt_spec_local_shape(x->dst, r, ls, NULL));
    LT_TRY(lt_tensor_new_on(lt_backend_cpu(), x->dst->dtype, x->dst->ndim, ls, out));
    lt_status st = flat_list(x->src, r, &mine, &nm);
    if (!st) st = flat_list(x->dst, r, &g, &n);
    if (!st) {
        for (int64_t j = 0; j < nm; j++) x->where[mine[j]] = j;
        unsigned char *o = lt_data(*out);   /* (n * es) */
        for (int64_t j = 0; j < n; j++) {
            int64_t f = g[j], w = x->where[f];
            const unsigned char *src;
            if (w >= 0) {
                src = (const unsigned char *)lt_data(x->sc[r]) + (size_t)w * x->es;
            } else {
                int h = x->holder[f];
                src = (const unsigned char *)lt_data(x->sc[h]) + (size_t)x->hpos[f] * x->es;
                x->sent[h] += x->es;
                x->recv[r] += x->es;
            }
            memcpy(o + (size_t)j * x->es, src, x->es);
        }
        for (int64_t j = 0; j < nm; j++) x->where[mine[j]] = -1;
    }
    lt__free(mine);
    lt__free(g);
    if (!st && x->be != lt__backend_of(*out)) {   /* back where the source lives */
        lt_tensor *d = NULL;
        st = lt_tensor_new_on(x->be, x->dst->dtype, x->dst->ndim, ls, &d);
        if (!st) st = lt_copy(d, *out);
        lt_tensor_free(*out);
        *out = d;
    }
    if (st) {
        lt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* Records the exchange's bytes in comm's trace (when it has one, enabled):
 * one all_to_all over the whole mesh (mesh dim 0, one group of every rank,
 * as a flattened collective over all mesh dims is recorded). */
static lt_status xchg_trace(const xchg *x, lt_comm *comm) {
    lt_trace *t = comm ? lt_comm_trace(comm) : NULL;
    size_t *sent, *recv;
    if (!t || !lt_trace_enabled(t)) return LT_OK;
    LT_TRY(lt__trace_reserve(t));
    if (!lt__trace_record(t, LT_COLL_ALL_TO_ALL, 0, 1, x->W, x->dst->dtype, &sent, &recv))
        return LT_OK;
    memcpy(sent, x->sent, sizeof(size_t) * (size_t)x->W);
    memcpy(recv, x->recv, sizeof(size_t) * (size_t)x->W);
    lt__trace_set_args(t, -1, -1, -1, -1);
    lt__trace_commit(t);
    return LT_OK;
}

/* What the exchange received: the most one rank did, and all ranks together
 * (bytes). */
typedef struct xchg_bytes {
    size_t max, total;
} xchg_bytes;

/* The exchange: a (source view, no Partial) into a new DTensor of checked
 * spec dst (no Partial; same elements); its bytes received into *xb. */
static lt_status exchange(const lt_dtensor *a, const lt_spec *dst, lt_comm *comm,
                          lt_dtensor **out, xchg_bytes *xb) {
    xchg x;
    memset(&x, 0, sizeof x);
    x.src = lt_dtensor_spec(a);
    x.dst = dst;
    x.W = lt_dtensor_mesh(a)->world;
    x.es = lt_dtype_size(dst->dtype);
    x.N = lt__numel_sat(dst->ndim, dst->shape);
    lt_local *local = NULL;
    uint64_t bytes;   /* the new shards and the exchange's index arrays */
    LT_TRY(lt_spec_total_bytes(dst, &bytes));
    LT_TRY(lt_check_memory(bytes + (uint64_t)x.N * 20, x.W, "the RaggedShard exchange"));
    lt_status st = xchg_init(&x, a);
    if (!st) {
        for (int64_t g = 0; g < x.N; g++) x.where[g] = -1;
        st = lt_local_new(lt_dtensor_mesh(a), &local);
    }
    for (int r = 0; !st && r < x.W; r++) st = xchg_rank(&x, r, &local->shards[r]);
    if (!st) st = xchg_trace(&x, comm);
    for (int r = 0; !st && r < x.W; r++) {
        xb->total += x.recv[r];
        if (x.recv[r] > xb->max) xb->max = x.recv[r];
    }
    xchg_free(&x);
    if (st) {
        lt_local_free(local);
        return st;
    }
    return lt__dtensor_wrap(local, dst, out);
}

/* pl[np] with every Partial made Replicate, into out; 1 when any was. */
static int without_partials(const lt_placement *pl, int np, lt_placement *out) {
    int any = 0;
    for (int i = 0; i < np; i++) {
        out[i] = pl[i].kind == LT_PL_PARTIAL ? lt_replicate() : pl[i];
        any |= pl[i].kind == LT_PL_PARTIAL;
    }
    return any;
}

/* ---- the route as a plan -------------------------------------------------------- */

/* The tensor's spelling of placements vp[np] of the view v whose tensor
 * placements are tp, into out: the view's explicit Shard(0) on the
 * RaggedShard's mesh dim is tp's RaggedShard, a Shard-like of view dim
 * d >= 1 is of tensor dim d + k - 1. What the tensor cannot spell (the
 * flattened rows cut another way when k > 1) keeps the view's spelling. */
static void tensor_spelling(const lt_ragged_view *v, const lt_placement *tp, const lt_placement *vp,
                            int np, lt_placement *out) {
    lt__ragged_spell(v, tp, v, tp, vp, np, out);
}

/* The route's parts: the plan that reduced the source's Partial dims and
 * the one that made the destination's (each NULL when there was none; the
 * references are the route plan's to keep or drop), the exchange's bytes,
 * and the two views. */
typedef struct route {
    lt_plan *part[2];
    xchg_bytes xb;
    lt_ragged_view sv, dv;
    int nbefore;               /* steps before the exchange */
} route;

/* Copies step s of part into *to with the states st[np] before and
 * after[np] after it. */
static void copy_step(const lt_plan_step *s, const lt_placement *before, const lt_placement *after,
                      lt_plan_step *to) {
    *to = *s;
    to->from = before[s->mesh_dim];
    to->to = after[s->mesh_dim];
    to->after = after;
}

/* The states and steps of the route plan px (nsteps allocated): src ->
 * part 0's steps -> the exchange -> part 1's steps -> dstn. */
static void route_steps(const route *ro, const lt_placement *src, const lt_placement *dstn,
                        int np, lt__plan_x *px) {
    lt_plan *p = &px->pub;
    lt_placement *states = px->states;   /* (nsteps + 1, np) */
    int s = 0;
    memcpy(states, src, sizeof(lt_placement) * (size_t)np);
    for (int q = 0; q < 2; q++) {
        const lt_plan *part = ro->part[q];
        const lt_ragged_view *v = q ? &ro->dv : &ro->sv;
        const lt_placement *tp = q ? dstn : src;
        if (q) {   /* the exchange: to the destination with Replicate for its Partial dims */
            lt_placement *after = states + (size_t)(s + 1) * (size_t)np;
            without_partials(dstn, np, after);
            lt_plan_step *x = &p->steps[s];
            memset(x, 0, sizeof *x);
            x->mesh_dim = 0;
            x->mesh_span = np > 1 ? np : 0;
            x->from = states[(size_t)s * (size_t)np];
            x->to = after[0];
            x->comm = 1;
            x->coll = LT_COLL_ALL_TO_ALL;
            x->collective = lt_coll_name(LT_COLL_ALL_TO_ALL);
            x->local_op = "";
            x->bytes_per_rank = ro->xb.max;
            x->bytes_total = ro->xb.total;
            x->after = after;
            s++;
        }
        for (int j = 0; part && j < part->nsteps; j++, s++) {
            lt_placement *after = states + (size_t)(s + 1) * (size_t)np;
            tensor_spelling(v, tp, part->steps[j].after, np, after);
            copy_step(&part->steps[j], states + (size_t)s * (size_t)np, after, &p->steps[s]);
        }
    }
}

/* The route as one plan (*out, new; lt_plan_free releases it and its parts,
 * whose references it takes over: ro->part[] is cleared). */
static lt_status route_plan(route *ro, const lt_dtensor *dt, const lt_placement *dstn,
                            lt_planner planner, lt_plan **out) {
    int np = lt_dtensor_mesh(dt)->ndim, n = 1;
    for (int q = 0; q < 2; q++) n += ro->part[q] ? ro->part[q]->nsteps : 0;
    lt__plan_head h = {lt_dtensor_mesh(dt), dt->dtype, dt->ndim, dt->shape, dt->placements,
                       dstn, planner};
    lt_plan *p = lt__plan_new(&h, n, 0, 0, "the RaggedShard route's plan");
    if (!p) return LT_NOMEM;
    lt__plan_x *px = lt__plan_x_of(p);
    route_steps(ro, dt->placements, dstn, np, px);
    for (int s = 0; s < n; s++) {
        p->ncomm += p->steps[s].comm;
        p->total_bytes += p->steps[s].bytes_total;
    }
    for (int q = 0; q < 2; q++) {
        if (ro->part[q]) p->search_truncated |= ro->part[q]->search_truncated;
        px->parts[q] = ro->part[q];
        ro->part[q] = NULL;
    }
    *out = p;
    return LT_OK;
}

/* ---- verification ------------------------------------------------------------------ */

/* Checks the source dt (its replicas agree), then b (the destination's
 * view) against dt's full tensor
 * (lt_full_tensor_direct: Partial dims reduced, never the collectives)
 * distributed as b: the verifier's lt_verify_reshard of that full tensor,
 * replicated on b's view, to b's placements. rep (may be NULL) is filled
 * with step `step` (the exchange's, or the last). */
static lt_status verify_route(const lt_dtensor *dt, const lt_dtensor *b, int step,
                              lt_verify_report *rep) {
    lt_placement rp[LT_MESH_MAX_DIMS];
    lt_tensor *full = NULL, *fv = NULL;
    lt_dtensor *ref = NULL, sv;
    const lt_mesh *mesh = lt_dtensor_mesh(dt);
    for (int i = 0; i < mesh->ndim; i++) rp[i] = lt_replicate();
    /* the source first: its replicas must agree (step -1), as on every route */
    if (lt_placements_have_ragged(dt->placements, mesh->ndim)) LT_TRY(lt__ragged_as_view(dt, &sv));
    else sv = *dt;
    LT_TRY(lt_verify_reshard(&sv, &sv, -1, rep));
    lt_status st = lt_full_tensor_direct(dt, &full);
    if (!st) st = lt_reshape(full, b->ndim, b->shape, &fv);
    if (!st) st = lt_distribute(mesh, fv, rp, mesh->ndim, &ref);
    if (!st) st = lt_verify_reshard(ref, b, step, rep);
    lt_dtensor_free(ref);
    lt_tensor_free(fv);
    lt_tensor_free(full);
    return st;
}

/* ---- the route ----------------------------------------------------------------------- */

/* The source view of dt with its Partial dims reduced: *a is dt's view
 * (borrowed, *owned NULL) or a new DTensor (*owned = it); the reducing
 * plan into *part (NULL when none). */
static lt_status reduce_source(const lt_dtensor *dt, const lt_redistribute_opts *o,
                               lt_dtensor *a, lt_dtensor **owned, lt_plan **part) {
    lt_placement nop[LT_MESH_MAX_DIMS];
    int np = lt_dtensor_mesh(dt)->ndim;
    *owned = NULL;
    *part = NULL;
    if (lt_placements_have_ragged(dt->placements, np)) LT_TRY(lt__ragged_as_view(dt, a));
    else *a = *dt;
    if (!without_partials(a->placements, np, nop)) return LT_OK;
    LT_TRY(lt_redistribute(a, nop, np, o, owned, part));
    *a = **owned;
    return LT_OK;
}

/* A part's failed verification in the caller's report, its step counted
 * in the route plan (first: the part's first step there). */
static void part_report(const lt_verify_report *sub, int first, lt_verify_report *rep) {
    if (!rep) return;
    *rep = *sub;
    if (rep->step >= 0) rep->step += first;
}

/* The exchange and the destination's Partial dims: b (new) from the
 * reduced source view a, into the destination view's placements dv->pl. */
static lt_status exchange_to(const lt_dtensor *a, const lt_spec *ds, const lt_ragged_view *dv,
                             lt_redistribute_opts *o, route *ro, lt_dtensor **b,
                             lt_verify_report *rep) {
    lt_verify_report sub;
    int np = lt_dtensor_mesh(a)->ndim;
    LT_TRY(exchange(a, ds, o->comm, b, &ro->xb));
    lt_placement nop[LT_MESH_MAX_DIMS];
    if (!without_partials(dv->pl, np, nop)) return LT_OK;
    lt_dtensor *c = NULL;
    o->report = &sub;
    lt_status st = lt_redistribute(*b, dv->pl, np, o, &c, &ro->part[1]);
    o->report = NULL;
    if (st == LT_MISMATCH) part_report(&sub, ro->nbefore + 1, rep);
    lt_dtensor_free(*b);
    *b = c;
    return st;
}

/* Fills the caller's report (when set) of a route that was not verified
 * as lt_redistribute does (checked 0), or that passed without a report of
 * its own. */
static void report_unchecked(lt_verify_report *rep) {
    if (!rep) return;
    memset(rep, 0, sizeof *rep);
    rep->step = rep->mesh_dim = rep->rank = -1;
}

/* The route's verification and plan after b is made (st: how far it got):
 * b checked when verify (step: the route's last), the plan made when asked;
 * on a failed check the plan is still given (as lt_redistribute does). */
static lt_status route_finish(lt_status st, route *ro, const lt_dtensor *dt,
                              const lt_placement *norm, const lt_redistribute_opts *o,
                              int verify, lt_dtensor *b, lt_verify_report *rep, lt_plan **plan) {
    int nsteps = 1 + (ro->part[0] ? ro->part[0]->nsteps : 0) +
                 (ro->part[1] ? ro->part[1]->nsteps : 0);
    if (!st && verify) {
        st = verify_route(dt, b, nsteps - 1, rep);
        if (rep && rep->step >= 0)   /* the exchange's mesh dim 0, or part 1's last step's */
            rep->mesh_dim = ro->part[1] && ro->part[1]->nsteps
                                ? ro->part[1]->steps[ro->part[1]->nsteps - 1].mesh_dim
                                : 0;
        if (st == LT_MISMATCH) {
            st = lt__err_ctx_in(st, "redistribute", " (the RaggedShard route)");
            if (rep) snprintf(rep->message, sizeof rep->message, "%s", lt_errmsg());
        }
    }
    lt_status ps = LT_OK;
    if (plan && (!st || st == LT_MISMATCH))
        ps = route_plan(ro, dt, norm, o->planner, plan);
    lt_plan_free(ro->part[0]);
    lt_plan_free(ro->part[1]);
    return st ? st : ps;
}

lt_status lt__ragged_redistribute(const lt_dtensor *dt, const lt_placement *dst, int np,
                                  const lt_redistribute_opts *opts, lt_dtensor **out,
                                  lt_plan **plan) {
    const lt_mesh *mesh = lt_dtensor_mesh(dt);
    lt_placement norm[LT_MESH_MAX_DIMS], nop[LT_MESH_MAX_DIMS];
    lt_spec ds;
    lt_dtensor a, *owned = NULL, *b = NULL;
    lt_redistribute_opts o;
    lt_verify_report sub, *rep = opts ? opts->report : NULL;
    route ro;
    memset(&ro, 0, sizeof ro);
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    o.report = NULL;   /* each part gets its own; the caller's is filled here */
    *out = NULL;
    if (plan) *plan = NULL;
    report_unchecked(rep);
    if (o.comm && !lt_mesh_equal(lt_comm_mesh(o.comm), mesh))
        return lt__err(LT_INVALID, "redistribute: opts->comm was made for another mesh");
    LT_TRY(lt_placements_check(mesh, dt->ndim, dst, np, norm));
    int done = 0;
    LT_TRY(lt__ragged_view_route(dt, norm, opts, out, plan, &done));
    if (done) return LT_OK;
    LT_TRY(lt_ragged_view_of(mesh, dt->ndim, dt->shape, dt->placements, &ro.sv));
    LT_TRY(lt_ragged_view_of(mesh, dt->ndim, dt->shape, norm, &ro.dv));
    without_partials(ro.dv.pl, np, nop);
    LT_TRY(lt_spec_init(mesh, dt->dtype, ro.dv.ndim, ro.dv.shape, nop, np, &ds));
    o.report = &sub;
    lt_status st = reduce_source(dt, &o, &a, &owned, &ro.part[0]);
    o.report = NULL;
    if (st == LT_MISMATCH) part_report(&sub, 0, rep);
    ro.nbefore = ro.part[0] ? ro.part[0]->nsteps : 0;
    if (!st) st = exchange_to(&a, &ds, &ro.dv, &o, &ro, &b, rep);
    lt_dtensor_free(owned);
    st = route_finish(st, &ro, dt, norm, &o, opts && opts->verify, b, rep, plan);
    if (st) {
        lt_dtensor_free(b);
        return st;
    }
    lt__ragged_relabel(b, dt->ndim, dt->shape, norm);
    *out = b;
    return LT_OK;
}
