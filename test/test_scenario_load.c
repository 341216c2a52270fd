/* test/test_scenario_load.c — loading scenario files at the loader's size
 * limits, and the memory a run's declared tensors take.
 *
 * Load time is linear. A file near LT_SC_MAX_FILE_BYTES holding 140,000
 * steps, 100,000 scenarios or 140,000 anchors and aliases loads in a
 * fraction of a second; the quadratic loader took 60 to 80 s on each
 * (every lookup of a name scanned the names defined so far, every
 * scenario name was compared with every other, every alias scanned the
 * anchors and every collection's end all of them). Each load runs in a
 * child process under a CPU limit of CPU_SECONDS (setrlimit RLIMIT_CPU):
 * a quadratic load dies of SIGXCPU, a linear one finishes with room to
 * spare even on a slow machine; nothing depends on wall time. Under
 * AddressSanitizer or valgrind the files are a quarter of the size and
 * the limit is higher: those builds check memory, the plain build speed.
 *
 * The names index follows loops: with lt__sc_sym_crosscheck set, every
 * lookup is made a second time by scanning the names (the old way) and a
 * disagreement is counted; random programs of nested `repeat:` loops that
 * redefine names (kinds kept, dims changed: what scenario_loop.c rewrites
 * at the end of an iteration) and the whole scenario library load with
 * none.
 *
 * The memory budget covers the declared tensors (--max-memory, in a child
 * process running `localtensor run` in-process): tensors that do not fit
 * together are refused before any is built, and tensors that fit are
 * charged for the whole case, so a step that would not fit beside them is
 * refused too. The child's peak resident size (VmHWM) stays under the
 * budget plus 16 MiB (7 and 71 MiB here); before, it built 256 MiB of
 * tensors under a 100 MiB budget (peak 327 MiB), and distributed a 64 MiB
 * tensor beside itself (135 MiB).
 *
 * Runs from the repository root (the scenario library is scenarios/).
 */
#include <dirent.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/memlimit_impl.h"
#include "test/testutil.h"
#include "tools/scenario/scenario.h"
#include "tools/scenario/scenario_impl.h"

/* tools/scenario/scenario_load.c, test-only */
extern int lt__sc_sym_crosscheck;
extern atomic_long lt__sc_sym_disagree;

#define CPU_SECONDS (SANITIZED ? 60 : 20)
#define SCALE (SANITIZED ? 4 : 1)   /* the files are 1/SCALE of the size */
#define MIB ((uint64_t)1 << 20)

static char g_tmpdir[512];

static void expect_text(const char *text, const char *want) {
    if (!strstr(text, want)) fail_msg("wanted \"%s\" in:\n%s", want, text);
}

/* ---- text ------------------------------------------------------------------------------- */

typedef struct text {
    char *s;
    size_t n, cap;
} text;

static void put(text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void put(text *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (w < 0) fail_msg("vsnprintf failed");
        if (t->s && t->n + (size_t)w < t->cap) {
            t->n += (size_t)w;
            return;
        }
        t->cap = t->cap * 2 + (size_t)w + 4096;
        t->s = realloc(t->s, t->cap);
        if (!t->s) fail_msg("out of memory");
        t->s[t->n] = '\0';
    }
}

/* nscen scenarios of `per` steps: a distribute, then redistributes that
 * each define a new name from the first one (the name a scan from the
 * last definition reaches last). */
static void gen_steps(text *t, int nscen, int per) {
    for (int k = 0; k < nscen; k++) {
        put(t, "- name: big%d\n  mesh: 2\n  tensors:\n    x0: {shape: [4]}\n  steps:\n"
               "    - distribute: {tensor: x0, placements: [R], as: d0}\n", k);
        for (int i = 1; i < per; i++)
            put(t, "    - redistribute: {tensor: d0, to: [R], as: d%d}\n", i);
    }
}

/* n one-line scenarios s0, s1, ... */
static void gen_scenarios(text *t, int n) {
    for (int k = 0; k < n; k++) put(t, "- {name: s%d, mesh: 1, steps: [mark_comm]}\n", k);
}

