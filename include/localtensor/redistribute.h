/* localtensor/redistribute.h — redistribute: planner, executor, verifier.
 *
 * A redistribute turns a DTensor with source placements into the same
 * logical tensor with destination placements (docs/SEMANTICS.md §7). It is done in
 * three parts:
 *
 *   planner   a plan is a list of steps; each step issues at most one
 *             collective, along one mesh dim, plus local work. Every state
 *             between steps is a valid placement list (a DTensor that
 *             distribute could produce). Two planners: `greedy` (PyTorch's
 *             order, over a rule table) and `min-cost` (the default:
 *             the fewest bytes received, summed over all ranks and
 *             steps, then the fewest steps, over a complete move set).
 *             Plans are cached (localtensor/plan.h).
 *   executor  runs the plan through collectives_sim (lt_comm) and local
 *             slicing; each intermediate is wrapped and shape-checked.
 *   verifier  an independent direct reshard from global index sets (never
 *             the planner or the collectives) that checks every
 *             intermediate state when asked (localtensor/verify.h).
 *
 * This header is the executor and its options; the planner is
 * localtensor/plan.h (its comment has the rule table, the rejections, the
 * byte model and both planners), the verifier localtensor/verify.h. Both
 * are included here.
 */
#ifndef LT_REDISTRIBUTE_H
#define LT_REDISTRIBUTE_H

#include "localtensor/collectives_sim/collectives.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"
#include "localtensor/dtensor.h"
#include "localtensor/placement.h"
#include "localtensor/plan.h"
#include "localtensor/verify.h"

/* ---- options --------------------------------------------------------------- */

/* A zero-initialised struct (or NULL options) means: min-cost planner (bytes
 * over the collectives), no verification, unnamed tensor, internal
 * communicator, plan cache on. */
struct lt_redistribute_opts {
    lt_planner planner;
    int verify;                 /* 1: check every intermediate against the direct reshard */
    const char *name;           /* tensor name for messages (borrowed; NULL: unnamed) */
    lt_comm *comm;              /* borrowed; NULL: a temporary in-process communicator.
                                 * Pass one to read the comm trace afterwards. */
    lt_verify_report *report;   /* optional out: filled when verify is on */
    int no_cache;               /* 1: plan from scratch, neither read nor fill the cache
                                 * (nor the min-cost searches' shared space) */
    const lt_plan_cost *cost;   /* optional (borrowed for the call): what min-cost minimises
                                 * and over which moves (plan.h); NULL: bytes over the
                                 * collectives. Other options plan anew (never cached), as
                                 * lt_plan_redistribute_cost. */
};

/* ---- redistribute ----------------------------------------------------------- */

/* Redistributes dt (borrowed) to placements dst[np]: plans (see
 * lt_plan_redistribute), runs every step through opts->comm (or a temporary
 * communicator) and, with opts->verify, checks every intermediate state
 * against lt_reshard_direct of dt. *out is a NEW DTensor with placements dst
 * (size-1 mesh dims take dst's placement for free). With an empty plan its
 * shards are views of dt's (shared storage). *plan (may be NULL) receives a
 * new plan reference.
 *
 * Errors: the planning errors; LT_INVALID when opts->comm has another mesh;
 * LT_UNSUPPORTED (LT_ERR_NOT_YET) when dt has absent shards
 * (localtensor/local.h) and the plan has steps;
 * collective errors (with the step as context); LT_MISMATCH when
 * verification fails: the message names the step (index, mesh dim, from ->
 * to, collective), the rank, the local and global index, and the expected
 * and actual values, and opts->report (if set) holds the same in fields.
 * On error *out is NULL (and *plan holds the plan when planning succeeded,
 * so a failed verification can still be explained; else NULL).
 *
 * A RaggedShard on either side (docs/SEMANTICS.md §11.10): when both sides
 * can be written in one view (dims 0..K-1 flattened, K the largest k of
 * the RaggedShards), the planner plans and runs the pair there with these
 * options, and *plan is the view's plan with its states spelled for the
 * tensor; otherwise (and, for min-cost without Partial, when it moves
 * fewer bytes) the route of localtensor/ragged.h: Partial source dims
 * reduced, one whole-mesh exchange (recorded in opts->comm's trace as an all_to_all on
 * mesh dim 0 with one group of every rank), Partial destination dims made.
 * *plan is that route, made here and never cached: the reducing plan's
 * steps, the exchange (mesh dim 0, mesh_span = every mesh dim, its bytes),
 * the partitioning plan's steps. With opts->verify the source's replicas
 * and the result are checked against the source's full tensor
 * distributed with dst (lt_reshard_direct's rule for RaggedShard);
 * opts->report is filled as above. */
LT_API lt_status lt_redistribute(const lt_dtensor *dt, const lt_placement *dst, int np,
                                 const lt_redistribute_opts *opts, lt_dtensor **out,
                                 lt_plan **plan);

/* The full tensor: redistribute to all-Replicate and take the first held
 * rank's shard.
 * *out is a new tensor (free with lt_tensor_free). Partial dims are reduced
 * by the collectives (reduction order: the plan's). */
LT_API lt_status lt_full_tensor(const lt_dtensor *dt, lt_tensor **out);

#endif
