/* localtensor/plan/plan_moves.c — the moves of the min-cost planner.
 *
 * From a state A (what every rank holds), a move is one collective along
 * one mesh dim with its arguments (--moves all: also over the product
 * group of adjacent mesh dims, lt__mv.span), or local work. This file computes what
 * every rank holds after it (the blocks G, following the semantics of
 * collectives_sim/collectives.h and the shapes it produces), what it costs
 * (collectives_sim/trace.h's bytes model), and which state of the search
 * holds exactly G (lt__mc_canon): none, or one canonical key. The move set
 * is listed in localtensor/plan.h; the choices below that skip a
 * move are the ones that provably reach nothing new or nothing cheaper.
 *
 * Return codes of the int functions: 1 yes/found, 0 no, -1 out of memory,
 * -2 over the work budget.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "collectives_sim/cost.h"
#include "localtensor/plan/plan_impl.h"

static const lt_coll mv_colls[LT__MV_COUNT] = {
#define LT__XX(e, coll) coll,
    LT__MV_MAP(LT__XX)
#undef LT__XX
};

lt_coll lt__mv_coll(lt__mv_kind k) {
    return (unsigned)k < LT__MV_COUNT ? mv_colls[k] : LT_COLL_BARRIER;
}

static int pop_of(const lt_placement *p) { return p->kind == LT_PL_PARTIAL ? (int)p->op : -1; }

/* Rank r's block in layout lay. */
static const lt__list *blk(const lt__mc *c, const lt__list *lay, int r) {
    return lay + c->g.off[c->g.M] + (size_t)r * (size_t)c->g.ndim;
}

#define spend lt__mc_spend

/* Runs past the first in lists l[0..n): walking lists of many runs costs
 * more than the list count the budget charges, so these are charged too
 * (layouts of nested strided splits of large dims can have thousands). */
double lt__mc_runs(const lt__list *l, size_t n) {
    /* summed as integers (below 2^53 runs in all: the same double) */
    int64_t k = 0;
    for (size_t x = 0; x < n; x++) k += l[x].nr > 1 ? l[x].nr - 1 : 0;
    return (double)k;
}

uint64_t lt__mc_key(const lt__mc *c, const lt_placement *pl) {
    uint64_t k = 0;
    for (int i = 0; i < c->g.M; i++) {
        int x = 0;
        while (x < c->nc[i] && !lt_placement_equal(&c->cand[i][x], &pl[i])) x++;
        LT_ASSERT(x < c->nc[i]);
        k |= (uint64_t)x << (8 * i);
    }
    return k;
}

void lt__mc_placements(const lt__mc *c, uint64_t key, lt_placement *pl) {
    for (int i = 0; i < c->g.M; i++) pl[i] = c->cand[i][(key >> (8 * i)) & 0xff];
}

/* ---- matching a result to a state -------------------------------------------------------- */

/* c->U, c->Uempty from c->G, c->Gempty: per level, the union of the
 * non-empty blocks below each tuple. For any state this is its own prefix
 * layout (a tuple's block is the union of its ranks' blocks), so a state
 * matching G must match U at every level. */
int lt__mc_unions(lt__mc *c) {
    c->ugr = NULL;   /* c->U is no longer the shared record's */
    return lt__mc_unions_in(c, &c->tar);
}

int lt__mc_unions_in(lt__mc *c, lt__arena *a) {
    const lt__geo *g = &c->g;
    int M = g->M, nd = g->ndim;
    memcpy(c->U + g->off[M], c->G, sizeof(lt__list) * (size_t)g->W * (size_t)nd);
    memcpy(c->Uempty + g->toff[M], c->Gempty, (size_t)g->W);
    c->uempty_any[M] = 0;
    for (int r = 0; r < g->W; r++) c->uempty_any[M] |= c->Gempty[r];
    for (int j = M - 1; j >= 1; j--) {   /* level 0 (the whole tensor) is never compared */
        int m = g->mesh->shape[j];
        /* merging m lists of runs costs m per run */
        if (spend(c, (double)g->T[j + 1] * (nd ? nd : 1) +
                         (double)m *
                             lt__mc_runs(c->U + g->off[j + 1], (size_t)g->T[j + 1] * (size_t)nd)))
            return -2;
        for (int t = 0; t < g->T[j]; t++) {
            const lt__list *ch = c->U + g->off[j + 1] + (size_t)t * (size_t)m * (size_t)nd;
            const unsigned char *ce = c->Uempty + g->toff[j + 1] + (size_t)t * (size_t)m;
            lt__list *out = c->U + g->off[j] + (size_t)t * (size_t)nd;
            int any = 0;
            for (int q = 0; q < m; q++) any |= !ce[q];
            c->Uempty[g->toff[j] + (size_t)t] = (unsigned char)!any;
            if (t == 0) c->uempty_any[j] = 0;
            c->uempty_any[j] |= (unsigned char)!any;
            for (int d = 0; d < nd; d++) {
                int k = 0;
                for (int q = 0; q < m; q++)
                    if (!ce[q]) c->ptrs[k++] = &ch[(size_t)q * (size_t)nd + (size_t)d];
                if (!any) out[d] = (lt__list){NULL, 0, 0};
                else if (lt__list_union(a, c->ptrs, k, &out[d]) < 0) return -1;
            }
        }
    }
    return 1;
}

/* Does block ch (tuple ti of level j of a candidate) match the unions? At
 * the ranks (j == M) an empty block must also have G's shape. */
static int match(const lt__mc *c, int j, size_t ti, const lt__list *ch) {
    int nd = c->g.ndim;
    const lt__list *u = c->U + c->g.off[j] + ti * (size_t)nd;
    int uempty = c->Uempty[c->g.toff[j] + ti], n = !lt__block_empty(ch, nd);
    if (uempty) {
        if (n) return 0;
        if (j == c->g.M)
            for (int d = 0; d < nd; d++)
                if (ch[d].len != u[d].len) return 0;
        return 1;
    }
    if (!n) return 0;
    for (int d = 0; d < nd; d++)
        if (!lt__list_eq(&ch[d], &u[d])) return 0;
    return 1;
}

/* Can placement p on mesh dim j give the children U wants? Compares the
 * lengths along the dim p splits (the cheap part of match) before any list
 * is built. */
static int sizes_fit(const lt__mc *c, int j, const lt_placement *p) {
    const lt__geo *g = &c->g;
    int m = g->mesh->shape[j], nd = g->ndim;
    if (m == 1 || !lt_placement_is_shard_like(p)) return 1;
    int d = p->dim;
    int64_t size, off;
    for (int t = 0; t < g->T[j]; t++) {
        const lt__list *par = c->B + g->off[j] + (size_t)t * (size_t)nd;
        for (int q = 0; q < m; q++) {
            size_t ti = (size_t)t * (size_t)m + (size_t)q;
            if (p->kind == LT_PL_STRIDED) size = lt__strided_len(par[d].len, p->split_factor, m, q);
            else if (lt__split_piece_quiet(&p->rule, par[d].len, m, q, &size, &off)) return 0;
            if (c->Uempty[g->toff[j + 1] + ti]) continue;
            if (c->U[g->off[j + 1] + ti * (size_t)nd + (size_t)d].len != size) return 0;
        }
    }
    return 1;
}

double lt__mc_dec_cost(const lt__mc *c, int j) {
    const lt__geo *g = &c->g;
    return g->T[j + 1] + lt__mc_runs(c->B + g->off[j], (size_t)g->T[j] * (size_t)g->ndim);
}

