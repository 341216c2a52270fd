/* tools/scenario/report.c — what `localtensor run` prints and writes: one text line per
 * scenario or case (ok / FAIL / ERROR, time) with every failure's position,
 * rank, index, expected and actual values; a JSON document (cJSON) and a
 * JUnit XML file in the shape CI systems read, both written while the cases
 * run (sc_stream), so that a sweep's reports do not hold every case.
 *
 * Invariant: the counts in the text summary, the JSON "counts" object and
 * the JUnit totals are computed from the same sc_run_summary and the same
 * selected cases, so they always agree.
 *
 * A report file is never left half-written: it is written to a temporary
 * file beside it and renamed onto it once complete; a failed write removes
 * the temporary file and keeps what the target held (sc_report_out). The
 * text lines echo paths, names and messages with their control bytes
 * escaped (lt__fputs_echo), so that a name cannot act on a terminal.
 */
#define _DEFAULT_SOURCE /* realpath */
#include "kernels/alloc.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "tools/render/json_alloc.h"

#include "tools/scenario/scenario_impl.h"
#include "localtensor/kernels/backend.h"
#include "kernels/status_impl.h"

#define GREEN "\033[32m"
#define RED "\033[31m"
#define YELLOW "\033[33m"
#define BOLD "\033[1m"
#define RESET "\033[0m"

const char *lt__sc_status_name(lt_sc_status s) {
    switch (s) {
    case LT_SC_PASS: return "ok";
    case LT_SC_FAIL: return "FAIL";
    case LT_SC_ERROR: return "ERROR";
    default: return "not run";
    }
}

static const char *json_status(lt_sc_status s) {
    switch (s) {
    case LT_SC_PASS: return "passed";
    case LT_SC_FAIL: return "failed";
    case LT_SC_ERROR: return "error";
    default: return "not_run";
    }
}

/* "s" unless n is 1: "1 error", "2 errors" */
#define PL(n) ((n) == 1 ? "" : "s")

static char *fmt_time(double s, char *buf, size_t n) {
    if (s < 1) snprintf(buf, n, "%.1f ms", s * 1e3);
    else snprintf(buf, n, "%.2f s", s);
    return buf;
}

static void status_word(FILE *f, const lt_sc_options *o, lt_sc_status s) {
    const char *w = lt__sc_status_name(s);
    const char *c = s == LT_SC_PASS    ? GREEN
                    : s == LT_SC_FAIL  ? RED
                    : s == LT_SC_ERROR ? RED BOLD
                                       : YELLOW;
    if (o->color) fprintf(f, "%s%-5s%s ", c, w, RESET);
    else fprintf(f, "%-5s ", w);
}

/* A path or a name, its control bytes escaped. */
static void put_name(FILE *f, const char *s) { lt__fputs_echo(s, 0, f); }

static void print_failure(FILE *f, const lt_sc_failure *x) {
    fputs("      ", f);
    put_name(f, x->file);
    fprintf(f, ":%d:%d: ", x->line, x->col);
    lt__fputs_echo(x->message ? x->message : "(no message)", 1, f);
    fputc('\n', f);
    if (x->rank >= 0 || x->index) {
        fprintf(f, "        ");
        if (x->rank >= 0) fprintf(f, "rank %d  ", x->rank);
        if (x->index) fprintf(f, "index %s  ", x->index);
        if (x->expected) fprintf(f, "expected %s  ", x->expected);
        if (x->actual) fprintf(f, "actual %s", x->actual);
        fputc('\n', f);
    }
    if (x->plan_step) fprintf(f, "        produced by: %s\n", x->plan_step);
}

/* Notes of a case, each line indented under it. */
static void print_notes(FILE *f, const char *notes) {
    for (const char *p = notes; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char line[1024];
        fputs("      ", f);
        for (size_t at = 0; at < len; at += sizeof line - 1) {   /* the line in pieces */
            size_t k = len - at < sizeof line - 1 ? len - at : sizeof line - 1;
            memcpy(line, p + at, k);
            line[k] = '\0';
            lt__fputs_echo(line, 1, f);
        }
        fputc('\n', f);
        p = e ? e + 1 : NULL;
    }
}

