/* tools/checkpoint/ck_reshard.c — a checkpoint resharded onto a mesh and
 * placements: the read plan, the written target, and the proof that it
 * holds the source's elements (lt__ck_reshard, tools/checkpoint/checkpoint.h).
 *
 * Why it exists: loading on another layout is where checkpoints go wrong;
 * the plan says which bytes of which file each target rank reads, and the
 * copy is then checked element by element. Everything streams: elements move
 * as runs (the longest stretch contiguous in both pieces), through one
 * LT_CK_BUF buffer (two when comparing), so memory does not grow with the
 * checkpoint; the target's blocks come from the library's layout math.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "localtensor/layout.h"
#include "localtensor/ragged.h"
#include "tools/checkpoint/checkpoint.h"
#include "tools/render/json_alloc.h"

/* One run: n bytes at byte s of the source entry and byte d of the target's. */
typedef lt_status (*run_fn)(void *ctx, uint64_t s, uint64_t d, uint64_t n);

/* The intersection of two boxes into lo/len; 1 when it holds elements. */
static int intersect(int nd, const int64_t *ao, const int64_t *al, const int64_t *bo,
                     const int64_t *bl, int64_t *lo, int64_t *len) {
    for (int d = 0; d < nd; d++) {
        int64_t x = ao[d] > bo[d] ? ao[d] : bo[d];
        int64_t y = ao[d] + al[d] < bo[d] + bl[d] ? ao[d] + al[d] : bo[d] + bl[d];
        if (y <= x) return 0;
        lo[d] = x, len[d] = y - x;
    }
    return 1;
}

/* Calls fn for every run of box (lo, len), which lies in the source piece
 * (so, ss) and the target piece (dof, ds), both row-major, es bytes each. */
static lt_status for_runs(int nd, const int64_t *lo, const int64_t *len, const int64_t *so,
                          const int64_t *ss, const int64_t *dof, const int64_t *ds, size_t es,
                          run_fn fn, void *ctx) {
    if (!nd) return fn(ctx, 0, 0, es);
    int j = nd - 1;
    int64_t run = len[j], sst[LT_MAX_DIMS], dst[LT_MAX_DIMS], idx[LT_MAX_DIMS] = {0};
    while (j > 0 && len[j] == ss[j] && len[j] == ds[j]) run *= len[--j];
    sst[nd - 1] = dst[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--)
        sst[d] = sst[d + 1] * ss[d + 1], dst[d] = dst[d + 1] * ds[d + 1];
    for (;;) {
        int64_t s = 0, t = 0;
        for (int d = 0; d < nd; d++) {
            int64_t g = lo[d] + (d < j ? idx[d] : 0);
            s += (g - so[d]) * sst[d], t += (g - dof[d]) * dst[d];
        }
        LT_TRY(fn(ctx, (uint64_t)s * es, (uint64_t)t * es, (uint64_t)run * es));
        int d = j - 1;
        while (d >= 0 && ++idx[d] == len[d]) idx[d--] = 0;
        if (d < 0) return LT_OK;
    }
}

/* ---- the plan ---- */

typedef struct plan_stats {
    uint64_t runs, bytes, first, last;
} plan_stats;

static lt_status count_run(void *ctx, uint64_t s, uint64_t d, uint64_t n) {
    plan_stats *p = ctx;
    (void)d;
    if (!p->runs || s < p->first) p->first = s;
    if (s + n > p->last) p->last = s + n;
    p->runs++, p->bytes += n;
    return LT_OK;
}

lt_status lt__ck_target_pl(const lt_mesh *m, const lt_ck_tensor *t, const lt_placement *pl,
                           lt_placement *out) {
    lt_ragged_view v;
    LT_TRY(lt_ragged_view_of(m, t->ndim, t->shape, pl, &v));
    if (v.mesh_dim >= 0 && v.k > 1)
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: RaggedShard with k > 1 in checkpoints (mesh dim "
                            "%d flattens dims 0..%d: a block is a run of flattened rows, not "
                            "one box)",
                            v.mesh_dim, v.k - 1);
    memcpy(out, v.pl, sizeof(lt_placement) * (size_t)m->ndim);
    return LT_OK;
}

