/* test/test_align.c — the alignment check of elementwise binary ops with an
 * operand built by from_local (docs/SEMANTICS.md §11.6), through the C API:
 * misaligned uneven shards ([3, 1] against [2, 2] on 2 ranks) are LT_INVALID
 * with sub-code LT_ERR_MISALIGNED; aligned ones add rank-locally; operands
 * not from from_local keep the redistribute rule. */
#include <string.h>

#include "test/testutil.h"
#include "localtensor/localtensor.h"

static lt_dtensor *from_local2(const lt_mesh *m, int n0, const double *v0, int n1,
                               const double *v1) {
    lt_tensor *sh[2] = {NULL, NULL};
    int64_t s0 = n0, s1 = n1;
    assert_int_equal(lt_tensor_from_doubles(LT_F32, 1, &s0, v0, n0, &sh[0]), LT_OK);
    assert_int_equal(lt_tensor_from_doubles(LT_F32, 1, &s1, v1, n1, &sh[1]), LT_OK);
    lt_placement pl = lt_shard(0);
    lt_dtensor *dt = NULL;
    assert_int_equal(lt_from_local(m, sh, &pl, 1, 0, &dt), LT_OK);
    lt_tensor_free(sh[0]);
    lt_tensor_free(sh[1]);
    assert_int_equal(dt->from_local, 1);
    return dt;
}

static void test_misaligned_from_local(void **state) {
    (void)state;
    lt_mesh m;
    assert_int_equal(lt_mesh_parse("2", &m), LT_OK);
    const double a0[] = {1, 2, 3}, a1[] = {4}, b0[] = {10, 20}, b1[] = {30, 40},
                 c0[] = {10, 20, 30}, c1[] = {40};
    lt_dtensor *a = from_local2(&m, 3, a0, 1, a1), *b = from_local2(&m, 2, b0, 2, b1),
               *c = from_local2(&m, 3, c0, 1, c1);
    lt_dtensor *out = NULL;
    /* [3, 1] + [2, 2]: rank 0 holds rows [0, 3) of a but [0, 2) of b */
    assert_int_equal(lt_dtensor_binary(LT_BINARY_ADD, a, b, &out), LT_INVALID);
    assert_null(out);
    assert_int_equal(lt_errinfo()->code, LT_ERR_MISALIGNED);
    assert_non_null(strstr(lt_errmsg(), "rank 0"));
    assert_non_null(strstr(lt_errmsg(), "[0, 3)"));
    assert_non_null(strstr(lt_errmsg(), "[0, 2)"));
    /* aligned: [3, 1] + [3, 1] adds rank-locally */
    assert_int_equal(lt_dtensor_binary(LT_BINARY_ADD, a, c, &out), LT_OK);
    assert_int_equal(out->from_local, 0);
    assert_true(lt_get_flat(lt_to_local(out, 0), 2) == 33);
    assert_true(lt_get_flat(lt_to_local(out, 1), 0) == 44);
    lt_dtensor_free(out);
    /* an explicit redistribute of b to a's placements fixes it */
    lt_dtensor *b31 = NULL;
    assert_int_equal(lt_redistribute(b, a->placements, 1, NULL, &b31, NULL), LT_OK);
    assert_int_equal(b31->from_local, 0);
    assert_int_equal(lt_dtensor_binary(LT_BINARY_ADD, a, b31, &out), LT_OK);
    assert_true(lt_get_flat(lt_to_local(out, 0), 2) == 33);
    lt_dtensor_free(out);
    lt_dtensor_free(b31);
    lt_dtensor_free(a);
    lt_dtensor_free(b);
    lt_dtensor_free(c);
}

static void test_distributed_operands_keep_redistributing(void **state) {
    (void)state;
    lt_mesh m;
    assert_int_equal(lt_mesh_parse("2", &m), LT_OK);
    int64_t n = 4;
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_placement p31, p = lt_shard(0);
    assert_int_equal(lt_placement_parse("S(0,[3,1])", &p31), LT_OK);
    lt_dtensor *a = NULL, *b = NULL, *out = NULL;
    assert_int_equal(lt_dtensor_new(&m, LT_F32, 1, &n, &p31, 1, &init, &a), LT_OK);
    assert_int_equal(lt_dtensor_new(&m, LT_F32, 1, &n, &p, 1, &init, &b), LT_OK);
    assert_int_equal(lt_dtensor_binary(LT_BINARY_ADD, a, b, &out), LT_OK);
    lt_tensor *full = NULL;
    assert_int_equal(lt_full_tensor_direct(out, &full), LT_OK);
    for (int i = 0; i < 4; i++) assert_true(lt_get_flat(full, i) == 2.0 * i);
    lt_tensor_free(full);
    lt_dtensor_free(out);
    lt_dtensor_free(a);
    lt_dtensor_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_misaligned_from_local),
        cmocka_unit_test(test_distributed_operands_keep_redistributing)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
