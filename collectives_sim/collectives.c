/* collectives_sim/collectives.c — the public collectives: validate, shape,
 * allocate, run the engine, trace.
 *
 * Every wrapper follows the same four steps, so that an engine never sees
 * bad input (engine.h) and a failed call leaves nothing behind:
 *   1. validate the arguments of every group and compute every member's
 *      result shape, twice: the first pass adds up the bytes of the outputs
 *      to create and refuses them up front when they cannot fit in memory
 *      (kernels/memlimit_impl.h); the second creates the outputs that were NULL
 *      (marked `fresh`) and checks the preallocated ones; on any error free
 *      the fresh ones again;
 *   2. check that no preallocated output overlaps another output, and swap
 *      in a temporary for any that overlaps an input it must not;
 *   3. run the engine once per group (on the in-process engine, the groups
 *      of a big call at the same time: groups_in_parallel), then copy
 *      temporaries back;
 *   4. append one trace event (capacity was reserved before step 3, so
 *      recording cannot fail after the data moved).
 * On an engine spread over processes every call passes the engine's
 * `agree` before the engine (end of step 2, or on its way out: finish)
 * and, having run every group, once after it.
 * Scratch arrays (group tables, split sizes, overlap intervals) live on the
 * communicator and grow geometrically, so the preallocated path does not
 * allocate in steady state.
 */
#include "collectives_sim/engine_impl.h"
#include "collectives_sim/overlap_impl.h"
#include "localtensor/collectives_sim/collectives.h"
#include "collectives_sim/trace_impl.h"
#include "kernels/alloc.h"
#include "kernels/memlimit_impl.h"
#include "kernels/pool_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/collectives_sim/engine.h"

static const char *const coll_names[] = {
#define LT__XX(e, s, a, b, c, d) s,
    LT_COLL_MAP(LT__XX)
#undef LT__XX
};

const char *lt_coll_name(lt_coll c) { return lt__name_of(coll_names, LT_COLL_COUNT, (int)c); }

lt_status lt_coll_parse(const char *s, lt_coll *out) {
    int i = lt__name_find(coll_names, LT_COLL_COUNT, s);
    if (i >= 0) { *out = (lt_coll)i; return LT_OK; }
    char list[256];
    return lt__err(LT_INVALID, "unknown collective '%s' (expected %s)", s,
                   lt__name_join_or(coll_names, LT_COLL_COUNT, list, sizeof list));
}

struct lt_comm {
    lt_mesh mesh;
    const lt_engine_i *eng;
    void *ectx;
    lt_trace *trace;
    int *groups[LT_MESH_MAX_DIMS];  /* (ngroups, n) ranks of every group of each mesh dim */
    unsigned char *fresh;           /* (world) 1: this call created out[r] */
    int *need_tmp;                  /* (world) 1: out[r] overlaps an input */
    lt_tensor **tmp;                /* (world) temporaries standing in for out[r] */
    lt_tensor **eng_out;            /* (world) what the engine writes */
    lt__ival *iv;                   /* (2 world) overlap intervals */
    int64_t *sizes;                 /* split sizes of every group */
    size_t sizes_cap;
    int *share; /* (ngroups + table) same_as of every group, then a hash table */
    size_t share_cap;
    unsigned char *held;            /* (world) 1: this process holds the rank (engine.h `holds`) */
    int nheld;                      /* how many; the world unless the engine spans processes */
    int share_absent;               /* lt__comm_share_absent (engine_impl.h) */
    /* lt__comm_flat's communicators, [first mesh dim][dims - 2], made on first
     * use and freed with this one; in one of them: its trace is the parent's
     * (borrowed, not freed) */
    struct lt_comm *flat[LT_MESH_MAX_DIMS][LT_MESH_MAX_DIMS - 1];
    int trace_borrowed;
};

/* One call in progress. */
typedef struct call {
    lt_comm *c;
    lt_coll coll;
    int md, n, ngroups;
    lt_tensor *const *in;
    lt_tensor **out;
    int root;          /* rooted collectives, else -1 */
    int root_reads;    /* only the root's input is read */
    int self_alias_ok; /* out[r] may be exactly in[r] */
    int any_prealloc;  /* some output was preallocated */
    int any_fresh;     /* some output was created by this call */
    int sizing;        /* first pass: prepare_out only adds up `need` */
    int share_groups;  /* every output is created here: groups with the same inputs share results */
    int share_members; /* every member's result is the same (all_gather, all_reduce, broadcast) */
    const int *same_as;/* (ngroups) an earlier group whose inputs are the same buffers, or -1 */
    uint64_t need;     /* bytes of the outputs this call will create */
    int agreed;        /* the engine's agreement (engine.h `agree`) took place */
} call;

static const int *grp(const call *k, int g) { return k->c->groups[k->md] + (size_t)g * k->n; }

/* ---- communicator ---------------------------------------------------------- */

static void comm_release(lt_comm *c) {
    if (!c) return;
    for (int i = 0; i < LT_MESH_MAX_DIMS; i++)
        for (int k = 0; k < LT_MESH_MAX_DIMS - 1; k++) comm_release(c->flat[i][k]);
    if (c->eng) c->eng->free(c->ectx);
    for (int d = 0; d < LT_MESH_MAX_DIMS; d++) lt__free(c->groups[d]);
    lt__free(c->fresh);
    lt__free(c->need_tmp);
    lt__free(c->tmp);
    lt__free(c->eng_out);
    lt__free(c->iv);
    lt__free(c->sizes);
    lt__free(c->share);
    lt__free(c->held);
    if (!c->trace_borrowed) lt_trace_free(c->trace);
    lt__free(c);
}

