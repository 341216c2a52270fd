/* test/test_single_device.c — the single-device comparison of per-rank
 * programs (docs/SEMANTICS.md §11.8) against hand-worked cases.
 *
 * test_bug_library runs `localtensor run --single-device` over
 * scenarios/bugs/ (every check of a case left out, one
 * expect_same_as_single_device at its end) and holds each case to the
 * outcome worked out by hand from the file's comments: every buggy variant
 * whose bug is a wrong value diverges AT the step that introduces it, every
 * fixed variant passes, hang and error bugs stay what they are. A case the
 * table does not know fails the test: a new bug file must be classified here.
 * The other tests are small programs whose values are computed by hand in
 * their comments.
 *
 * Runs from the repository root (as `make test` does), in-process through
 * lt_sc_main, output captured.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "test/testutil.h"
#include "tools/scenario/scenario.h"

static char g_tmpdir[512];

static void tmp_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", g_tmpdir, name);
}

enum { PASS, DIVERGE, HANG, ERROR };

/* Each case of scenarios/bugs/ under --single-device; `at` is a substring
 * of the report: the step (number and kind) the bug enters at, worked out
 * from the file's steps (a step an expect_error wraps has the
 * expect_error's number). */
static const struct {
    const char *name;
    int want;
    const char *at;
    const char *diag;         /* the diagnosis the values make certain, or NULL */
} bugs[] = {
    /* wrong values: the step that makes the first wrong value */
    {"uneven_mean_buggy", DIVERGE, "at step 4: collective all_reduce", /* 2.25 for 2 */
     "diagnosis: an average of per-rank means over shards of different sizes (3, 2 along mesh dim "
     "dp)"},
    {"from_local_wrong_placements_buggy", DIVERGE,
     "at step 4: from_local", /* R of partial sums 1 and 5 */
     "diagnosis: the ranks' values along mesh dim 0 sum to the single-device value: an unreduced "
     "Partial(sum)"},
    {"row_parallel_unreduced_buggy", DIVERGE, "at step 6: from_local", /* R of unreduced mm */
     "diagnosis: the ranks' values along mesh dim tp sum to the single-device value: an unreduced "
     "Partial(sum)"},
    {"wrong_mesh_dim_buggy", DIVERGE,
     "at step 6: collective all_reduce", /* reduced over dp: 56 for 28 */
     "the value was Partial(sum) along mesh dim tp: a collective on the wrong mesh dim?"},
    {"reduce_scatter_split_buggy", DIVERGE,
     "at step 8: local_op add", /* balanced + chunk: 41 for 45 */
     "diagnosis: the local add combined operands laid out differently ([S(0)] and "
     "[S(0,balanced)])"},
    {"sharded_view_mixes_rows_buggy", DIVERGE, "at step 4: from_local", NULL}, /* columns as rows */
    {"dropout_replicas_buggy", DIVERGE, "at step 2: local_op dropout", NULL}, /* seed + rank */
    {"group_size_divisor_buggy", DIVERGE, "at step 5: local_op div_scalar", /* 15 / 12 for 15 / 6 */
     "diagnosis: every value is the single-device value divided by 2 (the size of mesh dim dp or "
     "mesh dim tp)"},
    {"first_divergence_planted_bug", DIVERGE, "at step 4: rank_map", NULL}, /* add_rank */
    /* hangs: the would-hang report */
    {"branch_skips_collective_buggy", HANG, "would hang (missing)", NULL},
    {"mesh_dims_opposite_order_buggy", HANG, "would hang (cycle)", NULL},
    {"collective_kind_mismatch_buggy", HANG, "would hang (mismatch)", NULL},
    {"rank0_only_collective_buggy", HANG, "would hang (missing)", NULL},
    {"uneven_rows_loop_buggy", HANG, "would hang (missing)", NULL},
    /* refused as errors: the step's own error */
    {"misaligned_uneven_binary_buggy", ERROR, "operands are not aligned", NULL},
    {"uneven_all_gather_buggy", ERROR, "cannot become (2, 3)", NULL},
    {"reduce_not_all_reduce_buggy", ERROR, "holds no value on this rank", NULL},
};

static int classify(const char *name, const char **at, const char **diag) {
    for (size_t i = 0; i < sizeof bugs / sizeof bugs[0]; i++)
        if (!strcmp(bugs[i].name, name)) {
            *at = bugs[i].at;
            *diag = bugs[i].diag;
            return bugs[i].want;
        }
    *at = *diag = NULL;
    /* every other case is a correct program */
    return strstr(name, "_fixed") || strstr(name, "do_not_alarm") ? PASS : -1;
}

static const char *first_message(const cJSON *c) {
    const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "failures"), 0);
    const cJSON *m = f ? cJSON_GetObjectItem(f, "message") : NULL;
    return cJSON_IsString(m) ? m->valuestring : "";
}

