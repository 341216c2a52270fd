/* kernels/split.c — the uneven split rules (docs/SEMANTICS.md §2 and §11.1). */
#include "localtensor/kernels/split.h"
#include "kernels/split_impl.h"
#include "kernels/status_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kernels/alloc.h"

static const char *const split_names[] = {
#define LT__XX(e, s) s,
    LT_SPLIT_MAP(LT__XX)
#undef LT__XX
};

lt_split_rule lt_split_chunk(void) {
    lt_split_rule r;
    memset(&r, 0, sizeof r);
    r.kind = LT_SPLIT_CHUNK;
    return r;
}

/* ---- interned explicit size lists ---------------------------------------------- */

/* Open addressing over immutable lists, never more than half full; entries
 * live until the process exits (still reachable: not a leak). */
typedef struct intern_entry {
    uint64_t hash;        /* 0: free */
    int n;
    int64_t *v;           /* (n) */
} intern_entry;

static pthread_mutex_t intern_mu = PTHREAD_MUTEX_INITIALIZER;
static intern_entry *intern_tab;
static size_t intern_cap, intern_n;
static const int64_t empty_list[1];

static uint64_t list_hash(const int64_t *v, int n) {
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)n;
    for (int j = 0; j < n; j++) {
        h ^= (uint64_t)v[j];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h | 1;
}

static const int64_t *intern_locked(const int64_t *v, int n) {
    uint64_t h = list_hash(v, n);
    size_t bytes = sizeof(int64_t) * (size_t)n;
    for (size_t i = intern_cap ? h & (intern_cap - 1) : 0; intern_cap;
         i = (i + 1) & (intern_cap - 1)) {
        intern_entry *e = &intern_tab[i];
        if (!e->hash) break;
        if (e->hash == h && e->n == n && !memcmp(e->v, v, bytes)) return e->v;
    }
    if (intern_n + 1 > intern_cap / 2) {
        size_t ncap = intern_cap ? intern_cap * 2 : 64;
        intern_entry *nt = lt__calloc(ncap, sizeof *nt);
        if (!nt) return NULL;
        for (size_t i = 0; i < intern_cap; i++) {
            if (!intern_tab[i].hash) continue;
            size_t j = intern_tab[i].hash & (ncap - 1);
            while (nt[j].hash) j = (j + 1) & (ncap - 1);
            nt[j] = intern_tab[i];
        }
        lt__free(intern_tab);
        intern_tab = nt, intern_cap = ncap;
    }
    int64_t *copy = lt__malloc(bytes);
    if (!copy) return NULL;
    memcpy(copy, v, bytes);
    size_t i = h & (intern_cap - 1);
    while (intern_tab[i].hash) i = (i + 1) & (intern_cap - 1);
    intern_tab[i] = (intern_entry){h, n, copy};
    intern_n++;
    return copy;
}

lt_status lt_split_explicit(const int64_t *sizes, int n, lt_split_rule *out) {
    if (n < 0 || n > LT_SPLIT_MAX_EXPLICIT)
        return lt__err(LT_INVALID, "explicit split: %d sizes; at most %d", n,
                       LT_SPLIT_MAX_EXPLICIT);
    if (!sizes && n > 0) return lt__err(LT_INVALID, "explicit split: sizes is NULL");
    const int64_t *v = empty_list;
    if (n > 0) {
        pthread_mutex_lock(&intern_mu);
        v = intern_locked(sizes, n);
        pthread_mutex_unlock(&intern_mu);
        if (!v)
            return lt__err(LT_NOMEM, "out of memory interning an explicit split of %d sizes", n);
    }
    memset(out, 0, sizeof *out);
    out->kind = LT_SPLIT_EXPLICIT;
    out->nsizes = n;
    out->sizes = v;
    return LT_OK;
}

void lt__split_intern_clear(void) {
    pthread_mutex_lock(&intern_mu);
    for (size_t i = 0; i < intern_cap; i++)
        if (intern_tab[i].hash) lt__free(intern_tab[i].v);
    lt__free(intern_tab);
    intern_tab = NULL;
    intern_cap = intern_n = 0;
    pthread_mutex_unlock(&intern_mu);
}

const char *lt_split_kind_name(lt_split_kind k) {
    return lt__name_of(split_names, LT_SPLIT_COUNT, (int)k);
}