int lt__mc_dec_try(lt__mc *c, int j, int b) {
    const lt__geo *g = &c->g;
    int m = g->mesh->shape[j], nd = g->ndim;
    const lt_placement *p = &c->cand[j][b];
    if (!sizes_fit(c, j, p)) return 0;
    int ok = 1;
    for (int t = 0; t < g->T[j] && ok; t++) {
        const lt__list *par = c->B + g->off[j] + (size_t)t * (size_t)nd;
        for (int q = 0; q < m && ok; q++) {
            size_t ti = (size_t)t * (size_t)m + (size_t)q;
            lt__list *ch = c->B + g->off[j + 1] + ti * (size_t)nd;
            int r = lt__apply(&c->tar, nd, p, m, q, par, ch);
            if (r < 0) return -1;
            ok = r && match(c, j + 1, ti, ch);
        }
    }
    return ok;
}

/* Depth-first over the candidates of mesh dims j.., in candidate order;
 * c->B holds the prefix layout. */
static int dec(lt__mc *c, int j, uint64_t key, uint64_t *out) {
    const lt__geo *g = &c->g;
    if (j == g->M) {
        *out = key;
        return 1;
    }
    double cost = lt__mc_dec_cost(c, j);
    for (int b = 0; b < c->nc[j]; b++) {
        if (pop_of(&c->cand[j][b]) != c->gpop[j]) continue;
        if (spend(c, cost)) return -2;
        lt__amark mk = lt__arena_mark(&c->tar);
        int ok = lt__mc_dec_try(c, j, b);
        if (ok < 0) return -1;
        if (ok) {
            int r = dec(c, j + 1, key | (uint64_t)b << (8 * j), out);
            if (r != 0) return r;
            /* every block of level j + 1 holds something, so every
             * candidate that matches here leaves the same blocks, and the
             * levels below fail for it too (an empty block's shape may
             * differ between candidates: then the others are tried) */
            if (!c->uempty_any[j + 1]) {
                lt__arena_reset(&c->tar, mk);
                return 0;
            }
        }
        lt__arena_reset(&c->tar, mk);
    }
    return 0;
}

/* Partial ops may only mix as {sum, avg} (a valid placement list). */
int lt__mc_pops_ok(const lt__mc *c) {
    int first = -1;
    for (int i = 0; i < c->g.M; i++) {
        int o = c->gpop[i];
        if (o < 0) continue;
        if (first < 0) first = o;
        else if (o != first && !((o == LT_REDOP_SUM || o == LT_REDOP_AVG) &&
                                 (first == LT_REDOP_SUM || first == LT_REDOP_AVG)))
            return 0;
    }
    return 1;
}

/* Two independent hashes of what c->G holds (an empty block: its shape
 * only, as match compares) and of c->gpop. */
void lt__mc_g_hash(const lt__mc *c, uint64_t *h1, uint64_t *h2) {
    uint64_t a = 1469598103934665603ULL, b = 0x9e3779b97f4a7c15ULL;
#define LT__MIX(v)                                           \
    do {                                                     \
        uint64_t v_ = (uint64_t)(v);                         \
        a = (a ^ v_) * 1099511628211ULL;                     \
        b = (b + v_ + (b << 6) + (b >> 2)) * 0xff51afd7ed558ccdULL; \
    } while (0)
    for (int i = 0; i < c->g.M; i++) LT__MIX(c->gpop[i] + 3);
    for (int r = 0; r < c->g.W; r++) {
        LT__MIX(c->Gempty[r]);
        const lt__list *x = c->G + (size_t)r * (size_t)c->g.ndim;
        for (int d = 0; d < c->g.ndim; d++) {
            LT__MIX(x[d].len);
            for (int64_t k = 0; !c->Gempty[r] && k < x[d].nr; k++) {
                LT__MIX(x[d].r[k].lo);
                LT__MIX(x[d].r[k].n);
            }
        }
    }
#undef LT__MIX
    *h1 = a;
    *h2 = b ^ (b >> 29);
}

int lt__mc_find_hashed(lt__mc *c, uint64_t h1, uint64_t h2, lt__msg *gr, uint64_t *key) {
    if (c->nmemo * 2 >= c->capmemo) {   /* grow (and rehash) at half full */
        size_t ncap = c->capmemo ? c->capmemo * 2 : 64;   /* most searches meet few results */
        lt__memo *nm = lt__calloc(ncap, sizeof(lt__memo));
        if (!nm) return -1;
        if (!c->memogen) c->memogen = 1;   /* zeroed entries are not in use */
        for (size_t q = 0; q < c->capmemo; q++) {
            if (c->memo[q].gen != c->memogen) continue;
            size_t x = c->memo[q].h1 & (ncap - 1);
            while (nm[x].gen == c->memogen) x = (x + 1) & (ncap - 1);
            nm[x] = c->memo[q];
        }
        lt__free(c->memo);
        c->memo = nm;
        c->capmemo = ncap;
    }
    size_t x = h1 & (c->capmemo - 1);
    for (; c->memo[x].gen == c->memogen; x = (x + 1) & (c->capmemo - 1))
        if (c->memo[x].h1 == h1 && c->memo[x].h2 == h2) {
            *key = c->memo[x].key;
            return c->memo[x].found;
        }
    /* a miss: the shared search space answers when it can (the same
     * answer and the same work as below), else unions and dec */
    int r = -3;
    if (c->ms && !gr) gr = lt__ms_g_get(c, h1, h2);
    if (gr) r = lt__ms_dec(c, gr, key);
    if (r == -3) {
        if (gr) lt__ms_g_load(c, gr);
        r = lt__mc_unions(c);
        if (r > 0) r = dec(c, 0, 0, key);
    }
    if (r < 0) return r;
    c->memo[x] = (lt__memo){h1, h2, r ? *key : 0, c->memogen, (unsigned char)r};
    c->nmemo++;
    return r;
}

/* The state holding c->G (with c->Gempty, c->gpop). Results are kept by
 * hash: many moves from many states leave the same blocks. */
static int find_state(lt__mc *c, uint64_t *key) {
    if (!lt__mc_pops_ok(c)) return 0;
    if (spend(c, lt__mc_runs(c->G, (size_t)c->g.W * (size_t)c->g.ndim))) return -2;
    uint64_t h1, h2;
    lt__mc_g_hash(c, &h1, &h2);
    return lt__mc_find_hashed(c, h1, h2, NULL, key);
}

int lt__mc_canon(lt__mc *c, const lt__list *lay, const signed char *pop, uint64_t *key) {
    const lt__geo *g = &c->g;
    for (int r = 0; r < g->W; r++) {
        const lt__list *b = blk(c, lay, r);
        memcpy(c->G + (size_t)r * (size_t)g->ndim, b, sizeof(lt__list) * (size_t)g->ndim);
        c->Gempty[r] = lt__block_empty(b, g->ndim);
    }
    memcpy(c->gpop, pop, sizeof c->gpop);
    return find_state(c, key);
}

/* ---- what a collective leaves ----------------------------------------------------------- */

/* The block received as the concatenation along f of blocks q[0..k) (ndim
 * lists each) whose result has shape sh: into out, *empty. 0 when the pieces
 * do not form one block (their indices differ off f, or repeat along f). */
static int combine(lt__mc *c, const lt__list *const *q, int k, int f, const int64_t *sh,
                   lt__list *out, unsigned char *empty, int *unsorted) {
    int nd = c->g.ndim;
    int64_t n = lt__numel_sat(nd, sh);
    *empty = n == 0;
    if (n == 0) {
        for (int d = 0; d < nd; d++) out[d] = (lt__list){NULL, 0, sh[d]};
        return 1;
    }
    int first = -1, cnt = 0;
    for (int x = 0; x < k; x++) {
        if (lt__block_empty(q[x], nd)) continue;
        if (first < 0) first = x;
        for (int d = 0; d < nd; d++)
            if (d != f && !lt__list_eq(&q[x][d], &q[first][d])) return 0;
        c->ptrs[cnt++] = &q[x][f];
    }
    if (first < 0) return 0;
    for (int d = 0; d < nd; d++) out[d] = q[first][d];
    for (int x = 1; unsorted && x < cnt; x++) {
        const lt__list *a = c->ptrs[x - 1], *b = c->ptrs[x];
        if (b->r[0].lo < a->r[a->nr - 1].lo + a->r[a->nr - 1].n) *unsorted = 1;
    }
    int r = lt__list_concat(&c->tar, c->ptrs, cnt, &out[f]);
    if (r <= 0) return r;
    return out[f].len == sh[f];
}

