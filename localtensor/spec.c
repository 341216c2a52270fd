/* localtensor/spec.c — lt_spec_init: the one place a spec is validated. */
#include "localtensor/spec.h"
#include "kernels/memlimit_impl.h"

#include <string.h>

#include "kernels/status_impl.h"
#include "localtensor/layout.h"

lt_status lt_spec_init(const lt_mesh *mesh, lt_dtype dtype, int ndim, const int64_t *shape,
                       const lt_placement *pl, int np, lt_spec *out) {
    memset(out, 0, sizeof *out);
    if (ndim < 0 || ndim > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "tensor has %d dims; at most %d are supported", ndim,
                       LT_MAX_DIMS);
    int64_t n;
    LT_TRY(lt__numel_checked(ndim, shape, lt_dtype_size(dtype), &n));
    lt_spec s;
    memset(&s, 0, sizeof s);
    LT_TRY(lt_placements_check(mesh, ndim, pl, np, s.placements));
    LT_TRY(lt_layout_check(mesh, ndim, shape, s.placements));
    s.mesh = mesh;
    s.dtype = dtype;
    s.ndim = ndim;
    if (ndim > 0) memcpy(s.shape, shape, sizeof(int64_t) * (size_t)ndim);
    *out = s;
    return LT_OK;
}

lt_status lt_spec_layout_rank(const lt_spec *s, int rank, lt_rank_layout *out) {
    return lt_layout_rank(s->mesh, s->ndim, s->shape, s->placements, rank, out);
}

lt_status lt_spec_local_shape(const lt_spec *s, int rank, int64_t *local_shape,
                              int64_t *global_offset) {
    return lt_local_shape_and_offset(s->mesh, s->ndim, s->shape, s->placements, rank, local_shape,
                                     global_offset);
}

lt_status lt_spec_total_bytes(const lt_spec *s, uint64_t *out) {
    return lt_layout_total_bytes(s->mesh, s->ndim, s->shape, s->placements, lt_dtype_size(s->dtype),
                                 out);
}

lt_status lt_spec_unique_bytes(const lt_spec *s, uint64_t *out) {
    const lt_mesh *m = s->mesh;
    size_t es = lt_dtype_size(s->dtype);
    uint64_t total = 0;
    for (int r = 0; r < m->world; r++) {
        int coord[LT_MESH_MAX_DIMS], rep = 0;
        lt_mesh_coord(m, r, coord);
        for (int i = 0; i < m->ndim; i++)
            rep |= s->placements[i].kind == LT_PL_REPLICATE && coord[i];
        if (rep) continue;   /* a replica of a rank counted already */
        int64_t ls[LT_MAX_DIMS], n;
        LT_TRY(lt_spec_local_shape(s, r, ls, NULL));
        LT_TRY(lt__numel_checked(s->ndim, ls, es, &n));
        total = lt__add_sat(total, (uint64_t)n * es); /* n * es fits: numel_checked bounds bytes */
    }
    *out = total;
    return LT_OK;
}
