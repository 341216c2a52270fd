/* test/test_pool.c — the worker pool (kernels/pool.h, kernels/pool_impl.h):
 * every index runs exactly once for any thread count, the error returned is
 * the lowest failing index's with its own message (set on whichever thread
 * ran it), nested sections and fault injection run inline, slots are never
 * shared by two pieces of work running at once, and the thread count can be
 * set from a program. Expected values are the index sets and messages the
 * tests build themselves. */
#include "kernels/pool_impl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "test/testutil.h"

#define N 10000

typedef struct {
    atomic_int hits[N];
    int64_t fail_from;      /* indices >= fail_from that are multiples of 7 fail */
    atomic_int slot_busy[LT_THREADS_MAX];
    atomic_int slot_clash;
    atomic_int on_worker;   /* pieces that ran on a worker thread */
    atomic_int
        wait_worker; /* the caller's first piece waits (up to 10 s) for a worker's first one */
} counts;

static lt_status count_one(void *ctx, int64_t i) {
    counts *c = ctx;
    int s = lt__pool_slot();
    if (s < 0 || s >= LT_THREADS_MAX) return lt__err(LT_INVALID, "slot %d out of range", s);
    if (atomic_fetch_add(&c->slot_busy[s], 1) != 0) atomic_fetch_add(&c->slot_clash, 1);
    if (s > 0) atomic_fetch_add(&c->on_worker, 1);
    atomic_fetch_add(&c->hits[i], 1);
    /* on a loaded machine (or under valgrind, which runs one thread at a
     * time) the caller could take every index before a worker wakes */
    const struct timespec tick = {0, 100000};
    if (s == 0 && atomic_exchange(&c->wait_worker, 0))
        for (int k = 0; k < 100000 && !atomic_load(&c->on_worker); k++) nanosleep(&tick, NULL);
    double x = 0; /* a little work, so that pieces overlap in time */
    for (int k = 0; k < 200; k++) x += k * (double)i;
    if (x < 0) atomic_fetch_add(&c->slot_clash, 1); /* never: uses x */
    atomic_fetch_sub(&c->slot_busy[s], 1);
    if (i >= c->fail_from && i % 7 == 0)
        return lt__err(LT_SHAPE, "piece %lld failed", (long long)i);
    return LT_OK;
}

static counts *new_counts(int64_t fail_from) {
    counts *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->fail_from = fail_from;
    return c;
}

static void test_every_index_once(void **state) {
    (void)state;
    for (int t = 1; t <= 4; t++) {
        lt_set_threads(t);
        assert_int_equal(lt_threads(), t);
        counts *c = new_counts(N);
        atomic_store(&c->wait_worker, t > 1);
        /* with t > 1 a worker must take part (the caller waits for it; a
         * few rounds are allowed too) */
        for (int round = 0; round < 50; round++) {
            memset(c->hits, 0, sizeof c->hits);
            LT_CHECK(lt__parallel_for(N, count_one, c));
            if (t == 1 || atomic_load(&c->on_worker) > 0) break;
        }
        if (t > 1 && atomic_load(&c->on_worker) == 0)
            fail_msg("threads %d: no piece ran on a worker", t);
        for (int i = 0; i < N; i++)
            if (atomic_load(&c->hits[i]) != 1)
                fail_msg("threads %d: index %d ran %d times", t, i, atomic_load(&c->hits[i]));
        assert_int_equal(atomic_load(&c->slot_clash), 0);
        if (t == 1) assert_int_equal(atomic_load(&c->on_worker), 0); /* inline: no thread */
        free(c);
    }
    lt_set_threads(0);
}

