/* tools/bench/bench_ops.c — op dispatch overhead and per-shard matmul throughput.
 *
 * Rows:
 *   - propagation with a warm cache (lt_op_propagate: key, hash, lookup) for
 *     add of two 8-rank DTensors of 1-element shards: seconds per op;
 *   - a whole lt_op call on the same inputs (propagation, 8 per-rank
 *     kernels, 8 output allocations, wrapping): seconds per op, and the same
 *     8 kernels called directly — the difference is the dispatch overhead,
 *     a row of its own;
 *   - mm of x (8m, k) S(0) by w (k, n) R on 8 ranks (each rank one
 *     (m, k) x (k, n) gemm) against ONE cblas_sgemm of (8m, k) x (k, n) —
 *     the same FLOPs — measured in this process; ratio = its time / ours.
 * No baselines for the first two (NAN); "bytes" is the output bytes.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/kernels/pool.h"
#include "localtensor/ops.h"
#include "tools/bench/bench.h"

static void check(lt_status st, const char *what) {
    if (st == LT_OK) return;
    fprintf(stderr, "bench: %s: %s: %s\n", what, lt_status_name(st), lt_errmsg());
    exit(2);
}

#define REPS 7

static void dispatch_rows(lt_bench *b) {
    const char *n1 = "ops propagate add, warm cache, 8 ranks x 1 elem";
    const char *n2 = "ops lt_op add (all), 8 ranks x 1 elem";
    if (!lt_bench_want(n1) && !lt_bench_want(n2)) return;
    lt_mesh m;
    check(lt_mesh_parse("8", &m), "mesh");
    int64_t shape[1] = {8};
    lt_placement pl = lt_shard(0);
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_dtensor *x, *y;
    check(lt_dtensor_new(&m, LT_F32, 1, shape, &pl, 1, &init, &x), "init");
    check(lt_dtensor_new(&m, LT_F32, 1, shape, &pl, 1, &init, &y), "init");
    const lt_dtensor *in[2] = {x, y};
    const lt_spec *specs[2] = {lt_dtensor_spec(x), lt_dtensor_spec(y)};
    lt_op_args a;
    memset(&a, 0, sizeof a);
    double t[REPS];
    const int iters = 200000;
    if (lt_bench_want(n1)) {
        for (int r = 0; r < REPS; r++) {
            double t0 = lt_bench_now();
            for (int i = 0; i < iters; i++) {
                lt_op_plan *p;
                check(lt_op_propagate(LT_OP_ADD, specs, 2, &a, &p), "propagate");
                lt_op_plan_free(p);
            }
            t[r] = (lt_bench_now() - t0) / iters;
        }
        lt_bench_add(b, n1, 0, lt_bench_median(t, REPS), NAN);
    }
    if (lt_bench_want(n2)) {
        const int calls = 50000;
        for (int r = 0; r < REPS; r++) {
            double t0 = lt_bench_now();
            for (int i = 0; i < calls; i++) {
                lt_dtensor *o;
                check(lt_op(LT_OP_ADD, in, 2, &a, NULL, &o, 1, NULL), "add");
                lt_dtensor_free(o);
            }
            t[r] = (lt_bench_now() - t0) / calls;
        }
        double whole = lt_bench_median(t, REPS);
        lt_bench_add(b, n2, 8 * sizeof(float), whole, NAN);
        /* the same 8 per-rank kernels called directly: lt_op minus this is dispatch */
        const char *n3 = "ops 8 x lt_binary add alone (kernels of the row above)";
        for (int r = 0; r < REPS; r++) {
            double t0 = lt_bench_now();
            for (int i = 0; i < calls; i++)
                for (int k = 0; k < 8; k++) {
                    lt_tensor *o;
                    check(lt_binary(LT_BINARY_ADD, x->local->shards[k], y->local->shards[k], &o),
                          "binary");
                    lt_tensor_free(o);
                }
            t[r] = (lt_bench_now() - t0) / calls;
        }
        double kern = lt_bench_median(t, REPS);
        lt_bench_add(b, n3, 8 * sizeof(float), kern, NAN);
        /* the difference: what an op costs beyond its kernels (target: 250 ns) */
        lt_bench_add(b, "ops dispatch over the kernels, 8 ranks (row - row above)", 0,
                     whole - kern, NAN);
    }
    lt_dtensor_free(x);
    lt_dtensor_free(y);
}

static void matmul_row(lt_bench *b, int64_t mr, int64_t k, int64_t n) {
    char name[120];
    snprintf(name, sizeof name, "ops mm 8 ranks x (%lld,%lld)@(%lld,%lld) vs 1 sgemm",
             (long long)mr, (long long)k, (long long)k, (long long)n);
    if (!lt_bench_want(name)) return;
    lt_mesh m;
    check(lt_mesh_parse("8", &m), "mesh");
    int64_t xs[2] = {8 * mr, k}, ws[2] = {k, n};
    lt_placement s0 = lt_shard(0), r = lt_replicate();
    lt_init init = {LT_INIT_RANDOM, 3};
    lt_dtensor *x, *w;
    check(lt_dtensor_new(&m, LT_F32, 2, xs, &s0, 1, &init, &x), "init x");
    check(lt_dtensor_new(&m, LT_F32, 2, ws, &r, 1, &init, &w), "init w");
    float *A = malloc(sizeof(float) * (size_t)(8 * mr * k));   /* (8m, k) */
    float *B = malloc(sizeof(float) * (size_t)(k * n));        /* (k, n) */
    float *C = malloc(sizeof(float) * (size_t)(8 * mr * n));   /* (8m, n) */
    if (!A || !B || !C) {
        fprintf(stderr, "bench: out of memory\n");
        exit(2);
    }
    for (int64_t i = 0; i < 8 * mr * k; i++) A[i] = (float)(i % 7) * 0.1f;
    for (int64_t i = 0; i < k * n; i++) B[i] = (float)(i % 5) * 0.1f;
    memset(C, 0, sizeof(float) * (size_t)(8 * mr * n));
    const lt_dtensor *in[2] = {x, w};
    double tb[REPS], to[REPS];
    for (int rep = -1; rep < REPS; rep++) { /* rep -1 warms up both */
        /* the baseline on as many BLAS threads as our pool has (the cpu
         * backend sets OpenBLAS to one thread: kernels/backend_cpu.c) */
        int was = openblas_get_num_threads();
        openblas_set_num_threads(lt_threads());
        double t0 = lt_bench_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)(8 * mr), (blasint)n,
                    (blasint)k, 1.0f, A, (blasint)k, B, (blasint)n, 0.0f, C, (blasint)n);
        double t1 = lt_bench_now();
        openblas_set_num_threads(was);
        lt_dtensor *o;
        check(lt_op(LT_OP_MM, in, 2, NULL, NULL, &o, 1, NULL), "mm");
        double t2 = lt_bench_now();
        lt_dtensor_free(o);
        if (rep >= 0) tb[rep] = t1 - t0, to[rep] = t2 - t1;
    }
    size_t bytes = sizeof(float) * (size_t)(8 * mr * n);
    double base = lt_bench_median(tb, REPS);
    lt_bench_add(b, name, bytes, lt_bench_median(to, REPS), (double)bytes / base / 1e9);
    free(A);
    free(B);
    free(C);
    lt_dtensor_free(x);
    lt_dtensor_free(w);
}

void lt_bench_ops(lt_bench *b) {
    dispatch_rows(b);
    matmul_row(b, 256, 1024, 1024);
    matmul_row(b, 512, 2048, 2048);
    lt_op_cache_clear();
}
