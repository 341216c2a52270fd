/* test/test_redistribute.c — redistribute: planners, executor, verifier.
 *
 * Expected values come from outside the code under test:
 *   - results: lt_distribute of the same full tensor with the destination
 *     placements (docs/SEMANTICS.md §7: "the result must equal distribute_tensor(full,
 *     dst)") and, step by step, the verifier's direct reshard;
 *   - rejections: docs/SEMANTICS.md §7, restated below (expect_reject);
 *   - bytes: the comm trace of collectives_sim (min-cost optimality against
 *     a brute-force search: test/test_planner.c);
 *   - communication counts: PyTorch's test_redistribute_shard_dim_change and
 *     test_redistribute_shard_dim_multi_dim_mesh (docs/SEMANTICS.md §7).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/collectives_sim/engine.h"
#include "localtensor/localtensor.h"
#include "test/testutil.h"

#include "test/redistribute_testutil.h"

/* ---- one checked redistribute ------------------------------------------------------- */

typedef struct sweep_stats {
    long run, rejected, invalid, skipped;
    double greedy_extra;    /* bytes greedy moved beyond min-cost, summed */
} sweep_stats;

/* A zero fill's result (docs/SEMANTICS.md §7) is another Partial split of
 * the same tensor than distribute's, so it is checked by what defines it:
 * its Partial sum is the source's tensor (full_tensor reduces it through the
 * collectives' reduction, not the zero fill), and every element that is not
 * zero is an element of the source tensor at the same global index (the
 * tensor is arange, so the value is its global index, divided by the sizes
 * of the other P(sum) mesh dims: a misplaced shard shows). The exact per-rank
 * values are PyTorch's, in test_golden. */
static void expect_zero_fill_result(const lt_dtensor *src, const lt_dtensor *out,
                                    const char *what) {
    lt_tensor *a = NULL, *b = NULL;
    LT_CHECK(lt_full_tensor(out, &a));
    LT_CHECK(lt_full_tensor(src, &b));
    lt_compare_result res;
    LT_CHECK(lt_compare(a, b, 0, 0, &res));
    if (!res.equal) fail_msg("%s: zero fill sums to %g at %lld, expected %g", what, res.actual,
                             (long long)res.first_flat, res.expected);
    lt_tensor_free(a);
    lt_tensor_free(b);
    const lt_mesh *m = lt_dtensor_mesh(out);
    /* every other P(sum) mesh dim holds the tensor divided by its size
     * (docs/SEMANTICS.md §3, §5) */
    double scale = 1;
    for (int i = 0; i < m->ndim; i++)
        if (out->placements[i].kind == LT_PL_PARTIAL && out->placements[i].op == LT_REDOP_SUM &&
            !(src->placements[i].kind == LT_PL_SHARD && m->shape[i] > 1))
            scale *= m->shape[i];
    for (int r = 0; r < m->world; r++) {
        const lt_tensor *x = out->local->shards[r];
        int64_t idx[LT_MAX_DIMS];
        lt_rank_layout lay;
        LT_CHECK(lt_layout_rank(m, out->ndim, out->shape, out->placements, r, &lay));
        for (int64_t f = 0; f < lt_numel(x); f++) {
            double v = lt_get_flat(x, f);
            if (v == 0) continue;
            int64_t rem = f, g = 0;
            for (int d = x->ndim - 1; d >= 0; d--) {
                idx[d] = rem % x->shape[d];
                rem /= x->shape[d];
            }
            for (int d = 0; d < x->ndim; d++)
                g = g * out->shape[d] + (lay.idx[d] ? lay.idx[d][idx[d]] : idx[d]);
            if (fabs(v - (double)g / scale) > 1e-6 * (double)g)
                fail_msg("%s: rank %d holds %g at local %lld (global flat %lld)", what, r, v,
                         (long long)f, (long long)g);
        }
        lt_rank_layout_free(&lay);
    }
}

/* Redistributes src -> dst with `planner`, checking everything; returns the
 * plan's total bytes (or (size_t)-1 when rejected/invalid). */
