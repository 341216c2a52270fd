/* tools/scenario/scenario_diverge.c — the expect_same_as_single_device step:
 * the first divergence of a DTensor program from the single-device program,
 * under a tolerance model (docs/SEMANTICS.md §11.8).
 *
 * While a case holds this step, every step that produces a DTensor from
 * DTensors (op, redistribute, rank_map) is recorded with the value the
 * single-device program gives for that step: the op's reference
 * (localtensor/reference.c) on the full values of the step's inputs, or, for
 * redistribute and rank_map, the full value of the input (neither may change
 * a value). Each step is compared with the single-device step fed the same
 * inputs, so rounding differences of earlier steps do not pile up into false
 * alarms, and the first step that departs is the one that diverged.
 *
 * The step walks the records in order and reports the FIRST step, rank,
 * local index and global index where the DTensor value is outside the
 * tolerance; for an output with a Partial placement the comparison is on the
 * reduced value (rank -1: no single rank holds it).
 *
 * Tolerance at an element whose single-device value is `ref` and which sums
 * L terms of magnitude `mag` (sum of |term|; L = 1 for an elementwise op):
 *     |got - ref| <= atol + rtol * |ref| + (L - 1) * eps * mag
 *  or |got - ref| <= ulps * ulp(ref)
 * atol / rtol: the dtype's defaults of docs/SEMANTICS.md §11.5 unless given;
 * eps: the dtype's machine epsilon; ulps: 2 unless given; integers and bool
 * compare exactly. The (L - 1) * eps * mag term is the classic bound on the
 * difference between two summation orders of L terms in that precision.
 *
 * Keys: rtol, atol, ulps (all optional, >= 0).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "localtensor/layout.h"
#include "localtensor/reference.h"
#include "tools/scenario/scenario_impl.h"

typedef struct dv_rec {
    int step;                 /* 1-based index in the case */
    sc_pos pos;
    char kind[96];            /* "op add", "rank_map", "redistribute" */
    const char *name;         /* the output's name (arena) */
    lt_dtensor *got;          /* a copy of the DTensor result */
    lt_tensor *ref;           /* the single-device value */
    lt_tensor *mag;           /* sum of |terms| per element, or NULL (|ref|) */
    int64_t len;              /* reduction length L */
} dv_rec;

typedef struct dv_state {
    int n, cap;
    dv_rec *r;
} dv_state;

static char dv_off;           /* rc->diverge == &dv_off: the case has no such step */

static dv_state *state(sc_run_ctx *rc) {
    if (rc->diverge == &dv_off) return NULL;
    if (rc->diverge) return rc->diverge;
    int want = 0;
    /* expect_error may wrap the step (its inner step is not visible here) */
    for (int i = 0; i < rc->c->nsteps && !want; i++)
        want = !strcmp(rc->c->steps[i].type->name, "expect_same_as_single_device") ||
               !strcmp(rc->c->steps[i].type->name, "expect_error");
    rc->diverge = want ? lt__calloc(1, sizeof(dv_state)) : (void *)&dv_off;
    if (!rc->diverge) rc->diverge = &dv_off;   /* out of memory: the step then says so */
    return rc->diverge == &dv_off ? NULL : rc->diverge;
}

static void rec_free(dv_rec *r) {
    lt_dtensor_free(r->got);
    lt_tensor_free(r->ref);
    lt_tensor_free(r->mag);
}

void lt__sc_diverge_end(sc_run_ctx *rc) {
    dv_state *s = rc->diverge == &dv_off ? NULL : rc->diverge;
    if (s) {
        for (int i = 0; i < s->n; i++) rec_free(&s->r[i]);
        lt__free(s->r);
        lt__free(s);
    }
    rc->diverge = NULL;
}

