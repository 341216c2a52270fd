/* test/test_numerics.c — numerics modes (localtensor/numerics.h): parsing,
 * the sampled ranks, and sampled redistributes against full mode.
 *
 * Expected values come from outside the code under test:
 *   - the sampled ranks: computed by hand from the rule "first, last, and
 *     round(j * (W - 1) / (K - 1)) between";
 *   - values: the full-mode redistribute (lt_dtensor_new_spec +
 *     lt_redistribute through the collectives, verified against the direct
 *     reshard); a sampled rank's shard must equal it bit for bit;
 *   - plans: the full-mode plan, step by step and byte by byte.
 */
#include <stdlib.h>
#include <string.h>

#include "localtensor/localtensor.h"
#include "localtensor/plan/plan_impl.h"
#include "test/testutil.h"

static void test_parse(void **state) {
    (void)state;
    lt_numerics nm;
    char buf[32];
    LT_CHECK(lt_numerics_parse("full", &nm));
    assert_int_equal(nm.kind, LT_NUMERICS_FULL);
    LT_CHECK(lt_numerics_parse("none", &nm));
    assert_int_equal(nm.kind, LT_NUMERICS_NONE);
    LT_CHECK(lt_numerics_parse("sample", &nm));
    assert_int_equal(nm.kind, LT_NUMERICS_SAMPLE);
    assert_int_equal(nm.k, 4);
    LT_CHECK(lt_numerics_parse("sample:8", &nm));
    assert_int_equal(nm.k, 8);
    assert_string_equal(lt_numerics_format(&nm, buf, sizeof buf), "sample:8");
    const char *bad[] = {"sample:0",  "sample:", "sample:x", "sample:3x",
                         "sample:-2", "Full",    "",         "sample:99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        LT_EXPECT_STATUS(lt_numerics_parse(bad[i], &nm), LT_INVALID);
        assert_non_null(strstr(lt_errmsg(), bad[i][0] ? bad[i] : "''"));
    }
}

static void test_ranks(void **state) {
    (void)state;
    lt_numerics nm = {LT_NUMERICS_SAMPLE, 8};
    int r[8];
    /* round(j * 65535 / 7): 9362.14, 18724.29, 28086.43, 37448.57, 46810.71, 56172.86 */
    assert_int_equal(lt_numerics_count(&nm, 65536), 8);
    assert_int_equal(lt_numerics_ranks(&nm, 65536, r), 8);
    int want[8] = {0, 9362, 18724, 28086, 37449, 46811, 56173, 65535};
    for (int i = 0; i < 8; i++) assert_int_equal(r[i], want[i]);
    char buf[128];
    assert_string_equal(lt_numerics_ranks_format(r, 8, 3, buf, sizeof buf),
                        "0, 9362, 18724, ... (8 in all)");
    nm.k = 2;
    assert_int_equal(lt_numerics_ranks(&nm, 5, r), 2);
    assert_int_equal(r[0], 0);
    assert_int_equal(r[1], 4);
    nm.k = 1;
    assert_int_equal(lt_numerics_ranks(&nm, 5, r), 1);
    assert_int_equal(r[0], 0);
    nm.k = 3;   /* round(j * 3 / 2): 0, 1.5 -> 2, 3 */
    assert_int_equal(lt_numerics_ranks(&nm, 4, r), 3);
    assert_int_equal(r[1], 2);
    assert_int_equal(r[2], 3);
    nm.k = 9;   /* K >= W: every rank */
    assert_int_equal(lt_numerics_ranks(&nm, 4, r), 4);
    assert_int_equal(r[3], 3);
    lt_numerics none = {LT_NUMERICS_NONE, 0}, full = {LT_NUMERICS_FULL, 0};
    assert_int_equal(lt_numerics_count(&none, 4), 0);
    assert_int_equal(lt_numerics_count(&full, 4), 4);
}

