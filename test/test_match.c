/* test/test_match.c — the collective matcher (collectives_sim/match.h)
 * against the rules of docs/SEMANTICS.md §12.
 *
 * Calls are built by hand (no tensors move here). Expected kinds, ranks and
 * cycles come from working the rules out on paper for each small program;
 * the determinism test drives the matcher with its own random scheduler and
 * requires the same report text for every schedule.
 */
#include "localtensor/collectives_sim/match.h"

#include <stdlib.h>
#include <string.h>

#include "test/testutil.h"

static lt_mesh mesh_of(const char *s) {
    lt_mesh m;
    if (lt_mesh_parse(s, &m)) fail_msg("mesh %s: %s", s, lt_errmsg());
    return m;
}

/* a call with a tensor of dtype dt and shape (n0) or (n0, n1) (n1 < 0: 1-d) */
static lt_match_call mk(lt_coll k, int md, lt_dtype dt, int64_t n0, int64_t n1, int line) {
    lt_match_call c = lt_match_call_init(k, md, "prog.c", line);
    if (k == LT_COLL_BARRIER) return c;
    c.has_tensor = 1;
    c.dtype = dt;
    c.ndim = n1 < 0 ? 1 : 2;
    c.shape[0] = n0;
    c.shape[1] = n1;
    return c;
}

static lt_match_call ar(int md, lt_redop op, int line) {
    lt_match_call c = mk(LT_COLL_ALL_REDUCE, md, LT_F32, 4, -1, line);
    c.op = (int)op;
    return c;
}

static void post(lt_match *mt, int r, const lt_match_call *c, int want_ready) {
    int ready = -1, g = -1;
    LT_CHECK(lt_match_post(mt, r, c, &ready, &g));
    if (ready != want_ready) fail_msg("rank %d: ready %d, wanted %d", r, ready, want_ready);
}

static char *text_of(const lt_match_report *r) {
    size_t n = lt_match_report_format(r, NULL, 0);
    char *s = malloc(n + 1);
    assert_non_null(s);
    assert_int_equal(lt_match_report_format(r, s, n + 1), n);
    return s;
}

static void expect_in(const char *text, const char *what) {
    if (!strstr(text, what)) fail_msg("'%s' not found in:\n%s", what, text);
}

/* ---- completion ------------------------------------------------------------------ */

static void test_complete(void **state) {
    (void)state;
    lt_mesh m = mesh_of("dp=2,tp=4");
    lt_match *mt;
    LT_CHECK(lt_match_new(&m, &mt));
    /* tp group 1 is ranks 4..7; they arrive out of order */
    int order[4] = {6, 4, 7, 5};
    for (int i = 0; i < 4; i++) {
        lt_match_call c =
            ar(1, LT_REDOP_SUM, 10 + i); /* lines may differ: positions need not agree */
        int ready, g;
        LT_CHECK(lt_match_post(mt, order[i], &c, &ready, &g));
        assert_int_equal(g, 1);
        assert_int_equal(ready, i == 3);
        assert_non_null(lt_match_pending(mt, order[i]));
    }
    assert_int_equal(lt_match_calls_done(mt, 1, 1), 0);
    for (int r = 0; r < 4; r++) LT_CHECK(lt_match_finish(mt, r));
    lt_match_report *early;
    LT_EXPECT_STATUS(lt_match_check(mt, &early), LT_INVALID);   /* the ready call must run first */
    expect_in(lt_errmsg(), "the call of group 1 on mesh dim 1 is complete");
    LT_CHECK(lt_match_done(mt, 1, 1));
    assert_int_equal(lt_match_calls_done(mt, 1, 1), 1);
    assert_int_equal(lt_match_calls_done(mt, 1, 0), 0);
    for (int r = 4; r < 8; r++) assert_null(lt_match_pending(mt, r));
    /* a barrier on dp group 1 = ranks {1, 5} */
    lt_match_call b = mk(LT_COLL_BARRIER, 0, LT_F32, 0, 0, 30);
    int ready, g;
    LT_EXPECT_STATUS(lt_match_post(mt, 1, &b, &ready, &g), LT_INVALID);   /* rank 1 has finished */
    expect_in(lt_errmsg(), "rank 1 is finished, not running");
    post(mt, 5, &b, 0);
    for (int r = 4; r < 8; r++)
        if (r != 5) LT_CHECK(lt_match_finish(mt, r));
    lt_match_report *rep;
    LT_EXPECT_STATUS(lt_match_check(mt, &rep), LT_MISMATCH);   /* rank 5 waits for rank 1 */
    assert_int_equal(rep->kind, LT_HANG_MISSING);
    assert_int_equal(rep->rank_a, 5);
    assert_int_equal(rep->rank_b, 1);
    lt_match_report_free(rep);
    lt_match_free(mt);
    /* and the same barrier with both members completes */
    LT_CHECK(lt_match_new(&m, &mt));
    post(mt, 5, &b, 0);
    post(mt, 1, &b, 1);
    LT_CHECK(lt_match_done(mt, 0, 1));
    for (int r = 0; r < 8; r++) LT_CHECK(lt_match_finish(mt, r));
    rep = (lt_match_report *)1;
    LT_CHECK(lt_match_check(mt, &rep));
    assert_null(rep);
    lt_match_free(mt);
}

