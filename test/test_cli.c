/* test/test_cli.c — the `localtensor` binary on bad and extreme arguments:
 * every bad input exits 2 with a message naming the argument, never a crash,
 * a sanitizer report or a hang; extreme but legal layouts (65536 ranks, an
 * 8-d mesh) run to completion.
 *
 * The binary is run as a child process (so a crash or an abort shows as a
 * signal, and a hang as SIGALRM after CHILD_SECONDS). It is found next to
 * this test: tests are built into the same build directory as the CLI.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/testutil.h"

#define CHILD_SECONDS 120
#define MAX_ARGS 24

static char g_bin[1100];
static char g_dir[1024];

/* Runs g_bin with args (NULL-terminated); stdout goes to /dev/null, stderr
 * into err[n]. Returns the exit code, or 128 + signal number. */
static int run(const char *const *args, char *err, size_t n) {
    int fd[2];
    if (pipe(fd)) fail_msg("pipe failed");
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork failed");
    if (pid == 0) {
        char *argv[MAX_ARGS + 2];
        int k = 0;
        argv[k++] = g_bin;
        for (; args[k - 1] && k <= MAX_ARGS; k++) argv[k] = (char *)args[k - 1];
        argv[k] = NULL;
        int dn = open("/dev/null", O_WRONLY);
        if (dn >= 0) dup2(dn, 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        alarm(CHILD_SECONDS); /* survives exec: a hang ends in SIGALRM */
        execv(g_bin, argv);
        _exit(127);
    }
    close(fd[1]);
    size_t used = 0;
    char tmp[4096];
    ssize_t got;
    while ((got = read(fd[0], tmp, sizeof tmp)) > 0) {
        size_t take = (size_t)got < n - 1 - used ? (size_t)got : n - 1 - used;
        memcpy(err + used, tmp, take);
        used += take;
    }
    err[used] = '\0';
    close(fd[0]);
    int status;
    if (waitpid(pid, &status, 0) < 0) fail_msg("waitpid failed");
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

typedef struct cli_case {
    const char *args[MAX_ARGS];
    int rc;                 /* expected exit code */
    const char *want;       /* substring of stderr, or NULL */
} cli_case;

static const char *join(const char *const *args, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; args[i] && used + 1 < n; i++) {
        int w = snprintf(buf + used, n - used, "%s'%s'", i ? " " : "", args[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

static void check_cases(const cli_case *cases, size_t ncases) {
    static char err[1 << 16];
    char cmd[1024];
    for (size_t i = 0; i < ncases; i++) {
        const cli_case *c = &cases[i];
        int rc = run(c->args, err, sizeof err);
        join(c->args, cmd, sizeof cmd);
        if (rc == 127) fail_msg("%s not found or not executable (build it first: make)", g_bin);
        if (strstr(err, "Sanitizer") || strstr(err, "runtime error") || strstr(err, "invariant failed"))
            fail_msg("localtensor %s: sanitizer or invariant report:\n%s", cmd, err);
        if (rc != c->rc) fail_msg("localtensor %s: exit %d, wanted %d; stderr:\n%s", cmd, rc, c->rc, err);
        if (c->want && !strstr(err, c->want))
            fail_msg("localtensor %s: stderr does not contain \"%s\":\n%s", cmd, c->want, err);
    }
}

static void test_bad_layout_arguments(void **state) {
    (void)state;
    static const cli_case cases[] = {
        {{"show", "--mesh", "2x", "--shape", "4", "--placements", "R", NULL}, 2, "--mesh: mesh '2x'"},
        {{"show", "--mesh", "0", "--shape", "4", "--placements", "R", NULL}, 2, "--mesh"},
        {{"show", "--mesh", "70000", "--shape", "4", "--placements", "R", NULL}, 2, "more than 65536 ranks"},
        {{"show", "--mesh", "2x2x2x2x2x2x2x2x2", "--shape", "4", "--placements", "R", NULL}, 2, "more than 8 dims"},
        {{"show", "--mesh", "a b=2", "--shape", "4", "--placements", "R", NULL}, 2, "--mesh"},
        {{"show", "--mesh", "2", "--shape", "5,,7", "--placements", "R", NULL}, 2, "--shape: shape '5,,7'"},
        {{"show", "--mesh", "2", "--shape", "-1", "--placements", "R", NULL}, 2, "--shape"},
        {{"show", "--mesh", "2", "--shape", "4294967296,4294967296", "--placements", "R", NULL}, 2, "overflows"},
        {{"show", "--mesh", "2", "--shape", "1,1,1,1,1,1,1,1,1", "--placements", "R", NULL}, 2, "more than 8 dims"},
        {{"show", "--mesh", "2", "--shape", "1e3", "--placements", "R", NULL}, 2, "--shape"},
        /* an explicit size past 64 bits was clamped to INT64_MAX */
        {{"show", "--mesh", "2", "--shape", "1", "--placements", "S(0,[99999999999999999999,0])", NULL},
         2, "'99999999999999999999' overflows 64 bits"},
        {{"show", "--mesh", "2", "--shape", "1", "--placements", "SS(0,2147483647)", NULL}, 2, "out of range"},
        {{"show", "--mesh", "2", "--shape", "1", "--placements", "SS(0,0)", NULL}, 2, "split_factor must be >= 1"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "S(0,[1,2])", NULL}, 2, "sum to 3"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "P(band)", NULL}, 2, "unknown reduce op 'band'"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "S(1)", NULL}, 2, "out of range"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "R,R", NULL}, 2, "one per mesh dim"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "R", "--dtype", "f8", NULL}, 2, "--dtype"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "R", "--init", "random:-1", NULL}, 2, "--init"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "R", "--init", "random:99999999999999999999999",
          NULL}, 2, "--init"},
        {{"show", "--mesh", "2", "--shape", NULL}, 2, "--shape needs a value"},
        {{"show", "--mesh", "2", "--shape", "4", NULL}, 2, "required"},
        {{"show", "--bogus", NULL}, 2, "unknown argument '--bogus'"},
        {{"redistribute", "--mesh", "2", "--shape", "4", "--from", "S(0)", "--to", "R", "--planner", "x", NULL},
         2, "--planner"},
        {{"redistribute", "--mesh", "2", "--shape", "4", "--from", "S(0)", "--to", "P(sum)", NULL}, 2, "not supported"},
        {{"redistribute", "--mesh", "2", "--shape", "4", "--from", "P(max)", "--to", "P(sum)", NULL}, 2, "unsupported"},
        {{"redistribute", "--mesh", "2", "--shape", "4", "--from", "S(0,[1,3])", "--to", "S(0,[3,2])", NULL},
         2, "sum to 5"},
        {{"bogus", NULL}, 2, "unknown command 'bogus'"},
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

