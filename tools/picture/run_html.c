/* tools/picture/run_html.c — the HTML page of a whole run, drawn from its
 * JSON report (lt_picture_run_html, picture.h): failures first with links,
 * then per case the would-hang report and the steps as lanes (one per rank,
 * matched calls joined), and each redistribute's plan as columns.
 *
 * The page stays small: past LT_RUN_HTML_BUDGET bytes a case is listed by
 * its name and status only, and the page says how many were left out.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/picture/picture_impl.h"

#define LT_RUN_HTML_BUDGET (1700L * 1024) /* bytes of drawings before cases are only listed */
#define MAX_COLS           40             /* timeline columns drawn */
#define MAX_PLANS          8              /* redistributes drawn per case */
#define COL_W              124
#define LANE_H             22

typedef struct rh_ctx {
    FILE *f;
    int pass; /* 0: the failures list, 1: the cases */
    int nbad, left_out;
} rh_ctx;

static const char *status_of(const cJSON *c) {
    return lt__pic_str(c, "status");
}

static void esc(FILE *f, const char *s) {
    lt_picture_escape(f, s);
}

/* "dir/file.yaml:13:7" or "dir/file.yaml:13" -> "line 13" (the lanes' short
 * labels; the case names its file above them); anything else as it is */
static void short_at(const char *at, char *buf, size_t n) {
    const char *c2 = strrchr(at, ':'), *c1 = c2;
    while (c1 && c1 > at && c1[-1] != ':') c1--;
    int two = c1 && c1 > at && c1 < c2 && strspn(c1, "0123456789") == (size_t)(c2 - c1);
    if (two)
        snprintf(buf, n, "line %.*s", (int)(c2 - c1), c1);
    else if (c2 && c2[1] && strspn(c2 + 1, "0123456789") == strlen(c2 + 1))
        snprintf(buf, n, "line %s", c2 + 1);
    else
        snprintf(buf, n, "%s", at);
}

static lt_status failures_list(const lt__pic_case *pc, rh_ctx *h) {
    if (!strcmp(status_of(pc->c), "passed") || !strcmp(status_of(pc->c), "not_run")) return LT_OK;
    if (h->nbad++ == 0) fprintf(h->f, "<h2>Failures</h2>\n");
    const cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(pc->c, "failures"), 0);
    fprintf(h->f, "<div class=\"lt-fail\"><a href=\"#c%d\">", pc->index);
    esc(h->f, lt__pic_str(pc->c, "name"));
    fprintf(h->f, "</a> (");
    esc(h->f, pc->path);
    fprintf(h->f, "): <b>%s</b>", status_of(pc->c));
    if (x) {
        fprintf(h->f, "<pre>");
        esc(h->f, lt__pic_str(x, "message"));
        fprintf(h->f, "</pre>");
    }
    fprintf(h->f, "</div>\n");
    return LT_OK;
}

/* ---- lanes ------------------------------------------------------------------------------ */

/* The hang members' boxes in column x. */
/* One hang member's box in its lane. */
static void hang_box(FILE *f, const cJSON *m, int rank, int x, int y0) {
    char at[256], lab[400];
    const char *state = lt__pic_str(m, "state");
    short_at(lt__pic_str(m, "at"), at, sizeof at);
    int fin = !strcmp(state, "finished"), wait = !strcmp(state, "waiting");
    if (fin)
        snprintf(lab, sizeof lab, "finished after %s", at);
    else if (wait)
        snprintf(lab, sizeof lab, "waits in %s, %s", lt__pic_str(m, "call"), at);
    else
        snprintf(lab, sizeof lab, "%s %s", state, lt__pic_str(m, "call"));
    fprintf(f,
            "<rect class=\"lt-hang\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
            "fill=\"%s\" rx=\"3\"><title>",
            x + 2, y0 + rank * LANE_H + 2, COL_W * 2 - 4, LANE_H - 4,
            fin    ? "#bbb"
            : wait ? "#e55"
                   : "#f0a040");
    esc(f, lab);
    fprintf(f, " at ");
    esc(f, lt__pic_str(m, "at"));
    fprintf(f, "</title></rect><text x=\"%d\" y=\"%d\" font-size=\"10\">", x + 6,
            y0 + rank * LANE_H + 15);
    esc(f, lab);
    fprintf(f, "</text>\n");
}

