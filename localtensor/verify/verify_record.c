/* localtensor/verify/verify_record.c — what the redistribute verifier keeps apart
 * from its checks (localtensor/verify/verify.c): the record of verified shards
 * (where their bytes lie and which box of the global tensor they hold)
 * that lt_redistribute passes from one step's check to the next, the
 * source's record, and the bytes a check allocates at most, for the
 * executor's up-front memory check (localtensor/verify/verify_impl.h).
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/memlimit_impl.h"
#include "kernels/pool_impl.h"
#include "kernels/status_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/spec_impl.h"
#include "localtensor/verify/verify_impl.h"

void lt__verified_free(lt__verified *v) {
    if (!v) return;
    lt__free(v->e);
    lt__free(v);
}

/* A layout's lists are increasing, so a list is a run exactly when the
 * layout says it is contiguous (localtensor/layout.h): no need to read it. */
int lt__verify_box_of(const lt_rank_layout *L, int nd, const int64_t *gshape, int64_t *goff,
                      int64_t *n) {
    for (int d = 0; d < nd; d++) {
        n[d] = L->local_shape[d];
        goff[d] = 0;
        if (!L->idx[d]) {
            if (n[d] != gshape[d]) return 0;
            continue;
        }
        if (n[d] == 0) continue;
        goff[d] = L->idx[d][0];
        if (!L->contiguous[d]) return 0;
    }
    return 1;
}

int lt__vshard_cmp(const void *x, const void *y) {
    uintptr_t a = ((const lt__vshard *)x)->storage, b = ((const lt__vshard *)y)->storage;
    return a < b ? -1 : a > b;
}

lt_status lt__verified_source(const lt_dtensor *src, lt__verified **out) {
    *out = NULL;
    const lt_mesh *mesh = lt_dtensor_mesh(src);
    lt__verified *r = lt__calloc(1, sizeof *r);
    if (!r) return lt__err(LT_NOMEM, "verify: out of memory for the record of the source");
    int exact = lt_local_count(src->local) == mesh->world;
    for (int i = 0; i < mesh->ndim; i++)
        if (src->placements[i].kind == LT_PL_PARTIAL) exact = 0;
    for (int d = 0; d < src->ndim; d++)
        if (src->shape[d] == 0) exact = 0;   /* nothing to hold */
    if (exact) r->e = lt__malloc(sizeof *r->e * (size_t)mesh->world);
    if (exact && !r->e) {
        lt__verified_free(r);
        return lt__err(LT_NOMEM, "verify: out of memory for the record of the source");
    }
    for (int k = 0; k < (exact ? mesh->world : 0); k++) {
        if (lt__replica_class(mesh, src->placements, k) != k)
            continue; /* not the one its replicas are checked against */
        const lt_tensor *t = src->local->shards[k];
        if (t->placeholder) continue;
        lt_rank_layout L;
        lt_status st = lt_spec_layout_rank(lt_dtensor_spec(src), k, &L);
        if (st) {
            lt__verified_free(r);
            return st;
        }
        lt__vshard *e = &r->e[r->n];
        if (L.lists && lt__verify_box_of(&L, src->ndim, src->shape, e->goff, e->n)) {
            e->storage = (uintptr_t)t->storage;
            e->offset = t->offset;
            memcpy(e->strides, t->strides, sizeof t->strides);
            r->n++;
        }
        lt_rank_layout_free(&L);
    }
    if (r->n > 1) qsort(r->e, (size_t)r->n, sizeof *r->e, lt__vshard_cmp);
    *out = r;
    return LT_OK;
}

/* Bytes of the largest shard of spec s into *out. */
static lt_status max_shard_bytes(const lt_spec *s, uint64_t *out) {
    *out = 0;
    for (int r = 0; r < s->mesh->world; r++) {
        int64_t ls[LT_MAX_DIMS], n;
        LT_TRY(lt_spec_local_shape(s, r, ls, NULL));
        LT_TRY(lt__numel_checked(s->ndim, ls, lt_dtype_size(s->dtype), &n));
        if ((uint64_t)n * lt_dtype_size(s->dtype) > *out)
            *out = (uint64_t)n * lt_dtype_size(s->dtype);
    }
    return LT_OK;
}

lt_status lt__verify_bytes(const lt_spec *src, const lt_spec *dst, uint64_t *out) {
    uint64_t shard, lists = 0;
    LT_TRY(max_shard_bytes(dst, &shard));
    int empty = 0;   /* no owner tables nor index lists for an empty tensor (vctx_init_) */
    for (int d = 0; d < src->ndim; d++) empty |= src->shape[d] == 0;
    /* per dim: the owner tables (part, pos), one shard's index lists and
     * the runs (4 per index: counted for every dim, though only the last
     * has runs, which leaves room for the rows' dim's third table, seg) */
    for (int d = 0; d < src->ndim && !empty; d++)
        lists = lt__add_sat(lists, (uint64_t)src->shape[d] * 7 * sizeof(int64_t));
    /* pieces of work on the pool keep an index list and runs each */
    int w = lt__pool_width();
    for (int d = 0; d < src->ndim && w > 1 && !empty; d++)
        lists =
            lt__add_sat(lists, (uint64_t)src->shape[d] * 5 * sizeof(int64_t) * (uint64_t)(w - 1));
    lists = lt__add_sat(lists, (uint64_t)src->mesh->world * LT__VERIFY_RANK_BYTES);
    *out = lt__add_sat(2 * shard, lists);
    return LT_OK;
}
