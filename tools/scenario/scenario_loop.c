/* tools/scenario/scenario_loop.c — `repeat:` loops in a scenario's steps.
 *
 *   - repeat: {times: EXPR, as: k, steps: [...]}
 *
 * A loop is unrolled into ordinary steps, so the engine's machinery that
 * works by step index (waiting ranks, catch-up replays, would-hang reports
 * told at a call's step) sees nothing new: iteration k is a copy of the
 * body, parsed with the loop variable bound to k (scenario_expr.c folds it),
 * each of its steps limited to the ranks whose count is above k. A rank
 * that runs fewer iterations makes fewer calls, and the matcher pairs calls
 * by their order on the group (docs/SEMANTICS.md §12).
 *
 * When: a count that reads no value is known at load, and the loop is
 * unrolled there (lt__sc_parse_steps). One that reads shard sizes (numel,
 * shape, rows) stays one `repeat` step; its run evaluates every rank's count
 * on what the rank holds then, parses the copies and splices them after
 * itself into the case's step array, for this run only (sc_loop_run: the
 * case's own array comes back when the run ends, so a second run — a sweep
 * case, --compare-backend — unrolls afresh).
 *
 * Bounds: LT_SC_MAX_LOOP_ITERS iterations per loop, LT_SC_MAX_UNROLLED steps
 * per case with its loops unrolled; both refused before any of it runs (at
 * load, or when the loop's step runs).
 *
 * Names: a name first defined in the body belongs to the iteration (gone
 * after the loop, which may run no iteration on some rank); a name defined
 * before the loop may be given a new value in the body but keeps its kind.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/scenario/scenario_impl.h"

/* A loop as read (arena). One whose count reads values keeps what its body
 * saw at load, for the parse when it runs: the names defined before it and
 * the variables of the loops around it. */
typedef struct {
    int spliced;              /* 0 (a repeat_done starts with 1) */
    const sc_node *key;       /* `repeat` */
    const sc_node *times_at;
    sc_expr *times;
    const char *var;          /* `as`, or NULL */
    const sc_node *body;      /* the steps list */
    sc_sym *syms;             /* (nsyms) the names before the loop (a count that reads values) */
    int *ndims;
    int nsyms;
    sc_loop_var vars[SC_MAX_LOOP_DEPTH];
    int nvars;
    int redistributes, sampled;
} repeat_data;

/* What a loop step's data becomes once spliced in this run (arena), so that
 * a rank catching up the step checks its count instead. */
typedef struct {
    int spliced;              /* 1 */
    const repeat_data *d;
    int64_t *counts;          /* (world) the counts the copies were made for; -1: not known then
                               * (the rank waited in a collective) */
} repeat_done;

/* Steps while they are parsed (v malloc'd); base: the case's other steps. */
typedef struct {
    sc_step *v;
    int n, cap;
    int64_t base;
} step_list;

static lt_status parse_list(sc_parse_ctx *pc, const sc_node *seq, step_list *l);

static lt_status err_pos(const sc_pos *p, const char *msg) {
    return lt__err_at(LT_INVALID, p->file, p->line, p->col, "%s", msg);
}

static lt_status push(step_list *l, const sc_node *at, sc_step **out) {
    if (l->base + l->n >= LT_SC_MAX_UNROLLED)
        return lt__sc_err(
            at, LT_INVALID,
            "steps: the case holds more than %d steps with its loops unrolled (the loader's limit)",
            LT_SC_MAX_UNROLLED);
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        sc_step *v = lt__realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) return lt__err(LT_NOMEM, "out of memory");
        l->v = v;
        l->cap = cap;
    }
    *out = &l->v[l->n++];
    memset(*out, 0, sizeof **out);
    return LT_OK;
}

/* ---- reading a loop ---------------------------------------------------------------- */

static int is_repeat(const sc_node *item) {
    if (item->kind == SC_SCALAR) return item->str && !strcmp(item->str, "repeat");
    for (int i = 0; item->kind == SC_MAP && i < item->n; i++)
        if (!strcmp(item->kids[2 * i]->str, "repeat")) return 1;
    return 0;
}

