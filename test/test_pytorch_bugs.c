/* test/test_pytorch_bugs.c — the known-PyTorch-bug table
 * (localtensor/pytorch_bugs.h): every entry's check fires on its pattern and
 * not on the cases next to it, and every entry is complete.
 *
 * Each pattern case is worked out by hand in its comment from the chunk rule
 * (docs/SEMANTICS.md §2) and the strided rule (§4); the golden replay
 * (test_golden) also holds the uneven_strided check to what PyTorch 2.15
 * did on every recorded _StridedShard layout. */
#include <string.h>

#include "localtensor/pytorch_bugs.h"
#include "test/testutil.h"

static lt_spec spec(const lt_mesh *m, int ndim, const int64_t *shape, const char *pls) {
    lt_placement pl[LT_MESH_MAX_DIMS];
    int n = 0;
    LT_CHECK(lt_placements_parse(pls, pl, LT_MESH_MAX_DIMS, &n));
    lt_spec s;
    LT_CHECK(lt_spec_init(m, LT_F32, ndim, shape, pl, n, &s));
    return s;
}

static lt_mesh mesh(const char *s) {
    lt_mesh m;
    LT_CHECK(lt_mesh_parse(s, &m));
    return m;
}

static int fires(uint32_t hits, lt_pytorch_bug b) {
    return (int)(hits >> b & 1);
}

static void expect_layout(const char *ms, int ndim, const int64_t *shape, const char *pls,
                          lt_pytorch_bug b, int want) {
    lt_mesh m = mesh(ms);
    lt_spec s = spec(&m, ndim, shape, pls);
    if (fires(lt_pytorch_bugs_layout(&s), b) != want)
        fail_msg("%s on %s: %s %s", pls, ms, lt_pytorch_bug_get(b)->name,
                 want ? "did not fire" : "fired");
}

static void test_table_complete(void **state) {
    (void)state;
    for (int b = 0; b < LT_PYTORCH_BUG_COUNT; b++) {
        const lt_pytorch_bug_info *e = lt_pytorch_bug_get((lt_pytorch_bug)b);
        assert_non_null(e);
        if (!e->name[0] || !e->versions[0] || !strstr(e->reference, "pytorch ") || !e->pattern[0] ||
            !e->warning[0])
            fail_msg("entry %d is incomplete", b);
        char line[768];
        lt_pytorch_bug_format((lt_pytorch_bug)b, line, sizeof line);
        if (!strstr(line, e->reference) || !strstr(line, e->versions))
            fail_msg("message lacks its source: %s", line);
    }
    assert_true(LT_PYTORCH_BUG_COUNT >= 6);
    assert_null(lt_pytorch_bug_get(LT_PYTORCH_BUG_COUNT));
}

/* 3 elements, SS(0,2) on 2 ranks: pieces 2 and 1, each split in 2: rank 0
 * gets 1 + 1, rank 1 gets 1 + 0: sizes differ. 4 elements: 2 and 2. 4
 * elements with SS(0,3): pieces 2, 2, 0, each split in 2: both ranks 2. */
static void test_uneven_strided(void **state) {
    (void)state;
    const int64_t s3[] = {3}, s4[] = {4}, s24[] = {2, 4};
    lt_pytorch_bug b = LT_PYTORCH_BUG_UNEVEN_STRIDED;
    expect_layout("2", 1, s3, "SS(0,2)", b, 1);
    expect_layout("2", 1, s4, "SS(0,2)", b, 0);
    expect_layout("2", 1, s4, "SS(0,3)", b, 0);
    expect_layout("2", 1, s3, "S(0)", b, 0);
    /* after S(0) on mesh dim 0 each group splits 4 by SS(0,3) on 3 ranks: pieces
     * 2, 2, 0, each split in 3 (1, 1, 0): ranks get 2, 2 and 0 */
    const int64_t s8[] = {8};
    expect_layout("2x3", 1, s8, "S(0),SS(0,3)", b, 1);
    expect_layout("2x2", 2, s24, "S(0),SS(1,2)", b, 0); /* 4 by 2 pieces of 2: 1 + 1 each */
}

static void test_strided_redistribute(void **state) {
    (void)state;
    lt_mesh m = mesh("2");
    const int64_t s4[] = {4};
    lt_spec src = spec(&m, 1, s4, "SS(0,2)"), plain = spec(&m, 1, s4, "S(0)");
    lt_placement r = lt_replicate(), ss = lt_strided(0, 2);
    lt_pytorch_bug b = LT_PYTORCH_BUG_STRIDED_REDISTRIBUTE;
    assert_true(fires(lt_pytorch_bugs_redistribute(&src, &r), b));
    assert_true(fires(lt_pytorch_bugs_redistribute(&plain, &ss), b));
    assert_false(fires(lt_pytorch_bugs_redistribute(&src, &ss), b)); /* no change */
    assert_false(fires(lt_pytorch_bugs_redistribute(&plain, &r), b));
    lt_mesh m1 = mesh("1x2");
    lt_spec one = spec(&m1, 1, s4, "SS(0,2),S(0)");
    lt_placement d[2] = {lt_replicate(), lt_replicate()};
    d[1] = lt_shard(0);
    assert_false(fires(lt_pytorch_bugs_redistribute(&one, d), b)); /* SS on a mesh dim of size 1 */
}

