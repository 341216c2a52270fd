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
