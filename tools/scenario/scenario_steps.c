/* tools/scenario/scenario_steps.c — the steps that make values: distribute,
 * from_local, redistribute, full_tensor, collective, show, mark_comm.
 *
 * Each step is a parse function (load time: keys, types, names; the body is
 * kept in the file's arena) and a run function (run time: calls the
 * library; errors carry the step's context and the runner adds file:line:col).
 */
#include "kernels/alloc.h"
#include <stdlib.h>
#include <string.h>

#include "tools/render/render.h"
#include "collectives_sim/engine_impl.h"
#include "tools/scenario/scenario_impl.h"
#include "kernels/status_impl.h"
#include "localtensor/plan/plan_impl.h"

static char *fmt_pl(const lt_placement *pl, int np, char *buf, size_t n) {
    lt_placements_format(pl, np, buf, n);
    return buf;
}

static char *pos_str(const sc_step *st, char *buf, size_t n) {
    snprintf(buf, n, "%s:%d:%d", st->pos.file, st->pos.line, st->pos.col);
    return buf;
}

/* ---- distribute ------------------------------------------------------------------ */

typedef struct {
    const char *tensor, *as;
    lt_placement *pl;               /* (np) */
    int np;
} distribute_data;

lt_status lt__sc_parse_distribute(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"tensor", "placements", "as", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "distribute", keys));
    LT__SC_NEW_DATA(distribute_data, d);
    LT_TRY(lt__sc_use(pc, body, "distribute", "tensor", SC_FULL | SC_DTENSOR, &d->tensor));
    LT_TRY(lt__sc_need(body, "distribute", "placements", &n));
    LT_TRY(lt__sc_placements_new(pc->arena, n, "distribute: placements", &d->pl, &d->np));
    return lt__sc_define(pc, body, "distribute", SC_DTENSOR, &d->as);
}

/* s with the distribute's context (its placements spelled only now: the
 * step runs in every case of a sweep). */
static lt_status distribute_err(lt_status s, const distribute_data *d) {
    char pls[256];
    fmt_pl(d->pl, d->np, pls, sizeof pls);
    return lt__err_ctx_in(s, "distribute", " of '%s' with %s", d->tensor, pls);
}

lt_status lt__sc_run_distribute(sc_run_ctx *rc, const sc_step *st) {
    const distribute_data *d = st->data;
    sc_value *v = lt__sc_value(rc, d->tensor);
    lt_dtensor *dt = NULL;
    lt_status s;
    if (rc->nranks >= 0 && v->kind == SC_FULL) { /* numerics sample/none */
        s = lt__sc_sampled_distribute(rc, d->tensor, d->pl, d->np, d->as);
        return s ? distribute_err(s, d) : LT_OK;
    }
    if (v->kind == SC_DTENSOR) {
        /* PyTorch: distributing a DTensor keeps it only when nothing changes */
        lt_placement norm[LT_MESH_MAX_DIMS];
        s = lt_placements_check(rc->c->mesh, v->dt->ndim, d->pl, d->np, norm);
        if (!s && !lt_placements_equal(norm, v->dt->placements, d->np)) {
            char cur[256], pls[256];
            fmt_pl(v->dt->placements, rc->c->mesh->ndim, cur, sizeof cur);
            fmt_pl(d->pl, d->np, pls, sizeof pls);
            s = lt__err(LT_INVALID,
                        "'%s' is already a DTensor with placements %s; distribute cannot change "
                        "them to %s (use redistribute)",
                        d->tensor, cur, pls);
        }
        if (!s) s = lt_dtensor_clone(v->dt, &dt);
        if (!s && v->sampled) return lt__sc_sampled_put(rc, d->as, dt, &v->gen, NULL);
    } else {
        s = lt_distribute(rc->c->mesh, v->full, d->pl, d->np, &dt);
    }
    if (s) return distribute_err(s, d);
    s = lt__sc_put_dtensor(rc, d->as, dt, NULL);
    return s ? s : lt__sc_diverge_distribute(rc, st, d->as);
}

/* ---- per-rank literals (from_local) ------------------------------------------------ */

typedef struct {
    int ndim;
    int64_t shape[LT_MAX_DIMS];
    const double *v;
    int64_t n;
} shard_lit;

/* Values of one rank with an optional explicit shape. */
static lt_status rank_literal(sc_parse_ctx *pc, const sc_node *vals, const sc_node *shape,
                              const char *what, shard_lit *out) {
    sc_literal lit;
    LT_TRY(lt__sc_literal(pc->arena, vals, what, &lit));
    out->v = lit.v;
    out->n = lit.n;
    out->ndim = lit.ndim;
    memcpy(out->shape, lit.shape, sizeof lit.shape);
    if (!shape) return LT_OK;
    int nd;
    int64_t sh[LT_MAX_DIMS], numel;
    LT_TRY(lt__sc_shape(shape, what, &nd, sh));
    LT_TRY(lt__numel_checked(nd, sh, 8, &numel));
    int same = nd == lit.ndim;
    for (int i = 0; same && i < nd; i++) same = sh[i] == lit.shape[i];
    if (!same && !(lit.ndim <= 1 && lit.n == numel)) {
        char a[96], b[96];
        return lt__sc_err(vals, LT_SHAPE,
                          "%s: %lld values of shape %s do not fill shape %s (%lld elements)", what,
                          (long long)lit.n, lt_shape_format(lit.ndim, lit.shape, a, sizeof a),
                          lt_shape_format(nd, sh, b, sizeof b), (long long)numel);
    }
    out->ndim = nd;
    memcpy(out->shape, sh, sizeof sh);
    return LT_OK;
}

/* ---- from_local -------------------------------------------------------------------- */

typedef struct {
    const char *as;
    const char *local;             /* tensor: a LocalTensor, or NULL (literals in shards) */
    shard_lit *shards;             /* (world) */
    lt_dtype dtype;
    lt_placement *pl;               /* (np) */
    int np;
    int check;                     /* check: / run_check: (default 1) */
    int has_shape, has_stride;
    int gndim, sndim;
    int64_t gshape[LT_MAX_DIMS], gstride[LT_MAX_DIMS];
} from_local_data;

