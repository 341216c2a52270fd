/* localtensor/verify/verify.c — the redistribute verifier: a direct reshard from
 * global index sets (docs/SEMANTICS.md §7, "Semantic definition").
 *
 * This file never calls the planner or the collectives: every expected
 * shard is read straight out of the source shards through owner tables
 * built from layout math (localtensor/layout.h): for each tensor dim and
 * global index, which source rank (its part of the rank number) and which
 * local position hold it. The Partial dims that are not kept are reduced
 * in one fused pass per shard (f32, f64 sums and averages) or with kernels/
 * math, shard by shard. No full-size tensor is ever built, so verifying
 * costs about one pass over the unique bytes it checks.
 *
 * Storage identity comes first: ranks that must hold the same values (they
 * differ only on mesh dims where the checked layout replicates) and share
 * one buffer are checked once; source replicas that share a buffer agree
 * without reading it; a shard that views bytes the previous check proved
 * (the record lt_redistribute passes along, localtensor/verify/verify_impl.h) is
 * right without reading it. The buffers left are checked on the thread
 * pool, one piece of work each, a big one cut into pieces of rows (or of
 * a row, when there are few) so that the threads share even a single
 * buffer (an all-gather's result, which every rank holds); the lowest
 * wrong rank is reported. Runs back to back in both the shard and the
 * source are compared in one memcmp, rows that continue them joined
 * without being walked one by one. The checks' inner loops are in
 * localtensor/verify/verify_fused.c, the record of verified shards in
 * localtensor/verify_record.c.
 */
#include "kernels/alloc.h"
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/layout.h"
#include "localtensor/ragged.h"
#include "localtensor/redistribute.h"
#include "kernels/status_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/spec_impl.h"
#include "localtensor/verify/verify_impl.h"
#include "kernels/memlimit_impl.h"
#include "kernels/pool_impl.h"
#include "kernels/tensor_impl.h"

/* A thread's runs along the last dim (last_dim_runs): r (shape[last], 4),
 * made on first use, and the key of the runs it holds. */
typedef struct vruns { int64_t key[4], *r; } vruns;

/* Everything the expected shards are computed from. */
typedef struct vctx {
    const lt_dtensor *src;
    const lt_mesh *mesh;
    int M, W, ndim;
    size_t es;
    lt_spec dspec;                       /* the checked layout */
    lt_placement dpart[LT_MESH_MAX_DIMS];/* its placements with kept Partials as Replicate */
    int kept[LT_MESH_MAX_DIMS], red[LT_MESH_MAX_DIMS];
    int rstride[LT_MESH_MAX_DIMS];       /* rank = sum coord[i] * rstride[i] */
    lt_redop op;                         /* how the reduced Partial dims combine */
    double avg_div;
    int nR;                              /* coordinate combinations of the reduced dims */
    int math;                            /* 1: values are computed (reduce, divide), not copied */
    double rtol, atol;
    int64_t
        *part[LT_MAX_DIMS]; /* (shape[d]) owner's rank part of global index g; NULL: unsharded */
    int64_t *pos[LT_MAX_DIMS];           /* (shape[d]) its local position; NULL: g itself */
    /* (shape[d]) for the rows' dim (ndim - 2) when sharded: how many
     * indices from g on the same owner holds at consecutive positions (1
     * at least); NULL otherwise */
    int64_t *seg[LT_MAX_DIMS];
    const char **sdata;                  /* (world) lt_data of every source shard in sh */
    lt_tensor *const *sh;                /* (world) the source shards, host-readable: src's own,
                                          * or host_sh */
    lt_tensor **host_sh; /* (world) owned host copies when a shard is off the host */
    vruns runs[LT_THREADS_MAX];          /* per pool slot (kernels/pool_impl.h) */
} vctx;

static void vctx_free(vctx *c) {
    lt__free(c->sdata);
    c->sdata = NULL;
    for (int r = 0; c->host_sh && r < c->W; r++) lt_tensor_free(c->host_sh[r]);
    lt__free(c->host_sh);
    c->host_sh = NULL;
    for (int k = 0; k < LT_THREADS_MAX; k++) {
        lt__free(c->runs[k].r);
        c->runs[k].r = NULL;
    }
    for (int d = 0; d < LT_MAX_DIMS; d++) {
        lt__free(c->part[d]);
        lt__free(c->pos[d]);
        lt__free(c->seg[d]);
        c->part[d] = c->pos[d] = c->seg[d] = NULL;
    }
}

/* Rank r's class in the checked layout: r with its coordinates zeroed on the
 * mesh dims where every rank gets the same expected values (Replicate, and
 * Partial that is not kept: it partitions the same logical tensor). */
static int class_of(const vctx *c, int r) {
    int coord[LT_MESH_MAX_DIMS];
    lt_mesh_coord(c->mesh, r, coord);
    for (int i = 0; i < c->M; i++) {
        lt_placement_kind k = c->dspec.placements[i].kind;
        if (k == LT_PL_REPLICATE || (k == LT_PL_PARTIAL && !c->kept[i])) coord[i] = 0;
    }
    return lt_mesh_rank(c->mesh, coord);
}

/* The owner tables of the source along dim d: the mesh dims sharding d pick
 * the owner; each combination of their coordinates is one layout. */
static lt_status owner_table(vctx *c, int d) {
    const lt_placement *sp = c->src->placements;
    int sd[LT_MESH_MAX_DIMS], ns = 0, ncombo = 1;
    for (int i = 0; i < c->M; i++)
        if (lt_placement_is_shard_like(&sp[i]) && sp[i].dim == d) {
            sd[ns++] = i;
            ncombo *= c->mesh->shape[i];
        }
    if (!ns) return LT_OK;
    int64_t n = c->src->shape[d];
    c->part[d] = lt__malloc(sizeof(int64_t) * (size_t)n);
    c->pos[d] = lt__malloc(sizeof(int64_t) * (size_t)n);
    if (!c->part[d] || !c->pos[d])
        return lt__err(LT_NOMEM, "verify: out of memory for the owner table of dim %d", d);
    for (int64_t g = 0; g < n; g++) c->part[d][g] = -1;
    for (int k = 0; k < ncombo; k++) {
        int rank = 0, rest = k;
        for (int s = ns - 1; s >= 0; s--) {
            rank += (rest % c->mesh->shape[sd[s]]) * c->rstride[sd[s]];
            rest /= c->mesh->shape[sd[s]];
        }
        lt_rank_layout l;
        LT_TRY(lt_spec_layout_rank(lt_dtensor_spec(c->src), rank, &l));
        for (int64_t j = 0; j < l.local_shape[d]; j++) {
            int64_t g = l.idx[d] ? l.idx[d][j] : j;
            c->part[d][g] = rank;
            c->pos[d][g] = j;
        }
        lt_rank_layout_free(&l);
    }
    for (int64_t g = 0; g < n; g++)
        if (c->part[d][g] < 0)
            return lt__err(LT_INVALID, "internal: no source rank holds global index %lld of dim %d",
                           (long long)g, d);
    if (d != c->ndim - 2) return LT_OK;
    c->seg[d] = lt__malloc(sizeof(int64_t) * (size_t)n);
    if (!c->seg[d])
        return lt__err(LT_NOMEM, "verify: out of memory for the owner table of dim %d", d);
    for (int64_t g = n - 1; g >= 0; g--) {
        int go_on =
            g + 1 < n && c->part[d][g + 1] == c->part[d][g] && c->pos[d][g + 1] == c->pos[d][g] + 1;
        c->seg[d][g] = go_on ? c->seg[d][g + 1] + 1 : 1;
    }
    return LT_OK;
}

