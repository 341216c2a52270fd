/* localtensor/verify/verify_fused.c — the inner loops of the redistribute
 * verifier's checks (localtensor/verify/verify.c): the runs of a shard's last dim
 * that one source shard holds, the joining of copied runs into long
 * compares, and the fused check of reduced values: a run of elements
 * summed from its Partial contributions in the dtype and compared with
 * what a rank holds, in one pass over the contributions, without building
 * the expected shard.
 *
 * Kept apart from the checks, which decide which bytes make a run, because
 * these loops are what the check's speed hangs on. The fused ones read the
 * contributions in blocks that stay in the first-level cache, up to eight
 * contributions per pass over the block (fewer passes, and more memory
 * streams at once; the sum keeps its order, so the same rounding), compare
 * the rank's values in the last pass, and compare a whole block before
 * looking at any element's tolerance.
 */
#include <math.h>
#include <string.h>

#include "localtensor/verify/verify_impl.h"

int lt__verify_close_enough(double a, double b, double rtol, double atol) {
    if (a == b) return 1;
    if (a != a || b != b) return a != a && b != b;
    if (isinf(a) || isinf(b)) return 0;
    return fabs(a - b) <= atol + rtol * fabs(b);
}

int64_t lt__verify_last_dim_runs(const int64_t *gl, int64_t nl, int run, const int64_t *pl,
                                 const int64_t *ql, int64_t *key, int64_t *rn) {
    int64_t nr = 0, g0 = gl && nl ? gl[0] : 0;
    if (run && key[0] && key[1] == g0 && key[2] == nl) return key[3];
    key[0] = 0;
    for (int64_t j = 0; j < nl;) {
        int64_t g = gl ? gl[j] : j, pr = pl ? pl[g] : 0, p0 = ql ? ql[g] : g, len = 1;
        while (j + len < nl) {
            int64_t h = gl ? gl[j + len] : j + len;
            if ((pl ? pl[h] : 0) != pr || (ql ? ql[h] : h) != p0 + len) break;
            len++;
        }
        rn[4 * nr] = j, rn[4 * nr + 1] = len, rn[4 * nr + 2] = pr, rn[4 * nr + 3] = p0;
        nr++;
        j += len;
    }
    if (run) key[0] = 1, key[1] = g0, key[2] = nl, key[3] = nr;
    return nr;
}

/* Bytes of a block's accumulator: the block of every contribution read in
 * one pass stays in the first-level cache with it. */
#define FUSE_BLK_BYTES 16384

/* Contribution q of a block (elements k0 ..) as a T pointer. */
#define LT__SRC(T, q) ((const T *)(const void *)s[q] + k0 * ss[q])

/* One pass over a block: acc[k] = VAL for k < m; when it is the last
 * pass and the run is compared as it is summed (cmp), also compares each
 * value with ap (differ) while it is in a register, so the rank's bytes are
 * read alongside the contributions rather than in a pass of their own. */
#define LT__PASS(T, VAL)                                                                           \
    do {                                                                                           \
        if (cmp && q + wd == nq) {                                                                 \
            for (int64_t k = 0; k < m; k++) {                                                      \
                T v_ = VAL;                                                                        \
                acc[k] = v_;                                                                       \
                differ |= ap[k] != v_;                                                             \
            }                                                                                      \
            compared = 1;                                                                          \
        } else                                                                                     \
            for (int64_t k = 0; k < m; k++) acc[k] = VAL;                                          \
    } while (0)

/* (T)((T)((T)(A + p[k]) + q[k]) + r[k]) + t[k]: four additions in order. */
#define LT__ADD4(T, A, p, q, r, t) ((T)((T)((T)((T)(A) + p[k]) + q[k]) + r[k]) + t[k])
/* Contributions q .. q + 7 all read contiguously. */
#define LT__UNIT8(q)                                                                               \
    (ss[q] == 1 && ss[q + 1] == 1 && ss[q + 2] == 1 && ss[q + 3] == 1 && ss[q + 4] == 1 &&         \
     ss[q + 5] == 1 && ss[q + 6] == 1 && ss[q + 7] == 1)

/* One run: acc = s[0] + s[1] + ... + s[nq - 1] in that order, in T, block
 * by block (up to eight contributions per pass: (T)((T)(acc + x) + y) ...
 * rounds as separate additions do, the casts dropping any excess
 * precision; more streams read at once keep the memory busier);
 * divided by avg_div through double; compared with a (in the last pass
 * when a is contiguous and nothing is divided); only an element that
 * differs is tested against the tolerance with the slack, its sum of
 * |contribution| read anew. */
