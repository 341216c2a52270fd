/* test/test_threads.c — results do not depend on the thread count
 * (kernels/pool.h): every collective (f32, bf16, f64 and i32 reductions
 * included), a redistribute with its verification, and ops, run with
 * lt_set_threads(1) and then with 2, 3 and 4 threads in the same process,
 * must give the same bytes on every rank; so must distribute and init, whose
 * replicas must share one buffer. The threshold under which work
 * stays inline is lowered to 8 KiB (lt__set_par_min_bytes), so that these
 * small tensors take the parallel paths: every group's reduction or copy
 * split into element ranges (the in-process engine's pieces are then 512
 * bytes); and again at 1 MiB (64 KiB pieces), where the small groups of
 * 2x2x2 run at the same time instead. Each call runs once into fresh
 * outputs (all_gather and broadcast results shared by the group) and once
 * more into those outputs, overwritten first (one buffer per rank, as in
 * steady use); shards are uneven, and reduce_scatter also runs along dim 1
 * (a piece of every row per member). The values have mixed magnitudes, so a reduction
 * that combined members in another order would round differently. The
 * one-thread results themselves are checked against the rules by
 * test_collectives, test_redistribute and test_ops. Last, a sweep file
 * (passing and failing cases) run in process (lt_sc_run_paths) must write
 * the same text report and the same --json report, times aside. */
#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/pool_impl.h"
#include "test/testutil.h"
#include "tools/scenario/scenario.h"

enum { AG, RS, AR, A2A, BC, SC, GA, RE, PE, NKIND };
static const char *const kind_names[NKIND] = {"all_gather", "reduce_scatter", "all_reduce",
                                              "all_to_all", "broadcast",      "scatter",
                                              "gather",     "reduce",         "permute"};

/* (rows, cols) of dtype dt on rank r, values of mixed magnitudes from an
 * LCG seeded by r (integers stay small so products do not only wrap) */
static lt_tensor *rank_tensor(lt_dtype dt, int64_t rows, int64_t cols, int r) {
    int64_t shape[2] = {rows, cols};
    lt_tensor *f = NULL, *t = NULL;
    LT_CHECK(lt_tensor_new(LT_F64, 2, shape, &f));
    double *v = lt_data(f);
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(r + 1);
    for (int64_t i = 0; i < rows * cols; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
        v[i] = dt == LT_I32 ? floor(u * 7) - 3 : (u - 0.5) * pow(10.0, (double)(i % 7) - 3);
    }
    LT_CHECK(lt_cast(f, dt, &t));
    lt_tensor_free(f);
    return t;
}

static void expect_same_bytes(const lt_tensor *a, const lt_tensor *b, const char *what, int rank,
                              int threads) {
    if (!a || !b) {
        if (a != b) fail_msg("%s: rank %d: output missing with %d threads", what, rank, threads);
        return;
    }
    if (a->ndim != b->ndim || lt_nbytes(a) != lt_nbytes(b))
        fail_msg("%s: rank %d: shape differs with %d threads", what, rank, threads);
    if (a->placeholder || b->placeholder || lt_nbytes(a) == 0) return;
    if (memcmp(lt_data(a), lt_data(b), lt_nbytes(a)) != 0)
        fail_msg("%s: rank %d: values differ with %d threads", what, rank, threads);
}

static int rs_dim; /* the dim reduce_scatter scatters along */

static lt_status call(int kind, lt_comm *c, int md, lt_tensor *const *in, lt_redop op,
                      const lt_split_rule *rule, const int *perm, lt_tensor **out) {
    switch (kind) {
    case AG: return lt_all_gather(c, md, in, 0, out);
    case RS: return lt_reduce_scatter(c, md, in, op, rs_dim, rule, out);
    case AR: return lt_all_reduce(c, md, in, op, out);
    case A2A: return lt_all_to_all(c, md, in, 0, 1, rule, out);
    case BC: return lt_broadcast(c, md, in, 1, out);
    case SC: return lt_scatter(c, md, in, 0, 0, rule, out);
    case GA: return lt_gather(c, md, in, 1, 1, out);
    case RE: return lt_reduce_ranks(c, md, in, 0, op, out);
    default: return lt_permute_ranks(c, md, in, perm, out);
    }
}

