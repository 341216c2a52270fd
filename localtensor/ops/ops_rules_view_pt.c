/* localtensor/ops/ops_rules_view_pt.c — reshape / view / flatten as PyTorch
 * 2.15 DTensor places them (rule set PYTORCH).
 *
 * PyTorch cuts the two shapes into a map, one entry per output dim: a
 * forwarded input dim, a flattened run of input dims, one part of a split
 * (of one input dim or of a flattened run), or a new size-1 dim (its
 * view_groups). A shard of a flattened run's first dim stays a Shard, one of
 * a later dim becomes a _StridedShard whose split factor is the local size
 * of the dims before it; a split keeps the shard on its first part when that
 * part divides evenly; a size-1 dim kept as a size-1 dim keeps its shard.
 * Its views are strict: an uneven shard that cannot stay, or a sharded dim
 * that the view drops, is an error there; here it is noted ("PyTorch 2.15
 * refuses this: ...", lt_op_plan.pytorch_refuses) and the min-comm rule
 * gives the correct result. The choice is then checked rank by rank against the
 * input's elements (the output must hold, on every rank, the same global
 * elements in the same order); a choice that does not check, an input with
 * a _StridedShard, an empty tensor, or one too big to check cheaply, is
 * left to the min-comm rule (ops_rules_view.c).
 */
#include <string.h>

#include "kernels/status_impl.h"
#include "localtensor/layout.h"
#include "localtensor/ops/ops_impl.h"

enum { VK_SINGLETON, VK_INPUT, VK_FLATTEN, VK_SPLIT };

/* One output dim of PyTorch's map. dims[ndims]: the forwarded input dim, or
 * the flattened (or split) run; for VK_SPLIT also the part sizes other than
 * 1 (parts[nparts]) and which part this dim is (part). */
typedef struct pt_vdim {
    int kind, ndims, dims[LT_MAX_DIMS];
    int nparts, part;
    int64_t parts[LT_MAX_DIMS];
} pt_vdim;

/* The map's state while PyTorch's rules run over it. */
typedef struct pt_view {
    const lt__rule_io *io;
    pt_vdim rule[LT_MAX_DIMS];
    int allowed[LT_MAX_DIMS][LT_MESH_MAX_DIMS];  /* input dim may stay sharded on a mesh dim */
    int fallback[LT_MAX_DIMS][LT_MESH_MAX_DIMS]; /* demoted to Replicate without an error */
    int nout[LT_MAX_DIMS], out[LT_MAX_DIMS][LT_MAX_DIMS]; /* input dim -> output dims */
} pt_view;

#define VIEW_CHECK_BUDGET ((int64_t)1 << 22) /* rank-elements checked at most */

/* One output dim from a group of input dims and output sizes (PyTorch's
 * Flatten.new then Split.new). */
static void pt_group_dim(pt_vdim *v, const int *fg, int nfg, const int64_t *tg, int ntg, int i) {
    memset(v, 0, sizeof *v);
    v->ndims = nfg;
    memcpy(v->dims, fg, sizeof(int) * (size_t)nfg);
    v->kind = nfg == 0 ? VK_SINGLETON : nfg == 1 ? VK_INPUT : VK_FLATTEN;
    if (ntg == 1) return;
    if (tg[i] == 1) {
        v->kind = VK_SINGLETON, v->ndims = 0;
        return;
    }
    if (v->kind == VK_SINGLETON) return;
    v->kind = VK_SPLIT;
    for (int j = 0; j < ntg; j++) {
        if (tg[j] == 1) continue;
        if (j == i) v->part = v->nparts;
        v->parts[v->nparts++] = tg[j];
    }
}

/* PyTorch's view_groups over shapes without a 0 (the caller checks). */
static void pt_view_groups(pt_view *w, const int64_t *si, int n, const int64_t *so, int no) {
    int fi = 0, ti = 0, o = 0;
    while (fi < n || ti < no) {
        int fg[LT_MAX_DIMS], nfg = 0, ntg = 0;
        int64_t tg[LT_MAX_DIMS], f = 1, t = 1;
        if (fi < n) f = si[fi], fg[nfg++] = fi++;
        if (ti < no) t = so[ti], tg[ntg++] = t, ti++;
        if (f == 1 && t != 1) {
            ti--, ntg = 0;
        } else if (f != 1 && t == 1) {
            fi--, nfg = 0;
        } else {
            while (f != t) {
                if (fi < n && (ti >= no || t % f == 0 || t > f)) {
                    f *= si[fi], fg[nfg++] = fi++;
                } else if (ti < no && (fi >= n || f % t == 0 || f > t)) {
                    t *= so[ti], tg[ntg++] = so[ti], ti++;
                } else {
                    break;
                }
            }
        }
        for (int i = 0; i < ntg && o < LT_MAX_DIMS; i++)
            pt_group_dim(&w->rule[o++], fg, nfg, tg, ntg, i);
    }
}

