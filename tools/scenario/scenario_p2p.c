/* tools/scenario/scenario_p2p.c — the send and recv steps of per-rank
 * programs in scenarios (docs/SEMANTICS.md §12): their keys, the peer of
 * each rank (an expression over the rank), checked at load where it can be,
 * and each rank's call. Matching them and moving the data is
 * scenario_match.c's (lt__sc_run_p2p), like the collectives'.
 *
 * Keys (for scenarios/README.md):
 *   send: tensor (a LocalTensor, DTensor or full tensor: each rank sends its
 *       own shard), to (a rank: a number or an expression over the rank).
 *   recv: from (a rank, as `to`), as; optionally shape (a list of sizes,
 *       numbers or expressions) and dtype (default f32 with shape), which
 *       the matched send's tensor must have.
 * Both take ranks: / when: like every per-rank step.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/scenario/scenario_impl.h"

typedef struct {
    int dir;                          /* LT_P2P_SEND, LT_P2P_RECV */
    const char *tensor, *as;          /* send: tensor; recv: as */
    const sc_node *peer_at;           /* the value of to / from */
    sc_expr *peer;
    int declared, ndim;               /* recv: shape given; its dims */
    sc_expr *shape[LT_MAX_DIMS];
    lt_dtype dtype;
} p2p_data;

static const char *key_of(const p2p_data *d) { return d->dir == LT_P2P_SEND ? "to" : "from"; }
static const char *name_of(const p2p_data *d) { return d->dir == LT_P2P_SEND ? "send" : "recv"; }

/* Rank r's peer into *peer: LT_INVALID (no position) when it is not an
 * integer, not a rank of the mesh, or r itself. rc NULL: at load. */
static lt_status peer_of(const p2p_data *d, const lt_mesh *mesh, sc_run_ctx *rc, int r,
                         int *peer) {
    sc_env env;
    int64_t v;
    lt__sc_env_rank(mesh, r, &env);
    char what[32];
    snprintf(what, sizeof what, "%s: %s", name_of(d), key_of(d));
    LT_TRY(rc ? lt__sc_expr_int_rc(d->peer, &env, rc, what, INT32_MIN, INT32_MAX, &v)
              : lt__sc_expr_int(d->peer, &env, what, INT32_MIN, INT32_MAX, &v));
    int id = lt_mesh_rank_id(mesh, r);
    if (lt_mesh_pos_of(mesh, (int)v) < 0)
        return lt__err(LT_INVALID, "%s: %s: rank %lld is not a rank of the mesh (ranks 0..%d) on "
                       "rank %d", name_of(d), key_of(d), (long long)v,
                       lt_mesh_world_size(mesh) - 1, id);
    if (v == id)
        return lt__err(LT_INVALID, "%s: %s: rank %d names itself (a rank cannot %s itself)",
                       name_of(d), key_of(d), id,
                       d->dir == LT_P2P_SEND ? "send to" : "receive from");
    *peer = (int)v;
    return LT_OK;
}

/* At load, when the peer reads no values and the ranks that run the step
 * are known: every such rank's peer (a bad one is the file's error, at the
 * value of to / from). */
static lt_status check_peers(sc_parse_ctx *pc, const p2p_data *d, const sc_step *st) {
    if (lt__sc_expr_reads_values(d->peer) || st->type != lt__sc_step_type(name_of(d)))
        return LT_OK;   /* a `when:` on shard sizes wraps the step: the ranks are not known */
    for (int r = 0; r < pc->mesh->world; r++) {
        int peer;
        if (st->mask && !st->mask[r]) continue;
        lt_status s = peer_of(d, pc->mesh, NULL, r, &peer);
        if (s) return lt__sc_err_at(d->peer_at, s);
    }
    return LT_OK;
}

static lt_status parse_peer(sc_parse_ctx *pc, const sc_node *body, p2p_data *d,
                            const sc_step *st) {
    LT_TRY(lt__sc_need(body, name_of(d), key_of(d), &d->peer_at));
    char what[32];
    snprintf(what, sizeof what, "%s: %s", name_of(d), key_of(d));
    LT_TRY(lt__sc_expr_parse_pc(pc, d->peer_at, 0, what, &d->peer));
    return check_peers(pc, d, st);
}

