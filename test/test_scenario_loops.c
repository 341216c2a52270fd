/* test/test_scenario_loops.c — `repeat:` loops and the expression functions
 * that read shard sizes (tools/scenario/scenario_loop.c, scenario_when.c),
 * seen from `localtensor run`: what only shows at run time. A count known
 * only then is refused over its bounds before any of the loop runs; a loop
 * spliced into a case's steps for one run leaves the case as it was, so a
 * second run (--compare-backend) unrolls it afresh; a rank whose count
 * cannot be evaluated while another waits fails there (rank_failed); a
 * 10,000-iteration loop loads and runs in well under a second or two.
 * (Load-time refusals are files of test/bad_scenarios/; the scenario
 * library's loops are scenarios/spmd/loops.yaml and
 * scenarios/bugs/uneven_rows_loop.yaml.)
 *
 * Runs from the repository root, in-process through lt_sc_main.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/testutil.h"
#include "tools/scenario/scenario.h"

static char g_tmpdir[512];

static void tmp_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", g_tmpdir, name);
}

/* Runs the scenario text as file `name`; returns the exit code, *out the
 * report (stdout then stderr; the caller frees). */
static int run_text(const char *name, const char *text, const char *extra, char **out) {
    char path[600], *o, *e;
    tmp_path(path, sizeof path, name);
    lt_test_write_file(path, text);
    const char *args[] = {path, extra, extra ? "cuda-emu" : NULL};
    int rc = lt_test_run_sc(args, extra ? 3 : 1, &o, &e);
    size_t lo = strlen(o), le = strlen(e);
    *out = malloc(lo + le + 1);
    memcpy(*out, o, lo);
    memcpy(*out + lo, e, le + 1);
    free(o);
    free(e);
    remove(path);
    return rc;
}

#define ROWS_HEAD                                                                                  \
    "mesh: {shape: [2], names: [dp]}\n"                                                            \
    "tensors:\n  x: {shape: [5, 2], init: arange}\n"                                               \
    "steps:\n"                                                                                     \
    "  - distribute: {tensor: x, placements: [\"S(0)\"], as: xd}\n"                                \
    "  - to_local: {tensor: xd, as: xl}\n" /* rows: 3 | 2 (the 3rd step: the loop's) */

/* A count that reads a shard is bounded when the loop runs: the case stops
 * with the loader's message at times:, and no copy of the body ran (its
 * all_reduce would have been counted by expect_comm before the error). */
static void test_runtime_bounds(void **state) {
    (void)state;
    char *out;
    int rc = run_text("iters.yaml",
                      "name: iters\n" ROWS_HEAD
                      "  - repeat:\n"
                      "      times: \"rows(xl) * 600000\"\n"   /* line 9: rank 0: 1800000 */
                      "      steps:\n"
                      "        - collective: {kind: all_reduce, mesh_dim: dp, tensor: xl, as: s}\n",
                      NULL, &out);
    assert_int_equal(rc, 2);
    if (!strstr(out, "iters.yaml:9:14: repeat: times is 1800000 on rank 0; a loop runs at most "
                     "1000000 iterations"))
        fail_msg("no run-time refusal of the count:\n%s", out);
    if (strstr(out, "would hang")) fail_msg("part of the loop ran:\n%s", out);
    free(out);
    rc = run_text("cap.yaml",
                  "name: cap\n" ROWS_HEAD
                  "  - repeat:\n"                               /* line 8 */
                  "      times: \"rows(xl) * 20000\"\n"         /* 60000 iterations of 2 steps */
                  "      steps:\n"
                  "        - local_op: {op: neg, inputs: xl, as: y}\n"
                  "        - collective: {kind: all_reduce, mesh_dim: dp, tensor: y, as: s}\n",
                  NULL, &out);
    assert_int_equal(rc, 2);
    if (!strstr(out, "cap.yaml:8:5: repeat: 60000 iterations of 2 steps make the case 120003 "
                     "steps; a case holds at most "
                     "100000 with its loops unrolled"))
        fail_msg("no run-time refusal of the unrolled size:\n%s", out);
    free(out);
}

/* The same case run twice (--compare-backend: on cuda-emu, then on cpu)
 * unrolls its run-time loop each time from the case's own steps: both runs
 * store the same values, and the report is the single run's. */
