/* tools/scenario/scenario_numerics.c — scenarios in numerics sample:K or none
 * (the `numerics:` key, or `run --numerics`; localtensor/numerics.h).
 *
 * In these modes a case never builds its declared tensors: a distribute of
 * an `init:` tensor produces only the sampled ranks' shards, and each
 * redistribute computes only theirs (the plan, and the comm trace that
 * expect_comm reads, are those of full mode). The steps that work on
 * layouts, plans and bytes run; a check reads values of sampled ranks only.
 * Every other step stops the case with "not supported yet: ... in
 * --numerics sample:K mode" (an error: exit 2), also inside expect_error,
 * so that no check passes or fails on values that were never computed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/scenario/scenario_impl.h"

/* The steps that run in sample and none modes. */
static const char *const sampled_steps[] = {
    "distribute",  "redistribute", "collective",  "show",         "mark_comm", "expect_local",
    "expect_full", "expect_plan",  "expect_comm", "expect_error", NULL};

const char *lt__sc_numerics_name(const sc_run_ctx *rc) {
    static _Thread_local char buf[32];
    return lt_numerics_format(&rc->c->numerics, buf, sizeof buf);
}

/* --shards owned: the ranks this process holds on the case's communicator. */
static lt_status owned_begin(sc_run_ctx *rc, const sc_case *c) {
    int W = c->mesh->world;
    rc->ranks = lt__malloc(sizeof(int) * (size_t)W);
    if (!rc->ranks) return lt__err(LT_NOMEM, "out of memory");
    rc->owned = 1;
    rc->nranks = 0;
    for (int r = 0; r < W; r++)
        if (lt_comm_holds(rc->comm, r)) rc->ranks[rc->nranks++] = r;
    return LT_OK;
}

lt_status lt__sc_numerics_begin(sc_run_ctx *rc, sc_case *c, sc_arena *arena) {
    rc->nranks = -1;
    if (c->numerics.kind == LT_NUMERICS_FULL && rc->comm &&
        lt_comm_nheld(rc->comm) < c->mesh->world)
        return owned_begin(rc, c);
    if (c->numerics.kind == LT_NUMERICS_FULL) return LT_OK;
    int cap = lt_numerics_count(&c->numerics, c->mesh->world);
    rc->ranks = lt__malloc(sizeof(int) * (size_t)(cap > 0 ? cap : 1));
    int *keep = lt__sc_alloc(arena, sizeof(int) * (size_t)(cap > 0 ? cap : 1));
    if (!rc->ranks || !keep) return lt__err(LT_NOMEM, "out of memory");
    rc->nranks = lt_numerics_ranks(&c->numerics, c->mesh->world, rc->ranks);
    memcpy(keep, rc->ranks, sizeof(int) * (size_t)rc->nranks);
    char rs[256];
    lt_numerics_ranks_format(rc->ranks, rc->nranks, 8, rs, sizeof rs);
    c->res.sampled = keep;
    c->res.nsampled = rc->nranks;
    c->res.numerics = rc->nranks
                          ? lt__sc_printf(arena, "%s: values for rank%s %s",
                                          lt__sc_numerics_name(rc), rc->nranks == 1 ? "" : "s", rs)
                          : lt__sc_printf(arena, "none: no values");
    return c->res.numerics ? LT_OK : lt__err(LT_NOMEM, "out of memory");
}

void lt__sc_numerics_end(sc_run_ctx *rc) {
    lt__free(rc->ranks);
    rc->ranks = NULL;
}

lt_status lt__sc_numerics_refuse(sc_run_ctx *rc, const char *fmt, ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    rc->refused = 1;
    lt_status s =
        rc->owned ? lt__err_code(
                        LT_UNSUPPORTED, LT_ERR_NOT_YET,
                        "not supported yet: %s with --shards owned (a process holds only its own "
                        "ranks' shards)",
                        what)
                  : lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                                 "not supported yet: %s in --numerics %s mode", what,
                                 lt__sc_numerics_name(rc));
    snprintf(rc->refused_msg, sizeof rc->refused_msg, "%s", lt_errmsg());
    return s;
}

lt_status lt__sc_numerics_gate(sc_run_ctx *rc, const sc_step *st) {
    if (rc->nranks < 0) return LT_OK;
    for (int i = 0; sampled_steps[i]; i++)
        if (!strcmp(sampled_steps[i], st->type->name)) return LT_OK;
    return lt__sc_numerics_refuse(
        rc,
        "'%s' (it needs values of ranks %s; %s runs distribute, redistribute, collective, show, "
        "mark_comm, expect_local, expect_full, expect_plan, expect_comm and expect_error)",
        st->type->name, rc->owned ? "that other processes hold" : "that are not computed",
        rc->owned ? "--shards owned" : "this mode");
}

