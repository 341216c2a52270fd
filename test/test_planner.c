/* test/test_planner.c — the min-cost planner is minimal over the complete
 * move set: on every pair of the 2x2 and 2x2x2 sweeps (SS with factors 2,
 * 3 and 4, uneven chunk/balanced/last and explicit splits, Partial, shapes
 * that divide and that do not; pairs drawn where a sweep is too wide) its
 * (bytes, steps) equal those of an independent brute force
 * (test/planner_bruteforce.h) over the layouts of every placement list and
 * every collective with every argument; every mismatch is printed with
 * the brute force's route (the first 20) and fails the test. It also never moves more
 * bytes than greedy, and the cases of the hardening issue plan as worked
 * out by hand. Execution and verification of every planned state is
 * test_redistribute.c's sweep. */
#include "kernels/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/redistribute_testutil.h"

#include "test/planner_bruteforce.h"
#include "localtensor/plan/plan_impl.h"


typedef struct counts {
    long pairs;        /* compared with the brute force */
    long mismatches; /* pairs where min-cost differs from the brute force (the first 20 printed) */
    long skipped;      /* invalid lists or rejected transitions */
    long beats_greedy; /* pairs where min-cost moves fewer bytes than greedy */
    long beats_collectives; /* --moves all: pairs cheaper than under collectives */
} counts;

/* The least (bytes, steps) of sp -> dp by the brute force (f32). */
static bf_result brute_force(const lt_mesh *m, int ndim, const int64_t *shape,
                             const lt_placement *sp, const lt_placement *dp) {
    return bf_solve(m, ndim, shape, 4, 1, sp, dp);
}

/* The cost options of the sweeps' pairs (NULL: bytes over the collectives,
 * check_pair's own comparison; else check_cost_pair). */
static const lt_plan_cost *sweep_cost;

/* Plan p's cost under objective o, summed from its steps as plan.h defines
 * it (the bytes total, the busiest rank's bytes, or the time on t). */
static int64_t objective_cost(const lt_plan *p, lt_objective o, const lt_topology *t) {
    if (o == LT_OBJECTIVE_BYTES) return (int64_t)p->total_bytes;
    if (o == LT_OBJECTIVE_MAX_RANK_BYTES) return (int64_t)lt_plan_max_rank_bytes(p);
    return (int64_t)lt_plan_time_ps(p, t);
}

/* 1 when plan p issues a collective PyTorch DTensor does not. */
static int has_non_dtensor_step(const lt_plan *p) {
    for (int s = 0; s < p->nsteps; s++) {
        lt_coll k = p->steps[s].coll;
        if (p->steps[s].comm && k != LT_COLL_ALL_GATHER && k != LT_COLL_ALL_TO_ALL &&
            k != LT_COLL_ALL_REDUCE && k != LT_COLL_REDUCE_SCATTER)
            return 1;
    }
    return 0;
}

/* check_pair under sweep_cost: the plan's (cost, bytes, steps) equal the
 * brute force's under the same objective and move set; under dtensor no
 * other collective is planned and greedy (PyTorch's order, whose steps
 * DTensor issues) costs at least as much. */
static void check_cost_pair(const lt_mesh *m, int ndim, const int64_t *shape,
                            const lt_placement *sp, const lt_placement *dp, counts *k) {
    const lt_plan_cost *pc = sweep_cost;
    lt_spec a, b;
    LT_CHECK(lt_spec_init(m, LT_F32, ndim, shape, sp, m->ndim, &a));
    LT_CHECK(lt_spec_init(m, LT_F32, ndim, shape, dp, m->ndim, &b));
    lt_plan *p, *pg;
    LT_CHECK(lt_plan_redistribute_cost(&a, &b, pc, &p));
    lt_redistribute_opts og = {0};
    og.planner = LT_PLANNER_GREEDY;
    LT_CHECK(lt_plan_redistribute(m, LT_F32, ndim, shape, sp, dp, m->ndim, &og, &pg));
    bf_obj = (int)pc->objective;
    bf_dtensor = pc->moves == LT_MOVES_DTENSOR;
    bf_all = pc->moves == LT_MOVES_ALL;
    bf_topo = pc->topo;
    bf_result want = expect_zero_fill(m, sp, dp) ? bf_solve_zero_fill(m, ndim, shape, 4, 1, sp, dp)
                                                 : brute_force(m, ndim, shape, sp, dp);
    bf_obj = bf_dtensor = bf_all = 0;
    int64_t got = objective_cost(p, pc->objective, &pc->topo);
    char x[256], y[256], ms[64], ss[64];
    if (p->search_truncated || want.bytes < 0 || got != want.cost ||
        (int64_t)p->total_bytes != want.bytes || p->nsteps != want.steps) {
        if (k->mismatches++ < 20)
            print_message("MISMATCH (%s, %s) mesh %s, shape %s: %s -> %s: min-cost (%lld, %zu B, "
                          "%d steps)%s, brute force (%lld, %lld B, %d): %s\n",
                          lt_objective_name(pc->objective), lt_moveset_name(pc->moves),
                          lt_mesh_format(m, ms, sizeof ms),
                          lt_shape_format(ndim, shape, ss, sizeof ss), fmt_pl(sp, m->ndim, x, 256),
                          fmt_pl(dp, m->ndim, y, 256), (long long)got, p->total_bytes, p->nsteps,
                          p->search_truncated ? " (truncated)" : "", (long long)want.cost,
                          (long long)want.bytes, want.steps, want.path);
    }
    if (pc->moves == LT_MOVES_DTENSOR) {
        if (has_non_dtensor_step(p))
            fail_msg("--moves dtensor planned a collective DTensor does not issue: %s -> %s",
                     fmt_pl(sp, m->ndim, x, 256), fmt_pl(dp, m->ndim, y, 256));
        if (!has_non_dtensor_step(pg) && objective_cost(pg, pc->objective, &pc->topo) < got)
            fail_msg("%s -> %s: greedy costs less than --moves dtensor",
                     fmt_pl(sp, m->ndim, x, 256), fmt_pl(dp, m->ndim, y, 256));
        k->beats_greedy += objective_cost(pg, pc->objective, &pc->topo) > got;
    }
    if (pc->moves == LT_MOVES_ALL) {   /* all holds collectives' moves: never dearer */
        lt_plan_cost co = *pc;
        co.moves = LT_MOVES_COLLECTIVES;
        lt_plan *pcol;
        LT_CHECK(lt_plan_redistribute_cost(&a, &b, &co, &pcol));
        int64_t cc = objective_cost(pcol, pc->objective, &pc->topo);
        if (cc < got)
            fail_msg("%s -> %s: --moves all costs more than collectives",
                     fmt_pl(sp, m->ndim, x, 256), fmt_pl(dp, m->ndim, y, 256));
        k->beats_collectives += cc > got;
        lt_plan_free(pcol);
    }
    k->pairs++;
    lt_plan_free(p);
    lt_plan_free(pg);
}

/* Plans sp -> dp with both planners and compares min-cost with the brute
 * force. Skips (and counts) pairs that are not valid redistributes. */