/* The first mesh dim holding a plain Shard of input dim d, or -1. */
static int pt_plain_shard(const pt_view *w, int d) {
    const lt_spec *s = w->io->in[0];
    for (int i = 0; i < w->io->mesh->ndim; i++)
        if (s->placements[i].kind == LT_PL_SHARD && s->placements[i].dim == d) return i;
    return -1;
}

/* A refusal of PyTorch's: LT_UNSUPPORTED with its reason, which
 * lt__pytorch_view turns into the note of io->pt_refuses. */
static lt_status pt_refuse(const pt_view *w, const char *what) {
    return lt__err(LT_UNSUPPORTED, "%s: %s; redistribute that mesh dim to Replicate first",
                   lt_op_name(w->io->op), what);
}

/* PyTorch's _analyze_flatten (strict): the sharded dims of the run, or
 * its first dim when none is; *n their count. */
static lt_status pt_flatten(pt_view *w, const pt_vdim *v, int *dims, int *n) {
    const lt_mesh *m = w->io->mesh;
    *n = 0;
    for (int j = 0; j < v->ndims; j++) {
        int d = v->dims[j], i = pt_plain_shard(w, d);
        if (i < 0) continue;
        int64_t size = w->io->in[0]->shape[d];
        if (j != v->ndims - 1 && size % m->shape[i]) {
            char what[200];
            snprintf(what, sizeof what,
                     "cannot flatten an unevenly sharded dim: dim %d (size %lld) over mesh dim %d "
                     "(size %lld)", d, (long long)size, i, (long long)m->shape[i]);
            return pt_refuse(w, what);
        }
        dims[(*n)++] = d;
        for (int k = 0; k < m->ndim; k++) w->allowed[d][k] = 1;
    }
    if (!*n) dims[(*n)++] = v->dims[0];
    return LT_OK;
}

/* PyTorch's _analyze_split (strict, plain shards): the input dim the part
 * keeps a shard of (*d, or -1). */
static lt_status pt_split(pt_view *w, const pt_vdim *v, int *d) {
    const lt_mesh *m = w->io->mesh;
    const lt_spec *s = w->io->in[0];
    int dims[LT_MAX_DIMS], n = 1;
    dims[0] = v->dims[0];
    if (v->ndims > 1) LT_TRY(pt_flatten(w, v, dims, &n));
    *d = v->part == 0 ? dims[0] : -1;
    for (int j = 1; j < v->ndims; j++) /* a later flattened dim cannot stay sharded */
        for (int i = 0; i < m->ndim; i++)
            if (s->placements[i].kind == LT_PL_SHARD && s->placements[i].dim == v->dims[j])
                w->allowed[v->dims[j]][i] = 0, w->fallback[v->dims[j]][i] = 1;
    if (v->part != 0) return LT_OK;
    int64_t size = v->parts[0];
    for (int i = 0; i < m->ndim; i++) w->allowed[dims[0]][i] = size % m->shape[i] == 0;
    int p = pt_plain_shard(w, dims[0]);
    if (p >= 0 && !w->allowed[dims[0]][p]) {
        char what[200];
        snprintf(what, sizeof what,
                 "cannot unflatten an unevenly sharded dim: output part 0 (size %lld) over mesh "
                 "dim %d (size %lld)", (long long)size, p, (long long)m->shape[p]);
        return pt_refuse(w, what);
    }
    return LT_OK;
}

static void pt_map(pt_view *w, int in, int o) {
    if (w->nout[in] < LT_MAX_DIMS) w->out[in][w->nout[in]++] = o;
}

/* PyTorch's analyze(): which input dims may stay sharded, and the map from
 * input dims to output dims. */
static lt_status pt_analyze(pt_view *w, int no) {
    const lt_mesh *m = w->io->mesh;
    for (int o = 0; o < no; o++)
        for (int j = 0; j < w->rule[o].ndims; j++)
            for (int i = 0; i < m->ndim; i++) w->allowed[w->rule[o].dims[j]][i] = 1;
    for (int o = 0; o < no; o++) {
        const pt_vdim *v = &w->rule[o];
        int dims[LT_MAX_DIMS], n = 0, d;
        if (v->kind == VK_INPUT) {
            pt_map(w, v->dims[0], o);
        } else if (v->kind == VK_FLATTEN) {
            LT_TRY(pt_flatten(w, v, dims, &n));
            for (int j = 0; j < n; j++) pt_map(w, dims[j], o);
        } else if (v->kind == VK_SPLIT) {
            LT_TRY(pt_split(w, v, &d));
            if (d >= 0) pt_map(w, d, o);
            else if (w->nout[v->dims[0]]) pt_map(w, v->dims[0], o); /* the root's later part */
        }
    }
    return LT_OK;
}

