/* localtensor/ops/ops_rules_view.c — the sharding rule of reshape / view /
 * flatten (the bug class of PyTorch #179502 and #143372).
 *
 * The input and output shapes are cut into groups of dims with equal
 * products (size-1 dims stand alone). A group with one dim on each side is a
 * rename: any sharding carries over. Otherwise only the FIRST input dim of a
 * group may stay sharded, and only when every rank's elements of the group
 * are whole output rows in order — i.e. each rank's flat index runs start
 * and end on multiples of the inner size of the output group. That is
 * checked on the actual index sets of every rank (uneven rules, nesting and
 * strided shards included) against candidate output placements; when no
 * candidate reproduces them exactly, the sharding mesh dims are
 * redistributed to Replicate first (innermost first). A shard of a size-1
 * dim is replicated too. So a view never silently reorders data.
 */
#include "kernels/alloc.h"
#include <stdlib.h>
#include <string.h>

#include "localtensor/ops.h"
#include "kernels/math_impl.h"
#include "kernels/status_impl.h"
#include "localtensor/ops/ops_impl.h"

/* Resolves the target shape (one -1 allowed) into io->out_shape[0]. */
static lt_status target_shape(lt__rule_io *io, int64_t numel) {
    const lt_op_args *a = io->args;
    const char *name = lt_op_name(io->op);
    int n = io->in[0]->ndim;
    if (io->op == LT_OP_FLATTEN) {
        int s = 0, e = n ? n - 1 : 0;
        if (n > 0) {
            LT_TRY(lt__norm_dim(name, a->dim, n, &s));
            if (a->flatten_end_set) LT_TRY(lt__norm_dim(name, a->dim2, n, &e));
        } else if ((a->dim != 0 && a->dim != -1) ||
                   (a->flatten_end_set && a->dim2 != 0 && a->dim2 != -1)) {
            return lt__err(LT_INVALID, "%s: dims of a 0-d tensor must be 0 or -1", name);
        }
        if (s > e)
            return lt__err(LT_INVALID, "%s: start dim %d is after end dim %d", name, a->dim,
                           a->dim2);
        int o = 0;
        for (int d = 0; d < n; d++) {
            if (d <= s || d > e) io->out_shape[0][o++] = io->in[0]->shape[d];
            else io->out_shape[0][o - 1] *= io->in[0]->shape[d];
        }
        if (n == 0) io->out_shape[0][o++] = 1;
        io->out_ndim = o;
        return LT_OK;
    }
    if (a->shape_ndim < 0 || a->shape_ndim > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "%s: target has %d dims", name, a->shape_ndim);
    int infer = -1, overflow = 0;
    int64_t prod = 1;
    for (int d = 0; d < a->shape_ndim; d++) {
        if (a->shape[d] == -1 && infer < 0) infer = d;
        else if (a->shape[d] < 0)
            return lt__err(LT_INVALID, "%s: invalid size %lld in the target shape", name,
                           (long long)a->shape[d]);
        else if (lt__mul_i64(prod, a->shape[d], &prod)) overflow = 1;
    }
    for (int d = 0; d < a->shape_ndim; d++) /* a 0 anywhere makes the product 0 */
        if (a->shape[d] == 0) prod = 0, overflow = 0;
    if (overflow)
        return lt__err(
            LT_SHAPE,
            "%s: the target shape's element count overflows 64 bits (the input has %lld elements)",
            name, (long long)numel);
    memcpy(io->out_shape[0], a->shape, sizeof(int64_t) * (size_t)a->shape_ndim);
    io->out_ndim = a->shape_ndim;
    if (infer >= 0) {
        if (prod == 0 || numel % prod != 0) {
            char s1[160];
            return lt__err(LT_SHAPE,
                           "%s: cannot infer the -1 of the target for %lld elements (shape %s)",
                           name, (long long)numel,
                           lt_shape_format(io->in[0]->ndim, io->in[0]->shape, s1, sizeof s1));
        }
        io->out_shape[0][infer] = numel / prod;
        prod = numel;
    }
    if (prod != numel) {
        char s1[160], s2[160];
        return lt__err(LT_SHAPE, "%s: shape %s (%lld elements) cannot become %s", name,
                       lt_shape_format(io->in[0]->ndim, io->in[0]->shape, s1, sizeof s1),
                       (long long)numel,
                       lt_shape_format(a->shape_ndim, io->out_shape[0], s2, sizeof s2));
    }
    return LT_OK;
}

typedef struct view_group {
    int in0, nin;      /* first input dim, number of (non-1) input dims */
    int out0, nout;
    int64_t in_inner;  /* product of the group's input dims after in0 */
    int64_t out_inner;
} view_group;

