/* localtensor/ops/sharding_rules.c — the sharding rules of every op, as data
 * plus one small function per rule family.
 *
 * The table (generated from LT_OP_MAP) links each op to its family and its
 * Partial rule. A Partial rule is data: which Partial inputs an op may keep
 * and what they become (e.g. neg turns P(max) into P(min)), and for binary
 * ops the table of (a, b) placement classes that stay valid without a
 * reduction. Everything else is decided per mesh dim by the family function,
 * whose invariant is: every input is redistributed to exactly the
 * placements that make all operands map the same global indices (same
 * placement, same uneven rule, same nesting, on corresponding dims). The
 * reshape family lives in ops_rules_view.c.
 */
#include "kernels/alloc.h"
#include <stdlib.h>
#include <string.h>

#include "localtensor/layout.h"
#include "localtensor/ops.h"
#include "kernels/math_impl.h"
#include "kernels/status_impl.h"
#include "localtensor/ops/ops_impl.h"

/* ---- the table ------------------------------------------------------------------ */

typedef enum {
    FAM_POINTWISE, FAM_BINARY, FAM_MATMUL, FAM_REDUCE, FAM_SOFTMAX, FAM_VIEW, FAM_PERMUTE,
    FAM_CAT, FAM_SPLIT, FAM_EMBEDDING, FAM_RANDOM
} rule_family;

/* Placement classes of the Partial tables. */
enum { PC_R, PC_SUM, PC_AVG, PC_MAX, PC_MIN, PC_PROD, PC_N };
#define X_ (-1)  /* not valid: reduce first */
#define PA (-2)  /* valid once the R operand is partitioned to P(sum) */

typedef struct partial_rule {
    signed char unary[PC_N];          /* input class -> output class */
    signed char binary[PC_N][PC_N];   /* (a class, b class) -> output class */
} partial_rule;

typedef enum {
    PR_NONE, PR_NEG, PR_MONO, PR_SHIFT, PR_RSHIFT, PR_LINEAR, PR_LINEAR_MONO, PR_KEEP_MAX,
    PR_KEEP_MIN, PR_BILINEAR, PR_ADD, PR_SUB, PR_MUL, PR_DIV, PR_MAXIMUM, PR_MINIMUM, PR_COUNT
} partial_rule_id;

#define ROW_X {X_, X_, X_, X_, X_, X_}
static const partial_rule partial_rules[PR_COUNT] = {
    /* f(x) in general: nothing commutes with a reduction */
    [PR_NONE]        = {{PC_R, X_, X_, X_, X_, X_}, {ROW_X}},
    /* -x: linear and decreasing */
    [PR_NEG]         = {{PC_R, PC_SUM, PC_AVG, PC_MIN, PC_MAX, X_}, {ROW_X}},
    /* non-decreasing f defined everywhere: f(max x_i) = max f(x_i) */
    [PR_MONO]        = {{PC_R, X_, X_, PC_MAX, PC_MIN, X_}, {ROW_X}},
    /* x + s: avg and extremes shift along */
    [PR_SHIFT]       = {{PC_R, X_, PC_AVG, PC_MAX, PC_MIN, X_}, {ROW_X}},
    /* s - x */
    [PR_RSHIFT]      = {{PC_R, X_, PC_AVG, PC_MIN, PC_MAX, X_}, {ROW_X}},
    /* c * x with c of unknown sign */
    [PR_LINEAR]      = {{PC_R, PC_SUM, PC_AVG, X_, X_, X_}, {ROW_X}},
    /* moves or scales by c >= 0 (views, dropout, cat, split, lookup) */
    [PR_LINEAR_MONO] = {{PC_R, PC_SUM, PC_AVG, PC_MAX, PC_MIN, X_}, {ROW_X}},
    [PR_KEEP_MAX]    = {{PC_R, X_, X_, PC_MAX, X_, X_}, {ROW_X}},
    [PR_KEEP_MIN]    = {{PC_R, X_, X_, X_, PC_MIN, X_}, {ROW_X}},
    [PR_BILINEAR]    = {{PC_R, PC_SUM, PC_AVG, X_, X_, X_}, {ROW_X}},
    /*                     b: R       SUM     AVG     MAX     MIN     PROD */
    [PR_ADD] = {{PC_R}, {{PC_R,   PA,     PC_AVG, PC_MAX, PC_MIN, X_},    /* a: R   */
                         {PA,     PC_SUM, X_,     X_,     X_,     X_},    /* a: SUM */
                         {PC_AVG, X_,     PC_AVG, X_,     X_,     X_},    /* a: AVG */
                         {PC_MAX, X_,     X_,     X_,     X_,     X_},    /* a: MAX */
                         {PC_MIN, X_,     X_,     X_,     X_,     X_},    /* a: MIN */
                         ROW_X}},
    [PR_SUB] = {{PC_R}, {{PC_R,   PA,     PC_AVG, PC_MIN, PC_MAX, X_},    /* r - max = min(r - x) */
                         {PA,     PC_SUM, X_,     X_,     X_,     X_},
                         {PC_AVG, X_,     PC_AVG, X_,     X_,     X_},
                         {PC_MAX, X_,     X_,     X_,     X_,     X_},
                         {PC_MIN, X_,     X_,     X_,     X_,     X_},
                         ROW_X}},
    [PR_MUL] = {{PC_R}, {{PC_R,   PC_SUM, PC_AVG, X_,     X_,     X_},
                         {PC_SUM, X_,     X_,     X_,     X_,     X_},
                         {PC_AVG, X_,     X_,     X_,     X_,     X_},
                         ROW_X, ROW_X, ROW_X}},
    [PR_DIV] = {{PC_R}, {{PC_R,   X_,     X_,     X_,     X_,     X_},
                         {PC_SUM, X_,     X_,     X_,     X_,     X_},
                         {PC_AVG, X_,     X_,     X_,     X_,     X_},
                         ROW_X, ROW_X, ROW_X}},
    [PR_MAXIMUM] = {{PC_R}, {{PC_R,   X_, X_, PC_MAX, PC_MIN, X_},
                             ROW_X, ROW_X,
                             {PC_MAX, X_, X_, PC_MAX, X_,     X_},
                             {PC_MIN, X_, X_, X_,     X_,     X_},
                             ROW_X}},
    [PR_MINIMUM] = {{PC_R}, {{PC_R,   X_, X_, PC_MAX, PC_MIN, X_},
                             ROW_X, ROW_X,
                             {PC_MAX, X_, X_, X_,     X_,     X_},
                             {PC_MIN, X_, X_, X_,     PC_MIN, X_},
                             ROW_X}},
};

typedef struct op_rule {
    rule_family family;
    partial_rule_id partial;
} op_rule;

static const op_rule op_rules[LT_OP_COUNT] = {
#define LT__XX(e, s, n, fam, pr) [LT_OP_##e] = {FAM_##fam, PR_##pr},
    LT_OP_MAP(LT__XX)
#undef LT__XX
};

/* ---- helpers ---------------------------------------------------------------------- */

static int pclass(const lt_placement *p) {
    if (p->kind == LT_PL_REPLICATE) return PC_R;
    if (p->kind != LT_PL_PARTIAL) return -1;
    switch (p->op) {
    case LT_REDOP_SUM: return PC_SUM;
    case LT_REDOP_AVG: return PC_AVG;
    case LT_REDOP_MAX: return PC_MAX;
    case LT_REDOP_MIN: return PC_MIN;
    default: return PC_PROD;
    }
}

static lt_placement from_class(int c) {
    static const lt_redop ops[PC_N] = {LT_REDOP_SUM, LT_REDOP_SUM, LT_REDOP_AVG, LT_REDOP_MAX,
                                       LT_REDOP_MIN, LT_REDOP_PRODUCT};
    return c == PC_R ? lt_replicate() : lt_partial(ops[c]);
}

