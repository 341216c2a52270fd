/* test/test_trace.c — `localtensor run --trace`: the op log, the comm table
 * and the per-rank bytes of the JSON report, checked against figures worked
 * out by hand for scenarios/trace/silent_replication.yaml (mesh of 2 ranks):
 *
 *   softmax(dim 0) of x (4x2 f32 = 32 bytes, S(0): 16 bytes per rank)
 *     needs dim 0 whole: one all_gather on mesh dim 0, 1 group of 2;
 *     rank j receives the other rank's 16 bytes and sends its own 16 to
 *     the other: sent [16, 16], received [16, 16]; S(0) -> R implicitly,
 *     so one "silent replication" warning.
 *   matmul (2x4 S(1)) @ (4x2 S(0)) -> P(sum): no communication.
 *   redistribute of y (2x2 f32 = 16 bytes) P(sum) -> R: one all_reduce,
 *     ring model = reduce_scatter of 8-byte halves (each rank receives 8)
 *     + all_gather (each receives the other half, 8): sent = received =
 *     8 + 8 = 16 per rank.
 *   totals: sent [32, 32], received [32, 32], 2 collectives.
 * and for its second case, uneven shards: x (5 f32) S(0) on 2 ranks holds 3
 * and 2 elements (12 and 8 bytes); softmax(dim 0) all_gathers it: rank 0
 * sends 12 and receives 8, rank 1 sends 8 and receives 12.
 *
 * Runs from the repository root, in-process through lt_sc_main.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "test/testutil.h"
#include "tools/scenario/scenario.h"

static void expect_line(const char *text, const char *want) {
    if (!strstr(text, want)) fail_msg("missing in the trace: '%s'\n--- trace:\n%s", want, text);
}

static void expect_sizes(const cJSON *arr, long a, long b) {
    assert_true(cJSON_IsArray(arr));
    assert_int_equal(cJSON_GetArraySize(arr), 2);
    assert_int_equal((long)cJSON_GetArrayItem(arr, 0)->valuedouble, a);
    assert_int_equal((long)cJSON_GetArrayItem(arr, 1)->valuedouble, b);
}

/* The uneven scenario's trace in the JSON report (scen1: its entry): one
 * all_gather of 12 and 8 bytes. */
static void expect_uneven_case(cJSON *scen1) {
    cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(scen1, "cases"), 0);
    cJSON *tr = cJSON_GetObjectItem(c, "trace");
    assert_non_null(tr);
    cJSON *ev = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(tr, "steps"), 0), "comm"), 0);
    assert_string_equal(cJSON_GetObjectItem(ev, "collective")->valuestring, "all_gather");
    expect_sizes(cJSON_GetObjectItem(ev, "bytes_sent"), 12, 8);
    expect_sizes(cJSON_GetObjectItem(ev, "bytes_recv"), 8, 12);
    cJSON *tot = cJSON_GetObjectItem(tr, "total");
    expect_sizes(cJSON_GetObjectItem(tot, "bytes_sent"), 12, 8);
    expect_sizes(cJSON_GetObjectItem(tot, "bytes_recv"), 8, 12);
}

