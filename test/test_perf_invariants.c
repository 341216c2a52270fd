/* test/test_perf_invariants.c — what the speed work of kernels/ must not change.
 *
 * The CPU backend cuts a large gemm into blocks of C on the thread pool, with
 * OpenBLAS single-threaded (kernels/backend_cpu.c, "one thread pool"): the
 * result must be bit-identical to ONE BLAS call of the whole product, for
 * every thread count, transposition and dtype, with alpha and beta. Its block
 * cache must stay visible to fault injection: a cache hit is an allocation
 * that can be made to fail, and failing it loses no kept block. Speed itself
 * is measured by `make bench` rows, never here.
 */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "localtensor/kernels/backend.h"
#include "kernels/memlimit_impl.h"
#include "localtensor/kernels/pool.h"
#include "test/testutil.h"

/* x (n) filled with small values of a fixed pattern (exact in f32). */
static void fill(lt_dtype dt, void *x, int64_t n, int seed) {
    for (int64_t i = 0; i < n; i++) {
        double v = (double)((i * 7 + seed * 13) % 17 - 8) / 8.0;
        if (dt == LT_F32) ((float *)x)[i] = (float)v;
        else ((double *)x)[i] = v;
    }
}

/* The product as ONE BLAS call on one BLAS thread: c (m, n) row-major. */
static void one_call(lt_dtype dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                     const void *a, const void *b, void *c) {
    int64_t lda = ta ? m : k, ldb = tb ? k : n;
    openblas_set_num_threads(1);
    if (dt == LT_F32)
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (blasint)m, (blasint)n, (blasint)k, 1.5f, a, (blasint)lda, b, (blasint)ldb,
                    0.5f, c, (blasint)n);
    else
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (blasint)m, (blasint)n, (blasint)k, 1.5, a, (blasint)lda, b, (blasint)ldb,
                    0.5, c, (blasint)n);
}

/* Backend gemm of (m, k) @ (k, n) on `threads` threads equals one_call bit
 * for bit, for all four transpositions. */
static void check_gemm(lt_dtype dt, int64_t m, int64_t n, int64_t k, int threads) {
    size_t es = lt_dtype_size(dt);
    void *a = malloc(es * (size_t)(m * k));      /* (m, k) or (k, m) */
    void *b = malloc(es * (size_t)(k * n));      /* (k, n) or (n, k) */
    void *want = malloc(es * (size_t)(m * n));   /* (m, n) */
    void *got = malloc(es * (size_t)(m * n));    /* (m, n) */
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(want);
    assert_non_null(got);
    fill(dt, a, m * k, 1);
    fill(dt, b, k * n, 2);
    const lt_backend *be = lt_backend_cpu();
    for (int t = 0; t < 4; t++) {
        int ta = t & 1, tb = t >> 1;
        fill(dt, want, m * n, 3);
        fill(dt, got, m * n, 3);
        one_call(dt, ta, tb, m, n, k, a, b, want);
        lt_set_threads(threads);
        lt_status st = be->iface->gemm(be->ctx, dt, ta, tb, m, n, k, 1.5, a, ta ? m : k, b,
                                       tb ? k : n, 0.5, got, n);
        lt_set_threads(0);
        assert_int_equal(st, LT_OK);
        if (memcmp(want, got, es * (size_t)(m * n)) != 0)
            fail_msg("gemm %s (%lld,%lld,%lld) ta=%d tb=%d on %d threads differs from one call",
                     lt_dtype_name(dt), (long long)m, (long long)n, (long long)k, ta, tb,
                     threads);
    }
    free(a);
    free(b);
    free(want);
    free(got);
}

static void test_gemm_split_is_bit_identical(void **state) {
    (void)state;
    static const lt_dtype dts[2] = {LT_F32, LT_F64};
    for (int d = 0; d < 2; d++)
        for (int threads = 1; threads <= 3; threads++) {
            check_gemm(dts[d], 264, 192, 256, threads);   /* cut along rows, short last block */
            check_gemm(dts[d], 48, 1000, 256, threads);   /* cut along columns */
            check_gemm(dts[d], 7, 5, 3, threads);         /* too small to cut */
        }
}

/* After a backend gemm OpenBLAS runs on the caller's thread only: its own
 * workers never spin against the pool's. */
static void test_gemm_leaves_blas_single_threaded(void **state) {
    (void)state;
    openblas_set_num_threads(2);
    check_gemm(LT_F32, 264, 192, 256, 2);
    const lt_backend *be = lt_backend_cpu();
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {0};   /* (2, 2) each */
    openblas_set_num_threads(2);
    assert_int_equal(be->iface->gemm(be->ctx, LT_F32, 0, 0, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2),
                     LT_OK);
    assert_int_equal(openblas_get_num_threads(), 1);
    assert_true(c[0] == 1 && c[1] == 2 && c[2] == 3 && c[3] == 4);
}

/* A block freed to the cache and asked for again: the hit is the first
 * allocation while armed, so it fails; the kept block stays kept and is
 * handed out once injection is off. (Under AddressSanitizer the cache keeps
 * nothing: the request is then a C library allocation, failed the same way.) */
static void test_cache_hit_is_an_injection_point(void **state) {
    (void)state;
    const lt_backend *be = lt_backend_cpu();
    const size_t n = (size_t)1 << 20;
    lt_backend_cpu_trim();
    void *p = be->iface->alloc(be->ctx, n);
    assert_non_null(p);
    be->iface->free(be->ctx, p);
    size_t kept = lt__backend_cpu_cached();
    lt__fault_arm(1, 0);
    void *q = be->iface->alloc(be->ctx, n);
    int64_t fired = lt__fault_fired(), count = lt__fault_count();
    lt__fault_disarm();
    assert_null(q);
    assert_int_equal(fired, 1);
    assert_int_equal(count, 1);
    assert_int_equal(lt__backend_cpu_cached(), kept);
    lt__fault_arm(0, 0);                      /* counted, not failed, no live change */
    q = be->iface->alloc(be->ctx, n);
    int64_t live = lt__fault_live();
    count = lt__fault_count();
    lt__fault_disarm();
    assert_non_null(q);
    assert_int_equal(count, 1);
    if (kept) {
        assert_ptr_equal(q, p);               /* the kept block, reused */
        assert_int_equal(live, 0);
        assert_int_equal(lt__backend_cpu_cached(), 0);
    }
    be->iface->free(be->ctx, q);
    lt_backend_cpu_trim();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_split_is_bit_identical),
        cmocka_unit_test(test_gemm_leaves_blas_single_threaded),
        cmocka_unit_test(test_cache_hit_is_an_injection_point),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
