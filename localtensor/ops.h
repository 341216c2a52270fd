/* localtensor/ops.h — ops on DTensors, with sharding propagation.
 *
 * An op call (lt_op) does three things:
 *   1. propagation: the op's sharding rule (localtensor/sharding_rules.c, one
 *      data table) looks at the input layouts (dtype, global shape,
 *      placements) and the op's static arguments and decides the output
 *      layout and, for every input, the placements it must have first;
 *   2. any input whose placements differ is redistributed
 *      (localtensor/redistribute.h) — never combined silently;
 *   3. the dense kernel (kernels/math.h) runs on every rank's shard.
 * Decisions are cached per (op, input dtypes + shapes + placements, mesh,
 * static arguments) — never per scalar value, dropout probability or seed.
 *
 * What the rules guarantee (checked by lt_rules_validate on every op, every
 * placement combination of 1-D meshes of 2-4 ranks and a 2x2 mesh — there
 * with balanced, last and explicit splits on mesh dim 1 too, nested under
 * mesh dim 0 or not — even and uneven shapes): the sharded result equals
 * the op on the unsharded tensors.
 * In particular:
 *   - operands combined elementwise (or contracted) map the same global
 *     indices on every rank: same placements on the same dims, same uneven
 *     rule, same nesting; anything else is redistributed;
 *   - Partial inputs stay Partial only where the op commutes with the
 *     reduction (add of two P(sum), mul by a replicated value, max of
 *     P(max) and a replicated value, monotone functions of P(max), ...);
 *   - a mean over a sharded dim is a sum divided by the GLOBAL count, so the
 *     result is P(sum) — correct for uneven and empty shards;
 *   - a reshape that merges or splits a sharded dim keeps it sharded only
 *     when every rank's elements provably stay a block of whole output rows
 *     (checked on the actual index sets); otherwise it is redistributed.
 * When following the operands would ask for a layout that cannot exist (a
 * split on one mesh dim that does not fit the pieces of another operand's
 * shard of the same tensor dim on an earlier mesh dim), the operand holding
 * that split is replicated along that mesh dim first (ops.c, build_plan).
 * An input combination no rule handles is LT_UNSUPPORTED with sub-code
 * LT_ERR_NOT_YET (lt_errinfo()) and a message starting "not supported yet: ";
 * a rule whose output layout cannot exist is LT_UNSUPPORTED with
 * LT_ERR_NO_LAYOUT.
 *
 * Ownership: inputs are borrowed; every output is a NEW DTensor (free with
 * lt_dtensor_free). View ops (reshape, transpose, split, ...) return shards
 * that share storage with the input's shards, as torch views do.
 */
#ifndef LT_OPS_H
#define LT_OPS_H

#include <stdint.h>

#include "kernels/math.h"
#include "localtensor/dtensor.h"
#include "localtensor/redistribute.h"

/* Ops. XX(enum suffix, name, inputs (-1: one or more), rule family,
 * partial rule). The rule family names the propagation function of
 * sharding_rules.c; the partial rule names the row of its Partial table
 * (which Partial inputs pass through, and as what). */
