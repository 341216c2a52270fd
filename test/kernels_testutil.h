/* test/kernels_testutil.h — builders and a reproducible RNG shared by the
 * kernels/ tests (test_kernels.c, test_views.c). Header-only. */
#ifndef LT_KERNELS_TESTUTIL_H
#define LT_KERNELS_TESTUTIL_H

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/kernels/backend.h"
#include "test/testutil.h"

#define N_(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const lt_dtype all_dtypes[]
    __attribute__((unused)) = {LT_F32, LT_F64, LT_BF16, LT_F16, LT_I32, LT_I64, LT_BOOL};

static inline lt_tensor *mk(lt_dtype dt, int ndim, const int64_t *shape, const double *vals) {
    lt_tensor *t = NULL;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    LT_CHECK(lt_tensor_from_doubles(dt, ndim, shape, vals, n, &t));
    return t;
}

/* arange of the given shape */
static inline lt_tensor *mk_arange(lt_dtype dt, int ndim, const int64_t *shape) {
    lt_tensor *t = NULL;
    LT_CHECK(lt_tensor_new(dt, ndim, shape, &t));
    LT_CHECK(lt_arange_fill(t));
    return t;
}

/* xorshift, so tests are reproducible */
static uint64_t rng_state = 88172645463325252ull;
static inline uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static inline int64_t rnd_below(int64_t n) { return (int64_t)(rnd() % (uint64_t)n); }

/* Next multi-index in row-major order; returns 0 after the last one. */
static inline int next_index(int ndim, const int64_t *shape, int64_t *idx) {
    for (int d = ndim - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return 1;
        idx[d] = 0;
    }
    return 0;
}

static inline void expect_msg_contains(const char *needle) {
    if (!strstr(lt_errmsg(), needle))
        fail_msg("error message \"%s\" does not contain \"%s\"", lt_errmsg(), needle);
}

/* ---- creation, queries, lifetime ------------------------------------------------ */

/* Random geometry: an arange tensor, permuted and narrowed. */
static inline lt_tensor *random_view(lt_dtype dt, int ndim, const int64_t *shape,
                                     lt_tensor **base) {
    int64_t big[LT_MAX_DIMS];
    int perm[LT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) perm[d] = d;
    for (int d = ndim - 1; d > 0; d--) {
        int j = (int)rnd_below(d + 1), x = perm[d];
        perm[d] = perm[j];
        perm[j] = x;
    }
    /* base has shape[perm^-1] plus slack, so that permute+narrow gives shape */
    for (int d = 0; d < ndim; d++) big[perm[d]] = shape[d] + rnd_below(3);
    *base = mk_arange(dt, ndim, big);
    lt_tensor *p, *v = NULL;
    LT_CHECK(lt_permute(*base, perm, &p));
    for (int d = 0; d < ndim; d++) {
        lt_tensor *n;
        int64_t start = rnd_below(p->shape[d] - shape[d] + 1);
        LT_CHECK(lt_narrow(v ? v : p, d, start, shape[d], &n));
        lt_tensor_free(v);
        v = n;
    }
    lt_tensor_free(p);
    return v;
}

#endif
