/* localtensor/dtensor.c — distribute, init, from_local, direct full_tensor.
 *
 * Everything here works from global index sets (localtensor/layout.h), never
 * from collectives, so it doubles as the independent reference that checks
 * redistribute plans. */
#include "localtensor/dtensor.h"
#include "kernels/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "localtensor/layout.h"
#include "kernels/status_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/ragged_impl.h"
#include "kernels/tensor_impl.h"
#include "kernels/pool_impl.h"

#include <stddef.h>

/* The named fields of lt_dtensor alias lt_spec's (see dtensor.h). */
_Static_assert(offsetof(lt_dtensor, dtype) == offsetof(lt_dtensor, spec) + offsetof(lt_spec, dtype),
               "dtype");
_Static_assert(offsetof(lt_dtensor, ndim) == offsetof(lt_dtensor, spec) + offsetof(lt_spec, ndim),
               "ndim");
_Static_assert(offsetof(lt_dtensor, shape) == offsetof(lt_dtensor, spec) + offsetof(lt_spec, shape),
               "shape");
_Static_assert(offsetof(lt_dtensor, placements) ==
                   offsetof(lt_dtensor, spec) + offsetof(lt_spec, placements),
               "placements");

/* What distribute adds to a spec's checks: the Partial kinds it cannot
 * produce (pl normalized, np of them, one per mesh dim). An integer or bool
 * P(sum) divides by the mesh dim's size: refused where that size is > 1
 * (docs/SEMANTICS.md §3); on a size-1 dim every rank holds the tensor as it
 * is, as a redistribute to P(sum) there gives. */
lt_status lt__check_partials(const lt_mesh *mesh, lt_dtype dtype, const lt_placement *norm,
                             int np) {
    for (int i = 0; i < np; i++) {
        if (norm[i].kind != LT_PL_PARTIAL) continue;
        if (norm[i].op == LT_REDOP_PRODUCT)
            return lt__err(LT_INVALID,
                           "mesh dim %d: Replicate to Partial(product) conversion is not supported "
                           "(distribute accepts P(sum|avg|max|min))",
                           i);
        if (norm[i].op == LT_REDOP_AVG && dtype == LT_BOOL)
            return lt__err(LT_INVALID,
                           "mesh dim %d: P(avg) of bool is not defined (use P(max) or P(min))", i);
        if (norm[i].op == LT_REDOP_SUM && !lt_dtype_is_float(dtype) && mesh->shape[i] > 1)
            return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                                "not supported yet: distributing %s with P(sum) on mesh dim %d of "
                                "size %d (dividing by the mesh dim size would truncate)",
                                lt_dtype_name(dtype), i, mesh->shape[i]);
    }
    return LT_OK;
}

/* The memory all shards of spec s need, against what this process may use. */
static lt_status check_room(const lt_spec *s) {
    uint64_t bytes;
    LT_TRY(lt_spec_unique_bytes(s, &bytes));   /* replicas share one buffer */
    return lt_check_memory(bytes, s->mesh->world, "this layout");
}

/* The spec of a distribute (or init) into *out: lt_spec_init's checks plus
 * the Partial kinds distribute cannot produce and the memory check, in this
 * order: numel, placements, Partial kinds, layout, memory. */
static lt_status check_spec(const lt_mesh *mesh, lt_dtype dtype, int ndim, const int64_t *shape,
                            const lt_placement *pl, int np, lt_spec *out) {
    lt_placement norm[LT_MESH_MAX_DIMS];
    if (ndim < 0 || ndim > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "tensor has %d dims; at most %d are supported", ndim,
                       LT_MAX_DIMS);
    int64_t n;
    LT_TRY(lt__numel_checked(ndim, shape, lt_dtype_size(dtype), &n));
    LT_TRY(lt_placements_check(mesh, ndim, pl, np, norm));
    LT_TRY(lt__check_partials(mesh, dtype, norm, np));
    LT_TRY(lt_spec_init(mesh, dtype, ndim, shape, norm, np, out));
    return check_room(out);
}

int lt__replica_class(const lt_mesh *mesh, const lt_placement *pl, int r) {
    int coord[LT_MESH_MAX_DIMS];
    lt_mesh_coord(mesh, r, coord);
    for (int i = 0; i < mesh->ndim; i++)
        if (pl[i].kind == LT_PL_REPLICATE) coord[i] = 0;
    return lt_mesh_rank(mesh, coord);
}

