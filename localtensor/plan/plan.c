/* localtensor/plan/plan.c — the two planners and plan construction.
 *
 * Both planners walk the same graph: a node is a placement list (one
 * candidate per mesh dim, packed 8 bits per dim into a 64-bit key), an edge
 * is a single step that lt__step_kind_of accepts and whose target is a valid
 * state (partial ops may only mix as {sum, avg}; layout computable). Edge
 * cost is (bytes received, 1 step). `min-cost` is uniform-cost search
 * (Dijkstra) from the source to the destination; `greedy` follows PyTorch's
 * generate_greedy_transform_infos order and only falls back on the graph
 * where its next transition is not one legal step (through R first, else the
 * cheapest route). Search runs on "effective" lists where mesh dims of size 1
 * are R: their placement never needs a step.
 */
#include "kernels/alloc.h"
#include <stdlib.h>
#include <string.h>

#include "localtensor/plan/plan_impl.h"
#include "localtensor/redistribute.h"
#include "collectives_sim/cost.h"

#define MAXC 40   /* candidates per mesh dim: R, src, dst, S(d, rule) for <= 8 dims x 3 rules */

typedef struct node {
    uint64_t key;
    uint64_t bytes;
    int steps;
    int prev;            /* node index, -1 at the start */
    uint8_t done;
} node;

typedef struct ctx {
    const lt_mesh *mesh;
    int M, ndim, W;
    const int64_t *shape;
    size_t esize;
    int is_float;
    lt_placement src[LT_MESH_MAX_DIMS], dst[LT_MESH_MAX_DIMS];   /* effective */
    int frozen[LT_MESH_MAX_DIMS];
    int nc[LT_MESH_MAX_DIMS];
    lt_placement cand[LT_MESH_MAX_DIMS][MAXC];
    int64_t *sh_a, *sh_b;        /* (W, ndim) scratch */
    /* search state */
    node *nodes;
    int nnodes, capnodes;
    lt__keymap map;              /* key -> index into nodes */
    lt__pq queue;                /* (bytes, steps, 0) */
    int expanded;
} ctx;

/* ---- candidates and keys ------------------------------------------------------------- */

static int cand_index(const ctx *c, int i, const lt_placement *p) {
    for (int k = 0; k < c->nc[i]; k++)
        if (lt_placement_equal(&c->cand[i][k], p)) return k;
    return -1;
}

static void cand_add(ctx *c, int i, const lt_placement *p) {
    if (cand_index(c, i, p) >= 0 || c->nc[i] >= MAXC) return;
    c->cand[i][c->nc[i]++] = *p;
}

static void build_candidates(ctx *c) {
    for (int i = 0; i < c->M; i++) {
        lt_placement r = lt_replicate();
        c->nc[i] = 0;
        cand_add(c, i, &c->src[i]);
        if (c->frozen[i]) continue;
        cand_add(c, i, &c->dst[i]);
        cand_add(c, i, &r);
        for (int d = 0; d < c->ndim; d++) {
            lt_placement s = lt_shard(d);
            cand_add(c, i, &s);
        }
        const lt_placement *ends[2] = {&c->src[i], &c->dst[i]};
        for (int e = 0; e < 2; e++) {
            if (ends[e]->kind != LT_PL_SHARD || ends[e]->rule.kind == LT_SPLIT_CHUNK) continue;
            for (int d = 0; d < c->ndim; d++) {
                lt_placement s = lt_shard_rule(d, ends[e]->rule);
                cand_add(c, i, &s);
            }
        }
    }
}

static uint64_t encode(const ctx *c, const lt_placement *pl) {
    uint64_t k = 0;
    for (int i = 0; i < c->M; i++) {
        int x = cand_index(c, i, &pl[i]);
        LT_ASSERT(x >= 0);
        k |= (uint64_t)x << (8 * i);
    }
    return k;
}

static void decode(const ctx *c, uint64_t key, lt_placement *pl) {
    for (int i = 0; i < c->M; i++) pl[i] = c->cand[i][(key >> (8 * i)) & 0xff];
}

