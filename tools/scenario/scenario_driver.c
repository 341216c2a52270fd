/* tools/scenario/scenario_driver.c — runs scenario paths: finds scenario
 * files under the given files and directories, loads them all (load errors
 * are reported with file:line:col and the run goes on with the other files),
 * runs the selected cases, writes the reports, and closes with "N passed,
 * N failed, N errors" as the last line (lt_sc_run_paths, tools/scenario/
 * scenario.h). The `run` subcommand's argument parsing is tools/cli/cli_run.c.
 *
 * Exit code: 0 all passed, 1 a check failed, 2 a file could not be loaded, a
 * step failed unexpectedly, nothing was run (no file found, no case matches
 * -k), or a report file could not be written.
 */
#include "kernels/alloc.h"
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kernels/pool_impl.h"
#include "tools/scenario/scenario_impl.h"

typedef struct strlist {
    char **v;
    int n, cap;
} strlist;

static int sl_push(strlist *l, const char *s) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 32;
        char **nv = lt__realloc(l->v, sizeof *nv * (size_t)cap);
        if (!nv) return -1;
        l->v = nv;
        l->cap = cap;
    }
    size_t n = strlen(s);
    if (!(l->v[l->n] = lt__malloc(n + 1))) return -1;
    memcpy(l->v[l->n++], s, n + 1);
    return 0;
}

static void sl_free(strlist *l) {
    for (int i = 0; i < l->n; i++) lt__free(l->v[i]);
    lt__free(l->v);
}

static int cmpstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_yaml(const char *name) {
    size_t n = strlen(name);
    return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml"));
}

/* Appends the scenario files under dir (recursively, sorted, skipping hidden
 * entries). depth bounds symlink loops. */