/* Takes ref and mag (frees them on failure). */
static lt_status add_rec(sc_run_ctx *rc, dv_state *s, const sc_step *st, const char *kind, const char *name,
                         const lt_dtensor *got, lt_tensor *ref, lt_tensor *mag, int64_t len) {
    lt_status e = LT_OK;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        dv_rec *nr = lt__realloc(s->r, sizeof *nr * (size_t)cap);
        if (!nr) e = lt__err(LT_NOMEM, "out of memory");
        else s->r = nr, s->cap = cap;
    }
    dv_rec *r = e ? NULL : &s->r[s->n];
    if (r) {
        memset(r, 0, sizeof *r);
        e = lt_dtensor_clone(got, &r->got);
    }
    if (e) {
        lt_tensor_free(ref);
        lt_tensor_free(mag);
        return e;
    }
    r->step = (int)(st - rc->c->steps) + 1;
    r->pos = st->pos;
    snprintf(r->kind, sizeof r->kind, "%s", kind);
    r->name = name;
    r->ref = ref;
    r->mag = mag;
    r->len = len < 1 ? 1 : len;
    s->n++;
    return LT_OK;
}

static lt_status abs_copy(const lt_tensor *t, lt_tensor **out) {
    LT_TRY(lt_contiguous(t, out));
    lt_status st = lt_tensor_make_writable(*out);   /* a view of t when t is contiguous */
    if (st) {
        lt_tensor_free(*out);
        *out = NULL;
        return st;
    }
    for (int64_t i = 0, n = lt_numel(*out); i < n; i++) lt_set_flat(*out, i, fabs(lt_get_flat(*out, i)));
    return LT_OK;
}

lt_status lt__sc_diverge_op(sc_run_ctx *rc, const sc_step *st, lt_op_kind op, const lt_dtensor *const *in, int nin,
                            const lt_op_args *args, lt_dtensor *const *out, int nout, const char *const *names) {
    dv_state *s = state(rc);
    if (!s || nin < 1) return LT_OK;
    lt_tensor *full[LT_OP_MAX_INPUTS] = {0}, *absin[LT_OP_MAX_INPUTS] = {0};
    lt_tensor *ref[LT_OP_MAX_OUTPUTS] = {0}, *mag[LT_OP_MAX_OUTPUTS] = {0};
    int nref = 0, nmag = 0;
    lt_status e = LT_OK;
    for (int k = 0; k < nin && !e; k++) e = lt_full_tensor_direct(in[k], &full[k]);
    if (!e) e = lt_op_reference(op, (const lt_tensor *const *)full, nin, args, ref, LT_OP_MAX_OUTPUTS, &nref);
    /* linear reductions: the magnitude of the summed terms is the op on |inputs| */
    int64_t len = 1;
    int linear = op == LT_OP_SUM || op == LT_OP_MEAN || op == LT_OP_MATMUL || op == LT_OP_MM ||
                 op == LT_OP_BMM || op == LT_OP_ADDMM;
    if (!e && linear) {
        if (op == LT_OP_SUM || op == LT_OP_MEAN) {
            const lt_tensor *x = full[0];
            if (args->ndims == 0) len = lt_numel(x);
            else
                for (int i = 0; i < args->ndims; i++) {
                    int d = args->dims[i] < 0 ? args->dims[i] + x->ndim : args->dims[i];
                    if (d >= 0 && d < x->ndim) len = x->shape[d] ? lt__mul_sat(len, x->shape[d]) : 0;
                }
        } else {
            const lt_tensor *a = full[op == LT_OP_ADDMM ? 1 : 0];
            len = a->ndim ? a->shape[a->ndim - 1] : 1;
            if (op == LT_OP_ADDMM) len++;
        }
        for (int k = 0; k < nin && !e; k++) e = abs_copy(full[k], &absin[k]);
        if (!e) e = lt_op_reference(op, (const lt_tensor *const *)absin, nin, args, mag, LT_OP_MAX_OUTPUTS, &nmag);
        for (int j = 0; j < nmag && !e; j++)
            for (int64_t i = 0, n = lt_numel(mag[j]); i < n; i++) lt_set_flat(mag[j], i, fabs(lt_get_flat(mag[j], i)));
    }
    for (int k = 0; k < nin; k++) {
        lt_tensor_free(full[k]);
        lt_tensor_free(absin[k]);
    }
    char kind[96];
    snprintf(kind, sizeof kind, "op %s", lt_op_name(op));
    for (int j = 0; j < nout && !e; j++) {
        if (j >= nref) break;
        e = add_rec(rc, s, st, kind, names[j], out[j], ref[j], j < nmag ? mag[j] : NULL, len);
        ref[j] = NULL;
        if (j < nmag) mag[j] = NULL;
    }
    for (int j = 0; j < nref; j++) lt_tensor_free(ref[j]);
    for (int j = 0; j < nmag; j++) lt_tensor_free(mag[j]);
    return e;
}

