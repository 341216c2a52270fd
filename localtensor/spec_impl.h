/* localtensor/spec_impl.h — internal helpers on the static description of a
 * tensor (mesh, dtype, shape, placements): the words a cache key is made of.
 *
 * Both plan caches (redistribute plans, op plans) key on placements; one
 * encoding keeps them from disagreeing on what makes two placements equal.
 */
#ifndef LT_SPEC_IMPL_H
#define LT_SPEC_IMPL_H

#include "kernels/cache_impl.h"
#include "localtensor/placement.h"

/* Appends the words of one normalized placement: kind, dim, rule or
 * split factor or op, and an explicit split's sizes. */
void lt__key_placement(lt__cache_key *k, const lt_placement *p);

#endif
