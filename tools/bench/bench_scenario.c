/* tools/bench/bench_scenario.c — a per-rank scenario program (scenario
 * steps on LocalTensors, collectives matched rank by rank,
 * tools/scenario/scenario_match.c) against the same program written in C
 * for lt_program_run.
 *
 * The program, on a dp=2 x tp=4 mesh (8 ranks), 100 steps: a local_tensor
 * of 16 f32 per rank, then 99 steps alternating local_op add_scalar and an
 * all_reduce along tp or dp (one collective every other step). The row
 * times one run of the loaded case (parsing excluded) and compares with the
 * C per-rank program doing the same kernels and collectives (fill, add
 * scalar, all_reduce into a fresh output) through lt_program_run: ratio =
 * C seconds / scenario seconds (1 would mean the scenario engine costs
 * nothing on top). Bytes: what the steps write, 16 f32 per rank per step.
 *
 * The sweep rows run scenarios/sweeps/pairs_3d_strided.yaml (40,960
 * verified redistributes on 2x2x2; load included, report to /dev/null)
 * once with lt_set_threads(1) and once with the default thread count:
 * absolute seconds (target: <= 2 s), no baseline; the second row's name
 * says how many threads it had. Each run starts with empty plan caches, as
 * a fresh `localtensor run` does. The peak-memory row runs the CLI next to
 * the bench binary (`localtensor run` on the same file, default threads)
 * as a child process: its bytes column is the child's peak resident set
 * (target: <= 64 MiB), its seconds the child's wall time.
 *
 * The plan-search rows plan the sweep's 40,960 pairs alone (lt__plan_build,
 * min-cost, f32): without the shared search space (every search from
 * scratch), with it starting empty (as the sweep does), and with it warm
 * (the same pairs again); absolute seconds, one thread.
 *
 * The load row loads a generated file near the loader's size cap
 * (LT_SC_MAX_FILE_BYTES): 140,000 steps in two scenarios of 70,000 (a
 * case holds at most LT_SC_MAX_UNROLLED), each step defining a new name
 * from the first one, 7.5 MB; median of 5 loads from memory (parse, names,
 * checks). Absolute seconds (target: <= 0.5 s; the quadratic loader took
 * 79 s), bytes: the file's size, no baseline. test/test_scenario_load.c
 * holds the same file to a CPU limit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "localtensor/collectives_sim/program.h"
#include "localtensor/kernels/backend.h"
#include "localtensor/kernels/pool.h"
#include "localtensor/kernels/math.h"
#include "localtensor/plan/plan_impl.h"
#include "tools/bench/bench.h"
#include "tools/scenario/scenario_impl.h"

enum { STEPS = 100, N = 16 };

static lt_status body(lt_proc *p, void *ud) {
    (void)ud;
    int64_t n = N;
    lt_tensor *x = NULL;
    lt_status st = lt_tensor_new(LT_F32, 1, &n, &x);
    for (int64_t i = 0; i < n && !st; i++) lt_set_flat(x, i, lt_proc_rank(p) * 100 + (double)i);
    for (int k = 1; k < STEPS && !st; k++) {
        lt_tensor *y = NULL;
        if (k % 2) st = lt_binary_scalar(LT_BINARY_ADD, x, 1, 0, &y);
        else st = lt_proc_all_reduce(p, (k / 2) % 2 ? 1 : 0, x, LT_REDOP_SUM, &y);
        lt_tensor_free(x);
        x = y;
    }
    lt_tensor_free(x);
    return st;
}

static char *program_text(void) {
    size_t cap = 64 * STEPS + 512, used = 0;
    char *t = malloc(cap);
    if (!t) return NULL;
    used += (size_t)snprintf(t + used, cap - used,
                             "name: bench_spmd\nmesh: {shape: [2, 4], names: [dp, tp]}\nsteps:\n"
                             "  - local_tensor: {shape: [%d], values: \"rank * 100 + i\", as: x}\n",
                             N);
    for (int k = 1; k < STEPS; k++) {
        if (k % 2)
            used +=
                (size_t)snprintf(t + used, cap - used,
                                 "  - local_op: {op: add_scalar, inputs: x, scalar: 1, as: x}\n");
        else
            used += (size_t)snprintf(
                t + used, cap - used,
                "  - collective: {kind: all_reduce, mesh_dim: %s, tensor: x, as: x}\n",
                (k / 2) % 2 ? "dp" : "tp");
    }
    return t;
}

/* The load row's file (malloc'd; the caller frees), its length in *len. */
static char *load_text(size_t *len) {
    enum { SCEN = 2, PER = 70000 };
    size_t cap = (size_t)SCEN * PER * 64 + 4096, used = 0;
    char *t = malloc(cap);
    if (!t) return NULL;
    for (int k = 0; k < SCEN; k++) {
        used +=
            (size_t)snprintf(t + used, cap - used,
                             "- name: big%d\n  mesh: 2\n  tensors:\n    x0: {shape: [4]}\n"
                             "  steps:\n    - distribute: {tensor: x0, placements: [R], as: d0}\n",
                             k);
        for (int i = 1; i < PER; i++)
            used += (size_t)snprintf(t + used, cap - used,
                                     "    - redistribute: {tensor: d0, to: [R], as: d%d}\n", i);
    }
    *len = used;
    return t;
}