static void test_protocol_errors(void **state) {
    (void)state;
    lt_mesh m = mesh_of("4");
    lt_match *mt;
    LT_CHECK(lt_match_new(&m, &mt));
    lt_match_call c = ar(0, LT_REDOP_SUM, 1);
    int ready, g;
    post(mt, 0, &c, 0);
    LT_EXPECT_STATUS(lt_match_post(mt, 0, &c, &ready, &g), LT_INVALID);        /* already waiting */
    expect_in(lt_errmsg(), "rank 0 is waiting");
    LT_EXPECT_STATUS(lt_match_post(mt, 4, &c, &ready, &g), LT_INVALID);        /* no such rank */
    LT_EXPECT_STATUS(lt_match_done(mt, 0, 0), LT_INVALID);                     /* not complete */
    LT_EXPECT_STATUS(lt_match_finish(mt, 0), LT_INVALID);                      /* waits */
    LT_EXPECT_STATUS(lt_match_fail(mt, 1, LT_OK, "x"), LT_INVALID);            /* failing with ok */
    lt_match_report *rep;
    LT_EXPECT_STATUS(lt_match_check(mt, &rep), LT_INVALID);                    /* ranks 1..3 run */
    expect_in(lt_errmsg(), "rank 1 still runs");
    assert_null(rep);
    lt_match_free(mt);
}

