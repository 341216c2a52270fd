/* localtensor/ops/pytorch_bugs.c — the table of known PyTorch DTensor bugs and
 * the pattern checks (localtensor/pytorch_bugs.h).
 *
 * The table is data: one row per bug, in the order of LT_PYTORCH_BUG_MAP.
 * The checks only read layout math; they never change a result. Each check
 * matches its own pattern and nothing near it (test/test_pytorch_bugs.c
 * holds them to that). Observations marked "observed" were made by running
 * the case through PyTorch 2.15 under LocalTensorMode (tools/torch/).
 */
#include <stdio.h>
#include <string.h>

#include "localtensor/layout.h"
#include "localtensor/ragged.h"
#include "localtensor/pytorch_bugs.h"

/* Each field on its own line: name, versions, reference, pattern, warning. */
static const lt_pytorch_bug_info table[LT_PYTORCH_BUG_COUNT] = {
    [LT_PYTORCH_BUG_UNEVEN_STRIDED] = {
        /* .name      = */ "uneven_strided",
        /* .versions  = */ "2.15 (observed; earlier versions gave wrong pieces)",
        /* .reference = */ "pytorch issue 168134",
        /* .pattern   = */ "a _StridedShard whose ranks get pieces of different sizes",
        /* .warning   = */ "PyTorch raises a bare AssertionError for this _StridedShard layout "
                           "(its ranks get pieces of different sizes); shard with Shard on this "
                           "dim or pad it to a multiple of split_factor x mesh size",
    },
    [LT_PYTORCH_BUG_STRIDED_REDISTRIBUTE] = {
        /* .name      = */ "strided_redistribute",
        /* .versions  = */ "releases before PR 179059 (2026-04)",
        /* .reference = */ "pytorch PRs 170915, 179059",
        /* .pattern   = */ "a redistribute to or from a _StridedShard",
        /* .warning   = */ "PyTorch may give a different layout for this redistribute (to/from "
                           "_StridedShard): run it through Replicate",
    },
    [LT_PYTORCH_BUG_NONCHUNK_SIZES] = {
        /* .name      = */ "nonchunk_sizes",
        /* .versions  = */ "every version up to 2.15 (issue open)",
        /* .reference = */ "pytorch issue 144109",
        /* .pattern   = */ "a Shard whose split sizes are not torch.chunk's (from_local of other "
                           "sizes; balanced, last or explicit rules)",
        /* .warning   = */ "PyTorch assumes torch.chunk sizes for every Shard: full_tensor and "
                           "redistribute of these split sizes come out silently wrong; "
                           "redistribute to a chunk-rule Shard (or R) here first",
    },
    [LT_PYTORCH_BUG_EMPTY_SHARD_OFFSET] = {
        /* .name      = */ "empty_shard_offset",
        /* .versions  = */ "2.7 and earlier (fixed by PR 150862)",
        /* .reference = */ "pytorch PR 150862",
        /* .pattern   = */ "a layout in which a rank holds an empty shard of a non-empty tensor",
        /* .warning   = */ "PyTorch's global offset of an empty shard is undefined, and "
                           "distributed checkpointing may drop a real shard as its duplicate; "
                           "upgrade, or keep every shard non-empty",
    },
    [LT_PYTORCH_BUG_MAX_EMPTY_SHARD] = {
        /* .name      = */ "max_empty_shard",
        /* .versions  = */ "2.15 (observed)",
        /* .reference = */ "pytorch issue 130187",
        /* .pattern   = */ "max/min over a dim in which a rank holds an empty shard of a "
                           "non-empty tensor",
        /* .warning   = */ "PyTorch runs max/min on each rank's shard, and a rank whose shard is "
                           "empty along a reduced dim raises (\"Expected reduction dim ... to "
                           "have non-zero size\"); redistribute that dim to R first",
    },
    [LT_PYTORCH_BUG_MEAN_UNEVEN] = {
        /* .name      = */ "mean_uneven",
        /* .versions  = */ "2.8 and earlier (fixed by PR 163241)",
        /* .reference = */ "pytorch issue 162692",
        /* .pattern   = */ "mean over a dim that a mesh dim shards unevenly",
        /* .warning   = */ "PyTorch averages the per-rank means of uneven shards (a wrong mean, "
                           "NaN for an empty shard); upgrade, or redistribute that dim to R first",
    },
};

