/* kernels/alloc.c — heap wrappers with SQLite-style fault injection, and
 * the block cache behind them.
 *
 * Disarmed, each wrapper is one relaxed atomic load plus the C library call.
 * Armed (lt__fault_arm), every allocation is counted, its call site is
 * recorded in a small table, and the chosen one fails (returns NULL without
 * allocating), so the tests can walk N = 1, 2, 3, ... over a workload and
 * reach every out-of-memory path it has.
 *
 * The block cache: the C library returns a freed block of 1 MiB or more to
 * the system (munmap, or a trimmed heap top), and the next block of that
 * size is paid again in page faults and the kernel zeroing fresh pages,
 * which costs more than filling it. A simulation frees and makes the same
 * shard sizes step after step, so lt__free keeps such blocks (up to
 * LT__KEEP_CAP bytes; the oldest go first) and lt__malloc/lt__aligned_alloc
 * hand them out again. A hit passes the injection point first, like any
 * allocation; a failed allocation gives every kept block back and tries once
 * more, and the memory bound (kernels/memlimit.c) counts kept bytes as free.
 * Off under AddressSanitizer (every block freed for real, so use-after-free
 * is caught) and when LOCALTENSOR_ALLOC_CACHE=0. */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* malloc_usable_size */
#endif
#include "kernels/alloc.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LT__SITES_MAX 1024

typedef struct {
    const char *file;   /* __FILE__ of the call: a static string */
    int line;
    long long hits;     /* allocations made here since arm */
} site;

static atomic_int armed;
static atomic_llong count;        /* allocations since arm */
static atomic_llong fired;        /* allocations made to fail since arm */
static atomic_llong live;         /* allocations minus frees while armed */
static long long fail_at;         /* 1-based; 0: count only */
static int fail_persist;
static char fail_file[256];       /* site mode: fail_at counts hits of this site only */
static int fail_line;             /* 0: count all allocations */
static const char *first_file;    /* site of the first allocation made to fail */
static int first_line;
static pthread_mutex_t sites_mu = PTHREAD_MUTEX_INITIALIZER;
static site sites[LT__SITES_MAX];
static int nsites;

/* 1-based hit count of the site (0 when the table is full). */
static long long record_site(const char *file, int line) {
    pthread_mutex_lock(&sites_mu);
    int i = 0;
    while (i < nsites && !(sites[i].line == line &&
                          (sites[i].file == file || strcmp(sites[i].file, file) == 0)))
        i++;
    if (i == nsites && nsites < LT__SITES_MAX) {
        sites[nsites].file = file;
        sites[nsites].line = line;
        sites[nsites].hits = 0;
        nsites++;
    }
    long long h = i < nsites ? ++sites[i].hits : 0;
    pthread_mutex_unlock(&sites_mu);
    return h;
}

/* a site names the file by its path as compiled ("kernels/tensor.c"); the
 * requested name may be given with the same relative path */
static int same_site(const char *file, int line) {
    return line == fail_line && strcmp(file, fail_file) == 0;
}

/* 1: this allocation must fail. */
static int should_fail(const char *file, int line) {
    if (!atomic_load_explicit(&armed, memory_order_relaxed)) return 0;
    long long k = atomic_fetch_add(&count, 1) + 1;
    long long h = record_site(file, line);
    if (fail_line) {
        if (!same_site(file, line)) return 0;
        k = h;
    }
    if (fail_at > 0 && (k == fail_at || (fail_persist && k > fail_at))) {
        if (atomic_fetch_add(&fired, 1) == 0) {
            first_file = file;
            first_line = line;
        }
        return 1;
    }
    return 0;
}

/* counts a new block while armed */
static void *born(void *p) {
    if (p && atomic_load_explicit(&armed, memory_order_relaxed)) atomic_fetch_add(&live, 1);
    return p;
}

int lt__fault_point_at(const char *file, int line) { return should_fail(file, line); }

