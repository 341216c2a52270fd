/* collectives_sim/program.c — the per-rank program runner (program.h).
 *
 * The caller's context is the scheduler. It keeps a FIFO of runnable ranks
 * and runs each, on its fiber, until the rank issues a collective or
 * returns. The rank leaves its call in its lt_proc record; the scheduler
 * posts it to the matcher (match.h) and, when that completes the group's
 * call, runs the collective on its own (large) stack with a one-dim
 * communicator shaped like the group, hands each member its result and
 * queues the members again in group order. A send and its recv, once both
 * are posted and agree, complete together: the scheduler copies the
 * sender's tensor to the receiver and queues both (the lower rank first).
 * When the FIFO is empty no rank
 * can run: either all returned, or the matcher's report says why the rest
 * wait. Then the waiting ranks are resumed with a failing call so that their
 * functions unwind, and the run returns the report.
 *
 * Invariant: exactly one of {scheduler, one rank} runs; `cur` names it.
 */
#include "localtensor/collectives_sim/program.h"
#include "kernels/alloc.h"

#include <string.h>

#include "localtensor/collectives_sim/collectives.h"
#include "collectives_sim/fiber_impl.h"
#include "kernels/status_impl.h"

#if defined(__SANITIZE_ADDRESS__)
#define STACK_SCALE 4
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STACK_SCALE 4
#endif
#endif
#ifndef STACK_SCALE
#define STACK_SCALE 1
#endif

typedef struct prog prog;

struct lt_proc {
    prog *pg;
    int rank;
    int coord[LT_MESH_MAX_DIMS];
    const char *label;
    /* the call in flight (set by the rank, read by the scheduler) */
    lt_match_call call;
    const lt_tensor *in;
    lt_tensor **out;
    lt_status result;          /* set by the scheduler before resuming the rank */
    char *result_msg;          /* owned; the message of a failed result */
    /* the end */
    int ended;
    lt_status fn_st;
    char *msg;                 /* owned; fn's message when it failed */
};

struct prog {
    lt_mesh mesh;
    lt_proc_fn fn;
    void *user;
    lt__fibers *fib;
    lt_match *mt;
    lt_proc *procs;            /* (world) */
    int *queue;                /* (world) ring of runnable ranks */
    int qhead, qlen;
    int cur;                   /* running rank; -1: the scheduler */
    lt_comm *comm[LT_MESH_MAX_DIMS]; /* one-dim communicator of each mesh dim's group size */
    lt_tensor **in, **out;     /* (largest group) arguments of one group's collective */
    int *members;              /* (largest group) */
    int stopped;               /* the run stopped: every call fails with stop_why */
    char stop_why[160];
    char fatal_msg[256];       /* what made drain() fail */
};

/* ---- queue --------------------------------------------------------------------- */

static void push(prog *g, int r) {
    g->queue[(g->qhead + g->qlen) % g->mesh.world] = r;
    g->qlen++;
}

static int pop(prog *g) {
    int r = g->queue[g->qhead];
    g->qhead = (g->qhead + 1) % g->mesh.world;
    g->qlen--;
    return r;
}

/* ---- the rank side ------------------------------------------------------------------ */

static void rank_main(void *arg) {
    lt_proc *p = arg;
    prog *g = p->pg;
    lt_status st = g->fn(p, g->user);
    p->fn_st = st;
    if (st != LT_OK) p->msg = lt__strdup(lt_errmsg()); /* NULL on NOMEM: reported without text */
    p->ended = 1;
    lt__fiber_exit(g->fib, p->rank, -1);
}

static lt_status bad_handle(const lt_proc *p, const char *file, int line) {
    if (!p) return lt__err(LT_INVALID, "%s:%d: the rank handle is NULL", file ? file : "?", line);
    return lt__err(LT_INVALID,
                   "%s:%d: rank %d's handle used while rank %d runs (a handle is valid only in "
                   "its own rank's function, during the run)",
                   file ? file : "?", line, p->rank, p->pg->cur);
}

/* "all_reduce on mesh dim 0", "send(to=2)" into buf (messages). */
static const char *call_what(const lt_match_call *c, char *buf, size_t cap) {
    if (c->p2p == LT_P2P_SEND) snprintf(buf, cap, "send(to=%d)", c->peer);
    else if (c->p2p == LT_P2P_RECV) snprintf(buf, cap, "recv(from=%d)", c->peer);
    else snprintf(buf, cap, "%s on mesh dim %d", lt_coll_name(c->kind), c->mesh_dim);
    return buf;
}