static int walk(const char *dir, strlist *out, int depth) {
    if (depth > 32) return 0;
    DIR *d = opendir(dir);
    if (!d) return -1;
    strlist names = {0};
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && sl_push(&names, e->d_name)) rc = -1;
    closedir(d);
    if (names.n) qsort(names.v, (size_t)names.n, sizeof *names.v, cmpstr);
    size_t dl = strlen(dir);
    int slash = dl && dir[dl - 1] == '/';
    for (int i = 0; i < names.n && !rc; i++) {
        size_t n = dl + strlen(names.v[i]) + 2;
        char *p = lt__malloc(n);
        if (!p) { rc = -1; break; }
        snprintf(p, n, "%s%s%s", dir, slash ? "" : "/", names.v[i]);
        struct stat sb;
        if (stat(p, &sb) == 0) {
            if (S_ISDIR(sb.st_mode)) { if (walk(p, out, depth + 1) < 0) rc = -1; }
            else if (S_ISREG(sb.st_mode) && is_yaml(names.v[i]) && sl_push(out, p)) rc = -1;
        }
        lt__free(p);
    }
    sl_free(&names);
    return rc;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Does case i of s pass --world and -k (a substring of its name or of the
 * file's path)? A sweep's case is not made for this, only its name.
 * -1: out of memory. */
static int case_selected(const lt_sc_options *o, const char *path, const sc_scenario *s, int i) {
    if (o->world > 0 && lt__sc_case_mesh(s, i)->world != o->world) return 0;
    if (!o->nfilters) return 1;
    for (int k = 0; k < o->nfilters; k++)
        if (strstr(path, o->filters[k])) return 1;
    char buf[1024], *name = buf;
    size_t n = lt__sc_case_name(s, i, buf, sizeof buf, NULL);
    if (n >= sizeof buf) {   /* a long scenario name */
        if (!(name = lt__malloc(n + 1))) return -1;
        lt__sc_case_name(s, i, name, n + 1, NULL);
    }
    int hit = 0;
    for (int k = 0; k < o->nfilters && !hit; k++) hit = strstr(name, o->filters[k]) != NULL;
    if (name != buf) lt__free(name);
    return hit;
}

/* What the run's options set on every case it runs. */
static void apply_options(const lt_sc_options *opt, sc_case *cs) {
    cs->record_plans = opt->json_path != NULL;
    cs->record_trace = opt->trace;
    cs->single_device = opt->single_device;
    if (opt->numerics) {   /* checked by the CLI */
        lt_numerics_parse(opt->numerics, &cs->numerics);
        cs->numerics_set = 1;
    }
    cs->engine = opt->engine;
    cs->compare_backend = opt->compare_backend;
}

typedef struct progress {
    int on, shown;
    double start, last;
    FILE *f;
} progress;

static void progress_clear(progress *p) {
    if (!p->shown) return;
    fputs("\r\033[K", p->f);
    fflush(p->f);
    p->shown = 0;
}

static void progress_tick(progress *p, int done, int total, const char *name) {
    if (!p->on) return;
    double t = now_s();
    if (t - p->start < 1.0 || t - p->last < 0.1) return;
    p->last = t;
    fprintf(p->f, "\r\033[K[%*d/%d] %.60s", total > 9999 ? 6 : 4, done, total, name);
    fflush(p->f);
    p->shown = 1;
}

/* Runs over several processes: the case's outcome is the worst over all
 * of them. When another process did worse, its first failure joins this
 * process's result (the one that writes the reports) as a failure of the
 * case's own position, "on process P: <its failure>". */
static void agree_case(const lt_sc_options *opt, sc_arena *a, sc_case *cs) {
    char mine[2048] = "", other[2048] = "";
    lt_sc_result *r = &cs->res;
    if (r->nfails) {
        const lt_sc_failure *x = &r->fails[0];
        snprintf(mine, sizeof mine, "%s:%d:%d: %s: %s", x->file, x->line, x->col, x->step ? x->step : "",
                 x->message ? x->message : "");
    }
    int from = -1;
    int worst = opt->case_agree((int)r->status, mine, &from, other, sizeof other);
    if (worst <= (int)r->status) return;
    r->status = (lt_sc_status)worst;
    if (worst == LT_SC_FAIL) r->checks_failed++;
    char msg[2200];
    snprintf(msg, sizeof msg, "on process %d: %s", from, other);
    if (!r->fails && !(r->fails = lt__sc_alloc(a, sizeof *r->fails * SC_MAX_FAILS))) {
        r->nfails_dropped++;
        return;
    }
    if (r->nfails == SC_MAX_FAILS) {
        r->nfails_dropped++;
        return;
    }
    lt_sc_failure *x = &r->fails[r->nfails];
    memset(x, 0, sizeof *x);
    x->file = cs->pos.file;
    x->line = cs->pos.line;
    x->col = cs->pos.col;
    x->step = "engine";
    x->rank = -1;
    x->message = lt__sc_strdup(a, msg);
    if (x->message) r->nfails++;
    else r->nfails_dropped++;
}

/* Cases of one scenario run at once (each in its own arena, on the
 * threads of kernels/pool.h), then reported in case order and released:
 * what a sweep holds at a time does not grow with its number of cases. */
#define SC_WINDOW 64

typedef struct window {
    sc_case *cs[SC_WINDOW];     /* a scenario's own case, or a sweep's made into slot[] */
    sc_case slot[SC_WINDOW];
    sc_arena *ar[SC_WINDOW];    /* each case's parsed steps and results */
    int n;
    FILE *show;                 /* `show` steps print here (-v), else NULL */
} window;

static lt_status case_task(void *ctx, int64_t i) {
    window *w = ctx;
    lt__sc_run_case(w->cs[i], w->ar[i], w->show);
    return LT_OK;
}

/* Frees a reported case's arena (a sweep's case, made in it, is gone
 * with it); a scenario's own case keeps its status, counts and time,
 * nothing that pointed into the arena. */
static void release_case(sc_case *cs, sc_arena *a) {
    lt__sc_case_drop(cs);
    cs->res.nfails = 0;
    cs->res.fails = NULL;
    cs->res.redistributes = NULL;
    cs->res.trace_text = NULL;
    cs->res.trace_json = NULL;
    lt__sc_arena_free(a);
}

/* "512 B", "3.0 KiB", "32.0 MiB", "1.5 GiB" */
static char *fmt_bytes(double v, char *buf, size_t n) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v >= 1024.0 && u < 4) v /= 1024.0, u++;
    if (u == 0) snprintf(buf, n, "%.0f B", v);
    else snprintf(buf, n, "%.1f %s", v, unit[u]);
    return buf;
}

