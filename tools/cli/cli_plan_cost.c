/* tools/cli/cli_plan_cost.c — prices a redistribute's plan for the user: its
 * estimated time per step on a topology, the bytes on the busiest rank, and
 * PyTorch's greedy order beside it; --compare plans every objective.
 *
 * Why here and not in the plan table: the table's text is compared by
 * tests and scenarios, so these lines appear only when one of the cost
 * options is given. Topology files are JSON, read with cJSON (a tool's
 * dependency; the library takes the parsed lt_topology). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/cli/cli_plan_cost.h"

/* Reads file path into a new NUL-terminated buffer (*out, lt__free). */
static lt_status slurp(const char *path, char **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return lt__err(LT_INVALID,
                       "topology '%s': not a preset (uniform, nvlink-ib) and not a readable file",
                       path);
    char *buf = lt__malloc(65537);
    size_t n = buf ? fread(buf, 1, 65536, f) : 0;
    int big = buf && n == 65536 && fgetc(f) != EOF;
    fclose(f);
    if (!buf) return lt__err(LT_NOMEM, "out of memory reading topology '%s'", path);
    if (big) {
        lt__free(buf);
        return lt__err(LT_INVALID, "topology '%s': over 64 KiB", path);
    }
    buf[n] = 0;
    *out = buf;
    return LT_OK;
}

/* A dim's optional "algorithms": {"all_reduce": "tree", ...}: a collective's
 * name to ring, tree, direct or default. */
static lt_status dim_algorithms(const char *path, int i, const cJSON *m, lt_topology *t) {
    if (!m) return LT_OK;
    if (!cJSON_IsObject(m))
        return lt__err(LT_INVALID,
                       "topology '%s': dims[%d].algorithms must be an object such as "
                       "{\"all_reduce\": \"tree\"}",
                       path, i);
    for (const cJSON *e = m->child; e; e = e->next) {
        lt_coll k;
        lt_algo a;
        lt_status st = lt_coll_parse(e->string, &k);
        if (!st && (k == LT_COLL_BARRIER || k == LT_COLL_BROADCAST))
            st = lt__err(LT_INVALID, "not a step of a plan");
        if (!st && !cJSON_IsString(e))
            st = lt__err(LT_INVALID, "expected ring, tree, direct or default");
        if (!st) st = lt_algo_parse(e->valuestring, &a);
        if (st)
            return lt__err_ctx(st, "topology '%s': dims[%d].algorithms.%s", path, i,
                               e->string ? e->string : "?"),
                   st;
        t->algo[i][k] = (unsigned char)a;
    }
    return LT_OK;
}

/* One dim's entry: alpha_us >= 0 and beta_GBps > 0, finite. */
static lt_status dim_entry(const char *path, int i, const cJSON *d, lt_topology *t) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(d, "alpha_us");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(d, "beta_GBps");
    if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || !isfinite(a->valuedouble) ||
        !isfinite(b->valuedouble) || a->valuedouble < 0 || a->valuedouble > 1e9 ||
        b->valuedouble <= 0 || b->valuedouble > 1e9)
        return lt__err(
            LT_INVALID,
            "topology '%s': dims[%d] needs \"alpha_us\" (0 to 1e9) and \"beta_GBps\" (above 0, up "
            "to 1e9)",
            path, i);
    t->alpha_ps[i] = (uint64_t)llround(a->valuedouble * 1e6);
    uint64_t beta = (uint64_t)llround(b->valuedouble * 1e3); /* GB/s -> bytes per us */
    t->beta_bpus[i] = beta ? beta : 1;
    return dim_algorithms(path, i, cJSON_GetObjectItemCaseSensitive(d, "algorithms"), t);
}

static lt_status topology_file(const char *path, int mesh_ndim, lt_topology *t) {
    char *text;
    LT_TRY(slurp(path, &text));
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    lt__free(text);
    const cJSON *dims = root ? cJSON_GetObjectItemCaseSensitive(root, "dims") : NULL;
    lt_status st = LT_OK;
    if (!root)
        st = lt__err(LT_INVALID, "topology '%s': not valid JSON", path);
    else if (!cJSON_IsArray(dims) || cJSON_GetArraySize(dims) != mesh_ndim)
        st = lt__err(LT_INVALID,
                     "topology '%s': \"dims\" must be an array of %d entries, one per mesh dim",
                     path, mesh_ndim);
    memset(t, 0, sizeof *t);
    for (int i = 0; !st && i < mesh_ndim; i++)
        st = dim_entry(path, i, cJSON_GetArrayItem(dims, i), t);
    cJSON_Delete(root);
    return st;
}

