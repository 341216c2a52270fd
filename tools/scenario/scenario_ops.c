/* tools/scenario/scenario_ops.c — the scenario steps of DTensor ops: op, tp_mlp,
 * rank_map, expect_replicas.
 *
 * `op` runs any op of localtensor/ops.h on DTensors (sharding propagation
 * decides the output layout and the input redistributes, which go through
 * the case's communicator so expect_comm sees them) and, unless told
 * otherwise, checks the result against the op run on the unsharded tensors
 * — that comparison counts as a check. `tp_mlp` runs the tensor-parallel MLP
 * and checks it against the single-device MLP. `rank_map` runs a named
 * per-rank function (replicas may diverge); `expect_replicas` checks that
 * replicas agree, or that they diverge with a given message.
 *
 * Keys (for scenarios/README.md):
 *   op:  op (name of LT_OP_MAP, required), inputs (DTensor names, one per
 *        input; none for rand/randn), as (a name, or a list for split/chunk),
 *        dim, dim2 (transpose's second dim, flatten's end), dims (reduce
 *        dims, permute order, squeeze dims), keepdim, shape (reshape/view target, one -1
 *        allowed; rand/randn shape), split_size, sizes, chunks, scalar (the
 *        *_scalar ops), p (dropout), seed, alpha, beta (addmm), dtype and
 *        placements (rand/randn), expect_placements (the output's, a check),
 *        reference (default true: compare with the unsharded run, a check),
 *        rtol, atol (for the reference; default: the dtype's).
 *   tp_mlp: x, w1, b1, w2, b2 (full tensors: x (tokens, in), w1 (hidden,
 *        in), b1 (hidden), w2 (out, hidden), b2 (out)), styles (two of
 *        colwise | rowwise | replicate; default [colwise, rowwise]),
 *        sequence_parallel (default false), activation (a unary op; gelu),
 *        tp_dim (default 0), as, rtol, atol.
 *   rank_map: tensor, fn (identity, add_rank, scale_by_rank, add_coord0,
 *        bump_rank0, local_numel, local_dim0), as, ints (expected per-rank
 *        ints, one per rank; a check).
 *   expect_replicas: tensor, diverged (default false), contains (a
 *        substring of the divergence message; implies diverged).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "localtensor/ops.h"
#include "tools/scenario/scenario_impl.h"
#include "kernels/status_impl.h"
#include "localtensor/reference.h"
#include "localtensor/tp.h"

/* Why split/chunk may give fewer outputs than asked, for the message. */
#define SHORT_SPLIT "as torch.chunk and torch.split, fewer pieces when the dim is short"

static char *pos_str(const sc_step *st, char *buf, size_t n) {
    snprintf(buf, n, "%s:%d:%d", st->pos.file, st->pos.line, st->pos.col);
    return buf;
}

/* A one-pair mapping {key: item} so list items go through lt__sc_use/define. */
static void as_map(const sc_node *item, const char *key, sc_node *k, sc_node *m, sc_node **kids) {
    memset(k, 0, sizeof *k);
    memset(m, 0, sizeof *m);
    k->kind = SC_SCALAR, k->line = item->line, k->col = item->col, k->file = item->file,
    k->str = key, k->plain = 1;
    m->kind = SC_MAP, m->line = item->line, m->col = item->col, m->file = item->file, m->n = 1;
    kids[0] = k, kids[1] = (sc_node *)item;
    m->kids = kids;
}

/* Names under `key`: one name or a list of names. define: define them (kind). */
static lt_status names(sc_parse_ctx *pc, const sc_node *body, const char *what, const char *key,
                       int kinds, int define, int max, const char ***out, int *n) {
    const sc_node *v = lt__sc_get(body, key);
    *n = 0;
    if (!v) return LT_OK;
    int cnt = v->kind == SC_SEQ ? v->n : 1;
    if (cnt > max)
        return lt__sc_err(v, LT_INVALID, "%s: at most %d names under '%s'", what, max, key);
    const char **list = lt__sc_alloc(pc->arena, sizeof *list * (size_t)(cnt ? cnt : 1));
    if (!list) return LT_NOMEM;
    for (int i = 0; i < cnt; i++) {
        const sc_node *item = v->kind == SC_SEQ ? v->kids[i] : v;
        sc_node k, m, *kids[2];
        as_map(item, define ? "as" : "tensor", &k, &m, kids);
        if (define) LT_TRY(lt__sc_define(pc, &m, what, kinds, &list[i]));
        else LT_TRY(lt__sc_use(pc, &m, what, "tensor", kinds, &list[i]));
    }
    *out = list;
    *n = cnt;
    return LT_OK;
}

