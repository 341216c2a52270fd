/* collectives_sim/engine_inproc.c — the in-process engine: every collective
 * computed directly on the shards of all ranks, in one address space.
 *
 * Invariants it relies on (established by collectives.c, see engine.h):
 * outputs have the result's dtype and shape and are contiguous; inputs may be
 * strided views. Copies are N-D box copies whose contiguous inner runs are
 * coalesced into single memcpy calls, so a contiguous shard moves with one
 * memcpy. Reductions are one fused pass: for each block of BLK elements,
 * every input is read once into an accumulator that stays in L1, and the
 * result is written once; all_reduce then copies the block (still in cache)
 * to the other members' outputs. No allocation happens on this path except
 * when a reduction input is not contiguous (it is then copied first).
 * When a group writes at least NT_MIN bytes (more than fits in cache
 * usefully), bulk copies use non-temporal stores (SSE2 streaming stores,
 * where available): the output is not read back before the call returns,
 * and write-allocate traffic would otherwise add a read per byte written.
 *
 * Reduction semantics: group order (member 0 first); f32 accumulates in f32,
 * f64 in f64, bf16/f16 in f32 rounded once at the end; i32/i64 sum and
 * product wrap (two's complement, as torch does) and avg is the exact sum
 * divided by the group size, truncated toward zero; bool: sum and max are
 * logical or, product and min logical and (avg on bool is rejected by the
 * wrapper).
 */
#include "collectives_sim/engine.h"
#include "kernels/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/status_impl.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define BLK 16384              /* elements per reduction block: 128 KiB of 8-byte accumulators (L2) */
#define NT_MIN (16u << 20)     /* group output bytes from which copies stream past the cache */
#define NT_RUN 1024            /* shortest copy worth streaming */

typedef struct inproc_ctx {
    int world;
    const char **src;           /* (world) per-member input data of the current reduction */
    lt_tensor **tmp;            /* (world) contiguous copies of strided inputs, or NULL */
    char **dst;                 /* (world) output data pointers of the current call */
    int64_t *off;               /* (world) running split offsets of all_to_all */
    int nt;                     /* this group's copies use streaming stores */
    unsigned char stage[BLK * 8]; /* a reduced block in its final dtype (streaming path) */
    union {
        float f[BLK];
        double d[BLK];
        int64_t i[BLK];
        uint64_t u[BLK];
        uint8_t b[BLK];
    } acc;
} inproc_ctx;

static void inproc_free(void *ctx);

static lt_status inproc_init(const lt_mesh *m, void **out) {
    inproc_ctx *c = lt__calloc(1, sizeof *c);
    if (!c) return lt__err(LT_NOMEM, "inproc engine: out of memory");
    c->world = m->world;
    c->src = lt__calloc((size_t)m->world, sizeof *c->src);
    c->tmp = lt__calloc((size_t)m->world, sizeof *c->tmp);
    c->dst = lt__calloc((size_t)m->world, sizeof *c->dst);
    c->off = lt__calloc((size_t)m->world, sizeof *c->off);
    if (!c->src || !c->tmp || !c->dst || !c->off) {
        inproc_free(c);
        return lt__err(LT_NOMEM, "inproc engine: out of memory");
    }
    *out = c;
    return LT_OK;
}

static void inproc_free(void *ctx) {
    inproc_ctx *c = ctx;
    if (!c) return;
    lt__free(c->src);
    lt__free(c->tmp);
    lt__free(c->dst);
    lt__free(c->off);
    lt__free(c);
}

/* ---- copies ---------------------------------------------------------------- */

/* memcpy that bypasses the cache (dst need not be aligned) */
static void stream_copy(char *d, const char *s, size_t n) {
#if defined(__SSE2__)
    size_t head = (size_t)(-(uintptr_t)d & 63);
    if (head > n) head = n;
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
        __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
        _mm_stream_si128((__m128i *)(void *)d, a);
        _mm_stream_si128((__m128i *)(void *)(d + 16), b);
        _mm_stream_si128((__m128i *)(void *)(d + 32), x);
        _mm_stream_si128((__m128i *)(void *)(d + 48), y);
    }
#endif
    memcpy(d, s, n);
}

static void bulk_copy(int nt, void *dst, const void *src, size_t n) {
    if (nt && n >= NT_RUN) stream_copy(dst, src, n);
    else if (n) memcpy(dst, src, n);
}