/* The would-hang column: each rank once (where it waits, or that it ended;
 * "waiting_elsewhere" only for a rank no group shows otherwise), and a
 * cycle of waits as arrows from each rank to the one it waits for. */
static void hang_boxes(FILE *f, const cJSON *hang, int lanes, int x, int y0) {
    const cJSON *g, *m, *cy = cJSON_GetObjectItemCaseSensitive(hang, "cycle");
    unsigned char seen[LT_PIC_MAX_LANES] = {0};
    for (int pass = 0; pass < 2; pass++) {
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(hang, "groups")) {
            cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(g, "members")) {
                const cJSON *rk = cJSON_GetObjectItemCaseSensitive(m, "rank");
                if (!cJSON_IsNumber(rk) || rk->valueint < 0 || rk->valueint >= lanes) continue;
                int elsewhere = !strcmp(lt__pic_str(m, "state"), "waiting_elsewhere");
                if (seen[rk->valueint] || elsewhere != pass) continue;
                seen[rk->valueint] = 1;
                hang_box(f, m, rk->valueint, x, y0);
            }
        }
    }
    int n = cJSON_GetArraySize(cy), ax = x + 2 * COL_W + 6;
    for (int i = 0; i < n; i++) {
        const cJSON *a = cJSON_GetArrayItem(cy, i), *b = cJSON_GetArrayItem(cy, (i + 1) % n);
        if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || a->valueint < 0 || b->valueint < 0 ||
            a->valueint >= lanes || b->valueint >= lanes)
            continue;
        int ya = y0 + a->valueint * LANE_H + 11, yb = y0 + b->valueint * LANE_H + 11;
        fprintf(f,
                "<path class=\"lt-cycle\" d=\"M%d %d C%d %d %d %d %d %d\" fill=\"none\" "
                "stroke=\"#c00\" stroke-width=\"1.5\" marker-end=\"url(#lt-arrow)\">"
                "<title>rank %d waits for rank %d</title></path>\n",
                ax, ya, ax + 18 + 4 * i, ya, ax + 18 + 4 * i, yb, ax + 2, yb, a->valueint,
                b->valueint);
    }
    if (n)
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#c00\">cycle</text>\n", ax,
                y0 - 2);
}

/* The first comm entry of a step as boxes in column x (more: the step's
 * other calls, counted in the label), and the joins of its groups. */
static void comm_boxes(FILE *f, const lt__pic_case *pc, const cJSON *cm, int more, int lanes, int x,
                       int y0) {
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(cm, "mesh_dim");
    char name[96];
    snprintf(name, sizeof name, more ? "%s +%d" : "%s", lt__pic_str(cm, "collective"), more);
    for (int r = 0; r < lanes; r++)
        fprintf(
            f,
            "<rect class=\"lt-call\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#9cc3f0\" "
            "rx=\"3\"><title>rank %d: %s</title></rect><text x=\"%d\" y=\"%d\" "
            "font-size=\"10\">%s</text>\n",
            x + 10, y0 + r * LANE_H + 2, COL_W - 14, LANE_H - 4, r, name, x + 14,
            y0 + r * LANE_H + 15, name);
    if (!pc->has_mesh || !cJSON_IsNumber(md) || md->valueint < 0 || md->valueint >= pc->mesh.ndim)
        return;
    int d = md->valueint, ng = lt_mesh_ngroups(&pc->mesh, d), gs = pc->mesh.shape[d];
    int *ranks = lt__malloc(sizeof(int) * (size_t)gs);
    for (int g = 0; ranks && g < ng && gs > 1; g++) {
        lt_mesh_group(&pc->mesh, d, g, ranks);
        for (int i = 0; pc->mesh.permuted && i < gs; i++) {   /* lanes go by rank id */
            int v = 0, j = i;
            for (int q = 0; q < pc->mesh.world; q++) v += pc->mesh.ids[q] < pc->mesh.ids[ranks[i]];
            for (; j > 0 && ranks[j - 1] > v; j--) ranks[j] = ranks[j - 1];
            ranks[j] = v;
        }
        int lo = ranks[0], hi = ranks[gs - 1], jx = x + 4 + (g % 6);
        if (lo >= lanes) continue;
        if (hi >= lanes) hi = lanes - 1;
        fprintf(f,
                "<line class=\"lt-join\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#225\" "
                "stroke-width=\"1.5\"/>\n",
                jx, y0 + lo * LANE_H + 11, jx, y0 + hi * LANE_H + 11);
        for (int i = 0; i < gs && ranks[i] < lanes; i++)
            fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"2.5\" fill=\"#225\"/>\n", jx,
                    y0 + ranks[i] * LANE_H + 11);
    }
    lt__free(ranks);
}

