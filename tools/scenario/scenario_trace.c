/* tools/scenario/scenario_trace.c — `localtensor run --trace`: an op-by-op
 * log and a communication table per step (docs/SEMANTICS.md §11.7).
 *
 * For every step that runs an op, a redistribute or a collective, the trace
 * writes (text and JSON):
 *   - the op with each input's placements -> the output placements, in the
 *     spirit of PyTorch's DebugMode;
 *   - every implicit redistribute of an input, with its plan (the same table
 *     `redistribute --explain` prints);
 *   - the step's collectives, read off the comm trace: collective, mesh dim,
 *     number of groups, group size, bytes sent and received per rank (the
 *     byte model of collectives_sim/trace.h), in the spirit of
 *     CommDebugMode;
 *   - a "silent replication" warning when an op's propagation turns a
 *     sharded input (S or SS on some mesh dim) into a replicated one (R).
 * The case ends with totals: events per collective and bytes per rank.
 *
 * Hooks: lt__sc_trace_begin / _step / _end from scenario_run.c, and
 * lt__sc_trace_op from the op step. Out of memory anywhere in the trace makes
 * the case an error ("out of memory while recording the trace"), as for the
 * JSON report's plans: a report with holes would read as a complete one.
 */
#include <string.h>

#include "localtensor/collectives_sim/trace.h"
#include "kernels/alloc.h"
#include "localtensor/ops.h"
#include "localtensor/plan.h"
#include "localtensor/ops/ops_impl.h"
#include "localtensor/plan/plan_impl.h"
#include "localtensor/pytorch_bugs.h"
#include "tools/render/json_alloc.h"
#include "tools/render/render.h"
#include "tools/scenario/scenario_impl.h"

typedef struct sc_trace {
    char *text;                /* the case's trace so far */
    size_t len, cap;
    char *pend;                /* lines of the current step (ops, warnings) */
    size_t plen, pcap;
    int failed;                /* out of memory: the trace is dropped */
    int world;
    const lt_mesh *mesh;       /* the case's */
    int order[LT_MESH_MAX_IDS];/* on a permuted mesh: the positions by ascending rank id */
    size_t *sent, *recv;       /* (world) totals over the case */
    size_t ncoll[LT_COLL_COUNT];
    size_t nwarn;
    size_t nbugs;              /* known-PyTorch-bug warnings (localtensor/pytorch_bugs.h) */
    cJSON *steps;              /* JSON array of steps */
    cJSON *ops;                /* JSON array of the current step's ops */
    cJSON *warnings;           /* JSON array of the current step's warnings */
} sc_trace;

static void vadd(sc_trace *t, int pending, const char *fmt, va_list ap) {
    char **buf = pending ? &t->pend : &t->text;
    size_t *len = pending ? &t->plen : &t->len, *cap = pending ? &t->pcap : &t->cap;
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0 || t->failed) return;
    if (*len + (size_t)n + 1 > *cap) {
        size_t nc = (*cap ? *cap * 2 : 1024);
        while (nc < *len + (size_t)n + 1) nc *= 2;
        char *nb = lt__realloc(*buf, nc);
        if (!nb) {
            t->failed = 1;
            return;
        }
        *buf = nb, *cap = nc;
    }
    vsnprintf(*buf + *len, *cap - *len, fmt, ap);
    *len += (size_t)n;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void add(sc_trace *t, int pending, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vadd(t, pending, fmt, ap);
    va_end(ap);
}

/* Entry i of a per-rank list: rank i's, or on a permuted mesh the i-th
 * rank id's (ascending; docs/SEMANTICS.md §1.1). */
static size_t at_rank(const sc_trace *t, const size_t *v, int n, int i) {
    return t->mesh->permuted && n == t->mesh->world ? v[t->order[i]] : v[i];
}

