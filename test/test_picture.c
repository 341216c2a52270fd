/* test/test_picture.c — the pictures (tools/picture/picture.h): which ranks
 * each drawn block names, the notes under a picture, the summary of 3-D
 * tensors, the terminal's per-shard view, and the Chrome Trace Event JSON of
 * a run (the fields the format requires, flows joining a matched call,
 * instant events for a would-hang report and a divergence).
 *
 * Expected holders come from the chunk rule of docs/SEMANTICS.md §2 worked
 * by hand in each test's comment, never from the code's own output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "test/testutil.h"
#include "tools/picture/picture.h"

static char g_dir[1024];

/* The SVG of a layout (malloc; the caller frees). */
static char *svg_of(const char *mesh_s, const char *pls, int ndim, const int64_t *shape) {
    lt_mesh m;
    lt_placement pl[LT_MESH_MAX_DIMS], norm[LT_MESH_MAX_DIMS];
    int np;
    LT_CHECK(lt_mesh_parse(mesh_s, &m));
    LT_CHECK(lt_placements_parse(pls, pl, LT_MESH_MAX_DIMS, &np));
    LT_CHECK(lt_placements_check(&m, ndim, pl, np, norm));
    lt_pic_layout lay = {&m, ndim, shape, norm};
    FILE *f = tmpfile();
    assert_non_null(f);
    LT_CHECK(lt_picture_svg(f, &lay, "t", 1));
    char *s = lt_test_slurp_fp(f);
    fclose(f);
    return s;
}

/* The data-owners of every block, in drawing order, joined by '|'. */
static void owners(const char *svg, char *buf, size_t n) {
    const char *p = svg, *key = "class=\"lt-block\" data-owners=\"";
    buf[0] = '\0';
    while ((p = strstr(p, key))) {
        p += strlen(key);
        const char *q = strchr(p, '"');
        assert_non_null(q);
        size_t used = strlen(buf);
        snprintf(buf + used, n - used, "%s%.*s", used ? "|" : "", (int)(q - p), p);
        p = q;
    }
}

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

/* 6x5 on 2x2, [S(0), S(1)]: rows split 3/3 by mesh dim 0, cols 3/2 by mesh
 * dim 1: rank 0 (0,0) top left, 1 top right, 2 bottom left, 3 bottom right. */
static void test_svg_2d_grid(void **state) {
    (void)state;
    int64_t shape[] = {6, 5};
    char *s = svg_of("2x2", "S(0),S(1)", 2, shape);
    char o[256];
    owners(s, o, sizeof o);
    assert_string_equal(o, "0|1|2|3");
    assert_non_null(strstr(s, "at mesh coordinate (1,0)")); /* rank 2's legend row */
    assert_int_equal(count(s, "class=\"lt-legend\""), 4);
    assert_non_null(strstr(s, "xmlns=\"http://www.w3.org/2000/svg\""));
    assert_null(strstr(s, "empty shards"));
    free(s);
}

/* 10 over 4 ranks, SS(0,2): pieces 0-4 and 5-9, each chunked 2,2,1,0 ->
 * rank 0 holds 0-1 and 5-6, rank 1 2-3 and 7-8, rank 2 4 and 9; rank 3 none. */
static void test_svg_strided(void **state) {
    (void)state;
    int64_t shape[] = {10};
    char *s = svg_of("4", "SS(0,2)", 1, shape);
    char o[256];
    owners(s, o, sizeof o);
    assert_string_equal(o, "0|1|2|0|1|2");
    assert_non_null(strstr(s, "empty shards (zero-size): 3<"));
    free(s);
}

/* 4x4 on 2x2, [P(sum), S(1)]: cols 0-1 held by ranks 0 and 2, 2-3 by 1 and
 * 3 (mesh dim 0 holds contributions): hatched, the op named. */
static void test_svg_partial(void **state) {
    (void)state;
    int64_t shape[] = {4, 4};
    char *s = svg_of("2x2", "P(sum),S(1)", 2, shape);
    char o[256];
    owners(s, o, sizeof o);
    assert_string_equal(o, "0,2|1,3");
    assert_non_null(strstr(s, "<pattern id=\"lt-hatch-"));
    assert_non_null(strstr(s, "P(sum) on mesh dim 0"));
    assert_non_null(strstr(s, "(replicas)"));
    free(s);
}