/* Checks the target against every tensor: placements that apply. */
static lt_status check_target(const lt_ckpt *ck, const lt_mesh *m, const lt_placement *pl, int np,
                              lt_placement *norm) {
    for (int i = 0; i < np; i++) {
        if (pl[i].kind == LT_PL_PARTIAL)
            return lt__err(LT_INVALID,
                           "--placements: Partial on mesh dim %d: a checkpoint holds values, "
                           "not partial sums (reduce before saving)",
                           i);
        if (pl[i].kind == LT_PL_STRIDED)
            return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                                "not supported yet: a _StridedShard target "
                                "(its blocks are not one box each)");
    }
    for (int i = 0; i < ck->nt; i++) {
        lt_placement tp[LT_MESH_MAX_DIMS];
        lt_status st = lt_placements_check(m, ck->t[i].ndim, pl, np, norm);
        if (!st) st = lt__ck_target_pl(m, &ck->t[i], norm, tp);
        if (!st) st = lt_layout_check(m, ck->t[i].ndim, ck->t[i].shape, tp);
        if (st) return lt__err_ctx(st, "tensor '%s'", ck->t[i].name);
    }
    return LT_OK;
}

/* Rank r's reads of tensor t: one line per source piece it touches. */
static lt_status plan_tensor(const lt_ckpt *ck, const lt_ck_tensor *t, const int64_t *off,
                             const int64_t *len, FILE *out, uint64_t *bytes, char *opened) {
    char b[256];
    for (int k = 0; k < t->n; k++) {
        const lt_st_entry *e = lt__ck_entry(ck, &t->p[k]);
        int64_t lo[LT_MAX_DIMS], ln[LT_MAX_DIMS];
        if (!intersect(t->ndim, t->p[k].off, e->shape, off, len, lo, ln)) continue;
        plan_stats ps = {0, 0, 0, 0};
        LT_TRY(for_runs(t->ndim, lo, ln, t->p[k].off, e->shape, off, len, lt_dtype_size(t->dtype),
                        count_run, &ps));
        uint64_t base = ck->files[t->p[k].file]->data_start + e->begin;
        char ne[128], fe[128];
        fprintf(out, "    %s %s <- %s bytes %llu..%llu: %llu B in %llu run%s\n",
                lt__echo(t->name, 60, ne, sizeof ne), lt__ck_box(t->ndim, lo, ln, b, sizeof b),
                lt__echo(ck->fname[t->p[k].file], 60, fe, sizeof fe),
                (unsigned long long)(base + ps.first), (unsigned long long)(base + ps.last),
                (unsigned long long)ps.bytes, (unsigned long long)ps.runs, ps.runs == 1 ? "" : "s");
        *bytes += ps.bytes;
        opened[t->p[k].file] = 1;
    }
    return LT_OK;
}

static lt_status print_plan(const lt_ckpt *ck, const lt_mesh *m, const lt_placement *pl,
                            FILE *out) {
    char ms[64], ps[160];
    lt_placements_format(pl, m->ndim, ps, sizeof ps);
    fprintf(out, "read plan: %d tensor%s onto %s on %s\n", ck->nt, ck->nt == 1 ? "" : "s", ps,
            lt_mesh_format(m, ms, sizeof ms));
    char *opened = lt__calloc((size_t)ck->nfiles, 1);
    if (!opened) return lt__err(LT_NOMEM, "out of memory planning a reshard");
    uint64_t total = 0, opens = 0;
    lt_status st = LT_OK;
    for (int r = 0; r < m->world && !st; r++) {
        uint64_t bytes = 0;
        memset(opened, 0, (size_t)ck->nfiles);
        fprintf(out, "  rank %d:\n", r);
        for (int i = 0; i < ck->nt && !st; i++) {
            int64_t off[LT_MAX_DIMS], len[LT_MAX_DIMS];
            lt_placement tp[LT_MESH_MAX_DIMS];
            st = lt__ck_target_pl(m, &ck->t[i], pl, tp);
            if (!st)
                st = lt_local_shape_and_offset(m, ck->t[i].ndim, ck->t[i].shape, tp, r, len, off);
            if (!st) st = plan_tensor(ck, &ck->t[i], off, len, out, &bytes, opened);
        }
        int nf = 0;
        for (int f = 0; f < ck->nfiles; f++) nf += opened[f];
        fprintf(out, "    rank %d reads %llu bytes from %d file%s\n", r, (unsigned long long)bytes,
                nf, nf == 1 ? "" : "s");
        total += bytes, opens += (uint64_t)nf;
    }
    lt__free(opened);
    if (!st)
        fprintf(out, "total: %llu bytes read, %llu file opens over %d ranks\n",
                (unsigned long long)total, (unsigned long long)opens, m->world);
    return st;
}