static size_t check_pair(const lt_mesh *m, lt_dtype dt, int ndim, const int64_t *shape,
                         const lt_placement *sp, const lt_placement *dp, lt_planner planner,
                         int verify, sweep_stats *stats) {
    char a[256], b[256], what[700], ms[64];
    snprintf(what, sizeof what, "mesh %s, %d-d tensor: %s -> %s (%s)",
             lt_mesh_format(m, ms, sizeof ms), ndim, fmt_pl(sp, m->ndim, a, sizeof a),
             fmt_pl(dp, m->ndim, b, sizeof b), lt_planner_name(planner));
    lt_placement dn[LT_MESH_MAX_DIMS];
    lt_dtensor *src = mk(m, dt, ndim, shape, sp), *out = NULL;
    lt_comm *comm;
    LT_CHECK(lt_comm_new(m, &comm));
    lt_redistribute_opts o = {0};
    o.planner = planner;
    o.verify = verify;
    o.name = "t";
    o.comm = comm;
    lt_plan *plan = NULL;
    size_t mark = lt_trace_marker(lt_comm_trace(comm));
    lt_status st = lt_redistribute(src, dp, m->ndim, &o, &out, &plan);
    size_t ret = (size_t)-1;
    int dst_ok = lt_placements_check(m, ndim, dp, m->ndim, dn) == LT_OK &&
                 lt_layout_check(m, ndim, shape, dn) == LT_OK;
    if (!dst_ok) {
        if (st != LT_INVALID) fail_msg("%s: invalid destination gave %s", what, lt_status_name(st));
        stats->invalid++;
    } else if (expect_reject(m, sp, dn)) {
        if (st != LT_UNSUPPORTED)
            fail_msg("%s: expected a rejection, got %s", what, lt_status_name(st));
        if (!strstr(lt_errmsg(), "'t'") || !strstr(lt_errmsg(), "mesh dim"))
            fail_msg("%s: rejection message lacks the name or mesh dim: %s", what, lt_errmsg());
        stats->rejected++;
    } else {
        if (st) fail_msg("%s: %s: %s", what, lt_status_name(st), lt_errmsg());
        stats->run++;
        if (!lt_placements_equal(out->placements, dn, m->ndim))
            fail_msg("%s: result placements differ", what);
        if (expect_zero_fill(m, sp, dn)) {
            expect_zero_fill_result(src, out, what);
        } else {
            /* docs/SEMANTICS.md §7: equal to distributing the same full tensor with dst */
            lt_dtensor *exp = mk(m, dt, ndim, shape, dn);
            expect_same_shards(out, exp, what);
            lt_dtensor_free(exp);
        }
        /* the plan's byte model is the comm trace's */
        lt_trace *tr = lt_comm_trace(comm);
        size_t ev = mark;
        for (int s = 0; s < plan->nsteps; s++) {
            const lt_plan_step *ps = &plan->steps[s];
            lt_placement tmp[LT_MESH_MAX_DIMS];
            if (lt_placements_check(m, ndim, ps->after, m->ndim, tmp))
                fail_msg("%s: state after step %d is not a valid placement list: %s", what, s + 1,
                         lt_errmsg());
            if (!ps->comm) continue;
            lt_trace_event e;
            if (lt_trace_get(tr, ev++, &e))
                fail_msg("%s: step %d issued no collective", what, s + 1);
            size_t mx = 0;
            for (int r = 0; r < e.world; r++) mx = e.recv[r] > mx ? e.recv[r] : mx;
            if (e.coll != ps->coll || e.mesh_dim != ps->mesh_dim ||
                e.total_recv != ps->bytes_total || mx != ps->bytes_per_rank)
                fail_msg("%s: step %d: plan says %s on mesh dim %d, %zu bytes (max %zu); trace "
                         "says %s on %d, %zu (max %zu)",
                         what, s + 1, ps->collective, ps->mesh_dim, ps->bytes_total,
                         ps->bytes_per_rank, lt_coll_name(e.coll), e.mesh_dim, e.total_recv, mx);
        }
        if (ev != lt_trace_count(tr)) fail_msg("%s: more collectives than the plan lists", what);
        ret = plan->total_bytes;
    }
    lt_plan_free(plan);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
    lt_comm_free(comm);
    return ret;
}

/* ---- the sweep ------------------------------------------------------------------------- */




/* Every (or `cap` sampled) pair of placement lists built from the per-mesh-dim
 * options o[nopt], for one shape; both planners. */
static void sweep_options(const char *mesh_s, int ndim, const int64_t *shape, const lt_placement *o,
                          int nopt, long cap, sweep_stats *stats) {
    lt_mesh m = mk_mesh(mesh_s);
    lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS], tmp[LT_MESH_MAX_DIMS];
    long nlist = 1;
    for (int i = 0; i < m.ndim; i++) nlist *= nopt;
    long npairs = nlist * nlist;
    uint64_t seed =
        0x9e3779b97f4a7c15ULL ^ (uint64_t)(nlist * 131 + ndim * 7 + (ndim ? shape[0] : 0));
    long todo = cap > 0 && cap < npairs ? cap : npairs;
    for (long q = 0; q < todo; q++) {
        long pair = todo == npairs ? q : (long)(lcg(&seed) % (uint64_t)npairs);
        decode_list(pair / nlist, o, nopt, m.ndim, sp);
        decode_list(pair % nlist, o, nopt, m.ndim, dp);
        /* sources must be distributable (valid list, computable layout) */
        if (lt_placements_check(&m, ndim, sp, m.ndim, tmp) ||
            lt_layout_check(&m, ndim, shape, sp)) {
            stats->skipped++;
            continue;
        }
        size_t g = check_pair(&m, LT_F32, ndim, shape, sp, dp, LT_PLANNER_GREEDY, 1, stats);
        size_t c = check_pair(&m, LT_F32, ndim, shape, sp, dp, LT_PLANNER_MIN_COST, 1, stats);
        if (g != (size_t)-1 && c > g) {
            char a[256], b[256];
            fail_msg("min-cost moved %zu bytes but greedy %zu: %s -> %s on %s", c, g,
                     fmt_pl(sp, m.ndim, a, 256), fmt_pl(dp, m.ndim, b, 256), mesh_s);
        }
        if (g != (size_t)-1) stats->greedy_extra += (double)(g - c);
    }
}

static void sweep(const char *mesh_s, int ndim, const int64_t *shape, lt_split_kind rule, long cap,
                  sweep_stats *stats) {
    lt_placement o[24];
    int nopt = mesh_dim_options(ndim, rule, o);
    sweep_options(mesh_s, ndim, shape, o, nopt, cap, stats);
}

static void test_sweep(void **state) {
    (void)state;
    sweep_stats st = {0};
    const int64_t sh1[][1] = {{0}, {1}, {3}, {7}, {8}};
    const int64_t sh2[][2] = {{0, 3}, {2, 3}, {5, 7}, {8, 4}};
    const lt_split_kind rules[] = {LT_SPLIT_BALANCED, LT_SPLIT_LAST};
    for (int k = 2; k <= 8; k++) {
        char ms[16];
        snprintf(ms, sizeof ms, "%d", k);
        for (int s = 0; s < 5; s++)
            for (int r = 0; r < 2; r++) sweep(ms, 1, sh1[s], rules[r], 0, &st);
        for (int s = 0; s < 4; s++) sweep(ms, 2, sh2[s], rules[k % 2], 0, &st);
    }
    const char *meshes2[] = {"2x2", "2x3", "4x2"};
    for (int q = 0; q < 3; q++) {
        lt_split_kind rule = q == 1 ? LT_SPLIT_LAST : LT_SPLIT_BALANCED;
        sweep(meshes2[q], 1, sh1[2], rule, 0, &st);          /* 3 elements: smaller than the mesh */
        sweep(meshes2[q], 1, sh1[0], rule, 150, &st);        /* empty */
        sweep(meshes2[q], 2, sh2[2], rule, 500, &st);        /* uneven */
        sweep(meshes2[q], 2, sh2[3], rule, 250, &st);        /* even */
        sweep(meshes2[q], 2, sh2[1], rule, 150, &st);        /* smaller than the mesh */
    }
    sweep("2x2x2", 1, sh1[3], LT_SPLIT_BALANCED, 400, &st);
    sweep("2x2x2", 2, sh2[2], LT_SPLIT_BALANCED, 400, &st);
    sweep("2x2x2", 2, sh2[0], LT_SPLIT_BALANCED, 100, &st);
    print_message("sweep: %ld redistributes checked, %ld rejected as docs/SEMANTICS.md §7 says, "
                  "%ld invalid destinations, %ld invalid sources skipped; greedy moved %.0f bytes "
                  "more than min-cost in total\n",
                  st.run, st.rejected, st.invalid, st.skipped, st.greedy_extra);
    assert_true(st.run > 10000);
}