/* Sets up c to compute the reshard of src to placements dst (np of them). */
static lt_status vctx_init_(vctx *c, const lt_dtensor *src, const lt_placement *dst, int np,
                            const lt_spec *checked) {
    c->src = src;
    c->mesh = lt_dtensor_mesh(src);
    c->M = c->mesh->ndim;
    c->W = c->mesh->world;
    c->ndim = src->ndim;
    c->es = lt_dtype_size(src->dtype);
    lt_placement d[LT_MESH_MAX_DIMS];
    if (checked) {   /* the checked layout is given: what lt_spec_init would make of it */
        c->dspec = *checked;
        c->dspec.mesh = c->mesh;
        memcpy(d, checked->placements, sizeof(lt_placement) * (size_t)np);
    } else {
        LT_TRY(lt_placements_check(c->mesh, c->ndim, dst, np, d));
        LT_TRY(lt_spec_init(c->mesh, src->dtype, c->ndim, src->shape, d, np, &c->dspec));
    }
    const lt_placement *sp = src->placements;
    c->op = LT_REDOP_SUM;
    c->avg_div = 1;
    c->nR = 1;
    for (int i = c->M - 1, st = 1; i >= 0; i--) {
        c->rstride[i] = st;
        st *= c->mesh->shape[i];
    }
    for (int i = 0; i < c->M; i++) {
        c->kept[i] =
            sp[i].kind == LT_PL_PARTIAL && d[i].kind == LT_PL_PARTIAL && sp[i].op == d[i].op;
        c->red[i] = sp[i].kind == LT_PL_PARTIAL && !c->kept[i];
        c->dpart[i] = c->kept[i] ? lt_replicate() : d[i];
        if (c->dpart[i].kind == LT_PL_PARTIAL && c->dpart[i].op == LT_REDOP_SUM &&
            c->mesh->shape[i] > 1)
            c->math = 1;
        if (!c->red[i]) continue;
        c->nR *= c->mesh->shape[i];
        c->op = sp[i].op == LT_REDOP_AVG ? LT_REDOP_SUM : sp[i].op;
        if (sp[i].op == LT_REDOP_AVG) c->avg_div *= c->mesh->shape[i];
    }
    if (c->nR > 1 || c->avg_div != 1) c->math = 1;
    lt_dtype_default_tol(src->dtype, &c->rtol, &c->atol);
    c->sh = src->local->shards;
    int off_host = 0;
    for (int r = 0; r < c->W; r++)
        off_host |= src->local->shards[r] && !lt__on_host(src->local->shards[r]);
    if (off_host) { /* shards the host cannot read: read explicit host copies */
        c->host_sh = lt__calloc((size_t)c->W, sizeof *c->host_sh);
        if (!c->host_sh) return lt__err(LT_NOMEM, "verify: out of memory");
        for (int r = 0; r < c->W; r++)
            if (src->local->shards[r])
                LT_TRY(lt__host_copy_out(src->local->shards[r], &c->host_sh[r]));
        c->sh = c->host_sh;
    }
    c->sdata = lt__malloc(sizeof *c->sdata * (size_t)c->W);
    if (!c->sdata) return lt__err(LT_NOMEM, "verify: out of memory");
    for (int r = 0; r < c->W; r++) c->sdata[r] = c->sh[r] ? lt_data(c->sh[r]) : NULL;
    for (int i = 0; i < c->ndim; i++)
        if (src->shape[i] == 0) return LT_OK;   /* nothing to own */
    for (int k = 0; k < c->ndim; k++) {
        lt_status st = owner_table(c, k);
        if (st) {
            vctx_free(c);
            return st;
        }
    }
    return LT_OK;
}

/* The context of checking src against dst placements in *c; on error
 * nothing is left to free. checked: NULL, or a checked spec of src's
 * tensor with placements dst (np == mesh dims; borrowed), which saves
 * checking them again. */
static lt_status vctx_init(vctx *c, const lt_dtensor *src, const lt_placement *dst, int np,
                           const lt_spec *checked) {
    memset(c, 0, sizeof *c);
    lt_status st = vctx_init_(c, src, dst, np, checked);
    if (st) vctx_free(c);
    return st;
}

/* The runs scratch of the calling thread (wide: pieces run on the pool, one
 * per slot; else slot 0's); NULL with the error set when not made. Owned by c. */
static vruns *runs_of(vctx *c, int wide) {
    vruns *v = &c->runs[wide ? lt__pool_slot() : 0];
    if (!v->r && c->ndim > 0) {
        v->r = lt__malloc(sizeof(int64_t) * 4 * (size_t)c->src->shape[c->ndim - 1]);
        if (!v->r) lt__err(LT_NOMEM, "verify: out of memory for the runs of the last dim");
        v->key[0] = 0;   /* no runs kept yet */
    }
    return v->r ? v : NULL;
}

/* The runs of layout L's last dim (lt__verify_last_dim_runs) into rn. */
static int64_t last_dim_runs(const vctx *c, const lt_rank_layout *L, vruns *rn) {
    int last = c->ndim - 1;
    return lt__verify_last_dim_runs(L->idx[last], L->local_shape[last],
                                    !L->idx[last] || L->contiguous[last], c->part[last],
                                    c->pos[last], rn->key, rn->r);
}

/* Rows of a shard of layout L: the product of every dim but the last (1
 * for a 0-d or 1-d shard); within int64, as the shard's element count is. */
static int64_t rows_of(const vctx *c, const lt_rank_layout *L) {
    int64_t n = 1;
    for (int d = 0; d + 1 < c->ndim; d++) n *= L->local_shape[d];
    return n;
}

/* outer (the indices of every dim but the last) of row `row` of layout L. */
static void row_coords(const vctx *c, const lt_rank_layout *L, int64_t row, int64_t *outer) {
    for (int d = c->ndim - 2; d >= 0; d--) {
        outer[d] = row % L->local_shape[d];
        row /= L->local_shape[d];
    }
}

