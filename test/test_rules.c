/* test/test_rules.c — the sharding-rule validator (every op, every input
 * placement combination on meshes 2, 3, 4 and 2x2 — with non-chunk splits
 * on mesh dim 1, nested under mesh dim 0 or not —, even and uneven shapes)
 * must report zero wrong rules, zero unexpected errors and no combination
 * left unsupported; plus hand-checked propagation decisions (the expected
 * layouts are worked out by hand from the semantics, not read from the code). LT_QUICK_RULES=1 runs
 * the smaller sweep (used under sanitizers / valgrind). */
#include <stdlib.h>
#include <string.h>

#include "localtensor/ops.h"
#include "localtensor/ops/ops_impl.h"
#include "test/testutil.h"
#include "localtensor/validate.h"

static void print_report(const lt_validate_report *r) {
    printf("rule validator: %d cases: %d ok, %d wrong, %d missing, %d errors, %d invalid inputs\n",
           r->cases, r->ok, r->wrong, r->missing, r->errors, r->invalid);
    for (int op = 0; op < LT_OP_COUNT; op++) {
        const lt_validate_op_result *p = &r->per_op[op];
        if (!p->cases) continue;
        printf("  %-15s %6d cases %6d ok %4d wrong %5d missing %4d errors %5d invalid\n",
               lt_op_name((lt_op_kind)op), p->cases, p->ok, p->wrong, p->missing, p->errors,
               p->invalid);
    }
    if (r->first_wrong[0]) printf("first wrong: %s\n", r->first_wrong);
    if (r->first_error[0]) printf("first error: %s\n", r->first_error);
}

static void test_validator(void **state) {
    (void)state;
    lt_validate_opts o;
    memset(&o, 0, sizeof o);
    /* the smaller sweep under sanitizers and valgrind (or LT_QUICK_RULES=1) */
    const char *q = getenv("LT_QUICK_RULES"), *pre = getenv("LD_PRELOAD");
    o.quick = (q && q[0] == '1') || (pre && strstr(pre, "vgpreload"));
#if defined(__SANITIZE_ADDRESS__)
    o.quick = 1;
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
    o.quick = 1;
#endif
#endif
    o.log = stdout;
    /* both rule sets (localtensor/ops.h): every choice of each must be right */
    for (int rs = LT_OP_RULES_PYTORCH; rs <= LT_OP_RULES_MIN_COMM; rs++) {
        lt_op_rules_select((lt_op_rules)rs);
        printf("rule set %s:\n", lt_op_rules_name((lt_op_rules)rs));
        lt_validate_report r;
        LT_CHECK(lt_rules_validate(&o, &r));
        print_report(&r);
        assert_int_equal(r.wrong, 0);
        assert_int_equal(r.errors, 0);
        assert_int_equal(r.missing, 0); /* every layout combination has a rule (nested too) */
        /* every op was exercised, and most combinations are supported */
        for (int op = 0; op < LT_OP_COUNT; op++) {
            const char *name = lt_op_name((lt_op_kind)op);
            if (!r.per_op[op].cases) fail_msg("op %s was not validated", name);
            if (r.per_op[op].ok == 0) fail_msg("op %s never succeeded", name);
        }
        assert_true(r.ok > 10 * (r.missing + 1));
    }
    lt_op_rules_select(LT_OP_RULES_DEFAULT);
}

/* ---- hand-checked decisions ------------------------------------------------------------ */

static lt_mesh mesh1(int n) {
    lt_mesh m;
    if (lt_mesh_init(&m, 1, &n, NULL)) fail_msg("mesh: %s", lt_errmsg());
    return m;
}