/* Rule set PYTORCH: the ops whose Partial rule PyTorch 2.15 makes stricter
 * (its pointwise strategies keep no Partial through x + s, s - x or a
 * maximum/minimum with a scalar: it reduces first). Data, one row per op. */
static const struct {
    lt_op_kind op;
    partial_rule_id partial;
} pytorch_partial[] = {
    {LT_OP_ADD_SCALAR, PR_NONE},     {LT_OP_SUB_SCALAR, PR_NONE},
    {LT_OP_RSUB_SCALAR, PR_NONE},    {LT_OP_MAXIMUM_SCALAR, PR_NONE},
    {LT_OP_MINIMUM_SCALAR, PR_NONE},
};

static const partial_rule *prule(const lt__rule_io *io) {
    if (io->rules == LT_OP_RULES_PYTORCH)
        for (size_t j = 0; j < sizeof pytorch_partial / sizeof *pytorch_partial; j++)
            if (pytorch_partial[j].op == io->op) return &partial_rules[pytorch_partial[j].partial];
    return &partial_rules[op_rules[io->op].partial];
}

/* A Partial input k on mesh dim i that the op cannot keep: MIN_COMM
 * all-reduces it (every input Replicate there); PYTORCH reduce-scatters it
 * onto the dim lt__pytorch_scatter_dim picks, when there is one (one input). */
static void resolve_partial(lt__rule_io *io, int k, int i) {
    int pt = io->rules == LT_OP_RULES_PYTORCH && io->nin == 1;
    int d = pt ? lt__pytorch_scatter_dim(io, k, i) : -1;
    if (d < 0) {
        lt__rule_force_replicate(io, i);
        return;
    }
    io->tgt[k][i] = lt_shard(d);
    io->out[i] = lt_shard(d);
}

static void copy_shape(int64_t *dst, const int64_t *src, int n) {
    if (n > 0) memcpy(dst, src, sizeof(int64_t) * (size_t)n);
}

/* A dim as torch wraps it: a 0-d tensor takes 0 and -1 (it counts as one
 * dim there), anything else must be in -n..n-1. */
static lt_status wrap_dim(const char *name, int dim, int n, int *out) {
    if (n > 0) return lt__norm_dim(name, dim, n, out);
    if (dim != 0 && dim != -1)
        return lt__err(LT_INVALID,
                       "%s: dim %d is out of range for a 0-d tensor (only 0 and -1 are)", name,
                       dim);
    *out = 0;
    return LT_OK;
}

static lt_status need_same_dtype(const lt__rule_io *io, int a, int b) {
    if (io->in[a]->dtype != io->in[b]->dtype)
        return lt__err(LT_DTYPE, "%s: input %d is %s but input %d is %s", lt_op_name(io->op), a,
                       lt_dtype_name(io->in[a]->dtype), b, lt_dtype_name(io->in[b]->dtype));
    return LT_OK;
}

/* ---- pointwise (one tensor input) ------------------------------------------------------- */

/* PYTORCH: an input that must change anyway (a Partial the op cannot keep)
 * goes through PyTorch's shardability filter first; one that is valid as it
 * is stays (PyTorch takes it as it is). */
static void pytorch_pointwise_filter(lt__rule_io *io, const partial_rule *pr) {
    for (int i = 0; i < io->mesh->ndim; i++) {
        int c = pclass(&io->in[0]->placements[i]);
        if (c > PC_R && pr->unary[c] < 0) {
            lt__pytorch_shardable(io, 0);
            return;
        }
    }
}

/* PYTORCH: PyTorch's single-dim pointwise strategies (all R; when the input
 * is sharded, a shard of each dim; a row per Partial the op keeps), then its
 * choice (uneven inputs kept as they are). */
static void pytorch_pointwise(lt__rule_io *io, const partial_rule *pr) {
    lt__pt_rule rules[1 + LT_MAX_DIMS + PC_N];
    int n = 0;
    rules[n++] = (lt__pt_rule){{lt_replicate(), lt_replicate()}};
    for (int d = 0; d < io->in[0]->ndim && lt__pytorch_any_shard(io); d++, n++)
        rules[n] = (lt__pt_rule){{lt_shard(d), lt_shard(d)}};
    for (int c = PC_SUM; c < PC_N; c++)
        if (pr->unary[c] >= 0)
            rules[n++] = (lt__pt_rule){{from_class(pr->unary[c]), from_class(c)}};
    lt__pytorch_choose(io, rules, n, 1, NULL);
}

static lt_status rule_pointwise(lt__rule_io *io) {
    const partial_rule *pr = prule(io);
    for (int i = 0; i < io->mesh->ndim && io->rules == LT_OP_RULES_PYTORCH; i++)
        if (io->op == LT_OP_DROPOUT && io->in[0]->placements[i].kind == LT_PL_PARTIAL &&
            lt__numel_sat(io->in[0]->ndim, io->in[0]->shape) > 0) /* empty: no mask drawn */
            lt__pytorch_refuse(io, "the in-place mask of dropout cannot keep the Partial of "
                               "mesh dim %d; redistribute it to Replicate first", i);
    if (io->rules == LT_OP_RULES_PYTORCH) pytorch_pointwise_filter(io, pr);
    for (int i = 0; i < io->mesh->ndim; i++) {
        lt_placement p = io->tgt[0][i]; /* the input's, or what the filter left */
        int c = pclass(&p);
        if (c < 0 || c == PC_R) {
            io->out[i] = p;
        } else if (pr->unary[c] >= 0) {
            io->out[i] = from_class(pr->unary[c]);
        } else {
            resolve_partial(io, 0, i);
        }
    }
    io->out_dtype = io->in[0]->dtype;
    io->out_ndim = io->in[0]->ndim;
    copy_shape(io->out_shape[0], io->in[0]->shape, io->in[0]->ndim);
    if (io->rules == LT_OP_RULES_PYTORCH) pytorch_pointwise(io, pr);
    return LT_OK;
}

/* ---- binary with broadcasting --------------------------------------------------------------- */

/* Input k's placement for output placement `o` (a shard of output dim o.dim):
 * the same shard of k's matching dim, or R where k broadcasts that dim. */
static lt_placement project_out(const lt__rule_io *io, int k, const lt_placement *o) {
    if (!lt_placement_is_shard_like(o)) return *o;
    int j = o->dim - (io->out_ndim - io->in[k]->ndim);
    if (j < 0 || io->in[k]->shape[j] != io->out_shape[0][o->dim]) return lt_replicate();
    return lt__pl_with_dim(o, j);
}

static int is_broadcast_dim(const lt__rule_io *io, int k, int d) {
    return io->in[k]->shape[d] != io->out_shape[0][d + io->out_ndim - io->in[k]->ndim];
}

/* PYTORCH: the Partial rows of PyTorch 2.15's binary strategies, (output,
 * a, b) as placement classes, per op (its _BINARY_ADDITIVE_RULES,
 * _MUL_RULES, _DIV_RULES and monotone binary rules); -1 ends a list. */
