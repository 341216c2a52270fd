/* localtensor/remesh.c — redistribute between a mesh and its flattened form
 * (localtensor/remesh.h). The planner plans on one mesh; a layout on a
 * flattened dim is carried to the other mesh by writing its placements
 * there, when layout math proves both place every index alike, else after
 * replicating the flattened run; the data moves only in ordinary,
 * verified redistributes (docs/SEMANTICS.md §1.1). */
#include "localtensor/remesh.h"

#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "localtensor/dtensor_impl.h"
#include "localtensor/layout.h"

/* The run [a, a + k) of the fine mesh that is dim a of the coarse one. */
typedef struct {
    int a, k;
    int src_fine;   /* 1: the source is the fine mesh (flattening), 0: unflattening */
} run_map;

static int same_ranks(const lt_mesh *x, const lt_mesh *y) {
    if (x->world != y->world || x->permuted != y->permuted) return 0;
    return !x->permuted || (x->world_size == y->world_size &&
                            !memcmp(x->ids, y->ids, (size_t)x->world * sizeof *x->ids));
}

/* 1 when coarse is fine with dims [a, a + k) flattened (the first such a). */
static int find_run(const lt_mesh *fine, const lt_mesh *coarse, run_map *rm) {
    int k = fine->ndim - coarse->ndim + 1;
    if (k < 1) return 0;
    for (int a = 0; a < coarse->ndim; a++) {
        int ok = 1;
        int64_t prod = 1;
        for (int i = 0; i < a && ok; i++) ok = fine->shape[i] == coarse->shape[i];
        for (int j = 0; j < k; j++) prod *= fine->shape[a + j];
        ok = ok && prod == coarse->shape[a];
        for (int i = a + 1; i < coarse->ndim && ok; i++)
            ok = coarse->shape[i] == fine->shape[i + k - 1];
        if (ok) {
            rm->a = a;
            rm->k = k;
            return 1;
        }
    }
    return 0;
}

static int plain_shard(const lt_placement *p) {
    return p->kind == LT_PL_SHARD && p->rule.kind == LT_SPLIT_CHUNK;
}

/* One placement for the run's k placements p[k] (R, P(op) or a chunk S(d)
 * on all); 0 when there is none. */
static int merge(const lt_placement *p, int k, lt_placement *out) {
    for (int j = 1; j < k; j++)
        if (p[j].kind != p[0].kind || (p[0].kind == LT_PL_PARTIAL && p[j].op != p[0].op) ||
            (p[0].kind == LT_PL_SHARD && (!plain_shard(&p[j]) || p[j].dim != p[0].dim)))
            return 0;
    if (p[0].kind == LT_PL_STRIDED || (p[0].kind == LT_PL_SHARD && !plain_shard(&p[0]))) return 0;
    *out = p[0];
    return 1;
}

/* src's placements (on the source mesh) written on the target: out gets
 * the target's ndim of them; 0 when the run's cannot be. */
static int map_pl(const lt_placement *src, int src_ndim, const run_map *rm, lt_placement *out) {
    int a = rm->a, k = rm->k;
    if (rm->src_fine) {
        for (int i = 0; i < a; i++) out[i] = src[i];
        for (int i = a + k; i < src_ndim; i++) out[i - k + 1] = src[i];
        return merge(src + a, k, &out[a]);
    }
    const lt_placement *p = &src[a];
    if (p->kind == LT_PL_STRIDED || (p->kind == LT_PL_SHARD && !plain_shard(p))) return 0;
    for (int i = 0; i < a; i++) out[i] = src[i];
    for (int j = 0; j < k; j++) out[a + j] = *p;
    for (int i = a + 1; i < src_ndim; i++) out[i + k - 1] = src[i];
    return 1;
}

/* *same: 1 when every position holds the same global indices under x and y
 * (same world), index by index. */
static lt_status same_layout(const lt_spec *x, const lt_spec *y, int *same) {
    *same = 1;
    for (int r = 0; r < lt_spec_mesh(x)->world && *same; r++) {
        lt_rank_layout lx, ly;
        LT_TRY(lt_spec_layout_rank(x, r, &lx));
        lt_status st = lt_spec_layout_rank(y, r, &ly);
        if (st) {
            lt_rank_layout_free(&lx);
            return st;
        }
        for (int d = 0; d < x->ndim && *same; d++) {
            *same = lx.local_shape[d] == ly.local_shape[d];
            for (int64_t i = 0; *same && lx.lists && i < lx.local_shape[d]; i++)
                *same = (lx.idx[d] ? lx.idx[d][i] : i) == (ly.idx[d] ? ly.idx[d][i] : i);
        }
        lt_rank_layout_free(&lx);
        lt_rank_layout_free(&ly);
    }
    return LT_OK;
}

