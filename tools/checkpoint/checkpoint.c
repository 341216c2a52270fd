/* tools/checkpoint/checkpoint.c — opening a checkpoint directory: its files,
 * its index, its tensors' pieces (why, and the two formats:
 * tools/checkpoint/checkpoint.h). Coverage checks: ck_verify.c. */
#include "tools/checkpoint/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/render/json_alloc.h"

#define ECHO(s, b) lt__echo((s), 60, (b), sizeof(b))

void lt__ck_problem(lt_ckpt *ck, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ck->nprob == ck->capprob) {
        int cap = ck->capprob ? 2 * ck->capprob : 16;
        char **p = lt__realloc(ck->prob, sizeof *p * (size_t)cap);
        if (!p) {
            ck->nomem = 1;
            return;
        }
        ck->prob = p, ck->capprob = cap;
    }
    if (!(ck->prob[ck->nprob] = lt__strdup(msg)))
        ck->nomem = 1;
    else
        ck->nprob++;
}

const lt_st_entry *lt__ck_entry(const lt_ckpt *ck, const lt_ck_piece *p) {
    return &ck->files[p->file]->e[p->entry];
}

char *lt__ck_box(int nd, const int64_t *off, const int64_t *len, char *buf, size_t cap) {
    lt__sbuf b = {buf, cap, 0};
    lt__sb_printf(&b, "[");
    for (int d = 0; d < nd; d++)
        lt__sb_printf(&b, "%s%lld:%lld", d ? ", " : "", (long long)off[d],
                      (long long)(off[d] + len[d]));
    lt__sb_printf(&b, "]");
    lt__sb_finish(&b);
    return buf;
}

uint64_t lt__ck_tensor_bytes(const lt_ck_tensor *t) {
    return (uint64_t)lt__numel_sat(t->ndim, t->shape) * lt_dtype_size(t->dtype);
}

void lt__ck_close(lt_ckpt *ck) {
    if (!ck) return;
    for (int i = 0; i < ck->nfiles; i++) {
        lt__free(ck->fname[i]);
        if (ck->files) lt__st_close(ck->files[i]);
    }
    lt__free(ck->fname), lt__free(ck->files), lt__free(ck->frank);
    for (int i = 0; i < ck->nt; i++) lt__free(ck->t[i].name), lt__free(ck->t[i].p);
    lt__free(ck->t);
    for (int i = 0; i < ck->nprob; i++) lt__free(ck->prob[i]);
    lt__free(ck->prob), lt__free(ck->dir);
    lt__free(ck);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

/* dir/name into a new string (caller frees), NULL when out of memory. */
static char *join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    while (a > 1 && dir[a - 1] == '/') a--; /* "dir/" names dir */
    char *p = lt__malloc(a + b + 2);
    if (p) memcpy(p, dir, a), p[a] = '/', memcpy(p + a + 1, name, b + 1);
    return p;
}

/* The sorted *.safetensors names of dir into ck->fname; has_index. */
static lt_status list_dir(lt_ckpt *ck) {
    char e[128];
    DIR *d = opendir(ck->dir);
    if (!d)
        return lt__err(LT_IO, "%s: cannot read the directory: %s", ECHO(ck->dir, e),
                       strerror(errno));
    int cap = 0;
    lt_status st = LT_OK;
    struct dirent *de;
    while (!st && (de = readdir(d))) {
        if (!strcmp(de->d_name, LT_CK_INDEX)) ck->has_index = 1;
        if (!ends_with(de->d_name, ".safetensors")) continue;
        if (ck->nfiles == cap) {
            cap = cap ? 2 * cap : 16;
            char **p = lt__realloc(ck->fname, sizeof *p * (size_t)cap);
            if (!p) {
                st = lt__err(LT_NOMEM, "out of memory listing %s", ECHO(ck->dir, e));
                break;
            }
            ck->fname = p;
        }
        if (!(ck->fname[ck->nfiles] = lt__strdup(de->d_name)))
            st = lt__err(LT_NOMEM, "out of memory listing %s", ECHO(ck->dir, e));
        else
            ck->nfiles++;
    }
    closedir(d);
    if (st) return st;
    if (!ck->nfiles)
        return lt__err(LT_INVALID, "%s: no .safetensors file in this directory", ECHO(ck->dir, e));
    qsort(ck->fname, (size_t)ck->nfiles, sizeof *ck->fname, cmp_str);
    return LT_OK;
}