lt_status lt__partition(lt_tensor *t, const lt_mesh *mesh, const lt_placement *pl) {
    for (int i = 0; i < mesh->ndim; i++) {
        if (pl[i].kind != LT_PL_PARTIAL || pl[i].op != LT_REDOP_SUM || mesh->shape[i] == 1)
            continue;
        double m = mesh->shape[i];
        int64_t n = lt_numel(t);
        if (!lt__on_host(t)) { /* off the host: the same on an explicit host copy */
            lt__hostrun hr;
            const lt_tensor *tc = t;
            LT_TRY(lt__host_begin(&hr, 1, &tc));
            lt_placement one[LT_MESH_MAX_DIMS];
            for (int k = 0; k < mesh->ndim; k++) one[k] = k == i ? pl[k] : lt_replicate();
            LT_TRY(lt__host_end(&hr, 1, lt__partition((lt_tensor *)(uintptr_t)hr.t[0], mesh, one)));
            continue;
        }
        if (lt_is_contiguous(t) && t->dtype == LT_F32) {
            float *p = lt_data(t);      /* (n) */
            float fm = (float)m;
            for (int64_t j = 0; j < n; j++) p[j] = p[j] / fm;
        } else {
            for (int64_t j = 0; j < n; j++) lt_set_flat(t, j, lt_get_flat(t, j) / m);
        }
    }
    return LT_OK;
}

lt_status lt__dtensor_wrap(lt_local *local, const lt_spec *spec, lt_dtensor **out) {
    lt_dtype dtype = spec->dtype;
    int ndim = spec->ndim;
    const int64_t *shape = spec->shape;
    *out = NULL;
    const lt_mesh *mesh = &local->mesh;
    for (int r = 0; r < mesh->world; r++) {
        int64_t ls[LT_MAX_DIMS];
        lt_status st = lt_spec_local_shape(spec, r, ls, NULL);
        if (st) {
            lt_local_free(local);
            return st;
        }
        const lt_tensor *t = local->shards[r];
        if (!t) continue;   /* absent (localtensor/local.h): layout math alone describes it */
        int ok = t->ndim == ndim && t->dtype == dtype;
        for (int d = 0; ok && d < ndim; d++) ok = t->shape[d] == ls[d];
        if (!ok) {
            char a[96], b[96];
            lt_shape_format(t->ndim, t->shape, a, sizeof a);
            lt_shape_format(ndim, ls, b, sizeof b);
            lt_local_free(local);
            return lt__err(LT_SHAPE, "rank %d holds a shard of shape %s but the layout gives %s", r,
                           a, b);
        }
    }
    int64_t stride[LT_MAX_DIMS];
    if (lt_contiguous_strides(ndim, shape, stride)) {
        char a[160];
        lt_local_free(local);
        return lt__err(LT_OVERFLOW, "global shape %s: its strides overflow 64 bits",
                       lt_shape_format(ndim, shape, a, sizeof a));
    }
    lt_dtensor *dt = lt__calloc(1, sizeof *dt);
    if (!dt) {
        lt_local_free(local);
        return lt__err(LT_NOMEM, "out of memory");
    }
    dt->local = local;
    dt->spec = *spec;
    dt->spec.mesh = mesh;
    memcpy(dt->stride, stride, sizeof(int64_t) * (size_t)ndim);
    *out = dt;
    return LT_OK;
}

/* Shared by distribute and init: build each rank's shard with `fill`. */
typedef lt_status (*fill_fn)(const void *src, const lt_rank_layout *l, const int64_t *gshape,
                             lt_dtype dt, lt_tensor **out);

static lt_status fill_from_full(const void *src, const lt_rank_layout *l, const int64_t *gshape,
                                lt_dtype dt, lt_tensor **out) {
    (void)gshape;
    const lt_tensor *full = src;
    lt_tensor *g = NULL;
    LT_TRY(lt_gather_index_sets(full, l->idx, l->local_shape, &g));
    if (g->dtype == dt) {
        *out = g;
        return LT_OK;
    }
    lt_status st = lt_cast(g, dt, out);
    lt_tensor_free(g);
    return st;
}

static lt_status fill_from_init(const void *src, const lt_rank_layout *l, const int64_t *gshape,
                                lt_dtype dt, lt_tensor **out) {
    lt_tensor *t = NULL;
    LT_TRY(lt_tensor_empty(dt, l->ndim, l->local_shape, &t));   /* the init writes every element */
    lt_status st = lt_init_fill_indexed(t, src, l->idx, gshape);
    if (st) {
        lt_tensor_free(t);
        return st;
    }
    *out = t;
    return LT_OK;
}

