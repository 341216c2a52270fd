/* localtensor/rank_map.h — per-rank map: the MPMD escape hatch
 * (docs/SEMANTICS.md §8).
 *
 * A named function runs on every rank's shard and may make replicas
 * diverge, as per-rank code does in a real program; lt_dtensor_check_replicas
 * finds where they no longer agree.
 */
#ifndef LT_RANK_MAP_H
#define LT_RANK_MAP_H

#include "localtensor/kernels/export.h"
#include "localtensor/dtensor.h"
#include "localtensor/local.h"

/* XX(enum suffix, name, description) */
#define LT_RANK_FN_MAP(XX)                                                         \
    XX(IDENTITY,      "identity",      "x")                                        \
    XX(ADD_RANK,      "add_rank",      "x + rank")                                 \
    XX(SCALE_BY_RANK, "scale_by_rank", "x * rank")                                 \
    XX(ADD_COORD0,    "add_coord0",    "x + the rank's coordinate on mesh dim 0")  \
    XX(BUMP_RANK0,    "bump_rank0",    "x + 1 on rank 0 only")                     \
    XX(LOCAL_NUMEL,   "local_numel",   "x; per-rank int: the shard's element count") \
    XX(LOCAL_DIM0,    "local_dim0",    "x; per-rank int: the shard's size on dim 0")

typedef enum {
#define LT__XX(e, s, d) LT_RANK_FN_##e,
    LT_RANK_FN_MAP(LT__XX)
#undef LT__XX
    LT_RANK_FN_COUNT
} lt_rank_fn_kind;

LT_API const char *lt_rank_fn_name(lt_rank_fn_kind k);
/* LT_INVALID listing the known names when s is unknown. */
LT_API lt_status lt_rank_fn_parse(const char *s, lt_rank_fn_kind *out);

/* Runs the named function on every rank's shard. *out: a new DTensor with x's
 * spec whose shards may now differ by rank (replicas may diverge: check with
 * lt_dtensor_check_replicas); ints (may be NULL): the per-rank ints (free
 * with lt_localint_free). */
LT_API lt_status lt_dtensor_rank_map(const lt_dtensor *x, lt_rank_fn_kind fn, lt_dtensor **out,
                                     lt_localint *ints);

/* Checks that replicas agree along every Replicate mesh dim (exact compare).
 * LT_MISMATCH: "mesh dim I (R): ranks A and B differ at index [..]: ..." (the
 * dim's name instead of I when the mesh names it: "mesh dim tp (R)"). */
LT_API lt_status lt_dtensor_check_replicas(const lt_dtensor *x);

#endif
