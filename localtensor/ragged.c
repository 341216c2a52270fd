/* localtensor/ragged.c — RaggedShard's view (localtensor/ragged.h) and the
 * DTensor entry points that take it: distribute, dtensor_new, from_local,
 * the direct full_tensor and clone, each done on the view by the ordinary code and
 * relabelled with the tensor's shape and placements (docs/SEMANTICS.md
 * §11.10). The view of a given k (flattening more dims than the
 * RaggedShard's own) is here too, for redistribute: through the planner on
 * a common view (localtensor/ragged_plan.c) or the exchange
 * (localtensor/ragged_redist.c); ops are localtensor/ragged_ops.c. */
#include "localtensor/ragged.h"
#include "localtensor/ragged_impl.h"

#include <string.h>

#include "kernels/status_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/layout.h"
#include "localtensor/redistribute.h"

int lt_placements_have_ragged(const lt_placement *pl, int np) {
    if (!pl) return 0;
    for (int i = 0; i < np && i < LT_MESH_MAX_DIMS; i++)
        if (pl[i].kind == LT_PL_RAGGED) return 1;
    return 0;
}

/* The identity view of a layout with no RaggedShard into *v. */
static void plain_view(int ndim, const int64_t *shape, const lt_placement *pl, int np,
                       lt_ragged_view *v) {
    memset(v, 0, sizeof *v);
    v->mesh_dim = -1;
    v->k = 1;
    v->ndim = ndim;
    memcpy(v->shape, shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(v->pl, pl, sizeof(lt_placement) * (size_t)np);
    v->rows = ndim ? shape[0] : 1;
    v->units_sum = 1;
}

/* The explicit-sizes rule of RaggedShard p over F rows (U = units' sum, F a
 * multiple of U; the rows of one earlier Shard(0) chunk when there is one)
 * into *rule: rank c gets units[c] * F / U rows. */
static lt_status units_rule(const lt_placement *p, int mesh_dim, int64_t F, int64_t U,
                            lt_split_rule *rule) {
    int64_t sizes[LT_SPLIT_MAX_EXPLICIT];   /* (nsizes) rows of each rank */
    for (int c = 0; c < p->rule.nsizes; c++)
        if (lt__mul_i64(p->rule.sizes[c], F / U, &sizes[c]))
            return lt__err(LT_OVERFLOW, "mesh dim %d: RaggedShard rows of rank %d overflow",
                           mesh_dim, c);
    return lt_split_explicit(sizes, p->rule.nsizes, rule);
}

/* The rows the RaggedShard on mesh dim r divides: F, or with Shard(0)s on
 * earlier mesh dims (k = 1, docs/SEMANTICS.md §11.10) each rank's chunk of
 * them, into *rows. Those chunks must all have the same rows (one units
 * rule for every group): LT_UNSUPPORTED ("not supported yet") otherwise. */
static lt_status ragged_rows(const lt_mesh *mesh, const lt_placement *pl, int r, int64_t F,
                             int64_t *rows) {
    int64_t R = F;
    for (int i = 0; i < r; i++) {
        if (pl[i].kind != LT_PL_SHARD || pl[i].dim != 0 || mesh->shape[i] == 1) continue;
        int64_t first, size, off;
        LT_TRY(lt_split_piece(&pl[i].rule, R, mesh->shape[i], 0, &first, &off));
        for (int c = 1; c < mesh->shape[i]; c++) {
            LT_TRY(lt_split_piece(&pl[i].rule, R, mesh->shape[i], c, &size, &off));
            if (size != first)
                return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                                    "not supported yet: a Shard(0) on mesh dim %d before the "
                                    "RaggedShard on mesh dim %d cuts its %lld rows into chunks "
                                    "of different sizes (%lld and %lld): the RaggedShard needs "
                                    "one row count for every chunk",
                                    i, r, (long long)R, (long long)first, (long long)size);
        }
        R = first;
    }
    *rows = R;
    return LT_OK;
}

/* The placements of the view of flattened dims 0..K-1 into out->pl (out's
 * other fields set): the RaggedShard on mesh dim r (-1: none) is the
 * explicit-sizes Shard(0) of its units over R rows, a Shard-like of dim
 * d >= K is of dim d - K + 1 (d < K: only K = 1, where it stays dim 0). */
static lt_status view_placements(const lt_placement *pl, int np, int r, int K, int64_t R,
                                 int64_t U, lt_ragged_view *out) {
    for (int i = 0; i < np; i++) {
        lt_placement *q = &out->pl[i];
        if (i == r) {
            lt_split_rule rule;
            LT_TRY(units_rule(&pl[r], r, R, U, &rule));
            *q = lt_shard_rule(0, rule);
        } else if (lt_placement_is_shard_like(q)) {
            q->dim = q->dim >= K ? q->dim - K + 1 : 0;
        }
    }
    return LT_OK;
}