static void check_pair(const lt_mesh *m, int ndim, const int64_t *shape, const lt_placement *sp,
                       const lt_placement *dp, counts *k) {
    lt_placement tmp[LT_MESH_MAX_DIMS];
    if (lt_placements_check(m, ndim, sp, m->ndim, tmp) || lt_layout_check(m, ndim, shape, sp) ||
        lt_placements_check(m, ndim, dp, m->ndim, tmp) || lt_layout_check(m, ndim, shape, dp) ||
        expect_reject(m, sp, dp)) {
        k->skipped++;
        return;
    }
    if (sweep_cost) {
        check_cost_pair(m, ndim, shape, sp, dp, k);
        return;
    }
    /* the brute force reads integer R -> P(sum) as rejected too; f32 here */
    lt_redistribute_opts o1 = {0}, o2 = {0};
    o1.no_cache = o2.no_cache = 1;
    o2.planner = LT_PLANNER_GREEDY;
    lt_plan *pc, *pg;
    LT_CHECK(lt_plan_redistribute(m, LT_F32, ndim, shape, sp, dp, m->ndim, &o1, &pc));
    LT_CHECK(lt_plan_redistribute(m, LT_F32, ndim, shape, sp, dp, m->ndim, &o2, &pg));
    bf_result want = expect_zero_fill(m, sp, dp) ? bf_solve_zero_fill(m, ndim, shape, 4, 1, sp, dp)
                                                 : brute_force(m, ndim, shape, sp, dp);
    char a[256], c[256], ms[64], ss[64];
    if (pc->search_truncated || want.bytes < 0 || (int64_t)pc->total_bytes != want.bytes ||
        pc->nsteps != want.steps) {
        if (k->mismatches++ < 20)
            print_message("MISMATCH mesh %s, shape %s: %s -> %s: min-cost plans %zu bytes in %d "
                          "steps%s, the brute force "
                          "finds %lld bytes in %d: %s\n",
                          lt_mesh_format(m, ms, sizeof ms),
                          lt_shape_format(ndim, shape, ss, sizeof ss), fmt_pl(sp, m->ndim, a, 256),
                          fmt_pl(dp, m->ndim, c, 256), pc->total_bytes, pc->nsteps,
                          pc->search_truncated ? " (truncated)" : "", (long long)want.bytes,
                          want.steps, want.path);
    }
    if (pg->total_bytes < pc->total_bytes)
        fail_msg("%s -> %s: greedy moves %zu bytes, min-cost %zu", fmt_pl(sp, m->ndim, a, 256),
                 fmt_pl(dp, m->ndim, c, 256), pg->total_bytes, pc->total_bytes);
    k->beats_greedy += pg->total_bytes > pc->total_bytes;
    k->pairs++;
    lt_plan_free(pc);
    lt_plan_free(pg);
}

/* Every pair (or `cap` pairs drawn at random) of lists built from the
 * per-mesh-dim options o[nopt]. */
static void sweep(const char *mesh_s, int ndim, const int64_t *shape, const lt_placement *o,
                  int nopt, long cap, counts *k) {
    lt_mesh m = mk_mesh(mesh_s);
    lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
    long nlist = 1;
    for (int i = 0; i < m.ndim; i++) nlist *= nopt;
    long npairs = nlist * nlist, todo = cap && cap < npairs ? cap : npairs;
    uint64_t seed = 0x5eedULL + (uint64_t)(nlist * 31 + ndim);
    for (long q = 0; q < todo; q++) {
        long pair = todo == npairs ? q : (long)(lcg(&seed) % (uint64_t)npairs);
        decode_list(pair / nlist, o, nopt, m.ndim, sp);
        decode_list(pair % nlist, o, nopt, m.ndim, dp);
        check_pair(&m, ndim, shape, sp, dp, k);
    }
}

static void rule_sweep(const char *mesh_s, int ndim, const int64_t *shape, lt_split_kind rule,
                       long cap, counts *k) {
    lt_placement o[24];
    int nopt = mesh_dim_options(ndim, rule, o);
    sweep(mesh_s, ndim, shape, o, nopt, cap, k);
}

/* ---- the cases of the hardening issue, worked out by hand -------------------------------------
 */

/* One planned step, executed and checked against the direct reshard (every
 * intermediate) and against distributing the full tensor with dst. */
static lt_plan *run_checked(const lt_mesh *m, int ndim, const int64_t *shape, const char *from,
                            const char *to) {
    lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
    parse_pl(from, sp);
    parse_pl(to, dp);
    lt_dtensor *src = mk(m, LT_F32, ndim, shape, sp), *out, *exp = mk(m, LT_F32, ndim, shape, dp);
    lt_redistribute_opts o = {0};
    o.verify = 1;
    lt_plan *p;
    LT_CHECK(lt_redistribute(src, dp, m->ndim, &o, &out, &p));
    expect_same_shards(out, exp, to);
    lt_dtensor_free(out);
    lt_dtensor_free(exp);
    lt_dtensor_free(src);
    return p;
}

static void test_issue_cases(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("dp=2,tp=2");
    const int64_t s13[] = {13};
    /* [SS(0,2), S(0)] of 13: SS(0,2) on dp cuts [0..6] and [7..12] into
     * halves by the chunk rule, dp 0 keeps [0..3] + [7..9], dp 1 [4..6] +
     * [10..12]; S(0) on tp then gives (dp,tp) = (0,0) [0..3], (0,1) [7..9],
     * (1,0) [4..6], (1,1) [10..12]. [R, S(0)] wants tp 0 to hold [0..6] and
     * tp 1 [7..12]: one all_gather along dp, each rank receiving its dp
     * partner's shard: 3 + 3 + 4 + 3 = 13 elements, 52 bytes; at most 4
     * elements (16 bytes) per rank. */
    lt_plan *p = run_checked(&m, 1, s13, "SS(0,2),S(0)", "R,S(0)");
    assert_int_equal(p->nsteps, 1);
    assert_int_equal(p->ncomm, 1);
    assert_int_equal(p->steps[0].coll, LT_COLL_ALL_GATHER);
    assert_int_equal(p->steps[0].mesh_dim, 0);
    assert_int_equal(p->total_bytes, 52);
    assert_int_equal(p->steps[0].bytes_per_rank, 16);
    lt_plan_free(p);
    /* and back: every rank's new shard is part of what it holds (tp 0's
     * [0..6] holds [0..3] and [4..6]): a local slice, no bytes */
    p = run_checked(&m, 1, s13, "R,S(0)", "SS(0,2),S(0)");
    assert_int_equal(p->nsteps, 1);
    assert_int_equal(p->ncomm, 0);
    assert_int_equal(p->total_bytes, 0);
    assert_string_equal(p->steps[0].collective, "none");
    lt_plan_free(p);
    /* greedy keeps PyTorch's route (through R) */
    lt_placement sp[2], dp[2];
    parse_pl("SS(0,2),S(0)", sp);
    parse_pl("R,S(0)", dp);
    lt_redistribute_opts g = {0};
    g.planner = LT_PLANNER_GREEDY;
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 1, s13, sp, dp, 2, &g, &p));
    assert_true(p->total_bytes > 52);
    lt_plan_free(p);
    /* the brute force agrees */
    counts k = {0};
    check_pair(&m, 1, s13, sp, dp, &k);
    check_pair(&m, 1, s13, dp, sp, &k);
    assert_int_equal(k.pairs, 2);
    assert_int_equal(k.mismatches, 0);
}

