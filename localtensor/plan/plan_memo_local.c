/* localtensor/plan/plan_memo_local.c — the local picks and the permutes of a
 * state, in the search space shared by the min-cost searches of one tensor.
 *
 * Why: expanding a state, a search walks its local picks (plan_moves.c's
 * local_walk: every candidate list whose blocks each rank holds within its
 * own, or empty) and looks, per mesh dim and candidate, for a permute
 * (perm_sigma: which member's blocks each member takes). Both depend on
 * the state alone, not on the pair being planned, so this file records
 * them once per state of the space and replays them for every search:
 *   - the tree of local picks: per level (mesh dim) and prefix, which
 *     candidates are picks, which lead to the same next level (a slot),
 *     which pick an empty block, and at the last level the record of the
 *     blocks picked; the replay makes local_walk's charges, canonical keys
 *     and relaxations in the search's own candidate order;
 *   - per mesh dim and candidate: the permute's sigma or none, and the
 *     record of what the permute leaves (filled by lt__ms_permute in
 *     plan_memo.c).
 * The space itself, its invariant (a search that reads the records does
 * exactly what it would do without them), its thread-safety rules (one
 * lock; lazily filled records published with release stores) and its
 * memory limits are plan_memo.c's; the record types are in
 * plan_memo_impl.h.
 */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* sched_yield (lt__ms_lock) */
#endif
#include <string.h>

#include "localtensor/plan/plan_impl.h"
#include "localtensor/plan/plan_memo_impl.h"

/* ---- local picks ------------------------------------------------------------------------ */

/* Fills local-walk node n (level j, prefix) for every candidate of c's
 * level j it does not know yet; a from the state. 0, or -1. Under the lock. */
static int lnode_fill(lt__mc *c, const lt__list *a, const signed char *apop, tnode *n, int j,
                      const int *prefix) {
    const lt__geo *g = &c->g;
    size_t nl = (size_t)g->T[j + 1] * (size_t)g->ndim;
    lt__list *ch0 = c->L + g->off[j + 1], *other = c->B + g->off[j + 1];
    lt__amark mk = lt__arena_mark(&c->tar);
    quiet q = lt__ms_quiet_begin(c, NULL);
    int rc = lt__ms_rebuild(c, c->L, j, prefix) < 0 ? -1 : 0;
    for (int b = 0; b < c->nc[j] && !rc; b++) {
        int ri = c->creg[j][b], empty;
        if (lt__ms_pop_of(&c->cand[j][b]) != apop[j] || lt__ms_vget(n, ri) != V_UNKNOWN) continue;
        lt__amark m2 = lt__arena_mark(&c->tar);
        int ok = lt__mc_local_try(c, a, j, b, &empty);
        int sl = -1;
        for (int k = 0; ok > 0 && k < n->nkids && sl < 0; k++) {   /* the same picks as a slot's? */
            int re = lt__ms_apply_level(c, c->L + g->off[j], other, j, &c->ms->reg[n->rep[k]]);
            if (re < 0) ok = -1;
            int same = re > 0;
            for (size_t x = 0; x < nl && same; x++) same = lt__list_eq(&other[x], &ch0[x]);
            if (same) sl = k;
        }
        if (ok < 0 || (ok && sl < 0 && n->nkids == MS_KIDS)) {
            rc = -1;
        } else if (!ok) {
            lt__ms_vset(n, ri, 0);
        } else {
            if (sl < 0) {
                void *kid;
                if (j + 1 < g->M) {
                    kid = lt__ms_tnode_new(c->ms, g->T[j + 2] + lt__mc_runs(ch0, nl));
                } else {   /* the picked blocks, as find_state sees them */
                    for (int r = 0; r < g->W; r++) {
                        const lt__list *x = ch0 + (size_t)r * (size_t)g->ndim;
                        memcpy(c->G + (size_t)r * (size_t)g->ndim, x,
                               sizeof(lt__list) * (size_t)g->ndim);
                        c->Gempty[r] = lt__block_empty(x, g->ndim);
                    }
                    memcpy(c->gpop, apop, sizeof c->gpop);
                    uint64_t h1, h2;
                    lt__mc_g_hash(c, &h1, &h2);
                    kid = lt__ms_g_make_locked(c, h1, h2);
                }
                if (!kid) rc = -1;
                else {
                    n->rep[n->nkids] = (unsigned char)ri;
                    n->kid[n->nkids] = kid;
                    sl = n->nkids++;
                }
            }
            if (!rc) lt__ms_vset(n, ri, V_OK | sl | (empty ? V_EMPTY : 0));
        }
        lt__arena_reset(&c->tar, m2);
    }
    lt__ms_quiet_end(c, q);
    lt__arena_reset(&c->tar, mk);
    return rc;
}

