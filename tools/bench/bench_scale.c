/* tools/bench/bench_scale.c — the cost curve of one redistribute as the mesh
 * grows: [S(0), S(1), R] -> [R, S(0), S(1)] of a (16384, 4096) f32 tensor
 * (256 MiB) on 2x2x2, 4x4x4, 8x8x8 and 16x16x16 (8 to 4,096 ranks), and of a
 * (16384, 16384) f32 tensor (1 GiB) on 16x16x16.
 *
 * Each row times the whole job the CLI runs (absolute seconds, the fastest
 * of SCALE_REPS calls; the blocks each call leaves are given back before
 * the next):
 * init of the source, planning (cold cache), execution and verification of
 * every step. "bytes" is the LOGICAL tensor size, so GB/s is logical bytes
 * per second and the memcpy ratio shows the time per logical byte: replicas
 * share one buffer, so it should barely move from 8 ranks to 4,096. The
 * "run" and "verify" rows split the 8x8x8 and 16x16x16 jobs, warm (after
 * one untimed run: plan cached, freed blocks kept for reuse, no init; the
 * fastest of SCALE_REPS each):
 * redistribute without verification, and the verification alone (with
 * minus without).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "localtensor/kernels/backend.h"
#include "localtensor/localtensor.h"
#include "tools/bench/bench.h"

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

/* Each row is the fastest of this many calls: the same job's first-touch page
 * faults cost 0.3 to 1.7 s from one call to the next on a virtual machine
 * (the same fault count, the host backing guest memory), a noise only the
 * minimum sees through. */
#define SCALE_REPS 3

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
    int np;
    check(lt_mesh_parse(mesh_s, &m), "mesh");
    check(lt_placements_parse("S(0),S(1),R", sp, 3, &np), "placements");
    check(lt_placements_parse("R,S(0),S(1)", dp, 3, &np), "placements");
    int64_t shape[2] = {16384, cols};
    size_t logical = (size_t)shape[0] * (size_t)shape[1] * 4;
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_dtensor *src = NULL;
    double t_all = INFINITY, tr = INFINITY, tv = INFINITY;
    for (int i = 0; all && i < SCALE_REPS; i++) {
        double t = lt_bench_now();
        check(lt_dtensor_new(&m, LT_F32, 2, shape, sp, 3, &init, &src), "init");
        run_once(src, dp, 1, 1);
        t_all = fmin(t_all, lt_bench_now() - t);
        lt_dtensor_free(src);
        src = NULL;
        lt_backend_cpu_trim();
    }
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
