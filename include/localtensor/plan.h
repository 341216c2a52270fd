/* localtensor/plan.h — the redistribute planner: plans, their steps and
 * bytes, the plan cache.
 *
 * A plan turns source placements into destination placements as a list of
 * steps; each step issues at most one collective, along one mesh dim (or,
 * under --moves all, over a flattened group of several), plus local work.
 * Every state between steps is a valid placement list (a DTensor that
 * distribute could produce). Two planners: `greedy` (PyTorch's
 * order, over the rule table below) and `min-cost` (the default: the fewest
 * bytes received, summed over all ranks and steps, then the fewest steps,
 * over the complete move set below). Plans are cached. The executor that
 * runs a plan is localtensor/redistribute.h.
 *
 * ---- The rule table (greedy; mesh dim i of size > 1) ----------------------
 * The single steps PyTorch takes. "later(d)" means some mesh dim j > i of size > 1 shards tensor
 * dim d (S or SS) in the current state. distribute applies mesh dims left to right to the
 * already-split piece, so a step on dim i is local to the groups of dim i only when no later mesh
 * dim splits the dims it touches:
 *
 *   from -> to           needs                 does
 *   S(d)  -> R           !later(d)             all_gather along d
 *   SS(d) -> R           !later(d)             all_gather + local index_select
 *   S(d)  -> S(e), d!=e  !later(d), !later(e)  all_to_all (split e by the
 *                                              destination rule, concat d)
 *   P(op) -> R                                 all_reduce(op)
 *   P(op) -> S(d)        !later(d)             reduce_scatter(op, d, rule)
 *   R     -> S(d)        !later(d)             local slice (no communication)
 *   R     -> SS(d,k)     !later(d)             local strided pick
 *   R     -> P(op)       op != product         local partition (sum: / m_i)
 *   S(d)  -> P(sum)      !later(d)             local zero fill (plan_zero_fill.c;
 *                                              never a search move: placed
 *                                              only where the pair asks for it)
 * Everything else (S(d,r1)->S(d,r2), S<->SS, SS->SS', P->SS) is routed
 * through several steps. Mesh dims of size 1 never get a step: their
 * placement changes for free, even where the change would be rejected on a
 * larger mesh dim (docs/SEMANTICS.md §7, test_one_chunk_mesh).
 *
 * ---- Rejections (docs/SEMANTICS.md §7) ------------------------------------
 * On a mesh dim of size > 1: S -> P(op != sum), SS -> P, P(a) -> P(b) with a != b, R ->
 * P(product), and R -> P(sum) of an integer dtype (partitioning would
 * truncate). P(op) -> P(op) is kept as is (no step, per-rank values kept).
 *
 * ---- Byte model -----------------------------------------------------------
 * The bytes of a step are the bytes each rank RECEIVES from other ranks, by
 * the model of collectives_sim/trace.h (all_reduce counts its reduce_scatter
 * and all_gather halves), computed from the actual (uneven) shard sizes of
 * layout math. A step's bytes_total is that summed over all ranks (the comm
 * trace's total_bytes_recv for its collective); its bytes_per_rank is the
 * most any one rank receives. A plan's total_bytes sums bytes_total over
 * its steps. Local steps move 0 bytes.
 *
 * ---- min-cost -------------------------------------------------------------
 * Minimises total_bytes (bytes received, summed over all ranks and steps),
 * then the number of steps; bytes_per_rank is reported, not minimised.
 * lt_plan_redistribute_cost chooses another objective (the busiest rank's
 * bytes per step, summed; or the estimated time on a topology) and may
 * leave out the collectives DTensor never issues (the objectives below).
 *
 * States are layouts: what every rank holds (the global indices along
 * every dim; an empty shard: its shape) and which mesh dims are Partial.
 * Lists that give every rank the same indices and the same Partial dims
 * are one state, however they are spelled: switching between them is free.
 * A state is spelled by a valid placement list (Partial ops mixed as {sum,
 * avg}, layout computable; mesh dims of size 1 count as R) whose mesh dim
 * i takes one of: the source's placement of i; unless i is frozen (source
 * and destination are the same Partial: kept as is), the destination's,
 * R, and for every tensor dim d: S(d) by the chunk, balanced and last
 * rules and by every explicit size list of a Shard in the source or
 * destination of i; SS(d, k) for k = shape[d] (every index a piece of its
 * own: member 0 of each group keeps its whole block, what a gather to root
 * 0 leaves) and for k = f * p < shape[d], p the product of the sizes of any
 * set of mesh dims (what gathering or picking along them interleaves) and
 * f = 1 or the factor of an SS(d, f) of the source or destination. A
 * candidate that at every length d can have there cuts like an earlier one
 * (or is rejected) is dropped: it spells nothing new (localtensor/
 * plan_space.c).
 *
 * Moves, each one step, judged on the indices every rank holds: along one
 * mesh dim i of size > 1, not frozen, ONE collective of collectives_sim,
 * with every argument:
 *   all_gather, gather(root)        concatenating any tensor dim
 *   all_to_all                      splitting any dim, concatenating any dim
 *   scatter(root), reduce_scatter   splitting any dim
 *   permute                         any permutation of the group
 *   all_reduce, reduce(root)        (reductions need i Partial, end it; the
 *                                   others need i not Partial)
 * splits by chunk, balanced, last or any explicit size list of a Shard of
 * the source or destination (of the group's size); the move reaches state B
 * when, with the shapes collectives_sim produces, every rank then holds
 * exactly B's indices, in any local order (an index_select restores it; a
 * rooted collective's other ranks hold nothing). One step may so change the
 * placements of several mesh dims: one all_gather along dp turns [SS(0,2),
 * S(0)] into [R, S(0)] on a 2x2 mesh. Local moves (0 bytes): to any state
 * with the same Partial dims whose every rank's shard is part of (or empty,
 * or equal to) what it holds (slice, strided pick, several mesh dims at
 * once); and R -> P(op) on i, only towards a destination Partial on a dim
 * the source has not Partial (partition).
 * Broadcast is left out: it either changes nothing or reaches what an
 * all_gather reaches at the same cost. Gather and reduce are tried only
 * towards roots that a candidate split can give a whole block to (position
 * 0, or the one non-zero size of an explicit rule).
 *
 * The search is A*, exact over those states: its lower bound is the bytes
 * each rank still lacks of its destination shard, which no move beats (for
 * max-rank-bytes the most one rank lacks; for time, the rounds of the
 * cheapest set of mesh dims a rank's lacking elements must cross, with a
 * reduction along every Partial dim the destination does not keep, plus the
 * most one rank lacks over the widest link; docs/SEMANTICS.md §7).
 * test/test_planner.c checks that nothing is missed: on every pair of the
 * 2x2 and 2x2x2 sweeps (S with every rule, SS, explicit sizes, Partial;
 * shapes that divide and that do not) the plan's (bytes, steps) equal
 * those of an independent brute force whose states are the layouts of
 * EVERY placement list (every split factor, every rule in play) and whose
 * moves are every collective with every argument, broadcast and every root
 * included. It has a work budget (about 50 ms; 3-D meshes of 8 ranks use
 * a few percent of it); past it, or when one state has too many moves for
 * it, min-cost plans over the rule table's steps instead (then greedy),
 * and says so (lt_plan.search_truncated).
 *
 * ---- greedy ---------------------------------------------------------------
 * PyTorch's generate_greedy_transform_infos order: when the source shards
 * anything, walk the mesh dims last to first, turning a Shard target into R
 * when its tensor dim is sharded differently on earlier mesh dims (compared
 * as lists of (mesh dim, placement), so uneven rules count), then walk first
 * to last. A transition that is not one legal step goes X -> R -> Y when
 * both halves are legal, else takes the cheapest route (to the destination
 * itself when the transition's target is not a valid state). Greedy issues
 * PyTorch's collective counts on the docs/SEMANTICS.md §7 pairs; min-cost may issue
 * more collectives to move fewer bytes (e.g. by parking a shard on a third
 * tensor dim), and never moves more bytes than greedy (its moves include
 * every step of the rule table).
 */
