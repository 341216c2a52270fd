/* localtensor/ops.h — ops on DTensors, with sharding propagation.
 *
 * An op call (lt_op) does three things:
 *   1. propagation: the op's sharding rule (localtensor/ops/sharding_rules.c, one
 *      data table) looks at the input layouts (dtype, global shape,
 *      placements) and the op's static arguments and decides the output
 *      layout and, for every input, the placements it must have first;
 *   2. any input whose placements differ is redistributed
 *      (localtensor/redistribute.h) — never combined silently;
 *   3. the dense kernel (kernels/math.h) runs on every rank's shard.
 * Decisions are cached per (op, input specs: dtype + shape + placements,
 * mesh, static arguments) — never per scalar value, dropout probability or seed.
 *
 * What the rules guarantee (checked by lt_rules_validate, localtensor/validate.h, on every op,
 * every placement combination of 1-D meshes of 2-4 ranks and a 2x2 mesh — there with
 * balanced, last and explicit splits on mesh dim 1 too, nested under mesh dim 0 or not —
 * even and uneven shapes):
 * the sharded result equals the op on the unsharded tensors. In particular:
 *   - operands combined elementwise (or contracted) map the same global
 *     indices on every rank: same placements on the same dims, same uneven
 *     rule, same nesting; anything else is redistributed — except for an
 *     elementwise binary op with an operand built by lt_from_local, whose
 *     shards are the caller's: operands that, as the op consumes them
 *     (after the redistributes propagation asks for; a difference in split
 *     sizes alone is consumed as it is, as PyTorch would), hold different
 *     global indices on some rank are LT_INVALID with sub-code
 *     LT_ERR_MISALIGNED, naming the rank and both index ranges
 *     (docs/SEMANTICS.md §11.6);
 *   - Partial inputs stay Partial only where the op commutes with the
 *     reduction (add of two P(sum), mul by a replicated value, max of
 *     P(max) and a replicated value, monotone functions of P(max), ...);
 *   - under the rule set MIN_COMM a mean over a sharded dim is a sum divided
 *     by the GLOBAL count, so the result is P(sum) — correct for uneven and
 *     empty shards; under PYTORCH (lt_op_rules) it is P(avg) of each rank's
 *     own mean only where every shard of the reduced dims is equally long,
 *     and the input is gathered otherwise;
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

#include "localtensor/kernels/export.h"
#include "localtensor/kernels/math.h"
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
LT_API const char *lt_op_name(lt_op_kind op);
/* Parses an op name (as in LT_OP_MAP; also "amax"/"amin", "addmm"...). */
LT_API lt_status lt_op_parse(const char *s, lt_op_kind *out);
/* Number of tensor inputs (-1: one or more). */
LT_API int lt_op_arity(lt_op_kind op);

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

/* Rule sets: who chooses an op's output placements and input redistributes.
 * PYTORCH (the default) chooses as PyTorch 2.15 DTensor does where the
 * rules reproduce it (docs/SEMANTICS.md §11.9 lists which); MIN_COMM keeps
 * the choices that move the fewest bytes (the rules before rule sets
 * existed). DEFAULT in lt_op_opts means the selected set (lt_op_rules_select). */
typedef enum {
    LT_OP_RULES_DEFAULT,
    LT_OP_RULES_PYTORCH,
    LT_OP_RULES_MIN_COMM,
    LT_OP_RULES_COUNT
} lt_op_rules;

/* "pytorch", "min-comm" ("default" for LT_OP_RULES_DEFAULT); "?" when out of range. */
LT_API const char *lt_op_rules_name(lt_op_rules r);
/* Parses "pytorch" or "min-comm"; anything else is LT_INVALID naming both. */
LT_API lt_status lt_op_rules_parse(const char *s, lt_op_rules *out);
/* Selects the process-wide rule set of calls that ask for DEFAULT
 * (lt_op_propagate always does); DEFAULT selects PYTORCH again. Not meant to
 * change while other threads run ops. */
LT_API void lt_op_rules_select(lt_op_rules r);
/* The selected rule set: PYTORCH or MIN_COMM. */
LT_API lt_op_rules lt_op_rules_selected(void);

#define LT_OP_REFUSAL_MAX 240 /* bytes of lt_op_plan.pytorch_refuses */
/* What propagation decided (also the cached value). Immutable and
 * reference-counted: release with lt_op_plan_free. Only the library makes
 * them (what it keeps besides is not part of this struct): never allocate
 * or copy one. */
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
    lt_op_rules rules;                            /* the rule set that chose: PYTORCH or MIN_COMM */
    /* PYTORCH: "PyTorch 2.15 refuses this: <why>; <what would work>" where PyTorch
     * raises on this op with these inputs (the result here is still the correct
     * one); "" where PyTorch runs it, and always under MIN_COMM */
    char pytorch_refuses[LT_OP_REFUSAL_MAX];
} lt_op_plan;

