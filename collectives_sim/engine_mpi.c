/* collectives_sim/engine_mpi.c — the MPI engine (collectives_sim/engine_mpi.h).
 *
 * Invariant: only entries of owned ranks of `in` and `out` are read or
 * written. Every MPI path has three phases: (1) learn the shapes of all
 * members' inputs (one small MPI_Allgatherv of shape rows, so a process
 * never needs another process's tensors), (2) allocate the send and
 * receive buffers and agree on success over the group (MPI_Allreduce MIN),
 * (3) move elements with the matching MPI collective and unpack into the
 * owned outputs, reducing with the in-process engine where the collective
 * reduces. Buffers are 1-D tensors of the call's dtype; pieces are views
 * into them (lt_narrow + lt_reshape), so packing and unpacking are lt_copy.
 */
#include "collectives_sim/engine_mpi.h"

#include <limits.h>
#include <stdio.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/dtype.h"
#include "kernels/status_impl.h"
#include "kernels/tensor_impl.h"

#define SHW (1 + LT_MAX_DIMS) /* a shape row: ndim (-1: absent), then the dims */

typedef struct grp_info {
    MPI_Comm comm;     /* MPI_COMM_NULL when the group lies in one process or not here */
    int nproc;         /* processes owning members */
    int me;            /* my rank in comm, -1 when I own no member */
    int *lo, *cnt;     /* (nproc) first member position and member count per comm rank */
    int mine_lo, mine_cnt;
} grp_info;

/* The groups of one mesh shape over this world of processes: made once
 * (MPI_Comm_split per spanning group) and kept for every later
 * communicator of the same shape, until lt_engine_mpi_release. */
typedef struct comm_set {
    struct comm_set *next;
    int ndim, shape[LT_MESH_MAX_DIMS], nown;
    grp_info *gi[LT_MESH_MAX_DIMS];     /* (ngroups) per mesh dim */
} comm_set;

typedef struct mpi_ctx {
    lt_mesh mesh;
    int nproc, proc;
    int nown;                            /* processes that own ranks: min(nproc, world) */
    grp_info **gi;                       /* the comm_set's (borrowed) */
    const lt_engine_i *ip;
    void *ipctx;
    lt_mpi_options opt;
    int *ids;                            /* (world) 0..world-1: ranks of the local fake groups */
    lt_tensor **tin, **tout;             /* (world) scratch arrays of the local fake groups */
    lt_tensor **eout;                    /* (world) shadow mode: where MPI writes owned results */
    lt_tensor **scr;                     /* (world) shadow mode: those scratch results */
    MPI_Datatype types[4];               /* contiguous 1, 2, 4, 8 bytes */
} mpi_ctx;

static lt_mpi_options g_opt;
static comm_set *g_sets;
static int g_echo; /* the last error of agree() only echoes another process's */

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
                owners[p] = lt_mpi_owner(m->world, nown, ranks[p]);
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
            MPI_Comm_split(MPI_COMM_WORLD, gi->mine_cnt ? 0 : MPI_UNDEFINED, proc, &gi->comm);
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

static lt_status mpi_init(const lt_mesh *m, void **out) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) return lt__err(LT_INVALID, "mpi engine: MPI is not initialised (call MPI_Init first)");
    int nproc, proc;
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    MPI_Comm_rank(MPI_COMM_WORLD, &proc);
    lt_mpi_options opt = g_opt;
    const char *pl = getenv("LT_MPI_PLANT_SWAP");
    if (pl && strcmp(pl, "1") == 0) opt.plant_swap = 1;
    if (nproc > m->world && !opt.idle_extra) {
        char ms[128];
        lt_mesh_str(m, ms, sizeof ms);
        return lt__err(LT_INVALID, "mpi engine: %d processes but mesh %s has only %d rank%s (run "
                       "with 1 to %d processes)", nproc, ms, m->world, m->world == 1 ? "" : "s", m->world);
    }
    mpi_ctx *c = lt__calloc(1, sizeof *c);
    size_t w = (size_t)m->world;
    if (c) {
        c->mesh = *m;
        c->nproc = nproc;
        c->proc = proc;
        c->opt = opt;
        c->nown = nproc < m->world ? nproc : m->world;
        for (int i = 0; i < 4; i++) c->types[i] = MPI_DATATYPE_NULL;
        c->ids = lt__malloc(w * sizeof *c->ids);
        c->tin = lt__calloc(w, sizeof *c->tin);
        c->tout = lt__calloc(w, sizeof *c->tout);
        c->eout = lt__calloc(w, sizeof *c->eout);
        c->scr = lt__calloc(w, sizeof *c->scr);
    }
    int ok = c && c->ids && c->tin && c->tout && c->eout && c->scr;
    for (size_t r = 0; ok && r < w; r++) c->ids[r] = (int)r;
    if (ok) {
        lt_mesh fake;
        int sh = m->world;
        lt_status st = lt_mesh_init(&fake, 1, &sh, NULL);
        c->ip = lt_engine_inproc();
        if (st == LT_OK) st = c->ip->init(&fake, &c->ipctx);
        if (st) {
            c->ip = NULL;
            ok = 0;
        }
    }
    int all_ok = ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        mpi_free(c);
        return lt__err(LT_NOMEM, "mpi engine: out of memory%s", ok ? " on another process" : "");
    }
    /* the groups: from the cache, or made now by every process (a miss
     * anywhere is a miss everywhere) */
    comm_set *cs = g_sets;
    while (cs && !(cs->ndim == m->ndim && cs->nown == c->nown &&
                   !memcmp(cs->shape, m->shape, (size_t)m->ndim * sizeof *m->shape)))
        cs = cs->next;
    int hit = cs != NULL, all_hit = hit;
    MPI_Allreduce(&hit, &all_hit, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_hit) {
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

/* ---- helpers ------------------------------------------------------------------ */

static MPI_Datatype etype(const mpi_ctx *c, lt_dtype dt) {
    size_t es = lt_dtype_size(dt);
    return c->types[es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3];
}

static int64_t shape_numel(int nd, const int64_t *sh) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= sh[i];
    return n;
}