static void test_svg_replicate(void **state) {
    (void)state;
    int64_t shape[] = {8};
    char *s = svg_of("4", "R", 1, shape);
    char o[256];
    owners(s, o, sizeof o);
    assert_string_equal(o, "all 4");
    assert_non_null(strstr(s, "replicated everywhere"));
    free(s);
}

/* 1000 over 64 ranks: 64 runs of 16 (the last 8) -> more than 32 blocks:
 * cut evenly into 32 blocks of 32; block b starts at 32b, held by rank 2b. */
static void test_svg_sampled(void **state) {
    (void)state;
    int64_t shape[] = {1000};
    char *s = svg_of("64", "S(0)", 1, shape);
    assert_int_equal(count(s, "class=\"lt-block\""), 32);
    assert_non_null(strstr(s, "sampled:"));
    char o[1024];
    owners(s, o, sizeof o);
    assert_true(!strncmp(o, "0|2|4|6|", 8));
    assert_non_null(strstr(o, "|62"));
    free(s);
}

/* 4x6x3 on 2x2x2, [S(0), R, S(2)]: no grid; dim 2 (3) splits 2/1, so ranks
 * with mesh coordinate 0 on dim 2 (0,2,4,6) hold (2,6,2) = 24 of 72
 * elements, the others (2,6,1) = 12 of 72. */
static void test_svg_3d_summary(void **state) {
    (void)state;
    int64_t shape[] = {4, 6, 3};
    char *s = svg_of("2x2x2", "S(0),R,S(2)", 3, shape);
    assert_non_null(strstr(s, "who holds what fraction"));
    assert_non_null(strstr(s, "4 ranks (0..6): local shape (2, 6, 2), 33.33% of the tensor each"));
    assert_non_null(strstr(s, "4 ranks (1..7): local shape (2, 6, 1), 16.67% of the tensor each"));
    assert_non_null(strstr(s, "the ranks along it hold the same values"));
    assert_int_equal(count(s, "<svg"), 1);
    free(s);
}

/* 10 over 8 ranks: chunks of 2 -> ranks 0-4 hold 2, ranks 5-7 none. */
static void test_shard_summary(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("8", &m));
    lt_placement pl = lt_shard(0);
    int64_t shape[] = {10};
    lt_pic_layout lay = {&m, 1, shape, &pl};
    FILE *f = tmpfile();
    LT_CHECK(lt_picture_shard_summary(f, &lay, 12));
    char *s = lt_test_slurp_fp(f);
    fclose(f);
    assert_string_equal(s, "  5 ranks (first 0, last 4): local shape (2), 20% of the tensor each\n"
                           "  3 ranks (first 5, last 7): local shape (0), 0% of the tensor each\n");
    free(s);
}

static lt_status write_nothing(FILE *f, void *ctx) {
    (void)ctx;
    fputs("x", f);
    return LT_OK;
}

static void test_write_file_error(void **state) {
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/no/such/dir/x.svg", g_dir);
    LT_EXPECT_STATUS(lt_picture_write_file(path, "--svg", write_nothing, NULL), LT_IO);
    assert_non_null(strstr(lt_errmsg(), "--svg"));
    assert_non_null(strstr(lt_errmsg(), "x.svg"));
}

/* ---- the timeline ------------------------------------------------------------------------ */

/* A report of one case on 4 ranks (mesh dim 0 of 4): step 1 an all_reduce,
 * step 2 an op; its failures a would-hang report (ranks 0-2 waiting, 3
 * finished) and a divergence at step 2's line. */
