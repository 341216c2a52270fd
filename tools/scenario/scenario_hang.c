/* tools/scenario/scenario_hang.c — a per-rank program's would-hang report as
 * a scenario failure (docs/SEMANTICS.md §12): its JSON object for --json,
 * and the line that names an expect_error the stop kept every rank from
 * reaching. The report itself is collectives_sim/match.c's; the program's
 * end, which calls these, is scenario_match.c's.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "kernels/status_impl.h"
#include "tools/render/json_alloc.h"
#include "tools/scenario/scenario_impl.h"

/* ---- JSON ------------------------------------------------------------------------------ */

static cJSON *at_json(const char *file, int line) {
    char at[1100];
    snprintf(at, sizeof at, "%s:%d", file, line);
    return cJSON_CreateString(at);
}

/* "shape": a status as expect_error's status: names it */
static cJSON *status_json(lt_status st) {
    static const char *const keys[] = {
#define LT__XX(name, str) #name,
        LT_STATUS_MAP(LT__XX)
#undef LT__XX
    };
    char k[16] = "?";
    if ((int)st >= 0 && st < LT_STATUS_COUNT)
        for (size_t i = 0; i + 1 < sizeof k; i++)
            if (!(k[i] = (char)tolower((unsigned char)keys[st][i]))) break;
    return cJSON_CreateString(k);
}

/* Where rank q is, seen from stuck group s: {"rank", "state", "call", "at", ...}. */
static cJSON *member_json(const lt_match_report *r, int q, const lt_match_stuck *s) {
    const lt_match_where *w = &r->ranks[q];
    int here =
        w->state == LT_RANK_WAITING && w->call.mesh_dim == s->mesh_dim && w->group == s->group;
    const char *state = w->state == LT_RANK_FINISHED  ? "finished"
                        : w->state == LT_RANK_FAILED  ? "failed"
                        : w->state == LT_RANK_RUNNING ? "running"
                        : here                        ? "waiting"
                                                      : "waiting_elsewhere";
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    lt__json_put(j, "rank", cJSON_CreateNumber(lt_mesh_rank_id(&r->mesh, q)));   /* the id */
    lt__json_put(j, "state", cJSON_CreateString(state));
    if (w->state == LT_RANK_WAITING) {
        lt__json_put(j, "call", cJSON_CreateString(w->desc ? w->desc : "?"));
        if (w->call.file) lt__json_put(j, "at", at_json(w->call.file, w->call.line));
        if (!here) {   /* the group it waits in instead */
            lt__json_put(j, "mesh_dim", cJSON_CreateNumber(w->call.mesh_dim));
            lt__json_put(j, "group", cJSON_CreateNumber(w->group));
        }
    } else if (w->state == LT_RANK_FINISHED && w->last_file) {
        lt__json_put(j, "at", at_json(w->last_file, w->last_line));
    } else if (w->state == LT_RANK_FAILED) {
        lt__json_put(j, "status", status_json(w->status));
    }
    return j;
}

static cJSON *group_json(const lt_match_report *r, const lt_match_stuck *s) {
    cJSON *g = cJSON_CreateObject();
    if (!g) return NULL;
    const char *name = r->mesh.names[s->mesh_dim];
    lt__json_put(g, "mesh_dim", cJSON_CreateNumber(s->mesh_dim));
    lt__json_put(g, "mesh_dim_name", name[0] ? cJSON_CreateString(name) : cJSON_CreateNull());
    lt__json_put(g, "group", cJSON_CreateNumber(s->group));
    cJSON *ranks = cJSON_AddArrayToObject(g, "ranks");
    for (int p = 0; ranks && p < s->size; p++)
        lt__json_push(ranks, cJSON_CreateNumber(lt_mesh_rank_id(&r->mesh, s->members[p])));
    lt__json_put(g, "call", cJSON_CreateNumber((double)s->seq + 1));
    cJSON *mem = cJSON_AddArrayToObject(g, "members");
    for (int p = 0; mem && p < s->size; p++) lt__json_push(mem, member_json(r, s->members[p], s));
    return g;
}

