/* test/test_program_p2p.c — send and recv in per-rank programs
 * (collectives_sim/program.h, the matching of collectives_sim/match.h,
 * docs/SEMANTICS.md §12).
 *
 * As in test/test_program.c (helpers shared in test/program_testutil.h),
 * rank functions compare what they received with values worked out by hand
 * and note the first difference, which the test checks after the run.
 * Hang reports are checked for their kind, the ranks they name and the
 * source lines of both sides (recorded with __LINE__).
 */
#include "localtensor/collectives_sim/program.h"
#include "localtensor/collectives_sim/collectives.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "test/testutil.h"
#include "test/program_testutil.h"

/* t must be 1-d with the n values a + b*i; notes the first difference */
static void expect_line(rec *u, int rank, const char *what, const lt_tensor *t, int64_t n,
                        double a, double b) {
    if (!t || t->ndim != 1 || t->shape[0] != n) {
        note(u, "rank %d: %s: not a (%lld) tensor", rank, what, (long long)n);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        if (lt_get_flat(t, i) != a + b * (double)i) {
            note(u, "rank %d: %s: element %lld is %g, wanted %g", rank, what, (long long)i,
                 lt_get_flat(t, i), a + b * (double)i);
            return;
        }
}

/* ---- a ring: rank r holds [10r, 10r+1] and passes it to r+1 ------------------------------ */

/* flag 0: even ranks send first, odd ranks receive first (safe with a
 * rendezvous send); flag 1: every rank sends first (needs buffering). Then
 * an all_reduce of what came in. */
static lt_status ring(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p), w = lt_proc_world(p);
    lt_tensor *x = line_of(LT_F32, 2, 10.0 * r, 1), *got = NULL, *sum = NULL;
    if (!x) return LT_NOMEM;
    lt_status st;
    u->line[r] = __LINE__ + 2;
    if (u->flag || r % 2 == 0) {
        st = lt_proc_send(p, x, (r + 1) % w);
        if (!st) st = lt_proc_recv(p, (r + w - 1) % w, &got);
    } else {
        st = lt_proc_recv(p, (r + w - 1) % w, &got);
        if (!st) st = lt_proc_send(p, x, (r + 1) % w);
    }
    if (!st) st = lt_proc_all_reduce(p, 0, got, LT_REDOP_SUM, &sum);
    watch(u, r, st);
    if (!st) {
        /* rank r received rank r-1's [10(r-1), 10(r-1)+1] */
        expect_line(u, r, "received", got, 2, 10.0 * ((r + w - 1) % w), 1);
        /* over 4 ranks: 0+10+20+30 = 60 and 1+11+21+31 = 64 */
        expect_line(u, r, "sum", sum, 2, 60, 4);
    }
    lt_tensor_free(x);
    lt_tensor_free(got);
    lt_tensor_free(sum);
    return LT_OK;
}

static void test_ring(void **state) {
    (void)state;
    rec u = {0};
    lt_mesh m = mesh_of("4");
    lt_match_report *rep = (lt_match_report *)1;
    LT_CHECK(lt_program_run(&m, ring, &u, NULL, &rep));
    assert_null(rep);
    if (u.err[0]) fail_msg("%s", u.err);
    for (int r = 0; r < 4; r++) LT_CHECK(u.st[r]);
}

/* The same ring on a mesh whose positions hold rank ids 3, 1, 0, 2: to=
 * and from= name rank ids (what lt_proc_rank gives), not positions. */
static void test_ring_rank_ids(void **state) {
    (void)state;
    rec u = {0};
    static const int shape[1] = {4}, ids[4] = {3, 1, 0, 2};
    lt_mesh m;
    LT_CHECK(lt_mesh_init_ranks(&m, 1, shape, ids, 0, NULL));
    LT_CHECK(lt_program_run(&m, ring, &u, NULL, NULL));
    if (u.err[0]) fail_msg("%s", u.err);
}

/* Every rank sending first needs the send buffered: with a rendezvous send
 * it is a cycle 0 -> 1 -> 2 -> 3 -> 0, each waiting in its send. */
