/* tools/scenario/scenario_match.c — collectives of per-rank programs in
 * scenarios (docs/SEMANTICS.md §12), matched rank by rank, and how such a
 * program ends (a would-hang report, a rank that fails while others wait).
 * Per-rank values (to_local, local_tensor) and which steps run rank by rank
 * are in scenario_spmd.c.
 *
 * Steps still run in file order, every rank at the same step; a step with
 * `ranks:` / `when:` runs only on those ranks. A collective step on a
 * LocalTensor (or limited to some ranks, or a barrier) goes through the
 * matcher of collectives_sim/match.h: each rank that runs it posts its own
 * call, with the step's file:line as the call site. A group whose members
 * all posted agreeing calls in this step runs at once; a rank whose group is
 * not complete waits, and skips the later steps while it is blocked in the
 * collective. A rank whose step fails while another waits or has failed
 * ends there (rc->ended); the step runs again on the others. The per-rank
 * program stops with a would-hang report when no rank runs any more, or
 * when the ranks still running reach the end of the steps, a step every
 * rank must run together (distribute, op, permute, ...), or an
 * `expect_error: {hang: ...}` without a step; those ranks then count as
 * finished, each after the last step it ran (lt__sc_note_ran). The report
 * is told at the step of the call it is about; an expect_error with hang:
 * after that step, which no rank reaches, is named first (scenario_hang.c,
 * which also makes the report's JSON for --json).
 * Calls of one group issued by different steps pair by their
 * order on the group, as in a real runtime (a rank-dependent branch): a
 * waiting rank keeps a copy of what it sent (rc->held) and its result goes
 * to its own step's `as`; once its call completes it runs the steps it
 * skipped, alone and in order (catch_up), as its program would after the
 * call returns. Only a step an earlier expect_error wrapped cannot be run
 * again for it (that expect_error has judged every rank); an error says so.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/scenario/scenario_impl.h"

/* ---- matching ----------------------------------------------------------------------- */

static lt_status matched_tail(sc_run_ctx *rc, const sc_step *st, lt_status s);

static lt_status ensure_matcher(sc_run_ctx *rc) {
    if (rc->mt) return LT_OK;
    int W = rc->c->mesh->world;
    if (!rc->blocked) rc->blocked = lt__calloc((size_t)W, 1);
    if (!rc->blocked_step) rc->blocked_step = lt__calloc((size_t)W, sizeof(int));
    if (!rc->held) rc->held = lt__calloc((size_t)W, sizeof *rc->held);
    if (!rc->held_as) rc->held_as = lt__calloc((size_t)W, sizeof *rc->held_as);
    if (!rc->resume) {
        rc->resume = lt__malloc((size_t)W * sizeof *rc->resume);
        for (int r = 0; rc->resume && r < W; r++) rc->resume[r] = -1;
    }
    if (!rc->one) rc->one = lt__calloc((size_t)W, 1);
    if (!rc->ended) rc->ended = lt__calloc((size_t)W, 1);
    if (!rc->ended_step) rc->ended_step = lt__calloc((size_t)W, sizeof(int));
    if (!rc->blocked || !rc->blocked_step || !rc->held || !rc->held_as || !rc->resume || !rc->one ||
        !rc->ended || !rc->ended_step)
        return lt__err(LT_NOMEM, "out of memory");
    return lt_match_new(rc->c->mesh, &rc->mt);
}

/* Drops what waiting rank r sent (its call completed, or the program ended). */
static void drop_held(sc_run_ctx *rc, int r) {
    if (rc->held) {   /* either array may be missing after a failed allocation */
        lt_tensor_free(rc->held[r]);
        rc->held[r] = NULL;
    }
    if (rc->held_as) rc->held_as[r] = NULL;
}

static void matcher_reset(sc_run_ctx *rc) {
    lt_match_free(rc->mt);
    rc->mt = NULL;
    if (rc->blocked) memset(rc->blocked, 0, (size_t)rc->c->mesh->world);
    if (rc->ended) memset(rc->ended, 0, (size_t)rc->c->mesh->world);
    for (int r = 0; rc->held && r < rc->c->mesh->world; r++) drop_held(rc, r);
    for (int r = 0; rc->resume && r < rc->c->mesh->world; r++) rc->resume[r] = -1;
}

void lt__sc_spmd_free(sc_run_ctx *rc) {
    matcher_reset(rc);
    lt__free(rc->blocked);
    lt__free(rc->blocked_step);
    lt__free(rc->held);
    lt__free(rc->held_as);
    lt__free(rc->resume);
    lt__free(rc->one);
    lt__free(rc->ended);
    lt__free(rc->ended_step);
    lt__free(rc->last);
    rc->last = NULL;
    lt__free(rc->carry);
    rc->carry = NULL;
    rc->ncarry = rc->carry_cap = 0;
    rc->ended = NULL;
    rc->ended_step = NULL;
    rc->blocked = NULL;
    rc->blocked_step = NULL;
    rc->held = NULL;
    rc->held_as = NULL;
    rc->resume = NULL;
    rc->one = NULL;
}

/* Rank r's shard of v came from its call of `kind` in the step it waited
 * in (rc->blocked_step[r]; the step an expect_error there wraps): that
 * step is its origin. */