/* Legal extremes. 65536 ranks used to cost O(ranks^2) in the layout, the
 * byte model, the R -> S slice and the strided gather (tens of seconds; minutes under the
 * sanitizers). */
static void test_extreme_layouts(void **state) {
    (void)state;
    static const cli_case cases[] = {
        {{"show", "--mesh", "1", "--shape", "5", "--placements", "S(0)", NULL}, 0, NULL},
        {{"show", "--mesh", "2", "--shape", "0", "--placements", "S(0)", NULL}, 0, NULL},
        {{"show", "--mesh", "2", "--shape", "", "--placements", "P(sum)", NULL}, 0, NULL},
        {{"show", "--mesh", "2", "--shape", "1", "--placements", "SS(0,1000000)", NULL}, 0, NULL},
        {{"show", "--mesh", "65536", "--shape", "3", "--placements", "S(0)", NULL}, 0, NULL},
        {{"redistribute", "--mesh", "65536", "--shape", "3", "--from", "S(0)", "--to", "R", NULL}, 0, NULL},
        {{"redistribute", "--mesh", "65536", "--shape", "3", "--from", "R", "--to", "S(0,balanced)", NULL}, 0, NULL},
        {{"redistribute", "--mesh", "65536", "--shape", "3", "--from", "SS(0,3)", "--to", "R", NULL}, 0, NULL},
        {{"show", "--mesh", "4096", "--shape", "100000", "--placements", "S(0,balanced)", NULL}, 0, NULL},
        {{"redistribute", "--mesh", "2x2x2x2x2x2x2x2", "--shape", "2,2,2,2,2,2,2,2", "--from",
          "S(0),S(1),S(2),S(3),S(4),S(5),S(6),S(7)", "--to", "S(7),S(6),S(5),S(4),S(3),S(2),S(1),S(0)", NULL},
         0, NULL},
        {{"redistribute", "--mesh", "2x2x2x2x2x2x2x2", "--shape", "300", "--from",
          "SS(0,3),SS(0,5),S(0),R,P,SS(0,7),S(0,balanced),S(0,last)", "--to", "S(0),S(0),S(0),S(0),S(0),S(0),S(0),S(0)",
          NULL}, 0, NULL},
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_run_bad_paths(void **state) {
    (void)state;
    char empty[1100], yaml[1100], json[1100];
    snprintf(empty, sizeof empty, "%s/test_cli.empty", g_dir);
    snprintf(yaml, sizeof yaml, "%s/test_cli.yaml", g_dir);
    snprintf(json, sizeof json, "%s/test_cli.nodir/out.json", g_dir);
    mkdir(empty, 0700);
    FILE *f = fopen(yaml, "w");
    if (!f) fail_msg("cannot write %s", yaml);
    fputs("name: tiny\nmesh: {shape: [2]}\ntensors:\n  x: {shape: [3]}\nsteps:\n"
          "  - distribute: {tensor: x, placements: [\"S(0)\"], as: y}\n",
          f);
    fclose(f);
    const cli_case cases[] = {
        {{"run", "/nonexistent/x.yaml", NULL}, 2, "/nonexistent/x.yaml:1:1: cannot open"},
        {{"run", empty, NULL}, 2, "no scenario files"},
        {{"run", NULL}, 2, "no scenario files or directories given"},
        {{"run", yaml, "--json", json, NULL}, 2, "--json"},
        {{"run", yaml, "-k", NULL}, 2, "-k needs a value"},
        {{"run", yaml, NULL}, 0, NULL},
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
    remove(yaml);
    rmdir(empty);
}

int main(int argc, char **argv) {
    (void)argc;
    const char *slash = strrchr(argv[0], '/');
    if (slash) snprintf(g_dir, sizeof g_dir, "%.*s", (int)(slash - argv[0]), argv[0]);
    else snprintf(g_dir, sizeof g_dir, ".");
    snprintf(g_bin, sizeof g_bin, "%s/localtensor", g_dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_layout_arguments),
        cmocka_unit_test(test_extreme_layouts),
        cmocka_unit_test(test_run_bad_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