/* Valid state: partial ops mix well and the layout is computable (shapes into sh). */
static int state_valid(const ctx *c, const lt_placement *pl, int64_t *sh) {
    return lt__partials_ok(pl, c->M) && lt__layout_shapes(c->mesh, c->ndim, c->shape, pl, sh) == 0;
}

/* The kind of changing dim i of pl to *to, with the planner's policy on
 * partitions: R -> P only towards a destination Partial on a dim that was not
 * Partial in the source. */
static lt__step_kind edge_kind(const ctx *c, const lt_placement *pl, int i,
                               const lt_placement *to) {
    if (c->frozen[i] || c->mesh->shape[i] == 1) return LT__STEP_ILLEGAL;
    lt__step_kind k = lt__step_kind_of(c->mesh, pl, i, to);
    if (k == LT__STEP_ZERO_FILL) return LT__STEP_ILLEGAL;   /* only lt__plan_zero_fill places it */
    if (k == LT__STEP_PARTITION &&
        (!lt_placement_equal(to, &c->dst[i]) || c->src[i].kind == LT_PL_PARTIAL ||
         (to->op == LT_REDOP_SUM && !c->is_float)))
        return LT__STEP_ILLEGAL;
    return k;
}

/* ---- node table ---------------------------------------------------------------------- */

static void search_reset(ctx *c) {
    c->nnodes = 0;
    c->queue.n = 0;
    lt__keymap_clear(&c->map);
}

/* Node of key (created when absent): *idx. */
static lt_status node_get(ctx *c, uint64_t key, int *idx) {
    if (c->nnodes == c->capnodes) {
        int ncap = c->capnodes ? c->capnodes * 2 : 128;
        node *nn = lt__realloc(c->nodes, sizeof(node) * (size_t)ncap);
        if (!nn) return lt__err(LT_NOMEM, "out of memory while planning");
        c->nodes = nn;
        c->capnodes = ncap;
    }
    int added;
    LT_TRY(lt__keymap_get(&c->map, key, c->nnodes, idx, &added));
    if (!added) return LT_OK;
    node *nd = &c->nodes[c->nnodes];
    nd->key = key;
    nd->bytes = UINT64_MAX;
    nd->steps = 0;
    nd->prev = -1;
    nd->done = 0;
    *idx = c->nnodes++;
    return LT_OK;
}

/* ---- uniform-cost search ------------------------------------------------------------------ */

/* Search budget, in rank-placement evaluations (computing the shapes of one
 * state costs world x mesh dims of them): about 50 ms of work. Past it,
 * min-cost falls back on the greedy route and a greedy detour on the
 * always-legal "tear down, then build up" route (naive below). 3-D meshes of
 * 8 ranks use well under 1% of it; meshes of many dims with many ranks and
 * tensor dims can exceed it. */
#define SEARCH_BUDGET 30000000.0

static lt_status naive(ctx *c, const lt_placement *from, uint64_t *path, int *n, int cap);

/* Cheapest path from `from` to `goal` (both valid states). Appends the keys
 * of the states after each step to path[*n...] (room: cap). LT_UNSUPPORTED
 * when the goal cannot be reached; LT_OVERFLOW (no message) past the budget. */
