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

#include <cJSON.h>

#include "test/testutil.h"

#define CHILD_SECONDS 120
#define MAX_ARGS 24

static char g_bin[1100];
static char g_dir[1024];

static char g_out_path[1200];   /* where run_out sends the child's stdout */

/* Runs g_bin with args (NULL-terminated); stdout goes to stdout_path (NULL:
 * /dev/null), stderr into err[n]. Returns the exit code, or 128 + signal
 * number. */
static int run_to(const char *const *args, const char *stdout_path, char *err, size_t n) {
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
        int dn = stdout_path ? open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0600)
                             : open("/dev/null", O_WRONLY);
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

static int run(const char *const *args, char *err, size_t n) { return run_to(args, NULL, err, n); }

/* Runs g_bin with args; *out gets its stdout (caller frees), err[n] its
 * stderr. Returns the exit code. */
static int run_out(const char *const *args, char **out, char *err, size_t n) {
    int rc = run_to(args, g_out_path, err, n);
    FILE *f = fopen(g_out_path, "rb");
    if (!f) fail_msg("cannot read %s", g_out_path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    *out = malloc((size_t)(len > 0 ? len : 0) + 1);
    if (!*out) fail_msg("out of memory");
    size_t got = fread(*out, 1, (size_t)(len > 0 ? len : 0), f);
    (*out)[got] = '\0';
    fclose(f);
    remove(g_out_path);
    if (rc == 127) fail_msg("%s not found or not executable (build it first: make)", g_bin);
    if (strstr(err, "Sanitizer") || strstr(err, "runtime error"))
        fail_msg("sanitizer report:\n%s", err);
    return rc;
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
        if (strstr(err, "Sanitizer") || strstr(err, "runtime error") ||
            strstr(err, "invariant failed"))
            fail_msg("localtensor %s: sanitizer or invariant report:\n%s", cmd, err);
        if (rc != c->rc)
            fail_msg("localtensor %s: exit %d, wanted %d; stderr:\n%s", cmd, rc, c->rc, err);
        if (c->want && !strstr(err, c->want))
            fail_msg("localtensor %s: stderr does not contain \"%s\":\n%s", cmd, c->want, err);
    }
}

static void test_bad_layout_arguments(void **state) {
    (void)state;
    static const cli_case cases[] = {
        {{"show", "--mesh", "2x", "--shape", "4", "--placements", "R", NULL},
         2,
         "--mesh: mesh '2x'"},
        {{"show", "--mesh", "0", "--shape", "4", "--placements", "R", NULL}, 2, "--mesh"},
        {{"show", "--mesh", "70000", "--shape", "4", "--placements", "R", NULL},
         2,
         "more than 65536 ranks"},
        {{"show", "--mesh", "2x2x2x2x2x2x2x2x2", "--shape", "4", "--placements", "R", NULL},
         2,
         "more than 8 dims"},
        {{"show", "--mesh", "a b=2", "--shape", "4", "--placements", "R", NULL}, 2, "--mesh"},
        {{"show", "--mesh", "2", "--shape", "5,,7", "--placements", "R", NULL},
         2,
         "--shape: shape '5,,7'"},
        {{"show", "--mesh", "2", "--shape", "-1", "--placements", "R", NULL}, 2, "--shape"},
        {{"show", "--mesh", "2", "--shape", "4294967296,4294967296", "--placements", "R", NULL},
         2,
         "overflows"},
        {{"show", "--mesh", "2", "--shape", "1,1,1,1,1,1,1,1,1", "--placements", "R", NULL},
         2,
         "more than 8 dims"},
        {{"show", "--mesh", "2", "--shape", "1e3", "--placements", "R", NULL}, 2, "--shape"},
        /* an explicit size past 64 bits was clamped to INT64_MAX */
        {{"show", "--mesh", "2", "--shape", "1", "--placements", "S(0,[99999999999999999999,0])",
          NULL},
         2,
         "'99999999999999999999' overflows 64 bits"},
        {{"show", "--mesh", "2", "--shape", "1", "--placements", "SS(0,2147483647)", NULL},
         2,
         "out of range"},
        {{"show", "--mesh", "2", "--shape", "1", "--placements", "SS(0,0)", NULL},
         2,
         "split_factor must be >= 1"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "S(0,[1,2])", NULL},
         2,
         "sum to 3"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "P(band)", NULL},
         2,
         "unknown reduce op 'band'"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "S(1)", NULL}, 2, "out of range"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "R,R", NULL},
         2,
         "one per mesh dim"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "R", "--dtype", "f8", NULL},
         2,
         "--dtype"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "R", "--init", "random:-1", NULL},
         2,
         "--init"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "R", "--init",
          "random:99999999999999999999999", NULL},
         2,
         "--init"},
        {{"show", "--mesh", "2", "--shape", NULL}, 2, "--shape needs a value"},
        {{"show", "--mesh", "2", "--shape", "4", NULL}, 2, "required"},
        {{"show", "--bogus", NULL}, 2, "unknown argument '--bogus'"},
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

