/* localtensor/remesh.h — redistribute between a mesh and its flattened
 * form: a layout on (dp, cp, tp) to one on (dp_cp, tp) and back
 * (docs/SEMANTICS.md §1.1). The planner plans on one mesh; this is the
 * route across the two, built from ordinary redistributes.
 */
#ifndef LT_REMESH_H
#define LT_REMESH_H

#include "localtensor/kernels/export.h"
#include "localtensor/redistribute.h"

/* Redistributes dt (borrowed) to mesh `to` (borrowed) with placements
 * dst[np]. One of dt's mesh and `to` must be the other with a run of
 * adjacent dims flattened into one (lt_mesh_flatten of adjacent dims:
 * the same positions, the same rank ids; names may differ). The route:
 *   1. the source placements written on `to`: the flattened run's
 *      placements R..R <-> R, P(op)..P(op) <-> P(op), S(d)..S(d) <-> S(d)
 *      when every position holds the same global indices under both
 *      (layout math, index by index); other dims as they are;
 *   2. when they cannot be (an uneven S(d), mixed placements, SS): first a
 *      redistribute on dt's mesh to the same placements with R on the run;
 *   3. the shards, unchanged, as a DTensor on `to` (no data moves);
 *   4. a redistribute on `to` to dst.
 * Steps 2 and 4 are lt_redistribute with opts (verified when
 * opts->verify); opts->comm is used for the step on its mesh only (a
 * temporary communicator for the other); opts->report gets step 4's.
 * *out: a new DTensor on `to` (free with lt_dtensor_free). Errors: meshes
 * that are not so related (LT_UNSUPPORTED, "not supported yet"), the
 * redistributes' errors (with "remesh" context). */
LT_API lt_status lt_redistribute_remesh(const lt_dtensor *dt, const lt_mesh *to,
                                        const lt_placement *dst, int np,
                                        const lt_redistribute_opts *opts, lt_dtensor **out);

#endif