static const signed char pytorch_binary_partials[][7][3] = {
    [PR_ADD] = {{PC_SUM, PC_SUM, PC_SUM}, {PC_AVG, PC_AVG, PC_AVG}, {PC_AVG, PC_AVG, PC_R},
                {PC_MAX, PC_MAX, PC_R}, {PC_MIN, PC_MIN, PC_R}, {PC_AVG, PC_R, PC_AVG}, {-1}},
    [PR_SUB] = {{PC_SUM, PC_SUM, PC_SUM}, {PC_AVG, PC_AVG, PC_AVG}, {PC_AVG, PC_AVG, PC_R},
                {PC_MAX, PC_MAX, PC_R}, {PC_MIN, PC_MIN, PC_R}, {PC_AVG, PC_R, PC_AVG}, {-1}},
    [PR_MUL] = {{PC_SUM, PC_SUM, PC_R}, {PC_AVG, PC_AVG, PC_R}, {PC_SUM, PC_R, PC_SUM},
                {PC_AVG, PC_R, PC_AVG}, {-1}},
    [PR_DIV] = {{PC_SUM, PC_SUM, PC_R}, {PC_AVG, PC_AVG, PC_R}, {-1}},
    [PR_MAXIMUM] = {{PC_MAX, PC_MAX, PC_R}, {PC_MAX, PC_R, PC_MAX}, {PC_MIN, PC_MIN, PC_R},
                    {PC_MIN, PC_R, PC_MIN}, {PC_MAX, PC_MAX, PC_MAX}, {-1}},
    [PR_MINIMUM] = {{PC_MAX, PC_MAX, PC_R}, {PC_MAX, PC_R, PC_MAX}, {PC_MIN, PC_MIN, PC_R},
                    {PC_MIN, PC_R, PC_MIN}, {PC_MIN, PC_MIN, PC_MIN}, {-1}},
};

/* PYTORCH: PyTorch's strategy list for one mesh dim (all R; when an input
 * is sharded, a shard of each output dim, R where an operand broadcasts it;
 * the Partial rows), then its choice (lt__pytorch_choose). */
static void pytorch_binary(lt__rule_io *io) {
    lt__pt_rule rules[1 + LT_MAX_DIMS + 7];
    int n = 0, sharded = lt__pytorch_any_shard(io);
    rules[n++] = (lt__pt_rule){{lt_replicate(), lt_replicate(), lt_replicate()}};
    for (int d = 0; d < io->out_ndim && sharded; d++, n++) {
        lt_placement o = lt_shard(d);
        rules[n].p[0] = o;
        for (int k = 0; k < 2; k++) rules[n].p[k + 1] = project_out(io, k, &o);
    }
    const signed char (*pr)[3] = pytorch_binary_partials[op_rules[io->op].partial];
    for (int j = 0; j < 7 && pr[j][0] >= 0; j++, n++)
        for (int q = 0; q < 3; q++) rules[n].p[q] = from_class(pr[j][q]);
    lt__pytorch_choose(io, rules, n, 1, NULL);
}

static lt_status rule_binary(lt__rule_io *io) {
    LT_TRY(need_same_dtype(io, 0, 1));
    lt_status st = lt_broadcast_shapes(io->in[0]->ndim, io->in[0]->shape, io->in[1]->ndim,
                                       io->in[1]->shape, &io->out_ndim, io->out_shape[0]);
    if (st) return lt__err_ctx(st, "%s", lt_op_name(io->op));
    io->out_dtype = io->in[0]->dtype;
    const partial_rule *pr = prule(io);
    int isf = lt_dtype_is_float(io->in[0]->dtype);
    for (int i = 0; i < io->mesh->ndim; i++) {
        lt_placement p[2];
        for (int k = 0; k < 2; k++) {
            p[k] = io->in[k]->placements[i];
            if (lt_placement_is_shard_like(&p[k]) && is_broadcast_dim(io, k, p[k].dim))
                p[k] = io->tgt[k][i] = lt_replicate(); /* a shard of a broadcast dim */
        }
        int off[2] = {io->out_ndim - io->in[0]->ndim, io->out_ndim - io->in[1]->ndim};
        int sa = lt_placement_is_shard_like(&p[0]), sb = lt_placement_is_shard_like(&p[1]);
        if (sa || sb) { /* the shard leads; the other operand follows it */
            int lead = sa ? 0 : 1;
            io->out[i] = lt__pl_with_dim(&p[lead], p[lead].dim + off[lead]);
            int f = 1 - lead;
            lt_placement want = project_out(io, f, &io->out[i]);
            if (!(lt_placement_is_shard_like(&p[f]) && lt_placement_is_shard_like(&want) &&
                  want.dim == p[f].dim && lt__pl_same_shard(&want, &p[f])))
                io->tgt[f][i] = want;
            continue;
        }
        int ca = pclass(&p[0]), cb = pclass(&p[1]);
        int r = pr->binary[ca][cb];
        if (r >= 0) {
            io->out[i] = from_class(r);
        } else if (r == PA && isf) { /* partition the replicated operand */
            io->tgt[ca == PC_R ? 0 : 1][i] = lt_partial(LT_REDOP_SUM);
            io->out[i] = lt_partial(LT_REDOP_SUM);
        } else if (cb != PC_R && pr->binary[ca][PC_R] >= 0) {
            io->tgt[1][i] = lt_replicate();
            io->out[i] = from_class(pr->binary[ca][PC_R]);
        } else if (ca != PC_R && pr->binary[PC_R][cb] >= 0) {
            io->tgt[0][i] = lt_replicate();
            io->out[i] = from_class(pr->binary[PC_R][cb]);
        } else {
            lt__rule_force_replicate(io, i);
        }
    }
    /* an input with a _StridedShard keeps the min-comm choice here (operands
     * aligned to it; PyTorch would replicate both where one must move) */
    if (io->rules == LT_OP_RULES_PYTORCH && !lt__pytorch_has_strided(io)) pytorch_binary(io);
    return LT_OK;
}

/* ---- matmul family -----------------------------------------------------------------------------
 */

enum { ROLE_BATCH, ROLE_M, ROLE_K, ROLE_N, ROLE_BCAST };

typedef struct mm_geom {
    int ia, ib;           /* input indices of a and b */
    int na, nb, nbo;      /* ranks of a, b; batch dims of the output */
    int om, on;           /* output dims of M and N (-1: none) */
} mm_geom;

/* Role of dim d of operand k (0: a, 1: b); *o gets the output dim where there is one. */
static int mm_role(const lt__rule_io *io, const mm_geom *g, int k, int d, int *o) {
    int n = k == 0 ? g->na : g->nb, in = k == 0 ? g->ia : g->ib;
    *o = -1;
    if (n == 1) return ROLE_K;
    if (d == n - 1) return k == 0 ? ROLE_K : (*o = g->on, ROLE_N);
    if (d == n - 2) return k == 0 ? (*o = g->om, ROLE_M) : ROLE_K;
    *o = d + g->nbo - (n - 2);
    return io->in[in]->shape[d] != io->out_shape[0][*o] ? ROLE_BCAST : ROLE_BATCH;
}

/* Operand k's placement for an output batch-dim shard `o` (R where k has no
 * such batch dim or broadcasts it). */
static lt_placement mm_project_batch(const lt__rule_io *io, const mm_geom *g, int k,
                                     const lt_placement *o) {
    int n = k == 0 ? g->na : g->nb, in = k == 0 ? g->ia : g->ib;
    int d = o->dim - (g->nbo - (n - 2));
    if (n < 3 || d < 0 || io->in[in]->shape[d] != io->out_shape[0][o->dim]) return lt_replicate();
    return lt__pl_with_dim(o, d);
}