lt_status lt__sc_sampled_put(sc_run_ctx *rc, const char *as, lt_dtensor *dt, const lt_sample_src *g,
                             const char *origin) {
    LT_TRY(lt__sc_put_dtensor(rc, as, dt, origin));
    sc_value *v = lt__sc_value(rc, as);
    v->sampled = 1;
    v->gen = *g;
    return LT_OK;
}

lt_status lt__sc_sampled_distribute(sc_run_ctx *rc, const char *tensor, const lt_placement *pl,
                                    int np, const char *as) {
    const sc_case *c = rc->c;
    const sc_tensor_decl *t = NULL;
    for (int i = 0; i < c->ntensors; i++)
        if (!strcmp(c->tensors[i].name, tensor)) t = &c->tensors[i];
    if (!t || t->has_values)
        return lt__sc_numerics_refuse(
            rc,
            "distributing '%s', which is not declared with init: (only values that are a "
            "function of the global index can be sampled)",
            tensor);
    lt_placement norm[LT_MESH_MAX_DIMS];
    lt_spec spec;
    lt_sample_src g;
    lt_dtensor *dt = NULL;
    LT_TRY(lt_placements_check(c->mesh, t->ndim, pl, np, norm));
    LT_TRY(lt_spec_init(c->mesh, t->dtype, t->ndim, t->shape, norm, np, &spec));
    LT_TRY(lt_sample_src_init(&g, &t->init, &spec));
    LT_TRY(lt_dtensor_sample(&spec, &g, rc->ranks, rc->nranks, &dt));
    return lt__sc_sampled_put(rc, as, dt, &g, NULL);
}

/* The collective on a group's members, in a 1-D communicator of the group's
 * size (its member j is the group's member j): what the call along mesh dim
 * md does to that group. in/out: (n). */
static lt_status group_call(lt_comm *c, lt_coll kind, lt_tensor *const *in, lt_redop op, int dim,
                            int cdim, int root, const lt_split_rule *rule, const int *perm,
                            lt_tensor **out) {
    switch (kind) {
    case LT_COLL_ALL_GATHER: return lt_all_gather(c, 0, in, dim, out);
    case LT_COLL_ALL_REDUCE: return lt_all_reduce(c, 0, in, op, out);
    case LT_COLL_REDUCE_SCATTER: return lt_reduce_scatter(c, 0, in, op, dim, rule, out);
    case LT_COLL_ALL_TO_ALL: return lt_all_to_all(c, 0, in, dim, cdim, rule, out);
    case LT_COLL_BROADCAST: return lt_broadcast(c, 0, in, root, out);
    case LT_COLL_SCATTER: return lt_scatter(c, 0, in, root, dim, rule, out);
    case LT_COLL_GATHER: return lt_gather(c, 0, in, root, dim, out);
    case LT_COLL_REDUCE: return lt_reduce_ranks(c, 0, in, root, op, out);
    case LT_COLL_PERMUTE: return lt_permute_ranks(c, 0, in, perm, out);
    default:
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET, "not supported yet: %s",
                            lt_coll_name(kind));
    }
}

