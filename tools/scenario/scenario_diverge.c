/* tools/scenario/scenario_diverge.c — the expect_same_as_single_device step:
 * the first divergence of a program, DTensor or per-rank, from the same
 * program on one device (docs/SEMANTICS.md §11.8).
 *
 * The reference is the scenario run on a mesh of the same names with every
 * dim of size 1: one rank holding everything, every collective the
 * identity, expressions evaluated for that rank. While a case holds the step,
 * every name keeps its single-device value (its "ref"), and each step that
 * makes a value is compared with it as soon as it runs:
 *   - a DTensor (distribute, from_local, op, redistribute, rank_map): every
 *     rank's shard against its part of the ref (a Partial dim after its
 *     reduction); distribute, and from_local of values that have no
 *     single-device value, declare the ref instead;
 *   - a full tensor (full_tensor): element by element;
 *   - a LocalTensor (to_local, local_tensor, local_op, collective): through
 *     its layout (diverge_meaning.c): what part of the ref each rank holds.
 *     A LocalTensor of unknown layout is not compared, and one made from
 *     values that differ by rank (local_tensor of `rank`) has no ref at all.
 * After a value passes, its ref becomes the ranks' own values put together,
 * so each step is compared with the single-device step fed the same inputs
 * and rounding of earlier steps does not pile up into false alarms.
 * Steps that ran on some ranks only (ranks:/when:, a rank waiting in a
 * collective) are not compared either; every step not compared is listed
 * in the check's report (a pass says so too).
 *
 * Tolerance at an element whose single-device value is `ref` and which sums
 * L terms of magnitude `mag` (sum of |term|; L = 1 for an elementwise op):
 *     |got - ref| <= atol + rtol * |ref| + (L - 1) * eps * mag
 *  or |got - ref| <= ulps * ulp(ref)
 * atol / rtol: the dtype's defaults of docs/SEMANTICS.md §11.5 unless given;
 * eps: the dtype's machine epsilon; ulps: 2 unless given; integers and bool
 * compare exactly. Keys: rtol, atol, ulps (all optional, >= 0).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "localtensor/reference.h"
#include "tools/scenario/diverge_impl.h"

typedef struct dv_val {
    const char *name;         /* borrowed (arena) */
    lt_tensor *ref;           /* owned; NULL: no single-device value (why says) */
    lt_tensor *mag;           /* owned or NULL: sum of |terms| per element */
    int64_t len;              /* terms summed per element */
    dv_meaning m;             /* what part of ref each rank holds */
    char why[200];            /* not compared: why */
    int stale_at;             /* >= 0: the name was stored anew at this step index by a step
                               * no recorder follows, or before its recorder ran: its record
                               * is the input that step read, and nothing later */
} dv_val;

typedef struct {
    int has_rtol, has_atol, has_ulps;
    double rtol, atol, ulps;
} dv_data;

typedef struct dv_state {
    dv_val *v;                /* (nv) */
    int nv, cap;
    const dv_data *tol;       /* the case's first check step's keys */
    lt_mesh one;              /* the reference's mesh: every dim of size 1 */
    int compared;             /* values compared */
    int nskip;                /* values not compared */
    char skips[1536];         /* the first of them, one per line */
    int diverged;             /* the first divergence is known */
    int div_step;             /* its step index */
    char *msg;                /* owned: its report */
    int rank;
    char index[128], expected[40], actual[40], where[400];
} dv_state;

static char dv_off;           /* rc->diverge == &dv_off: the case has no such step */

static const dv_data *find_check(const sc_case *c) {
    for (int i = 0; i < c->nsteps; i++) {
        const sc_step *st = &c->steps[i], *in = lt__sc_expect_error_inner(st);
        if (in) st = in;
        if (!strcmp(st->type->name, "expect_same_as_single_device")) return st->data;
    }
    return NULL;
}

static const dv_data dv_defaults;   /* --single-device's check: the default tolerances */