static void test_validate(void **state) {
    (void)state;
    lt_mesh m = mesh_of("2x4");
    lt_match_call c = ar(2, LT_REDOP_SUM, 7);
    LT_EXPECT_STATUS(lt_match_validate(&m, 3, &c), LT_INVALID);
    expect_in(lt_errmsg(),
              "prog.c:7: rank 3: all_reduce on mesh dim 2: mesh dim 2 is out of range");
    c = ar(1, (lt_redop)99, 8);
    LT_EXPECT_STATUS(lt_match_validate(&m, 3, &c), LT_INVALID);
    expect_in(lt_errmsg(), "unknown reduce op 99");
    c = mk(LT_COLL_GATHER, 1, LT_F32, 4, -1, 9);
    c.root = 4;
    c.dim = 0;
    LT_EXPECT_STATUS(lt_match_validate(&m, 0, &c), LT_INVALID);
    expect_in(lt_errmsg(), "root 4 is out of range: the group has 4 ranks");
    c.root = 0;
    c.dim = 1;
    LT_EXPECT_STATUS(lt_match_validate(&m, 0, &c), LT_INVALID);
    expect_in(lt_errmsg(), "gather dim 1 is out of range for its input of shape (4)");
    c = mk(LT_COLL_ALL_REDUCE, 0, LT_F32, 4, -1, 10);
    c.op = LT_REDOP_SUM;
    c.has_tensor = 0;
    LT_EXPECT_STATUS(lt_match_validate(&m, 0, &c), LT_INVALID);
    expect_in(lt_errmsg(), "no input tensor");
    /* broadcast: the root needs a tensor, the others need none */
    c = lt_match_call_init(LT_COLL_BROADCAST, 1, "prog.c", 11);
    c.root = 2;
    LT_CHECK(lt_match_validate(&m, 1, &c));
    LT_EXPECT_STATUS(lt_match_validate(&m, 2, &c), LT_INVALID);
    expect_in(lt_errmsg(), "no input tensor (NULL) on the root");
    /* a split rule that cannot cut this rank's dim: 3 explicit sizes for 4 members */
    lt_split_rule rule = {
        .kind = LT_SPLIT_EXPLICIT, .nsizes = 3, .sizes = (const int64_t[]){1, 1, 2}};
    c = mk(LT_COLL_REDUCE_SCATTER, 1, LT_F32, 4, -1, 12);
    c.op = LT_REDOP_SUM;
    c.dim = 0;
    c.rule = &rule;
    LT_EXPECT_STATUS(lt_match_validate(&m, 5, &c), LT_INVALID);
    expect_in(lt_errmsg(), "prog.c:12: rank 5: reduce_scatter on mesh dim 1: cannot split dim 0");
    /* avg of bools */
    c = mk(LT_COLL_ALL_REDUCE, 0, LT_BOOL, 4, -1, 13);
    c.op = LT_REDOP_AVG;
    LT_EXPECT_STATUS(lt_match_validate(&m, 0, &c), LT_UNSUPPORTED);
    c = lt_match_call_init(LT_COLL_PERMUTE, 0, NULL, 0);
    LT_EXPECT_STATUS(lt_match_validate(&m, 0, &c), LT_INVALID);
    expect_in(lt_errmsg(), "permute) cannot be matched");
}

/* ---- mismatches -------------------------------------------------------------------- */

/* Ranks 0..3 of mesh 4 post a[r]; expects a mismatch between rank_a and
 * rank_b whose text holds `what`. */
static void expect_mismatch(const lt_match_call *a, int ra, int rb, const char *what) {
    lt_mesh m = mesh_of("4");
    lt_match *mt;
    LT_CHECK(lt_match_new(&m, &mt));
    for (int r = 0; r < 4; r++) post(mt, r, &a[r], 0);   /* complete but never ready */
    lt_match_report *rep;
    LT_EXPECT_STATUS(lt_match_check(mt, &rep), LT_MISMATCH);
    assert_non_null(rep);
    expect_in(lt_errmsg(), "would hang (mismatch)");
    assert_int_equal(rep->kind, LT_HANG_MISMATCH);
    assert_int_equal(rep->rank_a, ra);
    assert_int_equal(rep->rank_b, rb);
    expect_in(rep->what, what);
    assert_int_equal(rep->nstuck, 1);
    assert_int_equal(rep->focus, 0);
    assert_int_equal(rep->stuck[0].mesh_dim, 0);
    assert_int_equal(rep->stuck[0].group, 0);
    assert_int_equal(rep->stuck[0].seq, 0);
    char *t = text_of(rep);
    char site[64];
    snprintf(site, sizeof site, "rank %d calls ", ra);
    expect_in(t, site);
    snprintf(site, sizeof site, "prog.c:%d", a[ra].line);
    expect_in(t, site);
    snprintf(site, sizeof site, "prog.c:%d", a[rb].line);
    expect_in(t, site);
    expect_in(t, "docs/SEMANTICS.md §12");
    free(t);
    lt_match_report_free(rep);
    lt_match_free(mt);
}