lt_status lt__ck_reshard(const lt_ckpt *ck, const lt_mesh *mesh, const lt_placement *pl, int np,
                         FILE *out, const char *outdir, lt_ck_format fmt, uint64_t *compared) {
    lt_placement norm[LT_MESH_MAX_DIMS];
    *compared = 0;
    LT_TRY(check_target(ck, mesh, pl, np, norm));
    if (outdir) LT_TRY(lt__ck_prepare_dir(outdir)); /* refused before the plan prints */
    LT_TRY(print_plan(ck, mesh, norm, out));
    if (!outdir) return LT_OK;
    LT_TRY(lt__ck_write_target(ck, mesh, norm, outdir, fmt));
    lt_ckpt *w = NULL;
    LT_TRY(lt__ck_open(outdir, &w));
    lt_status st = lt__ck_verify(w);
    if (!st && w->nprob)
        st = lt__err(LT_MISMATCH, "the written checkpoint does not verify: %s", w->prob[0]);
    if (!st) st = lt__ck_compare(ck, w, compared);
    lt__ck_close(w);
    return st;
}

/* ---- moving and comparing runs (used by ck_write.c) ---- */

typedef struct mover {
    unsigned char *mem; /* read into mem + target byte, or ... */
    const lt_st_file *sf;
    const lt_st_entry *se;
    lt_st_writer *w; /* copy into w's entry de ... */
    const lt_st_file *df; /* ... or compare with df's entry de */
    const lt_st_entry *de;
    unsigned char *buf, *buf2; /* (LT_CK_BUF) each */
    uint64_t diff_at; /* compare: first differing byte of de + 1, 0 when none */
} mover;

static lt_status move_run(void *ctx, uint64_t s, uint64_t d, uint64_t n) {
    mover *mv = ctx;
    if (mv->mem) return lt__st_read(mv->sf, mv->se, s, mv->mem + d, (size_t)n);
    while (n && !mv->diff_at) {
        size_t c = n < LT_CK_BUF ? (size_t)n : LT_CK_BUF;
        LT_TRY(lt__st_read(mv->sf, mv->se, s, mv->buf, c));
        if (mv->w) {
            LT_TRY(lt__st_write_at(mv->w, mv->de, d, mv->buf, c));
        } else {
            LT_TRY(lt__st_read(mv->df, mv->de, d, mv->buf2, c));
            for (size_t i = 0; i < c && !mv->diff_at; i++)
                if (mv->buf[i] != mv->buf2[i]) mv->diff_at = d + i + 1;
        }
        s += c, d += c, n -= c;
    }
    return LT_OK;
}

lt_status lt__ck_move_piece(const lt_ckpt *ck, const lt_ck_tensor *t, const int64_t *doff,
                            const int64_t *ds, lt_st_writer *w, const lt_st_file *df,
                            const lt_st_entry *de, unsigned char *buf, unsigned char *buf2,
                            uint64_t *diff_at) {
    mover mv = {NULL, NULL, NULL, w, df, de, buf, buf2, 0};
    for (int k = 0; k < t->n && !mv.diff_at; k++) {
        const lt_st_entry *e = lt__ck_entry(ck, &t->p[k]);
        int64_t lo[LT_MAX_DIMS], ln[LT_MAX_DIMS];
        if (!intersect(t->ndim, t->p[k].off, e->shape, doff, ds, lo, ln)) continue;
        mv.sf = ck->files[t->p[k].file], mv.se = e;
        LT_TRY(for_runs(t->ndim, lo, ln, t->p[k].off, e->shape, doff, ds, lt_dtype_size(t->dtype),
                        move_run, &mv));
    }
    *diff_at = mv.diff_at;
    return LT_OK;
}

lt_status lt__ck_read_piece_into(const lt_ckpt *ck, const lt_ck_tensor *t, void *mem) {
    static const int64_t zero[LT_MAX_DIMS];
    mover mv = {mem, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0};
    for (int k = 0; k < t->n; k++) {
        const lt_st_entry *e = lt__ck_entry(ck, &t->p[k]);
        int64_t lo[LT_MAX_DIMS], ln[LT_MAX_DIMS];
        if (!intersect(t->ndim, t->p[k].off, e->shape, zero, t->shape, lo, ln)) continue;
        mv.sf = ck->files[t->p[k].file], mv.se = e;
        LT_TRY(for_runs(t->ndim, lo, ln, t->p[k].off, e->shape, zero, t->shape,
                        lt_dtype_size(t->dtype), move_run, &mv));
    }
    return LT_OK;
}
