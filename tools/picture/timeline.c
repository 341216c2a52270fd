/* tools/picture/timeline.c — a run as Chrome Trace Event JSON
 * (lt_picture_timeline, picture.h), and the walk over a run report's cases
 * that the HTML page shares (picture_impl.h).
 *
 * The format is the one chrome://tracing and Perfetto open: an object with
 * "traceEvents"; each event has ph (phase), ts (microseconds), pid, tid and
 * name; "X" events also dur, flow events ("s", "t", "f") an id that joins
 * them. Time here is the order of the steps, not a measurement.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/picture/picture_impl.h"
#include "tools/render/json_alloc.h"

#define STEP_US 10 /* one step's slot on the time axis */
#define BOX_US  8  /* an event's duration inside the slot */

const char *lt__pic_str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}

int lt__pic_is_divergence(const cJSON *x) {
    return !strncmp(lt__pic_str(x, "message"), "first divergence", 16);
}

/* The line of "FILE:LINE:..." at p (0 when none). */
static int line_at(const char *p, size_t flen) {
    return p[flen] == ':' ? atoi(p + flen + 1) : 0;
}

/* The line failure x names: the first "FILE:LINE" of its message (a
 * divergence names the step it found there), else its own line. */
static int failure_line(const cJSON *x) {
    const char *file = lt__pic_str(x, "file"), *msg = lt__pic_str(x, "message");
    size_t n = strlen(file);
    for (const char *p = n ? strstr(msg, file) : NULL; p; p = strstr(p + 1, file))
        if (line_at(p, n) > 0) return line_at(p, n);
    const cJSON *line = cJSON_GetObjectItemCaseSensitive(x, "line");
    return cJSON_IsNumber(line) ? line->valueint : 0;
}

int lt__pic_failure_step(const cJSON *c, const cJSON *x, int *exact) {
    const cJSON *steps =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "trace"), "steps");
    const char *file = lt__pic_str(x, "file");
    size_t n = strlen(file);
    int line = failure_line(x), i = 0;
    *exact = 0;
    if (line <= 0) return -1;
    const cJSON *s;
    cJSON_ArrayForEach(s, steps) {
        const char *at = lt__pic_str(s, "at");
        int l = strncmp(at, file, n) ? 0 : line_at(at, n);
        if (l == line) return *exact = 1, i;
        if (l > line) return i;
        i++;
    }
    return i;
}

/* The mesh of an info entry ({"shape": [...], "names": [...]}); 0 when absent or bad. */
static int mesh_of(const cJSON *m, lt_mesh *out) {
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(m, "shape"),
                *nm = cJSON_GetObjectItemCaseSensitive(m, "names");
    int shape[LT_MESH_MAX_DIMS], n = cJSON_GetArraySize(sh);
    const char *names[LT_MESH_MAX_DIMS];
    if (!cJSON_IsArray(sh) || n < 1 || n > LT_MESH_MAX_DIMS) return 0;
    for (int i = 0; i < n; i++) {
        const cJSON *v = cJSON_GetArrayItem(sh, i), *w = cJSON_GetArrayItem(nm, i);
        if (!cJSON_IsNumber(v)) return 0;
        shape[i] = v->valueint;
        names[i] = cJSON_IsString(w) ? w->valuestring : NULL;
    }
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(m, "ranks"),
                *ws = cJSON_GetObjectItemCaseSensitive(m, "world_size");
    if (lt_mesh_init(out, n, shape, names) != LT_OK) return 0;
    if (!cJSON_IsArray(ids)) return 1;
    if (cJSON_GetArraySize(ids) != out->world || out->world > LT_MESH_MAX_IDS) return 0;
    int id[LT_MESH_MAX_IDS];   /* a mesh in another rank order (docs/SEMANTICS.md §1.1) */
    for (int p = 0; p < out->world; p++) {
        const cJSON *v = cJSON_GetArrayItem(ids, p);
        if (!cJSON_IsNumber(v)) return 0;
        id[p] = v->valueint;
    }
    return lt_mesh_init_ranks(out, n, shape, id, cJSON_IsNumber(ws) ? ws->valueint : 0, names) ==
           LT_OK;
}