/* A part of a shard: rows [row0, row1) (rows_of), and of each the elements [col0, col1). */
typedef struct vspan {
    int64_t row0, row1, col0, col1;
} vspan;

/* The whole of a shard of layout L. */
static vspan whole(const vctx *c, const lt_rank_layout *L) {
    vspan w = {0, rows_of(c, L), 0, c->ndim ? L->local_shape[c->ndim - 1] : 1};
    return w;
}

/* Clips the run of *len elements from column *j (source position *p0 on) to sp's columns; 0: none
 * left. */
static int clip_run(const vspan *sp, int64_t *j, int64_t *len, int64_t *p0) {
    int64_t lo = *j > sp->col0 ? *j : sp->col0, hi = *j + *len < sp->col1 ? *j + *len : sp->col1;
    if (lo >= hi) return 0;
    *p0 += lo - *j;
    *len = hi - lo;
    *j = lo;
    return 1;
}

/* Walks the elements of part sp of a shard of layout L in row-major
 * order, in runs along the last dim that one source rank holds at
 * consecutive positions; `base` is the rank part of the Partial dims. With
 * dst (contiguous, L's shape, sp the whole shard): copies them there. With
 * act: compares act's bytes with them and returns 1 when any byte differs
 * (contiguous runs compared together: lt__vpend). Returns 0 otherwise. */
static int walk(const vctx *c, const lt_rank_layout *L, int64_t base, lt_tensor *dst,
                const lt_tensor *act, vruns *rn, const vspan *sp) {
    int nd = c->ndim, last = nd - 1;
    size_t es = c->es;
    lt_tensor *const *sh = c->sh;
    if (nd == 0) {
        const char *s = lt_data(sh[base]);
        if (dst) memcpy(lt_data(dst), s, es);
        return act ? memcmp(lt_data(act), s, es) != 0 : 0;
    }
    for (int d = 0; d < nd; d++)
        if (L->local_shape[d] == 0) return 0;
    int64_t outer[LT_MAX_DIMS] = {0}, nr = last_dim_runs(c, L, rn);
    char *dp = dst ? lt_data(dst) : NULL;
    const char *abase = act ? lt_data(act) : NULL;
    lt__vpend pend = {NULL, NULL, 0};
    row_coords(c, L, sp->row0, outer);
    for (int64_t row = sp->row0; row < sp->row1; row++) {
        int64_t rk = base, posv[LT_MAX_DIMS], aoff = 0, jlen = 0;
        const lt_tensor *jt = NULL;   /* the source of a row's only run, when it joined pend */
        for (int d = 0; d < last; d++) {
            int64_t g = L->idx[d] ? L->idx[d][outer[d]] : outer[d];
            rk += c->part[d] ? c->part[d][g] : 0;
            posv[d] = c->pos[d] ? c->pos[d][g] : g;
            if (act) aoff += outer[d] * act->strides[d];
        }
        for (int64_t q = 0; q < nr; q++) {
            int64_t j = rn->r[4 * q], len = rn->r[4 * q + 1], pr = rn->r[4 * q + 2],
                    p0 = rn->r[4 * q + 3];
            if (!clip_run(sp, &j, &len, &p0)) continue;
            const lt_tensor *t = sh[rk + pr];
            int64_t off = p0 * t->strides[last];
            for (int d = 0; d < last; d++) off += posv[d] * t->strides[d];
            const char *s = c->sdata[rk + pr] + off * (int64_t)es;
            int64_t ss = t->strides[last];
            if (dst) {
                if (ss == 1 || len == 1) memcpy(dp, s, (size_t)len * es);
                else
                    for (int64_t k = 0; k < len; k++)
                        memcpy(dp + (size_t)k * es, s + k * ss * (int64_t)es, es);
                dp += (size_t)len * es;
            }
            if (act) {
                const char *a = abase + (aoff + j * act->strides[last]) * (int64_t)es;
                int64_t as = act->strides[last];
                if (a == s && (as == ss || len == 1)) continue;   /* the very bytes of the source */
                if ((ss == 1 && as == 1) || len == 1) {
                    if (lt__verify_pend_add(&pend, a, s, (size_t)len * es)) return 1;
                    if (nr == 1) jt = t, jlen = len;
                } else {
                    for (int64_t k = 0; k < len; k++)
                        if (memcmp(a + k * as * (int64_t)es, s + k * ss * (int64_t)es, es))
                            return 1;
                }
            }
        }
        if (jt && last >= 1) {
            /* the next rows join pend unwalked while they continue it: consecutive
             * global rows, one owner at consecutive positions (seg), rows packed */
            int d1 = last - 1;
            int64_t m = 0, g = L->idx[d1] ? L->idx[d1][outer[d1]] : outer[d1];
            if (jt->strides[d1] == jlen && act->strides[d1] == jlen &&
                (!L->idx[d1] || L->contiguous[d1])) {
                m = L->local_shape[d1] - 1 - outer[d1];
                if (sp->row1 - 1 - row < m) m = sp->row1 - 1 - row;
                if (c->seg[d1] && c->seg[d1][g] - 1 < m) m = c->seg[d1][g] - 1;
            }
            if (m > 0) {
                pend.n += (size_t)m * (size_t)jlen * es;   /* within the two buffers: no overflow */
                row += m;
                outer[d1] += m;
            }
        }
        int d = last - 1;
        while (d >= 0 && ++outer[d] == L->local_shape[d]) outer[d--] = 0;
    }
    return pend.n && memcmp(pend.a, pend.s, pend.n) != 0;
}

/* The rank part of rank r's kept Partial coordinates plus reduced
 * combination q. */
static int64_t base_of(const vctx *c, int r, int q) {
    int coord[LT_MESH_MAX_DIMS];
    int64_t b = 0;
    lt_mesh_coord(c->mesh, r, coord);
    for (int i = c->M - 1; i >= 0; i--) {
        if (c->kept[i]) b += (int64_t)coord[i] * c->rstride[i];
        if (c->red[i]) {
            b += (int64_t)(q % c->mesh->shape[i]) * c->rstride[i];
            q /= c->mesh->shape[i];
        }
    }
    return b;
}

/* The fused check of a reduced shard: 1 where it applies (f32 or f64,
 * summed or averaged Partial dims, no Replicate -> Partial partition, at
 * most FUSE_MAX contributions). */
#define FUSE_MAX 64
static int fusable(const vctx *c) {
    if (c->src->dtype != LT_F32 && c->src->dtype != LT_F64) return 0;
    if (c->op != LT_REDOP_SUM || c->nR > FUSE_MAX) return 0;
    for (int i = 0; i < c->M; i++)
        if (c->dpart[i].kind == LT_PL_PARTIAL && c->dpart[i].op == LT_REDOP_SUM &&
            c->mesh->shape[i] > 1)
            return 0;
    return 1;
}

