/* tools/cli/main.c — `localtensor`: dispatches to the subcommands of tools/cli/cli.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/backend.h"
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
            "Global option: --backend cpu|cuda|cuda-emu (anywhere on the line; default: the\n"
            "LT_BACKEND environment variable, else cpu) chooses where shards live and\n"
            "kernels run.\n"
            "\n"
            "Run `localtensor <command> --help` for a command's options;\n"
            "`localtensor --version` prints the version.\n"
            "Exit codes: 0 all passed, 1 a check failed, 2 bad input or usage.\n");
}

/* Takes the global `--backend NAME` (or `--backend=NAME`) out of argv and
 * selects that backend, else the one LT_BACKEND names. Returns 0, or 2
 * after printing why (unknown name, no CUDA in the build or no device). */
static int select_backend(int *argc, char **argv) {
    const char *name = getenv("LT_BACKEND"), *from = "LT_BACKEND";
    if (name && !name[0]) name = NULL;
    int j = 1;
    for (int i = 1; i < *argc; i++) {
        if (!strcmp(argv[i], "--backend")) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "localtensor: --backend needs a value (cpu, cuda or cuda-emu)\n");
                return 2;
            }
            name = argv[++i];
            from = "--backend";
        } else if (!strncmp(argv[i], "--backend=", 10)) {
            name = argv[i] + 10;
            from = "--backend";
        } else {
            argv[j++] = argv[i];
        }
    }
    *argc = j;
    argv[j] = NULL;
    if (!name) return 0;
    if (lt_backend_select(name) != LT_OK) {
        fprintf(stderr, "localtensor: %s %s: %s\n", from, name, lt_errmsg());
        return 2;
    }
    return 0;
}

int main(int argc, char **argv) {
    /* testing hook: allocation fault injection (see kernels/alloc.h) */
    int fault = lt__fault_arm_from_env();
    if (fault < 0) return 2;
    if (fault > 0) atexit(lt__fault_report_to_env);
    if (select_backend(&argc, argv)) return 2;
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
