/* test/fault/fault_main.c — allocation fault injection, SQLite style.
 *
 *   fault_driver [-v] [-j WORKERS] [-a MAXALL] [-s SITES_OUT] api
 *   fault_driver [-v] [-j WORKERS] [-a MAXALL] [-s SITES_OUT] run FILE...
 *
 * Why: every out-of-memory path must return a clean error (LT_NOMEM, a
 * message saying "out of memory" and where; exit code 2 from the CLI), free
 * what it had built and leave no half-built object. kernels/alloc.h routes
 * every allocation of the library and the CLI through one counter; this
 * driver makes each one fail in turn.
 *
 * For each target (the C API workload of fault_api.c, or one scenario file
 * run as `localtensor run FILE --json ...` in process) a counting run gives
 * the number of allocations C and the call sites reached. Then, when C <=
 * MAXALL (default 5000), the target runs once for every N = 1..C with the
 * Nth allocation failing; otherwise once per call site reached with its 1st,
 * 2nd and last allocation failing (kernels/alloc.h site mode). Every run
 * must end cleanly (see the workloads) and leave no block allocated
 * (lt__fault_live, after the plan and op caches are cleared). The runs are
 * shared by WORKERS forked processes (default 2) that exit through exit(),
 * so under ASan LeakSanitizer checks them too and a crash is reported.
 *
 * A run whose fault fired but that completed with the baseline result is
 * "absorbed" (an optional allocation such as a cache entry); they are
 * counted and listed by site. Prints one line per target and a summary;
 * SITES_OUT gets every call site reached, one FILE:LINE per line. Exits 0
 * when nothing broke, 1 otherwise, 2 for bad usage. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/alloc.h"
#include "kernels/split_impl.h"
#include "localtensor/localtensor.h"
#include "test/fault/fault.h"

int fault_verbose;

int fault_broken(const char *what, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fault: %s: ", what);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return FAULT_BROKEN;
}

int fault_failed(const char *what, lt_status st, int nouts, void *const *outs) {
    const char *msg = lt_errmsg();
    if (fault_verbose) fprintf(stderr, "  %s: %s\n", what, msg);
    if (lt__fault_fired() == 0) return fault_broken(what, "failed without a fault: %s", msg);
    if (st != LT_NOMEM)
        return fault_broken(what, "status %s, not out of memory: %s", lt_status_name(st), msg);
    if (!strstr(msg, "out of memory"))
        return fault_broken(what, "the message does not say out of memory: '%s'", msg);
    for (int i = 0; i < nouts; i++)
        if (outs[i]) return fault_broken(what, "a failed call left output %d half-built", i);
    return FAULT_OOM;
}

/* ---- sites ------------------------------------------------------------------------ */

typedef struct {
    const char *file;
    int line;
    int64_t hits;
    int64_t absorbed;
} site;

typedef struct {
    site *v;     /* (n) malloc */
    int n, cap;
} site_set;

static site *site_find(site_set *s, const char *file, int line, int add) {
    for (int i = 0; i < s->n; i++)
        if (s->v[i].line == line && !strcmp(s->v[i].file, file)) return &s->v[i];
    if (!add) return NULL;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 256;
        site *nv = realloc(s->v, sizeof *nv * (size_t)cap);
        if (!nv) {
            fprintf(stderr, "fault: out of memory (the driver's own)\n");
            exit(2);
        }
        s->v = nv, s->cap = cap;
    }
    site *x = &s->v[s->n++];
    memset(x, 0, sizeof *x);
    x->file = file, x->line = line;
    return x;
}

/* adds the sites kernels/alloc.h recorded since the last arm */
static void site_merge_recorded(site_set *s) {
    const char *file;
    int line;
    int64_t hits;
    for (int i = 0; lt__fault_site(i, &file, &line, &hits) == 0; i++)
        site_find(s, file, line, 1)->hits += hits;
}

/* ---- one run ---------------------------------------------------------------------- */

enum { RUN_DONE, RUN_OOM, RUN_ABSORBED, RUN_BROKEN };

typedef struct {
    int64_t n;            /* nth allocation (of the site, when file is set) */
    const char *file;     /* site mode: the site */
    int line;
} job;