lt_status lt__sc_sampled_collective(sc_run_ctx *rc, lt_coll kind, const char *tensor, int md,
                                    lt_redop op, int dim, int cdim, int root,
                                    const lt_split_rule *rule, const int *perm, const char *as,
                                    const char *origin) {
    const lt_mesh *mesh = rc->c->mesh;
    sc_value *v = lt__sc_value(rc, tensor);
    if (v->kind != SC_DTENSOR || !v->sampled)
        return lt__sc_numerics_refuse(
            rc, "a collective on '%s', which is not a distributed tensor of this mode", tensor);
    if (md < 0 || md >= mesh->ndim)
        return lt__err(LT_INVALID, "mesh dim %d is out of range (the mesh has %d)", md, mesh->ndim);
    int n = mesh->shape[md];
    char ms[16];
    snprintf(ms, sizeof ms, "%d", n);
    lt_mesh m1;
    lt_comm *c1 = NULL;
    lt_local *l = NULL;
    int *grp = lt__malloc(sizeof(int) * (size_t)n), *done = NULL;
    lt_tensor **in = lt__calloc((size_t)n, sizeof *in), **out = lt__calloc((size_t)n, sizeof *out);
    lt_status s = grp && in && out ? LT_OK : lt__err(LT_NOMEM, "out of memory");
    if (!s) s = lt_mesh_parse(ms, &m1);
    if (!s) s = lt_comm_new(&m1, &c1);
    if (!s) s = lt_local_new(mesh, &l);
    if (!s && !(done = lt__calloc((size_t)lt_mesh_ngroups(mesh, md), sizeof *done)))
        s = lt__err(LT_NOMEM, "out of memory");
    /* each group holding a sampled rank: every member's input on demand, the
     * collective, the sampled members' results */
    for (int i = 0; i < rc->nranks && !s; i++) {
        int pos, g = lt_mesh_group_of(mesh, md, rc->ranks[i], &pos);
        if (done[g]) continue;
        done[g] = 1;
        lt_mesh_group(mesh, md, g, grp);   /* ascending global ranks */
        lt_dtensor *members = NULL;
        s = lt_dtensor_sample(lt_dtensor_spec(v->dt), &v->gen, grp, n, &members);
        for (int j = 0; j < n && !s; j++) in[j] = members->local->shards[grp[j]];
        if (!s) s = group_call(c1, kind, in, op, dim, cdim, root, rule, perm, out);
        for (int j = 0; j < n; j++) {
            int keep = 0;
            for (int k = 0; k < rc->nranks && !s; k++) keep |= rc->ranks[k] == grp[j];
            if (keep && !s) l->shards[grp[j]] = out[j];
            else lt_tensor_free(out[j]);
            out[j] = NULL;
        }
        lt_dtensor_free(members);
    }
    /* what a full run records: every group's bytes, from layout math */
    if (!s && rc->nranks == 0) { /* none: the arguments are still checked, on group 0 */
        lt_mesh_group(mesh, md, 0, grp);
        lt_dtensor *members = NULL;
        lt_spec sp = *lt_dtensor_spec(v->dt);
        s = lt_dtensor_sample(&sp, &v->gen, grp, n, &members);
        for (int j = 0; j < n && !s; j++) in[j] = members->local->shards[grp[j]];
        if (!s) s = group_call(c1, kind, in, op, dim, cdim, root, rule, perm, out);
        for (int j = 0; j < n; j++) lt_tensor_free(out[j]), out[j] = NULL;
        lt_dtensor_free(members);
    }
    int rs = kind == LT_COLL_REDUCE_SCATTER || kind == LT_COLL_SCATTER ||
             kind == LT_COLL_ALL_TO_ALL || kind == LT_COLL_ALL_GATHER || kind == LT_COLL_GATHER;
    int reduces =
        kind == LT_COLL_ALL_REDUCE || kind == LT_COLL_REDUCE_SCATTER || kind == LT_COLL_REDUCE;
    int rooted = kind == LT_COLL_BROADCAST || kind == LT_COLL_SCATTER || kind == LT_COLL_GATHER ||
                 kind == LT_COLL_REDUCE;
    if (!s)
        s = lt_coll_trace_paper(lt_comm_trace(rc->comm), lt_dtensor_spec(v->dt), kind, md,
                                reduces ? (int)op : -1, rooted ? root : -1, rs ? dim : -1,
                                kind == LT_COLL_ALL_TO_ALL ? cdim : -1, rule, perm);
    lt_comm_free(c1);
    lt__free(grp);
    lt__free(done);
    lt__free(in);
    lt__free(out);
    if (s) {
        lt_local_free(l);
        return s;
    }
    return lt__sc_put_local(rc, as, l, origin);
}

/* ---- --shards owned: redistributes on the engine --------------------------------- */

