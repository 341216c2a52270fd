/* tools/scenario/scenario_impl.h — internals of the scenario engine (not installed).
 *
 * Pipeline: scenario_yaml.c turns a file into a tree of sc_node (every node
 * keeps its line:col) and reads typed values from it (scenario_values.c: number
 * literals); scenario_load.c turns the tree into scenarios and
 * cases, parsing every step through the step table (scenario_sweep.c: a
 * sweep's table, from which each case is made when it runs);
 * scenario_run.c runs a case's steps (scenario_steps.c, scenario_checks.c for values,
 * scenario_checks_meta.c for plans, comm, errors and order);
 * report.c writes text, JSON and JUnit; scenario_driver.c runs files and
 * directories (`localtensor run`, tools/cli/cli_run.c).
 *
 * Memory: everything a file's scenarios point to lives in the file's arena
 * and is released at once with the file; a sweep case (its name and parsed
 * steps) and every case's results live in the case's own arena, freed
 * after its report. Runtime values (tensors) are owned by the run context and freed
 * when a case ends.
 *
 * Adding a step: one XX(...) line in LT_SC_STEP_MAP plus its parse and run
 * functions (parse validates the body at load time and fills step->data from
 * the arena; run executes it, returning LT_OK, an error, or LT_MISMATCH after
 * lt__sc_check_fail for a failed check).
 */
#ifndef LT_SCENARIO_IMPL_H
#define LT_SCENARIO_IMPL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "localtensor/localtensor.h"
#include "localtensor/collectives_sim/match.h"
#include "localtensor/redistribute.h"
#include "tools/scenario/scenario.h"

/* ---- arena ---------------------------------------------------------------- */

typedef struct sc_arena sc_arena;
sc_arena *lt__sc_arena_new(void);
void lt__sc_arena_free(sc_arena *a);
/* Bytes handed out by a so far (what it holds, less each block's unused tail). */
size_t lt__sc_arena_used(const sc_arena *a);
/* Zeroed memory, max-aligned; NULL (with LT_NOMEM message set) when out of memory. */
void *lt__sc_alloc(sc_arena *a, size_t n);
/* In a step parser (sc_parse_ctx *pc, sc_step *st in scope): declares
 * `T *var` in the arena as the step's data, or returns LT_NOMEM. */
#define LT__SC_NEW_DATA(T, var)                          \
    T *var = lt__sc_alloc(pc->arena, sizeof *var);       \
    if (!var) return LT_NOMEM;                           \
    st->data = var