/* A case's tracks are its ranks by ascending rank id (the per-rank lists of
 * the trace are in that order): the track of mesh position pos, the track
 * of rank id `id` (-1 when the mesh leaves it out), the rank id of track k. */
static int pos_lane(const lt__pic_case *pc, int pos) {
    if (!pc->has_mesh || !pc->mesh.permuted) return pos;
    int k = 0;
    for (int q = 0; q < pc->mesh.world; q++) k += pc->mesh.ids[q] < pc->mesh.ids[pos];
    return k;
}

static int id_lane(const lt__pic_case *pc, int id) {
    if (!pc->has_mesh || !pc->mesh.permuted) return id >= 0 && id < pc->world ? id : -1;
    int pos = lt_mesh_pos_of(&pc->mesh, id);
    return pos < 0 ? -1 : pos_lane(pc, pos);
}

static int lane_id(const lt__pic_case *pc, int k) {
    for (int q = 0; pc->has_mesh && pc->mesh.permuted && q < pc->mesh.world; q++)
        if (pos_lane(pc, q) == k) return pc->mesh.ids[q];
    return k;
}

static void case_fill(const cJSON *info, lt__pic_case *pc) {
    char key[2048];
    snprintf(key, sizeof key, "%s\t%s", pc->path, lt__pic_str(pc->c, "name"));
    const cJSON *e = info ? cJSON_GetObjectItemCaseSensitive(info, key) : NULL;
    pc->has_mesh = e && mesh_of(cJSON_GetObjectItemCaseSensitive(e, "mesh"), &pc->mesh);
    pc->tensors = e ? cJSON_GetObjectItemCaseSensitive(e, "tensors") : NULL;
    pc->world = pc->has_mesh ? pc->mesh.world : 1;
    const cJSON *tot =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pc->c, "trace"), "total");
    int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(tot, "bytes_sent"));
    if (!pc->has_mesh && n > 0) pc->world = n;
}

lt_status lt__pic_walk(const cJSON *report, const cJSON *info,
                       lt_status (*fn)(const lt__pic_case *pc, void *ctx), void *ctx) {
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(report, "files"), *f, *s, *c;
    if (!cJSON_IsArray(files)) return lt__err(LT_INVALID, "not a run report: no \"files\" array");
    lt__pic_case pc;
    memset(&pc, 0, sizeof pc);
    cJSON_ArrayForEach(f, files) {
        pc.path = lt__pic_str(f, "path");
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(f, "scenarios")) {
            pc.scenario = lt__pic_str(s, "name");
            cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(s, "cases")) {
                pc.c = c;
                case_fill(info, &pc);
                LT_TRY(fn(&pc, ctx));
                pc.index++;
            }
        }
    }
    return LT_OK;
}

/* ---- events ------------------------------------------------------------------------- */

typedef struct tl_ctx {
    cJSON *events;
    int pid0; /* first pid of the current case */
    int flow; /* last flow id */
} tl_ctx;

static cJSON *event(tl_ctx *t, const char *ph, const char *name, long ts, int pid) {
    cJSON *e = cJSON_CreateObject();
    lt__json_put(e, "name", cJSON_CreateString(name));
    lt__json_put(e, "ph", cJSON_CreateString(ph));
    lt__json_put(e, "ts", cJSON_CreateNumber((double)ts));
    lt__json_put(e, "pid", cJSON_CreateNumber(pid));
    lt__json_put(e, "tid", cJSON_CreateNumber(0));
    lt__json_push(t->events, e);
    return e;
}