/* Moves beyond the rule table, each worked out by hand. */
static void test_new_moves(void **state) {
    (void)state;
    lt_mesh m2 = mk_mesh("2");
    const int64_t s8[] = {8}, s6[] = {6};
    /* S(0) -> SS(0,2) on 8 over 2: rank 0 holds [0..3] and wants [0,1,4,5]:
     * one all_to_all splitting dim 0 in halves, 2 elements each way */
    lt_plan *p = run_checked(&m2, 1, s8, "S(0)", "SS(0,2)");
    assert_int_equal(p->nsteps, 1);
    assert_int_equal(p->steps[0].coll, LT_COLL_ALL_TO_ALL);
    assert_int_equal(p->total_bytes, 2 * 2 * 4);
    lt_plan_free(p);
    /* SS(0,2) -> S(0) on 6: rank 0 holds [0,1,3,4], rank 1 [2,5]; the chunk
     * rule cuts 4 into 2+2 and 2 into 1+1: rank 0 gets [0,1]+[2], rank 1
     * [3,4]+[5]: one all_to_all, 1 + 2 elements */
    p = run_checked(&m2, 1, s6, "SS(0,2)", "S(0)");
    assert_int_equal(p->nsteps, 1);
    assert_int_equal(p->steps[0].coll, LT_COLL_ALL_TO_ALL);
    assert_int_equal(p->total_bytes, 3 * 4);
    lt_plan_free(p);
    /* S(0) -> S(0,[6,0]) on 6: rank 1's 3 elements to rank 0 only: a gather
     * (an all_gather would also send rank 0's 3 to rank 1) */
    p = run_checked(&m2, 1, s6, "S(0)", "S(0,[6,0])");
    assert_int_equal(p->nsteps, 1);
    assert_int_equal(p->steps[0].coll, LT_COLL_GATHER);
    assert_int_equal(p->total_bytes, 3 * 4);
    lt_plan_free(p);
    /* and back to uneven sizes [2,4]: rank 0 sends 4 elements to rank 1, a
     * scatter (an all_to_all cannot cut rank 1's empty shard into [2,4]) */
    p = run_checked(&m2, 1, s6, "S(0,[6,0])", "S(0,[2,4])");
    assert_int_equal(p->nsteps, 1);
    assert_int_equal(p->steps[0].coll, LT_COLL_SCATTER);
    assert_int_equal(p->total_bytes, 4 * 4);
    lt_plan_free(p);
    /* [S(0), S(0)] -> [R, SS(0,2)] of 8 on 2x2: (dp,tp) holds [4dp+2tp, +2);
     * one all_gather along dp leaves tp 0 with [0,1,4,5] and tp 1 with
     * [2,3,6,7], which is [R, SS(0,2)]: one step changes the placements of
     * both mesh dims; 2 elements to each rank */
    lt_mesh m22 = mk_mesh("2x2");
    p = run_checked(&m22, 1, s8, "S(0),S(0)", "R,SS(0,2)");
    assert_int_equal(p->nsteps, 1);
    assert_int_equal(p->steps[0].coll, LT_COLL_ALL_GATHER);
    assert_int_equal(p->steps[0].mesh_dim, 0);
    assert_int_equal(p->total_bytes, 4 * 2 * 4);
    lt_plan_free(p);
}

/* [S(0), S(0)] -> [R, S(0)] of 8 on 2x2, where the cheapest route passes
 * through a layout neither end has. Ranks r = (dp, tp) hold [4dp + 2tp,
 * +2): r0 [0,1], r1 [2,3], r2 [4,5], r3 [6,7]; tp 0 wants [0..3], tp 1
 * [4..7]. Through [R, SS(0,2)]: an all_gather along dp gives tp 0 [0,1,4,5]
 * and tp 1 [2,3,6,7] (SS(0,2) of 8: halves [0..3] and [4..7], member c
 * keeps chunk c of each), every rank receiving its partner's 2 elements
 * (4 x 2 x 4 = 32 bytes); an all_to_all along tp then swaps 2 elements each
 * way within each pair (tp 0 of dp 0 gives [4,5], takes [2,3]): 32 bytes
 * more, 64 in all. Going through R instead (PyTorch's route) takes 96: 32
 * along tp to [S(0), R], then 4 elements to every rank along dp. Less than
 * 64 is impossible: the ranks lack 12 elements (48 bytes), and reaching
 * that bound needs r1's [2,3] to go to r0 in a step where r1 receives
 * nothing; along tp only a gather to tp 0 does that, and the same gather
 * hands r3's [6,7] to r2, which does not want them; the rest of the gap
 * (no plan of 52 to 60 bytes either) is the brute force's, over every
 * layout and every collective. */
static void test_nested_through_strided(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("2x2");
    const int64_t s8[] = {8};
    lt_plan *p = run_checked(&m, 1, s8, "S(0),S(0)", "R,S(0)");
    assert_int_equal(p->total_bytes, 64);
    assert_int_equal(p->nsteps, 2);
    assert_int_equal(p->ncomm, 2);
    lt_plan_free(p);
    lt_placement sp[2], dp[2];
    parse_pl("S(0),S(0)", sp);
    parse_pl("R,S(0)", dp);
    bf_result want = brute_force(&m, 1, s8, sp, dp);
    assert_int_equal(want.bytes, 64);
    assert_int_equal(want.steps, 2);
    lt_redistribute_opts g = {0};
    g.planner = LT_PLANNER_GREEDY;
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 1, s8, sp, dp, 2, &g, &p));
    assert_int_equal(p->total_bytes, 96);
    lt_plan_free(p);
}

/* Size-1 mesh dims: whatever they carry (a `last` or explicit-sizes rule
 * included) is the whole tensor, so an intermediate state shows them as the
 * source's, the destination's or R, whichever is valid on every rank. Every
 * pair of valid lists plans with both planners and runs verified; the first
 * case is the one where min-cost once showed [SS(1,2), SS(2,2), S(2,last)],
 * which no rank of (1, 0, 0) can compute (a `last` split of 0 elements). */
static void test_size_one_mesh_dims(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("3x4x1");
    const int64_t s842[] = {8, 4, 2};
    lt_plan_free(run_checked(&m, 3, s842, "P(sum),R,S(2,last)", "SS(1,2),SS(2,2),S(2)"));
    lt_split_rule last = lt_split_chunk(), e1;
    last.kind = LT_SPLIT_LAST;
    LT_CHECK(lt_split_explicit((int64_t[]){2}, 1, &e1));
    lt_placement o[7] = {lt_replicate(),
                         lt_shard(0),
                         lt_shard_rule(0, last),
                         lt_shard_rule(0, e1),
                         lt_partial(LT_REDOP_SUM),
                         lt_strided(0, 2),
                         lt_shard(1)};
    const char *meshes[] = {"4x1", "1x3", "2x1x2"};
    const int64_t s23[] = {2, 3};
    long ran = 0;
    for (int q = 0; q < 3; q++) {
        lt_mesh mm = mk_mesh(meshes[q]);
        long nlist = 1;
        for (int i = 0; i < mm.ndim; i++) nlist *= 7;
        for (long a = 0; a < nlist; a++)
            for (long b = 0; b < nlist; b++) {
                lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS], tmp[LT_MESH_MAX_DIMS];
                decode_list(a, o, 7, mm.ndim, sp);
                decode_list(b, o, 7, mm.ndim, dp);
                if (lt_placements_check(&mm, 2, sp, mm.ndim, tmp) ||
                    lt_layout_check(&mm, 2, s23, sp) ||
                    lt_placements_check(&mm, 2, dp, mm.ndim, tmp) ||
                    lt_layout_check(&mm, 2, s23, dp) || expect_reject(&mm, sp, dp))
                    continue;
                lt_dtensor *src = mk(&mm, LT_F32, 2, s23, sp);
                for (int pl = 0; pl < 2; pl++) {
                    lt_redistribute_opts ro = {0};
                    ro.verify = 1;
                    ro.planner = pl ? LT_PLANNER_GREEDY : LT_PLANNER_MIN_COST;
                    lt_dtensor *out = NULL;
                    char x[256], y[256];
                    lt_status st = lt_redistribute(src, dp, mm.ndim, &ro, &out, NULL);
                    if (st)
                        fail_msg("mesh %s: %s -> %s (%s): %s", meshes[q],
                                 fmt_pl(sp, mm.ndim, x, 256), fmt_pl(dp, mm.ndim, y, 256),
                                 lt_planner_name(ro.planner), lt_errmsg());
                    lt_dtensor_free(out);
                    ran++;
                }
                lt_dtensor_free(src);
            }
    }
    assert_true(ran > 500);
}