/* The loop variable `name` (at n) must not hide a name expressions know. */
static lt_status check_var(sc_parse_ctx *pc, const sc_node *n, const char *name) {
    static const char *const taken[] = {"rank",  "world", "min",  "max",
                                        "numel", "shape", "rows", NULL};
    const sc_parse_scope *sc = lt__sc_scope(pc);
    size_t len = strlen(name);
    int clash = lt_mesh_dim_by_name(pc->mesh, name) >= 0 ||
                (len > 5 && !strcmp(name + len - 5, "_size")) ||
                (name[0] == 'd' && len > 1 && strspn(name + 1, "0123456789") == len - 1);
    for (int i = 0; taken[i] && !clash; i++) clash = !strcmp(taken[i], name);
    for (int k = 0; k < sc->nvars && !clash; k++) clash = !strcmp(sc->vars[k].name, name);
    if (clash)
        return lt__sc_err(
            n, LT_INVALID,
            "repeat: as: '%s' already means something in expressions (a built-in name, a mesh dim, "
            "or the variable of a loop around this one); pick another name",
            name);
    if (sc->nvars == SC_MAX_LOOP_DEPTH)
        return lt__sc_err(n, LT_INVALID, "repeat: as: loops with a variable nest at most %d deep",
                          SC_MAX_LOOP_DEPTH);
    return LT_OK;
}

/* The `repeat` item (a mapping with the key repeat) into *out (arena). */
static lt_status read_repeat(sc_parse_ctx *pc, const sc_node *item, repeat_data **out) {
    static const char *const keys[] = {"times", "as", "steps", NULL};
    const sc_node *key = NULL, *body = NULL, *n;
    if (item->kind == SC_SCALAR)
        return lt__sc_err(item, LT_INVALID, "repeat: expected a mapping {times, as, steps}");
    for (int i = 0; i < item->n; i++) {
        const sc_node *k = item->kids[2 * i];
        if (!strcmp(k->str, "repeat")) {
            key = k;
            body = item->kids[2 * i + 1];
        } else if (!strcmp(k->str, "ranks") || !strcmp(k->str, "when")) {
            return lt__sc_err(
                k, LT_INVALID,
                "repeat: cannot take %s: (every rank runs the loop; give a per-rank count "
                "instead, times: \"(rank == 0) * 3\", or put %s: on the body's steps)",
                k->str, k->str);
        } else {
            return lt__sc_err(k, LT_INVALID,
                              "a step is a mapping with one key, the step's name; '%s' is a second "
                              "one beside 'repeat'",
                              k->str);
        }
    }
    if (body->kind != SC_MAP)
        return lt__sc_err(body, LT_INVALID, "repeat: expected a mapping {times, as, steps}, got %s",
                          lt__sc_kind_name(body));
    LT_TRY(lt__sc_keys(body, "repeat", keys));
    repeat_data *d = lt__sc_alloc(pc->arena, sizeof *d);
    if (!d) return LT_NOMEM;
    d->key = key;
    LT_TRY(lt__sc_need(body, "repeat", "times", &d->times_at));
    LT_TRY(lt__sc_expr_parse_pc(pc, d->times_at, 0, "repeat: times", &d->times));
    if ((n = lt__sc_get(body, "as"))) {
        LT_TRY(lt__sc_ident(n, "repeat: as", &d->var));
        LT_TRY(check_var(pc, n, d->var));
    }
    LT_TRY(lt__sc_need(body, "repeat", "steps", &d->body));
    if (d->body->kind != SC_SEQ || d->body->n == 0)
        return lt__sc_err(d->body, LT_INVALID,
                          "repeat: steps: expected a non-empty list of steps, got %s",
                          d->body->kind == SC_SEQ ? "an empty list" : lt__sc_kind_name(d->body));
    *out = d;
    return LT_OK;
}

/* Rank r's count from the value v of times: a whole number in
 * 0..LT_SC_MAX_LOOP_ITERS, else the error at times. */
