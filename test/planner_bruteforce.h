/* test/planner_bruteforce.h — an independent brute-force search for the
 * cheapest redistribute, to check the min-cost planner against.
 *
 * Written from the definition in localtensor/redistribute.h, sharing no
 * code with the planner: states are built by enumerating every placement
 * list of the search space and asking layout math (lt_layout_rank) what
 * each rank holds, as explicit index lists; lists with the same layout are
 * one state. Every collective of collectives_sim is applied to those index
 * lists with all of its arguments (every tensor dim, every root, every
 * permutation, every split rule), without the planner's shortcuts
 * (broadcast, scatter from any root, gathers along any dim...), following
 * the shapes collectives_sim produces; a move is an edge when what every
 * rank then holds is exactly a state. Local picks are every state each rank
 * can cut from what it holds. Bytes come from index-set sizes by the model
 * of collectives_sim/trace.h. Dijkstra over all states gives the least
 * (bytes, steps). Plain malloc: this is test code. Header-only.
 */
#ifndef LT_PLANNER_BRUTEFORCE_H
#define LT_PLANNER_BRUTEFORCE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/localtensor.h"
#include "test/testutil.h"

/* What one rank holds: its shard's shape and, when it has elements, the
 * global indices along every dim (sorted in states, in local order in the
 * result of a collective). */
typedef struct bfb {
    int64_t shape[LT_MAX_DIMS];
    int empty;
    int64_t *ix[LT_MAX_DIMS];
} bfb;

typedef struct bfs {
    lt_placement pl[LT_MESH_MAX_DIMS];
    int pop[LT_MESH_MAX_DIMS];           /* Partial op of each mesh dim, -1: none */
    bfb *rk;                             /* (world) */
    uint64_t hash;
} bfs;

typedef struct bf {
    const lt_mesh *m;
    int M, W, nd, is_float;
    const int64_t *shape;
    lt_placement src[LT_MESH_MAX_DIMS], dst[LT_MESH_MAX_DIMS];
    int frozen[LT_MESH_MAX_DIMS];
    int ptarget[LT_MESH_MAX_DIMS];       /* R -> P(op) allowed on this mesh dim: op, else -1 */
    int nc[LT_MESH_MAX_DIMS];
    lt_placement cand[LT_MESH_MAX_DIMS][64];
    int nrules;
    lt_split_rule rules[32];
    bfs *st;
    int nst, capst;
} bf;

static int64_t bf_numel(const int64_t *s, int nd) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= s[d];
    return n;
}