/* Flow events joining the members of every group of comm entry cm. */
static void flows(tl_ctx *t, const lt__pic_case *pc, const cJSON *cm, long ts) {
    int md = cJSON_GetObjectItemCaseSensitive(cm, "mesh_dim")
                 ? cJSON_GetObjectItemCaseSensitive(cm, "mesh_dim")->valueint
                 : -1;
    int ranks[LT_PIC_MAX_LANES * 64], ng = 1, gs = pc->world;
    if (pc->has_mesh && md >= 0 && md < pc->mesh.ndim)
        ng = lt_mesh_ngroups(&pc->mesh, md), gs = pc->mesh.shape[md];
    else if (cJSON_GetObjectItemCaseSensitive(cm, "group_size") &&
             cJSON_GetObjectItemCaseSensitive(cm, "group_size")->valueint != pc->world)
        return; /* groups unknown without the mesh */
    if (gs < 2 || gs > (int)(sizeof ranks / sizeof ranks[0])) return;
    const char *name = lt__pic_str(cm, "collective");
    for (int g = 0; g < ng; g++) {
        if (pc->has_mesh && md >= 0 && md < pc->mesh.ndim)
            lt_mesh_group(&pc->mesh, md, g, ranks);
        else
            for (int i = 0; i < gs; i++) ranks[i] = i;
        int id = ++t->flow;
        for (int i = 0; i < gs; i++) {
            const char *ph = i == 0 ? "s" : i + 1 == gs ? "f" : "t";
            cJSON *e = event(t, ph, name, ts + 1 + i % 4, t->pid0 + pos_lane(pc, ranks[i]));
            lt__json_put(e, "id", cJSON_CreateNumber(id));
            lt__json_put(e, "cat", cJSON_CreateString("matched call"));
            if (i + 1 == gs) lt__json_put(e, "bp", cJSON_CreateString("e"));
        }
    }
}

/* "X" events of one trace step on every rank (one per comm entry, or one for the step). */
static void step_events(tl_ctx *t, const lt__pic_case *pc, const cJSON *st, long ts) {
    const cJSON *comm = cJSON_GetObjectItemCaseSensitive(st, "comm"), *cm;
    int n = cJSON_GetArraySize(comm), k = 0;
    char name[160];
    if (n == 0) {
        snprintf(name, sizeof name, "%s", lt__pic_str(st, "kind"));
        for (int r = 0; r < pc->world; r++) {
            cJSON *e = event(t, "X", name, ts, t->pid0 + r);
            lt__json_put(e, "dur", cJSON_CreateNumber(BOX_US));
            cJSON *a = cJSON_CreateObject();
            lt__json_put(a, "at", cJSON_CreateString(lt__pic_str(st, "at")));
            lt__json_put(e, "args", a);
        }
        return;
    }
    cJSON_ArrayForEach(cm, comm) {
        long at = ts + (long)k * BOX_US / n;
        const cJSON *sent = cJSON_GetObjectItemCaseSensitive(cm, "bytes_sent");
        const cJSON *recv = cJSON_GetObjectItemCaseSensitive(cm, "bytes_recv");
        for (int r = 0; r < pc->world; r++) {
            cJSON *e = event(t, "X", lt__pic_str(cm, "collective"), at, t->pid0 + r);
            lt__json_put(e, "dur", cJSON_CreateNumber(BOX_US / n > 0 ? BOX_US / n : 1));
            cJSON *a = cJSON_CreateObject();
            lt__json_put(a, "at", cJSON_CreateString(lt__pic_str(st, "at")));
            const cJSON *md = cJSON_GetObjectItemCaseSensitive(cm, "mesh_dim");
            lt__json_put(a, "mesh_dim", cJSON_CreateNumber(md ? md->valuedouble : -1));
            const cJSON *bs = cJSON_GetArrayItem(sent, r), *br = cJSON_GetArrayItem(recv, r);
            if (bs) lt__json_put(a, "bytes_sent", cJSON_CreateNumber(bs->valuedouble));
            if (br) lt__json_put(a, "bytes_recv", cJSON_CreateNumber(br->valuedouble));
            lt__json_put(e, "args", a);
        }
        flows(t, pc, cm, at);
        k++;
    }
}

