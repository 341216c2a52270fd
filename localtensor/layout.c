/* localtensor/layout.c — per-rank global index sets (docs/SEMANTICS.md §3, §4, §6, §9). */
#include "localtensor/layout.h"
#include "kernels/alloc.h"
#include "kernels/memlimit_impl.h"

#include <stdlib.h>
#include <string.h>

/* *out = a new list of n global indices (n >= 0; caller frees), or NULL
 * with LT_OVERFLOW / LT_NOMEM and the message set. The byte count is
 * checked: n comes from user shapes. */
static lt_status index_list_new(int64_t n, int dim, int64_t **out) {
    int64_t bytes;
    *out = NULL;
    if (n < 0 || lt__mul_i64(n > 0 ? n : 1, (int64_t)sizeof(int64_t), &bytes) ||
        (uint64_t)bytes > SIZE_MAX / 2)
        return lt__err(LT_OVERFLOW,
                       "the index list of dim %d (%lld entries) does not fit in the address space",
                       dim, (long long)n);
    *out = lt__malloc((size_t)bytes);
    if (!*out)
        return lt__err(LT_NOMEM, "out of memory for the index list of dim %d (%lld entries)", dim,
                       (long long)n);
    return LT_OK;
}

static lt_status split_error(lt_status st, int mesh_dim, const lt_placement *p, int rank) {
    char txt[128];
    lt_placement_format(p, txt, sizeof txt);
    return lt__err_ctx(st, "mesh dim %d, placement %s, rank %d", mesh_dim, txt, rank);
}

/* Applies one Shard/StridedShard to the list cur[0..*n): keeps this
 * coordinate's part in place, updating *n. */
static lt_status apply_split(const lt_placement *p, int k, int c, int64_t *cur, int64_t *n,
                             int mesh_dim, int rank) {
    int64_t len = *n;
    if (p->kind == LT_PL_SHARD) {
        int64_t off, sz;
        lt_status st = lt_split_piece(&p->rule, len, k, c, &sz, &off);
        if (st) return split_error(st, mesh_dim, p, rank);
        memmove(cur, cur + off, sizeof(int64_t) * (size_t)sz);
        *n = sz;
        return LT_OK;
    }
    if (k == 1) return LT_OK;
    /* strided (docs/SEMANTICS.md §4): positions are increasing and pos[w] >= w, so
     * the in-place gather never overwrites an entry it still has to read */
    int64_t cnt = lt_split_strided_positions(len, p->split_factor, k, c, NULL);
    int64_t *pos;   /* (cnt) */
    LT_TRY(index_list_new(cnt, p->dim, &pos));
    lt_split_strided_positions(len, p->split_factor, k, c, pos);
    for (int64_t w = 0; w < cnt; w++) cur[w] = cur[pos[w]];
    lt__free(pos);
    *n = cnt;
    return LT_OK;
}

/* SS(sf) over k, member c, of the consecutive run start..start+len-1: the
 * same picks as apply_split, written straight into a new list of only the
 * kept entries (so a rank never builds the whole dim), or at `at` when
 * given (room the caller owns). */
static lt_status strided_from_run(int64_t start, int64_t len, int sf, int k, int c, int dim,
                                  int64_t *at, int64_t **out, int64_t *n) {
    int64_t cnt = lt_split_strided_positions(len, sf, k, c, NULL);
    if (at) *out = at;   /* room for the whole dim, which holds at least cnt */
    else LT_TRY(index_list_new(cnt, dim, out));   /* (cnt) */
    lt_split_strided_positions(len, sf, k, c, *out);
    for (int64_t w = 0; w < cnt; w++) (*out)[w] += start;
    *n = cnt;
    return LT_OK;
}

/* ---- shapes and offsets without lists -------------------------------------- */

/* One split of a dim, kept so that a rank's first and last held index can be
 * found without building the dim's list. Shard keeps positions off.. of the
 * list before it; StridedShard keeps the positions that
 * lt_split_strided_positions(n, sf, k, c) picks from a list of n. */
typedef struct walk_step {
    int strided, sf, k, c;
    int64_t n, off;
} walk_step;

/* Position w of member c's strided pick from a list of n (the w-th entry
 * lt_split_strided_positions would write), in O(sf). */