#define LT_OP_MAP(XX)                                                    \
    XX(NEG,            "neg",            1, POINTWISE, NEG)              \
    XX(ABS,            "abs",            1, POINTWISE, NONE)             \
    XX(EXP,            "exp",            1, POINTWISE, MONO)             \
    XX(LOG,            "log",            1, POINTWISE, NONE)             \
    XX(SQRT,           "sqrt",           1, POINTWISE, NONE)             \
    XX(TANH,           "tanh",           1, POINTWISE, MONO)             \
    XX(RELU,           "relu",           1, POINTWISE, MONO)             \
    XX(GELU,           "gelu",           1, POINTWISE, NONE)             \
    XX(SIGMOID,        "sigmoid",        1, POINTWISE, MONO)             \
    XX(ADD_SCALAR,     "add_scalar",     1, POINTWISE, SHIFT)            \
    XX(SUB_SCALAR,     "sub_scalar",     1, POINTWISE, SHIFT)            \
    XX(RSUB_SCALAR,    "rsub_scalar",    1, POINTWISE, RSHIFT)           \
    XX(MUL_SCALAR,     "mul_scalar",     1, POINTWISE, LINEAR)           \
    XX(DIV_SCALAR,     "div_scalar",     1, POINTWISE, LINEAR)           \
    XX(MAXIMUM_SCALAR, "maximum_scalar", 1, POINTWISE, MONO)             \
    XX(MINIMUM_SCALAR, "minimum_scalar", 1, POINTWISE, MONO)             \
    XX(DROPOUT,        "dropout",        1, POINTWISE, LINEAR_MONO)      \
    XX(ADD,            "add",            2, BINARY,    ADD)              \
    XX(SUB,            "sub",            2, BINARY,    SUB)              \
    XX(MUL,            "mul",            2, BINARY,    MUL)              \
    XX(DIV,            "div",            2, BINARY,    DIV)              \
    XX(MAXIMUM,        "maximum",        2, BINARY,    MAXIMUM)          \
    XX(MINIMUM,        "minimum",        2, BINARY,    MINIMUM)          \
    XX(MATMUL,         "matmul",         2, MATMUL,    BILINEAR)         \
    XX(MM,             "mm",             2, MATMUL,    BILINEAR)         \
    XX(BMM,            "bmm",            2, MATMUL,    BILINEAR)         \
    XX(ADDMM,          "addmm",          3, MATMUL,    BILINEAR)         \
    XX(SUM,            "sum",            1, REDUCE,    LINEAR)           \
    XX(MEAN,           "mean",           1, REDUCE,    LINEAR)           \
    XX(AMAX,           "max",            1, REDUCE,    KEEP_MAX)         \
    XX(AMIN,           "min",            1, REDUCE,    KEEP_MIN)         \
    XX(SOFTMAX,        "softmax",        1, SOFTMAX,   NONE)             \
    XX(LOG_SOFTMAX,    "log_softmax",    1, SOFTMAX,   NONE)             \
    XX(RESHAPE,        "reshape",        1, VIEW,      LINEAR_MONO)      \
    XX(VIEW,           "view",           1, VIEW,      LINEAR_MONO)      \
    XX(FLATTEN,        "flatten",        1, VIEW,      LINEAR_MONO)      \
    XX(TRANSPOSE,      "transpose",      1, PERMUTE,   LINEAR_MONO)      \
    XX(PERMUTE,        "permute",        1, PERMUTE,   LINEAR_MONO)      \
    XX(UNSQUEEZE,      "unsqueeze",      1, PERMUTE,   LINEAR_MONO)      \
    XX(SQUEEZE,        "squeeze",        1, PERMUTE,   LINEAR_MONO)      \
    XX(CAT,            "cat",           -1, CAT,       LINEAR_MONO)      \
    XX(SPLIT,          "split",          1, SPLIT,     LINEAR_MONO)      \
    XX(CHUNK,          "chunk",          1, SPLIT,     LINEAR_MONO)      \
    XX(EMBEDDING,      "embedding",      2, EMBEDDING, LINEAR_MONO)      \
    XX(RAND,           "rand",           0, RANDOM,    NONE)             \
    XX(RANDN,          "randn",          0, RANDOM,    NONE)

typedef enum {
#define LT__XX(e, s, n, fam, pr) LT_OP_##e,
    LT_OP_MAP(LT__XX)
#undef LT__XX
    LT_OP_COUNT
} lt_op_kind;

/* "add", ...; "?" when out of range. */
const char *lt_op_name(lt_op_kind op);
/* Parses an op name (as in LT_OP_MAP; also "amax"/"amin", "addmm"...). */
lt_status lt_op_parse(const char *s, lt_op_kind *out);
/* Number of tensor inputs (-1: one or more). */
int lt_op_arity(lt_op_kind op);

#define LT_OP_MAX_INPUTS 64    /* cat */
#define LT_OP_MAX_OUTPUTS 64   /* split, chunk */

/* Arguments. Zero-initialise, then set what the op reads. Fields above the
 * line are static (part of the cache key); below it they are not. */
