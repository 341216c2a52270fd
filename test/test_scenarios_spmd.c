/* test/test_scenarios_spmd.c — per-rank programs in scenario files
 * (docs/SEMANTICS.md §12) seen from the reports: a would-hang report of each
 * kind told at the call it is about, once no rank can run, and whole in the
 * JUnit report, as data in the JSON one; a finished rank placed after the
 * last step it ran; an expect_error the stop kept every rank from reaching
 * named with where they stopped; an expect_error expecting a hang too early
 * says which ranks still run; a check that fails while a rank catches up is
 * recorded; and "produced by" names the step that made each rank's shard.
 *
 * Runs from the repository root (as `make test` does), in-process through
 * lt_sc_main with output captured in temporary files. The scenario
 * library's own per-rank files are in scenarios/spmd/ and scenarios/bugs/.
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

/* A check that fails while a rank catches up is recorded, and the rank goes
 * on with its steps (values by hand: s = 0 + 1 + 2 = 3 on ranks 0-1, t = 6,
 * u = 0 + 1 + 2 = 3 everywhere); nothing is replayed twice. */
static void test_failed_check_while_catching_up(void **state) {
    (void)state;
    char path[600], *out, *err;
    tmp_path(path, sizeof path, "catchup_check.yaml");
    const char *args[] = {path};
    lt_test_write_file(path,
               "name: catchup_check\nmesh: 3\nsteps:\n"
               "  - local_tensor: {shape: [1], values: 'rank', as: a}\n"
               "  - collective: {kind: all_reduce, mesh_dim: 0, tensor: a, as: s}\n"
               "    ranks: [0, 1]\n"
               "  - expect_local: {tensor: s, ranks: {0: [99]}}\n"   /* line 7: wrong on purpose */
               "    ranks: [0]\n"
               "  - local_op: {op: mul_scalar, inputs: s, scalar: 2, as: t}\n"
               "    ranks: [0, 1]\n"
               "  - collective: {kind: all_reduce, mesh_dim: 0, tensor: a, as: s}\n"
               "    ranks: [2]\n"
               "  - expect_local: {tensor: t, ranks: {0: [6], 1: [6]}}\n"
               "  - collective: {kind: all_reduce, mesh_dim: 0, tensor: a, as: u}\n"
               "  - expect_local: {tensor: u, ranks: [[3], [3], [3]]}\n");
    assert_int_equal(lt_test_run_sc(args, 1, &out, &err), 1);
    if (!strstr(out, "catchup_check.yaml:7:5: expect_local of 's': rank 0 (coord [0]): index [0]: "
                     "expected 99, actual 3"))
        fail_msg("the failed check is not reported:\n%s", out);
    if (!strstr(out, "0 passed, 1 failed, 0 errors"))
        fail_msg("another failure than the check's:\n%s", out);
    if (strstr(out, "would hang") || strstr(out, "placeholder"))
        fail_msg("a step ran twice or not at all:\n%s", out);
    free(out);
    free(err);
    remove(path);
}

/* "produced by" under a failed expect_local names the step that made that
 * rank's shard: a rank that skipped a step keeps its older shard and its
 * origin; a waiting rank's result comes from its own call, also when the
 * step that completed it (another rank's) stores under the same name. */