static lt_status mm_shapes(lt__rule_io *io, mm_geom *g) {
    const char *name = lt_op_name(io->op);
    int na = io->in[g->ia]->ndim, nb = io->in[g->ib]->ndim;
    const int64_t *a = io->in[g->ia]->shape, *b = io->in[g->ib]->shape;
    char s1[160], s2[160];
    int bad = na == 0 || nb == 0;
    if (io->op == LT_OP_MM || io->op == LT_OP_ADDMM) bad |= na != 2 || nb != 2;
    if (io->op == LT_OP_BMM) bad |= na != 3 || nb != 3 || (!bad && a[0] != b[0]);
    if (!bad) bad = a[na - 1] != b[nb == 1 ? 0 : nb - 2];
    if (bad)
        return lt__err(LT_SHAPE, "%s: shapes %s and %s cannot be multiplied", name,
                       lt_shape_format(na, a, s1, sizeof s1),
                       lt_shape_format(nb, b, s2, sizeof s2));
    int nbo = 0;
    int64_t bs[LT_MAX_DIMS];
    lt_status st = lt_broadcast_shapes(na > 2 ? na - 2 : 0, a, nb > 2 ? nb - 2 : 0, b, &nbo, bs);
    if (st) return lt__err_ctx(st, "%s", name);
    g->na = na, g->nb = nb, g->nbo = nbo;
    g->om = na >= 2 ? nbo : -1;
    g->on = nb >= 2 ? nbo + (na >= 2) : -1;
    io->out_ndim = nbo + (na >= 2) + (nb >= 2);
    if (io->out_ndim > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "%s: result has too many dims", name);
    copy_shape(io->out_shape[0], bs, nbo);
    if (g->om >= 0) io->out_shape[0][g->om] = a[na - 2];
    if (g->on >= 0) io->out_shape[0][g->on] = b[nb - 1];
    if (!lt_dtype_is_float(io->in[g->ia]->dtype))
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET, "not supported yet: %s of %s tensors",
                            name, lt_dtype_name(io->in[g->ia]->dtype));
    return LT_OK;
}

static lt_status rule_matmul(lt__rule_io *io) {
    mm_geom g = {0};
    g.ia = io->op == LT_OP_ADDMM ? 1 : 0;
    g.ib = g.ia + 1;
    LT_TRY(need_same_dtype(io, g.ia, g.ib));
    if (io->op == LT_OP_ADDMM) LT_TRY(need_same_dtype(io, 0, 1));
    LT_TRY(mm_shapes(io, &g));
    io->out_dtype = io->in[g.ia]->dtype;
    int idx[2] = {g.ia, g.ib};
    for (int i = 0; i < io->mesh->ndim; i++) {
        lt_placement p[2];
        int role[2] = {-1, -1}, od[2] = {-1, -1};
        for (int k = 0; k < 2; k++) {
            p[k] = io->in[idx[k]]->placements[i];
            if (!lt_placement_is_shard_like(&p[k])) continue;
            role[k] = mm_role(io, &g, k, p[k].dim, &od[k]);
            if (role[k] == ROLE_BCAST) p[k] = io->tgt[idx[k]][i] = lt_replicate(), role[k] = -1;
        }
        if (role[0] >= 0 || role[1] >= 0) { /* the sharded operand leads */
            int lead = role[0] >= 0 ? 0 : 1, f = 1 - lead;
            lt_placement want;
            if (role[lead] == ROLE_BATCH) {
                io->out[i] = lt__pl_with_dim(&p[lead], od[lead]);
                want = mm_project_batch(io, &g, f, &io->out[i]);
            } else if (role[lead] == ROLE_K) {
                io->out[i] = lt_partial(LT_REDOP_SUM);
                int nf = f == 0 ? g.na : g.nb;
                int kdim = f == 0 ? nf - 1 : (nf == 1 ? 0 : nf - 2);
                want = lt__pl_with_dim(&p[lead], kdim);
            } else { /* M or N: the other operand must be whole */
                io->out[i] = lt__pl_with_dim(&p[lead], od[lead]);
                want = lt_replicate();
            }
            if (!(want.kind == p[f].kind &&
                  (!lt_placement_is_shard_like(&want) ||
                   (want.dim == p[f].dim && lt__pl_same_shard(&want, &p[f])))))
                io->tgt[idx[f]][i] = want;
            continue;
        }
        int c[2] = {pclass(&p[0]), pclass(&p[1])};
        for (int k = 0; k < 2; k++) /* only sum/avg commute with a product */
            if (c[k] != PC_R && c[k] != PC_SUM && c[k] != PC_AVG)
                io->tgt[idx[k]][i] = lt_replicate(), c[k] = PC_R;
        if (c[0] != PC_R && c[1] != PC_R) io->tgt[idx[1]][i] = lt_replicate(), c[1] = PC_R;
        io->out[i] = from_class(c[0] != PC_R ? c[0] : c[1]);
    }
    return LT_OK;
}

/* PYTORCH: a row of PyTorch's einsum strategies for mm / bmm / addmm: the
 * output's placement, a's and b's; addmm's bias (input 0) is derived from
 * the output (R where it broadcasts the output dim). */
static void mm_row(const lt__rule_io *io, lt__pt_rule *r, lt_placement o, lt_placement a,
                   lt_placement b) {
    int off = io->op == LT_OP_ADDMM;
    r->p[0] = o, r->p[1 + off] = a, r->p[2 + off] = b;
    if (!off) return;
    r->p[1] = o;
    if (o.kind != LT_PL_SHARD) return;
    int bd = o.dim - (io->out_ndim - io->in[0]->ndim);
    r->p[1] = bd < 0 || io->in[0]->shape[bd] == 1 ? lt_replicate() : lt_shard(bd);
}

/* PYTORCH: mm ("mk,kn->mn"), bmm ("bmk,bkn->bmn"), addmm, and matmul of two
 * matrices or two equal-batch 3-d tensors: PyTorch's einsum strategy rows
 * (all R; when an input is sharded: batch, contraction -> P(sum), M, N; one
 * P(sum) or P(avg) operand against a replicated one), then its choice
 * (uneven shards not allowed); 1 when it chose. A 3-d (or more) times a 2-d
 * matmul: pytorch_matmul_fold. Other matmul shapes keep MIN_COMM. */
static int pytorch_matmul(lt__rule_io *io) {
    int ia = io->op == LT_OP_ADDMM, na = io->in[ia]->ndim, nb = io->in[ia + 1]->ndim;
    if (!((na == 2 && nb == 2) || (na == 3 && nb == 3))) return 0;
    lt__pt_rule rules[12];
    int n = 0, bat = na == 3;
    lt_placement R = lt_replicate();
    mm_row(io, &rules[n++], R, R, R);
    if (lt__pytorch_any_shard(io)) {
        if (bat) mm_row(io, &rules[n++], lt_shard(0), lt_shard(0), lt_shard(0));
        mm_row(io, &rules[n++], lt_partial(LT_REDOP_SUM), lt_shard(bat + 1), lt_shard(bat));
        mm_row(io, &rules[n++], lt_shard(bat), lt_shard(bat), R);
        mm_row(io, &rules[n++], lt_shard(bat + 1), R, lt_shard(bat + 1));
    }
    const lt_redop lin[2] = {LT_REDOP_SUM, LT_REDOP_AVG};
    for (int j = 0; j < 2; j++) {
        mm_row(io, &rules[n++], lt_partial(lin[j]), lt_partial(lin[j]), R);
        mm_row(io, &rules[n++], lt_partial(lin[j]), R, lt_partial(lin[j]));
    }
    return lt__pytorch_choose(io, rules, n, 0, NULL);
}

/* The 3-d (or more) input's own target on mesh dim i for the folded
 * tensor's target t (ft: what the fold view gave, ta: the fold's own target
 * of the input); 0 when it has none (rows sharded anew: min-comm decides). */
static int unfold_target(const lt_placement *t, const lt_placement *ft, const lt_placement *ta,
                         int nd, lt_placement *out) {
    if (lt_placements_equal(t, ft, 1)) *out = *ta;
    else if (t->kind == LT_PL_REPLICATE || t->kind == LT_PL_PARTIAL) *out = *t;
    else if (t->kind == LT_PL_SHARD && t->dim == 1) *out = lt_shard(nd - 1);
    else return 0;
    return 1;
}

/* PYTORCH: matmul of a 3-d (or more) a and a 2-d b as PyTorch runs it: a
 * folded into rows by a view, mm's choice on the folded tensor, the rows
 * unfolded by a view. Taken only when the targets map back onto a's own dims
 * and the min-comm rule at those targets moves nothing and gives the same
 * output (so the result is this library's own); else min-comm's choice. */
