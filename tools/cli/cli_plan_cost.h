/* tools/cli/cli_plan_cost.h — `redistribute --objective/--topology/--moves/
 * --compare`: the cost options of a run and the lines that price its plan
 * (cli_plan_cost.c). */
#ifndef LT_CLI_PLAN_COST_H
#define LT_CLI_PLAN_COST_H

#include <stdio.h>

#include <cJSON.h>

#include "localtensor/localtensor.h"

/* The options as typed (NULL: not given) and what they parse to. */
typedef struct lt_cli_cost {
    const char *objective_s, *topology_s, *moves_s;
    int compare;
    int shown; /* 1: any of the four was given (the cost lines are printed) */
    lt_plan_cost cost;
} lt_cli_cost;

/* Moves argv[0] and every argument but --objective V, --topology V,
 * --moves V and --compare (also --name=V) into kept (room for argc + 1;
 * NULL-terminated; the strings are argv's), those into c. Returns the
 * count kept, or -1 (message set) when one lacks its value. */
int lt_cli_cost_take(lt_cli_cost *c, int argc, char **argv, char **kept);
/* Parses the options taken, for the mesh that --mesh of the kept
 * arguments names (none, or a bad one: 1 dim; the command then reports
 * the mesh). A topology is a preset name or a JSON file {"dims":
 * [{"alpha_us": A, "beta_GBps": B}, ...]}. LT_INVALID naming the option. */
lt_status lt_cli_cost_parse(lt_cli_cost *c, int argc, char **argv);
/* After the plan table: the estimated time per step and in total, the
 * busiest rank's bytes, and greedy's order against this plan; with
 * --compare, the plan of every objective. Nothing when none of the
 * options was given. */
lt_status lt_cli_cost_print(FILE *f, const lt_cli_cost *c, const lt_plan *p);
/* The plan's costs for --json (a new object; NULL without memory; the
 * caller owns it): objective, moves, topology, step_time_ps (per step),
 * time_ps, max_rank_bytes, total_bytes. Times in picoseconds, on the
 * topology of c (uniform by default). */
cJSON *lt_cli_cost_json(const lt_cli_cost *c, const lt_plan *p);

#endif