/* All processes of the group agree: LT_OK when every one had st == LT_OK;
 * else this process's own error, or an error saying another failed. */
static lt_status agree(const grp_info *gi, lt_status st) {
    int ok = st == LT_OK, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, gi->comm);
    if (all) return LT_OK;
    if (st) return st;
    g_echo = 1;
    return lt__err(LT_INVALID, "mpi engine: another process of the group failed this call");
}

static lt_status count_ok(int64_t n) {
    if (n > INT_MAX)
        return lt__err(LT_UNSUPPORTED, "not supported yet: an MPI message of %lld elements (more than "
                       "2^31-1) under the mpi engine", (long long)n);
    return LT_OK;
}

/* A new 1-D buffer of n elements (n may be 0). */
static lt_status buf_new(lt_dtype dt, int64_t n, lt_tensor **out) {
    int64_t sh = n;
    return lt__tensor_new_uninit(lt_backend_cpu(), dt, 1, &sh, out); /* MPI reads it: host memory */
}

/* A view of buf's elements [off, off + numel(shape)) with that shape. */
static lt_status buf_view(const lt_tensor *buf, int64_t off, int nd, const int64_t *shape, lt_tensor **out) {
    lt_tensor *nar = NULL;
    LT_TRY(lt_narrow(buf, 0, off, shape_numel(nd, shape), &nar));
    lt_status st = lt_reshape(nar, nd, shape, out);
    lt_tensor_free(nar);
    return st;
}

/* buf[off ..) = src (its shape, row-major) */
static lt_status pack(lt_tensor *buf, int64_t off, const lt_tensor *src) {
    lt_tensor *v = NULL;
    LT_TRY(buf_view(buf, off, src->ndim, src->shape, &v));
    lt_status st = lt_copy(v, src);
    lt_tensor_free(v);
    return st;
}

/* the box of dst starting at `at` along dim d with src's extent = src */
static lt_status place(lt_tensor *dst, int d, int64_t at, const lt_tensor *src) {
    if (d < 0) return lt_copy(dst, src);
    lt_tensor *v = NULL;
    LT_TRY(lt_narrow(dst, d, at, src->shape[d], &v));
    lt_status st = lt_copy(v, src);
    lt_tensor_free(v);
    return st;
}

/* dst (its shape) = buf[off ..) */
static lt_status unpack(lt_tensor *dst, int d, int64_t at, const lt_tensor *buf, int64_t off, int nd,
                        const int64_t *shape) {
    lt_tensor *v = NULL;
    LT_TRY(buf_view(buf, off, nd, shape, &v));
    lt_status st = place(dst, d, at, v);
    lt_tensor_free(v);
    return st;
}

/* dst = op over pieces[0..n) in group order, by the in-process engine's
 * reduction (bit-identical to an in-process run). */
static lt_status local_reduce(mpi_ctx *c, lt_redop op, int n, lt_tensor *const *pieces, lt_tensor *dst) {
    lt_coll_group fg;
    memset(&fg, 0, sizeof fg);
    fg.mesh = &c->mesh;
    fg.size = n;
    fg.ranks = c->ids;
    fg.root = 0;
    fg.op = op;
    /* the in-process engine sizes its copy mode from every member's output:
     * all positions name dst, only position 0 (the root) is written */
    for (int p = 0; p < n; p++) c->tout[p] = dst;
    lt_status st = c->ip->reduce(c->ipctx, &fg, pieces, c->tout);
    for (int p = 0; p < n; p++) c->tout[p] = NULL;
    return st;
}

/* The shape rows of every member's input into sh (n * SHW): rows of my
 * members from in, the others' from their processes; ndim -1 = absent. */
