/* tools/picture/run_files.c — `run --html` and `run --timeline` (lt_picture_run,
 * picture.h): the selected cases run once more through the scenario driver,
 * quietly and traced, their JSON report read back and drawn.
 *
 * The report says what ran, but not the mesh of each case nor the shapes it
 * declares; those come from loading each reported file again (the loader's
 * own structures, tools/scenario/scenario_impl.h), so the pictures never
 * guess a mesh.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/picture/picture_impl.h"
#include "tools/render/json_alloc.h"
#include "tools/render/render.h"
#include "tools/scenario/scenario.h"
#include "tools/scenario/scenario_impl.h"

#define MAX_REPORT_BYTES ((long)64 << 20) /* a report read back whole (parsed: about 10x) */
#define MAX_INFO_CASES   4096             /* cases of one sweep given a mesh */

/* The file at path, whole, NUL-terminated (caller frees with lt__free). */
static lt_status read_all(const char *path, char **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return lt__err(LT_IO, "cannot read the run's report %s: %s", path, strerror(errno));
    long n = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    if (n < 0 || n > MAX_REPORT_BYTES || fseek(f, 0, SEEK_SET)) {
        fclose(f);
        return lt__err(LT_UNSUPPORTED,
                       "not supported yet: drawing a run whose report is over %ld MiB "
                       "(select fewer cases with -k)",
                       MAX_REPORT_BYTES >> 20);
    }
    char *b = lt__malloc((size_t)n + 1);
    if (!b) return fclose(f), lt__err(LT_NOMEM, "out of memory reading the run's report");
    size_t got = fread(b, 1, (size_t)n, f);
    fclose(f);
    if (got != (size_t)n)
        return lt__free(b), lt__err(LT_IO, "cannot read the run's report %s", path);
    b[n] = '\0';
    *out = b;
    *len = (size_t)n;
    return LT_OK;
}

/* o[key] = item (key copied), or item deleted and the JSON failure flag set
 * (tools/render/json_alloc.h) when it cannot be added. */
static void add(cJSON *o, const char *key, cJSON *item) {
    if (o && item && cJSON_AddItemToObject(o, key, item)) return;
    cJSON_Delete(item);
    lt__json_push(NULL, NULL); /* sets the failure flag */
}

/* info["path\tcase"] = {"mesh", "tensors"} for the cases of one loaded file. */
static void info_file(cJSON *info, const char *path, lt_sc_file *sf) {
    char key[2048], name[1024];
    for (int i = 0; i < sf->nscen; i++) {
        sc_scenario *s = &sf->scen[i];
        int n = s->ncases;
        for (int k = 0; k < n && k < MAX_INFO_CASES; k++) {
            const lt_mesh *m = NULL;
            if (s->is_sweep)
                lt__sc_case_name(s, k, name, sizeof name, &m);
            else
                snprintf(name, sizeof name, "%s", s->cases[k].name), m = s->cases[k].mesh;
            if (!m) continue;
            snprintf(key, sizeof key, "%s\t%s", path, name);
            cJSON *e = cJSON_CreateObject();
            lt__json_put(e, "mesh", lt_json_mesh(m));
            if (!s->is_sweep) {
                cJSON *t = cJSON_CreateObject();
                for (int j = 0; j < s->cases[k].ntensors; j++) {
                    const sc_tensor_decl *d = &s->cases[k].tensors[j];
                    add(t, d->name, lt_json_i64_array(d->shape, d->ndim));
                }
                lt__json_put(e, "tensors", t);
            }
            add(info, key, e);
        }
    }
}

/* The meshes and shapes of every file the report names. */
static cJSON *make_info(const cJSON *report) {
    cJSON *info = cJSON_CreateObject();
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(report, "files")) {
        const char *path = lt__pic_str(f, "path");
        lt_sc_file *sf = NULL;
        if (lt_sc_load(path, &sf)) continue; /* a load error: the report says it */
        info_file(info, path, sf);
        lt_sc_file_free(sf);
    }
    return info;
}

typedef struct draw_ctx {
    const cJSON *report, *info;
} draw_ctx;

static lt_status write_html(FILE *f, void *ctx) {
    const draw_ctx *d = ctx;
    return lt_picture_run_html(f, d->report, d->info);
}

static lt_status write_timeline(FILE *f, void *ctx) {
    const draw_ctx *d = ctx;
    cJSON *t = lt_picture_timeline(d->report, d->info);
    if (!t) return lt__err(LT_NOMEM, "while drawing the timeline: %s", lt_errmsg());
    char *s = cJSON_PrintUnformatted(t);
    cJSON_Delete(t);
    if (!s) return lt__err(LT_NOMEM, "out of memory while printing the timeline");
    fprintf(f, "%s\n", s);
    cJSON_free(s);
    return LT_OK;
}

/* Runs the selection again into the JSON report at tmp; LT_OK when the
 * report was written (whatever the cases' outcome). */
static lt_status run_traced(const char *const *paths, int npaths, const lt_sc_options *opt,
                            const char *tmp) {
    FILE *null = fopen("/dev/null", "w");
    if (!null) return lt__err(LT_IO, "cannot open /dev/null: %s", strerror(errno));
    lt_sc_options o = *opt;
    o.out = o.err = null;
    o.json_path = tmp;
    o.junit_path = NULL;
    o.trace = 1;
    o.verbose = 0;
    o.color = o.progress = 0;
    lt_sc_run_paths(paths, npaths, &o);
    fclose(null);
    FILE *t = fopen(tmp, "rb");
    if (!t) return lt__err(LT_IO, "the run wrote no report to draw (%s)", tmp);
    fclose(t);
    return LT_OK;
}

lt_status lt_picture_run(const char *const *paths, int npaths, const struct lt_sc_options *opt,
                         const char *html, const char *timeline) {
    const char *base = html ? html : timeline;
    if (!base) return LT_OK;
    size_t n = strlen(base);
    char *tmp = lt__malloc(n + 10), *text = NULL;
    if (!tmp) return lt__err(LT_NOMEM, "out of memory");
    memcpy(tmp, base, n);
    memcpy(tmp + n, ".json.tmp", 10);
    size_t len = 0;
    /* a file that cannot be written is said before the cases run again */
    lt_status st = LT_OK;
    const char *paths_out[2] = {html, timeline}, *what[2] = {"--html", "--timeline"};
    for (int k = 0; k < 2 && !st; k++) {
        FILE *probe = paths_out[k] ? fopen(paths_out[k], "a") : NULL;
        if (paths_out[k] && !probe)
            st = lt__err(LT_IO, "%s %s: cannot write: %s", what[k], paths_out[k], strerror(errno));
        if (probe) fclose(probe);
    }
    if (!st) st = run_traced(paths, npaths, opt, tmp);
    if (!st) st = read_all(tmp, &text, &len);
    remove(tmp);
    lt__free(tmp);
    if (st) return st;
    lt__json_begin();
    const char *end = NULL;
    cJSON *report = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    lt__free(text);
    if (!report)
        return lt__err(lt__json_failed() ? LT_NOMEM : LT_INVALID,
                       "cannot read back the run's report");
    cJSON *info = make_info(report);
    draw_ctx d = {report, info};
    if (lt__json_failed()) st = lt__err(LT_NOMEM, "out of memory while reading the run's report");
    if (!st && html) st = lt_picture_write_file(html, "--html", write_html, &d);
    if (!st && timeline) st = lt_picture_write_file(timeline, "--timeline", write_timeline, &d);
    cJSON_Delete(info);
    cJSON_Delete(report);
    return st;
}
