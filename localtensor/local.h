/* localtensor/local.h — LocalTensor: one dense shard per simulated rank.
 *
 * An lt_local binds a mesh to world shards (lt_tensor*, indexed by rank).
 * Shards may differ in shape (uneven sharding) and may be zero-size; they
 * must share a dtype. An lt_localint carries an integer that may differ by
 * rank (a local size of an uneven shard); it "collapses" to a constant when
 * every rank agrees. lt_local_map runs a C callback on every rank's shard:
 * the MPMD escape hatch (docs/SEMANTICS.md §8).
 */
#ifndef LT_LOCAL_H
#define LT_LOCAL_H

#include <stdint.h>

#include "collectives_sim/mesh.h"
#include "kernels/export.h"
#include "kernels/tensor.h"

typedef struct lt_local {
    lt_mesh mesh;
    lt_tensor **shards;      /* (world) owned; an entry may be NULL only while building */
} lt_local;

/* New LocalTensor with all shards NULL. Free with lt_local_free. */
LT_API lt_status lt_local_new(const lt_mesh *mesh, lt_local **out);
/* Takes ownership of nothing: copies views of shards[world] (borrowed) into a
 * new LocalTensor. Errors: a NULL shard, dtypes that differ (names the ranks). */
LT_API lt_status lt_local_from_shards(const lt_mesh *mesh, lt_tensor *const *shards, lt_local **out);
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
LT_API char *lt_localint_str(const lt_localint *li, char *buf, size_t n);

/* ---- per-rank map --------------------------------------------------------- */

/* Called once per rank with that rank's shard (borrowed). It may set *out to a
 * NEW tensor (owned by the result LocalTensor) and/or *out_int. Returning a
 * non-OK status stops the map; the error gets "rank R" prepended. */
typedef lt_status (*lt_rank_fn)(int rank, const int *coord, const lt_tensor *in, void *user,
                                lt_tensor **out, int64_t *out_int);

/* Runs fn on every rank of in. out (may be NULL) receives a new LocalTensor of
 * the produced tensors (every rank must produce one, or none); ints (may be
 * NULL) receives the per-rank ints (caller frees with lt_localint_free). */
LT_API lt_status lt_local_map(const lt_local *in, lt_rank_fn fn, void *user, lt_local **out,
                              lt_localint *ints);

/* Replicas check: the first rank pair (a < b) whose shards differ, with the
 * first differing element. Returns LT_MISMATCH with the message
 * "ranks A and B differ at index [i, j]: A has x, B has y", LT_OK when all
 * listed ranks[n] hold equal shards (exact compare; shapes too). */
LT_API lt_status lt_local_check_equal(const lt_local *lt, const int *ranks, int n);

#endif