/* A sum of nR contributions rounded in the dtype is exact only up to
 * rounding, and a plan may add them in another order than the expected
 * shard does: each order lies within (nR - 1) u sum|x| of the exact sum
 * (recursive summation; u the dtype's unit roundoff), so two orders may
 * differ by twice that. Returns the factor of sum|x| (divided as the
 * values are: avg, and a Replicate->Partial(sum) partition) allowed on top
 * of lt_compare's tolerance; 0 when nothing is summed (max, min, one
 * contribution, integers). So [256, 1, 1, -256] in bf16 may come out 0 or
 * 2, and neither is reported (docs/SEMANTICS.md §11.5, §11.8). */
static double sum_slack(const vctx *c) {
    double u;
    switch (c->src->dtype) {
    case LT_BF16: u = 0x1p-8; break;
    case LT_F16: u = 0x1p-11; break;
    case LT_F32: u = 0x1p-24; break;
    case LT_F64: u = 0x1p-53; break;
    default: return 0;
    }
    if (c->nR < 2 || c->op != LT_REDOP_SUM) return 0;
    double div = c->avg_div;
    for (int i = 0; i < c->M; i++)
        if (c->dpart[i].kind == LT_PL_PARTIAL && c->dpart[i].op == LT_REDOP_SUM)
            div *= c->mesh->shape[i];
    return 2.0 * (c->nR - 1) * u / div;
}

/* Part sp of rank r's shard act (layout L) against the reduction of its
 * nR contributions, element by element, without building the expected
 * shard: one pass over the contributions and act. Returns 1 when an
 * element is out of tolerance (the caller then builds the expected shard
 * to say where), 0 when all agree. rn: the runs scratch. */
static int fused_check(const vctx *c, const lt_rank_layout *L, int r, const lt_tensor *act,
                       vruns *rn, const vspan *sp) {
    int nd = c->ndim, last = nd - 1, nq = c->nR;
    size_t es = c->es;
    int64_t base[FUSE_MAX];
    for (int q = 0; q < nq; q++) base[q] = base_of(c, r, q);
    lt_tensor *const *sh = c->sh;
    int f32 = c->src->dtype == LT_F32;
    double slack = sum_slack(c);
    const char *s[FUSE_MAX];
    int64_t ss[FUSE_MAX];
    if (nd == 0) {
        for (int q = 0; q < nq; q++) s[q] = c->sdata[base[q]], ss[q] = 1;
        return f32 ? lt__verify_fused_run_f32(s, ss, nq, lt_data(act), 1, 1, c->avg_div, c->rtol,
                                              c->atol, sum_slack(c))
                   : lt__verify_fused_run_f64(s, ss, nq, lt_data(act), 1, 1, c->avg_div, c->rtol,
                                              c->atol, sum_slack(c));
    }
    for (int d = 0; d < nd; d++)
        if (L->local_shape[d] == 0) return 0;
    int64_t outer[LT_MAX_DIMS] = {0}, nr = last_dim_runs(c, L, rn);
    const char *abase = lt_data(act);
    row_coords(c, L, sp->row0, outer);
    for (int64_t row = sp->row0; row < sp->row1; row++) {
        int64_t rk = 0, posv[LT_MAX_DIMS], aoff = 0;
        for (int d = 0; d < last; d++) {
            int64_t g = L->idx[d] ? L->idx[d][outer[d]] : outer[d];
            rk += c->part[d] ? c->part[d][g] : 0;
            posv[d] = c->pos[d] ? c->pos[d][g] : g;
            aoff += outer[d] * act->strides[d];
        }
        for (int64_t k = 0; k < nr; k++) {
            int64_t j = rn->r[4 * k], len = rn->r[4 * k + 1], pr = rn->r[4 * k + 2],
                    p0 = rn->r[4 * k + 3];
            if (!clip_run(sp, &j, &len, &p0)) continue;
            for (int q = 0; q < nq; q++) {
                const lt_tensor *t = sh[base[q] + rk + pr];
                int64_t off = p0 * t->strides[last];
                for (int d = 0; d < last; d++) off += posv[d] * t->strides[d];
                s[q] = c->sdata[base[q] + rk + pr] + off * (int64_t)es;
                ss[q] = t->strides[last];
            }
            const char *a = abase + (aoff + j * act->strides[last]) * (int64_t)es;
            int bad = f32 ? lt__verify_fused_run_f32(s, ss, nq, a, act->strides[last], len,
                                                     c->avg_div, c->rtol, c->atol, slack)
                          : lt__verify_fused_run_f64(s, ss, nq, a, act->strides[last], len,
                                                     c->avg_div, c->rtol, c->atol, slack);
            if (bad) return 1;
        }
        int d = last - 1;
        while (d >= 0 && ++outer[d] == L->local_shape[d]) outer[d--] = 0;
    }
    return 0;
}

/* Rank r's expected shard (layout L of the checked spec) into *out, a new
 * contiguous tensor (caller frees); wide as in runs_of. */
static lt_status expected_shard(vctx *c, int r, const lt_rank_layout *L, int wide,
                                lt_tensor **out) {
    lt_dtype dt = c->src->dtype;
    lt_tensor *e = NULL, *contrib = NULL;
    *out = NULL;
    if (!L->lists) return lt_tensor_new(dt, c->ndim, L->local_shape, out);
    vruns *rn = c->ndim ? runs_of(c, wide) : NULL;
    if (c->ndim && !rn) return LT_NOMEM;
    /* built on the host (walk writes it there), moved to the default backend at the end */
    LT_TRY(lt__tensor_new_uninit(lt_backend_cpu(), dt, c->ndim, L->local_shape, &e));
    vspan all = whole(c, L);
    walk(c, L, base_of(c, r, 0), e, NULL, rn, &all);
    lt_status st = LT_OK;
    if (c->nR > 1)
        st = lt__tensor_new_uninit(lt_backend_cpu(), dt, c->ndim, L->local_shape, &contrib);
    for (int q = 1; q < c->nR && !st; q++) {
        walk(c, L, base_of(c, r, q), contrib, NULL, rn, &all);
        st = lt_accumulate(e, contrib, c->op);
    }
    lt_tensor_free(contrib);
    if (!st && c->avg_div != 1) {
        int64_t n = lt_numel(e);
        for (int64_t j = 0; j < n; j++) lt_set_flat(e, j, lt_get_flat(e, j) / c->avg_div);
    }
    if (!st) st = lt__partition(e, c->mesh, c->dpart);
    if (!st && lt_backend_default() != lt_backend_cpu()) {
        lt_tensor *d = NULL;
        st = lt__tensor_new_uninit(lt_backend_default(), dt, c->ndim, L->local_shape, &d);
        if (!st) st = lt_copy(d, e);
        lt_tensor_free(e);
        e = d;
    }
    if (st) {
        lt_tensor_free(e);
        return st;
    }
    *out = e;
    return LT_OK;
}

