/* localtensor/spec.h — lt_spec: the static description of a sharded tensor.
 *
 * A spec is (mesh, dtype, global shape, placements), checked once where it
 * is built (lt_spec_init) and trusted after: functions that take a
 * `const lt_spec *` do not re-validate it. Invariant of every spec built by
 * lt_spec_init: 0 <= ndim <= LT_MAX_DIMS; the element count and byte size
 * fit; placements[0..mesh->ndim) are normalized (lt_placements_check) and
 * the layout is computable on every rank (lt_layout_check).
 *
 * The mesh is borrowed, not copied: a spec is valid only while the mesh it
 * was built from is. A DTensor's spec (lt_dtensor_spec) points at the mesh
 * its LocalTensor owns, so it lives as long as the DTensor. Keeping a
 * pointer keeps the spec small (see sizeof in docs/DESIGN.md) and copies
 * cheap; a caller that must outlive the mesh copies the mesh too.
 */
#ifndef LT_SPEC_H
#define LT_SPEC_H

#include <stdint.h>

#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/kernels/dtype.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"
#include "localtensor/placement.h"

typedef struct lt_spec {
    const lt_mesh *mesh;                       /* borrowed */
    lt_dtype dtype;
    int ndim;
    int64_t shape[LT_MAX_DIMS];                /* global; entries >= ndim are 0 */
    lt_placement placements[LT_MESH_MAX_DIMS]; /* normalized, one per mesh dim */
} lt_spec;

/* Builds and checks a spec, in this order, with the messages of the checks
 * it runs: ndim out of 0..LT_MAX_DIMS (LT_INVALID); element count or bytes
 * overflow (LT_OVERFLOW); lt_placements_check (np must equal mesh->ndim);
 * lt_layout_check. `shape` and `pl` are copied; `mesh` is borrowed (see
 * above). On error *out is left zeroed. */
LT_API lt_status lt_spec_init(const lt_mesh *mesh, lt_dtype dtype, int ndim, const int64_t *shape,
                              const lt_placement *pl, int np, lt_spec *out);

/* Layout math of a checked spec (localtensor/layout.h), without re-checking
 * it: the layout errors cannot happen, only LT_NOMEM / LT_OVERFLOW.
 * lt_spec_layout_rank: rank r's index lists (release with
 * lt_rank_layout_free); lt_spec_local_shape: rank r's local shape and global
 * offset (either may be NULL; allocates nothing); lt_spec_total_bytes: the
 * bytes all ranks' shards hold together. */
struct lt_rank_layout;
LT_API lt_status lt_spec_layout_rank(const lt_spec *s, int rank, struct lt_rank_layout *out);
LT_API lt_status lt_spec_local_shape(const lt_spec *s, int rank, int64_t *local_shape,
                                     int64_t *global_offset);
LT_API lt_status lt_spec_total_bytes(const lt_spec *s, uint64_t *out);
/* The bytes of the UNIQUE buffers of a layout whose replicas share storage
 * (distribute, the collectives and redistribute make them so): the shards
 * of the ranks whose coordinate is 0 on every Replicate mesh dim. */
LT_API lt_status lt_spec_unique_bytes(const lt_spec *s, uint64_t *out);

/* Cheap accessors (no checks). */
static inline const lt_mesh *lt_spec_mesh(const lt_spec *s) { return s->mesh; }
static inline lt_dtype lt_spec_dtype(const lt_spec *s) { return s->dtype; }
static inline int lt_spec_ndim(const lt_spec *s) { return s->ndim; }
static inline const int64_t *lt_spec_shape(const lt_spec *s) { return s->shape; }
static inline const lt_placement *lt_spec_placements(const lt_spec *s) { return s->placements; }
static inline int lt_spec_nplacements(const lt_spec *s) { return s->mesh->ndim; }

#endif
