/* tools/scenario/scenario_checks.c — the value checks: expect_local and
 * expect_full (the checks of how values moved — plans, communication,
 * errors, order — are in scenario_checks_meta.c).
 *
 * A failed check calls lt__sc_check_fail with everything a reader needs to
 * find the bad element: the rank (and its mesh coordinate), the index, the
 * expected and actual values, and what produced the value (the redistribute
 * plan or collective that made it). Expected values come from the scenario
 * file only; nothing here derives them from the code under test.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tools/scenario/scenario_impl.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"

static int close_enough(double a, double e, double rtol, double atol) {
    if (isnan(a) || isnan(e)) return isnan(a) && isnan(e);
    if (isinf(a) || isinf(e)) return a == e;
    return fabs(a - e) <= atol + rtol * fabs(e);
}

/* A literal expected value as the actual tensor's dtype would hold it (so
 * `0.33333334` equals the f32 value of 1/3 exactly, and 2.7 expected of an
 * i32 tensor is 2). */
static double as_dtype(lt_dtype dt, double v) {
    union { double d; int64_t i; char c[8]; } buf;
    buf.i = 0;
    lt_dtype_store(dt, buf.c, v);
    return lt_dtype_load(dt, buf.c);
}

static lt_status parse_tol(const sc_node *body, const char *what, int *has, double *rtol,
                           double *atol) {
    const sc_node *r = lt__sc_get(body, "rtol"), *a = lt__sc_get(body, "atol");
    *has = r || a;
    *rtol = *atol = 0;
    if (r) LT_TRY(lt__sc_f64(r, what, rtol));
    if (a) LT_TRY(lt__sc_f64(a, what, atol));
    if (*rtol < 0 || *atol < 0 || isnan(*rtol) || isnan(*atol))
        return lt__sc_err(r && (*rtol < 0 || isnan(*rtol)) ? r : a, LT_INVALID,
                          "%s: tolerances must be >= 0", what);
    return LT_OK;
}

static void tol_for(int has, double rtol, double atol, lt_dtype dt, double *r, double *a) {
    if (has) {
        *r = rtol;
        *a = atol;
    } else {
        lt_dtype_default_tol(dt, r, a);
    }
}

/* ---- expect_local ---------------------------------------------------------------- */

typedef struct {
    int kind;                     /* 0: nothing, 1: values, 2: placeholder */
    sc_literal lit;               /* values */
    int ph_ndim;                  /* placeholder: logical shape, -1 when any */
    int64_t ph_shape[LT_MAX_DIMS];
} rank_vals;

typedef struct {
    int has;
    int ndim;
    int64_t v[LT_MAX_DIMS];
} rank_shape;

typedef struct {
    const char *tensor;
    rank_vals *vals;              /* (world) or NULL */
    rank_shape *shapes, *offsets; /* (world) or NULL */
    int has_tol;
    double rtol, atol;
} expect_local_data;

static lt_status parse_rank_shapes(sc_parse_ctx *pc, const sc_node *n, const char *what,
                                   rank_shape **out) {
    const sc_node **nodes;
    LT_TRY(lt__sc_per_rank(pc, n, what, 0, &nodes));
    rank_shape *s = lt__sc_alloc(pc->arena, sizeof *s * (size_t)pc->mesh->world);
    if (!s) return LT_NOMEM;
    for (int r = 0; r < pc->mesh->world; r++) {
        if (!nodes[r]) continue;
        s[r].has = 1;
        if (nodes[r]->kind == SC_SEQ && nodes[r]->n == 0) continue;   /* [] : 0-d */
        LT_TRY(lt__sc_shape(nodes[r], what, &s[r].ndim, s[r].v));
    }
    *out = s;
    return LT_OK;
}