static void test_ring_needs_buffering(void **state) {
    (void)state;
    rec u = {0};
    u.flag = 1;
    lt_match_report *rep = run_hang("4", ring, &u, LT_HANG_CYCLE, NULL);
    assert_int_equal(rep->ncycle, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(rep->cycle[i], i);
    char *t = text_of(rep);
    char want[256];
    snprintf(want, sizeof want,
             "rank 0 waits in send(to=1) f32 (2) #1 at test/test_program_p2p.c:%d for rank 1; "
             "rank 1 waits in send(to=2) f32 (2) #1",
             u.line[0]);
    expect_in(t, want);
    expect_in(t, "rank 3 waits in send(to=0) f32 (2) #1");
    expect_in(t, "point to point:");
    free(t);
    lt_match_report_free(rep);
}

/* ---- a pairwise swap, and the order of several sends ------------------------------------- */

/* Ranks 0 and 1 swap [1,2,3] and [7,8,9]; rank 0 receives into a
 * preallocated tensor (which declares f32 (3)). Then rank 0 sends two
 * tensors, [100] then [200, 201]; rank 1 receives them in that order. */
static lt_status swap(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p);
    lt_tensor *x = line_of(LT_F32, 3, r ? 7 : 1, 1), *got = NULL, *a = NULL, *b = NULL;
    if (!x) return LT_NOMEM;
    lt_status st;
    if (r == 0) {
        int64_t n = 3;
        st = lt_tensor_empty(LT_F32, 1, &n, &got);
        if (!st) st = lt_proc_send(p, x, 1);
        if (!st) st = lt_proc_recv(p, 1, &got);
        a = line_of(LT_F32, 1, 100, 0);
        b = line_of(LT_F32, 2, 200, 1);
        if (!st) st = lt_proc_send(p, a, 1);
        if (!st) st = lt_proc_send(p, b, 1);
    } else {
        st = lt_proc_recv(p, 0, &got);
        if (!st) st = lt_proc_send(p, x, 0);
        if (!st) st = lt_proc_recv(p, 0, &a);
        if (!st) st = lt_proc_recv(p, 0, &b);
    }
    watch(u, r, st);
    if (!st) {
        expect_line(u, r, "swapped", got, 3, r ? 1 : 7, 1);
        expect_line(u, r, "first", a, 1, 100, 0);
        expect_line(u, r, "second", b, 2, 200, 1);
    }
    lt_tensor_free(x);
    lt_tensor_free(got);
    lt_tensor_free(a);
    lt_tensor_free(b);
    return LT_OK;
}

static void test_swap(void **state) {
    (void)state;
    rec u = {0};
    lt_mesh m = mesh_of("2");
    LT_CHECK(lt_program_run(&m, swap, &u, NULL, NULL));
    if (u.err[0]) fail_msg("%s", u.err);
    LT_CHECK(u.st[0]);
    LT_CHECK(u.st[1]);
}

/* ---- a missing send --------------------------------------------------------------------- */

/* Rank 2 receives three times from rank 1, which sends twice and returns;
 * rank 0 does nothing. */
static lt_status missing(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p);
    lt_tensor *x = line_of(LT_I64, 2, r, 1), *got = NULL;
    if (!x) return LT_NOMEM;
    lt_status st = LT_OK;
    for (int k = 0; r == 2 && k < 3 && !st; k++) {
        lt_tensor_free(got);
        got = NULL;
        u->line[r] = __LINE__ + 1;
        st = lt_proc_recv(p, 1, &got);
    }
    for (int k = 0; r == 1 && k < 2 && !st; k++) {
        u->line[r] = __LINE__ + 1;
        st = lt_proc_send(p, x, 2);
    }
    watch(u, r, st);
    lt_tensor_free(x);
    lt_tensor_free(got);
    return LT_OK;
}

static void test_missing_send(void **state) {
    (void)state;
    rec u = {0};
    lt_match_report *rep = run_hang("3", missing, &u, LT_HANG_MISSING, NULL);
    assert_int_equal(rep->on_pair, 1);
    assert_int_equal(rep->rank_a, 2);
    assert_int_equal(rep->rank_b, 1);
    assert_int_equal(rep->ranks[2].state, LT_RANK_WAITING);
    assert_int_equal(rep->ranks[2].seq, 2);   /* two transfers 1 -> 2 completed: this is #3 */
    assert_int_equal(rep->ranks[1].state, LT_RANK_FINISHED);
    assert_int_equal(rep->ranks[0].state, LT_RANK_FINISHED);
    char want[512];
    snprintf(want, sizeof want,
             "would hang (missing): rank 2 waits in recv(from=1) #3 at "
             "test/test_program_p2p.c:%d; rank 1 finished without sending to rank 2 (after its "
             "last call at test/test_program_p2p.c:%d)",
             u.line[2], u.line[1]);
    expect_in(lt_errmsg(), want);
    char *t = text_of(rep);
    expect_in(t, "point to point:\n    rank 2: waiting in recv(from=1) #3");
    free(t);
    lt_match_report_free(rep);
}