/* check: (default true) or run_check:, its PyTorch spelling; both given is
 * an error at the second. */
static lt_status parse_check(const sc_node *body, int *check) {
    const sc_node *key = NULL, *val = NULL;
    *check = 1;
    for (int i = 0; i < body->n; i++) {
        const sc_node *k = body->kids[2 * i];
        if (strcmp(k->str, "check") && strcmp(k->str, "run_check")) continue;
        if (key)
            return lt__sc_err(k, LT_INVALID,
                              "from_local: give either check: or run_check: (two spellings of one "
                              "key), not both");
        key = k;
        val = body->kids[2 * i + 1];
    }
    if (!key) return LT_OK;
    char what[40];
    snprintf(what, sizeof what, "from_local: %s", key->str);
    return lt__sc_bool(val, what, check);
}

lt_status lt__sc_parse_from_local(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"ranks",  "tensor", "shapes",    "placements",
                                       "dtype",  "check",  "run_check", "shape",
                                       "stride", "as",     NULL};
    const sc_node *n, **vals, **shapes = NULL;
    LT_TRY(lt__sc_keys(body, "from_local", keys));
    LT__SC_NEW_DATA(from_local_data, d);
    if (lt__sc_get(body, "tensor")) {
        /* the shards of a LocalTensor (a per-rank program's value) */
        if ((n = lt__sc_get(body, "ranks")) || (n = lt__sc_get(body, "shapes")) ||
            (n = lt__sc_get(body, "dtype")))
            return lt__sc_err(
                n, LT_INVALID,
                "from_local: give either tensor: (a LocalTensor) or ranks: (literals), not both; "
                "the LocalTensor brings its own values, shapes and dtype");
        LT_TRY(lt__sc_use(pc, body, "from_local", "tensor", SC_LOCAL, &d->local));
        LT_TRY(lt__sc_need(body, "from_local", "placements", &n));
        LT_TRY(lt__sc_placements_new(pc->arena, n, "from_local: placements", &d->pl, &d->np));
    } else {
    LT_TRY(lt__sc_need(body, "from_local", "ranks", &n));
    LT_TRY(lt__sc_per_rank(pc, n, "from_local: ranks", 1, &vals));
    if ((n = lt__sc_get(body, "shapes")))
        LT_TRY(lt__sc_per_rank(pc, n, "from_local: shapes", 0, &shapes));
    d->shards = lt__sc_alloc(pc->arena, sizeof *d->shards * (size_t)pc->mesh->world);
    if (!d->shards) return LT_NOMEM;
    for (int r = 0; r < pc->mesh->world; r++) {
        char what[64];
        snprintf(what, sizeof what, "from_local: rank %d", r);
        LT_TRY(rank_literal(pc, vals[r], shapes ? shapes[r] : NULL, what, &d->shards[r]));
    }
    LT_TRY(lt__sc_need(body, "from_local", "placements", &n));
    LT_TRY(lt__sc_placements_new(pc->arena, n, "from_local: placements", &d->pl, &d->np));
    d->dtype = LT_F32;
    if ((n = lt__sc_get(body, "dtype"))) LT_TRY(lt__sc_dtype(n, "from_local: dtype", &d->dtype));

    for (int r = 0; r < pc->mesh->world; r++)   /* every value exactly as the dtype holds it */
        LT_TRY(lt__sc_values_fit(vals[r], d->dtype, "from_local: ranks"));
    }
    LT_TRY(parse_check(body, &d->check));
    if ((n = lt__sc_get(body, "shape"))) {
        d->has_shape = 1;
        LT_TRY(lt__sc_shape(n, "from_local: shape", &d->gndim, d->gshape));
    }
    if ((n = lt__sc_get(body, "stride"))) {
        d->has_stride = 1;
        if (n->kind != SC_SEQ || n->n > LT_MAX_DIMS)
            return lt__sc_err(n, LT_INVALID,
                              "from_local: stride: expected a list of at most %d integers",
                              LT_MAX_DIMS);
        d->sndim = n->n;
        for (int i = 0; i < n->n; i++)
            LT_TRY(lt__sc_i64(n->kids[i], "from_local: stride", 0, INT64_MAX, &d->gstride[i]));
    }
    return lt__sc_define(pc, body, "from_local", SC_DTENSOR, &d->as);
}

/* "dp" when the mesh names mesh dim i, else its number; returns buf. */
static const char *mesh_dim_str(const lt_mesh *m, int i, char *buf, size_t n) {
    if (m->names[i][0]) snprintf(buf, n, "%s", m->names[i]);
    else snprintf(buf, n, "%d", i);
    return buf;
}

/* A Shard declared with explicit sizes that the shards contradict
 * (lt_from_local takes the shards' sizes): a failed check naming the mesh
 * dim, the declared placement and the shards' one. */
static lt_status check_sizes(sc_run_ctx *rc, const sc_step *st, const from_local_data *d,
                             const lt_dtensor *dt) {
    const lt_mesh *m = rc->c->mesh;
    lt_placement norm[LT_MESH_MAX_DIMS];
    LT_TRY(lt_placements_check(m, dt->ndim, d->pl, d->np, norm));
    for (int i = 0; i < m->ndim; i++) {
        if (norm[i].kind != LT_PL_SHARD || norm[i].rule.kind != LT_SPLIT_EXPLICIT) continue;
        if (lt_placement_equal(&norm[i], &dt->placements[i])) continue;
        char md[LT_MESH_NAME_MAX + 8], want[LT_SPLIT_MAX_EXPLICIT * 22 + 32],
            got[LT_SPLIT_MAX_EXPLICIT * 22 + 32];
        lt_placement_format(&norm[i], want, sizeof want);
        lt_placement_format(&dt->placements[i], got, sizeof got);
        return lt__sc_check_fail(rc, st, -1, NULL, want, got, NULL,
                                 "from_local: shard sizes along mesh dim %s contradict the "
                                 "declared %s: the shards give %s "
                                 "(say check: false to take the shards' sizes)",
                                 mesh_dim_str(m, i, md, sizeof md), want, got);
    }
    return LT_OK;
}

