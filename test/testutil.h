/* test/testutil.h — shared helpers for the cmocka tests: status checks that
 * print the error message, tensor and DTensor builders, reading back a
 * FILE. Header-only (static). */
#ifndef LT_TESTUTIL_H
#define LT_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "kernels/backend.h"
#include "kernels/tensor.h"
#include "localtensor/localtensor.h"
#include "tools/cli/cli.h"

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
    if (lt_tensor_new_on(lt_backend_cpu(), t->dtype, t->ndim, t->shape, &h) != LT_OK || lt_copy(h, t) != LT_OK)
        fail_msg("host copy: %s", lt_errmsg());
    return h;
}

/* Fails the test with the status name and lt_errmsg() when st != LT_OK. */
#define LT_CHECK(expr)                                                                   \
    do {                                                                                 \
        lt_status lt__t_ = (expr);                                                       \
        if (lt__t_ != LT_OK)                                                             \
            fail_msg("%s -> %s: %s", #expr, lt_status_str(lt__t_), lt_errmsg());         \
    } while (0)

/* Fails unless expr returns `want`; prints the message otherwise too. */
#define LT_EXPECT_STATUS(expr, want)                                                     \
    do {                                                                                 \
        lt_status lt__t_ = (expr);                                                       \
        if (lt__t_ != (want))                                                            \
            fail_msg("%s -> %s (wanted %s): %s", #expr, lt_status_str(lt__t_),           \
                     lt_status_str(want), lt_errmsg());                                  \
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
static inline lt_dtensor *lt_test_distribute(const lt_mesh *m, const lt_tensor *full, const char *pl) {
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
static inline lt_dtensor *lt_test_arange(const char *mesh_s, const char *pls, int ndim, const int64_t *shape,
                                         lt_mesh *m) {
    lt_placement pl[LT_MESH_MAX_DIMS];
    int np;
    LT_CHECK(lt_mesh_parse(mesh_s, m));
    LT_CHECK(lt_placements_parse(pls, pl, LT_MESH_MAX_DIMS, &np));
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_dtensor *d = NULL;
    LT_CHECK(lt_dtensor_init(m, LT_F32, ndim, shape, pl, np, &init, &d));
    return d;
}

#endif