const lt_pytorch_bug_info *lt_pytorch_bug_get(lt_pytorch_bug b) {
    return (unsigned)b < LT_PYTORCH_BUG_COUNT ? &table[b] : NULL;
}

int lt_pytorch_bug_format(lt_pytorch_bug b, char *buf, size_t n) {
    const lt_pytorch_bug_info *e = lt_pytorch_bug_get(b);
    if (!e)
        return snprintf(buf, n, "warning: unknown PyTorch bug entry %d", (int)b);
    return snprintf(buf, n, "warning: PyTorch %s: %s (%s; known bug '%s')", e->versions, e->warning,
                    e->reference, e->name);
}

/* ---- layout patterns ------------------------------------------------------------ */

#define CHECK_MAX_WORLD 4096 /* larger meshes are not checked (the checks are per rank) */

/* Rank r's local size along every dim with placements pl; 0 on error. */
static int local_shape(const lt_spec *s, const lt_placement *pl, int r, int64_t *shape) {
    return lt_local_shape_and_offset(s->mesh, s->ndim, s->shape, pl, r, shape, NULL) == LT_OK;
}

/* An SS on mesh dim i whose members get different sizes: compared within
 * each group along i, on the layout cut after mesh dim i. */
static int uneven_strided(const lt_spec *s) {
    const lt_mesh *m = s->mesh;
    lt_placement pl[LT_MESH_MAX_DIMS];
    int coord[LT_MESH_MAX_DIMS];
    for (int i = 0; i < m->ndim; i++) {
        if (m->shape[i] == 1 || s->placements[i].kind != LT_PL_STRIDED)
            continue;
        int d = s->placements[i].dim;
        for (int j = 0; j < m->ndim; j++)
            pl[j] = j <= i ? s->placements[j] : lt_replicate();
        for (int r = 0; r < m->world; r++) {
            lt_mesh_coord(m, r, coord);
            if (coord[i] == 0)
                continue;
            coord[i] = 0;
            int r0 = lt_mesh_rank(m, coord);
            int64_t a[LT_MAX_DIMS], b[LT_MAX_DIMS];
            if (local_shape(s, pl, r, a) && local_shape(s, pl, r0, b) && a[d] != b[d])
                return 1;
        }
    }
    return 0;
}

/* A Shard whose split differs from the chunk rule's on some rank. */
static int nonchunk(const lt_spec *s) {
    const lt_mesh *m = s->mesh;
    lt_placement pl[LT_MESH_MAX_DIMS];
    int any = 0;
    for (int i = 0; i < m->ndim; i++) {
        pl[i] = s->placements[i];
        if (m->shape[i] > 1 && pl[i].kind == LT_PL_SHARD && pl[i].rule.kind != LT_SPLIT_CHUNK) {
            pl[i] = lt_shard(pl[i].dim);
            any = 1;
        }
    }
    for (int r = 0; any && r < m->world; r++) {
        int64_t a[LT_MAX_DIMS], b[LT_MAX_DIMS];
        if (!local_shape(s, s->placements, r, a) || !local_shape(s, pl, r, b))
            return 1; /* chunk cannot */
        if (memcmp(a, b, sizeof(int64_t) * (size_t)s->ndim))
            return 1;
    }
    return 0;
}

/* A rank holds no element of a tensor that has some. */
static int empty_shard(const lt_spec *s) {
    for (int d = 0; d < s->ndim; d++)
        if (s->shape[d] == 0)
            return 0;
    for (int r = 0; r < s->mesh->world; r++) {
        int64_t a[LT_MAX_DIMS];
        if (!local_shape(s, s->placements, r, a))
            return 0;
        for (int d = 0; d < s->ndim; d++)
            if (a[d] == 0)
                return 1;
    }
    return 0;
}

