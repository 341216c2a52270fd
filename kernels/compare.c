/* kernels/compare.c — allclose with a report: how many elements differ,
 * where the first one is, and the largest absolute difference.
 *
 * Every check in the scenario engine ends here, so the rule is written once:
 * |a - b| <= atol + rtol * |b| (b = expected), NaN equals NaN, an infinity
 * equals only the same infinity. Elements are visited in row-major order, so
 * "first" means the smallest row-major index whatever the strides.
 */
#include "kernels/tensor_impl.h"
#include "kernels/status_impl.h"

#include <math.h>
#include <string.h>

/* One element: 1 when within tolerance; *diff gets |a - b| (0 for equal
 * NaNs or equal infinities, infinity when a NaN or an infinity differs). */
static int close_enough(double a, double b, double rtol, double atol, double *diff) {
    if (isnan(a) || isnan(b)) {
        int same = isnan(a) && isnan(b);
        *diff = same ? 0.0 : INFINITY;
        return same;
    }
    if (a == b) {
        *diff = 0.0;
        return 1;
    }
    if (isinf(a) || isinf(b)) {
        *diff = INFINITY;
        return 0;
    }
    *diff = fabs(a - b);
    return *diff <= atol + rtol * fabs(b);
}

lt_status lt_compare(const lt_tensor *actual, const lt_tensor *expected, double rtol, double atol,
                     lt_compare_result *res) {
    if (!actual || !expected)
        return lt__err(LT_INVALID, "compare: %s is NULL", actual ? "expected" : "actual");
    if (!res) return lt__err(LT_INVALID, "compare: res is NULL");
    if (!(rtol >= 0) || !(atol >= 0))
        return lt__err(LT_INVALID, "compare: tolerances must be >= 0 (rtol %g, atol %g)", rtol,
                       atol);
    if (!lt_same_shape(actual, expected)) {
        char sa[256], sb[256];
        return lt__err(LT_SHAPE, "compare: actual has shape %s but expected has shape %s",
                       lt_shape_format(actual->ndim, actual->shape, sa, sizeof sa),
                       lt_shape_format(expected->ndim, expected->shape, sb, sizeof sb));
    }
    memset(res, 0, sizeof *res);
    res->first_flat = -1;
    double a[LT__CHUNK], b[LT__CHUNK];
    int64_t flat = 0;
    int64_t ea = (int64_t)lt_dtype_size(actual->dtype),
            eb = (int64_t)lt_dtype_size(expected->dtype);
    const lt_tensor *ts[2] = {actual, expected};
    lt__hostrun hr; /* off the host: explicit copies, read here */
    lt_status st = lt__host_begin(&hr, 2, ts);
    if (st != LT_OK) return lt__err_ctx(st, "compare");
    lt__walk w;
    char *p[2];
    lt__walk_init(&w, 2, hr.t);
    while (lt__walk_next(&w, p)) {
        for (int64_t i = 0; i < w.n; i += LT__CHUNK) {
            int64_t m = w.n - i < LT__CHUNK ? w.n - i : LT__CHUNK;
            lt__load_f64(actual->dtype, p[0] + i * w.step[0] * ea, w.step[0], m, a);
            lt__load_f64(expected->dtype, p[1] + i * w.step[1] * eb, w.step[1], m, b);
            for (int64_t j = 0; j < m; j++, flat++) {
                double diff;
                int ok = close_enough(a[j], b[j], rtol, atol, &diff);
                if (diff > res->max_abs_diff) res->max_abs_diff = diff;
                if (ok) continue;
                if (res->ndiff++ == 0) {
                    res->first_flat = flat;
                    res->actual = a[j];
                    res->expected = b[j];
                }
            }
        }
    }
    lt__host_end(&hr, 0, LT_OK);
    res->equal = res->ndiff == 0;
    if (res->first_flat >= 0) {
        int64_t r = res->first_flat;
        for (int d = actual->ndim - 1; d >= 0; d--) {
            res->first_idx[d] = r % actual->shape[d];
            r /= actual->shape[d];
        }
    }
    return LT_OK;
}