static lt_status count_of(const repeat_data *d, double v, int r, int64_t *out) {
    char b[48];
    lt__sc_fmt_num(v, b, sizeof b);
    if (v != floor(v) || v < 0)
        return lt__sc_err(d->times_at, LT_INVALID,
                          "repeat: times is %s on rank %d; expected a whole number >= 0", b, r);
    if (v > LT_SC_MAX_LOOP_ITERS)
        return lt__sc_err(d->times_at, LT_INVALID,
                          "repeat: times is %s on rank %d; a loop runs at most %d iterations", b, r,
                          LT_SC_MAX_LOOP_ITERS);
    *out = (int64_t)v;
    return LT_OK;
}

/* ---- unrolling --------------------------------------------------------------------- */

static const char *kind_name(int kind) {
    return kind == SC_FULL      ? "a full tensor"
           : kind == SC_DTENSOR ? "a DTensor"
                                : "a per-rank LocalTensor";
}

static void drop(sc_parse_scope *sc, const char *name, int line) {
    for (int i = 0; i < sc->ndropped; i++)
        if (!strcmp(sc->dropped[i], name)) return;
    if (sc->ndropped == (int)(sizeof sc->dropped / sizeof sc->dropped[0])) return;
    sc->dropped_line[sc->ndropped] = line;
    sc->dropped[sc->ndropped++] = name;
}

void lt__sc_dropped_hint(sc_parse_ctx *pc, const char *name, char *buf, size_t n) {
    const sc_parse_scope *sc = lt__sc_scope(pc);
    buf[0] = '\0';
    for (int i = 0; i < sc->ndropped; i++)
        if (!strcmp(sc->dropped[i], name))
            snprintf(buf, n,
                     "; '%s' belongs to the body of the loop at line %d (a name first defined in a "
                     "loop's "
                     "body ends with it: define it before the loop to keep it)",
                     name, sc->dropped_line[i]);
}

/* After an iteration's parse: the names it defined first are dropped; one
 * defined before the loop (syms[0..nsyms0)) must have kept its kind, and
 * its dims are unknown from here when the body changed them. */
static lt_status end_iteration(sc_parse_ctx *pc, const repeat_data *d, int nsyms0) {
    sc_parse_scope *sc = lt__sc_scope(pc);
    int n = pc->nsyms, w = nsyms0;
    for (int k = nsyms0; k < n; k++) {
        const char *name = pc->syms[k].name;
        int later = 0, kind0 = 0, nd0 = -1;
        for (int j = k + 1; j < n && !later; j++) later = !strcmp(pc->syms[j].name, name);
        for (int j = nsyms0 - 1; j >= 0 && !kind0 && !later; j--)
            if (!strcmp(pc->syms[j].name, name)) kind0 = pc->syms[j].kind, nd0 = sc->ndims[j];
        if (!later && !kind0) drop(sc, name, d->key->line);   /* the iteration's own name */
        if (later || !kind0) continue;   /* a later definition decides */
        if (kind0 != pc->syms[k].kind)
            return lt__sc_err(
                d->key, LT_INVALID,
                "repeat: the body makes '%s' %s, but it is %s before the loop; a name keeps "
                "its kind through a loop (which may run no iteration): give the body's value "
                "another name",
                name, kind_name(pc->syms[k].kind), kind_name(kind0));
        if (nd0 == sc->ndims[k]) continue;
        pc->syms[w].name = name;   /* w <= k: an entry already read */
        pc->syms[w].kind = kind0;
        sc->ndims[w++] = -1;
    }
    pc->nsyms = w;
    return LT_OK;
}