/* Instant events of a failure: a would-hang report's members, or a divergence. */
static void failure_events(tl_ctx *t, const lt__pic_case *pc, const cJSON *x, long end) {
    const cJSON *hang = cJSON_GetObjectItemCaseSensitive(x, "hang"), *g, *m;
    char name[1400];
    /* each rank once: where it waits or that it ended; waiting elsewhere only
     * for a rank no group shows otherwise */
    unsigned char *seen = hang ? lt__calloc((size_t)pc->world, 1) : NULL;
    for (int pass = 0; seen && pass < 2; pass++)
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(hang, "groups")) {
            cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(g, "members")) {
                const cJSON *rk = cJSON_GetObjectItemCaseSensitive(m, "rank");   /* an id */
                int ln = cJSON_IsNumber(rk) ? id_lane(pc, rk->valueint) : -1;
                if (ln < 0) continue;
                const char *state = lt__pic_str(m, "state");
                if (seen[ln] || (strcmp(state, "waiting_elsewhere") == 0) != pass) continue;
                seen[ln] = 1;
                if (!strcmp(state, "finished"))
                    snprintf(name, sizeof name, "finished after %s", lt__pic_str(m, "at"));
                else
                    snprintf(name, sizeof name, "%s: %s at %s", state, lt__pic_str(m, "call"),
                             lt__pic_str(m, "at"));
                cJSON *e = event(t, "i", name, end, t->pid0 + ln);
                lt__json_put(e, "s", cJSON_CreateString("p"));
            }
        }
    if (hang && !seen) lt__json_push(NULL, NULL); /* out of memory: the document fails */
    lt__free(seen);
    if (!lt__pic_is_divergence(x)) return;
    int exact, step = lt__pic_failure_step(pc->c, x, &exact);
    long ts = step >= 0 ? (long)(step + 1) * STEP_US - (exact ? 0 : STEP_US / 2) : end;
    const cJSON *rk = cJSON_GetObjectItemCaseSensitive(x, "rank");
    for (int r = 0; r < pc->world; r++) {
        if (cJSON_IsNumber(rk) && id_lane(pc, rk->valueint) != r) continue;
        cJSON *e = event(t, "i", "first divergence", ts, t->pid0 + r);
        lt__json_put(e, "s", cJSON_CreateString("p"));
        cJSON *a = cJSON_CreateObject();
        lt__json_put(a, "message", cJSON_CreateString(lt__pic_str(x, "message")));
        lt__json_put(e, "args", a);
    }
}

static lt_status tl_case(const lt__pic_case *pc, void *ctx) {
    tl_ctx *t = ctx;
    char name[1200];
    for (int r = 0; r < pc->world; r++) {
        cJSON *e = event(t, "M", "process_name", 0, t->pid0 + r);
        cJSON *a = cJSON_CreateObject();
        snprintf(name, sizeof name, "%s: rank %d", lt__pic_str(pc->c, "name"), lane_id(pc, r));
        lt__json_put(a, "name", cJSON_CreateString(name));
        lt__json_put(e, "args", a);
        e = event(t, "M", "process_sort_index", 0, t->pid0 + r);
        a = cJSON_CreateObject();
        lt__json_put(a, "sort_index", cJSON_CreateNumber(t->pid0 + r));
        lt__json_put(e, "args", a);
    }
    const cJSON *steps =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pc->c, "trace"), "steps");
    const cJSON *st, *x;
    long ts = STEP_US;
    cJSON_ArrayForEach(st, steps) {
        step_events(t, pc, st, ts);
        ts += STEP_US;
    }
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(pc->c, "failures"))
        failure_events(t, pc, x, ts);
    t->pid0 += pc->world;
    return lt__json_failed() ? lt__err(LT_NOMEM, "out of memory while building the timeline")
                             : LT_OK;
}

cJSON *lt_picture_timeline(const cJSON *report, const cJSON *info) {
    lt__json_begin();
    cJSON *root = cJSON_CreateObject();
    tl_ctx t = {NULL, 1, 0};
    t.events = cJSON_AddArrayToObject(root, "traceEvents");
    lt_status st = t.events ? lt__pic_walk(report, info, tl_case, &t) : LT_NOMEM;
    lt__json_put(root, "displayTimeUnit", cJSON_CreateString("ms"));
    cJSON *o = cJSON_CreateObject();
    lt__json_put(o, "clock", cJSON_CreateString("step order, 10 us a step; not measured time"));
    lt__json_put(root, "otherData", o);
    if (st || lt__json_failed()) {
        if (st == LT_NOMEM || (!st && lt__json_failed()))
            lt__err(LT_NOMEM, "out of memory while building the timeline");
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}
