/* tools/checkpoint/ck_explain.c — which mesh and placements lay a tensor out
 * as its checkpoint's pieces (lt__ck_explain, tools/checkpoint/checkpoint.h).
 *
 * Why it exists: a checkpoint stores pieces, not the layout that made them;
 * naming the layout ("[S(0), S(1)] on 2x4, uneven: ranks 3, 7 empty") tells a
 * reader what wrote it and makes a wrong piece stand out. The candidates are
 * tried with the library's own layout math (localtensor/layout.h, whose split
 * rule is kernels/split.c's), so the explanation is the simulator's rule, not
 * a second copy of it. A candidate explains the pieces when every rank's
 * non-empty block is a piece (for DCP, one in the rank's own file unless a
 * replica was written by another rank) and every non-empty piece is a
 * rank's block. Empty blocks may be absent: DCP writes one empty piece per
 * distinct offset.
 */
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "localtensor/layout.h"
#include "tools/checkpoint/checkpoint.h"

#define MAX_WORLD 16   /* worlds tried blind: 2..16 */
#define MAX_HINT 4096  /* largest world a DCP checkpoint's file names make tried first */
#define MAX_OPTS (2 * LT_MAX_DIMS + 1)
#define MAX_LISTED ((int64_t)1 << 22) /* largest dim a strided candidate is tried on */

/* One explanation's search: what it explains, where it writes, scratch. */
typedef struct ex_ctx {
    const lt_ckpt *ck;
    const lt_ck_tensor *t;
    char *buf;
    size_t cap;
    int *empty;    /* (MAX_HINT) 1 where a rank's block is empty */
    char *matched; /* (t->n) 1 where a piece is some rank's block */
} ex_ctx;

/* Rank r's block under (mesh, pl): 1, 0 when it is not one box, -1 out of memory. */
static int block(const lt_mesh *m, const lt_ck_tensor *t, const lt_placement *pl, int strided,
                 int r, int64_t *off, int64_t *len) {
    if (!strided) return lt_local_shape_and_offset(m, t->ndim, t->shape, pl, r, len, off) ? 0 : 1;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] > MAX_LISTED) return 0; /* index lists of that size: not tried */
    lt_rank_layout l;
    lt_status st = lt_layout_rank(m, t->ndim, t->shape, pl, r, &l);
    if (st) return st == LT_NOMEM ? -1 : 0;
    int ok = 1;
    for (int d = 0; d < t->ndim; d++) {
        off[d] = l.global_offset[d], len[d] = l.local_shape[d];
        ok &= l.contiguous[d] || !l.local_shape[d];
    }
    lt_rank_layout_free(&l);
    return ok;
}

/* 1 when (mesh, pl) lays t out as its pieces; *empty gets the empty ranks. */
static int fits(const ex_ctx *x, const lt_mesh *m, const lt_placement *pl, int strided,
                int *uneven) {
    const lt_ckpt *ck = x->ck;
    const lt_ck_tensor *t = x->t;
    int nd = t->ndim, world = m->world, *empty = x->empty;
    char *matched = x->matched;
    int64_t first[LT_MAX_DIMS] = {0};
    memset(matched, 0, (size_t)t->n);
    for (int r = 0; r < world; r++) {
        int64_t off[LT_MAX_DIMS], len[LT_MAX_DIMS];
        int b = block(m, t, pl, strided, r, off, len);
        if (b <= 0) return b;
        if (!r)
            memcpy(first, len, sizeof first);
        else if (memcmp(first, len, sizeof(int64_t) * (size_t)nd))
            *uneven = 1;
        empty[r] = !lt__numel_sat(nd, len);
        int own = -1, any = -1;
        for (int k = 0; k < t->n; k++) {
            const lt_st_entry *e = lt__ck_entry(ck, &t->p[k]);
            if (memcmp(t->p[k].off, off, sizeof(int64_t) * (size_t)nd) ||
                memcmp(e->shape, len, sizeof(int64_t) * (size_t)nd))
                continue;
            any = k;
            if (ck->frank[t->p[k].file] == r) own = k;
        }
        /* a real piece in rank r's own file must be rank r's block */
        for (int k = 0; k < t->n; k++)
            if (ck->frank[t->p[k].file] == r && k != own &&
                lt__numel_sat(nd, lt__ck_entry(ck, &t->p[k])->shape))
                return 0;
        if (empty[r]) continue;
        if (any < 0) return 0;
        matched[own >= 0 ? own : any] = 1;
    }
    for (int k = 0; k < t->n; k++)
        if (!matched[k] && lt__numel_sat(nd, lt__ck_entry(ck, &t->p[k])->shape)) return 0;
    return 1;
}

