/* tools/checkpoint/safetensors.c — the safetensors reader and writer (why and
 * the invariant a parsed file keeps: tools/checkpoint/safetensors.h). */
#include "tools/checkpoint/safetensors.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "tools/render/json_alloc.h"

static const char *const st_dtype_names[] = {
#define LT__XX(e, s, sz, fl) #e,
    LT_DTYPE_MAP(LT__XX)
#undef LT__XX
};
#define ST_NDTYPES ((int)(sizeof st_dtype_names / sizeof *st_dtype_names))

const char *lt__st_dtype_name(lt_dtype dt) {
    return lt__name_of(st_dtype_names, ST_NDTYPES, (int)dt);
}

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* A JSON number that is a whole number in [0, 2^53]: into *out, 0; else -1. */
static int json_u53(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return -1;
    double v = j->valuedouble;
    if (!(v >= 0) || v > 9007199254740992.0 || floor(v) != v) return -1;
    *out = (uint64_t)v;
    return 0;
}

/* Fills e from the header's entry j (named name). LT_INVALID naming what is wrong. */
static lt_status parse_entry(const cJSON *j, const char *what, uint64_t data_size, lt_st_entry *e) {
    char en[96];
    lt__echo(j->string, 40, en, sizeof en);
    if (!cJSON_IsObject(j))
        return lt__err(LT_INVALID, "%s: tensor '%s' is not a JSON object", what, en);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off))
        return lt__err(LT_INVALID,
                       "%s: tensor '%s' needs dtype (a string), shape and data_offsets (arrays)",
                       what, en);
    int k = lt__name_find(st_dtype_names, ST_NDTYPES, dt->valuestring);
    if (k < 0) {
        char d[96], names[160];
        return lt__err(LT_INVALID, "%s: tensor '%s': dtype '%s' is not one of %s", what, en,
                       lt__echo(dt->valuestring, 20, d, sizeof d),
                       lt__name_join(st_dtype_names, ST_NDTYPES, names, sizeof names));
    }
    e->dtype = (lt_dtype)k;
    int nd = cJSON_GetArraySize(sh);
    if (nd > LT_MAX_DIMS)
        return lt__err(LT_INVALID, "%s: tensor '%s' has %d dims, more than %d", what, en, nd,
                       LT_MAX_DIMS);
    e->ndim = nd;
    int64_t numel = 1;
    for (int d = 0; d < nd; d++) {
        uint64_t s;
        if (json_u53(cJSON_GetArrayItem(sh, d), &s))
            return lt__err(LT_INVALID,
                           "%s: tensor '%s': shape[%d] is not a size (a whole number >= 0)", what,
                           en, d);
        e->shape[d] = (int64_t)s;
        if (numel && lt__mul_i64(numel, (int64_t)s, &numel))
            return lt__err(LT_OVERFLOW, "%s: tensor '%s': its shape's element count overflows",
                           what, en);
        if (!s) numel = 0;
    }
    uint64_t b, en2;
    if (cJSON_GetArraySize(off) != 2 || json_u53(cJSON_GetArrayItem(off, 0), &b) ||
        json_u53(cJSON_GetArrayItem(off, 1), &en2) || b > en2)
        return lt__err(LT_INVALID,
                       "%s: tensor '%s': data_offsets must be [begin, end], begin <= end", what,
                       en);
    if (en2 > data_size)
        return lt__err(LT_INVALID,
                       "%s: tensor '%s': data_offsets [%llu, %llu] point past the end of the file "
                       "(its data section holds %llu bytes)",
                       what, en, (unsigned long long)b, (unsigned long long)en2,
                       (unsigned long long)data_size);
    int64_t bytes;
    if (lt__mul_i64(numel, (int64_t)lt_dtype_size(e->dtype), &bytes))
        return lt__err(LT_OVERFLOW, "%s: tensor '%s': its byte count overflows", what, en);
    if ((uint64_t)bytes != en2 - b)
        return lt__err(
            LT_INVALID,
            "%s: tensor '%s': shape and dtype need %lld bytes but data_offsets [%llu, %llu] "
            "span %llu",
            what, en, (long long)bytes, (unsigned long long)b, (unsigned long long)en2,
            (unsigned long long)(en2 - b));
    e->begin = b;
    e->end = en2;
    return LT_OK;
}