static void test_trace_text_and_json(void **state) {
    (void)state;
    char json_path[] = "/tmp/lt_trace_XXXXXX";
    int fd = mkstemp(json_path);
    assert_true(fd >= 0);
    close(fd);
    const char *args[] = {"--trace", "--json", json_path,
                          "scenarios/trace/silent_replication.yaml"};
    char *out = NULL, *err = NULL;
    assert_int_equal(lt_test_run_sc(args, 4, &out, &err), 0);
    free(err);
    expect_line(out, "step 2  op at scenarios/trace/silent_replication.yaml:19:7\n"
                     "  softmax(xd [S(0)]) -> [R]  (rules: pytorch)\n"
                     "  implicit redistribute of input 1 'xd': [S(0)] -> [R]\n");
    expect_line(out, "  warning: silent replication: softmax replicates input 1 'xd' along mesh "
                     "dim 0 (S(0) -> R)");
    expect_line(
        out,
        "         all_gather      0         1       2          [16, 16]               [16, 16]\n");
    expect_line(out, "  matmul(ad [S(1)], bd [S(0)]) -> [P(sum)]  (rules: pytorch)\n"
                     "  comm:  none\n");
    expect_line(
        out,
        "         all_reduce      0         1       2          [16, 16]               [16, 16]\n");
    expect_line(out, "total: 2 collectives (1 all_gather, 1 all_reduce)\n"
                     "  bytes sent per rank:     [32, 32]\n"
                     "  bytes received per rank: [32, 32]\n"
                     "  1 silent replication warning\n");
    expect_line(
        out,
        "         all_gather      0         1       2          [12, 8]                [8, 12]\n"
        "total: 1 collective (1 all_gather)\n"
        "  bytes sent per rank:     [12, 8]\n"
        "  bytes received per rank: [8, 12]\n");
    FILE *f = fopen(json_path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    char *js = lt_test_slurp_fp(f);
    fclose(f);
    remove(json_path);
    cJSON *root = cJSON_Parse(js);
    assert_non_null(root);
    cJSON *scen =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "files"), 0), "scenarios");
    assert_int_equal(cJSON_GetArraySize(scen), 2);
    cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(scen, 0), "cases"), 0);
    cJSON *tr = cJSON_GetObjectItem(c, "trace");
    assert_non_null(tr);
    cJSON *steps = cJSON_GetObjectItem(tr, "steps");
    assert_int_equal(cJSON_GetArraySize(steps), 3);
    cJSON *s0 = cJSON_GetArrayItem(steps, 0), *s2 = cJSON_GetArrayItem(steps, 2);
    assert_int_equal(cJSON_GetObjectItem(s0, "step")->valueint, 2);
    cJSON *ev = cJSON_GetArrayItem(cJSON_GetObjectItem(s0, "comm"), 0);
    assert_string_equal(cJSON_GetObjectItem(ev, "collective")->valuestring, "all_gather");
    assert_int_equal(cJSON_GetObjectItem(ev, "groups")->valueint, 1);
    expect_sizes(cJSON_GetObjectItem(ev, "bytes_sent"), 16, 16);
    expect_sizes(cJSON_GetObjectItem(ev, "bytes_recv"), 16, 16);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(s0, "warnings")), 1);
    ev = cJSON_GetArrayItem(cJSON_GetObjectItem(s2, "comm"), 0);
    assert_string_equal(cJSON_GetObjectItem(ev, "collective")->valuestring, "all_reduce");
    expect_sizes(cJSON_GetObjectItem(ev, "bytes_sent"), 16, 16);
    expect_sizes(cJSON_GetObjectItem(ev, "bytes_recv"), 16, 16);
    cJSON *tot = cJSON_GetObjectItem(tr, "total");
    expect_sizes(cJSON_GetObjectItem(tot, "bytes_sent"), 32, 32);
    expect_sizes(cJSON_GetObjectItem(tot, "bytes_recv"), 32, 32);
    assert_int_equal(cJSON_GetObjectItem(tot, "silent_replications")->valueint, 1);
    expect_uneven_case(cJSON_GetArrayItem(scen, 1));
    cJSON_Delete(root);
    free(js);
    free(out);
}

/* Where PyTorch 2.15 raises on an op (squeezing a dim that a mesh dim shards:
 * its view rule refuses), the pytorch rule set still gives the correct
 * result and the trace says what PyTorch would do, with what would work. */
static void test_trace_names_pytorch_refusal(void **state) {
    (void)state;
    char path[] = "/tmp/lt_trace_refusal_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    lt_test_write_file(path, "- name: squeeze_sharded_size1\n"
                             "  mesh: 2\n"
                             "  rules: pytorch\n"
                             "  tensors:\n"
                             "    x: {shape: [2, 1], init: arange}\n"
                             "  steps:\n"
                             "    - distribute: {tensor: x, placements: [\"S(1)\"], as: xd}\n"
                             "    - op: {op: squeeze, inputs: [xd], dim: 1, as: y}\n"
                             "    - expect_full: {tensor: y, values: [0, 1]}\n");
    const char *args[] = {"--trace", path};
    char *out = NULL, *err = NULL;
    int rc = lt_test_run_sc(args, 2, &out, &err);
    remove(path);
    if (rc != 0) fail_msg("exit %d:\n%s%s", rc, out, err);
    expect_line(out, "  note: PyTorch 2.15 refuses this: squeeze removes dim 1, sharded on mesh "
                     "dim 0; redistribute that mesh dim to Replicate first\n");
    free(out);
    free(err);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_trace_text_and_json),
                                       cmocka_unit_test(test_trace_names_pytorch_refusal)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
