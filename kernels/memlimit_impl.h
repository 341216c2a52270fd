/* kernels/memlimit_impl.h — how much memory this process may still fill, and
 * the up-front check that refuses work which would not fit (internal: not
 * installed; users see the check through lt_check_memory, layout.h).
 *
 * The simulator holds the shards of every rank at once, so a layout that is
 * ordinary on a cluster can need more memory than one machine has. Saying so
 * with a message before allocating beats being killed by the kernel's OOM
 * killer minutes later. Every path that allocates shards (distribute and
 * init, redistribute with its copies and verification, the collectives)
 * estimates what it will allocate and asks lt__mem_check first. Work that
 * holds memory across such calls (a scenario's declared tensors, held for
 * its case's whole run) charges it with lt__mem_charge, so that every later
 * check counts it, and releases it at the end.
 */
#ifndef LT_MEMLIMIT_IMPL_H
#define LT_MEMLIMIT_IMPL_H

#include <stdint.h>

#include "kernels/status_impl.h"

/* Bytes this process may still allocate: the smallest of physical memory,
 * the memory the kernel reports available now (Linux MemAvailable) less a
 * reserve of 1/16 of it (at most 1 GiB) for everything else, the
 * address-space and data-size limits (ulimit -v, ulimit -d) less what the
 * process already maps, and the environment variable
 * LOCALTENSOR_MEMORY_LIMIT (bytes, or with a K, M, G or T suffix: a budget
 * of the user's choosing, and how the tests make the check bite without
 * allocating much). The bounds that cannot see what the process holds
 * (physical memory, the budgets) have the bytes charged with
 * lt__mem_charge taken off. *why (may be NULL) gets a static phrase naming the
 * bound: "of memory", "of memory available now", "of memory left to this
 * process (ulimit)", "of memory allowed by LOCALTENSOR_MEMORY_LIMIT" or
 * "of memory allowed by --max-memory" (lt__mem_set_budget).
 * UINT64_MAX when nothing is known. LT_INVALID (with a message) when
 * LOCALTENSOR_MEMORY_LIMIT is set but is not a size. */
lt_status lt__mem_limit(uint64_t *bytes, const char **why);

/* A process-wide budget of the user's choosing, as LOCALTENSOR_MEMORY_LIMIT
 * but named `label` (static, e.g. "--max-memory") in refusals: `size` is
 * bytes or a K, M, G or T suffix. LT_INVALID "LABEL: 'SIZE' is not a size
 * in bytes (...)" when it is not one; nothing changes then. */
lt_status lt__mem_set_budget(const char *size, const char *label);

/* n processes share this machine (the MPI engine's, one per simulated
 * block): each may fill 1/n of its physical memory (the available-now bound
 * already sees what the others hold). 1: the default. */
void lt__mem_set_share(int n);
/* LT_OK when `bytes` fits under lt__mem_limit; otherwise LT_NOMEM with
 * "WHAT needs X GiB for the shards of all N ranks, more than this
 * machine's Y GiB of memory[ available now | ...]" (or lt__mem_limit's
 * LT_INVALID), where Y is the bound itself and, when charged bytes were
 * taken off it, " less the Z GiB held already by HOLDER" follows; world
 * <= 0 leaves out "for the shards of all N ranks" (memory that is no
 * rank's). 0 bytes is LT_OK without asking the system. */
lt_status lt__mem_check(uint64_t bytes, int world, const char *what);

/* lt__mem_check, and when `bytes` fit, charges them: every later check
 * (and lt__mem_limit) counts them as held until lt__mem_release gives them
 * back. For memory held across many checks (a scenario's declared tensors,
 * charged before the first is built, released when its case ends): the
 * budgets cover what is held, not one request at a time. The account is
 * process-wide (the cases running on other threads count too); holder (a
 * static phrase, e.g. "declared tensors (tensors:)") names what holds
 * it in later refusals. */
lt_status lt__mem_charge(uint64_t bytes, int world, const char *what, const char *holder);
/* Gives back bytes charged by lt__mem_charge (the caller releases exactly
 * what it charged). */
void lt__mem_release(uint64_t bytes);
/* Bytes charged now. */
uint64_t lt__mem_charged(void);

/* Bytes of freed large blocks the CPU backend keeps for reuse
 * (kernels/backend_cpu.c): resident, but free for the next shards, so the
 * bound above counts them as available. */
size_t lt__backend_cpu_cached(void);

/* a + b, or UINT64_MAX when it wraps (byte estimates saturate). */
static inline uint64_t lt__add_sat(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

#endif