static void add_sizes(sc_trace *t, const size_t *v, int n) {
    add(t, 0, "[");
    for (int i = 0; i < n; i++) add(t, 0, "%s%zu", i ? ", " : "", at_rank(t, v, n, i));
    add(t, 0, "]");
}

/* On a permuted mesh, the groups of a comm table row by rank id
 * ("groups [0,1] [2,3]"; the first 16). */
static void add_groups(sc_trace *t, int md) {
    const lt_mesh *m = t->mesh;
    int ng = lt_mesh_ngroups(m, md), pos[LT_MESH_MAX_IDS];
    add(t, 0, "         %-15s", "groups");
    for (int g = 0; g < ng && g < 16; g++) {
        lt_mesh_group(m, md, g, pos);
        for (int c = 0; c < m->shape[md]; c++)
            add(t, 0, "%s%d", c ? "," : " [", lt_mesh_rank_id(m, pos[c]));
        add(t, 0, "]");
    }
    add(t, 0, "%s\n", ng > 16 ? " ..." : "");
}

/* The plan's table (lt_plan_format), indented under the current line. */
static void add_plan(sc_trace *t, int pending, const lt_plan *p) {
    int need = lt_plan_format(p, NULL, 0);
    char *pt = need >= 0 ? lt__malloc((size_t)need + 1) : NULL;
    if (!pt) {
        t->failed = 1;
        return;
    }
    lt_plan_format(p, pt, (size_t)need + 1);
    for (char *line = pt; *line;) {
        char *nl = strchr(line, '\n');
        size_t l = nl ? (size_t)(nl - line) : strlen(line);
        add(t, pending, "    %.*s\n", (int)l, line);
        line += l + (nl ? 1 : 0);
    }
    lt__free(pt);
}

/* The warning of every known PyTorch bug in hits (localtensor/pytorch_bugs.h),
 * one line each, also kept for the step's JSON. */
static void add_bug_warnings(sc_trace *t, int pending, uint32_t hits) {
    for (int b = 0; b < LT_PYTORCH_BUG_COUNT; b++) {
        if (!(hits >> b & 1)) continue;
        char w[768];
        lt_pytorch_bug_format((lt_pytorch_bug)b, w, sizeof w);
        add(t, pending, "  %s\n", w);
        if (!t->warnings) t->warnings = cJSON_CreateArray();
        lt__json_push(t->warnings, cJSON_CreateString(w + strlen("warning: ")));
        t->nbugs++;
    }
}

static cJSON *json_sizes(const sc_trace *t, const size_t *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        lt__json_push(a, cJSON_CreateNumber((double)at_rank(t, v, n, i)));
    return a;
}

int lt__sc_trace_begin(sc_run_ctx *rc) {
    sc_trace *t = lt__calloc(1, sizeof *t);
    if (!t) return 1;
    t->world = rc->c->mesh->world;
    t->mesh = rc->c->mesh;
    for (int id = 0, k = 0; t->mesh->permuted && id < t->mesh->world_size; id++)
        if (lt_mesh_pos_of(t->mesh, id) >= 0) t->order[k++] = lt_mesh_pos_of(t->mesh, id);
    t->sent = lt__calloc((size_t)t->world, sizeof *t->sent);
    t->recv = lt__calloc((size_t)t->world, sizeof *t->recv);
    if (!rc->plans) lt__json_begin();
    t->steps = cJSON_CreateArray();
    if (!t->sent || !t->recv || !t->steps) t->failed = 1;
    char m[128];
    lt_mesh_format(rc->c->mesh, m, sizeof m);
    add(t, 0, "trace of %s (mesh %s, %d ranks)\n", rc->c->name, m, t->world);
    rc->trace = t;
    return 0;
}

static void fmt_pl(const lt_placement *pl, int n, char *buf, size_t len) {
    lt_placements_format(pl, n, buf, len);
}

/* The op's inputs: "name [placements], ..." into the text, and their JSON
 * entries (returned; the caller owns it). */
