/* tools/bench/bench_workload.c — two real workloads, whole, against their floor.
 *
 * Rows (2x4 mesh, f32, no verification, warm plan caches):
 *   - "workload redistribute": a (2048, 2048) tensor [S(0), S(1)] redistributed
 *     to [R, S(0)], that to [S(1), R], then full_tensor;
 *   - "workload tp mlp": x (512, 1024) [R, R] @ W1 (1024, 4096) [R, S(1)], relu,
 *     @ W2 (4096, 1024) [R, S(0)], the Partial result redistributed to [R, R].
 * Each row's baseline is its floor, measured in this process: the sgemm time of
 * the unique products (a dp replica computes what its twin computes: counted
 * once) on the same threads, plus the memcpy time of the unique bytes the
 * redistributes write (pre-touched buffers); ratio = floor time / our time, so
 * 1 is the floor. "bytes" is those unique bytes. Relu is not in the floor.
 *
 * For each workload two more rows, no baseline: the minor page faults of its
 * first repetition (the process's first run of it) and of its second, as a
 * count in the "bytes" column (the time column is 0). A caching allocator
 * that keeps the first run's blocks makes the second's count small. Each
 * workload starts from an empty block cache (lt_backend_cpu_trim), as in a
 * process of its own, so it never pays for evicting earlier rows' blocks.
 *
 * tools/bench/torch_localtensor.py times the same workloads under PyTorch's
 * LocalTensorMode for the side-by-side ratio.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "localtensor/kernels/backend.h"
#include "localtensor/kernels/pool.h"
#include "localtensor/localtensor.h"
#include "localtensor/ops.h"
#include "tools/bench/bench.h"

static void check(lt_status st, const char *what) {
    if (st == LT_OK) return;
    fprintf(stderr, "bench: %s: %s: %s\n", what, lt_status_name(st), lt_errmsg());
    exit(2);
}

static long minor_faults(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : 0;
}

static void placements(const char *s, lt_placement *pl, int *np) {
    check(lt_placements_parse(s, pl, LT_MESH_MAX_DIMS, np), s);
}

static uint64_t unique_bytes(const lt_dtensor *d) {
    uint64_t u;
    check(lt_spec_unique_bytes(lt_dtensor_spec(d), &u), "unique bytes");
    return u;
}

/* One run of the redistribute workload; *moved: unique bytes written. */
static void run_redistribute(const lt_dtensor *src, uint64_t *moved) {
    lt_placement a[LT_MESH_MAX_DIMS], b[LT_MESH_MAX_DIMS];
    int na, nb;
    placements("R,S(0)", a, &na);
    placements("S(1),R", b, &nb);
    lt_redistribute_opts o = {0};
    lt_dtensor *s1, *s2;
    lt_tensor *full;
    check(lt_redistribute(src, a, na, &o, &s1, NULL), "redistribute [R,S(0)]");
    check(lt_redistribute(s1, b, nb, &o, &s2, NULL), "redistribute [S(1),R]");
    check(lt_full_tensor(s2, &full), "full_tensor");
    *moved = unique_bytes(s1) + unique_bytes(s2) + (uint64_t)lt_nbytes(full);
    lt_tensor_free(full);
    lt_dtensor_free(s2);
    lt_dtensor_free(s1);
}

/* One run of the TP MLP forward; *moved: unique bytes of the [R, R] result. */
static void run_mlp(const lt_dtensor *const *in, uint64_t *moved) {
    lt_placement rr[LT_MESH_MAX_DIMS];
    int n;
    placements("R,R", rr, &n);
    lt_dtensor *h, *a, *p, *y;
    check(lt_dtensor_matmul(in[0], in[1], &h), "x @ W1");
    check(lt_dtensor_unary(LT_UNARY_RELU, h, &a), "relu");
    lt_dtensor_free(h);
    check(lt_dtensor_matmul(a, in[2], &p), "h @ W2");
    lt_dtensor_free(a);
    lt_redistribute_opts o = {0};
    check(lt_redistribute(p, rr, n, &o, &y, NULL), "partial -> [R,R]");
    *moved = unique_bytes(y);
    lt_dtensor_free(p);
    lt_dtensor_free(y);
}

/* Seconds of one row-major sgemm (m, k) @ (k, n) on OpenBLAS's threads set to
 * lt_threads() (the threads our run may use), on pre-filled buffers. */
