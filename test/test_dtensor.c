/* test/test_dtensor.c — distribute / init / from_local / full_tensor
 * (docs/SEMANTICS.md §3, §5, §8, §11.2, §11.4) and LocalTensor helpers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/localtensor.h"
#include "test/testutil.h"
#include "kernels/status_impl.h"
#include "tools/render/render.h"

static lt_tensor *arange(lt_dtype dt, int ndim, const int64_t *shape) {
    lt_tensor *t;
    LT_CHECK(lt_tensor_new(dt, ndim, shape, &t));
    LT_CHECK(lt_arange_fill(t));
    return t;
}

static void parse(const char *mesh_s, const char *pls, lt_mesh *m, lt_placement *pl, int *np) {
    LT_CHECK(lt_mesh_parse(mesh_s, m));
    LT_CHECK(lt_placements_parse(pls, pl, LT_MESH_MAX_DIMS, np));
}

static void test_seed_example(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement pl[2];
    int np;
    int64_t n = 5;
    parse("dp=2,tp=2", "SS(0,2),S(0)", &m, pl, &np);
    lt_tensor *x = arange(LT_F32, 1, &n);
    lt_dtensor *d;
    LT_CHECK(lt_distribute(&m, x, pl, np, &d));
    lt_test_expect_values(lt_to_local(d, 0), 1, (int64_t[]){2}, (double[]){0, 1}, "rank 0");
    lt_test_expect_values(lt_to_local(d, 1), 1, (int64_t[]){1}, (double[]){3}, "rank 1");
    lt_test_expect_values(lt_to_local(d, 2), 1, (int64_t[]){1}, (double[]){2}, "rank 2");
    lt_test_expect_values(lt_to_local(d, 3), 1, (int64_t[]){1}, (double[]){4}, "rank 3");
    lt_tensor *full;
    LT_CHECK(lt_full_tensor_direct(d, &full));
    lt_test_expect_values(full, 1, &n, (double[]){0, 1, 2, 3, 4}, "full");
    lt_tensor_free(full);
    lt_dtensor_free(d);
    lt_tensor_free(x);
}

static void test_offsets_docstring(void **state) {
    (void)state;
    /* [[0,1,2,3,4],[10,11,12,13,14]] on (DP=2,TP=2) with (S(1),S(1)) */
    lt_mesh m;
    lt_placement pl[2];
    int np;
    double v[10] = {0, 1, 2, 3, 4, 10, 11, 12, 13, 14};
    lt_tensor *x;
    LT_CHECK(lt_tensor_from_doubles(LT_F32, 2, (int64_t[]){2, 5}, v, 10, &x));
    parse("dp=2,tp=2", "S(1),S(1)", &m, pl, &np);
    lt_dtensor *d;
    LT_CHECK(lt_distribute(&m, x, pl, np, &d));
    lt_test_expect_values(lt_to_local(d, 0), 2, (int64_t[]){2, 2}, (double[]){0, 1, 10, 11},
                          "rank 0");
    lt_test_expect_values(lt_to_local(d, 1), 2, (int64_t[]){2, 1}, (double[]){2, 12}, "rank 1");
    lt_test_expect_values(lt_to_local(d, 2), 2, (int64_t[]){2, 1}, (double[]){3, 13}, "rank 2");
    lt_test_expect_values(lt_to_local(d, 3), 2, (int64_t[]){2, 1}, (double[]){4, 14}, "rank 3");
    lt_dtensor_free(d);
    lt_tensor_free(x);
}

