/* tools/scenario/diverge_meaning.c — the layout rules of the single-device
 * comparison (docs/SEMANTICS.md §11.8): which part of the single-device value
 * each rank of a LocalTensor holds after a per-rank step, so that its values
 * can be compared with the reference.
 *
 * A LocalTensor's meaning is a list of placements, one per mesh dim, read as
 * a DTensor's: to_local of a DTensor gives the DTensor's placements; a
 * local_op keeps or changes them by the rules below (the rules sharding
 * propagation uses when it asks for no redistribute); a collective along a
 * mesh dim turns that dim into what the collective makes (all_reduce: R,
 * all_gather: R, reduce_scatter: S(dim), broadcast: R, all_to_all: S(dim)
 * from S(concat_dim)), whatever its input was: that is what the program
 * means by calling it, and a value that does not fit is the divergence.
 * Where no rule applies the meaning is unknown and the value is not compared
 * (the report lists it). Rules are data-free: they never look at values.
 */
#include <stdio.h>
#include <string.h>

#include "localtensor/layout.h"
#include "tools/scenario/diverge_impl.h"

void lt__dv_meaning_unknown(dv_meaning *m) {
    memset(m, 0, sizeof *m);
    m->mean_md = m->summed_md = m->partial_md = -1;
}

/* The input's layout, without its hints (they are about the step that made it). */
static void same_layout(dv_meaning *out, const dv_meaning *in) {
    lt__dv_meaning_unknown(out);
    out->known = in->known;
    memcpy(out->pl, in->pl, sizeof out->pl);
}

void lt__dv_meaning_all_r(const lt_mesh *mesh, dv_meaning *m) {
    lt__dv_meaning_unknown(m);
    m->known = 1;
    for (int d = 0; d < mesh->ndim; d++) m->pl[d] = lt_replicate();
}

static int all_kind(const lt_mesh *mesh, const dv_meaning *m, lt_placement_kind k) {
    if (!m->known) return 0;
    for (int d = 0; d < mesh->ndim; d++)
        if (m->pl[d].kind != k) return 0;
    return 1;
}

static int any_partial(const lt_mesh *mesh, const dv_meaning *m) {
    for (int d = 0; d < mesh->ndim; d++)
        if (m->pl[d].kind == LT_PL_PARTIAL) return 1;
    return 0;
}

/* 1 when every Partial dim of m reduces with `op` (and there is one). */
static int partial_only(const lt_mesh *mesh, const dv_meaning *m, lt_redop op) {
    int any = 0;
    for (int d = 0; d < mesh->ndim; d++)
        if (m->pl[d].kind == LT_PL_PARTIAL) {
            if (m->pl[d].op != op) return 0;
            any = 1;
        }
    return any;
}

int lt__dv_meaning_all_r_p(const lt_mesh *mesh, const dv_meaning *m) {
    return all_kind(mesh, m, LT_PL_REPLICATE);
}

void lt__dv_mesh_dim_name(const lt_mesh *mesh, int md, char *buf, size_t n) {
    if (md >= 0 && md < mesh->ndim && mesh->names[md][0])
        snprintf(buf, n, "mesh dim %s", mesh->names[md]);
    else snprintf(buf, n, "mesh dim %d", md);
}

void lt__dv_meaning_str(const lt_mesh *mesh, const dv_meaning *m, char *buf, size_t n) {
    if (!m->known) snprintf(buf, n, "unknown");
    else lt_placements_format(m->pl, mesh->ndim, buf, n);
}

/* ---- local ops ------------------------------------------------------------------------------ */

/* Pointwise ops that commute with a sum of terms (a Partial(sum|avg) value stays one). */
static int linear_pointwise(lt_op_kind op) {
    return op == LT_OP_NEG || op == LT_OP_MUL_SCALAR || op == LT_OP_DIV_SCALAR;
}

static int is_pointwise(lt_op_kind op) {
    switch (op) {
    case LT_OP_NEG:
    case LT_OP_ABS:
    case LT_OP_EXP:
    case LT_OP_LOG:
    case LT_OP_SQRT:
    case LT_OP_TANH:
    case LT_OP_RELU:
    case LT_OP_GELU:
    case LT_OP_SIGMOID:
    case LT_OP_ADD_SCALAR:
    case LT_OP_SUB_SCALAR:
    case LT_OP_RSUB_SCALAR: case LT_OP_MUL_SCALAR: case LT_OP_DIV_SCALAR: case LT_OP_MAXIMUM_SCALAR:
    case LT_OP_MINIMUM_SCALAR:
        return 1; /* dropout is not: its mask depends on the element's place in the tensor it sees
                   */
    default:
        return 0;
    }
}