static int64_t strided_pos_at(int64_t n, int sf, int k, int c, int64_t w) {
    int64_t pc = n / sf + (n % sf != 0);
    for (int j = 0; j < sf; j++) {
        int64_t ps = pc * j;
        if (ps >= n) break;
        int64_t plen = n - ps < pc ? n - ps : pc;
        int64_t cc = plen / k + (plen % k != 0), cs = cc * c;
        if (cs >= plen) continue;
        int64_t cnt = (plen - cs < cc ? plen : cs + cc) - cs;
        if (w < cnt) return ps + cs + w;
        w -= cnt;
    }
    return -1; /* not reached for w < the pick's length */
}

/* Global index of position w of the list a dim ends with after steps[0..n). */
static int64_t walk_eval(const walk_step *steps, int n, int64_t w) {
    for (int s = n - 1; s >= 0; s--)
        w = steps[s].strided ? strided_pos_at(steps[s].n, steps[s].sf, steps[s].k, steps[s].c, w)
                             : steps[s].off + w;
    return w;
}

/* local_shape, global_offset and contiguous of one rank in O(mesh dims x
 * split factor), allocating nothing: the same walk as the lists, keeping
 * only lengths. Every list is increasing (a Shard keeps a run of it, a
 * StridedShard picks increasing positions), so it is consecutive exactly
 * when last - first == length - 1. */
static lt_status walk_shape(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                            const lt_placement *pl, int rank, lt_rank_layout *out) {
    int coord[LT_MESH_MAX_DIMS];
    walk_step steps[LT_MAX_DIMS][LT_MESH_MAX_DIMS];
    int nsteps[LT_MAX_DIMS] = {0}, sharded[LT_MAX_DIMS] = {0};
    lt_mesh_coord(mesh, rank, coord);
    for (int d = 0; d < ndim; d++) out->local_shape[d] = gshape[d];
    for (int i = 0; i < mesh->ndim; i++) {
        const lt_placement *p = &pl[i];
        if (p->kind == LT_PL_RAGGED)
            return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                                "not supported yet: RaggedShard (mesh dim %d) in N-d layout math: "
                                "its shards have the flattened shape (rows, ...) of "
                                "localtensor/ragged.h", i);
        if (!lt_placement_is_shard_like(p)) continue;
        int d = p->dim, k = mesh->shape[i];
        LT_ASSERT(d >= 0 && d < ndim);
        sharded[d] = 1;
        walk_step *s = &steps[d][nsteps[d]];
        int64_t len = out->local_shape[d];
        memset(s, 0, sizeof *s);
        if (p->kind == LT_PL_SHARD) {
            int64_t sz;
            lt_status st = lt_split_piece(&p->rule, len, k, coord[i], &sz, &s->off);
            if (st) return split_error(st, i, p, rank);
            out->local_shape[d] = sz;
        } else if (k > 1) {
            *s = (walk_step){1, p->split_factor, k, coord[i], len, 0};
            out->local_shape[d] =
                lt_split_strided_positions(len, p->split_factor, k, coord[i], NULL);
        } else {
            continue;
        }
        nsteps[d]++;
    }
    for (int d = 0; d < ndim; d++) {
        int64_t n = out->local_shape[d];
        out->contiguous[d] = 1;
        out->global_offset[d] = !sharded[d] ? 0 : n ? walk_eval(steps[d], nsteps[d], 0) : gshape[d];
        if (sharded[d] && n > 1)
            out->contiguous[d] =
                walk_eval(steps[d], nsteps[d], n - 1) - out->global_offset[d] == n - 1;
    }
    return LT_OK;
}

/* ---- a per-thread memo of walk_shape ------------------------------------------ */

/* Callers ask for the layout of every rank of one (mesh, shape, placements)
 * in turn, and the same few of those over and over (a redistribute's
 * source and destination, then each plan step's: the verifier, the shard
 * allocation and the memory estimate each walk them again). walk_shape is a
 * pure function of (mesh shape, global shape, placements, rank), so each
 * thread keeps its answers for the last SM_N of those, per rank, for meshes
 * of at most SM_WORLD ranks. Keys compare placements by value (what
 * lt_placement_equal compares), so equal lists spelled apart share an
 * entry; lists with explicit split sizes are not kept. A rank whose walk
 * fails is never kept: it is walked again, and its error message set,
 * every time. Plain static storage: nothing is allocated, nothing to
 * release. */
