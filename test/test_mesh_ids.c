/* test/test_mesh_ids.c — meshes in any rank order, over a subset of the
 * world, flattened and sliced (collectives_sim/mesh_ids.c). Expected rank
 * ids and groups are worked out by hand from torch's DeviceMesh rules
 * (docs/SEMANTICS.md §1.1): position p of a mesh built from a rank array
 * holds the array's p-th id (row-major); mesh[dims] is the sub-mesh through
 * a rank; mesh[dims]._flatten() is one dim whose members are the product
 * of those dims in row-major order. */
#include "localtensor/collectives_sim/mesh.h"

#include <string.h>

#include "test/testutil.h"
#include "tools/scenario/scenario.h"

/* The rank ids of group g along mesh dim d, against want. */
static void expect_ids(const lt_mesh *m, int d, int g, const int *want) {
    int pos[LT_MESH_MAX_IDS];
    lt_mesh_group(m, d, g, pos);
    for (int c = 0; c < m->shape[d]; c++)
        if (lt_mesh_rank_id(m, pos[c]) != want[c])
            fail_msg("dim %d group %d member %d: rank %d, want %d", d, g, c,
                     lt_mesh_rank_id(m, pos[c]), want[c]);
}

static void test_permuted(void **state) {
    (void)state;
    lt_mesh m, n;
    char buf[128];
    /* torch: DeviceMesh("cpu", [[0, 2], [1, 3]], mesh_dim_names=("dp", "tp")) */
    LT_CHECK(lt_mesh_parse("dp=2,tp=2:[[0,2],[1,3]]", &m));
    assert_int_equal(m.permuted, 1);
    assert_int_equal(m.world, 4);
    assert_int_equal(lt_mesh_world_size(&m), 4);
    static const int id_at[4] = {0, 2, 1, 3}, pos_of[4] = {0, 2, 1, 3};
    for (int p = 0; p < 4; p++) assert_int_equal(lt_mesh_rank_id(&m, p), id_at[p]);
    for (int r = 0; r < 4; r++) assert_int_equal(lt_mesh_pos_of(&m, r), pos_of[r]);
    assert_int_equal(lt_mesh_pos_of(&m, 4), -1);
    /* dp groups: the columns {0, 1} and {2, 3}; tp groups: the rows {0, 2}, {1, 3} */
    expect_ids(&m, 0, 0, (int[]){0, 1});
    expect_ids(&m, 0, 1, (int[]){2, 3});
    expect_ids(&m, 1, 0, (int[]){0, 2});
    expect_ids(&m, 1, 1, (int[]){1, 3});
    assert_string_equal(lt_mesh_format(&m, buf, sizeof buf), "dp=2,tp=2:[[0,2],[1,3]]");
    LT_CHECK(lt_mesh_parse(buf, &n));
    assert_true(lt_mesh_equal(&m, &n));
    LT_CHECK(lt_mesh_parse("dp=2,tp=2", &n));
    assert_false(lt_mesh_equal(&m, &n)); /* same shape and names, another rank order */
    /* an array in arange order over the whole world is the plain mesh */
    LT_CHECK(lt_mesh_parse("dp=2,tp=2:[[0,1],[2,3]]", &m));
    assert_int_equal(m.permuted, 0);
    assert_true(lt_mesh_equal(&m, &n));
    LT_CHECK(lt_mesh_parse("[[3,2,1],[0,5,4]]", &m));
    assert_int_equal(m.ndim, 2);
    assert_int_equal(m.shape[1], 3);
    expect_ids(&m, 0, 2, (int[]){1, 4});
    assert_string_equal(lt_mesh_format(&m, buf, sizeof buf), "2x3:[[3,2,1],[0,5,4]]");
}

