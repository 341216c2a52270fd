/* test/test_verify.c — the verifier's shortcuts never pass a wrong shard.
 *
 * Verification skips bytes it can prove right without reading them: a
 * shard that is a view of bytes verified one check before (the record
 * lt_redistribute passes from step to step), a replica that holds the very
 * buffer of one already checked, and it checks the remaining buffers on the
 * thread pool. Each case here plants a wrong shard where a shortcut could
 * hide it and expects the rank, the indices and both values, computed by
 * hand: the global tensor is arange, so element (i, j) of a (rows, cols)
 * tensor is i * cols + j.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/localtensor.h"
#include "localtensor/redistribute.h"
#include "localtensor/verify/verify_impl.h"
#include "kernels/pool_impl.h"
#include "test/testutil.h"

static lt_dtensor *redist(const lt_dtensor *src, const char *to) {
    lt_placement pl[LT_MESH_MAX_DIMS];
    int np;
    LT_CHECK(lt_placements_parse(to, pl, LT_MESH_MAX_DIMS, &np));
    lt_dtensor *out = NULL;
    LT_CHECK(lt_redistribute(src, pl, np, NULL, &out, NULL));
    return out;
}

static void expect_diff(const lt_verify_report *rep, int rank, int64_t l0, int64_t l1, int64_t g0,
                        int64_t g1, double want, double got) {
    assert_false(rep->ok);
    if (rep->rank != rank || rep->local_index[0] != l0 || rep->local_index[1] != l1 ||
        rep->global_index[0] != g0 || rep->global_index[1] != g1 ||
        fabs(rep->expected - want) > 1e-6 || rep->actual != got)
        fail_msg(
            "wanted rank %d local [%lld, %lld] global [%lld, %lld] expected %g got %g; report: %s",
            rank, (long long)l0, (long long)l1, (long long)g0, (long long)g1, want, got,
            rep->message);
}

/* Writes v at flat index `at` of t (a shard of out), then expects
 * lt_verify_reshard(src, out) to fail naming that element: rank, local
 * (l0, l1), global (g0, g1), the right value want. Returns how many
 * elements the report counts wrong. */
static int64_t plant_fails(const lt_dtensor *src, const lt_dtensor *out, lt_tensor *t, int64_t at,
                           double v, int rank, int64_t l0, int64_t l1, int64_t g0, int64_t g1,
                           double want) {
    lt_verify_report rep;
    lt_set_flat(t, at, v);
    LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
    expect_diff(&rep, rank, l0, l1, g0, g1, want, v);
    return (int64_t)rep.ndiff;
}

/* The thread pool and its split threshold back to their defaults. */
static void pool_defaults(void) {
    lt__set_par_min_bytes(0);
    lt_set_threads(0);
}

/* 2 threads splitting work from 1 byte on; returns arange (s0, s1) on
 * mesh with placements `from`, and *out its redistribute to `to`, checked
 * right once. The caller frees both and calls pool_defaults. */
static lt_dtensor *pool_case(const char *mesh, const char *from, int64_t s0, int64_t s1,
                             const char *to, lt_dtensor **out) {
    lt_set_threads(2);
    lt__set_par_min_bytes(1);
    lt_mesh m;
    int64_t shape[2] = {s0, s1};
    lt_dtensor *src = lt_test_arange(mesh, from, 2, shape, &m);
    *out = redist(src, to);
    lt_verify_report rep;
    LT_CHECK(lt_verify_reshard(src, *out, 0, &rep));
    return src;
}

/* B: [S(0), S(1)] of (8, 6) on 2x2 as views of rows of A = [R, S(1)], whose
 * rank (a, b) holds all 8 rows of columns 3b .. 3b + 2; rank r's view starts
 * at row rows[r] (right: 4a). */
static lt_dtensor *views_of(const lt_dtensor *a_state, const int64_t *rows) {
    lt_tensor *v[4];
    for (int r = 0; r < 4; r++)
        LT_CHECK(lt_narrow(a_state->local->shards[r], 0, rows[r], 4, &v[r]));
    lt_placement pl[2] = {lt_shard(0), lt_shard(1)};
    lt_dtensor *b = NULL;
    LT_CHECK(lt_from_local(&a_state->local->mesh, v, pl, 2, 0, &b));
    for (int r = 0; r < 4; r++) lt_tensor_free(v[r]);
    return b;
}

/* A view of verified bytes is right only where each element lies where the
 * verified shard keeps the same global index: a view at the wrong rows or
 * with the wrong stride is caught, and a wrong byte in the buffer the views
 * point into is caught by a check that has no record of it. */