void lt__sc_report_case(FILE *f, const lt_sc_options *o, const lt_sc_file *file,
                        const sc_scenario *s, const sc_case *c) {
    (void)s;
    char t[32];
    status_word(f, o, c->res.status);
    put_name(f, file->path);
    fputs(": ", f);
    put_name(f, c->name);
    if (c->res.numerics) fprintf(f, " [numerics %s]", c->res.numerics);
    fprintf(f, " (%s)\n", fmt_time(c->res.seconds, t, sizeof t));
    for (int i = 0; i < c->res.nfails; i++) print_failure(f, &c->res.fails[i]);
    print_notes(f, c->res.notes);
    if (c->res.nfails_dropped)
        fprintf(f, "      ... and %d more failure%s\n", c->res.nfails_dropped,
                PL(c->res.nfails_dropped));
    if (c->res.trace_text) lt__fputs_echo(c->res.trace_text, 1, f), fputc('\n', f);
}

void lt__sc_tally_add(sc_tally *t, const sc_case *c) {
    if (c->res.status == LT_SC_NOTRUN) return;
    t->cases++;
    t->seconds += c->res.seconds;
    t->failed += c->res.status == LT_SC_FAIL;
    t->errors += c->res.status == LT_SC_ERROR;
}

void lt__sc_report_sweep(FILE *f, const lt_sc_options *o, const lt_sc_file *file,
                         const sc_scenario *s, const sc_tally *tl) {
    int sel = tl->cases, fail = tl->failed, err = tl->errors;
    double t = tl->seconds;
    if (!sel) return;
    char ts[32];
    status_word(f, o, err ? LT_SC_ERROR : fail ? LT_SC_FAIL : LT_SC_PASS);
    put_name(f, file->path);
    fputs(": ", f);
    put_name(f, s->name);
    if (fail || err)
        fprintf(f, " [sweep: %d of %d case%s failed, %d error%s] (%s)\n", fail, sel, PL(sel), err,
                PL(err), fmt_time(t, ts, sizeof ts));
    else
        fprintf(f, " [sweep: %d case%s] (%s)\n", sel, PL(sel), fmt_time(t, ts, sizeof ts));
}

void lt__sc_report_summary(FILE *f, const lt_sc_options *o, const sc_run_summary *sum) {
    char ts[32];
    fputc('\n', f);
    if (sum->not_run)
        fprintf(f, "stopped at the first failure (--fail-fast): %d case%s not run\n", sum->not_run,
                PL(sum->not_run));
    fprintf(f, "%d case%s in %d scenario%s from %d file%s", sum->cases, PL(sum->cases),
            sum->scenarios, PL(sum->scenarios), sum->files, PL(sum->files));
    if (sum->files_failed)
        fprintf(f, "; %d could not be loaded", sum->files_failed);
    fprintf(f, " (%s)\n", fmt_time(sum->seconds, ts, sizeof ts));
    if (o->compare_backend) {
        int64_t exact, close;
        lt__sc_cmp_counts(&exact, &close);
        fprintf(f,
                "--compare-backend %s: %lld shards of stored values compared, %lld bit-identical, "
                "%lld within "
                "the dtype's tolerance\n",
                o->compare_backend->iface->name, (long long)(exact + close), (long long)exact,
                (long long)close);
    }
    int bad = sum->failed || sum->errors;
    if (o->color) fputs(bad ? RED : GREEN, f);
    fprintf(f, "%d passed, %d failed, %d error%s", sum->passed, sum->failed, sum->errors,
            PL(sum->errors));
    if (o->color) fputs(RESET, f);
    fputc('\n', f);
}

/* ---- JSON --------------------------------------------------------------------------- */

