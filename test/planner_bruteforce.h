/* test/planner_bruteforce.h — an independent brute-force search for the
 * cheapest redistribute, to check the min-cost planner against.
 *
 * Written from the definition of a step in localtensor/plan.h and
 * sharing no code or candidate list with the planner. A state is a layout:
 * what every rank holds (its shard's shape and the global indices along
 * every dim) plus which mesh dims are Partial. The universe of states is
 * enumerated here, independently and completely for small tensors: every
 * placement list whose entries (per mesh dim of size > 1) are
 *   R;
 *   S(d, rule) for every tensor dim d and every split rule in play (chunk,
 *     balanced, last, and each explicit size list of the source or the
 *     destination, on mesh dims of its length);
 *   SS(d, k) for every k in 1..shape[d] (see bf_options for why a larger k
 *     adds no layout);
 *   P(op) for every op of a Partial in the source or the destination (no
 *     move makes any other op: Partials come from the source or from a
 *     partition towards the destination's op, and no move changes an op);
 * kept when lt_placements_check and layout math accept it, and asking
 * layout math (lt_layout_rank) what each rank holds. Lists that give every
 * rank the same indices (and the same shape when it holds nothing) and the
 * same Partial dims are one state, however they are spelled.
 *
 * Edges: every collective of collectives_sim along every mesh dim of size
 * > 1, with every argument (every tensor dim, every root, every
 * permutation, every split rule in play; broadcast too), applied to the
 * index sets with the shapes collectives_sim produces and the bytes of the
 * model of collectives_sim/trace.h; the move reaches state B when every
 * rank then holds exactly B's indices (a rooted collective's other ranks a
 * placeholder). Local picks go to every state whose every shard is within
 * (or empty, or equal to) what each rank holds, with the same Partial dims;
 * partition goes R -> P(op) on a mesh dim whose members hold the same
 * block, towards a destination Partial only. Under --moves all (bf_all)
 * also the collectives over flattened groups of adjacent mesh dims and the
 * permutations of all ranks (bf_flat_edges). Dijkstra gives the least
 * (bytes, steps).
 *
 * Index sets are 64-bit masks, so a tensor dim may have at most 64
 * elements and a tensor at most BF_MAXD dims: this is for the sweeps.
 * Plain malloc: this is test code. Header-only; one includer.
 */
#ifndef LT_PLANNER_BRUTEFORCE_H
#define LT_PLANNER_BRUTEFORCE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/localtensor.h"
#include "test/testutil.h"

#define BF_MAXD 3     /* tensor dims */
#define BF_MAXE 64    /* elements along one tensor dim (one mask) */
#define BF_MAXG 16    /* members of a group */
#define BF_NDIST 64   /* searches kept per universe */

/* What one rank holds: its shard's shape and, when it holds elements, the
 * global indices along every dim (bit x of mask[d]: index x). Empty blocks
 * have zero masks. */
typedef struct bfb {
    int64_t shape[BF_MAXD];
    uint64_t mask[BF_MAXD];
    int empty;
} bfb;

/* A collective edge: to state v, cost bytes (received, summed over the
 * ranks), most (received by the busiest rank); rdim: the mesh dim it
 * reduces (a move that frozen mesh dims forbid), -1 for the others; kind
 * and mesh dim i price it in time; span: 1, or the mesh dims i .. i +
 * span - 1 of a flattened group (--moves all; rdim then the first of the
 * dims it reduces). */
typedef struct bfe {
    int v, rdim, kind, i, span;
    int64_t cost, most;
} bfe;

/* The objectives (localtensor/plan.h), written here from their definition:
 * bytes: the bytes received summed over ranks and steps, then steps;
 * max-rank-bytes: per step the busiest rank's bytes, summed, then total
 * bytes, then steps; time: per collective step rounds * alpha + the busiest
 * rank's bytes / beta rounded up to a picosecond (rounds: 2 (n - 1) for
 * all_reduce, 1 for a permutation, n - 1 for the others), then total
 * bytes, then steps. bf_obj (0: bytes) and bf_topo are read by every search
 * that follows; bf_dtensor 1 leaves out gather, scatter, broadcast, reduce
 * and permutations. */
static int bf_obj, bf_dtensor;
static lt_topology bf_topo;
/* 1: the move set all (localtensor/plan.h, written here from its
 * definition): the moves of collectives, plus all_gather, all_to_all,
 * reduce_scatter and all_reduce over the product group of every run of two
 * or more adjacent mesh dims of size > 1 (members in row-major order of
 * their coordinates: lt_mesh_flatten), and, on a mesh with two or more
 * dims of size > 1, every permutation of all ranks (bf_flat_edges). */
static int bf_all;

/* The least (bytes, steps) from state src to every state, under one set of
 * rules of the pair (frozen mesh dims, partition targets). */
typedef struct bfd {
    int src, obj, dtensor, all;
    unsigned frozen;
    signed char ptarget[LT_MESH_MAX_DIMS];
    int64_t *db, *dc;   /* total bytes; the objective's cost (time or busiest-rank bytes) */
    int *ds;
    int *prev;     /* the state before, on one cheapest path; -1 at src */
} bfd;

typedef struct bfu {
    lt_mesh m;
    int M, W, nd;
    int64_t shape[BF_MAXD];
    size_t esize;
    int nrules;
    lt_split_rule rules[8];
    unsigned ops;              /* Partial ops (bit per lt_redop) */
    long nlists;               /* valid placement lists enumerated */
    int n, cap;                /* states */
    bfb *blk;                  /* (cap x W) */
    signed char *pop;          /* (cap x M) Partial op per mesh dim, -1: none */
    lt_placement *pl;          /* (cap x M) the first list found with that layout */
    uint64_t *hash;            /* (cap) */
    int *tab;                  /* open addressing: state + 1, 0 empty */
    size_t tcap;
    bfe **out;                 /* (cap) collective edges, built when first expanded */
    int *nout;                 /* (cap) -1: not built yet */
    bfe **fout;                /* (cap) what --moves all adds, built when first needed */
    int *nfout;                /* (cap) -1: not built yet */
    int **loc;                 /* (cap) local picks */
    int *nloc;                 /* (cap) */
    bfd dist[BF_NDIST];
    int ndist;
} bfu;

typedef struct bf_result {
    int64_t bytes;   /* -1: unreachable */
    int64_t cost;    /* the objective's (bytes: = bytes) */
    int steps;
    char path[512];  /* one cheapest path: its states and each step's bytes */
} bf_result;

