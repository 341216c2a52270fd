/* test/test_program.c — the per-rank program runner (collectives_sim/program.h).
 *
 * Rank functions never assert (a cmocka failure would jump off a rank's
 * stack): they compare what they received with values worked out by hand
 * from docs/SEMANTICS.md §11.3 and note the first difference in the test's
 * record, which the test checks after the run. Hangs are checked for their
 * kind, ranks, groups and both source positions (file:line recorded next to
 * each call with __LINE__), for being found at once, and for letting every
 * waiting rank unwind (the sanitizer build checks that nothing leaks).
 */
#include "localtensor/collectives_sim/program.h"
#include "kernels/alloc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test/testutil.h"
#include "test/program_testutil.h"

/* t must be 1-d with the n values want[i] */
static void expect_vals(rec *u, int rank, const char *what, const lt_tensor *t, const double *want,
                        int64_t n) {
    if (!t) {
        note(u, "rank %d: %s: no tensor", rank, what);
        return;
    }
    if (t->ndim != 1 || t->shape[0] != n) {
        note(u, "rank %d: %s: %d dims, size %lld, wanted (%lld)", rank, what, t->ndim,
             (long long)(t->ndim ? t->shape[0] : -1), (long long)n);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        if (lt_get_flat(t, i) != want[i]) {
            note(u, "rank %d: %s: element %lld is %g, wanted %g", rank, what, (long long)i,
                 lt_get_flat(t, i), want[i]);
            return;
        }
}

static void expect_ok(rec *u, int rank, const char *what, lt_status st) {
    if (st) note(u, "rank %d: %s: %s: %s", rank, what, lt_status_name(st), lt_errmsg());
}

/* ---- every collective on 8 ranks, by hand ---------------------------------------------- */

static lt_status all_kinds(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p);
    u->ran[r]++;
    double want[64];
    lt_tensor *x = line_of(LT_F32, 3, 10 * r, 1), *y = line_of(LT_F32, 8, 10 * r, 1);
    lt_tensor *z = line_of(LT_I64, 8, 100 * r, 1), *w = line_of(LT_F32, 16, 1000 * r, 1);
    lt_tensor *o = NULL;
    /* all_reduce(sum): sum over r' of 10 r' + i = 280 + 8 i */
    expect_ok(u, r, "all_reduce", lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o));
    for (int i = 0; i < 3; i++) want[i] = 280 + 8 * i;
    expect_vals(u, r, "all_reduce", o, want, 3);
    lt_tensor_free(o), o = NULL;
    /* all_gather(dim 0): every rank's 3 values in rank order */
    expect_ok(u, r, "all_gather", lt_proc_all_gather(p, 0, x, 0, &o));
    for (int q = 0; q < 8; q++)
        for (int i = 0; i < 3; i++) want[3 * q + i] = 10 * q + i;
    expect_vals(u, r, "all_gather", o, want, 24);
    lt_tensor_free(o), o = NULL;
    /* reduce_scatter(sum, dim 0) of 8 values: rank j keeps element j of the sum, 280 + 8 j */
    expect_ok(u, r, "reduce_scatter", lt_proc_reduce_scatter(p, 0, y, LT_REDOP_SUM, 0, NULL, &o));
    want[0] = 280 + 8 * r;
    expect_vals(u, r, "reduce_scatter", o, want, 1);
    lt_tensor_free(o), o = NULL;
    /* all_to_all(0 -> 0): rank j receives element j of every rank: 100 q + j */
    expect_ok(u, r, "all_to_all", lt_proc_all_to_all(p, 0, z, 0, 0, NULL, &o));
    for (int q = 0; q < 8; q++) want[q] = 100 * q + r;
    expect_vals(u, r, "all_to_all", o, want, 8);
    if (o && o->dtype != LT_I64) note(u, "rank %d: all_to_all gave %s", r, lt_dtype_name(o->dtype));
    lt_tensor_free(o), o = NULL;
    /* broadcast(root 3): rank 3's values; even ranks pass no tensor */
    expect_ok(u, r, "broadcast", lt_proc_broadcast(p, 0, r % 2 ? x : NULL, 3, &o));
    for (int i = 0; i < 3; i++) want[i] = 30 + i;
    expect_vals(u, r, "broadcast", o, want, 3);
    lt_tensor_free(o), o = NULL;
    /* scatter(root 5, dim 0) of rank 5's 16 values 5000 + i: rank j gets 5000 + 2j, 5001 + 2j */
    expect_ok(u, r, "scatter", lt_proc_scatter(p, 0, r == 5 ? w : NULL, 5, 0, NULL, &o));
    want[0] = 5000 + 2 * r;
    want[1] = 5001 + 2 * r;
    expect_vals(u, r, "scatter", o, want, 2);
    lt_tensor_free(o), o = NULL;
    /* gather(root 2, dim 0): rank 2 gets the all_gather result, the others a placeholder for it */
    expect_ok(u, r, "gather", lt_proc_gather(p, 0, x, 2, 0, &o));
    if (r == 2) {
        for (int q = 0; q < 8; q++)
            for (int i = 0; i < 3; i++) want[3 * q + i] = 10 * q + i;
        expect_vals(u, r, "gather", o, want, 24);
    } else if (!o || !o->placeholder || o->logical_ndim != 1 || o->logical[0] != 24) {
        note(u, "rank %d: gather: not a placeholder for (24)", r);
    }
    lt_tensor_free(o), o = NULL;
    /* reduce(root 1, max): rank 1 gets rank 7's values 70 + i */
    expect_ok(u, r, "reduce", lt_proc_reduce(p, 0, x, 1, LT_REDOP_MAX, &o));
    if (r == 1) {
        for (int i = 0; i < 3; i++) want[i] = 70 + i;
        expect_vals(u, r, "reduce", o, want, 3);
    } else if (!o || !o->placeholder) {
        note(u, "rank %d: reduce: not a placeholder", r);
    }
    lt_tensor_free(o), o = NULL;
    expect_ok(u, r, "barrier", lt_proc_barrier(p, 0));
    lt_tensor_free(x);
    lt_tensor_free(y);
    lt_tensor_free(z);
    lt_tensor_free(w);
    return LT_OK;
}

