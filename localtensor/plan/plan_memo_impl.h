/* localtensor/plan/plan_memo_impl.h — the records of the search space shared by
 * the min-cost searches of one tensor (internal: not installed).
 *
 * Why: two files keep the space. plan_memo.c holds the space itself (its
 * memory, tables and registries), the layouts of placement lists, the
 * results and dec's tree over them, and the moves; plan_memo_local.c holds
 * the tree of a state's local picks and its permutes. Both read and fill
 * the same records under the same lock, so the record types and the few
 * helpers both use live here. Only those two files include this header;
 * the rest of the planner reaches the space through the lt__ms_ functions
 * of plan_impl.h. The space's invariant (a search that reads the records
 * does exactly what it would do without them), its thread-safety rules and
 * its memory limits are in plan_memo.c's opening comment.
 */
#ifndef LT_PLAN_MEMO_IMPL_H
#define LT_PLAN_MEMO_IMPL_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#include "localtensor/plan/plan_impl.h"

#define MS_REG 64                  /* placements one space tells apart */
#define MS_DREG 64                 /* destinations one space keeps lower bounds for */
#define MS_MAX_BYTES (12u << 20)   /* records of one space */
#define MS_SPACES 2                /* spaces kept */
#define MS_CHUNK (64u << 10)       /* records are carved from chunks of this size */

/* ---- records --------------------------------------------------------------------------- */

/* A node of one of the walks the space replays (dec over a result's
 * prefixes, local_walk over a state's picks) at level j, for the prefix
 * that led to it: the work one candidate costs there, and per registry
 * placement v: V_UNKNOWN, 0 (no), or V_OK | kid slot (| V_EMPTY: a picked
 * block is empty). Candidates whose level j + 1 is the same share a slot
 * (local walk) or not (dec). kid: the next level's node, or at the last
 * level of the local walk the record of the picked blocks. v entries are
 * published with release stores after their kid, then their bits in known
 * (and okm when V_OK), so a reader that sees a bit in known sees its v and
 * kid. */
#define MS_KIDS 16
#define V_UNKNOWN 0xff
#define V_OK 0x20
#define V_EMPTY 0x10
typedef struct tnode {
    double cost;
    uint64_t known, okm;              /* bit ri: v[ri] published; v[ri] is V_OK | .. (atomic) */
    unsigned char v[MS_REG];
    unsigned char rep[MS_KIDS];       /* local walk: a registry placement of each slot */
    int nkids;
    void *kid[MS_KIDS];
} tnode;

struct lt__msg {
    uint64_t h1, h2;
    int pops_ok;
    double runs;                      /* find_state's first charge */
    int nu;                           /* unions' charges (nu of them) */
    double uspend[LT_MESH_MAX_DIMS];
    unsigned char uempty_any[LT_MESH_MAX_DIMS + 1];
    signed char gpop[LT_MESH_MAX_DIMS];
    lt__list *blocks;                 /* (W, ndim) what each rank holds */
    unsigned char *empty;             /* (W) */
    tnode *root;                      /* dec's; atomic, NULL until needed */
    uint32_t *lb;                     /* (MS_DREG) atomic, NULL until needed: per destination
                                       * of the registry, the lower bound + 1, 0 unknown (a
                                       * bound of 2^32 - 1 bytes or more is not kept) */
};

/* A move from one state: the move, whether it is one (r 1) or not, the
 * charge result() made (nspend of them, 0 or 1), its bytes, and the record
 * of what it leaves. */
typedef struct mvrec {
    lt__mv mv;
    unsigned char r, nspend;
    double spend;
    uint64_t bytes, most;   /* received in all, by the busiest rank */
    lt__msg *g;
} mvrec;

/* The moves of dim_moves along one mesh dim, in its order. */
typedef struct script {
    int n;
    mvrec m[];
} script;

/* A permute's sigma and move record (r 1; the record atomic, NULL until
 * made) or none (r 0), for registry placement ri; a list per mesh dim. */
typedef struct sigrec {
    int ri, r;
    uint64_t known, perm; /* registry indices of this record and those after it: all; permutes */
    mvrec *m;
    struct sigrec *next;
    int sigma[];                      /* (mesh dim size) */
} sigrec;

/* A placement list's layout (off[M + 1] lists) and, once entered, its
 * state record (atomic), under the list's registry indices. */
typedef struct lrec {
    lt__list *lay;
    lt__mst *st;
} lrec;

struct lt__mst {
    uint64_t h1, h2;
    script *scr[LT_MESH_MAX_DIMS];    /* atomic; NULL until recorded */
    tnode *lw;                        /* local_walk's root; atomic */
    sigrec *sig[LT_MESH_MAX_DIMS];    /* per mesh dim; atomic heads */
};

