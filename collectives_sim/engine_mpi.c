/* collectives_sim/engine_mpi.c — the MPI engine (collectives_sim/engine_mpi.h):
 * the communicators of every group (made once per mesh shape), agreement
 * between processes, and the dispatch of each group to an in-process copy,
 * the MPI path or shadow mode. The MPI paths themselves and the
 * cross-check live in engine_mpi_paths.c.
 *
 * Invariant: only entries of owned ranks of `in` and `out` are read or
 * written (shadow mode aside, engine_mpi.h). Before and after each call
 * every process of the world agrees on its outcome (mpi_agree_call, the
 * table's `agree`), so a failure on one process fails the same call
 * everywhere.
 */
#include "collectives_sim/engine_mpi_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "kernels/tensor_impl.h"

/* The groups of one mesh shape over this world of processes: made once
 * (MPI_Comm_split per spanning group) and kept for every later
 * communicator of the same shape, until lt_engine_mpi_release. */
typedef struct comm_set {
    struct comm_set *next;
    int ndim, shape[LT_MESH_MAX_DIMS], nown;
    int permuted;                       /* and the rank ids (mesh.h), which decide the owners */
    uint16_t ids[LT_MESH_MAX_IDS];
    grp_info *gi[LT_MESH_MAX_DIMS];     /* (ngroups) per mesh dim */
} comm_set;

static lt_mpi_options g_opt;
static comm_set *g_sets;
int lt__mpi_echo; /* the last error of lt__mpi_agree only echoes another process's */
long lt__mpi_progress; /* agreements this process has been through */

/* ---- the world channel --------------------------------------------------------------- */

/* Every agreement over MPI_COMM_WORLD while a unit of work runs (a
 * communicator made, before and after each collective call, and the end of
 * the unit, lt_engine_mpi_end_unit) is one MPI_Allreduce (MPI_MIN) of the
 * same HDR ints: {where, -where, lowest process that stopped its unit with
 * an error, lowest process at the end of its unit, a, b} (a, b: what the
 * agreement itself reduces). A process that ended its unit early (an error
 * before a collective the others still call) therefore matches every call
 * the others make instead of deadlocking against them: while it waits at
 * the end, each of their calls fails with its status and message. */
enum { AT_END = 0, AT_CALL = 1, AT_INIT = 2 };
#define HDR 6

typedef struct stop_note {
    int st, tag;      /* lt_status; the caller's tag */
    char msg[1024];
} stop_note;

static int g_echo_from = -1;   /* the last call failed because this process had ended its unit */
static stop_note g_echo;       /* ... with this outcome */

/* One round of the channel at `where` (a, b: this process's values, reduced
 * into r[4], r[5]; mine: at AT_END, this process's stop, NULL when it
 * ended its unit without one). Returns 1 when every process is at `where`.
 * Else, when some are at the end of their unit, the lowest that stopped
 * (or the lowest there) broadcasts its stop and the others' call fails with
 * it (g_echo, g_echo_from); returns 0. */