static int is_binary(lt_op_kind op) {
    return op == LT_OP_ADD || op == LT_OP_SUB || op == LT_OP_MUL || op == LT_OP_DIV ||
           op == LT_OP_MAXIMUM || op == LT_OP_MINIMUM;
}

static void binary_meaning(const lt_mesh *mesh, lt_op_kind op, const dv_meaning *a,
                           const dv_meaning *b, const lt_tensor *ra, const lt_tensor *rb,
                           dv_meaning *out, char *why, size_t n) {
    int same_shape =
        ra->ndim == rb->ndim && !memcmp(ra->shape, rb->shape, sizeof(int64_t) * (size_t)ra->ndim);
    if (!same_shape) {
        /* broadcasting: an operand replicated everywhere joins any layout of the other one
         * when it has fewer dims (a bias row); its sizes then match every shard */
        const dv_meaning *big = ra->ndim >= rb->ndim ? a : b, *small = big == a ? b : a;
        const lt_tensor *rbig = big == a ? ra : rb, *rsmall = big == a ? rb : ra;
        int ok = all_kind(mesh, small, LT_PL_REPLICATE) && !any_partial(mesh, big);
        for (int d = 0; ok && d < mesh->ndim; d++)   /* a sharded dim must not be broadcast */
            if (big->pl[d].kind == LT_PL_SHARD || big->pl[d].kind == LT_PL_STRIDED) {
                int k = big->pl[d].dim, ks = k - (rbig->ndim - rsmall->ndim);
                if (ks >= 0 && rsmall->shape[ks] != 1) ok = 0;
            }
        if (ok) same_layout(out, big);
        else
            snprintf(why, n, "no layout rule for a broadcasting local %s of these layouts",
                     lt_op_name(op));
        out->known = ok;
        return;
    }
    if (lt_placements_equal(a->pl, b->pl, mesh->ndim)) {
        int lin = (op == LT_OP_ADD || op == LT_OP_SUB) && partial_only(mesh, a, LT_REDOP_SUM);
        if (!any_partial(mesh, a) || lin) {
            same_layout(out, a);
            return;
        }
        snprintf(why, n, "a local %s of Partial values is not the %s of their reductions",
                 lt_op_name(op), lt_op_name(op));
        return;
    }
    if (!any_partial(mesh, a) && !any_partial(mesh, b)) {
        /* operands laid out differently: each rank combines the elements it
         * holds of each; the result is meant to be the first operand's layout,
         * and where the other holds other elements the values diverge here */
        char pa[80], pb[80];
        same_layout(out, a);
        lt_placements_format(a->pl, mesh->ndim, pa, sizeof pa);
        lt_placements_format(b->pl, mesh->ndim, pb, sizeof pb);
        snprintf(out->mixed, sizeof out->mixed,
                 "the local %s combined operands laid out differently (%s and %s): each rank %s "
                 "elements of "
                 "other global indices",
                 lt_op_name(op), pa, pb, op == LT_OP_ADD ? "added up" : "combined");
        return;
    }
    snprintf(why, n, "no layout rule for a local %s of a Partial value and another layout",
             lt_op_name(op));
}