#ifndef LT_PLAN_H
#define LT_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "localtensor/collectives_sim/collectives.h"
#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"
#include "localtensor/placement.h"
#include "localtensor/spec.h"

/* The options of a redistribute (localtensor/redistribute.h); the planner
 * reads planner, name and no_cache. */
typedef struct lt_redistribute_opts lt_redistribute_opts;

/* XX(enum suffix, name users type) */
#define LT_PLANNER_MAP(XX)       \
    XX(MIN_COST, "min-cost")     \
    XX(GREEDY,   "greedy")

typedef enum {
#define LT__XX(e, s) LT_PLANNER_##e,
    LT_PLANNER_MAP(LT__XX)
#undef LT__XX
    LT_PLANNER_COUNT
} lt_planner;

/* "min-cost", "greedy"; "?" when out of range. */
LT_API const char *lt_planner_name(lt_planner p);
/* Parses "min-cost" (also "min_cost", "mincost") or "greedy". LT_INVALID
 * naming the text otherwise. */
LT_API lt_status lt_planner_parse(const char *s, lt_planner *out);

/* ---- objectives, move sets, topologies (localtensor/plan/plan_cost.c) ------
 * What min-cost minimises (docs/SEMANTICS.md §7, "Costs of a plan", has the formulas):
 *   bytes           bytes received, summed over all ranks and steps (then
 *                   the fewest steps): the planner's default;
 *   max-rank-bytes  the sum over steps of the busiest rank's bytes received
 *                   (then the fewest total bytes, then the fewest steps);
 *   time            the sum over steps of the step's estimated time on a
 *                   topology (then the fewest total bytes, then steps).
 * A step's time: rounds(coll, n) * alpha[i] + ceil(busiest rank's bytes /
 * beta[i]), in picoseconds, i the step's mesh dim and n its size (a
 * flattened group of --moves all: n its members, alpha the largest and
 * beta the smallest of its mesh dims', the algorithm they all name); by
 * default rounds is n - 1 for all_gather, reduce_scatter, all_to_all,
 * gather, scatter, reduce (ring / direct), 2 (n - 1) for all_reduce
 * (ring), 1 for permute (lt_algo below has the others); local steps cost 0.
 * XX(enum suffix, name users type) */