/* ---- the block cache ------------------------------------------------------ */

#if defined(__SANITIZE_ADDRESS__)
#define LT__KEEP_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LT__KEEP_ON 0
#endif
#endif
#if !defined(LT__KEEP_ON) && !defined(__GLIBC__)
#define LT__KEEP_ON 0 /* malloc_usable_size is glibc's */
#endif
#ifndef LT__KEEP_ON
#define LT__KEEP_ON 1
#endif
#define LT__KEEP_MIN ((size_t)1 << 20)    /* blocks the C library would give back */
#define LT__KEEP_CAP ((size_t)1 << 30)    /* bytes kept at most */
#define LT__KEEP_SLOTS 128

typedef struct kept_block {
    void *p;
    size_t size;   /* malloc_usable_size */
} kept_block;

static pthread_mutex_t keep_mu = PTHREAD_MUTEX_INITIALIZER;
static kept_block kept[LT__KEEP_SLOTS];   /* oldest first */
static int nkept;
static atomic_size_t kept_bytes;
static atomic_int keep_state;             /* 0: not read yet, 1: on, 2: off */
/* Blocks of LT__KEEP_MIN or more handed out and not yet freed, about (a
 * hint: lt__free asks a block's size only while it is not 0, so a program
 * of small blocks pays nothing for the cache). */
static atomic_long large_out;

static int keep_on(void) {
    int s = atomic_load_explicit(&keep_state, memory_order_relaxed);
    if (s == 0) {
        const char *v = getenv("LOCALTENSOR_ALLOC_CACHE");
        s = LT__KEEP_ON && !(v && strcmp(v, "0") == 0) ? 1 : 2;
        atomic_store(&keep_state, s);
    }
    return s == 1;
}

/* A kept block for n bytes aligned to align, taken off the list; NULL when
 * none fits. The best fit among blocks at most a quarter (+ 2 MiB) larger
 * (the rest goes to waste). */
static void *keep_take(size_t align, size_t n) {
    if (!atomic_load_explicit(&kept_bytes, memory_order_relaxed)) return NULL;
    size_t slack = n / 4 + ((size_t)2 << 20);
    pthread_mutex_lock(&keep_mu);
    int best = -1;
    for (int i = 0; i < nkept; i++) {
        size_t z = kept[i].size;
        if (z >= n && z - n <= slack && (uintptr_t)kept[i].p % align == 0 &&
            (best < 0 || z < kept[best].size))
            best = i;
    }
    void *p = NULL;
    if (best >= 0) {
        p = kept[best].p;
        atomic_fetch_sub(&kept_bytes, kept[best].size);
        memmove(&kept[best], &kept[best + 1], sizeof *kept * (size_t)(nkept - best - 1));
        nkept--;
    }
    pthread_mutex_unlock(&keep_mu);
    return p;
}

#if LT__KEEP_ON
/* Keeps p (size bytes) when it fits under the cap, the oldest blocks making
 * room; 0 when the caller must free it. */
static int keep_put(void *p, size_t size) {
    if (size > LT__KEEP_CAP / 4) return 0;
    void *out[LT__KEEP_SLOTS];
    int nout = 0;
    pthread_mutex_lock(&keep_mu);
    while (nkept && (nkept == LT__KEEP_SLOTS || atomic_load(&kept_bytes) + size > LT__KEEP_CAP)) {
        out[nout++] = kept[0].p;
        atomic_fetch_sub(&kept_bytes, kept[0].size);
        memmove(&kept[0], &kept[1], sizeof *kept * (size_t)(nkept - 1));
        nkept--;
    }
    kept[nkept++] = (kept_block){p, size};
    atomic_fetch_add(&kept_bytes, size);
    pthread_mutex_unlock(&keep_mu);
    for (int i = 0; i < nout; i++) free(out[i]);
    return 1;
}