static void test_all_kinds_8(void **state) {
    (void)state;
    rec u = {0};
    lt_mesh m = mesh_of("8");
    lt_match_report *rep = (lt_match_report *)1;
    LT_CHECK(lt_program_run(&m, all_kinds, &u, NULL, &rep));
    assert_null(rep);
    if (u.err[0]) fail_msg("%s", u.err);
    for (int r = 0; r < 8; r++) assert_int_equal(u.ran[r], 1);
}

/* ---- 2x4: groups along each mesh dim --------------------------------------------------------- */

static lt_status mesh_2x4(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p), dp = lt_proc_coord(p, 0), tp = lt_proc_coord(p, 1);
    if (dp != r / 4 || tp != r % 4 || lt_proc_group_size(p, 1) != 4 ||
        lt_proc_group_size(p, 0) != 2 || lt_proc_group(p, 1) != dp || lt_proc_group(p, 0) != tp ||
        lt_proc_world(p) != 8 || lt_proc_coord(p, 2) != -1 || lt_proc_mesh(p)->ndim != 2)
        note(u, "rank %d: wrong identity (dp %d, tp %d)", r, dp, tp);
    double want[8];
    lt_tensor *x = line_of(LT_F64, 1, r, 0), *v = line_of(LT_F32, 4, 4 * r, 1), *o = NULL;
    /* tp group of rank r is 4 dp .. 4 dp + 3: sum 16 dp + 6 */
    expect_ok(u, r, "tp all_reduce", lt_proc_all_reduce(p, 1, x, LT_REDOP_SUM, &o));
    want[0] = 16 * dp + 6;
    expect_vals(u, r, "tp all_reduce", o, want, 1);
    lt_tensor_free(o), o = NULL;
    /* dp group is {tp, tp + 4}: sum 2 tp + 4 */
    expect_ok(u, r, "dp all_reduce", lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o));
    want[0] = 2 * tp + 4;
    expect_vals(u, r, "dp all_reduce", o, want, 1);
    lt_tensor_free(o), o = NULL;
    expect_ok(u, r, "dp all_gather", lt_proc_all_gather(p, 0, x, 0, &o));
    want[0] = tp;
    want[1] = tp + 4;
    expect_vals(u, r, "dp all_gather", o, want, 2);
    lt_tensor_free(o), o = NULL;
    /* tp reduce_scatter of 4 r + i: member j keeps the sum over the group of
     * 4 m + j = 64 dp + 24 + 4 j */
    expect_ok(u, r, "tp reduce_scatter",
              lt_proc_reduce_scatter(p, 1, v, LT_REDOP_SUM, 0, NULL, &o));
    want[0] = 64 * dp + 24 + 4 * tp;
    expect_vals(u, r, "tp reduce_scatter", o, want, 1);
    lt_tensor_free(o), o = NULL;
    lt_tensor_free(x);
    lt_tensor_free(v);
    return LT_OK;
}

