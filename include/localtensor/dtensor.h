/* localtensor/dtensor.h — DTensor: a LocalTensor plus its spec.
 *
 * The spec is an lt_spec (mesh, dtype, global shape, placements) plus the
 * global stride. Every
 * rank's shard has exactly the local shape that layout math gives
 * (localtensor/layout.h); missing chunks are zero-size shards. Partial mesh
 * dims hold per-rank contributions whose op-reduction over the group is the
 * logical value (docs/SEMANTICS.md §5).
 */
#ifndef LT_DTENSOR_H
#define LT_DTENSOR_H

#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"
#include "localtensor/local.h"
#include "localtensor/placement.h"
#include "localtensor/random.h"
#include "localtensor/spec.h"

/* The spec fields are reachable two ways: as one value (dt->spec, what
 * functions taking a `const lt_spec *` get) and by name (dt->dtype,
 * dt->ndim, dt->shape, dt->placements), through an anonymous struct with
 * the same members in the same order (C11 common initial sequence; checked
 * by static asserts in dtensor.c). spec.mesh always points at local->mesh. */
typedef struct lt_dtensor {
    lt_local *local;                           /* owned: one shard per rank */
    union {
        lt_spec spec;                          /* checked: see localtensor/spec.h */
        struct {
            const lt_mesh *spec_mesh_;         /* == &local->mesh; use lt_dtensor_mesh */
            lt_dtype dtype;
            int ndim;
            int64_t shape[LT_MAX_DIMS];                /* global */
            lt_placement placements[LT_MESH_MAX_DIMS]; /* normalized, one per mesh dim */
        };
    };
    int64_t stride[LT_MAX_DIMS];               /* global, row-major contiguous */
    int from_local;                            /* built by lt_from_local: its shards are the
                                                * caller's, combined rank-locally
                                                * (docs/SEMANTICS.md §11.6) */
} lt_dtensor;

/* The mesh of a DTensor (borrowed). */
static inline const lt_mesh *lt_dtensor_mesh(const lt_dtensor *dt) { return &dt->local->mesh; }

/* The spec of a DTensor (borrowed; valid while dt is). */
static inline const lt_spec *lt_dtensor_spec(const lt_dtensor *dt) { return &dt->spec; }

/* distribute_tensor (docs/SEMANTICS.md §3, §4): every rank's shard from the full tensor
 * `full` (borrowed; any dtype, copied), mesh dims left to right; Partial(sum)
 * divides by the mesh dim size, avg/max/min keep the value. Errors
 * (LT_INVALID, message names the placement and mesh dim): see
 * lt_placements_check, P(product) (cannot be distributed), layout errors.
 * *out is a new DTensor (free with lt_dtensor_free). */
LT_API lt_status lt_distribute(const lt_mesh *mesh, const lt_tensor *full, const lt_placement *pl,
                               int np, lt_dtensor **out);

/* A DTensor initialised in place: each rank fills its shard from its global
 * indices (never materialising the full tensor), then Partial dims partition
 * as distribute does. Equal to lt_distribute of the initialised full tensor. */
LT_API lt_status lt_dtensor_new(const lt_mesh *mesh, lt_dtype dt, int ndim, const int64_t *shape,
                                 const lt_placement *pl, int np, const lt_init *init,
                                 lt_dtensor **out);

/* lt_distribute and lt_dtensor_new for a checked spec (borrowed; not
 * re-checked): the DTensor has the spec's dtype (full is cast to it; its
 * shape must be the spec's, LT_SHAPE otherwise) and the spec's placements.
 * Errors: the Partial kinds distribute cannot produce (as above), memory,
 * LT_NOMEM. */
LT_API lt_status lt_distribute_spec(const lt_spec *spec, const lt_tensor *full, lt_dtensor **out);
LT_API lt_status lt_dtensor_new_spec(const lt_spec *spec, const lt_init *init, lt_dtensor **out);

/* from_local (docs/SEMANTICS.md §11.2): shards[world] (borrowed; views are kept) with
 * placements. Global shape: sharded dims sum their sizes along each group
 * (nested sharding sums innermost first); other dims must agree. A Shard
 * whose sizes are not the rule's becomes an explicit-sizes rule when the rule
 * was the default chunk; that must be the same for every group of the mesh
 * dim. run_check: replicas along Replicate dims must be equal (LT_MISMATCH
 * naming the first differing rank pair and element index). */
LT_API lt_status lt_from_local(const lt_mesh *mesh, lt_tensor *const *shards,
                               const lt_placement *pl, int np, int run_check, lt_dtensor **out);

/* The full tensor by direct reassembly from global index sets, reducing
 * Partial dims (last mesh dim first). New contiguous tensor. This path never
 * uses the collectives: the redistribute verifier relies on it. It needs the
 * shards it reads: LT_UNSUPPORTED (LT_ERR_NOT_YET) naming the rank when one
 * is absent. */
LT_API lt_status lt_full_tensor_direct(const lt_dtensor *dt, lt_tensor **out);

/* Rank r's shard (borrowed); NULL when r is out of range or its shard is
 * absent (not held here: localtensor/local.h). */
LT_API const lt_tensor *lt_to_local(const lt_dtensor *dt, int rank);

/* A deep copy (new shards; absent shards stay absent). */
LT_API lt_status lt_dtensor_clone(const lt_dtensor *dt, lt_dtensor **out);
LT_API void lt_dtensor_free(lt_dtensor *dt);

#endif