/* Bit-identical shards (shape, dtype, every byte). */
static void expect_same_bits(const lt_tensor *a, const lt_tensor *b, const char *what, int rank) {
    if (a->dtype != b->dtype || !lt_same_shape(a, b))
        fail_msg("%s: rank %d: shape or dtype differs", what, rank);
    lt_tensor *ca = lt_test_host_copy(a), *cb = lt_test_host_copy(b); /* raw bytes: on the host */
    if (lt_nbytes(ca) && memcmp(lt_data(ca), lt_data(cb), lt_nbytes(ca))) {
        for (int64_t i = 0; i < lt_numel(ca); i++)
            if (lt_get_flat(ca, i) != lt_get_flat(cb, i))
                fail_msg("%s: rank %d element %lld: sampled %.9g, full %.9g", what, rank,
                         (long long)i, lt_get_flat(ca, i), lt_get_flat(cb, i));
        fail_msg("%s: rank %d: bits differ", what, rank);
    }
    lt_tensor_free(ca);
    lt_tensor_free(cb);
}

static void expect_same_plan(const lt_plan *a, const lt_plan *b, const char *what) {
    if (a->nsteps != b->nsteps || a->total_bytes != b->total_bytes || a->ncomm != b->ncomm)
        fail_msg("%s: plans differ (%d vs %d steps, %zu vs %zu bytes)", what, a->nsteps, b->nsteps,
                 a->total_bytes, b->total_bytes);
    for (int s = 0; s < a->nsteps; s++) {
        const lt_plan_step *x = &a->steps[s], *y = &b->steps[s];
        if (x->mesh_dim != y->mesh_dim || x->comm != y->comm ||
            strcmp(x->collective, y->collective) || x->bytes_per_rank != y->bytes_per_rank ||
            x->bytes_total != y->bytes_total || !lt_placement_equal(&x->from, &y->from) ||
            !lt_placement_equal(&x->to, &y->to))
            fail_msg("%s: step %d differs", what, s + 1);
    }
}

/* lt_plan_trace of plan p gives the events of the full run (`full`, the
 * communicator's trace): collective, mesh dim, group size and every rank's
 * bytes sent and received. */
static long coll_seen[LT_COLL_COUNT];   /* events compared, by collective */

static void expect_same_trace(const lt_plan *p, const lt_trace *full, const char *what) {
    lt_trace *t;
    LT_CHECK(lt_trace_new(p->mesh.world, &t));
    LT_CHECK(lt_plan_trace(p, t));
    if (lt_trace_count(t) != lt_trace_count(full))
        fail_msg("%s: %zu events on paper, %zu in the run", what, lt_trace_count(t),
                 lt_trace_count(full));
    for (size_t e = 0; e < lt_trace_count(t); e++) {
        lt_trace_event a, b;
        LT_CHECK(lt_trace_get(t, e, &a));
        LT_CHECK(lt_trace_get(full, e, &b));
        if (a.coll != b.coll || a.mesh_dim != b.mesh_dim || a.group_size != b.group_size ||
            a.ngroups != b.ngroups || a.dtype != b.dtype || a.total_recv != b.total_recv)
            fail_msg("%s: event %zu differs (%s on dim %d vs %s on dim %d)", what, e,
                     lt_coll_name(a.coll), a.mesh_dim, lt_coll_name(b.coll), b.mesh_dim);
        coll_seen[a.coll]++;
        for (int r = 0; r < a.world; r++)
            if (a.sent[r] != b.sent[r] || a.recv[r] != b.recv[r])
                fail_msg("%s: event %zu (%s), rank %d: paper sent/recv %zu/%zu, run %zu/%zu", what,
                         e, lt_coll_name(a.coll), r, a.sent[r], a.recv[r], b.sent[r], b.recv[r]);
    }
    lt_trace_free(t);
}

typedef struct stats {
    long run, refused, ranks;
} stats;