static void set_own_origin(sc_run_ctx *rc, sc_value *v, const char *what, int r) {
    const sc_step *own = &rc->c->steps[rc->blocked_step[r]],
                  *inner = lt__sc_expect_error_inner(own);
    if (inner) own = inner;
    char origin[256];
    snprintf(origin, sizeof origin, "%s at %s:%d:%d", what, own->pos.file, own->pos.line,
             own->pos.col);
    if (v) lt__sc_set_origin_rank(v, rc->c->mesh->world, r, origin);
}

/* Rank r's result of a call made in an earlier step goes to that step's
 * `as` (a LocalTensor since then: the step defined it), its origin that
 * step's call (`what`: "collective all_reduce", "recv"). Takes *t. */
static lt_status put_held_result(sc_run_ctx *rc, const char *what, int r, lt_tensor **t) {
    sc_value *v = rc->held_as[r] ? lt__sc_value(rc, rc->held_as[r]) : NULL;
    if (!v || v->kind != SC_LOCAL || !v->local) {
        lt_tensor_free(*t);
        *t = NULL;
        return lt__err(LT_INVALID, "internal: rank %d's result has no per-rank value '%s' to go to",
                       r, rc->held_as[r] ? rc->held_as[r] : "");
    }
    lt_tensor_free(v->local->shards[r]);
    v->local->shards[r] = *t;
    *t = NULL;
    set_own_origin(rc, v, what, r);
    return LT_OK;
}

/* "collective all_reduce" into buf: what a result's origin names. */
static const char *coll_what(lt_coll kind, char *buf, size_t n) {
    snprintf(buf, n, "collective %s", lt_coll_name(kind));
    return buf;
}

/* The step a report is about: where the failed rank failed, or where the
 * member it names first waits (the first of the cycle); st when unknown. */
static const sc_step *report_step(const sc_run_ctx *rc, const lt_match_report *rep,
                                  const sc_step *st) {
    int r = rep->kind == LT_HANG_CYCLE && rep->ncycle > 0 ? rep->cycle[0] : rep->rank_a;
    if (r < 0 || r >= rc->c->mesh->world) return st;
    if (rep->kind == LT_HANG_RANK_FAILED)
        return rc->ended[r] ? &rc->c->steps[rc->ended_step[r]] : st;
    return rc->blocked[r] ? &rc->c->steps[rc->blocked_step[r]] : st;
}

lt_status lt__sc_program_end(sc_run_ctx *rc, const sc_step *st) {
    return lt__sc_program_end_at(rc, st, NULL);
}

/* Every rank neither waiting nor failed finishes, after the last step it ran. */
static lt_status finish_running(sc_run_ctx *rc) {
    for (int r = 0; r < rc->c->mesh->world; r++) {
        if (rc->blocked[r] || rc->ended[r]) continue;
        sc_pos last = lt__sc_last_step(rc, r);
        LT_TRY(lt_match_finish_at(rc->mt, r, last.file, last.line));
    }
    return LT_OK;
}

/* The whole report (every group with waiting members) as the failure's
 * text, into *out (arena): the expect_error it kept from being reached
 * first (unreached, NULL: none), then the report, then why the running
 * ranks count as finished (together, NULL: they reached the end). */
static lt_status report_text(sc_run_ctx *rc, const lt_match_report *rep, const sc_step *together,
                             const char *unreached, const char **out) {
    char *whole = NULL;
    *out = NULL;
    if (lt_match_report_text(rep, &whole)) return LT_NOMEM;
    size_t len = strlen(whole);
    while (len > 0 && whole[len - 1] == '\n') whole[--len] = '\0';
    const char *head = unreached ? unreached : "", *sep = unreached ? "\n  " : "";
    if (together)
        *out = lt__sc_printf(
            rc->arena,
            "%s%s%s\n  the running ranks stopped at %s at %s:%d:%d (every rank runs that "
            "step together: a rank that waits or failed never reaches it)",
            head, sep, whole, together->type->name, together->pos.file, together->pos.line,
            together->pos.col);
    else
        *out = lt__sc_printf(rc->arena, "%s%s%s", head, sep, whole);
    lt_match_text_free(whole);
    return *out ? LT_OK : lt__err(LT_NOMEM, "out of memory");
}

lt_status lt__sc_program_end_at(sc_run_ctx *rc, const sc_step *st, const sc_step *together) {
    if (!rc->mt) return LT_OK;
    lt_status s = finish_running(rc);
    lt_match_report *rep = NULL;
    if (!s) s = lt_match_check(rc->mt, &rep);
    /* inside expect_error the report is that step's result; else it is
     * told at the step of the call (or failure) it is about */
    const sc_step *at = rep && !rc->capturing ? report_step(rc, rep, st) : st;
    const char *unreached = NULL, *text = NULL, *json = NULL;
    lt_status bad = rep ? lt__sc_unreached(rc, together, &unreached) : LT_OK; /* before the reset */
    matcher_reset(rc);
    if (s == LT_OK || !rep) return s;
    if (!bad) bad = report_text(rc, rep, together, unreached, &text);
    if (!bad) bad = lt__sc_hang_json(rc, rep, &json);
    lt_hang_kind kind = rep->kind;
    lt_match_report_free(rep);
    if (bad) return lt__err(LT_NOMEM, "out of memory");
    rc->hung = 1;
    rc->hang_kind = (int)kind;
    rc->hang_text = text;
    rc->hang_json = json;
    s = lt__sc_check_fail(rc, at, -1, NULL, NULL, NULL, NULL, "%s", text);
    if (!rc->capturing) rc->pending.hang = json;
    return s;
}