/* --shards owned: what a process holds of the declared tensors of the
 * largest selected case, before the run (README: running on several
 * processes or machines). A process holds the shards of its block of
 * ceil(W / P) ranks at most: 1 / P of a tensor sharded over every rank,
 * all of it where its placements replicate it. */
static void owned_estimate(const lt_sc_options *opt, lt_sc_file *const *loaded, int nloaded) {
    double best = -1, lo = 0;
    const sc_case *at = NULL;
    for (int i = 0; i < nloaded; i++)
        for (int k = 0; k < loaded[i]->nscen; k++) {
            const sc_scenario *s = &loaded[i]->scen[k];
            /* a sweep's tensors are parsed as each of its cases runs: not counted here */
            if (s->sweep || !s->nselected) continue;
            for (int c = 0; c < s->ncases; c++) {
                const sc_case *cs = &s->cases[c];
                double bytes = 0;
                for (int t = 0; t < cs->ntensors; t++) {
                    double n = (double)lt_dtype_size(cs->tensors[t].dtype);
                    for (int d = 0; d < cs->tensors[t].ndim; d++) n *= (double)cs->tensors[t].shape[d];
                    bytes += n;
                }
                int W = cs->mesh->world, P = opt->nproc < W ? opt->nproc : W, block = (W + P - 1) / P;
                if (bytes > best) best = bytes, lo = bytes * block / W, at = cs;
            }
        }
    if (!at) return;
    char a[32], b[32];
    fprintf(opt->err, "memory per process: the largest selected case, %s (%d ranks), declares %s of tensors; a "
            "process holds %s of them when they are sharded over every rank, up to all of it where replicated, "
            "plus a redistribute's working copies (each refused before it allocates when this process's share "
            "does not fit)\n", at->name, at->mesh->world, fmt_bytes(best, a, sizeof a), fmt_bytes(lo, b, sizeof b));
}

/* Frees what a run loaded and found: the files, the load errors' messages
 * and the path list. */
static void free_run(lt_sc_file **loaded, int nloaded, sc_load_error *lerr, int nlerr, strlist *files) {
    for (int i = 0; i < nloaded; i++) lt_sc_file_free(loaded[i]);
    for (int i = 0; i < nlerr; i++) lt__free(lerr[i].message);
    lt__free(loaded);
    lt__free(lerr);
    sl_free(files);
}

