/* tools/cli.h — the `localtensor` command table and shared CLI helpers.
 *
 * Each subcommand is `int fn(int argc, char **argv)` (argv[0] is the
 * subcommand name) returning the process exit code: 0 ok, 1 a check failed,
 * 2 bad input or usage. main.c dispatches through LT_CLI_COMMANDS.
 */
#ifndef LT_CLI_H
#define LT_CLI_H

#include <stdio.h>

#include "kernels/status.h"

/* XX(name, function, one-line summary) */
#define LT_CLI_COMMANDS(XX)                                                              \
    XX("show",         lt_cli_show,         "what every rank holds for a layout")        \
    XX("redistribute", lt_cli_redistribute, "plan, run and verify a redistribute")       \
    XX("run",          lt_cli_run,          "run YAML scenario files or directories")

int lt_cli_show(int argc, char **argv);
int lt_cli_redistribute(int argc, char **argv);
int lt_cli_run(int argc, char **argv);

/* Exit code for a status: OK 0, MISMATCH 1, anything else 2. */
int lt_cli_exit_code(lt_status st);

/* Prints "localtensor <cmd>: <message>" to stderr and returns the exit code
 * of st. */
int lt_cli_fail(const char *cmd, lt_status st);

/* 1 when stdout should be colored: a terminal, NO_COLOR unset. */
int lt_cli_use_color(FILE *f);

#endif

#include <stdint.h>

/* Parses "5", "5,7", "0,3" (also "(5, 7)" and "[5,7]"; "" is a 0-d shape).
 * Errors name the text: negative, non-numeric, too many dims, overflow. */
lt_status lt_cli_parse_shape(const char *s, int *ndim, int64_t *shape);

/* Option matching for `--name VALUE` and `--name=VALUE`. At argv[*i]: returns
 * 1 and sets *val (advancing *i past a separate value), 0 when argv[*i] is
 * another option, -1 when the value is missing (message set). */
int lt_cli_opt(int argc, char **argv, int *i, const char *name, const char **val);