/* A list of ints (or one int), each in lo..hi, into v[max]. */
static lt_status int_list(const sc_node *n, const char *what, int64_t lo, int64_t hi, int max,
                          int64_t *v, int *cnt) {
    int c = n->kind == SC_SEQ ? n->n : 1;
    if (c > max) return lt__sc_err(n, LT_INVALID, "%s: at most %d entries, got %d", what, max, c);
    for (int i = 0; i < c; i++)
        LT_TRY(lt__sc_i64(n->kind == SC_SEQ ? n->kids[i] : n, what, lo, hi, &v[i]));
    *cnt = c;
    return LT_OK;
}

static lt_status parse_tol(const sc_node *body, const char *what, int *has, double *rtol,
                           double *atol) {
    const sc_node *r = lt__sc_get(body, "rtol"), *a = lt__sc_get(body, "atol");
    *has = r || a;
    *rtol = *atol = 0;
    if (r) LT_TRY(lt__sc_f64(r, what, rtol));
    if (a) LT_TRY(lt__sc_f64(a, what, atol));
    if (*rtol < 0 || *atol < 0 || isnan(*rtol) || isnan(*atol))
        return lt__sc_err(r ? r : a, LT_INVALID, "%s: tolerances must be >= 0", what);
    return LT_OK;
}

/* ---- op ------------------------------------------------------------------------------ */

typedef struct {
    lt_op_kind op;
    const char **in, **as;
    int nin, nout;
    lt_op_args *args;
    int reference, has_tol;
    double rtol, atol;
    lt_placement *want_pl;        /* (want_np) expected output placements, or NULL */
    int want_np;
    sc_expr *scalar_e, *seed_e; /* local_op: scalar / p and seed as per-rank expressions, or NULL */
} op_data;

/* `op` (local 0: DTensors, sharding propagation) and `local_op` (local 1:
 * LocalTensors, each rank's shard on its own). */
/* The dims and sizes an op takes: dim, dim2, dims, keepdim, shape,
 * split_size, sizes, chunks. */
static lt_status op_dims(const sc_node *body, lt_op_args *a) {
    const sc_node *n;
    int64_t v[LT_OP_MAX_OUTPUTS];
    int cnt = 0;
    if ((n = lt__sc_get(body, "dim"))) {
        LT_TRY(lt__sc_int(n, "op: dim", -LT_MAX_DIMS - 1, LT_MAX_DIMS, &a->dim));
        a->dim_set = 1; /* squeeze: only this dim (without it: every size-1 dim) */
    }
    if ((n = lt__sc_get(body, "dim2"))) {
        LT_TRY(lt__sc_int(n, "op: dim2", -LT_MAX_DIMS - 1, LT_MAX_DIMS, &a->dim2));
        a->flatten_end_set = 1;
    }
    if ((n = lt__sc_get(body, "dims"))) {
        /* they land in ints: the same range as 'dim' (the op names a dim out of range) */
        LT_TRY(int_list(n, "op: dims", -LT_MAX_DIMS - 1, LT_MAX_DIMS, LT_MAX_DIMS, v, &cnt));
        a->ndims = cnt;
        for (int i = 0; i < cnt; i++) a->dims[i] = (int)v[i];
    }
    if ((n = lt__sc_get(body, "keepdim"))) LT_TRY(lt__sc_bool(n, "op: keepdim", &a->keepdim));
    if ((n = lt__sc_get(body, "shape"))) {
        LT_TRY(int_list(n, "op: shape", -1, INT64_MAX, LT_MAX_DIMS, a->shape, &cnt));
        a->shape_ndim = cnt;
    }
    if ((n = lt__sc_get(body, "split_size")))
        LT_TRY(lt__sc_i64(n, "op: split_size", 1, INT64_MAX, &a->split_size));
    if ((n = lt__sc_get(body, "sizes"))) {
        LT_TRY(int_list(n, "op: sizes", 0, INT64_MAX, LT_OP_MAX_OUTPUTS, a->sizes, &cnt));
        a->nsizes = cnt;
    }
    if ((n = lt__sc_get(body, "chunks")))
        LT_TRY(lt__sc_int(n, "op: chunks", 1, LT_OP_MAX_OUTPUTS, &a->chunks));
    return LT_OK;
}

/* The numbers an op takes: scalar (or p), seed, alpha and beta (either
 * sets both, the other 1), dtype. A local_op's scalar and seed are
 * expressions (per rank). */