static void test_mismatch_kinds(void **state) {
    (void)state;
    lt_match_call a[4];
    for (int r = 0; r < 4; r++) a[r] = ar(0, LT_REDOP_SUM, 20 + r);
    /* kind: rank 2 all_gathers */
    a[2] = mk(LT_COLL_ALL_GATHER, 0, LT_F32, 4, -1, 40);
    a[2].dim = 0;
    expect_mismatch(a, 0, 2, "the collective differs (all_reduce vs all_gather)");
    /* op: rank 3 reduces with max */
    a[2] = ar(0, LT_REDOP_SUM, 22);
    a[3] = ar(0, LT_REDOP_MAX, 41);
    expect_mismatch(a, 0, 3, "the reduce op differs (sum vs max)");
    /* dtype: rank 1 passes bf16 */
    a[3] = ar(0, LT_REDOP_SUM, 23);
    a[1].dtype = LT_BF16;
    expect_mismatch(a, 0, 1, "the dtype differs (f32 vs bf16)");
    /* shape: rank 1 passes (5); the first difference in group order is reported */
    a[1] = ar(0, LT_REDOP_SUM, 21);
    a[1].shape[0] = 5;
    a[3].shape[0] = 6;
    expect_mismatch(a, 0, 1, "the shapes differ ((4) vs (5))");
    /* barrier against all_reduce */
    a[1] = ar(0, LT_REDOP_SUM, 21);
    a[3] = mk(LT_COLL_BARRIER, 0, LT_F32, 0, 0, 42);
    expect_mismatch(a, 0, 3, "the collective differs (all_reduce vs barrier)");
    /* all_gather: other dims must agree; the gathered dim may differ */
    for (int r = 0; r < 4; r++) {
        a[r] = mk(LT_COLL_ALL_GATHER, 0, LT_F32, r, 3, 50 + r);
        a[r].dim = 0;
    }
    a[2].shape[1] = 2;
    expect_mismatch(a, 0, 2, "the shapes differ outside dim 0 ((0, 3) vs (2, 2))");
    a[2].shape[1] = 3;
    a[3].dim = 1;
    expect_mismatch(a, 0, 3, "the gather dim differs (0 vs 1)");
    /* reduce_scatter: the split rules must agree */
    lt_split_rule bal = {.kind = LT_SPLIT_BALANCED};
    for (int r = 0; r < 4; r++) {
        a[r] = mk(LT_COLL_REDUCE_SCATTER, 0, LT_F32, 6, -1, 60 + r);
        a[r].op = LT_REDOP_SUM;
        a[r].dim = 0;
    }
    a[1].rule = &bal;
    expect_mismatch(a, 0, 1, "the split rule differs (chunk vs balanced)");
    /* broadcast: roots differ */
    for (int r = 0; r < 4; r++) {
        a[r] = mk(LT_COLL_BROADCAST, 0, LT_F32, 2, -1, 70 + r);
        a[r].root = 1;
    }
    a[3].root = 2;
    expect_mismatch(a, 0, 3, "the root differs (1 vs 2)");
    /* broadcast: a non-root's tensor compares with the root's (rank 2, the root) */
    for (int r = 0; r < 4; r++) a[r].root = 2;
    a[0].has_tensor = 0;
    a[1].shape[0] = 3;
    expect_mismatch(a, 2, 1, "the shapes differ ((2) vs (3))");
}

static void test_broadcast_without_tensors(void **state) {
    (void)state;
    lt_mesh m = mesh_of("4");
    lt_match *mt;
    LT_CHECK(lt_match_new(&m, &mt));
    for (int r = 0; r < 4; r++) {
        lt_match_call c = r == 3 ? mk(LT_COLL_BROADCAST, 0, LT_I64, 2, 2, 5)
                                 : lt_match_call_init(LT_COLL_BROADCAST, 0, "prog.c", 5);
        c.root = 3;
        post(mt, r, &c, r == 3);
    }
    LT_CHECK(lt_match_done(mt, 0, 0));
    lt_match_free(mt);
}

/* ---- missing, cycle, failure ----------------------------------------------------------- */

