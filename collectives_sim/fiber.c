/* collectives_sim/fiber.c — cooperative tasks on small stacks (fiber_impl.h).
 *
 * Invariant: at any time exactly one context runs — the caller's ("main",
 * slot 0) or one fiber (slot i + 1). A suspended context's registers live
 * on its own stack; `sp` (or the ucontext) points at them.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "collectives_sim/fiber_impl.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* (not with shadow stacks, -fcf-protection=return: the hand-made first frame
 * has no shadow-stack entry; glibc's ucontext handles them) */
#if defined(__x86_64__) && defined(__ELF__) && !defined(LT_FIBER_UCONTEXT) && \
    !(defined(__CET__) && (__CET__ & 2))
#define LT_FIBER_ASM 1
#else
#define LT_FIBER_ASM 0
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define LT_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LT_FIBER_ASAN 1
#endif
#endif
#ifdef LT_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define LT_FIBER_VALGRIND 1
#endif
#endif

/* Runs with guard pages only up to this many fibers: each guard splits the
 * mapping, and Linux allows 65530 mappings per process by default. */
#define GUARD_MAX_FIBERS 4096

typedef struct fiber {
#if LT_FIBER_ASM
    void *sp;                 /* saved stack pointer while suspended */
#else
    ucontext_t uc;
#endif
    struct lt__fibers *set;
    char *lo;                 /* lowest usable byte of the stack (main: learned under ASan) */
    size_t size;              /* usable bytes */
    lt__fiber_fn fn;
    void *arg;
    void *fake;               /* ASan: the fake stack of this context while suspended */
    unsigned vg;              /* valgrind stack id */
} fiber;

struct lt__fibers {
    int n;
    size_t stack, guard;
    char *map;                /* all stacks: n slots of guard + stack bytes */
    size_t map_len;
    fiber *f;                 /* (n + 1): f[0] main, f[i + 1] fiber i */
    int from;                 /* slot that switched last (ASan bookkeeping) */
};

/* ---- the raw switch --------------------------------------------------------- */

#if LT_FIBER_ASM
/* lt__fiber_swap_x64(save, next): pushes the callee-saved registers and the
 * SSE/x87 control words, stores rsp in *save, loads next and pops the same
 * frame from there. lt__fiber_start_x64 is where a new fiber's first swap
 * "returns" to: r12 holds its argument, r13 its function (which never
 * returns). */
void lt__fiber_swap_x64(void **save, void *next);
void lt__fiber_start_x64(void);
__asm__(".text\n"
        ".p2align 4\n"
        ".globl lt__fiber_swap_x64\n"
        ".hidden lt__fiber_swap_x64\n"
        ".type lt__fiber_swap_x64, @function\n"
        "lt__fiber_swap_x64:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size lt__fiber_swap_x64, .-lt__fiber_swap_x64\n"
        ".p2align 4\n"
        ".globl lt__fiber_start_x64\n"
        ".hidden lt__fiber_start_x64\n"
        ".type lt__fiber_start_x64, @function\n"
        "lt__fiber_start_x64:\n"
        "    movq %r12, %rdi\n"
        "    callq *%r13\n"
        "    ud2\n"
        ".size lt__fiber_start_x64, .-lt__fiber_start_x64\n");
#endif

static void raw_switch(fiber *from, fiber *to) {
#if LT_FIBER_ASM
    lt__fiber_swap_x64(&from->sp, to->sp);
#else
    swapcontext(&from->uc, &to->uc);
#endif
}

/* ---- sanitizer bookkeeping ----------------------------------------------------- */

static void before_switch(lt__fibers *F, int from_slot, fiber *to, int exiting) {
    F->from = from_slot;
#ifdef LT_FIBER_ASAN
    __sanitizer_start_switch_fiber(exiting ? NULL : &F->f[from_slot].fake, to->lo, to->size);
#else
    (void)to;
    (void)exiting;
#endif
}

/* In the context that now runs (`self`): completes the switch; the first
 * switch away from main tells ASan's bounds of main's stack. */
static void after_switch(lt__fibers *F, fiber *self) {
#ifdef LT_FIBER_ASAN
    const void *lo = NULL;
    size_t size = 0;
    __sanitizer_finish_switch_fiber(self->fake, &lo, &size);
    if (F->from == 0 && !F->f[0].size) {
        F->f[0].lo = (char *)(uintptr_t)lo;
        F->f[0].size = size;
    }
#else
    (void)F;
    (void)self;
#endif
}

/* ---- entry ------------------------------------------------------------------------ */

static void fiber_main(void *p) {
    fiber *self = p;
    after_switch(self->set, self);
    self->fn(self->arg);
    LT_ASSERT(!"a fiber's function returned instead of calling lt__fiber_exit");
}

#if !LT_FIBER_ASM
static void fiber_main_uc(unsigned hi, unsigned lo) {
    uintptr_t p = ((uintptr_t)hi << 16 << 16) | (uintptr_t)lo;
    fiber_main((void *)p);
}
#endif