/* __metadata__: an object of strings, copied into f. */
static lt_status parse_meta(const cJSON *m, const char *what, lt_st_file *f) {
    if (!cJSON_IsObject(m))
        return lt__err(LT_INVALID, "%s: __metadata__ is not a JSON object", what);
    int n = cJSON_GetArraySize(m);
    f->meta_keys = lt__calloc((size_t)n + 1, sizeof *f->meta_keys);
    f->meta_vals = lt__calloc((size_t)n + 1, sizeof *f->meta_vals);
    if (!f->meta_keys || !f->meta_vals) return lt__err(LT_NOMEM, "out of memory reading %s", what);
    const cJSON *it;
    cJSON_ArrayForEach(it, m) {
        if (!cJSON_IsString(it))
            return lt__err(LT_INVALID, "%s: __metadata__ values must be strings", what);
        f->meta_keys[f->nmeta] = lt__strdup(it->string);
        f->meta_vals[f->nmeta] = lt__strdup(it->valuestring);
        if (!f->meta_keys[f->nmeta++] || !f->meta_vals[f->nmeta - 1])
            return lt__err(LT_NOMEM, "out of memory reading %s", what);
    }
    return LT_OK;
}

static int cmp_begin(const void *a, const void *b) {
    const lt_st_entry *x = *(lt_st_entry *const *)a, *y = *(lt_st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}
static int cmp_name(const void *a, const void *b) {
    return strcmp((*(lt_st_entry *const *)a)->name, (*(lt_st_entry *const *)b)->name);
}

/* No two entries share bytes or a name (the sorted order finds both). */
static lt_status check_disjoint(lt_st_file *f, const char *what) {
    if (f->n < 2) return LT_OK;
    lt_st_entry **p = lt__malloc(sizeof *p * (size_t)f->n);
    if (!p) return lt__err(LT_NOMEM, "out of memory reading %s", what);
    for (int i = 0; i < f->n; i++) p[i] = &f->e[i];
    lt_status st = LT_OK;
    char a[96], b[96];
    qsort(p, (size_t)f->n, sizeof *p, cmp_name);
    for (int i = 1; i < f->n && !st; i++)
        if (!strcmp(p[i - 1]->name, p[i]->name))
            st = lt__err(LT_INVALID, "%s: tensor '%s' appears twice in the header", what,
                         lt__echo(p[i]->name, 40, a, sizeof a));
    qsort(p, (size_t)f->n, sizeof *p, cmp_begin);
    for (int i = 1; i < f->n && !st; i++)
        if (p[i]->begin < p[i - 1]->end && p[i]->begin < p[i]->end)
            st = lt__err(LT_INVALID, "%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] overlap",
                         what, lt__echo(p[i - 1]->name, 40, a, sizeof a),
                         (unsigned long long)p[i - 1]->begin, (unsigned long long)p[i - 1]->end,
                         lt__echo(p[i]->name, 40, b, sizeof b), (unsigned long long)p[i]->begin,
                         (unsigned long long)p[i]->end);
    lt__free(p);
    return st;
}

/* Parses the JSON header text h[n] into f's entries. */
static lt_status parse_header(const char *h, size_t n, const char *what, lt_st_file *f) {
    lt__json_begin();
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(h, n, &end, 0);
    if (!root) {
        if (lt__json_failed())
            return lt__err(LT_NOMEM, "out of memory parsing the header of %s", what);
        return lt__err(LT_INVALID, "%s: the header is not valid JSON (near byte %lld of it)", what,
                       (long long)(end ? end - h : 0));
    }
    lt_status st = LT_OK;
    if (!cJSON_IsObject(root))
        st = lt__err(LT_INVALID, "%s: the header is not a JSON object", what);
    int cap = st ? 0 : cJSON_GetArraySize(root);
    if (!st && !(f->e = lt__calloc((size_t)cap + 1, sizeof *f->e)))
        st = lt__err(LT_NOMEM, "out of memory reading %s", what);
    const cJSON *it;
    uint64_t data_size = f->size - f->data_start;
    for (it = st ? NULL : root->child; it && !st; it = it->next) {
        if (!it->string)
            st = lt__err(LT_INVALID, "%s: a header entry has no name", what);
        else if (!strcmp(it->string, "__metadata__"))
            st = f->meta_keys ? lt__err(LT_INVALID, "%s: __metadata__ appears twice", what)
                              : parse_meta(it, what, f);
        else if (!(st = parse_entry(it, what, data_size, &f->e[f->n]))) {
            if (!(f->e[f->n].name = lt__strdup(it->string)))
                st = lt__err(LT_NOMEM, "out of memory reading %s", what);
            f->n++;
        }
    }
    cJSON_Delete(root);
    return st ? st : check_disjoint(f, what);
}

void lt__st_close(lt_st_file *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) lt__free(f->e[i].name);
    lt__free(f->e);
    for (int i = 0; i < f->nmeta; i++) {
        lt__free(f->meta_keys[i]);
        lt__free(f->meta_vals[i]);
    }
    lt__free(f->meta_keys);
    lt__free(f->meta_vals);
    if (f->fd >= 0) {
        if (f->map) munmap((void *)f->map, (size_t)f->map_len);
        close(f->fd);
    }
    lt__free(f->path);
    lt__free(f);
}