/* Makes sure every node the walk of c's order reaches is known: 0, -1. */
static int lw_prep(lt__mc *c, const lt__list *a, const signed char *apop, tnode *n, int j,
                   int *prefix) {
    unsigned seen = 0;
    uint64_t want = c->cregmask[j][apop[j] + 1];
    if (lt__ms_dec_sets && !(want & ~__atomic_load_n(&n->known, __ATOMIC_ACQUIRE))) {
        /* all known here: only the matching candidates, in c's order */
        for (uint64_t bm = lt__ms_by_cand(c, j, __atomic_load_n(&n->okm, __ATOMIC_ACQUIRE) & want);
             bm; bm &= bm - 1) {
            int b = __builtin_ctzll(bm), v = lt__ms_vget(n, c->creg[j][b]);
            if (seen & 1u << (v & 15)) continue;
            seen |= 1u << (v & 15);
            prefix[j] = b;
            if (j + 1 < c->g.M && lw_prep(c, a, apop, n->kid[v & 15], j + 1, prefix) < 0) return -1;
        }
        return 0;
    }
    const signed char *cp = c->cpop[j];
    int ap = apop[j], nc = c->nc[j];
    for (int b = 0; b < nc; b++) {
        if (cp[b] != ap) continue;
        int ri = c->creg[j][b], v = lt__ms_vget(n, ri);
        if (v == V_UNKNOWN) {
            lt__ms_lock(c->ms);
            int rc = lnode_fill(c, a, apop, n, j, prefix);
            lt__ms_unlock(c->ms);
            if (rc < 0 || (v = lt__ms_vget(n, ri)) == V_UNKNOWN) return -1;
        }
        if (!v || (seen & 1u << (v & 15))) continue;
        seen |= 1u << (v & 15);
        prefix[j] = b;
        if (j + 1 < c->g.M && lw_prep(c, a, apop, n->kid[v & 15], j + 1, prefix) < 0) return -1;
    }
    return 0;
}

/* local_walk's replay: its charges, its canonical keys, its relaxations,
 * in its order. */
static lt_status lw_replay(lt__mc *c, int from, const signed char *apop, uint64_t akey, tnode *n,
                           int j, uint64_t key, int empties) {
    unsigned seen = 0;
    const signed char *cp = c->cpop[j];
    const unsigned char *cr = c->creg[j];
    int ap = apop[j], nc = c->nc[j];
    uint64_t want = c->cregmask[j][ap + 1], bm = 0;
    int sets = lt__ms_dec_sets && !(want & ~__atomic_load_n(&n->known, __ATOMIC_ACQUIRE));
    if (sets) {
        /* the scan's charges, one per candidate of this op, at once: the
         * same whole-number sum, and past the budget either way when the
         * scan would be (it only adds, and its relaxations do not count);
         * then only the matching candidates, in c's order */
        int k = __builtin_popcountll(want);
        if (k && lt__mc_spend(c, n->cost * k)) return LT_OVERFLOW;
        bm = lt__ms_by_cand(c, j, __atomic_load_n(&n->okm, __ATOMIC_ACQUIRE) & want);
    }
    for (int b = 0; sets ? bm != 0 : b < nc; b++) {
        if (sets) {
            b = __builtin_ctzll(bm);
            bm &= bm - 1;
        } else {
            if (cp[b] != ap) continue;
            if (lt__mc_spend(c, n->cost)) return LT_OVERFLOW;
        }
        int v = lt__ms_vget(n, cr[b]);
        if (!v || (seen & 1u << (v & 15))) continue;
        seen |= 1u << (v & 15);
        uint64_t k = key | (uint64_t)b << (8 * j);
        int e = empties || (v & V_EMPTY);
        if (j + 1 < c->g.M) {
            LT_TRY(lw_replay(c, from, apop, akey, n->kid[v & 15], j + 1, k, e));
            continue;
        }
        lt__msg *g = n->kid[v & 15];
        int r = 1;
        if (e) {   /* lt__mc_canon */
            if (!g->pops_ok) r = 0;
            else if (lt__mc_spend(c, g->runs)) r = -2;
            else r = lt__mc_find_hashed(c, g->h1, g->h2, g, &k);
            if (r == -1) return lt__err(LT_NOMEM, "out of memory while planning");
            if (r < 0) return LT_OVERFLOW;
        }
        lt__mv mv = {LT__MV_LOCAL, 0, 0, 0, -1, -1, 0, -1, 0};
        if (r == 1 && k != akey) LT_TRY(lt__mc_relax_g(c, from, k, 0, 0, &mv, g->blocks, g));
    }
    return LT_OK;
}