static lt_status op_numbers(sc_parse_ctx *pc, const sc_node *body, int local, op_data *d) {
    lt_op_args *a = d->args;
    const sc_node *n;
    if (local && ((n = lt__sc_get(body, "scalar")) || (n = lt__sc_get(body, "p"))))
        LT_TRY(lt__sc_expr_parse_pc(pc, n, 0, "local_op: scalar", &d->scalar_e));
    else if ((n = lt__sc_get(body, "scalar"))) LT_TRY(lt__sc_f64(n, "op: scalar", &a->scalar));
    else if ((n = lt__sc_get(body, "p"))) LT_TRY(lt__sc_f64(n, "op: p", &a->scalar));
    if (local && (n = lt__sc_get(body, "seed"))) {
        LT_TRY(lt__sc_expr_parse_pc(pc, n, 0, "local_op: seed", &d->seed_e));
    } else if ((n = lt__sc_get(body, "seed"))) {
        int64_t sd;
        LT_TRY(lt__sc_i64(n, "op: seed", 0, INT64_MAX, &sd));
        a->seed = (uint64_t)sd;
    }
    if ((n = lt__sc_get(body, "alpha"))) {
        LT_TRY(lt__sc_f64(n, "op: alpha", &a->alpha));
        a->scale_set = 1;
    }
    if ((n = lt__sc_get(body, "beta"))) {
        LT_TRY(lt__sc_f64(n, "op: beta", &a->beta));
        a->scale_set = 1;
    }
    if (a->scale_set && !lt__sc_get(body, "alpha")) a->alpha = 1;
    if (a->scale_set && !lt__sc_get(body, "beta")) a->beta = 1;
    a->dtype = LT_F32;
    if ((n = lt__sc_get(body, "dtype"))) LT_TRY(lt__sc_dtype(n, "op: dtype", &a->dtype));
    return LT_OK;
}

/* A creation op (s: its name; no inputs) needs a shape of known sizes
 * whose element count fits, and placements (a local_op's: Replicate). */
static lt_status op_creation(const sc_node *body, const char *s, int local, lt_op_args *a) {
    if (local) {
        a->np = 1;
        a->placements[0] = lt_replicate();
        if (!lt__sc_get(body, "shape"))
            return lt__sc_err(body, LT_INVALID, "local_op: %s needs 'shape'", s);
    }
    const sc_node *n = lt__sc_get(body, "shape");
    if (!n || !a->np)
        return lt__sc_err(body, LT_INVALID, "op: %s needs 'shape' and 'placements'", s);
    for (int i = 0; i < a->shape_ndim; i++)
        if (a->shape[i] < 0)
            return lt__sc_err(n->kind == SC_SEQ ? n->kids[i] : n, LT_INVALID,
                              "op: shape: %s needs every size (no -1)", s);
    int64_t numel;
    if (!lt__numel_checked(a->shape_ndim, a->shape, lt_dtype_size(a->dtype), &numel)) return LT_OK;
    char m[256];
    snprintf(m, sizeof m, "%s", lt_errmsg());
    return lt__sc_err(n, LT_OVERFLOW, "op: shape: %s", m);
}

static lt_status parse_op_common(sc_parse_ctx *pc, const sc_node *body, sc_step *st, int local) {
    static const char *const keys[] = {"op",
                                       "inputs",
                                       "as",
                                       "dim",
                                       "dim2",
                                       "dims",
                                       "keepdim",
                                       "shape",
                                       "split_size",
                                       "sizes",
                                       "chunks",
                                       "scalar",
                                       "p",
                                       "seed",
                                       "alpha",
                                       "beta",
                                       "dtype",
                                       "placements",
                                       "expect_placements",
                                       "reference",
                                       "rtol",
                                       "atol",
                                       NULL};
    static const char *const local_keys[] = {
        "op",    "inputs", "as",     "dim", "dim2", "dims",  "keepdim", "shape", "split_size",
        "sizes", "chunks", "scalar", "p",   "seed", "alpha", "beta",    "dtype", NULL};
    const char *what = local ? "local_op" : "op";
    int kind = local ? SC_LOCAL : SC_DTENSOR;
    const sc_node *n;
    const char *s;
    LT_TRY(lt__sc_keys(body, what, local ? local_keys : keys));
    LT__SC_NEW_DATA(op_data, d);
    d->args = lt__sc_alloc(pc->arena, sizeof *d->args);
    if (!d->args) return LT_NOMEM;
    lt_op_args *a = d->args;
    LT_TRY(lt__sc_need(body, "op", "op", &n));
    LT_TRY(lt__sc_str(n, "op: op", &s));
    lt_status e = lt_op_parse(s, &d->op);
    if (e) return lt__sc_err_at(n, e);
    int ar = lt_op_arity(d->op);
    LT_TRY(names(pc, body, what, "inputs", kind, 0, LT_OP_MAX_INPUTS, &d->in, &d->nin));
    if ((ar >= 0 && d->nin != ar) || (ar < 0 && d->nin < 1))
        return lt__sc_err(body, LT_INVALID, "op: %s takes %s%d input%s under 'inputs', got %d", s,
                          ar < 0 ? "at least " : "", ar < 0 ? 1 : ar, ar == 1 ? "" : "s", d->nin);
    LT_TRY(op_dims(body, a));
    LT_TRY(op_numbers(pc, body, local, d));
    if ((n = lt__sc_get(body, "placements"))) {
        lt_placement *pl;
        LT_TRY(lt__sc_placements_new(pc->arena, n, "op: placements", &pl, &a->np));
        if (a->np > LT_MESH_MAX_DIMS) return lt__sc_err(n, LT_INVALID, "op: too many placements");
        memcpy(a->placements, pl, sizeof(lt_placement) * (size_t)a->np);
    }
    if (ar == 0) LT_TRY(op_creation(body, s, local, a));
    if ((n = lt__sc_get(body, "expect_placements")))
        LT_TRY(
            lt__sc_placements_new(pc->arena, n, "op: expect_placements", &d->want_pl, &d->want_np));
    d->reference = 1;
    if ((n = lt__sc_get(body, "reference"))) LT_TRY(lt__sc_bool(n, "op: reference", &d->reference));
    LT_TRY(parse_tol(body, "op", &d->has_tol, &d->rtol, &d->atol));
    if (!lt__sc_get(body, "as")) return lt__sc_err(body, LT_INVALID, "%s: missing key 'as'", what);
    return names(pc, body, what, "as", kind, 1, LT_OP_MAX_OUTPUTS, &d->as, &d->nout);
}

