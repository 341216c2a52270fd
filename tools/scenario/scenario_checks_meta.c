/* tools/scenario/scenario_checks_meta.c — the checks of how a result came
 * about rather than of its values: expect_plan, expect_comm, expect_error,
 * expect_order. (The value checks, expect_local and expect_full, are in
 * scenario_checks.c.) Expected plans, collectives, errors and orders come
 * from the scenario file only.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/scenario/scenario_impl.h"
#include "kernels/status_impl.h"

/* ---- expect_plan, expect_comm ------------------------------------------------------------ */

typedef struct {
    int has_colls, ncolls;
    lt_coll *colls;
    int64_t steps, bytes, count;      /* -1: not checked (count: expect_comm) */
    int since_start;                  /* expect_comm */
} expect_comm_data;

static lt_status parse_colls(sc_parse_ctx *pc, const sc_node *body, const char *what,
                             expect_comm_data *d) {
    const sc_node *n = lt__sc_get(body, "collectives");
    d->steps = d->bytes = d->count = -1;
    if (!n) return LT_OK;
    if (n->kind != SC_SEQ)
        return lt__sc_err(n, LT_INVALID,
                          "%s: collectives: expected a list like [all_gather, all_to_all], got %s",
                          what, lt__sc_kind_name(n));
    d->has_colls = 1;
    d->ncolls = n->n;
    d->colls = lt__sc_alloc(pc->arena, sizeof *d->colls * (size_t)(n->n ? n->n : 1));
    if (!d->colls) return LT_NOMEM;
    for (int i = 0; i < n->n; i++) {
        const char *s;
        LT_TRY(lt__sc_str(n->kids[i], what, &s));
        lt_status e = lt_coll_parse(s, &d->colls[i]);
        if (e) return lt__sc_err_at(n->kids[i], e);
    }
    return LT_OK;
}

static void colls_str(const lt_coll *c, int n, char *buf, size_t len) {
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", lt_coll_name(c[i]));
    if (used < len) snprintf(buf + used, len - used, "]");
}

lt_status lt__sc_parse_expect_plan(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"collectives", "steps", "bytes", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "expect_plan", keys));
    if (!pc->redistributes)
        return lt__sc_err(body, LT_INVALID, "expect_plan: no redistribute step comes before it");
    LT__SC_NEW_DATA(expect_comm_data, d);
    LT_TRY(parse_colls(pc, body, "expect_plan", d));
    if ((n = lt__sc_get(body, "steps")))
        LT_TRY(lt__sc_i64(n, "expect_plan: steps", 0, INT32_MAX, &d->steps));
    if ((n = lt__sc_get(body, "bytes")))
        LT_TRY(lt__sc_i64(n, "expect_plan: bytes", 0, INT64_MAX, &d->bytes));
    if (!d->has_colls && d->steps < 0 && d->bytes < 0)
        return lt__sc_err(body, LT_INVALID,
                          "expect_plan: give at least one of collectives, steps, bytes");
    return LT_OK;
}

