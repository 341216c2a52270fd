/* test/test_planner.c — the min-cost planner is optimal: on 2x2 and 2x2x2
 * meshes its total bytes equal the minimum found by a brute-force search
 * written here (its own step rules and byte model, an exhaustive DFS over
 * sequences of legal single-dim steps), and it is never worse than greedy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/redistribute_testutil.h"

/* ---- min-cost optimality against brute force ------------------------------------------------ */

/* The search space of localtensor/redistribute.h, with its own step rules and
 * byte model. */
typedef struct bf {
    const lt_mesh *m;
    int ndim;
    const int64_t *shape;
    size_t es;
    const lt_placement *src, *dst;
    int frozen[LT_MESH_MAX_DIMS];
    int nc[LT_MESH_MAX_DIMS];
    lt_placement cand[LT_MESH_MAX_DIMS][40];
    long nstates;
    signed char *valid;          /* per state: -1 unknown, 0 invalid, 1 valid */
    lt_rank_layout *lay;         /* (nstates, world) */
    uint64_t *best;
    int *bestdepth;
    uint64_t found;
    int maxdepth;
} bf;

static void bf_add(bf *b, int i, lt_placement p) {
    for (int k = 0; k < b->nc[i]; k++)
        if (lt_placement_equal(&b->cand[i][k], &p)) return;
    b->cand[i][b->nc[i]++] = p;
}

static int is_shardish(const lt_placement *p) { return p->kind == LT_PL_SHARD || p->kind == LT_PL_STRIDED; }

static int bf_later(const bf *b, const lt_placement *pl, int i, int d) {
    for (int j = i + 1; j < b->m->ndim; j++)
        if (is_shardish(&pl[j]) && pl[j].dim == d) return 1;
    return 0;
}

/* 0 = not a step; 1 gather, 2 all_reduce, 3 reduce_scatter, 4 all_to_all, 5 local */
static int bf_step(const bf *b, const lt_placement *pl, int i, const lt_placement *t) {
    const lt_placement *a = &pl[i];
    if (b->frozen[i]) return 0;
    if (a->kind == LT_PL_REPLICATE) {
        if (is_shardish(t)) return bf_later(b, pl, i, t->dim) ? 0 : 5;
        if (t->kind == LT_PL_PARTIAL)
            return lt_placement_equal(t, &b->dst[i]) && b->src[i].kind != LT_PL_PARTIAL ? 5 : 0;
        return 0;
    }
    if (is_shardish(a) && bf_later(b, pl, i, a->dim)) return 0;
    if (is_shardish(a) && t->kind == LT_PL_REPLICATE) return 1;
    if (a->kind == LT_PL_SHARD && t->kind == LT_PL_SHARD && t->dim != a->dim && !bf_later(b, pl, i, t->dim)) return 4;
    if (a->kind == LT_PL_PARTIAL && t->kind == LT_PL_REPLICATE) return 2;
    if (a->kind == LT_PL_PARTIAL && t->kind == LT_PL_SHARD && !bf_later(b, pl, i, t->dim)) return 3;
    return 0;
}

static int64_t bf_numel(const lt_rank_layout *l) {
    int64_t n = 1;
    for (int d = 0; d < l->ndim; d++) n *= l->local_shape[d];
    return n;
}

static long bf_key(const bf *b, const lt_placement *pl) {
    long k = 0;
    for (int i = 0; i < b->m->ndim; i++) {
        int x = 0;
        while (!lt_placement_equal(&b->cand[i][x], &pl[i])) x++;
        k = k * b->nc[i] + x;
    }
    return k;
}

/* Layouts of every rank of state pl (memoized per state); NULL when the state
 * is not a valid placement list with a computable layout. */
static lt_rank_layout *bf_state(bf *b, const lt_placement *pl) {
    long k = bf_key(b, pl);
    if (b->valid[k] < 0) {
        lt_placement tmp[LT_MESH_MAX_DIMS];
        b->valid[k] = !lt_placements_check(b->m, b->ndim, pl, b->m->ndim, tmp) &&
                      !lt_layout_check(b->m, b->ndim, b->shape, pl);
        for (int r = 0; r < b->m->world && b->valid[k]; r++)
            LT_CHECK(lt_layout_rank(b->m, b->ndim, b->shape, pl, r, &b->lay[k * b->m->world + r]));
    }
    return b->valid[k] ? &b->lay[k * b->m->world] : NULL;
}

