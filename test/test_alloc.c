/* test/test_alloc.c — the allocation wrappers and their fault injection
 * (kernels/alloc.h), their block cache (kernels/alloc.c), the CPU backend's
 * block cache (kernels/backend_cpu.c),
 * then a small fault sweep over two library calls.
 * Expected counts come from the calls each test makes itself; the sweep
 * checks the contract of every failure: LT_NOMEM, a message saying out of
 * memory, a NULL output and nothing left allocated. */
#include "kernels/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "localtensor/kernels/backend.h"
#include "kernels/memlimit_impl.h"
#include "localtensor/localtensor.h"
#include "test/testutil.h"

/* kernels/backend_cpu.c keeps no blocks under AddressSanitizer */
#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CACHE_ON 0
#endif
#endif
#ifndef CACHE_ON
#define CACHE_ON 1
#endif

static void test_countdown_fails_only_the_nth(void **state) {
    (void)state;
    void *p[4];
    lt__fault_arm(3, 0);
    p[0] = lt__malloc(8);
    p[1] = lt__calloc(2, 8);
    int line3 = __LINE__ + 1;
    p[2] = lt__malloc(8);
    p[3] = lt__malloc(8);
    lt__fault_disarm();
    assert_non_null(p[0]);
    assert_non_null(p[1]);
    assert_null(p[2]);
    assert_non_null(p[3]);
    assert_int_equal(lt__fault_count(), 4);
    assert_int_equal(lt__fault_fired(), 1);
    const char *file;
    int line;
    assert_int_equal(lt__fault_first(&file, &line), 0);
    assert_int_equal(line, line3);
    assert_non_null(strstr(file, "test_alloc.c"));
    for (int i = 0; i < 4; i++) lt__free(p[i]);
}

static void test_persistent_fails_every_later_one(void **state) {
    (void)state;
    lt__fault_arm(2, 1);
    void *a = lt__malloc(1), *b = lt__malloc(1);
    char *c = lt__strdup("x");
    void *d = lt__aligned_alloc(64, 64);
    lt__fault_disarm();
    assert_non_null(a);
    assert_null(b);
    assert_null(c);
    assert_null(d);
    assert_int_equal(lt__fault_fired(), 3);
    void *e = lt__malloc(1);   /* disarmed: nothing fails, nothing counted */
    assert_non_null(e);
    assert_int_equal(lt__fault_count(), 4);
    lt__free(a);
    lt__free(e);
}

static void test_count_only_records_sites_and_hits(void **state) {
    (void)state;
    lt__fault_arm(0, 0);
    void *p[5];
    int line_loop = __LINE__ + 1;
    for (int i = 0; i < 5; i++) p[i] = lt__malloc(4);
    int line_one = __LINE__ + 1;
    char *s = lt__strdup("abc");
    lt__fault_disarm();
    assert_int_equal(lt__fault_fired(), 0);
    assert_int_equal(lt__fault_count(), 6);
    assert_int_equal(lt__fault_nsites(), 2);
    const char *file;
    int line;
    int64_t hits;
    assert_int_equal(lt__fault_site(0, &file, &line, &hits), 0);
    assert_int_equal(line, line_loop);
    assert_int_equal(hits, 5);
    assert_int_equal(lt__fault_site(1, &file, &line, &hits), 0);
    assert_int_equal(line, line_one);
    assert_int_equal(hits, 1);
    assert_int_equal(lt__fault_site(2, &file, &line, &hits), -1);
    assert_int_equal(lt__fault_first(&file, &line), -1);
    assert_string_equal(s, "abc");
    for (int i = 0; i < 5; i++) lt__free(p[i]);
    lt__free(s);
}

