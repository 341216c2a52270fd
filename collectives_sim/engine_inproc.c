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
 * Threads (kernels/pool_impl.h): the groups of one call may run at the same
 * time (collectives.c does that for this engine only), so every piece of
 * per-call state lives in a lane, one per pool slot, never in the context
 * itself; lane 0 is made with the context, the others by the first piece
 * of work that runs on their slot. A call that is not itself running inside
 * a parallel section splits a reduction or a copy of at least two pieces
 * (lt__inproc_piece_bytes(), engine_impl.h) into element ranges and
 * sub-boxes of about a piece each (at most LT__INPROC_PIECES_PER_THREAD per
 * thread, handed out one by one), so one group also uses every thread. Splitting never changes a
 * result: each output element is still reduced from member 0, 1, 2, ... in that order, with the
 * same arithmetic, by exactly one piece.
 *
 * Reduction semantics: group order (member 0 first); f32 accumulates in f32,
 * f64 in f64, bf16/f16 in f32 rounded once at the end; i32/i64 sum and
 * product wrap (two's complement, as torch does) and avg is the exact sum
 * divided by the group size, truncated toward zero; bool: sum and max are
 * logical or, product and min logical and (avg on bool is rejected by the
 * wrapper).
 */
#include "localtensor/collectives_sim/engine.h"
#include "collectives_sim/engine_impl.h"
#include "kernels/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "localtensor/kernels/dtype.h"
#include "kernels/pool_impl.h"
#include "kernels/status_impl.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define BLK 16384 /* elements per reduction block: 128 KiB of 8-byte accumulators (L2) */
#define NT_MIN (16u << 20)     /* group output bytes from which copies stream past the cache */
#define NT_RUN 1024            /* shortest copy worth streaming */
#define RED_ALIGN 256          /* reduction pieces start on multiples of this many elements */

/* The scratch of one pool slot: what one group's call (or one piece of a
 * split call) works in. */
typedef struct lane {
    const char **src;           /* (world) per-member input data of the current reduction */
    lt_tensor **tmp;            /* (world) contiguous copies of strided inputs, or NULL */
    char **dst;                 /* (world) output data pointers of the current call */
    int64_t *off;               /* (world + 1) running split offsets (all_to_all, reduce_scatter) */
    struct citem *items;        /* (icap) the copies of a call split across threads */
    int64_t icap;
    unsigned char stage[BLK * 8]; /* a reduced block in its final dtype (streaming path) */
    union {
        float f[BLK];
        double d[BLK];
        int64_t i[BLK];
        uint64_t u[BLK];
        uint8_t b[BLK];
    } acc;
} lane;

typedef struct inproc_ctx {
    int world;
    lane *lanes[LT_THREADS_MAX]; /* by pool slot; [0] made by init, the others on first use */
} inproc_ctx;

static void inproc_free(void *ctx);

static void lane_free(lane *l) {
    if (!l) return;
    lt__free(l->src);
    lt__free(l->tmp);
    lt__free(l->dst);
    lt__free(l->off);
    lt__free(l->items);
    lt__free(l);
}

static lane *lane_new(int world) {
    lane *l = lt__malloc(sizeof *l);
    if (!l) return NULL;
    l->items = NULL;
    l->icap = 0;
    l->src = lt__calloc((size_t)world, sizeof *l->src);
    l->tmp = lt__calloc((size_t)world, sizeof *l->tmp);
    l->dst = lt__calloc((size_t)world, sizeof *l->dst);
    l->off = lt__calloc((size_t)world + 1, sizeof *l->off);
    if (!l->src || !l->tmp || !l->dst || !l->off) {
        lane_free(l);
        return NULL;
    }
    return l;
}

/* The calling thread's lane (made on first use; only its slot's thread
 * touches it, so no lock). LT_NOMEM with a message when it cannot be made. */
static lt_status lane_get(inproc_ctx *c, lane **out) {
    int s = lt__pool_slot();
    if (!c->lanes[s] && !(c->lanes[s] = lane_new(c->world)))
        return lt__err(LT_NOMEM, "inproc engine: out of memory for a worker's scratch");
    *out = c->lanes[s];
    return LT_OK;
}

static lt_status inproc_init(const lt_mesh *m, void **out) {
    inproc_ctx *c = lt__calloc(1, sizeof *c);
    if (!c) return lt__err(LT_NOMEM, "inproc engine: out of memory");
    c->world = m->world;
    if (!(c->lanes[0] = lane_new(m->world))) {
        inproc_free(c);
        return lt__err(LT_NOMEM, "inproc engine: out of memory");
    }
    *out = c;
    return LT_OK;
}

static void inproc_free(void *ctx) {
    inproc_ctx *c = ctx;
    if (!c) return;
    for (int s = 0; s < LT_THREADS_MAX; s++) lane_free(c->lanes[s]);
    lt__free(c);
}

size_t lt__inproc_piece_bytes(void) {
    size_t b = lt__par_min_bytes() / LT__INPROC_PIECE_DIV;
    return b ? b : 1;
}

/* How many pieces to split `bytes` of work into: 1 (run inline) when it is
 * less than two pieces or every other thread is busy (inside a parallel
 * section). */
static int64_t pieces_for(size_t bytes, int64_t max_pieces) {
    int w = lt__pool_width();
    size_t piece = lt__inproc_piece_bytes();
    if (w <= 1 || bytes / 2 < piece) return 1;
    int64_t p = (int64_t)(bytes / piece);
    if (p > (int64_t)w * LT__INPROC_PIECES_PER_THREAD)
        p = (int64_t)w * LT__INPROC_PIECES_PER_THREAD;
    if (p > max_pieces) p = max_pieces;
    return p < 1 ? 1 : p;
}

/* Start of piece i of n over [0, len), on multiples of `align`. */
static int64_t piece_at(int64_t len, int64_t n, int64_t i, int64_t align) {
    if (i >= n) return len;
    int64_t units = (len + align - 1) / align;
    int64_t at = units / n * i + (i < units % n ? i : units % n);
    at *= align;
    return at < len ? at : len;
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

/* The copy mode of a group's call, from the bytes the group writes: 1 for
 * streaming stores. */
static int nt_begin(const lt_coll_group *g, lt_tensor *const *out) {
    size_t total = 0;
    for (int p = 0; p < g->size; p++) total += lt_nbytes(out[g->ranks[p]]);
    return total >= NT_MIN;
}

/* Orders this thread's streaming stores before whatever follows (every
 * thread that streamed runs it before its piece of work ends). */
static void nt_end(int nt) {
#if defined(__SSE2__)
    if (nt) _mm_sfence();
#else
    (void)nt;
#endif
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

/* A box of elements after dropping dims of size 1 and merging adjacent
 * dims that are contiguous in both source and destination: m dims (0: one
 * element), strides in elements. */
typedef struct box {
    int m;
    int64_t sh[LT_MAX_DIMS], ds[LT_MAX_DIMS], ss[LT_MAX_DIMS];
} mbox;

/* Fills *b from shape[nd] with destination strides dstr and source strides
 * sstr; returns 0 when the box is empty. */
static int box_merge(int nd, const int64_t *shape, const int64_t *dstr, const int64_t *sstr,
                     mbox *b) {
    int m = 0;
    for (int i = 0; i < nd; i++) {
        if (shape[i] == 0) return 0;
        if (shape[i] == 1) continue;
        if (m > 0 && b->ds[m - 1] == dstr[i] * shape[i] && b->ss[m - 1] == sstr[i] * shape[i]) {
            b->sh[m - 1] *= shape[i];
            b->ds[m - 1] = dstr[i];
            b->ss[m - 1] = sstr[i];
        } else {
            b->sh[m] = shape[i];
            b->ds[m] = dstr[i];
            b->ss[m] = sstr[i];
            m++;
        }
    }
    b->m = m;
    return 1;
}

/* Copies a merged box of es-byte elements from src to dst: dense boxes
 * are one memcpy, row blocks one memcpy per row block. */
static void box_run(int nt, size_t es, const mbox *b, char *dst, const char *src) {
    int m = b->m;
    if (m == 0) {
        memcpy(dst, src, es);
        return;
    }
    const int64_t *sh = b->sh, *ds = b->ds, *ss = b->ss;
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

/* The copies of one call, when it is big enough to split: each box is cut
 * along its outermost merged dim into pieces (a share of the call's pieces
 * in proportion to its bytes), and every piece of
 * every box is one piece of work of a single parallel section. */
typedef struct citem {
    mbox b;
    char *dst;
    const char *src;
    int64_t first, pieces, align;   /* its pieces are [first, first + pieces) of the section */
} citem;

/* A call's copies: run at once (small calls, or no other thread free) or
 * collected in the lane and run by copier_finish. */
typedef struct copier {
    lane *L;
    int nt;
    size_t es;
    int batch;          /* 1: collect, then split across threads */
    int64_t n;          /* boxes collected */
    size_t bytes;       /* their bytes */
} copier;

/* A copier for a call whose outputs hold `bytes` in all (es-byte
 * elements); streaming stores from NT_MIN bytes on. */
static copier copier_begin(lane *L, size_t es, size_t bytes) {
    copier cp;
    cp.L = L;
    cp.nt = bytes >= NT_MIN;
    cp.es = es;
    cp.batch = pieces_for(bytes, INT64_MAX) > 1;
    cp.n = 0;
    cp.bytes = 0;
    return cp;
}

/* Copies a box of shape[nd] elements from src (strides sstr, in elements)
 * to dst (strides dstr), now or in copier_finish. LT_NOMEM (with a
 * message) when the lane's list cannot grow. */
static lt_status box_copy(copier *cp, int nd, const int64_t *shape, char *dst, const int64_t *dstr,
                          const char *src, const int64_t *sstr) {
    mbox b;
    if (!box_merge(nd, shape, dstr, sstr, &b)) return LT_OK;
    if (!cp->batch) {
        box_run(cp->nt, cp->es, &b, dst, src);
        return LT_OK;
    }
    lane *L = cp->L;
    if (cp->n == L->icap) {
        int64_t nc = L->icap ? 2 * L->icap : 64;
        citem *grown = lt__realloc(L->items, (size_t)nc * sizeof *grown);
        if (!grown) return lt__err(LT_NOMEM, "inproc engine: out of memory for the list of copies");
        L->items = grown;
        L->icap = nc;
    }
    citem *it = &L->items[cp->n++];
    it->b = b;
    it->dst = dst;
    it->src = src;
    size_t bytes = cp->es;
    for (int i = 0; i < b.m; i++) bytes *= (size_t)b.sh[i];
    it->first = (int64_t)bytes; /* its bytes, until copier_finish numbers the pieces */
    cp->bytes += bytes;
    return LT_OK;
}

typedef struct copy_job {
    const citem *items;     /* (n) */
    int64_t n;
    int nt;
    size_t es;
} copy_job;

static lt_status copy_task(void *ctx, int64_t t) {
    const copy_job *j = ctx;
    int64_t lo = 0, hi = j->n - 1;   /* the item whose pieces hold t */
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        if (j->items[mid].first <= t) lo = mid;
        else hi = mid - 1;
    }
    const citem *it = &j->items[lo];
    int64_t i = t - it->first;
    mbox b = it->b;
    int64_t len = b.m ? b.sh[0] : 1;
    int64_t at = piece_at(len, it->pieces, i, it->align),
            end = piece_at(len, it->pieces, i + 1, it->align);
    if (end > at) {
        int64_t ds = 0, ss = 0;
        if (b.m) {
            b.sh[0] = end - at;
            ds = b.ds[0];
            ss = b.ss[0];
        }
        box_run(j->nt, j->es, &b, it->dst + at * ds * (int64_t)j->es,
                it->src + at * ss * (int64_t)j->es);
    }
    nt_end(j->nt);
    return LT_OK;
}

/* Runs the collected copies as one parallel section. */
static lt_status copier_finish(copier *cp) {
    if (!cp->batch || cp->n == 0) return LT_OK;
    int64_t total = pieces_for(cp->bytes, INT64_MAX), next = 0;
    for (int64_t k = 0; k < cp->n; k++) {
        citem *it = &cp->L->items[k];
        size_t bytes = (size_t)it->first;
        it->align = it->b.m == 1 && cp->es < 4096 ? (int64_t)(4096 / cp->es)
                                                  : 1; /* a dense run splits on pages */
        int64_t units = it->b.m ? (it->b.sh[0] + it->align - 1) / it->align : 1;
        int64_t p = (int64_t)((double)total * (double)bytes / (double)cp->bytes + 0.5);
        if (p < 1) p = 1;
        if (p > units) p = units;
        it->first = next;
        it->pieces = p;
        next += p;
    }
    copy_job j = {cp->L->items, cp->n, cp->nt, cp->es};
    return lt__parallel_for(next, copy_task, &j); /* copy_task cannot fail */
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
 * starts at `start` along dim d (d < 0: all of dst) and has src's shape. */
static lt_status copy_into(copier *cp, lt_tensor *dst, int d, int64_t start, const lt_tensor *src) {
    if (box_empty(src->ndim, src->shape)) return LT_OK;
    int64_t dstr[LT_MAX_DIMS];
    rm_strides(dst, dstr);
    char *base = data_of(dst) + (d >= 0 ? start * dstr[d] * (int64_t)cp->es : 0);
    return box_copy(cp, src->ndim, src->shape, base, dstr, data_of(src), src->strides);
}

/* Copies the piece of src that starts at `start` along dim d (of length
 * dst->shape[d]) into all of dst (contiguous). */
static lt_status copy_piece(copier *cp, lt_tensor *dst, const lt_tensor *src, int d,
                            int64_t start) {
    if (box_empty(dst->ndim, dst->shape)) return LT_OK;
    int64_t dstr[LT_MAX_DIMS];
    rm_strides(dst, dstr);
    const char *base = data_of(src) + start * src->strides[d] * (int64_t)cp->es;
    return box_copy(cp, dst->ndim, dst->shape, data_of(dst), dstr, base, src->strides);
}

/* Bytes of the outputs of group g. */
static size_t group_out_bytes(const lt_coll_group *g, lt_tensor *const *out) {
    size_t total = 0;
    for (int p = 0; p < g->size; p++) total += lt_nbytes(out[g->ranks[p]]);
    return total;
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
static void acc_init(lane *c, lt_dtype dt, const char *s, int64_t m) {
    switch (dt) {
    case LT_F32: memcpy(c->acc.f, s, (size_t)m * 4); break;
    case LT_F64: memcpy(c->acc.d, s, (size_t)m * 8); break;
    case LT_BF16:
        for (int64_t k = 0; k < m; k++) c->acc.f[k] = bf16_load((const uint16_t *)s + k);
        break;
    case LT_F16:
        for (int64_t k = 0; k < m; k++) c->acc.f[k] = lt_f16_to_f32(((const uint16_t *)s)[k]);
        break;
    case LT_I32: for (int64_t k = 0; k < m; k++) c->acc.i[k] = ((const int32_t *)s)[k]; break;
    case LT_I64: memcpy(c->acc.u, s, (size_t)m * 8); break;
    case LT_BOOL: for (int64_t k = 0; k < m; k++) c->acc.b[k] = s[k] != 0; break;
    default: break;
    }
}

/* acc = acc op widen(s[0..m)) */
static void acc_comb(lane *c, lt_dtype dt, lt_redop op, const char *s, int64_t m) {
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
            for (int64_t k = 0; k < m; k++)
                a[k] = (int64_t)(uint32_t)((uint64_t)a[k] * (uint64_t)(int64_t)x[k]);
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
        case LT_REDOP_MAX:
            for (int64_t k = 0; k < m; k++)
                if (x[k] > (int64_t)a[k]) a[k] = (uint64_t)x[k];
            break;
        case LT_REDOP_MIN:
            for (int64_t k = 0; k < m; k++)
                if (x[k] < (int64_t)a[k]) a[k] = (uint64_t)x[k];
            break;
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
static int acc_comb2(lane *c, lt_dtype dt, const char *s1, const char *s2, int64_t m) {
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
static void acc_store(lane *c, lt_dtype dt, lt_redop op, int n, char *dst, int64_t m) {
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

/* One reduction run: dst[0..count) = op over src[0..n)[off..off+count)
 * (element offsets); every finished block also goes to extra[0..nextra). */
typedef struct red_job {
    inproc_ctx *c;
    const char *const *src;     /* (n) every member's data (the caller's lane) */
    lt_dtype dt;
    lt_redop op;
    int n;
    int64_t off, count;
    char *dst;                  /* (count) */
    char *const *extra;         /* (nextra) more outputs of the same values */
    int nextra;
    /* instead of dst (reduce_scatter): the run is `rows` rows of
     * count / rows elements, and outs[m] holds elements [out_at[m],
     * out_at[m + 1]) of every row, row after row, m < nouts (0: dst is
     * used) */
    int nouts;
    int64_t rows;
    char *const *outs;
    const int64_t *out_at;      /* (nouts + 1) */
    int nt;
    int64_t pieces;
} red_job;

/* Elements [a, e) of the run, block by block, in lane L's accumulator;
 * dst (and every extra output) holds the run's elements from `origin` on. */
static void reduce_span(lane *L, const red_job *j, int64_t a, int64_t e, char *dst,
                        int64_t origin) {
    lt_dtype dt = j->dt;
    lt_redop op = j->op;
    int n = j->n;
    size_t es = lt_dtype_size(dt);
    for (int64_t b = a; b < e; b += BLK) {
        int64_t m = e - b < BLK ? e - b : BLK;
        size_t at = (size_t)(j->off + b) * es;
        acc_init(L, dt, j->src[0] + at, m);
        int i = 1;
        if (op == LT_REDOP_SUM ||
            op == LT_REDOP_AVG) /* two inputs per pass: half the acc traffic */
            for (; i + 1 < n && acc_comb2(L, dt, j->src[i] + at, j->src[i + 1] + at, m); i += 2) {}
        for (; i < n; i++) acc_comb(L, dt, op, j->src[i] + at, m);
        size_t nb = (size_t)m * es, to = (size_t)(b - origin) * es;
        if (j->nt) { /* stage the block, then stream it to every output */
            acc_store(L, dt, op, n, (char *)L->stage, m);
            bulk_copy(1, dst + to, L->stage, nb);
            for (int x = 0; x < j->nextra; x++) bulk_copy(1, j->extra[x] + to, L->stage, nb);
        } else {
            acc_store(L, dt, op, n, dst + to, m);
            for (int x = 0; x < j->nextra; x++) memcpy(j->extra[x] + to, dst + to, nb);
        }
    }
}

/* Elements [a, e) of the run, into dst or the outputs that hold them. */
static void reduce_range(lane *L, const red_job *j, int64_t a, int64_t e) {
    if (!j->nouts) {
        reduce_span(L, j, a, e, j->dst, 0);
        return;
    }
    int64_t S = j->count / j->rows;   /* elements per row */
    size_t es = lt_dtype_size(j->dt);
    for (int64_t o = a / S; o < j->rows && o * S < e; o++)
        for (int m = 0; m < j->nouts; m++) {
            int64_t at = o * S + j->out_at[m], end = o * S + j->out_at[m + 1];
            int64_t lo = at > a ? at : a, hi = end < e ? end : e;
            int64_t len = j->out_at[m + 1] - j->out_at[m];
            if (lo < hi) reduce_span(L, j, lo, hi, j->outs[m] + (size_t)(o * len) * es, at);
        }
}

static lt_status reduce_task(void *ctx, int64_t i) {
    const red_job *j = ctx;
    lane *L = NULL;
    LT_TRY(lane_get(j->c, &L));
    reduce_range(L, j, piece_at(j->count, j->pieces, i, RED_ALIGN),
                 piece_at(j->count, j->pieces, i + 1, RED_ALIGN));
    nt_end(j->nt);
    return LT_OK;
}

/* Runs the reduction j (inline in lane L when small, else in pieces of
 * whole blocks across threads). LT_NOMEM when a worker's lane cannot be
 * made. */
static lt_status reduce_run(lane *L, red_job *j) {
    size_t bytes = (size_t)j->count * lt_dtype_size(j->dt) * (size_t)(j->n + 1 + j->nextra);
    j->pieces = pieces_for(bytes, (j->count + RED_ALIGN - 1) / RED_ALIGN);
    if (j->pieces <= 1) {
        reduce_range(L, j, 0, j->count);
        return LT_OK;
    }
    return lt__parallel_for(j->pieces, reduce_task, j);
}

/* Points L->src at every member's data, copying strided inputs first. */
static lt_status gather_sources(lane *L, const lt_coll_group *g, lt_tensor *const *in) {
    for (int p = 0; p < g->size; p++) {
        const lt_tensor *t = in[g->ranks[p]];
        L->tmp[p] = NULL;
        if (!lt_is_contiguous(t)) {
            lt_status st = lt_contiguous(t, &L->tmp[p]);
            if (st) {
                for (int q = 0; q < p; q++) { lt_tensor_free(L->tmp[q]); L->tmp[q] = NULL; }
                return st;
            }
            t = L->tmp[p];
        }
        L->src[p] = data_of(t);
    }
    return LT_OK;
}

static void release_sources(lane *L, int n) {
    for (int p = 0; p < n; p++) {
        lt_tensor_free(L->tmp[p]);
        L->tmp[p] = NULL;
    }
}

/* A reduction job over the group's members, in lane L. */
static red_job red_begin(inproc_ctx *c, lane *L, const lt_coll_group *g, lt_dtype dt, int nt) {
    red_job j;
    memset(&j, 0, sizeof j);
    j.c = c;
    j.src = L->src;
    j.dt = dt;
    j.op = g->op;
    j.n = g->size;
    j.nt = nt;
    return j;
}

/* ---- the collectives -------------------------------------------------------- */

/* out[first] gets the concatenation, the others a copy of it; split across
 * threads, every output gets the concatenation straight from the inputs
 * (so that no piece waits for another) */
static lt_status walk_all_gather(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                   lt_tensor *const *out) {
    lane *L = NULL;
    LT_TRY(lane_get(ctx, &L));
    lt_tensor *first = out[g->ranks[0]];
    copier cp = copier_begin(L, lt_dtype_size(first->dtype), group_out_bytes(g, out));
    lt_status st = LT_OK;
    for (int q = 0; q < (cp.batch ? g->size : 1) && !st; q++) {
        lt_tensor *dst = out[g->ranks[q]];
        if (q > 0 && data_of(dst) == data_of(first)) continue;   /* shares first's buffer */
        int64_t at = 0;
        for (int p = 0; p < g->size && !st; p++) {
            const lt_tensor *t = in[g->ranks[p]];
            st = copy_into(&cp, dst, g->dim, at, t);
            at += t->shape[g->dim];
        }
    }
    if (!st) st = copier_finish(&cp);
    for (int p = 1; p < g->size && !cp.batch && !st;
         p++) /* a member sharing first's buffer has it already */
        if (data_of(out[g->ranks[p]]) != data_of(first))
            st = copy_into(&cp, out[g->ranks[p]], -1, 0, first);
    nt_end(cp.nt);
    return st;
}

/* one fused pass into out[first]; each block goes to the others while hot */
static lt_status walk_all_reduce(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                   lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    lane *L = NULL;
    lt_tensor *first = out[g->ranks[0]];
    int64_t count = lt_numel(first);
    if (count == 0) return LT_OK;
    LT_TRY(lane_get(c, &L));
    LT_TRY(gather_sources(L, g, in));
    red_job j = red_begin(c, L, g, first->dtype, nt_begin(g, out));
    int nextra = 0;   /* members sharing first's buffer have the result already */
    for (int p = 1; p < g->size; p++)
        if (data_of(out[g->ranks[p]]) != data_of(first))
            L->dst[nextra++] = data_of(out[g->ranks[p]]);
    j.count = count;
    j.dst = data_of(first);
    j.extra = L->dst;
    j.nextra = nextra;
    lt_status st = reduce_run(L, &j);
    nt_end(j.nt);
    release_sources(L, g->size);
    return st;
}

static lt_status walk_reduce(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                               lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    lane *L = NULL;
    lt_tensor *dst = out[g->ranks[g->root]];
    int64_t count = lt_numel(dst);
    if (count == 0) return LT_OK;
    LT_TRY(lane_get(c, &L));
    LT_TRY(gather_sources(L, g, in));
    red_job j = red_begin(c, L, g, dst->dtype, nt_begin(g, out));
    j.count = count;
    j.dst = data_of(dst);
    lt_status st = reduce_run(L, &j);
    nt_end(j.nt);
    release_sources(L, g->size);
    return st;
}

/* member j's piece is, for every index of the dims before `dim` (a row),
 * one contiguous range of that row of the (virtual) reduced tensor */
static lt_status walk_reduce_scatter(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                       lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    lane *L = NULL;
    const lt_tensor *t0 = in[g->ranks[0]];
    int d = g->dim;
    if (box_empty(t0->ndim, t0->shape))
        return LT_OK; /* before the products: other dims may be huge */
    int64_t outer = 1, inner = 1, dsize = t0->shape[d];
    for (int i = 0; i < d; i++) outer *= t0->shape[i];
    for (int i = d + 1; i < t0->ndim; i++) inner *= t0->shape[i];
    LT_TRY(lane_get(c, &L));
    LT_TRY(gather_sources(L, g, in));
    red_job j = red_begin(c, L, g, t0->dtype, nt_begin(g, out));
    lt_status st = LT_OK;
    /* one run of `outer` rows of dsize * inner elements: member m's piece
     * is the same range of every row, so the run splits by element ranges
     * across threads however many rows there are */
    L->off[0] = 0;
    for (int m = 0; m < g->size; m++) {
        L->dst[m] = data_of(out[g->ranks[m]]);
        L->off[m + 1] = L->off[m] + g->sizes[m] * inner;
    }
    j.count = outer * dsize * inner;
    j.rows = outer;
    j.nouts = g->size;
    j.outs = L->dst;
    j.out_at = L->off;
    st = reduce_run(L, &j);
    nt_end(j.nt);
    release_sources(L, g->size);
    return st;
}

/* piece (i -> j) is a box of member i's shard, copied into member j's
 * output at the running offset along the concat dim */
static lt_status walk_all_to_all(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                   lt_tensor *const *out) {
    inproc_ctx *c = ctx;
    lane *L = NULL;
    LT_TRY(lane_get(c, &L));
    int n = g->size, sd = g->dim, cd = g->concat_dim;
    copier cp = copier_begin(L, lt_dtype_size(in[g->ranks[0]]->dtype), group_out_bytes(g, out));
    lt_status st = LT_OK;
    for (int i = 0; i < n; i++) L->off[i] = 0;
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
            int64_t soff = L->off[i];
            box[sd] = g->sizes[i * n + j];
            L->off[i] += box[sd];
            if (!box_empty(src->ndim, box) && !st)
                st = box_copy(&cp, src->ndim, box, data_of(dst) + cat_at * dstr[cd] * (int64_t)es,
                              dstr, data_of(src) + soff * src->strides[sd] * (int64_t)es,
                              src->strides);
            cat_at += box[cd];
        }
    }
    if (!st) st = copier_finish(&cp);
    nt_end(cp.nt);
    return st;
}

static lt_status walk_broadcast(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                  lt_tensor *const *out) {
    lane *L = NULL;
    LT_TRY(lane_get(ctx, &L));
    const lt_tensor *src = in[g->ranks[g->root]];
    copier cp = copier_begin(L, lt_dtype_size(src->dtype), group_out_bytes(g, out));
    lt_status st = LT_OK;
    for (int p = 0; p < g->size && !st; p++) {
        lt_tensor *dst = out[g->ranks[p]];
        if (data_of(dst) == data_of(src) && lt_is_contiguous(src)) continue; /* in place */
        if (p > 0 && data_of(dst) == data_of(out[g->ranks[0]]))
            continue; /* shares member 0's result */
        st = copy_into(&cp, dst, -1, 0, src);
    }
    if (!st) st = copier_finish(&cp);
    nt_end(cp.nt);
    return st;
}

static lt_status walk_scatter(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                lt_tensor *const *out) {
    lane *L = NULL;
    LT_TRY(lane_get(ctx, &L));
    const lt_tensor *src = in[g->ranks[g->root]];
    copier cp = copier_begin(L, lt_dtype_size(src->dtype), group_out_bytes(g, out));
    lt_status st = LT_OK;
    int64_t start = 0;
    for (int j = 0; j < g->size && !st; j++) {
        st = copy_piece(&cp, out[g->ranks[j]], src, g->dim, start);
        start += g->sizes[j];
    }
    if (!st) st = copier_finish(&cp);
    nt_end(cp.nt);
    return st;
}

static lt_status walk_gather(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                               lt_tensor *const *out) {
    lane *L = NULL;
    LT_TRY(lane_get(ctx, &L));
    lt_tensor *dst = out[g->ranks[g->root]];
    copier cp = copier_begin(L, lt_dtype_size(dst->dtype), group_out_bytes(g, out));
    lt_status st = LT_OK;
    int64_t at = 0;
    for (int p = 0; p < g->size && !st; p++) {
        const lt_tensor *t = in[g->ranks[p]];
        st = copy_into(&cp, dst, g->dim, at, t);
        at += t->shape[g->dim];
    }
    if (!st) st = copier_finish(&cp);
    nt_end(cp.nt);
    return st;
}

static lt_status walk_permute(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                lt_tensor *const *out) {
    lane *L = NULL;
    LT_TRY(lane_get(ctx, &L));
    copier cp = copier_begin(L, lt_dtype_size(in[g->ranks[0]]->dtype), group_out_bytes(g, out));
    lt_status st = LT_OK;
    for (int i = 0; i < g->size && !st; i++)
        st = copy_into(&cp, out[g->ranks[g->perm[i]]], -1, 0, in[g->ranks[i]]);
    if (!st) st = copier_finish(&cp);
    nt_end(cp.nt);
    return st;
}

/* The table's entries: shards on a backend that runs kernels (cuda,
 * cuda-emu: memory the host must not read) go to the kernel path
 * (engine_kernels.c) whoever calls — collectives.c, or an engine built from
 * this table that calls an entry itself; host shards to the walks above. */
#define INPROC_ENTRY(op)                                                                           \
    static lt_status inproc_##op(void *ctx, const lt_coll_group *g, lt_tensor *const *in,          \
                                 lt_tensor *const *out) {                                          \
        lt_coll_fn k = lt__engine_kernels_fn(NULL, inproc_##op, g, in, out);                       \
        return k != inproc_##op ? k(ctx, g, in, out) : walk_##op(ctx, g, in, out);                 \
    }
INPROC_ENTRY(all_gather)
INPROC_ENTRY(all_reduce)
INPROC_ENTRY(reduce)
INPROC_ENTRY(reduce_scatter)
INPROC_ENTRY(all_to_all)
INPROC_ENTRY(broadcast)
INPROC_ENTRY(scatter)
INPROC_ENTRY(gather)
INPROC_ENTRY(permute)
#undef INPROC_ENTRY

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
    /* .agree          = */ NULL,  /* one process: nothing to agree on */
    /* .holds          = */ NULL,  /* every rank */
    /* .owner          = */ NULL,  /* process 0 */
    /* .send_recv      = */ NULL,  /* a copy, made by the wrapper */
};

const lt_engine_i *lt_engine_inproc(void) { return &inproc_iface; }