/* "ranks 3, 6-7 empty" from empty[world]. */
static void empty_text(const int *empty, int world, lt__sbuf *b) {
    int cnt = 0;
    for (int r = 0; r < world; r++) cnt += empty[r];
    if (!cnt) return;
    lt__sb_printf(b, ": rank%s ", cnt > 1 ? "s" : "");
    for (int r = 0, sep = 0; r < world; r++) {
        if (!empty[r]) continue;
        int s = r;
        while (r + 1 < world && empty[r + 1]) r++;
        lt__sb_printf(b, sep++ ? ", %d" : "%d", s);
        if (r > s) lt__sb_printf(b, "-%d", r);
    }
    lt__sb_printf(b, " empty");
}

/* Tries every placement list of options over mesh m (depth-first). */
static int search(const ex_ctx *x, const lt_mesh *m, lt_placement *pl, int i) {
    const lt_ck_tensor *t = x->t;
    if (i == m->ndim) {
        lt_placement norm[LT_MESH_MAX_DIMS];
        if (lt_placements_check(m, t->ndim, pl, m->ndim, norm)) return 0;
        int strided = 0, uneven = 0;
        for (int d = 0; d < m->ndim; d++) strided |= pl[d].kind == LT_PL_STRIDED;
        int f = fits(x, m, norm, strided, &uneven);
        if (f <= 0) return f;
        char ps[128], ms[64];
        lt_placements_format(norm, m->ndim, ps, sizeof ps);
        lt__sbuf b = {x->buf, x->cap, 0};
        lt__sb_printf(&b, "%s on %s%s", ps, lt_mesh_format(m, ms, sizeof ms),
                      uneven ? ", uneven" : "");
        empty_text(x->empty, m->world, &b);
        lt__sb_finish(&b);
        return 1;
    }
    lt_placement opts[MAX_OPTS];
    int n = 0;
    for (int d = 0; d < t->ndim; d++) opts[n++] = lt_shard(d);
    for (int d = 0; d < t->ndim && i + 1 < m->ndim; d++) opts[n++] = lt_strided(d, m->shape[i + 1]);
    opts[n++] = lt_replicate();
    for (int k = 0; k < n; k++) {
        pl[i] = opts[k];
        int f = search(x, m, pl, i + 1);
        if (f) return f;
    }
    return 0;
}

/* Meshes of `world` ranks: 1-D, then 2-D a x b, then 3-D (sizes >= 2). */
static int try_world(const ex_ctx *x, int world) {
    lt_placement pl[LT_MESH_MAX_DIMS];
    lt_mesh m;
    int sh[3] = {world, 0, 0};
    int f = 0;
    if (!lt_mesh_init(&m, 1, sh, NULL) && (f = search(x, &m, pl, 0))) return f;
    for (int a = 2; a * 2 <= world; a++) {
        if (world % a) continue;
        int s2[2] = {a, world / a};
        if (!lt_mesh_init(&m, 2, s2, NULL) && (f = search(x, &m, pl, 0))) return f;
    }
    for (int a = 2; a * 4 <= world; a++)
        for (int b = 2; a * b * 2 <= world; b++) {
            if (world % (a * b)) continue;
            int s3[3] = {a, b, world / (a * b)};
            if (!lt_mesh_init(&m, 3, s3, NULL) && (f = search(x, &m, pl, 0)))
                return f;
        }
    return 0;
}

int lt__ck_explain(const lt_ckpt *ck, const lt_ck_tensor *t, char *buf, size_t cap) {
    if (cap) buf[0] = 0;
    if (t->n == 1) {
        const lt_st_entry *e = lt__ck_entry(ck, &t->p[0]);
        if (memcmp(e->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim)) return 0;
        snprintf(buf, cap, "whole tensor, one piece");
        return 1;
    }
    if (!t->ndim) return 0;
    ex_ctx x = {ck, t, buf, cap, lt__calloc(MAX_HINT, sizeof(int)), lt__malloc((size_t)t->n)};
    int found = x.empty && x.matched ? 0 : -1;
    if (!found && ck->world_hint >= 2 && ck->world_hint <= MAX_HINT)
        found = try_world(&x, ck->world_hint);
    for (int w = 2; w <= MAX_WORLD && !found; w++)
        if (w != ck->world_hint) found = try_world(&x, w);
    lt__free(x.empty), lt__free(x.matched);
    lt__err_clear();
    if (found < 0) {
        if (cap) buf[0] = 0;
        return lt__err(LT_NOMEM, "out of memory explaining the layout of '%s'", t->name), -1;
    }
    return found;
}