/* Appends printf-style text to buf[cap] at *used (cut, never past the end). */
static void app(char *buf, size_t cap, size_t *used, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void app(char *buf, size_t cap, size_t *used, const char *fmt, ...) {
    if (*used + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (w > 0) *used += (size_t)w < cap - *used ? (size_t)w : cap - *used - 1;
}

typedef struct plan_diff {
    char msg[1400], e[600], a[600];
    size_t um, ue, ua;
    int n;
} plan_diff;

static void plan_diff_add(plan_diff *pd, const char *key, const char *e, const char *verb,
                          const char *a) {
    app(pd->msg, sizeof pd->msg, &pd->um, "%s %s: expected %s, the plan %s %s", pd->n ? ";" : "",
        key, e, verb, a);
    app(pd->e, sizeof pd->e, &pd->ue, "%s%s %s", pd->n ? ", " : "", key, e);
    app(pd->a, sizeof pd->a, &pd->ua, "%s%s %s", pd->n ? ", " : "", key, a);
    pd->n++;
}

/* Every key that differs is reported, each once, in one failure: "expect_plan:
 * collectives: expected [all_gather], the plan issues [all_gather, all_gather];
 * bytes: expected 52, the plan moves 156". The plan itself is the failure's
 * "produced by" line (printed once by the report). */
lt_status lt__sc_run_expect_plan(sc_run_ctx *rc, const sc_step *st) {
    const expect_comm_data *d = st->data;
    const lt_plan *p = rc->plan;
    if (!p)
        return lt__err_in(LT_INVALID, "expect_plan",
                          ": the last redistribute made no plan (it failed before planning)");
    plan_diff pd;
    memset(&pd, 0, sizeof pd);
    app(pd.msg, sizeof pd.msg, &pd.um, "expect_plan:");
    char e[400], a[400];
    if (d->has_colls) {
        lt_coll got[256];
        int ng = 0;
        for (int i = 0; i < p->nsteps && ng < 256; i++)
            if (p->steps[i].comm) got[ng++] = p->steps[i].coll;
        int ok = ng == d->ncolls;
        for (int i = 0; ok && i < ng; i++) ok = got[i] == d->colls[i];
        if (!ok) {
            colls_str(d->colls, d->ncolls, e, sizeof e);
            colls_str(got, ng, a, sizeof a);
            plan_diff_add(&pd, "collectives", e, "issues", a);
        }
    }
    if (d->steps >= 0 && d->steps != p->nsteps) {
        snprintf(e, sizeof e, "%lld", (long long)d->steps);
        snprintf(a, sizeof a, "%d", p->nsteps);
        plan_diff_add(&pd, "steps", e, "has", a);
    }
    if (d->bytes >= 0 && (size_t)d->bytes != p->total_bytes) {
        snprintf(e, sizeof e, "%lld", (long long)d->bytes);
        snprintf(a, sizeof a, "%zu", p->total_bytes);
        plan_diff_add(&pd, "bytes", e, "moves", a);
    }
    if (!pd.n) return LT_OK;
    return lt__sc_check_fail(rc, st, -1, NULL, pd.e, pd.a, lt__sc_plan_text(rc), "%s", pd.msg);
}

lt_status lt__sc_parse_expect_comm(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"collectives", "count", "bytes", "since", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "expect_comm", keys));
    LT__SC_NEW_DATA(expect_comm_data, d);
    LT_TRY(parse_colls(pc, body, "expect_comm", d));
    if ((n = lt__sc_get(body, "count")))
        LT_TRY(lt__sc_i64(n, "expect_comm: count", 0, INT64_MAX, &d->count));
    if ((n = lt__sc_get(body, "bytes")))
        LT_TRY(lt__sc_i64(n, "expect_comm: bytes", 0, INT64_MAX, &d->bytes));
    if ((n = lt__sc_get(body, "since"))) {
        const char *s;
        LT_TRY(lt__sc_str(n, "expect_comm: since", &s));
        if (!strcmp(s, "start")) d->since_start = 1;
        else if (strcmp(s, "mark"))
            return lt__sc_err(n, LT_INVALID, "expect_comm: since: expected mark or start, got '%s'",
                              s);
    }
    if (!d->has_colls && d->count < 0 && d->bytes < 0)
        return lt__sc_err(body, LT_INVALID,
                          "expect_comm: give at least one of collectives, count, bytes");
    return LT_OK;
}