/* One collective on every group of mesh dim md, at 1 thread and at 2..4;
 * strided: the inputs are transposed views (copied to contiguous first). */
static void one_collective(int kind, const char *mesh, int md, lt_dtype dt, lt_redop op,
                           int strided) {
    lt_mesh m;
    LT_CHECK(lt_mesh_parse(mesh, &m));
    lt_comm *c = NULL;
    LT_CHECK(lt_comm_new(&m, &c));
    int n = m.shape[md], W = m.world;
    /* about 12 KiB per rank, rows not a multiple of the group: uneven splits */
    int64_t cols = 16, rows = (int64_t)(12 << 10) / (int64_t)lt_dtype_size(dt) / cols / n * n + 1;
    lt_tensor *in[8] = {0}, *base[8] = {0};
    for (int r = 0; r < W; r++) {
        base[r] = rank_tensor(dt, strided ? cols : rows, strided ? rows : cols, r);
        if (strided) LT_CHECK(lt_transpose(base[r], 0, 1, &in[r]));
        else LT_CHECK(lt_tensor_view(base[r], &in[r]));
    }
    int perm[8];
    for (int i = 0; i < n; i++) perm[i] = (i + 1) % n;
    lt_split_rule rule = lt_split_chunk();
    char what[160];
    snprintf(what, sizeof what, "%s on %s dim %d, %s%s, op %d", kind_names[kind], mesh, md,
             lt_dtype_name(dt), strided ? " (strided inputs)" : "", (int)op);
    lt_tensor *ref[8] = {0};
    lt_set_threads(1);
    LT_CHECK(call(kind, c, md, in, op, &rule, perm, ref));
    for (int t = 2; t <= 4; t++) {
        lt_set_threads(t);
        lt_tensor *got[8] = {0};
        LT_CHECK(call(kind, c, md, in, op, &rule, perm, got));
        for (int r = 0; r < W; r++) expect_same_bytes(ref[r], got[r], what, r, t);
        /* again into those outputs (preallocated: a result the group
         * shared is first split into one buffer per rank), overwritten
         * with a value no collective here produces */
        for (int r = 0; r < W; r++)
            if (got[r] && !got[r]->placeholder && lt_numel(got[r])) LT_CHECK(lt_fill(got[r], 1e4));
        LT_CHECK(call(kind, c, md, in, op, &rule, perm, got));
        for (int r = 0; r < W; r++) {
            expect_same_bytes(ref[r], got[r], what, r, t);
            lt_tensor_free(got[r]);
        }
    }
    lt_set_threads(0);
    for (int r = 0; r < W; r++) {
        lt_tensor_free(ref[r]);
        lt_tensor_free(in[r]);
        lt_tensor_free(base[r]);
    }
    lt_comm_free(c);
}

static void test_collectives_copying(void **state) {
    (void)state;
    static const struct {
        const char *mesh;
        int md;
    } at[] = {{"8", 0}, {"2x4", 1}, {"2x2x2", 0}, {"2x2x2", 2}};
    static const int kinds[] = {AG, A2A, BC, SC, GA, PE};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
            one_collective(kinds[k], at[i].mesh, at[i].md, LT_F32, LT_REDOP_SUM, 0);
            one_collective(kinds[k], at[i].mesh, at[i].md, LT_BF16, LT_REDOP_SUM, 0);
        }
    one_collective(AG, "8", 0, LT_F32, LT_REDOP_SUM, 1);
}

