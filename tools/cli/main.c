/* tools/cli/main.c — `localtensor`: dispatches to the subcommands of tools/cli/cli.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/alloc.h"
#include "localtensor/kernels/backend.h"
#include "kernels/blas_impl.h"
#include "kernels/memlimit_impl.h"
#include "kernels/status_impl.h"
#include "localtensor/ops.h"
#include "tools/cli/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: localtensor <command> [options]\n"
            "\n"
            "Simulates every rank of a sharded (DTensor-style) tensor program in one process.\n"
            "\n"
            "commands:\n");
#define LT__XX(name, fn, help) fprintf(f, "  %-13s %s\n", name, help);
    LT_CLI_COMMANDS(LT__XX)
#undef LT__XX
    fprintf(f,
            "\n"
            "global options (anywhere on the line):\n"
            "  --backend NAME     cpu, cuda or cuda-emu: where shards live and kernels run\n"
            "                     (default: the LT_BACKEND environment variable, else cpu)\n"
            "  --max-memory SIZE  refuse work whose shards need more than SIZE bytes (512M, 8G;\n"
            "                     the same as LOCALTENSOR_MEMORY_LIMIT)\n"
            "  --rules SET        who chooses ops' placements: pytorch (default: as PyTorch 2.15\n"
            "                     DTensor, docs/SEMANTICS.md §11.9) or min-comm (fewest bytes);\n"
            "                     a scenario's rules: key overrides it\n"
            "\n"
            "Run `localtensor <command> --help` for a command's options;\n"
            "`localtensor --version` prints the version.\n"
            "Exit codes: 0 all passed, 1 a check failed, 2 bad input or usage.\n");
}

/* A global option's value: `--name VALUE` or `--name=VALUE` at argv[*i]
 * (advancing *i past a separate value). NULL when argv[*i] is not the
 * option; *missing set when the value is missing. */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *missing) {
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n)) return NULL;
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (argv[*i][n]) return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

/* Takes the global options out of argv (anywhere on the line): `--backend
 * NAME` selects that backend (else the one LT_BACKEND names), `--max-memory
 * SIZE` sets the memory budget (kernels/memlimit_impl.h), `--rules SET` the
 * ops' rule set (lt_op_rules_select). Returns 0, or 2
 * after printing why (a missing or bad value, no CUDA in the build or no
 * device). */
static int global_options(int *argc, char **argv) {
    const char *name = getenv("LT_BACKEND"), *from = "LT_BACKEND", *v;
    if (name && !name[0]) name = NULL;
    int j = 1, missing = 0;
    for (int i = 1; i < *argc; i++) {
        if ((v = option_value(*argc, argv, &i, "--backend", &missing))) {
            name = v;
            from = "--backend";
        } else if ((v = option_value(*argc, argv, &i, "--max-memory", &missing))) {
            if (lt__mem_set_budget(v, "--max-memory") != LT_OK) {
                lt_cli_print(stderr, NULL, lt_errmsg());
                return 2;
            }
        } else if ((v = option_value(*argc, argv, &i, "--rules", &missing))) {
            lt_op_rules r;
            if (lt_op_rules_parse(v, &r) != LT_OK) {
                lt__err_ctx(LT_INVALID, "--rules");
                lt_cli_print(stderr, NULL, lt_errmsg());
                return 2;
            }
            lt_op_rules_select(r);
        } else if (missing) {
            const char *want = !strcmp(argv[i], "--backend") ? "cpu, cuda or cuda-emu"
                               : !strcmp(argv[i], "--rules") ? "pytorch or min-comm"
                                                             : "a size, e.g. 512M, 8G";
            fprintf(stderr, "localtensor: %s needs a value (%s)\n", argv[i], want);
            return 2;
        } else {
            argv[j++] = argv[i];
        }
    }
    *argc = j;
    argv[j] = NULL;
    if (!name) return 0;
    if (lt_backend_select(name) != LT_OK) {
        char e[LT_CLI_ECHO_BUF], msg[LT_CLI_ECHO_BUF + 2100];
        snprintf(msg, sizeof msg, "%s %s: %s", from, lt_cli_echo(name, e), lt_errmsg());
        lt_cli_print(stderr, NULL, msg);
        return 2;
    }
    return 0;
}

/* The environment's settings that every command reads, checked before the
 * command runs, so that a bad one is blamed on its variable, not on the
 * argument whose work first reads it. 0, or 2 after printing why. */
static int check_environment(void) {
    const char *ml = getenv("LOCALTENSOR_MEMORY_LIMIT");
    uint64_t lim;
    if (ml && ml[0] && lt__mem_limit(&lim, NULL) == LT_INVALID) {
        lt_cli_print(stderr, NULL, lt_errmsg());
        return 2;
    }
    return 0;
}

/* Everything written to stdout must have reached it: its writes and its
 * close are checked once the command is done. Returns code, or 2 after
 * printing why the output could not be written. */
static int close_stdout(int code) {
    errno = 0;
    int bad = fflush(stdout) != 0, e = errno;
    if (ferror(stdout) && !e) {
        /* a write failed while the command ran, and its errno is gone: the
         * output is incomplete already, so one byte more is written to
         * learn why (a full disk fails again the same way) */
        bad = 1;
        if (write(fileno(stdout), "\n", 1) < 0) e = errno;
    }
    if (fclose(stdout) != 0 && !bad) bad = 1, e = errno;
    if (!bad) return code;
    fprintf(stderr, "localtensor: cannot write the output: %s\n",
            e ? strerror(e) : "a write failed");
    return 2;
}

/* Runs the command of argv (global options taken out). Returns the exit code. */
static int dispatch(int argc, char **argv) {
    if (check_environment()) return 2;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") || !strcmp(argv[1], "version")) {
        printf("localtensor %s\n", LT_CLI_VERSION);
        return 0;
    }
#define LT__XX(name, fn, help) \
    if (!strcmp(argv[1], name)) return fn(argc - 1, argv + 1);
    LT_CLI_COMMANDS(LT__XX)
#undef LT__XX
    char e[LT_CLI_ECHO_BUF];
    fprintf(stderr, "localtensor: unknown command '%s'\n\n", lt_cli_echo(argv[1], e));
    usage(stderr);
    return 2;
}

int main(int argc, char **argv) {
    /* under a small address-space cap (ulimit -v), OpenBLAS without its
     * worker threads, which would never exit (kernels/blas_impl.h) */
    lt__blas_reexec_if_capped(argv);
    /* testing hook: allocation fault injection (see kernels/alloc.h) */
    int fault = lt__fault_arm_from_env();
    if (fault < 0) return 2;
    if (fault > 0) atexit(lt__fault_report_to_env);
#ifdef LT_HAVE_MPI
    lt_cli_mpi_hooks = lt_cli_mpi_impl();
#endif
    /* the whole command line, for cutting messages that echo it
     * (global_options takes the global options out of argv) */
    char **line = lt__malloc(sizeof *line * ((size_t)argc + 1));
    if (!line) {
        fprintf(stderr, "localtensor: out of memory\n");
        return 2;
    }
    memcpy(line, argv, sizeof *line * ((size_t)argc + 1));
    lt_cli_set_args(argc, line);
    int code = global_options(&argc, argv);
    if (!code) code = dispatch(argc, argv);
    code = close_stdout(code);
    lt_cli_set_args(0, NULL);
    lt__free(line);
    return code;
}