lt_status lt__sc_run_expect_comm(sc_run_ctx *rc, const sc_step *st) {
    const expect_comm_data *d = st->data;
    lt_trace *t = lt_comm_trace(rc->comm);
    size_t since = d->since_start ? 0 : rc->comm_mark, n = lt_trace_count(t);
    const char *from = d->since_start || !rc->comm_mark ? "since the start" : "since mark_comm";
    char e[400], a[400];
    if (d->has_colls || d->count >= 0) {
        lt_coll got[256];
        int ng = 0;
        for (size_t i = since; i < n && ng < 256; i++) {
            lt_trace_event ev;
            if (lt_trace_get(t, i, &ev) == LT_OK) got[ng++] = ev.coll;
        }
        if (d->has_colls) {
            int ok = (size_t)d->ncolls == n - since;
            for (int i = 0; ok && i < ng; i++) ok = got[i] == d->colls[i];
            if (!ok) {
                colls_str(d->colls, d->ncolls, e, sizeof e);
                colls_str(got, ng, a, sizeof a);
                return lt__sc_check_fail(rc, st, -1, NULL, e, a, NULL,
                                         "expect_comm: collectives %s: expected %s, issued %s%s",
                                         from, e, a, n - since > (size_t)ng ? " ..." : "");
            }
        }
        if (d->count >= 0 && (size_t)d->count != n - since) {
            snprintf(e, sizeof e, "%lld", (long long)d->count);
            snprintf(a, sizeof a, "%zu", n - since);
            return lt__sc_check_fail(rc, st, -1, NULL, e, a, NULL,
                                     "expect_comm: collectives %s: expected %s, issued %s", from, e,
                                     a);
        }
    }
    if (d->bytes >= 0) {
        lt_trace_totals tot;
        lt_trace_totals_since(t, since, &tot);
        if ((size_t)d->bytes != tot.bytes_sent) {
            snprintf(e, sizeof e, "%lld", (long long)d->bytes);
            snprintf(a, sizeof a, "%zu", tot.bytes_sent);
            return lt__sc_check_fail(
                rc, st, -1, NULL, e, a, NULL,
                "expect_comm: bytes sent %s (all ranks): expected %s, actual %s", from, e, a);
        }
    }
    return LT_OK;
}

/* ---- expect_error ------------------------------------------------------------------------- */

typedef struct {
    sc_step inner;            /* inner.type NULL: no step (hang: the per-rank program ends here) */
    const char *contains;     /* NULL: any message */
    int status;               /* lt_status, -1: any */
    int hang;                 /* lt_hang_kind, -1: not asked */
} expect_error_data;

static const char *const status_keys[] = {
#define LT__XX(name, str) #name,
    LT_STATUS_MAP(LT__XX)
#undef LT__XX
};

static int status_parse(const char *s) {
    for (int i = 0; i < LT_STATUS_COUNT; i++) {
        const char *k = status_keys[i];
        size_t j = 0;
        while (k[j] && s[j] && (k[j] | 0x20) == (s[j] | 0x20)) j++;
        if (!k[j] && !s[j]) return i;
    }
    return -1;
}

static const char *status_key(int st) {
    static char buf[LT_STATUS_COUNT][16];
    if (st < 0 || st >= LT_STATUS_COUNT) return "?";
    size_t j = 0;
    for (; status_keys[st][j] && j < 15; j++) buf[st][j] = (char)(status_keys[st][j] | 0x20);
    buf[st][j] = '\0';
    return buf[st];
}

