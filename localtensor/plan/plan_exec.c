/* localtensor/plan/plan_exec.c — runs one step of a min-cost plan on the shards.
 *
 * The step's collective is called exactly as planned, so the comm trace
 * records what the plan costed. Then every rank turns what it received (or,
 * for local work, what it holds) into its shard of the next state: the
 * index lists of layout math (localtensor/layout.h) say which global index
 * each position of the received tensor holds and which ones the next state
 * wants, in which order; one index_select per dim (a narrow when the
 * positions are consecutive) picks and reorders. A rank whose next shard
 * holds nothing gets an empty tensor of that shape. The redistribute tests
 * check every resulting state against the verifier's direct reshard.
 *
 * Every rank's layout of a state is a pure function of the mesh shape, the
 * global shape and the placements; a sweep runs the same few hundred
 * states again and again (each step's next state is the next step's
 * previous one), so small layout sets are kept in a process-wide cache
 * (layouts_of) and shared read-only.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/cache_impl.h"
#include "localtensor/dtensor.h"
#include "localtensor/layout.h"
#include "localtensor/plan/plan_impl.h"
#include "collectives_sim/engine_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/spec_impl.h"

static lt_status nomem(void) {
    return lt__err(LT_NOMEM, "out of memory while running a redistribute step");
}

/* The global index at position k of rank layout l along d. */
static int64_t idx_at(const lt_rank_layout *l, int d, int64_t k) {
    return l->idx[d] ? l->idx[d][k] : k;
}

/* A growing list of global indices. */
typedef struct ilist {
    int64_t *v;
    int64_t n, cap;
} ilist;

static int il_push(ilist *a, const lt_rank_layout *l, int d, int64_t pos, int64_t cnt) {
    if (cnt <= 0) return 0;
    if (a->n + cnt > a->cap) {
        int64_t cap = (a->n + cnt) * 2;
        int64_t *v = lt__realloc(a->v, sizeof(int64_t) * (size_t)cap);
        if (!v) return -1;
        a->v = v;
        a->cap = cap;
    }
    for (int64_t k = 0; k < cnt; k++) a->v[a->n++] = idx_at(l, d, pos + k);
    return 0;
}

typedef struct vpos {
    int64_t v, pos;
} vpos;

static int vpos_cmp(const void *x, const void *y) {
    const vpos *a = x, *b = y;
    return a->v < b->v ? -1 : a->v > b->v;
}

/* t's positions along d of the global indices want[0..k), given that t holds
 * have[0..n) there; then the narrow or index_select that picks them. *out
 * is new (t borrowed). */
static lt_status pick(const lt_tensor *t, int d, const int64_t *have, int64_t n,
                      const lt_rank_layout *b, lt_tensor **out) {
    int64_t k = b->local_shape[d];
    /* the usual case: t holds one ascending run of global indices along d,
     * so index v sits at v - have[0] (no sort, no search) */
    int ascending = 1;
    for (int64_t j = 1; j < n && ascending; j++) ascending = have[j] == have[0] + j;
    vpos *sv = ascending ? NULL : lt__malloc(sizeof(vpos) * (size_t)(n ? n : 1));
    int64_t *pos = lt__malloc(sizeof(int64_t) * (size_t)(k ? k : 1));
    lt_status st = LT_OK;
    if ((!ascending && !sv) || !pos) st = nomem();
    for (int64_t j = 0; !st && !ascending && j < n; j++) sv[j] = (vpos){have[j], j};
    if (!st && !ascending) qsort(sv, (size_t)n, sizeof(vpos), vpos_cmp);
    int run = 1;
    for (int64_t j = 0; !st && j < k; j++) {
        vpos key = {idx_at(b, d, j), 0};
        int64_t at = -1;
        if (ascending) {
            if (n > 0 && key.v >= have[0] && key.v - have[0] < n) at = key.v - have[0];
        } else {
            const vpos *f = bsearch(&key, sv, (size_t)n, sizeof(vpos), vpos_cmp);
            if (f) at = f->pos;
        }
        if (at < 0)
            st = lt__err(
                LT_SHAPE,
                "internal: a redistribute step did not deliver global index %lld along dim %d",
                (long long)key.v, d);
        else pos[j] = at;
        if (!st && j) run &= pos[j] == pos[j - 1] + 1;
    }
    if (!st) {
        if (run && k == n) st = lt_tensor_view(t, out);
        else if (run) st = lt_narrow(t, d, k ? pos[0] : 0, k, out);
        else st = lt_index_select(t, d, pos, k, out);
    }
    lt__free(sv);
    lt__free(pos);
    return st;
}

