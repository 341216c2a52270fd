/* tools/scenario/scenario_compare.c — `run --compare-backend NAME`: every
 * value a case stores, compared with the same case run on another backend.
 *
 * Why it exists: the CUDA backend (and cuda-emu, its kernel code on the
 * host) must compute what the CPU backend computes. With a compare backend a
 * case runs twice: first on that backend, recording a host copy of every
 * value a step stores (a full tensor, or every rank's shard of a DTensor or
 * LocalTensor), in order; then on its own backend, where each stored value
 * is compared with the recorded one at the same position: the same name and
 * kind, the same shapes, and shard by shard the same bytes — or, where the
 * bytes differ (a gemm summed in another order, device libm), values within
 * the dtype's default tolerance (docs/SEMANTICS.md §11.8). The first value
 * that differs beyond that fails the case, naming the value, rank and
 * element. Counts of bit-identical and within-tolerance shards are kept for
 * the closing line of `localtensor run`.
 *
 * Owns: the recorded copies (freed by lt__sc_cmp_free).
 */
#include "tools/scenario/scenario_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "kernels/tensor_impl.h"

/* One recorded value: its name, kind and (n) shard copies on the CPU
 * backend, contiguous (NULL: an absent shard). */
typedef struct sc_snap {
    const char *name;        /* borrowed from the case's arena */
    int kind;
    int n;
    lt_tensor **t;           /* (n) owned */
} sc_snap;

static int64_t n_exact, n_close; /* shards compared, over the whole run */

void lt__sc_cmp_counts(int64_t *exact, int64_t *close) {
    *exact = __atomic_load_n(&n_exact, __ATOMIC_RELAXED);
    *close = __atomic_load_n(&n_close, __ATOMIC_RELAXED);
}

void lt__sc_cmp_free(sc_cmp *c) {
    for (int i = 0; i < c->nsnaps; i++) {
        sc_snap *s = &((sc_snap *)c->snaps)[i];
        for (int k = 0; k < s->n; k++) lt_tensor_free(s->t[k]);
        lt__free(s->t);
    }
    lt__free(c->snaps);
    c->snaps = NULL;
    c->nsnaps = c->cap = 0;
}

/* The shards of v in *ts (borrowed) and their count. */
static int shards_of(const sc_value *v, lt_tensor *const **ts) {
    static lt_tensor *const none = NULL;
    if (v->kind == SC_FULL) {
        *ts = &v->full;
        return 1;
    }
    const lt_local *l = v->kind == SC_DTENSOR ? (v->dt ? v->dt->local : NULL) : v->local;
    if (!l) {
        *ts = &none;
        return 1;
    }
    *ts = l->shards;
    return l->mesh.world;
}

/* A contiguous CPU copy of t (placeholder flags kept) in *out. */
static lt_status host_clone(const lt_tensor *t, lt_tensor **out) {
    *out = NULL;
    if (!t) return LT_OK;
    lt_tensor *h = NULL;
    LT_TRY(lt__tensor_new_uninit(lt_backend_cpu(), t->dtype, t->ndim, t->shape, &h));
    lt_status st = lt_copy(h, t);
    if (st) {
        lt_tensor_free(h);
        return st;
    }
    h->placeholder = t->placeholder;
    h->logical_ndim = t->logical_ndim;
    memcpy(h->logical, t->logical, sizeof h->logical);
    *out = h;
    return LT_OK;
}

static lt_status record(sc_cmp *c, const sc_value *v) {
    if (c->nsnaps == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        sc_snap *ns = lt__realloc(c->snaps, sizeof *ns * (size_t)cap);
        if (!ns) return lt__err(LT_NOMEM, "--compare-backend: out of memory");
        c->snaps = ns;
        c->cap = cap;
    }
    lt_tensor *const *ts;
    int n = shards_of(v, &ts);
    sc_snap *s = &((sc_snap *)c->snaps)[c->nsnaps];
    s->name = v->name;
    s->kind = v->kind;
    s->n = n;
    s->t = lt__calloc((size_t)n, sizeof *s->t);
    if (!s->t) return lt__err(LT_NOMEM, "--compare-backend: out of memory");
    c->nsnaps++; /* from here lt__sc_cmp_free frees what was copied */
    for (int k = 0; k < n; k++) LT_TRY(host_clone(ts[k], &s->t[k]));
    return LT_OK;
}