static void test_partial_distribute(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement pl[2];
    int np;
    int64_t n = 3;
    double v[3] = {1, 2, 3};
    lt_tensor *x;
    LT_CHECK(lt_tensor_from_doubles(LT_F32, 1, &n, v, 3, &x));
    lt_dtensor *d;
    /* (P,P) on 2x2 gives t/2/2 on every rank */
    parse("2x2", "P,P", &m, pl, &np);
    LT_CHECK(lt_distribute(&m, x, pl, np, &d));
    for (int r = 0; r < 4; r++)
        lt_test_expect_values(lt_to_local(d, r), 1, &n, (double[]){0.25, 0.5, 0.75}, "P,P rank");
    lt_tensor *full;
    LT_CHECK(lt_full_tensor_direct(d, &full));
    lt_test_expect_values(full, 1, &n, v, "P,P full");
    lt_tensor_free(full);
    lt_dtensor_free(d);
    /* avg, max and min keep the value on every rank; the reduction gives it back */
    const char *keep[] = {"P(avg),R", "P(max),S(0)", "R,P(min)", "P(sum),P(avg)"};
    for (int k = 0; k < 4; k++) {
        parse("2x2", keep[k], &m, pl, &np);
        LT_CHECK(lt_distribute(&m, x, pl, np, &d));
        LT_CHECK(lt_full_tensor_direct(d, &full));
        lt_test_expect_values(full, 1, &n, v, keep[k]);
        lt_tensor_free(full);
        lt_dtensor_free(d);
    }
    /* docs/SEMANTICS.md §5: the logical value of P(product) is the product of the ranks' values */
    {
        lt_tensor *pr[2];
        int64_t one = 1;
        LT_CHECK(lt_tensor_from_doubles(LT_F32, 1, &one, (double[]){2}, 1, &pr[0]));
        LT_CHECK(lt_tensor_from_doubles(LT_F32, 1, &one, (double[]){3}, 1, &pr[1]));
        parse("2", "P(product)", &m, pl, &np);
        LT_CHECK(lt_from_local(&m, pr, pl, np, 1, &d));
        LT_CHECK(lt_full_tensor_direct(d, &full));
        lt_test_expect_values(full, 1, &one, (double[]){6}, "P(product) full");
        lt_tensor_free(full);
        lt_dtensor_free(d);
        lt_tensor_free(pr[0]);
        lt_tensor_free(pr[1]);
    }
    /* docs/SEMANTICS.md §10 rejections */
    parse("2", "P(product)", &m, pl, &np);
    LT_EXPECT_STATUS(lt_distribute(&m, x, pl, np, &d), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "Partial(product)"));
    parse("2x2", "P(sum),P(max)", &m, pl, &np);
    LT_EXPECT_STATUS(lt_distribute(&m, x, pl, np, &d), LT_INVALID);
    parse("2x2", "S(0)", &m, pl, &np);
    LT_EXPECT_STATUS(lt_distribute(&m, x, pl, np, &d), LT_INVALID);
    parse("2", "S(-2)", &m, pl, &np);
    LT_EXPECT_STATUS(lt_distribute(&m, x, pl, np, &d), LT_INVALID);
    parse("2", "S(1)", &m, pl, &np);
    LT_EXPECT_STATUS(lt_distribute(&m, x, pl, np, &d), LT_INVALID);
    lt_tensor_free(x);
    /* shard of a 0-d tensor */
    lt_tensor *s;
    LT_CHECK(lt_tensor_new(LT_F32, 0, NULL, &s));
    parse("2", "S(0)", &m, pl, &np);
    LT_EXPECT_STATUS(lt_distribute(&m, s, pl, np, &d), LT_INVALID);
    parse("2", "R", &m, pl, &np);
    LT_CHECK(lt_distribute(&m, s, pl, np, &d));
    lt_dtensor_free(d);
    lt_tensor_free(s);
}

/* Each rank of d (x distributed, or initialised in place, with pl[np] on m)
 * holds x at its layout's indices; nothing is compared when a Partial(sum)
 * dim of size > 1 partitions the values. Frees what it makes. */
static void expect_local_values(const lt_dtensor *d, const lt_tensor *x, const lt_placement *pl,
                                int np, const lt_mesh *m, const char *mesh_name) {
    for (int i = 0; i < np; i++)
        if (pl[i].kind == LT_PL_PARTIAL && pl[i].op == LT_REDOP_SUM && m->shape[i] > 1) return;
    for (int r = 0; r < m->world; r++) {
        lt_rank_layout l;
        LT_CHECK(lt_spec_layout_rank(lt_dtensor_spec(d), r, &l));
        const lt_tensor *t = lt_to_local(d, r);
        for (int64_t a = 0; a < l.local_shape[0]; a++)
            for (int64_t b = 0; b < l.local_shape[1]; b++) {
                int64_t gi[2] = {l.idx[0] ? l.idx[0][a] : a, l.idx[1] ? l.idx[1][b] : b};
                int64_t li[2] = {a, b};
                if (lt_get(t, li) != lt_get(x, gi))
                    fail_msg("%s mesh %s rank %d (%lld,%lld): %g vs %g", lt_dtype_name(x->dtype),
                             mesh_name, r, (long long)a, (long long)b, lt_get(t, li),
                             lt_get(x, gi));
            }
        lt_rank_layout_free(&l);
    }
}