typedef struct lt_op_args {
    int dim;                     /* softmax, log_softmax, cat, split, chunk, unsqueeze,
                                  * squeeze (with dim_set), transpose (first), flatten (start) */
    int dim2;                    /* transpose (second), flatten (end; 0 with
                                  * flatten_end_set == 0 means -1) */
    int flatten_end_set;
    int dim_set;                 /* squeeze: 1 = only `dim`; 0 = the dims of `dims`, or
                                  * with ndims == 0 every size-1 dim (torch.squeeze(x)) */
    int ndims;                   /* sum/mean/max/min: dims (0 = all); permute: perm;
                                  * squeeze: dims to squeeze (those of size 1 go) */
    int dims[LT_MAX_DIMS];
    int keepdim;
    int shape_ndim;              /* reshape/view target (one -1 allowed); rand/randn */
    int64_t shape[LT_MAX_DIMS];
    int64_t split_size;          /* split: piece size (when nsizes == 0) */
    int nsizes;                  /* split: explicit piece sizes */
    int64_t sizes[LT_OP_MAX_OUTPUTS];
    int chunks;                  /* chunk: number of chunks (torch.chunk) */
    const lt_mesh *mesh;         /* rand/randn: the mesh (borrowed) */
    lt_dtype dtype;              /* rand/randn */
    int np;                      /* rand/randn: placements */
    lt_placement placements[LT_MESH_MAX_DIMS];
    /* ---- not part of the cache key ---- */
    double scalar;               /* *_scalar ops; dropout: probability p in [0, 1] */
    int scale_set;               /* addmm: 1 when alpha/beta are given (else both 1) */
    double alpha, beta;          /* addmm: beta * bias + alpha * (a @ b) */
    uint64_t seed;               /* rand, randn, dropout */
} lt_op_args;

/* What propagation decided (also the cached value). Immutable and
 * reference-counted: release with lt_op_plan_free. */
typedef struct lt_op_plan {
    lt_op_kind op;
    int nin;
    lt_placement (*in_target)[LT_MESH_MAX_DIMS]; /* (nin) placements each input needs */
    int *in_redistribute;                         /* (nin) 1 when that differs from the input's */
    int nout;
    lt_dtype out_dtype;
    int out_ndim;
    int64_t (*out_shape)[LT_MAX_DIMS];            /* (nout) global shapes */
    lt_placement out_pl[LT_MESH_MAX_DIMS];        /* every output's placements */
    char why[256];                                /* "[S(1)] x [S(0)] -> [P(sum)]" */
    /* private (ops*.c) */
    int refs_;
    lt_mesh mesh_;
    int64_t *local_shapes_;    /* (nout, world, out_ndim) or NULL */
    int64_t *row_offset_;      /* embedding: (world) first vocab row held, or NULL */
    int masked_;               /* embedding: vocab-sharded lookup */
    int64_t vocab_;            /* embedding: global rows of the weight */
    double mean_div_;          /* mean: global count of the reduced elements */
    int kdims_[LT_MAX_DIMS];   /* normalized dims / perm for the kernel */
    int nkdims_;
    int kdim_;                 /* normalized dim */
    int kdim2_;
    int64_t *split_sizes_;     /* split/chunk: (nout) */
} lt_op_plan;

/* Options (NULL or zero-initialised: defaults). */
typedef struct lt_op_opts {
    int check_reference;         /* 1: also run on the unsharded tensors and compare */
    double rtol, atol;           /* both 0: lt_dtype_default_tol of the output dtype */
    const lt_redistribute_opts *redist; /* for input redistributes (comm, verify); NULL: defaults */
    int no_cache;                /* 1: propagate from scratch */
    const char *name;            /* for messages (borrowed) */
    lt_op_plan **plan;           /* optional out: a new reference to the decision */
} lt_op_opts;

/* Runs op on inputs in[nin] (same mesh). out[max_out] receive new DTensors;
 * *nout (may be NULL for single-output ops) gets their count. Errors:
 * LT_INVALID/LT_SHAPE/LT_DTYPE for bad inputs or arguments (the message
 * names the op), LT_UNSUPPORTED (sub-code LT_ERR_NOT_YET, "not supported
 * yet: ...") when no rule covers the layouts, redistribute and kernel errors with the op as
 * context, LT_MISMATCH when check_reference finds a difference (message:
 * op, index, expected, actual). On error every out[i] is NULL. */
lt_status lt_op(lt_op_kind op, const lt_dtensor *const *in, int nin, const lt_op_args *args,
                const lt_op_opts *opts, lt_dtensor **out, int max_out, int *nout);

/* Propagation only: the decision for inputs of the given specs. `pl[i]` are
 * input i's placements (mesh->ndim each, normalized or not); shapes[i] its
 * global shape (ndims[i] dims). *out is a new reference. */