static lt_status search(ctx *c, uint64_t from, uint64_t goal, uint64_t *path, int *n, int cap) {
    double work = 0, per_state = (double)c->W * (double)c->M, edges = 1;
    for (int i = 0; i < c->M; i++) edges += c->nc[i];
    search_reset(c);
    int s;
    LT_TRY(node_get(c, from, &s));
    c->nodes[s].bytes = 0;
    LT_TRY(lt__pq_push(&c->queue, (lt__pq_item){{0, 0, 0}, s}));
    lt_placement pl[LT_MESH_MAX_DIMS], nx[LT_MESH_MAX_DIMS];
    int found = -1;
    while (c->queue.n) {
        lt__pq_item it = lt__pq_pop(&c->queue);
        node *nd = &c->nodes[it.node];
        if (nd->done || it.k[0] != nd->bytes || it.k[1] != (uint64_t)nd->steps) continue;
        nd->done = 1;
        c->expanded++;
        if ((work += per_state * edges) > SEARCH_BUDGET) return LT_OVERFLOW;
        if (nd->key == goal) {
            found = it.node;
            break;
        }
        uint64_t key = nd->key;
        decode(c, key, pl);
        if (lt__layout_shapes(c->mesh, c->ndim, c->shape, pl, c->sh_a)) continue;
        for (int i = 0; i < c->M; i++) {
            int cur = (int)((key >> (8 * i)) & 0xff);
            for (int b = 0; b < c->nc[i]; b++) {
                if (b == cur) continue;
                lt__step_kind k = edge_kind(c, pl, i, &c->cand[i][b]);
                if (k == LT__STEP_ILLEGAL) continue;
                memcpy(nx, pl, sizeof(lt_placement) * (size_t)c->M);
                nx[i] = c->cand[i][b];
                if (!state_valid(c, nx, c->sh_b)) continue;
                uint64_t cost = lt__step_bytes(c->mesh, c->ndim, c->esize, k, i, &pl[i], &nx[i],
                                               c->sh_a, c->sh_b, NULL);
                uint64_t nkey = (key & ~((uint64_t)0xff << (8 * i))) | ((uint64_t)b << (8 * i));
                int t;
                LT_TRY(node_get(c, nkey, &t));
                node *from_nd = &c->nodes[it.node], *tn = &c->nodes[t];
                uint64_t nb = lt__sat_add(from_nd->bytes, cost);
                int ns = from_nd->steps + 1;
                if (tn->done) continue;
                if (nb < tn->bytes || (nb == tn->bytes && ns < tn->steps)) {
                    tn->bytes = nb;
                    tn->steps = ns;
                    tn->prev = it.node;
                    LT_TRY(lt__pq_push(&c->queue, (lt__pq_item){{nb, (uint64_t)ns, 0}, t}));
                }
            }
        }
    }
    if (found < 0)
        return lt__err(LT_UNSUPPORTED, "no sequence of single steps reaches the destination");
    int len = 0;
    for (int x = found; c->nodes[x].prev >= 0; x = c->nodes[x].prev) len++;
    if (*n + len > cap) return lt__err(LT_UNSUPPORTED, "plan longer than %d steps", cap);
    int x = found;
    for (int q = len - 1; q >= 0; q--, x = c->nodes[x].prev) path[*n + q] = c->nodes[x].key;
    *n += len;
    return LT_OK;
}

/* The route that always exists: tear every non-frozen dim down to R, last
 * mesh dim first (no later dim shards anything then), except a Partial the
 * destination keeps as is; then build the destination up, first dim first.
 * Every state is a prefix of a valid list, so it is valid, and every step is
 * legal (localtensor/plan.h). */
static lt_status naive(ctx *c, const lt_placement *from, uint64_t *path, int *n, int cap) {
    lt_placement cur[LT_MESH_MAX_DIMS];
    memcpy(cur, from, sizeof(lt_placement) * (size_t)c->M);
    for (int pass = 0; pass < 2; pass++)
        for (int q = 0; q < c->M; q++) {
            int i = pass == 0 ? c->M - 1 - q : q;
            lt_placement t = pass == 0 ? lt_replicate() : c->dst[i];
            if (c->frozen[i] || lt_placement_equal(&cur[i], &t)) continue;
            if (pass == 0 && cur[i].kind == LT_PL_PARTIAL &&
                lt_placement_equal(&cur[i], &c->dst[i]))
                continue;
            if (edge_kind(c, cur, i, &t) == LT__STEP_ILLEGAL)
                return lt__err(LT_UNSUPPORTED, "no single step changes mesh dim %d here", i);
            if (*n >= cap) return lt__err(LT_UNSUPPORTED, "plan longer than %d steps", cap);
            cur[i] = t;
            path[(*n)++] = encode(c, cur);
        }
    return LT_OK;
}