/* Elements of block b (nd lists) with dim e cut to size: 0 when any dim is
 * empty, checked for overflow (a huge dim beside an empty one). Saturates at
 * INT64_MAX, which no valid move reaches. */
static int64_t numel_cut(const lt__list *b, int nd, int e, int64_t size) {
    int64_t n = size;
    for (int d = 0; d < nd; d++)
        if (d != e && b[d].len == 0) return 0;
    for (int d = 0; d < nd && n; d++)
        if (d != e && lt__mul_i64(n, b[d].len, &n)) return INT64_MAX;
    return n;
}

/* Exactly the same block (lists and shape). */
static int block_same(const lt__list *x, const lt__list *y, int nd) {
    for (int d = 0; d < nd; d++)
        if (!lt__list_eq(&x[d], &y[d])) return 0;
    return 1;
}

/* Sets G[r] to block x (ndim lists) with list e replaced by positions
 * pos..pos+cnt-1 of x[e] (e < 0: x itself). */
static int set_piece(lt__mc *c, int r, const lt__list *x, int e, int64_t pos, int64_t cnt) {
    int nd = c->g.ndim;
    lt__list *o = c->G + (size_t)r * (size_t)nd;
    memcpy(o, x, sizeof(lt__list) * (size_t)nd);
    if (e >= 0 && lt__list_sub(&c->tar, &x[e], pos, cnt, &o[e]) < 0) return -1;
    c->Gempty[r] = lt__block_empty(o, nd);
    return 1;
}

/* A placeholder (rooted collectives' non-root ranks): shape sh with dim 0
 * emptied, holding nothing. */
static void set_placeholder(lt__mc *c, int r, const int64_t *sh) {
    int nd = c->g.ndim;
    for (int d = 0; d < nd; d++)
        c->G[(size_t)r * (size_t)nd + (size_t)d] = (lt__list){NULL, 0, d ? sh[d] : 0};
    c->Gempty[r] = 1;
}

/* G, c->recv (per rank) and *bytes (their sum) of collective, partition or
 * reduction mv from layout a with Partial ops apop. 1 valid, 0 not a move,
 * -1 out of memory. *reorder (may be NULL) is set when a rank receives its
 * indices out of order. */
/* One group of a move in lt__mc_result: its members' blocks are
 * c->mptrs[n] (member q is rank f0 + q * stride). Each g_* below computes
 * the members' results into c->G and the bytes each receives into c->recv;
 * it returns 1, 0 when the move is not valid for these blocks, or what the
 * list operations return (-1: out of memory). */
typedef struct mgroup {
    lt__mc *c;
    const lt__mv *mv;
    const lt_split_rule *rule;   /* the move's split rule, or NULL */
    int nd, n, stride, f0;
    uint64_t es;                 /* element size */
    int *reorder;                /* may be NULL */
} mgroup;

/* Partition, all_reduce, reduce: every member keeps its block. */
static int g_reduce(const mgroup *G) {
    lt__mc *c = G->c;
    int nd = G->nd, n = G->n, k = G->mv->kind;
    const lt__list *m0 = c->mptrs[0];
    int64_t sh[LT_MAX_DIMS];
    for (int q = 0; q < n; q++) {
        int r = G->f0 + q * G->stride;
        const lt__list *x = c->mptrs[q];
        int64_t ne = lt__block_numel(x, nd);
        if (k == LT__MV_PARTITION && !block_same(x, m0, nd)) return 0;
        set_piece(c, r, x, -1, 0, 0);
        if (k != LT__MV_PARTITION) {
            lt__member mb = {(uint64_t)ne * G->es, (uint64_t)ne * G->es, 0};
            c->recv[r] = lt__coll_recv(lt__mv_coll(k), n, q, G->mv->root, mb, G->es);
        }
        if (k == LT__MV_REDUCE && q != G->mv->root) {
            for (int d = 0; d < nd; d++) sh[d] = x[d].len;
            set_placeholder(c, r, sh);
        }
    }
    return 1;
}

/* All_gather and gather along e: the members' blocks concatenated. */
static int g_gather(const mgroup *G) {
    lt__mc *c = G->c;
    int nd = G->nd, n = G->n, e = G->mv->dim;
    const lt__list *m0 = c->mptrs[0];
    int64_t sh[LT_MAX_DIMS], total = 0;
    for (int d = 0; d < nd; d++) sh[d] = d == e ? 0 : m0[d].len;
    for (int q = 0; q < n; q++) {
        const lt__list *x = c->mptrs[q];
        for (int d = 0; d < nd; d++)
            if (d != e && x[d].len != m0[d].len) return 0;
        if (lt__add_i64(sh[e], x[e].len, &sh[e])) return 0; /* past int64: no such move */
        total += lt__block_numel(x, nd);
    }
    unsigned char emp;
    int r = combine(c, c->mptrs, n, e, sh, c->Q, &emp, G->reorder);
    if (r <= 0) return r;
    for (int q = 0; q < n; q++) {
        int rk = G->f0 + q * G->stride;
        if (G->mv->kind == LT__MV_GATHER && q != G->mv->root) {
            set_placeholder(c, rk, sh);
            continue;
        }
        memcpy(c->G + (size_t)rk * (size_t)nd, c->Q, sizeof(lt__list) * (size_t)nd);
        c->Gempty[rk] = emp;
        uint64_t own = (uint64_t)lt__block_numel(c->mptrs[q], nd) * G->es;
        lt__member mb = {own, (uint64_t)total * G->es, own};
        c->recv[rk] = lt__coll_recv(lt__mv_coll(G->mv->kind), n, q, G->mv->root, mb, G->es);
    }
    return 1;
}

/* All_to_all split along e and joined along f != e, when the members
 * holding anything agree off f (h: the first of them): every member has
 * the same length along e, so piece j is the same cut for all, and the
 * concatenation along f the same for every j: member j holds h with e cut
 * and f joined. */
static int g_a2a_joined(const mgroup *G, const lt__list *h) {
    lt__mc *c = G->c;
    int nd = G->nd, n = G->n, e = G->mv->dim, f = G->mv->cdim, kq = 0;
    const lt__list *m0 = c->mptrs[0];
    int64_t size, off, flen = 0;
    for (int q = 0; q < n; q++)
        if (!lt__block_empty(c->mptrs[q], nd)) c->ptrs[kq++] = &c->mptrs[q][f];
    for (int x = 1; G->reorder && x < kq; x++) {
        const lt__list *pa = c->ptrs[x - 1], *pb = c->ptrs[x];
        if (pb->r[0].lo < pa->r[pa->nr - 1].lo + pa->r[pa->nr - 1].n) *G->reorder = 1;
    }
    lt__list joined;
    int r = lt__list_concat(&c->tar, c->ptrs, kq, &joined);
    if (r <= 0) return r;
    for (int q = 0; q < n; q++) flen += c->mptrs[q][f].len;
    for (int j = 0; j < n; j++) {
        int rj = G->f0 + j * G->stride;
        lt__split_piece_quiet(G->rule, m0[e].len, n, j, &size, &off);
        if (set_piece(c, rj, h, e, off, size) < 0) return -1;
        lt__list *o = c->G + (size_t)rj * (size_t)nd;
        o[f] = joined;
        if (joined.len != flen) o[f] = (lt__list){NULL, 0, flen};
        c->Gempty[rj] = lt__block_empty(o, nd);
        if (c->Gempty[rj])   /* nothing held: the shape only */
            for (int d = 0; d < nd; d++)
                o[d] = (lt__list){NULL, 0, d == e ? size : d == f ? flen : m0[d].len};
        lt__member mb = {0, 0, 0};   /* piece j of every member; its own kept */
        for (int q = 0; q < n; q++) {
            uint64_t b = (uint64_t)numel_cut(c->mptrs[q], nd, e, size) * G->es;
            mb.out += b;
            if (q == j) mb.kept = b;
        }
        c->recv[rj] = lt__coll_recv(LT_COLL_ALL_TO_ALL, n, j, -1, mb, G->es);
    }
    return 1;
}

