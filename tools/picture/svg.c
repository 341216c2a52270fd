/* tools/picture/svg.c — one layout as SVG (lt_picture_svg, picture.h).
 *
 * Blocks come from the layout's own index lists (lt_layout_rank): along each
 * drawn tensor dim, a block boundary is every place where some rank's run of
 * held indices starts or ends, so a block is held whole by each of its
 * holders (_StridedShard's interleaving shows as alternating blocks). Past
 * LT_PIC_MAX_BLOCKS boundaries the dim is cut evenly instead and a block
 * shows the holders of its first index ("sampled", said in the picture).
 * A layout is a cartesian product of per-dim lists, so a rank holds a cell
 * exactly when it holds the cell's block along every drawn dim.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/picture/picture.h"

typedef struct pic_grid {
    int nd;          /* drawn tensor dims: 1 or 2 */
    int dims[2];     /* which tensor dims */
    int nb[2];       /* blocks along each */
    int64_t *cut[2]; /* (nb[k] + 1) block starts, then the dim's size */
    int sampled[2];
    int nranks;
    const int *ranks;        /* (nranks) the ranks drawn (borrowed) */
    unsigned char *holds[2]; /* (nranks * nb[k]) 1 when ranks[i] holds block b */
} pic_grid;

static void grid_free(pic_grid *g) {
    for (int k = 0; k < 2; k++) lt__free(g->cut[k]), lt__free(g->holds[k]);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The boundaries along tensor dim d of the ranks' lists; ls[i] is rank i's
 * layout. Sorted, unique, 0 and n included. NULL when out of memory. */
static int64_t *cuts_of(const lt_rank_layout *ls, int nr, int d, int64_t n, int *ncut) {
    int64_t cap = 2;
    for (int i = 0; i < nr; i++) cap += ls[i].idx[d] ? 2 * ls[i].local_shape[d] : 0;
    int64_t *c = lt__malloc(sizeof(int64_t) * (size_t)cap);
    if (!c) return NULL;
    int64_t m = 0;
    c[m++] = 0;
    c[m++] = n;
    for (int i = 0; i < nr; i++) {
        const int64_t *ix = ls[i].idx[d];
        for (int64_t k = 0; ix && k < ls[i].local_shape[d]; k++) {
            if (k == 0 || ix[k] != ix[k - 1] + 1) c[m++] = ix[k];
            if (k + 1 == ls[i].local_shape[d] || ix[k + 1] != ix[k] + 1) c[m++] = ix[k] + 1;
        }
    }
    qsort(c, (size_t)m, sizeof *c, cmp_i64);
    int64_t u = 0;
    for (int64_t k = 0; k < m; k++)
        if (!u || c[k] != c[u - 1]) c[u++] = c[k];
    *ncut = (int)(u > INT32_MAX ? INT32_MAX : u);
    return c;
}

/* Block of global index v along grid dim k (binary search over the cuts). */
static int block_of(const pic_grid *g, int k, int64_t v) {
    int lo = 0, hi = g->nb[k] - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (g->cut[k][mid] <= v)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Sets grid dim k's blocks from the ranks' lists: the exact boundaries, or an
 * even cut when there are too many. */
static lt_status grid_dim(pic_grid *g, const lt_rank_layout *ls, int k, int64_t n) {
    int d = g->dims[k], nc = 0;
    int64_t *c = cuts_of(ls, g->nranks, d, n, &nc);
    if (!c) return lt__err(LT_NOMEM, "out of memory while drawing a layout");
    if (nc - 1 > LT_PIC_MAX_BLOCKS) {
        int64_t step = n / LT_PIC_MAX_BLOCKS + (n % LT_PIC_MAX_BLOCKS != 0);
        nc = (int)(n / step + (n % step != 0)) + 1;
        for (int b = 0; b + 1 < nc; b++) c[b] = (int64_t)b * step;
        c[nc - 1] = n;
        g->sampled[k] = 1;
    }
    g->cut[k] = c;
    g->nb[k] = nc - 1;
    g->holds[k] = lt__calloc((size_t)g->nranks * (size_t)g->nb[k], 1);
    if (!g->holds[k]) return lt__err(LT_NOMEM, "out of memory while drawing a layout");
    for (int i = 0; i < g->nranks; i++) {
        unsigned char *h = g->holds[k] + (size_t)i * (size_t)g->nb[k];
        const int64_t *ix = ls[i].idx[d];
        int64_t len = ls[i].local_shape[d];
        for (int64_t t = 0; t < len; t++) {
            int64_t v = ix ? ix[t] : t;
            int b = block_of(g, k, v);
            if (!g->sampled[k] || g->cut[k][b] == v) h[b] = 1;
        }
    }
    return LT_OK;
}

/* Builds the grid of `ranks` over tensor dims dims[0..nd). Errors: layout, NOMEM. */
static lt_status grid_build(const lt_pic_layout *lay, const int *ranks, int nr, const int *dims,
                            int nd, pic_grid *g) {
    memset(g, 0, sizeof *g);
    g->nd = nd;
    g->ranks = ranks;
    g->nranks = nr;
    for (int k = 0; k < nd; k++) g->dims[k] = dims[k];
    lt_rank_layout *ls = lt__calloc((size_t)nr, sizeof *ls);
    if (!ls) return lt__err(LT_NOMEM, "out of memory while drawing a layout");
    lt_status st = LT_OK;
    int built = 0;
    for (; built < nr && !st; built++)
        st = lt_layout_rank(lay->mesh, lay->ndim, lay->shape, lay->pl, ranks[built], &ls[built]);
    if (st) built--;
    for (int k = 0; k < nd && !st; k++) st = grid_dim(g, ls, k, lay->shape[dims[k]]);
    for (int i = 0; i < built; i++) lt_rank_layout_free(&ls[i]);
    lt__free(ls);
    if (st) grid_free(g);
    return st;
}

/* ---- owner sets and colours --------------------------------------------------------- */

typedef struct pic_cells {
    int words;      /* 64-bit words of one owner set */
    int ncls;       /* distinct owner sets */
    uint64_t *sets; /* (ncls * words) */
    int *cls;       /* (cells) class of each cell, -1: nobody */
    int *first;     /* (cells) the lowest bit of each class's set */
} pic_cells;

static void cells_free(pic_cells *c) {
    lt__free(c->sets);
    lt__free(c->cls);
    lt__free(c->first);
}

static int set_bit(const uint64_t *s, int i) {
    return (int)((s[i / 64] >> (i % 64)) & 1);
}

/* The lowest rank of a set (ranks[] maps bit positions to ranks, ascending). */
static int set_first(const uint64_t *s, const int *ranks, int nr) {
    for (int i = 0; i < nr; i++)
        if (set_bit(s, i)) return ranks[i];
    return 0;
}

/* The owner class of every cell (row-major over the grid). */
static lt_status cells_build(const pic_grid *g, pic_cells *c) {
    int nrow = g->nd == 2 ? g->nb[0] : 1, ncol = g->nb[g->nd - 1], n = nrow * ncol;
    c->words = (g->nranks + 63) / 64;
    c->ncls = 0;
    c->sets = lt__calloc((size_t)n * (size_t)c->words, sizeof(uint64_t));
    c->cls = lt__malloc(sizeof(int) * (size_t)n);
    c->first = lt__malloc(sizeof(int) * (size_t)n);
    uint64_t *tmp = lt__calloc((size_t)c->words, sizeof(uint64_t));
    if (!c->sets || !c->cls || !c->first || !tmp) {
        cells_free(c), lt__free(tmp);
        return lt__err(LT_NOMEM, "out of memory while drawing a layout");
    }
    for (int cell = 0; cell < n; cell++) {
        int a = cell / ncol, b = cell % ncol, any = 0;
        memset(tmp, 0, sizeof(uint64_t) * (size_t)c->words);
        for (int i = 0; i < g->nranks; i++) {
            int in = g->holds[g->nd - 1][(size_t)i * (size_t)ncol + (size_t)b];
            if (g->nd == 2) in &= g->holds[0][(size_t)i * (size_t)nrow + (size_t)a];
            if (in) tmp[i / 64] |= (uint64_t)1 << (i % 64), any = 1;
        }
        int k = -1, first = 0;
        while (any && !tmp[first / 64]) first += 64;
        while (any && !set_bit(tmp, first)) first++;
        for (int j = 0; any && j < c->ncls && k < 0; j++)
            if (c->first[j] == first && !memcmp(c->sets + (size_t)j * (size_t)c->words, tmp,
                                                sizeof(uint64_t) * (size_t)c->words))
                k = j;
        if (any && k < 0) {
            k = c->ncls++;
            c->first[k] = first;
            memcpy(c->sets + (size_t)k * (size_t)c->words, tmp,
                   sizeof(uint64_t) * (size_t)c->words);
        }
        c->cls[cell] = k;
    }
    lt__free(tmp);
    return LT_OK;
}

/* Colour of the set whose lowest rank is k, so that a rank keeps its colour
 * from picture to picture: hues a golden angle apart, two lightnesses
 * alternating. */
static void colour(int k, char *buf, size_t n) {
    snprintf(buf, n, "hsl(%d,62%%,%d%%)", (int)((k * 137.508) + 200) % 360, k % 2 ? 58 : 70);
}

/* Ranks of a set as "0-3,8" (ranks[] maps bit positions to ranks), cut
 * with "..." to fit n bytes; "all N" when every drawn rank is in. */
static void set_label(const uint64_t *s, const int *ranks, int nr, int world, char *buf, size_t n) {
    int cnt = 0;
    for (int i = 0; i < nr; i++) cnt += set_bit(s, i);
    if (cnt == world && world > 1) {
        snprintf(buf, n, "all %d", world);
        return;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < nr; i++) {
        if (!set_bit(s, i)) continue;
        int j = i;
        while (j + 1 < nr && set_bit(s, j + 1) && ranks[j + 1] == ranks[j] + 1) j++;
        char part[32];
        if (j > i)
            snprintf(part, sizeof part, "%s%d-%d", used ? "," : "", ranks[i], ranks[j]);
        else
            snprintf(part, sizeof part, "%s%d", used ? "," : "", ranks[i]);
        if (used + strlen(part) + 4 >= n) {
            snprintf(buf + used, n - used, ",..");
            return;
        }
        strcpy(buf + used, part);
        used += strlen(part);
        i = j;
    }
}

static void coord_label(const lt_mesh *m, int rank, char *buf, size_t n) {
    int c[LT_MESH_MAX_DIMS];
    lt_mesh_coord(m, rank, c);
    size_t used = 0;
    for (int i = 0; i < m->ndim && used + 1 < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%d", i ? "," : "(", c[i]);
        if (w < 0) return;
        used += (size_t)w;
    }
    if (used + 2 <= n) strcat(buf, ")");
}

void lt_picture_escape(FILE *f, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc((unsigned char)*s < 0x20 && *s != '\n' ? '?' : *s, f);
        }
    }
}

/* ---- drawing ------------------------------------------------------------------------- */

#define PIC_W    620 /* width of the drawing area, px */
#define PIC_LINE 16  /* one line of text */

static int clampi(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

static int is_partial(const lt_pic_layout *lay, int *dim) {
    for (int i = 0; i < lay->mesh->ndim; i++)
        if (lay->pl[i].kind == LT_PL_PARTIAL) return *dim = i, 1;
    return 0;
}

/* The cells of g at (x0, y0), cw x ch each; hatch: the pattern's id or NULL. */
static void draw_cells(FILE *f, const lt_pic_layout *lay, const pic_grid *g, const pic_cells *c,
                       int x0, int y0, int cw, int ch, const char *hatch) {
    int nrow = g->nd == 2 ? g->nb[0] : 1, ncol = g->nb[g->nd - 1];
    char col[48], lab[64], co[64];
    for (int a = 0; a < nrow; a++) {
        for (int b = 0; b < ncol; b++) {
            int k = c->cls[a * ncol + b], x = x0 + b * cw, y = y0 + a * ch;
            if (k < 0) {
                fprintf(f,
                        "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" "
                        "stroke=\"#999\""
                        " stroke-dasharray=\"2\"/>\n",
                        x, y, cw, ch);
                continue;
            }
            const uint64_t *s = c->sets + (size_t)k * (size_t)c->words;
            colour(set_first(s, g->ranks, g->nranks), col, sizeof col);
            set_label(s, g->ranks, g->nranks, lay->mesh->world, lab, sizeof lab);
            fprintf(f,
                    "<rect class=\"lt-block\" data-owners=\"%s\" x=\"%d\" y=\"%d\" width=\"%d\" "
                    "height=\"%d\""
                    " fill=\"%s\" stroke=\"#fff\"><title>ranks %s</title></rect>\n",
                    lab, x, y, cw, ch, col, lab);
            if (hatch)
                fprintf(f,
                        "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"url(#%s)\""
                        " pointer-events=\"none\"/>\n",
                        x, y, cw, ch, hatch);
            if ((int)strlen(lab) * 7 + 4 > cw || ch < 14) continue;
            int one = strspn(lab, "0123456789") == strlen(lab);
            int two = one && ch >= 32 && lay->mesh->ndim > 1;
            fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"lt-lab\">%s</text>\n", x + cw / 2,
                    y + (two ? ch / 2 - 2 : ch / 2 + 4), lab);
            if (two) {
                coord_label(lay->mesh, atoi(lab), co, sizeof co);
                if ((int)strlen(co) * 6 + 4 <= cw)
                    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"lt-co\">%s</text>\n", x + cw / 2,
                            y + ch / 2 + 11, co);
            }
        }
    }
}

/* Tick labels: the first index of each block along the top (and the left). */
static void draw_ticks(FILE *f, const pic_grid *g, int x0, int y0, int cw, int ch) {
    int k = g->nd - 1, every = cw >= 28 ? 1 : (28 + cw - 1) / cw;
    for (int b = 0; b < g->nb[k]; b += every)
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"lt-tick\">%lld</text>\n", x0 + b * cw + 2,
                y0 - 3, (long long)g->cut[k][b]);
    if (g->nd < 2) return;
    every = ch >= 14 ? 1 : (14 + ch - 1) / ch;
    for (int a = 0; a < g->nb[0]; a += every)
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"lt-tick\" text-anchor=\"end\">%lld</text>\n",
                x0 - 3, y0 + a * ch + 11, (long long)g->cut[0][a]);
}