static void pytorch_matmul_fold(lt__rule_io *io) {
    const lt_spec *a = io->in[0], *b = io->in[1];
    int nd = a->ndim, nm = io->mesh->ndim;
    if (io->op != LT_OP_MATMUL || io->nin != 2 || nd < 3 || b->ndim != 2 || io->pt_refuses[0])
        return;
    lt_spec fa = *a, fo;
    lt_placement ta[LT_MESH_MAX_DIMS], t3[2][LT_MESH_MAX_DIMS], ut[LT_MESH_MAX_DIMS];
    lt_placement out3[LT_MESH_MAX_DIMS], mt[2][LT_MESH_MAX_DIMS];
    int64_t fs[LT_MAX_DIMS] = {lt__numel_sat(nd - 1, a->shape), a->shape[nd - 1]};
    memset(fa.shape, 0, sizeof fa.shape), fa.ndim = 2, memcpy(fa.shape, fs, sizeof(int64_t) * 2);
    if (!lt__pytorch_view_of(io, a, 2, fs, ta, fa.placements)) return;
    lt__rule_io m = *io, c = *io; /* mm on the folded a; the min-comm check */
    const lt_spec *mi[2] = {&fa, b}, *ci[2];
    memcpy(mt[0], fa.placements, sizeof mt[0]), memcpy(mt[1], b->placements, sizeof mt[1]);
    m.op = LT_OP_MM, m.in = mi, m.tgt = mt, m.out_ndim = 2;
    m.out_shape[0][0] = fs[0], m.out_shape[0][1] = b->shape[1];
    if (!pytorch_matmul(&m)) return;
    for (int i = 0; i < nm; i++)
        if (!unfold_target(&mt[0][i], &fa.placements[i], &ta[i], nd, &t3[0][i])) return;
    memcpy(t3[1], mt[1], sizeof t3[1]);
    fo = fa, fo.shape[1] = b->shape[1], memcpy(fo.placements, m.out, sizeof m.out);
    if (!lt__pytorch_view_of(io, &fo, io->out_ndim, io->out_shape[0], ut, out3) ||
        !lt_placements_equal(ut, m.out, nm))
        return; /* the unfold would move the output: not a PyTorch step here */
    lt_spec ca = *a, cb = *b;
    memcpy(ca.placements, t3[0], sizeof t3[0]), memcpy(cb.placements, t3[1], sizeof t3[1]);
    ci[0] = &ca, ci[1] = &cb;
    lt_placement ct[2][LT_MESH_MAX_DIMS];
    memcpy(ct, t3, sizeof ct);
    c.in = ci, c.tgt = ct, c.rules = LT_OP_RULES_MIN_COMM;
    if (rule_matmul(&c)) {
        lt__err_clear();
        return;
    }
    if (!lt_placements_equal(ct[0], t3[0], nm) || !lt_placements_equal(ct[1], t3[1], nm) ||
        !lt_placements_equal(c.out, out3, nm))
        return;
    memcpy(io->tgt[0], t3[0], sizeof t3[0]), memcpy(io->tgt[1], t3[1], sizeof t3[1]);
    memcpy(io->out, out3, sizeof out3);
}

/* addmm's bias follows the output (after the Partial mix is fixed). */
static void addmm_bias(lt__rule_io *io) {
    for (int i = 0; i < io->mesh->ndim; i++) {
        lt_placement want = project_out(io, 0, &io->out[i]);
        const lt_placement *cur = &io->in[0]->placements[i];
        if (!(want.kind == cur->kind &&
              (want.kind == LT_PL_REPLICATE || (want.kind == LT_PL_PARTIAL && want.op == cur->op) ||
               (lt_placement_is_shard_like(&want) && want.dim == cur->dim &&
                lt__pl_same_shard(&want, cur)))))
            io->tgt[0][i] = want;
        else
            io->tgt[0][i] = *cur;
    }
}

/* ---- reductions -------------------------------------------------------------------------------
 */

/* PYTORCH: PyTorch's reduction strategies (all R; when the input is
 * sharded: a shard of a reduced dim -> the op's Partial, of a kept dim -> the
 * same dim of the output; the Partial row), then its choice. mean: P(avg)
 * rows, uneven targets not allowed, and every reduced dim split evenly
 * (PyTorch's filter), so each rank divides by its own count. */
static void pytorch_reduce(lt__rule_io *io, const int *red, const int *map) {
    int mean = io->op == LT_OP_MEAN, n = 0;
    lt_placement part = mean ? lt_partial(LT_REDOP_AVG) : io->out[0], R = lt_replicate();
    if (!mean) part = lt_partial(io->op == LT_OP_AMAX ? LT_REDOP_MAX
                                 : io->op == LT_OP_AMIN ? LT_REDOP_MIN : LT_REDOP_SUM);
    lt__pt_rule rules[LT_MAX_DIMS + 2];
    rules[n++] = (lt__pt_rule){{R, R}};
    for (int d = 0; d < io->in[0]->ndim && lt__pytorch_any_shard(io); d++, n++)
        rules[n] = (lt__pt_rule){{red[d] ? part : lt_shard(map[d]), lt_shard(d)}};
    rules[n++] = (lt__pt_rule){{part, part}};
    if (!lt__pytorch_choose(io, rules, n, !mean, mean ? red : NULL) || !mean) return;
    for (int i = 0; i < io->mesh->ndim; i++) /* P(avg): each rank's mean of its even shard */
        if (io->tgt[0][i].kind == LT_PL_SHARD && red[io->tgt[0][i].dim])
            io->mean_div /= (double)io->mesh->shape[i];
}

static lt_status rule_reduce(lt__rule_io *io) {
    const char *name = lt_op_name(io->op);
    const lt_op_args *a = io->args;
    int n = io->in[0]->ndim, red[LT_MAX_DIMS] = {0};
    if (a->ndims < 0 || a->ndims > (n > 0 ? n : 1))
        return lt__err(LT_INVALID, "%s: %d dims given for a %d-d tensor", name, a->ndims, n);
    for (int j = 0; j < a->ndims; j++) {
        int d;
        LT_TRY(wrap_dim(name, a->dims[j], n, &d));
        if (red[d]) return lt__err(LT_INVALID, "%s: dim %d is listed twice", name, a->dims[j]);
        red[d] = 1;
        io->kdims[j] = d;
    }
    io->nkdims = n > 0 ? a->ndims : 0; /* 0-d: dim 0 / -1 is the whole (one-element) tensor */
    if (a->ndims == 0)
        for (int d = 0; d < n; d++) red[d] = 1;
    int map[LT_MAX_DIMS], o = 0;
    double count = 1;
    for (int d = 0; d < n; d++) {
        if (red[d]) {
            count *= (double)io->in[0]->shape[d];
            if (a->keepdim) io->out_shape[0][o] = 1, map[d] = o++;
            else map[d] = -1;
        } else {
            io->out_shape[0][o] = io->in[0]->shape[d];
            map[d] = o++;
        }
    }
    io->out_ndim = o;
    io->out_dtype = io->in[0]->dtype;
    io->mean_div = count;
    int is_ext = io->op == LT_OP_AMAX || io->op == LT_OP_AMIN;
    if (is_ext && count == 0)
        return lt__err(LT_INVALID, "%s: reducing over an empty dim (size 0) has no result", name);
    lt_placement reduced = lt_partial(io->op == LT_OP_AMAX ? LT_REDOP_MAX
                                      : io->op == LT_OP_AMIN ? LT_REDOP_MIN : LT_REDOP_SUM);
    const partial_rule *pr = prule(io);
    for (int i = 0; i < io->mesh->ndim; i++) {
        const lt_placement *p = &io->in[0]->placements[i];
        int c = pclass(p);
        if (c < 0) io->out[i] = red[p->dim] ? reduced : lt__pl_with_dim(p, map[p->dim]);
        else if (pr->unary[c] >= 0) io->out[i] = from_class(pr->unary[c]);
        else lt__rule_force_replicate(io, i);
    }
    if (io->rules == LT_OP_RULES_PYTORCH)
        pytorch_reduce(io, red, map);
    return LT_OK;
}

