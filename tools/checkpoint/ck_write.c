/* tools/checkpoint/ck_write.c — writing a resharded checkpoint and comparing
 * it with its source (the last two steps of lt__ck_reshard,
 * tools/checkpoint/ck_reshard.c).
 *
 * Why it exists: the output must be what the real loaders read. DCP format:
 * rank r's blocks in shard-(r+1)-model-00001-of-00001.safetensors with
 * DCP_SHARDING_INFO, DCP_VERSION and format in __metadata__ (as PyTorch's
 * Hugging Face storage writer writes them); a block several ranks hold
 * (Replicate) is written once, by the lowest rank, and a rank with no block
 * to write writes no file — both as DCP does. HF format: whole tensors in
 * model-00001-of-00001.safetensors with model.safetensors.index.json.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "localtensor/layout.h"
#include "tools/checkpoint/checkpoint.h"
#include "tools/render/json_alloc.h"
#include "tools/render/render.h"

/* outdir made (or there and free of safetensors files). */
lt_status lt__ck_prepare_dir(const char *outdir) {
    char e[128];
    lt__echo(outdir, 80, e, sizeof e);
    if (mkdir(outdir, 0755) && errno != EEXIST)
        return lt__err(LT_IO, "--out %s: cannot create: %s", e, strerror(errno));
    DIR *d = opendir(outdir);
    if (!d) return lt__err(LT_IO, "--out %s: cannot read: %s", e, strerror(errno));
    struct dirent *de;
    int busy = 0;
    while ((de = readdir(d)))
        busy |= strlen(de->d_name) > 12 &&
                !strcmp(de->d_name + strlen(de->d_name) - 12, ".safetensors");
    closedir(d);
    if (busy)
        return lt__err(LT_INVALID,
                       "--out %s already holds safetensors files: give a new or empty "
                       "directory",
                       e);
    return LT_OK;
}

static char *join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = lt__malloc(a + b + 2);
    if (p) memcpy(p, dir, a), p[a] = '/', memcpy(p + a + 1, name, b + 1);
    return p;
}

/* 1 when a rank below r holds the same block of t (written there). */
static int written_before(const lt_mesh *m, const lt_ck_tensor *t, const lt_placement *pl, int r,
                          const int64_t *off, const int64_t *len) {
    for (int q = 0; q < r; q++) {
        int64_t o[LT_MAX_DIMS], l[LT_MAX_DIMS];
        if (lt_local_shape_and_offset(m, t->ndim, t->shape, pl, q, l, o)) return 0;
        if (!memcmp(o, off, sizeof(int64_t) * (size_t)t->ndim) &&
            !memcmp(l, len, sizeof(int64_t) * (size_t)t->ndim))
            return 1;
    }
    return 0;
}

/* Writes one file: entries e[n] (offsets offs[n][ndim]) filled from ck. */
static lt_status write_file(const lt_ckpt *ck, const char *path, lt_st_entry *e,
                            int64_t (*offs)[LT_MAX_DIMS], const int *tix, int n,
                            const char *const *mk, const char *const *mv, int nmeta,
                            unsigned char *buf) {
    lt_st_writer *w = NULL;
    LT_TRY(lt__st_create(path, e, n, mk, mv, nmeta, &w));
    lt_status st = LT_OK;
    uint64_t diff;
    for (int i = 0; i < n && !st; i++)
        if (e[i].end > e[i].begin)
            st = lt__ck_move_piece(ck, &ck->t[tix[i]], offs[i], e[i].shape, w, NULL, &e[i], buf,
                                   NULL, &diff);
    lt_status cs = lt__st_writer_close(w);
    return st ? st : cs;
}

/* DCP_SHARDING_INFO of entries e[n] (offsets offs) as a new string. */
static char *sharding_info(const lt_st_entry *e, int64_t (*offs)[LT_MAX_DIMS], int n) {
    lt__json_begin();
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < n; i++) {
        cJSON *j = cJSON_CreateObject();
        lt__json_put(j, "saved_offsets", lt_json_i64_array(offs[i], e[i].ndim));
        lt__json_put(o, e[i].name, j);
    }
    char *s = lt__json_failed() ? NULL : cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* Rank r's file of a DCP target (none when it writes nothing). */
static lt_status write_rank(const lt_ckpt *ck, const lt_mesh *m, const lt_placement *pl, int r,
                            const char *outdir, lt_st_entry *e, int64_t (*offs)[LT_MAX_DIMS],
                            int *tix, unsigned char *buf) {
    int n = 0;
    for (int i = 0; i < ck->nt; i++) {
        const lt_ck_tensor *t = &ck->t[i];
        int64_t len[LT_MAX_DIMS] = {0};
        lt_placement tp[LT_MESH_MAX_DIMS];   /* a RaggedShard over (0,): explicit Shard(0) */
        LT_TRY(lt__ck_target_pl(m, t, pl, tp));
        LT_TRY(lt_local_shape_and_offset(m, t->ndim, t->shape, tp, r, len, offs[n]));
        if (written_before(m, t, tp, r, offs[n], len)) continue;
        memset(&e[n], 0, sizeof e[n]);
        e[n].name = t->name, e[n].dtype = t->dtype, e[n].ndim = t->ndim;
        memcpy(e[n].shape, len, sizeof len);
        tix[n++] = i;
    }
    if (!n) return LT_OK;
    char name[96], *info = sharding_info(e, offs, n), *path = NULL;
    snprintf(name, sizeof name, "shard-%05d-model-00001-of-00001.safetensors", r + 1);
    lt_status st = info && (path = join(outdir, name))
                       ? LT_OK
                       : lt__err(LT_NOMEM, "out of memory writing a checkpoint");
    const char *mk[] = {"DCP_SHARDING_INFO", "DCP_VERSION", "format"}, *mv[] = {info, "1.0", "pt"};
    if (!st) st = write_file(ck, path, e, offs, tix, n, mk, mv, 3, buf);
    cJSON_free(info);
    lt__free(path);
    return st;
}

