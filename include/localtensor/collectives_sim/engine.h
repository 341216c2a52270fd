/* collectives_sim/engine.h — the engine table: how a collective moves data.
 *
 * The public wrappers (collectives.c) validate every argument, compute every
 * member's result shape, create or check the outputs, and only then call the
 * engine once per group. An engine therefore never sees bad input: it copies
 * or reduces into outputs that already have the result's dtype and shape,
 * are contiguous, and overlap no input they must not (the wrapper swaps in
 * temporaries otherwise). Placeholder outputs (non-roots of gather and
 * reduce) are created by the wrapper and never touched by the engine.
 *
 * The in-process engine computes directly on the shards of all ranks. An MPI
 * engine (later) fills the same table; there each process holds only its own
 * rank's `in`/`out` entries (the others are NULL). Entries marked optional
 * may be NULL: the wrapper then reports LT_UNSUPPORTED naming the engine.
 * Model: kernels/backend.h (ggml-backend).
 */
#ifndef LT_ENGINE_H
#define LT_ENGINE_H

#include <stdint.h>

#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"

#define LT_ENGINE_API_VERSION 3

/* One group of one call. Arrays `in` and `out` of the entries below are
 * indexed by GLOBAL rank (world length); the engine touches only the entries
 * of ranks[0..size). */
typedef struct lt_coll_group {
    const lt_mesh *mesh;
    int mesh_dim;
    int index;                 /* which group of the mesh dim (0..ngroups-1) */
    int size;                  /* n: members in the group */
    const int *ranks;          /* (n) global ranks in group order */
    int dim;                   /* tensor dim: gather/scatter/reduce_scatter; all_to_all split dim */
    int concat_dim;            /* all_to_all */
    int root;                  /* rooted collectives: position in the group */
    lt_redop op;               /* reductions */
    const int *perm;           /* permute: (n) member i sends to perm[i] */
    /* Split sizes along `dim` (elements of that dim, never bytes):
     * reduce_scatter and scatter: (n), piece j goes to member j;
     * all_to_all: (n, n) row-major, sizes[i*n + j] = member i's piece for j. */
    const int64_t *sizes;
} lt_coll_group;

typedef lt_status (*lt_coll_fn)(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                lt_tensor *const *out);

typedef struct lt_engine_i {
    int version;                                           /* LT_ENGINE_API_VERSION */
    const char *name;
    /* required: per-communicator state for mesh m into *ctx (may stay NULL) */
    lt_status (*init)(const lt_mesh *m, void **ctx);
    /* required: releases what init made (ctx may be NULL) */
    void (*free)(void *ctx);
    /* required */
    lt_coll_fn all_gather;
    lt_coll_fn all_reduce;
    lt_coll_fn reduce_scatter;
    lt_coll_fn all_to_all;
    lt_coll_fn broadcast;
    /* optional */
    lt_coll_fn scatter;
    lt_coll_fn gather;
    lt_coll_fn reduce;
    lt_coll_fn permute;
    /* optional: NULL means barrier is a no-op (the in-process engine) */
    lt_status (*barrier)(void *ctx, const lt_coll_group *g);
    /* optional (an engine spread over processes): the wrapper calls it on
     * every process with its own status, twice per collective call: just
     * before the engine would run (validation, outputs, temporaries: an
     * allocation may fail on one process only; a call failing earlier
     * calls it once, on its way out), and after calling the engine for
     * every group, even after a group failed (the first failure's status).
     * Returns LT_OK when every process had LT_OK; else this process's own
     * error, or (where this process succeeded) an error naming the process
     * that failed, so every process ends the call together and none waits
     * in a collective the others never reach. With it, an engine need not
     * agree over the world after each group (only within a group that
     * communicates). NULL: nothing to agree on (the in-process engine). */
    lt_status (*agree)(void *ctx, lt_status st);
    /* optional (an engine spread over processes): 1 when this process holds
     * rank r's shards, 0 when another process does. NULL: every rank is held
     * here. Asked once per rank when a communicator is made. For a rank not
     * held, the wrappers take an absent stand-in (lt_tensor_absent: its
     * shape, no values) as input, never create a buffer for its result (it
     * gets an absent stand-in of the result's shape) and never hand either
     * to a kernel; the engine must not touch those entries. A held rank's
     * input may not be absent. */
    int (*holds)(void *ctx, int rank);
    /* optional, with holds: the process (0, 1, ...) that holds rank r's
     * shards. NULL: process 0. */
    int (*owner)(void *ctx, int rank);
    /* optional (version 3): point to point (lt_send_recv, collectives.h):
     * rank src's tensor `in` into rank dst's `out`, a contiguous buffer of
     * in's dtype and shape made by the wrapper. Called on every process with
     * the same (src, dst) (positions); `in` is NULL where src's shards are
     * not held, `out` NULL where dst's are not. NULL: the wrapper copies in
     * this process (every rank is held here). */
    lt_status (*send_recv)(void *ctx, int src, int dst, const lt_tensor *in, lt_tensor *out);
} lt_engine_i;

/* The in-process engine (collectives_sim/engine_inproc.c). */
LT_API const lt_engine_i *lt_engine_inproc(void);

typedef struct lt_comm lt_comm;
/* A communicator over mesh m on engine `iface` (NULL: in-process), tracing
 * on. LT_INVALID when the engine's version differs or a required entry is
 * NULL. Free with lt_comm_free. */
LT_API lt_status lt_comm_new_engine(const lt_mesh *m, const lt_engine_i *iface, lt_comm **out);
/* 1 when this process holds rank r's shards on c (engine.h `holds`; the
 * in-process engine holds every rank). */
LT_API int lt_comm_holds(const lt_comm *c, int rank);
/* The process holding rank r's shards on c (engine.h `owner`; 0 in-process). */
LT_API int lt_comm_owner(const lt_comm *c, int rank);
/* How many ranks this process holds on c (the world, in-process). */
LT_API int lt_comm_nheld(const lt_comm *c);
/* The engine's name ("inproc"). */
LT_API const char *lt_comm_engine_name(const lt_comm *c);

#endif
