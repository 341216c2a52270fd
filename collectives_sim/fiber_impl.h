/* collectives_sim/fiber_impl.h — cooperative tasks for the per-rank program
 * runner (collectives_sim/program.c). Internal: not installed.
 *
 * A fiber is a function running on its own small stack that hands control
 * to another fiber explicitly; nothing runs in parallel, so the runner is
 * deterministic by construction. All stacks of one run live in one
 * anonymous mapping (reserved, not committed: a page costs memory only once
 * touched), each with a guard page below it when the run is small enough
 * for the kernel's mapping limit.
 *
 * Switching: on x86-64 ELF a dozen instructions that save the callee-saved
 * registers and swap stack pointers (no system call; swapcontext makes one
 * to save the signal mask, ~0.6 us here); elsewhere, with shadow stacks
 * (-fcf-protection), or when built with -DLT_FIBER_UCONTEXT, POSIX ucontext. Under AddressSanitizer
 * every switch is announced with __sanitizer_start_switch_fiber/finish_switch_fiber; under valgrind
 * (when its header is present) every stack is registered.
 */
#ifndef LT_FIBER_IMPL_H
#define LT_FIBER_IMPL_H

#include <stddef.h>

#include "localtensor/kernels/status.h"

typedef struct lt__fibers lt__fibers;
typedef void (*lt__fiber_fn)(void *arg);

/* n fibers with `stack` bytes of stack each (rounded up to whole pages),
 * plus the caller's own context as fiber -1 ("main"). Nothing runs yet.
 * Errors: LT_INVALID for n < 1, LT_OVERFLOW when n stacks do not fit in the
 * address space, LT_NOMEM. Free with lt__fibers_free. */
lt_status lt__fibers_new(int n, size_t stack, lt__fibers **out);
/* Releases the stacks. Every fiber must have ended (lt__fiber_exit) or never
 * started: a suspended fiber's frames are dropped without running. */
void lt__fibers_free(lt__fibers *f);
/* Sets fiber i to run fn(arg) when first switched to. */
void lt__fiber_prepare(lt__fibers *f, int i, lt__fiber_fn fn, void *arg);
/* Suspends the running fiber (`from`: its index, -1 for main) and runs
 * fiber `to` (-1: main) until something switches back. */
void lt__fiber_switch(lt__fibers *f, int from, int to);
/* Ends the running fiber `from` and runs `to`; never returns. A fiber's
 * function must end this way: it must not return. */
void lt__fiber_exit(lt__fibers *f, int from, int to);
/* Bytes of stack each fiber gets (after rounding). */
size_t lt__fiber_stack_size(const lt__fibers *f);
/* "asm" or "ucontext": the switching mechanism compiled in. */
const char *lt__fiber_kind(void);

#endif
