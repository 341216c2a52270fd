/* kernels/alloc.c — heap wrappers with SQLite-style fault injection.
 *
 * Disarmed, each wrapper is one relaxed atomic load plus the C library call.
 * Armed (lt__fault_arm), every allocation is counted, its call site is
 * recorded in a small table, and the chosen one fails (returns NULL without
 * allocating), so the tests can walk N = 1, 2, 3, ... over a workload and
 * reach every out-of-memory path it has. */
#include "kernels/alloc.h"

#include <errno.h>
#include <limits.h>
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

void *lt__malloc_at(size_t n, const char *file, int line) {
    return should_fail(file, line) ? NULL : born(malloc(n));
}

void *lt__calloc_at(size_t n, size_t size, const char *file, int line) {
    return should_fail(file, line) ? NULL : born(calloc(n, size));
}

void *lt__realloc_at(void *p, size_t n, const char *file, int line) {
    if (should_fail(file, line)) return NULL;
    void *q = realloc(p, n);
    return p ? q : born(q);
}

void *lt__aligned_alloc_at(size_t align, size_t n, const char *file, int line) {
    return should_fail(file, line) ? NULL : born(aligned_alloc(align, n));
}

char *lt__strdup_at(const char *s, const char *file, int line) {
    if (should_fail(file, line)) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return born(d);
}

void lt__free(void *p) {
    if (p && atomic_load_explicit(&armed, memory_order_relaxed)) atomic_fetch_sub(&live, 1);
    free(p);
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
