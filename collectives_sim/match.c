/* collectives_sim/match.c — the matcher of match.h: per-group call counts,
 * who waits where, the agreement rules of docs/SEMANTICS.md §12, and the
 * report built once nothing can run.
 *
 * Invariant: a rank waits in at most one call, and every waiting member of a
 * group waits in the same call of it (the group's next one), because a rank
 * can issue its (k+1)-th call on a group only after its k-th completed, which
 * needed every member. So a group needs only a count of waiting members and
 * of completed calls. Point-to-point calls live outside the groups: a rank
 * waiting in one names its peer, and the pair (sender, receiver) completes
 * when each waits in the other's matching call; per rank, counts of the
 * transfers completed with each peer number them.
 */
#include "localtensor/collectives_sim/match.h"
#include "kernels/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/kernels/dtype.h"
#include "kernels/status_impl.h"

typedef struct p2p_cnt {
    int peer;                   /* position */
    int64_t sent, recvd;        /* transfers completed to / from peer */
} p2p_cnt;

typedef struct rank_st {
    lt_rank_state state;
    int gid;                    /* WAITING: global group id; -1: a point-to-point call */
    int peer;                   /* WAITING in a point-to-point call: the peer's position */
    int pready;                 /* 1: its point-to-point call is matched, awaiting done */
    p2p_cnt *cnt;               /* (ncnt) owned: one per peer it sent to or received from */
    int ncnt, capcnt;
    lt_match_call call;         /* WAITING */
    lt_status status;           /* FAILED */
    char *msg;                  /* FAILED: owned */
    const char *last_file;      /* borrowed: its last completed call's file, or (FINISHED,
                                 * last_is_step) the last step it ran; NULL: none */
    int last_line, last_is_step;
} rank_st;

struct lt_match {
    lt_mesh mesh;
    int world;
    int goff[LT_MESH_MAX_DIMS + 1]; /* group id = goff[d] + group index along d */
    rank_st *rk;                    /* (world) */
    int64_t *seq;                   /* (ngroups of all dims) calls completed */
    int *npend;                     /* (ngroups of all dims) members waiting */
    unsigned char *ready;           /* (ngroups of all dims) 1: complete and agreeing */
    int *scratch;                   /* (largest mesh dim) members of a group */
};

static const char *const hang_names[] = {
#define LT__XX(e, s) s,
    LT_HANG_MAP(LT__XX)
#undef LT__XX
};

const char *lt_hang_kind_name(lt_hang_kind k) {
    return lt__name_of(hang_names, LT_HANG_COUNT, (int)k);
}

lt_status lt_hang_kind_parse(const char *s, lt_hang_kind *out) {
    int i = s ? lt__name_find(hang_names, LT_HANG_COUNT, s) : -1;
    if (i < 0) {
        char known[128];
        return lt__err(LT_INVALID, "unknown hang kind '%s' (known: %s)", s ? s : "(null)",
                       lt__name_join(hang_names, LT_HANG_COUNT, known, sizeof known));
    }
    *out = (lt_hang_kind)i;
    return LT_OK;
}

/* ---- calls ---------------------------------------------------------------------- */

lt_match_call lt_match_call_init(lt_coll kind, int mesh_dim, const char *file, int line) {
    lt_match_call c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.mesh_dim = mesh_dim;
    c.op = -1;
    c.root = -1;
    c.dtype = LT_F32;
    c.dim = -1;
    c.concat_dim = -1;
    c.peer = -1;
    c.file = file;
    c.line = line;
    return c;
}

lt_match_call lt_match_call_p2p(lt_p2p dir, int peer, const char *file, int line) {
    lt_match_call c = lt_match_call_init(LT_COLL_PERMUTE, -1, file, line);
    c.p2p = (int)dir;
    c.peer = peer;
    return c;
}

void lt_match_call_set_tensor(lt_match_call *c, const lt_tensor *t) {
    c->has_tensor = t != NULL;
    c->ndim = 0;
    if (!t) return;
    c->dtype = t->dtype;
    c->ndim = t->ndim;
    memcpy(c->shape, t->shape, (size_t)t->ndim * sizeof *c->shape);
}

static int is_reduction(lt_coll k) {
    return k == LT_COLL_ALL_REDUCE || k == LT_COLL_REDUCE || k == LT_COLL_REDUCE_SCATTER;
}
static int is_rooted(lt_coll k) {
    return k == LT_COLL_BROADCAST || k == LT_COLL_SCATTER || k == LT_COLL_GATHER ||
           k == LT_COLL_REDUCE;
}
static int has_dim(lt_coll k) {
    return k == LT_COLL_ALL_GATHER || k == LT_COLL_GATHER || k == LT_COLL_REDUCE_SCATTER ||
           k == LT_COLL_SCATTER || k == LT_COLL_ALL_TO_ALL;
}
static int has_rule(lt_coll k) {
    return k == LT_COLL_REDUCE_SCATTER || k == LT_COLL_SCATTER || k == LT_COLL_ALL_TO_ALL;
}
/* every member passes a tensor (the others: only the root must) */
static int needs_tensor(lt_coll k) {
    return k != LT_COLL_BARRIER && k != LT_COLL_BROADCAST && k != LT_COLL_SCATTER;
}
static const char *dim_name(lt_coll k) {
    return k == LT_COLL_ALL_TO_ALL ? "split dim" : k == LT_COLL_SCATTER ? "scatter dim"
         : k == LT_COLL_REDUCE_SCATTER ? "scatter dim" : "gather dim";
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static lt_status verr(int rank, const lt_match_call *c, lt_status st, const char *fmt, ...) {
    char msg[512], pos[300] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->file) snprintf(pos, sizeof pos, "%s:%d: ", c->file, c->line);
    return lt__err(st, "%srank %d: %s on mesh dim %d: %s", pos, rank, lt_coll_name(c->kind),
                   c->mesh_dim, msg);
}