/* A scenario declaring n tensors, each with an anchor, and one declaring n
 * more, each an alias of one of them. */
static void gen_aliases(text *t, int n) {
    put(t, "- name: anchors\n  mesh: 2\n  tensors:\n");
    for (int i = 0; i < n; i++) put(t, "    t%d: &a%d {shape: [1]}\n", i, i);
    put(t, "  steps:\n    - mark_comm\n- name: aliases\n  mesh: 2\n  tensors:\n");
    for (int i = 0; i < n; i++) put(t, "    u%d: *a%d\n", i, i);
    put(t, "  steps:\n    - mark_comm\n");
}

/* ---- loads under a CPU limit ---------------------------------------------------------------- */

/* What a child checks after loading text: LT_OK, or the message it wants
 * (a substring of lt_errmsg()) with nscen -1; else the scenarios it wants. */
typedef struct load_want {
    const char *error;
    int nscen;
    int ncases;
} load_want;

/* Loads t in a child process limited to CPU_SECONDS of CPU, which exits 0
 * when the load gave what w says (1 with the reason on stderr otherwise).
 * Fails the test when it did not, or when it ran out of CPU time. */
static void load_in_child(const char *what, const text *t, load_want w) {
    if (t->n > LT_SC_MAX_FILE_BYTES)
        fail_msg("%s: the file is %zu bytes, over the loader's limit", what, t->n);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {(rlim_t)CPU_SECONDS, (rlim_t)CPU_SECONDS + 5};
        if (setrlimit(RLIMIT_CPU, &rl)) _exit(90);
        lt_sc_file *f = NULL;
        lt_status st = lt_sc_load_string(what, t->s, t->n, &f);
        int ok = w.error ? st != LT_OK && strstr(lt_errmsg(), w.error)
                         : st == LT_OK && lt_sc_file_scenarios(f) == w.nscen &&
                               lt_sc_file_cases(f) == w.ncases;
        if (!ok)
            fprintf(stderr, "%s: status %s, %d scenarios, %d cases: %s\n", what, lt_status_name(st),
                    lt_sc_file_scenarios(f), lt_sc_file_cases(f), lt_errmsg());
        lt_sc_file_free(f);
        fflush(stderr);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg(
            "%s: loading %zu bytes %s after %d s of CPU (a load that is not linear)", what, t->n,
            WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGKILL ? "was stopped" : "crashed",
            CPU_SECONDS);
    if (WEXITSTATUS(status))
        fail_msg("%s: the load did not give what it should (exit %d)", what, WEXITSTATUS(status));
}

/* 140,000 steps in two scenarios of 70,000 (a case holds at most
 * LT_SC_MAX_UNROLLED steps), 7.5 MB: took 79 s. */
static void test_many_steps(void **state) {
    (void)state;
    text t = {0};
    int per = 70000 / SCALE;
    gen_steps(&t, 2, per);
    load_in_child("steps.yaml", &t, (load_want){NULL, 2, 2});
    /* a name used before it is defined is still found missing at the end */
    put(&t, "    - redistribute: {tensor: d%d, to: [R], as: late}\n", per);
    load_in_child("steps_undefined.yaml", &t, (load_want){"redistribute: tensor 'd", -1, 0});
    free(t.s);
}

/* 100,000 scenarios, 4.6 MB, and the same with a name used twice at the
 * end: took 62 s each. */
static void test_many_scenarios(void **state) {
    (void)state;
    text t = {0};
    int n = 100000 / SCALE;
    gen_scenarios(&t, n);
    load_in_child("scenarios.yaml", &t, (load_want){NULL, n, n});
    put(&t, "- {name: s7, mesh: 1, steps: [mark_comm]}\n");
    load_in_child(
        "scenarios_twice.yaml", &t,
        (load_want){"scenario name 's7' is used twice in this file (first at line 8)", -1, 0});
    free(t.s);
}