static int world_round(int where, int a, int b, int *r, const stop_note *mine) {
    int nproc, proc;
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    MPI_Comm_rank(MPI_COMM_WORLD, &proc);
    int v[HDR] = {
        where, -where, where == AT_END && mine ? proc : nproc, where == AT_END ? proc : nproc,
        a,     b};
    MPI_Allreduce(v, r, HDR, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    lt__mpi_progress++;
    if (r[0] == -r[1]) return 1;   /* every process is here */
    if (r[0] != AT_END) {          /* processes in different calls: a program that is not SPMD */
        g_echo_from = -1;
        return 0;
    }
    int root = r[2] < nproc ? r[2] : r[3];
    stop_note n;
    memset(&n, 0, sizeof n);
    if (proc == root && mine) n = *mine;
    else if (proc == root)
        snprintf(n.msg, sizeof n.msg,
                 "mpi engine: process %d ended its unit of work (a scenario case) before "
                 "this collective call",
                 proc);
    if (n.st == LT_OK) n.st = LT_INVALID;
    MPI_Bcast(&n, (int)sizeof n, MPI_BYTE, root, MPI_COMM_WORLD);
    if (where != AT_END) {
        g_echo = n;
        g_echo_from = root;
    }
    return 0;
}

/* The error of a call that world_round found other processes elsewhere. */
static lt_status world_echo_err(void) {
    if (g_echo_from < 0)
        return lt__err(LT_INVALID, "mpi engine: the processes are in different collective calls");
    return lt__err((lt_status)g_echo.st, "%s (on process %d)", g_echo.msg, g_echo_from);
}

void lt_engine_mpi_end_unit(lt_status st, int tag, const char *msg, int *vals) {
    int inited = 0, fin = 0, nproc = 1;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin) MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    g_echo_from = -1;
    if (nproc < 2) return;
    stop_note n;
    memset(&n, 0, sizeof n);
    n.st = (int)st;
    n.tag = tag;
    snprintf(n.msg, sizeof n.msg, "%s", msg ? msg : "");
    int r[HDR];
    while (!world_round(AT_END, vals ? vals[0] : INT_MAX, vals ? vals[1] : INT_MAX, r,
                        st ? &n : NULL)) {
    }
    if (vals) {   /* the round where every process was here */
        vals[0] = r[4];
        vals[1] = r[5];
    }
}

int lt_engine_mpi_echo(lt_status *st, int *tag, char *msg, size_t cap) {
    int from = g_echo_from;
    if (from < 0) return -1;
    g_echo_from = -1;
    if (st) *st = (lt_status)g_echo.st;
    if (tag) *tag = g_echo.tag;
    if (msg && cap) snprintf(msg, cap, "%s", g_echo.msg);
    return from;
}

void lt_engine_mpi_set_options(const lt_mpi_options *o) {
    if (o) g_opt = *o;
    else memset(&g_opt, 0, sizeof g_opt);
}

int lt_mpi_owner(int world, int nproc, int r) {
    return (int)(((int64_t)(r + 1) * nproc - 1) / world);
}

void lt_mpi_block(int world, int nproc, int p, int *first, int *count) {
    int a = (int)((int64_t)p * world / nproc), b = (int)((int64_t)(p + 1) * world / nproc);
    if (first) *first = a;
    if (count) *count = b - a;
}

/* The process holding mesh position pos: process blocks are of rank ids
 * (lt_mpi_owner of the id's place among the mesh's ids, ascending: the id
 * itself when the mesh holds every rank of its world). */
static int pos_owner(const lt_mesh *m, int nown, int pos) {
    int k = pos;
    if (m->permuted) {
        k = 0;
        for (int q = 0; q < m->world; q++) k += m->ids[q] < m->ids[pos];
    }
    return lt_mpi_owner(m->world, nown, k);
}

/* On a mesh in another rank order, the members of each group that one
 * process owns must be adjacent in the group (each process one run). */
static lt_status check_runs(const lt_mesh *m, int nown) {
    int ranks[LT_MESH_MAX_IDS], own[LT_MESH_MAX_IDS];
    for (int d = 0; m->permuted && d < m->ndim; d++)
        for (int g = 0; g < lt_mesh_ngroups(m, d); g++) {
            lt_mesh_group(m, d, g, ranks);
            for (int p = 0; p < m->shape[d]; p++) {
                own[p] = pos_owner(m, nown, ranks[p]);
                for (int q = 0; p && own[p] != own[p - 1] && q < p - 1; q++)
                    if (own[q] == own[p])
                        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                                            "not supported yet: mpi engine: mesh dim %d, group "
                                            "%d: process %d holds members that are not adjacent "
                                            "in the group (another number of processes may do)",
                                            d, g, own[p]);
            }
        }
    return LT_OK;
}