static dv_state *state(sc_run_ctx *rc) {
    if (rc->diverge == &dv_off) return NULL;
    if (rc->diverge) return rc->diverge;
    const dv_data *d = rc->nranks >= 0        ? NULL
                       : rc->c->single_device ? &dv_defaults
                                              : find_check(rc->c);
    dv_state *s = d ? lt__calloc(1, sizeof(dv_state)) : NULL;
    rc->diverge = s ? (void *)s : (void *)&dv_off;
    if (!s) return NULL;   /* out of memory: the step then says so */
    s->tol = d;
    s->one = *rc->c->mesh;
    for (int i = 0; i < s->one.ndim; i++) s->one.shape[i] = 1;
    s->one.world = 1;
    return s;
}

static void val_clear(dv_val *v) {
    lt_tensor_free(v->ref);
    lt_tensor_free(v->mag);
    v->ref = v->mag = NULL;
    v->len = 1;
    v->why[0] = 0;
    v->stale_at = -1;
    lt__dv_meaning_unknown(&v->m);
}

void lt__sc_diverge_end(sc_run_ctx *rc) {
    dv_state *s = rc->diverge == &dv_off ? NULL : rc->diverge;
    if (s) {
        for (int i = 0; i < s->nv; i++) val_clear(&s->v[i]);
        lt__free(s->v);
        lt__free(s->msg);
        lt__free(s);
    }
    rc->diverge = NULL;
}

int lt__sc_diverge_on(sc_run_ctx *rc) {
    dv_state *s = state(rc);
    return s && !s->diverged;
}

static dv_val *record_of(dv_state *s, const char *name) {
    for (int i = 0; i < s->nv; i++)
        if (!strcmp(s->v[i].name, name)) return &s->v[i];
    return NULL;
}

/* The record of input `name` as the running step read it (NULL: none). */
static dv_val *find(const sc_run_ctx *rc, dv_state *s, const char *name) {
    dv_val *v = record_of(s, name);
    return v && (v->stale_at < 0 || v->stale_at == rc->step_index) ? v : NULL;
}

/* name's record, emptied (NULL: out of memory). */
static dv_val *slot(dv_state *s, const char *name) {
    dv_val *v = record_of(s, name);
    if (v) {
        val_clear(v);
        return v;
    }
    if (s->nv == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        dv_val *nv = lt__realloc(s->v, sizeof *nv * (size_t)cap);
        if (!nv) return NULL;
        s->v = nv, s->cap = cap;
    }
    v = &s->v[s->nv++];
    memset(v, 0, sizeof *v);
    v->name = name;
    val_clear(v);
    return v;
}

const lt_tensor *lt__sc_diverge_ref(sc_run_ctx *rc, const char *name) {
    dv_state *s = state(rc);
    dv_val *v = s ? find(rc, s, name) : NULL;
    return v ? v->ref : NULL;
}

void lt__sc_diverge_env(sc_run_ctx *rc, sc_env *env) {
    dv_state *s = state(rc);
    lt__sc_env_rank(s ? &s->one : rc->c->mesh, 0, env);
    env->reference = 1;
}

void lt__sc_diverge_forget(sc_run_ctx *rc, const char *name) {
    dv_state *s = rc->diverge && rc->diverge != &dv_off ? rc->diverge : NULL;
    dv_val *v = s ? record_of(s, name) : NULL;
    if (v && v->stale_at < 0)
        v->stale_at = rc->step_index; /* the step's recorder, if any, replaces it */
}

/* st's 1-based number in the case (a step an expect_error wraps: the expect_error's). */
static int step_no(const sc_run_ctx *rc, const sc_step *st) {
    const sc_case *c = rc->c;
    return st >= c->steps && st < c->steps + c->nsteps ? (int)(st - c->steps) + 1
                                                       : rc->step_index + 1;
}

/* Lists step st's value `name` as not compared, for `why`. */
static void skip(sc_run_ctx *rc, dv_state *s, const sc_step *st, const char *name,
                 const char *why) {
    s->nskip++;
    size_t u = strlen(s->skips);
    if (s->nskip > 8 || u >= sizeof s->skips - 1) return;
    snprintf(s->skips + u, sizeof s->skips - u, "%s    step %d: %s '%s' at %s:%d:%d (%s)",
             u ? "\n" : "", step_no(rc, st), st->type->name, name, st->pos.file, st->pos.line,
             st->pos.col, why);
}