/* 140,000 anchors and as many aliases, 7.4 MB: took 25 s for 100,000. */
static void test_many_aliases(void **state) {
    (void)state;
    text t = {0};
    gen_aliases(&t, 140000 / SCALE);
    load_in_child("aliases.yaml", &t, (load_want){NULL, 2, 2});
    free(t.s);
    /* an anchor defined again: an alias takes the latest; one inside its
     * own collection is refused, one to nothing too */
    lt_sc_file *f = NULL;
    const char *again =
        "name: again\nmesh: 2\ntensors:\n  a: &s {shape: [1]}\n  b: &s {shape: [2]}\n  c: *s\n"
        "steps:\n  - mark_comm\n";
    LT_CHECK(lt_sc_load_string("again.yaml", again, strlen(again), &f));
    const sc_case *c = &f->scen[0].cases[0];
    assert_int_equal(c->ntensors, 3);
    assert_int_equal(c->tensors[2].shape[0], 2);
    lt_sc_file_free(f);
    const char *rec = "name: rec\nmesh: 2\nsteps: &l\n  - mark_comm\n  - *l\n";
    LT_EXPECT_STATUS(lt_sc_load_string("rec.yaml", rec, strlen(rec), &f), LT_INVALID);
    if (!strstr(lt_errmsg(), "alias *l refers to a collection that contains it"))
        fail_msg("%s", lt_errmsg());
    const char *none = "name: none\nmesh: 2\nsteps:\n  - *nothing\n";
    LT_EXPECT_STATUS(lt_sc_load_string("none.yaml", none, strlen(none), &f), LT_INVALID);
    if (!strstr(lt_errmsg(), "alias *nothing names no anchor defined before it"))
        fail_msg("%s", lt_errmsg());
}

/* ---- names through loops ------------------------------------------------------------------ */

static uint64_t g_rng;

static int rnd(int n) {   /* 0..n-1, deterministic */
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((g_rng >> 33) % (uint64_t)n);
}

/* Names by kind: DTensors, LocalTensors, full tensors (a name keeps its
 * kind, as a loop requires); each set bit of *def is a name defined. */
static const char *const g_dt[] = {"a", "b", "c", "x"}, *const g_lo[] = {"d", "e", "y"},
                  *const g_fu[] = {"f1", "f2", "f3"};
enum { NDT = 4, NLO = 3, NFU = 3 };

/* A name of pool (n names, bit `base + i` of def when defined): a defined
 * one when there is one, but one time in 30 any. */
static const char *pick(unsigned def, const char *const *pool, int n, int base) {
    int k = rnd(n);
    if (!rnd(30)) return pool[k];
    for (int i = 0; i < n; i++)
        if (def >> (base + (k + i) % n) & 1) return pool[(k + i) % n];
    return pool[k];
}

/* n random steps at indent ind (loops nest up to depth 3); *def: the
 * names defined (bits: DTensors 0.., LocalTensors 4.., full 8..), those
 * first defined in a loop's body gone after it. */