static void test_view_of_verified(void **state) {
    (void)state;
    lt_mesh m;
    int64_t shape[2] = {8, 6};
    lt_dtensor *src = lt_test_arange("2x2", "S(0),S(1)", 2, shape, &m);
    lt_dtensor *a = redist(src, "R,S(1)");
    lt_verify_report rep;
    lt__verified *memo = NULL;
    LT_CHECK(lt__verified_source(src, &memo));
    LT_CHECK(lt__verify_reshard_memo(src, a, 0, &rep, &memo));
    /* the right views pass */
    lt_dtensor *b = views_of(a, (int64_t[]){0, 0, 4, 4});
    LT_CHECK(lt__verify_reshard_memo(src, b, 1, &rep, &memo));
    lt_dtensor_free(b);
    /* rank 3 = (1, 1) views rows 0..3 of its buffer instead of 4..7:
     * local (0, 0) is global (4, 3) = 27 but holds (0, 3) = 3 */
    LT_CHECK(lt__verify_reshard_memo(src, a, 0, &rep, &memo));
    b = views_of(a, (int64_t[]){0, 0, 4, 0});
    LT_EXPECT_STATUS(lt__verify_reshard_memo(src, b, 1, &rep, &memo), LT_MISMATCH);
    assert_null(memo);
    expect_diff(&rep, 3, 0, 0, 4, 3, 27, 3);
    lt_dtensor_free(b);
    /* rank 1 = (0, 1): the right start, a column stride of 0: local (0, 1)
     * is global (0, 4) = 4 but holds (0, 3) = 3 */
    LT_CHECK(lt__verified_source(src, &memo));
    LT_CHECK(lt__verify_reshard_memo(src, a, 0, &rep, &memo));
    b = views_of(a, (int64_t[]){0, 0, 4, 4});
    b->local->shards[1]->strides[1] = 0;
    LT_EXPECT_STATUS(lt__verify_reshard_memo(src, b, 1, &rep, &memo), LT_MISMATCH);
    expect_diff(&rep, 1, 0, 1, 0, 4, 4, 3);
    lt_dtensor_free(b);
    /* a wrong byte in the buffer ranks 0 and 2 of A share (all rows of
     * columns 0..2), under B's view of rank 2 = (1, 0): global (5, 1) = 31 */
    b = views_of(a, (int64_t[]){0, 0, 4, 4});
    assert_ptr_equal(b->local->shards[2]->storage, a->local->shards[0]->storage);
    lt_set_flat(a->local->shards[0], 5 * 3 + 1, -1);
    LT_EXPECT_STATUS(lt_verify_reshard(src, b, 1, &rep), LT_MISMATCH);
    expect_diff(&rep, 2, 1, 1, 5, 1, 31, -1);
    LT_EXPECT_STATUS(lt_verify_reshard(src, a, 0, &rep), LT_MISMATCH);
    expect_diff(&rep, 0, 5, 1, 5, 1, 31, -1);
    lt_dtensor_free(b);
    lt_dtensor_free(a);
    /* the same through lt_redistribute: [S(0), R] -> [R, S(0)] of (8, 8)
     * on 2x2, greedy, is an all_gather to [R, R] (one buffer) and a local
     * slice whose shards view it (checked through the record); rank (a, b)
     * holds rows 4b .. 4b + 3 */
    lt_dtensor_free(src);
    shape[0] = shape[1] = 8;
    src = lt_test_arange("2x2", "S(0),R", 2, shape, &m);
    lt_placement to[2] = {lt_replicate(), lt_shard(0)};
    lt_dtensor *out = NULL;
    LT_CHECK(lt_redistribute(src, to, 2,
                             &(lt_redistribute_opts){.verify = 1, .planner = LT_PLANNER_GREEDY},
                             &out, NULL));
    for (int r = 1; r < 4; r++)
        assert_ptr_equal(out->local->shards[r]->storage, out->local->shards[0]->storage);
    assert_int_equal(out->local->shards[3]->offset, 32);   /* row 4 of the gathered (8, 8) */
    /* rank 3 = (1, 1): local (3, 2) is global (7, 2) = 58; rank 1 = (0, 1)
     * views the same rows, so it is named (its replica class is checked
     * once) */
    lt_tensor *t = out->local->shards[3];
    float *p = (float *)lt_data(t) + 3 * t->strides[0] + 2 * t->strides[1];
    *p = 0.5f;
    LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
    expect_diff(&rep, 1, 3, 2, 7, 2, 58, 0.5);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
}

/* On the thread pool: ranks that should share one buffer but hold copies
 * are each checked, and the lowest wrong rank is named whatever thread
 * found it. */