lt_status lt__sc_diverge_same(sc_run_ctx *rc, const sc_step *st, const char *kind, const lt_dtensor *in,
                              const lt_dtensor *out, const char *name) {
    dv_state *s = state(rc);
    if (!s) return LT_OK;
    lt_tensor *ref = NULL;
    LT_TRY(lt_full_tensor_direct(in, &ref));
    /* out of Partial: the reduction of the partial values may run in another order */
    const lt_mesh *m = lt_dtensor_mesh(in);
    int64_t len = 1;
    for (int i = 0; i < m->ndim; i++)
        if (in->placements[i].kind == LT_PL_PARTIAL) len *= m->shape[i];
    return add_rec(rc, s, st, kind, name, out, ref, NULL, len);
}

/* ---- the step ------------------------------------------------------------------------------ */

typedef struct {
    int has_rtol, has_atol, has_ulps;
    double rtol, atol, ulps;
} dv_data;

lt_status lt__sc_parse_expect_same_as_single_device(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"rtol", "atol", "ulps", NULL};
    const char *what = "expect_same_as_single_device";
    dv_data *d = lt__sc_alloc(pc->arena, sizeof *d);
    if (!d) return LT_NOMEM;
    st->data = d;
    if (lt__sc_is_null(body)) return LT_OK;
    LT_TRY(lt__sc_keys(body, what, keys));
    const sc_node *n;
    struct { const char *key; int *has; double *v; } k[] = {
        {"rtol", &d->has_rtol, &d->rtol}, {"atol", &d->has_atol, &d->atol}, {"ulps", &d->has_ulps, &d->ulps}};
    for (int i = 0; i < 3; i++)
        if ((n = lt__sc_get(body, k[i].key))) {
            char w[96];
            snprintf(w, sizeof w, "%s: %s", what, k[i].key);
            LT_TRY(lt__sc_f64(n, w, k[i].v));
            if (!(*k[i].v >= 0) || isinf(*k[i].v)) return lt__sc_err(n, LT_INVALID, "%s: must be a finite number >= 0", w);
            *k[i].has = 1;
        }
    return LT_OK;
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

typedef struct {
    double rtol, atol, ulps, eps;
    int emin, exact;
} dv_tol;

/* 1 when got is within tolerance of ref; *allowed gets the bound used. */
static int close_enough(const dv_tol *t, double got, double ref, double mag, int64_t len, double *allowed) {
    *allowed = 0;
    if (isnan(got) || isnan(ref)) return isnan(got) && isnan(ref);
    if (t->exact || isinf(got) || isinf(ref)) return got == ref;
    double diff = fabs(got - ref);
    *allowed = t->atol + t->rtol * fabs(ref) + (double)(len - 1) * t->eps * mag;
    if (diff <= *allowed) return 1;
    int ex = ref == 0 ? t->emin : ilogb(ref);
    if (ex < t->emin) ex = t->emin;
    return diff <= t->ulps * ldexp(t->eps, ex);
}

typedef struct {
    int found;
    int rank;
    char local[128], global[128];
    double got, ref, allowed;
    int64_t ndiff;
} dv_hit;

static void fmt_idx(int nd, const int64_t *i, char *b, size_t n) { lt__sc_fmt_index(nd, i, b, n); }

/* Compares one record; fills *h with the first difference (rank order, then
 * local row-major order). */
