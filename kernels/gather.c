/* kernels/gather.c — index_select, and gather/scatter at the cartesian
 * product of per-dim index lists.
 *
 * These rebuild shards from index sets (redistribute, strided shards), often
 * on large tensors whose index lists are mostly runs of consecutive indices.
 * So each dim's list is first turned into runs (start, length); a trailing
 * "all of this dim" dim that is dense in memory is folded into the dim
 * outside it (its runs scaled), and the innermost runs are copied as blocks:
 * gathering everything from a contiguous tensor is one memcpy, gathering rows
 * is one memcpy per run of consecutive rows.
 */
#include "kernels/tensor_impl.h"
#include "kernels/cuda/kern.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct run {
    int64_t start, len;          /* target indices [start, start + len) of one dim */
} run;

typedef struct dimruns {
    run *runs;                   /* (max(nruns, 1)), owned (malloc) */
    int64_t nruns;
    int64_t len;                 /* output length of this dim (sum of run lengths) */
    int64_t size;                /* size of this dim in the target tensor */
    int64_t stride;              /* target stride of this dim, elements */
} dimruns;

static void dimruns_free(dimruns *dr, int n) {
    for (int d = 0; d < n; d++) {
        lt__free(dr[d].runs);
        dr[d].runs = NULL;
    }
}

/* Builds runs for every dim of target t from idx/lens, checking each index.
 * On error nothing stays allocated. */
static lt_status build_runs(const char *fn, const lt_tensor *t, int64_t *const *idx,
                            const int64_t *lens, dimruns *dr) {
    int nd = t->ndim;
    for (int d = 0; d < nd; d++) dr[d].runs = NULL;
    for (int d = 0; d < nd; d++) {
        dimruns *r = &dr[d];
        const int64_t *ix = idx ? idx[d] : NULL;
        int64_t n = ix ? lens[d] : 1;
        if (n < 0) {
            dimruns_free(dr, nd);
            return lt__err(LT_INVALID, "%s: index list of dim %d has negative length %lld", fn, d,
                           (long long)n);
        }
        r->runs = lt__malloc(sizeof *r->runs * (size_t)(n > 0 ? n : 1));
        if (!r->runs) {
            dimruns_free(dr, nd);
            return lt__err(LT_NOMEM, "%s: out of memory for the index runs of dim %d", fn, d);
        }
        r->size = t->shape[d];
        r->stride = t->strides[d];
        if (!ix) { /* all of dim d: one run (none when the dim is empty) */
            r->runs[0].start = 0;
            r->runs[0].len = t->shape[d];
            r->nruns = t->shape[d] > 0;
            r->len = t->shape[d];
            continue;
        }
        r->nruns = 0;
        r->len = n;
        for (int64_t j = 0; j < n; j++) {
            if (ix[j] < 0 || ix[j] >= t->shape[d]) {
                dimruns_free(dr, nd);
                return lt__err(
                    LT_INVALID,
                    "%s: index %lld at position %lld of dim %d is out of range for size %lld", fn,
                    (long long)ix[j], (long long)j, d, (long long)t->shape[d]);
            }
            run *last = r->nruns ? &r->runs[r->nruns - 1] : NULL;
            if (last && ix[j] == last->start + last->len) {
                last->len++;
            } else {
                r->runs[r->nruns].start = ix[j];
                r->runs[r->nruns].len = 1;
                r->nruns++;
            }
        }
    }
    return LT_OK;
}

/* For a non-empty output: drops dims of output length 1 (their offset goes
 * into *base) and folds a full, dense dim into the dim outside it (scaling
 * the outer runs). Moves the dims it keeps into out[] (ownership moves too),
 * frees the rest, and returns how many it kept (>= 1). */
static int simplify(dimruns *dr, int nd, int64_t *base, dimruns *out) {
    int m = 0;
    for (int d = 0; d < nd; d++) {
        if (dr[d].len == 1) {
            *base += dr[d].runs[0].start * dr[d].stride;
            dimruns_free(&dr[d], 1);
            continue;
        }
        int full = dr[d].nruns == 1 && dr[d].runs[0].start == 0 && dr[d].len == dr[d].size;
        dimruns *outer = m > 0 ? &out[m - 1] : NULL;
        if (full && outer && outer->stride == dr[d].stride * dr[d].size) {
            for (int64_t j = 0; j < outer->nruns; j++) {
                outer->runs[j].start *= dr[d].size;
                outer->runs[j].len *= dr[d].size;
            }
            outer->len *= dr[d].size;
            outer->size *= dr[d].size;
            outer->stride = dr[d].stride;
            dimruns_free(&dr[d], 1);
            continue;
        }
        out[m++] = dr[d];
        dr[d].runs = NULL;
    }
    if (m == 0) { /* a single element: one dim holding one run of one */
        out[0].runs = lt__malloc(sizeof *out[0].runs);
        if (!out[0].runs) return -1;
        out[0].runs[0].start = 0;
        out[0].runs[0].len = 1;
        out[0].nruns = out[0].len = out[0].size = out[0].stride = 1;
        m = 1;
    }
    return m;
}

