/* tools/scenario/scenario.h — the scenario engine: YAML scenario files in, checks run
 * against the localtensor API, text / JSON / JUnit reports out.
 *
 * A scenario file holds one scenario or a list of them (format:
 * scenarios/README.md). Loading turns every scenario into one or more cases
 * (a sweep expands into the cartesian product of its variables); running a
 * case executes its steps in order and records every failed check with its
 * file:line:col, rank, index, expected and actual values.
 *
 * Errors: loading returns a status and leaves "file:line:col: problem" in
 * lt_errmsg(). A loaded file owns everything its cases and results point to;
 * lt_sc_file_free releases it all.
 */
#ifndef LT_SCENARIO_H
#define LT_SCENARIO_H

#include <stdio.h>

#include "localtensor/collectives_sim/engine.h"
#include "localtensor/kernels/status.h"

/* Limits on what the loader accepts (all are errors with a position). The
 * last three may be lowered at build time (-DLT_SC_MAX_NODES=...): the fuzz
 * build does, so that one input loads and runs in milliseconds. */
#define LT_SC_MAX_FILE_BYTES (8u << 20)   /* bigger files are refused unread */
#define LT_SC_MAX_DEPTH 64                /* YAML nesting */
#ifndef LT_SC_MAX_NODES
#define LT_SC_MAX_NODES 2000000           /* YAML nodes, aliases expanded */
#endif
#ifndef LT_SC_MAX_ELEMS
#define LT_SC_MAX_ELEMS (1 << 24)         /* elements of one scenario tensor */
#endif
#ifndef LT_SC_MAX_CASES
#define LT_SC_MAX_CASES 100000            /* cases of one sweep */
#endif

typedef struct lt_sc_file lt_sc_file;

/* Loads and validates a scenario file: YAML syntax, every key documented,
 * every tensor name defined before use, value counts against shapes, sweep
 * expansion. *out gets the file (free with lt_sc_file_free); on error *out is
 * NULL and lt_errmsg() reads "path:line:col: problem". */
lt_status lt_sc_load(const char *path, lt_sc_file **out);
/* Same from memory; `name` is the file name used in messages. */
lt_status lt_sc_load_string(const char *name, const char *text, size_t len, lt_sc_file **out);
void lt_sc_file_free(lt_sc_file *f);

/* Number of scenarios / cases (a sweep counts all its cases) in a file. */
int lt_sc_file_scenarios(const lt_sc_file *f);
int lt_sc_file_cases(const lt_sc_file *f);

/* Options of `localtensor run`. */
typedef struct lt_sc_options {
    const char *const *filters;  /* -k: substring of a case name or file path; any matches */
    int nfilters;
    int verbose;                 /* -v: one line per case, show pictures */
    int world;                   /* --world N: only cases whose mesh has N ranks (0: all) */
    int trace; /* --trace: op log and comm table per case (text, and JSON with --json) */
    int single_device; /* --single-device: every case's own checks are left out (the steps
                        * an expect_error wraps run as they are, from_local checks nothing)
                        * and one expect_same_as_single_device ends it */
    int fail_fast;               /* stop at the first failing or erroring case */
    const char *json_path;       /* --json FILE or NULL */
    const char *junit_path;      /* --junit FILE or NULL */
    FILE *out;                   /* report (stdout) */
    FILE *err;                   /* load errors, progress (stderr) */
    int color;                   /* color the report */
    int progress;                /* a progress line on err for runs over a second */
    const char *numerics;        /* --numerics: overrides every scenario's numerics:
                                  * (checked by the caller), NULL: the files' own */
    /* --engine: the engine of every case's communicator (NULL: in-process)
     * and its name, written as "engine" into the JSON report when set */
    const lt_engine_i *engine;
    const char *engine_name;
    /* --compare-backend: every case also runs on this backend first, and
     * each value it stores must match (tools/scenario/scenario_compare.c);
     * NULL: no */
    const struct lt_backend *compare_backend;
    /* Runs over several processes (--engine mpi): called after every case
     * on every process with the case's status (lt_sc_status as int) and its
     * first failure as one line ("" when none). Returns the worst status of
     * all processes; when that is worse than `status`, *from gets the lowest
     * process that had it and `other` (cap bytes) its failure line. NULL:
     * one process. */
    int (*case_agree)(int status, const char *failure, int *from, char *other, size_t cap);
    /* processes of that run (0 or 1: one); more than the largest mesh of
     * the selected cases is an error before any case runs */
    int nproc;
    /* --shards owned (processes see different values, so a step can fail on
     * one only): called on every process after each step, and after the step
     * an expect_error wraps, with the step's status (lt_status as int), its
     * kind in *kind (1 a failed check, 2 a refusal, 0 otherwise: success or
     * an error, by status) and its message in msg (cap bytes). The worst outcome over the
     * processes wins (an error or a refusal over a failed check over
     * success); returns the status of the lowest process that had it and,
     * when that is another process, its kind in *kind, its message in msg
     * and its number in *from (else *from is -1). NULL: none. */
    int (*step_agree)(int status, int *kind, char *msg, size_t cap, int *from);
    /* --shards owned: a process holds only its own ranks' shards; init:
     * tensors are then never built whole (any size loads), and the memory
     * per process is estimated on err before the run */
    int owned;
} lt_sc_options;

/* The scenario driver (tools/scenario/scenario_driver.c): loads and runs
 * every scenario file under paths (files, or directories searched
 * recursively for *.yaml / *.yml, in sorted order) and writes the reports. Returns the exit code: 0
 * all passed, 1 a check failed, 2 a file could not be loaded, a step failed unexpectedly, or a
 * report could not be written. The last line written to out is "N passed, N failed, N errors". */
int lt_sc_run_paths(const char *const *paths, int npaths, const lt_sc_options *opt);

#endif