/* One trace step's column. */
static void step_col(FILE *f, const lt__pic_case *pc, const cJSON *st, int lanes, int x, int y0) {
    char at[256];
    short_at(lt__pic_str(st, "at"), at, sizeof at);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" font-weight=\"bold\">", x + 4, y0 - 16);
    esc(f, lt__pic_str(st, "kind"));
    fprintf(f, "</text><text x=\"%d\" y=\"%d\" font-size=\"9\">", x + 4, y0 - 5);
    esc(f, at);
    fprintf(f, "</text>\n");
    const cJSON *comm = cJSON_GetObjectItemCaseSensitive(st, "comm"), *cm;
    int n = cJSON_GetArraySize(comm);
    const char *op =
        lt__pic_str(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "ops"), 0), "op");
    for (int r = 0; !n && r < lanes; r++) {
        fprintf(f,
                "<rect class=\"lt-step\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                "fill=\"#e4e4e4\" rx=\"3\"/><text x=\"%d\" y=\"%d\" font-size=\"9\" "
                "fill=\"#555\">",
                x + 10, y0 + r * LANE_H + 3, COL_W - 14, LANE_H - 6, x + 14, y0 + r * LANE_H + 15);
        esc(f, op);
        fprintf(f, "</text>\n");
    }
    if ((cm = cJSON_GetArrayItem(comm, 0))) comm_boxes(f, pc, cm, n - 1, lanes, x, y0);
}

/* The first would-hang report and the first divergence of a case (NULL: none). */
static void case_marks(const cJSON *c, const cJSON **hang, const cJSON **div) {
    const cJSON *x;
    *hang = *div = NULL;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(c, "failures")) {
        if (!*hang) *hang = cJSON_GetObjectItemCaseSensitive(x, "hang");
        if (!*div && lt__pic_is_divergence(x)) *div = x;
    }
}

/* The first divergence: its traced step outlined, or a line where an
 * untraced step (a rank_map, a local op) sits between the traced ones. */
static void divergence_mark(FILE *f, const lt__pic_case *pc, const cJSON *div, int ncol, int lanes,
                            int x0, int y0) {
    int exact, k = lt__pic_failure_step(pc->c, div, &exact);
    if (k < 0 || k > ncol) k = ncol, exact = 0;
    int x = x0 + k * COL_W, ybot = y0 + lanes * LANE_H;
    if (exact)
        fprintf(f,
                "<rect class=\"lt-diverge\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                "fill=\"none\" stroke=\"#d00\" stroke-width=\"3\"/>\n",
                x + 6, y0 - 2, COL_W - 6, lanes * LANE_H + 4);
    else
        fprintf(f,
                "<line class=\"lt-diverge\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
                "stroke=\"#d00\" stroke-width=\"3\"/>\n",
                x + 5, y0 - 4, x + 5, ybot + 2);
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#d00\" font-size=\"10\">first divergence%s</text>\n",
            x + 6, ybot + 14, exact ? "" : " (at an untraced step here)");
}

