/* test/redistribute_testutil.h — mesh/placement builders and shard
 * comparisons shared by test_redistribute.c and test_planner.c. Header-only. */
#ifndef LT_REDISTRIBUTE_TESTUTIL_H
#define LT_REDISTRIBUTE_TESTUTIL_H

#include <string.h>

#include "localtensor/localtensor.h"
#include "test/testutil.h"

static inline lt_mesh mk_mesh(const char *s) {
    lt_mesh m;
    LT_CHECK(lt_mesh_parse(s, &m));
    return m;
}

static inline int parse_pl(const char *s, lt_placement *pl) {
    int n;
    LT_CHECK(lt_placements_parse(s, pl, LT_MESH_MAX_DIMS, &n));
    return n;
}

static inline lt_dtensor *mk(const lt_mesh *m, lt_dtype dt, int ndim, const int64_t *shape,
                             const lt_placement *pl) {
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_dtensor *d = NULL;
    LT_CHECK(lt_dtensor_new(m, dt, ndim, shape, pl, m->ndim, &init, &d));
    return d;
}

static inline const char *fmt_pl(const lt_placement *pl, int n, char *buf, size_t cap) {
    lt_placements_format(pl, n, buf, cap);
    return buf;
}

/* docs/SEMANTICS.md §7: on a mesh dim of size > 1, S -> P(sum) is a zero fill. */
static inline int expect_zero_fill(const lt_mesh *m, const lt_placement *s, const lt_placement *d) {
    for (int i = 0; i < m->ndim; i++)
        if (m->shape[i] > 1 && s[i].kind == LT_PL_SHARD && d[i].kind == LT_PL_PARTIAL &&
            d[i].op == LT_REDOP_SUM)
            return 1;
    return 0;
}

/* docs/SEMANTICS.md §7: on a mesh dim of size > 1, S -> P(op != sum), SS -> P and
 * P(a) -> P(b), a != b, raise. */
static inline int expect_reject(const lt_mesh *m, const lt_placement *s, const lt_placement *d) {
    for (int i = 0; i < m->ndim; i++) {
        if (m->shape[i] == 1 || d[i].kind != LT_PL_PARTIAL) continue;
        if (s[i].kind == LT_PL_SHARD && d[i].op != LT_REDOP_SUM) return 1;
        if (s[i].kind == LT_PL_STRIDED) return 1;
        if (s[i].kind == LT_PL_PARTIAL && s[i].op != d[i].op) return 1;
    }
    return 0;
}

/* Shards of a and b agree: shapes exactly, values within the dtype tolerance. */
static inline void expect_same_shards(const lt_dtensor *a, const lt_dtensor *b, const char *what) {
    double rtol, atol;
    lt_dtype_default_tol(a->dtype, &rtol, &atol);
    for (int r = 0; r < lt_dtensor_mesh(a)->world; r++) {
        const lt_tensor *x = a->local->shards[r], *y = b->local->shards[r];
        if (!lt_same_shape(x, y)) {
            char sx[64], sy[64];
            fail_msg("%s: rank %d has shape %s, expected %s", what, r,
                     lt_shape_format(x->ndim, x->shape, sx, 64),
                     lt_shape_format(y->ndim, y->shape, sy, 64));
        }
        lt_compare_result res;
        LT_CHECK(lt_compare(x, y, rtol, atol, &res));
        if (!res.equal)
            fail_msg("%s: rank %d element %lld is %g, expected %g", what, r,
                     (long long)res.first_flat, res.actual, res.expected);
    }
}

/* Options of one mesh dim for an ndim-d tensor: R, S(d), S(d, rule), SS(0,2),
 * P(sum), P(max). */
static inline int mesh_dim_options(int ndim, lt_split_kind rule, lt_placement *o) {
    int n = 0;
    o[n++] = lt_replicate();
    for (int d = 0; d < ndim; d++) o[n++] = lt_shard(d);
    for (int d = 0; d < ndim; d++) {
        lt_split_rule r = lt_split_chunk();
        r.kind = rule;
        o[n++] = lt_shard_rule(d, r);
    }
    if (ndim) o[n++] = lt_strided(0, 2);
    o[n++] = lt_partial(LT_REDOP_SUM);
    o[n++] = lt_partial(LT_REDOP_MAX);
    return n;
}

static inline uint64_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 17;
}

static inline void decode_list(long idx, const lt_placement *o, int nopt, int M, lt_placement *pl) {
    for (int i = M - 1; i >= 0; i--) {
        pl[i] = o[idx % nopt];
        idx /= nopt;
    }
}

#endif