static void test_site_mode_counts_only_that_site(void **state) {
    (void)state;
    void *a[3], *b[3];
    int line_b = __LINE__ + 4;
    assert_int_equal(lt__fault_arm_site(__FILE__, line_b, 2, 0), 0);
    for (int i = 0; i < 3; i++) {
        a[i] = lt__malloc(4);
        b[i] = lt__malloc(4);
    }
    lt__fault_disarm();
    for (int i = 0; i < 3; i++) assert_non_null(a[i]);
    assert_non_null(b[0]);
    assert_null(b[1]);           /* the second allocation at line_b */
    assert_non_null(b[2]);
    assert_int_equal(lt__fault_count(), 6);
    assert_int_equal(lt__fault_fired(), 1);
    for (int i = 0; i < 3; i++) {
        lt__free(a[i]);
        lt__free(b[i]);
    }
    assert_int_equal(lt__fault_arm_site(NULL, 1, 1, 0), -1);
    assert_int_equal(lt__fault_arm_site(__FILE__, 0, 1, 0), -1);
}

static void test_failed_realloc_keeps_the_block(void **state) {
    (void)state;
    char *p = lt__malloc(4);
    assert_non_null(p);
    memcpy(p, "abc", 4);
    lt__fault_arm(1, 0);
    char *q = lt__realloc(p, 1 << 20);
    lt__fault_disarm();
    assert_null(q);
    assert_string_equal(p, "abc");
    lt__free(p);
}

static void test_live_counts_blocks_made_and_freed(void **state) {
    (void)state;
    lt__fault_arm(0, 0);
    void *a = lt__malloc(8), *b = lt__calloc(1, 8);
    char *c = lt__strdup("z");
    assert_int_equal(lt__fault_live(), 3);
    void *b2 = lt__realloc(b, 64);     /* moves a live block: still one */
    assert_non_null(b2);
    void *d = lt__realloc(NULL, 8);    /* a new one */
    assert_int_equal(lt__fault_live(), 4);
    lt__free(a);
    lt__free(b2);
    lt__free(c);
    lt__free(d);
    lt__free(NULL);
    assert_int_equal(lt__fault_live(), 0);
    lt__fault_disarm();
}

static void test_arm_from_env(void **state) {
    (void)state;
    unsetenv("LOCALTENSOR_FAULT_AT");
    unsetenv("LOCALTENSOR_FAULT_SITE");
    assert_int_equal(lt__fault_arm_from_env(), 0);
    setenv("LOCALTENSOR_FAULT_AT", "3x", 1);
    assert_int_equal(lt__fault_arm_from_env(), -1);
    setenv("LOCALTENSOR_FAULT_AT", "-1", 1);
    assert_int_equal(lt__fault_arm_from_env(), -1);
    setenv("LOCALTENSOR_FAULT_AT", "2", 1);
    setenv("LOCALTENSOR_FAULT_SITE", "no-line", 1);
    assert_int_equal(lt__fault_arm_from_env(), -1);
    setenv("LOCALTENSOR_FAULT_SITE", "kernels/tensor.c:0", 1);
    assert_int_equal(lt__fault_arm_from_env(), -1);
    unsetenv("LOCALTENSOR_FAULT_SITE");
    assert_int_equal(lt__fault_arm_from_env(), 1);
    void *a = lt__malloc(1), *b = lt__malloc(1);
    lt__fault_disarm();
    assert_non_null(a);
    assert_null(b);
    lt__free(a);
    unsetenv("LOCALTENSOR_FAULT_AT");
}

/* One failed library call: the contract every out-of-memory path keeps. */
static void expect_clean_failure(lt_status st, const void *out, int64_t n) {
    if (st != LT_NOMEM)
        fail_msg("N=%lld: status %s, not out of memory: %s", (long long)n, lt_status_name(st),
                 lt_errmsg());
    if (!strstr(lt_errmsg(), "out of memory"))
        fail_msg("N=%lld: message '%s'", (long long)n, lt_errmsg());
    if (out) fail_msg("N=%lld: a failed call left its output set", (long long)n);
    if (lt__fault_live() != 0)
        fail_msg("N=%lld: %lld blocks still allocated after the failure", (long long)n,
                 (long long)lt__fault_live());
}


/* The CPU backend's large blocks: a huge block's data starts on a 2 MiB
 * boundary and is writable to its end; a freed block is kept and handed
 * out again for the same size; a miss gives back kept blocks of sizes
 * nobody asked for again (at least the missing block's bytes), never those
 * of a size that was asked for again; what it gives back passes through the
 * allocator's block cache, and lt_backend_cpu_trim empties both. */