/* The view of checked placements pl with dims 0..K-1 flattened (K = 0: the
 * RaggedShard's own k, or the tensor itself without one) into *out; *ok = 0
 * (out unspecified) when pl cannot be written in it: a RaggedShard of more
 * than K dims, or a Shard-like of a dim below K when K > 1. Errors as
 * lt_ragged_view_of's. */
static lt_status view_k(const lt_mesh *mesh, int ndim, const int64_t *shape,
                        const lt_placement *pl, int K, lt_ragged_view *out, int *ok) {
    int np = mesh->ndim, r = -1;
    plain_view(ndim, shape, pl, np, out);
    *ok = 1;
    for (int i = 0; i < np; i++)
        if (pl[i].kind == LT_PL_RAGGED) r = i;
    int k = r >= 0 ? pl[r].dim : 1;
    if (K == 0) K = r >= 0 ? k : 1;
    if (k > K || K > ndim) return (*ok = 0), LT_OK;
    for (int i = 0; i < np && K > 1; i++)
        if (i != r && lt_placement_is_shard_like(&pl[i]) && pl[i].dim < K) return (*ok = 0), LT_OK;
    if (r < 0 && K == 1) return LT_OK;
    int64_t F = 1, U = r >= 0 ? 0 : 1;
    for (int d = 0; d < K; d++)
        if (lt__mul_i64(F, shape[d], &F))
            return lt__err(LT_OVERFLOW, "mesh dim %d: RaggedShard: the rows of dims 0..%d "
                           "overflow", r, K - 1);
    for (int c = 0; r >= 0 && c < pl[r].rule.nsizes; c++) U += pl[r].rule.sizes[c];
    if (U <= 0)
        return lt__err(
            LT_INVALID,
            "mesh dim %d: RaggedShard: the local_units sum to %lld (at least one unit is needed)",
            r, (long long)U);
    int64_t R = F;   /* the rows it divides: F, or each earlier Shard(0)'s chunk */
    if (r >= 0) LT_TRY(ragged_rows(mesh, pl, r, F, &R));
    if (R % U) {
        char s[160];
        if (R != F)
            return lt__err(LT_INVALID,
                           "mesh dim %d: RaggedShard: the %lld rows of each earlier Shard(0)'s "
                           "chunk (of the %lld of shape %s) are not a multiple of the "
                           "local_units' sum %lld (each rank holds units x rows/U rows)",
                           r, (long long)R, (long long)F, lt_shape_format(ndim, shape, s, sizeof s),
                           (long long)U);
        return lt__err(LT_INVALID,
                       "mesh dim %d: RaggedShard: the %lld rows of dims 0..%d of shape %s are "
                       "not a multiple of the local_units' sum %lld (each rank holds units x F/U "
                       "rows)",
                       r, (long long)F, K - 1, lt_shape_format(ndim, shape, s, sizeof s),
                       (long long)U);
    }
    out->mesh_dim = r;
    out->k = K;
    out->ndim = ndim - K + 1;
    out->rows = F;
    out->units_sum = U;
    out->shape[0] = F;
    for (int d = K; d < ndim; d++) out->shape[d - K + 1] = shape[d];
    for (int d = out->ndim; d < LT_MAX_DIMS; d++) out->shape[d] = 0;
    return view_placements(pl, np, r, K, R, U, out);
}

lt_status lt_ragged_view_of(const lt_mesh *mesh, int ndim, const int64_t *shape,
                            const lt_placement *pl, lt_ragged_view *out) {
    int ok;
    return view_k(mesh, ndim, shape, pl, 0, out, &ok);   /* its own k: always ok */
}

lt_status lt__ragged_view_k(const lt_mesh *mesh, int ndim, const int64_t *shape,
                            const lt_placement *pl, int k, lt_ragged_view *out, int *ok) {
    return view_k(mesh, ndim, shape, pl, k, out, ok);
}