static int run_one(fault_workload w, void *ctx, const char *tmp, const job *j, site_set *reached) {
    lt__split_intern_clear();  /* nothing made before arming is freed while armed */
    if (j->file) lt__fault_arm_site(j->file, j->line, j->n, 0);
    else lt__fault_arm(j->n, 0);
    int rc = w(ctx, tmp);
    lt_plan_cache_clear();     /* caches filled by this run are freed by it */
    lt_op_cache_clear();
    lt__split_intern_clear();  /* so are the explicit size lists it interned */
    int64_t live = lt__fault_live(), fired = lt__fault_fired();
    lt__fault_disarm();
    site_merge_recorded(reached);
    const char *ff = "-";
    int fl = 0;
    lt__fault_first(&ff, &fl);
    char where[300];
    if (j->file)
        snprintf(where, sizeof where, "allocation %lld at %s:%d", (long long)j->n, j->file,
                 j->line);
    else snprintf(where, sizeof where, "N=%lld", (long long)j->n);
    if (live != 0 && rc != FAULT_BROKEN)
        rc = fault_broken(where, "%lld blocks still allocated after the run (fault at %s:%d)",
                          (long long)live, ff, fl);
    if (rc == FAULT_BROKEN) {
        fprintf(stderr, "fault: %s (fault at %s:%d) broke the contract (message above)\n", where,
                ff, fl);
        return RUN_BROKEN;
    }
    if (rc == FAULT_OOM) return RUN_OOM;
    if (!fired) return RUN_DONE;
    site_find(reached, ff, fl, 1)->absorbed++;
    if (fault_verbose) fprintf(stderr, "  %s: absorbed at %s:%d\n", where, ff, fl);
    return RUN_ABSORBED;
}

/* ---- one target, shared by forked workers ---------------------------------------------- */

typedef struct {
    int64_t runs, oom, absorbed, broken, done;
} counts;

/* Removes the files a workload wrote next to tmp (TMP.out, TMP.json, TMP.yaml). */
static void remove_tmp(const char *tmp) {
    static const char *const ext[] = {".out", ".json", ".yaml"};
    char p[300];
    for (int k = 0; k < 3; k++) snprintf(p, sizeof p, "%s%s", tmp, ext[k]), remove(p);
}

/* Worker w of nw runs jobs w, w+nw, ...; writes its counts and the sites it
 * reached (with absorbed counts) to fd, then exits through exit(). */
static void worker(int w, int nw, fault_workload wl, void *ctx, const job *jobs, int njobs,
                   int fd) {
    char tmp[256];
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/lt-fault-%d", t && *t ? t : "/tmp", (int)getpid());
    site_set reached = {0};
    counts c = {0};
    for (int i = w; i < njobs; i += nw) {
        c.runs++;
        switch (run_one(wl, ctx, tmp, &jobs[i], &reached)) {
        case RUN_DONE: c.done++; break;
        case RUN_OOM: c.oom++; break;
        case RUN_ABSORBED: c.absorbed++; break;
        default: c.broken++;
        }
    }
    FILE *f = fdopen(fd, "w");
    if (f) {
        fprintf(f, "%lld %lld %lld %lld %lld\n", (long long)c.runs, (long long)c.oom,
                (long long)c.absorbed, (long long)c.broken, (long long)c.done);
        for (int i = 0; i < reached.n; i++)
            fprintf(f, "%s %d %lld\n", reached.v[i].file, reached.v[i].line,
                    (long long)reached.v[i].absorbed);
        fclose(f);
    }
    remove_tmp(tmp);
    free(reached.v);
    exit(c.broken ? 1 : 0);
}

/* File names read back from workers are copied once and kept. */
static const char *intern(const char *s) {
    static char **v;
    static int n, cap;
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i], s)) return v[i];
    if (n == cap) {
        cap = cap ? 2 * cap : 64;
        char **nv = realloc(v, sizeof *nv * (size_t)cap);
        if (!nv) exit(2);
        v = nv;
    }
    size_t k = strlen(s) + 1;
    if (!(v[n] = malloc(k))) exit(2);
    memcpy(v[n], s, k);
    return v[n++];
}

/* The runs to make: every N up to count (and a few past it) when count <=
 * maxall, else the 1st, 2nd and last allocation of every site of base.
 * *njobs: how many; exits 2 when the driver itself is out of memory. */