/* All_to_all, member j's result in general: each member's piece j along
 * e, concatenated along f (collectives_sim's result shape: member 0's,
 * with the piece along e and the concatenation along f). */
static int g_a2a_piece(const mgroup *G, int j) {
    lt__mc *c = G->c;
    int nd = G->nd, n = G->n, e = G->mv->dim, f = G->mv->cdim, rj = G->f0 + j * G->stride;
    const lt__list *m0 = c->mptrs[0];
    int64_t sh[LT_MAX_DIMS], size, off;
    lt__member mb = {0, 0, 0};   /* piece j of every member; its own kept */
    for (int d = 0; d < nd; d++) sh[d] = m0[d].len;
    sh[f] = 0;
    for (int q = 0; q < n; q++) {
        const lt__list *x = c->mptrs[q];
        lt__list *pc = c->Q + (size_t)q * (size_t)nd;
        lt__split_piece_quiet(G->rule, x[e].len, n, j, &size, &off);
        memcpy(pc, x, sizeof(lt__list) * (size_t)nd);
        if (lt__list_sub(&c->tar, &x[e], off, size, &pc[e]) < 0) return -1;
        c->qptrs[q] = pc;
        /* a concatenated size past int64 (empty pieces of huge dims):
         * collectives_sim refuses it, so no such move */
        if (lt__add_i64(sh[f], f == e ? size : x[f].len, &sh[f])) return 0;
        if (f != e && q == 0) sh[e] = size;
        uint64_t b = (uint64_t)numel_cut(x, nd, e, size) * G->es;
        mb.out += b;
        if (q == j) mb.kept = b;
    }
    c->recv[rj] = lt__coll_recv(LT_COLL_ALL_TO_ALL, n, j, -1, mb, G->es);
    return combine(c, c->qptrs, n, f, sh, c->G + (size_t)rj * (size_t)nd, &c->Gempty[rj],
                   G->reorder);
}

/* All_to_all: every piece keeps its member's indices off e and f, so the
 * members holding anything must agree there (and on e too when f != e,
 * their pieces being concatenated along f). */
static int g_a2a(const mgroup *G) {
    lt__mc *c = G->c;
    int nd = G->nd, n = G->n, e = G->mv->dim, f = G->mv->cdim;
    const lt__list *m0 = c->mptrs[0], *h = NULL;
    int64_t size, off;
    for (int q = 0; q < n; q++) {
        const lt__list *x = c->mptrs[q];
        for (int d = 0; d < nd; d++)
            if (d != f && x[d].len != m0[d].len) return 0;
        if (lt__split_piece_quiet(G->rule, x[e].len, n, 0, &size, &off)) return 0;
        if (lt__block_empty(x, nd)) continue;
        if (!h) h = x;
        for (int d = 0; d < nd; d++)
            if (d != f && !lt__list_eq(&x[d], &h[d])) return 0;
    }
    if (f != e && h) return g_a2a_joined(G, h);
    for (int j = 0; j < n; j++) {
        int r = g_a2a_piece(G, j);
        if (r <= 0) return r;
    }
    return 1;
}

/* Scatter from the root, and reduce_scatter: member j gets piece j along e
 * (of the root's block; of its own block, reduced). */
static int g_scatter(const mgroup *G) {
    lt__mc *c = G->c;
    int nd = G->nd, n = G->n, e = G->mv->dim, root = G->mv->root,
        rs = G->mv->kind == LT__MV_REDUCE_SCATTER;
    const lt__list *x0 = rs ? c->mptrs[0] : c->mptrs[root];
    int64_t size, off;
    if (lt__split_piece_quiet(G->rule, x0[e].len, n, 0, &size, &off)) return 0;
    for (int j = 0; j < n; j++) {
        int rj = G->f0 + j * G->stride;
        lt__split_piece_quiet(G->rule, x0[e].len, n, j, &size, &off);
        if (set_piece(c, rj, rs ? c->mptrs[j] : x0, e, off, size) < 0) return -1;
        uint64_t ne = (uint64_t)lt__block_numel(c->G + (size_t)rj * (size_t)nd, nd) * G->es;
        lt__member mb = {0, ne, !rs && j == root ? ne : 0};
        c->recv[rj] = lt__coll_recv(lt__mv_coll(G->mv->kind), n, j, root, mb, G->es);
    }
    return 1;
}

/* Permute: member q's block moves to member perm[q]. */
static int g_permute(const mgroup *G) {
    lt__mc *c = G->c;
    const int *perm = c->perms + G->mv->perm;
    for (int q = 0; q < G->n; q++) {
        int rk = G->f0 + perm[q] * G->stride;
        set_piece(c, rk, c->mptrs[q], -1, 0, 0);
        uint64_t b = (uint64_t)lt__block_numel(c->mptrs[q], G->nd) * G->es;
        lt__member mb = {0, b, perm[q] == q ? b : 0};   /* member perm[q] receives q's block */
        c->recv[rk] = lt__coll_recv(LT_COLL_PERMUTE, G->n, perm[q], -1, mb, G->es);
    }
    return 1;
}

static int g_group(const mgroup *G) {
    switch (G->mv->kind) {
    case LT__MV_PARTITION:
    case LT__MV_ALL_REDUCE:
    case LT__MV_REDUCE: return g_reduce(G);
    case LT__MV_ALL_GATHER:
    case LT__MV_GATHER: return g_gather(G);
    case LT__MV_ALL_TO_ALL: return g_a2a(G);
    case LT__MV_SCATTER:
    case LT__MV_REDUCE_SCATTER: return g_scatter(G);
    case LT__MV_PERMUTE: return g_permute(G);
    default: return 0;
    }
}

/* The Partial mesh dims after move mv (into c->gpop) from apop: 0 when the
 * move cannot apply to them (a partition needs no Partial on its dim; a
 * reduction the same Partial; any other move none, since moving a
 * Partial's terms between its members loses the sum). */
static int partial_after(lt__mc *c, const signed char *apop, const lt__mv *mv) {
    int i = mv->mesh_dim, k = mv->kind, end = i + (mv->span > 1 ? mv->span : 1);
    int reducing = k == LT__MV_ALL_REDUCE || k == LT__MV_REDUCE_SCATTER || k == LT__MV_REDUCE;
    memcpy(c->gpop, apop, sizeof c->gpop);
    if (k == LT__MV_PARTITION) {
        if (apop[i] >= 0) return 0;
        c->gpop[i] = mv->op;
        return 1;
    }
    for (int j = i; j < end; j++) {   /* a flattened group: every mesh dim of it */
        if (reducing) {
            if (apop[j] < 0 || apop[j] != mv->op) return 0;
            c->gpop[j] = -1;
        } else if (apop[j] >= 0) {
            return 0;
        }
    }
    return 1;
}