/* One case's outcome against the table; returns 1 when it holds. */
static int check_case(const cJSON *c, char *why, size_t n) {
    const char *name = cJSON_GetObjectItem(c, "name")->valuestring, *at, *diag,
               *msg = first_message(c);
    const char *status = cJSON_GetObjectItem(c, "status")->valuestring;
    int want = classify(name, &at, &diag);
    if (want < 0) {
        snprintf(why, n, "%s: not classified in test_single_device.c's table", name);
        return 0;
    }
    static const char *const words[] = {"passed", "failed", "failed", "error"};
    if (strcmp(status, words[want])) {
        snprintf(why, n, "%s: status %s, expected %s: %.600s", name, status, words[want], msg);
        return 0;
    }
    if (want == DIVERGE && !strstr(msg, "first divergence from the single-device program")) {
        snprintf(why, n, "%s: failed otherwise than by a divergence: %.600s", name, msg);
        return 0;
    }
    if (at && !strstr(msg, at)) {
        snprintf(why, n, "%s: report does not say '%s': %.600s", name, at, msg);
        return 0;
    }
    if (diag && !strstr(msg, diag)) {
        snprintf(why, n, "%s: no diagnosis '%s': %.600s", name, diag, msg);
        return 0;
    }
    if (want == DIVERGE && !diag && strstr(msg, "diagnosis:")) {
        snprintf(why, n, "%s: a diagnosis the values do not make certain: %.600s", name, msg);
        return 0;
    }
    return 1;
}

static void test_bug_library(void **state) {
    (void)state;
    char json[600], *out, *err;
    tmp_path(json, sizeof json, "bugs.json");
    const char *args[] = {"--single-device", "--json", json, "scenarios/bugs"};
    lt_test_run_sc(args, 4, &out, &err);
    char *text = lt_test_slurp(json, NULL);
    if (!text) fail_msg("no JSON report:\n%s%s", out, err);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    int seen = 0, diverged = 0, bad = 0;
    char why[1024], all[8192] = "";
    const cJSON *f, *s, *c;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(root, "files"))
        cJSON_ArrayForEach(s, cJSON_GetObjectItem(f, "scenarios"))
            cJSON_ArrayForEach(c, cJSON_GetObjectItem(s, "cases")) {
        seen++;
        const char *at, *diag;
        diverged += classify(cJSON_GetObjectItem(c, "name")->valuestring, &at, &diag) == DIVERGE;
        if (!check_case(c, why, sizeof why) && strlen(all) + strlen(why) + 2 < sizeof all) {
            strcat(all, why);
            strcat(all, "\n");
            bad++;
        }
    }
    /* every table entry was met: no bug file went missing unnoticed */
    if (diverged != 9) fail_msg("%d wrong-value bugs met, the table has 9", diverged);
    if (bad) fail_msg("%d of %d cases differ from the table:\n%s", bad, seen, all);
    assert_true(seen >= 30);
    cJSON_Delete(root);
    free(text);
    free(out);
    free(err);
    remove(json);
}

/* Runs a one-file scenario; returns the exit code, *out the report. */
static int run_text(const char *file, const char *text, char **out) {
    char path[600], *err;
    tmp_path(path, sizeof path, file);
    lt_test_write_file(path, text);
    const char *args[] = {"-v", path};
    int rc = lt_test_run_sc(args, 2, out, &err);
    free(err);
    remove(path);
    return rc;
}

/* A correct row-parallel program: each rank's product is a Partial(sum)
 * term; compared after the group's sum (x @ w = [[28, 34], [76, 98]], see
 * scenarios/bugs/row_parallel_unreduced.yaml), it passes, and the pass says
 * what it compared. */
static void test_partial_compared_after_reduction(void **state) {
    (void)state;
    char *out;
    int rc =
        run_text("rowpar.yaml",
                 "name: rowpar\nmesh: {shape: [2], names: [tp]}\n"
                 "tensors: {x: {shape: [2, 4], init: arange}, w: {shape: [4, 2], init: arange}}\n"
                 "steps:\n"
                 "  - distribute: {tensor: x, placements: ['S(1)'], as: xd}\n"
                 "  - distribute: {tensor: w, placements: ['S(0)'], as: wd}\n"
                 "  - to_local: {tensor: xd, as: xl}\n"
                 "  - to_local: {tensor: wd, as: wl}\n"
                 "  - local_op: {op: mm, inputs: [xl, wl], as: p}\n"
                 "  - local_op: {op: mul_scalar, inputs: p, scalar: 2, as: p2}\n"
                 "  - collective: {kind: all_reduce, mesh_dim: tp, tensor: p2, as: y}\n"
                 "  - expect_same_as_single_device: {}\n",
                 &out);
    if (rc != 0) fail_msg("a correct program diverged:\n%s", out);
    /* p (P(sum)), p2 (P(sum)), y (R): three values */
    if (!strstr(out, "3 values compared with the single-device program"))
        fail_msg("not said what it compared:\n%s", out);
    free(out);
}