/* One pair: full mode vs sampled (the sample of k ranks, and none). */
static void check_pair(const lt_mesh *m, lt_dtype dt, int ndim, const int64_t *shape,
                       const lt_init *init, const lt_placement *sp, const lt_placement *dp,
                       lt_planner planner, int k, stats *s) {
    char a[256], b[256], what[700], ms[64];
    lt_placements_format(sp, m->ndim, a, sizeof a);
    lt_placements_format(dp, m->ndim, b, sizeof b);
    snprintf(what, sizeof what, "mesh %s, %s %s: %s -> %s (%s)", lt_mesh_format(m, ms, sizeof ms),
             lt_dtype_name(dt), ndim == 2 ? "2-d" : "1-d", a, b, lt_planner_name(planner));
    lt_spec spec;
    if (lt_spec_init(m, dt, ndim, shape, sp, m->ndim, &spec)) return;   /* not a layout */
    lt_dtensor *src = NULL, *full = NULL, *smp = NULL;
    lt_status st = lt_dtensor_new_spec(&spec, init, &src);
    lt_redistribute_opts o = {0};
    o.planner = planner;
    o.verify = 1;
    lt_plan *pf = NULL, *ps = NULL;
    lt_comm *comm;
    LT_CHECK(lt_comm_new(m, &comm));
    o.comm = comm;
    if (!st) st = lt_redistribute(src, dp, m->ndim, &o, &full, &pf);
    o.comm = NULL;
    lt_numerics nm = {LT_NUMERICS_SAMPLE, k};
    int ranks[64];
    int n = lt_numerics_ranks(&nm, m->world, ranks);
    lt_status st2 = lt_redistribute_ranks(&spec, init, dp, m->ndim, ranks, n, &o, &smp, &ps);
    if (!st && st2 == LT_UNSUPPORTED && pf &&
        lt__plan_x_of(pf)->zf_end > lt__plan_x_of(pf)->zf_first) {
        /* sampled values of a Shard -> Partial(sum) zero fill: "not supported yet" */
        s->refused++;
        lt_comm_free(comm);
        lt_plan_free(pf);
        lt_plan_free(ps);
        lt_dtensor_free(full);
        lt_dtensor_free(src);
        return;
    }
    if (st != st2)
        fail_msg("%s: full mode gave %s, sample mode %s: %s", what, lt_status_name(st),
                 lt_status_name(st2), lt_errmsg());
    if (st) {
        s->refused++;
    } else {
        expect_same_plan(ps, pf, what);
        assert_int_equal(lt_local_count(smp->local), n);
        for (int i = 0; i < n; i++)
            expect_same_bits(smp->local->shards[ranks[i]], full->local->shards[ranks[i]], what,
                             ranks[i]);
        s->ranks += n;
        s->run++;
        expect_same_trace(ps, lt_comm_trace(comm), what);
        /* none: the same plan, no values */
        lt_dtensor *nv = NULL;
        lt_plan *pn = NULL;
        LT_CHECK(lt_redistribute_ranks(&spec, init, dp, m->ndim, NULL, 0, &o, &nv, &pn));
        assert_int_equal(lt_local_count(nv->local), 0);
        expect_same_plan(pn, pf, what);
        lt_plan_free(pn);
        lt_dtensor_free(nv);
    }
    lt_comm_free(comm);
    lt_plan_free(pf);
    lt_plan_free(ps);
    lt_dtensor_free(src);
    lt_dtensor_free(full);
    lt_dtensor_free(smp);
}

static void sweep(const char *mesh_s, const char *const *pls, int npl, int ndim,
                  const int64_t *shape, lt_dtype dt, const char *init_s, lt_planner planner, int k,
                  stats *s) {
    lt_mesh m;
    LT_CHECK(lt_mesh_parse(mesh_s, &m));
    lt_init init;
    LT_CHECK(lt_init_parse(init_s, &init));
    int M = m.ndim, nlist = 1;
    for (int i = 0; i < M; i++) nlist *= npl;
    enum { MAX_LISTS = 256 * LT_MESH_MAX_DIMS };
    static lt_placement lists[MAX_LISTS];   /* (nlist, M) */
    if (nlist * M > MAX_LISTS) fail_msg("sweep: %d placement lists of %d do not fit", nlist, M);
    for (int l = 0; l < nlist; l++) {
        int x = l;
        for (int i = 0; i < M; i++, x /= npl) {
            int np;
            LT_CHECK(lt_placements_parse(pls[x % npl], &lists[l * M + i], 1, &np));
        }
    }
    for (int a = 0; a < nlist; a++)
        for (int b = 0; b < nlist; b++)
            check_pair(&m, dt, ndim, shape, &init, &lists[a * M], &lists[b * M], planner, k, s);
}