static cJSON *failure_json(const lt_sc_failure *x) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "file", x->file);
    cJSON_AddNumberToObject(j, "line", x->line);
    cJSON_AddNumberToObject(j, "col", x->col);
    cJSON_AddStringToObject(j, "step", x->step ? x->step : "");
    cJSON_AddStringToObject(j, "message", x->message ? x->message : "");
    if (x->rank >= 0) cJSON_AddNumberToObject(j, "rank", x->rank);
    if (x->index) cJSON_AddStringToObject(j, "index", x->index);
    if (x->expected) cJSON_AddStringToObject(j, "expected", x->expected);
    if (x->actual) cJSON_AddStringToObject(j, "actual", x->actual);
    if (x->plan_step) cJSON_AddStringToObject(j, "plan_step", x->plan_step);
    /* a would-hang report, structured (scenario_hang.c); "message" keeps its text */
    if (x->hang) lt__json_put(j, "hang", cJSON_Parse(x->hang));
    return j;
}

static cJSON *case_json(const sc_case *c) {
    cJSON *j = cJSON_CreateObject(), *fl;
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "name", c->name);
    cJSON_AddStringToObject(j, "status", json_status(c->res.status));
    cJSON_AddNumberToObject(j, "time_s", c->res.seconds);
    cJSON_AddNumberToObject(j, "checks", c->res.checks);
    cJSON_AddNumberToObject(j, "checks_failed", c->res.checks_failed);
    if (c->res.numerics) { /* sample/none: which ranks' values were computed */
        char nm[32];
        cJSON_AddStringToObject(j, "numerics", lt_numerics_format(&c->numerics, nm, sizeof nm));
        cJSON *sr = cJSON_AddArrayToObject(j, "sampled_ranks");
        for (int i = 0; sr && i < c->res.nsampled; i++)
            lt__json_push(sr, cJSON_CreateNumber(c->res.sampled[i]));
    }
    if (c->res.notes) cJSON_AddStringToObject(j, "notes", c->res.notes);
    if ((fl = cJSON_AddArrayToObject(j, "failures")))
        for (int i = 0; i < c->res.nfails; i++) lt__json_push(fl, failure_json(&c->res.fails[i]));
    /* every redistribute the case ran, with per-rank bytes of each plan step */
    cJSON *rd = c->res.redistributes ? cJSON_Parse(c->res.redistributes) : NULL;
    lt__json_put(j, "redistributes", rd ? rd : cJSON_CreateArray());
    /* --trace: the op log and comm table (tools/scenario/scenario_trace.c) */
    if (c->res.trace_json) lt__json_put(j, "trace", cJSON_Parse(c->res.trace_json));
    return j;
}

/* ---- JUnit XML ----------------------------------------------------------------------- */

/* XML 1.0 text (attr 0) or an attribute value (attr 1): & < > " '
 * escaped; control characters other than tab, newline and carriage return
 * are not allowed at all, so they become '?'. In an attribute those three
 * are written as character references: a parser turns them, written raw,
 * into spaces (a multi-line message would lose its lines). */
static void xml_escape_in(FILE *f, const char *s, int attr) {
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r') fputc('?', f);
            else if (*p < 0x20 && attr) fprintf(f, "&#%d;", *p);
            else fputc(*p, f);
        }
    }
}

static void xml_escape(FILE *f, const char *s) { xml_escape_in(f, s, 0); }
static void xml_attr(FILE *f, const char *s) { xml_escape_in(f, s, 1); }

/* "scenarios/placements/chunk.yaml" -> "scenarios.placements.chunk" */
static void classname(FILE *f, const char *path) {
    const char *end = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!end || (slash && end < slash)) end = path + strlen(path);
    const char *p = path;
    while (p[0] == '.' && p[1] == '/') p += 2;
    char buf[1024];
    size_t j = 0;
    for (; p < end && j + 1 < sizeof buf; p++) buf[j++] = *p == '/' ? '.' : *p;
    buf[j] = '\0';
    xml_attr(f, buf);
}

static void failure_text(FILE *f, const lt_sc_failure *x) {
    char line[2400];
    snprintf(line, sizeof line, "%s:%d:%d: %s\n", x->file, x->line, x->col,
             x->message ? x->message : "");
    xml_escape(f, line);
    if (x->rank >= 0) fprintf(f, "rank: %d\n", x->rank);
    if (x->index) fputs("index: ", f), xml_escape(f, x->index), fputc('\n', f);
    if (x->expected) fputs("expected: ", f), xml_escape(f, x->expected), fputc('\n', f);
    if (x->actual) fputs("actual: ", f), xml_escape(f, x->actual), fputc('\n', f);
    if (x->plan_step) fputs("produced by: ", f), xml_escape(f, x->plan_step), fputc('\n', f);
}