static void test_mesh_2x4(void **state) {
    (void)state;
    rec u = {0};
    lt_mesh m = mesh_of("dp=2,tp=4");
    LT_CHECK(lt_program_run(&m, mesh_2x4, &u, NULL, NULL));
    if (u.err[0]) fail_msg("%s", u.err);
}

/* ---- rank-dependent branches that complete --------------------------------------------------- */

/* Ranks with tp == 0 (0 and 4) also sum over dp; even and odd ranks reach the
 * tp all_reduce from different lines; uneven shards (rank r holds r values). */
static lt_status branches(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p), tp = lt_proc_coord(p, 1);
    double want[32];
    lt_tensor *x = line_of(LT_F32, 1, r, 0), *o = NULL;
    if (tp == 0) {
        lt_proc_set_label(p, "dp sum on tp 0");
        expect_ok(u, r, "dp all_reduce", lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o));
        lt_proc_set_label(p, NULL);
        want[0] = 4;   /* ranks 0 + 4 */
        expect_vals(u, r, "dp all_reduce", o, want, 1);
        lt_tensor_free(o), o = NULL;
    }
    if (r % 2 == 0)
        expect_ok(u, r, "tp all_reduce (even)", lt_proc_all_reduce(p, 1, x, LT_REDOP_MAX, &o));
    else
        expect_ok(u, r, "tp all_reduce (odd)", lt_proc_all_reduce(p, 1, x, LT_REDOP_MAX, &o));
    want[0] = r < 4 ? 3 : 7;
    expect_vals(u, r, "tp all_reduce", o, want, 1);
    lt_tensor_free(o), o = NULL;
    /* uneven: rank r holds r values 10 r + i; the tp gather concatenates them */
    lt_tensor *s = line_of(LT_F32, r, 10 * r, 1);
    expect_ok(u, r, "uneven all_gather", lt_proc_all_gather(p, 1, s, 0, &o));
    int n = 0;
    for (int q = 4 * (r / 4); q < 4 * (r / 4) + 4; q++)
        for (int i = 0; i < q; i++) want[n++] = 10 * q + i;
    expect_vals(u, r, "uneven all_gather", o, want, n);
    lt_tensor_free(o);
    lt_tensor_free(s);
    lt_tensor_free(x);
    return LT_OK;
}

static void test_branches_complete(void **state) {
    (void)state;
    rec u = {0};
    lt_mesh m = mesh_of("dp=2,tp=4");
    LT_CHECK(lt_program_run(&m, branches, &u, NULL, NULL));
    if (u.err[0]) fail_msg("%s", u.err);
}

/* ---- hangs ----------------------------------------------------------------------------------- */

enum { H_KIND, H_OP, H_DTYPE, H_SHAPE, H_MISSING, H_CYCLE };

/* Every rank calls one all_reduce(sum) of (3) f32 from line_a; the odd one
 * out (rank 7 for kind, 5 for op, 2 for dtype, 3 for shape) calls from
 * line_b; for H_MISSING ranks 4..7 return first. */
