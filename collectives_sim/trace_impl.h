/* collectives_sim/trace_impl.h — recording into a comm trace (internal: not
 * installed). Only the collectives (collectives.c) and engines append events;
 * users read a trace through collectives_sim/trace.h.
 */
#ifndef LT_TRACE_IMPL_H
#define LT_TRACE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "localtensor/collectives_sim/trace.h"

/* Makes room for one more event so that lt__trace_record cannot fail.
 * LT_NOMEM on allocation failure. A no-op while disabled. */
lt_status lt__trace_reserve(lt_trace *t);
/* Appends an event and returns its zeroed sent/recv arrays (world each) for
 * the caller to fill; the totals are summed by lt__trace_commit. Returns 0
 * (and records nothing) while disabled. Call lt__trace_reserve first. */
int lt__trace_record(lt_trace *t, lt_coll coll, int mesh_dim, int ngroups, int group_size,
                     lt_dtype dt, size_t **sent, size_t **recv);
/* Sets the optional fields of the event just recorded (-1: not applicable). */
void lt__trace_set_args(lt_trace *t, int op, int root, int dim, int concat_dim);
/* Adds one group's bytes to the event just recorded, by the model above.
 * ranks[n] is the group; in/out are the call's world-length arrays after
 * the collective ran; root a position or -1; sizes the all_to_all split
 * sizes (n, n) along `dim` (else unused); perm the permute's. */
void lt__trace_group_bytes(lt_trace *t, lt_coll coll, int n, const int *ranks,
                           lt_tensor *const *in, lt_tensor *const *out, int root, int dim,
                           const int64_t *sizes, const int *perm);
/* Sums the totals of the event just recorded. */
void lt__trace_commit(lt_trace *t);

#endif