static lt_op_plan *plan2(lt_op_kind op, const lt_mesh *m, int na, const int64_t *sa, const char *pa,
                         int nb, const int64_t *sb, const char *pb, const lt_op_args *args) {
    lt_placement a[LT_MESH_MAX_DIMS], b[LT_MESH_MAX_DIMS];
    int n;
    LT_CHECK(lt_placements_parse(pa, a, LT_MESH_MAX_DIMS, &n));
    if (pb) LT_CHECK(lt_placements_parse(pb, b, LT_MESH_MAX_DIMS, &n));
    lt_spec s[2];
    const lt_spec *in[2] = {&s[0], &s[1]};
    LT_CHECK(lt_spec_init(m, LT_F32, na, sa, a, m->ndim, &s[0]));
    if (pb) LT_CHECK(lt_spec_init(m, LT_F32, nb, sb, b, m->ndim, &s[1]));
    static const lt_op_args zero;
    lt_op_plan *p = NULL;
    LT_CHECK(lt_op_propagate(op, in, pb ? 2 : 1, args ? args : &zero, &p));
    return p;
}

static void expect_pl(const lt_placement *pl, int n, const char *want, const char *what) {
    char buf[256];
    lt_placements_format(pl, n, buf, sizeof buf);
    if (strcmp(buf, want)) fail_msg("%s: got %s, wanted %s", what, buf, want);
}

/* test_decisions checks the min-comm rule set's choices (localtensor/ops.h;
 * it runs between lt_test_min_comm_setup and its teardown); PyTorch's are
 * checked against its recorded choices by test/test_golden.c. */
static void test_decisions(void **state) {
    (void)state;
    lt_mesh m2 = mesh1(2), m4 = mesh1(4);
    int64_t s53[2] = {5, 3}, s34[2] = {3, 4}, s3[1] = {3};
    /* matmul S(1) x S(0) -> P(sum), no redistribute */
    lt_op_plan *p = plan2(LT_OP_MM, &m2, 2, s53, "S(1)", 2, s34, "S(0)", NULL);
    expect_pl(p->out_pl, 1, "[P(sum)]", "mm S(1) x S(0)");
    assert_int_equal(p->in_redistribute[0] + p->in_redistribute[1], 0);
    lt_op_plan_free(p);
    /* matmul S(0) x R -> S(0); R x S(1) -> S(1) */
    p = plan2(LT_OP_MM, &m2, 2, s53, "S(0)", 2, s34, "R", NULL);
    expect_pl(p->out_pl, 1, "[S(0)]", "mm S(0) x R");
    lt_op_plan_free(p);
    /* uneven rules must agree on the contraction: balanced vs chunk -> redistributed */
    p = plan2(LT_OP_MM, &m2, 2, s53, "S(1)", 2, s34, "S(0,balanced)", NULL);
    expect_pl(p->out_pl, 1, "[P(sum)]", "mm S(1) x S(0,balanced)");
    expect_pl(p->in_target[1], 1, "[S(0)]", "mm target of b");
    lt_op_plan_free(p);
    /* sum over a sharded dim -> P(sum); mean too (global divisor) */
    lt_op_args ra;
    memset(&ra, 0, sizeof ra);
    ra.ndims = 1, ra.dims[0] = 0;
    p = plan2(LT_OP_MEAN, &m4, 2, s53, "S(0)", 0, NULL, NULL, &ra);
    expect_pl(p->out_pl, 1, "[P(sum)]", "mean over S(0)");
    assert_true(lt__op_plan_x_of(p)->mean_div == 5.0);
    lt_op_plan_free(p);
    /* add of two P(sum) stays P(sum); P(sum) + R partitions R; P(max) + R stays P(max) */
    p = plan2(LT_OP_ADD, &m2, 2, s53, "P(sum)", 2, s53, "P(sum)", NULL);
    expect_pl(p->out_pl, 1, "[P(sum)]", "P(sum) + P(sum)");
    lt_op_plan_free(p);
    p = plan2(LT_OP_ADD, &m2, 2, s53, "P(sum)", 1, s3, "R", NULL);
    expect_pl(p->out_pl, 1, "[P(sum)]", "P(sum) + R");
    expect_pl(p->in_target[1], 1, "[P(sum)]", "partitioned R");
    lt_op_plan_free(p);
    p = plan2(LT_OP_ADD, &m2, 2, s53, "P(max)", 2, s53, "P(max)", NULL);
    expect_pl(p->out_pl, 1, "[P(max)]", "P(max) + P(max): one side reduced");
    assert_int_equal(p->in_redistribute[1], 1);
    lt_op_plan_free(p);
    /* elementwise on different uneven rules: never combined silently */
    p = plan2(LT_OP_MUL, &m4, 2, s53, "S(0)", 2, s53, "S(0,balanced)", NULL);
    expect_pl(p->out_pl, 1, "[S(0)]", "S(0) * S(0,balanced)");
    expect_pl(p->in_target[1], 1, "[S(0)]", "balanced operand redistributed");
    lt_op_plan_free(p);
    lt_op_cache_clear();
}

