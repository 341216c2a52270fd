/* localtensor/plan/plan_text.c — how a plan step is named, in one place.
 *
 * The plan table (lt_plan_format), the executor's error messages, the
 * verifier's reports and the tools all describe a step with these two
 * functions, so a step reads the same everywhere: numbered from 1 as in the
 * table, and named by its collective ("all_gather", "all_gather +
 * index_select") or, without communication, by its local work ("local
 * slice", "local partition").
 */
#include <stdio.h>

#include "localtensor/redistribute.h"

const char *lt_plan_step_action(const lt_plan_step *s, char *buf, size_t n) {
    if (!n) return buf;
    const char *local = s->local_op ? s->local_op : "";
    if (s->comm && local[0]) snprintf(buf, n, "%s + %s", s->collective, local);
    else if (s->comm) snprintf(buf, n, "%s", s->collective);
    else if (local[0]) snprintf(buf, n, "local %s", local);
    else snprintf(buf, n, "no-op");
    return buf;
}

char *lt_plan_step_format(const lt_plan *p, int i, char *buf, size_t n) {
    if (!n) return buf;
    if (!p || i < 0 || i >= p->nsteps) {
        snprintf(buf, n, "the source (before step 1)");
        return buf;
    }
    const lt_plan_step *s = &p->steps[i];
    char f[256], t[256], act[128];
    lt_placement_format(&s->from, f, sizeof f);
    lt_placement_format(&s->to, t, sizeof t);
    if (s->mesh_span > 1)   /* a flattened group (--moves all): its first mesh dim's placements */
        snprintf(buf, n, "step %d of %d (mesh dims %d..%d flattened: %s -> %s on mesh dim %d, %s)",
                 i + 1, p->nsteps, s->mesh_dim, s->mesh_dim + s->mesh_span - 1, f, t, s->mesh_dim,
                 lt_plan_step_action(s, act, sizeof act));
    else
        snprintf(buf, n, "step %d of %d (mesh dim %d: %s -> %s, %s)", i + 1, p->nsteps,
                 s->mesh_dim, f, t, lt_plan_step_action(s, act, sizeof act));
    return buf;
}