/* ---- softmax ------------------------------------------------------------------------------------
 */

/* PYTORCH: softmax's strategies (all R; when the input is sharded, a shard
 * of any dim but the softmax dim), then PyTorch's choice. */
static void pytorch_softmax(lt__rule_io *io) {
    lt__pt_rule rules[LT_MAX_DIMS + 1];
    int n = 0;
    rules[n++] = (lt__pt_rule){{lt_replicate(), lt_replicate()}};
    for (int d = 0; d < io->in[0]->ndim && lt__pytorch_any_shard(io); d++)
        if (d != io->kdim) rules[n++] = (lt__pt_rule){{lt_shard(d), lt_shard(d)}};
    lt__pytorch_choose(io, rules, n, 1, NULL);
}

static lt_status rule_softmax(lt__rule_io *io) {
    int n = io->in[0]->ndim, d = 0;
    if (n > 0) LT_TRY(lt__norm_dim(lt_op_name(io->op), io->args->dim, n, &d));
    io->kdim = n > 0 ? d : 0;
    for (int i = 0; i < io->mesh->ndim; i++) {
        const lt_placement *p = &io->in[0]->placements[i];
        if (p->kind == LT_PL_PARTIAL || (lt_placement_is_shard_like(p) && p->dim == d))
            lt__rule_force_replicate(io, i); /* the whole row is needed */
        else
            io->out[i] = *p;
    }
    io->out_dtype = io->in[0]->dtype;
    io->out_ndim = n;
    copy_shape(io->out_shape[0], io->in[0]->shape, n);
    if (io->rules == LT_OP_RULES_PYTORCH && n > 0)
        pytorch_softmax(io);
    return LT_OK;
}

/* ---- transpose, permute, unsqueeze, squeeze ----------------------------------------------------
 */

/* squeeze (torch.squeeze): the size-1 dims among those named go — `dim`
 * when dim_set, else `dims` when ndims > 0, else every dim. Sizes are the
 * GLOBAL ones: a rank whose shard of a size-3 dim holds 1 row (or none)
 * keeps that dim. Fills drop[n]; the dropped dims, ascending, go to kdims. */
static lt_status squeeze_dims(lt__rule_io *io, int *drop) {
    const char *name = lt_op_name(io->op);
    const lt_op_args *a = io->args;
    int n = io->in[0]->ndim, named[LT_MAX_DIMS] = {0}, d;
    if (a->dim_set && a->ndims > 0)
        return lt__err(LT_INVALID, "%s: give dim or dims, not both", name);
    if (a->ndims < 0 || a->ndims > (n > 0 ? n : 1))
        return lt__err(LT_INVALID, "%s: %d dims given for a %d-d tensor", name, a->ndims, n);
    if (a->dim_set) {
        LT_TRY(wrap_dim(name, a->dim, n, &d));
        named[d] = 1;
    }
    for (int j = 0; j < a->ndims; j++) {
        LT_TRY(wrap_dim(name, a->dims[j], n, &d));
        if (named[d]) return lt__err(LT_INVALID, "%s: dim %d is listed twice", name, a->dims[j]);
        named[d] = 1;
    }
    io->nkdims = 0;
    for (d = 0; d < n; d++) {
        drop[d] = (named[d] || (!a->dim_set && a->ndims == 0)) && io->in[0]->shape[d] == 1;
        if (drop[d]) io->kdims[io->nkdims++] = d;
    }
    return LT_OK;
}

static lt_status rule_permute(lt__rule_io *io) {
    const char *name = lt_op_name(io->op);
    const lt_op_args *a = io->args;
    int n = io->in[0]->ndim, map[LT_MAX_DIMS], on = n,
        drop[LT_MAX_DIMS] = {0}; /* map: input dim -> output dim */
    for (int d = 0; d < n; d++) map[d] = d;
    if (io->op == LT_OP_TRANSPOSE) { /* a 0-d tensor: transpose(0, -1) is itself */
        int d0, d1;
        LT_TRY(wrap_dim(name, a->dim, n, &d0));
        LT_TRY(wrap_dim(name, a->dim2, n, &d1));
        if (n > 0) map[d0] = d1, map[d1] = d0;
        io->kdim = d0, io->kdim2 = d1;
    } else if (io->op == LT_OP_PERMUTE) {
        int seen[LT_MAX_DIMS] = {0};
        if (a->ndims != n)
            return lt__err(LT_INVALID, "%s: %d dims given for a %d-d tensor", name, a->ndims, n);
        for (int j = 0; j < n; j++) {
            int d;
            LT_TRY(lt__norm_dim(name, a->dims[j], n, &d));
            if (seen[d]) return lt__err(LT_INVALID, "%s: dim %d is repeated", name, a->dims[j]);
            seen[d] = 1;
            map[d] = j;
            io->kdims[j] = d;
        }
        io->nkdims = n;
    } else if (io->op == LT_OP_UNSQUEEZE) {
        int d;
        if (n + 1 > LT_MAX_DIMS) return lt__err(LT_INVALID, "%s: too many dims", name);
        LT_TRY(lt__norm_dim(name, a->dim, n + 1, &d));
        for (int j = 0; j < n; j++) map[j] = j < d ? j : j + 1;
        on = n + 1;
        io->kdim = d;
    } else {
        LT_TRY(squeeze_dims(io, drop));
        on = 0;
        for (int d = 0; d < n; d++) map[d] = drop[d] ? -1 : on++;
    }
    io->out_ndim = on;
    for (int d = 0; d < n; d++)
        if (!drop[d]) io->out_shape[0][map[d]] = io->in[0]->shape[d];
    if (io->op == LT_OP_UNSQUEEZE) io->out_shape[0][io->kdim] = 1;
    io->out_dtype = io->in[0]->dtype;
    for (int i = 0; i < io->mesh->ndim; i++) {
        const lt_placement *p = &io->in[0]->placements[i];
        if (!lt_placement_is_shard_like(p)) io->out[i] = *p;
        else if (drop[p->dim]) {
            lt__rule_force_replicate(io, i); /* a shard of a dropped size-1 dim */
            if (io->rules == LT_OP_RULES_PYTORCH)
                lt__pytorch_refuse(io, "%s removes dim %d, sharded on mesh dim %d; redistribute "
                                   "that mesh dim to Replicate first", name, p->dim, i);
        }
        else io->out[i] = lt__pl_with_dim(p, map[p->dim]);
    }
    return LT_OK;
}

/* ---- cat
 * -------------------------------------------------------------------------------------------- */

/* PYTORCH: cat's strategies for up to 3 inputs (all R; when an input is
 * sharded, a shard of any dim but the cat dim, for every input; each
 * Partial kind passed through; a legacy empty input, shape (0), Replicate in
 * every row), then PyTorch's choice (no uneven shards). */
static void pytorch_cat(lt__rule_io *io) {
    static const lt_redop pass[4] = {LT_REDOP_SUM, LT_REDOP_AVG, LT_REDOP_MIN, LT_REDOP_MAX};
    lt__pt_rule rules[LT_MAX_DIMS + 5];
    int n = 0;
    rules[n++] = (lt__pt_rule){{lt_replicate(), lt_replicate(), lt_replicate(), lt_replicate()}};
    for (int d = 0; d < io->out_ndim && lt__pytorch_any_shard(io); d++) {
        if (d == io->kdim) continue;
        for (int q = 0; q < 4; q++) rules[n].p[q] = lt_shard(d);
        n++;
    }
    for (int j = 0; j < 4; j++, n++)
        for (int q = 0; q < 4; q++) rules[n].p[q] = lt_partial(pass[j]);
    for (int k = 0; k < io->nin; k++) /* a legacy empty input (shape (0)) stays Replicate */
        if (io->in[k]->ndim == 1 && io->in[k]->shape[0] == 0 && io->out_ndim > 0 &&
            io->out_shape[0][0] > 0)
            for (int r = 0; r < n; r++) rules[r].p[k + 1] = lt_replicate();
    lt__pytorch_choose(io, rules, n, 0, NULL);
}

