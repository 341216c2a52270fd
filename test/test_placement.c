/* test/test_placement.c — placement spellings, list checks (docs/SEMANTICS.md §1, §10),
 * split rules (docs/SEMANTICS.md §2, §11.1) and the middle-era explicit order (§6). */
#include <stdint.h>
#include <string.h>

#include "localtensor/localtensor.h"
#include "test/testutil.h"

static void expect_fmt(const char *in, const char *want) {
    lt_placement p;
    char buf[256];
    LT_CHECK(lt_placement_parse(in, &p));
    lt_placement_format(&p, buf, sizeof buf);
    if (strcmp(buf, want)) fail_msg("'%s' formats as '%s', wanted '%s'", in, buf, want);
}

static void test_spellings(void **state) {
    (void)state;
    expect_fmt("R", "R");
    expect_fmt("Replicate()", "R");
    expect_fmt("S(0)", "S(0)");
    expect_fmt("S(-1)", "S(-1)");
    expect_fmt("Shard(0)", "S(0)");
    expect_fmt("Shard(dim=1)", "S(1)");
    expect_fmt(" S( 0 , balanced ) ", "S(0,balanced)");
    expect_fmt("S(0,last)", "S(0,last)");
    expect_fmt("S(0,chunk)", "S(0)");
    expect_fmt("S(0,[3,1,0,2])", "S(0,[3,1,0,2])");
    expect_fmt("S(0, [3, 1, 0, 2])", "S(0,[3,1,0,2])");
    expect_fmt("SS(0,2)", "SS(0,2)");
    expect_fmt("_StridedShard(0, split_factor=2)", "SS(0,2)");
    expect_fmt("_StridedShard(dim=0, split_factor=2)", "SS(0,2)");
    expect_fmt("P", "P(sum)");
    expect_fmt("P(sum)", "P(sum)");
    expect_fmt("P(avg)", "P(avg)");
    expect_fmt("P(max)", "P(max)");
    expect_fmt("P(min)", "P(min)");
    expect_fmt("P(product)", "P(product)");
    expect_fmt("P(prod)", "P(product)");
    expect_fmt("Partial()", "P(sum)");
    expect_fmt("Partial(\"max\")", "P(max)");
    expect_fmt("Partial('avg')", "P(avg)");
    expect_fmt("Partial(reduce_op=\"min\")", "P(min)");
    /* what PyTorch prints: str() and repr() of each placement class
     * (placement_types.py __str__ / __repr__) */
    expect_fmt("Shard(dim=0)", "S(0)");                    /* Shard repr */
    expect_fmt("S(0)", "S(0)");                            /* Shard str */
    expect_fmt("_StridedShard(dim=0, sf=2)", "SS(0,2)");   /* _StridedShard repr */
    expect_fmt("_S(0, 2)", "SS(0,2)");                     /* _StridedShard str */
    expect_fmt("_StridedShard(dim=1, sf=3)", "SS(1,3)");
    expect_fmt("_S(-1, 4)", "SS(-1,4)");
    expect_fmt("Replicate()", "R");                        /* Replicate repr */
    expect_fmt("R", "R");                                  /* Replicate str */
    expect_fmt("Partial(sum)", "P(sum)");                  /* Partial repr */
    expect_fmt("Partial(max)", "P(max)");
    expect_fmt("Partial('avg')", "P(avg)");                /* newer repr quotes the op */
    expect_fmt("P(min)", "P(min)");                        /* Partial str (newer) */
    expect_fmt("P", "P(sum)");                             /* Partial str (older) */
    expect_fmt("_Partial(sum)", "P(sum)");                 /* the old class name */
}

/* Unknown names, arguments and rules name the closest known spelling. */
static void expect_hint(const char *in, const char *want) {
    lt_placement p;
    LT_EXPECT_STATUS(lt_placement_parse(in, &p), LT_INVALID);
    if (!strstr(lt_errmsg(), want))
        fail_msg("'%s': message '%s' lacks \"%s\"", in, lt_errmsg(), want);
}