static int64_t bf_numel(const int64_t *s, int nd) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= s[d];
    return n;
}

static int bf_popc(uint64_t x) { return __builtin_popcountll(x); }

static int bfb_eq(const bfb *a, const bfb *b, int nd) {
    if (a->empty != b->empty) return 0;
    for (int d = 0; d < nd; d++)
        if (a->shape[d] != b->shape[d] || a->mask[d] != b->mask[d]) return 0;
    return 1;
}

/* b within a, or b empty. */
static int bfb_within(const bfb *b, const bfb *a, int nd) {
    if (b->empty) return 1;
    if (a->empty) return 0;
    for (int d = 0; d < nd; d++)
        if (b->mask[d] & ~a->mask[d]) return 0;
    return 1;
}

/* Positions off..off+len-1 (in increasing order) of the indices in x. */
static uint64_t bf_select(uint64_t x, int64_t off, int64_t len) {
    uint64_t o = 0;
    for (int64_t p = 0; x && p < off + len; p++) {
        uint64_t low = x & (~x + 1);
        if (p >= off) o |= low;
        x &= x - 1;
    }
    return o;
}

/* x with dim e cut to positions off..off+len-1 (e < 0: x itself). */
static bfb bf_sub(const bfb *x, int nd, int e, int64_t off, int64_t len) {
    bfb o = *x;
    if (e < 0) return o;
    o.shape[e] = len;
    if (!x->empty) o.mask[e] = bf_select(x->mask[e], off, len);
    o.empty = bf_numel(o.shape, nd) == 0;
    if (o.empty) memset(o.mask, 0, sizeof o.mask);
    return o;
}

static uint64_t bf_hash(const bfu *u, const bfb *rk, const signed char *pop) {
    uint64_t h = 1469598103934665603ULL;
#define BF_MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ULL)
    for (int i = 0; i < u->M; i++) BF_MIX(pop[i] + 7);
    for (int r = 0; r < u->W; r++) {
        BF_MIX(rk[r].empty);
        for (int d = 0; d < u->nd; d++) {
            BF_MIX(rk[r].shape[d]);
            BF_MIX(rk[r].mask[d]);
            BF_MIX(rk[r].mask[d] >> 32);
        }
    }
#undef BF_MIX
    return h;
}

/* The state holding exactly rk with Partial ops pop, or -1. */
static int bf_find(const bfu *u, const bfb *rk, const signed char *pop) {
    if (!u->tcap) return -1;
    uint64_t h = bf_hash(u, rk, pop);
    for (size_t q = h & (u->tcap - 1); u->tab[q]; q = (q + 1) & (u->tcap - 1)) {
        int s = u->tab[q] - 1;
        if (u->hash[s] != h || memcmp(u->pop + (size_t)s * (size_t)u->M, pop, (size_t)u->M))
            continue;
        int same = 1;
        for (int r = 0; r < u->W && same; r++)
            same = bfb_eq(&u->blk[(size_t)s * (size_t)u->W + (size_t)r], &rk[r], u->nd);
        if (same) return s;
    }
    return -1;
}

static void bf_table_put(bfu *u, int s) {
    size_t q = u->hash[s] & (u->tcap - 1);
    while (u->tab[q]) q = (q + 1) & (u->tcap - 1);
    u->tab[q] = s + 1;
}

/* Adds a state (rk, pop, first list pl) unless its layout is one already. */
static void bf_add(bfu *u, const bfb *rk, const signed char *pop, const lt_placement *pl) {
    if (bf_find(u, rk, pop) >= 0) return;
    if (u->n == u->cap) {
        u->cap = u->cap ? 2 * u->cap : 256;
        size_t c = (size_t)u->cap;
        u->blk = realloc(u->blk, sizeof(bfb) * c * (size_t)u->W);
        u->pop = realloc(u->pop, c * (size_t)u->M);
        u->pl = realloc(u->pl, sizeof(lt_placement) * c * (size_t)u->M);
        u->hash = realloc(u->hash, sizeof(uint64_t) * c);
        free(u->tab);
        u->tcap = 4 * c;
        u->tab = calloc(u->tcap, sizeof(int));
        assert_non_null(u->blk);
        assert_non_null(u->tab);
        for (int s = 0; s < u->n; s++) bf_table_put(u, s);
    }
    int s = u->n++;
    memcpy(u->blk + (size_t)s * (size_t)u->W, rk, sizeof(bfb) * (size_t)u->W);
    memcpy(u->pop + (size_t)s * (size_t)u->M, pop, (size_t)u->M);
    memcpy(u->pl + (size_t)s * (size_t)u->M, pl, sizeof(lt_placement) * (size_t)u->M);
    u->hash[s] = bf_hash(u, rk, pop);
    bf_table_put(u, s);
}

/* What every rank holds under placement list pl (checked), into rk[W]; its
 * Partial ops into pop. */
static void bf_layout(const bfu *u, const lt_placement *pl, bfb *rk, signed char *pop) {
    for (int i = 0; i < u->M; i++)
        pop[i] = (signed char)(pl[i].kind == LT_PL_PARTIAL ? (int)pl[i].op : -1);
    for (int r = 0; r < u->W; r++) {
        lt_rank_layout l;
        LT_CHECK(lt_layout_rank(&u->m, u->nd, u->shape, pl, r, &l));
        bfb *b = &rk[r];
        memset(b, 0, sizeof *b);
        memcpy(b->shape, l.local_shape, sizeof(int64_t) * (size_t)u->nd);
        b->empty = bf_numel(l.local_shape, u->nd) == 0;
        for (int d = 0; d < u->nd && !b->empty; d++)
            for (int64_t k = 0; k < l.local_shape[d]; k++)
                b->mask[d] |= 1ULL << (l.idx[d] ? l.idx[d][k] : k);
        lt_rank_layout_free(&l);
    }
}

/* The options of mesh dim i. SS(d, k) stops at k = shape[d]: every list a
 * StridedShard splits along d has n <= shape[d] indices, and for k >= n >= 1
 * the k chunk-rule pieces of the list are its n single indices (then empty
 * pieces), so every k >= n picks the same; for n = 0 every k picks nothing.
 * SS(d, 1) is S(d) again (one piece, cut by the chunk rule); it stays in,
 * as its layout is deduplicated like any other. */