static lt_status rule_cat(lt__rule_io *io) {
    const char *name = lt_op_name(io->op);
    int n = io->in[0]->ndim, d;
    if (io->nin < 1) return lt__err(LT_INVALID, "%s: no inputs", name);
    if (n == 0)
        return lt__err(LT_INVALID, "%s: zero-dimensional tensors cannot be concatenated", name);
    LT_TRY(lt__norm_dim(name, io->args->dim, n, &d));
    io->kdim = d;
    copy_shape(io->out_shape[0], io->in[0]->shape, n);
    for (int k = 1; k < io->nin; k++) {
        LT_TRY(need_same_dtype(io, 0, k));
        int ok = io->in[k]->ndim == n;
        for (int j = 0; ok && j < n; j++) ok = j == d || io->in[k]->shape[j] == io->in[0]->shape[j];
        if (!ok) {
            char s1[160], s2[160];
            return lt__err(
                LT_SHAPE, "%s: input %d has shape %s but input 0 has %s (only dim %d may differ)",
                name, k, lt_shape_format(io->in[k]->ndim, io->in[k]->shape, s1, sizeof s1),
                lt_shape_format(n, io->in[0]->shape, s2, sizeof s2), d);
        }
        if (lt__add_i64(io->out_shape[0][d], io->in[k]->shape[d], &io->out_shape[0][d]))
            return lt__err(LT_OVERFLOW, "%s: the size of dim %d overflows 64 bits", name, d);
    }
    io->out_ndim = n;
    io->out_dtype = io->in[0]->dtype;
    int isf = lt_dtype_is_float(io->in[0]->dtype);
    for (int i = 0; i < io->mesh->ndim; i++) {
        int lead = -1, pc = PC_R, mixed = 0, has_r = 0;
        for (int k = 0; k < io->nin; k++) {
            const lt_placement *p = &io->in[k]->placements[i];
            if (lt_placement_is_shard_like(p) && p->dim == d)
                io->tgt[k][i] = lt_replicate(); /* cat dim: whole */
            else if (lt_placement_is_shard_like(p) && lead < 0) lead = k;
        }
        if (lead >= 0) { /* every input follows the first shard of another dim */
            io->out[i] = io->in[lead]->placements[i];
            for (int k = 0; k < io->nin; k++) {
                const lt_placement *p = &io->in[k]->placements[i];
                if (!(lt_placement_is_shard_like(p) && p->dim == io->out[i].dim &&
                      lt__pl_same_shard(p, &io->out[i])))
                    io->tgt[k][i] = io->out[i];
            }
            continue;
        }
        for (int k = 0; k < io->nin; k++) {
            int c = pclass(&io->tgt[k][i]);
            if (c == PC_R) has_r = 1;
            else if (pc == PC_R) pc = c;
            else if (c != pc) mixed = 1;
        }
        if (mixed || pc == PC_PROD || (pc == PC_SUM && has_r && !isf)) {
            lt__rule_force_replicate(io, i);
        } else if (pc == PC_SUM && has_r) { /* replicated inputs partition */
            for (int k = 0; k < io->nin; k++) io->tgt[k][i] = lt_partial(LT_REDOP_SUM);
            io->out[i] = lt_partial(LT_REDOP_SUM);
        } else { /* avg/max/min: a replicated value is already a valid contribution */
            io->out[i] = from_class(pc);
        }
    }
    if (io->rules == LT_OP_RULES_PYTORCH && io->nin <= 3)
        pytorch_cat(io);
    return LT_OK;
}

/* ---- split, chunk
 * ------------------------------------------------------------------------------------- */

/* PYTORCH: split's (and chunk's) strategies (all R; when the input is
 * sharded, a shard of any dim but the split dim; each Partial kind passed
 * through; every output alike), then PyTorch's choice (no uneven shards). */
static void pytorch_split(lt__rule_io *io) {
    static const lt_redop pass[4] = {LT_REDOP_SUM, LT_REDOP_AVG, LT_REDOP_MIN, LT_REDOP_MAX};
    lt__pt_rule rules[LT_MAX_DIMS + 5];
    int n = 0;
    rules[n++] = (lt__pt_rule){{lt_replicate(), lt_replicate()}};
    for (int d = 0; d < io->in[0]->ndim && lt__pytorch_any_shard(io); d++)
        if (d != io->kdim) rules[n++] = (lt__pt_rule){{lt_shard(d), lt_shard(d)}};
    for (int j = 0; j < 4; j++, n++)
        rules[n] = (lt__pt_rule){{lt_partial(pass[j]), lt_partial(pass[j])}};
    lt__pytorch_choose(io, rules, n, 0, NULL);
}

static lt_status rule_split(lt__rule_io *io) {
    const char *name = lt_op_name(io->op);
    const lt_op_args *a = io->args;
    int n = io->in[0]->ndim, d;
    if (n == 0) return lt__err(LT_INVALID, "%s: a 0-d tensor cannot be split", name);
    LT_TRY(lt__norm_dim(name, a->dim, n, &d));
    int64_t len = io->in[0]->shape[d], np = 0;
    if (io->op == LT_OP_SPLIT && a->nsizes > 0) {
        int64_t tot = 0;
        for (int j = 0; j < a->nsizes; j++) {
            if (a->sizes[j] < 0)
                return lt__err(LT_INVALID, "%s: size %lld is negative", name,
                               (long long)a->sizes[j]);
            if (lt__add_i64(tot, a->sizes[j], &tot))
                return lt__err(LT_SHAPE,
                               "%s: sizes sum to more than 64 bits hold but dim %d has %lld", name,
                               d, (long long)len);
        }
        if (tot != len)
            return lt__err(LT_SHAPE, "%s: sizes sum to %lld but dim %d has %lld", name,
                           (long long)tot, d, (long long)len);
        np = a->nsizes;
        memcpy(io->split_sizes, a->sizes, sizeof(int64_t) * (size_t)np);
    } else {
        int64_t ps;
        if (io->op == LT_OP_SPLIT) {
            if (a->split_size <= 0)
                return lt__err(LT_INVALID, "%s: split_size must be > 0, got %lld", name,
                               (long long)a->split_size);
            ps = a->split_size;
        } else {
            if (a->chunks <= 0)
                return lt__err(LT_INVALID, "%s: chunks must be > 0, got %d", name, a->chunks);
            ps = len ? (len - 1) / a->chunks + 1 : 0; /* ceil, without overflow */
        }
        if (ps == 0) { /* empty dim: torch.chunk gives `chunks` empty pieces */
            np = a->chunks;
            if (np <= LT_OP_MAX_OUTPUTS) for (int64_t j = 0; j < np; j++) io->split_sizes[j] = 0;
        } else {
            np = len == 0 ? 1 : (len - 1) / ps + 1;
            if (np <= LT_OP_MAX_OUTPUTS)
                for (int64_t j = 0; j < np; j++)
                    io->split_sizes[j] = len - j * ps < ps ? len - j * ps : ps;
        }
    }
    if (np > LT_OP_MAX_OUTPUTS)
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: %s into %lld pieces (at most %d)", name,
                            (long long)np, LT_OP_MAX_OUTPUTS);
    io->nout = (int)np;
    io->kdim = d;
    io->out_ndim = n;
    io->out_dtype = io->in[0]->dtype;
    for (int j = 0; j < io->nout; j++) {
        copy_shape(io->out_shape[j], io->in[0]->shape, n);
        io->out_shape[j][d] = io->split_sizes[j];
    }
    for (int i = 0; i < io->mesh->ndim; i++) {
        const lt_placement *p = &io->in[0]->placements[i];
        if (lt_placement_is_shard_like(p) && p->dim == d) lt__rule_force_replicate(io, i);
        else io->out[i] = *p;
    }
    if (io->rules == LT_OP_RULES_PYTORCH) pytorch_split(io);
    return LT_OK;
}

