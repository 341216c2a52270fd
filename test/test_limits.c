/* test/test_limits.c — sizes at the edges: tensors without elements whose
 * other dims are huge, and work that would not fit in memory.
 *
 * A (0, 2^62) tensor holds nothing and must work everywhere (distribute,
 * from_local, redistribute, the CLI), without building anything sized by its
 * huge dim. Work that cannot fit must be refused up front, with the message
 * "... needs X for the shards of all N ranks, more than this machine's Y",
 * before it allocates. The memory budget of these tests comes from
 * LOCALTENSOR_MEMORY_LIMIT and the real runs are small, so even a broken
 * check could not eat this machine's memory; the issue-sized cases are
 * checked on the estimate alone, which allocates nothing.
 *
 * Expected values are worked out by hand in the comments (the split rules
 * of docs/SEMANTICS.md §2, the copies each step holds).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "localtensor/localtensor.h"
#include "tools/cli/cli.h"
#include "tools/scenario/scenario.h"
#include "test/testutil.h"
#include "localtensor/plan/plan_impl.h"
#include "localtensor/verify/verify_impl.h"
#include "kernels/pool_impl.h"

#define P61 ((int64_t)1 << 61)
#define P62 ((int64_t)1 << 62)
#define GIB ((uint64_t)1 << 30)
#define MIB ((uint64_t)1 << 20)

/* ---- helpers ------------------------------------------------------------------------ */

/* Runs a CLI subcommand in this process with stdout and stderr captured
 * into buf (cut at n - 1 bytes); returns its exit code. */