static int bf_options(const bfu *u, int i, lt_placement *o) {
    int n = 0, mi = u->m.shape[i];
    o[n++] = lt_replicate();
    if (mi == 1) return n;
    for (int d = 0; d < u->nd; d++) {
        for (int q = 0; q < u->nrules; q++)
            if (u->rules[q].kind != LT_SPLIT_EXPLICIT || u->rules[q].nsizes == mi)
                o[n++] = lt_shard_rule(d, u->rules[q]);
        for (int64_t k = 1; k <= (u->shape[d] > 1 ? u->shape[d] : 1); k++)
            o[n++] = lt_strided(d, (int)k);
    }
    for (int op = 0; op < LT_REDOP_COUNT; op++)
        if (u->ops >> op & 1) o[n++] = lt_partial((lt_redop)op);
    return n;
}

/* Every valid placement list of the options, one state per layout. */
static void bf_enumerate(bfu *u) {
    static lt_placement opt[LT_MESH_MAX_DIMS][BF_MAXD * (BF_MAXE + 8) + 16];
    int no[LT_MESH_MAX_DIMS], idx[LT_MESH_MAX_DIMS] = {0};
    for (int i = 0; i < u->M; i++) no[i] = bf_options(u, i, opt[i]);
    bfb *rk = malloc(sizeof(bfb) * (size_t)u->W);
    for (;;) {
        lt_placement pl[LT_MESH_MAX_DIMS], tmp[LT_MESH_MAX_DIMS];
        for (int i = 0; i < u->M; i++) pl[i] = opt[i][idx[i]];
        if (!lt_placements_check(&u->m, u->nd, pl, u->M, tmp) &&
            !lt_layout_check(&u->m, u->nd, u->shape, pl)) {
            signed char pop[LT_MESH_MAX_DIMS];
            bf_layout(u, pl, rk, pop);
            bf_add(u, rk, pop, pl);
            u->nlists++;
        }
        int i = u->M - 1;
        while (i >= 0 && ++idx[i] == no[i]) idx[i--] = 0;
        if (i < 0) break;
    }
    free(rk);
    u->out = calloc((size_t)u->n, sizeof(bfe *));
    u->nout = malloc(sizeof(int) * (size_t)u->n);
    u->fout = calloc((size_t)u->n, sizeof(bfe *));
    u->nfout = malloc(sizeof(int) * (size_t)u->n);
    u->loc = calloc((size_t)u->n, sizeof(int *));
    u->nloc = calloc((size_t)u->n, sizeof(int));
    for (int s = 0; s < u->n; s++) u->nout[s] = u->nfout[s] = -1;
}

static void bf_rule_add(bfu *u, const lt_split_rule *r) {
    for (int q = 0; q < u->nrules; q++)
        if (lt_split_rule_equal(&u->rules[q], r)) return;
    assert_true(u->nrules < 8);
    u->rules[u->nrules++] = *r;
}

/* The universe of a redistribute sp -> dp (lists checked), not yet
 * enumerated: its mesh, shape, rules in play and Partial ops. */
static void bf_universe_init(bfu *u, const lt_mesh *m, int nd, const int64_t *shape, size_t esize,
                             const lt_placement *sp, const lt_placement *dp) {
    memset(u, 0, sizeof *u);
    assert_true(nd <= BF_MAXD && m->world <= 64);
    for (int d = 0; d < nd; d++) assert_true(shape[d] <= BF_MAXE);
    u->m = *m;
    u->M = m->ndim;
    u->W = m->world;
    u->nd = nd;
    u->esize = esize;
    memcpy(u->shape, shape, sizeof(int64_t) * (size_t)nd);
    lt_split_rule r = lt_split_chunk();
    const lt_split_kind kinds[3] = {LT_SPLIT_CHUNK, LT_SPLIT_BALANCED, LT_SPLIT_LAST};
    for (int q = 0; q < 3; q++) {
        r.kind = kinds[q];
        bf_rule_add(u, &r);
    }
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < u->M; i++) {
            const lt_placement *p = e ? &dp[i] : &sp[i];
            if (m->shape[i] == 1) continue;
            if (p->kind == LT_PL_SHARD && p->rule.kind == LT_SPLIT_EXPLICIT)
                bf_rule_add(u, &p->rule);
            if (p->kind == LT_PL_PARTIAL) u->ops |= 1u << p->op;
        }
}

static int bf_universe_same(const bfu *a, const bfu *b) {
    if (!lt_mesh_equal(&a->m, &b->m) || a->nd != b->nd || a->esize != b->esize ||
        a->ops != b->ops || a->nrules != b->nrules ||
        memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->nd))
        return 0;
    for (int q = 0; q < a->nrules; q++) {   /* the same set */
        int found = 0;
        for (int k = 0; k < b->nrules && !found; k++)
            found = lt_split_rule_equal(&a->rules[q], &b->rules[k]);
        if (!found) return 0;
    }
    return 1;
}

static void bf_dist_clear(bfu *u) {
    for (int q = 0; q < u->ndist; q++) {
        free(u->dist[q].db);
        free(u->dist[q].dc);
        free(u->dist[q].ds);
        free(u->dist[q].prev);
    }
    u->ndist = 0;
}

static void bf_universe_free(bfu *u) {
    bf_dist_clear(u);
    for (int s = 0; s < u->n; s++) {
        free(u->out[s]);
        free(u->fout[s]);
        free(u->loc[s]);
    }
    free(u->out);
    free(u->nout);
    free(u->fout);
    free(u->nfout);
    free(u->loc);
    free(u->nloc);
    free(u->blk);
    free(u->pop);
    free(u->pl);
    free(u->hash);
    free(u->tab);
    memset(u, 0, sizeof *u);
}

/* ---- collectives on index sets ------------------------------------------------------------- */

enum {
    BF_AG,
    BF_GATHER,
    BF_A2A,
    BF_SCATTER,
    BF_BCAST,
    BF_PERMUTE,
    BF_AR,
    BF_RS,
    BF_REDUCE,
    BF_NKINDS
};

/* out = the concatenation along f of pieces p[0..k), of result shape sh. 0
 * when the pieces that hold elements disagree off f, or an index repeats
 * along f (not a set). */
