/* collectives_sim/engine_mpi_yield.c — how a process of the MPI engine waits
 * when the cores are shared (collectives_sim/engine_mpi.h,
 * lt_engine_mpi_polite_wait).
 *
 * Open MPI 4.1 waits for a message by polling. With more processes than
 * cores it calls sched_yield after each poll that found nothing
 * (mpi_yield_when_idle, on by default when oversubscribed), which hands the
 * core to the processes with work; but when other programs are running too,
 * a yield hands the core to one of them for a whole time slice, and every
 * message costs slices: the engine's unit test at -np 8 on 2 cores took
 * 50 s instead of 0.6 s beside two CPU-bound programs. This file replaces
 * sched_yield for the whole program (the executable's definition is the one
 * Open MPI's libraries call): a yield that took over 1 ms (another program
 * ran a slice meanwhile) turns the next 10 ms of yields into sleeps of a
 * few microseconds, so that the process gives up the core without waiting
 * for a slice to come back to it, and, having slept, preempts the other
 * program when it wakes. A yield among the run's own processes alone stays
 * a yield (they run briefly). Linked only into programs that call
 * lt_engine_mpi_polite_wait (the CLI, test/mpi/engine.c); until then, and
 * in every other thread's first yields, it is the system call.
 */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* syscall */
#endif
#include "localtensor/collectives_sim/engine_mpi.h"

#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLOW_YIELD_NS 1000000LL   /* a yield this long: another program ran a slice */
#define SLEEP_FOR_NS 10000000LL   /* then sleep instead of yielding this long */

static atomic_int g_on;
static _Thread_local long long t_sleep_until;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void lt_engine_mpi_polite_wait(void) { atomic_store_explicit(&g_on, 1, memory_order_relaxed); }

int sched_yield(void);
int sched_yield(void) {
    if (!atomic_load_explicit(&g_on, memory_order_relaxed)) return (int)syscall(SYS_sched_yield);
    long long t0 = now_ns();
    if (t0 < t_sleep_until) {
        struct timespec ts = {0, 1000};   /* the timer's slack makes it about 50 us */
        nanosleep(&ts, NULL);
        return 0;
    }
    int r = (int)syscall(SYS_sched_yield);
    long long t1 = now_ns();
    if (t1 - t0 > SLOW_YIELD_NS) t_sleep_until = t1 + SLEEP_FOR_NS;
    return r;
}