static void set_free(comm_set *cs, int ndim, const lt_mesh *m) {
    if (!cs) return;
    for (int d = 0; d < ndim; d++) {
        if (!cs->gi[d]) continue;
        int ng = lt_mesh_ngroups(m, d);
        for (int g = 0; g < ng; g++) {
            grp_info *gi = &cs->gi[d][g];
            if (gi->comm != MPI_COMM_NULL) MPI_Comm_free(&gi->comm);
            lt__free(gi->lo);
            lt__free(gi->cnt);
        }
        lt__free(cs->gi[d]);
    }
    lt__free(cs);
}

void lt_engine_mpi_release(void) {
    while (g_sets) {
        comm_set *cs = g_sets;
        g_sets = cs->next;
        lt_mesh m;
        if (lt_mesh_init(&m, cs->ndim, cs->shape, NULL) == LT_OK) set_free(cs, cs->ndim, &m);
    }
}

/* Who owns which members of every group, and one communicator per group
 * that spans processes. Every process takes the same decisions in the same
 * order, so the MPI_Comm_split calls (collective over the world) match; an
 * allocation failure anywhere fails it everywhere. */
static lt_status set_make(const lt_mesh *m, int nproc, int proc, int nown, comm_set **out) {
    *out = NULL;
    size_t w = (size_t)m->world;
    comm_set *cs = lt__calloc(1, sizeof *cs);
    int ok = cs != NULL;
    if (ok) {
        cs->ndim = m->ndim;
        memcpy(cs->shape, m->shape, sizeof cs->shape);
        cs->nown = nown;
        cs->permuted = m->permuted;
        memcpy(cs->ids, m->ids, sizeof cs->ids);
    }
    for (int d = 0; ok && d < m->ndim; d++) {
        int ng = lt_mesh_ngroups(m, d);
        cs->gi[d] = lt__calloc((size_t)ng, sizeof(grp_info));
        if (!cs->gi[d]) ok = 0;
        for (int g = 0; ok && g < ng; g++) cs->gi[d][g].comm = MPI_COMM_NULL;
    }
    int *ranks = ok ? lt__malloc(w * sizeof *ranks) : NULL;
    int *owners = ok ? lt__malloc(w * sizeof *owners) : NULL;
    if (!ranks || !owners) ok = 0;
    int all_ok = ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    for (int d = 0; all_ok && d < m->ndim; d++) {
        int n = m->shape[d], ng = lt_mesh_ngroups(m, d);
        for (int g = 0; all_ok && g < ng; g++) {
            grp_info *gi = &cs->gi[d][g];
            lt_mesh_group(m, d, g, ranks);
            int np = 0;
            gi->me = -1;
            gi->mine_lo = -1;
            for (int p = 0; p < n; p++) {
                owners[p] = pos_owner(m, nown, ranks[p]);
                if (p == 0 || owners[p] != owners[p - 1]) np++;
                if (owners[p] == proc) {
                    if (gi->mine_lo < 0) gi->mine_lo = p;
                    gi->mine_cnt++;
                }
            }
            gi->nproc = np;
            if (np == 1) {
                if (gi->mine_cnt) gi->me = 0;
                continue;
            }
            int lok = 1;
            if (gi->mine_cnt) {
                gi->lo = lt__calloc((size_t)np, sizeof *gi->lo);
                gi->cnt = lt__calloc((size_t)np, sizeof *gi->cnt);
                lok = gi->lo && gi->cnt;
                for (int p = 0, k = -1; lok && p < n; p++) {
                    if (p == 0 || owners[p] != owners[p - 1]) gi->lo[++k] = p;
                    gi->cnt[k]++;
                }
            }
            MPI_Allreduce(&lok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            if (!all_ok) break;
            /* communicator ranks in the order of the runs (by process on an arange mesh) */
            MPI_Comm_split(MPI_COMM_WORLD, gi->mine_cnt ? 0 : MPI_UNDEFINED, gi->mine_lo,
                           &gi->comm);
            if (gi->comm != MPI_COMM_NULL) MPI_Comm_rank(gi->comm, &gi->me);
        }
    }
    (void)nproc;
    lt__free(ranks);
    lt__free(owners);
    if (!all_ok) {
        set_free(cs, m->ndim, m);
        return lt__err(LT_NOMEM, "mpi engine: out of memory%s", ok ? " on another process" : "");
    }
    *out = cs;
    return LT_OK;
}

static void mpi_free(void *vctx);

/* This process's context for mesh m (nproc processes, this one proc):
 * the arrays and the in-process engine it hands local work to. NULL, or
 * a context some part of which is missing, when out of memory (*ok 0). */
static mpi_ctx *ctx_new(const lt_mesh *m, int nproc, int proc, const lt_mpi_options *opt, int *ok) {
    mpi_ctx *c = lt__calloc(1, sizeof *c);
    size_t w = (size_t)m->world;
    *ok = 0;
    if (!c) return NULL;
    c->mesh = *m;
    c->nproc = nproc;
    c->proc = proc;
    c->opt = *opt;
    c->nown = nproc < m->world ? nproc : m->world;
    for (int i = 0; i < 4; i++) c->types[i] = MPI_DATATYPE_NULL;
    c->ids = lt__malloc(w * sizeof *c->ids);
    c->tin = lt__calloc(w, sizeof *c->tin);
    c->tout = lt__calloc(w, sizeof *c->tout);
    c->eout = lt__calloc(w, sizeof *c->eout);
    c->scr = lt__calloc(w, sizeof *c->scr);
    if (!c->ids || !c->tin || !c->tout || !c->eout || !c->scr) return c;
    for (size_t r = 0; r < w; r++) c->ids[r] = (int)r;
    lt_mesh fake;
    int sh = m->world;
    lt_status st = lt_mesh_init(&fake, 1, &sh, NULL);
    c->ip = lt_engine_inproc();
    if (st == LT_OK) st = c->ip->init(&fake, &c->ipctx);
    if (st) c->ip = NULL;
    *ok = !st;
    return c;
}

/* The cached communicators of a mesh of m's shape over nown processes,
 * or NULL. */
static comm_set *set_find(const lt_mesh *m, int nown) {
    comm_set *cs = g_sets;
    while (cs && !(cs->ndim == m->ndim && cs->nown == nown && cs->permuted == m->permuted &&
                   !memcmp(cs->shape, m->shape, (size_t)m->ndim * sizeof *m->shape) &&
                   (!m->permuted || !memcmp(cs->ids, m->ids, sizeof cs->ids))))
        cs = cs->next;
    return cs;
}

static lt_status mpi_init(const lt_mesh *m, void **out) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited)
        return lt__err(LT_INVALID, "mpi engine: MPI is not initialised (call MPI_Init first)");
    int nproc, proc;
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    MPI_Comm_rank(MPI_COMM_WORLD, &proc);
    lt_mpi_options opt = g_opt;
    const char *pl = getenv("LT_MPI_PLANT_SWAP");
    if (pl && strcmp(pl, "1") == 0) opt.plant_swap = 1;
    if (nproc > m->world && !opt.idle_extra) {
        char ms[128];
        lt_mesh_format(m, ms, sizeof ms);
        return lt__err(
            LT_INVALID,
            "mpi engine: %d processes but mesh %s has only %d rank%s (run with 1 to %d processes)",
            nproc, ms, m->world, m->world == 1 ? "" : "s", m->world);
    }
    LT_TRY(check_runs(m, nproc < m->world ? nproc : m->world));   /* the same on every process */
    int ok;
    mpi_ctx *c = ctx_new(m, nproc, proc, &opt, &ok);
    /* one agreement for both: memory everywhere, and the groups from the
     * cache or made now by every process (a miss anywhere is a miss
     * everywhere) */
    comm_set *cs = set_find(m, nproc < m->world ? nproc : m->world);
    int all[HDR];
    if (!world_round(AT_INIT, ok, cs != NULL, all, NULL)) {   /* another process ended its unit */
        mpi_free(c);
        return world_echo_err();
    }
    if (!all[4]) {
        mpi_free(c);
        return lt__err(LT_NOMEM, "mpi engine: out of memory%s", ok ? " on another process" : "");
    }
    if (!all[5]) {   /* not cached on every process */
        lt_status st = set_make(m, nproc, proc, c->nown, &cs);
        if (st) {
            mpi_free(c);
            return st;
        }
        cs->next = g_sets;
        g_sets = cs;
    }
    c->gi = cs->gi;
    for (int i = 0; i < 4; i++) {
        MPI_Type_contiguous(1 << i, MPI_BYTE, &c->types[i]);
        MPI_Type_commit(&c->types[i]);
    }
    *out = c;
    return LT_OK;
}