/* A send or recv of rank id `id`: a known direction, a peer that is
 * another rank of the mesh, a send's tensor. */
static lt_status validate_p2p(const lt_mesh *m, int id, const lt_match_call *c) {
    char pos[300] = "";
    if (c->file) snprintf(pos, sizeof pos, "%s:%d: ", c->file, c->line);
    int send = c->p2p == LT_P2P_SEND;
    const char *nm = send ? "send(to=" : "recv(from=";
    if (c->p2p != LT_P2P_SEND && c->p2p != LT_P2P_RECV)
        return lt__err(LT_INVALID, "%srank %d: unknown point-to-point direction %d", pos, id,
                       c->p2p);
    int q = lt_mesh_pos_of(m, c->peer);
    if (q < 0)
        return lt__err(LT_INVALID,
                       "%srank %d: %s%d): rank %d is not a rank of the mesh (ranks 0..%d%s)",
                       pos, id, nm, c->peer, c->peer, lt_mesh_world_size(m) - 1,
                       m->permuted ? " that the mesh holds" : "");
    if (c->peer == id)
        return lt__err(LT_INVALID, "%srank %d: %s%d): a rank cannot %s itself", pos, id, nm,
                       c->peer, send ? "send to" : "receive from");
    if (send && !c->has_tensor)
        return lt__err(LT_INVALID, "%srank %d: %s%d): no tensor to send (NULL)", pos, id, nm,
                       c->peer);
    if (c->has_tensor && (c->ndim < 0 || c->ndim > LT_MAX_DIMS))
        return lt__err(LT_INVALID, "%srank %d: %s%d): %d dims (at most %d)", pos, id, nm,
                       c->peer, c->ndim, LT_MAX_DIMS);
    return LT_OK;
}

lt_status lt_match_validate(const lt_mesh *m, int rank, const lt_match_call *c) {
    if (!m || !c) return lt__err(LT_INVALID, "lt_match_validate: NULL argument");
    if (rank < 0 || rank >= m->world)
        return lt__err(LT_INVALID, "rank %d is out of range 0..%d", rank, m->world - 1);
    int id = lt_mesh_rank_id(m, rank);   /* messages name the rank id (mesh.h) */
    if (c->p2p != LT_P2P_NONE) return validate_p2p(m, id, c);
    if ((int)c->kind < 0 || c->kind >= LT_COLL_COUNT || c->kind == LT_COLL_PERMUTE)
        return lt__err(LT_INVALID, "%s%s%srank %d: collective %d (%s) cannot be matched",
                       c->file ? c->file : "", c->file ? ":" : "", c->file ? " " : "", id,
                       (int)c->kind, lt_coll_name(c->kind));
    if (c->mesh_dim < 0 || c->mesh_dim >= m->ndim)
        return verr(id, c, LT_INVALID, "mesh dim %d is out of range (the mesh has %d dim%s)",
                    c->mesh_dim, m->ndim, m->ndim == 1 ? "" : "s");
    int n = m->shape[c->mesh_dim], pos;
    lt_mesh_group_of(m, c->mesh_dim, rank, &pos);
    lt_coll k = c->kind;
    if (is_reduction(k) && (c->op < 0 || c->op >= LT_REDOP_COUNT))
        return verr(id, c, LT_INVALID, "unknown reduce op %d", c->op);
    if (is_rooted(k) && (c->root < 0 || c->root >= n))
        return verr(id, c, LT_INVALID,
                    "root %d is out of range: the group has %d rank%s, so root is a "
                    "position 0..%d",
                    c->root, n, n == 1 ? "" : "s", n - 1);
    int need = needs_tensor(k) || (is_rooted(k) && pos == c->root);
    if (need && !c->has_tensor)
        return verr(id, c, LT_INVALID, "no input tensor (NULL)%s",
                    needs_tensor(k) ? "" : " on the root");
    if (!c->has_tensor) return LT_OK;
    if (c->ndim < 0 || c->ndim > LT_MAX_DIMS)
        return verr(id, c, LT_INVALID, "input has %d dims (at most %d)", c->ndim, LT_MAX_DIMS);
    if (is_reduction(k) && c->dtype == LT_BOOL && c->op == LT_REDOP_AVG)
        return verr(id, c, LT_UNSUPPORTED, "op avg is not defined for bool");
    if (k == LT_COLL_SCATTER && pos != c->root) return LT_OK; /* only the root's tensor is read */
    char ss[128];
    if (has_dim(k) && (c->dim < 0 || c->dim >= c->ndim))
        return verr(id, c, LT_INVALID, "%s %d is out of range for its input of shape %s",
                    dim_name(k), c->dim, lt_shape_format(c->ndim, c->shape, ss, sizeof ss));
    if (k == LT_COLL_ALL_TO_ALL && (c->concat_dim < 0 || c->concat_dim >= c->ndim))
        return verr(id, c, LT_INVALID, "concat dim %d is out of range for its input of shape %s",
                    c->concat_dim, lt_shape_format(c->ndim, c->shape, ss, sizeof ss));
    if (has_rule(k)) {
        lt_split_rule chunk = lt_split_chunk();
        int64_t size, off;
        lt_status st =
            lt_split_piece(c->rule ? c->rule : &chunk, c->shape[c->dim], n, 0, &size, &off);
        if (st) {
            char rs[256];
            lt_split_rule_format(c->rule ? c->rule : &chunk, rs, sizeof rs);
            char inner[512];
            snprintf(inner, sizeof inner, "%s", lt_errmsg());
            return verr(
                id, c, st,
                "cannot split dim %d of its input of shape %s into %d pieces by rule %s: %s",
                c->dim, lt_shape_format(c->ndim, c->shape, ss, sizeof ss), n, rs, inner);
        }
    }
    return LT_OK;
}

