/* collectives_sim/cost.c — the latency rounds of every collective (the
 * per-member byte model is inline in collectives_sim/cost.h, which says why
 * it is one place). Pure functions: nothing is allocated, nothing freed. */
#include "collectives_sim/cost.h"

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
