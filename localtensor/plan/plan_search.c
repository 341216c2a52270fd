/* localtensor/plan/plan_search.c — the min-cost planner: A* over states, and the
 * plan it returns.
 *
 * States are the placement lists of the search space (localtensor/
 * plan.h), one per distinct layout (the first list in candidate
 * order, see lt__mc_canon); edges are the moves of plan_moves.c, costing
 * (bytes received summed over ranks, 1 step). The lower bound that guides
 * the search is what each rank still lacks of its destination block: every
 * move delivers at most the bytes it costs, so the bound never overstates
 * and the first time the destination is taken off the queue its cost is the
 * minimum (bytes first, then steps: every other state is at least one step
 * away, which orders ties on bytes). A work budget bounds the search; past
 * it the caller falls back on the rule-table planners (lt__plan_build).
 */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "collectives_sim/cost.h"
#include "kernels/alloc.h"
#include "localtensor/plan/plan_impl.h"

/* Work budget in list operations (applying a placement to a block, comparing
 * or uniting two lists): about 50 ms. 2x2x2 pairs use at most a few percent of
 * it, 8x8x8 pairs up to most of it. */
#define BUDGET 1.0e7

static lt_status nomem(void) { return lt__err(LT_NOMEM, "out of memory while planning"); }

/* ---- nodes and queue ----------------------------------------------------------------------- */

/* Elements of the destination that ranks holding blocks rk (W x ndim
 * lists: a layout's last level) lack, in bytes: summed (the return) and
 * the most one rank lacks (*most); c->lacks[r]: rank r lacks anything. */
static uint64_t lack_bytes(lt__mc *c, const lt__list *rk, uint64_t *most) {
    const lt__geo *g = &c->g;
    uint64_t lack = 0, mx = 0;
    for (int r = 0; r < g->W; r++) {
        const lt__list *x = rk + (size_t)r * (size_t)g->ndim;
        const lt__list *y = c->dlay + g->off[g->M] + (size_t)r * (size_t)g->ndim;
        /* the block sizes (lt__block_numel, inline: every new node runs this);
         * unsigned: a huge dim beside an empty one wraps to 0 exactly, and a
         * block holding something fits (it lies in the tensor) */
        uint64_t want = 1, xn = 1;
        for (int d = 0; d < g->ndim; d++) {
            want *= (uint64_t)y[d].len;
            xn *= (uint64_t)x[d].len;
        }
        uint64_t have = want && xn ? 1 : 0;
        for (int d = 0; d < g->ndim && have; d++) have *= (uint64_t)lt__list_common(&x[d], &y[d]);
        lack += want - have;
        c->lacks[r] = want != have;
        if (want - have > mx) mx = want - have;
    }
    *most = mx * c->esize;
    return lack * c->esize;
}

