/* tools/scenario/scenario_spmd.c — per-rank values in scenarios
 * (docs/SEMANTICS.md §12): which steps run rank by rank and on which ranks
 * (and which step each rank ran last: where a would-hang report places a
 * finished rank), to_local and local_tensor. The collectives such steps
 * call, matched rank by rank, and how a per-rank program ends are in
 * scenario_match.c.
 *
 * Keys (for scenarios/README.md):
 *   to_local: tensor (a DTensor), as — its shards as a LocalTensor.
 *   local_tensor: shape (a list of sizes, each a number or an expression),
 *       values (a number or an expression; `i` is the element's flat index),
 *       dtype (default f32), as.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/scenario/scenario_impl.h"

int lt__sc_step_is_per_rank(const sc_step_type *t) {
    static const char *const names[] = {
        "to_local", "local_tensor", "local_op", "collective", "send",
        "recv",     "show",         "expect_local", "repeat", NULL}; /* repeat: per rank */
    for (int i = 0; names[i]; i++)
        if (!strcmp(t->name, names[i])) return 1;
    return 0;
}

int lt__sc_rank_runs(const sc_run_ctx *rc, const sc_step *st, int r) {
    return (!st->mask || st->mask[r]) && !(rc->blocked && rc->blocked[r]) &&
           !(rc->ended && rc->ended[r]);
}

lt_status lt__sc_note_ran(sc_run_ctx *rc, const sc_step *st) {
    if (!strcmp(st->type->name, "expect_error") || !strcmp(st->type->name, "repeat")) return LT_OK;
    int W = rc->c->mesh->world;
    if (!rc->last && !st->mask && !lt__sc_any_stopped(rc)) {   /* every rank runs it */
        rc->last_all = st->pos;
        return LT_OK;
    }
    if (!rc->last) {
        rc->last = lt__malloc((size_t)W * sizeof *rc->last);
        if (!rc->last) return lt__err(LT_NOMEM, "out of memory");
        for (int r = 0; r < W; r++) rc->last[r] = rc->last_all;
    }
    for (int r = 0; r < W; r++)
        if (lt__sc_rank_runs(rc, st, r)) rc->last[r] = st->pos;
    return LT_OK;
}

sc_pos lt__sc_last_step(const sc_run_ctx *rc, int r) {
    return rc->last ? rc->last[r] : rc->last_all;
}

int lt__sc_any_stopped(const sc_run_ctx *rc) {
    for (int r = 0; rc->blocked && r < rc->c->mesh->world; r++)
        if (rc->blocked[r] || (rc->ended && rc->ended[r])) return 1;
    return 0;
}

void lt__sc_running_ranks(const sc_run_ctx *rc, char *buf, size_t n) {
    int W = rc->c->mesh->world, count = 0, shown = 0;
    for (int r = 0; r < W; r++)
        count += !(rc->blocked && rc->blocked[r]) && !(rc->ended && rc->ended[r]);
    size_t used = (size_t)snprintf(buf, n, "%s", count == 1 ? "rank" : "ranks");
    for (int r = 0; r < W && used < n; r++) {
        if ((rc->blocked && rc->blocked[r]) || (rc->ended && rc->ended[r])) continue;
        if (shown == 8) {
            used += (size_t)snprintf(buf + used, n - used, " and %d more", count - shown);
            break;
        }
        used += (size_t)snprintf(buf + used, n - used, "%s%d", shown++ ? ", " : " ", r);
    }
    if (used < n) snprintf(buf + used, n - used, " still run%s", count == 1 ? "s" : "");
}

lt_status lt__sc_skipped_shard(sc_run_ctx *rc, const char *as, int r, const lt_tensor *like,
                               lt_tensor **out) {
    sc_value *old = lt__sc_value(rc, as);
    if (rc->ncarry == rc->carry_cap) {   /* the value put under `as` keeps r's older origin */
        int cap = rc->carry_cap ? 2 * rc->carry_cap : 16;
        struct sc_carry *nc = lt__realloc(rc->carry, sizeof *nc * (size_t)cap);
        if (!nc) return lt__err(LT_NOMEM, "out of memory");
        rc->carry = nc;
        rc->carry_cap = cap;
    }
    rc->carry[rc->ncarry].name = as;
    rc->carry[rc->ncarry++].rank = r;
    if (old && old->kind == SC_LOCAL) return lt_clone(old->local->shards[r], out);
    if (like && !like->placeholder)
        return lt_tensor_placeholder(like->dtype, like->ndim, like->shape, out);
    if (like) return lt_tensor_placeholder(like->dtype, like->logical_ndim, like->logical, out);
    return lt_tensor_placeholder(LT_F32, 0, NULL, out);
}

static char *coord_str(const lt_mesh *m, int r, char *buf, size_t n) {
    int c[LT_MESH_MAX_DIMS];
    int64_t c64[LT_MESH_MAX_DIMS];
    lt_mesh_coord(m, r, c);
    for (int i = 0; i < m->ndim; i++) c64[i] = c[i];
    return lt__sc_fmt_index(m->ndim, c64, buf, n);
}

/* ---- to_local ---------------------------------------------------------------------- */

typedef struct {
    const char *tensor, *as;
} to_local_data;