/* Rank r's program ends with error st, whose message is lt_errmsg(), in the
 * step running; the error is then cleared (the matcher keeps a copy). */
static lt_status end_rank(sc_run_ctx *rc, int r, lt_status st) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", lt_errmsg());
    lt__err_clear();
    LT_TRY(lt_match_fail(rc->mt, r, st, msg));
    rc->ended[r] = 1;
    rc->ended_step[r] = rc->step_index;
    return LT_OK;
}

/* 1 while some rank can still run (neither waiting nor failed). */
static int any_running(const sc_run_ctx *rc) {
    for (int r = 0; r < rc->c->mesh->world; r++)
        if (!rc->blocked[r] && !rc->ended[r]) return 1;
    return 0;
}

lt_status lt__sc_rank_failed(sc_run_ctx *rc, const sc_step *step, lt_status st) {
    for (;;) {
        int r = rc->failed_rank;
        if (!rc->mt || r < 0 || r >= rc->c->mesh->world || rc->blocked[r] || rc->ended[r] ||
            st == LT_NOMEM || (st == LT_MISMATCH && rc->failed_check) || !lt__sc_any_stopped(rc))
            return st;
        lt_status s = end_rank(rc, r, st);
        if (s) return s;
        /* the step stored nothing: it runs again on the ranks still running */
        st = lt__sc_run_step(rc, step);
        if (st) continue;
        return any_running(rc) ? LT_OK : lt__sc_program_end(rc, step);
    }
}

/* Runs one completed group's collective: on the case's communicator when
 * every group along the mesh dim completes in this step (so expect_comm
 * sees it), else on a communicator of that group alone. */
static lt_status run_coll(lt_comm *cm, int md, lt_coll kind, lt_tensor *const *in, int op, int dim,
                          int concat_dim, int root, const lt_split_rule *rule, lt_tensor **out) {
    switch (kind) {
    case LT_COLL_ALL_REDUCE: return lt_all_reduce(cm, md, in, (lt_redop)op, out);
    case LT_COLL_ALL_GATHER: return lt_all_gather(cm, md, in, dim, out);
    case LT_COLL_REDUCE_SCATTER: return lt_reduce_scatter(cm, md, in, (lt_redop)op, dim, rule, out);
    case LT_COLL_ALL_TO_ALL: return lt_all_to_all(cm, md, in, dim, concat_dim, rule, out);
    case LT_COLL_BROADCAST: return lt_broadcast(cm, md, in, root, out);
    case LT_COLL_SCATTER: return lt_scatter(cm, md, in, root, dim, rule, out);
    case LT_COLL_GATHER: return lt_gather(cm, md, in, root, dim, out);
    case LT_COLL_REDUCE: return lt_reduce_ranks(cm, md, in, root, (lt_redop)op, out);
    case LT_COLL_BARRIER: return lt_barrier(cm, md);
    default: return lt__err(LT_INVALID, "%s cannot be matched rank by rank", lt_coll_name(kind));
    }
}

static int kind_has(lt_coll k, const char *what) {
    switch (what[0]) {
    case 'o': return k == LT_COLL_ALL_REDUCE || k == LT_COLL_REDUCE || k == LT_COLL_REDUCE_SCATTER;
    case 'r':
        return k == LT_COLL_BROADCAST || k == LT_COLL_SCATTER || k == LT_COLL_GATHER ||
               k == LT_COLL_REDUCE;
    case 'd':
        return k == LT_COLL_ALL_GATHER || k == LT_COLL_GATHER || k == LT_COLL_REDUCE_SCATTER ||
               k == LT_COLL_SCATTER || k == LT_COLL_ALL_TO_ALL;
    default: return k == LT_COLL_REDUCE_SCATTER || k == LT_COLL_SCATTER || k == LT_COLL_ALL_TO_ALL;
    }
}

/* Ranks whose call, made in an earlier step, completed in a later one run
 * the steps they skipped while they waited, up to the current step, in
 * order, each on that rank alone: what the rank would have done after its
 * call returned. Such a step may complete further calls (more ranks to
 * catch up) or make the rank wait again (it stops there). Ranks go in
 * passes from the lowest, so the order is fixed. */
/* What catching up found so far: the first rank that failed in a step
 * it caught up with, and how many did. */
typedef struct replay {
    int top;                   /* the step running now */
    int nfailed, first;        /* ranks that failed while catching up; the first */
    lt_status first_st;
    char first_msg[1024];
} replay;

/* Step k (orig) as rank m's catch-up sees it: *run 1 when m runs it
 * alone now (*orig: the step to run, the step an expect_error wraps when
 * it runs now); 0 when m skips it. An error when m cannot (a step every
 * rank runs together, or one an earlier expect_error wraps). */