/* search, falling back on naive when the space is too large. */
static lt_status route(ctx *c, const lt_placement *from, const lt_placement *goal, uint64_t *path,
                       int *n, int cap) {
    int n0 = *n;
    lt_status st = search(c, encode(c, from), encode(c, goal), path, n, cap);
    if (st != LT_OVERFLOW) return st;
    *n = n0;
    if (!lt_placements_equal(goal, c->dst, c->M)) {
        /* to an intermediate goal: down to R, then up to the goal */
        lt_placement save[LT_MESH_MAX_DIMS];
        memcpy(save, c->dst, sizeof save);
        memcpy(c->dst, goal, sizeof(lt_placement) * (size_t)c->M);
        st = naive(c, from, path, n, cap);
        memcpy(c->dst, save, sizeof save);
        return st;
    }
    return naive(c, from, path, n, cap);
}

/* ---- greedy ---------------------------------------------------------------------------------- */

/* Lists of (mesh dim, placement) sharding tensor dim d on mesh dims < i. */
static int same_earlier_sharding(const ctx *c, const lt_placement *cur, int i, int d) {
    for (int j = 0; j < i; j++) {
        int a = lt_placement_is_shard_like(&cur[j]) && cur[j].dim == d;
        int b = lt_placement_is_shard_like(&c->dst[j]) && c->dst[j].dim == d;
        if (a != b || (a && !lt_placement_equal(&cur[j], &c->dst[j]))) return 0;
    }
    return 1;
}

/* Moves dim i of the greedy state to *tgt: one legal step, else X -> R -> Y,
 * else the cheapest route (to the full destination when the transition's own
 * target is not a valid state). *finished when the state is the destination. */
static lt_status greedy_move(ctx *c, lt_placement *cur, int i, const lt_placement *tgt,
                             uint64_t *path, int *n, int cap, int *finished) {
    lt_placement nx[LT_MESH_MAX_DIMS], mid[LT_MESH_MAX_DIMS];
    memcpy(nx, cur, sizeof(lt_placement) * (size_t)c->M);
    nx[i] = *tgt;
    int nx_valid = state_valid(c, nx, c->sh_b);
    if (*n + 2 > cap) return lt__err(LT_UNSUPPORTED, "plan longer than %d steps", cap);
    if (nx_valid && edge_kind(c, cur, i, tgt) != LT__STEP_ILLEGAL) {
        path[(*n)++] = encode(c, nx);
        memcpy(cur, nx, sizeof(lt_placement) * (size_t)c->M);
        return LT_OK;
    }
    lt_placement r = lt_replicate();
    memcpy(mid, cur, sizeof(lt_placement) * (size_t)c->M);
    mid[i] = r;
    if (nx_valid && cur[i].kind != LT_PL_REPLICATE && tgt->kind != LT_PL_REPLICATE &&
        edge_kind(c, cur, i, &r) != LT__STEP_ILLEGAL &&
        edge_kind(c, mid, i, tgt) != LT__STEP_ILLEGAL && state_valid(c, mid, c->sh_a)) {
        path[(*n)++] = encode(c, mid);
        path[(*n)++] = encode(c, nx);
        memcpy(cur, nx, sizeof(lt_placement) * (size_t)c->M);
        return LT_OK;
    }
    const lt_placement *goal = nx_valid ? nx : c->dst;
    LT_TRY(route(c, cur, goal, path, n, cap));
    memcpy(cur, goal, sizeof(lt_placement) * (size_t)c->M);
    if (!nx_valid) *finished = 1;
    return LT_OK;
}

static lt_status greedy(ctx *c, uint64_t *path, int *n, int cap) {
    lt_placement cur[LT_MESH_MAX_DIMS];
    memcpy(cur, c->src, sizeof(lt_placement) * (size_t)c->M);
    int finished = 0;
    int64_t nshards = 1;
    for (int i = 0; i < c->M; i++)
        if (lt_placement_is_shard_like(&cur[i])) nshards *= c->mesh->shape[i];
    if (nshards > 1) {
        /* inner to outer: a Shard target whose tensor dim is sharded differently
         * on earlier mesh dims becomes Replicate first (nested misalignment) */
        for (int i = c->M - 1; i >= 0 && !finished; i--) {
            lt_placement tgt = c->dst[i];
            if (lt_placement_is_shard_like(&tgt) && !same_earlier_sharding(c, cur, i, tgt.dim))
                tgt = lt_replicate();
            if (c->mesh->shape[i] == 1 || c->frozen[i] || lt_placement_equal(&cur[i], &tgt))
                continue;
            LT_TRY(greedy_move(c, cur, i, &tgt, path, n, cap, &finished));
        }
    }
    for (int i = 0; i < c->M && !finished; i++) {
        if (c->mesh->shape[i] == 1 || c->frozen[i] || lt_placement_equal(&cur[i], &c->dst[i]))
            continue;
        LT_TRY(greedy_move(c, cur, i, &c->dst[i], path, n, cap, &finished));
    }
    return LT_OK;
}