/* ---- a send and a recv that disagree ------------------------------------------------------ */

/* Rank 0 sends f32 (4); rank 1 receives into a preallocated tensor:
 * flag 0: f32 (2, 2); flag 1: i64 (4). */
static lt_status mismatched(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p);
    lt_status st;
    lt_tensor *x = NULL;
    int64_t sh[2] = {2, 2}, n = 4;
    if (r == 0) {
        x = line_of(LT_F32, 4, 0, 1);
        u->line[r] = __LINE__ + 1;
        st = x ? lt_proc_send(p, x, 1) : LT_NOMEM;
    } else {
        st = u->flag ? lt_tensor_empty(LT_I64, 1, &n, &x) : lt_tensor_empty(LT_F32, 2, sh, &x);
        u->line[r] = __LINE__ + 1;
        if (!st) st = lt_proc_recv(p, 0, &x);
    }
    watch(u, r, st);
    lt_tensor_free(x);
    return LT_OK;
}

static void test_mismatch(void **state) {
    (void)state;
    for (int flag = 0; flag < 2; flag++) {
        rec u = {0};
        u.flag = flag;
        lt_match_report *rep = run_hang("2", mismatched, &u, LT_HANG_MISMATCH, NULL);
        assert_int_equal(rep->on_pair, 1);
        assert_int_equal(rep->rank_a, 0);
        assert_int_equal(rep->rank_b, 1);
        char want[512];
        snprintf(want, sizeof want,
                 "would hang (mismatch): rank 0 calls send(to=1) f32 (4) #1 at "
                 "test/test_program_p2p.c:%d but rank 1 calls recv(from=0) %s #1 at "
                 "test/test_program_p2p.c:%d: %s",
                 u.line[0], flag ? "i64 (4)" : "f32 (2, 2)", u.line[1],
                 flag ? "the dtype differs (sent f32 vs declared i64)"
                      : "the shapes differ (sent (4) vs declared (2, 2))");
        expect_in(lt_errmsg(), want);
        lt_match_report_free(rep);
    }
}

/* ---- a rank waits in a recv, its peer in a collective -------------------------------------- */

static lt_status recv_vs_coll(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p);
    lt_tensor *x = line_of(LT_F32, 2, 0, 1), *o = NULL;
    if (!x) return LT_NOMEM;
    lt_status st = r == 0 ? lt_proc_recv(p, 1, &o) : lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o);
    watch(u, r, st);
    lt_tensor_free(x);
    lt_tensor_free(o);
    return LT_OK;
}

static void test_cycle_with_collective(void **state) {
    (void)state;
    rec u = {0};
    lt_match_report *rep = run_hang("2", recv_vs_coll, &u, LT_HANG_CYCLE, NULL);
    assert_int_equal(rep->ncycle, 2);
    assert_int_equal(rep->cycle[0], 0);
    assert_int_equal(rep->cycle[1], 1);
    expect_in(lt_errmsg(), "rank 0 waits in recv(from=1) #1 at test/test_program_p2p.c:");
    expect_in(lt_errmsg(), " for rank 1; rank 1 waits in all_reduce(op=sum) f32 (2) at ");
    lt_match_report_free(rep);
}

/* ---- bad peers ------------------------------------------------------------------------------ */

/* Rank 1 of 4: flag 0 sends to rank 5, flag 1 receives from itself, flag 2
 * sends NULL. Fails at once; the run completes. */
static lt_status bad_peer(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p);
    if (r != 1) return LT_OK;
    lt_tensor *x = line_of(LT_F32, 1, 0, 0), *o = NULL;
    if (!x) return LT_NOMEM;
    u->line[r] = __LINE__ + 1 + u->flag;
    lt_status st = u->flag == 0   ? lt_proc_send(p, x, 5)
                   : u->flag == 1 ? lt_proc_recv(p, 1, &o)
                                  : lt_proc_send(p, NULL, 0);
    watch(u, r, st);
    lt_tensor_free(x);
    lt_tensor_free(o);
    return LT_OK;
}

static void test_bad_peer(void **state) {
    (void)state;
    static const char *const want[] = {
        "rank 1: send(to=5): rank 5 is not a rank of the mesh (ranks 0..3)",
        "rank 1: recv(from=1): a rank cannot receive from itself",
        "rank 1: send(to=0): no tensor to send (NULL)",
    };
    lt_mesh m = mesh_of("4");
    for (int flag = 0; flag < 3; flag++) {
        rec u = {0};
        u.flag = flag;
        LT_CHECK(lt_program_run(&m, bad_peer, &u, NULL, NULL));
        LT_EXPECT_STATUS(u.st[1], LT_INVALID);
        char at[128];
        snprintf(at, sizeof at, "test/test_program_p2p.c:%d: ", u.line[1]);
        expect_in(u.msg[1], at);
        expect_in(u.msg[1], want[flag]);
    }
}

