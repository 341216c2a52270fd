/* test/test_from_local_check.c — the from_local step checks by default
 * (docs/SEMANTICS.md §11.2), seen from the reports: a failed check is a
 * FAIL (exit 1, counted as a check), never an ERROR (exit 2); the case goes
 * on with the DTensor the shards make; check: false counts no check; and
 * the C API's lt_from_local keeps its run_check argument and message.
 *
 * Runs from the repository root (as `make test` does), in-process through
 * lt_sc_main with output captured in temporary files. The scenario cases
 * are in scenarios/placements/from_local_check.yaml; the load error of
 * check: with run_check: in test/bad_scenarios/.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/testutil.h"
#include "tools/scenario/scenario.h"

static char g_tmpdir[512];

/* `localtensor run --json JSON FILE` on text written to FILE; *out and
 * *json get the text report and the JSON one (malloc; the caller frees). */
static int run_json(const char *name, const char *text, char **out, char **json) {
    char path[600], jpath[600];
    snprintf(path, sizeof path, "%s/%s", g_tmpdir, name);
    snprintf(jpath, sizeof jpath, "%s/%s.json", g_tmpdir, name);
    lt_test_write_file(path, text);
    const char *args[] = {"--json", jpath, path};
    char *err;
    int rc = lt_test_run_sc(args, 3, out, &err);
    free(err);
    *json = lt_test_slurp(jpath, NULL);
    if (!*json) fail_msg("%s: no JSON report", name);
    remove(path);
    remove(jpath);
    return rc;
}

/* Replicas that differ along R fail the step as a check: rank 0 holds
 * [1, 2, 3, 1], rank 1 [1, 2, 3, 5], so index [3] differs (1 vs 5). The case
 * goes on: the DTensor holds each rank's own shard, which expect_local
 * finds (2 checks, 1 failed). */
static void test_failed_check_is_a_fail(void **state) {
    (void)state;
    char *out, *json;
    int rc =
        run_json("differ.yaml",
                 "name: differ\nmesh: {shape: [2], names: [dp]}\nsteps:\n"
                 "  - from_local: {ranks: [[1, 2, 3, 1], [1, 2, 3, 5]], placements: [R], as: x}\n"
                 "  - expect_local: {tensor: x, ranks: [[1, 2, 3, 1], [1, 2, 3, 5]]}\n",
                 &out, &json);
    assert_int_equal(rc, 1);
    if (!strstr(out, "FAIL  ") || strstr(out, "ERROR") ||
        !strstr(out, "differ.yaml:4:5: from_local: replicas along mesh dim dp differ: ranks 0 and "
                     "1 at index [3]: "
                     "rank 0 has 1, rank 1 has 5 (declared R; a missing all_reduce? say check: "
                     "false to skip this check)") ||
        !strstr(out, "0 passed, 1 failed, 0 errors"))
        fail_msg("a failed from_local check:\n%s", out);
    if (!strstr(json, "\"checks\":2,\"checks_failed\":1") ||
        !strstr(json, "\"step\":\"from_local\"") ||
        !strstr(json, "\"rank\":1,\"index\":\"[3]\",\"expected\":\"1\",\"actual\":\"5\""))
        fail_msg("JSON of a failed from_local check:\n%s", json);
    free(out), free(json);
}

/* A from_local that passes its check counts one check; with check: false
 * (or run_check: false) it counts none. */
static void test_check_counts(void **state) {
    (void)state;
    static const char *const keys[] = {"", "check: false, ", "run_check: false, ",
                                       "run_check: true, "};
    static const char *const want[] = {"\"checks\":1,", "\"checks\":0,", "\"checks\":0,",
                                       "\"checks\":1,"};
    for (int i = 0; i < 4; i++) {
        char text[300], *out, *json;
        snprintf(
            text, sizeof text,
            "name: same\nmesh: 2x2\nsteps:\n"
            "  - from_local: {ranks: [[1], [2], [1], [2]], placements: [R, \"S(0)\"], %sas: x}\n",
            keys[i]);
        assert_int_equal(run_json("same.yaml", text, &out, &json), 0);
        if (!strstr(out, "1 passed, 0 failed, 0 errors") || !strstr(json, want[i]))
            fail_msg("'%s': wanted %s\n%s\n%s", keys[i], want[i], out, json);
        free(out), free(json);
    }
}

