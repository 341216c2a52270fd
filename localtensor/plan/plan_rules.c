/* localtensor/plan/plan_rules.c — the rule table of single redistribute steps,
 * fast per-rank shapes, the byte model, and the placements a plan shows for
 * its intermediate states.
 *
 * Both planners, the executor and the plan's byte columns go through these
 * few functions, so that what the planner costs is what the executor runs and
 * what the comm trace records. Invariant: lt__step_kind_of only accepts a
 * step whose execution with ONE collective along mesh dim i (or none)
 * produces exactly the layout of the next state (see the table in
 * localtensor/plan.h). */
#include <stdlib.h>
#include <string.h>

#include "localtensor/layout.h"
#include "localtensor/redistribute.h"
#include "collectives_sim/cost.h"
#include "localtensor/plan/plan_impl.h"

static const struct {
    int comm;
    lt_coll coll;
    const char *local;
} kinds[LT__STEP_COUNT] = {
#define LT__XX(e, comm, coll, local) {comm, coll, local},
    LT__STEP_MAP(LT__XX)
#undef LT__XX
};

int lt__step_kind_comm(lt__step_kind k) { return k < LT__STEP_COUNT ? kinds[k].comm : 0; }
lt_coll lt__step_kind_coll(lt__step_kind k) { return kinds[k < LT__STEP_COUNT ? k : 0].coll; }
const char *lt__step_kind_local(lt__step_kind k) {
    return k < LT__STEP_COUNT ? kinds[k].local : "";
}

/* Does a mesh dim after i (of size > 1) shard tensor dim d in state cur? */
static int later_shards(const lt_mesh *mesh, const lt_placement *cur, int i, int d) {
    for (int j = i + 1; j < mesh->ndim; j++)
        if (mesh->shape[j] > 1 && lt_placement_is_shard_like(&cur[j]) && cur[j].dim == d) return 1;
    return 0;
}

lt__step_kind lt__step_kind_of(const lt_mesh *mesh, const lt_placement *cur, int i,
                               const lt_placement *to) {
    const lt_placement *a = &cur[i], *b = to;
    if (mesh->shape[i] == 1 || lt_placement_equal(a, b)) return LT__STEP_ILLEGAL;
    switch (a->kind) {
    case LT_PL_REPLICATE:
        if (b->kind == LT_PL_SHARD)
            return later_shards(mesh, cur, i, b->dim) ? LT__STEP_ILLEGAL : LT__STEP_SLICE;
        if (b->kind == LT_PL_STRIDED)
            return later_shards(mesh, cur, i, b->dim) ? LT__STEP_ILLEGAL : LT__STEP_STRIDED_SLICE;
        if (b->kind == LT_PL_PARTIAL)
            return b->op == LT_REDOP_PRODUCT ? LT__STEP_ILLEGAL : LT__STEP_PARTITION;
        return LT__STEP_ILLEGAL;
    case LT_PL_SHARD:
        if (later_shards(mesh, cur, i, a->dim)) return LT__STEP_ILLEGAL;
        if (b->kind == LT_PL_REPLICATE) return LT__STEP_ALL_GATHER;
        if (b->kind == LT_PL_SHARD && b->dim != a->dim && !later_shards(mesh, cur, i, b->dim))
            return LT__STEP_ALL_TO_ALL;
        if (b->kind == LT_PL_PARTIAL && b->op == LT_REDOP_SUM) return LT__STEP_ZERO_FILL;
        return LT__STEP_ILLEGAL;
    case LT_PL_STRIDED:
        if (b->kind == LT_PL_REPLICATE && !later_shards(mesh, cur, i, a->dim))
            return LT__STEP_GATHER_STRIDED;
        return LT__STEP_ILLEGAL;
    case LT_PL_PARTIAL:
        if (b->kind == LT_PL_REPLICATE) return LT__STEP_ALL_REDUCE;
        if (b->kind == LT_PL_SHARD && !later_shards(mesh, cur, i, b->dim))
            return LT__STEP_REDUCE_SCATTER;
        return LT__STEP_ILLEGAL;
    default:
        return LT__STEP_ILLEGAL;
    }
}

/* ---- shapes ------------------------------------------------------------------ */

/* Length of piece c of k when a Shard with `rule` splits n; -1 when the rule
 * rejects the split. */
static int64_t shard_piece(const lt_split_rule *rule, int64_t n, int k, int c) {
    switch (rule->kind) {
    case LT_SPLIT_CHUNK: {
        int64_t cs = n / k + (n % k != 0);
        int64_t start = cs * c;
        if (start >= n) return 0;
        return n - start < cs ? n - start : cs;
    }
    case LT_SPLIT_BALANCED:
        return n / k + (c < n % k);
    case LT_SPLIT_LAST: {
        if (n < k) return -1;
        int64_t cs = n / k + (n % k != 0);
        if (!((int64_t)(k - 1) * cs < n)) cs = n / k;
        return c < k - 1 ? cs : n - (int64_t)(k - 1) * cs;
    }
    case LT_SPLIT_EXPLICIT: {
        if (rule->nsizes != k) return -1;
        int64_t sum = 0;
        for (int j = 0; j < k; j++) sum += rule->sizes[j];
        return sum == n ? rule->sizes[c] : -1;
    }
    default:
        return -1;
    }
}

