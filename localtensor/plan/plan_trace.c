/* localtensor/plan/plan_trace.c — the comm trace of a plan without running it.
 *
 * Sampled and values-free redistributes (localtensor/numerics.h) do not run
 * the collectives, yet report every rank's bytes. The bytes of a collective
 * depend only on the shapes its members hold and its arguments, so this
 * file calls each step's collective "on paper": for every group it hands the
 * trace's byte model (collectives_sim/trace_impl.h, the same code the
 * collectives use) stand-in tensors that carry only a shape and a dtype (no
 * storage: the model never reads data), with the arguments the executor
 * passes (localtensor/redistribute.c run_step, localtensor/plan/plan_exec.c).
 * test/test_numerics.c checks that the events equal a full run's.
 */
#include <string.h>

#include "collectives_sim/trace_impl.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "localtensor/numerics.h"
#include "localtensor/plan/plan_impl.h"

/* The collective of step s and its arguments. */
typedef struct paper_call {
    lt_coll coll;
    int op, root, dim, cdim;
    const lt_split_rule *rule;    /* reduce_scatter, all_to_all, scatter */
    const int *perm;
} paper_call;

static int step_call(const lt_plan *p, int s, paper_call *c) {
    const lt_plan_step *ps = &p->steps[s];
    memset(c, 0, sizeof *c);
    c->op = c->root = c->dim = c->cdim = -1;
    if (!ps->comm) return 0;
    if (ps->move_) {
        const lt__move *m = ps->move_;
        c->coll = lt__mv_coll(m->kind);
        switch (m->kind) {
        case LT__MV_ALL_GATHER: c->dim = m->dim; break;
        case LT__MV_GATHER: c->dim = m->dim, c->root = m->root; break;
        case LT__MV_ALL_TO_ALL: c->dim = m->dim, c->cdim = m->cdim, c->rule = &m->rule; break;
        case LT__MV_SCATTER: c->dim = m->dim, c->root = m->root, c->rule = &m->rule; break;
        case LT__MV_PERMUTE: c->perm = m->perm; break;
        case LT__MV_ALL_REDUCE: c->op = (int)m->op; break;
        case LT__MV_REDUCE_SCATTER: c->op = (int)m->op, c->dim = m->dim, c->rule = &m->rule; break;
        case LT__MV_REDUCE: c->op = (int)m->op, c->root = m->root; break;
        default: return 0;
        }
        return 1;
    }
    const lt_placement *before = lt__plan_x_of(p)->states + (size_t)s * (size_t)p->mesh.ndim;
    lt__step_kind k = lt__step_kind_of(&p->mesh, before, ps->mesh_dim, &ps->to);
    c->coll = lt__step_kind_coll(k);
    const lt_placement *a = &ps->from, *b = &ps->to;
    switch (k) {
    case LT__STEP_ALL_GATHER:
    case LT__STEP_GATHER_STRIDED: c->dim = a->dim; break;
    case LT__STEP_ALL_REDUCE: c->op = (int)a->op; break;
    case LT__STEP_REDUCE_SCATTER: c->op = (int)a->op, c->dim = b->dim, c->rule = &b->rule; break;
    case LT__STEP_ALL_TO_ALL: c->dim = b->dim, c->cdim = a->dim, c->rule = &b->rule; break;
    default: return 0;
    }
    return 1;
}

/* Stand-in tensors of group members: shape and dtype only. */
static void paper(lt_tensor *t, lt_dtype dt, int ndim, const int64_t *shape) {
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    t->ndim = ndim;
    memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
}

/* Scratch for the events of one mesh: world-length pointer tables and one
 * group's stand-ins. */
typedef struct paper_scratch {
    int64_t *shapes;              /* (W, nd) local shapes of the state */
    lt_tensor **in, **out;        /* (W) */
    lt_tensor *pin, *pout;        /* (nmax) */
    int64_t *sizes;               /* (nmax, nmax) split sizes */
    int *grp;                     /* (nmax) */
    int nd;
} paper_scratch;

static void scratch_free(paper_scratch *x) {
    lt__free(x->shapes);
    lt__free(x->in);
    lt__free(x->out);
    lt__free(x->pin);
    lt__free(x->pout);
    lt__free(x->sizes);
    lt__free(x->grp);
}