/* The min-comm choices of views, squeeze and a split that cannot nest. */
static void test_decisions_views(void **state) {
    (void)state;
    lt_mesh m2 = mesh1(2), m4 = mesh1(4);
    int64_t s128[2] = {12, 8}, s64[2] = {6, 4};
    lt_op_plan *p;
    /* PyTorch #179502: (12, 8) S(1) viewed as (16, 6) must be redistributed */
    lt_op_args va;
    memset(&va, 0, sizeof va);
    va.shape_ndim = 2, va.shape[0] = 16, va.shape[1] = 6;
    p = plan2(LT_OP_VIEW, &m4, 2, s128, "S(1)", 0, NULL, NULL, &va);
    expect_pl(p->out_pl, 1, "[R]", "view (12,8) S(1) -> (16,6)");
    lt_op_plan_free(p);
    /* (12, 8) S(0) over 4 -> (16, 6): rows of 3*8 = 24 = 4 rows of 6: lines up */
    p = plan2(LT_OP_VIEW, &m4, 2, s128, "S(0)", 0, NULL, NULL, &va);
    expect_pl(p->out_pl, 1, "[S(0)]", "view (12,8) S(0) -> (16,6)");
    lt_op_plan_free(p);
    /* (6, 4) S(0) over 4 -> (24): chunks 2,2,2,0 rows -> 8,8,8,0 elements (explicit) */
    va.shape_ndim = 1, va.shape[0] = 24;
    p = plan2(LT_OP_RESHAPE, &m4, 2, s64, "S(0)", 0, NULL, NULL, &va);
    expect_pl(p->out_pl, 1, "[S(0,[8,8,8,0])]", "flatten of uneven rows");
    lt_op_plan_free(p);
    /* (6, 4) S(0) over 4 -> (4, 6): rank 0 holds rows 0-1 = 8 elements, not whole rows of 6 */
    va.shape_ndim = 2, va.shape[0] = 4, va.shape[1] = 6;
    p = plan2(LT_OP_RESHAPE, &m4, 2, s64, "S(0)", 0, NULL, NULL, &va);
    expect_pl(p->out_pl, 1, "[R]", "(6,4) S(0) -> (4,6)");
    lt_op_plan_free(p);
    /* squeeze: dim 0 named (size 2: stays) and no dim (every size-1 dim goes)
     * are different calls, never one cache entry */
    int64_t s2131[4] = {2, 1, 3, 1};
    lt_op_args sq;
    memset(&sq, 0, sizeof sq);
    sq.dim_set = 1;
    p = plan2(LT_OP_SQUEEZE, &m2, 4, s2131, "S(0)", 0, NULL, NULL, &sq);
    assert_int_equal(p->out_ndim, 4);
    lt_op_plan_free(p);
    sq.dim_set = 0;
    p = plan2(LT_OP_SQUEEZE, &m2, 4, s2131, "S(0)", 0, NULL, NULL, &sq);
    assert_int_equal(p->out_ndim, 2);
    assert_true(p->out_shape[0][0] == 2 && p->out_shape[0][1] == 3);
    expect_pl(p->out_pl, 1, "[S(0)]", "(2,1,3,1) S(0) squeeze()");
    lt_op_plan_free(p);
    /* a split that cannot nest: [R, S(0,[8,4])] + [S(0), R] of (12) on 2x2.
     * Following both leads would give [S(0), S(0,[8,4])] (8 + 4 rows inside
     * pieces of 6); the [R, S(0,[8,4])] operand is treated as Replicate on
     * mesh dim 1 instead, so both follow S(0) on mesh dim 0 and nothing is
     * sharded on mesh dim 1. */
    lt_mesh m22;
    int s22[2] = {2, 2};
    LT_CHECK(lt_mesh_init(&m22, 2, s22, NULL));
    int64_t s12[1] = {12};
    p = plan2(LT_OP_ADD, &m22, 1, s12, "R,S(0,[8,4])", 1, s12, "S(0),R", NULL);
    expect_pl(p->out_pl, 2, "[S(0), R]", "[R, S(0,[8,4])] + [S(0), R]");
    expect_pl(p->in_target[0], 2, "[S(0), R]", "target of the nested operand");
    assert_int_equal(p->in_redistribute[1], 0);
    lt_op_plan_free(p);
    lt_op_cache_clear();
}

