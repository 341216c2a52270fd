/* collectives_sim/engine_mpi_paths.c — the MPI paths of the MPI engine: one
 * per collective shape (gather-shaped, root-shaped, all-to-all-shaped), and
 * the cross-check against the in-process engine. engine_mpi.c decides which
 * groups come here.
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
#include "collectives_sim/engine_mpi_impl.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "kernels/alloc.h"
#include "localtensor/kernels/dtype.h"
#include "kernels/status_impl.h"
#include "kernels/tensor_impl.h"

/* ---- helpers ------------------------------------------------------------------ */

static MPI_Datatype etype(const mpi_ctx *c, lt_dtype dt) {
    size_t es = lt_dtype_size(dt);
    return c->types[es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3];
}

static int64_t shape_numel(int nd, const int64_t *sh) { return lt__numel_sat(nd, sh); }

static lt_status count_ok(int64_t n) {
    if (n > INT_MAX)
        return lt__err(LT_UNSUPPORTED,
                       "not supported yet: an MPI message of %lld elements (more than "
                       "2^31-1) under the mpi engine",
                       (long long)n);
    return LT_OK;
}

/* A new 1-D buffer of n elements (n may be 0). */
static lt_status buf_new(lt_dtype dt, int64_t n, lt_tensor **out) {
    int64_t sh = n;
    return lt__tensor_new_uninit(lt_backend_cpu(), dt, 1, &sh, out); /* MPI reads it: host memory */
}