lt_status lt__sc_parse_send(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"tensor", "to", NULL};
    LT_TRY(lt__sc_keys(body, "send", keys));
    LT__SC_NEW_DATA(p2p_data, d);
    d->dir = LT_P2P_SEND;
    LT_TRY(lt__sc_use(pc, body, "send", "tensor", SC_FULL | SC_DTENSOR | SC_LOCAL, &d->tensor));
    return parse_peer(pc, body, d, st);
}

lt_status lt__sc_parse_recv(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"from", "as", "shape", "dtype", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "recv", keys));
    LT__SC_NEW_DATA(p2p_data, d);
    d->dir = LT_P2P_RECV;
    d->dtype = LT_F32;
    LT_TRY(parse_peer(pc, body, d, st));
    if ((n = lt__sc_get(body, "dtype"))) {
        if (!lt__sc_get(body, "shape"))
            return lt__sc_err(n, LT_INVALID, "recv: dtype declares what comes only with shape");
        LT_TRY(lt__sc_dtype(n, "recv: dtype", &d->dtype));
    }
    if ((n = lt__sc_get(body, "shape"))) {
        d->declared = 1;
        if (n->kind != SC_SEQ || n->n > LT_MAX_DIMS)
            return lt__sc_err(n, LT_INVALID, "recv: shape: expected a list of at most %d sizes",
                              LT_MAX_DIMS);
        d->ndim = n->n;
        for (int i = 0; i < n->n; i++)
            LT_TRY(lt__sc_expr_parse_pc(pc, n->kids[i], 0, "recv: shape", &d->shape[i]));
    }
    return lt__sc_define(pc, body, "recv", SC_LOCAL, &d->as);
}

/* Rank r's call into *c (checked on its own), its input into *in (send). */
static lt_status call_of(sc_run_ctx *rc, const sc_step *st, const sc_value *v, int r,
                         lt_match_call *c, lt_tensor **in) {
    const p2p_data *d = st->data;
    const lt_mesh *mesh = rc->c->mesh;
    int peer;
    LT_TRY(peer_of(d, mesh, rc, r, &peer));
    *c = lt_match_call_p2p((lt_p2p)d->dir, peer, st->pos.file, st->pos.line);
    if (v) {
        *in = v->kind == SC_FULL      ? v->full
              : v->kind == SC_DTENSOR ? v->dt->local->shards[r]
                                      : v->local->shards[r];
        if (!*in || (*in)->placeholder)
            return lt__err(LT_INVALID, "send: tensor '%s' holds no value on rank %d", d->tensor,
                           lt_mesh_rank_id(mesh, r));
        lt_match_call_set_tensor(c, *in);
    }
    if (d->declared) {
        sc_env env;
        lt__sc_env_rank(mesh, r, &env);
        c->has_tensor = 1;
        c->dtype = d->dtype;
        c->ndim = d->ndim;
        for (int k = 0; k < d->ndim; k++)
            LT_TRY(lt__sc_expr_int_rc(d->shape[k], &env, rc, "a size", 0, INT32_MAX,
                                      &c->shape[k]));
    }
    return lt_match_validate(mesh, r, c);
}

/* Both steps: each running rank's call, then the matcher. A rank whose own
 * call is wrong fails the step on that rank (rc->failed_rank: the runner
 * ends that rank's program when others wait, docs/SEMANTICS.md §12). */
static lt_status run_p2p(sc_run_ctx *rc, const sc_step *st) {
    const p2p_data *d = st->data;
    if (rc->nranks >= 0)
        return lt__sc_numerics_refuse(rc, "a per-rank %s (point to point)", name_of(d));
    int W = rc->c->mesh->world;
    const sc_value *v = d->tensor ? lt__sc_value(rc, d->tensor) : NULL;
    lt_match_call *calls = lt__calloc((size_t)W, sizeof *calls);
    lt_tensor **in = lt__calloc((size_t)W, sizeof *in);
    lt_status s = calls && in ? LT_OK : lt__err(LT_NOMEM, "out of memory");
    for (int r = 0; r < W && !s; r++) {
        if (!lt__sc_rank_runs(rc, st, r)) continue;
        s = call_of(rc, st, v, r, &calls[r], &in[r]);
        if (s) rc->failed_rank = r;
    }
    if (!s) s = lt__sc_run_p2p(rc, st, calls, in, d->as);
    lt__free(calls);
    lt__free(in);
    return s;
}

lt_status lt__sc_run_send(sc_run_ctx *rc, const sc_step *st) { return run_p2p(rc, st); }
lt_status lt__sc_run_recv(sc_run_ctx *rc, const sc_step *st) { return run_p2p(rc, st); }