/* Every pair of the 2x2 and 2x2x2 sweeps against the brute force. */
static void test_min_cost_equals_brute_force(void **state) {
    (void)state;
    counts k = {0};
    const int64_t sh1[][1] = {{13}, {8}, {3}, {1}, {0}};
    const int64_t sh2[][2] = {{5, 7}, {8, 4}, {2, 3}, {0, 3}};
    const lt_split_kind rules[] = {LT_SPLIT_BALANCED, LT_SPLIT_LAST};
    for (int r = 0; r < 2; r++) {
        for (int s = 0; s < 5; s++) rule_sweep("2x2", 1, sh1[s], rules[r], 0, &k);
        for (int s = 0; s < 4; s++)
            rule_sweep("2x2", 2, sh2[s], rules[r], SANITIZED ? 300 : s < 2 ? 0 : 600, &k);
    }
    long n2 = k.pairs;
    /* explicit sizes, with empty pieces; nested (parent of 2 rows) or whole */
    lt_split_rule e1, e2;
    LT_CHECK(lt_split_explicit((int64_t[]){2, 0}, 2, &e1));
    LT_CHECK(lt_split_explicit((int64_t[]){1, 2}, 2, &e2));
    lt_placement o[7] = {lt_replicate(),       lt_shard(0),      lt_shard_rule(0, e1),
                         lt_shard_rule(1, e2), lt_strided(1, 2), lt_partial(LT_REDOP_SUM),
                         lt_shard(1)};
    const int64_t sh43[] = {4, 3}, sh23[] = {2, 3};
    sweep("2x2", 2, sh43, o, 7, SANITIZED ? 600 : 0, &k);
    sweep("2x2", 2, sh23, o, 7, SANITIZED ? 600 : 0, &k);
    /* SS with factors other than 2 (3 does not divide 12 or 13), next to
     * the three Shard rules */
    lt_split_rule bal = lt_split_chunk(), last = lt_split_chunk();
    bal.kind = LT_SPLIT_BALANCED;
    last.kind = LT_SPLIT_LAST;
    lt_placement oss[8] = {lt_replicate(),           lt_shard(0),           lt_shard_rule(0, bal),
                           lt_strided(0, 2),         lt_strided(0, 3),      lt_strided(0, 4),
                           lt_partial(LT_REDOP_SUM), lt_shard_rule(0, last)};
    const int64_t s12[] = {12}, s13[] = {13};
    sweep("2x2", 1, s12, oss, 8, SANITIZED ? 600 : 0, &k);
    sweep("2x2", 1, s13, oss, 8, SANITIZED ? 600 : 0, &k);
    long ne = k.pairs - n2;
    /* 2x2x2: every pair of 7 and of 8 elements, drawn pairs otherwise */
    const int64_t s7[] = {7}, s8[] = {8}, s57[] = {5, 7}, s84[] = {8, 4};
    rule_sweep("2x2x2", 1, s7, LT_SPLIT_BALANCED, SANITIZED ? 4000 : 0, &k);
    rule_sweep("2x2x2", 1, s8, LT_SPLIT_LAST, SANITIZED ? 2000 : 0, &k);
    sweep("2x2x2", 1, s7, oss, 7, SANITIZED ? 300 : 3000, &k);
    rule_sweep("2x2x2", 2, s57, LT_SPLIT_BALANCED, SANITIZED ? 100 : 600, &k);
    rule_sweep("2x2x2", 2, s84, LT_SPLIT_LAST, SANITIZED ? 100 : 300, &k);
    print_message("min-cost = brute force on %ld pairs (2x2: %ld, of which %ld with explicit sizes "
                  "or SS(0,3), SS(0,4); "
                  "2x2x2: %ld); %ld skipped as invalid or rejected; min-cost moved fewer bytes "
                  "than greedy on %ld\n",
                  k.pairs, n2 + ne, ne, k.pairs - n2 - ne, k.skipped, k.beats_greedy);
    print_message(
        "brute force: %ld universes of states (%ld states from %ld placement lists), %ld searches; "
        "%ld mismatches\n",
        bf_pool.universes, bf_pool.states, bf_pool.lists, bf_pool.searches, k.mismatches);
    assert_int_equal(k.mismatches, 0);
    assert_true(k.pairs > (SANITIZED ? 10000 : 35000) && k.beats_greedy > 0);
}

/* The sweeps of test_min_cost_equals_brute_force, thinned, under objective
 * o and move set mv: the pairs compared. */
static long cost_sweeps(const lt_plan_cost *pc, counts *k) {
    const int64_t s13[] = {13}, s8[] = {8}, s3[] = {3}, s57[] = {5, 7}, s23[] = {2, 3};
    const int64_t s7[] = {7}, s43[] = {4, 3};
    long before = k->pairs;
    sweep_cost = pc;
    rule_sweep("2x2", 1, s13, LT_SPLIT_BALANCED, 0, k);
    rule_sweep("2x2", 1, s8, LT_SPLIT_LAST, 0, k);
    rule_sweep("2x2", 1, s3, LT_SPLIT_BALANCED, 0, k);
    rule_sweep("2x2", 2, s57, LT_SPLIT_LAST, SANITIZED ? 200 : 6000, k);
    rule_sweep("2x2", 2, s23, LT_SPLIT_BALANCED, SANITIZED ? 200 : 6000, k);
    lt_split_rule e1, bal = lt_split_chunk();
    bal.kind = LT_SPLIT_BALANCED;
    LT_CHECK(lt_split_explicit((int64_t[]){2, 0}, 2, &e1));
    lt_placement o[8] = {lt_replicate(),        lt_shard(0),      lt_shard_rule(0, e1),
                         lt_shard_rule(0, bal), lt_strided(0, 2), lt_strided(0, 3),
                         lt_partial(LT_REDOP_SUM), lt_shard(1)};
    sweep("2x2", 2, s43, o, 8, SANITIZED ? 300 : 0, k);
    rule_sweep("2x2x2", 1, s7, LT_SPLIT_BALANCED, SANITIZED ? 300 : 10000, k);
    rule_sweep("2x2x2", 1, s8, LT_SPLIT_LAST, SANITIZED ? 200 : 6000, k);
    sweep("2x2x2", 1, s7, o, 7, SANITIZED ? 200 : 4000, k);
    sweep_cost = NULL;
    return k->pairs - before;
}

