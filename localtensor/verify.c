/* localtensor/verify.c — the redistribute verifier: a direct reshard from
 * global index sets (docs/SEMANTICS.md §7, "Semantic definition").
 *
 * This file never calls the planner or the collectives: it rebuilds each
 * slice's logical tensor by scattering shards by their layout index sets
 * (localtensor/layout.h), reduces the Partial dims that are not kept with
 * kernels/ math, and cuts the destination shards out of it again. That makes
 * it an independent reference for every plan the executor runs.
 */
#include "kernels/alloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/layout.h"
#include "localtensor/redistribute.h"
#include "kernels/status_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/spec_impl.h"

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

static void report_init(lt_verify_report *rep, int ndim) {
    if (!rep) return;
    memset(rep, 0, sizeof *rep);
    rep->checked = 1;
    rep->ok = 1;
    rep->step = -1;
    rep->mesh_dim = -1;
    rep->rank = -1;
    rep->ndim = ndim;
}

/* Fills rep with an element mismatch and sets the message; returns LT_MISMATCH. */
static lt_status element_mismatch(lt_verify_report *rep, int step, const char *what, int rank, int ndim,
                                  const lt_compare_result *res, const lt_rank_layout *l) {
    int64_t g[LT_MAX_DIMS];
    for (int d = 0; d < ndim; d++)
        g[d] = l->idx[d] ? l->idx[d][res->first_idx[d]] : res->first_idx[d];
    char li[200], gi[200];
    index_str(ndim, res->first_idx, li, sizeof li);
    index_str(ndim, g, gi, sizeof gi);
    lt_status st = lt__err(LT_MISMATCH, "%srank %d, local index %s (global index %s): expected %.9g, got %.9g (%lld element%s differ%s on that rank)",
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

static void free_layouts(lt_rank_layout *ls, int n) {
    if (!ls) return;
    for (int r = 0; r < n; r++) lt_rank_layout_free(&ls[r]);
    lt__free(ls);
}

static lt_status layouts(const lt_spec *spec, lt_rank_layout **out) {
    const lt_mesh *mesh = spec->mesh;
    lt_rank_layout *ls = lt__calloc((size_t)mesh->world, sizeof *ls);
    if (!ls) return lt__err(LT_NOMEM, "out of memory");
    for (int r = 0; r < mesh->world; r++) {
        lt_status st = lt_spec_layout_rank(spec, r, &ls[r]);
        if (st) {
            free_layouts(ls, r);
            return st;
        }
    }
    *out = ls;
    return LT_OK;
}

/* The reshard of a tensor without elements: every rank holds an empty shard
 * of its destination local shape (no index lists: another dim may be huge). */
static lt_status reshard_empty(const lt_spec *dspec, lt_dtensor **out) {
    const lt_mesh *mesh = dspec->mesh;
    lt_local *local;
    LT_TRY(lt_local_new(mesh, &local));
    for (int r = 0; r < mesh->world; r++) {
        int64_t ls[LT_MAX_DIMS];
        lt_status st = lt_spec_local_shape(dspec, r, ls, NULL);
        if (!st) st = lt_tensor_new(dspec->dtype, dspec->ndim, ls, &local->shards[r]);
        if (st) {
            lt_local_free(local);
            return st;
        }
    }
    return lt__dtensor_wrap(local, dspec, out);
}

lt_status lt_reshard_direct(const lt_dtensor *src, const lt_placement *dst, int np,
                            lt_dtensor **out, lt_verify_report *rep) {
    const lt_mesh *mesh = lt_dtensor_mesh(src);
    const lt_placement *sp = src->placements;
    int M = mesh->ndim, W = mesh->world, ndim = src->ndim;
    lt_placement d[LT_MESH_MAX_DIMS], dpart[LT_MESH_MAX_DIMS];
    *out = NULL;
    lt_spec dspec;   /* the destination: same tensor, placements d */
    LT_TRY(lt_placements_check(mesh, ndim, dst, np, d));
    LT_TRY(lt_spec_make(mesh, src->dtype, ndim, src->shape, d, np, &dspec));
    for (int i = 0; i < ndim; i++)
        if (src->shape[i] == 0) return reshard_empty(&dspec, out);
    if (lt_local_count(src->local) < W)
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: the direct reshard of a DTensor with absent shards (%d of %d ranks held)",
                            lt_local_count(src->local), W);

    /* K: kept partials; NP: the source's other Partial dims (reduced) */
    int kept[LT_MESH_MAX_DIMS], red[LT_MESH_MAX_DIMS];
    lt_redop op = LT_REDOP_SUM;
    double avg_div = 1;
    for (int i = 0; i < M; i++) {
        kept[i] = sp[i].kind == LT_PL_PARTIAL && d[i].kind == LT_PL_PARTIAL && sp[i].op == d[i].op;
        red[i] = sp[i].kind == LT_PL_PARTIAL && !kept[i];
        dpart[i] = kept[i] ? lt_replicate() : d[i];
        if (!red[i]) continue;
        op = sp[i].op == LT_REDOP_AVG ? LT_REDOP_SUM : sp[i].op;
        if (sp[i].op == LT_REDOP_AVG) avg_div *= mesh->shape[i];
    }
    double rtol, atol;
    lt_dtype_default_tol(src->dtype, &rtol, &atol);

    /* bucket ranks by (kept coords, reduced coords) */
    int *kid = lt__malloc(sizeof(int) * (size_t)W * 3), *order = NULL, *start = NULL;
    lt_rank_layout *sl = NULL, *dl = NULL;
    lt_local *local = NULL;
    lt_tensor *logical = NULL, *contrib = NULL;
    lt_status st = kid ? LT_OK : lt__err(LT_NOMEM, "out of memory");
    int nK = 1, nR = 1;
    for (int i = 0; i < M; i++) {
        if (kept[i]) nK *= mesh->shape[i];
        if (red[i]) nR *= mesh->shape[i];
    }
    int *rid = kid ? kid + W : NULL, *primary = kid ? kid + 2 * W : NULL;
    if (!st) {
        order = lt__malloc(sizeof(int) * (size_t)W);
        start = lt__calloc((size_t)nK * (size_t)nR + 1, sizeof(int));
        if (!order || !start) st = lt__err(LT_NOMEM, "out of memory");
    }
    if (!st) st = layouts(lt_dtensor_spec(src), &sl);
    if (!st) st = layouts(&dspec, &dl);
    if (!st) st = lt_local_new(mesh, &local);
    if (st) goto done;
    for (int r = 0; r < W; r++) {
        int coord[LT_MESH_MAX_DIMS], k = 0, q = 0;
        lt_mesh_coord(mesh, r, coord);
        primary[r] = 1;
        for (int i = 0; i < M; i++) {
            if (kept[i]) k = k * mesh->shape[i] + coord[i];
            if (red[i]) q = q * mesh->shape[i] + coord[i];
            if (sp[i].kind == LT_PL_REPLICATE && coord[i] != 0) primary[r] = 0;
        }
        kid[r] = k;
        rid[r] = q;
        start[k * nR + q + 1]++;
    }
    for (int b = 0; b < nK * nR; b++) start[b + 1] += start[b];
    {
        int *fill = lt__malloc(sizeof(int) * (size_t)(nK * nR));
        if (!fill) {
            st = lt__err(LT_NOMEM, "out of memory");
            goto done;
        }
        memcpy(fill, start, sizeof(int) * (size_t)(nK * nR));
        for (int r = 0; r < W; r++) order[fill[kid[r] * nR + rid[r]]++] = r;
        lt__free(fill);
    }

    for (int k = 0; k < nK && !st; k++) {
        /* 1-2: the slice's logical tensor */
        for (int q = 0; q < nR && !st; q++) {
            int b = k * nR + q;
            st = lt_tensor_new(src->dtype, ndim, src->shape, &contrib);
            for (int x = start[b]; x < start[b + 1] && !st; x++) {
                int r = order[x];
                if (primary[r]) st = lt_scatter_index_sets(contrib, sl[r].idx, src->local->shards[r], 0, op);
            }
            for (int x = start[b]; x < start[b + 1] && !st; x++) {
                int r = order[x];
                if (primary[r]) continue;
                lt_tensor *g = NULL;
                lt_compare_result res;
                st = lt_gather_index_sets(contrib, sl[r].idx, sl[r].local_shape, &g);
                if (!st) st = lt_compare(src->local->shards[r], g, rtol, atol, &res);
                lt_tensor_free(g);
                if (!st && !res.equal)
                    st = element_mismatch(rep, -1, "the source's replicas disagree: ", r, ndim, &res, &sl[r]);
            }
            if (st) break;
            if (!logical) {
                logical = contrib;
                contrib = NULL;
            } else {
                st = lt_accumulate(logical, contrib, op);
                lt_tensor_free(contrib);
                contrib = NULL;
            }
        }
        if (!st && avg_div != 1) {
            int64_t n = lt_numel(logical);
            for (int64_t j = 0; j < n; j++) lt_set_flat(logical, j, lt_get_flat(logical, j) / avg_div);
        }
        /* 3: re-distribute with the destination placements */
        for (int q = 0; q < nR && !st; q++) {
            int b = k * nR + q;
            for (int x = start[b]; x < start[b + 1] && !st; x++) {
                int r = order[x];
                st = lt_gather_index_sets(logical, dl[r].idx, dl[r].local_shape, &local->shards[r]);
                if (!st) st = lt__partition(local->shards[r], mesh, dpart);
            }
        }
        lt_tensor_free(logical);
        logical = NULL;
    }
    if (!st) {
        st = lt__dtensor_wrap(local, &dspec, out);
        local = NULL;
    }
done:
    lt_tensor_free(contrib);
    lt_tensor_free(logical);
    lt_local_free(local);
    free_layouts(sl, W);
    free_layouts(dl, W);
    lt__free(kid);
    lt__free(order);
    lt__free(start);
    return st;
}

lt_status lt_verify_reshard(const lt_dtensor *src, const lt_dtensor *actual, int step,
                            lt_verify_report *rep) {
    const lt_mesh *mesh = lt_dtensor_mesh(src);
    report_init(rep, src->ndim);
    if (!lt_mesh_equal(mesh, lt_dtensor_mesh(actual)) || src->ndim != actual->ndim ||
        src->dtype != actual->dtype)
        return lt__err(LT_INVALID, "verify: the two DTensors differ in mesh, rank or dtype");
    for (int d = 0; d < src->ndim; d++)
        if (src->shape[d] != actual->shape[d])
            return lt__err(LT_INVALID, "verify: global shapes differ in dim %d", d);
    lt_dtensor *exp = NULL;
    LT_TRY(lt_reshard_direct(src, actual->placements, mesh->ndim, &exp, rep));
    double rtol, atol;
    lt_dtype_default_tol(src->dtype, &rtol, &atol);
    lt_status st = LT_OK;
    for (int r = 0; r < mesh->world && !st; r++) {
        const lt_tensor *a = actual->local->shards[r], *e = exp->local->shards[r];
        if (!a) continue;   /* absent: nothing held here to check */
        if (!lt_same_shape(a, e)) {
            char sa[128], se[128];
            lt_shape_str(a->ndim, a->shape, sa, sizeof sa);
            lt_shape_str(e->ndim, e->shape, se, sizeof se);
            st = lt__err(LT_MISMATCH, "rank %d holds a shard of shape %s but the direct reshard gives %s", r, sa, se);
            if (rep) {
                rep->ok = 0;
                rep->step = step;
                rep->rank = r;
                rep->shape_mismatch = 1;
                memcpy(rep->expected_shape, e->shape, sizeof(int64_t) * (size_t)e->ndim);
                memcpy(rep->actual_shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
                snprintf(rep->message, sizeof rep->message, "%s", lt_errmsg());
            }
            break;
        }
        lt_compare_result res;
        st = lt_compare(a, e, rtol, atol, &res);
        if (st || res.equal) continue;
        lt_rank_layout l;
        st = lt_spec_layout_rank(lt_dtensor_spec(actual), r, &l);
        if (!st) st = element_mismatch(rep, step, "", r, src->ndim, &res, &l);
        lt_rank_layout_free(&l);
    }
    lt_dtensor_free(exp);
    return st;
}