/* Scratch for groups of up to nmax members (at least every mesh dim's size). */
static lt_status scratch_new(const lt_mesh *mesh, int ndim, int nmax, paper_scratch *x) {
    int W = mesh->world;
    memset(x, 0, sizeof *x);
    x->nd = ndim > 0 ? ndim : 1;
    for (int i = 0; i < mesh->ndim; i++)
        if (mesh->shape[i] > nmax) nmax = mesh->shape[i];
    x->shapes = lt__malloc(sizeof(int64_t) * (size_t)W * (size_t)x->nd);
    x->in = lt__calloc((size_t)W, sizeof *x->in);
    x->out = lt__calloc((size_t)W, sizeof *x->out);
    x->pin = lt__calloc((size_t)nmax, sizeof *x->pin);
    x->pout = lt__calloc((size_t)nmax, sizeof *x->pout);
    x->sizes = lt__malloc(sizeof(int64_t) * (size_t)nmax * (size_t)nmax);
    x->grp = lt__malloc(sizeof(int) * (size_t)nmax);
    if (x->shapes && x->in && x->out && x->pin && x->pout && x->sizes && x->grp) return LT_OK;
    scratch_free(x);
    return lt__err(LT_NOMEM, "out of memory");
}

/* One event: call c along mesh dim i on members holding x->shapes. */
static lt_status paper_event(lt_trace *trace, const lt_mesh *mesh, lt_dtype dt, int ndim,
                             const paper_call *c, int i, paper_scratch *x) {
    int W = mesh->world, n = mesh->shape[i], ng = lt_mesh_ngroups(mesh, i);
    size_t *sent, *recv;
    lt_status st = lt__trace_reserve(trace);
    if (st) return st;
    if (!lt__trace_record(trace, c->coll, i, ng, n, dt, &sent, &recv)) return LT_OK; /* disabled */
    lt_trace_event ev;
    if (lt_trace_get(trace, lt_trace_count(trace) - 1, &ev) || ev.world != W)
        return lt__err(LT_INVALID, "paper trace: the trace is for %d ranks but the mesh has %d",
                       ev.world, W);
    for (int g = 0; g < ng && !st; g++) {
        lt_mesh_group(mesh, i, g, x->grp);
        for (int j = 0; j < n; j++) {
            paper(&x->pin[j], dt, ndim, x->shapes + (size_t)x->grp[j] * (size_t)x->nd);
            x->pout[j] = x->pin[j];
            x->in[x->grp[j]] = &x->pin[j];
            x->out[x->grp[j]] = &x->pout[j];
        }
        /* what a member receives, where the byte model reads it: its piece */
        if (c->rule) {
            for (int j = 0; j < n && !st; j++) {
                const lt_tensor *t = c->coll == LT_COLL_SCATTER ? &x->pin[c->root] : &x->pin[j];
                st = lt_split_sizes(c->rule, t->shape[c->dim], n, x->sizes + (size_t)j * (size_t)n);
            }
            for (int j = 0; j < n && !st; j++) {
                if (c->coll == LT_COLL_ALL_TO_ALL) continue;
                x->pout[j].shape[c->dim] =
                    x->sizes[(size_t)j * (size_t)n +
                             (size_t)j]; /* piece j of its own (or the root's) */
            }
        }
        if (!st)
            lt__trace_group_bytes(trace, c->coll, n, x->grp, x->in, x->out, c->root, c->dim,
                                  c->coll == LT_COLL_ALL_TO_ALL ? x->sizes : NULL, c->perm);
        for (int j = 0; j < n; j++) x->in[x->grp[j]] = x->out[x->grp[j]] = NULL;
    }
    lt__trace_set_args(trace, c->op, c->root, c->dim, c->cdim);
    lt__trace_commit(trace);
    return st;
}

