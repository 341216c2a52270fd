/* test/test_scenarios.c — the scenario engine: every malformed file of
 * test/bad_scenarios/ is refused with file:line:col and its expected message
 * (exit 2, no crash, no leak); loader limits (a 10 MB file, deep nesting,
 * alias bombs) hold; the JSON report parses and agrees with the text summary;
 * the JUnit XML is well formed with one <testcase> per case; a wrong
 * expectation fails with exit 1 naming the rank, index, expected and actual;
 * random mutations of a valid file never crash the loader or the runner.
 *
 * Runs from the repository root (as `make test` does). Everything is driven
 * in-process through lt_sc_main / lt_sc_load with output captured in
 * temporary files.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "test/testutil.h"
#include "localtensor/localtensor.h"
#include "tools/cli/cli.h"
#include "tools/scenario/scenario.h"

static char g_tmpdir[512];

/* ---- helpers ------------------------------------------------------------------ */

static const char *last_line(const char *text, char *buf, size_t n) {
    size_t len = strlen(text);
    while (len && text[len - 1] == '\n') len--;
    size_t start = len;
    while (start && text[start - 1] != '\n') start--;
    size_t k = len - start < n - 1 ? len - start : n - 1;
    memcpy(buf, text + start, k);
    buf[k] = '\0';
    return buf;
}

/* 1 when text holds "path:LINE:COL: " */
static int has_position(const char *text, const char *path) {
    size_t pl = strlen(path);
    for (const char *p = strstr(text, path); p; p = strstr(p + 1, path)) {
        const char *q = p + pl;
        int ok = *q++ == ':';
        int digits = 0;
        while (ok && *q >= '0' && *q <= '9') q++, digits++;
        ok = ok && digits && *q++ == ':';
        digits = 0;
        while (ok && *q >= '0' && *q <= '9') q++, digits++;
        if (ok && digits && q[0] == ':' && q[1] == ' ') return 1;
    }
    return 0;
}

static void tmp_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", g_tmpdir, name);
}

/* The expected message of a bad scenario: NAME.expect, else "# expect: ..." on line 1. */
static int read_expect(const char *path, char *buf, size_t n) {
    char side[1024];
    snprintf(side, sizeof side, "%.*s.expect", (int)(strlen(path) - 5), path);
    char *s = lt_test_slurp(side, NULL);
    if (!s) {
        s = lt_test_slurp(path, NULL);
        if (!s) return 0;
        if (strncmp(s, "# expect: ", 10)) {
            free(s);
            return 0;
        }
        memmove(s, s + 10, strlen(s + 10) + 1);
    }
    char *nl = strchr(s, '\n');
    if (nl) *nl = '\0';
    snprintf(buf, n, "%s", s);
    free(s);
    return buf[0] != '\0';
}

/* ---- XML well-formedness: tags balance, attributes quoted, entities known ----- */

static int xml_text_ok(const char *s, const char *end) {
    for (const char *p = s; p < end; p++) {
        if (*p == '<') return 0;
        if ((unsigned char)*p < 0x20 && *p != '\n' && *p != '\t' && *p != '\r') return 0;
        if (*p == '&') {
            static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
            int ok = 0;
            for (int i = 0; i < 5 && !ok; i++) ok = !strncmp(p, ents[i], strlen(ents[i]));
            if (!ok) return 0;
        }
    }
    return 1;
}

/* Returns the number of <testcase> elements, or -1 when not well formed. */
static int xml_check(const char *x, int *suites) {
    char stack[16][32];
    int depth = 0, cases = 0, roots = 0;
    *suites = 0;
    const char *p = x;
    if (!strncmp(p, "<?xml", 5)) {
        p = strstr(p, "?>");
        if (!p) return -1;
        p += 2;
    }
    while (*p) {
        const char *lt = strchr(p, '<');
        if (!lt) lt = p + strlen(p);
        if (!xml_text_ok(p, lt)) return -1;
        if (depth == 0)
            for (const char *q = p; q < lt; q++)
                if (*q != ' ' && *q != '\n') return -1;   /* text outside the root */
        if (!*lt) break;
        const char *gt = strchr(lt, '>');
        if (!gt) return -1;
        int closing = lt[1] == '/', empty = gt[-1] == '/';
        const char *name = lt + 1 + closing;
        size_t nl = strcspn(name, " />\n");
        if (nl == 0 || nl >= 32) return -1;
        /* attributes: name="value" with escaped values */
        const char *a = name + nl;
        while (a < gt - empty) {
            while (*a == ' ' || *a == '\n') a++;
            if (a >= gt - empty) break;
            const char *eq = strchr(a, '=');
            if (!eq || eq > gt || eq[1] != '"') return -1;
            const char *close = strchr(eq + 2, '"');
            if (!close || close > gt) return -1;
            if (!xml_text_ok(eq + 2, close)) return -1;
            a = close + 1;
        }
        if (closing) {
            if (depth == 0 || strncmp(stack[depth - 1], name, nl) || stack[depth - 1][nl])
                return -1;
            depth--;
        } else {
            if (!strncmp(name, "testcase", nl) && nl == 8) cases++;
            if (!strncmp(name, "testsuite", nl) && nl == 9) (*suites)++;
            if (depth == 0) roots++;
            if (!empty) {
                if (depth == 16) return -1;
                memcpy(stack[depth], name, nl);
                stack[depth][nl] = '\0';
                depth++;
            }
        }
        p = gt + 1;
    }
    return depth == 0 && roots == 1 ? cases : -1;
}

/* ---- tests ---------------------------------------------------------------------- */