/* The rules named by a word are those before EXPLICIT (sizes are a list). */
_Static_assert(LT_SPLIT_EXPLICIT == LT_SPLIT_COUNT - 1, "LT_SPLIT_MAP: explicit comes last");

lt_status lt_split_kind_parse(const char *s, lt_split_kind *out) {
    int i = s ? lt__name_find(split_names, LT_SPLIT_EXPLICIT, s) : -1;
    if (i >= 0) { *out = (lt_split_kind)i; return LT_OK; }
    char list[64];
    return lt__err(LT_INVALID, "unknown split rule '%s' (expected %s)", s ? s : "(null)",
                   lt__name_join(split_names, LT_SPLIT_EXPLICIT, list, sizeof list));
}

/* Piece j of the chunk rule (pieces of c = ceil(n/k)) starts at min(c*j, n)
 * and ends at min(start + c, n); written so that dims near INT64_MAX cannot
 * wrap (c*j > n exactly when c > n/j). */
static void chunk_piece(int64_t n, int64_t c, int j, int64_t *start, int64_t *end) {
    *start = j == 0 ? 0 : c > n / j ? n : c * j;
    *end = c < n - *start ? *start + c : n;
}

/* The size of every piece but the last under rule `last`: ceil(n/k) when the
 * other k-1 pieces leave the last one something, else floor(n/k). */
static int64_t last_piece_size(int64_t n, int k) {
    int64_t ceil = n / k + (n % k != 0), t;
    return !lt__mul_i64((int64_t)(k - 1), ceil, &t) && t < n ? ceil : n / k;
}

lt_status lt_split_sizes(const lt_split_rule *rule, int64_t n, int k, int64_t *sizes) {
    if (k < 1) return lt__err(LT_INVALID, "cannot split into %d pieces", k);
    if (n < 0) return lt__err(LT_INVALID, "cannot split a dim of negative size %lld", (long long)n);
    switch (rule->kind) {
    case LT_SPLIT_CHUNK: {
        int64_t c = n / k + (n % k != 0), start, end;
        for (int j = 0; j < k; j++) {
            chunk_piece(n, c, j, &start, &end);
            sizes[j] = end - start;
        }
        return LT_OK;
    }
    case LT_SPLIT_BALANCED: {
        int64_t q = n / k, r = n % k;
        for (int j = 0; j < k; j++) sizes[j] = q + (j < r ? 1 : 0);
        return LT_OK;
    }
    case LT_SPLIT_LAST: {
        if (n < k)
            return lt__err(
                LT_INVALID,
                "rule 'last' needs at least one element per rank: dim of size %lld over %d ranks",
                (long long)n, k);
        int64_t c = last_piece_size(n, k);
        for (int j = 0; j < k - 1; j++) sizes[j] = c;
        sizes[k - 1] = n - (int64_t)(k - 1) * c;
        return LT_OK;
    }
    case LT_SPLIT_EXPLICIT: {
        if (rule->nsizes != k)
            return lt__err(LT_INVALID, "explicit split has %d sizes but the group has %d ranks",
                           rule->nsizes, k);
        int64_t sum = 0;
        for (int j = 0; j < k; j++) {
            if (rule->sizes[j] < 0)
                return lt__err(LT_INVALID, "explicit split size %d is negative (%lld)", j,
                               (long long)rule->sizes[j]);
            if (lt__add_i64(sum, rule->sizes[j], &sum))
                return lt__err(LT_OVERFLOW, "explicit split sizes overflow");
            sizes[j] = rule->sizes[j];
        }
        if (sum != n)
            return lt__err(LT_INVALID, "explicit split sizes sum to %lld but the dim has size %lld",
                           (long long)sum, (long long)n);
        return LT_OK;
    }
    default:
        return lt__err(LT_INVALID, "unknown split rule %d", (int)rule->kind);
    }
}