static void test_replicas_on_the_pool(void **state) {
    (void)state;
    lt_set_threads(2);
    lt__set_par_min_bytes(1);
    lt_mesh m;
    int64_t shape[2] = {8, 6};
    lt_dtensor *src = lt_test_arange("2x2", "S(0),S(1)", 2, shape, &m);
    for (int round = 0; round < 2; round++) {
        lt_dtensor *a = redist(src, "R,S(1)");   /* ranks 0, 2 share; 1, 3 share */
        lt_verify_report rep;
        for (int r = 0; r < 4; r++)
            LT_CHECK(lt_tensor_make_writable(a->local->shards[r])); /* four copies */
        LT_CHECK(lt_verify_reshard(src, a, 0, &rep));
        /* rank 3 local (7, 2) = global (7, 5) = 47; rank 1 local (2, 0) =
         * global (2, 3) = 15; round 1 plants in rank 3 only */
        lt_set_flat(a->local->shards[3], 7 * 3 + 2, 100);
        if (round == 0) lt_set_flat(a->local->shards[1], 2 * 3, 200);
        LT_EXPECT_STATUS(lt_verify_reshard(src, a, 0, &rep), LT_MISMATCH);
        if (round == 0) expect_diff(&rep, 1, 2, 0, 2, 3, 15, 200);
        else expect_diff(&rep, 3, 7, 2, 7, 5, 47, 100);
        lt_dtensor_free(a);
    }
    lt_dtensor_free(src);
    pool_defaults();
}

/* Partial and uneven shards on the pool: (7, 5) from [S(0), P(sum)] to
 * [S(1), R] on 2x2: rank (a, b) holds columns 0..2 (a = 0) or 3..4 (a = 1)
 * of all 7 rows, summed over the Partial dim. */
static void test_partial_uneven_on_the_pool(void **state) {
    (void)state;
    lt_dtensor *out, *src = pool_case("2x2", "S(0),P(sum)", 7, 5, "S(1),R", &out);
    lt_verify_report rep;
    /* rank 3's private copy: local (6, 1) = global (6, 4) = 34 */
    LT_CHECK(lt_tensor_make_writable(out->local->shards[3]));
    plant_fails(src, out, out->local->shards[3], 6 * 2 + 1, -5, 3, 6, 1, 6, 4, 34);
    lt_dtensor_free(out);
    /* a kept Partial: [S(0), P(sum)] -> [R, P(sum)]: rank (a, b) holds all
     * rows, its own part b; rank 1's part of (6, 0) = 30 is half of it */
    out = redist(src, "R,P(sum)");
    LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
    LT_CHECK(lt_tensor_make_writable(out->local->shards[1]));
    plant_fails(src, out, out->local->shards[1], 6 * 5, 7, 1, 6, 0, 6, 0, 15);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
    pool_defaults();
}

/* Reduced values are checked in one pass over the contributions, without
 * building the expected shard: f64 (6, 4) from [P(avg), S(1)] to [R, S(1)]
 * on 2x2, on the pool and on one thread. Rank (a, b) holds columns
 * 2b .. 2b + 1 of the average over a of the parts, i.e. arange. A value
 * off by less than the tolerance (f64: 1e-7 + 1e-7 |x|) passes; one off by
 * more is named. */
static void test_fused_reduction(void **state) {
    (void)state;
    for (int threads = 1; threads <= 2; threads++) {
        lt_set_threads(threads);
        lt__set_par_min_bytes(1);
        lt_mesh m;
        lt_placement pl[2];
        int np;
        LT_CHECK(lt_mesh_parse("2x2", &m));
        LT_CHECK(lt_placements_parse("P(avg),S(1)", pl, 2, &np));
        int64_t shape[2] = {6, 4};
        lt_init init = {LT_INIT_ARANGE, 0};
        lt_dtensor *src = NULL;
        LT_CHECK(lt_dtensor_new(&m, LT_F64, 2, shape, pl, np, &init, &src));
        lt_dtensor *out = redist(src, "R,S(1)");
        lt_verify_report rep;
        LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
        for (int r = 0; r < 4; r++) LT_CHECK(lt_tensor_make_writable(out->local->shards[r]));
        /* rank 3 = (1, 1), local (5, 1) = global (5, 3) = 23 */
        lt_set_flat(out->local->shards[3], 5 * 2 + 1, 23 + 1e-6);   /* within 1e-7 + 23e-7 */
        LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
        lt_set_flat(out->local->shards[3], 5 * 2 + 1, 23.001);
        /* rank 2 = (1, 0), local (0, 1) = global (0, 1) = 1 */
        lt_set_flat(out->local->shards[2], 1, NAN);
        LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
        assert_int_equal(rep.rank, 2);
        assert_true(rep.local_index[0] == 0 && rep.local_index[1] == 1 && rep.global_index[1] == 1);
        assert_true(rep.expected == 1 && isnan(rep.actual));
        lt_set_flat(out->local->shards[2], 1, 1);
        LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
        expect_diff(&rep, 3, 5, 1, 5, 3, 23, 23.001);
        lt_dtensor_free(out);
        lt_dtensor_free(src);
    }
    pool_defaults();
}

/* A partial sum may be added in any order, and low precision rounds each
 * order differently: [big, 1, 1, -big] over [P(sum), P(sum)] on 2x2 sums to
 * 0 in rank order (big + 1 rounds back to big: bf16 big = 256, f32 big =
 * 2^24) but to 2 exactly. Both are right for [R, R]; a result outside the
 * order slack (2 (n - 1) u sum|x| = 6 u (2 big + 2) ~= 12 here) is still
 * named. bf16 takes the path that builds the expected shard, f32 the fused
 * one. */