/* Bad redistribute arguments, unknown commands and misspelled placement
 * names: exit 2 with a message naming the argument (or exit 0 where an empty
 * tensor leaves nothing to overflow). */
static void test_bad_redistribute_arguments(void **state) {
    (void)state;
    static const cli_case cases[] = {
        {{"redistribute", "--mesh", "2", "--shape", "4", "--from", "S(0)", "--to", "R", "--planner",
          "x", NULL},
         2,
         "--planner"},
        {{"redistribute", "--mesh", "2", "--shape", "4", "--from", "S(0)", "--to", "P(avg)", NULL},
         2,
         "not supported"},
        {{"redistribute", "--mesh", "2", "--shape", "4", "--from", "P(max)", "--to", "P(sum)",
          NULL},
         2,
         "unsupported"},
        {{"redistribute", "--mesh", "2", "--shape", "4", "--from", "S(0,[1,3])", "--to",
          "S(0,[3,2])", NULL},
         2,
         "sum to 5"},
        {{"bogus", NULL}, 2, "unknown command 'bogus'"},
        /* empty tensors with huge dims: nothing to hold, so nothing to plan a
         * cost for past 64 bits (the product skipping the empty dim overflowed) */
        {{"redistribute", "--mesh", "2", "--shape", "111686010340575420,0,467", "--from", "S(0)",
          "--to", "S(1)", NULL},
         0,
         NULL},
        {{"redistribute", "--mesh", "2x2", "--shape", "111686010340575420,0,467", "--from",
          "S(0),S(2)", "--to", "S(1),R", NULL},
         0,
         NULL},
        {{"redistribute", "--mesh", "2", "--shape", "0,111686010340575420,467", "--from", "S(1)",
          "--to", "S(0)", NULL},
         2,
         "strides overflow 64 bits"},
        /* unknown placement names get the closest known one */
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "Shad(0)", NULL},
         2,
         "did you mean 'Shard'?"},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "_StridedShard(dim=0, sff=2)",
          NULL},
         2,
         "did you mean 'sf'?"},
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

/* Placements exactly as PyTorch prints them (str and repr, and a DTensor's
 * placements tuple) are accepted on the command line. */
static void test_pytorch_spellings(void **state) {
    (void)state;
    static const cli_case cases[] = {
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "_StridedShard(dim=0, sf=2)",
          NULL},
         0,
         NULL},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "_S(0, 2)", NULL}, 0, NULL},
        {{"show", "--mesh", "2x2", "--shape", "4", "--placements", "(Shard(dim=0), Replicate())",
          NULL},
         0,
         NULL},
        {{"show", "--mesh", "2", "--shape", "4", "--placements", "(Partial(sum),)", NULL}, 0, NULL},
        {{"redistribute", "--mesh", "2x2", "--shape", "5", "--from",
          "(_StridedShard(dim=0, sf=2), Shard(dim=0))", "--to", "[Replicate(), Replicate()]", NULL},
         0,
         NULL},
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

/* A shape too big for this machine blames --shape, whatever the placements. */
static void test_shape_blamed(void **state) {
    (void)state;
    static char err[1 << 14];
    const char *pls[] = {"R", "S(0)", "S(0),S(1)"};
    const char *meshes[] = {"2", "2", "2x2"};
    for (int i = 0; i < 3; i++) {
        const char *args[] = {
            "show",         "--mesh", meshes[i], "--shape", "100000,100000,100000",
            "--placements", pls[i],   NULL};
        int rc = run(args, err, sizeof err);
        if (rc != 2) fail_msg("exit %d, wanted 2:\n%s", rc, err);
        if (!strstr(err, "--shape 100000,100000,100000: the tensor has 1000000000000000 elements"))
            fail_msg("--shape not blamed:\n%s", err);
        if (strstr(err, "--placements")) fail_msg("--placements blamed:\n%s", err);
    }
}

/* --max-memory: a budget before the command, as LOCALTENSOR_MEMORY_LIMIT.
 * The 8x8x8 redistribute of (16384, 4096) f32 needs its 256 MiB source and
 * 512 MiB at its widest step: refused under 100M with exit 2; a size that
 * is not one, or none, is a usage error. */
static void test_max_memory(void **state) {
    (void)state;
    char err[4096];
    const char *a[] = {"--max-memory", "100M",   "redistribute", "--mesh", "8x8x8",       "--shape",
                       "16384,4096",   "--from", "S(0),S(1),R",  "--to",   "R,S(0),S(1)", NULL};
    assert_int_equal(run(a, err, sizeof err), 2);
    if (!strstr(err, "needs 768.0 MiB for the shards of all 512 ranks, more than this machine's "
                     "100.0 MiB of memory allowed by --max-memory"))
        fail_msg("%s", err);
    const char *b[] = {"--max-memory=12X", "show", "--mesh", "2", "--shape", "4",
                       "--placements",     "R",    NULL};
    assert_int_equal(run(b, err, sizeof err), 2);
    if (!strstr(err, "--max-memory: '12X' is not a size")) fail_msg("%s", err);
    const char *c[] = {"--max-memory", NULL};
    assert_int_equal(run(c, err, sizeof err), 2);
    const char *d[] = {"--max-memory=1M", "show", "--mesh", "2", "--shape", "4",
                       "--placements",    "R",    NULL};
    assert_int_equal(run(d, err, sizeof err), 0);
}

