/* localtensor/plan/plan_space.c — the search space of the min-cost planner: the
 * candidate placements of every mesh dim, whose lists spell the states, and
 * the split rules of the collectives that split (localtensor/plan/plan_impl.h).
 *
 * A state is a layout; the candidates only have to spell every layout a
 * cheapest plan passes through. Besides the source's and the destination's
 * placements, R and the Shards, that takes StridedShards: gathering or
 * picking along nested splits interleaves pieces (one all_gather along dp
 * turns [S(0), S(0)] into [R, SS(0,2)]), and a gather to root 0 leaves
 * every block on member 0, which SS(d, shape[d]) spells. test/test_planner.c
 * checks the result against a brute force over every layout of every
 * placement list (any split factor) on the 2x2 and 2x2x2 sweeps.
 *
 * More candidates cost time in every expansion, so a candidate that can
 * only spell layouts an earlier candidate spells is dropped: a Shard rule
 * or a StridedShard that, at every length its tensor dim can have at that
 * mesh dim, is either rejected or cuts exactly like an earlier one (on 2x2
 * meshes `balanced` is `chunk`, for example).
 */
#include <limits.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/cache_impl.h"
#include "localtensor/plan/plan_impl.h"
#include "localtensor/spec_impl.h"

static void cand_add(lt__mc *c, int i, const lt_placement *p) {
    for (int k = 0; k < c->nc[i]; k++)
        if (lt_placement_equal(&c->cand[i][k], p)) return;
    if (c->nc[i] < LT__MAXC) c->cand[i][c->nc[i]++] = *p;
}

/* The split factors of the StridedShard candidates of tensor dim d, into
 * k[] (room: LT__MAXC), increasing; their count. A StridedShard layout
 * comes from gathering or picking along nested splits: SS(d, f * p) where p
 * is the product of the sizes of any set of mesh dims (what one all_gather
 * or pick along them interleaves) and f is 1 or the factor of a
 * StridedShard of d in the source or the destination. Every factor of at
 * least shape[d] puts each index in a piece of its own, so member 0 of
 * every group keeps its whole block (what a gather to root 0 leaves): one
 * candidate, SS(d, shape[d]). SS(d, 1) is S(d). With `every`, a dim of at
 * most LT__SS_EVERY elements also gets every factor below its length (a
 * route may pass through SS(d, 3) on a power-of-two mesh: 7 elements on
 * 2x2x2 under --moves dtensor); over every factor the search covers the
 * brute force's space. */
static int strided_factors(const lt__mc *c, int d, int every, int *k) {
    int64_t n = c->g.shape[d];
    int nk = 0, M = c->g.M;
    if (n < 2 || n > INT_MAX) return 0;
    int64_t base[2 * LT_MESH_MAX_DIMS + 1];
    int nb = 0;
    base[nb++] = 1;
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < M; i++) {
            const lt_placement *p = e ? &c->dst[i] : &c->src[i];
            if (p->kind == LT_PL_STRIDED && p->dim == d) base[nb++] = p->split_factor;
        }
    k[nk++] = (int)n;
    if (every && n <= LT__SS_EVERY)
        for (int f = 2; f < n; f++) k[nk++] = f;
    for (int b = 0; b < nb; b++)
        for (unsigned set = 0; set < (1u << M); set++) {
            int64_t f = base[b];
            for (int i = 0; i < M && f < n; i++)
                if (set >> i & 1) f *= c->g.mesh->shape[i];
            if (f < 2) continue;
            if (f > n) f = n;   /* the same picks as n */
            int dup = 0;
            for (int q = 0; q < nk && !dup; q++) dup = k[q] == f;
            if (!dup && nk < LT__MAXC) k[nk++] = (int)f;
        }
    for (int q = 1; q < nk; q++)   /* increasing: the smallest factor spells a layout first */
        for (int r = q; r > 0 && k[r - 1] > k[r]; r--) {
            int t = k[r];
            k[r] = k[r - 1];
            k[r - 1] = t;
        }
    return nk;
}

/* Per mesh dim, in this order: the source's placement; unless frozen, the
 * destination's, R, S(d) for every tensor dim d, S(d, rule) for every d and
 * every explicit size list of a Shard in the source or destination of any
 * mesh dim of this one's size (a list may move to another mesh dim),
 * S(d, balanced) and S(d, last) for every d, and SS(d, k) for every d and
 * every factor of strided_factors. Size-1 mesh dims are R. */