/* The checks of the first 8 bytes and the header, on the mapped image. */
static lt_status parse_image(lt_st_file *f, const char *what) {
    if (f->size < 8)
        return lt__err(LT_INVALID,
                       "%s: truncated: %llu bytes, fewer than the 8 of the header length", what,
                       (unsigned long long)f->size);
    uint64_t n = le64(f->map);
    if (n > f->size - 8)
        return lt__err(LT_INVALID,
                       "%s: header length %llu runs past the end of the file (%llu bytes): "
                       "truncated or not a safetensors file",
                       what, (unsigned long long)n, (unsigned long long)f->size);
    if (n > LT_ST_MAX_HEADER)
        return lt__err(LT_INVALID, "%s: header length %llu is more than the %llu bytes allowed",
                       what, (unsigned long long)n, (unsigned long long)LT_ST_MAX_HEADER);
    f->data_start = 8 + n;
    return parse_header((const char *)f->map + 8, (size_t)n, what, f);
}

lt_status lt__st_parse_mem(const unsigned char *buf, size_t len, const char *what,
                           lt_st_file **out) {
    *out = NULL;
    lt_st_file *f = lt__calloc(1, sizeof *f);
    if (!f) return lt__err(LT_NOMEM, "out of memory reading %s", what);
    f->fd = -1;
    f->map = buf;
    f->size = f->map_len = len;
    lt_status st = parse_image(f, what);
    if (st) return lt__st_close(f), st;
    *out = f;
    return LT_OK;
}