int lt__mc_result(lt__mc *c, const lt__list *a, const signed char *apop, const lt__mv *mv,
                  uint64_t *bytes, int *reorder) {
    const lt__geo *g = &c->g;
    int nd = g->ndim, i = mv->mesh_dim, k = mv->kind, sp = mv->span > 1 ? mv->span : 1;
    /* the groups of mesh dims i .. i + sp - 1: members in row-major order */
    int n = lt__group_size(g->mesh, i, sp), stride = g->W / g->T[i + sp];
    if (!partial_after(c, apop, mv)) return 0;
    if (nd == 0 && k != LT__MV_PARTITION && k != LT__MV_ALL_REDUCE && k != LT__MV_PERMUTE) return 0;
    memset(c->recv, 0, sizeof(uint64_t) * (size_t)g->W);
    if (spend(c, (double)g->W * (k == LT__MV_ALL_TO_ALL ? n : 1) +
                     lt__mc_runs(a + g->off[g->M], (size_t)g->W * (size_t)nd)))
        return -2;
    mgroup G = {c,        mv,     mv->rule >= 0 ? &c->rules[(int)mv->rule] : NULL, nd, n, stride, 0,
                c->esize, reorder};
    for (int base = 0; base < g->W; base += stride * n)
        for (G.f0 = base; G.f0 < base + stride; G.f0++) {
            for (int q = 0; q < n; q++) c->mptrs[q] = blk(c, a, G.f0 + q * stride);
            int r = g_group(&G);
            if (r <= 0) return r;
        }
    uint64_t tot = 0;
    for (int r = 0; r < g->W; r++) tot += c->recv[r];
    *bytes = tot;
    return 1;
}

/* ---- trying moves ------------------------------------------------------------------------- */

static lt_status over(int r) {
    return r == -1 ? lt__err(LT_NOMEM, "out of memory while planning") : LT_OVERFLOW;
}

/* The most bytes one rank receives in the move just computed (c->recv). */
static uint64_t most_recv(const lt__mc *c) {
    uint64_t m = 0;
    for (int r = 0; r < c->g.W; r++)
        if (c->recv[r] > m) m = c->recv[r];
    return m;
}

/* Move mv from node `from`: its result, the state holding it, the edge. */
static lt_status try_move(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                          uint64_t akey, const lt__mv *mv) {
    if (c->mstate) {   /* the shared search space (plan_memo.c): the same edge, the same work */
        int done;
        lt_status mst = lt__ms_try_move(c, from, a, apop, akey, mv, &done);
        if (done) return mst;
    }
    lt__amark mk = lt__arena_mark(&c->tar);
    uint64_t bytes = 0, key = 0;
    int r = lt__mc_result(c, a, apop, mv, &bytes, NULL);
    uint64_t most = r == 1 ? most_recv(c) : 0;
    if (r == 1) r = find_state(c, &key);
    lt_status st = r < 0 ? over(r) : LT_OK;
    if (r == 1 && key != akey) st = lt__mc_relax(c, from, key, bytes, most, mv, c->G);
    lt__arena_reset(&c->tar, mk);
    return st;
}

/* The distinct lengths of dim e over the ranks of layout a, into lens
 * (room: LT__MAXLENS); their count, or -1 when there are more. */
#define LT__MAXLENS 32
static int distinct_lens(const lt__mc *c, const lt__list *a, int e, int64_t *lens) {
    int k = 0;
    for (int r = 0; r < c->g.W; r++) {
        int64_t len = blk(c, a, r)[e].len, q = 0;
        while (q < k && lens[q] != len) q++;
        if (q < k) continue;
        if (k == LT__MAXLENS) return -1;
        lens[k++] = len;
    }
    return k;
}

/* Do rules r1 and r2 cut every length lens[0..k) into the same n pieces? */
static int same_split(const lt__mc *c, const int64_t *lens, int k, int n, int r1, int r2) {
    int64_t s1, o1, s2, o2;
    for (int q = 0; q < k; q++)
        for (int j = 0; j < n; j++) {
            int v1 = lt__split_piece_quiet(&c->rules[r1], lens[q], n, j, &s1, &o1),
                v2 = lt__split_piece_quiet(&c->rules[r2], lens[q], n, j, &s2, &o2);
            if (v1 != v2 || (!v1 && s1 != s2)) return 0;
            if (v1) break;
        }
    return 1;
}

/* Rule ri is usable on a group of n and cuts the lengths lens[0..k) (k < 0:
 * unknown) differently from every earlier usable rule. */
static int rule_new(const lt__mc *c, const int64_t *lens, int k, int n, int ri) {
    const lt_split_rule *r = &c->rules[ri];
    if (r->kind == LT_SPLIT_EXPLICIT && r->nsizes != n) return 0;
    for (int q = 0; q < ri && k >= 0; q++) {
        const lt_split_rule *o = &c->rules[q];
        if (o->kind == LT_SPLIT_EXPLICIT && o->nsizes != n) continue;
        if (same_split(c, lens, k, n, q, ri)) return 0;
    }
    return 1;
}

/* Roots worth a gather or reduce on mesh dim i: every other member ends
 * empty, so the next state's placement on i puts a whole block on the root
 * wherever there is one: a chunk-like split of at most one element (root 0)
 * or an explicit split with one non-zero size. (When no block holds
 * anything, local work reaches every state at no cost anyway.) */
static int root_ok(const lt__mc *c, int i, int root) {
    if (root == 0) return 1;
    for (int b = 0; b < c->nc[i]; b++) {
        const lt_placement *p = &c->cand[i][b];
        if (p->kind != LT_PL_SHARD || p->rule.kind != LT_SPLIT_EXPLICIT || p->rule.nsizes <= root)
            continue;
        int nz = 0;
        for (int j = 0; j < p->rule.nsizes; j++) nz += p->rule.sizes[j] != 0;
        if (nz == 1 && p->rule.sizes[root]) return 1;
    }
    return 0;
}

/* Scatter from the one member that holds anything (the same position in
 * every group): the others' data would be lost otherwise, and when the
 * members hold the same block local slicing does it for free. -1: none. */
static int scatter_root(const lt__mc *c, const lt__list *a, int i) {
    int n = c->g.mesh->shape[i], stride = c->g.W / c->g.T[i + 1], root = -1;
    for (int base = 0; base < c->g.W; base += stride * n)
        for (int f0 = base; f0 < base + stride; f0++)
            for (int q = 0; q < n; q++) {
                if (lt__block_empty(blk(c, a, f0 + q * stride), c->g.ndim)) continue;
                if (root >= 0 && root != q) return -1;
                root = q;
            }
    return root;
}

/* Blocks hold the same indices (both empty, or equal lists). */
static int block_like(const lt__list *x, const lt__list *y, int nd) {
    int64_t a = lt__block_numel(x, nd), b = lt__block_numel(y, nd);
    if (!a || !b) return !a && !b;
    return block_same(x, y, nd);
}

static lt_status perms_room(lt__mc *c, size_t n) {
    if (c->nperms + n <= c->capperms) return LT_OK;
    size_t cap = (c->nperms + n) * 2;
    int *p = lt__realloc(c->perms, sizeof(int) * cap);
    if (!p) return lt__err(LT_NOMEM, "out of memory while planning");
    c->perms = p;
    c->capperms = cap;
    return LT_OK;
}

/* sigma for a permute along mesh dim i to candidate p: member sigma[q]'s
 * blocks at level i + 1 are what p gives member q. 1 a permute (not the
 * identity), 0 none, -1 out of memory. No work is charged. */
static int perm_sigma(lt__mc *c, const lt__list *a, int i, const lt_placement *p, int *sigma) {
    const lt__geo *g = &c->g;
    int n = g->mesh->shape[i], nd = g->ndim;
    int *used = c->iscr + n;
    lt__amark mk = lt__arena_mark(&c->tar);
    int ok = 1;
    for (int t = 0; t < g->T[i] && ok; t++)
        for (int q = 0; q < n && ok; q++) {
            size_t ti = (size_t)t * (size_t)n + (size_t)q;
            int r = lt__apply(&c->tar, nd, p, n, q, a + g->off[i] + (size_t)t * (size_t)nd,
                              c->L + g->off[i + 1] + ti * (size_t)nd);
            if (r < 0) return -1;
            ok = r;
        }
    /* sigma[q]: the member whose blocks member q gets (exact matches first) */
    for (int q = 0; q < n; q++) used[q] = 0;
    int ident = 1;
    for (int q = 0; q < n && ok; q++) {
        sigma[q] = -1;
        for (int pass = 0; pass < 2 && sigma[q] < 0; pass++)
            for (int s = 0; s < n && sigma[q] < 0; s++) {
                if (used[s]) continue;
                int all = 1;
                for (int t = 0; t < g->T[i] && all; t++) {
                    const lt__list *x =
                        c->L + g->off[i + 1] + ((size_t)t * (size_t)n + (size_t)q) * (size_t)nd;
                    const lt__list *y =
                        a + g->off[i + 1] + ((size_t)t * (size_t)n + (size_t)s) * (size_t)nd;
                    all = pass ? block_like(x, y, nd) : block_same(x, y, nd);
                }
                if (all) sigma[q] = s;
            }
        if (sigma[q] < 0) ok = 0;
        else {
            used[sigma[q]] = 1;
            ident &= sigma[q] == q;
        }
    }
    lt__arena_reset(&c->tar, mk);
    return ok && !ident;
}