/* Every objective and move set against the brute force (its objectives
 * written from their definitions), time on both presets, at least 20,000
 * pairs each, no mismatch. Some pairs of 7 elements on 2x2x2 under dtensor
 * (such as [R, S(0), P(sum)] -> [P(max), R, S(0)]) are cheapest through
 * SS(0,3), a factor no mesh size gives (136 B against 140 B): the planner
 * spells every factor of a short dim under dtensor (plan_space.c). */
static void test_objectives_equal_brute_force(void **state) {
    (void)state;
    long per[LT_OBJECTIVE_COUNT + 1] = {0};
    counts k = {0};
    for (int mv = 0; mv < 2; mv++) {
        for (int ob = 0; ob <= LT_OBJECTIVE_COUNT; ob++) {
            lt_plan_cost pc;
            memset(&pc, 0, sizeof pc);
            pc.objective = ob < LT_OBJECTIVE_COUNT ? (lt_objective)ob : LT_OBJECTIVE_TIME;
            pc.moves = mv ? LT_MOVES_DTENSOR : LT_MOVES_COLLECTIVES;
            const char *topo = ob == LT_OBJECTIVE_COUNT ? "uniform" : "nvlink-ib";
            LT_CHECK(lt_topology_preset(topo, 3, &pc.topo));
            long n = cost_sweeps(&pc, &k);
            per[ob] += n;
            print_message("%s (%s%s%s): %ld pairs compared\n", lt_objective_name(pc.objective),
                          lt_moveset_name(pc.moves), pc.objective == LT_OBJECTIVE_TIME ? ", " : "",
                          pc.objective == LT_OBJECTIVE_TIME ? topo : "", n);
            assert_true(n >= (SANITIZED ? 1000 : 20000)); /* each objective and move set */
        }
    }
    print_message("%ld mismatches; dtensor plans cheaper than greedy's on %ld pairs\n",
                  k.mismatches, k.beats_greedy);
    assert_int_equal(k.mismatches, 0);
    for (int ob = 0; ob <= LT_OBJECTIVE_COUNT; ob++)
        assert_true(per[ob] >= (SANITIZED ? 2000 : 20000));
    assert_true(k.beats_greedy > 0);
}

/* --moves all against the brute force (its flattened groups and
 * permutations of all ranks written from the definition, bf_flat_edges):
 * every objective, time on both presets, at least 20,000 pairs each, no
 * mismatch. */
static void test_moves_all_equal_brute_force(void **state) {
    (void)state;
    counts k = {0};
    for (int ob = 0; ob <= LT_OBJECTIVE_COUNT; ob++) {
        lt_plan_cost pc;
        memset(&pc, 0, sizeof pc);
        pc.objective = ob < LT_OBJECTIVE_COUNT ? (lt_objective)ob : LT_OBJECTIVE_TIME;
        pc.moves = LT_MOVES_ALL;
        const char *topo = ob == LT_OBJECTIVE_COUNT ? "uniform" : "nvlink-ib";
        LT_CHECK(lt_topology_preset(topo, 3, &pc.topo));
        long n = cost_sweeps(&pc, &k);
        print_message("%s (all%s%s): %ld pairs compared\n", lt_objective_name(pc.objective),
                      pc.objective == LT_OBJECTIVE_TIME ? ", " : "",
                      pc.objective == LT_OBJECTIVE_TIME ? topo : "", n);
        assert_true(n >= (SANITIZED ? 1000 : 20000));
    }
    /* algorithms on 2x4 (groups of 8 flattened): all_gather direct on both
     * mesh dims (the group's too), all_reduce tree on mesh dim 0 only (the
     * group's: the default) */
    lt_plan_cost pa;
    memset(&pa, 0, sizeof pa);
    pa.objective = LT_OBJECTIVE_TIME;
    pa.moves = LT_MOVES_ALL;
    LT_CHECK(lt_topology_preset("nvlink-ib", 2, &pa.topo));
    pa.topo.algo[0][LT_COLL_ALL_GATHER] = pa.topo.algo[1][LT_COLL_ALL_GATHER] = LT_ALGO_DIRECT;
    pa.topo.algo[0][LT_COLL_ALL_REDUCE] = LT_ALGO_TREE;
    pa.topo.algo[1][LT_COLL_ALL_TO_ALL] = LT_ALGO_DIRECT;
    const int64_t s8[] = {8}, s7[] = {7};
    long before = k.pairs;
    sweep_cost = &pa;
    rule_sweep("2x4", 1, s8, LT_SPLIT_BALANCED, SANITIZED ? 100 : 3000, &k);
    rule_sweep("4x2", 1, s7, LT_SPLIT_LAST, SANITIZED ? 100 : 3000, &k);
    sweep_cost = NULL;
    print_message("time with algorithms (all): %ld pairs compared\n", k.pairs - before);
    print_message("moves all: %ld pairs, %ld mismatches; cheaper than collectives on %ld\n",
                  k.pairs, k.mismatches, k.beats_collectives);
    assert_int_equal(k.mismatches, 0);
    assert_true(k.beats_collectives > 0);
}

/* The time objective under per-collective algorithms (docs/SEMANTICS.md
 * §7) against the brute force, whose rounds are written there apart. On
 * groups of 2 every algorithm takes one round, so these sweeps use groups
 * of 4 (ring 3 rounds, tree 2, direct 1): mesh 4 and 2x4, both move sets. */
static void test_algorithms_equal_brute_force(void **state) {
    (void)state;
    counts k = {0};
    const int64_t s7[] = {7}, s8[] = {8}, s53[] = {5, 3};
    for (int mv = 0; mv < 2; mv++) {
        lt_plan_cost pc;
        memset(&pc, 0, sizeof pc);
        pc.objective = LT_OBJECTIVE_TIME;
        pc.moves = mv ? LT_MOVES_DTENSOR : LT_MOVES_COLLECTIVES;
        LT_CHECK(lt_topology_preset("nvlink-ib", 2, &pc.topo));
        pc.topo.algo[0][LT_COLL_ALL_REDUCE] = LT_ALGO_TREE;
        pc.topo.algo[0][LT_COLL_ALL_GATHER] = LT_ALGO_DIRECT;
        pc.topo.algo[1][LT_COLL_REDUCE_SCATTER] = LT_ALGO_TREE;
        pc.topo.algo[1][LT_COLL_ALL_TO_ALL] = LT_ALGO_DIRECT;
        pc.topo.algo[1][LT_COLL_GATHER] = LT_ALGO_RING;
        sweep_cost = &pc;
        rule_sweep("4", 1, s7, LT_SPLIT_BALANCED, 0, &k);
        rule_sweep("4", 1, s8, LT_SPLIT_LAST, 0, &k);
        rule_sweep("4", 2, s53, LT_SPLIT_BALANCED, SANITIZED ? 100 : 0, &k);
        rule_sweep("4", 2, s53, LT_SPLIT_LAST, SANITIZED ? 100 : 0, &k);
        rule_sweep("2x4", 1, s8, LT_SPLIT_BALANCED, SANITIZED ? 100 : 4000, &k);
        rule_sweep("4x2", 1, s7, LT_SPLIT_LAST, SANITIZED ? 100 : 4000, &k);
        sweep_cost = NULL;
    }
    print_message("time with algorithms: %ld pairs compared, %ld mismatches\n", k.pairs,
                  k.mismatches);
    assert_int_equal(k.mismatches, 0);
    assert_true(k.pairs > (SANITIZED ? 300 : 2000));
}

