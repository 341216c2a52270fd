/* kernels/backend_emu.c — the cuda-emu backend: the CUDA backend's kernel
 * bodies (kernels/cuda/kern.h) run on the host, over the launch grid.
 *
 * Why it exists: the device kernels must be tested where there is no GPU.
 * This backend keeps shards in host memory (the CPU backend's allocator) and
 * runs every launch as a loop over the same grid the device would use
 * (lt__k_blocks blocks of LT__KTHREADS threads, grid-stride), calling the
 * same __host__ __device__ body per element.
 *
 * Like device memory, its buffers are not host-addressable: alloc hands out
 * the host address with bit 62 flipped (a non-canonical x86-64 address, so
 * any host code that dereferences a shard in place crashes instead of
 * silently working), and only this file turns them back — in the launcher
 * (the argument struct's pointers; the kernel bodies never see the
 * difference), gemm, and the explicit to_host / from_host / memcpy copies.
 *
 * Selecting it (`--backend cuda-emu`, LT_BACKEND=cuda-emu) runs the whole
 * library through the device code; the tests compare it with the CPU
 * backend bit for bit. gemm, which the device leaves to cuBLAS, is the host
 * BLAS here (below).
 */
#include "localtensor/kernels/backend.h"
#include "kernels/cuda/kern.h"
#include "kernels/tensor_impl.h"
#include "kernels/status_impl.h"

#include "kernels/alloc.h"

#include <string.h>

static int64_t launches; /* counted for the tests: the kernels did run */

int64_t lt__emu_launches(void) { return __atomic_load_n(&launches, __ATOMIC_RELAXED); }

typedef void (*emu_body)(const lt__kargs *, int64_t);

static const emu_body emu_bodies[LT__K_COUNT] = {
    [LT__K_COPY] = lt__k_copy,   [LT__K_FILL] = lt__k_fill,     [LT__K_ARANGE] = lt__k_arange,
    [LT__K_SCALE] = lt__k_scale, [LT__K_ACCUMULATE] = lt__k_accumulate,
    [LT__K_UNARY] = lt__k_unary, [LT__K_BINARY] = lt__k_binary, [LT__K_SCALAR] = lt__k_scalar,
    [LT__K_REDUCE] = lt__k_reduce, [LT__K_SOFTMAX] = lt__k_softmax,
    [LT__K_GATHER] = lt__k_gather, [LT__K_EMBED] = lt__k_embed,   [LT__K_INIT] = lt__k_init,
    [LT__K_DROPOUT] = lt__k_dropout, [LT__K_COLL_REDUCE] = lt__k_coll_reduce,
    [LT__K_SCATTER] = lt__k_scatter,
};

/* The "device" address of host address p and back (NULL stays NULL). */
#define EMU_BIT ((uintptr_t)1 << 62)
static void *dev_of(void *p) { return p ? (void *)((uintptr_t)p ^ EMU_BIT) : NULL; }
static void *host_of(const void *p) { return p ? (void *)((uintptr_t)p ^ EMU_BIT) : NULL; }

/* The grid loop: what <<<blocks, LT__KTHREADS>>> does on the device. The
 * operand pointers of *a (and embed's index list, and a collective's member
 * pointers) are this backend's addresses: translated here, on a copy. */
static lt_status emu_launch(void *ctx, const lt__kargs *a0) {
    (void)ctx;
    if (a0->kernel < 0 || a0->kernel >= LT__K_COUNT)
        return lt__err(LT_INVALID, "cuda-emu: unknown kernel %d", a0->kernel);
    lt__kargs a = *a0;
    for (int k = 0; k < 3; k++) a.o[k].p = host_of(a.o[k].p);
    if (a.kernel == LT__K_EMBED) a.ix[0] = host_of(a.ix[0]);
    const char *small[16];
    const char **srcs = NULL; /* (nsrc) translated member pointers */
    if (a.srcs && a.nsrc > 0) {
        srcs = a.nsrc <= 16 ? small : lt__malloc(sizeof *srcs * (size_t)a.nsrc);
        if (!srcs)
            return lt__err(LT_NOMEM, "cuda-emu: out of memory for %d member pointers", a.nsrc);
        for (int p = 0; p < a.nsrc; p++) srcs[p] = host_of(a.srcs[p]);
        a.srcs = srcs;
    }
    emu_body body = emu_bodies[a.kernel];
    __atomic_add_fetch(&launches, 1, __ATOMIC_RELAXED);
    int64_t nb = lt__k_blocks(a.n);
    for (int64_t block = 0; block < nb; block++)
        for (int thread = 0; thread < LT__KTHREADS; thread++)
            LT__K_GRID_LOOP(i, a.n, block, thread, nb) body(&a, i);
    if (srcs && srcs != small) lt__free(srcs);
    return LT_OK;
}