lt_status lt__sc_parse_op(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    return parse_op_common(pc, body, st, 0);
}

lt_status lt__sc_parse_local_op(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    return parse_op_common(pc, body, st, 1);
}

/* local_op on one rank's inputs sh[nin] (borrowed; env: the rank's
 * expression environment, rc: the values numel/shape/rows read, NULL for
 * none): its outputs into outs[nout] (caller frees). The
 * op runs on a one-rank mesh, all replicated: the same kernels and argument
 * checks as `op`. */
static lt_status local_op_one(const op_data *d, const lt_tensor *const *sh, const sc_env *env,
                              sc_run_ctx *rc, lt_tensor **outs) {
    lt_mesh one;
    lt_placement rep = lt_replicate();
    lt_status s = lt_mesh_parse("1", &one);
    lt_dtensor *in[LT_OP_MAX_INPUTS] = {0}, *out[LT_OP_MAX_OUTPUTS] = {0};
    int nout = 0;
    for (int k = 0; k < d->nin && !s; k++) {
        if (sh[k]->placeholder)
            s = lt__err(LT_INVALID,
                        "input '%s' holds no value on this rank (a placeholder: the rank skipped "
                        "the step that made it, or is not the root of a gather/reduce)",
                        d->in[k]);
        else s = lt_distribute(&one, sh[k], &rep, 1, &in[k]);
    }
    lt_op_args a = *d->args;
    a.mesh = &one;
    if (!s && d->scalar_e) s = lt__sc_expr_eval_rc(d->scalar_e, env, rc, &a.scalar);
    if (!s && d->seed_e) {
        int64_t sd;
        s = lt__sc_expr_int_rc(d->seed_e, env, rc, "seed", 0, INT64_MAX / 2, &sd);
        a.seed = (uint64_t)sd;
    }
    if (!s)
        s = lt_op(d->op, (const lt_dtensor *const *)in, d->nin, &a, NULL, out, LT_OP_MAX_OUTPUTS,
                  &nout);
    if (!s && nout != d->nout)
        s = lt__err(LT_INVALID, "%s gives %d output(s) for this input but 'as' names %d (%s)",
                    lt_op_name(d->op), nout, d->nout, SHORT_SPLIT);
    for (int j = 0; j < d->nout && !s; j++) s = lt_clone(out[j]->local->shards[0], &outs[j]);
    for (int k = 0; k < d->nin; k++) lt_dtensor_free(in[k]);
    for (int j = 0; j < nout; j++) lt_dtensor_free(out[j]);
    if (s)
        for (int j = 0; j < d->nout; j++) {
            lt_tensor_free(outs[j]);
            outs[j] = NULL;
        }
    return s;
}

/* The single-device program's local_op (docs/SEMANTICS.md §11.8): the op on
 * the inputs' single-device values, for the comparison's recorder. */
