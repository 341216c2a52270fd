/* localtensor/redistribute.c — the executor: runs a plan step by step.
 *
 * Each step maps every rank's shard of the current state to its shard of the
 * next state, through ONE collective of collectives_sim along the step's mesh
 * dim or through local slicing (see the table in localtensor/plan.h).
 * Every intermediate is wrapped as a DTensor (lt__dtensor_wrap checks each
 * shard's shape against layout math) and, with opts->verify, compared with
 * the verifier's direct reshard of the source, so a wrong step is named the
 * moment it produces a wrong state.
 */
#include "localtensor/collectives_sim/engine.h"
#include "collectives_sim/engine_impl.h"
#include "kernels/alloc.h"
#include "kernels/cache_impl.h"
#include "kernels/memlimit_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/layout.h"
#include "localtensor/plan/plan_impl.h"
#include "localtensor/redistribute.h"
#include "localtensor/ragged_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/spec_impl.h"
#include "localtensor/verify/verify_impl.h"

/* ---- local steps ---------------------------------------------------------------- */

/* Piece c of m of t along dim d by rule: a new contiguous tensor. With
 * `share` (every member of the group holds t's very buffer, so the pieces
 * together cover it) a contiguous piece is a view of t instead of a copy. */
static lt_status slice_piece(const lt_tensor *t, int d, const lt_split_rule *rule, int m, int c,
                             int share, lt_tensor **out) {
    int64_t size, off;
    LT_TRY(lt_split_piece(rule, t->shape[d], m, c, &size, &off));
    lt_tensor *v = NULL;
    lt_status st = lt_narrow(t, d, off, size, &v);
    if (!st && share && lt_is_contiguous(v)) {
        *out = v;
        return LT_OK;
    }
    if (!st) st = lt_clone(v, out);
    lt_tensor_free(v);
    return st;
}

/* 1 when every member of rank r's group along mesh dim i holds the very
 * buffer of the group's first member in in[]. grp: scratch of the group
 * size; known: (number of groups) answers so far, -1 for none yet. */
static int group_shares(const lt_mesh *mesh, int i, int r, lt_tensor *const *in, int *grp,
                        signed char *known) {
    int pos, g = lt_mesh_group_of(mesh, i, r, &pos);
    if (known[g] < 0) {
        lt_mesh_group(mesh, i, g, grp);
        known[g] = 1;
        for (int q = 1; q < mesh->shape[i] && known[g]; q++)
            if (!lt_tensor_same_view(in[grp[q]], in[grp[0]])) known[g] = 0;
    }
    return known[g];
}

/* *out = a new list of n positions (caller frees); the byte count is
 * checked since n is a tensor dim. */
static lt_status positions_new(int64_t n, int64_t **out) {
    int64_t bytes;
    *out = NULL;
    if (n < 0 || lt__mul_i64(n > 0 ? n : 1, (int64_t)sizeof(int64_t), &bytes) ||
        (uint64_t)bytes > SIZE_MAX / 2)
        return lt__err(LT_OVERFLOW,
                       "a position list of %lld entries does not fit in the address space",
                       (long long)n);
    *out = lt__malloc((size_t)bytes);
    return *out ? LT_OK
                : lt__err(LT_NOMEM, "out of memory for a position list of %lld entries",
                          (long long)n);
}

/* Member c's strided pick of t along d (SS(d, sf) over m members). */
static lt_status strided_pick(const lt_tensor *t, int d, int sf, int m, int c, lt_tensor **out) {
    int64_t n = t->shape[d];
    if (lt_numel(t) == 0) { /* nothing to pick: only the size changes (another dim may be huge) */
        int64_t shape[LT_MAX_DIMS];
        memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
        shape[d] = lt_split_strided_positions(n, sf, m, c, NULL);
        return lt_tensor_new(t->dtype, t->ndim, shape, out);
    }
    int64_t *pos;   /* (n) */
    LT_TRY(positions_new(n, &pos));
    int64_t k = lt_split_strided_positions(n, sf, m, c, pos);
    lt_status st = lt_index_select(t, d, pos, k, out);
    lt__free(pos);
    return st;
}

/* The permutation that undoes the order of a strided all_gather of n
 * elements along d: the gathered tensor holds member 0's pick, then member
 * 1's, ...; perm[parent position] = gathered position. *perm is new
 * (caller frees). It depends on (n, sf, m) only, so one serves a group. */