/* Visits the cartesian product: for every outer index (odometer over the
 * runs of dims 0..m-2) and every inner run, calls the block step. `seq` is
 * the element pointer of the contiguous side (output of gather, source of
 * scatter), advanced in row-major order. */
typedef struct walk_ctx {
    int scatter;
    int accumulate;
    lt_redop op;
    lt_dtype dt;
    size_t es;
    const lt_backend *be;
    char *target;                /* target element 0 (with base offset applied) */
    char *seq;                   /* contiguous side, next element */
} walk_ctx;

/* One element, inlined: random index lists are mostly runs of one. */
static inline void copy_one(size_t es, char *d, const char *s) {
    switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    default: memcpy(d, s, 8); break;
    }
}

static lt_status walk_runs(walk_ctx *c, const dimruns *dr, int m) {
    int64_t r[LT_MAX_DIMS] = {0}, k[LT_MAX_DIMS] = {0};
    const dimruns *inner = &dr[m - 1];
    int64_t es = (int64_t)c->es;
    for (;;) {
        int64_t off = 0;
        for (int d = 0; d < m - 1; d++) off += (dr[d].runs[r[d]].start + k[d]) * dr[d].stride;
        for (int64_t j = 0; j < inner->nruns; j++) {
            const run *ru = &inner->runs[j];
            char *t = c->target + (off + ru->start * inner->stride) * es;
            if (ru->len == 1 && !c->accumulate) {
                if (c->scatter) copy_one(c->es, t, c->seq);
                else copy_one(c->es, c->seq, t);
            } else if (!c->scatter) {
                lt__copy_elems(c->es, c->seq, 1, t, inner->stride, ru->len);
            } else if (!c->accumulate) {
                lt__copy_elems(c->es, t, inner->stride, c->seq, 1, ru->len);
            } else {
                LT_TRY(lt__accumulate_run(c->be, c->dt, t, inner->stride, c->seq, 1, ru->len,
                                          c->op));
            }
            c->seq += ru->len * es;
        }
        int d = m - 2;
        for (; d >= 0; d--) {
            if (++k[d] < dr[d].runs[r[d]].len) break;
            k[d] = 0;
            if (++r[d] < dr[d].nruns) break;
            r[d] = 0;
        }
        if (d < 0) return LT_OK;
    }
}

/* Runs the walk over a non-empty cartesian product; frees dr. */
static lt_status walk_all(const char *fn, walk_ctx *c, dimruns *dr, int nd, int64_t base,
                          const lt_tensor *target) {
    dimruns kept[LT_MAX_DIMS];
    int m = simplify(dr, nd, &base, kept);
    if (m < 0) return lt__err(LT_NOMEM, "%s: out of memory", fn);
    c->target = (char *)target->storage->data + base * (int64_t)c->es;
    lt_status st = walk_runs(c, kept, m);
    dimruns_free(kept, m);
    return st;
}