/* ---- agreement (docs/SEMANTICS.md §12) --------------------------------------------- */

static const char *redop_or(int op) {
    return op >= 0 && op < LT_REDOP_COUNT ? lt_redop_name((lt_redop)op) : "?";
}

/* 0 when b agrees with a, the member compared against; tref is the call
 * whose tensor b's tensor is compared with (a, or the root's for
 * broadcast). Otherwise why = "the reduce op differs (sum vs max)" and 1
 * for a difference of arguments, 2 for one of tensors (b vs tref). */
static int differ(const lt_match_call *a, const lt_match_call *b, const lt_match_call *tref,
                  char *why, size_t cap) {
    lt_coll k = a->kind;
    if (b->kind != k) {
        snprintf(why, cap, "the collective differs (%s vs %s)", lt_coll_name(k),
                 lt_coll_name(b->kind));
        return 1;
    }
    if (is_reduction(k) && a->op != b->op) {
        snprintf(why, cap, "the reduce op differs (%s vs %s)", redop_or(a->op), redop_or(b->op));
        return 1;
    }
    if (is_rooted(k) && a->root != b->root) {
        snprintf(why, cap, "the root differs (%d vs %d)", a->root, b->root);
        return 1;
    }
    if (has_dim(k) && a->dim != b->dim) {
        snprintf(why, cap, "the %s differs (%d vs %d)", dim_name(k), a->dim, b->dim);
        return 1;
    }
    if (k == LT_COLL_ALL_TO_ALL && a->concat_dim != b->concat_dim) {
        snprintf(why, cap, "the concat dim differs (%d vs %d)", a->concat_dim, b->concat_dim);
        return 1;
    }
    if (has_rule(k)) {
        lt_split_rule chunk = lt_split_chunk();
        const lt_split_rule *ra = a->rule ? a->rule : &chunk, *rb = b->rule ? b->rule : &chunk;
        if (!lt_split_rule_equal(ra, rb)) {
            char sa[256], sb[256];
            lt_split_rule_format(ra, sa, sizeof sa);
            lt_split_rule_format(rb, sb, sizeof sb);
            snprintf(why, cap, "the split rule differs (%s vs %s)", sa, sb);
            return 1;
        }
    }
    if (k == LT_COLL_BARRIER || k == LT_COLL_SCATTER || !tref || !b->has_tensor) return 0;
    if (tref->dtype != b->dtype) {
        snprintf(why, cap, "the dtype differs (%s vs %s)", lt_dtype_name(tref->dtype),
                 lt_dtype_name(b->dtype));
        return 2;
    }
    /* the dim that may differ: the gathered one, or all_to_all's concat dim */
    int skip = k == LT_COLL_ALL_GATHER || k == LT_COLL_GATHER ? a->dim
               : k == LT_COLL_ALL_TO_ALL                      ? a->concat_dim
                                                              : -1;
    int bad = tref->ndim != b->ndim;
    for (int i = 0; !bad && i < b->ndim; i++) bad = i != skip && tref->shape[i] != b->shape[i];
    if (!bad) return 0;
    char sa[128], sb[128];
    lt_shape_format(tref->ndim, tref->shape, sa, sizeof sa);
    lt_shape_format(b->ndim, b->shape, sb, sizeof sb);
    if (skip >= 0)
        snprintf(why, cap, "the shapes differ outside dim %d (%s vs %s)", skip, sa, sb);
    else
        snprintf(why, cap, "the shapes differ (%s vs %s)", sa, sb);
    return 2;
}

/* The first disagreement among the waiting members of group g of mesh dim
 * d, in group order: 1 with *ra (the member compared against: the first
 * waiting one, or for a tensor difference the one whose tensor is the
 * reference), *rb and why; 0 when they agree. */
static int group_differs(const lt_match *mt, int d, int g, int *ra, int *rb, char *why,
                         size_t cap) {
    int gid = mt->goff[d] + g, n = mt->mesh.shape[d];
    int *mem = mt->scratch;
    lt_mesh_group(&mt->mesh, d, g, mem);
    const lt_match_call *a = NULL, *tref = NULL;
    int ar = -1, tr = -1;
    for (int p = 0; p < n; p++) {
        const rank_st *s = &mt->rk[mem[p]];
        if (s->state != LT_RANK_WAITING || s->gid != gid) continue;
        if (!a) {
            a = &s->call;
            ar = mem[p];
        }
        /* tensors compare with the first one present (broadcast: the root's, when it waits) */
        if (s->call.has_tensor && (!tref || (a->kind == LT_COLL_BROADCAST && p == a->root))) {
            tref = &s->call;
            tr = mem[p];
        }
    }
    for (int p = 0; a && p < n; p++) {
        const rank_st *s = &mt->rk[mem[p]];
        if (s->state != LT_RANK_WAITING || s->gid != gid) continue;
        int k = differ(a, &s->call, tref, why, cap);
        if (!k) continue;
        *ra = k == 2 ? tr : ar;
        *rb = mem[p];
        return 1;
    }
    return 0;
}