static lt_status hang_1d(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p), k = u->flag;
    lt_tensor *x = line_of(LT_F32, 3, r, 1), *x64 = line_of(LT_F64, 3, r, 1),
              *x4 = line_of(LT_F32, 4, r, 1);
    lt_tensor *o = NULL;
    lt_status st;
    if (k == H_MISSING && r >= 4) {
        st = LT_OK; /* these ranks skip the collective */
    } else if (k == H_KIND && r == 7) {
        u->line_b = __LINE__; st = lt_proc_all_gather(p, 0, x, 0, &o);
    } else if (k == H_OP && r == 5) {
        u->line_b = __LINE__; st = lt_proc_all_reduce(p, 0, x, LT_REDOP_MAX, &o);
    } else if (k == H_DTYPE && r == 2) {
        u->line_b = __LINE__; st = lt_proc_all_reduce(p, 0, x64, LT_REDOP_SUM, &o);
    } else if (k == H_SHAPE && r == 3) {
        u->line_b = __LINE__; st = lt_proc_all_reduce(p, 0, x4, LT_REDOP_SUM, &o);
    } else {
        u->line_a = __LINE__; st = lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o);
    }
    u->st[r] = st;
    snprintf(u->msg[r], sizeof u->msg[r], "%s", st ? lt_errmsg() : "");
    lt_tensor_free(o);
    lt_tensor_free(x);
    lt_tensor_free(x64);
    lt_tensor_free(x4);
    return LT_OK; /* unwinding: the report is already fixed */
}

/* 2x2: ranks 0 and 3 sum over dp then tp, ranks 1 and 2 over tp then dp */
static lt_status hang_cycle(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p), dp_first = r == 0 || r == 3;
    lt_tensor *x = line_of(LT_F32, 2, r, 0), *o = NULL;
    lt_status st;
    if (dp_first) {
        u->line_a = __LINE__; st = lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o);
        lt_tensor_free(o), o = NULL;
        if (!st) st = lt_proc_all_reduce(p, 1, x, LT_REDOP_SUM, &o);
    } else {
        u->line_b = __LINE__; st = lt_proc_all_reduce(p, 1, x, LT_REDOP_SUM, &o);
        lt_tensor_free(o), o = NULL;
        if (!st) st = lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o);
    }
    u->st[r] = st;
    snprintf(u->msg[r], sizeof u->msg[r], "%s", st ? lt_errmsg() : "");
    lt_tensor_free(o);
    lt_tensor_free(x);
    return LT_OK;
}

static void expect_site(const char *text, int line) {
    char s[64];
    snprintf(s, sizeof s, "test/test_program.c:%d", line);
    expect_in(text, s);
}

static void check_1d(int flag, int rank_b, const char *what) {
    rec u = {0};
    u.flag = flag;
    char *t;
    lt_match_report *rep = run_hang("8", hang_1d, &u, LT_HANG_MISMATCH, &t);
    assert_int_equal(rep->rank_a, 0);
    assert_int_equal(rep->rank_b, rank_b);
    assert_int_equal(rep->nstuck, 1);
    assert_int_equal(rep->stuck[0].mesh_dim, 0);
    assert_int_equal(rep->stuck[0].group, 0);
    expect_in(rep->what, what);
    assert_int_equal(rep->ranks[0].call.line, u.line_a);
    assert_int_equal(rep->ranks[rank_b].call.line, u.line_b);
    expect_site(t, u.line_a);
    expect_site(t, u.line_b);
    char s[64];
    snprintf(s, sizeof s, "but rank %d calls", rank_b);
    expect_in(t, s);
    expect_in(t, "on mesh dim 0, group 0 [0,1,2,3,4,5,6,7], call #1");
    free(t);
    lt_match_report_free(rep);
}

static void test_hang_mismatch(void **state) {
    (void)state;
    check_1d(H_KIND, 7, "the collective differs (all_reduce vs all_gather)");
    check_1d(H_OP, 5, "the reduce op differs (sum vs max)");
    check_1d(H_DTYPE, 2, "the dtype differs (f32 vs f64)");
    check_1d(H_SHAPE, 3, "the shapes differ ((3) vs (4))");
}

