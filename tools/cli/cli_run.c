/* tools/cli/cli_run.c — `localtensor run PATH... [-k FILTER] [-v] [--json FILE]
 * [--junit FILE] [--fail-fast]`: parses the arguments and hands the paths to
 * the scenario driver (lt_sc_run_paths, tools/scenario/scenario_driver.c),
 * which prints one line per scenario (or per case with -v; a sweep gets one
 * line unless it fails) and closes with "N passed, N failed, N errors".
 *
 * Exit: 0 all passed, 1 a check failed, 2 a file could not be loaded, a step
 * failed unexpectedly, nothing was run (no file found, no case matches -k),
 * or the arguments / report files were bad.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/alloc.h"
#include "tools/cli/cli.h"
#include "localtensor/numerics.h"
#include "tools/scenario/scenario.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: localtensor run PATH... [-k FILTER] [-v] [--json FILE] [--junit FILE] [--fail-fast] [--trace]\n"
            "                       [--numerics full|sample:K|none]\n"
            "\n"
            "Runs YAML scenario files (directories are searched for *.yaml / *.yml).\n"
            "  -k FILTER      run only cases whose name or file path contains FILTER (repeatable)\n"
            "  -v, --verbose  one line per sweep case; print `show` pictures\n"
            "  --json FILE    write every scenario, case, check and failure as JSON\n"
            "  --junit FILE   write JUnit XML for CI\n"
            "  --fail-fast    stop at the first failing case\n"
            "  --trace        print each case's op log (placements, implicit redistributes with\n"
            "                 their plans) and comm table (bytes per rank); in --json too\n"
            "  --numerics N   run every case in numerics mode N (overrides the files' numerics:):\n"
            "                 full, sample:K (values for K ranks only) or none (no values)\n"
            "Exit: 0 all passed, 1 a check failed, 2 a file could not be loaded, a step errored,\n"
            "or nothing was run (no scenario file found, or no case matches -k).\n"
            "The format of scenario files: scenarios/README.md.\n");
}

int lt_sc_main(int argc, char **argv, FILE *out, FILE *err) {
    lt_sc_options o;
    memset(&o, 0, sizeof o);
    o.out = out;
    o.err = err;
    const char **paths = lt__calloc((size_t)(argc > 0 ? argc : 1), sizeof *paths);
    const char **filters = lt__calloc((size_t)(argc > 0 ? argc : 1), sizeof *filters);
    int np = 0, nf = 0, code = -1;
    if (!paths || !filters) {
        fprintf(err, "localtensor run: out of memory\n");
        code = 2;
    }
    for (int i = 1; i < argc && code < 0; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(out);
            code = 0;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            o.verbose = 1;
        } else if (!strcmp(a, "--trace")) {
            o.trace = 1;
        } else if (!strcmp(a, "--fail-fast") || !strcmp(a, "-x")) {
            o.fail_fast = 1;
        } else if (!strcmp(a, "--numerics") || !strncmp(a, "--numerics=", 11)) {
            const char *v = a[10] == '=' ? a + 11 : i + 1 < argc ? argv[++i] : NULL;
            lt_numerics nm;
            if (!v) {
                fprintf(err, "localtensor run: --numerics needs a value\n");
                code = 2;
            } else if (lt_numerics_parse(v, &nm)) {
                fprintf(err, "localtensor run: --numerics: %s\n", lt_errmsg());
                code = 2;
            } else {
                o.numerics = v;
            }
        } else if (!strcmp(a, "-k") || !strcmp(a, "--json") || !strcmp(a, "--junit")) {
            if (i + 1 >= argc) {
                fprintf(err, "localtensor run: %s needs a value\n", a);
                code = 2;
                break;
            }
            const char *v = argv[++i];
            if (a[1] == 'k') filters[nf++] = v;
            else if (!strcmp(a, "--json")) o.json_path = v;
            else o.junit_path = v;
        } else if (!strncmp(a, "-k", 2)) {
            filters[nf++] = a + 2;
        } else if (!strncmp(a, "--json=", 7)) {
            o.json_path = a + 7;
        } else if (!strncmp(a, "--junit=", 8)) {
            o.junit_path = a + 8;
        } else if (a[0] == '-' && a[1]) {
            fprintf(err, "localtensor run: unknown option '%s'\n", a);
            usage(err);
            code = 2;
        } else {
            paths[np++] = a;
        }
    }
    if (code < 0 && np == 0) {
        fprintf(err, "localtensor run: no scenario files or directories given\n");
        usage(err);
        code = 2;
    }
    if (code < 0) {
        o.filters = filters;
        o.nfilters = nf;
        const char *nc = getenv("NO_COLOR");
        o.color = !(nc && nc[0]) && isatty(fileno(out));
        o.progress = isatty(fileno(err));
        code = lt_sc_run_paths(paths, np, &o);
    }
    lt__free(paths);
    lt__free(filters);
    return code;
}

int lt_cli_run(int argc, char **argv) { return lt_sc_main(argc, argv, stdout, stderr); }