/* A view of buf's elements [off, off + numel(shape)) with that shape. */
static lt_status buf_view(const lt_tensor *buf, int64_t off, int nd, const int64_t *shape,
                          lt_tensor **out) {
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
static lt_status unpack(lt_tensor *dst, int d, int64_t at, const lt_tensor *buf, int64_t off,
                        int nd, const int64_t *shape) {
    lt_tensor *v = NULL;
    LT_TRY(buf_view(buf, off, nd, shape, &v));
    lt_status st = place(dst, d, at, v);
    lt_tensor_free(v);
    return st;
}

/* dst = op over pieces[0..n) in group order, by the in-process engine's
 * reduction (bit-identical to an in-process run). */
static lt_status local_reduce(mpi_ctx *c, lt_redop op, int n, lt_tensor *const *pieces,
                              lt_tensor *dst) {
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

/* Per-call scratch of an MPI path. */
typedef struct xfer {
    int64_t *sh;              /* (n, SHW) input shapes */
    int *sc, *sd, *rc, *rd;   /* (nproc) send/recv counts and displacements */
    int64_t *off;             /* (n) or (n, n) element offsets into the receive buffer */
    lt_tensor *sbuf, *rbuf;
} xfer;

/* The shape rows of every member's input into x->sh (n * SHW): rows of my
 * members from in, the others' from their processes; ndim -1 = absent.
 * x->rc and x->rd serve as the counts and displacements (set again later). */
static lt_status exchange_shapes(const mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                                 lt_tensor *const *in, xfer *x) {
    int64_t *sh = x->sh;
    /* shadow mode: every process holds every member's input, so the rows
     * the owners would send are here already (the same on every process) */
    int lo = c->opt.shadow ? 0 : gi->mine_lo,
        hi = c->opt.shadow ? g->size : gi->mine_lo + gi->mine_cnt;
    for (int p = lo; p < hi; p++) {
        const lt_tensor *t = in[g->ranks[p]];
        int64_t *row = sh + (size_t)p * SHW;
        memset(row, 0, SHW * sizeof *row);
        row[0] = t ? t->ndim : -1;
        for (int i = 0; t && i < t->ndim; i++) row[1 + i] = t->shape[i];
    }
    if (c->opt.shadow) return LT_OK;
    for (int k = 0; k < gi->nproc; k++) {
        x->rc[k] = gi->cnt[k] * SHW;
        x->rd[k] = gi->lo[k] * SHW;
    }
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, sh, x->rc, x->rd, MPI_INT64_T, gi->comm);
    return LT_OK;
}

/* comm rank of the process owning group member p */
static int proc_of(const grp_info *gi, int p) {
    for (int k = 0; k < gi->nproc; k++)
        if (p >= gi->lo[k] && p < gi->lo[k] + gi->cnt[k]) return k;
    return -1;
}

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
static lt_status displs_of(const grp_info *gi, const int64_t *tot, int *cnt, int *dsp,
                           int64_t *all) {
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

/* The status a path's first agreement carries: the caller's pending
 * failure (c->pending, then cleared) before the path's own. */
static lt_status fold(mpi_ctx *c, lt_status own) {
    lt_status st = c->pending ? c->pending : own;
    c->pending = LT_OK;
    return st;
}

/* ---- gather-shaped paths: every member's whole input moves -------------------- */

/* Makes x (xfer_new), packs my members' inputs into x->sbuf and sets the
 * per-process counts and every member's offset x->off[p] in the gathered
 * buffer (x->rbuf, allocated when `recv_here`). Ends with agreement over the
 * group; on error x is already freed. */
static lt_status gather_setup(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                              lt_tensor *const *in, lt_dtype dt, int recv_here, xfer *x) {
    lt_status st =
        lt__mpi_agree(gi, fold(c, xfer_new(gi, g->size, 1, x))); /* a failure here is everyone's */
    if (!st) st = exchange_shapes(c, gi, g, in, x);
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
    st = lt__mpi_agree(gi, st);
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
        if (swap && g->size > 1 && p < 2 && memcmp(x->sh, x->sh + SHW, SHW * sizeof *x->sh) == 0)
            src = 1 - p;
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
    MPI_Allgatherv(lt_data(x.sbuf), x.rc[gi->me], etype(c, dt), lt_data(x.rbuf), x.rc, x.rd,
                   etype(c, dt), gi->comm);
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
        MPI_Gatherv(lt_data(x.sbuf), x.rc[gi->me], ty, here ? lt_data(x.rbuf) : NULL, x.rc, x.rd,
                    ty, rootp, gi->comm);
    else
        MPI_Allgatherv(lt_data(x.sbuf), x.rc[gi->me], ty, lt_data(x.rbuf), x.rc, x.rd, ty,
                       gi->comm);
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
    MPI_Gatherv(lt_data(x.sbuf), x.rc[gi->me], ty, here ? lt_data(x.rbuf) : NULL, x.rc, x.rd, ty,
                rootp, gi->comm);
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
    st = lt__mpi_agree(gi, fold(c, st));
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
    lt_status st = lt__mpi_agree(gi, fold(c, xfer_new(gi, g->size, 1, &x)));
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
            if (i != g->dim) inner = src->shape[i] ? lt__mul_sat(inner, src->shape[i]) : 0;
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
    for (int q = gi->mine_lo; q < gi->mine_lo + gi->mine_cnt; q++)
        mine += lt_numel(out[g->ranks[q]]);
    if (!st) st = count_ok(mine);
    if (!st) st = buf_new(dt, mine, &x.rbuf);
    lt__free(tot);
    st = lt__mpi_agree(gi, st);
    if (st) { xfer_free(&x); return st; }
    MPI_Datatype ty = etype(c, dt);
    MPI_Scatterv(isroot ? lt_data(x.sbuf) : NULL, x.sc, x.sd, ty, lt_data(x.rbuf), (int)mine, ty,
                 rootp, gi->comm);
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

/* The element counts this process sends to (tot[kp]) and receives from
 * (tot[P + kp]) each process kp, into the transfer's counts and
 * displacements, and its send and receive buffers. */
static lt_status a2a_sizes(const grp_info *gi, const lt_coll_group *g, pkind k, lt_dtype dt,
                           xfer *x) {
    int P = gi->nproc, mlo = gi->mine_lo, mhi = gi->mine_lo + gi->mine_cnt;
    int64_t shape[LT_MAX_DIMS], at, sall = 0, rall = 0;
    int64_t *tot = lt__calloc(2 * (size_t)P, sizeof *tot);   /* (2 P) */
    if (!tot) return lt__err(LT_NOMEM, "mpi engine: out of memory");
    /* send: [dest process][my member i][member j of dest]; recv: [source
     * process][member i of source][my member j] */
    for (int kp = 0; kp < P; kp++)
        for (int a = 0; a < gi->cnt[kp]; a++)
            for (int b = mlo; b < mhi; b++) {
                int nd = piece(g, k, x->sh, b, gi->lo[kp] + a, shape, &at); /* I send b -> theirs */
                if (nd >= 0) tot[kp] += shape_numel(nd, shape);
                nd = piece(g, k, x->sh, gi->lo[kp] + a, b, shape, &at); /* I receive theirs -> b */
                if (nd >= 0) tot[P + kp] += shape_numel(nd, shape);
            }
    lt_status st = displs_of(gi, tot, x->sc, x->sd, &sall);
    if (!st) st = displs_of(gi, tot + P, x->rc, x->rd, &rall);
    lt__free(tot);
    if (!st) st = buf_new(dt, sall, &x->sbuf);
    if (!st) st = buf_new(dt, rall, &x->rbuf);
    return st;
}

/* Packs what this process's members send, process by process, and notes
 * where each piece it receives will lie (x->off). */
static lt_status a2a_pack(const grp_info *gi, const lt_coll_group *g, pkind k, lt_tensor *const *in,
                          xfer *x) {
    int n = g->size, mlo = gi->mine_lo, mhi = gi->mine_lo + gi->mine_cnt;
    int64_t shape[LT_MAX_DIMS], at, so = 0, ro = 0;
    lt_status st = LT_OK;
    for (int kp = 0; !st && kp < gi->nproc; kp++) {
        for (int i = mlo; !st && i < mhi; i++)
            for (int j = gi->lo[kp]; !st && j < gi->lo[kp] + gi->cnt[kp]; j++) {
                int nd = piece(g, k, x->sh, i, j, shape, &at);
                if (nd < 0) continue;
                lt_tensor *v = NULL;
                const lt_tensor *src = in[g->ranks[i]];
                if (at >= 0) st = lt_narrow(src, g->dim, at, shape[g->dim], &v);
                if (!st) st = pack(x->sbuf, so, v ? v : src);
                lt_tensor_free(v);
                so += shape_numel(nd, shape);
            }
        for (int i = gi->lo[kp]; i < gi->lo[kp] + gi->cnt[kp]; i++)
            for (int j = mlo; j < mhi; j++) {
                int nd = piece(g, k, x->sh, i, j, shape, &at);
                x->off[(size_t)i * n + j] = ro;
                if (nd >= 0) ro += shape_numel(nd, shape);
            }
    }
    return st;
}

/* Member j's result from the pieces it received: joined along concat_dim
 * (all_to_all), reduced in group order (reduce_scatter), or copied. */
static lt_status a2a_unpack(mpi_ctx *c, const lt_coll_group *g, pkind k, const xfer *x, int j,
                            lt_tensor *o) {
    int n = g->size;
    int64_t shape[LT_MAX_DIMS], at, cat = 0;
    lt_status st = LT_OK;
    for (int i = 0; !st && i < n; i++) {
        int nd = piece(g, k, x->sh, i, j, shape, &at);
        if (nd < 0) continue;
        lt_tensor *v = NULL;
        st = buf_view(x->rbuf, x->off[(size_t)i * n + j], nd, shape, &v);
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
    if (k != PK_RS) return st;
    if (!st) st = local_reduce(c, g->op, n, c->tin, o);
    for (int i = 0; i < n; i++) {
        lt_tensor_free(c->tin[i]);
        c->tin[i] = NULL;
    }
    return st;
}

static lt_status mpi_a2a_span(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                              lt_tensor *const *in, lt_tensor *const *out, pkind k) {
    int n = g->size, mlo = gi->mine_lo, mhi = gi->mine_lo + gi->mine_cnt;
    lt_dtype dt = out[g->ranks[mlo]]->dtype;
    xfer x;
    lt_status st = lt__mpi_agree(gi, fold(c, xfer_new(gi, n, n, &x)));
    if (!st) st = exchange_shapes(c, gi, g, in, &x);
    if (st) {
        xfer_free(&x);
        return st;
    }
    st = a2a_sizes(gi, g, k, dt, &x);
    if (!st) st = a2a_pack(gi, g, k, in, &x);
    st = lt__mpi_agree(gi, st);
    if (st) {
        xfer_free(&x);
        return st;
    }
    MPI_Datatype ty = etype(c, dt);
    MPI_Alltoallv(lt_data(x.sbuf), x.sc, x.sd, ty, lt_data(x.rbuf), x.rc, x.rd, ty, gi->comm);
    for (int j = mlo; !st && j < mhi; j++) st = a2a_unpack(c, g, k, &x, j, out[g->ranks[j]]);
    xfer_free(&x);
    return st;
}

/* ---- cross-check ------------------------------------------------------------------ */

/* The in-process result shape of member p (returns ndim; -1: none). */
static int xc_shape(const lt_coll_group *g, kind k, const int64_t *sh, lt_tensor *const *out,
                    int mine_p, int p, int64_t *shape) {
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
            cat += g->concat_dim == g->dim ? g->sizes[i * n + p]
                                           : sh[(size_t)i * SHW + 1 + g->concat_dim];
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

/* Every member's input gathered here, the group run by the in-process
 * engine, and my members' results compared byte for byte with what MPI
 * produced. */
lt_status lt__mpi_cross_check(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                              lt_tensor *const *in, lt_tensor *const *out, kind k) {
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
            st = lt__tensor_new_uninit(lt_backend_cpu(), dt, nd, shape,
                                       &fout[p]); /* compared on the host */
    }
    lt_coll_group fg = *g;
    fg.ranks = c->ids;
    if (!st) st = lt__mpi_ip_fn(c->ip, k)(c->ipctx, &fg, fin, fout);
    char msg[256] = "";
    for (int p = gi->mine_lo; !st && !msg[0] && p < gi->mine_lo + gi->mine_cnt; p++) {
        const lt_tensor *mine = out[g->ranks[p]];
        if (!fout[p] || mine->placeholder) continue;
        size_t nb = lt_nbytes(mine), es = lt_dtype_size(dt);
        const unsigned char *a = lt_data(mine), *b = lt_data(fout[p]);
        for (size_t i = 0; nb && i < nb; i++)
            if (a[i] != b[i]) {
                snprintf(msg, sizeof msg,
                         "cross-check: rank %d's result differs from the in-process "
                         "engine's at element %zu",
                         lt_mesh_rank_id(&c->mesh, g->ranks[p]), i / es);
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
    return lt__mpi_agree(gi, st);
}

/* ---- dispatch to a path ------------------------------------------------------------ */

lt_status lt__mpi_path(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g, lt_tensor *const *in,
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