static void test_per_rank_origin(void **state) {
    (void)state;
    char path[600], *out, *err;
    tmp_path(path, sizeof path, "origin.yaml");
    const char *args[] = {path};
    lt_test_write_file(
        path, "name: origin\nmesh: 2\nsteps:\n"
              "  - local_tensor: {shape: [1], values: 'rank', as: t}\n" /* line 4 */
              "  - local_op: {op: mul_scalar, inputs: t, scalar: 2, as: t}\n" /* line 5 */
              "    ranks: [0]\n"
              "  - expect_local: {tensor: t, ranks: {1: [5]}}\n" /* line 7: rank 1 holds 1 */
              "  - collective: {kind: all_reduce, mesh_dim: 0, tensor: t, as: s}\n" /* line 8 */
              "    ranks: [0]\n"
              "  - collective: {kind: all_reduce, mesh_dim: 0, tensor: t, as: s}\n" /* line 10 */
              "    ranks: [1]\n"
              "  - expect_local: {tensor: s, ranks: {0: [9]}}\n"); /* line 12: 0 + 1 = 1 */
    assert_int_equal(lt_test_run_sc(args, 1, &out, &err), 1);
    const char *want[] = {
        ":7:5: expect_local of 't': rank 1 (coord [1]): index [0]: expected 5, actual 1",
        "produced by: local_tensor at ",   /* not the local_op rank 1 skipped */
        ":12:5: expect_local of 's': rank 0 (coord [0]): index [0]: expected 9, actual 1",
        "origin.yaml:8:5\n"};              /* rank 0's own call, not rank 1's at line 10 */
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(out, want[i])) fail_msg("output lacks '%s':\n%s", want[i], out);
    if (strstr(out, "local_op mul_scalar at") || strstr(out, "origin.yaml:10:5\n"))
        fail_msg("an origin names a step that did not make that rank's shard:\n%s", out);
    free(out);
    free(err);
    /* the waiting call made inside an expect_error: its origin is the wrapped
     * step (line 6, col 7), not the expect_error (line 5) */
    lt_test_write_file(
        path, "name: origin2\nmesh: 2\nsteps:\n"
              "  - local_tensor: {shape: [1], values: 'rank', as: a}\n"
              "  - expect_error:\n" /* line 5 */
              "      collective: {kind: all_reduce, mesh_dim: 0, tensor: a, as: s}\n" /* line 6 */
              "      ranks: [0]\n"
              "      hang: missing\n"
              "  - collective: {kind: all_reduce, mesh_dim: 0, tensor: a, as: s}\n" /* line 9 */
              "    ranks: [1]\n"
              "  - expect_local: {tensor: s, ranks: {0: [99]}}\n");
    assert_int_equal(lt_test_run_sc(args, 1, &out, &err), 1);
    if (!strstr(out, "produced by: collective all_reduce at ") || !strstr(out, "origin.yaml:6:7\n"))
        fail_msg("rank 0's origin is not its own wrapped call:\n%s", out);
    free(out);
    free(err);
    remove(path);
}

/* An expect_error expecting a hang at a step after which some ranks still
 * run fails saying which ranks run on (not "would not hang"); the report
 * itself comes once those ranks reach the end (docs/SEMANTICS.md §12). A
 * collective on a DTensor reached while rank 0 waits is each rank's own
 * call: rank 1's all_gather is call #1 of group [0,1], a mismatch. */
static void test_hang_expected_while_ranks_run(void **state) {
    (void)state;
    char path[600], *out, *err;
    tmp_path(path, sizeof path, "hang_early.yaml");
    const char *args[] = {path};
    lt_test_write_file(
        path,
        "name: hang_early\nmesh: {shape: [2, 2], names: [dp, tp]}\ntensors: {x: {shape: "
        "[4]}}\nsteps:\n"
        "  - distribute: {tensor: x, placements: [R, 'S(0)'], as: xd}\n"
        "  - local_tensor: {shape: [1], values: 'rank', as: a}\n"
        "  - collective: {kind: all_reduce, mesh_dim: tp, tensor: a, as: s}\n" /* line 7 */
        "    ranks: [0, 2, 3]\n"
        "  - expect_error:\n" /* line 9 */
        "      collective: {kind: all_gather, mesh_dim: tp, tensor: xd, as: g}\n" /* line 10 */
        "      hang: missing\n");
    assert_int_equal(lt_test_run_sc(args, 1, &out, &err), 1);
    if (!strstr(out, "hang_early.yaml:9:5: expect_error: the per-rank program did not stop at "
                     "collective: ranks 2, 3 "
                     "still run"))
        fail_msg("the early expect_error does not say which ranks run on:\n%s", out);
    if (!strstr(out, "hang_early.yaml:7:5: would hang (mismatch): on mesh dim 1 (tp), group 0 "
                     "[0,1], call #1: rank 0 "
                     "calls all_reduce(op=sum) f32 (1)") ||
        !strstr(out, "but rank 1 calls all_gather(dim=0) f32 (2)"))
        fail_msg("the report at the end is not the mismatch of call #1:\n%s", out);
    free(out);
    free(err);
    remove(path);
}