/* Sets c's first difference (message) once. */
static void differ(sc_cmp *c, int step, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void differ(sc_cmp *c, int step, const char *fmt, ...) {
    if (c->msg[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
    c->step = step;
}

/* Shard k of value `name`: got (this backend) against want (the recorded copy). */
static lt_status check_shard(sc_cmp *c, int step, const char *name, int k, const lt_tensor *got,
                             const lt_tensor *want) {
    const char *here = lt_backend_default()->iface->name, *there = c->other->iface->name;
    if (!got || !want) {
        if (got || want)
            differ(c, step, "value '%s': rank %d holds a shard on %s but not on %s", name, k,
                   got ? here : there, got ? there : here);
        return LT_OK;
    }
    char sa[128], sb[128];
    if (!lt_same_shape(got, want) || got->dtype != want->dtype ||
        got->placeholder != want->placeholder) {
        differ(c, step, "value '%s' rank %d: %s %s on %s but %s %s on %s", name, k,
               lt_dtype_name(got->dtype), lt_shape_format(got->ndim, got->shape, sa, sizeof sa),
               here, lt_dtype_name(want->dtype),
               lt_shape_format(want->ndim, want->shape, sb, sizeof sb), there);
        return LT_OK;
    }
    lt_tensor *h = NULL;
    LT_TRY(host_clone(got, &h));
    int same = memcmp(lt_data(h), lt_data(want), lt_nbytes(want)) == 0;
    lt_status st = LT_OK;
    if (same) {
        __atomic_add_fetch(&n_exact, 1, __ATOMIC_RELAXED);
    } else {
        double rtol, atol;
        lt_compare_result r;
        lt_dtype_default_tol(want->dtype, &rtol, &atol);
        st = lt_compare(h, want, rtol, atol, &r);
        if (!st && r.equal) __atomic_add_fetch(&n_close, 1, __ATOMIC_RELAXED);
        else if (!st)
            differ(c, step,
                   "value '%s' rank %d differs from the %s backend's run: element %lld is %.17g on "
                   "%s, %.17g on %s "
                   "(%lld elements beyond the %s tolerance, docs/SEMANTICS.md §11.8)",
                   name, k, there, (long long)r.first_flat, r.actual, here, r.expected, there,
                   (long long)r.ndiff, lt_dtype_name(want->dtype));
    }
    lt_tensor_free(h);
    return st;
}

lt_status lt__sc_cmp_put(sc_cmp *c, int step, const sc_value *v) {
    if (c->mode == SC_CMP_RECORD) return record(c, v);
    if (c->msg[0]) return LT_OK; /* the first difference is the one reported */
    int i = c->next++;
    if (i >= c->nsnaps) {
        differ(c, step, "value '%s': stored on %s but the %s backend's run stored only %d values",
               v->name, lt_backend_default()->iface->name, c->other->iface->name, c->nsnaps);
        return LT_OK;
    }
    const sc_snap *s = &((const sc_snap *)c->snaps)[i];
    if (strcmp(s->name, v->name) || s->kind != v->kind) {
        differ(c, step, "stored value %d is '%s' but the %s backend's run stored '%s' there", i,
               v->name, c->other->iface->name, s->name);
        return LT_OK;
    }
    lt_tensor *const *ts;
    int n = shards_of(v, &ts);
    if (n != s->n) {
        differ(c, step, "value '%s': %d shards, %d on the %s backend", v->name, n, s->n,
               c->other->iface->name);
        return LT_OK;
    }
    for (int k = 0; k < n; k++) LT_TRY(check_shard(c, step, v->name, k, ts[k], s->t[k]));
    return LT_OK;
}

int lt__sc_cmp_done(sc_cmp *c) {
    if (!c->msg[0] && c->next < c->nsnaps)
        differ(c, -1, "the case stored %d values on %s but %d on the %s backend", c->next,
               lt_backend_default()->iface->name, c->nsnaps, c->other->iface->name);
    return c->msg[0] != 0;
}