static int cmpstr(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_bad_scenarios(void **state) {
    (void)state;
    DIR *d = opendir("test/bad_scenarios");
    if (!d) fail_msg("test/bad_scenarios not found (run from the repository root)");
    char *names[512];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 512) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".yaml")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmpstr);
    if (n < 40) fail_msg("only %d bad scenarios; want at least 40", n);
    for (int i = 0; i < n; i++) {
        char path[600], want[512];
        snprintf(path, sizeof path, "test/bad_scenarios/%s", names[i]);
        if (!read_expect(path, want, sizeof want))
            fail_msg("%s: no expected message (# expect: or .expect)", path);
        /* through the loader API */
        lt_sc_file *f = NULL;
        lt_status st = lt_sc_load(path, &f);
        if (st) {
            if (f) fail_msg("%s: failed load left a file", path);
            if (!has_position(lt_errmsg(), path))
                fail_msg("%s: message lacks file:line:col: %s", path, lt_errmsg());
        }
        lt_sc_file_free(f);
        /* through `localtensor run` */
        const char *args[] = {path};
        char *out, *err;
        int rc = lt_test_run_sc(args, 1, &out, &err);
        size_t lo = strlen(out), le = strlen(err);
        char *all = malloc(lo + le + 1);
        memcpy(all, out, lo);
        memcpy(all + lo, err, le + 1);
        if (rc != 2) fail_msg("%s: exit %d, wanted 2\n%s", path, rc, all);
        if (!strstr(all, want)) fail_msg("%s: output lacks '%s':\n%s", path, want, all);
        if (!has_position(all, path))
            fail_msg("%s: output lacks %s:LINE:COL:\n%s", path, path, all);
        char last[256];
        last_line(out, last, sizeof last);
        if (!strstr(last, " passed, ") || !strstr(last, " failed"))
            fail_msg("%s: last line '%s'", path, last);
        free(all);
        free(out);
        free(err);
        free(names[i]);
    }
}

static void test_big_file(void **state) {
    (void)state;
    char path[600];
    tmp_path(path, sizeof path, "big.yaml");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("name: big\nmesh: 2\nsteps: [mark_comm]\n", f);
    char line[101];
    memset(line, 'x', 99);
    line[0] = '#';
    line[99] = '\n';
    line[100] = '\0';
    for (int i = 0; i < 10 * 1024 * 1024 / 100 + 10; i++) fputs(line, f);
    fclose(f);
    lt_sc_file *sf = NULL;
    LT_EXPECT_STATUS(lt_sc_load(path, &sf), LT_INVALID);
    assert_null(sf);
    if (!strstr(lt_errmsg(), "larger than") || !has_position(lt_errmsg(), path))
        fail_msg("%s", lt_errmsg());
    const char *args[] = {path};
    char *out, *err;
    assert_int_equal(lt_test_run_sc(args, 1, &out, &err), 2);
    free(out);
    free(err);
    /* the same from memory */
    size_t len = 0;
    char *text = lt_test_slurp(path, &len);
    assert_non_null(text);
    LT_EXPECT_STATUS(lt_sc_load_string("mem.yaml", text, len, &sf), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "mem.yaml:1:1: file is"));
    free(text);
    remove(path);
}

static void expect_load_error(const char *text, const char *want) {
    lt_sc_file *f = NULL;
    lt_status st = lt_sc_load_string("gen.yaml", text, strlen(text), &f);
    if (st == LT_OK) {
        lt_sc_file_free(f);
        fail_msg("loaded, but wanted an error containing '%s'", want);
    }
    assert_null(f);
    if (!strstr(lt_errmsg(), want) || !has_position(lt_errmsg(), "gen.yaml"))
        fail_msg("message '%s' (wanted '%s' with gen.yaml:L:C)", lt_errmsg(), want);
}

static void test_generated_nesting(void **state) {
    (void)state;
    enum { N = 10000 };
    char *s = malloc(8 * N + 100);
    /* flow mappings */
    size_t k = (size_t)sprintf(s, "name: deep\nmesh: 2\nsteps: [mark_comm]\ndescription: ");
    for (int i = 0; i < N; i++) k += (size_t)sprintf(s + k, "{a: ");
    k += (size_t)sprintf(s + k, "1");
    for (int i = 0; i < N; i++) s[k++] = '}';
    s[k] = '\0';
    expect_load_error(s, "nesting deeper than 64 levels");
    /* block sequences: "- - - - ... 1" */
    k = (size_t)sprintf(s, "- ");
    for (int i = 0; i < N; i++) k += (size_t)sprintf(s + k, "- ");
    k += (size_t)sprintf(s + k, "1\n");
    expect_load_error(s, "nesting deeper than 64 levels");
    free(s);
    /* exactly at the limit parses as YAML (then fails as a scenario) */
    s = malloc(1000);
    k = (size_t)sprintf(s, "name: d\nmesh: 2\nsteps: [mark_comm]\ndescription: ");
    for (int i = 0; i < 63; i++) s[k++] = '[';
    for (int i = 0; i < 63; i++) s[k++] = ']';
    s[k] = '\0';
    expect_load_error(s, "description: expected text, got a list");
    free(s);
}

static void test_loader_limits(void **state) {
    (void)state;
    expect_load_error("name: a\nmesh: 2\nsteps: [mark_comm]\nx: &a [1, *a]\n", "contains it");
    expect_load_error("name: a\nmesh: 70000\nsteps: [mark_comm]\n", "mesh");
    expect_load_error("name: a\nmesh: 2\ntensors: {x: {shape: [2, 2, 2, 2, 2, 2, 2, 2, "
                      "2]}}\nsteps: [mark_comm]\n",
                      "at most 8");
    expect_load_error(
        "name: a\nmesh: 2\ntensors: {x: {values: [[[[[[[[[1]]]]]]]]]}}\nsteps: [mark_comm]\n",
        "nested deeper than 8");
    expect_load_error("name: a\nmesh: 2\nsteps: [mark_comm]\n---\nname: b\n",
                      "second YAML document");
    expect_load_error("", "holds no scenario");
    expect_load_error(
        "name: a\nsweep: {mesh: [2x2x2x2x2x2x2x2], from: {each: [R, P, 'P(avg)', 'S(0)', 'S(1)', "
        "'S(2)', 'S(3)', 'S(4)', 'S(5)', 'S(6)']}}\nsteps: [mark_comm]\n",
        "placement lists are more than 100000 cases");
    /* an alias within limits is copied */
    lt_sc_file *f = NULL;
    const char *ok = "name: a\nmesh: &m 2x2\ntensors: {x: &t {shape: [4]}, y: *t}\nsteps:\n  - "
                     "distribute: {tensor: y, placements: [R, R], as: yd}\n";
    LT_CHECK(lt_sc_load_string("ok.yaml", ok, strlen(ok), &f));
    assert_int_equal(lt_sc_file_cases(f), 1);
    lt_sc_file_free(f);
}

