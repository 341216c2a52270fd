/* kernels/alloc.h — the one door to the heap, with allocation fault injection.
 *
 * Every heap allocation of the library and the CLI goes through these
 * wrappers (the CPU backend's storage too), so a test can make the Nth
 * allocation fail, SQLite-style, and check that each out-of-memory path
 * returns LT_NOMEM with a message, leaks nothing and leaves no half-built
 * object. Allocations made inside third-party libraries (libyaml, cJSON,
 * OpenBLAS) do not pass through here.
 *
 * The wrappers behave exactly like the C library functions they wrap (same
 * ownership: the caller frees with lt__free). While injection is disarmed
 * (the default) they cost one relaxed atomic load each. */
#ifndef LT_ALLOC_H
#define LT_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *lt__malloc_at(size_t n, const char *file, int line);
void *lt__calloc_at(size_t n, size_t size, const char *file, int line);
/* On failure *p is untouched and still owned by the caller, as with realloc. */
void *lt__realloc_at(void *p, size_t n, const char *file, int line);
void *lt__aligned_alloc_at(size_t align, size_t n, const char *file, int line);
char *lt__strdup_at(const char *s, const char *file, int line);
void lt__free(void *p);

/* The block cache (kernels/alloc.c): freed blocks of 1 MiB or more are kept
 * for the next allocation of about their size instead of going back to the
 * system. lt__alloc_cached: the bytes kept now (free memory to the memory
 * bound, kernels/memlimit.c). lt__alloc_trim: gives every kept block back
 * to the C library (done by itself when an allocation fails). */
size_t lt__alloc_cached(void);
void lt__alloc_trim(void);

/* A block handed out again without the C library (a cache hit,
 * kernels/backend_cpu.c): an injection point like the wrappers, counted and
 * recorded, made to fail the same way; it changes no live count (the block
 * was counted when the C library made it). Returns 1 when this allocation
 * must fail: the caller then returns NULL, having changed nothing. */
int lt__fault_point_at(const char *file, int line);
#define lt__fault_point() lt__fault_point_at(__FILE__, __LINE__)

/* Each call site is an injection point, named by file and line. */
#define lt__malloc(n) lt__malloc_at((n), __FILE__, __LINE__)
#define lt__calloc(n, size) lt__calloc_at((n), (size), __FILE__, __LINE__)
#define lt__realloc(p, n) lt__realloc_at((p), (n), __FILE__, __LINE__)
#define lt__aligned_alloc(align, n) lt__aligned_alloc_at((align), (n), __FILE__, __LINE__)
#define lt__strdup(s) lt__strdup_at((s), __FILE__, __LINE__)

/* Arms injection: from now on allocations are counted and their sites
 * recorded; the nth one (1-based) fails, and every later one too when
 * persistent is set. nth == 0 only counts and records (nothing fails).
 * Resets the count, the fired flag and the site record. */
void lt__fault_arm(int64_t nth, int persistent);
/* Site mode: the same, but only allocations at FILE:LINE (FILE as the
 * compiler names it, e.g. "kernels/tensor.c") count towards nth; the others
 * are still counted by lt__fault_count. Returns -1 for a bad site. */
int lt__fault_arm_site(const char *file, int line, int64_t nth, int persistent);
/* 1 while injection is armed (between lt__fault_arm and lt__fault_disarm):
 * parallel sections then run inline (kernels/pool_impl.h), so that the Nth
 * allocation is the same one on every run. */
int lt__fault_armed(void);
/* Stops failing allocations and stops counting; the counts stay readable. */
void lt__fault_disarm(void);
/* Allocations seen since lt__fault_arm. */
int64_t lt__fault_count(void);
/* How many allocations were made to fail since lt__fault_arm. */
int64_t lt__fault_fired(void);
/* Blocks allocated minus blocks freed (lt__free) while armed: 0 after a
 * workload that frees everything it made, when nothing it frees was
 * allocated before arming. realloc of a live block counts as neither. */
int64_t lt__fault_live(void);
/* The site of the first allocation made to fail since arm; -1 if none. */
int lt__fault_first(const char **file, int *line);
/* Distinct call sites reached since lt__fault_arm; site i (0 <= i < n) is
 * returned through *file (a static string), *line and *hits (allocations
 * made there; may be NULL). Returns -1 past the end. */
int lt__fault_nsites(void);
int lt__fault_site(int i, const char **file, int *line, int64_t *hits);

/* Arms from the environment, for driving the CLI: LOCALTENSOR_FAULT_AT=N
 * (fail the Nth allocation; 0 = count only), LOCALTENSOR_FAULT_SITE=FILE:LINE
 * (count only that site's allocations towards N), LOCALTENSOR_FAULT_PERSIST=1
 * (fail every one after it too). Returns 1 if armed, 0 if the variable is
 * unset, -1 (with a message on stderr) if a value is malformed. */
int lt__fault_arm_from_env(void);
/* Writes "allocs=C fired=F [at FILE:LINE]" (the site of the first failed
 * allocation) and then one "site FILE:LINE HITS" line per site
 * reached to the file named by LOCALTENSOR_FAULT_REPORT (appending); no-op
 * when that variable is unset. */
void lt__fault_report_to_env(void);

#endif