static int bf_concat(const bfu *u, const bfb *p, int k, int f, const int64_t *sh, bfb *out) {
    int nd = u->nd, first = -1;
    memset(out, 0, sizeof *out);
    memcpy(out->shape, sh, sizeof(int64_t) * (size_t)nd);
    out->empty = bf_numel(sh, nd) == 0;
    if (out->empty) return 1;
    uint64_t acc = 0;
    for (int x = 0; x < k; x++) {
        if (p[x].empty) continue;
        if (first < 0) first = x;
        for (int d = 0; d < nd; d++)
            if (d != f && p[x].mask[d] != p[first].mask[d]) return 0;
        if (acc & p[x].mask[f]) return 0;
        acc |= p[x].mask[f];
    }
    if (first < 0) return 0;
    memcpy(out->mask, p[first].mask, sizeof out->mask);
    out->mask[f] = acc;
    for (int d = 0; d < nd; d++)
        if (bf_popc(out->mask[d]) != sh[d]) return 0;
    return 1;
}

/* A placeholder: shape sh with dim 0 emptied, holding nothing. */
static void bf_placeholder(const bfu *u, const int64_t *sh, bfb *o) {
    memset(o, 0, sizeof *o);
    memcpy(o->shape, sh, sizeof(int64_t) * (size_t)u->nd);
    o->shape[0] = 0;
    o->empty = 1;
}

/* *m = max(*m, v): the busiest member's bytes so far. */
static void bf_most(int64_t *m, int64_t v) {
    if (v > *m) *m = v;
}

/* What every rank holds after collective `kind` along mesh dim i from state
 * s (into G, Partial ops into gpop) and its bytes (*cost; the busiest
 * rank's: *most, which the caller zeroes). 1, or 0 when
 * collectives_sim rejects the call or the result is not a set of blocks. */
/* One group of a collective in bf_collective: its members' blocks x[n]
 * and the split pieces (sizes, offs) the checks found. */
typedef struct bf_grp {
    const bfu *u;
    int kind, n, nd, e, f, root;
    const int *perm;
    const bfb *x[BF_MAXG];
    int64_t sizes[BF_MAXG][BF_MAXG], offs[BF_MAXG][BF_MAXG];
    int64_t sh[BF_MAXD];
    bfb pc[BF_MAXG];
    int64_t recv;   /* elements received so far */
} bf_grp;

/* collectives_sim's checks on a group: shapes agree off the concat dim;
 * the splits fit. 0 when the collective cannot run on it. */
static int bf_group_ok(bf_grp *q, const lt_split_rule *rule) {
    int kind = q->kind, n = q->n, nd = q->nd, e = q->e;
    int skip = kind == BF_AG || kind == BF_GATHER ? e : kind == BF_A2A ? q->f : -1;
    if (kind != BF_SCATTER && kind != BF_BCAST && kind != BF_PERMUTE)
        for (int k = 0; k < n; k++)
            for (int d = 0; d < nd; d++)
                if (d != skip && q->x[k]->shape[d] != q->sh[d]) return 0;
    if (kind == BF_A2A)
        for (int k = 0; k < n; k++)
            if (lt_split_sizes_offsets(rule, q->x[k]->shape[e], n, q->sizes[k], q->offs[k]))
                return 0;
    if ((kind == BF_SCATTER || kind == BF_RS) &&
        lt_split_sizes_offsets(rule, q->x[kind == BF_SCATTER ? q->root : 0]->shape[e], n,
                               q->sizes[0], q->offs[0]))
        return 0;
    return 1;
}

/* All_gather and gather: member j's result, the blocks joined along e. */
static int bf_member_gather(bf_grp *q, int j, bfb *o) {
    int64_t total = 0;
    q->sh[q->e] = 0;
    for (int k = 0; k < q->n; k++) {
        q->sh[q->e] += q->x[k]->shape[q->e];
        total += bf_numel(q->x[k]->shape, q->nd);
        q->pc[k] = *q->x[k];
    }
    if (q->kind == BF_GATHER && j != q->root) {
        bf_placeholder(q->u, q->sh, o);
        return 1;
    }
    if (!bf_concat(q->u, q->pc, q->n, q->e, q->sh, o)) return 0;
    q->recv += total - bf_numel(q->x[j]->shape, q->nd);
    return 1;
}

/* All_to_all: member j's result, piece j of every block joined along f. */
static int bf_member_a2a(bf_grp *q, int j, bfb *o) {
    int e = q->e, f = q->f;
    memcpy(q->sh, q->x[0]->shape, sizeof q->sh);
    q->sh[e] = q->sizes[0][j];
    q->sh[f] = 0;
    for (int k = 0; k < q->n; k++) {
        const bfb *x = q->x[k];
        q->sh[f] += f == e ? q->sizes[k][j] : x->shape[f];
        q->pc[k] = bf_sub(x, q->nd, e, q->offs[k][j], q->sizes[k][j]);
        if (k != j && x->shape[e])
            q->recv += bf_numel(x->shape, q->nd) / x->shape[e] * q->sizes[k][j];
    }
    return bf_concat(q->u, q->pc, q->n, f, q->sh, o);
}

/* Member j's result of the group's collective into o; 0 when none. */
static int bf_member(bf_grp *q, int j, bfb *o) {
    int kind = q->kind, n = q->n, nd = q->nd, root = q->root;
    switch (kind) {
    case BF_AG:
    case BF_GATHER: return bf_member_gather(q, j, o);
    case BF_A2A: return bf_member_a2a(q, j, o);
    case BF_SCATTER:
    case BF_RS:
        *o = bf_sub(q->x[kind == BF_SCATTER ? root : j], nd, q->e, q->offs[0][j], q->sizes[0][j]);
        if (kind == BF_RS) q->recv += (n - 1) * bf_numel(o->shape, nd);
        else if (j != root) q->recv += bf_numel(o->shape, nd);
        return 1;
    case BF_BCAST:
    case BF_PERMUTE: {
        int from = j;
        if (kind == BF_BCAST) from = root;
        else
            for (int k = 0; k < n; k++)
                if (q->perm[k] == j) from = k;
        *o = *q->x[from];
        if (from != j) q->recv += bf_numel(q->x[from]->shape, nd);
        return 1;
    }
    case BF_AR:
    case BF_REDUCE: {
        int64_t E = bf_numel(q->sh, nd);
        if (kind == BF_REDUCE && j != root) {
            if (nd == 0) return 0;   /* a placeholder is at least 1-d */
            bf_placeholder(q->u, q->sh, o);
            return 1;
        }
        *o = *q->x[j];
        if (kind == BF_REDUCE) {
            q->recv += (n - 1) * E;
        } else {   /* ring: reduce_scatter + all_gather of balanced pieces */
            int64_t p = E / n + (j < E % n);
            q->recv += (n - 1) * p + (E - p);
        }
        return 1;
    }
    default: return 1;
    }
}