/* The tensor named name (created when new). NULL when out of memory. */
static lt_ck_tensor *tensor_of(lt_ckpt *ck, const char *name, int *cap) {
    for (int i = 0; i < ck->nt; i++)
        if (!strcmp(ck->t[i].name, name)) return &ck->t[i];
    if (ck->nt == *cap) {
        int c = *cap ? 2 * *cap : 16;
        lt_ck_tensor *p = lt__realloc(ck->t, sizeof *p * (size_t)c);
        if (!p) return NULL;
        ck->t = p, *cap = c;
    }
    lt_ck_tensor *t = &ck->t[ck->nt];
    memset(t, 0, sizeof *t);
    if (!(t->name = lt__strdup(name))) return NULL;
    ck->nt++;
    return t;
}

static lt_status add_piece(lt_ck_tensor *t, int file, int entry, const int64_t *off, int nd) {
    if (t->n == t->cap) {
        int c = t->cap ? 2 * t->cap : 4;
        lt_ck_piece *p = lt__realloc(t->p, sizeof *p * (size_t)c);
        if (!p) return lt__err(LT_NOMEM, "out of memory reading a checkpoint");
        t->p = p, t->cap = c;
    }
    lt_ck_piece *p = &t->p[t->n++];
    memset(p, 0, sizeof *p);
    p->file = file, p->entry = entry;
    for (int d = 0; d < nd; d++) p->off[d] = off[d];
    return LT_OK;
}

/* The saved_offsets of every entry of DCP file i (its DCP_SHARDING_INFO). */
static lt_status dcp_pieces(lt_ckpt *ck, int i, int *tcap) {
    const lt_st_file *f = ck->files[i];
    const char *info = lt__st_meta(f, "DCP_SHARDING_INFO");
    char fe[128], ne[128];
    ECHO(ck->fname[i], fe);
    lt__json_begin();
    cJSON *root = info ? cJSON_ParseWithLengthOpts(info, strlen(info), NULL, 0) : NULL;
    if (!root && lt__json_failed()) return lt__err(LT_NOMEM, "out of memory reading %s", fe);
    if (!cJSON_IsObject(root)) {
        lt__ck_problem(ck, "%s: __metadata__.DCP_SHARDING_INFO is missing or not a JSON object",
                       fe);
        cJSON_Delete(root);
        return LT_OK;
    }
    lt_status st = LT_OK;
    for (int k = 0; k < f->n && !st; k++) {
        const lt_st_entry *e = &f->e[k];
        const cJSON *so = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(root, e->name), "saved_offsets");
        int64_t off[LT_MAX_DIMS] = {0};
        int ok = cJSON_IsArray(so) && cJSON_GetArraySize(so) == e->ndim;
        for (int d = 0; ok && d < e->ndim; d++) {
            const cJSON *v = cJSON_GetArrayItem(so, d);
            ok = cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 4e15 &&
                 (double)(int64_t)v->valuedouble == v->valuedouble;
            if (ok) off[d] = (int64_t)v->valuedouble;
        }
        if (!ok) {
            lt__ck_problem(ck,
                           "%s: tensor '%s' has no valid saved_offsets (%d whole numbers >= 0) "
                           "in DCP_SHARDING_INFO",
                           fe, ECHO(e->name, ne), e->ndim);
            continue;
        }
        lt_ck_tensor *t = tensor_of(ck, e->name, tcap);
        st = t ? add_piece(t, i, k, off, e->ndim)
               : lt__err(LT_NOMEM, "out of memory reading %s", fe);
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, root) if (!st && it->string && lt__st_find(f, it->string) < 0)
        lt__ck_problem(ck, "%s: DCP_SHARDING_INFO names tensor '%s', which the file does not hold",
                       fe, ECHO(it->string, ne));
    cJSON_Delete(root);
    return st;
}

