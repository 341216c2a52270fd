/* kernels/pool.h — how many threads the library may use.
 *
 * The simulator computes the shards of every rank in one process. Work that
 * is independent across ranks, groups or cases (shard kernels, the groups of
 * a collective, the element blocks of a big reduction, the cases of a sweep)
 * runs on a small persistent pool of worker threads. Results never depend
 * on the number of threads: every output element is computed by the same
 * arithmetic in the same order (a reduction still combines member 0, 1, 2,
 * ... of its group), errors are those of the lowest failing piece of work,
 * and reports are written in case order.
 *
 * The count comes from the environment variable LT_THREADS (read once, at
 * the first use): a number from 1 to LT_THREADS_MAX; unset, empty or 0
 * means one thread per online core (capped at LT_THREADS_MAX). 1 runs
 * everything on the calling thread and starts no thread at all.
 */
#ifndef LT_POOL_H
#define LT_POOL_H

#include "localtensor/kernels/export.h"

/* The most threads the pool uses (the caller's included). */
#define LT_THREADS_MAX 64

/* The number of threads parallel work may use now (>= 1): what
 * lt_set_threads set last, else LT_THREADS, else the online cores. A
 * malformed LT_THREADS counts as unset (one line on stderr says so). */
LT_API int lt_threads(void);

/* Sets the thread count for all later work of this process: n in
 * [1, LT_THREADS_MAX] (larger values are capped); n <= 0 returns to the
 * default (LT_THREADS, else the online cores). Takes effect at the next
 * parallel section; call it while no library call is running on another
 * thread. Workers already started stay parked (no thread is stopped). */
LT_API void lt_set_threads(int n);

#endif