/* Elements both layouts hold, per dim from the index sets. */
static int64_t bf_overlap(const bf *b, const lt_rank_layout *x, const lt_rank_layout *y) {
    int64_t keep = 1;
    for (int d = 0; d < b->ndim; d++) {
        char *mask = calloc((size_t)b->shape[d] + 1, 1);
        for (int64_t j = 0; j < x->local_shape[d]; j++) mask[x->idx[d] ? x->idx[d][j] : j] = 1;
        int64_t c = 0;
        for (int64_t j = 0; j < y->local_shape[d]; j++) c += mask[y->idx[d] ? y->idx[d][j] : j];
        free(mask);
        keep *= c;
    }
    return keep;
}

/* Bytes every rank receives (model of collectives_sim/trace.h, from shard sizes). */
static int64_t bf_bytes(const bf *b, const lt_rank_layout *la, const lt_rank_layout *lb, int i, int kind) {
    const lt_mesh *m = b->m;
    int W = m->world, n = m->shape[i];
    int64_t total = 0;
    for (int r = 0; r < W; r++) {
        int pos;
        int g = lt_mesh_group_of(m, i, r, &pos);
        int grp[16];
        lt_mesh_group(m, i, g, grp);
        int64_t v = 0;
        if (kind == 1) {            /* every other member's shard */
            for (int j = 0; j < n; j++)
                if (grp[j] != r) v += bf_numel(&la[grp[j]]);
        } else if (kind == 2) {     /* reduce_scatter + all_gather of balanced pieces */
            int64_t B = bf_numel(&la[r]), p = B / n + (pos < B % n);
            v = (n - 1) * p + (B - p);
        } else if (kind == 3) {     /* its piece from every other member */
            v = (n - 1) * bf_numel(&lb[r]);
        } else if (kind == 4) {     /* the elements of its new shard it did not hold */
            v = bf_numel(&lb[r]) - bf_overlap(b, &la[r], &lb[r]);
        }
        total += v * (int64_t)b->es;
    }
    return total;
}

static void bf_dfs(bf *b, lt_placement *pl, uint64_t cost, int depth) {
    long key = bf_key(b, pl);
    if (cost > b->found || b->best[key] < cost || (b->best[key] == cost && b->bestdepth[key] <= depth)) return;
    b->best[key] = cost;
    b->bestdepth[key] = depth;
    if (lt_placements_equal(pl, b->dst, b->m->ndim)) {
        if (cost < b->found) b->found = cost;
        return;
    }
    if (depth == b->maxdepth) return;
    const lt_rank_layout *la = bf_state(b, pl);
    for (int i = 0; i < b->m->ndim; i++)
        for (int c = 0; c < b->nc[i]; c++) {
            const lt_placement *t = &b->cand[i][c];
            if (lt_placement_equal(t, &pl[i])) continue;
            int kind = bf_step(b, pl, i, t);
            if (!kind) continue;
            lt_placement nx[LT_MESH_MAX_DIMS];
            memcpy(nx, pl, sizeof(lt_placement) * (size_t)b->m->ndim);
            nx[i] = *t;
            const lt_rank_layout *lb = bf_state(b, nx);
            if (!lb) continue;
            bf_dfs(b, nx, cost + (uint64_t)bf_bytes(b, la, lb, i, kind), depth + 1);
        }
}

static uint64_t brute_force(const lt_mesh *m, int ndim, const int64_t *shape, const lt_placement *sp,
                            const lt_placement *dp) {
    bf *b = calloc(1, sizeof *b);
    b->m = m;
    b->ndim = ndim;
    b->shape = shape;
    b->es = 4;
    b->src = sp;
    b->dst = dp;
    b->nstates = 1;
    for (int i = 0; i < m->ndim; i++) {
        b->frozen[i] = sp[i].kind == LT_PL_PARTIAL && lt_placement_equal(&sp[i], &dp[i]);
        bf_add(b, i, sp[i]);
        if (!b->frozen[i]) {
            bf_add(b, i, dp[i]);
            bf_add(b, i, lt_replicate());
            for (int d = 0; d < ndim; d++) bf_add(b, i, lt_shard(d));
            for (int e = 0; e < 2; e++) {
                const lt_placement *p = e ? &dp[i] : &sp[i];
                if (p->kind == LT_PL_SHARD && p->rule.kind != LT_SPLIT_CHUNK)
                    for (int d = 0; d < ndim; d++) bf_add(b, i, lt_shard_rule(d, p->rule));
            }
        }
        b->nstates *= b->nc[i];
    }
    b->valid = malloc((size_t)b->nstates);
    memset(b->valid, -1, (size_t)b->nstates);
    b->lay = calloc((size_t)b->nstates * (size_t)m->world, sizeof(lt_rank_layout));
    b->best = malloc(sizeof(uint64_t) * (size_t)b->nstates);
    b->bestdepth = malloc(sizeof(int) * (size_t)b->nstates);
    for (long k = 0; k < b->nstates; k++) {
        b->best[k] = UINT64_MAX;
        b->bestdepth[k] = 1 << 30;
    }
    b->found = UINT64_MAX;
    b->maxdepth = 3 * m->ndim + 2;
    lt_placement pl[LT_MESH_MAX_DIMS];
    memcpy(pl, sp, sizeof(lt_placement) * (size_t)m->ndim);
    bf_dfs(b, pl, 0, 0);
    uint64_t f = b->found;
    for (long k = 0; k < b->nstates * m->world; k++) lt_rank_layout_free(&b->lay[k]);
    free(b->lay);
    free(b->valid);
    free(b->best);
    free(b->bestdepth);
    free(b);
    return f;
}