/* every dtype, 1-D meshes 1..8, 2x2, 2x3, 4x2, 2x2x2: distribute -> values at
 * the layout's indices -> full_tensor_direct equals the original */
static void test_roundtrip_dtypes(void **state) {
    (void)state;
    const char *meshes[] = {"1", "2", "3", "4", "5", "6", "7", "8", "2x2", "2x3", "4x2", "2x2x2"};
    const char *pl1[] = {"R",    "S(0)",   "S(0,balanced)", "S(0,last)", "SS(0,2)",
                         "S(1)", "P(max)", "P(min)",        "P(avg)",    "P(sum)"};
    const int64_t shapes[][2] = {{0, 3}, {1, 1}, {3, 5}, {9, 2}, {16, 3}};
    long count = 0;
    for (int dt = 0; dt < LT_DTYPE_COUNT; dt++) {
        for (size_t mi = 0; mi < sizeof meshes / sizeof meshes[0]; mi++) {
            lt_mesh m;
            LT_CHECK(lt_mesh_parse(meshes[mi], &m));
            for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
                lt_tensor *x = arange((lt_dtype)dt, 2, shapes[si]);
                /* one placement per mesh dim, rotating through pl1 */
                for (size_t p0 = 0; p0 < sizeof pl1 / sizeof pl1[0]; p0++) {
                    lt_placement pl[LT_MESH_MAX_DIMS];
                    int np = 0, skip = 0;
                    for (int i = 0; i < m.ndim; i++) {
                        int tmp;
                        LT_CHECK(lt_placements_parse(
                            pl1[(p0 + (size_t)i * 3) % (sizeof pl1 / sizeof pl1[0])], &pl[i], 1,
                            &tmp));
                        np++;
                    }
                    lt_redop first = LT_REDOP_SUM;
                    int have = 0;
                    for (int i = 0; i < np; i++) {
                        if (pl[i].kind != LT_PL_PARTIAL) continue;
                        if (!lt_dtype_is_float((lt_dtype)dt) && pl[i].op != LT_REDOP_MAX &&
                            pl[i].op != LT_REDOP_MIN)
                            skip = 1;
                        if (have && pl[i].op != first &&
                            !((pl[i].op == LT_REDOP_SUM || pl[i].op == LT_REDOP_AVG) &&
                              (first == LT_REDOP_SUM || first == LT_REDOP_AVG)))
                            skip = 1;
                        have = 1;
                        first = pl[i].op;
                    }
                    if (skip) continue;
                    lt_dtensor *d;
                    lt_status st = lt_distribute(&m, x, pl, np, &d);
                    if (st == LT_INVALID && strstr(lt_errmsg(), "last"))
                        continue; /* last with n < k */
                    LT_CHECK(st);
                    expect_local_values(d, x, pl, np, &m, meshes[mi]);
                    lt_tensor *full;
                    LT_CHECK(lt_full_tensor_direct(d, &full));
                    double rtol, atol;
                    lt_dtype_default_tol((lt_dtype)dt, &rtol, &atol);
                    lt_compare_result cr;
                    LT_CHECK(lt_compare(full, x, rtol, atol, &cr));
                    if (!cr.equal) {
                        char txt[128];
                        lt_placements_format(pl, np, txt, sizeof txt);
                        fail_msg("%s mesh %s %s: full_tensor differs at %lld: %g vs %g",
                                 lt_dtype_name((lt_dtype)dt), meshes[mi], txt,
                                 (long long)cr.first_flat, cr.actual, cr.expected);
                    }
                    lt_tensor_free(full);
                    lt_dtensor_free(d);
                    count++;
                }
                lt_tensor_free(x);
            }
        }
    }
    print_message("round trips: %ld\n", count);
    assert_true(count > 1500);
}