/* Rank r's next shard from t, which holds the global indices have[d] along
 * every dim d. *out is new and contiguous; t is borrowed. When t already is
 * that shard (contiguous, every index in place) and `share` is set, *out is
 * a view sharing t's buffer instead of a copy (its writers copy first). */
static lt_status reshape_to(const lt_tensor *t, ilist *have, int nd, const lt_rank_layout *b,
                            int share, lt_tensor **out) {
    lt_tensor *cur = NULL;
    lt_status st = lt_tensor_view(t, &cur);
    for (int d = 0; d < nd && !st; d++) {
        lt_tensor *nx = NULL;
        st = pick(cur, d, have[d].v, have[d].n, b, &nx);
        lt_tensor_free(cur);
        cur = nx;
    }
    int whole = share && !st && cur->storage == t->storage && cur->offset == t->offset &&
                lt_is_contiguous(cur) && lt_numel(cur) == lt_numel(t);
    if (whole) {
        *out = cur;   /* the whole of t, in order: no copy */
        return LT_OK;
    }
    if (!st) st = lt_clone(cur, out);
    lt_tensor_free(cur);
    return st;
}

/* received's gathers: every member's run along e, the others as the first
 * member holding something has them. */
static lt_status received_gather(const lt__move *m, const lt_rank_layout *la, const int *grp,
                                 int n, const lt_rank_layout *own, ilist *have) {
    int nd = m->ndim, e = m->dim;
    const lt_rank_layout *first = own;   /* the lists off e: any member holding something */
    for (int q = 0; q < n; q++)
        if (lt__numel_sat(nd, la[grp[q]].local_shape)) {
            first = &la[grp[q]];
            break;
        }
    for (int d = 0; d < nd; d++) {
        if (d != e) {
            if (il_push(&have[d], first, d, 0, first->local_shape[d])) return nomem();
            continue;
        }
        for (int q = 0; q < n; q++)
            if (il_push(&have[d], &la[grp[q]], d, 0, la[grp[q]].local_shape[d])) return nomem();
    }
    return LT_OK;
}

/* received's all_to_all: member j's piece along e of every member, which
 * concatenate along f. */
static lt_status received_a2a(const lt__move *m, const lt_rank_layout *la, const int *grp, int n,
                              int j, const lt_rank_layout *own, ilist *have) {
    int nd = m->ndim, e = m->dim, f = m->cdim;
    int64_t size, off;
    const lt_rank_layout *first = NULL;
    for (int q = 0; q < n && !first; q++) {
        const lt_rank_layout *x = &la[grp[q]];
        if (lt__split_piece_quiet(&m->rule, x->local_shape[e], n, j, &size, &off))
            return lt__err(LT_INVALID, "internal: split");
        int64_t ne = size;
        for (int d = 0; d < nd; d++)
            if (d != e) ne = x->local_shape[d] ? lt__mul_sat(ne, x->local_shape[d]) : 0;
        if (ne) first = x;
    }
    if (!first) first = own;
    for (int d = 0; d < nd; d++) {
        if (d != f && d != e) {
            if (il_push(&have[d], first, d, 0, first->local_shape[d])) return nomem();
        } else if (d == e && d != f) {
            lt__split_piece_quiet(&m->rule, first->local_shape[e], n, j, &size, &off);
            if (il_push(&have[d], first, d, off, size)) return nomem();
        } else {
            for (int q = 0; q < n; q++) {
                const lt_rank_layout *x = &la[grp[q]];
                if (d == e) lt__split_piece_quiet(&m->rule, x->local_shape[e], n, j, &size, &off);
                else off = 0, size = x->local_shape[d];
                if (il_push(&have[d], x, d, off, size)) return nomem();
            }
        }
    }
    return LT_OK;
}

/* What member j of a group (ranks grp[0..n)) holds along every dim after
 * move m, into have[nd]; *from: the tensor it is in (received, or its own
 * for local work). */
static lt_status received(const lt__move *m, const lt_rank_layout *la, const int *grp, int n, int j,
                          ilist *have) {
    int nd = m->ndim, e = m->dim;
    const lt_rank_layout *own = &la[grp[j]];
    int64_t size, off;
    for (int d = 0; d < nd; d++) have[d].n = 0;
    switch (m->kind) {
    case LT__MV_ALL_GATHER:
    case LT__MV_GATHER: return received_gather(m, la, grp, n, own, have);
    case LT__MV_ALL_TO_ALL: return received_a2a(m, la, grp, n, j, own, have);
    case LT__MV_SCATTER:
    case LT__MV_REDUCE_SCATTER: {
        const lt_rank_layout *x = m->kind == LT__MV_SCATTER ? &la[grp[m->root]] : own;
        for (int d = 0; d < nd; d++) {
            off = 0;
            size = x->local_shape[d];
            if (d == e) lt__split_piece_quiet(&m->rule, x->local_shape[e], n, j, &size, &off);
            if (il_push(&have[d], x, d, off, size)) return nomem();
        }
        return LT_OK;
    }
    case LT__MV_PERMUTE: {
        int s = 0;
        while (s < n && m->perm[s] != j) s++;
        own = &la[grp[s < n ? s : j]];
        break;
    }
    default:
        break;
    }
    for (int d = 0; d < nd; d++)
        if (il_push(&have[d], own, d, 0, own->local_shape[d])) return nomem();
    return LT_OK;
}

