/* tools/picture/html.c — the self-contained HTML page: its head (inline CSS,
 * the check script), the plan diagram of a redistribute, and writing a
 * picture file whole or not at all (picture.h).
 *
 * The page fetches nothing. Its one script runs on load and writes what a
 * person would see into a marker element (#lt-check: how many rank-coloured
 * blocks, legend rows and timeline lanes are drawn, and whether anything
 * runs past the page's width), so a headless browser's --dump-dom can check
 * the page as drawn (tools/test-browser.sh).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/picture/picture_impl.h"

static const char *const css =
    "body{font-family:sans-serif;margin:16px;max-width:1200px;color:#222}"
    "h1{font-size:20px}h2{font-size:17px;margin-top:28px}h3{font-size:15px}"
    ".lt-fig{overflow-x:auto;max-width:100%;margin:6px 0 14px 0}"
    ".lt-plan{display:flex;flex-wrap:wrap;gap:10px;max-width:100%;align-items:flex-start}"
    ".lt-col{border:1px solid #ccc;border-radius:4px;padding:6px;flex:0 0 auto}"
    ".lt-col svg{display:block;width:340px;height:auto}"
    ".lt-fail{background:#fde8e8;border-left:4px solid #c00;padding:6px 10px;margin:6px 0}"
    ".lt-pass{color:#070}.lt-bad{color:#c00;font-weight:bold}"
    "pre{background:#f6f6f6;padding:6px;overflow-x:auto;max-width:100%;white-space:pre-wrap}"
    ".lt-note{fill:#444}.lt-left{color:#666;font-style:italic}"
    "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:2px 6px;font-size:13px}";

static const char *const script =
    "window.addEventListener('load',function(){"
    "var d=document,e=d.documentElement,c=d.getElementById('lt-check');"
    "var n=function(s){return d.querySelectorAll(s).length;};"
    "var over=e.scrollWidth>e.clientWidth+1?1:0;"
    "c.setAttribute('data-blocks',n('.lt-block'));c.setAttribute('data-legend',n('.lt-legend'));"
    "c.setAttribute('data-lanes',n('.lt-lane'));c.setAttribute('data-overflow',over);"
    "c.textContent='lt-check blocks='+n('.lt-block')+' legend='+n('.lt-legend')+' lanes='+"
    "n('.lt-lane')+' overflow='+over;});";

void lt_picture_html_begin(FILE *f, const char *title) {
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width\">\n<title>");
    lt_picture_escape(f, title);
    fprintf(f, "</title>\n<style>%s</style>\n<script>%s</script>\n</head><body>\n<h1>", css,
            script);
    lt_picture_escape(f, title);
    fprintf(f, "</h1>\n");
    /* shared definitions: the arrowhead of a cycle of waits */
    fprintf(f, "<svg width=\"0\" height=\"0\" style=\"position:absolute\"><defs><marker "
               "id=\"lt-arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"6\" "
               "markerHeight=\"6\" orient=\"auto\"><path d=\"M0 0 L10 5 L0 10 z\" fill=\"#c00\"/>"
               "</marker></defs></svg>\n");
}

void lt_picture_html_end(FILE *f) {
    fprintf(f,
            "<p id=\"lt-check\" class=\"lt-left\">(the check script has not run)</p>\n"
            "<p class=\"lt-left\">Drawn by localtensor: who holds what comes from its layout math; "
            "blocks are coloured by the set of ranks holding them.</p>\n</body></html>\n");
}

lt_status lt_picture_write_file(const char *path, const char *what,
                                lt_status (*fn)(FILE *f, void *ctx), void *ctx) {
    size_t n = strlen(path);
    char *tmp = lt__malloc(n + 5);
    if (!tmp) return lt__err(LT_NOMEM, "out of memory");
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", 5);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        lt_status st = lt__err(LT_IO, "%s %s: cannot write: %s", what, path, strerror(errno));
        lt__free(tmp);
        return st;
    }
    lt_status st = fn(f, ctx);
    int bad = ferror(f), e = errno;
    if (fclose(f) && !bad) bad = 1, e = errno;
    if (!st && bad) st = lt__err(LT_IO, "%s %s: cannot write: %s", what, path, strerror(e));
    if (!st && rename(tmp, path))
        st = lt__err(LT_IO, "%s %s: cannot write: %s", what, path, strerror(errno));
    if (st) remove(tmp);
    lt__free(tmp);
    return st;
}

/* Bars of bytes per rank (at most LT_PIC_MAX_BARS; the rest summed in the
 * caption), scaled to the largest. */
void lt__pic_bars(FILE *f, const size_t *v, int world) {
    size_t mx = 0, sum = 0;
    for (int r = 0; r < world; r++) mx = v[r] > mx ? v[r] : mx, sum += v[r];
    int nb = world < LT_PIC_MAX_BARS ? world : LT_PIC_MAX_BARS;
    double bw = 280.0 / nb;
    fprintf(f, "<svg width=\"300\" height=\"62\" font-size=\"10\" font-family=\"sans-serif\">"
               "<rect x=\"10\" y=\"4\" width=\"280\" height=\"40\" fill=\"#f4f4f4\"/>\n");
    for (int r = 0; r < nb && mx; r++) {
        double h = 40.0 * (double)v[r] / (double)mx;
        fprintf(f,
                "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#4a7bd0\">"
                "<title>rank %d: %zu bytes received</title></rect>\n",
                10 + r * bw, 44 - h, bw > 2 ? bw - 1 : bw, h, r, v[r]);
    }
    fprintf(f,
            "<text x=\"10\" y=\"58\">bytes received per rank: max %zu, total %zu%s</text></svg>\n",
            mx, sum, nb < world ? " (first ranks only)" : "");
}

