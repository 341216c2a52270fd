/* localtensor/plan/plan_memo.c — the search space shared by the min-cost
 * searches of one tensor.
 *
 * Why: a sweep plans thousands of (source, destination) pairs of the same
 * tensor on the same mesh. Each pair is a search of its own (its goal, its
 * lower bound and its candidate order differ), but the states it expands
 * and what each move does to them are the same from pair to pair: a few
 * thousand distinct states serve hundreds of thousands of expansions. This
 * file keeps, per (mesh shape, tensor shape, element size):
 *   - per state (a layout and its Partial ops) and mesh dim: the script of
 *     its collectives and reductions (plan_moves.c's dim_moves, whose order
 *     depends on the state alone): what each leaves (every rank's blocks),
 *     its bytes, and the work the search charged for computing it;
 *   - per state: the tree of its local picks (local_walk) and, per mesh dim
 *     and candidate, its permute (sigma and result): plan_memo_local.c
 *     records and replays those;
 *   - per result (what every rank holds): its unions' work, the tree of
 *     dec (plan_moves.c): which candidate matches after which prefix, and
 *     per destination (a registry of them) the search's lower bound;
 *   - per placement list (its registry indices): its layout, shared
 *     read-only with the nodes of every search, and its state record.
 * Candidates are told apart by a registry of placements, so searches whose
 * candidate lists differ in order (each puts its source and destination
 * first) share the same records and walk them in their own order.
 * The record types, and the helpers both files use (the lock, record
 * allocation, tree nodes), are in plan_memo_impl.h.
 *
 * Invariant: a search that reads these records does exactly what it would
 * do without them: the same moves tried in the same order, the same states
 * found (canonical keys follow the search's own candidate order, walked
 * here), and the same work charged against the budget, at the same points
 * or (for a dec, whose checks are all of one increasing sum) with the same
 * outcome. So a plan never depends on what ran before or beside it;
 * test/test_plan_memo.c compares shared and unshared plans pair by pair.
 * Partition moves (they depend on the destination) are never recorded, and
 * searches with explicit split sizes do not share (those sizes are interned
 * lists a space must not outlive).
 *
 * Thread safety: one spin lock per space guards its tables and arenas;
 * records filled lazily (tree nodes, scripts, permutes) are published with
 * release stores and read with acquire loads. Records are never freed while a search holds the
 * space. Memory: at most MS_SPACES spaces (the generic cache empties itself when full) of at most
 * MS_MAX_BYTES each (past it a space answers what it has and records nothing new). Caching is
 * optional work: a failed allocation leaves the computation to the caller, with the same result.
 */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* sched_yield (lt__ms_lock) */
#endif
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/cache_impl.h"
#include "localtensor/plan/plan_impl.h"
#include "localtensor/plan/plan_memo_impl.h"

/* ---- the space and its memory ---------------------------------------------------------- */

static void ms_ref(void *v) { __atomic_add_fetch(&((lt__ms *)v)->refs, 1, __ATOMIC_RELAXED); }

static void ms_release(void *v) {
    lt__ms *s = v;
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL)) return;
    lt__free(s->states.s);
    lt__free(s->gs.s);
    lt__free(s->lays.s);
    while (s->chunks) {
        chunk *n = s->chunks->next;
        lt__free(s->chunks);
        s->chunks = n;
    }
    lt__arena_free(&s->runs);
    lt__free(s);
}

static lt__cache ms_cache = LT__CACHE_INIT(ms_ref, ms_release, MS_SPACES);

void lt__ms_clear(void) { lt__cache_clear(&ms_cache); }

void *lt__ms_alloc(lt__ms *s, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (s->full || n > MS_CHUNK) return NULL;
    if (!s->chunks || s->chunks->used + n > MS_CHUNK) {
        if (s->bytes + MS_CHUNK > MS_MAX_BYTES) {
            s->full = 1;
            return NULL;
        }
        chunk *c = lt__malloc(sizeof(chunk) + MS_CHUNK);
        if (!c) return NULL;
        c->next = s->chunks;
        c->used = 0;
        s->chunks = c;
        s->bytes += MS_CHUNK;
    }
    void *p = s->chunks->mem + s->chunks->used;
    s->chunks->used += n;
    memset(p, 0, n);
    return p;
}