lt_status lt__st_open(const char *path, lt_st_file **out) {
    *out = NULL;
    char p[96];
    lt__echo(path, 80, p, sizeof p);
    lt_st_file *f = lt__calloc(1, sizeof *f);
    if (!f || !(f->path = lt__strdup(path))) {
        lt__free(f);
        return lt__err(LT_NOMEM, "out of memory opening %s", p);
    }
    f->fd = open(path, O_RDONLY);
    struct stat sb;
    if (f->fd < 0 || fstat(f->fd, &sb) || !S_ISREG(sb.st_mode)) {
        int e = f->fd < 0 ? errno : 0;
        lt__st_close(f);
        return lt__err(LT_IO, "%s: cannot open: %s", p, e ? strerror(e) : "not a regular file");
    }
    f->size = (uint64_t)sb.st_size;
    /* only the length and the header are mapped: data is read with pread,
     * so neither address space nor resident memory grows with the file */
    unsigned char len8[8];
    uint64_t want = f->size;
    if (f->size >= 8 && pread(f->fd, len8, 8, 0) == 8) {
        uint64_t n = le64(len8);
        want = 8 + (n < LT_ST_MAX_HEADER ? n : LT_ST_MAX_HEADER);
        if (want > f->size) want = f->size;
    }
    f->map_len = want;
    if (f->map_len) {
        void *m = mmap(NULL, (size_t)f->map_len, PROT_READ, MAP_PRIVATE, f->fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            lt__st_close(f);
            return lt__err(LT_IO, "%s: cannot map: %s", p, strerror(e));
        }
        f->map = m;
    }
    lt_status st = parse_image(f, p);
    if (st) return lt__st_close(f), st;
    *out = f;
    return LT_OK;
}

const char *lt__st_meta(const lt_st_file *f, const char *key) {
    for (int i = 0; i < f->nmeta; i++)
        if (!strcmp(f->meta_keys[i], key)) return f->meta_vals[i];
    return NULL;
}

int lt__st_find(const lt_st_file *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->e[i].name, name)) return i;
    return -1;
}

lt_status lt__st_read(const lt_st_file *f, const lt_st_entry *e, uint64_t at, void *buf, size_t n) {
    char p[96];
    if (f->fd < 0) return lt__err(LT_INVALID, "a file parsed from memory has no data to read");
    if (at > e->end - e->begin || n > e->end - e->begin - at)
        return lt__err(LT_INVALID, "%s: read past tensor '%s'", lt__echo(f->path, 80, p, sizeof p),
                       e->name);
    uint64_t pos = f->data_start + e->begin + at;
    unsigned char *b = buf;
    while (n) {
        ssize_t r = pread(f->fd, b, n, (off_t)pos);
        if (r <= 0)
            return lt__err(LT_IO, "%s: cannot read %zu bytes at %llu: %s",
                           lt__echo(f->path, 80, p, sizeof p), n, (unsigned long long)pos,
                           r ? strerror(errno) : "the file is shorter now");
        b += r, n -= (size_t)r, pos += (uint64_t)r;
    }
    return LT_OK;
}

/* ---- writing ---- */

/* The header JSON text for e[n] (offsets assigned in order) into *out
 * (caller frees with lt__free), padded with spaces to a multiple of 8. */
static lt_status header_text(lt_st_entry *e, int n, const char *const *mk, const char *const *mv,
                             int nmeta, char **out, size_t *len) {
    lt__json_begin();
    cJSON *root = cJSON_CreateObject();
    if (nmeta) {
        cJSON *m = cJSON_CreateObject();
        for (int i = 0; i < nmeta; i++) lt__json_put(m, mk[i], cJSON_CreateString(mv[i]));
        lt__json_put(root, "__metadata__", m);
    }
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        int64_t numel = 1, bytes;
        for (int d = 0; d < e[i].ndim; d++)
            if (lt__mul_i64(numel, e[i].shape[d], &numel)) numel = -1;
        if (numel < 0 || lt__mul_i64(numel, (int64_t)lt_dtype_size(e[i].dtype), &bytes) ||
            at + (uint64_t)bytes < at) {
            cJSON_Delete(root);
            return lt__err(LT_OVERFLOW, "tensor '%s': its byte count overflows", e[i].name);
        }
        e[i].begin = at;
        e[i].end = at += (uint64_t)bytes;
        cJSON *t = cJSON_CreateObject(), *sh = cJSON_CreateArray(), *of = cJSON_CreateArray();
        lt__json_put(t, "dtype", cJSON_CreateString(lt__st_dtype_name(e[i].dtype)));
        for (int d = 0; d < e[i].ndim; d++)
            lt__json_push(sh, cJSON_CreateNumber((double)e[i].shape[d]));
        lt__json_push(of, cJSON_CreateNumber((double)e[i].begin));
        lt__json_push(of, cJSON_CreateNumber((double)e[i].end));
        lt__json_put(t, "shape", sh);
        lt__json_put(t, "data_offsets", of);
        lt__json_put(root, e[i].name, t); /* the key outlives root */
    }
    char *s = lt__json_failed() ? NULL : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!s) return lt__err(LT_NOMEM, "out of memory writing a safetensors header");
    size_t l = strlen(s), pad = (8 - l % 8) % 8;
    char *p = lt__malloc(l + pad + 1);
    if (!p) {
        cJSON_free(s);
        return lt__err(LT_NOMEM, "out of memory writing a safetensors header");
    }
    memcpy(p, s, l);
    memset(p + l, ' ', pad);
    p[l + pad] = 0;
    cJSON_free(s);
    *out = p;
    *len = l + pad;
    return LT_OK;
}