static void test_cpu_cache_gives_back_idle_sizes(void **state) {
    (void)state;
    const lt_backend *b = lt_backend_cpu();
    lt_backend_cpu_trim();
    assert_int_equal(lt__backend_cpu_cached(), 0);
    const size_t A = (size_t)3 << 20, B = (size_t)9 << 20, C = (size_t)5 << 20;
    char *a1 = b->iface->alloc(b->ctx, A), *a2 = b->iface->alloc(b->ctx, A);
    assert_non_null(a1);
    assert_non_null(a2);
    assert_int_equal((uintptr_t)a1 % ((uintptr_t)2 << 20), 0);
    assert_int_equal((uintptr_t)a2 % ((uintptr_t)2 << 20), 0);
    memset(a1, 1, A);
    memset(a2, 2, A);
    b->iface->free(b->ctx, a1);
    b->iface->free(b->ctx, a2);
    if (!CACHE_ON) {
        assert_int_equal(lt__backend_cpu_cached(), 0);
        return;
    }
    size_t kept = lt__backend_cpu_cached();
    assert_true(kept >= 2 * A && kept < 2 * (A + ((size_t)2 << 20)));
    char *a3 = b->iface->alloc(b->ctx, A); /* a hit: one of the two, its size now asked for again */
    assert_true(a3 == a1 || a3 == a2);
    assert_int_equal(lt__backend_cpu_cached(), kept / 2);
    b->iface->free(b->ctx, a3);
    assert_int_equal(lt__backend_cpu_cached(), kept);
    char *b1 = b->iface->alloc(b->ctx, B);   /* a miss: A's blocks stay */
    assert_non_null(b1);
    assert_int_equal(lt__backend_cpu_cached(), kept);
    memset(b1, 3, B);
    b->iface->free(b->ctx, b1);
    size_t kept_b = lt__backend_cpu_cached() - kept;
    assert_true(kept_b >= B);
    char *c1 = b->iface->alloc(b->ctx, C); /* a miss: B's block (never asked for again) goes back */
    assert_non_null(c1);
    assert_int_equal(lt__backend_cpu_cached(), kept);
    b->iface->free(b->ctx, c1);
    const char *env = getenv("LOCALTENSOR_ALLOC_CACHE");
    if (!(env && strcmp(env, "0") == 0))   /* B's given-back block, in the block cache */
        assert_true(lt__alloc_cached() >= B);
    lt_backend_cpu_trim();   /* empties both caches */
    assert_int_equal(lt__backend_cpu_cached(), 0);
    assert_int_equal(lt__alloc_cached(), 0);
}

/* kernels/alloc.c's block cache: a freed block of 1 MiB or more is kept
 * and handed out again for a request of about its size (also aligned, when
 * its address allows); fault injection fails a hit like any allocation and
 * the block stays kept; lt__alloc_trim gives every kept block back; the
 * bytes kept never pass 1 GiB (the oldest blocks go first). Smaller blocks
 * are never kept. Nothing is kept under AddressSanitizer. */
