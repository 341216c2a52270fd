/* tools/scenario/scenario_driver.c — runs scenario paths: finds scenario
 * files under the given files and directories (each real directory walked
 * once, each file taken once, whatever links reach them), reads them (only
 * regular files: a FIFO or a device is refused) and loads them all (load errors
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
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kernels/pool_impl.h"
#include "kernels/status_impl.h"
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

static int cmpstr(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_yaml(const char *name) {
    size_t n = strlen(name);
    return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml"));
}

/* ---- finding the files --------------------------------------------------------------
 *
 * Each real directory is walked once and each file taken once, however many
 * links (or arguments) reach them: the directories entered and the files
 * taken are remembered by device and inode. A link to a directory already
 * walked (a loop: `ln -s . d/a`) or to a file already taken is skipped
 * with a note on stderr naming where it was first reached. */

/* A directory or file reached, by device and inode, and the path it was
 * first reached by (lt__malloc). */
typedef struct seen_entry {
    dev_t dev;
    ino_t ino;
    char *path;   /* NULL: an empty slot */
    int file;     /* a file: its index in the walker's files; a directory: -1 */
    int link;     /* path is a symbolic link */
} seen_entry;

/* Open addressing, at most half full. */
typedef struct seen_set {
    seen_entry *v;
    size_t n, cap;
} seen_set;

static size_t seen_slot(const seen_set *s, dev_t dev, ino_t ino) {
    uint64_t h = ((uint64_t)dev * 0x9E3779B97F4A7C15u) ^ ((uint64_t)ino * 0xC2B2AE3D27D4EB4Fu);
    size_t i = (size_t)(h ^ (h >> 29)) & (s->cap - 1);
    while (s->v[i].path && !(s->v[i].dev == dev && s->v[i].ino == ino)) i = (i + 1) & (s->cap - 1);
    return i;
}

/* sb's file as first reached, or NULL. */
static seen_entry *seen_find(const seen_set *s, const struct stat *sb) {
    if (!s->cap) return NULL;
    seen_entry *e = &s->v[seen_slot(s, sb->st_dev, sb->st_ino)];
    return e->path ? e : NULL;
}

static int is_link(const char *p) {
    struct stat lb;
    return lstat(p, &lb) == 0 && S_ISLNK(lb.st_mode);
}

/* Remembers sb's file as reached by path (file: as in seen_entry). 0, or
 * -1 when out of memory. */
static int seen_add(seen_set *s, const struct stat *sb, const char *path, int file) {
    if (2 * (s->n + 1) > s->cap) {
        seen_set g = {lt__calloc(s->cap ? 2 * s->cap : 64, sizeof *g.v), s->n,
                      s->cap ? 2 * s->cap : 64};
        if (!g.v) return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->v[i].path) g.v[seen_slot(&g, s->v[i].dev, s->v[i].ino)] = s->v[i];
        lt__free(s->v);
        *s = g;
    }
    char *p = lt__strdup(path);
    if (!p) return -1;
    seen_entry *e = &s->v[seen_slot(s, sb->st_dev, sb->st_ino)];
    e->dev = sb->st_dev;
    e->ino = sb->st_ino;
    e->path = p;
    e->file = file;
    e->link = is_link(path);
    s->n++;
    return 0;
}

static void seen_free(seen_set *s) {
    for (size_t i = 0; i < s->cap; i++) lt__free(s->v[i].path);
    lt__free(s->v);
}

/* Directory levels walked below a given directory at most. */
#define SC_WALK_DEPTH 64

/* One walk over the paths given: what it found, what it has seen. */
typedef struct walker {
    strlist *files;     /* the scenario files found, in order */
    seen_set seen;      /* directories entered and files taken */
    FILE *err;          /* notes and errors */
    int skipped;        /* links (or paths) skipped so far as already walked or taken */
    int unreadable;     /* directories that could not be read so far (each said on err) */
} walker;

/* "localtensor run: skipped P: a link to a directory already walked (F)" on
 * err: p reached what `first` reached first. */
