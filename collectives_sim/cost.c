/* collectives_sim/cost.c — the per-member byte model and rounds of every
 * collective (collectives_sim/cost.h says why it is one file). Pure
 * functions: nothing is allocated, nothing freed. */
#include "collectives_sim/cost.h"

static uint64_t sat_mul(uint64_t a, uint64_t b) {
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* all_reduce's piece p of n: the balanced split of the input's elements. */
static uint64_t ring_piece(uint64_t in, int n, int p, uint64_t es) {
    uint64_t e = es ? in / es : 0, N = (uint64_t)n;
    return (e / N + ((uint64_t)p < e % N)) * es;
}

uint64_t lt__coll_recv(lt_coll k, int n, int p, int root, lt__member m, uint64_t es) {
    uint64_t others = n > 1 ? (uint64_t)(n - 1) : 0;
    switch (k) {
    case LT_COLL_ALL_REDUCE: {
        uint64_t piece = ring_piece(m.in, n, p, es);
        return sat_add(sat_mul(others, piece), m.in - piece);
    }
    case LT_COLL_REDUCE_SCATTER:
        return sat_mul(others, m.out);
    case LT_COLL_REDUCE:
        return p == root ? sat_mul(others, m.in) : 0;
    case LT_COLL_BARRIER:
        return 0;
    default: /* all_gather, gather, all_to_all, scatter, broadcast, permute */
        return m.out > m.kept ? m.out - m.kept : 0;
    }
}

uint64_t lt__coll_sent(lt_coll k, int n, int p, int root, lt__member m, uint64_t es,
                       uint64_t others) {
    uint64_t peers = n > 1 ? (uint64_t)(n - 1) : 0;
    switch (k) {
    case LT_COLL_ALL_GATHER:
        return sat_mul(peers, m.in);
    case LT_COLL_ALL_REDUCE:
        return lt__coll_recv(k, n, p, root, m, es);
    case LT_COLL_REDUCE_SCATTER:
        return m.in > m.out ? m.in - m.out : 0;
    case LT_COLL_GATHER:
    case LT_COLL_REDUCE:
        return p == root ? 0 : m.in;
    case LT_COLL_SCATTER:
    case LT_COLL_BROADCAST:
        return p == root ? others : 0;
    case LT_COLL_ALL_TO_ALL:
    case LT_COLL_PERMUTE:
        return m.in > m.kept ? m.in - m.kept : 0;
    default: /* barrier */
        return 0;
    }
}

uint64_t lt__coll_rounds(lt_coll k, int n) {
    uint64_t m = n > 1 ? (uint64_t)(n - 1) : 0;
    switch (k) {
    case LT_COLL_ALL_REDUCE:
        return 2 * m;
    case LT_COLL_PERMUTE:
        return 1;
    case LT_COLL_BARRIER:
        return 0;
    default:
        return m;
    }
}

uint64_t lt__coll_rounds_algo(lt_coll k, int n, int algo) {
    if (algo == 0 || n <= 1 || k == LT_COLL_BARRIER || k == LT_COLL_PERMUTE)
        return k == LT_COLL_BARRIER ? 0 : lt__coll_rounds(k, n);
    uint64_t r = 1;                              /* direct: every message at once */
    if (algo == 1) r = (uint64_t)(n - 1);        /* ring */
    else if (algo == 2)                          /* tree: ceil(log2 n) */
        for (r = 0; ((uint64_t)1 << r) < (uint64_t)n; r++) continue;
    return k == LT_COLL_ALL_REDUCE ? 2 * r : r;
}
