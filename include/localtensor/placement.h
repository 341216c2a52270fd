/* localtensor/placement.h — placements: what one mesh dim does to a tensor.
 *
 * Shard(dim, rule), Replicate, Partial(op), StridedShard(dim, split_factor),
 * RaggedShard(dims, local_units) (docs/SEMANTICS.md §1, §3, §4, §5, §11.1,
 * §11.10). This file owns their spellings (parse and format) and the checks
 * that depend only on the placement list, the mesh and the tensor rank
 * (docs/SEMANTICS.md §10). Where each rank's data comes from is layout math:
 * localtensor/layout.h (RaggedShard's: localtensor/ragged.h).
 */
#ifndef LT_PLACEMENT_H
#define LT_PLACEMENT_H

#include <stddef.h>

#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/kernels/dtype.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/split.h"
#include "localtensor/kernels/status.h"

/* XX(enum suffix, short spelling prefix) */
#define LT_PLACEMENT_KIND_MAP(XX) \
    XX(REPLICATE, "R")            \
    XX(SHARD,     "S")            \
    XX(STRIDED,   "SS")           \
    XX(PARTIAL,   "P")            \
    XX(RAGGED,    "RS")

typedef enum {
#define LT__XX(e, s) LT_PL_##e,
    LT_PLACEMENT_KIND_MAP(LT__XX)
#undef LT__XX
    LT_PL_COUNT
} lt_placement_kind;

typedef struct lt_placement {
    lt_placement_kind kind;
    int dim;              /* SHARD, STRIDED: tensor dim (may be negative until normalized) */
    int split_factor;     /* STRIDED: >= 1 */
    lt_redop op;          /* PARTIAL */
    lt_split_rule rule;   /* SHARD: uneven rule (chunk by default) */
    /* RAGGED (RaggedShard, docs/SEMANTICS.md §11.10): dim = k, the number of
     * leading tensor dims flattened (dims = (0, ..., k-1)); rule holds the
     * local_units as an explicit list (kind LT_SPLIT_EXPLICIT, nsizes = the
     * mesh dim's size, sizes interned by lt_split_explicit: never freed), so
     * a placement stays a small value that copies by assignment. */
} lt_placement;

/* Constructors. */
LT_API lt_placement lt_replicate(void);
LT_API lt_placement lt_shard(int dim);
LT_API lt_placement lt_shard_rule(int dim, lt_split_rule rule);
LT_API lt_placement lt_strided(int dim, int split_factor);
LT_API lt_placement lt_partial(lt_redop op);
/* RaggedShard(dims=(0..ndims-1), local_units=units[n]) into *out. Errors
 * (LT_INVALID, naming the value): ndims < 1; n outside 1..LT_SPLIT_MAX_EXPLICIT
 * (64: meshes dims of more ranks are refused); a negative unit; units summing
 * to 0; LT_NOMEM. The units are copied (interned). */
LT_API lt_status lt_ragged(int ndims, const int64_t *units, int n, lt_placement *out);

/* Parses one placement in any spelling of docs/DESIGN.md §5: R, S(0), S(-1),
 * S(0,balanced), S(0,last), S(0,chunk), S(0,[3,1,0,2]), SS(0,2), P, P(sum),
 * P(avg|max|min|product|prod), Replicate(), Shard(0), Shard(dim=0),
 * Partial(), Partial("max"), Partial(sum), Partial(reduce_op='max'),
 * _Partial(sum), _StridedShard(0, split_factor=2),
 * _StridedShard(dim=0, split_factor=2), and what PyTorch prints for a
 * _StridedShard: _StridedShard(dim=0, sf=2) (repr) and _S(0, 2) (str);
 * RaggedShard: RS(dims=(0,1), units=(2,3,0,5)), RS((0,1),(2,3,0,5)) and
 * veScale's repr RaggedShard(dims=(0, 1), local_units=(2, 3, 0, 5)) (tuples
 * or [lists]; dims must be the prefix 0..k-1).
 * Whitespace is allowed around tokens. Errors (LT_INVALID) quote the text;
 * an unknown name, argument or rule names the closest known one
 * ("did you mean 'Shard'?"). */
LT_API lt_status lt_placement_parse(const char *s, lt_placement *out);

/* Parses a comma-separated list (commas inside () or [] do not split),
 * optionally wrapped in [ ] or ( ) as a Python list or tuple prints, e.g.
 * "(Shard(dim=0), Replicate())"; a wrapped list may end in one comma
 * ("(Shard(dim=0),)"). At most max entries; *n gets the count. */
LT_API lt_status lt_placements_parse(const char *s, lt_placement *out, int max, int *n);

/* Short spelling: "R", "S(0)", "S(0,balanced)", "S(0,[3,1,0,2])", "SS(0,2)",
 * "P(sum)", "RS(dims=(0,1),units=(2,3,0,5))" (dims=(0,) when k = 1). Always
 * NUL-terminates; returns the length it wanted. */
LT_API int lt_placement_format(const lt_placement *p, char *buf, size_t n);
/* "[R, S(0)]" style list. */
LT_API int lt_placements_format(const lt_placement *p, int np, char *buf, size_t n);

/* Same placement (after normalization). */
LT_API int lt_placement_equal(const lt_placement *a, const lt_placement *b);
LT_API int lt_placements_equal(const lt_placement *a, const lt_placement *b, int n);
LT_API int lt_placement_is_shard_like(const lt_placement *p); /* SHARD or STRIDED */

/* Validates a placement list for a tensor of `ndim` dims on `mesh` and writes
 * the normalized list (negative dims + ndim) into out[mesh->ndim] (out may be
 * pl). Rejects (LT_INVALID, message names the mesh dim and placement):
 * count != mesh dims; a kind, reduce op or split rule outside its enum (a
 * placement not built by the constructors or the parser); shard of a 0-d tensor; dim < -ndim or dim
 * >= ndim; split_factor < 1; explicit sizes whose count != that mesh dim's size; mixed Partial ops
 * other than {sum, avg}. RaggedShard (docs/SEMANTICS.md §11.10): its k dims must
 * exist (k <= ndim), its units count must equal the mesh dim's size, units >= 0 with a
 * positive sum; and, not supported yet (LT_UNSUPPORTED): a second RaggedShard, a
 * Shard/StridedShard of a dim < k when k > 1, and a Shard/StridedShard of dim 0 on a
 * mesh dim before the RaggedShard (k = 1). */
LT_API lt_status lt_placements_check(const lt_mesh *mesh, int ndim, const lt_placement *pl, int np,
                                     lt_placement *out);

/* ---- middle-era explicit order (docs/SEMANTICS.md §6) ------------------- */

typedef struct lt_order_entry {
    int mesh_dim;
    lt_placement placement;  /* strided entries become plain Shard */
} lt_order_entry;

/* _explicit_order_placements: each SS(d,sf) is deferred until the next S(d)
 * at mesh dim q; then the deferred ones are appended in reverse as Shard(d),
 * checking sf == aggregate (starting at m_q, times each converted mesh dim).
 * Errors (LT_INVALID or LT_UNSUPPORTED): count != mesh dims; a Shard(d) after
 * the strided part of d ended; split_factor != aggregate. Where PyTorch
 * silently drops an SS with no later S(d), we raise (LT_UNSUPPORTED).
 * out has room for np entries; *n gets the count. */
LT_API lt_status lt_explicit_order(const int *mesh_shape, int mesh_ndim, const lt_placement *pl,
                                   int np, lt_order_entry *out, int *n);

#endif