/* Iteration k: the body's steps appended to l, the loop variable bound. */
static lt_status iteration(sc_parse_ctx *pc, const repeat_data *d, int64_t k, int nsyms0,
                           step_list *l) {
    sc_parse_scope *sc = lt__sc_scope(pc);
    if (++sc->iters > LT_SC_MAX_UNROLLED)   /* loops whose bodies make no step still take time */
        return lt__sc_err(
            d->key, LT_INVALID,
            "repeat: the case's loops unroll more than %d iterations (the loader's limit)",
            LT_SC_MAX_UNROLLED);
    if (d->var) sc->vars[sc->nvars++] = (sc_loop_var){d->var, k};
    lt_status st = parse_list(pc, d->body, l);
    if (d->var) sc->nvars--;
    return st ? st : end_iteration(pc, d, nsyms0);
}

/* The body parsed once (iteration 0) and dropped: a loop that may run no
 * iteration is checked like any other. */
static lt_status check_body(sc_parse_ctx *pc, const repeat_data *d, const step_list *l) {
    step_list scratch = {NULL, 0, 0, l->base + l->n};
    int red0 = pc->redistributes;
    lt_status st = iteration(pc, d, 0, pc->nsyms, &scratch);
    pc->redistributes = red0;   /* none of them runs */
    lt__free(scratch.v);
    return st;
}

/* "ranks 0, 2" (the first 8): those whose count is above k. */
static void ranks_str(const int64_t *counts, int world, int64_t k, char *buf, size_t n) {
    char list[128] = "";
    size_t used = 0;
    int count = 0;
    for (int r = 0; r < world; r++)
        if (counts[r] > k && count++ < 8)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d", used ? ", " : "", r);
    snprintf(buf, n, "%s %s%s", count == 1 ? "rank" : "ranks", list, count > 8 ? ", ..." : "");
}

/* Iteration k's steps s[0..n) run on the ranks whose count is above k
 * (and their own ranks: / when:): their masks. Steps every rank runs
 * together cannot be limited: an error when some rank stops before k.
 * *shared: the last iteration mask made (reused while it is the same). */
static lt_status limit(sc_parse_ctx *pc, const repeat_data *d, const int64_t *counts, int64_t k,
                       sc_step *s, int n, const unsigned char **shared) {
    int W = pc->mesh->world, all = 1, same = *shared != NULL;
    for (int r = 0; r < W; r++) {
        all &= counts[r] > k;
        same &= *shared && (*shared)[r] == (counts[r] > k);
    }
    if (all || n == 0) return LT_OK;
    if (!same) {
        unsigned char *m = lt__sc_alloc(pc->arena, (size_t)W);
        if (!m) return LT_NOMEM;
        for (int r = 0; r < W; r++) m[r] = counts[r] > k;
        *shared = m;
    }
    for (int j = 0; j < n; j++) {
        if (!lt__sc_step_is_per_rank(s[j].type)) {
            char who[160], msg[700];
            ranks_str(counts, W, k, who, sizeof who);
            snprintf(msg, sizeof msg,
                     "repeat: '%s' runs on every rank together, but iteration %lld (from 0) of the "
                     "loop at "
                     "line %d runs on %s only (its count differs by rank); such a loop may hold "
                     "only per-rank steps (to_local, "
                     "local_tensor, local_op, collective, send, recv, show, expect_local, "
                     "repeat)",
                     s[j].type->name, (long long)k, d->key->line, who);
            return err_pos(&s[j].pos, msg);
        }
        if (!s[j].mask) {
            s[j].mask = *shared;
            continue;
        }
        unsigned char *m = lt__sc_alloc(pc->arena, (size_t)W);
        if (!m) return LT_NOMEM;
        for (int r = 0; r < W; r++) m[r] = s[j].mask[r] && (*shared)[r];
        s[j].mask = m;
    }
    return LT_OK;
}