static void test_hang_missing(void **state) {
    (void)state;
    rec u = {0};
    u.flag = H_MISSING;
    char *t;
    lt_match_report *rep = run_hang("8", hang_1d, &u, LT_HANG_MISSING, &t);
    assert_int_equal(rep->rank_a, 0);
    assert_int_equal(rep->rank_b, 4);
    for (int r = 0; r < 8; r++) {
        assert_int_equal(rep->ranks[r].state, r < 4 ? LT_RANK_WAITING : LT_RANK_FINISHED);
        if (r < 4) assert_string_equal(rep->ranks[r].call.file, "test/test_program.c");
    }
    expect_site(t, u.line_a);
    expect_in(
        t, "but rank 4 finished without making that call (waiting: ranks 0-3; ended: ranks 4-7)");
    expect_in(
        t, "\n    ranks 4-7: finished\n"); /* no call of theirs completed: nothing to say where */
    free(t);
    lt_match_report_free(rep);
}

/* Every rank sums once (line_a); ranks 0-3 then sum again (line_b) while
 * ranks 4-7 return. */
static lt_status hang_after_a_call(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p);
    lt_tensor *x = line_of(LT_F32, 3, r, 1), *o = NULL;
    u->line_a = __LINE__; lt_status st = lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o);
    lt_tensor_free(o), o = NULL;
    if (!st && r < 4) {
        u->line_b = __LINE__; st = lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o);
    }
    u->st[r] = st;
    snprintf(u->msg[r], sizeof u->msg[r], "%s", st ? lt_errmsg() : "");
    lt_tensor_free(o);
    lt_tensor_free(x);
    return LT_OK;
}

/* A finished rank is placed after its last completed call, the one
 * position the runner knows of it (its function's return has none). */
static void test_hang_missing_after_a_call(void **state) {
    (void)state;
    rec u = {0};
    char *t;
    lt_match_report *rep = run_hang("8", hang_after_a_call, &u, LT_HANG_MISSING, &t);
    for (int r = 4; r < 8; r++) {
        assert_int_equal(rep->ranks[r].state, LT_RANK_FINISHED);
        assert_string_equal(rep->ranks[r].last_file, "test/test_program.c");
        assert_int_equal(rep->ranks[r].last_line, u.line_a);
        assert_int_equal(rep->ranks[r].last_is_step, 0);
    }
    char s[400];
    snprintf(s, sizeof s,
             "  mesh dim 0, group 0 [0,1,2,3,4,5,6,7], call #2:\n"
             "    ranks 0-3: waiting in all_reduce(op=sum) f32 (3) at test/test_program.c:%d\n"
             "    ranks 4-7: finished after its last call at test/test_program.c:%d\n",
             u.line_b, u.line_a);
    expect_in(t, s);
    free(t);
    lt_match_report_free(rep);
}