/* ---- embedding
 * ----------------------------------------------------------------------------------------- */

/* PYTORCH: embedding's strategies (all R; the embedding dim sharded; the
 * vocabulary sharded -> PyTorch's masked partial, the indices taking a
 * Partial view that costs nothing; an index dim sharded), then its choice
 * (no uneven shards). The masked partial is this rule's masked lookup with
 * whole indices. */
static void pytorch_embedding(lt__rule_io *io) {
    int ni = io->in[1]->ndim, n = 0;
    lt_placement R = lt_replicate(), P = lt_partial(LT_REDOP_SUM);
    lt__pt_rule rules[LT_MAX_DIMS + 3];
    rules[n++] = (lt__pt_rule){{R, R, R}};
    rules[n++] = (lt__pt_rule){{lt_shard(ni), lt_shard(1), R}};
    rules[n++] = (lt__pt_rule){{P, lt_shard(0), P}};
    for (int d = 0; d < ni; d++) rules[n++] = (lt__pt_rule){{lt_shard(d), R, lt_shard(d)}};
    if (!lt__pytorch_choose(io, rules, n, 0, NULL)) return;
    io->masked = 0;
    for (int i = 0; i < io->mesh->ndim; i++) {
        if (io->tgt[0][i].kind != LT_PL_SHARD || io->tgt[0][i].dim != 0) continue;
        io->masked = 1;
        io->tgt[1][i] = R;
    }
}

static lt_status rule_embedding(lt__rule_io *io) {
    const char *name = lt_op_name(io->op);
    if (io->in[0]->ndim != 2)
        return lt__err(LT_SHAPE, "%s: weight must be 2-D, got %d-D", name, io->in[0]->ndim);
    if (io->in[1]->dtype != LT_I32 && io->in[1]->dtype != LT_I64)
        return lt__err(LT_DTYPE, "%s: indices must be i32 or i64, got %s", name,
                       lt_dtype_name(io->in[1]->dtype));
    int ni = io->in[1]->ndim;
    if (ni + 1 > LT_MAX_DIMS) return lt__err(LT_INVALID, "%s: indices have too many dims", name);
    copy_shape(io->out_shape[0], io->in[1]->shape, ni);
    io->out_shape[0][ni] = io->in[0]->shape[1];
    io->out_ndim = ni + 1;
    io->out_dtype = io->in[0]->dtype;
    io->masked = 0;
    for (int i = 0; i < io->mesh->ndim; i++) {
        lt_placement w = io->in[0]->placements[i], x = io->in[1]->placements[i];
        int wc = pclass(&w);
        if ((w.kind == LT_PL_STRIDED && w.dim == 0) || wc == PC_PROD)
            w = io->tgt[0][i] = lt_replicate(), wc = PC_R;
        if (x.kind == LT_PL_PARTIAL) x = io->tgt[1][i] = lt_replicate();
        if (w.kind == LT_PL_SHARD && w.dim == 0) { /* vocab-sharded: masked lookup, summed */
            io->out[i] = lt_partial(LT_REDOP_SUM);
            io->masked = 1;
            if (x.kind != LT_PL_REPLICATE) io->tgt[1][i] = lt_replicate();
        } else if (lt_placement_is_shard_like(&w)) { /* embedding dim sharded */
            io->out[i] = lt__pl_with_dim(&w, ni);
            if (x.kind != LT_PL_REPLICATE) io->tgt[1][i] = lt_replicate();
        } else if (wc != PC_R) { /* a Partial table: lookups stay partial */
            io->out[i] = w;
            if (x.kind != LT_PL_REPLICATE) io->tgt[1][i] = lt_replicate();
        } else {
            io->out[i] = x; /* R weight: the output follows the indices */
        }
    }
    /* PyTorch's embedding rows name Shard itself (no placeholders): a
     * _StridedShard input keeps the min-comm choice */
    if (io->rules == LT_OP_RULES_PYTORCH && !lt__pytorch_has_strided(io)) pytorch_embedding(io);
    return LT_OK;
}

/* ---- random
 * -------------------------------------------------------------------------------------------- */

static lt_status rule_random(lt__rule_io *io) {
    const lt_op_args *a = io->args;
    const char *name = lt_op_name(io->op);
    if (!lt_dtype_is_float(a->dtype))
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET, "not supported yet: %s of %s", name,
                            lt_dtype_name(a->dtype));
    if (a->shape_ndim < 0 || a->shape_ndim > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "%s: %d dims", name, a->shape_ndim);
    for (int d = 0; d < a->shape_ndim; d++)
        if (a->shape[d] < 0)
            return lt__err(LT_INVALID, "%s: size %lld of dim %d", name, (long long)a->shape[d], d);
    io->out_ndim = a->shape_ndim;
    copy_shape(io->out_shape[0], a->shape, a->shape_ndim);
    io->out_dtype = a->dtype;
    lt_status st = lt_placements_check(io->mesh, a->shape_ndim, a->placements, a->np, io->out);
    return st ? lt__err_ctx(st, "%s", name) : LT_OK;
}

/* ---- dispatch
 * ------------------------------------------------------------------------------------------- */

/* The output may mix Partial ops only as {sum, avg}; later mesh dims that
 * break that are reduced (every input whole on that mesh dim). */
static void fix_partial_mix(lt__rule_io *io) {
    int first = -1;
    for (int i = 0; i < io->mesh->ndim; i++) {
        if (io->out[i].kind != LT_PL_PARTIAL) continue;
        if (first < 0) {
            first = io->out[i].op;
            continue;
        }
        int q = io->out[i].op;
        int ok = q == first || ((q == LT_REDOP_SUM || q == LT_REDOP_AVG) &&
                                (first == LT_REDOP_SUM || first == LT_REDOP_AVG));
        if (!ok) lt__rule_force_replicate(io, i);
    }
}

lt_status lt__rule_propagate(lt__rule_io *io) {
    io->nout = 1;
    lt_status st;
    switch (op_rules[io->op].family) {
    case FAM_POINTWISE: st = rule_pointwise(io); break;
    case FAM_BINARY: st = rule_binary(io); break;
    case FAM_MATMUL:
        st = rule_matmul(io);
        if (!st && io->rules == LT_OP_RULES_PYTORCH) st = lt__pytorch_matmul_fold(io);
        if (!st && io->rules == LT_OP_RULES_PYTORCH) pytorch_matmul(io), pytorch_matmul_fold(io);
        break;
    case FAM_REDUCE: st = rule_reduce(io); break;
    case FAM_SOFTMAX: st = rule_softmax(io); break;
    case FAM_VIEW: st = lt__rule_view(io); break;
    case FAM_PERMUTE: st = rule_permute(io); break;
    case FAM_CAT: st = rule_cat(io); break;
    case FAM_SPLIT: st = rule_split(io); break;
    case FAM_EMBEDDING: st = rule_embedding(io); break;
    case FAM_RANDOM: st = rule_random(io); break;
    default:
        st = lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                          "not supported yet: %s has no sharding rule", lt_op_name(io->op));
    }
    if (st) return st;
    if (op_rules[io->op].family != FAM_RANDOM) fix_partial_mix(io);
    if (io->op == LT_OP_ADDMM) addmm_bias(io);
    return LT_OK;
}