/* Legend rows (at most LT_PIC_MAX_LEGEND) from y; returns the y after it. */
static int draw_legend(FILE *f, const lt_pic_layout *lay, const pic_grid *g, const pic_cells *c,
                       int y) {
    char col[48], lab[64], co[64]; /* labels cut to fit the picture's width */
    int shown = c->ncls < LT_PIC_MAX_LEGEND ? c->ncls : LT_PIC_MAX_LEGEND;
    for (int k = 0; k < shown; k++, y += PIC_LINE) {
        const uint64_t *s = c->sets + (size_t)k * (size_t)c->words;
        colour(set_first(s, g->ranks, g->nranks), col, sizeof col);
        set_label(s, g->ranks, g->nranks, lay->mesh->world, lab, sizeof lab);
        int cnt = 0, first = -1;
        for (int i = 0; i < g->nranks; i++)
            if (set_bit(s, i)) cnt++, first = first < 0 ? g->ranks[i] : first;
        co[0] = '\0';
        if (cnt == 1) coord_label(lay->mesh, first, co, sizeof co);
        fprintf(f,
                "<g class=\"lt-legend\"><rect x=\"10\" y=\"%d\" width=\"12\" height=\"12\" "
                "fill=\"%s\"/>"
                "<text x=\"28\" y=\"%d\">rank%s %s%s%s%s</text></g>\n",
                y - 10, col, y, cnt == 1 ? "" : "s", lab, co[0] ? " at mesh coordinate " : "", co,
                cnt > 1 ? (cnt == lay->mesh->world ? " (replicated everywhere)" : " (replicas)")
                        : "");
    }
    if (shown < c->ncls)
        fprintf(f, "<text x=\"10\" y=\"%d\">... and %d more holder sets, left out</text>\n", y,
                c->ncls - shown),
            y += PIC_LINE;
    return y;
}