int lt_sc_run_paths(const char *const *paths, int npaths, const lt_sc_options *opt) {
    double t0 = now_s();
    strlist files = {0};
    sc_load_error *lerr = NULL;
    int nlerr = 0, code = 0;
    lt_sc_file **loaded = NULL;
    int nloaded = 0;
    sc_run_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.engine = opt->engine ? opt->engine_name : NULL;
    FILE *out = opt->out, *err = opt->err;

    for (int i = 0; i < npaths; i++) {
        struct stat sb;
        int before = files.n;
        if (stat(paths[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
            if (walk(paths[i], &files, 0) < 0) {
                fprintf(err, "%s:1:1: cannot read directory: %s\n", paths[i], strerror(errno));
                code = 2;
            } else if (files.n == before) {
                fprintf(err, "%s: no scenario files (*.yaml, *.yml) found\n", paths[i]);
                code = 2;
            }
        } else if (sl_push(&files, paths[i])) {
            fprintf(err, "localtensor run: out of memory\n");
            sl_free(&files);
            return 2;
        }
    }
    loaded = lt__calloc((size_t)(files.n ? files.n : 1), sizeof *loaded);
    lerr = lt__calloc((size_t)(files.n ? files.n : 1), sizeof *lerr);
    if (!loaded || !lerr) {
        fprintf(err, "localtensor run: out of memory\n");
        lt__free(loaded);
        lt__free(lerr);
        sl_free(&files);
        return 2;
    }
    int total = 0, max_world = 0, oom_sel = 0;
    for (int i = 0; i < files.n && !oom_sel; i++) {
        lt_sc_file *f = NULL;
        lt__sc_load_unbuilt_init(opt->owned && opt->nproc > 1);
        lt__sc_set_step_agree(opt->owned ? opt->step_agree : NULL);
        lt_status st = lt_sc_load(files.v[i], &f);
        if (st) {
            /* the message goes to stderr once, now; the report lists the file
             * as an error and counts it */
            const char *m = lt_errmsg();
            fflush(out);
            fprintf(err, "%s\n", m[0] ? m : lt_status_str(st));
            lerr[nlerr].path = files.v[i];
            /* NULL when out of memory: the reports then print "out of memory" */
            lerr[nlerr].message = lt__strdup(m[0] ? m : lt_status_str(st));
            nlerr++;
            continue;
        }
        loaded[nloaded++] = f;
        int any = 0;
        for (int k = 0; k < f->nscen; k++) {
            sc_scenario *s = &f->scen[k];
            s->nselected = 0;
            for (int c = 0; c < s->ncases && !oom_sel; c++) {
                int sel = case_selected(opt, f->path, s, c);
                if (sel < 0) oom_sel = 1;
                if (sel <= 0) continue;
                s->nselected++;
                int w = lt__sc_case_mesh(s, c)->world;
                if (w > max_world) max_world = w;
            }
            total += s->nselected;
            if (s->nselected) sum.scenarios++, any = 1;
        }
        sum.files += any;
    }
    if (oom_sel) {
        fprintf(err, "localtensor run: out of memory\n");
        free_run(loaded, nloaded, lerr, nlerr, &files);
        return 2;
    }
    sum.cases = total;
    sum.files += nlerr;
    sum.files_failed = nlerr;
    int no_match = 0;
    if (opt->owned && opt->nproc > 1 && total > 0) owned_estimate(opt, loaded, nloaded);
    if (opt->nproc > 1 && total > 0 && opt->nproc > max_world) {
        fprintf(err, "localtensor run: %d processes but the largest mesh of the selected cases has %d rank%s: "
                "run with 1 to %d processes (mpirun -np)\n", opt->nproc, max_world, max_world == 1 ? "" : "s",
                max_world);
        free_run(loaded, nloaded, lerr, nlerr, &files);
        return 2;
    }
    if (opt->world > 0 && !opt->nfilters && total == 0 && nloaded) {
        fprintf(err, "localtensor run: no case has a mesh of %d rank%s (--world)\n", opt->world,
                opt->world == 1 ? "" : "s");
        no_match = 1;
    } else if (opt->nfilters && total == 0 && nloaded) {
        /* like an empty directory: nothing was tested, which is not a pass */
        int ncases = 0;
        for (int i = 0; i < nloaded; i++)
            for (int k = 0; k < loaded[i]->nscen; k++) ncases += loaded[i]->scen[k].ncases;
        fprintf(err, "localtensor run: no case matches -k");
        for (int i = 0; i < opt->nfilters; i++) fprintf(err, "%s '%s'", i ? " or" : "", opt->filters[i]);
        fprintf(err, " (%d case%s in %d file%s searched; -k matches a substring of a case name or file path)\n",
                ncases, ncases == 1 ? "" : "s", nloaded, nloaded == 1 ? "" : "s");
        no_match = 1;
    }

    progress pg = {opt->progress, 0, t0, 0, err};
    int done = 0, stop = 0, oom = 0;
    sc_stream rep;
    lt__sc_stream_open(&rep, opt->json_path, opt->junit_path, lerr, nlerr);
    window w;
    w.show = opt->verbose ? out : NULL;
    for (int i = 0; i < nloaded && !oom; i++) {
        lt_sc_file *f = loaded[i];
        lt__sc_stream_file_begin(&rep, f);
        for (int k = 0; k < f->nscen && !oom; k++) {
            sc_scenario *s = &f->scen[k];
            int any = s->nselected > 0, all = s->nselected == s->ncases;
            sc_tally tally = {0};
            if (any) lt__sc_stream_scen_begin(&rep, s);
            /* `show` steps print as they run: then one case at a time */
            int cap = opt->verbose ? 1 : SC_WINDOW;
            for (int c = 0; c < s->ncases && any && !oom;) {
                w.n = 0;
                for (; c < s->ncases && w.n < cap; c++) {
                    int sel = all ? 1 : case_selected(opt, f->path, s, c);
                    sc_arena *a = sel > 0 ? lt__sc_arena_new() : NULL;
                    sc_case *cs = a ? lt__sc_case_at(s, c, &w.slot[w.n], a) : NULL;
                    if (sel == 0) continue;
                    if (!cs) {
                        lt__sc_arena_free(a);
                        oom = 1;
                        break;
                    }
                    apply_options(opt, cs);
                    if (stop) {
                        cs->res.status = LT_SC_NOTRUN;
                        sum.not_run++;
                        lt__sc_stream_case(&rep, f, cs);
                        lt__sc_arena_free(a);
                        continue;
                    }
                    w.ar[w.n] = a;
                    w.cs[w.n++] = cs;
                }
                if (w.n) progress_tick(&pg, done, total, w.cs[0]->name);
                if (opt->case_agree) {
                    /* several processes (--engine mpi): one case at a time, in
                     * order, on this thread, so that every process makes the
                     * same MPI calls in the same order; then the outcome is
                     * agreed */
                    for (int j = 0; j < w.n; j++) {
                        (void)case_task(&w, j);
                        agree_case(opt, w.ar[j], w.cs[j]);
                    }
                } else {
                    (void)lt__parallel_for(w.n, case_task, &w); /* case_task cannot fail */
                }
                for (int j = 0; j < w.n; j++) {
                    sc_case *cs = w.cs[j];
                    if (stop) { /* ran in the same window as the first failure */
                        lt__sc_case_drop(cs);
                        memset(&cs->res, 0, sizeof cs->res);
                        cs->res.status = LT_SC_NOTRUN;
                        sum.not_run++;
                    } else {
                        done++;
                        lt_sc_status r = cs->res.status;
                        sum.passed += r == LT_SC_PASS;
                        sum.failed += r == LT_SC_FAIL;
                        sum.errors += r == LT_SC_ERROR;
                        lt__sc_tally_add(&tally, cs);
                        if (opt->verbose || opt->trace || !s->is_sweep || r != LT_SC_PASS) {
                            progress_clear(&pg);
                            lt__sc_report_case(out, opt, f, s, cs);
                        }
                        if (r != LT_SC_PASS && opt->fail_fast) stop = 1;
                    }
                    lt__sc_stream_case(&rep, f, cs);
                    release_case(cs, w.ar[j]);
                }
            }
            if (any) lt__sc_stream_scen_end(&rep);
            if (any && s->is_sweep && !opt->verbose && !oom) {
                progress_clear(&pg);
                lt__sc_report_sweep(out, opt, f, s, &tally);
            }
        }
        lt__sc_stream_file_end(&rep, f);
    }
    if (oom) {
        progress_clear(&pg);
        fprintf(err, "localtensor run: out of memory\n");
        code = 2;
    }
    progress_clear(&pg);
    sum.errors += nlerr;
    sum.seconds = now_s() - t0;
    for (int i = 0; i < nlerr; i++) {
        if (opt->color) fprintf(out, "\033[31m\033[1mERROR\033[0m %s: could not be loaded (message on stderr)\n", lerr[i].path);
        else fprintf(out, "ERROR %s: could not be loaded (message on stderr)\n", lerr[i].path);
    }
    if (lt__sc_stream_close(&rep, &sum)) fprintf(err, "localtensor run: %s\n", lt_errmsg()), code = 2;
    lt__sc_report_summary(out, opt, &sum);
    fflush(out);
    if (sum.errors || nlerr || no_match) code = 2;
    else if (sum.failed && code == 0) code = 1;
    free_run(loaded, nloaded, lerr, nlerr, &files);
    return code;
}
