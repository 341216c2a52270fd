/* kernels/pool.c — the persistent worker pool behind lt__parallel_for.
 *
 * Workers are started on first need (never more than lt_threads() - 1 of
 * them), park on a condition variable between sections and are joined at
 * exit. A section hands out indices from one atomic counter in increasing
 * order, the caller's thread taking its share; the caller returns only when
 * every worker that joined the section has finished. One section runs at a
 * time (a second thread that wants the pool meanwhile runs its work inline).
 *
 * Invariant: a worker that joined a section decrements `active` exactly once
 * for it, and the caller does not start the next section before `active`
 * is 0, so no worker can miss a section it was counted in.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "kernels/pool_impl.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "kernels/tensor_impl.h"

typedef struct job {
    lt__task_fn fn;
    void *ctx;
    const lt_backend *backend;  /* the caller's default-backend override (lt__backend_thread) */
    int64_t n;
    atomic_llong next;          /* the next index to hand out */
    atomic_llong fail_at;       /* lowest failing index so far (INT64_MAX: none) */
    pthread_mutex_t err_mu;     /* guards the three below */
    lt_status err;              /* status of fail_at's call */
    lt_error info;              /* its lt_errinfo() */
    char msg[2048];             /* its lt_errmsg() */
} job;

static pthread_mutex_t use_mu = PTHREAD_MUTEX_INITIALIZER;  /* held by the section's caller */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;      /* guards the pool state below */
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static pthread_t workers[LT_THREADS_MAX];   /* [1, nworkers] are started; [0] unused */
static int nworkers;
static unsigned long born_gen[LT_THREADS_MAX]; /* gen when worker k was started */
static job *cur;            /* the section in progress */
static unsigned long gen;   /* sections started */
static int width;           /* threads of the section in progress, the caller's included */
static int active;          /* workers of the section that have not finished it */
static int stopping;
static int exit_hooked;

static atomic_int set_count;            /* lt_set_threads; 0: default */
static atomic_size_t par_min = LT__PAR_MIN_BYTES_DEFAULT;
static int default_count;               /* LT_THREADS, else the cores */
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static _Thread_local int my_slot;       /* 0: not a worker */
static _Thread_local int in_section;    /* 1: inside a parallel section (workers always) */

static int online_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n < LT_THREADS_MAX ? n : LT_THREADS_MAX) : 1;
}

static void read_default(void) {
    int cores = online_cores();
    int n = cores;
    const char *v = getenv("LT_THREADS");
    if (v && *v) {
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        if (*end || errno || x < 0)
            fprintf(stderr, "localtensor: LT_THREADS: '%s' is not a thread count >= 0; using %d\n",
                    v, cores);
        else if (x > 0)
            n = x < LT_THREADS_MAX ? (int)x : LT_THREADS_MAX;
    }
    default_count = n < LT_THREADS_MAX ? n : LT_THREADS_MAX;
}

int lt_threads(void) {
    int n = atomic_load(&set_count);
    if (n > 0) return n;
    pthread_once(&default_once, read_default);
    return default_count;
}

void lt_set_threads(int n) {
    atomic_store(&set_count, n <= 0 ? 0 : n < LT_THREADS_MAX ? n : LT_THREADS_MAX);
}

int lt__pool_slot(void) { return my_slot; }

size_t lt__par_min_bytes(void) { return atomic_load_explicit(&par_min, memory_order_relaxed); }

void lt__set_par_min_bytes(size_t bytes) {
    atomic_store(&par_min, bytes ? bytes : LT__PAR_MIN_BYTES_DEFAULT);
}

int lt__pool_width(void) {
    if (in_section || lt__fault_armed()) return 1;
    return lt_threads();
}

/* Takes indices until none is left or a lower one has failed. */
static void run_tasks(job *j) {
    for (;;) {
        long long i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n || i > atomic_load(&j->fail_at)) return;
        lt_status st = j->fn(j->ctx, (int64_t)i);
        if (st == LT_OK) continue;
        pthread_mutex_lock(&j->err_mu);
        if (i < atomic_load(&j->fail_at)) {
            atomic_store(&j->fail_at, i);
            j->err = st;
            j->info = *lt_errinfo();
            snprintf(j->msg, sizeof j->msg, "%s", lt_errmsg());
        }
        pthread_mutex_unlock(&j->err_mu);
    }
}

