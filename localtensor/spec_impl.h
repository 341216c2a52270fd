/* localtensor/spec_impl.h — internal helpers on the static description of a
 * tensor (mesh, dtype, shape, placements): the words a cache key is made of.
 *
 * Both plan caches (redistribute plans, op plans) key on placements; one
 * encoding keeps them from disagreeing on what makes two placements equal.
 */
#ifndef LT_SPEC_IMPL_H
#define LT_SPEC_IMPL_H

#include <string.h>

#include "kernels/cache_impl.h"
#include "localtensor/placement.h"
#include "localtensor/spec.h"

/* The spec of the same tensor (mesh, dtype, shape) under placements
 * pl[s->mesh->ndim], which the caller has checked for it (normalized, layout
 * computable): a redistribute step's state, a reshard's destination. */
static inline lt_spec lt__spec_with(const lt_spec *s, const lt_placement *pl) {
    lt_spec r = *s;
    memcpy(r.placements, pl, sizeof(lt_placement) * (size_t)s->mesh->ndim);
    return r;
}

/* Appends the words of one normalized placement: kind, dim, rule or
 * split factor or op, and an explicit split's sizes. */
void lt__key_placement(lt__cache_key *k, const lt_placement *p);

#endif