static const char *const report_text =
    "{\"files\":[{\"path\":\"a.yaml\",\"scenarios\":[{\"name\":\"s\",\"cases\":[{\"name\":\"s\","
    "\"status\":\"failed\",\"failures\":["
    "{\"file\":\"a.yaml\",\"line\":9,\"col\":7,\"message\":\"would "
    "hang\",\"hang\":{\"kind\":\"missing\","
    "\"groups\":[{\"mesh_dim\":0,\"members\":["
    "{\"rank\":0,\"state\":\"waiting\",\"call\":\"all_reduce\",\"at\":\"a.yaml:9\"},"
    "{\"rank\":1,\"state\":\"waiting\",\"call\":\"all_reduce\",\"at\":\"a.yaml:9\"},"
    "{\"rank\":2,\"state\":\"waiting\",\"call\":\"all_reduce\",\"at\":\"a.yaml:9\"},"
    "{\"rank\":3,\"state\":\"finished\",\"at\":\"a.yaml:8\"}]}]}},"
    "{\"file\":\"a.yaml\",\"line\":6,\"col\":7,\"rank\":1,\"message\":\"first divergence from the "
    "single-device "
    "program at step 2\"}],"
    "\"redistributes\":[],\"trace\":{\"steps\":["
    "{\"step\":1,\"at\":\"a.yaml:5:7\",\"kind\":\"collective\",\"comm\":[{\"collective\":\"all_"
    "reduce\","
    "\"mesh_dim\":0,\"groups\":1,\"group_size\":4,\"bytes_sent\":[4,4,4,4],\"bytes_recv\":[4,4,4,4]"
    "}]},"
    "{\"step\":2,\"at\":\"a.yaml:6:7\",\"kind\":\"op\",\"comm\":[]}],"
    "\"total\":{\"bytes_sent\":[4,4,4,4],\"bytes_recv\":[4,4,4,4]}}}]}]}],\"counts\":{\"passed\":0,"
    "\"failed\":1,\"errors\":0}}";

static const char *const info_text =
    "{\"a.yaml\\ts\":{\"mesh\":{\"shape\":[4],\"names\":[\"dp\"]},\"tensors\":{}}}";

static const char *str_of(const cJSON *e, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_timeline_fields(void **state) {
    (void)state;
    cJSON *rep = cJSON_Parse(report_text), *info = cJSON_Parse(info_text);
    assert_non_null(rep);
    assert_non_null(info);
    cJSON *t = lt_picture_timeline(rep, info);
    assert_non_null(t);
    const cJSON *evs = cJSON_GetObjectItemCaseSensitive(t, "traceEvents"), *e;
    assert_true(cJSON_IsArray(evs));
    int nx = 0, nm = 0, ni = 0, ns = 0, nt = 0, nf = 0, wait = 0, fin = 0, div = 0, flow_id = -1;
    cJSON_ArrayForEach(e, evs) {
        const char *ph = str_of(e, "ph");
        assert_non_null(ph);
        assert_non_null(str_of(e, "name"));
        assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "ts")));
        assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "pid")));
        assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "tid")));
        if (!strcmp(ph, "X"))
            nx++, assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "dur")));
        if (!strcmp(ph, "M")) nm++;
        if (strchr("stf", ph[0]) && !ph[1]) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
            assert_true(cJSON_IsNumber(id));
            if (flow_id < 0) flow_id = id->valueint;
            assert_int_equal(id->valueint, flow_id); /* one matched call, one id */
            ns += ph[0] == 's', nt += ph[0] == 't', nf += ph[0] == 'f';
        }
        if (!strcmp(ph, "i")) {
            const char *n = str_of(e, "name");
            int pid = cJSON_GetObjectItemCaseSensitive(e, "pid")->valueint;
            ni++;
            if (!strncmp(n, "waiting", 7)) wait++, assert_true(pid >= 1 && pid <= 3);
            if (!strncmp(n, "finished", 8)) fin++, assert_int_equal(pid, 4);
            if (!strcmp(n, "first divergence")) {
                div++;
                assert_int_equal(pid, 2); /* rank 1 of the case, pids from 1 */
                assert_int_equal(cJSON_GetObjectItemCaseSensitive(e, "ts")->valueint,
                                 20); /* step 2 */
            }
        }
    }
    assert_int_equal(nx, 8); /* 2 steps x 4 ranks */
    assert_int_equal(nm, 8); /* process_name and sort index, 4 ranks */
    assert_int_equal(ns, 1);
    assert_int_equal(nt, 2);
    assert_int_equal(nf, 1);
    assert_int_equal(wait, 3);
    assert_int_equal(fin, 1);
    assert_int_equal(div, 1);
    assert_int_equal(ni, 5);
    cJSON_Delete(t);
    cJSON_Delete(rep);
    cJSON_Delete(info);
}