/* The 2x3 case of the cost model (docs/SEMANTICS.md §7): [S(0), S(1)] ->
 * [R, S(0)] of (10, 7) f32. By bytes min-cost plans gather (dp), all_to_all
 * (tp), all_gather (dp): 596 B, the busiest rank 60 + 64 + 112 = 236 B.
 * The obvious plan: all_gather
 * along dp (tp splits the 7 columns 3, 3, 1: a rank of tp 0 receives its
 * partner's 5 rows x 3 columns = 60 B), then all_to_all along tp (rows
 * split 4, 4, 2: tp 0 receives 4 rows x (3 + 1) columns = 64 B): 124 B on
 * the busiest rank and, on uniform (5 us, 25 GB/s), 1 round + 60 B (5 us +
 * 2.4 ns) plus 2 rounds + 64 B (10 us + 2.56 ns) = 15,004,960 ps. time and
 * max-rank-bytes must do at least that well, over every move set (all
 * holds the moves of collectives). */
static void test_objective_acceptance(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("dp=2,tp=3");
    const int64_t sh[] = {10, 7};
    lt_placement sp[2], dp[2];
    parse_pl("S(0),S(1)", sp);
    parse_pl("R,S(0)", dp);
    lt_spec a, b;
    LT_CHECK(lt_spec_init(&m, LT_F32, 2, sh, sp, 2, &a));
    LT_CHECK(lt_spec_init(&m, LT_F32, 2, sh, dp, 2, &b));
    lt_plan_cost pc;
    memset(&pc, 0, sizeof pc);
    LT_CHECK(lt_topology_preset("uniform", 2, &pc.topo));
    lt_plan *p;
    LT_CHECK(lt_plan_redistribute_cost(&a, &b, NULL, &p));
    assert_int_equal(p->total_bytes, 596);
    assert_int_equal(lt_plan_max_rank_bytes(p), 236);
    lt_plan_free(p);
    for (int o = LT_OBJECTIVE_MAX_RANK_BYTES; o <= LT_OBJECTIVE_TIME; o++)
        for (int mv = 0; mv < 3; mv++) {
            pc.objective = (lt_objective)o;
            pc.moves = mv == 2 ? LT_MOVES_ALL : mv ? LT_MOVES_DTENSOR : LT_MOVES_COLLECTIVES;
            LT_CHECK(lt_plan_redistribute_cost(&a, &b, &pc, &p));
            assert_true(lt_plan_max_rank_bytes(p) <= 124);
            assert_true(lt_plan_time_ps(p, &pc.topo) <= 15004960u);
            if (mv < 2) assert_false(has_non_dtensor_step(p));
            lt_plan_free(p);
        }
    /* options passed win over the thread's (the CLI sets those for a run) */
    pc.objective = LT_OBJECTIVE_TIME;
    pc.moves = LT_MOVES_COLLECTIVES;
    const lt_plan_cost *was = lt__plan_cost_swap(&pc);
    LT_CHECK(lt_plan_redistribute_cost(&a, &b, NULL, &p));
    lt__plan_cost_swap(was);
    assert_int_equal(p->total_bytes, 596);
    lt_plan_free(p);
}

/* run_checked under cost options pc (the thread's, as the CLI sets them). */
static lt_plan *run_cost_checked(const lt_plan_cost *pc, const lt_mesh *m, int ndim,
                                 const int64_t *shape, const char *from, const char *to) {
    const lt_plan_cost *was = lt__plan_cost_swap(pc);
    lt_plan *p = run_checked(m, ndim, shape, from, to);
    lt__plan_cost_swap(was);
    return p;
}

/* --moves all, worked out by hand on 2x2 (uniform: every mesh dim 5 us,
 * 25,000 B/us). [S(0), S(1)] -> [S(1), S(0)] of (4, 4) f32: rank (a, b)
 * holds rows [2a, 2a + 2) x columns [2b, 2b + 2) and wants rows [2b, ..) x
 * columns [2a, ..), rank (b, a)'s block: ranks 0 and 3 keep theirs, ranks
 * 1 and 2 swap 2 x 2 = 4 elements (16 B each): one permute over the four
 * ranks, 32 B, 16 B on the busiest rank, 1 round + 16 B = 5,000,640 ps.
 * Without flattened groups ranks 1 and 2 share no group, so each of their
 * elements crosses two steps: at least 64 B. */
static void test_moves_all_cases(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("2x2");
    lt_plan_cost pc;
    memset(&pc, 0, sizeof pc);
    pc.objective = LT_OBJECTIVE_TIME;
    pc.moves = LT_MOVES_ALL;
    LT_CHECK(lt_topology_preset("uniform", 2, &pc.topo));
    const int64_t s44[] = {4, 4};
    lt_plan *p = run_cost_checked(&pc, &m, 2, s44, "S(0),S(1)", "S(1),S(0)");
    assert_int_equal(p->nsteps, 1);
    assert_int_equal(p->steps[0].coll, LT_COLL_PERMUTE);
    assert_int_equal(p->steps[0].mesh_dim, 0);
    assert_int_equal(p->steps[0].mesh_span, 2);
    assert_int_equal(p->total_bytes, 32);
    assert_int_equal(p->steps[0].bytes_per_rank, 16);
    assert_int_equal(lt_plan_time_ps(p, &pc.topo), 5000640);
    lt_trace *tr;   /* on paper: one event over the group of 4 */
    lt_trace_event e;
    LT_CHECK(lt_trace_new(4, &tr));
    LT_CHECK(lt_plan_trace(p, tr));
    assert_int_equal(lt_trace_count(tr), 1);
    LT_CHECK(lt_trace_get(tr, 0, &e));
    assert_int_equal(e.group_size, 4);
    assert_int_equal(e.ngroups, 1);
    assert_true(e.recv[0] == 0 && e.recv[1] == 16 && e.recv[2] == 16 && e.recv[3] == 0);
    lt_trace_free(tr);
    lt_plan_free(p);
    pc.moves = LT_MOVES_COLLECTIVES;
    p = run_cost_checked(&pc, &m, 2, s44, "S(0),S(1)", "S(1),S(0)");
    assert_true(p->total_bytes >= 64 && p->nsteps >= 2);
    lt_plan_free(p);
}

/* 2x2x2, (2, 2, 2) f32: [S(0), S(1), S(2)] gives rank (a, b, c) element
 * (a, b, c), [S(2), S(1), S(0)] wants (c, b, a): the ranks with a != c, 1 =
 * (0, 0, 1) <-> 4 = (1, 0, 0) and 3 <-> 6, swap one element (4 B): one
 * permute over the 8 ranks, 16 B; without it each of those elements
 * crosses two mesh dims: at least 32 B. */
static void test_moves_all_permute_3d(void **state) {
    (void)state;
    lt_mesh m3 = mk_mesh("2x2x2");
    const int64_t s222[] = {2, 2, 2};
    lt_plan_cost pc;
    memset(&pc, 0, sizeof pc);
    pc.objective = LT_OBJECTIVE_TIME;
    pc.moves = LT_MOVES_ALL;
    LT_CHECK(lt_topology_preset("uniform", 3, &pc.topo));
    lt_plan *p = run_cost_checked(&pc, &m3, 3, s222, "S(0),S(1),S(2)", "S(2),S(1),S(0)");
    assert_int_equal(p->nsteps, 1);
    assert_int_equal(p->steps[0].coll, LT_COLL_PERMUTE);
    assert_int_equal(p->steps[0].mesh_span, 3);
    assert_int_equal(p->total_bytes, 16);
    assert_int_equal(p->steps[0].bytes_per_rank, 4);
    lt_plan_free(p);
    pc.moves = LT_MOVES_COLLECTIVES;
    p = run_cost_checked(&pc, &m3, 3, s222, "S(0),S(1),S(2)", "S(2),S(1),S(0)");
    assert_true(p->total_bytes >= 32);
    lt_plan_free(p);
}