static int cli(int (*fn)(int, char **), const char *const *args, int nargs, char *buf, size_t n) {
    char *argv[32];
    for (int i = 0; i < nargs && i < 31; i++) argv[i] = (char *)args[i];
    argv[nargs] = NULL;
    fflush(stdout);
    fflush(stderr);
    FILE *t = tmpfile();
    assert_non_null(t);
    int so = dup(1), se = dup(2);
    dup2(fileno(t), 1);
    dup2(fileno(t), 2);
    int rc = fn(nargs, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    rewind(t);
    size_t k = fread(buf, 1, n - 1, t);
    buf[k] = '\0';
    fclose(t);
    return rc;
}

static void expect_text(const char *text, const char *want) {
    if (!strstr(text, want)) fail_msg("output lacks '%s':\n%s", want, text);
}

/* ---- tensors without elements ------------------------------------------------------------ */

/* (0, 2^62) with S(1) on 2 ranks: (0, 2^61) each, at offsets 0 and 2^61. */
static void test_empty_huge_library(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement s1[1], r[1];
    int np;
    int64_t g[2] = {0, P62}, half[2] = {0, P61};
    LT_CHECK(lt_mesh_parse("2", &m));
    LT_CHECK(lt_placements_parse("S(1)", s1, 1, &np));
    LT_CHECK(lt_placements_parse("R", r, 1, &np));
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_dtensor *d = NULL, *back = NULL, *fl = NULL;
    LT_CHECK(lt_dtensor_new(&m, LT_F32, 2, g, s1, 1, &init, &d));
    for (int k = 0; k < 2; k++) {
        const lt_tensor *t = lt_to_local(d, k);
        assert_int_equal(t->shape[0], 0);
        assert_int_equal(t->shape[1], P61);
    }
    lt_redistribute_opts o;
    memset(&o, 0, sizeof o);
    o.verify = 1;
    lt_dtensor *rep = NULL;
    LT_CHECK(lt_redistribute(d, r, 1, &o, &rep, NULL));
    assert_int_equal(lt_to_local(rep, 1)->shape[1], P62);
    LT_CHECK(lt_redistribute(rep, s1, 1, &o, &back, NULL));
    assert_int_equal(lt_to_local(back, 1)->shape[1], P61);
    lt_tensor *full = NULL;
    LT_CHECK(lt_full_tensor_direct(back, &full));
    assert_int_equal(full->shape[1], P62);
    lt_tensor_free(full);
    /* from_local of two empty (0, 2^61) shards */
    lt_tensor *sh[2];
    for (int k = 0; k < 2; k++) LT_CHECK(lt_tensor_new(LT_F32, 2, half, &sh[k]));
    LT_CHECK(lt_from_local(&m, sh, s1, 1, 1, &fl));
    assert_int_equal(fl->shape[1], P62);
    /* shards whose strides fit, (0, 2^60, 4), but whose global shape's do
     * not: (0, 2^61, 4) has a dim-0 stride of 2^63. Refused, not wrapped. */
    int64_t narrow[3] = {0, (int64_t)1 << 60, 4};
    lt_tensor *sh3[2];
    lt_dtensor *bad = NULL;
    for (int k = 0; k < 2; k++) LT_CHECK(lt_tensor_new(LT_F32, 3, narrow, &sh3[k]));
    LT_EXPECT_STATUS(lt_from_local(&m, sh3, s1, 1, 0, &bad), LT_OVERFLOW);
    expect_text(lt_errmsg(), "strides overflow 64 bits");
    assert_null(bad);
    for (int k = 0; k < 2; k++) lt_tensor_free(sh3[k]);
    for (int k = 0; k < 2; k++) lt_tensor_free(sh[k]);
    lt_dtensor_free(fl);
    lt_dtensor_free(back);
    lt_dtensor_free(rep);
    lt_dtensor_free(d);
}

/* The reproducers of the CLI: both printed a SIGSEGV before. */
static void test_empty_huge_cli(void **state) {
    (void)state;
    static char out[65536];
    const char *show[] = {"show",         "--mesh", "2", "--shape", "0,4611686018427387904",
                          "--placements", "S(1)"};
    assert_int_equal(cli(lt_cli_show, show, 7, out, sizeof out), 0);
    expect_text(out, "(0, 2305843009213693952)");
    const char *red[] = {"redistribute", "--mesh", "2",    "--shape", "0,4611686018427387904",
                         "--from",       "R",      "--to", "S(1)"};
    assert_int_equal(cli(lt_cli_redistribute, red, 9, out, sizeof out), 0);
    expect_text(out, "(0, 2305843009213693952)");
    expect_text(out, "verified: yes");
    const char *ss[] = {"redistribute", "--mesh",       "2x2",  "--shape", "0,4611686018427387904",
                        "--from",       "SS(1,2),S(1)", "--to", "R,R"};
    assert_int_equal(cli(lt_cli_redistribute, ss, 9, out, sizeof out), 0);
}

/* ---- memory ------------------------------------------------------------------------------ */

/* Bytes of the largest shard of a layout of a shape that every split
 * divides evenly: numel / (product of the mesh dims that shard). Replicas
 * share one buffer, so a layout without Partial holds the full tensor once. */
static uint64_t even_shard(const lt_mesh *m, const lt_placement *pl, uint64_t full) {
    uint64_t t = full;
    for (int i = 0; i < m->ndim; i++)
        if (pl[i].kind == LT_PL_SHARD || pl[i].kind == LT_PL_STRIDED) t /= (uint64_t)m->shape[i];
    return t;
}

/* The redistribute of the report: 16384 x 4096 f32 (256 MiB) on 8x8x8 from
 * [S(0), S(1), R] to [R, S(0), S(1)]. It was killed by the kernel when every
 * rank held its own copy (2 GiB of source, 16 GiB at the widest step).
 * Replicas share one buffer, so every state of this plan (no Partial) holds
 * the 256 MiB once. A min-cost step holds its input, what the collective
 * received (a step of the collective-move table) and its output; verifying a step holds the output,
 * two shards of it, and 7 x 8 bytes per index of each dim for the source's
 * owner tables, one shard's index lists and the runs: (16384 + 4096) x 56,
 * 5 x 8 more for the index lists and runs of every further thread of the
 * pool, and LT__VERIFY_RANK_BYTES per rank of bookkeeping. */
static void test_redistribute_estimate(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement src[3], dst[3];
    int np;
    int64_t shape[2] = {16384, 4096};
    uint64_t full = (uint64_t)16384 * 4096 * 4;
    LT_CHECK(lt_mesh_parse("8x8x8", &m));
    LT_CHECK(lt_placements_parse("S(0),S(1),R", src, 3, &np));
    LT_CHECK(lt_placements_parse("R,S(0),S(1)", dst, 3, &np));
    lt_plan *p = NULL;
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 2, shape, src, dst, 3, NULL, &p));
    uint64_t want = 0, want_nv = 0,
             tables = (16384 + 4096) * (56 + 40 * (uint64_t)(lt__pool_width() - 1)) +
                      512 * LT__VERIFY_RANK_BYTES;
    for (int s = 0; s < p->nsteps; s++) {
        const lt_placement *after = p->steps[s].after;
        /* a step of the collective-move table holds what it received too */
        uint64_t run = (s > 0 ? full : 0) + full + (p->steps[s].move_ ? full : 0);
        uint64_t ver = full + 2 * even_shard(&m, after, full) + tables;
        if (run > want_nv) want_nv = run;
        if (run > want) want = run;
        if (ver > want) want = ver;
    }
    uint64_t got;
    int step;
    LT_CHECK(lt__plan_peak_bytes(p, 1, &got, &step));
    assert_int_equal(got, want);
    assert_true(got <= 3 * full);   /* at most 768 MiB (it was 34 GB) */
    LT_CHECK(lt__plan_peak_bytes(p, 0, &got, &step));
    assert_int_equal(got, want_nv);
    /* refused by the estimate alone, naming the step */
    setenv("LOCALTENSOR_MEMORY_LIMIT", "500M", 1);   /* (or less, when less is available) */
    LT_EXPECT_STATUS(lt__plan_check_memory(p, 1, 0), LT_NOMEM);
    expect_text(lt_errmsg(), "with its verification) needs ");
    expect_text(lt_errmsg(), "for the shards of all 512 ranks, more than this machine's ");
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    lt_plan_free(p);
    /* a plan without steps views the source: only verification allocates.
     * (8) f32 S(0) on 2 ranks: two shards of 16 bytes and 8 indices x 56
     * bytes = 448: 480; 8 x 40 more per further thread; the bookkeeping of
     * 2 ranks. */
    int64_t eight = 8;
    LT_CHECK(lt_mesh_parse("2", &m));
    LT_CHECK(lt_placements_parse("S(0)", src, 1, &np));
    LT_CHECK(lt_plan_redistribute(&m, LT_F32, 1, &eight, src, src, 1, NULL, &p));
    assert_int_equal(p->nsteps, 0);
    LT_CHECK(lt__plan_peak_bytes(p, 1, &got, &step));
    assert_int_equal(got, 480 + 320 * (uint64_t)(lt__pool_width() - 1) + 2 * LT__VERIFY_RANK_BYTES);
    assert_int_equal(step, -1);
    LT_CHECK(lt__plan_peak_bytes(p, 0, &got, &step));
    assert_int_equal(got, 0);
    lt_plan_free(p);
}