static void note_skip(walker *w, const char *p, int dir, const char *first) {
    int link = is_link(p);
    fputs("localtensor run: skipped ", w->err);
    lt__fputs_echo(p, 0, w->err);
    w->skipped++;
    if (!strcmp(p, first)) {
        fprintf(w->err, ": reached twice (each %s is %s once)\n", dir ? "directory" : "file",
                dir ? "walked" : "run");
        return;
    }
    if (link)
        fprintf(w->err, ": a link to a %s already %s (", dir ? "directory" : "file",
                dir ? "walked" : "run");
    else
        fprintf(w->err, ": a %s already %s (as ", dir ? "directory" : "file",
                dir ? "walked" : "run");
    lt__fputs_echo(first, 0, w->err);
    fputs(")\n", w->err);
}

/* Takes the regular file at p (sb: its stat) unless already taken. A file
 * first reached through a link and then by a path that is not one runs
 * under that path (in the link's place in the order). 0, or -1 when out of
 * memory. */
static int take_file(walker *w, const char *p, const struct stat *sb) {
    seen_entry *first = seen_find(&w->seen, sb);
    if (!first) return seen_add(&w->seen, sb, p, w->files->n) || sl_push(w->files, p) ? -1 : 0;
    if (!first->link || is_link(p)) {
        note_skip(w, p, 0, first->path);
        return 0;
    }
    char *mine = lt__strdup(p), *again = lt__strdup(p);
    if (!mine || !again) {
        lt__free(mine);
        lt__free(again);
        return -1;
    }
    note_skip(w, first->path, 0, p);
    lt__free(w->files->v[first->file]);
    w->files->v[first->file] = mine;
    lt__free(first->path);
    first->path = again;
    first->link = 0;
    return 0;
}

static int walk(walker *w, const char *dir, int depth);

/* Walks directory p (sb: its stat) unless already walked. 0, or -1 when out
 * of memory. */
static int enter(walker *w, const char *p, const struct stat *sb, int depth) {
    const seen_entry *first = seen_find(&w->seen, sb);
    if (first) {
        note_skip(w, p, 1, first->path);
        return 0;
    }
    if (depth > SC_WALK_DEPTH) {
        fputs("localtensor run: skipped ", w->err);
        lt__fputs_echo(p, 0, w->err);
        fprintf(w->err, ": more than %d directory levels deep\n", SC_WALK_DEPTH);
        w->skipped++;
        return 0;
    }
    return seen_add(&w->seen, sb, p, -1) ? -1 : walk(w, p, depth);
}

/* Appends the scenario files under dir (recursively, sorted, skipping hidden
 * entries; a directory that cannot be read is said on err and counted).
 * 0, or -1 when out of memory. */
static int walk(walker *w, const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d) {
        lt__fputs_echo(dir, 0, w->err);
        fprintf(w->err, ":1:1: cannot read directory: %s\n", strerror(errno));
        w->unreadable++;
        return 0;
    }
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
            if (S_ISDIR(sb.st_mode)) rc = enter(w, p, &sb, depth + 1);
            else if (S_ISREG(sb.st_mode) && is_yaml(names.v[i])) rc = take_file(w, p, &sb);
        }
        lt__free(p);
    }
    sl_free(&names);
    return rc;
}

/* Adds what path names: a directory's scenario files, a regular file
 * (whatever its name), or the path itself when it is neither (the loader
 * then says why it cannot be run: it does not exist, is a FIFO, a device).
 * 0, -1 when out of memory, 2 when a directory held no scenario file (or
 * could not be read), after saying so on err. */
static int add_path(walker *w, const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0 || !(S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode)))
        return sl_push(w->files, path) ? -1 : 0;
    if (S_ISREG(sb.st_mode)) return take_file(w, path, &sb);
    int files = w->files->n, skipped = w->skipped, unreadable = w->unreadable;
    if (enter(w, path, &sb, 0)) return -1;
    if (w->unreadable > unreadable) return 2;
    if (w->files->n > files || w->skipped > skipped) return 0;
    lt__fputs_echo(path, 0, w->err);
    fputs(": no scenario files (*.yaml, *.yml) found\n", w->err);
    return 2;
}

/* ---- reading a file ----------------------------------------------------------------- */

/* What a file that is not a regular one is. */
static const char *file_kind(mode_t m) {
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISDIR(m)) return "a directory";
    return "not a regular file";
}

/* Reads fd (a regular file of `size` bytes, as fstat said) whole into *buf
 * (lt__malloc; the caller frees), *len its bytes. */