/* sum / mean / max / min over args' dims. */
static void reduce_meaning(const lt_mesh *mesh, lt_op_kind op, const lt_op_args *a,
                           const dv_meaning *in, const lt_tensor *ref, dv_meaning *out, char *why,
                           size_t n) {
    int nd = ref->ndim, red[LT_MAX_DIMS] = {0}, before[LT_MAX_DIMS + 1] = {0};
    for (int i = 0; i < nd; i++) red[i] = a->ndims == 0;
    for (int i = 0; i < a->ndims; i++) {
        int k = a->dims[i] < 0 ? a->dims[i] + nd : a->dims[i];
        if (k >= 0 && k < nd) red[k] = 1;
    }
    for (int i = 0; i < nd; i++) before[i + 1] = before[i] + red[i];
    same_layout(out, in);
    lt_redop pop = op == LT_OP_AMAX ? LT_REDOP_MAX : op == LT_OP_AMIN ? LT_REDOP_MIN : LT_REDOP_SUM;
    for (int d = 0; d < mesh->ndim; d++) {
        lt_placement p = in->pl[d];
        if (p.kind == LT_PL_PARTIAL) {
            if ((op == LT_OP_SUM || op == LT_OP_MEAN) &&
                (p.op == LT_REDOP_SUM || p.op == LT_REDOP_AVG))
                continue;
            snprintf(why, n, "a local %s of a Partial(%s) value", lt_op_name(op),
                     lt_redop_name(p.op));
            out->known = 0;
            return;
        }
        if (p.kind == LT_PL_REPLICATE) continue;
        if (p.kind == LT_PL_STRIDED && red[p.dim]) {
            snprintf(why, n, "a local %s over a dim split with _StridedShard", lt_op_name(op));
            out->known = 0;
            return;
        }
        if (!red[p.dim]) {
            if (!a->keepdim) out->pl[d].dim = p.dim - before[p.dim];
            continue;
        }
        if (op != LT_OP_MEAN) {
            out->pl[d] = lt_partial(pop);
            continue;
        }
        /* a mean of a shard is the shard's share of the mean only when every
         * shard has as many elements */
        int64_t first = -1, even = 1;
        char sizes[64] = "";
        size_t used = 0;
        int c[LT_MESH_MAX_DIMS] = {0};
        for (int j = 0; j < mesh->shape[d]; j++) {
            c[d] = j;
            lt_rank_layout l;
            if (lt_layout_rank(mesh, nd, ref->shape, in->pl, lt_mesh_rank(mesh, c), &l)) {
                even = 0;
                break;
            }
            int64_t s = l.local_shape[p.dim];
            lt_rank_layout_free(&l);
            if (first < 0) first = s;
            even &= s == first;
            if (used < sizeof sizes)
                used += (size_t)snprintf(sizes + used, sizeof sizes - used, "%s%lld", j ? ", " : "",
                                         (long long)s);
        }
        if (even) {
            out->pl[d] = lt_partial(LT_REDOP_AVG);
            continue;
        }
        out->mean_md = d;
        snprintf(out->mean_sizes, sizeof out->mean_sizes, "%s", sizes);
        char mdn[64];
        lt__dv_mesh_dim_name(mesh, d, mdn, sizeof mdn);
        snprintf(
            why, n,
            "a per-rank mean over shards of different sizes (%s along %s) is no share of the mean",
            sizes, mdn);
        out->pl[d] = lt_replicate();   /* what all_reduce(avg) along d is meant to make of it */
    }
    if (out->mean_md >= 0) out->known = 0;
}

/* mm / matmul of two matrices. */
static void mm_meaning(const lt_mesh *mesh, const dv_meaning *a, const dv_meaning *b,
                       const lt_tensor *ra, const lt_tensor *rb, dv_meaning *out, char *why,
                       size_t n) {
    lt__dv_meaning_unknown(out);
    if (ra->ndim != 2 || rb->ndim != 2) {
        snprintf(why, n, "no layout rule for a local matmul of sharded inputs other than matrices");
        return;
    }
    out->known = 1;
    for (int d = 0; d < mesh->ndim; d++) {
        lt_placement p = a->pl[d], q = b->pl[d];
        lt_placement_kind pk = p.kind, qk = q.kind;
        int psum = pk == LT_PL_PARTIAL && p.op == LT_REDOP_SUM,
            qsum = qk == LT_PL_PARTIAL && q.op == LT_REDOP_SUM;
        if (pk == LT_PL_REPLICATE && qk == LT_PL_REPLICATE) out->pl[d] = lt_replicate();
        else if (pk == LT_PL_SHARD && p.dim == 0 && qk == LT_PL_REPLICATE) out->pl[d] = p;
        else if (pk == LT_PL_REPLICATE && qk == LT_PL_SHARD && q.dim == 1) out->pl[d] = q;
        else if (pk == LT_PL_SHARD && p.dim == 1 && qk == LT_PL_SHARD && q.dim == 0 &&
                 lt_split_rule_equal(&p.rule, &q.rule) && ra->shape[1] == rb->shape[0])
            out->pl[d] = lt_partial(LT_REDOP_SUM);
        else if ((psum && qk == LT_PL_REPLICATE) || (pk == LT_PL_REPLICATE && qsum))
            out->pl[d] = lt_partial(LT_REDOP_SUM);
        else {
            char pa[48], pb[48], md[64];
            lt_placement_format(&p, pa, sizeof pa);
            lt_placement_format(&q, pb, sizeof pb);
            lt__dv_mesh_dim_name(mesh, d, md, sizeof md);
            snprintf(why, n, "no layout rule for a local matmul of %s by %s along %s", pa, pb, md);
            out->known = 0;
            return;
        }
    }
}