char *lt__sc_strdup(sc_arena *a, const char *s);
char *lt__sc_printf(sc_arena *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- YAML nodes ------------------------------------------------------------ */

typedef enum { SC_SCALAR, SC_SEQ, SC_MAP } sc_kind;

typedef struct sc_node {
    sc_kind kind;
    int line, col;            /* 1-based position of the node's first character */
    int plain;                /* scalar: written without quotes */
    int verbatim;             /* scalar: its text is the source's own characters, on one line
                               * (no escapes, no folding): character k is at column col + k
                               * (+ 1 after a quote); 0: only its start is known */
    const char *file;         /* borrowed: the file's name */
    const char *str;          /* scalar text (NUL-free) */
    int n;                    /* SEQ: items; MAP: pairs */
    struct sc_node **kids;    /* SEQ: (n) items; MAP: (2n) key, value, key, value... */
} sc_node;

/* Parses YAML text into a node tree in arena `a`. *root is NULL for a file
 * with no document. Errors: "file:line:col: problem" (syntax, nesting deeper
 * than LT_SC_MAX_DEPTH, more than LT_SC_MAX_NODES nodes, tags, NUL bytes,
 * duplicate keys, non-scalar keys, several documents). */
lt_status lt__sc_yaml_parse(sc_arena *a, const char *file, const char *text, size_t len,
                            sc_node **root);

/* Sets "file:line:col: message" and returns st. */
lt_status lt__sc_err(const sc_node *at, lt_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Prefixes the current message with the node's position (when it has none). */
lt_status lt__sc_err_at(const sc_node *at, lt_status st);

const char *lt__sc_kind_name(const sc_node *n);     /* "a list", "a mapping", "'text'" */
int lt__sc_is_null(const sc_node *n);               /* NULL, or plain "", "~", "null" */
/* Value of `key` in a mapping, or NULL. */
const sc_node *lt__sc_get(const sc_node *map, const char *key);
/* Checks n is a mapping whose keys are all in allowed (NULL-terminated);
 * `what` names it in messages ("distribute"). */
lt_status lt__sc_keys(const sc_node *n, const char *what, const char *const *allowed);
/* Required key: the value, or an error at the mapping naming the key. */
lt_status lt__sc_need(const sc_node *map, const char *what, const char *key, const sc_node **out);

lt_status lt__sc_str(const sc_node *n, const char *what, const char **out);
lt_status lt__sc_i64(const sc_node *n, const char *what, int64_t lo, int64_t hi, int64_t *out);
lt_status lt__sc_int(const sc_node *n, const char *what, int lo, int hi, int *out);
lt_status lt__sc_f64(const sc_node *n, const char *what, double *out);
lt_status lt__sc_bool(const sc_node *n, const char *what, int *out);
/* A tensor name: letters, digits, _, not starting with a digit. */
lt_status lt__sc_ident(const sc_node *n, const char *what, const char **out);
/* [5, 7], 5, "5,7", "0,3", [] (0-d). Sizes >= 0; element count checked. */
lt_status lt__sc_shape(const sc_node *n, const char *what, int *ndim, int64_t *shape);
/* lt__sc_shape with another limit on the element count (max_elems). */
lt_status lt__sc_shape_max(const sc_node *n, const char *what, int64_t max_elems, int *ndim,
                           int64_t *shape);
/* [S(0), R] or "S(0),R" (any spelling of docs/DESIGN.md §5). Count is not checked. */
lt_status lt__sc_placements(const sc_node *n, const char *what, lt_placement *pl, int *np);
/* The same into a new arena array of exactly *np entries (an lt_placement
 * is large: it carries room for explicit split sizes). */
lt_status lt__sc_placements_new(sc_arena *a, const sc_node *n, const char *what, lt_placement **pl,
                                int *np);
/* chunk | balanced | last | [3, 1, 0, 2] */
lt_status lt__sc_rule(const sc_node *n, const char *what, lt_split_rule *out);
/* "2x2", "dp=2,tp=2", 8, or {shape: [2, 2], names: [dp, tp]} */
lt_status lt__sc_mesh(const sc_node *n, const char *what, lt_mesh *out);
/* The mapping form: shape or ranks, names, world, flatten, slice (scenario_mesh.c). */
lt_status lt__sc_mesh_map(const sc_node *n, const char *what, lt_mesh *out);
/* `flatten: {dims: [dp, cp], as: dp_cp}` applied to *m (scenario_mesh.c). */
lt_status lt__sc_mesh_flatten(const sc_node *f, lt_mesh *m);
lt_status lt__sc_dtype(const sc_node *n, const char *what, lt_dtype *out);

/* A literal: a number, a flat list, or nested lists (rectangular). */
typedef struct sc_literal {
    int ndim;                      /* nesting depth (0: a single number) */
    int64_t shape[LT_MAX_DIMS];    /* from the nesting */
    int64_t n;                     /* element count */
    double *v;                     /* (n) row-major, in the arena */
    const sc_node *at;
} sc_literal;
lt_status lt__sc_literal(sc_arena *a, const sc_node *n, const char *what, sc_literal *out);
/* Checks that every value of the literal n (already read by lt__sc_literal)
 * is exactly what a tensor of dtype dt will hold: i32/i64 need integers in
 * range (i64 up to 2^53, where doubles stop being exact), bool 0 or 1, floats
 * a finite value within the dtype's range. The error names the value's
 * file:line:col. */
lt_status lt__sc_values_fit(const sc_node *n, lt_dtype dt, const char *what);

/* Sweep variables: a scalar "$name" anywhere in a copied tree is replaced by
 * a copy of vals[i] where names[i] == name. */
#define SC_MAX_VARS 8
typedef struct sc_subst {
    int n;
    const char *names[SC_MAX_VARS];
    const sc_node *vals[SC_MAX_VARS];
} sc_subst;
/* Copy of n with the variables substituted into a (NULL a: only checks for
 * undefined "$name"s). Subtrees without variables are shared, not copied.
 * Errors name the undefined variable and list the defined ones. */
lt_status lt__sc_copy(sc_arena *a, const sc_node *n, const sc_subst *s, sc_node **out);
/* A synthetic scalar at the position of `at`. */
sc_node *lt__sc_scalar(sc_arena *a, const sc_node *at, const char *text);

/* ---- expressions (scenario_expr.c) ----------------------------------------- */

/* A parsed expression over rank, world, i, mesh coordinates by dim name (or
 * d0, d1, ...) and mesh dim sizes (dp_size, d0_size). */
typedef struct sc_expr sc_expr;
typedef struct sc_env {
    const lt_mesh *mesh;
    int rank;
    int coord[LT_MESH_MAX_DIMS];
    int64_t i;                /* element index (values) */
    int reference;            /* 1: the single-device reference's rank (docs/SEMANTICS.md
                               * §11.8): numel/shape/rows read single-device values */
} sc_env;
/* Parses the scalar `at` (a number or an expression); allow_i: `i` is
 * defined. Errors: "file:line:col: expression '...': problem". */
lt_status lt__sc_expr_parse(sc_arena *a, const sc_node *at, const lt_mesh *mesh, int allow_i,
                            const char *what, sc_expr **out);
void lt__sc_env_rank(const lt_mesh *mesh, int rank, sc_env *env);
/* Errors: division by zero (file:line:col, rank). */
lt_status lt__sc_expr_eval(const sc_expr *e, const sc_env *env, double *out);
/* The value as an integer in lo..hi, else an error naming `what` and the rank. */
lt_status lt__sc_expr_int(const sc_expr *e, const sc_env *env, const char *what, int64_t lo,
                          int64_t hi, int64_t *out);

/* ---- results --------------------------------------------------------------- */

typedef enum { LT_SC_NOTRUN, LT_SC_PASS, LT_SC_FAIL, LT_SC_ERROR } lt_sc_status;

/* One failed check or unexpected error. Strings live in the file's arena;
 * optional ones are NULL. */
typedef struct lt_sc_failure {
    const char *file;
    int line, col;
    const char *step;          /* "expect_local", "redistribute", ... */
    const char *message;       /* what went wrong (one or more lines) */
    int rank;                  /* -1 when not about one rank */
    const char *index;         /* "[1, 0]" */
    const char *expected;
    const char *actual;
    const char *plan_step;     /* the plan step / producer of the bad value */
    const char *hang; /* a would-hang report with --json: its JSON object (text), else NULL */
} lt_sc_failure;

#define SC_MAX_FAILS 16

typedef struct lt_sc_result {
    lt_sc_status status;
    double seconds;
    int checks;                /* checks run */
    int checks_failed;
    int nfails;                /* recorded (at most SC_MAX_FAILS) */
    int nfails_dropped;
    lt_sc_failure *fails;      /* (SC_MAX_FAILS) in the arena once a failure is recorded */
    const char *redistributes; /* with sc_case.record_plans: a JSON array (text, arena) of the
                                * case's redistributes and their plans with per-rank bytes */
    const char *trace_text;    /* with sc_case.record_trace: the --trace log (arena), else NULL */
    const char *trace_json;    /* the same as a JSON object (text, arena) */
    const char *numerics; /* sample/none: "sample:2: values for ranks 0, 3" (arena), else NULL */
    const int *sampled;        /* (nsampled) the ranks whose values were computed (arena) */
    int nsampled;
    const char *notes; /* what a passing check did not look at, one per line (arena), or NULL */
} lt_sc_result;

/* ---- scenarios ------------------------------------------------------------- */

typedef struct sc_pos {
    const char *file;
    int line, col;
} sc_pos;

typedef struct sc_tensor_decl {
    const char *name;
    lt_dtype dtype;
    int ndim;
    int64_t shape[LT_MAX_DIMS];
    int has_values;
    const double *values;      /* (numel) row-major when has_values */
    lt_init init;
    sc_pos pos;
} sc_tensor_decl;

struct sc_run_ctx;
struct sc_parse_ctx;
struct sc_step;

typedef lt_status (*sc_parse_fn)(struct sc_parse_ctx *pc, const sc_node *body, struct sc_step *st);
typedef lt_status (*sc_run_fn)(struct sc_run_ctx *rc, const struct sc_step *st);

typedef struct sc_step_type {
    const char *name;
    int is_check;             /* counts as a check */
    sc_parse_fn parse;
    sc_run_fn run;
} sc_step_type;

typedef struct sc_step {
    const sc_step_type *type;
    sc_pos pos;               /* of the step's key */
    void *data;               /* the step type's parsed body (arena) */
    const unsigned char *mask; /* (world) 1 for the ranks that run it (`ranks:` / `when:`);
                                * NULL: every rank */
} sc_step;

/* A sweep's table of cases (scenario_sweep.c): enough to make any of its
 * cases from its index. */
typedef struct sc_sweep sc_sweep;

typedef struct sc_case {
    const char *name;         /* scenario name, plus "[var=value,...]" in a sweep */
    const sc_sweep *sweep;    /* a sweep case: tensors and steps are parsed by
                               * lt__sc_case_build when it runs (NULL: parsed at load) */
    int index;                /* a sweep case: its index in the sweep */
    sc_pos pos;
    const lt_mesh *mesh;      /* in the file's arena; a sweep's cases on one mesh share it
                               * (a sweep holds tens of thousands of cases) */
    const char *backend;      /* `backend:` (checked at load); NULL: the process default */
    lt_op_rules rules;        /* `rules:`; LT_OP_RULES_DEFAULT: the selected set (--rules) */
    int ntensors;
    sc_tensor_decl *tensors;
    int nsteps;
    sc_step *steps;
    int record_plans;         /* keep every redistribute's plan in res (for --json) */
    int record_trace;         /* --trace: op log and comm table in res (scenario_trace.c) */
    int single_device;        /* --single-device (lt_sc_options.single_device) */
    lt_numerics numerics;     /* numerics: (localtensor/numerics.h); full by default */
    int numerics_set;         /* numerics came from --numerics: the scenario's key does not apply */
    const lt_engine_i *engine;/* --engine: of the case's communicator (NULL: in-process) */
    const struct lt_backend *compare_backend; /* --compare-backend: run there first and compare
                                               * every stored value (NULL: no) */
    lt_sc_result res;
} sc_case;

typedef struct sc_scenario {
    const char *name;
    const char *description;  /* NULL when none */
    sc_pos pos;
    int is_sweep;
    int ncases;
    sc_case *cases;           /* (ncases) a scenario's one case; NULL for a sweep, whose
                               * cases are made when asked for (lt__sc_case_at) */
    const sc_sweep *sweep;    /* a sweep's table (file arena), else NULL */
    int nselected;            /* cases that pass -k and --world (set by the run's driver) */
} sc_scenario;

struct lt_sc_file {
    const char *path;
    sc_arena *arena;
    int nscen;
    sc_scenario *scen;
};

/* ---- parsing steps --------------------------------------------------------- */

/* What a name stands for at run time (bit flags so a step can accept several). */
enum { SC_FULL = 1, SC_DTENSOR = 2, SC_LOCAL = 4 };

typedef struct sc_sym {
    const char *name;
    int kind;
} sc_sym;

typedef struct sc_parse_ctx {
    sc_arena *arena;
    const lt_mesh *mesh;
    sc_sym *syms;             /* (nsyms) malloc'd, names defined so far */
    int nsyms, cap;
    int in_expect_error;      /* the step's `as` will not be defined */
    int redistributes;        /* redistribute steps so far (for expect_plan) */
    int sampled;              /* numerics sample/none: init: tensors are never built */
} sc_parse_ctx;

/* Reads `key` of map as a tensor name that must be defined with a kind in
 * `kinds`; *out gets the name (arena). */
lt_status lt__sc_use(sc_parse_ctx *pc, const sc_node *map, const char *what, const char *key,
                     int kinds, const char **out);
/* Reads `as` of map (required) and defines it with `kind`. */
lt_status lt__sc_define(sc_parse_ctx *pc, const sc_node *map, const char *what, int kind,
                        const char **out);
/* `ranks: [0, 2]` or `when: EXPR` (sel is the key, v its value) for step
 * type t: fills st->mask. Only per-rank step types may be limited. */
lt_status lt__sc_parse_selection(sc_parse_ctx *pc, const sc_step_type *t, const sc_node *sel,
                                 const sc_node *v, sc_step *st);
/* Parses one step (a one-key mapping, plus ranks:/when:) into *st. */
lt_status lt__sc_parse_step(sc_parse_ctx *pc, const sc_node *item, sc_step *st);
/* The rank a `ranks:` key or list index stands for (0..world-1). */
lt_status lt__sc_rank(const sc_parse_ctx *pc, const sc_node *key, int *rank);

/* Per-rank items: `{0: x, 2: y}` or a list with one entry per rank. *nodes
 * gets (world) entries, NULL for ranks not given. */
lt_status lt__sc_per_rank(sc_parse_ctx *pc, const sc_node *n, const char *what, int need_all,
                          const sc_node ***nodes);

/* ---- running --------------------------------------------------------------- */

typedef struct sc_value {
    const char *name;         /* borrowed from the arena */
    int kind;                 /* SC_FULL, SC_DTENSOR or SC_LOCAL */
    lt_tensor *full;
    lt_dtensor *dt;
    lt_local *local;
    char origin[512];         /* "redistribute at f:12:7: plan step 0 ..." or "" */
    lt_plan *oplan;           /* a reference, or NULL: origin is this plan's text, made
                               * when first asked for (lt__sc_origin) */
    const sc_step *ostep;     /* the redistribute step of oplan */
    char **rorigin;           /* NULL, or (nro) owned: SC_LOCAL only, rank r's origin where
                               * it differs from origin ("": none), else NULL. A rank that
                               * skipped the step that made the value keeps its older shard,
                               * and a waiting rank's result comes from its own step */
    int nro;
    int sampled;              /* numerics sample/none: dt holds the sampled ranks only,
                               * and gen says where every rank's values come from */
    lt_sample_src gen;
} sc_value;

/* ---- --compare-backend (scenario_compare.c) ------------------------------------ */

enum { SC_CMP_RECORD = 1, SC_CMP_CHECK = 2 };
/* One case's comparison with another backend's run of it. */
typedef struct sc_cmp {
    int mode;                 /* SC_CMP_RECORD (the other backend's run), SC_CMP_CHECK */
    const struct lt_backend *other;
    void *snaps;              /* (nsnaps) recorded values, owned */
    int nsnaps, cap;
    int next;                 /* SC_CMP_CHECK: the recorded value the next store meets */
    int step;                 /* step index of the first difference; -1: outside the steps */
    char msg[1024];           /* the first difference; "" while none */
} sc_cmp;
/* Records (SC_CMP_RECORD) or checks (SC_CMP_CHECK) value v just stored
 * during step `step` (-1: the tensors: section). Errors: out of memory. */
lt_status lt__sc_cmp_put(sc_cmp *c, int step, const sc_value *v);
/* At the end of the checked run: 1 when a difference was found (c->msg). */
int lt__sc_cmp_done(sc_cmp *c);
/* Frees the recorded copies. */
void lt__sc_cmp_free(sc_cmp *c);
/* Shards compared over the whole run: bit-identical, within tolerance. */
void lt__sc_cmp_counts(int64_t *exact, int64_t *close);

typedef struct sc_run_ctx {
    sc_arena *arena;          /* the file's: failures and messages */
    const sc_case *c;
    lt_comm *comm;
    sc_value *vals;           /* (nvals) malloc'd */
    int nvals, cap;
    size_t comm_mark;         /* trace index of the last mark_comm (0: start) */
    lt_plan *plan;            /* last redistribute plan (a reference), or NULL */
    const sc_step *plan_step; /* its step */
    char plan_text[512];      /* "redistribute at f:l:c: step 0: ..." for messages; made
                               * when first asked for (lt__sc_plan_text), "" until then */
    FILE *show;               /* where `show` prints; NULL: nowhere */
    lt_sc_result *res;
    int capturing;            /* inside expect_error: failures are not recorded */
    int failed_check;         /* set by lt__sc_check_fail */
    int did_check;            /* a non-check step that checked something (verify) */
    lt_sc_failure pending;    /* the failure of the current check */
    void *plans;              /* cJSON array while record_plans, else NULL */
    /* per-rank programs (scenario_spmd.c, scenario_match.c): collectives on
     * LocalTensors are matched rank by rank */
    lt_match *mt;             /* NULL until the first matched collective */
    unsigned char *blocked;   /* (world) waiting in a collective that has not completed */
    int *blocked_step;        /* (world) index of the step it waits in */
    lt_tensor **held;         /* (world) owned: a copy of what a waiting rank sent (NULL:
                               * nothing), for a later step's calls that pair with it */
    const char **held_as;     /* (world) the name its result goes to (its step's `as`) */
    int *resume;              /* (world) -1, or the step of a call that completed in a later
                               * step: the rank still runs the steps after it (catch_up) */
    unsigned char *one;       /* (world) scratch mask of one rank */
    int replaying;            /* 1 while ranks catch up (scenario_match.c) */
    int step_index;           /* of the step running */
    int in_steps;             /* 1 once the steps: section runs */
    sc_cmp *cmp;              /* --compare-backend, or NULL */
    int hung;                 /* a would-hang report ended the per-rank program */
    /* (ncarry, malloc'd) ranks that keep their shard of the value named
     * `name` in the step running (lt__sc_skipped_shard): the value put
     * under that name keeps their older origins (reset at each step) */
    struct sc_carry { const char *name; int rank; } *carry;
    int ncarry, carry_cap;
    int hang_kind;            /* lt_hang_kind of the last report, -1: none */
    const char *hang_text;    /* the last report's whole text (in the arena), or NULL */
    const char
        *hang_json; /* with --json: the last report as a JSON object (text, arena), or NULL */
    int failed_rank;          /* the rank a per-rank step failed on, -1: none or not one rank */
    unsigned char *ended;     /* (world) 1: its program ended with an error (the matcher knows) */
    int *ended_step;          /* (world) index of the step it failed in */
    /* the step each rank ran last (lt__sc_note_ran): a finished rank's place
     * in a would-hang report. last_all while every rank ran the same steps,
     * then last (world, malloc'd) once they may differ; file NULL: none yet */
    sc_pos last_all;
    sc_pos *last;
    void *trace;              /* scenario_trace.c's state while record_trace, else NULL */
    void *diverge;            /* scenario_diverge.c's records (expect_same_as_single_device) */
    /* numerics sample/none (scenario_numerics.c): the ranks whose values are
     * computed; nranks -1 in full mode */
    int *ranks;               /* (nranks) malloc'd */
    int nranks;
    int refused;              /* a step that cannot run in this mode was met */
    char refused_msg[512];    /* what the refusal said */
    /* 1: the communicator's engine holds only some ranks in this process
     * (run --engine mpi --shards owned): the case runs as numerics sample
     * with ranks = the held ones, but redistributes run on the engine */
    int owned;
} sc_run_ctx;

/* The value named `name` (must exist: the loader checked). */
sc_value *lt__sc_value(sc_run_ctx *rc, const char *name);
/* Stores a value under name, replacing an older one (takes ownership of the
 * tensor(s) even on error). */
/* The origin a redistribute's result gets: passed as `origin` to the
 * lt__sc_put_* functions, it stands for rc->plan's text (lt__sc_plan_text),
 * which the value keeps as a plan reference and spells only when a message
 * needs it (a sweep's cases almost never do). */
extern const char lt__sc_plan_origin[];
/* rc->plan's text ("redistribute at f:l:c: ..."), made now if not yet; ""
 * without a plan. Owned by rc. */
const char *lt__sc_plan_text(sc_run_ctx *rc);
/* v's origin, made now if it is a plan's; NULL: none. Owned by v. */
const char *lt__sc_origin(sc_value *v);
/* The origin of rank r's shard of v (a LocalTensor's ranks may differ, see
 * sc_value.rorigin); NULL: none. Owned by v. */
const char *lt__sc_origin_rank(sc_value *v, int r);
/* Sets rank r's origin of LocalTensor v (copied); an allocation failure
 * leaves it as it was (an origin is information, never a result). */
void lt__sc_set_origin_rank(sc_value *v, int world, int r, const char *origin);
/* The text of plan p of redistribute step st into buf (n bytes). */
void lt__sc_plan_origin_text(const lt_plan *p, const sc_step *st, char *buf, size_t n);
lt_status lt__sc_put_full(sc_run_ctx *rc, const char *name, lt_tensor *t, const char *origin);
lt_status lt__sc_put_dtensor(sc_run_ctx *rc, const char *name, lt_dtensor *dt, const char *origin);
lt_status lt__sc_put_local(sc_run_ctx *rc, const char *name, lt_local *l, const char *origin);

/* Records the failure of the current check (message printf-style) and
 * returns LT_MISMATCH. rank -1 / NULL strings when they do not apply. */
lt_status lt__sc_check_fail(sc_run_ctx *rc, const sc_step *st, int rank, const char *index,
                            const char *expected, const char *actual, const char *plan_step,
                            const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 8, 9)))
