/* localtensor/plan/plan_zero_fill.c — Shard(d) -> Partial(sum) by zero fill.
 *
 * A rank whose mesh dim i holds S(d) turns it into P(sum) without
 * communication: it places its shard at its own place in a zero tensor of
 * the size mesh dim i split (docs/SEMANTICS.md §7). The sum over the group
 * is the unsplit piece again, so the result is a Partial(sum) of the same
 * tensor, but not the one Replicate -> Partial gives (that divides by the
 * group size). The two must never be mixed up, so the searches never take
 * this step on their own: a pair whose destination asks for it is planned
 * here in three parts (gather what a later mesh dim still splits, zero
 * fill, then the ordinary plan to the destination with the zero-filled
 * dims kept as partials), and the executor checks the parts against their
 * own definitions (redistribute.c).
 */
#include <string.h>

#include "kernels/alloc.h"
#include "localtensor/kernels/split.h"
#include "localtensor/layout.h"
#include "localtensor/plan/plan_impl.h"
#include "localtensor/spec_impl.h"

/* The zero-fill dims of src -> dst: zf[i] = 1 for a mesh dim of size > 1
 * with a plain S(d) source and a P(sum) destination. Returns their count. */
static int zero_fill_dims(const lt_mesh *mesh, const lt_placement *src, const lt_placement *dst,
                          int *zf) {
    int n = 0;
    for (int i = 0; i < mesh->ndim; i++) {
        zf[i] = mesh->shape[i] > 1 && src[i].kind == LT_PL_SHARD && dst[i].kind == LT_PL_PARTIAL &&
                dst[i].op == LT_REDOP_SUM;
        n += zf[i];
    }
    return n;
}

/* The states around the zero fill: g = src with every later mesh dim that
 * splits a zero-fill dim's tensor dim (and is not zero-filled itself) turned
 * to R, and every Partial that cannot mix with sum (max, min, product)
 * reduced to R; x = g with the zero-fill dims turned to P(sum). */
static void zero_fill_states(const lt_mesh *mesh, const lt_placement *src, const int *zf,
                             lt_placement *g, lt_placement *x) {
    int M = mesh->ndim;
    memcpy(g, src, sizeof(lt_placement) * (size_t)M);
    for (int j = 0; j < M; j++)
        if (g[j].kind == LT_PL_PARTIAL && g[j].op != LT_REDOP_SUM && g[j].op != LT_REDOP_AVG)
            g[j] = lt_replicate();
    for (int i = 0; i < M; i++) {
        if (!zf[i])
            continue;
        for (int j = i + 1; j < M; j++)
            if (!zf[j] && mesh->shape[j] > 1 && lt_placement_is_shard_like(&g[j]) &&
                g[j].dim == src[i].dim)
                g[j] = lt_replicate();
    }
    memcpy(x, g, sizeof(lt_placement) * (size_t)M);
    for (int i = 0; i < M; i++)
        if (zf[i])
            x[i] = lt_partial(LT_REDOP_SUM);
}

/* Copies the steps of part q (its states from state `skip` on) into p from
 * step *s on, their `after` pointing into p's states. */
static void copy_part(lt_plan *p, const lt_plan *q, int *s) {
    int M = p->mesh.ndim;
    for (int k = 0; k < q->nsteps; k++, (*s)++) {
        p->steps[*s] = q->steps[k];
        lt_placement *after = lt__plan_x_of(p)->states + (size_t)(*s + 1) * (size_t)M;
        memcpy(after, q->steps[k].after, sizeof(lt_placement) * (size_t)M);
        p->steps[*s].after = after;
    }
    p->ncomm += q->ncomm;
    p->total_bytes += q->total_bytes;
    p->states_explored += q->states_explored;
    p->search_truncated |= q->search_truncated;
}

/* The combined plan of parts a (to g) and b around the zero-fill steps of
 * zf (last mesh dim first). Takes ownership of a and b (also on error). */
