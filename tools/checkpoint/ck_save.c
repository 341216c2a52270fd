/* tools/checkpoint/ck_save.c — a DTensor saved as a checkpoint, a tensor
 * loaded from one (the scenario steps save: and load:, tools/scenario/
 * scenario_checkpoint.c).
 *
 * Why it exists: a scenario guards a save-on-one-layout, load-on-another
 * path end to end through real files, in the same formats `checkpoint`
 * reads and PyTorch writes (tools/checkpoint/checkpoint.h): each rank's shard
 * as its own piece (DCP; a block several ranks hold written once, by the
 * lowest), or the whole tensor (HF). Loading proves the checkpoint first
 * (lt__ck_verify) and reads the pieces into one tensor.
 */
#include <string.h>

#include "kernels/alloc.h"
#include "localtensor/kernels/backend.h"
#include "kernels/status_impl.h"
#include "localtensor/localtensor.h"
#include "tools/checkpoint/checkpoint.h"
#include "tools/render/json_alloc.h"
#include "tools/render/render.h"

/* A host, contiguous copy of t into *out (caller frees). */
static lt_status host_copy(const lt_tensor *t, lt_tensor **out) {
    LT_TRY(lt_tensor_new_on(lt_backend_cpu(), t->dtype, t->ndim, t->shape, out));
    lt_status st = lt_copy(*out, t);
    if (st) lt_tensor_free(*out), *out = NULL;
    return st;
}

static char *join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = lt__malloc(a + b + 2);
    if (p) memcpy(p, dir, a), p[a] = '/', memcpy(p + a + 1, name, b + 1);
    return p;
}

/* One file holding t (host, contiguous) as entry `name`. */
static lt_status write_one(const char *path, const char *name, const lt_tensor *t,
                           const int64_t *off, int dcp) {
    lt_st_entry e;
    memset(&e, 0, sizeof e);
    e.name = (char *)name, e.dtype = t->dtype, e.ndim = t->ndim;
    memcpy(e.shape, t->shape, sizeof e.shape);
    char *info = NULL;
    if (dcp) {
        lt__json_begin();
        cJSON *o = cJSON_CreateObject(), *j = cJSON_CreateObject();
        lt__json_put(j, "saved_offsets", lt_json_i64_array(off, t->ndim));
        lt__json_put(o, name, j);
        info = lt__json_failed() ? NULL : cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (!info) return lt__err(LT_NOMEM, "out of memory saving a checkpoint");
    }
    const char *mk[] = {"DCP_SHARDING_INFO", "DCP_VERSION", "format"};
    const char *mv[] = {info, "1.0", "pt"};
    lt_st_writer *w = NULL;
    lt_status st = dcp ? lt__st_create(path, &e, 1, mk, mv, 3, &w)
                       : lt__st_create(path, &e, 1, mk + 2, mv + 2, 1, &w);
    cJSON_free(info);
    if (st) return st;
    if (lt_nbytes(t)) st = lt__st_write_at(w, &e, 0, lt_data(t), lt_nbytes(t));
    lt_status cs = lt__st_writer_close(w);
    return st ? st : cs;
}

/* Rank r's piece: its box, and whether a lower rank holds the same. v is
 * dt's layout as layout math sees it (lt_ragged_view_of; a RaggedShard over
 * k = 1 dims: the tensor's own shape, the RaggedShard an explicit-sizes
 * Shard(0), so its run of rows is the box rows [lo, hi) x the rest). */
static lt_status rank_box(const lt_dtensor *dt, const lt_ragged_view *v, int r, int64_t *off,
                          int64_t *len, int *dup) {
    const lt_mesh *m = &dt->local->mesh;
    LT_TRY(lt_local_shape_and_offset(m, v->ndim, v->shape, v->pl, r, len, off));
    *dup = 0;
    for (int q = 0; q < r && !*dup; q++) {
        int64_t o[LT_MAX_DIMS], l[LT_MAX_DIMS];
        LT_TRY(lt_local_shape_and_offset(m, v->ndim, v->shape, v->pl, q, l, o));
        *dup = !memcmp(o, off, sizeof(int64_t) * (size_t)v->ndim) &&
               !memcmp(l, len, sizeof(int64_t) * (size_t)v->ndim);
    }
    return LT_OK;
}

/* Refuses what a checkpoint cannot hold: Partial, non-box strided shards,
 * and (DCP) a RaggedShard over k > 1 dims, whose shards are runs of
 * flattened rows rather than boxes. *v: dt's layout for rank_box. */
