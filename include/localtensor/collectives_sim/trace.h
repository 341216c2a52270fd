/* collectives_sim/trace.h — the comm trace: one event per collective call.
 *
 * Every collective of a communicator appends an event: which collective,
 * along which mesh dim, how many groups of what size, the dtype, and the
 * bytes each rank sent to and received from OTHER ranks (arrays of world
 * length). Redistribute plans, scenario checks (expect_comm) and the CLI read
 * it back through the accessors, the totals, the text table or JSON.
 *
 * Bytes model (logical, per group, all in whole bytes; a rank's own data
 * never counts; for every event the sum of `sent` over ranks equals the sum
 * of `recv`; B_i is member i's shard bytes):
 *   all_gather       member j receives every other member's shard:
 *                    recv_j = sum_{i!=j} B_i, sent_i = (n-1) * B_i
 *   reduce_scatter   member j receives its piece p_j from every other member:
 *                    recv_j = (n-1) * p_j, sent_i = B - p_i (B = input bytes)
 *   all_reduce       reduce_scatter + all_gather over n pieces p_j of the
 *                    buffer (balanced split of its ELEMENTS, times the element
 *                    size): recv_j = sent_j = (n-1) * p_j + (B - p_j).
 *                    Summed over the group this is exactly 2(n-1) * B; for an
 *                    even split each rank moves exactly 2(n-1)/n * B, the
 *                    ring model of nccl-tests.
 *   all_to_all       member j receives piece j of every other member;
 *                    member i sends its pieces for the others
 *   broadcast        recv_j = B_root (j != root), sent_root = (n-1) * B_root
 *   scatter          recv_j = piece j (j != root), sent_root = the others' pieces
 *   gather           recv_root = sum of the others' shards, sent_i = B_i
 *   reduce           recv_root = (n-1) * B, sent_i = B (i != root)
 *   permute          member i sends B_i to perm[i] when perm[i] != i
 *   barrier          nothing
 *
 * Bus bandwidth: lt_coll_busbw_factor(c, n) is the nccl-tests factor that
 * turns "algorithm bandwidth" (buffer bytes / time) into bus bandwidth.
 *
 * Cost: recording is a few stores per rank into arrays that grow
 * geometrically; lt_trace_clear keeps the capacity. A trace is not
 * thread-safe (neither is the communicator that owns it).
 */
#ifndef LT_TRACE_H
#define LT_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "localtensor/collectives_sim/collectives.h"
#include "localtensor/kernels/dtype.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/status.h"
#include "localtensor/kernels/tensor.h"

/* nccl-tests bus-bandwidth factor for a group of n (n >= 1). */
LT_API double lt_coll_busbw_factor(lt_coll c, int n);

typedef struct lt_trace lt_trace;

/* One recorded call. The arrays and label are borrowed from the trace and
 * valid until the next record, clear or free. */
typedef struct lt_trace_event {
    lt_coll coll;
    int mesh_dim;
    int ngroups;
    int group_size;
    lt_dtype dtype;           /* of the data moved (LT_F32 for barrier) */
    int op;                   /* lt_redop, or -1 when not a reduction */
    int root;                 /* position in the group, or -1 */
    int dim;                  /* tensor dim (split dim for all_to_all), or -1 */
    int concat_dim;           /* all_to_all only, else -1 */
    int world;                /* length of the two arrays */
    const size_t *sent;       /* (world) bytes each rank sent to other ranks */
    const size_t *recv;       /* (world) bytes each rank received from others */
    size_t total_sent;        /* sum of sent */
    size_t total_recv;        /* sum of recv (== total_sent) */
    const char *label;        /* "" when none */
} lt_trace_event;

typedef struct lt_trace_totals {
    size_t events;
    size_t bytes_sent;                /* summed over ranks and events */
    size_t bytes_recv;
    size_t per_coll[LT_COLL_COUNT];   /* number of events of each collective */
} lt_trace_totals;

/* A new empty trace for a world of `world` ranks, enabled. Free with
 * lt_trace_free (a communicator's trace is freed with the communicator). */
LT_API lt_status lt_trace_new(int world, lt_trace **out);
LT_API void lt_trace_free(lt_trace *t);

/* Turns recording on (1) or off (0); returns the previous setting. While off,
 * collectives record nothing (and cost nothing for the trace). */
LT_API int lt_trace_enable(lt_trace *t, int on);
LT_API int lt_trace_enabled(const lt_trace *t);
/* Drops every event (keeps capacity and the current label). */
LT_API void lt_trace_clear(lt_trace *t);
LT_API size_t lt_trace_count(const lt_trace *t);
/* The current count: events recorded after this call have index >= marker. */
LT_API size_t lt_trace_marker(const lt_trace *t);
/* Event i (0 <= i < count) into *ev. LT_INVALID when i is out of range. */
LT_API lt_status lt_trace_get(const lt_trace *t, size_t i, lt_trace_event *ev);
/* Sums over events [since, count). since > count gives zeros. */
LT_API void lt_trace_totals_since(const lt_trace *t, size_t since, lt_trace_totals *out);

/* Label attached to every event recorded from now on ("" or NULL: none).
 * The text is copied. LT_NOMEM leaves the previous label in place. */
LT_API lt_status lt_trace_set_label(lt_trace *t, const char *label);

/* Aligned text table of events [since, count) with totals. */
LT_API void lt_trace_print(const lt_trace *t, FILE *f, size_t since);

#endif
