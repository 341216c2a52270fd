/* test/fuzz/fuzz_cli.c — `localtensor show` / `redistribute` argument
 * handling, called in process.
 *
 * The input is an argv, one argument per line (a NUL also ends one): the
 * first line is the subcommand, "show" or "redistribute"; other inputs are
 * ignored. The subcommand's entry point (tools/cli/cli.h) runs as main would
 * call it, with its output going to /dev/null. Invariant: the exit code is
 * 0 or 2 (ok, or bad input with a message). redistribute's 1 means the
 * executed plan disagreed with the direct reshard, a wrong answer, so it is
 * a finding too.
 *
 * Caps so one input runs in milliseconds: inputs whose --mesh has more than
 * MAX_WORLD ranks or whose --shape has more than MAX_NUMEL elements are not
 * run (0-element shapes always are: huge sizes next to a 0 are exactly what
 * must not allocate). Allocations over 64 MiB fail under ASan (fuzz.h).
 */
#include "test/fuzz/fuzz.h"

#include "localtensor/kernels/tensor.h"
#include "tools/cli/cli.h"
#include "kernels/status_impl.h"

#define MAX_ARGS 40
#define MAX_WORLD 64
#define MAX_NUMEL 65536

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (!freopen("/dev/null", "w", stdout)) fuzz_fail("cannot send stdout to /dev/null");
    return 0;
}

/* The value of option `name` in argument i ("--mesh X" or "--mesh=X"), or NULL. */
static const char *option_value(int argc, char **argv, int i, const char *name) {
    size_t n = strlen(name);
    if (strncmp(argv[i], name, n)) return NULL;
    if (argv[i][n] == '=') return argv[i] + n + 1;
    if (argv[i][n] == '\0' && i + 1 < argc) return argv[i + 1];
    return NULL;
}

/* 1 when every --mesh and --shape given is within the caps (or does not
 * parse: the command then fails on it, which is cheap). */
static int within_caps(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = option_value(argc, argv, i, "--mesh"))) {
            lt_mesh m;
            if (!lt_mesh_parse(v, &m) && m.world > MAX_WORLD) return 0;
        }
        if ((v = option_value(argc, argv, i, "--shape"))) {
            int nd;
            int64_t sh[LT_MAX_DIMS], numel = 1;
            if (lt_cli_parse_shape(v, &nd, sh)) continue;
            int zero = 0, big = 0;
            for (int d = 0; d < nd; d++) {
                if (sh[d] == 0) zero = 1;
                else if (lt__mul_i64(numel, sh[d], &numel) || numel > MAX_NUMEL) big = 1;
            }
            if (big && !zero) return 0;
        }
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *buf = fuzz_cstr(data, size);
    if (!buf) return 0;
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    char *p = buf, *end = buf + size;
    while (p <= end && argc < MAX_ARGS) {
        char *q = p;
        while (q < end && *q != '\n' && *q != '\0') q++;
        *q = '\0';
        argv[argc++] = p;
        p = q + 1;
    }
    /* a trailing newline does not make an empty last argument */
    if (argc > 1 && size && data[size - 1] == '\n' && !argv[argc - 1][0]) argc--;
    argv[argc] = NULL;
    int show = argc > 0 && !strcmp(argv[0], "show");
    int redist = argc > 0 && !strcmp(argv[0], "redistribute");
    if ((show || redist) && within_caps(argc, argv)) {
        fuzz_paint_stack();
        int rc = show ? lt_cli_show(argc, argv) : lt_cli_redistribute(argc, argv);
        fflush(stdout);
        if (show && rc != 0 && rc != 2) fuzz_fail("show exited %d (expected 0 or 2)", rc);
        if (redist && rc == 1)
            fuzz_fail("redistribute exited 1: the executed plan disagrees with the direct reshard");
        if (redist && rc != 0 && rc != 2) fuzz_fail("redistribute exited %d (expected 0 or 2)", rc);
    }
    free(buf);
    return 0;
}
