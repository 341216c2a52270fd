/* localtensor/layout.c — per-rank global index sets (SEMANTICS 3, 4, 6, 9). */
#include "localtensor/layout.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    /* strided (SEMANTICS 4): positions are increasing and pos[w] >= w, so
     * the in-place gather never overwrites an entry it still has to read */
    int64_t cnt = lt_split_strided_positions(len, p->split_factor, k, c, NULL);
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)(cnt > 0 ? cnt : 1));   /* (cnt) */
    if (!pos) return lt__err(LT_NOMEM, "out of memory for an index list (%lld entries)", (long long)cnt);
    lt_split_strided_positions(len, p->split_factor, k, c, pos);
    for (int64_t w = 0; w < cnt; w++) cur[w] = cur[pos[w]];
    free(pos);
    *n = cnt;
    return LT_OK;
}

/* SS(sf) over k, member c, of the consecutive run start..start+len-1: the
 * same picks as apply_split, written straight into a new list of only the
 * kept entries (so a rank never builds the whole dim). */
static lt_status strided_from_run(int64_t start, int64_t len, int sf, int k, int c, int64_t **out,
                                  int64_t *n) {
    int64_t cnt = lt_split_strided_positions(len, sf, k, c, NULL);
    *out = malloc(sizeof(int64_t) * (size_t)(cnt > 0 ? cnt : 1));   /* (cnt) */
    if (!*out) return lt__err(LT_NOMEM, "out of memory for an index list (%lld entries)", (long long)cnt);
    lt_split_strided_positions(len, sf, k, c, *out);
    for (int64_t w = 0; w < cnt; w++) (*out)[w] += start;
    *n = cnt;
    return LT_OK;
}

lt_status lt_layout_rank(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                         const lt_placement *pl, int rank, lt_rank_layout *out) {
    memset(out, 0, sizeof *out);
    out->ndim = ndim;
    int coord[LT_MESH_MAX_DIMS];
    lt_mesh_coord(mesh, rank, coord);
    /* A dim split only by Shards so far holds the consecutive run
     * run_start[d] .. + local_shape[d]; its list is built only when a
     * StridedShard breaks the run, or at the end (O(local) per rank). */
    int64_t run_start[LT_MAX_DIMS] = {0};
    int sharded[LT_MAX_DIMS] = {0};
    for (int d = 0; d < ndim; d++) {
        out->local_shape[d] = gshape[d];
        out->contiguous[d] = 1;
    }
    lt_status st = LT_OK;
    for (int i = 0; i < mesh->ndim && !st; i++) {
        const lt_placement *p = &pl[i];
        if (!lt_placement_is_shard_like(p)) continue;
        int d = p->dim, k = mesh->shape[i];
        LT_ASSERT(d >= 0 && d < ndim);
        sharded[d] = 1;
        if (out->idx[d]) {
            st = apply_split(p, k, coord[i], out->idx[d], &out->local_shape[d], i, rank);
        } else if (p->kind == LT_PL_SHARD) {
            int64_t sz, off;
            st = lt_split_piece(&p->rule, out->local_shape[d], k, coord[i], &sz, &off);
            if (st) {
                st = split_error(st, i, p, rank);
                break;
            }
            run_start[d] += off;
            out->local_shape[d] = sz;
        } else if (k > 1) {
            st = strided_from_run(run_start[d], out->local_shape[d], p->split_factor, k, coord[i], &out->idx[d],
                                  &out->local_shape[d]);
        }
    }
    for (int d = 0; d < ndim && !st; d++) {
        if (!sharded[d] || out->idx[d]) continue;
        int64_t n = out->local_shape[d];
        out->idx[d] = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
        if (!out->idx[d]) {
            st = lt__err(LT_NOMEM, "out of memory for the index list of dim %d (%lld entries)", d, (long long)n);
            break;
        }
        for (int64_t j = 0; j < n; j++) out->idx[d][j] = run_start[d] + j;
    }
    if (st) {
        lt_rank_layout_free(out);
        return st;
    }
    for (int d = 0; d < ndim; d++) {
        if (!out->idx[d]) {
            out->global_offset[d] = 0;
            continue;
        }
        int64_t n = out->local_shape[d];
        out->global_offset[d] = n ? out->idx[d][0] : gshape[d];
        for (int64_t j = 1; j < n; j++)
            if (out->idx[d][j] != out->idx[d][j - 1] + 1) { out->contiguous[d] = 0; break; }
    }
    return LT_OK;
}

void lt_rank_layout_free(lt_rank_layout *l) {
    if (!l) return;
    for (int d = 0; d < LT_MAX_DIMS; d++) {
        free(l->idx[d]);
        l->idx[d] = NULL;
    }
}

lt_status lt_layout_check(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                          const lt_placement *pl) {
    for (int r = 0; r < mesh->world; r++) {
        lt_rank_layout l;
        LT_TRY(lt_layout_rank(mesh, ndim, gshape, pl, r, &l));
        lt_rank_layout_free(&l);
    }
    return LT_OK;
}

lt_status lt_local_shape_and_offset(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                                    const lt_placement *pl, int rank, int64_t *local_shape,
                                    int64_t *global_offset) {
    lt_rank_layout l;
    LT_TRY(lt_layout_rank(mesh, ndim, gshape, pl, rank, &l));
    for (int d = 0; d < ndim; d++) {
        if (local_shape) local_shape[d] = l.local_shape[d];
        if (global_offset) global_offset[d] = l.global_offset[d];
    }
    lt_rank_layout_free(&l);
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
            return lt__err(LT_UNSUPPORTED, "mesh dim %d: global tensor info from a StridedShard is not supported", i);
        if (p->kind != LT_PL_SHARD) continue;
        int d = p->dim;
        if (d < 0 || d >= ndim)
            return lt__err(LT_INVALID, "mesh dim %d: shard dim %d out of range for a %d-d local tensor", i, d, ndim);
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

void lt_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
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
        if (total > UINT64_MAX - b) return lt__err(LT_OVERFLOW, "the shards of all %d ranks overflow 64 bits of bytes", mesh->world);
        total += b;
    }
    *out = total;
    return LT_OK;
}

lt_status lt_check_memory(uint64_t bytes, int world, const char *what) {
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psize <= 0) return LT_OK;
    uint64_t phys = (uint64_t)pages * (uint64_t)psize;
    if (bytes <= phys) return LT_OK;
    return lt__err(LT_NOMEM, "%s needs %.1f GiB for the shards of all %d ranks, more than this machine's %.1f GiB of memory",
                   what, (double)bytes / 1073741824.0, world, (double)phys / 1073741824.0);
}
