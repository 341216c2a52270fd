/* test/test_plan_bytes.c — the planner's byte model against the collectives'.
 *
 * A plan says, for every step, which collective it issues and how many bytes
 * the ranks receive (in total and on the busiest rank); running it records
 * what the collectives moved in the comm trace (collectives_sim/trace.h).
 * lt__plan_check_trace compares the two, and the scenario engine applies it
 * to every redistribute it runs, so `make test`'s run of the scenario
 * library checks the planner's bytes on every library scenario. Here: the
 * check passes on real plans (hand-counted bytes for one), and fails, naming
 * the step, when a plan's bytes, its collective or its number of
 * collectives differ from the run's.
 */
#include "test/testutil.h"

#include "collectives_sim/cost.h"
#include "localtensor/plan/plan_impl.h"

/* Redistributes (4, 4) f32 arange on mesh_s from src to dst, tracing on a
 * communicator of its own; *plan and *comm: new (the caller frees them). */
static void run(const char *mesh_s, const char *src, const char *dst, lt_plan **plan,
                lt_comm **comm) {
    lt_mesh m;
    int64_t shape[2] = {4, 4};
    lt_dtensor *d = lt_test_arange(mesh_s, src, 2, shape, &m);
    lt_placement pl[LT_MESH_MAX_DIMS];
    int np;
    LT_CHECK(lt_placements_parse(dst, pl, LT_MESH_MAX_DIMS, &np));
    LT_CHECK(lt_comm_new(&m, comm));
    lt_redistribute_opts o;
    memset(&o, 0, sizeof o);
    o.planner = LT_PLANNER_MIN_COST;
    o.comm = *comm;
    lt_dtensor *out = NULL;
    LT_CHECK(lt_redistribute(d, pl, np, &o, &out, plan));
    lt_dtensor_free(out);
    lt_dtensor_free(d);
}

/* collectives_sim/cost.h's formulas by hand, per member of a group of 4
 * (f32, 4 bytes an element). */
static void test_cost_formulas(void **state) {
    (void)state;
    /* all_reduce of 10 elements: balanced pieces 3, 3, 2, 2; member 0
     * receives 3 others' piece 0 (36 B) and the 7 elements it lacks (28 B) */
    lt__member ar = {40, 40, 0};
    assert_int_equal(lt__coll_recv(LT_COLL_ALL_REDUCE, 4, 0, -1, ar, 4), 64);
    assert_int_equal(lt__coll_recv(LT_COLL_ALL_REDUCE, 4, 3, -1, ar, 4), 3 * 8 + 32);
    assert_int_equal(lt__coll_sent(LT_COLL_ALL_REDUCE, 4, 3, -1, ar, 4, 0), 56);
    /* all_gather: 12 B own of 40 B in the group; sends its 12 B to 3 others */
    lt__member ag = {12, 40, 12};
    assert_int_equal(lt__coll_recv(LT_COLL_ALL_GATHER, 4, 1, -1, ag, 4), 28);
    assert_int_equal(lt__coll_sent(LT_COLL_ALL_GATHER, 4, 1, -1, ag, 4, 0), 36);
    /* reduce_scatter: a piece of 8 B from each of 3 others; sends 32 - 8 */
    lt__member rs = {32, 8, 0};
    assert_int_equal(lt__coll_recv(LT_COLL_REDUCE_SCATTER, 4, 2, -1, rs, 4), 24);
    assert_int_equal(lt__coll_sent(LT_COLL_REDUCE_SCATTER, 4, 2, -1, rs, 4, 0), 24);
    /* all_to_all: out 20 B of which its own piece 5 B */
    lt__member aa = {16, 20, 5};
    assert_int_equal(lt__coll_recv(LT_COLL_ALL_TO_ALL, 4, 0, -1, aa, 4), 15);
    assert_int_equal(lt__coll_sent(LT_COLL_ALL_TO_ALL, 4, 0, -1, aa, 4, 0), 11);
    /* reduce to root 1 of 8 B; scatter from root 0 (others' pieces 9 B) */
    lt__member rd = {8, 8, 0}, sc = {0, 3, 0}, sr = {12, 3, 3};
    assert_int_equal(lt__coll_recv(LT_COLL_REDUCE, 4, 1, 1, rd, 4), 24);
    assert_int_equal(lt__coll_recv(LT_COLL_REDUCE, 4, 0, 1, rd, 4), 0);
    assert_int_equal(lt__coll_sent(LT_COLL_REDUCE, 4, 0, 1, rd, 4, 0), 8);
    assert_int_equal(lt__coll_recv(LT_COLL_SCATTER, 4, 2, 0, sc, 4), 3);
    assert_int_equal(lt__coll_recv(LT_COLL_SCATTER, 4, 0, 0, sr, 4), 0);
    assert_int_equal(lt__coll_sent(LT_COLL_SCATTER, 4, 0, 0, sr, 4, 9), 9);
    /* rounds: ring n - 1, all_reduce twice that, permute one */
    assert_int_equal(lt__coll_rounds(LT_COLL_ALL_GATHER, 4), 3);
    assert_int_equal(lt__coll_rounds(LT_COLL_ALL_REDUCE, 4), 6);
    assert_int_equal(lt__coll_rounds(LT_COLL_PERMUTE, 4), 1);
}