/* Ranks waiting in a send or recv: [{"rank", "call", "at", "peer", "peer_state"}]. */
static void p2p_json(cJSON *h, const lt_match_report *r) {
    cJSON *ps = NULL;
    for (int q = 0; q < r->world; q++) {
        const lt_match_where *w = &r->ranks[q];
        if (w->state != LT_RANK_WAITING || !w->call.p2p) continue;
        if (!ps && !(ps = cJSON_AddArrayToObject(h, "p2p"))) return;
        cJSON *j = cJSON_CreateObject();
        if (!j) return;
        int peer = lt_mesh_pos_of(&r->mesh, w->call.peer);
        lt_rank_state pst = peer >= 0 ? r->ranks[peer].state : LT_RANK_FINISHED;
        lt__json_put(j, "rank", cJSON_CreateNumber(lt_mesh_rank_id(&r->mesh, q)));
        lt__json_put(j, "call", cJSON_CreateString(w->desc ? w->desc : "?"));
        if (w->call.file) lt__json_put(j, "at", at_json(w->call.file, w->call.line));
        lt__json_put(j, "peer", cJSON_CreateNumber(w->call.peer));
        lt__json_put(j, "peer_state", cJSON_CreateString(pst == LT_RANK_FINISHED ? "finished"
                                                         : pst == LT_RANK_FAILED ? "failed"
                                                         : pst == LT_RANK_WAITING ? "waiting"
                                                                                  : "running"));
        lt__json_push(ps, j);
    }
}

/* {"kind", "groups": [the report's group first, then the others in order], "p2p"?,
 * "cycle"?} */
static cJSON *report_json(const lt_match_report *r) {
    cJSON *h = cJSON_CreateObject();
    if (!h) return NULL;
    lt__json_put(h, "kind", cJSON_CreateString(lt_hang_kind_name(r->kind)));
    cJSON *gs = cJSON_AddArrayToObject(h, "groups");
    if (gs && r->focus >= 0 && r->focus < r->nstuck)
        lt__json_push(gs, group_json(r, &r->stuck[r->focus]));
    for (int i = 0; gs && i < r->nstuck; i++)
        if (i != r->focus) lt__json_push(gs, group_json(r, &r->stuck[i]));
    p2p_json(h, r);
    if (r->kind == LT_HANG_CYCLE) {
        cJSON *cy = cJSON_AddArrayToObject(h, "cycle");
        for (int i = 0; cy && i < r->ncycle; i++)
            lt__json_push(cy, cJSON_CreateNumber(lt_mesh_rank_id(&r->mesh, r->cycle[i])));
    }
    return h;
}

lt_status lt__sc_hang_json(sc_run_ctx *rc, const lt_match_report *rep, const char **out) {
    *out = NULL;
    if (!rc->c->record_plans) return LT_OK;   /* no --json */
    if (!rc->plans) lt__json_begin(); /* else the plans' document is being built: keep its flag */
    cJSON *h = report_json(rep);
    char *text = h && !lt__json_failed() ? cJSON_PrintUnformatted(h) : NULL;
    cJSON_Delete(h);
    *out = text ? lt__sc_strdup(rc->arena, text) : NULL;
    cJSON_free(text);
    return *out ? LT_OK
                : lt__err(LT_NOMEM,
                          "out of memory while recording the would-hang report for --json");
}

/* ---- an expect_error no rank reached ------------------------------------------------------ */

#define MAX_PLACES 8   /* places named; the others counted */
#define MAX_RUNS 8     /* runs of ranks named in one place */

enum { BLOCKED, FAILED, STOPPED };
static const char *const state_word[] = {"blocked", "failed", "stopped"};

/* Where a rank stopped: its waiting call, the step it failed in, or (a
 * running rank) the step every rank runs together that it reached. */
typedef struct {
    int state;
    const char *file;
    int line;
} place;

static place place_of(const sc_run_ctx *rc, int r, const sc_step *together) {
    place p = {STOPPED, NULL, 0};
    if (rc->blocked[r]) {
        const lt_match_call *c = lt_match_pending(rc->mt, r);
        p.state = BLOCKED;
        p.file = c ? c->file : NULL;
        p.line = c ? c->line : 0;
    } else if (rc->ended[r]) {
        const sc_step *st = &rc->c->steps[rc->ended_step[r]],
                      *inner = lt__sc_expect_error_inner(st);
        p.state = FAILED;
        p.file = (inner ? inner : st)->pos.file;
        p.line = (inner ? inner : st)->pos.line;
    } else {
        sc_pos at = together ? together->pos : lt__sc_last_step(rc, r);
        p.file = at.file;
        p.line = at.line;
    }
    return p;
}