static void mpi_free(void *vctx) {
    mpi_ctx *c = vctx;
    if (!c) return;
    for (int i = 0; i < 4; i++)
        if (c->types[i] != MPI_DATATYPE_NULL) MPI_Type_free(&c->types[i]);
    if (c->ip) c->ip->free(c->ipctx);
    lt__free(c->ids);
    lt__free(c->tin);
    lt__free(c->tout);
    lt__free(c->eout);
    lt__free(c->scr);
    lt__free(c);
}

/* All processes of the group agree: LT_OK when every one had st == LT_OK;
 * else this process's own error, or an error saying another failed. */
lt_status lt__mpi_agree(const grp_info *gi, lt_status st) {
    int ok = st == LT_OK, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, gi->comm);
    lt__mpi_progress++;
    if (all) return LT_OK;
    if (st) return st;
    lt__mpi_echo = 1;
    return lt__err(LT_INVALID, "mpi engine: another process of the group failed this call");
}

lt_coll_fn lt__mpi_ip_fn(const lt_engine_i *ip, kind k) {
    switch (k) {
    case K_AG: return ip->all_gather;
    case K_AR: return ip->all_reduce;
    case K_RS: return ip->reduce_scatter;
    case K_A2A: return ip->all_to_all;
    case K_BC: return ip->broadcast;
    case K_SC: return ip->scatter;
    case K_GA: return ip->gather;
    case K_RE: return ip->reduce;
    case K_PE: return ip->permute;
    }
    return NULL;
}

