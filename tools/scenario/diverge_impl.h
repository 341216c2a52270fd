/* tools/scenario/diverge_impl.h — what the three parts of the single-device
 * comparison share (docs/SEMANTICS.md §11.8): scenario_diverge.c keeps the
 * reference value of every name and runs the check step, diverge_meaning.c
 * says which part of the reference each rank of a LocalTensor holds (its
 * layout rules), diverge_compare.c compares the ranks' values with it and
 * names the bug class where the values make it certain. Not installed.
 */
#ifndef LT_DIVERGE_IMPL_H
#define LT_DIVERGE_IMPL_H

#include "tools/scenario/scenario_impl.h"

/* Which part of the single-device value each rank of a LocalTensor holds. */
typedef struct dv_meaning {
    int known;                          /* 1: pl says it (every mesh dim) */
    lt_placement pl[LT_MESH_MAX_DIMS];  /* as a DTensor's: S = a shard, R = all of it,
                                         * P = a term of it (the group reduces to it) */
    int mean_md;                        /* >= 0: a per-rank mean over a tensor dim split
                                         * unevenly along this mesh dim (a diagnosis hint) */
    char mean_sizes[64];                /* "3, 2": that split's sizes */
    int summed_md;                      /* >= 0: made by a sum-all_reduce along this mesh
                                         * dim of a value replicated there (a hint) */
    int partial_md;                     /* with summed_md: a mesh dim the input was
                                         * Partial(sum) along, or -1 */
    char mixed[320];                    /* "": or a local binary op combined operands
                                         * laid out differently (a hint) */
} dv_meaning;

/* Tolerance of one comparison (docs/SEMANTICS.md §11.8). */
typedef struct dv_tol {
    double rtol, atol, ulps, eps;
    int emin, exact;
} dv_tol;

/* The first element outside the tolerance. */
typedef struct dv_hit {
    int found;
    int rank;                 /* -1: not about one rank */
    int shape;                /* 1: a shard's shape differs from its layout's */
    char local[128], global[128];
    char group[96];           /* a Partial value: "sum over 0, 1" (its group's ranks) */
    char shape_msg[400];      /* shape: what differs */
    double got, ref, allowed;
    int64_t ndiff;
} dv_hit;

/* Meaning rules (diverge_meaning.c). m: the case's mesh. *why gets the
 * reason when the result is not known. */
void lt__dv_meaning_unknown(dv_meaning *m);
void lt__dv_meaning_all_r(const lt_mesh *mesh, dv_meaning *m);
int lt__dv_meaning_all_r_p(const lt_mesh *mesh, const dv_meaning *m);
void lt__dv_local_op_meaning(const lt_mesh *mesh, lt_op_kind op, const lt_op_args *a,
                             const dv_meaning *const *in, const lt_tensor *const *ref, int nin,
                             dv_meaning *out, char *why, size_t n);
void lt__dv_collective_meaning(const lt_mesh *mesh, lt_coll kind, int md, lt_redop op, int dim,
                               int cdim, const lt_split_rule *rule, const dv_meaning *in, int ndim,
                               dv_meaning *out, char *why, size_t n);
/* "[S(0), R]" or "unknown". */
void lt__dv_meaning_str(const lt_mesh *mesh, const dv_meaning *m, char *buf, size_t n);
/* "mesh dim tp" (its name) or "mesh dim 1". */
void lt__dv_mesh_dim_name(const lt_mesh *mesh, int md, char *buf, size_t n);

/* Comparison (diverge_compare.c). shards: (world) the ranks' values, pl
 * their layout over ref (Partial dims: the group reduces to ref); mag/len:
 * the tolerance's summation terms (mag NULL: |ref|). *asm_out (may be NULL):
 * when nothing differs, the ranks' values put together as one tensor
 * (caller frees; NULL when nothing differs but it could not be made).
 * LT_UNSUPPORTED with *why for what cannot be compared (mixed Partial ops). */
lt_status lt__dv_compare(const lt_mesh *mesh, lt_tensor *const *shards, const lt_placement *pl,
                         const lt_tensor *ref, const lt_tensor *mag, int64_t len, const dv_tol *t,
                         dv_hit *h, lt_tensor **asm_out, char *why, size_t n);
/* A full tensor against ref. */
void lt__dv_compare_full(const lt_tensor *got, const lt_tensor *ref, const lt_tensor *mag,
                         int64_t len, const dv_tol *t, dv_hit *h);
/* Diagnoses of a divergence of shards (layout pl over ref; hit: its first
 * difference) into buf ("" when none is certain): ranks that differ along a
 * mesh dim laid out R and add up to the value (an unreduced Partial(sum));
 * every value off by an integer factor that is a mesh dim's size or the
 * world's; plus the hints of meaning m (may be NULL). Errors: LT_NOMEM
 * (a diagnosis is never dropped for want of memory: the report would
 * differ). */
lt_status lt__dv_diagnose(const lt_mesh *mesh, lt_tensor *const *shards, const lt_placement *pl,
                          const lt_tensor *ref, const lt_tensor *mag, int64_t len, const dv_tol *t,
                          const dv_meaning *m, const dv_hit *hit, char *buf, size_t n);

#endif