static void test_missing(void **state) {
    (void)state;
    lt_mesh m = mesh_of("8");
    lt_match *mt;
    LT_CHECK(lt_match_new(&m, &mt));
    for (int r = 0; r < 8; r++) {   /* one completed call first */
        lt_match_call c = ar(0, LT_REDOP_SUM, 10);
        post(mt, r, &c, r == 7);
    }
    LT_CHECK(lt_match_done(mt, 0, 0));
    char step_file[16] = "steps.yaml";   /* borrowed until lt_match_check only */
    for (int r = 0; r < 8; r++) {
        if (r >= 4) {   /* 4, 5: after their last call; 6, 7: after the step their caller names */
            LT_CHECK(r < 6 ? lt_match_finish(mt, r) : lt_match_finish_at(mt, r, step_file, 77));
            continue;
        }
        lt_match_call c = ar(0, LT_REDOP_SUM, 30);
        c.label = "grad sync";
        post(mt, r, &c, 0);
    }
    lt_match_report *rep;
    LT_EXPECT_STATUS(lt_match_check(mt, &rep), LT_MISMATCH);
    memset(step_file, 'x', sizeof step_file - 1);   /* the report keeps its own copy */
    assert_int_equal(rep->kind, LT_HANG_MISSING);
    assert_int_equal(rep->rank_a, 0);
    assert_int_equal(rep->rank_b, 4);
    assert_int_equal(rep->nstuck, 1);
    assert_int_equal(rep->stuck[0].seq, 1);
    for (int r = 0; r < 8; r++) {
        assert_int_equal(rep->ranks[r].state, r < 4 ? LT_RANK_WAITING : LT_RANK_FINISHED);
        if (r < 4) {
            assert_string_equal(rep->ranks[r].call.file, "prog.c");
            assert_int_equal(rep->ranks[r].call.line, 30);
            assert_string_equal(rep->ranks[r].call.label, "grad sync");
            assert_int_equal(rep->ranks[r].seq, 1);
        }
    }
    char *t = text_of(rep);
    expect_in(
        t,
        "would hang (missing): on mesh dim 0, group 0 [0,1,2,3,4,5,6,7], call #2: rank 0 waits in "
        "all_reduce(op=sum) f32 (4) \"grad sync\" at prog.c:30, but rank 4 finished without making "
        "that "
        "call (waiting: ranks 0-3; ended: ranks 4-7)");
    expect_in(t,
              "\n    ranks 0-3: waiting in all_reduce(op=sum) f32 (4) \"grad sync\" at prog.c:30");
    expect_in(t, "\n    ranks 4, 5: finished after its last call at prog.c:10\n"
                 "    ranks 6, 7: finished after its last step at steps.yaml:77\n");
    assert_string_equal(rep->ranks[6].last_file, "steps.yaml");
    assert_int_equal(rep->ranks[6].last_is_step, 1);
    /* the headline alone, and a cut buffer keeps snprintf's contract */
    char head[64];
    size_t need = lt_match_report_headline(rep, head, sizeof head);
    assert_true(need > sizeof head);
    assert_int_equal(strlen(head), sizeof head - 1);
    assert_true(strncmp(t, head, sizeof head - 1) == 0);
    free(t);
    lt_match_report_free(rep);
    lt_match_free(mt);
}

/* 2x2: ranks 0 and 3 call on dp then tp, ranks 1 and 2 on tp then dp */
static void test_cycle(void **state) {
    (void)state;
    lt_mesh m = mesh_of("dp=2,tp=2");
    lt_match *mt;
    LT_CHECK(lt_match_new(&m, &mt));
    for (int r = 0; r < 4; r++) {
        int dp_first = r == 0 || r == 3;
        lt_match_call c = ar(dp_first ? 0 : 1, LT_REDOP_SUM, dp_first ? 40 : 44);
        post(mt, r, &c, 0);
    }
    lt_match_report *rep;
    LT_EXPECT_STATUS(lt_match_check(mt, &rep), LT_MISMATCH);
    assert_int_equal(rep->kind, LT_HANG_CYCLE);
    /* worked out in docs/SEMANTICS.md §12: 0 -> 2 -> 3 -> 1 */
    assert_int_equal(rep->ncycle, 4);
    int want[4] = {0, 2, 3, 1};
    for (int i = 0; i < 4; i++) assert_int_equal(rep->cycle[i], want[i]);
    assert_int_equal(rep->nstuck, 4);
    assert_int_equal(rep->stuck[rep->focus].mesh_dim, 0);
    assert_int_equal(rep->stuck[rep->focus].group, 0);
    char *t = text_of(rep);
    expect_in(t,
              "would hang (cycle): every rank waits for another: rank 0 waits in "
              "all_reduce(op=sum) f32 (4) "
              "at prog.c:40 on mesh dim 0 (dp), group 0 [0,2] for rank 2; rank 2 waits in "
              "all_reduce(op=sum) "
              "f32 (4) at prog.c:44 on mesh dim 1 (tp), group 1 [2,3] for rank 3; rank 3 waits in "
              "all_reduce(op=sum) f32 (4) at prog.c:40 on mesh dim 0 (dp), group 1 [1,3] for rank "
              "1; rank 1 "
              "waits in all_reduce(op=sum) f32 (4) at prog.c:44 on mesh dim 1 (tp), group 0 [0,1] "
              "for rank 0");
    expect_in(t, "\n  mesh dim 0 (dp), group 0 [0,2], call #1:\n    rank 0: waiting in "
                 "all_reduce(op=sum) f32 (4) at "
                 "prog.c:40\n    rank 2: waiting elsewhere, in all_reduce(op=sum) f32 (4) on mesh "
                 "dim 1 (tp), group 1 "
                 "[2,3] at prog.c:44");
    free(t);
    lt_match_report_free(rep);
    lt_match_free(mt);
}