static lt_status local_op_reference(sc_run_ctx *rc, const sc_step *st) {
    const op_data *d = st->data;
    if (!lt__sc_diverge_on(rc)) return LT_OK;
    const lt_tensor *ref[LT_OP_MAX_INPUTS];
    lt_tensor *outs[LT_OP_MAX_OUTPUTS] = {0};
    int have = 1;
    for (int k = 0; k < d->nin; k++) have &= (ref[k] = lt__sc_diverge_ref(rc, d->in[k])) != NULL;
    sc_env env;
    lt__sc_diverge_env(rc, &env);
    char err[256] = "";
    lt_status rs = have ? local_op_one(d, ref, &env, rc, outs) : LT_OK;
    if (rs == LT_NOMEM) return rs;
    if (rs) {
        snprintf(err, sizeof err, "%s", lt_errmsg());
        lt__err_clear();
    }
    /* a local sum or matmul sums terms in another order than one device: the tolerance's L and M */
    lt_tensor *mag[LT_OP_MAX_OUTPUTS] = {0};
    int nmag = 0;
    int64_t len = 1;
    if (have && !err[0]) {
        lt_op_args a = *d->args;
        lt_mesh one;
        lt_mesh_parse("1", &one);
        a.mesh = &one;
        lt_status ms =
            lt__sc_diverge_mag(d->op, ref, d->nin, &a, mag, LT_OP_MAX_OUTPUTS, &nmag, &len);
        if (ms == LT_NOMEM) {
            for (int j = 0; j < d->nout; j++) lt_tensor_free(outs[j]);
            return ms;
        }
        if (ms) nmag = 0, len = 1, lt__err_clear();   /* the op ran on these inputs: not expected */
    }
    return lt__sc_diverge_local_op(rc, st, d->op, d->args, d->in, d->nin, d->as, d->nout,
                                   have && !err[0] ? outs : NULL, nmag ? mag : NULL, len,
                                   err[0] ? err : NULL);
}

/* local_op: on every rank that runs the step, the op on that rank's own
 * shards, as if they were whole tensors; no sharding propagation and no
 * communication; shapes may differ by rank. */
lt_status lt__sc_run_local_op(sc_run_ctx *rc, const sc_step *st) {
    const op_data *d = st->data;
    const char *name = lt_op_name(d->op);
    const lt_mesh *mesh = rc->c->mesh;
    int W = mesh->world;
    lt_status s = LT_OK;
    lt_local *outs[LT_OP_MAX_OUTPUTS] = {0};
    for (int j = 0; j < d->nout && !s; j++) s = lt_local_new(mesh, &outs[j]);
    for (int r = 0; r < W && !s; r++) {
        if (!lt__sc_rank_runs(rc, st, r)) continue;
        const lt_tensor *sh[LT_OP_MAX_INPUTS];
        lt_tensor *o[LT_OP_MAX_OUTPUTS] = {0};
        for (int k = 0; k < d->nin; k++) sh[k] = lt__sc_value(rc, d->in[k])->local->shards[r];
        sc_env env;
        lt__sc_env_rank(mesh, r, &env);
        s = local_op_one(d, sh, &env, rc, o);
        for (int j = 0; j < d->nout && !s; j++) outs[j]->shards[r] = o[j];
        if (s) {
            int c[LT_MESH_MAX_DIMS];
            int64_t c64[LT_MESH_MAX_DIMS];
            char cs[96];
            lt_mesh_coord(mesh, r, c);
            for (int i = 0; i < mesh->ndim; i++) c64[i] = c[i];
            rc->failed_rank = r;
            s = lt__err_ctx_in(s, "local_op", " %s: rank %d (coord %s)", name,
                               lt_mesh_rank_id(mesh, r),
                               lt__sc_fmt_index(mesh->ndim, c64, cs, sizeof cs));
        }
    }
    for (int j = 0; j < d->nout && !s; j++)
        for (int r = 0; r < W && !s; r++)
            if (!outs[j]->shards[r]) {
                const lt_tensor *like =
                    d->nin ? lt__sc_value(rc, d->in[0])->local->shards[r] : NULL;
                s = lt__sc_skipped_shard(rc, d->as[j], r, like, &outs[j]->shards[r]);
            }
    char where[160], origin[256];
    pos_str(st, where, sizeof where);
    snprintf(origin, sizeof origin, "local_op %s at %s", name, where);
    for (int j = 0; j < d->nout; j++) {
        if (!s) s = lt__sc_put_local(rc, d->as[j], outs[j], origin);
        else lt_local_free(outs[j]);
        outs[j] = NULL;
    }
    return s ? s : local_op_reference(rc, st);
}

