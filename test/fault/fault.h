/* test/fault/fault.h — shared by the allocation fault-injection driver
 * (fault_main.c) and its workloads (fault_api.c: the C API; fault_scen.c: a
 * scenario file through `localtensor run`).
 *
 * A workload is run once per injected fault (kernels/alloc.h decides which
 * allocation fails) and reports how it ended; the driver checks the rest
 * (nothing left allocated, no sanitizer report) and counts. */
#ifndef LT_TEST_FAULT_H
#define LT_TEST_FAULT_H

#include <stdio.h>

#include "localtensor/kernels/status.h"

/* How one run ended. */
enum {
    FAULT_DONE = 0,     /* completed with the right results */
    FAULT_OOM = 3,      /* stopped with a clean out-of-memory error */
    FAULT_BROKEN = 4    /* broke the contract (message on stderr) */
};

extern int fault_verbose;

/* A workload: runs once; ctx is its own. tmp is a scratch file path prefix
 * private to the calling process. */
typedef int (*fault_workload)(void *ctx, const char *tmp);

/* Prints "fault: WHAT: detail" on stderr and returns FAULT_BROKEN. */
int fault_broken(const char *what, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A failed library call: must be LT_NOMEM from an injected fault with a
 * message saying "out of memory", and each of outs[0..nouts) NULL (a
 * failed constructor leaves no half-built object). Returns FAULT_OOM or
 * FAULT_BROKEN. */
int fault_failed(const char *what, lt_status st, int nouts, void *const *outs);

/* The API workload (fault_api.c); ctx unused. */
int fault_api_workload(void *ctx, const char *tmp);

/* The per-rank program workload (fault_program.c): every collective of
 * lt_program_run, then the three would-hang reports; ctx unused. */
int fault_program_workload(void *ctx, const char *tmp);

/* A scenario file run through lt_sc_main (fault_scen.c). The first run
 * with record set keeps its exit code and output (timings removed) as the
 * baseline; later runs must match it or stop with exit code 2 and "out of
 * memory" in the output. */
typedef struct fault_scen {
    const char *path;
    int record;
    int base_code;
    char *base_out;     /* owned (malloc) */
    char *base_json;    /* owned (malloc) */
} fault_scen;

int fault_scen_workload(void *ctx, const char *tmp);
void fault_scen_free(fault_scen *s);

#endif