static lt_status replay_which(sc_run_ctx *rc, const replay *rp, int m, int from, int k,
                              const sc_step **orig, int *run) {
    const sc_step *inner = lt__sc_expect_error_inner(*orig);
    *run = 0;
    if (inner && k == rp->top) {
        *orig = inner;   /* the expect_error running now: its step, on m too */
    } else if (inner || !lt__sc_step_is_per_rank((*orig)->type)) {
        const sc_step *w = inner ? inner : *orig;
        if (!inner && strcmp((*orig)->type->name, "expect_error") &&
            !lt__sc_step_is_per_rank((*orig)->type))
            return lt__err(LT_INVALID, "internal: step at line %d ran while rank %d waited",
                           (*orig)->pos.line, m);
        if (inner && (!w->mask || w->mask[m]) && lt__sc_step_is_per_rank(w->type))
            return lt__err_code(
                LT_UNSUPPORTED, LT_ERR_NOT_YET,
                "not supported yet: rank %d's call at line %d completed in the step at line %d; it "
                "would then run the step that the earlier expect_error at line %d wraps, which a "
                "scenario has already judged for every rank at once (docs/SEMANTICS.md §12)",
                m, rc->c->steps[from].pos.line, rc->c->steps[rp->top].pos.line, (*orig)->pos.line);
        return LT_OK;
    }
    *run = !(*orig)->mask || (*orig)->mask[m];
    return LT_OK;
}

/* The context of an error in a step m caught up with. */
static lt_status replay_ctx(sc_run_ctx *rc, const replay *rp, lt_status s, int m, int from,
                            const sc_step *orig) {
    return lt__err_while(
        s,
        "rank %d ran the step at %s:%d (it waited in the call at line %d, which completed "
        "at line %d)",
        m, orig->pos.file, orig->pos.line, rc->c->steps[from].pos.line,
        rc->c->steps[rp->top].pos.line);
}

/* Runs step k (orig) on rank m alone. A failed check is recorded and m
 * goes on; an error of m's own ends m's program there (*stop). */
static lt_status replay_step(sc_run_ctx *rc, replay *rp, int m, int from, int k,
                             const sc_step *orig, int *stop) {
    sc_step one = *orig;   /* the step, on rank m alone */
    rc->one[m] = 1;
    one.mask = rc->one;
    rc->step_index = k;
    lt_status s = lt__sc_run_step(rc, &one);
    rc->one[m] = 0;
    if (s == LT_MISMATCH && rc->failed_check && !rc->capturing) {
        lt__sc_record_check(rc, 1);
        lt__err_clear();
        return LT_OK;
    }
    if (!s && (one.type->is_check || rc->did_check)) lt__sc_record_check(rc, 0);
    if (!s || (s == LT_MISMATCH && rc->failed_check))
        return s; /* a failed check names its own step */
    s = replay_ctx(rc, rp, s, m, from, orig);
    if (rc->failed_rank != m || s == LT_NOMEM) return s;
    /* m's program ends there; whether that is a rank failure (another rank
     * waits or failed) is known once every rank caught up */
    if (rp->nfailed++ == 0) {
        rp->first_st = s;
        snprintf(rp->first_msg, sizeof rp->first_msg, "%s", lt_errmsg());
        rp->first = m;
    }
    *stop = 1;
    return end_rank(rc, m, s);
}

/* Rank m runs the steps it skipped while it waited, up to the current
 * one, until it waits again or its program ends. */
static lt_status replay_rank(sc_run_ctx *rc, replay *rp, int m) {
    int from = rc->resume[m], stop = 0;
    rc->resume[m] = -1;
    lt_status s = LT_OK;
    for (int k = from + 1; k <= rp->top && !s && !stop && !rc->blocked[m]; k++) {
        const sc_step *orig = &rc->c->steps[k];
        int run;
        s = replay_which(rc, rp, m, from, k, &orig, &run);
        if (!s && run) s = replay_step(rc, rp, m, from, k, orig, &stop);
    }
    return s;
}

static lt_status catch_up(sc_run_ctx *rc) {
    int W = rc->c->mesh->world, stopped_before = 0;
    replay rp = {rc->step_index, 0, -1, LT_OK, ""};
    lt_status s = LT_OK;
    for (int r = 0; r < W; r++) stopped_before |= rc->ended[r];
    rc->replaying = 1;
    /* passes over the ranks, lowest first, until none has steps left to run
     * (a step run here may complete calls of ranks already passed) */
    for (int any = 1; any && !s;) {
        any = 0;
        for (int m = 0; m < W && !s; m++) {
            if (rc->resume[m] < 0) continue;
            any = 1;
            s = replay_rank(rc, &rp, m);
        }
    }
    rc->step_index = rp.top;
    rc->replaying = 0;
    if (s)
        for (int r = 0; r < W; r++)
            rc->resume[r] = -1; /* the case stops: nothing is left to replay */
    if (s || rp.nfailed != 1 || stopped_before) return s;
    /* one rank failed and no other waits or failed: the scenario's error,
     * as for a step that fails with every rank running */
    int others = 0;
    for (int r = 0; r < W; r++) others += rc->blocked[r] || (rc->ended[r] && r != rp.first);
    if (others) return LT_OK;
    /* the per-rank program's state goes, as for any error of a collective
     * step (the case stops, or expect_error goes on) */
    matcher_reset(rc);
    rc->failed_rank = rp.first;
    return lt__err(rp.first_st, "%s", rp.first_msg);
}