/* The collective of move m on the shards in[], into rcv[] (new tensors). */
static lt_status collective(lt_comm *comm, const lt__move *m, lt_tensor *const *in,
                            lt_tensor **rcv) {
    int i = m->mesh_dim;
    switch (m->kind) {
    case LT__MV_ALL_GATHER: return lt_all_gather(comm, i, in, m->dim, rcv);
    case LT__MV_GATHER: return lt_gather(comm, i, in, m->root, m->dim, rcv);
    case LT__MV_ALL_TO_ALL: return lt_all_to_all(comm, i, in, m->dim, m->cdim, &m->rule, rcv);
    case LT__MV_SCATTER: return lt_scatter(comm, i, in, m->root, m->dim, &m->rule, rcv);
    case LT__MV_PERMUTE: return lt_permute_ranks(comm, i, in, m->perm, rcv);
    case LT__MV_ALL_REDUCE: return lt_all_reduce(comm, i, in, m->op, rcv);
    case LT__MV_REDUCE_SCATTER: return lt_reduce_scatter(comm, i, in, m->op, m->dim, &m->rule, rcv);
    case LT__MV_REDUCE: return lt_reduce_ranks(comm, i, in, m->root, m->op, rcv);
    default: return LT_OK;   /* local work */
    }
}

/* ---- every rank's layout of a state, cached ------------------------------------------ */

/* The layouts of every rank of one spec. A rank's layout is its replica
 * class's (coordinates on R dims do not change it; the class has them 0,
 * so it comes first): the class owns the index lists, the replicas hold
 * shallow copies (freed only once). Immutable once made; reference-counted. */
typedef struct layset {
    int refs;                     /* atomic */
    int W;
    unsigned char *own;           /* (W) 1: l[r] owns its lists */
    lt_rank_layout l[];           /* (W) */
} layset;

static void layset_release(void *v) {
    layset *s = v;
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL)) return;
    for (int r = 0; r < s->W; r++)
        if (s->own[r]) lt_rank_layout_free(&s->l[r]);
    lt__free(s->own);
    lt__free(s);
}

/* Sets of at most LAYSET_MAX_IDX index entries in all are kept (a sweep's
 * are a few hundred bytes each), 256 of them. */
#define LAYSET_MAX_IDX 4096
static lt__cache layset_cache = LT__CACHE_INIT(lt__cache_rec_ref, layset_release, 256);

void lt__move_layouts_clear(void) { lt__cache_clear(&layset_cache); }

/* Every rank's layout of s: *out, a reference the caller drops with
 * layset_release (cached, or made now and offered to the cache when small;
 * cache 0: made now, the cache untouched). The errors of
 * lt_spec_layout_rank; nothing held on error. */
static lt_status layouts_of(const lt_spec *s, int cache, layset **out) {
    const lt_mesh *mesh = s->mesh;
    int W = mesh->world;
    static _Thread_local lt__cache_key k;
    k.n = 0;
    lt__key_put(&k, (uint64_t)mesh->ndim);
    for (int i = 0; i < mesh->ndim; i++) lt__key_put(&k, (uint64_t)mesh->shape[i]);
    lt__key_spec(&k, s);
    uint64_t h = cache && lt__cache_key_fits(&k) ? lt__cache_key_hash(&k) : 0;
    *out = h ? lt__cache_get(&layset_cache, &k, h, 1) : NULL;
    if (*out) return LT_OK;
    layset *ls = lt__calloc(1, sizeof *ls + sizeof(lt_rank_layout) * (size_t)W);
    unsigned char *own = ls ? lt__calloc((size_t)W, 1) : NULL;
    if (!own) {
        lt__free(ls);
        return nomem();
    }
    ls->refs = 1;
    ls->W = W;
    ls->own = own;
    lt_status st = LT_OK;
    size_t nidx = 0;
    for (int r = 0; r < W && !st; r++) {
        int kr = lt__replica_class(mesh, s->placements, r);
        if (kr != r) {
            ls->l[r] = ls->l[kr];
            continue;
        }
        st = lt_spec_layout_rank(s, r, &ls->l[r]);
        if (st) break;
        own[r] = 1;
        for (int d = 0; d < s->ndim; d++)
            if (ls->l[r].idx[d]) nidx += (size_t)ls->l[r].local_shape[d];
    }
    if (st) {
        layset_release(ls);
        return st;
    }
    if (h && nidx <= LAYSET_MAX_IDX) lt__cache_put(&layset_cache, &k, h, ls);
    *out = ls;
    return LT_OK;
}

