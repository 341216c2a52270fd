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

/* A spec whose placements pl[s->mesh->ndim] are NOT checked: the same
 * tensor as s seen under placements that may not be a computable layout.
 * Not an lt_spec in the sense of spec.h (its invariant may not hold): no
 * layout math (lt_spec_*) may run on it and it must not escape to code that
 * trusts specs. One user: op propagation (ops.c, build_plan), whose fallback
 * shows a sharding rule its inputs relaxed to Replicate on one mesh dim,
 * which can leave a split nested under it that no longer fits; the rule
 * only reads the fields, and whatever it asks for is checked (lt_spec_init)
 * before it is used. */
static inline lt_spec lt__spec_unchecked(const lt_spec *s, const lt_placement *pl) {
    return lt__spec_with(s, pl);
}

/* Appends the words of one normalized placement: kind, dim, rule or
 * split factor or op, and an explicit split's sizes. */
void lt__key_placement(lt__cache_key *k, const lt_placement *p);

/* Appends the words of spec s without its mesh (the caller puts the mesh
 * once for all the specs of a key): dtype and ndim, the global shape, the
 * placements. The one encoding of a spec in both caches' keys (redistribute
 * plans, op plans). */
static inline void lt__key_spec(lt__cache_key *k, const lt_spec *s) {
    int nd = s->ndim, mnd = s->mesh->ndim; /* read once: k->n is an int too */
    lt__key_put(k, (uint64_t)s->dtype | (uint64_t)(uint32_t)nd << 8);
    for (int d = 0; d < nd; d++) lt__key_put(k, (uint64_t)s->shape[d]);
    for (int i = 0; i < mnd; i++) lt__key_placement(k, &s->placements[i]);
}

#endif