static lt_status read_all(const char *path, int fd, off_t size, char **buf, size_t *len) {
    size_t cap = (size_t)size + 1, n = 0;   /* + 1: a file that grows is seen growing */
    char *b = lt__malloc(cap);
    if (!b) return lt__err(LT_NOMEM, "%s:1:1: out of memory", path);
    for (;;) {
        if (n == cap) {
            if (n > LT_SC_MAX_FILE_BYTES) break;
            char *nb = lt__realloc(b, cap * 2);
            if (!nb) {
                lt__free(b);
                return lt__err(LT_NOMEM, "%s:1:1: out of memory", path);
            }
            b = nb;
            cap *= 2;
        }
        ssize_t got = read(fd, b + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int e = errno;
            lt__free(b);
            return lt__err(LT_IO, "%s:1:1: read error: %s", path, strerror(e));
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    if (n > LT_SC_MAX_FILE_BYTES) {
        lt__free(b);
        return lt__err(LT_INVALID, "%s:1:1: file is larger than %u bytes (the loader's limit)",
                       path, LT_SC_MAX_FILE_BYTES);
    }
    *buf = b;
    *len = n;
    return LT_OK;
}

/* Loads scenario file path (lt_sc_load_string), read here from a
 * descriptor checked to be a regular file: a FIFO would wait for a writer
 * for ever, a device (/dev/zero) never end. Opening does not wait
 * (O_NONBLOCK), so a FIFO is refused at once; every refusal is an error
 * "path:1:1: ...", as lt_sc_load's. */
static lt_status load_file(const char *path, lt_sc_file **out) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return lt__err(LT_IO, "%s:1:1: cannot open: %s", path, strerror(errno));
    struct stat sb;
    lt_status st = LT_OK;
    char *buf = NULL;
    size_t len = 0;
    if (fstat(fd, &sb) != 0)
        st = lt__err(LT_IO, "%s:1:1: cannot open: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = lt__err(LT_INVALID,
                     "%s:1:1: cannot run %s: scenario files are regular files (a directory is "
                     "searched for them)",
                     path, file_kind(sb.st_mode));
    else if (sb.st_size > (off_t)LT_SC_MAX_FILE_BYTES)   /* refused unread */
        st = lt__err(LT_INVALID, "%s:1:1: file is larger than %u bytes (the loader's limit)", path,
                     LT_SC_MAX_FILE_BYTES);
    else
        st = read_all(path, fd, sb.st_size, &buf, &len);
    close(fd);
    if (!st) st = lt_sc_load_string(path, buf, len, out);
    lt__free(buf);
    return st;
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

/* Bytes of an argument (-k) or a name echoed in a message, about (lt__echo). */
#define SC_ECHO_MAX 80

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
    char e[4 * 60 + 16];
    fprintf(p->f, "\r\033[K[%*d/%d] %s", total > 9999 ? 6 : 4, done, total,
            lt__echo(name, 60, e, sizeof e));
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
        snprintf(mine, sizeof mine, "%s:%d:%d: %s: %s", x->file, x->line, x->col,
                 x->step ? x->step : "", x->message ? x->message : "");
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
 * largest selected case, before the run (docs/engines.md §2). A process
 * holds the shards of its block of ceil(W / P) ranks at most: 1 / P of a
 * tensor sharded over every rank, all of it where its placements replicate
 * it. */
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
                    for (int d = 0; d < cs->tensors[t].ndim; d++)
                        n *= (double)cs->tensors[t].shape[d];
                    bytes += n;
                }
                int W = cs->mesh->world, P = opt->nproc < W ? opt->nproc : W,
                    block = (W + P - 1) / P;
                if (bytes > best) best = bytes, lo = bytes * block / W, at = cs;
            }
        }
    if (!at) return;
    char a[32], b[32], e[4 * SC_ECHO_MAX + 16];
    fprintf(
        opt->err,
        "memory per process: the largest selected case, %s (%d ranks), declares %s of tensors; a "
        "process holds %s of them when they are sharded over every rank, up to all of it where "
        "replicated, "
        "plus a redistribute's working copies (each refused before it allocates when this "
        "process's share "
        "does not fit)\n",
        lt__echo(at->name, SC_ECHO_MAX, e, sizeof e), at->mesh->world, fmt_bytes(best, a, sizeof a),
        fmt_bytes(lo, b, sizeof b));
}

