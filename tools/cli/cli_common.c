/* tools/cli/cli_common.c — exit codes, error printing, color, shape and option
 * parsing shared by the subcommands. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/alloc.h"
#include "localtensor/kernels/tensor.h"
#include "tools/cli/cli.h"
#include "kernels/status_impl.h"

int lt_cli_exit_code(lt_status st) {
    if (st == LT_OK) return 0;
    if (st == LT_MISMATCH) return 1;
    return 2;
}

/* The command line, for lt_cli_print (set once by main). */
static int g_argc;
static char **g_argv;

void lt_cli_set_args(int argc, char **argv) {
    g_argc = argc;
    g_argv = argv;
}

const char *lt_cli_echo(const char *arg, char *buf) {
    return lt__echo(arg, LT_CLI_ECHO_MAX, buf, LT_CLI_ECHO_BUF);
}

/* run[i] (i <= n): the longest run of msg[n] from i that echoes a long argument of
 * the command line (more than LT_CLI_ECHO_MAX bytes): the argument's
 * beginning (all of it, or up to where the message was cut) or its end
 * (from where the message was cut); 0 where none starts. */
static void echo_runs(const char *msg, size_t n, size_t *run) {
    memset(run, 0, (n + 1) * sizeof *run);
    for (int k = 1; k < g_argc; k++) {
        const char *a = g_argv[k];
        size_t len = strlen(a);
        if (len <= LT_CLI_ECHO_MAX) continue;
        for (size_t i = 0; i < n; i++) {
            size_t m = 0;   /* a's beginning from i */
            while (m < len && msg[i + m] == a[m]) m++;
            if (m > run[i]) run[i] = m;
            size_t r = 0;   /* a's end, up to i + 1 */
            while (r <= i && r < len && msg[i - r] == a[len - 1 - r]) r++;
            if (r > run[i + 1 - r]) run[i + 1 - r] = r;
        }
    }
}

void lt_cli_print(FILE *f, const char *cmd, const char *msg) {
    size_t n = strlen(msg);
    char *copy = lt__malloc(n + 1), e[LT_CLI_ECHO_BUF];
    size_t *run = lt__malloc((n + 1) * sizeof *run);
    fprintf(f, "localtensor%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    if (!copy || !run) {   /* out of memory: escaped, not cut */
        lt__fputs_echo(msg, 1, f);
        fputc('\n', f);
        lt__free(copy);
        lt__free(run);
        return;
    }
    memcpy(copy, msg, n + 1);
    echo_runs(msg, n, run);
    size_t plain = 0;
    for (size_t i = 0; i < n;) {
        if (run[i] <= LT_CLI_ECHO_MAX) {
            i++;
            continue;
        }
        size_t end = i + run[i];
        /* an argument's beginning and end on either side of where the
         * message was cut (kernels/status.c): one run */
        if (!strncmp(msg + end, " ... ", 5) && run[end + 5] > LT_CLI_ECHO_MAX)
            end += 5 + run[end + 5];
        copy[i] = '\0';   /* the text before the run */
        lt__fputs_echo(copy + plain, 1, f);
        copy[i] = msg[i];
        copy[end] = '\0';
        fputs(lt__echo(copy + i, LT_CLI_ECHO_MAX, e, sizeof e), f);
        copy[end] = msg[end];
        plain = i = end;
    }
    lt__fputs_echo(copy + plain, 1, f);
    fputc('\n', f);
    lt__free(copy);
    lt__free(run);
}

int lt_cli_fail(const char *cmd, lt_status st) {
    lt_cli_print(stderr, cmd, lt_errmsg()[0] ? lt_errmsg() : lt_status_name(st));
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
        if (n == LT_MAX_DIMS)
            return lt__err(LT_INVALID, "shape '%s': more than %d dims", s, LT_MAX_DIMS);
        if (*p == '-') return lt__err(LT_INVALID, "shape '%s': sizes must be >= 0", s);
        if (!isdigit((unsigned char)*p))
            return lt__err(LT_INVALID, "shape '%s': '%c' is not a digit (expected e.g. 5 or 5,7)",
                           s, *p);
        int64_t v = 0;
        while (isdigit((unsigned char)*p)) {
            int digit = *p - '0';
            if (v > (INT64_MAX - digit) / 10)
                return lt__err(
                    LT_OVERFLOW,
                    "shape '%s': a size is more than %lld, the largest a 64-bit size holds", s,
                    (long long)INT64_MAX);
            v = v * 10 + digit;
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
    /* the element count must fit in 64 bits; its bytes depend on the dtype
     * (checked by lt_cli_parse_layout) */
    int64_t numel;
    lt_status st = lt__numel_checked(n, shape, 1, &numel);
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
            char e[LT_CLI_ECHO_BUF];
            fprintf(stderr, "localtensor %s: unknown argument '%s'\n\n", cmd, lt_cli_echo(a, e));
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

/* The global tensor alone must fit in this machine's memory, and its
 * bytes (of the dtype's element size) in its address space: when they do
 * not, the shape is what to change, whatever the placements (a layout's
 * shards hold at least one copy of every element). */
static lt_status check_global_size(const char *shape_s, const lt_cli_layout *l) {
    int64_t numel;
    size_t es = lt_dtype_size(l->dtype);
    char e[LT_CLI_ECHO_BUF];
    LT_TRY(lt__numel_checked(l->ndim, l->shape, 1, &numel));
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    double bytes = (double)numel * (double)es, phys = (double)pages * (double)psize;
    if (pages > 0 && psize > 0 && bytes > phys)
        return lt__err(
            LT_NOMEM,
            "--shape %s: the tensor has %lld elements (%.1f GiB of %s) before any sharding, "
            "more than this machine's %.1f GiB of memory",
            lt_cli_echo(shape_s, e), (long long)numel, bytes / 1073741824.0,
            lt_dtype_name(l->dtype), phys / 1073741824.0);
    if (bytes > (double)(SIZE_MAX / 2))
        return lt__err(
            LT_NOMEM,
            "--shape %s: the tensor has %lld elements of %zu bytes (%s), %.3g bytes: more "
            "than this machine can address",
            lt_cli_echo(shape_s, e), (long long)numel, es, lt_dtype_name(l->dtype), bytes);
    return LT_OK;
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