/* Appends the copies of d's body for counts (every rank's, -1: none) to l. */
static lt_status unroll(sc_parse_ctx *pc, const repeat_data *d, const int64_t *counts,
                        step_list *l) {
    int64_t n = 0;
    for (int r = 0; r < pc->mesh->world; r++) n = counts[r] > n ? counts[r] : n;
    int nsyms0 = pc->nsyms;
    const unsigned char *shared = NULL;
    for (int64_t k = 0; k < n; k++) {
        int from = l->n;
        LT_TRY(iteration(pc, d, k, nsyms0, l));
        LT_TRY(limit(pc, d, counts, k, l->v ? l->v + from : NULL, l->n - from,
                     &shared)); /* an empty body: no steps */
        int64_t per = l->n - from;
        if (k == 0 && l->base + from + per * n > LT_SC_MAX_UNROLLED)
            return lt__sc_err(
                d->key, LT_INVALID,
                "repeat: %lld iterations of %lld steps make the case %lld steps; a case "
                "holds at most %d with its loops unrolled",
                (long long)n, (long long)per, (long long)(l->base + from + per * n),
                LT_SC_MAX_UNROLLED);
    }
    return LT_OK;
}

/* What a loop whose count reads values keeps for its run-time parse. */
static lt_status snapshot(sc_parse_ctx *pc, repeat_data *d) {
    const sc_parse_scope *sc = lt__sc_scope(pc);
    d->nsyms = pc->nsyms;
    d->syms = lt__sc_alloc(pc->arena, sizeof *d->syms * (size_t)(pc->nsyms + 1));
    d->ndims = lt__sc_alloc(pc->arena, sizeof *d->ndims * (size_t)(pc->nsyms + 1));
    if (!d->syms || !d->ndims) return LT_NOMEM;
    if (pc->nsyms) {
        memcpy(d->syms, pc->syms, sizeof *d->syms * (size_t)pc->nsyms);
        memcpy(d->ndims, sc->ndims, sizeof *d->ndims * (size_t)pc->nsyms);
    }
    d->nvars = sc->nvars;
    memcpy(d->vars, sc->vars, sizeof d->vars);
    d->redistributes = pc->redistributes;
    d->sampled = pc->sampled;
    return LT_OK;
}

static lt_status parse_loop(sc_parse_ctx *pc, const sc_node *item, step_list *l) {
    repeat_data *d = NULL;
    LT_TRY(read_repeat(pc, item, &d));
    int W = pc->mesh->world;
    if (!lt__sc_expr_reads_values(d->times)) {   /* known now: unrolled here */
        int64_t *counts = lt__sc_alloc(pc->arena, sizeof *counts * (size_t)W), n = 0;
        if (!counts) return LT_NOMEM;
        for (int r = 0; r < W; r++) {
            sc_env env;
            double v;
            lt__sc_env_rank(pc->mesh, r, &env);
            LT_TRY(lt__sc_expr_eval(d->times, &env, &v));
            LT_TRY(count_of(d, v, r, &counts[r]));
            n = counts[r] > n ? counts[r] : n;
        }
        return n ? unroll(pc, d, counts, l) : check_body(pc, d, l);
    }
    LT_TRY(snapshot(pc, d));
    LT_TRY(check_body(pc, d, l));
    sc_step *st;
    LT_TRY(push(l, d->key, &st));
    st->type = lt__sc_step_type("repeat");
    st->pos = (sc_pos){d->key->file, d->key->line, d->key->col};
    st->data = d;
    return LT_OK;
}

static lt_status parse_list(sc_parse_ctx *pc, const sc_node *seq, step_list *l) {
    for (int i = 0; i < seq->n; i++) {
        const sc_node *item = seq->kids[i];
        if (is_repeat(item)) {
            LT_TRY(parse_loop(pc, item, l));
            continue;
        }
        sc_step *st;
        LT_TRY(push(l, item, &st));
        LT_TRY(lt__sc_parse_step(pc, item, st));
    }
    return LT_OK;
}

lt_status lt__sc_parse_steps(sc_parse_ctx *pc, const sc_node *seq, sc_step **steps, int *n) {
    step_list l = {NULL, 0, 0, 0};
    lt_status st = parse_list(pc, seq, &l);
    sc_step *out = st ? NULL : lt__sc_alloc(pc->arena, sizeof *out * (size_t)(l.n ? l.n : 1));
    if (!st && !out) st = LT_NOMEM;
    if (!st) {
        if (l.n) memcpy(out, l.v, sizeof *out * (size_t)l.n);
        *steps = out;
        *n = l.n;
    }
    lt__free(l.v);
    return st;
}

