/* localtensor/plan/plan_cache.c — lt_plan_redistribute: checks, rejections, the
 * plan cache, and the text table of a plan.
 *
 * The cache maps (mesh, global shape, dtype, normalized source, normalized
 * destination, planner) to an immutable, reference-counted plan; it is an
 * instance of the library's one cache module (kernels/cache_impl.h:
 * process-wide, one lock, emptied when full, a per-thread memo of the last
 * hit in front). A hit needs no validation: only valid, non-rejected keys are ever stored, and
 * equality is on the normalized lists.
 */
#include "kernels/alloc.h"
#include "kernels/cache_impl.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/layout.h"
#include "localtensor/redistribute.h"
#include "kernels/status_impl.h"
#include "localtensor/plan/plan_impl.h"
#include "localtensor/spec_impl.h"

static const char *const planner_names[LT_PLANNER_COUNT] = {
#define LT__XX(e, s) s,
    LT_PLANNER_MAP(LT__XX)
#undef LT__XX
};

const char *lt_planner_name(lt_planner p) {
    return lt__name_of(planner_names, LT_PLANNER_COUNT, (int)p);
}

lt_status lt_planner_parse(const char *s, lt_planner *out) {
    int i = lt__name_find(planner_names, LT_PLANNER_COUNT, s);
    if (i >= 0) {
        *out = (lt_planner)i;
        return LT_OK;
    }
    if (!strcmp(s, "min_cost") || !strcmp(s, "mincost")) {
        *out = LT_PLANNER_MIN_COST;
        return LT_OK;
    }
    char list[64];
    return lt__err(LT_INVALID, "planner '%s': expected %s", s,
                   lt__name_join_or(planner_names, LT_PLANNER_COUNT, list, sizeof list));
}

/* ---- plan lifetime ------------------------------------------------------------- */

lt_plan *lt_plan_ref(lt_plan *p) {
    if (p) __atomic_fetch_add(&lt__plan_x_of(p)->refs, 1, __ATOMIC_RELAXED);
    return p;
}