lt_status lt__sc_parse_expect_local(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"tensor", "ranks", "shapes", "offsets",
                                       "rtol",   "atol",  NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "expect_local", keys));
    LT__SC_NEW_DATA(expect_local_data, d);
    int kinds = lt__sc_get(body, "offsets") ? SC_DTENSOR : SC_DTENSOR | SC_LOCAL;
    LT_TRY(lt__sc_use(pc, body, "expect_local", "tensor", kinds, &d->tensor));
    if ((n = lt__sc_get(body, "ranks"))) {
        const sc_node **nodes;
        LT_TRY(lt__sc_per_rank(pc, n, "expect_local: ranks", 0, &nodes));
        d->vals = lt__sc_alloc(pc->arena, sizeof *d->vals * (size_t)pc->mesh->world);
        if (!d->vals) return LT_NOMEM;
        for (int r = 0; r < pc->mesh->world; r++) {
            const sc_node *v = nodes[r];
            rank_vals *rv = &d->vals[r];
            if (!v) continue;
            if (v->kind == SC_SCALAR && !strcmp(v->str, "placeholder")) {
                rv->kind = 2;
                rv->ph_ndim = -1;
            } else if (v->kind == SC_MAP) {
                static const char *const pk[] = {"placeholder", NULL};
                const sc_node *ps;
                LT_TRY(lt__sc_keys(v, "expect_local: a rank's placeholder", pk));
                LT_TRY(lt__sc_need(v, "expect_local", "placeholder", &ps));
                rv->kind = 2;
                if (ps->kind == SC_SEQ && ps->n == 0) rv->ph_ndim = 0;
                else
                    LT_TRY(
                        lt__sc_shape(ps, "expect_local: placeholder", &rv->ph_ndim, rv->ph_shape));
            } else {
                char what[64];
                snprintf(what, sizeof what, "expect_local: rank %d", r);
                rv->kind = 1;
                LT_TRY(lt__sc_literal(pc->arena, v, what, &rv->lit));
            }
        }
    }
    if ((n = lt__sc_get(body, "shapes")))
        LT_TRY(parse_rank_shapes(pc, n, "expect_local: shapes", &d->shapes));
    if ((n = lt__sc_get(body, "offsets")))
        LT_TRY(parse_rank_shapes(pc, n, "expect_local: offsets", &d->offsets));
    if (!d->vals && !d->shapes && !d->offsets)
        return lt__sc_err(body, LT_INVALID,
                          "expect_local: give at least one of ranks, shapes, offsets");
    return parse_tol(body, "expect_local", &d->has_tol, &d->rtol, &d->atol);
}

typedef struct {
    char msg[600];
    char index[96], expected[200], actual[200];
} rank_fail;

