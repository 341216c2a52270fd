/* kernels/blas_impl.h — the BLAS library's own threads (internal: not
 * installed).
 *
 * OpenBLAS (Debian's libopenblas0-pthread, 0.3.21) starts its worker
 * threads when it is loaded, before main, one per core but the caller's.
 * Each worker first maps a buffer of its own (128 MiB of address space)
 * and, when the address space is capped too low for it (ulimit -v), retries
 * forever: the worker spins, and the process never exits, since exit joins
 * the workers (OpenBLAS's destructor). openblas_set_num_threads(1) cannot
 * help then: it never stops a worker already started. Only
 * OPENBLAS_NUM_THREADS=1 in the environment the library is loaded with
 * keeps the workers from starting, so a program that must always exit sets
 * it and executes itself again (lt__blas_reexec_if_capped). Small gemms
 * never wake the workers (OpenBLAS runs them on the caller's thread). */
#ifndef LT_BLAS_IMPL_H
#define LT_BLAS_IMPL_H

/* Address space each OpenBLAS thread needs (its buffer and stack, with
 * room), and what the process needs besides, in bytes: a cap below
 * threads * PER_THREAD + BASE may leave a worker spinning. */
#define LT__BLAS_VA_PER_THREAD ((unsigned long long)256 << 20)
#define LT__BLAS_VA_BASE ((unsigned long long)512 << 20)

/* 1 when OpenBLAS runs worker threads here and the address space is capped
 * (RLIMIT_AS) below what they and the process need; else 0. */
int lt__blas_workers_capped(void);

/* When lt__blas_workers_capped: sets OPENBLAS_NUM_THREADS=1 and executes
 * this program (/proc/self/exe) again with argv, so that OpenBLAS loads
 * without workers. Returns when nothing was needed, when
 * OPENBLAS_NUM_THREADS was 1 already, or when that failed (the program
 * goes on as it is). Call first in main, before any output. */
void lt__blas_reexec_if_capped(char **argv);

#endif