lt_status lt__sc_owned_redistribute(sc_run_ctx *rc, sc_value *v, const lt_placement *pl, int np,
                                    const lt_redistribute_opts *o, lt_dtensor **out, lt_plan **plan,
                                    lt_sample_src *gout) {
    lt_redistribute_opts ro = *o, eo = *o;
    lt_dtensor *none = NULL;
    *out = NULL;
    *plan = NULL;
    /* the plan and the destination's source description, no values */
    ro.comm = NULL;
    ro.verify = 0;
    ro.report = NULL;
    lt_status s = lt_redistribute_sampled(lt_dtensor_spec(v->dt), &v->gen, pl, np, NULL, 0, &ro,
                                          &none, plan, gout);
    lt_dtensor_free(none);
    if (s) return s;
    /* the plan on the engine: real data movement between processes */
    eo.verify = 0;
    eo.report = NULL;
    s = lt_redistribute(v->dt, pl, np, &eo, out, NULL);
    if (s || !o->verify) return s;
    /* each held shard against its definition; replicas holding one buffer once */
    lt_verify_report *rep = o->report;
    if (rep) {
        memset(rep, 0, sizeof *rep);
        rep->step = rep->mesh_dim = rep->rank = -1;
        rep->checked = rep->ok = 1;
    }
    const lt_mesh *mesh = rc->c->mesh;
    const lt_dtensor *dt = *out;
    int *checked =
        lt__malloc(sizeof(int) * (size_t)mesh->world); /* (W) replica class -> checked rank, -1 */
    if (!checked) s = lt__err(LT_NOMEM, "out of memory");
    for (int r = 0; checked && r < mesh->world; r++) checked[r] = -1;
    for (int i = 0; i < rc->nranks && !s; i++) {
        int r = rc->ranks[i], coord[LT_MESH_MAX_DIMS];
        lt_mesh_coord(mesh, r, coord);
        for (int m = 0; m < mesh->ndim; m++)
            if (dt->placements[m].kind == LT_PL_REPLICATE) coord[m] = 0;
        int cls = lt_mesh_rank(mesh, coord);
        const lt_tensor *t = lt_to_local(dt, r);
        if (checked[cls] >= 0 && lt_tensor_same_view(t, lt_to_local(dt, checked[cls]))) continue;
        checked[cls] = r;
        s = lt_verify_sampled_shard(*plan, &v->gen, r, t, rep);
    }
    lt__free(checked);
    if (s == LT_MISMATCH) {
        char a[512], b[512];
        lt_placements_format((*plan)->src, mesh->ndim, a, sizeof a);
        lt_placements_format((*plan)->dst, mesh->ndim, b, sizeof b);
        s = lt__err_ctx_in(s, "redistribute",
                           " of '%s' %s -> %s on engine '%s': verification failed",
                           o->name ? o->name : "?", a, b, lt_comm_engine_name(rc->comm));
        if (rep) snprintf(rep->message, sizeof rep->message, "%s", lt_errmsg());
    }
    if (s) {
        lt_dtensor_free(*out);
        *out = NULL;
    }
    return s;
}

/* ---- --shards owned: one outcome per step on every process ------------------------ */

static int (*g_step_agree)(int status, int *kind, char *msg, size_t cap, int *from);
static int (*g_step_note)(int status, int *kind, char *msg, size_t cap, int *from);

void lt__sc_set_step_agree(int (*fn)(int status, int *kind, char *msg, size_t cap, int *from)) {
    g_step_agree = fn;
}
void lt__sc_set_step_note(int (*fn)(int status, int *kind, char *msg, size_t cap, int *from)) {
    g_step_note = fn;
}

/* --shards all over several processes: no agreement, but a failed step is
 * noted (g_step_note): this process's own error may end the case here while
 * others go on into a collective, and a call that failed because another
 * process ended the case gives the step that process's outcome */
lt_status lt__sc_step_agree(sc_run_ctx *rc, lt_status s, int adopt_checks) {
    int (*agree)(int, int *, char *, size_t, int *) = rc->owned ? g_step_agree : g_step_note;
    if (!agree || (!rc->owned && !s && !rc->refused)) return s;
    char msg[1024];
    int kind = rc->refused ? 2 : s == LT_MISMATCH && rc->failed_check ? 1 : 0, from = -1;
    if (rc->refused && !s) s = LT_UNSUPPORTED;
    snprintf(msg, sizeof msg, "%s", rc->refused ? rc->refused_msg : s ? lt_errmsg() : "");
    int is_while = 0;
    const char *lead = lt_error_lead(lt_errinfo(), &is_while);
    if (!rc->owned && !rc->refused && !is_while && lead[0])
        snprintf(msg, sizeof msg, "while running %s", lt_errmsg());   /* as the report words it */
    int worst = agree((int)s, &kind, msg, sizeof msg, &from);
    if (from < 0) return s; /* this process's own outcome (or everyone's success) */
    if (kind == 1 && !adopt_checks) return s;   /* another process's failed check: it reports it */
    rc->failed_check = kind == 1;
    if (kind == 2) { /* a refusal stops the case everywhere, as on its process */
        rc->refused = 1;
        snprintf(rc->refused_msg, sizeof rc->refused_msg, "%.480s (on process %d)", msg, from);
    }
    return lt__err((lt_status)worst, "%s (on process %d)", msg, from);
}
