/* test/test_sweeps.c — sweeps: a sweep's cases are the product of its
 * variables in case order, with the names that order gives; a loaded sweep
 * holds a table, not its cases (its memory does not grow with them); a
 * case made from its index runs as the scenario says (its `backend:`, its
 * `numerics:` unless --numerics overrides it); -k selects cases by name.
 *
 * Runs from the repository root (as `make test` does), in-process through
 * lt_sc_load / lt_sc_main, scenario texts written to a temporary directory
 * next to the test binary.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/testutil.h"
#include "tools/scenario/scenario.h"
#include "tools/scenario/scenario_impl.h"

static char g_tmpdir[512];

static void tmp_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", g_tmpdir, name);
}

/* Writes text to a temporary file called name and runs `localtensor run
 * ARGS... FILE` on it; *out and *err as lt_test_run_sc. Returns the exit code. */
static int run_on(const char *name, const char *text, const char *const *args, int n, char **out,
                  char **err) {
    char path[600];
    const char *argv[16];
    tmp_path(path, sizeof path, name);
    lt_test_write_file(path, text);
    for (int i = 0; i < n && i < 15; i++) argv[i] = args[i];
    argv[n < 15 ? n : 15] = path;
    int rc = lt_test_run_sc(argv, (n < 15 ? n : 15) + 1, out, err);
    remove(path);
    return rc;
}

/* mesh x shape x pairs, a pair used only on the meshes with as many dims
 * as it has placements; the case names; -k on them. */
static void test_sweep_expansion(void **state) {
    (void)state;
    char path[600];
    tmp_path(path, sizeof path, "sweep.yaml");
    lt_test_write_file(path,
               "name: sw\n"
               "tensors: {x: {shape: $shape}}\n"
               "sweep:\n"
               "  mesh: [2x2, 4]\n"
               "  shape: [[5], [6, 2]]\n"
               "  pairs: [['S(0),R', 'R,R'], ['S(0)', R], [R, 'S(0)']]\n"
               "steps:\n"
               "  - distribute: {tensor: x, placements: $from, as: xd}\n"
               "  - redistribute: {tensor: xd, to: $to, as: y}\n"
               "  - expect_full: {tensor: y, equals: x}\n");
    lt_sc_file *f = NULL;
    LT_CHECK(lt_sc_load(path, &f));
    /* 2x2 takes one pair, 4 takes two: (1 + 2) x 2 shapes */
    assert_int_equal(lt_sc_file_scenarios(f), 1);
    assert_int_equal(lt_sc_file_cases(f), 6);
    lt_sc_file_free(f);
    const char *args[] = {"-v", path};
    char *out, *err;
    assert_int_equal(lt_test_run_sc(args, 2, &out, &err), 0);
    if (!strstr(out, "sw[mesh=2x2,shape=5,[S(0),R]->[R,R]]") ||
        !strstr(out, "sw[mesh=4,shape=6,2,R->S(0)]"))
        fail_msg("case names:\n%s", out);
    assert_non_null(strstr(out, "6 passed, 0 failed, 0 errors"));
    free(out);
    free(err);
    /* -k selects cases by name; without -v a sweep is one line */
    const char *args2[] = {"-k", "mesh=4,", path};
    assert_int_equal(lt_test_run_sc(args2, 3, &out, &err), 0);
    assert_non_null(strstr(out, "[sweep: 4 cases]"));
    assert_non_null(strstr(out, "4 passed, 0 failed, 0 errors"));
    free(out);
    free(err);
    remove(path);
}

/* A loaded sweep holds its table, not its cases: 64 times the cases costs
 * the file's arena only the longer placement lists (the cases were about
 * 340 bytes each when they were stored). Cases made from their index carry
 * the names the case order gives (meshes, shapes, dtypes, then from-major
 * placement lists, the last mesh dim's choice varying fastest). */
