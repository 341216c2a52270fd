/* tools/scenario/scenario_run.c — runs one case: named values, steps, failures.
 *
 * A case runs in a fresh context: its declared tensors are built, then the
 * steps run in order against one communicator (so expect_comm sees every
 * collective the case issued). A failed check is recorded and the case goes
 * on (later checks still report); any other error stops the case as ERROR
 * with "file:line:col: while running STEP: problem". Every value is freed
 * when the case ends, so a case leaks nothing whatever happens.
 */
#include "kernels/alloc.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "localtensor/kernels/backend.h"
#include "kernels/memlimit_impl.h"
#include "kernels/tensor_impl.h"
#include "localtensor/redistribute.h"
#include "tools/render/render.h"
#include "tools/render/json_alloc.h"
#include "tools/scenario/scenario_impl.h"
#include "kernels/status_impl.h"

/* ---- formatting ---------------------------------------------------------------- */

char *lt__sc_fmt_num(double v, char *buf, size_t n) {
    if (isnan(v)) snprintf(buf, n, "nan");
    else if (isinf(v)) snprintf(buf, n, v > 0 ? "inf" : "-inf");
    else if (v == floor(v) && fabs(v) < 1e15) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%.9g", v);
    return buf;
}

char *lt__sc_fmt_index(int ndim, const int64_t *idx, char *buf, size_t n) {
    size_t used = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && used < n; d++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", d ? ", " : "", (long long)idx[d]);
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
}

/* ---- values -------------------------------------------------------------------- */

static void free_rorigin(sc_value *v) {
    for (int r = 0; v->rorigin && r < v->nro; r++) lt__free(v->rorigin[r]);
    lt__free(v->rorigin);
    v->rorigin = NULL;
    v->nro = 0;
}

static void value_clear(sc_value *v) {
    free_rorigin(v);
    lt_tensor_free(v->full);
    lt_dtensor_free(v->dt);
    lt_local_free(v->local);
    lt_plan_free(v->oplan);
    v->full = NULL;
    v->dt = NULL;
    v->local = NULL;
    v->oplan = NULL;
}

const char lt__sc_plan_origin[] = "";

const char *lt__sc_plan_text(sc_run_ctx *rc) {
    if (rc->plan && !rc->plan_text[0])
        lt__sc_plan_origin_text(rc->plan, rc->plan_step, rc->plan_text, sizeof rc->plan_text);
    return rc->plan_text;
}

const char *lt__sc_origin(sc_value *v) {
    if (v->oplan && !v->origin[0])
        lt__sc_plan_origin_text(v->oplan, v->ostep, v->origin, sizeof v->origin);
    return v->origin[0] ? v->origin : NULL;
}

const char *lt__sc_origin_rank(sc_value *v, int r) {
    if (v->rorigin && r >= 0 && r < v->nro && v->rorigin[r])
        return v->rorigin[r][0] ? v->rorigin[r] : NULL;
    return lt__sc_origin(v);
}

void lt__sc_set_origin_rank(sc_value *v, int world, int r, const char *origin) {
    if (r < 0 || r >= world) return;
    if (!v->rorigin) {
        v->rorigin = lt__calloc((size_t)world, sizeof *v->rorigin);
        if (!v->rorigin) return;
        v->nro = world;
    }
    size_t n = strlen(origin ? origin : "") + 1;
    char *s = lt__malloc(n);
    if (!s) return;
    memcpy(s, origin ? origin : "", n);
    lt__free(v->rorigin[r]);
    v->rorigin[r] = s;
}

/* The per-rank origins a LocalTensor put under `name` keeps from the value
 * it replaces (old, or NULL): the carried ranks' (rc->carry, kept until the
 * next step: a step may put the same name twice). Into out->rorigin (owned). */
static void carried_origins(sc_run_ctx *rc, const char *name, sc_value *old, sc_value *out) {
    int W = rc->c->mesh->world;
    for (int i = 0; i < rc->ncarry; i++) {
        if (strcmp(rc->carry[i].name, name)) continue;
        const char *o =
            old && old->kind == SC_LOCAL ? lt__sc_origin_rank(old, rc->carry[i].rank) : NULL;
        lt__sc_set_origin_rank(out, W, rc->carry[i].rank, o ? o : "");
    }
}