/* A per-rank program that would hang fails its case (exit 1) with the
 * would-hang report, told at the call it is about; the kinds of
 * docs/SEMANTICS.md §12, each once no rank can run. */
static void test_would_hang(void **state) {
    (void)state;
    char path[600], *out, *err;
    tmp_path(path, sizeof path, "hang.yaml");
    const char *args[] = {path};
    lt_test_write_file(path,
               "- name: missing\n  mesh: {shape: [2, 2], names: [dp, tp]}\n  steps:\n"
               "    - local_tensor: {shape: [1], values: 'rank', as: a}\n"
               "    - collective: {kind: all_reduce, mesh_dim: tp, tensor: a, as: s}\n"
               "      when: 'rank != 3'\n"
               "    - local_op: {op: neg, inputs: a, as: b}\n"
               "- name: cycle\n  mesh: {shape: [2, 2], names: [dp, tp]}\n  steps:\n"
               "    - local_tensor: {shape: [1], values: 'rank', as: a}\n"
               "    - collective: {kind: barrier, mesh_dim: dp}\n"
               "      when: 'dp == tp'\n"
               "    - collective: {kind: barrier, mesh_dim: tp}\n"
               "      when: 'dp != tp'\n"
               "    - expect_local: {tensor: a, ranks: [[5], [5], [5], [5]]}\n"
               "- name: mismatch_then_global\n  mesh: 2\n  tensors: {x: {shape: [2]}}\n  steps:\n"
               "    - local_tensor: {shape: [rank + 1], values: 'i', as: a}\n"
               "    - collective: {kind: all_reduce, mesh_dim: 0, tensor: a, as: s}\n"
               "    - distribute: {tensor: x, placements: [R], as: xd}\n"
               "- name: missing_at_global_step\n  mesh: 2\n  tensors: {x: {shape: [2]}}\n  steps:\n"
               "    - collective: {kind: barrier, mesh_dim: 0}\n"
               "      ranks: [1]\n"
               "    - distribute: {tensor: x, placements: [R], as: xd}\n");
    assert_int_equal(lt_test_run_sc(args, 1, &out, &err), 1);
    const char *want[] = {
        /* rank 3 skipped the tp sum; the local_op still ran on rank 3 */
        ":5:7: would hang (missing): on mesh dim 1 (tp), group 1 [2,3], call #1: rank 2 waits in "
        "all_reduce(op=sum) f32 (1) at ",
        "but rank 3 finished without making that call",
        /* the cycle is known once no rank runs (the second barrier, before the
         * check); it is told at the call of its first rank, rank 0's barrier */
        ":12:7: would hang (cycle): every rank waits for another: rank 0 waits in barrier at ",
        /* shapes (1) and (2) disagree: known at the collective itself */
        ":22:7: would hang (mismatch): on mesh dim 0, group 0 [0,1], call #1: ",
        "the shapes differ",
        /* rank 0 reaches distribute, which rank 1 never can: the program ends
         * there, and the report is told at rank 1's barrier */
        ":28:7: would hang (missing): on mesh dim 0, group 0 [0,1], call #1: rank 1 waits in "
        "barrier at ",
        "hang.yaml:28, but rank 0 finished without making that call",
        /* and it says where the running rank stopped (the distribute, line 30) */
        "  the running ranks stopped at distribute at ",
        "hang.yaml:30:7 (every rank runs that step together: a rank that waits or failed never "
        "reaches it)",
        "0 passed, 4 failed, 0 errors"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(out, want[i])) fail_msg("output lacks '%s':\n%s", want[i], out);
    if (strstr(out, "expect_local"))
        fail_msg("a check ran after the per-rank program stopped:\n%s", out);
    free(out);
    free(err);
    /* JUnit: a report's lines survive in the failure's message attribute
     * (raw newlines there would be read as spaces) */
    char junit[700];
    snprintf(junit, sizeof junit, "%s/hang.xml", g_tmpdir);
    const char *args2[] = {"--junit", junit, path};
    assert_int_equal(lt_test_run_sc(args2, 3, &out, &err), 1);
    char *xt = lt_test_slurp(junit, NULL);
    assert_non_null(xt);
    const char *msg = strstr(xt, "<failure type=\"check\" message=\"would hang (missing)");
    const char *close = msg ? strchr(msg + 40, '"') : NULL;
    if (!msg || !close) fail_msg("no would-hang failure in the JUnit report:\n%s", xt);
    const char *nl = strstr(msg, "&#10;  mesh dim 1 (tp), group 1 [2,3], call #1:&#10;");
    if (!nl || nl > close || memchr(msg, '\n', (size_t)(close - msg)))
        fail_msg("the failure's message attribute does not keep the report's lines:\n%s", xt);
    free(xt);
    free(out);
    free(err);
    remove(junit);
    remove(path);
}