/* --rules: the ops' rule set for every command (localtensor/ops.h); the op
 * trace names the set that chose; a bad or missing value, or a bad
 * `rules:` key in a scenario, is a usage error (exit 2). */
static void test_rules_option(void **state) {
    (void)state;
    char err[4096], *out = NULL;
    const char *a[] = {"--rules", "bogus", "run", "scenarios/ops/rule_sets.yaml", NULL};
    assert_int_equal(run(a, err, sizeof err), 2);
    if (!strstr(err, "--rules: unknown rule set 'bogus' (known: pytorch, min-comm)"))
        fail_msg("%s", err);
    const char *b[] = {"run", "scenarios/ops/rule_sets.yaml", "--rules", NULL};
    assert_int_equal(run(b, err, sizeof err), 2);
    if (!strstr(err, "--rules needs a value (pytorch or min-comm)")) fail_msg("%s", err);
    const char *c[] = {"run", "--trace", "--rules=min-comm",
                       "scenarios/trace/silent_replication.yaml", NULL};
    assert_int_equal(run_out(c, &out, err, sizeof err), 0);
    if (!strstr(out, "  softmax(xd [S(0)]) -> [R]  (rules: min-comm)\n")) fail_msg("%s", out);
    free(out);
    const char *path = "/tmp/lt_test_cli_rules.yaml";
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("- name: bad_rules\n  mesh: 2\n  rules: fewest\n  steps: []\n", f);
    fclose(f);
    const char *d[] = {"run", path, NULL};
    assert_int_equal(run(d, err, sizeof err), 2);
    if (!strstr(err, "rules: unknown rule set 'fewest'")) fail_msg("%s", err);
    remove(path);
}

/* --version prints a MAJOR.MINOR.PATCH number, the one place it is kept
 * (LT_CLI_VERSION): the .pc files get it at install (Version: @VERSION@,
 * filled by the Makefile from there, as is the shared library's SONAME;
 * tools/check-install.sh checks the installed ones agree with --version). */
static void test_version(void **state) {
    (void)state;
    char err[4096], *out;
    const char *args[] = {"--version", NULL};
    assert_int_equal(run_out(args, &out, err, sizeof err), 0);
    unsigned a = 0, b = 0, c = 0;
    char tail[8] = "";
    if (sscanf(out, "localtensor %u.%u.%u%7[^x]", &a, &b, &c, tail) != 4 || strcmp(tail, "\n"))
        fail_msg("--version printed '%s', wanted 'localtensor MAJOR.MINOR.PATCH'", out);
    FILE *f = fopen("tools/localtensor.pc.in", "r");
    if (!f) fail_msg("tools/localtensor.pc.in not found (run from the repository root)");
    char line[256];
    int filled = 0;
    while (fgets(line, sizeof line, f)) filled |= !strcmp(line, "Version: @VERSION@\n");
    fclose(f);
    if (!filled)
        fail_msg("tools/localtensor.pc.in does not take its Version from the build (Version: "
                 "@VERSION@)");
    free(out);
}

/* The help texts define what the tables show. */
static void test_help_defines_terms(void **state) {
    (void)state;
    char err[4096], *out;
    const char *a1[] = {"redistribute", "--help", NULL};
    assert_int_equal(run_out(a1, &out, err, sizeof err), 0);
    if (!strstr(
            out,
            "bytes/rank is\nthe most bytes any one rank receives from other ranks in that step"))
        fail_msg("redistribute --help does not define bytes/rank:\n%s", out);
    assert_non_null(strstr(out, "numbered from 1"));
    free(out);
    const char *a2[] = {"show", "--help", NULL};
    assert_int_equal(run_out(a2, &out, err, sizeof err), 0);
    if (!strstr(out, "global_offset is the first global index a rank holds"))
        fail_msg("show --help does not define global_offset:\n%s", out);
    free(out);
}

/* The bytes each rank sends and receives in each plan step, from --json,
 * against hand counts (4-byte f32 elements; a rank's own data never counts).
 * Each layout pair below has a single-step plan, so the step is known. */