static void test_collectives_reducing(void **state) {
    (void)state;
    static const struct {
        const char *mesh;
        int md;
    } at[] = {{"8", 0}, {"2x4", 0}, {"2x4", 1}, {"2x2x2", 1}};
    static const int kinds[] = {AR, RS, RE};
    static const lt_redop fops[] = {LT_REDOP_SUM, LT_REDOP_AVG, LT_REDOP_MAX};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
            for (size_t o = 0; o < sizeof fops / sizeof *fops; o++) {
                one_collective(kinds[k], at[i].mesh, at[i].md, LT_F32, fops[o], 0);
                one_collective(kinds[k], at[i].mesh, at[i].md, LT_BF16, fops[o], 0);
            }
            one_collective(kinds[k], at[i].mesh, at[i].md, LT_F64, LT_REDOP_SUM, 0);
            one_collective(kinds[k], at[i].mesh, at[i].md, LT_I32, LT_REDOP_PRODUCT, 0);
        }
    one_collective(AR, "8", 0, LT_F32, LT_REDOP_SUM, 1);
    one_collective(RS, "2x4", 1, LT_BF16, LT_REDOP_SUM, 1);
    /* along dim 1: every member's piece is a range of each of the many rows */
    rs_dim = 1;
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        one_collective(RS, at[i].mesh, at[i].md, LT_F32, LT_REDOP_SUM, 0);
        one_collective(RS, at[i].mesh, at[i].md, LT_BF16, LT_REDOP_AVG, 0);
        one_collective(RS, at[i].mesh, at[i].md, LT_I32, LT_REDOP_PRODUCT, 0);
    }
    one_collective(RS, "8", 0, LT_F32, LT_REDOP_SUM, 1);
    rs_dim = 0;
}

static lt_tensor *full_tensor(lt_dtype dt, int64_t rows, int64_t cols) {
    return rank_tensor(dt, rows, cols, 99);
}

static void expect_same_dtensor(const lt_dtensor *a, const lt_dtensor *b, const char *what,
                                int threads) {
    const lt_mesh *m = lt_dtensor_mesh(a);
    for (int r = 0; r < m->world; r++)
        expect_same_bytes(lt_to_local(a, r), lt_to_local(b, r), what, r, threads);
}

/* distribute and init: the shards of the ranks heading a replica class are
 * built at once, the replicas are views of them (one shared buffer) */
static void test_build(void **state) {
    (void)state;
    static const char *const pls[] = {"S(0),R,SS(0,2)", "P(sum),S(1),R", "R,R,R", "S(1),S(0),S(1)"};
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x2x2", &m));
    lt_tensor *full = full_tensor(LT_F32, 51, 77);
    const lt_init inits[2] = {{LT_INIT_ARANGE, 0}, {LT_INIT_RANDOM, 7}};
    for (size_t i = 0; i < sizeof pls / sizeof *pls; i++)
        for (int how = 0; how < 3; how++) {   /* distribute, then init arange and random */
            lt_placement pl[3];
            int np;
            LT_CHECK(lt_placements_parse(pls[i], pl, 3, &np));
            lt_dtensor *ref = NULL, *got = NULL;
            for (int t = 1; t <= 4; t++) {
                lt_set_threads(t);
                lt_dtensor **x = t == 1 ? &ref : &got;
                if (how == 0) LT_CHECK(lt_distribute(&m, full, pl, np, x));
                else
                    LT_CHECK(lt_dtensor_new(&m, LT_F32, 2, (int64_t[]){51, 77}, pl, np,
                                             &inits[how - 1], x));
                for (int r = 0; r < m.world;
                     r++) { /* rank 0..r-1 holding the same values share r's buffer */
                    const lt_tensor *a = lt_to_local(*x, r);
                    for (int k = 0; k < r; k++) {
                        const lt_tensor *b = lt_to_local(*x, k);
                        if (lt_nbytes(a) && lt_nbytes(a) == lt_nbytes(b) &&
                            !memcmp(lt_data(a), lt_data(b), lt_nbytes(a)) &&
                            strstr(pls[i], "P") == NULL && a->storage != b->storage)
                            fail_msg("%s: ranks %d and %d hold the same values in two buffers",
                                     pls[i], k, r);
                    }
                }
                if (t > 1) {
                    expect_same_dtensor(ref, got, pls[i], t);
                    lt_dtensor_free(got);
                }
            }
            lt_set_threads(0);
            lt_dtensor_free(ref);
        }
    lt_tensor_free(full);
}