/* build's shards: each rank that heads its replica class gets its own. */
typedef struct build_job {
    const lt_spec *spec;
    fill_fn fill;
    const void *src;
    lt_local *local;
} build_job;

/* Rank r's shard, when r heads its class (the others are views, made
 * after). Writes only local->shards[r]: the ranks run on the pool. */
static lt_status build_rank(void *ctx, int64_t i) {
    const build_job *j = ctx;
    const lt_spec *spec = j->spec;
    int r = (int)i;
    if (lt__replica_class(spec->mesh, spec->placements, r) != r) return LT_OK;
    lt_rank_layout l;
    lt_status st = lt_spec_layout_rank(spec, r, &l);
    /* no elements (no index lists): an empty shard of the local shape */
    if (!st)
        st = l.lists ? j->fill(j->src, &l, spec->shape, spec->dtype, &j->local->shards[r])
                     : lt_tensor_new(spec->dtype, spec->ndim, l.local_shape, &j->local->shards[r]);
    lt_rank_layout_free(&l);
    if (!st) st = lt__partition(j->local->shards[r], spec->mesh, spec->placements);
    return st;
}

static lt_status build(const lt_spec *spec, fill_fn fill, const void *src, lt_dtensor **out) {
    const lt_mesh *mesh = spec->mesh;
    lt_local *local;
    LT_TRY(lt_local_new(mesh, &local));
    build_job j = {spec, fill, src, local};
    /* the unique shards at once when there is enough to fill (the first
     * touch of their pages included), else in rank order */
    int64_t numel = lt__numel_sat(spec->ndim, spec->shape);
    lt_status st = LT_OK;
    if ((uint64_t)numel >= lt__par_min_bytes() / lt_dtype_size(spec->dtype))
        st = lt__parallel_for(mesh->world, build_rank, &j);
    else
        for (int r = 0; r < mesh->world && !st; r++) st = build_rank(&j, r);
    /* a replica: the same bytes as the rank heading its class, one shared buffer */
    for (int r = 0; r < mesh->world && !st; r++) {
        int k = lt__replica_class(mesh, spec->placements, r);
        if (k != r) st = lt_tensor_view(local->shards[k], &local->shards[r]);
    }
    if (st) {
        lt_local_free(local);
        return st;
    }
    return lt__dtensor_wrap(local, spec, out);
}

lt_status lt_distribute(const lt_mesh *mesh, const lt_tensor *full, const lt_placement *pl, int np,
                        lt_dtensor **out) {
    lt_spec spec;
    *out = NULL;
    if (lt_placements_have_ragged(pl, np)) return lt__ragged_distribute(mesh, full, pl, np, out);
    LT_TRY(check_spec(mesh, full->dtype, full->ndim, full->shape, pl, np, &spec));
    return build(&spec, fill_from_full, full, out);
}

lt_status lt_distribute_spec(const lt_spec *spec, const lt_tensor *full, lt_dtensor **out) {
    *out = NULL;
    int ok = full->ndim == spec->ndim;
    for (int d = 0; ok && d < spec->ndim; d++) ok = full->shape[d] == spec->shape[d];
    if (!ok) {
        char a[160], b[160];
        lt_shape_format(full->ndim, full->shape, a, sizeof a);
        lt_shape_format(spec->ndim, spec->shape, b, sizeof b);
        return lt__err_in(LT_SHAPE, "distribute", ": the tensor has shape %s but the spec %s", a,
                          b);
    }
    LT_TRY(lt__check_partials(spec->mesh, spec->dtype, spec->placements, spec->mesh->ndim));
    LT_TRY(check_room(spec));
    return build(spec, fill_from_full, full, out);
}

lt_status lt_dtensor_new_spec(const lt_spec *spec, const lt_init *init, lt_dtensor **out) {
    *out = NULL;
    LT_TRY(lt__check_partials(spec->mesh, spec->dtype, spec->placements, spec->mesh->ndim));
    LT_TRY(check_room(spec));
    return build(spec, fill_from_init, init, out);
}

lt_status lt_dtensor_new(const lt_mesh *mesh, lt_dtype dt, int ndim, const int64_t *shape,
                          const lt_placement *pl, int np, const lt_init *init, lt_dtensor **out) {
    lt_spec spec;
    *out = NULL;
    if (lt_placements_have_ragged(pl, np))
        return lt__ragged_dtensor_new(mesh, dt, ndim, shape, pl, np, init, out);
    LT_TRY(check_spec(mesh, dt, ndim, shape, pl, np, &spec));
    return build(&spec, fill_from_init, init, out);
}

