/* localtensor/ops/ops_impl.h — internals of the ops (internal: not installed).
 *
 * The pieces of lt_op (localtensor/ops.h) and who calls whom, one way only:
 *   ops.c               dispatch, propagation cache, input redistributes
 *   ops_table.c         the op names and arities of LT_OP_MAP
 *   sharding_rules.c    the rule table and one function per rule family
 *   ops_rules_view.c    the reshape / view / flatten family
 *   ops_rules_common.c  helpers the families share
 *   ops_rules_pytorch.c the choices of the rule set PYTORCH that are not table rows
 *   ops_kernel.c        the dense kernel of an op on one rank's shards
 *   ops_random.c        rand, randn, dropout (wrappers of lt_op)
 * ops.c calls the rules, the kernels and the reference check
 * (localtensor/ops/reference.c); nothing below calls back into ops.c.
 */
#ifndef LT_OPS_IMPL_H
#define LT_OPS_IMPL_H

#include <stdint.h>

#include "kernels/status_impl.h"
#include "localtensor/ops.h"

/* What a sharding rule reads and writes. The rule sees input k as the spec
 * in[k] (dtype, global shape, normalized placements); ops.c presets tgt[k] to
 * in[k]'s placements; the rule changes the targets it needs, fills the
 * output spec and the kernel parameters, and returns LT_OK or an error with a
 * message (LT_UNSUPPORTED with LT_ERR_NOT_YET: "not supported yet: ...").
 * in[k] is the input's checked spec, except after build_plan (ops.c) relaxed
 * it (see lt__spec_unchecked): a rule reads its fields and never runs layout
 * math on it. */
typedef struct lt__rule_io {
    lt_op_kind op;
    lt_op_rules rules;                     /* PYTORCH or MIN_COMM */
    const lt_mesh *mesh;                   /* every input's (rand, randn: args->mesh) */
    int nin;
    const lt_spec *const *in;              /* (nin) what the rule sees of each input */
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
    /* PYTORCH: "PyTorch 2.15 refuses this: ..." where PyTorch raises on this op
     * and these inputs ("" where it runs); the rule still gives the correct
     * result (lt__pytorch_refuse sets it, the first reason kept). */
    char pt_refuses[LT_OP_REFUSAL_MAX];
} lt__rule_io;

/* Every lt_op_plan is allocated as one of these (the public struct first),
 * so a plan the API hands out converts back with lt__op_plan_x_of; users
 * never see the rest. Freed by lt_op_plan_free when refs drops to 0. */
typedef struct lt__op_plan_x {
    lt_op_plan pub;
    int refs;
    lt_mesh mesh;
    int64_t *local_shapes;    /* (nout, world, out_ndim) or NULL */
    int64_t *row_offset;      /* embedding: (world) first vocab row held, or NULL */
    int masked;               /* embedding: vocab-sharded lookup */
    int64_t vocab;            /* embedding: global rows of the weight */
    double mean_div;          /* mean: count each rank divides by (global; P(avg): local) */
    int kdims[LT_MAX_DIMS];   /* normalized dims / perm for the kernel */
    int nkdims;
    int kdim;                 /* normalized dim */
    int kdim2;
    int64_t *split_sizes;     /* split/chunk: (nout) */
    uint64_t out_bytes;       /* every rank's shard of every output; UINT64_MAX: unknown */
} lt__op_plan_x;

static inline lt__op_plan_x *lt__op_plan_x_of(const lt_op_plan *p) {
    return (lt__op_plan_x *)(uintptr_t)p;
}

/* The dense kernel of plan p on one rank's shards sh[p->nin] (rank: for
 * per-rank parameters); res[p->nout] receive new tensors (ops_kernel.c). */
lt_status lt__op_kernel(const lt_op_plan *p, const lt_op_args *a, int rank,
                        const lt_tensor *const *sh, lt_tensor **res);
/* 1 when lt__op_kernel on rank r computes exactly what it computes on rank
 * q from the same input shards (no per-rank parameter of plan p differs),
 * so r may share q's results (ops_kernel.c). */
int lt__op_kernel_same(const lt_op_plan *p, int r, int q);
/* Replica dedup (ops.c): a rank whose input shards are another rank's very
 * views shares that rank's results copy-on-write instead of computing them.
 * On unless LOCALTENSOR_OP_DEDUP=0; lt__op_set_dedup(0/1) overrides (tests),
 * -1 goes back to the environment's choice. Results are bit-identical. */
void lt__op_set_dedup(int on);
int lt__op_dedup(void);
/* Dropout of one shard, held by `rank`, of the tensor of checked spec s
 * (borrowed) (ops_kernel.c). */
lt_status lt__dropout_shard(const lt_tensor *x, double p, uint64_t seed, const lt_spec *s, int rank,
                            lt_tensor **out);