/* ---- plan construction -------------------------------------------------------------------------
 */

#define MAX_STEPS 256

static void ctx_free(ctx *c) {
    if (!c) return;
    lt__free(c->sh_a);
    lt__free(c->sh_b);
    lt__free(c->nodes);
    lt__keymap_free(&c->map);
    lt__pq_free(&c->queue);
    lt__free(c);
}

/* The rule-table search's context for a redistribute from -> dst (size-1
 * mesh dims replicate; a Partial dim kept as it is is frozen). NULL when
 * out of memory (said). */
static ctx *ctx_for(const lt_spec *from, const lt_placement *dst) {
    const lt_mesh *mesh = from->mesh;
    ctx *c = lt__calloc(1, sizeof *c);
    if (!c) return lt__err(LT_NOMEM, "out of memory while planning"), NULL;
    c->mesh = mesh;
    c->M = mesh->ndim;
    c->ndim = from->ndim;
    c->W = mesh->world;
    c->shape = from->shape;
    c->esize = lt_dtype_size(from->dtype);
    c->is_float = lt_dtype_is_float(from->dtype);
    for (int i = 0; i < c->M; i++) {
        const lt_placement *src = &from->placements[i];
        c->src[i] = mesh->shape[i] == 1 ? lt_replicate() : *src;
        c->dst[i] = mesh->shape[i] == 1 ? lt_replicate() : dst[i];
        c->frozen[i] =
            mesh->shape[i] == 1 || (src->kind == LT_PL_PARTIAL && lt_placement_equal(src, &dst[i]));
    }
    build_candidates(c);
    size_t shn = (size_t)c->W * (size_t)(from->ndim ? from->ndim : 1);
    c->sh_a = lt__malloc(sizeof(int64_t) * shn);
    c->sh_b = lt__malloc(sizeof(int64_t) * shn);
    if (c->sh_a && c->sh_b) return c;
    ctx_free(c);
    return lt__err(LT_NOMEM, "out of memory while planning"), NULL;
}

/* The states of the plan into path[MAX_STEPS], *n of them: the rule-table
 * search (min-cost), or greedy (also when that search ran out of budget:
 * *truncated). */
static lt_status find_path(ctx *c, lt_planner planner, uint64_t *path, int *n, int *truncated) {
    uint64_t ks = encode(c, c->src), kd = encode(c, c->dst);
    *n = 0;
    *truncated = 0;
    if (ks == kd) return LT_OK;
    if (planner == LT_PLANNER_MIN_COST) {
        lt_status st = search(c, ks, kd, path, n, MAX_STEPS);
        if (st != LT_OVERFLOW) return st;
        *truncated = 1;
        *n = 0;
    }
    return greedy(c, path, n, MAX_STEPS);
}

/* A new plan of n steps from `from` to dst (lt__plan_new). NULL when out
 * of memory (said). */
static lt_plan *plan_new(const lt_spec *from, const lt_placement *dst, lt_planner planner, int n) {
    lt__plan_head h = {from->mesh, from->dtype, from->ndim, from->shape,
                       from->placements, dst, planner};
    return lt__plan_new(&h, n, 0, 0, "a plan");
}

/* Step s of p, from state prev to nx (which differ on one mesh dim): its
 * kind, the displayed state after it, and the bytes its collective moves
 * (recv: (W) scratch). */
