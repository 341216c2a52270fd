/* localtensor/validate.h — the rule validator: every op over every input
 * placement combination on small meshes, each result compared with the
 * unsharded reference (localtensor/reference.h); and the adversarial
 * distribute it builds Partial inputs with (localtensor/ops/validate.c).
 */
#ifndef LT_VALIDATE_H
#define LT_VALIDATE_H

#include <stdint.h>

#include "localtensor/kernels/export.h"
#include "localtensor/ops.h"

typedef struct lt_validate_opts {
    const lt_op_kind *ops;      /* NULL: every op */
    int nops;
    int quick;                  /* 1: fewer shapes and placements (for sanitizer runs) */
    int verbose;                /* 1: print every wrong/missing case to `log` */
    void *log;                  /* FILE*; NULL: stderr */
    int max_report;             /* cases printed per op (0: 5) */
} lt_validate_opts;

typedef struct lt_validate_op_result {
    int cases, ok, wrong, missing, errors, invalid;  /* invalid: inputs rejected as bad */
} lt_validate_op_result;

typedef struct lt_validate_report {
    int cases, ok, wrong, missing, errors, invalid;
    lt_validate_op_result per_op[LT_OP_COUNT];
    char first_wrong[512];      /* description of the first wrong case ("" if none) */
    char first_error[512];
} lt_validate_report;

/* Runs every op over every input placement combination on meshes 2, 3, 4
 * and 2x2 with even and uneven shapes (adversarial Partial inputs: per-rank
 * contributions differ but reduce to the same value), comparing each result
 * with the unsharded reference. wrong: result != reference; missing: the op
 * said LT_UNSUPPORTED with LT_ERR_NOT_YET; errors: any other failure. */
LT_API lt_status lt_rules_validate(const lt_validate_opts *o, lt_validate_report *rep);

/* Builds a DTensor of `full` with placements pl whose Partial mesh dims hold
 * DIFFERENT per-rank contributions that still reduce to `full` (sum/avg:
 * offsets that cancel; max/min: other ranks hold values pushed away from
 * the extreme, with the extreme's holder varying by element). Without
 * Partial dims it equals lt_distribute. For tests and the validator. */
LT_API lt_status lt_distribute_adversarial(const lt_mesh *mesh, const lt_tensor *full,
                                           const lt_placement *pl, int np, uint64_t salt,
                                           lt_dtensor **out);

#endif