/* Frees what a run loaded and found: the files, the load errors' messages
 * and the path list. */
static void free_run(lt_sc_file **loaded, int nloaded, sc_load_error *lerr, int nlerr,
                     strlist *files) {
    for (int i = 0; i < nloaded; i++) lt_sc_file_free(loaded[i]);
    for (int i = 0; i < nlerr; i++) lt__free(lerr[i].message);
    lt__free(loaded);
    lt__free(lerr);
    sl_free(files);
}

/* One `run` in progress: what its phases (walk, load, check, run, finish)
 * share. Owns files, loaded and lerr until runner_free. */
typedef struct sc_runner {
    const lt_sc_options *opt;
    FILE *out, *err;
    double t0;
    strlist files;              /* the scenario files found, in order */
    lt_sc_file **loaded;        /* (files.n) the files that loaded */
    sc_load_error *lerr;        /* (files.n) the ones that did not */
    int nloaded, nlerr;
    int total, max_world;       /* selected cases; the largest mesh among them */
    sc_run_summary sum;
    progress pg;
    sc_stream rep;              /* the JSON and JUnit reports, streamed */
    window w;
    int done, stop, oom;        /* cases reported; --fail-fast hit; out of memory */
} sc_runner;

static int runner_oom(sc_runner *R) {
    fprintf(R->err, "localtensor run: out of memory\n");
    return 2;
}

/* The files under paths, into R->files (each real directory once); *code
 * 2 when a path was bad. -1 when out of memory (said). */
static int runner_walk(sc_runner *R, const char *const *paths, int npaths, int *code) {
    walker wk = {&R->files, {NULL, 0, 0}, R->err, 0, 0};
    int r = 0;
    for (int i = 0; i < npaths && r >= 0; i++) {
        r = add_path(&wk, paths[i]);
        if (r > 0) *code = 2;
    }
    seen_free(&wk.seen);
    size_t n = (size_t)(R->files.n ? R->files.n : 1);
    if (r >= 0) R->loaded = lt__calloc(n, sizeof *R->loaded);
    if (r >= 0) R->lerr = lt__calloc(n, sizeof *R->lerr);
    return r < 0 || !R->loaded || !R->lerr ? (runner_oom(R), -1) : 0;
}

/* Counts file f's selected cases into R (and each scenario's nselected).
 * -1 when out of memory. */
static int runner_select(sc_runner *R, lt_sc_file *f) {
    int any = 0;
    for (int k = 0; k < f->nscen; k++) {
        sc_scenario *s = &f->scen[k];
        s->nselected = 0;
        for (int c = 0; c < s->ncases; c++) {
            int sel = case_selected(R->opt, f->path, s, c);
            if (sel < 0) return -1;
            if (sel == 0) continue;
            s->nselected++;
            int w = lt__sc_case_mesh(s, c)->world;
            if (w > R->max_world) R->max_world = w;
        }
        R->total += s->nselected;
        if (s->nselected) R->sum.scenarios++, any = 1;
    }
    R->sum.files += any;
    return 0;
}

/* Loads every file; a file that does not load is said on stderr once, now,
 * and listed (and counted) as an error in the report. -1 when out of
 * memory (said). */
static int runner_load(sc_runner *R) {
    const lt_sc_options *opt = R->opt;
    for (int i = 0; i < R->files.n; i++) {
        lt_sc_file *f = NULL;
        lt__sc_load_unbuilt_init(opt->owned && opt->nproc > 1);
        lt__sc_set_step_agree(opt->owned ? opt->step_agree : NULL);
        lt_status st = load_file(R->files.v[i], &f);
        if (st) {
            const char *m = lt_errmsg();
            fflush(R->out);
            lt__fputs_echo(m[0] ? m : lt_status_name(st), 1, R->err);
            fputc('\n', R->err);
            R->lerr[R->nlerr].path = R->files.v[i];
            /* NULL when out of memory: the reports then print "out of memory" */
            R->lerr[R->nlerr].message = lt__strdup(m[0] ? m : lt_status_name(st));
            R->nlerr++;
            continue;
        }
        R->loaded[R->nloaded++] = f;
        if (runner_select(R, f)) return runner_oom(R), -1;
    }
    R->sum.cases = R->total;
    R->sum.files += R->nlerr;
    R->sum.files_failed = R->nlerr;
    return 0;
}