const lt_tensor *lt_to_local(const lt_dtensor *dt, int rank) {
    if (rank < 0 || rank >= dt->local->mesh.world) return NULL;
    return dt->local->shards[rank];
}

void lt_dtensor_free(lt_dtensor *dt) {
    if (!dt) return;
    lt_local_free(dt->local);
    lt__free(dt);
}

lt_status lt_dtensor_clone(const lt_dtensor *dt, lt_dtensor **out) {
    lt_local *local;
    *out = NULL;
    if (lt_placements_have_ragged(dt->placements, lt_dtensor_mesh(dt)->ndim))
        return lt__ragged_clone(dt, out);
    LT_TRY(lt_local_new(lt_dtensor_mesh(dt), &local));
    for (int r = 0; r < local->mesh.world; r++) {
        if (!dt->local->shards[r]) continue;   /* absent stays absent */
        lt_status st = lt_clone(dt->local->shards[r], &local->shards[r]);
        if (st) {
            lt_local_free(local);
            return st;
        }
    }
    return lt__dtensor_wrap(local, lt_dtensor_spec(dt), out);
}

lt_status lt_full_tensor_direct(const lt_dtensor *dt, lt_tensor **out) {
    const lt_mesh *mesh = lt_dtensor_mesh(dt);
    const lt_placement *pl = dt->placements;
    lt_tensor *full = NULL;
    *out = NULL;
    if (lt_placements_have_ragged(pl, mesh->ndim)) return lt__ragged_full_direct(dt, out);
    lt_redop op = LT_REDOP_SUM;
    double avg_div = 1;
    int partial = 0;
    for (int i = 0; i < mesh->ndim; i++) {
        if (pl[i].kind != LT_PL_PARTIAL) continue;
        partial = 1;
        op = pl[i].op == LT_REDOP_AVG ? LT_REDOP_SUM : pl[i].op;
        if (pl[i].op == LT_REDOP_AVG) avg_div *= mesh->shape[i];
    }
    /* 16-bit floats reduce in f32 and round once */
    int widen = partial && (dt->dtype == LT_BF16 || dt->dtype == LT_F16);
    int64_t numel;
    LT_TRY(lt__numel_checked(dt->ndim, dt->shape, widen ? 4 : lt_dtype_size(dt->dtype), &numel));
    LT_TRY(lt_check_memory((uint64_t)numel * (widen ? 4 : lt_dtype_size(dt->dtype)), mesh->world,
                           "the full tensor"));
    LT_TRY(lt_tensor_new(widen ? LT_F32 : dt->dtype, dt->ndim, dt->shape, &full));
    /* pass 0: ranks with every Partial coordinate 0 (copy); pass 1: the rest (reduce) */
    for (int pass = 0; pass < 2; pass++) {
        for (int r = 0; r < mesh->world; r++) {
            int coord[LT_MESH_MAX_DIMS];
            lt_mesh_coord(mesh, r, coord);
            int skip = 0, partial_nonzero = 0;
            for (int i = 0; i < mesh->ndim; i++) {
                if (pl[i].kind == LT_PL_REPLICATE && coord[i] != 0) skip = 1;
                if (pl[i].kind == LT_PL_PARTIAL && coord[i] != 0) partial_nonzero = 1;
            }
            if (skip || partial_nonzero != pass) continue;
            if (!dt->local->shards[r]) {
                lt_tensor_free(full);
                return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                                    "not supported yet: full_tensor needs rank %d's shard, which "
                                    "is absent (not held here)",
                                    r);
            }
            lt_rank_layout l;
            lt_status st = lt_spec_layout_rank(lt_dtensor_spec(dt), r, &l);
            lt_tensor *src = dt->local->shards[r], *wide = NULL;
            if (!st && widen && l.lists) st = lt_cast(src, LT_F32, &wide);
            if (!st && l.lists)
                st = lt_scatter_index_sets(full, l.idx, wide ? wide : src, pass, op);
            lt_tensor_free(wide);
            lt_rank_layout_free(&l);
            if (st) {
                lt_tensor_free(full);
                return lt__err_ctx_in(st, "full_tensor", ": rank %d", r);
            }
        }
    }
    if (avg_div != 1) {
        int64_t n = lt_numel(full);
        for (int64_t j = 0; j < n; j++) lt_set_flat(full, j, lt_get_flat(full, j) / avg_div);
    }
    if (widen) {
        lt_tensor *narrow = NULL;
        lt_status st = lt_cast(full, dt->dtype, &narrow);
        lt_tensor_free(full);
        if (st) return st;
        full = narrow;
    }
    *out = full;
    return LT_OK;
}