/* ---- the matcher on its own ------------------------------------------------------------------ */

static void test_matcher(void **state) {
    (void)state;
    lt_mesh m = mesh_of("3");
    lt_match *mt = NULL;
    LT_CHECK(lt_match_new(&m, &mt));
    lt_tensor *x = line_of(LT_F32, 4, 0, 1);
    assert_non_null(x);
    lt_match_call s = lt_match_call_p2p(LT_P2P_SEND, 2, "f.c", 3);
    lt_match_call_set_tensor(&s, x);
    lt_match_call rv = lt_match_call_p2p(LT_P2P_RECV, 0, "f.c", 9);
    char d[128];
    lt_match_call_desc(&s, d, sizeof d);
    assert_string_equal(d, "send(to=2) f32 (4)");
    lt_match_call_desc(&rv, d, sizeof d);
    assert_string_equal(d, "recv(from=0)");
    int ready = -1, g = -1;
    LT_CHECK(lt_match_post(mt, 2, &rv, &ready, &g));
    assert_int_equal(ready, 0);
    LT_EXPECT_STATUS(lt_match_done_p2p(mt, 0, 2), LT_INVALID);   /* not matched yet */
    LT_CHECK(lt_match_post(mt, 0, &s, &ready, &g));
    assert_int_equal(ready, 1);
    assert_int_equal(g, 2);
    lt_match_report *rep = NULL;
    LT_EXPECT_STATUS(lt_match_check(mt, &rep), LT_INVALID);       /* done not called */
    LT_EXPECT_STATUS(lt_match_done_p2p(mt, 2, 0), LT_INVALID);   /* 2 receives, not sends */
    LT_CHECK(lt_match_done_p2p(mt, 0, 2));
    assert_null(lt_match_pending(mt, 0));
    for (int r = 0; r < 3; r++) LT_CHECK(lt_match_finish(mt, r));
    LT_CHECK(lt_match_check(mt, &rep));
    assert_null(rep);
    lt_match_free(mt);
    lt_tensor_free(x);
}

/* ---- lt_send_recv on the in-process engine ---------------------------------------------- */

static void test_send_recv_inproc(void **state) {
    (void)state;
    lt_mesh m = mesh_of("3");
    lt_comm *c = NULL;
    LT_CHECK(lt_comm_new(&m, &c));
    lt_tensor *x = line_of(LT_F32, 3, 5, 2), *o = NULL, *bad = NULL;
    assert_non_null(x);
    LT_CHECK(lt_send_recv(c, 2, 0, x, &o));   /* a new tensor: [5, 7, 9] */
    double want[3] = {5, 7, 9};
    int64_t n3 = 3;
    lt_test_expect_values(o, 1, &n3, want, "received");
    lt_set_flat(o, 0, -1);
    LT_CHECK(lt_send_recv(c, 2, 1, x, &o));   /* preallocated: overwritten */
    lt_test_expect_values(o, 1, &n3, want, "received again");
    int64_t n2 = 2;
    LT_CHECK(lt_tensor_empty(LT_F32, 1, &n2, &bad));
    lt_tensor *keep = bad;
    LT_EXPECT_STATUS(lt_send_recv(c, 0, 1, x, &bad), LT_INVALID);
    assert_ptr_equal(bad, keep);
    expect_in(lt_errmsg(), "does not fit the input");
    LT_EXPECT_STATUS(lt_send_recv(c, 1, 1, x, &o), LT_INVALID);
    LT_EXPECT_STATUS(lt_send_recv(c, 0, 3, x, &o), LT_INVALID);
    LT_EXPECT_STATUS(lt_send_recv(c, 0, 1, NULL, &o), LT_INVALID);
    lt_tensor_free(bad);
    lt_tensor_free(o);
    lt_tensor_free(x);
    lt_comm_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_ring_rank_ids),
        cmocka_unit_test(test_ring_needs_buffering),
        cmocka_unit_test(test_swap),
        cmocka_unit_test(test_missing_send),
        cmocka_unit_test(test_mismatch),
        cmocka_unit_test(test_cycle_with_collective),
        cmocka_unit_test(test_bad_peer),
        cmocka_unit_test(test_matcher),
        cmocka_unit_test(test_send_recv_inproc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