int lt__split_piece_quiet(const lt_split_rule *rule, int64_t n, int k, int j, int64_t *size,
                          int64_t *offset) {
    if (k < 1 || n < 0 || j < 0 || j >= k) return -1;
    int64_t start = 0, end;
    switch (rule->kind) {
    case LT_SPLIT_CHUNK:
        chunk_piece(n, n / k + (n % k != 0), j, &start, &end);
        break;
    case LT_SPLIT_BALANCED: {
        int64_t q = n / k, r = n % k;
        start = q * j + (j < r ? j : r);
        end = start + q + (j < r ? 1 : 0);
        break;
    }
    case LT_SPLIT_LAST: {
        if (n < k) return -1;
        int64_t c = last_piece_size(n, k);
        start = c * j;
        end = j == k - 1 ? n : start + c;
        break;
    }
    case LT_SPLIT_EXPLICIT: {
        if (rule->nsizes != k) return -1;
        int64_t sum = 0;
        for (int i = 0; i < k; i++) {
            if (rule->sizes[i] < 0 || rule->sizes[i] > n - sum)
                return -1; /* no overflow: sum <= n */
            if (i == j) start = sum;
            sum += rule->sizes[i];
        }
        if (sum != n) return -1;
        end = start + rule->sizes[j];
        break;
    }
    default:
        return -1;
    }
    *size = end - start;
    *offset = start;
    return 0;
}

lt_status lt_split_piece(const lt_split_rule *rule, int64_t n, int k, int j, int64_t *size,
                         int64_t *offset) {
    if (!lt__split_piece_quiet(rule, n, k, j, size, offset)) return LT_OK;
    /* refused: the message says why (lt_split_sizes names every other reason, and refuses
     * before it writes a size unless the rule is explicit with k sizes) */
    if (k >= 1 && n >= 0 && (j < 0 || j >= k))
        return lt__err(LT_INVALID, "piece %d of a split into %d does not exist", j, k);
    int64_t sizes[LT_SPLIT_MAX_EXPLICIT];     /* (k) */
    int buf = rule->kind == LT_SPLIT_EXPLICIT && rule->nsizes == k && k <= LT_SPLIT_MAX_EXPLICIT;
    LT_TRY(lt_split_sizes(rule, n, k, buf ? sizes : NULL));
    return lt__err(LT_INVALID, "piece %d of a split into %d does not exist", j,
                   k); /* not reached */
}

lt_status lt_split_sizes_offsets(const lt_split_rule *rule, int64_t n, int k,
                                 int64_t *sizes, int64_t *offsets) {
    int64_t local[LT_SPLIT_MAX_EXPLICIT];
    int64_t *s = sizes;
    if (!s) {
        if (k > LT_SPLIT_MAX_EXPLICIT) return lt__err(LT_INVALID, "too many pieces (%d)", k);
        s = local;
    }
    LT_TRY(lt_split_sizes(rule, n, k, s));
    if (offsets) {
        int64_t off = 0;
        for (int j = 0; j < k; j++) { offsets[j] = off; off += s[j]; }
    }
    return LT_OK;
}

int64_t lt_split_strided_positions(int64_t n, int sf, int k, int c, int64_t *pos) {
    int64_t pc = n / sf + (n % sf != 0), w = 0;
    for (int j = 0; j < sf; j++) {
        int64_t ps = pc * j;
        if (ps >= n) break;
        int64_t plen = n - ps < pc ? n - ps : pc;
        int64_t cc = plen / k + (plen % k != 0);
        int64_t cs = cc * c;
        if (cs >= plen) continue;
        int64_t ce = plen - cs < cc ? plen : cs + cc;
        if (pos)
            for (int64_t q = cs; q < ce; q++) pos[w++] = ps + q;
        else
            w += ce - cs;
    }
    return w;
}

int lt_split_rule_equal(const lt_split_rule *a, const lt_split_rule *b) {
    if (a->kind != b->kind) return 0;
    if (a->kind != LT_SPLIT_EXPLICIT) return 1;
    if (a->nsizes != b->nsizes) return 0;
    for (int i = 0; i < a->nsizes; i++)
        if (a->sizes[i] != b->sizes[i]) return 0;
    return 1;
}

int lt_split_rule_format(const lt_split_rule *r, char *buf, size_t n) {
    if (r->kind != LT_SPLIT_EXPLICIT) return snprintf(buf, n, "%s", lt_split_kind_name(r->kind));
    size_t used = 0;
    int want = 0;
    char tmp[32];
    for (int i = -1; i <= r->nsizes; i++) {
        int w;
        if (i < 0) w = snprintf(tmp, sizeof tmp, "[");
        else if (i == r->nsizes) w = snprintf(tmp, sizeof tmp, "]");
        else w = snprintf(tmp, sizeof tmp, "%s%lld", i ? "," : "", (long long)r->sizes[i]);
        if (n && used + (size_t)w < n) { memcpy(buf + used, tmp, (size_t)w); used += (size_t)w; }
        want += w;
    }
    if (n) buf[used < n ? used : n - 1] = '\0';
    return want;
}
