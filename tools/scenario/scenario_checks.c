/* tools/scenario/scenario_checks.c — the check steps: expect_local, expect_full,
 * expect_plan, expect_comm, expect_error.
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
#include "kernels/status_impl.h"

#define NEW_DATA(T, var)                                 \
    T *var = lt__sc_alloc(pc->arena, sizeof *var);       \
    if (!var) return LT_NOMEM;                           \
    st->data = var

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

static lt_status parse_tol(const sc_node *body, const char *what, int *has, double *rtol, double *atol) {
    const sc_node *r = lt__sc_get(body, "rtol"), *a = lt__sc_get(body, "atol");
    *has = r || a;
    *rtol = *atol = 0;
    if (r) LT_TRY(lt__sc_f64(r, what, rtol));
    if (a) LT_TRY(lt__sc_f64(a, what, atol));
    if (*rtol < 0 || *atol < 0 || isnan(*rtol) || isnan(*atol))
        return lt__sc_err(r && (*rtol < 0 || isnan(*rtol)) ? r : a, LT_INVALID, "%s: tolerances must be >= 0", what);
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

static lt_status parse_rank_shapes(sc_parse_ctx *pc, const sc_node *n, const char *what, rank_shape **out) {
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
    static const char *const keys[] = {"tensor", "ranks", "shapes", "offsets", "rtol", "atol", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "expect_local", keys));
    NEW_DATA(expect_local_data, d);
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
                else LT_TRY(lt__sc_shape(ps, "expect_local: placeholder", &rv->ph_ndim, rv->ph_shape));
            } else {
                char what[64];
                snprintf(what, sizeof what, "expect_local: rank %d", r);
                rv->kind = 1;
                LT_TRY(lt__sc_literal(pc->arena, v, what, &rv->lit));
            }
        }
    }
    if ((n = lt__sc_get(body, "shapes"))) LT_TRY(parse_rank_shapes(pc, n, "expect_local: shapes", &d->shapes));
    if ((n = lt__sc_get(body, "offsets"))) LT_TRY(parse_rank_shapes(pc, n, "expect_local: offsets", &d->offsets));
    if (!d->vals && !d->shapes && !d->offsets)
        return lt__sc_err(body, LT_INVALID, "expect_local: give at least one of ranks, shapes, offsets");
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
static int check_rank(const expect_local_data *d, const lt_dtensor *dt, const lt_tensor *t, int r,
                      rank_fail *f) {   /* t: the shard, or its shape only (no values are read then) */
    char a[128], b[128];
    if (d->shapes && d->shapes[r].has) {
        const rank_shape *s = &d->shapes[r];
        if (t->placeholder || !same_shape(s->ndim, s->v, t->ndim, t->shape)) {
            lt_shape_str(s->ndim, s->v, f->expected, sizeof f->expected);
            if (t->placeholder)
                snprintf(f->actual, sizeof f->actual, "placeholder for %s",
                         lt_shape_str(t->logical_ndim, t->logical, a, sizeof a));
            else
                lt_shape_str(t->ndim, t->shape, f->actual, sizeof f->actual);
            snprintf(f->msg, sizeof f->msg, "local shape: expected %s, actual %s", f->expected, f->actual);
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
            lt_shape_str(s->ndim, s->v, f->expected, sizeof f->expected);
            lt_shape_str(dt->ndim, off, f->actual, sizeof f->actual);
            snprintf(f->msg, sizeof f->msg, "global offset: expected %s, actual %s", f->expected, f->actual);
            return 1;
        }
    }
    if (!d->vals || d->vals[r].kind == 0) return 0;
    const rank_vals *v = &d->vals[r];
    if (v->kind == 2) {
        if (!t->placeholder) {
            snprintf(f->expected, sizeof f->expected, "a placeholder");
            snprintf(f->actual, sizeof f->actual, "a shard of shape %s", lt_shape_str(t->ndim, t->shape, a, sizeof a));
            snprintf(f->msg, sizeof f->msg, "expected a placeholder, actual a shard of shape %s", a);
            return 1;
        }
        if (v->ph_ndim >= 0 && !same_shape(v->ph_ndim, v->ph_shape, t->logical_ndim, t->logical)) {
            snprintf(f->expected, sizeof f->expected, "placeholder for %s", lt_shape_str(v->ph_ndim, v->ph_shape, a, sizeof a));
            snprintf(f->actual, sizeof f->actual, "placeholder for %s",
                     lt_shape_str(t->logical_ndim, t->logical, b, sizeof b));
            snprintf(f->msg, sizeof f->msg, "expected a %s, actual a %s", f->expected, f->actual);
            return 1;
        }
        return 0;
    }
    if (t->placeholder) {
        snprintf(f->expected, sizeof f->expected, "%lld value%s", (long long)v->lit.n, v->lit.n == 1 ? "" : "s");
        snprintf(f->actual, sizeof f->actual, "placeholder for %s", lt_shape_str(t->logical_ndim, t->logical, a, sizeof a));
        snprintf(f->msg, sizeof f->msg, "expected %s, actual a %s", f->expected, f->actual);
        return 1;
    }
    int64_t n = lt_numel(t);
    int nested = v->lit.ndim >= 2;
    if ((nested && !same_shape(v->lit.ndim, v->lit.shape, t->ndim, t->shape)) || v->lit.n != n) {
        lt_shape_str(v->lit.ndim, v->lit.shape, f->expected, sizeof f->expected);
        lt_shape_str(t->ndim, t->shape, f->actual, sizeof f->actual);
        snprintf(f->msg, sizeof f->msg, "expected %lld value%s of shape %s, the shard has %lld (shape %s)",
                 (long long)v->lit.n, v->lit.n == 1 ? "" : "s", f->expected, (long long)n, f->actual);
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
        for (int64_t j = i; j < n; j++) nd += !close_enough(lt_get_flat(t, j), as_dtype(t->dtype, v->lit.v[j]), rt, at);
        lt__sc_fmt_index(t->ndim, idx, f->index, sizeof f->index);
        lt__sc_fmt_num(e, f->expected, sizeof f->expected);
        lt__sc_fmt_num(x, f->actual, sizeof f->actual);
        snprintf(f->msg, sizeof f->msg, "index %s: expected %s, actual %s (%lld of %lld element%s differ%s)", f->index,
                 f->expected, f->actual, (long long)nd, (long long)n, n == 1 ? "" : "s", n == 1 ? "s" : "");
        return 1;
    }
    return 0;
}