/* The CLI refuses that redistribute before it builds the source: fast, and
 * (with a 256 MiB budget, what the source alone needs) without allocating
 * shards even if the up-front check were gone: the source and the widest
 * step need 256 MiB + 512 MiB (this plan's steps are table steps). */
static void test_redistribute_cli_refuses_fast(void **state) {
    (void)state;
    static char out[8192];
    setenv("LOCALTENSOR_MEMORY_LIMIT", "256M", 1);
    const char *a[] = {"redistribute", "--mesh",      "8x8x8", "--shape",    "16384,4096",
                       "--from",       "S(0),S(1),R", "--to",  "R,S(0),S(1)"};
    int rc = cli(lt_cli_redistribute, a, 9, out, sizeof out);
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    assert_int_equal(rc, 2);
    expect_text(out, "this redistribute (its source, then step ");
    expect_text(out, "needs 768.0 MiB for the shards of all 512 ranks, more than this machine's "
                     "256.0 MiB of memory allowed by LOCALTENSOR_MEMORY_LIMIT");
}

/* The redistribute of the report, run for real in a child process whose
 * address space is capped with setrlimit(RLIMIT_AS) at what it maps already
 * plus 600 MiB: the source and the widest step need 256 + 512 MiB, so the
 * CLI must refuse cleanly (exit 2, "needs ... left to this process
 * (ulimit)") before allocating shards, never be killed. */
