/* test/test_remesh.c — redistribute between a mesh and its flattened form
 * (localtensor/remesh.h). Expected shards are worked out by hand for two
 * layouts, and for a sweep of random layouts compared with lt_distribute of
 * the same full tensor straight onto the target mesh (separate code from
 * redistribute and remesh), or with the full tensor when the target is
 * Partial. */
#include <math.h>
#include <string.h>

#include "test/testutil.h"

static lt_tensor *arange_f64(int ndim, const int64_t *shape) {
    lt_tensor *t = NULL;
    LT_CHECK(lt_tensor_new(LT_F64, ndim, shape, &t));
    for (int64_t i = 0; i < lt_numel(t); i++) lt_set_flat(t, i, (double)i);
    return t;
}

static void expect_shard(const lt_dtensor *dt, int rank, int n, const double *want) {
    const lt_tensor *t = lt_to_local(dt, rank);
    assert_non_null(t);
    assert_int_equal(lt_numel(t), n);
    for (int i = 0; i < n; i++)
        if (lt_get_flat(t, i) != want[i])
            fail_msg("rank %d element %d: %g, want %g", rank, i, lt_get_flat(t, i), want[i]);
}

/* Even rows: [S(0), S(0), S(1)] on dp=2,cp=2,tp=2 is [S(0), S(1)] on
 * (dp_cp=4, tp=2) index by index: the shards carry over, nothing moves. */