/* docs/SEMANTICS.md §11.4: for a fixed seed every rank's values equal the unsharded
 * tensor's at its indices, for >= 50 mesh/placement combinations */
static void test_random_invariance(void **state) {
    (void)state;
    const char *meshes[] = {"2", "3", "4", "8", "2x2", "2x3", "4x2", "2x2x2"};
    const char *opts[] = {"R",         "S(0)",    "S(1)",    "S(0,balanced)",
                          "S(1,last)", "SS(0,2)", "SS(1,3)", "P(max)"};
    const int nopt = 8;
    int64_t g[2] = {7, 5};
    lt_init init = {LT_INIT_RANDOM, 1234};
    lt_tensor *full;
    LT_CHECK(lt_tensor_new(LT_F32, 2, g, &full));
    LT_CHECK(lt_init_fill(full, &init));
    /* the full tensor is Philox at each row-major index, computed here directly */
    for (int64_t i = 0; i < 35; i++)
        assert_true(lt_get_flat(full, i) == (double)(float)lt_rand_uniform(1234, (uint64_t)i));
    int combos = 0;
    for (size_t mi = 0; mi < sizeof meshes / sizeof meshes[0]; mi++) {
        lt_mesh m;
        LT_CHECK(lt_mesh_parse(meshes[mi], &m));
        for (int a = 0; a < nopt; a++) {
            lt_placement pl[LT_MESH_MAX_DIMS];
            int np1;
            for (int i = 0; i < m.ndim; i++)
                LT_CHECK(lt_placements_parse(opts[(a + i * 5) % nopt], &pl[i], 1, &np1));
            lt_dtensor *d;
            lt_status st = lt_dtensor_new(&m, LT_F32, 2, g, pl, m.ndim, &init, &d);
            if (st == LT_INVALID) continue;
            LT_CHECK(st);
            expect_local_values(d, full, pl, m.ndim, &m, meshes[mi]); /* no P(sum) among opts */
            lt_dtensor_free(d);
            combos++;
        }
    }
    lt_tensor_free(full);
    print_message("random init: %d mesh/placement combinations\n", combos);
    assert_true(combos >= 50);
}

/* integer and bool random draws are integers, not uniform floats truncated to 0 */
static void test_random_integers(void **state) {
    (void)state;
    int64_t n = 64;
    lt_init in = {LT_INIT_RANDOM, 5};
    const lt_dtype dts[3] = {LT_I32, LT_I64, LT_BOOL};
    for (int k = 0; k < 3; k++) {
        lt_tensor *t;
        LT_CHECK(lt_tensor_new(dts[k], 1, &n, &t));
        LT_CHECK(lt_init_fill(t, &in));
        int distinct = 0;
        for (int64_t i = 0; i < n; i++) {
            double v = lt_get_flat(t, i);
            double want = floor(lt_rand_uniform(5, (uint64_t)i) * 1000.0);
            if (dts[k] == LT_BOOL) want = lt_rand_uniform(5, (uint64_t)i) < 0.5;
            if (v != want)
                fail_msg("%s element %lld: %g, wanted %g", lt_dtype_name(dts[k]), (long long)i, v,
                         want);
            distinct += i > 0 && v != lt_get_flat(t, 0);
        }
        assert_true(distinct > 0);
        lt_tensor_free(t);
    }
}