/* The tensor dim of a completed group's collective: a negative dim counts
 * from the rank of the first member's input (the members agree on it). */
static int group_dim(lt_coll kind, int dim, lt_tensor *const *in, const int *members, int n) {
    const lt_tensor *t = n > 0 ? in[members[0]] : NULL;
    if (dim >= 0 || kind == LT_COLL_BARRIER || !t) return dim;
    return dim + (t->placeholder ? t->logical_ndim : t->ndim);
}

/* Rank r's call of a collective step into *c, checked on its own
 * (lt_match_validate, and an input that holds no value on r). The non-roots
 * of scatter send nothing; those of broadcast send their tensor when they
 * hold one (its dtype and shape must agree with the root's). */
static lt_status make_call(const sc_run_ctx *rc, const sc_step *st, lt_coll kind,
                           const char *tensor, int md, int op, int dim, int concat_dim, int root,
                           const lt_split_rule *rule, const lt_tensor *in, int r,
                           lt_match_call *c) {
    const lt_mesh *mesh = rc->c->mesh;
    *c = lt_match_call_init(kind, md, st->pos.file, st->pos.line);
    int d = dim, pos = 0;
    lt_mesh_group_of(mesh, md, r, &pos);
    int sends = kind != LT_COLL_BARRIER && !(kind == LT_COLL_SCATTER && pos != root) &&
                !(kind == LT_COLL_BROADCAST && pos != root && (!in || in->placeholder));
    if (kind != LT_COLL_BARRIER) {
        if (sends && in && in->placeholder)
            return lt__err(
                LT_INVALID,
                "%s:%d: rank %d: %s on mesh dim %d: input '%s' holds no value on this rank",
                st->pos.file, st->pos.line, r, lt_coll_name(kind), md, tensor ? tensor : "");
        if (sends) lt_match_call_set_tensor(c, in);
        if (d < 0 && in) d += in->placeholder ? in->logical_ndim : in->ndim;
    }
    if (kind_has(kind, "op")) c->op = op;
    if (kind_has(kind, "root")) c->root = root;
    if (kind_has(kind, "dim")) c->dim = d;
    if (kind == LT_COLL_ALL_TO_ALL) c->concat_dim = concat_dim;
    if (kind_has(kind, "split")) c->rule = rule;
    return lt_match_validate(mesh, r, c);
}

/* One matched collective step in progress (lt__sc_run_matched): its
 * arguments and the per-rank arrays its phases share (all owned here). */
typedef struct mstep {
    sc_run_ctx *rc;
    const sc_step *st;
    lt_coll kind;
    const char *tensor, *as;           /* may be NULL */
    int md, op, dim, concat_dim, root;
    const lt_split_rule *rule;
    int W, ng, n;                      /* world; groups along md; their size */
    int *ready;                        /* (ng) 1: the group's calls all arrived */
    int *members;                      /* (n) scratch: a group's ranks */
    unsigned char
        *posted; /* (W) 1: posted its call in this step; 2: got an earlier call's result */
    lt_tensor **in, **out;             /* (W) what each rank sends; what it gets (owned) */
    int nready;
} mstep;

static lt_status mstep_call(const mstep *m, int r, lt_match_call *c) {
    return make_call(m->rc, m->st, m->kind, m->tensor, m->md, m->op, m->dim, m->concat_dim, m->root,
                     m->rule, m->in[r], r, c);
}

/* A mesh dim out of range: the scenario's mistake when every rank runs the
 * step; while others wait, each rank that runs it fails (docs/SEMANTICS.md
 * §12). */
static lt_status bad_mesh_dim(sc_run_ctx *rc, const sc_step *st, lt_coll kind, int md) {
    const lt_mesh *mesh = rc->c->mesh;
    if (!lt__sc_any_stopped(rc))
        return lt__err_in(LT_INVALID, "collective",
                          " %s: mesh dim %d is out of range for the %d-d mesh", lt_coll_name(kind),
                          md, mesh->ndim);
    for (int r = 0; r < mesh->world; r++) {
        if (!lt__sc_rank_runs(rc, st, r)) continue;
        lt_match_call c = lt_match_call_init(kind, md, st->pos.file, st->pos.line);
        lt_status bad = lt_match_validate(mesh, r, &c);
        LT_TRY(end_rank(rc, r, bad ? bad : LT_INVALID));
    }
    return any_running(rc) ? LT_OK : lt__sc_program_end(rc, st);
}

/* The arrays, and each rank's input (the value named tensor, if any). */
static lt_status mstep_alloc(mstep *m) {
    sc_value *v = m->tensor ? lt__sc_value(m->rc, m->tensor) : NULL;
    m->ready = lt__calloc((size_t)m->ng, sizeof(int));
    m->members = lt__calloc((size_t)m->n, sizeof(int));
    m->posted = lt__calloc((size_t)m->W, 1);
    m->in = lt__calloc((size_t)m->W, sizeof *m->in);
    m->out = lt__calloc((size_t)m->W, sizeof *m->out);
    if (!m->ready || !m->members || !m->posted || !m->in || !m->out)
        return lt__err(LT_NOMEM, "out of memory");
    for (int r = 0; r < m->W && v; r++)
        m->in[r] = v->kind == SC_FULL      ? v->full
                   : v->kind == SC_DTENSOR ? v->dt->local->shards[r]
                                           : v->local->shards[r];
    return LT_OK;
}

