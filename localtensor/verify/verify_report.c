/* localtensor/verify/verify_report.c — how the redistribute verifier words what it
 * found (localtensor/verify/verify_impl.h): the report struct of lt_verify_report
 * and the message naming the rank, the local and global index and both
 * values, or the shapes. Kept apart from the checks (localtensor/verify/verify.c),
 * which only decide where a difference lies.
 */
#include <stdio.h>
#include <string.h>

#include "kernels/status_impl.h"
#include "localtensor/verify/verify_impl.h"

/* "[i, j, k]" into buf (n bytes, truncated to fit). */
static void index_str(int ndim, const int64_t *idx, char *buf, size_t n) {
    size_t used = 0;
    int w = snprintf(buf, n, "[");
    if (w > 0) used = (size_t)w;
    for (int d = 0; d < ndim && used < n; d++) {
        w = snprintf(buf + used, n - used, "%s%lld", d ? ", " : "", (long long)idx[d]);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (used < n) snprintf(buf + used, n - used, "]");
}

void lt__verify_report_init(lt_verify_report *rep, int ndim) {
    if (!rep) return;
    memset(rep, 0, sizeof *rep);
    rep->checked = 1;
    rep->ok = 1;
    rep->step = -1;
    rep->mesh_dim = -1;
    rep->rank = -1;
    rep->ndim = ndim;
}

lt_status lt__verify_element_mismatch(lt_verify_report *rep, int step, const char *what, int rank,
                                      int ndim, const lt_compare_result *res,
                                      const lt_rank_layout *l) {
    int64_t g[LT_MAX_DIMS];
    for (int d = 0; d < ndim; d++)
        g[d] = l->idx[d] ? l->idx[d][res->first_idx[d]] : res->first_idx[d];
    char li[200], gi[200];
    index_str(ndim, res->first_idx, li, sizeof li);
    index_str(ndim, g, gi, sizeof gi);
    lt_status st = lt__err(LT_MISMATCH,
                           "%srank %d, local index %s (global index %s): expected %.9g, got %.9g "
                           "(%lld element%s differ%s on that rank)",
                           what, rank, li, gi, res->expected, res->actual, (long long)res->ndiff,
                           res->ndiff == 1 ? "" : "s", res->ndiff == 1 ? "s" : "");
    if (rep) {
        rep->ok = 0;
        rep->step = step;
        rep->rank = rank;
        rep->ndim = ndim;
        memcpy(rep->local_index, res->first_idx, sizeof(int64_t) * (size_t)ndim);
        memcpy(rep->global_index, g, sizeof(int64_t) * (size_t)ndim);
        rep->expected = res->expected;
        rep->actual = res->actual;
        rep->ndiff = res->ndiff;
        snprintf(rep->message, sizeof rep->message, "%s", lt_errmsg());
    }
    return st;
}

lt_status lt__verify_shape_mismatch(lt_verify_report *rep, int step, int r, const lt_tensor *a,
                                    int ndim, const int64_t *es) {
    char sa[128], se[128];
    lt_shape_format(a->ndim, a->shape, sa, sizeof sa);
    lt_shape_format(ndim, es, se, sizeof se);
    lt_status st =
        lt__err(LT_MISMATCH, "rank %d holds a shard of shape %s but the direct reshard gives %s", r,
                sa, se);
    if (rep) {
        rep->ok = 0;
        rep->step = step;
        rep->rank = r;
        rep->shape_mismatch = 1;
        memcpy(rep->expected_shape, es, sizeof(int64_t) * (size_t)ndim);
        memcpy(rep->actual_shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
        snprintf(rep->message, sizeof rep->message, "%s", lt_errmsg());
    }
    return st;
}