static void test_sum_order_slack(void **state) {
    (void)state;
    const lt_dtype dts[2] = {LT_BF16, LT_F32};
    const double bigs[2] = {256, 16777216};
    for (int k = 0; k < 2; k++) {
        lt_mesh m;
        LT_CHECK(lt_mesh_parse("2x2", &m));
        int64_t one = 1;
        const double in[4] = {bigs[k], 1, 1, -bigs[k]};
        lt_tensor *sh[4];
        for (int r = 0; r < 4; r++)
            LT_CHECK(lt_tensor_from_doubles(dts[k], 1, &one, &in[r], 1, &sh[r]));
        lt_placement pp[2] = {lt_partial(LT_REDOP_SUM), lt_partial(LT_REDOP_SUM)},
                     rr[2] = {lt_replicate(), lt_replicate()};
        lt_dtensor *src = NULL;
        LT_CHECK(lt_from_local(&m, sh, pp, 2, 0, &src));
        const double outs[3] = {2, 0, 64};
        for (int o = 0; o < 3; o++) {
            lt_tensor *rs[4];
            for (int r = 0; r < 4; r++)
                LT_CHECK(lt_tensor_from_doubles(dts[k], 1, &one, &outs[o], 1, &rs[r]));
            lt_dtensor *act = NULL;
            LT_CHECK(lt_from_local(&m, rs, rr, 2, 0, &act));
            lt_verify_report rep;
            if (o < 2) {
                LT_CHECK(lt_verify_reshard(src, act, 0, &rep));
            } else {
                LT_EXPECT_STATUS(lt_verify_reshard(src, act, 0, &rep), LT_MISMATCH);
                assert_int_equal(rep.rank, 0);
                assert_true(rep.expected == 0 && rep.actual == 64);
            }
            lt_dtensor_free(act);
            for (int r = 0; r < 4; r++) lt_tensor_free(rs[r]);
        }
        lt_dtensor_free(src);
        for (int r = 0; r < 4; r++) lt_tensor_free(sh[r]);
    }
}

/* One buffer checked in pieces of rows on the pool: S(0) -> R of (6, 5)
 * on 4 ranks is an all-gather whose result is one buffer every rank
 * shares, so it is one piece of work; cut into 4 pieces (half a thread's
 * share: rows 0-1, 2-3, 4, 5), both threads share it. A wrong value in a late row is named (rank 0,
 * the lowest that holds the buffer; local index = global index, value i * 5 + j); bytes that differ
 * where the values agree (-0 for 0) pass, as with one thread; of two wrong rows, the first in
 * row-major order is named whichever thread read it. */
static void test_gather_in_pieces(void **state) {
    (void)state;
    lt_dtensor *out, *src = pool_case("4", "S(0)", 6, 5, "R", &out);
    for (int r = 1; r < 4; r++)
        assert_ptr_equal(out->local->shards[r]->storage, out->local->shards[0]->storage);
    lt_verify_report rep;
    lt_tensor *t = out->local->shards[0];
    lt_set_flat(t, 0, -0.0);   /* global (0, 0) = 0: other bytes, the same value */
    LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
    lt_set_flat(t, 0, 0.0);   /* the first piece right again: only a late piece can tell */
    /* global (5, 3) = 28 wrong; then (2, 4) = 14 too, now the first */
    assert_int_equal(plant_fails(src, out, t, 5 * 5 + 3, 9, 0, 5, 3, 5, 3, 28), 1);
    assert_int_equal(plant_fails(src, out, t, 2 * 5 + 4, 1, 0, 2, 4, 2, 4, 14), 2);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
    pool_defaults();
}

/* Reduced values in pieces: P(sum) -> R of f32 (6, 5) on 4 ranks sums four
 * parts of arange into one shared buffer, checked by the fused check in 4
 * pieces of rows. Within tolerance passes (f32: 1e-5 + 1.3e-6 |x|), a
 * value off by more or NaN in a late row is named, and so is one past the
 * first block of a long row. */