/* The HF target: every tensor whole in one file, and the index. */
static lt_status write_hf(const lt_ckpt *ck, const char *outdir, lt_st_entry *e,
                          int64_t (*offs)[LT_MAX_DIMS], int *tix, unsigned char *buf) {
    static const char fname[] = "model-00001-of-00001.safetensors";
    uint64_t total = 0;
    for (int i = 0; i < ck->nt; i++) {
        memset(&e[i], 0, sizeof e[i]);
        memset(offs[i], 0, sizeof offs[i]);
        e[i].name = ck->t[i].name, e[i].dtype = ck->t[i].dtype, e[i].ndim = ck->t[i].ndim;
        memcpy(e[i].shape, ck->t[i].shape, sizeof e[i].shape);
        tix[i] = i;
        total += lt__ck_tensor_bytes(&ck->t[i]);
    }
    char *path = join(outdir, fname), *ipath = join(outdir, LT_CK_INDEX);
    const char *mk[] = {"format"}, *mv[] = {"pt"};
    lt_status st = path && ipath ? write_file(ck, path, e, offs, tix, ck->nt, mk, mv, 1, buf)
                                 : lt__err(LT_NOMEM, "out of memory writing a checkpoint");
    FILE *f = st ? NULL : fopen(ipath, "w");
    if (!st && !f) st = lt__err(LT_IO, "%s: cannot create: %s", LT_CK_INDEX, strerror(errno));
    if (f) {
        fprintf(f, "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n  \"weight_map\": {",
                (unsigned long long)total);
        for (int i = 0; i < ck->nt; i++) {
            lt__json_begin();
            cJSON *js = cJSON_CreateStringReference(ck->t[i].name);
            char *q = js ? cJSON_PrintUnformatted(js) : NULL;
            cJSON_Delete(js);
            fprintf(f, "%s\n    %s: \"%s\"", i ? "," : "", q ? q : "\"\"", fname);
            if (!q) st = lt__err(LT_NOMEM, "out of memory writing %s", LT_CK_INDEX);
            cJSON_free(q);
        }
        fprintf(f, "\n  }\n}\n");
        if ((ferror(f) | fclose(f)) && !st) st = lt__err(LT_IO, "%s: cannot write", LT_CK_INDEX);
    }
    lt__free(path), lt__free(ipath);
    return st;
}

lt_status lt__ck_write_target(const lt_ckpt *ck, const lt_mesh *m, const lt_placement *pl,
                              const char *outdir, lt_ck_format fmt) {
    LT_TRY(lt__ck_prepare_dir(outdir));
    size_t n = (size_t)ck->nt + 1;
    lt_st_entry *e = lt__calloc(n, sizeof *e);
    int64_t(*offs)[LT_MAX_DIMS] = lt__calloc(n, sizeof *offs);
    int *tix = lt__calloc(n, sizeof *tix);
    unsigned char *buf = lt__malloc(LT_CK_BUF); /* (LT_CK_BUF) bytes in flight */
    lt_status st =
        e && offs && tix && buf ? LT_OK : lt__err(LT_NOMEM, "out of memory writing a checkpoint");
    if (!st && fmt == LT_CK_HF) st = write_hf(ck, outdir, e, offs, tix, buf);
    for (int r = 0; !st && fmt == LT_CK_DCP && r < m->world; r++)
        st = write_rank(ck, m, pl, r, outdir, e, offs, tix, buf);
    lt__free(e), lt__free(offs), lt__free(tix), lt__free(buf);
    return st;
}

/* Every piece of dst against the source's elements at the same indices. */
lt_status lt__ck_compare(const lt_ckpt *src, const lt_ckpt *dst, uint64_t *compared) {
    if (src->nt != dst->nt)
        return lt__err(LT_MISMATCH, "the written checkpoint holds %d tensors, the source %d",
                       dst->nt, src->nt);
    unsigned char *buf = lt__malloc(LT_CK_BUF),
                  *buf2 = lt__malloc(LT_CK_BUF); /* (LT_CK_BUF) each */
    lt_status st = buf && buf2 ? LT_OK : lt__err(LT_NOMEM, "out of memory comparing checkpoints");
    for (int i = 0; i < src->nt && !st; i++) {
        const lt_ck_tensor *s = &src->t[i], *d = &dst->t[i];
        if (strcmp(s->name, d->name) || s->dtype != d->dtype || s->ndim != d->ndim ||
            memcmp(s->shape, d->shape, sizeof s->shape)) {
            st = lt__err(LT_MISMATCH,
                         "written tensor '%s' differs from the source's '%s' in name, dtype "
                         "or shape",
                         d->name, s->name);
            break;
        }
        for (int k = 0; k < d->n && !st; k++) {
            const lt_st_entry *de = lt__ck_entry(dst, &d->p[k]);
            uint64_t diff = 0;
            st = lt__ck_move_piece(src, s, d->p[k].off, de->shape, NULL, dst->files[d->p[k].file],
                                   de, buf, buf2, &diff);
            if (!st && diff)
                st = lt__err(LT_MISMATCH,
                             "tensor '%s': %s differs from the source at byte %llu of its "
                             "piece",
                             s->name, dst->fname[d->p[k].file], (unsigned long long)(diff - 1));
            *compared += (uint64_t)lt__numel_sat(d->ndim, de->shape);
        }
    }
    lt__free(buf), lt__free(buf2);
    return st;
}