/* lt_compare found rank r's shard a (layout L) apart from its expected
 * shard e in *res: counts the elements apart again with sum_slack's
 * allowance on top of the tolerance (each element's sum of |contribution|
 * read anew from the source), rewriting res's equal, ndiff and first
 * difference (max_abs_diff stays). Runs only on the way to a report, on
 * the calling thread (runs scratch of slot 0), through doubles. */
static lt_status recheck_sum(vctx *c, int r, const lt_rank_layout *L, const lt_tensor *a,
                             const lt_tensor *e, lt_compare_result *res) {
    double slack = sum_slack(c);
    int64_t n = lt_numel(e);
    if (slack == 0 || !L->lists || res->equal || n <= 0) return LT_OK;
    if ((uint64_t)n > SIZE_MAX / (4 * sizeof(double)))
        return lt__err(LT_OVERFLOW,
                       "verify: rank %d's shard of %lld elements is too big to recheck", r,
                       (long long)n);
    double *av =
        lt__malloc(4 * sizeof(double) * (size_t)n); /* (4, n): actual, expected, sum |x|, x */
    lt_tensor *contrib = NULL;
    vruns *rn = c->ndim ? runs_of(c, 0) : NULL;
    lt_status st = av ? LT_OK : lt__err(LT_NOMEM, "verify: out of memory");
    if (!st && c->ndim && !rn) st = LT_NOMEM;
    if (!st)
        st = lt__tensor_new_uninit(lt_backend_cpu(), c->src->dtype, c->ndim, L->local_shape,
                                   &contrib);
    if (!st) {
        double *ev = av + n, *mag = ev + n, *x = mag + n;
        vspan all = whole(c, L);
        lt_to_doubles(a, av);
        lt_to_doubles(e, ev);
        memset(mag, 0, sizeof(double) * (size_t)n);
        for (int q = 0; q < c->nR; q++) {
            walk(c, L, base_of(c, r, q), contrib, NULL, rn, &all);
            lt_to_doubles(contrib, x);
            for (int64_t k = 0; k < n; k++) mag[k] += fabs(x[k]);
        }
        res->ndiff = 0;
        res->first_flat = -1;
        for (int64_t k = 0; k < n; k++) {
            if (lt__verify_close_enough(av[k], ev[k], c->rtol, c->atol + slack * mag[k])) continue;
            if (res->ndiff++ == 0) {
                res->first_flat = k;
                res->actual = av[k];
                res->expected = ev[k];
            }
        }
        res->equal = res->ndiff == 0;
        for (int64_t d = c->ndim - 1, f = res->first_flat; d >= 0 && f >= 0; d--) {
            res->first_idx[d] = f % L->local_shape[d];
            f /= L->local_shape[d];
        }
    }
    lt_tensor_free(contrib);
    lt__free(av);
    return st;
}

/* Replicas of the source must agree (docs/SEMANTICS.md §7): every rank
 * against the rank with its Replicate coordinates zeroed; a shared buffer
 * agrees without being read. */
static lt_status check_source(const vctx *c, lt_verify_report *rep) {
    const lt_placement *sp = c->src->placements;
    lt_tensor *const *sh = c->src->local->shards;
    for (int r = 0; r < c->W; r++) {
        int coord[LT_MESH_MAX_DIMS], rep_dim = 0;
        lt_mesh_coord(c->mesh, r, coord);
        for (int i = 0; i < c->M; i++)
            if (sp[i].kind == LT_PL_REPLICATE && coord[i]) coord[i] = 0, rep_dim = 1;
        if (!rep_dim) continue;
        int p = lt_mesh_rank(c->mesh, coord);
        if (lt_tensor_same_view(sh[r], sh[p])) continue;
        lt_compare_result res;
        LT_TRY(lt_compare(sh[r], sh[p], c->rtol, c->atol, &res));
        if (res.equal) continue;
        lt_rank_layout l;
        LT_TRY(lt_spec_layout_rank(lt_dtensor_spec(c->src), r, &l));
        lt_status st = lt__verify_element_mismatch(rep, -1, "the source's replicas disagree: ", r,
                                                   c->ndim, &res, &l);
        lt_rank_layout_free(&l);
        return st;
    }
    return LT_OK;
}

/* lt_reshard_direct with a RaggedShard on either side (docs/SEMANTICS.md
 * §11.10: no Partial dim is kept there): src's full tensor, reassembled
 * directly (Partial dims reduced), distributed with dst. */
static lt_status ragged_direct(const lt_dtensor *src, const lt_placement *dst, int np,
                               lt_dtensor **out) {
    lt_tensor *full = NULL;
    LT_TRY(lt_full_tensor_direct(src, &full));
    lt_status st = lt_distribute(lt_dtensor_mesh(src), full, dst, np, out);
    lt_tensor_free(full);
    return st;
}

lt_status lt_reshard_direct(const lt_dtensor *src, const lt_placement *dst, int np,
                            lt_dtensor **out, lt_verify_report *rep) {
    vctx c;
    *out = NULL;
    if (lt_placements_have_ragged(src->placements, lt_dtensor_mesh(src)->ndim) ||
        lt_placements_have_ragged(dst, np))
        return ragged_direct(src, dst, np, out);
    if (lt_local_count(src->local) < lt_dtensor_mesh(src)->world)
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: the direct reshard of a DTensor with absent shards "
                            "(%d of %d ranks held)",
                            lt_local_count(src->local), lt_dtensor_mesh(src)->world);
    LT_TRY(vctx_init(&c, src, dst, np, NULL));
    lt_local *local = NULL;
    uint64_t need, extra;
    lt_status st = lt_spec_unique_bytes(&c.dspec, &need);
    if (!st) st = lt__verify_bytes(lt_dtensor_spec(src), &c.dspec, &extra);
    if (!st) st = lt_check_memory(lt__add_sat(need, extra), c.W, "the direct reshard");
    if (!st) st = check_source(&c, rep);
    if (!st) st = lt_local_new(c.mesh, &local);
    for (int r = 0; r < c.W && !st; r++) {
        int k = class_of(&c, r);
        if (k != r) {   /* the same values as its class: one buffer */
            st = lt_tensor_view(local->shards[k], &local->shards[r]);
            continue;
        }
        lt_rank_layout L;
        st = lt_spec_layout_rank(&c.dspec, r, &L);
        if (st) break;
        st = expected_shard(&c, r, &L, 0, &local->shards[r]);
        lt_rank_layout_free(&L);
    }
    vctx_free(&c);
    if (st) {
        lt_local_free(local);
        return st;
    }
    return lt__dtensor_wrap(local, &c.dspec, out);
}