/* [S(0), S(0)] -> [R, R] of 8 f32 on 2x2 (uniform, as test_moves_all_cases):
 * each rank holds 2 elements (8 B) and lacks 6. By bytes, one all_gather
 * over the four ranks: 3 x 8 = 24 B each, 96 B (two all_gathers, dp then
 * tp, also move 8 + 16 B per rank: the fewer steps win), 3 rounds + 24 B =
 * 15,000,960 ps. By time, two rounds beat three: 1 round + 8 B, then 1
 * round + 16 B, 10,000,960 ps. */
static void test_moves_all_gather(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("2x2");
    lt_plan_cost pc;
    memset(&pc, 0, sizeof pc);
    LT_CHECK(lt_topology_preset("uniform", 2, &pc.topo));
    const int64_t s8[] = {8};
    pc.moves = LT_MOVES_ALL;
    pc.objective = LT_OBJECTIVE_BYTES;
    lt_plan *p = run_cost_checked(&pc, &m, 1, s8, "S(0),S(0)", "R,R");
    assert_int_equal(p->nsteps, 1);
    assert_int_equal(p->steps[0].coll, LT_COLL_ALL_GATHER);
    assert_int_equal(p->steps[0].mesh_span, 2);
    assert_int_equal(p->total_bytes, 96);
    assert_int_equal(p->steps[0].bytes_per_rank, 24);
    assert_int_equal(lt_plan_time_ps(p, &pc.topo), 15000960);
    lt_plan_free(p);
    /* the run's trace: one all_gather on mesh dim 0 over groups of 4; a plan
     * that said groups of 2 (mesh dim 0 alone) would not match it */
    lt_placement sp[2], dp[2];
    parse_pl("S(0),S(0)", sp);
    parse_pl("R,R", dp);
    lt_dtensor *src = mk(&m, LT_F32, 1, s8, sp), *out;
    lt_redistribute_opts o = {0};
    LT_CHECK(lt_comm_new(&m, &o.comm));
    const lt_plan_cost *was = lt__plan_cost_swap(&pc);
    LT_CHECK(lt_redistribute(src, dp, 2, &o, &out, &p));
    lt__plan_cost_swap(was);
    LT_CHECK(lt__plan_check_trace(p, lt_comm_trace(o.comm), 0));
    ((lt_plan_step *)&p->steps[0])->mesh_span = 1;
    LT_EXPECT_STATUS(lt__plan_check_trace(p, lt_comm_trace(o.comm), 0), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "groups of 2); the collective run says all_gather on "
                                        "mesh dim 0, 96 (24, groups of 4)"));
    lt_plan_free(p);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
    lt_comm_free(o.comm);
    pc.objective = LT_OBJECTIVE_TIME;
    p = run_cost_checked(&pc, &m, 1, s8, "S(0),S(0)", "R,R");
    assert_int_equal(p->nsteps, 2);
    assert_int_equal(p->total_bytes, 96);
    assert_true(p->steps[0].mesh_span <= 1 && p->steps[1].mesh_span <= 1);
    assert_int_equal(lt_plan_time_ps(p, &pc.topo), 10000960);
    lt_plan_free(p);
}

/* sp -> dp planned under cost options pc and run with verification (every
 * step against the direct reshard) on a communicator whose trace must match
 * the plan's bytes step by step (lt__plan_check_trace); the result's shards
 * also against distributing to dp when dp has no Partial (a Partial's terms
 * may be split either way). The plan (a new reference). */
static lt_plan *run_cost_verified(const lt_plan_cost *pc, const lt_mesh *m, int ndim,
                                  const int64_t *shape, const lt_placement *sp,
                                  const lt_placement *dp) {
    int partial = 0;
    for (int i = 0; i < m->ndim; i++) partial |= dp[i].kind == LT_PL_PARTIAL;
    lt_dtensor *src = mk(m, LT_F32, ndim, shape, sp), *out;
    lt_redistribute_opts o = {0};
    o.verify = 1;
    LT_CHECK(lt_comm_new(m, &o.comm));
    lt_plan *p;
    const lt_plan_cost *was = lt__plan_cost_swap(pc);
    LT_CHECK(lt_redistribute(src, dp, m->ndim, &o, &out, &p));
    lt__plan_cost_swap(was);
    LT_CHECK(lt__plan_check_trace(p, lt_comm_trace(o.comm), 0));
    lt_comm_free(o.comm);
    if (!partial) {
        lt_dtensor *exp = mk(m, LT_F32, ndim, shape, dp);
        expect_same_shards(out, exp, "moves all");
        lt_dtensor_free(exp);
    }
    lt_dtensor_free(out);
    lt_dtensor_free(src);
    return p;
}

/* Every pair of a 2x2 sweep and pairs drawn from a 2x2x2 one, planned
 * under --moves all (bytes, then max-rank-bytes) and run with verification
 * (run_cost_verified): each flattened collective and the permute over the
 * whole mesh must have run. */
static void test_moves_all_runs(void **state) {
    (void)state;
    long ran = 0, flat[LT_COLL_COUNT] = {0};
    lt_placement o[16], sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS], tmp[LT_MESH_MAX_DIMS];
    const char *meshes[2] = {"2x2", "2x2x2"};
    const int64_t shapes[2][2] = {{5, 7}, {7, 1}};
    for (int q = 0; q < 4; q++) {
        lt_mesh m = mk_mesh(meshes[q & 1]);
        int nd = q & 1 ? 1 : 2, nopt = mesh_dim_options(nd, LT_SPLIT_BALANCED, o);
        lt_plan_cost pc;
        memset(&pc, 0, sizeof pc);
        pc.objective = q < 2 ? LT_OBJECTIVE_BYTES : LT_OBJECTIVE_MAX_RANK_BYTES;
        pc.moves = LT_MOVES_ALL;
        long nlist = 1;
        for (int i = 0; i < m.ndim; i++) nlist *= nopt;
        long npairs = nlist * nlist, todo = q & 1 ? (SANITIZED ? 100 : 1500) : npairs;
        uint64_t seed = 0xa11ULL + (uint64_t)q;
        for (long x = 0; x < todo; x++) {
            long pair = todo == npairs ? x : (long)(lcg(&seed) % (uint64_t)npairs);
            decode_list(pair / nlist, o, nopt, m.ndim, sp);
            decode_list(pair % nlist, o, nopt, m.ndim, dp);
            const int64_t *sh = shapes[q & 1];
            if (lt_placements_check(&m, nd, sp, m.ndim, tmp) || lt_layout_check(&m, nd, sh, sp) ||
                lt_placements_check(&m, nd, dp, m.ndim, tmp) || lt_layout_check(&m, nd, sh, dp) ||
                expect_reject(&m, sp, dp))
                continue;
            lt_plan *p = run_cost_verified(&pc, &m, nd, sh, sp, dp);
            for (int s = 0; s < p->nsteps; s++)
                if (p->steps[s].mesh_span > 1) flat[p->steps[s].coll]++;
            ran++;
            lt_plan_free(p);
        }
    }
    print_message("moves all: %ld redistributes run and verified; flattened all_gather %ld, "
                  "all_to_all %ld, reduce_scatter %ld, all_reduce %ld, permute %ld\n",
                  ran, flat[LT_COLL_ALL_GATHER], flat[LT_COLL_ALL_TO_ALL],
                  flat[LT_COLL_REDUCE_SCATTER], flat[LT_COLL_ALL_REDUCE], flat[LT_COLL_PERMUTE]);
    assert_true(flat[LT_COLL_ALL_GATHER] && flat[LT_COLL_ALL_TO_ALL] &&
                flat[LT_COLL_REDUCE_SCATTER] && flat[LT_COLL_ALL_REDUCE] && flat[LT_COLL_PERMUTE]);
}