/* ---- the reports written while the cases run ---------------------------------------------
 *
 * JSON: the document is written piece by piece (each case as one
 * unformatted object on its own line), so only one case's JSON exists in
 * memory at a time. JUnit: a <testsuite> must state its counts before its
 * testcases, and <testsuites> the totals, so the testcases of the current
 * file go to one temporary file and every finished testsuite to another;
 * the report is assembled from them at the end. */

/* ---- report files: a temporary file beside the target, renamed onto it --------------------- */

/* 0666 less this process's umask: the permissions fopen(path, "w") gives a
 * new file. */
static mode_t new_file_mode(void) {
    mode_t mask = umask(022);
    umask(mask);
    return 0666 & ~mask;
}

/* "cannot write PATH: REASON" (err: an errno value; 0 with LT_NOMEM: out of
 * memory) into msg[cap]; returns s. */
static lt_status out_msg(lt_status s, int err, const char *path, char *msg, size_t cap) {
    if (s == LT_NOMEM && !err) snprintf(msg, cap, "out of memory while writing %s", path);
    else snprintf(msg, cap, "cannot write %s: %s", path, err ? strerror(err) : "a write failed");
    return s;
}

/* Closes o's file, removes its temporary file and frees its names: the
 * target keeps what it held. */
static void out_discard(sc_report_out *o) {
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    lt__free(o->tmp);
    lt__free(o->dst);
    memset(o, 0, sizeof *o);
}

/* Opens report `path` (sc_report_out): a new temporary file in the
 * target's directory (rename() replaces a file atomically only within one
 * file system), with an existing target's permissions, else those of a new
 * file. A target that exists and is not a regular file is opened in place.
 * On failure nothing is left open or created, and msg says why. */
static lt_status out_open(sc_report_out *o, const char *path, char *msg, size_t cap) {
    memset(o, 0, sizeof *o);
    struct stat sb, lb;
    int exists = stat(path, &sb) == 0;
    if (exists && !S_ISREG(sb.st_mode)) {
        if (!(o->f = fopen(path, "w"))) return out_msg(LT_IO, errno, path, msg, cap);
        return LT_OK;
    }
    /* a link to a file: the file gets the report, the link stays (realpath
     * into our own buffer: every allocation goes through kernels/alloc.h) */
    char real[PATH_MAX];
    int is_link = exists && lstat(path, &lb) == 0 && S_ISLNK(lb.st_mode) && realpath(path, real);
    const char *dst = is_link ? real : path;
    size_t n = strlen(dst);
    o->dst = lt__malloc(n + 1);
    o->tmp = lt__malloc(n + sizeof ".tmp-XXXXXX");
    if (o->dst) memcpy(o->dst, dst, n + 1);
    if (o->tmp) snprintf(o->tmp, n + sizeof ".tmp-XXXXXX", "%s.tmp-XXXXXX", dst);
    if (!o->dst || !o->tmp) {
        out_discard(o);
        return out_msg(LT_NOMEM, 0, path, msg, cap);
    }
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        lt__free(o->tmp);   /* nothing was created */
        o->tmp = NULL;
        out_discard(o);
        return out_msg(LT_IO, e, path, msg, cap);
    }
    (void)fchmod(fd, exists ? sb.st_mode & 07777 : new_file_mode());
    if (!(o->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        out_discard(o);
        return out_msg(LT_IO, e, path, msg, cap);
    }
    return LT_OK;
}

/* Completes o: flushes its file to the disk, closes it and renames the
 * temporary file onto the target. 0, or the errno value of what failed, -1
 * when that is not known (o is then discarded: the target keeps what it
 * held). */