#endif
    ;

/* With c->record_plans: appends {"at": "file:line:col", "tensor", "from",
 * "to", "plan": lt_json_plan(...)} for a redistribute that planned `plan`,
 * whose collectives are the comm trace's events from `since` on. Out of
 * memory drops the record (the report is informational). */
void lt__sc_record_plan(sc_run_ctx *rc, const sc_step *st, const char *tensor,
                        const lt_placement *src, const lt_plan *plan, size_t since);

/* ---- per-rank programs (scenario_spmd.c; matched collectives and the
 * program's end: scenario_match.c) ---- */

/* The step an expect_error wraps (NULL: none, or st is no expect_error). */
const sc_step *lt__sc_expect_error_inner(const sc_step *st);
/* Step types that run rank by rank (may take `ranks:` / `when:`). */
int lt__sc_step_is_per_rank(const sc_step_type *t);
/* 1 when rank r runs step st now (its mask; not waiting in a collective, and
 * its program did not end with an error). */
int lt__sc_rank_runs(const sc_run_ctx *rc, const sc_step *st, int r);
/* Step st runs now on the ranks lt__sc_rank_runs says: it becomes their last
 * step (an expect_error counts as the step it wraps, a repeat as its body's
 * steps, a `when:` step once its condition is known: lt__sc_when_step).
 * LT_NOMEM. */