static lt_status unstride_perm(int64_t n, int d, int sf, int m, int64_t **perm) {
    int64_t *pos;   /* (n) */
    LT_TRY(positions_new(n, &pos));
    lt_status st = positions_new(n, perm);
    if (st) {
        lt__free(pos);
        return st;
    }
    int64_t q = 0;
    for (int c = 0; c < m; c++) {
        int64_t k = lt_split_strided_positions(n, sf, m, c, pos);
        for (int64_t j = 0; j < k; j++) (*perm)[pos[j]] = q + j;   /* parent position -> gathered */
        q += k;
    }
    lt__free(pos);
    if (q == n) return LT_OK;
    lt__free(*perm);
    *perm = NULL;
    return lt__err(LT_SHAPE,
                   "strided gather: %lld elements gathered along dim %d, the picks cover %lld",
                   (long long)n, d, (long long)q);
}

/* R -> P(op) on mesh dim i: sum divides by the mesh dim size (as distribute). */
static lt_status partition(const lt_tensor *t, const lt_mesh *mesh, int i, lt_redop op,
                           lt_tensor **out) {
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

/* A gather of a _StridedShard dim: all_gather, then every rank's result
 * put back in index order (replicas sharing a gathered buffer share the
 * result). out[W]: new tensors (a failure frees them in run_step). */
static lt_status gather_strided(lt_comm *comm, const lt_spec *from, const lt_plan_step *ps,
                                lt_tensor *const *in, lt_tensor **out) {
    const lt_mesh *mesh = from->mesh;
    const lt_placement *a = &ps->from;
    int W = mesh->world, m = mesh->shape[ps->mesh_dim];
    lt_tensor **g = lt__calloc((size_t)W, sizeof *g);   /* (W) the gathered, strided order */
    if (!g) return lt__err(LT_NOMEM, "out of memory");
    lt_status st = lt_all_gather(comm, ps->mesh_dim, in, a->dim, g);
    int64_t *perm = NULL, pn = -1;   /* (pn) */
    for (int r = 0; r < W && !st; r++) {
        if (g[r]->absent) continue;   /* held by another process: left out */
        int64_t n = g[r]->shape[a->dim];
        int q = lt__replica_class(mesh, ps->after, r);
        if (q != r && lt_tensor_same_view(g[r], g[q])) {   /* the same gathered buffer */
            st = lt_tensor_view(out[q], &out[r]);
            continue;
        }
        if (lt_numel(g[r]) == 0) { /* no order to undo (another dim may be huge) */
            st = lt_clone(g[r], &out[r]);
            continue;
        }
        if (n != pn) {
            lt__free(perm);
            st = unstride_perm(n, a->dim, a->split_factor, m, &perm);
            pn = n;
        }
        if (!st) st = lt_index_select(g[r], a->dim, perm, n, &out[r]);
    }
    lt__free(perm);
    for (int r = 0; r < W; r++) lt_tensor_free(g[r]);
    lt__free(g);
    return st;
}

/* The local steps (slice, strided slice, partition): each rank keeps its
 * piece of what it holds; replicas sharing a buffer share the piece. */
static lt_status local_pieces(const lt_spec *from, const lt_plan_step *ps, lt__step_kind k,
                              lt_tensor *const *in, lt_tensor **out) {
    const lt_mesh *mesh = from->mesh;
    const lt_placement *b = &ps->to;
    int i = ps->mesh_dim, m = mesh->shape[i], W = mesh->world;
    int *grp = lt__malloc(sizeof(int) * (size_t)m);
    signed char *known = lt__malloc((size_t)(W / m));   /* (groups) -1: not looked at yet */
    lt_status st = !grp || !known ? lt__err(LT_NOMEM, "out of memory") : LT_OK;
    if (known) memset(known, -1, (size_t)(W / m));
    for (int r = 0; r < W && !st; r++) {
        if (in[r]->absent) continue;   /* held by another process: left out */
        int c, q = lt__replica_class(mesh, ps->after, r);
        if (q != r && lt_tensor_same_view(in[r], in[q])) {   /* a replica of the same buffer */
            st = lt_tensor_view(out[q], &out[r]);
            continue;
        }
        lt_mesh_group_of(mesh, i, r, &c);
        if (k == LT__STEP_SLICE)
            st = slice_piece(in[r], b->dim, &b->rule, m, c,
                             group_shares(mesh, i, r, in, grp, known), &out[r]);
        else if (k == LT__STEP_STRIDED_SLICE)
            st = strided_pick(in[r], b->dim, b->split_factor, m, c, &out[r]);
        else st = partition(in[r], mesh, i, b->op, &out[r]);
    }
    lt__free(grp);
    lt__free(known);
    return st;
}

static lt_status run_step(lt_comm *comm, const lt_spec *from, const lt_plan_step *ps,
                          lt_tensor *const *in, lt_tensor **out, int cache) {
    if (ps->move_) return lt__move_run(comm, from, ps, in, out, cache);   /* a min-cost step */
    int i = ps->mesh_dim;
    const lt_placement *a = &ps->from, *b = &ps->to;
    lt__step_kind k = lt__step_kind_of(from->mesh, from->placements, i, b);
    lt_status st;
    switch (k) {
    case LT__STEP_ZERO_FILL: return lt__zero_fill_run(from, ps, in, out);
    case LT__STEP_ALL_GATHER: return lt_all_gather(comm, i, in, a->dim, out);
    case LT__STEP_ALL_REDUCE: return lt_all_reduce(comm, i, in, a->op, out);
    case LT__STEP_REDUCE_SCATTER:
        return lt_reduce_scatter(comm, i, in, a->op, b->dim, &b->rule, out);
    case LT__STEP_ALL_TO_ALL: return lt_all_to_all(comm, i, in, b->dim, a->dim, &b->rule, out);
    case LT__STEP_GATHER_STRIDED: st = gather_strided(comm, from, ps, in, out); break;
    case LT__STEP_SLICE:
    case LT__STEP_STRIDED_SLICE:
    case LT__STEP_PARTITION: st = local_pieces(from, ps, k, in, out); break;
    default: return lt__err(LT_INVALID, "internal: the step is not a single legal step");
    }
    for (int r = 0; st && r < from->mesh->world; r++) {
        lt_tensor_free(out[r]);
        out[r] = NULL;
    }
    return st;
}

/* ---- memory estimate --------------------------------------------------------------- */

/* What lt_verify_reshard allocates to check a state in layout pl (see
 * localtensor/verify/verify_impl.h). */
static lt_status verify_bytes(const lt_plan *p, const lt_placement *pl, uint64_t *out) {
    lt_spec src = lt__plan_spec(p, p->src), dst = lt__plan_spec(p, pl);
    return lt__verify_bytes(&src, &dst, out);
}

/* Every state's shards exist once per unique buffer: the source's replicas
 * share storage (distribute and init make them so) and each step computes
 * one result per distinct input and shares it (the collectives, the
 * executor). */
/* A state's bytes are a pure function of the mesh shape, the spec and
 * whether replicas share; a sweep's plans pass through the same few
 * hundred states, so the numbers are kept, process-wide (errors are not). */
typedef struct bytes_rec {
    int refs; /* atomic (lt__cache_rec: one block, freed on the last release) */
    uint64_t bytes;
} bytes_rec;
static lt__cache bytes_cache = LT__CACHE_INIT(lt__cache_rec_ref, lt__cache_rec_release, 2048);

void lt__state_bytes_clear(void) { lt__cache_clear(&bytes_cache); }

/* A state's bytes: unique (replicas share) or every rank's; cache: read
 * and fill bytes_cache. */
static lt_status state_bytes(const lt_spec *s, int unique, int cache, uint64_t *out) {
    if (!cache) return unique ? lt_spec_unique_bytes(s, out) : lt_spec_total_bytes(s, out);
    static _Thread_local lt__cache_key k;
    k.n = 0;
    lt__key_put(&k, (uint64_t)(unique != 0) | (uint64_t)s->mesh->ndim << 8);
    for (int i = 0; i < s->mesh->ndim; i++) lt__key_put(&k, (uint64_t)s->mesh->shape[i]);
    lt__key_spec(&k, s);
    uint64_t h = lt__cache_key_fits(&k) ? lt__cache_key_hash(&k) : 0;
    bytes_rec *r = h ? lt__cache_get(&bytes_cache, &k, h, 1) : NULL;
    if (r) {
        *out = r->bytes;
        lt__cache_rec_release(r);
        return LT_OK;
    }
    LT_TRY(unique ? lt_spec_unique_bytes(s, out) : lt_spec_total_bytes(s, out));
    if (h && (r = lt__malloc(sizeof *r))) {   /* optional: skipped without memory */
        r->refs = 1;
        r->bytes = *out;
        lt__cache_put(&bytes_cache, &k, h, r);
        lt__cache_rec_release(r);
    }
    return LT_OK;
}

lt_status lt__plan_peak_bytes(const lt_plan *plan, int verify, uint64_t *bytes, int *step) {
    return lt__plan_peak_bytes_ex(plan, verify, 1, 1, bytes, step);
}

lt_status lt__plan_peak_bytes_ex(const lt_plan *plan, int verify, int unique, int cache,
                                 uint64_t *bytes, int *step) {
    const lt_mesh *mesh = &plan->mesh;
    uint64_t prev, peak = 0, v;
    *bytes = 0;
    *step = -1;
    lt_spec spec = lt__plan_spec(plan, plan->src);
    LT_TRY(state_bytes(&spec, unique, cache, &prev));
    if (plan->nsteps == 0) { /* the result views the source; only verification allocates */
        if (verify) LT_TRY(verify_bytes(plan, plan->dst, &peak));
        *bytes = peak;
        return LT_OK;
    }
    for (int s = 0; s < plan->nsteps; s++) {
        const lt_plan_step *ps = &plan->steps[s];
        const lt_placement *before = lt__plan_x_of(plan)->states + (size_t)s * (size_t)mesh->ndim;
        uint64_t next;
        spec = lt__plan_spec(plan, ps->after);
        LT_TRY(state_bytes(&spec, unique, cache, &next));
        /* running: the previous step's output (the source itself for step 1) and
         * this one's, plus the collective's result a min-cost step or a strided
         * gather reorders */
        uint64_t run = lt__add_sat(s > 0 ? prev : 0, next);
        if (ps->move_ ||
            lt__step_kind_of(mesh, before, ps->mesh_dim, &ps->to) == LT__STEP_GATHER_STRIDED)
            run = lt__add_sat(run, next);   /* what the collective received, until reshaped */
        /* verifying: the previous output is freed; this one and the checker's */
        if (verify) {
            LT_TRY(verify_bytes(plan, ps->after, &v));
            v = lt__add_sat(v, next);
            if (v > run) run = v;
        }
        if (run > peak) {
            peak = run;
            *step = s;
        }
        prev = next;
    }
    *bytes = peak;
    return LT_OK;
}

lt_status lt__plan_check_memory(const lt_plan *plan, int verify, int with_source) {
    return lt__plan_check_memory_ex(plan, verify, with_source, 1, 1);
}

lt_status lt__plan_check_memory_ex(const lt_plan *plan, int verify, int with_source, int unique,
                                   int cache) {
    uint64_t need, src = 0;
    int step;
    LT_TRY(lt__plan_peak_bytes_ex(plan, verify, unique, cache, &need, &step));
    if (with_source) {
        lt_spec spec = lt__plan_spec(plan, plan->src);
        LT_TRY(lt_spec_unique_bytes(&spec, &src));
    }
    char what[160], at[96];
    if (step < 0) snprintf(at, sizeof at, "%s", verify ? "its verification" : "nothing else");
    else snprintf(at, sizeof at, "step %d%s", step + 1, verify ? " with its verification" : "");
    if (with_source) snprintf(what, sizeof what, "this redistribute (its source, then %s)", at);
    else snprintf(what, sizeof what, "this redistribute (%s)", at);
    return lt_check_memory(lt__add_sat(need, src), plan->mesh.world, what);
}

/* ---- absent shards (a communicator whose engine holds only some ranks) -------------- */

/* 1 when dt holds exactly the ranks comm holds (engine.h `holds`). */
static int holds_exactly(const lt_comm *comm, const lt_dtensor *dt) {
    for (int r = 0; r < dt->local->mesh.world; r++)
        if ((dt->local->shards[r] != NULL) != lt_comm_holds(comm, r)) return 0;
    return 1;
}

/* The bytes of the shards comm holds in state s, replicas once (they share
 * buffers: a step's collectives and reshapes share results between the
 * replicas one process holds). seen: (W) scratch. */
static lt_status held_bytes(const lt_spec *s, const lt_comm *comm, unsigned char *seen,
                            uint64_t *out) {
    uint64_t sum = 0;
    size_t es = lt_dtype_size(s->dtype);
    memset(seen, 0, (size_t)s->mesh->world);
    for (int r = 0; r < s->mesh->world; r++) {
        if (!lt_comm_holds(comm, r)) continue;
        int k = lt__replica_class(s->mesh, s->placements, r);
        if (seen[k]) continue;
        seen[k] = 1;
        int64_t ls[LT_MAX_DIMS];
        LT_TRY(lt_spec_local_shape(s, r, ls, NULL));
        sum = lt__add_sat(sum, lt__mul_sat((uint64_t)lt__numel_sat(s->ndim, ls), es));
    }
    *out = sum;
    return LT_OK;
}

/* The memory check of a redistribute whose shards this process holds only
 * in part: the held shards of the source, the step's output and what its
 * collective received, at the step that needs most. */
static lt_status check_memory_held(const lt_plan *plan, const lt_comm *comm) {
    uint64_t prev = 0, next = 0, peak = 0;
    int at = -1;
    unsigned char *seen = lt__malloc((size_t)plan->mesh.world);
    if (!seen) return lt__err(LT_NOMEM, "out of memory");
    lt_spec spec = lt__plan_spec(plan, plan->src);
    lt_status st = held_bytes(&spec, comm, seen, &prev);
    for (int s = 0; s < plan->nsteps && !st; s++) {
        spec = lt__plan_spec(plan, plan->steps[s].after);
        st = held_bytes(&spec, comm, seen, &next);
        const lt_plan_step *ps = &plan->steps[s];
        const lt_placement *before =
            lt__plan_x_of(plan)->states + (size_t)s * (size_t)plan->mesh.ndim;
        uint64_t run = lt__add_sat(prev, next);   /* as lt__plan_peak_bytes_ex counts a step */
        if (ps->move_ ||
            lt__step_kind_of(&plan->mesh, before, ps->mesh_dim, &ps->to) == LT__STEP_GATHER_STRIDED)
            run = lt__add_sat(run, next);
        if (run > peak) peak = run, at = s;
        prev = next;
    }
    lt__free(seen);
    if (st) return st;
    char what[160];
    snprintf(what, sizeof what, "this redistribute (this process's %d of %d ranks, step %d)",
             lt_comm_nheld(comm), plan->mesh.world, at + 1);
    return lt_check_memory(peak, lt_comm_nheld(comm), what);
}

/* The inputs of a step whose shards this process holds only in part, into
 * in2[W]: what the collectives read. A rank held elsewhere (NULL in in[])
 * gets an absent stand-in of its shape in state s (lt_tensor_absent). And
 * so that every process decides alike which groups share results
 * (lt__comm_share_absent), replicas (one replica class of s) held by the
 * same process are given the same view: the shard, or the stand-in, of the
 * first of them. rep, rep_owner: (W) scratch. The caller frees every in2[r]
 * that is not in[r] (absent_inputs_free). */
static lt_status absent_inputs(const lt_spec *s, const lt_comm *comm, lt_tensor *const *in,
                               lt_tensor **in2, int *rep, int *rep_owner) {
    int W = s->mesh->world;
    memset(in2, 0, sizeof *in2 * (size_t)W);
    for (int r = 0; r < W; r++) rep[r] = -1;
    for (int r = 0; r < W; r++) {
        /* owners grow with the rank, so a class's ranks of one owner are
         * consecutive in that order: the last one seen is enough */
        int k = lt__replica_class(s->mesh, s->placements, r), o = lt_comm_owner(comm, r);
        lt_status st;
        if (rep[k] >= 0 && rep_owner[k] == o) {
            st = lt_tensor_view(in2[rep[k]], &in2[r]);
        } else {
            rep[k] = r;
            rep_owner[k] = o;
            if (in[r]) {
                in2[r] = in[r];
                continue;
            }
            int64_t ls[LT_MAX_DIMS];
            st = lt_spec_local_shape(s, r, ls, NULL);
            if (!st) st = lt_tensor_absent(s->dtype, s->ndim, ls, &in2[r]);
        }
        if (st) return st;
    }
    return LT_OK;
}

static void absent_inputs_free(int W, lt_tensor *const *in, lt_tensor **in2) {
    for (int r = 0; in2 && r < W; r++) {
        if (in2[r] != in[r]) lt_tensor_free(in2[r]);
        in2[r] = NULL;   /* freeing again is harmless */
    }
}

/* ---- redistribute ------------------------------------------------------------------- */

static void step_str(const lt_plan *p, int s, char *buf, size_t n) {
    lt_plan_step_format(p, s, buf, n);
}

/* What follows "redistribute" in an error's context (" of 'w' [S(0)] -> [R]"). */
static void run_ctx(const lt_redistribute_opts *o, const lt_plan *p, char *buf, size_t n) {
    char a[512], b[512];
    lt_placements_format(p->src, p->mesh.ndim, a, sizeof a);
    lt_placements_format(p->dst, p->mesh.ndim, b, sizeof b);
    if (o && o->name && o->name[0]) snprintf(buf, n, " of '%s' %s -> %s", o->name, a, b);
    else snprintf(buf, n, " of an unnamed tensor %s -> %s", a, b);
}

/* The check of a plan's zero-fill steps (plan_zero_fill.c): what the
 * ranks hold after them must sum, over the Partial dims, to the very tensor
 * the source holds (adding zeros changes no value), both reassembled from
 * global index sets (lt_full_tensor_direct: no planner, no collectives). A
 * difference is LT_MISMATCH with the first index. Allocates two full
 * tensors, freed here. */
static lt_status check_zero_fill(const lt_dtensor *src, const lt_dtensor *zf) {
    lt_tensor *a = NULL, *b = NULL;
    lt_compare_result res;
    lt_status st = lt_full_tensor_direct(zf, &a);
    if (!st) st = lt_full_tensor_direct(src, &b);
    if (!st) st = lt_compare(a, b, 0.0, 0.0, &res);
    if (!st && !res.equal)
        st = lt__err(LT_MISMATCH,
                     "the zero-filled shards sum to %g at flat index %lld, the source holds %g",
                     res.actual, (long long)res.first_flat, res.expected);
    lt_tensor_free(a);
    lt_tensor_free(b);
    return st;
}

/* A DTensor whose shards are views of dt's, with placements pl. */
static lt_status view_as(const lt_dtensor *dt, const lt_placement *pl, lt_dtensor **out) {
    lt_local *local;
    LT_TRY(lt_local_new(lt_dtensor_mesh(dt), &local));
    for (int r = 0; r < local->mesh.world; r++) {
        if (!dt->local->shards[r]) continue;   /* absent stays absent */
        lt_status st = lt_tensor_view(dt->local->shards[r], &local->shards[r]);
        if (st) {
            lt_local_free(local);
            return st;
        }
    }
    lt_spec spec = lt__spec_with(lt_dtensor_spec(dt), pl);
    return lt__dtensor_wrap(local, &spec, out);
}

/* One redistribute in progress: what its phases (rd_prepare, rd_step,
 * rd_check, rd_finish) share. Owns plan, own, in2, scratch, owned,
 * ref_owned and memo until rd_finish. */
typedef struct rd_run {
    const lt_dtensor *dt;              /* the source (borrowed) */
    const lt_redistribute_opts *opts;  /* may be NULL */
    lt_plan *plan;
    lt_verify_report *rep;             /* the caller's, or local */
    int verify, absent, cache;
    lt_comm *comm, *own;               /* own: a temporary communicator */
    lt_tensor **in2;                   /* (world) a step's inputs with stand-ins (absent) */
    int *scratch;                      /* (2 world) absent_inputs' */
    const lt_dtensor *cur;             /* the state the next step starts from */
    lt_dtensor *owned;                 /* cur when a step made it */
    /* what each state is checked against: the source, and after a zero
     * fill the zero-filled state (its own check: check_zero_fill) */
    const lt_dtensor *ref;
    lt_dtensor *ref_owned;
    lt__verified *memo;                /* where the last checked state's verified bytes lie */
} rd_run;

/* The one place a redistribute's failure gets its context: "redistribute
 * of 'w' [S(0)] -> [R]", then ": <what>" when what is set, then the step
 * (" after step ..." for a check, ": step ..." for the step itself) when
 * s >= 0. A check's failure (what set) is also the report's message. */
static lt_status rd_fail(rd_run *r, lt_status st, int s, const char *what) {
    char ctx[1200], sd[400];
    run_ctx(r->opts, r->plan, ctx, sizeof ctx);
    if (s >= 0) step_str(r->plan, s, sd, sizeof sd);
    if (what && s >= 0) st = lt__err_ctx_in(st, "redistribute", "%s: %s after %s", ctx, what, sd);
    else if (what) st = lt__err_ctx_in(st, "redistribute", "%s: %s", ctx, what);
    else if (s >= 0) st = lt__err_ctx_in(st, "redistribute", "%s: %s", ctx, sd);
    else st = lt__err_ctx_in(st, "redistribute", "%s", ctx);
    if (what) snprintf(r->rep->message, sizeof r->rep->message, "%s", lt_errmsg());
    return st;
}

/* What a check's failure is called: only a mismatch is a failed
 * verification; anything else kept it from running. */
static const char *check_word(lt_status st) {
    return st == LT_MISMATCH ? "verification failed" : "could not verify";
}

/* The communicator and where the shards are: LT_OK, or the error (with
 * its context) of a run that cannot start. */
static lt_status rd_engine(rd_run *r) {
    const lt_mesh *mesh = lt_dtensor_mesh(r->dt);
    char ctx[1200];
    run_ctx(r->opts, r->plan, ctx, sizeof ctx);
    if (r->comm && !lt_mesh_equal(lt_comm_mesh(r->comm), mesh)) {
        char a[128], b[128];
        lt_mesh_format(lt_comm_mesh(r->comm), a, sizeof a);
        lt_mesh_format(mesh, b, sizeof b);
        return lt__err_in(LT_INVALID, "redistribute",
                          "%s: the communicator's mesh %s is not the tensor's mesh %s", ctx, a, b);
    }
    if (r->absent && (!r->comm || !holds_exactly(r->comm, r->dt)))
        return lt__err_code(
            LT_UNSUPPORTED, LT_ERR_NOT_YET,
            "not supported yet: redistribute%s: the source has absent shards (%d of %d ranks "
            "held) that are not those another process holds on the communicator",
            ctx, lt_local_count(r->dt->local), mesh->world);
    if (r->absent && r->verify)
        return lt__err_code(
            LT_UNSUPPORTED, LT_ERR_NOT_YET,
            "not supported yet: verification of a redistribute%s whose shards are spread over "
            "processes (check each process's shards against their definition instead)",
            ctx);
    if (!r->comm && r->plan->ncomm) {
        lt_status st = lt_comm_new(mesh, &r->own);
        if (st) return rd_fail(r, st, -1, NULL);
        r->comm = r->own;
    }
    return LT_OK;
}

/* Everything before the first step: the engine, memory refused up front
 * (every copy the steps and the verification hold at once; a source whose
 * replicas hold buffers of their own is copied rank by rank), the
 * stand-ins' arrays, the verified source. */
static lt_status rd_prepare(rd_run *r) {
    const lt_mesh *mesh = lt_dtensor_mesh(r->dt);
    LT_TRY(rd_engine(r));
    int shared = !r->absent;
    for (int k, q = 0; q < mesh->world && shared; q++) {
        k = lt__replica_class(mesh, r->dt->placements, q);
        shared = k == q || lt_tensor_same_view(r->dt->local->shards[q], r->dt->local->shards[k]);
    }
    lt_status st = r->absent ? check_memory_held(r->plan, r->comm)
                             : lt__plan_check_memory_ex(r->plan, r->verify, 0, shared, r->cache);
    if (!st && r->absent && (!(r->in2 = lt__calloc((size_t)mesh->world, sizeof *r->in2)) ||
                             !(r->scratch = lt__malloc(2 * sizeof(int) * (size_t)mesh->world))))
        st = lt__err(LT_NOMEM, "out of memory");
    if (st) return rd_fail(r, st, -1, NULL);
    if (r->verify && r->plan->nsteps) return lt__verified_source(r->dt, &r->memo);
    return LT_OK;
}

/* Runs step s from r->cur (st: this process's status so far; with shards
 * spread over processes a process that failed goes round once more just
 * to agree, before the step's collectives). Returns the step's status;
 * *stop when no later step may run. On success r->cur is the new state. */
static lt_status rd_step(rd_run *r, int s, lt_status st, int *stop) {
    const lt_mesh *mesh = lt_dtensor_mesh(r->dt);
    const lt_plan_step *ps = &r->plan->steps[s];
    lt_local *local = NULL;
    lt_dtensor *nx = NULL;
    if (!st) st = lt_local_new(mesh, &local);
    lt_spec from = lt__spec_with(lt_dtensor_spec(r->dt),
                                 lt__plan_x_of(r->plan)->states + (size_t)s * (size_t)mesh->ndim);
    lt_tensor *const *in = r->cur->local->shards, *const *src = in;
    if (!st && r->absent) {
        st = absent_inputs(&from, r->comm, in, r->in2, r->scratch, r->scratch + mesh->world);
        src = r->in2;
    }
    lt_status agreed = r->absent ? lt__comm_agree(r->comm, st) : LT_OK;
    if (agreed) { /* this process or another failed: no process runs the step */
        lt_local_free(local);
        absent_inputs_free(mesh->world, in, r->in2);
        *stop = 1;
        return agreed;
    }
    lt__comm_share_absent(r->comm, r->absent);
    if (!st) st = run_step(r->comm, &from, ps, src, local->shards, r->cache);
    lt__comm_share_absent(r->comm, 0);
    if (r->absent) {
        absent_inputs_free(mesh->world, in, r->in2);
        for (int q = 0; local && q < mesh->world; q++)
            if (local->shards[q] && local->shards[q]->absent) {   /* a result held elsewhere */
                lt_tensor_free(local->shards[q]);
                local->shards[q] = NULL;
            }
    }
    lt_spec spec = lt__spec_with(lt_dtensor_spec(r->dt), ps->after);
    if (!st) st = lt__dtensor_wrap(local, &spec, &nx);
    else lt_local_free(local);
    if (st) {
        *stop = !r->absent;   /* the others learn it at the next agreement */
        return rd_fail(r, st, s, NULL);
    }
    lt_dtensor_free(
        r->owned); /* nx was made while it lived: the record's buffers are still those */
    r->cur = r->owned = nx;
    return LT_OK;
}

/* Checks the state after step s (with verify): against the direct reshard
 * of r->ref, or, for the zero-fill steps, once after the last of them,
 * that the zero-filled shards sum to the source (which then becomes the
 * reference). */
static lt_status rd_check(rd_run *r, int s) {
    const lt_plan *plan = r->plan;
    lt__plan_x *px = lt__plan_x_of(plan);
    lt_status st;
    if (s >= px->zf_first && s < px->zf_end) {
        if (s + 1 != px->zf_end) return LT_OK;
        st = check_zero_fill(r->ref, r->cur);
        /* a plan of zero-fill steps only (S -> P) has no other check to say it ran */
        if (!st && !r->rep->checked) lt__verify_report_init(r->rep, r->cur->ndim);
        lt__verified_free(r->memo);
        r->memo = NULL;
        if (!st) st = view_as(r->cur, r->cur->placements, &r->ref_owned);
        if (!st) st = lt__verified_source(r->ref = r->ref_owned, &r->memo);
        if (!st) return LT_OK;
        r->rep->step = s;
        r->rep->mesh_dim = plan->steps[s].mesh_dim;
        return rd_fail(r, st, s, check_word(st));
    }
    st = lt__verify_reshard_memo(r->ref, r->cur, s, r->rep, &r->memo);
    if (!st) return LT_OK;
    if (r->rep->step >= 0) r->rep->mesh_dim = plan->steps[s].mesh_dim;
    return rd_fail(r, st, st == LT_MISMATCH && r->rep->step < 0 ? -1 : s, check_word(st));
}

/* A plan without steps: the source's shards viewed with the destination's
 * placements, checked as a whole with verify. */
static lt_status rd_view(rd_run *r) {
    LT_TRY(view_as(r->dt, r->plan->dst, &r->owned));
    if (!r->verify) return LT_OK;
    lt_status st = lt_verify_reshard(r->dt, r->owned, -1, r->rep);
    return st ? rd_fail(r, st, -1, check_word(st)) : LT_OK;
}

/* Frees what the run held; hands out the result (*out, on success) and the
 * plan (*planp when not NULL, also on failure). */
static lt_status rd_finish(rd_run *r, lt_status st, lt_dtensor **out, lt_plan **planp) {
    lt_comm_free(r->own);
    lt__free(r->in2);
    lt__free(r->scratch);
    lt__verified_free(r->memo);
    lt_dtensor_free(r->ref_owned);
    if (st) lt_dtensor_free(r->owned);
    else *out = r->owned;
    if (planp) *planp = r->plan;
    else lt_plan_free(r->plan);
    return st;
}

lt_status lt_redistribute(const lt_dtensor *dt, const lt_placement *dst, int np,
                          const lt_redistribute_opts *opts, lt_dtensor **out, lt_plan **planp) {
    lt_verify_report local_rep;
    rd_run r;
    memset(&r, 0, sizeof r);
    r.dt = r.cur = r.ref = dt;
    r.opts = opts;
    r.rep = opts && opts->report ? opts->report : &local_rep;
    r.verify = opts && opts->verify;
    r.cache = !(opts &&
                opts->no_cache); /* no_cache: the state caches are neither read nor filled either */
    r.comm = opts ? opts->comm : NULL;
    *out = NULL;
    if (planp) *planp = NULL;
    if (lt_placements_have_ragged(dt->placements, lt_dtensor_mesh(dt)->ndim) ||
        lt_placements_have_ragged(dst, np))   /* planned in a view, or the exchange */
        return lt__ragged_redistribute(dt, dst, np, opts, out, planp);
    memset(r.rep, 0, sizeof *r.rep);
    r.rep->step = r.rep->mesh_dim = r.rep->rank = -1;
    LT_TRY(lt__plan_redistribute_from(lt_dtensor_spec(dt), dst, np, opts, &r.plan));
    /* shards held by other processes (engine.h `holds`): stand-ins feed the
     * collectives (a plan without steps only views what is there); every
     * process agrees once per step before its collectives and once after
     * the last step */
    r.absent = r.plan->nsteps && lt_local_count(dt->local) < lt_dtensor_mesh(dt)->world;
    lt_status st = rd_prepare(&r);
    int stop = 0;
    for (int s = 0; s < r.plan->nsteps && (!st || r.absent) && !stop; s++) {
        st = rd_step(&r, s, st, &stop);
        if (!st && r.verify) st = rd_check(&r, s);
    }
    if (r.absent) st = lt__comm_agree(r.comm, st);
    if (!st && r.plan->nsteps == 0) st = rd_view(&r);
    return rd_finish(&r, st, out, planp);
}

lt_status lt_full_tensor(const lt_dtensor *dt, lt_tensor **out) {
    lt_placement r[LT_MESH_MAX_DIMS];
    const lt_mesh *mesh = lt_dtensor_mesh(dt);
    *out = NULL;
    for (int i = 0; i < mesh->ndim; i++) r[i] = lt_replicate();
    lt_dtensor *rep;
    LT_TRY(lt_redistribute(dt, r, mesh->ndim, NULL, &rep, NULL));
    int f = lt_local_first(rep->local);   /* a replica held here */
    lt_status st =
        f < 0 ? lt__err_code(
                    LT_UNSUPPORTED, LT_ERR_NOT_YET,
                    "not supported yet: full_tensor of a DTensor none of whose shards is held here")
              : lt_tensor_view(rep->local->shards[f], out); /* keeps the storage alive */
    lt_dtensor_free(rep);
    return st;
}