/* 5 over 4: chunk 2, 2, 1, 0; balanced 2, 1, 1, 1 (differs). 5 over 2: chunk
 * and balanced both 3, 2. */
static void test_nonchunk_sizes(void **state) {
    (void)state;
    const int64_t s5[] = {5}, s4[] = {4};
    lt_pytorch_bug b = LT_PYTORCH_BUG_NONCHUNK_SIZES;
    expect_layout("4", 1, s5, "S(0,balanced)", b, 1);
    expect_layout("2", 1, s5, "S(0,balanced)", b, 0);
    expect_layout("2", 1, s4, "S(0,[3,1])", b, 1);
    expect_layout("2", 1, s4, "S(0,[2,2])", b, 0);
    expect_layout("4", 1, s5, "S(0)", b, 0);
}

static void test_empty_shard_offset(void **state) {
    (void)state;
    const int64_t s1[] = {1}, s2[] = {2}, s0[] = {0}, s13[] = {1, 3};
    lt_pytorch_bug b = LT_PYTORCH_BUG_EMPTY_SHARD_OFFSET;
    expect_layout("2", 1, s1, "S(0)", b, 1);
    expect_layout("2", 1, s2, "S(0)", b, 0);
    expect_layout("2", 1, s0, "S(0)", b, 0); /* an empty tensor: nothing to lose */
    expect_layout("2", 2, s13, "S(1)", b, 0);
    expect_layout("2", 2, s13, "S(0)", b, 1);
}

/* NO_DIM: the op names no dim (it reduces every dim). */
#define NO_DIM 99

static uint32_t op_hits(lt_op_kind op, const char *ms, int ndim, const int64_t *shape,
                        const char *pls, int dim) {
    lt_mesh m = mesh(ms);
    lt_spec s = spec(&m, ndim, shape, pls);
    const lt_spec *in[1] = {&s};
    lt_op_args a;
    memset(&a, 0, sizeof a);
    a.ndims = dim != NO_DIM;
    a.dims[0] = dim;
    return lt_pytorch_bugs_op(op, in, 1, &a);
}

/* (1, 3) with S(0) on 2: rank 1 holds (0, 3); max over dim 0 reduces its
 * empty dim; over dim 1 it does not. (3, 1): ranks hold 2 and 1 rows. */
static void test_max_empty_shard(void **state) {
    (void)state;
    const int64_t s13[] = {1, 3}, s31[] = {3, 1};
    lt_pytorch_bug b = LT_PYTORCH_BUG_MAX_EMPTY_SHARD;
    assert_true(fires(op_hits(LT_OP_AMAX, "2", 2, s13, "S(0)", 0), b));
    assert_true(fires(op_hits(LT_OP_AMIN, "2", 2, s13, "S(0)", -2), b)); /* dim -2 = 0 */
    assert_true(fires(op_hits(LT_OP_AMAX, "2", 2, s13, "S(0)", NO_DIM), b));
    assert_false(fires(op_hits(LT_OP_AMAX, "2", 2, s13, "S(0)", -1), b)); /* dim -1 = 1 */
    assert_false(fires(op_hits(LT_OP_AMAX, "2", 2, s31, "S(0)", 0), b));
    assert_false(fires(op_hits(LT_OP_SUM, "2", 2, s13, "S(0)", 0), b));
    assert_false(fires(op_hits(LT_OP_AMAX, "2", 2, s13, "R", 0), b));
}

/* 3 rows over 2 ranks (2 and 1): uneven; 4 rows: even. */
static void test_mean_uneven(void **state) {
    (void)state;
    const int64_t s34[] = {3, 4}, s44[] = {4, 4};
    lt_pytorch_bug b = LT_PYTORCH_BUG_MEAN_UNEVEN;
    assert_true(fires(op_hits(LT_OP_MEAN, "2", 2, s34, "S(0)", 0), b));
    assert_false(fires(op_hits(LT_OP_MEAN, "2", 2, s34, "S(0)", 1), b));
    assert_false(fires(op_hits(LT_OP_MEAN, "2", 2, s44, "S(0)", 0), b));
    assert_false(fires(op_hits(LT_OP_SUM, "2", 2, s34, "S(0)", 0), b));
    assert_true(fires(op_hits(LT_OP_MEAN, "2", 2, s34, "S(0)", NO_DIM), b));  /* every dim */
    assert_false(fires(op_hits(LT_OP_MEAN, "2", 2, s34, "S(1)", NO_DIM), b)); /* 4 over 2: even */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_complete),       cmocka_unit_test(test_uneven_strided),
        cmocka_unit_test(test_strided_redistribute), cmocka_unit_test(test_nonchunk_sizes),
        cmocka_unit_test(test_empty_shard_offset),   cmocka_unit_test(test_max_empty_shard),
        cmocka_unit_test(test_mean_uneven),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