sc_value *lt__sc_value(sc_run_ctx *rc, const char *name) {
    for (int i = rc->nvals - 1; i >= 0; i--)
        if (!strcmp(rc->vals[i].name, name)) return &rc->vals[i];
    return NULL;
}

static lt_status put(sc_run_ctx *rc, const char *name, int kind, lt_tensor *t, lt_dtensor *dt,
                     lt_local *l, const char *origin) {
    sc_value *v = lt__sc_value(rc, name);
    sc_value ro = {0};   /* the new value's per-rank origins, taken before v is cleared */
    lt__sc_diverge_forget(rc, name);   /* its recorder, if any, runs after the store */
    if (kind == SC_LOCAL && rc->ncarry) carried_origins(rc, name, v, &ro);
    if (!v) {
        if (rc->nvals == rc->cap) {
            int cap = rc->cap ? rc->cap * 2 : 16;
            sc_value *nv = lt__realloc(rc->vals, sizeof *nv * (size_t)cap);
            if (!nv) {
                free_rorigin(&ro);
                lt_tensor_free(t);
                lt_dtensor_free(dt);
                lt_local_free(l);
                return lt__err(LT_NOMEM, "out of memory");
            }
            rc->vals = nv;
            rc->cap = cap;
        }
        v = &rc->vals[rc->nvals++];
        memset(v, 0, sizeof *v);
        v->name = name;
    } else {
        value_clear(v);
    }
    v->rorigin = ro.rorigin;
    v->nro = ro.nro;
    v->kind = kind;
    v->full = t;
    v->dt = dt;
    v->local = l;
    if (origin == lt__sc_plan_origin && rc->plan) { /* spelled when asked for */
        v->origin[0] = '\0';
        v->oplan = lt_plan_ref(rc->plan);
        v->ostep = rc->plan_step;
    } else {
        snprintf(v->origin, sizeof v->origin, "%s", origin ? origin : "");
    }
    if (rc->cmp) return lt__sc_cmp_put(rc->cmp, rc->in_steps ? rc->step_index : -1, v);
    return LT_OK;
}

lt_status lt__sc_put_full(sc_run_ctx *rc, const char *name, lt_tensor *t, const char *origin) {
    return put(rc, name, SC_FULL, t, NULL, NULL, origin);
}
lt_status lt__sc_put_dtensor(sc_run_ctx *rc, const char *name, lt_dtensor *dt, const char *origin) {
    return put(rc, name, SC_DTENSOR, NULL, dt, NULL, origin);
}
lt_status lt__sc_put_local(sc_run_ctx *rc, const char *name, lt_local *l, const char *origin) {
    return put(rc, name, SC_LOCAL, NULL, NULL, l, origin);
}

/* ---- failures -------------------------------------------------------------------- */

lt_status lt__sc_add_note(sc_run_ctx *rc, const char *text) {
    const char *old = rc->res->notes;
    const char *n =
        old ? lt__sc_printf(rc->arena, "%s\n%s", old, text) : lt__sc_strdup(rc->arena, text);
    if (!n)
        return lt__err(LT_NOMEM,
                       "out of memory"); /* a report without it would say less than it saw */
    rc->res->notes = n;
    return LT_OK;
}

static const char *adup(sc_arena *a, const char *s) { return s ? lt__sc_strdup(a, s) : NULL; }

lt_status lt__sc_check_fail(sc_run_ctx *rc, const sc_step *st, int rank, const char *index,
                            const char *expected, const char *actual, const char *plan_step,
                            const char *fmt, ...) {
    /* the whole message (a would-hang report can be long) goes to the arena;
     * a short one, or one that does not fit, is formatted on the stack */
    char small[2048], *msg = small;
    va_list ap;
    va_start(ap, fmt);
    int want = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (want >= (int)sizeof small && !rc->capturing) {
        char *big = lt__sc_alloc(rc->arena, (size_t)want + 1);
        if (big) {
            va_start(ap, fmt);
            vsnprintf(big, (size_t)want + 1, fmt, ap);
            va_end(ap);
            msg = big;
        }
    }
    rc->failed_check = 1;
    lt_sc_failure *f = &rc->pending;
    memset(f, 0, sizeof *f);
    f->file = st->pos.file;
    f->line = st->pos.line;
    f->col = st->pos.col;
    f->step = st->type->name;
    f->rank = rank >= 0 ? lt_mesh_rank_id(rc->c->mesh, rank) : rank;   /* reports name the id */
    /* inside expect_error the failure is only a message */
    if (!rc->capturing) {
        f->message = msg == small ? adup(rc->arena, msg) : msg;
        f->index = adup(rc->arena, index);
        f->expected = adup(rc->arena, expected);
        f->actual = adup(rc->arena, actual);
        f->plan_step = adup(rc->arena, plan_step);
    }
    return lt__err(LT_MISMATCH, "%s", msg);
}