/* ---- point to point (docs/SEMANTICS.md §12) ------------------------------------------- */

/* Rank s's counts with peer q (a position); add: made when missing. NULL
 * when missing and not added, or on NOMEM (the array is s's). */
static p2p_cnt *cnt_of(rank_st *s, int q, int add) {
    for (int i = 0; i < s->ncnt; i++)
        if (s->cnt[i].peer == q) return &s->cnt[i];
    if (!add) return NULL;
    if (s->ncnt == s->capcnt) {
        int nc = s->capcnt ? 2 * s->capcnt : 4;
        p2p_cnt *n = lt__realloc(s->cnt, (size_t)nc * sizeof *n);
        if (!n) return NULL;
        s->cnt = n;
        s->capcnt = nc;
    }
    p2p_cnt *e = &s->cnt[s->ncnt++];
    e->peer = q;
    e->sent = e->recvd = 0;
    return e;
}

static int waits_p2p(const lt_match *mt, int r) {
    return mt->rk[r].state == LT_RANK_WAITING && mt->rk[r].gid < 0;
}

/* Transfers completed between waiting rank r and its peer, in the
 * direction of r's call. */
static int64_t p2p_seq(const lt_match *mt, int r) {
    const rank_st *s = &mt->rk[r];
    for (int i = 0; i < s->ncnt; i++)
        if (s->cnt[i].peer == s->peer)
            return s->call.p2p == LT_P2P_SEND ? s->cnt[i].sent : s->cnt[i].recvd;
    return 0;
}

/* 1 when rank a waits in a send or recv and its peer waits in the matching
 * one (recv from a, send to a). */
static int pair_posted(const lt_match *mt, int a) {
    if (!waits_p2p(mt, a)) return 0;
    int q = mt->rk[a].peer;
    const rank_st *o = &mt->rk[q];
    return waits_p2p(mt, q) && o->peer == a && o->call.p2p != mt->rk[a].call.p2p;
}

/* 0 when a posted send and recv agree (a recv that declares nothing takes
 * what comes); else 1 and why ("the shapes differ (...)"). */
static int p2p_differs(const lt_match_call *snd, const lt_match_call *rcv, char *why, size_t cap) {
    if (!rcv->has_tensor) return 0;
    if (snd->dtype != rcv->dtype) {
        snprintf(why, cap, "the dtype differs (sent %s vs declared %s)", lt_dtype_name(snd->dtype),
                 lt_dtype_name(rcv->dtype));
        return 1;
    }
    int bad = snd->ndim != rcv->ndim;
    for (int i = 0; !bad && i < snd->ndim; i++) bad = snd->shape[i] != rcv->shape[i];
    if (!bad) return 0;
    char sa[128], sb[128];
    snprintf(why, cap, "the shapes differ (sent %s vs declared %s)",
             lt_shape_format(snd->ndim, snd->shape, sa, sizeof sa),
             lt_shape_format(rcv->ndim, rcv->shape, sb, sizeof sb));
    return 1;
}

/* lt_match_post for a send or recv (validated). */
static lt_status post_p2p(lt_match *mt, int rank, const lt_match_call *c, int *ready, int *group) {
    int q = lt_mesh_pos_of(&mt->mesh, c->peer);
    if (!cnt_of(&mt->rk[rank], q, 1) || !cnt_of(&mt->rk[q], rank, 1))
        return lt__err(LT_NOMEM, "lt_match_post: out of memory");
    rank_st *s = &mt->rk[rank];
    s->state = LT_RANK_WAITING;
    s->gid = -1;
    s->peer = q;
    s->call = *c;
    *group = q;
    if (!pair_posted(mt, rank)) return LT_OK;
    const lt_match_call *o = &mt->rk[q].call;
    char why[8];
    if (p2p_differs(c->p2p == LT_P2P_SEND ? c : o, c->p2p == LT_P2P_SEND ? o : c, why,
                    sizeof why))
        return LT_OK; /* stays stuck: reported by check */
    s->pready = mt->rk[q].pready = 1;
    *ready = 1;
    return LT_OK;
}

/* ---- the matcher ------------------------------------------------------------------- */