static int out_commit(sc_report_out *o) {
    errno = 0;
    int bad = fflush(o->f) != 0, e = errno;
    if (ferror(o->f) && !e) {
        /* an earlier write failed, its errno gone: one byte more into the
         * temporary file (removed below) says why */
        bad = 1;
        e = o->tmp && write(fileno(o->f), "", 1) < 0 ? errno : -1;
    }
    if (!bad && o->tmp && fsync(fileno(o->f)) != 0) bad = 1, e = errno;
    int closed = fclose(o->f);
    o->f = NULL;
    if (!bad && closed != 0) bad = 1, e = errno;
    if (!bad && o->tmp && rename(o->tmp, o->dst) != 0) bad = 1, e = errno;
    if (!bad) {
        lt__free(o->tmp);   /* renamed: nothing to remove */
        o->tmp = NULL;
    }
    out_discard(o);
    return bad ? (e ? e : -1) : 0;
}

/* Records the first failure of a report (status, and err: the errno value
 * of the write that failed; 0 when out of memory, -1 when not known) and
 * stops writing it: its temporary file is removed. */
static void json_fail(sc_stream *st, lt_status s, int err) {
    if (st->json_st) return;
    if (err < 0) err = 0;
    st->json_st = out_msg(s, err, st->json_path, st->json_msg, sizeof st->json_msg);
    out_discard(&st->json_out);
}

static void junit_fail(sc_stream *st, lt_status s, int err) {
    if (st->junit_st) return;
    if (err < 0) err = 0;
    st->junit_st = out_msg(s, err, st->junit_path, st->junit_msg, sizeof st->junit_msg);
    if (st->body) fclose(st->body);
    if (st->suite) fclose(st->suite);
    st->body = st->suite = NULL;
    out_discard(&st->junit_out);
}

/* Writes cJSON item j (then frees it) unformatted, without its closing
 * character when `open` is set (so members or elements can follow). */
static void json_put(sc_stream *st, cJSON *j, int open) {
    char *text = j && !lt__json_failed() ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!st->json_out.f) {
        cJSON_free(text);
        return;
    }
    if (!text || lt__json_failed()) {
        cJSON_free(text);
        json_fail(st, LT_NOMEM, 0);
        return;
    }
    size_t n = strlen(text);
    if (open && n) n--;
    if (fwrite(text, 1, n, st->json_out.f) != n) json_fail(st, LT_IO, errno);
    cJSON_free(text);
}

static void json_raw(sc_stream *st, const char *s) {
    if (st->json_out.f && fputs(s, st->json_out.f) == EOF) json_fail(st, LT_IO, errno);
}

void lt__sc_stream_open(sc_stream *st, const char *json_path, const char *junit_path,
                        const sc_load_error *lerr, int nlerr) {
    memset(st, 0, sizeof *st);
    st->json_path = json_path;
    st->junit_path = junit_path;
    st->lerr = lerr;
    st->nlerr = nlerr;
    if (json_path) {
        st->json_st = out_open(&st->json_out, json_path, st->json_msg, sizeof st->json_msg);
        json_raw(st, "{\"version\":1,\"files\":[\n");
        for (int i = 0; i < nlerr; i++) {
            lt__json_begin();
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "path", lerr[i].path);
            cJSON_AddStringToObject(f, "load_error",
                                    lerr[i].message ? lerr[i].message : "out of memory");
            cJSON_AddArrayToObject(f, "scenarios");
            json_raw(st, st->nfiles++ ? ",\n" : "");
            json_put(st, f, 0);
        }
    }
    if (junit_path) {
        /* opened now, written at the end: say now that it cannot be written */
        st->junit_st = out_open(&st->junit_out, junit_path, st->junit_msg, sizeof st->junit_msg);
        if (!st->junit_st && !(st->body = tmpfile())) junit_fail(st, LT_IO, errno);
    }
}

void lt__sc_stream_file_begin(sc_stream *st, const lt_sc_file *f) {
    st->nscen = 0;
    st->tests = st->fails = st->errs = st->skipped = 0;
    st->file_t = 0;
    if (st->json_out.f) {
        lt__json_begin();
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "path", f->path);
        cJSON_AddNullToObject(j, "load_error");
        json_raw(st, st->nfiles++ ? ",\n" : "");
        json_put(st, j, 1);
        json_raw(st, ",\"scenarios\":[\n");
    }
    if (st->body && !(st->suite = tmpfile())) junit_fail(st, LT_IO, errno);
}

