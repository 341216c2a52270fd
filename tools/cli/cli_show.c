/* tools/cli/cli_show.c — `localtensor show`: what every rank holds for a layout. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "localtensor/localtensor.h"
#include "tools/cli/cli.h"
#include "tools/render/json_alloc.h"
#include "tools/render/render.h"
#include "tools/picture/picture.h"
#include "kernels/status_impl.h"

static void show_usage(FILE *f) {
    fprintf(
        f,
        "usage: localtensor show --mesh M --shape S --placements P [--dtype D] [--init I] "
        "[--json]\n"
        "                        [--svg FILE] [--html FILE]\n"
        "\n"
        "Distributes a tensor and prints what every rank holds: coordinate, local shape,\n"
        "global offset and values, with a picture of which ranks own which block.\n"
        "\n"
        "  --mesh M         8, 2x4, 2x2x2 or named dp=2,tp=4\n"
        "  --shape S        5, 5,7 or 0,3\n"
        "  --placements P   one per mesh dim, comma-separated: R, S(0), S(0,balanced),\n"
        "                   S(0,last), S(0,[3,1,0,2]), SS(0,2), P(sum|avg|max|min),\n"
        "                   or PyTorch spellings: Shard(0), Replicate(), Partial(), ...\n"
        "  --dtype D        f32 (default), f64, bf16, f16, i32, i64, bool\n"
        "  --init I         arange (default), zeros, ones, random:SEED, randn:SEED\n"
        "  --json           machine-readable output\n"
        "  --svg FILE       also draw the layout as SVG into FILE (docs/pictures.md)\n"
        "  --html FILE      also write a self-contained HTML page with the picture\n"
        "\n"
        "global_offset is the first global index a rank holds along each dim (the global size\n"
        "when the shard is empty there). A strided shard (SS, or S nested under SS) does not hold\n"
        "one contiguous run: the table marks it with '*' and --json with \"strided\": true.\n"
        "Shards of 2 or more dims print as nested rows.\n"
        "\n"
        "Exit codes: 0 ok, 2 bad input.\n");
}

typedef struct show_pic {
    const lt_dtensor *d;
    int html;
} show_pic;

static lt_status write_pic(FILE *f, void *ctx) {
    const show_pic *sp = ctx;
    const lt_dtensor *d = sp->d, *v;
    lt_dtensor vbuf;
    LT_TRY(lt_render_layout(d, &vbuf, &v));   /* a RaggedShard: its view's blocks */
    lt_pic_layout lay = {lt_dtensor_mesh(d), v->ndim, v->shape, v->placements};
    char title[800], mesh[128], shape[128], pl[512];
    lt_mesh_format(lay.mesh, mesh, sizeof mesh);
    lt_shape_format(d->ndim, d->shape, shape, sizeof shape);
    lt_placements_format(d->placements, lay.mesh->ndim, pl, sizeof pl);
    snprintf(title, sizeof title, "%s on mesh %s, shape %s", pl, mesh, shape);
    if (v->ndim != d->ndim) {   /* RaggedShard over k > 1 dims: say what is drawn */
        char vs[128];
        size_t n = strlen(title);
        snprintf(title + n, sizeof title - n, " (drawn as its rows: the view %s)",
                 lt_shape_format(v->ndim, v->shape, vs, sizeof vs));
    }
    if (!sp->html) return lt_picture_svg(f, &lay, title, 1);
    lt_picture_html_begin(f, title);
    fprintf(f, "<div class=\"lt-fig\">\n");
    lt_status st = lt_picture_svg(f, &lay, title, 0);
    fprintf(f, "</div>\n");
    lt_picture_html_end(f);
    return st;
}

/* --svg FILE and --html FILE of the layout of d (NULL: not asked). */
lt_status lt_cli_pictures(const lt_dtensor *d, const char *svg, const char *html) {
    show_pic sp = {d, 0};
    if (svg) LT_TRY(lt_picture_write_file(svg, "--svg", write_pic, &sp));
    sp.html = 1;
    if (html) LT_TRY(lt_picture_write_file(html, "--html", write_pic, &sp));
    return LT_OK;
}