/* ---- the time objective's bound ---------------------------------------------------------- */

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static uint64_t sat_mul(uint64_t a, uint64_t b) {
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

#define MIN_U64(a, b) ((a) < (b) ? (a) : (b))

/* Ranks times sub-mesh ranks the bound of one state counts at most. */
#define LT__COVER_MAX 256

/* Elements of rank r's destination block that rank h's block (of rk) holds:
 * a product of list intersections, kept for the rest of the bound of rk
 * (c->covk; lower_bound starts a new generation), since sub_cover and
 * permute_covers ask for the same pairs under many masks. Charges nothing
 * (the callers charge every pair they ask for, kept or not). */
static uint64_t cover_pair(lt__mc *c, const lt__list *rk, int h, int r) {
    const lt__geo *g = &c->g;
    int nd = g->ndim, keep = g->W <= LT__COVK_W;
    size_t slot = (size_t)h * (size_t)g->W + (size_t)r;
    if (keep && c->covstamp[slot] == c->covgen) return c->covk[slot];
    const lt__list *x = rk + (size_t)h * (size_t)nd;
    const lt__list *y = c->dlay + g->off[g->M] + (size_t)r * (size_t)nd;
    uint64_t k = !lt__block_empty(x, nd);
    for (int d = 0; d < nd && k; d++) k *= (uint64_t)lt__list_common(&x[d], &y[d]);
    if (keep) {
        c->covstamp[slot] = c->covgen;
        c->covk[slot] = k;
    }
    return k;
}

/* Elements of rank r's destination block that the ranks of the sub-mesh
 * through r along the mesh dims of `mask` (bit i: mesh dim i) hold, summed
 * over those ranks (a replica counts each time: the sum only bounds their
 * union from above). */
static uint64_t sub_cover(lt__mc *c, const lt__list *rk, int r, unsigned mask) {
    const lt__geo *g = &c->g;
    int M = g->M, nd = g->ndim;
    int coord[LT_MESH_MAX_DIMS], stride[LT_MESH_MAX_DIMS], at[LT_MESH_MAX_DIMS];
    int base = r;
    for (int i = M - 1, st = 1; i >= 0; st *= g->mesh->shape[i], i--) {
        stride[i] = st;
        coord[i] = (r / st) % g->mesh->shape[i];
        at[i] = 0;
        if (mask >> i & 1) base -= coord[i] * st;
    }
    uint64_t sum = 0;
    for (;;) {
        int h = base;
        for (int i = 0; i < M; i++) h += (mask >> i & 1) ? at[i] * stride[i] : 0;
        sum += cover_pair(c, rk, h, r);
        c->work += nd;   /* list intersections, charged as the moves' are */
        int i = M - 1;
        for (; i >= 0; i--) {   /* the next sub-mesh rank (odometer over the dims of mask) */
            if (!(mask >> i & 1)) continue;
            if (++at[i] < g->mesh->shape[i]) break;
            at[i] = 0;
        }
        if (i < 0) return sum;
    }
}

/* The fewest rounds a step along mesh dim i may take (the collectives of
 * the move set, their algorithms on the topology): which 0 any, 1 any but
 * permute, 2 a reduction. */
static uint64_t min_rounds(const lt__mc *c, int i, int which) {
    uint64_t best = UINT64_MAX;
    int n = c->g.mesh->shape[i];
    for (int k = 0; k < LT__MV_COUNT; k++) {
        lt_coll coll = lt__mv_coll((lt__mv_kind)k);
        int red = k == LT__MV_ALL_REDUCE || k == LT__MV_REDUCE_SCATTER || k == LT__MV_REDUCE;
        if (coll == LT_COLL_BARRIER || !lt__moves_allow(c->moves, (lt__mv_kind)k)) continue;
        if ((which == 1 && k == LT__MV_PERMUTE) || (which == 2 && !red)) continue;
        uint64_t r = lt__coll_rounds_algo(coll, n, c->topo.algo[i][coll]);
        if (r < best) best = r;
    }
    return best == UINT64_MAX ? 0 : best;
}

/* 1 when one rank's block (any rank's) holds all of rank r's destination
 * block (want elements): what permutes and local work can bring.
 * Not counted past LT__COVER_MAX / W ranks (taken as 1). */
static int permute_covers(lt__mc *c, const lt__list *rk, int r, uint64_t want) {
    const lt__geo *g = &c->g;
    if (g->W > LT__COVER_MAX / g->W) return 1;
    c->work += (double)g->W * g->ndim;
    for (int h = 0; h < g->W; h++)
        if (cover_pair(c, rk, h, r) >= want) return 1;
    return 0;
}

/* The latency part of the time bound of a state whose ranks hold rk with
 * Partial ops pop. Every step moves data within the groups of one mesh
 * dim, so an element a rank lacks reaches it only through steps along
 * every mesh dim in which it differs from the element's nearest holder;
 * a Partial that the destination does not keep ends only by a reduction
 * along its dim. A step along dim i costs at least rmin_i rounds, the
 * fewest of any collective of the move set there (min_rounds; a reduction
 * the fewest of a reduction). Permutes and local work leave every rank a
 * part of one rank's block: a rank that no single rank's block covers
 * needs a collective other than permute too, along one of the dims used.
 * So per rank: the cheapest set D of dims whose sub-mesh through it may
 * hold all it needs (the held elements summed reach its block's size),
 * priced with the reductions' dims and that collective; the bound is the
 * largest over the ranks. Sub-meshes of more than LT__COVER_MAX / W ranks
 * are not counted (taken as holding all); the intersections are charged to
 * the search's work. */
static uint64_t time_alpha(lt__mc *c, const lt__list *rk, const signed char *pop) {
    const lt__geo *g = &c->g;
    int M = g->M, nd = g->ndim;
    uint64_t cost[LT_MESH_MAX_DIMS] = {0}, extra[LT_MESH_MAX_DIMS] = {0}, red = 0;
    unsigned act = 0, redm = 0;
    for (int i = 0; i < M; i++) {
        int n = g->mesh->shape[i];
        if (n == 1 || c->frozen[i]) continue;
        act |= 1u << i;
        int keeps = c->dst[i].kind == LT_PL_PARTIAL && pop[i] == (int)c->dst[i].op;
        cost[i] = c->lat1[i][pop[i] >= 0 && !keeps ? 2 : 0];
        uint64_t coll = c->lat1[i][1];
        extra[i] = coll > cost[i] ? coll - cost[i] : 0;   /* a collective's more than a step's */
        if (pop[i] >= 0 && !keeps) {
            redm |= 1u << i;
            red = sat_add(red, cost[i]);
        }
    }
    /* the sets of active dims, cheapest first (with the reductions' dims and
     * the least extra of a collective along one of them, when a rank needs one) */
    unsigned sets[256];
    uint64_t sc[256], sx[256];
    int ns = 0;
    for (unsigned m = act; m; m = (m - 1) & act) {
        uint64_t v = 0, x = UINT64_MAX;
        for (int i = 0; i < M; i++) {
            v = sat_add(v, ((m | redm) >> i & 1) ? cost[i] : 0);
            if (((m | redm) >> i & 1) && extra[i] < x) x = extra[i];
        }
        if (redm) x = 0;   /* the reduction is the collective (priced already) */
        int q = ns++;
        for (; q > 0 && sc[q - 1] > v; q--) {
            sets[q] = sets[q - 1];
            sc[q] = sc[q - 1];
            sx[q] = sx[q - 1];
        }
        sets[q] = m;
        sc[q] = v;
        sx[q] = x;
    }
    uint64_t best = red, top = ns ? sc[ns - 1] : red;
    if (!ns) return red;
    int cap = LT__COVER_MAX / g->W;
    for (int r = 0; r < g->W; r++) {
        const lt__list *y = c->dlay + g->off[M] + (size_t)r * (size_t)nd;
        uint64_t want = (uint64_t)lt__block_numel(y, nd);
        if (!want || !c->lacks[r]) continue;   /* lack_bytes ran just before */
        int coll = !permute_covers(c, rk, r, want);
        uint64_t br = UINT64_MAX;
        for (int q = 0; q < ns; q++) {
            uint64_t v = sat_add(sc[q], coll ? sx[q] : 0);
            if (v >= br) continue;
            int holders = 1;
            for (int i = 0; i < M; i++) holders *= (sets[q] >> i & 1) ? g->mesh->shape[i] : 1;
            if (holders > cap || sub_cover(c, rk, r, sets[q]) >= want) br = v;
        }
        if (br == UINT64_MAX) br = sat_add(top, coll ? sx[ns - 1] : 0);
        if (br > best) best = br;
    }
    return best;
}

/* The least latency of one step over the flattened group of mesh dims i ..
 * i + sp - 1 (sp >= 2) by all_gather or all_to_all (red 0), reduce_scatter
 * or all_reduce (red 1), or any of them (red 2). */
static uint64_t flat_alpha(const lt__mc *c, int i, int sp, int red) {
    static const lt_coll k[4] = {LT_COLL_ALL_GATHER, LT_COLL_ALL_TO_ALL, LT_COLL_REDUCE_SCATTER,
                                 LT_COLL_ALL_REDUCE};
    uint64_t best = UINT64_MAX;
    for (int q = red == 1 ? 2 : 0; q < (red == 0 ? 2 : 4); q++) {
        uint64_t t = lt__time_ps_group(&c->topo, c->g.mesh, i, sp, k[q], 0, 0);
        if (t < best) best = t;
    }
    return best;
}

/* c->lat1 and c->latf (plan_impl.h), from min_rounds and flat_alpha: they
 * depend on the search's mesh, topology and move set only, and the bound
 * of every new node reads them per rank. */
static void lat_init(lt__mc *c) {
    for (int i = 0; i < c->g.M; i++) {
        for (int w = 0; w < 3; w++)
            c->lat1[i][w] = sat_mul(min_rounds(c, i, w), c->topo.alpha_ps[i]);
        for (int sp = 2; i + sp <= c->g.M; sp++)
            for (int red = 0; red < 3; red++) c->latf[i][sp][red] = flat_alpha(c, i, sp, red);
    }
}

/* 1 when mesh dims i .. i + sp - 1 are a group of --moves all's steps
 * (each of size > 1, none frozen; sp 1: mesh dim i's). */
static int flat_ok(const lt__mc *c, int i, int sp) {
    for (int j = i; j < i + sp; j++)
        if (j >= c->g.M || c->g.mesh->shape[j] == 1 || c->frozen[j]) return 0;
    return 1;
}

/* Rank r's latency bound under --moves all when it needs a collective
 * other than permute (permute_covers is 0; want: its block's elements),
 * given the least latency of any step (any) and of a step other than a
 * permute (np): one step whose group (one mesh dim, or flattened dims) may
 * hold all it needs, else at least two steps, one not a permute. */
static uint64_t rank_alpha_all(lt__mc *c, const lt__list *rk, int r, uint64_t want, uint64_t any,
                               uint64_t np) {
    uint64_t best = any > UINT64_MAX - np ? UINT64_MAX : any + np;
    int cap = LT__COVER_MAX / c->g.W;
    for (int i = 0; i < c->g.M; i++)
        for (int sp = 1; flat_ok(c, i, sp); sp++) {   /* mesh dim i, then runs from it */
            uint64_t t = sp == 1 ? c->lat1[i][1] : c->latf[i][sp][2];
            if (t >= best) continue;
            unsigned mask = ((1u << sp) - 1) << i;
            if (lt__group_size(c->g.mesh, i, sp) > cap || sub_cover(c, rk, r, mask) >= want)
                best = t;
        }
    return best;
}

/* The latency part of the time bound under --moves all (time_alpha assumes
 * groups of one mesh dim; here one step may cross several). Permutes,
 * local work and reductions leave every rank a part of one rank's block:
 * a rank that no single rank's block covers needs a step of another kind
 * (rank_alpha_all); a rank that lacks anything needs one step at least;
 * a Partial the destination does not keep, a reduction. The largest of
 * these over the ranks. */
static uint64_t time_alpha_all(lt__mc *c, const lt__list *rk, const signed char *pop) {
    const lt__geo *g = &c->g;
    uint64_t any = UINT64_MAX, np = UINT64_MAX, red = UINT64_MAX, bound = 0;
    int need_red = 0;
    for (int i = 0; i < g->M; i++) {
        if (g->mesh->shape[i] == 1 || c->frozen[i]) continue;
        int keeps = c->dst[i].kind == LT_PL_PARTIAL && pop[i] == (int)c->dst[i].op;
        need_red |= pop[i] >= 0 && !keeps;
        any = MIN_U64(any, c->lat1[i][0]);
        np = MIN_U64(np, c->lat1[i][1]);
        red = MIN_U64(red, c->lat1[i][2]);
        for (int sp = 2; flat_ok(c, i, sp); sp++) {
            np = MIN_U64(np, c->latf[i][sp][2]);
            red = MIN_U64(red, c->latf[i][sp][1]);
        }
    }
    if (any == UINT64_MAX) return 0;
    if (need_red) bound = red;
    for (int r = 0; r < g->W; r++) {
        const lt__list *y = c->dlay + g->off[g->M] + (size_t)r * (size_t)g->ndim;
        uint64_t want = (uint64_t)lt__block_numel(y, g->ndim);
        if (!want || !c->lacks[r]) continue;   /* lack_bytes ran just before */
        uint64_t br =
            permute_covers(c, rk, r, want) ? any : rank_alpha_all(c, rk, r, want, any, np);
        if (br > bound) bound = br;
    }
    return bound;
}

/* The objective's lower bound of a state whose ranks hold rk with Partial
 * ops pop (*h) and, for objectives other than bytes, the bound of its
 * total bytes (*h2). A step delivers a rank at most the bytes it receives,
 * so the busiest rank's lack bounds the sum over steps of the busiest
 * rank's bytes; a time adds the latency time_alpha counts and the lack
 * over the widest link (rounded down): the steps' latency and bandwidth
 * terms are bounded apart. */
static void lower_bound(lt__mc *c, const lt__list *rk, const signed char *pop, uint64_t *h,
                        uint64_t *h2) {
    uint64_t most, sum = lack_bytes(c, rk, &most);
    if (++c->covgen == 0) {   /* wrapped: no entry may look current */
        memset(c->covstamp, 0, sizeof c->covstamp);
        c->covgen = 1;
    }
    *h2 = c->obj == LT_OBJECTIVE_BYTES ? 0 : sum;
    if (c->obj == LT_OBJECTIVE_BYTES) *h = sum;
    else if (c->obj == LT_OBJECTIVE_MAX_RANK_BYTES) *h = most;
    else {
        lt_topology best;
        memset(&best, 0, sizeof best);
        for (int i = 0; i < c->g.M; i++)
            if (c->g.mesh->shape[i] > 1 && c->topo.beta_bpus[i] > best.beta_bpus[0])
                best.beta_bpus[0] = c->topo.beta_bpus[i];
        uint64_t a =
            c->moves == LT_MOVES_ALL ? time_alpha_all(c, rk, pop) : time_alpha(c, rk, pop);
        uint64_t b = lt__time_ps(&best, 0, LT_COLL_BARRIER, 1, most, 0);   /* no rounds */
        *h = a > UINT64_MAX - b ? UINT64_MAX : a + b;
    }
}

lt_status lt__mc_layout(lt__mc *c, int idx) {
    lt__node *nd = &c->nodes[idx];
    if (nd->lay) return LT_OK;
    const lt__list *shared = lt__ms_layout_get(c, nd->key);   /* built by an earlier search */
    if (shared) {
        nd->lay = (lt__list *)shared;
        nd->lay_shared = 1;
        c->work += (double)c->g.off[c->g.M + 1];
        return LT_OK;
    }
    nd->lay = lt__malloc(sizeof(lt__list) * c->g.off[c->g.M + 1]);
    if (!nd->lay) return nomem();
    lt_placement pl[LT_MESH_MAX_DIMS];
    lt__mc_placements(c, nd->key, pl);
    int r = lt__layout_build(&c->nar, &c->g, pl, nd->lay);
    if (r < 0) {
        lt__free(nd->lay);
        nd->lay = NULL;
        return nomem();
    }
    LT_ASSERT(r == 1);   /* keys only come from layouts that matched */
    lt__ms_layout_put(c, nd->key, nd->lay);
    c->work += (double)c->g.off[c->g.M + 1];
    return LT_OK;
}

/* The node of key: *idx. A new one gets its lower bound from rk (its
 * ranks' blocks, W x ndim lists; NULL: from its layout, built now), or
 * from shared record g (NULL: none) when g knows it; its layout is built
 * when it is expanded (lt__mc_layout). */
static lt_status node_get(lt__mc *c, uint64_t key, const lt__list *rk, lt__msg *g, int *idx) {
    if (c->nnodes == c->capnodes) {
        int ncap = c->capnodes ? c->capnodes * 2 : 64;
        lt__node *nn = lt__realloc(c->nodes, sizeof(lt__node) * (size_t)ncap);
        if (!nn) return nomem();
        c->nodes = nn;
        c->capnodes = ncap;
    }
    int added;
    LT_TRY(lt__keymap_get(&c->map, key, c->nnodes, idx, &added));
    if (!added) return LT_OK;
    int n = c->nnodes;
    lt__node *nd = &c->nodes[n];
    memset(nd, 0, sizeof *nd);
    nd->key = key;
    nd->g = UINT64_MAX;
    nd->steps = INT_MAX;
    nd->prev = -1;
    c->nnodes++;   /* a node without a layout is valid (mc_free frees NULL) */
    if (!rk) {
        LT_TRY(lt__mc_layout(c, n));
        rk = c->nodes[n].lay + c->g.off[c->g.M];
    }
    if (!c->dlay) {
        c->nodes[n].h = 0;
        return LT_OK;
    }
    uint32_t *slot = g && c->obj == LT_OBJECTIVE_BYTES ? lt__ms_lb_slot(c, g) : NULL,
              known = slot ? __atomic_load_n(slot, __ATOMIC_RELAXED) : 0;
    if (known) {
        c->nodes[n].h = known - 1;
        return LT_OK;
    }
    uint64_t h, h2;
    lt_placement pl[LT_MESH_MAX_DIMS];
    signed char pop[LT_MESH_MAX_DIMS];
    lt__mc_placements(c, key, pl);
    for (int i = 0; i < c->g.M; i++)
        pop[i] = (signed char)(pl[i].kind == LT_PL_PARTIAL ? (int)pl[i].op : -1);
    lower_bound(c, rk, pop, &h, &h2);
    c->nodes[n].h = h;
    c->nodes[n].h2 = h2;
    if (slot && h < UINT32_MAX) __atomic_store_n(slot, (uint32_t)(h + 1), __ATOMIC_RELAXED);
    return LT_OK;
}

/* The queue entry of node t (its g, steps and h set; plan_impl.h says the order). */
static lt__pq_item qitem_of(const lt__mc *c, int t) {
    const lt__node *n = &c->nodes[t];
    uint64_t fs = (uint64_t)(n->steps + (n->key != c->goal));
    if (c->obj == LT_OBJECTIVE_BYTES) return (lt__pq_item){{n->g + n->h, fs, n->h}, t};
    return (lt__pq_item){{n->g + n->h, n->g2 + n->h2, fs}, t};
}

lt_status lt__mc_relax(lt__mc *c, int from, uint64_t key, uint64_t bytes, uint64_t most,
                       const lt__mv *mv, const lt__list *rk) {
    return lt__mc_relax_g(c, from, key, bytes, most, mv, rk, NULL);
}

/* The objective's cost of move mv: bytes in all, most on one rank. */
static uint64_t edge_cost(const lt__mc *c, const lt__mv *mv, uint64_t bytes, uint64_t most) {
    lt__mv_kind k = (lt__mv_kind)mv->kind;
    if (c->obj == LT_OBJECTIVE_BYTES) return bytes;
    if (c->obj == LT_OBJECTIVE_MAX_RANK_BYTES) return most;
    if (k == LT__MV_LOCAL || k == LT__MV_PARTITION) return 0;
    return lt__time_ps_group(&c->topo, c->g.mesh, mv->mesh_dim, mv->span, lt__mv_coll(k), most,
                             1);
}

lt_status lt__mc_relax_g(lt__mc *c, int from, uint64_t key, uint64_t bytes, uint64_t most,
                         const lt__mv *mv, const lt__list *rk, lt__msg *g) {
    if (!lt__moves_allow(c->moves, (lt__mv_kind)mv->kind)) return LT_OK;
    int t;
    LT_TRY(node_get(c, key, rk, g, &t));
    lt__node *fn = &c->nodes[from], *tn = &c->nodes[t];
    /* the bounds of bytes and max-rank-bytes are consistent (a move lowers
     * them by at most its cost): a node taken off the queue is final. The
     * time bound is admissible only, so a cheaper way to a node taken
     * already opens it again (A* stays exact) */
    if (tn->done && c->obj != LT_OBJECTIVE_TIME) return LT_OK;
    uint64_t ec = edge_cost(c, mv, bytes, most);
    uint64_t nb = fn->g > UINT64_MAX - ec ? UINT64_MAX : fn->g + ec;
    uint64_t n2 = c->obj == LT_OBJECTIVE_BYTES ? 0 : fn->g2 + bytes;
    int ns = fn->steps + 1;
    if (nb < tn->g || (nb == tn->g && (n2 < tn->g2 || (n2 == tn->g2 && ns < tn->steps)))) {
        tn->g = nb;
        tn->g2 = n2;
        tn->steps = ns;
        tn->prev = from;
        tn->mv = *mv;
        tn->done = 0;
        return lt__pq_push(&c->queue, qitem_of(c, t));
    }
    return LT_OK;
}

/* ---- context ------------------------------------------------------------------------------- */

static void mc_free(lt__mc *c) {
    if (!c) return;
    for (int n = 0; n < c->nnodes; n++)
        if (!c->nodes[n].lay_shared) lt__free(c->nodes[n].lay);
    lt__free(c->nodes);
    if (c->pooled) {
        lt__spare_give(LT__SPARE_KEYMAP, c->map.slot, c->map.cap, sizeof *c->map.slot, c->map.gen);
        lt__spare_give(LT__SPARE_MEMO, c->memo, c->capmemo, sizeof *c->memo, c->memogen);
    } else {
        lt__keymap_free(&c->map);
        lt__free(c->memo);
    }
    lt__pq_free(&c->queue);
    lt__free(c->G);
    lt__free(c->Gempty);
    lt__free(c->U);
    lt__free(c->Uempty);
    lt__free(c->B);
    lt__free(c->L);
    lt__free(c->Q);
    lt__free(c->ptrs);
    lt__free(c->mptrs);
    lt__free(c->qptrs);
    lt__free(c->recv);
    lt__free(c->lacks);
    lt__free(c->iscr);
    lt__free(c->perms);
    lt__free((void *)c->dlay);
    lt__ms_detach(c);
    lt__free(c->scr);
    lt__arena_free(&c->nar);
    lt__arena_free(&c->tar);
    lt__arena_free(&c->uar);
    lt__free(c);
}

/* Rough work of expanding one state; a space whose single expansion would
 * eat a good part of the budget goes straight to the fallback. */
static double expansion_cost(const lt__mc *c) {
    double w = 0;
    int nd = c->g.ndim ? c->g.ndim : 1;
    for (int i = 0; i < c->g.M; i++) {
        int n = c->g.mesh->shape[i];
        if (n == 1 || c->frozen[i]) continue;
        w += (double)c->g.W * nd * (2.0 + (double)nd * c->nrules * (double)n) +
             (double)c->nc[i] * c->g.W;
    }
    return w;
}

/* A zeroed context but for the candidate table (read below nc only) and the
 * local walk's hashes (each written before it is read): 15 of its 17.7 KB,
 * which one search would otherwise clear for nothing. NULL without memory. */
_Static_assert(offsetof(lt__mc, cand) < offsetof(lt__mc, lwhash) &&
                   offsetof(lt__mc, lwvalid) ==
                       offsetof(lt__mc, lwhash) + sizeof(((lt__mc *)0)->lwhash),
               "lt__mc's uncleared fields are in this order");
static lt__mc *mc_alloc(void) {
    lt__mc *c = lt__malloc(sizeof *c);
    if (!c) return NULL;
    char *p = (char *)c;
    size_t a0 = offsetof(lt__mc, cand), a1 = a0 + sizeof c->cand;
    size_t b0 = offsetof(lt__mc, lwhash), b1 = offsetof(lt__mc, lwvalid) + sizeof c->lwvalid;
    memset(p, 0, a0);
    memset(p + a1, 0, b0 - a1);
    memset(p + b1, 0, sizeof *c - b1);
    return c;
}

static lt_status mc_new(const lt_spec *from, const lt_placement *dst, int shared, lt__mc **out) {
    const lt_mesh *mesh = from->mesh;
    const lt_placement *src = from->placements;
    int ndim = from->ndim;
    const int64_t *shape = from->shape;
    lt__mc *c = mc_alloc();
    *out = c;
    if (!c) return nomem();
    lt__geo_init(&c->g, mesh, ndim, shape);
    c->esize = lt_dtype_size(from->dtype);
    c->is_float = lt_dtype_is_float(from->dtype);
    c->budget = BUDGET;
    const lt_plan_cost *cost = lt__plan_cost_cur;
    c->obj = cost ? cost->objective : LT_OBJECTIVE_BYTES;
    c->moves = cost ? cost->moves : LT_MOVES_COLLECTIVES;
    if (cost) c->topo = cost->topo;
    int maxn = c->moves == LT_MOVES_ALL ? c->g.W : 1;   /* all: groups of the whole mesh */
    for (int i = 0; i < c->g.M; i++) {
        c->src[i] = mesh->shape[i] == 1 ? lt_replicate() : src[i];
        c->dst[i] = mesh->shape[i] == 1 ? lt_replicate() : dst[i];
        c->frozen[i] = mesh->shape[i] == 1 ||
                       (src[i].kind == LT_PL_PARTIAL && lt_placement_equal(&src[i], &dst[i]));
        if (mesh->shape[i] > maxn) maxn = mesh->shape[i];
    }
    if (c->obj == LT_OBJECTIVE_TIME) lat_init(c);
    lt_status st = lt__mc_space(c, shared);
    if (st) return st;
    if (expansion_cost(c) * 8 > c->budget) return LT_OVERFLOW;
    if (shared) lt__ms_attach(c);
    /* the key map and the memo of a search that may use the caches: emptied
     * tables of an earlier one, when spare, handed on to the next after */
    if (shared) {
        void *sp;
        c->pooled = 1;
        lt__spare_take(LT__SPARE_KEYMAP, &sp, &c->map.cap, &c->map.gen);
        c->map.slot = sp;
        lt__spare_take(LT__SPARE_MEMO, &sp, &c->capmemo, &c->memogen);
        c->memo = sp;
    }
    size_t nd = (size_t)(ndim ? ndim : 1), W = (size_t)c->g.W, nl = c->g.off[c->g.M + 1] + 1;
    c->G = lt__malloc(sizeof(lt__list) * W * nd);
    c->Gempty = lt__malloc(W);
    c->U = lt__malloc(sizeof(lt__list) * nl);
    c->Uempty = lt__malloc(c->g.toff[c->g.M + 1]);
    c->B = lt__malloc(sizeof(lt__list) * nl);
    c->L = lt__malloc(sizeof(lt__list) * nl);
    c->Q = lt__malloc(sizeof(lt__list) * (size_t)maxn * nd);
    c->ptrs = lt__malloc(sizeof(lt__list *) * (size_t)maxn);
    c->mptrs = lt__malloc(sizeof(lt__list *) * (size_t)maxn);
    c->qptrs = lt__malloc(sizeof(lt__list *) * (size_t)maxn);
    c->recv = lt__malloc(sizeof(uint64_t) * W);
    c->lacks = lt__malloc(W);
    c->iscr = lt__malloc(sizeof(int) * 2 * (size_t)maxn);
    if (!c->G || !c->Gempty || !c->U || !c->Uempty || !c->B || !c->L || !c->Q || !c->ptrs ||
        !c->mptrs || !c->qptrs || !c->recv || !c->lacks || !c->iscr)
        return nomem();
    /* level 0 of every layout: the whole tensor */
    lt__run *full = lt__arena_room(&c->nar, nd);
    if (!full) return nomem();
    for (int d = 0; d < ndim; d++) {
        full[d] = (lt__run){0, shape[d]};
        c->B[d] = c->L[d] = (lt__list){shape[d] ? &full[d] : NULL, shape[d] ? 1 : 0, shape[d]};
    }
    lt__arena_take(&c->nar, nd);
    return LT_OK;
}

/* ---- the plan ----------------------------------------------------------------------------------
 */

/* "slice" when every rank keeps a consecutive part of what it holds along
 * every dim, else "strided_slice". */
static const char *pick_name(const lt__mc *c, const lt__list *a, const lt__list *b) {
    const lt__geo *g = &c->g;
    for (int r = 0; r < g->W; r++) {
        const lt__list *x = a + g->off[g->M] + (size_t)r * (size_t)g->ndim;
        const lt__list *y = b + g->off[g->M] + (size_t)r * (size_t)g->ndim;
        if (lt__block_empty(y, g->ndim)) continue;
        for (int d = 0; d < g->ndim; d++) {
            lt__run span = {y[d].r[0].lo,
                            y[d].r[y[d].nr - 1].lo + y[d].r[y[d].nr - 1].n - y[d].r[0].lo};
            lt__list sl = {&span, 1, span.n};
            if (lt__list_common(&x[d], &sl) != y[d].len) return "strided_slice";
        }
    }
    return "slice";
}

/* A new plan for the search's path[n + 1] (node indices, source first):
 * its arrays (states, steps, moves, the permutations' entries) and its
 * header (lt__plan_new). NULL when out of memory (said). */
static lt_plan *mc_plan_new(lt__mc *c, lt_dtype dtype, const lt_placement *usrc,
                            const lt_placement *udst, const int *path, int n) {
    const lt_mesh *mesh = c->g.mesh;
    size_t nperm = 0;
    for (int s = 1; s <= n; s++)
        if (c->nodes[path[s]].mv.kind == LT__MV_PERMUTE)
            nperm += (size_t)lt__group_size(mesh, c->nodes[path[s]].mv.mesh_dim,
                                            c->nodes[path[s]].mv.span);
    lt__plan_head h = {mesh, dtype, c->g.ndim, c->g.shape, usrc, udst, LT_PLANNER_MIN_COST};
    lt_plan *p = lt__plan_new(&h, n, 1, nperm, "a plan");
    if (!p) return NULL;
    p->states_explored = c->expanded;
    lt__plan_x_of(p)->search_work = c->work;
    return p;
}

/* The states of p along path: the source, each node's placements as
 * displayed, the destination last. */
static void mc_states(lt__mc *c, lt_plan *p, const int *path, int n) {
    lt__plan_x *px = lt__plan_x_of(p);
    int M = c->g.M;
    memcpy(px->states, p->src, sizeof(lt_placement) * (size_t)M);
    for (int s = 1; s <= n; s++) {
        lt_placement eff[LT_MESH_MAX_DIMS];
        lt__mc_placements(c, c->nodes[path[s]].key, eff);
        lt_placement *st = px->states + (size_t)s * (size_t)M;
        if (s == n) memcpy(st, p->dst, sizeof(lt_placement) * (size_t)M);
        else lt__plan_display_state(c->g.mesh, c->g.ndim, c->g.shape, p->src, p->dst, eff, st);
    }
}

/* Step s of p: the move from node path[s] to path[s + 1] as the executor
 * runs it (m), and the step it shows (its mesh dim, the collective, its
 * bytes); *pu: the permutations' entries used so far. */
static lt_status mc_step(lt__mc *c, lt_plan *p, const int *path, int s, size_t *pu) {
    lt__plan_x *px = lt__plan_x_of(p);
    int M = c->g.M;
    const lt__node *bn = &c->nodes[path[s + 1]];
    const lt__mv *mv = &bn->mv;
    const lt_placement *before = px->states + (size_t)s * (size_t)M,
                       *after = before + M;
    lt_plan_step *ps = &p->steps[s];
    lt__move *m = &px->moves[s];
    int i = mv->mesh_dim, reorder = 0;
    if (mv->kind == LT__MV_LOCAL) { /* a pick may change several mesh dims: name the first */
        i = 0;
        for (int j = M - 1; j >= 0; j--)
            if (!lt_placement_equal(&before[j], &after[j])) i = j;
    }
    int64_t bytes = lt__mc_move_bytes(c, path[s], mv, &reorder);
    if (bytes < 0) return nomem();   /* a chosen move is valid: only memory can fail here */
    m->kind = (lt__mv_kind)mv->kind;
    m->mesh_dim = i;
    m->dim = mv->dim;
    m->cdim = mv->cdim;
    m->root = mv->root;
    m->op = mv->op >= 0 ? (lt_redop)mv->op : LT_REDOP_SUM;
    m->rule = mv->rule >= 0 ? c->rules[(int)mv->rule] : lt_split_chunk();
    if (mv->kind == LT__MV_PERMUTE) {
        int k = lt__group_size(c->g.mesh, mv->mesh_dim, mv->span);
        memcpy(px->perms + *pu, c->perms + mv->perm, sizeof(int) * (size_t)k);
        m->perm = px->perms + *pu;
        *pu += (size_t)k;
    }
    m->ndim = p->ndim;
    m->shape = p->shape;
    m->span = mv->span > 1 ? mv->span : 1;
    ps->move_ = m;
    ps->mesh_dim = m->mesh_dim;
    ps->mesh_span = m->span;
    ps->from = before[m->mesh_dim];
    ps->to = after[m->mesh_dim];
    ps->coll = lt__mv_coll(m->kind);
    ps->comm = m->kind != LT__MV_LOCAL && m->kind != LT__MV_PARTITION;
    ps->collective = ps->comm ? lt_coll_name(ps->coll) : "none";
    ps->local_op = m->kind == LT__MV_LOCAL       ? pick_name(c, c->nodes[path[s]].lay, bn->lay)
                   : m->kind == LT__MV_PARTITION ? "partition"
                   : reorder                     ? "index_select"
                                                 : "";
    ps->after = after;
    if (!ps->comm) return LT_OK;
    ps->bytes_total = (size_t)bytes;
    for (int r = 0; r < c->g.W; r++)
        if (c->recv[r] > ps->bytes_per_rank) ps->bytes_per_rank = (size_t)c->recv[r];
    p->ncomm++;
    p->total_bytes += ps->bytes_total;
    return LT_OK;
}

static lt_status make_plan(lt__mc *c, lt_dtype dtype, const lt_placement *usrc,
                           const lt_placement *udst, int goal, lt_plan **out) {
    int n = 0;
    for (int x = goal; c->nodes[x].prev >= 0; x = c->nodes[x].prev) n++;
    int *path = lt__malloc(sizeof(int) * (size_t)(n + 1)); /* (n + 1) node indices, source first */
    if (!path) return nomem();
    for (int x = goal, q = n; q >= 0; x = c->nodes[x].prev, q--) path[q] = x;
    lt_plan *p = mc_plan_new(c, dtype, usrc, udst, path, n);
    lt_status st = p ? LT_OK : LT_NOMEM;
    if (!st) {
        mc_states(c, p, path, n);
        c->budget = 1e300;   /* re-evaluating the chosen moves is not search work */
    }
    size_t pu = 0;
    for (int s = 0; s < n && !st; s++) st = mc_step(c, p, path, s, &pu);
    lt__free(path);
    if (st) {
        lt_plan_free(p);
        return st;
    }
    *out = p;
    return LT_OK;
}

lt_status lt__plan_mincost(const lt_spec *from, const lt_placement *dst, int shared,
                           lt_plan **out) {
    lt_dtype dtype = from->dtype;
    const lt_placement *src = from->placements;
    *out = NULL;
    lt__mc *c;
    lt_status st = mc_new(from, dst, shared, &c);
    /* the destination's layout and key, then the search from the source */
    lt__list *dl = NULL;
    if (!st) {
        dl = lt__malloc(sizeof(lt__list) * c->g.off[c->g.M + 1]);
        int r = dl ? lt__layout_build(&c->nar, &c->g, c->dst, dl) : -1;
        c->dlay = dl;
        if (r < 0) st = nomem();
        LT_ASSERT(st || r == 1);
    }
    if (!st) {
        signed char pop[LT_MESH_MAX_DIMS];
        for (int i = 0; i < LT_MESH_MAX_DIMS; i++)
            pop[i] = (signed char)(i < c->g.M && c->dst[i].kind == LT_PL_PARTIAL ? (int)c->dst[i].op
                                                                                 : -1);
        int r = lt__mc_canon(c, dl, pop, &c->goal);
        if (r == -1) st = nomem();
        else if (r == -2) st = LT_OVERFLOW;
        LT_ASSERT(st || r == 1);   /* the destination's own list is a candidate */
    }
    int s = -1, goal = -1;
    if (!st) st = node_get(c, lt__mc_key(c, c->src), NULL, NULL, &s);
    if (!st) {
        c->nodes[s].g = 0;
        c->nodes[s].steps = 0;
        st = lt__pq_push(&c->queue, qitem_of(c, s));
    }
    while (!st && c->queue.n) {
        lt__pq_item it = lt__pq_pop(&c->queue);
        lt__node *nd = &c->nodes[it.node];
        lt__pq_item now = qitem_of(c, it.node);
        if (nd->done || it.k[0] != now.k[0] || it.k[1] != now.k[1] || it.k[2] != now.k[2]) continue;
        nd->done = 1;
        c->expanded++;
        if (nd->key == c->goal) {
            goal = it.node;
            break;
        }
        st = lt__mc_layout(c, it.node);
        if (!st) lt__ms_enter(c, it.node);
        if (!st) st = lt__mc_expand(c, it.node);
    }
    if (!st && goal < 0)
        st = lt__err(LT_UNSUPPORTED, "no sequence of steps reaches the destination");
    if (!st) st = lt__mc_layout(c, goal);
    if (!st) st = make_plan(c, dtype, src, dst, goal, out);
    mc_free(c);
    return st;
}