static int same_shape(int na, const int64_t *a, int nb, const int64_t *b) {
    if (na != nb) return 0;
    for (int i = 0; i < na; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* Checks one rank; returns 1 and fills *f on the first difference, -1 when
 * out of memory (the message is in lt_errmsg()). */
static int
check_rank(const expect_local_data *d, const lt_dtensor *dt, const lt_tensor *t, int r,
           rank_fail *f) { /* t: the shard, or its shape only (no values are read then) */
    char a[128], b[128];
    if (d->shapes && d->shapes[r].has) {
        const rank_shape *s = &d->shapes[r];
        if (t->placeholder || !same_shape(s->ndim, s->v, t->ndim, t->shape)) {
            lt_shape_format(s->ndim, s->v, f->expected, sizeof f->expected);
            if (t->placeholder)
                snprintf(f->actual, sizeof f->actual, "placeholder for %s",
                         lt_shape_format(t->logical_ndim, t->logical, a, sizeof a));
            else
                lt_shape_format(t->ndim, t->shape, f->actual, sizeof f->actual);
            snprintf(f->msg, sizeof f->msg, "local shape: expected %s, actual %s", f->expected,
                     f->actual);
            return 1;
        }
    }
    if (d->offsets && d->offsets[r].has) {
        int64_t ls[LT_MAX_DIMS], off[LT_MAX_DIMS];
        const rank_shape *s = &d->offsets[r];
        lt_status e = lt_spec_local_shape(lt_dtensor_spec(dt), r, ls, off);
        if (e == LT_NOMEM) return -1;   /* an error, not a failed check */
        if (e) {
            snprintf(f->msg, sizeof f->msg, "global offset: %s", lt_errmsg());
            return 1;
        }
        if (!same_shape(s->ndim, s->v, dt->ndim, off)) {
            lt_shape_format(s->ndim, s->v, f->expected, sizeof f->expected);
            lt_shape_format(dt->ndim, off, f->actual, sizeof f->actual);
            snprintf(f->msg, sizeof f->msg, "global offset: expected %s, actual %s", f->expected,
                     f->actual);
            return 1;
        }
    }
    if (!d->vals || d->vals[r].kind == 0) return 0;
    const rank_vals *v = &d->vals[r];
    if (v->kind == 2) {
        if (!t->placeholder) {
            snprintf(f->expected, sizeof f->expected, "a placeholder");
            snprintf(f->actual, sizeof f->actual, "a shard of shape %s",
                     lt_shape_format(t->ndim, t->shape, a, sizeof a));
            snprintf(f->msg, sizeof f->msg, "expected a placeholder, actual a shard of shape %s",
                     a);
            return 1;
        }
        if (v->ph_ndim >= 0 && !same_shape(v->ph_ndim, v->ph_shape, t->logical_ndim, t->logical)) {
            snprintf(f->expected, sizeof f->expected, "placeholder for %s",
                     lt_shape_format(v->ph_ndim, v->ph_shape, a, sizeof a));
            snprintf(f->actual, sizeof f->actual, "placeholder for %s",
                     lt_shape_format(t->logical_ndim, t->logical, b, sizeof b));
            snprintf(f->msg, sizeof f->msg, "expected a %s, actual a %s", f->expected, f->actual);
            return 1;
        }
        return 0;
    }
    if (t->placeholder) {
        snprintf(f->expected, sizeof f->expected, "%lld value%s", (long long)v->lit.n,
                 v->lit.n == 1 ? "" : "s");
        snprintf(f->actual, sizeof f->actual, "placeholder for %s",
                 lt_shape_format(t->logical_ndim, t->logical, a, sizeof a));
        snprintf(f->msg, sizeof f->msg, "expected %s, actual a %s", f->expected, f->actual);
        return 1;
    }
    int64_t n = lt_numel(t);
    int nested = v->lit.ndim >= 2;
    if ((nested && !same_shape(v->lit.ndim, v->lit.shape, t->ndim, t->shape)) || v->lit.n != n) {
        lt_shape_format(v->lit.ndim, v->lit.shape, f->expected, sizeof f->expected);
        lt_shape_format(t->ndim, t->shape, f->actual, sizeof f->actual);
        snprintf(f->msg, sizeof f->msg,
                 "expected %lld value%s of shape %s, the shard has %lld (shape %s)",
                 (long long)v->lit.n, v->lit.n == 1 ? "" : "s", f->expected, (long long)n,
                 f->actual);
        return 1;
    }
    double rt, at;
    tol_for(d->has_tol, d->rtol, d->atol, t->dtype, &rt, &at);
    for (int64_t i = 0; i < n; i++) {
        double x = lt_get_flat(t, i), e = as_dtype(t->dtype, v->lit.v[i]);
        if (close_enough(x, e, rt, at)) continue;
        int64_t idx[LT_MAX_DIMS], rest = i;
        for (int k = t->ndim - 1; k >= 0; k--) {
            idx[k] = t->shape[k] ? rest % t->shape[k] : 0;
            rest = t->shape[k] ? rest / t->shape[k] : 0;
        }
        int64_t nd = 0;
        for (int64_t j = i; j < n; j++)
            nd += !close_enough(lt_get_flat(t, j), as_dtype(t->dtype, v->lit.v[j]), rt, at);
        lt__sc_fmt_index(t->ndim, idx, f->index, sizeof f->index);
        lt__sc_fmt_num(e, f->expected, sizeof f->expected);
        lt__sc_fmt_num(x, f->actual, sizeof f->actual);
        snprintf(f->msg, sizeof f->msg,
                 "index %s: expected %s, actual %s (%lld of %lld element%s differ%s)", f->index,
                 f->expected, f->actual, (long long)nd, (long long)n, n == 1 ? "" : "s",
                 n == 1 ? "s" : "");
        return 1;
    }
    return 0;
}

lt_status lt__sc_run_expect_local(sc_run_ctx *rc, const sc_step *st) {
    const expect_local_data *d = st->data;
    sc_value *v = lt__sc_value(rc, d->tensor);
    const lt_mesh *mesh = rc->c->mesh;
    lt_tensor *const *shards = v->kind == SC_DTENSOR ? v->dt->local->shards : v->local->shards;
    int first = -1, nbad = 0;
    char others[128] = "";
    size_t used = 0;
    rank_fail f, tmp;
    for (int r = 0; r < mesh->world; r++) {
        if (!lt__sc_rank_runs(rc, st, r)) continue; /* ranks: / when:, or waiting in a collective */
        rank_fail *cur = first < 0 ? &f : &tmp;
        memset(cur, 0, sizeof *cur);
        lt_tensor paper;   /* an absent rank (numerics sample/none): its layout stands in */
        const lt_tensor *t = shards[r];
        const expect_local_data *dr = d;
        expect_local_data layout_only;   /* --shards owned: another process checks the values */
        if (!t && rc->owned && d->vals && d->vals[r].kind) {
            layout_only = *d;
            layout_only.vals = NULL;
            dr = &layout_only;
        }
        int asks = (dr->vals && dr->vals[r].kind) || (d->shapes && d->shapes[r].has) ||
                   (d->offsets && d->offsets[r].has);
        if (!t && !asks) continue;   /* absent, and nothing asked of it */
        if (!t && dr->vals && dr->vals[r].kind) {
            char rs[256] = "";
            if (rc->nranks > 0) lt_numerics_ranks_format(rc->ranks, rc->nranks, 8, rs, sizeof rs);
            return lt__sc_numerics_refuse(rc, "expect_local of rank %d's values (%s%s%s)", r,
                                          rc->nranks > 0 ? "only ranks " : "no rank has values", rs,
                                          rc->nranks > 0 ? " have values" : "");
        }
        if (!t) {
            if (v->kind != SC_DTENSOR)   /* a LocalTensor has no layout to stand in */
                return lt__sc_numerics_refuse(
                    rc,
                    "expect_local of rank %d's shard of LocalTensor '%s' (rank %d is not sampled)",
                    r, d->tensor, r);
            memset(&paper, 0, sizeof paper);
            paper.dtype = v->dt->dtype;
            paper.ndim = v->dt->ndim;
            lt_status e = lt_spec_local_shape(lt_dtensor_spec(v->dt), r, paper.shape, NULL);
            if (e) return e;
            t = &paper;
        }
        int bad = check_rank(dr, v->dt, t, r, cur);
        if (bad < 0) return lt__err_ctx(LT_NOMEM, "rank %d", r);
        if (!bad) continue;
        nbad++;
        if (first < 0) first = r;
        else if (used < sizeof others - 24)
            used +=
                (size_t)snprintf(others + used, sizeof others - used, "%s%d", used ? ", " : "",
                                 lt_mesh_rank_id(rc->c->mesh, r));
        else if (!strstr(others, "..."))
            used += (size_t)snprintf(others + used, sizeof others - used, ", ...");
    }
    if (first < 0) return LT_OK;
    int coord[LT_MESH_MAX_DIMS];
    int64_t c64[LT_MESH_MAX_DIMS];
    char cs[96];
    lt_mesh_coord(mesh, first, coord);
    for (int i = 0; i < mesh->ndim; i++) c64[i] = coord[i];
    lt__sc_fmt_index(mesh->ndim, c64, cs, sizeof cs);
    return lt__sc_check_fail(
        rc, st, first, f.index[0] ? f.index : NULL, f.expected[0] ? f.expected : NULL,
        f.actual[0] ? f.actual : NULL, lt__sc_origin_rank(v, first),
        "expect_local of '%s': rank %d (coord %s): %s%s%s%s", d->tensor,
        lt_mesh_rank_id(mesh, first), cs, f.msg,
        nbad > 2   ? " (also ranks "
        : nbad > 1 ? " (also rank "
                   : "",
        nbad > 1 ? others : "", nbad > 1 ? ")" : "");
}

/* ---- expect_full ------------------------------------------------------------------- */

typedef struct {
    const char *tensor, *equals;
    int has_lit;
    sc_literal lit;
    int has_shape, ndim;
    int64_t shape[LT_MAX_DIMS];
    int has_tol;
    double rtol, atol;
} expect_full_data;

lt_status lt__sc_parse_expect_full(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"tensor", "equals", "values", "shape", "rtol", "atol", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "expect_full", keys));
    LT__SC_NEW_DATA(expect_full_data, d);
    LT_TRY(lt__sc_use(pc, body, "expect_full", "tensor", SC_FULL | SC_DTENSOR, &d->tensor));
    const sc_node *eq = lt__sc_get(body, "equals"), *vals = lt__sc_get(body, "values");
    if (eq && vals)
        return lt__sc_err(vals, LT_INVALID, "expect_full: give either equals or values, not both");
    if (eq) LT_TRY(lt__sc_use(pc, body, "expect_full", "equals", SC_FULL | SC_DTENSOR, &d->equals));
    if (vals) {
        d->has_lit = 1;
        LT_TRY(lt__sc_literal(pc->arena, vals, "expect_full: values", &d->lit));
    }
    if ((n = lt__sc_get(body, "shape"))) {
        d->has_shape = 1;
        if (n->kind == SC_SEQ && n->n == 0) d->ndim = 0;
        else LT_TRY(lt__sc_shape(n, "expect_full: shape", &d->ndim, d->shape));
        if (d->has_lit) {
            int64_t numel;
            LT_TRY(lt__numel_checked(d->ndim, d->shape, 8, &numel));
            if (numel != d->lit.n &&
                !(d->lit.ndim == d->ndim &&
                  !memcmp(d->lit.shape, d->shape, sizeof(int64_t) * (size_t)d->ndim)))
                return lt__sc_err(vals, LT_SHAPE,
                                  "expect_full: %lld values for shape with %lld elements",
                                  (long long)d->lit.n, (long long)numel);
        }
    }
    if (!eq && !vals && !d->has_shape)
        return lt__sc_err(body, LT_INVALID,
                          "expect_full: give equals (a tensor name), values, or shape");
    return parse_tol(body, "expect_full", &d->has_tol, &d->rtol, &d->atol);
}