/* (h1, h2) -> record, open addressing on h1, at most half full. */
typedef struct slot {
    uint64_t h1, h2;
    void *v;
} slot;
typedef struct tab {
    slot *s;                          /* (cap) lt__calloc */
    size_t n, cap;
} tab;

typedef struct chunk {
    struct chunk *next;
    size_t used;
    size_t pad_;                      /* mem starts 16-aligned on 64-bit */
    unsigned char mem[];
} chunk;

struct lt__ms {
    int lock;
    int refs;                         /* atomic */
    int full;
    size_t bytes;
    int nreg;
    lt_placement reg[MS_REG];
    int ndreg;                        /* destinations (effective lists, M entries each) */
    lt_placement dreg[MS_DREG][LT_MESH_MAX_DIMS];
    chunk *chunks;
    lt__arena runs;
    tab states, gs;
    tab lays;                         /* registry indices of a list -> lrec */
};

/* ---- helpers of both files ------------------------------------------------------------- */

/* The space's spin lock (plan_memo.c: what it guards). */
static inline void lt__ms_lock(lt__ms *s) {
    while (__atomic_exchange_n(&s->lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&s->lock, __ATOMIC_RELAXED)) sched_yield();
}
static inline void lt__ms_unlock(lt__ms *s) { __atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE); }

/* n bytes (zeroed, 16-aligned) from s's chunks, counted; NULL when full or
 * out of memory. Under the lock. */
void *lt__ms_alloc(lt__ms *s, size_t n);

static inline int lt__ms_pop_of(const lt_placement *p) {
    return p->kind == LT_PL_PARTIAL ? (int)p->op : -1;
}

/* Runs fn-like computations without charging the search: saves and
 * restores the work, the budget and the recorder. */
typedef struct quiet {
    double work, budget;
    double *rec;
    int nrec;
} quiet;
static inline quiet lt__ms_quiet_begin(lt__mc *c, double *rec) {
    quiet q = {c->work, c->budget, c->rec, c->nrec};
    c->budget = 1e300;
    c->rec = rec;
    c->nrec = 0;
    return q;
}
static inline void lt__ms_quiet_end(lt__mc *c, quiet q) {
    c->work = q.work;
    c->budget = q.budget;
    c->rec = q.rec;
    c->nrec = q.nrec;
}

/* The record of c->G (hashes h1, h2): found, or made (unions run on c->G
 * quietly); NULL when it cannot be made. Under the lock. */
lt__msg *lt__ms_g_make_locked(lt__mc *c, uint64_t h1, uint64_t h2);

/* A new tree node whose one candidate costs cost, every v V_UNKNOWN; NULL
 * as lt__ms_alloc. Under the lock. */
tnode *lt__ms_tnode_new(lt__ms *s, double cost);

/* Level l + 1 (into to) from level l (at) under placement p, every tuple:
 * 1, 0 rejected, -1 out of memory (runs in c->tar). */
int lt__ms_apply_level(lt__mc *c, const lt__list *at, lt__list *to, int l, const lt_placement *p);

/* Levels 1..j of lay from its level 0 and the candidates prefix[0..j). */
int lt__ms_rebuild(lt__mc *c, lt__list *lay, int j, const int *prefix);

/* Publishes v for registry placement ri of n. */
static inline void lt__ms_vset(tnode *n, int ri, int v) {
    __atomic_store_n(&n->v[ri], (unsigned char)v, __ATOMIC_RELEASE);
    if (v & V_OK) __atomic_fetch_or(&n->okm, (uint64_t)1 << ri, __ATOMIC_RELEASE);
    __atomic_fetch_or(&n->known, (uint64_t)1 << ri, __ATOMIC_RELEASE);
}
static inline int lt__ms_vget(const tnode *n, int ri) {
    return __atomic_load_n(&n->v[ri], __ATOMIC_ACQUIRE);
}

/* The candidates of mesh dim j (bit b: candidate b) whose registry indices
 * are in set rs (of c's candidates there). */
static inline uint64_t lt__ms_by_cand(const lt__mc *c, int j, uint64_t rs) {
    uint64_t bm = 0;
    for (; rs; rs &= rs - 1) bm |= (uint64_t)1 << c->rcand[j][__builtin_ctzll(rs)];
    return bm;
}

/* The permute record of candidate b of mesh dim i in the state being
 * expanded, NULL when none is recorded yet. */
static inline sigrec *lt__ms_sig_find(const lt__mc *c, int i, int b) {
    sigrec *e = __atomic_load_n(&c->mstate->sig[i], __ATOMIC_ACQUIRE);
    while (e && e->ri != c->creg[i][b]) e = e->next;
    return e;
}

#endif