static void gen_body(text *t, int depth, int ind, unsigned *def, int n) {
    for (int s = 0; s < n; s++) {
        int r = rnd(100), k;
        if (r < 15 && depth < 3) {
            static const char *const times[] = {"0", "1", "2", "3", "rank + 1"};
            unsigned inner = *def;
            put(t, "%*s- repeat:\n%*s    times: %s\n", ind, "", ind, "", times[rnd(5)]);
            if (rnd(2)) put(t, "%*s    as: k%d\n", ind, "", depth);
            put(t, "%*s    steps:\n", ind, "");
            gen_body(t, depth + 1, ind + 4, &inner, 1 + rnd(4));
            continue;
        }
        if (r < 35) {
            k = rnd(NDT);
            put(t, "%*s- distribute: {tensor: %s, placements: [R], as: %s}\n", ind, "",
                pick(*def, g_fu, NFU, 8), g_dt[k]);
            *def |= 1u << k;
        } else if (r < 47) {
            k = rnd(NDT);
            put(t, "%*s- redistribute: {tensor: %s, to: [R], as: %s}\n", ind, "",
                pick(*def, g_dt, NDT, 0), g_dt[k]);
            *def |= 1u << k;
        } else if (r < 57) {
            k = rnd(NLO);
            put(t, "%*s- local_tensor: {shape: [%s], values: 0, as: %s}\n", ind, "",
                (const char *[]){"2", "2, 2", "2, 2, 2"}[rnd(3)], g_lo[k]);
            *def |= 1u << (4 + k);
        } else if (r < 67) {
            k = rnd(NLO);
            put(t, "%*s- to_local: {tensor: %s, as: %s}\n", ind, "", pick(*def, g_dt, NDT, 0),
                g_lo[k]);
            *def |= 1u << (4 + k);
        } else if (r < 90) {   /* shape(x, d): checked at load against x's dims when known */
            const char *x = rnd(2) ? pick(*def, g_dt, NDT, 0) : pick(*def, g_lo, NLO, 4);
            put(t, "%*s- show: {tensor: %s}\n%*s  when: \"shape(%s, %d) == 2\"\n", ind, "", x, ind,
                "", x, rnd(8) - 4);
        } else {
            put(t, "%*s- show: {tensor: %s}\n", ind, "",
                rnd(2) ? pick(*def, g_dt, NDT, 0) : pick(*def, g_lo, NLO, 4));
        }
    }
}

/* One random program of nested loops (seed). */
static void gen_program(text *t, uint64_t seed) {
    g_rng = seed * 0x9E3779B97F4A7C15ull + 1;
    unsigned def = 1u << 0 | 1u << 4 | 7u << 8;   /* a, d, f1..f3 */
    put(t,
        "name: r%llu\nmesh: 2\ntensors:\n  f1: {shape: [4]}\n  f2: {shape: [2, 2]}\n  f3: {shape: "
        "[2, 2, 2]}\n"
        "steps:\n  - distribute: {tensor: f2, placements: [R], as: a}\n  - to_local: {tensor: a, "
        "as: d}\n",
        (unsigned long long)seed);
    gen_body(t, 0, 2, &def, 1 + rnd(14));
}

/* Every *.yaml under dir, loaded (errors are fine: test/bad_scenarios). */
static int load_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[1024];
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".yaml")) {
            lt_sc_file *f = NULL;
            if (!lt_sc_load(path, &f)) n++;
            lt_sc_file_free(f);
        } else {
            n += load_tree(path);
        }
    }
    closedir(d);
    return n;
}

/* The index agrees with a scan on every lookup of 3,000 random loop
 * programs (a third or so load; the others stop at an error that names
 * what is defined) and of the scenario library. */
static void test_names_follow_loops(void **state) {
    (void)state;
    lt__sc_sym_crosscheck = 1;
    atomic_store(&lt__sc_sym_disagree, 0);
    int loaded = 0, programs = 3000 / SCALE;
    for (int i = 0; i < programs; i++) {
        text t = {0};
        gen_program(&t, (uint64_t)i);
        lt_sc_file *f = NULL;
        if (!lt_sc_load_string("loops.yaml", t.s, t.n, &f)) loaded++;
        lt_sc_file_free(f);
        if (atomic_load(&lt__sc_sym_disagree))
            fail_msg("the names index and a scan disagree on:\n%s", t.s);
        free(t.s);
    }
    int files = load_tree("scenarios") + load_tree("test/bad_scenarios");
    lt__sc_sym_crosscheck = 0;
    assert_int_equal(atomic_load(&lt__sc_sym_disagree), 0);
    if (loaded < programs / 5)
        fail_msg("only %d of %d random programs loaded: the generator drifted", loaded, programs);
    if (files < 50) fail_msg("only %d scenario files loaded (run from the repository root)", files);
}

/* "defined so far" lists each name once, where it was first defined, also
 * after a loop whose body's names are gone. */