/* What the selection says before anything runs: 2 when the run cannot go
 * on (more processes than the largest mesh's ranks); *no_match when
 * nothing was selected by --world or -k (nothing tested is not a pass). */
static int runner_check(sc_runner *R, int *no_match) {
    const lt_sc_options *opt = R->opt;
    FILE *err = R->err;
    int total = R->total, mw = R->max_world;
    if (opt->owned && opt->nproc > 1 && total > 0) owned_estimate(opt, R->loaded, R->nloaded);
    if (opt->nproc > 1 && total > 0 && opt->nproc > mw) {
        fprintf(err,
                "localtensor run: %d processes but the largest mesh of the selected cases has %d "
                "rank%s: run with 1 to %d processes (mpirun -np)\n",
                opt->nproc, mw, mw == 1 ? "" : "s", mw);
        return 2;
    }
    if (total || !R->nloaded || (!opt->nfilters && opt->world <= 0)) return 0;
    *no_match = 1;
    if (!opt->nfilters) {
        fprintf(err, "localtensor run: no case has a mesh of %d rank%s (--world)\n", opt->world,
                opt->world == 1 ? "" : "s");
        return 0;
    }
    int ncases = 0;
    for (int i = 0; i < R->nloaded; i++)
        for (int k = 0; k < R->loaded[i]->nscen; k++) ncases += R->loaded[i]->scen[k].ncases;
    char e[4 * SC_ECHO_MAX + 16];
    fprintf(err, "localtensor run: no case matches -k");
    for (int i = 0; i < opt->nfilters; i++)
        fprintf(err, "%s '%s'", i ? " or" : "",
                lt__echo(opt->filters[i], SC_ECHO_MAX, e, sizeof e));
    fprintf(
        err,
        " (%d case%s in %d file%s searched; -k matches a substring of a case name or file path)\n",
        ncases, ncases == 1 ? "" : "s", R->nloaded, R->nloaded == 1 ? "" : "s");
    return 0;
}

/* Fills R->w with the next selected cases of s from *c on (at most cap);
 * after --fail-fast stopped the run, each is reported as not run instead. */
static void window_fill(sc_runner *R, lt_sc_file *f, sc_scenario *s, int *c, int cap) {
    window *w = &R->w;
    int all = s->nselected == s->ncases;
    w->n = 0;
    for (; *c < s->ncases && w->n < cap; (*c)++) {
        int sel = all ? 1 : case_selected(R->opt, f->path, s, *c);
        sc_arena *a = sel > 0 ? lt__sc_arena_new() : NULL;
        sc_case *cs = a ? lt__sc_case_at(s, *c, &w->slot[w->n], a) : NULL;
        if (sel == 0) continue;
        if (!cs) {
            lt__sc_arena_free(a);
            R->oom = 1;
            return;
        }
        apply_options(R->opt, cs);
        if (R->stop) {
            cs->res.status = LT_SC_NOTRUN;
            R->sum.not_run++;
            lt__sc_stream_case(&R->rep, f, cs);
            lt__sc_arena_free(a);
            continue;
        }
        w->ar[w->n] = a;
        w->cs[w->n++] = cs;
    }
}

/* Runs the window's cases: several processes (--engine mpi) one at a
 * time, in order, on this thread, so that every process makes the same
 * MPI calls in the same order, each outcome then agreed; else on the
 * pool's threads at once. */
static void window_run(sc_runner *R) {
    window *w = &R->w;
    if (!R->opt->case_agree) {
        (void)lt__parallel_for(w->n, case_task, w); /* case_task cannot fail */
        return;
    }
    for (int j = 0; j < w->n; j++) {
        (void)case_task(w, j);
        agree_case(R->opt, w->ar[j], w->cs[j]);
    }
}