uint32_t lt_pytorch_bugs_layout(const lt_spec *s) {
    /* PyTorch has no RaggedShard: none of its bugs reads one (and N-d
     * layout math, which the checks use, does not take one) */
    if (!s || !s->mesh || s->mesh->world > CHECK_MAX_WORLD ||
        lt_placements_have_ragged(s->placements, s->mesh->ndim))
        return 0;
    uint32_t hits = 0;
    if (uneven_strided(s))
        hits |= 1u << LT_PYTORCH_BUG_UNEVEN_STRIDED;
    if (nonchunk(s))
        hits |= 1u << LT_PYTORCH_BUG_NONCHUNK_SIZES;
    if (empty_shard(s))
        hits |= 1u << LT_PYTORCH_BUG_EMPTY_SHARD_OFFSET;
    return hits;
}

uint32_t lt_pytorch_bugs_redistribute(const lt_spec *src, const lt_placement *dst) {
    if (!src || !dst || !src->mesh)
        return 0;
    lt_spec d = *src;
    memcpy(d.placements, dst, sizeof(lt_placement) * (size_t)src->mesh->ndim);
    uint32_t hits = lt_pytorch_bugs_layout(src) | lt_pytorch_bugs_layout(&d);
    int same = lt_placements_equal(src->placements, dst, src->mesh->ndim), strided = 0;
    for (int i = 0; i < src->mesh->ndim; i++)
        strided |= src->mesh->shape[i] > 1 &&
                   (src->placements[i].kind == LT_PL_STRIDED || dst[i].kind == LT_PL_STRIDED);
    if (!same && strided)
        hits |= 1u << LT_PYTORCH_BUG_STRIDED_REDISTRIBUTE;
    return hits;
}

/* ---- op patterns ------------------------------------------------------------------ */

/* The dims op reduces (all when args name none), normalized, as a bit set. */
static unsigned reduced_dims(const lt_spec *x, const lt_op_args *a) {
    if (!a || a->ndims == 0)
        return x->ndim ? (1u << x->ndim) - 1 : 0;
    unsigned set = 0;
    for (int k = 0; k < a->ndims; k++) {
        int d = a->dims[k] < 0 ? a->dims[k] + x->ndim : a->dims[k];
        if (d >= 0 && d < x->ndim)
            set |= 1u << d;
    }
    return set;
}

/* max/min: a rank's shard is empty along a reduced dim of a non-empty tensor. */
static int max_empty(const lt_spec *x, unsigned dims) {
    for (int d = 0; d < x->ndim; d++)
        if (x->shape[d] == 0)
            return 0;
    for (int r = 0; r < x->mesh->world; r++) {
        int64_t a[LT_MAX_DIMS];
        if (!local_shape(x, x->placements, r, a))
            return 0;
        for (int d = 0; d < x->ndim; d++)
            if ((dims >> d & 1) && a[d] == 0)
                return 1;
    }
    return 0;
}

/* mean: a reduced dim that a mesh dim of size m shards with a remainder. */
static int mean_uneven(const lt_spec *x, unsigned dims) {
    int64_t n[LT_MAX_DIMS];
    memcpy(n, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    for (int i = 0; i < x->mesh->ndim; i++) {
        const lt_placement *p = &x->placements[i];
        int k = x->mesh->shape[i];
        if (k == 1 || !lt_placement_is_shard_like(p))
            continue;
        if ((dims >> p->dim & 1) && n[p->dim] % k)
            return 1;
        /* the largest piece goes on: chunk's first (kernels/split.h) */
        lt_split_rule chunk = lt_split_chunk();
        int64_t big = 0, at = 0;
        if (lt_split_piece(&chunk, n[p->dim], k, 0, &big, &at) != LT_OK) return 0;
        n[p->dim] = big;
    }
    return 0;
}

uint32_t lt_pytorch_bugs_op(lt_op_kind op, const lt_spec *const *in, int nin,
                            const lt_op_args *args) {
    uint32_t hits = 0;
    if (nin < 1 || !in[0] || !in[0]->mesh || in[0]->mesh->world > CHECK_MAX_WORLD)
        return hits;
    unsigned dims = reduced_dims(in[0], args);
    if ((op == LT_OP_AMAX || op == LT_OP_AMIN) && max_empty(in[0], dims))
        hits |= 1u << LT_PYTORCH_BUG_MAX_EMPTY_SHARD;
    if (op == LT_OP_MEAN && mean_uneven(in[0], dims))
        hits |= 1u << LT_PYTORCH_BUG_MEAN_UNEVEN;
    return hits;
}
