/* kernels/backend_cpu.c — the CPU backend: aligned host memory, memcpy,
 * OpenBLAS gemm (one-threaded BLAS calls, a large gemm cut over kernels/pool.c:
 * one thread pool in the process, see gemm_split).
 *
 * Large buffers (>= 64 KiB) come from a caching allocator: a freed large
 * block is kept (up to LT__CACHE_MAX_BYTES in all, in per-size lists) and
 * handed out again for the next request of the same rounded size. The
 * memory check (kernels/memlimit_impl.h) counts the kept bytes as free. Simulations allocate the
 * same shard shapes over and over (every redistribute step makes new shards); without the cache
 * every step pays the kernel's page faults on fresh memory, which costs more than the copy itself.
 * A request that finds no block of its size first gives back kept blocks of sizes nobody asked for
 * again, so that a one-off job's later states reuse its earlier states' pages. Large blocks also
 * ask for transparent huge pages. Under AddressSanitizer the cache is off so every use-after-free
 * is still caught. */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* madvise */
#endif
#include "localtensor/kernels/backend.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "kernels/memlimit_impl.h"
#include "kernels/pool_impl.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LT__LARGE_BLOCK ((size_t)64 << 10)       /* 64 KiB: cached (malloc would unmap it) */
#define LT__MEDIUM_ROUND ((size_t)64 << 10)      /* below 2 MiB: sizes round to 64 KiB */
#define LT__HUGE_ALIGN ((size_t)2 << 20)         /* 2 MiB */
#define LT__CACHE_CLASSES 64                     /* distinct block sizes kept */
#define LT__CACHE_MAX_BYTES ((size_t)4 << 30)    /* 4 GiB kept at most */
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

/* Freed large blocks of one rounded size, a list threaded through their
 * headers: a simulation frees a whole state's shards (thousands of blocks of
 * a few sizes) and allocates the next state's right after. */
typedef struct cache_class {
    size_t size;               /* rounded size; 0: class unused */
    char *head;                /* first free block, NULL when none */
    int reused;                /* a request of this size found a block here since it took
                                * the size: work that repeats itself (a loop, a sweep) */
} cache_class;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cache_class cache[LT__CACHE_CLASSES];
static size_t cache_bytes;

/* Every block's data is preceded by a 64-byte header holding its rounded
 * size (0: a small block; while cached, also the next free block), so free
 * knows whether (and where) to cache it. A huge block (data of 2 MiB or
 * more) starts 2 MiB before its data: the header sits alone at the end of
 * that first, small-paged stretch, so writing it touches one 4 KiB page and
 * the data's huge pages are first touched (and zeroed by the kernel) by the
 * kernel that fills them, on the threads that fill them, not here. */
#define LT__HDR 64

/* The rounded size of a large block for nbytes of data: header and data
 * rounded to 64 KiB below 2 MiB; above, 2 MiB of lead plus the data rounded
 * to 2 MiB (huge pages), so that the shards of one state fall into a few
 * sizes the cache reuses. */
static size_t round_large(size_t nbytes) {
    if (nbytes + LT__HDR < LT__HUGE_ALIGN)
        return (nbytes + LT__HDR + LT__MEDIUM_ROUND - 1) & ~(LT__MEDIUM_ROUND - 1);
    return LT__HUGE_ALIGN + ((nbytes + LT__HUGE_ALIGN - 1) & ~(LT__HUGE_ALIGN - 1));
}
/* Where a block of rounded size `size` starts its data, and the bytes of it
 * that are ever touched (a huge block's lead is one page of header). */
static size_t data_offset(size_t size) { return size > LT__HUGE_ALIGN ? LT__HUGE_ALIGN : LT__HDR; }
static size_t touched(size_t size) {
    return size > LT__HUGE_ALIGN ? size - LT__HUGE_ALIGN + 4096 : size;
}