static void test_subset(void **state) {
    (void)state;
    lt_mesh m, n;
    char buf[128];
    LT_CHECK(lt_mesh_parse("[[0,2],[4,6]] of 8", &m));
    assert_int_equal(m.world, 4);
    assert_int_equal(lt_mesh_world_size(&m), 8);
    assert_int_equal(lt_mesh_pos_of(&m, 4), 2);
    assert_int_equal(lt_mesh_pos_of(&m, 1), -1); /* left out */
    assert_int_equal(lt_mesh_pos_of(&m, 7), -1);
    expect_ids(&m, 0, 1, (int[]){2, 6});
    assert_string_equal(lt_mesh_format(&m, buf, sizeof buf), "2x2:[[0,2],[4,6]] of 8");
    LT_CHECK(lt_mesh_parse(buf, &n));
    assert_true(lt_mesh_equal(&m, &n));
    /* arange ids over a larger world still leave ranks out */
    int shape = 2, ids[2] = {0, 1};
    LT_CHECK(lt_mesh_init_ranks(&m, 1, &shape, ids, 4, NULL));
    assert_int_equal(m.permuted, 1);
    LT_CHECK(lt_mesh_parse("[0,2]", &m)); /* world: the largest id + 1 */
    assert_int_equal(lt_mesh_world_size(&m), 3);
}

static void expect_error(const char *s, const char *needle) {
    lt_mesh m;
    if (lt_mesh_parse(s, &m) == LT_OK) fail_msg("'%s' parsed", s);
    if (!strstr(lt_errmsg(), needle))
        fail_msg("parse '%s': message '%s' lacks '%s'", s, lt_errmsg(), needle);
}

static void test_errors(void **state) {
    (void)state;
    expect_error("[[0,1],[1,2]]", "rank 1 appears twice");
    expect_error("[[0,1],[2]]", "rows of 2 and 1 ranks");
    expect_error("[[0,1],2]", "rows nested unevenly");
    expect_error("[0,1", "expected ',' or ']'");
    expect_error("[]", "an empty list");
    expect_error("[0,x]", "expected a rank id");
    expect_error("[0,1] of 1", "rank 1 is not in a world of 1 ranks");
    expect_error("[0,1] junk", "text after the rank array");
    expect_error("dp=2,tp=2:[0,1,2,3]", "1 dims, but the mesh names 2");
    expect_error("dp=2,tp=3:[[0,1],[2,3]]", "dim 1 has 2 ranks, the mesh says 3");
    lt_mesh m;
    int shape[2] = {2, 2}, neg[4] = {0, -1, 2, 3};
    LT_EXPECT_STATUS(lt_mesh_init_ranks(&m, 2, shape, neg, 0, NULL), LT_INVALID);
    int big[4] = {0, 1, 2, 3};
    LT_EXPECT_STATUS(lt_mesh_init_ranks(&m, 2, shape, big, 3, NULL), LT_INVALID);
}

static void test_flatten(void **state) {
    (void)state;
    lt_mesh m, f;
    char buf[128];
    LT_CHECK(lt_mesh_parse("dp=2,cp=2,tp=2", &m));
    /* adjacent dims: every position kept; dp_cp's groups hold the ranks of one tp
     * coordinate, in (dp, cp) row-major order: {0, 2, 4, 6} and {1, 3, 5, 7} */
    LT_CHECK(lt_mesh_flatten(&m, (int[]){0, 1}, 2, "dp_cp", &f));
    assert_int_equal(f.permuted, 0);
    assert_string_equal(lt_mesh_format(&f, buf, sizeof buf), "dp_cp=4,tp=2");
    expect_ids(&f, 0, 0, (int[]){0, 2, 4, 6});
    expect_ids(&f, 0, 1, (int[]){1, 3, 5, 7});
    expect_ids(&f, 1, 3, (int[]){6, 7});
    /* dims apart: (dp, tp) flattened; rank dp*4 + cp*2 + tp sits at position
     * (dp*2 + tp)*2 + cp: ids [[0,2],[1,3],[4,6],[5,7]]; groups of one cp */
    LT_CHECK(lt_mesh_flatten(&m, (int[]){0, 2}, 2, "dp_tp", &f));
    assert_int_equal(f.permuted, 1);
    assert_string_equal(lt_mesh_format(&f, buf, sizeof buf),
                        "dp_tp=4,cp=2:[[0,2],[1,3],[4,6],[5,7]]");
    expect_ids(&f, 0, 0, (int[]){0, 1, 4, 5});
    expect_ids(&f, 0, 1, (int[]){2, 3, 6, 7});
    /* on a permuted mesh the ids come along: [[0,2],[1,3]] flattened is [0,2,1,3] */
    LT_CHECK(lt_mesh_parse("dp=2,tp=2:[[0,2],[1,3]]", &m));
    LT_CHECK(lt_mesh_flatten(&m, (int[]){0, 1}, 2, "all", &f));
    expect_ids(&f, 0, 0, (int[]){0, 2, 1, 3});
    LT_EXPECT_STATUS(lt_mesh_flatten(&m, (int[]){1, 0}, 2, "x", &f), LT_INVALID);
    LT_EXPECT_STATUS(lt_mesh_flatten(&m, (int[]){0}, 1, "tp", &f), LT_INVALID); /* name in use */
}