/* Every allocation of planning and running each kind of move fails in turn:
 * LT_NOMEM saying so, no output, nothing left allocated (kernels/alloc.h's
 * countdown). The source is distributed before arming. */
static void test_out_of_memory(void **state) {
    (void)state;
    const char *cases[][4] = {
        {"dp=2,tp=2", "13", "SS(0,2),S(0)", "R,S(0)"},   /* all_gather, reordered */
        {"dp=2,tp=2", "13", "R,S(0)", "SS(0,2),S(0)"},   /* local pick */
        {"2", "6", "S(0)", "S(0,[6,0])"},                /* gather */
        {"2", "6", "S(0,[6,0])", "S(0,[2,4])"},          /* scatter */
        {"2", "8", "S(0)", "SS(0,2)"},                   /* all_to_all */
        {"2x2", "5", "P(sum),S(0)", "S(0),R"},           /* reductions */
        {"2x2", "5", "S(0),R", "S(0),P(sum)"},           /* partition */
        {"2x2", "9", "S(0),S(0)", "P(sum),S(0)"},        /* gather, zero fill, slice */
    };
    long points = 0;
    for (size_t q = 0; q < sizeof cases / sizeof *cases; q++) {
        lt_mesh m = mk_mesh(cases[q][0]);
        int64_t shape[1] = {atoi(cases[q][1])};
        lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
        parse_pl(cases[q][2], sp);
        parse_pl(cases[q][3], dp);
        lt_dtensor *src = mk(&m, LT_F32, 1, shape, sp);
        lt_redistribute_opts o = {0};
        o.verify = 1;
        o.no_cache = 1;
        int completed = 0;
        for (int64_t n = 1; n < 100000 && !completed; n++) {
            lt_dtensor *out = NULL;
            lt__fault_arm(n, 0);
            lt_status st = lt_redistribute(src, dp, m.ndim, &o, &out, NULL);
            int fired = (int)lt__fault_fired(), had_out = out != NULL;
            lt_dtensor_free(out);
            int64_t live = lt__fault_live();
            lt__fault_disarm();
            if (!fired) {
                LT_CHECK(st);
                completed = 1;
            } else {
                points++;
                if (st != LT_NOMEM || !strstr(lt_errmsg(), "out of memory"))
                    fail_msg("%s -> %s, allocation %lld failing: %s: %s", cases[q][2], cases[q][3],
                             (long long)n, lt_status_name(st), lt_errmsg());
                if (had_out)
                    fail_msg("%s -> %s: a failed redistribute left its output set", cases[q][2],
                             cases[q][3]);
            }
            if (live != 0)
                fail_msg("%s -> %s, allocation %lld failing: %lld blocks left allocated",
                         cases[q][2], cases[q][3], (long long)n, (long long)live);
        }
        assert_true(completed);
        lt_dtensor_free(src);
    }
    print_message("out of memory: %ld failing allocations, each a clean error\n", points);
    assert_true(points > 100);
}

/* Under --moves all, every allocation of planning and running a permute
 * over the whole mesh and an all_gather over a flattened group fails in
 * turn: LT_NOMEM saying so, no output, nothing left allocated. */
static void test_moves_all_out_of_memory(void **state) {
    (void)state;
    const char *cases[][4] = {
        {"2x2", "S(0),S(1)", "S(1),S(0)", "4,4"},   /* permute over the whole mesh */
        {"2x2", "S(0),S(0)", "R,R", "8"},           /* all_gather over (0, 1) */
    };
    lt_plan_cost pc;
    memset(&pc, 0, sizeof pc);
    pc.objective = LT_OBJECTIVE_BYTES;
    pc.moves = LT_MOVES_ALL;
    long points = 0;
    for (size_t q = 0; q < sizeof cases / sizeof *cases; q++) {
        lt_mesh m = mk_mesh(cases[q][0]);
        int64_t shape[2] = {q ? 8 : 4, 4};
        int nd = q ? 1 : 2;
        lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
        parse_pl(cases[q][1], sp);
        parse_pl(cases[q][2], dp);
        lt_dtensor *src = mk(&m, LT_F32, nd, shape, sp);
        lt_redistribute_opts o = {0};
        o.verify = 1;
        o.no_cache = 1;
        const lt_plan_cost *was = lt__plan_cost_swap(&pc);
        int completed = 0;
        for (int64_t n = 1; n < 100000 && !completed; n++) {
            lt_dtensor *out = NULL;
            lt_plan *p = NULL;
            lt__fault_arm(n, 0);
            lt_status st = lt_redistribute(src, dp, m.ndim, &o, &out, &p);
            int fired = (int)lt__fault_fired(), had_out = out != NULL;
            if (!fired) assert_true(p && p->nsteps == 1 && p->steps[0].mesh_span == 2);
            lt_dtensor_free(out);
            lt_plan_free(p);
            int64_t live = lt__fault_live();
            lt__fault_disarm();
            if (!fired) {
                LT_CHECK(st);
                completed = 1;
            } else if (points++, st != LT_NOMEM || had_out || !strstr(lt_errmsg(), "memory")) {
                fail_msg("%s -> %s, allocation %lld failing: %s: %s", cases[q][1], cases[q][2],
                         (long long)n, lt_status_name(st), lt_errmsg());
            }
            if (live != 0)
                fail_msg("%s -> %s, allocation %lld failing: %lld blocks left allocated",
                         cases[q][1], cases[q][2], (long long)n, (long long)live);
        }
        lt__plan_cost_swap(was);
        assert_true(completed);
        lt_dtensor_free(src);
    }
    print_message("moves all, out of memory: %ld failing allocations, each a clean error\n",
                  points);
    assert_true(points > 20);
}

static int teardown(void **state) {
    (void)state;
    bf_pool_clear();
    lt_plan_cache_clear();
    return 0;
}

int main(void) {
    lt_test_backend_from_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue_cases),
        cmocka_unit_test(test_new_moves),
        cmocka_unit_test(test_nested_through_strided),
        cmocka_unit_test(test_size_one_mesh_dims),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_min_cost_equals_brute_force),
        cmocka_unit_test(test_objectives_equal_brute_force),
        cmocka_unit_test(test_objective_acceptance),
        cmocka_unit_test(test_algorithms_equal_brute_force),
        cmocka_unit_test(test_moves_all_equal_brute_force),
        cmocka_unit_test(test_moves_all_cases),
        cmocka_unit_test(test_moves_all_permute_3d),
        cmocka_unit_test(test_moves_all_gather),
        cmocka_unit_test(test_moves_all_runs),
        cmocka_unit_test(test_moves_all_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