lt_status lt__ms_local_walk(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                            uint64_t akey, int *done) {
    lt__mst *st = c->mstate;
    *done = 0;
    tnode *root = __atomic_load_n(&st->lw, __ATOMIC_ACQUIRE);
    if (!root) {
        lt__ms_lock(c->ms);
        root = st->lw;
        if (!root &&
            (root = lt__ms_tnode_new(c->ms, c->g.T[1] + lt__mc_runs(c->L, (size_t)c->g.ndim))))
            __atomic_store_n(&st->lw, root, __ATOMIC_RELEASE);
        lt__ms_unlock(c->ms);
        if (!root) return LT_OK;
    }
    int prefix[LT_MESH_MAX_DIMS];
    if (lw_prep(c, a, apop, root, 0, prefix) < 0) return LT_OK;
    *done = 1;
    return lw_replay(c, from, apop, akey, root, 0, 0, 0);
}

/* ---- permutes --------------------------------------------------------------------------- */

int lt__ms_permute_set(lt__mc *c, int i, uint64_t *cands) {
    const sigrec *e = __atomic_load_n(&c->mstate->sig[i], __ATOMIC_ACQUIRE);
    uint64_t want = c->cregmask[i][0];   /* the candidates that are not Partial */
    if (!lt__ms_dec_sets || !e || (want & ~e->known)) return 0;
    *cands = lt__ms_by_cand(c, i, e->perm & want);
    return 1;
}

int lt__ms_sigma_get(lt__mc *c, int i, int b, int *sigma) {
    sigrec *e = lt__ms_sig_find(c, i, b);
    if (!e) return -3;
    if (e->r) memcpy(sigma, e->sigma, sizeof(int) * (size_t)c->g.mesh->shape[i]);
    return e->r;
}

void lt__ms_sigma_put(lt__mc *c, int i, int b, int r, const int *sigma) {
    lt__mst *st = c->mstate;
    int n = c->g.mesh->shape[i];
    lt__ms_lock(c->ms);
    sigrec *e = lt__ms_sig_find(c, i, b)
                    ? NULL
                    : lt__ms_alloc(c->ms, sizeof(sigrec) + sizeof(int) * (size_t)n);
    if (e) {
        e->ri = c->creg[i][b];
        e->r = r;
        e->known = (st->sig[i] ? st->sig[i]->known : 0) | (uint64_t)1 << e->ri;
        e->perm = (st->sig[i] ? st->sig[i]->perm : 0) | (uint64_t)(r != 0) << e->ri;
        if (r) memcpy(e->sigma, sigma, sizeof(int) * (size_t)n);
        e->next = st->sig[i];
        __atomic_store_n(&st->sig[i], e, __ATOMIC_RELEASE);
    }
    lt__ms_unlock(c->ms);
}
