/* kernels/split_impl.h — internal side of kernels/split.h: the table of
 * interned explicit size lists (not installed).
 *
 * Interned lists live until the process exits; a leak check that counts
 * every block made while it ran (test/fault/) empties the table once nothing
 * can point into it any more.
 */
#ifndef LT_SPLIT_IMPL_H
#define LT_SPLIT_IMPL_H

#include "localtensor/kernels/split.h"

/* Frees every interned list. Only when no rule, placement, plan or cache
 * entry that points at one is alive (clear the plan and op caches first). */
void lt__split_intern_clear(void);

/* Size and offset of piece j of a dim of n elements split into k under
 * `rule`, with no message and no allocation (the planner asks this in its
 * inner loops, where a piece that does not exist is an answer, not an
 * error): 0 on success, -1 for what lt_split_piece refuses (k < 1, n < 0, j
 * out of range, `last` with n < k, explicit sizes that do not fit). The one
 * place the uneven rules are written; lt_split_piece and lt_split_sizes
 * give the same pieces. */
int lt__split_piece_quiet(const lt_split_rule *rule, int64_t n, int k, int j, int64_t *size,
                          int64_t *offset);

#endif