/* The full tensor of a value: borrowed for SC_FULL, new for a DTensor. */
static lt_status full_of(sc_value *v, lt_tensor **out, int *owned) {
    if (v->kind == SC_FULL) {
        *out = v->full;
        *owned = 0;
        return LT_OK;
    }
    *owned = 1;
    return lt_full_tensor_direct(v->dt, out);
}

/* Where global index gidx of a DTensor lives: "; index [3] is held by rank 1
 * (coord [1]) at local index [1] (also rank 3 (coord [1, 1]) at [1])" into
 * buf, listing at most a few holders and counting the rest. With Partial
 * mesh dims every holder has a contribution, not the value. Empty when the
 * layout cannot be computed (the caller's message stands alone). */
static void holders_str(const lt_dtensor *dt, const int64_t *gidx, char *buf, size_t n) {
    enum { SHOW = 4 };
    const lt_mesh *mesh = lt_dtensor_mesh(dt);
    size_t used = 0;
    int found = 0, partial = -1;
    buf[0] = '\0';
    for (int i = 0; i < mesh->ndim; i++)
        if (dt->placements[i].kind == LT_PL_PARTIAL && partial < 0) partial = i;
    for (int r = 0; r < mesh->world; r++) {
        lt_rank_layout l;
        if (lt_spec_layout_rank(lt_dtensor_spec(dt), r, &l)) {
            buf[0] = '\0';
            return;
        }
        int64_t loc[LT_MAX_DIMS];
        int holds = 1;
        for (int d = 0; d < dt->ndim && holds; d++) {
            if (!l.idx[d]) {
                loc[d] = gidx[d];
                continue;
            }
            holds = 0;
            for (int64_t j = 0; j < l.local_shape[d] && !holds; j++)
                if (l.idx[d][j] == gidx[d]) loc[d] = j, holds = 1;
        }
        lt_rank_layout_free(&l);
        if (!holds) continue;
        found++;
        if (found > SHOW || used + 1 >= n) continue;
        int c[LT_MESH_MAX_DIMS];
        int64_t c64[LT_MESH_MAX_DIMS];
        char cs[96], ls[96], gs[96];
        lt_mesh_coord(mesh, r, c);
        for (int i = 0; i < mesh->ndim; i++) c64[i] = c[i];
        lt__sc_fmt_index(mesh->ndim, c64, cs, sizeof cs);
        lt__sc_fmt_index(dt->ndim, loc, ls, sizeof ls);
        int w;
        if (found == 1)
            w = snprintf(buf + used, n - used,
                         "; index %s is %s rank %d (coord %s) at local index %s",
                         lt__sc_fmt_index(dt->ndim, gidx, gs, sizeof gs),
                         partial >= 0 ? "a partial value on" : "held by",
                         lt_mesh_rank_id(mesh, r), cs, ls);
        else
            w = snprintf(buf + used, n - used, "%s rank %d (coord %s) at %s",
                         found == 2 ? " (also" : ",", lt_mesh_rank_id(mesh, r), cs, ls);
        if (w > 0) used += (size_t)w < n - used ? (size_t)w : n - used - 1;
    }
    if (found > 1 && used + 1 < n) {
        int w = found > SHOW ? snprintf(buf + used, n - used, " and %d more)", found - SHOW)
                             : snprintf(buf + used, n - used, ")");
        if (w > 0) used += (size_t)w < n - used ? (size_t)w : n - used - 1;
    }
    if (partial >= 0 && found && used + 1 < n)
        snprintf(buf + used, n - used, "; mesh dim %d is P(%s): the value is the %s over it",
                 partial, lt_redop_name(dt->placements[partial].op),
                 lt_redop_name(dt->placements[partial].op));
}