static lt_status exchange_shapes(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                                 lt_tensor *const *in, int64_t *sh) {
    for (int p = gi->mine_lo; p < gi->mine_lo + gi->mine_cnt; p++) {
        const lt_tensor *t = in[g->ranks[p]];
        int64_t *row = sh + (size_t)p * SHW;
        memset(row, 0, SHW * sizeof *row);
        row[0] = t ? t->ndim : -1;
        for (int i = 0; t && i < t->ndim; i++) row[1 + i] = t->shape[i];
    }
    int *cnts = lt__malloc(2 * (size_t)gi->nproc * sizeof(int));
    lt_status st = agree(gi, cnts ? LT_OK : lt__err(LT_NOMEM, "mpi engine: out of memory"));
    if (st) {
        lt__free(cnts);
        return st;
    }
    int *displs = cnts + gi->nproc;
    for (int k = 0; k < gi->nproc; k++) {
        cnts[k] = gi->cnt[k] * SHW;
        displs[k] = gi->lo[k] * SHW;
    }
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, sh, cnts, displs, MPI_INT64_T, gi->comm);
    lt__free(cnts);
    (void)c;
    return LT_OK;
}

/* comm rank of the process owning group member p */
static int proc_of(const grp_info *gi, int p) {
    for (int k = 0; k < gi->nproc; k++)
        if (p >= gi->lo[k] && p < gi->lo[k] + gi->cnt[k]) return k;
    return -1;
}

/* Per-call scratch of an MPI path. */
typedef struct xfer {
    int64_t *sh;              /* (n, SHW) input shapes */
    int *sc, *sd, *rc, *rd;   /* (nproc) send/recv counts and displacements */
    int64_t *off;             /* (n) or (n, n) element offsets into the receive buffer */
    lt_tensor *sbuf, *rbuf;
} xfer;

static void xfer_free(xfer *x) {
    lt__free(x->sh);
    lt__free(x->sc);
    lt__free(x->off);
    lt_tensor_free(x->sbuf);
    lt_tensor_free(x->rbuf);
    memset(x, 0, sizeof *x);
}

/* Scratch for a group of n on nproc processes; offsets of n*noff. */
static lt_status xfer_new(const grp_info *gi, int n, int noff, xfer *x) {
    memset(x, 0, sizeof *x);
    x->sh = lt__calloc((size_t)n * SHW, sizeof *x->sh);
    x->sc = lt__calloc(4 * (size_t)gi->nproc, sizeof *x->sc);
    x->off = lt__calloc((size_t)n * (size_t)noff, sizeof *x->off);
    if (!x->sh || !x->sc || !x->off) {
        xfer_free(x);
        return lt__err(LT_NOMEM, "mpi engine: out of memory");
    }
    x->sd = x->sc + gi->nproc;
    x->rc = x->sd + gi->nproc;
    x->rd = x->rc + gi->nproc;
    return LT_OK;
}

/* Sets counts/displs from per-process element totals (tot[k] in sc or rc),
 * checking they fit MPI's int counts. */
static lt_status displs_of(const grp_info *gi, const int64_t *tot, int *cnt, int *dsp, int64_t *all) {
    int64_t at = 0;
    for (int k = 0; k < gi->nproc; k++) {
        LT_TRY(count_ok(tot[k]));
        LT_TRY(count_ok(at));
        cnt[k] = (int)tot[k];
        dsp[k] = (int)at;
        at += tot[k];
    }
    *all = at;
    return count_ok(at);
}

/* ---- gather-shaped paths: every member's whole input moves -------------------- */

/* Makes x (xfer_new), packs my members' inputs into x->sbuf and sets the
 * per-process counts and every member's offset x->off[p] in the gathered
 * buffer (x->rbuf, allocated when `recv_here`). Ends with agreement over the
 * group; on error x is already freed. */
static lt_status gather_setup(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                              lt_tensor *const *in, lt_dtype dt, int recv_here, xfer *x) {
    lt_status st = agree(gi, xfer_new(gi, g->size, 1, x)); /* a failure here is everyone's */
    if (!st) st = exchange_shapes(c, gi, g, in, x->sh);
    if (st) { xfer_free(x); return st; }
    int64_t *tot = lt__calloc((size_t)gi->nproc, sizeof *tot);
    int64_t all = 0, mine = 0;
    if (!tot) st = lt__err(LT_NOMEM, "mpi engine: out of memory");
    for (int p = 0; !st && p < g->size; p++) {
        const int64_t *row = x->sh + (size_t)p * SHW;
        int64_t m = row[0] < 0 ? 0 : shape_numel((int)row[0], row + 1);
        x->off[p] = all;
        all += m;
        tot[proc_of(gi, p)] += m;
    }
    if (!st) st = displs_of(gi, tot, x->rc, x->rd, &all);
    lt__free(tot);
    if (!st) {
        mine = x->rc[gi->me];
        st = buf_new(dt, mine, &x->sbuf);
    }
    for (int p = gi->mine_lo; !st && p < gi->mine_lo + gi->mine_cnt; p++)
        if (in[g->ranks[p]]) st = pack(x->sbuf, x->off[p] - x->off[gi->mine_lo], in[g->ranks[p]]);
    if (!st && recv_here) st = buf_new(dt, all, &x->rbuf);
    st = agree(gi, st);
    if (st) xfer_free(x);
    return st;
}