static void test_from_local(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement pl[2];
    int np;
    /* uneven shards 3,1,0,2 over 4 ranks: global 6, explicit sizes inferred */
    parse("4", "S(0)", &m, pl, &np);
    lt_tensor *sh[4];
    const int64_t sz[4] = {3, 1, 0, 2};
    double v = 0;
    for (int r = 0; r < 4; r++) {
        LT_CHECK(lt_tensor_new(LT_F32, 1, &sz[r], &sh[r]));
        for (int64_t i = 0; i < sz[r]; i++) lt_set_flat(sh[r], i, v++);
    }
    lt_dtensor *d;
    LT_CHECK(lt_from_local(&m, sh, pl, np, 1, &d));
    assert_int_equal(d->shape[0], 6);
    assert_int_equal(d->placements[0].rule.kind, LT_SPLIT_EXPLICIT);
    lt_tensor *full;
    LT_CHECK(lt_full_tensor_direct(d, &full));
    lt_test_expect_values(full, 1, (int64_t[]){6}, (double[]){0, 1, 2, 3, 4, 5}, "from_local full");
    lt_tensor_free(full);
    lt_dtensor_free(d);
    /* chunk sizes 2,2,1,0 keep the chunk rule */
    const int64_t sz2[4] = {2, 2, 1, 0};
    for (int r = 0; r < 4; r++) {
        lt_tensor_free(sh[r]);
        LT_CHECK(lt_tensor_new(LT_F32, 1, &sz2[r], &sh[r]));
    }
    LT_CHECK(lt_from_local(&m, sh, pl, np, 1, &d));
    assert_int_equal(d->shape[0], 5);
    assert_int_equal(d->placements[0].rule.kind, LT_SPLIT_CHUNK);
    lt_dtensor_free(d);
    /* balanced rule given but sizes do not follow it */
    parse("4", "S(0,balanced)", &m, pl, &np);
    LT_EXPECT_STATUS(lt_from_local(&m, sh, pl, np, 1, &d), LT_SHAPE);
    for (int r = 0; r < 4; r++) lt_tensor_free(sh[r]);

    /* run_check: replicas along R must agree; message names the pair and index */
    parse("2x2", "S(0),R", &m, pl, &np);
    for (int r = 0; r < 4; r++) {
        int64_t two = 2;
        LT_CHECK(lt_tensor_new(LT_F32, 1, &two, &sh[r]));
        lt_set_flat(sh[r], 0, r / 2);
        lt_set_flat(sh[r], 1, 7);
    }
    LT_CHECK(lt_from_local(&m, sh, pl, np, 1, &d));
    assert_int_equal(d->shape[0], 4);
    lt_dtensor_free(d);
    lt_set_flat(sh[3], 1, 8);
    LT_EXPECT_STATUS(lt_from_local(&m, sh, pl, np, 1, &d), LT_MISMATCH);
    assert_non_null(strstr(lt_errmsg(), "ranks 2 and 3 differ at index [1]"));
    LT_CHECK(lt_from_local(&m, sh, pl, np, 0, &d)); /* without run_check it is accepted */
    lt_dtensor_free(d);
    /* uneven pieces that differ between groups of the mesh dim: no placement fits */
    for (int r = 0; r < 4; r++) lt_tensor_free(sh[r]);
    parse("2x2", "R,S(0)", &m, pl, &np);
    const int64_t sz3[4] = {2, 1, 1, 2};
    for (int r = 0; r < 4; r++) LT_CHECK(lt_tensor_new(LT_F32, 1, &sz3[r], &sh[r]));
    LT_EXPECT_STATUS(lt_from_local(&m, sh, pl, np, 0, &d), LT_SHAPE);
    assert_non_null(strstr(lt_errmsg(), "differently in different groups"));
    /* non-sharded dims must agree */
    lt_tensor_free(sh[3]);
    int64_t three = 3;
    LT_CHECK(lt_tensor_new(LT_F32, 1, &three, &sh[3]));
    parse("4", "R", &m, pl, &np);
    LT_EXPECT_STATUS(lt_from_local(&m, sh, pl, np, 0, &d), LT_SHAPE);
    for (int r = 0; r < 4; r++) lt_tensor_free(sh[r]);
}

static lt_status add_rank(int rank, const int *coord, const lt_tensor *in, void *user,
                          lt_tensor **out, int64_t *out_int) {
    (void)coord;
    (void)user;
    LT_TRY(lt_clone(in, out));
    int64_t n = lt_numel(*out);
    for (int64_t i = 0; i < n; i++) lt_set_flat(*out, i, lt_get_flat(*out, i) + rank);
    *out_int = n;
    return LT_OK;
}