/* gm: the mesh whose dim i is the group's: u->m, or u->m with mesh dims i
 * .. i + span - 1 flattened (their Partials reduced together: one op). */
static int bf_collective(const bfu *u, int s, int kind, const lt_mesh *gm, int i, int span, int e,
                         int f, int root, const lt_split_rule *rule, const int *perm, bfb *G,
                         signed char *gpop, int64_t *cost, int64_t *most) {
    int nd = u->nd, n = gm->shape[i], ng = lt_mesh_ngroups(gm, i);
    const signed char *pop = u->pop + (size_t)s * (size_t)u->M;
    int reducing = kind == BF_AR || kind == BF_RS || kind == BF_REDUCE;
    memcpy(gpop, pop, (size_t)u->M);
    for (int j = i; j < i + span; j++) {
        if (reducing ? pop[j] < 0 || pop[j] != pop[i] : pop[j] >= 0) return 0;
        if (reducing) gpop[j] = -1;
    }
    if (nd == 0 && kind != BF_AR && kind != BF_BCAST && kind != BF_PERMUTE) return 0;
    int grp[BF_MAXG];
    bf_grp q;
    memset(&q, 0, sizeof q);
    q.u = u, q.kind = kind, q.n = n, q.nd = nd, q.e = e, q.f = f, q.root = root, q.perm = perm;
    for (int g = 0; g < ng; g++) {
        lt_mesh_group(gm, i, g, grp);
        for (int k = 0; k < n; k++) q.x[k] = &u->blk[(size_t)s * (size_t)u->W + (size_t)grp[k]];
        memcpy(q.sh, q.x[0]->shape, sizeof q.sh);
        if (!bf_group_ok(&q, rule)) return 0;
        for (int64_t j = 0, b = q.recv; j < n; j++, bf_most(most, q.recv - b), b = q.recv)
            if (!bf_member(&q, (int)j, &G[grp[j]])) return 0;
    }
    *cost = q.recv * (int64_t)u->esize, *most *= (int64_t)u->esize;
    return 1;
}

/* ---- edges -------------------------------------------------------------------------------------
 */

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

/* field by field: the struct has padding, which memcmp would read */
static int bf_edge_eq(const bfe *a, const bfe *b) {
    return a->v == b->v && a->rdim == b->rdim && a->kind == b->kind && a->i == b->i &&
           a->span == b->span && a->cost == b->cost && a->most == b->most;
}

static void bf_edge(bfe **e, int *n, int *cap, bfe x) {
    for (int q = 0; q < *n; q++)   /* parallel edges: only exact repeats dropped */
        if (bf_edge_eq(&(*e)[q], &x)) return;
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 32;
        *e = realloc(*e, sizeof(bfe) * (size_t)*cap);
    }
    (*e)[(*n)++] = x;
}

/* The collective edges and local picks of state s. */
static void bf_build_edges(bfu *u, int s) {
    int W = u->W, nd = u->nd, ne = 0, cap = 0;
    bfe *e = NULL;
    bfb *G = malloc(sizeof(bfb) * (size_t)W);
    int perm[BF_MAXG];
    for (int i = 0; i < u->M; i++) {
        int n = u->m.shape[i];
        if (n == 1) continue;
        assert_true(n <= BF_MAXG);
        for (int kind = 0; kind < BF_NKINDS; kind++) {
            int nroot =
                kind == BF_GATHER || kind == BF_SCATTER || kind == BF_BCAST || kind == BF_REDUCE
                    ? n
                    : 1;
            int nde = kind == BF_AG || kind == BF_GATHER || kind == BF_A2A || kind == BF_SCATTER ||
                              kind == BF_RS
                          ? nd
                          : 1;
            int ndf = kind == BF_A2A ? nd : 1;
            int nr = kind == BF_A2A || kind == BF_SCATTER || kind == BF_RS ? u->nrules : 1;
            int rdim = kind == BF_AR || kind == BF_RS || kind == BF_REDUCE ? i : -1;
            for (int root = 0; root < nroot; root++)
                for (int ed = 0; ed < nde; ed++)
                    for (int f = 0; f < ndf; f++)
                        for (int ri = 0; ri < nr; ri++) {
                            for (int q = 0; q < n; q++) perm[q] = q;
                            do {
                                if (kind == BF_PERMUTE && !bf_next_perm(perm, n)) break;
                                signed char gpop[LT_MESH_MAX_DIMS];
                                int64_t cost = 0, most = 0;
                                const lt_split_rule *rl = &u->rules[ri];
                                if (!bf_collective(u, s, kind, &u->m, i, 1, ed, f, root, rl, perm,
                                                   G, gpop, &cost, &most))
                                    continue;
                                int v = bf_find(u, G, gpop);
                                bfe x = {v, rdim, kind, i, 1, cost, most};
                                if (v >= 0 && v != s) bf_edge(&e, &ne, &cap, x);
                            } while (kind == BF_PERMUTE);
                        }
        }
    }
    free(G);
    u->out[s] = e;
    u->nout[s] = ne;
    /* local picks */
    const bfb *a = u->blk + (size_t)s * (size_t)W;
    int nl = 0, lcap = 0, *loc = NULL;
    for (int v = 0; v < u->n; v++) {
        if (v == s || memcmp(u->pop + (size_t)v * (size_t)u->M, u->pop + (size_t)s * (size_t)u->M,
                             (size_t)u->M))
            continue;
        const bfb *b = u->blk + (size_t)v * (size_t)W;
        int ok = 1;
        for (int r = 0; r < W && ok; r++) ok = bfb_within(&b[r], &a[r], nd);
        if (!ok) continue;
        if (nl == lcap) {
            lcap = lcap ? 2 * lcap : 32;
            loc = realloc(loc, sizeof(int) * (size_t)lcap);
        }
        loc[nl++] = v;
    }
    u->loc[s] = loc;
    u->nloc[s] = nl;
}

/* The permutations of all ranks from state s (no Partial dims) to every
 * state v holding s's blocks permuted: a rank whose block is the same in v
 * keeps it (receives nothing), every other rank receives its whole block
 * from a rank holding it in s (no permutation does better: a rank whose
 * block changes receives all of it). Appended to *e. */
