/* tools/bench/bench_train.c — a 100-step training-like loop, whole, against
 * its floor: the shape of a tensor- plus data-parallel MLP step, so that a
 * change to op dispatch, the collectives or memory reuse shows in one row
 * that looks like a real job rather than a single call.
 *
 * 2x4 mesh (mesh dim 0: data parallel, mesh dim 1: tensor parallel), f32,
 * two layers, B = 128 tokens, D = 256, F = 1024. Per layer and step:
 *   FSDP all_gather   W1 (D, F) [S(0), S(1)] -> [R, S(1)],
 *                     W2 (F, D) [S(1), S(0)] -> [R, S(0)]          (over dp)
 *   forward           h = x @ W1 [S(0), S(1)], a = relu(h),
 *                     p = a @ W2 [S(0), P], y = p -> [S(0), R]     (all_reduce over tp)
 *   backward-shaped   da = y @ W2^T [S(0), S(1)],
 *                     dW2 = a^T @ y [P, S(0)] -> [S(1), S(0)],
 *                     dW1 = x^T @ da [P, S(1)] -> [S(0), S(1)]     (reduce_scatter over dp)
 *   update            W -= 1e-6 * dW (two elementwise ops per weight)
 * and y is the next layer's x. The row's time is the 100 steps after 3
 * warm-up steps; its baseline is the floor measured in this process: the
 * sgemm time of the step's unique products (the 8 ranks' products of one
 * matmul together are one global product, timed as one cblas_sgemm on
 * lt_threads() BLAS threads) plus the memcpy time of the unique bytes the
 * redistributes write, times 100; ratio = floor / ours ("bytes": those
 * unique bytes). The relu and updates are not in the floor.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/kernels/pool.h"
#include "localtensor/localtensor.h"
#include "localtensor/ops.h"
#include "tools/bench/bench.h"

enum { TB = 128, TD = 256, TF = 1024, LAYERS = 2, STEPS = 100, WARM = 3 };

static void check(lt_status st, const char *what) {
    if (st == LT_OK) return;
    fprintf(stderr, "bench: train: %s: %s: %s\n", what, lt_status_name(st), lt_errmsg());
    exit(2);
}

static void pls(const char *s, lt_placement *pl) {
    int n;
    check(lt_placements_parse(s, pl, LT_MESH_MAX_DIMS, &n), s);
}

/* *out = x redistributed to placements s; adds its unique bytes to *moved. */
static void redist(const lt_dtensor *x, const char *s, uint64_t *moved, lt_dtensor **out) {
    lt_placement pl[LT_MESH_MAX_DIMS];
    pls(s, pl);
    lt_redistribute_opts o = {0};
    check(lt_redistribute(x, pl, 2, &o, out, NULL), s);
    uint64_t u;
    check(lt_spec_unique_bytes(lt_dtensor_spec(*out), &u), "unique bytes");
    *moved += u;
}

static lt_dtensor *mm(const lt_dtensor *a, const lt_dtensor *b) {
    lt_dtensor *o;
    check(lt_dtensor_matmul(a, b, &o), "matmul");
    return o;
}

static lt_dtensor *tr(const lt_dtensor *a) {
    lt_dtensor *o;
    check(lt_dtensor_transpose(a, 0, 1, &o), "transpose");
    return o;
}

/* *w = *w - 1e-6 * g (the old *w freed). */
static void sgd(lt_dtensor **w, const lt_dtensor *g) {
    lt_op_args a;
    memset(&a, 0, sizeof a);
    a.scalar = 1e-6;
    lt_dtensor *s, *n;
    check(lt_op(LT_OP_MUL_SCALAR, &g, 1, &a, NULL, &s, 1, NULL), "lr * grad");
    check(lt_dtensor_binary(LT_BINARY_SUB, *w, s, &n), "w - lr * grad");
    lt_dtensor_free(s);
    lt_dtensor_free(*w);
    *w = n;
}

static void free_all(lt_dtensor **d, int n) {
    for (int i = 0; i < n; i++) lt_dtensor_free(d[i]);
}