static void optimality(const char *mesh_s, int ndim, const int64_t *shape, long cap, int *best_gap_out,
                       char *example, size_t exn) {
    lt_mesh m = mk_mesh(mesh_s);
    lt_placement o[24], sp[8], dp[8], tmp[8];
    int nopt = mesh_dim_options(ndim, LT_SPLIT_BALANCED, o);
    long nlist = 1;
    for (int i = 0; i < m.ndim; i++) nlist *= nopt;
    long npairs = nlist * nlist, todo = cap && cap < npairs ? cap : npairs;
    uint64_t seed = 12345;
    for (long q = 0; q < todo; q++) {
        long pair = todo == npairs ? q : (long)(lcg(&seed) % (uint64_t)npairs);
        decode_list(pair / nlist, o, nopt, m.ndim, sp);
        decode_list(pair % nlist, o, nopt, m.ndim, dp);
        if (lt_placements_check(&m, ndim, sp, m.ndim, tmp) || lt_layout_check(&m, ndim, shape, sp) ||
            lt_placements_check(&m, ndim, dp, m.ndim, tmp) || lt_layout_check(&m, ndim, shape, dp) ||
            expect_reject(&m, sp, dp))
            continue;
        lt_redistribute_opts o1 = {0}, o2 = {0};
        o2.planner = LT_PLANNER_GREEDY;
        lt_plan *pc, *pg;
        LT_CHECK(lt_plan_redistribute(&m, LT_F32, ndim, shape, sp, dp, m.ndim, &o1, &pc));
        LT_CHECK(lt_plan_redistribute(&m, LT_F32, ndim, shape, sp, dp, m.ndim, &o2, &pg));
        uint64_t want = brute_force(&m, ndim, shape, sp, dp);
        char a[256], b[256];
        if (pc->total_bytes != want)
            fail_msg("%s %s -> %s: min-cost moves %zu bytes, brute force finds %llu", mesh_s, fmt_pl(sp, m.ndim, a, 256),
                     fmt_pl(dp, m.ndim, b, 256), pc->total_bytes, (unsigned long long)want);
        if (pg->total_bytes < pc->total_bytes) fail_msg("greedy beats min-cost");
        int gap = (int)(pg->total_bytes - pc->total_bytes);
        if (gap > *best_gap_out) {
            *best_gap_out = gap;
            snprintf(example, exn, "%s (%lld, %lld) %s -> %s: greedy %zu bytes in %d collectives, min-cost %zu bytes in %d",
                     mesh_s, (long long)shape[0], (long long)(ndim > 1 ? shape[1] : 0), fmt_pl(sp, m.ndim, a, 256),
                     fmt_pl(dp, m.ndim, b, 256), pg->total_bytes, pg->ncomm, pc->total_bytes, pc->ncomm);
        }
        lt_plan_free(pc);
        lt_plan_free(pg);
    }
}

static void test_min_cost_optimal(void **state) {
    (void)state;
    char ex[1024] = "";
    int gap = 0;
    const int64_t s57[] = {5, 7}, s84[] = {8, 4}, s6[] = {6};
    optimality("2x2", 2, s57, 0, &gap, ex, sizeof ex);
    optimality("2x2", 2, s84, 1500, &gap, ex, sizeof ex);
    optimality("2x2x2", 1, s6, 600, &gap, ex, sizeof ex);
    optimality("2x2x2", 2, s57, 500, &gap, ex, sizeof ex);
    print_message("largest min-cost win: %s\n", ex);
    assert_true(gap > 0);
}

static int teardown(void **state) {
    (void)state;
    lt_plan_cache_clear();
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_min_cost_optimal),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