/* view of member p's input in the gathered buffer */
static lt_status gathered(const xfer *x, int p, lt_tensor **v) {
    const int64_t *row = x->sh + (size_t)p * SHW;
    return buf_view(x->rbuf, x->off[p], (int)row[0], row + 1, v);
}

/* Every member's gathered piece into o along g->dim, in group order; `swap`
 * exchanges members 0 and 1 when their shapes agree (the planted bug of
 * the cross-check test, LT_MPI_PLANT_SWAP; 0 otherwise). */
static lt_status place_all(const xfer *x, const lt_coll_group *g, lt_tensor *o, int swap) {
    lt_status st = LT_OK;
    int64_t at = 0;
    for (int p = 0; !st && p < g->size; p++) {
        int src = p;
        if (swap && g->size > 1 && p < 2 && memcmp(x->sh, x->sh + SHW, SHW * sizeof *x->sh) == 0) src = 1 - p;
        lt_tensor *v = NULL;
        st = gathered(x, src, &v);
        if (!st) st = place(o, g->dim, at, v);
        if (v) at += v->shape[g->dim];
        lt_tensor_free(v);
    }
    return st;
}

static lt_status mpi_all_gather_span(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                                     lt_tensor *const *in, lt_tensor *const *out) {
    lt_dtype dt = out[g->ranks[gi->mine_lo]]->dtype;
    xfer x;
    lt_status st = gather_setup(c, gi, g, in, dt, 1, &x);
    if (st) return st;
    MPI_Allgatherv(lt_data(x.sbuf), x.rc[gi->me], etype(c, dt), lt_data(x.rbuf), x.rc, x.rd, etype(c, dt),
                   gi->comm);
    for (int q = gi->mine_lo; !st && q < gi->mine_lo + gi->mine_cnt; q++)
        st = place_all(&x, g, out[g->ranks[q]], c->opt.plant_swap);
    xfer_free(&x);
    return st;
}

/* all_reduce and reduce: the inputs gathered, then reduced in group order. */
static lt_status mpi_reduce_span(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                                 lt_tensor *const *in, lt_tensor *const *out, int rooted) {
    int rootp = rooted ? proc_of(gi, g->root) : -1;
    int here = !rooted || rootp == gi->me;
    lt_dtype dt = out[g->ranks[gi->mine_lo]]->dtype;
    xfer x;
    lt_status st = gather_setup(c, gi, g, in, dt, here, &x);
    if (st) return st;
    MPI_Datatype ty = etype(c, dt);
    if (rooted)
        MPI_Gatherv(lt_data(x.sbuf), x.rc[gi->me], ty, here ? lt_data(x.rbuf) : NULL, x.rc, x.rd, ty, rootp,
                    gi->comm);
    else
        MPI_Allgatherv(lt_data(x.sbuf), x.rc[gi->me], ty, lt_data(x.rbuf), x.rc, x.rd, ty, gi->comm);
    if (here) {
        for (int p = 0; p < g->size; p++) c->tin[p] = NULL;
        for (int p = 0; !st && p < g->size; p++) st = gathered(&x, p, &c->tin[p]);
        int first = rooted ? g->root : gi->mine_lo;
        lt_tensor *dst = out[g->ranks[first]];
        if (!st) st = local_reduce(c, g->op, g->size, c->tin, dst);
        for (int q = gi->mine_lo; !rooted && !st && q < gi->mine_lo + gi->mine_cnt; q++)
            if (q != first) st = lt_copy(out[g->ranks[q]], dst);
        for (int p = 0; p < g->size; p++) {
            lt_tensor_free(c->tin[p]);
            c->tin[p] = NULL;
        }
    }
    xfer_free(&x);
    return st;
}

static lt_status mpi_gather_span(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                                 lt_tensor *const *in, lt_tensor *const *out) {
    int rootp = proc_of(gi, g->root);
    int here = rootp == gi->me;
    lt_dtype dt = out[g->ranks[gi->mine_lo]]->dtype;
    xfer x;
    lt_status st = gather_setup(c, gi, g, in, dt, here, &x);
    if (st) return st;
    MPI_Datatype ty = etype(c, dt);
    MPI_Gatherv(lt_data(x.sbuf), x.rc[gi->me], ty, here ? lt_data(x.rbuf) : NULL, x.rc, x.rd, ty, rootp,
                gi->comm);
    if (here) st = place_all(&x, g, out[g->ranks[g->root]], 0);
    xfer_free(&x);
    return st;
}

/* ---- root-shaped paths ------------------------------------------------------------ */