static void record(sc_run_ctx *rc, const lt_sc_failure *f) {
    lt_sc_result *r = rc->res;
    if (!r->fails && !(r->fails = lt__sc_alloc(rc->arena, sizeof *r->fails * SC_MAX_FAILS))) {
        r->nfails_dropped++;
        return;
    }
    if (r->nfails < SC_MAX_FAILS) r->fails[r->nfails++] = *f;
    else r->nfails_dropped++;
}

void lt__sc_record_check(sc_run_ctx *rc, int failed) {
    rc->res->checks++;
    rc->failed_check = 0;
    if (!failed) return;
    rc->res->checks_failed++;
    record(rc, &rc->pending);
    rc->res->status = LT_SC_FAIL;
}

/* ---- steps ---------------------------------------------------------------------------- */

lt_status lt__sc_run_step(sc_run_ctx *rc, const sc_step *st) {
    rc->ncarry = 0;
    rc->failed_check = 0;
    rc->did_check = 0;
    rc->failed_rank = -1;
    lt__err_clear();
    LT_TRY(lt__sc_numerics_gate(rc, st));
    if (!lt__sc_when_step(st))
        LT_TRY(lt__sc_note_ran(rc, st)); /* a `when:` step notes its own ranks */
    return st->type->run(rc, st);
}

static lt_status build_tensor(const sc_tensor_decl *t, lt_tensor **out) {
    *out = NULL;
    if (t->has_values) {
        int64_t n;
        LT_TRY(lt__numel_checked(t->ndim, t->shape, lt_dtype_size(t->dtype), &n));
        return lt_tensor_from_doubles(t->dtype, t->ndim, t->shape, t->values, n, out);
    }
    LT_TRY(lt_tensor_new(t->dtype, t->ndim, t->shape, out));
    lt_status st = lt_init_fill(*out, &t->init);
    if (st) {
        lt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* Bytes of declared tensor t once built (saturating). */
static uint64_t tensor_bytes(const sc_tensor_decl *t) {
    uint64_t b = lt_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++) {
        uint64_t s = (uint64_t)t->shape[d];
        b = s && b > UINT64_MAX / s ? UINT64_MAX : b * s;
    }
    return b;
}

/* Bytes of the declared tensors case c builds, and how many (*n): all but
 * the init: ones when unbuilt_init (numerics sample/none never build
 * those). */
static uint64_t tensors_bytes(const sc_case *c, int unbuilt_init, int *n) {
    uint64_t sum = 0;
    *n = 0;
    for (int i = 0; i < c->ntensors; i++) {
        if (unbuilt_init && !c->tensors[i].has_values) continue;
        sum = lt__add_sat(sum, tensor_bytes(&c->tensors[i]));
        ++*n;
    }
    return sum;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void error_result(sc_run_ctx *rc, const sc_pos *pos, const char *step, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void error_result(sc_run_ctx *rc, const sc_pos *pos, const char *step, const char *fmt,
                         ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lt_sc_failure f;
    memset(&f, 0, sizeof f);
    f.file = pos->file;
    f.line = pos->line;
    f.col = pos->col;
    f.step = step;
    f.rank = -1;
    f.message = adup(rc->arena, msg);
    record(rc, &f);
    rc->res->status = LT_SC_ERROR;
}

void lt__sc_record_plan(sc_run_ctx *rc, const sc_step *st, const char *tensor,
                        const lt_placement *src, const lt_plan *plan, size_t since) {
    if (!rc->plans || !plan) return;
    char at[600];
    snprintf(at, sizeof at, "%s:%d:%d", st->pos.file, st->pos.line, st->pos.col);
    cJSON *o = cJSON_CreateObject();
    if (!o) return;
    cJSON_AddStringToObject(o, "at", at);
    cJSON_AddStringToObject(o, "tensor", tensor);
    lt__json_put(o, "from", lt_json_placements(src, plan->mesh.ndim));
    lt__json_put(o, "to", lt_json_placements(plan->dst, plan->mesh.ndim));
    cJSON *shape = cJSON_AddArrayToObject(o, "global_shape");
    for (int d = 0; shape && d < plan->ndim; d++)
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)plan->shape[d]));
    lt__json_put(o, "plan", lt_json_plan(plan, lt_comm_trace(rc->comm), since));
    cJSON_AddNumberToObject(o, "total_bytes", (double)plan->total_bytes);
    lt__json_push((cJSON *)rc->plans, o);
}