static void test_defined_so_far(void **state) {
    (void)state;
    const char *s = "name: list\nmesh: 2\ntensors:\n  f: {shape: [4]}\nsteps:\n"
                    "  - distribute: {tensor: f, placements: [R], as: b}\n"
                    "  - distribute: {tensor: f, placements: [R], as: a}\n"
                    "  - redistribute: {tensor: a, to: [R], as: b}\n"
                    "  - repeat:\n      times: 2\n      steps:\n"
                    "        - redistribute: {tensor: a, to: [R], as: tmp}\n"
                    "        - redistribute: {tensor: tmp, to: [R], as: a}\n"
                    "  - redistribute: {tensor: a, to: [R], as: c}\n"
                    "  - redistribute: {tensor: tmp, to: [R], as: z}\n";
    lt_sc_file *f = NULL;
    LT_EXPECT_STATUS(lt_sc_load_string("list.yaml", s, strlen(s), &f), LT_INVALID);
    if (!strstr(lt_errmsg(), "list.yaml:15:") ||
        !strstr(lt_errmsg(), "redistribute: tensor 'tmp' is not defined (defined so far: f, b, a, "
                             "c); 'tmp' belongs to the body of the loop at line 9"))
        fail_msg("%s", lt_errmsg());
}

/* ---- the memory budget covers the declared tensors ---------------------------------------- */

/* A "Vm...:" line of /proc/self/status in kB (0: not found). */
static unsigned long long status_kb(const char *key) {
    FILE *st = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kb = 0;
    size_t n = strlen(key);
    while (st && fgets(line, sizeof line, st))
        if (!strncmp(line, key, n) && sscanf(line + n, "%llu", &kb) == 1) break;
    if (st) fclose(st);
    return kb;
}

/* Runs `localtensor --max-memory budget run` on scenario text in a child
 * process (in-process there: lt__mem_set_budget as the CLI's main does,
 * then lt_sc_main); returns the exit code, *out its report (caller frees)
 * and *hwm how far its peak resident size (VmHWM) rose above its resident
 * size before the run. */
static int run_budget(const char *name, const char *body, const char *budget, char **out,
                      uint64_t *hwm) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", g_tmpdir, name);
    lt_test_write_file(path, body);
    FILE *rep = tmpfile(), *peak = tmpfile();
    assert_non_null(rep);
    assert_non_null(peak);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsetenv("LOCALTENSOR_MEMORY_LIMIT");
        if (lt__mem_set_budget(budget, "--max-memory")) _exit(91);
        /* the run's own growth: the peak less what the process held before
         * it (the libraries a build links, e.g. CUDA's, count in both) */
        unsigned long long base = status_kb("VmRSS:");
        char *argv[] = {(char *)"run", path, NULL};
        int rc = lt_sc_main(2, argv, rep, rep);
        fflush(rep);
        unsigned long long kb = status_kb("VmHWM:");
        fprintf(peak, "%llu\n", kb > base ? kb - base : 1);
        fflush(peak);
        _exit(rc);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    remove(path);
    *out = lt_test_slurp_fp(rep);
    char *p = lt_test_slurp_fp(peak);
    fclose(rep);
    fclose(peak);
    unsigned long long kb = 0;
    if (sscanf(p, "%llu", &kb) != 1 || !kb)
        fail_msg("no VmHWM from the child (exit %d):\n%s", status, *out);
    free(p);
    *hwm = (uint64_t)kb * 1024;
    if (!WIFEXITED(status))
        fail_msg("the child was killed by signal %d:\n%s", WTERMSIG(status), *out);
    return WEXITSTATUS(status);
}

/* The child's rise under the budget plus 16 MiB (not under AddressSanitizer
 * or valgrind, whose own memory counts in it). */
static void expect_peak(uint64_t hwm, uint64_t budget, const char *out) {
    if (!SANITIZED && hwm > budget + 16 * MIB)
        fail_msg("peak resident %.1f MiB, over the %.0f MiB budget + 16 MiB:\n%s",
                 (double)hwm / (double)MIB, (double)budget / (double)MIB, out);
}

/* Four 64 MiB tensors under a 100 MiB budget: refused at the first one's
 * name before any is built (it built all four, 256 MiB). */