lt_status lt__sc_run_expect_local(sc_run_ctx *rc, const sc_step *st) {
    const expect_local_data *d = st->data;
    sc_value *v = lt__sc_value(rc, d->tensor);
    const lt_mesh *mesh = &rc->c->mesh;
    lt_tensor *const *shards = v->kind == SC_DTENSOR ? v->dt->local->shards : v->local->shards;
    int first = -1, nbad = 0;
    char others[128] = "";
    size_t used = 0;
    rank_fail f, tmp;
    for (int r = 0; r < mesh->world; r++) {
        if (!lt__sc_rank_runs(rc, st, r)) continue;   /* ranks: / when:, or waiting in a collective */
        rank_fail *cur = first < 0 ? &f : &tmp;
        memset(cur, 0, sizeof *cur);
        lt_tensor paper;   /* an absent rank (numerics sample/none): its layout stands in */
        const lt_tensor *t = shards[r];
        int asks = (d->vals && d->vals[r].kind) || (d->shapes && d->shapes[r].has) || (d->offsets && d->offsets[r].has);
        if (!t && !asks) continue;   /* absent, and nothing asked of it */
        if (!t && d->vals && d->vals[r].kind) {
            char rs[256] = "";
            if (rc->nranks > 0) lt_numerics_ranks_str(rc->ranks, rc->nranks, 8, rs, sizeof rs);
            return lt__sc_numerics_refuse(rc, "expect_local of rank %d's values (%s%s%s)", r,
                                          rc->nranks > 0 ? "only ranks " : "no rank has values", rs,
                                          rc->nranks > 0 ? " have values" : "");
        }
        if (!t) {
            if (v->kind != SC_DTENSOR)   /* a LocalTensor has no layout to stand in */
                return lt__sc_numerics_refuse(rc, "expect_local of rank %d's shard of LocalTensor '%s' (rank %d is not sampled)",
                                              r, d->tensor, r);
            memset(&paper, 0, sizeof paper);
            paper.dtype = v->dt->dtype;
            paper.ndim = v->dt->ndim;
            lt_status e = lt_spec_local_shape(lt_dtensor_spec(v->dt), r, paper.shape, NULL);
            if (e) return e;
            t = &paper;
        }
        int bad = check_rank(d, v->dt, t, r, cur);
        if (bad < 0) return lt__err_ctx(LT_NOMEM, "rank %d", r);
        if (!bad) continue;
        nbad++;
        if (first < 0) first = r;
        else if (used < sizeof others - 24) used += (size_t)snprintf(others + used, sizeof others - used, "%s%d", used ? ", " : "", r);
        else if (!strstr(others, "...")) used += (size_t)snprintf(others + used, sizeof others - used, ", ...");
    }
    if (first < 0) return LT_OK;
    int coord[LT_MESH_MAX_DIMS];
    int64_t c64[LT_MESH_MAX_DIMS];
    char cs[96];
    lt_mesh_coord(mesh, first, coord);
    for (int i = 0; i < mesh->ndim; i++) c64[i] = coord[i];
    lt__sc_fmt_index(mesh->ndim, c64, cs, sizeof cs);
    return lt__sc_check_fail(rc, st, first, f.index[0] ? f.index : NULL, f.expected[0] ? f.expected : NULL,
                             f.actual[0] ? f.actual : NULL, v->origin[0] ? v->origin : NULL,
                             "expect_local of '%s': rank %d (coord %s): %s%s%s%s", d->tensor, first, cs, f.msg,
                             nbad > 2 ? " (also ranks " : nbad > 1 ? " (also rank " : "", nbad > 1 ? others : "",
                             nbad > 1 ? ")" : "");
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
    NEW_DATA(expect_full_data, d);
    LT_TRY(lt__sc_use(pc, body, "expect_full", "tensor", SC_FULL | SC_DTENSOR, &d->tensor));
    const sc_node *eq = lt__sc_get(body, "equals"), *vals = lt__sc_get(body, "values");
    if (eq && vals) return lt__sc_err(vals, LT_INVALID, "expect_full: give either equals or values, not both");
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
            if (numel != d->lit.n && !(d->lit.ndim == d->ndim && !memcmp(d->lit.shape, d->shape, sizeof(int64_t) * (size_t)d->ndim)))
                return lt__sc_err(vals, LT_SHAPE, "expect_full: %lld values for shape with %lld elements", (long long)d->lit.n,
                                  (long long)numel);
        }
    }
    if (!eq && !vals && !d->has_shape)
        return lt__sc_err(body, LT_INVALID, "expect_full: give equals (a tensor name), values, or shape");
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
            w = snprintf(buf + used, n - used, "; index %s is %s rank %d (coord %s) at local index %s",
                         lt__sc_fmt_index(dt->ndim, gidx, gs, sizeof gs), partial >= 0 ? "a partial value on" : "held by",
                         r, cs, ls);
        else
            w = snprintf(buf + used, n - used, "%s rank %d (coord %s) at %s", found == 2 ? " (also" : ",", r, cs, ls);
        if (w > 0) used += (size_t)w < n - used ? (size_t)w : n - used - 1;
    }
    if (found > 1 && used + 1 < n) {
        int w = found > SHOW ? snprintf(buf + used, n - used, " and %d more)", found - SHOW)
                             : snprintf(buf + used, n - used, ")");
        if (w > 0) used += (size_t)w < n - used ? (size_t)w : n - used - 1;
    }
    if (partial >= 0 && found && used + 1 < n)
        snprintf(buf + used, n - used, "; mesh dim %d is P(%s): the value is the %s over it", partial,
                 lt_redop_name(dt->placements[partial].op), lt_redop_name(dt->placements[partial].op));
}

