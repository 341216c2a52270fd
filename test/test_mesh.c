/* test/test_mesh.c — mesh construction, parsing, coordinates and groups.
 * Expected values are computed by hand from docs/SEMANTICS.md §1 (row-major ranks). */
#include "localtensor/collectives_sim/mesh.h"

#include <string.h>

#include "test/testutil.h"

static void test_parse_shapes(void **state) {
    (void)state;
    lt_mesh m;
    char buf[64];
    LT_CHECK(lt_mesh_parse("8", &m));
    assert_int_equal(m.ndim, 1);
    assert_int_equal(m.world, 8);
    LT_CHECK(lt_mesh_parse("2x4", &m));
    assert_int_equal(m.ndim, 2);
    assert_int_equal(m.shape[0], 2);
    assert_int_equal(m.shape[1], 4);
    assert_int_equal(m.world, 8);
    assert_string_equal(lt_mesh_format(&m, buf, sizeof buf), "2x4");
    LT_CHECK(lt_mesh_parse("2x2x2", &m));
    assert_int_equal(m.ndim, 3);
    assert_int_equal(m.world, 8);
    LT_CHECK(lt_mesh_parse("dp=2,tp=4", &m));
    assert_int_equal(m.ndim, 2);
    assert_string_equal(m.names[0], "dp");
    assert_string_equal(m.names[1], "tp");
    assert_int_equal(lt_mesh_dim_by_name(&m, "tp"), 1);
    assert_int_equal(lt_mesh_dim_by_name(&m, "pp"), -1);
    assert_string_equal(lt_mesh_format(&m, buf, sizeof buf), "dp=2,tp=4");
    lt_mesh m2;
    LT_CHECK(lt_mesh_parse("dp=2,tp=4", &m2));
    assert_true(lt_mesh_equal(&m, &m2));
    LT_CHECK(lt_mesh_parse("2x4", &m2));
    assert_false(lt_mesh_equal(&m, &m2)); /* names differ */
}

static void expect_parse_error(const char *s, const char *needle) {
    lt_mesh m;
    LT_EXPECT_STATUS(lt_mesh_parse(s, &m), LT_INVALID);
    if (!strstr(lt_errmsg(), needle))
        fail_msg("parse '%s': message '%s' lacks '%s'", s, lt_errmsg(), needle);
}

static void test_parse_errors(void **state) {
    (void)state;
    expect_parse_error("2x0", "2x0");
    expect_parse_error("x", "'x'");
    expect_parse_error("dp=2,dp=2", "twice");
    expect_parse_error("abc", "abc");
    expect_parse_error("", "empty");
    expect_parse_error("2x", "2x");
    expect_parse_error("2x2x2x2x2x2x2x2x2", "more than 8 dims");
    expect_parse_error("100000", "ranks");
    expect_parse_error("dp=2,4", "name=size");
    lt_mesh m;
    int bad[2] = {2, 0};
    LT_EXPECT_STATUS(lt_mesh_init(&m, 2, bad, NULL), LT_INVALID);
    LT_EXPECT_STATUS(lt_mesh_init(&m, 0, bad, NULL), LT_INVALID);
}

static void test_coordinates(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x3", &m));
    /* rank r = c0 * 3 + c1 */
    static const int want[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
    for (int r = 0; r < 6; r++) {
        int c[2];
        lt_mesh_coord(&m, r, c);
        assert_int_equal(c[0], want[r][0]);
        assert_int_equal(c[1], want[r][1]);
        assert_int_equal(lt_mesh_rank(&m, c), r);
    }
    LT_CHECK(lt_mesh_parse("2x2x2", &m));
    int c[3];
    lt_mesh_coord(&m, 6, c); /* 6 = 1*4 + 1*2 + 0 */
    assert_int_equal(c[0], 1);
    assert_int_equal(c[1], 1);
    assert_int_equal(c[2], 0);
    /* powers of two (taken by mask and shift) mixed with other sizes: every
     * rank against counting through the coordinates in row-major order */
    static const char *const meshes[] = {"4x3x2", "3x8", "1x16x1", "5x2x7", "2x2x2x2x2x2", "64"};
    for (size_t x = 0; x < sizeof meshes / sizeof meshes[0]; x++) {
        LT_CHECK(lt_mesh_parse(meshes[x], &m));
        int wc[LT_MESH_MAX_DIMS] = {0};
        for (int r = 0; r < m.world; r++) {
            int got[LT_MESH_MAX_DIMS];
            lt_mesh_coord(&m, r, got);
            for (int i = 0; i < m.ndim; i++)
                if (got[i] != wc[i])
                    fail_msg("mesh %s rank %d: coordinate %d is %d, wanted %d", meshes[x], r, i,
                             got[i], wc[i]);
            for (int i = m.ndim - 1; i >= 0 && ++wc[i] == m.shape[i]; i--)
                wc[i] = 0; /* the next rank */
        }
    }
}

static void expect_group(const lt_mesh *m, int d, int g, const int *want) {
    int got[8];
    lt_mesh_group(m, d, g, got);
    for (int i = 0; i < m->shape[d]; i++) {
        if (got[i] != want[i])
            fail_msg("dim %d group %d member %d: %d, wanted %d", d, g, i, got[i], want[i]);
        int pos;
        assert_int_equal(lt_mesh_group_of(m, d, want[i], &pos), g);
        assert_int_equal(pos, i);
    }
}

static void test_groups(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x3", &m));
    assert_int_equal(lt_mesh_ngroups(&m, 0), 3);
    assert_int_equal(lt_mesh_ngroups(&m, 1), 2);
    expect_group(&m, 0, 0, (int[]){0, 3});
    expect_group(&m, 0, 1, (int[]){1, 4});
    expect_group(&m, 0, 2, (int[]){2, 5});
    expect_group(&m, 1, 0, (int[]){0, 1, 2});
    expect_group(&m, 1, 1, (int[]){3, 4, 5});
    LT_CHECK(lt_mesh_parse("2x2x2", &m));
    expect_group(&m, 0, 0, (int[]){0, 4});
    expect_group(&m, 0, 3, (int[]){3, 7});
    expect_group(&m, 1, 0, (int[]){0, 2});
    expect_group(&m, 1, 1, (int[]){1, 3});
    expect_group(&m, 1, 2, (int[]){4, 6});
    expect_group(&m, 2, 0, (int[]){0, 1});
    expect_group(&m, 2, 3, (int[]){6, 7});
    LT_CHECK(lt_mesh_parse("4", &m));
    expect_group(&m, 0, 0, (int[]){0, 1, 2, 3});
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_shapes),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_coordinates),
        cmocka_unit_test(test_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