static void test_redistribute_refused_under_rlimit(void **state) {
    (void)state;
    FILE *t = tmpfile();
    assert_non_null(t);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsetenv("LOCALTENSOR_MEMORY_LIMIT");
        long page = sysconf(_SC_PAGESIZE);
        unsigned long long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (!f || fscanf(f, "%llu", &pages) != 1) _exit(90);
        fclose(f);
        struct rlimit rl;
        rl.rlim_cur = rl.rlim_max = (rlim_t)(pages * (unsigned long long)page + (600ull << 20));
        if (setrlimit(RLIMIT_AS, &rl)) _exit(91);
        dup2(fileno(t), 1);
        dup2(fileno(t), 2);
        char *argv[] = {(char *)"redistribute", (char *)"--mesh",
                        (char *)"8x8x8",        (char *)"--shape",
                        (char *)"16384,4096",   (char *)"--from",
                        (char *)"S(0),S(1),R",  (char *)"--to",
                        (char *)"R,S(0),S(1)",  NULL};
        int rc = lt_cli_redistribute(9, argv);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    char *out = lt_test_slurp_fp(t);
    fclose(t);
    if (!WIFEXITED(status))
        fail_msg("the child was killed by signal %d:\n%s", WTERMSIG(status), out);
    if (WEXITSTATUS(status) != 2) fail_msg("exit %d, wanted 2:\n%s", WEXITSTATUS(status), out);
    expect_text(out, "this redistribute (its source, then step ");
    expect_text(out, "needs 768.0 MiB for the shards of all 512 ranks, more than this machine's ");
    expect_text(out, "of memory left to this process (ulimit)");
    free(out);
}

/* A real run, small: (64, 64) f32 (16 KiB) on 2x2 from [S(0), S(1)] to
 * [R, R] takes two all_gathers; every state holds the 16 KiB once (replicas
 * share a buffer). The second step holds its input, what it received and
 * its output: 48 KiB, more than a 32 KiB budget, so lt_redistribute refuses
 * before running any step. */
static void test_redistribute_refused_before_running(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement src[2], dst[2];
    int np;
    int64_t shape[2] = {64, 64};
    LT_CHECK(lt_mesh_parse("2x2", &m));
    LT_CHECK(lt_placements_parse("S(0),S(1)", src, 2, &np));
    LT_CHECK(lt_placements_parse("R,R", dst, 2, &np));
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_dtensor *d = NULL, *out = NULL;
    LT_CHECK(lt_dtensor_new(&m, LT_F32, 2, shape, src, 2, &init, &d));
    lt_comm *c;
    LT_CHECK(lt_comm_new(&m, &c));
    lt_redistribute_opts o;
    memset(&o, 0, sizeof o);
    o.comm = c;
    setenv("LOCALTENSOR_MEMORY_LIMIT", "32K", 1);
    lt_status st = lt_redistribute(d, dst, 2, &o, &out, NULL);
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    LT_EXPECT_STATUS(st, LT_NOMEM);
    assert_null(out);
    expect_text(lt_errmsg(), "this redistribute (step 2) needs 48.0 KiB for the shards of all 4 "
                             "ranks, more than this machine's 32.0 KiB");
    assert_int_equal(lt_trace_count(lt_comm_trace(c)), 0); /* no collective ran */
    LT_CHECK(lt_redistribute(d, dst, 2, &o, &out, NULL));   /* without the budget it runs */
    lt_dtensor_free(out);
    lt_comm_free(c);
    lt_dtensor_free(d);
}