static void build_candidates(lt__mc *c) {
    int nshort = 0; /* the factors `every` adds: they must leave room for the rest */
    for (int d = 0; d < c->g.ndim; d++)
        if (c->g.shape[d] <= LT__SS_EVERY && c->g.shape[d] > 2) nshort += (int)c->g.shape[d] - 2;
    /* only under dtensor, where no gather or scatter gives those pieces another way: there a
     * route may need SS(d, 3) on a power-of-two mesh; under the other move sets the brute
     * force found none on 80,000 pairs (test_planner.c), and every factor costs cold
     * searches a quarter more */
    int every = c->moves == LT_MOVES_DTENSOR && nshort <= LT__MAXC / 2;
    for (int i = 0; i < c->g.M; i++) {
        lt_placement r = lt_replicate();
        c->nc[i] = 0;
        cand_add(c, i, &c->src[i]);
        if (c->frozen[i]) continue;
        cand_add(c, i, &c->dst[i]);
        cand_add(c, i, &r);
        for (int d = 0; d < c->g.ndim; d++) {
            lt_placement s = lt_shard(d);
            cand_add(c, i, &s);
        }
        for (int j = 0; j < 2 * c->g.M; j++) { /* every explicit list of this mesh dim's size */
            const lt_placement *end = j < c->g.M ? &c->src[j] : &c->dst[j - c->g.M];
            if (end->kind != LT_PL_SHARD || end->rule.kind != LT_SPLIT_EXPLICIT ||
                end->rule.nsizes != c->g.mesh->shape[i])
                continue;
            for (int d = 0; d < c->g.ndim; d++) {
                lt_placement s = lt_shard_rule(d, end->rule);
                cand_add(c, i, &s);
            }
        }
        lt_split_rule rule = lt_split_chunk();
        const lt_split_kind kinds[2] = {LT_SPLIT_BALANCED, LT_SPLIT_LAST};
        for (int q = 0; q < 2; q++)
            for (int d = 0; d < c->g.ndim; d++) {
                rule.kind = kinds[q];
                lt_placement s = lt_shard_rule(d, rule);
                cand_add(c, i, &s);
            }
        for (int d = 0; d < c->g.ndim; d++) {
            int k[LT__MAXC];
            int nk = strided_factors(c, d, every, k);
            for (int q = 0; q < nk; q++) {
                lt_placement s = lt_strided(d, k[q]);
                cand_add(c, i, &s);
            }
        }
    }
}

/* ---- dropping candidates that spell nothing new ------------------------------------- */

#define LT__MAXLENS 48

/* The lengths a tensor dim can have at one mesh dim's level; `unknown`
 * when there are too many to track (then nothing is dropped there). */
typedef struct lenset {
    int n, unknown;
    int64_t v[LT__MAXLENS];
} lenset;

static void lens_add(lenset *s, int64_t v) {
    if (s->unknown) return;
    for (int q = 0; q < s->n; q++)
        if (s->v[q] == v) return;
    if (s->n == LT__MAXLENS) s->unknown = 1;
    else s->v[s->n++] = v;
}

/* Length member q of m keeps when p splits n (p splits its own dim); -1
 * when p rejects the split. */
static int64_t piece_len(const lt_placement *p, int64_t n, int m, int q) {
    int64_t size, off;
    if (p->kind == LT_PL_STRIDED) return lt__strided_len(n, p->split_factor, m, q);
    return lt__split_piece_quiet(&p->rule, n, m, q, &size, &off) ? -1 : size;
}

/* Does p cut a list of every length in s exactly as q does wherever q
 * accepts the split (p and q split the same tensor dim)? 1 yes, 0 no, -1
 * out of memory. */
