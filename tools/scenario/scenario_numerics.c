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
static const char *const sampled_steps[] = {"distribute", "redistribute", "show", "mark_comm", "expect_local",
                                            "expect_full", "expect_plan", "expect_comm", "expect_error", NULL};

const char *lt__sc_numerics_name(const sc_run_ctx *rc) {
    static _Thread_local char buf[32];
    return lt_numerics_str(&rc->c->numerics, buf, sizeof buf);
}

lt_status lt__sc_numerics_begin(sc_run_ctx *rc, sc_case *c, sc_arena *arena) {
    rc->nranks = -1;
    if (c->numerics.kind == LT_NUMERICS_FULL) return LT_OK;
    int cap = lt_numerics_count(&c->numerics, c->mesh.world);
    rc->ranks = lt__malloc(sizeof(int) * (size_t)(cap > 0 ? cap : 1));
    int *keep = lt__sc_alloc(arena, sizeof(int) * (size_t)(cap > 0 ? cap : 1));
    if (!rc->ranks || !keep) return lt__err(LT_NOMEM, "out of memory");
    rc->nranks = lt_numerics_ranks(&c->numerics, c->mesh.world, rc->ranks);
    memcpy(keep, rc->ranks, sizeof(int) * (size_t)rc->nranks);
    char rs[256];
    lt_numerics_ranks_str(rc->ranks, rc->nranks, 8, rs, sizeof rs);
    c->res.sampled = keep;
    c->res.nsampled = rc->nranks;
    c->res.numerics = rc->nranks ? lt__sc_printf(arena, "%s: values for rank%s %s", lt__sc_numerics_name(rc), rc->nranks == 1 ? "" : "s", rs)
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
    lt_status s = lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET, "not supported yet: %s in --numerics %s mode", what,
                               lt__sc_numerics_name(rc));
    snprintf(rc->refused_msg, sizeof rc->refused_msg, "%s", lt_errmsg());
    return s;
}

lt_status lt__sc_numerics_gate(sc_run_ctx *rc, const sc_step *st) {
    if (rc->nranks < 0) return LT_OK;
    for (int i = 0; sampled_steps[i]; i++)
        if (!strcmp(sampled_steps[i], st->type->name)) return LT_OK;
    return lt__sc_numerics_refuse(rc,
                                  "'%s' (it needs values of ranks that are not computed; these modes run distribute, "
                                  "redistribute, show, mark_comm, expect_local, expect_full, expect_plan, expect_comm and "
                                  "expect_error)",
                                  st->type->name);
}

lt_status lt__sc_sampled_put(sc_run_ctx *rc, const char *as, lt_dtensor *dt, const lt_sample_src *g,
                             const char *origin) {
    LT_TRY(lt__sc_put_dtensor(rc, as, dt, origin));
    sc_value *v = lt__sc_value(rc, as);
    v->sampled = 1;
    v->gen = *g;
    return LT_OK;
}

lt_status lt__sc_sampled_distribute(sc_run_ctx *rc, const char *tensor, const lt_placement *pl, int np,
                                    const char *as) {
    const sc_case *c = rc->c;
    const sc_tensor_decl *t = NULL;
    for (int i = 0; i < c->ntensors; i++)
        if (!strcmp(c->tensors[i].name, tensor)) t = &c->tensors[i];
    if (!t || t->has_values)
        return lt__sc_numerics_refuse(rc,
                                      "distributing '%s', which is not declared with init: (only values that are a "
                                      "function of the global index can be sampled)",
                                      tensor);
    lt_placement norm[LT_MESH_MAX_DIMS];
    lt_spec spec;
    lt_sample_src g;
    lt_dtensor *dt = NULL;
    LT_TRY(lt_placements_check(&c->mesh, t->ndim, pl, np, norm));
    LT_TRY(lt_spec_make(&c->mesh, t->dtype, t->ndim, t->shape, norm, np, &spec));
    LT_TRY(lt_sample_src_init(&g, &t->init, &spec));
    LT_TRY(lt_dtensor_sample(&spec, &g, rc->ranks, rc->nranks, &dt));
    return lt__sc_sampled_put(rc, as, dt, &g, NULL);
}
