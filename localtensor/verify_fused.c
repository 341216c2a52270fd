/* localtensor/verify_fused.c — the inner loops of the redistribute
 * verifier's fused check of reduced values (localtensor/verify.c): a run of
 * elements summed from its Partial contributions in the dtype and compared
 * with what a rank holds, in one pass over the contributions, without
 * building the expected shard.
 *
 * Kept apart from the checks, which decide which bytes make a run, because
 * these loops are what the check's speed hangs on: they read the
 * contributions in blocks that stay in the first-level cache, two
 * contributions per pass over the block (half the passes; the sum keeps
 * its order, so the same rounding), and compare a whole block before
 * looking at any element's tolerance.
 */
#include <math.h>
#include <string.h>

#include "localtensor/verify_impl.h"

int lt__verify_close_enough(double a, double b, double rtol, double atol) {
    if (a == b) return 1;
    if (a != a || b != b) return a != a && b != b;
    if (isinf(a) || isinf(b)) return 0;
    return fabs(a - b) <= atol + rtol * fabs(b);
}

/* Bytes of a block's accumulator: the block of every contribution read in
 * one pass stays in the first-level cache with it. */
#define FUSE_BLK_BYTES 16384

/* Contribution q of a block (elements k0 ..) as a T pointer. */
#define LT__SRC(T, q) ((const T *)(const void *)s[q] + k0 * ss[q])

/* One run: acc = s[0] + s[1] + ... + s[nq - 1] in that order, in T, block
 * by block (a pair of contributions per pass: (T)(acc + x) + y rounds as
 * two separate additions do, the cast dropping any excess precision); divided by avg_div through double; compared with
 * a; only an element that differs is tested against the tolerance with
 * the slack, its sum of |contribution| read anew. */
#define LT__FUSED_RUN(T)                                                                             \
    enum { BLK = FUSE_BLK_BYTES / sizeof(T) };                                                       \
    T acc_[BLK];                                                                                     \
    T *restrict acc = acc_;                                                                          \
    for (int64_t k0 = 0; k0 < len; k0 += BLK) {                                                      \
        int64_t m = len - k0 < BLK ? len - k0 : BLK;                                                 \
        int q;                                                                                       \
        if (nq >= 2 && ss[0] == 1 && ss[1] == 1) {                                                   \
            const T *restrict x = LT__SRC(T, 0), *restrict y = LT__SRC(T, 1);                        \
            for (int64_t k = 0; k < m; k++) acc[k] = x[k] + y[k];                                    \
            q = 2;                                                                                   \
        } else {                                                                                     \
            const T *x = LT__SRC(T, 0);                                                              \
            if (ss[0] == 1) memcpy(acc, x, (size_t)m * sizeof(T));                                   \
            else                                                                                     \
                for (int64_t k = 0; k < m; k++) acc[k] = x[k * ss[0]];                               \
            q = 1;                                                                                   \
        }                                                                                            \
        for (; q < nq; q++) {                                                                        \
            const T *restrict x = LT__SRC(T, q);                                                     \
            if (q + 1 < nq && ss[q] == 1 && ss[q + 1] == 1) {                                        \
                const T *restrict y = LT__SRC(T, q + 1);                                             \
                for (int64_t k = 0; k < m; k++) acc[k] = (T)(acc[k] + x[k]) + y[k];                  \
                q++;                                                                                 \
            } else if (ss[q] == 1)                                                                   \
                for (int64_t k = 0; k < m; k++) acc[k] = acc[k] + x[k];                              \
            else                                                                                     \
                for (int64_t k = 0; k < m; k++) acc[k] = acc[k] + x[k * ss[q]];                      \
        }                                                                                            \
        if (avg_div != 1)                                                                            \
            for (int64_t k = 0; k < m; k++) acc[k] = (T)((double)acc[k] / avg_div);                  \
        const T *restrict ap = (const T *)(const void *)a + k0 * as;                                 \
        int differ = 0;                                                                              \
        if (as == 1)                                                                                 \
            for (int64_t k = 0; k < m; k++) differ |= ap[k] != acc[k];                               \
        else                                                                                         \
            differ = 1;                                                                              \
        if (!differ) continue;                                                                       \
        for (int64_t k = 0; k < m; k++) {                                                            \
            if (ap[k * as] == acc[k]) continue;                                                      \
            double mag = 0; /* sum of |contribution|: the order slack scales with it */              \
            for (int p = 0; p < nq; p++)                                                             \
                mag += fabs((double)((const T *)(const void *)s[p])[(k0 + k) * ss[p]]);              \
            if (!lt__verify_close_enough((double)ap[k * as], (double)acc[k], rtol, atol + slack * mag)) \
                return 1;                                                                            \
        }                                                                                            \
    }                                                                                                \
    return 0;

/* The fused loops are worth vectorizing: gcc does so at -O2 only when asked
 * (clang does anyway). */
#if defined(__GNUC__) && !defined(__clang__)
#define LT__VECTORIZE __attribute__((optimize("tree-vectorize")))
#else
#define LT__VECTORIZE
#endif

LT__VECTORIZE int lt__verify_fused_run_f32(const char *const *s, const int64_t *ss, int nq, const char *a, int64_t as,
                                           int64_t len, double avg_div, double rtol, double atol, double slack) {
    LT__FUSED_RUN(float)
}

LT__VECTORIZE int lt__verify_fused_run_f64(const char *const *s, const int64_t *ss, int nq, const char *a, int64_t as,
                                           int64_t len, double avg_div, double rtol, double atol, double slack) {
    LT__FUSED_RUN(double)
}