/* Each rank's call on its own first: one that is wrong on its own fails
 * on that rank without being issued (docs/SEMANTICS.md §12), unless every
 * rank running the step fails alike with nobody else stopped (the
 * scenario's own mistake: the case's error, returned). */
static lt_status mstep_all_bad(const mstep *m) {
    int nbad = 0, ngood = 0, firstbad = -1;
    for (int r = 0; r < m->W; r++) {
        if (!lt__sc_rank_runs(m->rc, m->st, r)) continue;
        lt_match_call c;
        if (mstep_call(m, r, &c)) {
            if (firstbad < 0) firstbad = r;
            nbad++;
        } else {
            ngood++;
        }
        lt__err_clear();
    }
    if (!nbad || ngood || lt__sc_any_stopped(m->rc)) return LT_OK;
    lt_match_call c;
    return mstep_call(m, firstbad, &c);
}

/* Posts every running rank's call to the matcher (a rank whose call is
 * wrong ends there); marks the groups whose calls all arrived. */
static lt_status mstep_post(mstep *m) {
    sc_run_ctx *rc = m->rc;
    for (int r = 0; r < m->W; r++) {
        if (!lt__sc_rank_runs(rc, m->st, r)) continue;
        lt_match_call c;
        lt_status bad = mstep_call(m, r, &c);
        if (bad) {
            LT_TRY(end_rank(rc, r, bad));
            continue;
        }
        int rdy = 0, g = -1;
        LT_TRY(lt_match_post(rc->mt, r, &c, &rdy, &g));
        rc->blocked[r] = 1;
        rc->blocked_step[r] = rc->step_index;
        m->posted[r] = 1;
        if (rdy) {
            m->ready[g] = 1;
            m->nready++;
        }
    }
    return LT_OK;
}

/* The inputs of the completed groups' members that called in an earlier
 * step (they waited since, send what they held then, and run the steps
 * they skipped afterwards); *uniform: every completed group splits along
 * the same dim (a negative dim counts from each group's own rank), *d its
 * dim. */
static void mstep_gather_inputs(mstep *m, int *d, int *uniform) {
    const lt_mesh *mesh = m->rc->c->mesh;
    *d = INT32_MIN;
    *uniform = 1;
    for (int g = 0; g < m->ng; g++) {
        if (!m->ready[g]) continue;
        lt_mesh_group(mesh, m->md, g, m->members);
        for (int q = 0; q < m->n; q++) {
            int r = m->members[q];
            if (m->posted[r]) continue;
            m->in[r] = m->rc->held[r];
            m->rc->resume[r] = m->rc->blocked_step[r];
        }
        int dn = group_dim(m->kind, m->dim, m->in, m->members, m->n);
        if (*d == INT32_MIN) *d = dn;
        else if (dn != *d) *uniform = 0;
    }
}

/* Runs the completed groups: all at once on the case's communicator when
 * every group completed alike, else group by group on a one-dim
 * communicator shaped like a group. */
static lt_status mstep_run_groups(mstep *m) {
    int d, uniform;
    mstep_gather_inputs(m, &d, &uniform);
    if (m->nready == m->ng && uniform)
        return run_coll(m->rc->comm, m->md, m->kind, m->in, m->op, d, m->concat_dim, m->root,
                        m->rule, m->out);
    lt_comm *gcomm = NULL;
    lt_tensor **gin = lt__calloc((size_t)m->n, sizeof *gin),
              **gout = lt__calloc((size_t)m->n, sizeof *gout);
    lt_mesh m1;
    lt_status s =
        !gin || !gout ? lt__err(LT_NOMEM, "out of memory") : lt_mesh_init(&m1, 1, &m->n, NULL);
    if (!s) s = lt_comm_new(&m1, &gcomm);
    for (int g = 0; g < m->ng && !s; g++) {
        if (!m->ready[g]) continue;
        lt_mesh_group(m->rc->c->mesh, m->md, g, m->members);
        for (int q = 0; q < m->n; q++) gin[q] = m->in[m->members[q]], gout[q] = NULL;
        int dg = group_dim(m->kind, m->dim, m->in, m->members, m->n);
        s = run_coll(gcomm, 0, m->kind, gin, m->op, dg, m->concat_dim, m->root, m->rule, gout);
        for (int q = 0; q < m->n; q++) m->out[m->members[q]] = gout[q];
    }
    lt_comm_free(gcomm);
    lt__free(gin);
    lt__free(gout);
    return s;
}

/* After the groups ran: their members no longer wait (one that called in
 * an earlier step gets its result under that call's name); ranks that
 * wait from this step keep what they sent. */
