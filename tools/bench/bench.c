/* tools/bench/bench.c — main of build-bench/bench: runs every benchmark area,
 * prints an aligned table as rows come in, writes bench.json (a list of
 * {"name", "bytes", "seconds", "gbps", "baseline_gbps", "ratio"}).
 *
 *   build-bench/bench [PATH]     PATH defaults to build/bench.json
 *
 * Benchmarks never fail the build: they report; tests assert correctness.
 */
#include "tools/bench/bench.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* through a volatile pointer so the compiler cannot drop the copy */
static void *(*volatile bench_memcpy)(void *, const void *, size_t) = memcpy;

double lt_bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int lt_bench_want(const char *name) {
    const char *f = getenv("LT_BENCH_FILTER");
    if (!f || !*f) return 1;
    while (*f) {
        const char *bar = strchr(f, '|');
        size_t len = bar ? (size_t)(bar - f) : strlen(f);
        for (const char *p = name; len && *p; p++)
            if (strncmp(p, f, len) == 0) return 1;
        if (!bar) break;
        f = bar + 1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double lt_bench_median(double *v, int n) {
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die_nomem(void) {
    fprintf(stderr, "bench: out of memory\n");
    exit(2);
}

double lt_bench_memcpy_once(lt_bench *b, size_t bytes) {
    if (bytes > b->base_cap) {
        free(b->base_src);
        free(b->base_dst);
        b->base_src = malloc(bytes);
        b->base_dst = malloc(bytes);
        if (!b->base_src || !b->base_dst) die_nomem();
        memset(b->base_src, 1, bytes);   /* pre-touch both */
        memset(b->base_dst, 2, bytes);
        b->base_cap = bytes;
    }
    double t = lt_bench_now();
    bench_memcpy(b->base_dst, b->base_src, bytes);
    return lt_bench_now() - t;
}

static void print_header(void) {
    printf("%-52s %12s %12s %9s %9s %7s\n", "benchmark", "bytes", "time", "GB/s", "base GB/s",
           "ratio");
}

static void fmt_time(double s, char *buf, size_t n) {
    if (s < 1e-6) snprintf(buf, n, "%.0f ns", s * 1e9);
    else if (s < 1e-3) snprintf(buf, n, "%.2f us", s * 1e6);
    else if (s < 1) snprintf(buf, n, "%.2f ms", s * 1e3);
    else snprintf(buf, n, "%.2f s", s);
}

void lt_bench_add(lt_bench *b, const char *name, size_t bytes, double seconds,
                  double baseline_gbps) {
    if (b->n == b->cap) {
        size_t nc = b->cap ? 2 * b->cap : 64;
        lt_bench_row *r = realloc(b->rows, nc * sizeof *r);
        if (!r) die_nomem();
        b->rows = r;
        b->cap = nc;
    }
    lt_bench_row *r = &b->rows[b->n++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->bytes = bytes;
    r->seconds = seconds;
    r->gbps = seconds > 0 ? (double)bytes / seconds / 1e9 : NAN;
    r->baseline_gbps = baseline_gbps;
    r->ratio = isnan(baseline_gbps) || baseline_gbps <= 0 ? NAN : r->gbps / baseline_gbps;
    char t[32], base[16] = "-", ratio[16] = "-";
    fmt_time(seconds, t, sizeof t);
    if (!isnan(r->baseline_gbps)) snprintf(base, sizeof base, "%.2f", r->baseline_gbps);
    if (!isnan(r->ratio)) snprintf(ratio, sizeof ratio, "%.2f", r->ratio);
    printf("%-52s %12zu %12s %9.2f %9s %7s\n", r->name, bytes, t, r->gbps, base, ratio);
    fflush(stdout);
}

static cJSON *num_or_null(double v) {
    return isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v);
}

static int write_json(const lt_bench *b, const char *path) {
    cJSON *list = cJSON_CreateArray();
    if (!list) return 1;
    for (size_t i = 0; i < b->n; i++) {
        const lt_bench_row *r = &b->rows[i];
        cJSON *o = cJSON_CreateObject();
        if (!o) { cJSON_Delete(list); return 1; }
        cJSON_AddItemToArray(list, o);
        cJSON_AddStringToObject(o, "name", r->name);
        cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
        cJSON_AddNumberToObject(o, "seconds", r->seconds);
        cJSON_AddItemToObject(o, "gbps", num_or_null(r->gbps));
        cJSON_AddItemToObject(o, "baseline_gbps", num_or_null(r->baseline_gbps));
        cJSON_AddItemToObject(o, "ratio", num_or_null(r->ratio));
    }
    char *text = cJSON_Print(list);
    cJSON_Delete(list);
    if (!text) return 1;
    FILE *f = fopen(path, "w");
    int bad = !f || fputs(text, f) < 0 || fputc('\n', f) == EOF;
    if (f && fclose(f) != 0) bad = 1;
    cJSON_free(text);
    return bad;
}

int main(int argc, char **argv) {
    if (lt_bench_scale_child()) return 0;
    const char *path = argc > 1 ? argv[1] : "build/bench.json";
    lt_bench b;
    memset(&b, 0, sizeof b);
    double t0 = lt_bench_now();
    print_header();
    lt_bench_collectives(&b);
    lt_bench_redistribute(&b);
    lt_bench_ops(&b);
    lt_bench_program(&b);
    lt_bench_scenario(&b);
    lt_bench_numerics(&b);
    lt_bench_backend(&b);
    lt_bench_scale(&b);
    lt_bench_sweep(&b);
    lt_bench_workload(&b);
    lt_bench_train(&b);
    printf("%zu rows in %.1f s\n", b.n, lt_bench_now() - t0);
    int bad = write_json(&b, path);
    if (bad) fprintf(stderr, "bench: cannot write %s\n", path);
    else printf("wrote %s\n", path);
    free(b.rows);
    free(b.base_src);
    free(b.base_dst);
    return bad ? 1 : 0;
}