lt_status lt__sc_note_ran(sc_run_ctx *rc, const sc_step *st);
/* The position of the step rank r ran last (file NULL: none). */
sc_pos lt__sc_last_step(const sc_run_ctx *rc, int r);
/* 1 when st's `when:` is evaluated as it runs (scenario_when.c). */
int lt__sc_when_step(const sc_step *st);
/* 1 when some rank has stopped in the per-rank program: it waits in a
 * collective, or its program ended with an error while others went on. */
int lt__sc_any_stopped(const sc_run_ctx *rc);
/* "ranks 1, 3 still run" (the first 8, then "and N more") into buf (n
 * bytes, cut to fit): the ranks neither waiting nor failed. */
void lt__sc_running_ranks(const sc_run_ctx *rc, char *buf, size_t n);
/* Runs a collective step through the matcher (its tensor a LocalTensor, or
 * the step limited to some ranks, or a barrier). */
lt_status lt__sc_run_matched(sc_run_ctx *rc, const sc_step *st, lt_coll kind, const char *tensor,
                             int mesh_dim, int op, int dim, int concat_dim, int root,
                             const lt_split_rule *rule, const char *as);
/* Runs a send or recv step through the matcher: calls[r] is the call of
 * each rank r that runs it (checked with lt_match_validate), in[r] what a
 * sender sends (borrowed), as the recv's result (NULL for a send). */