static void test_suggestions(void **state) {
    (void)state;
    expect_hint("Shad(0)", "did you mean 'Shard'?");
    expect_hint("shard(dim=0)", "did you mean 'Shard'?");
    expect_hint("Replicat()", "did you mean 'Replicate'?");
    expect_hint("Partal(sum)", "did you mean 'Partial'?");
    expect_hint("_StridedShrd(dim=0, sf=2)", "did you mean '_StridedShard'?");
    expect_hint("ss(0,2)", "did you mean 'SS'?");
    expect_hint("Shard(dm=0)", "unknown argument 'dm' (did you mean 'dim'?)");
    expect_hint("_StridedShard(dim=0, sff=2)", "did you mean 'sf'?");
    expect_hint("_StridedShard(dim=0, split_fator=2)", "did you mean 'split_factor'?");
    expect_hint("Partial(reduceop=sum)", "did you mean 'reduce_op'?");
    expect_hint("S(0,balance)", "did you mean 'balanced'?");
    /* nothing close: no guess, but the known spellings are listed */
    lt_placement p;
    LT_EXPECT_STATUS(lt_placement_parse("X(0)", &p), LT_INVALID);
    assert_null(strstr(lt_errmsg(), "did you mean"));
    assert_non_null(strstr(lt_errmsg(), "expected R, S(d), SS(d,k) or P(op)"));
    LT_EXPECT_STATUS(lt_placement_parse("Banana(0)", &p), LT_INVALID);
    assert_null(strstr(lt_errmsg(), "did you mean"));
}

static void test_bad_spellings(void **state) {
    (void)state;
    const char *bad[] = {"", "X", "S", "S()", "S(a)", "SS(0)", "SS(0,0)", "SS(0,-1)", "P(foo)",
                         "S(0,weird)", "S(0,[1,-1])", "R(1)", "S(0", "S(0))", "Shard(dim=0, dim=1)",
                         "Partial(1,2)", "S(0,[1,2", "S(0,[])", "S(99999999999)", "P(\"sum)",
                         /* a size past 64 bits must not be clamped to INT64_MAX */
                         "S(0,[99999999999999999999,0])", "SS(0,2000000)"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lt_placement p;
        lt_status st = lt_placement_parse(bad[i], &p);
        if (st != LT_INVALID) fail_msg("'%s' parsed (status %s)", bad[i], lt_status_name(st));
        if (!strstr(lt_errmsg(), "placement"))
            fail_msg("'%s': message '%s' does not name the placement", bad[i], lt_errmsg());
    }
    lt_placement p;
    LT_EXPECT_STATUS(lt_placement_parse("S(0,[99999999999999999999,0])", &p), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "'99999999999999999999' overflows"));
    LT_EXPECT_STATUS(lt_placement_parse("SS(0,2147483647)", &p), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "out of range"));
}