lt_status lt_ragged_local_shape(const lt_mesh *mesh, int ndim, const int64_t *shape,
                                const lt_placement *pl, int np, int rank, int *local_ndim,
                                int64_t *local_shape, int64_t *view_offset,
                                int64_t *first_element) {
    lt_placement norm[LT_MESH_MAX_DIMS];
    lt_ragged_view v;
    int64_t ls[LT_MAX_DIMS], go[LT_MAX_DIMS], st[LT_MAX_DIMS];
    if (ndim < 0 || ndim > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "tensor has %d dims; at most %d are supported", ndim,
                       LT_MAX_DIMS);
    if (rank < 0 || rank >= mesh->world)
        return lt__err(LT_INVALID, "rank %d is out of range (0..%d)", rank, mesh->world - 1);
    LT_TRY(lt_placements_check(mesh, ndim, pl, np, norm));
    LT_TRY(lt_ragged_view_of(mesh, ndim, shape, norm, &v));
    LT_TRY(lt_local_shape_and_offset(mesh, v.ndim, v.shape, v.pl, rank, ls, go));
    int empty = lt__numel_sat(v.ndim, ls) == 0;
    int64_t first = 0;
    lt_contiguous_strides(v.ndim, v.shape, st);
    for (int d = 0; d < v.ndim; d++) first += go[d] * st[d];
    if (local_ndim) *local_ndim = v.ndim;
    if (local_shape) memcpy(local_shape, ls, sizeof(int64_t) * (size_t)v.ndim);
    if (view_offset) memcpy(view_offset, go, sizeof(int64_t) * (size_t)v.ndim);
    if (first_element) *first_element = empty ? -1 : first;
    return LT_OK;
}

/* ---- DTensors ---------------------------------------------------------------- */