lt_status lt__sc_run_p2p(sc_run_ctx *rc, const sc_step *st, const lt_match_call *calls,
                         lt_tensor *const *in, const char *as);
/* Ends the per-rank program here: every rank not waiting finishes, and any
 * rank still waiting gives a would-hang report, recorded as a failed check
 * of st (LT_MISMATCH, rc->hung, rc->hang_kind). LT_OK when nothing waits.
 * The matcher is reset either way. _at: the running ranks reached
 * `together`, a step every rank runs together (the report says so). */
lt_status lt__sc_program_end(sc_run_ctx *rc, const sc_step *st);
lt_status lt__sc_program_end_at(sc_run_ctx *rc, const sc_step *st, const sc_step *together);
/* A would-hang report's JSON object (scenario_hang.c; the keys are in
 * scenarios/README.md, Reports) as text in the arena, into *out; NULL
 * without --json. LT_NOMEM. */
lt_status lt__sc_hang_json(sc_run_ctx *rc, const lt_match_report *rep, const char **out);
/* When the per-rank program stops before a later step that is an
 * expect_error with hang: (none runs: the case ends), "expect_error at
 * F:L:C not reached: every rank blocked at F:L" naming where each rank
 * stopped (ranks that reached `together` stopped there), into *out (arena);
 * else NULL. Call before the matcher is reset. LT_NOMEM. */
lt_status lt__sc_unreached(sc_run_ctx *rc, const sc_step *together, const char **out);
/* The lt_hang_kind an expect_error step asks for with hang:; -1 when it
 * asks for none or st is no expect_error. */
int lt__sc_expect_error_hang(const sc_step *st);
void lt__sc_spmd_free(sc_run_ctx *rc);
/* Counts one check of the case; failed: records rc->pending as its failure
 * (a check run outside the step loop: a rank catching up). */
void lt__sc_record_check(sc_run_ctx *rc, int failed);
/* Per-rank step `step` failed on rank rc->failed_rank (status st,
 * lt_errmsg()) while another rank waits in a collective or has failed: that
 * rank's program ends with the error (the matcher records it) and the step
 * runs again on the ranks still running (a step stores nothing when one rank
 * fails), until it succeeds on all of them; when no rank runs any more the
 * per-rank program ends here (lt__sc_program_end). Returns st unchanged when
 * that does not apply (the case's error). */
lt_status lt__sc_rank_failed(sc_run_ctx *rc, const sc_step *step, lt_status st);
/* A shard for rank r that skipped a step defining `as` (into *out, caller
 * frees): its older shard of `as` when that is a LocalTensor, else a
 * placeholder shaped like `like`. The value the step then puts under `as`
 * keeps r's older origin (rc->carry). */
lt_status lt__sc_skipped_shard(sc_run_ctx *rc, const char *as, int r, const lt_tensor *like,
                               lt_tensor **out);
/* --trace (scenario_trace.c): begin/end around a case, step after each
 * step (since: the comm trace index before it), op from the op step. begin
 * and end return 1 when out of memory (the case is then an error). */
int lt__sc_trace_begin(sc_run_ctx *rc);
void lt__sc_trace_step(sc_run_ctx *rc, const sc_step *st, int index, size_t since);
void lt__sc_trace_op(sc_run_ctx *rc, lt_op_kind op, const char *const *names,
                     const lt_dtensor *const *in, int nin, const lt_op_plan *plan);
int lt__sc_trace_end(sc_run_ctx *rc);

/* expect_same_as_single_device (scenario_diverge.c, docs/SEMANTICS.md §11.8):
 * every step that makes a value calls its recorder AFTER storing it; the
 * recorder keeps the name's single-device value and compares. No-ops (LT_OK)
 * unless the case has that step; errors: LT_NOMEM only. Names are borrowed. */
int lt__sc_diverge_on(sc_run_ctx *rc);
/* The single-device value of `name` (borrowed; NULL: none) and the
 * reference rank's expression environment (a mesh of size-1 dims). */
const lt_tensor *lt__sc_diverge_ref(sc_run_ctx *rc, const char *name);
void lt__sc_diverge_env(sc_run_ctx *rc, sc_env *env);
/* A value stored by a step no recorder follows (lt__sc_put_*). */
void lt__sc_diverge_forget(sc_run_ctx *rc, const char *name);
lt_status lt__sc_diverge_distribute(sc_run_ctx *rc, const sc_step *st, const char *name);
/* tensor: the LocalTensor it was made of, or NULL (values given in the step). */
lt_status lt__sc_diverge_from_local(sc_run_ctx *rc, const sc_step *st, const char *tensor,
                                    const char *name);
lt_status lt__sc_diverge_full(sc_run_ctx *rc, const sc_step *st, const char *tensor,
                              const char *name);
lt_status lt__sc_diverge_to_local(sc_run_ctx *rc, const sc_step *st, const char *tensor,
                                  const char *name);
lt_status lt__sc_diverge_local_tensor(sc_run_ctx *rc, const sc_step *st, const char *name);
/* refs: (nout) the op on the inputs' single-device values (taken, each may
 * be NULL), or NULL with ref_err: why the single-device op failed; mags
 * (taken, or NULL) and len: the tolerance's terms (lt__sc_diverge_mag). */
lt_status lt__sc_diverge_local_op(sc_run_ctx *rc, const sc_step *st, lt_op_kind op,
                                  const lt_op_args *a, const char *const *in, int nin,
                                  const char *const *as, int nout, lt_tensor **refs,
                                  lt_tensor **mags, int64_t len, const char *ref_err);