static void test_cache(void **state) {
    (void)state;
    lt_op_cache_clear();
    lt_mesh m = mesh1(2);
    int64_t s[2] = {4, 4};
    lt_tensor *full = NULL;
    LT_CHECK(lt_tensor_new(LT_F32, 2, s, &full));
    LT_CHECK(lt_arange_fill(full));
    lt_placement pl = lt_shard(0);
    lt_dtensor *x = NULL, *y = NULL, *z = NULL;
    LT_CHECK(lt_distribute(&m, full, &pl, 1, &x));
    lt_op_args a;
    memset(&a, 0, sizeof a);
    a.scalar = 2;
    const lt_dtensor *in[1] = {x};
    LT_CHECK(lt_op(LT_OP_MUL_SCALAR, in, 1, &a, NULL, &y, 1, NULL));
    a.scalar = -3; /* another scalar: same cache entry */
    LT_CHECK(lt_op(LT_OP_MUL_SCALAR, in, 1, &a, NULL, &z, 1, NULL));
    size_t hits, misses, entries;
    lt_op_cache_stats(&hits, &misses, &entries);
    assert_int_equal(misses, 1);
    assert_int_equal(hits, 1);
    assert_int_equal(entries, 1);
    assert_true(lt_get_flat(lt_to_local(z, 1), 0) == -24.0);
    /* propagation on the DTensor's spec finds the plan lt_op cached */
    const lt_spec *sp[2] = {lt_dtensor_spec(x), NULL};
    lt_op_plan *p = NULL;
    LT_CHECK(lt_op_propagate(LT_OP_MUL_SCALAR, sp, 1, &a, &p));
    lt_op_cache_stats(&hits, &misses, &entries);
    assert_int_equal(hits, 2);
    assert_int_equal(entries, 1);
    expect_pl(p->out_pl, 1, "[S(0)]", "mul_scalar of S(0)");
    lt_op_plan_free(p);
    /* inputs on meshes of another shape, NULL inputs, rand without a mesh: lt_op's errors */
    lt_mesh m4 = mesh1(4);
    lt_spec s4;
    LT_CHECK(lt_spec_init(&m4, LT_F32, 2, s, &pl, 1, &s4));
    sp[1] = &s4;
    LT_EXPECT_STATUS(lt_op_propagate(LT_OP_ADD, sp, 2, NULL, &p), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "add: input 1 lives on another mesh"));
    assert_null(p);
    sp[1] = NULL;
    LT_EXPECT_STATUS(lt_op_propagate(LT_OP_ADD, sp, 2, NULL, &p), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "add: input 1 is NULL"));
    LT_EXPECT_STATUS(lt_op_propagate(LT_OP_RAND, NULL, 0, NULL, &p), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "rand: args->mesh is NULL"));
    lt_dtensor_free(x);
    lt_dtensor_free(y);
    lt_dtensor_free(z);
    lt_tensor_free(full);
    lt_op_cache_clear();
}

static lt_mesh mesh_of(int nd, int *shape) {
    lt_mesh m;
    if (lt_mesh_init(&m, nd, shape, NULL)) fail_msg("mesh: %s", lt_errmsg());
    return m;
}

/* The pytorch rule set on cases worked out from PyTorch 2.15's rules
 * (docs/SEMANTICS.md §11.9), each also a case PyTorch recorded in
 * test/golden/ops.json (the op case named). */