/* The case's steps as lanes, one per rank (at most LT_PIC_MAX_LANES). */
static void lanes_svg(FILE *f, const lt__pic_case *pc) {
    const cJSON *steps =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pc->c, "trace"), "steps");
    const cJSON *hang, *div, *st;
    case_marks(pc->c, &hang, &div);
    int nst = cJSON_GetArraySize(steps), ncol = nst < MAX_COLS ? nst : MAX_COLS;
    if (!ncol && !hang) return;
    int lanes = pc->world < LT_PIC_MAX_LANES ? pc->world : LT_PIC_MAX_LANES, x0 = 64, y0 = 34;
    int w = x0 + ncol * COL_W + (hang ? 2 * COL_W + 60 : 0) + (div ? COL_W : 0) + 10,
        h = y0 + lanes * LANE_H + 22;
    fprintf(f,
            "<div class=\"lt-fig\"><svg class=\"lt-lanes\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\" "
            "font-size=\"11\">\n",
            w, h);
    for (int r = 0; r < lanes; r++)
        fprintf(
            f,
            "<g class=\"lt-lane\"><rect x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>"
            "<text x=\"4\" y=\"%d\">rank %d</text></g>\n",
            y0 + r * LANE_H, w, LANE_H, r % 2 ? "#fafafa" : "#f0f0f0", y0 + r * LANE_H + 15, r);
    int j = 0;
    cJSON_ArrayForEach(st, steps) {
        if (j >= ncol) break;
        step_col(f, pc, st, lanes, x0 + j * COL_W, y0);
        j++;
    }
    if (div) divergence_mark(f, pc, div, ncol, lanes, x0, y0);
    if (hang) {
        int x = x0 + ncol * COL_W;
        fprintf(f,
                "<text x=\"%d\" y=\"%d\" font-size=\"10\" font-weight=\"bold\" fill=\"#c00\">would "
                "hang (%s)"
                "</text>\n",
                x + 4, y0 - 10, lt__pic_str(hang, "kind"));
        hang_boxes(f, hang, lanes, x, y0);
    }
    fprintf(f, "</svg></div>\n");
    if (nst > ncol || pc->world > lanes)
        fprintf(f, "<p class=\"lt-left\">Left out: %d of %d steps, %d of %d ranks.</p>\n",
                nst - ncol, nst, pc->world - lanes, pc->world);
}

/* ---- plans ------------------------------------------------------------------------------ */

/* The declared shape of the tensor a redistribute moved: the declared
 * tensor of that name, or of that name less a trailing "d" / "_d", or the
 * case's only declared tensor. 0 when none fits. */
static int shape_of(const lt__pic_case *pc, const char *name, int *ndim, int64_t *shape) {
    const cJSON *t = NULL, *e;
    char base[256];
    if (!pc->tensors) return 0;
    snprintf(base, sizeof base, "%s", name);
    t = cJSON_GetObjectItemCaseSensitive(pc->tensors, base);
    size_t n = strlen(base);
    if (!t && n > 1 && base[n - 1] == 'd')
        base[--n] = '\0', t = cJSON_GetObjectItemCaseSensitive(pc->tensors, base);
    if (!t && n > 1 && base[n - 1] == '_')
        base[--n] = '\0', t = cJSON_GetObjectItemCaseSensitive(pc->tensors, base);
    if (!t && cJSON_GetArraySize(pc->tensors) == 1) t = pc->tensors->child;
    if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) > LT_MAX_DIMS) return 0;
    *ndim = 0;
    cJSON_ArrayForEach(e, t) shape[(*ndim)++] = (int64_t)e->valuedouble;
    return 1;
}

/* The layout picture of one placement list (JSON strings); nothing drawn
 * when it cannot be read (the report's own text is shown above it). */