static size_t hdr_size(const char *ptr) {
    size_t size;
    memcpy(&size, ptr - LT__HDR, sizeof size);
    return size;
}
static char *hdr_next(const char *ptr) {
    char *next;
    memcpy(&next, ptr - LT__HDR + sizeof(size_t), sizeof next);
    return next;
}
static void hdr_set_next(char *ptr, const char *next) {
    memcpy(ptr - LT__HDR + sizeof(size_t), &next, sizeof next);
}

size_t lt__backend_cpu_cached(void) {
    pthread_mutex_lock(&cache_mu);
    size_t b = cache_bytes;
    pthread_mutex_unlock(&cache_mu);
    return b;
}

/* Takes kept blocks off the cache's lists, at least `bytes` touched bytes of
 * them (all: SIZE_MAX), into a list for give_back; idle_only: only blocks
 * of sizes never asked for again. Call with cache_mu held. */
static char *take_kept(size_t bytes, int idle_only) {
    char *list = NULL;
    size_t taken = 0;
    for (int i = 0; i < LT__CACHE_CLASSES && taken < bytes; i++) {
        if (idle_only && cache[i].reused) continue;
        while (cache[i].head && taken < bytes) {
            char *q = cache[i].head;
            cache[i].head = hdr_next(q);
            hdr_set_next(q, list);
            list = q;
            taken += touched(cache[i].size);
            cache_bytes -= touched(cache[i].size);
        }
        if (!cache[i].head) cache[i].size = 0, cache[i].reused = 0;
    }
    return list;
}

/* Returns a list from take_kept through lt__free (cache_mu not held): the
 * allocator's block cache (kernels/alloc.c) may keep a block and hand it out
 * for the next request of about its size, a best-fit second level under
 * these exact sizes; lt_backend_cpu_trim empties both. */
static void give_back(char *list) {
    while (list) {
        char *q = list;
        list = hdr_next(q);
        lt__free(q - data_offset(hdr_size(q)));
    }
}

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
    if (nbytes > SIZE_MAX - 2 * LT__HUGE_ALIGN) return NULL;
    size_t want = round_large(nbytes), off = data_offset(want);
    char *ptr = NULL, *kept = NULL;
    if (LT__CACHE_ON) {
        pthread_mutex_lock(&cache_mu);
        for (int i = 0; i < LT__CACHE_CLASSES; i++) {
            if (cache[i].size == want && cache[i].head) {
                /* a hit is an allocation too: fault injection can fail it
                 * (the block stays kept), so a test that walks every
                 * allocation does not depend on what the cache holds */
                if (lt__fault_point()) {
                    pthread_mutex_unlock(&cache_mu);
                    return NULL;
                }
                ptr = cache[i].head;
                cache[i].head = hdr_next(ptr);
                cache[i].reused = 1;
                cache_bytes -= touched(want);
                break;
            }
        }
        /* a miss: give back at least as many kept bytes of sizes nobody
         * asked for again (a finished step's shards; work that repeats
         * itself keeps its blocks), so that the fresh block is made of pages
         * this process just released rather than pages it never touched,
         * which cost more: on a virtual machine whose host reclaims free
         * memory, a second page fault on the host */
        if (!ptr) kept = take_kept(touched(want), 1);
        pthread_mutex_unlock(&cache_mu);
        give_back(kept);
    }
    if (!ptr) {
        char *p = lt__aligned_alloc(want > LT__HUGE_ALIGN ? LT__HUGE_ALIGN : 4096, want);
        if (!p && lt__backend_cpu_cached()) { /* the kept blocks are free memory: give them back */
            lt_backend_cpu_trim();
            p = lt__aligned_alloc(want > LT__HUGE_ALIGN ? LT__HUGE_ALIGN : 4096, want);
        }
        if (!p) return NULL;
        ptr = p + off;
#if defined(MADV_HUGEPAGE)
        /* huge pages only where the data fills them to the end: a tail of a
         * few bytes past a 2 MiB boundary would otherwise cost a whole zeroed
         * huge page */
        size_t full = nbytes & ~(LT__HUGE_ALIGN - 1);
        if (off == LT__HUGE_ALIGN && full) madvise(ptr, full, MADV_HUGEPAGE);
#endif
#if defined(MADV_NOHUGEPAGE)
        /* and never in the lead, where huge pages are the system's default
         * (THP "always"): its one header page would cost a zeroed 2 MiB */
        if (off == LT__HUGE_ALIGN) madvise(p, LT__HUGE_ALIGN, MADV_NOHUGEPAGE);
#endif
    }
    memcpy(ptr - LT__HDR, &want, sizeof want);
    return ptr;
}