static void expect_step_bytes_in(const char *numerics, const char *mesh, const char *shape,
                                 const char *from, const char *to, const char *coll,
                                 const double *sent, const double *recv, int world) {
    char err[8192], *out;
    const char *args[] = {"redistribute", "--mesh", mesh,   "--shape", shape,
                          "--from",       from,     "--to", to,        "--json",
                          "--numerics",   numerics, NULL};
    int rc = run_out(args, &out, err, sizeof err);
    if (rc != 0) fail_msg("exit %d:\n%s", rc, err);
    cJSON *j = cJSON_Parse(out);
    if (!j) fail_msg("--json output does not parse:\n%s", out);
    cJSON *plan = cJSON_GetObjectItemCaseSensitive(j, "plan");
    if (cJSON_GetArraySize(plan) != 1)
        fail_msg("%s -> %s: wanted a 1-step plan:\n%s", from, to, out);
    cJSON *st = cJSON_GetArrayItem(plan, 0);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(st, "step")->valueint, 1);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(st, "collective")->valuestring, coll);
    cJSON *js = cJSON_GetObjectItemCaseSensitive(st, "bytes_sent"),
          *jr = cJSON_GetObjectItemCaseSensitive(st, "bytes_recv");
    if (cJSON_GetArraySize(js) != world || cJSON_GetArraySize(jr) != world)
        fail_msg("%s -> %s: bytes_sent/bytes_recv missing or not one per rank:\n%s", from, to, out);
    double maxr = 0, tot = 0;
    for (int r = 0; r < world; r++) {
        double gs = cJSON_GetArrayItem(js, r)->valuedouble,
               gr = cJSON_GetArrayItem(jr, r)->valuedouble;
        if (gs != sent[r] || gr != recv[r])
            fail_msg("%s -> %s: rank %d sent %g received %g, wanted %g and %g", from, to, r, gs, gr,
                     sent[r], recv[r]);
        if (recv[r] > maxr) maxr = recv[r];
        tot += recv[r];
    }
    /* bytes/rank is the most any one rank receives; bytes total the sum */
    assert_true(cJSON_GetObjectItemCaseSensitive(st, "bytes_per_rank")->valuedouble == maxr);
    assert_true(cJSON_GetObjectItemCaseSensitive(st, "bytes_total")->valuedouble == tot);
    cJSON_Delete(j);
    free(out);
}

/* The same bytes in every numerics mode: sampled and values-free runs do
 * not run the collectives but must report what they would move. */
static void expect_step_bytes(const char *mesh, const char *shape, const char *from, const char *to,
                              const char *coll, const double *sent, const double *recv, int world) {
    const char *modes[] = {"full", "sample:1", "none"};
    for (int i = 0; i < 3; i++)
        expect_step_bytes_in(modes[i], mesh, shape, from, to, coll, sent, recv, world);
}

static void test_json_per_rank_bytes(void **state) {
    (void)state;
    /* (4,3) on 2x2, [S(0),S(1)] -> [R,S(1)]: all_gather along mesh dim 0.
     * Rank (i,0) holds rows 2i..2i+1, cols 0..1 (4 elements, 16 bytes);
     * rank (i,1) rows 2i..2i+1, col 2 (8 bytes). Each gets its partner's
     * block of the same width. */
    const double ag[] = {16, 8, 16, 8};
    expect_step_bytes("2x2", "4,3", "S(0),S(1)", "R,S(1)", "all_gather", ag, ag, 4);
    /* (4,3) on 2x2, [R,S(1)] -> [R,S(0)]: all_to_all along mesh dim 1.
     * Rank (i,0) holds cols 0..1 of every row and keeps rows 0..1: it sends
     * rows 2..3 x cols 0..1 (16 bytes) and receives rows 0..1 x col 2 (8);
     * rank (i,1) the other way round. */
    const double a2a_sent[] = {16, 8, 16, 8}, a2a_recv[] = {8, 16, 8, 16};
    expect_step_bytes("2x2", "4,3", "R,S(1)", "R,S(0)", "all_to_all", a2a_sent, a2a_recv, 4);
    /* (4) on 2 ranks, P(sum) -> R: all_reduce of a 16-byte buffer = a
     * reduce_scatter of 8-byte halves plus an all_gather of them: each rank
     * sends and receives 8 + 8 bytes */
    const double ar[] = {16, 16};
    expect_step_bytes("2", "4", "P(sum)", "R", "all_reduce", ar, ar, 2);
    /* a local step moves nothing: zeros for every rank */
    const double zero[] = {0, 0, 0};
    expect_step_bytes("3", "5", "R", "S(0)", "none", zero, zero, 3);
}

/* --numerics: bad values and what a sampled run cannot do exit 2 with a
 * message; sampled values equal full mode's (the reference: the full run,
 * itself verified against the direct reshard); the other ranks have
 * "values": null; the 65536-rank target runs. */