static lt_status check_savable(const lt_dtensor *dt, lt_ck_format fmt, lt_ragged_view *v) {
    const lt_mesh *m = &dt->local->mesh;
    LT_TRY(lt_ragged_view_of(m, dt->ndim, dt->shape, dt->placements, v));
    if (fmt == LT_CK_DCP && v->mesh_dim >= 0 && v->k > 1)
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: RaggedShard with k > 1 in checkpoints (mesh dim "
                            "%d flattens dims 0..%d: a shard is a run of flattened rows, not one "
                            "box); save it as format hf, or redistribute first",
                            v->mesh_dim, v->k - 1);
    for (int i = 0; i < m->ndim; i++) {
        if (dt->placements[i].kind == LT_PL_PARTIAL)
            return lt__err(LT_INVALID,
                           "Partial on mesh dim %d: a checkpoint holds values, not partial "
                           "sums (reduce first: redistribute to Replicate)",
                           i);
        if (dt->placements[i].kind != LT_PL_STRIDED) continue;
        for (int r = 0; r < m->world; r++) {
            lt_rank_layout l;
            LT_TRY(lt_layout_rank(m, v->ndim, v->shape, v->pl, r, &l));
            int box = 1;
            for (int d = 0; d < v->ndim; d++) box &= l.contiguous[d] || !l.local_shape[d];
            lt_rank_layout_free(&l);
            if (!box)
                return lt__err_code(
                    LT_UNSUPPORTED, LT_ERR_NOT_YET,
                    "not supported yet: saving rank %d's _StridedShard block, which "
                    "is not one box",
                    r);
        }
    }
    return LT_OK;
}

lt_status lt__ck_save_dtensor(const lt_dtensor *dt, const char *name, const char *dir,
                              lt_ck_format fmt) {
    lt_ragged_view v;
    LT_TRY(check_savable(dt, fmt, &v));
    LT_TRY(lt__ck_prepare_dir(dir));
    lt_status st = LT_OK;
    if (fmt == LT_CK_HF) {
        lt_tensor *full = NULL, *h = NULL;
        char *path = join(dir, "model.safetensors");
        st = path ? lt_full_tensor_direct(dt, &full) : lt__err(LT_NOMEM, "out of memory saving");
        if (!st) st = host_copy(full, &h);
        if (!st) st = write_one(path, name, h, NULL, 0);
        lt_tensor_free(full), lt_tensor_free(h), lt__free(path);
        return st;
    }
    for (int r = 0; r < dt->local->mesh.world && !st; r++) {
        int64_t off[LT_MAX_DIMS] = {0}, len[LT_MAX_DIMS];
        int dup;
        const lt_tensor *s = lt_to_local(dt, r);
        if (!s)
            return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                                "not supported yet: saving rank %d's shard, which is not held here",
                                r);
        if ((st = rank_box(dt, &v, r, off, len, &dup)) || dup) continue;
        char fname[96], *path;
        snprintf(fname, sizeof fname, "shard-%05d-model-00001-of-00001.safetensors", r + 1);
        lt_tensor *h = NULL;
        if (!(path = join(dir, fname))) return lt__err(LT_NOMEM, "out of memory saving");
        st = host_copy(s, &h);
        if (!st) st = write_one(path, name, h, off, 1);
        lt_tensor_free(h), lt__free(path);
    }
    return st;
}

lt_status lt__ck_load_tensor(const char *dir, const char *name, lt_tensor **out) {
    *out = NULL;
    lt_ckpt *ck = NULL;
    LT_TRY(lt__ck_open(dir, &ck));
    lt_status st = lt__ck_verify(ck);
    if (!st && ck->nprob)
        st = lt__err(LT_INVALID, "the checkpoint does not verify (%d problem%s); first: %s",
                     ck->nprob, ck->nprob == 1 ? "" : "s", ck->prob[0]);
    const lt_ck_tensor *t = NULL;
    for (int i = 0; !st && i < ck->nt; i++)
        if (!strcmp(ck->t[i].name, name)) t = &ck->t[i];
    if (!st && !t) st = lt__err(LT_INVALID, "the checkpoint holds no tensor '%s'", name);
    lt_tensor *full = NULL;
    if (!st) st = lt_tensor_new_on(lt_backend_cpu(), t->dtype, t->ndim, t->shape, &full);
    if (!st && lt_numel(full)) st = lt__ck_read_piece_into(ck, t, lt_data(full));
    lt__ck_close(ck);
    if (st) return lt_tensor_free(full), st;
    *out = full;
    return LT_OK;
}