/* Every pair over a placement set on 1-D and 2-D meshes: even and uneven
 * shapes, Partial of every op, strided and uneven rules, 16-bit floats. */
static void test_sample_equals_full(void **state) {
    (void)state;
    stats s = {0};
    const char *p1[] = {
        "R",      "S(0)",    "S(1)",          "P(sum)",    "P(avg)",        "P(max)",
        "P(min)", "SS(0,2)", "S(0,balanced)", "S(1,last)", "S(0,[3,0,1,1])"};
    int64_t sh1[2] = {5, 6}, sh2[2] = {4, 4}, sh3[2] = {3, 7};
    sweep("4", p1, 11, 2, sh1, LT_F32, "random:3", LT_PLANNER_MIN_COST, 2, &s);
    sweep("4", p1, 11, 2, sh1, LT_BF16, "randn:5", LT_PLANNER_MIN_COST, 3, &s);
    sweep("4", p1, 11, 2, sh1, LT_F64, "randn:2", LT_PLANNER_GREEDY, 4, &s);
    const char *p2[] = {"R", "S(0)", "S(1)", "P(sum)", "P(max)", "SS(0,2)", "P(avg)"};
    sweep("2x2", p2, 7, 2, sh2, LT_F32, "randn:1", LT_PLANNER_MIN_COST, 2, &s);
    sweep("2x3", p2, 7, 2, sh3, LT_F32, "random:9", LT_PLANNER_MIN_COST, 3, &s);
    sweep("2x2", p2, 7, 2, sh2, LT_F16, "randn:4", LT_PLANNER_GREEDY, 3, &s);
    print_message(
        "sample vs full: %ld pairs run (%ld sampled shards compared), %ld refused by both\n", s.run,
        s.ranks, s.refused);
    for (int c = 0; c < LT_COLL_COUNT; c++)
        if (coll_seen[c])
            print_message("  %s: %ld events compared with the run\n", lt_coll_name((lt_coll)c),
                          coll_seen[c]);
    assert_true(s.run > 500);
    assert_true(s.refused > 0);
}

/* The target's transition at a size where full mode fits: a 16x16 mesh (256
 * ranks), (256, 256) f32, [S(0),S(1)] -> [S(1),S(0)], sample:8 and an uneven
 * (250, 260) random variant: same plan, same trace, same bits. */
static void test_target_transition(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("16x16", &m));
    lt_placement sp[2], dp[2];
    int np;
    LT_CHECK(lt_placements_parse("S(0),S(1)", sp, 2, &np));
    LT_CHECK(lt_placements_parse("S(1),S(0)", dp, 2, &np));
    int64_t shapes[2][2] = {{256, 256}, {250, 260}};
    lt_init inits[2] = {{LT_INIT_ARANGE, 0}, {LT_INIT_RANDOM, 5}};
    stats s = {0};
    for (int i = 0; i < 2; i++) {
        check_pair(&m, LT_F32, 2, shapes[i], &inits[i], sp, dp, LT_PLANNER_MIN_COST, 8, &s);
        check_pair(&m, LT_F32, 2, shapes[i], &inits[i], sp, dp, LT_PLANNER_GREEDY, 8, &s);
    }
    assert_int_equal(s.run, 4);
    assert_int_equal(s.ranks, 32);
}

/* Chains: init -> mid -> dst in full mode against the sampled chain (the
 * second redistribute starts from the first's source description), for
 * every triple over a placement set with every Partial op on a 2x2 mesh. */