static void test_hang_cycle(void **state) {
    (void)state;
    rec u = {0};
    char *t;
    lt_match_report *rep = run_hang("dp=2,tp=2", hang_cycle, &u, LT_HANG_CYCLE, &t);
    int want[4] = {0, 2, 3, 1};
    assert_int_equal(rep->ncycle, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(rep->cycle[i], want[i]);
    /* both call sites, and each rank in the group it waits in */
    expect_site(t, u.line_a);
    expect_site(t, u.line_b);
    char s[400];
    snprintf(
        s, sizeof s,
        "rank 0 waits in all_reduce(op=sum) f32 (2) at test/test_program.c:%d on mesh dim 0 (dp), "
        "group 0 [0,2] for rank 2; rank 2 waits in all_reduce(op=sum) f32 (2) at "
        "test/test_program.c:%d on mesh "
        "dim 1 (tp), group 1 [2,3] for rank 3",
        u.line_a, u.line_b);
    expect_in(t, s);
    for (int r = 0; r < 4; r++) {
        int dp_first = r == 0 || r == 3;
        assert_int_equal(rep->ranks[r].call.mesh_dim, dp_first ? 0 : 1);
        assert_int_equal(rep->ranks[r].call.line, dp_first ? u.line_a : u.line_b);
    }
    free(t);
    lt_match_report_free(rep);
}

static void test_same_report_twice(void **state) {
    (void)state;
    for (int k = 0; k < 2; k++) {
        rec u1 = {0}, u2 = {0};
        u1.flag = u2.flag = H_MISSING;
        char *t1, *t2;
        lt_match_report *r1 = run_hang(k ? "dp=2,tp=2" : "8", k ? hang_cycle : hang_1d, &u1,
                                       k ? LT_HANG_CYCLE : LT_HANG_MISSING, &t1);
        lt_match_report *r2 = run_hang(k ? "dp=2,tp=2" : "8", k ? hang_cycle : hang_1d, &u2,
                                       k ? LT_HANG_CYCLE : LT_HANG_MISSING, &t2);
        assert_string_equal(t1, t2);
        free(t1);
        free(t2);
        lt_match_report_free(r1);
        lt_match_report_free(r2);
    }
}

/* ---- a rank that fails ----------------------------------------------------------------------- */

static lt_status one_fails(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p);
    if (r == 5) {
        /* no mesh dim 3: fails at once, and the rank gives up */
        u->line_b = __LINE__; return lt_proc_barrier(p, 3);
    }
    lt_status st = lt_proc_barrier(p, 0);
    u->st[r] = st;
    snprintf(u->msg[r], sizeof u->msg[r], "%s", st ? lt_errmsg() : "");
    /* a second call after the stop fails at once too */
    if (st && lt_proc_barrier(p, 0) != LT_MISMATCH)
        note(u, "rank %d: a call after the stop did not fail", r);
    return LT_OK;
}

static void test_rank_fails(void **state) {
    (void)state;
    rec u = {0};
    lt_mesh m = mesh_of("8");
    lt_match_report *rep = NULL;
    LT_EXPECT_STATUS(lt_program_run(&m, one_fails, &u, NULL, &rep), LT_INVALID);
    assert_non_null(rep);
    char s[200];
    snprintf(
        s, sizeof s,
        "rank 5 failed (invalid argument): test/test_program.c:%d: rank 5: barrier on mesh dim 3: "
        "mesh dim 3 is out of range (the mesh has 1 dim)",
        u.line_b);
    expect_in(lt_errmsg(), s);
    assert_int_equal(rep->kind, LT_HANG_RANK_FAILED);
    assert_int_equal(rep->rank_a, 5);
    assert_int_equal(rep->ranks[5].status, LT_INVALID);
    for (int r = 0; r < 8; r++)
        if (r != 5) {
            assert_int_equal(u.st[r], LT_MISMATCH);
            expect_in(u.msg[r], "cancelled: rank 5 failed");
        }
    if (u.err[0]) fail_msg("%s", u.err);
    lt_match_report_free(rep);
}

/* ---- argument errors fail locally; handles; options ------------------------------------------ */

static lt_status local_errors(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p);
    if (r == 0) u->h0 = p;
    lt_tensor *x = line_of(LT_F32, 3, r, 1), *o = NULL;
    int line = __LINE__; lt_status st = lt_proc_all_gather(p, 0, x, 5, &o);
    char s[160];
    snprintf(
        s, sizeof s,
        "test/test_program.c:%d: rank %d: all_gather on mesh dim 0: gather dim 5 is out of range",
        line, r);
    if (st != LT_INVALID || !strstr(lt_errmsg(), s))
        note(u, "rank %d: bad dim gave %s: %s", r, lt_status_name(st), lt_errmsg());
    if (lt_proc_all_reduce(p, 0, NULL, LT_REDOP_SUM, &o) != LT_INVALID)
        note(u, "rank %d: NULL input accepted", r);
    if (lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, NULL) != LT_INVALID)
        note(u, "rank %d: NULL output accepted", r);
    if (r == 1) {
        st = lt_proc_barrier(u->h0, 0);
        if (st != LT_INVALID || !strstr(lt_errmsg(), "rank 0's handle used while rank 1 runs"))
            note(u, "rank 1 used rank 0's handle: %s: %s", lt_status_name(st), lt_errmsg());
    }
    if (lt_proc_barrier(NULL, 0) != LT_INVALID) note(u, "a NULL handle was accepted");
    /* a preallocated output is filled in place */
    lt_tensor *pre = line_of(LT_F32, 3, -1, 0), *keep = pre;
    expect_ok(u, r, "preallocated", lt_proc_all_reduce(p, 0, x, LT_REDOP_MIN, &pre));
    double want[3] = {0, 1, 2};
    if (pre != keep) note(u, "rank %d: the preallocated output was replaced", r);
    expect_vals(u, r, "preallocated", pre, want, 3);
    lt_tensor_free(pre);
    lt_tensor_free(x);
    return LT_OK;
}

