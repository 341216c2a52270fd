/* tools/cli/cli.h — the `localtensor` command table and shared CLI helpers.
 *
 * Each subcommand is `int fn(int argc, char **argv)` (argv[0] is the
 * subcommand name) returning the process exit code: 0 ok, 1 a check failed,
 * 2 bad input or usage. main.c dispatches through LT_CLI_COMMANDS.
 */
#ifndef LT_CLI_H
#define LT_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "localtensor/collectives_sim/engine.h"
#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/kernels/status.h"
#include "localtensor/kernels/tensor.h"
#include "localtensor/random.h"

/* The version `localtensor --version` prints; tools/localtensor.pc.in
 * carries the same number (test_cli checks that they agree). */
#define LT_CLI_VERSION "0.2.0"

/* XX(name, function, one-line summary) */
#define LT_CLI_COMMANDS(XX)                                                              \
    XX("show",         lt_cli_show,         "what every rank holds for a layout")        \
    XX("redistribute", lt_cli_redistribute, "plan, run and verify a redistribute")       \
    XX("run",          lt_cli_run,          "run YAML scenario files or directories")   \
    XX("checkpoint",   lt_cli_checkpoint,   "inspect, verify or reshard a safetensors checkpoint")

int lt_cli_show(int argc, char **argv);
int lt_cli_redistribute(int argc, char **argv);
int lt_cli_run(int argc, char **argv);
int lt_cli_checkpoint(int argc, char **argv);

/* `localtensor run` with its argv (argv[0] = "run"), writing to out / err
 * (tools/cli/cli_run.c; the work is lt_sc_run_paths, tools/scenario/scenario.h). */
int lt_sc_main(int argc, char **argv, FILE *out, FILE *err);

/* The MPI side of `run --engine mpi` (tools/cli/cli_mpi.c): linked into the
 * CLI only in builds with MPI, whose main() points lt_cli_mpi_hooks at it;
 * NULL otherwise. */
typedef struct lt_cli_mpi {
    /* MPI_Init (when not yet done) and the engine's options (owned: each
     * process holds only its own ranks' shards, `--shards owned`); -1 to go
     * on, or 2 after printing why to err. *proc, *nproc: this process, all. */
    int (*begin)(int cross_check, int owned, FILE *err, int *proc, int *nproc);
    /* the exit code: the highest of all processes' codes */
    int (*agree_exit)(int code);
    /* MPI_Finalize */
    void (*end)(void);
    const lt_engine_i *(*engine)(void);
    /* lt_sc_options.case_agree (tools/scenario/scenario.h) */
    int (*case_agree)(int status, const char *failure, int *from, char *other, size_t cap);
    /* lt_sc_options.step_agree */
    int (*step_agree)(int status, int *kind, char *msg, size_t cap, int *from);
} lt_cli_mpi;
extern const lt_cli_mpi *lt_cli_mpi_hooks;
const lt_cli_mpi *lt_cli_mpi_impl(void);

/* `show --svg FILE --html FILE`: the layout of d drawn into those files
 * (either may be NULL), each written whole or not at all (tools/cli/cli_show.c,
 * tools/picture/picture.h). */
struct lt_dtensor;
lt_status lt_cli_pictures(const struct lt_dtensor *d, const char *svg, const char *html);

/* Exit code for a status: OK 0, MISMATCH 1, anything else 2. */
int lt_cli_exit_code(lt_status st);

/* Prints "localtensor <cmd>: <message>" to stderr (through lt_cli_print)
 * and returns the exit code of st. */
int lt_cli_fail(const char *cmd, lt_status st);

/* Messages echo what the user gave (arguments, names, paths) escaped, so
 * that no control byte reaches the terminal (ESC prints as \x1b), and cut,
 * so that a long argument does not push the reason out of view. */
#define LT_CLI_ECHO_MAX 80 /* bytes of an argument kept: its beginning ... end */
#define LT_CLI_ECHO_BUF (4 * LT_CLI_ECHO_MAX + 16)
/* arg escaped and cut to about LT_CLI_ECHO_MAX bytes (lt__echo,
 * kernels/status_impl.h) into buf[LT_CLI_ECHO_BUF]; returns buf. */
const char *lt_cli_echo(const char *arg, char *buf);
/* The command line (main's argc, argv), which lt_cli_print cuts where a
 * message echoes it. Borrowed for the life of the process. */
void lt_cli_set_args(int argc, char **argv);
/* Writes "localtensor[ <cmd>]: <msg>\n" to f (cmd may be NULL): msg's
 * control bytes escaped, and every run of it longer than LT_CLI_ECHO_MAX
 * bytes that echoes an argument of the command line (one a library message
 * quoted whole) cut to its beginning ... end. */
void lt_cli_print(FILE *f, const char *cmd, const char *msg);

/* 1 when f should be colored: a terminal, NO_COLOR unset. */
int lt_cli_use_color(FILE *f);

/* Parses "5", "5,7", "0,3" (also "(5, 7)" and "[5,7]"; "" is a 0-d shape).
 * Errors name the text: negative, non-numeric, too many dims, overflow. */
lt_status lt_cli_parse_shape(const char *s, int *ndim, int64_t *shape);

/* One option of a subcommand's table: `--name VALUE` (or `--name=VALUE`)
 * stores VALUE into *value; a flag (value NULL) stores flag_value into *flag. */
typedef struct lt_cli_option {
    const char *name;
    const char **value;
    int *flag;
    int flag_value;
} lt_cli_option;

/* Parses argv[1..] against opts (terminated by a {NULL} entry). Returns -1
 * when the command should go on, 0 after printing the usage for --help/-h,
 * 2 after printing what was wrong (unknown argument, missing value) and the
 * usage to stderr. */
int lt_cli_parse_args(const char *cmd, int argc, char **argv, const lt_cli_option *opts,
                      void (*usage)(FILE *));

/* The arguments every layout command shares, parsed; each error names its
 * option ("--mesh: mesh '2x0': ..."). */
typedef struct lt_cli_layout {
    lt_mesh mesh;
    int ndim;
    int64_t shape[LT_MAX_DIMS];
    lt_dtype dtype;
    lt_init init;
} lt_cli_layout;

lt_status lt_cli_parse_layout(const char *mesh, const char *shape, const char *dtype,
                              const char *init, lt_cli_layout *out);

#endif
