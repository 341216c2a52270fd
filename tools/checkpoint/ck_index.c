/* tools/checkpoint/ck_index.c — model.safetensors.index.json against the
 * files it indexes.
 *
 * Why it exists: loaders use the index to pick files, so an index that
 * disagrees with the files silently changes what loads: an entry whose file
 * is missing, a tensor in a file that the index does not name (stale weights
 * a loader reading every file picks up), an entry naming the wrong file,
 * or a total_size that is not the bytes of the indexed tensors.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/checkpoint/checkpoint.h"
#include "tools/render/json_alloc.h"

#define MAX_INDEX_BYTES ((long)64 << 20)

/* The index text of ck->dir into *out (caller frees), NULL with a problem
 * recorded when it cannot be read. */
static lt_status read_index(lt_ckpt *ck, char **out, size_t *len) {
    *out = NULL;
    size_t a = strlen(ck->dir);
    char *path = lt__malloc(a + sizeof LT_CK_INDEX + 1);
    if (!path) return lt__err(LT_NOMEM, "out of memory reading %s", LT_CK_INDEX);
    memcpy(path, ck->dir, a), path[a] = '/', memcpy(path + a + 1, LT_CK_INDEX, sizeof LT_CK_INDEX);
    FILE *f = fopen(path, "rb");
    lt__free(path);
    long n = -1;
    if (f && !fseek(f, 0, SEEK_END)) n = ftell(f);
    if (!f || n < 0 || n > MAX_INDEX_BYTES || fseek(f, 0, SEEK_SET)) {
        lt__ck_problem(ck, "%s: cannot read it%s", LT_CK_INDEX,
                       n > MAX_INDEX_BYTES ? " (over 64 MiB)" : "");
        if (f) fclose(f);
        return LT_OK;
    }
    char *buf = lt__malloc((size_t)n + 1);
    if (!buf) {
        fclose(f);
        return lt__err(LT_NOMEM, "out of memory reading %s", LT_CK_INDEX);
    }
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    if (got != (size_t)n) {
        lt__free(buf);
        lt__ck_problem(ck, "%s: cannot read it", LT_CK_INDEX);
        return LT_OK;
    }
    *out = buf, *len = got;
    return LT_OK;
}

static int file_index(const lt_ckpt *ck, const char *name) {
    for (int i = 0; i < ck->nfiles; i++)
        if (!strcmp(ck->fname[i], name)) return i;
    return -1;
}

/* weight_map entries against the files: missing file, tensor not there. */
static void check_entries(lt_ckpt *ck, const cJSON *wm, uint64_t *sum) {
    const cJSON *it;
    char n[128], f[128];
    cJSON_ArrayForEach(it, wm) {
        lt__echo(it->string ? it->string : "", 60, n, sizeof n);
        if (!cJSON_IsString(it)) {
            lt__ck_problem(ck, "%s: weight_map entry '%s' is not a file name", LT_CK_INDEX, n);
            continue;
        }
        lt__echo(it->valuestring, 60, f, sizeof f);
        int i = file_index(ck, it->valuestring);
        if (i < 0) {
            lt__ck_problem(ck, "%s: index entry '%s' names file %s, which is missing", LT_CK_INDEX,
                           n, f);
            continue;
        }
        if (!ck->files[i]) continue;
        int k = lt__st_find(ck->files[i], it->string);
        if (k < 0) {
            lt__ck_problem(ck, "%s: index entry '%s' names file %s, which does not hold it",
                           LT_CK_INDEX, n, f);
            continue;
        }
        *sum += ck->files[i]->e[k].end - ck->files[i]->e[k].begin;
    }
}

/* Tensors of the files that the index does not name, or names elsewhere. */
static void check_files(lt_ckpt *ck, const cJSON *wm) {
    char n[128], f[128];
    for (int i = 0; i < ck->nfiles; i++) {
        if (!ck->files[i]) continue;
        for (int k = 0; k < ck->files[i]->n; k++) {
            const char *name = ck->files[i]->e[k].name;
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(wm, name);
            lt__echo(name, 60, n, sizeof n);
            if (!v)
                lt__ck_problem(
                    ck,
                    "%s: unindexed tensor '%s': %s's weight_map does not name it (a loader "
                    "that picks files by the index never reads it; one that reads every "
                    "file loads it)",
                    ck->fname[i], n, LT_CK_INDEX);
            else if (cJSON_IsString(v) && strcmp(v->valuestring, ck->fname[i]))
                lt__ck_problem(ck, "%s: tensor '%s' is here, but %s maps it to %s", ck->fname[i], n,
                               LT_CK_INDEX, lt__echo(v->valuestring, 60, f, sizeof f));
        }
    }
}

lt_status lt__ck_check_index(lt_ckpt *ck) {
    char *text = NULL;
    size_t len = 0;
    LT_TRY(read_index(ck, &text, &len));
    if (!text) return LT_OK;
    lt__json_begin();
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, NULL, 0);
    lt__free(text);
    if (!root && lt__json_failed())
        return lt__err(LT_NOMEM, "out of memory reading %s", LT_CK_INDEX);
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "metadata"), "total_size");
    if (!cJSON_IsObject(wm)) {
        lt__ck_problem(ck, "%s: not JSON with a weight_map object", LT_CK_INDEX);
        cJSON_Delete(root);
        return LT_OK;
    }
    uint64_t sum = 0;
    check_entries(ck, wm, &sum);
    check_files(ck, wm);
    if (cJSON_IsNumber(ts)) {
        ck->index_total = ts->valuedouble > 0 ? (uint64_t)ts->valuedouble : 0;
        if (ts->valuedouble != (double)sum)
            lt__ck_problem(
                ck,
                "%s: metadata.total_size is %.0f, but the indexed tensors found hold %llu "
                "bytes",
                LT_CK_INDEX, ts->valuedouble, (unsigned long long)sum);
    }
    cJSON_Delete(root);
    return LT_OK;
}
