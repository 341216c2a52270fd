/* kernels/math.h — dense math on one buffer: elementwise, reductions,
 * softmax, matmul, embedding.
 *
 * These are the per-shard kernels of localtensor/ops.h and, run on the
 * unsharded tensors, its reference. They know nothing of ranks. Every result
 * is a NEW contiguous tensor the caller frees with lt_tensor_free; inputs are
 * borrowed and may be any strided view (zero strides included). On error
 * *out is NULL and lt_errmsg() says what was wrong.
 *
 * Dtypes: bf16/f16 are widened to f32, computed in f32 (reductions accumulate
 * in f64), and rounded once on store; f64 computes in f64; i32/i64 compute in
 * int64 where the op makes sense for integers (neg, abs, relu, add, sub, mul,
 * maximum, minimum, sum, max, min) and are LT_UNSUPPORTED ("not supported
 * yet: ...") otherwise. Binary operands must share a dtype (LT_DTYPE).
 *
 * Dims: every `dim` argument may be negative (counted from the end).
 * Zero-size dims work everywhere.
 */
#ifndef LT_MATH_H
#define LT_MATH_H

#include <stdint.h>

#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"

/* XX(enum suffix, name) */
#define LT_UNARY_MAP(XX)     \
    XX(NEG,     "neg")       \
    XX(ABS,     "abs")       \
    XX(EXP,     "exp")       \
    XX(LOG,     "log")       \
    XX(SQRT,    "sqrt")      \
    XX(TANH,    "tanh")      \
    XX(RELU,    "relu")      \
    XX(GELU,    "gelu")      \
    XX(SIGMOID, "sigmoid")

typedef enum {
#define LT__XX(e, s) LT_UNARY_##e,
    LT_UNARY_MAP(LT__XX)
#undef LT__XX
    LT_UNARY_COUNT
} lt_unary_op;

/* XX(enum suffix, name) */
#define LT_BINARY_MAP(XX)    \
    XX(ADD,     "add")       \
    XX(SUB,     "sub")       \
    XX(MUL,     "mul")       \
    XX(DIV,     "div")       \
    XX(MAXIMUM, "maximum")   \
    XX(MINIMUM, "minimum")

typedef enum {
#define LT__XX(e, s) LT_BINARY_##e,
    LT_BINARY_MAP(LT__XX)
#undef LT__XX
    LT_BINARY_COUNT
} lt_binary_op;

/* XX(enum suffix, name) */
#define LT_REDUCE_MAP(XX)    \
    XX(SUM,  "sum")          \
    XX(MEAN, "mean")         \
    XX(MAX,  "max")          \
    XX(MIN,  "min")

typedef enum {
#define LT__XX(e, s) LT_REDUCE_##e,
    LT_REDUCE_MAP(LT__XX)
#undef LT__XX
    LT_REDUCE_COUNT
} lt_reduce_op;

LT_API const char *lt_unary_name(lt_unary_op op);
LT_API const char *lt_binary_name(lt_binary_op op);
LT_API const char *lt_reduce_name(lt_reduce_op op);

/* ---- elementwise ------------------------------------------------------------ */

/* out = op(x). gelu is the exact (erf) form; sigmoid 1/(1+exp(-x)). */
LT_API lt_status lt_unary(lt_unary_op op, const lt_tensor *x, lt_tensor **out);

/* Broadcast shape of a and b (numpy rules: align from the right; sizes must
 * match or one be 1). Errors: LT_SHAPE naming both shapes. */
LT_API lt_status lt_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                                     int64_t *out);

/* out = a op b with broadcasting; same dtype required. maximum/minimum
 * propagate NaN (torch.maximum). Integer div is LT_UNSUPPORTED. */
LT_API lt_status lt_binary(lt_binary_op op, const lt_tensor *a, const lt_tensor *b,
                           lt_tensor **out);

/* Scalar forms: out = a op s, or s op a when `reverse` (rsub: s - a).
 * The scalar takes a's dtype (for integers it must be integral). */
LT_API lt_status lt_binary_scalar(lt_binary_op op, const lt_tensor *a, double s, int reverse,
                                  lt_tensor **out);

/* ---- reductions --------------------------------------------------------------- */

/* Reduces x over dims[ndims] (distinct; ndims == 0 reduces every dim), keeping
 * them as size 1 when keepdim. An empty reduction yields the op's identity:
 * sum 0, max -inf, min +inf (integers: the type's extreme), mean 0/0 = NaN.
 * mean of integers is LT_UNSUPPORTED. A 0-d x takes dims {0} or {-1} (as torch
 * does: the result is x itself, keepdim or not). */
LT_API lt_status lt_reduce(lt_reduce_op op, const lt_tensor *x, int ndims, const int *dims,
                           int keepdim, lt_tensor **out);
/* Same; for MEAN the sum is divided by `divisor` instead of the number of
 * reduced elements (a shard's part of a mean over the global count). */
LT_API lt_status lt_reduce_ex(lt_reduce_op op, const lt_tensor *x, int ndims, const int *dims,
                              int keepdim, double divisor, lt_tensor **out);

/* softmax (log_softmax when `use_log`) of x along dim, max-subtracted. A
 * 0-d x is treated as one element (dim 0 or -1). */
LT_API lt_status lt_softmax(const lt_tensor *x, int dim, int use_log, lt_tensor **out);

/* ---- matmul (backend gemm: f32/f64 direct, bf16/f16 in f32) -------------------- */

/* torch.matmul: 1-D x 1-D dot (0-d result), 2-D x 1-D, 1-D x 2-D, and
 * batched (>= 3-D) with broadcast batch dims. Errors: LT_SHAPE naming both
 * shapes, LT_UNSUPPORTED for non-float dtypes. */
LT_API lt_status lt_matmul(const lt_tensor *a, const lt_tensor *b, lt_tensor **out);
/* a (m, k) @ b (k, n) -> (m, n); both exactly 2-D. */
LT_API lt_status lt_mm(const lt_tensor *a, const lt_tensor *b, lt_tensor **out);
/* a (B, m, k) @ b (B, k, n) -> (B, m, n); both exactly 3-D, same B. */
LT_API lt_status lt_bmm(const lt_tensor *a, const lt_tensor *b, lt_tensor **out);
/* beta * bias + alpha * (a @ b); a, b 2-D; bias broadcastable to (m, n).
 * beta == 0 ignores bias values (NaN included), as torch does. */
LT_API lt_status lt_addmm(const lt_tensor *bias, const lt_tensor *a, const lt_tensor *b,
                          double beta, double alpha, lt_tensor **out);

/* ---- embedding ------------------------------------------------------------------- */

/* out[i..., :] = weight[idx[i...] - row_offset, :] for idx of i32/i64 (any
 * shape); out shape = idx shape + (weight dim 1). weight is 2-D. With
 * `masked` == 0 an index outside [row_offset, row_offset + rows) is an error
 * (LT_INVALID naming it); with `masked` != 0 that row of out is zero (the
 * per-shard kernel of a vocab-sharded embedding). */
LT_API lt_status lt_embedding(const lt_tensor *weight, const lt_tensor *idx, int64_t row_offset,
                              int masked, lt_tensor **out);

#endif