static void test_even_carries_over(void **state) {
    (void)state;
    lt_mesh m3, m2;
    LT_CHECK(lt_mesh_parse("dp=2,cp=2,tp=2", &m3));
    LT_CHECK(lt_mesh_flatten(&m3, (int[]){0, 1}, 2, "dp_cp", &m2));
    lt_tensor *x = arange_f64(2, (int64_t[]){8, 6});   /* x[i][j] = 6i + j */
    lt_placement p3[3], p2[2];
    int n;
    LT_CHECK(lt_placements_parse("S(0),S(0),S(1)", p3, 3, &n));
    LT_CHECK(lt_placements_parse("S(0),S(1)", p2, 2, &n));
    lt_dtensor *a = NULL, *b = NULL, *c = NULL;
    LT_CHECK(lt_distribute(&m3, x, p3, 3, &a));
    lt_comm *comm = NULL;
    LT_CHECK(lt_comm_new(&m2, &comm));
    lt_redistribute_opts o = {.verify = 1, .comm = comm};
    LT_CHECK(lt_redistribute_remesh(a, &m2, p2, 2, &o, &b));
    assert_int_equal(lt_trace_count(lt_comm_trace(comm)), 0);   /* no collective */
    /* rank 2f + t: rows 2f, 2f + 1, columns 3t .. 3t + 2 */
    expect_shard(b, 0, 6, (double[]){0, 1, 2, 6, 7, 8});
    expect_shard(b, 5, 6, (double[]){27, 28, 29, 33, 34, 35});
    /* and back, to [R, R, S(0)] on the 3-D mesh: tp = t holds rows 4t .. 4t + 3 */
    LT_CHECK(lt_placements_parse("R,R,S(0)", p3, 3, &n));
    LT_CHECK(lt_redistribute_remesh(b, &m3, p3, 3, &o, &c));
    expect_shard(c, 6, 24, (double[]){0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                      12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
    expect_shard(c, 3, 24, (double[]){24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
                                      36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47});
    lt_dtensor_free(a);
    lt_dtensor_free(b);
    lt_dtensor_free(c);
    lt_comm_free(comm);
    lt_tensor_free(x);
}

/* Uneven: 5 over dp then cp is 2, 1, 1, 1; over dp_cp it is 2, 2, 1, 0, so
 * the route replicates the run first (an all_gather on each of dp and cp). */
static void test_uneven_goes_through_replicate(void **state) {
    (void)state;
    lt_mesh m3, m2;
    LT_CHECK(lt_mesh_parse("dp=2,cp=2,tp=2", &m3));
    LT_CHECK(lt_mesh_flatten(&m3, (int[]){0, 1}, 2, "dp_cp", &m2));
    lt_tensor *x = arange_f64(1, (int64_t[]){5});
    lt_placement p3[3], p2[2];
    int n;
    LT_CHECK(lt_placements_parse("S(0),S(0),R", p3, 3, &n));
    LT_CHECK(lt_placements_parse("S(0),R", p2, 2, &n));
    lt_dtensor *a = NULL, *b = NULL;
    LT_CHECK(lt_distribute(&m3, x, p3, 3, &a));
    expect_shard(a, 2, 1, (double[]){2}); /* (dp 0, cp 1): the second piece of [0, 1, 2] */
    lt_comm *comm = NULL;
    LT_CHECK(lt_comm_new(&m3, &comm));
    lt_redistribute_opts o = {.verify = 1, .comm = comm};
    LT_CHECK(lt_redistribute_remesh(a, &m2, p2, 2, &o, &b));
    assert_true(lt_trace_count(lt_comm_trace(comm)) > 0);   /* step 2 ran on the 3-D mesh */
    expect_shard(b, 0, 2, (double[]){0, 1});
    expect_shard(b, 3, 2, (double[]){2, 3});
    expect_shard(b, 4, 1, (double[]){4});
    expect_shard(b, 7, 0, NULL);
    lt_dtensor_free(a);
    lt_dtensor_free(b);
    lt_comm_free(comm);
    lt_tensor_free(x);
}

static void test_unrelated_meshes(void **state) {
    (void)state;
    lt_mesh a, b;
    LT_CHECK(lt_mesh_parse("2x4", &a));
    LT_CHECK(lt_mesh_parse("4x2", &b));
    lt_tensor *x = arange_f64(1, (int64_t[]){4});
    lt_placement r[2] = {lt_replicate(), lt_replicate()};
    lt_dtensor *d = NULL, *o = NULL;
    LT_CHECK(lt_distribute(&a, x, r, 2, &d));
    LT_EXPECT_STATUS(lt_redistribute_remesh(d, &b, r, 2, NULL, &o), LT_UNSUPPORTED);
    assert_non_null(strstr(lt_errmsg(), "not supported yet: remesh from mesh 2x4 to mesh 4x2"));
    LT_CHECK(lt_mesh_parse("2x4:[[0,1,2,3],[4,5,7,6]]", &b));   /* same shape, other ranks */
    LT_EXPECT_STATUS(lt_redistribute_remesh(d, &b, r, 2, NULL, &o), LT_UNSUPPORTED);
    assert_null(o);
    lt_dtensor_free(d);
    lt_tensor_free(x);
}

static uint64_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static lt_placement random_pl(uint64_t *s, int ndim) {
    switch (lcg(s) % 4) {
    case 0: return lt_replicate();
    case 1: return lt_partial(LT_REDOP_SUM);
    default: return lt_shard((int)(lcg(s) % (uint64_t)ndim));
    }
}

/* out against the reference: lt_distribute of x on out's mesh, shard by
 * shard, or the full tensor when a target dim is Partial. */
static int matches(const lt_dtensor *out, const lt_tensor *x, const lt_placement *dst, int np) {
    int partial = 0;
    for (int i = 0; i < np; i++) partial |= dst[i].kind == LT_PL_PARTIAL;
    lt_tensor *full = NULL;
    lt_dtensor *ref = NULL;
    int ok = 1;
    if (partial) {
        LT_CHECK(lt_full_tensor_direct(out, &full));
        for (int64_t i = 0; i < lt_numel(x) && ok; i++)
            ok = fabs(lt_get_flat(full, i) - lt_get_flat(x, i)) < 1e-9;
    } else {
        LT_CHECK(lt_distribute(lt_dtensor_mesh(out), x, dst, np, &ref));
        for (int r = 0; r < lt_dtensor_mesh(out)->world && ok; r++) {
            const lt_tensor *a = lt_to_local(out, r), *b = lt_to_local(ref, r);
            ok = lt_same_shape(a, b);
            for (int64_t i = 0; ok && i < lt_numel(a); i++)   /* P(sum) over 3 rounds */
                ok = fabs(lt_get_flat(a, i) - lt_get_flat(b, i)) < 1e-9;
        }
    }
    lt_tensor_free(full);
    lt_dtensor_free(ref);
    return ok;
}

static void test_random_layouts(void **state) {
    (void)state;
    static const char *const meshes[] = {"dp=2,cp=2,tp=2",
                                         "dp=2,cp=2,tp=2:[[[5,1],[0,4]],[[2,7],[6,3]]]", "a=3,b=2",
                                         "x=2,y=3,z=2"};
    uint64_t seed = 0x7e3e5eedULL;
    int cases = 0, bridged = 0;
    for (int it = 0; it < 1200; it++) {
        lt_mesh fine, coarse;
        LT_CHECK(lt_mesh_parse(meshes[it % 4], &fine));
        int a = (int)(lcg(&seed) % (uint64_t)(fine.ndim - 1));
        LT_CHECK(lt_mesh_flatten(&fine, (int[]){a, a + 1}, 2, "flat", &coarse));
        int ndim = 1 + (int)(lcg(&seed) % 2);
        int64_t shape[2] = {(int64_t)(lcg(&seed) % 9), (int64_t)(lcg(&seed) % 7)};
        lt_tensor *x = arange_f64(ndim, shape);
        int flatten = lcg(&seed) % 2;
        const lt_mesh *from = flatten ? &fine : &coarse, *to = flatten ? &coarse : &fine;
        lt_placement src[LT_MESH_MAX_DIMS], dst[LT_MESH_MAX_DIMS];
        for (int i = 0; i < from->ndim; i++) src[i] = random_pl(&seed, ndim);
        for (int i = 0; i < to->ndim; i++) dst[i] = random_pl(&seed, ndim);
        lt_dtensor *d = NULL, *o = NULL;
        LT_CHECK(lt_distribute(from, x, src, from->ndim, &d));
        lt_comm *comm = NULL;
        LT_CHECK(lt_comm_new(from, &comm));
        lt_redistribute_opts opts = {.verify = 1, .comm = comm};
        LT_CHECK(lt_redistribute_remesh(d, to, dst, to->ndim, &opts, &o));
        bridged += lt_trace_count(lt_comm_trace(comm)) == 0;
        if (!matches(o, x, dst, to->ndim)) {
            char s[128], t[128], ms[128];
            lt_placements_format(src, from->ndim, s, sizeof s);
            lt_placements_format(dst, to->ndim, t, sizeof t);
            fail_msg("case %d: %s on %s -> %s on its %s form differs from the reference", it, s,
                     lt_mesh_format(from, ms, sizeof ms), t, flatten ? "flattened" : "unflattened");
        }
        cases++;
        lt_dtensor_free(d);
        lt_dtensor_free(o);
        lt_comm_free(comm);
        lt_tensor_free(x);
    }
    print_message("%d random remeshes equal the reference (%d carried over with no collective "
                  "before the target's redistribute)\n", cases, bridged);
    assert_true(bridged > 50 && bridged < cases - 50);   /* both routes taken */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_even_carries_over),
        cmocka_unit_test(test_uneven_goes_through_replicate),
        cmocka_unit_test(test_unrelated_meshes),
        cmocka_unit_test(test_random_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