static void layout_pic(FILE *f, const lt__pic_case *pc, const cJSON *pls, int ndim,
                       const int64_t *shape) {
    char buf[1024] = "";
    size_t used = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, pls) used +=
        (size_t)snprintf(buf + used, used < sizeof buf ? sizeof buf - used : 0, "%s%s",
                         used ? "," : "", cJSON_IsString(p) ? p->valuestring : "?");
    lt_placement pl[LT_MESH_MAX_DIMS], norm[LT_MESH_MAX_DIMS];
    int np = 0;
    if (used >= sizeof buf || lt_placements_parse(buf, pl, LT_MESH_MAX_DIMS, &np) ||
        lt_placements_check(&pc->mesh, ndim, pl, np, norm))
        return;
    lt_pic_layout lay = {&pc->mesh, ndim, shape, norm};
    lt_picture_svg(f, &lay, buf, 0);
}

static void plan_column(FILE *f, const lt__pic_case *pc, const char *head, const cJSON *pls,
                        int ndim, const int64_t *shape, const cJSON *recv) {
    const cJSON *p;
    fprintf(f, "<div class=\"lt-col\"><div><b>");
    esc(f, head);
    fprintf(f, "</b></div><div>[");
    cJSON_ArrayForEach(p, pls) fprintf(f, "%s", p != pls->child ? ", " : ""),
        esc(f, cJSON_IsString(p) ? p->valuestring : "?");
    fprintf(f, "]</div>\n");
    if (ndim >= 0 && pc->has_mesh) layout_pic(f, pc, pls, ndim, shape);
    int n = cJSON_GetArraySize(recv);
    size_t *v = n > 0 ? lt__malloc(sizeof(size_t) * (size_t)n) : NULL;
    for (int r = 0; v && r < n; r++) v[r] = (size_t)cJSON_GetArrayItem(recv, r)->valuedouble;
    if (v) lt__pic_bars(f, v, n);
    lt__free(v);
    fprintf(f, "</div>\n");
}

static void plan_diagram(FILE *f, const lt__pic_case *pc, const cJSON *rd) {
    int ndim = -1;
    int64_t shape[LT_MAX_DIMS];
    const char *name = lt__pic_str(rd, "tensor");
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(rd, "global_shape"), *e;
    int known = 0;
    if (cJSON_IsArray(gs) && cJSON_GetArraySize(gs) <= LT_MAX_DIMS) { /* a report that says it */
        ndim = 0, known = 1;
        cJSON_ArrayForEach(e, gs) shape[ndim++] = (int64_t)e->valuedouble;
    } else {
        known = shape_of(pc, name, &ndim, shape);
    }
    for (int d = 0; known && d < ndim; d++) known = shape[d] >= 0 && shape[d] <= ((int64_t)1 << 53);
    if (!known) ndim = -1;
    fprintf(f, "<h3>redistribute of '");
    esc(f, name);
    fprintf(f, "' at ");
    esc(f, lt__pic_str(rd, "at"));
    fprintf(f, "</h3>\n");
    if (!known || !pc->has_mesh)
        fprintf(f, "<p class=\"lt-left\">No layout pictures: the report does not record this "
                   "tensor's shape "
                   "(`localtensor redistribute --html` draws them).</p>\n");
    fprintf(f, "<div class=\"lt-plan\">\n");
    plan_column(f, pc, "source", cJSON_GetObjectItemCaseSensitive(rd, "from"), ndim, shape, NULL);
    const cJSON *st;
    char head[256];
    int k = 0;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(rd, "plan")) {
        if (++k > MAX_COLS) break;
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(st, "mesh_dim");
        snprintf(head, sizeof head, "step %d: mesh dim %d, %s", k, md ? md->valueint : -1,
                 lt__pic_str(st, "action"));
        plan_column(f, pc, head, cJSON_GetObjectItemCaseSensitive(st, "placements_after"), ndim,
                    shape, cJSON_GetObjectItemCaseSensitive(st, "bytes_recv"));
    }
    fprintf(f, "</div>\n");
}