/* Issues c from rank p and waits for its completion (or the run's stop). */
static lt_status issue(lt_proc *p, lt_match_call *c, const lt_tensor *in, lt_tensor **out) {
    if (!p || p->pg->cur != p->rank) return bad_handle(p, c->file, c->line);
    prog *g = p->pg;
    char what[96];
    c->label = p->label;
    if (g->stopped)
        return lt__err(LT_MISMATCH, "%s:%d: rank %d: %s not issued: %s", c->file ? c->file : "?",
                       c->line, p->rank, call_what(c, what, sizeof what), g->stop_why);
    LT_TRY(lt_match_validate(&g->mesh, p->rank, c));
    if (c->kind != LT_COLL_BARRIER && c->p2p != LT_P2P_SEND && !out)
        return lt__err(LT_INVALID, "%s:%d: rank %d: %s: the output pointer is NULL",
                       c->file ? c->file : "?", c->line, p->rank, call_what(c, what, sizeof what));
    if (c->p2p == LT_P2P_RECV && *out && !lt_is_contiguous(*out))
        return lt__err(LT_INVALID, "%s:%d: rank %d: %s: the preallocated output is not contiguous",
                       c->file ? c->file : "?", c->line, p->rank, call_what(c, what, sizeof what));
    p->call = *c;
    p->in = in;
    p->out = out;
    p->result = LT_OK;
    lt__fiber_switch(g->fib, p->rank, -1);
    if (p->result == LT_OK) return LT_OK;
    lt_status st =
        lt__err(p->result, "%s", p->result_msg ? p->result_msg : "the collective failed");
    lt__free(p->result_msg);
    p->result_msg = NULL;
    return st;
}

static lt_match_call mk(lt_coll kind, int md, const char *file, int line, const lt_tensor *in) {
    lt_match_call c = lt_match_call_init(kind, md, file, line);
    lt_match_call_set_tensor(&c, in);
    return c;
}

lt_status lt_proc_all_reduce_at(lt_proc *p, const char *file, int line, int mesh_dim,
                                const lt_tensor *in, lt_redop op, lt_tensor **out) {
    lt_match_call c = mk(LT_COLL_ALL_REDUCE, mesh_dim, file, line, in);
    c.op = (int)op;
    return issue(p, &c, in, out);
}

lt_status lt_proc_all_gather_at(lt_proc *p, const char *file, int line, int mesh_dim,
                                const lt_tensor *in, int dim, lt_tensor **out) {
    lt_match_call c = mk(LT_COLL_ALL_GATHER, mesh_dim, file, line, in);
    c.dim = dim;
    return issue(p, &c, in, out);
}

lt_status lt_proc_reduce_scatter_at(lt_proc *p, const char *file, int line, int mesh_dim,
                                    const lt_tensor *in, lt_redop op, int dim,
                                    const lt_split_rule *rule, lt_tensor **out) {
    lt_match_call c = mk(LT_COLL_REDUCE_SCATTER, mesh_dim, file, line, in);
    c.op = (int)op;
    c.dim = dim;
    c.rule = rule;
    return issue(p, &c, in, out);
}

lt_status lt_proc_all_to_all_at(lt_proc *p, const char *file, int line, int mesh_dim,
                                const lt_tensor *in, int split_dim, int concat_dim,
                                const lt_split_rule *rule, lt_tensor **out) {
    lt_match_call c = mk(LT_COLL_ALL_TO_ALL, mesh_dim, file, line, in);
    c.dim = split_dim;
    c.concat_dim = concat_dim;
    c.rule = rule;
    return issue(p, &c, in, out);
}

lt_status lt_proc_broadcast_at(lt_proc *p, const char *file, int line, int mesh_dim,
                               const lt_tensor *in, int root, lt_tensor **out) {
    lt_match_call c = mk(LT_COLL_BROADCAST, mesh_dim, file, line, in);
    c.root = root;
    return issue(p, &c, in, out);
}

lt_status lt_proc_scatter_at(lt_proc *p, const char *file, int line, int mesh_dim,
                             const lt_tensor *in, int root, int dim, const lt_split_rule *rule,
                             lt_tensor **out) {
    lt_match_call c = mk(LT_COLL_SCATTER, mesh_dim, file, line, in);
    c.root = root;
    c.dim = dim;
    c.rule = rule;
    return issue(p, &c, in, out);
}

lt_status lt_proc_gather_at(lt_proc *p, const char *file, int line, int mesh_dim,
                            const lt_tensor *in, int root, int dim, lt_tensor **out) {
    lt_match_call c = mk(LT_COLL_GATHER, mesh_dim, file, line, in);
    c.root = root;
    c.dim = dim;
    return issue(p, &c, in, out);
}