#define LT_OBJECTIVE_MAP(XX)                 \
    XX(BYTES,          "bytes")              \
    XX(MAX_RANK_BYTES, "max-rank-bytes")     \
    XX(TIME,           "time")

typedef enum {
#define LT__XX(e, s) LT_OBJECTIVE_##e,
    LT_OBJECTIVE_MAP(LT__XX)
#undef LT__XX
    LT_OBJECTIVE_COUNT
} lt_objective;

/* The moves min-cost may use: collectives (every collective of plan.h's move
 * set: the default); dtensor (what PyTorch DTensor issues: all_gather,
 * reduce_scatter, all_reduce, all_to_all and local work; no gather,
 * scatter, reduce or permute); all (adds all_gather, all_to_all,
 * reduce_scatter and all_reduce over the product group of every run of two
 * or more adjacent mesh dims of size > 1, ranked as lt_mesh_flatten ranks
 * them, a reduction ending the Partial of every dim of the run, and, from a
 * state without Partial dims on a mesh of two or more dims of size > 1, a
 * permute over all ranks, in which only the ranks whose block changes
 * receive: lt_plan_step.mesh_span > 1 marks such steps;
 * docs/SEMANTICS.md §7). */
#define LT_MOVESET_MAP(XX)              \
    XX(COLLECTIVES, "collectives")      \
    XX(DTENSOR,     "dtensor")          \
    XX(ALL,         "all")

typedef enum {
#define LT__XX(e, s) LT_MOVES_##e,
    LT_MOVESET_MAP(LT__XX)
#undef LT__XX
    LT_MOVES_COUNT
} lt_moveset;

/* How a collective's messages go, for its latency rounds in a group of n
 * (docs/SEMANTICS.md §7): default (ring for all_gather, reduce_scatter and
 * all_reduce, pairwise all_to_all, direct to or from a root), ring (n - 1),
 * tree (ceil(log2 n)) or direct (1); all_reduce takes twice the rounds of
 * its algorithm, a permute always 1. Bytes do not depend on it.
 * XX(enum suffix, name users type) */
#define LT_ALGO_MAP(XX)        \
    XX(DEFAULT, "default")     \
    XX(RING,    "ring")        \
    XX(TREE,    "tree")        \
    XX(DIRECT,  "direct")

typedef enum {
#define LT__XX(e, s) LT_ALGO_##e,
    LT_ALGO_MAP(LT__XX)
#undef LT__XX
    LT_ALGO_COUNT
} lt_algo;