static void bf_whole_permutes(const bfu *u, int s, bfe **e, int *ne, int *cap) {
    int W = u->W, nd = u->nd, M = u->M;
    const bfb *a = u->blk + (size_t)s * (size_t)W;
    for (int v = 0; v < u->n; v++) {
        const bfb *b = u->blk + (size_t)v * (size_t)W;
        int ok = v != s, used[64] = {0};
        for (int j = 0; j < M && ok; j++) ok = u->pop[(size_t)v * (size_t)M + (size_t)j] < 0;
        int64_t cost = 0, most = 0;
        for (int r = 0; r < W && ok; r++) {   /* v's blocks: s's, each used once */
            int q = 0;
            while (q < W && (used[q] || !bfb_eq(&b[r], &a[q], nd))) q++;
            ok = q < W;
            if (ok) used[q] = 1;
            int64_t x = bfb_eq(&b[r], &a[r], nd) ? 0 : bf_numel(b[r].shape, nd) * (int64_t)u->esize;
            cost += x;
            bf_most(&most, x);
        }
        bfe x = {v, -1, BF_PERMUTE, 0, M, cost, most};
        if (ok) bf_edge(e, ne, cap, x);
    }
}

/* What --moves all adds from state s (bf_all says which moves). */
static void bf_flat_edges(bfu *u, int s) {
    int ne = 0, cap = 0, big = 0, anyp = 0, nd = u->nd;
    bfe *e = NULL;
    bfb *G = malloc(sizeof(bfb) * (size_t)u->W);
    const int kinds[4] = {BF_AG, BF_A2A, BF_AR, BF_RS};
    for (int i = 0; i < u->M; i++) {
        big += u->m.shape[i] > 1;
        anyp |= u->pop[(size_t)s * (size_t)u->M + (size_t)i] >= 0;
        int dims[LT_MESH_MAX_DIMS] = {i};
        for (int sp = 2; i + sp <= u->M && u->m.shape[i] > 1; sp++) {
            dims[sp - 1] = i + sp - 1;
            if (u->m.shape[i + sp - 1] == 1) break;
            lt_mesh fm;
            LT_CHECK(lt_mesh_flatten(&u->m, dims, sp, NULL, &fm));
            for (int k = 0; k < 4; k++) {
                int kind = kinds[k], red = kind == BF_AR || kind == BF_RS;
                int nde = kind == BF_AR ? 1 : nd, ndf = kind == BF_A2A ? nd : 1;
                int nr = kind == BF_A2A || kind == BF_RS ? u->nrules : 1;
                for (int ed = 0; ed < nde; ed++)
                    for (int f = 0; f < ndf; f++)
                        for (int ri = 0; ri < nr; ri++) {
                            signed char gpop[LT_MESH_MAX_DIMS];
                            int64_t cost = 0, most = 0;
                            if (!bf_collective(u, s, kind, &fm, i, sp, ed, f, 0, &u->rules[ri],
                                               NULL, G, gpop, &cost, &most))
                                continue;
                            int v = bf_find(u, G, gpop);
                            bfe x = {v, red ? i : -1, kind, i, sp, cost, most};
                            if (v >= 0 && v != s) bf_edge(&e, &ne, &cap, x);
                        }
            }
        }
    }
    if (big >= 2 && !anyp) bf_whole_permutes(u, s, &e, &ne, &cap);
    free(G);
    u->fout[s] = e;
    u->nfout[s] = ne;
}

/* ---- Dijkstra ----------------------------------------------------------------------------------
 */

typedef struct bfh {
    int64_t c, bytes;   /* the objective's cost (0 under bytes), total bytes */
    int steps, v;
} bfh;

static int bfh_less(const bfh *a, const bfh *b) {
    if (a->c != b->c) return a->c < b->c;
    return a->bytes != b->bytes ? a->bytes < b->bytes : a->steps < b->steps;
}

/* The objective's cost of edge e (0 under bytes: the bytes order alone). */
static int64_t bf_edge_cost(const bfu *u, const bfe *e) {
    if (bf_obj == LT_OBJECTIVE_BYTES) return 0;
    if (bf_obj == LT_OBJECTIVE_MAX_RANK_BYTES) return e->most;
    static const lt_coll coll_of[BF_NKINDS] = {
        LT_COLL_ALL_GATHER, LT_COLL_GATHER, LT_COLL_ALL_TO_ALL, LT_COLL_SCATTER, LT_COLL_BROADCAST,
        LT_COLL_PERMUTE,    LT_COLL_ALL_REDUCE, LT_COLL_REDUCE_SCATTER, LT_COLL_REDUCE};
    /* a flattened group (--moves all): n its members; its link the slowest
     * of its mesh dims of size > 1 (the largest alpha, the smallest beta);
     * the algorithm they all name, else the default */
    int64_t n = 1;
    uint64_t alpha = 0, beta = UINT64_MAX;
    int algo = bf_topo.algo[e->i][coll_of[e->kind]];
    for (int j = e->i; j < e->i + e->span; j++) {
        n *= u->m.shape[j];
        if (u->m.shape[j] == 1) continue;
        if (bf_topo.alpha_ps[j] > alpha) alpha = bf_topo.alpha_ps[j];
        if (bf_topo.beta_bpus[j] < beta) beta = bf_topo.beta_bpus[j];
        if (bf_topo.algo[j][coll_of[e->kind]] != algo) algo = LT_ALGO_DEFAULT;
    }
    /* messages in sequence (docs/SEMANTICS.md §7): ring n - 1, tree the
     * levels of a binary tree over n, direct one; all_reduce twice */
    int64_t per = n - 1, levels = 0;
    while ((INT64_C(1) << levels) < n) levels++;
    switch (algo) {
    case LT_ALGO_TREE: per = levels; break;
    case LT_ALGO_DIRECT: per = 1; break;
    default: break;
    }
    int64_t rounds = e->kind == BF_AR ? 2 * per : e->kind == BF_PERMUTE ? 1 : per;
    uint64_t num = (uint64_t)e->most * 1000000u;
    return rounds * (int64_t)alpha + (int64_t)((num + beta - 1) / beta);
}

/* 1 when the move set in force leaves edge kind k out. */
static int bf_left_out(int k) {
    if (!bf_dtensor) return 0;
    return k == BF_GATHER || k == BF_SCATTER || k == BF_BCAST || k == BF_REDUCE || k == BF_PERMUTE;
}