/* ---- one step ------------------------------------------------------------------------ */

lt_status lt__move_run(lt_comm *comm, const lt_spec *from, const lt_plan_step *ps,
                       lt_tensor *const *in, lt_tensor **out, int cache) {
    const lt_mesh *mesh = from->mesh;
    lt_spec to = lt__spec_with(from, ps->after);
    const lt__move *m = ps->move_;
    /* a flattened group: mesh dim i of a communicator over the flattened mesh */
    lt_comm *gc = comm;
    lt_status st = m->span > 1 ? lt__comm_flat(comm, m->mesh_dim, m->span, &gc) : LT_OK;
    if (st) return st;
    const lt_mesh *gm = m->span > 1 ? lt_comm_mesh(gc) : mesh;
    int W = mesh->world, i = m->mesh_dim, n = gm->shape[i], nd = m->ndim;
    layset *sa = NULL, *sb = NULL;
    lt_tensor **rcv = lt__calloc((size_t)W, sizeof *rcv);
    int *grp = lt__malloc(sizeof(int) * (size_t)n);
    ilist have[LT_MAX_DIMS], have2[LT_MAX_DIMS];   /* rank r's received indices; its class's */
    memset(have, 0, sizeof have);
    memset(have2, 0, sizeof have2);
    st = rcv && grp ? LT_OK : nomem();
    if (!st) st = layouts_of(from, cache, &sa);
    if (!st) st = layouts_of(&to, cache, &sb);
    const lt_rank_layout *la = sa ? sa->l : NULL, *lb = sb ? sb->l : NULL;
    if (!st) st = collective(gc, m, in, rcv);
    lt_placement part[LT_MESH_MAX_DIMS];
    for (int j = 0; j < mesh->ndim; j++) part[j] = j == i ? lt_partial(m->op) : lt_replicate();
    for (int r = 0; r < W && !st; r++) {
        if (in[r]->absent) continue;   /* held by another process (engine.h `holds`): left out */
        const lt_rank_layout *b = &lb[r];
        int64_t ne = lt__numel_sat(nd, b->local_shape);
        if (!ne) {   /* nothing to hold: the next state's shape */
            st = lt_tensor_empty(in[r]->dtype, nd, b->local_shape, &out[r]);
            continue;
        }
        int pos, g = lt_mesh_group_of(gm, i, r, &pos);
        lt_mesh_group(gm, i, g, grp);
        st = received(m, la, grp, n, pos, have);
        const lt_tensor *t = rcv[r] ? rcv[r] : in[r];
        /* a replica in the next state (same index lists) that reshapes the
         * same buffer the same way shares the result of its class */
        int k = lt__replica_class(mesh, ps->after, r);
        if (!st && k != r && out[k]) {
            const lt_tensor *tk = rcv[k] ? rcv[k] : in[k];
            int kp, kg = lt_mesh_group_of(gm, i, k, &kp);
            lt_mesh_group(gm, i, kg, grp);
            int same = lt_tensor_same_view(t, tk);
            if (same) {
                st = received(m, la, grp, n, kp, have2);
                for (int d = 0; !st && same && d < nd; d++)
                    same = have[d].n == have2[d].n &&
                           !memcmp(have[d].v, have2[d].v, sizeof(int64_t) * (size_t)have[d].n);
            }
            if (!st && same) {
                st = lt_tensor_view(out[k], &out[r]);
                continue;
            }
        }
        if (!st) st = reshape_to(t, have, nd, b, m->kind != LT__MV_PARTITION, &out[r]);
        if (!st && m->kind == LT__MV_PARTITION) st = lt__partition(out[r], mesh, part);
    }
    layset_release(sa);
    layset_release(sb);
    for (int r = 0; rcv && r < W; r++) lt_tensor_free(rcv[r]);
    for (int d = 0; d < LT_MAX_DIMS; d++) {
        lt__free(have[d].v);
        lt__free(have2[d].v);
    }
    lt__free(rcv);
    lt__free(grp);
    if (st)
        for (int r = 0; r < W; r++) {
            lt_tensor_free(out[r]);
            out[r] = NULL;
        }
    return st;
}