static int dominates(lt__arena *a, const lt_placement *p, const lt_placement *q, int m,
                     const lenset *s) {
    lt_placement p1 = *p, q1 = *q;
    p1.dim = q1.dim = 0;
    for (int x = 0; x < s->n; x++) {
        lt__run full = {0, s->v[x]};
        lt__list par = {s->v[x] ? &full : NULL, s->v[x] ? 1 : 0, s->v[x]}, lp, lq;
        lt__amark mk = lt__arena_mark(a);
        int ok = 1;
        for (int c = 0; c < m && ok; c++) {
            int rq = lt__apply(a, 1, &q1, m, c, &par, &lq);
            if (rq < 0) return -1;
            if (rq == 0) break;   /* q rejects this length: nothing to spell */
            int rp = lt__apply(a, 1, &p1, m, c, &par, &lp);
            if (rp < 0) return -1;
            ok = rp == 1 && lt__list_eq(&lp, &lq);
        }
        lt__arena_reset(a, mk);
        if (!ok) return 0;
    }
    return 1;
}

/* Level i's pruning, from the lengths cur of that level: drops from
 * c->cand[i] what an earlier candidate dominates (*kept: bit b set when
 * candidate b of the list as it was stays), then the lengths of level
 * i + 1 into nxt. */
static lt_status prune_level(lt__mc *c, int i, const lenset *cur, lenset *nxt, uint64_t *kept) {
    const lt__geo *g = &c->g;
    int nd = g->ndim, m = g->mesh->shape[i];
    int keep = 0;
    *kept = 0;
    for (int b = 0; b < c->nc[i]; b++) {
        const lt_placement *q = &c->cand[i][b];
        int droppable = m > 1 && !lt_placement_equal(q, &c->src[i]) &&
                        !lt_placement_equal(q, &c->dst[i]) &&
                        (q->kind == LT_PL_STRIDED ||
                         (q->kind == LT_PL_SHARD &&
                          (q->rule.kind == LT_SPLIT_BALANCED || q->rule.kind == LT_SPLIT_LAST)));
        int drop = 0;
        for (int e = 0; droppable && e < keep && !drop && !cur[q->dim].unknown; e++) {
            const lt_placement *p = &c->cand[i][e];
            if (!lt_placement_is_shard_like(p) || p->dim != q->dim) continue;
            int r = dominates(&c->tar, p, q, m, &cur[q->dim]);
            if (r < 0) return lt__err(LT_NOMEM, "out of memory while planning");
            drop = r;
        }
        if (!drop) {
            c->cand[i][keep++] = *q;
            *kept |= (uint64_t)1 << b;
        }
    }
    c->nc[i] = keep;
    /* the lengths of level i + 1 */
    for (int d = 0; d < nd; d++) {
        memset(&nxt[d], 0, sizeof nxt[d]);
        nxt[d].unknown = cur[d].unknown;
        for (int x = 0; x < cur[d].n; x++)
            for (int b = 0; b < c->nc[i]; b++) {
                const lt_placement *p = &c->cand[i][b];
                if (m == 1 || !lt_placement_is_shard_like(p) || p->dim != d) {
                    lens_add(&nxt[d], cur[d].v[x]);
                    continue;
                }
                for (int q = 0; q < m; q++) {
                    int64_t len = piece_len(p, cur[d].v[x], m, q);
                    if (len >= 0) lens_add(&nxt[d], len);
                }
            }
    }
    return LT_OK;
}

/* ---- the memo of level prunings -------------------------------------------------------- */

/* A level's pruning is a pure function of what prune_level reads: the mesh
 * dim's size, the lengths of every tensor dim at that level, the level's
 * candidate list, and which of its candidates are the source's or the
 * destination's placement (never dropped). A sweep's pairs share a few
 * hundred such levels, so each is pruned once and replayed: the kept mask
 * and the next level's lengths. Shared searches only (lt__mc_space's
 * `memo`), so test/test_plan_memo.c's unshared plans are the reference
 * the memoised ones are compared with. */
typedef struct prune_rec {
    int refs; /* atomic (lt__cache_rec: one block, freed on the last release) */
    int nd;
    uint64_t kept;
    lenset nxt[];                     /* (nd) */
} prune_rec;

/* 512 levels: about 0.6 MB at most with two tensor dims (a strided 2x2x2
 * sweep prunes about 300 distinct levels per shape). */
static lt__cache prune_cache = LT__CACHE_INIT(lt__cache_rec_ref, lt__cache_rec_release, 512);

void lt__mc_space_clear(void) { lt__cache_clear(&prune_cache); }