/* Copies of lists l[0..n) with their runs, into s; NULL as lt__ms_alloc. */
static lt__list *ms_lists(lt__ms *s, const lt__list *l, size_t n) {
    lt__list *o = lt__ms_alloc(s, sizeof(lt__list) * (n ? n : 1));
    if (!o) return NULL;
    for (size_t x = 0; x < n; x++) {
        o[x] = l[x];
        if (!l[x].nr) continue;
        lt__run *r = lt__arena_room(&s->runs, (size_t)l[x].nr);
        if (!r) return NULL;
        memcpy(r, l[x].r, sizeof(lt__run) * (size_t)l[x].nr);
        lt__arena_take(&s->runs, (size_t)l[x].nr);
        s->bytes += sizeof(lt__run) * (size_t)l[x].nr;
        o[x].r = r;
    }
    return o;
}

static void *tab_find(const tab *t, uint64_t h1, uint64_t h2) {
    if (!t->cap) return NULL;
    for (size_t x = h1 & (t->cap - 1); t->s[x].v; x = (x + 1) & (t->cap - 1))
        if (t->s[x].h1 == h1 && t->s[x].h2 == h2) return t->s[x].v;
    return NULL;
}

/* Adds v (absent) under (h1, h2): 0, or -1 out of memory. */
static int tab_put(lt__ms *s, tab *t, uint64_t h1, uint64_t h2, void *v) {
    if ((t->n + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 256;
        slot *ns = lt__calloc(ncap, sizeof(slot));
        if (!ns) return -1;
        for (size_t q = 0; q < t->cap; q++) {
            if (!t->s[q].v) continue;
            size_t x = t->s[q].h1 & (ncap - 1);
            while (ns[x].v) x = (x + 1) & (ncap - 1);
            ns[x] = t->s[q];
        }
        s->bytes += (ncap - t->cap) * sizeof(slot);
        lt__free(t->s);
        t->s = ns;
        t->cap = ncap;
    }
    size_t x = h1 & (t->cap - 1);
    while (t->s[x].v) x = (x + 1) & (t->cap - 1);
    t->s[x] = (slot){h1, h2, v};
    t->n++;
    return 0;
}

/* ---- attaching a search ---------------------------------------------------------------- */

static int explicit_rule(const lt_placement *p) {
    return p->kind == LT_PL_SHARD && p->rule.kind == LT_SPLIT_EXPLICIT;
}

void lt__ms_attach(lt__mc *c) {
    const lt__geo *g = &c->g;
    c->ms = NULL;
    c->mstate = NULL;
    c->msdst = -1;
    /* explicit sizes point at interned lists a space must not outlive */
    for (int q = 0; q < c->nrules; q++)
        if (c->rules[q].kind == LT_SPLIT_EXPLICIT) return;
    for (int i = 0; i < g->M; i++)
        for (int b = 0; b < c->nc[i]; b++)
            if (explicit_rule(&c->cand[i][b])) return;
    static _Thread_local lt__cache_key k;
    k.n = 0;
    lt__key_put(&k, (uint64_t)g->M);
    for (int i = 0; i < g->M; i++) lt__key_put(&k, (uint64_t)g->mesh->shape[i]);
    lt__key_put(&k, (uint64_t)g->ndim);
    for (int d = 0; d < g->ndim; d++) lt__key_put(&k, (uint64_t)g->shape[d]);
    lt__key_put(&k, (uint64_t)c->esize);
    uint64_t h = lt__cache_key_hash(&k);
    lt__ms *s = lt__cache_get(&ms_cache, &k, h, 1);
    if (!s) {
        s = lt__calloc(1, sizeof *s);
        if (!s) return;
        s->refs = 1;
        lt__cache_put(&ms_cache, &k, h, s);
    }
    lt__ms_lock(s);
    int ok = 1;
    for (int i = 0; i < g->M && ok; i++)
        for (int b = 0; b < c->nc[i] && ok; b++) {
            int x = 0;
            while (x < s->nreg && !lt_placement_equal(&s->reg[x], &c->cand[i][b])) x++;
            if (x == s->nreg) {
                if (x == MS_REG) ok = 0;
                else s->reg[s->nreg++] = c->cand[i][b];
            }
            c->creg[i][b] = (unsigned char)x;
            c->cpop[i][b] = (signed char)lt__ms_pop_of(&c->cand[i][b]);
            if (x < MS_REG) {
                int o = c->cpop[i][b] + 1, pos = 0;
                for (int e = 0; e < b; e++) pos += c->cpop[i][e] == c->cpop[i][b];
                c->cregmask[i][o] |= (uint64_t)1 << x;
                c->rcand[i][x] = (unsigned char)b;
                c->rpos[i][x] = (unsigned char)pos;
            }
        }
    if (ok) {
        int x = 0;
        while (x < s->ndreg && !lt_placements_equal(s->dreg[x], c->dst, g->M)) x++;
        if (x == s->ndreg && x < MS_DREG)
            memcpy(s->dreg[s->ndreg++], c->dst, sizeof(lt_placement) * (size_t)g->M);
        c->msdst = x < s->ndreg ? x : -1;
    }
    lt__ms_unlock(s);
    if (!ok) {
        ms_release(s);
        return;
    }
    c->ms = s;
}

void lt__ms_detach(lt__mc *c) {
    if (!c || !c->ms) return;
    ms_release(c->ms);
    c->ms = NULL;
    c->mstate = NULL;
}

/* ---- layouts of placement lists ------------------------------------------------------- */

/* The registry indices of the list of c's key, 8 bits per mesh dim (the
 * registry has MS_REG <= 256 entries): the same for every search of the
 * space; its table hash. */
static uint64_t reg_key(const lt__mc *c, uint64_t key) {
    uint64_t rk = 0;
    for (int i = 0; i < c->g.M; i++) rk |= (uint64_t)c->creg[i][(key >> (8 * i)) & 0xff] << (8 * i);
    return rk;
}
static uint64_t reg_hash(uint64_t rk) {
    uint64_t h = (rk + 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 31);
}

static lrec *lrec_find(lt__mc *c, uint64_t rk) {
    lt__ms_lock(c->ms);
    lrec *r = tab_find(&c->ms->lays, reg_hash(rk), rk);
    lt__ms_unlock(c->ms);
    return r;
}

const lt__list *lt__ms_layout_get(lt__mc *c, uint64_t key) {
    if (!c->ms) return NULL;
    lrec *r = lrec_find(c, reg_key(c, key));
    return r ? r->lay : NULL;
}

void lt__ms_layout_put(lt__mc *c, uint64_t key, const lt__list *lay) {
    if (!c->ms) return;
    lt__ms *s = c->ms;
    uint64_t rk = reg_key(c, key), h = reg_hash(rk);
    lt__ms_lock(s);
    if (!tab_find(&s->lays, h, rk)) {
        lrec *r = lt__ms_alloc(s, sizeof *r);
        if (r && (r->lay = ms_lists(s, lay, c->g.off[c->g.M + 1])))
            (void)tab_put(s, &s->lays, h, rk, r);
    }
    lt__ms_unlock(s);
}

void lt__ms_enter(lt__mc *c, int idx) {
    c->mstate = NULL;
    if (!c->ms) return;
    const lt__geo *g = &c->g;
    const lt__node *nd = &c->nodes[idx];
    /* the state a list entered before: its layout, so its record */
    lrec *lr = lrec_find(c, reg_key(c, nd->key));
    if (lr && (c->mstate = __atomic_load_n(&lr->st, __ATOMIC_ACQUIRE))) return;
    lt_placement pl[LT_MESH_MAX_DIMS];
    lt__mc_placements(c, nd->key, pl);
    uint64_t a = 1469598103934665603ULL, b = 0x9e3779b97f4a7c15ULL;
#define MS_MIX(v)                                                       \
    do {                                                                \
        uint64_t v_ = (uint64_t)(v);                                    \
        a = (a ^ v_) * 1099511628211ULL;                                \
        b = (b + v_ + (b << 6) + (b >> 2)) * 0xff51afd7ed558ccdULL;     \
    } while (0)
    for (int i = 0; i < g->M; i++) MS_MIX(lt__ms_pop_of(&pl[i]) + 3);
    for (size_t x = 0; x < g->off[g->M + 1]; x++) {
        const lt__list *l = nd->lay + x;
        MS_MIX(l->len);
        MS_MIX(l->nr);
        for (int64_t q = 0; q < l->nr; q++) {
            MS_MIX(l->r[q].lo);
            MS_MIX(l->r[q].n);
        }
    }
#undef MS_MIX
    uint64_t h2 = b ^ (b >> 29);
    lt__ms *s = c->ms;
    lt__ms_lock(s);
    lt__mst *st = tab_find(&s->states, a, h2);
    if (!st) {
        st = lt__ms_alloc(s, sizeof *st);
        if (st) {
            st->h1 = a;
            st->h2 = h2;
            if (tab_put(s, &s->states, a, h2, st)) st = NULL;
        }
    }
    lt__ms_unlock(s);
    c->mstate = st;
    if (lr && st) __atomic_store_n(&lr->st, st, __ATOMIC_RELEASE);
}

/* ---- results and their matching ---------------------------------------------------------- */

void lt__ms_g_load(lt__mc *c, const lt__msg *gr) {
    const lt__geo *g = &c->g;
    memcpy(c->G, gr->blocks, sizeof(lt__list) * (size_t)g->W * (size_t)g->ndim);
    memcpy(c->Gempty, gr->empty, (size_t)g->W);
    memcpy(c->gpop, gr->gpop, sizeof c->gpop);
}

/* c->U (runs in c->uar, emptied first) from record gr's blocks, loaded
 * into c->G: kept while c->ugr is gr, so a record's unions are computed
 * once (here when it is made, again only after the unshared path's
 * lt__mc_unions); quiet, their charges into rec (may be NULL; *nrec of
 * them). 0, or -1 out of memory. */
static int ms_unions(lt__mc *c, const lt__msg *gr, double *rec, int *nrec) {
    quiet q = lt__ms_quiet_begin(c, rec);
    lt__ms_g_load(c, gr);
    lt__arena_reset(&c->uar, (lt__amark){NULL, 0});
    int r = lt__mc_unions_in(c, &c->uar);
    if (nrec) *nrec = c->nrec;
    lt__ms_quiet_end(c, q);
    c->ugr = r < 0 ? NULL : gr;
    return r < 0 ? -1 : 0;
}

lt__msg *lt__ms_g_make_locked(lt__mc *c, uint64_t h1, uint64_t h2) {
    lt__ms *s = c->ms;
    const lt__geo *g = &c->g;
    lt__msg *gr = tab_find(&s->gs, h1, h2);
    if (gr) return gr;
    if (!(gr = lt__ms_alloc(s, sizeof *gr))) return NULL;   /* zeroed */
    gr->h1 = h1;
    gr->h2 = h2;
    gr->pops_ok = lt__mc_pops_ok(c);
    gr->runs = lt__mc_runs(c->G, (size_t)g->W * (size_t)g->ndim);
    memcpy(gr->gpop, c->gpop, sizeof gr->gpop);
    gr->blocks = ms_lists(s, c->G, (size_t)g->W * (size_t)g->ndim);
    gr->empty = lt__ms_alloc(s, (size_t)g->W);
    if (!gr->blocks || !gr->empty) return NULL;
    memcpy(gr->empty, c->Gempty, (size_t)g->W);
    if (gr->pops_ok) {   /* the unions' charges and empty levels, for dec's replays */
        double rec[LT_MESH_MAX_DIMS + 2];
        if (ms_unions(c, gr, rec, &gr->nu) < 0) return NULL;
        memcpy(gr->uspend, rec, sizeof(double) * (size_t)gr->nu);
        memcpy(gr->uempty_any, c->uempty_any, sizeof gr->uempty_any);
    }
    if (tab_put(s, &s->gs, h1, h2, gr)) return NULL;
    return gr;
}

uint32_t *lt__ms_lb_slot(lt__mc *c, lt__msg *g) {
    if (!c->ms || c->msdst < 0) return NULL;
    uint32_t *lb = __atomic_load_n(&g->lb, __ATOMIC_ACQUIRE);
    if (!lb) {
        lt__ms_lock(c->ms);
        if (!(lb = g->lb) && (lb = lt__ms_alloc(c->ms, sizeof(uint32_t) * MS_DREG)))
            __atomic_store_n(&g->lb, lb, __ATOMIC_RELEASE);
        lt__ms_unlock(c->ms);
        if (!lb) return NULL;
    }
    return &lb[c->msdst];
}

lt__msg *lt__ms_g_get(lt__mc *c, uint64_t h1, uint64_t h2) {
    if (!c->ms) return NULL;
    lt__ms_lock(c->ms);
    lt__msg *gr = lt__ms_g_make_locked(c, h1, h2);
    lt__ms_unlock(c->ms);
    return gr;
}

tnode *lt__ms_tnode_new(lt__ms *s, double cost) {
    tnode *n = lt__ms_alloc(s, sizeof *n);
    if (!n) return NULL;
    n->cost = cost;
    memset(n->v, V_UNKNOWN, sizeof n->v);
    return n;
}

int lt__ms_apply_level(lt__mc *c, const lt__list *at, lt__list *to, int l, const lt_placement *p) {
    const lt__geo *g = &c->g;
    int m = g->mesh->shape[l], nd = g->ndim;
    for (int t = 0; t < g->T[l]; t++)
        for (int q = 0; q < m; q++) {
            size_t ti = (size_t)t * (size_t)m + (size_t)q;
            int r =
                lt__apply(&c->tar, nd, p, m, q, at + (size_t)t * (size_t)nd, to + ti * (size_t)nd);
            if (r <= 0) return r;
        }
    return 1;
}

int lt__ms_rebuild(lt__mc *c, lt__list *lay, int j, const int *prefix) {
    for (int l = 0; l < j; l++) {
        int r = lt__ms_apply_level(c, lay + c->g.off[l], lay + c->g.off[l + 1], l,
                                   &c->cand[l][prefix[l]]);
        if (r <= 0) return -1;
    }
    return 1;
}

/* Fills dec node n (level j, prefix) for the candidates of c's level j
 * from b0 on, in c's order, that it does not know yet, up to the first that
 * matches: what walk reads next (it goes on past a match only when the
 * levels below fail and may hold empty blocks, and then calls again). 0,
 * or -1 (nothing to answer with). Under the lock; quiet. */
static int dnode_fill(lt__mc *c, const lt__msg *gr, tnode *n, int j, const int *prefix, int b0) {
    const lt__geo *g = &c->g;
    quiet q = lt__ms_quiet_begin(c, NULL);
    int rc = c->ugr != gr && ms_unions(c, gr, NULL, NULL) < 0 ? -1 : 0;
    lt__amark mk = lt__arena_mark(&c->tar);
    if (!rc) rc = lt__ms_rebuild(c, c->B, j, prefix) < 0 ? -1 : 0;
    for (int b = b0, found = 0; b < c->nc[j] && !rc && !found; b++) {
        int ri = c->creg[j][b];
        if (lt__ms_pop_of(&c->cand[j][b]) != gr->gpop[j] || lt__ms_vget(n, ri) != V_UNKNOWN)
            continue;
        lt__amark m2 = lt__arena_mark(&c->tar);
        int ok = lt__mc_dec_try(c, j, b);
        if (ok < 0 || (ok && n->nkids == MS_KIDS)) {
            rc = -1;
        } else if (!ok) {
            lt__ms_vset(n, ri, 0);
        } else {
            tnode *kid = NULL;
            if (j + 1 < g->M && !(kid = lt__ms_tnode_new(c->ms, lt__mc_dec_cost(c, j + 1))))
                rc = -1;
            else {
                n->kid[n->nkids] = kid;
                lt__ms_vset(n, ri, V_OK | n->nkids++);
                found = 1;
            }
        }
        lt__arena_reset(&c->tar, m2);
    }
    lt__ms_quiet_end(c, q);
    lt__arena_reset(&c->tar, mk);
    return rc;
}

int lt__ms_dec_sets = 1;
_Static_assert(MS_REG <= 64 && LT__MAXC <= 64, "registry indices and candidates fit a 64-bit set");

/* dec's walk over the tree in c's candidate order: 1 found (*out), 0 none,
 * -3 unknown; *total and *nsp: the work it charges and how many charges. */
static int walk(lt__mc *c, lt__msg *gr, tnode *n, int j, int *prefix, uint64_t key, uint64_t *out,
                double *total, long *nsp) {
    if (j == c->g.M) {
        *out = key;
        return 1;
    }
    uint64_t want = c->cregmask[j][gr->gpop[j] + 1];
    if (lt__ms_dec_sets && !(want & ~__atomic_load_n(&n->known, __ATOMIC_ACQUIRE))) {
        /* every candidate the loop below would look at is known: it charges
         * one cost per candidate up to the one that answers (all of them
         * when none does), and recurses into the matching ones in order;
         * the charges are whole numbers, so k of them sum to cost * k */
        uint64_t ok = __atomic_load_n(&n->okm, __ATOMIC_ACQUIRE) & want;
        double cost = n->cost;
        const unsigned char *rpos = c->rpos[j];
        for (;;) {
            if (!ok) {
                int k = __builtin_popcountll(want);
                *total += cost * k;
                *nsp += k;
                return 0;
            }
            int ri = -1;
            for (uint64_t x = ok; x; x &= x - 1) {   /* the earliest in c's order */
                int q = __builtin_ctzll(x);
                if (ri < 0 || rpos[q] < rpos[ri]) ri = q;
            }
            ok &= ~((uint64_t)1 << ri);
            int b = c->rcand[j][ri], v = lt__ms_vget(n, ri);
            prefix[j] = b;
            int r = walk(c, gr, n->kid[v & 15], j + 1, prefix, key | (uint64_t)b << (8 * j), out,
                         total, nsp);
            if (r != 0 || !gr->uempty_any[j + 1]) {
                *total += cost * (rpos[ri] + 1);
                *nsp += rpos[ri] + 1;
                return r;
            } /* else the next matching candidate; this level's charges are counted when it stops */
        }
    }
    const signed char *cp = c->cpop[j];
    const unsigned char *cr = c->creg[j];
    int gp = gr->gpop[j], nc = c->nc[j];
    double cost = n->cost;
    for (int b = 0; b < nc; b++) {
        if (cp[b] != gp) continue;
        *total += cost;
        (*nsp)++;
        int ri = cr[b];
        int v = lt__ms_vget(n, ri);
        if (v == V_UNKNOWN) {
            lt__ms_lock(c->ms);
            int rc = dnode_fill(c, gr, n, j, prefix, b);
            lt__ms_unlock(c->ms);
            if (rc < 0 || (v = lt__ms_vget(n, ri)) == V_UNKNOWN) return -3;
        }
        if (!v) continue;
        prefix[j] = b;
        int r = walk(c, gr, n->kid[v & 15], j + 1, prefix, key | (uint64_t)b << (8 * j), out, total,
                     nsp);
        if (r != 0) return r;
        if (!gr->uempty_any[j + 1]) return 0;
    }
    return 0;
}

int lt__ms_dec(lt__mc *c, lt__msg *gr, uint64_t *key) {
    if (!c->ms || !gr->pops_ok) return -3;
    tnode *root = __atomic_load_n(&gr->root, __ATOMIC_ACQUIRE);
    if (!root) {
        lt__ms_lock(c->ms);
        root = gr->root;
        if (!root && (root = lt__ms_tnode_new(c->ms, lt__mc_dec_cost(c, 0))))
            __atomic_store_n(&gr->root, root, __ATOMIC_RELEASE);
        lt__ms_unlock(c->ms);
        if (!root) return -3;
    }
    double total = 0;
    long nsp = 0;
    uint64_t k = 0;
    int prefix[LT_MESH_MAX_DIMS];
    int r = walk(c, gr, root, 0, prefix, 0, &k, &total, &nsp);
    if (r == -3) return -3;
    /* unions' charges, then dec's: every one of those is a check of one
     * increasing sum of whole numbers, so one check of the total has the
     * outcome of checking each */
    for (int u = 0; u < gr->nu; u++)
        if (lt__mc_spend(c, gr->uspend[u])) return -2;
    if (nsp && lt__mc_spend(c, total)) return -2;
    if (r == 1) *key = k;
    return r;
}

/* ---- moves ------------------------------------------------------------------------------ */

/* Computes move mv from layout a into *m, quietly: 1, or 0 when it cannot
 * be recorded (the caller computes it itself). */
static int move_make(lt__mc *c, const lt__list *a, const signed char *apop, const lt__mv *mv,
                     mvrec *m) {
    double rec[4];
    lt__amark mk = lt__arena_mark(&c->tar);
    quiet q = lt__ms_quiet_begin(c, rec);
    uint64_t bytes = 0;
    int r = lt__mc_result(c, a, apop, mv, &bytes, NULL);
    int nspend = c->nrec;
    lt__msg *g = NULL;
    if (r == 1) {
        uint64_t h1, h2;
        lt__mc_g_hash(c, &h1, &h2);
        if (!(g = lt__ms_g_get(c, h1, h2))) r = -1;
    }
    lt__ms_quiet_end(c, q);
    lt__arena_reset(&c->tar, mk);
    if (r < 0) return 0;
    uint64_t most = 0;
    for (int k = 0; r == 1 && k < c->g.W; k++)
        if (c->recv[k] > most) most = c->recv[k];
    *m = (mvrec){*mv, (unsigned char)r, (unsigned char)nspend, nspend ? rec[0] : 0, bytes, most, g};
    return 1;
}

/* try_move's charges and answers from record m, in its order; mv: the
 * move as this search spells it (a permute's perm is an offset of its own). */
static lt_status move_replay(lt__mc *c, int from, uint64_t akey, const mvrec *m, const lt__mv *mv) {
    if (m->nspend && lt__mc_spend(c, m->spend)) return LT_OVERFLOW;
    if (m->r != 1) return LT_OK;
    lt__msg *g = m->g;
    uint64_t key = 0;
    int r;
    if (!g->pops_ok) r = 0;
    else if (lt__mc_spend(c, g->runs)) r = -2;
    else r = lt__mc_find_hashed(c, g->h1, g->h2, g, &key);
    if (r == -1) return lt__err(LT_NOMEM, "out of memory while planning");
    if (r < 0) return LT_OVERFLOW;
    if (r == 1 && key != akey)
        return lt__mc_relax_g(c, from, key, m->bytes, m->most, mv, g->blocks, g);
    return LT_OK;
}

lt_status lt__ms_script(lt__mc *c, int from, uint64_t akey, int i, int *done) {
    script *sc = __atomic_load_n(&c->mstate->scr[i], __ATOMIC_ACQUIRE);
    *done = sc != NULL;
    if (!sc) {   /* record this one */
        c->recording = 1;
        c->nscr = 0;
        return LT_OK;
    }
    for (int k = 0; k < sc->n; k++) LT_TRY(move_replay(c, from, akey, &sc->m[k], &sc->m[k].mv));
    return LT_OK;
}

void lt__ms_script_end(lt__mc *c, int i, int complete) {
    int rec = c->recording;
    c->recording = 0;
    if (rec != 1 || !complete) return;
    lt__ms *s = c->ms;
    lt__ms_lock(s);
    script *sc = c->mstate->scr[i]
                     ? NULL
                     : lt__ms_alloc(s, sizeof(script) + sizeof(mvrec) * (size_t)c->nscr);
    if (sc) {
        sc->n = c->nscr;
        if (c->nscr)
            memcpy(sc->m, c->scr,
                   sizeof(mvrec) * (size_t)c->nscr); /* scr is NULL when nothing was recorded */
        __atomic_store_n(&c->mstate->scr[i], sc, __ATOMIC_RELEASE);
    }
    lt__ms_unlock(s);
}

lt_status lt__ms_try_move(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                          uint64_t akey, const lt__mv *mv, int *done) {
    *done = 0;
    mvrec m;
    /* a partition depends on the destination, a permute is kept with its
     * sigma (lt__ms_permute): computed by the caller */
    if (mv->kind == LT__MV_PARTITION || mv->kind == LT__MV_PERMUTE) return LT_OK;
    if (!move_make(c, a, apop, mv, &m)) {
        c->recording = 2;   /* not recordable: nothing is published */
        return LT_OK;
    }
    if (c->recording == 1) {
        if (c->nscr == c->capscr) {
            int ncap = c->capscr ? c->capscr * 2 : 64;
            mvrec *ns = lt__realloc(c->scr, sizeof(mvrec) * (size_t)ncap);
            if (!ns) c->recording = 2;
            else {
                c->scr = ns;
                c->capscr = ncap;
            }
        }
        if (c->recording == 1) ((mvrec *)c->scr)[c->nscr++] = m;
    }
    *done = 1;
    return move_replay(c, from, akey, &m, mv);
}

lt_status lt__ms_permute(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                         uint64_t akey, int b, const lt__mv *mv, int *done) {
    int i = mv->mesh_dim;
    *done = 0;
    sigrec *e = lt__ms_sig_find(c, i, b);
    if (!e || !e->r) return LT_OK;
    mvrec *pm = __atomic_load_n(&e->m, __ATOMIC_ACQUIRE);
    if (!pm) {
        mvrec m;
        if (!move_make(c, a, apop, mv, &m)) return LT_OK;
        lt__ms_lock(c->ms);
        if (!(pm = e->m) && (pm = lt__ms_alloc(c->ms, sizeof *pm))) {
            *pm = m;
            __atomic_store_n(&e->m, pm, __ATOMIC_RELEASE);
        }
        lt__ms_unlock(c->ms);
        if (!pm) return LT_OK;
    }
    *done = 1;
    return move_replay(c, from, akey, pm, mv);
}
