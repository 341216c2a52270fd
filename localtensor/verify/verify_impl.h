/* localtensor/verify/verify_impl.h — what the verifier allocates (internal: not
 * installed), for the executor's up-front memory check, and the record of
 * verified shards the executor passes from one step's check to the next. */
#ifndef LT_VERIFY_IMPL_H
#define LT_VERIFY_IMPL_H

#include <stdint.h>
#include <string.h>

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

/* A verified shard: where its bytes lie and the global box they hold
 * (a range [goff, goff + n) of every dim, in order). */
typedef struct lt__vshard {
    uintptr_t storage;   /* the buffer's address as a number: compared, never followed */
    int64_t offset, strides[LT_MAX_DIMS];
    int64_t goff[LT_MAX_DIMS], n[LT_MAX_DIMS];
} lt__vshard;

struct lt__verified {
    int n;
    lt__vshard *e;   /* (n) sorted by storage (lt__vshard_cmp) */
};

/* qsort's order of records: by storage. */
int lt__vshard_cmp(const void *x, const void *y);
/* 1 when layout L holds a box of the global tensor (gshape; every dim a
 * run of consecutive indices, in order); goff, n get it (nd each). */
int lt__verify_box_of(const lt_rank_layout *L, int nd, const int64_t *gshape, int64_t *goff,
                      int64_t *n);

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

/* The report's fields before a check (localtensor/verify/verify_report.c): ok,
 * checked, no step, mesh dim or rank; rep may be NULL. */
void lt__verify_report_init(lt_verify_report *rep, int ndim);
/* Fills rep (may be NULL) with rank's first differing element of res
 * (local index res->first_idx, global through layout l), prefixed `what`,
 * and sets the error message; returns LT_MISMATCH. */
lt_status lt__verify_element_mismatch(lt_verify_report *rep, int step, const char *what, int rank,
                                      int ndim, const lt_compare_result *res,
                                      const lt_rank_layout *l);
/* Fills rep (may be NULL) with rank r's shard a of the wrong shape (es:
 * the direct reshard's) and sets the message; returns LT_MISMATCH. */
lt_status lt__verify_shape_mismatch(lt_verify_report *rep, int step, int r, const lt_tensor *a,
                                    int ndim, const int64_t *es);

/* The runs of a shard's last dim (localtensor/verify/verify_fused.c), the same
 * for every row: the shard holds global indices gl[0..nl) along it (gl
 * NULL: 0 .. nl - 1; run: they are consecutive), the source's owner
 * tables of that dim say which rank part (pl) and local position (ql)
 * hold each (NULL: unsharded). Into rn (nr, 4): first position, length,
 * owner's rank part, its local position, for each stretch one owner holds
 * at consecutive positions; returns nr. key (4) is the key of the runs rn
 * holds (kept, first index, nl, nr; kept = 0: none): when the indices are
 * a run, the same key returns the kept runs without making them again
 * (they depend on nothing else for the same owner tables). */
int64_t lt__verify_last_dim_runs(const int64_t *gl, int64_t nl, int run, const int64_t *pl,
                                 const int64_t *ql, int64_t *key, int64_t *rn);

/* Bytes to compare that lie back to back in both the checked shard (a)
 * and the source (s): runs that continue them in both are joined, so that
 * rows held back to back on both sides are compared in one long memcmp
 * (faster than a call per row, and what the memory streams best). */
typedef struct lt__vpend {
    const char *a, *s;
    size_t n;
} lt__vpend;

/* Adds the n bytes at a and s to *p; returns 1 when the bytes it compared
 * (those of *p it let go) differ. The caller compares what is left in *p
 * at the end. Inline: it runs once per run of a shard. */
static inline int lt__verify_pend_add(lt__vpend *p, const char *a, const char *s, size_t n) {
    if (p->n && a == p->a + p->n && s == p->s + p->n) {
        p->n += n;
        return 0;
    }
    int bad = p->n && memcmp(p->a, p->s, p->n) != 0;
    p->a = a;
    p->s = s;
    p->n = n;
    return bad;
}

/* lt_compare's test (localtensor/verify/verify_fused.c): within atol + rtol * |b|,
 * NaN equal to NaN, an infinity only equal to itself. */
int lt__verify_close_enough(double a, double b, double rtol, double atol);
/* The fused check of one run of len reduced elements (f32 or f64): the
 * contributions s[0..nq) (element strides ss) summed in that order in the
 * dtype (as lt_accumulate does), divided by avg_div through double (as the
 * expected shard is), against a (element stride as). Returns 1 at the first
 * element out of tolerance, which is lt_compare's plus slack x the sum of
 * the element's |contributions|; 0 when every element agrees. Reads only. */
int lt__verify_fused_run_f32(const char *const *s, const int64_t *ss, int nq, const char *a,
                             int64_t as, int64_t len, double avg_div, double rtol, double atol,
                             double slack);
int lt__verify_fused_run_f64(const char *const *s, const int64_t *ss, int nq, const char *a,
                             int64_t as, int64_t len, double avg_div, double rtol, double atol,
                             double slack);

#endif