lt_status lt_match_new(const lt_mesh *m, lt_match **out) {
    if (!out) return lt__err(LT_INVALID, "lt_match_new: out is NULL");
    *out = NULL;
    if (!m || m->ndim < 1 || m->ndim > LT_MESH_MAX_DIMS || m->world < 1)
        return lt__err(LT_INVALID, "lt_match_new: invalid mesh (build it with lt_mesh_init)");
    lt_match *mt = lt__calloc(1, sizeof *mt);
    if (!mt) return lt__err(LT_NOMEM, "lt_match_new: out of memory");
    mt->mesh = *m;
    mt->world = m->world;
    int biggest = 1;
    for (int d = 0; d < m->ndim; d++) {
        mt->goff[d + 1] = mt->goff[d] + lt_mesh_ngroups(m, d);
        if (m->shape[d] > biggest) biggest = m->shape[d];
    }
    size_t ng = (size_t)mt->goff[m->ndim];   /* <= 8 * 65536 */
    mt->rk = lt__calloc((size_t)m->world, sizeof *mt->rk);
    mt->seq = lt__calloc(ng, sizeof *mt->seq);
    mt->npend = lt__calloc(ng, sizeof *mt->npend);
    mt->ready = lt__calloc(ng, 1);
    mt->scratch = lt__calloc((size_t)biggest, sizeof *mt->scratch);
    if (!mt->rk || !mt->seq || !mt->npend || !mt->ready || !mt->scratch) {
        lt_match_free(mt);
        return lt__err(LT_NOMEM, "lt_match_new: out of memory for %d ranks", m->world);
    }
    *out = mt;
    return LT_OK;
}

void lt_match_free(lt_match *mt) {
    if (!mt) return;
    if (mt->rk)
        for (int r = 0; r < mt->world; r++) {
            lt__free(mt->rk[r].msg);
            lt__free(mt->rk[r].cnt);
        }
    lt__free(mt->rk);
    lt__free(mt->seq);
    lt__free(mt->npend);
    lt__free(mt->ready);
    lt__free(mt->scratch);
    lt__free(mt);
}

const lt_mesh *lt_match_mesh(const lt_match *mt) { return &mt->mesh; }

static lt_status need_running(const lt_match *mt, int rank, const char *what) {
    if (rank < 0 || rank >= mt->world)
        return lt__err(LT_INVALID, "%s: rank %d is out of range 0..%d", what, rank, mt->world - 1);
    static const char *const st[] = {"running", "waiting in a collective", "finished", "failed"};
    if (mt->rk[rank].state != LT_RANK_RUNNING)
        return lt__err(LT_INVALID, "%s: rank %d is %s, not running", what, rank,
                       st[mt->rk[rank].state]);
    return LT_OK;
}

lt_status lt_match_post(lt_match *mt, int rank, const lt_match_call *c, int *ready, int *group) {
    if (!mt || !c || !ready || !group) return lt__err(LT_INVALID, "lt_match_post: NULL argument");
    *ready = 0;
    *group = -1;
    LT_TRY(need_running(mt, rank, "lt_match_post"));
    LT_TRY(lt_match_validate(&mt->mesh, rank, c));
    if (c->p2p != LT_P2P_NONE) return post_p2p(mt, rank, c, ready, group);
    int d = c->mesh_dim, g = lt_mesh_group_of(&mt->mesh, d, rank, NULL), gid = mt->goff[d] + g;
    rank_st *s = &mt->rk[rank];
    s->state = LT_RANK_WAITING;
    s->gid = gid;
    s->call = *c;
    *group = g;
    if (++mt->npend[gid] < mt->mesh.shape[d]) return LT_OK;
    char why[8];
    int ra, rb;
    if (group_differs(mt, d, g, &ra, &rb, why, sizeof why))
        return LT_OK; /* stays stuck: reported by check */
    mt->ready[gid] = 1;
    *ready = 1;
    return LT_OK;
}

lt_status lt_match_done(lt_match *mt, int mesh_dim, int group) {
    if (!mt || mesh_dim < 0 || mesh_dim >= mt->mesh.ndim || group < 0 ||
        group >= lt_mesh_ngroups(&mt->mesh, mesh_dim))
        return lt__err(LT_INVALID, "lt_match_done: no group %d on mesh dim %d", group, mesh_dim);
    int gid = mt->goff[mesh_dim] + group, n = mt->mesh.shape[mesh_dim];
    if (!mt->ready[gid])
        return lt__err(LT_INVALID, "lt_match_done: group %d of mesh dim %d has no completed call",
                       group, mesh_dim);
    lt_mesh_group(&mt->mesh, mesh_dim, group, mt->scratch);
    for (int p = 0; p < n; p++) {
        rank_st *s = &mt->rk[mt->scratch[p]];
        s->state = LT_RANK_RUNNING;
        s->gid = -1;
        s->last_file = s->call.file;
        s->last_line = s->call.line;
        s->last_is_step = 0;
    }
    mt->ready[gid] = 0;
    mt->npend[gid] = 0;
    mt->seq[gid]++;
    return LT_OK;
}

/* Rank s's call completed: it runs again, last seen at that call. */
static void resume_rank(rank_st *s) {
    s->state = LT_RANK_RUNNING;
    s->gid = -1;
    s->pready = 0;
    s->last_file = s->call.file;
    s->last_line = s->call.line;
    s->last_is_step = 0;
}

lt_status lt_match_done_p2p(lt_match *mt, int src, int dst) {
    if (!mt || src < 0 || src >= mt->world || dst < 0 || dst >= mt->world ||
        !mt->rk[src].pready || !mt->rk[dst].pready || mt->rk[src].peer != dst ||
        mt->rk[src].call.p2p != LT_P2P_SEND)
        return lt__err(LT_INVALID, "lt_match_done_p2p: no completed transfer from %d to %d", src,
                       dst);
    cnt_of(&mt->rk[src], dst, 0)->sent++;   /* made by post_p2p */
    cnt_of(&mt->rk[dst], src, 0)->recvd++;
    resume_rank(&mt->rk[src]);
    resume_rank(&mt->rk[dst]);
    return LT_OK;
}