/* A divergence at a step the trace does not record (line 7, between the
 * traced steps at lines 5 and 8): marked between them, at 15 us (steps at
 * 10 and 20), and drawn as a line between the columns. */
static void test_divergence_between_steps(void **state) {
    (void)state;
    cJSON *rep = cJSON_Parse(report_text), *info = cJSON_Parse(info_text);
    cJSON *c = cJSON_GetArrayItem(
        cJSON_GetObjectItem(
            cJSON_GetArrayItem(
                cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "files"), 0),
                                    "scenarios"),
                0),
            "cases"),
        0);
    cJSON *steps = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "trace"), "steps");
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(steps, 1), "at", cJSON_CreateString("a.yaml:8:7"));
    cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "failures"), 1);
    cJSON_ReplaceItemInObject(x, "message",
                              cJSON_CreateString("first divergence from the single-device program "
                                                 "at step 3: rank_map at a.yaml:7:7, 'h': rank 1"));
    cJSON_ReplaceItemInObject(x, "line", cJSON_CreateNumber(12)); /* the check's own line */
    cJSON *t = lt_picture_timeline(rep, info);
    assert_non_null(t);
    const cJSON *e;
    int found = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(t, "traceEvents")) {
        if (strcmp(str_of(e, "name"), "first divergence")) continue;
        found++;
        assert_int_equal(cJSON_GetObjectItem(e, "ts")->valueint, 15);
    }
    assert_int_equal(found, 1);
    FILE *f = tmpfile();
    LT_CHECK(lt_picture_run_html(f, rep, info));
    char *h = lt_test_slurp_fp(f);
    fclose(f);
    assert_non_null(strstr(h, "<line class=\"lt-diverge\""));
    assert_non_null(strstr(h, "first divergence (at an untraced step here)"));
    free(h);
    cJSON_Delete(t);
    cJSON_Delete(rep);
    cJSON_Delete(info);
}

static void test_timeline_not_a_report(void **state) {
    (void)state;
    cJSON *rep = cJSON_Parse("{\"x\":1}");
    assert_null(lt_picture_timeline(rep, NULL));
    assert_non_null(strstr(lt_errmsg(), "not a run report"));
    cJSON_Delete(rep);
}

/* The HTML of the same report: the failing case listed before its section,
 * four lanes, the would-hang column, the divergence marked. */
static void test_run_html_from_report(void **state) {
    (void)state;
    cJSON *rep = cJSON_Parse(report_text), *info = cJSON_Parse(info_text);
    FILE *f = tmpfile();
    LT_CHECK(lt_picture_run_html(f, rep, info));
    char *s = lt_test_slurp_fp(f);
    fclose(f);
    char *fails = strstr(s, "<h2>Failures</h2>"), *sec = strstr(s, "<h2 id=\"c0\">");
    assert_non_null(fails);
    assert_non_null(sec);
    assert_true(fails < sec);
    assert_non_null(strstr(fails, "<a href=\"#c0\">"));
    assert_int_equal(count(s, "class=\"lt-lane\""), 4);
    assert_non_null(strstr(s, "would hang (missing)"));
    assert_int_equal(count(s, "class=\"lt-hang\""), 4);
    assert_non_null(strstr(s, "finished after line 8"));
    assert_int_equal(count(s, "class=\"lt-diverge\""), 1);
    assert_int_equal(count(s, "class=\"lt-join\""), 1); /* one group of 4 */
    assert_non_null(strstr(s, "</html>"));
    free(s);
    cJSON_Delete(rep);
    cJSON_Delete(info);
}

/* A cycle of waits on a 2x2 mesh: rank 0 waits in a dp call for rank 2,
 * 2 in a tp call for 3, 3 in dp for 1, 1 in tp for 0. Every group lists
 * both its members, one waiting there and one "waiting_elsewhere": each
 * rank is drawn once, where it waits, and the cycle is four arrows. */