#define SM_N 8
#define SM_WORLD 64
#define SM_KEY (1 + LT_MESH_MAX_DIMS + LT_MAX_DIMS + LT_MESH_MAX_DIMS)
typedef struct shape_memo {
    int nkey;                                       /* 0: unused */
    uint64_t key[SM_KEY];
    uint64_t have;                                  /* bit r: rank r's answer in sm_ans[r] */
} shape_memo;
/* One rank's answer. Kept rank-major (sm_ans[rank][entry]) so that the
 * ranks of small meshes, whatever the entry, share the first few pages:
 * the memo adds little to a thread's resident memory. */
typedef struct sm_rank {
    int64_t ls[LT_MAX_DIMS], go[LT_MAX_DIMS];
    unsigned char contig[LT_MAX_DIMS];
} sm_rank;
static _Thread_local shape_memo sm_ent[SM_N];
static _Thread_local sm_rank sm_ans[SM_WORLD][SM_N];
static _Thread_local unsigned char sm_order[SM_N] = {0, 1, 2, 3,
                                                     4, 5, 6, 7}; /* most recently used first */
_Static_assert(SM_N == 8, "sm_order's initializer lists SM_N entries");

/* The key of (mesh shape, shape, placements) into k (SM_KEY words); its
 * length, or 0 when the list is not kept (a split factor that does not fit
 * the key, a rule with explicit sizes: their array belongs to the caller).
 * A placement is one word: what lt_placement_equal compares (kind, dim,
 * split factor, op, rule kind) packed, so equal keys are equal placements. */
static int sm_key(const lt_mesh *mesh, int ndim, const int64_t *gshape, const lt_placement *pl,
                  uint64_t *k) {
    int n = 0, M = mesh->ndim;
    k[n++] = (uint64_t)M << 32 | (uint32_t)ndim;
    for (int i = 0; i < M; i++) k[n++] = (uint64_t)mesh->shape[i];
    for (int d = 0; d < ndim; d++) k[n++] = (uint64_t)gshape[d];
    for (int i = 0; i < M; i++) {
        const lt_placement *p = &pl[i];
        uint64_t w = (uint64_t)p->kind;
        switch (p->kind) {
        case LT_PL_PARTIAL: w |= (uint64_t)p->op << 8; break;
        case LT_PL_STRIDED:
            if (p->split_factor < 0 || p->split_factor > 0xffff) return 0;
            w |= (uint64_t)(uint32_t)p->dim << 32 | (uint64_t)p->split_factor << 8;
            break;
        case LT_PL_RAGGED: return 0;   /* refused by walk_shape every time */
        case LT_PL_SHARD:
            if (p->rule.kind == LT_SPLIT_EXPLICIT) return 0;
            w |= (uint64_t)(uint32_t)p->dim << 32 | (uint64_t)p->rule.kind << 24;
            break;
        default: break;
        }
        k[n++] = w;
    }
    return n;
}

/* The entry of this key, made the most recent (the least recent one is
 * taken over, its answers dropped, when none matches); NULL when the mesh
 * is too big to keep or the list is not kept (sm_key). */
static shape_memo *sm_get(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                          const lt_placement *pl) {
    if (mesh->world > SM_WORLD || ndim < 0 || ndim > LT_MAX_DIMS) return NULL;
    uint64_t k[SM_KEY];
    int n = sm_key(mesh, ndim, gshape, pl, k);
    if (!n) return NULL;
    shape_memo *ent = sm_ent;
    unsigned char *ord = sm_order;
    int at = SM_N - 1, hit = 0;
    for (int x = 0; x < SM_N && !hit; x++) {
        const shape_memo *e = &ent[ord[x]];
        if (e->nkey != n) continue;
        int q = 0;
        while (q < n && e->key[q] == k[q]) q++;
        if (q == n) {
            at = x;
            hit = 1;
        }
    }
    unsigned char id = ord[at];
    for (int x = at; x > 0; x--) ord[x] = ord[x - 1];
    ord[0] = id;
    shape_memo *e = &ent[id];
    if (hit) return e;
    e->nkey = n;
    for (int q = 0; q < n; q++) e->key[q] = k[q];
    e->have = 0;
    return e;
}