lt_status lt__sc_parse_expect_error(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    if (body->kind != SC_MAP)
        return lt__sc_err(
            body, LT_INVALID,
            "expect_error: expected a mapping holding one step plus contains: and status:, got %s",
            lt__sc_kind_name(body));
    LT__SC_NEW_DATA(expect_error_data, d);
    d->status = -1;
    d->hang = -1;
    const sc_node *step_key = NULL, *step_body = NULL, *sel = NULL, *sel_val = NULL;
    for (int i = 0; i < body->n; i++) {
        const sc_node *k = body->kids[2 * i], *v = body->kids[2 * i + 1];
        if (!strcmp(k->str, "contains")) {
            LT_TRY(lt__sc_str(v, "expect_error: contains", &d->contains));
        } else if (!strcmp(k->str, "status")) {
            const char *s;
            LT_TRY(lt__sc_str(v, "expect_error: status", &s));
            if ((d->status = status_parse(s)) <= 0)
                return lt__sc_err(v, LT_INVALID,
                                  "expect_error: status: '%s' is not an error status (invalid, "
                                  "shape, dtype, overflow, unsupported, mismatch, nomem, io)",
                                  s);
        } else if (!strcmp(k->str, "ranks") || !strcmp(k->str, "when")) {
            if (sel)
                return lt__sc_err(k, LT_INVALID,
                                  "expect_error: give either ranks: or when:, not both");
            sel = k;
            sel_val = v;
        } else if (!strcmp(k->str, "hang")) {
            const char *s;
            lt_hang_kind hk;
            LT_TRY(lt__sc_str(v, "expect_error: hang", &s));
            if (lt_hang_kind_parse(s, &hk)) return lt__sc_err_at(v, LT_INVALID);
            d->hang = (int)hk;
        } else if (lt__sc_step_type(k->str)) {
            if (step_key)
                return lt__sc_err(
                    k, LT_INVALID,
                    "expect_error: wraps one step; '%s' is a second one (first: '%s')", k->str,
                    step_key->str);
            step_key = k;
            step_body = v;
        } else {
            return lt__sc_err(k, LT_INVALID,
                              "unknown key '%s' in expect_error (expected contains, status, hang, "
                              "and one step: %s)",
                              k->str, lt__sc_step_names());
        }
    }
    if (!step_key && sel)
        return lt__sc_err(sel, LT_INVALID,
                          "expect_error: %s: applies to the wrapped step, and there is none",
                          sel->str);
    if (!step_key && d->hang >= 0) return LT_OK;   /* the per-rank program must be stuck here */
    if (!step_key)
        return lt__sc_err(body, LT_INVALID,
                          "expect_error: no step to run (wrap one of: %s; or give hang: to check "
                          "that the per-rank program would hang here)",
                          lt__sc_step_names());
    if (!strcmp(step_key->str, "expect_error"))
        return lt__sc_err(step_key, LT_INVALID, "expect_error: cannot wrap another expect_error");
    const sc_step_type *t = lt__sc_step_type(step_key->str);
    d->inner.type = t;
    d->inner.pos = (sc_pos){step_key->file, step_key->line, step_key->col};
    if (sel) LT_TRY(lt__sc_parse_selection(pc, t, sel, sel_val, &d->inner));
    int saved = pc->in_expect_error;
    pc->in_expect_error = 1;
    lt_status s = t->parse(pc, step_body, &d->inner);
    pc->in_expect_error = saved;
    return s;
}

int lt__sc_expect_error_hang(const sc_step *st) {
    if (strcmp(st->type->name, "expect_error")) return -1;
    return ((const expect_error_data *)st->data)->hang;
}

/* A failed expect_error about a would-hang report carries its JSON (--json). */
static lt_status with_hang(sc_run_ctx *rc, int hung, lt_status s) {
    if (s == LT_MISMATCH && rc->failed_check && hung >= 0) rc->pending.hang = rc->hang_json;
    return s;
}

const sc_step *lt__sc_expect_error_inner(const sc_step *st) {
    if (strcmp(st->type->name, "expect_error")) return NULL;
    const expect_error_data *d = st->data;
    return d->inner.type ? &d->inner : NULL;
}

/* Runs expect_error's wrapped step (or ends the per-rank program when it
 * wraps nothing) with errors captured; returns the step's status. */
static lt_status run_wrapped(sc_run_ctx *rc, const sc_step *st, const expect_error_data *d) {
    int saved = rc->capturing;
    rc->capturing = 1;
    rc->hang_kind = -1;
    rc->hang_text = NULL;
    rc->hang_json = NULL;
    lt_status s;
    if (d->inner.type && !lt__sc_step_is_per_rank(d->inner.type) && lt__sc_any_stopped(rc)) {
        /* a step every rank runs together: ranks that wait or failed never
         * reach it, so the per-rank program ends here, and its report is
         * the wrapped step's outcome */
        rc->failed_check = 0;
        lt__err_clear();
        s = lt__sc_program_end_at(rc, st, &d->inner);
    } else if (d->inner.type) {
        s = lt__sc_run_step(rc, &d->inner);
        /* a rank's error while others wait: the rank_failed report */
        if (s && d->hang >= 0 && !(s == LT_MISMATCH && rc->failed_check))
            s = lt__sc_rank_failed(rc, &d->inner, s);
        s = lt__sc_step_agree(rc, s, 1); /* --shards owned: every process judges the same outcome */
    } else {
        rc->failed_check = 0;
        lt__err_clear();
        s = lt__sc_program_end(rc, st);
    }
    rc->capturing = saved;
    rc->failed_check = 0;
    return s;
}

