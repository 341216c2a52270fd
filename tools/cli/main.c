/* tools/cli/main.c — `localtensor`: dispatches to the subcommands of tools/cli/cli.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
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
            "Run `localtensor <command> --help` for a command's options;\n"
            "`localtensor --version` prints the version.\n"
            "Exit codes: 0 all passed, 1 a check failed, 2 bad input or usage.\n");
}

int main(int argc, char **argv) {
    /* testing hook: allocation fault injection (see kernels/alloc.h) */
    int fault = lt__fault_arm_from_env();
    if (fault < 0) return 2;
    if (fault > 0) atexit(lt__fault_report_to_env);
#ifdef LT_HAVE_MPI
    lt_cli_mpi_hooks = lt_cli_mpi_impl();
#endif
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
    fprintf(stderr, "localtensor: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