static lt_status mpi_broadcast_span(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                                    lt_tensor *const *in, lt_tensor *const *out) {
    int rootp = proc_of(gi, g->root);
    lt_tensor *o0 = out[g->ranks[gi->mine_lo]];
    lt_dtype dt = o0->dtype;
    int64_t m = lt_numel(o0);
    lt_tensor *buf = NULL;
    lt_status st = count_ok(m);
    if (!st) st = buf_new(dt, m, &buf);
    if (!st && rootp == gi->me) st = pack(buf, 0, in[g->ranks[g->root]]);
    st = agree(gi, st);
    if (st) { lt_tensor_free(buf); return st; }
    MPI_Bcast(lt_data(buf), (int)m, etype(c, dt), rootp, gi->comm);
    for (int q = gi->mine_lo; !st && q < gi->mine_lo + gi->mine_cnt; q++)
        st = unpack(out[g->ranks[q]], -1, 0, buf, 0, o0->ndim, o0->shape);
    lt_tensor_free(buf);
    return st;
}

static lt_status mpi_scatter_span(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                                  lt_tensor *const *in, lt_tensor *const *out) {
    int rootp = proc_of(gi, g->root);
    int isroot = rootp == gi->me;
    lt_dtype dt = out[g->ranks[gi->mine_lo]]->dtype;
    xfer x;
    lt_status st = agree(gi, xfer_new(gi, g->size, 1, &x));
    if (st) {
        xfer_free(&x);
        return st;
    }
    int64_t *tot = lt__calloc((size_t)gi->nproc, sizeof *tot);
    int64_t all = 0, mine = 0;
    if (!tot) st = lt__err(LT_NOMEM, "mpi engine: out of memory");
    const lt_tensor *src = isroot ? in[g->ranks[g->root]] : NULL;
    if (!st && isroot) { /* the root knows every piece's size */
        int64_t inner = 1;
        for (int i = 0; i < src->ndim; i++)
            if (i != g->dim) inner *= src->shape[i];
        for (int j = 0; j < g->size; j++) tot[proc_of(gi, j)] += g->sizes[j] * inner;
        st = displs_of(gi, tot, x.sc, x.sd, &all);
        if (!st) st = buf_new(dt, all, &x.sbuf);
        int64_t at = 0, start = 0;
        for (int j = 0; !st && j < g->size; j++) {
            lt_tensor *v = NULL;
            st = lt_narrow(src, g->dim, start, g->sizes[j], &v);
            if (!st) st = pack(x.sbuf, at, v);
            at += g->sizes[j] * inner;
            start += g->sizes[j];
            lt_tensor_free(v);
        }
    }
    for (int q = gi->mine_lo; q < gi->mine_lo + gi->mine_cnt; q++) mine += lt_numel(out[g->ranks[q]]);
    if (!st) st = count_ok(mine);
    if (!st) st = buf_new(dt, mine, &x.rbuf);
    lt__free(tot);
    st = agree(gi, st);
    if (st) { xfer_free(&x); return st; }
    MPI_Datatype ty = etype(c, dt);
    MPI_Scatterv(isroot ? lt_data(x.sbuf) : NULL, x.sc, x.sd, ty, lt_data(x.rbuf), (int)mine, ty, rootp,
                 gi->comm);
    int64_t at = 0;
    for (int q = gi->mine_lo; !st && q < gi->mine_lo + gi->mine_cnt; q++) {
        lt_tensor *o = out[g->ranks[q]];
        st = unpack(o, -1, 0, x.rbuf, at, o->ndim, o->shape);
        at += lt_numel(o);
    }
    xfer_free(&x);
    return st;
}

/* ---- all-to-all-shaped paths: piece (i -> j) of member i's input to member j ---- */

typedef enum { PK_RS, PK_A2A, PK_PERM } pkind;

/* Shape of piece (i -> j) into shape (returns ndim; -1: no piece) and its
 * start along the split dim (*at, -1: the whole input). */
static int piece(const lt_coll_group *g, pkind k, const int64_t *sh, int i, int j, int64_t *shape,
                 int64_t *at) {
    const int64_t *row = sh + (size_t)i * SHW;
    int nd = (int)row[0], n = g->size;
    if (nd < 0) return -1;
    memcpy(shape, row + 1, (size_t)nd * sizeof *shape);
    *at = 0;
    switch (k) {
    case PK_RS:
        for (int q = 0; q < j; q++) *at += g->sizes[q];
        shape[g->dim] = g->sizes[j];
        return nd;
    case PK_A2A:
        for (int q = 0; q < j; q++) *at += g->sizes[i * n + q];
        shape[g->dim] = g->sizes[i * n + j];
        return nd;
    case PK_PERM:
        *at = -1;
        return g->perm[i] == j ? nd : -1;
    }
    return -1;
}