/* `show --mesh 65536 --shape 65536 --placements R` held 16 GiB of shards
 * when every replica had its own; they share one buffer of 256 KiB now,
 * refused under a 128 KiB budget with the same message. */
static void test_show_refused(void **state) {
    (void)state;
    static char out[8192];
    setenv("LOCALTENSOR_MEMORY_LIMIT", "128K", 1);
    const char *a[] = {"show", "--mesh", "256", "--shape", "65536", "--placements", "R"};
    int rc = cli(lt_cli_show, a, 7, out, sizeof out);
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    assert_int_equal(rc, 2);
    expect_text(out, "needs 256.0 KiB for the shards of all 256 ranks, more than this machine's "
                     "128.0 KiB of memory allowed by LOCALTENSOR_MEMORY_LIMIT");
}

/* --json builds a cJSON node per value (LT_JSON_BYTES_PER_VALUE = 192 bytes
 * budgeted for each): 64 ranks x 16384 replicated f32 = 1,048,576 values =
 * 192 MiB of document for 4 MiB of shards, refused under a 64 MiB budget
 * before the document is built; the same without --json runs. */
static void test_json_document_refused(void **state) {
    (void)state;
    static char out[8192];
    setenv("LOCALTENSOR_MEMORY_LIMIT", "64M", 1);
    const char *a[] = {"show", "--mesh", "64", "--shape", "16384", "--placements", "R", "--json"};
    int rc = cli(lt_cli_show, a, 8, out, sizeof out);
    const char *b[] = {"redistribute", "--mesh", "64",   "--shape", "16384",
                       "--from",       "S(0)",   "--to", "R",       "--json"};
    static char out2[8192];
    int rc2 = cli(lt_cli_redistribute, b, 10, out2, sizeof out2);
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    assert_int_equal(rc, 2);
    expect_text(out, "--json: the --json document needs 192.0 MiB");
    assert_int_equal(rc2, 2);
    expect_text(out2, "--json: the --json document needs 192.0 MiB");
}

/* The `collective` step of a scenario: an all_gather of a big tensor on
 * many ranks ate all memory. Scaled: 65536 f32 on 64 ranks, replicated (one
 * shared buffer of 256 KiB), all_gathered: the group's one result is 64 x
 * 256 KiB = 16 MiB, refused under an 8 MiB budget at the step's
 * file:line:col. */
static void test_collective_step_refused(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/lt_limits_%ld.yaml", (long)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    const char *text =
        "name: big_all_gather\n"
        "mesh: 64\n"
        "tensors: {x: {shape: [65536]}}\n"
        "steps:\n"
        "  - distribute: {tensor: x, placements: [R], as: xd}\n"
        "  - collective: {kind: all_gather, mesh_dim: 0, tensor: xd, dim: 0, as: g}\n";
    fputs(text, f);
    fclose(f);
    FILE *o = tmpfile(), *e = tmpfile();
    char *argv[] = {(char *)"run", path, NULL};
    setenv("LOCALTENSOR_MEMORY_LIMIT", "8M", 1);
    int rc = lt_sc_main(2, argv, o, e);
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    static char buf[8192];
    rewind(o);
    size_t k = fread(buf, 1, sizeof buf - 1, o);
    buf[k] = '\0';
    fclose(o);
    fclose(e);
    remove(path);
    assert_int_equal(rc, 2);
    char where[128];
    snprintf(where, sizeof where, "%s:6:5:", path);
    expect_text(buf, where);
    expect_text(buf, "all_gather on mesh dim 0 needs 16.0 MiB for the shards of all 64 ranks, more "
                     "than this machine's 8.0 MiB");
}

