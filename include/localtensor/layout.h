/* localtensor/layout.h — layout math: which global indices each rank holds.
 *
 * Pure functions of (mesh, global shape, placements). For every rank and
 * every tensor dim we keep the list of global indices the rank holds, in local
 * order, by walking the placements left to right exactly as distribute does
 * (docs/SEMANTICS.md §3, §4, §6 — newest era): Shard(d, rule) keeps piece c of the
 * current list split by the rule; StridedShard(d, sf) splits the current list
 * into sf chunks, each into k chunks, and keeps the concatenation of chunk c
 * of every piece. Replicate and Partial leave the lists alone.
 *
 * local_shape[d] = length of the list; global_offset[d] = its first element,
 * or global_shape[d] when the list is empty; 0 for a dim never sharded.
 */
#ifndef LT_LAYOUT_H
#define LT_LAYOUT_H

#include <stdint.h>

#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"
#include "localtensor/placement.h"

typedef struct lt_rank_layout {
    int ndim;
    int64_t local_shape[LT_MAX_DIMS];
    int64_t global_offset[LT_MAX_DIMS];
    /* idx[d]: (local_shape[d]) global indices held along d, in local order;
     * NULL when dim d is not sharded (then the rank holds all of it).
     * Owned by the layout; release with lt_rank_layout_free. */
    int64_t *idx[LT_MAX_DIMS];
    int contiguous[LT_MAX_DIMS];     /* 1 when the indices held along d are a consecutive run */
    /* 0 when the global tensor has no elements: then no list is built (every
     * idx[d] is NULL, even for sharded dims) since there is nothing to
     * index, and another dim may be huge; local_shape, global_offset and
     * contiguous are still exact. 1 otherwise. */
    int lists;
    /* private: 1 when the lists share one allocation, which the first
     * non-NULL idx starts (small dims: lt_layout_rank) */
    int one_block_;
} lt_rank_layout;

/* Layout of one rank. `pl` must already be checked (lt_placements_check).
 * Errors (LT_INVALID, message names the mesh dim, the placement, the rank and
 * the size being split): a `last` split of fewer elements than ranks;
 * explicit sizes that do not sum to the size they split on this rank.
 * LT_OVERFLOW / LT_NOMEM when an index list does not fit. On error nothing
 * stays allocated; otherwise release with lt_rank_layout_free. */
LT_API lt_status lt_layout_rank(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                                const lt_placement *pl, int rank, lt_rank_layout *out);
LT_API void lt_rank_layout_free(lt_rank_layout *l);

/* Checks that the layout is computable on every rank (the rank-dependent
 * errors above), without keeping the index lists. */
LT_API lt_status lt_layout_check(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                                 const lt_placement *pl);

/* Local shape and global offset only (the split errors above); builds no
 * list and allocates nothing, so it is cheap for any shape. Either output
 * may be NULL. */
LT_API lt_status lt_local_shape_and_offset(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                                           const lt_placement *pl, int rank, int64_t *local_shape,
                                           int64_t *global_offset);

/* compute_global_tensor_info (docs/SEMANTICS.md §9): global shape and stride from one
 * rank's local shape/stride, assuming even sharding: for each Shard(d) on
 * mesh dim i, size[d] *= m_i and every stride >= stride[d] (other than d's
 * own) is multiplied by m_i. Errors: a dim out of range (LT_INVALID), a
 * StridedShard (LT_UNSUPPORTED). */
LT_API lt_status lt_compute_global_tensor_info(const lt_mesh *mesh, int ndim,
                                               const int64_t *local_shape,
                                               const int64_t *local_stride, const lt_placement *pl,
                                               int64_t *global_shape, int64_t *global_stride);

/* Shard.local_shard_size_and_offset (docs/SEMANTICS.md §2): the chunk-rule piece of
 * rank `rank` of k when splitting a current local size `curr`, with its
 * offset relative to that local tensor. Even: (curr/k, rank*curr/k).
 * Otherwise full = ceil(curr/k), start = full*rank: (0, curr) when
 * curr < start, else (min(curr, start+full) - start, start). */
LT_API void lt_chunk_size_and_offset(int64_t curr, int k, int rank, int64_t *size, int64_t *offset);

/* Bytes the shards of all ranks hold together for this layout (esize bytes
 * an element) into *out. LT_OVERFLOW when the total does not fit in 64 bits;
 * the layout errors of lt_layout_rank otherwise. */
LT_API lt_status lt_layout_total_bytes(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                                       const lt_placement *pl, size_t esize, uint64_t *out);

/* LT_NOMEM with "WHAT needs X GiB for the shards of all N ranks, more than
 * this machine's Y GiB of memory" when bytes exceed what this process can
 * still use (physical memory, memory available now, ulimit; see
 * kernels/memlimit_impl.h): the simulator holds every rank's shard at once, and
 * failing here beats being killed by the kernel later. LT_OK otherwise, or
 * when memory is unknown. */
LT_API lt_status lt_check_memory(uint64_t bytes, int world, const char *what);

/* Row-major contiguous strides of a shape (a size-0 dim counts as 1).
 * Returns 1, with strides unusable, when they overflow int64 (possible for
 * a 0-element shape with huge other dims); 0 otherwise. */
LT_API int lt_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);

#endif