/* walk_shape through the memo: the same answers, the same errors. */
static lt_status walk_shape_memo(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                                 const lt_placement *pl, int rank, lt_rank_layout *out) {
    shape_memo *e = rank >= 0 && rank < mesh->world && rank < SM_WORLD && ndim <= LT_MAX_DIMS
                        ? sm_get(mesh, ndim, gshape, pl)
                        : NULL;
    if (!e) return walk_shape(mesh, ndim, gshape, pl, rank, out);
    uint64_t bit = (uint64_t)1 << rank;
    sm_rank *a = &sm_ans[rank][e - sm_ent];
    if (!(e->have & bit)) {
        LT_TRY(walk_shape(mesh, ndim, gshape, pl, rank, out));
        for (int d = 0; d < ndim && d < LT_MAX_DIMS;
             d++) { /* ndim <= LT_MAX_DIMS: said for the compiler */
            a->ls[d] = out->local_shape[d];
            a->go[d] = out->global_offset[d];
            a->contig[d] = (unsigned char)out->contiguous[d];
        }
        e->have |= bit;
        return LT_OK;
    }
    for (int d = 0; d < ndim; d++) {
        out->local_shape[d] = a->ls[d];
        out->global_offset[d] = a->go[d];
        out->contiguous[d] = a->contig[d];
    }
    return LT_OK;
}

/* ---- per-rank index lists ------------------------------------------------------ */

#define LAYOUT_BLOCK_MAX 512   /* index entries of sharded dims that share one allocation */

lt_status lt_layout_rank(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                         const lt_placement *pl, int rank, lt_rank_layout *out) {
    memset(out, 0, sizeof *out);
    out->ndim = ndim;
    LT_TRY(walk_shape_memo(mesh, ndim, gshape, pl, rank, out));
    /* no elements: nothing to index, and another dim may be huge */
    for (int d = 0; d < ndim; d++)
        if (gshape[d] == 0) return LT_OK;
    out->lists = 1;
    int coord[LT_MESH_MAX_DIMS];
    lt_mesh_coord(mesh, rank, coord);
    /* A dim split only by Shards so far holds the consecutive run
     * run_start[d] .. + len[d]; its list is built only when a StridedShard
     * breaks the run, or at the end (O(local) per rank). */
    int64_t run_start[LT_MAX_DIMS] = {0}, len[LT_MAX_DIMS];
    int sharded[LT_MAX_DIMS] = {0};
    for (int d = 0; d < ndim; d++) len[d] = gshape[d];
    /* Small dims (the usual sweep) get one allocation for all their lists:
     * dim d's list starts at the sum of the sizes of the sharded dims before
     * it, with room for the whole dim (a list never grows past it). */
    int64_t base[LT_MAX_DIMS], room = 0;
    int onblock = 0;
    for (int i = 0; i < mesh->ndim; i++)
        if (lt_placement_is_shard_like(&pl[i])) sharded[pl[i].dim] = 1;
    for (int d = 0; d < ndim && room <= LAYOUT_BLOCK_MAX; d++)
        if (sharded[d]) {
            base[d] = room;
            room += gshape[d] <= LAYOUT_BLOCK_MAX ? gshape[d] : LAYOUT_BLOCK_MAX + 1;
        }
    int64_t *blk = NULL;
    if (room > 0 && room <= LAYOUT_BLOCK_MAX) {
        LT_TRY(index_list_new(room, 0, &blk));
        out->one_block_ = onblock = 1;
    }
    lt_status st = LT_OK;
    for (int i = 0; i < mesh->ndim && !st; i++) {
        const lt_placement *p = &pl[i];
        if (!lt_placement_is_shard_like(p)) continue;
        int d = p->dim, k = mesh->shape[i];
        sharded[d] = 1;
        if (out->idx[d]) {
            st = apply_split(p, k, coord[i], out->idx[d], &len[d], i, rank);
        } else if (p->kind == LT_PL_SHARD) {
            int64_t sz, off;
            st = lt_split_piece(&p->rule, len[d], k, coord[i], &sz, &off);
            if (st) {
                st = split_error(st, i, p, rank);
                break;
            }
            run_start[d] += off;
            len[d] = sz;
        } else if (k > 1) {
            st = strided_from_run(run_start[d], len[d], p->split_factor, k, coord[i], d,
                                  onblock ? blk + base[d] : NULL, &out->idx[d], &len[d]);
        }
    }
    for (int d = 0; d < ndim && !st; d++) {
        if (!sharded[d] || out->idx[d]) continue;
        if (onblock) out->idx[d] = blk + base[d];
        else st = index_list_new(len[d], d, &out->idx[d]);
        for (int64_t j = 0; !st && j < len[d]; j++) out->idx[d][j] = run_start[d] + j;
    }
    for (int d = 0; d < ndim && !st; d++) LT_ASSERT(len[d] == out->local_shape[d]);
    if (st) lt_rank_layout_free(out);
    return st;
}

