/* localtensor/numerics.c — numerics modes (full, sample:K, none): parsing,
 * the sampled ranks, and DTensors and redistributes that compute only those
 * ranks' values. Why the sampled values equal full mode's bit for bit:
 * localtensor/numerics.h. */
#include "localtensor/numerics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/collectives_sim/collectives.h"
#include "kernels/alloc.h"
#include "kernels/memlimit_impl.h"
#include "kernels/status_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/layout.h"
#include "localtensor/plan/plan_impl.h"
#include "localtensor/spec_impl.h"

lt_status lt_numerics_parse(const char *s, lt_numerics *out) {
    memset(out, 0, sizeof *out);
    if (!strcmp(s, "full")) return LT_OK;
    if (!strcmp(s, "none")) {
        out->kind = LT_NUMERICS_NONE;
        return LT_OK;
    }
    if (!strcmp(s, "sample")) {
        out->kind = LT_NUMERICS_SAMPLE;
        out->k = LT_NUMERICS_SAMPLE_DEFAULT;
        return LT_OK;
    }
    if (!strncmp(s, "sample:", 7)) {
        char *end = NULL;
        const char *p = s + 7;
        long k = (*p >= '0' && *p <= '9') ? strtol(p, &end, 10) : -1;
        if (end && *end == '\0' && k >= 1 && k <= 1000000) {
            out->kind = LT_NUMERICS_SAMPLE;
            out->k = (int)k;
            return LT_OK;
        }
        return lt__err(LT_INVALID,
                       "numerics '%s': K in sample:K must be a whole number from 1 to 1000000", s);
    }
    return lt__err(LT_INVALID,
                   "unknown numerics mode '%s' (expected full, sample, sample:K or none)", s);
}

char *lt_numerics_format(const lt_numerics *nm, char *buf, size_t n) {
    if (nm->kind == LT_NUMERICS_SAMPLE) snprintf(buf, n, "sample:%d", nm->k);
    else snprintf(buf, n, "%s", nm->kind == LT_NUMERICS_NONE ? "none" : "full");
    return buf;
}

int lt_numerics_count(const lt_numerics *nm, int world) {
    if (nm->kind == LT_NUMERICS_NONE || world <= 0) return 0;
    if (nm->kind == LT_NUMERICS_FULL || nm->k >= world) return world;
    return nm->k;
}

int lt_numerics_ranks(const lt_numerics *nm, int world, int *ranks) {
    int n = lt_numerics_count(nm, world);
    if (n == world) {
        for (int r = 0; r < n; r++) ranks[r] = r;
        return n;
    }
    if (n == 1) {
        ranks[0] = 0;
        return 1;
    }
    /* round(j * (W - 1) / (K - 1)): strictly increasing since K < W */
    for (int j = 0; j < n; j++)
        ranks[j] = (int)(((int64_t)j * (world - 1) * 2 + (n - 1)) / (2 * (int64_t)(n - 1)));
    return n;
}

char *lt_numerics_ranks_format(const int *ranks, int n, int max, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used + 1 < len; i++) {
        int w = i < max ? snprintf(buf + used, len - used, "%s%d", i ? ", " : "", ranks[i])
                        : snprintf(buf + used, len - used, ", ... (%d in all)", n);
        if (w < 0) break;
        used += (size_t)w;
        if (i >= max) break;
    }
    return buf;
}

/* ---- one rank's shard --------------------------------------------------------- */

/* Rank r's shard in layout `spec` holding the initialiser's (logical)
 * values, before any partition. *out new. */
