/* tools/cli/cli_run.c — `localtensor run PATH... [-k FILTER] [-v] [--json FILE]
 * [--junit FILE] [--fail-fast] [--trace] [--world N] [--engine inproc|mpi]
 * [--cross-check] [--compare-backend NAME]`: parses the arguments and hands the paths to
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
#include "localtensor/kernels/backend.h"
#include "tools/cli/cli.h"
#include "localtensor/numerics.h"
#include "tools/scenario/scenario.h"
#include "tools/picture/picture.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: localtensor run PATH... [-k FILTER] [-v] [--json FILE] [--junit FILE] "
        "[--fail-fast] [--trace]\n"
        "                       [--single-device]\n"
        "                       [--numerics full|sample:K|none] [--world N]\n"
        "                       [--engine inproc|mpi] [--shards all|owned] [--cross-check]\n"
        "                       [--compare-backend NAME] [--html FILE] [--timeline FILE]\n"
        "\n"
        "Runs YAML scenario files (directories are searched for *.yaml / *.yml; each real\n"
        "directory is walked once and each file run once, however many links reach them).\n"
        "  -k FILTER      run only cases whose name or file path contains FILTER (repeatable)\n"
        "  -v, --verbose  one line per sweep case; print `show` pictures\n"
        "  --json FILE    write every scenario, case, check and failure as JSON\n"
        "  --junit FILE   write JUnit XML for CI\n"
        "  --fail-fast    stop at the first failing case\n"
        "  --trace        print each case's op log (placements, implicit redistributes with\n"
        "                 their plans) and comm table (bytes per rank); in --json too\n"
        "  --single-device  leave out every case's own checks (the steps an expect_error\n"
        "                 wraps run as they are; from_local checks nothing) and end each case\n"
        "                 with expect_same_as_single_device: where does the program first\n"
        "                 depart from the same program on one device? (docs/SEMANTICS.md §11.8)\n"
        "  --numerics N   run every case in numerics mode N (overrides the files' numerics:):\n"
        "                 full, sample:K (values for K ranks only) or none (no values)\n"
        "  --engine NAME  inproc (default), or mpi under mpirun: each process owns a contiguous\n"
        "                 block of every case's ranks and their collectives run on MPI; process 0\n"
        "                 writes the reports (docs/engines.md §1)\n"
        "  --shards S     with --engine mpi: all (default: every process also holds the other\n"
        "                 ranks' shards, so every step runs) or owned (a process holds only its\n"
        "                 own ranks' shards: memory per process shrinks with the process count;\n"
        "                 the steps of --numerics sample run, redistributes on MPI)\n"
        "  --world N      run only the cases whose mesh has N ranks (with mpirun -np N and\n"
        "                 --engine mpi: one process per simulated rank)\n"
        "  --cross-check  with --engine mpi: every collective that spans processes is also run\n"
        "                 in-process; a byte that differs is an error naming the rank\n"
        "  --compare-backend NAME  run every case on backend NAME (cpu, cuda, cuda-emu) first,\n"
        "                 then on its own (--backend), and compare every value each step stores,\n"
        "                 shard by shard: the same bytes, or within the dtype's tolerance\n"
        "  --html FILE    also draw the run as one self-contained HTML page: failures first,\n"
        "                 per case its steps as lanes (one per rank; would-hang and\n"
        "                 divergence marked) and its redistribute plans (docs/pictures.md)\n"
        "  --timeline FILE  also write the run as Chrome Trace Event JSON (Perfetto,\n"
        "                 chrome://tracing): one process per rank, flows join matched calls\n"
        "                 (both run the selected cases once more, traced and quietly)\n"
        "Exit: 0 all passed, 1 a check failed, 2 a file could not be loaded, a step errored,\n"
        "nothing was run (no scenario file found, or no case matches -k), or the output or a\n"
        "report file could not be written (a report is written whole or not at all).\n"
        "The format of scenario files: scenarios/README.md.\n");
}

const lt_cli_mpi *lt_cli_mpi_hooks = NULL;

/* `run --engine mpi`: every process runs every case (so each finds the
 * communicators the others create); process 0 alone writes the reports. */