/* The replicas of one group along R mesh dim i (grp: its k ranks): the first
 * held shard against each other held one (a rank whose shard is absent is
 * not compared). A failed check names the mesh dim, the rank pair, the first
 * differing index and both values. */
static lt_status check_group(sc_run_ctx *rc, const sc_step *st, const lt_dtensor *dt, int i,
                             const int *grp, int k) {
    const lt_tensor *a = NULL;
    int ra = -1;
    char md[LT_MESH_NAME_MAX + 8];
    mesh_dim_str(rc->c->mesh, i, md, sizeof md);
    for (int j = 0; j < k; j++) {
        const lt_tensor *b = lt_to_local(dt, grp[j]);
        if (!b) continue;
        if (!a) {
            a = b, ra = grp[j];
            continue;
        }
        char sa[96], sb[96];
        if (!lt_same_shape(a, b))   /* the layout gives replicas one shape: a guard */
            return lt__sc_check_fail(rc, st, grp[j], NULL,
                                     lt_shape_format(a->ndim, a->shape, sa, sizeof sa),
                                     lt_shape_format(b->ndim, b->shape, sb, sizeof sb), NULL,
                                     "from_local: replicas along mesh dim %s differ: ranks %d and "
                                     "%d hold shapes %s and %s "
                                     "(declared R; say check: false to skip this check)",
                                     md, ra, grp[j], sa, sb);
        lt_compare_result cr;
        LT_TRY(lt_compare(b, a, 0, 0, &cr));
        if (cr.equal) continue;
        char idx[160];
        lt__sc_fmt_index(a->ndim, cr.first_idx, idx, sizeof idx);
        lt__sc_fmt_num(cr.expected, sa, sizeof sa);
        lt__sc_fmt_num(cr.actual, sb, sizeof sb);
        return lt__sc_check_fail(rc, st, grp[j], idx, sa, sb, NULL,
                                 "from_local: replicas along mesh dim %s differ: ranks %d and %d "
                                 "at index %s: rank %d has %s, "
                                 "rank %d has %s (declared R; a missing all_reduce? say check: "
                                 "false to skip this check)",
                                 md, ra, grp[j], idx, ra, sa, grp[j], sb);
    }
    return LT_OK;
}

/* PyTorch's run_check (docs/SEMANTICS.md §11.2): explicit sizes the shards
 * contradict, then replicas along every R mesh dim, group by group. A
 * failure is a failed check (LT_MISMATCH, rc->failed_check); other errors
 * (memory) are errors. */
static lt_status check_from_local(sc_run_ctx *rc, const sc_step *st, const from_local_data *d,
                                  const lt_dtensor *dt) {
    const lt_mesh *m = rc->c->mesh;
    rc->did_check = 1;
    LT_TRY(check_sizes(rc, st, d, dt));
    int *grp = lt__malloc(sizeof(int) * (size_t)m->world);
    if (!grp) return lt__err(LT_NOMEM, "out of memory");
    lt_status s = LT_OK;
    for (int i = 0; i < m->ndim && !s; i++) {
        if (dt->placements[i].kind != LT_PL_REPLICATE || m->shape[i] == 1) continue;
        for (int g = 0; g < lt_mesh_ngroups(m, i) && !s; g++) {
            lt_mesh_group(m, i, g, grp);
            s = check_group(rc, st, dt, i, grp, m->shape[i]);
        }
    }
    lt__free(grp);
    return s;
}

lt_status lt__sc_run_from_local(sc_run_ctx *rc, const sc_step *st) {
    const from_local_data *d = st->data;
    const lt_mesh *mesh = rc->c->mesh;
    lt_tensor **shards = lt__calloc((size_t)mesh->world, sizeof *shards);
    if (!shards) return lt__err(LT_NOMEM, "out of memory");
    lt_status s = LT_OK;
    lt_dtensor *dt = NULL;
    if (d->has_shape != d->has_stride)
        s = lt__err_in(LT_INVALID, "from_local",
                       ": pass both shape and stride at the same time (or neither)");
    for (int r = 0; r < mesh->world && !s; r++) {
        if (d->local) {
            const lt_tensor *sh = lt__sc_value(rc, d->local)->local->shards[r];
            if (sh->placeholder)
                s = lt__err_in(LT_INVALID, "from_local",
                               ": rank %d holds no value of '%s' (a placeholder: it skipped the "
                               "step that made it)",
                               r, d->local);
            else s = lt_tensor_view(sh, &shards[r]);
            continue;
        }
        const shard_lit *l = &d->shards[r];
        s = lt_tensor_from_doubles(d->dtype, l->ndim, l->shape, l->v, l->n, &shards[r]);
        if (s) s = lt__err_ctx_in(s, "from_local", ": rank %d", r);
    }
    /* the step checks (check_from_local), as a check rather than an error */
    if (!s) s = lt_from_local(mesh, shards, d->pl, d->np, 0, &dt);
    for (int r = 0; r < mesh->world; r++) lt_tensor_free(shards[r]);
    lt__free(shards);
    if (!s && d->has_shape) {
        /* the given metadata must be what the shards imply (with or without check:) */
        int64_t cs[LT_MAX_DIMS];
        lt_contiguous_strides(dt->ndim, dt->shape, cs);
        int ok = d->gndim == dt->ndim && d->sndim == dt->ndim;
        for (int i = 0; ok && i < dt->ndim; i++)
            ok = d->gshape[i] == dt->shape[i] && d->gstride[i] == cs[i];
        if (!ok) {
            char a[96], b[96], c[96];
            s = lt__err_in(LT_SHAPE, "from_local",
                           ": shape %s / stride %s do not match the shards, which give shape %s "
                           "(contiguous stride)",
                           lt_shape_format(d->gndim, d->gshape, a, sizeof a),
                           lt_shape_format(d->sndim, d->gstride, b, sizeof b),
                           lt_shape_format(dt->ndim, dt->shape, c, sizeof c));
            lt_dtensor_free(dt);
        }
    }
    if (s) {
        if (strcmp(lt_errinfo()->subject, "from_local"))
            return lt__err_ctx_in(s, "from_local", "%s", "");
        return s;
    }
    /* a failed check keeps the DTensor the shards make under `as`: the case
     * goes on. --single-device leaves out the case's own checks, this one too */
    lt_status chk = d->check && !rc->c->single_device ? check_from_local(rc, st, d, dt) : LT_OK;
    if (chk && !rc->failed_check) {
        lt_dtensor_free(dt);
        return chk;
    }
    s = lt__sc_put_dtensor(rc, d->as, dt, NULL);
    if (!s) s = lt__sc_diverge_from_local(rc, st, d->local, d->as);   /* after storing it */
    return s ? s : chk;
}

