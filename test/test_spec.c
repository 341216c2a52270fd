/* test/test_spec.c — lt_spec_init: checked once, same messages as the checks
 * it runs; a DTensor's spec points at the mesh it owns. */
#include <string.h>

#include "localtensor/localtensor.h"
#include "test/testutil.h"

static void test_make_normalizes(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x3", &m));
    int64_t shape[2] = {4, 6};
    lt_placement pl[2] = {lt_shard(-1), lt_replicate()};
    lt_spec s;
    LT_CHECK(lt_spec_init(&m, LT_F32, 2, shape, pl, 2, &s));
    assert_ptr_equal(lt_spec_mesh(&s), &m);
    assert_int_equal(lt_spec_dtype(&s), LT_F32);
    assert_int_equal(lt_spec_ndim(&s), 2);
    assert_int_equal(lt_spec_shape(&s)[1], 6);
    assert_int_equal(lt_spec_nplacements(&s), 2);
    assert_int_equal(lt_spec_placements(&s)[0].kind, LT_PL_SHARD);
    assert_int_equal(lt_spec_placements(&s)[0].dim, 1); /* -1 + ndim */
}

static void test_make_errors(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x3", &m));
    int64_t shape[2] = {4, 6};
    lt_placement pl[2] = {lt_shard(2), lt_replicate()};
    lt_spec s;
    LT_EXPECT_STATUS(lt_spec_init(&m, LT_F32, 2, shape, pl, 2, &s), LT_INVALID);
    assert_int_equal(s.ndim, 0);
    LT_EXPECT_STATUS(lt_spec_init(&m, LT_F32, 2, shape, pl, 1, &s), LT_INVALID);
    LT_EXPECT_STATUS(lt_spec_init(&m, LT_F32, LT_MAX_DIMS + 1, shape, pl, 2, &s), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "dims"));
    int64_t huge[2] = {INT64_MAX / 2, 4};
    pl[0] = lt_replicate();
    LT_EXPECT_STATUS(lt_spec_init(&m, LT_F32, 2, huge, pl, 2, &s), LT_OVERFLOW);
    /* last rule: 1 element over 2 ranks (a layout error) */
    lt_split_rule last;
    memset(&last, 0, sizeof last);
    last.kind = LT_SPLIT_LAST;
    int64_t one[1] = {1};
    pl[0] = lt_shard_rule(0, last);
    LT_EXPECT_STATUS(lt_spec_init(&m, LT_F32, 1, one, pl, 2, &s), LT_INVALID);
}

static void test_dtensor_spec(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("4", &m));
    int64_t shape[1] = {8};
    lt_tensor *full = NULL;
    LT_CHECK(lt_tensor_new(LT_F32, 1, shape, &full));
    lt_placement pl[1] = {lt_shard(0)};
    lt_dtensor *dt = NULL, *c = NULL;
    LT_CHECK(lt_distribute(&m, full, pl, 1, &dt));
    const lt_spec *s = lt_dtensor_spec(dt);
    assert_ptr_equal(s->mesh, lt_dtensor_mesh(dt));
    assert_int_equal(s->ndim, 1);
    assert_int_equal(s->shape[0], 8);
    assert_int_equal(s->placements[0].kind, LT_PL_SHARD);
    LT_CHECK(lt_dtensor_clone(dt, &c));
    assert_ptr_equal(lt_dtensor_spec(c)->mesh, lt_dtensor_mesh(c));
    lt_dtensor_free(c);
    lt_dtensor_free(dt);
    lt_tensor_free(full);
}