/* Is no later mesh dim sharding a dim of [start, end) at or after d? */
static int pt_last_in_run(const lt_placement *t, int nmesh, int i, int start, int end, int d) {
    for (int j = i + 1; j < nmesh; j++)
        if (lt_placement_is_shard_like(&t[j]) && t[j].dim >= start && t[j].dim < end &&
            t[j].dim >= d)
            return 0;
    return 1;
}

/* PyTorch's _rewrite_plain_shard for mesh dim i (input target t, local
 * sizes loc updated): the output placement into *out. */
static lt_status pt_rewrite(const pt_view *w, const lt_placement *t, int i, int64_t *loc,
                            lt_placement *out) {
    const lt_mesh *m = w->io->mesh;
    int d = t[i].dim, o = -1;
    if (w->nout[d] == 1) o = w->out[d][0];
    for (int j = 0; j < w->nout[d] && o < 0; j++)
        if (w->rule[w->out[d][j]].kind == VK_SPLIT && w->rule[w->out[d][j]].part == 0)
            o = w->out[d][j];
    const pt_vdim *v = o >= 0 ? &w->rule[o] : NULL;
    if (!v || (v->kind == VK_SPLIT && v->ndims > 1 && v->dims[0] != d))
        return lt__err(LT_UNSUPPORTED,
                       "%s: an internal error of its view rule (a shard of dim %d); redistribute "
                       "that dim to Replicate first", lt_op_name(w->io->op), d);
    *out = lt_shard(o);
    if (v->kind == VK_FLATTEN) {
        int start = v->dims[0], end = v->dims[v->ndims - 1] + 1;
        int64_t sf = 1;
        for (int e = start; e < d; e++) sf *= loc[e];
        if (d != start) *out = lt_strided(o, (int)sf);
        if (loc[d] % m->shape[i] && !pt_last_in_run(t, m->ndim, i, start, end, d)) {
            char what[200];
            snprintf(what, sizeof what,
                     "cannot shard an unevenly distributed dim: dim %d (local size %lld) over "
                     "mesh dim %d (size %lld)", d, (long long)loc[d], i, (long long)m->shape[i]);
            return pt_refuse(w, what);
        }
    }
    loc[d] /= m->shape[i];
    return LT_OK;
}

/* Does rank r hold, after the view, the same global elements in the same
 * order as before? 1 yes, 0 no (a layout that does not exist included). The
 * two rank layouts it makes are freed here; nothing is left to the caller. */
static int pt_check_rank(const lt__rule_io *io, const lt_placement *tin, int r) {
    const lt_spec *s = io->in[0];
    lt_rank_layout a, b;
    if (lt_layout_rank(io->mesh, s->ndim, s->shape, tin, r, &a)) {
        lt__err_clear();
        return 0;
    }
    if (lt_layout_rank(io->mesh, io->out_ndim, io->out_shape[0], io->out, r, &b)) {
        lt_rank_layout_free(&a);
        lt__err_clear();
        return 0;
    }
    int64_t ia[LT_MAX_DIMS] = {0}, ib[LT_MAX_DIMS] = {0}, na = 1, nb = 1;
    for (int d = 0; d < a.ndim; d++) na *= a.local_shape[d];
    for (int d = 0; d < b.ndim; d++) nb *= b.local_shape[d];
    int ok = na == nb;
    for (int64_t e = 0; e < na && ok; e++) {
        int64_t fa = 0, fb = 0;
        for (int d = 0; d < a.ndim; d++)
            fa = fa * s->shape[d] + (a.idx[d] ? a.idx[d][ia[d]] : ia[d]);
        for (int d = 0; d < b.ndim; d++)
            fb = fb * io->out_shape[0][d] + (b.idx[d] ? b.idx[d][ib[d]] : ib[d]);
        ok = fa == fb;
        for (int d = a.ndim - 1; d >= 0 && ++ia[d] == a.local_shape[d]; d--) ia[d] = 0;
        for (int d = b.ndim - 1; d >= 0 && ++ib[d] == b.local_shape[d]; d--) ib[d] = 0;
    }
    lt_rank_layout_free(&a);
    lt_rank_layout_free(&b);
    return ok;
}

/* The checks of pt_check_rank over every rank, within the budget: 1 all
 * hold, 0 not (or over budget). */
static int pt_check(const lt__rule_io *io, const lt_placement *tin) {
    int64_t numel = lt__numel_sat(io->in[0]->ndim, io->in[0]->shape);
    if (numel > VIEW_CHECK_BUDGET / io->mesh->world) return 0;
    for (int r = 0; r < io->mesh->world; r++)
        if (pt_check_rank(io, tin, r) != 1) return 0;
    return 1;
}

