/* tools/cli_show.c — `localtensor show`: what every rank holds for a layout. */
#include <stdlib.h>
#include <string.h>

#include "localtensor/localtensor.h"
#include "tools/cli.h"
#include "tools/render.h"

static void show_usage(FILE *f) {
    fprintf(f,
            "usage: localtensor show --mesh M --shape S --placements P [--dtype D] [--init I] [--json]\n"
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
            "\n"
            "Exit codes: 0 ok, 2 bad input.\n");
}

/* Parsed common layout arguments (also used by `redistribute`). */
typedef struct show_args {
    const char *mesh, *shape, *placements, *dtype, *init;
    int json;
} show_args;

int lt_cli_show(int argc, char **argv) {
    show_args a = {NULL, NULL, NULL, "f32", "arange", 0};
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            show_usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--json")) { a.json = 1; continue; }
#define OPT(name, field)                                                    \
        if ((r = lt_cli_opt(argc, argv, &i, name, &v)) != 0) {              \
            if (r < 0) return lt_cli_fail("show", LT_INVALID);              \
            a.field = v;                                                    \
            continue;                                                       \
        }
        OPT("--mesh", mesh)
        OPT("--shape", shape)
        OPT("--placements", placements)
        OPT("--dtype", dtype)
        OPT("--init", init)
#undef OPT
        fprintf(stderr, "localtensor show: unknown argument '%s'\n\n", argv[i]);
        show_usage(stderr);
        return 2;
    }
    if (!a.mesh || !a.shape || !a.placements) {
        fprintf(stderr, "localtensor show: --mesh, --shape and --placements are required\n\n");
        show_usage(stderr);
        return 2;
    }
    lt_mesh mesh;
    int ndim, np;
    int64_t shape[LT_MAX_DIMS];
    lt_placement pl[LT_MESH_MAX_DIMS];
    lt_dtype dt;
    lt_init init;
    lt_status st;
    if ((st = lt_mesh_parse(a.mesh, &mesh))) return lt__err_ctx(st, "--mesh"), lt_cli_fail("show", st);
    if ((st = lt_cli_parse_shape(a.shape, &ndim, shape))) return lt__err_ctx(st, "--shape"), lt_cli_fail("show", st);
    if ((st = lt_placements_parse(a.placements, pl, LT_MESH_MAX_DIMS, &np)))
        return lt__err_ctx(st, "--placements"), lt_cli_fail("show", st);
    if ((st = lt_dtype_parse(a.dtype, &dt))) return lt__err_ctx(st, "--dtype"), lt_cli_fail("show", st);
    if ((st = lt_init_parse(a.init, &init))) return lt__err_ctx(st, "--init"), lt_cli_fail("show", st);
    lt_dtensor *d = NULL;
    if ((st = lt_dtensor_init(&mesh, dt, ndim, shape, pl, np, &init, &d)))
        return lt__err_ctx(st, "--placements %s", a.placements), lt_cli_fail("show", st);
    if (a.json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "mesh", lt_json_mesh(&mesh));
        cJSON_AddItemToObject(o, "global_shape", lt_json_i64_array(d->shape, d->ndim));
        cJSON_AddStringToObject(o, "dtype", lt_dtype_name(dt));
        cJSON_AddItemToObject(o, "placements", lt_json_placements(d->placements, mesh.ndim));
        cJSON_AddItemToObject(o, "ranks", lt_json_ranks(d));
        st = lt_json_print(stdout, o);
        cJSON_Delete(o);
    } else {
        lt_render_header(stdout, d);
        st = lt_render_ranks(stdout, d, 64);
        if (!st) {
            fputc('\n', stdout);
            st = lt_render_picture(stdout, d);
        }
    }
    lt_dtensor_free(d);
    return st ? lt_cli_fail("show", st) : 0;
}