lt_status lt_comm_new_engine(const lt_mesh *m, const lt_engine_i *iface, lt_comm **out) {
    if (!out) return lt__err(LT_INVALID, "lt_comm_new: out is NULL");
    *out = NULL;
    if (!m || m->ndim < 1 || m->ndim > LT_MESH_MAX_DIMS || m->world < 1)
        return lt__err(LT_INVALID, "lt_comm_new: invalid mesh (build it with lt_mesh_init)");
    if (!iface) iface = lt_engine_inproc();
    const char *nm = iface->name ? iface->name : "?";
    if (iface->version != LT_ENGINE_API_VERSION)
        return lt__err(LT_INVALID, "engine '%s' has API version %d, expected %d", nm,
                       iface->version, LT_ENGINE_API_VERSION);
    if (!iface->init || !iface->free || !iface->all_gather || !iface->all_reduce ||
        !iface->reduce_scatter || !iface->all_to_all || !iface->broadcast)
        return lt__err(LT_INVALID, "engine '%s' lacks a required entry", nm);
    lt_comm *c = lt__calloc(1, sizeof *c);
    if (!c) return lt__err(LT_NOMEM, "lt_comm_new: out of memory");
    c->mesh = *m;
    size_t w = (size_t)m->world;
    c->fresh = lt__calloc(w, 1);
    c->need_tmp = lt__calloc(w, sizeof *c->need_tmp);
    c->tmp = lt__calloc(w, sizeof *c->tmp);
    c->eng_out = lt__calloc(w, sizeof *c->eng_out);
    c->iv = lt__calloc(2 * w, sizeof *c->iv);
    c->held = lt__malloc(w);
    int ok = c->fresh && c->need_tmp && c->tmp && c->eng_out && c->iv && c->held;
    for (int d = 0; ok && d < m->ndim; d++) {
        int n = m->shape[d], ng = lt_mesh_ngroups(m, d);
        c->groups[d] = lt__malloc(w * sizeof(int));
        if (!c->groups[d]) ok = 0;
        for (int g = 0; ok && g < ng; g++) lt_mesh_group(m, d, g, c->groups[d] + (size_t)g * n);
    }
    if (!ok) {
        comm_release(c);
        return lt__err(LT_NOMEM, "lt_comm_new: out of memory");
    }
    lt_status st = lt_trace_new(m->world, &c->trace);
    if (st == LT_OK) {
        st = iface->init(m, &c->ectx);
        if (st == LT_OK) c->eng = iface;
    }
    for (int r = 0; st == LT_OK && r < m->world; r++) {
        c->held[r] = !iface->holds || iface->holds(c->ectx, r) ? 1 : 0;
        c->nheld += c->held[r];
    }
    if (st != LT_OK) {
        comm_release(c);
        return st;
    }
    *out = c;
    return LT_OK;
}

lt_status lt_comm_new(const lt_mesh *mesh, lt_comm **out) {
    return lt_comm_new_engine(mesh, NULL, out);
}
void lt_comm_free(lt_comm *c) { comm_release(c); }

lt_status lt__comm_flat(lt_comm *c, int first, int span, lt_comm **out) {
    *out = NULL;
    if (span < 2 || first < 0 || first + span > c->mesh.ndim)
        return lt__err(LT_INVALID, "internal: flattened group of mesh dims %d..%d of a %d-dim mesh",
                       first, first + span - 1, c->mesh.ndim);
    lt_comm **slot = &c->flat[first][span - 2];
    if (!*slot) {
        int dims[LT_MESH_MAX_DIMS];
        for (int k = 0; k < span; k++) dims[k] = first + k;
        lt_mesh fm;
        LT_TRY(lt_mesh_flatten(&c->mesh, dims, span, NULL, &fm));
        lt_comm *f = NULL;
        LT_TRY(lt_comm_new_engine(&fm, c->eng, &f));
        lt_trace_free(f->trace);   /* its events go to the parent's trace */
        f->trace = c->trace;
        f->trace_borrowed = 1;
        *slot = f;
    }
    (*slot)->share_absent = c->share_absent;
    *out = *slot;
    return LT_OK;
}
int lt_comm_holds(const lt_comm *c, int rank) {
    return c && rank >= 0 && rank < c->mesh.world && c->held[rank];
}
int lt_comm_nheld(const lt_comm *c) { return c ? c->nheld : 0; }
int lt_comm_owner(const lt_comm *c, int rank) {
    return c && c->eng && c->eng->owner && rank >= 0 && rank < c->mesh.world
               ? c->eng->owner(c->ectx, rank)
               : 0;
}
void lt__comm_share_absent(lt_comm *c, int on) { if (c) c->share_absent = on; }
lt_status lt__comm_agree(lt_comm *c, lt_status st) {
    return c && c->eng->agree ? c->eng->agree(c->ectx, st) : st;
}
const lt_mesh *lt_comm_mesh(const lt_comm *c) { return &c->mesh; }
lt_trace *lt_comm_trace(lt_comm *c) { return c->trace; }
const char *lt_comm_engine_name(const lt_comm *c) { return c->eng->name; }

/* ---- messages ---------------------------------------------------------------- */

/* "[0,4]" (the members' rank ids, mesh.h); long groups are elided in the middle. */
static void group_str(const lt_mesh *m, const int *ranks, int n, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int p = 0; p < n && used + 16 < cap; p++) {
        if (n > 12 && p == 8) {
            used += (size_t)snprintf(buf + used, cap - used, ",...");
            p = n - 3;
            continue;
        }
        used += (size_t)snprintf(buf + used, cap - used, "%s%d", p ? "," : "",
                                 lt_mesh_rank_id(m, ranks[p]));
    }
    snprintf(buf + used, cap - used, "]");
}

/* The rank id of position r, which messages name (mesh.h). */
#define RID(k, r) lt_mesh_rank_id(&(k)->c->mesh, (r))

