/* test/testutil.h — shared helpers for the cmocka tests: status checks that
 * print the error message, tensor and DTensor builders, reading back a
 * FILE, and running one test of a binary by name (-k). Header-only
 * (static). Every test binary includes it. */
#ifndef LT_TESTUTIL_H
#define LT_TESTUTIL_H

#include <fnmatch.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "localtensor/kernels/backend.h"
#include "localtensor/kernels/tensor.h"
#include "localtensor/localtensor.h"
#include "tools/cli/cli.h"

/* Running some tests of a binary by name: every test binary takes
 *   -k PATTERN  only the tests whose name contains PATTERN (or matches it,
 *               when it has a shell wildcard: * ? [); repeatable (any of
 *               them); no test matching is an error (exit 1) that lists the
 *               binary's tests
 *   -l, --list  the names of its tests, one a line
 * e.g. `build/test_planner -k brute_force`. Every main ends with
 * cmocka_run_group_tests, which this header replaces by lt__test_run_group,
 * so no main reads these arguments itself: they come from the process's
 * command line (/proc/self/cmdline). */
static inline int lt__test_args(char **args, int cap) {
    static char buf[8192];
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    int argc = 0;
    for (size_t i = 0; i < n && argc < cap; i += strlen(buf + i) + 1) args[argc++] = buf + i;
    return argc;
}

static inline int lt__test_selected(const char *name, const char *const *k, int nk) {
    for (int i = 0; i < nk; i++)
        if (strpbrk(k[i], "*?[") ? fnmatch(k[i], name, 0) == 0 : strstr(name, k[i]) != NULL)
            return 1;
    return nk == 0;
}

static inline int lt__test_run_group(const char *group, const struct CMUnitTest *tests, size_t n,
                                     CMFixtureFunction setup, CMFixtureFunction teardown) {
    char *args[256];
    const char *k[16];
    int argc = lt__test_args(args, 256), nk = 0, list = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(args[i], "-k") && i + 1 < argc && nk < 16) k[nk++] = args[++i];
        else if (!strncmp(args[i], "-k", 2) && args[i][2] && nk < 16) k[nk++] = args[i] + 2;
        else if (!strcmp(args[i], "-l") || !strcmp(args[i], "--list")) list = 1;
    }
    if (list) {
        for (size_t i = 0; i < n; i++) printf("%s\n", tests[i].name);
        return 0;
    }
    if (!nk) return _cmocka_run_group_tests(group, tests, n, setup, teardown);
    struct CMUnitTest *sel = malloc(sizeof *sel * (n ? n : 1));
    size_t m = 0;
    if (!sel) return 1;
    for (size_t i = 0; i < n; i++)
        if (lt__test_selected(tests[i].name, k, nk)) sel[m++] = tests[i];
    int rc = 1;
    if (m) {
        rc = _cmocka_run_group_tests(group, sel, m, setup, teardown);
    } else {
        const char *slash = strrchr(args[0], '/');
        fprintf(stderr, "%s: no test matches", slash ? slash + 1 : args[0]);
        for (int i = 0; i < nk; i++) fprintf(stderr, " -k %s", k[i]);
        fprintf(stderr, "; its tests:");
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %s", tests[i].name);
        fprintf(stderr, "\n");
    }
    free(sel);
    return rc;
}
#undef cmocka_run_group_tests
#define cmocka_run_group_tests(group_tests, group_setup, group_teardown)                           \
    lt__test_run_group(#group_tests, group_tests, sizeof(group_tests) / sizeof((group_tests)[0]),  \
                       group_setup, group_teardown)

/* LT_TEST_BACKEND=NAME: every tensor the test binary makes without naming a
 * backend goes to backend NAME (tools/run-tests.sh runs the op, collective
 * and redistribute tests a second time on cuda-emu, whose memory the host
 * cannot read in place). Call first in main. */
static inline void lt_test_backend_from_env(void) {
    const char *b = getenv("LT_TEST_BACKEND");
    if (b && *b && lt_backend_select(b) != LT_OK) {
        fprintf(stderr, "LT_TEST_BACKEND=%s: %s\n", b, lt_errmsg());
        exit(2);
    }
}

/* A contiguous copy of t on the CPU backend (new; the caller frees): what a
 * test reads raw bytes from, since t's own memory may be a device's. */
static inline lt_tensor *lt_test_host_copy(const lt_tensor *t) {
    lt_tensor *h = NULL;
    if (lt_tensor_new_on(lt_backend_cpu(), t->dtype, t->ndim, t->shape, &h) != LT_OK ||
        lt_copy(h, t) != LT_OK)
        fail_msg("host copy: %s", lt_errmsg());
    return h;
}