static void test_local_errors(void **state) {
    (void)state;
    rec u = {0};
    lt_mesh m = mesh_of("4");
    LT_CHECK(lt_program_run(&m, local_errors, &u, NULL, NULL));
    if (u.err[0]) fail_msg("%s", u.err);
}

static lt_status nothing(lt_proc *p, void *ud) {
    (void)p;
    (void)ud;
    return LT_OK;
}

static void test_run_arguments(void **state) {
    (void)state;
    lt_mesh m = mesh_of("4"), bad = m;
    bad.ndim = 0;
    lt_match_report *rep = (lt_match_report *)1;
    LT_EXPECT_STATUS(lt_program_run(&m, NULL, NULL, NULL, &rep), LT_INVALID);
    assert_null(rep);
    expect_in(lt_errmsg(), "the rank function is NULL");
    LT_EXPECT_STATUS(lt_program_run(&bad, nothing, NULL, NULL, NULL), LT_INVALID);
    LT_EXPECT_STATUS(lt_program_run(NULL, nothing, NULL, NULL, NULL), LT_INVALID);
    lt_program_options o = {.stack_size = (size_t)-1 / 2};
    LT_EXPECT_STATUS(lt_program_run(&m, nothing, NULL, &o, NULL), LT_OVERFLOW);
    o.stack_size = 1;  /* rounded up to the smallest stack */
    LT_CHECK(lt_program_run(&m, nothing, NULL, &o, NULL));
}

/* ---- many ranks ------------------------------------------------------------------------------ */

static lt_status sum_ranks(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p), W = lt_proc_world(p);
    lt_tensor *x = line_of(LT_I64, 1, r, 0), *o = NULL;
    expect_ok(u, r, "all_reduce", lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o));
    double want = (double)W * (W - 1) / 2;
    expect_vals(u, r, "all_reduce", o, &want, 1);
    lt_tensor_free(o);
    lt_tensor_free(x);
    return lt_proc_barrier(p, 0);
}

static void test_many_ranks(void **state) {
    (void)state;
    /* 4096 ranks get guard pages under their stacks, 4100 do not */
    const char *meshes[] = {"4096", "4100"};
    for (int i = 0; i < 2; i++) {
        rec u = {0};
        lt_mesh m = mesh_of(meshes[i]);
        LT_CHECK(lt_program_run(&m, sum_ranks, &u, NULL, NULL));
        if (u.err[0]) fail_msg("%s", u.err);
    }
}

/* ---- a collective that fails after the ranks agreed ------------------------------------------ */

/* every rank of a tp group gathers 64 f32: one shared result of 1 KiB, over
 * a budget of 512 bytes: every member's call fails with the collective's
 * message */
static lt_status over_budget(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p);
    lt_tensor *x = line_of(LT_F32, 64, r, 0), *o = NULL;
    u->line_a = __LINE__; lt_status st = lt_proc_all_gather(p, 1, x, 0, &o);
    u->st[r] = st;
    snprintf(u->msg[r], sizeof u->msg[r], "%s", st ? lt_errmsg() : "");
    if (o) note(u, "rank %d: an output after a failed call", r);
    lt_tensor_free(x);
    return LT_OK;
}