void lt__dv_local_op_meaning(const lt_mesh *mesh, lt_op_kind op, const lt_op_args *a,
                             const dv_meaning *const *in, const lt_tensor *const *ref, int nin,
                             dv_meaning *out, char *why, size_t n) {
    lt__dv_meaning_unknown(out);
    int all_r = 1;
    for (int k = 0; k < nin; k++) {
        if (!in[k]->known) {
            snprintf(why, n, "input %d has no known layout", k + 1);
            return;
        }
        all_r &= all_kind(mesh, in[k], LT_PL_REPLICATE);
    }
    if (all_r) {   /* every rank holds the whole inputs: it computes the whole result */
        lt__dv_meaning_all_r(mesh, out);
        return;
    }
    if (nin == 1 && is_pointwise(op)) {
        if (!any_partial(mesh, in[0]) ||
            (linear_pointwise(op) && (partial_only(mesh, in[0], LT_REDOP_SUM) ||
                                      partial_only(mesh, in[0], LT_REDOP_AVG)))) {
            same_layout(out, in[0]);
        } else {
            snprintf(why, n, "a local %s of a Partial value is not the %s of its reduction",
                     lt_op_name(op), lt_op_name(op));
        }
        return;
    }
    if (nin == 2 && is_binary(op)) {
        binary_meaning(mesh, op, in[0], in[1], ref[0], ref[1], out, why, n);
        return;
    }
    if (nin == 1 && (op == LT_OP_SUM || op == LT_OP_MEAN || op == LT_OP_AMAX || op == LT_OP_AMIN)) {
        reduce_meaning(mesh, op, a, in[0], ref[0], out, why, n);
        return;
    }
    if (nin == 2 && (op == LT_OP_MM || op == LT_OP_MATMUL)) {
        mm_meaning(mesh, in[0], in[1], ref[0], ref[1], out, why, n);
        return;
    }
    snprintf(why, n, "no layout rule for a local %s of sharded or Partial inputs", lt_op_name(op));
}

/* ---- collectives ----------------------------------------------------------------------------- */

void lt__dv_collective_meaning(const lt_mesh *mesh, lt_coll kind, int md, lt_redop op, int dim,
                               int cdim, const lt_split_rule *rule, const dv_meaning *in, int ndim,
                               dv_meaning *out, char *why, size_t n) {
    lt__dv_meaning_unknown(out);
    if (md < 0 || md >= mesh->ndim) return;
    /* an input of unknown layout: only per-rank means over uneven shards
     * along md say what their reduction along md means (the mean) */
    int mean = !in->known && in->mean_md == md &&
               (kind == LT_COLL_ALL_REDUCE || kind == LT_COLL_REDUCE_SCATTER);
    if (!in->known && !mean) {
        snprintf(why, n, "its input has no known layout");
        return;
    }
    same_layout(out, in);
    out->known = 1;
    int ndn = ndim > 0 ? ndim : 1;
    int sd = dim < 0 ? dim + ndn : dim, cd = cdim < 0 ? cdim + ndn : cdim;
    switch (kind) {
    case LT_COLL_ALL_REDUCE:
        if (in->known && in->pl[md].kind == LT_PL_REPLICATE &&
            (op == LT_REDOP_SUM || op == LT_REDOP_PRODUCT)) {
            out->summed_md = md;
            for (int d = 0; d < mesh->ndim; d++)
                if (d != md && in->pl[d].kind == LT_PL_PARTIAL && in->pl[d].op == LT_REDOP_SUM)
                    out->partial_md = d;
        }
        out->pl[md] = lt_replicate();
        break;
    case LT_COLL_ALL_GATHER:
    case LT_COLL_BROADCAST:
        out->pl[md] = lt_replicate();
        break;
    case LT_COLL_REDUCE_SCATTER:
        out->pl[md] = rule ? lt_shard_rule(sd, *rule) : lt_shard(sd);
        break;
    case LT_COLL_ALL_TO_ALL:
        if (in->known && in->pl[md].kind == LT_PL_SHARD && in->pl[md].dim == cd) {
            out->pl[md] = rule ? lt_shard_rule(sd, *rule) : lt_shard(sd);
            break;
        }
        snprintf(why, n, "an all_to_all whose input is not split along its concat dim");
        lt__dv_meaning_unknown(out);
        return;
    default:
        snprintf(why, n, "%s leaves a value on some ranks only", lt_coll_name(kind));
        lt__dv_meaning_unknown(out);
        return;
    }
    if (mean) {
        out->mean_md = in->mean_md;
        memcpy(out->mean_sizes, in->mean_sizes, sizeof out->mean_sizes);
    }
}
