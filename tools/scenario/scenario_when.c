/* tools/scenario/scenario_when.c — a `when:` that reads values.
 *
 * `when: "rank == 0"` is known at load: the loader computes the step's mask
 * (scenario_load.c). `when: "rows(xl) > 2"` reads the rank's shard, so it
 * can only be known when the step runs, on what each rank holds then (a
 * rank that skipped the step defining xl uses the shard it kept). Such a
 * step gets a copy of its step type whose run evaluates the condition on
 * every rank that would run the step, then runs the step on those where it
 * holds, with a mask of them, exactly as a step with a load-time mask runs.
 * The step keeps its name, so everything that looks at step names (per-rank
 * steps, expect_error, catch-up replays) sees the same step; a rank that
 * catches up a step evaluates the condition when it gets there. A rank whose
 * condition cannot be evaluated (the name holds no value on it) fails there,
 * like a per-rank step that fails on one rank.
 */
#include <stdio.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/scenario/scenario_impl.h"

typedef struct {
    sc_step_type type;        /* first: st->type points here */
    const sc_step_type *orig;
    const sc_expr *cond;
} sc_when;

static lt_status run_when(sc_run_ctx *rc, const sc_step *st);

lt_status lt__sc_when_wrap(sc_parse_ctx *pc, const sc_step_type *t, const sc_expr *cond,
                           sc_step *st) {
    sc_when *w = lt__sc_alloc(pc->arena, sizeof *w);
    if (!w) return LT_NOMEM;
    w->type = *t;
    w->type.run = run_when;
    w->orig = t;
    w->cond = cond;
    st->type = &w->type;
    st->mask = NULL;   /* a loop around the step may limit it further (scenario_loop.c) */
    return LT_OK;
}

/* The ranks that run st now into m (world bytes): those st->mask allows,
 * not waiting or ended, whose condition holds. A rank whose condition fails
 * to evaluate: its error is returned (rc->failed_rank that rank when it is
 * the only one, the lowest one's message). */
static lt_status eval_mask(sc_run_ctx *rc, const sc_step *st, const sc_when *w, unsigned char *m) {
    const lt_mesh *mesh = rc->c->mesh;
    lt_status first = LT_OK;
    int nbad = 0, bad = -1;
    lt_error saved = {0};   /* the first failing rank's error */
    for (int r = 0; r < mesh->world; r++) {
        m[r] = 0;
        if (!lt__sc_rank_runs(rc, st, r)) continue;
        sc_env env;
        double x = 0;
        lt__sc_env_rank(mesh, r, &env);
        lt_status s = lt__sc_expr_eval_rc(w->cond, &env, rc, &x);
        if (s == LT_NOMEM) return s;
        if (s && nbad++ == 0) {
            first = s;
            bad = r;
            saved = *lt_errinfo();
        }
        m[r] = !s && x != 0;
    }
    if (!nbad) return LT_OK;
    rc->failed_rank = nbad == 1 ? bad : -1;
    return lt__err_restore(first, NULL, &saved);
}

int lt__sc_when_step(const sc_step *st) { return st->type->run == run_when; }

static lt_status run_when(sc_run_ctx *rc, const sc_step *st) {
    const sc_when *w = (const sc_when *)(const void *)st->type;
    unsigned char *m =
        lt__malloc((size_t)rc->c->mesh->world); /* per run: a catch-up may run st inside st */
    if (!m) return lt__err(LT_NOMEM, "out of memory");
    lt_status s = eval_mask(rc, st, w, m);
    sc_step eff = *st;   /* the step itself, limited to the ranks where the condition holds */
    eff.type = w->orig;
    eff.mask = m;
    if (!s) s = lt__sc_note_ran(rc, &eff);
    if (!s) s = w->orig->run(rc, &eff);
    lt__free(m);
    return s;
}