/* ---- redistribute ------------------------------------------------------------------- */

typedef struct {
    const char *tensor, *as;
    lt_placement *pl;               /* (np) */
    int np;
    lt_planner planner;
    int verify;
    int has_cost;                   /* objective, moves or topology given */
    lt_plan_cost cost;
} redistribute_data;

/* The optional `objective`, `moves` and `topology` (a preset) of a
 * redistribute: min-cost's cost options (localtensor/plan.h); without
 * them, bytes over the collectives, as the library's default. */
static lt_status parse_cost(sc_parse_ctx *pc, const sc_node *body, redistribute_data *d) {
    const sc_node *o = lt__sc_get(body, "objective"), *m = lt__sc_get(body, "moves"),
                  *t = lt__sc_get(body, "topology");
    const char *s;
    d->has_cost = o || m || t;
    d->cost.objective = LT_OBJECTIVE_BYTES;
    d->cost.moves = LT_MOVES_COLLECTIVES;
    if (!d->has_cost) return LT_OK;
    lt_status e = LT_OK;
    if (o && !(e = lt__sc_str(o, "redistribute: objective", &s)))
        if ((e = lt_objective_parse(s, &d->cost.objective))) return lt__sc_err_at(o, e);
    if (!e && m && !(e = lt__sc_str(m, "redistribute: moves", &s)))
        if ((e = lt_moveset_parse(s, &d->cost.moves))) return lt__sc_err_at(m, e);
    if (e) return e;
    s = "uniform";
    if (t) LT_TRY(lt__sc_str(t, "redistribute: topology", &s));
    e = lt_topology_preset(s, pc->mesh->ndim, &d->cost.topo);
    return e && t ? lt__sc_err_at(t, e) : e;
}

lt_status lt__sc_parse_redistribute(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"tensor", "to",    "as",       "planner", "verify",
                                       "objective", "moves", "topology", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "redistribute", keys));
    LT__SC_NEW_DATA(redistribute_data, d);
    LT_TRY(lt__sc_use(pc, body, "redistribute", "tensor", SC_DTENSOR, &d->tensor));
    LT_TRY(lt__sc_need(body, "redistribute", "to", &n));
    LT_TRY(lt__sc_placements_new(pc->arena, n, "redistribute: to", &d->pl, &d->np));
    d->planner = LT_PLANNER_MIN_COST;
    if ((n = lt__sc_get(body, "planner"))) {
        const char *s;
        LT_TRY(lt__sc_str(n, "redistribute: planner", &s));
        lt_status e = lt_planner_parse(s, &d->planner);
        if (e) return lt__sc_err_at(n, e);
    }
    d->verify = 1;
    if ((n = lt__sc_get(body, "verify")))
        LT_TRY(lt__sc_bool(n, "redistribute: verify", &d->verify));
    LT_TRY(parse_cost(pc, body, d));
    pc->redistributes++;
    return lt__sc_define(pc, body, "redistribute", SC_DTENSOR, &d->as);
}

/* "plan step 1 of 2 (mesh dim 0: S(0) -> R, all_gather)": numbered and named
 * as in the plan table (lt_plan_step_format) */
static void plan_step_str(const lt_plan *p, int i, char *buf, size_t n) {
    if (!p || i < 0 || i >= p->nsteps) {
        snprintf(buf, n, "the source (its replicas or partial values disagree)");
        return;
    }
    char one[400];
    snprintf(buf, n, "plan %s", lt_plan_step_format(p, i, one, sizeof one));
}

static void plan_summary(const lt_plan *p, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    if (!p->nsteps) snprintf(buf, n, "no steps");
    for (int i = 0; i < p->nsteps && used < n; i++) {
        char one[160];
        plan_step_str(p, i, one, sizeof one);
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? "; " : "", one + 5);
    }
}

void lt__sc_plan_origin_text(const lt_plan *p, const sc_step *st, char *buf, size_t n) {
    char where[256], sum[400];
    pos_str(st, where, sizeof where);
    plan_summary(p, sum, sizeof sum);
    snprintf(buf, n, "redistribute at %.80s: %.380s", where, sum);
}

static lt_status verify_failed(sc_run_ctx *rc, const sc_step *st, const redistribute_data *d,
                               const lt_verify_report *rp, const char *src, const char *dst,
                               const lt_plan *plan);