static void test_rank_failed(void **state) {
    (void)state;
    lt_mesh m = mesh_of("4");
    lt_match *mt;
    LT_CHECK(lt_match_new(&m, &mt));
    lt_match_call c = ar(0, LT_REDOP_SUM, 3);
    post(mt, 0, &c, 0);
    c.op = LT_REDOP_MAX;   /* a mismatch too: the failure comes first */
    post(mt, 1, &c, 0);
    LT_CHECK(lt_match_fail(mt, 3, LT_SHAPE, "matmul: (2, 3) @ (4, 5)"));
    LT_CHECK(lt_match_fail(mt, 2, LT_DTYPE, "add: f32 + i64"));
    lt_match_report *rep;
    LT_EXPECT_STATUS(lt_match_check(mt, &rep), LT_DTYPE);
    assert_int_equal(rep->kind, LT_HANG_RANK_FAILED);
    assert_int_equal(rep->rank_a, 2);
    assert_string_equal(rep->failed_msg, "add: f32 + i64");
    assert_int_equal(rep->ranks[3].state, LT_RANK_FAILED);
    assert_int_equal(rep->ranks[3].status, LT_SHAPE);
    expect_in(lt_errmsg(), "rank 2 failed (dtype mismatch): add: f32 + i64");
    lt_match_report_free(rep);
    lt_match_free(mt);
}

static void test_kind_names(void **state) {
    (void)state;
    const char *names[] = {"mismatch", "missing", "cycle", "rank_failed"};
    for (int k = 0; k < LT_HANG_COUNT; k++) {
        lt_hang_kind got;
        assert_string_equal(lt_hang_kind_name((lt_hang_kind)k), names[k]);
        LT_CHECK(lt_hang_kind_parse(names[k], &got));
        assert_int_equal(got, k);
    }
    lt_hang_kind got;
    LT_EXPECT_STATUS(lt_hang_kind_parse("deadlock", &got), LT_INVALID);
    expect_in(lt_errmsg(),
              "unknown hang kind 'deadlock' (known: mismatch, missing, cycle, rank_failed)");
    assert_string_equal(lt_hang_kind_name(LT_HANG_COUNT), "?");
}

/* ---- determinism: every schedule gives the same report ------------------------------------ */

#define MAXC 8
typedef struct rank_prog {
    int n;
    lt_match_call c[MAXC];
} rank_prog;

static uint64_t rng = 88172645463325252ull;
static int rnd(int n) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int)(rng % (uint64_t)n);
}