lt_status lt__sc_run_op(sc_run_ctx *rc, const sc_step *st) {
    const op_data *d = st->data;
    const char *name = lt_op_name(d->op);
    const lt_dtensor *in[LT_OP_MAX_INPUTS];
    lt_dtensor *out[LT_OP_MAX_OUTPUTS] = {0};
    for (int k = 0; k < d->nin; k++) in[k] = lt__sc_value(rc, d->in[k])->dt;
    d->args->mesh = rc->c->mesh;
    lt_redistribute_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.comm = rc->comm;
    lt_op_plan *plan = NULL;
    lt_op_opts o;
    memset(&o, 0, sizeof o);
    o.redist = &ro;
    o.plan = &plan;
    o.rules = rc->c->rules;
    int nout = 0;
    lt_status s = lt_op(d->op, in, d->nin, d->args, &o, out, LT_OP_MAX_OUTPUTS, &nout);
    if (s) return lt__err_ctx_in(s, "op", " %s", name);
    char where[160], origin[512];
    pos_str(st, where, sizeof where);
    snprintf(origin, sizeof origin, "op %s at %s (%.250s)", name, where, plan->why);
    lt__sc_trace_op(rc, d->op, d->in, in, d->nin, plan);
    lt_op_plan_free(plan);
    if (nout != d->nout) {
        for (int j = 0; j < nout; j++) lt_dtensor_free(out[j]);
        return lt__err_in(LT_INVALID, "op",
                          ": %s gives %d output(s) for this input but 'as' names %d (%s)", name,
                          nout, d->nout, SHORT_SPLIT);
    }
    if (d->reference || d->want_pl) rc->did_check = 1;
    lt_status chk = LT_OK;
    if (d->want_pl) {
        char got[256], want[256];
        lt_placements_format(out[0]->placements, rc->c->mesh->ndim, got, sizeof got);
        lt_placements_format(d->want_pl, d->want_np, want, sizeof want);
        lt_placement norm[LT_MESH_MAX_DIMS];
        s = lt_placements_check(rc->c->mesh, out[0]->ndim, d->want_pl, d->want_np, norm);
        if (s || !lt_placements_equal(norm, out[0]->placements, rc->c->mesh->ndim))
            chk =
                lt__sc_check_fail(rc, st, -1, NULL, want, got, origin,
                                  "op %s: output placements are %s, expected %s", name, got, want);
    }
    if (d->reference) {
        double rt = d->has_tol ? d->rtol : 0, at = d->has_tol ? d->atol : 0;
        if (d->has_tol && rt == 0 && at == 0) at = 1e-300; /* exact, not "defaults" */
        s = lt_op_check_reference(d->op, in, d->nin, d->args, out, nout, rt, at);
        if (s == LT_MISMATCH) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s", lt_errmsg());
            chk = lt__sc_check_fail(rc, st, -1, NULL, NULL, NULL, origin, "%s", msg);
        } else if (s) {
            for (int j = 0; j < nout; j++) lt_dtensor_free(out[j]);
            return lt__err_ctx_in(s, "op", " %s: reference run", name);
        }
    }
    for (int j = 0; j < nout; j++) {
        s = lt__sc_put_dtensor(rc, d->as[j], out[j], origin);
        out[j] = NULL;
        if (s) {
            for (int k = j + 1; k < nout; k++) lt_dtensor_free(out[k]);
            return s;
        }
    }
    s = lt__sc_diverge_op(rc, st, d->op, d->in, d->nin, d->args, d->as, nout);
    return s ? s : chk;
}

/* ---- tp_mlp -------------------------------------------------------------------------------- */

typedef struct {
    const char *x, *w1, *b1, *w2, *b2, *as;
    lt_tp_mlp_cfg cfg;
    int has_tol;
    double rtol, atol;
} tp_data;