void lt_plan_free(lt_plan *p) {
    lt__plan_x *px = lt__plan_x_of(p);
    if (!p) return;
    if (__atomic_sub_fetch(&px->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    lt__free(p->steps);
    lt__free(px->states);
    lt__free(px->moves);
    lt__free(px->perms);
    lt_plan_free(px->parts[0]);
    lt_plan_free(px->parts[1]);
    lt__free(p);
}

lt_plan *lt__plan_new(const lt__plan_head *h, int n, int moves, size_t nperm, const char *what) {
    int M = h->mesh->ndim;
    lt__plan_x *px = lt__calloc(1, sizeof *px);
    lt_plan *p = px ? &px->pub : NULL;
    if (px) {
        px->refs = 1;
        px->states = lt__calloc((size_t)(n + 1) * (size_t)M, sizeof(lt_placement));
        p->steps = lt__calloc((size_t)(n ? n : 1), sizeof(lt_plan_step));
        if (moves) px->moves = lt__calloc((size_t)(n ? n : 1), sizeof(lt__move));
        if (moves) px->perms = lt__malloc(sizeof(int) * (nperm ? nperm : 1));
    }
    if (!px || !px->states || !p->steps || (moves && (!px->moves || !px->perms))) {
        lt_plan_free(p);
        return lt__err(LT_NOMEM, "out of memory for %s", what), NULL;
    }
    p->mesh = *h->mesh;
    p->dtype = h->dtype;
    p->ndim = h->ndim;
    memcpy(p->shape, h->shape, sizeof(int64_t) * (size_t)h->ndim);
    memcpy(p->src, h->src, sizeof(lt_placement) * (size_t)M);
    memcpy(p->dst, h->dst, sizeof(lt_placement) * (size_t)M);
    memcpy(px->states, h->src, sizeof(lt_placement) * (size_t)M);
    p->planner = h->planner;
    p->nsteps = n;
    return p;
}

/* ---- cache --------------------------------------------------------------------- */

static void plan_ref(void *v) { lt_plan_ref(v); }
static void plan_release(void *v) { lt_plan_free(v); }

static lt__cache plan_cache = LT__CACHE_INIT(plan_ref, plan_release, 4096);

/* Key: planner, mesh shape, the source spec (lt__key_spec: dtype, global
 * shape, normalized placements) and the destination's placements. */
static void build_key(lt__cache_key *k, const lt_spec *src, const lt_placement *dst,
                      lt_planner planner) {
    const lt_mesh *mesh = src->mesh;
    k->n = 0;
    lt__key_put(k, (uint64_t)mesh->ndim | (uint64_t)planner << 16);
    for (int i = 0; i < mesh->ndim; i++) lt__key_put(k, (uint64_t)mesh->shape[i]);
    lt__key_spec(k, src);
    for (int i = 0; i < mesh->ndim; i++) lt__key_placement(k, &dst[i]);
}

void lt_plan_cache_clear(void) {
    lt__cache_clear(&plan_cache);
    lt__ms_clear();        /* the searches' shared spaces (plan_memo.c) */
    lt__mc_space_clear();  /* their level prunings (plan_space.c) */
    lt__move_layouts_clear();   /* the executor's layouts (plan_exec.c) */
    lt__state_bytes_clear();    /* the memory estimate's state bytes (redistribute.c) */
    lt__spare_clear();          /* the searches' spare tables (plan_frontier.c) */
}

void lt_plan_cache_stats(size_t *hits, size_t *misses, size_t *entries) {
    lt__cache_stats(&plan_cache, hits, misses, entries);
}

/* ---- checks and rejections ------------------------------------------------------- */

/* Normalizes negative dims without any message; 0 when something needs the
 * full check (the count, a dim out of range). */
static int quick_normalize(int ndim, const lt_placement *pl, int np, lt_placement *out) {
    for (int i = 0; i < np; i++) {
        out[i] = pl[i];
        if (lt_placement_is_shard_like(&pl[i])) {
            if (pl[i].dim < -ndim || pl[i].dim >= ndim) return 0;
            if (out[i].dim < 0) out[i].dim += ndim;
        }
    }
    return 1;
}

static const char *tensor_name(const lt_redistribute_opts *o, char *buf, size_t n) {
    if (o && o->name && o->name[0]) snprintf(buf, n, "'%s'", o->name);
    else snprintf(buf, n, "an unnamed tensor");
    return buf;
}

/* "planning redistribute of 'w' [S(0), R] -> [R, S(1)]" into buf (errors
 * add it with lt__err_while). */
static void context_str(const lt_redistribute_opts *o, const lt_placement *src,
                        const lt_placement *dst, int np, char *buf, size_t n) {
    char nm[160], a[512], b[512];
    lt_placements_format(src, np, a, sizeof a);
    lt_placements_format(dst, np, b, sizeof b);
    snprintf(buf, n, "planning redistribute of %s %s -> %s", tensor_name(o, nm, sizeof nm), a, b);
}

/* What context_str needs, kept so that the context is formatted only when
 * an error needs it (planning runs on every redistribute). */
typedef struct plan_ctx {
    const lt_redistribute_opts *o;
    const lt_placement *src, *dst;   /* (np) each */
    int np;
} plan_ctx;

/* st with c's context and then suffix added to its message (lt__err_while). */
static lt_status ctx_err(lt_status st, const plan_ctx *c, const char *suffix) {
    char ctxs[1400];
    context_str(c->o, c->src, c->dst, c->np, ctxs, sizeof ctxs);
    return lt__err_while(st, "%s%s", ctxs, suffix);
}

static lt_status reject(const lt_mesh *mesh, lt_dtype dtype, const lt_placement *src,
                        const lt_placement *dst) {
    for (int i = 0; i < mesh->ndim; i++) {
        const lt_placement *a = &src[i], *b = &dst[i];
        if (mesh->shape[i] == 1 || b->kind != LT_PL_PARTIAL) continue;
        char fa[128], fb[128];
        lt_placement_format(a, fa, sizeof fa);
        lt_placement_format(b, fb, sizeof fb);
        if (a->kind == LT_PL_SHARD && b->op == LT_REDOP_SUM)
            continue;   /* zero fill (plan_zero_fill.c) */
        if (lt_placement_is_shard_like(a))
            return lt__err(LT_UNSUPPORTED,
                           "mesh dim %d: %s -> %s is not supported: only Shard -> Partial(sum) is "
                           "(by zero fill; docs/SEMANTICS.md §7); go through R for %s",
                           i, fa, fb, fb);
        if (a->kind == LT_PL_PARTIAL && a->op != b->op)
            return lt__err(LT_UNSUPPORTED,
                           "mesh dim %d: %s -> %s is not supported: redistribution from one "
                           "partial type to another is unsupported",
                           i, fa, fb);
        if (a->kind == LT_PL_REPLICATE && b->op == LT_REDOP_PRODUCT)
            return lt__err(LT_UNSUPPORTED,
                           "mesh dim %d: %s -> %s is not supported: Replicate to Partial(product) "
                           "conversion is not supported",
                           i, fa, fb);
        if (a->kind == LT_PL_REPLICATE && b->op == LT_REDOP_SUM && !lt_dtype_is_float(dtype))
            return lt__err(LT_UNSUPPORTED,
                           "mesh dim %d: %s -> %s is not supported for %s: partitioning a sum "
                           "divides by the mesh dim size and would truncate",
                           i, fa, fb, lt_dtype_name(dtype));
    }
    return LT_OK;
}

static _Thread_local lt__cache_key plan_key;

/* A cache hit, or NULL. `src` need not be checked: only checked specs are
 * ever stored, so a hit means this tuple was checked before. */
static lt_plan *cache_lookup(const lt_spec *src, const lt_placement *dst, lt_planner planner) {
    static _Thread_local lt__cache_memo memo; /* this thread's last hit */
    uint64_t h;
    build_key(&plan_key, src, dst, planner);
    return lt__cache_lookup(&plan_cache, &memo, &plan_key, &h);
}

/* Plans a checked pair (src spec, dst placements of the same tensor):
 * rejections, the planners, the cache. ctx: the context of error messages. */
static lt_status plan_checked(const lt_spec *src, const lt_placement *dst, lt_planner planner,
                              int use_cache, const plan_ctx *ctx, lt_plan **out) {
    lt_status st;
    if ((st = reject(src->mesh, src->dtype, src->placements, dst))) return ctx_err(st, ctx, "");
    lt_plan *p;
    if ((st = lt__plan_build(src, dst, planner, use_cache, &p))) return ctx_err(st, ctx, "");
    if (use_cache) {
        build_key(&plan_key, src, dst, planner);
        lt__cache_put(&plan_cache, &plan_key, lt__cache_key_hash(&plan_key), p);
    }
    *out = p;
    return LT_OK;
}

/* ---- opts->cost ------------------------------------------------------------------- */

/* Sets opts->cost (checked) as this thread's cost options for one planning
 * call; *was gets the previous ones for cost_leave. Options without a cost
 * leave the thread's as they are (the CLI's --objective and --moves). */
static lt_status cost_enter(const lt_redistribute_opts *opts, const lt_plan_cost **was) {
    const lt_plan_cost *c = opts ? opts->cost : NULL;
    *was = lt__plan_cost_cur;
    if (!c) return LT_OK;
    if ((unsigned)c->objective >= LT_OBJECTIVE_COUNT || (unsigned)c->moves >= LT_MOVES_COUNT)
        return lt__err(LT_INVALID, "redistribute: unknown objective %d or move set %d",
                       (int)c->objective, (int)c->moves);
    lt__plan_cost_swap(c);
    return LT_OK;
}

static lt_status cost_leave(const lt_plan_cost *was, lt_status st) {
    lt__plan_cost_swap(was);
    return st;
}

static int same_tensor(const lt_spec *a, const lt_spec *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    if (a->mesh != b->mesh && !lt_mesh_equal(a->mesh, b->mesh)) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

static lt_status plan_spec(const lt_spec *src, const lt_spec *dst,
                           const lt_redistribute_opts *opts, lt_plan **out) {
    lt_planner planner = opts ? opts->planner : LT_PLANNER_MIN_COST;
    int use_cache = !(opts && opts->no_cache) && lt__plan_cost_plain();
    *out = NULL;
    if ((unsigned)planner >= LT_PLANNER_COUNT)
        return lt__err(LT_INVALID, "unknown planner %d", (int)planner);
    if (!same_tensor(src, dst))
        return lt__err_in(
            LT_INVALID, "redistribute",
            ": source and destination specs describe different tensors (mesh, dtype or shape)");
    if (use_cache && (*out = cache_lookup(src, dst->placements, planner))) return LT_OK;
    plan_ctx ctx = {opts, src->placements, dst->placements, src->mesh->ndim};
    return plan_checked(src, dst->placements, planner, use_cache, &ctx, out);
}

lt_status lt_plan_redistribute_cost(const lt_spec *src, const lt_spec *dst,
                                   const lt_plan_cost *cost, lt_plan **out) {
    *out = NULL;
    if (!cost || (cost->objective == LT_OBJECTIVE_BYTES && cost->moves == LT_MOVES_COLLECTIVES)) {
        const lt_plan_cost *was = lt__plan_cost_swap(NULL);   /* this call's options */
        lt_status st = lt_plan_redistribute_spec(src, dst, NULL, out);
        lt__plan_cost_swap(was);
        return st;
    }
    if ((unsigned)cost->objective >= LT_OBJECTIVE_COUNT || (unsigned)cost->moves >= LT_MOVES_COUNT)
        return lt__err(LT_INVALID, "unknown objective %d or move set %d", (int)cost->objective,
                       (int)cost->moves);
    if (!same_tensor(src, dst))
        return lt__err_in(LT_INVALID, "redistribute",
                          ": source and destination specs describe different tensors "
                          "(mesh, dtype or shape)");
    plan_ctx ctx = {NULL, src->placements, dst->placements, src->mesh->ndim};
    /* plan_checked without the plan cache (its key has no cost options); the
     * shared search spaces hold nothing that depends on them (plan_search.c
     * keeps their lower bounds for bytes only) */
    lt_status st = reject(src->mesh, src->dtype, src->placements, dst->placements);
    if (st) return ctx_err(st, &ctx, "");
    const lt_plan_cost *was = lt__plan_cost_swap(cost);   /* read by this call's min-cost search */
    st = lt__plan_build(src, dst->placements, LT_PLANNER_MIN_COST, 1, out);
    lt__plan_cost_swap(was);
    if (st) return ctx_err(st, &ctx, "");
    return st;
}

static lt_status plan_from(const lt_spec *src, const lt_placement *dst, int np,
                           const lt_redistribute_opts *opts, lt_plan **out) {
    lt_placement d[LT_MESH_MAX_DIMS];
    lt_planner planner = opts ? opts->planner : LT_PLANNER_MIN_COST;
    int use_cache = !(opts && opts->no_cache) && lt__plan_cost_plain();
    const lt_mesh *mesh = src->mesh;
    *out = NULL;
    if ((unsigned)planner >= LT_PLANNER_COUNT)
        return lt__err(LT_INVALID, "unknown planner %d", (int)planner);
    if (np == mesh->ndim && use_cache && quick_normalize(src->ndim, dst, np, d) &&
        (*out = cache_lookup(src, d, planner)))
        return LT_OK;
    int nfmt = np < LT_MESH_MAX_DIMS ? np : LT_MESH_MAX_DIMS;
    plan_ctx ctx = {opts, src->placements, dst, nfmt};
    lt_spec ds;
    lt_status st = lt_placements_check(mesh, src->ndim, dst, np, d);
    if (!st) st = lt_spec_init(mesh, src->dtype, src->ndim, src->shape, d, np, &ds);
    if (st) return ctx_err(st, &ctx, ": destination");
    return plan_checked(src, ds.placements, planner, use_cache, &ctx, out);
}

static lt_status plan_pl(const lt_mesh *mesh, lt_dtype dtype, int ndim, const int64_t *shape,
                         const lt_placement *src, const lt_placement *dst, int np,
                         const lt_redistribute_opts *opts, lt_plan **out) {
    lt_placement s[LT_MESH_MAX_DIMS], d[LT_MESH_MAX_DIMS];
    lt_planner planner = opts ? opts->planner : LT_PLANNER_MIN_COST;
    int use_cache = !(opts && opts->no_cache) && lt__plan_cost_plain();
    *out = NULL;
    if ((unsigned)planner >= LT_PLANNER_COUNT)
        return lt__err(LT_INVALID, "unknown planner %d", (int)planner);
    if (ndim < 0 || ndim > LT_MAX_DIMS)
        return lt__err_in(LT_INVALID, "redistribute",
                          ": tensor has %d dims; at most %d are supported", ndim, LT_MAX_DIMS);
    lt_spec ss;
    int quick =
        np == mesh->ndim && quick_normalize(ndim, src, np, s) && quick_normalize(ndim, dst, np, d);
    if (quick && use_cache) {
        /* a key only, not checked (see cache_lookup) */
        memset(&ss, 0, sizeof ss);
        ss.mesh = mesh;
        ss.dtype = dtype;
        ss.ndim = ndim;
        if (ndim > 0) memcpy(ss.shape, shape, sizeof(int64_t) * (size_t)ndim);
        memcpy(ss.placements, s, sizeof(lt_placement) * (size_t)np);
        if ((*out = cache_lookup(&ss, d, planner))) return LT_OK;
    }
    int nfmt = np < LT_MESH_MAX_DIMS ? np : LT_MESH_MAX_DIMS;
    plan_ctx ctx = {opts, src, dst, nfmt};
    /* the checks in their historical order: both placement lists, then both
     * layouts (so the first error reported does not change) */
    int64_t numel;
    lt_status st = lt__numel_checked(ndim, shape, lt_dtype_size(dtype), &numel);
    if (!st) st = lt_placements_check(mesh, ndim, src, np, s);
    if (st) return ctx_err(st, &ctx, ": source");
    st = lt_placements_check(mesh, ndim, dst, np, d);
    if (st) return ctx_err(st, &ctx, ": destination");
    lt_spec ds;
    if ((st = lt_spec_init(mesh, dtype, ndim, shape, s, np, &ss)))
        return ctx_err(st, &ctx, ": source");
    if ((st = lt_spec_init(mesh, dtype, ndim, shape, d, np, &ds)))
        return ctx_err(st, &ctx, ": destination");
    return plan_checked(&ss, ds.placements, planner, use_cache, &ctx, out);
}

/* ---- text table -------------------------------------------------------------------- */

/* The mesh dims of step ps: "1 (tp)", or a flattened group's "0,1 (dp,tp)". */
static void mesh_dim_str(const lt_mesh *m, const lt_plan_step *ps, char *buf, size_t n) {
    char names[LT_MESH_MAX_DIMS * (LT_MESH_NAME_MAX + 1) + 1];
    lt__sbuf b = {buf, n, 0}, nm = {names, sizeof names, 0};
    int sp = ps->mesh_span > 1 ? ps->mesh_span : 1, named = 1;
    for (int i = ps->mesh_dim; i < ps->mesh_dim + sp; i++) {
        lt__sb_printf(&b, "%s%d", i > ps->mesh_dim ? "," : "", i);
        lt__sb_printf(&nm, "%s%s", i > ps->mesh_dim ? "," : "", m->names[i]);
        named &= m->names[i][0] != 0;
    }
    lt__sb_finish(&nm);
    if (named) lt__sb_printf(&b, " (%s)", names);
    lt__sb_finish(&b);
}

/* Step s's "from -> to": its mesh dim's placements, or a flattened
 * group's lists ("S(0), S(1) -> S(1), S(0)"). */
static void step_change_str(const lt_plan *p, int s, char *buf, size_t n) {
    const lt_plan_step *ps = &p->steps[s];
    char f[256], t[256];
    if (ps->mesh_span > 1) {
        const lt_placement *before = lt__plan_x_of(p)->states + (size_t)s * (size_t)p->mesh.ndim;
        lt_placements_format(before + ps->mesh_dim, ps->mesh_span, f, sizeof f);
        lt_placements_format(ps->after + ps->mesh_dim, ps->mesh_span, t, sizeof t);
        snprintf(buf, n, "%.*s -> %.*s", (int)strlen(f) - 2, f + 1, (int)strlen(t) - 2, t + 1);
        return;
    }
    lt_placement_format(&ps->from, f, sizeof f);
    lt_placement_format(&ps->to, t, sizeof t);
    snprintf(buf, n, "%s -> %s", f, t);
}

int lt_plan_format(const lt_plan *p, char *buf, size_t n) {
    lt__sbuf b = {buf, n, 0};
    if (n) buf[0] = '\0';
    char ms[128], shp[128], a[512], c[512];
    lt_mesh_format(&p->mesh, ms, sizeof ms);
    lt_shape_format(p->ndim, p->shape, shp, sizeof shp);
    lt_placements_format(p->src, p->mesh.ndim, a, sizeof a);
    lt_placements_format(p->dst, p->mesh.ndim, c, sizeof c);
    lt__sb_printf(&b, "plan (%s) of %s %s on mesh %s: %s -> %s\n", lt_planner_name(p->planner), shp,
              lt_dtype_name(p->dtype), ms, a, c);
    if (p->planner == LT_PLANNER_MIN_COST && p->search_truncated)
        lt__sb_printf(&b, "  (search budget exhausted: the best plan of the rule-table search, not "
                          "proven minimal)\n");
    if (p->nsteps == 0) {
        lt__sb_printf(&b, "  no steps (the placements already agree)\n");
        return (int)b.len;
    }
    /* column widths */
    int wmd = 8, wtr = 9, wco = 10;
    char md[320], tr[600], co[64];
    for (int s = 0; s < p->nsteps; s++) {
        const lt_plan_step *ps = &p->steps[s];
        mesh_dim_str(&p->mesh, ps, md, sizeof md);
        step_change_str(p, s, tr, sizeof tr);
        int l1 = (int)strlen(md), l2 = (int)strlen(tr);
        int l3 = (int)strlen(lt_plan_step_action(ps, co, sizeof co));
        if (l1 > wmd) wmd = l1;
        if (l2 > wtr) wtr = l2;
        if (l3 > wco) wco = l3;
    }
    lt__sb_printf(&b, "  %-4s  %-*s  %-*s  %-*s  %12s  %12s  %s\n", "step", wmd, "mesh dim", wtr,
                  "from -> to", wco, "collective", "bytes/rank", "bytes total", "placements after");
    for (int s = 0; s < p->nsteps; s++) {
        const lt_plan_step *ps = &p->steps[s];
        char after[1024];
        mesh_dim_str(&p->mesh, ps, md, sizeof md);
        step_change_str(p, s, tr, sizeof tr);
        lt_plan_step_action(ps, co, sizeof co);
        lt_placements_format(ps->after, p->mesh.ndim, after, sizeof after);
        lt__sb_printf(&b, "  %4d  %-*s  %-*s  %-*s  %12zu  %12zu  %s\n", s + 1, wmd, md, wtr, tr,
                      wco, co, ps->bytes_per_rank, ps->bytes_total, after);
    }
    lt__sb_printf(&b, "  total: %d step%s, %d collective%s, %zu bytes moved\n", p->nsteps,
              p->nsteps == 1 ? "" : "s", p->ncomm, p->ncomm == 1 ? "" : "s", p->total_bytes);
    return (int)b.len;
}

lt_status lt_plan_print(const lt_plan *p, FILE *f) {
    int n = lt_plan_format(p, NULL, 0);
    char *buf = lt__malloc((size_t)n + 1);
    if (!buf) return lt__err(LT_NOMEM, "out of memory formatting the plan table (%d bytes)", n + 1);
    lt_plan_format(p, buf, (size_t)n + 1);
    fputs(buf, f);
    lt__free(buf);
    return LT_OK;
}

/* ---- the entry points: each under opts->cost ------------------------------------ */

lt_status lt_plan_redistribute_spec(const lt_spec *src, const lt_spec *dst,
                                    const lt_redistribute_opts *opts, lt_plan **out) {
    const lt_plan_cost *was;
    *out = NULL;
    LT_TRY(cost_enter(opts, &was));
    return cost_leave(was, plan_spec(src, dst, opts, out));
}

lt_status lt__plan_redistribute_from(const lt_spec *src, const lt_placement *dst, int np,
                                     const lt_redistribute_opts *opts, lt_plan **out) {
    const lt_plan_cost *was;
    *out = NULL;
    LT_TRY(cost_enter(opts, &was));
    return cost_leave(was, plan_from(src, dst, np, opts, out));
}

lt_status lt_plan_redistribute(const lt_mesh *mesh, lt_dtype dtype, int ndim,
                               const int64_t *shape, const lt_placement *src,
                               const lt_placement *dst, int np,
                               const lt_redistribute_opts *opts, lt_plan **out) {
    const lt_plan_cost *was;
    *out = NULL;
    LT_TRY(cost_enter(opts, &was));
    return cost_leave(was, plan_pl(mesh, dtype, ndim, shape, src, dst, np, opts, out));
}