static int run_mpi(lt_sc_options *o, const char **paths, int np, const char **filters, int nf,
                   int cross_check, int owned, FILE *out, FILE *err) {
    const lt_cli_mpi *h = lt_cli_mpi_hooks;
    int proc = 0, nproc = 1;
    int code = h->begin(cross_check, owned, err, &proc, &nproc);
    if (code >= 0) return code;
    FILE *null = NULL;
    o->filters = filters;
    o->nfilters = nf;
    o->engine = h->engine();
    o->engine_name = "mpi";
    o->case_agree = h->case_agree;
    o->step_agree = h->step_agree;
    o->nproc = nproc;
    o->owned = owned;
    if (proc == 0) {
        const char *nc = getenv("NO_COLOR");
        o->color = !(nc && nc[0]) && isatty(fileno(out));
        o->progress = isatty(fileno(err));
        if (owned)
            fprintf(err,
                    "localtensor run --engine mpi --shards owned: %d process%s; each case's ranks "
                    "are split "
                    "into %d contiguous block%s (a mesh with fewer ranks uses the first "
                    "processes), and a "
                    "process holds only its own block's shards.\n",
                    nproc, nproc == 1 ? "" : "es", nproc, nproc == 1 ? "" : "s");
        else
            fprintf(err,
                    "localtensor run --engine mpi: %d process%s; each case's ranks are split into "
                    "%d contiguous "
                    "block%s (a mesh with fewer ranks uses the first processes). Every process "
                    "also holds the "
                    "other ranks' shards: memory per process is that of an in-process run "
                    "(--shards owned "
                    "leaves them out).\n",
                    nproc, nproc == 1 ? "" : "es", nproc, nproc == 1 ? "" : "s");
    } else {
        /* the run must go on (the others wait for this process's collectives) */
        null = fopen("/dev/null", "w");
        if (!null)
            fprintf(
                err,
                "localtensor run: process %d: cannot open /dev/null; its report goes to stderr\n",
                proc);
        o->out = o->err = null ? null : err;
        o->json_path = o->junit_path = NULL;
        o->color = o->progress = 0;
    }
    code = lt_sc_run_paths(paths, np, o);
    code = h->agree_exit(null || proc == 0 ? code : 2);
    if (null) fclose(null);
    h->end();
    return code;
}

/* --compare-backend V into o: 0, or 2 after printing why to err. */
static int compare_backend_opt(const char *v, lt_sc_options *o, FILE *err) {
    char e[LT_CLI_ECHO_BUF], msg[LT_CLI_ECHO_BUF + 2100];
    const lt_backend *b = NULL;
    if (!v) {
        fprintf(err, "localtensor run: --compare-backend needs a value (cpu, cuda or cuda-emu)\n");
        return 2;
    }
    if (lt_backend_by_name(v, &b)) {
        snprintf(msg, sizeof msg, "--compare-backend %s: %s", lt_cli_echo(v, e), lt_errmsg());
        lt_cli_print(err, "run", msg);
        return 2;
    }
    o->compare_backend = b;
    return 0;
}

/* --numerics V into o: 0, or 2 after printing why to err. */
static int numerics_opt(const char *v, lt_sc_options *o, FILE *err) {
    lt_numerics nm;
    char msg[2100];
    if (!v) {
        fprintf(err, "localtensor run: --numerics needs a value\n");
        return 2;
    }
    if (lt_numerics_parse(v, &nm)) {
        snprintf(msg, sizeof msg, "--numerics: %s", lt_errmsg());
        lt_cli_print(err, "run", msg);
        return 2;
    }
    o->numerics = v;
    return 0;
}

/* --html / --timeline (either NULL: not asked) after the run that returned
 * code: the run's exit code, or 2 after printing why the pictures could not
 * be drawn (tools/picture/picture.h). */
static int draw_run(const char **paths, int np, const lt_sc_options *o, const char *html,
                    const char *timeline, int code) {
    if (lt_picture_run(paths, np, o, html, timeline) == LT_OK) return code;
    lt_cli_print(o->err, "run", lt_errmsg());
    return 2;
}

/* `run`'s command line as it is read. paths and filters: (argc) borrowed
 * from argv, freed by lt_sc_main. */
