/* localtensor/plan/plan_frontier.c — the search bookkeeping both planners share
 * (the uniform-cost search of plan.c and the A* of plan_search.c;
 * plan_impl.h declares it): a priority queue, one binary min-heap of
 * (k[0], k[1], k[2], node) ordered lexicographically, so both break ties
 * the same way on every run; and the map from a state's key to its node. */
#include <string.h>

#include "kernels/alloc.h"
#include "localtensor/plan/plan_impl.h"

static int qless(const lt__pq_item *a, const lt__pq_item *b) {
    for (int i = 0; i < 3; i++)
        if (a->k[i] != b->k[i]) return a->k[i] < b->k[i];
    return a->node < b->node;
}

lt_status lt__pq_push(lt__pq *q, lt__pq_item it) {
    if (q->n == q->cap) {
        int ncap = q->cap ? q->cap * 2 : 256;
        lt__pq_item *nv = lt__realloc(q->v, sizeof(lt__pq_item) * (size_t)ncap);
        if (!nv) return lt__err(LT_NOMEM, "out of memory while planning");
        q->v = nv;
        q->cap = ncap;
    }
    int i = q->n++;
    q->v[i] = it;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!qless(&q->v[i], &q->v[p])) break;
        lt__pq_item t = q->v[i];
        q->v[i] = q->v[p];
        q->v[p] = t;
        i = p;
    }
    return LT_OK;
}

lt__pq_item lt__pq_pop(lt__pq *q) {
    lt__pq_item top = q->v[0];
    q->v[0] = q->v[--q->n];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->n && qless(&q->v[l], &q->v[m])) m = l;
        if (r < q->n && qless(&q->v[r], &q->v[m])) m = r;
        if (m == i) break;
        lt__pq_item t = q->v[i];
        q->v[i] = q->v[m];
        q->v[m] = t;
        i = m;
    }
    return top;
}

void lt__pq_free(lt__pq *q) {
    lt__free(q->v);
    q->v = NULL;
    q->n = q->cap = 0;
}

/* ---- key -> node index ---------------------------------------------------------------- */

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static lt_status keymap_grow(lt__keymap *m) {
    size_t ncap = m->cap ? m->cap * 2 : 256;
    lt__keymap_slot *t = lt__calloc(ncap, sizeof *t);
    if (!t) return lt__err(LT_NOMEM, "out of memory while planning");
    if (!m->gen) m->gen = 1;   /* the new table's zeroed slots are not in use */
    for (size_t i = 0; i < m->cap; i++) {
        if (m->slot[i].gen != m->gen) continue;
        size_t h = mix(m->slot[i].key) & (ncap - 1);
        while (t[h].gen == m->gen) h = (h + 1) & (ncap - 1);
        t[h] = m->slot[i];
    }
    lt__free(m->slot);
    m->slot = t;
    m->cap = ncap;
    return LT_OK;
}

lt_status lt__keymap_get(lt__keymap *m, uint64_t key, int next, int *idx, int *added) {
    *added = 0;
    if ((m->n + 1) * 2 > m->cap) LT_TRY(keymap_grow(m));
    size_t h = mix(key) & (m->cap - 1);
    for (; m->slot[h].gen == m->gen; h = (h + 1) & (m->cap - 1))
        if (m->slot[h].key == key) {
            *idx = m->slot[h].idx1 - 1;
            return LT_OK;
        }
    m->slot[h] = (lt__keymap_slot){key, next + 1, m->gen};
    m->n++;
    *idx = next;
    *added = 1;
    return LT_OK;
}

void lt__keymap_clear(lt__keymap *m) {
    if (m->slot && !++m->gen) {   /* the generations wrapped: zero, and start again */
        memset(m->slot, 0, sizeof *m->slot * m->cap);
        m->gen = 1;
    }
    m->n = 0;
}

/* ---- spare tables ------------------------------------------------------------------- */

#define SPARE_N 4
typedef struct spare {
    void *p;
    size_t cap;
    uint32_t gen;
} spare;
static int spare_lock;
static spare spares[2][SPARE_N];
static int nspares[2];

static void spare_lock_take(void) {
    while (__atomic_exchange_n(&spare_lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&spare_lock, __ATOMIC_RELAXED)) {
        }
}
static void spare_lock_drop(void) { __atomic_store_n(&spare_lock, 0, __ATOMIC_RELEASE); }

void lt__spare_take(int kind, void **p, size_t *cap, uint32_t *gen) {
    *p = NULL;
    *cap = 0;
    *gen = 0;
    spare_lock_take();
    if (nspares[kind]) {
        spare s = spares[kind][--nspares[kind]];
        *p = s.p;
        *cap = s.cap;
        *gen = s.gen;
    }
    spare_lock_drop();
}

void lt__spare_give(int kind, void *p, size_t cap, size_t esize, uint32_t gen) {
    if (!p) return;
    if (cap * esize > LT__SPARE_MAX) {
        lt__free(p);
        return;
    }
    if (!++gen) {   /* wrapped: no entry may look in use */
        memset(p, 0, cap * esize);
        gen = 1;
    }
    spare_lock_take();
    int kept = nspares[kind] < SPARE_N;
    if (kept) spares[kind][nspares[kind]++] = (spare){p, cap, gen};
    spare_lock_drop();
    if (!kept) lt__free(p);
}

void lt__spare_clear(void) {
    spare_lock_take();
    for (int k = 0; k < 2; k++) {
        while (nspares[k]) lt__free(spares[k][--nspares[k]].p);
    }
    spare_lock_drop();
}

void lt__keymap_free(lt__keymap *m) {
    lt__free(m->slot);
    m->slot = NULL;
    m->n = m->cap = 0;
}
