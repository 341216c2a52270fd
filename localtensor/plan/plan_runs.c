/* localtensor/plan/plan_runs.c — index sets as runs, and the layouts of placement
 * lists in that form, for the min-cost planner (localtensor/plan/plan_impl.h).
 *
 * The planner compares what ranks hold thousands of times per plan, for
 * tensors of any size, so a rank's indices along a dim are kept as sorted
 * runs (a Shard piece is one run, a StridedShard a few) rather than as index
 * lists. The splitting rules are the ones of layout math
 * (localtensor/layout.c, kernels/split.c); the redistribute tests check
 * every planned state against layout math and the direct reshard.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "localtensor/plan/plan_impl.h"

/* ---- arena ------------------------------------------------------------------------- */

struct lt__ablk {
    lt__ablk *next;
    size_t cap, used;
    lt__run v[];
};

#define ABLK_MIN 4096

lt__run *lt__arena_room(lt__arena *a, size_t n) {
    lt__ablk *b = a->cur;
    if (b && b->cap - b->used >= n) return b->v + b->used;
    /* the next (spare) block when it is big enough, else a new one after cur */
    if (b && b->next && b->next->cap >= n) {
        a->cur = b->next;
        a->cur->used = 0;
        return a->cur->v;
    }
    size_t cap = n > ABLK_MIN ? n : ABLK_MIN;
    if (cap > (SIZE_MAX - sizeof(lt__ablk)) / sizeof(lt__run)) return NULL;
    lt__ablk *nb = lt__malloc(sizeof(lt__ablk) + cap * sizeof(lt__run));
    if (!nb) return NULL;
    nb->cap = cap;
    nb->used = 0;
    if (!b) {
        nb->next = NULL;
        a->first = nb;
    } else {
        nb->next = b->next;
        b->next = nb;
    }
    a->cur = nb;
    return nb->v;
}

void lt__arena_take(lt__arena *a, size_t k) { a->cur->used += k; }

lt__amark lt__arena_mark(const lt__arena *a) {
    lt__amark m = {a->cur, a->cur ? a->cur->used : 0};
    return m;
}

void lt__arena_reset(lt__arena *a, lt__amark m) {
    if (!m.blk) {
        a->cur = a->first;
        if (a->cur) a->cur->used = 0;
        return;
    }
    a->cur = m.blk;
    m.blk->used = m.used;
}

void lt__arena_free(lt__arena *a) {
    lt__ablk *b = a->first;
    while (b) {
        lt__ablk *nx = b->next;
        lt__free(b);
        b = nx;
    }
    a->first = a->cur = NULL;
}

/* ---- lists ---------------------------------------------------------------------------- */

int lt__list_eq(const lt__list *a, const lt__list *b) {
    if (a->len != b->len || a->nr != b->nr) return 0;
    if (a->r == b->r) return 1;
    for (int64_t i = 0; i < a->nr; i++)
        if (a->r[i].lo != b->r[i].lo || a->r[i].n != b->r[i].n) return 0;
    return 1;
}

int lt__list_subset(const lt__list *a, const lt__list *b) {
    if (a->len > b->len) return 0;
    int64_t j = 0;
    for (int64_t i = 0; i < a->nr; i++) {
        const lt__run *x = &a->r[i];
        while (j < b->nr && b->r[j].lo + b->r[j].n <= x->lo) j++;
        if (j == b->nr || b->r[j].lo > x->lo || x->lo + x->n > b->r[j].lo + b->r[j].n) return 0;
    }
    return 1;
}

int64_t lt__list_common(const lt__list *a, const lt__list *b) {
    int64_t i = 0, j = 0, n = 0;
    while (i < a->nr && j < b->nr) {
        const lt__run *x = &a->r[i], *y = &b->r[j];
        int64_t lo = x->lo > y->lo ? x->lo : y->lo;
        int64_t xe = x->lo + x->n, ye = y->lo + y->n, hi = xe < ye ? xe : ye;
        if (hi > lo) n += hi - lo;
        if (xe < ye) i++;
        else j++;
    }
    return n;
}

/* Appends run (lo, n) to o[*k], merging with the previous run when they touch. */
static void emit(lt__run *o, int64_t *k, int64_t lo, int64_t n) {
    if (n <= 0) return;
    if (*k && o[*k - 1].lo + o[*k - 1].n == lo) {
        o[*k - 1].n += n;
        return;
    }
    o[*k].lo = lo;
    o[*k].n = n;
    (*k)++;
}

/* Appends positions pos..pos+cnt-1 of l to o[*k]. */
static void emit_sub(const lt__list *l, int64_t pos, int64_t cnt, lt__run *o, int64_t *k) {
    int64_t i = 0;
    while (cnt > 0 && i < l->nr && pos >= l->r[i].n) pos -= l->r[i++].n;
    for (; cnt > 0 && i < l->nr; i++, pos = 0) {
        int64_t take = l->r[i].n - pos < cnt ? l->r[i].n - pos : cnt;
        emit(o, k, l->r[i].lo + pos, take);
        cnt -= take;
    }
}