int lt_cli_show(int argc, char **argv) {
    const char *mesh_s = NULL, *shape_s = NULL, *pl_s = NULL, *dtype_s = "f32", *init_s = "arange";
    const char *svg_s = NULL, *html_s = NULL;
    int json = 0;
    const lt_cli_option opts[] = {
        {"--svg", &svg_s, NULL, 0},
        {"--html", &html_s, NULL, 0},
        {"--mesh", &mesh_s, NULL, 0},
        {"--shape", &shape_s, NULL, 0},
        {"--placements", &pl_s, NULL, 0},
        {"--dtype", &dtype_s, NULL, 0},
        {"--init", &init_s, NULL, 0},
        {"--json", NULL, &json, 1},
        {NULL, NULL, NULL, 0},
    };
    int rc = lt_cli_parse_args("show", argc, argv, opts, show_usage);
    if (rc >= 0) return rc;
    if (!mesh_s || !shape_s || !pl_s) {
        fprintf(stderr, "localtensor show: --mesh, --shape and --placements are required\n\n");
        show_usage(stderr);
        return 2;
    }
    lt_cli_layout a;
    lt_placement pl[LT_MESH_MAX_DIMS];
    int np;
    lt_status st = lt_cli_parse_layout(mesh_s, shape_s, dtype_s, init_s, &a);
    if (st) return lt_cli_fail("show", st);
    if ((st = lt_placements_parse(pl_s, pl, LT_MESH_MAX_DIMS, &np)))
        return lt__err_ctx(st, "--placements"), lt_cli_fail("show", st);
    lt_dtensor *d = NULL;
    char e[LT_CLI_ECHO_BUF];
    if ((st = lt_dtensor_new(&a.mesh, a.dtype, a.ndim, a.shape, pl, np, &a.init, &d)))
        return lt__err_ctx(st, "--placements %s", lt_cli_echo(pl_s, e)), lt_cli_fail("show", st);
    if (json && (st = lt_json_ranks_check(d))) {
        lt_dtensor_free(d);
        return lt_cli_fail("show", st);
    }
    if (json) {
        lt__json_begin();
        cJSON *o = cJSON_CreateObject();
        lt__json_put(o, "mesh", lt_json_mesh(&a.mesh));
        lt__json_put(o, "global_shape", lt_json_i64_array(d->shape, d->ndim));
        cJSON_AddStringToObject(o, "dtype", lt_dtype_name(a.dtype));
        lt__json_put(o, "placements", lt_json_placements(d->placements, a.mesh.ndim));
        lt__json_put(o, "ranks", lt_json_ranks(d));
        st = lt_json_print(stdout, o);
        cJSON_Delete(o);
    } else {
        lt_render_header(stdout, d);
        if (isatty(fileno(stdout)) && a.mesh.world > 16) {
            /* a terminal: one line per local shape instead of a wall of ranks */
            const lt_dtensor *v;
            lt_dtensor vbuf;
            st = lt_render_layout(d, &vbuf, &v);   /* a RaggedShard: its view */
            lt_pic_layout lay = {&a.mesh, v->ndim, v->shape, v->placements};
            fprintf(stdout, "ranks grouped by local shape (over 16 ranks on a terminal; piped or "
                            "--json: every rank):\n");
            if (!st) st = lt_picture_shard_summary(stdout, &lay, 12);
        } else {
            st = lt_render_ranks(stdout, d, 64);
        }
        if (!st) {
            fputc('\n', stdout);
            st = lt_render_picture(stdout, d);
        }
    }
    if (!st) st = lt_cli_pictures(d, svg_s, html_s);
    lt_dtensor_free(d);
    return st ? lt_cli_fail("show", st) : 0;
}
