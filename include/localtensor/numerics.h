/* localtensor/numerics.h — numerics modes: how many ranks' values are computed.
 *
 *   full       every rank's values (the default; everything else in the
 *              library assumes it)
 *   sample:K   values for K chosen ranks only; shapes, offsets, plans and
 *              per-rank bytes for every rank. The ranks: the first, the
 *              last, and K - 2 evenly spaced between (rank round(j * (W - 1)
 *              / (K - 1)) for j = 0..K-1); every rank when K >= W. `sample`
 *              alone is sample:4.
 *   none       no values at all: shapes, offsets, plans and bytes only.
 *
 * A DTensor in sample or none mode holds only the chosen ranks' shards;
 * the others are absent (NULL entries, localtensor/local.h), so renders
 * and checks describe every rank from layout math and show values where
 * they exist. Its values are never materialised as a full tensor: an
 * initialiser is a function of the global index (localtensor/random.h), so
 * any rank's shard can be produced on its own.
 *
 * A redistribute in these modes plans exactly as in full mode (same plan,
 * same bytes) and computes the chosen ranks' destination shards directly:
 * the initialiser's values at the rank's destination indices, then the
 * value changes the plan makes, in its order: the source's Replicate ->
 * Partial partition (as distribute), every reduction step (a Partial mesh
 * dim reduced over its group: all_reduce, reduce_scatter, reduce) and every
 * partition step. Every member of a Partial group holds the same
 * contribution at an index (all ranks see the same history), so a
 * reduction is the engine's own reduction of m equal inputs: the chosen
 * ranks' values are bit-identical to full mode's. Data movement (gathers,
 * all_to_all, slicing, permutes) does not change values.
 *
 * What needs every rank's values (full_tensor, ops, direct collectives,
 * checks of a whole tensor) says "not supported yet ... in --numerics sample
 * mode" where the tools meet it.
 */
#ifndef LT_NUMERICS_H
#define LT_NUMERICS_H

#include <stddef.h>

#include "localtensor/kernels/export.h"
#include "localtensor/kernels/status.h"
#include "localtensor/collectives_sim/trace.h"
#include "localtensor/dtensor.h"
#include "localtensor/redistribute.h"

typedef enum { LT_NUMERICS_FULL = 0, LT_NUMERICS_SAMPLE, LT_NUMERICS_NONE } lt_numerics_kind;

#define LT_NUMERICS_SAMPLE_DEFAULT 4

typedef struct lt_numerics {
    lt_numerics_kind kind;
    int k;                         /* sample: how many ranks (>= 1) */
} lt_numerics;

/* Parses "full", "none", "sample" or "sample:K" (K >= 1). LT_INVALID naming
 * the text otherwise. */
LT_API lt_status lt_numerics_parse(const char *s, lt_numerics *out);
/* "full", "sample:8", "none" into buf. */
LT_API char *lt_numerics_format(const lt_numerics *nm, char *buf, size_t n);

/* The ranks whose values mode nm computes in a world of W ranks, ascending,
 * into ranks[] (the caller gives room for lt_numerics_count(nm, W)); returns
 * how many: every rank for full, none for none, the sample above otherwise. */
LT_API int lt_numerics_count(const lt_numerics *nm, int world);
LT_API int lt_numerics_ranks(const lt_numerics *nm, int world, int *ranks);

/* "0, 9362, 18724, ..., 65535" (the first `max` of them, then ", ...") into buf. */
LT_API char *lt_numerics_ranks_format(const int *ranks, int n, int max, char *buf, size_t len);

/* ---- where sampled values come from ---------------------------------------- */

/* How a tensor's values came to be, so that any rank's shard can be
 * produced on its own: the initialiser (a function of the global index),
 * then value changes applied to every element alike, in order. Built by
 * lt_sample_src_init for a distribute; every sampled redistribute appends
 * its plan's changes. A plain value: copy it. */
#define LT_SAMPLE_MAX_OPS 64

typedef struct lt_sample_op {
    int kind;                      /* 1: reduce over the mesh dim's group of m equal
                                    * contributions (the engine's reduction);
                                    * 2: partition (R -> P(op): sum divides by m) */
    int mesh_dim;
    lt_redop op;
} lt_sample_op;

typedef struct lt_sample_src {
    lt_init init;
    int nops;
    lt_sample_op ops[LT_SAMPLE_MAX_OPS];
} lt_sample_src;

/* The source of lt_dtensor_new_spec(spec, init): init, then the
 * partition of every Partial mesh dim of spec, first to last (as distribute
 * does). LT_OK, or LT_UNSUPPORTED beyond LT_SAMPLE_MAX_OPS. */