lt_status lt_proc_reduce_at(lt_proc *p, const char *file, int line, int mesh_dim,
                            const lt_tensor *in, int root, lt_redop op, lt_tensor **out) {
    lt_match_call c = mk(LT_COLL_REDUCE, mesh_dim, file, line, in);
    c.root = root;
    c.op = (int)op;
    return issue(p, &c, in, out);
}

lt_status lt_proc_send_at(lt_proc *p, const char *file, int line, const lt_tensor *t, int to) {
    lt_match_call c = lt_match_call_p2p(LT_P2P_SEND, to, file, line);
    lt_match_call_set_tensor(&c, t);
    return issue(p, &c, t, NULL);
}

lt_status lt_proc_recv_at(lt_proc *p, const char *file, int line, int from, lt_tensor **out) {
    lt_match_call c = lt_match_call_p2p(LT_P2P_RECV, from, file, line);
    if (out) lt_match_call_set_tensor(&c, *out);   /* a preallocated output declares */
    return issue(p, &c, NULL, out);
}

lt_status lt_proc_barrier_at(lt_proc *p, const char *file, int line, int mesh_dim) {
    lt_match_call c = lt_match_call_init(LT_COLL_BARRIER, mesh_dim, file, line);
    return issue(p, &c, NULL, NULL);
}

/* ---- queries -------------------------------------------------------------------------- */

int lt_proc_rank(const lt_proc *p) { return p ? lt_mesh_rank_id(&p->pg->mesh, p->rank) : -1; }
int lt_proc_world(const lt_proc *p) { return p ? p->pg->mesh.world : -1; }
const lt_mesh *lt_proc_mesh(const lt_proc *p) { return p ? &p->pg->mesh : NULL; }
static int dim_ok(const lt_proc *p, int d) { return p && d >= 0 && d < p->pg->mesh.ndim; }
int lt_proc_coord(const lt_proc *p, int d) { return dim_ok(p, d) ? p->coord[d] : -1; }
int lt_proc_group(const lt_proc *p, int d) {
    return dim_ok(p, d) ? lt_mesh_group_of(&p->pg->mesh, d, p->rank, NULL) : -1;
}
int lt_proc_group_size(const lt_proc *p, int d) { return dim_ok(p, d) ? p->pg->mesh.shape[d] : -1; }
void lt_proc_set_label(lt_proc *p, const char *label) {
    if (p) p->label = label;
}

/* ---- the scheduler side -------------------------------------------------------------------- */

/* Runs the completed call of group `grp` along mesh dim d and resumes its
 * members (queued in group order) with their results. */
static void run_group(prog *g, int d, int grp) {
    int n = g->mesh.shape[d];
    lt_mesh_group(&g->mesh, d, grp, g->members);
    for (int q = 0; q < n; q++) {
        lt_proc *m = &g->procs[g->members[q]];
        g->in[q] = (lt_tensor *)(uintptr_t)
                       m->in; /* the collectives take const inputs through a non-const array */
        g->out[q] = m->out ? *m->out : NULL;
    }
    const lt_match_call *c = &g->procs[g->members[0]].call;
    lt_comm *cm = g->comm[d];
    lt_tensor *const *in = g->in;
    lt_tensor **out = g->out;
    lt_redop op = (lt_redop)c->op;
    lt_status st;
    switch (c->kind) {
    case LT_COLL_ALL_REDUCE: st = lt_all_reduce(cm, 0, in, op, out); break;
    case LT_COLL_ALL_GATHER: st = lt_all_gather(cm, 0, in, c->dim, out); break;
    case LT_COLL_REDUCE_SCATTER: st = lt_reduce_scatter(cm, 0, in, op, c->dim, c->rule, out); break;
    case LT_COLL_ALL_TO_ALL:
        st = lt_all_to_all(cm, 0, in, c->dim, c->concat_dim, c->rule, out);
        break;
    case LT_COLL_BROADCAST: st = lt_broadcast(cm, 0, in, c->root, out); break;
    case LT_COLL_SCATTER: st = lt_scatter(cm, 0, in, c->root, c->dim, c->rule, out); break;
    case LT_COLL_GATHER: st = lt_gather(cm, 0, in, c->root, c->dim, out); break;
    case LT_COLL_REDUCE: st = lt_reduce_ranks(cm, 0, in, c->root, op, out); break;
    case LT_COLL_BARRIER: st = lt_barrier(cm, 0); break;
    default: st = lt__err(LT_INVALID, "%s cannot run in a program", lt_coll_name(c->kind)); break;
    }
    char inner[1024] = "";
    if (st) snprintf(inner, sizeof inner, "%s", lt_errmsg());
    for (int q = 0; q < n; q++) {
        lt_proc *m = &g->procs[g->members[q]];
        m->result = st;
        if (st == LT_OK) {
            if (m->out) *m->out = out[q];
        } else {
            /* each member's own call site; the collective numbers the members 0..n-1 */
            char msg[1400];
            snprintf(msg, sizeof msg,
                     "%s:%d: rank %d: %s on mesh dim %d, group %d failed (in what follows, "
                     "ranks are positions 0..%d in the group; this rank is %d): %s",
                     m->call.file ? m->call.file : "?", m->call.line, m->rank,
                     lt_coll_name(c->kind), d, grp, n - 1, q, inner);
            m->result_msg = lt__strdup(msg);
        }
    }
    LT_ASSERT(lt_match_done(g->mt, d, grp) == LT_OK);
    for (int q = 0; q < n; q++) push(g, g->members[q]);
}

