/* localtensor/ragged_impl.h — the RaggedShard routes that the DTensor entry
 * points (dtensor.c, redistribute.c) hand a ragged layout to (internal: not
 * installed). Each is what its public function promises, for placements
 * with a RaggedShard (docs/SEMANTICS.md §11.10); localtensor/ragged.h says how.
 */
#ifndef LT_RAGGED_IMPL_H
#define LT_RAGGED_IMPL_H

#include "localtensor/ops.h"
#include "localtensor/ragged.h"
#include "localtensor/redistribute.h"

/* Sets dt's spec to (ndim, shape, pl) and its stride to shape's row-major
 * strides; the shards are left as they are. */
void lt__ragged_relabel(lt_dtensor *dt, int ndim, const int64_t *shape, const lt_placement *pl);
/* *v = dt relabelled with its view's spec: a borrowed copy (its shards are
 * dt's; never free it), for the ordinary code to read. */
lt_status lt__ragged_as_view(const lt_dtensor *dt, lt_dtensor *v);

/* The view of checked placements pl with dims 0..k-1 flattened (k >= the
 * RaggedShard's own; k = 0: its own, as lt_ragged_view_of) into *out; *ok = 0
 * when pl cannot be written in it (a RaggedShard of more than k dims, a
 * Shard-like of a dim below k when k > 1). Errors as lt_ragged_view_of's. */
lt_status lt__ragged_view_k(const lt_mesh *mesh, int ndim, const int64_t *shape,
                            const lt_placement *pl, int k, lt_ragged_view *out, int *ok);
/* A plan state vp[np] of a view spelled for the tensor into out: on the
 * RaggedShard's mesh dim of sv (dv), the view's placement of it is stp's
 * (dtp's) RaggedShard; a Shard-like of view dim d >= 1 is of tensor dim
 * d + k - 1 (k: sv's); the rest keeps the view's spelling. */
void lt__ragged_spell(const lt_ragged_view *sv, const lt_placement *stp, const lt_ragged_view *dv,
                      const lt_placement *dtp, const lt_placement *vp, int np,
                      lt_placement *out);
/* What the exchange would receive from checked spec src to dst (same
 * elements, no Partial): each rank the elements of its dst shard that its
 * src shard lacks; summed over the ranks into *total, the busiest rank's
 * into *max (bytes). */
lt_status lt__ragged_lack_bytes(const lt_spec *src, const lt_spec *dst, size_t *total,
                                size_t *max);
/* lt_redistribute of dt to normalized norm through the planner on the view
 * both sides share (localtensor/ragged_plan.c): *done = 0 (nothing else
 * set) when they share none, the planner rejects the pair, a shard is not
 * held here, or (no Partial; objective bytes or max-rank-bytes) the
 * exchange costs less; otherwise the route ran: its status, *out and
 * *plan as lt_redistribute's. */
lt_status lt__ragged_view_route(const lt_dtensor *dt, const lt_placement *norm,
                                const lt_redistribute_opts *opts, lt_dtensor **out,
                                lt_plan **plan, int *done);

/* lt_distribute, lt_dtensor_new, lt_full_tensor_direct, lt_dtensor_clone and
 * lt_redistribute
 * (lt_full_tensor's route too) for ragged layouts. */
lt_status lt__ragged_distribute(const lt_mesh *mesh, const lt_tensor *full,
                                const lt_placement *pl, int np, lt_dtensor **out);
lt_status lt__ragged_dtensor_new(const lt_mesh *mesh, lt_dtype dt, int ndim, const int64_t *shape,
                                const lt_placement *pl, int np, const lt_init *init,
                                lt_dtensor **out);
lt_status lt__ragged_full_direct(const lt_dtensor *dt, lt_tensor **out);
lt_status lt__ragged_clone(const lt_dtensor *dt, lt_dtensor **out);
lt_status lt__ragged_redistribute(const lt_dtensor *dt, const lt_placement *dst, int np,
                                  const lt_redistribute_opts *opts, lt_dtensor **out,
                                  lt_plan **plan);
/* lt_op when an input has a RaggedShard (localtensor/ragged_ops.c). */
lt_status lt__ragged_op(lt_op_kind op, const lt_dtensor *const *in, int nin,
                        const lt_op_args *args, const lt_op_opts *opts, lt_dtensor **out,
                        int max_out, int *nout);

#endif
