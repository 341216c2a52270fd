/* localtensor/local.c — LocalTensor, per-rank ints, per-rank map. */
#include "localtensor/local.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One block holds the LocalTensor and its shard array (an op makes one per
 * output: one allocation, not two); lt_local_free frees an array that is
 * not that one (a caller may have put its own) on its own. world <=
 * LT_MESH_MAX_WORLD: the size cannot overflow. */
lt_status lt_local_new(const lt_mesh *mesh, lt_local **out) {
    *out = NULL;
    size_t W = mesh->world > 0 ? (size_t)mesh->world : 0;
    lt_local *lt = lt__malloc(sizeof *lt + W * sizeof(lt_tensor *));
    if (!lt) return lt__err(LT_NOMEM, "out of memory");
    memcpy(&lt->mesh, mesh, sizeof *mesh);
    lt->shards = (lt_tensor **)(void *)(lt + 1);
    for (size_t r = 0; r < W; r++) lt->shards[r] = NULL;
    *out = lt;
    return LT_OK;
}

int lt_local_count(const lt_local *lt) {
    int n = 0;
    for (int r = 0; r < lt->mesh.world; r++) n += lt->shards[r] != NULL;
    return n;
}

int lt_local_first(const lt_local *lt) {
    for (int r = 0; r < lt->mesh.world; r++)
        if (lt->shards[r]) return r;
    return -1;
}

lt_status lt_local_from_shards(const lt_mesh *mesh, lt_tensor *const *shards, lt_local **out) {
    *out = NULL;
    int f = -1;
    for (int r = 0; r < mesh->world; r++) {
        if (!shards[r]) continue;   /* absent */
        if (f < 0) f = r;
        if (shards[r]->dtype != shards[f]->dtype)
            return lt__err(LT_DTYPE, "LocalTensor: rank %d holds %s but rank %d holds %s", r,
                           lt_dtype_name(shards[r]->dtype), f, lt_dtype_name(shards[f]->dtype));
    }
    if (f < 0) return lt__err(LT_INVALID, "LocalTensor: no rank holds a shard");
    lt_local *lt;
    LT_TRY(lt_local_new(mesh, &lt));
    for (int r = 0; r < mesh->world; r++) {
        if (!shards[r]) continue;
        lt_status st = lt_tensor_view(shards[r], &lt->shards[r]);
        if (st) {
            lt_local_free(lt);
            return st;
        }
    }
    *out = lt;
    return LT_OK;
}

void lt_local_free(lt_local *lt) {
    if (!lt) return;
    if (lt->shards)
        for (int r = 0; r < lt->mesh.world; r++) lt_tensor_free(lt->shards[r]);
    if (lt->shards != (lt_tensor **)(void *)(lt + 1)) lt__free(lt->shards);
    lt__free(lt);
}

lt_status lt_localint_new(int world, lt_localint *out) {
    out->world = world;
    out->v = lt__calloc((size_t)(world > 0 ? world : 1), sizeof(int64_t));
    if (!out->v) return lt__err(LT_NOMEM, "out of memory");
    return LT_OK;
}

void lt_localint_free(lt_localint *li) {
    if (!li) return;
    lt__free(li->v);
    li->v = NULL;
}

int lt_localint_is_const(const lt_localint *li, int64_t *value) {
    for (int r = 1; r < li->world; r++)
        if (li->v[r] != li->v[0]) return 0;
    if (value && li->world) *value = li->v[0];
    return 1;
}

int lt_localint_eq(const lt_localint *a, const lt_localint *b) {
    if (a->world != b->world) return 0;
    for (int r = 0; r < a->world; r++)
        if (a->v[r] != b->v[r]) return 0;
    return 1;
}

lt_status lt_localint_lt(const lt_localint *a, const lt_localint *b, int *result) {
    if (a->world != b->world) return lt__err(LT_INVALID, "per-rank ints of different worlds");
    int first = a->v[0] < b->v[0];
    for (int r = 1; r < a->world; r++)
        if ((a->v[r] < b->v[r]) != first)
            return lt__err(LT_INVALID,
                           "comparison of per-rank ints differs by rank (rank 0: %s, rank %d: %s)",
                           first ? "true" : "false", r, first ? "false" : "true");
    *result = first;
    return LT_OK;
}