static lt_status mpi_a2a_span(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g, lt_tensor *const *in,
                              lt_tensor *const *out, pkind k) {
    int n = g->size, P = gi->nproc;
    int mlo = gi->mine_lo, mhi = gi->mine_lo + gi->mine_cnt;
    lt_dtype dt = out[g->ranks[mlo]]->dtype;
    xfer x;
    lt_status st = agree(gi, xfer_new(gi, n, n, &x));
    if (!st) st = exchange_shapes(c, gi, g, in, x.sh);
    if (st) { xfer_free(&x); return st; }
    int64_t shape[LT_MAX_DIMS], at;
    int64_t *tot = lt__calloc(2 * (size_t)P, sizeof *tot);
    if (!tot) st = lt__err(LT_NOMEM, "mpi engine: out of memory");
    /* send: [dest process][my member i][member j of dest]; recv: [source
     * process][member i of source][my member j] */
    for (int kp = 0; !st && kp < P; kp++)
        for (int a = 0; a < gi->cnt[kp]; a++)
            for (int b = mlo; b < mhi; b++) {
                int i = b, j = gi->lo[kp] + a; /* I send i -> j */
                int nd = piece(g, k, x.sh, i, j, shape, &at);
                if (nd >= 0) tot[kp] += shape_numel(nd, shape);
                i = gi->lo[kp] + a, j = b;     /* I receive i -> j */
                nd = piece(g, k, x.sh, i, j, shape, &at);
                if (nd >= 0) tot[P + kp] += shape_numel(nd, shape);
            }
    int64_t sall = 0, rall = 0;
    if (!st) st = displs_of(gi, tot, x.sc, x.sd, &sall);
    if (!st) st = displs_of(gi, tot + P, x.rc, x.rd, &rall);
    lt__free(tot);
    if (!st) st = buf_new(dt, sall, &x.sbuf);
    if (!st) st = buf_new(dt, rall, &x.rbuf);
    int64_t so = 0, ro = 0;
    for (int kp = 0; !st && kp < P; kp++) {
        for (int i = mlo; !st && i < mhi; i++)
            for (int j = gi->lo[kp]; !st && j < gi->lo[kp] + gi->cnt[kp]; j++) {
                int nd = piece(g, k, x.sh, i, j, shape, &at);
                if (nd < 0) continue;
                lt_tensor *v = NULL;
                const lt_tensor *src = in[g->ranks[i]];
                if (at >= 0) st = lt_narrow(src, g->dim, at, shape[g->dim], &v);
                if (!st) st = pack(x.sbuf, so, v ? v : src);
                lt_tensor_free(v);
                so += shape_numel(nd, shape);
            }
        for (int i = gi->lo[kp]; i < gi->lo[kp] + gi->cnt[kp]; i++)
            for (int j = mlo; j < mhi; j++) {
                int nd = piece(g, k, x.sh, i, j, shape, &at);
                x.off[(size_t)i * n + j] = ro;
                if (nd >= 0) ro += shape_numel(nd, shape);
            }
    }
    st = agree(gi, st);
    if (st) { xfer_free(&x); return st; }
    MPI_Datatype ty = etype(c, dt);
    MPI_Alltoallv(lt_data(x.sbuf), x.sc, x.sd, ty, lt_data(x.rbuf), x.rc, x.rd, ty, gi->comm);
    for (int j = mlo; !st && j < mhi; j++) {
        lt_tensor *o = out[g->ranks[j]];
        int64_t cat = 0;
        for (int i = 0; !st && i < n; i++) {
            int nd = piece(g, k, x.sh, i, j, shape, &at);
            if (nd < 0) continue;
            lt_tensor *v = NULL;
            st = buf_view(x.rbuf, x.off[(size_t)i * n + j], nd, shape, &v);
            if (st) break;
            if (k == PK_RS) {
                c->tin[i] = v; /* reduced below, in group order */
                continue;
            }
            if (k == PK_A2A) {
                st = place(o, g->concat_dim, cat, v);
                cat += v->shape[g->concat_dim];
            } else {
                st = lt_copy(o, v);
            }
            lt_tensor_free(v);
        }
        if (k == PK_RS) {
            if (!st) st = local_reduce(c, g->op, n, c->tin, o);
            for (int i = 0; i < n; i++) {
                lt_tensor_free(c->tin[i]);
                c->tin[i] = NULL;
            }
        }
    }
    xfer_free(&x);
    return st;
}

/* ---- cross-check ------------------------------------------------------------------ */

typedef enum { K_AG, K_AR, K_RS, K_A2A, K_BC, K_SC, K_GA, K_RE, K_PE } kind;