void lt__ragged_relabel(lt_dtensor *dt, int ndim, const int64_t *shape, const lt_placement *pl) {
    int np = lt_dtensor_mesh(dt)->ndim;
    dt->ndim = ndim;
    memset(dt->shape, 0, sizeof dt->shape);
    memcpy(dt->shape, shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(dt->placements, pl, sizeof(lt_placement) * (size_t)np);
    lt_contiguous_strides(ndim, shape, dt->stride);
}

lt_status lt__ragged_as_view(const lt_dtensor *dt, lt_dtensor *v) {
    lt_ragged_view rv;
    LT_TRY(lt_ragged_view_of(lt_dtensor_mesh(dt), dt->ndim, dt->shape, dt->placements, &rv));
    *v = *dt;
    lt__ragged_relabel(v, rv.ndim, rv.shape, rv.pl);
    return LT_OK;
}

lt_status lt__ragged_distribute(const lt_mesh *mesh, const lt_tensor *full,
                                const lt_placement *pl, int np, lt_dtensor **out) {
    lt_placement norm[LT_MESH_MAX_DIMS];
    lt_ragged_view v;
    lt_tensor *vfull = NULL;
    *out = NULL;
    LT_TRY(lt_placements_check(mesh, full->ndim, pl, np, norm));
    LT_TRY(lt_ragged_view_of(mesh, full->ndim, full->shape, norm, &v));
    LT_TRY(lt_reshape(full, v.ndim, v.shape, &vfull));   /* shape (F, shape[k:]) */
    lt_status st = lt_distribute(mesh, vfull, v.pl, np, out);
    lt_tensor_free(vfull);
    if (!st) lt__ragged_relabel(*out, full->ndim, full->shape, norm);
    return st;
}

/* An initialiser is a function of the global linear index only
 * (localtensor/random.h) and a view element's linear index is the tensor's,
 * so the view initialised in place is the tensor's: nothing full is built. */
lt_status lt__ragged_dtensor_new(const lt_mesh *mesh, lt_dtype dt, int ndim, const int64_t *shape,
                                const lt_placement *pl, int np, const lt_init *init,
                                lt_dtensor **out) {
    lt_placement norm[LT_MESH_MAX_DIMS];
    lt_ragged_view v;
    *out = NULL;
    if (ndim < 0 || ndim > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "tensor has %d dims; at most %d are supported", ndim,
                       LT_MAX_DIMS);
    LT_TRY(lt_placements_check(mesh, ndim, pl, np, norm));
    LT_TRY(lt_ragged_view_of(mesh, ndim, shape, norm, &v));
    LT_TRY(lt_dtensor_new(mesh, dt, v.ndim, v.shape, v.pl, np, init, out));
    lt__ragged_relabel(*out, ndim, shape, norm);
    return LT_OK;
}

lt_status lt__ragged_full_direct(const lt_dtensor *dt, lt_tensor **out) {
    lt_dtensor v;
    lt_tensor *f = NULL;
    *out = NULL;
    LT_TRY(lt__ragged_as_view(dt, &v));
    LT_TRY(lt_full_tensor_direct(&v, &f));
    lt_status st = lt_reshape(f, dt->ndim, dt->shape, out);   /* f is contiguous: a view */
    lt_tensor_free(f);
    return st;
}

lt_status lt__ragged_clone(const lt_dtensor *dt, lt_dtensor **out) {
    lt_dtensor v;
    *out = NULL;
    LT_TRY(lt__ragged_as_view(dt, &v));
    LT_TRY(lt_dtensor_clone(&v, out));
    lt__ragged_relabel(*out, dt->ndim, dt->shape, dt->placements);
    return LT_OK;
}

/* The global shape from_local infers for ragged placements pl (np) with
 * k = 1: the shards' sizes summed as for Shard(0) in the RaggedShard's
 * place, into shape[shards[0]->ndim]. */
static lt_status infer_shape(const lt_mesh *mesh, lt_tensor *const *shards,
                             const lt_placement *pl, int np, int64_t *shape) {
    lt_placement ipl[LT_MESH_MAX_DIMS];
    lt_dtensor *tmp = NULL;
    for (int i = 0; i < np; i++) ipl[i] = pl[i].kind == LT_PL_RAGGED ? lt_shard(0) : pl[i];
    LT_TRY(lt_from_local(mesh, shards, ipl, np, 0, &tmp));
    memcpy(shape, tmp->shape, sizeof(int64_t) * (size_t)tmp->ndim);
    lt_dtensor_free(tmp);
    return LT_OK;
}

/* Every present shard against the view's local shapes; LT_SHAPE naming the
 * first rank that differs. */
static lt_status check_shards(const lt_mesh *mesh, lt_tensor *const *shards,
                              const lt_ragged_view *v) {
    for (int r = 0; r < mesh->world; r++) {
        int64_t ls[LT_MAX_DIMS];
        const lt_tensor *t = shards[r];
        if (!t) continue;
        LT_TRY(lt_local_shape_and_offset(mesh, v->ndim, v->shape, v->pl, r, ls, NULL));
        int ok = t->ndim == v->ndim;
        for (int d = 0; ok && d < v->ndim; d++) ok = t->shape[d] == ls[d];
        if (!ok) {
            char a[96], b[96], p[LT_SPLIT_MAX_EXPLICIT * 22 + 64];
            lt_placement_format(&v->pl[v->mesh_dim], p, sizeof p);
            return lt__err(LT_SHAPE,
                           "from_local: rank %d holds a shard of shape %s but its RaggedShard "
                           "(mesh dim %d, %lld rows, units summing to %lld) gives %s",
                           r, lt_shape_format(t->ndim, t->shape, a, sizeof a), v->mesh_dim,
                           (long long)v->rows, (long long)v->units_sum,
                           lt_shape_format(v->ndim, ls, b, sizeof b));
        }
    }
    return LT_OK;
}

lt_status lt_ragged_from_local(const lt_mesh *mesh, lt_tensor *const *shards,
                               const lt_placement *pl, int np, int ndim, const int64_t *shape,
                               int run_check, lt_dtensor **out) {
    lt_placement norm[LT_MESH_MAX_DIMS];
    lt_ragged_view v;
    int64_t gshape[LT_MAX_DIMS] = {0};
    *out = NULL;
    if (!shards || !shards[0])
        return lt__err(LT_INVALID, "from_local: rank 0's shard is missing");
    if (np != mesh->ndim || np < 1 || np > LT_MESH_MAX_DIMS)
        return lt_placements_check(mesh, 0, pl, np, norm);   /* its count message */
    if (!shape) {
        int k = 1;
        for (int i = 0; i < np; i++)
            if (pl[i].kind == LT_PL_RAGGED) k = pl[i].dim;
        if (k != 1)
            return lt__err(LT_INVALID,
                           "from_local: a RaggedShard of dims=(0..%d) flattens %d dims, so the "
                           "shards do not say the global shape: use lt_ragged_from_local with it",
                           k - 1, k);
        ndim = shards[0]->ndim;
        LT_TRY(infer_shape(mesh, shards, pl, np, gshape));
        shape = gshape;
    }
    if (ndim < 0 || ndim > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "from_local: %d dims; at most %d are supported", ndim,
                       LT_MAX_DIMS);
    LT_TRY(lt_placements_check(mesh, ndim, pl, np, norm));
    LT_TRY(lt_ragged_view_of(mesh, ndim, shape, norm, &v));
    if (v.mesh_dim < 0) return lt_from_local(mesh, shards, pl, np, run_check, out);
    LT_TRY(check_shards(mesh, shards, &v));
    LT_TRY(lt_from_local(mesh, shards, v.pl, np, run_check, out));
    lt__ragged_relabel(*out, ndim, shape, norm);
    return LT_OK;
}