static lt_status mstep_settle(mstep *m) {
    sc_run_ctx *rc = m->rc;
    char what[64];
    for (int g = 0; g < m->ng; g++) {
        if (!m->ready[g]) continue;
        lt_mesh_group(rc->c->mesh, m->md, g, m->members);
        LT_ASSERT(lt_match_done(rc->mt, m->md, g) == LT_OK);
        for (int q = 0; q < m->n; q++) {
            int r = m->members[q];
            rc->blocked[r] = 0;
            if (!m->posted[r] && m->as && m->out[r] &&
                !(rc->held_as[r] && !strcmp(rc->held_as[r], m->as)))
                LT_TRY(put_held_result(rc, coll_what(m->kind, what, sizeof what), r,
                                       &m->out[r]));
        }
    }
    for (int r = 0; r < m->W; r++)
        if (rc->blocked[r] && m->posted[r]) {
            rc->held_as[r] = m->as;
            if (m->in[r] && !rc->held[r]) LT_TRY(lt_clone(m->in[r], &rc->held[r]));
        }
    return LT_OK;
}

/* The step's value `as`: each rank's result, or for a rank that did not
 * get one what a skipping rank holds (lt__sc_skipped_shard). *res: new. */
static lt_status mstep_result(mstep *m, lt_local **res) {
    LT_TRY(lt_local_new(m->rc->c->mesh, res));
    for (int r = 0; r < m->W; r++) {
        if (m->out[r]) {
            (*res)->shards[r] = m->out[r];
            m->out[r] = NULL;
            if (!m->posted[r]) m->posted[r] = 2;   /* the result of r's call in an earlier step */
        } else {
            LT_TRY(lt__sc_skipped_shard(m->rc, m->as, r, m->in[r], &(*res)->shards[r]));
        }
    }
    return LT_OK;
}

/* Frees the arrays (posted aside: the caller still reads it) and what
 * completed members sent in earlier steps (in[] may point to it until
 * here). */
static void mstep_free(mstep *m) {
    for (int r = 0; m->out && r < m->W; r++) lt_tensor_free(m->out[r]);
    for (int r = 0; r < m->W; r++)
        if (!m->rc->blocked[r]) drop_held(m->rc, r);
    lt__free(m->ready);
    lt__free(m->members);
    lt__free(m->in);
    lt__free(m->out);
}

/* Stores res as the step's value and names where each rank's part came
 * from (a waiting rank's result comes from its own step's call). */
static lt_status mstep_store(mstep *m, lt_local *res) {
    char origin[256], what[64];
    const sc_pos *p = &m->st->pos;
    snprintf(origin, sizeof origin, "collective %s at %s:%d:%d", lt_coll_name(m->kind), p->file,
             p->line, p->col);
    LT_TRY(lt__sc_put_local(m->rc, m->as, res, origin));
    for (int r = 0; r < m->W; r++)
        if (m->posted[r] == 2)
            set_own_origin(m->rc, lt__sc_value(m->rc, m->as),
                           coll_what(m->kind, what, sizeof what), r);
    return LT_OK;
}

/* The calls of one step, posted, matched and the completed groups run. */
static lt_status mstep_exec(mstep *m, lt_local **res) {
    lt_status s = mstep_alloc(m);
    if (!s) s = mstep_all_bad(m);
    if (!s) s = mstep_post(m);
    if (!s && m->nready) s = mstep_run_groups(m);
    if (s)
        s = lt__err_ctx_in(s, "collective", " %s along mesh dim %d%s%s%s", lt_coll_name(m->kind),
                           m->md, m->tensor ? " of '" : "", m->tensor ? m->tensor : "",
                           m->tensor ? "'" : "");
    if (!s) s = mstep_settle(m);
    if (!s && m->as) s = mstep_result(m, res);
    return s;
}

lt_status lt__sc_run_matched(sc_run_ctx *rc, const sc_step *st, lt_coll kind, const char *tensor,
                             int md, int op, int dim, int concat_dim, int root,
                             const lt_split_rule *rule, const char *as) {
    const lt_mesh *mesh = rc->c->mesh;
    LT_TRY(ensure_matcher(rc));
    if (md < 0 || md >= mesh->ndim) return bad_mesh_dim(rc, st, kind, md);
    mstep m = {rc, st, kind, tensor, as, md, op, dim, concat_dim, root, rule, mesh->world,
               lt_mesh_ngroups(mesh, md), mesh->shape[md], NULL, NULL, NULL, NULL, NULL, 0};
    lt_local *res = NULL;
    lt_status s = mstep_exec(&m, &res);
    mstep_free(&m);
    if (!s && res) {
        s = mstep_store(&m, res);
        res = NULL;
    }
    lt__free(m.posted);
    lt_local_free(res);
    return matched_tail(rc, st, s);
}

/* After the calls of step st (status s) were posted and the completed ones
 * ran: ranks whose calls completed catch up, and the program ends when no
 * rank runs any more. */
static lt_status matched_tail(sc_run_ctx *rc, const sc_step *st, lt_status s) {
    if (s) {
        /* the calls posted in this step cannot be completed: drop the per-rank
         * program's state (the case stops, or expect_error goes on from here) */
        matcher_reset(rc);
        return s;
    }
    if (rc->replaying) return LT_OK;   /* the outermost step decides, once every rank caught up */
    s = catch_up(rc);
    if (s)
        return s; /* a rank failed in a step it caught up with: the caller reports it (rank_failed
                     when others wait) */
    /* the outcome is fixed only when no rank runs any more: a rank still
     * running may yet fail, or stop in a group that comes first (docs/SEMANTICS.md §12) */
    if (!any_running(rc)) return lt__sc_program_end(rc, st);
    return LT_OK;
}