static lt_status compare(const dv_rec *r, const dv_tol *t, dv_hit *h) {
    memset(h, 0, sizeof *h);
    const lt_dtensor *g = r->got;
    const lt_mesh *m = lt_dtensor_mesh(g);
    int nd = g->ndim;
    int partial = 0;
    for (int i = 0; i < m->ndim; i++) partial |= g->placements[i].kind == LT_PL_PARTIAL;
    if (nd != r->ref->ndim || memcmp(g->shape, r->ref->shape, sizeof(int64_t) * (size_t)nd)) {
        h->found = 1, h->rank = -1, h->ndiff = 1;
        snprintf(h->global, sizeof h->global, "(shape)");
        return LT_OK;
    }
    int64_t gi[LT_MAX_DIMS], li[LT_MAX_DIMS];
    if (partial) {
        lt_tensor *full = NULL;
        LT_TRY(lt_full_tensor_direct(g, &full));
        for (int64_t f = 0, n = lt_numel(full); f < n; f++) {
            double a = lt_get_flat(full, f), e = lt_get_flat(r->ref, f), mag = r->mag ? lt_get_flat(r->mag, f) : fabs(e), al;
            if (close_enough(t, a, e, mag, r->len, &al)) continue;
            if (!h->found++) {
                int64_t rem = f;
                for (int d = nd - 1; d >= 0; d--) gi[d] = rem % g->shape[d], rem /= g->shape[d];
                h->rank = -1;
                fmt_idx(nd, gi, h->global, sizeof h->global);
                h->got = a, h->ref = e, h->allowed = al;
            }
            h->ndiff++;
        }
        lt_tensor_free(full);
        return LT_OK;
    }
    for (int rk = 0; rk < m->world; rk++) {
        const lt_tensor *sh = lt_to_local(g, rk);
        int64_t n = lt_numel(sh);
        if (!n) continue;
        lt_rank_layout lay;
        LT_TRY(lt_layout_rank(m, nd, g->shape, g->placements, rk, &lay));
        for (int64_t f = 0; f < n; f++) {
            int64_t rem = f;
            for (int d = nd - 1; d >= 0; d--) li[d] = rem % sh->shape[d], rem /= sh->shape[d];
            for (int d = 0; d < nd; d++) gi[d] = lay.idx[d] ? lay.idx[d][li[d]] : li[d];
            double a = lt_get(sh, li), e = lt_get(r->ref, gi), mag = r->mag ? lt_get(r->mag, gi) : fabs(e), al;
            if (close_enough(t, a, e, mag, r->len, &al)) continue;
            if (!h->found++) {
                h->rank = rk;
                fmt_idx(nd, li, h->local, sizeof h->local);
                fmt_idx(nd, gi, h->global, sizeof h->global);
                h->got = a, h->ref = e, h->allowed = al;
            }
            h->ndiff++;
        }
        lt_rank_layout_free(&lay);
    }
    return LT_OK;
}

lt_status lt__sc_run_expect_same_as_single_device(sc_run_ctx *rc, const sc_step *st) {
    const dv_data *d = st->data;
    dv_state *s = state(rc);
    if (!s) return lt__err(LT_NOMEM, "out of memory");
    if (!s->n)
        return lt__sc_check_fail(rc, st, -1, NULL, NULL, NULL, NULL,
                                 "expect_same_as_single_device: no op, redistribute or rank_map result to compare yet");
    for (int i = 0; i < s->n; i++) {
        const dv_rec *r = &s->r[i];
        dv_tol t;
        lt_dtype_default_tol(r->got->dtype, &t.rtol, &t.atol);
        if (d->has_rtol) t.rtol = d->rtol;
        if (d->has_atol) t.atol = d->atol;
        t.ulps = d->has_ulps ? d->ulps : 2;
        t.eps = dtype_eps(r->got->dtype, &t.emin);
        t.exact = t.eps == 0;
        dv_hit h;
        LT_TRY(compare(r, &t, &h));
        if (!h.found) continue;
        char where[400], e[40], a[40], al[40], rk[192];
        snprintf(where, sizeof where, "step %d: %s at %s:%d:%d, '%s'", r->step, r->kind, r->pos.file, r->pos.line,
                 r->pos.col, r->name);
        lt__sc_fmt_num(h.ref, e, sizeof e);
        lt__sc_fmt_num(h.got, a, sizeof a);
        snprintf(al, sizeof al, "%.3g", h.allowed);
        if (h.rank >= 0) snprintf(rk, sizeof rk, "rank %d, local index %s", h.rank, h.local);
        else snprintf(rk, sizeof rk, "the reduced (Partial) value");
        return lt__sc_check_fail(
            rc, st, h.rank, h.global, e, a, where,
            "first divergence from the single-device program at %s: %s, global index %s: single-device %s, "
            "DTensor %s (|difference| %.3g > allowed %s; %lld element%s of this step differ%s; tolerance: "
            "docs/SEMANTICS.md §11.8)",
            where, rk, h.global, e, a, fabs(h.got - h.ref), al, (long long)h.ndiff, h.ndiff == 1 ? "" : "s",
            h.ndiff == 1 ? "s" : "");
    }
    return LT_OK;
}