#define LT__FUSED_RUN(T)                                                                           \
    enum { BLK = FUSE_BLK_BYTES / sizeof(T) };                                                     \
    T acc_[BLK];                                                                                   \
    T *restrict acc = acc_;                                                                        \
    int cmp = as == 1 && avg_div == 1;                                                             \
    for (int64_t k0 = 0; k0 < len; k0 += BLK) {                                                    \
        int64_t m = len - k0 < BLK ? len - k0 : BLK;                                               \
        const T *restrict ap = (const T *)(const void *)a + k0 * as;                               \
        int differ = 0, compared = 0;                                                              \
        for (int q = 0, wd; q < nq; q += wd) {                                                     \
            const T *restrict x = LT__SRC(T, q);                                                   \
            if (q + 7 < nq && LT__UNIT8(q)) {                                                      \
                const T *restrict y = LT__SRC(T, q + 1), *restrict z = LT__SRC(T, q + 2);          \
                const T *restrict w = LT__SRC(T, q + 3), *restrict x4 = LT__SRC(T, q + 4);         \
                const T *restrict x5 = LT__SRC(T, q + 5), *restrict x6 = LT__SRC(T, q + 6);        \
                const T *restrict x7 = LT__SRC(T, q + 7);                                          \
                wd = 8;                                                                            \
                if (q == 0)                                                                        \
                    LT__PASS(T, LT__ADD4(T, (T)((T)(x[k] + y[k]) + z[k]) + w[k], x4, x5, x6, x7)); \
                else                                                                               \
                    LT__PASS(T, LT__ADD4(T, LT__ADD4(T, acc[k], x, y, z, w), x4, x5, x6, x7));     \
            } else if (q + 3 < nq && ss[q] == 1 && ss[q + 1] == 1 && ss[q + 2] == 1 &&             \
                       ss[q + 3] == 1) {                                                           \
                const T *restrict y = LT__SRC(T, q + 1), *restrict z = LT__SRC(T, q + 2);          \
                const T *restrict w = LT__SRC(T, q + 3);                                           \
                wd = 4;                                                                            \
                if (q == 0)                                                                        \
                    LT__PASS(T, (T)((T)(x[k] + y[k]) + z[k]) + w[k]);                              \
                else                                                                               \
                    LT__PASS(T, (T)((T)((T)(acc[k] + x[k]) + y[k]) + z[k]) + w[k]);                \
            } else if (q + 1 < nq && ss[q] == 1 && ss[q + 1] == 1) {                               \
                const T *restrict y = LT__SRC(T, q + 1);                                           \
                wd = 2;                                                                            \
                if (q == 0)                                                                        \
                    LT__PASS(T, x[k] + y[k]);                                                      \
                else                                                                               \
                    LT__PASS(T, (T)(acc[k] + x[k]) + y[k]);                                        \
            } else {                                                                               \
                int64_t sx = ss[q];                                                                \
                wd = 1;                                                                            \
                if (sx == 1 && q == 0)                                                             \
                    LT__PASS(T, x[k]);                                                             \
                else if (sx == 1)                                                                  \
                    LT__PASS(T, acc[k] + x[k]);                                                    \
                else if (q == 0)                                                                   \
                    LT__PASS(T, x[k * sx]);                                                        \
                else                                                                               \
                    LT__PASS(T, acc[k] + x[k * sx]);                                               \
            }                                                                                      \
        }                                                                                          \
        if (avg_div != 1)                                                                          \
            for (int64_t k = 0; k < m; k++) acc[k] = (T)((double)acc[k] / avg_div);                \
        if (compared) {                                                                            \
        } else if (as == 1)                                                                        \
            for (int64_t k = 0; k < m; k++) differ |= ap[k] != acc[k];                             \
        else                                                                                       \
            differ = 1;                                                                            \
        if (!differ) continue;                                                                     \
        for (int64_t k = 0; k < m; k++) {                                                          \
            if (ap[k * as] == acc[k]) continue;                                                    \
            double mag = 0; /* sum of |contribution|: the order slack scales with it */            \
            for (int p = 0; p < nq; p++)                                                           \
                mag += fabs((double)((const T *)(const void *)s[p])[(k0 + k) * ss[p]]);            \
            if (!lt__verify_close_enough((double)ap[k * as], (double)acc[k], rtol,                 \
                                         atol + slack * mag))                                      \
                return 1;                                                                          \
        }                                                                                          \
    }                                                                                              \
    return 0;

/* The fused loops are worth vectorizing: gcc does so at -O2 only when asked
 * (clang does anyway). */
#if defined(__GNUC__) && !defined(__clang__)
#define LT__VECTORIZE __attribute__((optimize("tree-vectorize")))
#else
#define LT__VECTORIZE
#endif

LT__VECTORIZE int lt__verify_fused_run_f32(const char *const *s, const int64_t *ss, int nq,
                                           const char *a, int64_t as, int64_t len, double avg_div,
                                           double rtol, double atol,
                                           double slack){LT__FUSED_RUN(float)}

LT__VECTORIZE int lt__verify_fused_run_f64(const char *const *s, const int64_t *ss, int nq,
                                           const char *a, int64_t as, int64_t len, double avg_div,
                                           double rtol, double atol, double slack) {
    LT__FUSED_RUN(double)
}