static void test_numerics(void **state) {
    (void)state;
    static const cli_case cases[] = {
        {{"redistribute", "--mesh", "4", "--shape", "8", "--from", "S(0)", "--to", "R",
          "--numerics", "bogus", NULL},
         2,
         "--numerics: unknown numerics mode 'bogus'"},
        {{"redistribute", "--mesh", "4", "--shape", "8", "--from", "S(0)", "--to", "R",
          "--numerics", "sample:0", NULL},
         2,
         "--numerics: numerics 'sample:0'"},
        {{"redistribute", "--mesh", "4", "--shape", "8", "--from", "S(0)", "--to", "R",
          "--numerics", "sample", "--explain", NULL},
         2,
         "not supported yet: --explain in --numerics sample:4 mode"},
        {{"redistribute", "--mesh", "4", "--shape", "8", "--from", "S(0)", "--to", "P(product)",
          "--numerics", "none", NULL},
         2,
         "P(product)"},
    };
    check_cases(cases, sizeof cases / sizeof *cases);
    char err[8192], *full_s, *smp_s;
    const char *fa[] = {"redistribute", "--mesh",      "2x2",  "--shape", "4,6",
                        "--from",       "P(sum),S(0)", "--to", "S(1),R",  "--init",
                        "randn:3",      "--json",      NULL};
    const char *sa[] = {"redistribute", "--mesh",      "2x2",        "--shape",  "4,6",
                        "--from",       "P(sum),S(0)", "--to",       "S(1),R",   "--init",
                        "randn:3",      "--json",      "--numerics", "sample:2", NULL};
    assert_int_equal(run_out(fa, &full_s, err, sizeof err), 0);
    assert_int_equal(run_out(sa, &smp_s, err, sizeof err), 0);
    cJSON *f = cJSON_Parse(full_s), *m = cJSON_Parse(smp_s);
    assert_non_null(f);
    assert_non_null(m);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(m, "numerics")->valuestring, "sample:2");
    cJSON *sr = cJSON_GetObjectItemCaseSensitive(m, "sampled_ranks");
    assert_int_equal(cJSON_GetArraySize(sr), 2);
    assert_int_equal(cJSON_GetArrayItem(sr, 1)->valueint, 3);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "verified")));
    char *pf = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(f, "plan"));
    char *pm = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(m, "plan"));
    assert_string_equal(pm, pf);   /* steps, per-rank bytes, placements */
    free(pf);
    free(pm);
    cJSON *rf = cJSON_GetObjectItemCaseSensitive(f, "ranks"),
          *rm = cJSON_GetObjectItemCaseSensitive(m, "ranks");
    for (int r = 0; r < 4; r++) {
        cJSON *a = cJSON_GetArrayItem(rf, r), *b = cJSON_GetArrayItem(rm, r);
        char *la = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(a, "local_shape"));
        char *lb = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(b, "local_shape"));
        assert_string_equal(la, lb);
        free(la);
        free(lb);
        cJSON *vb = cJSON_GetObjectItemCaseSensitive(b, "values");
        if (r == 1 || r == 2) {
            assert_true(cJSON_IsNull(vb));
            continue;
        }
        char *va = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(a, "values")),
             *vv = cJSON_PrintUnformatted(vb);
        assert_string_equal(vv, va);
        free(va);
        free(vv);
    }
    cJSON_Delete(f);
    cJSON_Delete(m);
    free(full_s);
    free(smp_s);
}

/* --numerics sample at scale: the 65536-rank target runs, and K at least the
 * world gives values for every rank. */
static void test_numerics_sampled_scale(void **state) {
    (void)state;
    char err[8192], *smp_s;
    /* the target: 65536 ranks, 16 GiB logical, values for 8 of them */
    const char *ta[] = {"redistribute", "--mesh",     "256x256",   "--shape",
                        "65536,65536",  "--from",     "S(0),S(1)", "--to",
                        "S(1),S(0)",    "--numerics", "sample:8",  NULL};
    assert_int_equal(run_out(ta, &smp_s, err, sizeof err), 0);
    assert_non_null(
        strstr(smp_s, "values for ranks 0, 9362, 18724, 28086, 37449, 46811, 56173, 65535"));
    assert_non_null(strstr(smp_s, "verified: yes"));
    /* the complete search does not finish on 65536 ranks: the plan says it is
     * not proven minimal (a 2x2 plan, searched to the end, says nothing) */
    assert_non_null(strstr(smp_s, "search budget exhausted"));
    free(smp_s);
    const char *small[] = {"redistribute", "--mesh",    "2x2",  "--shape",   "4,4",
                           "--from",       "S(0),S(1)", "--to", "S(1),S(0)", NULL};
    assert_int_equal(run_out(small, &smp_s, err, sizeof err), 0);
    assert_null(strstr(smp_s, "search budget exhausted"));
    free(smp_s);
    /* K at least the world: every rank has values, and no "other ranks" are named */
    const char *every[] = {"redistribute", "--mesh", "2x2", "--shape",    "4,4",      "--from",
                           "S(0),S(1)",    "--to",   "R,R", "--numerics", "sample:9", NULL};
    assert_int_equal(run_out(every, &smp_s, err, sizeof err), 0);
    if (!strstr(smp_s, "numerics sample:9: values for every rank (0, 1, 2, 3)\n") ||
        strstr(smp_s, "other ranks"))
        fail_msg("sample:9 on 4 ranks:\n%s", smp_s);
    free(smp_s);
}