/* redistribute with verification of every step, on a mesh of 8 ranks */
static void test_redistribute(void **state) {
    (void)state;
    static const struct { const char *from, *to;
    } pairs[] = {{"S(0),S(1),SS(0,2)", "R,S(1),R"},
                 {"P(sum),R,S(0)", "S(1),S(0),R"},
                 {"R,R,R", "S(1),SS(0,2),S(0)"}};
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x2x2", &m));
    lt_tensor *full = full_tensor(LT_F32, 51, 77);
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        lt_dtensor *x = lt_test_distribute(&m, full, pairs[i].from);
        lt_placement to[3];
        int np;
        LT_CHECK(lt_placements_parse(pairs[i].to, to, 3, &np));
        lt_redistribute_opts o = {0};
        o.verify = 1;
        lt_dtensor *ref = NULL, *got = NULL;
        lt_set_threads(1);
        LT_CHECK(lt_redistribute(x, to, np, &o, &ref, NULL));
        for (int t = 2; t <= 4; t++) {
            lt_set_threads(t);
            LT_CHECK(lt_redistribute(x, to, np, &o, &got, NULL));
            expect_same_dtensor(ref, got, pairs[i].to, t);
            lt_dtensor_free(got);
        }
        lt_set_threads(0);
        lt_dtensor_free(ref);
        lt_dtensor_free(x);
    }
    lt_tensor_free(full);
}

/* elementwise, reductions and softmax: one kernel per rank, ranks at once */
static void test_ops(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x4", &m));
    lt_tensor *fa = full_tensor(LT_F32, 130, 64), *fb = rank_tensor(LT_F32, 130, 64, 5);
    lt_dtensor *a = lt_test_distribute(&m, fa, "S(0),S(1)"),
               *b = lt_test_distribute(&m, fb, "S(0),S(1)");
    for (int which = 0; which < 4; which++) {
        lt_dtensor *ref = NULL;
        for (int t = 1; t <= 4; t++) {
            lt_set_threads(t);
            lt_dtensor *got = NULL;
            int dims[1] = {1};
            switch (which) {
            case 0: LT_CHECK(lt_dtensor_binary(LT_BINARY_ADD, a, b, &got)); break;
            case 1: LT_CHECK(lt_dtensor_unary(LT_UNARY_GELU, a, &got)); break;
            case 2: LT_CHECK(lt_dtensor_reduce(LT_REDUCE_SUM, a, 1, dims, 0, &got)); break;
            default: {
                lt_op_args args = {0};
                args.dim = 0;
                const lt_dtensor *in[1] = {a};
                int nout = 0;
                LT_CHECK(lt_op(LT_OP_SOFTMAX, in, 1, &args, NULL, &got, 1, &nout));
                break;
            }
            }
            if (t == 1) ref = got;
            else {
                char what[32];
                snprintf(what, sizeof what, "op %d", which);
                expect_same_dtensor(ref, got, what, t);
                lt_dtensor_free(got);
            }
        }
        lt_dtensor_free(ref);
    }
    lt_set_threads(0);
    lt_dtensor_free(a);
    lt_dtensor_free(b);
    lt_tensor_free(fa);
    lt_tensor_free(fb);
}

/* Deletes every "time_s" member of j, recursively. */
static void drop_times(cJSON *j) {
    cJSON_DeleteItemFromObjectCaseSensitive(j, "time_s");
    cJSON *k;
    cJSON_ArrayForEach(k, j) drop_times(k);
}

/* Removes every "(1.2 ms)" or "(3.40 s)" from the text report. */
static void drop_text_times(char *t) {
    char *w = t;
    for (char *r = t; *r;) {
        char *close = *r == '(' && r[1] >= '0' && r[1] <= '9' ? strchr(r, ')') : NULL;
        if (close && close - r > 3 && close[-1] == 's') {
            r = close + 1;
            continue;
        }
        *w++ = *r++;
    }
    *w = '\0';
}

/* One run of path: the text report in *text, the JSON report (times
 * dropped, unformatted) in *json; both malloc'd. */