/* ---- the page ------------------------------------------------------------------------------ */

static lt_status case_section(const lt__pic_case *pc, rh_ctx *h) {
    FILE *f = h->f;
    const char *stt = status_of(pc->c);
    long at = ftell(f);
    if (at > LT_RUN_HTML_BUDGET) {
        h->left_out++;
        fprintf(f, "<p id=\"c%d\">", pc->index);
        esc(f, lt__pic_str(pc->c, "name"));
        fprintf(f, ": %s (not drawn: the page is full)</p>\n", stt);
        return LT_OK;
    }
    fprintf(f, "<h2 id=\"c%d\">", pc->index);
    esc(f, lt__pic_str(pc->c, "name"));
    fprintf(f, " <span class=\"%s\">%s</span></h2>\n<p>",
            strcmp(stt, "passed") ? "lt-bad" : "lt-pass", stt);
    esc(f, pc->path);
    if (pc->has_mesh) {
        char ms[128];
        fprintf(f, ", mesh %s (%d ranks)", lt_mesh_format(&pc->mesh, ms, sizeof ms),
                pc->mesh.world);
    }
    fprintf(f, "</p>\n");
    const cJSON *x, *rd;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(pc->c, "failures")) {
        fprintf(f, "<pre class=\"lt-fail\">");
        esc(f, lt__pic_str(x, "message"));
        fprintf(f, "</pre>\n");
    }
    lanes_svg(f, pc);
    int k = 0;
    cJSON_ArrayForEach(rd, cJSON_GetObjectItemCaseSensitive(pc->c, "redistributes")) {
        if (k++ == MAX_PLANS) {
            fprintf(f, "<p class=\"lt-left\">Left out: %d more redistributes.</p>\n",
                    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(pc->c, "redistributes")) -
                        MAX_PLANS);
            break;
        }
        plan_diagram(f, pc, rd);
    }
    return LT_OK;
}

static lt_status rh_case(const lt__pic_case *pc, void *ctx) {
    rh_ctx *h = ctx;
    return h->pass == 0 ? failures_list(pc, h) : case_section(pc, h);
}

lt_status lt_picture_run_html(FILE *f, const cJSON *report, const cJSON *info) {
    const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(report, "counts");
    char title[256];
    int np = cJSON_GetObjectItemCaseSensitive(cnt, "passed")
                 ? cJSON_GetObjectItemCaseSensitive(cnt, "passed")->valueint
                 : 0;
    int nf = cJSON_GetObjectItemCaseSensitive(cnt, "failed")
                 ? cJSON_GetObjectItemCaseSensitive(cnt, "failed")->valueint
                 : 0;
    int ne = cJSON_GetObjectItemCaseSensitive(cnt, "errors")
                 ? cJSON_GetObjectItemCaseSensitive(cnt, "errors")->valueint
                 : 0;
    snprintf(title, sizeof title, "localtensor run: %d passed, %d failed, %d error%s", np, nf, ne,
             ne == 1 ? "" : "s");
    lt_picture_html_begin(f, title);
    fprintf(f, "<p>Lanes: one per rank; a box is a step (grey) or a collective (blue), a dark line "
               "joins the "
               "ranks of one group's matched call. Red: would hang / first divergence.</p>\n");
    rh_ctx h = {f, 0, 0, 0};
    lt_status st = lt__pic_walk(report, info, rh_case, &h);
    if (!st && !h.nbad) fprintf(f, "<p class=\"lt-pass\">No failures.</p>\n");
    h.pass = 1;
    if (!st) st = lt__pic_walk(report, info, rh_case, &h);
    if (h.left_out)
        fprintf(f,
                "<p class=\"lt-left\">Left out: %d cases not drawn (the page stops drawing at %ld "
                "KB; run "
                "fewer cases with -k to see them).</p>\n",
                h.left_out, LT_RUN_HTML_BUDGET / 1024);
    lt_picture_html_end(f);
    return st;
}