static void test_sum_in_pieces(void **state) {
    (void)state;
    lt_set_threads(2);
    lt__set_par_min_bytes(1);
    lt_mesh m;
    int64_t shape[2] = {6, 5};
    lt_dtensor *src = lt_test_arange("4", "P(sum)", 2, shape, &m);
    lt_dtensor *out = redist(src, "R");
    lt_verify_report rep;
    LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
    lt_tensor *t = out->local->shards[0];
    lt_set_flat(t, 4 * 5 + 2, 22 + 1e-6);   /* global (4, 2) = 22 */
    LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
    plant_fails(src, out, t, 4 * 5 + 2, 22.5, 0, 4, 2, 4, 2, 22);
    lt_set_flat(t, 4 * 5 + 2, 22);
    lt_set_flat(t, 5 * 5 + 4, NAN);   /* global (5, 4) = 29 */
    LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
    assert_int_equal(rep.rank, 0);
    assert_true(rep.local_index[0] == 5 && rep.local_index[1] == 4 && rep.expected == 29 &&
                isnan(rep.actual));
    lt_dtensor_free(out);
    lt_dtensor_free(src);
    /* rows longer than the fused check's block (4096 f32): global (1, 4098)
     * of (2, 4099) = 4099 + 4098 lies in a row's second block */
    shape[0] = 2;
    shape[1] = 4099;
    src = lt_test_arange("4", "P(sum)", 2, shape, &m);
    out = redist(src, "R");
    LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
    plant_fails(src, out, out->local->shards[0], 4099 + 4098, 8197.5, 0, 1, 4098, 1, 4098, 8197);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
    pool_defaults();
}

/* A shard read in pieces below a shard read whole: R -> S(0) of (3, 4) on
 * 2 ranks: rank 0 holds rows 0..1 (two pieces of a row), rank 1 row 2 (one
 * row: read whole, first). With both wrong, rank 0 is named although rank
 * 1's check finishes first; with only rank 1 wrong, rank 1. */
static void test_pieces_below_a_whole_shard(void **state) {
    (void)state;
    lt_set_threads(2);
    lt__set_par_min_bytes(1);
    lt_mesh m;
    int64_t shape[2] = {3, 4};
    lt_dtensor *src = lt_test_arange("2", "R", 2, shape, &m);
    for (int round = 0; round < 2; round++) {
        lt_dtensor *out = redist(src, "S(0)");
        lt_verify_report rep;
        for (int r = 0; r < 2; r++) LT_CHECK(lt_tensor_make_writable(out->local->shards[r]));
        LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
        lt_set_flat(out->local->shards[1], 1, -3);   /* global (2, 1) = 9 */
        if (round == 0) lt_set_flat(out->local->shards[0], 4 + 2, -7);   /* global (1, 2) = 6 */
        LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
        if (round == 0) expect_diff(&rep, 0, 1, 2, 1, 2, 6, -7);
        else expect_diff(&rep, 1, 0, 1, 2, 1, 9, -3);
        lt_dtensor_free(out);
    }
    lt_dtensor_free(src);
    pool_defaults();
}

/* A 1-d shard has one row: it is cut into parts of the row. S(0) -> R of
 * (42,) on 4 ranks gathers runs of 11, 11, 11, 9 into one shared buffer,
 * cut into 4 parts (pieces of half a thread's share: 11, 11, 10, 10
 * elements), so the third run is split at 32; [S(0), P(sum)] -> [R, R] on
 * 2x2 sums runs of 21, split at 11, 22 and 32. Right values pass (a part
 * read from the wrong place of its run would fail the fused check only:
 * an internal error); a wrong value at 32, the first of a clipped run, is
 * named (element i is i). */
static void test_one_row_in_parts(void **state) {
    (void)state;
    lt_set_threads(2);
    lt__set_par_min_bytes(1);
    lt_mesh m;
    int64_t n = 42;
    const char *from[2] = {"S(0)", "S(0),P(sum)"}, *mesh[2] = {"4", "2x2"}, *to[2] = {"R", "R,R"};
    for (int k = 0; k < 2; k++) {
        lt_dtensor *src = lt_test_arange(mesh[k], from[k], 1, &n, &m);
        lt_dtensor *out = redist(src, to[k]);
        lt_verify_report rep;
        LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
        for (int r = 1; r < 4; r++)
            assert_ptr_equal(out->local->shards[r]->storage, out->local->shards[0]->storage);
        lt_set_flat(out->local->shards[0], 32, 0.25);
        LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
        assert_int_equal(rep.rank, 0);
        assert_true(rep.local_index[0] == 32 && rep.global_index[0] == 32 && rep.expected == 32 &&
                    rep.actual == 0.25);
        lt_dtensor_free(out);
        lt_dtensor_free(src);
    }
    pool_defaults();
}

/* Runs that lie back to back in both the shard and the source are compared
 * in one memcmp (walk's vpend): S(0) -> R of (6, 5) on 4 ranks, on one
 * thread, joins each source rank's rows (0-1, 2-3, 4, 5); a wrong value at
 * the end of a joined span, at the start of the next and at the shard's
 * last element is named (rank 0, the lowest holding the shared buffer;
 * value i * 5 + j). R -> S(1) on 2 ranks, private copies: each shard's
 * rows lie back to back but the source's do not (rows of 5, shards of 3
 * and 2 columns), so nothing is joined: the right values pass, and rank
 * 1's shard holding the source's bytes read straight on from (0, 3) (3, 4,
 * 5, 6, ...: what a join of its rows would compare it with) is named at
 * local (1, 0), global (1, 3) = 8. */
