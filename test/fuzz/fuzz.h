/* test/fuzz/fuzz.h — what the fuzz harnesses share.
 *
 * Each harness (fuzz_<name>.c) defines the two libFuzzer entry points below.
 * The same source is linked two ways: with -fsanitize=fuzzer by `make fuzz`
 * (clang, ASan + UBSan), and with replay_main.c by `make test` (any
 * compiler), which feeds it the seeds and the regression inputs so every
 * build checks them. A harness reports a broken invariant with fuzz_fail,
 * which aborts: libFuzzer saves the input, the replay run exits non-zero.
 */
#ifndef LT_FUZZ_H
#define LT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Prints "fuzz: <what>" and aborts (the input is a finding). */
#define fuzz_fail(...)                                  \
    do {                                                \
        fprintf(stderr, "fuzz: invariant broken: ");    \
        fprintf(stderr, __VA_ARGS__);                   \
        fputc('\n', stderr);                            \
        abort();                                        \
    } while (0)

/* A NUL-terminated copy of the input (malloc'd; the caller frees it), or
 * NULL when out of memory. Bytes after an embedded NUL are kept but unseen
 * by string parsers, as they would be for a C string from argv or a file. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return NULL;
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Fills the stack below the caller with 0xA5 bytes, so a callee that reads
 * a local it never wrote reads the same garbage on every run: an input
 * that trips over uninitialised memory then fails the same way each time,
 * in the fuzzer and in the replay (where otherwise it would depend on what
 * the previous input left there). */
#if defined(__GNUC__)
__attribute__((noinline, unused))
#endif
static void fuzz_paint_stack(void) {
    unsigned char area[64 * 1024];
    memset(area, 0xA5, sizeof area);
#if defined(__GNUC__)
    __asm__ volatile("" : : "r"(area) : "memory"); /* keep the stores */
#endif
}

/* Under AddressSanitizer an allocation above 64 MiB fails (returns NULL)
 * instead of being served or aborting: the library must then report
 * LT_NOMEM cleanly, and no input can make a run slow or large by asking for
 * a big tensor. Real overflow bugs (a size that wraps to a small number)
 * are still caught. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LT_FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LT_FUZZ_ASAN 1
#endif
/* (defined once: in the harness, not in replay_main.c, which includes this
 * header for the prototypes only) */
#if defined(LT_FUZZ_ASAN) && !defined(LT_FUZZ_REPLAY_MAIN)
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
    return "allocator_may_return_null=1:max_allocation_size_mb=64";
}
#endif

#endif