/* The unreduced product declared R by from_local (check: false): the
 * from_local is blamed (rank 0 holds 2 where x @ w holds 28), with the
 * diagnosis that the ranks' values sum to the single-device value. */
static void test_unreduced_diagnosis(void **state) {
    (void)state;
    char *out;
    int rc =
        run_text("unreduced.yaml",
                 "name: unreduced\nmesh: {shape: [2], names: [tp]}\n"
                 "tensors: {x: {shape: [2, 4], init: arange}, w: {shape: [4, 2], init: arange}}\n"
                 "steps:\n"
                 "  - distribute: {tensor: x, placements: ['S(1)'], as: xd}\n"
                 "  - distribute: {tensor: w, placements: ['S(0)'], as: wd}\n"
                 "  - to_local: {tensor: xd, as: xl}\n"
                 "  - to_local: {tensor: wd, as: wl}\n"
                 "  - local_op: {op: mm, inputs: [xl, wl], as: p}\n"
                 "  - from_local: {tensor: p, placements: [R], check: false, as: y}\n"
                 "  - op: {op: relu, inputs: [y], as: h}\n"
                 "  - expect_same_as_single_device: {}\n",
                 &out);
    assert_int_equal(rc, 1);
    if (!strstr(out, "at step 6: from_local") ||
        !strstr(out,
                "rank 0, local index [0, 0], global index [0, 0]: single-device 28, DTensor 2"))
        fail_msg("not blamed on the from_local:\n%s", out);
    if (!strstr(out, "the ranks' values along mesh dim tp sum to the single-device value: an "
                     "unreduced Partial(sum)"))
        fail_msg("no diagnosis:\n%s", out);
    free(out);
}

/* Values that differ by rank have no single-device value: not compared,
 * and the passing report lists them (a pass never silent about what it did
 * not see). */
static void test_not_compared_is_listed(void **state) {
    (void)state;
    char *out;
    int rc = run_text("listed.yaml",
                      "name: listed\nmesh: {shape: [2], names: [dp]}\n"
                      "tensors: {x: {shape: [4], init: arange}}\n"
                      "steps:\n"
                      "  - local_tensor: {shape: [1], values: 'rank', as: r}\n"
                      "  - collective: {kind: all_reduce, mesh_dim: dp, tensor: r, as: s}\n"
                      "  - distribute: {tensor: x, placements: ['S(0)'], as: xd}\n"
                      "  - op: {op: neg, inputs: [xd], as: n}\n"
                      "  - expect_same_as_single_device: {}\n",
                      &out);
    if (rc != 0) fail_msg("failed:\n%s", out);
    if (!strstr(out, "1 value compared with the single-device program; 2 not compared:") ||
        !strstr(out, "step 1: local_tensor 'r'") || !strstr(out, "its values differ by rank") ||
        !strstr(out, "step 2: collective 's'") ||
        !strstr(out, "input 'r' has no single-device value"))
        fail_msg("the not-compared values are not listed:\n%s", out);
    free(out);
}

/* A correct bf16 per-rank program whose local matmul sums 301 terms in
 * another order than one device: the (L - 1) * eps * M term holds, no alarm
 * (the same data as scenarios/bugs/first_divergence.yaml's bf16 case). */
static void test_bf16_local_matmul_no_alarm(void **state) {
    (void)state;
    char *out;
    int rc = run_text("bf16.yaml",
                      "name: bf16\nmesh: 4\n"
                      "tensors:\n"
                      "  x: {shape: [6, 301], dtype: bf16, init: 'randn:3'}\n"
                      "  w: {shape: [301, 5], dtype: bf16, init: 'randn:4'}\n"
                      "steps:\n"
                      "  - distribute: {tensor: x, placements: ['S(1)'], as: xd}\n"
                      "  - distribute: {tensor: w, placements: ['S(0)'], as: wd}\n"
                      "  - to_local: {tensor: xd, as: xl}\n"
                      "  - to_local: {tensor: wd, as: wl}\n"
                      "  - local_op: {op: mm, inputs: [xl, wl], as: p}\n"
                      "  - collective: {kind: all_reduce, mesh_dim: 0, tensor: p, as: y}\n"
                      "  - expect_same_as_single_device: {}\n",
                      &out);
    if (rc != 0) fail_msg("false alarm:\n%s", out);
    free(out);
}

int main(int argc, char **argv) {
    (void)argc;
    lt_test_tmpdir(g_tmpdir, sizeof g_tmpdir, argv[0], "test_single_device.tmp");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bug_library),
        cmocka_unit_test(test_partial_compared_after_reduction),
        cmocka_unit_test(test_unreduced_diagnosis),
        cmocka_unit_test(test_not_compared_is_listed),
        cmocka_unit_test(test_bf16_local_matmul_no_alarm),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(g_tmpdir);
    return rc;
}
