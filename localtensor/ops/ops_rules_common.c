/* localtensor/ops/ops_rules_common.c — helpers the sharding rule families share
 * (sharding_rules.c, ops_rules_view.c): comparing and re-targeting shard
 * placements, forcing a mesh dim to Replicate, and the global indices a rank
 * holds of one sharded dim. Kept apart so the families call down into it
 * and never into each other.
 */
#include "kernels/alloc.h"
#include "localtensor/layout.h"
#include "localtensor/ops/ops_impl.h"

int lt__pl_same_shard(const lt_placement *a, const lt_placement *b) {
    if (a->kind != b->kind) return 0;
    if (a->kind == LT_PL_STRIDED) return a->split_factor == b->split_factor;
    if (a->kind == LT_PL_SHARD) return lt_split_rule_equal(&a->rule, &b->rule);
    return 1;
}

lt_placement lt__pl_with_dim(const lt_placement *p, int dim) {
    lt_placement q = *p;
    q.dim = dim;
    return q;
}

void lt__rule_force_replicate(lt__rule_io *io, int i) {
    io->out[i] = lt_replicate();
    for (int k = 0; k < io->nin; k++) io->tgt[k][i] = lt_replicate();
}

/* Loose on purpose (no lt_spec): pl1 is a rule's candidate or an input's
 * placements seen on one dim alone, not a checked layout; a list that does
 * not lay out is an error the caller clears (ops_rules_view.c). */
lt_status lt__dim_indices(const lt_mesh *mesh, int64_t n, const lt_placement *pl1, int rank,
                          int64_t **idx, int64_t *len) {
    lt_placement p[LT_MESH_MAX_DIMS];
    for (int i = 0; i < mesh->ndim; i++)
        p[i] = lt_placement_is_shard_like(&pl1[i]) ? lt__pl_with_dim(&pl1[i], 0) : lt_replicate();
    lt_rank_layout l;
    *idx = NULL;
    *len = 0;
    LT_TRY(lt_layout_rank(mesh, 1, &n, p, rank, &l));
    int64_t m = l.local_shape[0];
    int64_t *v = lt__malloc(sizeof(int64_t) * (size_t)(m > 0 ? m : 1)); /* (m) */
    if (!v) {
        lt_rank_layout_free(&l);
        return lt__err(LT_NOMEM, "out of memory");
    }
    for (int64_t j = 0; j < m; j++) v[j] = l.idx[0] ? l.idx[0][j] : j;
    lt_rank_layout_free(&l);
    *idx = v;
    *len = m;
    return LT_OK;
}