/* Per mesh dim: latency alpha (picoseconds), bandwidth beta (bytes per
 * microsecond, i.e. MB/s; at least 1) and each collective's algorithm
 * (algo[i][coll], an lt_algo; 0 is the default). Entries past the mesh's
 * ndim are ignored. */
typedef struct lt_topology {
    uint64_t alpha_ps[LT_MESH_MAX_DIMS];
    uint64_t beta_bpus[LT_MESH_MAX_DIMS];
    unsigned char algo[LT_MESH_MAX_DIMS][LT_COLL_COUNT];
} lt_topology;

typedef struct lt_plan_cost {
    lt_objective objective;
    lt_moveset moves;
    lt_topology topo;      /* read for the time objective */
} lt_plan_cost;

/* Names: "bytes", ...; "?" when out of range. Parsers: LT_INVALID naming
 * the text and the choices otherwise. */
LT_API const char *lt_objective_name(lt_objective o);
LT_API lt_status lt_objective_parse(const char *s, lt_objective *out);
LT_API const char *lt_moveset_name(lt_moveset m);
LT_API lt_status lt_moveset_parse(const char *s, lt_moveset *out);
LT_API const char *lt_algo_name(lt_algo a);
LT_API lt_status lt_algo_parse(const char *s, lt_algo *out);
/* Presets, for a mesh of mesh_ndim dims: "uniform" (every dim alpha 5 us,
 * beta 25 GB/s: InfiniBand-class) and "nvlink-ib" (the last mesh dim alpha
 * 2 us, beta 300 GB/s: NVLink-class; the others as uniform). LT_INVALID
 * for another name. */
LT_API lt_status lt_topology_preset(const char *name, int mesh_ndim, lt_topology *out);
struct lt_plan;
/* Estimated time of step s of p (picoseconds; 0 for local steps), and the
 * plan's (the sum). */
LT_API uint64_t lt_plan_step_time_ps(const struct lt_plan *p, int s, const lt_topology *t);
LT_API uint64_t lt_plan_time_ps(const struct lt_plan *p, const lt_topology *t);
/* Sum over the steps of the busiest rank's bytes (bytes_per_rank). */
LT_API size_t lt_plan_max_rank_bytes(const struct lt_plan *p);

typedef struct lt_plan_step {
    int mesh_dim;
    lt_placement from, to;        /* placement of mesh_dim before and after */
    int comm;                     /* 1 when the step issues a collective */
    lt_coll coll;                 /* the collective (valid when comm) */
    const char *collective;       /* lt_coll_name(coll), or "none" (static string) */
    const char *local_op;         /* local work: "slice", "strided_slice", "partition",
                                   * "index_select" (after a strided gather) or "" */
    size_t bytes_per_rank;        /* max over ranks of bytes received from others */
    size_t bytes_total;           /* summed over ranks (= trace total_bytes_recv) */
    const lt_placement *after;    /* (mesh ndim) the full placement list after the step;
                                   * points into the plan */
    const struct lt__move *move_; /* opaque, the library's: how a min-cost step runs
                                   * (points into the plan); NULL for a rule-table step */
    int mesh_span;                /* mesh dims of the step's group: 0 or 1 mesh_dim alone;
                                   * k >= 2 the product group of mesh dims mesh_dim ..
                                   * mesh_dim + k - 1 (--moves all; from and to are then
                                   * mesh_dim's placements) */
} lt_plan_step;

/* An immutable, reference-counted plan. Plans may come from the cache and be
 * shared: never modify one. Release with lt_plan_free. Only the library makes
 * plans (what it keeps besides, such as the reference count, is not part of
 * this struct): never allocate or copy one. */
typedef struct lt_plan {
    lt_mesh mesh;
    lt_dtype dtype;
    int ndim;
    int64_t shape[LT_MAX_DIMS];                  /* global */
    lt_placement src[LT_MESH_MAX_DIMS];          /* normalized source */
    lt_placement dst[LT_MESH_MAX_DIMS];          /* normalized destination */
    lt_planner planner;
    int nsteps;
    lt_plan_step *steps;                         /* (nsteps) */
    int ncomm;                                   /* steps that issue a collective */
    size_t total_bytes;                          /* sum of bytes_total */
    int states_explored;                         /* search nodes expanded (diagnostics) */
    int search_truncated;                        /* 1: min-cost ran out of its search budget
                                                  * (about 50 ms): this plan is the rule-table
                                                  * search's (or greedy's), maybe not minimal */
} lt_plan;