static void cpu_free(void *ctx, void *ptr) {
    (void)ctx;
    if (!ptr) return;
    char *q = ptr;
    size_t size = hdr_size(q);
    if (size && LT__CACHE_ON) {
        pthread_mutex_lock(&cache_mu);
        if (cache_bytes + touched(size) <= LT__CACHE_MAX_BYTES) {
            int slot = -1;
            for (int i = 0; i < LT__CACHE_CLASSES && slot < 0; i++)
                if (cache[i].size == size) slot = i;
            for (int i = 0; i < LT__CACHE_CLASSES && slot < 0; i++)
                if (!cache[i].head) slot = i;   /* an empty class takes the new size */
            if (slot >= 0) {
                if (cache[slot].size != size) cache[slot].reused = 0;
                cache[slot].size = size;
                hdr_set_next(q, cache[slot].head);
                cache[slot].head = q;
                cache_bytes += touched(size);
                q = NULL;
            }
        }
        pthread_mutex_unlock(&cache_mu);
    }
    if (q) lt__free(q - (size ? data_offset(size) : LT__HDR));
}

void lt_backend_cpu_trim(void) {
    pthread_mutex_lock(&cache_mu);
    char *kept = take_kept(SIZE_MAX, 0);
    pthread_mutex_unlock(&cache_mu);
    give_back(kept);
    lt__alloc_trim();
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
        case LT_REDOP_MAX:
            for (int64_t i = 0; i < n; i++)
                if (s[i] > d[i] || s[i] != s[i]) d[i] = s[i];
            return LT_OK;
        case LT_REDOP_MIN:
            for (int64_t i = 0; i < n; i++)
                if (s[i] < d[i] || s[i] != s[i]) d[i] = s[i];
            return LT_OK;
        case LT_REDOP_PRODUCT: for (int64_t i = 0; i < n; i++) d[i] *= s[i]; return LT_OK;
        default: break;
        }
    }
    return LT_UNSUPPORTED; /* caller falls back to the generic loop */
}

