/* localtensor/verify.h — the redistribute verifier: an independent direct
 * reshard from global index sets (never the planner or the collectives),
 * and the check of a DTensor against it.
 *
 * lt_redistribute (localtensor/redistribute.h) calls it on every
 * intermediate state when asked (opts.verify); tests and tools call it
 * directly. A difference is reported in a message and, field by field, in
 * an lt_verify_report.
 */
#ifndef LT_VERIFY_H
#define LT_VERIFY_H

#include <stdint.h>

#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"
#include "localtensor/dtensor.h"
#include "localtensor/placement.h"

/* Machine-readable result of a verification. Filled by lt_redistribute (when
 * opts->report is set; checked = 0 unless opts->verify) and by
 * lt_verify_reshard. The fields after `ok` describe the first difference and
 * are meaningful only when ok == 0. */
typedef struct lt_verify_report {
    int checked;                       /* 1 when a verification ran */
    int ok;                            /* 1 when everything matched */
    int step;                          /* first wrong state: step index (0-based) whose
                                        * result was wrong, or -1 when the SOURCE itself
                                        * is inconsistent (replicas disagree) */
    int mesh_dim;                      /* that step's mesh dim (-1 for the source) */
    int rank;                          /* first rank that differs */
    int shape_mismatch;                /* 1: the shard shapes differ (no index then) */
    int ndim;
    int64_t local_index[LT_MAX_DIMS];  /* index into that rank's shard */
    int64_t global_index[LT_MAX_DIMS]; /* the same element in the global tensor */
    int64_t expected_shape[LT_MAX_DIMS];
    int64_t actual_shape[LT_MAX_DIMS];
    double expected, actual;
    int64_t ndiff;                     /* elements out of tolerance on that rank */
    char message[512];                 /* same text as lt_errmsg() on LT_MISMATCH */
} lt_verify_report;

/* The direct reshard of docs/SEMANTICS.md §7 ("Semantic definition"), from global
 * index sets only: K = mesh dims whose source and destination are the same
 * Partial; for every coordinate on K the slice's logical tensor is rebuilt
 * from its ranks (replicas must agree within dtype tolerance, other Partial
 * dims are reduced), then re-distributed with the destination placements of
 * the non-K dims (Replicate -> Partial partitions as in docs/SEMANTICS.md §5); K dims
 * keep their per-rank values. *out is a new DTensor. Errors: bad placements
 * (LT_INVALID); LT_MISMATCH when the source's replicas disagree (message
 * names the ranks and index; rep, if not NULL, gets step -1). It reads every
 * source shard: LT_UNSUPPORTED (LT_ERR_NOT_YET) when one is absent
 * (localtensor/local.h). A RaggedShard on either side keeps no Partial dim
 * (docs/SEMANTICS.md §11.10): the result is src's full tensor
 * (lt_full_tensor_direct) distributed with dst. */
LT_API lt_status lt_reshard_direct(const lt_dtensor *src, const lt_placement *dst, int np,
                                   lt_dtensor **out, lt_verify_report *rep);

/* Checks `actual` (any placements) against the direct reshard of `src` to
 * actual's placements: shard shapes, then values with the dtype's default
 * tolerance (lt_dtype_default_tol). LT_OK when equal; LT_MISMATCH with
 * "rank R, local index [..] (global [..]): expected X, got Y" otherwise.
 * rep may be NULL; when given it is filled either way (rep->step = step).
 * Absent shards of `actual` are not checked. */
LT_API lt_status lt_verify_reshard(const lt_dtensor *src, const lt_dtensor *actual, int step,
                                   lt_verify_report *rep);

#endif