/* "an error of status shape containing '...'" or "a would-hang report (...)":
 * what expect_error asks for, into want[n]. */
static void describe_want(const expect_error_data *d, char *want, size_t n) {
    if (d->hang >= 0)
        snprintf(want, n, "a would-hang report (%s)%s%s%s",
                 lt_hang_kind_name((lt_hang_kind)d->hang), d->contains ? " containing '" : "",
                 d->contains ? d->contains : "", d->contains ? "'" : "");
    else
        snprintf(want, n, "an error%s%s%s%s%s", d->status >= 0 ? " of status " : "",
                 d->status >= 0 ? status_key(d->status) : "", d->contains ? " containing '" : "",
                 d->contains ? d->contains : "", d->contains ? "'" : "");
}

lt_status lt__sc_run_expect_error(sc_run_ctx *rc, const sc_step *st) {
    const expect_error_data *d = st->data;
    lt_status s = run_wrapped(rc, st, d);
    int hung = rc->hang_kind;
    rc->hung = 0;   /* expected or not, the report is this check's result */
    /* running out of memory is never the error a scenario expects (unless
     * it asks for status nomem): the case stops as an error */
    if (s == LT_NOMEM && d->status != LT_NOMEM) return s;
    /* a would-hang report is matched whole (the error message holds its first 2 KiB) */
    char emsg[2048];
    snprintf(emsg, sizeof emsg, "%s", lt_errmsg());
    const char *msg = hung >= 0 && rc->hang_text ? rc->hang_text : emsg;
    const char *name = d->inner.type ? d->inner.type->name : "the per-rank program";
    char want[300];
    describe_want(d, want, sizeof want);
    if (s == LT_OK && d->hang >= 0 && lt__sc_any_stopped(rc)) {
        /* ranks wait or failed, but others still run: the program goes on,
         * and its report comes once no rank can run (docs/SEMANTICS.md §12) */
        char running[160];
        lt__sc_running_ranks(rc, running, sizeof running);
        return lt__sc_check_fail(
            rc, st, -1, NULL, want, running, NULL,
            "expect_error: the per-rank program did not stop at %s: %s (a would-hang report comes "
            "only once no rank can run, docs/SEMANTICS.md §12), but %s was expected here",
            name, running, want);
    }
    if (s == LT_OK && d->hang >= 0)
        return lt__sc_check_fail(rc, st, -1, NULL, want, "every collective completed", NULL,
                                 "expect_error: %s would not hang, but %s was expected", name,
                                 want);
    if (s != LT_OK && d->hang >= 0 && hung != d->hang)
        return with_hang(
            rc, hung,
            lt__sc_check_fail(rc, st, -1, NULL, lt_hang_kind_name((lt_hang_kind)d->hang),
                              hung >= 0 ? lt_hang_kind_name((lt_hang_kind)hung) : "another error",
                              NULL, "expect_error: %s failed with '%s', but %s was expected", name,
                              msg, want));
    if (s == LT_OK)
        return lt__sc_check_fail(rc, st, -1, NULL, want, "success", NULL,
                                 "expect_error: %s succeeded, but %s was expected", name, want);
    if (d->contains && !strstr(msg, d->contains))
        return with_hang(
            rc, hung,
            lt__sc_check_fail(
                rc, st, -1, NULL, want, msg, NULL,
                "expect_error: %s failed with another error than expected: '%s' (expected %s)",
                name, msg, want));
    if (d->status >= 0 && (int)s != d->status)
        return with_hang(
            rc, hung,
            lt__sc_check_fail(rc, st, -1, NULL, status_key(d->status), status_key((int)s), NULL,
                              "expect_error: %s failed with status %s ('%s'), expected %s", name,
                              status_key((int)s), msg, status_key(d->status)));
    lt__err_clear();
    return LT_OK;
}