static lt_status gather_impl(const char *fn, const lt_tensor *src, int64_t *const *idx,
                             const int64_t *lens, lt_tensor **out) {
    if (!out) return lt__err(LT_INVALID, "%s: out is NULL", fn);
    *out = NULL;
    if (!src) return lt__err(LT_INVALID, "%s: src is NULL", fn);
    int nd = src->ndim;
    for (int d = 0; d < nd; d++)
        if (idx && idx[d] && !lens) return lt__err(LT_INVALID, "%s: lens is NULL", fn);
    dimruns dr[LT_MAX_DIMS];
    LT_TRY(build_runs(fn, src, idx, lens, dr));
    int64_t shape[LT_MAX_DIMS];
    for (int d = 0; d < nd; d++) shape[d] = dr[d].len;
    lt_tensor *o = NULL;
    lt_status st = lt__tensor_new_uninit(lt__backend_of(src), src->dtype, nd, shape, &o);
    if (st != LT_OK) {
        dimruns_free(dr, nd);
        return lt__err_ctx(st, "%s", fn);
    }
    if (lt_numel(o) == 0) {
        dimruns_free(dr, nd);
        *out = o;
        return LT_OK;
    }
    lt__kargs ka; /* a backend's kernel: one thread per output element */
    memset(&ka, 0, sizeof ka);
    ka.kernel = LT__K_GATHER;
    ka.ndim = nd;
    ka.n = lt_numel(o);
    ka.o[0] = (lt__kop){lt_data(o), (int)src->dtype, {0}};
    ka.o[1] = (lt__kop){lt_data(src), (int)src->dtype, {0}};
    for (int d = 0; d < nd; d++) {
        ka.shape[d] = shape[d];
        ka.o[1].st[d] = src->strides[d];
        ka.ix[d] = idx ? idx[d] : NULL; /* host lists: the backend copies them where it needs */
    }
    st = lt__klaunch_raw(lt__backend_of(src), &ka);
    if (st != LT_UNSUPPORTED) {
        dimruns_free(dr, nd);
        if (st != LT_OK) {
            lt_tensor_free(o);
            return lt__err_ctx(st, "%s", fn);
        }
        *out = o;
        return LT_OK;
    }
    const lt_tensor *hts[2] = {o, src};
    lt__hostrun hr; /* off the host (no kernel): through host copies */
    st = lt__host_begin(&hr, 2, hts);
    if (st != LT_OK) {
        dimruns_free(dr, nd);
        lt_tensor_free(o);
        return lt__err_ctx(st, "%s", fn);
    }
    walk_ctx c = {0, 0, LT_REDOP_SUM, src->dtype, lt_dtype_size(src->dtype), NULL, NULL,
                  lt_data(hr.t[0])};
    st = lt__host_end(&hr, 1, walk_all(fn, &c, dr, nd, hr.t[1]->offset, hr.t[1]));
    if (st != LT_OK) {
        lt_tensor_free(o);
        return st;
    }
    *out = o;
    return LT_OK;
}

lt_status lt_gather_index_sets(const lt_tensor *src, int64_t *const *idx, const int64_t *lens,
                               lt_tensor **out) {
    return gather_impl("gather_index_sets", src, idx, lens, out);
}

lt_status lt_index_select(const lt_tensor *src, int dim, const int64_t *idx, int64_t n,
                          lt_tensor **out) {
    if (out) *out = NULL;
    if (!src) return lt__err(LT_INVALID, "index_select: src is NULL");
    if (dim < 0 || dim >= src->ndim)
        return lt__err(LT_INVALID, "index_select: dim %d is out of range for a %d-d tensor", dim,
                       src->ndim);
    if (n > 0 && !idx) return lt__err(LT_INVALID, "index_select: idx is NULL");
    int64_t *ix[LT_MAX_DIMS] = {0};
    int64_t lens[LT_MAX_DIMS] = {0};
    int64_t none = 0;                           /* a non-NULL list for n == 0 */
    ix[dim] = n > 0 ? (int64_t *)idx : &none;   /* only read */
    lens[dim] = n;
    return gather_impl("index_select", src, ix, lens, out);
}

/* 1 when no index list of idx (dims of t) repeats an index: then every
 * target element has one source and a kernel may write them in parallel.
 * 0 also when the check would need too much memory (the host walk then);
 * -1 (with the message) when its bit set cannot be allocated. */
static int lists_unique(const lt_tensor *t, int64_t *const *idx, const int64_t *lens) {
    for (int d = 0; d < t->ndim; d++) {
        if (!idx || !idx[d] || lens[d] < 2) continue;
        if (t->shape[d] > ((int64_t)1 << 30)) return 0;
        unsigned char *seen = lt__calloc((size_t)(t->shape[d] + 7) / 8, 1);
        if (!seen) {
            lt__err(LT_NOMEM, "out of memory for the index check of dim %d", d);
            return -1;
        }
        int dup = 0;
        for (int64_t j = 0; j < lens[d] && !dup; j++) {
            int64_t v = idx[d][j]; /* checked in range by build_runs */
            dup = (seen[v / 8] >> (v % 8)) & 1;
            seen[v / 8] |= (unsigned char)(1u << (v % 8));
        }
        lt__free(seen);
        if (dup) return 0;
    }
    return 1;
}

/* 1 when backend be's kernel may scatter s (contiguous) into dst through
 * idx; 0 for the host walk; -1 (with the message) when out of memory. */