/* One layer of one step on x (borrowed); returns y (the next x). */
static lt_dtensor *layer(const lt_dtensor *x, lt_dtensor **w1, lt_dtensor **w2,
                         uint64_t *moved) {
    lt_dtensor *w1f, *w2f, *h, *a, *p, *y, *g1, *g2, *dw1, *dw2;
    redist(*w1, "R,S(1)", moved, &w1f);
    redist(*w2, "R,S(0)", moved, &w2f);
    h = mm(x, w1f);
    check(lt_dtensor_unary(LT_UNARY_RELU, h, &a), "relu");
    p = mm(a, w2f);
    redist(p, "S(0),R", moved, &y);
    lt_dtensor *w2t = tr(w2f), *at = tr(a), *xt = tr(x);
    lt_dtensor *da = mm(y, w2t), *pw2 = mm(at, y), *pw1 = mm(xt, da);
    redist(pw2, "S(1),S(0)", moved, &dw2);
    redist(pw1, "S(0),S(1)", moved, &dw1);
    g1 = dw1, g2 = dw2;
    sgd(w1, g1);
    sgd(w2, g2);
    lt_dtensor *tmp[] = {w1f, w2f, h, a, p, w2t, at, xt, da, pw2, pw1, dw2, dw1};
    free_all(tmp, (int)(sizeof tmp / sizeof tmp[0]));
    return y;
}

/* One step over every layer; returns the unique bytes the redistributes wrote. */
static uint64_t step(const lt_dtensor *x0, lt_dtensor **w) {
    uint64_t moved = 0;
    lt_dtensor *x = NULL;
    for (int l = 0; l < LAYERS; l++) {
        lt_dtensor *y = layer(l ? x : x0, &w[2 * l], &w[2 * l + 1], &moved);
        lt_dtensor_free(x);
        x = y;
    }
    lt_dtensor_free(x);
    return moved;
}

/* The floor's sgemm seconds of one step: per layer the five products. */
static double floor_step_sgemm(void) {
    double t = lt_bench_sgemm_once(TB, TD, TF)     /* x @ W1 */
               + lt_bench_sgemm_once(TB, TF, TD)   /* a @ W2 */
               + lt_bench_sgemm_once(TB, TD, TF)   /* y @ W2^T */
               + lt_bench_sgemm_once(TF, TB, TD)   /* a^T @ y */
               + lt_bench_sgemm_once(TD, TB, TF);  /* x^T @ da */
    return LAYERS * t;
}

static void make(const lt_mesh *m, const char *s, int64_t r, int64_t c, uint64_t seed,
                 lt_dtensor **out) {
    lt_placement pl[LT_MESH_MAX_DIMS];
    pls(s, pl);
    lt_init init = {LT_INIT_RANDN, seed};
    check(lt_dtensor_new(m, LT_F32, 2, (int64_t[]){r, c}, pl, 2, &init, out), s);
}

void lt_bench_train(lt_bench *b) {
    const char *name = "train 100 steps 2x4 tp+fsdp mlp 2 layers 128x256x1024";
    if (!lt_bench_want(name)) return;
    lt_mesh m;
    check(lt_mesh_parse("2x4", &m), "mesh");
    lt_dtensor *x, *w[2 * LAYERS];
    make(&m, "S(0),R", TB, TD, 1, &x);
    for (int l = 0; l < LAYERS; l++) {
        make(&m, "S(0),S(1)", TD, TF, 10 + (uint64_t)l, &w[2 * l]);
        make(&m, "S(1),S(0)", TF, TD, 20 + (uint64_t)l, &w[2 * l + 1]);
    }
    uint64_t moved = 0;
    for (int i = 0; i < WARM; i++) moved = step(x, w);
    double t0 = lt_bench_now();
    for (int i = 0; i < STEPS; i++) step(x, w);
    double t = lt_bench_now() - t0;
    enum { FREPS = 5 };
    double fl[FREPS];
    for (int i = 0; i < FREPS; i++)
        fl[i] = floor_step_sgemm() + lt_bench_memcpy_once(b, (size_t)moved);
    double floor = STEPS * lt_bench_median(fl, FREPS);
    size_t bytes = (size_t)moved * STEPS;
    lt_bench_add(b, name, bytes, t, (double)bytes / floor / 1e9);
    free_all(w, 2 * LAYERS);
    lt_dtensor_free(x);
}