/* The notes under a picture, one string each, into notes[] (at most cap);
 * returns how many. Empty shards are listed (ranks whose local shape has a
 * 0 while the tensor has elements). */
static int make_notes(const lt_pic_layout *lay, const pic_grid *g, char notes[][512], int cap) {
    int n = 0, pdim;
    if (n < cap && g && (g->sampled[0] || g->sampled[1]))
        snprintf(notes[n++], 512,
                 "sampled: too many blocks to draw; each block shows the holders of its first "
                 "index (at most %d blocks per dim)",
                 LT_PIC_MAX_BLOCKS);
    if (n < cap && is_partial(lay, &pdim)) {
        for (int i = 0; i < lay->mesh->ndim && n < cap; i++)
            if (lay->pl[i].kind == LT_PL_PARTIAL)
                snprintf(notes[n++], 512,
                         "hatched: P(%s) on mesh dim %d: its %d ranks hold contributions; "
                         "the value is their %s",
                         lt_redop_name(lay->pl[i].op), i, lay->mesh->shape[i],
                         lt_redop_name(lay->pl[i].op));
    }
    int64_t total = 1;
    for (int d = 0; d < lay->ndim; d++) total = lt__mul_sat(total, lay->shape[d]);
    if (total == 0 || n >= cap) return n;
    size_t used = 0;
    int nempty = 0;
    for (int r = 0; r < lay->mesh->world; r++) {
        int64_t ls[LT_MAX_DIMS], e = 1;
        if (lt_local_shape_and_offset(lay->mesh, lay->ndim, lay->shape, lay->pl, r, ls, NULL))
            return n;
        for (int d = 0; d < lay->ndim; d++) e = lt__mul_sat(e, ls[d]);
        if (e) continue;
        if (!nempty++) used = (size_t)snprintf(notes[n], 512, "empty shards (zero-size):");
        if (used + 16 < 512)
            used += (size_t)snprintf(notes[n] + used, 512 - used, " %d", r);
        else if (used + 5 < 512)
            used += (size_t)snprintf(notes[n] + used, 512 - used, " ..."), used = 512;
    }
    return n + (nempty > 0);
}

