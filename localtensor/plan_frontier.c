/* localtensor/plan_frontier.c — the search bookkeeping both planners share
 * (the uniform-cost search of plan.c and the A* of plan_search.c;
 * plan_impl.h declares it): a priority queue, one binary min-heap of
 * (k[0], k[1], k[2], node) ordered lexicographically, so both break ties
 * the same way on every run; and the map from a state's key to its node. */
#include <string.h>

#include "kernels/alloc.h"
#include "localtensor/plan_impl.h"

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
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slot[i].idx1) continue;
        size_t h = mix(m->slot[i].key) & (ncap - 1);
        while (t[h].idx1) h = (h + 1) & (ncap - 1);
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
    for (; m->slot[h].idx1; h = (h + 1) & (m->cap - 1))
        if (m->slot[h].key == key) {
            *idx = m->slot[h].idx1 - 1;
            return LT_OK;
        }
    m->slot[h] = (lt__keymap_slot){key, next + 1};
    m->n++;
    *idx = next;
    *added = 1;
    return LT_OK;
}

void lt__keymap_clear(lt__keymap *m) {
    if (m->slot) memset(m->slot, 0, sizeof *m->slot * m->cap);
    m->n = 0;
}

void lt__keymap_free(lt__keymap *m) {
    lt__free(m->slot);
    m->slot = NULL;
    m->n = m->cap = 0;
}