static void bfh_push(bfh **h, int *n, int *cap, bfh x) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        *h = realloc(*h, sizeof(bfh) * (size_t)*cap);
    }
    int i = (*n)++;
    (*h)[i] = x;
    while (i > 0 && bfh_less(&(*h)[i], &(*h)[(i - 1) / 2])) {
        bfh t = (*h)[i];
        (*h)[i] = (*h)[(i - 1) / 2];
        (*h)[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static bfh bfh_pop(bfh *h, int *n) {
    bfh top = h[0];
    h[0] = h[--*n];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && bfh_less(&h[l], &h[m])) m = l;
        if (r < *n && bfh_less(&h[r], &h[m])) m = r;
        if (m == i) break;
        bfh t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
    return top;
}

static void bf_relax(bfd *x, bfh **h, int *nh, int *caph, int from, int v, int64_t nc, int64_t nb,
                     int ns) {
    int64_t *db = x->db;
    int *ds = x->ds;
    if (v < 0) return;
    bfh now = {x->dc[v], db[v], ds[v], v}, cand = {nc, nb, ns, v};
    if (bfh_less(&cand, &now)) {
        x->dc[v] = nc;
        db[v] = nb;
        ds[v] = ns;
        x->prev[v] = from;
        bfh_push(h, nh, caph, cand);
    }
}

/* Dijkstra from state src: least (bytes, steps) to every state into x. */
static void bf_dijkstra(bfu *u, bfd *x) {
    int N = u->n, W = u->W, nd = u->nd, nh = 0, caph = 0;
    int64_t *db = x->db = malloc(sizeof(int64_t) * (size_t)N);
    int *ds = x->ds = malloc(sizeof(int) * (size_t)N);
    int64_t *dc = x->dc = malloc(sizeof(int64_t) * (size_t)N);
    x->prev = malloc(sizeof(int) * (size_t)N);
    char *done = calloc((size_t)N, 1);
    bfh *h = NULL;
    bfb *G = malloc(sizeof(bfb) * (size_t)W);
    for (int s = 0; s < N; s++) {
        dc[s] = db[s] = INT64_MAX;
        ds[s] = INT32_MAX;
    }
    bf_relax(x, &h, &nh, &caph, -1, x->src, 0, 0, 0);
    while (nh) {
        bfh it = bfh_pop(h, &nh);
        int s = it.v;
        if (done[s] || it.c != dc[s] || it.bytes != db[s] || it.steps != ds[s]) continue;
        done[s] = 1;
        if (u->nout[s] < 0) bf_build_edges(u, s);
        for (int q = 0; q < u->nout[s]; q++) {
            const bfe *e = &u->out[s][q];
            if ((e->rdim >= 0 && (x->frozen >> e->rdim & 1)) || bf_left_out(e->kind)) continue;
            int64_t c = dc[s] + bf_edge_cost(u, e);
            bf_relax(x, &h, &nh, &caph, s, e->v, c, db[s] + e->cost, ds[s] + 1);
        }
        if (x->all && u->nfout[s] < 0) bf_flat_edges(u, s);
        for (int q = 0; x->all && q < u->nfout[s]; q++) {
            const bfe *e = &u->fout[s][q];
            unsigned dims = ((1u << e->span) - 1) << e->i;   /* a reduction's: all frozen-free */
            if (e->rdim >= 0 && (x->frozen & dims)) continue;
            int64_t c = dc[s] + bf_edge_cost(u, e);
            bf_relax(x, &h, &nh, &caph, s, e->v, c, db[s] + e->cost, ds[s] + 1);
        }
        for (int q = 0; q < u->nloc[s]; q++)
            bf_relax(x, &h, &nh, &caph, s, u->loc[s][q], dc[s], db[s], ds[s] + 1);
        /* partition R -> P(op) on mesh dim i towards the destination's op:
         * every group's members hold the same block */
        const signed char *pop = u->pop + (size_t)s * (size_t)u->M;
        const bfb *a = u->blk + (size_t)s * (size_t)W;
        for (int i = 0; i < u->M; i++) {
            if (x->ptarget[i] < 0 || pop[i] >= 0 || (x->frozen >> i & 1)) continue;
            int same = 1, grp[BF_MAXG], n = u->m.shape[i];
            for (int g = 0; g < lt_mesh_ngroups(&u->m, i) && same; g++) {
                lt_mesh_group(&u->m, i, g, grp);
                for (int q = 1; q < n && same; q++) same = bfb_eq(&a[grp[q]], &a[grp[0]], nd);
            }
            if (!same) continue;
            signed char gpop[LT_MESH_MAX_DIMS];
            memcpy(gpop, pop, (size_t)u->M);
            gpop[i] = x->ptarget[i];
            memcpy(G, a, sizeof(bfb) * (size_t)W);
            bf_relax(x, &h, &nh, &caph, s, bf_find(u, G, gpop), dc[s], db[s], ds[s] + 1);
        }
    }
    free(done);
    free(h);
    free(G);
}

/* The state of placement list pl (checked), or -1. */
static int bf_state_of(const bfu *u, const lt_placement *pl) {
    bfb *rk = malloc(sizeof(bfb) * (size_t)u->W);
    signed char pop[LT_MESH_MAX_DIMS];
    bf_layout(u, pl, rk, pop);
    int s = bf_find(u, rk, pop);
    free(rk);
    return s;
}

/* ---- the answer for one pair -------------------------------------------------------------------
 */

/* Universes of one mesh and shape (cleared when either changes). */
static struct {
    bfu u[16];
    int n;
    long universes, states, lists, searches;   /* totals over every universe built */
} bf_pool;

static void bf_pool_clear(void) {
    for (int q = 0; q < bf_pool.n; q++) bf_universe_free(&bf_pool.u[q]);
    bf_pool.n = 0;
}

/* The least (bytes, steps) of sp -> dp (a valid redistribute: lists checked,
 * not rejected) for a dtype of esize bytes, floating or not. */
static bf_result bf_solve(const lt_mesh *m, int nd, const int64_t *shape, size_t esize,
                          int is_float, const lt_placement *sp0, const lt_placement *dp0) {
    lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
    LT_CHECK(lt_placements_check(m, nd, sp0, m->ndim, sp));
    LT_CHECK(lt_placements_check(m, nd, dp0, m->ndim, dp));
    bfu probe;
    bf_universe_init(&probe, m, nd, shape, esize, sp, dp);
    bfu *u = NULL;
    for (int q = 0; q < bf_pool.n && !u; q++)
        if (bf_universe_same(&bf_pool.u[q], &probe)) u = &bf_pool.u[q];
    if (!u) {
        if (bf_pool.n &&
            (!lt_mesh_equal(&bf_pool.u[0].m, m) || bf_pool.u[0].nd != nd ||
             memcmp(bf_pool.u[0].shape, shape, sizeof(int64_t) * (size_t)nd) || bf_pool.n == 16))
            bf_pool_clear();
        u = &bf_pool.u[bf_pool.n++];
        *u = probe;
        bf_enumerate(u);
        bf_pool.universes++;
        bf_pool.states += u->n;
        bf_pool.lists += u->nlists;
    }
    /* the rules of the pair: size-1 mesh dims count as R; a mesh dim whose
     * source and destination are the same Partial is frozen; partition only
     * towards the destination's Partial on a mesh dim the source has not
     * Partial, never product, sum only for floating dtypes */
    bfd key;
    memset(&key, 0, sizeof key);
    key.obj = bf_obj;
    key.dtensor = bf_dtensor;
    key.all = bf_all;
    for (int i = 0; i < u->M; i++) {
        if (m->shape[i] == 1) sp[i] = dp[i] = lt_replicate();
        if (sp[i].kind == LT_PL_PARTIAL && lt_placement_equal(&sp[i], &dp[i]))
            key.frozen |= 1u << i;
        const lt_placement *t = &dp[i];
        key.ptarget[i] =
            (signed char)(t->kind == LT_PL_PARTIAL && sp[i].kind != LT_PL_PARTIAL &&
                                  t->op != LT_REDOP_PRODUCT && (t->op != LT_REDOP_SUM || is_float)
                              ? (int)t->op
                              : -1);
    }
    key.src = bf_state_of(u, sp);
    int goal = bf_state_of(u, dp);
    if (key.src < 0 || goal < 0)
        fail_msg("brute force: the %s is not a state", key.src < 0 ? "source" : "destination");
    bfd *x = NULL;
    for (int q = 0; q < u->ndist && !x; q++) {
        bfd *y = &u->dist[q];
        if (y->src == key.src && y->frozen == key.frozen && y->obj == key.obj &&
            y->dtensor == key.dtensor && y->all == key.all &&
            !memcmp(y->ptarget, key.ptarget, sizeof key.ptarget))
            x = y;
    }
    if (!x) {
        if (u->ndist == BF_NDIST) bf_dist_clear(u);
        x = &u->dist[u->ndist++];
        *x = key;
        bf_dijkstra(u, x);
        bf_pool.searches++;
    }
    bf_result r = {x->db[goal] == INT64_MAX ? -1 : x->db[goal], 0, x->ds[goal], {0}};
    r.cost = bf_obj == LT_OBJECTIVE_BYTES ? r.bytes : x->dc[goal];
    /* one cheapest path, as the first list found for each state */
    int path[64], np = 0;
    for (int v = goal; r.bytes >= 0 && v >= 0 && np < 64; v = x->prev[v]) path[np++] = v;
    size_t w = 0;
    for (int q = np - 1; q >= 0 && w + 2 < sizeof r.path; q--) {
        w += (size_t)lt_placements_format(u->pl + (size_t)path[q] * (size_t)u->M, u->M, r.path + w,
                                          sizeof r.path - w);
        if (w < sizeof r.path && q)
            w += (size_t)snprintf(r.path + w, sizeof r.path - w, " %lld -> ",
                                  (long long)(x->db[path[q - 1]] - x->db[path[q]]));
    }
    return r;
}

/* docs/SEMANTICS.md §7: a pair with zero-fill dims (a plain S(d) source and
 * a P(sum) destination on a mesh dim of size > 1) has a fixed middle: the
 * zero fills (no bytes, one step each) on a state where no other later mesh
 * dim splits their tensor dims. Its least plan is the least to that state
 * (the source with those later splits turned to R), the zero fills, and the
 * least from there (the zero-filled dims are then kept partials). Partials
 * other than sum and avg cannot sit next to the new P(sum): reduced first. */
static bf_result bf_solve_zero_fill(const lt_mesh *m, int nd, const int64_t *shape, size_t esize,
                                    int is_float, const lt_placement *sp0,
                                    const lt_placement *dp0) {
    lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
    lt_placement g[LT_MESH_MAX_DIMS], x[LT_MESH_MAX_DIMS];
    LT_CHECK(lt_placements_check(m, nd, sp0, m->ndim, sp));
    LT_CHECK(lt_placements_check(m, nd, dp0, m->ndim, dp));
    int zf[LT_MESH_MAX_DIMS], nz = 0;
    for (int i = 0; i < m->ndim; i++) {
        zf[i] = m->shape[i] > 1 && sp[i].kind == LT_PL_SHARD && dp[i].kind == LT_PL_PARTIAL &&
                dp[i].op == LT_REDOP_SUM;
        nz += zf[i];
    }
    memcpy(g, sp, sizeof g);
    for (int j = 0; j < m->ndim; j++) {
        if (g[j].kind == LT_PL_PARTIAL && g[j].op != LT_REDOP_SUM && g[j].op != LT_REDOP_AVG) {
            g[j] = lt_replicate();   /* a Partial that cannot mix with sum is reduced first */
            continue;
        }
        if (zf[j] || m->shape[j] == 1 || (g[j].kind != LT_PL_SHARD && g[j].kind != LT_PL_STRIDED))
            continue;
        for (int i = 0; i < j; i++)
            if (zf[i] && sp[i].dim == g[j].dim) g[j] = lt_replicate();
    }
    memcpy(x, g, sizeof x);
    for (int i = 0; i < m->ndim; i++)
        if (zf[i]) x[i] = lt_partial(LT_REDOP_SUM);
    bf_result a = bf_solve(m, nd, shape, esize, is_float, sp, g);
    bf_result b = bf_solve(m, nd, shape, esize, is_float, x, dp);
    bf_result r = a;
    if (a.bytes < 0 || b.bytes < 0) {
        r.bytes = -1;
        return r;
    }
    r.bytes = a.bytes + b.bytes;
    r.cost = a.cost + b.cost;
    r.steps = a.steps + nz + b.steps;
    snprintf(r.path, sizeof r.path, "zero fill between two parts");
    return r;
}

#endif
