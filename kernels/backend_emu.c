/* kernels/backend_emu.c — the cuda-emu backend: the CUDA backend's kernel
 * bodies (kernels/cuda/kern.h) run on the host, over the launch grid.
 *
 * Why it exists: the device kernels must be tested where there is no GPU.
 * This backend keeps shards in host memory (the CPU backend's allocator) and
 * runs every launch as a loop over the same grid the device would use
 * (lt__k_blocks blocks of LT__KTHREADS threads, grid-stride), calling the
 * same __host__ __device__ body per element. Selecting it (`--backend
 * cuda-emu`, LT_BACKEND=cuda-emu) runs the whole library through the
 * device code; the tests compare it with the CPU backend bit for bit (gemm:
 * within the dtype's tolerance, as it is a plain loop, not BLAS).
 */
#include "kernels/backend.h"
#include "kernels/cuda/kern.h"
#include "kernels/tensor_impl.h"
#include "kernels/status_impl.h"

static int64_t launches; /* counted for the tests: the kernels did run */

int64_t lt__emu_launches(void) { return __atomic_load_n(&launches, __ATOMIC_RELAXED); }

typedef void (*emu_body)(const lt__kargs *, int64_t);

static const emu_body emu_bodies[LT__K_COUNT] = {
    [LT__K_COPY] = lt__k_copy,   [LT__K_FILL] = lt__k_fill,     [LT__K_ARANGE] = lt__k_arange,
    [LT__K_SCALE] = lt__k_scale, [LT__K_ACCUMULATE] = lt__k_accumulate,
    [LT__K_UNARY] = lt__k_unary, [LT__K_BINARY] = lt__k_binary, [LT__K_SCALAR] = lt__k_scalar,
    [LT__K_GEMM] = lt__k_gemm,     [LT__K_REDUCE] = lt__k_reduce, [LT__K_SOFTMAX] = lt__k_softmax,
    [LT__K_GATHER] = lt__k_gather, [LT__K_EMBED] = lt__k_embed,   [LT__K_INIT] = lt__k_init,
    [LT__K_DROPOUT] = lt__k_dropout, [LT__K_COLL_REDUCE] = lt__k_coll_reduce,
    [LT__K_SCATTER] = lt__k_scatter,
};

/* The grid loop: what <<<blocks, LT__KTHREADS>>> does on the device. */
static lt_status emu_launch(void *ctx, const lt__kargs *a) {
    (void)ctx;
    if (a->kernel < 0 || a->kernel >= LT__K_COUNT)
        return lt__err(LT_INVALID, "cuda-emu: unknown kernel %d", a->kernel);
    emu_body body = emu_bodies[a->kernel];
    __atomic_add_fetch(&launches, 1, __ATOMIC_RELAXED);
    int64_t nb = lt__k_blocks(a->n);
    for (int64_t block = 0; block < nb; block++)
        for (int thread = 0; thread < LT__KTHREADS; thread++)
            LT__K_GRID_LOOP(i, a->n, block, thread, nb) body(a, i);
    return LT_OK;
}

static void *emu_alloc(void *ctx, size_t nbytes) {
    (void)ctx;
    return lt_backend_cpu()->iface->alloc(NULL, nbytes);
}

static void emu_free(void *ctx, void *p) {
    (void)ctx;
    lt_backend_cpu()->iface->free(NULL, p);
}

static void emu_memcpy(void *ctx, void *dst, const void *src, size_t n) {
    (void)ctx;
    lt_backend_cpu()->iface->memcpy(NULL, dst, src, n);
}

static lt_status emu_accumulate(void *ctx, lt_dtype dt, void *dst, const void *src, int64_t n,
                                lt_redop op) {
    lt__kargs a = {.kernel = LT__K_ACCUMULATE, .op = (int)op, .ndim = 1, .n = n, .shape = {n}};
    a.o[0] = (lt__kop){(char *)dst, (int)dt, {1}};
    a.o[1] = (lt__kop){(char *)(uintptr_t)src, (int)dt, {1}};
    return emu_launch(ctx, &a);
}

static lt_status emu_gemm(void *ctx, lt_dtype dt, int trans_a, int trans_b, int64_t m, int64_t n,
                          int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                          int64_t ldb, double beta, void *c, int64_t ldc) {
    if (dt != LT_F32 && dt != LT_F64) return LT_UNSUPPORTED;
    lt__kargs g;
    lt__kargs_gemm(&g, dt, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return emu_launch(ctx, &g);
}

static const lt_backend_i emu_iface = {
    .version = LT_BACKEND_API_VERSION,
    .name = "cuda-emu",
    .alloc = emu_alloc,
    .free = emu_free,
    .memcpy = emu_memcpy,
    .accumulate = emu_accumulate,
    .gemm = emu_gemm,
    .launch = emu_launch,
};

static const lt_backend emu_backend = {&emu_iface, NULL};

const lt_backend *lt_backend_cuda_emu(void) { return &emu_backend; }