/* A copy of a library scenario with one expected value changed must fail
 * with exit 1 naming the rank, index, expected and actual. */
static void test_wrong_expectation(void **state) {
    (void)state;
    char *text = lt_test_slurp("scenarios/placements/chunk_rule.yaml", NULL);
    assert_non_null(text);
    const char *from = "ranks: [[0, 1], [2, 3], [4], []]";
    char *at = strstr(text, from);
    assert_non_null(at);
    memcpy(at, "ranks: [[0, 1], [2, 7], [4], []]", strlen(from));
    char path[600];
    tmp_path(path, sizeof path, "wrong.yaml");
    lt_test_write_file(path, text);
    free(text);
    const char *args[] = {"-k", "chunk_5_over_4", path};
    char *out, *err;
    int rc = lt_test_run_sc(args, 3, &out, &err);
    if (rc != 1) fail_msg("exit %d, wanted 1:\n%s%s", rc, out, err);
    const char *want[] = {
        "FAIL",       "chunk_5_over_4", "rank 1 (coord [1])",   "index [1]",
        "expected 7", "actual 3",       "expect_local of 'xd'", "0 passed, 1 failed, 0 errors"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(out, want[i])) fail_msg("output lacks '%s':\n%s", want[i], out);
    if (!has_position(out, path)) fail_msg("no position:\n%s", out);
    free(out);
    free(err);
    /* a wrong value of a redistributed tensor names the plan step that made it */
    lt_test_write_file(path,
               "name: via_plan\nmesh: 2\ntensors: {x: {shape: [4]}}\nsteps:\n"
               "  - distribute: {tensor: x, placements: ['S(0)'], as: xd}\n"
               "  - redistribute: {tensor: xd, to: [R], as: r}\n"
               "  - expect_local: {tensor: r, ranks: {1: [0, 1, 2, 4]}}\n"
               "  - expect_full: {tensor: r, values: [0, 1, 2, 5]}\n");
    const char *args2[] = {path};
    assert_int_equal(lt_test_run_sc(args2, 1, &out, &err), 1);
    const char *want2[] = {"rank 1 (coord [1]): index [3]: expected 4, actual 3",
                           "produced by: redistribute at", "all_gather",
                           "index [3]: expected 5, actual 3", "0 passed, 1 failed, 0 errors"};
    for (size_t i = 0; i < sizeof want2 / sizeof *want2; i++)
        if (!strstr(out, want2[i])) fail_msg("output lacks '%s':\n%s", want2[i], out);
    free(out);
    free(err);
    remove(path);
}

/* --json and --junit over passing, failing, erroring, sweep and unloadable files. */
/* The five report files test_reports runs: two passing cases (one with
 * characters to escape), a failing check, a step error, a 16-case sweep,
 * a file that does not load. */
static void write_report_files(const char *dir) {
    char p[700];
    snprintf(p, sizeof p, "%s/a_pass.yaml", dir);
    lt_test_write_file(
        p, "- name: 'esc <&> \"quoted\" ''x'''\n  mesh: 2\n  tensors: {x: {shape: [3]}}\n  steps:\n"
           "    - distribute: {tensor: x, placements: ['S(0)'], as: xd}\n"
           "    - expect_local: {tensor: xd, ranks: [[0, 1], [2]]}\n"
           "- name: second\n  mesh: 2\n  steps: [mark_comm]\n");
    snprintf(p, sizeof p, "%s/b_fail.yaml", dir);
    lt_test_write_file(p, "name: fails <here>\nmesh: 2\ntensors: {x: {shape: [3]}}\nsteps:\n"
                  "  - distribute: {tensor: x, placements: ['S(0)'], as: xd}\n"
                  "  - expect_local: {tensor: xd, ranks: [[0, 1], [9]]}\n"
                  "  - expect_full: {tensor: xd, values: [0, 1, 7]}\n");
    snprintf(p, sizeof p, "%s/c_error.yaml", dir);
    lt_test_write_file(p, "name: errs\nmesh: 2x2\ntensors: {x: {shape: [3]}}\nsteps:\n"
                  "  - distribute: {tensor: x, placements: [R], as: xd}\n");
    snprintf(p, sizeof p, "%s/d_sweep.yaml", dir);
    lt_test_write_file(p, "name: sw\ntensors: {x: {shape: [5, 2]}}\nsweep:\n  mesh: [2x2]\n"
                  "  from: {each: [R, 'S(0)']}\n  to: {each: [R, 'S(1)']}\nsteps:\n"
                  "  - distribute: {tensor: x, placements: $from, as: xd}\n"
                  "  - redistribute: {tensor: xd, to: $to, as: y}\n"
                  "  - expect_full: {tensor: y, equals: x}\n");
    snprintf(p, sizeof p, "%s/e_bad.yaml", dir);
    lt_test_write_file(p, "name: bad\nmesh: 2\nsteps: [nope]\n");
}

/* The JSON report of test_reports' run: its counts (tp, tf, te), every
 * case listed, the failure with rank, index, expected and actual. */