/* Runs the programs under a random schedule until nothing runs; the report text. */
static char *run_random(const lt_mesh *m, const rank_prog *pr) {
    lt_match *mt;
    LT_CHECK(lt_match_new(m, &mt));
    int pc[64] = {0}, state[64] = {0}; /* 0 running, 1 waiting, 2 ended */
    for (;;) {
        int run[64], nr = 0;
        for (int r = 0; r < m->world; r++)
            if (state[r] == 0) run[nr++] = r;
        if (!nr) break;
        int r = run[rnd(nr)];
        if (pc[r] == pr[r].n) {
            LT_CHECK(lt_match_finish(mt, r));
            state[r] = 2;
            continue;
        }
        int ready, g;
        LT_CHECK(lt_match_post(mt, r, &pr[r].c[pc[r]], &ready, &g));
        state[r] = 1;
        if (!ready) continue;
        int md = pr[r].c[pc[r]].mesh_dim, mem[64];
        lt_mesh_group(m, md, g, mem);
        LT_CHECK(lt_match_done(mt, md, g));
        for (int p = 0; p < m->shape[md]; p++) {
            pc[mem[p]]++;
            state[mem[p]] = 0;
        }
    }
    lt_match_report *rep = NULL;
    lt_status st = lt_match_check(mt, &rep);
    assert_int_equal(st, rep ? LT_MISMATCH : LT_OK);
    char *t = rep ? text_of(rep) : strdup("completed");
    lt_match_report_free(rep);
    lt_match_free(mt);
    return t;
}

static void same_for_every_schedule(const lt_mesh *m, const rank_prog *pr, const char *want) {
    char *first = run_random(m, pr);
    expect_in(first, want);
    for (int i = 0; i < 200; i++) {
        char *t = run_random(m, pr);
        if (strcmp(t, first)) fail_msg("schedule %d gave\n%s\nbut the first gave\n%s", i, t, first);
        free(t);
    }
    free(first);
}

static void test_schedule_independent(void **state) {
    (void)state;
    static rank_prog pr[8];
    lt_mesh m = mesh_of("dp=2,tp=4");
    /* every rank: tp, dp, tp, tp; rank 6 stops after its dp call; tp group 0
     * disagrees on the op of its 3rd call (rank 2) */
    for (int r = 0; r < 8; r++) {
        pr[r].n = 4;
        pr[r].c[0] = ar(1, LT_REDOP_SUM, 10);
        pr[r].c[1] = ar(0, LT_REDOP_SUM, 11);
        pr[r].c[2] = ar(1, r == 2 ? LT_REDOP_MAX : LT_REDOP_SUM, 12);
        pr[r].c[3] = ar(1, LT_REDOP_SUM, 13);
    }
    pr[6].n = 2;
    same_for_every_schedule(
        &m, pr,
        "would hang (mismatch): on mesh dim 1 (tp), group 0 [0,1,2,3], call #2: rank 0 "
        "calls all_reduce(op=sum) f32 (4) at prog.c:12 but rank 2 calls all_reduce(op=max)");
    /* without the mismatch, the missing call of rank 6 is what is left */
    pr[2].c[2] = ar(1, LT_REDOP_SUM, 12);
    same_for_every_schedule(
        &m, pr,
        "would hang (missing): on mesh dim 1 (tp), group 1 [4,5,6,7], call #2: rank 4 "
        "waits in all_reduce(op=sum) f32 (4) at prog.c:12, but rank 6 finished");
    /* and with rank 6 complete, the program completes */
    pr[6].n = 4;
    same_for_every_schedule(&m, pr, "completed");
    /* the cycle of test_cycle, under any schedule */
    lt_mesh m4 = mesh_of("dp=2,tp=2");
    for (int r = 0; r < 4; r++) {
        int dp_first = r == 0 || r == 3;
        pr[r].n = 2;
        pr[r].c[0] = ar(dp_first ? 0 : 1, LT_REDOP_SUM, dp_first ? 40 : 44);
        pr[r].c[1] = ar(dp_first ? 1 : 0, LT_REDOP_SUM, dp_first ? 41 : 45);
    }
    same_for_every_schedule(&m4, pr, "would hang (cycle)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_complete),
        cmocka_unit_test(test_protocol_errors),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_mismatch_kinds),
        cmocka_unit_test(test_broadcast_without_tensors),
        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_cycle),
        cmocka_unit_test(test_rank_failed),
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test(test_schedule_independent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