static void test_block_cache_keeps_and_reuses(void **state) {
    (void)state;
    lt__alloc_trim();
    assert_int_equal(lt__alloc_cached(), 0);
    const size_t M = (size_t)3 << 20;
    char *a = lt__malloc(M);
    assert_non_null(a);
    memset(a, 7, M);
    lt__free(a);
    const char *env = getenv("LOCALTENSOR_ALLOC_CACHE");
    if (!CACHE_ON || (env && strcmp(env, "0") == 0)) {   /* off: nothing is ever kept */
        assert_int_equal(lt__alloc_cached(), 0);
        return;
    }
    size_t kept = lt__alloc_cached();
    assert_true(kept >= M && kept < M + 65536);
    lt__fault_arm(1, 0);   /* a hit is an allocation: it can fail, keeping the block */
    assert_null(lt__malloc(M));
    lt__fault_disarm();
    assert_int_equal(lt__alloc_cached(), kept);
    char *b = lt__malloc(M - 4096);   /* about the same size: the kept block */
    assert_ptr_equal(b, a);
    assert_int_equal(lt__alloc_cached(), 0);
    assert_int_equal(b[M - 4097], 7);   /* not cleared: malloc's contract */
    lt__free(b);
    char *c = lt__malloc(4 * M);   /* much larger: not the kept block */
    assert_ptr_not_equal(c, a);
    lt__free(c);
    void *small = lt__malloc(4096);
    size_t before = lt__alloc_cached();
    lt__free(small);
    assert_int_equal(lt__alloc_cached(), before);
    lt__alloc_trim();
    assert_int_equal(lt__alloc_cached(), 0);
    /* 8 blocks of 200 MiB (never touched): at most 1 GiB stays kept */
    void *big[8];
    for (int i = 0; i < 8; i++) assert_non_null(big[i] = lt__malloc((size_t)200 << 20));
    for (int i = 0; i < 8; i++) lt__free(big[i]);
    assert_true(lt__alloc_cached() <= ((size_t)1 << 30));
    assert_true(lt__alloc_cached() >= ((size_t)4 * 200 << 20));
    lt__alloc_trim();
    assert_int_equal(lt__alloc_cached(), 0);
}

/* distribute then redistribute with verification of a 4x4 arange on a 2x2
 * mesh, failing each allocation in turn until the sequence completes */
static void test_sweep_distribute_redistribute(void **state) {
    (void)state;
    lt_mesh mesh;
    LT_CHECK(lt_mesh_parse("2x2", &mesh));
    int64_t shape[2] = {4, 4};
    lt_tensor *x = NULL;
    LT_CHECK(lt_tensor_new(LT_F32, 2, shape, &x));
    LT_CHECK(lt_arange_fill(x));
    lt_placement src[2] = {lt_shard(0), lt_shard(1)}, dst[2] = {lt_replicate(), lt_shard(0)};
    lt_redistribute_opts ro = {.verify = 1, .no_cache = 1};
    int64_t n;
    int completed = 0, failures = 0;
    for (n = 1; n < 100000 && !completed; n++) {
        lt_dtensor *a = NULL, *b = NULL;
        lt__fault_arm(n, 0);
        lt_status st = lt_distribute(&mesh, x, src, 2, &a);
        if (st) {
            expect_clean_failure(st, a, n);
            failures++;
            lt__fault_disarm();
            continue;
        }
        st = lt_redistribute(a, dst, 2, &ro, &b, NULL);
        if (st) {
            lt_dtensor_free(a);
            expect_clean_failure(st, b, n);
            failures++;
            lt__fault_disarm();
            continue;
        }
        /* rank 1 = coord (0, 1) holds rows 2..3 of [R, S(0)]: 8..15 */
        const lt_tensor *t = lt_to_local(b, 1);
        for (int64_t i = 0; i < 8; i++) assert_true(lt_get_flat(t, i) == 8 + i);
        completed = lt__fault_fired() == 0;
        lt_dtensor_free(a);
        lt_dtensor_free(b);
        assert_int_equal(lt__fault_live(), 0);
        lt__fault_disarm();
    }
    assert_true(completed);
    assert_true(failures > 10);   /* the sequence allocates: faults were reached */
    lt_tensor_free(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_countdown_fails_only_the_nth),
        cmocka_unit_test(test_persistent_fails_every_later_one),
        cmocka_unit_test(test_count_only_records_sites_and_hits),
        cmocka_unit_test(test_site_mode_counts_only_that_site),
        cmocka_unit_test(test_failed_realloc_keeps_the_block),
        cmocka_unit_test(test_live_counts_blocks_made_and_freed),
        cmocka_unit_test(test_arm_from_env),
        cmocka_unit_test(test_cpu_cache_gives_back_idle_sizes),
        cmocka_unit_test(test_block_cache_keeps_and_reuses),
        cmocka_unit_test(test_sweep_distribute_redistribute),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