/* 0-d tensors (only R and P) and explicit split sizes, every pair. */
static void test_scalars_and_explicit(void **state) {
    (void)state;
    sweep_stats st = {0};
    lt_placement o[8];
    const int64_t scalar[1] = {1};
    o[0] = lt_replicate();
    o[1] = lt_partial(LT_REDOP_SUM);
    o[2] = lt_partial(LT_REDOP_MAX);
    o[3] = lt_partial(LT_REDOP_AVG);
    sweep_options("2x2", 0, scalar, o, 4, 0, &st);
    sweep_options("3", 0, scalar, o, 4, 0, &st);
    /* 1-D mesh of 4, (7, 5): explicit sizes with empty pieces */
    lt_split_rule e1, e2;
    LT_CHECK(lt_split_explicit((int64_t[]){3, 0, 1, 3}, 4, &e1));
    LT_CHECK(lt_split_explicit((int64_t[]){2, 2, 0, 1}, 4, &e2));
    const int64_t sh75[] = {7, 5};
    o[0] = lt_replicate();
    o[1] = lt_shard(0);
    o[2] = lt_shard_rule(0, e1);
    o[3] = lt_shard_rule(1, e2);
    o[4] = lt_strided(1, 2);
    o[5] = lt_partial(LT_REDOP_SUM);
    o[6] = lt_shard(1);
    sweep_options("4", 2, sh75, o, 7, 0, &st);
    /* 2x2, (4, 3): explicit sizes that only fit nested (parent of 2 rows) or
     * whole (3 columns) */
    LT_CHECK(lt_split_explicit((int64_t[]){2, 0}, 2, &e1));
    LT_CHECK(lt_split_explicit((int64_t[]){1, 2}, 2, &e2));
    const int64_t sh43[] = {4, 3};
    o[2] = lt_shard_rule(0, e1);
    o[3] = lt_shard_rule(1, e2);
    sweep_options("2x2", 2, sh43, o, 7, 0, &st);
    print_message(
        "scalars and explicit sizes: %ld checked, %ld rejected, %ld invalid destinations\n", st.run,
        st.rejected, st.invalid);
    assert_true(st.run > 1000 && st.invalid > 0);
}

/* ---- docs/SEMANTICS.md §7 communication counts ---------------------------------------- */

static int comm_count(const char *mesh_s, int ndim, const int64_t *shape, const char *a,
                      const char *b, lt_planner planner, size_t *bytes) {
    lt_mesh m = mk_mesh(mesh_s);
    lt_placement sp[8], dp[8];
    parse_pl(a, sp);
    parse_pl(b, dp);
    lt_dtensor *src = mk(&m, LT_F32, ndim, shape, sp), *out, *exp = mk(&m, LT_F32, ndim, shape, dp);
    lt_comm *comm;
    LT_CHECK(lt_comm_new(&m, &comm));
    lt_redistribute_opts o = {0};
    o.planner = planner;
    o.verify = 1;
    o.comm = comm;
    lt_plan *plan;
    LT_CHECK(lt_redistribute(src, dp, m.ndim, &o, &out, &plan));
    expect_same_shards(out, exp, a);
    int n = (int)lt_trace_count(lt_comm_trace(comm));
    if (n != plan->ncomm)
        fail_msg("%s -> %s: trace has %d events, plan %d collectives", a, b, n, plan->ncomm);
    if (bytes) *bytes = plan->total_bytes;
    lt_plan_free(plan);
    lt_dtensor_free(out);
    lt_dtensor_free(exp);
    lt_dtensor_free(src);
    lt_comm_free(comm);
    return n;
}