/* ---- the check: one piece of work per unique buffer ---------------------------------------- */

/* One rank to check (the first of its class holding that buffer). */
typedef struct vjob {
    int rank;
    int bad;                 /* 1: a value differs; res says where. 2: the fused
                              * check found one; where is found after the pool's section */
    int recorded;            /* 1: rec holds where its verified bytes lie */
    int64_t npieces;         /* > 0: its bytes are checked in that many pieces
                              * (check_piece, piece_span), numbered from first_piece */
    int64_t cuts;            /* > 1: pieces are parts of single rows, that many a row */
    int64_t first_piece;
    atomic_int suspect;      /* 1: a piece found bytes that differ (set by the pieces) */
    lt_compare_result res;
    lt__vshard rec;
} vjob;

typedef struct vrun {
    vctx *c;
    const lt_dtensor *actual;
    const lt__verified *prev;   /* borrowed; NULL: no earlier state */
    int exact; /* 1: the checked layout has no Partial: shards hold the global tensor's values */
    int wide;                   /* 1: the jobs run on the pool */
    int fused;                  /* 1: reduced values checked by fused_check */
    int split;                  /* 1: big shards are checked in pieces on the pool */
    uint64_t piece;             /* bytes of such a piece (piece_bytes) */
    int njobs;                  /* jobs whose pieces check_piece may be given */
    vjob *jobs;                 /* (njobs) in rank order */
} vrun;

/* 1 when shard a (box goff, n of an exact state) is a view of bytes already
 * verified to hold the global tensor's values (v->prev, same storage): each
 * of its elements lies exactly where the verified shard keeps the same
 * global index. Equal bytes then, without reading them. */
static int view_of_verified(const vrun *v, const lt_tensor *a, const int64_t *goff,
                            const int64_t *n) {
    const vctx *c = v->c;
    int nd = c->ndim;
    if (!v->exact || !v->prev || !v->prev->n || a->placeholder || a->dtype != c->src->dtype ||
        a->ndim != nd)
        return 0;
    int lo = 0, hi = v->prev->n;   /* the first entry with a's storage */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (v->prev->e[mid].storage < (uintptr_t)a->storage) lo = mid + 1;
        else hi = mid;
    }
    for (int k = lo; k < v->prev->n && v->prev->e[k].storage == (uintptr_t)a->storage; k++) {
        const lt__vshard *e = &v->prev->e[k];
        int64_t off = e->offset;
        int fits = 1;
        for (int d = 0; d < nd && fits; d++) {
            if (goff[d] < e->goff[d] || goff[d] + n[d] > e->goff[d] + e->n[d]) fits = 0;
            if (n[d] > 1 && a->strides[d] != e->strides[d]) fits = 0;
            off += (goff[d] - e->goff[d]) * e->strides[d];
        }
        if (fits && off == a->offset) return 1;
    }
    return 0;
}

/* Bytes of one piece of a shard checked in pieces, when the jobs read
 * `total` bytes: half of one thread's share, so that the threads share
 * even a single big buffer (an all-gather's result), but a shard of up to
 * a thread's share is not cut (each piece makes its layout anew: index
 * lists, runs; a strided layout's cost a few percent of reading the
 * shard). At least 1 MiB, or less when lt__par_min_bytes is (tests reach
 * pieces of one row that way). */
static uint64_t piece_bytes(uint64_t total) {
    uint64_t least = lt__par_min_bytes() / 16, b = total / (2 * (uint64_t)lt__pool_width());
    if (least > ((uint64_t)1 << 20)) least = (uint64_t)1 << 20;
    if (!least) least = 1;
    return b > least ? b : least;
}

/* [*lo, *hi): part p of n (an even split of count). */
static void even_part(int64_t count, int64_t n, int64_t p, int64_t *lo, int64_t *hi) {
    int64_t per = count / n, rem = count % n;
    *lo = p * per + (p < rem ? p : rem);
    *hi = *lo + per + (p < rem);
}

/* Piece p of job j: an even split of the rows into j->npieces, or, with
 * fewer rows than pieces (j->cuts > 1), each row cut into j->cuts even
 * parts of the last dim. */
static vspan piece_span(const vctx *c, const lt_rank_layout *L, const vjob *j, int64_t p) {
    vspan sp = whole(c, L);
    if (j->cuts > 1) {
        sp.row0 = p / j->cuts;
        sp.row1 = sp.row0 + 1;
        even_part(sp.col1, j->cuts, p % j->cuts, &sp.col0, &sp.col1);
    } else
        even_part(sp.row1, j->npieces, p, &sp.row0, &sp.row1);
    return sp;
}

/* Checks job i's shard: a view of verified bytes, else byte for byte
 * against the source where values are copied, else against its computed
 * expected shard. LT_MISMATCH (no message; the job holds the difference)
 * when it differs. A big shard whose bytes must be read (v->split) is only
 * cut into pieces here (j->npieces); check_piece reads them. */