typedef struct run_args {
    lt_sc_options o;
    const char **paths, **filters;
    int np, nf, cross_check, owned;   /* owned: -1 unless --shards */
    const char *html, *timeline, *engine;
    FILE *out, *err;
} run_args;

/* --world N: the cases whose mesh has N ranks. Returns -1, or 2 (said). */
static int opt_world(run_args *ra, int argc, char **argv, int *i) {
    char e[LT_CLI_ECHO_BUF], *end = NULL;
    long w = *i + 1 < argc ? strtol(argv[*i + 1], &end, 10) : 0;
    if (*i + 1 >= argc || !end || *end || w < 1 || w > 65536) {
        fprintf(ra->err, "localtensor run: --world needs a number of ranks 1..65536%s%s%s\n",
                *i + 1 < argc ? " (got '" : "", *i + 1 < argc ? lt_cli_echo(argv[*i + 1], e) : "",
                *i + 1 < argc ? "')" : "");
        return 2;
    }
    ra->o.world = (int)w;
    (*i)++;
    return -1;
}

/* --shards all|owned (value v, NULL when missing). */
static int opt_shards(run_args *ra, const char *v) {
    char e[LT_CLI_ECHO_BUF];
    if (!v || (strcmp(v, "all") && strcmp(v, "owned"))) {
        fprintf(ra->err, "localtensor run: --shards needs a value: all or owned%s%s%s\n",
                v ? " (got '" : "", v ? lt_cli_echo(v, e) : "", v ? "')" : "");
        return 2;
    }
    ra->owned = !strcmp(v, "owned");
    return -1;
}

/* --engine inproc|mpi (value v, NULL when missing). */
static int opt_engine(run_args *ra, const char *v) {
    char e[LT_CLI_ECHO_BUF];
    if (!v) {
        fprintf(ra->err, "localtensor run: --engine needs a value (inproc or mpi)\n");
        return 2;
    }
    ra->engine = v;
    if (!strcmp(v, "inproc") || !strcmp(v, "mpi")) return -1;
    fprintf(ra->err, "localtensor run: --engine: unknown engine '%s' (expected inproc or mpi)\n",
            lt_cli_echo(v, e));
    return 2;
}

/* -k, --json, --junit, --html, --timeline (option a) with the next
 * argument as its value. */
static int opt_valued(run_args *ra, const char *a, int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        fprintf(ra->err, "localtensor run: %s needs a value\n", a);
        return 2;
    }
    const char *v = argv[++*i];
    if (a[1] == 'k') ra->filters[ra->nf++] = v;
    else if (!strcmp(a, "--json")) ra->o.json_path = v;
    else if (!strcmp(a, "--html")) ra->html = v;
    else if (!strcmp(a, "--timeline")) ra->timeline = v;
    else ra->o.junit_path = v;
    return -1;
}

/* The value of option name (length n) given as "name=VALUE" in a, or
 * as the next argument; NULL when missing. */
static const char *opt_value(const char *a, size_t n, int argc, char **argv, int *i) {
    if (a[n] == '=') return a + n + 1;
    return *i + 1 < argc ? argv[++*i] : NULL;
}

/* Reads argv[*i] (and its value). Returns -1 to go on, 0 after --help, 2
 * on a bad argument (said). */