/* Permutes along mesh dim i: a state reached by one is found from its
 * placement on i, whose blocks at level i + 1 must be a's, permuted. */
static lt_status try_permutes(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                              uint64_t akey, int i) {
    const lt__geo *g = &c->g;
    int n = g->mesh->shape[i], nd = g->ndim;
    int *sigma = c->iscr;
    double runs = lt__mc_runs(a + g->off[i], (size_t)g->T[i] * (size_t)nd);
    /* every candidate's permute known to the shared space: the loop's
     * charges at once (whole numbers: the same sum; past the budget on the
     * same searches), then only the permutes, in candidate order */
    uint64_t bm = 0;
    int sets = c->mstate && lt__ms_permute_set(c, i, &bm);
    if (sets) {
        int k = 0;
        for (int b = 0; b < c->nc[i]; b++) k += pop_of(&c->cand[i][b]) < 0;
        if (k && spend(c, (g->T[i + 1] + runs) * k)) return LT_OVERFLOW;
    }
    for (int b = 0; sets ? bm != 0 : b < c->nc[i]; b++) {
        if (sets) {
            b = __builtin_ctzll(bm);
            bm &= bm - 1;
        }
        const lt_placement *p = &c->cand[i][b];
        if (!sets && pop_of(p) >= 0) continue;
        if (!sets && spend(c, g->T[i + 1] + runs)) return LT_OVERFLOW;
        /* sigma: known to the shared space (1: a permute, 0: none), or computed */
        int known = c->mstate ? lt__ms_sigma_get(c, i, b, sigma) : -3;
        if (known == 0) continue;
        if (known < 0) {
            int r = perm_sigma(c, a, i, p, sigma);
            if (r < 0) return over(r);
            if (c->mstate) lt__ms_sigma_put(c, i, b, r, sigma);
            if (!r) continue;
        }
        /* member sigma[q]'s shard goes to member q */
        LT_TRY(perms_room(c, (size_t)n));
        for (int q = 0; q < n; q++) c->perms[c->nperms + (size_t)sigma[q]] = q;
        lt__mv mv = {LT__MV_PERMUTE, (signed char)i, 0, 0, -1, -1, 0, (int)c->nperms, 0};
        c->nperms += (size_t)n;
        int done = 0;
        if (c->mstate) LT_TRY(lt__ms_permute(c, from, a, apop, akey, b, &mv, &done));
        if (!done) LT_TRY(try_move(c, from, a, apop, akey, &mv));
    }
    return LT_OK;
}

/* Hash of the blocks of level j + 1 of c->L, or of `at` laid out the same. */
static uint64_t level_hash(const lt__mc *c, const lt__list *at, int j) {
    const lt__geo *g = &c->g;
    uint64_t h = 1469598103934665603ULL;
    size_t n = (size_t)g->T[j + 1] * (size_t)g->ndim;
    for (size_t x = 0; x < n; x++) {
        const lt__list *l = at + x;
        h = (h ^ (uint64_t)l->len) * 1099511628211ULL;
        for (int64_t k = 0; k < l->nr; k++)
            h = (h ^ (uint64_t)l->r[k].lo ^ ((uint64_t)l->r[k].n << 32)) * 1099511628211ULL;
    }
    return h;
}

/* Candidate b of mesh dim j applied to the level-j blocks of c->L, into
 * `at` (level j + 1 laid out). 1; 0 when a split is rejected; -1 out of
 * memory. */
static int apply_level(lt__mc *c, int j, int b, lt__list *at) {
    const lt__geo *g = &c->g;
    int m = g->mesh->shape[j], nd = g->ndim;
    for (int t = 0; t < g->T[j]; t++)
        for (int q = 0; q < m; q++) {
            size_t ti = (size_t)t * (size_t)m + (size_t)q;
            int r = lt__apply(&c->tar, nd, &c->cand[j][b], m, q,
                              c->L + g->off[j] + (size_t)t * (size_t)nd, at + ti * (size_t)nd);
            if (r <= 0) return r;
        }
    return 1;
}

int lt__mc_local_try(lt__mc *c, const lt__list *a, int j, int b, int *empty) {
    const lt__geo *g = &c->g;
    int m = g->mesh->shape[j], nd = g->ndim;
    const lt_placement *p = &c->cand[j][b];
    lt__list *ch0 = c->L + g->off[j + 1];
    int ok = 1;
    *empty = 0;
    for (int t = 0; t < g->T[j] && ok; t++)
        for (int q = 0; q < m && ok; q++) {
            size_t ti = (size_t)t * (size_t)m + (size_t)q;
            lt__list *ch = ch0 + ti * (size_t)nd;
            const lt__list *pa = a + g->off[j + 1] + ti * (size_t)nd;
            int r = lt__apply(&c->tar, nd, p, m, q, c->L + g->off[j] + (size_t)t * (size_t)nd, ch);
            if (r < 0) return -1;
            ok = r;
            if (!ok) continue;
            if (lt__block_empty(ch, nd)) {
                *empty = 1;
                continue;
            }
            if (lt__block_empty(pa, nd)) ok = 0;
            for (int d = 0; d < nd && ok; d++) ok = lt__list_subset(&ch[d], &pa[d]);
        }
    return ok;
}

/* Local picks: every candidate list whose blocks each rank holds within its
 * own (or empty); c->L holds the prefix layout, `key` its candidates. A
 * prefix block can only be picked from the same prefix block of a, which
 * prunes the walk. A candidate whose blocks an earlier candidate of the
 * same level gives exactly is skipped (the same lists follow). When no
 * block of the list is empty, the first candidate giving each level's
 * blocks is what lt__mc_canon picks, so the walked key is the state's key;
 * otherwise (the shapes of empty blocks may be spelled several ways)
 * lt__mc_canon decides. */
static lt_status local_walk(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                            uint64_t akey, int j, uint64_t key, int empties) {
    const lt__geo *g = &c->g;
    int nd = g->ndim;
    if (j == g->M) {
        int r = 1;
        if (empties) {
            lt__amark mk = lt__arena_mark(&c->tar);
            r = lt__mc_canon(c, c->L, apop, &key);
            lt__arena_reset(&c->tar, mk);
            if (r < 0) return over(r);
        }
        lt__mv mv = {LT__MV_LOCAL, 0, 0, 0, -1, -1, 0, -1, 0};
        if (r == 1 && key != akey)
            return lt__mc_relax(c, from, key, 0, 0, &mv, c->L + g->off[g->M]);
        return LT_OK;
    }
    uint64_t *hs = c->lwhash[j];
    unsigned char *hv = c->lwvalid[j];
    lt__list *ch0 = c->L + g->off[j + 1];
    double runs = lt__mc_runs(c->L + g->off[j], (size_t)g->T[j] * (size_t)nd);
    for (int b = 0; b < c->nc[j]; b++) {
        const lt_placement *p = &c->cand[j][b];
        hv[b] = 0;
        if (pop_of(p) != apop[j]) continue;
        if (spend(c, g->T[j + 1] + runs)) return LT_OVERFLOW;
        lt__amark mk = lt__arena_mark(&c->tar);
        int dup = 0, empty = 0;
        int ok = lt__mc_local_try(c, a, j, b, &empty);
        if (ok < 0) return over(ok);
        if (ok) {   /* the same blocks as an earlier candidate's (which passed too)? */
            hs[b] = level_hash(c, ch0, j);
            hv[b] = 1;
            for (int e = 0; e < b && !dup; e++) {
                if (!hv[e] || hs[e] != hs[b]) continue;
                lt__list *other = c->B + g->off[j + 1];   /* free here */
                int re = apply_level(c, j, e, other);
                if (re < 0) return over(re);
                dup = 1;
                for (size_t x = 0; x < (size_t)g->T[j + 1] * (size_t)nd && dup; x++)
                    dup = lt__list_eq(&other[x], &ch0[x]);
            }
        }
        if (ok && !dup)
            LT_TRY(local_walk(c, from, a, apop, akey, j + 1, key | (uint64_t)b << (8 * j),
                              empties || empty));
        lt__arena_reset(&c->tar, mk);
    }
    return LT_OK;
}