int lt__list_sub(lt__arena *a, const lt__list *l, int64_t pos, int64_t cnt, lt__list *out) {
    if (pos == 0 && cnt == l->len) {
        *out = *l;
        return 1;
    }
    out->len = cnt;
    out->nr = 0;
    out->r = NULL;
    if (cnt <= 0) {
        out->len = 0;
        return 1;
    }
    lt__run *o = lt__arena_room(a, (size_t)l->nr);
    if (!o) return -1;
    emit_sub(l, pos, cnt, o, &out->nr);
    lt__arena_take(a, (size_t)out->nr);
    out->r = o;
    return 1;
}

static int run_cmp(const void *x, const void *y) {
    const lt__run *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Collects the runs of ls[0..k) (each list sorted) into the arena,
 * sorted; *n runs at *o. A merge of the k lists when k is small (the
 * members of a group), else a sort. */
static int gather_sorted(lt__arena *a, const lt__list *const *ls, int k, lt__run **o, size_t *n) {
    size_t tot = 0;
    for (int i = 0; i < k; i++) tot += (size_t)ls[i]->nr;
    *o = lt__arena_room(a, tot ? tot : 1);
    if (!*o) return -1;
    size_t w = 0;
    int sorted = 1;
    for (int i = 0; i < k && sorted; i++)
        for (int64_t j = 0; j < ls[i]->nr; j++) {
            if (w && ls[i]->r[j].lo < (*o)[w - 1].lo) {
                sorted = 0;
                break;
            }
            (*o)[w++] = ls[i]->r[j];
        }
    if (!sorted && k <= 16) {
        int64_t pos[16] = {0};
        for (w = 0; w < tot; w++) {
            int best = -1;
            for (int i = 0; i < k; i++)
                if (pos[i] < ls[i]->nr &&
                    (best < 0 || ls[i]->r[pos[i]].lo < ls[best]->r[pos[best]].lo))
                    best = i;
            (*o)[w] = ls[best]->r[pos[best]++];
        }
    } else if (!sorted) {
        w = 0;
        for (int i = 0; i < k; i++)
            for (int64_t j = 0; j < ls[i]->nr; j++) (*o)[w++] = ls[i]->r[j];
        qsort(*o, w, sizeof(lt__run), run_cmp);
    }
    *n = w;
    return 1;
}

int lt__list_concat(lt__arena *a, const lt__list *const *ls, int k, lt__list *out) {
    int nonempty = 0, one = 0;
    for (int i = 0; i < k; i++)
        if (ls[i]->len) {
            nonempty++;
            one = i;
        }
    if (nonempty <= 1) {
        if (nonempty) *out = *ls[one];
        else *out = (lt__list){NULL, 0, 0};
        return 1;
    }
    lt__run *o;
    size_t n;
    if (gather_sorted(a, ls, k, &o, &n) < 0) return -1;
    int64_t w = 0, len = 0;
    for (size_t i = 0; i < n; i++) {
        if (w && o[w - 1].lo + o[w - 1].n > o[i].lo) return 0;   /* an index twice */
        lt__run x = o[i];
        emit(o, &w, x.lo, x.n);
        len += x.n;
    }
    lt__arena_take(a, (size_t)w);
    out->r = o;
    out->nr = w;
    out->len = len;
    return 1;
}

int lt__list_union(lt__arena *a, const lt__list *const *ls, int k, lt__list *out) {
    int first = -1, same = 1;
    for (int i = 0; i < k; i++) {
        if (!ls[i]->len) continue;
        if (first < 0) first = i;
        else if (!lt__list_eq(ls[i], ls[first])) same = 0;
    }
    if (first < 0) {
        *out = (lt__list){NULL, 0, 0};
        return 1;
    }
    if (same) {
        *out = *ls[first];
        return 1;
    }
    lt__run *o;
    size_t n;
    if (gather_sorted(a, ls, k, &o, &n) < 0) return -1;
    int64_t w = 0, len = 0;
    for (size_t i = 0; i < n; i++) {
        lt__run x = o[i];
        if (w && o[w - 1].lo + o[w - 1].n >= x.lo) {
            int64_t end = x.lo + x.n, pend = o[w - 1].lo + o[w - 1].n;
            if (end > pend) {
                len += end - pend;
                o[w - 1].n = end - o[w - 1].lo;
            }
            continue;
        }
        o[w++] = x;
        len += x.n;
    }
    lt__arena_take(a, (size_t)w);
    out->r = o;
    out->nr = w;
    out->len = len;
    return 1;
}

/* ---- layouts ------------------------------------------------------------------------------ */

void lt__geo_init(lt__geo *g, const lt_mesh *mesh, int ndim, const int64_t *shape) {
    memset(g, 0, sizeof *g);
    g->mesh = mesh;
    g->M = mesh->ndim;
    g->ndim = ndim;
    g->W = mesh->world;
    g->shape = shape;
    g->T[0] = 1;
    for (int j = 0; j < g->M; j++) g->T[j + 1] = g->T[j] * mesh->shape[j];
    g->off[0] = g->toff[0] = 0;
    for (int j = 0; j <= g->M; j++) {
        g->off[j + 1] = g->off[j] + (size_t)g->T[j] * (size_t)ndim;
        g->toff[j + 1] = g->toff[j] + (size_t)g->T[j];
    }
}

int64_t lt__block_numel(const lt__list *b, int ndim) {
    for (int d = 0; d < ndim; d++)
        if (b[d].len == 0) return 0;   /* before multiplying: huge dims beside an empty one */
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        if (lt__mul_i64(n, b[d].len, &n)) return INT64_MAX;
    return n;
}

int64_t lt__strided_len(int64_t n, int sf, int m, int c) {
    if (sf < 1 || m < 1) return 0;
    if (sf >= n) return c ? 0 : n;
    int64_t len = 0, pc = n / sf + (n % sf != 0);
    for (int64_t ps = 0; ps < n; ps += pc) {
        int64_t plen = n - ps < pc ? n - ps : pc;
        int64_t cc = plen / m + (plen % m != 0), cs = cc * c;
        if (cs < plen) len += (plen - cs < cc ? plen : cs + cc) - cs;
    }
    return len;
}

int lt__apply(lt__arena *a, int ndim, const lt_placement *p, int m, int c, const lt__list *par,
              lt__list *out) {
    memcpy(out, par, sizeof(lt__list) * (size_t)ndim);
    if (m == 1 || !lt_placement_is_shard_like(p)) return 1;
    int d = p->dim;
    const lt__list *l = &par[d];
    if (p->kind == LT_PL_SHARD) {
        int64_t size, off;
        if (lt__split_piece_quiet(&p->rule, l->len, m, c, &size, &off)) return 0;
        return lt__list_sub(a, l, off, size, &out[d]);
    }
    /* StridedShard: chunk c (chunk rule over m) of each of the sf chunk-rule
     * pieces (kernels/split.c, lt_split_strided_positions) */
    int64_t n = l->len, sf = p->split_factor;
    if (sf < 1) return 0;
    if (sf >= n) {   /* pieces of one index each, all chunk 0's: member 0 keeps the list */
        if (c) out[d] = (lt__list){NULL, 0, 0};
        return 1;
    }
    lt__run *o = lt__arena_room(a, (size_t)(l->nr + sf));
    if (!o) return -1;
    int64_t k = 0, len = 0, pc = n / sf + (n % sf != 0);
    for (int64_t j = 0; j < sf; j++) {
        int64_t ps = pc * j;
        if (ps >= n) break;
        int64_t plen = n - ps < pc ? n - ps : pc;
        int64_t cc = plen / m + (plen % m != 0), cs = cc * c;
        if (cs >= plen) continue;
        int64_t ce = plen - cs < cc ? plen : cs + cc;
        emit_sub(l, ps + cs, ce - cs, o, &k);
        len += ce - cs;
    }
    lt__arena_take(a, (size_t)k);
    out[d].r = k ? o : NULL;
    out[d].nr = k;
    out[d].len = len;
    return 1;
}

int lt__layout_build(lt__arena *a, const lt__geo *g, const lt_placement *pl, lt__list *t) {
    lt__run *full = lt__arena_room(a, (size_t)(g->ndim ? g->ndim : 1));
    if (!full) return -1;
    int64_t k = 0;
    for (int d = 0; d < g->ndim; d++) {
        t[d].len = g->shape[d];
        t[d].nr = g->shape[d] ? 1 : 0;
        t[d].r = g->shape[d] ? &full[k] : NULL;
        if (g->shape[d]) {
            full[k].lo = 0;
            full[k].n = g->shape[d];
            k++;
        }
    }
    lt__arena_take(a, (size_t)k);
    for (int j = 0; j < g->M; j++) {
        int m = g->mesh->shape[j];
        for (int tu = 0; tu < g->T[j]; tu++) {
            const lt__list *par = t + g->off[j] + (size_t)tu * (size_t)g->ndim;
            for (int c = 0; c < m; c++) {
                int r = lt__apply(a, g->ndim, &pl[j], m, c, par,
                                  t + g->off[j + 1] +
                                      ((size_t)tu * (size_t)m + (size_t)c) * (size_t)g->ndim);
                if (r <= 0) return r;
            }
        }
    }
    return 1;
}