static void test_slice(void **state) {
    (void)state;
    lt_mesh m, s;
    char buf[128];
    int dims[LT_MESH_MAX_DIMS];
    LT_CHECK(lt_mesh_parse("dp=2,tp=2:[[0,2],[1,3]]", &m));
    /* mesh["tp"] on rank 1: rank 1 is at (1, 0); its row holds 1 and 3 */
    assert_int_equal(lt_mesh_dims_parse(&m, "tp", dims), 1);
    LT_CHECK(lt_mesh_slice(&m, dims, 1, 1, &s));
    assert_string_equal(lt_mesh_format(&s, buf, sizeof buf), "tp=2:[1,3] of 4");
    /* mesh["dp"] on rank 3: rank 3 is at (1, 1); its column holds 2 and 3 */
    LT_CHECK(lt_mesh_slice(&m, (int[]){0}, 1, 3, &s));
    assert_string_equal(lt_mesh_format(&s, buf, sizeof buf), "dp=2:[2,3] of 4");
    /* mesh["dp", "tp"] is the mesh itself */
    assert_int_equal(lt_mesh_dims_parse(&m, "dp, tp", dims), 2);
    LT_CHECK(lt_mesh_slice(&m, dims, 2, 0, &s));
    assert_true(lt_mesh_equal(&m, &s));
    LT_CHECK(lt_mesh_parse("dp=2,cp=2,tp=2", &m));
    LT_CHECK(lt_mesh_slice(&m, (int[]){0, 2}, 2, 2, &s)); /* rank 2 = (0, 1, 0) */
    assert_string_equal(lt_mesh_format(&s, buf, sizeof buf), "dp=2,tp=2:[[2,3],[6,7]] of 8");
    LT_EXPECT_STATUS(lt_mesh_slice(&m, (int[]){0}, 1, 8, &s), LT_INVALID);
    assert_int_equal(lt_mesh_dims_parse(&m, "tp,dp", dims), -1);
    assert_non_null(strstr(lt_errmsg(), "mesh order"));
    assert_int_equal(lt_mesh_dims_parse(&m, "pp", dims), -1);
    assert_non_null(strstr(lt_errmsg(), "'pp' is not a dim of the mesh"));
}

/* A scenario whose mesh is `mesh` fails to load with `needle` (file:line:col first). */
static void expect_sc_error(const char *mesh, const char *needle) {
    char text[512];
    snprintf(text, sizeof text, "- name: c\n  mesh: %s\n  steps: []\n", mesh);
    lt_sc_file *f = NULL;
    LT_EXPECT_STATUS(lt_sc_load_string("m.yaml", text, strlen(text), &f), LT_INVALID);
    assert_null(f);
    if (strncmp(lt_errmsg(), "m.yaml:2:", 9) || !strstr(lt_errmsg(), needle))
        fail_msg("mesh %s: message '%s' lacks 'm.yaml:2:...%s'", mesh, lt_errmsg(), needle);
}