/* ---- from_local --------------------------------------------------------- */

/* Every rank has a shard, all of one rank count and dtype. */
static lt_status fl_check_shards(const lt_mesh *mesh, lt_tensor *const *shards) {
    for (int r = 0; r < mesh->world; r++) {
        if (!shards[r]) return lt__err_in(LT_INVALID, "from_local", ": rank %d has no shard", r);
        if (shards[r]->ndim != shards[0]->ndim)
            return lt__err_in(LT_SHAPE, "from_local",
                              ": rank %d's shard has %d dims but rank 0's has %d", r,
                              shards[r]->ndim, shards[0]->ndim);
        if (shards[r]->dtype != shards[0]->dtype)
            return lt__err_in(LT_DTYPE, "from_local", ": rank %d holds %s but rank 0 holds %s", r,
                              lt_dtype_name(shards[r]->dtype), lt_dtype_name(shards[0]->dtype));
    }
    return LT_OK;
}

/* Mesh dim i shards tensor dim d by Shard (sz: (W, LT_MAX_DIMS) the sizes
 * so far; grp: (shape[i]) scratch). Pieces that do not follow the split
 * rule in every group are described by explicit sizes when every group
 * splits alike (norm[i] becomes that rule), else refused. */
static lt_status fl_rule(const lt_mesh *mesh, lt_placement *norm, int i, const int64_t *sz,
                         int *grp) {
    int d = norm[i].dim, k = mesh->shape[i], ng = lt_mesh_ngroups(mesh, i);
    if (k > LT_SPLIT_MAX_EXPLICIT)
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: from_local over a mesh dim of more than %d ranks",
                            LT_SPLIT_MAX_EXPLICIT);
    int all_match = 1, same = 1;
    int64_t first[LT_SPLIT_MAX_EXPLICIT];
    for (int g = 0; g < ng; g++) {
        lt_mesh_group(mesh, i, g, grp);
        int64_t total = 0, want[LT_SPLIT_MAX_EXPLICIT];
        for (int j = 0; j < k; j++)
            if (lt__add_i64(total, sz[grp[j] * LT_MAX_DIMS + d], &total)) all_match = 0;
        int match = lt_split_sizes(&norm[i].rule, total, k, want) == LT_OK;
        for (int j = 0; j < k && match; j++) match = want[j] == sz[grp[j] * LT_MAX_DIMS + d];
        all_match &= match;
        for (int j = 0; j < k; j++) {
            int64_t v = sz[grp[j] * LT_MAX_DIMS + d];
            if (g == 0) first[j] = v;
            else if (first[j] != v) same = 0;
        }
    }
    if (all_match) return LT_OK;
    char txt[64];
    lt_placement_format(&norm[i], txt, sizeof txt);
    lt_split_kind rk = norm[i].rule.kind;
    if (rk != LT_SPLIT_CHUNK && rk != LT_SPLIT_EXPLICIT)
        return lt__err_in(LT_SHAPE, "from_local",
                          ": mesh dim %d (%s): the shard sizes along dim %d do not follow the rule",
                          i, txt, d);
    if (!same)
        return lt__err_in(
            LT_SHAPE, "from_local",
            ": mesh dim %d (%s) splits dim %d unevenly and differently in different groups: "
            "no single placement describes it",
            i, txt, d);
    return lt_split_explicit(first, k, &norm[i].rule);
}

/* The global shape from the shards' sizes (sz, (W, LT_MAX_DIMS), summed
 * here along each sharding mesh dim, innermost first; grp: scratch): every
 * rank must imply the same one. */
