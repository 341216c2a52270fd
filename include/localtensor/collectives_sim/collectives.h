/* collectives_sim/collectives.h — every collective, computed on shards.
 *
 * A communicator (lt_comm) binds a mesh, an engine (the in-process one now; an
 * MPI engine later, where each process holds only its own rank) and a comm
 * trace. Every collective acts along ONE mesh dim, on every group (fiber) of
 * that dim at once; a group lists its ranks in mesh-coordinate order
 * (collectives_sim/mesh.h). Semantics: docs/SEMANTICS.md §11.3.
 *
 * Arrays: `in` and `out` hold one entry per rank of the whole world, indexed
 * by global rank. `in` tensors are borrowed. For `out`, each entry is either
 * NULL, and receives a NEW tensor the caller frees, or a preallocated
 * contiguous tensor of exactly the result's dtype and shape, which is
 * overwritten (so repeated calls reuse buffers). On error every entry that
 * was NULL on entry is NULL again and nothing leaks; argument errors are
 * found before any data moves, so preallocated outputs are then untouched
 * (only an engine failure, e.g. out of memory, can leave them part-written).
 *
 * Uneven and zero-size shards are the general case on every rank. Reductions
 * run in group order (member 0 first); bf16/f16 reduce in f32 and round once;
 * avg = sum / group size. Rooted collectives take `root` as a position in
 * the group (0..group size-1); ranks that receive nothing get a placeholder
 * (kernels/tensor.h) carrying the logical shape it stands for.
 *
 * Mismatches that a real run would show only as a hang or garbage are
 * errors (LT_SHAPE / LT_DTYPE / LT_INVALID) naming the mesh dim, the group
 * (its ranks), the ranks involved and their shapes, e.g.
 *   all_reduce on mesh dim 1, group [1,3]: rank 3 has shape (2, 4) but
 *   rank 1 has shape (2, 3)
 * Also errors: mesh_dim out of range; a tensor dim out of range (dims are
 * NOT normalized: pass 0 <= dim < ndim, as in kernels/tensor.h); root out of
 * range; perm not a permutation; split sizes that do not fit (lt_split_sizes'
 * message, prefixed); a preallocated output of the wrong dtype or shape, not
 * contiguous, or overlapping another output; a result size that overflows
 * (LT_OVERFLOW); results that together cannot fit in this machine's memory
 * (LT_NOMEM, "... needs X GiB ..., more than this machine's Y GiB", checked
 * before any is allocated).
 *
 * Details:
 * - Reductions: ops sum, avg, max, min, product on every dtype. f32/f64
 *   accumulate in their own type; bf16/f16 in f32, rounded once. Integer sum
 *   and product wrap (two's complement, as torch); integer avg is the exact
 *   sum divided by the group size, truncated toward zero. max/min propagate
 *   NaN. bool: sum and max are logical or (sum saturates at 1), product and
 *   min logical and; avg on bool is LT_UNSUPPORTED.
 * - In place: an output may be exactly its own rank's input (same data,
 *   contiguous) for all_reduce, reduce and broadcast. Any other overlap
 *   between a preallocated output and an input is still computed correctly
 *   (through a temporary, which costs an allocation and a copy).
 * - Placeholder outputs may be preallocated too: pass a tensor of the
 *   placeholder's real shape and dtype; its placeholder fields are set.
 * - Trace: every successful call appends one event (trace.h has the bytes
 *   model); failed calls record nothing.
 * - A communicator is not thread-safe: one thread drives it at a time.
 */
#ifndef LT_COLLECTIVES_H
#define LT_COLLECTIVES_H

#include <stdint.h>
#include <stdio.h>

#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"

/* The collectives. XX(enum suffix, name, a, b, c, d): the nccl-tests
 * bus-bandwidth factor of a group of n is (a*n + b) / (c*n + d)
 * (lt_coll_busbw_factor, collectives_sim/trace.h). */
#define LT_COLL_MAP(XX)                               \
    XX(ALL_GATHER,     "all_gather",     1, -1, 1, 0) \
    XX(ALL_REDUCE,     "all_reduce",     2, -2, 1, 0) \
    XX(REDUCE_SCATTER, "reduce_scatter", 1, -1, 1, 0) \
    XX(ALL_TO_ALL,     "all_to_all",     1, -1, 1, 0) \
    XX(BROADCAST,      "broadcast",      0,  1, 0, 1) \
    XX(SCATTER,        "scatter",        1, -1, 1, 0) \
    XX(GATHER,         "gather",         1, -1, 1, 0) \
    XX(REDUCE,         "reduce",         0,  1, 0, 1) \
    XX(PERMUTE,        "permute",        0,  1, 0, 1) \
    XX(BARRIER,        "barrier",        0,  0, 0, 1)