static job *make_jobs(const site_set *base, int64_t count, int every, int *njobs) {
    job *jobs;
    *njobs = 0;
    if (every) {
        /* a few past the end: those complete without reaching their fault */
        jobs = malloc(sizeof *jobs * (size_t)(count + 4));
        for (int64_t n = 1; jobs && n <= count + 4; n++) jobs[(*njobs)++] = (job){n, NULL, 0};
    } else {
        jobs = malloc(sizeof *jobs * (size_t)(3 * base->n + 1));
        for (int i = 0; jobs && i < base->n; i++) {
            int64_t h = base->v[i].hits, ks[3] = {1, 2, h};
            for (int k = 0; k < 3; k++)
                if (ks[k] <= h && (k == 0 || ks[k] > ks[k - 1]))
                    jobs[(*njobs)++] = (job){ks[k], base->v[i].file, base->v[i].line};
        }
    }
    if (!jobs) {
        fprintf(stderr, "fault: out of memory (the driver's own)\n");
        exit(2);
    }
    return jobs;
}

/* Reads the workers' counts (in[nw]) into *c and their absorbed sites into
 * all, and waits for them (pids). Returns 1 when one crashed. */
static int gather_workers(const char *name, int nw, const pid_t *pids, FILE **in, site_set *all,
                          counts *c) {
    int crashed = 0;
    for (int w = 0; w < nw; w++) {
        long long r, o, a, b, d;
        if (!in[w] || fscanf(in[w], "%lld %lld %lld %lld %lld", &r, &o, &a, &b, &d) != 5) {
            r = o = a = d = 0;
            b = 1;
        }
        c->runs += r, c->oom += o, c->absorbed += a, c->broken += b, c->done += d;
        char file[512];
        int line;
        long long ab;
        while (in[w] && fscanf(in[w], "%511s %d %lld", file, &line, &ab) == 3) {
            site *x = site_find(all, intern(file), line, 1);
            x->absorbed += ab;
        }
        if (in[w]) fclose(in[w]);
        int ws;
        waitpid(pids[w], &ws, 0);
        if (!WIFEXITED(ws) || (WEXITSTATUS(ws) != 0 && b == 0)) {
            fprintf(stderr,
                    "fault: %s: worker %d %s %d (a crash or a sanitizer report: see above)\n", name,
                    w, WIFEXITED(ws) ? "exited with" : "was killed by signal",
                    WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
            crashed = 1;
        }
    }
    return crashed;
}

static int run_target(const char *name, fault_workload wl, void *ctx, int nw, int64_t maxall,
                      site_set *all, counts *total) {
    char tmp[256];
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/lt-fault-%d", t && *t ? t : "/tmp", (int)getpid());
    /* the counting run; a first unarmed run does one-time initialisations */
    site_set base = {0};
    job none = {0, NULL, 0};
    if (wl(ctx, tmp) != FAULT_DONE) {
        fprintf(stderr, "fault: %s: fails without any fault\n", name);
        return 1;
    }
    lt_plan_cache_clear();
    lt_op_cache_clear();
    if (run_one(wl, ctx, tmp, &none, &base) != RUN_DONE) {
        fprintf(stderr, "fault: %s: the counting run failed\n", name);
        free(base.v);
        return 1;
    }
    int64_t count = 0;
    for (int i = 0; i < base.n; i++) count += base.v[i].hits;
    int njobs, every = count <= maxall;
    job *jobs = make_jobs(&base, count, every, &njobs);
    fflush(stdout);
    fflush(stderr);
    pid_t pids[64];
    FILE *in[64];
    for (int w = 0; w < nw; w++) {
        int p[2];
        if (pipe(p) != 0 || (pids[w] = fork()) < 0) {
            perror("fault: pipe/fork");
            exit(2);
        }
        if (pids[w] == 0) {
            close(p[0]);
            for (int k = 0; k < w; k++) fclose(in[k]);
            worker(w, nw, wl, ctx, jobs, njobs, p[1]);
        }
        close(p[1]);
        in[w] = fdopen(p[0], "r");
    }
    counts c = {0};
    int crashed = gather_workers(name, nw, pids, in, all, &c);
    for (int i = 0; i < base.n; i++) site_find(all, intern(base.v[i].file), base.v[i].line, 1);
    if (every && c.done < 1)   /* every run still failed an allocation: they were not all counted */
        printf("note: %s: the runs past N=%lld still reached a fault: the number of allocations "
               "varies "
               "from run to run\n",
               name, (long long)count);
    int bad = c.broken > 0 || crashed;
    printf("%-5s %s: %lld allocations at %d sites; %lld runs (%s): %lld out of memory, %lld "
           "absorbed, %lld failed\n",
           bad ? "FAIL" : "ok", name, (long long)count, base.n, (long long)c.runs,
           every ? "every N" : "1st, 2nd, last per site", (long long)c.oom, (long long)c.absorbed,
           (long long)(c.broken + crashed));
    fflush(stdout);
    total->runs += c.runs, total->oom += c.oom, total->absorbed += c.absorbed,
        total->broken += c.broken + crashed;
    remove_tmp(tmp);   /* what the counting runs wrote */
    free(jobs);
    free(base.v);
    return bad;
}

int main(int argc, char **argv) {
    const char *sites_out = NULL;
    int nw = 2, i = 1;
    int64_t maxall = 5000;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "-v")) fault_verbose = 1;
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) sites_out = argv[++i];
        else if (!strcmp(argv[i], "-j") && i + 1 < argc) nw = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-a") && i + 1 < argc) maxall = strtoll(argv[++i], NULL, 10);
        else break;
    }
    int api = i < argc && !strcmp(argv[i], "api") && i + 1 == argc;
    int run = i + 1 < argc && !strcmp(argv[i], "run");
    if ((!api && !run) || nw < 1 || nw > 64 || maxall < 0) {
        fprintf(stderr,
                "usage: fault_driver [-v] [-j WORKERS] [-a MAXALL] [-s SITES_OUT] api\n"
                "       fault_driver [-v] [-j WORKERS] [-a MAXALL] [-s SITES_OUT] run FILE...\n");
        return 2;
    }
    site_set all = {0};
    counts total = {0};
    int bad = 0, ntargets = 0;
    if (api) {
        bad |= run_target("C API workload", fault_api_workload, NULL, nw, maxall, &all, &total);
        bad |= run_target("per-rank program workload", fault_program_workload, NULL, nw, maxall,
                          &all, &total);
        ntargets += 2;
    } else {
        char tmp[256];
        const char *t = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/lt-fault-%d-base", t && *t ? t : "/tmp", (int)getpid());
        for (int k = i + 1; k < argc; k++, ntargets++) {
            fault_scen sc = {argv[k], 1, 0, NULL, NULL};
            if (fault_scen_workload(&sc, tmp) != FAULT_DONE || !sc.base_out) {
                fprintf(stderr, "fault: %s: the baseline run failed\n", argv[k]);
                bad = 1;
                fault_scen_free(&sc);
                continue;
            }
            sc.record = 0;
            bad |= run_target(argv[k], fault_scen_workload, &sc, nw, maxall, &all, &total);
            fault_scen_free(&sc);
        }
        remove_tmp(tmp);
    }
    int64_t nabs = 0;
    for (int k = 0; k < all.n; k++) nabs += all.v[k].absorbed > 0;
    printf("\nfault injection: %d target%s, %lld runs, %d call sites reached: %lld clean "
           "out-of-memory errors, "
           "%lld absorbed, %lld failed\n",
           ntargets, ntargets == 1 ? "" : "s", (long long)total.runs, all.n, (long long)total.oom,
           (long long)total.absorbed, (long long)total.broken);
    if (nabs) {
        printf("absorbed (an optional allocation; the result was unchanged) at:\n");
        for (int k = 0; k < all.n; k++)
            if (all.v[k].absorbed)
                printf("  %s:%d (%lld runs)\n", all.v[k].file, all.v[k].line,
                       (long long)all.v[k].absorbed);
    }
    if (sites_out) {
        FILE *f = fopen(sites_out, "w");
        for (int k = 0; f && k < all.n; k++) fprintf(f, "%s:%d\n", all.v[k].file, all.v[k].line);
        if (f) fclose(f);
    }
    free(all.v);
    return bad ? 1 : 0;
}
