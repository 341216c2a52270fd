/* test/program_testutil.h — what the tests of per-rank programs share
 * (test/test_program.c, test/test_program_p2p.c): the record rank
 * functions write into, builders of 1-d tensors, and running a program that
 * must hang.
 *
 * Rank functions never assert (a cmocka failure would jump off a rank's
 * stack): they note the first difference in the record, which the test
 * checks after the run. Include after test/testutil.h.
 */
#ifndef LT_TEST_PROGRAM_TESTUTIL_H
#define LT_TEST_PROGRAM_TESTUTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "localtensor/collectives_sim/program.h"

#define MAXW 16

typedef struct rec {
    char err[512];          /* first difference seen by any rank */
    lt_status st[MAXW];     /* the status of the call each rank watched */
    char msg[MAXW][512];    /* its message */
    int line_a, line_b;     /* source lines of the two sides of a hang */
    int line[MAXW];         /* the source line of each rank's watched call */
    int ran[MAXW];          /* how many times each rank's function ran */
    lt_proc *h0;            /* rank 0's handle */
    int flag;               /* per-test switch */
} rec;

static inline lt_mesh mesh_of(const char *s) {
    lt_mesh m;
    if (lt_mesh_parse(s, &m)) fail_msg("mesh %s: %s", s, lt_errmsg());
    return m;
}

static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline void note(rec *u, const char *fmt, ...) {
    if (u->err[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->err, sizeof u->err, fmt, ap);
    va_end(ap);
}

/* A new 1-d tensor of n values v(i) = a + b*i (NULL on failure); the
 * caller frees it. */
static inline lt_tensor *line_of(lt_dtype dt, int64_t n, double a, double b) {
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) v[i] = a + b * (double)i;
    lt_tensor *t = NULL;
    if (lt_tensor_from_doubles(dt, 1, &n, v, n, &t)) t = NULL;
    free(v);
    return t;
}

/* Records the status (and message) of the call rank r watched. */
static inline void watch(rec *u, int r, lt_status st) {
    u->st[r] = st;
    snprintf(u->msg[r], sizeof u->msg[r], "%s", st ? lt_errmsg() : "");
}

static inline void expect_in(const char *text, const char *what) {
    if (!strstr(text, what)) fail_msg("'%s' not found in:\n%s", what, text);
}

/* The report's whole text (caller frees). */
static inline char *text_of(const lt_match_report *r) {
    size_t n = lt_match_report_format(r, NULL, 0);
    char *s = malloc(n + 1);
    assert_non_null(s);
    lt_match_report_format(r, s, n + 1);
    return s;
}

/* Runs a program that must hang with `kind`: LT_MISMATCH at once, the
 * headline in lt_errmsg(), every waiting rank's call cancelled. Returns
 * the report (caller frees with lt_match_report_free) and, when text is
 * not NULL, its whole text (caller frees). */
static inline lt_match_report *run_hang(const char *mesh, lt_proc_fn fn, rec *u,
                                        lt_hang_kind kind, char **text) {
    lt_mesh m = mesh_of(mesh);
    lt_match_report *rep = NULL;
    double t0 = now();
    LT_EXPECT_STATUS(lt_program_run(&m, fn, u, NULL, &rep), LT_MISMATCH);
    double dt = now() - t0;
    if (dt > 1.0) print_message("(slow machine? the hang took %.2f s to report)\n", dt);
    assert_non_null(rep);
    char head[4096];
    snprintf(head, sizeof head, "%s", lt_errmsg());
    expect_in(head, "would hang (");
    expect_in(head, lt_hang_kind_name(kind));
    if (rep->kind != kind)
        fail_msg("kind %s, wanted %s: %s", lt_hang_kind_name(rep->kind), lt_hang_kind_name(kind),
                 head);
    char *t = text_of(rep);
    assert_true(strncmp(t, head, strlen(head)) == 0);   /* lt_errmsg() is the headline */
    for (int r = 0; r < m.world; r++)
        if (rep->ranks[r].state == LT_RANK_WAITING) {
            if (u->st[r] != LT_MISMATCH)
                fail_msg("rank %d's waiting call returned %s", r, lt_status_name(u->st[r]));
            expect_in(u->msg[r], "cancelled: the program would hang");
        }
    if (text) *text = t;
    else free(t);
    return rep;
}

#endif