/* [S(0)] -> [R] on 4 ranks: one all_gather; each rank receives the other
 * three ranks' 4 floats (48 bytes), 192 in all: the plan and the run agree. */
static void test_agree_all_gather(void **state) {
    (void)state;
    lt_plan *p = NULL;
    lt_comm *c = NULL;
    run("4", "S(0)", "R", &p, &c);
    assert_int_equal(p->ncomm, 1);
    assert_int_equal(p->steps[0].bytes_per_rank, 48);
    assert_int_equal(p->steps[0].bytes_total, 192);
    LT_CHECK(lt__plan_check_trace(p, lt_comm_trace(c), 0));
    lt_plan_free(p);
    lt_comm_free(c);
}

/* A multi-step plan on 2x2 agrees step by step. */
static void test_agree_two_dims(void **state) {
    (void)state;
    lt_plan *p = NULL;
    lt_comm *c = NULL;
    run("2x2", "S(0),S(1)", "S(1),S(0)", &p, &c);
    assert_true(p->ncomm >= 1);
    LT_CHECK(lt__plan_check_trace(p, lt_comm_trace(c), 0));
    lt_plan_free(p);
    lt_comm_free(c);
}

/* A plan whose bytes, or collective, differ from the run's fails, naming
 * the step; so does a run with a collective the plan does not list. */
static void test_differences_found(void **state) {
    (void)state;
    lt_plan *p = NULL;
    lt_comm *c = NULL;
    run("4", "S(0)", "R", &p, &c);
    lt_plan_step *ps = (lt_plan_step *)&p->steps[0];
    ps->bytes_total += 4;
    LT_EXPECT_STATUS(lt__plan_check_trace(p, lt_comm_trace(c), 0), LT_INVALID);
    assert_non_null(
        strstr(lt_errmsg(), "internal: step 1: the plan says all_gather on mesh dim 0, 196 bytes"));
    ps->bytes_total -= 4;
    ps->bytes_per_rank = 0;
    LT_EXPECT_STATUS(lt__plan_check_trace(p, lt_comm_trace(c), 0), LT_INVALID);
    ps->bytes_per_rank = 48;
    ps->coll = LT_COLL_ALL_REDUCE;
    LT_EXPECT_STATUS(lt__plan_check_trace(p, lt_comm_trace(c), 0), LT_INVALID);
    ps->coll = LT_COLL_ALL_GATHER;
    LT_CHECK(lt__plan_check_trace(p, lt_comm_trace(c), 0));   /* restored: agrees again */
    /* a second run on the same communicator: two events, one listed */
    lt_plan *q = NULL;
    lt_comm *c2 = c;
    lt_mesh m;
    int64_t shape[2] = {4, 4};
    lt_dtensor *d = lt_test_arange("4", "S(0)", 2, shape, &m);
    lt_placement r = {0};
    int np;
    LT_CHECK(lt_placements_parse("R", &r, 1, &np));
    lt_redistribute_opts o;
    memset(&o, 0, sizeof o);
    o.comm = c2;
    lt_dtensor *out = NULL;
    LT_CHECK(lt_redistribute(d, &r, 1, &o, &out, &q));
    LT_EXPECT_STATUS(lt__plan_check_trace(p, lt_comm_trace(c), 0), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "the run issued 2 collectives, the plan lists 1"));
    LT_CHECK(lt__plan_check_trace(q, lt_comm_trace(c), 1));   /* from the second run's marker */
    lt_dtensor_free(out);
    lt_dtensor_free(d);
    lt_plan_free(q);
    lt_plan_free(p);
    lt_comm_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost_formulas),
        cmocka_unit_test(test_agree_all_gather),
        cmocka_unit_test(test_agree_two_dims),
        cmocka_unit_test(test_differences_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