static void check_json_report(const char *json, int tp, int tf, int te) {
    /* JSON */
    size_t jl = 0;
    char *jt = lt_test_slurp(json, &jl);
    assert_non_null(jt);
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(jt, jl + 1, &end, 1);   /* + 1: the NUL */
    if (!j) fail_msg("JSON does not parse near: %.40s", end ? end : "?");
    cJSON *counts = cJSON_GetObjectItemCaseSensitive(j, "counts");
    assert_non_null(counts);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(counts, "passed")->valueint, tp);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(counts, "failed")->valueint, tf);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(counts, "errors")->valueint, te);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(counts, "cases")->valueint, 20);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(counts, "load_errors")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(counts, "files")->valueint, 5);
    /* every case listed, with failures carrying rank / index / expected / actual */
    int ncases = 0, found_fail = 0;
    cJSON *file, *scen, *cs, *fl;
    cJSON_ArrayForEach(file, cJSON_GetObjectItemCaseSensitive(j, "files")) {
        cJSON_ArrayForEach(scen, cJSON_GetObjectItemCaseSensitive(file, "scenarios")) {
            /* every listed key is there: no description is null */
            if (!cJSON_GetObjectItemCaseSensitive(scen, "description"))
                fail_msg("a scenario without \"description\"");
            cJSON_ArrayForEach(cs, cJSON_GetObjectItemCaseSensitive(scen, "cases")) {
                ncases++;
                cJSON_ArrayForEach(fl, cJSON_GetObjectItemCaseSensitive(cs, "failures")) {
                    cJSON *rank = cJSON_GetObjectItemCaseSensitive(fl, "rank");
                    cJSON *exp = cJSON_GetObjectItemCaseSensitive(fl, "expected");
                    cJSON *act = cJSON_GetObjectItemCaseSensitive(fl, "actual");
                    cJSON *idx = cJSON_GetObjectItemCaseSensitive(fl, "index");
                    if (rank && exp && act && idx && rank->valueint == 1 &&
                        !strcmp(exp->valuestring, "9") && !strcmp(act->valuestring, "2") &&
                        !strcmp(idx->valuestring, "[0]"))
                        found_fail = 1;
                }
            }
        }
    }
    assert_int_equal(ncases, 20);
    assert_true(found_fail);
    cJSON_Delete(j);
    free(jt);
}

/* The JUnit report of test_reports' run: well formed, one testcase per
 * case plus one per unloadable file, names escaped. */
static void check_junit_report(const char *junit) {
    /* JUnit: well formed, one testcase per case plus one per unloadable file */
    char *xt = lt_test_slurp(junit, NULL);
    assert_non_null(xt);
    int suites = 0, tc = xml_check(xt, &suites);
    if (tc < 0) fail_msg("JUnit XML is not well formed:\n%s", xt);
    assert_int_equal(tc, 21);
    assert_int_equal(suites, 5);
    assert_non_null(
        strstr(xt, "<testsuites name=\"localtensor\" tests=\"21\" failures=\"1\" errors=\"2\""));
    assert_non_null(strstr(xt, "esc &lt;&amp;&gt; &quot;quoted&quot; &apos;x&apos;"));
    assert_non_null(strstr(xt, "<failure type=\"check\""));
    assert_non_null(strstr(xt, "<error type=\"step\""));
    assert_non_null(strstr(xt, "name=\"(load)\""));
    free(xt);
}

/* --fail-fast: the rest is not run and shows as skipped; exit 1 when only
 * a check fails. */
static void check_fail_fast(const char *dir, const char *junit) {
    char *out, *err, *xt, p[700];
    int rc, suites = 0;
    const char *args2[] = {"--fail-fast", "--junit", junit, dir};
    rc = lt_test_run_sc(args2, 4, &out, &err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--fail-fast"));
    xt = lt_test_slurp(junit, NULL);
    assert_true(xml_check(xt, &suites) == 21);
    assert_non_null(strstr(xt, "<skipped"));
    free(xt);
    free(out);
    free(err);
    /* exit 1 when only a check fails */
    snprintf(p, sizeof p, "%s/b_fail.yaml", dir);
    const char *args3[] = {p};
    assert_int_equal(lt_test_run_sc(args3, 1, &out, &err), 1);
    free(out);
    free(err);
}

static void test_reports(void **state) {
    (void)state;
    char dir[600], p[700], json[700], junit[700];
    tmp_path(dir, sizeof dir, "reports");
    mkdir(dir, 0700);
    write_report_files(dir);
    snprintf(json, sizeof json, "%s/out.json", g_tmpdir);
    snprintf(junit, sizeof junit, "%s/out.xml", g_tmpdir);
    const char *args[] = {"--json", json, "--junit", junit, dir};
    char *out, *err;
    int rc = lt_test_run_sc(args, 5, &out, &err);
    assert_int_equal(rc, 2);
    /* the text summary */
    char last[256];
    int tp, tf, te;
    last_line(out, last, sizeof last);
    if (sscanf(last, "%d passed, %d failed, %d errors", &tp, &tf, &te) != 3)
        fail_msg("last line '%s'", last);
    /* 2 + 0 + 0 + 16 sweep cases pass; 1 fails; 1 errors + 1 load error */
    assert_int_equal(tp, 18);
    assert_int_equal(tf, 1);
    assert_int_equal(te, 2);
    /* the load error: its message printed once (stderr), the file listed and counted */
    {
        const char *m = "e_bad.yaml:3:9: unknown step 'nope'";
        int times = 0;
        for (const char *q = strstr(err, m); q; q = strstr(q + 1, m)) times++;
        for (const char *q = strstr(out, m); q; q = strstr(q + 1, m)) times++;
        if (times != 1) fail_msg("load error printed %d times:\n%s%s", times, out, err);
        if (!strstr(out, "e_bad.yaml: could not be loaded"))
            fail_msg("load error not listed:\n%s", out);
        if (!strstr(out, "20 cases in 5 scenarios from 5 files; 1 could not be loaded"))
            fail_msg("summary does not count the unloadable file:\n%s", out);
        if (!strstr(out, "18 passed, 1 failed, 2 errors\n")) fail_msg("summary:\n%s", out);
    }
    check_json_report(json, tp, tf, te);
    check_junit_report(junit);
    free(out);
    free(err);
    check_fail_fast(dir, junit);
    const char *names[] = {"a_pass.yaml", "b_fail.yaml", "c_error.yaml", "d_sweep.yaml",
                           "e_bad.yaml"};
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        remove(p);
    }
    rmdir(dir);
    remove(json);
    remove(junit);
}