static void pops_of(const lt__mc *c, uint64_t key, signed char *pop) {
    lt_placement pl[LT_MESH_MAX_DIMS];
    lt__mc_placements(c, key, pl);
    for (int i = 0; i < LT_MESH_MAX_DIMS; i++)
        pop[i] = (signed char)(i < c->g.M ? pop_of(&pl[i]) : -1);
}

/* Rooted move *mv (reduce, gather) from node `from` with every root of
 * its mesh dim that root_ok allows, in root order; mv->root is 0 again
 * after. */
static lt_status try_roots(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                           uint64_t akey, lt__mv *mv) {
    int n = c->g.mesh->shape[mv->mesh_dim];
    for (mv->root = 0; mv->root < n; mv->root++)
        if (root_ok(c, mv->mesh_dim, mv->root)) LT_TRY(try_move(c, from, a, apop, akey, mv));
    mv->root = 0;
    return LT_OK;
}

/* The collectives and reductions along mesh dim i from node `from` (a
 * state's moves but its permutes and partition), in a fixed order that
 * depends on the state alone (plan_memo.c records it). */
static lt_status dim_moves(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                           uint64_t akey, int i) {
    int n = c->g.mesh->shape[i], nd = c->g.ndim;
    lt__mv mv = {0, (signed char)i, 0, 0, -1, -1, 0, -1, 0};
    if (apop[i] >= 0) {
        mv.op = apop[i];
        mv.kind = LT__MV_ALL_REDUCE;
        LT_TRY(try_move(c, from, a, apop, akey, &mv));
        mv.kind = LT__MV_REDUCE;
        LT_TRY(try_roots(c, from, a, apop, akey, &mv));
        mv.kind = LT__MV_REDUCE_SCATTER;
        for (int e = 0; e < nd; e++) {
            int64_t lens[LT__MAXLENS];
            int k = distinct_lens(c, a, e, lens);
            for (int ri = 0; ri < c->nrules; ri++) {
                if (!rule_new(c, lens, k, n, ri)) continue;
                mv.dim = (signed char)e;
                mv.rule = (signed char)ri;
                LT_TRY(try_move(c, from, a, apop, akey, &mv));
            }
        }
        return LT_OK;
    }
    int sroot = scatter_root(c, a, i);
    for (int e = 0; e < nd; e++) {
        mv.dim = (signed char)e;
        mv.rule = -1;
        mv.kind = LT__MV_ALL_GATHER;
        LT_TRY(try_move(c, from, a, apop, akey, &mv));
        mv.kind = LT__MV_GATHER;
        LT_TRY(try_roots(c, from, a, apop, akey, &mv));
        int64_t lens[LT__MAXLENS];
        int k = distinct_lens(c, a, e, lens);
        for (int ri = 0; ri < c->nrules; ri++) {
            if (!rule_new(c, lens, k, n, ri)) continue;
            mv.rule = (signed char)ri;
            mv.kind = LT__MV_ALL_TO_ALL;
            for (int f = 0; f < nd; f++) {
                mv.cdim = (signed char)f;
                LT_TRY(try_move(c, from, a, apop, akey, &mv));
            }
            mv.cdim = 0;
            if (sroot >= 0) {
                mv.kind = LT__MV_SCATTER;
                mv.root = sroot;
                LT_TRY(try_move(c, from, a, apop, akey, &mv));
                mv.root = 0;
            }
        }
    }
    return LT_OK;
}

/* ---- --moves all: flattened groups, permutes over the whole mesh ---------------------------- */

/* try_move of a move over a flattened group: the shared search space
 * (plan_memo.c) records moves along one mesh dim only, so it is left out. */
static lt_status try_flat(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                          uint64_t akey, const lt__mv *mv) {
    lt__mst *ms = c->mstate;
    c->mstate = NULL;
    lt_status st = try_move(c, from, a, apop, akey, mv);
    c->mstate = ms;
    return st;
}

/* The collectives over the product group of mesh dims i .. i + sp - 1
 * (sp >= 2; each of size > 1, none frozen): all_reduce and reduce_scatter
 * when every one of them is Partial with the same op, all_gather and
 * all_to_all when none is; every tensor dim and split rule. No rooted
 * collective, no permute (the whole mesh's is whole_walk's). */
static lt_status flat_moves(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                            uint64_t akey, int i, int sp) {
    int n = lt__group_size(c->g.mesh, i, sp), nd = c->g.ndim, anyp = 0, red = apop[i] >= 0;
    for (int j = i; j < i + sp; j++) {
        anyp |= apop[j] >= 0;
        red &= apop[j] == apop[i];
    }
    if (anyp && !red) return LT_OK;
    lt__mv mv = {0, (signed char)i, 0, 0, -1, -1, 0, -1, (signed char)sp};
    if (red) {
        mv.op = apop[i];
        mv.kind = LT__MV_ALL_REDUCE;
        LT_TRY(try_flat(c, from, a, apop, akey, &mv));
    }
    for (int e = 0; e < nd; e++) {
        int64_t lens[LT__MAXLENS];
        int k = distinct_lens(c, a, e, lens);
        mv.dim = (signed char)e;
        mv.rule = -1;
        mv.cdim = 0;
        mv.kind = LT__MV_ALL_GATHER;
        if (!red) LT_TRY(try_flat(c, from, a, apop, akey, &mv));
        for (int ri = 0; ri < c->nrules; ri++) {
            if (!rule_new(c, lens, k, n, ri)) continue;
            mv.rule = (signed char)ri;
            mv.kind = red ? LT__MV_REDUCE_SCATTER : LT__MV_ALL_TO_ALL;
            for (int f = 0; f < (red ? 1 : nd); f++) {
                mv.cdim = (signed char)(red ? 0 : f);
                LT_TRY(try_flat(c, from, a, apop, akey, &mv));
            }
        }
    }
    return LT_OK;
}

/* 1 when the ranks' non-empty blocks of a (level M) that lie within block
 * ch hold, summed, at least ch's elements, and number at least `need`: a
 * prefix block of a permute's target is the union of its ranks' blocks,
 * which are a's (need: its ranks, when no block of a is empty). */
static int covered(const lt__mc *c, const lt__list *a, const lt__list *ch, int need) {
    int nd = c->g.ndim, k = 0;
    int64_t want = lt__block_numel(ch, nd), have = 0;
    for (int r = 0; r < c->g.W && (have < want || k < need); r++) {
        const lt__list *x = blk(c, a, r);
        int64_t n = lt__block_numel(x, nd);
        int in = n != 0;
        for (int d = 0; d < nd && in; d++) in = lt__list_subset(&x[d], &ch[d]);
        if (in) have += n, k++;
    }
    return have >= want && k >= need;
}

/* The permute over the whole mesh that leaves every rank r c->L's block r
 * from a's blocks (into perm[W]: a's rank s's block goes to rank
 * perm[s]), ranks whose block stays keeping theirs: 1; 0 when c->L's
 * blocks are not a's permuted, or are a's. */