static void svg_open(FILE *f, int w, int h, const char *title, int standalone) {
    if (standalone) fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f,
            "<svg class=\"lt-layout\" %swidth=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n",
            standalone ? "xmlns=\"http://www.w3.org/2000/svg\" " : "", w, h, w, h);
    fprintf(
        f,
        "<style>.lt-lab{text-anchor:middle;font-size:11px}.lt-co{text-anchor:middle;font-size:9px;"
        "fill:#333}.lt-tick{font-size:9px;fill:#555}</style>\n");
    fprintf(f, "<text x=\"10\" y=\"16\" font-weight=\"bold\">");
    lt_picture_escape(f, title);
    fprintf(f, "</text>\n");
}

static int hatch_def(FILE *f, char *id, size_t n) {
    static int counter; /* ids unique within one page (one thread draws a page) */
    snprintf(id, n, "lt-hatch-%d", ++counter);
    return fprintf(
        f,
        "<defs><pattern id=\"%s\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
        "patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#000\" "
        "stroke-opacity=\"0.45\" stroke-width=\"2\"/></pattern></defs>\n",
        id);
}

/* 1-D / 2-D tensors: the grid, its legend and notes. */
static lt_status svg_grid(FILE *f, const lt_pic_layout *lay, const int *ranks, const char *title,
                          int standalone) {
    int dims[2] = {0, lay->ndim > 1 ? 1 : 0};
    pic_grid g;
    pic_cells c;
    LT_TRY(grid_build(lay, ranks, lay->mesh->world, dims, lay->ndim, &g));
    lt_status st = cells_build(&g, &c);
    if (st) return grid_free(&g), st;
    char notes[4][512], hid[32];
    int nn = make_notes(lay, &g, notes, 4), pdim;
    int nrow = g.nd == 2 ? g.nb[0] : 1, ncol = g.nb[g.nd - 1];
    int cw = clampi(PIC_W / ncol, 10, 90), ch = g.nd == 2 ? clampi(420 / nrow, 10, 56) : 44;
    int x0 = g.nd == 2 ? 48 : 10, y0 = 40;
    int legend = (c.ncls < LT_PIC_MAX_LEGEND ? c.ncls : LT_PIC_MAX_LEGEND + 1);
    int w = x0 + ncol * cw + 10, h = y0 + nrow * ch + 16 + (legend + nn) * PIC_LINE + 8;
    if (w < 520) w = 520;
    for (int i = 0; i < nn; i++)
        if (w < 20 + 7 * (int)strlen(notes[i])) w = 20 + 7 * (int)strlen(notes[i]);
    svg_open(f, w, h, title, standalone);
    int hatch = is_partial(lay, &pdim);
    if (hatch) hatch_def(f, hid, sizeof hid);
    draw_ticks(f, &g, x0, y0, cw, ch);
    draw_cells(f, lay, &g, &c, x0, y0, cw, ch, hatch ? hid : NULL);
    int y = draw_legend(f, lay, &g, &c, y0 + nrow * ch + 26);
    for (int i = 0; i < nn; i++, y += PIC_LINE) {
        fprintf(f, "<text x=\"10\" y=\"%d\" class=\"lt-note\">", y);
        lt_picture_escape(f, notes[i]);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</svg>\n");
    cells_free(&c);
    grid_free(&g);
    return LT_OK;
}

/* ---- 3-D+ tensors and big meshes: one strip per mesh dim, and fractions -------------- */

#define PIC_MAX_SHAPES 12

typedef struct pic_share {
    int64_t shape[LT_MAX_DIMS];
    int64_t numel;
    int count, first, last;
} pic_share;

/* Distinct local shapes (at most PIC_MAX_SHAPES; *more: ranks left out). */
static lt_status shares(const lt_pic_layout *lay, pic_share *sh, int *nsh, int *more) {
    *nsh = 0;
    *more = 0;
    for (int r = 0; r < lay->mesh->world; r++) {
        int64_t ls[LT_MAX_DIMS], e = 1;
        LT_TRY(lt_local_shape_and_offset(lay->mesh, lay->ndim, lay->shape, lay->pl, r, ls, NULL));
        for (int d = 0; d < lay->ndim; d++) e = lt__mul_sat(e, ls[d]);
        int k = 0;
        while (k < *nsh && memcmp(sh[k].shape, ls, sizeof(int64_t) * (size_t)lay->ndim)) k++;
        if (k == *nsh) {
            if (*nsh == PIC_MAX_SHAPES) {
                (*more)++;
                continue;
            }
            memcpy(sh[k].shape, ls, sizeof(int64_t) * (size_t)lay->ndim);
            sh[k].numel = e, sh[k].count = 0, sh[k].first = r, (*nsh)++;
        }
        sh[k].count++, sh[k].last = r;
    }
    return LT_OK;
}

/* The strip of mesh dim i: rank 0's group along it over the tensor dim its
 * placement shards (replicate and partial: one bar); returns the y after it. */
static lt_status draw_strip(FILE *f, const lt_pic_layout *lay, int i, int y, const char *hatch,
                            int *yout) {
    const lt_placement *p = &lay->pl[i];
    char pls[64], nm[LT_MESH_NAME_MAX + 4] = "";
    lt_placement_format(p, pls, sizeof pls);
    if (lay->mesh->names[i][0]) snprintf(nm, sizeof nm, " (%s)", lay->mesh->names[i]);
    fprintf(f, "<text x=\"10\" y=\"%d\">mesh dim %d%s, %d ranks: %s", y, i, nm, lay->mesh->shape[i],
            pls);
    if (p->kind == LT_PL_REPLICATE)
        fprintf(f, " — the ranks along it hold the same values");
    else if (p->kind == LT_PL_PARTIAL)
        fprintf(f, " — contributions, reduced by %s", lt_redop_name(p->op));
    else
        fprintf(f, " — tensor dim %d split over rank 0's group along it", p->dim);
    fprintf(f, "</text>\n");
    y += 6;
    if (p->kind == LT_PL_REPLICATE || p->kind == LT_PL_PARTIAL) {
        fprintf(f,
                "<rect class=\"lt-block\" data-owners=\"all\" x=\"10\" y=\"%d\" width=\"%d\" "
                "height=\"20\" "
                "fill=\"hsl(200,30%%,80%%)\"/>\n",
                y, PIC_W);
        if (p->kind == LT_PL_PARTIAL)
            fprintf(f, "<rect x=\"10\" y=\"%d\" width=\"%d\" height=\"20\" fill=\"url(#%s)\"/>\n",
                    y, PIC_W, hatch);
        *yout = y + 20 + PIC_LINE + 4;
        return LT_OK;
    }
    int ranks[LT_MESH_MAX_WORLD > 4096 ? 4096 : LT_MESH_MAX_WORLD], pos = 0, g0;
    g0 = lt_mesh_group_of(lay->mesh, i, 0, &pos);
    if (lay->mesh->shape[i] > (int)(sizeof ranks / sizeof ranks[0])) {
        fprintf(f,
                "<text x=\"10\" y=\"%d\" class=\"lt-note\">(%d ranks along it: too many to draw "
                "one by one; see the fraction table)</text>\n",
                y + 18, lay->mesh->shape[i]);
        *yout = y + 12 + 24 + PIC_LINE + 4;
        return LT_OK;
    }
    lt_mesh_group(lay->mesh, i, g0, ranks);
    pic_grid g;
    pic_cells c;
    int dims[1] = {p->dim};
    LT_TRY(grid_build(lay, ranks, lay->mesh->shape[i], dims, 1, &g));
    lt_status st = cells_build(&g, &c);
    if (st) return grid_free(&g), st;
    int cw = clampi(PIC_W / g.nb[0], 4, 90);
    lt_pic_layout one = *lay;
    draw_cells(f, &one, &g, &c, 10, y + 12, cw, 24, NULL);
    draw_ticks(f, &g, 10, y + 12, cw, 24);
    *yout = y + 12 + 24 + PIC_LINE + 4;
    cells_free(&c);
    grid_free(&g);
    return LT_OK;
}

static lt_status svg_summary(FILE *f, const lt_pic_layout *lay, const char *title, int standalone) {
    pic_share sh[PIC_MAX_SHAPES];
    int nsh, more, pdim;
    LT_TRY(shares(lay, sh, &nsh, &more));
    char notes[4][512], hid[32] = "", s[160];
    int nn = make_notes(lay, NULL, notes, 4);
    int h = 30 + lay->mesh->ndim * (12 + 24 + PIC_LINE + 10) +
            (2 + nsh + (more > 0) + nn) * PIC_LINE + 10;
    int w = PIC_W + 20;
    for (int i = 0; i < nn; i++)
        if (w < 20 + 7 * (int)strlen(notes[i])) w = 20 + 7 * (int)strlen(notes[i]);
    svg_open(f, w, h, title, standalone);
    if (is_partial(lay, &pdim)) hatch_def(f, hid, sizeof hid);
    int y = 36;
    for (int i = 0; i < lay->mesh->ndim; i++) LT_TRY(draw_strip(f, lay, i, y, hid, &y));
    int64_t total = 1;
    for (int d = 0; d < lay->ndim; d++) total = lt__mul_sat(total, lay->shape[d]);
    fprintf(f, "<text x=\"10\" y=\"%d\" font-weight=\"bold\">who holds what fraction</text>\n", y);
    for (int k = 0; k < nsh; k++) {
        y += PIC_LINE;
        fprintf(f,
                "<text x=\"10\" y=\"%d\" class=\"lt-share\">%d rank%s (%d..%d): local shape %s, "
                "%.4g%% of the "
                "tensor each</text>\n",
                y, sh[k].count, sh[k].count == 1 ? "" : "s", sh[k].first, sh[k].last,
                lt_shape_format(lay->ndim, sh[k].shape, s, sizeof s),
                total ? 100.0 * (double)sh[k].numel / (double)total : 0.0);
    }
    if (more)
        fprintf(f, "<text x=\"10\" y=\"%d\">%d ranks with other local shapes, left out</text>\n",
                y += PIC_LINE, more);
    for (int i = 0; i < nn; i++) {
        fprintf(f, "<text x=\"10\" y=\"%d\" class=\"lt-note\">", y += PIC_LINE);
        lt_picture_escape(f, notes[i]);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</svg>\n");
    return LT_OK;
}

/* A RaggedShard layout is drawn and summed up as its view (shape (F,
 * *shape[k:]), the RaggedShard an explicit-sizes Shard(0);
 * localtensor/ragged.h): *lay is pointed at *v, built in *vw; other layouts
 * are left as they are. */
static lt_status ragged_view(const lt_pic_layout **lay, lt_ragged_view *vw, lt_pic_layout *v) {
    const lt_pic_layout *l = *lay;
    if (!lt_placements_have_ragged(l->pl, l->mesh->ndim)) return LT_OK;
    LT_TRY(lt_ragged_view_of(l->mesh, l->ndim, l->shape, l->pl, vw));
    v->mesh = l->mesh;
    v->ndim = vw->ndim;
    v->shape = vw->shape;
    v->pl = vw->pl;
    *lay = v;
    return LT_OK;
}

lt_status lt_picture_svg(FILE *f, const lt_pic_layout *lay, const char *title, int standalone) {
    int64_t elems = 0, total = 1, ls[LT_MAX_DIMS];
    lt_ragged_view vw;
    lt_pic_layout v;
    LT_TRY(ragged_view(&lay, &vw, &v));
    for (int d = 0; d < lay->ndim; d++) total = lt__mul_sat(total, lay->shape[d]);
    /* the index lists a grid walks: every rank's local length along the drawn dims */
    for (int r = 0; r < lay->mesh->world && lay->ndim <= 2 && total > 0; r++) {
        LT_TRY(lt_local_shape_and_offset(lay->mesh, lay->ndim, lay->shape, lay->pl, r, ls, NULL));
        for (int d = 0; d < lay->ndim; d++)
            elems =
                ls[d] > LT_PIC_MAX_LIST_ELEMS - elems ? LT_PIC_MAX_LIST_ELEMS + 1 : elems + ls[d];
    }
    if (lay->ndim >= 1 && lay->ndim <= 2 && total > 0 && elems <= LT_PIC_MAX_LIST_ELEMS) {
        int *ranks = lt__malloc(sizeof(int) * (size_t)lay->mesh->world);
        if (!ranks) return lt__err(LT_NOMEM, "out of memory while drawing a layout");
        for (int r = 0; r < lay->mesh->world; r++) ranks[r] = r;
        lt_status st = svg_grid(f, lay, ranks, title, standalone);
        lt__free(ranks);
        return st;
    }
    return svg_summary(f, lay, title, standalone);
}

lt_status lt_picture_shard_summary(FILE *f, const lt_pic_layout *lay, int max_lines) {
    pic_share sh[PIC_MAX_SHAPES];
    int nsh, more;
    lt_ragged_view vw;
    lt_pic_layout v;
    LT_TRY(ragged_view(&lay, &vw, &v));
    LT_TRY(shares(lay, sh, &nsh, &more));
    int64_t total = 1;
    char s[160];
    for (int d = 0; d < lay->ndim; d++) total = lt__mul_sat(total, lay->shape[d]);
    for (int k = 0; k < nsh && k < max_lines; k++)
        fprintf(f, "  %d rank%s (first %d, last %d): local shape %s, %.4g%% of the tensor each\n",
                sh[k].count, sh[k].count == 1 ? "" : "s", sh[k].first, sh[k].last,
                lt_shape_format(lay->ndim, sh[k].shape, s, sizeof s),
                total ? 100.0 * (double)sh[k].numel / (double)total : 0.0);
    if (nsh > max_lines || more)
        fprintf(f, "  (%d more local shape%s left out)\n", nsh > max_lines ? nsh - max_lines : 0,
                more ? " and ranks with others" : "s");
    return LT_OK;
}
