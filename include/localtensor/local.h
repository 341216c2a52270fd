/* localtensor/local.h — LocalTensor: one dense shard per simulated rank.
 *
 * An lt_local binds a mesh to world shards (lt_tensor*, indexed by rank).
 * Shards may differ in shape (uneven sharding) and may be zero-size; they
 * must share a dtype. An lt_localint carries an integer that may differ by
 * rank (a local size of an uneven shard); it "collapses" to a constant when
 * every rank agrees. lt_local_map runs a C callback on every rank's shard:
 * the MPMD escape hatch (docs/SEMANTICS.md §8).
 *
 * Absent shards: an entry shards[r] that is NULL means "rank r's shard is not
 * held here" (another process's rank under an MPI engine, a rank whose values
 * are not computed under --numerics sample or none). Shapes and offsets of an
 * absent rank still come from layout math (localtensor/layout.h); only its
 * values are missing. Every function below skips absent entries (a map runs
 * on present ranks only; a replicas check compares the present ones) unless
 * its comment says it needs every rank. lt_local_has and lt_local_count are
 * the only tests callers need.
 */
#ifndef LT_LOCAL_H
#define LT_LOCAL_H

#include <stdint.h>

#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"

typedef struct lt_local {
    lt_mesh mesh;
    lt_tensor **shards;      /* (world) owned; NULL: absent (see above) or still building */
} lt_local;

/* 1 when rank r's shard is held here (r in range and its entry not NULL). */
static inline int lt_local_has(const lt_local *lt, int rank) {
    return lt && rank >= 0 && rank < lt->mesh.world && lt->shards[rank] != NULL;
}
/* How many ranks' shards are held here (world when none is absent). */
LT_API int lt_local_count(const lt_local *lt);
/* The lowest rank whose shard is held here, -1 when none is. */
LT_API int lt_local_first(const lt_local *lt);

/* New LocalTensor with all shards NULL. Free with lt_local_free. */
LT_API lt_status lt_local_new(const lt_mesh *mesh, lt_local **out);
/* Takes ownership of nothing: copies views of shards[world] (borrowed) into a
 * new LocalTensor; NULL entries stay absent. Errors: no shard at all, dtypes
 * that differ (names the ranks). */
LT_API lt_status lt_local_from_shards(const lt_mesh *mesh, lt_tensor *const *shards,
                                      lt_local **out);
/* Frees every shard and the LocalTensor. NULL is a no-op. */
LT_API void lt_local_free(lt_local *lt);

/* ---- per-rank ints -------------------------------------------------------- */

typedef struct lt_localint {
    int world;
    int64_t *v;               /* (world) owned */
} lt_localint;

LT_API lt_status lt_localint_new(int world, lt_localint *out);   /* zeros */
LT_API void lt_localint_free(lt_localint *li);
/* 1 and *value when every rank holds the same value. */
LT_API int lt_localint_is_const(const lt_localint *li, int64_t *value);
/* eq: true only if equal on every rank. ne: true if any rank differs. */
LT_API int lt_localint_eq(const lt_localint *a, const lt_localint *b);
/* Ordered compare: LT_INVALID when the answer differs by rank (docs/SEMANTICS.md §8:
 * ge/gt/le/lt of a non-constant int are errors). *result = a < b. */
LT_API lt_status lt_localint_lt(const lt_localint *a, const lt_localint *b, int *result);
/* "3" when constant, else "{0: 2, 1: 2, 2: 1, 3: 0}" into buf. */
LT_API char *lt_localint_format(const lt_localint *li, char *buf, size_t n);

/* ---- per-rank map --------------------------------------------------------- */

/* Called once per PRESENT rank with that rank's shard (borrowed). It may set *out to a
 * NEW tensor (owned by the result LocalTensor) and/or *out_int. Returning a
 * non-OK status stops the map; the error gets "rank R" prepended. */
typedef lt_status (*lt_rank_fn)(int rank, const int *coord, const lt_tensor *in, void *user,
                                lt_tensor **out, int64_t *out_int);

/* Runs fn on every present rank of in (absent ranks stay absent in *out and
 * get 0 in ints). out (may be NULL) receives a new LocalTensor of the
 * produced tensors (every present rank must produce one, or none); ints (may
 * be NULL) receives the per-rank ints (caller frees with lt_localint_free). */
LT_API lt_status lt_local_map(const lt_local *in, lt_rank_fn fn, void *user, lt_local **out,
                              lt_localint *ints);

/* Replicas check: the first rank pair (a < b) whose shards differ, with the
 * first differing element. Returns LT_MISMATCH with the message
 * "ranks A and B differ at index [i, j]: A has x, B has y", LT_OK when all
 * listed ranks[n] hold equal shards (exact compare; shapes too). Absent
 * ranks are skipped: the present ones are compared. */
LT_API lt_status lt_local_check_equal(const lt_local *lt, const int *ranks, int n);

#endif
