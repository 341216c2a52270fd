/* tools/checkpoint/ck_verify.c — does every element of every tensor live in
 * exactly one piece? (tools/checkpoint/checkpoint.h, lt__ck_verify.)
 *
 * Overlaps are found pair by pair (the intersection box, with both files).
 * Disjoint pieces inside the global box that hold as many elements as it
 * cover it exactly; otherwise gaps are named by cutting the global box at
 * every piece boundary, per dim, and looking for cells no piece covers (each
 * cell is either inside a piece or outside it, so a cell's count is exact;
 * when that is too much work, the missing count is given). Zero-size pieces
 * take no part
 * in either; their offsets are checked on their own: inside the tensor,
 * and never the offset of a real piece (a loader that keys pieces by name
 * and offset, as DCP's does, can take one for the other).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/checkpoint/checkpoint.h"

#define MAX_WORK ((int64_t)1 << 26) /* gap search: most (cell, piece) tests */
#define MAX_NAMED 8 /* gaps / overlaps named per tensor */

static int64_t numel(int nd, const int64_t *s) { return lt__numel_sat(nd, s); }

void lt__ck_shapes(lt_ckpt *ck) {
    for (int i = 0; i < ck->nt; i++) {
        lt_ck_tensor *t = &ck->t[i];
        const lt_st_entry *e0 = lt__ck_entry(ck, &t->p[0]);
        t->dtype = e0->dtype;
        t->ndim = e0->ndim;
        int any = 0;
        /* the bounding box of the real pieces; of all of them when none is */
        for (int pass = 0; pass < 2 && !any; pass++)
            for (int k = 0; k < t->n; k++) {
                const lt_st_entry *e = lt__ck_entry(ck, &t->p[k]);
                if (e->ndim != t->ndim || (!pass && !numel(e->ndim, e->shape))) continue;
                for (int d = 0; d < t->ndim; d++) {
                    int64_t end = t->p[k].off[d] + e->shape[d];
                    t->shape[d] = !any || end > t->shape[d] ? end : t->shape[d];
                }
                any = 1;
            }
    }
}

/* Pieces of t that agree with its first piece in dtype and rank. */
static void check_kinds(lt_ckpt *ck, const lt_ck_tensor *t, int *bad) {
    const lt_st_entry *e0 = lt__ck_entry(ck, &t->p[0]);
    char n[128];
    for (int k = 1; k < t->n; k++) {
        const lt_st_entry *e = lt__ck_entry(ck, &t->p[k]);
        if (e->dtype != e0->dtype)
            lt__ck_problem(ck, "tensor '%s': dtype differs between pieces: %s in %s, %s in %s",
                           lt__echo(t->name, 60, n, sizeof n), lt__st_dtype_name(e0->dtype),
                           ck->fname[t->p[0].file], lt__st_dtype_name(e->dtype),
                           ck->fname[t->p[k].file]);
        if (e->ndim != e0->ndim) {
            lt__ck_problem(ck, "tensor '%s': rank differs between pieces: %d dims in %s, %d in %s",
                           lt__echo(t->name, 60, n, sizeof n), e0->ndim, ck->fname[t->p[0].file],
                           e->ndim, ck->fname[t->p[k].file]);
            *bad = 1;
        }
    }
}

/* Zero-size pieces: offsets inside the tensor, not a real piece's offset. */
static void check_empty(lt_ckpt *ck, const lt_ck_tensor *t) {
    char n[128], b[256];
    int nd = t->ndim;
    for (int k = 0; k < t->n; k++) {
        const lt_st_entry *e = lt__ck_entry(ck, &t->p[k]);
        if (numel(nd, e->shape)) continue;
        lt__echo(t->name, 60, n, sizeof n);
        int out = 0;
        for (int d = 0; d < nd; d++) out |= t->p[k].off[d] > t->shape[d];
        if (out) {
            lt__ck_problem(ck,
                           "tensor '%s': zero-size piece in %s has offset %s, outside the tensor's "
                           "shape",
                           n, ck->fname[t->p[k].file],
                           lt__ck_box(nd, t->p[k].off, e->shape, b, sizeof b));
            continue;
        }
        for (int j = 0; j < t->n; j++) {
            const lt_st_entry *f = lt__ck_entry(ck, &t->p[j]);
            if (!numel(nd, f->shape) ||
                memcmp(t->p[j].off, t->p[k].off, sizeof(int64_t) * (size_t)nd))
                continue;
            lt__ck_problem(
                ck,
                "tensor '%s': zero-size piece in %s has the offset of the real piece %s in "
                "%s: a loader keying pieces by (name, offset) can take one for the other "
                "(an empty piece's offset is the tensor's size along its empty dim)",
                n, ck->fname[t->p[k].file], lt__ck_box(nd, t->p[j].off, f->shape, b, sizeof b),
                ck->fname[t->p[j].file]);
            break;
        }
    }
}