static void test_sweep_holds_no_cases(void **state) {
    (void)state;
    static const char *const each[2][2] = {
        {"[R, 'S(0)']", "[R, 'S(1)']"},
        {"[R, 'S(0)', 'S(1)', 'SS(0,2)']", "[R, 'S(0)', 'S(1)', 'SS(1,2)']"}};
    size_t used[2];
    int ncases[2];
    for (int k = 0; k < 2; k++) {
        char text[1024];
        snprintf(
            text, sizeof text,
            "name: sw\ntensors: {x: {shape: $shape, init: arange}}\n"
            "sweep:\n  mesh: [2x2x2]\n  shape: [[8, 8]]\n  from: {each: %s}\n  to: {each: %s}\n"
            "steps:\n  - distribute: {tensor: x, placements: $from, as: xd}\n"
            "  - redistribute: {tensor: xd, to: $to, as: y}\n"
            "  - expect_full: {tensor: y, equals: x}\n",
            each[k][0], each[k][1]);
        lt_sc_file *f = NULL;
        LT_CHECK(lt_sc_load_string("sw.yaml", text, strlen(text), &f));
        ncases[k] = lt_sc_file_cases(f);
        used[k] = lt__sc_arena_used(f->arena);
        if (k == 1) {
            /* case i: from list i / 64, to list i % 64, each a base-4 number over the mesh dims */
            static const char *const fo[4] = {"R", "S(0)", "S(1)", "SS(0,2)"}, *const to[4] = {
                                                                                   "R", "S(0)",
                                                                                   "S(1)",
                                                                                   "SS(1,2)"};
            const int idx[] = {0, 1, 1234, 2047, 4095};
            sc_scenario *s = &f->scen[0];
            for (size_t q = 0; q < sizeof idx / sizeof idx[0]; q++) {
                int i = idx[q], a = i / 64, b = i % 64;
                char want[256], got[256];
                snprintf(want, sizeof want, "sw[mesh=2x2x2,shape=8,8,[%s,%s,%s]->[%s,%s,%s]]",
                         fo[a / 16], fo[a / 4 % 4], fo[a % 4], to[b / 16], to[b / 4 % 4],
                         to[b % 4]);
                const lt_mesh *m = NULL;
                lt__sc_case_name(s, i, got, sizeof got, &m);
                assert_string_equal(got, want);
                assert_int_equal(m->world, 8);
                sc_arena *ar = lt__sc_arena_new();
                sc_case slot, *c = lt__sc_case_at(s, i, &slot, ar);
                assert_non_null(c);
                assert_string_equal(c->name, want);
                lt__sc_run_case(c, ar, NULL);
                if (c->res.status != LT_SC_PASS)
                    fail_msg("%s: %s", want, c->res.nfails ? c->res.fails[0].message : "?");
                lt__sc_case_drop(c);
                lt__sc_arena_free(ar);
            }
        }
        lt_sc_file_free(f);
    }
    assert_int_equal(ncases[0], 64);
    assert_int_equal(ncases[1], 4096);
    double per_case = (double)(used[1] - used[0]) / (ncases[1] - ncases[0]);
    if (per_case > 16)
        fail_msg("the sweep's arena grew %.1f bytes per case (%zu -> %zu bytes)", per_case, used[0],
                 used[1]);
}

/* --numerics overrides a file's numerics: key, in a sweep too (whose cases
 * are parsed as they run). */
static void test_numerics_option_overrides_sweep_key(void **state) {
    (void)state;
    static const char text[] =
        "name: swn\nmesh: '4'\nnumerics: sample:1\ntensors: {x: {shape: [8], init: arange}}\n"
        "sweep: {from: ['S(0)', R]}\n"
        "steps:\n  - distribute: {tensor: x, placements: $from, as: d}\n"
        "  - redistribute: {tensor: d, to: [R], as: e}\n";
    char *out, *err;
    const char *keyed[] = {"-v"};
    assert_int_equal(run_on("sweep_numerics.yaml", text, keyed, 1, &out, &err), 0);
    if (!strstr(out, "swn[from=S(0)] [numerics sample:1: values for rank 0]"))
        fail_msg("the key's mode:\n%s", out);
    free(out);
    free(err);
    const char *forced[] = {"-v", "--numerics", "full"};
    assert_int_equal(run_on("sweep_numerics.yaml", text, forced, 3, &out, &err), 0);
    if (strstr(out, "[numerics") || !strstr(out, "swn[from=S(0)] ("))
        fail_msg("--numerics full:\n%s", out);
    assert_non_null(strstr(out, "2 passed, 0 failed, 0 errors"));
    free(out);
    free(err);
}

/* A sweep's `backend:` holds from its cases' first step: with
 * --compare-backend cpu each case runs on cpu and then on its own
 * cuda-emu, and compares what both stored (on cpu alone nothing is
 * compared). */
static void test_sweep_backend_key(void **state) {
    (void)state;
    static const char text[] =
        "name: swb\nmesh: '4'\nbackend: cuda-emu\ntensors: {x: {shape: [8], init: arange}}\n"
        "sweep: {from: ['S(0)', R]}\n"
        "steps:\n  - distribute: {tensor: x, placements: $from, as: d}\n"
        "  - redistribute: {tensor: d, to: ['S(0)'], as: e}\n  - expect_full: {tensor: e, equals: "
        "x}\n";
    char *out, *err;
    const char *args[] = {"--compare-backend", "cpu"};
    assert_int_equal(run_on("sweep_backend.yaml", text, args, 2, &out, &err), 0);
    const char *m = strstr(out, "--compare-backend cpu: ");
    if (!m || atoi(m + strlen("--compare-backend cpu: ")) <= 0)
        fail_msg("nothing compared:\n%s", out);
    assert_non_null(strstr(out, "2 passed, 0 failed, 0 errors"));
    free(out);
    free(err);
}

int main(int argc, char **argv) {
    (void)argc;
    lt_test_tmpdir(g_tmpdir, sizeof g_tmpdir, argv[0], "test_sweeps.tmp");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_expansion),
        cmocka_unit_test(test_sweep_holds_no_cases),
        cmocka_unit_test(test_numerics_option_overrides_sweep_key),
        cmocka_unit_test(test_sweep_backend_key),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(g_tmpdir);
    return rc;
}