/* The value of option `name` in argv (as `name V` or `name=V`), or NULL. */
static const char *value_of(const char *name, int argc, char **argv, int i, int *used) {
    size_t n = strlen(name);
    *used = 0;
    if (strncmp(argv[i], name, n)) return NULL;
    if (argv[i][n] == '=') return argv[i] + n + 1;
    if (argv[i][n]) return NULL;
    *used = 1;
    return i + 1 < argc ? argv[i + 1] : NULL;
}

int lt_cli_cost_take(lt_cli_cost *c, int argc, char **argv, char **kept) {
    static const char *const names[3] = {"--objective", "--topology", "--moves"};
    int n = 0;
    for (int i = 0; i < argc; i++) {
        const char **slot[3] = {&c->objective_s, &c->topology_s, &c->moves_s};
        int hit = -1, used = 0;
        const char *v = NULL;
        for (int q = 0; q < 3 && hit < 0 && i > 0; q++) {
            v = value_of(names[q], argc, argv, i, &used);
            if (v || used) hit = q;
        }
        if (hit >= 0 && !v) {
            lt__err(LT_INVALID, "%s needs a value", names[hit]);
            return -1;
        }
        if (hit >= 0)
            *slot[hit] = v;
        else if (i > 0 && !strcmp(argv[i], "--compare"))
            c->compare = 1;
        else
            kept[n++] = argv[i];
        i += used;
    }
    kept[n] = NULL;
    return n;
}

lt_status lt_cli_cost_parse(lt_cli_cost *c, int argc, char **argv) {
    int mesh_ndim = 1, used;
    lt_mesh m;
    for (int i = 1; i < argc; i++) {
        const char *v = value_of("--mesh", argc, argv, i, &used);
        if (v && !lt_mesh_parse(v, &m)) mesh_ndim = m.ndim;
    }
    lt__err_clear(); /* a bad --mesh is the command's to report */
    c->shown = c->objective_s || c->topology_s || c->moves_s || c->compare;
    memset(&c->cost, 0, sizeof c->cost);
    c->cost.objective = LT_OBJECTIVE_TIME; /* the default: what a user waits for */
    c->cost.moves = LT_MOVES_COLLECTIVES;
    lt_status st;
    if (c->objective_s && (st = lt_objective_parse(c->objective_s, &c->cost.objective)))
        return lt__err_ctx(st, "--objective"), st;
    if (c->moves_s && (st = lt_moveset_parse(c->moves_s, &c->cost.moves)))
        return lt__err_ctx(st, "--moves"), st;
    const char *t = c->topology_s ? c->topology_s : "uniform";
    if (!strcmp(t, "uniform") || !strcmp(t, "nvlink-ib"))
        st = lt_topology_preset(t, mesh_ndim, &c->cost.topo);
    else
        st = topology_file(t, mesh_ndim, &c->cost.topo);
    if (st) return lt__err_ctx(st, "--topology"), st;
    return LT_OK;
}

/* "1.234 us" from picoseconds. */
static const char *us(uint64_t ps, char *buf, size_t n) {
    snprintf(buf, n, "%.3f us", (double)ps / 1e6);
    return buf;
}

/* One line: the plan's bytes in all and on the busiest rank, and its time. */
static void summary(FILE *f, const char *label, const lt_plan *p, const lt_topology *t) {
    char b[48];
    fprintf(f,
            "%s: %zu B in all, %zu B on the busiest rank (summed over steps), est. %s, %d step%s\n",
            label, p->total_bytes, lt_plan_max_rank_bytes(p),
            us(lt_plan_time_ps(p, t), b, sizeof b), p->nsteps, p->nsteps == 1 ? "" : "s");
}