/* What rank r of DTensor dt (no Partial dims) should hold by expect_full's
 * reference, in numerics sample/none: the values of `equals` (a declared
 * tensor: its init: or values:; a sampled DTensor: its source
 * description) or of the literal, at r's global indices. *out new. */
static lt_status expected_at(sc_run_ctx *rc, const expect_full_data *d, const lt_dtensor *dt, int r, lt_tensor **out) {
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
        s = t ? lt_tensor_new(t->dtype, dt->ndim, l.local_shape, out) : lt__err(LT_INVALID, "internal: no tensor '%s'", d->equals);
        if (!s && l.lists) s = lt_init_fill_indexed(*out, &t->init, l.idx, dt->shape);
    } else if (e && e->kind == SC_FULL) {
        s = l.lists ? lt_gather_index_sets(e->full, l.idx, l.local_shape, out) : lt_tensor_new(e->full->dtype, dt->ndim, l.local_shape, out);
    } else if (d->has_lit) {
        s = lt_tensor_from_doubles(LT_F64, dt->ndim, dt->shape, d->lit.v, d->lit.n, &full);
        if (!s) s = l.lists ? lt_gather_index_sets(full, l.idx, l.local_shape, out) : lt_tensor_new(LT_F64, dt->ndim, l.local_shape, out);
    } else {
        s = lt__sc_numerics_refuse(rc, "expect_full against '%s' (not a sampled or declared tensor)", d->equals ? d->equals : "?");
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
static lt_status expect_full_sampled(sc_run_ctx *rc, const sc_step *st, const expect_full_data *d, sc_value *v) {
    if (v->kind != SC_DTENSOR)
        return lt__sc_numerics_refuse(rc, "expect_full of '%s', a tensor that is never built", d->tensor);
    const lt_dtensor *dt = v->dt;
    for (int i = 0; i < rc->c->mesh.ndim; i++)
        if (dt->placements[i].kind == LT_PL_PARTIAL)
            return lt__sc_numerics_refuse(rc, "expect_full of '%s', Partial on mesh dim %d (its value needs every rank's contribution)",
                                          d->tensor, i);
    const sc_value *e = d->equals ? lt__sc_value(rc, d->equals) : NULL;
    if (e && e->kind == SC_DTENSOR && e->sampled)
        for (int i = 0; i < rc->c->mesh.ndim; i++)
            if (e->dt->placements[i].kind == LT_PL_PARTIAL)
                return lt__sc_numerics_refuse(rc, "expect_full against '%s', Partial on mesh dim %d", d->equals, i);
    const char *origin = v->origin[0] ? v->origin : NULL;
    char a[128], b[128];
    int want_nd = -1;
    const int64_t *want = NULL;
    if (d->has_shape) want_nd = d->ndim, want = d->shape;
    else if (d->has_lit && d->lit.ndim >= 2) want_nd = d->lit.ndim, want = d->lit.shape;
    else if (e) want_nd = e->kind == SC_DTENSOR ? e->dt->ndim : -1, want = e->kind == SC_DTENSOR ? e->dt->shape : NULL;
    if (e && e->kind == SC_FULL) {
        for (int i = 0; i < rc->c->ntensors; i++)
            if (!strcmp(rc->c->tensors[i].name, d->equals)) want_nd = rc->c->tensors[i].ndim, want = rc->c->tensors[i].shape;
    }
    if (want && !same_shape(want_nd, want, dt->ndim, dt->shape)) {
        lt_shape_str(want_nd, want, a, sizeof a);
        lt_shape_str(dt->ndim, dt->shape, b, sizeof b);
        return lt__sc_check_fail(rc, st, -1, NULL, a, b, origin, "expect_full of '%s': shape: expected %s, actual %s",
                                 d->tensor, a, b);
    }
    if (d->has_lit && !d->has_shape && d->lit.ndim < 2) {
        int64_t n = 1;
        for (int k = 0; k < dt->ndim; k++) n *= dt->shape[k];
        if (d->lit.n != n) {
            snprintf(a, sizeof a, "%lld value%s", (long long)d->lit.n, d->lit.n == 1 ? "" : "s");
            snprintf(b, sizeof b, "%lld value%s", (long long)n, n == 1 ? "" : "s");
            return lt__sc_check_fail(rc, st, -1, NULL, a, b, origin, "expect_full of '%s': expected %s, actual %s", d->tensor, a, b);
        }
    }
    if (!d->equals && !d->has_lit) return LT_OK;   /* shape only */
    for (int i = 0; i < rc->nranks; i++) {
        int r = rc->ranks[i];
        const lt_tensor *act = dt->local->shards[r];
        lt_tensor *exp;
        LT_TRY(expected_at(rc, d, dt, r, &exp));
        double rt, at, rt2, at2;
        tol_for(d->has_tol, d->rtol, d->atol, act->dtype, &rt, &at);
        if (d->equals && !d->has_tol) {
            lt_dtype_default_tol(exp->dtype, &rt2, &at2);
            if (rt2 > rt) rt = rt2;
            if (at2 > at) at = at2;
        }
        int64_t n = lt_numel(act), bad = -1, nbad = 0;
        for (int64_t k = 0; k < n; k++) {
            double x = lt_get_flat(act, k), ev = d->equals ? lt_get_flat(exp, k) : as_dtype(act->dtype, lt_get_flat(exp, k));
            if (close_enough(x, ev, rt, at)) continue;
            if (bad < 0) bad = k;
            nbad++;
        }
        if (bad < 0) {
            lt_tensor_free(exp);
            continue;
        }
        int64_t idx[LT_MAX_DIMS], g[LT_MAX_DIMS], rest = bad;
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
        lt_tensor_free(exp);
        return lt__sc_check_fail(rc, st, r, is, es, as, origin,
                                 "expect_full of '%s'%s%s: index %s: expected %s, actual %s (held by sampled rank %d; %lld of its %lld element%s differ%s; %s)",
                                 d->tensor, d->equals ? " == " : "", d->equals ? d->equals : "", is, es, as, r, (long long)nbad,
                                 (long long)n, n == 1 ? "" : "s", nbad == 1 ? "s" : "", rc->c->res.numerics);
    }
    return LT_OK;
}

lt_status lt__sc_run_expect_full(sc_run_ctx *rc, const sc_step *st) {
    const expect_full_data *d = st->data;
    sc_value *v = lt__sc_value(rc, d->tensor);
    if (rc->nranks >= 0) return expect_full_sampled(rc, st, d, v);
    lt_tensor *act = NULL, *exp = NULL;
    int own_a = 0, own_e = 0;
    lt_status s = full_of(v, &act, &own_a);
    if (s) return lt__err_ctx_in(s, "expect_full", " of '%s'", d->tensor);
    const char *origin = v->origin[0] ? v->origin : NULL;
    char a[128], b[128];
    /* shape */
    int want_nd = -1;
    const int64_t *want = NULL;
    if (d->has_shape) want_nd = d->ndim, want = d->shape;
    else if (d->has_lit && d->lit.ndim >= 2) want_nd = d->lit.ndim, want = d->lit.shape;
    if (want && !same_shape(want_nd, want, act->ndim, act->shape)) {
        lt_shape_str(want_nd, want, a, sizeof a);
        lt_shape_str(act->ndim, act->shape, b, sizeof b);
        if (own_a) lt_tensor_free(act);
        return lt__sc_check_fail(rc, st, -1, NULL, a, b, origin, "expect_full of '%s': shape: expected %s, actual %s",
                                 d->tensor, a, b);
    }
    int64_t n = lt_numel(act);
    const double *ev = NULL;
    if (d->equals) {
        sc_value *e = lt__sc_value(rc, d->equals);
        if ((s = full_of(e, &exp, &own_e))) {
            if (own_a) lt_tensor_free(act);
            return lt__err_ctx_in(s, "expect_full", ": '%s'", d->equals);
        }
        if (!same_shape(exp->ndim, exp->shape, act->ndim, act->shape)) {
            lt_shape_str(exp->ndim, exp->shape, a, sizeof a);
            lt_shape_str(act->ndim, act->shape, b, sizeof b);
            if (own_a) lt_tensor_free(act);
            if (own_e) lt_tensor_free(exp);
            return lt__sc_check_fail(rc, st, -1, NULL, a, b, origin,
                                     "expect_full of '%s': shape: expected %s (the shape of '%s'), actual %s", d->tensor, a,
                                     d->equals, b);
        }
    } else if (d->has_lit) {
        if (d->lit.n != n) {
            if (own_a) lt_tensor_free(act);
            snprintf(a, sizeof a, "%lld value%s", (long long)d->lit.n, d->lit.n == 1 ? "" : "s");
            snprintf(b, sizeof b, "%lld value%s", (long long)n, n == 1 ? "" : "s");
            return lt__sc_check_fail(rc, st, -1, NULL, a, b, origin, "expect_full of '%s': expected %s, actual %s", d->tensor,
                                     a, b);
        }
        ev = d->lit.v;
    }
    if (!exp && !ev) {
        if (own_a) lt_tensor_free(act);
        return LT_OK;   /* shape only */
    }
    double rt, at, rt2, at2;
    tol_for(d->has_tol, d->rtol, d->atol, act->dtype, &rt, &at);
    if (exp && !d->has_tol) {   /* the looser of the two dtypes */
        lt_dtype_default_tol(exp->dtype, &rt2, &at2);
        if (rt2 > rt) rt = rt2;
        if (at2 > at) at = at2;
    }
    int64_t bad = -1, nbad = 0;
    double maxd = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = lt_get_flat(act, i), e = exp ? lt_get_flat(exp, i) : as_dtype(act->dtype, ev[i]);
        if (close_enough(x, e, rt, at)) continue;
        if (bad < 0) bad = i;
        nbad++;
        if (fabs(x - e) > maxd || isnan(x - e)) maxd = fabs(x - e);
    }
    lt_status ret = LT_OK;
    if (bad >= 0) {
        int64_t idx[LT_MAX_DIMS], rest = bad;
        for (int k = act->ndim - 1; k >= 0; k--) {
            idx[k] = rest % act->shape[k];
            rest /= act->shape[k];
        }
        char is[96], es[48], as[48], md[48], holders[400] = "";
        double e = exp ? lt_get_flat(exp, bad) : as_dtype(act->dtype, ev[bad]);
        lt__sc_fmt_index(act->ndim, idx, is, sizeof is);
        lt__sc_fmt_num(e, es, sizeof es);
        lt__sc_fmt_num(lt_get_flat(act, bad), as, sizeof as);
        lt__sc_fmt_num(maxd, md, sizeof md);
        if (v->kind == SC_DTENSOR) holders_str(v->dt, idx, holders, sizeof holders);
        ret = lt__sc_check_fail(rc, st, -1, is, es, as, origin,
                                "expect_full of '%s'%s%s: index %s: expected %s, actual %s (%lld of %lld element%s differ%s, max |diff| %s)%s",
                                d->tensor, d->equals ? " == " : "", d->equals ? d->equals : "", is, es, as,
                                (long long)nbad, (long long)n, n == 1 ? "" : "s", nbad == 1 && n == 1 ? "s" : "", md,
                                holders);
    }
    if (own_a) lt_tensor_free(act);
    if (own_e) lt_tensor_free(exp);
    return ret;
}