typedef enum {
#define LT__XX(e, s, a, b, c, d) LT_COLL_##e,
    LT_COLL_MAP(LT__XX)
#undef LT__XX
    LT_COLL_COUNT
} lt_coll;

/* "all_gather", ...; "?" when out of range. */
LT_API const char *lt_coll_name(lt_coll c);
/* Parses a collective name; LT_INVALID naming the text otherwise. */
LT_API lt_status lt_coll_parse(const char *s, lt_coll *out);

typedef struct lt_comm lt_comm;
typedef struct lt_trace lt_trace;   /* collectives_sim/trace.h */

/* A communicator over mesh on the in-process engine, with tracing on.
 * Free with lt_comm_free. */
LT_API lt_status lt_comm_new(const lt_mesh *mesh, lt_comm **out);
LT_API void lt_comm_free(lt_comm *c);
LT_API const lt_mesh *lt_comm_mesh(const lt_comm *c);
/* The comm trace (borrowed; lives as long as the communicator). */
LT_API lt_trace *lt_comm_trace(lt_comm *c);

/* every member gets the concatenation of the group's shards along `dim`
 * (all other dims must agree across the group) */
LT_API lt_status lt_all_gather(lt_comm *c, int mesh_dim, lt_tensor *const *in, int dim,
                               lt_tensor **out);
/* every member gets op over the group (shapes must agree) */
LT_API lt_status lt_all_reduce(lt_comm *c, int mesh_dim, lt_tensor *const *in, lt_redop op,
                               lt_tensor **out);
/* reduce over the group, then member j keeps piece j of `dim` split by rule
 * (rule NULL = chunk) */
LT_API lt_status lt_reduce_scatter(lt_comm *c, int mesh_dim, lt_tensor *const *in, lt_redop op,
                                   int dim, const lt_split_rule *rule, lt_tensor **out);
/* member i splits its shard along split_dim by rule into group-size pieces;
 * member j receives piece j of every member, concatenated along concat_dim
 * in group order (rule NULL = chunk) */
LT_API lt_status lt_all_to_all(lt_comm *c, int mesh_dim, lt_tensor *const *in, int split_dim,
                               int concat_dim, const lt_split_rule *rule, lt_tensor **out);
/* every member gets a copy of the root member's shard (non-root inputs are
 * ignored and may be NULL) */
LT_API lt_status lt_broadcast(lt_comm *c, int mesh_dim, lt_tensor *const *in, int root,
                              lt_tensor **out);
/* the root's shard split along dim by rule; member j gets piece j (non-root
 * inputs ignored, may be NULL) */
LT_API lt_status lt_scatter(lt_comm *c, int mesh_dim, lt_tensor *const *in, int root, int dim,
                            const lt_split_rule *rule, lt_tensor **out);
/* the root gets the concatenation along dim; others get placeholders of
 * that concatenated shape */
LT_API lt_status lt_gather(lt_comm *c, int mesh_dim, lt_tensor *const *in, int root, int dim,
                           lt_tensor **out);
/* (named lt_reduce_ranks: lt_reduce is the kernels reduction over dims,
 * kernels/math.h)
 * the root gets op over the group; others get placeholders of that shape */
LT_API lt_status lt_reduce_ranks(lt_comm *c, int mesh_dim, lt_tensor *const *in, int root,
                                 lt_redop op, lt_tensor **out);
/* (named lt_permute_ranks: lt_permute is the kernels view)
 * member i sends its shard to member perm[i]; perm is a permutation of
 * 0..group size-1 (the same for every group). A member that receives from
 * member i gets i's shard. */
LT_API lt_status lt_permute_ranks(lt_comm *c, int mesh_dim, lt_tensor *const *in, const int *perm,
                            lt_tensor **out);
/* point to point (docs/SEMANTICS.md §12): rank src's tensor `in` (borrowed)
 * goes to rank dst (positions, src != dst). *out NULL on entry receives a
 * NEW tensor (the caller frees it); a non-NULL *out is a preallocated
 * contiguous tensor of in's dtype and shape, overwritten. On an engine
 * spread over processes every process calls it with the same ranks: `in`
 * is read only where src is held (elsewhere it may be an absent stand-in,
 * lt_tensor_absent), and where dst is not held *out gets an absent
 * stand-in. Not recorded in the comm trace. LT_INVALID for bad ranks, a
 * NULL input or an output that does not fit; the engine's errors. */
LT_API lt_status lt_send_recv(lt_comm *c, int src, int dst, const lt_tensor *in,
                              lt_tensor **out);
/* synchronises a group; in the simulator it only records a trace event */
LT_API lt_status lt_barrier(lt_comm *c, int mesh_dim);

#endif