static void test_lists(void **state) {
    (void)state;
    lt_placement pl[8];
    int n;
    char buf[256];
    LT_CHECK(lt_placements_parse("SS(0,2),S(0)", pl, 8, &n));
    assert_int_equal(n, 2);
    lt_placements_format(pl, n, buf, sizeof buf);
    assert_string_equal(buf, "[SS(0,2), S(0)]");
    LT_CHECK(lt_placements_parse("[R, S(0,[3,1])]", pl, 8, &n));
    assert_int_equal(n, 2);
    assert_int_equal(pl[1].rule.kind, LT_SPLIT_EXPLICIT);
    assert_int_equal(pl[1].rule.nsizes, 2);
    LT_CHECK(lt_placements_parse("Shard(dim=0), _StridedShard(1, split_factor=2), Partial(\"max\")",
                                 pl, 8, &n));
    assert_int_equal(n, 3);
    /* a Python tuple or list as PyTorch prints a DTensor's placements */
    LT_CHECK(lt_placements_parse("(Shard(dim=0), Replicate())", pl, 8, &n));
    assert_int_equal(n, 2);
    lt_placements_format(pl, n, buf, sizeof buf);
    assert_string_equal(buf, "[S(0), R]");
    LT_CHECK(lt_placements_parse(" (_StridedShard(dim=0, sf=2), Shard(dim=0)) ", pl, 8, &n));
    lt_placements_format(pl, n, buf, sizeof buf);
    assert_string_equal(buf, "[SS(0,2), S(0)]");
    LT_CHECK(lt_placements_parse("(_S(0, 2), S(0), P(sum))", pl, 8, &n));
    lt_placements_format(pl, n, buf, sizeof buf);
    assert_string_equal(buf, "[SS(0,2), S(0), P(sum)]");
    LT_CHECK(lt_placements_parse("(Shard(dim=0),)", pl, 8, &n));   /* a one-entry tuple */
    assert_int_equal(n, 1);
    assert_int_equal(pl[0].kind, LT_PL_SHARD);
    LT_CHECK(lt_placements_parse("[Replicate(), Partial(sum),]", pl, 8, &n));
    assert_int_equal(n, 2);
    /* a trailing comma only closes a wrapped list; brackets must match */
    LT_EXPECT_STATUS(lt_placements_parse("S(0),", pl, 8, &n), LT_INVALID);
    LT_EXPECT_STATUS(lt_placements_parse("(,)", pl, 8, &n), LT_INVALID);
    LT_EXPECT_STATUS(lt_placements_parse("(S(0)), (R)", pl, 8, &n), LT_INVALID);
    LT_EXPECT_STATUS(lt_placements_parse("R,,R", pl, 8, &n), LT_INVALID);
    LT_EXPECT_STATUS(lt_placements_parse("R,R,R", pl, 2, &n), LT_INVALID);
    LT_EXPECT_STATUS(lt_placements_parse("", pl, 8, &n), LT_INVALID);
}

