/* kernels/cache_impl.h — the one memo cache of the library (internal).
 *
 * Plans (redistribute plans, op propagation plans) are pure functions of a
 * small key, immutable and reference-counted, so one generic cache serves
 * them all: a key is a list of 64-bit words, a value an opaque pointer with
 * ref/release callbacks. One policy for every instance: process-wide, one
 * lock per instance, values shared across threads (their reference counts
 * are atomic). The lock is a spin lock that yields: it is held for a probe
 * (a hit costs one atomic exchange and one store), and a mutex's two
 * library calls cost more than the probe itself. A hit costs a hash, a compare and a reference; a
 * miss is built by the caller outside the lock and offered with lt__cache_put. When an instance is
 * full it is emptied (values still held by callers stay valid). Caching is optional work: a failed
 * allocation skips the entry and the result is the same.
 */
#ifndef LT_CACHE_IMPL_H
#define LT_CACHE_IMPL_H

#include <stddef.h>
#include <stdint.h>

/* A key under construction: words beyond LT__CACHE_KEY_MAX are counted but
 * not stored, and such a key is never cached (lt__cache_key_fits). */
#define LT__CACHE_KEY_MAX 1024

typedef struct lt__cache_key {
    uint64_t w[LT__CACHE_KEY_MAX];
    int n;
} lt__cache_key;

static inline void lt__key_put(lt__cache_key *k, uint64_t v) {
    if (k->n < LT__CACHE_KEY_MAX) k->w[k->n] = v;
    k->n++;
}
static inline int lt__cache_key_fits(const lt__cache_key *k) { return k->n <= LT__CACHE_KEY_MAX; }

/* Hash of the stored words (never 0). */
uint64_t lt__cache_key_hash(const lt__cache_key *k);

typedef struct lt__cache_entry lt__cache_entry;

/* One instance, usually a static with LT__CACHE_INIT. ref adds a reference
 * to a value, release drops one. */
typedef struct lt__cache {
    void (*ref)(void *value);
    void (*release)(void *value);
    size_t max_entries;
    int lock;             /* 0 free, 1 held (kernels/cache.c) */
    unsigned gen;         /* bumped by lt__cache_clear: memos filled before are stale */
    lt__cache_entry *tab; /* (cap) open addressing; hash 0 marks a free slot */
    size_t cap, n, hits, misses;
} lt__cache;

#define LT__CACHE_INIT(ref_fn, release_fn, max)                                         \
    { (ref_fn), (release_fn), (max), 0, 0, NULL, 0, 0, 0, 0 }

/* A thread's memo of its last hit in front of an instance: the hot path of
 * a repeated call (the same op on the same specs, step after step) compares
 * its key with the memo's and takes a reference, with no hash, no lock and
 * no probe. Declare memos `static _Thread_local` (zero-initialised), one
 * per call site or per kind of key. A memo holds one reference to its
 * value (values are immutable and pure functions of their key, so a
 * memoised value is never wrong); it is dropped when the memo is refilled,
 * by lt__cache_clear on the clearing thread (other threads drop theirs at
 * their next lookup or when they exit; a forked child drops the other
 * threads'). */
typedef struct lt__cache_memo {
    lt__cache *c;                 /* the instance, once filled */
    unsigned gen;                 /* c->gen when filled */
    int len, cap;
    uint64_t *key;                /* (cap) owned; the first len words are the key */
    void *value;                  /* one reference, or NULL: empty */
    struct lt__cache_memo *next;  /* every thread's filled memos (kernels/cache.c) */
    const void *owner;            /* the thread that filled it */
    int registered;
} lt__cache_memo;

/* The value stored under k (hash h from lt__cache_key_hash) as a NEW
 * reference the caller releases, or NULL. Counts a hit, and a miss when
 * count_miss is set. */
void *lt__cache_get(lt__cache *c, const lt__cache_key *k, uint64_t h, int count_miss);

/* lt__cache_get (counting a miss) through memo m (may be NULL): the memo's
 * value when its key is k and no clear happened since, else the instance's
 * (a hit is memoised). *h receives k's hash when it was computed (always
 * when NULL is returned), for lt__cache_put. Hit counts are exact on one
 * thread and may lose increments under concurrent hits. */
void *lt__cache_lookup(lt__cache *c, lt__cache_memo *m, const lt__cache_key *k, uint64_t *h);

/* Stores value under k, taking a new reference, unless the key is present
 * already or does not fit; the value is borrowed otherwise. Never fails:
 * without memory the entry is skipped. */
void lt__cache_put(lt__cache *c, const lt__cache_key *k, uint64_t h, void *value);

/* Releases every entry and the calling thread's memos of c, and resets the
 * counters. */
void lt__cache_clear(lt__cache *c);

/* The ref/release pair of a value that is one block (kernels/alloc.h)
 * beginning with an atomic reference count (lt__cache_rec as its first
 * member, or an int `refs` first): release frees the block with its last
 * reference. For LT__CACHE_INIT and for callers dropping their reference. */
typedef struct lt__cache_rec {
    int refs;
} lt__cache_rec;
void lt__cache_rec_ref(void *v);
void lt__cache_rec_release(void *v);

/* Counters since the last clear (each pointer may be NULL). */
void lt__cache_stats(lt__cache *c, size_t *hits, size_t *misses, size_t *entries);

#endif