/* distribute's own check, and a budget that is not a size. */
static void test_distribute_refused(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement r[1];
    int np;
    int64_t n = 1 << 16;
    LT_CHECK(lt_mesh_parse("64", &m));
    LT_CHECK(lt_placements_parse("R", r, 1, &np));
    lt_init init = {LT_INIT_ZEROS, 0};
    lt_dtensor *d = NULL;
    setenv("LOCALTENSOR_MEMORY_LIMIT", "255K", 1);   /* 64 replicas share one 256 KiB buffer */
    LT_EXPECT_STATUS(lt_dtensor_new(&m, LT_F32, 1, &n, r, 1, &init, &d), LT_NOMEM);
    expect_text(lt_errmsg(), "this layout needs 256.0 KiB for the shards of all 64 ranks, more "
                             "than this machine's 255.0 KiB");
    setenv("LOCALTENSOR_MEMORY_LIMIT", "256K", 1);
    LT_CHECK(lt_dtensor_new(&m, LT_F32, 1, &n, r, 1, &init, &d));
    lt_dtensor_free(d);
    d = NULL;
    setenv("LOCALTENSOR_MEMORY_LIMIT", "16X", 1);
    LT_EXPECT_STATUS(lt_dtensor_new(&m, LT_F32, 1, &n, r, 1, &init, &d), LT_INVALID);
    expect_text(lt_errmsg(), "LOCALTENSOR_MEMORY_LIMIT: '16X' is not a size");
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
}

/* An op's outputs: 4096 f32 replicated on 64 ranks is 1 MiB in all; their
 * sum needs another 1 MiB, refused under a 512 KiB budget. */
static void test_op_refused(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement r[1];
    int np;
    int64_t n = 4096;
    LT_CHECK(lt_mesh_parse("64", &m));
    LT_CHECK(lt_placements_parse("R", r, 1, &np));
    lt_init init = {LT_INIT_ONES, 0};
    lt_dtensor *x = NULL, *y = NULL;
    LT_CHECK(lt_dtensor_new(&m, LT_F32, 1, &n, r, 1, &init, &x));
    setenv("LOCALTENSOR_MEMORY_LIMIT", "512K", 1);
    lt_status st = lt_dtensor_binary(LT_BINARY_ADD, x, x, &y);
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    LT_EXPECT_STATUS(st, LT_NOMEM);
    assert_null(y);
    expect_text(
        lt_errmsg(),
        "add needs 1.0 MiB for the shards of all 64 ranks, more than this machine's 512.0 KiB");
    LT_CHECK(lt_dtensor_binary(LT_BINARY_ADD, x, x, &y));
    lt_dtensor_free(y);
    lt_dtensor_free(x);
}

/* all_reduce and broadcast once computed NULL + offset (clang UBSan): run
 * the reproducer, P -> R on 2 ranks, through the CLI. */
static void test_partial_to_replicate_cli(void **state) {
    (void)state;
    static char out[16384];
    const char *a[] = {"redistribute", "--mesh", "2", "--shape", "4", "--from", "P", "--to", "R"};
    assert_int_equal(cli(lt_cli_redistribute, a, 9, out, sizeof out), 0);
    expect_text(out, "verified: yes");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_huge_library),
        cmocka_unit_test(test_empty_huge_cli),
        cmocka_unit_test(test_redistribute_estimate),
        cmocka_unit_test(test_redistribute_cli_refuses_fast),
        cmocka_unit_test(test_redistribute_refused_under_rlimit),
        cmocka_unit_test(test_redistribute_refused_before_running),
        cmocka_unit_test(test_show_refused),
        cmocka_unit_test(test_json_document_refused),
        cmocka_unit_test(test_collective_step_refused),
        cmocka_unit_test(test_distribute_refused),
        cmocka_unit_test(test_op_refused),
        cmocka_unit_test(test_partial_to_replicate_cli),
    };
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
