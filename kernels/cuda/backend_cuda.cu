/* kernels/cuda/backend_cuda.cu — the CUDA backend (`make CUDA=1`): shards in
 * device memory, the kernel bodies of kernels/cuda/kern.h launched on the
 * device, gemm through cuBLAS.
 *
 * Memory is plain device memory from the library's memory pool on the
 * device (cudaMallocFromPoolAsync, kept by the pool when freed, so a run's
 * many shard allocations do not each go to the driver): the host never dereferences
 * it. Every host reader (element access, compare, the verifier, reports,
 * and the kernels without a device version: kernels/host.c) copies the
 * bytes it needs with the to_host / from_host entries below, explicitly.
 * Everything runs in one stream, the legacy default stream, in the order
 * the host issues it, from any host thread: launches, cuBLAS calls,
 * device-to-device copies and frees return without waiting, and a copy
 * to the host waits for all of them, so it sees every result issued
 * before it. A kernel's failure surfaces at the next call that waits.
 *
 * Selected at run time (lt_backend_select("cuda"), `--backend cuda`,
 * LT_BACKEND=cuda); without a usable device lt_backend_cuda answers
 * LT_UNSUPPORTED "no CUDA device: ...". Owns: one cuBLAS handle, made on
 * first use and kept for the process.
 */
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <pthread.h>

extern "C" {
#include "localtensor/kernels/backend.h"
#include "localtensor/kernels/math.h"
#include "kernels/tensor_impl.h"
#include "kernels/status_impl.h"
}
#include "kernels/cuda/kern.h"

typedef void (*dev_body)(const lt__kargs *, int64_t);

/* One thread per element, grid-stride: the loop the emulation runs on the host. */
template <dev_body F>
__global__ void lt__kgrid(lt__kargs a) {
    LT__K_GRID_LOOP(i, a.n, blockIdx.x, threadIdx.x, gridDim.x) F(&a, i);
}

static lt_status cuda_fail(const char *what, cudaError_t e) {
    return lt__err(LT_INVALID, "cuda: %s: %s", what, cudaGetErrorString(e));
}

/* The library's own memory pool on the device (not the device's default
 * pool, which the host program may tune for itself). It keeps what is
 * freed (no release threshold), as a caching allocator does: the next
 * allocation of a similar size is served from it. */
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static cudaMemPool_t pool;
static int use_pool; /* 0: a device without memory pools: cudaMalloc / cudaFree */
static void pool_make(void) {
    int dev = 0, ok = 0;
    uint64_t keep = UINT64_MAX;
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    if (cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&ok, cudaDevAttrMemoryPoolsSupported, dev) == cudaSuccess && ok) {
        props.location.id = dev;
        if (cudaMemPoolCreate(&pool, &props) == cudaSuccess) {
            use_pool = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) ==
                       cudaSuccess;
            if (!use_pool) cudaMemPoolDestroy(pool);
        }
    }
    cudaGetLastError();
}

/* nbytes of device memory, or NULL (no error left pending). Freed by dev_free. */
static void *dev_alloc(size_t nbytes) {
    pthread_once(&pool_once, pool_make);
    void *p = NULL;
    size_t n = nbytes ? nbytes : 64;
    cudaError_t e = use_pool ? cudaMallocFromPoolAsync(&p, n, pool, 0) : cudaMalloc(&p, n);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* clear the error of a failed allocation */
        return NULL;
    }
    return p;
}

/* Back to the pool after the work issued before it. */
static void dev_free(void *p) {
    if (p) use_pool ? cudaFreeAsync(p, 0) : cudaFree(p);
}

static lt_status cuda_launch(void *ctx, const lt__kargs *a);

/* Index lists (gather, init, dropout) and the member pointers of a
 * collective reduction are host memory: copied to the device for the
 * launch, freed after it. */