/* What rank r of DTensor dt (no Partial dims) should hold by expect_full's
 * reference, in numerics sample/none: the values of `equals` (a declared
 * tensor: its init: or values:; a sampled DTensor: its source
 * description) or of the literal, at r's global indices. *out new. */
static lt_status expected_at(sc_run_ctx *rc, const expect_full_data *d, const lt_dtensor *dt, int r,
                             lt_tensor **out) {
    *out = NULL;
    lt_rank_layout l;
    LT_TRY(lt_spec_layout_rank(lt_dtensor_spec(dt), r, &l));
    lt_status s = LT_OK;
    lt_tensor *full = NULL;
    const sc_value *e = d->equals ? lt__sc_value(rc, d->equals) : NULL;
    if (e && e->kind == SC_DTENSOR && e->sampled) {
        /* any rank's values of a non-Partial sampled tensor: its source description */
        lt_spec spec = *lt_dtensor_spec(dt);
        spec.dtype = e->dt->dtype;
        int one = r;
        lt_dtensor *x = NULL;
        s = lt_dtensor_sample(&spec, &e->gen, &one, 1, &x);
        if (!s) s = lt_clone(x->local->shards[r], out);
        lt_dtensor_free(x);
    } else if (e && e->kind == SC_FULL && !e->full) {   /* an init: tensor, never built */
        const sc_tensor_decl *t = NULL;
        for (int i = 0; i < rc->c->ntensors; i++)
            if (!strcmp(rc->c->tensors[i].name, d->equals)) t = &rc->c->tensors[i];
        s = t ? lt_tensor_new(t->dtype, dt->ndim, l.local_shape, out)
              : lt__err(LT_INVALID, "internal: no tensor '%s'", d->equals);
        if (!s && l.lists) s = lt_init_fill_indexed(*out, &t->init, l.idx, dt->shape);
    } else if (e && e->kind == SC_FULL) {
        s = l.lists ? lt_gather_index_sets(e->full, l.idx, l.local_shape, out)
                    : lt_tensor_new(e->full->dtype, dt->ndim, l.local_shape, out);
    } else if (d->has_lit) {
        s = lt_tensor_from_doubles(LT_F64, dt->ndim, dt->shape, d->lit.v, d->lit.n, &full);
        if (!s)
            s = l.lists ? lt_gather_index_sets(full, l.idx, l.local_shape, out)
                        : lt_tensor_new(LT_F64, dt->ndim, l.local_shape, out);
    } else {
        s = lt__sc_numerics_refuse(rc,
                                   "expect_full against '%s' (not a sampled or declared tensor)",
                                   d->equals ? d->equals : "?");
    }
    lt_tensor_free(full);
    lt_rank_layout_free(&l);
    if (s) {
        lt_tensor_free(*out);
        *out = NULL;
    }
    return s;
}

