/* tools/bench/bench_backend.c — the CUDA backend against the CPU backend.
 *
 * Rows (only where the build has CUDA, `make CUDA=1`, and a device is
 * present; otherwise one line "skipped: no CUDA device: ..." and no row):
 *   - mm of x (8m, k) S(0) by w (k, n) R on 8 ranks, f32;
 *   - redistribute of a 256 MiB f32 tensor (8192, 8192) on 8 ranks, S(0) ->
 *     S(1) (an all_to_all), without verification (verify = 0).
 * Each runs the same lt_ call with the CUDA backend selected and with the
 * CPU backend selected, in this process; the row's baseline is the CPU
 * backend's GB/s, so ratio = CPU seconds / CUDA seconds (above 1: the
 * device is faster). "bytes" is the output bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/kernels/backend.h"
#include "localtensor/localtensor.h"
#include "localtensor/ops.h"
#include "tools/bench/bench.h"

enum { REPS = 5 };

static void check(lt_status st, const char *what) {
    if (st == LT_OK) return;
    fprintf(stderr, "bench: %s: %s: %s\n", what, lt_status_name(st), lt_errmsg());
    exit(2);
}

/* Waits until o's values exist: on the CUDA backend launches return at
 * once, and a copy to the host (one value here) waits for all of them. */
static void wait_done(const lt_dtensor *o) {
    const lt_tensor *t = lt_to_local(o, 0);
    if (lt_numel(t) > 0) (void)lt_get_flat(t, 0);
}

/* Median seconds of one 8-rank mm on the backend `be` names. */
static double mm_seconds(const char *be, int64_t mr, int64_t k, int64_t n) {
    check(lt_backend_select(be), be);
    lt_mesh m;
    check(lt_mesh_parse("8", &m), "mesh");
    int64_t xs[2] = {8 * mr, k}, ws[2] = {k, n};
    lt_placement s0 = lt_shard(0), r = lt_replicate();
    lt_init init = {LT_INIT_RANDOM, 3};
    lt_dtensor *x, *w;
    check(lt_dtensor_new(&m, LT_F32, 2, xs, &s0, 1, &init, &x), "init x");
    check(lt_dtensor_new(&m, LT_F32, 2, ws, &r, 1, &init, &w), "init w");
    const lt_dtensor *in[2] = {x, w};
    double t[REPS];
    for (int rep = -1; rep < REPS; rep++) { /* rep -1 warms up */
        lt_dtensor *o;
        double t0 = lt_bench_now();
        check(lt_op(LT_OP_MM, in, 2, NULL, NULL, &o, 1, NULL), "mm");
        wait_done(o);
        if (rep >= 0) t[rep] = lt_bench_now() - t0;
        lt_dtensor_free(o);
    }
    lt_dtensor_free(x);
    lt_dtensor_free(w);
    return lt_bench_median(t, REPS);
}

/* Median seconds of one 8-rank S(0) -> S(1) redistribute of (rows, cols) f32. */
static double redist_seconds(const char *be, int64_t rows, int64_t cols) {
    check(lt_backend_select(be), be);
    lt_mesh m;
    check(lt_mesh_parse("8", &m), "mesh");
    int64_t shape[2] = {rows, cols};
    lt_placement s0 = lt_shard(0), s1 = lt_shard(1);
    lt_init init = {LT_INIT_ONES, 0};
    lt_dtensor *src, *out;
    check(lt_dtensor_new(&m, LT_F32, 2, shape, &s0, 1, &init, &src), "init");
    lt_comm *c;
    check(lt_comm_new(&m, &c), "comm");
    lt_redistribute_opts o = {0};
    o.comm = c;
    double t[REPS];
    for (int rep = -1; rep < REPS; rep++) {
        lt_trace_clear(lt_comm_trace(c));
        double t0 = lt_bench_now();
        check(lt_redistribute(src, &s1, 1, &o, &out, NULL), "redistribute");
        wait_done(out);
        if (rep >= 0) t[rep] = lt_bench_now() - t0;
        lt_dtensor_free(out);
    }
    lt_comm_free(c);
    lt_dtensor_free(src);
    return lt_bench_median(t, REPS);
}

void lt_bench_backend(lt_bench *b) {
    const char *mm_name = "backend cuda vs cpu: mm 8 ranks x (512,2048)@(2048,2048) f32";
    const char *rd_name = "backend cuda vs cpu: redistribute 8 S(0)->S(1) 256M f32";
    if (!lt_bench_want(mm_name) && !lt_bench_want(rd_name)) return;
    const lt_backend *dev;
    if (lt_backend_cuda(&dev) != LT_OK) {
        const char *why = lt_errmsg();
        if (!strncmp(why, "no CUDA device: ", 16)) why += 16; /* said once */
        printf("skipped: no CUDA device: %s\n", why);
        return;
    }
    if (lt_bench_want(mm_name)) {
        size_t bytes = sizeof(float) * 8 * 512 * 2048;
        double cpu = mm_seconds("cpu", 512, 2048, 2048), gpu = mm_seconds("cuda", 512, 2048, 2048);
        lt_bench_add(b, mm_name, bytes, gpu, (double)bytes / cpu / 1e9);
    }
    if (lt_bench_want(rd_name)) {
        size_t bytes = sizeof(float) * 8192 * 8192;
        double cpu = redist_seconds("cpu", 8192, 8192), gpu = redist_seconds("cuda", 8192, 8192);
        lt_bench_add(b, rd_name, bytes, gpu, (double)bytes / cpu / 1e9);
    }
    check(lt_backend_select("cpu"), "cpu");
}