/* chunk rule (docs/SEMANTICS.md §2): 10 over 4 ranks is 3, 3, 3, 1 */
static void test_spec_layout(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("4", &m));
    int64_t shape[2] = {10, 2};
    lt_placement pl[1] = {lt_shard(0)};
    lt_spec s;
    LT_CHECK(lt_spec_init(&m, LT_F32, 2, shape, pl, 1, &s));
    int64_t ls[2], off[2];
    LT_CHECK(lt_spec_local_shape(&s, 3, ls, off));
    assert_int_equal(ls[0], 1);
    assert_int_equal(ls[1], 2);
    assert_int_equal(off[0], 9);
    lt_rank_layout l;
    LT_CHECK(lt_spec_layout_rank(&s, 1, &l));
    assert_int_equal(l.local_shape[0], 3);
    assert_int_equal(l.idx[0][0], 3);
    assert_int_equal(l.idx[0][2], 5);
    lt_rank_layout_free(&l);
    uint64_t bytes;
    LT_CHECK(lt_spec_total_bytes(&s, &bytes));
    assert_int_equal(bytes, 10 * 2 * 4);
}

/* arange 0..7 over 2 ranks, S(0): rank 1 holds 4..7 */
static void test_distribute_spec(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2", &m));
    int64_t shape[1] = {8};
    lt_placement pl[1] = {lt_shard(0)};
    lt_spec s;
    LT_CHECK(lt_spec_init(&m, LT_F32, 1, shape, pl, 1, &s));
    lt_init init;
    LT_CHECK(lt_init_parse("arange", &init));
    lt_dtensor *a = NULL, *b = NULL;
    LT_CHECK(lt_dtensor_new_spec(&s, &init, &a));
    const lt_tensor *r1 = lt_to_local(a, 1);
    assert_int_equal(r1->shape[0], 4);
    assert_true(lt_get_flat(r1, 0) == 4.0);
    assert_true(lt_get_flat(r1, 3) == 7.0);
    lt_tensor *full = NULL;
    LT_CHECK(lt_full_tensor_direct(a, &full));
    LT_CHECK(lt_distribute_spec(&s, full, &b));
    assert_true(lt_get_flat(lt_to_local(b, 1), 2) == 6.0);
    assert_ptr_equal(lt_dtensor_spec(b)->mesh, lt_dtensor_mesh(b));
    lt_dtensor_free(b);
    lt_dtensor_free(a);
    lt_tensor_free(full);
    /* a tensor of another shape than the spec's */
    int64_t other[1] = {6};
    LT_CHECK(lt_tensor_new(LT_F32, 1, other, &full));
    LT_EXPECT_STATUS(lt_distribute_spec(&s, full, &b), LT_SHAPE);
    assert_null(b);
    lt_tensor_free(full);
    /* P(product) is a valid spec but distribute cannot produce it */
    pl[0] = lt_partial(LT_REDOP_PRODUCT);
    LT_CHECK(lt_spec_init(&m, LT_F32, 1, shape, pl, 1, &s));
    LT_EXPECT_STATUS(lt_dtensor_new_spec(&s, &init, &a), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "Partial(product)"));
}

static void test_plan_spec(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x2", &m));
    int64_t shape[2] = {4, 6};
    lt_placement a[2] = {lt_shard(0), lt_replicate()}, b[2] = {lt_replicate(), lt_shard(-1)};
    lt_spec sa, sb, sc;
    LT_CHECK(lt_spec_init(&m, LT_F32, 2, shape, a, 2, &sa));
    LT_CHECK(lt_spec_init(&m, LT_F32, 2, shape, b, 2, &sb));
    lt_plan *p = NULL, *q = NULL;
    LT_CHECK(lt_plan_redistribute_spec(&sa, &sb, NULL, &p));
    assert_int_equal(p->nsteps, 2);
    /* the loose entry point is a wrapper: same cached plan */
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 2, shape, a, b, 2, NULL, &q));
    assert_ptr_equal(p, q);
    lt_plan_free(q);
    lt_plan_free(p);
    int64_t other[2] = {4, 8};
    LT_CHECK(lt_spec_init(&m, LT_F32, 2, other, b, 2, &sc));
    LT_EXPECT_STATUS(lt_plan_redistribute_spec(&sa, &sc, NULL, &p), LT_INVALID);
    assert_null(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_make_normalizes),
        cmocka_unit_test(test_make_errors),
        cmocka_unit_test(test_dtensor_spec),
        cmocka_unit_test(test_spec_layout),
        cmocka_unit_test(test_distribute_spec),
        cmocka_unit_test(test_plan_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
