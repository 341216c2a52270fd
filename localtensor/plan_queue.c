/* localtensor/plan_queue.c — the priority queue both planners search with:
 * the greedy/uniform-cost search of plan.c and the A* of plan_search.c
 * (plan_impl.h declares it). One binary min-heap of (k[0], k[1], k[2],
 * node), ordered lexicographically, so both break ties the same way every
 * run. */
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