int lt__layout_shapes(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                      const lt_placement *pl, int64_t *shapes) {
    int coord[LT_MESH_MAX_DIMS];
    for (int r = 0; r < mesh->world; r++) {
        int64_t *s = shapes + (size_t)r * (size_t)ndim;
        memcpy(s, gshape, sizeof(int64_t) * (size_t)ndim);
        lt_mesh_coord(mesh, r, coord);
        for (int i = 0; i < mesh->ndim; i++) {
            const lt_placement *p = &pl[i];
            int k = mesh->shape[i];
            if (k == 1 || !lt_placement_is_shard_like(p)) continue;
            int d = p->dim;
            int64_t len = p->kind == LT_PL_SHARD ? shard_piece(&p->rule, s[d], k, coord[i])
                                                 : lt_split_strided_positions(s[d], p->split_factor,
                                                                              k, coord[i], NULL);
            if (len < 0) return -1;
            s[d] = len;
        }
    }
    return 0;
}

/* ---- bytes ------------------------------------------------------------------- */

static int64_t numel_of(const int64_t *s, int ndim) { return lt__numel_sat(ndim, s); }

size_t lt__step_bytes(const lt_mesh *mesh, int ndim, size_t esize, lt__step_kind k, int i,
                      const lt_placement *from, const lt_placement *to,
                      const int64_t *before, const int64_t *after, size_t *recv) {
    int W = mesh->world, n = mesh->shape[i];
    size_t total = 0;
    if (recv) memset(recv, 0, sizeof(size_t) * (size_t)W);
    if (!lt__step_kind_comm(k)) return 0;
    /* stride of mesh dim i in rank space: members of a group differ by it.
     * Walk group by group so a gather costs O(W), not O(W * n). */
    int stride = 1;
    for (int j = mesh->ndim - 1; j > i; j--) stride *= mesh->shape[j];
    for (int base = 0; base < W; base += stride * n)
        for (int first = base; first < base + stride; first++) {
            uint64_t group = 0; /* elements the whole group holds before the step */
            if (k == LT__STEP_ALL_GATHER || k == LT__STEP_GATHER_STRIDED)
                for (int j = 0; j < n; j++)
                    group = lt__sat_add(
                        group,
                        (uint64_t)numel_of(before + (size_t)(first + j * stride) * (size_t)ndim,
                                           ndim));
            for (int c = 0; c < n; c++) {
                int r = first + c * stride;
                int64_t nb = numel_of(before + (size_t)r * (size_t)ndim, ndim);
                int64_t na = numel_of(after + (size_t)r * (size_t)ndim, ndim);
                /* what member c holds before and after, and keeps (collectives_sim/cost.h) */
                lt__member mb = {(uint64_t)nb, (uint64_t)na, 0};
                if (lt__step_kind_coll(k) == LT_COLL_ALL_GATHER) {
                    mb.out = group;
                    mb.kept = (uint64_t)nb;
                } else if (k == LT__STEP_ALL_TO_ALL) {
                    /* the piece it kept: before with dim e cut to after[e] */
                    int e = to->dim;
                    const int64_t *sb = before + (size_t)r * (size_t)ndim;
                    const int64_t *sa = after + (size_t)r * (size_t)ndim;
                    uint64_t keep = 1; /* saturated: shapes here are never allocated */
                    for (int d = 0; d < ndim; d++)
                        keep = lt__sat_mul(keep, (uint64_t)(d == e ? sa[d] : sb[d]));
                    mb.kept = keep;
                }
                uint64_t v = lt__coll_recv(lt__step_kind_coll(k), n, c, -1, mb, 1);
                v = lt__sat_mul(v, esize);
                if (recv) recv[r] = (size_t)v;
                total = (size_t)lt__sat_add(total, v);
            }
        }
    (void)from;
    return total;
}

/* ---- the states a plan shows ------------------------------------------------------------------
 */

int lt__partials_ok(const lt_placement *pl, int M) {
    int have = 0;
    lt_redop first = LT_REDOP_SUM;
    for (int i = 0; i < M; i++) {
        if (pl[i].kind != LT_PL_PARTIAL) continue;
        lt_redop o = pl[i].op;
        if (!have) {
            have = 1;
            first = o;
        } else if (o != first && !((o == LT_REDOP_SUM || o == LT_REDOP_AVG) &&
                                    (first == LT_REDOP_SUM || first == LT_REDOP_AVG))) {
            return 0;
        }
    }
    return 1;
}

void lt__plan_display_state(const lt_mesh *mesh, int ndim, const int64_t *shape,
                            const lt_placement *usrc, const lt_placement *udst,
                            const lt_placement *eff, lt_placement *out) {
    memcpy(out, eff, sizeof(lt_placement) * (size_t)mesh->ndim);
    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i < mesh->ndim; i++)
            if (mesh->shape[i] == 1)
                out[i] = pass == 0 ? usrc[i] : pass == 1 ? udst[i] : lt_replicate();
        if (pass == 2 ||
            (lt__partials_ok(out, mesh->ndim) && lt_layout_check(mesh, ndim, shape, out) == LT_OK))
            return;
    }
}