/* The in-process result shape of member p (returns ndim; -1: none). */
static int xc_shape(const lt_coll_group *g, kind k, const int64_t *sh, lt_tensor *const *out, int mine_p,
                    int p, int64_t *shape) {
    int n = g->size;
    const lt_tensor *o = out[g->ranks[mine_p]];
    switch (k) {
    case K_AG: case K_AR: case K_BC:
        memcpy(shape, o->shape, (size_t)o->ndim * sizeof *shape);
        return o->ndim;
    case K_GA: case K_RE: { /* the root's result; the others get placeholders of it */
        int nd = o->placeholder ? o->logical_ndim : o->ndim;
        memcpy(shape, o->placeholder ? o->logical : o->shape, (size_t)nd * sizeof *shape);
        (void)p;
        return nd;
    }
    case K_RS: case K_SC: {
        const int64_t *row = sh + (size_t)(k == K_SC ? g->root : 0) * SHW;
        memcpy(shape, row + 1, (size_t)row[0] * sizeof *shape);
        shape[g->dim] = g->sizes[p];
        return (int)row[0];
    }
    case K_A2A: {
        const int64_t *row = sh;
        int nd = (int)row[0];
        memcpy(shape, row + 1, (size_t)nd * sizeof *shape);
        shape[g->dim] = g->sizes[p];
        int64_t cat = 0;
        for (int i = 0; i < n; i++)
            cat += g->concat_dim == g->dim ? g->sizes[i * n + p] : sh[(size_t)i * SHW + 1 + g->concat_dim];
        shape[g->concat_dim] = cat;
        return nd;
    }
    case K_PE:
        for (int i = 0; i < n; i++)
            if (g->perm[i] == p) {
                const int64_t *row = sh + (size_t)i * SHW;
                memcpy(shape, row + 1, (size_t)row[0] * sizeof *shape);
                return (int)row[0];
            }
        return -1;
    }
    return -1;
}