/* expect_full in numerics sample/none: the sampled ranks' shards against
 * the reference at their indices (the others hold no values to check). */
/* Sampled values (--numerics sample) cannot say what a Partial holds: the
 * tensor and the one it is compared with must have no Partial dim. */
static lt_status sampled_no_partial(sc_run_ctx *rc, const expect_full_data *d, const sc_value *v,
                                    const sc_value *e) {
    if (v->kind != SC_DTENSOR)
        return lt__sc_numerics_refuse(rc, "expect_full of '%s', a tensor that is never built",
                                      d->tensor);
    for (int i = 0; i < rc->c->mesh->ndim; i++)
        if (v->dt->placements[i].kind == LT_PL_PARTIAL)
            return lt__sc_numerics_refuse(
                rc,
                "expect_full of '%s', Partial on mesh dim %d (its value needs "
                "every rank's contribution)",
                d->tensor, i);
    for (int i = 0; e && e->kind == SC_DTENSOR && e->sampled && i < rc->c->mesh->ndim; i++)
        if (e->dt->placements[i].kind == LT_PL_PARTIAL)
            return lt__sc_numerics_refuse(rc, "expect_full against '%s', Partial on mesh dim %d",
                                          d->equals, i);
    return LT_OK;
}

/* The sampled DTensor's shape (and value count) against what the check
 * expects: its shape:, a literal's shape or count, or the compared
 * tensor's shape (e: may be NULL). */
static lt_status sampled_shape(sc_run_ctx *rc, const sc_step *st, const expect_full_data *d,
                               sc_value *v, const sc_value *e) {
    const lt_dtensor *dt = v->dt;
    char a[128], b[128];
    int want_nd = -1;
    const int64_t *want = NULL;
    if (d->has_shape) want_nd = d->ndim, want = d->shape;
    else if (d->has_lit && d->lit.ndim >= 2) want_nd = d->lit.ndim, want = d->lit.shape;
    else if (e && e->kind == SC_DTENSOR) want_nd = e->dt->ndim, want = e->dt->shape;
    for (int i = 0; e && e->kind == SC_FULL && i < rc->c->ntensors; i++)
        if (!strcmp(rc->c->tensors[i].name, d->equals))
            want_nd = rc->c->tensors[i].ndim, want = rc->c->tensors[i].shape;
    if (want && !same_shape(want_nd, want, dt->ndim, dt->shape)) {
        lt_shape_format(want_nd, want, a, sizeof a);
        lt_shape_format(dt->ndim, dt->shape, b, sizeof b);
        return lt__sc_check_fail(rc, st, -1, NULL, a, b, lt__sc_origin(v),
                                 "expect_full of '%s': shape: expected %s, actual %s", d->tensor, a,
                                 b);
    }
    int64_t n = lt__numel_sat(dt->ndim, dt->shape);
    if (!d->has_lit || d->has_shape || d->lit.ndim >= 2 || d->lit.n == n) return LT_OK;
    snprintf(a, sizeof a, "%lld value%s", (long long)d->lit.n, d->lit.n == 1 ? "" : "s");
    snprintf(b, sizeof b, "%lld value%s", (long long)n, n == 1 ? "" : "s");
    return lt__sc_check_fail(rc, st, -1, NULL, a, b, lt__sc_origin(v),
                             "expect_full of '%s': expected %s, actual %s", d->tensor, a, b);
}

/* The failed check of rank r's shard act against exp (its flat index
 * bad first differs; nbad of them), naming the global index. */
static lt_status sampled_fail(sc_run_ctx *rc, const sc_step *st, const expect_full_data *d,
                              sc_value *v, int r, const lt_tensor *act, const lt_tensor *exp,
                              int64_t bad, int64_t nbad) {
    const lt_dtensor *dt = v->dt;
    int64_t idx[LT_MAX_DIMS], g[LT_MAX_DIMS], rest = bad, n = lt_numel(act);
    for (int k = act->ndim - 1; k >= 0; k--) {
        idx[k] = rest % act->shape[k];
        rest /= act->shape[k];
    }
    lt_rank_layout l;
    lt_status ls = lt_spec_layout_rank(lt_dtensor_spec(dt), r, &l);
    for (int k = 0; k < dt->ndim; k++) g[k] = !ls && l.idx[k] ? l.idx[k][idx[k]] : idx[k];
    if (!ls) lt_rank_layout_free(&l);
    char is[96], es[48], as[48];
    double ev = d->equals ? lt_get_flat(exp, bad) : as_dtype(act->dtype, lt_get_flat(exp, bad));
    lt__sc_fmt_index(dt->ndim, g, is, sizeof is);
    lt__sc_fmt_num(ev, es, sizeof es);
    lt__sc_fmt_num(lt_get_flat(act, bad), as, sizeof as);
    const char *num = rc->c->res.numerics;
    return lt__sc_check_fail(
        rc, st, r, is, es, as, lt__sc_origin(v),
        "expect_full of '%s'%s%s: index %s: expected %s, actual %s (held by %s rank %d; %lld of "
        "its %lld element%s differ%s%s%s)",
        d->tensor, d->equals ? " == " : "", d->equals ? d->equals : "", is, es, as,
        rc->owned ? "this process's" : "sampled", r, (long long)nbad, (long long)n,
        n == 1 ? "" : "s", nbad == 1 ? "s" : "", num ? "; " : "", num ? num : "");
}

