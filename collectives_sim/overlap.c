/* collectives_sim/overlap.c — which preallocated outputs of a collective
 * overlap an input they must not (collectives_sim/overlap_impl.h): the
 * byte range of every tensor, sorted, then scanned pairwise where ranges
 * meet. Kept apart from collectives.c, which calls it in every wrapper
 * that was given preallocated outputs.
 */
#include "collectives_sim/overlap_impl.h"

#include <stdlib.h>

#include "localtensor/kernels/dtype.h"

/* Adds t's byte range [lo, hi) (nothing when it has no elements). Computed
 * from the fields directly: this runs for every tensor of every call that
 * has a preallocated output. */
void lt__ival_add(lt__ival *iv, size_t *n, const lt_tensor *t, int rank, int is_out) {
    if (!t) return;
    int64_t a = 0, b = 0, expect = 1;
    int contig = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        int64_t sz = t->shape[i], st = t->strides[i];
        if (sz == 0) return;
        int64_t span = (sz - 1) * st;
        if (span < 0) a += span; else b += span;
        if (sz != 1) {
            if (st != expect) contig = 0;
            expect *= sz;
        }
    }
    int64_t es = (int64_t)lt_dtype_size(t->dtype);
    uintptr_t base = (uintptr_t)lt_data(t);
    lt__ival *v = &iv[(*n)++];
    v->lo = base - (uintptr_t)(-a * es);
    v->hi = base + (uintptr_t)((b + 1) * es);
    v->rank = rank;
    v->is_out = is_out;
    v->contig = contig;
}

static int iv_cmp(const void *a, const void *b) {
    const lt__ival *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

int lt__ival_overlaps(lt__ival *iv, size_t n, int self_alias_ok, int *need_tmp, int *ntmp, int *ra,
                      int *rb) {
    if (n <= 64) { /* inputs first, usually in allocation order: nearly sorted */
        for (size_t i = 1; i < n; i++) {
            if (iv[i - 1].lo <= iv[i].lo) continue;
            lt__ival v = iv[i];
            size_t j = i;
            for (; j > 0 && iv[j - 1].lo > v.lo; j--) iv[j] = iv[j - 1];
            iv[j] = v;
        }
    } else {
        qsort(iv, n, sizeof *iv, iv_cmp);
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n && iv[j].lo < iv[i].hi; j++) {
            const lt__ival *a = &iv[i], *b = &iv[j];
            if (!a->is_out && !b->is_out) continue;
            if (a->is_out && b->is_out) {
                *ra = a->rank < b->rank ? a->rank : b->rank;
                *rb = a->rank < b->rank ? b->rank : a->rank;
                return 1;
            }
            const lt__ival *o = a->is_out ? a : b, *x = a->is_out ? b : a;
            if (self_alias_ok && o->rank == x->rank && o->lo == x->lo && o->hi == x->hi &&
                x->contig)
                continue; /* in place on its own rank: the engine reads before it writes */
            if (!need_tmp[o->rank]) (*ntmp)++;
            need_tmp[o->rank] = 1;
        }
    }
    return 0;
}