/* show: a strided shard is marked and its offset explained; 2-D shards
 * print as nested rows. */
static void test_show_table(void **state) {
    (void)state;
    char err[4096], *out;
    /* arange(12) as (4,3) on 2x2 with [SS(0,2), S(1)]: SS splits rows 0..3 into
     * pieces {0,1} and {2,3}, each between 2 ranks, so dp rank 0 holds rows
     * {0, 2}; S(1) gives tp rank 0 cols {0, 1}. Rank 0: [[0, 1], [6, 7]]. */
    const char *a1[] = {"show", "--mesh",       "2x2",          "--shape",
                        "4,3",  "--placements", "SS(0,2),S(1)", NULL};
    assert_int_equal(run_out(a1, &out, err, sizeof err), 0);
    if (!strstr(out, "(0, 0)*") || !strstr(out, "global_offset is only the first index"))
        fail_msg("strided shard not marked:\n%s", out);
    const char *row0 = strstr(out, "[[0, 1],\n");
    if (!row0) fail_msg("rank 0's shard is not printed as nested rows:\n%s", out);
    /* the second row sits right under the first row's values */
    const char *nl = strchr(row0, '\n') + 1, *line0 = row0;
    while (line0 > out && line0[-1] != '\n') line0--;
    size_t col = (size_t)(row0 - line0) + 1;
    for (size_t k = 0; k < col; k++)
        if (nl[k] != ' ') fail_msg("second row not aligned:\n%s", out);
    if (strncmp(nl + col, "[6, 7]]", 7)) fail_msg("second row of rank 0 is not [6, 7]:\n%s", out);
    free(out);
    /* a contiguous layout has no mark */
    const char *a2[] = {"show", "--mesh",       "2x2",       "--shape",
                        "4,3",  "--placements", "S(0),S(1)", NULL};
    assert_int_equal(run_out(a2, &out, err, sizeof err), 0);
    if (strstr(out, ")*") || strstr(out, "strided shard"))
        fail_msg("contiguous shards marked:\n%s", out);
    free(out);
    /* --json says which shards are strided */
    const char *a3[] = {"show",         "--mesh",  "2",      "--shape", "4",
                        "--placements", "SS(0,2)", "--json", NULL};
    assert_int_equal(run_out(a3, &out, err, sizeof err), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ranks"), 0);
    assert_true(
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r0, "strided"))); /* rank 0 holds {0, 2} */
    assert_int_equal(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r0, "global_offset"), 0)->valueint, 0);
    cJSON_Delete(j);
    free(out);
}

/* show of a RaggedShard (docs/SEMANTICS.md §11.10), against pictures written
 * by hand from the definition: 8 rows, units (1,2,1,0) sum to 4, so a unit
 * is 2 rows: rank 0 rows 0-1, rank 1 rows 2-5, rank 2 rows 6-7, rank 3
 * none (an empty (0, 3) shard, offset 8 = F as for an empty Shard). */
static void test_show_ragged(void **state) {
    (void)state;
    char err[4096], *out;
    const char *a1[] = {"show",         "--mesh", "4", "--shape", "8,3",
                        "--placements", "RS(dims=(0,),units=(1,2,1,0))", NULL};
    assert_int_equal(run_out(a1, &out, err, sizeof err), 0);
    const char *want1 =
        "mesh 4 (4 ranks), global shape (8, 3), f32, placements "
        "[RS(dims=(0,),units=(1,2,1,0))]\n"
        "rank  coord      local_shape    global_offset   values\n"
        "0     (0)        (2, 3)         (0, 0)          [[0, 1, 2],\n"
        "                                                 [3, 4, 5]]\n"
        "1     (1)        (4, 3)         (2, 0)          [[6, 7, 8],\n"
        "                                                 [9, 10, 11],\n"
        "                                                 [12, 13, 14],\n"
        "                                                 [15, 16, 17]]\n"
        "2     (2)        (2, 3)         (6, 0)          [[18, 19, 20],\n"
        "                                                 [21, 22, 23]]\n"
        "3     (3)        (0, 3)         (8, 0)          [] (empty)\n"
        "\n"
        "owners (ranks holding each element):\n"
        "       0 1 2\n"
        "    0  0 0 0\n"
        "    1  0 0 0\n"
        "    2  1 1 1\n"
        "    3  1 1 1\n"
        "    4  1 1 1\n"
        "    5  1 1 1\n"
        "    6  2 2 2\n"
        "    7  2 2 2\n"
        "empty shards (zero-size): 3\n";
    if (strcmp(out, want1)) fail_msg("show RS k=1: got\n%s\nwanted\n%s", out, want1);
    free(out);
    /* k = 2: shape (2,3,2) is 6 rows of 2; units (1,2): rank 0 rows 0-1
     * (values 0-3), rank 1 rows 2-5 (values 4-11), local shapes (rows, 2) */
    const char *a2[] = {"show",         "--mesh",          "2", "--shape", "2,3,2",
                        "--placements", "RS((0,1),(1,2))", NULL};
    assert_int_equal(run_out(a2, &out, err, sizeof err), 0);
    const char *want2 =
        "rank  coord      local_shape    global_offset   values\n"
        "0     (0)        (2, 2)         (0, 0)          [[0, 1],\n"
        "                                                 [2, 3]]\n"
        "1     (1)        (4, 2)         (2, 0)          [[4, 5],\n"
        "                                                 [6, 7],\n"
        "                                                 [8, 9],\n"
        "                                                 [10, 11]]\n"
        "RaggedShard: dims 0..1 are flattened into 6 rows; shapes and offsets are those of the "
        "view (6, 2)\n"
        "\n"
        "(the picture of the view (6, 2): row i is flattened row i of dims 0..1)\n"
        "owners (ranks holding each element):\n"
        "       0 1\n"
        "    0  0 0\n"
        "    1  0 0\n"
        "    2  1 1\n"
        "    3  1 1\n"
        "    4  1 1\n"
        "    5  1 1\n";
    const char *body = strchr(out, '\n');
    if (!body || strcmp(body + 1, want2)) fail_msg("show RS k=2: got\n%s\nwanted\n%s", out, want2);
    free(out);
}