static void run_case(sc_case *c, sc_arena *arena, FILE *show, sc_cmp *cmp);

/* A case with `backend:` runs with that backend as its thread's default
 * (every tensor it makes lives there; cases on other threads keep theirs),
 * then the thread's previous default comes back. With --compare-backend
 * (another backend than the case's), it first runs there, recording every
 * value it stores, then on its own backend, comparing them
 * (scenario_compare.c). */
void lt__sc_run_case(sc_case *c, sc_arena *arena, FILE *show) {
    const lt_backend *b = NULL;
    if (c->backend && lt_backend_by_name(c->backend, &b) != LT_OK) b = NULL; /* checked at load */
    const lt_backend *prev = b ? lt__backend_set_thread(b) : NULL;
    const lt_backend *other = c->compare_backend;
    if (!other || other == lt_backend_default()) {
        run_case(c, arena, show, NULL);
    } else {
        sc_cmp cmp;
        memset(&cmp, 0, sizeof cmp);
        cmp.other = other;
        cmp.mode = SC_CMP_RECORD;
        const lt_backend *mine = lt__backend_set_thread(other);
        run_case(c, arena, NULL, &cmp);
        lt__backend_set_thread(mine);
        lt__sc_case_drop(c); /* a sweep case is built again for the second run */
        cmp.mode = SC_CMP_CHECK;
        run_case(c, arena, show, &cmp);
        lt__sc_cmp_free(&cmp);
    }
    if (b) lt__backend_set_thread(prev);
}

/* A check's outcome at the end of a case (what: the part of the case
 * that checked, for an error): a failed check is recorded and fails the
 * case; another failure is the case's error. */
static void end_outcome(sc_run_ctx *rc, lt_status st, const char *what) {
    if (st == LT_MISMATCH && rc->failed_check) {
        rc->res->checks_failed++;
        record(rc, &rc->pending);
        rc->res->status = LT_SC_FAIL;
    } else if (st) {
        error_result(rc, &rc->c->pos, what, "%s", lt_errmsg());
    }
}

/* Builds the case's steps and what runs them: the communicator, the
 * trace, numerics. A failure is the case's setup error. */
static void case_setup(sc_run_ctx *rc, sc_case *c, sc_arena *arena) {
    lt_status st = lt__sc_case_build(c, arena);
    if (st) {
        lt__sc_case_drop(c); /* nothing half-parsed runs */
        error_result(rc, &c->pos, "setup", "%s", lt_errmsg()[0] ? lt_errmsg() : lt_status_name(st));
        return;
    }
    st = lt_comm_new_engine(c->mesh, c->engine, &rc->comm);
    if (st) error_result(rc, &c->pos, "setup", "%s", lt_errmsg());
    if (!st && c->record_trace && lt__sc_trace_begin(rc))
        error_result(rc, &c->pos, "--trace", "out of memory while recording the trace");
    if (!st && lt__sc_numerics_begin(rc, c, arena))
        error_result(rc, &c->pos, "numerics", "%s", lt_errmsg());
}

/* The declared tensors, charged against the memory bound together before
 * the first is built and held to the case's end (kernels/memlimit_impl.h):
 * tensors that do not fit are refused without building any, and every
 * step's check counts them. Returns the bytes charged (released by the
 * caller). */