static int bf_i64cmp(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static void bfb_free(bfb *b, int nd) {
    for (int d = 0; d < nd; d++) {
        free(b->ix[d]);
        b->ix[d] = NULL;
    }
}

/* Sorts b's lists; 0 when a list repeats an index (not a set). */
static int bfb_canon(bfb *b, int nd) {
    if (b->empty) return 1;
    for (int d = 0; d < nd; d++) {
        qsort(b->ix[d], (size_t)b->shape[d], sizeof(int64_t), bf_i64cmp);
        for (int64_t k = 1; k < b->shape[d]; k++)
            if (b->ix[d][k] == b->ix[d][k - 1]) return 0;
    }
    return 1;
}

static int bfb_equal(const bfb *a, const bfb *b, int nd) {
    if (a->empty != b->empty) return 0;
    for (int d = 0; d < nd; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    if (a->empty) return 1;
    for (int d = 0; d < nd; d++)
        if (memcmp(a->ix[d], b->ix[d], sizeof(int64_t) * (size_t)a->shape[d])) return 0;
    return 1;
}

/* b within a (sorted lists), or b empty. */
static int bfb_within(const bfb *b, const bfb *a, int nd) {
    if (b->empty) return 1;
    if (a->empty) return 0;
    for (int d = 0; d < nd; d++) {
        int64_t j = 0;
        for (int64_t k = 0; k < b->shape[d]; k++) {
            while (j < a->shape[d] && a->ix[d][j] < b->ix[d][k]) j++;
            if (j == a->shape[d] || a->ix[d][j] != b->ix[d][k]) return 0;
        }
    }
    return 1;
}

static uint64_t bf_hash(const bf *b, const bfb *rk, const int *pop) {
    uint64_t h = 1469598103934665603ULL;
#define BF_MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ULL)
    for (int i = 0; i < b->M; i++) BF_MIX(pop[i] + 7);
    for (int r = 0; r < b->W; r++) {
        BF_MIX(rk[r].empty);
        for (int d = 0; d < b->nd; d++) {
            BF_MIX(rk[r].shape[d]);
            for (int64_t k = 0; !rk[r].empty && k < rk[r].shape[d]; k++) BF_MIX(rk[r].ix[d][k]);
        }
    }
#undef BF_MIX
    return h;
}

/* The state holding exactly rk with Partial ops pop, or -1. */
static int bf_find(const bf *b, const bfb *rk, const int *pop) {
    uint64_t h = bf_hash(b, rk, pop);
    for (int s = 0; s < b->nst; s++) {
        const bfs *x = &b->st[s];
        if (x->hash != h || memcmp(x->pop, pop, sizeof(int) * (size_t)b->M)) continue;
        int same = 1;
        for (int r = 0; r < b->W && same; r++) same = bfb_equal(&x->rk[r], &rk[r], b->nd);
        if (same) return s;
    }
    return -1;
}

/* ---- the search space (the definition in localtensor/redistribute.h) ------------------- */

static void bf_cand(bf *b, int i, lt_placement p) {
    for (int k = 0; k < b->nc[i]; k++)
        if (lt_placement_equal(&b->cand[i][k], &p)) return;
    b->cand[i][b->nc[i]++] = p;
}

static void bf_rule(bf *b, lt_split_rule r) {
    for (int k = 0; k < b->nrules; k++)
        if (lt_split_rule_equal(&b->rules[k], &r)) return;
    b->rules[b->nrules++] = r;
}

/* What every rank holds under placement list pl (new rk[world]), and its
 * Partial ops. */
static bfb *bf_layout(const bf *b, const lt_placement *pl, int *pop) {
    bfb *rk = calloc((size_t)b->W, sizeof *rk);
    for (int i = 0; i < b->M; i++) pop[i] = pl[i].kind == LT_PL_PARTIAL ? (int)pl[i].op : -1;
    for (int r = 0; r < b->W; r++) {
        lt_rank_layout l;
        LT_CHECK(lt_layout_rank(b->m, b->nd, b->shape, pl, r, &l));
        memcpy(rk[r].shape, l.local_shape, sizeof(int64_t) * (size_t)b->nd);
        rk[r].empty = bf_numel(l.local_shape, b->nd) == 0;
        for (int d = 0; d < b->nd && !rk[r].empty; d++) {
            rk[r].ix[d] = malloc(sizeof(int64_t) * (size_t)(l.local_shape[d] + 1));
            for (int64_t k = 0; k < l.local_shape[d]; k++) rk[r].ix[d][k] = l.idx[d] ? l.idx[d][k] : k;
        }
        lt_rank_layout_free(&l);
        bfb_canon(&rk[r], b->nd);
    }
    return rk;
}

/* Every valid list of candidates, one state per distinct layout. */
static void bf_states(bf *b) {
    int idx[LT_MESH_MAX_DIMS] = {0};
    for (;;) {
        lt_placement pl[LT_MESH_MAX_DIMS], tmp[LT_MESH_MAX_DIMS];
        for (int i = 0; i < b->M; i++) pl[i] = b->cand[i][idx[i]];
        if (!lt_placements_check(b->m, b->nd, pl, b->M, tmp) && !lt_layout_check(b->m, b->nd, b->shape, pl)) {
            int pop[LT_MESH_MAX_DIMS];
            bfb *rk = bf_layout(b, pl, pop);
            if (bf_find(b, rk, pop) >= 0) {
                for (int r = 0; r < b->W; r++) bfb_free(&rk[r], b->nd);
                free(rk);
            } else {
                if (b->nst == b->capst) {
                    b->capst = b->capst ? 2 * b->capst : 64;
                    b->st = realloc(b->st, sizeof(bfs) * (size_t)b->capst);
                }
                bfs *x = &b->st[b->nst++];
                memcpy(x->pl, pl, sizeof pl);
                memcpy(x->pop, pop, sizeof pop);
                x->rk = rk;
                x->hash = bf_hash(b, rk, pop);
            }
        }
        int i = b->M - 1;
        while (i >= 0 && ++idx[i] == b->nc[i]) idx[i--] = 0;
        if (i < 0) break;
    }
}

/* The search space of a redistribute sp -> dp (no states yet). */
static void bf_space(bf *b, const lt_mesh *m, int nd, const int64_t *shape, const lt_placement *sp,
                     const lt_placement *dp, int is_float) {
    memset(b, 0, sizeof *b);
    b->m = m;
    b->M = m->ndim;
    b->W = m->world;
    b->nd = nd;
    b->shape = shape;
    b->is_float = is_float;
    for (int i = 0; i < b->M; i++) {
        b->src[i] = m->shape[i] == 1 ? lt_replicate() : sp[i];
        b->dst[i] = m->shape[i] == 1 ? lt_replicate() : dp[i];
        if (b->src[i].kind == LT_PL_SHARD || b->src[i].kind == LT_PL_STRIDED) b->src[i].dim = (b->src[i].dim + nd) % nd;
        if (b->dst[i].kind == LT_PL_SHARD || b->dst[i].kind == LT_PL_STRIDED) b->dst[i].dim = (b->dst[i].dim + nd) % nd;
        b->frozen[i] = m->shape[i] == 1 ||
                       (b->src[i].kind == LT_PL_PARTIAL && lt_placement_equal(&b->src[i], &b->dst[i]));
        /* the partition policy: only towards the destination's Partial, on a
         * mesh dim the source does not have Partial, never product, sum only
         * for floating dtypes */
        const lt_placement *t = &b->dst[i];
        b->ptarget[i] = t->kind == LT_PL_PARTIAL && b->src[i].kind != LT_PL_PARTIAL && t->op != LT_REDOP_PRODUCT &&
                                (t->op != LT_REDOP_SUM || is_float)
                            ? (int)t->op
                            : -1;
        bf_cand(b, i, b->src[i]);
        if (b->frozen[i]) continue;
        bf_cand(b, i, b->dst[i]);
        bf_cand(b, i, lt_replicate());
        for (int d = 0; d < nd; d++) bf_cand(b, i, lt_shard(d));
        for (int e = 0; e < 2; e++) {
            const lt_placement *p = e ? &b->dst[i] : &b->src[i];
            if (p->kind == LT_PL_SHARD && p->rule.kind != LT_SPLIT_CHUNK)
                for (int d = 0; d < nd; d++) bf_cand(b, i, lt_shard_rule(d, p->rule));
        }
    }
    lt_split_rule r = lt_split_chunk();
    bf_rule(b, r);
    r.kind = LT_SPLIT_BALANCED;
    bf_rule(b, r);
    r.kind = LT_SPLIT_LAST;
    bf_rule(b, r);
    for (int i = 0; i < b->M; i++) {
        if (sp[i].kind == LT_PL_SHARD && sp[i].rule.kind == LT_SPLIT_EXPLICIT) bf_rule(b, sp[i].rule);
        if (dp[i].kind == LT_PL_SHARD && dp[i].rule.kind == LT_SPLIT_EXPLICIT) bf_rule(b, dp[i].rule);
    }
}

/* Same candidate sets, frozen dims, partition targets and rules: the same graph. */
static int bf_same_space(const bf *a, const bf *b) {
    if (a->M != b->M || a->nrules != b->nrules) return 0;
    for (int i = 0; i < a->M; i++) {
        if (a->nc[i] != b->nc[i] || a->frozen[i] != b->frozen[i] || a->ptarget[i] != b->ptarget[i]) return 0;
        for (int k = 0; k < a->nc[i]; k++) {   /* the same set (the order does not matter here) */
            int found = 0;
            for (int q = 0; q < b->nc[i] && !found; q++) found = lt_placement_equal(&a->cand[i][k], &b->cand[i][q]);
            if (!found) return 0;
        }
    }
    for (int k = 0; k < a->nrules; k++)
        if (!lt_split_rule_equal(&a->rules[k], &b->rules[k])) return 0;
    return 1;
}

static void bf_free(bf *b) {
    for (int s = 0; s < b->nst; s++) {
        for (int r = 0; r < b->W; r++) bfb_free(&b->st[s].rk[r], b->nd);
        free(b->st[s].rk);
    }
    free(b->st);
}

/* ---- collectives on index lists ------------------------------------------------------------ */

enum { BF_AG, BF_GATHER, BF_A2A, BF_SCATTER, BF_BCAST, BF_PERMUTE, BF_AR, BF_RS, BF_REDUCE, BF_NKINDS };

/* Appends positions [pos, pos + cnt) of block x along d to list o (length *n). */
static void bf_take(int64_t *o, int64_t *n, const bfb *x, int d, int64_t pos, int64_t cnt) {
    for (int64_t k = 0; k < cnt; k++) o[(*n)++] = x->ix[d][pos + k];
}

/* out = the concatenation along f of pieces q[0..k) (block, and along e the
 * positions [off, off + len) of it; e < 0: whole), of result shape sh. 0 when
 * the pieces that hold elements disagree off f. */
static int bf_concat(const bf *b, const bfb *const *q, const int64_t *off, const int64_t *len, int k, int e, int f,
                     const int64_t *sh, bfb *out) {
    int nd = b->nd;
    memcpy(out->shape, sh, sizeof(int64_t) * (size_t)nd);
    out->empty = bf_numel(sh, nd) == 0;
    if (out->empty) return 1;
    int first = -1;
    for (int x = 0; x < k; x++) {
        int64_t s[LT_MAX_DIMS];
        memcpy(s, q[x]->shape, sizeof s);
        if (e >= 0) s[e] = len[x];
        if (bf_numel(s, nd) == 0) continue;
        for (int d = 0; d < nd && first >= 0; d++) {
            if (d == f) continue;
            int64_t pa = d == e ? off[x] : 0, pb = d == e ? off[first] : 0;
            int64_t na = d == e ? len[x] : q[x]->shape[d], nb = d == e ? len[first] : q[first]->shape[d];
            if (na != nb || memcmp(q[x]->ix[d] + pa, q[first]->ix[d] + pb, sizeof(int64_t) * (size_t)na)) return 0;
        }
        if (first < 0) first = x;
    }
    if (first < 0) return 0;
    for (int d = 0; d < nd; d++) {
        out->ix[d] = malloc(sizeof(int64_t) * (size_t)(sh[d] + 1));
        int64_t n = 0;
        if (d != f) {
            bf_take(out->ix[d], &n, q[first], d, d == e ? off[first] : 0, d == e ? len[first] : q[first]->shape[d]);
        } else {
            for (int x = 0; x < k; x++) {
                int64_t s[LT_MAX_DIMS];
                memcpy(s, q[x]->shape, sizeof s);
                if (e >= 0) s[e] = len[x];
                if (bf_numel(s, nd) == 0) continue;
                bf_take(out->ix[d], &n, q[x], d, d == e ? off[x] : 0, d == e ? len[x] : q[x]->shape[d]);
            }
        }
        if (n != sh[d]) return 0;
    }
    return 1;
}

/* What every rank holds after collective `kind` on mesh dim i from state u
 * (into G, Partial ops into gpop) and its bytes (*cost). 1, or 0 when
 * collectives_sim rejects the call or the result is not a set of blocks. */
static int bf_collective(const bf *b, const bfs *u, int kind, int i, int e, int f, int root,
                         const lt_split_rule *rule, const int *perm, bfb *G, int *gpop, int64_t *cost) {
    int nd = b->nd, n = b->m->shape[i], ng = lt_mesh_ngroups(b->m, i);
    int reducing = kind == BF_AR || kind == BF_RS || kind == BF_REDUCE;
    memcpy(gpop, u->pop, sizeof(int) * (size_t)b->M);
    if (reducing ? u->pop[i] < 0 : u->pop[i] >= 0) return 0;
    if (reducing) gpop[i] = -1;
    if (nd == 0 && kind != BF_AR && kind != BF_BCAST && kind != BF_PERMUTE) return 0;
    int grp[64];
    int64_t recv = 0, sizes[64][64], offs[64][64];
    for (int g = 0; g < ng; g++) {
        lt_mesh_group(b->m, i, g, grp);
        const bfb *x[64] = {0};
        for (int q = 0; q < n; q++) x[q] = &u->rk[grp[q]];
        int64_t sh[LT_MAX_DIMS];
        memcpy(sh, x[0]->shape, sizeof sh);
        /* collectives_sim's checks: shapes agree off the concat dim; splits fit */
        int skip = kind == BF_AG || kind == BF_GATHER ? e : kind == BF_A2A ? f : -1;
        if (kind != BF_SCATTER && kind != BF_BCAST && kind != BF_PERMUTE)
            for (int q = 0; q < n; q++)
                for (int d = 0; d < nd; d++)
                    if (d != skip && x[q]->shape[d] != sh[d]) return 0;
        if (kind == BF_A2A)
            for (int q = 0; q < n; q++)
                if (lt_split_sizes_offsets(rule, x[q]->shape[e], n, sizes[q], offs[q])) return 0;
        if ((kind == BF_SCATTER || kind == BF_RS) &&
            lt_split_sizes_offsets(rule, x[kind == BF_SCATTER ? root : 0]->shape[e], n, sizes[0], offs[0]))
            return 0;
        for (int j = 0; j < n; j++) {
            bfb *o = &G[grp[j]];
            int64_t len[64], off[64];
            switch (kind) {
            case BF_AG:
            case BF_GATHER: {
                int64_t total = 0;
                sh[e] = 0;
                for (int q = 0; q < n; q++) {
                    sh[e] += x[q]->shape[e];
                    total += bf_numel(x[q]->shape, nd);
                }
                if (kind == BF_GATHER && j != root) {   /* a placeholder: dim 0 emptied */
                    memcpy(o->shape, sh, sizeof sh);
                    o->shape[0] = 0;
                    o->empty = 1;
                    break;
                }
                if (!bf_concat(b, x, NULL, NULL, n, -1, e, sh, o)) return 0;
                recv += total - bf_numel(x[j]->shape, nd);
                break;
            }
            case BF_A2A:
                memcpy(sh, x[0]->shape, sizeof sh);
                sh[e] = sizes[0][j];
                sh[f] = 0;
                for (int q = 0; q < n; q++) {
                    sh[f] += f == e ? sizes[q][j] : x[q]->shape[f];
                    len[q] = sizes[q][j];
                    off[q] = offs[q][j];
                    if (q != j && x[q]->shape[e]) recv += bf_numel(x[q]->shape, nd) / x[q]->shape[e] * sizes[q][j];
                }
                if (!bf_concat(b, x, off, len, n, e, f, sh, o)) return 0;
                break;
            case BF_SCATTER:
            case BF_RS: {
                const bfb *s = x[kind == BF_SCATTER ? root : j];
                memcpy(sh, s->shape, sizeof sh);
                sh[e] = sizes[0][j];
                len[0] = sizes[0][j];
                off[0] = offs[0][j];
                if (!bf_concat(b, &s, off, len, 1, e, e, sh, o)) return 0;
                if (kind == BF_RS) recv += (n - 1) * bf_numel(sh, nd);
                else if (j != root) recv += bf_numel(sh, nd);
                break;
            }
            case BF_BCAST:
            case BF_PERMUTE: {
                int s = j;
                if (kind == BF_BCAST) s = root;
                else
                    for (int q = 0; q < n; q++)
                        if (perm[q] == j) s = q;
                if (!bf_concat(b, &x[s], NULL, NULL, 1, -1, nd ? 0 : -1, x[s]->shape, o)) return 0;
                if (s != j) recv += bf_numel(x[s]->shape, nd);
                break;
            }
            case BF_AR:
            case BF_REDUCE: {
                int64_t E = bf_numel(sh, nd);
                if (kind == BF_REDUCE && j != root) {
                    if (nd == 0) return 0;   /* a placeholder is 1-d */
                    memcpy(o->shape, sh, sizeof sh);
                    o->shape[0] = 0;
                    o->empty = 1;
                    break;
                }
                if (!bf_concat(b, &x[j], NULL, NULL, 1, -1, nd ? 0 : -1, sh, o)) return 0;
                if (kind == BF_REDUCE) recv += (n - 1) * E;
                else {
                    int64_t p = E / n + (j < E % n);
                    recv += (n - 1) * p + (E - p);
                }
                break;
            }
            }
        }
    }
    for (int r = 0; r < b->W; r++)
        if (!bfb_canon(&G[r], nd)) return 0;
    *cost = recv * 4;   /* f32 */
    return 1;
}

/* ---- Dijkstra ------------------------------------------------------------------------------------ */

typedef struct bf_result {
    int64_t bytes;
    int steps;
} bf_result;

static void bf_relax(int64_t *db, int *ds, const int *done, int v, int64_t nb, int ns) {
    if (v < 0 || done[v]) return;
    if (nb < db[v] || (nb == db[v] && ns < ds[v])) {
        db[v] = nb;
        ds[v] = ns;
    }
}

/* Next permutation of p[0..n) in lexicographic order; 0 after the last. */
static int bf_next_perm(int *p, int n) {
    int i = n - 2;
    while (i >= 0 && p[i] >= p[i + 1]) i--;
    if (i < 0) return 0;
    int j = n - 1;
    while (p[j] <= p[i]) j--;
    int t = p[i];
    p[i] = p[j];
    p[j] = t;
    for (int a = i + 1, z = n - 1; a < z; a++, z--) {
        t = p[a];
        p[a] = p[z];
        p[z] = t;
    }
    return 1;
}

/* The state of placement list pl (effective: size-1 mesh dims R). */
static int bf_state_of(const bf *b, const lt_placement *pl) {
    int pop[LT_MESH_MAX_DIMS];
    bfb *rk = bf_layout(b, pl, pop);
    int s = bf_find(b, rk, pop);
    for (int r = 0; r < b->W; r++) bfb_free(&rk[r], b->nd);
    free(rk);
    return s;
}

/* The least (bytes, steps) from state `start` to every state, into db[N]
 * (INT64_MAX: unreachable) and ds[N]. */
static void bf_dijkstra(bf *b, int start, int64_t *db, int *ds) {
    int N = b->nst, W = b->W, nd = b->nd;
    int *done = calloc((size_t)N, sizeof(int));
    bfb *G = calloc((size_t)W, sizeof(bfb));
    for (int s = 0; s < N; s++) {
        db[s] = INT64_MAX;
        ds[s] = INT32_MAX;
    }
    db[start] = 0;
    ds[start] = 0;
    for (;;) {
        int u = -1;
        for (int s = 0; s < N; s++)
            if (!done[s] && db[s] != INT64_MAX &&
                (u < 0 || db[s] < db[u] || (db[s] == db[u] && ds[s] < ds[u])))
                u = s;
        if (u < 0) break;
        done[u] = 1;
        const bfs *x = &b->st[u];
        /* local picks */
        for (int v = 0; v < N; v++) {
            if (v == u || done[v] || memcmp(b->st[v].pop, x->pop, sizeof(int) * (size_t)b->M)) continue;
            int ok = 1;
            for (int r = 0; r < W && ok; r++) ok = bfb_within(&b->st[v].rk[r], &x->rk[r], nd);
            if (ok) bf_relax(db, ds, done, v, db[u], ds[u] + 1);
        }
        for (int i = 0; i < b->M; i++) {
            int n = b->m->shape[i];
            if (n == 1 || b->frozen[i]) continue;
            if (b->ptarget[i] >= 0 && x->pop[i] < 0) {   /* partition: members must hold the same block */
                int same = 1, grp[64];
                for (int g = 0; g < lt_mesh_ngroups(b->m, i) && same; g++) {
                    lt_mesh_group(b->m, i, g, grp);
                    for (int q = 1; q < n && same; q++) same = bfb_equal(&x->rk[grp[q]], &x->rk[grp[0]], nd);
                }
                int pop[LT_MESH_MAX_DIMS];
                memcpy(pop, x->pop, sizeof pop);
                pop[i] = b->ptarget[i];
                if (same) bf_relax(db, ds, done, bf_find(b, x->rk, pop), db[u], ds[u] + 1);
            }
            int perm[64];
            for (int kind = 0; kind < BF_NKINDS; kind++) {
                int nroot = kind == BF_GATHER || kind == BF_SCATTER || kind == BF_BCAST || kind == BF_REDUCE ? n : 1;
                int ne = kind == BF_AG || kind == BF_GATHER || kind == BF_A2A || kind == BF_SCATTER || kind == BF_RS ? nd : 1;
                int nf = kind == BF_A2A ? nd : 1;
                int nr = kind == BF_A2A || kind == BF_SCATTER || kind == BF_RS ? b->nrules : 1;
                for (int root = 0; root < nroot; root++)
                    for (int e = 0; e < ne; e++)
                        for (int f = 0; f < nf; f++)
                            for (int ri = 0; ri < nr; ri++) {
                                for (int q = 0; q < n; q++) perm[q] = q;
                                do {
                                    if (kind == BF_PERMUTE && bf_next_perm(perm, n) == 0) break;
                                    int gpop[LT_MESH_MAX_DIMS];
                                    int64_t cost = 0;
                                    memset(G, 0, sizeof(bfb) * (size_t)W);
                                    if (bf_collective(b, x, kind, i, e, f, root, &b->rules[ri], perm, G, gpop, &cost)) {
                                        int v = bf_find(b, G, gpop);
                                        if (v != u) bf_relax(db, ds, done, v, db[u] + cost, ds[u] + 1);
                                    }
                                    for (int r = 0; r < W; r++) bfb_free(&G[r], nd);
                                } while (kind == BF_PERMUTE);
                            }
            }
        }
    }
    free(done);
    free(G);
}

#endif
