/* localtensor/ops/ops.c — op dispatch: the propagation cache, plans, input
 * redistributes, per-rank kernels, and wrapping the results.
 *
 * Hot path (warm cache): serialise the static part of the call (op, mesh
 * shape, every input's dtype, shape and placements, the static arguments)
 * into a small key, compare it with this thread's last hit for the op (a
 * memo; else hash it and look it up), run the kernels, and wrap the
 * shards — the plan carries every rank's output shape so nothing is
 * re-derived. Plans are immutable and refcounted (atomically); the cache is
 * the library's one cache module (kernels/cache_impl.h), process-wide.
 */
#include "kernels/alloc.h"
#include "kernels/memlimit_impl.h"
#include "kernels/pool_impl.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/layout.h"
#include "localtensor/ops.h"
#include "localtensor/ops/ops_impl.h"
#include "localtensor/reference.h"
#include "localtensor/ragged_impl.h"
#include "localtensor/spec_impl.h"

/* ---- plans --------------------------------------------------------------------------- */

void lt_op_plan_free(lt_op_plan *p) {
    lt__op_plan_x *px = lt__op_plan_x_of(p);
    if (!p || __atomic_sub_fetch(&px->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    lt__free(p->in_target);
    lt__free(p->in_redistribute);
    lt__free(p->out_shape);
    lt__free(px->local_shapes);
    lt__free(px->row_offset);
    lt__free(px->split_sizes);
    lt__free(p);
}

static int pls_equal(const lt_placement *a, const lt_placement *b, int n) {
    for (int i = 0; i < n; i++)
        if (!lt_placement_equal(&a[i], &b[i])) return 0;
    return 1;
}

static void describe(lt_op_plan *p, const lt_mesh *m, const lt_spec *const *in) {
    char buf[160];
    size_t used = 0;
    p->why[0] = 0;
    for (int k = 0; k < p->nin && used < sizeof p->why; k++) {
        lt_placements_format(in[k]->placements, m->ndim, buf, sizeof buf);
        int w = snprintf(p->why + used, sizeof p->why - used, "%s%s", k ? " x " : "", buf);
        if (w < 0) return;
        used += (size_t)w;
        if (p->in_redistribute[k] && used < sizeof p->why) {
            lt_placements_format(p->in_target[k], m->ndim, buf, sizeof buf);
            w = snprintf(p->why + used, sizeof p->why - used, "=>%s", buf);
            if (w < 0) return;
            used += (size_t)w;
        }
    }
    if (used < sizeof p->why) {
        lt_placements_format(p->out_pl, m->ndim, buf, sizeof buf);
        snprintf(p->why + used, sizeof p->why - used, " -> %s", buf);
    }
}

/* The first mesh dim at which a layout stops existing (placements of the
 * mesh dims before it kept, the later ones Replicate), or -1. A split that
 * does not fit the piece it is nested in (S(0,[8,4]) on mesh dim 1 under an
 * S(0) on mesh dim 0 of a dim of 12: pieces of 6) fails at its mesh dim.
 * Loose on purpose: it probes placement lists that are not layouts, which is
 * what the base layout functions (layout.h) are for. */
static int failing_mesh_dim(const lt_mesh *m, int ndim, const int64_t *shape,
                            const lt_placement *tgt) {
    lt_placement q[LT_MESH_MAX_DIMS];
    for (int i = 0; i < m->ndim; i++) q[i] = lt_replicate();
    for (int i = 0; i < m->ndim; i++) {
        q[i] = tgt[i];
        if (lt_layout_check(m, ndim, shape, q)) return i;
    }
    return -1;
}

/* Makes the rule see Replicate on mesh dim i (the inputs really are
 * redistributed to whatever the rule then asks): first for the inputs that
 * hold a non-chunk split there (the split that could not nest), else for
 * every input sharded there. 0 when nothing was left to change. */
static int relax(lt_spec *view, int nin, int i) {
    int changed = 0;
    for (int pass = 0; pass < 2 && !changed; pass++)
        for (int k = 0; k < nin; k++) {
            lt_placement *q = &view[k].placements[i];
            int hit = pass ? lt_placement_is_shard_like(q)
                           : q->kind == LT_PL_SHARD && q->rule.kind != LT_SPLIT_CHUNK;
            if (hit) *q = lt_replicate(), changed = 1;
        }
    return changed;
}

/* Runs the rule and derives everything the executor needs. in: checked specs
 * on `mesh`. When the rule asks for a layout that cannot exist (a split
 * nested where it does not fit), it runs again seeing the inputs it followed
 * as Replicate on that mesh dim, until every layout exists; each round turns
 * at least one shard into Replicate, so at most nin * mesh dims rounds. What
 * the rule then sees is no checked spec (lt__spec_unchecked); what it asks
 * for is checked here (lt_spec_init). */
/* A new op plan with room for nin inputs' targets; NULL when out of
 * memory. */
static lt_op_plan *op_plan_new(int nin) {
    lt_op_plan *p = lt__calloc(1, sizeof(lt__op_plan_x)); /* with its private part */
    lt__op_plan_x *px = lt__op_plan_x_of(p);
    if (!p) return NULL;
    px->refs = 1;
    px->out_bytes = UINT64_MAX;   /* plan_shapes counts them */
    if (nin > 0) {
        p->in_target = lt__calloc((size_t)nin, sizeof *p->in_target);
        p->in_redistribute = lt__calloc((size_t)nin, sizeof *p->in_redistribute);
    }
    if (nin > 0 && (!p->in_target || !p->in_redistribute)) {
        lt_op_plan_free(p);
        return NULL;
    }
    return p;
}

/* Why a rule's choice does not stand: the text (empty when the rule
 * itself failed), its sub-code, and the mesh dim to relax (-1: none). */
typedef struct rule_why {
    char text[512];
    lt_errcode code;
    int bad_dim;
} rule_why;

/* The inputs' targets that differ from what they hold are made real
 * layouts (a target that is none: why). */
static lt_status check_targets(lt_op_plan *p, const lt_mesh *mesh, int nin,
                               const lt_spec *const *in, rule_why *w) {
    for (int k = 0; k < nin; k++) {
        p->in_redistribute[k] = !pls_equal(p->in_target[k], in[k]->placements, mesh->ndim);
        if (!p->in_redistribute[k]) continue;
        lt_spec t; /* the target: input k's tensor under the placements the rule asks for */
        lt_status st = lt_spec_init(mesh, in[k]->dtype, in[k]->ndim, in[k]->shape, p->in_target[k],
                                    mesh->ndim, &t);
        if (!st) {
            memcpy(p->in_target[k], t.placements, sizeof(lt_placement) * (size_t)mesh->ndim);
            continue;
        }
        snprintf(w->text, sizeof w->text,
                 "not supported yet: %s: input %d would need a layout that does not exist (%s)",
                 lt_op_name(p->op), k, lt_errmsg());
        w->code = LT_ERR_NOT_YET;
        w->bad_dim = failing_mesh_dim(mesh, in[k]->ndim, in[k]->shape, p->in_target[k]);
        return st;
    }
    return LT_OK;
}

/* The outputs: loose checks, not lt_spec_init, whose element count check
 * propagation has never made (an mm of (n, 0) by (0, n) has inputs of no
 * elements and an output of n * n; the run refuses it, out_room). */
static lt_status check_outputs(lt_op_plan *p, const lt_mesh *mesh, const lt__rule_io *io,
                               rule_why *w) {
    int bad_j = -1;
    lt_status st = lt_placements_check(mesh, p->out_ndim, io->out, mesh->ndim, p->out_pl);
    for (int j = 0; j < p->nout && !st; j++)
        if ((st = lt_layout_check(mesh, p->out_ndim, io->out_shape[j], p->out_pl))) bad_j = j;
    if (!st) return LT_OK;
    snprintf(w->text, sizeof w->text,
             "not supported yet: %s: the output layout does not exist (%s)", lt_op_name(p->op),
             lt_errmsg());
    w->code = LT_ERR_NO_LAYOUT;   /* the rule is wrong, not missing */
    if (bad_j >= 0)
        w->bad_dim = failing_mesh_dim(mesh, p->out_ndim, io->out_shape[bad_j], p->out_pl);
    return st;
}

/* One propagation of the rule over the inputs as seen (seen[nin]), into p
 * and io; a choice that does not stand says why in w. */
static lt_status propagate_once(lt_op_plan *p, lt__rule_io *io, lt_op_rules rules,
                                const lt_mesh *mesh, int nin, const lt_spec *const *in,
                                const lt_spec **seen, const lt_op_args *args, rule_why *w) {
    lt__op_plan_x *px = lt__op_plan_x_of(p);
    memset(io, 0, sizeof *io);
    memset(w, 0, sizeof *w);
    w->bad_dim = -1;
    for (int k = 0; k < nin; k++)
        memcpy(p->in_target[k], seen[k]->placements, sizeof(lt_placement) * (size_t)mesh->ndim);
    io->op = p->op, io->mesh = mesh, io->nin = nin, io->in = seen, io->args = args,
    io->tgt = p->in_target;
    io->rules = rules;
    lt_status st = lt__rule_propagate(io);
    p->nin = nin, p->nout = io->nout, p->out_dtype = io->out_dtype;
    p->out_ndim = io->out_ndim, px->mesh = *mesh, p->rules = rules;
    memcpy(p->pytorch_refuses, io->pt_refuses, sizeof p->pytorch_refuses);
    px->mean_div = io->mean_div, px->masked = io->masked;
    px->nkdims = io->nkdims, px->kdim = io->kdim,
    px->kdim2 = io->kdim2;
    memcpy(px->kdims, io->kdims, sizeof px->kdims);
    if (!st) st = check_targets(p, mesh, nin, in, w);
    if (!st) st = check_outputs(p, mesh, io, w);
    return st;
}

/* The rule's choice, relaxed where it does not stand: the inputs the rule
 * followed on the failing mesh dim count as Replicate there, until the
 * choice stands or nothing is left to relax. */
static lt_status propagate(lt_op_plan *p, lt__rule_io *io, lt_op_rules rules, const lt_mesh *mesh,
                           int nin, const lt_spec *const *in, const lt_op_args *args) {
    lt_spec *view = NULL; /* (nin) what the rule sees once relaxed (unchecked) */
    const lt_spec *seen[LT_OP_MAX_INPUTS];
    for (int k = 0; k < nin; k++) seen[k] = in[k];
    lt_status st;
    rule_why w;
    for (;;) {
        st = propagate_once(p, io, rules, mesh, nin, in, seen, args, &w);
        if (!st || !w.text[0]) break; /* done, or the rule's own error */
        if (w.bad_dim < 0 || nin == 0) break;
        if (!view && !(view = lt__malloc(sizeof *view * (size_t)nin))) {
            lt__free(view);
            return lt__err(LT_NOMEM, "out of memory");
        }
        if (seen[0] != &view[0])
            for (int k = 0; k < nin; k++)
                view[k] = lt__spec_unchecked(in[k], in[k]->placements), seen[k] = &view[k];
        if (!relax(view, nin, w.bad_dim)) break;
    }
    lt__free(view);
    if (!st || !w.text[0]) return st;
    return lt__err_code(LT_UNSUPPORTED, w.code, "%s", w.text);
}

/* The bytes of every rank's shard of every output (out_room's need), or
 * UINT64_MAX when a shard's size overflows (out_room then says which). */
static uint64_t out_bytes(const lt_op_plan *p) {
    lt__op_plan_x *px = lt__op_plan_x_of(p);
    size_t W = (size_t)px->mesh.world, nd = (size_t)(p->out_ndim > 0 ? p->out_ndim : 1);
    size_t es = lt_dtype_size(p->out_dtype);
    uint64_t need = 0;
    for (size_t i = 0; i < (size_t)p->nout * W; i++) {
        int64_t n;
        if (lt__numel_checked(p->out_ndim, px->local_shapes + i * nd, es, &n)) {
            lt__err_clear();
            return UINT64_MAX;
        }
        need = lt__add_sat(need, (uint64_t)n * es);
    }
    return need == UINT64_MAX ? UINT64_MAX - 1 : need;
}

/* The outputs' global and local shapes, and the embedding's first vocab
 * row of every rank. */
static lt_status plan_shapes(lt_op_plan *p, const lt__rule_io *io, const lt_mesh *mesh,
                             const lt_spec *const *in) {
    lt__op_plan_x *px = lt__op_plan_x_of(p);
    size_t W = (size_t)mesh->world, nd = (size_t)(p->out_ndim > 0 ? p->out_ndim : 1);
    p->out_shape = lt__calloc((size_t)p->nout, sizeof *p->out_shape);
    px->local_shapes = lt__malloc(sizeof(int64_t) * (size_t)p->nout * W * nd);
    px->split_sizes = lt__malloc(sizeof(int64_t) * (size_t)p->nout);
    if (!p->out_shape || !px->local_shapes || !px->split_sizes)
        return lt__err(LT_NOMEM, "out of memory");
    for (int j = 0; j < p->nout; j++) {
        memcpy(p->out_shape[j], io->out_shape[j], sizeof p->out_shape[j]);
        px->split_sizes[j] = io->split_sizes[j];
        for (size_t r = 0; r < W; r++)
            LT_TRY(lt_local_shape_and_offset(
                mesh, p->out_ndim, p->out_shape[j], p->out_pl, (int)r,
                px->local_shapes + ((size_t)j * W + r) * nd, NULL));
    }
    px->out_bytes = out_bytes(p);
    if (!px->masked) return LT_OK;
    lt_spec w =
        lt__spec_with(in[0], p->in_target[0]); /* the weight as the kernel gets it: checked above */
    px->vocab = w.shape[0];
    px->row_offset = lt__malloc(sizeof(int64_t) * W);
    if (!px->row_offset) return lt__err(LT_NOMEM, "out of memory");
    for (size_t r = 0; r < W; r++) {
        int64_t ls[2], off[2];
        LT_TRY(lt_spec_local_shape(&w, (int)r, ls, off));
        px->row_offset[r] = off[0];
    }
    return LT_OK;
}

static lt_status build_plan(lt_op_kind op, lt_op_rules rules, const lt_mesh *mesh, int nin,
                            const lt_spec *const *in, const lt_op_args *args, lt_op_plan **out) {
    lt_op_plan *p = op_plan_new(nin);
    lt__rule_io *io = lt__calloc(1, sizeof *io);
    if (!p || !io) {
        lt__free(io);
        lt_op_plan_free(p);
        return lt__err(LT_NOMEM, "out of memory");
    }
    p->op = op;
    lt_status st = propagate(p, io, rules, mesh, nin, in, args);
    if (!st) st = plan_shapes(p, io, mesh, in);
    if (!st) describe(p, mesh, in);
    lt__free(io);
    if (st) {
        lt_op_plan_free(p);
        return st;
    }
    *out = p;
    return LT_OK;
}

/* ---- the cache ------------------------------------------------------------------------- */

static void kput(lt__cache_key *k, uint64_t v) { lt__key_put(k, v); }

/* Key: op, input count, mesh shape, every input's spec (lt__key_spec, the
 * encoding the redistribute plan cache uses too), the static arguments. */
static void build_key(lt__cache_key *k, lt_op_kind op, lt_op_rules rules, const lt_mesh *m, int nin,
                      const lt_spec *const *in, const lt_op_args *a) {
    k->n = 0;
    kput(k, (uint64_t)op | (uint64_t)nin << 16 | (uint64_t)m->ndim << 32 | (uint64_t)rules << 40);
    for (int i = 0; i < m->ndim; i++) kput(k, (uint64_t)m->shape[i]);
    for (int j = 0; j < nin; j++) lt__key_spec(k, in[j]);
    kput(k, (uint64_t)(uint32_t)a->dim | (uint64_t)(uint32_t)a->dim2 << 32);
    kput(k, (uint64_t)a->flatten_end_set | (uint64_t)a->keepdim << 8 |
                (uint64_t)(uint32_t)a->chunks << 16 | (uint64_t)(uint8_t)a->ndims << 48 |
                (uint64_t)(uint8_t)a->shape_ndim << 56);
    kput(k, (uint64_t)a->dim_set);
    for (int d = 0; d < a->ndims && d < LT_MAX_DIMS; d++) kput(k, (uint64_t)(uint32_t)a->dims[d]);
    for (int d = 0; d < a->shape_ndim && d < LT_MAX_DIMS; d++) kput(k, (uint64_t)a->shape[d]);
    kput(k, (uint64_t)a->split_size);
    kput(k, (uint64_t)(uint32_t)a->nsizes);
    for (int d = 0; d < a->nsizes && d < LT_OP_MAX_OUTPUTS; d++) kput(k, (uint64_t)a->sizes[d]);
    if (nin == 0) { /* creation ops: their spec is in the arguments */
        kput(k, (uint64_t)a->dtype | (uint64_t)(uint32_t)a->np << 8);
        for (int i = 0; i < a->np && i < LT_MESH_MAX_DIMS; i++)
            lt__key_placement(k, &a->placements[i]);
    }
}

static void plan_ref(void *v) {
    __atomic_fetch_add(&lt__op_plan_x_of(((lt_op_plan *)v))->refs, 1, __ATOMIC_RELAXED);
}
static void plan_release(void *v) { lt_op_plan_free(v); }

/* The propagation cache: process-wide, like the redistribute plan cache
 * (kernels/cache_impl.h). */
static lt__cache op_cache = LT__CACHE_INIT(plan_ref, plan_release, 1u << 15);

void lt_op_cache_clear(void) { lt__cache_clear(&op_cache); }

void lt_op_cache_stats(size_t *hits, size_t *misses, size_t *entries) {
    lt__cache_stats(&op_cache, hits, misses, entries);
}

/* A plan for the checked specs in[nin] on mesh m: a new reference (from the
 * cache or built). */
static lt_status get_plan(lt_op_kind op, lt_op_rules rules, const lt_mesh *m, int nin,
                          const lt_spec *const *in, const lt_op_args *a, int no_cache,
                          lt_op_plan **out) {
    if (rules != LT_OP_RULES_PYTORCH && rules != LT_OP_RULES_MIN_COMM)
        rules = lt_op_rules_selected();
    static _Thread_local lt__cache_key k;
    static _Thread_local lt__cache_memo memo[LT_OP_COUNT]; /* this thread's last hit per op */
    if (!no_cache) {
        build_key(&k, op, rules, m, nin, in, a);
        if (lt__cache_key_fits(&k)) {
            uint64_t h = 0;
            if ((*out = lt__cache_lookup(&op_cache, &memo[op], &k, &h))) return LT_OK;
            LT_TRY(build_plan(op, rules, m, nin, in, a, out));
            lt__cache_put(&op_cache, &k, h, *out);
            return LT_OK;
        }
    }
    return build_plan(op, rules, m, nin, in, a, out);
}

/* The mesh every input lives on (rand, randn: args->mesh), or an error with
 * lt_op's messages. */
static lt_status common_mesh(lt_op_kind op, const lt_spec *const *in, int nin,
                             const lt_op_args *args, const lt_mesh **out) {
    const lt_mesh *m = nin ? NULL : args->mesh;
    for (int k = 0; k < nin; k++) {
        if (!in[k]) return lt__err(LT_INVALID, "%s: input %d is NULL", lt_op_name(op), k);
        if (!m) m = in[k]->mesh;
        else if (m != in[k]->mesh && !lt_mesh_equal(m, in[k]->mesh))
            return lt__err(LT_INVALID,
                           "%s: input %d lives on another mesh (cross-mesh ops are not supported)",
                           lt_op_name(op), k);
    }
    if (!m) return lt__err(LT_INVALID, "%s: args->mesh is NULL", lt_op_name(op));
    *out = m;
    return LT_OK;
}

lt_status lt_op_propagate(lt_op_kind op, const lt_spec *const *inputs, int nin,
                          const lt_op_args *args, lt_op_plan **out) {
    static const lt_op_args zero_args;
    *out = NULL;
    if ((unsigned)op >= LT_OP_COUNT) return lt__err(LT_INVALID, "unknown op %d", (int)op);
    if (nin < 0 || nin > LT_OP_MAX_INPUTS)
        return lt__err(LT_INVALID, "%s: %d inputs", lt_op_name(op), nin);
    if (!args) args = &zero_args;
    for (int k = 0; k < nin; k++)
        if (inputs[k] && lt_placements_have_ragged(inputs[k]->placements, inputs[k]->mesh->ndim))
            return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                                "not supported yet: RaggedShard in %s's propagation (input %d); "
                                "lt_op runs elementwise ops and full reductions on one",
                                lt_op_name(op), k);
    const lt_mesh *m;
    LT_TRY(common_mesh(op, inputs, nin, args, &m));
    return get_plan(op, LT_OP_RULES_DEFAULT, m, nin, inputs, args, 0, out);
}

/* ---- execution ----------------------------------------------------------------------- */

/* Redistributes x to tgt; S->P and P(a)->P(b) go through R first (the
 * redistribute planner rejects them as single transitions). */
static lt_status to_target(const lt_dtensor *x, const lt_placement *tgt,
                           const lt_redistribute_opts *ro, lt_dtensor **out) {
    const lt_mesh *m = lt_dtensor_mesh(x);
    lt_placement mid[LT_MESH_MAX_DIMS];
    int need_mid = 0;
    for (int i = 0; i < m->ndim; i++) {
        const lt_placement *s = &x->placements[i], *d = &tgt[i];
        mid[i] = *s;
        if (d->kind == LT_PL_PARTIAL && m->shape[i] > 1 &&
            (lt_placement_is_shard_like(s) || (s->kind == LT_PL_PARTIAL && s->op != d->op)))
            mid[i] = lt_replicate(), need_mid = 1;
    }
    if (!need_mid) return lt_redistribute(x, tgt, m->ndim, ro, out, NULL);
    /* a split nested under the shard that was just replicated may not fit
     * the whole dim (S(0,[0,1]) under S(0) of a dim of 2): replicate it too */
    for (int i; (i = failing_mesh_dim(m, x->ndim, x->shape, mid)) >= 0;) mid[i] = lt_replicate();
    lt_dtensor *t = NULL;
    LT_TRY(lt_redistribute(x, mid, m->ndim, ro, &t, NULL));
    lt_status st = lt_redistribute(t, tgt, m->ndim, ro, out, NULL);
    lt_dtensor_free(t);
    return st;
}

static lt_status wrap(const lt_op_plan *p, int j, lt_local *loc, lt_dtensor **out) {
    int W = loc->mesh.world, nd = p->out_ndim > 0 ? p->out_ndim : 1;
    for (int r = 0; r < W; r++) {
        const lt_tensor *t = loc->shards[r];
        if (!t) continue;   /* absent (localtensor/local.h) */
        const int64_t *ls =
            lt__op_plan_x_of(p)->local_shapes + ((size_t)j * (size_t)W + (size_t)r) * (size_t)nd;
        int ok = t->ndim == p->out_ndim && t->dtype == p->out_dtype;
        for (int d = 0; ok && d < p->out_ndim; d++) ok = t->shape[d] == ls[d];
        if (!ok) {
            char a[160], b[160];
            lt_shape_format(t->ndim, t->shape, a, sizeof a);
            lt_shape_format(p->out_ndim, ls, b, sizeof b);
            lt_local_free(loc);
            return lt__err(LT_SHAPE,
                           "%s: rank %d's kernel produced %s %s but the output layout %s gives %s",
                           lt_op_name(p->op), r, lt_dtype_name(t->dtype), a, p->why, b);
        }
    }
    /* not calloc: the placement array is large and only mesh->ndim entries are used */
    lt_dtensor *dt = lt__malloc(sizeof *dt);
    if (!dt) {
        lt_local_free(loc);
        return lt__err(LT_NOMEM, "out of memory");
    }
    memset(dt, 0, offsetof(lt_dtensor, placements));
    memset(dt->stride, 0, sizeof dt->stride);
    dt->local = loc;
    dt->spec.mesh = &loc->mesh;
    dt->from_local = 0;   /* an op's output is the op's, not the caller's shards */
    dt->dtype = p->out_dtype;
    dt->ndim = p->out_ndim;
    memcpy(dt->shape, p->out_shape[j], sizeof(int64_t) * (size_t)p->out_ndim);
    lt_contiguous_strides(p->out_ndim, dt->shape, dt->stride);
    memcpy(dt->placements, p->out_pl, sizeof(lt_placement) * (size_t)loc->mesh.ndim);
    *out = dt;
    return LT_OK;
}

/* Refuses up front outputs that cannot fit in memory: every rank's shard
 * of every output exists at once (inputs redistribute under their own check). */
static lt_status out_room(const lt_op_plan *p) {
    lt__op_plan_x *px = lt__op_plan_x_of(p);
    if (px->out_bytes != UINT64_MAX) return lt_check_memory(px->out_bytes, px->mesh.world,
                                                            lt_op_name(p->op));
    int W = px->mesh.world, nd = p->out_ndim > 0 ? p->out_ndim : 1;
    size_t es = lt_dtype_size(p->out_dtype);
    uint64_t need = 0;
    for (int j = 0; j < p->nout; j++)
        for (int r = 0; r < W; r++) {
            int64_t n;
            LT_TRY(lt__numel_checked(
                p->out_ndim, px->local_shapes + ((size_t)j * (size_t)W + (size_t)r) * (size_t)nd,
                es, &n));
            need = lt__add_sat(need, (uint64_t)n * es);
        }
    return lt_check_memory(need, W, lt_op_name(p->op));
}

/* One rank's kernel (a piece of work of the pool: writes only rank r's
 * entries of the outputs). The shard arrays are read once per op, here. */
typedef struct rank_job {
    const lt_op_plan *p;
    const lt_op_args *a;
    const lt_dtensor *const *x;               /* (p->nin) the inputs in their target layouts */
    lt_tensor *const *in[LT_OP_MAX_INPUTS];   /* their shard arrays */
    lt_tensor **out[LT_OP_MAX_OUTPUTS];       /* the outputs' shard arrays, being filled */
    const int *lead;                          /* piece i is rank lead[i]; NULL: rank i */
} rank_job;

static lt_status rank_task(void *ctx, int64_t i) {
    const rank_job *j = ctx;
    const lt_op_plan *p = j->p;
    int r = j->lead ? j->lead[i] : (int)i, nin = p->nin, nout = p->nout;
    const lt_tensor *sh[LT_OP_MAX_INPUTS];
    lt_tensor *res[LT_OP_MAX_OUTPUTS];
    for (int k = 0; k < nin; k++)
        if (!(sh[k] = j->in[k][r])) return LT_OK;   /* a rank not held here computes nothing */
    for (int o = 0; o < nout; o++) res[o] = NULL;
    lt_status st = lt__op_kernel(p, j->a, r, sh, res);
    for (int o = 0; o < nout; o++) j->out[o][r] = res[o];
    return st ? lt__err_ctx(st, "%s on rank %d", lt_op_name(p->op), r) : LT_OK;
}

/* 1 when the ranks' kernels run at the same time: the inputs are big
 * enough to pay for waking the workers, and the kernel is not a gemm
 * (OpenBLAS already spreads one gemm over the cores). Results do not
 * depend on it: each rank's kernel is the same call either way. */
static int ranks_in_parallel(const lt_op_plan *p, const lt_dtensor *const *x) {
    lt__op_plan_x *px = lt__op_plan_x_of(p);
    switch (p->op) {
    case LT_OP_MATMUL:
    case LT_OP_MM:
    case LT_OP_BMM:
    case LT_OP_ADDMM: return 0;
    default: break;
    }
    if (lt__pool_width() <= 1 || px->mesh.world < 2) return 0;
    /* no shard is larger than its global tensor: a cheap bound first */
    double bound = 0;
    for (int k = 0; k < p->nin; k++) {
        double n = (double)lt_dtype_size(x[k]->dtype);
        for (int d = 0; d < x[k]->ndim; d++) n *= (double)x[k]->shape[d];
        bound += n * px->mesh.world;
    }
    if (bound < (double)lt__par_min_bytes()) return 0;
    size_t bytes = 0;
    for (int k = 0; k < p->nin; k++)
        for (int r = 0; r < px->mesh.world; r++)
            if (x[k]->local->shards[r]) bytes += lt_nbytes(x[k]->local->shards[r]);
    return bytes >= lt__par_min_bytes();
}

/* ---- replica dedup ------------------------------------------------------------------- */

/* -1: not chosen yet (LOCALTENSOR_OP_DEDUP read on first use); 0 or 1. */
static int dedup_env = -1, dedup_set = -1;

void lt__op_set_dedup(int on) {
    __atomic_store_n(&dedup_set, on < 0 ? -1 : on != 0, __ATOMIC_RELAXED);
}

int lt__op_dedup(void) {
    int s = __atomic_load_n(&dedup_set, __ATOMIC_RELAXED);
    if (s >= 0) return s;
    int e = __atomic_load_n(&dedup_env, __ATOMIC_RELAXED);
    if (e < 0) {   /* a race reads the same variable twice: harmless */
        const char *v = getenv("LOCALTENSOR_OP_DEDUP");
        e = !(v && strcmp(v, "0") == 0);
        __atomic_store_n(&dedup_env, e, __ATOMIC_RELAXED);
    }
    return e;
}

/* Ranks up to this many find their twins in arrays on the stack. */
#define LT__TWIN_STACK 64

/* The hash of rank r's input views (which buffers, where). */
static uint64_t views_hash(const lt_op_plan *p, const lt_dtensor *const *x, int r) {
    uint64_t h = 1469598103934665603u;
    for (int k = 0; k < p->nin; k++) {
        const lt_tensor *t = x[k]->local->shards[r];
        h = (h ^ (uint64_t)(uintptr_t)t->storage) * 1099511628211u;
        h = (h ^ (uint64_t)t->offset) * 1099511628211u;
    }
    return h;
}

/* 1 when rank r's inputs are rank q's very views and the kernel has no
 * per-rank parameter that differs: r's results would be q's, bit for bit. */
static int same_work(const lt_op_plan *p, const lt_dtensor *const *x, int r, int q) {
    for (int k = 0; k < p->nin; k++)
        if (!lt_tensor_same_view(x[k]->local->shards[r], x[k]->local->shards[q])) return 0;
    return lt__op_kernel_same(p, r, q);
}

/* A rank that can have a twin: it holds every input (none absent) and its
 * first input's buffer is shared (a replica, a collective's group result). */
static int may_share(const lt_op_plan *p, const lt_dtensor *const *x, int r) {
    for (int k = 0; k < p->nin; k++) {
        const lt_tensor *t = x[k]->local->shards[r];
        if (!t || t->absent) return 0;
    }
    return lt_tensor_is_shared(x[0]->local->shards[r]);
}

/* 0 when no rank can have a twin (the common case of sharded inputs: the
 * first input's buffers are all unshared), checked before any table. */
static int any_may_share(const lt_op_plan *p, const lt_dtensor *const *x) {
    lt_tensor *const *s0 = x[0]->local->shards;
    for (int r = 0; r < lt__op_plan_x_of(p)->mesh.world; r++)
        if (s0[r] && lt_tensor_is_shared(s0[r])) return 1;
    return 0;
}

/* twin[r] = the first rank q < r doing r's very work (same_work), else r;
 * lead[0..*nlead) = the ranks with twin[r] == r, ascending. slot: scratch
 * of tab (a power of 2 >= 2 * world) entries. Returns 0 when no rank has a
 * twin (lead and twin then say nothing). */
static int find_twins(const lt_op_plan *p, const lt_dtensor *const *x, int *twin, int *lead,
                      int *nlead, int *slot, size_t tab) {
    int W = lt__op_plan_x_of(p)->mesh.world, any = 0;
    for (size_t i = 0; i < tab; i++) slot[i] = -1;
    *nlead = 0;
    for (int r = 0; r < W; r++) {
        twin[r] = r;
        if (may_share(p, x, r)) {
            for (size_t i = (size_t)views_hash(p, x, r) & (tab - 1);; i = (i + 1) & (tab - 1)) {
                if (slot[i] < 0) {
                    slot[i] = r;
                    break;
                }
                if (same_work(p, x, r, slot[i])) {
                    twin[r] = slot[i];
                    any = 1;
                    break;
                }
            }
        }
        if (twin[r] == r) lead[(*nlead)++] = r;
    }
    return any;
}

/* Every twin's outputs: new views of its leader's (absent where the
 * leader's are). Leaves what it made in loc on failure (the caller frees). */
static lt_status share_twins(const lt_op_plan *p, const int *twin, lt_local *const *loc) {
    for (int r = 0; r < lt__op_plan_x_of(p)->mesh.world; r++) {
        if (twin[r] == r) continue;
        for (int o = 0; o < p->nout; o++) {
            const lt_tensor *src = loc[o]->shards[twin[r]];
            if (src) LT_TRY(lt_tensor_view(src, &loc[o]->shards[r]));
        }
    }
    return LT_OK;
}

/* The kernels of the ranks in lead[0..n) (NULL: every rank), on the pool
 * when worth it. */
static lt_status run_leads(rank_job *rj, const int *lead, int n) {
    rj->lead = lead;
    if (ranks_in_parallel(rj->p, rj->x)) return lt__parallel_for(n, rank_task, rj);
    lt_status st = LT_OK;
    for (int i = 0; i < n && !st; i++) st = rank_task(rj, i);
    return st;
}

/* Runs every rank's kernel into loc[p->nout], once per distinct work: a
 * rank whose inputs are another's very views (lt__op_dedup) shares that
 * rank's results. Borrows everything; the shards it makes go into loc. */
static lt_status run_ranks(const lt_op_plan *p, const lt_op_args *a, const lt_dtensor *const *x,
                           lt_local *const *loc) {
    rank_job rj;
    rj.p = p, rj.a = a, rj.x = x, rj.lead = NULL;
    for (int k = 0; k < p->nin; k++) rj.in[k] = x[k]->local->shards;
    for (int o = 0; o < p->nout; o++) rj.out[o] = loc[o]->shards;
    int W = lt__op_plan_x_of(p)->mesh.world;
    if (W < 2 || !lt__op_dedup() || !any_may_share(p, x)) return run_leads(&rj, NULL, W);
    size_t tab = 2;
    while (tab < 2 * (size_t)W) tab *= 2;
    int stack[4 * LT__TWIN_STACK], *buf = stack;   /* twin, lead, slot (tab <= 2 * 64) */
    if (W > LT__TWIN_STACK) {   /* world <= LT_MESH_MAX_WORLD: no overflow */
        buf = lt__malloc(sizeof(int) * (2 * (size_t)W + tab));
        if (!buf) return lt__err(LT_NOMEM, "%s: out of memory for the replica table",
                                 lt_op_name(p->op));
    }
    int nlead, *twin = buf, *lead = buf + W;
    lt_status st;
    if (!find_twins(p, x, twin, lead, &nlead, buf + 2 * (size_t)W, tab))
        st = run_leads(&rj, NULL, W);
    else if (!(st = run_leads(&rj, lead, nlead))) st = share_twins(p, twin, loc);
    if (buf != stack) lt__free(buf);
    return st;
}

static lt_status run_plan(const lt_op_plan *p, const lt_dtensor *const *in, const lt_op_args *a,
                          const lt_op_opts *o, lt_dtensor **out) {
    const lt_mesh *m = &lt__op_plan_x_of(p)->mesh;
    if (p->nin == 0) { /* creation */
        lt_init init = {p->op == LT_OP_RANDN ? LT_INIT_RANDN : LT_INIT_RANDOM, a->seed};
        return lt_dtensor_new(m, p->out_dtype, p->out_ndim, p->out_shape[0], p->out_pl, m->ndim,
                               &init, &out[0]);
    }
    LT_TRY(out_room(p));
    lt_dtensor *tmp[LT_OP_MAX_INPUTS];
    const lt_dtensor *x[LT_OP_MAX_INPUTS];
    lt_local *loc[LT_OP_MAX_OUTPUTS];
    lt_status st = LT_OK;
    for (int k = 0; k < p->nin; k++) tmp[k] = NULL;
    for (int j = 0; j < p->nout; j++) loc[j] = NULL;
    for (int k = 0; k < p->nin && !st; k++) {
        x[k] = in[k];
        if (!p->in_redistribute[k]) continue;
        st = to_target(in[k], p->in_target[k], o ? o->redist : NULL, &tmp[k]);
        if (st)
            st =
                lt__err_ctx(st, "%s: redistributing input %d for %s", lt_op_name(p->op), k, p->why);
        x[k] = tmp[k];
    }
    for (int j = 0; j < p->nout && !st; j++) st = lt_local_new(m, &loc[j]);
    if (!st) st = run_ranks(p, a, x, loc);
    for (int k = 0; k < p->nin; k++) lt_dtensor_free(tmp[k]);
    for (int j = 0; j < p->nout; j++) {
        if (!st) {
            st = wrap(p, j, loc[j], &out[j]);
            loc[j] = NULL;
        }
        lt_local_free(loc[j]);
    }
    return st;
}

lt_status lt_op(lt_op_kind op, const lt_dtensor *const *in, int nin, const lt_op_args *args,
                const lt_op_opts *opts, lt_dtensor **out, int max_out, int *nout) {
    static const lt_op_args zero_args;
    if (nout) *nout = 0;
    if (!out || max_out < 1) return lt__err_in(LT_INVALID, "op", ": no room for outputs");
    for (int j = 0; j < max_out; j++) out[j] = NULL;
    if (opts && opts->plan) *opts->plan = NULL;
    if ((unsigned)op >= LT_OP_COUNT) return lt__err(LT_INVALID, "unknown op %d", (int)op);
    const char *name = lt_op_name(op);
    if (!args) args = &zero_args;
    int ar = lt_op_arity(op);
    if (nin < 0 || nin > LT_OP_MAX_INPUTS || (ar >= 0 && nin != ar) || (ar < 0 && nin < 1))
        return lt__err(LT_INVALID, "%s takes %s%d tensor input%s, got %d", name,
                       ar < 0 ? "at least " : "", ar < 0 ? 1 : ar, ar == 1 || ar < 0 ? "" : "s",
                       nin);
    const lt_spec *sp[LT_OP_MAX_INPUTS]; /* the inputs' specs: checked when each DTensor was made */
    for (int k = 0; k < nin; k++) sp[k] = in[k] ? lt_dtensor_spec(in[k]) : NULL;
    for (int k = 0; k < nin; k++)
        if (in[k] && lt_placements_have_ragged(in[k]->placements, lt_dtensor_mesh(in[k])->ndim))
            return lt__ragged_op(op, in, nin, args, opts, out, max_out, nout);
    const lt_mesh *m;
    LT_TRY(common_mesh(op, sp, nin, args, &m));
    lt_op_plan *p = NULL;
    lt_status st = get_plan(op, opts ? opts->rules : LT_OP_RULES_DEFAULT, m, nin, sp, args,
                            opts && opts->no_cache, &p);
    if (st) return opts && opts->name ? lt__err_ctx(st, "%s", opts->name) : st;
    st = lt__op_check_aligned(p, in); /* the operands as the plan consumes them */
    if (!st && p->nout > max_out)
        st = lt__err(LT_INVALID, "%s gives %d outputs but there is room for %d", name, p->nout,
                     max_out);
    if (!st) st = run_plan(p, in, args, opts, out);
    if (!st && opts && opts->check_reference)
        st = lt_op_check_reference(op, in, nin, args, out, p->nout, opts->rtol, opts->atol);
    if (!st && nout) *nout = p->nout;
    if (!st && opts && opts->plan) {
        plan_ref(p);
        *opts->plan = p;
    }
    if (st) {
        for (int j = 0; j < max_out; j++) {
            lt_dtensor_free(out[j]);
            out[j] = NULL;
        }
        if (opts && opts->name) st = lt__err_ctx(st, "%s", opts->name);
    }
    lt_op_plan_free(p);
    return st;
}

/* ---- convenience wrappers ------------------------------------------------------------------- */

static lt_status op1(lt_op_kind op, const lt_dtensor *const *in, int nin, const lt_op_args *a,
                     lt_dtensor **out) {
    return lt_op(op, in, nin, a, NULL, out, 1, NULL);
}

lt_status lt_dtensor_unary(lt_unary_op op, const lt_dtensor *x, lt_dtensor **out) {
    static const lt_op_kind map[LT_UNARY_COUNT] = {
#define LT__XX(e, s) LT_OP_##e,
        LT_UNARY_MAP(LT__XX)
#undef LT__XX
    };
    if ((unsigned)op >= LT_UNARY_COUNT) return lt__err(LT_INVALID, "unary: unknown op %d", (int)op);
    return op1(map[op], &x, 1, NULL, out);
}

lt_status lt_dtensor_binary(lt_binary_op op, const lt_dtensor *a, const lt_dtensor *b,
                            lt_dtensor **out) {
    static const lt_op_kind map[LT_BINARY_COUNT] = {
#define LT__XX(e, s) LT_OP_##e,
        LT_BINARY_MAP(LT__XX)
#undef LT__XX
    };
    if ((unsigned)op >= LT_BINARY_COUNT)
        return lt__err(LT_INVALID, "binary: unknown op %d", (int)op);
    const lt_dtensor *in[2] = {a, b};
    return op1(map[op], in, 2, NULL, out);
}

lt_status lt_dtensor_matmul(const lt_dtensor *a, const lt_dtensor *b, lt_dtensor **out) {
    const lt_dtensor *in[2] = {a, b};
    return op1(LT_OP_MATMUL, in, 2, NULL, out);
}

lt_status lt_dtensor_addmm(const lt_dtensor *bias, const lt_dtensor *a, const lt_dtensor *b,
                           double beta, double alpha, lt_dtensor **out) {
    lt_op_args args;
    memset(&args, 0, sizeof args);
    args.scale_set = 1, args.alpha = alpha, args.beta = beta;
    const lt_dtensor *in[3] = {bias, a, b};
    return op1(LT_OP_ADDMM, in, 3, &args, out);
}

lt_status lt_dtensor_reduce(lt_reduce_op op, const lt_dtensor *x, int ndims, const int *dims,
                            int keepdim, lt_dtensor **out) {
    static const lt_op_kind map[LT_REDUCE_COUNT] = {LT_OP_SUM, LT_OP_MEAN, LT_OP_AMAX, LT_OP_AMIN};
    if ((unsigned)op >= LT_REDUCE_COUNT)
        return lt__err(LT_INVALID, "reduce: unknown op %d", (int)op);
    if (ndims < 0 || ndims > LT_MAX_DIMS) return lt__err(LT_INVALID, "reduce: %d dims", ndims);
    lt_op_args args;
    memset(&args, 0, sizeof args);
    args.ndims = ndims, args.keepdim = keepdim;
    for (int i = 0; i < ndims; i++) args.dims[i] = dims[i];
    return op1(map[op], &x, 1, &args, out);
}

lt_status lt_dtensor_transpose(const lt_dtensor *x, int d0, int d1, lt_dtensor **out) {
    lt_op_args args;
    memset(&args, 0, sizeof args);
    args.dim = d0, args.dim2 = d1;
    return op1(LT_OP_TRANSPOSE, &x, 1, &args, out);
}

lt_status lt_dtensor_reshape(const lt_dtensor *x, int ndim, const int64_t *shape,
                             lt_dtensor **out) {
    if (ndim < 0 || ndim > LT_MAX_DIMS) return lt__err(LT_INVALID, "reshape: %d dims", ndim);
    lt_op_args args;
    memset(&args, 0, sizeof args);
    args.shape_ndim = ndim;
    for (int i = 0; i < ndim; i++) args.shape[i] = shape[i];
    return op1(LT_OP_RESHAPE, &x, 1, &args, out);
}