static lt_status combine(lt_plan *a, lt_plan *b, const lt_placement *g, const int *zf, int nz,
                         lt_plan **out) {
    int M = a->mesh.ndim, n = a->nsteps + nz + b->nsteps;
    lt__plan_head h = {&a->mesh, a->dtype, a->ndim, a->shape, a->src, b->dst, a->planner};
    lt_plan *p = lt__plan_new(&h, n, 0, 0, "a zero fill's plan");
    if (!p) {
        lt_plan_free(a);
        lt_plan_free(b);
        return LT_NOMEM;
    }
    lt__plan_x *px = lt__plan_x_of(p);
    px->parts[0] = a;
    px->parts[1] = b;
    int s = 0;
    copy_part(p, a, &s);
    /* spelled as g (a's search may spell its last layout another way) */
    memcpy(px->states + (size_t)s * (size_t)M, g, sizeof(lt_placement) * (size_t)M);
    px->zf_first = s;
    for (int i = M - 1; i >= 0; i--) {
        if (!zf[i])
            continue;
        const lt_placement *before = px->states + (size_t)s * (size_t)M;
        lt_placement *after = px->states + (size_t)(s + 1) * (size_t)M;
        memcpy(after, before, sizeof(lt_placement) * (size_t)M);
        after[i] = lt_partial(LT_REDOP_SUM);
        LT_ASSERT(lt__step_kind_of(&p->mesh, before, i, &after[i]) == LT__STEP_ZERO_FILL);
        lt_plan_step *ps = &p->steps[s++];
        ps->mesh_dim = i;
        ps->from = before[i];
        ps->to = after[i];
        ps->coll = LT_COLL_BARRIER;
        ps->collective = "none";
        ps->local_op = lt__step_kind_local(LT__STEP_ZERO_FILL);
        ps->after = after;
    }
    px->zf_end = s;
    copy_part(p, b, &s);
    /* the last state is spelled as the destination (b may have no steps
     * when x already holds its layout under another spelling) */
    memcpy(px->states + (size_t)n * (size_t)M, b->dst,
           sizeof(lt_placement) * (size_t)M);
    *out = p;
    return LT_OK;
}

lt_status lt__plan_zero_fill(const lt_spec *from, const lt_placement *dst, lt_planner planner,
                             int shared, lt_plan **out) {
    const lt_mesh *mesh = from->mesh;
    int zf[LT_MESH_MAX_DIMS];
    *out = NULL;
    int nz = zero_fill_dims(mesh, from->placements, dst, zf);
    if (!nz)
        return LT_OK;
    lt_placement g[LT_MESH_MAX_DIMS], x[LT_MESH_MAX_DIMS];
    zero_fill_states(mesh, from->placements, zf, g, x);
    if (!lt__partials_ok(x, mesh->ndim))
        return lt__err(LT_UNSUPPORTED,
                       "not supported yet: zero fill to P(sum) while another mesh dim stays "
                       "Partial of another op (go through R)");
    lt_spec xs = lt__spec_with(from, x);
    lt_plan *a = NULL, *b = NULL;
    LT_TRY(lt__plan_build(from, g, planner, shared, &a));
    lt_status st = lt__plan_build(&xs, dst, planner, shared, &b);
    if (st) {
        lt_plan_free(a);
        return st;
    }
    return combine(a, b, g, zf, nz, out);
}

/* One zero-fill step: mesh dim i of `from` goes from S(d) to P(sum). Every
 * rank's new shard is a new zero tensor of the next state's local shape
 * whose piece (the rank's position in its group, by the Shard's rule) along
 * d is a copy of its shard. out[] receives new tensors (absent inputs give
 * none); on error none are left. */
lt_status lt__zero_fill_run(const lt_spec *from, const lt_plan_step *ps, lt_tensor *const *in,
                            lt_tensor **out) {
    const lt_mesh *mesh = from->mesh;
    int i = ps->mesh_dim, m = mesh->shape[i], d = ps->from.dim;
    lt_status st = LT_OK;
    for (int r = 0; r < mesh->world && !st; r++) {
        if (in[r]->absent)
            continue; /* held by another process: left out */
        int64_t shape[LT_MAX_DIMS];
        int c;
        lt_mesh_group_of(mesh, i, r, &c);
        st = lt_local_shape_and_offset(mesh, from->ndim, from->shape, ps->after, r, shape, NULL);
        lt_tensor *t = NULL, *piece = NULL;
        int64_t size = 0, off = 0;
        if (!st)
            st = lt_split_piece(&ps->from.rule, shape[d], m, c, &size, &off);
        if (!st && size != in[r]->shape[d])
            st = lt__err(
                LT_SHAPE,
                "zero fill on mesh dim %d: rank %d holds %lld along dim %d, its piece is %lld", i,
                r, (long long)in[r]->shape[d], d, (long long)size);
        if (!st)
            st = lt_tensor_new(in[r]->dtype, from->ndim, shape, &t);
        if (!st)
            st = lt_narrow(t, d, off, size, &piece);
        if (!st)
            st = lt_copy(piece, in[r]);
        lt_tensor_free(piece);
        if (st)
            lt_tensor_free(t);
        else
            out[r] = t;
    }
    if (st)
        for (int r = 0; r < mesh->world; r++) {
            lt_tensor_free(out[r]);
            out[r] = NULL;
        }
    return st;
}