/* 1 when every rank ran st together (no ranks:/when: leaving one out, nobody waiting). */
static int uniform(const sc_run_ctx *rc, const sc_step *st, char *why, size_t n) {
    for (int r = 0; st->mask && r < rc->c->mesh->world; r++)
        if (!st->mask[r]) {
            snprintf(why, n, "ran on some ranks only (ranks:/when:)");
            return 0;
        }
    if (rc->replaying || lt__sc_any_stopped(rc)) {
        snprintf(why, n, "ranks ran it at different times (a rank waited in a collective)");
        return 0;
    }
    return 1;
}

static double dtype_eps(lt_dtype dt, int *emin) {
    switch (dt) {
    case LT_BF16: *emin = -126; return 0x1p-7;
    case LT_F16: *emin = -14; return 0x1p-10;
    case LT_F32: *emin = -126; return 0x1p-23;
    case LT_F64: *emin = -1022; return 0x1p-52;
    default: *emin = 0; return 0;
    }
}

static void tol_for(const dv_state *s, lt_dtype dt, dv_tol *t) {
    const dv_data *d = s->tol;
    lt_dtype_default_tol(dt, &t->rtol, &t->atol);
    if (d->has_rtol) t->rtol = d->rtol;
    if (d->has_atol) t->atol = d->atol;
    t->ulps = d->has_ulps ? d->ulps : 2;
    t->eps = dtype_eps(dt, &t->emin);
    t->exact = t->eps == 0;
}

/* Keeps the report of the first divergence (step st, value `name` of kind
 * `what`: "DTensor", "LocalTensor", "full tensor"). */
static lt_status diverged(sc_run_ctx *rc, dv_state *s, const sc_step *st, const char *kind,
                          const char *name, const char *what, const dv_hit *h, const char *layout,
                          const char *diag) {
    char e[40], a[40], al[40], rk[512], tail[1024];
    snprintf(s->where, sizeof s->where, "step %d: %s at %s:%d:%d, '%s'", step_no(rc, st), kind,
             st->pos.file, st->pos.line, st->pos.col, name);
    lt__sc_fmt_num(h->ref, e, sizeof e);
    lt__sc_fmt_num(h->got, a, sizeof a);
    snprintf(al, sizeof al, "%.3g", h->allowed);
    if (h->group[0])
        snprintf(rk, sizeof rk, "the %s (a Partial value), local index %s", h->group, h->local);
    else if (h->rank >= 0) snprintf(rk, sizeof rk, "rank %d, local index %s", h->rank, h->local);
    else snprintf(rk, sizeof rk, "the value");
    snprintf(tail, sizeof tail, "%s%s", layout[0] ? "; layout " : "", layout);
    size_t cap = 4096;
    s->msg = lt__malloc(cap);
    if (!s->msg) return lt__err(LT_NOMEM, "out of memory");
    if (h->shape)
        snprintf(s->msg, cap, "first divergence from the single-device program at %s: %s%s",
                 s->where, h->shape_msg, tail);
    else
        snprintf(s->msg, cap,
                 "first divergence from the single-device program at %s: %s, global index %s: "
                 "single-device %s, "
                 "%s %s (|difference| %.3g > allowed %s; %lld element%s of this step differ%s%s; "
                 "tolerance: "
                 "docs/SEMANTICS.md §11.8)",
                 s->where, rk, h->global, e, what, a, fabs(h->got - h->ref), al,
                 (long long)h->ndiff, h->ndiff == 1 ? "" : "s", h->ndiff == 1 ? "s" : "", tail);
    if (diag[0]) {
        size_t u = strlen(s->msg);
        snprintf(s->msg + u, cap - u, "\n        diagnosis: %s", diag);
    }
    s->diverged = 1;
    s->div_step = step_no(rc, st) - 1;
    s->rank = h->shape ? h->rank : h->group[0] ? -1 : h->rank;
    snprintf(s->index, sizeof s->index, "%s", h->shape ? "" : h->global);
    snprintf(s->expected, sizeof s->expected, "%s", h->shape ? "" : e);
    snprintf(s->actual, sizeof s->actual, "%s", h->shape ? "" : a);
    return LT_OK;
}

/* Compares shards (layout m) of value v (its ref, mag, len set) made by
 * step st; on a pass v->ref becomes the shards put together. */