/* Options (NULL or zero-initialised: defaults). */
typedef struct lt_op_opts {
    int check_reference;         /* 1: also run on the unsharded tensors and compare */
    double rtol, atol;           /* both 0: lt_dtype_default_tol of the output dtype */
    const lt_redistribute_opts *redist; /* for input redistributes (comm, verify); NULL: defaults */
    int no_cache;                /* 1: propagate from scratch */
    const char *name;            /* for messages (borrowed) */
    lt_op_plan **plan;           /* optional out: a new reference to the decision */
    lt_op_rules rules;           /* DEFAULT: the selected rule set (lt_op_rules_select) */
} lt_op_opts;

/* Runs op on inputs in[nin] (same mesh). out[max_out] receive new DTensors;
 * *nout (may be NULL for single-output ops) gets their count. Errors:
 * LT_INVALID/LT_SHAPE/LT_DTYPE for bad inputs or arguments (the message
 * names the op), LT_UNSUPPORTED (sub-code LT_ERR_NOT_YET, "not supported
 * yet: ...") when no rule covers the layouts, redistribute and kernel errors with the op as
 * context, LT_MISMATCH when check_reference finds a difference (message:
 * op, index, expected, actual). On error every out[i] is NULL. */
LT_API lt_status lt_op(lt_op_kind op, const lt_dtensor *const *in, int nin, const lt_op_args *args,
                       const lt_op_opts *opts, lt_dtensor **out, int max_out, int *nout);

/* Propagation only: the decision for inputs of checked specs inputs[nin]
 * (built by lt_spec_init, or a DTensor's lt_dtensor_spec; not re-checked),
 * all on one mesh (equal meshes count as one); rand and randn (nin 0) take
 * theirs from args->mesh. args NULL: all zero. Errors as lt_op's
 * propagation. *out is a new reference. */
LT_API lt_status lt_op_propagate(lt_op_kind op, const lt_spec *const *inputs, int nin,
                                 const lt_op_args *args, lt_op_plan **out);
LT_API void lt_op_plan_free(lt_op_plan *p);

/* The propagation cache, shared by every thread (plans are immutable):
 * lt_op_cache_clear drops every cached plan (plans still referenced
 * elsewhere stay valid); the counters run since the last clear. */
LT_API void lt_op_cache_clear(void);
LT_API void lt_op_cache_stats(size_t *hits, size_t *misses, size_t *entries);

/* ---- convenience wrappers (single output, default options) ----------------- */

LT_API lt_status lt_dtensor_unary(lt_unary_op op, const lt_dtensor *x, lt_dtensor **out);
LT_API lt_status lt_dtensor_binary(lt_binary_op op, const lt_dtensor *a, const lt_dtensor *b,
                                   lt_dtensor **out);
LT_API lt_status lt_dtensor_matmul(const lt_dtensor *a, const lt_dtensor *b, lt_dtensor **out);
/* beta * bias + alpha * a @ b */
LT_API lt_status lt_dtensor_addmm(const lt_dtensor *bias, const lt_dtensor *a, const lt_dtensor *b,
                                  double beta, double alpha, lt_dtensor **out);
LT_API lt_status lt_dtensor_reduce(lt_reduce_op op, const lt_dtensor *x, int ndims, const int *dims,
                                   int keepdim, lt_dtensor **out);
LT_API lt_status lt_dtensor_transpose(const lt_dtensor *x, int d0, int d1, lt_dtensor **out);
LT_API lt_status lt_dtensor_reshape(const lt_dtensor *x, int ndim, const int64_t *shape,
                                    lt_dtensor **out);

/* ---- random (docs/SEMANTICS.md §11.4) ----------------------------------------- */

/* rand (uniform [0,1)) / randn of global shape, drawn per global index from
 * Philox keyed by (seed, global linear index): identical values for any mesh
 * and placements. Partial placements partition as distribute does. */
LT_API lt_status lt_dtensor_rand(const lt_mesh *mesh, lt_dtype dt, int ndim, const int64_t *shape,
                                 const lt_placement *pl, int np, uint64_t seed, int normal,
                                 lt_dtensor **out);
/* Dropout: element e is kept (scaled by 1/(1-p)) when
 * lt_rand_uniform(seed, global index of e) >= p, else 0; layout invariant. */
LT_API lt_status lt_dtensor_dropout(const lt_dtensor *x, double p, uint64_t seed, lt_dtensor **out);

#endif