LT_API lt_status lt_sample_src_init(lt_sample_src *g, const lt_init *init, const lt_spec *spec);

/* A DTensor of checked spec `spec` (borrowed) whose values come from g,
 * holding only ranks[0..n) (ascending, in range; n may be 0); the others
 * are absent. With g from lt_sample_src_init it equals lt_dtensor_new_spec
 * on those ranks, bit for bit. Memory is checked for those shards only.
 * Errors: the Partial kinds distribute cannot produce (as
 * lt_dtensor_new_spec); LT_INVALID for a rank out of range or order;
 * LT_NOMEM. */
LT_API lt_status lt_dtensor_sample(const lt_spec *spec, const lt_sample_src *g, const int *ranks,
                                   int n, lt_dtensor **out);
/* lt_dtensor_sample of lt_sample_src_init(init, spec). */
LT_API lt_status lt_dtensor_new_ranks(const lt_spec *spec, const lt_init *init, const int *ranks,
                                       int n, lt_dtensor **out);

/* The redistribute of a tensor of checked spec `src` whose values come from
 * g (borrowed), to placements dst[np], computing only ranks[0..n)'s
 * destination shards (see above; n may be 0: no values). *out holds those
 * shards, the others absent; *plan (may be NULL) the plan, which is
 * lt_redistribute's (same planner options, same cache); *gout (may be
 * NULL) the destination's source: g plus this plan's value changes. opts:
 * planner, no_cache, name and verify are read; comm is ignored (nothing
 * runs on it: lt_plan_trace gives its events); with verify, each computed
 * shard is compared with the semantic definition (docs/SEMANTICS.md §7: the
 * initialiser's values, Partial dims kept or partitioned as the direct
 * reshard does) within the dtype's tolerance, and opts->report is filled as
 * lt_redistribute fills it (step: the last step).
 * Errors: planning errors as lt_redistribute; memory (LT_NOMEM before
 * allocating); LT_UNSUPPORTED when the history would exceed
 * LT_SAMPLE_MAX_OPS; LT_MISMATCH when verification fails (*out NULL, *plan
 * set). */
LT_API lt_status lt_redistribute_sampled(const lt_spec *src, const lt_sample_src *g,
                                         const lt_placement *dst, int np, const int *ranks, int n,
                                         const lt_redistribute_opts *opts, lt_dtensor **out,
                                         lt_plan **plan, lt_sample_src *gout);
/* The verification of one destination shard, as lt_redistribute_sampled
 * does it, for a shard computed some other way (the plan run on an engine
 * spread over processes): rank r's shard `got` (borrowed) of the
 * destination of plan p, a redistribute of a tensor whose values come from
 * g, against its semantic definition (docs/SEMANTICS.md §7) within the
 * dtype's tolerance. LT_OK; LT_MISMATCH naming the rank and the index, with
 * rep (may be NULL) filled as lt_redistribute fills it (step: the last);
 * LT_SHAPE when got's shape is not the rank's; LT_NOMEM. */
LT_API lt_status lt_verify_sampled_shard(const lt_plan *p, const lt_sample_src *g, int r,
                                         const lt_tensor *got, lt_verify_report *rep);
/* lt_redistribute_sampled from lt_sample_src_init(init, src), after
 * checking the Partial kinds of src as lt_dtensor_new_spec does. */
LT_API lt_status lt_redistribute_ranks(const lt_spec *src, const lt_init *init,
                                       const lt_placement *dst, int np, const int *ranks, int n,
                                       const lt_redistribute_opts *opts, lt_dtensor **out,
                                       lt_plan **plan);

/* Appends to `trace` (a world of plan p's mesh) the events a full-mode run
 * of plan p records on its communicator, one per collective step, from
 * layout math alone: no shard is built, no data moves, and every rank's
 * bytes sent and received equal the collectives' (localtensor/plan/plan_trace.c).
 * LT_NOMEM; LT_INVALID when the trace's world is not the mesh's. */
LT_API lt_status lt_plan_trace(const lt_plan *p, lt_trace *trace);
/* The same for one collective called directly on the shards of a tensor of
 * checked spec `spec` (borrowed): the event lt_<coll> along mesh_dim would
 * record with these arguments (op, root, dim, concat_dim as the trace keeps
 * them, -1 where they do not apply; rule NULL: chunk; perm for permute). The
 * arguments are assumed valid (the caller ran the collective on a group).
 * LT_NOMEM; LT_INVALID for a mesh dim out of range. */
LT_API lt_status lt_coll_trace_paper(lt_trace *trace, const lt_spec *spec, lt_coll coll,
                                     int mesh_dim, int op, int root, int dim, int concat_dim,
                                     const lt_split_rule *rule, const int *perm);

#endif