static void prune_key(const lt__mc *c, int i, const lenset *cur, lt__cache_key *k) {
    k->n = 0;
    lt__key_put(k, (uint64_t)c->g.mesh->shape[i] | (uint64_t)c->g.ndim << 32);
    for (int d = 0; d < c->g.ndim; d++) {
        lt__key_put(k, (uint64_t)cur[d].n | (uint64_t)cur[d].unknown << 32);
        for (int x = 0; x < cur[d].n; x++) lt__key_put(k, (uint64_t)cur[d].v[x]);
    }
    lt__key_put(k, (uint64_t)c->nc[i]);
    for (int b = 0; b < c->nc[i]; b++) {
        const lt_placement *q = &c->cand[i][b];
        lt__key_placement(k, q);
        lt__key_put(k, (uint64_t)lt_placement_equal(q, &c->src[i]) |
                           (uint64_t)lt_placement_equal(q, &c->dst[i]) << 1);
    }
}

/* Drops balanced, last and StridedShard candidates (not the source's or
 * the destination's placement) that an earlier candidate of the same mesh
 * dim dominates at every length their tensor dim can have there; memo:
 * read and fill prune_cache. */
static lt_status prune(lt__mc *c, int memo) {
    const lt__geo *g = &c->g;
    int nd = g->ndim;
    lenset cur[LT_MAX_DIMS], nxt[LT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        memset(&cur[d], 0, sizeof cur[d]);
        lens_add(&cur[d], g->shape[d]);
    }
    static _Thread_local lt__cache_key k;
    for (int i = 0; i < g->M; i++) {
        uint64_t h = 0, kept;
        prune_rec *r = NULL;
        if (memo) {
            prune_key(c, i, cur, &k);
            if (lt__cache_key_fits(&k)) {
                h = lt__cache_key_hash(&k);
                r = lt__cache_get(&prune_cache, &k, h, 1);
            }
        }
        if (r) {   /* replay: the kept candidates, in order, and the next lengths */
            int keep = 0;
            for (int b = 0; b < c->nc[i]; b++)
                if (r->kept >> b & 1) c->cand[i][keep++] = c->cand[i][b];
            c->nc[i] = keep;
            memcpy(nxt, r->nxt, sizeof(lenset) * (size_t)nd);
            lt__cache_rec_release(r);
        } else {
            LT_TRY(prune_level(c, i, cur, nxt, &kept));
            if (h && (r = lt__malloc(sizeof *r +
                                     sizeof(lenset) *
                                         (size_t)nd))) { /* optional: skipped without memory */
                r->refs = 1;
                r->nd = nd;
                r->kept = kept;
                memcpy(r->nxt, nxt, sizeof(lenset) * (size_t)nd);
                lt__cache_put(&prune_cache, &k, h, r);
                lt__cache_rec_release(r);
            }
        }
        memcpy(cur, nxt, sizeof(lenset) * (size_t)nd);
    }
    return LT_OK;
}

/* ---- split rules ----------------------------------------------------------------------- */

/* Split rules of all_to_all, scatter and reduce_scatter: chunk, balanced,
 * last, and every explicit size list of a Shard of the source or the
 * destination (used on mesh dims of its length). */
static void build_rules(lt__mc *c) {
    c->nrules = 0;
    const lt_split_kind k[3] = {LT_SPLIT_CHUNK, LT_SPLIT_BALANCED, LT_SPLIT_LAST};
    for (int q = 0; q < 3; q++) {
        c->rules[c->nrules] = lt_split_chunk();
        c->rules[c->nrules++].kind = k[q];
    }
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < c->g.M; i++) {
            const lt_placement *p = e ? &c->dst[i] : &c->src[i];
            if (p->kind != LT_PL_SHARD || p->rule.kind != LT_SPLIT_EXPLICIT) continue;
            int dup = 0;
            for (int q = 0; q < c->nrules && !dup; q++)
                dup = lt_split_rule_equal(&c->rules[q], &p->rule);
            if (!dup && c->nrules < LT__MAXR) c->rules[c->nrules++] = p->rule;
        }
}

lt_status lt__mc_space(lt__mc *c, int memo) {
    build_candidates(c);
    build_rules(c);
    return prune(c, memo);
}
