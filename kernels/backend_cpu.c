/* kernels/backend_cpu.c — the CPU backend: malloc, memcpy, OpenBLAS gemm.
 *
 * Memory is 64-byte aligned so vectorised loops and BLAS see aligned rows. */
#include "kernels/backend.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

static void *cpu_alloc(void *ctx, size_t nbytes) {
    (void)ctx;
    size_t n = (nbytes + 63) & ~(size_t)63;
    if (n == 0) n = 64;
    return aligned_alloc(64, n);
}

static void cpu_free(void *ctx, void *ptr) {
    (void)ctx;
    free(ptr);
}

static void cpu_memcpy(void *ctx, void *dst, const void *src, size_t nbytes) {
    (void)ctx;
    if (nbytes) memcpy(dst, src, nbytes);
}

static lt_status cpu_accumulate(void *ctx, lt_dtype dt, void *dst, const void *src, int64_t n,
                                lt_redop op) {
    (void)ctx;
    if (dt == LT_F32) {
        float *d = dst;                 /* (n) */
        const float *s = src;           /* (n) */
        switch (op) {
        case LT_REDOP_SUM:
        case LT_REDOP_AVG: for (int64_t i = 0; i < n; i++) d[i] += s[i]; return LT_OK;
        /* NaN propagates, as in torch.maximum / torch.minimum */
        case LT_REDOP_MAX: for (int64_t i = 0; i < n; i++) if (s[i] > d[i] || s[i] != s[i]) d[i] = s[i]; return LT_OK;
        case LT_REDOP_MIN: for (int64_t i = 0; i < n; i++) if (s[i] < d[i] || s[i] != s[i]) d[i] = s[i]; return LT_OK;
        case LT_REDOP_PRODUCT: for (int64_t i = 0; i < n; i++) d[i] *= s[i]; return LT_OK;
        default: break;
        }
    }
    return LT_UNSUPPORTED; /* caller falls back to the generic loop */
}

static lt_status cpu_gemm(void *ctx, lt_dtype dt, int trans_a, int trans_b, int64_t m, int64_t n,
                          int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                          int64_t ldb, double beta, void *c, int64_t ldc) {
    (void)ctx;
    if (m == 0 || n == 0) return LT_OK;
    if (dt == LT_F32) {
        cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                    trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)k,
                    (float)alpha, a, (blasint)lda, b, (blasint)ldb, (float)beta, c, (blasint)ldc);
        return LT_OK;
    }
    if (dt == LT_F64) {
        cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                    trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)k, alpha,
                    a, (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
        return LT_OK;
    }
    return lt__err(LT_UNSUPPORTED, "gemm: dtype %s is not supported by the cpu backend",
                   lt_dtype_name(dt));
}

static const lt_backend_i cpu_iface = {
    /* .version    = */ LT_BACKEND_API_VERSION,
    /* .name       = */ "cpu",
    /* .alloc      = */ cpu_alloc,
    /* .free       = */ cpu_free,
    /* .memcpy     = */ cpu_memcpy,
    /* .accumulate = */ cpu_accumulate,
    /* .gemm       = */ cpu_gemm,
};

static const lt_backend cpu_backend = {&cpu_iface, NULL};

const lt_backend *lt_backend_cpu(void) { return &cpu_backend; }
const lt_backend *lt_backend_default(void) { return &cpu_backend; }
