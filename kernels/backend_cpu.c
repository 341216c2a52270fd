/* kernels/backend_cpu.c — the CPU backend: aligned host memory, memcpy,
 * OpenBLAS gemm.
 *
 * Large buffers (>= 1 MiB) come from a small caching allocator: a freed large
 * block is kept (up to LT__CACHE_MAX_BYTES in all) and handed out again for
 * the next request of the same rounded size. Simulations allocate the same
 * shard shapes over and over (every redistribute step makes new shards);
 * without the cache every step pays the kernel's page faults on fresh memory,
 * which costs more than the copy itself. Large blocks also ask for
 * transparent huge pages. Under AddressSanitizer the cache is off so every
 * use-after-free is still caught. */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* madvise */
#endif
#include "kernels/backend.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LT__LARGE_BLOCK ((size_t)1 << 20)        /* 1 MiB: cached, huge-page hinted */
#define LT__HUGE_ALIGN ((size_t)2 << 20)         /* 2 MiB */
#define LT__CACHE_SLOTS 64
#define LT__CACHE_MAX_BYTES ((size_t)2 << 30)    /* 2 GiB kept at most */

#if defined(__SANITIZE_ADDRESS__)
#define LT__CACHE_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LT__CACHE_ON 0
#endif
#endif
#ifndef LT__CACHE_ON
#define LT__CACHE_ON 1
#endif

typedef struct cached_block {
    void *ptr;                 /* NULL: slot empty */
    size_t size;               /* rounded size */
} cached_block;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cached_block cache[LT__CACHE_SLOTS];
static size_t cache_bytes;

/* Every live large block is preceded by a 64-byte header holding its rounded
 * size, so free knows whether (and where) to cache it. */
#define LT__HDR 64

static size_t round_large(size_t n) { return (n + LT__HUGE_ALIGN - 1) & ~(LT__HUGE_ALIGN - 1); }

static void *cpu_alloc(void *ctx, size_t nbytes) {
    (void)ctx;
    if (nbytes + LT__HDR < LT__LARGE_BLOCK) {
        size_t n = (nbytes + 63) & ~(size_t)63;
        if (n == 0) n = 64;
        /* tiny blocks (a few elements per shard: the common case of a simulated
         * op) take malloc's fast per-thread path; 16-byte alignment is plenty
         * for them. Larger ones are 64-byte aligned for vector loops. */
        char *p = n + LT__HDR <= 512 ? lt__malloc(n + LT__HDR) : lt__aligned_alloc(64, n + LT__HDR);
        if (!p) return NULL;
        memset(p, 0, sizeof(size_t));     /* size 0 marks a small block */
        return p + LT__HDR;
    }
    size_t want = round_large(nbytes + LT__HDR);
    char *p = NULL;
    if (LT__CACHE_ON) {
        pthread_mutex_lock(&cache_mu);
        for (int i = 0; i < LT__CACHE_SLOTS; i++) {
            if (cache[i].ptr && cache[i].size == want) {
                p = cache[i].ptr;
                cache[i].ptr = NULL;
                cache_bytes -= want;
                break;
            }
        }
        pthread_mutex_unlock(&cache_mu);
    }
    if (!p) {
        p = lt__aligned_alloc(LT__HUGE_ALIGN, want);
        if (!p) return NULL;
#if defined(MADV_HUGEPAGE)
        madvise(p, want, MADV_HUGEPAGE);
#endif
    }
    memcpy(p, &want, sizeof want);
    return p + LT__HDR;
}

static void cpu_free(void *ctx, void *ptr) {
    (void)ctx;
    if (!ptr) return;
    char *p = (char *)ptr - LT__HDR;
    size_t size;
    memcpy(&size, p, sizeof size);
    if (size && LT__CACHE_ON) {
        pthread_mutex_lock(&cache_mu);
        if (cache_bytes + size <= LT__CACHE_MAX_BYTES) {
            for (int i = 0; i < LT__CACHE_SLOTS; i++) {
                if (!cache[i].ptr) {
                    cache[i].ptr = p;
                    cache[i].size = size;
                    cache_bytes += size;
                    p = NULL;
                    break;
                }
            }
        }
        pthread_mutex_unlock(&cache_mu);
    }
    lt__free(p);
}

void lt_backend_cpu_trim(void) {
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < LT__CACHE_SLOTS; i++) {
        lt__free(cache[i].ptr);
        cache[i].ptr = NULL;
    }
    cache_bytes = 0;
    pthread_mutex_unlock(&cache_mu);
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
    /* .launch     = */ NULL, /* host loops in the kernel files */
};

static const lt_backend cpu_backend = {&cpu_iface, NULL};

const lt_backend *lt_backend_cpu(void) { return &cpu_backend; }