/* Runs `localtensor run` on one scenario text; returns the exit code, *out
 * and *err as run_cli. */
static int run_text(const char *name, const char *text, char **out, char **err) {
    char path[600];
    tmp_path(path, sizeof path, name);
    lt_test_write_file(path, text);
    const char *args[] = {path};
    int rc = lt_test_run_sc(args, 1, out, err);
    remove(path);
    return rc;
}

static int count_of(const char *text, const char *what) {
    int n = 0;
    for (const char *q = strstr(text, what); q; q = strstr(q + strlen(what), what)) n++;
    return n;
}

/* -k that matches nothing runs nothing: exit 2 with a message, as an empty
 * directory does. */
static void test_no_match(void **state) {
    (void)state;
    char *out, *err;
    const char *args[] = {"-k", "zzz", "scenarios/tutorials"};
    assert_int_equal(lt_test_run_sc(args, 3, &out, &err), 2);
    if (!strstr(err, "no case matches -k 'zzz'")) fail_msg("no message:\n%s", err);
    assert_non_null(strstr(out, "0 passed, 0 failed, 0 errors"));
    free(out), free(err);
    const char *args2[] = {"-k", "row_wise", "scenarios/tutorials"};
    assert_int_equal(lt_test_run_sc(args2, 3, &out, &err), 0);
    free(out), free(err);
}

/* One of a thing is singular everywhere the report counts. */
static void test_singular(void **state) {
    (void)state;
    char *out, *err;
    /* one case that errors */
    assert_int_equal(run_text("one_err.yaml",
                              "name: one\nmesh: 2x2\ntensors: {x: {shape: [3]}}\nsteps:\n"
                              "  - distribute: {tensor: x, placements: [R], as: xd}\n",
                              &out, &err),
                     2);
    if (!strstr(out, "1 case in 1 scenario from 1 file (") ||
        !strstr(out, "0 passed, 0 failed, 1 error\n"))
        fail_msg("plural for one:\n%s", out);
    assert_null(strstr(out, "1 errors"));
    if (!strstr(out, "1 placement for a mesh of 2 dims")) fail_msg("placement count:\n%s", out);
    free(out), free(err);
    /* expect_local: two bad ranks -> "(also rank 3)", three -> "(also ranks 2, 3)" */
    assert_int_equal(
        run_text("two_bad.yaml",
                 "name: two\nmesh: 4\ntensors: {x: {shape: [4]}}\nsteps:\n"
                 "  - distribute: {tensor: x, placements: [R], as: xd}\n"
                 "  - expect_local: {tensor: xd, ranks: {1: [9, 1, 2, 3], 3: [9, 1, 2, 3]}}\n",
                 &out, &err),
        1);
    if (!strstr(out, "rank 1 (coord [1]): index [0]: expected 9, actual 0") ||
        !strstr(out, "(also rank 3)"))
        fail_msg("two bad ranks:\n%s", out);
    free(out), free(err);
    assert_int_equal(run_text("three_bad.yaml",
                              "name: three\nmesh: 4\ntensors: {x: {shape: [4]}}\nsteps:\n"
                              "  - distribute: {tensor: x, placements: [R], as: xd}\n"
                              "  - expect_local: {tensor: xd, ranks: {1: [9, 1, 2, 3], 2: [9, 1, "
                              "2, 3], 3: [9, 1, 2, 3]}}\n",
                              &out, &err),
                     1);
    if (!strstr(out, "(also ranks 2, 3)")) fail_msg("three bad ranks:\n%s", out);
    free(out), free(err);
}

/* A redistribute whose verification fails is a failed check, and the case
 * goes on with what the plan computed under the step's `as`. The source
 * claims Replicate but rank 1 holds [2, 5] where rank 0 holds [1, 5]: the
 * verifier names rank 1's index 0 (expected rank 0's 1). The plan still
 * runs: each rank keeps its own chunk of [1, 5] / [2, 5] (rank 0 [1], rank
 * 1 [5]), and the later all_gather gives [1, 5] everywhere. */
static void test_failed_verification_keeps_going(void **state) {
    (void)state;
    char *out, *err;
    assert_int_equal(run_text("verify_fails.yaml", "name: vf\nmesh: 2\nsteps:\n"
                              "  - from_local: {ranks: [[1, 5], [2, 5]], placements: [R], as: p}\n"
                              "  - redistribute: {tensor: p, to: [\"S(0)\"], as: r}\n"
                              "  - redistribute: {tensor: r, to: [R], as: z, verify: false}\n"
                              "  - expect_local: {tensor: z, ranks: [[1, 5], [1, 5]]}\n",
                              &out, &err), 1);
    if (!strstr(out, "verification of redistribute of 'p' [R] -> [S(0)] failed at the source") ||
        !strstr(out, "rank 1, index [0] (global [0]): expected 1, actual 2") ||
        !strstr(out, "0 passed, 1 failed, 0 errors") || count_of(out, "FAIL  ") != 1)
        fail_msg("a failed verification, then the plan's value:\n%s", out);
    free(out), free(err);
}

/* expect_full of a DTensor names who holds the wrong element: rank, mesh
 * coordinate and local index (as expect_local does). The holders below come
 * from the layout rules, worked by hand. */