static void test_collective_fails(void **state) {
    (void)state;
    rec u = {0};
    lt_mesh m = mesh_of("dp=2,tp=4");
    setenv("LOCALTENSOR_MEMORY_LIMIT", "512", 1);
    lt_status st = lt_program_run(&m, over_budget, &u, NULL, NULL);
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    LT_CHECK(st);   /* the ranks saw the failure and returned */
    if (u.err[0]) fail_msg("%s", u.err);
    for (int r = 0; r < 8; r++) {
        assert_int_equal(u.st[r], LT_NOMEM);
        char s[200];
        snprintf(
            s, sizeof s,
            "test/test_program.c:%d: rank %d: all_gather on mesh dim 1, group %d failed (in what "
            "follows, ranks are positions 0..3 in the group; this rank is %d)",
            u.line_a, r, r / 4, r % 4);
        expect_in(u.msg[r], s);
        expect_in(u.msg[r], "needs 1.0 KiB for the shards of all 4 ranks");
    }
}

/* ---- out of memory anywhere ------------------------------------------------------------------ */

/* every rank: a tensor, an all_reduce into a fresh output; with flag 1,
 * ranks 4..7 return first (a hang) */
static lt_status small(lt_proc *p, void *ud) {
    rec *u = ud;
    int r = lt_proc_rank(p);
    if (u->flag && r >= 4) return LT_OK;
    int64_t n = 2;
    double v[2] = {r, r};
    lt_tensor *x = NULL, *o = NULL;
    lt_status st = lt_tensor_from_doubles(LT_F32, 1, &n, v, 2, &x);
    if (!st) st = lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o);
    if (!st && lt_get_flat(o, 0) != 28) note(u, "rank %d: sum %g", r, lt_get_flat(o, 0));
    lt_tensor_free(o);
    lt_tensor_free(x);
    return st;
}

/* Fails the n-th allocation (then, second pass, every one from the n-th)
 * for every n the run reaches: each run ends with its normal result or
 * LT_NOMEM with a message, and frees everything. */
static void test_out_of_memory(void **state) {
    (void)state;
    lt_mesh m = mesh_of("8");
    for (int hang = 0; hang < 2; hang++)
        for (int persistent = 0; persistent < 2; persistent++)
            for (int64_t nth = 1;; nth++) {
                rec u = {0};
                u.flag = hang;
                lt_match_report *rep = NULL;
                lt__fault_arm(nth, persistent);
                lt_status st = lt_program_run(&m, small, &u, NULL, &rep);
                int64_t fired = lt__fault_fired();
                lt_match_report_free(rep);
                int64_t live = lt__fault_live();
                lt__fault_disarm();
                if (live != 0)
                    fail_msg("allocation %lld failed (persistent %d, hang %d): %lld blocks leaked",
                             (long long)nth, persistent, hang, (long long)live);
                lt_status normal = hang ? LT_MISMATCH : LT_OK;
                if (!fired) {
                    assert_int_equal(st, normal);
                    if (u.err[0]) fail_msg("%s", u.err);
                    break;
                }
                if (st != normal && st != LT_NOMEM)
                    fail_msg("allocation %lld failed: %s: %s", (long long)nth, lt_status_name(st),
                             lt_errmsg());
                if (st == LT_NOMEM && !strstr(lt_errmsg(), "out of memory"))
                    fail_msg("allocation %lld failed: message '%s'", (long long)nth, lt_errmsg());
            }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_kinds_8),
        cmocka_unit_test(test_mesh_2x4),
        cmocka_unit_test(test_branches_complete),
        cmocka_unit_test(test_hang_mismatch),
        cmocka_unit_test(test_hang_missing),
        cmocka_unit_test(test_hang_missing_after_a_call),
        cmocka_unit_test(test_hang_cycle),
        cmocka_unit_test(test_same_report_twice),
        cmocka_unit_test(test_rank_fails),
        cmocka_unit_test(test_local_errors),
        cmocka_unit_test(test_run_arguments),
        cmocka_unit_test(test_many_ranks),
        cmocka_unit_test(test_collective_fails),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