/* ---- dispatch ---------------------------------------------------------------------- */

/* Shadow mode, a group that spans processes: MPI writes my members' results
 * into scratch tensors, the in-process engine then computes every member's
 * result from the (complete) inputs, and the scratch results replace my
 * members' (compared first, under cross-check). Inputs are read before any
 * output is written, so in-place calls stay correct. */
static lt_status shadow_span(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                             lt_tensor *const *in, lt_tensor *const *out, kind k) {
    int lo = gi->mine_lo, hi = gi->mine_lo + gi->mine_cnt;
    lt_status st = LT_OK;
    for (int p = lo; p < hi; p++) {
        int r = g->ranks[p];
        const lt_tensor *o = out[r];
        c->eout[r] = out[r];
        if (!st && !o->placeholder) {
            st = lt__tensor_new_uninit(lt_backend_cpu(), o->dtype, o->ndim, o->shape,
                                       &c->scr[r]); /* on the host */
            c->eout[r] = c->scr[r];
        }
    }
    c->pending = st;   /* agreed together with the path's own scratch (lt__mpi_path) */
    st = lt__mpi_path(c, gi, g, in, c->eout, k);
    if (!st) st = lt__mpi_ip_fn(c->ip, k)(c->ipctx, g, in, out);
    for (int p = lo; p < hi; p++) {
        int r = g->ranks[p];
        if (!st && c->scr[r] && c->opt.cross_check) {
            const unsigned char *a = lt_data(c->scr[r]), *b = lt_data(out[r]);
            size_t nb = lt_nbytes(out[r]), es = lt_dtype_size(out[r]->dtype);
            for (size_t i = 0; i < nb; i++)
                if (a[i] != b[i]) {
                    st = lt__err(LT_INVALID,
                                 "cross-check: rank %d's result differs from the in-process "
                                 "engine's at element %zu",
                                 lt_mesh_rank_id(&c->mesh, r), i / es);
                    break;
                }
        }
        if (!st && c->scr[r]) st = lt_copy(out[r], c->scr[r]);
    }
    for (int p = lo; p < hi; p++) {
        lt_tensor_free(c->scr[g->ranks[p]]);
        c->scr[g->ranks[p]] = NULL;
        c->eout[g->ranks[p]] = NULL;
    }
    return st;
}