static void test_tensors_over_budget(void **state) {
    (void)state;
    char *out;
    uint64_t hwm;
    int rc = run_budget("four.yaml",
                        "name: four\nmesh: 2\ntensors:\n"
                        "  a: {shape: [4096, 4096]}\n  b: {shape: [4096, 4096]}\n"
                        "  c: {shape: [4096, 4096]}\n  d: {shape: [4096, 4096], dtype: f32}\n"
                        "steps:\n  - distribute: {tensor: a, placements: [\"S(0)\"], as: ad}\n",
                        "100M", &out, &hwm);
    if (rc != 2) fail_msg("exit %d, wanted 2:\n%s", rc, out);
    expect_text(out, "four.yaml:4:3: the tensors: section (4 tensors) needs 256.0 MiB, more than "
                     "this machine's 100.0 MiB of memory allowed by --max-memory");
    expect_peak(hwm, 100 * MIB, out);
    free(out);
}

/* One 64 MiB tensor fits a 100 MiB budget, but its replicated layout (one
 * more 64 MiB buffer) does not fit beside it: refused at the distribute,
 * naming what is held (it ran, 128 MiB). */
static void test_step_beside_tensors(void **state) {
    (void)state;
    char *out;
    uint64_t hwm;
    int rc = run_budget("beside.yaml",
                        "name: beside\nmesh: 2\ntensors:\n  a: {shape: [4096, 4096]}\n"
                        "steps:\n  - distribute: {tensor: a, placements: [R], as: ad}\n",
                        "100M", &out, &hwm);
    if (rc != 2) fail_msg("exit %d, wanted 2:\n%s", rc, out);
    expect_text(out, "beside.yaml:6:5: while running distribute of 'a' with [R]: this layout needs "
                     "64.0 MiB for the shards of all 2 ranks, "
                     "more than this machine's 100.0 MiB of memory allowed by --max-memory less "
                     "the 64.0 MiB held already by declared tensors (tensors:)");
    expect_peak(hwm, 100 * MIB, out);
    free(out);
}

/* What fits runs, and the charge ends with the case: a 16 MiB tensor, its
 * replicated layout and the check's copy under LOCALTENSOR_MEMORY_LIMIT=48M,
 * in this process, twice (a charge left behind would refuse the second
 * run); nothing is charged afterwards. */
static void test_fits_and_releases(void **state) {
    (void)state;
    char path[700], *o, *e;
    snprintf(path, sizeof path, "%s/fits.yaml", g_tmpdir);
    lt_test_write_file(
        path, "name: fits\nmesh: 2\ntensors:\n  a: {shape: [2048, 2048]}\n  v: {values: [1, 2]}\n"
              "steps:\n  - distribute: {tensor: a, placements: [R], as: ad}\n"
              "  - expect_full: {tensor: ad, equals: a}\n");
    setenv("LOCALTENSOR_MEMORY_LIMIT", "48M", 1);
    for (int run = 0; run < 2; run++) {
        const char *args[] = {path};
        int rc = lt_test_run_sc(args, 1, &o, &e);
        if (rc != 0) fail_msg("run %d: exit %d:\n%s%s", run, rc, o, e);
        free(o);
        free(e);
        assert_int_equal(lt__mem_charged(), 0);
    }
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    remove(path);
}

int main(int argc, char **argv) {
    (void)argc;
    lt_test_tmpdir(g_tmpdir, sizeof g_tmpdir, argv[0], "test_scenario_load.tmp");
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    const struct CMUnitTest tests[] = {
        /* first: a forked child's peak starts from this process's size */
        cmocka_unit_test(test_tensors_over_budget),
        cmocka_unit_test(test_step_beside_tensors),
        cmocka_unit_test(test_fits_and_releases),
        cmocka_unit_test(test_many_steps),
        cmocka_unit_test(test_many_scenarios),
        cmocka_unit_test(test_many_aliases),
        cmocka_unit_test(test_names_follow_loops),
        cmocka_unit_test(test_defined_so_far),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(g_tmpdir);
    return rc;
}