static lt_status fill_step(ctx *c, lt_plan *p, int s, const lt_placement *prev,
                           const lt_placement *nx, size_t *recv) {
    int i = -1;
    for (int j = 0; j < c->M; j++)
        if (!lt_placement_equal(&prev[j], &nx[j])) i = j;
    LT_ASSERT(i >= 0);
    lt_plan_step *ps = &p->steps[s];
    lt__step_kind k = lt__step_kind_of(c->mesh, prev, i, &nx[i]);
    LT_ASSERT(k != LT__STEP_ILLEGAL);
    ps->mesh_dim = i;
    ps->from = prev[i];
    ps->to = nx[i];
    ps->comm = lt__step_kind_comm(k);
    ps->coll = lt__step_kind_coll(k);
    ps->collective = ps->comm ? lt_coll_name(ps->coll) : "none";
    ps->local_op = lt__step_kind_local(k);
    lt_placement *after = lt__plan_x_of(p)->states + (size_t)(s + 1) * (size_t)c->M;
    if (s == p->nsteps - 1) memcpy(after, p->dst, sizeof(lt_placement) * (size_t)c->M);
    else lt__plan_display_state(c->mesh, c->ndim, c->shape, p->src, p->dst, nx, after);
    ps->after = after;
    if (!ps->comm) return LT_OK;
    if (!recv || lt__layout_shapes(c->mesh, c->ndim, c->shape, prev, c->sh_a) ||
        lt__layout_shapes(c->mesh, c->ndim, c->shape, nx, c->sh_b))
        return lt__err(LT_NOMEM, "out of memory while planning");
    ps->bytes_total =
        lt__step_bytes(c->mesh, c->ndim, c->esize, k, i, &prev[i], &nx[i], c->sh_a, c->sh_b, recv);
    for (int r = 0; r < c->W; r++)
        if (recv[r] > ps->bytes_per_rank) ps->bytes_per_rank = recv[r];
    p->ncomm++;
    p->total_bytes = (size_t)lt__sat_add(p->total_bytes, ps->bytes_total);
    return LT_OK;
}

/* The steps of p along path[n] (recv: scratch for the bytes). */
static lt_status fill_steps(ctx *c, lt_plan *p, const uint64_t *path, int n) {
    lt_placement prev[LT_MESH_MAX_DIMS], nx[LT_MESH_MAX_DIMS];
    memcpy(prev, c->src, sizeof prev);
    size_t *recv = lt__malloc(sizeof(size_t) * (size_t)c->W);   /* (W) */
    lt_status st = LT_OK;
    for (int s = 0; s < n && !st; s++) {
        decode(c, path[s], nx);
        st = fill_step(c, p, s, prev, nx, recv);
        memcpy(prev, nx, sizeof prev);
    }
    lt__free(recv);
    return st;
}

lt_status lt__plan_build(const lt_spec *from, const lt_placement *dst, lt_planner planner,
                         int shared, lt_plan **out) {
    *out = NULL;
    LT_TRY(lt__plan_zero_fill(from, dst, planner, shared, out));
    if (*out) return LT_OK;
    /* min-cost searches the complete move set (plan_search.c); past its
     * budget, the rule-table search below, then greedy */
    int complete_over = 0;
    if (planner == LT_PLANNER_MIN_COST) {
        lt_status mst = lt__plan_mincost(from, dst, shared, out);
        if (mst != LT_OVERFLOW) return mst;
        complete_over = 1;
    }
    ctx *c = ctx_for(from, dst);
    if (!c) return LT_NOMEM;
    uint64_t *path = lt__malloc(sizeof(uint64_t) * MAX_STEPS);
    int n = 0, truncated = 0;
    lt_status st = path ? find_path(c, planner, path, &n, &truncated)
                        : lt__err(LT_NOMEM, "out of memory while planning");
    lt_plan *p = st ? NULL : plan_new(from, dst, planner, n);
    if (!st && !p) st = LT_NOMEM;
    if (!st) {
        p->states_explored = c->expanded;
        p->search_truncated = truncated || complete_over;
        st = fill_steps(c, p, path, n);
    }
    lt__free(path);
    ctx_free(c);
    if (st) {
        lt_plan_free(p);
        return st;
    }
    *out = p;
    return LT_OK;
}