/* Reached through the step table only where a steps list does not hold it. */
lt_status lt__sc_parse_repeat(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    (void)st;
    if (pc->in_expect_error)
        return lt__sc_err(
            body, LT_INVALID,
            "expect_error: cannot wrap a repeat (a loop is many steps); wrap a step of its body");
    return lt__sc_err(body, LT_INVALID, "repeat: a loop is an item of a steps list");
}

/* ---- a count known when the loop runs ------------------------------------------------- */

static _Thread_local sc_loop_run *t_run;   /* the run of the case this thread runs */

void lt__sc_loops_begin(sc_loop_run *lr, sc_case *c) {
    memset(lr, 0, sizeof *lr);
    lr->c = c;
    lr->orig = c->steps;
    lr->norig = c->nsteps;
    lr->prev = t_run;
    t_run = lr;
}

void lt__sc_loops_end(sc_loop_run *lr) {
    if (lr->buf) {
        lr->c->steps = lr->orig;
        lr->c->nsteps = lr->norig;
    }
    lt__free(lr->buf);
    for (int i = 0; i < lr->nold; i++) lt__free(lr->old[i]);
    lt__free(lr->old);
    lr->buf = NULL;
    lr->old = NULL;
    lr->nold = 0;
    t_run = lr->prev;
}

/* Inserts add[0..n) after step `at` of the run's steps; step at's data
 * becomes done. Steps up to `at` stay where they are (a running step's
 * pointer stays valid: an array that must grow is kept until the end). */
static lt_status splice(sc_loop_run *lr, int at, const sc_step *add, int n, repeat_done *done) {
    sc_case *c = lr->c;
    int total = c->nsteps + n;
    if (!lr->buf || total > lr->cap) {
        int cap = total + total / 2 + 16;
        sc_step *nb = lt__malloc(sizeof *nb * (size_t)cap);
        sc_step **old =
            lr->buf ? lt__realloc(lr->old, sizeof *old * (size_t)(lr->nold + 1)) : lr->old;
        if (!nb || (lr->buf && !old)) {
            lt__free(nb);
            return lt__err(LT_NOMEM, "out of memory");
        }
        lr->old = old;
        if (lr->buf) lr->old[lr->nold++] = lr->buf;
        memcpy(nb, c->steps, sizeof *nb * (size_t)c->nsteps);
        lr->buf = c->steps = nb;
        lr->cap = cap;
    }
    memmove(&c->steps[at + 1 + n], &c->steps[at + 1],
            sizeof *c->steps * (size_t)(c->nsteps - at - 1));
    if (n) memcpy(&c->steps[at + 1], add, sizeof *add * (size_t)n);
    c->steps[at].data = done;
    c->nsteps = total;
    return LT_OK;
}

/* Every rank's count now (into *out, arena): 0 for ranks the step does not
 * reach (its mask, an ended program); a rank that waits in a collective
 * gets the count of what it holds now (checked again when it catches up,
 * -1 when it cannot be evaluated yet). A running rank whose count cannot be
 * evaluated fails there (rc->failed_rank when it is the only one). */
static lt_status run_counts(sc_run_ctx *rc, const sc_step *st, const repeat_data *d,
                            int64_t **out) {
    const lt_mesh *mesh = rc->c->mesh;
    int64_t *c = lt__sc_alloc(rc->arena, sizeof *c * (size_t)mesh->world);
    if (!c) return LT_NOMEM;
    int nbad = 0, bad = -1;
    lt_status first = LT_OK;
    lt_error saved = {0};   /* the first failing rank's error */
    for (int r = 0; r < mesh->world; r++) {
        c[r] = 0;
        if ((st->mask && !st->mask[r]) || (rc->ended && rc->ended[r])) continue;
        sc_env env;
        double v = 0;
        lt__sc_env_rank(mesh, r, &env);
        lt_status s = lt__sc_expr_eval_rc(d->times, &env, rc, &v);
        if (s && s != LT_NOMEM && rc->blocked && rc->blocked[r]) {
            c[r] = -1;
            lt__err_clear();
            continue;
        }
        if (s == LT_NOMEM) return s;
        if (s && nbad++ == 0) {
            first = s;
            bad = r;
            saved = *lt_errinfo();
        }
        if (!s) LT_TRY(count_of(d, v, r, &c[r]));   /* refused before it runs: the case's error */
    }
    *out = c;
    if (!nbad) return LT_OK;
    rc->failed_rank = nbad == 1 ? bad : -1;
    return lt__err_restore(first, NULL, &saved);
}

