/* tools/main.c — `localtensor`: dispatches to the subcommands of tools/cli.h. */
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"

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
            "Run `localtensor <command> --help` for a command's options.\n"
            "Exit codes: 0 all passed, 1 a check failed, 2 bad input or usage.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
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