static lt_status fl_global_shape(const lt_mesh *mesh, lt_placement *norm, int ndim, int64_t *sz,
                                 int *grp, int64_t *gshape) {
    for (int i = mesh->ndim - 1; i >= 0; i--) {
        if (!lt_placement_is_shard_like(&norm[i])) continue;
        int d = norm[i].dim, k = mesh->shape[i];
        if (norm[i].kind == LT_PL_SHARD && k > 1) LT_TRY(fl_rule(mesh, norm, i, sz, grp));
        for (int g = 0; g < lt_mesh_ngroups(mesh, i); g++) {
            lt_mesh_group(mesh, i, g, grp);
            int64_t total = 0;
            for (int j = 0; j < k; j++)
                if (lt__add_i64(total, sz[grp[j] * LT_MAX_DIMS + d], &total))
                    return lt__err_in(LT_OVERFLOW, "from_local",
                                      ": the shard sizes along dim %d overflow 64 bits", d);
            for (int j = 0; j < k; j++) sz[grp[j] * LT_MAX_DIMS + d] = total;
        }
    }
    for (int d = 0; d < ndim; d++) {
        gshape[d] = sz[d];
        for (int r = 1; r < mesh->world; r++)
            if (sz[r * LT_MAX_DIMS + d] != gshape[d])
                return lt__err_in(LT_SHAPE, "from_local",
                                  ": dim %d implies global size %lld on rank 0 but %lld on rank %d "
                                  "(non-sharded dims must agree across ranks)",
                                  d, (long long)gshape[d], (long long)sz[r * LT_MAX_DIMS + d], r);
    }
    return LT_OK;
}

/* run_check: the shards along every Replicate mesh dim are equal. */
static lt_status fl_check_replicas(const lt_mesh *mesh, const lt_placement *norm,
                                   const lt_local *local, int *grp) {
    for (int i = 0; i < mesh->ndim; i++) {
        if (norm[i].kind != LT_PL_REPLICATE) continue;
        for (int g = 0; g < lt_mesh_ngroups(mesh, i); g++) {
            lt_mesh_group(mesh, i, g, grp);
            lt_status st = lt_local_check_equal(local, grp, mesh->shape[i]);
            if (st)
                return lt__err_ctx_in(st, "from_local", " run_check: replicas along mesh dim %d",
                                      i);
        }
    }
    return LT_OK;
}

/* The DTensor of the shards (their global shape gshape), checked with
 * run_check; strided and nested layouts: the wrap re-derives every local
 * shape. */
static lt_status fl_wrap(const lt_mesh *mesh, lt_tensor *const *shards, const lt_placement *norm,
                         int np, const int64_t *gshape, int run_check, int *grp, lt_dtensor **out) {
    int ndim = shards[0]->ndim;
    int64_t numel;
    LT_TRY(lt__numel_checked(ndim, gshape, lt_dtype_size(shards[0]->dtype), &numel));
    lt_local *local = NULL;
    lt_spec spec;
    lt_status st = lt_local_from_shards(mesh, shards, &local);
    if (!st && run_check) st = fl_check_replicas(mesh, norm, local, grp);
    if (!st) st = lt_spec_init(mesh, shards[0]->dtype, ndim, gshape, norm, np, &spec);
    if (!st) st = lt__dtensor_wrap(local, &spec, out);
    else lt_local_free(local);
    if (!st) (*out)->from_local = 1;
    if (st && *out == NULL && st != LT_MISMATCH) st = lt__err_ctx_in(st, "from_local", "%s", "");
    return st;
}

lt_status lt_from_local(const lt_mesh *mesh, lt_tensor *const *shards, const lt_placement *pl,
                        int np, int run_check, lt_dtensor **out) {
    *out = NULL;
    int W = mesh->world;
    LT_TRY(fl_check_shards(mesh, shards));
    if (lt_placements_have_ragged(pl, np))
        return lt_ragged_from_local(mesh, shards, pl, np, -1, NULL, run_check, out);
    int ndim = shards[0]->ndim;
    lt_placement norm[LT_MESH_MAX_DIMS];
    LT_TRY(lt_placements_check(mesh, ndim, pl, np, norm));
    int64_t *sz = lt__malloc(sizeof(int64_t) * (size_t)W * LT_MAX_DIMS);   /* (W, LT_MAX_DIMS) */
    int *grp = lt__malloc(sizeof(int) * (size_t)W);
    lt_status st = !sz || !grp ? lt__err(LT_NOMEM, "out of memory") : LT_OK;
    for (int r = 0; r < W && !st; r++)
        for (int d = 0; d < ndim; d++) sz[r * LT_MAX_DIMS + d] = shards[r]->shape[d];
    int64_t gshape[LT_MAX_DIMS];
    if (!st) st = fl_global_shape(mesh, norm, ndim, sz, grp, gshape);
    lt__free(sz);
    if (!st) st = fl_wrap(mesh, shards, norm, np, gshape, run_check, grp, out);
    lt__free(grp);
    return st;
}
