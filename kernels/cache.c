/* kernels/cache.c — the generic memo cache (kernels/cache_impl.h): an
 * open-addressing table of (key words, value) per instance behind one mutex.
 * The table never holds more than half its slots, so a probe always ends at
 * a free slot; a full instance (max_entries) is emptied before it grows. */
#include "kernels/cache_impl.h"

#include <string.h>

#include "kernels/alloc.h"

struct lt__cache_entry {
    uint64_t hash;   /* 0: free slot */
    int len;
    uint64_t *key;   /* (len) owned */
    void *value;     /* one reference owned */
};

uint64_t lt__cache_key_hash(const lt__cache_key *k) {
    uint64_t h = 0xcbf29ce484222325ull;
    int n = k->n < LT__CACHE_KEY_MAX ? k->n : LT__CACHE_KEY_MAX;
    for (int i = 0; i < n; i++) {
        h ^= k->w[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h | 1;
}

static lt__cache_entry *find_locked(lt__cache *c, const lt__cache_key *k, uint64_t h) {
    if (!c->cap) return NULL;
    for (size_t i = h & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
        lt__cache_entry *e = &c->tab[i];
        if (!e->hash) return NULL;
        if (e->hash == h && e->len == k->n && !memcmp(e->key, k->w, sizeof(uint64_t) * (size_t)k->n)) return e;
    }
}

static void clear_locked(lt__cache *c) {
    for (size_t i = 0; i < c->cap; i++)
        if (c->tab[i].hash) {
            lt__free(c->tab[i].key);
            c->release(c->tab[i].value);
        }
    lt__free(c->tab);
    c->tab = NULL;
    c->cap = c->n = 0;
}

void *lt__cache_get(lt__cache *c, const lt__cache_key *k, uint64_t h, int count_miss) {
    if (!lt__cache_key_fits(k)) return NULL;
    void *v = NULL;
    pthread_mutex_lock(&c->mu);
    lt__cache_entry *e = find_locked(c, k, h);
    if (e) {
        v = e->value;
        c->ref(v);
        c->hits++;
    } else if (count_miss) {
        c->misses++;
    }
    pthread_mutex_unlock(&c->mu);
    return v;
}

/* Makes room for one more entry: empties a full table (max_entries), then
 * doubles it when it would be more than half used. 0 when out of memory. */
static int grow_locked(lt__cache *c) {
    if (c->n >= c->max_entries) clear_locked(c);
    if (c->n + 1 <= c->cap / 2) return 1;
    size_t ncap = c->cap ? c->cap * 2 : 256;
    lt__cache_entry *nt = lt__calloc(ncap, sizeof *nt);
    if (!nt) return 0;
    for (size_t i = 0; i < c->cap; i++) {
        lt__cache_entry *e = &c->tab[i];
        if (!e->hash) continue;
        size_t j = e->hash & (ncap - 1);
        while (nt[j].hash) j = (j + 1) & (ncap - 1);
        nt[j] = *e;
    }
    lt__free(c->tab);
    c->tab = nt, c->cap = ncap;
    return 1;
}

void lt__cache_put(lt__cache *c, const lt__cache_key *k, uint64_t h, void *value) {
    if (!lt__cache_key_fits(k)) return;
    uint64_t *key = lt__malloc(sizeof(uint64_t) * (size_t)(k->n > 0 ? k->n : 1));
    if (!key) return;   /* a cache that cannot grow is only slower */
    memcpy(key, k->w, sizeof(uint64_t) * (size_t)k->n);
    pthread_mutex_lock(&c->mu);
    if (find_locked(c, k, h) || !grow_locked(c)) {
        pthread_mutex_unlock(&c->mu);
        lt__free(key);
        return;
    }
    size_t i = h & (c->cap - 1);
    while (c->tab[i].hash) i = (i + 1) & (c->cap - 1);
    c->ref(value);
    c->tab[i] = (lt__cache_entry){h, k->n, key, value};
    c->n++;
    pthread_mutex_unlock(&c->mu);
}

void lt__cache_clear(lt__cache *c) {
    pthread_mutex_lock(&c->mu);
    clear_locked(c);
    c->hits = c->misses = 0;
    pthread_mutex_unlock(&c->mu);
}

void lt__cache_stats(lt__cache *c, size_t *hits, size_t *misses, size_t *entries) {
    pthread_mutex_lock(&c->mu);
    if (hits) *hits = c->hits;
    if (misses) *misses = c->misses;
    if (entries) *entries = c->n;
    pthread_mutex_unlock(&c->mu);
}