/* show --json and --svg of a RaggedShard: the same layouts as above. */
static void test_show_ragged_json(void **state) {
    (void)state;
    char err[4096], *out;
    /* --json: the view's shapes and offsets, and the flat index of each
     * shard's first element (rank 1: row 2 of 2 elements = element 4) */
    const char *a3[] = {"show",         "--mesh",          "2",      "--shape", "2,3,2",
                        "--placements", "RS((0,1),(1,2))", "--json", NULL};
    assert_int_equal(run_out(a3, &out, err, sizeof err), 0);
    cJSON *j = cJSON_Parse(out);
    if (!j) fail_msg("--json does not parse:\n%s", out);
    cJSON *r1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ranks"), 1);
    cJSON *ls = cJSON_GetObjectItemCaseSensitive(r1, "local_shape");
    assert_int_equal(cJSON_GetArraySize(ls), 2);
    assert_int_equal(cJSON_GetArrayItem(ls, 0)->valueint, 4);
    assert_int_equal(cJSON_GetArrayItem(ls, 1)->valueint, 2);
    assert_int_equal(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r1, "global_offset"), 0)->valueint, 2);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(r1, "first_element")->valueint, 4);
    cJSON *v = cJSON_GetObjectItemCaseSensitive(r1, "values");
    assert_int_equal(cJSON_GetArraySize(v), 8);
    for (int i = 0; i < 8; i++) assert_int_equal(cJSON_GetArrayItem(v, i)->valueint, 4 + i);
    cJSON_Delete(j);
    free(out);
    /* an empty shard's first element is -1 */
    const char *a4[] = {"show",         "--mesh",          "3",      "--shape", "5,2",
                        "--placements", "RS((0,),(2,0,3))", "--json", NULL};
    assert_int_equal(run_out(a4, &out, err, sizeof err), 0);
    j = cJSON_Parse(out);
    if (!j) fail_msg("--json does not parse:\n%s", out);
    r1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ranks"), 1);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(r1, "first_element")->valueint, -1);
    assert_int_equal(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r1, "global_offset"), 0)->valueint, 5);
    cJSON_Delete(j);
    free(out);
    /* the SVG picture is drawn (of the view, and says so) */
    char svg[1300];
    snprintf(svg, sizeof svg, "%s/ragged_show.svg", g_dir);
    const char *a5[] = {"show",         "--mesh",          "2",   "--shape", "2,3,2",
                        "--placements", "RS((0,1),(1,2))", "--svg", svg,     NULL};
    assert_int_equal(run_out(a5, &out, err, sizeof err), 0);
    free(out);
    FILE *f = fopen(svg, "rb");
    if (!f) fail_msg("--svg wrote no %s", svg);
    static char buf[1 << 16];
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    buf[got] = '\0';
    fclose(f);
    remove(svg);
    if (!strstr(buf, "drawn as its rows: the view (6, 2)"))
        fail_msg("the SVG does not say it draws the view:\n%.2000s", buf);
}

/* redistribute to a RaggedShard: the route's plan is its one whole-mesh
 * exchange (docs/SEMANTICS.md §11.10). By hand, (8,3) f32 on 4 ranks:
 * S(0) gives ranks 0-3 rows 0-1, 2-3, 4-5, 6-7; RS units (1,2,1,0) rows
 * 0-1, 2-5, 6-7, none. Rank 1 lacks rows 4-5 (6 elements, 24 bytes, from
 * rank 2, their only holder), rank 2 rows 6-7 (24 bytes, from rank 3);
 * ranks 0 and 3 receive nothing. */
