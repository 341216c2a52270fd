/* localtensor/plan_trace.c — the comm trace of a plan without running it.
 *
 * Sampled and values-free redistributes (localtensor/numerics.h) do not run
 * the collectives, yet report every rank's bytes. The bytes of a collective
 * depend only on the shapes its members hold and its arguments, so this
 * file calls each step's collective "on paper": for every group it hands the
 * trace's byte model (collectives_sim/trace_impl.h, the same code the
 * collectives use) stand-in tensors that carry only a shape and a dtype (no
 * storage: the model never reads data), with the arguments the executor
 * passes (localtensor/redistribute.c run_step, localtensor/plan_exec.c).
 * test/test_numerics.c checks that the events equal a full run's.
 */
#include <string.h>

#include "collectives_sim/trace_impl.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "localtensor/numerics.h"
#include "localtensor/plan_impl.h"

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
    const lt_placement *before = p->states_ + (size_t)s * (size_t)p->mesh.ndim;
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

lt_status lt_plan_trace(const lt_plan *p, lt_trace *trace) {
    const lt_mesh *mesh = &p->mesh;
    int W = mesh->world, nd = p->ndim > 0 ? p->ndim : 1, nmax = 1;
    for (int i = 0; i < mesh->ndim; i++)
        if (mesh->shape[i] > nmax) nmax = mesh->shape[i];
    int64_t *shapes = lt__malloc(sizeof(int64_t) * (size_t)W * (size_t)nd);   /* (W, nd) local shapes */
    lt_tensor **in = lt__calloc((size_t)W, sizeof *in), **out = lt__calloc((size_t)W, sizeof *out);
    lt_tensor *pin = lt__calloc((size_t)nmax, sizeof *pin), *pout = lt__calloc((size_t)nmax, sizeof *pout);
    int64_t *sizes = lt__malloc(sizeof(int64_t) * (size_t)nmax * (size_t)nmax);   /* (n, n) split sizes */
    int *grp = lt__malloc(sizeof(int) * (size_t)nmax);
    lt_status st = shapes && in && out && pin && pout && sizes && grp ? LT_OK : lt__err(LT_NOMEM, "out of memory");
    for (int s = 0; s < p->nsteps && !st; s++) {
        paper_call c;
        if (!step_call(p, s, &c)) continue;
        const lt_placement *before = p->states_ + (size_t)s * (size_t)mesh->ndim;
        if (lt__layout_shapes(mesh, p->ndim, p->shape, before, shapes)) {
            st = lt__err(LT_INVALID, "internal: step %d's layout is not computable", s + 1);
            break;
        }
        int i = p->steps[s].mesh_dim, n = mesh->shape[i], ng = lt_mesh_ngroups(mesh, i);
        size_t *sent, *recv;
        st = lt__trace_reserve(trace);
        if (st) break;
        if (!lt__trace_record(trace, c.coll, i, ng, n, p->dtype, &sent, &recv)) continue;   /* disabled */
        lt_trace_event ev;
        if (lt_trace_get(trace, lt_trace_count(trace) - 1, &ev) || ev.world != W) {
            st = lt__err(LT_INVALID, "plan trace: the trace is for %d ranks but the mesh has %d", ev.world, W);
            break;
        }
        for (int g = 0; g < ng && !st; g++) {
            lt_mesh_group(mesh, i, g, grp);
            for (int j = 0; j < n; j++) {
                paper(&pin[j], p->dtype, p->ndim, shapes + (size_t)grp[j] * (size_t)nd);
                pout[j] = pin[j];
                in[grp[j]] = &pin[j];
                out[grp[j]] = &pout[j];
            }
            /* what a member receives, where the byte model reads it: its piece */
            if (c.rule) {
                for (int j = 0; j < n && !st; j++) {
                    const lt_tensor *x = c.coll == LT_COLL_SCATTER ? &pin[c.root] : &pin[j];
                    st = lt_split_sizes(c.rule, x->shape[c.dim], n, sizes + (size_t)j * (size_t)n);
                }
                for (int j = 0; j < n && !st; j++) {
                    if (c.coll == LT_COLL_ALL_TO_ALL) continue;
                    pout[j].shape[c.dim] = sizes[(size_t)j * (size_t)n + (size_t)j];   /* piece j of its own (or the root's) */
                }
            }
            if (!st)
                lt__trace_group_bytes(trace, c.coll, n, grp, in, out, c.root, c.dim, c.coll == LT_COLL_ALL_TO_ALL ? sizes : NULL,
                                      c.perm);
            for (int j = 0; j < n; j++) in[grp[j]] = out[grp[j]] = NULL;
        }
        lt__trace_set_args(trace, c.op, c.root, c.dim, c.cdim);
        lt__trace_commit(trace);
    }
    lt__free(shapes);
    lt__free(in);
    lt__free(out);
    lt__free(pin);
    lt__free(pout);
    lt__free(sizes);
    lt__free(grp);
    return st;
}