/* Every pair of real pieces that share elements, by box and file. */
static int check_overlaps(lt_ckpt *ck, const lt_ck_tensor *t) {
    int nd = t->ndim, named = 0;
    char n[128], b[256], pb[256], qb[256];
    for (int i = 0; i < t->n; i++)
        for (int j = i + 1; j < t->n; j++) {
            const lt_st_entry *a = lt__ck_entry(ck, &t->p[i]), *c = lt__ck_entry(ck, &t->p[j]);
            int64_t lo[LT_MAX_DIMS], len[LT_MAX_DIMS];
            int hit = numel(nd, a->shape) && numel(nd, c->shape);
            for (int d = 0; hit && d < nd; d++) {
                int64_t x = t->p[i].off[d] > t->p[j].off[d] ? t->p[i].off[d] : t->p[j].off[d];
                int64_t ea = t->p[i].off[d] + a->shape[d], ec = t->p[j].off[d] + c->shape[d];
                int64_t y = ea < ec ? ea : ec;
                lo[d] = x, len[d] = y - x;
                hit = y > x;
            }
            if (!hit) continue;
            if (named++ == MAX_NAMED) {
                lt__ck_problem(ck, "tensor '%s': more overlaps not listed",
                               lt__echo(t->name, 60, n, sizeof n));
                return 1;
            }
            lt__ck_problem(
                ck,
                "tensor '%s': overlap %s is held twice: by the piece %s in %s and the "
                "piece %s in %s",
                lt__echo(t->name, 60, n, sizeof n), lt__ck_box(nd, lo, len, b, sizeof b),
                lt__ck_box(nd, t->p[i].off, a->shape, pb, sizeof pb), ck->fname[t->p[i].file],
                lt__ck_box(nd, t->p[j].off, c->shape, qb, sizeof qb), ck->fname[t->p[j].file]);
        }
    return named > 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The cut points of dim d: 0, the size and every real piece's ends inside. */
static int cuts(lt_ckpt *ck, const lt_ck_tensor *t, int d, int64_t *c) {
    int m = 0;
    c[m++] = 0, c[m++] = t->shape[d];
    for (int k = 0; k < t->n; k++) {
        const lt_st_entry *e = lt__ck_entry(ck, &t->p[k]);
        if (!numel(t->ndim, e->shape)) continue;
        c[m++] = t->p[k].off[d];
        c[m++] = t->p[k].off[d] + e->shape[d];
    }
    qsort(c, (size_t)m, sizeof *c, cmp_i64);
    int u = 0;
    for (int i = 0; i < m; i++)
        if (!u || c[i] != c[u - 1]) c[u++] = c[i];
    return u;
}

/* Cells of the cut grid that no real piece covers, named by box. */
static lt_status check_gaps(lt_ckpt *ck, const lt_ck_tensor *t, int overlapped) {
    int nd = t->ndim, m[LT_MAX_DIMS];
    int64_t *c[LT_MAX_DIMS] = {NULL}, cells = 1;
    lt_status st = LT_OK;
    char n[128], b[256], sb[256];
    if (!numel(nd, t->shape)) return LT_OK;
    int64_t sum = 0;
    for (int k = 0; k < t->n; k++)
        if (lt__add_i64(sum, numel(nd, lt__ck_entry(ck, &t->p[k])->shape), &sum)) sum = INT64_MAX;
    /* disjoint pieces inside the box that hold as many elements as it: exact */
    if (!overlapped && sum == numel(nd, t->shape)) return LT_OK;
    for (int d = 0; d < nd && !st; d++) {
        if (!(c[d] = lt__malloc(sizeof(int64_t) * (2 * (size_t)t->n + 2))))
            st = lt__err(LT_NOMEM, "out of memory checking a checkpoint");
        else
            m[d] = cuts(ck, t, d, c[d]), cells = lt__mul_sat(cells, m[d] - 1);
    }
    int search = lt__mul_sat(cells, t->n) <= MAX_WORK;
    if (!st && !search && !overlapped)
        lt__ck_problem(ck, "tensor '%s': the pieces hold %lld of its %lld elements (too many "
                           "pieces to name the gaps)",
                       lt__echo(t->name, 60, n, sizeof n), (long long)sum,
                       (long long)numel(nd, t->shape));
    int named = 0;
    for (int64_t cell = 0; !st && search && cell < cells; cell++) {
        int64_t lo[LT_MAX_DIMS], len[LT_MAX_DIMS], r = cell;
        for (int d = nd - 1; d >= 0; d--) {
            int64_t i = r % (m[d] - 1);
            r /= m[d] - 1;
            lo[d] = c[d][i], len[d] = c[d][i + 1] - c[d][i];
        }
        int covered = 0;
        for (int k = 0; k < t->n && !covered; k++) {
            const lt_st_entry *e = lt__ck_entry(ck, &t->p[k]);
            covered = 1;
            for (int d = 0; d < nd && covered; d++)
                covered = lo[d] >= t->p[k].off[d] && lo[d] < t->p[k].off[d] + e->shape[d];
        }
        if (covered) continue;
        if (named++ == MAX_NAMED) {
            lt__ck_problem(ck, "tensor '%s': more gaps not listed",
                           lt__echo(t->name, 60, n, sizeof n));
            break;
        }
        lt__ck_problem(ck, "tensor '%s': gap %s is in no piece (the pieces span %s)",
                       lt__echo(t->name, 60, n, sizeof n), lt__ck_box(nd, lo, len, b, sizeof b),
                       lt__ck_box(nd, (int64_t[LT_MAX_DIMS]){0}, t->shape, sb, sizeof sb));
    }
    for (int d = 0; d < nd; d++) lt__free(c[d]);
    return st;
}

lt_status lt__ck_verify(lt_ckpt *ck) {
    for (int i = 0; i < ck->nt; i++) {
        const lt_ck_tensor *t = &ck->t[i];
        int bad = 0;
        check_kinds(ck, t, &bad);
        if (bad) continue;
        check_empty(ck, t);
        int overlapped = check_overlaps(ck, t);
        LT_TRY(check_gaps(ck, t, overlapped));
    }
    return ck->nomem ? lt__err(LT_NOMEM, "out of memory listing a checkpoint's problems") : LT_OK;
}