static void test_chain(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x2", &m));
    const char *pls[] = {"R", "S(0)", "S(1)", "P(sum)", "P(avg)", "P(max)", "SS(1,2)"};
    enum { NP = 7 };
    int64_t shape[2] = {3, 6};
    lt_init init = {LT_INIT_RANDN, 7};
    int ranks[2] = {1, 2};
    long run = 0;
    lt_placement lists[NP * NP][2];
    for (int l = 0; l < NP * NP; l++) {
        int np;
        LT_CHECK(lt_placements_parse(pls[l / NP], &lists[l][0], 1, &np));
        LT_CHECK(lt_placements_parse(pls[l % NP], &lists[l][1], 1, &np));
    }
    for (int a = 0; a < NP * NP; a++) {
        lt_spec spec;
        if (lt_spec_init(&m, LT_F32, 2, shape, lists[a], 2, &spec)) continue;
        lt_dtensor *src;
        if (lt_dtensor_new_spec(&spec, &init, &src)) continue;
        lt_sample_src g;
        LT_CHECK(lt_sample_src_init(&g, &init, &spec));
        for (int b = 0; b < NP * NP; b++) {
            lt_dtensor *mid, *smid;
            lt_sample_src gm;
            if (lt_redistribute(src, lists[b], 2, NULL, &mid, NULL)) continue;
            lt_status sm =
                lt_redistribute_sampled(&spec, &g, lists[b], 2, ranks, 2, NULL, &smid, NULL, &gm);
            /* sampled values of a zero fill: not supported yet */
            if (sm == LT_UNSUPPORTED && strstr(lt_errmsg(), "zero fill")) {
                lt_dtensor_free(mid);
                continue;
            }
            LT_CHECK(sm);
            for (int c = 0; c < NP * NP; c += 3) {
                lt_dtensor *fin, *sfin;
                if (lt_redistribute(mid, lists[c], 2, NULL, &fin, NULL)) continue;
                lt_redistribute_opts o = {0};
                o.verify = 1;
                lt_status ss = lt_redistribute_sampled(lt_dtensor_spec(mid), &gm, lists[c], 2,
                                                       ranks, 2, &o, &sfin, NULL, NULL);
                /* sampled values of a zero fill: not supported yet */
                if (ss == LT_UNSUPPORTED && strstr(lt_errmsg(), "zero fill")) {
                    lt_dtensor_free(fin);
                    continue;
                }
                LT_CHECK(ss);
                char what[128];
                snprintf(what, sizeof what, "%s,%s -> %s,%s -> %s,%s", pls[a / NP], pls[a % NP],
                         pls[b / NP], pls[b % NP], pls[c / NP], pls[c % NP]);
                for (int i = 0; i < 2; i++)
                    expect_same_bits(sfin->local->shards[ranks[i]], fin->local->shards[ranks[i]],
                                     what, ranks[i]);
                run++;
                lt_dtensor_free(fin);
                lt_dtensor_free(sfin);
            }
            lt_dtensor_free(mid);
            lt_dtensor_free(smid);
        }
        lt_dtensor_free(src);
    }
    print_message("sampled chains equal to full mode: %ld\n", run);
    assert_true(run > 1000);
}

/* The sampled source: only the sampled ranks hold shards, equal to full
 * mode's; the others are absent; a rank list out of order is refused. */
static void test_init_ranks(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x4", &m));
    lt_placement pl[2];
    int np;
    LT_CHECK(lt_placements_parse("P(sum),S(1)", pl, 2, &np));
    int64_t shape[2] = {3, 10};
    lt_spec spec;
    LT_CHECK(lt_spec_init(&m, LT_F32, 2, shape, pl, 2, &spec));
    lt_init init = {LT_INIT_RANDN, 11};
    lt_dtensor *full, *smp;
    LT_CHECK(lt_dtensor_new_spec(&spec, &init, &full));
    int ranks[3] = {0, 5, 7};
    LT_CHECK(lt_dtensor_new_ranks(&spec, &init, ranks, 3, &smp));
    assert_int_equal(lt_local_count(smp->local), 3);
    for (int i = 0; i < 3; i++)
        expect_same_bits(smp->local->shards[ranks[i]], full->local->shards[ranks[i]], "init",
                         ranks[i]);
    assert_null(lt_to_local(smp, 1));
    int bad[2] = {5, 3};
    lt_dtensor *x;
    LT_EXPECT_STATUS(lt_dtensor_new_ranks(&spec, &init, bad, 2, &x), LT_INVALID);
    bad[0] = 8;
    LT_EXPECT_STATUS(lt_dtensor_new_ranks(&spec, &init, bad, 1, &x), LT_INVALID);
    lt_dtensor_free(full);
    lt_dtensor_free(smp);
}

int main(void) {
    lt_test_backend_from_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_ranks),
        cmocka_unit_test(test_init_ranks),
        cmocka_unit_test(test_sample_equals_full),
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_target_transition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