static void test_scenario_mesh_errors(void **state) {
    (void)state;
    expect_sc_error("{ranks: [[0, 2], [1]]}", "rows of 2 and 1 ranks");
    expect_sc_error("{ranks: [[0, 0], [1, 3]]}", "mesh rank 0 appears twice");
    expect_sc_error("{ranks: [0, 1], shape: [3]}", "the rank array's shape is not the mesh shape");
    expect_sc_error("{shape: [2], world: 4}", "world: goes with ranks");
    expect_sc_error("{ranks: [0, 1], world: 1}", "rank 1 is not in a world of 1 ranks");
    expect_sc_error("{shape: [2, 2], names: [dp, tp], flatten: {dims: [tp, dp], as: x}}",
                    "mesh dims must be distinct and in mesh order");
    expect_sc_error("{shape: [2, 2], names: [dp, tp], flatten: {dims: [pp], as: x}}",
                    "'pp' is not a dim of the mesh");
    expect_sc_error("{shape: [2, 2], names: [dp, tp], slice: {dims: [tp], rank: 9}}",
                    "rank 9 is not in the mesh");
    expect_sc_error("{names: [a]}", "give shape");
    /* rank keys are rank ids: rank 1 is not on a mesh of ranks 0, 2 */
    const char *text = "- name: c\n  mesh: {ranks: [0, 2]}\n  tensors: {x: {shape: [2]}}\n"
                       "  steps:\n    - distribute: {tensor: x, placements: [\"S(0)\"], as: d}\n"
                       "    - expect_local: {tensor: d, ranks: {1: [0]}}\n";
    lt_sc_file *f = NULL;
    LT_EXPECT_STATUS(lt_sc_load_string("m.yaml", text, strlen(text), &f), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "m.yaml:6:41: rank 1 is not on mesh 2:[0,2] of 3"));
}

/* On [[0,2],[1,3]] ranks 0 and 2 share a tp group: rank 0 sums, rank 2
 * takes the max; ranks 1 and 3 sum along tp together and finish. */
static lt_status mismatch_prog(lt_proc *p, void *user) {
    (void)user;
    int r = lt_proc_rank(p);
    lt_tensor *a = NULL, *o = NULL;
    lt_status st = lt_tensor_new(LT_F32, 1, (int64_t[]){1}, &a);
    if (st) return st;
    lt_set_flat(a, 0, r);
    st = lt_proc_all_reduce_at(p, "prog.c", 10 + r, 1, a, r == 2 ? LT_REDOP_MAX : LT_REDOP_SUM,
                               &o);
    if (!st && r == 1) st = lt_get_flat(o, 0) == 4 ? LT_OK : LT_MISMATCH;   /* 1 + 3 */
    lt_tensor_free(o);
    lt_tensor_free(a);
    return st;
}

static void test_program_hang_report(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("dp=2,tp=2:[[0,2],[1,3]]", &m));
    lt_match_report *rep = NULL;
    LT_EXPECT_STATUS(lt_program_run(&m, mismatch_prog, NULL, NULL, &rep), LT_MISMATCH);
    assert_non_null(rep);
    char text[2048];
    lt_match_report_headline(rep, text, sizeof text);
    const char *want = "would hang (mismatch): on mesh dim 1 (tp), group 0 [0,2], call #1: rank 0 "
                       "calls all_reduce(op=sum) f32 (1) at prog.c:10 but rank 2 calls "
                       "all_reduce(op=max) f32 (1) at prog.c:12";
    if (!strstr(text, want)) fail_msg("headline '%s' lacks '%s'", text, want);
    lt_match_report_free(rep);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_permuted), cmocka_unit_test(test_subset),
        cmocka_unit_test(test_errors),   cmocka_unit_test(test_flatten),
        cmocka_unit_test(test_slice),    cmocka_unit_test(test_scenario_mesh_errors),
        cmocka_unit_test(test_program_hang_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