static int whole_sigma(lt__mc *c, const lt__list *a, int *perm) {
    int W = c->g.W, nd = c->g.ndim, moved = 0;
    int *sigma = c->iscr, *used = c->iscr + W;
    for (int r = 0; r < W; r++) {
        int same = block_same(blk(c, c->L, r), blk(c, a, r), nd);
        sigma[r] = same ? r : -1;
        used[r] = same;
    }
    for (int r = 0; r < W; r++) {
        for (int s = 0; s < W && sigma[r] < 0; s++)
            if (!used[s] && block_same(blk(c, c->L, r), blk(c, a, s), nd)) sigma[r] = s;
        if (sigma[r] < 0) return 0;
        used[sigma[r]] = 1;
        moved |= sigma[r] != r;
    }
    for (int r = 0; r < W; r++) perm[sigma[r]] = r;
    return moved;
}

/* 1 when candidate b of mesh dim j gives the level j + 1 blocks `at` (hash
 * h) that an earlier candidate e < b of hs/hv gave (the same lists follow),
 * -1 out of memory. c->B is scratch here. */
static int level_dup(lt__mc *c, int j, int b, const lt__list *at, uint64_t h,
                     const uint64_t *hs, const unsigned char *hv) {
    const lt__geo *g = &c->g;
    lt__list *other = c->B + g->off[j + 1];
    for (int e = 0; e < b; e++) {
        if (!hv[e] || hs[e] != h) continue;
        int r = apply_level(c, j, e, other), dup = 1;
        if (r < 0) return -1;
        for (size_t x = 0; x < (size_t)g->T[j + 1] * (size_t)g->ndim && dup; x++)
            dup = lt__list_eq(&other[x], &at[x]);
        if (dup) return 1;
    }
    return 0;
}

/* Permutes over the whole mesh (a state without Partial dims): depth-first
 * over the candidates of mesh dims j.. (c->L holds the prefix layout), a
 * prefix block kept when a's blocks cover it (covered; full: no block of a
 * is empty, so every rank below it holds one of them), a candidate
 * skipped when an earlier one gives the same blocks, a full list taken
 * when its ranks' blocks are a's permuted (whole_sigma). */
static lt_status whole_walk(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                            uint64_t akey, int j, int full) {
    const lt__geo *g = &c->g;
    int nd = g->ndim;
    if (j == g->M) {
        LT_TRY(perms_room(c, (size_t)g->W));
        if (!whole_sigma(c, a, c->perms + c->nperms)) return LT_OK;
        lt__mv mv = {LT__MV_PERMUTE, 0, 0, 0, -1, -1, 0, (int)c->nperms, (signed char)g->M};
        c->nperms += (size_t)g->W;
        return try_flat(c, from, a, apop, akey, &mv);
    }
    double runs = lt__mc_runs(c->L + g->off[j], (size_t)g->T[j] * (size_t)nd);
    double probe = j + 1 < g->M ? (double)g->W * (nd ? nd : 1) : 0;
    lt__list *at = c->L + g->off[j + 1];
    uint64_t hs[LT__MAXC];
    unsigned char hv[LT__MAXC] = {0};
    for (int b = 0; b < c->nc[j]; b++) {
        if (pop_of(&c->cand[j][b]) >= 0) continue;
        if (spend(c, g->T[j + 1] * (1.0 + probe) + runs)) return LT_OVERFLOW;
        lt__amark mk = lt__arena_mark(&c->tar);
        int ok = apply_level(c, j, b, at);
        for (int t = 0; ok > 0 && probe > 0 && t < g->T[j + 1]; t++)
            ok = covered(c, a, at + (size_t)t * (size_t)nd, full ? g->W / g->T[j + 1] : 0);
        if (ok > 0) {
            hs[b] = level_hash(c, at, j);
            hv[b] = 1;
            int dup = level_dup(c, j, b, at, hs[b], hs, hv);
            ok = dup < 0 ? -1 : !dup;
        }
        if (ok < 0) return over(ok);
        lt_status st = ok ? whole_walk(c, from, a, apop, akey, j + 1, full) : LT_OK;
        lt__arena_reset(&c->tar, mk);
        LT_TRY(st);
    }
    return LT_OK;
}

/* What --moves all adds (localtensor/plan.h): the collectives over every
 * run of two or more adjacent mesh dims (each of size > 1, none frozen),
 * and, on a mesh of two or more dims of size > 1, from a state without
 * Partial dims, the permutes over the whole mesh. */
static lt_status all_moves(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                           uint64_t akey) {
    const lt__geo *g = &c->g;
    int big = 0, anyp = 0;
    for (int i = 0; i < g->M; i++) {
        big += g->mesh->shape[i] > 1;
        anyp |= apop[i] >= 0;
        for (int sp = 2; i + sp <= g->M; sp++) {
            int j = i + sp - 1;
            if (g->mesh->shape[i] == 1 || c->frozen[i] || g->mesh->shape[j] == 1 || c->frozen[j])
                break;
            LT_TRY(flat_moves(c, from, a, apop, akey, i, sp));
        }
    }
    if (big < 2 || anyp) return LT_OK;
    int full = 1;   /* no rank's block of a is empty */
    for (int r = 0; r < g->W && full; r++) full = !lt__block_empty(blk(c, a, r), g->ndim);
    return whole_walk(c, from, a, apop, akey, 0, full);
}

lt_status lt__mc_expand(lt__mc *c, int from) {
    const lt__geo *g = &c->g;
    const lt__list *a = c->nodes[from].lay;
    uint64_t akey = c->nodes[from].key;
    signed char apop[LT_MESH_MAX_DIMS];
    pops_of(c, akey, apop);
    for (int i = 0; i < g->M; i++) {
        int n = g->mesh->shape[i];
        if (n == 1 || c->frozen[i]) continue;
        /* replayed from the shared space when it knows them, else tried
         * here (and recorded) */
        int done = 0;
        if (c->mstate) LT_TRY(lt__ms_script(c, from, akey, i, &done));
        if (!done) {
            lt_status st = dim_moves(c, from, a, apop, akey, i);
            if (c->mstate) lt__ms_script_end(c, i, st == LT_OK);
            LT_TRY(st);
        }
        if (apop[i] >= 0) continue;
        lt__mv mv = {0, (signed char)i, 0, 0, -1, -1, 0, -1, 0};
        LT_TRY(try_permutes(c, from, a, apop, akey, i));
        const lt_placement *t = &c->dst[i];
        if (t->kind == LT_PL_PARTIAL && c->src[i].kind != LT_PL_PARTIAL &&
            t->op != LT_REDOP_PRODUCT && (t->op != LT_REDOP_SUM || c->is_float)) {
            mv.kind = LT__MV_PARTITION;
            mv.op = (signed char)t->op;
            LT_TRY(try_move(c, from, a, apop, akey, &mv));
        }
    }
    if (c->moves == LT_MOVES_ALL) LT_TRY(all_moves(c, from, a, apop, akey));
    if (c->mstate) {   /* the shared search space (plan_memo.c): the same edges, the same work */
        int done;
        lt_status mst = lt__ms_local_walk(c, from, a, apop, akey, &done);
        if (done) return mst;
    }
    return local_walk(c, from, a, apop, akey, 0, 0, 0);
}

int64_t lt__mc_move_bytes(lt__mc *c, int from, const lt__mv *mv, int *reorder) {
    memset(c->recv, 0, sizeof(uint64_t) * (size_t)c->g.W);
    if (mv->kind == LT__MV_LOCAL) return 0;
    signed char apop[LT_MESH_MAX_DIMS];
    pops_of(c, c->nodes[from].key, apop);
    lt__amark mk = lt__arena_mark(&c->tar);
    uint64_t bytes = 0;
    int r = lt__mc_result(c, c->nodes[from].lay, apop, mv, &bytes, reorder);
    lt__arena_reset(&c->tar, mk);
    return r == 1 ? (int64_t)bytes : -1;
}