static void test_two_runs(void **state) {
    (void)state;
    char *out;
    int rc =
        run_text("twice.yaml",
                 "name: twice\n" ROWS_HEAD "  - local_tensor: {shape: [1], values: 0, as: n}\n"
                 "  - repeat:\n"
                 "      times: \"rows(xl)\"\n"
                 "      as: k\n"
                 "      steps:\n"
                 "        - local_op: {op: add_scalar, inputs: n, scalar: \"k + 1\", as: n}\n"
                 "  - collective: {kind: all_reduce, mesh_dim: dp, tensor: n, as: s}\n"
                 "  - expect_local: {tensor: s, ranks: [[9], [9]]}\n", /* (1 + 2 + 3) + (1 + 2) */
                 "--compare-backend", &out);
    if (rc != 0 || !strstr(out, "1 passed, 0 failed, 0 errors")) fail_msg("exit %d:\n%s", rc, out);
    if (!strstr(out, " 0 within the dtype's tolerance")) fail_msg("the two runs differ:\n%s", out);
    free(out);
}

/* A rank whose count cannot be evaluated (its shard is a placeholder) while
 * another waits in a collective fails there: a rank_failed report naming
 * the rank and the expression's file:line:col. */
static void test_count_fails_on_one_rank(void **state) {
    (void)state;
    char *out;
    int rc = run_text("fails.yaml",
                      "name: fails\nmesh: 2\nsteps:\n"
                      "  - local_tensor: {shape: [2], values: 1, as: p}\n"
                      "    ranks: [1]\n"
                      "  - collective: {kind: all_reduce, mesh_dim: 0, tensor: p, as: s}\n"
                      "    ranks: [1]\n"
                      "  - repeat:\n"
                      "      times: \"numel(p)\"\n"                   /* line 9 */
                      "      steps:\n"
                      "        - collective: {kind: all_reduce, mesh_dim: 0, tensor: p, as: s}\n",
                      NULL, &out);
    assert_int_equal(rc, 1);
    if (!strstr(out, "rank 0 failed (invalid argument): ") ||
        !strstr(out, "fails.yaml:9:15: numel(p) on rank 0: 'p' holds no value on this rank"))
        fail_msg("no rank_failed report naming rank 0 and the expression:\n%s", out);
    free(out);
}

/* 10,000 iterations of 3 steps (30,000 steps once unrolled), with a count
 * known at load and with one known only when the loop runs. (How fast is for
 * make bench to say: no test depends on the machine's load.) */
static void test_long_loop(void **state) {
    (void)state;
    static const char *const times[] = {"10000", "rows(x)"};
    for (int i = 0; i < 2; i++) {
        char text[1200], *out;
        snprintf(text, sizeof text,
                 "name: long\nmesh: 4\nsteps:\n"
                 "  - local_tensor: {shape: [10000, 1], values: 'rank + i', as: x}\n"
                 "  - local_tensor: {shape: [1], values: 0, as: acc}\n"
                 "  - repeat:\n"
                 "      times: \"%s\"\n"
                 "      as: k\n"
                 "      steps:\n"
                 "        - collective: {kind: all_reduce, mesh_dim: 0, tensor: acc, as: y}\n"
                 "        - local_tensor: {shape: [1], values: 'k %% 7', as: t}\n"
                 "        - local_op: {op: add, inputs: [acc, t], as: acc}\n"
                 "  - expect_local: {tensor: acc, ranks: [[29994], [29994], [29994], [29994]]}\n",
                 times[i]);
        int rc = run_text("long.yaml", text, NULL, &out);
        if (rc != 0) fail_msg("times %s: exit %d:\n%s", times[i], rc, out);
        free(out);
    }
}

int main(int argc, char **argv) {
    (void)argc;
    lt_test_tmpdir(g_tmpdir, sizeof g_tmpdir, argv[0], "test_scenario_loops.tmp");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runtime_bounds),
        cmocka_unit_test(test_two_runs),
        cmocka_unit_test(test_count_fails_on_one_rank),
        cmocka_unit_test(test_long_loop),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(g_tmpdir);
    return rc;
}