static uint64_t case_tensors(sc_run_ctx *rc, sc_case *c) {
    uint64_t held = 0;
    if (c->res.status == LT_SC_PASS && c->ntensors) {
        int n;
        uint64_t need = tensors_bytes(c, rc->nranks >= 0, &n);
        char what[64];
        snprintf(what, sizeof what, "the tensors: section (%d tensor%s)", n, n == 1 ? "" : "s");
        if (lt__mem_charge(need, 0, what, "declared tensors (tensors:)"))
            error_result(rc, &c->tensors[0].pos, "tensors", "%s", lt_errmsg());
        else
            held = need;
    }
    for (int i = 0; i < c->ntensors && c->res.status == LT_SC_PASS; i++) {
        lt_tensor *t = NULL;
        lt_status st = LT_OK;
        /* sample/none: an init: tensor is never built (distribute samples it) */
        if (rc->nranks < 0 || c->tensors[i].has_values) st = build_tensor(&c->tensors[i], &t);
        if (!st) st = lt__sc_put_full(rc, c->tensors[i].name, t, NULL);
        if (st)
            error_result(rc, &c->tensors[i].pos, "tensors", "while building tensor '%s': %s",
                         c->tensors[i].name, lt_errmsg());
    }
    return held;
}

/* Runs step s (the i-th): a step every rank runs together is not reached
 * while ranks wait in a collective (the per-rank program ends there). */
static lt_status step_run(sc_run_ctx *rc, const sc_step *s) {
    if (lt__sc_any_stopped(rc) && !lt__sc_step_is_per_rank(s->type) &&
        strcmp(s->type->name, "expect_error")) {
        rc->failed_check = 0;
        lt__err_clear();
        return lt__sc_program_end_at(rc, s, s);
    }
    lt_status st = lt__sc_run_step(rc, s);
    /* a rank's error while others wait in a collective: report where
     * everyone is (kind rank_failed) */
    if (st && !(st == LT_MISMATCH && rc->failed_check)) st = lt__sc_rank_failed(rc, s, st);
    return lt__sc_step_agree(rc, st, 0);   /* --shards owned: the case stops everywhere together */
}

/* What step s's status st means for the case: a check counted, a failed
 * check recorded, or the case's error. Library messages that carry their
 * own context ("while planning ...") are kept as they are; others get the
 * step's name unless they already open with it. */
static void step_outcome(sc_run_ctx *rc, const sc_step *s, lt_status st) {
    if (rc->refused) { /* also when expect_error wrapped the step: an error, never a check */
        error_result(rc, &s->pos, s->type->name, "%s", rc->refused_msg);
        return;
    }
    if (s->type->is_check || rc->did_check || rc->failed_check) rc->res->checks++;
    if (st == LT_OK) return;
    if (st == LT_MISMATCH && rc->failed_check) {
        rc->res->checks_failed++;
        record(rc, &rc->pending);
        rc->res->status = LT_SC_FAIL;
        return;
    }
    const char *m = lt_errmsg(), *name = s->type->name;
    int is_while = 0;
    const char *lead = lt_error_lead(lt_errinfo(), &is_while);
    if (is_while) error_result(rc, &s->pos, name, "%s", m);
    else if (!strcmp(lead, name)) error_result(rc, &s->pos, name, "while running %s", m);
    else
        error_result(rc, &s->pos, name, "while running %s: %s", name,
                     m[0] ? m : lt_status_name(st));
}

/* The case's steps, in order, until an error or a hang. */
static void case_steps(sc_run_ctx *rc, sc_case *c) {
    rc->hang_kind = -1;
    rc->failed_rank = -1;
    rc->in_steps = 1;
    for (int i = 0; i < c->nsteps && c->res.status != LT_SC_ERROR && !rc->hung; i++) {
        const sc_step *s = &c->steps[i];
        if (c->single_device && s->type->is_check) { /* --single-device: its own checks left out */
            const sc_step *in = lt__sc_expect_error_inner(s);
            if (!in || in->type->is_check) continue;
            s = in;   /* the step an expect_error wraps runs as it is */
        }
        size_t since = rc->comm ? lt_trace_count(lt_comm_trace(rc->comm)) : 0;
        rc->step_index = i;
        lt_status st = step_run(rc, s);
        lt__sc_trace_step(rc, s, i, since);
        step_outcome(rc, s, st);
    }
}