/* The matched pair of rank r (waiting in a send or recv) and q: the
 * sender's tensor copied to the receiver, both queued (the lower first). */
static void run_pair(prog *g, int r, int q) {
    int src = g->procs[r].call.p2p == LT_P2P_SEND ? r : q, dst = src == r ? q : r;
    lt_proc *ps = &g->procs[src], *pd = &g->procs[dst];
    lt_status st;
    if (*pd->out) {
        st = lt_copy(*pd->out, ps->in);
    } else {
        lt_tensor *t = NULL;
        st = lt_clone(ps->in, &t);
        if (!st) *pd->out = t;
    }
    ps->result = pd->result = st;
    if (st) {
        char msg[1400];
        snprintf(msg, sizeof msg, "%s:%d: rank %d: send(to=%d) to %s:%d failed: %s",
                 ps->call.file ? ps->call.file : "?", ps->call.line,
                 lt_mesh_rank_id(&g->mesh, src), ps->call.peer,
                 pd->call.file ? pd->call.file : "?", pd->call.line, lt_errmsg());
        ps->result_msg = lt__strdup(msg);
        pd->result_msg = lt__strdup(msg);
    }
    LT_ASSERT(lt_match_done_p2p(g->mt, src, dst) == LT_OK);
    push(g, r < q ? r : q);
    push(g, r < q ? q : r);
}

/* Runs ranks until none can run. Returns LT_NOMEM when the matcher could
 * not record a rank's end (the run is then stopped). */
static lt_status drain(prog *g) {
    lt_status fatal = LT_OK;
    while (g->qlen) {
        int r = pop(g);
        lt_proc *p = &g->procs[r];
        g->cur = r;
        lt__fiber_switch(g->fib, -1, r);
        g->cur = -1;
        if (g->stopped) continue; /* unwinding: nothing is matched any more */
        if (p->ended) {
            lt_status st = p->fn_st == LT_OK ? lt_match_finish(g->mt, r)
                                             : lt_match_fail(g->mt, r, p->fn_st, p->msg);
            if (st && !fatal) {
                fatal = st;
                snprintf(g->fatal_msg, sizeof g->fatal_msg, "%s", lt_errmsg());
            }
            continue;
        }
        int ready, grp;
        lt_status st = lt_match_post(g->mt, r, &p->call, &ready, &grp);
        if (st) { /* cannot happen for a call validated by issue(); fail the call all the same */
            p->result = st;
            p->result_msg = lt__strdup(lt_errmsg());
            push(g, r);
            continue;
        }
        if (ready && p->call.p2p) run_pair(g, r, grp);
        else if (ready) run_group(g, p->call.mesh_dim, grp);
    }
    return fatal;
}

/* Resumes every rank that has not ended, its call failing with why, until
 * all have returned. */
static void unwind(prog *g, const char *why) {
    g->stopped = 1;
    snprintf(g->stop_why, sizeof g->stop_why, "%s", why);
    for (int r = 0; r < g->mesh.world; r++) {
        lt_proc *p = &g->procs[r];
        if (p->ended) continue;
        char msg[512], what[96];
        snprintf(msg, sizeof msg, "%s:%d: rank %d: %s cancelled: %s",
                 p->call.file ? p->call.file : "?", p->call.line, r,
                 call_what(&p->call, what, sizeof what), why);
        p->result = LT_MISMATCH;
        p->result_msg = lt__strdup(msg);
        push(g, r);
    }
    drain(g);
}

