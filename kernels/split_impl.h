/* kernels/split_impl.h — internal side of kernels/split.h: the table of
 * interned explicit size lists (not installed).
 *
 * Interned lists live until the process exits; a leak check that counts
 * every block made while it ran (test/fault/) empties the table once nothing
 * can point into it any more.
 */
#ifndef LT_SPLIT_IMPL_H
#define LT_SPLIT_IMPL_H

#include "kernels/split.h"

/* Frees every interned list. Only when no rule, placement, plan or cache
 * entry that points at one is alive (clear the plan and op caches first). */
void lt__split_intern_clear(void);

#endif