/* Output positions (of the group's first output dim) that a rank holding
 * first-input-dim indices L[n] holds, in order, into out[] (room for
 * n * in_inner / out_inner); returns the count, or -1 when the rank's flat
 * runs do not start and end on whole output rows. */
static int64_t expected_rows(const int64_t *L, int64_t n, const view_group *g, int64_t *out) {
    int64_t cnt = 0, rs = -1, re = -1;
    for (int64_t j = 0; j <= n; j++) {
        int64_t s = j < n ? L[j] * g->in_inner : -1;
        if (j < n && s == re) {
            re += g->in_inner;
            continue;
        }
        if (rs >= 0) { /* flush run [rs, re) */
            if (rs % g->out_inner || re % g->out_inner) return -1;
            for (int64_t o = rs / g->out_inner; o < re / g->out_inner; o++) out[cnt++] = o;
        }
        if (j < n) rs = s, re = s + g->in_inner;
    }
    return cnt;
}

/* Does `cand` (mesh dims in `use`, shard-like, dim ignored) reproduce on every
 * rank the output rows the input placements `inpl` give? 1 yes, 0 no, -1 out
 * of memory (message set). */
static int candidate_ok(const lt__rule_io *io, const view_group *g, const lt_placement *inpl,
                        const lt_placement *cand) {
    const lt_mesh *m = io->mesh;
    int64_t n_in = io->in[0]->shape[g->in0], n_out = io->out_shape[0][g->out0];
    int ok = 1;
    for (int r = 0; r < m->world && ok > 0; r++) {
        int64_t *L = NULL, *C = NULL, nl, nc;
        lt_status st = lt__dim_indices(m, n_in, inpl, r, &L, &nl);
        if (st) {
            if (st == LT_NOMEM) return -1;
            lt__err_clear();
            return 0;
        }
        int64_t cap = g->out_inner ? nl * g->in_inner / g->out_inner + 1 : 1;
        int64_t *E = lt__malloc(sizeof(int64_t) * (size_t)cap); /* (cap) */
        if (!E) {
            lt__free(L);
            lt__err(LT_NOMEM, "out of memory for the rows of rank %d (%lld entries)", r,
                    (long long)cap);
            return -1;
        }
        int64_t ne = expected_rows(L, nl, g, E);
        if (ne >= 0 && (st = lt__dim_indices(m, n_out, cand, r, &C, &nc)) == LT_NOMEM) {
            ok = -1;
        } else if (ne < 0 || st) {
            lt__err_clear();
            ok = 0;
        } else {
            ok = nc == ne && (ne == 0 || !memcmp(C, E, sizeof(int64_t) * (size_t)ne));
        }
        lt__free(L);
        lt__free(C);
        lt__free(E);
    }
    return ok;
}

/* Decides the output placements of group g, whose first input dim is sharded
 * by mesh dims use[nuse] (in mesh order). LT_NOMEM is the only error. */