/* The "hang" object of the first failure of the first case of --json's
 * report (unformatted, caller frees), its "message" into *msg (caller frees). */
static char *hang_json(const char *json_path, char **msg) {
    char *text = lt_test_slurp(json_path, NULL);
    assert_non_null(text);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "files"), 0);
    cJSON *sc = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(f, "scenarios"), 0);
    cJSON *cs = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sc, "cases"), 0);
    cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cs, "failures"), 0);
    cJSON *h = cJSON_GetObjectItemCaseSensitive(x, "hang"),
          *m = cJSON_GetObjectItemCaseSensitive(x, "message");
    if (!h || !cJSON_IsString(m)) fail_msg("no failure with a hang object and a message");
    char *out = cJSON_PrintUnformatted(h);
    *msg = strdup(m->valuestring);
    cJSON_Delete(j);
    return out;
}

/* A finished rank is placed after the last step it ran: not a step limited
 * to other ranks, nor one whose `when:` (read as it runs) is false there; a
 * rank whose call completes later counts the steps it then catches up with.
 * By hand: rank 2 runs lines 4, 5, 6 (rows(v) = 3 > 1), 10 (ranks 0, 1 wait
 * in their sum of line 8) and 12, whose sum completes theirs; ranks 0, 1
 * then catch up line 10 (line 12 is rank 2's only). Rank 0 sums again at
 * line 14, alone; rank 1 runs line 16 (rows(v) = 2), rank 2 does not (3).
 * --json gives the same report as data. */
static void test_finished_after_last_step(void **state) {
    (void)state;
    char path[600], json[700], *out, *err;
    tmp_path(path, sizeof path, "last_step.yaml");
    snprintf(json, sizeof json, "%s/last_step.json", g_tmpdir);
    lt_test_write_file(
        path, "name: last_step\nmesh: 3\nsteps:\n"
              "  - local_tensor: {shape: [1], values: 'rank', as: a}\n" /* line 4 */
              "  - local_tensor: {shape: ['rank + 1'], values: 'i', as: v}\n" /* line 5 */
              "  - local_op: {op: neg, inputs: a, as: b}\n" /* line 6 */
              "    when: 'rows(v) > 1'\n"
              "  - collective: {kind: all_reduce, mesh_dim: 0, tensor: a, as: s}\n" /* line 8 */
              "    ranks: [0, 1]\n"
              "  - local_op: {op: neg, inputs: a, as: c}\n" /* line 10 */
              "    ranks: [0, 1, 2]\n"
              "  - collective: {kind: all_reduce, mesh_dim: 0, tensor: a, as: s}\n" /* line 12 */
              "    ranks: [2]\n"
              "  - collective: {kind: all_reduce, mesh_dim: 0, tensor: a, as: u}\n" /* line 14 */
              "    ranks: [0]\n"
              "  - local_op: {op: neg, inputs: a, as: d}\n" /* line 16 */
              "    when: 'rows(v) == 2'\n");
    const char *args[] = {"--json", json, path};
    assert_int_equal(lt_test_run_sc(args, 3, &out, &err), 1);
    char want[8192];
    snprintf(
        want, sizeof want,
        "%s:14:5: would hang (missing): on mesh dim 0, group 0 [0,1,2], call #2: rank 0 waits in "
        "all_reduce(op=sum) f32 (1) at %s:14, but rank 1 finished without making that call "
        "(waiting: rank 0; "
        "ended: ranks 1, 2) (docs/SEMANTICS.md §12)\n"
        "  mesh dim 0, group 0 [0,1,2], call #2:\n"
        "    rank 0: waiting in all_reduce(op=sum) f32 (1) at %s:14\n"
        "    rank 1: finished after its last step at %s:16\n"
        "    rank 2: finished after its last step at %s:12\n",
        path, path, path, path, path);
    if (!strstr(out, want)) fail_msg("output lacks\n%s\n--- in:\n%s", want, out);
    char *msg, *h = hang_json(json, &msg);
    snprintf(want, sizeof want,
             "{\"kind\":\"missing\",\"groups\":[{\"mesh_dim\":0,\"mesh_dim_name\":null,\"group\":0,"
             "\"ranks\":[0,1,2],\"call\":2,\"members\":["
             "{\"rank\":0,\"state\":\"waiting\",\"call\":\"all_reduce(op=sum) f32 "
             "(1)\",\"at\":\"%s:14\"},"
             "{\"rank\":1,\"state\":\"finished\",\"at\":\"%s:16\"},"
             "{\"rank\":2,\"state\":\"finished\",\"at\":\"%s:12\"}]}]}",
             path, path, path);
    assert_string_equal(h, want);
    /* the message keeps the text */
    const char *head = "would hang (missing): on mesh dim 0, group 0 [0,1,2], call #2: ";
    if (strncmp(msg, head, strlen(head)) ||
        !strstr(msg, "\n    rank 2: finished after its last step at "))
        fail_msg("the message is not the report's text:\n%s", msg);
    cJSON_free(h);
    free(msg);
    free(out);
    free(err);
    remove(json);
    remove(path);
}