static void test_expect_full_holders(void **state) {
    (void)state;
    char *out, *err;
    /* [R, S(0)] on 2x2, 4 elements: tp coord 1 holds indices 2..3, so index 3
     * is at local index 1 of ranks 1 (coord [0, 1]) and 3 (coord [1, 1]) */
    assert_int_equal(run_text("holders.yaml",
                              "name: h\nmesh: 2x2\ntensors: {x: {shape: [4]}}\nsteps:\n"
                              "  - distribute: {tensor: x, placements: [R, 'S(0)'], as: xd}\n"
                              "  - expect_full: {tensor: xd, values: [0, 1, 2, 5]}\n",
                              &out, &err),
                     1);
    if (!strstr(out,
                "index [3]: expected 5, actual 3 (1 of 4 elements differ, max |diff| 2); index [3] "
                "is held by "
                "rank 1 (coord [0, 1]) at local index [1] (also rank 3 (coord [1, 1]) at [1])"))
        fail_msg("holders of index 3:\n%s", out);
    free(out), free(err);
    /* the strided seed example: arange(5) with [SS(0,2), S(0)] on 2x2 puts
     * [0, 1] on rank 0, [3] on rank 1, [2] on rank 2 and [4] on rank 3 */
    assert_int_equal(
        run_text("holders2.yaml",
                 "name: h2\nmesh: 2x2\ntensors: {x: {shape: [5]}}\nsteps:\n"
                 "  - distribute: {tensor: x, placements: ['SS(0,2)', 'S(0)'], as: xd}\n"
                 "  - expect_full: {tensor: xd, values: [0, 1, 2, 7, 4]}\n",
                 &out, &err),
        1);
    if (!strstr(out, "index [3] is held by rank 1 (coord [0, 1]) at local index [0]") ||
        strstr(out, "(also"))
        fail_msg("holder of index 3 under SS:\n%s", out);
    free(out), free(err);
    /* Partial: every rank holds a contribution */
    assert_int_equal(run_text("holders3.yaml",
                              "name: h3\nmesh: 2\ntensors: {x: {shape: [2]}}\nsteps:\n"
                              "  - distribute: {tensor: x, placements: ['P(sum)'], as: xd}\n"
                              "  - expect_full: {tensor: xd, values: [0, 5]}\n",
                              &out, &err),
                     1);
    if (!strstr(out, "index [1] is a partial value on rank 0 (coord [0]) at local index [1] (also "
                     "rank 1 (coord [1]) "
                     "at [1]); mesh dim 0 is P(sum): the value is the sum over it"))
        fail_msg("holders of a partial value:\n%s", out);
    free(out), free(err);
}

/* A failed check of y names y's own plan (line 6's local slice, spelled only
 * when asked), not the later all_gather of line 7, which a failed
 * expect_plan names. */
static void test_origin_is_own_plan(void **state) {
    (void)state;
    char *out, *err;
    assert_int_equal(run_text("origin.yaml",
                              "name: o\nmesh: 2\ntensors: {x: {shape: [4]}}\nsteps:\n"
                              "  - distribute: {tensor: x, placements: [R], as: xd}\n"
                              "  - redistribute: {tensor: xd, to: ['S(0)'], as: y}\n"
                              "  - redistribute: {tensor: y, to: [R], as: z}\n"
                              "  - expect_full: {tensor: y, values: [0, 1, 2, 5]}\n"
                              "  - expect_plan: {steps: 3}\n",
                              &out, &err),
                     1);
    const char *a = strstr(out, "produced by: redistribute at ");
    if (!a || !strstr(a, ":6:5: step 1 of 1 (mesh dim 0: R -> S(0), local slice)") ||
        strstr(out, ":6:5: step 1 of 1 (mesh dim 0: S(0) -> R"))
        fail_msg("the failure does not name y's own plan:\n%s", out);
    if (!strstr(out, ":7:5: step 1 of 1 (mesh dim 0: S(0) -> R, all_gather)"))
        fail_msg("the failed expect_plan does not name the last plan:\n%s", out);
    free(out), free(err);
}

/* A plan step has one number and one name everywhere: the plan table, the
 * "produced by" line of a failure, and the library's messages. */
static void test_plan_step_names(void **state) {
    (void)state;
    char *out, *err;
    assert_int_equal(run_text("names.yaml",
                              "name: n\nmesh: 2\ntensors: {x: {shape: [4]}}\nsteps:\n"
                              "  - distribute: {tensor: x, placements: [R], as: xd}\n"
                              "  - redistribute: {tensor: xd, to: ['S(0)'], as: y}\n"
                              "  - expect_full: {tensor: y, values: [0, 1, 2, 5]}\n",
                              &out, &err),
                     1);
    if (!strstr(out, "produced by: redistribute at ") ||
        !strstr(out, ":6:5: step 1 of 1 (mesh dim 0: R -> S(0), local slice)"))
        fail_msg("plan step in the failure:\n%s", out);
    free(out), free(err);
    /* the table numbers the same step 1 and names it the same */
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2", &m));
    lt_placement r = lt_replicate(), s0 = lt_shard(0);
    int64_t shape[1] = {4};
    lt_plan *p = NULL;
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 1, shape, &r, &s0, 1, NULL, &p));
    char table[2048], one[256];
    lt_plan_format(p, table, sizeof table);
    if (!strstr(table, "\n     1  0 ") || !strstr(table, "local slice") || strstr(table, "none ("))
        fail_msg("plan table:\n%s", table);
    assert_string_equal(lt_plan_step_format(p, 0, one, sizeof one),
                        "step 1 of 1 (mesh dim 0: R -> S(0), local slice)");
    lt_plan_free(p);
    /* a collective step with local work after it */
    lt_placement ss = lt_strided(0, 2);
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 1, shape, &ss, &r, 1, NULL, &p));
    assert_string_equal(lt_plan_step_format(p, 0, one, sizeof one),
                        "step 1 of 1 (mesh dim 0: SS(0,2) -> R, all_gather + index_select)");
    lt_plan_format(p, table, sizeof table);
    if (!strstr(table, "     1  0 ") || !strstr(table, "all_gather + index_select"))
        fail_msg("plan table:\n%s", table);
    lt_plan_free(p);
}

