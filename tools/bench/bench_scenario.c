/* tools/bench/bench_scenario.c — a per-rank scenario program (scenario
 * steps on LocalTensors, collectives matched rank by rank,
 * tools/scenario/scenario_spmd.c) against the same program written in C
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
 * says how many threads it had. Peak memory is measured outside the bench
 * (/usr/bin/time -v of `localtensor run` on the same file).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives_sim/program.h"
#include "kernels/pool.h"
#include "kernels/math.h"
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
                             "  - local_tensor: {shape: [%d], values: \"rank * 100 + i\", as: x}\n", N);
    for (int k = 1; k < STEPS; k++) {
        if (k % 2) used += (size_t)snprintf(t + used, cap - used, "  - local_op: {op: add_scalar, inputs: x, scalar: 1, as: x}\n");
        else
            used += (size_t)snprintf(t + used, cap - used, "  - collective: {kind: all_reduce, mesh_dim: %s, tensor: x, as: x}\n",
                                     (k / 2) % 2 ? "dp" : "tp");
    }
    return t;
}

void lt_bench_scenario(lt_bench *b) {
    const char *name = "scenario 2x4: 100-step per-rank program (vs C)";
    if (!lt_bench_want(name)) return;
    char *text = program_text();
    lt_sc_file *f = NULL;
    lt_mesh m;
    if (!text || lt_sc_load_string("bench_spmd.yaml", text, strlen(text), &f) || lt_mesh_parse("dp=2,tp=4", &m)) {
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

void lt_bench_sweep(lt_bench *b) {
    static const char *path = "scenarios/sweeps/pairs_3d_strided.yaml";
    int before = lt_threads();
    char n1[120], nn[120];
    snprintf(n1, sizeof n1, "sweep 2x2x2 40960 verified cases, 1 thread (s)");
    snprintf(nn, sizeof nn, "sweep 2x2x2 40960 verified cases, %d threads (s)", before);
    if (lt_bench_want(n1)) {
        lt_set_threads(1);
        lt_bench_add(b, n1, 0, run_sweep_once(path), NAN);
        lt_set_threads(0);
    }
    if (before > 1 && lt_bench_want(nn)) lt_bench_add(b, nn, 0, run_sweep_once(path), NAN);
}