/* ---- expect_plan, expect_comm ------------------------------------------------------------ */

typedef struct {
    int has_colls, ncolls;
    lt_coll *colls;
    int64_t steps, bytes, count;      /* -1: not checked (count: expect_comm) */
    int since_start;                  /* expect_comm */
} expect_comm_data;

static lt_status parse_colls(sc_parse_ctx *pc, const sc_node *body, const char *what, expect_comm_data *d) {
    const sc_node *n = lt__sc_get(body, "collectives");
    d->steps = d->bytes = d->count = -1;
    if (!n) return LT_OK;
    if (n->kind != SC_SEQ)
        return lt__sc_err(n, LT_INVALID, "%s: collectives: expected a list like [all_gather, all_to_all], got %s", what,
                          lt__sc_kind_name(n));
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
    NEW_DATA(expect_comm_data, d);
    LT_TRY(parse_colls(pc, body, "expect_plan", d));
    if ((n = lt__sc_get(body, "steps"))) LT_TRY(lt__sc_i64(n, "expect_plan: steps", 0, INT32_MAX, &d->steps));
    if ((n = lt__sc_get(body, "bytes"))) LT_TRY(lt__sc_i64(n, "expect_plan: bytes", 0, INT64_MAX, &d->bytes));
    if (!d->has_colls && d->steps < 0 && d->bytes < 0)
        return lt__sc_err(body, LT_INVALID, "expect_plan: give at least one of collectives, steps, bytes");
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

static void plan_diff_add(plan_diff *pd, const char *key, const char *e, const char *verb, const char *a) {
    app(pd->msg, sizeof pd->msg, &pd->um, "%s %s: expected %s, the plan %s %s", pd->n ? ";" : "", key, e, verb, a);
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
    if (!p) return lt__err_in(LT_INVALID, "expect_plan", ": the last redistribute made no plan (it failed before planning)");
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
    return lt__sc_check_fail(rc, st, -1, NULL, pd.e, pd.a, rc->plan_text, "%s", pd.msg);
}

lt_status lt__sc_parse_expect_comm(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"collectives", "count", "bytes", "since", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "expect_comm", keys));
    NEW_DATA(expect_comm_data, d);
    LT_TRY(parse_colls(pc, body, "expect_comm", d));
    if ((n = lt__sc_get(body, "count"))) LT_TRY(lt__sc_i64(n, "expect_comm: count", 0, INT64_MAX, &d->count));
    if ((n = lt__sc_get(body, "bytes"))) LT_TRY(lt__sc_i64(n, "expect_comm: bytes", 0, INT64_MAX, &d->bytes));
    if ((n = lt__sc_get(body, "since"))) {
        const char *s;
        LT_TRY(lt__sc_str(n, "expect_comm: since", &s));
        if (!strcmp(s, "start")) d->since_start = 1;
        else if (strcmp(s, "mark"))
            return lt__sc_err(n, LT_INVALID, "expect_comm: since: expected mark or start, got '%s'", s);
    }
    if (!d->has_colls && d->count < 0 && d->bytes < 0)
        return lt__sc_err(body, LT_INVALID, "expect_comm: give at least one of collectives, count, bytes");
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
                return lt__sc_check_fail(rc, st, -1, NULL, e, a, NULL, "expect_comm: collectives %s: expected %s, issued %s%s", from, e,
                                         a, n - since > (size_t)ng ? " ..." : "");
            }
        }
        if (d->count >= 0 && (size_t)d->count != n - since) {
            snprintf(e, sizeof e, "%lld", (long long)d->count);
            snprintf(a, sizeof a, "%zu", n - since);
            return lt__sc_check_fail(rc, st, -1, NULL, e, a, NULL, "expect_comm: collectives %s: expected %s, issued %s", from, e, a);
        }
    }
    if (d->bytes >= 0) {
        lt_trace_totals tot;
        lt_trace_totals_since(t, since, &tot);
        if ((size_t)d->bytes != tot.bytes_sent) {
            snprintf(e, sizeof e, "%lld", (long long)d->bytes);
            snprintf(a, sizeof a, "%zu", tot.bytes_sent);
            return lt__sc_check_fail(rc, st, -1, NULL, e, a, NULL, "expect_comm: bytes sent %s (all ranks): expected %s, actual %s",
                                     from, e, a);
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
        return lt__sc_err(body, LT_INVALID, "expect_error: expected a mapping holding one step plus contains: and status:, got %s",
                          lt__sc_kind_name(body));
    NEW_DATA(expect_error_data, d);
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
                return lt__sc_err(v, LT_INVALID, "expect_error: status: '%s' is not an error status (invalid, shape, dtype, overflow, unsupported, mismatch, nomem, io)", s);
        } else if (!strcmp(k->str, "ranks") || !strcmp(k->str, "when")) {
            if (sel) return lt__sc_err(k, LT_INVALID, "expect_error: give either ranks: or when:, not both");
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
                return lt__sc_err(k, LT_INVALID, "expect_error: wraps one step; '%s' is a second one (first: '%s')", k->str,
                                  step_key->str);
            step_key = k;
            step_body = v;
        } else {
            return lt__sc_err(k, LT_INVALID, "unknown key '%s' in expect_error (expected contains, status, hang, and one step: %s)", k->str,
                              lt__sc_step_names());
        }
    }
    if (!step_key && sel) return lt__sc_err(sel, LT_INVALID, "expect_error: %s: applies to the wrapped step, and there is none", sel->str);
    if (!step_key && d->hang >= 0) return LT_OK;   /* the per-rank program must be stuck here */
    if (!step_key) return lt__sc_err(body, LT_INVALID, "expect_error: no step to run (wrap one of: %s; or give hang: to check that the per-rank program would hang here)", lt__sc_step_names());
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