static void test_redistribute_ragged(void **state) {
    (void)state;
    const double sent[] = {0, 0, 24, 24}, recv[] = {0, 24, 24, 0};
    expect_step_bytes_in("full", "4", "8,3", "S(0)", "RS(dims=(0,),units=(1,2,1,0))",
                         "all_to_all", sent, recv, 4);
    char err[4096], *out;
    const char *a1[] = {"redistribute", "--mesh", "4",    "--shape",
                        "8,3",          "--from", "S(0)", "--to",
                        "RS(dims=(0,),units=(1,2,1,0))", NULL};
    assert_int_equal(run_out(a1, &out, err, sizeof err), 0);
    const char *row = "     1  0         S(0) -> RS(dims=(0,),units=(1,2,1,0))  all_to_all"
                      "            24            48  [RS(dims=(0,),units=(1,2,1,0))]\n";
    if (!strstr(out, row) || !strstr(out, "total: 1 step, 1 collective, 48 bytes moved") ||
        !strstr(out, "verified: yes"))
        fail_msg("the plan table of the exchange is not as by hand:\n%s", out);
    free(out);
    /* --quiet groups the RaggedShard's shards by their (rows, 3) shapes */
    const char *aq[] = {"redistribute", "--mesh", "4",    "--shape",
                        "8,3",          "--from", "S(0)", "--to",
                        "RS(dims=(0,),units=(1,2,1,0))", "--quiet", NULL};
    assert_int_equal(run_out(aq, &out, err, sizeof err), 0);
    if (!strstr(out, "2 ranks (first 0, last 2): local shape (2, 3), 25% of the tensor each") ||
        !strstr(out, "1 rank (first 1, last 1): local shape (4, 3), 50% of the tensor each") ||
        !strstr(out, "1 rank (first 3, last 3): local shape (0, 3), 0% of the tensor each"))
        fail_msg("--quiet of a RaggedShard result:\n%s", out);
    free(out);
    /* the modes that plan without running say so: not supported yet */
    const char *a2[] = {"redistribute", "--mesh", "4",    "--shape",
                        "8,3",          "--from", "S(0)", "--to",
                        "RS(dims=(0,),units=(1,2,1,0))", "--plan-only", NULL};
    assert_int_equal(run_out(a2, &out, err, sizeof err), 2);
    if (!strstr(err, "not supported yet")) fail_msg("--plan-only: %s", err);
    free(out);
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
        {{"redistribute", "--mesh", "65536", "--shape", "3", "--from", "S(0)", "--to", "R", NULL},
         0,
         NULL},
        {{"redistribute", "--mesh", "65536", "--shape", "3", "--from", "R", "--to", "S(0,balanced)",
          NULL},
         0,
         NULL},
        {{"redistribute", "--mesh", "65536", "--shape", "3", "--from", "SS(0,3)", "--to", "R",
          NULL},
         0,
         NULL},
        {{"show", "--mesh", "4096", "--shape", "100000", "--placements", "S(0,balanced)", NULL},
         0,
         NULL},
        {{"redistribute", "--mesh", "2x2x2x2x2x2x2x2", "--shape", "2,2,2,2,2,2,2,2", "--from",
          "S(0),S(1),S(2),S(3),S(4),S(5),S(6),S(7)", "--to",
          "S(7),S(6),S(5),S(4),S(3),S(2),S(1),S(0)", NULL},
         0,
         NULL},
        {{"redistribute", "--mesh", "2x2x2x2x2x2x2x2", "--shape", "300", "--from",
          "SS(0,3),SS(0,5),S(0),R,P,SS(0,7),S(0,balanced),S(0,last)", "--to",
          "S(0),S(0),S(0),S(0),S(0),S(0),S(0),S(0)", NULL},
         0,
         NULL},
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
        /* nothing selected is not a pass, as with an empty directory */
        {{"run", yaml, "-k", "zzz", NULL},
         2,
         "no case matches -k 'zzz' (1 case in 1 file searched"},
        {{"run", yaml, "-k", "zzz", "-k", "yyy", NULL}, 2, "no case matches -k 'zzz' or 'yyy'"},
        {{"run", yaml, "-k", "tiny", NULL}, 0, NULL},
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
    snprintf(g_out_path, sizeof g_out_path, "%s/test_cli.stdout", g_dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_layout_arguments),
        cmocka_unit_test(test_bad_redistribute_arguments),
        cmocka_unit_test(test_extreme_layouts),
        cmocka_unit_test(test_run_bad_paths),
        cmocka_unit_test(test_pytorch_spellings),
        cmocka_unit_test(test_shape_blamed),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_max_memory),
        cmocka_unit_test(test_rules_option),
        cmocka_unit_test(test_help_defines_terms),
        cmocka_unit_test(test_json_per_rank_bytes),
        cmocka_unit_test(test_numerics),
        cmocka_unit_test(test_numerics_sampled_scale),
        cmocka_unit_test(test_show_table),
        cmocka_unit_test(test_show_ragged),
        cmocka_unit_test(test_show_ragged_json),
        cmocka_unit_test(test_redistribute_ragged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
