/* localtensor/ops/ops_random.c — random ops that do not depend on the layout
 * (docs/SEMANTICS.md §11.4): rand, randn, dropout.
 *
 * Every random value is a function of (seed, global linear index) only
 * (Philox, localtensor/random.h), so any mesh and any placements of the same
 * global tensor hold exactly the values of the unsharded run. Dropout draws
 * its keep mask the same way, so it is also elementwise-linear with a
 * non-negative factor and keeps every Partial placement.
 */
#include "kernels/alloc.h"
#include <stdlib.h>
#include <string.h>

#include "localtensor/layout.h"
#include "localtensor/ops.h"
#include "kernels/status_impl.h"

lt_status lt_dtensor_rand(const lt_mesh *mesh, lt_dtype dt, int ndim, const int64_t *shape,
                     const lt_placement *pl, int np, uint64_t seed, int normal, lt_dtensor **out) {
    *out = NULL;
    if (ndim < 0 || ndim > LT_MAX_DIMS) return lt__err(LT_INVALID, "rand: %d dims", ndim);
    if (np < 0 || np > LT_MESH_MAX_DIMS) return lt__err(LT_INVALID, "rand: %d placements", np);
    lt_op_args *a = lt__calloc(1, sizeof *a);
    if (!a) return lt__err(LT_NOMEM, "out of memory");
    a->mesh = mesh, a->dtype = dt, a->shape_ndim = ndim, a->np = np, a->seed = seed;
    for (int d = 0; d < ndim; d++) a->shape[d] = shape[d];
    for (int i = 0; i < np; i++) a->placements[i] = pl[i];
    lt_status st = lt_op(normal ? LT_OP_RANDN : LT_OP_RAND, NULL, 0, a, NULL, out, 1, NULL);
    lt__free(a);
    return st;
}

lt_status lt_dtensor_dropout(const lt_dtensor *x, double p, uint64_t seed, lt_dtensor **out) {
    lt_op_args args;
    memset(&args, 0, sizeof args);
    args.scalar = p, args.seed = seed;
    return lt_op(LT_OP_DROPOUT, &x, 1, &args, NULL, out, 1, NULL);
}
