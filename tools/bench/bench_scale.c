/* tools/bench/bench_scale.c — the cost curve of one redistribute as the mesh
 * grows: [S(0), S(1), R] -> [R, S(0), S(1)] of a (16384, 4096) f32 tensor
 * (256 MiB) on 2x2x2, 4x4x4, 8x8x8 and 16x16x16 (8 to 4,096 ranks), and of a
 * (16384, 16384) f32 tensor (1 GiB) on 16x16x16.
 *
 * Each "all" row times the whole job the CLI runs, cold, as the CLI runs it:
 * in a fresh process (this binary again, LT_BENCH_SCALE_JOB set; absolute
 * seconds, the fastest of SCALE_REPS such processes): init of the source,
 * planning (cold cache), execution and verification of every step. Not in
 * this process: a cold job's cost is its first touch of some 1 GiB, and
 * here that depended on what the rows before had left in the C library's
 * heap (which pages were still mapped, which ranges asked for huge pages),
 * not on the job. "bytes" is the LOGICAL tensor size, so GB/s is logical bytes
 * per second and the memcpy ratio shows the time per logical byte: replicas
 * share one buffer, so it should barely move from 8 ranks to 4,096. The
 * "run" and "verify" rows split the 8x8x8 and 16x16x16 jobs, warm (after
 * one untimed run: plan cached, freed blocks kept for reuse, no init; the
 * fastest of SCALE_REPS each):
 * redistribute without verification, and the verification alone (with
 * minus without).
 */
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "localtensor/kernels/backend.h"
#include "localtensor/localtensor.h"
#include "tools/bench/bench.h"

extern char **environ;

static void check(lt_status st, const char *what) {
    if (st == LT_OK) return;
    fprintf(stderr, "bench: %s: %s: %s\n", what, lt_status_name(st), lt_errmsg());
    exit(2);
}

/* One timed redistribute of src to dst; verify on or off. */
static double run_once(const lt_dtensor *src, const lt_placement *dst, int verify, int cold) {
    lt_redistribute_opts o = {0};
    o.verify = verify;
    o.no_cache = cold;
    lt_dtensor *out = NULL;
    double t = lt_bench_now();
    check(lt_redistribute(src, dst, lt_dtensor_mesh(src)->ndim, &o, &out, NULL), "redistribute");
    t = lt_bench_now() - t;
    lt_dtensor_free(out);
    return t;
}

/* Each row is the fastest of this many calls (for "all": processes): the
 * same job's first-touch page faults cost 0.3 to 1.7 s from one process to
 * the next on a virtual machine (the same fault count, the host backing
 * guest memory), a noise only the minimum sees through. */
#define SCALE_REPS 3

/* The rows' placements: [S(0), S(1), R] -> [R, S(0), S(1)]. */
static void job_placements(lt_placement sp[3], lt_placement dp[3]) {
    int np;
    check(lt_placements_parse("S(0),S(1),R", sp, 3, &np), "placements");
    check(lt_placements_parse("R,S(0),S(1)", dp, 3, &np), "placements");
}

/* The cold job of a row, timed: init, then redistribute with verification
 * (cold plan). */
static double cold_job(const lt_mesh *m, const int64_t *shape) {
    lt_placement sp[3], dp[3];
    job_placements(sp, dp);
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_dtensor *src = NULL;
    double t = lt_bench_now();
    check(lt_dtensor_new(m, LT_F32, 2, shape, sp, 3, &init, &src), "init");
    run_once(src, dp, 1, 1);
    t = lt_bench_now() - t;
    lt_dtensor_free(src);
    return t;
}

int lt_bench_scale_child(void) {
    const char *job = getenv("LT_BENCH_SCALE_JOB");
    char mesh_s[32];
    long long cols;
    if (!job) return 0;
    lt_mesh m;
    if (sscanf(job, "%31s %lld", mesh_s, &cols) != 2) {
        fprintf(stderr, "bench: LT_BENCH_SCALE_JOB=%s: want \"MESH COLS\"\n", job);
        exit(2);
    }
    check(lt_mesh_parse(mesh_s, &m), "mesh");
    int64_t shape[2] = {16384, (int64_t)cols};
    printf("%.9f\n", cold_job(&m, shape));
    return 1;
}