static void test_sem7_counts(void **state) {
    (void)state;
    /* test_redistribute_shard_dim_change, 2-D mesh (2, 2) */
    const int64_t shapes[][3] = {{8, 8, 0}, {8, 8, 8}, {8, 5, 0}, {5, 8, 0}, {5, 5, 0}};
    const char *pairs2[][2] = {{"S(0),S(1)", "S(0),S(0)"},
                               {"S(0),S(1)", "S(1),S(0)"},
                               {"S(0),S(0)", "S(1),S(1)"},
                               {"S(0),S(2)", "S(1),S(0)"},
                               {"S(1),S(1)", "S(1),S(2)"}};
    const int counts2[] = {1, 2, 2, 2, 1};
    for (int s = 0; s < 5; s++) {
        int ndim = shapes[s][2] ? 3 : 2;
        for (int p = 0; p < (ndim == 3 ? 5 : 3); p++) {
            int n = comm_count("2x2", ndim, shapes[s], pairs2[p][0], pairs2[p][1],
                               LT_PLANNER_GREEDY, NULL);
            if (n != counts2[p])
                fail_msg("greedy %s -> %s on shape %d: %d collectives, PyTorch issues %d",
                         pairs2[p][0], pairs2[p][1], s, n, counts2[p]);
            /* min-cost may trade collectives for bytes (it parks a shard on a
             * third tensor dim); it never moves more bytes */
            size_t gb, cb;
            comm_count("2x2", ndim, shapes[s], pairs2[p][0], pairs2[p][1], LT_PLANNER_GREEDY, &gb);
            int c = comm_count("2x2", ndim, shapes[s], pairs2[p][0], pairs2[p][1],
                               LT_PLANNER_MIN_COST, &cb);
            assert_true(cb <= gb);
            if (c != counts2[p])
                print_message("2-D %s -> %s on (%lld, %lld%s): min-cost %d collectives %zu bytes, "
                              "greedy %d %zu bytes\n",
                              pairs2[p][0], pairs2[p][1], (long long)shapes[s][0],
                              (long long)shapes[s][1], ndim == 3 ? ", 8" : "", c, cb, n, gb);
        }
    }
    /* test_redistribute_shard_dim_multi_dim_mesh: (8, 8, 8) on (2, 2, 2) */
    const int64_t s3[] = {8, 8, 8};
    const char *pairs3[][2] = {
        {"S(0),S(0),S(0)", "S(1),S(1),S(1)"}, {"S(0),S(1),S(0)", "S(1),S(0),S(0)"},
        {"S(0),S(1),S(2)", "S(2),S(1),S(0)"}, {"S(1),S(0),S(0)", "R,S(0),S(0)"},
        {"S(1),R,S(0)", "R,S(0),S(0)"},       {"S(0),S(0),S(1)", "S(0),S(1),S(2)"}};
    const int counts3[] = {3, 3, 2, 1, 2, 2};
    for (int p = 0; p < 6; p++) {
        size_t gb, cb;
        int n = comm_count("2x2x2", 3, s3, pairs3[p][0], pairs3[p][1], LT_PLANNER_GREEDY, &gb);
        if (n != counts3[p])
            fail_msg("greedy %s -> %s: %d collectives, PyTorch issues %d", pairs3[p][0],
                     pairs3[p][1], n, counts3[p]);
        int c = comm_count("2x2x2", 3, s3, pairs3[p][0], pairs3[p][1], LT_PLANNER_MIN_COST, &cb);
        print_message("3-D %-16s -> %-16s greedy %d collectives %5zu bytes, min-cost %d "
                      "collectives %5zu bytes\n",
                      pairs3[p][0], pairs3[p][1], n, gb, c, cb);
        assert_true(cb <= gb);
    }
}

/* docs/SEMANTICS.md §7: merging must not change results: P,P -> S0,S0 of 4 rows on
 * 2x3 gives row sizes 1,1,0,1,1,0. */
static void test_sem7_merge_example(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("2x3");
    lt_placement sp[2], dp[2];
    parse_pl("P,P", sp);
    parse_pl("S(0),S(0)", dp);
    const int64_t shape[] = {4};
    const int64_t rows[] = {1, 1, 0, 1, 1, 0};
    for (int pl = 0; pl < LT_PLANNER_COUNT; pl++) {
        lt_dtensor *src = mk(&m, LT_F32, 1, shape, sp), *out;
        lt_redistribute_opts o = {0};
        o.planner = (lt_planner)pl;
        o.verify = 1;
        LT_CHECK(lt_redistribute(src, dp, 2, &o, &out, NULL));
        for (int r = 0; r < 6; r++) assert_int_equal(out->local->shards[r]->shape[0], rows[r]);
        /* arange(4): rank 0 row 0, rank 1 row 1, rank 3 row 2, rank 4 row 3 */
        assert_true(fabs(lt_get_flat(out->local->shards[4], 0) - 3.0) < 1e-6);
        lt_dtensor_free(out);
        lt_dtensor_free(src);
    }
}

/* ---- size-1 mesh dims (test_one_chunk_mesh) ------------------------------------------ */

static void test_one_chunk_mesh(void **state) {
    (void)state;
    const int64_t shape[] = {16, 8};
    const char *srcs[] = {"S(1)", "R", "P(sum)"}, *dsts[] = {"S(0)", "S(1)", "R", "P(max)"};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 4; b++) {
            char s1[64], s2[64];
            snprintf(s1, sizeof s1, "S(0),%s", srcs[a]);
            snprintf(s2, sizeof s2, "S(0),%s", dsts[b]);
            /* no step, no communication, even for S -> P(max) on the size-1 dim;
             * comm_count also checks the result against distribute */
            for (int pl = 0; pl < LT_PLANNER_COUNT; pl++) {
                size_t bytes;
                int n = comm_count("4x1", 2, shape, s1, s2, (lt_planner)pl, &bytes);
                if (n != 0 || bytes != 0) fail_msg("%s -> %s on 4x1: %d collectives", s1, s2, n);
            }
        }
}

/* ---- rejections and messages ------------------------------------------------------------ */

static void expect_error(const char *mesh_s, const char *a, const char *b, const char *name,
                         lt_status want, const char *const *needles) {
    lt_mesh m = mk_mesh(mesh_s);
    lt_placement sp[8], dp[8];
    parse_pl(a, sp);
    int nd = parse_pl(b, dp);
    const int64_t shape[] = {6, 4};
    lt_dtensor *src = mk(&m, LT_F32, 2, shape, sp), *out = (lt_dtensor *)1;
    lt_redistribute_opts o = {0};
    o.name = name;
    LT_EXPECT_STATUS(lt_redistribute(src, dp, nd, &o, &out, NULL), want);
    assert_null(out);
    for (int i = 0; needles[i]; i++)
        if (!strstr(lt_errmsg(), needles[i]))
            fail_msg("message lacks '%s': %s", needles[i], lt_errmsg());
    lt_dtensor_free(src);
}

/* Redistributes arange(shape) from a to b on mesh_s (min-cost and greedy)
 * and compares every rank's values with want[rank][...] (each rank holds
 * `per` elements). */