double lt_bench_sgemm_once(int64_t m, int64_t k, int64_t n) {
    float *A = malloc(sizeof(float) * (size_t)(m * k));   /* (m, k) */
    float *B = malloc(sizeof(float) * (size_t)(k * n));   /* (k, n) */
    float *C = malloc(sizeof(float) * (size_t)(m * n));   /* (m, n) */
    if (!A || !B || !C) {
        fprintf(stderr, "bench: out of memory\n");
        exit(2);
    }
    for (int64_t i = 0; i < m * k; i++) A[i] = (float)(i % 7) * 0.1f;
    for (int64_t i = 0; i < k * n; i++) B[i] = (float)(i % 5) * 0.1f;
    memset(C, 0, sizeof(float) * (size_t)(m * n));
    int was = openblas_get_num_threads();
    openblas_set_num_threads(lt_threads());
    double t0 = lt_bench_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)n, (blasint)k,
                1.0f, A, (blasint)k, B, (blasint)n, 0.0f, C, (blasint)n);
    double t = lt_bench_now() - t0;
    openblas_set_num_threads(was);
    free(A);
    free(B);
    free(C);
    return t;
}

/* The floor's sgemm part for the workload (0: none). */
static double floor_sgemm(int mlp) {
    if (!mlp) return 0;
    /* W1's 4 tp shards together are one (512,1024)@(1024,4096); the second
     * matmul's 4 unique products are the hidden (512,4096) S(1) shard
     * (512,1024) by W2's (4096,1024) S(0) shard (1024,1024) each */
    return lt_bench_sgemm_once(512, 1024, 4096) + 4 * lt_bench_sgemm_once(512, 1024, 1024);
}

static void make_inputs(int mlp, lt_dtensor **in, int *nin) {
    lt_mesh m;
    check(lt_mesh_parse("2x4", &m), "mesh");
    lt_init init = {LT_INIT_RANDOM, 7};
    lt_placement pl[LT_MESH_MAX_DIMS];
    int np;
    if (!mlp) {
        const int64_t s[2] = {2048, 2048};
        placements("S(0),S(1)", pl, &np);
        check(lt_dtensor_new(&m, LT_F32, 2, s, pl, np, &init, &in[0]), "init");
        *nin = 1;
        return;
    }
    static const int64_t shapes[3][2] = {{512, 1024}, {1024, 4096}, {4096, 1024}};
    static const char *const pls[3] = {"R,R", "R,S(1)", "R,S(0)"};
    for (int i = 0; i < 3; i++) {
        placements(pls[i], pl, &np);
        check(lt_dtensor_new(&m, LT_F32, 2, shapes[i], pl, np, &init, &in[i]), "init");
    }
    *nin = 3;
}

static void workload(lt_bench *b, const char *name, int mlp) {
    char f1[140], f2[140];
    snprintf(f1, sizeof f1, "%s: faults 1st", name);
    snprintf(f2, sizeof f2, "%s: faults 2nd", name);
    if (!lt_bench_want(name) && !lt_bench_want(f1) && !lt_bench_want(f2)) return;
    lt_backend_cpu_trim();   /* from an empty block cache: not evicting earlier rows' blocks */
    lt_dtensor *in[3];
    int nin;
    make_inputs(mlp, in, &nin);
    enum { REPS = 7 };
    double t[REPS], fl[REPS];
    long faults[2] = {0, 0};
    uint64_t moved = 0;
    for (int i = 0; i < REPS; i++) {
        long f0 = minor_faults();
        double t0 = lt_bench_now();
        if (mlp) run_mlp((const lt_dtensor *const *)in, &moved);
        else run_redistribute(in[0], &moved);
        t[i] = lt_bench_now() - t0;
        if (i < 2) faults[i] = minor_faults() - f0;
        fl[i] = lt_bench_memcpy_once(b, (size_t)moved);   /* pre-touched buffers */
    }
    /* the floor's gemms last: their buffers come and go (between the
     * repetitions they would share the heap's top with the workload's), and
     * OpenBLAS's own threads spin for a while after each (taking a core from
     * the repetition after it) */
    for (int i = 0; i < REPS; i++) fl[i] += floor_sgemm(mlp);
    double floor = lt_bench_median(fl, REPS);
    if (lt_bench_want(name))
        lt_bench_add(b, name, (size_t)moved, lt_bench_median(t, REPS), (double)moved / floor / 1e9);
    if (lt_bench_want(f1)) lt_bench_add(b, f1, (size_t)faults[0], 0, NAN);
    if (lt_bench_want(f2)) lt_bench_add(b, f2, (size_t)faults[1], 0, NAN);
    for (int i = 0; i < nin; i++) lt_dtensor_free(in[i]);
}

void lt_bench_workload(lt_bench *b) {
    workload(b, "workload redist 2x4 2048^2 S0S1->RS0->S1R->full", 0);
    workload(b, "workload tp mlp 2x4 512x1024x4096, P->RR", 1);
}