/* PyTorch's placements for the view: the input's targets t and the
 * output's out. LT_UNSUPPORTED: PyTorch refuses (the message says why). */
static lt_status pt_decide(pt_view *w, lt_placement *t, lt_placement *out) {
    const lt__rule_io *io = w->io;
    const lt_mesh *m = io->mesh;
    const lt_spec *s = io->in[0];
    pt_view_groups(w, s->shape, s->ndim, io->out_shape[0], io->out_ndim);
    LT_TRY(pt_analyze(w, io->out_ndim));
    for (int i = 0; i < m->ndim; i++) {
        t[i] = s->placements[i];
        if (t[i].kind != LT_PL_SHARD || w->allowed[t[i].dim][i]) continue;
        if (!w->fallback[t[i].dim][i]) {
            char what[160];
            snprintf(what, sizeof what,
                     "the view removes or reshapes dim %d, sharded on mesh dim %d", t[i].dim, i);
            return pt_refuse(w, what);
        }
        t[i] = lt_replicate();
    }
    int64_t loc[LT_MAX_DIMS];
    memcpy(loc, s->shape, sizeof(int64_t) * (size_t)s->ndim);
    for (int i = 0; i < m->ndim; i++) {
        out[i] = t[i];
        if (t[i].kind == LT_PL_SHARD) LT_TRY(pt_rewrite(w, t, i, loc, &out[i]));
    }
    return LT_OK;
}

lt_status lt__pytorch_view(lt__rule_io *io, int *done) {
    const lt_mesh *m = io->mesh;
    *done = 0;
    if (lt__numel_sat(io->in[0]->ndim, io->in[0]->shape) == 0 || lt__pytorch_has_strided(io))
        return LT_OK;
    pt_view w;
    memset(&w, 0, sizeof w);
    w.io = io;
    lt_placement t[LT_MESH_MAX_DIMS], out[LT_MESH_MAX_DIMS];
    lt_status st = pt_decide(&w, t, out);
    if (st == LT_UNSUPPORTED) { /* PyTorch refuses: noted; the min-comm rule decides */
        lt__pytorch_refuse(io, "%s", lt_errmsg());
        lt__err_clear();
        return LT_OK;
    }
    if (st) return st;
    lt_placement keep[LT_MESH_MAX_DIMS];
    memcpy(keep, io->out, sizeof keep);
    memcpy(io->out, out, sizeof(lt_placement) * (size_t)m->ndim);
    if (!pt_check(io, t)) {
        memcpy(io->out, keep, sizeof keep);
        return LT_OK;
    }
    memcpy(io->tgt[0], t, sizeof(lt_placement) * (size_t)m->ndim);
    *done = 1;
    return LT_OK;
}

lt_status lt__pytorch_matmul_fold(lt__rule_io *io) {
    const lt_spec *a = io->in[0];
    if (io->op != LT_OP_MATMUL || io->nin != 2 || a->ndim < 3 || io->in[1]->ndim != 2)
        return LT_OK;
    lt__rule_io v = *io;
    lt_placement tgt[1][LT_MESH_MAX_DIMS];
    memcpy(tgt[0], a->placements, sizeof tgt[0]);
    v.nin = 1, v.tgt = tgt, v.out_ndim = 2;
    v.out_shape[0][0] = lt__numel_sat(a->ndim - 1, a->shape);
    v.out_shape[0][1] = a->shape[a->ndim - 1];
    memcpy(v.out, a->placements, sizeof v.out);
    v.pt_refuses[0] = '\0';
    int done = 0;
    LT_TRY(lt__pytorch_view(&v, &done));
    if (v.pt_refuses[0] && !io->pt_refuses[0])
        memcpy(io->pt_refuses, v.pt_refuses, sizeof io->pt_refuses);
    return LT_OK;
}

int lt__pytorch_view_of(const lt__rule_io *io, const lt_spec *in, int ndim, const int64_t *shape,
                        lt_placement *tgt, lt_placement *out) {
    lt__rule_io v = *io;
    const lt_spec *vi[1] = {in};
    lt_placement t[1][LT_MESH_MAX_DIMS];
    memcpy(t[0], in->placements, sizeof t[0]);
    v.nin = 1, v.in = vi, v.tgt = t, v.out_ndim = ndim;
    memcpy(v.out_shape[0], shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(v.out, in->placements, sizeof v.out);
    v.pt_refuses[0] = '\0';
    int done = 0;
    if (lt__pytorch_view(&v, &done)) {
        lt__err_clear(); /* out of memory: the caller keeps its own choice */
        return 0;
    }
    if (!done || v.pt_refuses[0]) return 0;
    memcpy(tgt, t[0], sizeof(lt_placement) * (size_t)io->mesh->ndim);
    memcpy(out, v.out, sizeof(lt_placement) * (size_t)io->mesh->ndim);
    return 1;
}