const lt_match_call *lt_match_pending(const lt_match *mt, int rank) {
    if (!mt || rank < 0 || rank >= mt->world || mt->rk[rank].state != LT_RANK_WAITING) return NULL;
    return &mt->rk[rank].call;
}

int64_t lt_match_calls_done(const lt_match *mt, int mesh_dim, int group) {
    if (!mt || mesh_dim < 0 || mesh_dim >= mt->mesh.ndim || group < 0 ||
        group >= lt_mesh_ngroups(&mt->mesh, mesh_dim))
        return -1;
    return mt->seq[mt->goff[mesh_dim] + group];
}

lt_status lt_match_finish(lt_match *mt, int rank) { return lt_match_finish_at(mt, rank, NULL, 0); }

lt_status lt_match_finish_at(lt_match *mt, int rank, const char *file, int line) {
    if (!mt) return lt__err(LT_INVALID, "lt_match_finish: NULL matcher");
    LT_TRY(need_running(mt, rank, "lt_match_finish"));
    rank_st *s = &mt->rk[rank];
    s->state = LT_RANK_FINISHED;
    if (file) {
        s->last_file = file;
        s->last_line = line;
        s->last_is_step = 1;
    }
    return LT_OK;
}

lt_status lt_match_fail(lt_match *mt, int rank, lt_status st, const char *msg) {
    if (!mt) return lt__err(LT_INVALID, "lt_match_fail: NULL matcher");
    LT_TRY(need_running(mt, rank, "lt_match_fail"));
    if (st == LT_OK)
        return lt__err(LT_INVALID, "lt_match_fail: rank %d failed with status ok", rank);
    rank_st *s = &mt->rk[rank];
    s->state = LT_RANK_FAILED;
    s->status = st;
    if (msg) {
        s->msg = lt__strdup(msg);
        if (!s->msg)
            return lt__err(LT_NOMEM, "lt_match_fail: out of memory for rank %d's message", rank);
    }
    return LT_OK;
}

/* ---- the report ------------------------------------------------------------------------ */

void lt_match_report_free(lt_match_report *r) {
    if (!r) return;
    lt__free(r->ranks);
    lt__free(r->stuck);
    lt__free(r->cycle);
    lt__free(r->members_);
    lt__free(r->pool);
    lt__free(r);
}

#define NOSTR ((size_t)-1)

/* Appends s (with its NUL) to the report's pool; its offset, or NOSTR for
 * NULL. Sets *bad on NOMEM. */
static size_t pool_add(lt_match_report *r, const char *s, int *bad) {
    if (!s || *bad) return NOSTR;
    size_t len = strlen(s) + 1;
    if (r->pool_len + len > r->pool_cap) {
        size_t nc = r->pool_cap ? r->pool_cap : 1024;
        while (nc < r->pool_len + len) nc *= 2;
        char *p = lt__realloc(r->pool, nc);
        if (!p) {
            *bad = 1;
            return NOSTR;
        }
        r->pool = p;
        r->pool_cap = nc;
    }
    memcpy(r->pool + r->pool_len, s, len);
    r->pool_len += len;
    return r->pool_len - len;
}

static const char *pool_at(const lt_match_report *r, size_t off) {
    return off == NOSTR ? NULL : r->pool + off;
}

typedef struct offs { size_t file, label, desc, last; } offs;

/* The members of every stuck group, in one array after the records. */
static lt_status build_stuck(const lt_match *mt, lt_match_report *r, int **members) {
    int ng = mt->goff[mt->mesh.ndim];
    size_t total = 0;
    for (int gid = 0; gid < ng; gid++)
        if (mt->npend[gid]) {
            r->nstuck++;
            int d = 0;
            while (gid >= mt->goff[d + 1]) d++;
            total += (size_t)mt->mesh.shape[d];
        }
    r->stuck = lt__calloc(r->nstuck ? (size_t)r->nstuck : 1, sizeof *r->stuck);
    *members = lt__calloc(total ? total : 1, sizeof **members);
    if (!r->stuck || !*members) return lt__err(LT_NOMEM, "would-hang report: out of memory");
    int i = 0;
    size_t at = 0;
    for (int gid = 0; gid < ng; gid++) {
        if (!mt->npend[gid]) continue;
        int d = 0;
        while (gid >= mt->goff[d + 1]) d++;
        lt_match_stuck *s = &r->stuck[i++];
        s->mesh_dim = d;
        s->group = gid - mt->goff[d];
        s->seq = mt->seq[gid];
        s->size = mt->mesh.shape[d];
        lt_mesh_group(&mt->mesh, d, s->group, *members + at);
        s->members = *members + at;
        at += (size_t)s->size;
    }
    return LT_OK;
}

static int stuck_index(const lt_match_report *r, int d, int g) {
    for (int i = 0; i < r->nstuck; i++)
        if (r->stuck[i].mesh_dim == d && r->stuck[i].group == g) return i;
    return -1;
}

/* The rank that waiting rank q waits for: its peer (a send or recv), else
 * the lowest member of its group that does not wait in the group's call. */