/* Decides the copy mode from the bytes the group writes. */
static void nt_begin(inproc_ctx *c, const lt_coll_group *g, lt_tensor *const *out) {
    size_t total = 0;
    for (int p = 0; p < g->size; p++) total += lt_nbytes(out[g->ranks[p]]);
    c->nt = total >= NT_MIN;
}

/* Orders the streaming stores before whatever follows. */
static void nt_end(inproc_ctx *c) {
#if defined(__SSE2__)
    if (c->nt) _mm_sfence();
#endif
    c->nt = 0;
}

static char *data_of(const lt_tensor *t) { return lt_data(t); }

/* Row-major strides (elements) of t's shape. */
static void rm_strides(const lt_tensor *t, int64_t *st) {
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        st[i] = s;
        s *= t->shape[i];
    }
}

/* Copies a box of shape[nd] elements of es bytes from src (strides sstr, in
 * elements) to dst (strides dstr). Dims of size 1 are dropped and adjacent
 * dims that are contiguous in both are merged, so dense boxes become one
 * memcpy and row blocks become one memcpy per row block. */
static void box_copy(int nt, size_t es, int nd, const int64_t *shape, char *dst, const int64_t *dstr,
                     const char *src, const int64_t *sstr) {
    int64_t sh[LT_MAX_DIMS], ds[LT_MAX_DIMS], ss[LT_MAX_DIMS];
    int m = 0;
    for (int i = 0; i < nd; i++) {
        if (shape[i] == 0) return;
        if (shape[i] == 1) continue;
        if (m > 0 && ds[m - 1] == dstr[i] * shape[i] && ss[m - 1] == sstr[i] * shape[i]) {
            sh[m - 1] *= shape[i];
            ds[m - 1] = dstr[i];
            ss[m - 1] = sstr[i];
        } else {
            sh[m] = shape[i];
            ds[m] = dstr[i];
            ss[m] = sstr[i];
            m++;
        }
    }
    if (m == 0) {
        memcpy(dst, src, es);
        return;
    }
    int inner_dense = ds[m - 1] == 1 && ss[m - 1] == 1;
    int64_t run = sh[m - 1];
    int64_t idx[LT_MAX_DIMS] = {0};
    for (;;) {
        if (inner_dense) {
            bulk_copy(nt, dst, src, (size_t)run * es);
        } else {
            char *d = dst;
            const char *s = src;
            for (int64_t k = 0; k < run; k++) {
                memcpy(d, s, es);
                d += ds[m - 1] * (int64_t)es;
                s += ss[m - 1] * (int64_t)es;
            }
        }
        /* advance the outer counters (dims 0..m-2) */
        int i = m - 2;
        for (; i >= 0; i--) {
            idx[i]++;
            dst += ds[i] * (int64_t)es;
            src += ss[i] * (int64_t)es;
            if (idx[i] < sh[i]) break;
            dst -= ds[i] * sh[i] * (int64_t)es;
            src -= ss[i] * sh[i] * (int64_t)es;
            idx[i] = 0;
        }
        if (i < 0) return;
    }
}

/* 1 when a box of this shape holds no element. An empty box is never
 * addressed: its offsets can lie far outside any buffer (a (0, 2^62) piece
 * starts 2^62 elements in) and would overflow. */
static int box_empty(int nd, const int64_t *shape) {
    for (int i = 0; i < nd; i++)
        if (shape[i] == 0) return 1;
    return 0;
}

/* Copies all of src (any strides) into the box of dst (contiguous) that
 * starts at `start` along dim d and has src's shape. */
static void copy_into(int nt, lt_tensor *dst, int d, int64_t start, const lt_tensor *src) {
    if (box_empty(src->ndim, src->shape)) return;
    int64_t dstr[LT_MAX_DIMS];
    rm_strides(dst, dstr);
    size_t es = lt_dtype_size(dst->dtype);
    char *base = data_of(dst) + (d >= 0 ? start * dstr[d] * (int64_t)es : 0);
    box_copy(nt, es, src->ndim, src->shape, base, dstr, data_of(src), src->strides);
}

/* Copies the piece of src that starts at `start` along dim d (of length
 * dst->shape[d]) into all of dst (contiguous). */
static void copy_piece(int nt, lt_tensor *dst, const lt_tensor *src, int d, int64_t start) {
    if (box_empty(dst->ndim, dst->shape)) return;
    int64_t dstr[LT_MAX_DIMS];
    rm_strides(dst, dstr);
    size_t es = lt_dtype_size(dst->dtype);
    const char *base = data_of(src) + start * src->strides[d] * (int64_t)es;
    box_copy(nt, es, dst->ndim, dst->shape, data_of(dst), dstr, base, src->strides);
}