/* lt__free's: 1 when p was kept. */
static int keep_freed(void *p) {
    size_t size = malloc_usable_size(p);
    if (size < LT__KEEP_MIN) return 0;
    atomic_fetch_sub_explicit(&large_out, 1, memory_order_relaxed);
    return keep_on() && keep_put(p, size);
}
#else
static int keep_freed(void *p) {
    (void)p;
    return 0;
}
#endif

size_t lt__alloc_cached(void) { return atomic_load(&kept_bytes); }

void lt__alloc_trim(void) {
    void *out[LT__KEEP_SLOTS];
    pthread_mutex_lock(&keep_mu);
    int n = nkept;
    for (int i = 0; i < n; i++) out[i] = kept[i].p;
    nkept = 0;
    atomic_store(&kept_bytes, 0);
    pthread_mutex_unlock(&keep_mu);
    for (int i = 0; i < n; i++) free(out[i]);
}

/* 1 when kept blocks were given back (a failed allocation may then be
 * tried once more). */
static int trimmed(void) {
    if (!atomic_load_explicit(&kept_bytes, memory_order_relaxed)) return 0;
    lt__alloc_trim();
    return 1;
}

/* malloc (align 0) or aligned_alloc of n >= LT__KEEP_MIN bytes: a kept
 * block when one fits, else the C library's, once more after giving the
 * kept ones back. */
static void *get_block(size_t align, size_t n) {
    void *p = keep_on() ? keep_take(align ? align : 16, n) : NULL;
    for (int again = 0; !p && again < 2; again++) {
        p = align ? aligned_alloc(align, n) : malloc(n);
        if (p || !trimmed()) break;
    }
    if (p) atomic_fetch_add_explicit(&large_out, 1, memory_order_relaxed);
    return p;
}

void *lt__malloc_at(size_t n, const char *file, int line) {
    if (should_fail(file, line)) return NULL;
    if (n >= LT__KEEP_MIN) return born(get_block(0, n));
    void *p = malloc(n);
    return born(p || !trimmed() ? p : malloc(n));
}

void *lt__calloc_at(size_t n, size_t size, const char *file, int line) {
    if (should_fail(file, line)) return NULL;
    void *p = calloc(n, size);
    return born(p || !trimmed() ? p : calloc(n, size));
}

void *lt__realloc_at(void *p, size_t n, const char *file, int line) {
    if (should_fail(file, line)) return NULL;
    void *q = realloc(p, n);
    if (!q && n && trimmed()) q = realloc(p, n);
    return p ? q : born(q);
}

void *lt__aligned_alloc_at(size_t align, size_t n, const char *file, int line) {
    if (should_fail(file, line)) return NULL;
    if (n >= LT__KEEP_MIN) return born(get_block(align, n));
    void *p = aligned_alloc(align, n);
    return born(p || !trimmed() ? p : aligned_alloc(align, n));
}

char *lt__strdup_at(const char *s, const char *file, int line) {
    if (should_fail(file, line)) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return born(d);
}

/* lt__free while large blocks are out: kept, or given to free. Out of line:
 * inlined, its call would make lt__free save registers on every path. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void free_or_keep(void *p) {
    if (!keep_freed(p)) free(p);
}

void lt__free(void *p) {
    if (!p) return;
    if (atomic_load_explicit(&armed, memory_order_relaxed)) atomic_fetch_sub(&live, 1);
    /* two tail calls: the common path (no large block out) saves no
     * register (some 10 instructions a free) */
    if (atomic_load_explicit(&large_out, memory_order_relaxed) > 0) free_or_keep(p);
    else free(p);
}

void lt__fault_arm(int64_t nth, int persistent) {
    atomic_store(&armed, 0);
    pthread_mutex_lock(&sites_mu);
    nsites = 0;
    pthread_mutex_unlock(&sites_mu);
    fail_at = nth > 0 ? (long long)nth : 0;
    fail_persist = persistent != 0;
    fail_line = 0;
    first_file = NULL;
    first_line = 0;
    atomic_store(&count, 0);
    atomic_store(&fired, 0);
    atomic_store(&live, 0);
    atomic_store(&armed, 1);
}