static int waits_for(const lt_match *mt, int q) {
    int gid = mt->rk[q].gid, d = 0;
    if (gid < 0) return mt->rk[q].peer;
    while (gid >= mt->goff[d + 1]) d++;
    lt_mesh_group(&mt->mesh, d, gid - mt->goff[d], mt->scratch);
    for (int p = 0; p < mt->mesh.shape[d]; p++) {
        const rank_st *m = &mt->rk[mt->scratch[p]];
        if (!(m->state == LT_RANK_WAITING && m->gid == gid)) return mt->scratch[p];
    }
    return -1;
}

/* Every waiting rank waits for ranks that wait elsewhere: the cycle. */
static lt_status find_cycle(const lt_match *mt, lt_match_report *r) {
    r->kind = LT_HANG_CYCLE;
    int *visit = lt__malloc((size_t)mt->world * sizeof *visit);
    int *path = lt__malloc((size_t)mt->world * sizeof *path);
    if (!visit || !path) {
        lt__free(visit);
        lt__free(path);
        return lt__err(LT_NOMEM, "would-hang report: out of memory");
    }
    int len = 0, q = 0;
    for (int k = 0; k < mt->world; k++) visit[k] = -1;
    while (q < mt->world && mt->rk[q].state != LT_RANK_WAITING) q++;
    LT_ASSERT(q < mt->world);
    while (visit[q] < 0) {
        visit[q] = len;
        path[len++] = q;
        int next = waits_for(mt, q);
        LT_ASSERT(next >= 0 && mt->rk[next].state == LT_RANK_WAITING);
        q = next;
    }
    int start = visit[q];
    r->ncycle = len - start;
    memmove(path, path + start, (size_t)r->ncycle * sizeof *path);
    r->cycle = path;
    lt__free(visit);
    r->rank_a = r->cycle[0];
    r->rank_b = r->ncycle > 1 ? r->cycle[1] : r->cycle[0];
    int gid = mt->rk[r->cycle[0]].gid, d = 0;
    if (gid < 0) return LT_OK;   /* a send or recv: no group */
    while (gid >= mt->goff[d + 1]) d++;
    r->focus = stuck_index(r, d, gid - mt->goff[d]);
    return LT_OK;
}

/* The first group with a waiting call that a member that ended can no
 * longer make, then the lowest rank waiting in a send or recv whose peer
 * ended: 1 with the report's kind and ranks set. */
static int find_missing(const lt_match *mt, lt_match_report *r) {
    for (int i = 0; i < r->nstuck; i++) {
        const lt_match_stuck *s = &r->stuck[i];
        int gid = mt->goff[s->mesh_dim] + s->group, first = -1, ended = -1;
        for (int p = 0; p < s->size; p++) {
            const rank_st *m = &mt->rk[s->members[p]];
            if (m->state == LT_RANK_WAITING && m->gid == gid) {
                if (first < 0) first = s->members[p];
            } else if (m->state == LT_RANK_FINISHED && ended < 0) {
                ended = s->members[p];
            }
        }
        if (ended >= 0) {
            r->kind = LT_HANG_MISSING;
            r->focus = i;
            r->rank_a = first;
            r->rank_b = ended;
            return 1;
        }
    }
    for (int q = 0; q < mt->world; q++)
        if (waits_p2p(mt, q) && mt->rk[mt->rk[q].peer].state == LT_RANK_FINISHED) {
            r->kind = LT_HANG_MISSING;
            r->on_pair = 1;
            r->rank_a = q;
            r->rank_b = mt->rk[q].peer;
            return 1;
        }
    return 0;
}

/* The kind, the ranks it names and the cycle; `what` into why. */
static lt_status classify(const lt_match *mt, lt_match_report *r, char *why, size_t cap) {
    why[0] = '\0';
    r->focus = -1;
    for (int q = 0; q < mt->world; q++)
        if (mt->rk[q].state == LT_RANK_FAILED) {
            r->kind = LT_HANG_RANK_FAILED;
            r->rank_a = r->rank_b = q;
            return LT_OK;
        }
    for (int i = 0; i < r->nstuck; i++) {
        const lt_match_stuck *s = &r->stuck[i];
        if (group_differs(mt, s->mesh_dim, s->group, &r->rank_a, &r->rank_b, why, cap)) {
            r->kind = LT_HANG_MISMATCH;
            r->focus = i;
            return LT_OK;
        }
    }
    for (int q = 0; q < mt->world; q++) {
        if (!pair_posted(mt, q) || mt->rk[q].call.p2p != LT_P2P_SEND) continue;
        int d = mt->rk[q].peer;
        if (!p2p_differs(&mt->rk[q].call, &mt->rk[d].call, why, cap)) continue;
        r->kind = LT_HANG_MISMATCH;
        r->on_pair = 1;
        r->rank_a = q;
        r->rank_b = d;
        return LT_OK;
    }
    if (find_missing(mt, r)) return LT_OK;
    return find_cycle(mt, r);
}

/* The state lt_match_check needs: every rank waits or ended, and no
 * group's call is complete but not run. *all_done: every rank finished. */