/* "all_reduce on mesh dim 1 (tp), group [1,3]" (g < 0: no group) */
static void prefix(const call *k, int g, char *buf, size_t cap) {
    const lt_mesh *m = &k->c->mesh;
    char name[LT_MESH_NAME_MAX + 4] = "", gs[160];
    if (m->names[k->md][0]) snprintf(name, sizeof name, " (%s)", m->names[k->md]);
    if (g < 0) {
        snprintf(buf, cap, "%s on mesh dim %d%s", lt_coll_name(k->coll), k->md, name);
        return;
    }
    group_str(m, grp(k, g), k->n, gs, sizeof gs);
    snprintf(buf, cap, "%s on mesh dim %d%s, group %s", lt_coll_name(k->coll), k->md, name, gs);
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
/* Sets the message "<prefix>: <fmt...>"; with ctx, keeps the callee's
 * message after it ("<prefix>: <fmt...>: <old>"). */
static lt_status gerr(const call *k, int g, int ctx, lt_status st, const char *fmt, ...) {
    char msg[1024], pre[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    prefix(k, g, pre, sizeof pre);
    if (ctx) return lt__err_ctx(st, "%s: %s", pre, msg);
    return lt__err(st, "%s: %s", pre, msg);
}

/* "shape (2, 3)" or "a placeholder for (2, 3)" */
static char *desc(const lt_tensor *t, char *buf, size_t cap) {
    char s[128];
    if (t->placeholder) {
        lt_shape_format(t->logical_ndim, t->logical, s, sizeof s);
        snprintf(buf, cap, "a placeholder for %s", s);
    } else {
        lt_shape_format(t->ndim, t->shape, s, sizeof s);
        snprintf(buf, cap, "shape %s", s);
    }
    return buf;
}

/* ---- validation helpers ------------------------------------------------------- */

/* ---- shared results ---------------------------------------------------------- */

/* A hash of group g's inputs (which buffers, where); 0 when one is NULL. */
static uint64_t inputs_hash(const call *k, int g) {
    const int *rk = grp(k, g);
    uint64_t h = 1469598103934665603u;
    for (int p = 0; p < k->n; p++) {
        const lt_tensor *t = k->in[rk[p]];
        if (!t || (t->absent && !k->c->share_absent)) return 0;   /* see lt__comm_share_absent */
        h = (h ^ (uint64_t)(uintptr_t)t->storage) * 1099511628211u;
        h = (h ^ (uint64_t)t->offset) * 1099511628211u;
    }
    return h ? h : 1;
}

static int same_inputs(const call *k, int g, int q) {
    const int *a = grp(k, g), *b = grp(k, q);
    for (int p = 0; p < k->n; p++)
        if (!lt_tensor_same_view(k->in[a[p]], k->in[b[p]])) return 0;
    return 1;
}

/* When this call creates every output: same_as[g] = the first group whose
 * members' inputs are exactly group g's buffers (a collective along one
 * mesh dim of a tensor replicated along another), whose results group g
 * then shares instead of computing them again. */
static lt_status plan_share(call *k) {
    lt_comm *c = k->c;
    int W = c->mesh.world;
    for (int r = 0; r < W; r++)
        if (k->out[r]) return LT_OK;   /* preallocated outputs: every group writes its own */
    size_t tab = 1;
    while (tab < 2 * (size_t)k->ngroups) tab *= 2;
    size_t need = (size_t)k->ngroups + tab;
    if (need > c->share_cap) {
        int *p = lt__realloc(c->share, need * sizeof *p);
        if (!p) return gerr(k, -1, 0, LT_NOMEM, "out of memory for the table of shared results");
        c->share = p;
        c->share_cap = need;
    }
    int *same = c->share, *slot = c->share + k->ngroups;
    for (size_t i = 0; i < tab; i++) slot[i] = -1;
    for (int g = 0; g < k->ngroups; g++) {
        same[g] = -1;
        uint64_t h = inputs_hash(k, g);
        if (!h) continue;
        for (size_t i = (size_t)h & (tab - 1);; i = (i + 1) & (tab - 1)) {
            if (slot[i] < 0) {
                slot[i] = g;
                break;
            }
            if (same_inputs(k, g, slot[i])) {
                same[g] = slot[i];
                break;
            }
        }
    }
    k->same_as = same;
    k->share_groups = 1;
    return LT_OK;
}

/* The rank whose result rank r (in group g) shares, or -1. */
static int share_src(const call *k, int g, int r) {
    if (!k->share_groups) return -1;
    const int *rk = grp(k, g);
    int p = 0;
    while (p < k->n && rk[p] != r) p++;
    if (k->same_as[g] >= 0)
        return grp(k, k->same_as[g])[p]; /* the same held input: held there too */
    if (k->share_members)   /* the first member this process holds */
        for (int q = 0; q < p; q++)
            if (k->c->held[rk[q]]) return rk[q];
    return -1;
}

static lt_status begin(call *k, lt_comm *c, lt_coll coll, int mesh_dim, lt_tensor *const *in,
                       lt_tensor **out) {
    memset(k, 0, sizeof *k);
    k->c = c;
    k->coll = coll;
    k->md = mesh_dim;
    k->in = in;
    k->out = out;
    k->root = -1;
    if (!c) return lt__err(LT_INVALID, "%s: the communicator is NULL", lt_coll_name(coll));
    if (mesh_dim < 0 || mesh_dim >= c->mesh.ndim) {
        char ms[128];
        lt_mesh_format(&c->mesh, ms, sizeof ms);
        return lt__err(LT_INVALID, "%s: mesh dim %d is out of range for mesh %s (%d dim%s)",
                       lt_coll_name(coll), mesh_dim, ms, c->mesh.ndim,
                       c->mesh.ndim == 1 ? "" : "s");
    }
    k->n = c->mesh.shape[mesh_dim];
    k->ngroups = c->mesh.world / k->n;
    if (coll != LT_COLL_BARRIER && (!in || !out))
        return gerr(k, -1, 0, LT_INVALID, "the %s array is NULL (one entry per rank expected)",
                    !in ? "input" : "output");
    for (int r = 0; coll != LT_COLL_BARRIER && r < c->mesh.world; r++)
        if (in[r] && in[r]->absent && c->held[r])
            return gerr(k, -1, 0, LT_INVALID,
                        "rank %d's input is absent (a shape without values), but this process "
                        "holds rank %d on engine '%s'",
                        RID(k, r), RID(k, r), c->eng->name);
    return coll == LT_COLL_BARRIER ? LT_OK : plan_share(k);
}

static lt_status check_root(call *k, int root) {
    k->root = root;
    if (root < 0 || root >= k->n)
        return gerr(k, -1, 0, LT_INVALID,
                    "root %d is out of range: groups have %d rank%s, so root is "
                    "a position 0..%d",
                    root, k->n, k->n == 1 ? "" : "s", k->n - 1);
    return LT_OK;
}

static lt_status check_op(const call *k, lt_redop op) {
    if ((int)op < 0 || op >= LT_REDOP_COUNT)
        return gerr(k, -1, 0, LT_INVALID, "unknown reduce op %d", (int)op);
    return LT_OK;
}

/* Frees what this call created; the message already set stays. */
static lt_status fail(call *k, lt_status st) {
    if (!k->c || !k->out) return st;
    for (int r = 0; r < k->c->mesh.world; r++) {
        if (k->c->fresh[r]) {
            lt_tensor_free(k->out[r]);
            k->out[r] = NULL;
            k->c->fresh[r] = 0;
        }
        lt_tensor_free(k->c->tmp[r]);
        k->c->tmp[r] = NULL;
    }
    return st;
}

/* Room for `count` split sizes. */
static lt_status sizes_room(call *k, size_t count) {
    lt_comm *c = k->c;
    if (count <= c->sizes_cap) return LT_OK;
    size_t nc = c->sizes_cap ? c->sizes_cap : 64;
    while (nc < count) {
        if (nc > SIZE_MAX / 4 / sizeof(int64_t))
            return gerr(k, -1, 0, LT_NOMEM, "too many split pieces");
        nc *= 2;
    }
    int64_t *p = lt__realloc(c->sizes, nc * sizeof *p);
    if (!p) return gerr(k, -1, 0, LT_NOMEM, "out of memory for %zu split sizes", count);
    c->sizes = p;
    c->sizes_cap = nc;
    return LT_OK;
}

/* Between the two passes: refuses up front results that cannot fit in
 * memory (every rank's result exists at once), before any is created. */
static lt_status room(call *k) {
    /* nothing new (every output given): lt__mem_check passes without reading
     * the prefix, which costs 2,000 instructions to format (a 4K call's 12%) */
    if (k->need == 0) return LT_OK;
    char pre[256];
    prefix(k, -1, pre, sizeof pre);
    return lt__mem_check(k->need, k->c->mesh.world, pre);
}

/* in of member p of group g, which must not be NULL */
static lt_status input(const call *k, int g, int p, const lt_tensor **t) {
    int r = grp(k, g)[p];
    *t = k->in[r];
    if (!*t) return gerr(k, g, 0, LT_INVALID, "rank %d has no input (NULL)", RID(k, r));
    return LT_OK;
}

static lt_status same_dtype(const call *k, int g, int p, int q) {
    const int *rk = grp(k, g);
    const lt_tensor *a = k->in[rk[p]], *b = k->in[rk[q]];
    if (a->dtype != b->dtype)
        return gerr(k, g, 0, LT_DTYPE, "rank %d has dtype %s but rank %d has dtype %s",
                    RID(k, rk[p]), lt_dtype_name(a->dtype), RID(k, rk[q]), lt_dtype_name(b->dtype));
    return LT_OK;
}

/* Members p and q agree on ndim and on every dim but `skip` (-1: all). */
static lt_status same_shape(const call *k, int g, int p, int q, int skip) {
    const int *rk = grp(k, g);
    const lt_tensor *a = k->in[rk[p]], *b = k->in[rk[q]];
    int bad = a->ndim != b->ndim || a->placeholder != b->placeholder;
    for (int i = 0; !bad && i < a->ndim; i++)
        if (i != skip && a->shape[i] != b->shape[i]) bad = 1;
    if (!bad) return LT_OK;
    char da[160], db[160], why[64] = "";
    if (skip >= 0) snprintf(why, sizeof why, "; all dims but dim %d must agree", skip);
    return gerr(k, g, 0, LT_SHAPE, "rank %d has %s but rank %d has %s%s", RID(k, rk[p]),
                desc(a, da, sizeof da), RID(k, rk[q]), desc(b, db, sizeof db), why);
}

/* Every member's input present, of member 0's dtype and shape (but `skip`).
 * One tight pass; the helpers above only run to word an error. */
static lt_status uniform(const call *k, int g, int skip) {
    const int *rk = grp(k, g);
    const lt_tensor *t0 = k->in[rk[0]], *t;
    if (!t0) return input(k, g, 0, &t);
    for (int p = 1; p < k->n; p++) {
        t = k->in[rk[p]];
        int bad =
            !t || t->dtype != t0->dtype || t->ndim != t0->ndim || t->placeholder != t0->placeholder;
        for (int i = 0; !bad && i < t0->ndim; i++) bad = i != skip && t->shape[i] != t0->shape[i];
        if (!bad) continue;
        LT_TRY(input(k, g, p, &t));
        LT_TRY(same_dtype(k, g, p, 0));
        LT_TRY(same_shape(k, g, p, 0, skip));
    }
    return LT_OK;
}

static lt_status dim_ok(const call *k, int g, int p, const char *what, int dim) {
    const lt_tensor *t = k->in[grp(k, g)[p]];
    if (dim >= 0 && dim < t->ndim) return LT_OK;
    char ds[160];
    return gerr(k, g, 0, LT_INVALID, "%s %d is out of range for rank %d's %s (dims are 0..%d)",
                what, dim, RID(k, grp(k, g)[p]), desc(t, ds, sizeof ds), t->ndim - 1);
}

static lt_status op_ok_for(const call *k, int g, lt_redop op, lt_dtype dt) {
    if (dt == LT_BOOL && op == LT_REDOP_AVG)
        return gerr(k, g, 0, LT_UNSUPPORTED, "op avg is not defined for bool (sum/max give or, "
                    "product/min give and)");
    return LT_OK;
}

/* Sizes of n pieces of member p's dim `dim` into sz[n]. */
static lt_status split(const call *k, int g, int p, int dim, const lt_split_rule *rule,
                       int64_t *sz) {
    lt_split_rule chunk = lt_split_chunk();
    const lt_tensor *t = k->in[grp(k, g)[p]];
    lt_status st = lt_split_sizes(rule ? rule : &chunk, t->shape[dim], k->n, sz);
    if (st) {
        char ds[160], rs[256];
        lt_split_rule_format(rule ? rule : &chunk, rs, sizeof rs);
        return gerr(k, g, 1, st, "cannot split dim %d of rank %d's %s into %d pieces by rule %s",
                        dim, RID(k, grp(k, g)[p]), desc(t, ds, sizeof ds), k->n, rs);
    }
    return LT_OK;
}

/* The end of making out[r] (st: how that went): an error naming the rank, or
 * out[r] marked as this call's (fail() frees it). */
static lt_status created(call *k, int g, int r, lt_status st) {
    if (st) return gerr(k, g, 1, st, "result of rank %d", RID(k, r));
    k->c->fresh[r] = 1;
    k->any_fresh = 1;
    return LT_OK;
}

/* Creates out[r] (when NULL) or checks it (when preallocated) for a result of
 * dtype dt and shape (ndim, shape), a placeholder for it when `placeholder`. */
static lt_status prepare_out(call *k, int g, int r, lt_dtype dt, int ndim, const int64_t *shape,
                             int placeholder) {
    lt_tensor *o = k->out[r];
    if (!k->c->held[r]) /* held by another process: the result's shape only (a placeholder has no
                           bytes) */
        return k->sizing || o
                   ? LT_OK
                   : created(k, g, r,
                             placeholder ? lt_tensor_placeholder(dt, ndim, shape, &k->out[r])
                                         : lt_tensor_absent(dt, ndim, shape, &k->out[r]));
    int src = share_src(k, g, r);
    if (src >= 0) {   /* the same result as rank src: one buffer */
        if (k->sizing) return LT_OK;
        return created(k, g, r, lt_tensor_view(k->out[src], &k->out[r]));
    }
    if (k->sizing) {
        if (o || placeholder) return LT_OK;
        int64_t n;
        size_t es = lt_dtype_size(dt);
        lt_status st = lt__numel_checked(ndim, shape, es, &n);
        if (st) return gerr(k, g, 1, st, "result of rank %d", RID(k, r));
        k->need =
            lt__add_sat(k->need, (uint64_t)n * es); /* n * es fits: numel_checked bounds bytes */
        return LT_OK;
    }
    if (!o)
        return created(k, g, r, placeholder ? lt_tensor_placeholder(dt, ndim, shape, &k->out[r])
                                            : lt_tensor_empty(dt, ndim, shape, &k->out[r]));
    k->any_prealloc = 1;
    int64_t want[LT_MAX_DIMS]; /* the real shape of a placeholder: dim 0 set to 0 */
    int wnd = placeholder && ndim == 0 ? 1 : ndim;
    memcpy(want, shape, (size_t)ndim * sizeof *shape);
    if (placeholder) want[0] = 0;
    int ok = o->dtype == dt && o->ndim == wnd;
    for (int i = 0; ok && i < wnd; i++) ok = o->shape[i] == want[i];
    if (!ok) {
        char have[128], res[128];
        lt_shape_format(o->ndim, o->shape, have, sizeof have);
        lt_shape_format(ndim, shape, res, sizeof res);
        return gerr(k, g, 0, o->dtype != dt ? LT_DTYPE : LT_SHAPE,
                    "preallocated output of rank %d has shape %s %s but the result is %s%s %s",
                    RID(k, r),
                    have, lt_dtype_name(o->dtype), placeholder ? "a placeholder for " : "", res,
                    lt_dtype_name(dt));
    }
    if (!lt_is_contiguous(o))
        return gerr(k, g, 0, LT_INVALID, "preallocated output of rank %d is not contiguous",
                    RID(k, r));
    o->placeholder = placeholder;
    o->logical_ndim = placeholder ? ndim : 0;
    if (placeholder) memcpy(o->logical, shape, (size_t)ndim * sizeof *shape);
    return LT_OK;
}

/* ---- overlap check ------------------------------------------------------------- */

/* Sets need_tmp[r] (and returns their count in *ntmp) for outputs that
 * overlap an input they must not; two overlapping outputs are an error. */
static lt_status check_overlap(call *k, int *ntmp) {
    lt_comm *c = k->c;
    size_t n = 0;
    int W = c->mesh.world;
    *ntmp = 0;
    /* inputs first: buffers usually come in allocation order, so the list
     * is nearly sorted already */
    for (int g = 0; k->root_reads && g < k->ngroups; g++) {   /* only the roots' inputs are read */
        int r = grp(k, g)[k->root];
        if (c->held[r]) lt__ival_add(c->iv, &n, k->in[r], r, 0);
    }
    for (int r = 0; !k->root_reads && r < W; r++)
        if (c->held[r]) lt__ival_add(c->iv, &n, k->in[r], r, 0);
    size_t nin = n;
    for (int r = 0; r < W; r++)
        if (!c->fresh[r] && c->held[r]) lt__ival_add(c->iv, &n, k->out[r], r, 1);
    if (n == nin) return LT_OK;
    int ra, rb;
    if (lt__ival_overlaps(c->iv, n, k->self_alias_ok, c->need_tmp, ntmp, &ra, &rb))
        return gerr(k, -1, 0, LT_INVALID, "the preallocated outputs of ranks %d and %d overlap", ra,
                    rb);
    return LT_OK;
}

/* ---- engine dispatch ------------------------------------------------------------ */

/* The engine's call for group g of a call (one piece of work of the pool:
 * proto is copied, never written). */
typedef struct group_job {
    call *k;
    lt_coll_fn fn;
    const lt_coll_group *proto;
    size_t sizes_stride;
    lt_tensor *const *eout;
} group_job;

static lt_status group_task(void *ctx, int64_t g) {
    const group_job *j = ctx;
    const call *k = j->k;
    const lt_comm *c = k->c;
    if (k->share_groups && k->same_as[g] >= 0) return LT_OK; /* shares an earlier group's results */
    lt_coll_group gr = *j->proto;
    gr.index = (int)g;
    gr.ranks = grp(k, (int)g);
    if (j->sizes_stride) gr.sizes = c->sizes + (size_t)g * j->sizes_stride;
    /* shards on a kernel-running backend: the engine's kernel path */
    lt_coll_fn fn = lt__engine_kernels_fn(c->eng, j->fn, &gr, k->in, j->eout);
    lt_status st = fn(c->ectx, &gr, k->in, j->eout);
    if (st)
        return gerr(k, (int)g, 1, st, "engine '%s'",
                    fn == j->fn ? c->eng->name : lt__engine_kernels_name());
    return LT_OK;
}

/* 1 when the groups of this call run at the same time: only on the
 * in-process engine (its per-call state lives in one lane per pool slot,
 * engine_inproc.c), when there are at least as many groups as threads,
 * the call moves at least two of the engine's pieces
 * (lt__inproc_piece_bytes) and either there are enough groups to balance
 * the threads (LT__INPROC_PIECES_PER_THREAD per thread: a thread that
 * starts late takes fewer) or a group is too small for the engine to split.
 * Otherwise the groups run one after the other and each group's call splits
 * its own work into element ranges across all threads: with 2 groups on 2
 * threads, one group per thread would leave one thread idle for as long as
 * the other started late. */
static int groups_in_parallel(const call *k, lt_tensor *const *eout) {
    const lt_comm *c = k->c;
    int w = lt__pool_width();
    if (w <= 1 || k->ngroups < 2 || k->ngroups < w || c->eng != lt_engine_inproc()) return 0;
    size_t bytes = 0;
    for (int r = 0; r < c->mesh.world; r++) {
        if (k->in && k->in[r]) bytes += lt_nbytes(k->in[r]);
        if (eout[r]) bytes += lt_nbytes(eout[r]);
    }
    size_t piece = lt__inproc_piece_bytes();
    if (bytes / 2 < piece) return 0;
    if (k->ngroups >= w * LT__INPROC_PIECES_PER_THREAD) return 1;
    return bytes / (size_t)k->ngroups / 2 < piece;
}

/* The engine's agreement (engine.h `agree`) on this process's status st
 * before the engine runs, once per call: run() asks just before the
 * engine; finish() on the way out of a call that failed before that (then
 * freeing what it made). */
static lt_status agree(call *k, lt_status st) {
    const lt_comm *c = k->c;
    if (k->agreed || !c || !c->eng || !c->eng->agree) return st;
    k->agreed = 1;
    return c->eng->agree(c->ectx, st);   /* the failing process's message names the call */
}
static lt_status finish(call *k, lt_status st) {
    return st && !k->agreed ? fail(k, agree(k, st)) : st;
}

/* Steps 2 and 3. proto carries the collective's arguments; group g's split
 * sizes start at c->sizes + g * sizes_stride (stride 0: no sizes). */
static lt_status run(call *k, lt_coll_fn fn, lt_coll_group *proto, size_t sizes_stride) {
    lt_comm *c = k->c;
    int W = c->mesh.world;
    lt_tensor *const *eout = k->out;
    lt_status st;
    if (!fn)
        return fail(
            k, gerr(k, -1, 0, LT_UNSUPPORTED, "engine '%s' does not implement it", c->eng->name));
    if (k->any_prealloc) {
        /* copy-on-write: a preallocated output that shares its buffer with
         * other tensors (replicas) gets its own before anything is written */
        for (int r = 0; r < W; r++) {
            if (c->fresh[r] || !k->out[r] || !c->held[r]) continue;
            st = lt_tensor_make_writable(k->out[r]);
            if (st)
                return fail(k, gerr(k, -1, 0, st, "copy-on-write of rank %d's output", RID(k, r)));
        }
        int ntmp;
        st = check_overlap(k, &ntmp);
        for (int r = 0; ntmp && r < W; r++) { /* rare: temporaries stand in for outputs */
            c->eng_out[r] = k->out[r];
            if (!c->need_tmp[r] || st) continue;
            c->need_tmp[r] = 0;
            const lt_tensor *o = k->out[r];
            st = lt_tensor_empty(o->dtype, o->ndim, o->shape, &c->tmp[r]);
            c->eng_out[r] = c->tmp[r];
            eout = c->eng_out;
        }
        if (st) {
            memset(c->need_tmp, 0, (size_t)W * sizeof *c->need_tmp);
            return fail(k, st);
        }
    }
    st = lt__trace_reserve(c->trace);
    st = agree(k, st);   /* the last step that may fail on one process only */
    if (st) return fail(k, st);
    proto->mesh = &c->mesh;
    proto->mesh_dim = k->md;
    proto->size = k->n;
    proto->root = k->root;
    group_job j = {k, fn, proto, sizes_stride, eout};
    proto->ranks = grp(k, 0);   /* shards on a kernel-running backend take the serial path */
    if (groups_in_parallel(k, eout) &&
        lt__engine_kernels_fn(c->eng, fn, proto, k->in, eout) == fn) {
        st = lt__parallel_for(k->ngroups, group_task, &j);
        if (st) return fail(k, st);
    } else if (!c->eng->agree) {
        for (int g = 0; g < k->ngroups; g++) {
            st = group_task(&j, g);
            if (st) return fail(k, st);
        }
    } else { /* every group on every process, then one agreement (engine.h `agree`) */
        lt_status first = LT_OK;
        char msg[1024];
        lt_error info;
        for (int g = 0; g < k->ngroups; g++) {
            st = group_task(&j, g);
            if (st && !first) {
                first = st;
                snprintf(msg, sizeof msg, "%s", lt_errmsg());
                info = *lt_errinfo();
            }
        }
        if (first) lt__err_restore(first, msg, &info);
        st = c->eng->agree(c->ectx, first);
        if (st) return fail(k, st);
    }
    if (eout != k->out) {
        for (int r = 0; r < W; r++) {
            if (!c->tmp[r]) continue;
            st = lt_copy(k->out[r], c->tmp[r]);
            if (st) return fail(k, st);
            lt_tensor_free(c->tmp[r]);
            c->tmp[r] = NULL;
        }
    }
    if (k->any_fresh) memset(c->fresh, 0, (size_t)W);
    return LT_OK;
}

/* Step 4: one trace event, bytes by the model of trace.h. `stride`: split
 * sizes per group in c->sizes (0: none). */
static void trace(const call *k, lt_dtype dt, int op, int dim, int concat_dim, size_t stride,
                  const int *perm) {
    lt_trace *t = k->c->trace;
    size_t *sent, *recv;
    if (!lt__trace_record(t, k->coll, k->md, k->ngroups, k->n, dt, &sent, &recv)) return;
    for (int g = 0; g < k->ngroups; g++)
        lt__trace_group_bytes(t, k->coll, k->n, grp(k, g), k->in, k->out, k->root, dim,
                              stride ? k->c->sizes + (size_t)g * stride : NULL, perm);
    lt__trace_set_args(t, op, k->root, dim, concat_dim);
    lt__trace_commit(t);
}

/* ---- concatenating collectives: all_gather, gather --------------------------- */

static lt_status concat_coll(call *k, lt_comm *c, lt_coll coll, int mesh_dim, lt_tensor *const *in,
                             int root, int dim, lt_tensor **out) {
    LT_TRY(begin(k, c, coll, mesh_dim, in, out));
    k->share_members = k->share_groups && coll == LT_COLL_ALL_GATHER;
    if (coll == LT_COLL_GATHER) LT_TRY(check_root(k, root));
    lt_dtype dt = LT_F32;
    for (int pass = 0; pass < 2; pass++) { /* 1: size the results; 2: make them */
        k->sizing = pass == 0;
        if (pass) LT_TRY(room(k));
        for (int g = 0; g < k->ngroups; g++) {
            const lt_tensor *t0;
            lt_status st = input(k, g, 0, &t0);
            if (!st) st = dim_ok(k, g, 0, "dim", dim);
            if (!st) st = uniform(k, g, dim);
            if (st) return fail(k, st);
            int64_t shape[LT_MAX_DIMS];
            memcpy(shape, t0->shape, sizeof shape);
            shape[dim] = 0;
            for (int p = 0; p < k->n && !st; p++)
                if (lt__add_i64(shape[dim], in[grp(k, g)[p]]->shape[dim], &shape[dim]))
                    st = gerr(k, g, 0, LT_OVERFLOW, "the gathered size of dim %d overflows 64 bits",
                              dim);
            if (st) return fail(k, st);
            dt = t0->dtype;
            for (int p = 0; p < k->n && !st; p++)
                st = prepare_out(k, g, grp(k, g)[p], dt, t0->ndim, shape,
                                 coll == LT_COLL_GATHER && p != root);
            if (st) return fail(k, st);
        }
    }
    lt_coll_group gr = {0};
    gr.dim = dim;
    LT_TRY(run(k, coll == LT_COLL_GATHER ? c->eng->gather : c->eng->all_gather, &gr, 0));
    trace(k, dt, -1, dim, -1, 0, NULL);
    return LT_OK;
}

lt_status lt_all_gather(lt_comm *c, int mesh_dim, lt_tensor *const *in, int dim, lt_tensor **out) {
    call k;
    return finish(&k, concat_coll(&k, c, LT_COLL_ALL_GATHER, mesh_dim, in, -1, dim, out));
}

lt_status lt_gather(lt_comm *c, int mesh_dim, lt_tensor *const *in, int root, int dim,
                    lt_tensor **out) {
    call k;
    return finish(&k, concat_coll(&k, c, LT_COLL_GATHER, mesh_dim, in, root, dim, out));
}

/* ---- reductions: all_reduce, reduce, reduce_scatter ----------------------------- */

static lt_status reduce_coll(call *k, lt_comm *c, lt_coll coll, int mesh_dim, lt_tensor *const *in,
                             int root, lt_redop op, int dim, const lt_split_rule *rule,
                             lt_tensor **out) {
    LT_TRY(begin(k, c, coll, mesh_dim, in, out));
    LT_TRY(check_op(k, op));
    k->share_members = k->share_groups && coll == LT_COLL_ALL_REDUCE;
    if (coll == LT_COLL_REDUCE) LT_TRY(check_root(k, root));
    int rs = coll == LT_COLL_REDUCE_SCATTER;
    k->self_alias_ok = !rs;
    if (rs) LT_TRY(sizes_room(k, (size_t)c->mesh.world));
    lt_dtype dt = LT_F32;
    for (int pass = 0; pass < 2; pass++) { /* 1: size the results; 2: make them */
        k->sizing = pass == 0;
        if (pass) LT_TRY(room(k));
        for (int g = 0; g < k->ngroups; g++) {
            const int *rk = grp(k, g);
            lt_status st = uniform(k, g, -1);
            const lt_tensor *t0 = in[rk[0]];
            if (!st) st = op_ok_for(k, g, op, t0->dtype);
            if (!st && rs) st = dim_ok(k, g, 0, "dim", dim);
            int64_t *sz =
                rs ? c->sizes + (size_t)g * k->n : NULL; /* (n) split sizes; none without a split */
            if (!st && rs) st = split(k, g, 0, dim, rule, sz);
            if (st) return fail(k, st);
            dt = t0->dtype;
            int64_t shape[LT_MAX_DIMS];
            memcpy(shape, t0->shape, sizeof shape);
            for (int p = 0; p < k->n && !st; p++) {
                if (rs) shape[dim] = sz[p];
                st = prepare_out(k, g, rk[p], dt, t0->ndim, shape,
                                 coll == LT_COLL_REDUCE && p != root);
            }
            if (st) return fail(k, st);
        }
    }
    lt_coll_group gr = {0};
    gr.op = op;
    gr.dim = rs ? dim : -1;
    lt_coll_fn fn = coll == LT_COLL_ALL_REDUCE ? c->eng->all_reduce
                  : coll == LT_COLL_REDUCE     ? c->eng->reduce : c->eng->reduce_scatter;
    LT_TRY(run(k, fn, &gr, rs ? (size_t)k->n : 0));
    trace(k, dt, (int)op, rs ? dim : -1, -1, 0, NULL);
    return LT_OK;
}

lt_status lt_all_reduce(lt_comm *c, int mesh_dim, lt_tensor *const *in, lt_redop op,
                        lt_tensor **out) {
    call k;
    return finish(&k, reduce_coll(&k, c, LT_COLL_ALL_REDUCE, mesh_dim, in, -1, op, -1, NULL, out));
}

lt_status lt_reduce_ranks(lt_comm *c, int mesh_dim, lt_tensor *const *in, int root, lt_redop op,
                          lt_tensor **out) {
    call k;
    return finish(&k, reduce_coll(&k, c, LT_COLL_REDUCE, mesh_dim, in, root, op, -1, NULL, out));
}

lt_status lt_reduce_scatter(lt_comm *c, int mesh_dim, lt_tensor *const *in, lt_redop op, int dim,
                            const lt_split_rule *rule, lt_tensor **out) {
    call k;
    return finish(&k,
                  reduce_coll(&k, c, LT_COLL_REDUCE_SCATTER, mesh_dim, in, -1, op, dim, rule, out));
}

/* ---- all_to_all ------------------------------------------------------------------- */

static lt_status a2a_coll(call *k, lt_comm *c, int mesh_dim, lt_tensor *const *in, int split_dim,
                        int concat_dim, const lt_split_rule *rule, lt_tensor **out) {
    LT_TRY(begin(k, c, LT_COLL_ALL_TO_ALL, mesh_dim, in, out));
    size_t n = (size_t)k->n;
    if (n > 0 && (size_t)c->mesh.world > SIZE_MAX / 8 / n)
        return gerr(k, -1, 0, LT_NOMEM, "too many pieces");
    LT_TRY(sizes_room(k, (size_t)c->mesh.world * n));
    lt_dtype dt = LT_F32;
    int sd = split_dim, cd = concat_dim;
    for (int pass = 0; pass < 2; pass++) { /* 1: size the results; 2: make them */
        k->sizing = pass == 0;
        if (pass) LT_TRY(room(k));
        for (int g = 0; g < k->ngroups; g++) {
            const int *rk = grp(k, g);
            int64_t *sz = c->sizes + (size_t)g * n * n;
            const lt_tensor *t0;
            lt_status st = input(k, g, 0, &t0);
            if (!st) st = dim_ok(k, g, 0, "split dim", sd);
            if (!st) st = dim_ok(k, g, 0, "concat dim", cd);
            if (!st) st = uniform(k, g, cd);
            for (int i = 0; i < k->n && !st; i++) st = split(k, g, i, sd, rule, sz + (size_t)i * n);
            if (st) return fail(k, st);
            dt = t0->dtype;
            for (int j = 0; j < k->n && !st; j++) {
                int64_t shape[LT_MAX_DIMS];
                memcpy(shape, t0->shape, sizeof shape);
                shape[sd] = sz[j];
                shape[cd] = 0;
                for (int i = 0; i < k->n && !st; i++)
                    if (lt__add_i64(shape[cd],
                                    cd == sd ? sz[(size_t)i * n + (size_t)j] : in[rk[i]]->shape[cd],
                                    &shape[cd]))
                        st = gerr(k, g, 0, LT_OVERFLOW,
                                  "the concatenated size of dim %d overflows 64 bits", cd);
                if (!st) st = prepare_out(k, g, rk[j], dt, t0->ndim, shape, 0);
            }
            if (st) return fail(k, st);
        }
    }
    lt_coll_group gr = {0};
    gr.dim = sd;
    gr.concat_dim = cd;
    LT_TRY(run(k, c->eng->all_to_all, &gr, n * n));
    trace(k, dt, -1, sd, cd, n * n, NULL);
    return LT_OK;
}

lt_status lt_all_to_all(lt_comm *c, int mesh_dim, lt_tensor *const *in, int split_dim,
                        int concat_dim, const lt_split_rule *rule, lt_tensor **out) {
    call k;
    return finish(&k, a2a_coll(&k, c, mesh_dim, in, split_dim, concat_dim, rule, out));
}

/* ---- broadcast, scatter ------------------------------------------------------------ */

static lt_status from_root(call *k, lt_comm *c, lt_coll coll, int mesh_dim, lt_tensor *const *in,
                           int root, int dim, const lt_split_rule *rule, lt_tensor **out) {
    LT_TRY(begin(k, c, coll, mesh_dim, in, out));
    LT_TRY(check_root(k, root));
    int sc = coll == LT_COLL_SCATTER;
    k->share_members = k->share_groups && !sc;
    k->root_reads = 1;
    k->self_alias_ok = !sc;
    if (sc) LT_TRY(sizes_room(k, (size_t)c->mesh.world));
    lt_dtype dt = LT_F32;
    for (int pass = 0; pass < 2; pass++) { /* 1: size the results; 2: make them */
        k->sizing = pass == 0;
        if (pass) LT_TRY(room(k));
        for (int g = 0; g < k->ngroups; g++) {
            const int *rk = grp(k, g);
            const lt_tensor *t;
            int64_t *sz =
                sc ? c->sizes + (size_t)g * k->n : NULL; /* (n) split sizes; none without a split */
            lt_status st = input(k, g, root, &t);
            if (!st && sc) st = dim_ok(k, g, root, "dim", dim);
            if (!st && sc) st = split(k, g, root, dim, rule, sz);
            if (st) return fail(k, st);
            dt = t->dtype;
            int64_t shape[LT_MAX_DIMS];
            memcpy(shape, t->shape, sizeof shape);
            for (int p = 0; p < k->n && !st; p++) {
                if (sc) shape[dim] = sz[p];
                st = prepare_out(k, g, rk[p], dt, t->ndim, shape, 0);
            }
            if (st) return fail(k, st);
        }
    }
    lt_coll_group gr = {0};
    gr.dim = sc ? dim : -1;
    LT_TRY(run(k, sc ? c->eng->scatter : c->eng->broadcast, &gr, sc ? (size_t)k->n : 0));
    trace(k, dt, -1, sc ? dim : -1, -1, 0, NULL);
    return LT_OK;
}

lt_status lt_broadcast(lt_comm *c, int mesh_dim, lt_tensor *const *in, int root, lt_tensor **out) {
    call k;
    return finish(&k, from_root(&k, c, LT_COLL_BROADCAST, mesh_dim, in, root, -1, NULL, out));
}

lt_status lt_scatter(lt_comm *c, int mesh_dim, lt_tensor *const *in, int root, int dim,
                     const lt_split_rule *rule, lt_tensor **out) {
    call k;
    return finish(&k, from_root(&k, c, LT_COLL_SCATTER, mesh_dim, in, root, dim, rule, out));
}

/* ---- permute, barrier ------------------------------------------------------------- */

static lt_status permute_coll(call *k, lt_comm *c, int mesh_dim, lt_tensor *const *in,
                              const int *perm, lt_tensor **out) {
    LT_TRY(begin(k, c, LT_COLL_PERMUTE, mesh_dim, in, out));
    if (!perm) return gerr(k, -1, 0, LT_INVALID, "perm is NULL");
    for (int i = 0; i < k->n; i++) {
        if (perm[i] < 0 || perm[i] >= k->n)
            return gerr(k, -1, 0, LT_INVALID, "perm[%d] = %d is out of range 0..%d (group size %d)",
                        i, perm[i], k->n - 1, k->n);
        for (int j = 0; j < i; j++)
            if (perm[j] == perm[i])
                return gerr(k, -1, 0, LT_INVALID,
                            "perm is not a permutation: members %d and %d both "
                            "send to member %d",
                            j, i, perm[i]);
    }
    lt_dtype dt = LT_F32;
    for (int pass = 0; pass < 2; pass++) { /* 1: size the results; 2: make them */
        k->sizing = pass == 0;
        if (pass) LT_TRY(room(k));
        for (int g = 0; g < k->ngroups; g++) {
            const int *rk = grp(k, g);
            lt_status st = LT_OK;
            for (int i = 0; i < k->n && !st; i++) {
                const lt_tensor *t;
                st = input(k, g, i, &t);
                if (!st) st = same_dtype(k, g, i, 0);
                if (!st) st = prepare_out(k, g, rk[perm[i]], t->dtype, t->ndim, t->shape, 0);
            }
            if (st) return fail(k, st);
            dt = in[rk[0]]->dtype;
        }
    }
    lt_coll_group gr = {0};
    gr.perm = perm;
    LT_TRY(run(k, c->eng->permute, &gr, 0));
    trace(k, dt, -1, -1, -1, 0, perm);
    return LT_OK;
}

lt_status lt_permute_ranks(lt_comm *c, int mesh_dim, lt_tensor *const *in, const int *perm,
                           lt_tensor **out) {
    call k;
    return finish(&k, permute_coll(&k, c, mesh_dim, in, perm, out));
}

/* ---- point to point ------------------------------------------------------------ */

/* The checks of lt_send_recv that need no engine; *o: the output (made
 * here when *out is NULL: *made 1). */
static lt_status send_recv_prepare(lt_comm *c, int src, int dst, const lt_tensor *in,
                                   lt_tensor **out, lt_tensor **o, int *made) {
    *o = NULL;
    *made = 0;
    if (!c || !out || !in) return lt__err(LT_INVALID, "lt_send_recv: NULL argument");
    int w = c->mesh.world;
    if (src < 0 || src >= w || dst < 0 || dst >= w || src == dst)
        return lt__err(LT_INVALID,
                       "lt_send_recv: ranks %d -> %d: each must be a position 0..%d, and they "
                       "must differ",
                       src, dst, w - 1);
    if (!*out) {
        *made = 1;
        return c->held[dst] ? lt_tensor_empty(in->dtype, in->ndim, in->shape, o)
                            : lt_tensor_absent(in->dtype, in->ndim, in->shape, o);
    }
    *o = *out;
    int fits = (*o)->dtype == in->dtype && (*o)->ndim == in->ndim &&
               (!c->held[dst] || (*o)->absent || lt_is_contiguous(*o));
    for (int i = 0; fits && i < in->ndim; i++) fits = (*o)->shape[i] == in->shape[i];
    char a[160], b[160];
    if (!fits)
        return lt__err(LT_INVALID,
                       "lt_send_recv: rank %d -> %d: the output (%s) does not fit the input (%s): "
                       "it needs the same dtype and shape, contiguous",
                       lt_mesh_rank_id(&c->mesh, src), lt_mesh_rank_id(&c->mesh, dst),
                       desc(*o, a, sizeof a), desc(in, b, sizeof b));
    return LT_OK;
}

lt_status lt_send_recv(lt_comm *c, int src, int dst, const lt_tensor *in, lt_tensor **out) {
    lt_tensor *o;
    int made;
    lt_status st = send_recv_prepare(c, src, dst, in, out, &o, &made);
    if (!c || !out || !in) return st;
    if (!st && !c->eng->send_recv && (!c->held[src] || !c->held[dst]))
        st = lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                          "not supported yet: point to point on engine '%s' (no send_recv entry) "
                          "between ranks of different processes", c->eng->name);
    if (c->eng->agree) st = c->eng->agree(c->ectx, st); /* every process enters, or none */
    if (!st && c->eng->send_recv)
        st = c->eng->send_recv(c->ectx, src, dst, c->held[src] ? in : NULL,
                               c->held[dst] ? o : NULL);
    else if (!st)
        st = lt_copy(o, in);
    if (c->eng->agree) st = c->eng->agree(c->ectx, st);   /* and all leave it alike */
    if (st) {
        if (made) lt_tensor_free(o);
        return st;
    }
    *out = o;
    return LT_OK;
}

static lt_status barrier_coll(call *k, lt_comm *c, int mesh_dim) {
    LT_TRY(begin(k, c, LT_COLL_BARRIER, mesh_dim, NULL, NULL));
    LT_TRY(agree(k, lt__trace_reserve(c->trace)));
    if (c->eng->barrier) {
        lt_coll_group gr = {0};
        gr.mesh = &c->mesh;
        gr.mesh_dim = mesh_dim;
        gr.size = k->n;
        gr.root = -1;
        for (int g = 0; g < k->ngroups; g++) {
            gr.index = g;
            gr.ranks = grp(k, g);
            lt_status st = c->eng->barrier(c->ectx, &gr);
            if (st) return gerr(k, g, 1, st, "engine '%s'", c->eng->name);
        }
    }
    trace(k, LT_F32, -1, -1, -1, 0, NULL);
    return LT_OK;
}

lt_status lt_barrier(lt_comm *c, int mesh_dim) {
    call k;
    return finish(&k, barrier_coll(&k, c, mesh_dim));
}