lt_status lt__sc_diverge_collective(sc_run_ctx *rc, const sc_step *st, lt_coll kind, int md,
                                    lt_redop op, int dim, int cdim, const lt_split_rule *rule,
                                    const char *tensor, const char *name);
/* op: the reference op on the inputs' single-device values. */
lt_status lt__sc_diverge_op(sc_run_ctx *rc, const sc_step *st, lt_op_kind op, const char *const *in,
                            int nin, const lt_op_args *args, const char *const *names, int nout);
/* redistribute, rank_map: the input's single-device value, unchanged. */
lt_status lt__sc_diverge_same(sc_run_ctx *rc, const sc_step *st, const char *kind,
                              const char *tensor, const char *name);
/* mag[j]: the op on |inputs| (sum of |terms| of each output element) and
 * *len the terms summed, for linear reductions and matmuls; *nmag 0 for
 * other ops. Caller frees mag[0..*nmag). */
lt_status lt__sc_diverge_mag(lt_op_kind op, const lt_tensor *const *full, int nin,
                             const lt_op_args *args, lt_tensor **mag, int max_out, int *nmag,
                             int64_t *len);
void lt__sc_diverge_end(sc_run_ctx *rc);
/* --single-device: the check after the case's last step (reported at it). */
lt_status lt__sc_diverge_final(sc_run_ctx *rc, const sc_step *last);
/* Adds a line to the case's notes (printed under the case, JSON "notes").
 * Errors: LT_NOMEM. */
lt_status lt__sc_add_note(sc_run_ctx *rc, const char *text);

/* ---- cases and sweeps (scenario_load.c, scenario_sweep.c) ------------------- */

/* Parses mesh, tensors and steps of a scenario map (variables already
 * substituted) into case c (arena a); sweep_mesh stands in for a missing
 * `mesh`. */
lt_status lt__sc_parse_case(sc_arena *a, const sc_node *map, const sc_node *sweep_mesh, sc_case *c);
/* Reads scenario map's `sweep` into s (its table in arena a, no case
 * stored), then parses every case once (on the pool's threads) so that a bad
 * case is a load error; the error is the first bad case's in case order. */
lt_status lt__sc_parse_sweep(sc_arena *a, const sc_node *map, const sc_node *sweep, sc_scenario *s);
/* Case i of s. A scenario's own case is returned as it is (slot and a
 * unused); a sweep's is made into *slot, its name in arena a, its steps not
 * yet parsed (lt__sc_case_build), and slot is returned. NULL: out of
 * memory. The case lives as long as a and *slot. */
sc_case *lt__sc_case_at(sc_scenario *s, int i, sc_case *slot, sc_arena *a);
/* Case i's name, snprintf-style into buf (cap bytes; returns the full
 * length), and its mesh (mesh may be NULL): what -k and --world select on,
 * without making the case. */
size_t lt__sc_case_name(const sc_scenario *s, int i, char *buf, size_t cap, const lt_mesh **mesh);
/* Case i's mesh alone (cheaper than its name). */
const lt_mesh *lt__sc_case_mesh(const sc_scenario *s, int i);
/* Parses a sweep case's mesh, tensors and steps into arena a; they stay
 * valid as long as a does (lt__sc_case_drop forgets them). A scenario's
 * own case (parsed at load) is left as it is. The load already parsed every
 * case once, so only LT_NOMEM is expected here. */
lt_status lt__sc_case_build(sc_case *c, sc_arena *a);
/* Forgets what lt__sc_case_build parsed (before its arena is freed); no-op
 * for a scenario's own case. */
void lt__sc_case_drop(sc_case *c);

/* Runs a case's steps (building a sweep case first, into arena); fills
 * c->res, whose strings live in arena. Never fails: errors become
 * results. */
void lt__sc_run_case(sc_case *c, sc_arena *arena, FILE *show);
/* Runs one step (used by the runner and expect_error). */
lt_status lt__sc_run_step(sc_run_ctx *rc, const sc_step *st);

/* Formats a double the way reports print values (%.9g, nan, inf). */
char *lt__sc_fmt_num(double v, char *buf, size_t n);
/* "[1, 0]" for a multi-index. */
char *lt__sc_fmt_index(int ndim, const int64_t *idx, char *buf, size_t n);

/* ---- step table ------------------------------------------------------------ */

/* XX(name, is_check) */
#define LT_SC_STEP_MAP(XX)      \
    XX(distribute,   0)         \
    XX(from_local,   0)         \
    XX(redistribute, 0)         \
    XX(remesh,       0)         \
    XX(full_tensor,  0)         \
    XX(collective,   0)         \
    XX(show,         0)         \
    XX(mark_comm,    0)         \
    XX(op,           0)         \
    XX(tp_mlp,       0)         \
    XX(rank_map,     0)         \
    XX(to_local,     0)         \
    XX(local_tensor, 0)         \
    XX(local_op,     0)         \
    XX(send,         0)         \
    XX(recv,         0)         \
    XX(save,         0)         \
    XX(load,         0)         \
    XX(expect_local, 1)         \
    XX(expect_full,  1)         \
    XX(expect_plan,  1)         \
    XX(expect_comm,  1)         \
    XX(expect_order, 1)         \
    XX(expect_replicas, 1)      \
    XX(expect_error, 1)         \
    XX(expect_same_as_single_device, 1)

#define LT__XX(name, chk)                                                                      \
    lt_status lt__sc_parse_##name(sc_parse_ctx *pc, const sc_node *body, sc_step *st);         \
    lt_status lt__sc_run_##name(sc_run_ctx *rc, const sc_step *st);
LT_SC_STEP_MAP(LT__XX)
#undef LT__XX

/* ---- numerics sample / none (scenario_numerics.c) ------------------------------- */

/* Sets up rc for case c's numerics mode (rc->nranks -1 in full mode) and
 * notes it in c's result. LT_NOMEM. */
lt_status lt__sc_numerics_begin(sc_run_ctx *rc, sc_case *c, sc_arena *arena);
void lt__sc_numerics_end(sc_run_ctx *rc);
/* LT_OK when step st can run in rc's mode; otherwise LT_UNSUPPORTED
 * ("not supported yet: ... in --numerics sample:K mode") and rc->refused. */
lt_status lt__sc_numerics_gate(sc_run_ctx *rc, const sc_step *st);
/* Refuses what cannot run in rc's mode: "not supported yet: <what> in
 * --numerics sample:K mode", LT_UNSUPPORTED, and the case ends in an error
 * even inside expect_error (rc->refused). */