lt_status lt_plan_trace(const lt_plan *p, lt_trace *trace) {
    const lt_mesh *mesh = &p->mesh;
    paper_scratch x;
    int nmax = 1;   /* the largest flattened group (--moves all): up to the whole mesh */
    for (int s = 0; s < p->nsteps; s++) {
        int n = lt__group_size(mesh, p->steps[s].mesh_dim, p->steps[s].mesh_span);
        if (n > nmax) nmax = n;
    }
    LT_TRY(scratch_new(mesh, p->ndim, nmax, &x));
    lt_status st = LT_OK;
    for (int s = 0; s < p->nsteps && !st; s++) {
        paper_call c;
        if (!step_call(p, s, &c)) continue;
        const lt_placement *before = lt__plan_x_of(p)->states + (size_t)s * (size_t)mesh->ndim;
        if (lt__layout_shapes(mesh, p->ndim, p->shape, before, x.shapes)) {
            st = lt__err(LT_INVALID, "internal: step %d's layout is not computable", s + 1);
            break;
        }
        const lt_plan_step *ps = &p->steps[s];
        lt_mesh fm;   /* a flattened group: mesh dim mesh_dim of the flattened mesh */
        if (ps->mesh_span > 1) {
            int dims[LT_MESH_MAX_DIMS];
            for (int k = 0; k < ps->mesh_span; k++) dims[k] = ps->mesh_dim + k;
            st = lt_mesh_flatten(mesh, dims, ps->mesh_span, NULL, &fm);
        }
        if (!st)
            st = paper_event(trace, ps->mesh_span > 1 ? &fm : mesh, p->dtype, p->ndim, &c,
                             ps->mesh_dim, &x);
    }
    scratch_free(&x);
    return st;
}

lt_status lt_coll_trace_paper(lt_trace *trace, const lt_spec *spec, lt_coll coll, int mesh_dim,
                              int op, int root, int dim, int concat_dim, const lt_split_rule *rule,
                              const int *perm) {
    const lt_mesh *mesh = spec->mesh;
    lt_split_rule chunk = lt_split_chunk();   /* the collectives' default split */
    paper_call c = {coll, op, root, dim, concat_dim, NULL, perm};
    if (coll == LT_COLL_REDUCE_SCATTER || coll == LT_COLL_SCATTER || coll == LT_COLL_ALL_TO_ALL)
        c.rule = rule ? rule : &chunk;
    if (mesh_dim < 0 || mesh_dim >= mesh->ndim)
        return lt__err(LT_INVALID, "paper trace: mesh dim %d is out of range (the mesh has %d)",
                       mesh_dim, mesh->ndim);
    paper_scratch x;
    LT_TRY(scratch_new(mesh, spec->ndim, 1, &x));
    lt_status st = LT_OK;
    if (lt__layout_shapes(mesh, spec->ndim, spec->shape, spec->placements, x.shapes))
        st = lt__err(LT_INVALID, "internal: the layout is not computable");
    if (!st) st = paper_event(trace, mesh, spec->dtype, spec->ndim, &c, mesh_dim, &x);
    scratch_free(&x);
    return st;
}

/* ---- the plan's bytes against a run's ---------------------------------------- */

lt_status lt__plan_check_trace(const lt_plan *p, const lt_trace *trace, size_t since) {
    size_t ev = since;
    for (int s = 0; s < p->nsteps; s++) {
        const lt_plan_step *ps = &p->steps[s];
        if (!ps->comm) continue;
        lt_trace_event e;
        if (lt_trace_get(trace, ev++, &e))
            return lt__err(LT_INVALID,
                           "internal: step %d of the plan (%s on mesh dim %d) issued no collective",
                           s + 1, ps->collective, ps->mesh_dim);
        size_t mx = 0;
        for (int r = 0; r < e.world; r++) mx = e.recv[r] > mx ? e.recv[r] : mx;
        int n = lt__group_size(&p->mesh, ps->mesh_dim, ps->mesh_span);   /* flattened: all */
        if (e.coll != ps->coll || e.mesh_dim != ps->mesh_dim || e.total_recv != ps->bytes_total ||
            mx != ps->bytes_per_rank || e.group_size != n)
            return lt__err(
                LT_INVALID,
                "internal: step %d: the plan says %s on mesh dim %d, %zu bytes received (%zu "
                "on the busiest rank, groups of %d); the collective run says %s on mesh dim %d, "
                "%zu (%zu, groups of %d)",
                s + 1, ps->collective, ps->mesh_dim, ps->bytes_total, ps->bytes_per_rank, n,
                lt_coll_name(e.coll), e.mesh_dim, e.total_recv, mx, e.group_size);
    }
    if (ev != lt_trace_count(trace))
        return lt__err(LT_INVALID, "internal: the run issued %zu collectives, the plan lists %zu",
                       lt_trace_count(trace) - since, ev - since);
    return LT_OK;
}