/* engine.h `agree`, over the world: before a call (the wrapper's own work)
 * and after its groups. A process whose own failure it is keeps its error;
 * the others (succeeded, or only echoing another process's failure in a
 * group: lt__mpi_echo) get the message of the lowest process that failed
 * itself, with "(on process P)". A process that already ended its unit of
 * work (lt_engine_mpi_end_unit) fails the call everywhere with its own
 * outcome (lt_engine_mpi_echo then tells). */
static lt_status mpi_agree_call(void *vctx, lt_status st) {
    mpi_ctx *c = vctx;
    int echo = lt__mpi_echo;
    lt__mpi_echo = 0;
    if (c->nproc == 1) return st;
    int r[HDR];
    if (!world_round(AT_CALL, st && !echo ? c->proc : c->nproc, st ? c->proc : c->nproc, r, NULL))
        return world_echo_err();
    if (r[5] == c->nproc) return LT_OK;
    int first = r[4] < c->nproc ? r[4] : r[5];
    int code = (int)st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", st ? lt_errmsg() : "");
    MPI_Bcast(&code, 1, MPI_INT, first, MPI_COMM_WORLD);
    MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, MPI_COMM_WORLD);
    if (st && (!echo || first == c->proc)) return st;
    return lt__err((lt_status)code, "%s (on process %d)", msg, first);
}

static lt_status dispatch(void *vctx, const lt_coll_group *g, lt_tensor *const *in,
                          lt_tensor *const *out, kind k) {
    mpi_ctx *c = vctx;
    const grp_info *gi = &c->gi[g->mesh_dim][g->index];
    lt_status st = LT_OK;
    if (gi->nproc == 1 && (gi->mine_cnt || c->opt.shadow)) {
        st = lt__mpi_ip_fn(c->ip, k)(c->ipctx, g, in, out); /* an in-process copy */
    } else if (!gi->mine_cnt) {
        if (c->opt.shadow) st = lt__mpi_ip_fn(c->ip, k)(c->ipctx, g, in, out);
    } else if (c->opt.shadow) {
        st = shadow_span(c, gi, g, in, out, k);
    } else {
        st = lt__mpi_path(c, gi, g, in, out, k);
        /* unpacking may fail on one process after the data moved: the
         * group agrees before the cross-check's own exchange */
        if (c->opt.cross_check) st = lt__mpi_agree(gi, st);
        if (st == LT_OK && c->opt.cross_check) st = lt__mpi_cross_check(c, gi, g, in, out, k);
    }
    return st;   /* the world agrees after the call's last group (mpi_agree_call) */
}

/* Shards on a backend the host cannot read (cuda, cuda-emu): MPI and the
 * packing read host memory, so the group's shards go through explicit host
 * copies and the outputs are copied back. A copy that fails on one process
 * is agreed over the group before any data moves (no process waits). */