static const char *const cycle_text =
    "{\"files\":[{\"path\":\"c.yaml\",\"scenarios\":[{\"name\":\"c\",\"cases\":[{\"name\":\"c\","
    "\"status\":\"failed\",\"failures\":[{\"file\":\"c.yaml\",\"line\":5,\"message\":\"would "
    "hang\","
    "\"hang\":{\"kind\":\"cycle\",\"cycle\":[0,2,3,1],\"groups\":["
    "{\"members\":[{\"rank\":0,\"state\":\"waiting\",\"call\":\"dp\",\"at\":\"c.yaml:5\"},"
    "{\"rank\":2,\"state\":\"waiting_elsewhere\",\"call\":\"tp\",\"at\":\"c.yaml:7\"}]},"
    "{\"members\":[{\"rank\":1,\"state\":\"waiting_elsewhere\",\"call\":\"tp\",\"at\":\"c.yaml:7\"}"
    ","
    "{\"rank\":3,\"state\":\"waiting\",\"call\":\"dp\",\"at\":\"c.yaml:5\"}]},"
    "{\"members\":[{\"rank\":0,\"state\":\"waiting_elsewhere\",\"call\":\"dp\",\"at\":\"c.yaml:5\"}"
    ","
    "{\"rank\":1,\"state\":\"waiting\",\"call\":\"tp\",\"at\":\"c.yaml:7\"}]},"
    "{\"members\":[{\"rank\":2,\"state\":\"waiting\",\"call\":\"tp\",\"at\":\"c.yaml:7\"},"
    "{\"rank\":3,\"state\":\"waiting_elsewhere\",\"call\":\"dp\",\"at\":\"c.yaml:5\"}]}]}}],"
    "\"redistributes\":[],\"trace\":{\"steps\":[],\"total\":{\"bytes_sent\":[0,0,0,0]}}}]}]}]}";

static void test_hang_cycle(void **state) {
    (void)state;
    cJSON *rep = cJSON_Parse(cycle_text);
    assert_non_null(rep);
    FILE *f = tmpfile();
    LT_CHECK(lt_picture_run_html(f, rep, NULL));
    char *h = lt_test_slurp_fp(f);
    fclose(f);
    assert_int_equal(count(h, "class=\"lt-lane\""), 4);
    assert_int_equal(count(h, "class=\"lt-hang\""), 4);
    assert_int_equal(count(h, "waiting_elsewhere"), 0);
    assert_int_equal(count(h, "class=\"lt-cycle\""), 4);
    assert_non_null(strstr(h, "waits in tp, line 7"));
    assert_non_null(strstr(h, "<title>rank 2 waits for rank 3</title>"));
    assert_non_null(strstr(h, "<title>rank 1 waits for rank 0</title>"));
    free(h);
    cJSON *t = lt_picture_timeline(rep, NULL);
    assert_non_null(t);
    const cJSON *e;
    int waits = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(t, "traceEvents")) {
        if (strcmp(str_of(e, "ph"), "i")) continue;
        assert_true(!strncmp(str_of(e, "name"), "waiting: ", 9));
        waits++;
    }
    assert_int_equal(waits, 4);
    cJSON_Delete(t);
    cJSON_Delete(rep);
}

/* A report's redistribute of 'xd' [S(0)] -> [R] on 4 ranks, one step
 * (all_gather, 8 bytes received by each rank). The shape comes from the
 * declared tensor 'x' (8 elements: 2 each, so the source has 4 blocks, one
 * per rank, and the result one block held by all 4). */