lt_status lt__sc_run_redistribute(sc_run_ctx *rc, const sc_step *st) {
    const redistribute_data *d = st->data;
    sc_value *v = lt__sc_value(rc, d->tensor);
    lt_verify_report rep;
    memset(&rep, 0, sizeof rep);
    lt_redistribute_opts o;
    memset(&o, 0, sizeof o);
    o.planner = d->planner;
    o.verify = d->verify;
    o.name = d->tensor;
    o.comm = rc->comm;
    o.report = &rep;
    o.cost = d->has_cost ? &d->cost : NULL;
    lt_dtensor *out = NULL;
    lt_plan *plan = NULL;
    rc->did_check = d->verify;
    size_t since = lt_trace_marker(lt_comm_trace(rc->comm));
    lt_sample_src gout;
    lt_status s;
    if (v->sampled &&
        rc->owned) { /* --shards owned: the plan on the engine, the held ranks' shards */
        s = lt__sc_owned_redistribute(rc, v, d->pl, d->np, &o, &out, &plan, &gout);
    } else if (v->sampled) { /* numerics sample/none: the sampled ranks' values; the trace on paper
                              */
        o.comm = NULL;
        s = lt_redistribute_sampled(lt_dtensor_spec(v->dt), &v->gen, d->pl, d->np, rc->ranks,
                                    rc->nranks, &o, &out, &plan, &gout);
        if (plan) {
            lt_status ts = lt_plan_trace(plan, lt_comm_trace(rc->comm));
            if (ts) {
                lt_dtensor_free(out);
                lt_plan_free(plan);
                return ts;
            }
        }
    } else {
        s = lt_redistribute(v->dt, d->pl, d->np, &o, &out, &plan);
        /* the planner's byte model is the collectives' own: every
         * redistribute a scenario runs proves it (or fails as internal) */
        if (!s && plan) {
            lt_status ts = lt__plan_check_trace(plan, lt_comm_trace(rc->comm), since);
            if (ts) s = ts;
        }
    }
    lt__sc_record_plan(rc, st, d->tensor, v->dt->placements, plan, since);
    if (plan) {
        lt_plan_free(rc->plan);
        rc->plan = plan;
        rc->plan_step = st;
        rc->plan_text[0] = '\0';   /* spelled when a message asks (lt__sc_plan_text) */
    }
    if (s == LT_MISMATCH && rep.checked && !rep.ok) {
        /* the check failed; the case goes on, so `as` still gets what the
         * plan computes (run again unverified), as a failed op check keeps
         * its output */
        char src[256], dst[256];
        fmt_pl(v->dt->placements, rc->c->mesh->ndim, src, sizeof src);
        fmt_pl(d->pl, d->np, dst, sizeof dst);
        lt_status chk = verify_failed(rc, st, d, &rep, src, dst, plan);
        lt_redistribute_opts again = o;
        again.verify = 0;
        again.report = NULL;
        again.comm = NULL;   /* not traced twice */
        lt_status s2 =
            v->sampled ? lt_redistribute_sampled(lt_dtensor_spec(v->dt), &v->gen, d->pl, d->np,
                                                 rc->ranks, rc->nranks, &again, &out, NULL, &gout)
                       : lt_redistribute(v->dt, d->pl, d->np, &again, &out, NULL);
        if (!s2) s2 = v->sampled ? lt__sc_sampled_put(rc, d->as, out, &gout, lt__sc_plan_origin)
                                 : lt__sc_put_dtensor(rc, d->as, out, lt__sc_plan_origin);
        else lt_dtensor_free(out);
        return s2 ? s2 : chk;
    }
    if (s) {
        lt_dtensor_free(out);
        return s;
    }
    if (v->sampled) return lt__sc_sampled_put(rc, d->as, out, &gout, lt__sc_plan_origin);
    s = lt__sc_put_dtensor(rc, d->as, out, lt__sc_plan_origin);
    return s ? s : lt__sc_diverge_same(rc, st, "redistribute", d->tensor, d->as);
}

/* The failed check of a verified redistribute (lt__sc_check_fail's status),
 * naming the step of the plan, the rank and index, and both values. */
static lt_status verify_failed(sc_run_ctx *rc, const sc_step *st, const redistribute_data *d,
                               const lt_verify_report *rp, const char *src, const char *dst,
                               const lt_plan *plan) {
    const lt_verify_report rep = *rp;
    char ps[200], idx[96], gidx[96], e[48], a[48];
    plan_step_str(plan, rep.step, ps, sizeof ps);
    if (rep.shape_mismatch) {
        char es[96], as[96];
        lt_shape_format(rep.ndim, rep.expected_shape, es, sizeof es);
        lt_shape_format(rep.ndim, rep.actual_shape, as, sizeof as);
        return lt__sc_check_fail(rc, st, rep.rank, NULL, es, as, ps,
                                 "verification of redistribute of '%s' %s -> %s failed at %s: rank "
                                 "%d holds a shard of shape %s, expected %s",
                                 d->tensor, src, dst, ps, rep.rank, as, es);
    }
    lt__sc_fmt_index(rep.ndim, rep.local_index, idx, sizeof idx);
    lt__sc_fmt_index(rep.ndim, rep.global_index, gidx, sizeof gidx);
    lt__sc_fmt_num(rep.expected, e, sizeof e);
    lt__sc_fmt_num(rep.actual, a, sizeof a);
    return lt__sc_check_fail(
        rc, st, rep.rank, idx, e, a, ps,
        "verification of redistribute of '%s' %s -> %s failed at %s: rank %d, index %s (global "
        "%s): expected %s, actual %s (%lld element%s differ%s on that rank)",
        d->tensor, src, dst, ps, rep.rank, idx, gidx, e, a, (long long)rep.ndiff,
        rep.ndiff == 1 ? "" : "s", rep.ndiff == 1 ? "s" : "");
}

/* ---- full_tensor ----------------------------------------------------------------------- */

typedef struct {
    const char *tensor, *as;
} full_tensor_data;

lt_status lt__sc_parse_full_tensor(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"tensor", "as", NULL};
    LT_TRY(lt__sc_keys(body, "full_tensor", keys));
    LT__SC_NEW_DATA(full_tensor_data, d);
    LT_TRY(lt__sc_use(pc, body, "full_tensor", "tensor", SC_DTENSOR, &d->tensor));
    return lt__sc_define(pc, body, "full_tensor", SC_FULL, &d->as);
}

lt_status lt__sc_run_full_tensor(sc_run_ctx *rc, const sc_step *st) {
    const full_tensor_data *d = st->data;
    sc_value *v = lt__sc_value(rc, d->tensor);
    /* like DTensor.full_tensor(): redistribute to all-Replicate through the
     * case's communicator (so expect_comm sees it), verified, rank 0's shard */
    lt_placement reps[LT_MESH_MAX_DIMS];
    for (int i = 0; i < rc->c->mesh->ndim; i++) reps[i] = lt_replicate();
    lt_redistribute_opts o;
    memset(&o, 0, sizeof o);
    o.verify = 1;
    o.name = d->tensor;
    o.comm = rc->comm;
    lt_dtensor *r = NULL;
    lt_tensor *full = NULL;
    lt_status s = lt_redistribute(v->dt, reps, rc->c->mesh->ndim, &o, &r, NULL);
    if (!s) s = lt_clone(lt_to_local(r, 0), &full);
    lt_dtensor_free(r);
    if (s) return lt__err_ctx_in(s, "full_tensor", " of '%s'", d->tensor);
    char where[128], origin[256];
    snprintf(origin, sizeof origin, "full_tensor at %s", pos_str(st, where, sizeof where));
    lt_status ps = lt__sc_put_full(rc, d->as, full, origin);
    return ps ? ps : lt__sc_diverge_full(rc, st, d->tensor, d->as);
}