static lt_status dispatch_host(void *vctx, const lt_coll_group *g, lt_tensor *const *in,
                               lt_tensor *const *out, kind k) {
    mpi_ctx *c = vctx;
    const grp_info *gi = &c->gi[g->mesh_dim][g->index];
    int off = 0, world = g->mesh->world;
    for (int p = 0; p < g->size && !off; p++) {
        int r = g->ranks[p];
        off = (in[r] && !lt__on_host(in[r])) || (out[r] && !lt__on_host(out[r]));
    }
    if (!off || gi->nproc == 1)
        return dispatch(vctx, g, in, out, k); /* in-process: kernels on the backend */
    lt_tensor **hin = lt__calloc((size_t)world, sizeof *hin),
              **hout = lt__calloc((size_t)world, sizeof *hout);
    lt_status st = hin && hout ? LT_OK : lt__err(LT_NOMEM, "MPI engine: out of memory");
    for (int p = 0; p < g->size && !st; p++) {
        int r = g->ranks[p];
        if (in[r]) st = lt__host_copy_out(in[r], &hin[r]);
        if (!st && out[r]) st = lt__host_copy_out(out[r], &hout[r]);
    }
    if (gi->comm != MPI_COMM_NULL) st = lt__mpi_agree(gi, st);
    if (!st) st = dispatch(vctx, g, hin, hout, k);
    for (int p = 0; p < g->size && !st; p++) {
        int r = g->ranks[p];
        if (out[r] && hout[r]) st = lt__host_writeback(out[r], hout[r]);
    }
    for (int r = 0; r < world && hin && hout; r++) {
        lt_tensor_free(hin[r]);
        lt_tensor_free(hout[r]);
    }
    lt__free(hin);
    lt__free(hout);
    return st;
}

#define MPI_FN(fname, k)                                                                           \
    static lt_status fname(void *ctx, const lt_coll_group *g, lt_tensor *const *in,                \
                           lt_tensor *const *out) {                                                \
        return dispatch_host(ctx, g, in, out, k);                                                  \
    }
MPI_FN(mpi_all_gather, K_AG)
MPI_FN(mpi_all_reduce, K_AR)
MPI_FN(mpi_reduce_scatter, K_RS)
MPI_FN(mpi_all_to_all, K_A2A)
MPI_FN(mpi_broadcast, K_BC)
MPI_FN(mpi_scatter, K_SC)
MPI_FN(mpi_gather, K_GA)
MPI_FN(mpi_reduce, K_RE)
MPI_FN(mpi_permute, K_PE)
#undef MPI_FN

static lt_status mpi_barrier(void *vctx, const lt_coll_group *g) {
    mpi_ctx *c = vctx;
    const grp_info *gi = &c->gi[g->mesh_dim][g->index];
    if (gi->comm != MPI_COMM_NULL) MPI_Barrier(gi->comm);
    return LT_OK;
}

/* engine.h `holds`: shadow mode holds every rank; otherwise the ranks of
 * this process's block (none when it owns no rank: idle_extra). */
static int mpi_holds(void *vctx, int rank) {
    const mpi_ctx *c = vctx;
    if (c->opt.shadow) return 1;
    if (c->proc >= c->nown) return 0;
    return pos_owner(&c->mesh, c->nown, rank) == c->proc;
}

/* engine.h `owner`: the block's process (lt_mpi_owner over the processes
 * that own ranks). */
static int mpi_owner(void *vctx, int rank) {
    const mpi_ctx *c = vctx;
    return pos_owner(&c->mesh, c->nown, rank);
}

/* ---- point to point ------------------------------------------------------------------ */

#define P2P_TAG 0x4c54   /* "LT": the engine's only point-to-point messages on the world */

/* The MPI datatype (c->types) and count of t's bytes, in the widest of 8,
 * 4, 2, 1 bytes that divides its element size. */
static lt_status p2p_count(const mpi_ctx *c, const lt_tensor *t, MPI_Datatype *type, int *count) {
    size_t es = lt_dtype_size(t->dtype), w = 8;
    int i = 3;
    while (es % w) w >>= 1, i--;
    size_t n = lt_nbytes(t) / w;
    if (n > INT_MAX)
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: a point-to-point transfer of %zu bytes on the MPI "
                            "engine (at most %zu)", lt_nbytes(t), (size_t)INT_MAX * w);
    *type = c->types[i];
    *count = (int)n;
    return LT_OK;
}

/* The sender's side: a contiguous host copy of in into *buf (owned). */
static lt_status p2p_send_buf(const lt_tensor *in, lt_tensor **buf) {
    lt_tensor *h = NULL;
    *buf = NULL;
    LT_TRY(lt__host_copy_out(in, &h));
    if (lt_is_contiguous(h)) {
        *buf = h;
        return LT_OK;
    }
    lt_status st = lt_contiguous(h, buf);
    lt_tensor_free(h);
    return st;
}