/* Rank r's shard against its expected values (within the check's
 * tolerance); a difference is the check's failure. */
static lt_status sampled_rank(sc_run_ctx *rc, const sc_step *st, const expect_full_data *d,
                              sc_value *v, int r) {
    const lt_tensor *act = v->dt->local->shards[r];
    lt_tensor *exp;
    LT_TRY(expected_at(rc, d, v->dt, r, &exp));
    double rt, at, rt2, at2;
    tol_for(d->has_tol, d->rtol, d->atol, act->dtype, &rt, &at);
    if (d->equals && !d->has_tol) {
        lt_dtype_default_tol(exp->dtype, &rt2, &at2);
        if (rt2 > rt) rt = rt2;
        if (at2 > at) at = at2;
    }
    int64_t n = lt_numel(act), bad = -1, nbad = 0;
    for (int64_t k = 0; k < n; k++) {
        double x = lt_get_flat(act, k),
               ev = d->equals ? lt_get_flat(exp, k) : as_dtype(act->dtype, lt_get_flat(exp, k));
        if (close_enough(x, ev, rt, at)) continue;
        if (bad < 0) bad = k;
        nbad++;
    }
    lt_status s = bad < 0 ? LT_OK : sampled_fail(rc, st, d, v, r, act, exp, bad, nbad);
    lt_tensor_free(exp);
    return s;
}

static lt_status expect_full_sampled(sc_run_ctx *rc, const sc_step *st, const expect_full_data *d,
                                     sc_value *v) {
    const sc_value *e = d->equals ? lt__sc_value(rc, d->equals) : NULL;
    LT_TRY(sampled_no_partial(rc, d, v, e));
    LT_TRY(sampled_shape(rc, st, d, v, e));
    if (!d->equals && !d->has_lit) return LT_OK;   /* shape only */
    /* replicas holding one buffer (same coordinates but on Replicate mesh
     * dims: the same indices) are checked once */
    const lt_mesh *mesh = rc->c->mesh;
    const lt_dtensor *dt = v->dt;
    int *checked =
        lt__malloc(sizeof(int) * (size_t)mesh->world); /* (W) replica class -> checked rank, -1 */
    if (!checked) return lt__err(LT_NOMEM, "out of memory");
    for (int r = 0; r < mesh->world; r++) checked[r] = -1;
    lt_status s = LT_OK;
    for (int i = 0; i < rc->nranks && !s; i++) {
        int r = rc->ranks[i], coord[LT_MESH_MAX_DIMS];
        lt_mesh_coord(mesh, r, coord);
        for (int m = 0; m < mesh->ndim; m++)
            if (dt->placements[m].kind == LT_PL_REPLICATE) coord[m] = 0;
        int cls = lt_mesh_rank(mesh, coord);
        if (checked[cls] >= 0 &&
            lt_tensor_same_view(dt->local->shards[r], dt->local->shards[checked[cls]]))
            continue;
        checked[cls] = r;
        s = sampled_rank(rc, st, d, v, r);
    }
    lt__free(checked);
    return s;
}

/* An expect_full in progress: the full value checked and what it is
 * compared with (each freed at the end when own_*). */
typedef struct full_check {
    sc_run_ctx *rc;
    const sc_step *st;
    const expect_full_data *d;
    sc_value *v;
    lt_tensor *act, *exp;    /* exp: NULL unless equals: */
    int own_a, own_e;
    const double *ev;        /* a literal's values, or NULL */
} full_check;

/* The shape the check expects (shape: or a literal's), and the tensor
 * named by equals:, or a literal's count. */