lt_status lt_op_propagate(lt_op_kind op, const lt_mesh *mesh, int nin, const lt_dtype *dtypes,
                          const int *ndims, const int64_t *const *shapes,
                          const lt_placement *const *pl, const lt_op_args *args,
                          lt_op_plan **out);
void lt_op_plan_free(lt_op_plan *p);

/* The propagation cache, shared by every thread (plans are immutable):
 * lt_op_cache_clear drops every cached plan (plans still referenced
 * elsewhere stay valid); the counters run since the last clear. */
void lt_op_cache_clear(void);
void lt_op_cache_stats(size_t *hits, size_t *misses, size_t *entries);

/* The unsharded reference of op on full tensors in[nin] (borrowed): the
 * dense kernels called directly from the op's arguments, independent of
 * propagation (localtensor/ops_reference.c). out[max_out] receive NEW tensors
 * (*nout of them; the caller frees). Used by lt_op_check_reference and the
 * rule validator. */
lt_status lt_op_reference(lt_op_kind op, const lt_tensor *const *in, int nin, const lt_op_args *args,
                          lt_tensor **out, int max_out, int *nout);

/* Compares every output of a sharded op against the dense kernel on the
 * unsharded inputs (both reassembled directly from global index sets).
 * LT_MISMATCH with "<op>: output K differs from the unsharded reference at
 * [i, j]: expected X, got Y" when they differ. rtol/atol both 0: defaults. */
lt_status lt_op_check_reference(lt_op_kind op, const lt_dtensor *const *in, int nin,
                                const lt_op_args *args, lt_dtensor *const *out, int nout,
                                double rtol, double atol);

/* ---- convenience wrappers (single output, default options) ----------------- */

lt_status lt_dt_unary(lt_unary_op op, const lt_dtensor *x, lt_dtensor **out);
lt_status lt_dt_binary(lt_binary_op op, const lt_dtensor *a, const lt_dtensor *b, lt_dtensor **out);
lt_status lt_dt_matmul(const lt_dtensor *a, const lt_dtensor *b, lt_dtensor **out);
/* beta * bias + alpha * a @ b */
lt_status lt_dt_addmm(const lt_dtensor *bias, const lt_dtensor *a, const lt_dtensor *b, double beta,
                      double alpha, lt_dtensor **out);
lt_status lt_dt_reduce(lt_reduce_op op, const lt_dtensor *x, int ndims, const int *dims, int keepdim,
                       lt_dtensor **out);
lt_status lt_dt_transpose(const lt_dtensor *x, int d0, int d1, lt_dtensor **out);
lt_status lt_dt_reshape(const lt_dtensor *x, int ndim, const int64_t *shape, lt_dtensor **out);

/* ---- random (docs/SEMANTICS.md §11.4) ----------------------------------------- */

/* rand (uniform [0,1)) / randn of global shape, drawn per global index from
 * Philox keyed by (seed, global linear index): identical values for any mesh
 * and placements. Partial placements partition as distribute does. */
lt_status lt_dt_rand(const lt_mesh *mesh, lt_dtype dt, int ndim, const int64_t *shape,
                     const lt_placement *pl, int np, uint64_t seed, int normal, lt_dtensor **out);
/* Dropout: element e is kept (scaled by 1/(1-p)) when
 * lt_rand_uniform(seed, global index of e) >= p, else 0; layout invariant. */
lt_status lt_dt_dropout(const lt_dtensor *x, double p, uint64_t seed, lt_dtensor **out);

/* ---- per-rank map (the MPMD escape hatch, docs/SEMANTICS.md §8) --------------- */

/* XX(enum suffix, name, description) */
#define LT_RANK_FN_MAP(XX)                                                         \
    XX(IDENTITY,      "identity",      "x")                                        \
    XX(ADD_RANK,      "add_rank",      "x + rank")                                 \
    XX(SCALE_BY_RANK, "scale_by_rank", "x * rank")                                 \
    XX(ADD_COORD0,    "add_coord0",    "x + the rank's coordinate on mesh dim 0")  \
    XX(BUMP_RANK0,    "bump_rank0",    "x + 1 on rank 0 only")                     \
    XX(LOCAL_NUMEL,   "local_numel",   "x; per-rank int: the shard's element count") \
    XX(LOCAL_DIM0,    "local_dim0",    "x; per-rank int: the shard's size on dim 0")

typedef enum {
#define LT__XX(e, s, d) LT_RANK_FN_##e,
    LT_RANK_FN_MAP(LT__XX)
#undef LT__XX
    LT_RANK_FN_COUNT
} lt_rank_fn_kind;