static void expect_values(const char *mesh_s, int ndim, const int64_t *shape, const char *a,
                          const char *b, int per, const double *want, int nsteps_max) {
    lt_mesh m = mk_mesh(mesh_s);
    lt_placement sp[8], dp[8];
    parse_pl(a, sp);
    int nd = parse_pl(b, dp);
    for (int pl = 0; pl < 2; pl++) {
        lt_dtensor *src = mk(&m, LT_F32, ndim, shape, sp), *out = NULL;
        lt_redistribute_opts o = {0};
        o.verify = 1;
        o.planner = pl ? LT_PLANNER_GREEDY : LT_PLANNER_MIN_COST;
        lt_plan *plan = NULL;
        LT_CHECK(lt_redistribute(src, dp, nd, &o, &out, &plan));
        if (plan->nsteps > nsteps_max)
            fail_msg("%s -> %s: %d steps, wanted at most %d", a, b, plan->nsteps, nsteps_max);
        for (int r = 0; r < m.world; r++) {
            const lt_tensor *x = out->local->shards[r];
            if (lt_numel(x) != per)
                fail_msg("%s -> %s: rank %d holds %lld elements, wanted %d", a, b, r,
                         (long long)lt_numel(x), per);
            for (int f = 0; f < per; f++)
                if (lt_get_flat(x, f) != want[r * per + f])
                    fail_msg("%s -> %s: rank %d element %d is %g, wanted %g", a, b, r, f,
                             lt_get_flat(x, f), want[r * per + f]);
        }
        lt_plan_free(plan);
        lt_dtensor_free(out);
        lt_dtensor_free(src);
    }
}

/* docs/SEMANTICS.md §7, Shard -> Partial(sum): each rank keeps its shard at
 * its place in zeros of the size the mesh dim split. Expected values by
 * hand (and as PyTorch 2.15 prints them under LocalTensorMode). */
static void test_zero_fill(void **state) {
    (void)state;
    const int64_t s4[] = {4}, s5[] = {5}, s8[] = {8};
    const double w1[] = {0, 1, 0, 0, /**/ 0, 0, 2, 3};
    expect_values("2", 1, s4, "S(0)", "P(sum)", 4, w1, 1);
    const double w2[] = {0, 1, 2, 0, 0, /**/ 0, 0, 0, 3, 4};   /* chunks of 3 and 2 */
    expect_values("2", 1, s5, "S(0)", "P(sum)", 5, w2, 1);
    /* mesh dim 1 still splits dim 0: gathered first, then the zero fill, then the slice */
    const double w3[] = {0, 1, 2, 3, /**/ 0, 0, 0, 0, /**/ 0, 0, 0, 0, /**/ 4, 5, 6, 7};
    expect_values("2x2", 1, s8, "S(0),S(0)", "P(sum),S(0)", 4, w3, 3);
    /* the inner split zero-fills within the outer chunk */
    const double w4[] = {0, 1, 0, 0, /**/ 0, 0, 2, 3, /**/ 4, 5, 0, 0, /**/ 0, 0, 6, 7};
    expect_values("2x2", 1, s8, "S(0),S(0)", "S(0),P(sum)", 4, w4, 1);
    const double w5[] = {0, 1, 0, 0, 0, 0, 0, 0, /**/ 0, 0, 2, 3, 0, 0, 0, 0,
                         0, 0, 0, 0, 4, 5, 0, 0, /**/ 0, 0, 0, 0, 0, 0, 6, 7};
    expect_values("2x2", 1, s8, "S(0),S(0)", "P(sum),P(sum)", 8, w5, 2);
}

static void test_errors(void **state) {
    (void)state;
    const char *n1[] = {"'w'",        "[R, S(0)]",      "[R, P(avg)]",
                        "mesh dim 1", "S(0) -> P(avg)", "only Shard -> Partial(sum)",
                        NULL};
    expect_error("2x2", "R,S(0)", "R,P(avg)", "w", LT_UNSUPPORTED, n1);
    const char *n2[] = {"'grad'", "[P(sum), R]", "[P(max), R]", "mesh dim 0", "partial", NULL};
    expect_error("2x2", "P(sum),R", "P(max),R", "grad", LT_UNSUPPORTED, n2);
    const char *n3[] = {"unnamed", "SS(0,2) -> P(sum)", "mesh dim 0", NULL};
    expect_error("2x2", "SS(0,2),R", "P(sum),R", NULL, LT_UNSUPPORTED, n3);
    const char *n4[] = {"'w'", "destination", "mesh dim 1", NULL};
    expect_error("2x2", "R,R", "R,S(5)", "w", LT_INVALID, n4);
    const char *n5[] = {"'w'", "mixed", NULL};
    expect_error("2x2", "R,R", "P(sum),P(max)", "w", LT_INVALID, n5);
    const char *n6[] = {"'w'", "R -> P(product)", NULL};
    expect_error("2x2", "R,R", "R,P(product)", "w", LT_UNSUPPORTED, n6);
    const char *n7[] = {"'w'", "for a mesh of 2 dims", NULL};
    expect_error("2x2", "R,R", "R", "w", LT_INVALID, n7);
    /* R -> P is allowed internally (partition) */
    lt_mesh m = mk_mesh("2x2");
    lt_placement sp[2], dp[2];
    parse_pl("S(0),R", sp);
    parse_pl("S(0),P(sum)", dp);
    const int64_t shape[] = {6, 4};
    lt_dtensor *src = mk(&m, LT_F32, 2, shape, sp), *out, *exp = mk(&m, LT_F32, 2, shape, dp);
    lt_redistribute_opts o = {0};
    o.verify = 1;
    LT_CHECK(lt_redistribute(src, dp, 2, &o, &out, NULL));
    expect_same_shards(out, exp, "R -> P(sum)");
    lt_dtensor_free(out);
    lt_dtensor_free(exp);
    lt_dtensor_free(src);
}

/* ---- verifier: it must catch and place a wrong step ---------------------------------------- */

static lt_coll_fn real_a2a;
static lt_status bad_a2a(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                         lt_tensor *const *out) {
    lt_status st = real_a2a(ctx, g, in, out);
    lt_tensor *t = out[g->ranks[g->size - 1]];
    if (!st && g->index == 1 && lt_numel(t) > 0) lt_set_flat(t, 0, lt_get_flat(t, 0) + 100);
    return st;
}