static lt_status decide_group(lt__rule_io *io, const view_group *g, const int *use, int nuse) {
    const lt_mesh *m = io->mesh;
    for (int keep = nuse; keep > 0; keep--) {
        lt_placement inpl[LT_MESH_MAX_DIMS], cand[3][LT_MESH_MAX_DIMS];
        for (int i = 0; i < m->ndim; i++) {
            inpl[i] = lt_replicate();
            for (int c = 0; c < 3; c++) cand[c][i] = lt_replicate();
        }
        int ncand = 2, ok_explicit = keep == 1 &&
                                     io->in[0]->placements[use[0]].kind == LT_PL_SHARD &&
                                     m->shape[use[0]] <= LT_SPLIT_MAX_EXPLICIT;
        for (int u = 0; u < keep; u++) {
            const lt_placement *p = &io->in[0]->placements[use[u]];
            inpl[use[u]] = *p;
            cand[0][use[u]] = lt__pl_with_dim(p, g->out0);       /* same rule */
            cand[1][use[u]] = lt_shard(g->out0);                  /* chunk */
            if (p->kind == LT_PL_SHARD && p->rule.kind == LT_SPLIT_EXPLICIT) {
                lt_split_rule *r = &cand[0][use[u]].rule;       /* rescaled sizes */
                int64_t sz[LT_SPLIT_MAX_EXPLICIT];
                for (int j = 0; j < r->nsizes; j++) {
                    int64_t v = r->sizes[j] * g->in_inner;
                    sz[j] = v % g->out_inner ? -1 : v / g->out_inner;
                }
                LT_TRY(lt_split_explicit(sz, r->nsizes, r));
            }
        }
        if (ok_explicit) { /* explicit sizes of what each coordinate holds */
            int i = use[0], k = m->shape[i], coord[LT_MESH_MAX_DIMS];
            lt_placement *c = &cand[2][i];
            int64_t sz[LT_SPLIT_MAX_EXPLICIT];
            *c = lt_shard(g->out0);
            for (int r = 0; r < m->world; r++) {
                lt_mesh_coord(m, r, coord);
                int64_t *L = NULL, nl;
                lt_status st = lt__dim_indices(m, io->in[0]->shape[g->in0], inpl, r, &L, &nl);
                if (st == LT_NOMEM) return st;
                if (st) {
                    lt__err_clear();
                    ok_explicit = 0;
                    break;
                }
                lt__free(L);
                sz[coord[i]] = nl * g->in_inner / g->out_inner;
            }
            if (ok_explicit) {
                LT_TRY(lt_split_explicit(sz, k, &c->rule));
                ncand = 3;
            }
        }
        for (int c = 0; c < ncand; c++) {
            int ok = candidate_ok(io, g, inpl, cand[c]);
            if (ok < 0) return LT_NOMEM;
            if (!ok) continue;
            for (int u = 0; u < nuse; u++) {
                if (u < keep) {
                    io->out[use[u]] = cand[c][use[u]];
                    /* chunk sizes that equal the explicit ones: keep the plain spelling */
                } else {
                    lt__rule_force_replicate(io, use[u]);
                }
            }
            return LT_OK;
        }
    }
    for (int u = 0; u < nuse; u++) lt__rule_force_replicate(io, use[u]);
    return LT_OK;
}

lt_status lt__rule_view(lt__rule_io *io) {
    const lt_mesh *m = io->mesh;
    int n = io->in[0]->ndim;
    int64_t numel = lt__numel_sat(n, io->in[0]->shape);
    LT_TRY(target_shape(io, numel));
    io->out_dtype = io->in[0]->dtype;
    for (int i = 0; i < m->ndim; i++) io->out[i] = io->in[0]->placements[i];
    if (io->rules == LT_OP_RULES_PYTORCH) {
        int done = 0;
        LT_TRY(lt__pytorch_view(io, &done));
        if (done) return LT_OK;
    }
    int no = io->out_ndim;
    const int64_t *si = io->in[0]->shape, *so = io->out_shape[0];
    if (numel == 0) { /* nothing to keep in order: replicate every shard */
        for (int i = 0; i < m->ndim; i++)
            if (lt_placement_is_shard_like(&io->in[0]->placements[i]))
                lt__rule_force_replicate(io, i);
        return LT_OK;
    }
    view_group gs[LT_MAX_DIMS];
    int gof[LT_MAX_DIMS], ng = 0, i = 0, j = 0;
    for (int d = 0; d < n; d++) gof[d] = -1;
    for (;;) {
        while (i < n && si[i] == 1) i++;
        while (j < no && so[j] == 1) j++;
        if (i >= n || j >= no) break;
        view_group *g = &gs[ng];
        g->in0 = i, g->out0 = j, g->nin = 1, g->nout = 1;
        g->in_inner = 1, g->out_inner = 1;
        int64_t pi = si[i], po = so[j];
        gof[i++] = ng;
        j++;
        while (pi != po) {
            if (pi < po) {
                while (i < n && si[i] == 1) i++;
                if (i >= n) break;
                pi *= si[i], g->in_inner *= si[i], g->nin++;
                gof[i++] = ng;
            } else {
                while (j < no && so[j] == 1) j++;
                if (j >= no) break;
                po *= so[j], g->out_inner *= so[j], g->nout++;
                j++;
            }
        }
        ng++;
    }
    int use[LT_MAX_DIMS][LT_MESH_MAX_DIMS], nuse[LT_MAX_DIMS] = {0};
    for (int k = 0; k < m->ndim; k++) {
        const lt_placement *p = &io->in[0]->placements[k];
        if (!lt_placement_is_shard_like(p)) continue;
        int g = gof[p->dim];
        if (g < 0 || gs[g].in0 != p->dim) { /* size-1 dim, or not the group's first dim */
            lt__rule_force_replicate(io, k);
            continue;
        }
        if (gs[g].nin == 1 && gs[g].nout == 1) io->out[k] = lt__pl_with_dim(p, gs[g].out0);
        else use[g][nuse[g]++] = k;
    }
    for (int g = 0; g < ng; g++)
        if (nuse[g]) LT_TRY(decide_group(io, &gs[g], use[g], nuse[g]));
    return LT_OK;
}