void lt__sc_stream_scen_begin(sc_stream *st, const sc_scenario *s) {
    st->ncase = 0;
    st->worst = LT_SC_PASS;
    st->scen_t = 0;
    st->all_notrun = 1;
    if (!st->json_out.f) return;
    lt__json_begin();
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", s->name);
    if (s->description) cJSON_AddStringToObject(j, "description", s->description);
    else
        cJSON_AddNullToObject(j,
                              "description"); /* every key of scenarios/README.md's list is there */
    cJSON_AddNumberToObject(j, "line", s->pos.line);
    cJSON_AddBoolToObject(j, "sweep", s->is_sweep);
    json_raw(st, st->nscen++ ? ",\n" : "");
    json_put(st, j, 1);
    json_raw(st, ",\"cases\":[\n");
}

/* One JUnit testcase. */
static void junit_case(FILE *f, const lt_sc_file *file, const sc_case *cs) {
    fprintf(f, "    <testcase classname=\"");
    classname(f, file->path);
    fprintf(f, "\" name=\"");
    xml_attr(f, cs->name);
    fprintf(f, "\" time=\"%.6f\"", cs->res.seconds);
    if (cs->res.status == LT_SC_PASS) {
        fprintf(f, "/>\n");
        return;
    }
    fprintf(f, ">\n");
    if (cs->res.status == LT_SC_NOTRUN) {
        fprintf(f, "      <skipped message=\"not run (--fail-fast)\"/>\n");
    } else {
        const char *tag = cs->res.status == LT_SC_FAIL ? "failure" : "error";
        const lt_sc_failure *first = NULL;
        for (int x = 0; x < cs->res.nfails && !first; x++)
            if (cs->res.status != LT_SC_FAIL || x == 0) first = &cs->res.fails[x];
        if (cs->res.status == LT_SC_ERROR && cs->res.nfails)
            first = &cs->res.fails[cs->res.nfails - 1];
        fprintf(f, "      <%s type=\"%s\" message=\"", tag,
                cs->res.status == LT_SC_FAIL ? "check" : "step");
        if (first && first->message) xml_attr(f, first->message);
        fprintf(f, "\">");
        for (int x = 0; x < cs->res.nfails; x++) failure_text(f, &cs->res.fails[x]);
        fprintf(f, "</%s>\n", tag);
    }
    fprintf(f, "    </testcase>\n");
}

void lt__sc_stream_case(sc_stream *st, const lt_sc_file *f, const sc_case *cs) {
    lt_sc_status r = cs->res.status;
    st->scen_t += cs->res.seconds;
    if (r != LT_SC_NOTRUN) st->all_notrun = 0;
    if (r == LT_SC_ERROR) st->worst = LT_SC_ERROR;
    else if (r == LT_SC_FAIL && st->worst != LT_SC_ERROR) st->worst = LT_SC_FAIL;
    if (st->json_out.f) {
        lt__json_begin();
        json_raw(st, st->ncase++ ? ",\n" : "");
        json_put(st, case_json(cs), 0);
    }
    if (st->suite) {
        st->tests++;
        st->fails += r == LT_SC_FAIL;
        st->errs += r == LT_SC_ERROR;
        st->skipped += r == LT_SC_NOTRUN;
        st->file_t += cs->res.seconds;
        junit_case(st->suite, f, cs);
        if (ferror(st->suite)) junit_fail(st, LT_IO, errno);
    }
}

void lt__sc_stream_scen_end(sc_stream *st) {
    if (!st->json_out.f) return;
    char tail[96];
    snprintf(tail, sizeof tail, "\n],\"status\":\"%s\",\"time_s\":%.17g}",
             json_status(st->all_notrun ? LT_SC_NOTRUN : st->worst), st->scen_t);
    json_raw(st, tail);
}