static cJSON *trace_inputs(sc_trace *t, const lt_mesh *m, const char *const *names,
                           const lt_dtensor *const *in, int nin, const lt_op_plan *plan) {
    char buf[256];
    cJSON *ins = cJSON_CreateArray();
    for (int k = 0; k < nin; k++) {
        fmt_pl(in[k]->placements, m->ndim, buf, sizeof buf);
        add(t, 1, "%s%s %s", k ? ", " : "", names[k], buf);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "name", names[k]);
        lt__json_put(j, "placements", lt_json_placements(in[k]->placements, m->ndim));
        lt__json_put(j, "target", lt_json_placements(plan->in_target[k], m->ndim));
        cJSON_AddBoolToObject(j, "redistributed", plan->in_redistribute[k] != 0);
        lt__json_push(ins, j);
    }
    return ins;
}

void lt__sc_trace_op(sc_run_ctx *rc, lt_op_kind op, const char *const *names,
                     const lt_dtensor *const *in, int nin, const lt_op_plan *plan) {
    sc_trace *t = rc->trace;
    if (!t || !plan) return;
    const lt_mesh *m = rc->c->mesh;
    char buf[256], buf2[256];
    if (!t->ops) t->ops = cJSON_CreateArray();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", lt_op_name(op));
    add(t, 1, "  %s(", lt_op_name(op));
    cJSON *ins = trace_inputs(t, m, names, in, nin, plan);
    fmt_pl(plan->out_pl, m->ndim, buf, sizeof buf);
    add(t, 1, ") -> %s  (rules: %s)\n", buf, lt_op_rules_name(plan->rules));
    cJSON_AddStringToObject(o, "rules", lt_op_rules_name(plan->rules));
    if (plan->pytorch_refuses[0]) { /* the result here is the correct one; PyTorch raises */
        add(t, 1, "  note: %s\n", plan->pytorch_refuses);
        cJSON_AddStringToObject(o, "pytorch_refuses", plan->pytorch_refuses);
    }
    lt__json_put(o, "inputs", ins);
    lt__json_put(o, "output", lt_json_placements(plan->out_pl, m->ndim));
    cJSON *reds = cJSON_CreateArray();
    for (int k = 0; k < nin; k++) {
        if (!plan->in_redistribute[k]) continue;
        fmt_pl(in[k]->placements, m->ndim, buf, sizeof buf);
        fmt_pl(plan->in_target[k], m->ndim, buf2, sizeof buf2);
        add(t, 1, "  implicit redistribute of input %d '%s': %s -> %s\n", k + 1, names[k], buf,
            buf2);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "input", k + 1);
        cJSON_AddStringToObject(j, "name", names[k]);
        lt__json_put(j, "from", lt_json_placements(in[k]->placements, m->ndim));
        lt__json_put(j, "to", lt_json_placements(plan->in_target[k], m->ndim));
        lt_plan *p = NULL;
        if (!lt_plan_redistribute(m, in[k]->dtype, in[k]->ndim, in[k]->shape, in[k]->placements,
                                  plan->in_target[k], m->ndim, NULL, &p)) {
            add_plan(t, 1, p);
            cJSON_AddNumberToObject(j, "plan_bytes", (double)p->total_bytes);
            lt_plan_free(p);
        } else {
            add(t, 1, "    (no single plan: it goes through an intermediate layout)\n");
        }
        lt__json_push(reds, j);
        for (int i = 0; i < m->ndim; i++) {
            const lt_placement *a = &in[k]->placements[i], *b = &plan->in_target[k][i];
            if (!lt_placement_is_shard_like(a) || b->kind != LT_PL_REPLICATE) continue;
            char pa[64];
            lt_placement_format(a, pa, sizeof pa);
            char w[400];
            snprintf(w, sizeof w,
                     "silent replication: %s replicates input %d '%s' along mesh dim %d (%s -> R): "
                     "every rank "
                     "now holds the whole tensor along that dim",
                     lt_op_name(op), k + 1, names[k], i, pa);
            add(t, 1, "  warning: %s\n", w);
            if (!t->warnings) t->warnings = cJSON_CreateArray();
            lt__json_push(t->warnings, cJSON_CreateString(w));
            t->nwarn++;
        }
    }
    lt__json_put(o, "implicit_redistributes", reds);
    lt__json_push(t->ops, o);
    /* the reduced dims as the rule normalized them (0: every dim) */
    lt_op_args a;
    memset(&a, 0, sizeof a);
    a.ndims = lt__op_plan_x_of(plan)->nkdims;
    memcpy(a.dims, lt__op_plan_x_of(plan)->kdims, sizeof a.dims);
    const lt_spec *specs[LT_OP_MAX_INPUTS];
    for (int k = 0; k < nin && k < LT_OP_MAX_INPUTS; k++) specs[k] = lt_dtensor_spec(in[k]);
    int ns = nin < LT_OP_MAX_INPUTS ? nin : LT_OP_MAX_INPUTS;
    add_bug_warnings(t, 1, lt_pytorch_bugs_op(op, specs, ns, &a));
}