/* Plans the redistribute of a tensor of global shape `shape` (ndim dims,
 * dtype) on `mesh` from placements src[np] to dst[np] (np = mesh->ndim; any
 * spelling, negative dims allowed). opts may be NULL (defaults above); only
 * planner, name and no_cache are read.
 *
 * *out receives a NEW reference (release with lt_plan_free); on error *out is
 * NULL. Errors: LT_INVALID for bad placement lists or layouts (the message
 * names the mesh dim), LT_UNSUPPORTED for rejected transitions; the message
 * reads "while planning redistribute of 'NAME' [SRC] -> [DST]: mesh dim I:
 * FROM -> TO is not supported ...". Cost: a warm cache hit is a hash lookup
 * (well under 1 us); a cold min-cost plan of a 2x2x2 mesh pair about 0.6 ms
 * (4x4x4, or large uneven dims: a few ms; 8x8x8: 20 to 50 ms); greedy some
 * microseconds. */
LT_API lt_status lt_plan_redistribute(const lt_mesh *mesh, lt_dtype dtype, int ndim,
                                      const int64_t *shape, const lt_placement *src,
                                      const lt_placement *dst, int np,
                                      const lt_redistribute_opts *opts, lt_plan **out);

/* lt_plan_redistribute of checked specs (localtensor/spec.h; borrowed):
 * nothing is re-validated. src and dst must describe the same tensor (mesh,
 * dtype, global shape; LT_INVALID otherwise). Rejections, errors, caching
 * and *out as above; messages show the specs' normalized placements. */
LT_API lt_status lt_plan_redistribute_spec(const lt_spec *src, const lt_spec *dst,
                                           const lt_redistribute_opts *opts, lt_plan **out);

/* lt_plan_redistribute_spec (checks, rejections, messages as there) under
 * cost options `cost` (NULL: bytes over the collectives, cached as
 * lt_plan_redistribute_spec). With other options the plan is made anew
 * (not cached) by min-cost. *out: a new reference, NULL on error. */
LT_API lt_status lt_plan_redistribute_cost(const lt_spec *src, const lt_spec *dst,
                                           const lt_plan_cost *cost, lt_plan **out);

/* Releases a reference. NULL is a no-op. */
LT_API void lt_plan_free(lt_plan *p);
/* A new reference to p. */
LT_API lt_plan *lt_plan_ref(lt_plan *p);

/* What step s does, as every table and message names it (into buf, always
 * NUL-terminated; returns buf): its collective, plus the local work after it
 * ("all_gather", "all_gather + index_select"); a step without communication
 * is "local " and its work ("local slice", "local strided_slice", "local
 * partition"). */
LT_API const char *lt_plan_step_action(const lt_plan_step *s, char *buf, size_t n);
/* "step 2 of 3 (mesh dim 0: S(0) -> R, all_gather)": step i of p (0-based
 * index, numbered from 1 as in the table); an index outside the plan (the
 * verifier's -1) reads "the source (before step 1)". Returns buf. */
LT_API char *lt_plan_step_format(const lt_plan *p, int i, char *buf, size_t n);

/* Writes the plan as an aligned text table into buf (always NUL-terminated
 * when n > 0): one row per step (numbered from 1) with mesh dim, from -> to,
 * collective (lt_plan_step_action), bytes/rank (the most bytes any one rank
 * receives from other ranks in that step), bytes total (summed over all
 * ranks) and the placements after the step, then totals. Returns the length
 * it wanted (snprintf style). */
LT_API int lt_plan_format(const lt_plan *p, char *buf, size_t n);
/* The same table to f. LT_NOMEM (nothing printed) when the table's buffer
 * cannot be allocated. */
LT_API lt_status lt_plan_print(const lt_plan *p, FILE *f);

/* Drops every cached plan (plans still referenced elsewhere stay valid) and
 * the search spaces min-cost searches share (localtensor/plan/plan_memo.c). */
LT_API void lt_plan_cache_clear(void);
/* Cache counters since the start (or the last clear); any pointer may be NULL. */
LT_API void lt_plan_cache_stats(size_t *hits, size_t *misses, size_t *entries);

#endif