/* ---- the set ------------------------------------------------------------------------ */

lt_status lt__fibers_new(int n, size_t stack, lt__fibers **out) {
    *out = NULL;
    if (n < 1) return lt__err(LT_INVALID, "fibers: %d requested, at least 1 expected", n);
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096;
    if (stack < 4 * page) stack = 4 * page;
    if (stack > SIZE_MAX / 2)
        return lt__err(LT_OVERFLOW, "fibers: stack size %zu is too large", stack);
    stack = (stack + page - 1) / page * page;
    size_t guard = n <= GUARD_MAX_FIBERS ? page : 0;
    size_t slot = stack + guard;
    if ((size_t)n > SIZE_MAX / slot)
        return lt__err(LT_OVERFLOW,
                       "fibers: %d stacks of %zu bytes do not fit in the address space", n, stack);
    lt__fibers *F = lt__calloc(1, sizeof *F);
    if (!F) return lt__err(LT_NOMEM, "fibers: out of memory");
    F->n = n;
    F->stack = stack;
    F->guard = guard;
    F->f = lt__calloc((size_t)n + 1, sizeof *F->f);
    if (!F->f) {
        lt__free(F);
        return lt__err(LT_NOMEM, "fibers: out of memory for %d task records", n);
    }
    F->map_len = (size_t)n * slot;
    void *m = mmap(NULL, F->map_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        lt__free(F->f);
        lt__free(F);
        return lt__err(LT_NOMEM, "fibers: cannot reserve %zu bytes of stack (%d x %zu)",
                       (size_t)n * slot, n, stack);
    }
    F->map = m;
    for (int i = 0; i <= n; i++) F->f[i].set = F;
    for (int i = 0; i < n; i++) {
        fiber *fb = &F->f[i + 1];
        char *base = F->map + (size_t)i * slot;
        if (guard)
            (void)mprotect(base, guard,
                           PROT_NONE); /* best effort: a missing guard only loses a check */
        fb->lo = base + guard;
        fb->size = stack;
#ifdef LT_FIBER_VALGRIND
        fb->vg = VALGRIND_STACK_REGISTER(fb->lo, fb->lo + fb->size);
#endif
    }
    *out = F;
    return LT_OK;
}

void lt__fibers_free(lt__fibers *F) {
    if (!F) return;
#ifdef LT_FIBER_VALGRIND
    for (int i = 0; i < F->n; i++) VALGRIND_STACK_DEREGISTER(F->f[i + 1].vg);
#endif
    munmap(F->map, F->map_len);
    lt__free(F->f);
    lt__free(F);
}

size_t lt__fiber_stack_size(const lt__fibers *F) { return F->stack; }

const char *lt__fiber_kind(void) { return LT_FIBER_ASM ? "asm" : "ucontext"; }

void lt__fiber_prepare(lt__fibers *F, int i, lt__fiber_fn fn, void *arg) {
    fiber *fb = &F->f[i + 1];
    fb->fn = fn;
    fb->arg = arg;
    fb->fake = NULL;
#if LT_FIBER_ASM
    uintptr_t top = ((uintptr_t)fb->lo + fb->size) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)(top - 80); /* 16-aligned: after `ret`, rsp = sp + 64 is too */
    uint32_t mxcsr = __builtin_ia32_stmxcsr();
    uint16_t fpucw;
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    memset(sp, 0, 80);
    memcpy(&sp[0], &mxcsr, 4);
    memcpy((char *)&sp[0] + 4, &fpucw, 2);
    sp[3] = (uint64_t)(uintptr_t)fiber_main;          /* r13: the function */
    sp[4] = (uint64_t)(uintptr_t)fb;                  /* r12: its argument */
    sp[7] = (uint64_t)(uintptr_t)lt__fiber_start_x64; /* where the first swap returns */
    fb->sp = sp;
#else
    getcontext(&fb->uc);
    fb->uc.uc_stack.ss_sp = fb->lo;
    fb->uc.uc_stack.ss_size = fb->size;
    fb->uc.uc_link = NULL;
    uintptr_t p = (uintptr_t)fb;
    makecontext(&fb->uc, (void (*)(void))fiber_main_uc, 2, (unsigned)(p >> 16 >> 16),
                (unsigned)(p & 0xffffffffu));
#endif
}

void lt__fiber_switch(lt__fibers *F, int from, int to) {
    fiber *a = &F->f[from + 1], *b = &F->f[to + 1];
    before_switch(F, from + 1, b, 0);
    raw_switch(a, b);
    after_switch(F, a);
}

void lt__fiber_exit(lt__fibers *F, int from, int to) {
    fiber *a = &F->f[from + 1], *b = &F->f[to + 1];
    before_switch(F, from + 1, b, 1);
    raw_switch(a, b);
    LT_ASSERT(!"an ended fiber was resumed");
    for (;;) {}
}
