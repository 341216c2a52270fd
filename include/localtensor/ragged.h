/* localtensor/ragged.h — RaggedShard layout math, and the DTensor entry points
 * that take it (docs/SEMANTICS.md §11.10).
 *
 * RaggedShard(dims=(0..k-1), local_units) cuts a tensor by memory order: its
 * F = shape[0]*...*shape[k-1] rows (a row holds prod(shape[k:]) elements)
 * are split into consecutive runs, rank c of the mesh dim getting
 * units[c] * F / U rows (U = the units' sum; F must be a multiple of U). A
 * shard has the flattened shape (rows, *shape[k:]): k - 1 fewer dims than
 * the tensor when k > 1. The N-d layout math (localtensor/layout.h) does not
 * describe such shards, so every RaggedShard layout is computed on its
 * "view": the same elements seen as a tensor of shape (F, *shape[k:]) (a
 * reshape of the row-major tensor: a view element's flat index is the
 * tensor's), where the RaggedShard is an explicit-sizes Shard(0) and a
 * Shard(d) with d >= k is Shard(d - k + 1). lt_distribute, lt_dtensor_new,
 * lt_from_local, lt_full_tensor(_direct), lt_redistribute and lt_dtensor_clone take
 * RaggedShard through this file; what else meets one says "not supported
 * yet". One RaggedShard per placement list.
 */
#ifndef LT_RAGGED_H
#define LT_RAGGED_H

#include <stdint.h>

#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/dtensor.h"
#include "localtensor/kernels/export.h"
#include "localtensor/placement.h"

typedef struct lt_ragged_view {
    int mesh_dim;                 /* of the RaggedShard; -1 when there is none (the view
                                   * is the tensor itself) */
    int k;                        /* dims flattened (1 when there is no RaggedShard) */
    int ndim;                     /* the view's: tensor ndim - k + 1 (tensor ndim when none) */
    int64_t shape[LT_MAX_DIMS];   /* (F, shape[k:]) */
    lt_placement pl[LT_MESH_MAX_DIMS]; /* the view's placements (no RaggedShard) */
    int64_t rows;                 /* F */
    int64_t units_sum;            /* U */
} lt_ragged_view;

/* 1 when one of pl[0..np) is a RaggedShard (np clamped to 0..LT_MESH_MAX_DIMS). */
LT_API int lt_placements_have_ragged(const lt_placement *pl, int np);

/* The view of (mesh, tensor of ndim dims and shape, placements pl checked
 * by lt_placements_check) into *out. Errors (LT_INVALID, naming the mesh
 * dim, F and U): F not a multiple of U; LT_OVERFLOW; LT_NOMEM. */
LT_API lt_status lt_ragged_view_of(const lt_mesh *mesh, int ndim, const int64_t *shape,
                                   const lt_placement *pl, lt_ragged_view *out);

/* Rank `rank`'s shard of a (possibly) ragged layout, pl unchecked (np
 * placements): *local_ndim and local_shape[*local_ndim] (the view's local
 * shape), view_offset[*local_ndim] (the view's global offset: entry 0 is the
 * first flattened row held, F when the shard is empty), and *first_element,
 * the flat index in the tensor of the shard's first element (-1 when the
 * shard is empty). Any output may be NULL. The checks of
 * lt_placements_check and lt_ragged_view_of. */
LT_API lt_status lt_ragged_local_shape(const lt_mesh *mesh, int ndim, const int64_t *shape,
                                       const lt_placement *pl, int np, int rank, int *local_ndim,
                                       int64_t *local_shape, int64_t *view_offset,
                                       int64_t *first_element);

/* from_local with the global shape given (shape[ndim]; needed when k > 1,
 * where the shards' flattened rows do not say it). shards[world] borrowed as
 * lt_from_local; *out is a new DTensor (free with lt_dtensor_free). Errors:
 * the checks above; LT_SHAPE naming the rank whose shard does not have the
 * shape the units give; lt_from_local's. */
LT_API lt_status lt_ragged_from_local(const lt_mesh *mesh, lt_tensor *const *shards,
                                      const lt_placement *pl, int np, int ndim,
                                      const int64_t *shape, int run_check, lt_dtensor **out);

#endif