/* expect_plan reports every key that differs, each once, and the plan once. */
static void test_expect_plan_all_keys(void **state) {
    (void)state;
    char *out, *err;
    assert_int_equal(run_text("plan_keys.yaml",
                              "name: pk\nmesh: 2\ntensors: {x: {shape: [4]}}\nsteps:\n"
                              "  - distribute: {tensor: x, placements: ['S(0)'], as: xd}\n"
                              "  - redistribute: {tensor: xd, to: [R], as: y}\n"
                              "  - expect_plan: {collectives: [all_to_all], steps: 2, bytes: 99}\n",
                              &out, &err),
                     1);
    /* S(0) -> R of 4 f32 on 2 ranks: one all_gather; each rank receives the
     * other's 2 elements (8 bytes), 16 in all */
    const char *want = "expect_plan: collectives: expected [all_to_all], the plan issues "
                       "[all_gather]; steps: expected 2, "
                       "the plan has 1; bytes: expected 99, the plan moves 16";
    if (!strstr(out, want)) fail_msg("expect_plan message:\n%s", out);
    assert_int_equal(count_of(out, "collectives: expected"), 1);
    assert_int_equal(count_of(out, "steps: expected"), 1);
    assert_int_equal(count_of(out, "bytes: expected"), 1);
    assert_int_equal(count_of(out, "(mesh dim 0: S(0) -> R, all_gather)"), 1); /* the plan, once */
    free(out), free(err);
}

/* run --json lists every redistribute with the bytes each rank sends and
 * receives per plan step (hand counts as in test_cli: (4,3) f32 on 2x2,
 * [S(0),S(1)] -> [R,S(1)] is one all_gather on mesh dim 0 where the ranks
 * of tp coord 0 exchange 16-byte blocks and those of coord 1 8-byte ones). */
static void test_json_redistributes(void **state) {
    (void)state;
    char path[600], json[700];
    tmp_path(path, sizeof path, "jr.yaml");
    snprintf(json, sizeof json, "%s/jr.json", g_tmpdir);
    lt_test_write_file(path, "name: jr\nmesh: 2x2\ntensors: {x: {shape: [4, 3]}}\nsteps:\n"
                     "  - distribute: {tensor: x, placements: ['S(0)', 'S(1)'], as: xd}\n"
                     "  - redistribute: {tensor: xd, to: [R, 'S(1)'], as: y}\n");
    const char *args[] = {"--json", json, path};
    char *out, *err;
    assert_int_equal(lt_test_run_sc(args, 3, &out, &err), 0);
    size_t jl = 0;
    char *jt = lt_test_slurp(json, &jl);
    assert_non_null(jt);
    cJSON *j = cJSON_Parse(jt);
    assert_non_null(j);
    cJSON *cs = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(
                cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "files"), 0),
                    "scenarios"),
                0),
            "cases"),
        0);
    cJSON *rd = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cs, "redistributes"), 0);
    if (!rd) fail_msg("no redistributes in:\n%s", jt);
    if (!strstr(cJSON_GetObjectItemCaseSensitive(rd, "at")->valuestring, "jr.yaml:6:5"))
        fail_msg("at:\n%s", jt);
    cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rd, "plan"), 0);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(st, "step")->valueint, 1);
    cJSON *sent = cJSON_GetObjectItemCaseSensitive(st, "bytes_sent"),
          *recv = cJSON_GetObjectItemCaseSensitive(st, "bytes_recv");
    const int want[] = {16, 8, 16, 8};
    assert_int_equal(cJSON_GetArraySize(sent), 4);
    for (int r = 0; r < 4; r++) {
        assert_int_equal(cJSON_GetArrayItem(sent, r)->valueint, want[r]);
        assert_int_equal(cJSON_GetArrayItem(recv, r)->valueint, want[r]);
    }
    cJSON_Delete(j);
    free(jt), free(out), free(err);
    remove(path);
    remove(json);
}

static void test_usage(void **state) {
    (void)state;
    char *out, *err;
    assert_int_equal(lt_test_run_sc(NULL, 0, &out, &err), 2);
    assert_non_null(strstr(err, "usage:"));
    free(out), free(err);
    const char *a1[] = {"--bogus", "scenarios"};
    assert_int_equal(lt_test_run_sc(a1, 2, &out, &err), 2);
    assert_non_null(strstr(err, "unknown option '--bogus'"));
    free(out), free(err);
    const char *a2[] = {"--help"};
    assert_int_equal(lt_test_run_sc(a2, 1, &out, &err), 0);
    free(out), free(err);
    const char *a3[] = {"no/such/file.yaml"};
    assert_int_equal(lt_test_run_sc(a3, 1, &out, &err), 2);
    assert_non_null(strstr(err, "no/such/file.yaml:1:1: cannot open"));
    free(out), free(err);
    const char *a4[] = {"--json"};
    assert_int_equal(lt_test_run_sc(a4, 1, &out, &err), 2);
    free(out), free(err);
    const char *a5[] = {"--json", "/nonexistent-dir/x.json",
                        "scenarios/tutorials/01_row_wise.yaml"};
    assert_int_equal(lt_test_run_sc(a5, 3, &out, &err), 2);
    assert_non_null(strstr(err, "--json"));
    free(out), free(err);
    const char *a6[] = {"scenarios/tutorials"};
    assert_int_equal(lt_test_run_sc(a6, 1, &out, &err), 0);
    free(out), free(err);
}

/* Random byte edits of a valid scenario: the loader and the runner must
 * answer every one with a status (no crash, no hang, no leak). */