static lt_status check_shards(sc_run_ctx *rc, dv_state *s, const sc_step *st, const char *kind,
                              const char *what, dv_val *v, lt_tensor *const *shards) {
    const lt_mesh *mesh = rc->c->mesh;
    dv_tol t;
    tol_for(s, v->ref->dtype, &t);
    dv_hit h;
    lt_tensor *as = NULL;
    char why[160] = "";
    lt_status e =
        lt__dv_compare(mesh, shards, v->m.pl, v->ref, v->mag, v->len, &t, &h, &as, why, sizeof why);
    if (e == LT_UNSUPPORTED) {
        lt__err_clear();
        skip(rc, s, st, v->name, why);
        return LT_OK;
    }
    LT_TRY(e);
    s->compared++;
    if (!h.found) {
        if (as) {
            lt_tensor_free(v->ref);
            lt_tensor_free(v->mag);
            v->ref = as, v->mag = NULL, v->len = 1;
        }
        return LT_OK;
    }
    char layout[160], diag[1024];
    lt__dv_meaning_str(mesh, &v->m, layout, sizeof layout);
    LT_TRY(lt__dv_diagnose(mesh, shards, v->m.pl, v->ref, v->mag, v->len, &t, &v->m, &h, diag,
                           sizeof diag));
    return diverged(rc, s, st, kind, v->name, what, &h, layout, diag);
}

/* ---- recorders (each after its step stored the value) ------------------------------------ */

/* DTensor `name` made by st against ref (taken; NULL: the DTensor declares its value). */
static lt_status record_dtensor(sc_run_ctx *rc, dv_state *s, const sc_step *st, const char *kind,
                                const char *name, lt_tensor *ref, lt_tensor *mag, int64_t len) {
    const lt_dtensor *dt = lt__sc_value(rc, name)->dt;
    int declare = !ref;
    dv_val *v = slot(s, name);
    lt_status e = v ? LT_OK : lt__err(LT_NOMEM, "out of memory");
    if (!e && declare) e = lt_full_tensor_direct(dt, &ref);
    if (e) {
        lt_tensor_free(ref);
        lt_tensor_free(mag);
        return e;
    }
    v->ref = ref, v->mag = declare ? NULL : mag, v->len = declare || len < 1 ? 1 : len;
    if (declare) lt_tensor_free(mag);
    v->m.known = 1;
    memcpy(v->m.pl, dt->placements, sizeof(lt_placement) * (size_t)rc->c->mesh->ndim);
    return declare ? LT_OK : check_shards(rc, s, st, kind, "DTensor", v, dt->local->shards);
}

/* Copies of input `name`'s ref, mag and len (*ref NULL: it has none). */
static lt_status ref_of(const sc_run_ctx *rc, dv_state *s, const char *name, lt_tensor **ref,
                        lt_tensor **mag, int64_t *len) {
    dv_val *in = find(rc, s, name);
    *ref = *mag = NULL;
    *len = 1;
    if (!in || !in->ref) return LT_OK;
    LT_TRY(lt_clone(in->ref, ref));
    if (in->mag && lt_clone(in->mag, mag)) {
        lt_tensor_free(*ref);
        *ref = NULL;
        return LT_NOMEM;
    }
    *len = in->len;
    return LT_OK;
}

lt_status lt__sc_diverge_distribute(sc_run_ctx *rc, const sc_step *st, const char *name) {
    dv_state *s = state(rc);
    if (!s || s->diverged) return LT_OK;
    return record_dtensor(rc, s, st, "distribute", name, NULL, NULL, 1);
}

lt_status lt__sc_diverge_from_local(sc_run_ctx *rc, const sc_step *st, const char *tensor,
                                    const char *name) {
    dv_state *s = state(rc);
    if (!s || s->diverged) return LT_OK;
    lt_tensor *ref = NULL, *mag = NULL;
    int64_t len = 1;
    if (tensor) LT_TRY(ref_of(rc, s, tensor, &ref, &mag, &len));
    return record_dtensor(rc, s, st, "from_local", name, ref, mag,
                          len); /* ref NULL: it declares its value */
}