lt_status lt__sc_parse_tp_mlp(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"x", "w1", "b1", "w2", "b2", "styles", "sequence_parallel",
                                       "activation", "tp_dim", "as", "rtol", "atol", NULL};
    const sc_node *n;
    const char *s;
    LT_TRY(lt__sc_keys(body, "tp_mlp", keys));
    LT__SC_NEW_DATA(tp_data, d);
    LT_TRY(lt__sc_use(pc, body, "tp_mlp", "x", SC_FULL, &d->x));
    LT_TRY(lt__sc_use(pc, body, "tp_mlp", "w1", SC_FULL, &d->w1));
    LT_TRY(lt__sc_use(pc, body, "tp_mlp", "b1", SC_FULL, &d->b1));
    LT_TRY(lt__sc_use(pc, body, "tp_mlp", "w2", SC_FULL, &d->w2));
    LT_TRY(lt__sc_use(pc, body, "tp_mlp", "b2", SC_FULL, &d->b2));
    d->cfg.style1 = LT_TP_COLWISE, d->cfg.style2 = LT_TP_ROWWISE, d->cfg.act = LT_UNARY_GELU;
    if ((n = lt__sc_get(body, "styles"))) {
        if (n->kind != SC_SEQ || n->n != 2)
            return lt__sc_err(
                n, LT_INVALID,
                "tp_mlp: styles is a list of two (one per Linear), e.g. [colwise, rowwise]");
        for (int i = 0; i < 2; i++) {
            LT_TRY(lt__sc_str(n->kids[i], "tp_mlp: styles", &s));
            lt_status e = lt_tp_style_parse(s, i ? &d->cfg.style2 : &d->cfg.style1);
            if (e) return lt__sc_err_at(n->kids[i], e);
        }
    }
    if ((n = lt__sc_get(body, "sequence_parallel")))
        LT_TRY(lt__sc_bool(n, "tp_mlp: sequence_parallel", &d->cfg.sequence_parallel));
    if ((n = lt__sc_get(body, "activation"))) {
        LT_TRY(lt__sc_str(n, "tp_mlp: activation", &s));
        int found = 0;
        for (int u = 0; u < LT_UNARY_COUNT && !found; u++)
            if (!strcmp(s, lt_unary_name((lt_unary_op)u))) d->cfg.act = (lt_unary_op)u, found = 1;
        if (!found)
            return lt__sc_err(n, LT_INVALID,
                              "tp_mlp: unknown activation '%s' (e.g. gelu, relu, tanh)", s);
    }
    if ((n = lt__sc_get(body, "tp_dim")))
        LT_TRY(lt__sc_int(n, "tp_mlp: tp_dim", 0, pc->mesh->ndim - 1, &d->cfg.tp_dim));
    LT_TRY(parse_tol(body, "tp_mlp", &d->has_tol, &d->rtol, &d->atol));
    return lt__sc_define(pc, body, "tp_mlp", SC_DTENSOR, &d->as);
}

lt_status lt__sc_run_tp_mlp(sc_run_ctx *rc, const sc_step *st) {
    const tp_data *d = st->data;
    lt_redistribute_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.comm = rc->comm;
    lt_dtensor *y = NULL;
    lt_tensor *ref = NULL, *got = NULL;
    lt_status s = lt_tp_mlp(rc->c->mesh, &d->cfg, lt__sc_value(rc, d->x)->full,
                            lt__sc_value(rc, d->w1)->full, lt__sc_value(rc, d->b1)->full,
                            lt__sc_value(rc, d->w2)->full, lt__sc_value(rc, d->b2)->full, &ro, &y);
    if (s) return s;
    s = lt_mlp_dense(lt__sc_value(rc, d->x)->full, lt__sc_value(rc, d->w1)->full,
                     lt__sc_value(rc, d->b1)->full, lt__sc_value(rc, d->w2)->full,
                     lt__sc_value(rc, d->b2)->full, d->cfg.act, &ref);
    if (!s) s = lt_full_tensor_direct(y, &got);
    lt_status chk = LT_OK;
    char where[160], origin[256];
    pos_str(st, where, sizeof where);
    snprintf(origin, sizeof origin, "tp_mlp at %s (%s, %s%s)", where,
             lt_tp_style_name(d->cfg.style1), lt_tp_style_name(d->cfg.style2),
             d->cfg.sequence_parallel ? ", sequence parallel" : "");
    if (!s) {
        double rt, at;
        lt_dtype_default_tol(got->dtype, &rt, &at);
        if (d->has_tol) rt = d->rtol, at = d->atol;
        lt_compare_result cr;
        rc->did_check = 1;
        s = lt_compare(got, ref, rt, at, &cr);
        if (!s && !cr.equal) {
            char idx[96], e[48], a[48];
            lt__sc_fmt_index(got->ndim, cr.first_idx, idx, sizeof idx);
            lt__sc_fmt_num(cr.expected, e, sizeof e);
            lt__sc_fmt_num(cr.actual, a, sizeof a);
            chk = lt__sc_check_fail(rc, st, -1, idx, e, a, origin,
                                    "tp_mlp differs from the single-device MLP at %s: expected %s, "
                                    "got %s (%lld elements differ)",
                                    idx, e, a, (long long)cr.ndiff);
        }
    }
    lt_tensor_free(ref);
    lt_tensor_free(got);
    if (s) {
        lt_dtensor_free(y);
        return s;
    }
    s = lt__sc_put_dtensor(rc, d->as, y, origin);
    return s ? s : chk;
}

/* ---- rank_map, expect_replicas --------------------------------------------------------------- */

typedef struct {
    const char *tensor, *as;
    lt_rank_fn_kind fn;
    int64_t *ints;                /* (world) expected per-rank ints, or NULL */
} rank_map_data;