static void test_joined_runs(void **state) {
    (void)state;
    lt_set_threads(1);
    lt_mesh m;
    int64_t shape[2] = {6, 5};
    lt_dtensor *src = lt_test_arange("4", "S(0)", 2, shape, &m);
    lt_dtensor *out = redist(src, "R");
    lt_verify_report rep;
    LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
    lt_tensor *t = out->local->shards[0];
    plant_fails(src, out, t, 1 * 5 + 4, 100, 0, 1, 4, 1, 4, 9);
    lt_set_flat(t, 1 * 5 + 4, 9);
    plant_fails(src, out, t, 2 * 5, 100, 0, 2, 0, 2, 0, 10);
    lt_set_flat(t, 2 * 5, 10);
    plant_fails(src, out, t, 5 * 5 + 4, -1, 0, 5, 4, 5, 4, 29);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
    src = lt_test_arange("2", "R", 2, shape, &m);
    out = redist(src, "S(1)");
    for (int r = 0; r < 2; r++) LT_CHECK(lt_tensor_make_writable(out->local->shards[r]));
    LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
    for (int64_t k = 0; k < 12; k++) lt_set_flat(out->local->shards[1], k, (double)(3 + k));
    LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
    expect_diff(&rep, 1, 1, 0, 1, 3, 8, 5);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
    pool_defaults();
}

/* Rows that continue a joined run in both buffers join it without being
 * walked one by one (walk), but only while one source shard holds them
 * back to back. Mesh 2, S(0) of (4, 3) gathered to R (one buffer: rank 0
 * is named). (a) Source rank 0 holds rows 0-1 as the first two rows of a
 * (4, 3) buffer whose rows 2-3 are decoys (106 ..), rank 1 holds rows 2-3
 * in a buffer of its own: gathered rows 2-3 holding the decoys are named
 * at (2, 0), expected 6. (b) Rank 0's rows are columns 0-2 of a (2, 5)
 * buffer (rows 5 apart) whose columns 3-4 are decoys: a gathered row 1
 * holding what follows row 0 in that buffer (103, 104, then 3) is named
 * at (1, 0), expected 3. (c) R -> SS(0,2) of arange (4, 3), a private
 * copy: rank 0 holds global rows 0 and 2, not a run: its second row
 * holding global row 1 (3, 4, 5: what the source holds after row 0) is
 * named at (1, 0), global (2, 0) = 6. */
static void test_rows_joined_unwalked(void **state) {
    (void)state;
    lt_set_threads(1);
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2", &m));
    lt_placement s0 = lt_shard(0);
    for (int k = 0; k < 2; k++) {
        double bv[12], cv[6];
        int64_t bs[2] = {k ? 2 : 4, k ? 5 : 3}, cs[2] = {2, 3};
        for (int i = 0; i < 12; i++) bv[i] = 100 + i;
        for (int i = 0; i < 6; i++) bv[k ? i / 3 * 5 + i % 3 : i] = i; /* global rows 0-1: 0 .. 5 */
        for (int i = 0; i < 6; i++) cv[i] = 6 + i; /* global rows 2-3: 6 .. 11 */
        lt_tensor *b, *sh[2];
        LT_CHECK(lt_tensor_from_doubles(LT_F32, 2, bs, bv, bs[0] * bs[1], &b));
        LT_CHECK(lt_tensor_from_doubles(LT_F32, 2, cs, cv, 6, &sh[1]));
        LT_CHECK(k ? lt_narrow(b, 1, 0, 3, &sh[0]) : lt_narrow(b, 0, 0, 2, &sh[0]));
        lt_dtensor *src = NULL;
        LT_CHECK(lt_from_local(&m, sh, &s0, 1, 0, &src));
        lt_dtensor *out = redist(src, "R");
        lt_verify_report rep;
        LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
        lt_tensor *t = out->local->shards[0];
        if (k == 0) {
            for (int i = 6; i < 12; i++) lt_set_flat(t, i, 100 + i);
            LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
            expect_diff(&rep, 0, 2, 0, 2, 0, 6, 106);
        } else {
            lt_set_flat(t, 3, 103);
            lt_set_flat(t, 4, 104);
            lt_set_flat(t, 5, 3);
            LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
            expect_diff(&rep, 0, 1, 0, 1, 0, 3, 103);
        }
        lt_dtensor_free(out);
        lt_dtensor_free(src);
        for (int r = 0; r < 2; r++) lt_tensor_free(sh[r]);
        lt_tensor_free(b);
    }
    int64_t shape[2] = {4, 3};
    lt_dtensor *src = lt_test_arange("2", "R", 2, shape, &m);
    lt_dtensor *out = redist(src, "SS(0,2)");
    LT_CHECK(lt_tensor_make_writable(out->local->shards[0]));
    lt_verify_report rep;
    LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
    for (int j = 0; j < 3; j++) lt_set_flat(out->local->shards[0], 3 + j, 3 + j);
    LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
    expect_diff(&rep, 0, 1, 0, 2, 0, 6, 3);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
    pool_defaults();
}