static void test_check(void **state) {
    (void)state;
    lt_mesh m2, m22;
    lt_placement pl[4], out[4];
    int n;
    LT_CHECK(lt_mesh_parse("2", &m2));
    LT_CHECK(lt_mesh_parse("2x2", &m22));
    /* count */
    LT_CHECK(lt_placements_parse("R", pl, 4, &n));
    LT_EXPECT_STATUS(lt_placements_check(&m22, 1, pl, n, out), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "1 placement for a mesh of 2 dims"));
    LT_CHECK(lt_placements_parse("R,R", pl, 4, &n));
    LT_EXPECT_STATUS(lt_placements_check(&m2, 1, pl, n, out), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "2 placements for a mesh of 1 dim (need"));
    /* negative dims normalize; d < -ndim and d == ndim are rejected */
    LT_CHECK(lt_placements_parse("S(-1)", pl, 4, &n));
    LT_CHECK(lt_placements_check(&m2, 2, pl, n, out));
    assert_int_equal(out[0].dim, 1);
    LT_CHECK(lt_placements_parse("S(-3)", pl, 4, &n));
    LT_EXPECT_STATUS(lt_placements_check(&m2, 2, pl, n, out), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "out of range"));
    LT_CHECK(lt_placements_parse("S(2)", pl, 4, &n));
    LT_EXPECT_STATUS(lt_placements_check(&m2, 2, pl, n, out), LT_INVALID);
    LT_CHECK(lt_placements_parse("SS(2,2)", pl, 4, &n));
    LT_EXPECT_STATUS(lt_placements_check(&m2, 2, pl, n, out), LT_INVALID);
    /* values not made by a constructor or the parser */
    memset(pl, 0xA5, sizeof pl);
    pl[0] = lt_shard(0);
    LT_EXPECT_STATUS(lt_placements_check(&m22, 1, pl, 2, out), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "mesh dim 1: not a placement"));
    pl[1] = lt_partial(LT_REDOP_SUM);
    pl[1].op = (lt_redop)99;
    LT_EXPECT_STATUS(lt_placements_check(&m22, 1, pl, 2, out), LT_INVALID);
    pl[1] = lt_shard(0);
    pl[1].rule.kind = LT_SPLIT_EXPLICIT;
    pl[1].rule.nsizes = -1;
    LT_EXPECT_STATUS(lt_placements_check(&m22, 1, pl, 2, out), LT_INVALID);
    pl[1].rule.nsizes = 2;   /* sizes without a list */
    LT_EXPECT_STATUS(lt_placements_check(&m22, 1, pl, 2, out), LT_INVALID);
    /* 0-d */
    LT_CHECK(lt_placements_parse("S(0)", pl, 4, &n));
    LT_EXPECT_STATUS(lt_placements_check(&m2, 0, pl, n, out), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "0-d"));
    /* mixed partials: only sum+avg */
    LT_CHECK(lt_placements_parse("P(sum),P(avg)", pl, 4, &n));
    LT_CHECK(lt_placements_check(&m22, 1, pl, n, out));
    LT_CHECK(lt_placements_parse("P(sum),P(max)", pl, 4, &n));
    LT_EXPECT_STATUS(lt_placements_check(&m22, 1, pl, n, out), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "mixed"));
    LT_CHECK(lt_placements_parse("P(min),P(min)", pl, 4, &n));
    LT_CHECK(lt_placements_check(&m22, 1, pl, n, out));
    /* explicit sizes must have one entry per rank of the mesh dim */
    LT_CHECK(lt_placements_parse("S(0,[1,2,3])", pl, 4, &n));
    LT_EXPECT_STATUS(lt_placements_check(&m2, 1, pl, n, out), LT_INVALID);
}

static void expect_sizes(lt_split_kind kind, int64_t n, int k, const int64_t *want) {
    lt_split_rule r = lt_split_chunk();
    r.kind = kind;
    int64_t got[16];
    LT_CHECK(lt_split_sizes(&r, n, k, got));
    for (int j = 0; j < k; j++)
        if (got[j] != want[j])
            fail_msg("%s %lld/%d: piece %d is %lld, wanted %lld", lt_split_kind_name(kind),
                     (long long)n, k, j, (long long)got[j], (long long)want[j]);
}

static void test_split_rules(void **state) {
    (void)state;
    /* docs/SEMANTICS.md §2 */
    expect_sizes(LT_SPLIT_CHUNK, 5, 4, (int64_t[]){2, 2, 1, 0});
    expect_sizes(LT_SPLIT_CHUNK, 9, 4, (int64_t[]){3, 3, 3, 0});
    expect_sizes(LT_SPLIT_CHUNK, 10, 4, (int64_t[]){3, 3, 3, 1});
    expect_sizes(LT_SPLIT_CHUNK, 13, 4, (int64_t[]){4, 4, 4, 1});
    expect_sizes(LT_SPLIT_CHUNK, 0, 4, (int64_t[]){0, 0, 0, 0});
    /* docs/SEMANTICS.md §11.1 */
    expect_sizes(LT_SPLIT_CHUNK, 20, 6, (int64_t[]){4, 4, 4, 4, 4, 0});
    expect_sizes(LT_SPLIT_BALANCED, 5, 4, (int64_t[]){2, 1, 1, 1});
    expect_sizes(LT_SPLIT_BALANCED, 20, 6, (int64_t[]){4, 4, 3, 3, 3, 3});
    expect_sizes(LT_SPLIT_LAST, 5, 4, (int64_t[]){1, 1, 1, 2});
    expect_sizes(LT_SPLIT_LAST, 20, 6, (int64_t[]){3, 3, 3, 3, 3, 5});
    expect_sizes(LT_SPLIT_LAST, 10, 4, (int64_t[]){3, 3, 3, 1});
    expect_sizes(LT_SPLIT_LAST, 9, 4, (int64_t[]){2, 2, 2, 3});
    lt_split_rule r = lt_split_chunk();
    int64_t got[8];
    r.kind = LT_SPLIT_LAST;
    LT_EXPECT_STATUS(lt_split_sizes(&r, 3, 4, got), LT_INVALID);
    LT_CHECK(lt_split_explicit((int64_t[]){3, 1, 0, 2}, 4, &r));
    LT_CHECK(lt_split_sizes(&r, 6, 4, got));
    assert_int_equal(got[2], 0);
    LT_EXPECT_STATUS(lt_split_sizes(&r, 7, 4, got), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "sum to 6"));
    LT_EXPECT_STATUS(lt_split_sizes(&r, 6, 3, got), LT_INVALID);
}