static void *worker_main(void *arg) {
    my_slot = (int)(intptr_t)arg;
    in_section = 1;
    pthread_mutex_lock(&mu);
    unsigned long seen = born_gen[my_slot]; /* sections started after it count */
    for (;;) {
        while (!stopping && gen == seen) pthread_cond_wait(&work_cv, &mu);
        if (stopping) break;
        seen = gen;
        if (my_slot >= width) continue; /* not counted in this section */
        job *j = cur;
        pthread_mutex_unlock(&mu);
        const lt_backend *own = lt__backend_set_thread(j->backend); /* the caller's */
        run_tasks(j);
        lt__backend_set_thread(own);
        pthread_mutex_lock(&mu);
        if (--active == 0) pthread_cond_signal(&done_cv);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void pool_shutdown(void) {
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_broadcast(&work_cv);
    int n = nworkers;
    pthread_mutex_unlock(&mu);
    for (int k = 1; k <= n; k++) pthread_join(workers[k], NULL);
    pthread_mutex_lock(&mu);
    nworkers = 0;
    pthread_mutex_unlock(&mu);
}

/* In the child of a fork only the forking thread exists: forget the
 * workers (the next section starts new ones) and any lock they held. */
static void after_fork_child(void) {
    pthread_mutex_t m0 = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c0 = PTHREAD_COND_INITIALIZER;
    use_mu = m0;
    mu = m0;
    work_cv = c0;
    done_cv = c0;
    nworkers = 0;
    active = 0;
    cur = NULL;
}

/* Starts workers up to want - 1 of them (called with use_mu held); returns
 * how many threads a section can use (fewer when a thread would not start). */
static int ensure_workers(int want) {
    pthread_mutex_lock(&mu);
    if (stopping) {
        pthread_mutex_unlock(&mu);
        return 1;
    }
    if (!exit_hooked) {
        exit_hooked = atexit(pool_shutdown) == 0 ? 1 : -1;
        pthread_atfork(NULL, NULL, after_fork_child);
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* workers take no signals */
    while (nworkers + 1 < want) {
        int k = nworkers + 1;
        born_gen[k] = gen;
        if (pthread_create(&workers[k], NULL, worker_main, (void *)(intptr_t)k) != 0) break;
        nworkers = k;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    int w = nworkers + 1 < want ? nworkers + 1 : want;
    pthread_mutex_unlock(&mu);
    return w;
}

lt_status lt__parallel_for(int64_t n, lt__task_fn fn, void *ctx) {
    if (n <= 0) return LT_OK;
    int w = lt__pool_width();
    if (w > n) w = (int)n;
    if (w > 1 && pthread_mutex_trylock(&use_mu) != 0) w = 1;
    if (w <= 1) {
        for (int64_t i = 0; i < n; i++) {
            lt_status st = fn(ctx, i);
            if (st) return st;
        }
        return LT_OK;
    }
    w = ensure_workers(w);
    job j;
    j.fn = fn;
    j.ctx = ctx;
    j.backend = lt__backend_thread();
    j.n = n;
    atomic_init(&j.next, 0);
    atomic_init(&j.fail_at, INT64_MAX);
    pthread_mutex_init(&j.err_mu, NULL);
    j.err = LT_OK;
    pthread_mutex_lock(&mu);
    cur = &j;
    width = w;
    active = w - 1;
    gen++;
    if (active) pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&mu);
    in_section = 1;
    run_tasks(&j);
    in_section = 0;
    pthread_mutex_lock(&mu);
    while (active) pthread_cond_wait(&done_cv, &mu);
    cur = NULL;
    pthread_mutex_unlock(&mu);
    pthread_mutex_unlock(&use_mu);
    pthread_mutex_destroy(&j.err_mu);
    if (j.err == LT_OK) return LT_OK;
    lt__err_restore(j.err, j.msg, &j.info);
    return j.err;
}
