/* kernels/cache.c — the generic memo cache (kernels/cache_impl.h): an
 * open-addressing table of (key words, value) per instance behind one mutex.
 * The table never holds more than half its slots, so a probe always ends at
 * a free slot; a full instance (max_entries) is emptied before it grows. */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* sched_yield */
#endif
#include <pthread.h>
#include "kernels/cache_impl.h"

#include <sched.h>
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

/* The instance lock: an exchange to take it, a release store to drop it;
 * a waiter spins on plain loads and yields the CPU between them. */
static void cache_lock(lt__cache *c) {
    while (__atomic_exchange_n(&c->lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&c->lock, __ATOMIC_RELAXED)) sched_yield();
}
static void cache_unlock(lt__cache *c) { __atomic_store_n(&c->lock, 0, __ATOMIC_RELEASE); }

static lt__cache_entry *find_locked(lt__cache *c, const lt__cache_key *k, uint64_t h) {
    if (!c->cap) return NULL;
    for (size_t i = h & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
        lt__cache_entry *e = &c->tab[i];
        if (!e->hash) return NULL;
        if (e->hash == h && e->len == k->n &&
            !memcmp(e->key, k->w, sizeof(uint64_t) * (size_t)k->n))
            return e;
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

/* Counters are read and written with relaxed atomics (a memo hit counts
 * without the lock): exact on one thread, approximate under contention. */
static void bump(size_t *n) {
    __atomic_store_n(n, __atomic_load_n(n, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* ---- per-thread memos ------------------------------------------------------ */

/* Every filled memo is on one process-wide list (under memo_mu), tagged
 * with its thread (the address of that thread's `memo_self`). A thread's
 * memos are released when it exits (a pthread key destructor) or, per
 * instance, by lt__cache_clear on that thread. A forked child, which has
 * only the forking thread, releases the other threads' memos (their
 * thread-local blocks are still mapped in the child, but no thread will
 * use them again). */
static _Thread_local char memo_self;
static lt__cache_memo *memo_all;
static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t memo_key;
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;
static int memo_key_ok;

static void memo_drop(lt__cache_memo *m) {
    if (m->value) m->c->release(m->value);
    m->value = NULL;
}

/* Unlinks and empties the memos that `keep` rejects (memo_mu held). */
static void memo_sweep_locked(int (*keep)(const lt__cache_memo *m, const void *arg),
                              const void *arg) {
    for (lt__cache_memo **pp = &memo_all; *pp;) {
        lt__cache_memo *m = *pp;
        if (keep(m, arg)) {
            pp = &m->next;
            continue;
        }
        *pp = m->next;
        memo_drop(m);
        lt__free(m->key);
        m->key = NULL, m->cap = 0, m->registered = 0, m->next = NULL;
    }
}

static int not_mine(const lt__cache_memo *m, const void *arg) {
    (void)arg;
    return m->owner != &memo_self;
}
static int mine(const lt__cache_memo *m, const void *arg) {
    (void)arg;
    return m->owner == &memo_self;
}

static void memo_thread_exit(void *unused) {
    (void)unused;
    pthread_mutex_lock(&memo_mu);
    memo_sweep_locked(not_mine, NULL);
    pthread_mutex_unlock(&memo_mu);
}

static void memo_after_fork_child(void) {
    pthread_mutex_init(&memo_mu, NULL);   /* another thread may have held it at the fork */
    memo_sweep_locked(mine, NULL);
}

static void memo_key_make(void) {
    memo_key_ok = pthread_key_create(&memo_key, memo_thread_exit) == 0 &&
                  pthread_atfork(NULL, NULL, memo_after_fork_child) == 0;
}

/* Fills m with (k, v): takes a new reference to v. Without memory (or a
 * thread-exit hook) the memo stays empty: only slower. */
static void memo_fill(lt__cache *c, lt__cache_memo *m, const lt__cache_key *k, void *v) {
    if (!m->registered) {
        pthread_once(&memo_once, memo_key_make);
        if (!memo_key_ok || pthread_setspecific(memo_key, &memo_self) != 0) return;
        pthread_mutex_lock(&memo_mu);
        m->owner = &memo_self, m->next = memo_all, memo_all = m, m->registered = 1;
        pthread_mutex_unlock(&memo_mu);
    }
    if (m->c) memo_drop(m);
    if (k->n > m->cap) {
        uint64_t *nk = lt__malloc(sizeof(uint64_t) * (size_t)k->n);
        if (!nk) return;
        lt__free(m->key);
        m->key = nk, m->cap = k->n;
    }
    memcpy(m->key, k->w, sizeof(uint64_t) * (size_t)k->n);
    c->ref(v);
    m->c = c, m->len = k->n, m->value = v;
    m->gen = __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE);
}

void *lt__cache_lookup(lt__cache *c, lt__cache_memo *m, const lt__cache_key *k, uint64_t *h) {
    if (!lt__cache_key_fits(k)) return NULL;
    if (m && m->value && m->c == c && m->len == k->n &&
        m->gen == __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE) &&
        !memcmp(m->key, k->w, sizeof(uint64_t) * (size_t)k->n)) {
        c->ref(m->value);
        bump(&c->hits);
        return m->value;
    }
    *h = lt__cache_key_hash(k);
    void *v = lt__cache_get(c, k, *h, 1);
    if (v && m) memo_fill(c, m, k, v);
    return v;
}

void *lt__cache_get(lt__cache *c, const lt__cache_key *k, uint64_t h, int count_miss) {
    if (!lt__cache_key_fits(k)) return NULL;
    void *v = NULL;
    cache_lock(c);
    lt__cache_entry *e = find_locked(c, k, h);
    if (e) {
        v = e->value;
        c->ref(v);
        bump(&c->hits);
    } else if (count_miss) {
        bump(&c->misses);
    }
    cache_unlock(c);
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
    cache_lock(c);
    if (find_locked(c, k, h) || !grow_locked(c)) {
        cache_unlock(c);
        lt__free(key);
        return;
    }
    size_t i = h & (c->cap - 1);
    while (c->tab[i].hash) i = (i + 1) & (c->cap - 1);
    c->ref(value);
    c->tab[i] = (lt__cache_entry){h, k->n, key, value};
    c->n++;
    cache_unlock(c);
}

void lt__cache_clear(lt__cache *c) {
    pthread_mutex_lock(&memo_mu);
    for (lt__cache_memo *m = memo_all; m; m = m->next)
        if (m->owner == &memo_self && m->c == c) memo_drop(m);
    pthread_mutex_unlock(&memo_mu);
    cache_lock(c);
    clear_locked(c);
    __atomic_store_n(&c->gen, c->gen + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&c->hits, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->misses, 0, __ATOMIC_RELAXED);
    cache_unlock(c);
}

void lt__cache_stats(lt__cache *c, size_t *hits, size_t *misses, size_t *entries) {
    cache_lock(c);
    if (hits) *hits = __atomic_load_n(&c->hits, __ATOMIC_RELAXED);
    if (misses) *misses = __atomic_load_n(&c->misses, __ATOMIC_RELAXED);
    if (entries) *entries = c->n;
    cache_unlock(c);
}

void lt__cache_rec_ref(void *v) {
    __atomic_add_fetch(&((lt__cache_rec *)v)->refs, 1, __ATOMIC_RELAXED);
}

void lt__cache_rec_release(void *v) {
    lt__cache_rec *r = v;
    if (r && !__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL)) lt__free(r);
}
