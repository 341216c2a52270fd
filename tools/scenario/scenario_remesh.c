/* tools/scenario/scenario_remesh.c — the `remesh` step: a DTensor between
 * the case's mesh and that mesh with adjacent dims flattened, through
 * lt_redistribute_remesh (localtensor/remesh.h, docs/SEMANTICS.md §1.1):
 *   remesh: {tensor: w, flatten: {dims: [dp, cp], as: dp_cp}, to: ["S(0)", R], as: wf}
 * puts w on the flattened mesh; without `flatten` the tensor goes back to
 * the case's mesh. Every data move is a verified redistribute. A tensor on
 * the flattened mesh is for expect_local, expect_full, show and remesh. */
#include <string.h>

#include "kernels/status_impl.h"
#include "tools/scenario/scenario_impl.h"

typedef struct {
    const char *tensor, *as;
    lt_mesh *mesh;            /* the flattened mesh; NULL: back to the case's */
    lt_placement *pl;         /* (np) */
    int np;
} remesh_data;

lt_status lt__sc_parse_remesh(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"tensor", "flatten", "to", "as", NULL};
    const sc_node *n, *f;
    LT_TRY(lt__sc_keys(body, "remesh", keys));
    LT__SC_NEW_DATA(remesh_data, d);
    LT_TRY(lt__sc_use(pc, body, "remesh", "tensor", SC_DTENSOR, &d->tensor));
    int ndim = pc->mesh->ndim;
    if ((f = lt__sc_get(body, "flatten"))) {
        if (!(d->mesh = lt__sc_alloc(pc->arena, sizeof *d->mesh))) return LT_NOMEM;
        *d->mesh = *pc->mesh;
        LT_TRY(lt__sc_mesh_flatten(f, d->mesh));
        ndim = d->mesh->ndim;
    }
    LT_TRY(lt__sc_need(body, "remesh", "to", &n));
    LT_TRY(lt__sc_placements_new(pc->arena, n, "remesh: to", &d->pl, &d->np));
    if (d->np != ndim)
        return lt__sc_err(n, LT_INVALID, "remesh: to: %d placement%s for a mesh of %d dims", d->np,
                          d->np == 1 ? "" : "s", ndim);
    return lt__sc_define(pc, body, "remesh", SC_DTENSOR, &d->as);
}

lt_status lt__sc_run_remesh(sc_run_ctx *rc, const sc_step *st) {
    const remesh_data *d = st->data;
    sc_value *v = lt__sc_value(rc, d->tensor);
    const lt_mesh *to = d->mesh ? d->mesh : rc->c->mesh;
    if (lt_mesh_equal(lt_dtensor_mesh(v->dt), to)) {
        char m[256];
        return lt__err(LT_INVALID, "remesh: '%s' is on mesh %s already%s", d->tensor,
                       lt_mesh_format(to, m, sizeof m),
                       d->mesh ? "" : " (without flatten it goes back to the case's mesh)");
    }
    lt_redistribute_opts o;
    memset(&o, 0, sizeof o);
    o.planner = LT_PLANNER_MIN_COST;
    o.verify = 1;
    o.name = d->tensor;
    o.comm = rc->comm;   /* for the step on the case's mesh (remesh.h) */
    rc->did_check = 1;
    lt_dtensor *out = NULL;
    LT_TRY(lt_redistribute_remesh(v->dt, to, d->pl, d->np, &o, &out));
    return lt__sc_put_dtensor(rc, d->as, out, NULL);
}