/* --compare: the plan of every objective, one line of steps each. */
static lt_status compare(FILE *f, const lt_cli_cost *c, const lt_spec *src, const lt_spec *dst) {
    fprintf(f, "\nplans by objective (moves %s):\n", lt_moveset_name(c->cost.moves));
    for (int o = 0; o < LT_OBJECTIVE_COUNT; o++) {
        lt_plan_cost pc = c->cost;
        pc.objective = (lt_objective)o;
        lt_plan *p;
        LT_TRY(lt_plan_redistribute_cost(src, dst, &pc, &p));
        fprintf(f, "  %-15s", lt_objective_name(pc.objective));
        for (int s = 0; s < p->nsteps; s++) {
            char act[96];
            const lt_plan_step *st = &p->steps[s];   /* a flattened group: (0..1) */
            fprintf(f, "%s%s(%d", s ? ", " : "", lt_plan_step_action(st, act, sizeof act),
                    st->mesh_dim);
            if (st->mesh_span > 1) fprintf(f, "..%d", st->mesh_dim + st->mesh_span - 1);
            fprintf(f, ")");
        }
        summary(f, p->nsteps ? "" : "(no steps)", p, &pc.topo);
        lt_plan_free(p);
    }
    return LT_OK;
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* One line of what every rank receives in one step: each rank's bytes on
 * a mesh of up to 16 ranks; beyond, the busiest rank, the median and how
 * many ranks receive nothing. scr: world entries of scratch. */
static void rank_bytes_line(FILE *f, int step, const lt_trace_event *e, size_t *scr) {
    fprintf(f, "  step %d:", step);
    if (e->world <= 16) {
        for (int r = 0; r < e->world; r++) fprintf(f, " %zu", e->recv[r]);
        fprintf(f, "\n");
        return;
    }
    int idle = 0, busiest = 0;
    for (int r = 0; r < e->world; r++) {
        scr[r] = e->recv[r];
        idle += !e->recv[r];
        if (e->recv[r] > e->recv[busiest]) busiest = r;
    }
    qsort(scr, (size_t)e->world, sizeof *scr, cmp_size);
    fprintf(f, " busiest rank %d %zu B, median %zu B, %d of %d ranks idle\n", busiest,
            e->recv[busiest], scr[e->world / 2], idle, e->world);
}

/* "bytes received per rank": one line per step that communicates, from the
 * plan's comm trace on paper (lt_plan_trace; nothing runs). */
static lt_status rank_bytes(FILE *f, const lt_plan *p) {
    lt_trace *tr = NULL;
    size_t *scr = lt__malloc(sizeof(size_t) * (size_t)p->mesh.world);
    lt_status st = scr ? lt_trace_new(p->mesh.world, &tr) : lt__err(LT_NOMEM, "out of memory");
    if (!st) st = lt_plan_trace(p, tr);
    if (!st && p->ncomm)
        fprintf(f, "bytes received per rank%s:\n", p->mesh.world <= 16 ? " (rank 0 first)" : "");
    size_t ev = 0;
    for (int s = 0; !st && s < p->nsteps; s++) {
        lt_trace_event e;
        if (!p->steps[s].comm) continue;
        st = lt_trace_get(tr, ev++, &e);
        if (!st) rank_bytes_line(f, s + 1, &e, scr);
    }
    lt_trace_free(tr);
    lt__free(scr);
    return st;
}

lt_status lt_cli_cost_print(FILE *f, const lt_cli_cost *c, const lt_plan *p) {
    if (!c->shown) return LT_OK;
    const lt_topology *t = &c->cost.topo;
    char b[48];
    fprintf(f, "\nestimated time (objective %s, moves %s, topology %s):",
            lt_objective_name(c->cost.objective), lt_moveset_name(c->cost.moves),
            c->topology_s ? c->topology_s : "uniform");
    for (int s = 0; s < p->nsteps; s++)
        fprintf(f, " step %d %s;", s + 1, us(lt_plan_step_time_ps(p, s, t), b, 48));
    fprintf(f, " total %s\n", us(lt_plan_time_ps(p, t), b, sizeof b));
    LT_TRY(rank_bytes(f, p));
    lt_spec sp, dst;
    const lt_spec *src = &sp;
    LT_TRY(lt_spec_init(&p->mesh, p->dtype, p->ndim, p->shape, p->src, p->mesh.ndim, &sp));
    LT_TRY(lt_spec_init(&p->mesh, p->dtype, p->ndim, p->shape, p->dst, p->mesh.ndim, &dst));
    lt_redistribute_opts g;
    memset(&g, 0, sizeof g);
    g.planner = LT_PLANNER_GREEDY;
    lt_plan *pg;
    LT_TRY(lt_plan_redistribute_spec(src, &dst, &g, &pg));
    summary(f, "PyTorch's order (greedy)", pg, t);
    summary(f, "this plan", p, t);
    lt_plan_free(pg);
    return c->compare ? compare(f, c, src, &dst) : LT_OK;
}

cJSON *lt_cli_cost_json(const lt_cli_cost *c, const lt_plan *p) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    const lt_topology *t = &c->cost.topo;
    cJSON_AddStringToObject(o, "objective", lt_objective_name(c->cost.objective));
    cJSON_AddStringToObject(o, "moves", lt_moveset_name(c->cost.moves));
    cJSON_AddStringToObject(o, "topology", c->topology_s ? c->topology_s : "uniform");
    cJSON *st = cJSON_AddArrayToObject(o, "step_time_ps");
    for (int s = 0; st && s < p->nsteps; s++)
        cJSON_AddItemToArray(st, cJSON_CreateNumber((double)lt_plan_step_time_ps(p, s, t)));
    cJSON_AddNumberToObject(o, "time_ps", (double)lt_plan_time_ps(p, t));
    cJSON_AddNumberToObject(o, "max_rank_bytes", (double)lt_plan_max_rank_bytes(p));
    cJSON_AddNumberToObject(o, "total_bytes", (double)p->total_bytes);
    return o;
}