static void bench_load(lt_bench *b) {
    const char *name = "scenario load: 140,000 steps near the 8 MiB cap (s)";
    if (!lt_bench_want(name)) return;
    size_t len = 0;
    char *text = load_text(&len);
    if (!text || len > LT_SC_MAX_FILE_BYTES) {
        fprintf(stderr, "bench: %s: %s\n", name,
                text ? "the file is over the cap" : "out of memory");
        exit(2);
    }
    enum { REPS = 5 };
    double ts[REPS];
    for (int i = 0; i < REPS; i++) {
        lt_sc_file *f = NULL;
        double t0 = lt_bench_now();
        lt_status st = lt_sc_load_string("bench_load.yaml", text, len, &f);
        ts[i] = lt_bench_now() - t0;
        if (st || lt_sc_file_cases(f) != 2) {
            fprintf(stderr, "bench: %s: %s\n", name, lt_errmsg());
            exit(2);
        }
        lt_sc_file_free(f);
    }
    lt_bench_add(b, name, len, lt_bench_median(ts, REPS), NAN);
    free(text);
}

void lt_bench_scenario(lt_bench *b) {
    bench_load(b);
    const char *name = "scenario 2x4: 100-step per-rank program (vs C)";
    if (!lt_bench_want(name)) return;
    char *text = program_text();
    lt_sc_file *f = NULL;
    lt_mesh m;
    if (!text || lt_sc_load_string("bench_spmd.yaml", text, strlen(text), &f) ||
        lt_mesh_parse("dp=2,tp=4", &m)) {
        fprintf(stderr, "bench: %s: %s\n", name, text ? lt_errmsg() : "out of memory");
        exit(2);
    }
    enum { REPS = 31 };
    double ts[REPS], tc[REPS];
    for (int i = 0; i < REPS; i++) {
        sc_case *c = &f->scen[0].cases[0];
        double t0 = lt_bench_now();
        lt__sc_run_case(c, f->arena, NULL);
        ts[i] = lt_bench_now() - t0;
        if (c->res.status != LT_SC_PASS) {
            fprintf(stderr, "bench: %s: the scenario did not pass: %s\n", name,
                    c->res.nfails ? c->res.fails[0].message : "?");
            exit(2);
        }
        t0 = lt_bench_now();
        lt_status st = lt_program_run(&m, body, NULL, NULL, NULL);
        tc[i] = lt_bench_now() - t0;
        if (st) {
            fprintf(stderr, "bench: %s: C program: %s\n", name, lt_errmsg());
            exit(2);
        }
    }
    size_t bytes = (size_t)STEPS * 8 * N * 4;
    double s = lt_bench_median(ts, REPS), cs = lt_bench_median(tc, REPS);
    lt_bench_add(b, name, bytes, s, (double)bytes / cs / 1e9);
    lt_sc_file_free(f);
    free(text);
}

/* Seconds of one `localtensor run` of path in process (exits on failure). */
static double run_sweep_once(const char *path) {
    FILE *devnull = fopen("/dev/null", "w");
    if (!devnull) {
        fprintf(stderr, "bench: cannot open /dev/null\n");
        exit(2);
    }
    lt_sc_options o;
    memset(&o, 0, sizeof o);
    o.out = devnull;
    o.err = stderr;
    lt_plan_cache_clear();
    double t0 = lt_bench_now();
    int rc = lt_sc_run_paths(&path, 1, &o);
    double t = lt_bench_now() - t0;
    fclose(devnull);
    if (rc != 0) {
        fprintf(stderr, "bench: %s: exit %d\n", path, rc);
        exit(2);
    }
    return t;
}

/* Peak resident bytes and wall seconds of `localtensor run path` (the CLI
 * in the bench binary's folder) as a child process; exits on failure. */
