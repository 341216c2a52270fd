/* test/fuzz/fuzz_scenario.c — the scenario loader from memory, then running
 * what loads.
 *
 * Every input is loaded as a YAML scenario file (any bytes). A load error
 * must leave a message that names the file and a position
 * ("fuzz.yaml:LINE:COL: ..."). What loads is run within small caps so one
 * input takes milliseconds: at most MAX_CASES cases, meshes of at most
 * MAX_WORLD ranks, at most MAX_STEPS steps a case (cases over a cap are
 * skipped, not run); allocations over 64 MiB fail under ASan (fuzz.h), so a
 * big tensor ends as a clean out-of-memory error. The reports (text, JSON,
 * JUnit) are written to /dev/null so their formatting of arbitrary names
 * and messages runs too.
 */
#include "test/fuzz/fuzz.h"

#include <ctype.h>

#include "tools/scenario/scenario_impl.h"
#include "kernels/status_impl.h"

#define MAX_CASES 24
#define MAX_WORLD 16
#define MAX_STEPS 48

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    devnull = fopen("/dev/null", "w");
    if (!devnull) fuzz_fail("cannot open /dev/null");
    return 0;
}

/* The message names a position: "fuzz.yaml:LINE:COL" somewhere in it (a
 * sweep case's error starts with the case's name). */
static int has_position(const char *m) {
    static const char name[] = "fuzz.yaml:";
    for (const char *p = strstr(m, name); p; p = strstr(p + 1, name)) {
        const char *q = p + sizeof name - 1;
        if (!isdigit((unsigned char)*q)) continue;
        while (isdigit((unsigned char)*q)) q++;
        if (*q++ != ':' || !isdigit((unsigned char)*q)) continue;
        return 1;
    }
    return 0;
}

static int within_caps(const sc_case *c) {
    return c->mesh->world >= 1 && c->mesh->world <= MAX_WORLD && c->nsteps <= MAX_STEPS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lt_sc_file *f = NULL;
    lt__err_clear();
    fuzz_paint_stack();
    lt_status st = lt_sc_load_string("fuzz.yaml", (const char *)data, size, &f);
    if (st) {
        if (f) fuzz_fail("load failed (%s) but returned a file", lt_status_name(st));
        if (!has_position(lt_errmsg()))
            fuzz_fail("load error without 'fuzz.yaml:LINE:COL' (status %s): '%s'",
                      lt_status_name(st), lt_errmsg());
        return 0;
    }
    if (!f || f->nscen < 1) fuzz_fail("load succeeded without a scenario");

    lt_sc_options o;
    memset(&o, 0, sizeof o);
    o.out = o.err = devnull;
    o.color = (int)(size & 1);
    sc_run_summary sum;
    memset(&sum, 0, sizeof sum);
    sc_stream rep;   /* the JSON and JUnit reports, written as the cases finish */
    lt__sc_stream_open(&rep, "/dev/null", "/dev/null", NULL, 0);
    lt__sc_stream_file_begin(&rep, f);
    int budget = MAX_CASES;
    for (int k = 0; k < f->nscen; k++) {
        sc_scenario *s = &f->scen[k];
        if (s->ncases < 1 || !(s->cases || s->sweep))
            fuzz_fail("scenario '%s' loaded with %d cases", s->name, s->ncases);
        int ran = 0;
        sc_tally tally = {0};
        for (int i = 0; i < s->ncases && budget > 0; i++) {
            sc_case slot;
            sc_arena *a = lt__sc_arena_new();
            sc_case *c = a ? lt__sc_case_at(s, i, &slot, a) : NULL;
            if (!c) fuzz_fail("out of memory making case %d of '%s'", i, s->name);
            if (!within_caps(c)) {
                lt__sc_arena_free(a);
                continue;
            }
            budget--;
            fuzz_paint_stack();
            lt__sc_run_case(c, a, devnull);
            lt_sc_status r = c->res.status;
            if (r != LT_SC_PASS && r != LT_SC_FAIL && r != LT_SC_ERROR)
                fuzz_fail("case '%s' ended with status %d", c->name, (int)r);
            if (r != LT_SC_PASS && c->res.nfails + c->res.nfails_dropped < 1)
                fuzz_fail("case '%s' is %s without a recorded failure", c->name,
                          lt__sc_status_name(r));
            sum.cases++;
            sum.passed += r == LT_SC_PASS;
            sum.failed += r == LT_SC_FAIL;
            sum.errors += r == LT_SC_ERROR;
            lt__sc_tally_add(&tally, c);
            lt__sc_report_case(devnull, &o, f, s, c);
            if (!ran) lt__sc_stream_scen_begin(&rep, s);
            lt__sc_stream_case(&rep, f, c);
            lt__sc_case_drop(c);
            lt__sc_arena_free(a);
            ran = 1;
        }
        if (ran) {
            sum.scenarios++;
            lt__sc_stream_scen_end(&rep);
            if (s->is_sweep) lt__sc_report_sweep(devnull, &o, f, s, &tally);
        }
    }
    sum.files = 1;
    lt__sc_stream_file_end(&rep, f);
    lt__sc_report_summary(devnull, &o, &sum);
    (void)lt__sc_stream_close(&rep, &sum);
    lt_sc_file_free(f);
    return 0;
}