static void test_verify_catches_wrong_step(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("2x2");
    lt_engine_i eng = *lt_engine_inproc();
    real_a2a = eng.all_to_all;
    eng.all_to_all = bad_a2a;
    lt_comm *comm;
    LT_CHECK(lt_comm_new_engine(&m, &eng, &comm));
    lt_placement sp[2], dp[2];
    parse_pl("S(0),S(1)", sp);
    parse_pl("S(1),S(0)", dp);
    const int64_t shape[] = {8, 8};
    lt_dtensor *src = mk(&m, LT_F32, 2, shape, sp), *out = NULL;
    lt_verify_report rep;
    lt_redistribute_opts o = {0};
    o.verify = 1;
    o.comm = comm;
    o.report = &rep;
    o.name = "x";
    lt_plan *plan;
    LT_EXPECT_STATUS(lt_redistribute(src, dp, 2, &o, &out, &plan), LT_MISMATCH);
    assert_null(out);
    assert_non_null(plan);
    int a2a = -1;
    for (int s = 0; s < plan->nsteps; s++)
        if (plan->steps[s].comm && plan->steps[s].coll == LT_COLL_ALL_TO_ALL) a2a = s;
    assert_true(a2a >= 0);
    assert_true(rep.checked && !rep.ok);
    assert_int_equal(rep.step, a2a);
    assert_int_equal(rep.mesh_dim, plan->steps[a2a].mesh_dim);
    assert_true(fabs(rep.actual - rep.expected - 100) < 1e-3);
    /* the global index holds arange's value */
    assert_true(fabs(rep.expected - (double)(rep.global_index[0] * 8 + rep.global_index[1])) <
                1e-6);
    char want[64];
    snprintf(want, sizeof want, "after step %d of %d", a2a + 1, plan->nsteps);
    if (!strstr(lt_errmsg(), want) || !strstr(lt_errmsg(), "'x'") ||
        !strstr(lt_errmsg(), "all_to_all") || !strstr(lt_errmsg(), "expected"))
        fail_msg("message: %s", lt_errmsg());
    assert_string_equal(rep.message, lt_errmsg());
    print_message("wrong step caught: %s\n", rep.message);
    lt_plan_free(plan);
    lt_dtensor_free(src);
    lt_comm_free(comm);
}

/* Replicas that disagree are reported against the source (step -1). */
static void test_verify_inconsistent_source(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("2");
    const int64_t shape[] = {3};
    lt_tensor *sh[2];
    double v0[] = {1, 2, 3}, v1[] = {1, 2, 4};
    LT_CHECK(lt_tensor_from_doubles(LT_F32, 1, shape, v0, 3, &sh[0]));
    LT_CHECK(lt_tensor_from_doubles(LT_F32, 1, shape, v1, 3, &sh[1]));
    lt_placement r = lt_replicate(), s0 = lt_shard(0);
    lt_dtensor *dt, *out = NULL;
    LT_CHECK(lt_from_local(&m, sh, &r, 1, 0, &dt));
    lt_verify_report rep;
    lt_redistribute_opts o = {0};
    o.verify = 1;
    o.report = &rep;
    LT_EXPECT_STATUS(lt_redistribute(dt, &s0, 1, &o, &out, NULL), LT_MISMATCH);
    assert_int_equal(rep.step, -1);
    assert_int_equal(rep.rank, 1);
    assert_int_equal(rep.global_index[0], 2);
    if (!strstr(lt_errmsg(), "replicas disagree")) fail_msg("message: %s", lt_errmsg());
    lt_dtensor_free(dt);
    lt_tensor_free(sh[0]);
    lt_tensor_free(sh[1]);
}

/* lt_verify_reshard on a corrupted result names rank and index. */
static void test_verify_reshard_direct(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("2x2");
    lt_placement sp[2], dp[2];
    parse_pl("S(0),P(sum)", sp);
    parse_pl("R,S(1,balanced)", dp);
    const int64_t shape[] = {5, 3};
    lt_dtensor *src = mk(&m, LT_F32, 2, shape, sp), *out;
    LT_CHECK(lt_redistribute(src, dp, 2, NULL, &out, NULL));
    lt_verify_report rep;
    LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
    assert_true(rep.ok);
    /* ranks 1 and 3 (mesh coords (0,1), (1,1)) are replicas: one buffer */
    assert_ptr_equal(out->local->shards[1]->storage, out->local->shards[3]->storage);
    LT_CHECK(lt_tensor_make_writable(out->local->shards[3]));   /* copy-on-write before the write */
    assert_ptr_not_equal(out->local->shards[1]->storage, out->local->shards[3]->storage);
    lt_set_flat(out->local->shards[3], 4, -1);   /* rank 3 holds columns [2] of every row */
    LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
    assert_int_equal(rep.rank, 3);
    assert_int_equal(rep.local_index[0], 4);
    assert_int_equal(rep.global_index[0], 4);
    assert_int_equal(rep.global_index[1], 2);
    assert_true(fabs(rep.expected - 14) < 1e-6 && rep.actual == -1);
    /* a wrong SHARED buffer: every rank holding it is wrong; the first is named */
    lt_set_flat(out->local->shards[1], 0, -2);   /* row 0, column 2 */
    LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
    assert_int_equal(rep.rank, 1);
    assert_int_equal(rep.global_index[0], 0);
    assert_int_equal(rep.global_index[1], 2);
    assert_true(rep.actual == -2);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
}

/* ---- a few specific cases -------------------------------------------------------------------- */

static void test_strided_and_explicit(void **state) {
    (void)state;
    /* docs/SEMANTICS.md §4 seed: arange(5) on (2, 2) with [SS(0,2), S(0)] holds 0,1 | 3 | 2 | 4 */
    lt_mesh m = mk_mesh("2x2");
    const int64_t s5[] = {5};
    const char *dsts[] = {
        "R,R", "S(0),S(0)", "S(0,[3,2]),R", "R,SS(0,2)", "S(0,balanced),S(0,last)", "R,S(0,last)"};
    for (int q = 0; q < 6; q++) {
        for (int pl = 0; pl < 2; pl++) {
            lt_placement sp[2], dp[2];
            parse_pl("SS(0,2),S(0)", sp);
            parse_pl(dsts[q], dp);
            lt_dtensor *src = mk(&m, LT_F32, 1, s5, sp), *out, *back,
                       *exp = mk(&m, LT_F32, 1, s5, dp);
            lt_redistribute_opts o = {0};
            o.planner = (lt_planner)pl;
            o.verify = 1;
            LT_CHECK(lt_redistribute(src, dp, 2, &o, &out, NULL));
            expect_same_shards(out, exp, dsts[q]);
            LT_CHECK(lt_redistribute(out, sp, 2, &o, &back, NULL));   /* and back */
            expect_same_shards(back, src, "back to SS");
            lt_dtensor_free(back);
            lt_dtensor_free(out);
            lt_dtensor_free(exp);
            lt_dtensor_free(src);
        }
    }
}

