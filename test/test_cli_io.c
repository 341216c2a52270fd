/* test/test_cli_io.c — the `localtensor` binary against what surrounds it:
 * directories with link loops, output that cannot be written (stdout on
 * /dev/full, report files past a file-size limit), report files written by
 * several runs at once or by a run that is killed, FIFOs and devices named
 * as scenario files, arguments and names with control bytes or of 2 KB,
 * sizes and environment variables blamed on what is really wrong.
 *
 * The binary is run as a child process, found next to this test (the build
 * directory); a hang shows as SIGALRM after CHILD_SECONDS. Every expected
 * message is built from the rule it follows (strerror of the failing call,
 * the element size of the dtype), not pasted from a run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "kernels/status_impl.h"
#include "test/testutil.h"

#define CHILD_SECONDS 60
#define MAX_ARGS 24

static char g_bin[1100];
static char g_tmp[1100];   /* this test's folder, under the build directory */

/* How a child runs. */
typedef struct child_opts {
    const char *
        stdout_path; /* stdout goes there (created; a device is opened as it is); NULL: /dev/null */
    long fsize; /* > 0: RLIMIT_FSIZE in bytes, SIGXFSZ ignored (a write past it fails, EFBIG) */
    const char *env;           /* "NAME=VALUE" added to the child's environment, or NULL */
    int quiet;                 /* stderr to /dev/null (not read back) */
} child_opts;

/* Starts g_bin with args (NULL-terminated) as o says; *errfd gets the read
 * end of its stderr (-1 when quiet). Returns the pid. */