/* ---- collective ------------------------------------------------------------------------- */

typedef struct {
    lt_coll kind;
    const char *tensor, *as;      /* NULL for barrier */
    int mesh_dim;
    lt_redop op;
    int dim, concat_dim, root;
    int has_rule;
    lt_split_rule rule;
    int *perm;
    int nperm;
} collective_data;

/* keys each collective accepts beyond kind, tensor, mesh_dim, as */
static const char *coll_extra(lt_coll k) {
    switch (k) {
    case LT_COLL_ALL_GATHER: return "dim";
    case LT_COLL_ALL_REDUCE: return "op";
    case LT_COLL_REDUCE_SCATTER: return "op dim split";
    case LT_COLL_ALL_TO_ALL: return "split_dim concat_dim split";
    case LT_COLL_BROADCAST: return "root";
    case LT_COLL_SCATTER: return "root dim split";
    case LT_COLL_GATHER: return "root dim";
    case LT_COLL_REDUCE: return "root op";
    case LT_COLL_PERMUTE: return "perm";
    default: return "";
    }
}

static int has_word(const char *list, const char *w) {
    size_t n = strlen(w);
    for (const char *p = list; (p = strstr(p, w)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n])) return 1;
    return 0;
}

lt_status lt__sc_parse_collective(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"kind", "tensor", "mesh_dim", "as", "op", "dim", "split_dim",
                                       "concat_dim", "root", "split", "perm", NULL};
    const sc_node *n;
    const char *s;
    LT_TRY(lt__sc_keys(body, "collective", keys));
    LT__SC_NEW_DATA(collective_data, d);
    LT_TRY(lt__sc_need(body, "collective", "kind", &n));
    LT_TRY(lt__sc_str(n, "collective: kind", &s));
    lt_status e = lt_coll_parse(s, &d->kind);
    if (e) return lt__sc_err_at(n, e);
    const char *extra = coll_extra(d->kind);
    for (int i = 0; i < body->n; i++) {
        const sc_node *k = body->kids[2 * i];
        const char *ks = k->str;
        int common = !strcmp(ks, "kind") || !strcmp(ks, "mesh_dim") ||
                     (d->kind != LT_COLL_BARRIER && (!strcmp(ks, "tensor") || !strcmp(ks, "as")));
        if (!common && !has_word(extra, ks))
            return lt__sc_err(k, LT_INVALID,
                              "collective: key '%s' does not apply to %s (it takes: %s%s%s)", ks,
                              lt_coll_name(d->kind),
                              d->kind == LT_COLL_BARRIER ? "mesh_dim" : "tensor, mesh_dim, as",
                              extra[0] ? " and " : "", extra);
    }
    LT_TRY(lt__sc_need(body, "collective", "mesh_dim", &n));
    int md = lt_mesh_dim_by_name(pc->mesh, n->kind == SC_SCALAR ? n->str : "");
    if (md >= 0) d->mesh_dim = md;
    else if (n->kind == SC_SCALAR && n->str[0] && (n->str[0] < '0' || n->str[0] > '9') &&
             n->str[0] != '-')
        return lt__sc_err(n, LT_INVALID, "collective: mesh_dim '%s' is not a dim name of this mesh",
                          n->str);
    else LT_TRY(lt__sc_int(n, "collective: mesh_dim", -1000, 1000, &d->mesh_dim));
    if (d->kind == LT_COLL_PERMUTE && st->mask)
        return lt__sc_err(body, LT_INVALID,
                          "collective: permute cannot be limited to some ranks (ranks: / when:)");
    if (d->kind == LT_COLL_BARRIER) return LT_OK;
    LT_TRY(
        lt__sc_use(pc, body, "collective", "tensor", SC_FULL | SC_DTENSOR | SC_LOCAL, &d->tensor));
    d->op = LT_REDOP_SUM;
    if ((n = lt__sc_get(body, "op"))) {
        LT_TRY(lt__sc_str(n, "collective: op", &s));
        if ((e = lt_redop_parse(s, &d->op))) return lt__sc_err_at(n, e);
    }
    if ((n = lt__sc_get(body, "dim"))) LT_TRY(lt__sc_int(n, "collective: dim", -64, 64, &d->dim));
    if ((n = lt__sc_get(body, "split_dim")))
        LT_TRY(lt__sc_int(n, "collective: split_dim", -64, 64, &d->dim));
    if ((n = lt__sc_get(body, "concat_dim")))
        LT_TRY(lt__sc_int(n, "collective: concat_dim", -64, 64, &d->concat_dim));
    if ((n = lt__sc_get(body, "root")))
        LT_TRY(lt__sc_int(n, "collective: root", -1000000, 1000000, &d->root));
    if ((n = lt__sc_get(body, "split"))) {
        d->has_rule = 1;
        LT_TRY(lt__sc_rule(n, "collective: split", &d->rule));
    }
    if (d->kind == LT_COLL_PERMUTE) {
        LT_TRY(lt__sc_need(body, "collective", "perm", &n));
        if (n->kind != SC_SEQ || n->n == 0 || n->n > LT_MESH_MAX_WORLD)
            return lt__sc_err(n, LT_INVALID,
                              "collective: perm: expected a list of group positions, got %s",
                              lt__sc_kind_name(n));
        d->nperm = n->n;
        d->perm = lt__sc_alloc(pc->arena, sizeof(int) * (size_t)n->n);
        if (!d->perm) return LT_NOMEM;
        for (int i = 0; i < n->n; i++)
            LT_TRY(lt__sc_int(n->kids[i], "collective: perm", -1000000, 1000000, &d->perm[i]));
    }
    return lt__sc_define(pc, body, "collective", SC_LOCAL, &d->as);
}