static void test_run_html_plan(void **state) {
    (void)state;
    const char *rep_text =
        "{\"files\":[{\"path\":\"p.yaml\",\"scenarios\":[{\"name\":\"p\",\"cases\":[{\"name\":"
        "\"p\",\"status\":\"passed\",\"failures\":[],\"redistributes\":[{\"at\":\"p.yaml:9:5\","
        "\"tensor\":\"xd\",\"from\":[\"S(0)\"],\"to\":[\"R\"],\"plan\":[{\"step\":1,\"mesh_dim\":0,"
        "\"action\":\"all_gather\",\"bytes_recv\":[8,8,8,8],\"placements_after\":[\"R\"]}]}],"
        "\"trace\":{\"steps\":[]}}]}]}]}";
    const char *info_p =
        "{\"p.yaml\\tp\":{\"mesh\":{\"shape\":[4]},\"tensors\":{\"x\":[8],\"w\":[3]}}}";
    cJSON *rep = cJSON_Parse(rep_text), *info = cJSON_Parse(info_p);
    assert_non_null(rep);
    assert_non_null(info);
    FILE *f = tmpfile();
    LT_CHECK(lt_picture_run_html(f, rep, info));
    char *h = lt_test_slurp_fp(f);
    fclose(f);
    char o[256];
    owners(h, o, sizeof o);
    assert_string_equal(o, "0|1|2|3|all 4");
    assert_non_null(strstr(h, "step 1: mesh dim 0, all_gather"));
    assert_non_null(strstr(h, "bytes received per rank: max 8, total 32"));
    assert_null(strstr(h, "No layout pictures"));
    free(h);
    /* without the declared shapes: the plan, no pictures, and the page says why */
    f = tmpfile();
    LT_CHECK(lt_picture_run_html(f, rep, NULL));
    h = lt_test_slurp_fp(f);
    fclose(f);
    assert_int_equal(count(h, "class=\"lt-block\""), 0);
    assert_non_null(strstr(h, "No layout pictures"));
    assert_non_null(strstr(h, "bytes received per rank: max 8, total 32"));
    free(h);
    cJSON_Delete(rep);
    cJSON_Delete(info);
}

/* `run --html --timeline` end to end on a program where rank 3 skips an
 * all_reduce: the run fails (exit 1) and both files show the hang. */
static void test_run_cli_hang(void **state) {
    (void)state;
    char yaml[1200], html[1200], tl[1200];
    snprintf(yaml, sizeof yaml, "%s/hang.yaml", g_dir);
    snprintf(html, sizeof html, "%s/hang.html", g_dir);
    snprintf(tl, sizeof tl, "%s/hang.json", g_dir);
    lt_test_write_file(yaml,
                       "- name: skip\n  mesh: {shape: [4], names: [dp]}\n  tensors:\n"
                       "    x: {shape: [3], init: arange}\n  steps:\n"
                       "    - distribute: {tensor: x, placements: [\"S(0)\"], as: xd}\n"
                       "    - to_local: {tensor: xd, as: xl}\n"
                       "    - local_op: {op: sum, inputs: xl, as: s}\n"
                       "    - collective: {kind: all_reduce, mesh_dim: dp, tensor: s, as: t}\n"
                       "      when: \"rank < 3\"\n");
    const char *args[] = {yaml, "--html", html, "--timeline", tl};
    char *out, *err;
    int rc = lt_test_run_sc(args, 5, &out, &err);
    assert_int_equal(rc, 1);
    free(out), free(err);
    char *h = lt_test_slurp(html, NULL), *j = lt_test_slurp(tl, NULL);
    assert_non_null(h);
    assert_non_null(j);
    assert_int_equal(count(h, "class=\"lt-lane\""), 4);
    assert_int_equal(count(h, "class=\"lt-hang\""), 4);
    cJSON *t = cJSON_Parse(j);
    assert_non_null(t);
    int wait = 0, fin = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(t, "traceEvents")) {
        const char *n = str_of(e, "name");
        if (strcmp(str_of(e, "ph"), "i")) continue;
        wait += !strncmp(n, "waiting", 7), fin += !strncmp(n, "finished", 8);
    }
    assert_int_equal(wait, 3);
    assert_int_equal(fin, 1);
    cJSON_Delete(t);
    free(h), free(j);
    remove(yaml), remove(html), remove(tl);
}

static int setup(void **state) {
    (void)state;
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    lt_test_tmpdir(g_dir, sizeof g_dir, self, "picture-tmp");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    rmdir(g_dir);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_svg_2d_grid),
        cmocka_unit_test(test_svg_strided),
        cmocka_unit_test(test_svg_partial),
        cmocka_unit_test(test_svg_replicate),
        cmocka_unit_test(test_svg_sampled),
        cmocka_unit_test(test_svg_3d_summary),
        cmocka_unit_test(test_shard_summary),
        cmocka_unit_test(test_write_file_error),
        cmocka_unit_test(test_timeline_fields),
        cmocka_unit_test(test_divergence_between_steps),
        cmocka_unit_test(test_timeline_not_a_report),
        cmocka_unit_test(test_run_html_from_report),
        cmocka_unit_test(test_hang_cycle),
        cmocka_unit_test(test_run_html_plan),
        cmocka_unit_test(test_run_cli_hang),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