/* Seconds of the cold job in a fresh process of this binary. posix_spawn,
 * not fork: a fork would mark every page of this process copy-on-write, and
 * the rows after it would pay a fault on their first write to each. */
static double cold_job_child(const char *mesh_s, int64_t cols) {
    char exe[4096], job[64], out[64] = {0};
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    int fd[2];
    if (n <= 0 || pipe(fd)) {
        fprintf(stderr, "bench: cannot start the bench binary again\n");
        exit(2);
    }
    exe[n] = 0;
    snprintf(job, sizeof job, "%s %lld", mesh_s, (long long)cols);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    char *argv[] = {exe, NULL};
    pid_t pid;
    fflush(stdout);
    setenv("LT_BENCH_SCALE_JOB", job, 1);
    int bad = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
    unsetenv("LT_BENCH_SCALE_JOB");
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    size_t got = 0;
    ssize_t r = 1;
    while (!bad && r > 0 && got < sizeof out - 1) {   /* to the child's exit */
        r = read(fd[0], out + got, sizeof out - 1 - got);
        if (r > 0) got += (size_t)r;
    }
    close(fd[0]);
    int status = 0;
    double t = got > 0 ? strtod(out, NULL) : 0;
    if (bad || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0 || !(t > 0)) {
        fprintf(stderr, "bench: the cold job %s failed\n", job);
        exit(2);
    }
    return t;
}

static void scale_rows(lt_bench *b, const char *mesh_s, int64_t cols, int split) {
    char name[120], nrun[120], nver[120];
    const char *size = cols == 4096 ? "256M" : "1G";
    snprintf(name, sizeof name, "scale %s [S(0),S(1),R]->[R,S(0),S(1)] %s: all", size, mesh_s);
    snprintf(nrun, sizeof nrun, "scale %s [S(0),S(1),R]->[R,S(0),S(1)] %s: run", size, mesh_s);
    snprintf(nver, sizeof nver, "scale %s [S(0),S(1),R]->[R,S(0),S(1)] %s: verify", size, mesh_s);
    int all = lt_bench_want(name), parts = split && (lt_bench_want(nrun) || lt_bench_want(nver));
    if (!all && !parts) return;
    lt_mesh m;
    lt_placement sp[3], dp[3];
    check(lt_mesh_parse(mesh_s, &m), "mesh");
    job_placements(sp, dp);
    int64_t shape[2] = {16384, cols};
    size_t logical = (size_t)shape[0] * (size_t)shape[1] * 4;
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_dtensor *src = NULL;
    double t_all = INFINITY, tr = INFINITY, tv = INFINITY;
    for (int i = 0; all && i < SCALE_REPS; i++) t_all = fmin(t_all, cold_job_child(mesh_s, cols));
    if (parts) {
        check(lt_dtensor_new(&m, LT_F32, 2, shape, sp, 3, &init, &src), "init");
        run_once(src, dp, 1, 0);   /* warm: plan cache, and blocks of every size for reuse */
        for (int i = 0; i < SCALE_REPS; i++) {
            tr = fmin(tr, run_once(src, dp, 0, 0));
            tv = fmin(tv, run_once(src, dp, 1, 0));
        }
        tv -= tr;
    }
    lt_dtensor_free(src);
    lt_backend_cpu_trim();   /* the baseline's buffers next, not on top of the cache */
    double base = (double)logical / lt_bench_memcpy_once(b, logical) / 1e9;
    if (all) lt_bench_add(b, name, logical, t_all, base);
    if (parts) {
        lt_bench_add(b, nrun, logical, tr, base);
        lt_bench_add(b, nver, logical, tv > 0 ? tv : 0, base);
    }
}

void lt_bench_scale(lt_bench *b) {
    scale_rows(b, "2x2x2", 4096, 0);
    scale_rows(b, "4x4x4", 4096, 0);
    scale_rows(b, "8x8x8", 4096, 1);
    scale_rows(b, "16x16x16", 4096, 0);
    scale_rows(b, "16x16x16", 16384, 1);
}