static lt_status write_all(int fd, const void *buf, size_t n, uint64_t pos, const char *path) {
    const unsigned char *b = buf;
    while (n) {
        ssize_t r = pwrite(fd, b, n, (off_t)pos);
        if (r <= 0) {
            char p[96];
            return lt__err(LT_IO, "%s: cannot write: %s", lt__echo(path, 80, p, sizeof p),
                           r ? strerror(errno) : "no progress");
        }
        b += r, n -= (size_t)r, pos += (uint64_t)r;
    }
    return LT_OK;
}

lt_status lt__st_create(const char *path, lt_st_entry *e, int n, const char *const *meta_keys,
                        const char *const *meta_vals, int nmeta, lt_st_writer **out) {
    *out = NULL;
    char *h = NULL, p[96];
    size_t hl = 0;
    LT_TRY(header_text(e, n, meta_keys, meta_vals, nmeta, &h, &hl));
    lt_st_writer *w = lt__calloc(1, sizeof *w);
    if (!w || !(w->path = lt__strdup(path))) {
        lt__free(w), lt__free(h);
        return lt__err(LT_NOMEM, "out of memory writing %s", lt__echo(path, 80, p, sizeof p));
    }
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (w->fd < 0) {
        int er = errno;
        lt__free(h), lt__free(w->path), lt__free(w);
        return lt__err(LT_IO, "%s: cannot create: %s", lt__echo(path, 80, p, sizeof p),
                       strerror(er));
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    w->data_start = 8 + hl;
    uint64_t total = w->data_start + (n ? e[n - 1].end : 0);
    lt_status st = write_all(w->fd, len8, 8, 0, path);
    if (!st) st = write_all(w->fd, h, hl, 8, path);
    if (!st && ftruncate(w->fd, (off_t)total))
        st =
            lt__err(LT_IO, "%s: cannot size: %s", lt__echo(path, 80, p, sizeof p), strerror(errno));
    lt__free(h);
    if (st) {
        close(w->fd), lt__free(w->path), lt__free(w);
        return st;
    }
    *out = w;
    return LT_OK;
}

lt_status lt__st_write_at(lt_st_writer *w, const lt_st_entry *e, uint64_t at, const void *buf,
                          size_t n) {
    LT_ASSERT(at <= e->end - e->begin && n <= e->end - e->begin - at);
    return write_all(w->fd, buf, n, w->data_start + e->begin + at, w->path);
}

lt_status lt__st_writer_close(lt_st_writer *w) {
    if (!w) return LT_OK;
    lt_status st = LT_OK;
    char p[96];
    if (close(w->fd))
        st = lt__err(LT_IO, "%s: cannot close: %s", lt__echo(w->path, 80, p, sizeof p),
                     strerror(errno));
    lt__free(w->path);
    lt__free(w);
    return st;
}
