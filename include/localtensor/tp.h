/* localtensor/tp.h — a tensor-parallel MLP built from DTensor ops, with the
 * styles of PyTorch's ColwiseParallel / RowwiseParallel / SequenceParallel,
 * and the same MLP on one device to compare it with (localtensor/tp.c).
 */
#ifndef LT_TP_H
#define LT_TP_H

#include "localtensor/kernels/export.h"
#include "localtensor/kernels/math.h"
#include "localtensor/dtensor.h"
#include "localtensor/redistribute.h"

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

LT_API const char *lt_tp_style_name(lt_tp_style s);
LT_API lt_status lt_tp_style_parse(const char *s, lt_tp_style *out);

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
LT_API lt_status lt_tp_mlp(const lt_mesh *mesh, const lt_tp_mlp_cfg *cfg, const lt_tensor *x,
                            const lt_tensor *w1, const lt_tensor *b1, const lt_tensor *w2,
                            const lt_tensor *b2, const lt_redistribute_opts *ropts, lt_dtensor **y);
/* The same MLP on one device (dense kernels), for comparison. */
LT_API lt_status lt_mlp_dense(const lt_tensor *x, const lt_tensor *w1, const lt_tensor *b1,
                              const lt_tensor *w2, const lt_tensor *b2, lt_unary_op act,
                              lt_tensor **y);

#endif