lt_status lt__sc_diverge_full(sc_run_ctx *rc, const sc_step *st, const char *tensor,
                              const char *name) {
    dv_state *s = state(rc);
    if (!s || s->diverged) return LT_OK;
    const lt_tensor *got = lt__sc_value(rc, name)->full;
    lt_tensor *ref = NULL, *mag = NULL;
    int64_t len = 1;
    LT_TRY(ref_of(rc, s, tensor, &ref, &mag, &len));
    dv_val *v = slot(s, name);
    if (!v || !ref || !got) {
        lt_tensor_free(ref);
        lt_tensor_free(mag);
        return v ? LT_OK : lt__err(LT_NOMEM, "out of memory");
    }
    v->ref = ref, v->mag = mag, v->len = len;
    lt__dv_meaning_all_r(rc->c->mesh, &v->m);
    dv_tol t;
    tol_for(s, v->ref->dtype, &t);
    dv_hit h;
    lt__dv_compare_full(got, v->ref, v->mag, v->len, &t, &h);
    s->compared++;
    return h.found ? diverged(rc, s, st, "full_tensor", name, "full tensor", &h, "", "") : LT_OK;
}

/* The record of value `name`, made by step st from input `tensor` alone
 * (to_local, a collective): emptied and given copies of the input's ref,
 * mag and len, with *im the input's layout. *out NULL (LT_OK) when it is
 * not compared — the step did not run on every rank together, or the input
 * has no single-device value — after listing it. */
static lt_status derive(sc_run_ctx *rc, dv_state *s, const sc_step *st, const char *tensor,
                        const char *name, dv_meaning *im, dv_val **out) {
    char why[200];
    int all = uniform(rc, st, why, sizeof why);
    lt_tensor *ref = NULL, *mag = NULL;
    int64_t len = 1;
    dv_val *in = find(rc, s, tensor);
    lt__dv_meaning_unknown(im);
    if (in) *im = in->m;
    if (all) LT_TRY(ref_of(rc, s, tensor, &ref, &mag, &len));
    if (all && !ref) snprintf(why, sizeof why, "input '%s' has no single-device value", tensor);
    dv_val *v = *out = slot(s, name);
    if (v && ref) {
        v->ref = ref, v->mag = mag, v->len = len;
        return LT_OK;
    }
    lt_tensor_free(ref);
    lt_tensor_free(mag);
    *out = NULL;
    if (!v) return lt__err(LT_NOMEM, "out of memory");
    snprintf(v->why, sizeof v->why, "%s", why);
    skip(rc, s, st, name, why);
    return LT_OK;
}

lt_status lt__sc_diverge_to_local(sc_run_ctx *rc, const sc_step *st, const char *tensor,
                                  const char *name) {
    dv_state *s = state(rc);
    if (!s || s->diverged) return LT_OK;
    dv_val *v;
    dv_meaning m;
    LT_TRY(derive(rc, s, st, tensor, name, &m, &v));
    if (v) v->m = m;   /* the same values: nothing new to compare */
    return LT_OK;
}

lt_status lt__sc_diverge_local_tensor(sc_run_ctx *rc, const sc_step *st, const char *name) {
    dv_state *s = state(rc);
    if (!s || s->diverged) return LT_OK;
    char why[160];
    int all = uniform(rc, st, why, sizeof why);
    lt_tensor *const *sh = lt__sc_value(rc, name)->local->shards;
    dv_val *v = slot(s, name);
    if (!v) return lt__err(LT_NOMEM, "out of memory");
    for (int r = 1; all && r < rc->c->mesh->world; r++) {
        int same = sh[r]->ndim == sh[0]->ndim &&
                   !memcmp(sh[r]->shape, sh[0]->shape, sizeof(int64_t) * (size_t)sh[0]->ndim);
        for (int64_t i = 0, n = lt_numel(sh[0]); same && i < n; i++)
            same = lt_get_flat(sh[r], i) == lt_get_flat(sh[0], i);
        if (!same)
            all = 0, snprintf(why, sizeof why, "its values differ by rank: no single-device value");
    }
    if (!all) {
        snprintf(v->why, sizeof v->why, "%s", why);
        skip(rc, s, st, name, why);
        return LT_OK;
    }
    LT_TRY(lt_clone(sh[0], &v->ref));   /* the same on every rank: replicated */
    lt__dv_meaning_all_r(rc->c->mesh, &v->m);
    return LT_OK;
}