lt_status lt__sc_parse_rank_map(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"tensor", "fn", "as", "ints", NULL};
    const sc_node *n;
    const char *s;
    LT_TRY(lt__sc_keys(body, "rank_map", keys));
    LT__SC_NEW_DATA(rank_map_data, d);
    LT_TRY(lt__sc_use(pc, body, "rank_map", "tensor", SC_DTENSOR, &d->tensor));
    LT_TRY(lt__sc_need(body, "rank_map", "fn", &n));
    LT_TRY(lt__sc_str(n, "rank_map: fn", &s));
    lt_status e = lt_rank_fn_parse(s, &d->fn);
    if (e) return lt__sc_err_at(n, e);
    if ((n = lt__sc_get(body, "ints"))) {
        int W = pc->mesh->world, cnt;
        d->ints = lt__sc_alloc(pc->arena, sizeof(int64_t) * (size_t)W);
        if (!d->ints) return LT_NOMEM;
        if (n->kind != SC_SEQ || n->n != W)
            return lt__sc_err(n, LT_INVALID, "rank_map: ints lists one integer per rank (%d ranks)",
                              W);
        LT_TRY(int_list(n, "rank_map: ints", INT64_MIN, INT64_MAX, W, d->ints, &cnt));
    }
    return lt__sc_define(pc, body, "rank_map", SC_DTENSOR, &d->as);
}

lt_status lt__sc_run_rank_map(sc_run_ctx *rc, const sc_step *st) {
    const rank_map_data *d = st->data;
    lt_dtensor *y = NULL;
    lt_localint li = {0, NULL};
    lt_status s = lt_dtensor_rank_map(lt__sc_value(rc, d->tensor)->dt, d->fn, &y, &li);
    if (s) return s;
    char where[160], origin[256];
    pos_str(st, where, sizeof where);
    snprintf(origin, sizeof origin, "rank_map %s at %s", lt_rank_fn_name(d->fn), where);
    lt_status chk = LT_OK;
    if (d->ints) {
        rc->did_check = 1;
        for (int r = 0; r < li.world && !chk; r++)
            if (li.v[r] != d->ints[r]) {
                char e[32], a[32];
                snprintf(e, sizeof e, "%lld", (long long)d->ints[r]);
                snprintf(a, sizeof a, "%lld", (long long)li.v[r]);
                chk = lt__sc_check_fail(rc, st, r, NULL, e, a, origin,
                                        "rank_map %s: rank %d's int is %s, expected %s",
                                        lt_rank_fn_name(d->fn), r, a, e);
            }
    }
    lt_localint_free(&li);
    s = lt__sc_put_dtensor(rc, d->as, y, origin);
    if (!s) s = lt__sc_diverge_same(rc, st, "rank_map", d->tensor, d->as);
    return s ? s : chk;
}

typedef struct {
    const char *tensor;
    int diverged;                 /* expect a divergence */
    const char *contains;         /* substring of its message, or NULL */
} replicas_data;

lt_status lt__sc_parse_expect_replicas(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"tensor", "diverged", "contains", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "expect_replicas", keys));
    LT__SC_NEW_DATA(replicas_data, d);
    LT_TRY(lt__sc_use(pc, body, "expect_replicas", "tensor", SC_DTENSOR, &d->tensor));
    if ((n = lt__sc_get(body, "diverged")))
        LT_TRY(lt__sc_bool(n, "expect_replicas: diverged", &d->diverged));
    if ((n = lt__sc_get(body, "contains"))) {
        LT_TRY(lt__sc_str(n, "expect_replicas: contains", &d->contains));
        d->diverged = 1;
    }
    return LT_OK;
}

lt_status lt__sc_run_expect_replicas(sc_run_ctx *rc, const sc_step *st) {
    const replicas_data *d = st->data;
    sc_value *v = lt__sc_value(rc, d->tensor);
    lt_status s = lt_dtensor_check_replicas(v->dt);   /* names each mesh dim as the mesh does */
    if (s && s != LT_MISMATCH) return s;
    char msg[600];
    snprintf(msg, sizeof msg, "%s", s ? lt_errmsg() : "");
    if (!d->diverged && s)
        return lt__sc_check_fail(rc, st, -1, NULL, "equal replicas", "diverged", lt__sc_origin(v),
                                 "replicas of '%s' diverged: %s", d->tensor, msg);
    if (d->diverged && !s)
        return lt__sc_check_fail(rc, st, -1, NULL, "diverged replicas", "equal", lt__sc_origin(v),
                                 "replicas of '%s' agree, but a divergence was expected",
                                 d->tensor);
    if (d->contains && !strstr(msg, d->contains))
        return lt__sc_check_fail(
            rc, st, -1, NULL, d->contains, msg, lt__sc_origin(v),
            "replicas of '%s' diverged with \"%s\", which does not contain \"%s\"", d->tensor, msg,
            d->contains);
    return LT_OK;
}
