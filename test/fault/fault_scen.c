/* test/fault/fault_scen.c — one scenario file through `localtensor run`
 * (lt_sc_main, with --fail-fast, --trace and --json) as a workload of the fault-injection driver.
 *
 * The loader, the runner, every step and the reports run in process, so a
 * run costs only the work up to its fault. The first run (record) is the
 * baseline: its exit code, its text output and its JSON report with the
 * timings taken out. A later run passes when it stops with exit code 2 and
 * "out of memory" in its output, or gives exactly the baseline (the failed
 * allocation was optional, e.g. a cache entry, and the result is unchanged);
 * anything else is a broken contract: a check that fails or passes because
 * memory ran out, a silently different report, a wrong exit code. */
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "test/fault/fault.h"
#include "tools/cli/cli.h"
#include "tools/scenario/scenario.h"

/* Reads a whole file into a new NUL-terminated buffer (malloc; the caller
 * frees), or NULL. Not through lt__malloc: this is the test's memory. */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb, cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - 1 - n, f);
        if (k == 0) break;
        n += k;
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static int is_num(char c) {
    return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == '-' || c == '+';
}

/* Removes what varies from run to run, in place: "(0.3 ms)"-style
 * durations in the text, the numbers of "time_s" keys in the JSON. */
static void normalize(char *s) {
    char *w = s;
    for (const char *r = s; *r;) {
        if (*r == '(' && r[1] >= '0' && r[1] <= '9') {
            const char *q = r + 1;
            while (is_num(*q)) q++;
            if (*q == ' ') {
                q++;
                while (*q >= 'a' && *q <= 'z') q++;
                if (*q == ')') {
                    r = q + 1;
                    continue;
                }
            }
        }
        if (!strncmp(r, "\"time_s\":", 9)) {
            const char *q = r + 9;
            while (*q == ' ' || *q == '\t') q++;
            while (is_num(*q)) q++;
            r = q;
            continue;
        }
        *w++ = *r++;
    }
    *w = '\0';
}

/* The first line where a and b differ, for the report. */
static void first_diff(const char *a, const char *b, char *out, size_t n) {
    int line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') line++, la = a + 1, lb = b + 1;
        a++, b++;
    }
    int ka = (int)strcspn(la, "\n"), kb = (int)strcspn(lb, "\n");
    snprintf(out, n, "line %d: '%.*s' instead of '%.*s'", line, ka > 200 ? 200 : ka, la,
             kb > 200 ? 200 : kb, lb);
}

int fault_scen_workload(void *ctx, const char *tmp) {
    fault_scen *sc = ctx;
    char out_path[512], json_path[512];
    snprintf(out_path, sizeof out_path, "%s.out", tmp);
    snprintf(json_path, sizeof json_path, "%s.json", tmp);
    remove(json_path);
    FILE *out = fopen(out_path, "w");
    if (!out) return fault_broken(sc->path, "cannot write %s", out_path);
    /* --fail-fast: a run stops at the case where memory ran out (the
     * baseline passes every case, so it runs them all) */
    char *argv[] = {"run", "--fail-fast", "--trace", (char *)sc->path, "--json", json_path, NULL};
    int code = lt_sc_main(6, argv, out, out);
    fclose(out);
    char *text = slurp(out_path), *json = slurp(json_path);
    if (!text) {
        free(json);
        return fault_broken(sc->path, "cannot read %s", out_path);
    }
    normalize(text);
    if (json) normalize(json);
    int rc;
    if (sc->record) {
        sc->base_code = code;
        sc->base_out = text;
        sc->base_json = json;
        return FAULT_DONE;
    }
    int same_json =
        (!json && !sc->base_json) || (json && sc->base_json && !strcmp(json, sc->base_json));
    if (code == sc->base_code && !strcmp(text, sc->base_out) && same_json) {
        rc = FAULT_DONE;
    } else if (code == 2 && lt__fault_fired() && strstr(text, "out of memory")) {
        rc = FAULT_OOM;
        if (fault_verbose) {
            const char *m = strstr(text, "out of memory");
            const char *b = m;
            while (b > text && b[-1] != '\n') b--;
            fprintf(stderr, "  %.*s\n", (int)strcspn(b, "\n"), b);
        }
    } else {
        char d[600] = "";
        if (code == sc->base_code && !strcmp(text, sc->base_out))
            first_diff(json ? json : "", sc->base_json ? sc->base_json : "", d, sizeof d);
        else first_diff(text, sc->base_out, d, sizeof d);
        rc = fault_broken(sc->path, "exit %d (baseline %d), %s; %s", code, sc->base_code,
                          code == sc->base_code && !strcmp(text, sc->base_out)
                              ? "the JSON report differs"
                              : "the output differs",
                          d);
    }
    free(text);
    free(json);
    return rc;
}

void fault_scen_free(fault_scen *s) {
    free(s->base_out);
    free(s->base_json);
    s->base_out = s->base_json = NULL;
}