/* lt_split_piece (one rank's piece without building all k sizes) must equal
 * piece j of lt_split_sizes, whose values test_split_rules checks by hand. */
static void test_split_piece(void **state) {
    (void)state;
    const lt_split_kind kinds[] = {LT_SPLIT_CHUNK, LT_SPLIT_BALANCED, LT_SPLIT_LAST};
    for (int ki = 0; ki < 3; ki++)
        for (int64_t n = 0; n <= 40; n++)
            for (int k = 1; k <= 9; k++) {
                lt_split_rule r = lt_split_chunk();
                r.kind = kinds[ki];
                int64_t sizes[16], size, off, want_off = 0;
                lt_status full = lt_split_sizes(&r, n, k, sizes);
                for (int j = 0; j < k; j++) {
                    lt_status one = lt_split_piece(&r, n, k, j, &size, &off);
                    assert_int_equal(one, full);
                    if (full) continue;
                    if (size != sizes[j] || off != want_off)
                        fail_msg("%s %lld/%d piece %d: (%lld @ %lld), wanted (%lld @ %lld)",
                                 lt_split_kind_name(r.kind), (long long)n, k, j, (long long)size,
                                 (long long)off, (long long)sizes[j], (long long)want_off);
                    want_off += sizes[j];
                }
            }
    lt_split_rule r = lt_split_chunk();
    int64_t size, off;
    LT_CHECK(lt_split_explicit((int64_t[]){3, 1, 0, 2}, 4, &r));
    LT_CHECK(lt_split_piece(&r, 6, 4, 3, &size, &off));
    assert_int_equal(size, 2);
    assert_int_equal(off, 4);
    LT_EXPECT_STATUS(lt_split_piece(&r, 7, 4, 0, &size, &off), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "sum to 6"));
    LT_EXPECT_STATUS(lt_split_piece(&r, 6, 3, 0, &size, &off), LT_INVALID);
    LT_CHECK(lt_split_explicit((int64_t[]){3, -1, 0, 2}, 4, &r));
    LT_EXPECT_STATUS(lt_split_piece(&r, 4, 4, 0, &size, &off), LT_INVALID);
    r = lt_split_chunk();
    LT_EXPECT_STATUS(lt_split_piece(&r, 5, 4, 4, &size, &off), LT_INVALID);
    LT_EXPECT_STATUS(lt_split_piece(&r, -1, 4, 0, &size, &off), LT_INVALID);
    LT_EXPECT_STATUS(lt_split_piece(&r, 5, 0, 0, &size, &off), LT_INVALID);
    r.kind = LT_SPLIT_LAST;
    LT_EXPECT_STATUS(lt_split_piece(&r, 3, 4, 0, &size, &off), LT_INVALID);
    /* large groups: the last of 65536 ranks, O(1) */
    r = lt_split_chunk();
    LT_CHECK(lt_split_piece(&r, 3, 65536, 65535, &size, &off));
    assert_int_equal(size, 0);
    assert_int_equal(off, 3);
    /* dims near INT64_MAX: 2^63 - 1 in 2 chunks is 2^62 + (2^62 - 1); in 3
     * under `last`, ceil = 3074457345618258603 for the first two and the
     * rest, 3074457345618258601, for the last (no intermediate may wrap) */
    const int64_t big = INT64_MAX, half = (int64_t)1 << 62;
    int64_t sz[3];
    LT_CHECK(lt_split_sizes(&r, big, 2, sz));
    assert_true(sz[0] == half && sz[1] == half - 1);
    LT_CHECK(lt_split_piece(&r, big, 2, 1, &size, &off));
    assert_true(size == half - 1 && off == half);
    r.kind = LT_SPLIT_LAST;
    LT_CHECK(lt_split_sizes(&r, big, 3, sz));
    assert_true(sz[0] == 3074457345618258603 && sz[1] == 3074457345618258603 &&
                sz[2] == 3074457345618258601);
    LT_CHECK(lt_split_piece(&r, big, 3, 2, &size, &off));
    assert_true(size == 3074457345618258601 && off == 6148914691236517206);
}