static void test_local_map_and_ints(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement pl[1];
    int np;
    parse("4", "S(0)", &m, pl, &np);
    int64_t n = 5;
    lt_tensor *x = arange(LT_F32, 1, &n);
    lt_dtensor *d;
    LT_CHECK(lt_distribute(&m, x, pl, np, &d));
    lt_local *out;
    lt_localint sizes;
    LT_CHECK(lt_local_map(d->local, add_rank, NULL, &out, &sizes));
    lt_test_expect_values(out->shards[1], 1, (int64_t[]){2}, (double[]){3, 4}, "map rank 1");
    lt_test_expect_values(out->shards[2], 1, (int64_t[]){1}, (double[]){6}, "map rank 2");
    assert_int_equal(lt_numel(out->shards[3]), 0);
    char buf[128];
    assert_string_equal(lt_localint_format(&sizes, buf, sizeof buf), "{0: 2, 1: 2, 2: 1, 3: 0}");
    int64_t c;
    assert_false(lt_localint_is_const(&sizes, &c));
    lt_localint two;
    LT_CHECK(lt_localint_new(4, &two));
    for (int r = 0; r < 4; r++) two.v[r] = 2;
    assert_true(lt_localint_is_const(&two, &c));
    assert_int_equal(c, 2);
    assert_false(lt_localint_eq(&sizes, &two));
    int res;
    LT_EXPECT_STATUS(lt_localint_lt(&sizes, &two, &res), LT_INVALID); /* differs by rank */
    lt_localint_free(&two);
    lt_localint_free(&sizes);
    int all[4] = {0, 1, 2, 3};
    LT_EXPECT_STATUS(lt_local_check_equal(out, all, 4), LT_MISMATCH);
    lt_local_free(out);
    lt_dtensor_free(d);
    lt_tensor_free(x);
}

/* Absent shards (localtensor/local.h): a NULL entry is a rank whose shard is
 * not held here. Shapes come from layout math; values only from held ranks.
 * Expected values: S(0) of arange(5) on 4 ranks is [0,1] [2,3] [4] [] (chunk). */
/* test_absent_shards' second half: with ranks 1 and 2 absent from d (and
 * from its clone c), the verifier, from_shards and the reports. */
static void absent_verify_and_report(const lt_mesh *m, const lt_tensor *x, const lt_placement *pl,
                                     int np, lt_dtensor *d, lt_dtensor *c) {
    /* the verifier checks the held ranks of `actual` against a complete source */
    lt_dtensor *src;
    LT_CHECK(lt_distribute(m, x, pl, np, &src));
    LT_CHECK(lt_verify_reshard(src, c, 0, NULL));
    lt_set_flat(c->local->shards[0], 1, 7);
    LT_EXPECT_STATUS(lt_verify_reshard(src, c, 0, NULL), LT_MISMATCH);
    assert_non_null(strstr(lt_errmsg(), "rank 0, local index [1]"));
    LT_EXPECT_STATUS(lt_verify_reshard(d, src, 0, NULL),
                     LT_UNSUPPORTED); /* source with absent shards */
    /* from_shards: NULL entries stay absent; none at all is an error */
    lt_local *l2;
    LT_CHECK(lt_local_from_shards(m, d->local->shards, &l2));
    assert_int_equal(lt_local_count(l2), 2);
    lt_local_free(l2);
    lt_tensor *none[4] = {NULL, NULL, NULL, NULL};
    LT_EXPECT_STATUS(lt_local_from_shards(m, none, &l2), LT_INVALID);
    /* reports: layout for every rank, values for the held ones */
    FILE *f = tmpfile();
    assert_non_null(f);
    LT_CHECK(lt_render_ranks(f, d, 16));
    char *txt = lt_test_slurp_fp(f);
    fclose(f);
    assert_non_null(strstr(txt, "(absent: values not held here)"));
    assert_non_null(strstr(txt, "[0, 1]"));
    free(txt);
    lt_dtensor_free(src);
}