static void test_full_tensor(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("2x3");
    const int64_t shape[] = {5, 4};
    const char *pls[] = {"S(0),S(1)",     "SS(0,2),S(0)", "P(sum),S(1,last)",
                         "P(max),P(max)", "R,P(avg)",     "R,S(1,[1,0,3])"};
    for (int q = 0; q < 6; q++) {
        lt_placement pl[2];
        parse_pl(pls[q], pl);
        lt_dtensor *dt = mk(&m, LT_F32, 2, shape, pl);
        lt_tensor *full;
        LT_CHECK(lt_full_tensor(dt, &full));
        double want[20];
        for (int j = 0; j < 20; j++) want[j] = j;
        lt_test_expect_values(full, 2, shape, want, pls[q]);
        lt_tensor_free(full);
        lt_dtensor_free(dt);
    }
}

static void test_dtypes(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("2x2");
    const int64_t shape[] = {7, 3};
    const lt_dtype dts[] = {LT_F64, LT_BF16, LT_F16, LT_I32, LT_I64};
    const char *pairs[][2] = {
        {"S(0),S(1)", "S(1),S(0,balanced)"}, {"P(max),S(0)", "R,S(1)"}, {"R,SS(0,2)", "S(1),R"}};
    for (int t = 0; t < 5; t++)
        for (int p = 0; p < 3; p++) {
            lt_placement sp[2], dp[2];
            parse_pl(pairs[p][0], sp);
            parse_pl(pairs[p][1], dp);
            lt_dtensor *src = mk(&m, dts[t], 2, shape, sp), *out,
                       *exp = mk(&m, dts[t], 2, shape, dp);
            lt_redistribute_opts o = {0};
            o.verify = 1;
            LT_CHECK(lt_redistribute(src, dp, 2, &o, &out, NULL));
            expect_same_shards(out, exp, lt_dtype_name(dts[t]));
            lt_dtensor_free(out);
            lt_dtensor_free(exp);
            lt_dtensor_free(src);
        }
    /* an integer R -> P(sum) would truncate: rejected */
    lt_placement sp[2], dp[2];
    parse_pl("R,R", sp);
    parse_pl("P(sum),R", dp);
    lt_dtensor *src = mk(&m, LT_I32, 2, shape, sp), *out;
    LT_EXPECT_STATUS(lt_redistribute(src, dp, 2, NULL, &out, NULL), LT_UNSUPPORTED);
    lt_dtensor_free(src);
}

/* A mesh of 8 dims (256 ranks): min-cost runs out of its search budget and
 * returns the greedy route, which must still be right. */
static void test_search_budget(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("2x2x2x2x2x2x2x2");
    const int64_t shape[] = {5, 4, 3, 2};
    lt_placement sp[8], dp[8];
    parse_pl("S(0),S(1),S(2),S(3),S(0),S(1),S(2),P(sum)", sp);
    parse_pl("S(3),S(2),S(1),S(0),S(3),S(2),S(1),S(0)", dp);
    lt_dtensor *src = mk(&m, LT_F32, 4, shape, sp), *out, *exp = mk(&m, LT_F32, 4, shape, dp);
    lt_redistribute_opts o = {0};
    o.verify = 1;
    lt_plan *p, *g;
    LT_CHECK(lt_redistribute(src, dp, 8, &o, &out, &p));
    expect_same_shards(out, exp, "8-d mesh");
    o.planner = LT_PLANNER_GREEDY;
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 4, shape, sp, dp, 8, &o, &g));
    print_message("8-d mesh: min-cost %s (%d states), %zu bytes; greedy %zu bytes\n",
                  p->search_truncated ? "fell back on greedy" : "finished", p->states_explored,
                  p->total_bytes, g->total_bytes);
    assert_true(p->total_bytes <= g->total_bytes);
    lt_plan_free(p);
    lt_plan_free(g);
    lt_dtensor_free(out);
    lt_dtensor_free(exp);
    lt_dtensor_free(src);
}

static void test_plan_cache(void **state) {
    (void)state;
    lt_plan_cache_clear();
    lt_mesh m = mk_mesh("2x2x2");
    lt_placement sp[3], dp[3];
    parse_pl("S(0),S(1),S(0)", sp);
    parse_pl("S(1),S(0),S(-2)", dp);
    const int64_t shape[] = {64, 48};
    lt_plan *a, *b, *c;
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 2, shape, sp, dp, 3, NULL, &a));
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 2, shape, sp, dp, 3, NULL, &b));
    assert_ptr_equal(a, b);                     /* the same shared plan */
    size_t hits, misses, entries;
    lt_plan_cache_stats(&hits, &misses, &entries);
    assert_int_equal(hits, 1);
    assert_int_equal(misses, 1);
    assert_int_equal(entries, 1);
    for (int i = 0; i < 100; i++) { /* every warm lookup is a hit on the same plan */
        LT_CHECK(lt_plan_redistribute(&m, LT_F32, 2, shape, sp, dp, 3, NULL, &c));
        assert_ptr_equal(c, a);
        lt_plan_free(c);
    }
    lt_plan_cache_stats(&hits, &misses, &entries);
    assert_int_equal(hits, 101);
    lt_redistribute_opts o = {0};
    o.no_cache = 1;
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 2, shape, sp, dp, 3, &o, &c));
    assert_ptr_not_equal(a, c);
    assert_int_equal(c->total_bytes, a->total_bytes);
    /* a different dtype is a different key */
    lt_plan *d;
    LT_CHECK(lt_plan_redistribute(&m, LT_F64, 2, shape, sp, dp, 3, NULL, &d));
    assert_int_equal(d->total_bytes, 2 * a->total_bytes);
    char buf[4096];
    int n = lt_plan_format(a, buf, sizeof buf);
    assert_true(n > 0 && (size_t)n < sizeof buf);
    assert_non_null(strstr(buf, "all_to_all"));
    print_message("%s", buf);
    lt_plan_free(a);
    lt_plan_free(b);
    lt_plan_free(c);
    lt_plan_free(d);
    lt_plan_cache_clear();
}