static lt_status check_ready(const lt_match *mt, int *all_done) {
    *all_done = 1;
    for (int q = 0; q < mt->world; q++) {
        if (mt->rk[q].state == LT_RANK_RUNNING)
            return lt__err(LT_INVALID,
                           "lt_match_check: rank %d still runs (check once every rank waits or "
                           "has ended)",
                           q);
        if (mt->rk[q].state != LT_RANK_FINISHED) *all_done = 0;
        if (mt->rk[q].pready)
            return lt__err(LT_INVALID,
                           "lt_match_check: rank %d's %s is complete: run it and call "
                           "lt_match_done_p2p first",
                           q, mt->rk[q].call.p2p == LT_P2P_SEND ? "send" : "recv");
    }
    for (int d = 0; d < mt->mesh.ndim; d++)
        for (int g = 0; g < mt->goff[d + 1] - mt->goff[d]; g++)
            if (mt->ready[mt->goff[d] + g])
                return lt__err(LT_INVALID,
                               "lt_match_check: the call of group %d on mesh dim %d is complete: "
                               "run it and call lt_match_done first",
                               g, d);
    return LT_OK;
}

/* Where rank q is, into r->ranks[q]; its strings into r's pool, their
 * offsets into o (*bad set when the pool could not grow). */
static void where_of(const lt_match *mt, lt_match_report *r, int q, offs *o, int *bad) {
    const rank_st *s = &mt->rk[q];
    lt_match_where *w = &r->ranks[q];
    w->state = s->state;
    w->group = -1;
    o->file = o->label = o->desc = o->last = NOSTR;
    if (s->state == LT_RANK_FAILED) w->status = s->status;
    if (s->state == LT_RANK_FINISHED) {
        o->last = pool_add(r, s->last_file, bad);
        w->last_line = s->last_line;
        w->last_is_step = s->last_is_step;
    }
    if (s->state != LT_RANK_WAITING) return;
    char desc[1024];
    w->call = s->call;
    w->call.rule = NULL;
    size_t n = lt_match_call_desc(&s->call, desc, sizeof desc);
    if (s->gid < 0) {   /* a send or recv: "#k", its place among the pair's transfers */
        w->group = -1;
        w->seq = p2p_seq(mt, q);
        if (n < sizeof desc)
            snprintf(desc + n, sizeof desc - n, " #%lld", (long long)w->seq + 1);
    } else {
        w->group = s->gid - mt->goff[s->call.mesh_dim];
        w->seq = mt->seq[s->gid];
    }
    o->file = pool_add(r, s->call.file, bad);
    o->label = pool_add(r, s->call.label, bad);
    o->desc = pool_add(r, desc, bad);
}

/* Builds the report r (r->ranks allocated): who waits where, the kind of
 * hang and why; the strings' offsets into o[world], *what and *fmsg. */
static lt_status report_build(const lt_match *mt, lt_match_report *r, offs *o, int **members,
                              size_t *what, size_t *fmsg) {
    char why[640];
    int bad = 0;
    LT_TRY(build_stuck(mt, r, members));
    LT_TRY(classify(mt, r, why, sizeof why));
    for (int q = 0; q < mt->world; q++) where_of(mt, r, q, &o[q], &bad);
    *what = pool_add(r, why, &bad);
    if (r->kind == LT_HANG_RANK_FAILED)
        *fmsg = pool_add(r, mt->rk[r->rank_a].msg ? mt->rk[r->rank_a].msg : "", &bad);
    return bad ? lt__err(LT_NOMEM, "would-hang report: out of memory") : LT_OK;
}

/* The pool offsets of o (and what, fmsg) turned into the report's strings
 * (the pool does not move any more). */
static void report_strings(lt_match_report *r, const offs *o, size_t what, size_t fmsg) {
    for (int q = 0; q < r->world; q++) {
        lt_match_where *w = &r->ranks[q];
        w->call.file = pool_at(r, o[q].file);
        w->call.label = pool_at(r, o[q].label);
        w->desc = pool_at(r, o[q].desc);
        w->last_file = pool_at(r, o[q].last);
    }
    r->what = what == NOSTR ? "" : pool_at(r, what);
    r->failed_msg = fmsg == NOSTR ? "" : pool_at(r, fmsg);
}

lt_status lt_match_check(const lt_match *mt, lt_match_report **out) {
    if (!mt || !out) return lt__err(LT_INVALID, "lt_match_check: NULL argument");
    *out = NULL;
    int all_done;
    LT_TRY(check_ready(mt, &all_done));
    if (all_done) return LT_OK;
    lt_match_report *r = lt__calloc(1, sizeof *r);
    offs *o = lt__calloc((size_t)mt->world, sizeof *o);
    int *members = NULL;
    size_t what = NOSTR, fmsg = NOSTR;
    lt_status st = r && o ? LT_OK : lt__err(LT_NOMEM, "would-hang report: out of memory");
    if (!st) {
        r->mesh = mt->mesh;
        r->world = mt->world;
        r->ranks = lt__calloc((size_t)mt->world, sizeof *r->ranks);
        if (!r->ranks) st = lt__err(LT_NOMEM, "would-hang report: out of memory");
    }
    if (!st) st = report_build(mt, r, o, &members, &what, &fmsg);
    if (!st) report_strings(r, o, what, fmsg);
    lt__free(o);
    if (r) r->members_ = members;
    if (st) {
        lt_match_report_free(r);
        return st;
    }
    *out = r;
    char head[2048];
    lt_match_report_headline(r, head, sizeof head);
    if (r->kind == LT_HANG_RANK_FAILED) return lt__err(mt->rk[r->rank_a].status, "%s", head);
    return lt__err_code(LT_MISMATCH, LT_ERR_WOULD_HANG, "%s", head);
}