static void test_lowest_failure_wins(void **state) {
    (void)state;
    for (int t = 1; t <= 4; t++) {
        lt_set_threads(t);
        for (int64_t from = 1; from < 60; from += 13) {
            counts *c = new_counts(from);
            lt__err_clear();
            lt_status st = lt__parallel_for(N, count_one, c);
            /* the first multiple of 7 at or above `from` */
            long long want = (from + 6) / 7 * 7;
            char msg[64];
            snprintf(msg, sizeof msg, "piece %lld failed", want);
            assert_int_equal(st, LT_SHAPE);
            assert_string_equal(lt_errmsg(), msg);
            assert_int_equal(lt_errinfo()->status, LT_SHAPE);
            for (long long i = 0; i < want; i++) /* everything below it ran */
                assert_int_equal(atomic_load(&c->hits[i]), 1);
            free(c);
        }
    }
    lt_set_threads(0);
}

static lt_status inner(void *ctx, int64_t i) {
    (void)i;
    atomic_int *ran_wide = ctx;
    if (lt__pool_width() != 1) atomic_fetch_add(ran_wide, 1);
    return LT_OK;
}

static lt_status outer(void *ctx, int64_t i) {
    (void)i;
    return lt__parallel_for(8, inner, ctx);
}

static void test_nested_runs_inline(void **state) {
    (void)state;
    lt_set_threads(3);
    atomic_int wide = 0;
    LT_CHECK(lt__parallel_for(16, outer, &wide));
    assert_int_equal(atomic_load(&wide), 0);
    assert_int_equal(lt__pool_width(), 3); /* outside a section */
    lt_set_threads(0);
}

static void test_fault_injection_runs_inline(void **state) {
    (void)state;
    lt_set_threads(4);
    lt__fault_arm(0, 0);
    assert_int_equal(lt__pool_width(), 1);
    counts *c = new_counts(N);
    lt_status st = lt__parallel_for(N, count_one, c);
    lt__fault_disarm();
    LT_CHECK(st);
    assert_int_equal(atomic_load(&c->on_worker), 0);
    free(c);
    lt_set_threads(0);
}

static void test_set_threads_bounds(void **state) {
    (void)state;
    lt_set_threads(1000);
    assert_int_equal(lt_threads(), LT_THREADS_MAX);
    lt_set_threads(2);
    assert_int_equal(lt_threads(), 2);
    lt_set_threads(-3);
    assert_true(lt_threads() >= 1); /* the default: LT_THREADS or the cores */
    lt_set_threads(0);
}

/* two threads of the program each run sections at once: one gets the pool,
 * the other runs inline; both see all their indices */
static void *side(void *arg) {
    counts *c = arg;
    for (int k = 0; k < 20; k++) {
        memset(c->hits, 0, sizeof c->hits);
        if (lt__parallel_for(N, count_one, c) != LT_OK) return (void *)1;
        for (int i = 0; i < N; i++)
            if (atomic_load(&c->hits[i]) != 1) return (void *)1;
    }
    return NULL;
}

static void test_two_callers_at_once(void **state) {
    (void)state;
    lt_set_threads(3);
    counts *a = new_counts(N), *b = new_counts(N);
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, side, a), 0);
    assert_int_equal(pthread_create(&tb, NULL, side, b), 0);
    void *ra, *rb;
    pthread_join(ta, &ra);
    pthread_join(tb, &rb);
    assert_null(ra);
    assert_null(rb);
    free(a);
    free(b);
    lt_set_threads(0);
}

/* a child of fork has no workers: its sections start new ones (a hang
 * would be ended by the alarm and fail) */
static void test_after_fork(void **state) {
    (void)state;
    lt_set_threads(3);
    counts *c = new_counts(N);
    LT_CHECK(lt__parallel_for(N, count_one, c)); /* the workers exist now */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(20);
        memset(c->hits, 0, sizeof c->hits);
        int ok = lt__parallel_for(N, count_one, c) == LT_OK;
        for (int i = 0; i < N; i++) ok &= atomic_load(&c->hits[i]) == 1;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    free(c);
    lt_set_threads(0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_index_once),
        cmocka_unit_test(test_lowest_failure_wins),
        cmocka_unit_test(test_nested_runs_inline),
        cmocka_unit_test(test_fault_injection_runs_inline),
        cmocka_unit_test(test_set_threads_bounds),
        cmocka_unit_test(test_two_callers_at_once),
        cmocka_unit_test(test_after_fork),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