static int use_kernel(const lt_backend *be, const lt_tensor *dst, const lt_tensor *s,
                      int64_t *const *idx) {
    if (!be || !be->iface->launch || lt__may_overlap(dst, s)) return 0;
    return lists_unique(dst, idx, s->shape);
}

lt_status lt_scatter_index_sets(lt_tensor *dst, int64_t *const *idx, const lt_tensor *src,
                                int accumulate, lt_redop op) {
    const char *fn = "scatter_index_sets";
    if (!dst || !src) return lt__err(LT_INVALID, "%s: %s is NULL", fn, dst ? "src" : "dst");
    if (src->dtype != dst->dtype)
        return lt__err(LT_DTYPE, "%s: src has dtype %s but dst has %s", fn,
                       lt_dtype_name(src->dtype), lt_dtype_name(dst->dtype));
    if (accumulate && ((int)op < 0 || op >= LT_REDOP_COUNT))
        return lt__err(LT_INVALID, "%s: unknown reduce op %d", fn, (int)op);
    int nd = dst->ndim;
    char sa[256], sb[256];
    int bad = src->ndim != nd;
    for (int d = 0; d < nd && !bad; d++)
        if (!(idx && idx[d]) && src->shape[d] != dst->shape[d]) bad = 1;
    if (bad)
        return lt__err(LT_SHAPE,
                       "%s: src has shape %s but dst has shape %s (src must match dst on every dim "
                       "without an index list)",
                       fn, lt_shape_format(src->ndim, src->shape, sa, sizeof sa),
                       lt_shape_format(nd, dst->shape, sb, sizeof sb));
    dimruns dr[LT_MAX_DIMS];
    LT_TRY(build_runs(fn, dst, idx, src->shape, dr));
    if (lt_numel(src) == 0) {
        dimruns_free(dr, nd);
        return LT_OK;
    }
    lt_tensor *s = NULL;
    lt_status st = lt_contiguous(src, &s); /* a view when already contiguous */
    if (st != LT_OK) {
        dimruns_free(dr, nd);
        return lt__err_ctx(st, "%s", fn);
    }
    const lt_backend *be = lt__backend_of(dst) == lt__backend_of(src) ? lt__backend_of(dst) : NULL;
    int unique = use_kernel(be, dst, s, idx);
    if (unique < 0) {
        dimruns_free(dr, nd);
        lt_tensor_free(s);
        return lt__err_ctx(LT_NOMEM, "%s", fn);
    }
    if (unique) {
        /* a backend's kernel: one thread per source element */
        lt__kargs ka;
        memset(&ka, 0, sizeof ka);
        ka.kernel = LT__K_SCATTER;
        ka.op = (int)op;
        ka.rev = accumulate != 0;
        ka.ndim = nd;
        ka.n = lt_numel(s);
        ka.o[0] = (lt__kop){lt_data(dst), (int)dst->dtype, {0}};
        ka.o[1] = (lt__kop){lt_data(s), (int)dst->dtype, {0}};
        for (int d = 0; d < nd; d++) {
            ka.shape[d] = s->shape[d];
            ka.o[0].st[d] = dst->strides[d];
            ka.ix[d] = idx ? idx[d] : NULL;
        }
        st = lt__klaunch_raw(be, &ka);
        if (st != LT_UNSUPPORTED) {
            dimruns_free(dr, nd);
            lt_tensor_free(s);
            return st ? lt__err_ctx(st, "%s", fn) : LT_OK;
        }
    }
    /* repeated indices, overlap, no kernel, two backends: the host walk, off
     * the host through host copies */
    const lt_tensor *hts[2] = {dst, s};
    lt__hostrun hr;
    st = lt__host_begin(&hr, 2, hts);
    if (st != LT_OK) {
        dimruns_free(dr, nd);
        lt_tensor_free(s);
        return lt__err_ctx(st, "%s", fn);
    }
    if (hr.copied) be = NULL; /* host memory now: the host loop */
    walk_ctx c = {1,    accumulate,      op, dst->dtype, lt_dtype_size(dst->dtype), be,
                  NULL, lt_data(hr.t[1])};
    st = lt__host_end(&hr, 1, walk_all(fn, &c, dr, nd, hr.t[0]->offset, hr.t[0]));
    lt_tensor_free(s);
    if (st != LT_OK) return lt__err_ctx(st, "%s", fn);
    return LT_OK;
}