static lt_status cuda_with_lists(void *ctx, const lt__kargs *a) {
    lt__kargs g = *a;
    int64_t total = 0, pos = 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->ix[d]) total += a->shape[d];
    if (a->srcs) total += a->nsrc; /* pointers, as 8-byte words */
    int64_t *dev = NULL;
    if (total > 0 && !(dev = (int64_t *)dev_alloc((size_t)total * sizeof *dev)))
        return lt__err(LT_NOMEM, "cuda: out of device memory for %lld indices", (long long)total);
    cudaError_t e = cudaSuccess;
    for (int d = 0; d < a->ndim && e == cudaSuccess; d++) {
        if (!a->ix[d]) continue;
        e = cudaMemcpy(dev + pos, a->ix[d], (size_t)a->shape[d] * sizeof *dev,
                       cudaMemcpyHostToDevice);
        g.ix[d] = dev + pos;
        pos += a->shape[d];
    }
    if (a->srcs && e == cudaSuccess) {
        static_assert(sizeof(const char *) == sizeof(int64_t), "8-byte pointers");
        e = cudaMemcpy(dev + pos, a->srcs, (size_t)a->nsrc * sizeof *dev, cudaMemcpyHostToDevice);
        g.srcs = (const char *const *)(void *)(dev + pos);
    }
    g.kernel = -a->kernel - 1; /* the plain launch below */
    lt_status st = e == cudaSuccess ? cuda_launch(ctx, &g) : cuda_fail("copying indices", e);
    dev_free(dev); /* after the launch that reads them */
    return st;
}

static lt_status cuda_launch(void *ctx, const lt__kargs *a) {
    if (a->n == 0) return LT_OK;
    if (a->kernel == LT__K_GATHER || a->kernel == LT__K_INIT || a->kernel == LT__K_DROPOUT ||
        a->kernel == LT__K_COLL_REDUCE || a->kernel == LT__K_SCATTER)
        return cuda_with_lists(ctx, a);
    unsigned nb = (unsigned)lt__k_blocks(a->n);
    switch (a->kernel) {
    case -LT__K_GATHER - 1: lt__kgrid<lt__k_gather><<<nb, LT__KTHREADS>>>(*a); break;
    case -LT__K_INIT - 1: lt__kgrid<lt__k_init><<<nb, LT__KTHREADS>>>(*a); break;
    case -LT__K_DROPOUT - 1: lt__kgrid<lt__k_dropout><<<nb, LT__KTHREADS>>>(*a); break;
    case -LT__K_COLL_REDUCE - 1: lt__kgrid<lt__k_coll_reduce><<<nb, LT__KTHREADS>>>(*a); break;
    case -LT__K_SCATTER - 1: lt__kgrid<lt__k_scatter><<<nb, LT__KTHREADS>>>(*a); break;
    case LT__K_REDUCE: lt__kgrid<lt__k_reduce><<<nb, LT__KTHREADS>>>(*a); break;
    case LT__K_SOFTMAX: lt__kgrid<lt__k_softmax><<<nb, LT__KTHREADS>>>(*a); break;
    case LT__K_EMBED: lt__kgrid<lt__k_embed><<<nb, LT__KTHREADS>>>(*a); break;
    case LT__K_COPY: lt__kgrid<lt__k_copy><<<nb, LT__KTHREADS>>>(*a); break;
    case LT__K_FILL: lt__kgrid<lt__k_fill><<<nb, LT__KTHREADS>>>(*a); break;
    case LT__K_ARANGE: lt__kgrid<lt__k_arange><<<nb, LT__KTHREADS>>>(*a); break;
    case LT__K_SCALE: lt__kgrid<lt__k_scale><<<nb, LT__KTHREADS>>>(*a); break;
    case LT__K_ACCUMULATE: lt__kgrid<lt__k_accumulate><<<nb, LT__KTHREADS>>>(*a); break;
    case LT__K_UNARY: lt__kgrid<lt__k_unary><<<nb, LT__KTHREADS>>>(*a); break;
    case LT__K_BINARY: lt__kgrid<lt__k_binary><<<nb, LT__KTHREADS>>>(*a); break;
    case LT__K_SCALAR: lt__kgrid<lt__k_scalar><<<nb, LT__KTHREADS>>>(*a); break;
    default: return LT_UNSUPPORTED;
    }
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? LT_OK : cuda_fail("kernel launch", e);
}

static void *cuda_alloc(void *ctx, size_t nbytes) {
    (void)ctx;
    return dev_alloc(nbytes);
}

static void cuda_free(void *ctx, void *p) {
    (void)ctx;
    dev_free(p);
}

static void cuda_memcpy(void *ctx, void *dst, const void *src, size_t n) {
    (void)ctx;
    if (n) cudaMemcpy(dst, src, n, cudaMemcpyDeviceToDevice);
}

static lt_status cuda_to_host(void *ctx, void *host_dst, const void *src, size_t n) {
    (void)ctx;
    cudaError_t e = n ? cudaMemcpy(host_dst, src, n, cudaMemcpyDeviceToHost) : cudaSuccess;
    return e == cudaSuccess ? LT_OK : cuda_fail("copy to the host", e);
}