/* The runs of a shard's columns are kept for the next shard of the same
 * columns (last_dim_runs): R -> S(1) of (3, 8) on 4 ranks, private copies,
 * on one thread: rank r holds columns 2r, 2r + 1, all of the same width.
 * Rank 1 holding rank 0's values (columns 0, 1: what the runs of rank 0's
 * columns would compare it with) is named at local (0, 0), global (0, 2) =
 * 2; rank 0's own shard right. R -> R then checks shards of the same
 * columns: a wrong value in rank 2's copy (global (2, 7) = 23) is named. */
static void test_runs_kept_per_columns(void **state) {
    (void)state;
    lt_set_threads(1);
    lt_mesh m;
    int64_t shape[2] = {3, 8};
    lt_dtensor *src = lt_test_arange("4", "R", 2, shape, &m);
    lt_dtensor *out = redist(src, "S(1)");
    for (int r = 0; r < 4; r++) LT_CHECK(lt_tensor_make_writable(out->local->shards[r]));
    lt_verify_report rep;
    LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
    for (int64_t k = 0; k < 6; k++)
        lt_set_flat(out->local->shards[1], k, lt_get_flat(out->local->shards[0], k));
    LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
    expect_diff(&rep, 1, 0, 0, 0, 2, 2, 0);
    lt_dtensor_free(out);
    out = redist(src, "R");
    for (int r = 0; r < 4; r++) LT_CHECK(lt_tensor_make_writable(out->local->shards[r]));
    LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
    plant_fails(src, out, out->local->shards[2], 2 * 8 + 7, -1, 2, 2, 7, 2, 7, 23);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
    pool_defaults();
}

/* lt__verify_box_of reads a layout's contiguity instead of its lists:
 * against a scan of the lists, for every rank of Shard, StridedShard and
 * uneven placements (the strided ones hold rows that are not a run, and
 * one of a split factor that leaves some ranks a run). */
static void test_box_of_against_the_lists(void **state) {
    (void)state;
    const char *meshes[] = {"2x2", "2x2", "2x2", "4", "2x3"};
    const char *pls[] = {"S(0),S(1)", "SS(0,2),S(0)", "SS(0,3),S(1)", "SS(0,4)", "S(1),SS(0,2)"};
    const int64_t shapes[][2] = {{7, 5}, {8, 3}, {9, 4}, {4, 6}, {12, 5}};
    for (int k = 0; k < 5; k++) {
        lt_mesh m;
        lt_placement pl[LT_MESH_MAX_DIMS];
        int np;
        LT_CHECK(lt_mesh_parse(meshes[k], &m));
        LT_CHECK(lt_placements_parse(pls[k], pl, LT_MESH_MAX_DIMS, &np));
        for (int r = 0; r < m.world; r++) {
            lt_rank_layout L;
            LT_CHECK(lt_layout_rank(&m, 2, shapes[k], pl, r, &L));
            int want = 1;
            int64_t wo[2] = {0, 0}, goff[2], n[2];
            for (int d = 0; d < 2; d++) {
                if (!L.idx[d]) {
                    want &= L.local_shape[d] == shapes[k][d];
                    continue;
                }
                if (L.local_shape[d] == 0) continue;
                wo[d] = L.idx[d][0];
                for (int64_t j = 1; j < L.local_shape[d]; j++) want &= L.idx[d][j] == wo[d] + j;
            }
            int got = lt__verify_box_of(&L, 2, shapes[k], goff, n);
            if (got != want || (want && (goff[0] != wo[0] || goff[1] != wo[1] ||
                                         n[0] != L.local_shape[0] || n[1] != L.local_shape[1])))
                fail_msg("%s on %s, rank %d: box %d, the lists say %d", pls[k], meshes[k], r, got,
                         want);
            lt_rank_layout_free(&L);
        }
    }
}

/* The fused check's inner loop (localtensor/verify/verify_fused.c) sums up to four
 * contributions per pass and compares the last pass's sums as it makes
 * them. Against a plain loop written here: for 1 to 9 contributions, each
 * read contiguously or with a stride of 3 (one at a time, so every
 * position of the passes meets one), the rank's values contiguous or
 * strided, plain sums and averages (divided by 3), over more than two of
 * its blocks: right values pass with no tolerance at all (the sum is
 * rounded in order: 1 + 2^24 - 2^24 is 0 in f32, so 1 is named; every
 * order of three contributions 2^24, -2^24 and 1 among zeros appears, so
 * any two contributions added out of order show); one
 * wrong value in any block, NaN, and the exact sum where the in-order
 * sum rounds are named; -0 for 0 passes. */
