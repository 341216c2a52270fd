/* localtensor/reference.h — the unsharded reference of every op, and the
 * check of a sharded op's result against it.
 *
 * The reference calls the dense kernels (kernels/math.h) directly from the
 * op's arguments, independent of propagation and of the per-shard kernels'
 * parameters, so it can judge them. lt_op (opts.check_reference), the rule
 * validator (localtensor/validate.h) and the tests use it.
 */
#ifndef LT_REFERENCE_H
#define LT_REFERENCE_H

#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"
#include "localtensor/dtensor.h"
#include "localtensor/ops.h"

/* The unsharded reference of op on full tensors in[nin] (borrowed): the
 * dense kernels called directly from the op's arguments, independent of
 * propagation (localtensor/ops/reference.c). out[max_out] receive NEW tensors
 * (*nout of them; the caller frees). Used by lt_op_check_reference and the
 * rule validator. */
LT_API lt_status lt_op_reference(lt_op_kind op, const lt_tensor *const *in, int nin,
                                 const lt_op_args *args, lt_tensor **out, int max_out, int *nout);

/* Compares every output of a sharded op against the dense kernel on the
 * unsharded inputs (both reassembled directly from global index sets).
 * LT_MISMATCH with "<op>: output K differs from the unsharded reference at
 * [i, j]: expected X, got Y" when they differ. rtol/atol both 0: defaults. */
LT_API lt_status lt_op_check_reference(lt_op_kind op, const lt_dtensor *const *in, int nin,
                                       const lt_op_args *args, lt_dtensor *const *out, int nout,
                                       double rtol, double atol);

#endif