/* ---- send and recv (docs/SEMANTICS.md §12) ------------------------------------------------ */

/* One send or recv step in progress (lt__sc_run_p2p); arrays owned here. */
typedef struct pstep {
    sc_run_ctx *rc;
    const sc_step *st;
    const lt_match_call *calls;        /* (W) borrowed */
    lt_tensor *const *in;              /* (W) borrowed: what each sender sends */
    const char *as;                    /* recv: the result's name; send: NULL */
    int W;
    unsigned char *posted;             /* (W) 1: posted its call in this step */
    lt_tensor **out;                   /* (W) owned: what a receiver of this step got */
    int *pairs;                        /* (2W) sender, receiver of each completed pair */
    int npairs;
} pstep;

/* Posts every running rank's call; notes the pairs it completes. */
static lt_status pstep_post(pstep *p) {
    sc_run_ctx *rc = p->rc;
    for (int r = 0; r < p->W; r++) {
        if (!lt__sc_rank_runs(rc, p->st, r)) continue;
        int rdy = 0, q = -1;
        LT_TRY(lt_match_post(rc->mt, r, &p->calls[r], &rdy, &q));
        rc->blocked[r] = 1;
        rc->blocked_step[r] = rc->step_index;
        p->posted[r] = 1;
        if (!rdy) continue;
        int snd = p->calls[r].p2p == LT_P2P_SEND;
        p->pairs[2 * p->npairs] = snd ? r : q;
        p->pairs[2 * p->npairs + 1] = snd ? q : r;
        p->npairs++;
    }
    return LT_OK;
}

/* The completed pairs: the sender's tensor (what it holds since its own
 * step when it posted earlier) sent to the receiver on the case's
 * communicator (lt_send_recv), whose result goes to
 * this step's `as` or, when it posted earlier, to that step's. */
static lt_status pstep_run_pairs(pstep *p) {
    sc_run_ctx *rc = p->rc;
    for (int k = 0; k < p->npairs; k++) {
        int src = p->pairs[2 * k], dst = p->pairs[2 * k + 1];
        const lt_tensor *x = p->posted[src] ? p->in[src] : rc->held[src];
        lt_tensor *t = NULL;
        LT_TRY(lt_send_recv(rc->comm, src, dst, x, &t));   /* over MPI with --engine mpi */
        LT_ASSERT(lt_match_done_p2p(rc->mt, src, dst) == LT_OK);
        rc->blocked[src] = rc->blocked[dst] = 0;
        if (!p->posted[src]) rc->resume[src] = rc->blocked_step[src];
        if (p->posted[dst]) {
            p->out[dst] = t;
            continue;
        }
        rc->resume[dst] = rc->blocked_step[dst];
        LT_TRY(put_held_result(rc, "recv", dst, &t));
    }
    /* ranks that wait from this step keep what they send / where theirs goes */
    for (int r = 0; r < p->W; r++) {
        if (!rc->blocked[r] || !p->posted[r]) continue;
        rc->held_as[r] = p->as;
        if (p->in[r] && !rc->held[r]) LT_TRY(lt_clone(p->in[r], &rc->held[r]));
    }
    for (int r = 0; r < p->W; r++)
        if (!rc->blocked[r]) drop_held(rc, r);
    return LT_OK;
}

/* A recv's value `as`: what each receiver got in this step; the other ranks
 * keep what they held (lt__sc_skipped_shard). */
static lt_status pstep_store(pstep *p) {
    lt_local *l = NULL;
    LT_TRY(lt_local_new(p->rc->c->mesh, &l));
    lt_status s = LT_OK;
    for (int r = 0; r < p->W && !s; r++) {
        if (p->out[r]) {
            l->shards[r] = p->out[r];
            p->out[r] = NULL;
        } else {
            s = lt__sc_skipped_shard(p->rc, p->as, r, NULL, &l->shards[r]);
        }
    }
    if (s) {
        lt_local_free(l);
        return s;
    }
    char origin[256];
    snprintf(origin, sizeof origin, "recv at %s:%d:%d", p->st->pos.file, p->st->pos.line,
             p->st->pos.col);
    return lt__sc_put_local(p->rc, p->as, l, origin);
}

lt_status lt__sc_run_p2p(sc_run_ctx *rc, const sc_step *st, const lt_match_call *calls,
                         lt_tensor *const *in, const char *as) {
    LT_TRY(ensure_matcher(rc));
    int W = rc->c->mesh->world;
    pstep p = {rc, st, calls, in, as, W, lt__calloc((size_t)W, 1),
               lt__calloc((size_t)W, sizeof(lt_tensor *)), lt__calloc((size_t)W * 2, sizeof(int)),
               0};
    lt_status s = p.posted && p.out && p.pairs ? LT_OK : lt__err(LT_NOMEM, "out of memory");
    if (!s) s = pstep_post(&p);
    if (!s) s = pstep_run_pairs(&p);
    if (!s && as) s = pstep_store(&p);
    if (s) s = lt__err_ctx_in(s, st->type->name, "%s", "");
    for (int r = 0; p.out && r < W; r++) lt_tensor_free(p.out[r]);
    lt__free(p.posted);
    lt__free(p.out);
    lt__free(p.pairs);
    return matched_tail(rc, st, s);
}