static lt_status full_shape(full_check *fc) {
    const expect_full_data *d = fc->d;
    const lt_tensor *act = fc->act;
    char a[128], b[128];
    int want_nd = -1;
    const int64_t *want = NULL;
    if (d->has_shape) want_nd = d->ndim, want = d->shape;
    else if (d->has_lit && d->lit.ndim >= 2) want_nd = d->lit.ndim, want = d->lit.shape;
    if (want && !same_shape(want_nd, want, act->ndim, act->shape)) {
        lt_shape_format(want_nd, want, a, sizeof a);
        lt_shape_format(act->ndim, act->shape, b, sizeof b);
        return lt__sc_check_fail(fc->rc, fc->st, -1, NULL, a, b, lt__sc_origin(fc->v),
                                 "expect_full of '%s': shape: expected %s, actual %s", d->tensor, a,
                                 b);
    }
    int64_t n = lt_numel(act);
    if (d->equals) {
        lt_status s = full_of(lt__sc_value(fc->rc, d->equals), &fc->exp, &fc->own_e);
        if (s) return lt__err_ctx_in(s, "expect_full", ": '%s'", d->equals);
        if (same_shape(fc->exp->ndim, fc->exp->shape, act->ndim, act->shape)) return LT_OK;
        lt_shape_format(fc->exp->ndim, fc->exp->shape, a, sizeof a);
        lt_shape_format(act->ndim, act->shape, b, sizeof b);
        return lt__sc_check_fail(
            fc->rc, fc->st, -1, NULL, a, b, lt__sc_origin(fc->v),
            "expect_full of '%s': shape: expected %s (the shape of '%s'), actual %s", d->tensor, a,
            d->equals, b);
    }
    if (!d->has_lit) return LT_OK;
    fc->ev = d->lit.v;
    if (d->lit.n == n) return LT_OK;
    snprintf(a, sizeof a, "%lld value%s", (long long)d->lit.n, d->lit.n == 1 ? "" : "s");
    snprintf(b, sizeof b, "%lld value%s", (long long)n, n == 1 ? "" : "s");
    return lt__sc_check_fail(fc->rc, fc->st, -1, NULL, a, b, lt__sc_origin(fc->v),
                             "expect_full of '%s': expected %s, actual %s", d->tensor, a, b);
}

/* The values, within the check's tolerance (with equals: the looser of
 * the two dtypes'); the first difference fails the check. */
static lt_status full_values(full_check *fc) {
    const expect_full_data *d = fc->d;
    const lt_tensor *act = fc->act, *exp = fc->exp;
    double rt, at, rt2, at2;
    tol_for(d->has_tol, d->rtol, d->atol, act->dtype, &rt, &at);
    if (exp && !d->has_tol) {
        lt_dtype_default_tol(exp->dtype, &rt2, &at2);
        if (rt2 > rt) rt = rt2;
        if (at2 > at) at = at2;
    }
    int64_t n = lt_numel(act), bad = -1, nbad = 0;
    double maxd = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = lt_get_flat(act, i),
               e = exp ? lt_get_flat(exp, i) : as_dtype(act->dtype, fc->ev[i]);
        if (close_enough(x, e, rt, at)) continue;
        if (bad < 0) bad = i;
        nbad++;
        if (fabs(x - e) > maxd || isnan(x - e)) maxd = fabs(x - e);
    }
    if (bad < 0) return LT_OK;
    int64_t idx[LT_MAX_DIMS], rest = bad;
    for (int k = act->ndim - 1; k >= 0; k--) {
        idx[k] = rest % act->shape[k];
        rest /= act->shape[k];
    }
    char is[96], es[48], as[48], md[48], holders[400] = "";
    double e = exp ? lt_get_flat(exp, bad) : as_dtype(act->dtype, fc->ev[bad]);
    lt__sc_fmt_index(act->ndim, idx, is, sizeof is);
    lt__sc_fmt_num(e, es, sizeof es);
    lt__sc_fmt_num(lt_get_flat(act, bad), as, sizeof as);
    lt__sc_fmt_num(maxd, md, sizeof md);
    if (fc->v->kind == SC_DTENSOR) holders_str(fc->v->dt, idx, holders, sizeof holders);
    return lt__sc_check_fail(
        fc->rc, fc->st, -1, is, es, as, lt__sc_origin(fc->v),
        "expect_full of '%s'%s%s: index %s: expected %s, actual %s (%lld of %lld element%s "
        "differ%s, max |diff| %s)%s",
        d->tensor, d->equals ? " == " : "", d->equals ? d->equals : "", is, es, as, (long long)nbad,
        (long long)n, n == 1 ? "" : "s", nbad == 1 && n == 1 ? "s" : "", md, holders);
}

lt_status lt__sc_run_expect_full(sc_run_ctx *rc, const sc_step *st) {
    const expect_full_data *d = st->data;
    full_check fc = {rc, st, d, lt__sc_value(rc, d->tensor), NULL, NULL, 0, 0, NULL};
    if (rc->nranks >= 0) return expect_full_sampled(rc, st, d, fc.v);
    lt_status s = full_of(fc.v, &fc.act, &fc.own_a);
    if (s) return lt__err_ctx_in(s, "expect_full", " of '%s'", d->tensor);
    s = full_shape(&fc);
    if (!s && (fc.exp || fc.ev)) s = full_values(&fc);   /* else shape only */
    if (fc.own_a) lt_tensor_free(fc.act);
    if (fc.own_e) lt_tensor_free(fc.exp);
    return s;
}