static lt_status check_job(void *ctx, int64_t i) {
    vrun *v = ctx;
    vctx *c = v->c;
    vjob *j = &v->jobs[i];
    const lt_tensor *a = v->actual->local->shards[j->rank];
    lt_rank_layout L;
    LT_TRY(lt_spec_layout_rank(&c->dspec, j->rank, &L));
    lt_status st = LT_OK;
    int64_t goff[LT_MAX_DIMS], n[LT_MAX_DIMS];
    int box = v->exact && L.lists && lt__verify_box_of(&L, c->ndim, c->src->shape, goff, n);
    int good = !L.lists || (box && view_of_verified(v, a, goff, n));
    if (!good && v->split && lt__on_host(a)) {   /* v->split: values copied or fused */
        uint64_t per = v->piece;
        int64_t rows = rows_of(c, &L), cols = c->ndim ? L.local_shape[c->ndim - 1] : 1;
        int64_t np = (int64_t)((uint64_t)lt_nbytes(a) / per), cuts = 1;
        if (np > rows) {   /* few long rows (a 1-d shard): rows cut too */
            cuts = (np + rows - 1) / rows;
            if (cuts > cols) cuts = cols;
            np = rows * cuts;   /* <= the shard's element count */
        }
        if (np > 1) {
            j->npieces = np;
            j->cuts = cuts;
            good = 1;   /* for now: its pieces tell */
        }
    }
    if (!good && (!c->math || v->fused)) {
        vruns *rn = c->ndim ? runs_of(c, v->wide) : NULL;   /* a 0-d shard has no runs */
        lt_tensor *ah = NULL;   /* a, host-readable (a copy when off the host) */
        if (c->ndim && !rn) st = LT_NOMEM;
        else if (!lt__on_host(a)) st = lt__host_copy_out(a, &ah);
        if (!st) {
            const lt_tensor *ha = ah ? ah : a;
            vspan all = whole(c, &L);
            good = c->math ? !fused_check(c, &L, j->rank, ha, rn, &all)
                           : !walk(c, &L, base_of(c, j->rank, 0), NULL, ha, rn,
                                   &all); /* byte for byte what the source holds there */
        }
        lt_tensor_free(ah);
    }
    if (!st && !good && v->wide &&
        c->math) { /* the expected shard is built after the pool's section, on this thread */
        j->bad = 2;
        st = LT_MISMATCH;
    }
    if (!st && !good) {
        lt_tensor *e = NULL;
        st = expected_shard(c, j->rank, &L, v->wide, &e);
        if (!st) st = lt_compare(a, e, c->rtol, c->atol, &j->res);
        if (!st && !j->res.equal) st = recheck_sum(c, j->rank, &L, a, e, &j->res);
        lt_tensor_free(e);
        if (!st && !j->res.equal) {
            j->bad = 1;
            st = LT_MISMATCH;
        }
    }
    if (!st && box) {
        memcpy(j->rec.goff, goff, sizeof goff);
        memcpy(j->rec.n, n, sizeof n);
        j->rec.storage = (uintptr_t)a->storage;
        j->rec.offset = a->offset;
        memcpy(j->rec.strides, a->strides, sizeof a->strides);
        j->recorded = !a->placeholder;
    }
    lt_rank_layout_free(&L);
    return st;
}

/* Piece i of the shards check_job cut into pieces (numbered across jobs
 * by first_piece): its rows read byte for byte against the source, or
 * through the fused check. A difference only marks the job suspect (every
 * piece runs; run_jobs then says whether and where it differs); errors
 * are LT_NOMEM. */
static lt_status check_piece(void *ctx, int64_t i) {
    vrun *v = ctx;
    vctx *c = v->c;
    int lo = 0, hi = v->njobs - 1;   /* the last job whose first piece is <= i: i's job */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (v->jobs[mid].first_piece <= i) lo = mid;
        else hi = mid - 1;
    }
    vjob *j = &v->jobs[lo];
    const lt_tensor *a = v->actual->local->shards[j->rank];
    lt_rank_layout L;
    LT_TRY(lt_spec_layout_rank(&c->dspec, j->rank, &L));
    vruns *rn = runs_of(c, 1);
    lt_status st = rn ? LT_OK : LT_NOMEM;
    if (!st) {
        vspan sp = piece_span(c, &L, j, i - j->first_piece);
        int bad = c->math ? fused_check(c, &L, j->rank, a, rn, &sp)
                          : walk(c, &L, base_of(c, j->rank, 0), NULL, a, rn, &sp);
        if (bad) atomic_store_explicit(&j->suspect, 1, memory_order_relaxed);
    }
    lt_rank_layout_free(&L);
    return st;
}

/* Rank j's shard was found different by check_piece (the fast compare):
 * whether it is, from its expected shard (lt_compare's tolerance, the sum
 * order's slack), on the calling thread. LT_MISMATCH with j->bad = 1 and
 * j->res when it is; LT_OK when the bytes differ but the values agree (an
 * exact copy: -0 for 0, another NaN); an internal error when the fused
 * check and the expected shard disagree. */
static lt_status recheck_suspect(vrun *v, vjob *j) {
    vctx *c = v->c;
    const lt_tensor *a = v->actual->local->shards[j->rank];
    lt_rank_layout L;
    LT_TRY(lt_spec_layout_rank(&c->dspec, j->rank, &L));
    lt_tensor *e = NULL;
    lt_status st = expected_shard(c, j->rank, &L, 0, &e);
    if (!st) st = lt_compare(a, e, c->rtol, c->atol, &j->res);
    if (!st && !j->res.equal) st = recheck_sum(c, j->rank, &L, a, e, &j->res);
    lt_tensor_free(e);
    lt_rank_layout_free(&L);
    if (!st && !j->res.equal) {
        j->bad = 1;
        return LT_MISMATCH;
    }
    if (!st && c->math)
        st = lt__err(LT_INVALID, "internal: rank %d's shard differs in the fused check only",
                     j->rank);
    return st;
}

/* Runs the jobs (on the pool when v->wide), then the pieces of the ones cut
 * into pieces below the lowest failing job (on the pool), then reports the
 * first difference by rank. */
static lt_status run_jobs(vrun *v, int njobs, int step, lt_verify_report *rep) {
    lt_status st;
    v->njobs = njobs;
    if (v->wide) st = lt__parallel_for(njobs, check_job, v);
    else {
        st = LT_OK;
        for (int i = 0; i < njobs && !st; i++) st = check_job(v, i);
    }
    if (st && st != LT_MISMATCH) return st;
    int low = njobs;   /* the lowest failing job: every job below it ran */
    for (int i = 0; i < njobs && low == njobs; i++)
        if (v->jobs[i].bad) low = i;
    int64_t npieces = 0;
    for (int i = 0; i < low; i++) {
        v->jobs[i].first_piece = npieces;
        npieces += v->jobs[i].npieces;   /* <= a shard's element count each: no overflow */
    }
    if (npieces) {
        v->njobs = low;
        st = lt__parallel_for(npieces, check_piece, v);
        v->njobs = njobs;
        if (st) return st;
    }
    for (int i = 0; i < njobs; i++) {
        vjob *j = &v->jobs[i];
        if (i < low && j->npieces && atomic_load_explicit(&j->suspect, memory_order_relaxed)) {
            st = recheck_suspect(v, j);
            if (st && st != LT_MISMATCH) return st;
        }
        if (!j->bad) continue;
        lt_rank_layout L;
        LT_TRY(lt_spec_layout_rank(&v->c->dspec, j->rank, &L));
        st = LT_OK;
        if (j->bad == 2) {   /* found by fused_check on the pool: where, from the expected shard */
            lt_tensor *e = NULL;
            st = expected_shard(v->c, j->rank, &L, 0, &e);
            if (!st)
                st = lt_compare(v->actual->local->shards[j->rank], e, v->c->rtol, v->c->atol,
                                &j->res);
            if (!st && !j->res.equal)
                st = recheck_sum(v->c, j->rank, &L, v->actual->local->shards[j->rank], e, &j->res);
            lt_tensor_free(e);
            if (!st && j->res.equal)
                st = lt__err(LT_INVALID,
                             "internal: rank %d's shard differs in the fused check only", j->rank);
        }
        if (!st) st = lt__verify_element_mismatch(rep, step, "", j->rank, v->c->ndim, &j->res, &L);
        lt_rank_layout_free(&L);
        return st;
    }
    if (low < njobs)
        return lt__err(LT_MISMATCH, "internal: a verification piece failed without a difference");
    return LT_OK;
}