lt_status lt__sc_parse_to_local(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"tensor", "as", NULL};
    LT_TRY(lt__sc_keys(body, "to_local", keys));
    LT__SC_NEW_DATA(to_local_data, d);
    LT_TRY(lt__sc_use(pc, body, "to_local", "tensor", SC_DTENSOR, &d->tensor));
    return lt__sc_define(pc, body, "to_local", SC_LOCAL, &d->as);
}

lt_status lt__sc_run_to_local(sc_run_ctx *rc, const sc_step *st) {
    const to_local_data *d = st->data;
    const lt_dtensor *dt = lt__sc_value(rc, d->tensor)->dt;
    lt_local *l = NULL;
    lt_status s = lt_local_new(rc->c->mesh, &l);
    for (int r = 0; r < rc->c->mesh->world && !s; r++) {
        const lt_tensor *sh = dt->local->shards[r];
        s = lt__sc_rank_runs(rc, st, r) ? lt_clone(sh, &l->shards[r])
                                        : lt__sc_skipped_shard(rc, d->as, r, sh, &l->shards[r]);
    }
    if (s) {
        lt_local_free(l);
        return lt__err_ctx_in(s, "to_local", " of '%s'", d->tensor);
    }
    char origin[256];
    snprintf(origin, sizeof origin, "to_local at %s:%d:%d", st->pos.file, st->pos.line,
             st->pos.col);
    s = lt__sc_put_local(rc, d->as, l, origin);
    return s ? s : lt__sc_diverge_to_local(rc, st, d->tensor, d->as);
}

/* ---- local_tensor ------------------------------------------------------------------- */

typedef struct {
    int ndim;
    sc_expr *shape[LT_MAX_DIMS];
    sc_expr *values;
    lt_dtype dtype;
    const char *as;
} local_tensor_data;

lt_status lt__sc_parse_local_tensor(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"shape", "values", "dtype", "as", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "local_tensor", keys));
    LT__SC_NEW_DATA(local_tensor_data, d);
    LT_TRY(lt__sc_need(body, "local_tensor", "shape", &n));
    if (n->kind == SC_SEQ) {
        if (n->n > LT_MAX_DIMS)
            return lt__sc_err(n, LT_INVALID, "local_tensor: shape: at most %d dims, got %d",
                              LT_MAX_DIMS, n->n);
        d->ndim = n->n;
        for (int i = 0; i < n->n; i++)
            LT_TRY(lt__sc_expr_parse_pc(pc, n->kids[i], 0, "local_tensor: shape", &d->shape[i]));
    } else {
        d->ndim = 1;
        LT_TRY(lt__sc_expr_parse_pc(pc, n, 0, "local_tensor: shape", &d->shape[0]));
    }
    LT_TRY(lt__sc_need(body, "local_tensor", "values", &n));
    LT_TRY(lt__sc_expr_parse_pc(pc, n, 1, "local_tensor: values", &d->values));
    d->dtype = LT_F32;
    if ((n = lt__sc_get(body, "dtype"))) LT_TRY(lt__sc_dtype(n, "local_tensor: dtype", &d->dtype));
    return lt__sc_define(pc, body, "local_tensor", SC_LOCAL, &d->as);
}

lt_status lt__sc_run_local_tensor(sc_run_ctx *rc, const sc_step *st) {
    const local_tensor_data *d = st->data;
    const lt_mesh *mesh = rc->c->mesh;
    lt_local *l = NULL;
    lt_status s = lt_local_new(mesh, &l);
    for (int r = 0; r < mesh->world && !s; r++) {
        if (!lt__sc_rank_runs(rc, st, r)) continue;
        sc_env env;
        int64_t shape[LT_MAX_DIMS], numel = 0;
        lt__sc_env_rank(mesh, r, &env);
        for (int k = 0; k < d->ndim && !s; k++)
            s = lt__sc_expr_int_rc(d->shape[k], &env, rc, "a size", 0, INT32_MAX, &shape[k]);
        if (!s) s = lt__numel_checked(d->ndim, shape, lt_dtype_size(d->dtype), &numel);
        if (!s) s = lt_tensor_new(d->dtype, d->ndim, shape, &l->shards[r]);
        for (int64_t i = 0; i < numel && !s; i++) {
            double v;
            env.i = i;
            s = lt__sc_expr_eval_rc(d->values, &env, rc, &v);
            if (!s) lt_set_flat(l->shards[r], i, v);
        }
        if (s) {
            char cs[96];
            rc->failed_rank = r;
            s = lt__err_ctx_in(s, "local_tensor", ": rank %d (coord %s)",
                               lt_mesh_rank_id(mesh, r),
                               coord_str(mesh, r, cs, sizeof cs));
        }
    }
    for (int r = 0; r < mesh->world && !s; r++)
        if (!l->shards[r]) s = lt__sc_skipped_shard(rc, d->as, r, NULL, &l->shards[r]);
    if (s) {
        lt_local_free(l);
        return s;
    }
    char origin[256];
    snprintf(origin, sizeof origin, "local_tensor at %s:%d:%d", st->pos.file, st->pos.line,
             st->pos.col);
    s = lt__sc_put_local(rc, d->as, l, origin);
    return s ? s : lt__sc_diverge_local_tensor(rc, st, d->as);
}