const char *lt_rank_fn_name(lt_rank_fn_kind k);
/* LT_INVALID listing the known names when s is unknown. */
lt_status lt_rank_fn_parse(const char *s, lt_rank_fn_kind *out);

/* Runs the named function on every rank's shard. *out: a new DTensor with x's
 * spec whose shards may now differ by rank (replicas may diverge: check with
 * lt_dtensor_check_replicas); ints (may be NULL): the per-rank ints (free
 * with lt_localint_free). */
lt_status lt_dtensor_rank_map(const lt_dtensor *x, lt_rank_fn_kind fn, lt_dtensor **out,
                              lt_localint *ints);

/* Checks that replicas agree along every Replicate mesh dim (exact compare).
 * LT_MISMATCH: "mesh dim I (R): ranks A and B differ at index [..]: ...". */
lt_status lt_dtensor_check_replicas(const lt_dtensor *x);

/* ---- tensor-parallel MLP (localtensor/ops_tp.c) ------------------------------- */

/* XX(enum suffix, name) */
#define LT_TP_STYLE_MAP(XX)      \
    XX(COLWISE,   "colwise")     \
    XX(ROWWISE,   "rowwise")     \
    XX(REPLICATE, "replicate")

typedef enum {
#define LT__XX(e, s) LT_TP_##e,
    LT_TP_STYLE_MAP(LT__XX)
#undef LT__XX
    LT_TP_STYLE_COUNT
} lt_tp_style;

const char *lt_tp_style_name(lt_tp_style s);
lt_status lt_tp_style_parse(const char *s, lt_tp_style *out);

typedef struct lt_tp_mlp_cfg {
    lt_tp_style style1, style2;  /* per Linear: colwise (W S(0) of [out, in], bias S(0),
                                  * output S(-1)), rowwise (W S(1), bias R, output
                                  * Partial then reduced), replicate */
    int sequence_parallel;       /* input and output sharded on dim 0 (tokens) */
    lt_unary_op act;             /* activation between the Linears (gelu, relu, ...) */
    int tp_dim;                  /* mesh dim used for TP (others replicate) */
} lt_tp_mlp_cfg;

/* y = Linear2(act(Linear1(x))) with Linear(x) = x @ W^T + b, on a mesh.
 * x (tokens, in), w1 (hidden, in), b1 (hidden), w2 (out, hidden), b2 (out):
 * dense, borrowed. Weights are distributed per style, x per
 * sequence_parallel, layers run as DTensor ops (transpose + addmm +
 * activation) with the redistributes the styles ask for (as PyTorch's
 * ColwiseParallel / RowwiseParallel / SequenceParallel do). *y: the output
 * DTensor (Replicate on tp_dim, or S(0) with sequence_parallel). Any hidden
 * size works, also not divisible by the mesh (uneven shards). */
lt_status lt_tp_mlp(const lt_mesh *mesh, const lt_tp_mlp_cfg *cfg, const lt_tensor *x,
                     const lt_tensor *w1, const lt_tensor *b1, const lt_tensor *w2,
                     const lt_tensor *b2, const lt_redistribute_opts *ropts, lt_dtensor **y);
/* The same MLP on one device (dense kernels), for comparison. */
lt_status lt_mlp_dense(const lt_tensor *x, const lt_tensor *w1, const lt_tensor *b1,
                       const lt_tensor *w2, const lt_tensor *b2, lt_unary_op act, lt_tensor **y);

/* ---- rule validator (localtensor/ops_validate.c) -------------------------------- */

typedef struct lt_validate_opts {
    const lt_op_kind *ops;      /* NULL: every op */
    int nops;
    int quick;                  /* 1: fewer shapes and placements (for sanitizer runs) */
    int verbose;                /* 1: print every wrong/missing case to `log` */
    void *log;                  /* FILE*; NULL: stderr */
    int max_report;             /* cases printed per op (0: 5) */
} lt_validate_opts;

typedef struct lt_validate_op_result {
    int cases, ok, wrong, missing, errors, invalid;  /* invalid: inputs rejected as bad */
} lt_validate_op_result;

typedef struct lt_validate_report {
    int cases, ok, wrong, missing, errors, invalid;
    lt_validate_op_result per_op[LT_OP_COUNT];
    char first_wrong[512];      /* description of the first wrong case ("" if none) */
    char first_error[512];
} lt_validate_report;