/* An expect_error with hang: after the step where the per-rank program
 * stopped is never reached (the case ends there): the failure says so,
 * naming where every rank stopped, then gives the report. By hand: a 2x2
 * cycle at step 2 (ranks 0, 3 wait on dp at line 4, ranks 1, 2 on tp at
 * line 6; expect_error at step 4, line 9); a rank that fails (rank 1's
 * reshape of 2 values into 3, line 7) while rank 0 waits (line 5); a
 * mismatch where both wait at one line (line 5). */
static void test_expect_error_not_reached(void **state) {
    (void)state;
    char path[600], json[700], *out, *err;
    snprintf(json, sizeof json, "%s/unreached.json", g_tmpdir);
    tmp_path(path, sizeof path, "unreached.yaml");
    lt_test_write_file(path, "name: cycle_first\nmesh: {shape: [2, 2], names: [dp, tp]}\nsteps:\n"
                             "  - collective: {kind: barrier, mesh_dim: dp}\n" /* line 4 */
                             "    ranks: [0, 3]\n"
                             "  - collective: {kind: barrier, mesh_dim: tp}\n" /* line 6 */
                             "    ranks: [1, 2]\n"
                             "  - local_tensor: {shape: [1], values: 'rank', as: a}\n" /* line 8 */
                             "  - expect_error:\n" /* line 9 */
                             "      hang: cycle\n");
    const char *args[] = {"--json", json, path};
    assert_int_equal(lt_test_run_sc(args, 3, &out, &err), 1);
    char want[8192];
    snprintf(want, sizeof want,
             "%s:4:5: expect_error at %s:9:5 not reached: every rank blocked at %s:4 (ranks 0, 3) "
             "and %s:6 (ranks 1, 2)\n"
             "  would hang (cycle): every rank waits for another: rank 0 waits in barrier at %s:4 "
             "on mesh dim 0 (dp), "
             "group 0 [0,2] for rank 2; ",
             path, path, path, path, path);
    if (!strstr(out, want)) fail_msg("output lacks\n%s\n--- in:\n%s", want, out);
    char *msg, *h = hang_json(json, &msg);
    snprintf(want, sizeof want,
             "{\"kind\":\"cycle\",\"groups\":["
             "{\"mesh_dim\":0,\"mesh_dim_name\":\"dp\",\"group\":0,\"ranks\":[0,2],\"call\":1,"
             "\"members\":["
             "{\"rank\":0,\"state\":\"waiting\",\"call\":\"barrier\",\"at\":\"%s:4\"},"
             "{\"rank\":2,\"state\":\"waiting_elsewhere\",\"call\":\"barrier\",\"at\":\"%s:6\","
             "\"mesh_dim\":1,\"group\":1}]},"
             "{\"mesh_dim\":0,\"mesh_dim_name\":\"dp\",\"group\":1,\"ranks\":[1,3],\"call\":1,"
             "\"members\":["
             "{\"rank\":1,\"state\":\"waiting_elsewhere\",\"call\":\"barrier\",\"at\":\"%s:6\","
             "\"mesh_dim\":1,\"group\":0},"
             "{\"rank\":3,\"state\":\"waiting\",\"call\":\"barrier\",\"at\":\"%s:4\"}]},"
             "{\"mesh_dim\":1,\"mesh_dim_name\":\"tp\",\"group\":0,\"ranks\":[0,1],\"call\":1,"
             "\"members\":["
             "{\"rank\":0,\"state\":\"waiting_elsewhere\",\"call\":\"barrier\",\"at\":\"%s:4\","
             "\"mesh_dim\":0,\"group\":0},"
             "{\"rank\":1,\"state\":\"waiting\",\"call\":\"barrier\",\"at\":\"%s:6\"}]},"
             "{\"mesh_dim\":1,\"mesh_dim_name\":\"tp\",\"group\":1,\"ranks\":[2,3],\"call\":1,"
             "\"members\":["
             "{\"rank\":2,\"state\":\"waiting\",\"call\":\"barrier\",\"at\":\"%s:6\"},"
             "{\"rank\":3,\"state\":\"waiting_elsewhere\",\"call\":\"barrier\",\"at\":\"%s:4\","
             "\"mesh_dim\":0,\"group\":1}]}],"
             "\"cycle\":[0,2,3,1]}",
             path, path, path, path, path, path, path, path);
    assert_string_equal(h, want);
    if (strncmp(msg, "expect_error at ", 16))
        fail_msg("the message is not the failure's text:\n%s", msg);
    cJSON_free(h);
    free(msg);
    free(out);
    free(err);
    remove(json);
    remove(path);
}