void lt__sc_trace_step(sc_run_ctx *rc, const sc_step *st, int index, size_t since) {
    sc_trace *t = rc->trace;
    if (!t) return;
    lt_trace *tr = lt_comm_trace(rc->comm);
    size_t n = lt_trace_count(tr);
    int is_redist = !strcmp(st->type->name, "redistribute");
    if (n == since && !t->plen && !is_redist) return;
    add(t, 0, "step %d  %s at %s:%d:%d\n", index + 1, st->type->name, st->pos.file, st->pos.line,
        st->pos.col);
    if (t->plen) add(t, 0, "%s", t->pend);
    if (is_redist && rc->plan) {
        add_plan(t, 0, rc->plan);
        lt_spec src = lt__plan_spec(rc->plan, rc->plan->src);
        add_bug_warnings(t, 0, lt_pytorch_bugs_redistribute(&src, rc->plan->dst));
    }
    t->plen = 0;
    if (t->pend) t->pend[0] = 0;
    cJSON *js = cJSON_CreateObject();
    cJSON_AddNumberToObject(js, "step", index + 1);
    char at[600];
    snprintf(at, sizeof at, "%s:%d:%d", st->pos.file, st->pos.line, st->pos.col);
    cJSON_AddStringToObject(js, "at", at);
    cJSON_AddStringToObject(js, "kind", st->type->name);
    lt__json_put(js, "ops", t->ops ? t->ops : cJSON_CreateArray());
    lt__json_put(js, "warnings", t->warnings ? t->warnings : cJSON_CreateArray());
    t->ops = t->warnings = NULL;
    cJSON *comm = cJSON_CreateArray();
    if (n > since) {
        add(t, 0, "  comm:  %-15s %-9s %-7s %-11s%-22s %s\n", "collective", "mesh dim", "groups",
            "group size", "bytes sent per rank", "bytes received per rank");
        lt_trace_event ev;
        for (size_t i = since; i < n; i++) {
            if (lt_trace_get(tr, i, &ev)) continue;
            char md[16];
            snprintf(md, sizeof md, "%d", ev.mesh_dim);
            add(t, 0, "         %-15s %-9s %-7d %-10d ", lt_coll_name(ev.coll), md, ev.ngroups,
                ev.group_size);
            size_t mark = t->len;
            add_sizes(t, ev.sent, ev.world);
            int w = (int)(t->len - mark);
            add(t, 0, "%*s ", w < 22 ? 22 - w : 0, "");
            add_sizes(t, ev.recv, ev.world);
            add(t, 0, "\n");
            if (t->mesh->permuted && ev.mesh_dim >= 0 && ev.mesh_dim < t->mesh->ndim)
                add_groups(t, ev.mesh_dim);
            for (int r = 0; t->sent && t->recv && r < ev.world && r < t->world; r++)
                t->sent[r] += ev.sent[r], t->recv[r] += ev.recv[r];
            t->ncoll[ev.coll]++;
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "collective", lt_coll_name(ev.coll));
            cJSON_AddNumberToObject(e, "mesh_dim", ev.mesh_dim);
            cJSON_AddNumberToObject(e, "groups", ev.ngroups);
            cJSON_AddNumberToObject(e, "group_size", ev.group_size);
            lt__json_put(e, "bytes_sent", json_sizes(t, ev.sent, ev.world));
            lt__json_put(e, "bytes_recv", json_sizes(t, ev.recv, ev.world));
            lt__json_push(comm, e);
        }
    } else {
        add(t, 0, "  comm:  none\n");
    }
    lt__json_put(js, "comm", comm);
    lt__json_push(t->steps, js);
}