static void test_mutations(void **state) {
    (void)state;
    size_t len = 0;
    char *base = lt_test_slurp("scenarios/placements/strided.yaml", &len);
    assert_non_null(base);
    char *buf = malloc(len + 64);
    char path[600];
    tmp_path(path, sizeof path, "mut.yaml");
    uint64_t s = 0x9E3779B97F4A7C15ull;
    static const char alphabet[] = "[]{}:,-'\"$&*!#|>\n 0123456789SRP()x.";
    int loaded = 0, runs = 0;
    for (int it = 0; it < 1500; it++) {
        memcpy(buf, base, len);
        size_t n = len;
        int edits = 1 + (int)(s % 4);
        for (int k = 0; k < edits; k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            size_t pos = (size_t)(s >> 8) % n;
            switch (s % 4) {
            case 0: buf[pos] = alphabet[(s >> 40) % (sizeof alphabet - 1)]; break;
            case 1: buf[pos] = (char)(s >> 32); break;
            case 2: memmove(buf + pos, buf + pos + 1, n - pos - 1), n--; break;
            default: n = pos + 1; break;
            }
        }
        lt_sc_file *f = NULL;
        lt_status st = lt_sc_load_string("mut.yaml", buf, n, &f);
        if (st) {
            if (!lt_errmsg()[0])
                fail_msg("mutation %d: status %s without a message", it, lt_status_name(st));
            continue;
        }
        loaded++;
        lt_sc_file_free(f);
        if (runs < 150) {
            FILE *o = fopen(path, "wb");
            fwrite(buf, 1, n, o);
            fclose(o);
            const char *args[] = {path};
            char *out, *err;
            int rc = lt_test_run_sc(args, 1, &out, &err);
            if (rc < 0 || rc > 2) fail_msg("exit %d", rc);
            free(out);
            free(err);
            runs++;
        }
    }
    print_message("mutations: %d of 1500 loaded, %d run\n", loaded, runs);
    free(buf);
    free(base);
    remove(path);
}

/* numerics sample:K (localtensor/numerics.h) on the sweep library: every case
 * that runs in full mode runs in sample mode too, and passes the same checks
 * (expect_local and expect_full on the sampled ranks, expect_plan and
 * expect_comm for every rank): sample:2 computes values for the first and
 * last rank only, sample:64 for every rank of these meshes. The reference is
 * the full-mode run of the same files. A JSON report names the mode and the
 * ranks; `run --numerics` rejects a bad mode with exit 2. */
static void test_numerics_modes(void **state) {
    (void)state;
    const char *files[] = {"scenarios/sweeps/pairs_2d.yaml", "scenarios/sweeps/uneven_rules.yaml",
                           "scenarios/sweeps/dtypes.yaml"};
    char *out, *err, full_last[256], last[256];
    assert_int_equal(lt_test_run_sc(files, 3, &out, &err), 0);
    last_line(out, full_last, sizeof full_last);
    free(out);
    free(err);
    const char *modes[] = {"--numerics=sample:2", "--numerics=sample:64"};
    for (int m = 0; m < 2; m++) {
        const char *args[] = {modes[m], files[0], files[1], files[2]};
        int rc = lt_test_run_sc(args, 4, &out, &err);
        if (rc != 0) fail_msg("%s: exit %d\n%s%s", modes[m], rc, out, err);
        last_line(out, last, sizeof last);
        assert_string_equal(last, full_last);   /* "N passed, 0 failed, 0 errors" */
        free(out);
        free(err);
    }
    /* collectives called directly: the file's own sample:2, full, and sample:64 agree */
    const char *coll_modes[] = {"--numerics=sample:2", "--numerics=full", "--numerics=sample:64"};
    for (int m = 0; m < 3; m++) {
        const char *args[] = {coll_modes[m], "scenarios/numerics/collectives.yaml"};
        int rc = lt_test_run_sc(args, 2, &out, &err);
        last_line(out, last, sizeof last);
        if (rc != 0 || strcmp(last, "5 passed, 0 failed, 0 errors"))
            fail_msg("%s: exit %d\n%s%s", coll_modes[m], rc, out, err);
        free(out);
        free(err);
    }
    char json[600];
    tmp_path(json, sizeof json, "numerics.json");
    const char *ja[] = {"--json", json, "-k", "sample_chain", "scenarios/numerics/sampled.yaml"};
    assert_int_equal(lt_test_run_sc(ja, 5, &out, &err), 0);
    free(out);
    free(err);
    FILE *f = fopen(json, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);   /* lt_test_slurp_fp reads up to the current position */
    char *text = lt_test_slurp_fp(f);
    fclose(f);
    remove(json);
    size_t w = 0;   /* compare without whitespace: the report may be written compact or indented */
    for (size_t i = 0; text[i]; i++)
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n') text[w++] = text[i];
    text[w] = '\0';
    if (!strstr(text, "\"numerics\":\"sample:3\"") || !strstr(text, "\"sampled_ranks\":[0,2,3]"))
        fail_msg("JSON report lacks the numerics mode or the sampled ranks:\n%.2000s", text);
    free(text);
    const char *bad[] = {"--numerics", "sample:x", "scenarios/numerics/sampled.yaml"};
    assert_int_equal(lt_test_run_sc(bad, 3, &out, &err), 2);
    assert_non_null(strstr(err, "--numerics: numerics 'sample:x'"));
    free(out);
    free(err);
}

int main(int argc, char **argv) {
    (void)argc;
    lt_test_tmpdir(g_tmpdir, sizeof g_tmpdir, argv[0], "test_scenarios.tmp");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_scenarios),
        cmocka_unit_test(test_big_file),
        cmocka_unit_test(test_generated_nesting),
        cmocka_unit_test(test_loader_limits),
        cmocka_unit_test(test_wrong_expectation),
        cmocka_unit_test(test_reports),
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_no_match),
        cmocka_unit_test(test_singular),
        cmocka_unit_test(test_expect_full_holders),
        cmocka_unit_test(test_failed_verification_keeps_going),
        cmocka_unit_test(test_plan_step_names),
        cmocka_unit_test(test_origin_is_own_plan),
        cmocka_unit_test(test_expect_plan_all_keys),
        cmocka_unit_test(test_json_redistributes),
        cmocka_unit_test(test_numerics_modes),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(g_tmpdir);
    return rc;
}