static int run_arg(run_args *ra, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    char e[LT_CLI_ECHO_BUF];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(ra->out), 0;
    if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) ra->o.verbose = 1;
    else if (!strcmp(a, "--trace")) ra->o.trace = 1;
    else if (!strcmp(a, "--single-device")) ra->o.single_device = 1;
    else if (!strcmp(a, "--cross-check")) ra->cross_check = 1;
    else if (!strcmp(a, "--fail-fast") || !strcmp(a, "-x")) ra->o.fail_fast = 1;
    else if (!strcmp(a, "--world")) return opt_world(ra, argc, argv, i);
    else if (!strcmp(a, "--shards") || !strncmp(a, "--shards=", 9))
        return opt_shards(ra, opt_value(a, 8, argc, argv, i));
    else if (!strcmp(a, "--engine") || !strncmp(a, "--engine=", 9))
        return opt_engine(ra, opt_value(a, 8, argc, argv, i));
    else if (!strcmp(a, "--compare-backend") || !strncmp(a, "--compare-backend=", 18))
        return compare_backend_opt(opt_value(a, 17, argc, argv, i), &ra->o, ra->err) ? 2 : -1;
    else if (!strcmp(a, "--numerics") || !strncmp(a, "--numerics=", 11))
        return numerics_opt(opt_value(a, 10, argc, argv, i), &ra->o, ra->err) ? 2 : -1;
    else if (!strcmp(a, "-k") || !strcmp(a, "--json") || !strcmp(a, "--junit") ||
             !strcmp(a, "--html") || !strcmp(a, "--timeline"))
        return opt_valued(ra, a, argc, argv, i);
    else if (!strncmp(a, "-k", 2)) ra->filters[ra->nf++] = a + 2;
    else if (!strncmp(a, "--json=", 7)) ra->o.json_path = a + 7;
    else if (!strncmp(a, "--junit=", 8)) ra->o.junit_path = a + 8;
    else if (a[0] == '-' && a[1]) {
        fprintf(ra->err, "localtensor run: unknown option '%s'\n", lt_cli_echo(a, e));
        usage(ra->err);
        return 2;
    } else {
        ra->paths[ra->np++] = a;
    }
    return -1;
}

/* The options that do not go together, and what this build lacks: 2
 * (said) or -1. */
static int run_combination(const run_args *ra) {
    FILE *err = ra->err;
    int mpi = !strcmp(ra->engine, "mpi");
    if (ra->np == 0) {
        fprintf(err, "localtensor run: no scenario files or directories given\n");
        usage(err);
        return 2;
    }
    if (ra->cross_check && !mpi)
        fprintf(err, "localtensor run: --cross-check needs --engine mpi\n");
    else if (ra->owned >= 0 && !mpi)
        fprintf(
            err,
            "localtensor run: --shards needs --engine mpi (in one process every shard is held)\n");
    else if ((ra->html || ra->timeline) && mpi)
        fprintf(
            err,
            "localtensor run: not supported yet: %s with --engine mpi (draw an in-process run)\n",
            ra->html ? "--html" : "--timeline");
    else if (mpi && !lt_cli_mpi_hooks)
        fprintf(err,
                "localtensor run: --engine mpi: this localtensor was built without MPI (install "
                "Open MPI "
                "with `make deps` or apt-get install openmpi-bin libopenmpi-dev, then rebuild)\n");
    else return -1;
    return 2;
}

int lt_sc_main(int argc, char **argv, FILE *out, FILE *err) {
    run_args ra;
    memset(&ra, 0, sizeof ra);
    ra.o.out = ra.out = out;
    ra.o.err = ra.err = err;
    ra.owned = -1;
    ra.engine = "inproc";
    ra.paths = lt__calloc((size_t)(argc > 0 ? argc : 1), sizeof *ra.paths);
    ra.filters = lt__calloc((size_t)(argc > 0 ? argc : 1), sizeof *ra.filters);
    int code = -1;
    if (!ra.paths || !ra.filters) {
        fprintf(err, "localtensor run: out of memory\n");
        code = 2;
    }
    for (int i = 1; i < argc && code < 0; i++) code = run_arg(&ra, argc, argv, &i);
    if (code < 0) code = run_combination(&ra);
    if (code < 0 && !strcmp(ra.engine, "mpi")) {
        code = run_mpi(&ra.o, ra.paths, ra.np, ra.filters, ra.nf, ra.cross_check, ra.owned > 0, out,
                       err);
    } else if (code < 0) {
        ra.o.filters = ra.filters;
        ra.o.nfilters = ra.nf;
        const char *nc = getenv("NO_COLOR");
        ra.o.color = !(nc && nc[0]) && isatty(fileno(out));
        ra.o.progress = isatty(fileno(err));
        code = draw_run(ra.paths, ra.np, &ra.o, ra.html, ra.timeline,
                        lt_sc_run_paths(ra.paths, ra.np, &ra.o));
    }
    lt__free(ra.paths);
    lt__free(ra.filters);
    return code;
}

int lt_cli_run(int argc, char **argv) { return lt_sc_main(argc, argv, stdout, stderr); }
