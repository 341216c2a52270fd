/* collectives_sim/overlap_impl.h — byte ranges of a collective's tensors, and
 * which preallocated outputs overlap an input they must not (not
 * installed; used by collectives.c, step 2 of every wrapper).
 */
#ifndef LT_OVERLAP_IMPL_H
#define LT_OVERLAP_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "localtensor/kernels/tensor.h"

typedef struct lt__ival {
    uintptr_t lo, hi;           /* bytes [lo, hi) */
    int rank, is_out, contig;
} lt__ival;

/* Appends t's byte range to iv[*n] (the caller gives room) and counts it;
 * nothing for a NULL or empty tensor. t is borrowed. */
void lt__ival_add(lt__ival *iv, size_t *n, const lt_tensor *t, int rank, int is_out);

/* Sorts iv[0..n) and sets need_tmp[r] for every output that overlaps an
 * input (except exactly in place on its own rank, contiguous, when
 * self_alias_ok), adding the newly set ones to *ntmp. Returns 1 when two
 * outputs overlap (ranks *ra < *rb), else 0. Allocates nothing. */
int lt__ival_overlaps(lt__ival *iv, size_t n, int self_alias_ok, int *need_tmp, int *ntmp, int *ra,
                      int *rb);

#endif