static pid_t spawn(const char *const *args, const child_opts *o, int *errfd) {
    int fd[2] = {-1, -1};
    if (!o->quiet && pipe(fd)) fail_msg("pipe failed");
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork failed");
    if (pid == 0) {
        char *argv[MAX_ARGS + 2];
        int k = 0;
        argv[k++] = g_bin;
        for (; args[k - 1] && k <= MAX_ARGS; k++) argv[k] = (char *)args[k - 1];
        argv[k] = NULL;
        int out = o->stdout_path ? open(o->stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0600)
                                 : open("/dev/null", O_WRONLY);
        if (out >= 0) dup2(out, 1);
        if (o->quiet) {
            int dn = open("/dev/null", O_WRONLY);
            if (dn >= 0) dup2(dn, 2);
        } else {
            dup2(fd[1], 2);
            close(fd[0]);
            close(fd[1]);
        }
        if (o->env) {
            char name[128];
            const char *eq = strchr(o->env, '=');
            snprintf(name, sizeof name, "%.*s", (int)(eq - o->env), o->env);
            setenv(name, eq + 1, 1);
        }
        if (o->fsize > 0) {
            struct rlimit rl = {(rlim_t)o->fsize, (rlim_t)o->fsize};
            signal(SIGXFSZ, SIG_IGN);   /* ignored stays ignored across exec */
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        alarm(CHILD_SECONDS);   /* survives exec: a hang ends in SIGALRM */
        execv(g_bin, argv);
        _exit(127);
    }
    if (!o->quiet) close(fd[1]);
    *errfd = fd[0];
    return pid;
}

/* Reads the child's stderr into err[n] (when errfd >= 0) and waits for it.
 * Returns its exit code, or 128 + the signal that ended it. */
static int finish(pid_t pid, int errfd, char *err, size_t n) {
    size_t used = 0;
    if (errfd >= 0) {
        char tmp[4096];
        ssize_t got;
        while ((got = read(errfd, tmp, sizeof tmp)) > 0) {
            size_t take = (size_t)got < n - 1 - used ? (size_t)got : n - 1 - used;
            memcpy(err + used, tmp, take);
            used += take;
        }
        close(errfd);
    }
    if (err) err[used] = '\0';
    int status;
    if (waitpid(pid, &status, 0) < 0) fail_msg("waitpid failed");
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    if (WEXITSTATUS(status) == 127)
        fail_msg("%s not found or not executable (build it first: make)", g_bin);
    return WEXITSTATUS(status);
}

static int run_cli(const char *const *args, const child_opts *o, char *err, size_t n) {
    int errfd;
    pid_t pid = spawn(args, o, &errfd);
    int rc = finish(pid, errfd, err, n);
    if (strstr(err, "Sanitizer") || strstr(err, "runtime error"))
        fail_msg("sanitizer report:\n%s", err);
    return rc;
}

static void expect_in(const char *what, const char *text, const char *want) {
    if (!strstr(text, want)) fail_msg("%s does not contain \"%s\":\n%s", what, want, text);
}

/* path + "/" + name into buf[n]; returns buf. */
static char *join(char *buf, size_t n, const char *dir, const char *name) {
    snprintf(buf, n, "%s/%s", dir, name);
    return buf;
}

/* Removes path and everything under it, links not followed. */
static void rm_tree(const char *path) {
    struct stat sb;
    if (lstat(path, &sb)) return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        char p[2400];
        while (d && (e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                rm_tree(join(p, sizeof p, path, e->d_name));
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* A fresh, empty folder under g_tmp into buf[n]. */
static char *fresh_dir(char *buf, size_t n, const char *name) {
    join(buf, n, g_tmp, name);
    rm_tree(buf);
    if (mkdir(buf, 0700)) fail_msg("cannot make %s", buf);
    return buf;
}

/* The names in dir that start with prefix (a temporary report file left
 * behind): how many. */
static int count_prefixed(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) n += !strncmp(e->d_name, prefix, strlen(prefix));
    if (d) closedir(d);
    return n;
}

static const char tiny_yaml[] =
    "name: tiny\nmesh: {shape: [2]}\ntensors:\n  x: {shape: [3]}\nsteps:\n"
    "  - distribute: {tensor: x, placements: [\"S(0)\"], as: y}\n";

/* A sweep of 1728 cases: a JSON report of about a megabyte, written over
 * the whole run. */
static const char sweep_yaml[] =
    "name: many\ntensors:\n  x: {shape: [6, 5], dtype: $dtype}\nsweep:\n"
    "  mesh: [2x2, 2x3, 3x2, 4, 2, 3, 6, 8]\n  dtype: [f32, f64, bf16, f16, i32, i64]\n"
    "  from: {each: [R, \"S(0)\", \"S(1)\"]}\n  to: {each: [R, \"S(0)\", \"S(1)\"]}\nsteps:\n"
    "  - distribute: {tensor: x, placements: $from, as: xd}\n  - redistribute: {tensor: xd, to: "
    "$to, as: y}\n"
    "  - expect_full: {tensor: y, equals: x, rtol: 0, atol: 0}\n";

/* ---- 1. links: each real directory walked once, each file run once ---------------------- */

static void test_link_loops(void **state) {
    (void)state;
    char d[1200], p[1300], q[1300], want[3000], outp[1300];
    static char err[1 << 16];
    fresh_dir(d, sizeof d, "loop");
    lt_test_write_file(join(p, sizeof p, d, "x.yaml"), tiny_yaml);
    /* two links to the directory itself: 2^depth paths when followed */
    if (symlink(".", join(p, sizeof p, d, "a")) || symlink(".", join(q, sizeof q, d, "b")))
        fail_msg("symlink failed");
    /* a link to the file, sorted before it */
    if (symlink("x.yaml", join(p, sizeof p, d, "l.yaml"))) fail_msg("symlink failed");
    join(outp, sizeof outp, g_tmp, "loop.out");
    child_opts o = {outp, 0, NULL, 0};
    const char *a1[] = {"run", d, NULL};
    int rc = run_cli(a1, &o, err, sizeof err);
    if (rc != 0) fail_msg("run over a link loop: exit %d, wanted 0:\n%s", rc, err);
    char *out = lt_test_slurp(outp, NULL);
    /* the file runs once, under its own name, not the link's */
    snprintf(want, sizeof want, "ok    %s/x.yaml: tiny", d);
    expect_in("stdout", out, want);
    expect_in("stdout", out, "1 passed, 0 failed, 0 errors");
    free(out);
    snprintf(want, sizeof want, "skipped %s/a: a link to a directory already walked (%s)", d, d);
    expect_in("stderr", err, want);
    snprintf(want, sizeof want, "skipped %s/b: a link to a directory already walked (%s)", d, d);
    expect_in("stderr", err, want);
    snprintf(want, sizeof want, "skipped %s/l.yaml: a link to a file already run (%s/x.yaml)", d,
             d);
    expect_in("stderr", err, want);
    /* the same file named and found again: run once */
    const char *a2[] = {"run", join(p, sizeof p, d, "x.yaml"), d, NULL};
    assert_int_equal(run_cli(a2, &o, err, sizeof err), 0);
    out = lt_test_slurp(outp, NULL);
    expect_in("stdout", out, "1 case in 1 scenario from 1 file");
    free(out);
    snprintf(want, sizeof want, "skipped %s/x.yaml: reached twice (each file is run once)", d);
    expect_in("stderr", err, want);
    remove(outp);
    rm_tree(d);
}

/* ---- 2. output that cannot be written is an error ------------------------------------- */

static void test_stdout_full(void **state) {
    (void)state;
    static char err[1 << 16];
    struct stat sb;
    if (stat("/dev/full", &sb) || !S_ISCHR(sb.st_mode)) {
        printf("skipped: no /dev/full on this machine\n");
        return;
    }
    char d[1200], y[1300], want[512];
    fresh_dir(d, sizeof d, "full");
    lt_test_write_file(join(y, sizeof y, d, "t.yaml"), tiny_yaml);
    snprintf(want, sizeof want, "localtensor: cannot write the output: %s", strerror(ENOSPC));
    const char *cmds[][MAX_ARGS] = {
        {"show", "--mesh", "2", "--shape", "4", "--placements", "S(0)", NULL},
        /* more than a stdio buffer: a write fails while the command runs */
        {"show", "--mesh", "4", "--shape", "64,64", "--placements", "S(0)", "--json", NULL},
        {"redistribute", "--mesh", "2", "--shape", "4", "--from", "S(0)", "--to", "R", "--json",
         NULL},
        {"run", y, NULL},
        {"--version", NULL},
    };
    child_opts o = {"/dev/full", 0, NULL, 0};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        int rc = run_cli(cmds[i], &o, err, sizeof err);
        if (rc != 2) fail_msg("%s ... > /dev/full: exit %d, wanted 2:\n%s", cmds[i][0], rc, err);
        expect_in("stderr", err, want);
    }
    rm_tree(d);
}

/* A report past RLIMIT_FSIZE: exit 2 naming the file and the reason, the
 * old report kept, no temporary file left. */
static void test_report_write_fails(void **state) {
    (void)state;
    static char err[1 << 16];
    char d[1200], y[1300], r[1300], want[3000];
    fresh_dir(d, sizeof d, "fsize");
    lt_test_write_file(join(y, sizeof y, d, "t.yaml"), tiny_yaml);
    const char *opts[] = {"--json", "--junit"};
    const char *names[] = {"r.json", "r.xml"};
    for (int i = 0; i < 2; i++) {
        join(r, sizeof r, d, names[i]);
        lt_test_write_file(r, "old\n");
        /* the reports are bigger than 100 bytes; nothing else is a file */
        child_opts o = {NULL, 100, NULL, 0};
        const char *a[] = {"run", y, opts[i], r, NULL};
        int rc = run_cli(a, &o, err, sizeof err);
        if (rc != 2)
            fail_msg("run %s past the file size limit: exit %d, wanted 2:\n%s", opts[i], rc, err);
        snprintf(want, sizeof want, "%s: cannot write %s: %s", opts[i], r, strerror(EFBIG));
        expect_in("stderr", err, want);
        char *kept = lt_test_slurp(r, NULL);
        if (!kept || strcmp(kept, "old\n"))
            fail_msg("%s changed after a failed write: '%s'", r, kept ? kept : "(gone)");
        free(kept);
        char pre[64];
        snprintf(pre, sizeof pre, "%s.tmp", names[i]);
        if (count_prefixed(d, pre)) fail_msg("a temporary %s* file was left in %s", pre, d);
    }
    rm_tree(d);
}

/* ---- 3. reports are never left half-written ------------------------------------------- */

static void test_concurrent_reports(void **state) {
    (void)state;
    char d[1200], y[1300], r[1300], x[1300];
    fresh_dir(d, sizeof d, "concurrent");
    lt_test_write_file(join(y, sizeof y, d, "sweep.yaml"), sweep_yaml);
    join(r, sizeof r, d, "r.json");
    join(x, sizeof x, d, "r.xml");
    const char *a[] = {"run", y, "--json", r, "--junit", x, NULL};
    child_opts o = {NULL, 0, NULL, 1};
    pid_t pid[4];
    int fd;
    for (int i = 0; i < 4; i++) pid[i] = spawn(a, &o, &fd);
    for (int i = 0; i < 4; i++) {
        int rc = finish(pid[i], -1, NULL, 0);
        if (rc != 0) fail_msg("run %d of 4: exit %d", i, rc);
    }
    char *text = lt_test_slurp(r, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    if (!j) fail_msg("four runs writing %s left JSON that does not parse", r);
    cJSON *counts = cJSON_GetObjectItemCaseSensitive(j, "counts");
    cJSON *cases = cJSON_GetObjectItemCaseSensitive(counts, "cases");
    cJSON *passed = cJSON_GetObjectItemCaseSensitive(counts, "passed");
    if (!cJSON_IsNumber(cases) || cases->valueint < 100 || !cJSON_IsNumber(passed) ||
        passed->valueint != cases->valueint)
        fail_msg("the JSON report does not count every case of the sweep as passed");
    cJSON_Delete(j);
    free(text);
    text = lt_test_slurp(x, NULL);
    if (!text || !strstr(text, "<testsuites ") || strlen(text) < 14 ||
        strcmp(text + strlen(text) - 14, "</testsuites>\n"))
        fail_msg("four runs writing %s left an incomplete JUnit file", x);
    free(text);
    if (count_prefixed(d, "r.json.tmp") || count_prefixed(d, "r.xml.tmp"))
        fail_msg("a temporary report file was left in %s", d);
    rm_tree(d);
}

/* A run killed while it writes its reports leaves the old ones whole. */
static void test_killed_run_keeps_reports(void **state) {
    (void)state;
    char d[1200], y[1300], r[1300], x[1300];
    fresh_dir(d, sizeof d, "killed");
    /* long enough to be killed in the middle: the sweep in five files */
    join(y, sizeof y, d, "sweeps");
    if (mkdir(y, 0700)) fail_msg("cannot make %s", y);
    for (int i = 0; i < 5; i++) {
        char name[32], p[1400];
        snprintf(name, sizeof name, "s%d.yaml", i);
        lt_test_write_file(join(p, sizeof p, y, name), sweep_yaml);
    }
    join(r, sizeof r, d, "r.json");
    join(x, sizeof x, d, "r.xml");
    lt_test_write_file(r, "old\n");
    lt_test_write_file(x, "old\n");
    const char *a[] = {"run", y, "--json", r, "--junit", x, NULL};
    child_opts o = {NULL, 0, NULL, 1};
    int fd;
    pid_t pid = spawn(a, &o, &fd);
    /* killed once its report is being written (or after a second) */
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 1000 && !count_prefixed(d, "r.json.tmp"); i++) nanosleep(&ms, NULL);
    kill(pid, SIGKILL);
    assert_int_equal(finish(pid, -1, NULL, 0), 128 + SIGKILL);
    const char *kept[] = {r, x};
    for (int i = 0; i < 2; i++) {
        char *t = lt_test_slurp(kept[i], NULL);
        if (!t || strcmp(t, "old\n"))
            fail_msg("a killed run changed %s: '%.80s'", kept[i], t ? t : "(gone)");
        free(t);
    }
    rm_tree(d);   /* with the killed run's temporary files */
}

/* ---- 4. FIFOs and devices are refused, not read for ever ------------------------------ */

static void test_fifo_and_device(void **state) {
    (void)state;
    static char err[1 << 16];
    char d[1200], f[1300], want[1500];
    fresh_dir(d, sizeof d, "fifo");
    if (mkfifo(join(f, sizeof f, d, "f.yaml"), 0600)) fail_msg("mkfifo failed");
    child_opts o = {NULL, 0, NULL, 0};
    const char *a1[] = {"run", f, NULL};
    int rc = run_cli(a1, &o, err, sizeof err);
    if (rc != 2) fail_msg("run FIFO: exit %d, wanted 2:\n%s", rc, err);
    snprintf(want, sizeof want, "%s:1:1: cannot run a FIFO (named pipe)", f);
    expect_in("stderr", err, want);
    /* in a directory, a FIFO is not a scenario file: passed over */
    lt_test_write_file(join(f, sizeof f, d, "t.yaml"), tiny_yaml);
    const char *a2[] = {"run", d, NULL};
    assert_int_equal(run_cli(a2, &o, err, sizeof err), 0);
    struct stat sb;
    if (!stat("/dev/zero", &sb) && S_ISCHR(sb.st_mode)) {
        const char *a3[] = {"run", "/dev/zero", NULL};
        rc = run_cli(a3, &o, err, sizeof err);
        if (rc != 2) fail_msg("run /dev/zero: exit %d, wanted 2:\n%s", rc, err);
        expect_in("stderr", err, "/dev/zero:1:1: cannot run a character device");
    }
    rm_tree(d);
}

/* ---- 5. echoed names and arguments: escaped and cut ------------------------------------- */

/* No control byte but newline (and tab) reached the terminal. */
static void expect_no_controls(const char *what, const char *text) {
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
            fail_msg("%s holds control byte 0x%02x:\n%s", what, *p, text);
}

static void test_escaped_echoes(void **state) {
    (void)state;
    static char err[1 << 16];
    char d[1200], f[1300], outp[1300], want[3000];
    child_opts o = {NULL, 0, NULL, 0};
    const char *a1[] = {"show",         "--mesh",          "2", "--shape", "4",
                        "--placements", "S(0)\033[31mred", NULL};
    assert_int_equal(run_cli(a1, &o, err, sizeof err), 2);
    expect_no_controls("stderr", err);
    expect_in("stderr", err, "S(0)\\x1b[31mred");
    const char *a2[] = {"show", "--bogus\033]0;title\007", NULL};
    assert_int_equal(run_cli(a2, &o, err, sizeof err), 2);
    expect_no_controls("stderr", err);
    expect_in("stderr", err, "unknown argument '--bogus\\x1b]0;title\\x07'");
    const char *a3[] = {"run", "--world", "\033[2J", NULL};
    assert_int_equal(run_cli(a3, &o, err, sizeof err), 2);
    expect_no_controls("stderr", err);

    /* scenario files whose names hold ESC (a scenario's name may not) */
    fresh_dir(d, sizeof d, "escape");
    lt_test_write_file(join(f, sizeof f, d, "e\033[31m.yaml"), tiny_yaml);
    lt_test_write_file(join(f, sizeof f, d, "f\033[31m.yaml"), "name: [broken\n");
    join(outp, sizeof outp, g_tmp, "escape.out");
    o.stdout_path = outp;
    const char *a4[] = {"run", d, NULL};
    assert_int_equal(run_cli(a4, &o, err, sizeof err), 2);   /* the broken file */
    char *out = lt_test_slurp(outp, NULL);
    expect_no_controls("stdout", out);
    expect_no_controls("stderr", err);
    snprintf(want, sizeof want, "%s/e\\x1b[31m.yaml: tiny", d);
    expect_in("stdout", out, want);
    snprintf(want, sizeof want, "ERROR %s/f\\x1b[31m.yaml: could not be loaded", d);
    expect_in("stdout", out, want);
    snprintf(want, sizeof want, "%s/f\\x1b[31m.yaml:", d);
    expect_in("stderr", err, want);
    free(out);
    remove(outp);
    rm_tree(d);
}

/* A 2 KB argument is cut in what echoes it, and the reason stays in view. */
static void test_long_arguments_cut(void **state) {
    (void)state;
    static char err[1 << 16];
    child_opts o = {NULL, 0, NULL, 0};
    char big[2100];
    memset(big, 'x', 2000);
    snprintf(big + 2000, 100, "END");
    char bogus[2200];
    snprintf(bogus, sizeof bogus, "--bogus%s", big);
    /* the echo keeps the argument's beginning and end around "..." */
    const char *a1[] = {"show", bogus, NULL};
    assert_int_equal(run_cli(a1, &o, err, sizeof err), 2);
    const char *line = strstr(err, "unknown argument '--bogusxxx");
    if (!line || strchr(line, '\n') - line > LT_CLI_ECHO_MAX + 40 || !strstr(line, "...") ||
        strncmp(strchr(line, '\n') - 4, "END'", 4))
        fail_msg("the unknown argument is not cut to its beginning ... end:\n%.300s", err);
    /* a library message that echoes the argument twice: the reason is the
     * one a short argument with the same defect gets */
    char sizes[4200] = "S(0,[";
    for (int i = 0; i < 1000; i++) strcat(sizes, i ? ",1" : "1");
    strcat(sizes, "])");
    const char *a2[] = {"show", "--mesh", "2", "--shape", "4", "--placements", sizes, NULL};
    assert_int_equal(run_cli(a2, &o, err, sizeof err), 2);
    const char *reason = strrchr(err, ':');
    if (!reason || strlen(err) > 400) fail_msg("a 2 KB --placements is not cut:\n%.600s", err);
    char few[400] = "S(0,[";
    for (int i = 0; i < 65; i++) strcat(few, i ? ",1" : "1");
    strcat(few, "])");
    static char err2[1 << 14];
    const char *a3[] = {"show", "--mesh", "2", "--shape", "4", "--placements", few, NULL};
    assert_int_equal(run_cli(a3, &o, err2, sizeof err2), 2);
    const char *reason2 = strrchr(err2, ':');
    if (!reason2 || strcmp(reason, reason2))
        fail_msg("the reason was lost:\n%s\nwanted the end of:\n%s", err, err2);
    const char *a4[] = {"show",         "--mesh", "2",       "--shape", "4",
                        "--placements", "R",      "--dtype", big,       NULL};
    assert_int_equal(run_cli(a4, &o, err, sizeof err), 2);
    if (strlen(err) > 600 || !strstr(err, "bool"))
        fail_msg("a 2 KB --dtype hides the dtypes expected:\n%.800s", err);
}

/* ---- 6. sizes and environment variables blamed on what is wrong ------------------------- */

static void test_sizes_and_environment(void **state) {
    (void)state;
    static char err[1 << 16];
    char want[512];
    child_opts o = {NULL, 0, NULL, 0};
    /* INT64_MAX elements fit in 64 bits: what is wrong is their bytes */
    const char *a1[] = {"show",         "--mesh", "2", "--shape", "9223372036854775807",
                        "--placements", "R",      NULL};
    assert_int_equal(run_cli(a1, &o, err, sizeof err), 2);
    if (strstr(err, "overflows")) fail_msg("INT64_MAX reported as an overflow:\n%s", err);
    expect_in("stderr", err,
              "--shape 9223372036854775807: the tensor has 9223372036854775807 elements");
    /* one more is past 64 bits */
    const char *a2[] = {"show",         "--mesh", "2", "--shape", "9223372036854775808",
                        "--placements", "R",      NULL};
    assert_int_equal(run_cli(a2, &o, err, sizeof err), 2);
    expect_in("stderr", err, "--shape");
    /* the bytes are of the dtype's size: 2^30 x 2^10 elements of f64 are
     * 2^43 bytes, 8192 GiB; 2^61 bools are 2^61 bytes */
    const char *a3[] = {"show", "--mesh",       "2", "--shape", "1073741824,1024", "--dtype",
                        "f64",  "--placements", "R", NULL};
    assert_int_equal(run_cli(a3, &o, err, sizeof err), 2);
    snprintf(want, sizeof want, "the tensor has %lld elements (%.1f GiB of f64)", 1LL << 40,
             (double)(1LL << 40) * 8 / 1073741824.0);
    expect_in("stderr", err, want);
    const char *a4[] = {"show", "--mesh",       "2", "--shape", "2305843009213693952", "--dtype",
                        "bool", "--placements", "R", NULL};
    assert_int_equal(run_cli(a4, &o, err, sizeof err), 2);
    snprintf(want, sizeof want, "the tensor has %lld elements (%.1f GiB of bool)", 1LL << 61,
             (double)(1LL << 61) / 1073741824.0);
    expect_in("stderr", err, want);
    /* a bad environment variable is blamed on itself, not on an argument */
    const char *cmds[][MAX_ARGS] = {
        {"show", "--mesh", "2", "--shape", "4", "--placements", "S(0)", NULL},
        {"redistribute", "--mesh", "2", "--shape", "4", "--from", "S(0)", "--to", "R", NULL},
    };
    o.env = "LOCALTENSOR_MEMORY_LIMIT=garbage";
    for (int i = 0; i < 2; i++) {
        assert_int_equal(run_cli(cmds[i], &o, err, sizeof err), 2);
        expect_in("stderr", err, "localtensor: LOCALTENSOR_MEMORY_LIMIT: 'garbage'");
        if (strstr(err, "--placements") || strstr(err, "--from"))
            fail_msg("an argument blamed:\n%s", err);
    }
    o.env = "LT_BACKEND=garbage";
    assert_int_equal(run_cli(cmds[0], &o, err, sizeof err), 2);
    expect_in("stderr", err, "LT_BACKEND garbage: ");
    if (strstr(err, "--")) fail_msg("an argument blamed:\n%s", err);
}

/* The helpers under the messages (kernels/status.c): escapes, cuts at
 * whole UTF-8 characters, and messages too long for the buffer keep their
 * end. */
static void test_message_helpers(void **state) {
    (void)state;
    char buf[LT_CLI_ECHO_BUF];
    assert_string_equal(lt__echo("a\033[1mb\tc\n", 0, buf, sizeof buf), "a\\x1b[1mb\\x09c\\x0a");
    assert_string_equal(lt__echo("\xc2\x9b"
                                 "2J \xc3\xa9",
                                 0, buf, sizeof buf),
                        "\\xc2\\x9b2J \xc3\xa9");
    /* 100 two-byte characters cut to about 80 bytes: whole characters only */
    char text[256] = "";
    for (int i = 0; i < 100; i++) strcat(text, "\xc3\xa9");
    lt__echo(text, 80, buf, sizeof buf);
    const char *dots = strstr(buf, "...");
    if (!dots || strlen(buf) > 84) fail_msg("not cut to about 80 bytes: %s", buf);
    for (const char *p = buf; *p; p++)
        if (p != dots && p != dots + 1 && p != dots + 2 && ((p[0] == '\xc3') != (p[1] == '\xa9')))
            fail_msg("a character was cut in two: %s", buf);
    /* a full buffer ends at a whole escape */
    char small[6];
    assert_string_equal(lt__echo("ab\033", 0, small, sizeof small), "ab");
    /* a message that echoes 3000 bytes still ends with its reason */
    char big[3001];
    memset(big, 'y', 3000);
    big[3000] = '\0';
    lt__err(LT_INVALID, "name '%s': the reason", big);
    lt__err_ctx(LT_INVALID, "--arg %s", big);
    const char *m = lt_errmsg();
    if (strlen(m) > 2047 || strncmp(m, "--arg yyy", 9) ||
        strcmp(m + strlen(m) - 13, "': the reason"))
        fail_msg("the reason was lost: ...%s", m + (strlen(m) > 60 ? strlen(m) - 60 : 0));
}

int main(int argc, char **argv) {
    (void)argc;
    const char *slash = strrchr(argv[0], '/');
    char dir[1024];
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - argv[0]), argv[0]);
    else snprintf(dir, sizeof dir, ".");
    snprintf(g_bin, sizeof g_bin, "%s/localtensor", dir);
    lt_test_tmpdir(g_tmp, sizeof g_tmp, argv[0], "test_cli_io.tmp");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_link_loops),
        cmocka_unit_test(test_stdout_full),
        cmocka_unit_test(test_report_write_fails),
        cmocka_unit_test(test_concurrent_reports),
        cmocka_unit_test(test_killed_run_keeps_reports),
        cmocka_unit_test(test_fifo_and_device),
        cmocka_unit_test(test_escaped_echoes),
        cmocka_unit_test(test_long_arguments_cut),
        cmocka_unit_test(test_sizes_and_environment),
        cmocka_unit_test(test_message_helpers),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_tree(g_tmp);
    return rc;
}
