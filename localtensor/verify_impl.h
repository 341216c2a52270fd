/* localtensor/verify_impl.h — what the verifier allocates (internal: not
 * installed), for the executor's up-front memory check, and the record of
 * verified shards the executor passes from one step's check to the next. */
#ifndef LT_VERIFY_IMPL_H
#define LT_VERIFY_IMPL_H

#include <stdint.h>

#include "kernels/status_impl.h"
#include "localtensor/layout.h"
#include "localtensor/spec.h"
#include "localtensor/dtensor.h"
#include "localtensor/verify.h"

/* Bytes lt_verify_reshard of a source of spec src against a state of spec
 * dst allocates at most besides the two DTensors: the source's owner tables,
 * one shard's index lists (one per thread of the pool), the bookkeeping per
 * rank and, where values are reduced or divided, two shards of dst. *out
 * saturates. */
lt_status lt__verify_bytes(const lt_spec *src, const lt_spec *dst, uint64_t *out);

/* Bytes of bookkeeping per rank of the mesh: the pieces of work, the
 * record of verified shards (two of them alive at once), the per-class
 * first and last buffers. */
#define LT__VERIFY_RANK_BYTES ((uint64_t)1024)

/* Where the shards of a verified state lie (storage, offset, strides) and
 * which box of the global tensor each holds; only states without Partial
 * placements are recorded. */
typedef struct lt__verified lt__verified;
void lt__verified_free(lt__verified *v);

/* lt_verify_reshard that also takes and gives a record (memo may be NULL:
 * then it is exactly lt_verify_reshard). *memo on entry: the record of the
 * state checked before, or NULL. A shard of `actual` that is a view of
 * recorded bytes, each element where the recorded shard keeps the same
 * global index, is right without reading it. So the caller guarantees:
 * every storage the record names stayed alive until actual's shards existed
 * (so an equal pointer is the same buffer), and nothing wrote into those
 * buffers since they were checked (lt_redistribute: the executor never
 * writes into a state it reads; shared buffers are copied on write). On
 * LT_OK *memo is replaced by this state's record; on error it is freed and
 * set to NULL. */
/* The source's record, for the first check: the shards replicas are
 * checked against (lt__replica_class), which hold the values by
 * definition; empty when the source has Partial placements. A new record
 * into *out (caller frees); LT_NOMEM. The source must outlive every check
 * that uses it. */
lt_status lt__verified_source(const lt_dtensor *src, lt__verified **out);

lt_status lt__verify_reshard_memo(const lt_dtensor *src, const lt_dtensor *actual, int step,
                                  lt_verify_report *rep, lt__verified **memo);

/* The report's fields before a check (localtensor/verify_report.c): ok,
 * checked, no step, mesh dim or rank; rep may be NULL. */
void lt__verify_report_init(lt_verify_report *rep, int ndim);
/* Fills rep (may be NULL) with rank's first differing element of res
 * (local index res->first_idx, global through layout l), prefixed `what`,
 * and sets the error message; returns LT_MISMATCH. */
lt_status lt__verify_element_mismatch(lt_verify_report *rep, int step, const char *what, int rank, int ndim,
                                      const lt_compare_result *res, const lt_rank_layout *l);
/* Fills rep (may be NULL) with rank r's shard a of the wrong shape (es:
 * the direct reshard's) and sets the message; returns LT_MISMATCH. */
lt_status lt__verify_shape_mismatch(lt_verify_report *rep, int step, int r, const lt_tensor *a, int ndim,
                                    const int64_t *es);

#endif