static void run_sweep_child(const char *path, size_t *rss, double *secs) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 32);
    if (n <= 0) {
        fprintf(stderr, "bench: cannot find the bench binary\n");
        exit(2);
    }
    exe[n] = 0;
    char *end = strrchr(exe, '/');
    if (!end) exit(2);
    strcpy(end + 1, "localtensor");
    fflush(stdout);   /* or the child's freopen writes the buffered rows again */
    fflush(stderr);
    double t0 = lt_bench_now();
    pid_t pid = fork();
    if (pid == 0) {
        FILE *devnull = freopen("/dev/null", "w", stdout);
        (void)devnull;
        execl(exe, exe, "run", path, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    /* the children's peak: this is the bench's only child */
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0 || getrusage(RUSAGE_CHILDREN, &ru)) {
        fprintf(stderr, "bench: %s run %s failed\n", exe, path);
        exit(2);
    }
    *secs = lt_bench_now() - t0;
    *rss = (size_t)ru.ru_maxrss * 1024;   /* Linux: KiB */
}

/* The sweep's pairs: every list of {R, S(0), S(1), SS(0,2)} -> every list of
 * {R, S(0), S(1), SS(1,2)} on 2x2x2, for its ten shapes. */
static const int64_t sweep_shapes[10][2] = {{8, 8}, {16, 4}, {5, 7}, {12, 10}, {9, 13},
                                            {3, 3}, {1, 9},  {7, 1}, {2, 6},   {0, 4}};

static void sweep_option(int from, int x, lt_placement *p) {
    switch (x) {
    case 0: *p = lt_replicate(); break;
    case 1: *p = lt_shard(0); break;
    case 2: *p = lt_shard(1); break;
    default: *p = lt_strided(from ? 0 : 1, 2); break;
    }
}

/* Plans every pair of the sweep's shape s (exits on failure). */
static void plan_shape(const lt_mesh *m, int s, int shared) {
        for (int pair = 0; pair < 64 * 64; pair++) {
            lt_placement sp[3], dp[3];
            for (int i = 0; i < 3; i++) {
                sweep_option(1, (pair / 64) >> (2 * (2 - i)) & 3, &sp[i]);
                sweep_option(0, (pair % 64) >> (2 * (2 - i)) & 3, &dp[i]);
            }
            lt_spec spec;
            lt_plan *p = NULL;
            if (lt_spec_init(m, LT_F32, 2, sweep_shapes[s], sp, 3, &spec) ||
                lt__plan_build(&spec, dp, LT_PLANNER_MIN_COST, shared, &p)) {
                fprintf(stderr, "bench: planning the sweep: %s\n", lt_errmsg());
                exit(2);
            }
            lt_plan_free(p);
        }
}

/* Seconds to plan every pair of the sweep, shape by shape; warm: each
 * shape's pairs planned once before the timed pass. */
static double plan_sweep_once(const lt_mesh *m, int shared, int warm) {
    double t = 0;
    for (int s = 0; s < 10; s++) {
        if (warm) plan_shape(m, s, shared);
        double t0 = lt_bench_now();
        plan_shape(m, s, shared);
        t += lt_bench_now() - t0;
    }
    return t;
}

void lt_bench_sweep(lt_bench *b) {
    static const char *path = "scenarios/sweeps/pairs_3d_strided.yaml";
    int before = lt_threads();
    char n1[120], nn[120];
    snprintf(n1, sizeof n1, "sweep 2x2x2 40960 verified cases, 1 thread (s)");
    snprintf(nn, sizeof nn, "sweep 2x2x2 40960 verified cases, %d threads (s)", before);
    /* first, with this process's caches emptied: a forked child's peak
     * (ru_maxrss) starts from the resident size of this process at the
     * fork, which the in-process rows below would raise */
    const char *nr = "sweep 2x2x2 peak RSS (bytes; CLI child, s)";
    if (lt_bench_want(nr)) {
        size_t rss;
        double secs;
        lt_plan_cache_clear();
        lt_backend_cpu_trim();
        run_sweep_child(path, &rss, &secs);
        lt_bench_add(b, nr, rss, secs, NAN);
    }
    if (lt_bench_want(n1)) {
        lt_set_threads(1);
        lt_bench_add(b, n1, 0, run_sweep_once(path), NAN);
        lt_set_threads(0);
    }
    if (before > 1 && lt_bench_want(nn)) lt_bench_add(b, nn, 0, run_sweep_once(path), NAN);
    const char *ps[3] = {"plan search 40960 sweep pairs, unshared (s)",
                         "plan search 40960 sweep pairs, shared from empty (s)",
                         "plan search 40960 sweep pairs, shared warm (s)"};
    lt_mesh m;
    if (lt_mesh_parse("2x2x2", &m)) exit(2);
    lt_set_threads(1);
    for (int k = 0; k < 3; k++) {
        lt_plan_cache_clear();
        if (lt_bench_want(ps[k]))
            lt_bench_add(b, ps[k], 0, plan_sweep_once(&m, k > 0, k == 2), NAN);
    }
    lt_plan_cache_clear();
    lt_set_threads(0);
}
