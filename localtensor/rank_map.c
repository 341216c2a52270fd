/* localtensor/rank_map.c — named per-rank functions (the MPMD escape hatch
 * for scenarios) and the replica check that reports where ranks diverged.
 *
 * A per-rank function may make replicas differ: that is the point (a bug a
 * user wants to see). The result keeps the input's spec; the replica check
 * then names the first mesh dim, rank pair and element where two ranks that
 * should hold the same data do not.
 */
#include "kernels/alloc.h"
#include <stdlib.h>
#include <string.h>

#include "localtensor/ops.h"
#include "kernels/status_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/rank_map.h"

static const char *const fn_names[] = {
#define LT__XX(e, s, d) s,
    LT_RANK_FN_MAP(LT__XX)
#undef LT__XX
};

const char *lt_rank_fn_name(lt_rank_fn_kind k) {
    return lt__name_of(fn_names, LT_RANK_FN_COUNT, (int)k);
}

lt_status lt_rank_fn_parse(const char *s, lt_rank_fn_kind *out) {
    int i = lt__name_find(fn_names, LT_RANK_FN_COUNT, s);
    if (i >= 0) return *out = (lt_rank_fn_kind)i, LT_OK;
    char list[512];
    return lt__err(LT_INVALID, "unknown per-rank function '%s' (known: %s)", s,
                   lt__name_join(fn_names, LT_RANK_FN_COUNT, list, sizeof list));
}

static lt_status rank_fn(int rank, const int *coord, const lt_tensor *in, void *user,
                         lt_tensor **out, int64_t *out_int) {
    lt_rank_fn_kind k = *(const lt_rank_fn_kind *)user;
    switch (k) {
    case LT_RANK_FN_ADD_RANK: return lt_binary_scalar(LT_BINARY_ADD, in, rank, 0, out);
    case LT_RANK_FN_SCALE_BY_RANK: return lt_binary_scalar(LT_BINARY_MUL, in, rank, 0, out);
    case LT_RANK_FN_ADD_COORD0: return lt_binary_scalar(LT_BINARY_ADD, in, coord[0], 0, out);
    case LT_RANK_FN_BUMP_RANK0:
        return lt_binary_scalar(LT_BINARY_ADD, in, rank == 0 ? 1 : 0, 0, out);
    case LT_RANK_FN_LOCAL_NUMEL: *out_int = lt_numel(in); return lt_clone(in, out);
    case LT_RANK_FN_LOCAL_DIM0:
        *out_int = in->ndim > 0 ? in->shape[0] : 1;
        return lt_clone(in, out);
    default: return lt_clone(in, out);
    }
}

lt_status lt_dtensor_rank_map(const lt_dtensor *x, lt_rank_fn_kind fn, lt_dtensor **out,
                              lt_localint *ints) {
    *out = NULL;
    if ((unsigned)fn >= LT_RANK_FN_COUNT)
        return lt__err_in(LT_INVALID, "rank_map", ": unknown function %d", (int)fn);
    lt_local *res = NULL;
    lt_status st = lt_local_map(x->local, rank_fn, &fn, &res, ints);
    if (st) return lt__err_ctx_in(st, "rank_map", " %s", fn_names[fn]);
    st = lt__dtensor_wrap(res, lt_dtensor_spec(x), out);
    if (st && ints) lt_localint_free(ints);
    return st;
}

lt_status lt_dtensor_check_replicas(const lt_dtensor *x) {
    const lt_mesh *m = lt_dtensor_mesh(x);
    int *grp = lt__malloc(sizeof(int) * (size_t)m->world);
    if (!grp) return lt__err(LT_NOMEM, "out of memory");
    lt_status st = LT_OK;
    for (int i = 0; i < m->ndim && !st; i++) {
        if (x->placements[i].kind != LT_PL_REPLICATE || m->shape[i] == 1) continue;
        for (int g = 0; g < lt_mesh_ngroups(m, i) && !st; g++) {
            lt_mesh_group(m, i, g, grp);
            st = lt_local_check_equal(x->local, grp, m->shape[i]);
            if (st != LT_MISMATCH) continue;
            if (m->names[i][0])
                st = lt__err_ctx(st, "mesh dim %s (R)",
                                 m->names[i]); /* named as the mesh names it */
            else st = lt__err_ctx(st, "mesh dim %d (R)", i);
        }
    }
    lt__free(grp);
    return st;
}