int lt__sc_trace_end(sc_run_ctx *rc) {
    sc_trace *t = rc->trace;
    if (!t) return 0;
    size_t events = 0;
    for (int c = 0; c < LT_COLL_COUNT; c++) events += t->ncoll[c];
    add(t, 0, "total: %zu collective%s", events, events == 1 ? "" : "s");
    for (int c = 0, first = 1; c < LT_COLL_COUNT; c++)
        if (t->ncoll[c])
            add(t, 0, "%s%zu %s", first ? " (" : ", ", t->ncoll[c], lt_coll_name((lt_coll)c)),
                first = 0;
    if (t->sent && t->recv) {
        add(t, 0, "%s\n  bytes sent per rank:     ", events ? ")" : "");
        add_sizes(t, t->sent, t->world);
        add(t, 0, "\n  bytes received per rank: ");
        add_sizes(t, t->recv, t->world);
        add(t, 0, "\n");
    }
    if (t->nwarn)
        add(t, 0, "  %zu silent replication warning%s\n", t->nwarn, t->nwarn == 1 ? "" : "s");
    if (t->nbugs)
        add(t, 0, "  %zu known-PyTorch-bug warning%s\n", t->nbugs, t->nbugs == 1 ? "" : "s");
    cJSON *root = cJSON_CreateObject();
    lt__json_put(root, "steps", t->steps);
    t->steps = NULL;
    cJSON *tot = cJSON_CreateObject();
    cJSON_AddNumberToObject(tot, "collectives", (double)events);
    cJSON *per = cJSON_CreateObject();
    for (int c = 0; c < LT_COLL_COUNT; c++)
        if (t->ncoll[c])
            cJSON_AddNumberToObject(per, lt_coll_name((lt_coll)c), (double)t->ncoll[c]);
    lt__json_put(tot, "per_collective", per);
    if (t->sent && t->recv) {
        lt__json_put(tot, "bytes_sent", json_sizes(t, t->sent, t->world));
        lt__json_put(tot, "bytes_recv", json_sizes(t, t->recv, t->world));
    }
    cJSON_AddNumberToObject(tot, "silent_replications", (double)t->nwarn);
    cJSON_AddNumberToObject(tot, "pytorch_bugs", (double)t->nbugs);
    lt__json_put(root, "total", tot);
    char *js = lt__json_failed() ? NULL : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    int failed = t->failed || !js;
    if (!failed) {
        rc->res->trace_text = lt__sc_strdup(rc->arena, t->text);
        rc->res->trace_json = lt__sc_strdup(rc->arena, js);
        failed = !rc->res->trace_text || !rc->res->trace_json;
    }
    cJSON_free(js);
    cJSON_Delete(t->ops);
    cJSON_Delete(t->warnings);
    cJSON_Delete(t->steps);
    lt__free(t->text);
    lt__free(t->pend);
    lt__free(t->sent);
    lt__free(t->recv);
    lt__free(t);
    rc->trace = NULL;
    return failed;
}
