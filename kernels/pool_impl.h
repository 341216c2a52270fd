/* kernels/pool_impl.h — running independent pieces of work on the thread
 * pool (internal: not installed; the count is set through kernels/pool.h).
 *
 * lt__parallel_for(n, fn, ctx) calls fn(ctx, i) once for every i in [0, n),
 * on up to lt_threads() threads, the caller's included, and returns when all
 * have returned. fn must be safe to run concurrently for different i: it
 * writes only what piece i owns (its own output elements, its own slot's
 * scratch: lt__pool_slot) and reads what no other piece writes.
 *
 * Determinism: the status returned is that of the LOWEST i whose fn failed,
 * and that call's message and lt_errinfo() become the caller's (a message
 * set on a worker thread reaches the calling thread). Every i below the
 * lowest failure has run; some above it may have run too (they are skipped
 * once a lower failure is known), so on failure the outputs of a parallel
 * section are unspecified, exactly as with the serial loop that stops at
 * the first failure.
 *
 * It runs inline (a plain loop on the calling thread, in order, stopping at
 * the first failure) when lt_threads() is 1, when n < 2, when called from
 * inside another parallel section (nested sections never fan out again),
 * when another thread is using the pool, and while allocation fault
 * injection is armed (kernels/alloc.h: so that the Nth allocation is the
 * same one on every run).
 */
#ifndef LT_POOL_IMPL_H
#define LT_POOL_IMPL_H

#include <stdint.h>

#include "localtensor/kernels/pool.h"
#include "localtensor/kernels/status.h"

/* Work that reads and writes fewer bytes than lt__par_min_bytes() runs
 * inline: waking the workers and waiting for the last one costs tens of
 * microseconds on a busy machine. Work that comes in pieces handed out one
 * by one may scale it down (the in-process engine splits a collective from
 * an eighth of it on, collectives_sim/engine_impl.h). */
#define LT__PAR_MIN_BYTES_DEFAULT ((size_t)16 << 20)
size_t lt__par_min_bytes(void);
/* Sets that threshold (0: back to the default), so that tests reach the
 * parallel paths with small tensors. Like lt_set_threads, call it while no
 * library call runs on another thread. */
void lt__set_par_min_bytes(size_t bytes);

typedef lt_status (*lt__task_fn)(void *ctx, int64_t i);

/* Runs fn(ctx, i) for every i in [0, n) (n <= 0: nothing, LT_OK). Returns
 * LT_OK or the lowest failing i's status (its message set on this thread).
 * Borrows ctx. */
lt_status lt__parallel_for(int64_t n, lt__task_fn fn, void *ctx);

/* The calling thread's slot: 0 outside the pool's workers (any thread that
 * is not a worker, including the one that called lt__parallel_for), k in
 * [1, LT_THREADS_MAX) on the k-th worker. Two pieces of work that run at the
 * same time never share a slot, so per-slot scratch
 * (scratch[lt__pool_slot()]) needs no lock. */
int lt__pool_slot(void);

/* How many threads a lt__parallel_for called here and now would use at
 * most: 1 inside a parallel section or while fault injection is armed,
 * else lt_threads(). Code that splits work into pieces reads it to pick the
 * number of pieces (splitting never changes results, only speed). */
int lt__pool_width(void);

#endif