/* Appends what `from` holds to `to`; 0, or -1 on a read or write error. */
static int copy_file(FILE *to, FILE *from) {
    char buf[16384];
    size_t n;
    rewind(from);
    while ((n = fread(buf, 1, sizeof buf, from)) > 0)
        if (fwrite(buf, 1, n, to) != n) return -1;
    return ferror(from) ? -1 : 0;
}

void lt__sc_stream_file_end(sc_stream *st, const lt_sc_file *f) {
    json_raw(st, "\n]}");
    if (!st->suite) return;
    if (st->tests) {
        fprintf(st->body, "  <testsuite name=\"");
        xml_attr(st->body, f->path);
        fprintf(st->body,
                "\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.6f\">\n",
                st->tests, st->fails, st->errs, st->skipped, st->file_t);
        if (copy_file(st->body, st->suite)) junit_fail(st, LT_IO, errno);
        else fprintf(st->body, "  </testsuite>\n");
    }
    if (st->suite) fclose(st->suite);
    st->suite = NULL;
}

lt_status lt__sc_stream_close(sc_stream *st, const sc_run_summary *sum) {
    int nlerr = st->nlerr;
    if (st->json_out.f) {
        lt__json_begin();
        cJSON *counts = cJSON_CreateObject();
        cJSON_AddNumberToObject(counts, "files", sum->files);
        cJSON_AddNumberToObject(counts, "scenarios", sum->scenarios);
        cJSON_AddNumberToObject(counts, "cases", sum->cases);
        cJSON_AddNumberToObject(counts, "passed", sum->passed);
        cJSON_AddNumberToObject(counts, "failed", sum->failed);
        cJSON_AddNumberToObject(counts, "errors", sum->errors);
        cJSON_AddNumberToObject(counts, "not_run", sum->not_run);
        cJSON_AddNumberToObject(counts, "load_errors", nlerr);
        json_raw(st, "\n],\"counts\":");
        json_put(st, counts, 0);
        if (sum->engine) { /* --engine mpi (tools/cli/cli_mpi.c): which engine ran the cases */
            json_raw(st, ",\"engine\":");
            lt__json_begin();
            json_put(st, cJSON_CreateString(sum->engine), 0);
        }
        char tail[64];
        snprintf(tail, sizeof tail, ",\"time_s\":%.17g}\n", sum->seconds);
        json_raw(st, tail);
        int e = st->json_out.f ? out_commit(&st->json_out) : 0;
        if (e) json_fail(st, LT_IO, e);
    }
    if (st->body) {
        FILE *f = st->junit_out.f;
        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        fprintf(f,
                "<testsuites name=\"localtensor\" tests=\"%d\" failures=\"%d\" errors=\"%d\" "
                "skipped=\"%d\" time=\"%.6f\">\n",
                sum->cases + nlerr, sum->failed, sum->errors, sum->not_run, sum->seconds);
        for (int i = 0; i < nlerr; i++) {
            const char *msg = st->lerr[i].message ? st->lerr[i].message : "out of memory";
            fprintf(f, "  <testsuite name=\"");
            xml_attr(f, st->lerr[i].path);
            fprintf(f, "\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" time=\"0\">\n");
            fprintf(f, "    <testcase classname=\"");
            classname(f, st->lerr[i].path);
            fprintf(f, "\" name=\"(load)\" time=\"0\">\n      <error type=\"load\" message=\"");
            xml_attr(f, msg);
            fprintf(f, "\">");
            xml_escape(f, msg);
            fprintf(f, "</error>\n    </testcase>\n  </testsuite>\n");
        }
        errno = 0;
        int e = copy_file(f, st->body) ? (errno ? errno : -1) : 0;
        fprintf(f, "</testsuites>\n");
        if (!e) e = out_commit(&st->junit_out);
        if (e) junit_fail(st, LT_IO, e);
        if (st->body) fclose(st->body);
        st->body = NULL;
    }
    if (st->suite) fclose(st->suite);
    st->suite = NULL;
    if (st->json_st) return lt__err(st->json_st, "--json: %s", st->json_msg);
    if (st->junit_st) return lt__err(st->junit_st, "--junit: %s", st->junit_msg);
    return LT_OK;
}