/* A LocalTensor value v (ref set, meaning m) made by st: compared when its layout is known. */
static lt_status check_local(sc_run_ctx *rc, dv_state *s, const sc_step *st, const char *kind,
                             dv_val *v, const char *why) {
    if (!v->m.known) {
        snprintf(v->why, sizeof v->why, "%s", why);
        skip(rc, s, st, v->name, why);
        return LT_OK;
    }
    return check_shards(rc, s, st, kind, "LocalTensor", v,
                        lt__sc_value(rc, v->name)->local->shards);
}

lt_status lt__sc_diverge_local_op(sc_run_ctx *rc, const sc_step *st, lt_op_kind op,
                                  const lt_op_args *a, const char *const *in, int nin,
                                  const char *const *as, int nout, lt_tensor **refs,
                                  lt_tensor **mags, int64_t len, const char *ref_err) {
    dv_state *s = state(rc);
    lt_status e = LT_OK;
    char why[200] = "", kind[96];
    snprintf(kind, sizeof kind, "local_op %s", lt_op_name(op));
    int all = s && !s->diverged ? uniform(rc, st, why, sizeof why) : 0;
    const dv_meaning *im[LT_OP_MAX_INPUTS];
    const lt_tensor *ir[LT_OP_MAX_INPUTS];
    for (int k = 0; all && k < nin; k++) {
        dv_val *v = find(rc, s, in[k]);
        if (!v || !v->ref) {
            snprintf(why, sizeof why, "input '%s' has no single-device value", in[k]);
            all = 0;
        } else {
            im[k] = &v->m, ir[k] = v->ref;
        }
    }
    if (all && ref_err)
        snprintf(why, sizeof why, "the single-device program fails here: %.150s", ref_err), all = 0;
    dv_meaning m;
    if (all) lt__dv_local_op_meaning(rc->c->mesh, op, a, im, ir, nin, &m, why, sizeof why);
    for (int j = 0; s && !s->diverged && j < nout && !e; j++) {
        dv_val *v = slot(s, as[j]);
        if (!v) {
            e = lt__err(LT_NOMEM, "out of memory");
            break;
        }
        if (!all || !refs || !refs[j]) {
            snprintf(v->why, sizeof v->why, "%s", why[0] ? why : "no single-device value");
            skip(rc, s, st, as[j], v->why);
            continue;
        }
        v->ref = refs[j];
        refs[j] = NULL;
        if (mags) v->mag = mags[j], mags[j] = NULL;
        v->len = len < 1 ? 1 : len;
        v->m = m;
        e = check_local(rc, s, st, kind, v, why);
    }
    for (int j = 0; j < nout; j++) {
        if (refs) lt_tensor_free(refs[j]), refs[j] = NULL;
        if (mags) lt_tensor_free(mags[j]), mags[j] = NULL;
    }
    return e;
}

lt_status lt__sc_diverge_collective(sc_run_ctx *rc, const sc_step *st, lt_coll kind, int md,
                                    lt_redop op, int dim, int cdim, const lt_split_rule *rule,
                                    const char *tensor, const char *name) {
    dv_state *s = state(rc);
    if (!s || s->diverged || !tensor || !name) return LT_OK;
    dv_val *v;
    dv_meaning im;
    /* on one rank every collective is the identity: the input's value */
    LT_TRY(derive(rc, s, st, tensor, name, &im, &v));
    if (!v) return LT_OK;
    char why[200] = "", what[96];
    snprintf(what, sizeof what, "collective %s", lt_coll_name(kind));
    v->len += rc->c->mesh->shape[md];
    lt__dv_collective_meaning(rc->c->mesh, kind, md, op, dim, cdim, rule, &im, v->ref->ndim, &v->m,
                              why, sizeof why);
    return check_local(rc, s, st, what, v, why);
}

/* ---- DTensor ops, redistribute, rank_map ----------------------------------------------------- */