lt_status lt__sc_run_expect_error(sc_run_ctx *rc, const sc_step *st) {
    const expect_error_data *d = st->data;
    int saved = rc->capturing;
    rc->capturing = 1;
    rc->hang_kind = -1;
    lt_status s;
    if (d->inner.type) {
        s = lt__sc_run_step(rc, &d->inner);
        /* a rank's error while others wait: the rank_failed report */
        if (s && d->hang >= 0 && !(s == LT_MISMATCH && rc->failed_check)) s = lt__sc_rank_failed(rc, st, s);
    } else {
        rc->failed_check = 0;
        lt__err_clear();
        s = lt__sc_program_end(rc, st);
    }
    rc->capturing = saved;
    rc->failed_check = 0;
    int hung = rc->hang_kind;
    rc->hung = 0;   /* expected or not, the report is this check's result */
    /* running out of memory is never the error a scenario expects (unless
     * it asks for status nomem): the case stops as an error */
    if (s == LT_NOMEM && d->status != LT_NOMEM) return s;
    char msg[1200];
    snprintf(msg, sizeof msg, "%s", lt_errmsg());
    const char *name = d->inner.type ? d->inner.type->name : "the per-rank program";
    char want[300];
    if (d->hang >= 0)
        snprintf(want, sizeof want, "a would-hang report (%s)%s%s%s", lt_hang_kind_name((lt_hang_kind)d->hang),
                 d->contains ? " containing '" : "", d->contains ? d->contains : "", d->contains ? "'" : "");
    else
        snprintf(want, sizeof want, "an error%s%s%s%s%s", d->status >= 0 ? " of status " : "", d->status >= 0 ? status_key(d->status) : "",
                 d->contains ? " containing '" : "", d->contains ? d->contains : "", d->contains ? "'" : "");
    if (s == LT_OK && d->hang >= 0)
        return lt__sc_check_fail(rc, st, -1, NULL, want, "every collective completed", NULL,
                                 "expect_error: %s would not hang, but %s was expected", name, want);
    if (s != LT_OK && d->hang >= 0 && hung != d->hang)
        return lt__sc_check_fail(rc, st, -1, NULL, lt_hang_kind_name((lt_hang_kind)d->hang),
                                 hung >= 0 ? lt_hang_kind_name((lt_hang_kind)hung) : "another error", NULL,
                                 "expect_error: %s failed with '%s', but %s was expected", name, msg, want);
    if (s == LT_OK)
        return lt__sc_check_fail(rc, st, -1, NULL, want, "success", NULL, "expect_error: %s succeeded, but %s was expected", name, want);
    if (d->contains && !strstr(msg, d->contains))
        return lt__sc_check_fail(rc, st, -1, NULL, want, msg, NULL,
                                 "expect_error: %s failed with another error than expected: '%s' (expected %s)", name, msg, want);
    if (d->status >= 0 && (int)s != d->status)
        return lt__sc_check_fail(rc, st, -1, NULL, status_key(d->status), status_key((int)s), NULL,
                                 "expect_error: %s failed with status %s ('%s'), expected %s", name, status_key((int)s), msg,
                                 status_key(d->status));
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
    NEW_DATA(expect_order_data, d);
    LT_TRY(lt__sc_need(body, "expect_order", "placements", &n));
    LT_TRY(lt__sc_placements_new(pc->arena, n, "expect_order: placements", &d->pl, &d->np));
    LT_TRY(lt__sc_need(body, "expect_order", "order", &n));
    if (n->kind != SC_SEQ || n->n > 2 * LT_MESH_MAX_DIMS)
        return lt__sc_err(n, LT_INVALID, "expect_order: order: expected a list of [mesh_dim, placement] pairs, got %s",
                          lt__sc_kind_name(n));
    d->n = n->n;
    for (int i = 0; i < n->n; i++) {
        const sc_node *e = n->kids[i];
        const char *s;
        if (e->kind != SC_SEQ || e->n != 2)
            return lt__sc_err(e, LT_INVALID, "expect_order: order: expected [mesh_dim, placement], got %s", lt__sc_kind_name(e));
        LT_TRY(lt__sc_int(e->kids[0], "expect_order: mesh dim", 0, LT_MESH_MAX_DIMS - 1, &d->mesh_dim[i]));
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
    const lt_mesh *m = &rc->c->mesh;
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
    return lt__sc_check_fail(rc, st, -1, NULL, e, a, NULL, "expect_order: expected %s, actual %s", e, a);
}