/* Runs every op over every input placement combination on meshes 2, 3, 4
 * and 2x2 with even and uneven shapes (adversarial Partial inputs: per-rank
 * contributions differ but reduce to the same value), comparing each result
 * with the unsharded reference. wrong: result != reference; missing: the op
 * said LT_UNSUPPORTED with LT_ERR_NOT_YET; errors: any other failure. */
lt_status lt_rules_validate(const lt_validate_opts *o, lt_validate_report *rep);

/* Builds a DTensor of `full` with placements pl whose Partial mesh dims hold
 * DIFFERENT per-rank contributions that still reduce to `full` (sum/avg:
 * offsets that cancel; max/min: other ranks hold values pushed away from
 * the extreme, with the extreme's holder varying by element). Without
 * Partial dims it equals lt_distribute. For tests and the validator. */
lt_status lt_distribute_adversarial(const lt_mesh *mesh, const lt_tensor *full,
                                    const lt_placement *pl, int np, uint64_t salt,
                                    lt_dtensor **out);

/* ---- internal (localtensor/ops*.c, sharding_rules.c, tests) ------------------ */

/* What a sharding rule reads and writes. ops.c presets tgt[i] to input i's
 * (normalized) placements; the rule changes the targets it needs, fills the
 * output spec and the kernel parameters, and returns LT_OK or an error with a
 * message (LT_UNSUPPORTED with LT_ERR_NOT_YET: "not supported yet: ..."). */
typedef struct lt__rule_io {
    lt_op_kind op;
    const lt_mesh *mesh;
    int nin;
    const lt_dtype *dtype;                 /* (nin) */
    const int *ndim;                       /* (nin) */
    const int64_t *const *shape;           /* (nin) global shapes */
    const lt_placement *const *pl;         /* (nin) normalized, mesh->ndim each */
    const lt_op_args *args;
    lt_placement (*tgt)[LT_MESH_MAX_DIMS]; /* (nin) target placements */
    lt_placement out[LT_MESH_MAX_DIMS];
    lt_dtype out_dtype;
    int out_ndim;
    int nout;
    int64_t out_shape[LT_OP_MAX_OUTPUTS][LT_MAX_DIMS];
    /* kernel parameters */
    double mean_div;
    int kdims[LT_MAX_DIMS], nkdims, kdim, kdim2;
    int masked;
    int64_t split_sizes[LT_OP_MAX_OUTPUTS];
} lt__rule_io;

/* The dense kernel of plan p on one rank's shards sh[p->nin] (rank: for
 * per-rank parameters); res[p->nout] receive new tensors (ops_kernel.c). */
lt_status lt__op_kernel(const lt_op_plan *p, const lt_op_args *a, int rank, const lt_tensor *const *sh,
                        lt_tensor **res);
/* Dropout of one shard of a tensor of global shape gshape laid out by pl on
 * mesh, held by `rank` (ops_random.c). */
lt_status lt__dropout_shard(const lt_tensor *x, double p, uint64_t seed, const lt_mesh *mesh, int ndim,
                            const int64_t *gshape, const lt_placement *pl, int rank, lt_tensor **out);

/* Dispatches to the op's rule family (sharding_rules.c), then makes the
 * output's Partial ops a valid mix. */
lt_status lt__rule_propagate(lt__rule_io *io);
/* reshape / view / flatten (ops_rules_view.c). */
lt_status lt__rule_view(lt__rule_io *io);
/* Output placement of mesh dim i and every input's target there become R. */
void lt__rule_force_replicate(lt__rule_io *io, int i);
/* S or SS. */
int lt__pl_is_shard(const lt_placement *p);
/* Same kind, uneven rule and split factor (dims may differ). */
int lt__pl_same_shard(const lt_placement *a, const lt_placement *b);
/* p with its tensor dim replaced. */
lt_placement lt__pl_with_dim(const lt_placement *p, int dim);
/* Global indices that `rank` holds of a dim of size n sharded on the mesh
 * dims where pl1[i] is shard-like (their dim is ignored; others count as R):
 * *idx gets a malloc'd list (free it), *len its length. */
lt_status lt__dim_indices(const lt_mesh *mesh, int64_t n, const lt_placement *pl1, int rank,
                          int64_t **idx, int64_t *len);

#endif
