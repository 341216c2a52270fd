/* localtensor/random.h — initialisers and sharding-invariant random numbers.
 *
 * Every initialiser is a function of (global linear index) only, so a rank
 * fills its shard from its global index sets and holds exactly the values the
 * unsharded tensor holds there, for any mesh and placements (docs/SEMANTICS.md §11.4).
 * Random values come from Philox4x32-10 keyed by (seed, global index).
 */
#ifndef LT_RANDOM_H
#define LT_RANDOM_H

#include <stdint.h>

#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"

/* XX(enum suffix, spelling, seeded: 1 when written NAME:SEED) */
#define LT_INIT_MAP(XX)         \
    XX(ARANGE, "arange", 0)     \
    XX(ZEROS,  "zeros",  0)     \
    XX(ONES,   "ones",   0)     \
    XX(RANDOM, "random", 1)     \
    XX(RANDN,  "randn",  1)

typedef enum {
#define LT__XX(e, s, seeded) LT_INIT_##e,
    LT_INIT_MAP(LT__XX)
#undef LT__XX
    LT_INIT_COUNT
} lt_init_kind;

typedef struct lt_init {
    lt_init_kind kind;
    uint64_t seed;           /* RANDOM, RANDN */
} lt_init;

/* Parses "arange", "zeros", "ones", "random:SEED", "randn:SEED". */
LT_API lt_status lt_init_parse(const char *s, lt_init *out);
/* "random:7" etc. */
LT_API char *lt_init_format(const lt_init *in, char *buf, size_t n);

/* Philox4x32-10: four 32-bit outputs for (counter, key). */
LT_API void lt_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* Uniform [0, 1) with 24 random bits (exact in f32) for element `index`. */
LT_API double lt_rand_uniform(uint64_t seed, uint64_t index);
/* Standard normal (Box-Muller on two draws of the same counter). */
LT_API double lt_rand_normal(uint64_t seed, uint64_t index);
/* Value of an initialiser at a global linear index, as a float tensor sees
 * it (random: uniform [0, 1); randn: standard normal). */
LT_API double lt_init_value(const lt_init *in, uint64_t index);
/* The same for a tensor of dtype dt. Random draws for integer dtypes are
 * integers, so they do not all truncate to 0: random gives floor(1000 u) in
 * [0, 1000), randn gives round(100 n); for bool, random is u < 0.5 and randn
 * is n > 0. Floats: lt_init_value. */
LT_API double lt_init_value_dt(const lt_init *in, uint64_t index, lt_dtype dt);

/* Fills t (any layout) as the full tensor of its own shape. */
LT_API lt_status lt_init_fill(lt_tensor *t, const lt_init *in);
/* Fills a shard from its global index sets: t[i0, ...] = init at the global
 * linear index of (idx[0][i0], ...) in a tensor of gshape. idx[d] NULL means
 * "all of dim d" (then t->shape[d] == gshape[d]). */
LT_API lt_status lt_init_fill_indexed(lt_tensor *t, const lt_init *in, int64_t *const *idx,
                                      const int64_t *gshape);

#endif