static int same(place a, place b) {
    return a.state == b.state && a.line == b.line &&
           (a.file == b.file || (a.file && b.file && !strcmp(a.file, b.file)));
}

static void put_place(lt__sbuf *o, place p) {
    lt__sb_printf(o, "%s:%d", p.file ? p.file : "?", p.line);
}

/* "ranks 0-2, 5" of the ranks at place p (ascending), the first MAX_RUNS runs named */
static void put_ranks_at(lt__sbuf *o, const sc_run_ctx *rc, const sc_step *together, place p) {
    int W = rc->c->mesh->world, n = 0, runs = 0, a = -1, b = -1;
    for (int r = 0; r < W; r++) n += same(place_of(rc, r, together), p);
    lt__sb_printf(o, "%s ", n == 1 ? "rank" : "ranks");
    for (int r = 0; r <= W; r++) {
        int in = r < W && same(place_of(rc, r, together), p);
        if (in && a >= 0 && b == r - 1) {
            b = r;
            continue;
        }
        if (a >= 0 && runs++ < MAX_RUNS) {
            lt__sb_printf(o, "%s%d", runs > 1 ? ", " : "", a);
            if (b > a) lt__sb_printf(o, "%s%d", b == a + 1 ? ", " : "-", b);
        }
        a = b = in ? r : -1;
    }
    if (runs > MAX_RUNS) lt__sb_printf(o, ", ... (%d ranks in all)", n);
}

/* "every rank blocked at F:6" / "every rank blocked or failed at F:6 (ranks 0-2
 * blocked) and F:9 (rank 3 failed)": where each rank stopped, places in the
 * order of their lowest rank. */
static void put_stops(lt__sbuf *o, const sc_run_ctx *rc, const sc_step *together) {
    place ps[MAX_PLACES];
    int np = 0, more = 0, states = 0, W = rc->c->mesh->world;
    for (int r = 0; r < W; r++) {
        place p = place_of(rc, r, together);
        int k = 0;
        while (k < np && !same(ps[k], p)) k++;
        if (k < np) continue;
        if (np < MAX_PLACES) ps[np++] = p;
        else more = 1;   /* a place beyond the named ones */
        states |= 1 << p.state;
    }
    int nstates = 0;
    lt__sb_printf(o, "every rank ");
    for (int k = BLOCKED; k <= STOPPED; k++)
        if (states & (1 << k)) lt__sb_printf(o, "%s%s", nstates++ ? " or " : "", state_word[k]);
    lt__sb_printf(o, " at ");
    for (int k = 0; k < np; k++) {
        lt__sb_printf(o, "%s", k == 0 ? "" : k == np - 1 && !more ? " and " : ", ");
        put_place(o, ps[k]);
        if (np == 1 && !more) break;
        lt__sb_printf(o, " (");
        put_ranks_at(o, rc, together, ps[k]);
        lt__sb_printf(o, "%s%s)", nstates > 1 ? " " : "",
                      nstates > 1 ? state_word[ps[k].state] : "");
    }
    if (more) lt__sb_printf(o, " and elsewhere");
}

lt_status lt__sc_unreached(sc_run_ctx *rc, const sc_step *together, const char **out) {
    *out = NULL;
    if (rc->capturing || !rc->mt) return LT_OK;   /* inside expect_error: that one is reached */
    const sc_step *ee = NULL;
    for (int i = rc->step_index + 1; i < rc->c->nsteps && !ee; i++)
        if (lt__sc_expect_error_hang(&rc->c->steps[i]) >= 0) ee = &rc->c->steps[i];
    if (!ee) return LT_OK;
    lt__sbuf o = {NULL, 0, 0};
    for (int pass = 0; pass < 2; pass++) {
        lt__sb_printf(&o, "expect_error at %s:%d:%d not reached: ", ee->pos.file, ee->pos.line,
                      ee->pos.col);
        put_stops(&o, rc, together);
        size_t need = lt__sb_finish(&o);
        if (pass) break;
        char *buf = lt__sc_alloc(rc->arena, need + 1);
        if (!buf) return lt__err(LT_NOMEM, "out of memory");
        o = (lt__sbuf){buf, need + 1, 0};
    }
    *out = o.buf;
    return LT_OK;
}