#define FUSED_LEN 4133   /* past two f64 blocks and one f32 block (16 KiB each) */
#define FUSED_CASE(T, FN, BIG)                                                                     \
    do {                                                                                           \
        for (int nq = 1; nq <= 9; nq++)                                                            \
            for (int strided = -1; strided < nq; strided++)                                        \
                for (int as = 1; as <= 2; as++)                                                    \
                    for (int avg = 1; avg <= 3; avg += 2) {                                        \
                        T *buf[9], *a = calloc((size_t)FUSED_LEN * 2, sizeof(T)), e[FUSED_LEN];    \
                        const char *s[9];                                                          \
                        int64_t ss[9];                                                             \
                        assert_non_null(a);                                                        \
                        for (int q = 0; q < nq; q++) {                                             \
                            ss[q] = q == strided ? 3 : 1;                                          \
                            buf[q] = calloc((size_t)FUSED_LEN * 3, sizeof(T));                     \
                            assert_non_null(buf[q]);                                               \
                            s[q] = (const char *)buf[q];                                           \
                            for (int64_t i = 0; i < FUSED_LEN; i++) {                              \
                                T v = (T)((i * 7 + q * 13) % 29) - 14;                             \
                                int64_t t = i / 7, pb = t % nq, pn = t / nq % nq,                  \
                                        p1 = t / nq / nq % nq;                                     \
                                if (i % 7 == 3 && pb != pn && pb != p1 &&                          \
                                    pn != p1) /* order shows */                                    \
                                    v = q == pb ? BIG : q == pn ? -BIG : q == p1 ? 1 : 0;          \
                                if (i % 97 == 5)                                                   \
                                    v = q == 0 ? 1 : q == 1 ? BIG : q == 2 ? -BIG : 0;             \
                                if (i == 11) v = 0;                                                \
                                buf[q][i * ss[q]] = v;                                             \
                            }                                                                      \
                        }                                                                          \
                        for (int64_t i = 0; i < FUSED_LEN; i++) {                                  \
                            T acc = buf[0][0 + i * ss[0]];                                         \
                            for (int q = 1; q < nq; q++) acc = acc + buf[q][i * ss[q]];            \
                            e[i] = (T)((double)acc / avg);                                         \
                            a[i * as] = e[i];                                                      \
                        }                                                                          \
                        const char *ac = (const char *)a;                                          \
                        assert_int_equal(FN(s, ss, nq, ac, as, FUSED_LEN, avg, 0, 0, 0), 0);       \
                        const int64_t at[4] = {3, 2100, 4100, FUSED_LEN - 1};                      \
                        for (int k = 0; k < 4; k++) {                                              \
                            a[at[k] * as] = e[at[k]] + 1;                                          \
                            assert_int_equal(FN(s, ss, nq, ac, as, FUSED_LEN, avg, 0, 0, 0), 1);   \
                            a[at[k] * as] = (T)NAN;                                                \
                            assert_int_equal(FN(s, ss, nq, ac, as, FUSED_LEN, avg, 0, 0, 0), 1);   \
                            a[at[k] * as] = e[at[k]];                                              \
                        }                                                                          \
                        if (nq >= 3 && avg == 1) { /* element 5: 1 + BIG - BIG rounds to 0 */      \
                            assert_true(e[5] == 0);                                                \
                            a[5 * as] = 1;                                                         \
                            assert_int_equal(FN(s, ss, nq, ac, as, FUSED_LEN, avg, 0, 0, 0), 1);   \
                            a[5 * as] = e[5];                                                      \
                        }                                                                          \
                        assert_true(e[11] == 0 && !signbit(e[11]));                                \
                        a[11 * as] = (T)-0.0;                                                      \
                        assert_int_equal(FN(s, ss, nq, ac, as, FUSED_LEN, avg, 0, 0, 0), 0);       \
                        for (int q = 0; q < nq; q++) free(buf[q]);                                 \
                        free(a);                                                                   \
                    }                                                                              \
    } while (0)

static void test_fused_run_against_a_plain_sum(void **state) {
    (void)state;
    FUSED_CASE(float, lt__verify_fused_run_f32, 16777216.0f);
    FUSED_CASE(double, lt__verify_fused_run_f64, 9007199254740992.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_of_verified),
        cmocka_unit_test(test_replicas_on_the_pool),
        cmocka_unit_test(test_partial_uneven_on_the_pool),
        cmocka_unit_test(test_fused_reduction),
        cmocka_unit_test(test_sum_order_slack),
        cmocka_unit_test(test_gather_in_pieces),
        cmocka_unit_test(test_sum_in_pieces),
        cmocka_unit_test(test_pieces_below_a_whole_shard),
        cmocka_unit_test(test_one_row_in_parts),
        cmocka_unit_test(test_joined_runs),
        cmocka_unit_test(test_fused_run_against_a_plain_sum),
        cmocka_unit_test(test_box_of_against_the_lists),
        cmocka_unit_test(test_runs_kept_per_columns),
        cmocka_unit_test(test_rows_joined_unwalked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