/* The DTensor on mesh `to` with placements pl of dt's own shards (views;
 * dt keeps its own). */
static lt_status rewrap(const lt_dtensor *dt, const lt_mesh *to, const lt_spec *spec,
                        lt_dtensor **out) {
    int W = to->world;
    lt_tensor **sh = lt__calloc((size_t)W, sizeof *sh);
    if (!sh) return lt__err(LT_NOMEM, "remesh: out of memory");
    for (int r = 0; r < W; r++) sh[r] = (lt_tensor *)lt_to_local(dt, r);
    lt_local *local = NULL;
    lt_status st = lt_local_from_shards(to, sh, &local);
    lt__free(sh);
    if (st) return st;
    return lt__dtensor_wrap(local, spec, out);
}

/* opts with the communicator kept only for a step on its own mesh. */
static lt_redistribute_opts step_opts(const lt_redistribute_opts *opts, const lt_mesh *m) {
    lt_redistribute_opts o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (o.comm && !lt_mesh_equal(lt_comm_mesh(o.comm), m)) o.comm = NULL;
    return o;
}

/* Steps 1-3: the source as a DTensor on `to` (*bridged, new; it may share
 * dt's shards). */
static lt_status bridge(const lt_dtensor *dt, const lt_mesh *to, const run_map *rm,
                        const lt_redistribute_opts *opts, lt_dtensor **bridged) {
    const lt_mesh *from = lt_dtensor_mesh(dt);
    lt_placement pl[LT_MESH_MAX_DIMS];
    lt_spec spec;
    int same = 0;
    if (map_pl(dt->placements, from->ndim, rm, pl) &&
        lt_spec_init(to, dt->dtype, dt->ndim, dt->shape, pl, to->ndim, &spec) == LT_OK)
        LT_TRY(same_layout(lt_dtensor_spec(dt), &spec, &same));
    lt__err_clear();
    if (same) return rewrap(dt, to, &spec, bridged);
    /* step 2: R on the run, on the source mesh */
    lt_placement rp[LT_MESH_MAX_DIMS];
    memcpy(rp, dt->placements, sizeof rp);
    for (int j = 0; j < (rm->src_fine ? rm->k : 1); j++) rp[rm->a + j] = lt_replicate();
    lt_redistribute_opts o = step_opts(opts, from);
    o.report = NULL;
    lt_dtensor *rep = NULL;
    LT_TRY(lt_redistribute(dt, rp, from->ndim, &o, &rep, NULL));
    lt_status st = map_pl(rp, from->ndim, rm, pl)
                       ? lt_spec_init(to, dt->dtype, dt->ndim, dt->shape, pl, to->ndim, &spec)
                       : lt__err(LT_INVALID, "remesh: R on the run does not map (internal)");
    if (!st) st = rewrap(rep, to, &spec, bridged);
    lt_dtensor_free(rep);
    return st;
}

lt_status lt_redistribute_remesh(const lt_dtensor *dt, const lt_mesh *to,
                                 const lt_placement *dst, int np,
                                 const lt_redistribute_opts *opts, lt_dtensor **out) {
    if (!out) return lt__err(LT_INVALID, "remesh: out is NULL");
    *out = NULL;
    if (!dt || !to || !dst) return lt__err(LT_INVALID, "remesh: NULL argument");
    const lt_mesh *from = lt_dtensor_mesh(dt);
    run_map rm = {0, 0, 1};
    int ok = same_ranks(from, to) && find_run(from, to, &rm);
    if (!ok && same_ranks(from, to) && find_run(to, from, &rm)) ok = 1, rm.src_fine = 0;
    if (!ok) {
        char a[256], b[256];
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: remesh from mesh %s to mesh %s: one must be the "
                            "other with adjacent dims flattened (the same ranks at the same "
                            "places)", lt_mesh_format(from, a, sizeof a),
                            lt_mesh_format(to, b, sizeof b));
    }
    lt_dtensor *mid = NULL;
    lt_status st = bridge(dt, to, &rm, opts, &mid);
    if (!st) {
        lt_redistribute_opts o = step_opts(opts, to);
        st = lt_redistribute(mid, dst, np, &o, out, NULL);
    }
    lt_dtensor_free(mid);
    if (st) return lt__err_ctx(st, "remesh");
    return LT_OK;
}