/* Shadow mode and --cross-check: the bytes dst's owner received equal the
 * sender's tensor, which it holds too. */
static lt_status p2p_cross_check(const mpi_ctx *c, int src, int dst, const lt_tensor *in,
                                 const lt_tensor *got) {
    lt_tensor *want = NULL;
    LT_TRY(p2p_send_buf(in, &want));
    int same = !memcmp(lt_data(want), lt_data(got), lt_nbytes(got));
    lt_tensor_free(want);
    if (same) return LT_OK;
    return lt__err(LT_INVALID, "cross-check: what rank %d received from rank %d over MPI differs "
                   "from the sender's tensor", lt_mesh_rank_id(&c->mesh, dst),
                   lt_mesh_rank_id(&c->mesh, src));
}

/* engine.h `send_recv`: when src and dst live on different processes, the
 * owner of src sends the bytes to the owner of dst (MPI_Isend / MPI_Irecv on
 * the world, then MPI_Wait: the polite wait of engine_mpi_yield.c applies);
 * the world agrees first that both sides could prepare, so neither waits
 * for a message that never comes. A process holding both tensors (one
 * owner for both, or shadow mode) copies in place. */
static lt_status mpi_send_recv(void *vctx, int src, int dst, const lt_tensor *in, lt_tensor *out) {
    mpi_ctx *c = vctx;
    int ps = pos_owner(&c->mesh, c->nown, src), pd = pos_owner(&c->mesh, c->nown, dst);
    int me = c->proc, sends = me == ps && ps != pd, recvs = me == pd && ps != pd;
    lt_tensor *buf = NULL;
    MPI_Datatype type = MPI_BYTE;
    int count = 0;
    lt_status st = LT_OK;
    if (sends) st = p2p_send_buf(in, &buf);
    if (recvs) st = lt__host_copy_out(out, &buf);   /* out is contiguous (the wrapper's) */
    if (!st && buf) st = p2p_count(c, buf, &type, &count);
    if (!st && in && out && !recvs) st = lt_copy(out, in);   /* held here: a copy */
    if (ps != pd) st = mpi_agree_call(c, st);
    if (!st && (sends || recvs)) {
        MPI_Request rq;
        if (sends) MPI_Isend(lt_data(buf), count, type, pd, P2P_TAG, MPI_COMM_WORLD, &rq);
        else MPI_Irecv(lt_data(buf), count, type, ps, P2P_TAG, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        lt__mpi_progress++;
        if (recvs && c->opt.shadow && c->opt.cross_check && in)
            st = p2p_cross_check(c, src, dst, in, buf);
        if (!st && recvs && !lt__on_host(out)) st = lt__host_writeback(out, buf);
    }
    lt_tensor_free(buf);   /* a copy, or an alias of out's storage (a reference) */
    return st;
}

static const lt_engine_i mpi_iface = {
    /* .version        = */ LT_ENGINE_API_VERSION,
    /* .name           = */ "mpi",
    /* .init           = */ mpi_init,
    /* .free           = */ mpi_free,
    /* .all_gather     = */ mpi_all_gather,
    /* .all_reduce     = */ mpi_all_reduce,
    /* .reduce_scatter = */ mpi_reduce_scatter,
    /* .all_to_all     = */ mpi_all_to_all,
    /* .broadcast      = */ mpi_broadcast,
    /* .scatter        = */ mpi_scatter,
    /* .gather         = */ mpi_gather,
    /* .reduce         = */ mpi_reduce,
    /* .permute        = */ mpi_permute,
    /* .barrier        = */ mpi_barrier,
    /* .agree          = */ mpi_agree_call,
    /* .holds          = */ mpi_holds,
    /* .owner          = */ mpi_owner,
    /* .send_recv      = */ mpi_send_recv,
};

const lt_engine_i *lt_engine_mpi(void) { return &mpi_iface; }