lt_status lt__sc_numerics_refuse(sc_run_ctx *rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* "sample:2" (static buffer of rc's case). */
const char *lt__sc_numerics_name(const sc_run_ctx *rc);
/* distribute of declared tensor `tensor` (an init: tensor, never built in
 * these modes) with placements pl[np] into `as`: the sampled ranks' shards. */
lt_status lt__sc_sampled_distribute(sc_run_ctx *rc, const char *tensor, const lt_placement *pl,
                                    int np, const char *as);
/* A collective called directly (`collective` step) on sampled DTensor
 * `tensor`: for every group holding a sampled rank, its members' inputs are
 * produced on demand and the collective runs on that group alone; the
 * sampled ranks' results become LocalTensor `as` (the others absent), and
 * the scenario's comm trace gets the event a full run records. */
lt_status lt__sc_sampled_collective(sc_run_ctx *rc, lt_coll kind, const char *tensor, int md,
                                    lt_redop op, int dim, int cdim, int root,
                                    const lt_split_rule *rule, const int *perm, const char *as,
                                    const char *origin);
/* Stores a sampled DTensor (takes dt) with its values' source g as `as`. */
/* --shards owned: every process ends a step with the same kind of outcome
 * (s: this process's status). An error or a refusal anywhere becomes this
 * process's too (the lowest failing process's message, "(on process P)"
 * appended; rc->refused set for a refusal), so the case stops everywhere at
 * the same step; another process's failed check is adopted only with
 * adopt_checks (the step an expect_error wraps: every process judges the
 * same outcome), else that process reports it. Returns the status to go on
 * with; s itself when nothing is agreed (every rank held here). */
lt_status lt__sc_step_agree(sc_run_ctx *rc, lt_status s, int adopt_checks);
/* The agreement lt__sc_step_agree uses (lt_sc_options.step_agree with
 * --shards owned, else NULL): process-wide, set by the driver for its run
 * (every case of a run shares it; a sweep's cases stay small). */
void lt__sc_set_step_agree(int (*fn)(int status, int *kind, char *msg, size_t cap, int *from));
/* --shards all over several processes (every process holds every value, so
 * nothing is agreed per step): what lt__sc_step_agree calls instead, on
 * this process alone, after a step that failed, with the same arguments:
 * it keeps this process's own error (which may end the case here while
 * others go on into a collective) and returns another process's outcome
 * when the step failed because that process had ended the case (*from
 * its number, *kind 2: a refusal). Process-wide, set by the MPI side of
 * the CLI (tools/cli/cli_mpi.c); NULL: none. */
void lt__sc_set_step_note(int (*fn)(int status, int *kind, char *msg, size_t cap, int *from));
/* --shards owned over several processes: init: tensors of any size load
 * (they are never built whole); process-wide, set before loading. */
void lt__sc_load_unbuilt_init(int on);
/* A redistribute with --shards owned: the plan runs on the engine over this
 * process's shards (the other ranks' absent); when verified, each held
 * shard (replicas sharing a buffer once) is compared with its semantic
 * definition (lt_verify_sampled_shard). *out: the held shards; *plan, *gout
 * as lt_redistribute_sampled. A difference is LT_MISMATCH with o->report
 * filled (*out NULL). */
lt_status lt__sc_owned_redistribute(sc_run_ctx *rc, sc_value *v, const lt_placement *pl, int np,
                                    const lt_redistribute_opts *o, lt_dtensor **out, lt_plan **plan,
                                    lt_sample_src *gout);
lt_status lt__sc_sampled_put(sc_run_ctx *rc, const char *as, lt_dtensor *dt, const lt_sample_src *g,
                             const char *origin);

/* The step type called `name`, or NULL. */
const sc_step_type *lt__sc_step_type(const char *name);
/* "distribute, from_local, ..." */
const char *lt__sc_step_names(void);

/* ---- reports (report.c) ---------------------------------------------------- */

typedef struct sc_run_summary {
    int files, scenarios, cases;       /* selected; files includes those that failed to load */
    int files_failed;                  /* files that could not be loaded */
    int passed, failed, errors;        /* cases; load errors count as errors */
    int not_run;                       /* after --fail-fast */
    double seconds;
    const char *engine;                /* --engine's name for the JSON report, or NULL */
} sc_run_summary;

/* A file that could not be loaded (path and message). */
typedef struct sc_load_error {
    const char *path;
    char *message;
} sc_load_error;

/* One case's line (and failure details) as it finishes. */
void lt__sc_report_case(FILE *f, const lt_sc_options *o, const lt_sc_file *file,
                        const sc_scenario *s, const sc_case *c);
/* A sweep's tally as its cases finish (those not run are not counted). */
typedef struct sc_tally {
    int cases, failed, errors;
    double seconds;
} sc_tally;
void lt__sc_tally_add(sc_tally *t, const sc_case *c);
/* One line for a finished sweep when not verbose (nothing when t->cases is 0). */
void lt__sc_report_sweep(FILE *f, const lt_sc_options *o, const lt_sc_file *file,
                         const sc_scenario *s, const sc_tally *t);
/* The closing lines; the last is "N passed, N failed, N errors" (singular
 * nouns for 1: "1 error"). */
void lt__sc_report_summary(FILE *f, const lt_sc_options *o, const sc_run_summary *sum);
/* --json and --junit, written while the cases run: open; per loaded file
 * file_begin, per scenario with selected cases scen_begin, a case call for
 * each selected case in order (after it ran, or marked not run),
 * scen_end; file_end; then close. Only the current case's report is in
 * memory. A report that cannot be written stops being written; close
 * returns its first failure (LT_IO or LT_NOMEM, message "--json: ..." or
 * "--junit: ...") after finishing the other.
 *
 * Each report file is written to a temporary file beside it and renamed
 * onto it when complete (sc_report_out): the target holds the previous
 * report or the whole new one, never a part of one. */
typedef struct sc_report_out {
    FILE *f;                                /* writing tmp (or dst in place), or NULL */
    char *tmp; /* "DST.tmp-XXXXXX" (lt__malloc), removed unless renamed;
                * NULL: dst is written in place (it is not a regular
                * file: /dev/stdout, a FIFO) */
    char *dst;                              /* the file renamed onto: the target, or the file a link
                                             * there points to (lt__malloc) */
} sc_report_out;
typedef struct sc_stream {
    const char *json_path, *junit_path;     /* NULL: not asked for */
    const sc_load_error *lerr;              /* (nlerr) borrowed until close */
    int nlerr;
    sc_report_out json_out, junit_out;      /* the report files; json_out.f NULL once the JSON
                                             * report failed (or when not asked for) */
    FILE *body;                             /* JUnit: the testsuites so far (temporary) */
    FILE *suite;                            /* JUnit: the current file's testcases (temporary) */
    int nfiles, nscen, ncase;               /* JSON items written in the current lists */
    int tests, fails, errs, skipped;        /* the current file's JUnit counts */
    double file_t, scen_t;
    lt_sc_status worst;                     /* the current scenario's */
    int all_notrun;
    lt_status json_st, junit_st;            /* first failure of each */
    char json_msg[700], junit_msg[700];
} sc_stream;
void lt__sc_stream_open(sc_stream *st, const char *json_path, const char *junit_path,
                        const sc_load_error *lerr, int nlerr);
void lt__sc_stream_file_begin(sc_stream *st, const lt_sc_file *f);
void lt__sc_stream_scen_begin(sc_stream *st, const sc_scenario *s);
void lt__sc_stream_case(sc_stream *st, const lt_sc_file *f, const sc_case *c);
void lt__sc_stream_scen_end(sc_stream *st);
void lt__sc_stream_file_end(sc_stream *st, const lt_sc_file *f);
lt_status lt__sc_stream_close(sc_stream *st, const sc_run_summary *sum);
const char *lt__sc_status_name(lt_sc_status s);   /* "ok", "FAIL", "ERROR", "not run" */

/* ==== loops and expressions that read shard sizes ==============================
 * (scenario_loop.c: `repeat:`; scenario_when.c: a `when:` that reads values;
 * scenario_expr.c: numel / shape / rows and loop variables). Every
 * addition of the loop work lives in this block.
 */

/* Bounds of `repeat:` (docs/SEMANTICS.md §12): iterations of one loop, and
 * steps of a case once its loops are unrolled (at load, and with the loops
 * spliced in at run time); both refused before anything runs. Lowered by
 * the fuzz build like the loader's other limits. */
#ifndef LT_SC_MAX_LOOP_ITERS
#define LT_SC_MAX_LOOP_ITERS 1000000
#endif
#ifndef LT_SC_MAX_UNROLLED
#define LT_SC_MAX_UNROLLED 100000
#endif
#define SC_MAX_LOOP_DEPTH 8

typedef struct sc_loop_var {
    const char *name;         /* borrowed (arena) */
    int64_t value;            /* the iteration being parsed */
} sc_loop_var;

/* What a step parser's context holds besides sc_parse_ctx: every
 * sc_parse_ctx is the first member of one (lt__sc_parse_case and a loop's
 * run-time parse make them), so lt__sc_scope finds it from pc. */
typedef struct sc_parse_scope {
    sc_parse_ctx pc;
    int *ndims; /* (pc.cap) malloc'd with pc.syms: dims of syms[k]'s value, -1: unknown */
    int nvars;
    sc_loop_var vars[SC_MAX_LOOP_DEPTH]; /* the enclosing loops' variables, innermost last */
    int64_t iters;            /* loop iterations parsed (bounded like the steps they make) */
    const char *dropped[8];   /* names a loop's body defined first, gone after it (for messages) */
    int dropped_line[8];      /* the loop's line */
    int ndropped;
} sc_parse_scope;
static inline sc_parse_scope *lt__sc_scope(sc_parse_ctx *pc) {
    return (sc_parse_scope *)(void *)pc;
}
/* Frees what a scope owns (pc.syms, ndims). */
void lt__sc_scope_free(sc_parse_scope *s);
/* For "'x' is not defined": " ('x' belongs to the body of the loop at line
 * N: ...)" into buf when a loop dropped x, else "". */
void lt__sc_dropped_hint(sc_parse_ctx *pc, const char *name, char *buf, size_t n);

/* Names (scenario_load.c): the kind of `name` (0: not defined) and the
 * dims of its value (-1: unknown); define appends (a later entry hides an
 * earlier one); list: "x, y" of the defined names into buf. */
int lt__sc_sym_find(const sc_parse_ctx *pc, const char *name, int *ndim);
lt_status lt__sc_sym_add(sc_parse_ctx *pc, const char *name, int kind, int ndim);
void lt__sc_sym_list(const sc_parse_ctx *pc, char *buf, size_t n);

/* lt__sc_expr_parse with the step's context: the loop variables of pc's
 * scope are known (their value now), and numel(x), shape(x, d), rows(x)
 * read rank's shard of a DTensor or LocalTensor x, which must be defined
 * (checked here, with a dim out of range when x's dims are known). */
lt_status lt__sc_expr_parse_pc(sc_parse_ctx *pc, const sc_node *at, int allow_i, const char *what,
                               sc_expr **out);
/* 1 when e reads values (numel, shape, rows): it can only be evaluated at
 * run time, with lt__sc_expr_eval_rc. */
int lt__sc_expr_reads_values(const sc_expr *e);
/* lt__sc_expr_eval / _int on the values rc holds now (rc NULL: as those).
 * Errors name file:line:col and the rank: a name that holds no value there
 * (a placeholder), a dim out of range, rows of a 0-d value. */
lt_status lt__sc_expr_eval_rc(const sc_expr *e, const sc_env *env, sc_run_ctx *rc, double *out);
lt_status lt__sc_expr_int_rc(const sc_expr *e, const sc_env *env, sc_run_ctx *rc, const char *what,
                             int64_t lo, int64_t hi, int64_t *out);

/* A `when:` that reads values (scenario_when.c): st->type becomes a copy of
 * t (arena) whose run evaluates cond on every rank that would run the step
 * (st->mask, when set, limits them further) and runs t's step on those
 * where it holds. */
lt_status lt__sc_when_wrap(sc_parse_ctx *pc, const sc_step_type *t, const sc_expr *cond,
                           sc_step *st);

/* The steps list `seq` into *steps (arena, *n entries), its `repeat:` loops
 * unrolled when their count is known at load; a loop whose count reads
 * values stays one `repeat` step, unrolled when it runs. (`repeat` is a row
 * of scenario_load.c's step table outside LT_SC_STEP_MAP: its parse there
 * only refuses it where a steps list does not hold it, as in expect_error.) */
lt_status lt__sc_parse_steps(sc_parse_ctx *pc, const sc_node *seq, sc_step **steps, int *n);
lt_status lt__sc_parse_repeat(sc_parse_ctx *pc, const sc_node *body, sc_step *st);
lt_status lt__sc_run_repeat(sc_run_ctx *rc, const sc_step *st);

/* One run of case c with loops spliced into its steps (this run only):
 * begin before the steps run, end after the last use of c->steps in the
 * run; end puts c's own steps back and frees the spliced arrays. */
typedef struct sc_loop_run {
    sc_case *c;
    sc_step *orig;            /* c's own steps (borrowed) */
    int norig;
    sc_step *buf;             /* owned: the array c->steps is once a loop was spliced, or NULL */
    int cap;
    sc_step **old;            /* (nold) owned: earlier arrays, kept to the end (steps still
                               * running point into them) */
    int nold;
    struct sc_loop_run *prev; /* the thread's previous run (a nested run) */
} sc_loop_run;
void lt__sc_loops_begin(sc_loop_run *lr, sc_case *c);
void lt__sc_loops_end(sc_loop_run *lr);
/* ==== end of loops and expressions that read shard sizes ==================== */

#endif