static lt_status logical_shard(const lt_spec *spec, const lt_init *init, int r, lt_tensor **out) {
    lt_rank_layout l;
    *out = NULL;
    LT_TRY(lt_spec_layout_rank(spec, r, &l));
    lt_status st = lt_tensor_new(spec->dtype, spec->ndim, l.local_shape, out);
    if (!st && l.lists) st = lt_init_fill_indexed(*out, init, l.idx, spec->shape);
    lt_rank_layout_free(&l);
    if (st) {
        lt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* Checks ranks[0..n) (ascending, in range) and the memory their shards of
 * `spec` need. */
/* The ranks are in range and ascending, and their shards fit in memory
 * (replicas share one buffer, sample_into: each replica class counts once;
 * without room for that table, every rank counts). */
static lt_status check_ranks(const lt_spec *spec, const int *ranks, int n, const char *what) {
    uint64_t bytes = 0;
    size_t es = lt_dtype_size(spec->dtype);
    unsigned char *seen =
        n > 1 ? lt__calloc((size_t)spec->mesh->world, 1) : NULL; /* (W) class counted */
    lt_status st = LT_OK;
    for (int i = 0; i < n && !st; i++) {
        if (ranks[i] < 0 || ranks[i] >= spec->mesh->world || (i && ranks[i] <= ranks[i - 1])) {
            st = lt__err(LT_INVALID,
                         "%s: sampled rank %d is out of range or out of order (world %d)", what,
                         ranks[i], spec->mesh->world);
            break;
        }
        if (seen) {
            int k = lt__replica_class(spec->mesh, spec->placements, ranks[i]);
            if (seen[k]) continue;
            seen[k] = 1;
        }
        int64_t ls[LT_MAX_DIMS], numel;
        st = lt_spec_local_shape(spec, ranks[i], ls, NULL);
        if (!st) st = lt__numel_checked(spec->ndim, ls, es, &numel);
        if (!st) bytes = lt__add_sat(bytes, (uint64_t)numel * es);
    }
    lt__free(seen);
    return st ? st : lt_check_memory(bytes, n > 0 ? n : 1, what);
}

/* ---- the value changes of a plan ------------------------------------------------ */

static lt_status push_op(lt_sample_src *g, int kind, int mesh_dim, lt_redop op) {
    if (g->nops >= LT_SAMPLE_MAX_OPS)
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: more than %d value-changing steps (partitions and "
                            "reductions) in a chain of sampled redistributes",
                            LT_SAMPLE_MAX_OPS);
    g->ops[g->nops++] = (lt_sample_op){kind, mesh_dim, op};
    return LT_OK;
}

lt_status lt_sample_src_init(lt_sample_src *g, const lt_init *init, const lt_spec *spec) {
    memset(g, 0, sizeof *g);
    g->init = *init;
    for (int i = 0; i < spec->mesh->ndim; i++)
        if (spec->placements[i].kind == LT_PL_PARTIAL)
            LT_TRY(push_op(g, 2, i, spec->placements[i].op));
    return LT_OK;
}

/* What step s does to values: *kind 1 = reduces mesh dim *dim with *op over
 * its group, 2 = partitions it (R -> P(*op)), 0 = moves data only. */
static void step_effect(const lt_plan *p, int s, int *kind, int *dim, lt_redop *op) {
    const lt_plan_step *ps = &p->steps[s];
    const lt_placement *before = lt__plan_x_of(p)->states + (size_t)s * (size_t)p->mesh.ndim;
    *kind = 0;
    *dim = ps->mesh_dim;
    if (ps->move_) {
        const lt__move *m = ps->move_;
        *dim = m->mesh_dim;
        *op = m->op;
        if (m->kind == LT__MV_ALL_REDUCE || m->kind == LT__MV_REDUCE_SCATTER ||
            m->kind == LT__MV_REDUCE)
            *kind = 1;
        else if (m->kind == LT__MV_PARTITION) *kind = 2;
        return;
    }
    lt__step_kind k = lt__step_kind_of(&p->mesh, before, ps->mesh_dim, &ps->to);
    if (k == LT__STEP_ALL_REDUCE || k == LT__STEP_REDUCE_SCATTER) {
        *kind = 1;
        *op = ps->from.op;
    } else if (k == LT__STEP_PARTITION) {
        *kind = 2;
        *op = ps->to.op;
    }
}

/* The reduction of m equal contributions t over a group of m ranks, by the
 * communicator's engine (group order, the engine's accumulation rules):
 * replaces *t. comm: a 1-D communicator of m ranks. */
static lt_status fold(lt_comm *comm, int m, lt_redop op, lt_tensor **t) {
    lt_tensor **in = lt__calloc((size_t)m, sizeof *in), **out = lt__calloc((size_t)m, sizeof *out);
    lt_status st = in && out ? LT_OK : lt__err(LT_NOMEM, "out of memory");
    for (int j = 0; j < m && !st; j++) in[j] = *t;   /* every member holds the same values */
    if (!st) st = lt_reduce_ranks(comm, 0, in, 0, op, out);
    if (!st) {
        lt_tensor_free(*t);
        *t = out[0];
        out[0] = NULL;
    }
    for (int j = 0; out && j < m; j++) lt_tensor_free(out[j]);
    lt__free(in);
    lt__free(out);
    return st;
}

/* The 1-D communicators (one per mesh dim) that reductions run on. */
typedef struct folds {
    lt_comm *comm[LT_MESH_MAX_DIMS];
} folds;

static lt_status folds_get(folds *f, const lt_mesh *mesh, int i, lt_comm **out) {
    if (!f->comm[i]) {
        lt_mesh m1;
        char s[32];
        snprintf(s, sizeof s, "%d", mesh->shape[i]);
        LT_TRY(lt_mesh_parse(s, &m1));
        LT_TRY(lt_comm_new(&m1, &f->comm[i]));
    }
    *out = f->comm[i];
    return LT_OK;
}

static void folds_free(folds *f) {
    for (int i = 0; i < LT_MESH_MAX_DIMS; i++) lt_comm_free(f->comm[i]);
}

/* Applies g's value changes, in order, to t (replaced in place). */
static lt_status apply_ops(const lt_mesh *mesh, const lt_sample_src *g, folds *f, lt_tensor **t) {
    for (int k = 0; k < g->nops; k++) {
        const lt_sample_op *o = &g->ops[k];
        int i = o->mesh_dim;
        if (o->kind == 1) {
            lt_comm *c;
            LT_TRY(folds_get(f, mesh, i, &c));
            LT_TRY(fold(c, mesh->shape[i], o->op, t));
        } else {
            lt_placement pl[LT_MESH_MAX_DIMS];
            for (int j = 0; j < mesh->ndim; j++)
                pl[j] = j == i ? lt_partial(o->op) : lt_replicate();
            LT_TRY(lt__partition(*t, mesh, pl));
        }
    }
    return LT_OK;
}

/* Rank r's shard in layout spec with values from g. *out new. */
static lt_status sample_shard(const lt_spec *spec, const lt_sample_src *g, folds *f, int r,
                              lt_tensor **out) {
    LT_TRY(logical_shard(spec, &g->init, r, out));
    lt_status st = apply_ops(spec->mesh, g, f, out);
    if (st) {
        lt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* Rank ranks[i]'s shard of spec into local->shards for i < n. A rank's
 * values depend only on its indices, so replicas (one replica class) share
 * the first one's buffer, as distribute's do; fresh (n, may be NULL) gets 1
 * where a shard was computed, 0 where it views a replica's. */
static lt_status sample_into(const lt_spec *spec, const lt_sample_src *g, folds *f,
                             const int *ranks, int n, lt_local *local, unsigned char *fresh) {
    int W = spec->mesh->world;
    int *built =
        n > 1 ? lt__malloc(sizeof(int) * (size_t)W) : NULL; /* (W) class -> its built rank, -1 */
    lt_status st = n > 1 && !built ? lt__err(LT_NOMEM, "out of memory") : LT_OK;
    for (int r = 0; built && r < W; r++) built[r] = -1;
    for (int i = 0; i < n && !st; i++) {
        int r = ranks[i], k = built ? lt__replica_class(spec->mesh, spec->placements, r) : r;
        if (fresh) fresh[i] = !built || built[k] < 0;
        if (built && built[k] >= 0) {
            st = lt_tensor_view(local->shards[built[k]], &local->shards[r]);
            continue;
        }
        st = sample_shard(spec, g, f, r, &local->shards[r]);
        if (built) built[k] = r;
    }
    lt__free(built);
    return st;
}

/* ---- sampled DTensors --------------------------------------------------------- */

lt_status lt_dtensor_sample(const lt_spec *spec, const lt_sample_src *g, const int *ranks, int n,
                            lt_dtensor **out) {
    *out = NULL;
    LT_TRY(lt__check_partials(spec->mesh, spec->dtype, spec->placements, spec->mesh->ndim));
    LT_TRY(check_ranks(spec, ranks, n, "the sampled shards"));
    lt_local *local;
    LT_TRY(lt_local_new(spec->mesh, &local));
    folds f;
    memset(&f, 0, sizeof f);
    lt_status st = sample_into(spec, g, &f, ranks, n, local, NULL);
    folds_free(&f);
    if (st) {
        lt_local_free(local);
        return st;
    }
    return lt__dtensor_wrap(local, spec, out);
}

lt_status lt_dtensor_new_ranks(const lt_spec *spec, const lt_init *init, const int *ranks, int n,
                                lt_dtensor **out) {
    lt_sample_src g;
    *out = NULL;
    LT_TRY(lt_sample_src_init(&g, init, spec));
    return lt_dtensor_sample(spec, &g, ranks, n, out);
}

/* ---- sampled redistribute ------------------------------------------------------- */

/* The semantic value of rank r's destination shard (docs/SEMANTICS.md §7,
 * as the direct reshard defines it): logical values; mesh dims Partial in
 * both source and destination with the same op keep the source's
 * contributions; the destination's other Partial dims are partitioned. */
static lt_status expected_shard(const lt_plan *p, const lt_spec *dspec, const lt_init *init, int r,
                                lt_tensor **out) {
    const lt_mesh *mesh = &p->mesh;
    lt_placement kept[LT_MESH_MAX_DIMS], dpart[LT_MESH_MAX_DIMS];
    for (int i = 0; i < mesh->ndim; i++) {
        int k = p->src[i].kind == LT_PL_PARTIAL && p->dst[i].kind == LT_PL_PARTIAL &&
                p->src[i].op == p->dst[i].op;
        kept[i] = k ? p->src[i] : lt_replicate();
        dpart[i] = k ? lt_replicate() : p->dst[i];
    }
    LT_TRY(logical_shard(dspec, init, r, out));
    lt_status st = lt__partition(*out, mesh, kept);
    if (!st) st = lt__partition(*out, mesh, dpart);
    if (st) {
        lt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* "[i, j]" (lt_shape_format prints "(i, j)"). */
static void index_str(int ndim, const int64_t *idx, char *buf, size_t n) {
    lt_shape_format(ndim, idx, buf, n);
    size_t L = strlen(buf);
    if (L >= 2 && buf[0] == '(' && buf[L - 1] == ')') {
        buf[0] = '[';
        buf[L - 1] = ']';
    }
}

static lt_status verify_rank(const lt_plan *p, const lt_spec *dspec, const lt_init *init, int r,
                             const lt_tensor *got, lt_verify_report *rep) {
    lt_tensor *e = NULL;
    LT_TRY(expected_shard(p, dspec, init, r, &e));
    double rtol, atol;
    lt_dtype_default_tol(dspec->dtype, &rtol, &atol);
    lt_compare_result res;
    lt_status st = lt_compare(got, e, rtol, atol, &res);
    lt_tensor_free(e);
    if (st || res.equal) return st;
    lt_rank_layout l;
    LT_TRY(lt_spec_layout_rank(dspec, r, &l));
    int64_t g[LT_MAX_DIMS];
    for (int d = 0; d < dspec->ndim; d++)
        g[d] = l.idx[d] ? l.idx[d][res.first_idx[d]] : res.first_idx[d];
    lt_rank_layout_free(&l);
    char li[160], gi[160];
    index_str(dspec->ndim, res.first_idx, li, sizeof li);
    index_str(dspec->ndim, g, gi, sizeof gi);
    st = lt__err(LT_MISMATCH,
                 "rank %d, local index %s (global index %s): expected %.9g, got %.9g (%lld "
                 "element%s differ%s on that rank)",
                 r, li, gi, res.expected, res.actual, (long long)res.ndiff,
                 res.ndiff == 1 ? "" : "s", res.ndiff == 1 ? "s" : "");
    if (rep) {
        rep->ok = 0;
        rep->step = p->nsteps - 1;
        rep->mesh_dim = p->nsteps ? p->steps[p->nsteps - 1].mesh_dim : -1;
        rep->rank = r;
        rep->ndim = dspec->ndim;
        memcpy(rep->local_index, res.first_idx, sizeof(int64_t) * (size_t)dspec->ndim);
        memcpy(rep->global_index, g, sizeof(int64_t) * (size_t)dspec->ndim);
        rep->expected = res.expected;
        rep->actual = res.actual;
        rep->ndiff = res.ndiff;
        snprintf(rep->message, sizeof rep->message, "%s", lt_errmsg());
    }
    return st;
}

lt_status lt_verify_sampled_shard(const lt_plan *p, const lt_sample_src *g, int r,
                                  const lt_tensor *got, lt_verify_report *rep) {
    if (!p || !g || !got || r < 0 || r >= p->mesh.world)
        return lt__err(LT_INVALID, "verify_sampled_shard: a NULL argument or rank %d out of range",
                       r);
    lt_spec dspec = lt__plan_spec(p, p->dst);
    if (rep) rep->checked = 1;
    return verify_rank(p, &dspec, &g->init, r, got, rep);
}

lt_status lt_redistribute_sampled(const lt_spec *src, const lt_sample_src *g,
                                  const lt_placement *dst, int np, const int *ranks, int n,
                                  const lt_redistribute_opts *opts, lt_dtensor **out,
                                  lt_plan **planp, lt_sample_src *gout) {
    lt_verify_report local_rep;
    lt_verify_report *rep = opts && opts->report ? opts->report : &local_rep;
    int verify = opts && opts->verify;
    *out = NULL;
    if (planp) *planp = NULL;
    memset(rep, 0, sizeof *rep);
    rep->step = rep->mesh_dim = rep->rank = -1;
    lt_plan *plan;
    LT_TRY(lt__plan_redistribute_from(src, dst, np, opts, &plan));
    const lt__plan_x *px = lt__plan_x_of(plan);
    if (px->zf_end > px->zf_first && (n > 0 || gout)) { /* no values: the plan is enough */
        lt_plan_free(plan);
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: a sampled redistribute with a Shard -> "
                            "Partial(sum) zero fill (use numerics full)");
    }
    lt_spec dspec = lt__spec_with(src, plan->dst);
    lt_sample_src gd = *g;   /* the destination's: g plus this plan's value changes */
    lt_local *local = NULL;
    folds f;
    memset(&f, 0, sizeof f);
    lt_status st = LT_OK;
    for (int s = 0; s < plan->nsteps && !st; s++) {
        int kind, i;
        lt_redop op = LT_REDOP_SUM;
        step_effect(plan, s, &kind, &i, &op);
        if (kind) st = push_op(&gd, kind, i, op);
    }
    if (!st) st = check_ranks(&dspec, ranks, n, "this sampled redistribute");
    if (!st) st = lt_local_new(src->mesh, &local);
    if (!st && verify) {
        rep->checked = 1;
        rep->ok = 1;
    }
    unsigned char *fresh = NULL;   /* (n) 1: computed, 0: a replica's view (checked with it) */
    if (!st && n > 0 && !(fresh = lt__malloc((size_t)n))) st = lt__err(LT_NOMEM, "out of memory");
    if (!st) st = sample_into(&dspec, &gd, &f, ranks, n, local, fresh);
    for (int i = 0; i < n && !st && verify; i++)
        if (fresh[i])
            st = verify_rank(plan, &dspec, &g->init, ranks[i], local->shards[ranks[i]], rep);
    lt__free(fresh);
    folds_free(&f);
    if (st) {
        char a[512], b[512];
        lt_placements_format(plan->src, plan->mesh.ndim, a, sizeof a);
        lt_placements_format(plan->dst, plan->mesh.ndim, b, sizeof b);
        const char *nm = opts && opts->name && opts->name[0] ? opts->name : NULL;
        if (st == LT_MISMATCH)
            st = lt__err_ctx_in(st, "redistribute", " of %s%s%s %s -> %s: verification failed",
                                nm ? "'" : "an unnamed tensor", nm ? nm : "", nm ? "'" : "", a, b);
        else
            st = lt__err_ctx_in(st, "redistribute", " of %s%s%s %s -> %s",
                                nm ? "'" : "an unnamed tensor", nm ? nm : "", nm ? "'" : "", a, b);
        if (st == LT_MISMATCH) snprintf(rep->message, sizeof rep->message, "%s", lt_errmsg());
        lt_local_free(local);
        if (planp) *planp = plan;
        else lt_plan_free(plan);
        return st;
    }
    st = lt__dtensor_wrap(local, &dspec, out);
    if (!st && gout) *gout = gd;
    if (st || !planp) lt_plan_free(plan);
    else *planp = plan;
    return st;
}

lt_status lt_redistribute_ranks(const lt_spec *src, const lt_init *init, const lt_placement *dst,
                                int np, const int *ranks, int n, const lt_redistribute_opts *opts,
                                lt_dtensor **out, lt_plan **plan) {
    lt_sample_src g;
    *out = NULL;
    if (plan) *plan = NULL;
    LT_TRY(lt__check_partials(src->mesh, src->dtype, src->placements, src->mesh->ndim));
    LT_TRY(lt_sample_src_init(&g, init, src));
    return lt_redistribute_sampled(src, &g, dst, np, ranks, n, opts, out, plan, NULL);
}