static lt_status cuda_from_host(void *ctx, void *dst, const void *host_src, size_t n) {
    (void)ctx;
    cudaError_t e = n ? cudaMemcpy(dst, host_src, n, cudaMemcpyHostToDevice) : cudaSuccess;
    return e == cudaSuccess ? LT_OK : cuda_fail("copy from the host", e);
}

static lt_status cuda_accumulate(void *ctx, lt_dtype dt, void *dst, const void *src, int64_t n,
                                 lt_redop op) {
    lt__kargs a;
    memset(&a, 0, sizeof a);
    a.kernel = LT__K_ACCUMULATE;
    a.op = (int)op;
    a.ndim = 1;
    a.n = n;
    a.shape[0] = n;
    a.o[0].p = (char *)dst;
    a.o[0].dt = (int)dt;
    a.o[0].st[0] = 1;
    a.o[1].p = (char *)(uintptr_t)src;
    a.o[1].dt = (int)dt;
    a.o[1].st[0] = 1;
    return cuda_launch(ctx, &a);
}

static pthread_mutex_t blas_mu = PTHREAD_MUTEX_INITIALIZER;
static cublasHandle_t blas;

/* Row-major C = alpha op(A) op(B) + beta C is column-major C^T = op(B)^T op(A)^T:
 * cuBLAS gets B first, with the same transpose flags. f32 and f64 through
 * sgemm / dgemm; bf16 and f16 inputs through cublasGemmEx into an f32 C with
 * CUBLAS_COMPUTE_32F (kernels/matmul.c casts that to the result's dtype). */
static lt_status cuda_gemm(void *ctx, lt_dtype dt, int trans_a, int trans_b, int64_t m, int64_t n,
                           int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                           int64_t ldb, double beta, void *c, int64_t ldc) {
    (void)ctx;
    if (dt != LT_F32 && dt != LT_F64 && dt != LT_BF16 && dt != LT_F16) return LT_UNSUPPORTED;
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX ||
        ldc > INT32_MAX)
        return LT_UNSUPPORTED; /* 32-bit cuBLAS sizes: the host loop */
    pthread_mutex_lock(&blas_mu);
    cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
    if (!blas) bs = cublasCreate(&blas);
    if (bs == CUBLAS_STATUS_SUCCESS) {
        cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                          tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        if (dt == LT_F32) {
            float al = (float)alpha, be = (float)beta;
            bs = cublasSgemm(blas, tb, ta, (int)n, (int)m, (int)k, &al, (const float *)b, (int)ldb,
                             (const float *)a, (int)lda, &be, (float *)c, (int)ldc);
        } else if (dt == LT_BF16 || dt == LT_F16) {
            /* mixed precision: bf16/f16 A and B, f32 C, f32 products and sums */
            float al = (float)alpha, be = (float)beta;
            cudaDataType_t in = dt == LT_BF16 ? CUDA_R_16BF : CUDA_R_16F;
            bs = cublasGemmEx(blas, tb, ta, (int)n, (int)m, (int)k, &al, b, in, (int)ldb, a, in,
                              (int)lda, &be, c, CUDA_R_32F, (int)ldc, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT);
        } else {
            bs = cublasDgemm(blas, tb, ta, (int)n, (int)m, (int)k, &alpha, (const double *)b,
                             (int)ldb, (const double *)a, (int)lda, &beta, (double *)c, (int)ldc);
        }
    }
    pthread_mutex_unlock(&blas_mu);
    if (bs != CUBLAS_STATUS_SUCCESS)
        return lt__err(LT_INVALID, "cuda: cuBLAS gemm failed (status %d)", (int)bs);
    return LT_OK;
}

static lt_backend_i make_iface(void) {
    lt_backend_i i;
    memset(&i, 0, sizeof i);
    i.version = LT_BACKEND_API_VERSION;
    i.name = "cuda";
    i.alloc = cuda_alloc;
    i.free = cuda_free;
    i.memcpy = cuda_memcpy;
    i.accumulate = cuda_accumulate;
    i.gemm = cuda_gemm;
    i.launch = cuda_launch;
    i.to_host = cuda_to_host;
    i.from_host = cuda_from_host;
    return i;
}

static const lt_backend_i cuda_iface = make_iface();
static const lt_backend cuda_backend = {&cuda_iface, NULL};

extern "C" lt_status lt_backend_cuda(const lt_backend **out) {
    if (out) *out = NULL;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NONE, "no CUDA device: %s",
                            cudaGetErrorString(e));
    }
    if (n == 0)
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NONE, "no CUDA device: the driver reports none");
    if (out) *out = &cuda_backend;
    return LT_OK;
}