/* Elementwise binary ops with an operand built by from_local, judged as
 * plan p consumes the inputs in[p->nin] (after its redistributes; ops_align.c
 * says how): LT_INVALID (sub-code LT_ERR_MISALIGNED) naming the first rank
 * where the operands hold different global indices (docs/SEMANTICS.md
 * §11.6). Borrows p and in. */
lt_status lt__op_check_aligned(const lt_op_plan *p, const lt_dtensor *const *in);

/* Dispatches to the op's rule family (sharding_rules.c), then makes the
 * output's Partial ops a valid mix. */
lt_status lt__rule_propagate(lt__rule_io *io);
/* reshape / view / flatten (ops_rules_view.c). */
lt_status lt__rule_view(lt__rule_io *io);
/* ---- helpers of the rule families (ops_rules_common.c) ---- */

/* Output placement of mesh dim i and every input's target there become R. */
void lt__rule_force_replicate(lt__rule_io *io, int i);
/* Same kind, uneven rule and split factor (dims may differ). */
int lt__pl_same_shard(const lt_placement *a, const lt_placement *b);
/* p with its tensor dim replaced. */
lt_placement lt__pl_with_dim(const lt_placement *p, int dim);
/* Global indices that `rank` holds of a dim of size n sharded on the mesh
 * dims where pl1[i] is shard-like (their dim is ignored; others count as R):
 * *idx gets a malloc'd list (free it), *len its length. */
lt_status lt__dim_indices(const lt_mesh *mesh, int64_t n, const lt_placement *pl1, int rank,
                          int64_t **idx, int64_t *len);

/* ---- rule set PYTORCH (ops_rules_pytorch.c) ---- */

/* PyTorch's shardability filter on input k's targets io->tgt[k]: a tensor
 * dim sharded over more ranks than it has elements loses its shard on the
 * last such mesh dims (Replicate there) until it fits. */
void lt__pytorch_shardable(lt__rule_io *io, int k);
/* The tensor dim PyTorch reduce-scatters input k's Partial on mesh dim i
 * onto: the first dim no mesh dim of the input shards (nor another target
 * of input k) with at least mesh->shape[i] elements; -1 when none (then
 * PyTorch all-reduces). */
int lt__pytorch_scatter_dim(const lt__rule_io *io, int k, int i);
/* One row of PyTorch's single-mesh-dim strategy list: the output's
 * placement, then each input's (up to 3). */
typedef struct lt__pt_rule {
    lt_placement p[4];
} lt__pt_rule;
/* PyTorch's choice among every combination over the mesh dims of
 * rules[nrules] (ops_rules_pytorch.c says how it picks): sets io->out and
 * io->tgt and returns 1; 0 (nothing set) when no combination survives.
 * uneven: PyTorch's allow_uneven_sharding (an input kept as it is escapes
 * the shardability filter); even (NULL: none): the dims of input 0 whose
 * target must split evenly (PyTorch's filter for mean). An input sharded by
 * a split rule other than chunk (no PyTorch layout) leaves the choice to
 * MIN_COMM (returns 0). */
int lt__pytorch_choose(lt__rule_io *io, const lt__pt_rule *rules, int nrules, int uneven,
                       const int *even);
/* 1 when some input has a Shard or _StridedShard placement: only then does
 * PyTorch list its sharded strategies (its placeholders take the inputs'
 * shard kinds: lt__pytorch_choose fills them). */
int lt__pytorch_any_shard(const lt__rule_io *io);
/* 1 when some input has a _StridedShard. */
int lt__pytorch_has_strided(const lt__rule_io *io);
/* PYTORCH: reshape / view / flatten as PyTorch places them
 * (ops_rules_view_pt.c), after io->out_shape is known: sets io->out and
 * io->tgt and *done = 1, or leaves them (*done = 0) for the min-comm rule;
 * PyTorch's refusals are errors (LT_UNSUPPORTED). */
lt_status lt__pytorch_view(lt__rule_io *io, int *done);
/* Notes in io->pt_refuses that PyTorch 2.15 refuses this op here (printf
 * format: why, and what would work); a note already there stays. */
void lt__pytorch_refuse(lt__rule_io *io, const char *fmt, ...);
/* PYTORCH: matmul of a 3-d (or more) and a 2-d tensor folds the first into
 * rows by a view first; PyTorch's refusals of that view, as errors. */
lt_status lt__pytorch_matmul_fold(lt__rule_io *io);
/* PYTORCH: PyTorch's view of `in` to shape[ndim] (on io's mesh): 1 with the
 * input's targets tgt and the output's placements out (mesh ndim each), or 0
 * where PyTorch refuses or lt__pytorch_view leaves it to min-comm. */
int lt__pytorch_view_of(const lt__rule_io *io, const lt_spec *in, int ndim, const int64_t *shape,
                        lt_placement *tgt, lt_placement *out);

#endif