/* Reports the window's cases in case order, then releases them. */
static void window_report(sc_runner *R, lt_sc_file *f, sc_scenario *s, sc_tally *tally) {
    const lt_sc_options *opt = R->opt;
    for (int j = 0; j < R->w.n; j++) {
        sc_case *cs = R->w.cs[j];
        if (R->stop) { /* ran in the same window as the first failure */
            lt__sc_case_drop(cs);
            memset(&cs->res, 0, sizeof cs->res);
            cs->res.status = LT_SC_NOTRUN;
            R->sum.not_run++;
        } else {
            R->done++;
            lt_sc_status r = cs->res.status;
            R->sum.passed += r == LT_SC_PASS;
            R->sum.failed += r == LT_SC_FAIL;
            R->sum.errors += r == LT_SC_ERROR;
            lt__sc_tally_add(tally, cs);
            if (opt->verbose || opt->trace || !s->is_sweep || r != LT_SC_PASS) {
                progress_clear(&R->pg);
                lt__sc_report_case(R->out, opt, f, s, cs);
            }
            if (r != LT_SC_PASS && opt->fail_fast) R->stop = 1;
        }
        lt__sc_stream_case(&R->rep, f, cs);
        release_case(cs, R->w.ar[j]);
    }
}

/* Runs and reports the selected cases of scenario s, a window at a time
 * (one case at a time with -v: `show` steps print as they run). */
static void run_scenario(sc_runner *R, lt_sc_file *f, sc_scenario *s) {
    if (!s->nselected) return;
    sc_tally tally = {0};
    lt__sc_stream_scen_begin(&R->rep, s);
    int cap = R->opt->verbose ? 1 : SC_WINDOW;
    for (int c = 0; c < s->ncases && !R->oom;) {
        window_fill(R, f, s, &c, cap);
        if (R->oom) break;
        if (R->w.n) progress_tick(&R->pg, R->done, R->total, R->w.cs[0]->name);
        window_run(R);
        window_report(R, f, s, &tally);
    }
    lt__sc_stream_scen_end(&R->rep);
    if (s->is_sweep && !R->opt->verbose && !R->oom) {
        progress_clear(&R->pg);
        lt__sc_report_sweep(R->out, R->opt, f, s, &tally);
    }
}

/* The end of the run: out of memory said, the files that did not load
 * listed, the reports closed, the summary printed. Returns the exit code. */
static int runner_finish(sc_runner *R, int code, int no_match) {
    FILE *out = R->out;
    progress_clear(&R->pg);
    if (R->oom) code = runner_oom(R);
    R->sum.errors += R->nlerr;
    R->sum.seconds = now_s() - R->t0;
    for (int i = 0; i < R->nlerr; i++) {
        fputs(R->opt->color ? "\033[31m\033[1mERROR\033[0m " : "ERROR ", out);
        lt__fputs_echo(R->lerr[i].path, 0, out);
        fputs(": could not be loaded (message on stderr)\n", out);
    }
    if (lt__sc_stream_close(&R->rep, &R->sum)) {
        fputs("localtensor run: ", R->err);
        lt__fputs_echo(lt_errmsg(), 1, R->err);
        fputc('\n', R->err);
        code = 2;
    }
    lt__sc_report_summary(out, R->opt, &R->sum);
    fflush(out);
    if (R->sum.errors || R->nlerr || no_match) code = 2;
    else if (R->sum.failed && code == 0) code = 1;
    return code;
}

int lt_sc_run_paths(const char *const *paths, int npaths, const lt_sc_options *opt) {
    sc_runner *R = lt__calloc(1, sizeof *R);
    if (!R) {
        fprintf(opt->err, "localtensor run: out of memory\n");
        return 2;
    }
    R->opt = opt;
    R->out = opt->out;
    R->err = opt->err;
    R->t0 = now_s();
    R->sum.engine = opt->engine ? opt->engine_name : NULL;
    int code = 0, no_match = 0;
    if (runner_walk(R, paths, npaths, &code) || runner_load(R) || runner_check(R, &no_match)) {
        code = 2;   /* said already; no report */
    } else {
        R->pg = (progress){opt->progress, 0, R->t0, 0, R->err};
        lt__sc_stream_open(&R->rep, opt->json_path, opt->junit_path, R->lerr, R->nlerr);
        R->w.show = opt->verbose ? R->out : NULL;
        for (int i = 0; i < R->nloaded && !R->oom; i++) {
            lt_sc_file *f = R->loaded[i];
            lt__sc_stream_file_begin(&R->rep, f);
            for (int k = 0; k < f->nscen && !R->oom; k++) run_scenario(R, f, &f->scen[k]);
            lt__sc_stream_file_end(&R->rep, f);
        }
        code = runner_finish(R, code, no_match);
    }
    free_run(R->loaded, R->nloaded, R->lerr, R->nlerr, &R->files);
    lt__free(R);
    return code;
}