int lt__fault_arm_site(const char *file, int line, int64_t nth, int persistent) {
    if (!file || strlen(file) >= sizeof fail_file || line <= 0) return -1;
    lt__fault_arm(0, 0);
    atomic_store(&armed, 0);
    memcpy(fail_file, file, strlen(file) + 1);
    fail_line = line;
    fail_at = nth > 0 ? (long long)nth : 0;
    fail_persist = persistent != 0;
    atomic_store(&armed, 1);
    return 0;
}

int lt__fault_armed(void) { return atomic_load_explicit(&armed, memory_order_relaxed); }

void lt__fault_disarm(void) { atomic_store(&armed, 0); }

int64_t lt__fault_count(void) { return (int64_t)atomic_load(&count); }

int64_t lt__fault_fired(void) { return (int64_t)atomic_load(&fired); }

int64_t lt__fault_live(void) { return (int64_t)atomic_load(&live); }

int lt__fault_first(const char **file, int *line) {
    if (!first_file) return -1;
    *file = first_file;
    *line = first_line;
    return 0;
}

int lt__fault_nsites(void) {
    pthread_mutex_lock(&sites_mu);
    int n = nsites;
    pthread_mutex_unlock(&sites_mu);
    return n;
}

int lt__fault_site(int i, const char **file, int *line, int64_t *hits) {
    pthread_mutex_lock(&sites_mu);
    int ok = i >= 0 && i < nsites;
    if (ok) {
        *file = sites[i].file;
        *line = sites[i].line;
        if (hits) *hits = sites[i].hits;
    }
    pthread_mutex_unlock(&sites_mu);
    return ok ? 0 : -1;
}

static int env_count(const char *name, long long *out) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (*end || n < 0 || errno) {
        fprintf(stderr, "localtensor: %s: '%s' is not a count >= 0\n", name, v);
        return -1;
    }
    *out = n;
    return 1;
}

int lt__fault_arm_from_env(void) {
    long long n = 0;
    int r = env_count("LOCALTENSOR_FAULT_AT", &n);
    if (r <= 0) return r;
    const char *ps = getenv("LOCALTENSOR_FAULT_PERSIST");
    int persist = ps && strcmp(ps, "1") == 0;
    const char *site_s = getenv("LOCALTENSOR_FAULT_SITE");
    if (!site_s || !*site_s) {
        lt__fault_arm(n, persist);
        return 1;
    }
    const char *colon = strrchr(site_s, ':');
    char file[256];
    char *end;
    long line = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || colon == site_s || (size_t)(colon - site_s) >= sizeof file || *end || line <= 0 ||
        line > INT_MAX) {
        fprintf(stderr, "localtensor: LOCALTENSOR_FAULT_SITE: '%s' is not FILE:LINE\n", site_s);
        return -1;
    }
    memcpy(file, site_s, (size_t)(colon - site_s));
    file[colon - site_s] = 0;
    lt__fault_arm_site(file, (int)line, n, persist);
    return 1;
}

void lt__fault_report_to_env(void) {
    const char *path = getenv("LOCALTENSOR_FAULT_REPORT");
    if (!path || !*path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "allocs=%lld fired=%lld", (long long)lt__fault_count(),
            (long long)lt__fault_fired());
    const char *ff;
    int fl;
    if (lt__fault_first(&ff, &fl) == 0) fprintf(f, " at %s:%d", ff, fl);
    fprintf(f, "\n");
    const char *file;
    int line;
    int64_t hits;
    for (int i = 0; lt__fault_site(i, &file, &line, &hits) == 0; i++)
        fprintf(f, "site %s:%d %lld\n", file, line, (long long)hits);
    fclose(f);
}