/* ---- reductions ------------------------------------------------------------- */

static inline float bf16_load(const uint16_t *p) {
    uint32_t u = (uint32_t)*p << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#define FLOAT_OPS(T, acc, s, m, op)                                                         \
    do {                                                                                   \
        switch (op) {                                                                      \
        case LT_REDOP_SUM:                                                                 \
        case LT_REDOP_AVG: for (int64_t k = 0; k < (m); k++) acc[k] += (T)(s); break;      \
        case LT_REDOP_MAX:                                                                 \
            for (int64_t k = 0; k < (m); k++) {                                            \
                T v_ = (T)(s);                                                             \
                acc[k] = (v_ > acc[k] || v_ != v_) ? v_ : acc[k];                          \
            }                                                                              \
            break;                                                                         \
        case LT_REDOP_MIN:                                                                 \
            for (int64_t k = 0; k < (m); k++) {                                            \
                T v_ = (T)(s);                                                             \
                acc[k] = (v_ < acc[k] || v_ != v_) ? v_ : acc[k];                          \
            }                                                                              \
            break;                                                                         \
        case LT_REDOP_PRODUCT: for (int64_t k = 0; k < (m); k++) acc[k] *= (T)(s); break;  \
        default: break;                                                                    \
        }                                                                                  \
    } while (0)

/* acc = widen(s[0..m)) */
static void acc_init(inproc_ctx *c, lt_dtype dt, const char *s, int64_t m) {
    switch (dt) {
    case LT_F32: memcpy(c->acc.f, s, (size_t)m * 4); break;
    case LT_F64: memcpy(c->acc.d, s, (size_t)m * 8); break;
    case LT_BF16: for (int64_t k = 0; k < m; k++) c->acc.f[k] = bf16_load((const uint16_t *)s + k); break;
    case LT_F16: for (int64_t k = 0; k < m; k++) c->acc.f[k] = lt_f16_to_f32(((const uint16_t *)s)[k]); break;
    case LT_I32: for (int64_t k = 0; k < m; k++) c->acc.i[k] = ((const int32_t *)s)[k]; break;
    case LT_I64: memcpy(c->acc.u, s, (size_t)m * 8); break;
    case LT_BOOL: for (int64_t k = 0; k < m; k++) c->acc.b[k] = s[k] != 0; break;
    default: break;
    }
}

/* acc = acc op widen(s[0..m)) */
static void acc_comb(inproc_ctx *c, lt_dtype dt, lt_redop op, const char *s, int64_t m) {
    switch (dt) {
    case LT_F32: {
        float *a = c->acc.f;
        const float *x = (const float *)s;
        FLOAT_OPS(float, a, x[k], m, op);
        break;
    }
    case LT_F64: {
        double *a = c->acc.d;
        const double *x = (const double *)s;
        FLOAT_OPS(double, a, x[k], m, op);
        break;
    }
    case LT_BF16: {
        float *a = c->acc.f;
        const uint16_t *x = (const uint16_t *)s;
        FLOAT_OPS(float, a, bf16_load(x + k), m, op);
        break;
    }
    case LT_F16: {
        float *a = c->acc.f;
        const uint16_t *x = (const uint16_t *)s;
        FLOAT_OPS(float, a, lt_f16_to_f32(x[k]), m, op);
        break;
    }
    case LT_I32: {
        int64_t *a = c->acc.i;
        const int32_t *x = (const int32_t *)s;
        switch (op) {
        case LT_REDOP_SUM: /* exact in int64 for any group of <= 2^32 members */
        case LT_REDOP_AVG: for (int64_t k = 0; k < m; k++) a[k] += x[k]; break;
        case LT_REDOP_MAX: for (int64_t k = 0; k < m; k++) a[k] = x[k] > a[k] ? x[k] : a[k]; break;
        case LT_REDOP_MIN: for (int64_t k = 0; k < m; k++) a[k] = x[k] < a[k] ? x[k] : a[k]; break;
        case LT_REDOP_PRODUCT: /* wraps: the low 32 bits are exact in uint64 */
            for (int64_t k = 0; k < m; k++) a[k] = (int64_t)(uint32_t)((uint64_t)a[k] * (uint64_t)(int64_t)x[k]);
            break;
        default: break;
        }
        break;
    }
    case LT_I64: {
        uint64_t *a = c->acc.u;
        const int64_t *x = (const int64_t *)s;
        switch (op) {
        case LT_REDOP_SUM:
        case LT_REDOP_AVG: for (int64_t k = 0; k < m; k++) a[k] += (uint64_t)x[k]; break;
        case LT_REDOP_MAX: for (int64_t k = 0; k < m; k++) if (x[k] > (int64_t)a[k]) a[k] = (uint64_t)x[k]; break;
        case LT_REDOP_MIN: for (int64_t k = 0; k < m; k++) if (x[k] < (int64_t)a[k]) a[k] = (uint64_t)x[k]; break;
        case LT_REDOP_PRODUCT: for (int64_t k = 0; k < m; k++) a[k] *= (uint64_t)x[k]; break;
        default: break;
        }
        break;
    }
    case LT_BOOL: {
        uint8_t *a = c->acc.b;
        if (op == LT_REDOP_SUM || op == LT_REDOP_MAX)
            for (int64_t k = 0; k < m; k++) a[k] |= s[k] != 0;
        else
            for (int64_t k = 0; k < m; k++) a[k] &= s[k] != 0;
        break;
    }
    default: break;
    }
}

/* acc = (acc + s1) + s2 for f32/f64 (the same order as two acc_comb);
 * returns 0 (doing nothing) for other dtypes. */
static int acc_comb2(inproc_ctx *c, lt_dtype dt, const char *s1, const char *s2, int64_t m) {
    if (dt == LT_F32) {
        float *a = c->acc.f;
        const float *x = (const float *)s1, *y = (const float *)s2;
        for (int64_t k = 0; k < m; k++) a[k] = (a[k] + x[k]) + y[k];
        return 1;
    }
    if (dt == LT_F64) {
        double *a = c->acc.d;
        const double *x = (const double *)s1, *y = (const double *)s2;
        for (int64_t k = 0; k < m; k++) a[k] = (a[k] + x[k]) + y[k];
        return 1;
    }
    return 0;
}

/* dst[0..m) = narrow(acc) (avg divides by n first) */
static void acc_store(inproc_ctx *c, lt_dtype dt, lt_redop op, int n, char *dst, int64_t m) {
    int avg = op == LT_REDOP_AVG;
    switch (dt) {
    case LT_F32:
        if (avg) for (int64_t k = 0; k < m; k++) c->acc.f[k] /= (float)n;
        memcpy(dst, c->acc.f, (size_t)m * 4);
        break;
    case LT_F64:
        if (avg) for (int64_t k = 0; k < m; k++) c->acc.d[k] /= (double)n;
        memcpy(dst, c->acc.d, (size_t)m * 8);
        break;
    case LT_BF16:
        for (int64_t k = 0; k < m; k++)
            ((uint16_t *)dst)[k] = lt_f32_to_bf16(avg ? c->acc.f[k] / (float)n : c->acc.f[k]);
        break;
    case LT_F16:
        for (int64_t k = 0; k < m; k++)
            ((uint16_t *)dst)[k] = lt_f32_to_f16(avg ? c->acc.f[k] / (float)n : c->acc.f[k]);
        break;
    case LT_I32:
        for (int64_t k = 0; k < m; k++) {
            int64_t v = avg ? c->acc.i[k] / n : c->acc.i[k];
            uint32_t w = (uint32_t)(uint64_t)v; /* wrap to 32 bits */
            memcpy(dst + 4 * k, &w, 4);
        }
        break;
    case LT_I64:
        if (avg)
            for (int64_t k = 0; k < m; k++) {
                int64_t v;
                memcpy(&v, &c->acc.u[k], 8);
                v /= n;
                memcpy(&c->acc.u[k], &v, 8);
            }
        memcpy(dst, c->acc.u, (size_t)m * 8);
        break;
    case LT_BOOL: memcpy(dst, c->acc.b, (size_t)m); break;
    default: break;
    }
}

/* dst[0..count) = op over c->src[0..n)[off..off+count) (element offsets);
 * for each finished block also copies it to extra[0..nextra). */
static void reduce_run(inproc_ctx *c, lt_dtype dt, lt_redop op, int n, int64_t off, int64_t count,
                       char *dst, char *const *extra, int nextra) {
    size_t es = lt_dtype_size(dt);
    for (int64_t b = 0; b < count; b += BLK) {
        int64_t m = count - b < BLK ? count - b : BLK;
        size_t at = (size_t)(off + b) * es;
        acc_init(c, dt, c->src[0] + at, m);
        int i = 1;
        if (op == LT_REDOP_SUM || op == LT_REDOP_AVG) /* two inputs per pass: half the acc traffic */
            for (; i + 1 < n && acc_comb2(c, dt, c->src[i] + at, c->src[i + 1] + at, m); i += 2) {}
        for (; i < n; i++) acc_comb(c, dt, op, c->src[i] + at, m);
        size_t nb = (size_t)m * es, to = (size_t)b * es;
        if (c->nt) { /* stage the block, then stream it to every output */
            acc_store(c, dt, op, n, (char *)c->stage, m);
            bulk_copy(1, dst + to, c->stage, nb);
            for (int e = 0; e < nextra; e++) bulk_copy(1, extra[e] + to, c->stage, nb);
        } else {
            acc_store(c, dt, op, n, dst + to, m);
            for (int e = 0; e < nextra; e++) memcpy(extra[e] + to, dst + to, nb);
        }
    }
}

/* Points c->src at every member's data, copying strided inputs first. */
static lt_status gather_sources(inproc_ctx *c, const lt_coll_group *g, lt_tensor *const *in) {
    for (int p = 0; p < g->size; p++) {
        const lt_tensor *t = in[g->ranks[p]];
        c->tmp[p] = NULL;
        if (!lt_is_contiguous(t)) {
            lt_status st = lt_contiguous(t, &c->tmp[p]);
            if (st) {
                for (int q = 0; q < p; q++) { lt_tensor_free(c->tmp[q]); c->tmp[q] = NULL; }
                return st;
            }
            t = c->tmp[p];
        }
        c->src[p] = data_of(t);
    }
    return LT_OK;
}

static void release_sources(inproc_ctx *c, int n) {
    for (int p = 0; p < n; p++) {
        lt_tensor_free(c->tmp[p]);
        c->tmp[p] = NULL;
    }
}

/* ---- the collectives -------------------------------------------------------- */

/* out[first] gets the concatenation, the others a copy of it */
static lt_status inproc_all_gather(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                   lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    nt_begin(c, g, out);
    lt_tensor *first = out[g->ranks[0]];
    int64_t at = 0;
    for (int p = 0; p < g->size; p++) {
        const lt_tensor *t = in[g->ranks[p]];
        copy_into(c->nt, first, g->dim, at, t);
        at += t->shape[g->dim];
    }
    size_t nb = lt_nbytes(first);
    for (int p = 1; p < g->size; p++)   /* a member sharing first's buffer has it already */
        if (data_of(out[g->ranks[p]]) != data_of(first)) bulk_copy(c->nt, data_of(out[g->ranks[p]]), data_of(first), nb);
    nt_end(c);
    return LT_OK;
}

/* one fused pass into out[first]; each block goes to the others while hot */
static lt_status inproc_all_reduce(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                   lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    lt_tensor *first = out[g->ranks[0]];
    int64_t count = lt_numel(first);
    if (count == 0) return LT_OK;
    LT_TRY(gather_sources(c, g, in));
    nt_begin(c, g, out);
    int nextra = 0;   /* members sharing first's buffer have the result already */
    for (int p = 1; p < g->size; p++)
        if (data_of(out[g->ranks[p]]) != data_of(first)) c->dst[nextra++] = data_of(out[g->ranks[p]]);
    reduce_run(c, first->dtype, g->op, g->size, 0, count, data_of(first), c->dst, nextra);
    nt_end(c);
    release_sources(c, g->size);
    return LT_OK;
}

static lt_status inproc_reduce(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                               lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    lt_tensor *dst = out[g->ranks[g->root]];
    int64_t count = lt_numel(dst);
    if (count == 0) return LT_OK;
    LT_TRY(gather_sources(c, g, in));
    nt_begin(c, g, out);
    reduce_run(c, dst->dtype, g->op, g->size, 0, count, data_of(dst), NULL, 0);
    nt_end(c);
    release_sources(c, g->size);
    return LT_OK;
}

/* member j's piece is, for every index of the dims before `dim`, one
 * contiguous run of the (virtual) reduced tensor */
static lt_status inproc_reduce_scatter(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                       lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    const lt_tensor *t0 = in[g->ranks[0]];
    int d = g->dim;
    if (box_empty(t0->ndim, t0->shape)) return LT_OK; /* before the products: other dims may be huge */
    int64_t outer = 1, inner = 1, dsize = t0->shape[d];
    for (int i = 0; i < d; i++) outer *= t0->shape[i];
    for (int i = d + 1; i < t0->ndim; i++) inner *= t0->shape[i];
    LT_TRY(gather_sources(c, g, in));
    nt_begin(c, g, out);
    size_t es = lt_dtype_size(t0->dtype);
    int64_t start = 0;
    for (int j = 0; j < g->size; j++) {
        int64_t len = g->sizes[j] * inner;
        char *dst = data_of(out[g->ranks[j]]);
        for (int64_t o = 0; o < outer && len > 0; o++)
            reduce_run(c, t0->dtype, g->op, g->size, o * dsize * inner + start * inner, len,
                       dst + (size_t)(o * len) * es, NULL, 0);
        start += g->sizes[j];
    }
    nt_end(c);
    release_sources(c, g->size);
    return LT_OK;
}

/* piece (i -> j) is a box of member i's shard, copied into member j's
 * output at the running offset along the concat dim */
static lt_status inproc_all_to_all(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                   lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    int n = g->size, sd = g->dim, cd = g->concat_dim;
    nt_begin(c, g, out);
    for (int i = 0; i < n; i++) c->off[i] = 0;
    for (int j = 0; j < n; j++) {
        lt_tensor *dst = out[g->ranks[j]];
        int64_t dstr[LT_MAX_DIMS];
        rm_strides(dst, dstr);
        size_t es = lt_dtype_size(dst->dtype);
        int64_t cat_at = 0;
        for (int i = 0; i < n; i++) {
            const lt_tensor *src = in[g->ranks[i]];
            int64_t box[LT_MAX_DIMS];
            memcpy(box, src->shape, sizeof box);
            int64_t soff = c->off[i];
            box[sd] = g->sizes[i * n + j];
            c->off[i] += box[sd];
            if (!box_empty(src->ndim, box))
                box_copy(c->nt, es, src->ndim, box, data_of(dst) + cat_at * dstr[cd] * (int64_t)es, dstr,
                         data_of(src) + soff * src->strides[sd] * (int64_t)es, src->strides);
            cat_at += box[cd];
        }
    }
    nt_end(c);
    return LT_OK;
}

static lt_status inproc_broadcast(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                  lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    const lt_tensor *src = in[g->ranks[g->root]];
    nt_begin(c, g, out);
    for (int p = 0; p < g->size; p++) {
        lt_tensor *dst = out[g->ranks[p]];
        if (data_of(dst) == data_of(src) && lt_is_contiguous(src)) continue; /* in place */
        if (p > 0 && data_of(dst) == data_of(out[g->ranks[0]])) continue;   /* shares member 0's result */
        copy_into(c->nt, dst, -1, 0, src);
    }
    nt_end(c);
    return LT_OK;
}

static lt_status inproc_scatter(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    const lt_tensor *src = in[g->ranks[g->root]];
    nt_begin(c, g, out);
    int64_t start = 0;
    for (int j = 0; j < g->size; j++) {
        copy_piece(c->nt, out[g->ranks[j]], src, g->dim, start);
        start += g->sizes[j];
    }
    nt_end(c);
    return LT_OK;
}

static lt_status inproc_gather(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                               lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    lt_tensor *dst = out[g->ranks[g->root]];
    nt_begin(c, g, out);
    int64_t at = 0;
    for (int p = 0; p < g->size; p++) {
        const lt_tensor *t = in[g->ranks[p]];
        copy_into(c->nt, dst, g->dim, at, t);
        at += t->shape[g->dim];
    }
    nt_end(c);
    return LT_OK;
}

static lt_status inproc_permute(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    nt_begin(c, g, out);
    for (int i = 0; i < g->size; i++)
        copy_into(c->nt, out[g->ranks[g->perm[i]]], -1, 0, in[g->ranks[i]]);
    nt_end(c);
    return LT_OK;
}

static const lt_engine_i inproc_iface = {
    /* .version        = */ LT_ENGINE_API_VERSION,
    /* .name           = */ "inproc",
    /* .init           = */ inproc_init,
    /* .free           = */ inproc_free,
    /* .all_gather     = */ inproc_all_gather,
    /* .all_reduce     = */ inproc_all_reduce,
    /* .reduce_scatter = */ inproc_reduce_scatter,
    /* .all_to_all     = */ inproc_all_to_all,
    /* .broadcast      = */ inproc_broadcast,
    /* .scatter        = */ inproc_scatter,
    /* .gather         = */ inproc_gather,
    /* .reduce         = */ inproc_reduce,
    /* .permute        = */ inproc_permute,
    /* .barrier        = */ NULL, /* nothing to wait for in one process */
};

const lt_engine_i *lt_engine_inproc(void) { return &inproc_iface; }