/* ---- expect_order (docs/SEMANTICS.md §6, middle era) --------------------------------- */

typedef struct {
    lt_placement *pl;               /* (np) */
    int np;
    int n;                                   /* expected entries */
    int mesh_dim[2 * LT_MESH_MAX_DIMS];
    lt_placement want[2 * LT_MESH_MAX_DIMS];
} expect_order_data;

lt_status lt__sc_parse_expect_order(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"placements", "order", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "expect_order", keys));
    LT__SC_NEW_DATA(expect_order_data, d);
    LT_TRY(lt__sc_need(body, "expect_order", "placements", &n));
    LT_TRY(lt__sc_placements_new(pc->arena, n, "expect_order: placements", &d->pl, &d->np));
    LT_TRY(lt__sc_need(body, "expect_order", "order", &n));
    if (n->kind != SC_SEQ || n->n > 2 * LT_MESH_MAX_DIMS)
        return lt__sc_err(
            n, LT_INVALID,
            "expect_order: order: expected a list of [mesh_dim, placement] pairs, got %s",
            lt__sc_kind_name(n));
    d->n = n->n;
    for (int i = 0; i < n->n; i++) {
        const sc_node *e = n->kids[i];
        const char *s;
        if (e->kind != SC_SEQ || e->n != 2)
            return lt__sc_err(e, LT_INVALID,
                              "expect_order: order: expected [mesh_dim, placement], got %s",
                              lt__sc_kind_name(e));
        LT_TRY(lt__sc_int(e->kids[0], "expect_order: mesh dim", 0, LT_MESH_MAX_DIMS - 1,
                          &d->mesh_dim[i]));
        LT_TRY(lt__sc_str(e->kids[1], "expect_order: placement", &s));
        lt_status r = lt_placement_parse(s, &d->want[i]);
        if (r) return lt__sc_err_at(e->kids[1], r);
    }
    return LT_OK;
}

static void order_str(const int *md, const lt_placement *pl, int n, char *buf, size_t len) {
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < n && used < len; i++) {
        char p[64];
        lt_placement_format(&pl[i], p, sizeof p);
        used += (size_t)snprintf(buf + used, len - used, "%s(%d, %s)", i ? ", " : "", md[i], p);
    }
    if (used < len) snprintf(buf + used, len - used, "]");
}

lt_status lt__sc_run_expect_order(sc_run_ctx *rc, const sc_step *st) {
    const expect_order_data *d = st->data;
    const lt_mesh *m = rc->c->mesh;
    lt_order_entry got[2 * LT_MESH_MAX_DIMS];
    int n = 0;
    lt_status s = lt_explicit_order(m->shape, m->ndim, d->pl, d->np, got, &n);
    if (s) return lt__err_ctx(s, "expect_order");
    int md[2 * LT_MESH_MAX_DIMS];
    lt_placement pl[2 * LT_MESH_MAX_DIMS];
    int ok = n == d->n;
    for (int i = 0; i < n; i++) {
        md[i] = got[i].mesh_dim;
        pl[i] = got[i].placement;
        if (ok) ok = md[i] == d->mesh_dim[i] && lt_placement_equal(&pl[i], &d->want[i]);
    }
    if (ok) return LT_OK;
    char e[400], a[400];
    order_str(d->mesh_dim, d->want, d->n, e, sizeof e);
    order_str(md, pl, n, a, sizeof a);
    return lt__sc_check_fail(rc, st, -1, NULL, e, a, NULL, "expect_order: expected %s, actual %s",
                             e, a);
}