static lt_status abs_copy(const lt_tensor *t, lt_tensor **out) {
    LT_TRY(lt_contiguous(t, out));
    lt_status st = lt_tensor_make_writable(*out);   /* a view of t when t is contiguous */
    if (st) {
        lt_tensor_free(*out);
        *out = NULL;
        return st;
    }
    for (int64_t i = 0, n = lt_numel(*out); i < n; i++)
        lt_set_flat(*out, i, fabs(lt_get_flat(*out, i)));
    return LT_OK;
}

lt_status lt__sc_diverge_mag(lt_op_kind op, const lt_tensor *const *full, int nin,
                             const lt_op_args *args, lt_tensor **mag, int max_out, int *nmag,
                             int64_t *len) {
    *nmag = 0;
    *len = 1;
    int linear = op == LT_OP_SUM || op == LT_OP_MEAN || op == LT_OP_MATMUL || op == LT_OP_MM ||
                 op == LT_OP_BMM || op == LT_OP_ADDMM;
    if (!linear) return LT_OK;
    if (op == LT_OP_SUM || op == LT_OP_MEAN) {
        const lt_tensor *x = full[0];
        if (args->ndims == 0) *len = lt_numel(x);
        else
            for (int i = 0; i < args->ndims; i++) {
                int d = args->dims[i] < 0 ? args->dims[i] + x->ndim : args->dims[i];
                if (d >= 0 && d < x->ndim) *len = x->shape[d] ? lt__mul_sat(*len, x->shape[d]) : 0;
            }
    } else {
        const lt_tensor *a = full[op == LT_OP_ADDMM ? 1 : 0];
        *len = a->ndim ? a->shape[a->ndim - 1] : 1;
        if (op == LT_OP_ADDMM) (*len)++;
    }
    lt_tensor *absin[LT_OP_MAX_INPUTS] = {0};
    lt_status e = LT_OK;
    for (int k = 0; k < nin && !e; k++) e = abs_copy(full[k], &absin[k]);
    if (!e) e = lt_op_reference(op, (const lt_tensor *const *)absin, nin, args, mag, max_out, nmag);
    for (int j = 0; j < *nmag && !e; j++)
        for (int64_t i = 0, n = lt_numel(mag[j]); i < n; i++)
            lt_set_flat(mag[j], i, fabs(lt_get_flat(mag[j], i)));
    for (int k = 0; k < nin; k++) lt_tensor_free(absin[k]);
    return e;
}

lt_status lt__sc_diverge_op(sc_run_ctx *rc, const sc_step *st, lt_op_kind op, const char *const *in,
                            int nin, const lt_op_args *args, const char *const *names, int nout) {
    dv_state *s = state(rc);
    if (!s || s->diverged || nin < 1) return LT_OK;
    const lt_tensor *full[LT_OP_MAX_INPUTS];
    lt_tensor *ref[LT_OP_MAX_OUTPUTS] = {0}, *mag[LT_OP_MAX_OUTPUTS] = {0};
    int nref = 0, nmag = 0, have = 1;
    int64_t len = 1;
    lt_status e = LT_OK;
    for (int k = 0; k < nin; k++) {
        dv_val *v = find(rc, s, in[k]);
        full[k] = v ? v->ref : NULL;
        have &= full[k] != NULL;
    }
    /* inputs the comparison did not follow: the outputs declare their values */
    if (have) e = lt_op_reference(op, full, nin, args, ref, LT_OP_MAX_OUTPUTS, &nref);
    if (have && !e)
        e = lt__sc_diverge_mag(op, full, nin, args, mag, LT_OP_MAX_OUTPUTS, &nmag, &len);
    if (e &&
        e != LT_NOMEM) { /* the op ran on the ranks: its reference only fails for want of memory */
        lt__err_clear();
        e = LT_OK, nref = nmag = 0;
    }
    char kind[96];
    snprintf(kind, sizeof kind, "op %s", lt_op_name(op));
    for (int j = 0; j < nout && !e && !s->diverged; j++) {
        e = record_dtensor(rc, s, st, kind, names[j], j < nref ? ref[j] : NULL,
                           j < nmag ? mag[j] : NULL, len);
        ref[j] = mag[j] = NULL;
    }
    for (int j = 0; j < nref; j++) lt_tensor_free(ref[j]);
    for (int j = 0; j < nmag; j++) lt_tensor_free(mag[j]);
    return e;
}

