/* kernels/memlimit.c — the memory bound of kernels/memlimit_impl.h, read from
 * sysconf, /proc/meminfo, /proc/self/statm, getrlimit and the environment
 * (each optional: a source that cannot be read bounds nothing). */
#include "kernels/memlimit_impl.h"
#include "kernels/alloc.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

/* MemAvailable of /proc/meminfo in bytes, or 0 when unknown. */
static uint64_t mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    uint64_t kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
            kb = (uint64_t)v;
            break;
        }
    }
    fclose(f);
    return kb > UINT64_MAX / 1024 ? UINT64_MAX : kb * 1024;
}

/* The process's virtual size in bytes (first field of /proc/self/statm), or 0. */
static uint64_t mapped_now(uint64_t page) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long pages = 0;
    if (fscanf(f, "%llu", &pages) != 1) pages = 0;
    fclose(f);
    return (uint64_t)pages * page;
}

/* "1000000", "512M", "8G", "8GiB" -> bytes; -1 when s is not such a size. */
static int parse_size(const char *s, uint64_t *out) {
    static const char units[] = "KMGT";
    uint64_t v = 0;
    const char *p = s;
    if (!isdigit((unsigned char)*p)) return -1;
    for (; isdigit((unsigned char)*p); p++) {
        if (v > (UINT64_MAX - 9) / 10) return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    int shift = 0;
    const char *u = *p ? strchr(units, toupper((unsigned char)*p)) : NULL;
    if (u) {
        shift = 10 * (int)(u - units + 1);
        p++;
        if (!strcmp(p, "iB") || !strcmp(p, "B")) p += strlen(p);
    }
    if (*p || v > (UINT64_MAX >> shift)) return -1;
    *out = v << shift;
    return 0;
}

/* "3.5 GiB", "12.0 MiB", "512 bytes" */
static void size_str(uint64_t b, char *buf, size_t n) {
    if (b >= (1u << 30)) snprintf(buf, n, "%.1f GiB", (double)b / GIB);
    else if (b >= (1u << 20)) snprintf(buf, n, "%.1f MiB", (double)b / (1024.0 * 1024.0));
    else if (b >= 1024) snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
    else snprintf(buf, n, "%llu bytes", (unsigned long long)b);
}

/* lt__mem_set_budget's: 0 = none; set once, before any work (the CLI). */
static uint64_t g_budget;
static const char *g_budget_label;
static char g_budget_why[64];

lt_status lt__mem_set_budget(const char *size, const char *label) {
    uint64_t v;
    if (!size || parse_size(size, &v))
        return lt__err(LT_INVALID, "%s: '%s' is not a size in bytes (e.g. 1000000, 512M, 8G)",
                       label, size ? size : "");
    g_budget = v;
    g_budget_label = label;
    snprintf(g_budget_why, sizeof g_budget_why, "of memory allowed by %s", label);
    return LT_OK;
}

static int g_share = 1;
static char g_share_why[96];

void lt__mem_set_share(int n) {
    g_share = n > 1 ? n : 1;
    snprintf(g_share_why, sizeof g_share_why,
             "of memory (its share: the machine's memory over %d processes)", g_share);
}

/* lt__mem_charge's account: bytes held for a while by work in progress,
 * and the phrase naming the last holder (static). */
static atomic_uint_least64_t g_charged;
static _Atomic(const char *) g_holder;

uint64_t lt__mem_charged(void) { return (uint64_t)atomic_load(&g_charged); }

/* The bound lt__mem_limit chose: what is left under it (held bytes taken
 * off where the bound cannot see them), the bound itself and what it is. */
typedef struct mem_bound {
    uint64_t left;
    uint64_t total;
    uint64_t held;            /* taken off total (0: the bound sees them already) */
    const char *why;
} mem_bound;

/* A bound of `total` bytes named by why: the tightest so far wins. sees:
 * the bound already counts what the process holds (memory available now,
 * ulimit less what is mapped); a fixed one (physical memory, a budget)
 * has the charged bytes (held) taken off. */
static void bound(mem_bound *b, uint64_t total, int sees, uint64_t held, const char *why) {
    if (sees) held = 0;
    uint64_t left = total > held ? total - held : 0;
    if (left < b->left) *b = (mem_bound){left, total, held, why};
}

/* The tightest bound now, with `held` bytes charged. */
static lt_status mem_bound_now(mem_bound *b, uint64_t held) {
    *b = (mem_bound){UINT64_MAX, UINT64_MAX, 0, "of memory"};
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    uint64_t page = psize > 0 ? (uint64_t)psize : 4096;
    if (pages > 0 && psize > 0)
        bound(b, (uint64_t)pages * (uint64_t)psize / (uint64_t)g_share, 0, held,
              g_share > 1 ? g_share_why : "of memory");
    /* blocks kept for reuse (the backend's and kernels/alloc.c's) are free memory */
    uint64_t avail = mem_available(),
             cached = (uint64_t)lt__backend_cpu_cached() + (uint64_t)lt__alloc_cached();
    if (avail) {
        avail = avail > UINT64_MAX - cached ? UINT64_MAX : avail + cached;
        uint64_t reserve = avail / 16 < (1u << 30) ? avail / 16 : (1u << 30);
        bound(b, avail - reserve, 1, held, "of memory available now");
    }
    const int res[] = {RLIMIT_AS, RLIMIT_DATA};
    for (size_t i = 0; i < sizeof res / sizeof res[0]; i++) {
        struct rlimit rl;
        if (getrlimit(res[i], &rl) || rl.rlim_cur == RLIM_INFINITY) continue;
        uint64_t cap = (uint64_t)rl.rlim_cur, used = mapped_now(page);
        used = used > cached ? used - cached : 0;
        bound(b, cap > used ? cap - used : 0, 1, held, "of memory left to this process (ulimit)");
    }
    const char *env = getenv("LOCALTENSOR_MEMORY_LIMIT");
    if (env && *env) {
        uint64_t v;
        if (parse_size(env, &v))
            return lt__err(
                LT_INVALID,
                "LOCALTENSOR_MEMORY_LIMIT: '%s' is not a size in bytes (e.g. 1000000, 512M, 8G)",
                env);
        bound(b, v, 0, held, "of memory allowed by LOCALTENSOR_MEMORY_LIMIT");
    }
    if (g_budget_label) bound(b, g_budget, 0, held, g_budget_why);
    return LT_OK;
}

lt_status lt__mem_limit(uint64_t *bytes, const char **why) {
    mem_bound b;
    LT_TRY(mem_bound_now(&b, lt__mem_charged()));
    *bytes = b.left;
    if (why) *why = b.why;
    return LT_OK;
}

/* Asking the system reads /proc (10-30 us), too slow for every small
 * collective of a per-rank program. A request under 1/64 of a limit read
 * less than 50 ms ago is let through on that reading: what can have changed
 * since is far more than such a request, and big requests always read anew.
 * Per thread, like the rest of the error state. */
static _Thread_local uint64_t recent_lim;
static _Thread_local struct timespec recent_at;

static int recent_allows(uint64_t bytes) {
    if (!recent_lim || bytes > recent_lim / 64) return 0;
    struct timespec now;
    if (clock_gettime(CLOCK_MONOTONIC, &now)) return 0;
    double age =
        (double)(now.tv_sec - recent_at.tv_sec) + 1e-9 * (double)(now.tv_nsec - recent_at.tv_nsec);
    return age >= 0 && age < 0.05;
}

/* 1 when LOCALTENSOR_MEMORY_LIMIT is not set, without a getenv on every
 * call: getenv walks the whole environment (some 300 instructions, a tenth
 * of a small op's dispatch). The answer is kept with a snapshot of the
 * environment's array (address, length, last entry): setenv and putenv of
 * a new name append an entry (or move the array), unsetenv shifts the
 * entries after the one it removes, and either changes the snapshot, so
 * the next call reads anew. While the variable is set the caller reads it
 * anyway. Per thread. */
extern char **environ;
static _Thread_local char **env_at;
static _Thread_local size_t env_len;
static _Thread_local char *env_last;
static _Thread_local int env_unset;

static int limit_env_unset(void) {
    char **e = environ;
    if (e && e == env_at && !e[env_len] && (!env_len || e[env_len - 1] == env_last))
        return env_unset;
    env_unset = getenv("LOCALTENSOR_MEMORY_LIMIT") == NULL;
    size_t n = 0;
    while (e && e[n]) n++;
    env_at = e, env_len = n, env_last = n ? e[n - 1] : NULL;
    return env_unset;
}

/* The budgets of the user's choosing are always read anew. */
static int recent_fits(uint64_t bytes) {
    return !g_budget_label && recent_allows(bytes) && limit_env_unset();
}

/* The refusal: "WHAT needs X[ for the shards of all N ranks], more than
 * this machine's Y WHY[ less the Z held already by HOLDER]". */
static lt_status refuse(uint64_t bytes, int world, const char *what, const mem_bound *b) {
    char need[32], have[32], held[160] = "", ranks[64] = "";
    size_str(bytes, need, sizeof need);
    size_str(b->total, have, sizeof have);
    if (world > 0)
        snprintf(ranks, sizeof ranks, " for the shards of all %d rank%s", world,
                 world == 1 ? "" : "s");
    if (b->held) {
        char h[32];
        const char *who = atomic_load(&g_holder);
        size_str(b->held, h, sizeof h);
        snprintf(held, sizeof held, " less the %s held already%s%s", h, who ? " by " : "",
                 who ? who : "");
    }
    return lt__err_code(LT_NOMEM, LT_ERR_MEMORY_LIMIT,
                        "%s needs %s%s, more than this machine's %s %s%s", what, need, ranks, have,
                        b->why, held);
}

lt_status lt__mem_check(uint64_t bytes, int world, const char *what) {
    if (bytes == 0) return LT_OK; /* nothing new to fit */
    if (recent_fits(bytes)) return LT_OK;
    mem_bound b;
    LT_TRY(mem_bound_now(&b, lt__mem_charged()));
    recent_lim = b.left;
    if (clock_gettime(CLOCK_MONOTONIC, &recent_at)) recent_lim = 0;
    return bytes <= b.left ? LT_OK : refuse(bytes, world, what, &b);
}

lt_status lt__mem_charge(uint64_t bytes, int world, const char *what, const char *holder) {
    if (bytes == 0) return LT_OK;
    if (recent_fits(bytes)) {   /* a small request on a recent reading, as lt__mem_check */
        atomic_fetch_add(&g_charged, bytes);
    } else {
        uint_least64_t held = atomic_load(&g_charged);
        mem_bound b;
        do {   /* checked against the account it joins (another thread may charge meanwhile) */
            LT_TRY(mem_bound_now(&b, (uint64_t)held));
            if (bytes > b.left) return refuse(bytes, world, what, &b);
        } while (!atomic_compare_exchange_weak(&g_charged, &held, held + bytes));
    }
    atomic_store(&g_holder, holder);
    return LT_OK;
}

void lt__mem_release(uint64_t bytes) { atomic_fetch_sub(&g_charged, bytes); }