/* An expect_error not reached: a failed rank and a waiting one; then two
 * ranks waiting at one line. */
static void test_expect_error_not_reached_failed(void **state) {
    (void)state;
    char path[600], json[700], *out, *err;
    snprintf(json, sizeof json, "%s/unreached.json", g_tmpdir);
    tmp_path(path, sizeof path, "unreached.yaml");
    const char *args[] = {"--json", json, path};
    char want[8192], *msg, *h;
    /* a failed rank and a waiting one; then two ranks waiting at one line */
    lt_test_write_file(
        path, "- name: failed_first\n  mesh: 2\n  steps:\n"
              "    - local_tensor: {shape: [2], values: 'i', as: a}\n" /* line 4 */
              "    - collective: {kind: all_reduce, mesh_dim: 0, tensor: a, as: s}\n" /* line 5 */
              "      ranks: [0]\n"
              "    - local_op: {op: reshape, inputs: a, shape: [3], as: b}\n" /* line 7 */
              "      ranks: [1]\n"
              "    - local_tensor: {shape: [1], values: 'rank', as: c}\n" /* line 9 */
              "    - expect_error: {hang: rank_failed}\n" /* line 10 */
              "- name: mismatch_first\n  mesh: 2\n  steps:\n"
              "    - local_tensor: {shape: ['rank + 1'], values: 'i', as: a}\n" /* line 14 */
              "    - collective: {kind: all_reduce, mesh_dim: 0, tensor: a, as: s}\n" /* line 15 */
              "    - local_op: {op: neg, inputs: a, as: b}\n" /* line 16 */
              "    - expect_error: {hang: mismatch}\n"); /* line 17 */
    assert_int_equal(lt_test_run_sc(args, 3, &out, &err), 1);
    char w1[4096], w2[4096];
    snprintf(w1, sizeof w1,
             "%s:7:7: expect_error at %s:10:7 not reached: every rank blocked or failed at %s:5 "
             "(rank 0 blocked) and %s:7 (rank 1 failed)\n  rank 1 failed (shape mismatch): ",
             path, path, path, path);
    snprintf(w2, sizeof w2,
             "%s:15:7: expect_error at %s:17:7 not reached: every rank blocked at %s:15\n"
             "  would hang (mismatch): on mesh dim 0, group 0 [0,1], call #1: rank 0 calls "
             "all_reduce(op=sum) f32 (1) "
             "at %s:15 but rank 1 calls all_reduce(op=sum) f32 (2) at %s:15: the shapes differ "
             "((1) vs (2))",
             path, path, path, path, path);
    if (!strstr(out, w1) || !strstr(out, w2))
        fail_msg("output lacks\n%s\nor\n%s\n--- in:\n%s", w1, w2, out);
    h = hang_json(json, &msg);
    snprintf(
        want, sizeof want,
        "{\"kind\":\"rank_failed\",\"groups\":[{\"mesh_dim\":0,\"mesh_dim_name\":null,\"group\":0,"
        "\"ranks\":[0,1],\"call\":1,\"members\":["
        "{\"rank\":0,\"state\":\"waiting\",\"call\":\"all_reduce(op=sum) f32 "
        "(2)\",\"at\":\"%s:5\"},"
        "{\"rank\":1,\"state\":\"failed\",\"status\":\"shape\"}]}]}",
        path);
    assert_string_equal(h, want);
    cJSON_free(h);
    free(msg);
    free(out);
    free(err);
    remove(json);
    remove(path);
}