/* The rank a DCP file name says: shard-RRRRR-... is rank RRRRR - 1. */
static int rank_of_name(const char *s) {
    if (strncmp(s, "shard-", 6)) return -1;
    char *end;
    long v = strtol(s + 6, &end, 10);
    return end != s + 6 && *end == '-' && v >= 1 && v <= 1 << 20 ? (int)(v - 1) : -1;
}

static lt_status read_files(lt_ckpt *ck) {
    ck->files = lt__calloc((size_t)ck->nfiles, sizeof *ck->files);
    ck->frank = lt__calloc((size_t)ck->nfiles, sizeof *ck->frank);
    if (!ck->files || !ck->frank) return lt__err(LT_NOMEM, "out of memory reading a checkpoint");
    int dcp = 0;
    for (int i = 0; i < ck->nfiles; i++) {
        char *path = join(ck->dir, ck->fname[i]);
        if (!path) return lt__err(LT_NOMEM, "out of memory reading a checkpoint");
        lt_status st = lt__st_open(path, &ck->files[i]);
        lt__free(path);
        if (st == LT_NOMEM) return st;
        if (st)
            lt__ck_problem(ck, "%s", lt_errmsg());
        else if (lt__st_meta(ck->files[i], "DCP_SHARDING_INFO"))
            dcp = 1;
        ck->frank[i] = rank_of_name(ck->fname[i]);
        if (ck->frank[i] >= ck->world_hint) ck->world_hint = ck->frank[i] + 1;
    }
    ck->format = dcp ? LT_CK_DCP : LT_CK_HF;
    if (!dcp) ck->world_hint = 0;
    int tcap = 0;
    for (int i = 0; i < ck->nfiles; i++) {
        if (!ck->files[i]) continue;
        if (dcp) {
            LT_TRY(dcp_pieces(ck, i, &tcap));
            continue;
        }
        static const int64_t zero[LT_MAX_DIMS];
        for (int k = 0; k < ck->files[i]->n; k++) {
            lt_ck_tensor *t = tensor_of(ck, ck->files[i]->e[k].name, &tcap);
            if (!t) return lt__err(LT_NOMEM, "out of memory reading a checkpoint");
            LT_TRY(add_piece(t, i, k, zero, ck->files[i]->e[k].ndim));
        }
    }
    return LT_OK;
}

/* The index file's checks against the files (ck_index.c). */
lt_status lt__ck_check_index(lt_ckpt *ck);
/* Every tensor's dtype, rank and global shape from its pieces (ck_verify.c). */
void lt__ck_shapes(lt_ckpt *ck);

static int cmp_tensor(const void *a, const void *b) {
    return strcmp(((const lt_ck_tensor *)a)->name, ((const lt_ck_tensor *)b)->name);
}

lt_status lt__ck_open(const char *dir, lt_ckpt **out) {
    *out = NULL;
    lt_ckpt *ck = lt__calloc(1, sizeof *ck);
    if (!ck || !(ck->dir = lt__strdup(dir))) {
        lt__free(ck);
        return lt__err(LT_NOMEM, "out of memory opening a checkpoint");
    }
    lt_status st = list_dir(ck);
    if (!st) st = read_files(ck);
    if (!st && ck->has_index && ck->format == LT_CK_HF) st = lt__ck_check_index(ck);
    if (!st && ck->nomem) st = lt__err(LT_NOMEM, "out of memory listing a checkpoint's problems");
    if (st) {
        lt__ck_close(ck);
        return st;
    }
    if (ck->nt > 1) qsort(ck->t, (size_t)ck->nt, sizeof *ck->t, cmp_tensor);
    lt__ck_shapes(ck);
    *out = ck;
    return LT_OK;
}
