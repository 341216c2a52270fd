/* tools/scenario/report.c — what `localtensor run` prints and writes: one text line per
 * scenario or case (ok / FAIL / ERROR, time) with every failure's position,
 * rank, index, expected and actual values; a JSON document (cJSON) and a
 * JUnit XML file in the shape CI systems read.
 *
 * Invariant: the counts in the text summary, the JSON "counts" object and
 * the JUnit totals are computed from the same sc_run_summary and the same
 * selected cases, so they always agree.
 */
#include "kernels/alloc.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "tools/render/json_alloc.h"

#include "tools/scenario/scenario_impl.h"
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
    const char *c = s == LT_SC_PASS ? GREEN : s == LT_SC_FAIL ? RED : s == LT_SC_ERROR ? RED BOLD : YELLOW;
    if (o->color) fprintf(f, "%s%-5s%s ", c, w, RESET);
    else fprintf(f, "%-5s ", w);
}

static void print_failure(FILE *f, const lt_sc_failure *x) {
    fprintf(f, "      %s:%d:%d: %s\n", x->file, x->line, x->col, x->message ? x->message : "(no message)");
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

void lt__sc_report_case(FILE *f, const lt_sc_options *o, const lt_sc_file *file, const sc_scenario *s,
                        const sc_case *c) {
    (void)s;
    char t[32];
    status_word(f, o, c->res.status);
    fprintf(f, "%s: %s (%s)\n", file->path, c->name, fmt_time(c->res.seconds, t, sizeof t));
    for (int i = 0; i < c->res.nfails; i++) print_failure(f, &c->res.fails[i]);
    if (c->res.nfails_dropped)
        fprintf(f, "      ... and %d more failure%s\n", c->res.nfails_dropped, PL(c->res.nfails_dropped));
    if (c->res.trace_text) fprintf(f, "%s\n", c->res.trace_text);
}

void lt__sc_report_sweep(FILE *f, const lt_sc_options *o, const lt_sc_file *file, const sc_scenario *s) {
    int sel = 0, fail = 0, err = 0;
    double t = 0;
    for (int i = 0; i < s->ncases; i++) {
        const sc_case *c = &s->cases[i];
        if (!c->selected || c->res.status == LT_SC_NOTRUN) continue;
        sel++;
        t += c->res.seconds;
        fail += c->res.status == LT_SC_FAIL;
        err += c->res.status == LT_SC_ERROR;
    }
    if (!sel) return;
    char ts[32];
    status_word(f, o, err ? LT_SC_ERROR : fail ? LT_SC_FAIL : LT_SC_PASS);
    if (fail || err)
        fprintf(f, "%s: %s [sweep: %d of %d case%s failed, %d error%s] (%s)\n", file->path, s->name, fail, sel,
                PL(sel), err, PL(err), fmt_time(t, ts, sizeof ts));
    else
        fprintf(f, "%s: %s [sweep: %d case%s] (%s)\n", file->path, s->name, sel, PL(sel), fmt_time(t, ts, sizeof ts));
}

void lt__sc_report_summary(FILE *f, const lt_sc_options *o, const sc_run_summary *sum) {
    char ts[32];
    fputc('\n', f);
    if (sum->not_run)
        fprintf(f, "stopped at the first failure (--fail-fast): %d case%s not run\n", sum->not_run, PL(sum->not_run));
    fprintf(f, "%d case%s in %d scenario%s from %d file%s", sum->cases, PL(sum->cases), sum->scenarios,
            PL(sum->scenarios), sum->files, PL(sum->files));
    if (sum->files_failed)
        fprintf(f, "; %d could not be loaded", sum->files_failed);
    fprintf(f, " (%s)\n", fmt_time(sum->seconds, ts, sizeof ts));
    int bad = sum->failed || sum->errors;
    if (o->color) fputs(bad ? RED : GREEN, f);
    fprintf(f, "%d passed, %d failed, %d error%s", sum->passed, sum->failed, sum->errors, PL(sum->errors));
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
    if ((fl = cJSON_AddArrayToObject(j, "failures")))
        for (int i = 0; i < c->res.nfails; i++) lt__json_push(fl, failure_json(&c->res.fails[i]));
    /* every redistribute the case ran, with per-rank bytes of each plan step */
    cJSON *rd = c->res.redistributes ? cJSON_Parse(c->res.redistributes) : NULL;
    lt__json_put(j, "redistributes", rd ? rd : cJSON_CreateArray());
    /* --trace: the op log and comm table (tools/scenario/scenario_trace.c) */
    if (c->res.trace_json) lt__json_put(j, "trace", cJSON_Parse(c->res.trace_json));
    return j;
}

static int selected_cases(const sc_scenario *s) {
    int n = 0;
    for (int i = 0; i < s->ncases; i++) n += s->cases[i].selected;
    return n;
}

static lt_status write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return lt__err(LT_IO, "cannot write %s: %s", path, strerror(errno));
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, f) != n;
    bad |= fclose(f) != 0;
    if (bad) return lt__err(LT_IO, "cannot write %s", path);
    return LT_OK;
}