/* Fails the test with the status name and lt_errmsg() when st != LT_OK. */
#define LT_CHECK(expr)                                                                   \
    do {                                                                                 \
        lt_status lt__t_ = (expr);                                                       \
        if (lt__t_ != LT_OK)                                                             \
            fail_msg("%s -> %s: %s", #expr, lt_status_name(lt__t_), lt_errmsg());         \
    } while (0)

/* Fails unless expr returns `want`; prints the message otherwise too. */
#define LT_EXPECT_STATUS(expr, want)                                                     \
    do {                                                                                 \
        lt_status lt__t_ = (expr);                                                       \
        if (lt__t_ != (want))                                                            \
            fail_msg("%s -> %s (wanted %s): %s", #expr, lt_status_name(lt__t_),           \
                     lt_status_name(want), lt_errmsg());                                  \
    } while (0)

/* Fails unless t has the given shape and row-major values (exact compare). */
static inline void lt_test_expect_values(const lt_tensor *t, int ndim, const int64_t *shape,
                                         const double *vals, const char *what) {
    if (t->ndim != ndim) fail_msg("%s: ndim %d, wanted %d", what, t->ndim, ndim);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (t->shape[i] != shape[i])
            fail_msg("%s: dim %d has size %lld, wanted %lld", what, i, (long long)t->shape[i],
                     (long long)shape[i]);
        n *= shape[i];
    }
    for (int64_t i = 0; i < n; i++) {
        double a = lt_get_flat(t, i);
        if (a != vals[i])
            fail_msg("%s: element %lld is %g, wanted %g", what, (long long)i, a, vals[i]);
    }
}

/* Everything written to f so far, NUL-terminated (malloc; the caller frees). */
static inline char *lt_test_slurp_fp(FILE *f) {
    fflush(f);
    long n = ftell(f);
    if (n < 0) n = 0;
    char *s = malloc((size_t)n + 1);
    if (!s) fail_msg("out of memory");
    rewind(f);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    return s;
}

/* A folder for a test binary's temporary files, next to the binary (the
 * build directory): argv0's folder, "/", name; created. The test removes it
 * when it is done. */
static inline void lt_test_tmpdir(char *buf, size_t n, const char *argv0, const char *name) {
    const char *slash = strrchr(argv0, '/');
    if (slash) snprintf(buf, n, "%.*s/%s", (int)(slash - argv0), argv0, name);
    else snprintf(buf, n, "%s", name);
    mkdir(buf, 0700);
}

/* The whole file at path (malloc; the caller frees), its length into *len
 * when len is not NULL; NULL when it cannot be read. */
static inline char *lt_test_slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    char *s = lt_test_slurp_fp(f);
    if (len) *len = (size_t)ftell(f);
    fclose(f);
    return s;
}

/* Writes text to path (fails the test when it cannot). */
static inline void lt_test_write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) fail_msg("cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* Runs `localtensor run ARGS...` in-process (n <= 62 arguments); *out and
 * *err get the captured streams (malloc; the caller frees). Returns the
 * exit code. */
static inline int lt_test_run_sc(const char *const *args, int n, char **out, char **err) {
    char *argv[64];
    argv[0] = (char *)"run";
    for (int i = 0; i < n && i < 62; i++) argv[i + 1] = (char *)args[i];
    FILE *o = tmpfile(), *e = tmpfile();
    if (!o || !e) fail_msg("tmpfile failed");
    int rc = lt_sc_main(n + 1, argv, o, e);
    *out = lt_test_slurp_fp(o);
    *err = lt_test_slurp_fp(e);
    fclose(o);
    fclose(e);
    return rc;
}

/* full distributed on m with placements pl ("S(0),R"); a new DTensor. */
static inline lt_dtensor *lt_test_distribute(const lt_mesh *m, const lt_tensor *full,
                                             const char *pl) {
    lt_placement p[LT_MESH_MAX_DIMS];
    int n;
    LT_CHECK(lt_placements_parse(pl, p, LT_MESH_MAX_DIMS, &n));
    lt_dtensor *d = NULL;
    LT_CHECK(lt_distribute(m, full, p, n, &d));
    return d;
}

/* SANITIZED: 1 under AddressSanitizer or valgrind (several times slower),
 * where the wide sweeps of a test are drawn, not exhaustive; the plain
 * build checks every case. valgrind (make valgrind) is marked by its
 * preload library. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#include <string.h>
#define SANITIZED (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload"))
#endif

/* An f32 DTensor of the given shape, initialised with arange, on mesh
 * mesh_s (parsed into *m) with placements pls ("S(0),R"); the caller frees
 * it. Fails the test on any error. */
static inline lt_dtensor *lt_test_arange(const char *mesh_s, const char *pls, int ndim,
                                         const int64_t *shape, lt_mesh *m) {
    lt_placement pl[LT_MESH_MAX_DIMS];
    int np;
    LT_CHECK(lt_mesh_parse(mesh_s, m));
    LT_CHECK(lt_placements_parse(pls, pl, LT_MESH_MAX_DIMS, &np));
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_dtensor *d = NULL;
    LT_CHECK(lt_dtensor_new(m, LT_F32, ndim, shape, pl, np, &init, &d));
    return d;
}

/* cmocka setup and teardown: the tests between them run with the min-comm
 * rule set (today's choices; localtensor/ops.h), then the default again. */
static inline int lt_test_min_comm_setup(void **state) {
    (void)state;
    lt_op_rules_select(LT_OP_RULES_MIN_COMM);
    return 0;
}

static inline int lt_test_rules_teardown(void **state) {
    (void)state;
    lt_op_rules_select(LT_OP_RULES_DEFAULT);
    return 0;
}

#endif
