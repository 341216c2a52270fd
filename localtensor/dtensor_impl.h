/* localtensor/dtensor_impl.h — building DTensors from parts (internal: not
 * installed). The executor, the ops and the verifier produce shards
 * themselves; these wrap them, with the same shape checks and the same
 * Replicate -> Partial partition that distribute applies.
 */
#ifndef LT_DTENSOR_IMPL_H
#define LT_DTENSOR_IMPL_H

#include <stdint.h>

#include "kernels/status_impl.h"
#include "localtensor/dtensor.h"

/* Builds a DTensor of checked spec `spec` (borrowed; its mesh must equal
 * local->mesh; the DTensor's spec points at local->mesh) from
 * already-computed shards (takes ownership of `local` and its shards even on
 * error); checks every shard's shape and dtype against layout math. For
 * executors and ops. */
lt_status lt__dtensor_wrap(lt_local *local, const lt_spec *spec, lt_dtensor **out);

/* What distribute adds to a spec's checks: the Partial kinds it cannot
 * produce (norm: normalized placements, one per dim of mesh; an integer or
 * bool P(sum) only on a mesh dim of size > 1). LT_INVALID or LT_UNSUPPORTED
 * naming the mesh dim. */
lt_status lt__check_partials(const lt_mesh *mesh, lt_dtype dtype, const lt_placement *norm, int np);

/* Applies the Replicate->Partial partition of mesh dims [from_dim, ndim) that
 * are Partial in pl to shard t of rank coord (sum: divide by the mesh dim
 * size). Used by distribute and the verifier. */
/* The rank whose shard rank r shares under placements pl: r with its
 * coordinate zeroed on every Replicate mesh dim (r itself when it has none). */
int lt__replica_class(const lt_mesh *mesh, const lt_placement *pl, int r);

lt_status lt__partition(lt_tensor *t, const lt_mesh *mesh, const lt_placement *pl);

#endif