lt_status lt__sc_write_json(const char *path, lt_sc_file *const *files, int nfiles, const sc_load_error *lerr,
                            int nlerr, const sc_run_summary *sum) {
    lt__json_begin();
    cJSON *root = cJSON_CreateObject(), *fa, *counts;
    if (!root) return lt__err(LT_NOMEM, "out of memory while writing %s", path);
    cJSON_AddNumberToObject(root, "version", 1);
    if (sum->engine) cJSON_AddStringToObject(root, "engine", sum->engine);
    fa = cJSON_AddArrayToObject(root, "files");
    for (int i = 0; fa && i < nlerr; i++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "path", lerr[i].path);
        cJSON_AddStringToObject(f, "load_error", lerr[i].message ? lerr[i].message : "out of memory");
        cJSON_AddArrayToObject(f, "scenarios");
        lt__json_push(fa, f);
    }
    for (int i = 0; fa && i < nfiles; i++) {
        const lt_sc_file *file = files[i];
        cJSON *f = cJSON_CreateObject(), *sa;
        cJSON_AddStringToObject(f, "path", file->path);
        cJSON_AddNullToObject(f, "load_error");
        sa = cJSON_AddArrayToObject(f, "scenarios");
        for (int k = 0; sa && k < file->nscen; k++) {
            const sc_scenario *s = &file->scen[k];
            if (!selected_cases(s)) continue;
            cJSON *sj = cJSON_CreateObject(), *ca;
            lt_sc_status worst = LT_SC_PASS;
            double t = 0;
            int all_notrun = 1;
            cJSON_AddStringToObject(sj, "name", s->name);
            if (s->description) cJSON_AddStringToObject(sj, "description", s->description);
            cJSON_AddNumberToObject(sj, "line", s->pos.line);
            cJSON_AddBoolToObject(sj, "sweep", s->is_sweep);
            ca = cJSON_AddArrayToObject(sj, "cases");
            for (int c = 0; ca && c < s->ncases; c++) {
                const sc_case *cs = &s->cases[c];
                if (!cs->selected) continue;
                lt__json_push(ca, case_json(cs));
                t += cs->res.seconds;
                if (cs->res.status != LT_SC_NOTRUN) all_notrun = 0;
                if (cs->res.status == LT_SC_ERROR) worst = LT_SC_ERROR;
                else if (cs->res.status == LT_SC_FAIL && worst != LT_SC_ERROR) worst = LT_SC_FAIL;
            }
            cJSON_AddStringToObject(sj, "status", json_status(all_notrun ? LT_SC_NOTRUN : worst));
            cJSON_AddNumberToObject(sj, "time_s", t);
            lt__json_push(sa, sj);
        }
        lt__json_push(fa, f);
    }
    if ((counts = cJSON_AddObjectToObject(root, "counts"))) {
        cJSON_AddNumberToObject(counts, "files", sum->files);
        cJSON_AddNumberToObject(counts, "scenarios", sum->scenarios);
        cJSON_AddNumberToObject(counts, "cases", sum->cases);
        cJSON_AddNumberToObject(counts, "passed", sum->passed);
        cJSON_AddNumberToObject(counts, "failed", sum->failed);
        cJSON_AddNumberToObject(counts, "errors", sum->errors);
        cJSON_AddNumberToObject(counts, "not_run", sum->not_run);
        cJSON_AddNumberToObject(counts, "load_errors", nlerr);
    }
    cJSON_AddNumberToObject(root, "time_s", sum->seconds);
    char *text = lt__json_failed() ? NULL : cJSON_Print(root);
    cJSON_Delete(root);
    if (!text || lt__json_failed()) {
        cJSON_free(text);
        return lt__err(LT_NOMEM, "out of memory while writing %s", path);
    }
    size_t n = strlen(text);
    char *t2 = lt__realloc(text, n + 2);
    if (!t2) {
        lt__free(text);
        return lt__err(LT_NOMEM, "out of memory while writing %s", path);
    }
    text = t2;
    text[n] = '\n';
    text[n + 1] = '\0';
    lt_status st = write_text(path, text);
    lt__free(text);
    return st;
}

/* ---- JUnit XML ----------------------------------------------------------------------- */

/* XML 1.0 text: & < > " ' escaped; control characters other than tab,
 * newline and carriage return are not allowed at all, so they become '?'. */
static void xml_escape(FILE *f, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r') fputc('?', f);
            else fputc(*p, f);
        }
    }
}

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
    xml_escape(f, buf);
}

