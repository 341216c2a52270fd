/* tools/cli/cli_common.c — exit codes, error printing, color, shape and option
 * parsing shared by the subcommands. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/tensor.h"
#include "tools/cli/cli.h"
#include "kernels/status_impl.h"

int lt_cli_exit_code(lt_status st) {
    if (st == LT_OK) return 0;
    if (st == LT_MISMATCH) return 1;
    return 2;
}

int lt_cli_fail(const char *cmd, lt_status st) {
    fprintf(stderr, "localtensor %s: %s\n", cmd, lt_errmsg()[0] ? lt_errmsg() : lt_status_str(st));
    return lt_cli_exit_code(st);
}

int lt_cli_use_color(FILE *f) {
    const char *nc = getenv("NO_COLOR");
    if (nc && nc[0]) return 0;
    return isatty(fileno(f));
}

lt_status lt_cli_parse_shape(const char *s, int *ndim, int64_t *shape) {
    const char *p = s;
    while (isspace((unsigned char)*p)) p++;
    char close = 0;
    if (*p == '(') close = ')';
    if (*p == '[') close = ']';
    if (close) p++;
    int n = 0;
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p || *p == close) break;
        if (n == LT_MAX_DIMS) return lt__err(LT_INVALID, "shape '%s': more than %d dims", s, LT_MAX_DIMS);
        if (*p == '-') return lt__err(LT_INVALID, "shape '%s': sizes must be >= 0", s);
        if (!isdigit((unsigned char)*p))
            return lt__err(LT_INVALID, "shape '%s': '%c' is not a digit (expected e.g. 5 or 5,7)", s, *p);
        int64_t v = 0;
        while (isdigit((unsigned char)*p)) {
            if (v > (INT64_MAX - 9) / 10) return lt__err(LT_OVERFLOW, "shape '%s': size overflows 64 bits", s);
            v = v * 10 + (*p - '0');
            p++;
        }
        shape[n++] = v;
        while (isspace((unsigned char)*p)) p++;
        if (*p == ',') {
            p++;
            while (isspace((unsigned char)*p)) p++;
            if (!*p || *p == close) return lt__err(LT_INVALID, "shape '%s': trailing comma", s);
            continue;
        }
        if (!*p || *p == close) break;
        return lt__err(LT_INVALID, "shape '%s': unexpected '%c'", s, *p);
    }
    if (close) {
        if (*p != close) return lt__err(LT_INVALID, "shape '%s': missing '%c'", s, close);
        p++;
        while (isspace((unsigned char)*p)) p++;
        if (*p) return lt__err(LT_INVALID, "shape '%s': text after '%c'", s, close);
    }
    int64_t numel;
    lt_status st = lt__numel_checked(n, shape, 8, &numel);
    if (st) return lt__err_ctx(st, "shape '%s'", s);
    *ndim = n;
    return LT_OK;
}

int lt_cli_parse_args(const char *cmd, int argc, char **argv, const lt_cli_option *opts,
                      void (*usage)(FILE *)) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        const lt_cli_option *o = opts;
        size_t n = 0;
        for (; o->name; o++) {
            n = strlen(o->name);
            if (!strncmp(a, o->name, n) && (a[n] == '\0' || (a[n] == '=' && o->value))) break;
        }
        if (!o->name) {
            fprintf(stderr, "localtensor %s: unknown argument '%s'\n\n", cmd, a);
            usage(stderr);
            return 2;
        }
        if (!o->value) {
            *o->flag = o->flag_value;
        } else if (a[n] == '=') {
            *o->value = a + n + 1;
        } else if (i + 1 < argc) {
            *o->value = argv[++i];
        } else {
            fprintf(stderr, "localtensor %s: option %s needs a value\n\n", cmd, o->name);
            usage(stderr);
            return 2;
        }
    }
    return -1;
}

/* The global tensor alone must fit in this machine's memory: when it does
 * not, the shape is what to change, whatever the placements (a layout's
 * shards hold at least one copy of every element). */
static lt_status check_global_size(const char *shape_s, const lt_cli_layout *l) {
    int64_t numel;
    size_t es = lt_dtype_size(l->dtype);
    LT_TRY(lt__numel_checked(l->ndim, l->shape, 1, &numel));
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psize <= 0) return LT_OK;
    double bytes = (double)numel * (double)es, phys = (double)pages * (double)psize;
    if (bytes <= phys) return LT_OK;
    return lt__err(LT_NOMEM, "--shape %s: the tensor has %lld elements (%.1f GiB of %s) before any sharding, "
                   "more than this machine's %.1f GiB of memory", shape_s, (long long)numel,
                   bytes / 1073741824.0, lt_dtype_name(l->dtype), phys / 1073741824.0);
}

lt_status lt_cli_parse_layout(const char *mesh, const char *shape, const char *dtype,
                              const char *init, lt_cli_layout *out) {
    lt_status st;
    if ((st = lt_mesh_parse(mesh, &out->mesh))) return lt__err_ctx(st, "--mesh");
    if ((st = lt_cli_parse_shape(shape, &out->ndim, out->shape))) return lt__err_ctx(st, "--shape");
    if ((st = lt_dtype_parse(dtype, &out->dtype))) return lt__err_ctx(st, "--dtype");
    if ((st = lt_init_parse(init, &out->init))) return lt__err_ctx(st, "--init");
    return check_global_size(shape, out);
}