/* A context for parsing d's body now, as its loop saw it at load. */
static lt_status scope_from(sc_run_ctx *rc, const repeat_data *d, sc_parse_scope *sc) {
    memset(sc, 0, sizeof *sc);
    sc->pc.arena = rc->arena;
    sc->pc.mesh = rc->c->mesh;
    sc->pc.redistributes = d->redistributes;
    sc->pc.sampled = d->sampled;
    sc->nvars = d->nvars;
    memcpy(sc->vars, d->vars, sizeof sc->vars);
    for (int k = 0; k < d->nsyms; k++)
        LT_TRY(lt__sc_sym_add(&sc->pc, d->syms[k].name, d->syms[k].kind, d->ndims[k]));
    return LT_OK;
}

/* A rank that catches up a spliced loop (its call completed after the
 * others ran the loop) must have the count the copies were made for. */
static lt_status recheck(sc_run_ctx *rc, const sc_step *st, const repeat_done *done) {
    const repeat_data *d = done->d;
    for (int r = 0; r < rc->c->mesh->world; r++) {
        if (!lt__sc_rank_runs(rc, st, r)) continue;
        sc_env env;
        double v;
        int64_t now = 0;
        lt__sc_env_rank(rc->c->mesh, r, &env);
        lt_status s = lt__sc_expr_eval_rc(d->times, &env, rc, &v);
        if (!s) s = count_of(d, v, r, &now);
        if (s) {
            rc->failed_rank = r;
            return s;
        }
        if (done->counts[r] == now) continue;
        char was[64];
        if (done->counts[r] < 0) snprintf(was, sizeof was, "could not be evaluated");
        else snprintf(was, sizeof was, "was %lld", (long long)done->counts[r]);
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: rank %d reaches the loop at %s:%d:%d after waiting "
                            "in a collective; its "
                            "count (times) is %lld now but %s when the other ranks ran the loop, "
                            "which unrolled it then "
                            "(docs/SEMANTICS.md §12)",
                            r, st->pos.file, st->pos.line, st->pos.col, (long long)now, was);
    }
    return LT_OK;
}

lt_status lt__sc_run_repeat(sc_run_ctx *rc, const sc_step *st) {
    if (*(const int *)st->data) return recheck(rc, st, st->data);
    const repeat_data *d = st->data;
    sc_loop_run *lr = t_run;
    int at = rc->step_index;
    if (!lr || lr->c != rc->c || at < 0 || at >= lr->c->nsteps || lr->c->steps[at].data != d)
        return lt__err(LT_INVALID, "internal: the loop at %s:%d runs outside its case's run",
                       st->pos.file, st->pos.line);
    int64_t *counts = NULL, n = 0;
    LT_TRY(run_counts(rc, st, d, &counts));
    repeat_done *done = lt__sc_alloc(rc->arena, sizeof *done);
    if (!done) return LT_NOMEM;
    *done = (repeat_done){1, d, counts};
    for (int r = 0; r < rc->c->mesh->world; r++) n = counts[r] > n ? counts[r] : n;
    step_list l = {NULL, 0, 0, lr->c->nsteps};
    sc_parse_scope sc;
    lt_status s = scope_from(rc, d, &sc);
    if (!s && n) s = unroll(&sc.pc, d, counts, &l);
    if (!s) s = splice(lr, at, l.v, l.n, done);
    lt__free(l.v);
    lt__sc_scope_free(&sc);
    return s;
}