static void test_pytorch_decisions(void **state) {
    (void)state;
    lt_op_rules_select(LT_OP_RULES_PYTORCH);
    int n2[1] = {2}, n22[2] = {2, 2}, n222[3] = {2, 2, 2};
    lt_mesh m2 = mesh_of(1, n2), m22 = mesh_of(2, n22), m222 = mesh_of(3, n222);
    int64_t s65[2] = {6, 5}, s34[2] = {3, 4}, s14[2] = {1, 4}, s24[2] = {2, 4};
    int64_t s416[3] = {4, 1, 6}, s61[2] = {6, 1};
    lt_op_args a;
    memset(&a, 0, sizeof a);
    a.dim = 0, a.dim_set = 1, a.dim2 = 1, a.flatten_end_set = 1;
    /* case 2005: flatten of a later dim's shard is a _StridedShard, sf = 6 rows */
    lt_op_plan *p = plan2(LT_OP_FLATTEN, &m2, 2, s65, "S(1)", 0, NULL, NULL, &a);
    expect_pl(p->out_pl, 1, "[SS(0,6)]", "flatten (6,5) S(1)");
    assert_int_equal(p->in_redistribute[0], 0);
    assert_string_equal(p->pytorch_refuses, "");
    lt_op_plan_free(p);
    /* dim 0 of 3 rows over 2 ranks, not the run's last: PyTorch refuses; noted */
    p = plan2(LT_OP_FLATTEN, &m2, 2, s34, "S(0)", 0, NULL, NULL, &a);
    assert_non_null(strstr(p->pytorch_refuses, "PyTorch 2.15 refuses this: flatten: cannot "
                                               "flatten an unevenly sharded dim: dim 0"));
    lt_op_plan_free(p);
    /* squeeze of a sharded size-1 dim: PyTorch refuses; noted */
    lt_op_args q;
    memset(&q, 0, sizeof q);
    q.dim = 0, q.dim_set = 1;
    p = plan2(LT_OP_SQUEEZE, &m2, 2, s14, "S(0)", 0, NULL, NULL, &q);
    assert_non_null(strstr(p->pytorch_refuses, "removes dim 0, sharded on mesh dim 0"));
    lt_op_plan_free(p);
    /* case 2771: x + s of [P(min), S(1), R]: the reduce-scatter after R -> S(1) on
     * mesh dim 2 moves half the bytes, so PyTorch shards the replicated mesh dim */
    memset(&q, 0, sizeof q);
    q.scalar = 0.5;
    p = plan2(LT_OP_ADD_SCALAR, &m222, 2, s24, "P(min),S(1),R", 0, NULL, NULL, &q);
    expect_pl(p->out_pl, 3, "[S(0), S(1), S(1)]", "x + s of [P(min), S(1), R]");
    lt_op_plan_free(p);
    /* case 1541: matmul of 3-d x 2-d folds the rows: [S(0), P(avg)] kept, b gathered */
    p = plan2(LT_OP_MATMUL, &m22, 3, s416, "S(0),P(avg)", 2, s61, "S(0),S(0)", NULL);
    expect_pl(p->out_pl, 2, "[S(0), P(avg)]", "matmul (4,1,6) x (6,1)");
    assert_int_equal(p->in_redistribute[0], 0);
    expect_pl(p->in_target[1], 2, "[R, R]", "matmul target of b");
    lt_op_plan_free(p);
    /* min-comm notes nothing */
    lt_op_rules_select(LT_OP_RULES_MIN_COMM);
    p = plan2(LT_OP_SQUEEZE, &m2, 2, s14, "S(0)", 0, NULL, NULL, &q);
    assert_string_equal(p->pytorch_refuses, "");
    lt_op_plan_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pytorch_decisions, NULL, lt_test_rules_teardown),
        cmocka_unit_test_setup_teardown(test_decisions, lt_test_min_comm_setup,
                                        lt_test_rules_teardown),
        cmocka_unit_test_setup_teardown(test_decisions_views, lt_test_min_comm_setup,
                                        lt_test_rules_teardown),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_validator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
