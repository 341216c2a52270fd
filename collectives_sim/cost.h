/* collectives_sim/cost.h — the byte model of every collective, per group
 * member, and its latency rounds (internal: not installed).
 *
 * Why one place: the comm trace records what a collective moved
 * (collectives_sim/trace.c), the planner prices the steps it may take
 * (localtensor/plan/plan_rules.c for the rule table, plan_moves.c for the
 * min-cost moves) and the time objective counts rounds
 * (localtensor/plan/plan_cost.c). All of them call these functions, so a
 * plan's bytes are the trace's by construction (test/test_plan_bytes.c
 * checks it on real runs). The model is collectives_sim/trace.h's, in
 * words there; here it is written once, in terms of what one member
 * holds before and after the call:
 *
 *   in    bytes of its input shard
 *   out   bytes of its output shard (a rooted collective's other members:
 *         0, or what they keep)
 *   kept  bytes of `out` that were its own before: all_gather and gather
 *         its input, all_to_all its own piece, scatter's and broadcast's
 *         root all of out, a permute's fixed member all of out, else 0
 *
 * Non-reducing collectives (all_gather, gather, all_to_all, scatter,
 * broadcast, permute) deliver what a member holds after that it did not
 * hold before: recv = out - kept. Reductions move partial sums:
 * reduce_scatter recv = (n - 1) * out; reduce's root (n - 1) * in;
 * all_reduce is reduce_scatter + all_gather over the balanced split of the
 * input's elements (piece p = (E / n + (p < E % n)) * es): recv = sent =
 * (n - 1) * piece + (in - piece). Every function is pure; nothing is
 * allocated. Sums saturate at UINT64_MAX (no valid shard reaches it).
 */
#ifndef LT_COLL_COST_H
#define LT_COLL_COST_H

#include <stdint.h>

#include "localtensor/collectives_sim/collectives.h"

/* One member's part of a collective (the fields above). */
typedef struct lt__member {
    uint64_t in, out, kept;
} lt__member;

/* Inline: the trace calls these for every member of every traced call. */
static inline uint64_t lt__sat_mul(uint64_t a, uint64_t b) {
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static inline uint64_t lt__sat_add(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* all_reduce's piece p of n: the balanced split of the input's elements
 * (es, a dtype's size, is a power of two: a shift, not a division). */
static inline uint64_t lt__ring_piece(uint64_t in, int n, int p, uint64_t es) {
    if (!es || n < 1) return 0;
    uint64_t e = (es & (es - 1)) ? in / es : in >> __builtin_ctzll(es), N = (uint64_t)n;
    uint64_t q = e / N, r = e - q * N;
    return (q + ((uint64_t)p < r)) * es;
}

/* Bytes member p (position in its group of n; root: the rooted
 * collective's root position, else ignored) receives from the others in
 * collective k; es: bytes per element (all_reduce's pieces). */
static inline uint64_t lt__coll_recv(lt_coll k, int n, int p, int root, lt__member m, uint64_t es) {
    uint64_t others = n > 1 ? (uint64_t)(n - 1) : 0;
    switch (k) {
    case LT_COLL_ALL_REDUCE: {
        uint64_t piece = lt__ring_piece(m.in, n, p, es);
        return lt__sat_add(lt__sat_mul(others, piece), m.in - piece);
    }
    case LT_COLL_REDUCE_SCATTER:
        return lt__sat_mul(others, m.out);
    case LT_COLL_REDUCE:
        return p == root ? lt__sat_mul(others, m.in) : 0;
    case LT_COLL_BARRIER:
        return 0;
    default: /* all_gather, gather, all_to_all, scatter, broadcast, permute */
        return m.out > m.kept ? m.out - m.kept : 0;
    }
}

/* Bytes member p sends to the others. The root of scatter and broadcast
 * sends what the others receive: `others` (the sum of their receipts; read
 * for that root only). */
static inline uint64_t lt__coll_sent(lt_coll k, int n, int p, int root, lt__member m, uint64_t es,
                                     uint64_t others) {
    uint64_t peers = n > 1 ? (uint64_t)(n - 1) : 0;
    switch (k) {
    case LT_COLL_ALL_GATHER:
        return lt__sat_mul(peers, m.in);
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

/* Latency rounds of collective k in a group of n, the messages one member
 * waits for in sequence: n - 1 (ring all_gather, reduce_scatter; pairwise
 * all_to_all; gather, scatter, reduce, broadcast direct to or from the
 * root), 2 (n - 1) for all_reduce (ring), 1 for permute, 0 for a group of
 * one and for barrier. */
uint64_t lt__coll_rounds(lt_coll k, int n);

/* The rounds of collective k in a group of n under algorithm `algo` (an
 * lt_algo of localtensor/plan.h: 0 default, as lt__coll_rounds; 1 ring,
 * n - 1; 2 tree, ceil(log2 n); 3 direct, 1). all_reduce takes twice its
 * algorithm's rounds, permute 1, a group of one and barrier 0. */
uint64_t lt__coll_rounds_algo(lt_coll k, int n, int algo);

#endif