/* The executor keeps every rank's layout of a state (plan_exec.c), keyed
 * by mesh, shape and placements: states that differ in the shape alone
 * (transposes, an empty dim) or in one placement run one after the other,
 * warm, and every result is still the destination's distribution of the
 * same tensor (check_pair, independent of the executor and its cache). */
static void test_layout_cache_keys(void **state) {
    (void)state;
    lt_plan_cache_clear();
    lt_mesh m = mk_mesh("2x2x2");
    const int64_t shapes[][2] = {{5, 7}, {7, 5}, {6, 4}, {4, 6}, {0, 4}, {4, 0}, {5, 7}};
    const char *pairs[][2] = {{"S(0),S(1),R", "R,S(0),S(1)"}, {"S(1),S(0),R", "R,S(0),S(1)"},
                              {"SS(0,2),S(0),R", "S(1),R,SS(1,2)"}, {"R,R,R", "S(0),S(0),S(0)"},
                              {"S(0),S(0),S(0)", "S(1),S(1),S(1)"}};
    sweep_stats st = {0};
    for (int pass = 0; pass < 2; pass++)
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
            for (size_t q = 0; q < sizeof pairs / sizeof pairs[0]; q++) {
                lt_placement sp[3], dp[3];
                parse_pl(pairs[q][pass], sp);
                parse_pl(pairs[q][1 - pass], dp);
                check_pair(&m, LT_F32, 2, shapes[k], sp, dp, LT_PLANNER_MIN_COST, 1, &st);
            }
    assert_true(st.run > 40);
    lt_plan_cache_clear();
}

static int teardown(void **state) {
    (void)state;
    lt_plan_cache_clear();
    return 0;
}

/* A run that cannot start says why once, with its context once: a
 * communicator on another mesh (the text written out by hand). */
static void test_context_once(void **state) {
    (void)state;
    lt_mesh m4 = mk_mesh("4"), m2 = mk_mesh("2");
    lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
    parse_pl("S(0)", sp);
    parse_pl("R", dp);
    int64_t shape[1] = {8};
    lt_dtensor *src = mk(&m4, LT_F32, 1, shape, sp), *out = NULL;
    lt_comm *c2 = NULL;
    LT_CHECK(lt_comm_new(&m2, &c2));
    lt_redistribute_opts o = {0};
    o.comm = c2;
    LT_EXPECT_STATUS(lt_redistribute(src, dp, 1, &o, &out, NULL), LT_INVALID);
    assert_null(out);
    assert_string_equal(lt_errmsg(), "redistribute of an unnamed tensor [S(0)] -> [R]: "
                                     "the communicator's mesh 2 is not the tensor's mesh 4");
    lt_comm_free(c2);
    lt_dtensor_free(src);
}

/* opts->cost: the 2x2 transpose [S(0),S(1)] -> [S(1),S(0)] of a (4,4) f32
 * under moves all is one permute in which ranks 1 and 2 swap their 2x2
 * blocks (2 x 16 bytes, by hand), through lt_redistribute and
 * lt_plan_redistribute alike; without cost the per-dim plan takes three
 * steps; an out-of-range objective is refused. */
static void test_opts_cost(void **state) {
    (void)state;
    lt_mesh m = mk_mesh("2x2");
    lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
    parse_pl("S(0),S(1)", sp);
    parse_pl("S(1),S(0)", dp);
    int64_t shape[2] = {4, 4};
    lt_dtensor *src = mk(&m, LT_F32, 2, shape, sp), *out = NULL;
    lt_plan_cost cost = {0};
    cost.objective = LT_OBJECTIVE_BYTES;
    cost.moves = LT_MOVES_ALL;
    lt_redistribute_opts o = {0};
    o.verify = 1;
    o.cost = &cost;
    lt_plan *p = NULL;
    LT_CHECK(lt_redistribute(src, dp, 2, &o, &out, &p));
    assert_int_equal(p->nsteps, 1);
    assert_int_equal(p->total_bytes, 32);
    lt_plan_free(p);
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 2, shape, sp, dp, 2, &o, &p));
    assert_int_equal(p->nsteps, 1);
    lt_plan_free(p);
    o.cost = NULL;
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 2, shape, sp, dp, 2, &o, &p));
    assert_int_equal(p->nsteps, 3);
    lt_plan_free(p);
    cost.objective = (lt_objective)LT_OBJECTIVE_COUNT;
    o.cost = &cost;
    lt_dtensor_free(out);
    out = NULL;
    LT_EXPECT_STATUS(lt_redistribute(src, dp, 2, &o, &out, NULL), LT_INVALID);
    assert_null(out);
    lt_dtensor_free(src);
}

int main(void) {
    lt_test_backend_from_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sem7_counts),
        cmocka_unit_test(test_sem7_merge_example),
        cmocka_unit_test(test_one_chunk_mesh),
        cmocka_unit_test(test_zero_fill),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_verify_catches_wrong_step),
        cmocka_unit_test(test_verify_inconsistent_source),
        cmocka_unit_test(test_verify_reshard_direct),
        cmocka_unit_test(test_strided_and_explicit),
        cmocka_unit_test(test_full_tensor),
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_plan_cache),
        cmocka_unit_test(test_layout_cache_keys),
        cmocka_unit_test(test_search_budget),
        cmocka_unit_test(test_scalars_and_explicit),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_context_once),
        cmocka_unit_test(test_opts_cost),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