/* Where this check's verified bytes lie, for the next check: a new record
 * into *out (caller frees with lt__verified_free). */
static lt_status make_record(const vrun *v, int njobs, lt__verified **out) {
    *out = NULL;
    lt__verified *r = lt__calloc(1, sizeof *r);
    int n = 0;
    for (int i = 0; i < njobs; i++) n += v->jobs[i].recorded;
    if (r && n) r->e = lt__malloc(sizeof *r->e * (size_t)n);
    if (!r || (n && !r->e)) {
        lt__verified_free(r);
        return lt__err(LT_NOMEM, "verify: out of memory for the record of verified shards");
    }
    for (int i = 0; i < njobs; i++)
        if (v->jobs[i].recorded) r->e[r->n++] = v->jobs[i].rec;
    if (r->n > 1) qsort(r->e, (size_t)r->n, sizeof *r->e, lt__vshard_cmp);
    *out = r;
    return LT_OK;
}

/* The two DTensors can be compared: one mesh, rank, dtype and global
 * shape, and every source shard held here. */
static lt_status verify_args(const lt_dtensor *src, const lt_dtensor *actual) {
    const lt_mesh *mesh = lt_dtensor_mesh(src);
    if (!lt_mesh_equal(mesh, lt_dtensor_mesh(actual)) || src->ndim != actual->ndim ||
        src->dtype != actual->dtype)
        return lt__err(LT_INVALID, "verify: the two DTensors differ in mesh, rank or dtype");
    for (int d = 0; d < src->ndim; d++)
        if (src->shape[d] != actual->shape[d])
            return lt__err(LT_INVALID, "verify: global shapes differ in dim %d", d);
    if (lt_local_count(src->local) < mesh->world)
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: verifying against a source with absent shards (%d "
                            "of %d ranks held)",
                            lt_local_count(src->local), mesh->world);
    return LT_OK;
}

/* The ranks to check, one job each: a buffer checked for its class of
 * ranks already is not checked again (first[W], last[W]: per class the
 * first and the last buffer seen). The first rank whose shape is wrong
 * ends the list (*shape_bad, its expected shape es). *bytes: what the jobs
 * read. */
static lt_status collect_jobs(vctx *c, const lt_dtensor *actual, const lt_tensor **first,
                              const lt_tensor **last, vrun *v, int *njobs, int *shape_bad,
                              int64_t *es, uint64_t *bytes) {
    for (int r = 0; r < c->W; r++) {
        const lt_tensor *a = actual->local->shards[r];
        if (!a) continue;   /* absent: nothing held here to check */
        LT_TRY(lt_spec_local_shape(&c->dspec, r, es, NULL));
        int same = a->ndim == c->ndim;
        for (int d = 0; same && d < c->ndim; d++) same = a->shape[d] == es[d];
        if (!same) {
            *shape_bad = r;   /* reported after the ranks below it are checked */
            return LT_OK;
        }
        int k = class_of(c, r);
        if ((first[k] && lt_tensor_same_view(first[k], a)) ||
            (last[k] && lt_tensor_same_view(last[k], a)))
            continue;   /* this buffer is checked for this class already */
        if (!first[k]) first[k] = a;
        last[k] = a;
        atomic_init(&v->jobs[*njobs].suspect, 0);
        v->jobs[(*njobs)++].rank = r;
        *bytes += lt_nbytes(a);
    }
    return LT_OK;
}

/* How the jobs run: exact (no Partial), fused, split over threads. */
static void plan_jobs(vrun *v, vctx *c, const lt_dtensor *actual, const lt__verified *prev,
                      int njobs, uint64_t bytes) {
    v->c = c;
    v->actual = actual;
    v->prev = prev;
    v->exact = 1;
    for (int i = 0; i < c->M; i++)
        if (c->dspec.placements[i].kind == LT_PL_PARTIAL) v->exact = 0;
    v->fused = c->math && fusable(c);
    /* values copied or fused: only the scratch grows per thread */
    v->split = (!c->math || v->fused) && lt__pool_width() > 1 && 2 * bytes >= lt__par_min_bytes();
    v->wide = v->split && njobs > 1;
    v->piece = piece_bytes(bytes);
}

lt_status lt__verify_reshard_memo(const lt_dtensor *src, const lt_dtensor *actual, int step,
                                  lt_verify_report *rep, lt__verified **memo) {
    const lt__verified *prev = memo ? *memo : NULL;
    lt__verified *next = NULL;
    const lt_mesh *mesh = lt_dtensor_mesh(src);
    lt__verify_report_init(rep, src->ndim);
    vctx c;
    /* actual's spec: checked when it was made, and the same tensor as src's */
    lt_status st = verify_args(src, actual);
    int inited =
        !st && !(st = vctx_init(&c, src, actual->placements, mesh->ndim, lt_dtensor_spec(actual)));
    const lt_tensor **first = NULL, **last = NULL;   /* (world) per class */
    vrun v = {0};
    int njobs = 0, shape_bad = -1;
    int64_t es[LT_MAX_DIMS];
    uint64_t bytes = 0;   /* what the jobs read */
    if (!st) {
        first = lt__calloc((size_t)c.W, sizeof *first);
        last = lt__calloc((size_t)c.W, sizeof *last);
        v.jobs = lt__calloc((size_t)c.W, sizeof *v.jobs);
        if (!first || !last || !v.jobs) st = lt__err(LT_NOMEM, "verify: out of memory");
    }
    if (!st) st = check_source(&c, rep);
    if (!st) st = collect_jobs(&c, actual, first, last, &v, &njobs, &shape_bad, es, &bytes);
    if (!st) {
        plan_jobs(&v, &c, actual, prev, njobs, bytes);
        st = run_jobs(&v, njobs, step, rep);
    }
    if (!st && shape_bad >= 0)
        st = lt__verify_shape_mismatch(rep, step, shape_bad, actual->local->shards[shape_bad],
                                       c.ndim, es);
    if (!st && memo) st = make_record(&v, njobs, &next);
    lt__free(first);
    lt__free(last);
    lt__free(v.jobs);
    if (inited) vctx_free(&c);
    if (memo) {
        lt__verified_free(*memo);
        *memo = next;
    }
    return st;
}

lt_status lt_verify_reshard(const lt_dtensor *src, const lt_dtensor *actual, int step,
                            lt_verify_report *rep) {
    return lt__verify_reshard_memo(src, actual, step, rep, NULL);
}