static lt_status run_collective(sc_run_ctx *rc, const sc_step *st);

/* The collective, then the single-device comparison's record of its result
 * (when every rank ran it together: nothing waits). */
lt_status lt__sc_run_collective(sc_run_ctx *rc, const sc_step *st) {
    const collective_data *d = st->data;
    lt_status s = run_collective(rc, st);
    if (s || !d->as || !lt__sc_diverge_on(rc)) return s;
    return lt__sc_diverge_collective(rc, st, d->kind, d->mesh_dim, d->op, d->dim, d->concat_dim,
                                     d->has_rule ? &d->rule : NULL, d->tensor, d->as);
}

/* A permute's perm must list one entry per member of its mesh dim. */
static int perm_fits(const collective_data *d, const lt_mesh *mesh) {
    return d->mesh_dim >= 0 && d->mesh_dim < mesh->ndim && d->nperm == mesh->shape[d->mesh_dim];
}

/* --numerics sample/none: the collective on the sampled ranks. */
static lt_status sampled_collective(sc_run_ctx *rc, const sc_step *st, int per_rank) {
    const collective_data *d = st->data;
    const lt_mesh *mesh = rc->c->mesh;
    if (per_rank)
        return lt__sc_numerics_refuse(
            rc, "a per-rank collective (on a LocalTensor, or limited to some ranks)");
    if (d->kind == LT_COLL_PERMUTE && !perm_fits(d, mesh))
        return lt__err_in(
            LT_INVALID, "collective",
            " %s along mesh dim %d of '%s': perm has %d entries; mesh dim %d has %d members",
            lt_coll_name(d->kind), d->mesh_dim, d->tensor, d->nperm, d->mesh_dim,
            d->mesh_dim >= 0 && d->mesh_dim < mesh->ndim ? mesh->shape[d->mesh_dim] : 0);
    char where[128], origin[256];
    snprintf(origin, sizeof origin, "collective %s at %s", lt_coll_name(d->kind),
             pos_str(st, where, sizeof where));
    lt_status s =
        lt__sc_sampled_collective(rc, d->kind, d->tensor, d->mesh_dim, d->op, d->dim, d->concat_dim,
                                  d->root, d->has_rule ? &d->rule : NULL, d->perm, d->as, origin);
    if (s && !rc->refused)
        return lt__err_ctx_in(s, "collective", " %s along mesh dim %d of '%s'",
                              lt_coll_name(d->kind), d->mesh_dim, d->tensor);
    return s;
}

/* Each rank's input in[W] of value v; a DTensor shard another process
 * holds gets a stand-in of its shape (absent). */
static lt_status collective_inputs(const sc_value *v, int W, lt_tensor **in) {
    for (int r = 0; r < W; r++) {
        in[r] = v->kind == SC_FULL      ? v->full
                : v->kind == SC_DTENSOR ? v->dt->local->shards[r]
                                        : v->local->shards[r];
        if (in[r] || v->kind != SC_DTENSOR) continue;
        int64_t ls[LT_MAX_DIMS];
        LT_TRY(lt_spec_local_shape(lt_dtensor_spec(v->dt), r, ls, NULL));
        LT_TRY(lt_tensor_absent(v->dt->dtype, v->dt->ndim, ls, &in[r]));
    }
    return LT_OK;
}

/* The collective d on every rank together, in[] -> out[]. */
static lt_status collective_call(lt_comm *c, const collective_data *d, lt_tensor *const *in,
                                 lt_tensor **out) {
    const lt_split_rule *rule = d->has_rule ? &d->rule : NULL;
    int md = d->mesh_dim;
    switch (d->kind) {
    case LT_COLL_ALL_GATHER: return lt_all_gather(c, md, in, d->dim, out);
    case LT_COLL_ALL_REDUCE: return lt_all_reduce(c, md, in, d->op, out);
    case LT_COLL_REDUCE_SCATTER: return lt_reduce_scatter(c, md, in, d->op, d->dim, rule, out);
    case LT_COLL_ALL_TO_ALL: return lt_all_to_all(c, md, in, d->dim, d->concat_dim, rule, out);
    case LT_COLL_BROADCAST: return lt_broadcast(c, md, in, d->root, out);
    case LT_COLL_SCATTER: return lt_scatter(c, md, in, d->root, d->dim, rule, out);
    case LT_COLL_GATHER: return lt_gather(c, md, in, d->root, d->dim, out);
    case LT_COLL_REDUCE: return lt_reduce_ranks(c, md, in, d->root, d->op, out);
    case LT_COLL_PERMUTE: return lt_permute_ranks(c, md, in, d->perm, out);
    default:
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET, "not supported yet: %s",
                            lt_coll_name(d->kind));
    }
}

/* Every rank runs the collective together (a DTensor, a full tensor or a
 * LocalTensor no rank skips): its result is the LocalTensor `as`. */