static lt_coll_fn ip_fn(const lt_engine_i *ip, kind k) {
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

/* Every member's input gathered here, the group run by the in-process
 * engine, and my members' results compared byte for byte with what MPI
 * produced. */
static lt_status cross_check(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g, lt_tensor *const *in,
                             lt_tensor *const *out, kind k) {
    int n = g->size;
    lt_dtype dt = out[g->ranks[gi->mine_lo]]->dtype;
    xfer x;
    lt_status st = gather_setup(c, gi, g, in, dt, 1, &x);
    if (st) return st;
    MPI_Datatype ty = etype(c, dt);
    MPI_Allgatherv(lt_data(x.sbuf), x.rc[gi->me], ty, lt_data(x.rbuf), x.rc, x.rd, ty, gi->comm);
    lt_tensor **fin = c->tin, **fout = c->tout;
    for (int p = 0; p < n; p++) fin[p] = fout[p] = NULL;
    int64_t shape[LT_MAX_DIMS];
    for (int p = 0; !st && p < n; p++) {
        if (x.sh[(size_t)p * SHW] >= 0) st = gathered(&x, p, &fin[p]);
        int nd = st ? -1 : xc_shape(g, k, x.sh, out, gi->mine_lo, p, shape);
        if (nd >= 0 && (k == K_GA || k == K_RE) && p != g->root)
            st = lt_tensor_placeholder(dt, nd, shape, &fout[p]);
        else if (nd >= 0)
            st = lt__tensor_new_uninit(lt_backend_cpu(), dt, nd, shape, &fout[p]); /* compared on the host */
    }
    lt_coll_group fg = *g;
    fg.ranks = c->ids;
    if (!st) st = ip_fn(c->ip, k)(c->ipctx, &fg, fin, fout);
    char msg[256] = "";
    for (int p = gi->mine_lo; !st && !msg[0] && p < gi->mine_lo + gi->mine_cnt; p++) {
        const lt_tensor *mine = out[g->ranks[p]];
        if (!fout[p] || mine->placeholder) continue;
        size_t nb = lt_nbytes(mine), es = lt_dtype_size(dt);
        const unsigned char *a = lt_data(mine), *b = lt_data(fout[p]);
        for (size_t i = 0; nb && i < nb; i++)
            if (a[i] != b[i]) {
                snprintf(msg, sizeof msg, "cross-check: rank %d's result differs from the in-process "
                         "engine's at element %zu", g->ranks[p], i / es);
                break;
            }
    }
    for (int p = 0; p < n; p++) {
        lt_tensor_free(fin[p]);
        lt_tensor_free(fout[p]);
        fin[p] = fout[p] = NULL;
    }
    xfer_free(&x);
    if (!st && msg[0]) st = lt__err(LT_INVALID, "%s", msg);
    return agree(gi, st);
}

/* ---- dispatch ---------------------------------------------------------------------- */

static lt_status mpi_path(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g, lt_tensor *const *in,
                          lt_tensor *const *out, kind k) {
    switch (k) {
    case K_AG: return mpi_all_gather_span(c, gi, g, in, out);
    case K_AR: return mpi_reduce_span(c, gi, g, in, out, 0);
    case K_RE: return mpi_reduce_span(c, gi, g, in, out, 1);
    case K_RS: return mpi_a2a_span(c, gi, g, in, out, PK_RS);
    case K_A2A: return mpi_a2a_span(c, gi, g, in, out, PK_A2A);
    case K_PE: return mpi_a2a_span(c, gi, g, in, out, PK_PERM);
    case K_BC: return mpi_broadcast_span(c, gi, g, in, out);
    case K_SC: return mpi_scatter_span(c, gi, g, in, out);
    case K_GA: return mpi_gather_span(c, gi, g, in, out);
    }
    return lt__err(LT_INVALID, "mpi engine: unknown collective");
}

/* Shadow mode, a group that spans processes: MPI writes my members' results
 * into scratch tensors, the in-process engine then computes every member's
 * result from the (complete) inputs, and the scratch results replace my
 * members' (compared first, under cross-check). Inputs are read before any
 * output is written, so in-place calls stay correct. */
static lt_status shadow_span(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g, lt_tensor *const *in,
                             lt_tensor *const *out, kind k) {
    int lo = gi->mine_lo, hi = gi->mine_lo + gi->mine_cnt;
    lt_status st = LT_OK;
    for (int p = lo; p < hi; p++) {
        int r = g->ranks[p];
        const lt_tensor *o = out[r];
        c->eout[r] = out[r];
        if (!st && !o->placeholder) {
            st = lt__tensor_new_uninit(lt_backend_cpu(), o->dtype, o->ndim, o->shape, &c->scr[r]); /* on the host */
            c->eout[r] = c->scr[r];
        }
    }
    st = agree(gi, st);
    if (!st) st = mpi_path(c, gi, g, in, c->eout, k);
    if (!st) st = ip_fn(c->ip, k)(c->ipctx, g, in, out);
    for (int p = lo; p < hi; p++) {
        int r = g->ranks[p];
        if (!st && c->scr[r] && c->opt.cross_check) {
            const unsigned char *a = lt_data(c->scr[r]), *b = lt_data(out[r]);
            size_t nb = lt_nbytes(out[r]), es = lt_dtype_size(out[r]->dtype);
            for (size_t i = 0; i < nb; i++)
                if (a[i] != b[i]) {
                    st = lt__err(LT_INVALID, "cross-check: rank %d's result differs from the in-process "
                                 "engine's at element %zu", r, i / es);
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

/* Every process of the world learns whether this group failed anywhere;
 * the failing process with the lowest number gives the status and message. */
static lt_status world_agree(mpi_ctx *c, lt_status st) {
    int echo = g_echo;
    g_echo = 0;
    if (c->nproc == 1) return st;
    /* a process's own failure wins over another's echo of it */
    int v[2] = {st && !echo ? c->proc : c->nproc, st ? c->proc : c->nproc}, r[2];
    MPI_Allreduce(v, r, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (r[1] == c->nproc) return LT_OK;
    int first = r[0] < c->nproc ? r[0] : r[1];
    int code = (int)st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", st ? lt_errmsg() : "");
    MPI_Bcast(&code, 1, MPI_INT, first, MPI_COMM_WORLD);
    MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, MPI_COMM_WORLD);
    if (first == c->proc) return st;
    return lt__err((lt_status)code, "%s (on process %d)", msg, first);
}

static lt_status dispatch(void *vctx, const lt_coll_group *g, lt_tensor *const *in, lt_tensor *const *out,
                          kind k) {
    mpi_ctx *c = vctx;
    const grp_info *gi = &c->gi[g->mesh_dim][g->index];
    lt_status st = LT_OK;
    if (gi->nproc == 1 && (gi->mine_cnt || c->opt.shadow)) {
        st = ip_fn(c->ip, k)(c->ipctx, g, in, out); /* an in-process copy */
    } else if (!gi->mine_cnt) {
        if (c->opt.shadow) st = ip_fn(c->ip, k)(c->ipctx, g, in, out);
    } else if (c->opt.shadow) {
        st = shadow_span(c, gi, g, in, out, k);
    } else {
        st = mpi_path(c, gi, g, in, out, k);
        if (st == LT_OK && c->opt.cross_check) st = cross_check(c, gi, g, in, out, k);
    }
    return world_agree(c, st);
}

/* Shards on a backend the host cannot read (cuda, cuda-emu): MPI and the
 * packing here read host memory, so the group's shards go through explicit
 * host copies (kernels/host.c) and the outputs are copied back. */
static lt_status dispatch_host(void *vctx, const lt_coll_group *g, lt_tensor *const *in, lt_tensor *const *out,
                               kind k) {
    int off = 0, world = g->mesh->world;
    for (int p = 0; p < g->size && !off; p++) {
        int r = g->ranks[p];
        off = (in[r] && !lt__on_host(in[r])) || (out[r] && !lt__on_host(out[r]));
    }
    if (!off) return dispatch(vctx, g, in, out, k);
    lt_tensor **hin = lt__calloc((size_t)world, sizeof *hin), **hout = lt__calloc((size_t)world, sizeof *hout);
    lt_status st = hin && hout ? LT_OK : lt__err(LT_NOMEM, "MPI engine: out of memory");
    for (int p = 0; p < g->size && !st; p++) {
        int r = g->ranks[p];
        if (in[r]) st = lt__host_copy_out(in[r], &hin[r]);
        if (!st && out[r]) st = lt__host_copy_out(out[r], &hout[r]);
    }
    st = world_agree(vctx, st);
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

#define MPI_FN(fname, k)                                                                          \
    static lt_status fname(void *ctx, const lt_coll_group *g, lt_tensor *const *in, lt_tensor *const *out) { \
        return dispatch_host(ctx, g, in, out, k);                                                 \
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
};

const lt_engine_i *lt_engine_mpi(void) { return &mpi_iface; }