static void expect_order(const int *mesh, int nd, const char *pls, const int *mdims) {
    lt_placement pl[8];
    lt_order_entry out[8];
    int n, cnt;
    LT_CHECK(lt_placements_parse(pls, pl, 8, &n));
    LT_CHECK(lt_explicit_order(mesh, nd, pl, n, out, &cnt));
    assert_int_equal(cnt, nd);
    for (int i = 0; i < cnt; i++) {
        if (out[i].mesh_dim != mdims[i])
            fail_msg("%s: entry %d is mesh dim %d, wanted %d", pls, i, out[i].mesh_dim, mdims[i]);
        assert_int_equal(out[i].placement.kind, LT_PL_SHARD);
        assert_int_equal(out[i].placement.dim, 0);
    }
}

static void test_explicit_order(void **state) {
    (void)state;
    /* docs/SEMANTICS.md §6, test_explicit_order_placements */
    expect_order((int[]){2, 4}, 2, "SS(0,4),S(0)", (int[]){1, 0});
    expect_order((int[]){2, 3, 4}, 3, "S(0),SS(0,4),S(0)", (int[]){0, 2, 1});
    expect_order((int[]){2, 3, 4}, 3, "SS(0,12),SS(0,4),S(0)", (int[]){2, 1, 0});
    lt_placement pl[8];
    lt_order_entry out[8];
    int n, cnt;
    LT_CHECK(lt_placements_parse("SS(0,3),S(0)", pl, 8, &n));
    LT_EXPECT_STATUS(lt_explicit_order((int[]){2, 4}, 2, pl, n, out, &cnt), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "split_factor(3) == aggregate mesh size (4)"));
    LT_CHECK(lt_placements_parse("SS(0,2),S(0),S(0)", pl, 8, &n));
    LT_EXPECT_STATUS(lt_explicit_order((int[]){2, 2, 2}, 3, pl, n, out, &cnt), LT_UNSUPPORTED);
    assert_non_null(strstr(lt_errmsg(), "after the strided part has ended"));
    LT_CHECK(lt_placements_parse("SS(0,2),R", pl, 8, &n));
    LT_EXPECT_STATUS(lt_explicit_order((int[]){2, 2}, 2, pl, n, out, &cnt), LT_UNSUPPORTED);
    LT_CHECK(lt_placements_parse("R", pl, 8, &n));
    LT_EXPECT_STATUS(lt_explicit_order((int[]){2, 2}, 2, pl, n, out, &cnt), LT_INVALID);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spellings),   cmocka_unit_test(test_bad_spellings),
        cmocka_unit_test(test_suggestions), cmocka_unit_test(test_lists),
        cmocka_unit_test(test_check),       cmocka_unit_test(test_split_rules),
        cmocka_unit_test(test_split_piece), cmocka_unit_test(test_explicit_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