static lt_status run_together(sc_run_ctx *rc, const sc_step *st) {
    const collective_data *d = st->data;
    const lt_mesh *mesh = rc->c->mesh;
    int W = mesh->world;
    lt_tensor **in = lt__calloc((size_t)W, sizeof *in), **out = lt__calloc((size_t)W, sizeof *out);
    lt_status s = !in || !out ? lt__err(LT_NOMEM, "out of memory") : LT_OK;
    if (!s) s = collective_inputs(lt__sc_value(rc, d->tensor), W, in);
    if (rc->owned)
        s = lt__comm_agree(rc->comm, s); /* a stand-in that failed here: no process enters it */
    if (!s && d->kind == LT_COLL_PERMUTE && !perm_fits(d, mesh))
        s = lt__err(LT_INVALID, "perm has %d entries; mesh dim %d has %d members", d->nperm,
                    d->mesh_dim,
                    d->mesh_dim >= 0 && d->mesh_dim < mesh->ndim ? mesh->shape[d->mesh_dim] : 0);
    if (!s) s = collective_call(rc->comm, d, in, out);
    lt_local *l = NULL;
    if (!s) s = lt_local_new(mesh, &l);
    for (int r = 0; !s && r < W; r++) {
        if (out[r] && out[r]->absent) continue;   /* held by another process: left out */
        l->shards[r] = out[r];
        out[r] = NULL;
    }
    for (int r = 0; out && r < W; r++) lt_tensor_free(out[r]);
    for (int r = 0; in && r < W; r++)
        if (in[r] && in[r]->absent) lt_tensor_free(in[r]);
    lt__free(in);
    lt__free(out);
    if (s)
        return lt__err_ctx_in(s, "collective", " %s along mesh dim %d of '%s'",
                              lt_coll_name(d->kind), d->mesh_dim, d->tensor);
    char where[128], origin[256];
    snprintf(origin, sizeof origin, "collective %s at %s", lt_coll_name(d->kind),
             pos_str(st, where, sizeof where));
    return lt__sc_put_local(rc, d->as, l, origin);
}

static lt_status run_collective(sc_run_ctx *rc, const sc_step *st) {
    const collective_data *d = st->data;
    /* per-rank programs: collectives on LocalTensors (and any limited to some
     * ranks, and barriers) are matched rank by rank (scenario_match.c) */
    const sc_value *cv = d->tensor ? lt__sc_value(rc, d->tensor) : NULL;
    int is_local = cv && cv->kind == SC_LOCAL;
    /* --shards owned: the engine moves the held shards of a DTensor (or a full tensor every process
     * has) */
    int on_engine = rc->owned && !st->mask && !is_local && cv &&
                    (cv->kind == SC_DTENSOR || (cv->kind == SC_FULL && cv->full));
    if (rc->nranks >= 0 && d->kind != LT_COLL_BARRIER && !on_engine)
        return sampled_collective(rc, st, st->mask || is_local);
    /* permute is never matched (docs/SEMANTICS.md §12): every rank runs it
     * together, so ranks that wait or failed never reach it */
    if (d->kind == LT_COLL_PERMUTE && lt__sc_any_stopped(rc))
        return lt__sc_program_end_at(rc, st, st);
    if (d->kind != LT_COLL_PERMUTE &&
        (st->mask || is_local || d->kind == LT_COLL_BARRIER || lt__sc_any_stopped(rc)))
        return lt__sc_run_matched(rc, st, d->kind, d->tensor, d->mesh_dim, (int)d->op, d->dim,
                                  d->concat_dim, d->root, d->has_rule ? &d->rule : NULL, d->as);
    if (d->kind == LT_COLL_BARRIER) {
        lt_status s = lt_barrier(rc->comm, d->mesh_dim);
        return s ? lt__err_ctx_in(s, "collective", " barrier along mesh dim %d", d->mesh_dim)
                 : LT_OK;
    }
    return run_together(rc, st);
}

/* ---- show, mark_comm ----------------------------------------------------------------------- */

typedef struct {
    const char *tensor;
    int max_values;
} show_data;

lt_status lt__sc_parse_show(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"tensor", "max_values", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "show", keys));
    LT__SC_NEW_DATA(show_data, d);
    LT_TRY(lt__sc_use(pc, body, "show", "tensor", SC_FULL | SC_DTENSOR | SC_LOCAL, &d->tensor));
    d->max_values = 64;
    if ((n = lt__sc_get(body, "max_values")))
        LT_TRY(lt__sc_int(n, "show: max_values", 0, 1 << 20, &d->max_values));
    return LT_OK;
}

lt_status lt__sc_run_show(sc_run_ctx *rc, const sc_step *st) {
    const show_data *d = st->data;
    FILE *f = rc->show;
    if (!f) return LT_OK;
    sc_value *v = lt__sc_value(rc, d->tensor);
    fprintf(f, "-- %s (%s:%d)\n", d->tensor, st->pos.file, st->pos.line);
    if (v->kind == SC_DTENSOR) {
        lt_render_header(f, v->dt);
        LT_TRY(lt_render_picture(f, v->dt));
        return lt_render_ranks(f, v->dt, d->max_values);
    }
    char sh[96];
    if (v->kind == SC_FULL) {
        fprintf(
            f, "full tensor %s %s: ", lt_shape_format(v->full->ndim, v->full->shape, sh, sizeof sh),
            lt_dtype_name(v->full->dtype));
        lt_render_values(f, v->full, d->max_values);
        fputc('\n', f);
        return LT_OK;
    }
    const lt_mesh *m = &v->local->mesh;
    for (int r = 0; r < m->world; r++) {
        const lt_tensor *t = v->local->shards[r];
        int coord[LT_MESH_MAX_DIMS];
        int64_t c64[LT_MESH_MAX_DIMS];
        char cs[96];
        lt_mesh_coord(m, r, coord);
        for (int i = 0; i < m->ndim; i++) c64[i] = coord[i];
        fprintf(f, "  rank %-3d %-10s ", r, lt__sc_fmt_index(m->ndim, c64, cs, sizeof cs));
        if (t->placeholder) {
            fprintf(f, "placeholder for %s\n",
                    lt_shape_format(t->logical_ndim, t->logical, sh, sizeof sh));
            continue;
        }
        fprintf(f, "%-10s ", lt_shape_format(t->ndim, t->shape, sh, sizeof sh));
        lt_render_values(f, t, d->max_values);
        fputc('\n', f);
    }
    return LT_OK;
}

lt_status lt__sc_parse_mark_comm(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    (void)pc;
    (void)st;
    /* "- mark_comm" or "- mark_comm:" */
    if (body->kind == SC_SCALAR && (lt__sc_is_null(body) || !strcmp(body->str, "mark_comm")))
        return LT_OK;
    static const char *const keys[] = {NULL};
    return lt__sc_keys(body, "mark_comm", keys);
}

lt_status lt__sc_run_mark_comm(sc_run_ctx *rc, const sc_step *st) {
    (void)st;
    rc->comm_mark = lt_trace_marker(lt_comm_trace(rc->comm));
    return LT_OK;
}