static void prog_free(prog *g) {
    if (!g) return;
    lt__fibers_free(g->fib);
    lt_match_free(g->mt);
    if (g->procs)
        for (int r = 0; r < g->mesh.world; r++) {
            lt__free(g->procs[r].msg);
            lt__free(g->procs[r].result_msg);
        }
    lt__free(g->procs);
    lt__free(g->queue);
    for (int d = 0; d < LT_MESH_MAX_DIMS; d++) lt_comm_free(g->comm[d]);
    lt__free(g->in);
    lt__free(g->out);
    lt__free(g->members);
    lt__free(g);
}

static lt_status prog_new(const lt_mesh *mesh, lt_proc_fn fn, void *user, size_t stack,
                          prog **out) {
    *out = NULL;
    prog *g = lt__calloc(1, sizeof *g);
    if (!g) return lt__err(LT_NOMEM, "lt_program_run: out of memory");
    g->mesh = *mesh;
    g->fn = fn;
    g->user = user;
    g->cur = -1;
    int W = mesh->world, big = 1;
    for (int d = 0; d < mesh->ndim; d++)
        if (mesh->shape[d] > big) big = mesh->shape[d];
    g->procs = lt__calloc((size_t)W, sizeof *g->procs);
    g->queue = lt__calloc((size_t)W, sizeof *g->queue);
    g->in = lt__calloc((size_t)big, sizeof *g->in);
    g->out = lt__calloc((size_t)big, sizeof *g->out);
    g->members = lt__calloc((size_t)big, sizeof *g->members);
    lt_status st = g->procs && g->queue && g->in && g->out && g->members
                       ? LT_OK : lt__err(LT_NOMEM, "lt_program_run: out of memory for %d ranks", W);
    for (int d = 0; !st && d < mesh->ndim; d++) {
        lt_mesh sub;
        const char *name = mesh->names[d];
        st = lt_mesh_init(&sub, 1, &mesh->shape[d], &name);
        if (!st) st = lt_comm_new(&sub, &g->comm[d]);
        if (!st) lt_trace_enable(lt_comm_trace(g->comm[d]), 0);
    }
    if (!st) st = lt_match_new(mesh, &g->mt);
    if (!st) st = lt__fibers_new(W, stack, &g->fib);
    if (st) {
        prog_free(g);
        return st;
    }
    for (int r = 0; r < W; r++) {
        lt_proc *p = &g->procs[r];
        p->pg = g;
        p->rank = r;
        lt_mesh_coord(mesh, r, p->coord);
        p->call = lt_match_call_init(LT_COLL_BARRIER, 0, NULL, 0);
        lt__fiber_prepare(g->fib, r, rank_main, p);
    }
    *out = g;
    return LT_OK;
}

lt_status lt_program_run(const lt_mesh *mesh, lt_proc_fn fn, void *user_data,
                         const lt_program_options *opt, lt_match_report **report) {
    if (report) *report = NULL;
    if (!fn) return lt__err(LT_INVALID, "lt_program_run: the rank function is NULL");
    if (!mesh || mesh->ndim < 1 || mesh->ndim > LT_MESH_MAX_DIMS || mesh->world < 1)
        return lt__err(LT_INVALID, "lt_program_run: invalid mesh (build it with lt_mesh_init)");
    size_t stack =
        opt && opt->stack_size ? opt->stack_size : (size_t)LT_PROGRAM_STACK * STACK_SCALE;
    prog *g;
    LT_TRY(prog_new(mesh, fn, user_data, stack, &g));
    for (int r = 0; r < mesh->world; r++) push(g, r);
    lt_status st = drain(g);
    lt_match_report *rep = NULL;
    char head[2048];
    lt_errcode code = LT_ERR_NONE;
    if (st == LT_OK) {
        st = lt_match_check(g->mt, &rep);
        snprintf(head, sizeof head, "%s", lt_errmsg());
        code = lt_errinfo()->code;
    } else {
        snprintf(head, sizeof head, "%s", g->fatal_msg);
    }
    if (st != LT_OK) {
        char why[160];
        if (!rep) snprintf(why, sizeof why, "the run stopped (%s)", lt_status_name(st));
        else if (rep->kind == LT_HANG_RANK_FAILED)
            snprintf(why, sizeof why, "rank %d failed", lt_mesh_rank_id(&g->mesh, rep->rank_a));
        else snprintf(why, sizeof why, "the program would hang (%s)", lt_hang_kind_name(rep->kind));
        unwind(g, why);
        lt__err_code(st, code, "%s", head); /* the ranks' unwinding overwrote it */
    }
    prog_free(g);
    if (report) *report = rep;
    else lt_match_report_free(rep);
    return st;
}