/* The checks that end a case: --single-device's, the ranks still waiting
 * or failed when the steps ended, and --compare-backend's difference. */
static void case_end(sc_run_ctx *rc, sc_case *c, sc_cmp *cmp) {
    int go_on = c->res.status != LT_SC_ERROR && !rc->hung;
    if (go_on && c->single_device && c->nsteps) {
        rc->failed_check = 0;
        lt__err_clear();
        c->res.checks++;
        end_outcome(rc, lt__sc_diverge_final(rc, &c->steps[c->nsteps - 1]), "--single-device");
    }
    if (c->res.status != LT_SC_ERROR && !rc->hung && lt__sc_any_stopped(rc)) {
        /* the report is at the step of the call it is about */
        rc->failed_check = 0;
        lt__err_clear();
        lt_status st = lt__sc_program_end(rc, &c->steps[c->nsteps - 1]);
        if (st == LT_MISMATCH && rc->failed_check) c->res.checks++;
        end_outcome(rc, st, "steps");
    }
    if (!cmp || cmp->mode != SC_CMP_CHECK || !lt__sc_cmp_done(cmp)) return;
    lt_sc_failure f;   /* a result differs from the other backend's */
    memset(&f, 0, sizeof f);
    int known = cmp->step >= 0 && cmp->step < c->nsteps;
    const sc_pos *pos = known ? &c->steps[cmp->step].pos : &c->pos;
    f.file = pos->file;
    f.line = pos->line;
    f.col = pos->col;
    f.step = known ? c->steps[cmp->step].type->name : "compare-backend";
    f.rank = -1;
    f.message = adup(rc->arena, cmp->msg);
    record(rc, &f);
    c->res.checks++;
    c->res.checks_failed++;
    if (c->res.status == LT_SC_PASS) c->res.status = LT_SC_FAIL;
}

/* Frees what the case held (values, plan, communicator, the declared
 * tensors' charge `held`) and puts its recorded plans into the report. */
static void case_teardown(sc_run_ctx *rc, sc_case *c, sc_arena *arena, uint64_t held) {
    lt__sc_spmd_free(rc);
    lt__sc_numerics_end(rc);
    if (lt__sc_trace_end(rc))
        error_result(rc, &c->pos, "--trace", "out of memory while recording the trace");
    lt__sc_diverge_end(rc);
    for (int i = 0; i < rc->nvals; i++) value_clear(&rc->vals[i]);
    lt__free(rc->vals);
    lt__mem_release(held);   /* the declared tensors are gone */
    lt_plan_free(rc->plan);
    lt_comm_free(rc->comm);
    if (!c->record_plans) return;
    char *text =
        rc->plans && !lt__json_failed() ? cJSON_PrintUnformatted((cJSON *)rc->plans) : NULL;
    if (text) c->res.redistributes = adup(arena, text);
    /* cJSON drops what it cannot allocate: the report would be incomplete */
    if (!c->res.redistributes || lt__json_failed())
        error_result(rc, &c->pos, "--json", "out of memory while recording the redistribute plans");
    cJSON_free(text);
    cJSON_Delete((cJSON *)rc->plans);
}

static void run_case(sc_case *c, sc_arena *arena, FILE *show, sc_cmp *cmp) {
    sc_run_ctx rc;
    memset(&rc, 0, sizeof rc);
    rc.cmp = cmp;
    rc.arena = arena;
    rc.c = c;
    rc.show = show;
    rc.res = &c->res;
    memset(&c->res, 0, sizeof c->res);
    c->res.status = LT_SC_PASS;
    if (c->record_plans) {
        lt__json_begin();
        rc.plans = cJSON_CreateArray();
    }
    double t0 = now_s();
    case_setup(&rc, c, arena);
    sc_loop_run
        loops; /* loops whose count is known only now are spliced into c->steps (scenario_loop.c) */
    lt__sc_loops_begin(&loops, c);
    uint64_t held = case_tensors(&rc, c);
    case_steps(&rc, c);
    case_end(&rc, c, cmp);
    case_teardown(&rc, c, arena, held);
    lt__sc_loops_end(&loops);   /* c's own steps again, for its next run */
    c->res.seconds = now_s() - t0;
}