void lt_rank_layout_free(lt_rank_layout *l) {
    if (!l) return;
    int freed = 0;
    for (int d = 0; d < LT_MAX_DIMS; d++) {
        if (l->idx[d] && !(l->one_block_ && freed)) {
            lt__free(l->idx[d]);
            freed = 1;
        }
        l->idx[d] = NULL;
    }
    l->one_block_ = 0;
}

lt_status lt_layout_check(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                          const lt_placement *pl) {
    for (int r = 0; r < mesh->world; r++)
        LT_TRY(lt_local_shape_and_offset(mesh, ndim, gshape, pl, r, NULL, NULL));
    return LT_OK;
}

lt_status lt_local_shape_and_offset(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                                    const lt_placement *pl, int rank, int64_t *local_shape,
                                    int64_t *global_offset) {
    lt_rank_layout l;   /* no lists: walk_shape allocates nothing */
    LT_TRY(walk_shape_memo(mesh, ndim, gshape, pl, rank, &l));
    for (int d = 0; d < ndim; d++) {
        if (local_shape) local_shape[d] = l.local_shape[d];
        if (global_offset) global_offset[d] = l.global_offset[d];
    }
    return LT_OK;
}

lt_status lt_compute_global_tensor_info(const lt_mesh *mesh, int ndim, const int64_t *local_shape,
                                        const int64_t *local_stride, const lt_placement *pl,
                                        int64_t *global_shape, int64_t *global_stride) {
    memcpy(global_shape, local_shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(global_stride, local_stride, sizeof(int64_t) * (size_t)ndim);
    for (int i = 0; i < mesh->ndim; i++) {
        const lt_placement *p = &pl[i];
        if (p->kind == LT_PL_STRIDED)
            return lt__err(LT_UNSUPPORTED,
                           "mesh dim %d: global tensor info from a StridedShard is not supported",
                           i);
        if (p->kind != LT_PL_SHARD) continue;
        int d = p->dim;
        if (d < 0 || d >= ndim)
            return lt__err(LT_INVALID,
                           "mesh dim %d: shard dim %d out of range for a %d-d local tensor", i, d,
                           ndim);
        int64_t m = mesh->shape[i];
        int64_t sd = global_stride[d];
        if (lt__mul_i64(global_shape[d], m, &global_shape[d]))
            return lt__err(LT_OVERFLOW, "mesh dim %d: global size of dim %d overflows", i, d);
        for (int j = 0; j < ndim; j++) {
            if (j == d || global_stride[j] < sd) continue;
            if (lt__mul_i64(global_stride[j], m, &global_stride[j]))
                return lt__err(LT_OVERFLOW, "mesh dim %d: stride of dim %d overflows", i, j);
        }
    }
    return LT_OK;
}

int lt_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    int over = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        if (d > 0 && !over && lt__mul_i64(s, shape[d] > 0 ? shape[d] : 1, &s)) over = 1;
    }
    return over;
}

void lt_chunk_size_and_offset(int64_t curr, int k, int rank, int64_t *size, int64_t *offset) {
    if (curr % k == 0) {
        *size = curr / k;
        *offset = rank * (curr / k);
        return;
    }
    int64_t full = curr / k + 1, start = full * rank;
    if (curr < start) {
        *size = 0;
        *offset = curr;
        return;
    }
    *size = (curr < start + full ? curr : start + full) - start;
    *offset = start;
}

lt_status lt_layout_total_bytes(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                                const lt_placement *pl, size_t esize, uint64_t *out) {
    uint64_t total = 0;
    for (int r = 0; r < mesh->world; r++) {
        int64_t ls[LT_MAX_DIMS], n;
        LT_TRY(lt_local_shape_and_offset(mesh, ndim, gshape, pl, r, ls, NULL));
        LT_TRY(lt__numel_checked(ndim, ls, esize, &n));
        uint64_t b = (uint64_t)n * esize; /* fits: numel_checked bounds bytes */
        if (total > UINT64_MAX - b)
            return lt__err(LT_OVERFLOW, "the shards of all %d ranks overflow 64 bits of bytes",
                           mesh->world);
        total += b;
    }
    *out = total;
    return LT_OK;
}

lt_status lt_check_memory(uint64_t bytes, int world, const char *what) {
    return lt__mem_check(bytes, world, what);
}