/* One column of the plan: a heading, the layout picture, the bars. */
static lt_status plan_col(FILE *f, const lt_pic_layout *lay, const char *head, const size_t *bytes,
                          int world) {
    fprintf(f, "<div class=\"lt-col\"><div><b>");
    lt_picture_escape(f, head);
    fprintf(f, "</b></div>\n");
    char pl[512];
    lt_placements_format(lay->pl, lay->mesh->ndim, pl, sizeof pl);
    LT_TRY(lt_picture_svg(f, lay, pl, 0));
    if (bytes) lt__pic_bars(f, bytes, world);
    fprintf(f, "</div>\n");
    return LT_OK;
}

lt_status lt_picture_plan_html(FILE *f, const lt_plan *p, const size_t *const *bytes_recv) {
    char act[160], head[256];
    lt_pic_layout lay = {&p->mesh, p->ndim, p->shape, p->src};
    fprintf(f, "<div class=\"lt-plan\">\n");
    LT_TRY(plan_col(f, &lay, "source", NULL, p->mesh.world));
    size_t *flat = NULL;
    if (!bytes_recv && p->nsteps) {
        flat = lt__malloc(sizeof(size_t) * (size_t)p->mesh.world);
        if (!flat) return lt__err(LT_NOMEM, "out of memory while drawing a plan");
    }
    lt_status st = LT_OK;
    for (int s = 0; s < p->nsteps && !st; s++) {
        const lt_plan_step *ps = &p->steps[s];
        snprintf(head, sizeof head, "step %d: mesh dim %d, %s", s + 1, ps->mesh_dim,
                 lt_plan_step_action(ps, act, sizeof act));
        if (flat)
            for (int r = 0; r < p->mesh.world; r++) flat[r] = ps->bytes_per_rank;
        lay.pl = ps->after;
        st = plan_col(f, &lay, head, bytes_recv ? bytes_recv[s] : flat, p->mesh.world);
    }
    lt__free(flat);
    fprintf(f, "</div>\n");
    if (flat && !st)
        fprintf(
            f, "<p class=\"lt-left\">Bars: the plan's bytes per rank (the most any rank receives), "
               "not measured per rank.</p>\n");
    return st;
}

typedef struct redist_page {
    const lt_plan *p;
    const lt_trace *trace;
    const char *note;
} redist_page;

/* The trace's bytes received per step of the plan (NULL for a step whose
 * event is missing: then none are drawn per rank). rows: (nsteps). */
static void step_bytes(const lt_plan *p, const lt_trace *tr, const size_t **rows, size_t *zeros) {
    size_t next = 0, n = tr ? lt_trace_count(tr) : 0;
    for (int s = 0; s < p->nsteps; s++) {
        const lt_plan_step *ps = &p->steps[s];
        rows[s] = ps->comm ? NULL : zeros;
        for (size_t i = next; ps->comm && i < n; i++) {
            lt_trace_event ev;
            if (lt_trace_get(tr, i, &ev)) break;
            if (ev.coll == ps->coll && ev.mesh_dim == ps->mesh_dim && ev.world == p->mesh.world) {
                rows[s] = ev.recv;
                next = i + 1;
                break;
            }
        }
    }
}

static lt_status redist_write(FILE *f, void *ctx) {
    const redist_page *rp = ctx;
    const lt_plan *p = rp->p;
    char a[512], b[512], ms[128], ss[128], title[1400];
    lt_placements_format(p->src, p->mesh.ndim, a, sizeof a);
    lt_placements_format(p->dst, p->mesh.ndim, b, sizeof b);
    snprintf(title, sizeof title, "redistribute %s -> %s on mesh %s, shape %s, %s", a, b,
             lt_mesh_format(&p->mesh, ms, sizeof ms),
             lt_shape_format(p->ndim, p->shape, ss, sizeof ss), lt_dtype_name(p->dtype));
    lt_picture_html_begin(f, title);
    fprintf(f, "<p>%d step%s, %zu bytes received in all (planner %s).</p>\n", p->nsteps,
            p->nsteps == 1 ? "" : "s", p->total_bytes, lt_planner_name(p->planner));
    if (rp->note) {
        fprintf(f, "<p>");
        lt_picture_escape(f, rp->note);
        fprintf(f, "</p>\n");
    }
    const size_t **rows = lt__calloc((size_t)(p->nsteps ? p->nsteps : 1), sizeof *rows);
    size_t *zeros = lt__calloc((size_t)p->mesh.world, sizeof *zeros);
    lt_status st = rows && zeros ? LT_OK : lt__err(LT_NOMEM, "out of memory while drawing a plan");
    int all = 1;
    if (!st) step_bytes(p, rp->trace, rows, zeros);
    for (int s = 0; !st && s < p->nsteps; s++) all &= rows[s] != NULL;
    if (!st) st = lt_picture_plan_html(f, p, rp->trace && all ? (const size_t *const *)rows : NULL);
    lt__free(rows);
    lt__free(zeros);
    lt_picture_html_end(f);
    return st;
}

lt_status lt_picture_redistribute_file(const char *path, const lt_plan *p, const lt_trace *trace,
                                       const char *note) {
    redist_page rp = {p, trace, note};
    return lt_picture_write_file(path, "--html", redist_write, &rp);
}