static void *emu_alloc(void *ctx, size_t nbytes) {
    (void)ctx;
    return dev_of(lt_backend_cpu()->iface->alloc(NULL, nbytes));
}

static void emu_free(void *ctx, void *p) {
    (void)ctx;
    lt_backend_cpu()->iface->free(NULL, host_of(p));
}

static void emu_memcpy(void *ctx, void *dst, const void *src, size_t n) {
    (void)ctx;
    if (n) memmove(host_of(dst), host_of(src), n);
}

static lt_status emu_to_host(void *ctx, void *host_dst, const void *src, size_t n) {
    (void)ctx;
    if (n) memcpy(host_dst, host_of(src), n);
    return LT_OK;
}

static lt_status emu_from_host(void *ctx, void *dst, const void *host_src, size_t n) {
    (void)ctx;
    if (n) memcpy(host_of(dst), host_src, n);
    return LT_OK;
}

static lt_status emu_accumulate(void *ctx, lt_dtype dt, void *dst, const void *src, int64_t n,
                                lt_redop op) {
    lt__kargs a = {.kernel = LT__K_ACCUMULATE, .op = (int)op, .ndim = 1, .n = n, .shape = {n}};
    a.o[0] = (lt__kop){(char *)dst, (int)dt, {1}};
    a.o[1] = (lt__kop){(char *)(uintptr_t)src, (int)dt, {1}};
    return emu_launch(ctx, &a);
}

/* A (rows, cols) bf16/f16 row-major matrix with leading dimension ld, widened
 * (exactly) into the dense f32 out (rows, cols). */
static void widen(lt_dtype dt, const char *p, int64_t rows, int64_t cols, int64_t ld, float *out) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            out[i * cols + j] = lt__k_load_f32((int)dt, p + (i * ld + j) * 2);
}

/* gemm stands for cuBLAS, a vendor BLAS: the host BLAS (the CPU backend's
 * gemm) on the translated buffers, so f32 and f64 agree with the CPU
 * backend bit for bit. bf16/f16 (the mixed-precision entry, as
 * cublasGemmEx with CUBLAS_COMPUTE_32F): A and B widened to f32, exactly,
 * then the f32 gemm into the f32 C — what the CPU backend computes when it
 * casts its operands first. */
static lt_status emu_gemm(void *ctx, lt_dtype dt, int trans_a, int trans_b, int64_t m, int64_t n,
                          int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                          int64_t ldb, double beta, void *c, int64_t ldc) {
    (void)ctx;
    const lt_backend_i *cpu = lt_backend_cpu()->iface;
    const void *ha = host_of(a), *hb = host_of(b);
    void *hc = host_of(c);
    if (dt == LT_F32 || dt == LT_F64) {
        __atomic_add_fetch(&launches, 1, __ATOMIC_RELAXED);
        return cpu->gemm(NULL, dt, trans_a, trans_b, m, n, k, alpha, ha, lda, hb, ldb, beta, hc,
                         ldc);
    }
    if (dt != LT_BF16 && dt != LT_F16) return LT_UNSUPPORTED;
    /* stored shapes: A (m, k) or, transposed, (k, m); B (k, n) or (n, k) */
    int64_t ar = trans_a ? k : m, ac = trans_a ? m : k, br = trans_b ? n : k, bc = trans_b ? k : n;
    float *fa = lt__malloc(sizeof(float) * (size_t)(ar * ac > 0 ? ar * ac : 1)); /* (ar, ac) */
    float *fb = lt__malloc(sizeof(float) * (size_t)(br * bc > 0 ? br * bc : 1)); /* (br, bc) */
    if (!fa || !fb) {
        lt__free(fa);
        lt__free(fb);
        return lt__err(LT_NOMEM, "cuda-emu: out of memory widening a %s gemm to f32",
                       lt_dtype_name(dt));
    }
    widen(dt, ha, ar, ac, lda, fa);
    widen(dt, hb, br, bc, ldb, fb);
    __atomic_add_fetch(&launches, 1, __ATOMIC_RELAXED);
    lt_status st =
        cpu->gemm(NULL, LT_F32, trans_a, trans_b, m, n, k, alpha, fa, ac, fb, bc, beta, hc, ldc);
    lt__free(fa);
    lt__free(fb);
    return st;
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
    .to_host = emu_to_host,
    .from_host = emu_from_host,
};

static const lt_backend emu_backend = {&emu_iface, NULL};

const lt_backend *lt_backend_cuda_emu(void) { return &emu_backend; }