/* An expect_error that is reached but expects another kind of hang. */
static void test_expect_error_wrong_kind(void **state) {
    (void)state;
    char path[600], json[700], *out, *err;
    snprintf(json, sizeof json, "%s/unreached.json", g_tmpdir);
    tmp_path(path, sizeof path, "unreached.yaml");
    const char *args[] = {"--json", json, path};
    char want[8192], *msg, *h;
    /* an expect_error that is reached but expects another kind: its failure
     * carries the report it judged (rank 1 ran line 4, then skipped the sum) */
    lt_test_write_file(
        path, "name: wrong_kind\nmesh: 2\nsteps:\n"
              "  - local_tensor: {shape: [1], values: 'rank', as: a}\n" /* line 4 */
              "  - collective: {kind: all_reduce, mesh_dim: 0, tensor: a, as: s}\n" /* line 5 */
              "    ranks: [0]\n"
              "  - expect_error: {hang: cycle}\n"); /* line 7 */
    assert_int_equal(lt_test_run_sc(args, 3, &out, &err), 1);
    h = hang_json(json, &msg);
    snprintf(want, sizeof want,
             "{\"kind\":\"missing\",\"groups\":[{\"mesh_dim\":0,\"mesh_dim_name\":null,\"group\":0,"
             "\"ranks\":[0,1],\"call\":1,\"members\":["
             "{\"rank\":0,\"state\":\"waiting\",\"call\":\"all_reduce(op=sum) f32 "
             "(1)\",\"at\":\"%s:5\"},"
             "{\"rank\":1,\"state\":\"finished\",\"at\":\"%s:4\"}]}]}",
             path, path);
    assert_string_equal(h, want);
    const char *judged = "expect_error: the per-rank program failed with 'would hang (missing)";
    if (strncmp(msg, judged, strlen(judged)))
        fail_msg("the message is not the expect_error's:\n%s", msg);
    cJSON_free(h);
    free(msg);
    free(out);
    free(err);
    remove(json);
    remove(path);
}

int main(int argc, char **argv) {
    (void)argc;
    lt_test_tmpdir(g_tmpdir, sizeof g_tmpdir, argv[0], "test_scenarios_spmd.tmp");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_would_hang),
        cmocka_unit_test(test_finished_after_last_step),
        cmocka_unit_test(test_expect_error_not_reached),
        cmocka_unit_test(test_expect_error_not_reached_failed),
        cmocka_unit_test(test_expect_error_wrong_kind),
        cmocka_unit_test(test_failed_check_while_catching_up),
        cmocka_unit_test(test_hang_expected_while_ranks_run),
        cmocka_unit_test(test_per_rank_origin),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(g_tmpdir);
    return rc;
}