char *lt_localint_format(const lt_localint *li, char *buf, size_t n) {
    int64_t c;
    if (lt_localint_is_const(li, &c)) {
        snprintf(buf, n, "%lld", (long long)c);
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int r = 0; r < li->world && used + 1 < n; r++) {
        int w = snprintf(buf + used, n - used, "%s%d: %lld%s", r ? ", " : "{", r,
                         (long long)li->v[r], r == li->world - 1 ? "}" : "");
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

lt_status lt_local_map(const lt_local *in, lt_rank_fn fn, void *user, lt_local **out,
                       lt_localint *ints) {
    lt_local *res = NULL;
    lt_status st;
    int world = in->mesh.world;
    if (out) *out = NULL;
    if (ints) ints->v = NULL;
    st = lt_local_new(&in->mesh, &res);
    if (st) return st;
    if (ints && (st = lt_localint_new(world, ints))) goto fail;
    int produced = -1, first = -1;
    for (int r = 0; r < world; r++) {
        if (!in->shards[r]) continue;   /* absent: stays absent */
        if (first < 0) first = r;
        int coord[LT_MESH_MAX_DIMS];
        lt_mesh_coord(&in->mesh, r, coord);
        lt_tensor *t = NULL;
        int64_t iv = 0;
        st = fn(r, coord, in->shards[r], user, &t, &iv);
        if (st) {
            lt_tensor_free(t);
            st = lt__err_ctx(st, "rank %d", r);
            goto fail;
        }
        int got = t != NULL;
        if (produced >= 0 && got != produced) {
            lt_tensor_free(t);
            st = lt__err(LT_INVALID, "per-rank map: rank %d %s a tensor but rank %d %s", r,
                         got ? "returned" : "did not return", first, produced ? "did" : "did not");
            goto fail;
        }
        produced = got;
        res->shards[r] = t;
        if (ints) ints->v[r] = iv;
    }
    if (produced == 1 && out) {
        for (int r = first + 1; r < world; r++)
            if (res->shards[r] && res->shards[r]->dtype != res->shards[first]->dtype) {
                st = lt__err(LT_DTYPE, "per-rank map: rank %d returned %s but rank %d returned %s",
                             r, lt_dtype_name(res->shards[r]->dtype), first,
                             lt_dtype_name(res->shards[first]->dtype));
                goto fail;
            }
        *out = res;
    } else {
        lt_local_free(res);
    }
    return LT_OK;
fail:
    lt_local_free(res);
    if (ints) lt_localint_free(ints);
    return st;
}

lt_status lt_local_check_equal(const lt_local *lt, const int *ranks, int n) {
    int i0 = 0;   /* the first present listed rank: the others are compared with it */
    while (i0 < n && !lt->shards[ranks[i0]]) i0++;
    ranks += i0;
    n -= i0;
    for (int i = 1; i < n; i++) {
        const lt_tensor *a = lt->shards[ranks[0]], *b = lt->shards[ranks[i]];
        char sa[96], sb[96];
        if (!b) continue;   /* absent */
        if (!lt_same_shape(a, b))
            return lt__err(LT_MISMATCH, "ranks %d and %d differ in shape: %s vs %s", ranks[0],
                           ranks[i], lt_shape_format(a->ndim, a->shape, sa, sizeof sa),
                           lt_shape_format(b->ndim, b->shape, sb, sizeof sb));
        lt_compare_result cr;
        LT_TRY(lt_compare(b, a, 0, 0, &cr));
        if (!cr.equal) {
            char idx[160];
            lt_shape_format(a->ndim, cr.first_idx, idx, sizeof idx);
            /* lt_shape_format prints "(i, j)"; show it as an index "[i, j]" */
            idx[0] = '[';
            size_t L = strlen(idx);
            if (L) idx[L - 1] = ']';
            return lt__err(LT_MISMATCH,
                           "ranks %d and %d differ at index %s: rank %d has %g, rank %d has %g",
                           ranks[0], ranks[i], idx, ranks[0], cr.expected, ranks[i], cr.actual);
        }
    }
    return LT_OK;
}