static void failure_text(FILE *f, const lt_sc_failure *x) {
    char line[2400];
    snprintf(line, sizeof line, "%s:%d:%d: %s\n", x->file, x->line, x->col, x->message ? x->message : "");
    xml_escape(f, line);
    if (x->rank >= 0) fprintf(f, "rank: %d\n", x->rank);
    if (x->index) fputs("index: ", f), xml_escape(f, x->index), fputc('\n', f);
    if (x->expected) fputs("expected: ", f), xml_escape(f, x->expected), fputc('\n', f);
    if (x->actual) fputs("actual: ", f), xml_escape(f, x->actual), fputc('\n', f);
    if (x->plan_step) fputs("produced by: ", f), xml_escape(f, x->plan_step), fputc('\n', f);
}

lt_status lt__sc_write_junit(const char *path, lt_sc_file *const *files, int nfiles, const sc_load_error *lerr,
                             int nlerr, const sc_run_summary *sum) {
    FILE *f = fopen(path, "w");
    if (!f) return lt__err(LT_IO, "cannot write %s: %s", path, strerror(errno));
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<testsuites name=\"localtensor\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.6f\">\n",
            sum->cases + nlerr, sum->failed, sum->errors, sum->not_run, sum->seconds);
    for (int i = 0; i < nlerr; i++) {
        fprintf(f, "  <testsuite name=\"");
        xml_escape(f, lerr[i].path);
        fprintf(f, "\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" time=\"0\">\n");
        fprintf(f, "    <testcase classname=\"");
        classname(f, lerr[i].path);
        fprintf(f, "\" name=\"(load)\" time=\"0\">\n      <error type=\"load\" message=\"");
        xml_escape(f, lerr[i].message ? lerr[i].message : "out of memory");
        fprintf(f, "\">");
        xml_escape(f, lerr[i].message ? lerr[i].message : "out of memory");
        fprintf(f, "</error>\n    </testcase>\n  </testsuite>\n");
    }
    for (int i = 0; i < nfiles; i++) {
        const lt_sc_file *file = files[i];
        int tests = 0, fails = 0, errs = 0, skipped = 0;
        double t = 0;
        for (int k = 0; k < file->nscen; k++)
            for (int c = 0; c < file->scen[k].ncases; c++) {
                const sc_case *cs = &file->scen[k].cases[c];
                if (!cs->selected) continue;
                tests++;
                fails += cs->res.status == LT_SC_FAIL;
                errs += cs->res.status == LT_SC_ERROR;
                skipped += cs->res.status == LT_SC_NOTRUN;
                t += cs->res.seconds;
            }
        if (!tests) continue;
        fprintf(f, "  <testsuite name=\"");
        xml_escape(f, file->path);
        fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.6f\">\n", tests, fails, errs,
                skipped, t);
        for (int k = 0; k < file->nscen; k++)
            for (int c = 0; c < file->scen[k].ncases; c++) {
                const sc_case *cs = &file->scen[k].cases[c];
                if (!cs->selected) continue;
                fprintf(f, "    <testcase classname=\"");
                classname(f, file->path);
                fprintf(f, "\" name=\"");
                xml_escape(f, cs->name);
                fprintf(f, "\" time=\"%.6f\"", cs->res.seconds);
                if (cs->res.status == LT_SC_PASS) {
                    fprintf(f, "/>\n");
                    continue;
                }
                fprintf(f, ">\n");
                if (cs->res.status == LT_SC_NOTRUN) {
                    fprintf(f, "      <skipped message=\"not run (--fail-fast)\"/>\n");
                } else {
                    const char *tag = cs->res.status == LT_SC_FAIL ? "failure" : "error";
                    const lt_sc_failure *first = NULL;
                    for (int x = 0; x < cs->res.nfails && !first; x++)
                        if (cs->res.status != LT_SC_FAIL || x == 0) first = &cs->res.fails[x];
                    if (cs->res.status == LT_SC_ERROR && cs->res.nfails) first = &cs->res.fails[cs->res.nfails - 1];
                    fprintf(f, "      <%s type=\"%s\" message=\"", tag,
                            cs->res.status == LT_SC_FAIL ? "check" : "step");
                    if (first && first->message) xml_escape(f, first->message);
                    fprintf(f, "\">");
                    for (int x = 0; x < cs->res.nfails; x++) failure_text(f, &cs->res.fails[x]);
                    fprintf(f, "</%s>\n", tag);
                }
                fprintf(f, "    </testcase>\n");
            }
        fprintf(f, "  </testsuite>\n");
    }
    fprintf(f, "</testsuites>\n");
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad) return lt__err(LT_IO, "cannot write %s", path);
    return LT_OK;
}
