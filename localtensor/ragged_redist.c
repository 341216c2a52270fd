/* localtensor/ragged_redist.c — redistribute to or from a RaggedShard
 * (docs/SEMANTICS.md §11.10). The planner does not know RaggedShard, so a
 * layout with one takes this generic route instead, in three parts on the
 * views (localtensor/ragged.h): Partial source dims are reduced first by an
 * ordinary redistribute (P -> R); then one point-to-point exchange over the
 * whole mesh gives each rank exactly the elements of its destination shard
 * that its source shard lacks, each from the lowest rank that holds it
 * (recorded in the comm's trace as one all_to_all, mesh_dim -1); last,
 * Partial destination dims are made by an ordinary redistribute (R -> P). */
#include "localtensor/ragged_impl.h"

#include <string.h>

#include "collectives_sim/trace_impl.h"
#include "kernels/alloc.h"
#include "localtensor/kernels/backend.h"
#include "kernels/status_impl.h"
#include "kernels/tensor_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/layout.h"

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

/* Records the exchange's bytes in comm's trace (when it has one, enabled). */
static lt_status xchg_trace(const xchg *x, lt_comm *comm) {
    lt_trace *t = comm ? lt_comm_trace(comm) : NULL;
    size_t *sent, *recv;
    if (!t || !lt_trace_enabled(t)) return LT_OK;
    LT_TRY(lt__trace_reserve(t));
    if (!lt__trace_record(t, LT_COLL_ALL_TO_ALL, -1, 1, x->W, x->dst->dtype, &sent, &recv))
        return LT_OK;
    memcpy(sent, x->sent, sizeof(size_t) * (size_t)x->W);
    memcpy(recv, x->recv, sizeof(size_t) * (size_t)x->W);
    lt__trace_set_args(t, -1, -1, -1, -1);
    lt__trace_commit(t);
    return LT_OK;
}

/* The exchange: a (source view, no Partial) into a new DTensor of checked
 * spec dst (no Partial; same elements). */
static lt_status exchange(const lt_dtensor *a, const lt_spec *dst, lt_comm *comm,
                          lt_dtensor **out) {
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

/* The source view of dt with its Partial dims reduced: *a is dt's view
 * (borrowed, *owned NULL) or a new DTensor (*owned = it). */
static lt_status reduce_source(const lt_dtensor *dt, const lt_redistribute_opts *o,
                               lt_dtensor *a, lt_dtensor **owned) {
    lt_placement nop[LT_MESH_MAX_DIMS];
    int np = lt_dtensor_mesh(dt)->ndim;
    *owned = NULL;
    if (lt_placements_have_ragged(dt->placements, np)) LT_TRY(lt__ragged_as_view(dt, a));
    else *a = *dt;
    if (!without_partials(a->placements, np, nop)) return LT_OK;
    LT_TRY(lt_redistribute(a, nop, np, o, owned, NULL));
    *a = **owned;
    return LT_OK;
}

lt_status lt__ragged_redistribute(const lt_dtensor *dt, const lt_placement *dst, int np,
                                  const lt_redistribute_opts *opts, lt_dtensor **out,
                                  lt_plan **plan) {
    const lt_mesh *mesh = lt_dtensor_mesh(dt);
    lt_placement norm[LT_MESH_MAX_DIMS], nop[LT_MESH_MAX_DIMS];
    lt_ragged_view dv;
    lt_spec ds;
    lt_dtensor a, *owned = NULL, *b = NULL;
    lt_redistribute_opts o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    o.report = NULL;   /* the sub-redistributes would each overwrite it */
    *out = NULL;
    if (plan) *plan = NULL;   /* the ragged route makes no lt_plan: see the trace */
    if (o.comm && !lt_mesh_equal(lt_comm_mesh(o.comm), mesh))
        return lt__err(LT_INVALID, "redistribute: opts->comm was made for another mesh");
    LT_TRY(lt_placements_check(mesh, dt->ndim, dst, np, norm));
    LT_TRY(lt_ragged_view_of(mesh, dt->ndim, dt->shape, norm, &dv));
    int dst_partial = without_partials(dv.pl, np, nop);
    LT_TRY(lt_spec_init(mesh, dt->dtype, dv.ndim, dv.shape, nop, np, &ds));
    lt_status st = reduce_source(dt, &o, &a, &owned);
    if (!st) st = exchange(&a, &ds, o.comm, &b);
    lt_dtensor_free(owned);
    if (!st && dst_partial) {
        lt_dtensor *c = NULL;
        st = lt_redistribute(b, dv.pl, np, &o, &c, NULL);
        lt_dtensor_free(b);
        b = c;
    }
    if (st) {
        lt_dtensor_free(b);
        return st;
    }
    lt__ragged_relabel(b, dt->ndim, dt->shape, norm);
    *out = b;
    return LT_OK;
}