lt_status lt__sc_diverge_same(sc_run_ctx *rc, const sc_step *st, const char *kind,
                              const char *tensor, const char *name) {
    dv_state *s = state(rc);
    if (!s || s->diverged) return LT_OK;
    lt_tensor *ref = NULL, *mag = NULL;
    int64_t len = 1;
    dv_val *in = find(rc, s, tensor);
    /* out of Partial: the reduction of the partial values may run in another order */
    for (int i = 0; in && in->m.known && i < rc->c->mesh->ndim; i++)
        if (in->m.pl[i].kind == LT_PL_PARTIAL) len += rc->c->mesh->shape[i];
    int64_t l0;
    LT_TRY(ref_of(rc, s, tensor, &ref, &mag, &l0));
    return record_dtensor(rc, s, st, kind, name, ref, mag, l0 + len - 1);
}

/* ---- the step ------------------------------------------------------------------------------ */

lt_status lt__sc_parse_expect_same_as_single_device(sc_parse_ctx *pc, const sc_node *body,
                                                    sc_step *st) {
    static const char *const keys[] = {"rtol", "atol", "ulps", NULL};
    const char *what = "expect_same_as_single_device";
    dv_data *d = lt__sc_alloc(pc->arena, sizeof *d);
    if (!d) return LT_NOMEM;
    st->data = d;
    if (lt__sc_is_null(body)) return LT_OK;
    LT_TRY(lt__sc_keys(body, what, keys));
    const sc_node *n;
    struct { const char *key; int *has; double *v;
    } k[] = {{"rtol", &d->has_rtol, &d->rtol},
             {"atol", &d->has_atol, &d->atol},
             {"ulps", &d->has_ulps, &d->ulps}};
    for (int i = 0; i < 3; i++)
        if ((n = lt__sc_get(body, k[i].key))) {
            char w[96];
            snprintf(w, sizeof w, "%s: %s", what, k[i].key);
            LT_TRY(lt__sc_f64(n, w, k[i].v));
            if (!(*k[i].v >= 0) || isinf(*k[i].v))
                return lt__sc_err(n, LT_INVALID, "%s: must be a finite number >= 0", w);
            *k[i].has = 1;
        }
    return LT_OK;
}

/* "5 values compared ...; 2 not compared:\n    step 3: ..." into buf. */
static void summary(const dv_state *s, char *buf, size_t n) {
    size_t u = (size_t)snprintf(buf, n, "%d value%s compared with the single-device program",
                                s->compared, s->compared == 1 ? "" : "s");
    if (!s->nskip || u >= n) return;
    u += (size_t)snprintf(buf + u, n - u, "; %d not compared:\n%s", s->nskip, s->skips);
    if (s->nskip > 8 && u < n) snprintf(buf + u, n - u, "\n    ... and %d more", s->nskip - 8);
}

/* The check at step st, over the steps before step index `here`. */
static lt_status check(sc_run_ctx *rc, const sc_step *st, int here) {
    if (rc->nranks >= 0)
        return lt__sc_numerics_refuse(
            rc, "expect_same_as_single_device"); /* not every rank has values */
    dv_state *s = state(rc);
    if (!s) return lt__err(LT_NOMEM, "out of memory");
    if (s->diverged && s->div_step < here)
        return lt__sc_check_fail(rc, st, s->rank, s->index[0] ? s->index : NULL,
                                 s->expected[0] ? s->expected : NULL,
                                 s->actual[0] ? s->actual : NULL, s->where, "%s", s->msg);
    char sum[2048];
    summary(s, sum, sizeof sum);
    /* nothing compared passes too (the program may be right), but never silently: the note says so
     */
    char note[2300];
    snprintf(note, sizeof note, "expect_same_as_single_device at %s:%d:%d: %s", st->pos.file,
             st->pos.line, st->pos.col, sum);
    return lt__sc_add_note(rc, note);
}

lt_status lt__sc_run_expect_same_as_single_device(sc_run_ctx *rc, const sc_step *st) {
    return check(rc, st, step_no(rc, st) - 1);
}

lt_status lt__sc_diverge_final(sc_run_ctx *rc, const sc_step *last) {
    return check(rc, last, rc->c->nsteps);
}