/* One BLAS call of a gemm, f32 or f64 (the caller checked dt). */
static void blas_gemm(lt_dtype dt, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                      double alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                      double beta, void *c, int64_t ldc) {
    enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans,
                         tb = trans_b ? CblasTrans : CblasNoTrans;
    if (dt == LT_F32)
        cblas_sgemm(CblasRowMajor, ta, tb, (blasint)m, (blasint)n, (blasint)k, (float)alpha, a,
                    (blasint)lda, b, (blasint)ldb, (float)beta, c, (blasint)ldc);
    else
        cblas_dgemm(CblasRowMajor, ta, tb, (blasint)m, (blasint)n, (blasint)k, alpha, a,
                    (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
}

/* A gemm cut into `pieces` blocks of C's rows (by_rows) or columns, one BLAS
 * call each, on the pool (kernels/pool_impl.h). Borrows every pointer. */
typedef struct gemm_job {
    lt_dtype dt;
    int trans_a, trans_b, by_rows, pieces;
    int64_t m, n, k, lda, ldb, ldc;
    double alpha, beta;
    const char *a, *b; /* as the caller's gemm: op(a) (m, k), op(b) (k, n) */
    char *c;           /* (m, n), row stride ldc */
} gemm_job;

/* Block i of [0, len): edges on multiples of 16 (the BLAS kernels' unroll),
 * so every block but the last is whole kernel tiles. */
static void block_of(int64_t len, int pieces, int64_t i, int64_t *lo, int64_t *hi) {
    int64_t step = ((len + pieces - 1) / pieces + 15) & ~(int64_t)15;
    *lo = i * step < len ? i * step : len;
    *hi = *lo + step < len ? *lo + step : len;
}

static lt_status gemm_piece(void *ctx, int64_t i) {
    const gemm_job *g = ctx;
    size_t es = lt_dtype_size(g->dt);
    int64_t lo, hi;
    block_of(g->by_rows ? g->m : g->n, g->pieces, i, &lo, &hi);
    if (hi <= lo) return LT_OK;
    if (g->by_rows) { /* rows lo..hi of op(a) and c */
        const char *a = g->a + (size_t)(g->trans_a ? lo : lo * g->lda) * es;
        blas_gemm(g->dt, g->trans_a, g->trans_b, hi - lo, g->n, g->k, g->alpha, a, g->lda, g->b,
                  g->ldb, g->beta, g->c + (size_t)(lo * g->ldc) * es, g->ldc);
    } else { /* columns lo..hi of op(b) and c */
        const char *b = g->b + (size_t)(g->trans_b ? lo * g->ldb : lo) * es;
        blas_gemm(g->dt, g->trans_a, g->trans_b, g->m, hi - lo, g->k, g->alpha, g->a, g->lda, b,
                  g->ldb, g->beta, g->c + (size_t)lo * es, g->ldc);
    }
    return LT_OK;
}

/* One thread pool: OpenBLAS runs single-threaded, and a large gemm is cut
 * into blocks of C on kernels/pool.c. OpenBLAS's own workers, once woken,
 * spin (sched_yield) for a while after every gemm; on a machine with as many
 * cores as threads they then compete with the pool's workers running the next
 * copy or elementwise kernel, and with a gemm called inside pool work (one
 * per rank) they would oversubscribe the cores. With one pool nothing spins:
 * idle pool workers sleep on a condition variable. Results do not depend on
 * the cut: each element of C is the same dot product, the BLAS summing k in
 * blocks that depend on k alone (blocks are whole kernel tiles, and each is
 * at least LT__GEMM_SPLIT_MIN multiply-adds, far above OpenBLAS's separate
 * small-matrix path). A library user calling cblas directly also gets
 * one-threaded BLAS (openblas_set_num_threads to change that back). */
#define LT__GEMM_SPLIT_MIN ((double)(1 << 22)) /* multiply-adds per block, at least */

static void gemm_split(lt_dtype dt, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                       double alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                       double beta, void *c, int64_t ldc) {
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
    int w = lt__pool_width();
    int by_rows = m >= n;
    int64_t len = by_rows ? m : n;
    double per = (double)m * (double)n * (double)k / (double)w;
    if (len < 32 * w) w = (int)(len / 32);   /* blocks of 32 rows or columns at least */
    if (w <= 1 || per < LT__GEMM_SPLIT_MIN) {
        blas_gemm(dt, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    gemm_job g = {dt, trans_a, trans_b, by_rows, w, m, n, k, lda, ldb, ldc, alpha, beta, a, b, c};
    (void)lt__parallel_for(w, gemm_piece, &g); /* pieces never fail */
}

static lt_status cpu_gemm(void *ctx, lt_dtype dt, int trans_a, int trans_b, int64_t m, int64_t n,
                          int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                          int64_t ldb, double beta, void *c, int64_t ldc) {
    (void)ctx;
    if (m == 0 || n == 0) return LT_OK;
    if (dt == LT_F32 || dt == LT_F64) {
        gemm_split(dt, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
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
    /* .to_host    = */ NULL, /* host memory: read in place */
    /* .from_host  = */ NULL,
};

static const lt_backend cpu_backend = {&cpu_iface, NULL};

const lt_backend *lt_backend_cpu(void) { return &cpu_backend; }