static void test_absent_shards(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement pl[1];
    int np;
    parse("4", "S(0)", &m, pl, &np);
    int64_t n = 5;
    lt_tensor *x = arange(LT_F32, 1, &n);
    lt_dtensor *d, *c, *v;
    LT_CHECK(lt_distribute(&m, x, pl, np, &d));
    assert_int_equal(lt_local_count(d->local), 4);
    for (int r = 1; r <= 2; r++) {
        lt_tensor_free(d->local->shards[r]);
        d->local->shards[r] = NULL;
    }
    assert_true(lt_local_has(d->local, 0));
    assert_false(lt_local_has(d->local, 1));
    assert_false(lt_local_has(d->local, 4));
    assert_int_equal(lt_local_count(d->local), 2);
    assert_int_equal(lt_local_first(d->local), 0);
    assert_null(lt_to_local(d, 2));
    /* clone keeps absent entries absent (the wrap checks the held ones) */
    LT_CHECK(lt_dtensor_clone(d, &c));
    assert_null(c->local->shards[1]);
    lt_test_expect_values(c->local->shards[0], 1, (int64_t[]){2}, (double[]){0, 1}, "clone rank 0");
    /* a map runs on held ranks only */
    lt_local *out;
    lt_localint sizes;
    LT_CHECK(lt_local_map(d->local, add_rank, NULL, &out, &sizes));
    assert_null(out->shards[1]);
    assert_null(out->shards[2]);
    lt_test_expect_values(out->shards[0], 1, (int64_t[]){2}, (double[]){0, 1}, "map rank 0");
    assert_int_equal(lt_numel(out->shards[3]), 0);
    assert_int_equal(sizes.v[0], 2);
    assert_int_equal(sizes.v[1], 0);
    lt_localint_free(&sizes);
    lt_local_free(out);
    /* replicas check compares the held ranks: rank 0 [0,1] vs rank 3 [] differ */
    int all[4] = {0, 1, 2, 3}, mid[3] = {1, 2, 3};
    LT_EXPECT_STATUS(lt_local_check_equal(d->local, all, 4), LT_MISMATCH);
    assert_non_null(strstr(lt_errmsg(), "ranks 0 and 3"));
    LT_CHECK(lt_local_check_equal(d->local, mid, 3));   /* only rank 3 held */
    /* what needs every rank says so */
    lt_tensor *full = NULL;
    LT_EXPECT_STATUS(lt_full_tensor_direct(d, &full), LT_UNSUPPORTED);
    assert_non_null(strstr(lt_errmsg(), "not supported yet: full_tensor needs rank 1's shard"));
    assert_int_equal(lt_errinfo()->code, LT_ERR_NOT_YET);
    lt_placement rep = lt_replicate();
    LT_EXPECT_STATUS(lt_redistribute(d, &rep, 1, NULL, &v, NULL), LT_UNSUPPORTED);
    assert_non_null(strstr(lt_errmsg(), "absent shards (2 of 4 ranks held)"));
    /* a redistribute without steps keeps the views it has */
    lt_placement same = lt_shard(0);
    LT_CHECK(lt_redistribute(d, &same, 1, NULL, &v, NULL));
    assert_null(v->local->shards[2]);
    lt_test_expect_values(v->local->shards[0], 1, (int64_t[]){2}, (double[]){0, 1}, "view rank 0");
    lt_dtensor_free(v);
    absent_verify_and_report(&m, x, pl, np, d, c);
    lt_dtensor_free(c);
    lt_dtensor_free(d);
    lt_tensor_free(x);
}

static void test_overflow(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement pl[1];
    int np;
    parse("2", "S(0)", &m, pl, &np);
    int64_t huge[2] = {INT64_MAX / 2, 4};
    lt_init in = {LT_INIT_ZEROS, 0};
    lt_dtensor *d;
    LT_EXPECT_STATUS(lt_dtensor_new(&m, LT_F32, 2, huge, pl, np, &in, &d), LT_OVERFLOW);
    /* legal sizes whose shards together exceed this machine's memory: refused
     * up front (32 TB over 8 replicas), never left to the kernel's OOM killer */
    parse("8", "R", &m, pl, &np);
    int64_t big = 1000000000000LL;
    LT_EXPECT_STATUS(lt_dtensor_new(&m, LT_F32, 1, &big, pl, np, &in, &d), LT_NOMEM);
    assert_non_null(strstr(lt_errmsg(), "for the shards of all 8 ranks, more than this machine's"));
}

int main(void) {
    lt_test_backend_from_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_example),      cmocka_unit_test(test_offsets_docstring),
        cmocka_unit_test(test_partial_distribute), cmocka_unit_test(test_roundtrip_dtypes),
        cmocka_unit_test(test_random_invariance),  cmocka_unit_test(test_from_local),
        cmocka_unit_test(test_random_integers),
        cmocka_unit_test(test_local_map_and_ints), cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_absent_shards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