static void run_sweep(const char *path, const char *json_path, char **text, char **json) {
    FILE *out = tmpfile(), *err = tmpfile();
    assert_non_null(out);
    assert_non_null(err);
    lt_sc_options o;
    memset(&o, 0, sizeof o);
    o.out = out;
    o.err = err;
    o.json_path = json_path;
    int rc = lt_sc_run_paths(&path, 1, &o);
    assert_int_equal(rc, 1); /* some cases fail, none errors */
    *text = lt_test_slurp_fp(out);
    drop_text_times(*text);
    fclose(out);
    fclose(err);
    FILE *jf = fopen(json_path, "r");
    assert_non_null(jf);
    fseek(jf, 0, SEEK_END);
    char *jt = lt_test_slurp_fp(jf);
    fclose(jf);
    cJSON *j = cJSON_Parse(jt);
    free(jt);
    if (!j) fail_msg("the --json report does not parse");
    drop_times(j);
    *json = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
}

static void test_sweep_reports(void **state) {
    (void)state;
    char dir[] = "/tmp/lt_threads_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64], json_path[64];
    snprintf(path, sizeof path, "%s/sweep.yaml", dir);
    snprintf(json_path, sizeof json_path, "%s/out.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    /* 2 x 81 cases that pass, then 81 that fail (their expected values are
     * off by one at global index 4) */
    fputs("- name: pass\n  tensors: {x: {shape: [5, 3], init: \"random:3\"}}\n  sweep:\n    mesh: "
          "[2x2]\n"
          "    shape: [[5, 3], [4, 2]]\n"
          "    from: {each: [R, \"S(0)\", \"S(1)\"]}\n    to: {each: [R, \"S(0)\", \"S(1)\"]}\n  "
          "steps:\n"
          "    - distribute: {tensor: x, placements: $from, as: xd}\n"
          "    - redistribute: {tensor: xd, to: $to, as: y}\n"
          "    - expect_full: {tensor: y, equals: x}\n"
          "- name: fail\n  tensors: {x: {shape: [5], init: arange}}\n  sweep:\n    mesh: [2x2]\n"
          "    from: {each: [R, \"S(0)\", \"P(sum)\"]}\n    to: {each: [R, \"S(0)\", "
          "\"SS(0,2)\"]}\n  steps:\n"
          "    - distribute: {tensor: x, placements: $from, as: xd}\n"
          "    - redistribute: {tensor: xd, to: $to, as: y}\n"
          "    - expect_full: {tensor: y, values: [0, 1, 2, 3, 5]}\n",
          f);
    fclose(f);
    char *text1, *json1;
    lt_set_threads(1);
    run_sweep(path, json_path, &text1, &json1);
    assert_non_null(strstr(text1, "FAIL"));
    for (int t = 2; t <= 4; t++) {
        lt_set_threads(t);
        char *text, *json;
        run_sweep(path, json_path, &text, &json);
        if (strcmp(text, text1))
            fail_msg("text report differs with %d threads:\n%s\n---\n%s", t, text1, text);
        if (strcmp(json, json1)) fail_msg("--json report differs with %d threads", t);
        free(text);
        cJSON_free(json);
    }
    lt_set_threads(0);
    free(text1);
    cJSON_free(json1);
    remove(json_path);
    remove(path);
    rmdir(dir);
}

static int small_threshold(void **state) {
    (void)state;
    lt__set_par_min_bytes(8 << 10);
    return 0;
}

/* 1 MiB: the engine's pieces are 64 KiB (a sixteenth), so the small groups
 * of 2x2x2 run at the same time instead of each being split */
static int mid_threshold(void **state) {
    (void)state;
    lt__set_par_min_bytes(1 << 20);
    return 0;
}

static int default_threshold(void **state) {
    (void)state;
    lt__set_par_min_bytes(0);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives_copying),
        cmocka_unit_test(test_collectives_reducing),
        cmocka_unit_test_setup_teardown(test_collectives_copying, mid_threshold, small_threshold),
        cmocka_unit_test_setup_teardown(test_collectives_reducing, mid_threshold, small_threshold),
        cmocka_unit_test(test_build),
        cmocka_unit_test(test_redistribute),
        cmocka_unit_test(test_ops),
        cmocka_unit_test(test_sweep_reports),
    };
    return cmocka_run_group_tests(tests, small_threshold, default_threshold);
}