/* Shard sizes that contradict a declared explicit rule: S(0,[1,2]) on 2
 * ranks, shards of 2 and 1 elements. A failed check; with check: false the
 * shards' sizes win (rank 1's offset is 2). */
static void test_explicit_sizes(void **state) {
    (void)state;
    char *out, *json;
    int rc =
        run_json("sizes.yaml",
                 "name: sizes\nmesh: 2\nsteps:\n"
                 "  - from_local: {ranks: [[1, 2], [3]], placements: [\"S(0,[1,2])\"], as: x}\n"
                 "  - from_local: {ranks: [[1, 2], [3]], placements: [\"S(0,[1,2])\"], check: "
                 "false, as: y}\n"
                 "  - expect_local: {tensor: y, offsets: [[0], [2]]}\n",
                 &out, &json);
    assert_int_equal(rc, 1);
    if (!strstr(out, "sizes.yaml:4:5: from_local: shard sizes along mesh dim 0 contradict the "
                     "declared S(0,[1,2]): "
                     "the shards give S(0,[2,1]) (say check: false to take the shards' sizes)") ||
        !strstr(out, "0 passed, 1 failed, 0 errors"))
        fail_msg("contradicted explicit sizes:\n%s", out);
    if (!strstr(json, "\"checks\":2,\"checks_failed\":1") ||
        !strstr(json, "\"expected\":\"S(0,[1,2])\",\"actual\":\"S(0,[2,1])\""))
        fail_msg("JSON of contradicted explicit sizes:\n%s", json);
    free(out), free(json);
}

/* The C API is unchanged: lt_from_local(run_check = 1) returns LT_MISMATCH
 * with its own message (mesh dims by number), run_check = 0 accepts. On 2x2
 * with [S(0), R], ranks 2 and 3 (a group along mesh dim 1) hold [1, 7] and
 * [1, 8]. */
static void test_c_api(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement pl[2];
    int np;
    LT_CHECK(lt_mesh_parse("2x2", &m));
    LT_CHECK(lt_placements_parse("S(0),R", pl, 2, &np));
    lt_tensor *sh[4];
    for (int r = 0; r < 4; r++) {
        int64_t two = 2;
        LT_CHECK(lt_tensor_new(LT_F32, 1, &two, &sh[r]));
        lt_set_flat(sh[r], 0, r / 2);
        lt_set_flat(sh[r], 1, r == 3 ? 8 : 7);
    }
    lt_dtensor *d = NULL;
    LT_EXPECT_STATUS(lt_from_local(&m, sh, pl, np, 1, &d), LT_MISMATCH);
    assert_null(d);
    assert_string_equal(lt_errmsg(), "from_local run_check: replicas along mesh dim 1: ranks 2 and "
                                     "3 differ at index [1]: rank 2 has 7, rank 3 has 8");
    LT_CHECK(lt_from_local(&m, sh, pl, np, 0, &d));
    lt_dtensor_free(d);
    for (int r = 0; r < 4; r++) lt_tensor_free(sh[r]);
}

int main(int argc, char **argv) {
    (void)argc;
    lt_test_tmpdir(g_tmpdir, sizeof g_tmpdir, argv[0], "test_from_local_check.tmp");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_check_is_a_fail),
        cmocka_unit_test(test_check_counts),
        cmocka_unit_test(test_explicit_sizes),
        cmocka_unit_test(test_c_api),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(g_tmpdir);
    return rc;
}
