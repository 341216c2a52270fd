/* collectives_sim/engine_kernels.c — the in-process engine for shards on a
 * backend that runs kernels (cuda, cuda-emu): every copy is the backend's
 * strided copy kernel, every reduction one kernel launch over all members.
 *
 * Why it exists: the in-process engine (engine_inproc.c) walks the shards'
 * memory on the host; shards in device memory must move device to device and
 * be reduced on the device. collectives.c hands a group here (through
 * lt__engine_kernels_fn) when an in-process engine function would run and the
 * group's shards live on such a backend; the results are the in-process
 * engine's exactly (lt__k_coll_reduce has its reduction semantics; the test
 * suite runs the scenario library on cuda-emu through this file).
 *
 * Same contract as every engine (collectives_sim/engine.h): outputs are
 * contiguous with the result's shape and dtype. Allocates only contiguous
 * copies of strided reduction inputs (freed before returning).
 */
#include "collectives_sim/engine_impl.h"

#include <string.h>

#include "kernels/alloc.h"
#include "kernels/cuda/kern.h"
#include "kernels/status_impl.h"
#include "kernels/tensor_impl.h"

/* A borrowed header (never freed): t restricted to [start, start + len) of
 * dim d (d < 0: all of t). */
static lt_tensor slab(const lt_tensor *t, int d, int64_t start, int64_t len) {
    lt_tensor v = *t;
    v.placeholder = 0;
    if (d >= 0) {
        v.shape[d] = len;
        v.offset += start * v.strides[d];
    }
    return v;
}

/* All of src into the box of dst at `start` along d with src's shape. */
static lt_status copy_into(lt_tensor *dst, int d, int64_t start, const lt_tensor *src) {
    lt_tensor v = slab(dst, d, start, d >= 0 ? src->shape[d] : 0);
    return lt_copy(&v, src);
}

static lt_status k_all_gather(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                              lt_tensor *const *out) {
    (void)ctx;
    lt_tensor *first = out[g->ranks[0]];
    int64_t at = 0;
    for (int p = 0; p < g->size; p++) {
        const lt_tensor *t = in[g->ranks[p]];
        LT_TRY(copy_into(first, g->dim, at, t));
        at += t->shape[g->dim];
    }
    for (int p = 1; p < g->size; p++) LT_TRY(lt_copy(out[g->ranks[p]], first));
    return LT_OK;
}

static lt_status k_gather(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                          lt_tensor *const *out) {
    (void)ctx;
    lt_tensor *dst = out[g->ranks[g->root]];
    int64_t at = 0;
    for (int p = 0; p < g->size; p++) {
        const lt_tensor *t = in[g->ranks[p]];
        LT_TRY(copy_into(dst, g->dim, at, t));
        at += t->shape[g->dim];
    }
    return LT_OK;
}

static lt_status k_broadcast(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                             lt_tensor *const *out) {
    (void)ctx;
    const lt_tensor *src = in[g->ranks[g->root]];
    for (int p = 0; p < g->size; p++)
        LT_TRY(lt_copy(out[g->ranks[p]], src)); /* in place: a no-op */
    return LT_OK;
}

static lt_status k_scatter(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                           lt_tensor *const *out) {
    (void)ctx;
    const lt_tensor *src = in[g->ranks[g->root]];
    int64_t start = 0;
    for (int j = 0; j < g->size; j++) {
        lt_tensor *dst = out[g->ranks[j]];
        lt_tensor piece = slab(src, g->dim, start, dst->shape[g->dim]);
        LT_TRY(lt_copy(dst, &piece));
        start += g->sizes[j];
    }
    return LT_OK;
}

static lt_status k_permute(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                           lt_tensor *const *out) {
    (void)ctx;
    for (int i = 0; i < g->size; i++) LT_TRY(lt_copy(out[g->ranks[g->perm[i]]], in[g->ranks[i]]));
    return LT_OK;
}

/* piece (i -> j): member i's box at its running offset along dim, into member
 * j's output at the running offset along concat_dim */
static lt_status k_all_to_all(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                              lt_tensor *const *out) {
    (void)ctx;
    int n = g->size, sd = g->dim, cd = g->concat_dim;
    int64_t off[64], *offs = n <= 64 ? off : lt__calloc((size_t)n, sizeof *offs);
    if (!offs) return lt__err(LT_NOMEM, "all_to_all: out of memory");
    lt_status st = LT_OK;
    for (int i = 0; i < n; i++) offs[i] = 0;
    for (int j = 0; j < n && !st; j++) {
        lt_tensor *dst = out[g->ranks[j]];
        int64_t cat_at = 0;
        for (int i = 0; i < n && !st; i++) {
            const lt_tensor *src = in[g->ranks[i]];
            int64_t len = g->sizes[i * n + j];
            lt_tensor piece = slab(src, sd, offs[i], len);
            offs[i] += len;
            lt_tensor box = slab(dst, cd, cat_at, piece.shape[cd]);
            cat_at += piece.shape[cd];
            st = lt_copy(&box, &piece);
        }
    }
    if (offs != off) lt__free(offs);
    return st;
}

/* dst (launch shape (outer, len), strides dst_st) = the group's reduction of
 * the members' inputs at p0 + (r, c) . src_st. Strided inputs are copied
 * contiguous first (the same backend's kernel). */
static lt_status reduce_into(const lt_coll_group *g, lt_tensor *const *in, lt_tensor *dst,
                             int64_t outer, int64_t len, int64_t p0, int64_t s0, int64_t d0) {
    int n = g->size;
    const char *srcs_stack[64], **srcs = n <= 64 ? srcs_stack : lt__calloc((size_t)n, sizeof *srcs);
    lt_tensor *tmp_stack[64], **tmp = n <= 64 ? tmp_stack : lt__calloc((size_t)n, sizeof *tmp);
    lt_status st = srcs && tmp ? LT_OK : lt__err(LT_NOMEM, "reduce: out of memory");
    for (int p = 0; p < n && tmp; p++) tmp[p] = NULL;
    for (int p = 0; p < n && !st; p++) {
        const lt_tensor *t = in[g->ranks[p]];
        if (!lt_is_contiguous(t)) {
            st = lt_contiguous(t, &tmp[p]);
            t = tmp[p];
        }
        if (!st) srcs[p] = lt_data(t);
    }
    if (!st) {
        lt__kargs a;
        memset(&a, 0, sizeof a);
        a.kernel = LT__K_COLL_REDUCE;
        a.op = (int)g->op;
        a.ndim = 2;
        a.shape[0] = outer;
        a.shape[1] = len;
        a.n = outer * len;
        a.p0 = p0;
        a.srcs = srcs;
        a.nsrc = n;
        a.o[0] = (lt__kop){lt_data(dst), (int)dst->dtype, {d0, 1}};
        a.o[1] = (lt__kop){NULL, (int)dst->dtype, {s0, 1}};
        st = lt__klaunch_raw(lt__backend_of(dst), &a);
    }
    for (int p = 0; p < n && tmp; p++) lt_tensor_free(tmp[p]);
    if (srcs != srcs_stack) lt__free((void *)srcs);
    if (tmp != tmp_stack) lt__free(tmp);
    return st;
}

static lt_status k_all_reduce(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                              lt_tensor *const *out) {
    (void)ctx;
    lt_tensor *first = out[g->ranks[0]];
    int64_t count = lt_numel(first);
    if (count == 0) return LT_OK;
    LT_TRY(reduce_into(g, in, first, 1, count, 0, 0, 0));
    for (int p = 1; p < g->size; p++) LT_TRY(lt_copy(out[g->ranks[p]], first));
    return LT_OK;
}

static lt_status k_reduce(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                          lt_tensor *const *out) {
    (void)ctx;
    lt_tensor *dst = out[g->ranks[g->root]];
    int64_t count = lt_numel(dst);
    return count == 0 ? LT_OK : reduce_into(g, in, dst, 1, count, 0, 0, 0);
}

/* member j's piece: for every index of the dims before dim, one run of the
 * reduced tensor */
static lt_status k_reduce_scatter(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                                  lt_tensor *const *out) {
    (void)ctx;
    const lt_tensor *t0 = in[g->ranks[0]];
    int d = g->dim;
    if (lt_numel(t0) == 0) return LT_OK;
    int64_t outer = 1, inner = 1, dsize = t0->shape[d], start = 0;
    for (int i = 0; i < d; i++) outer *= t0->shape[i];
    for (int i = d + 1; i < t0->ndim; i++) inner *= t0->shape[i];
    for (int j = 0; j < g->size; j++) {
        int64_t len = g->sizes[j] * inner;
        if (len > 0)
            LT_TRY(reduce_into(g, in, out[g->ranks[j]], outer, len, start * inner, dsize * inner,
                               len));
        start += g->sizes[j];
    }
    return LT_OK;
}

static const lt_engine_i kernels_iface = {
    .version = LT_ENGINE_API_VERSION,
    .name = "inproc-kernels",
    .all_gather = k_all_gather,
    .all_reduce = k_all_reduce,
    .reduce_scatter = k_reduce_scatter,
    .all_to_all = k_all_to_all,
    .broadcast = k_broadcast,
    .scatter = k_scatter,
    .gather = k_gather,
    .reduce = k_reduce,
    .permute = k_permute,
};

/* 1 when every tensor of the group (inputs, outputs) is on one backend that
 * launches kernels. */
static int on_kernels(const lt_coll_group *g, lt_tensor *const *in, lt_tensor *const *out) {
    const lt_backend *b = NULL;
    for (int p = 0; p < g->size; p++) {
        const lt_tensor *ts[2] = {in[g->ranks[p]], out[g->ranks[p]]};
        for (int k = 0; k < 2; k++) {
            if (!ts[k]) continue;
            const lt_backend *tb = lt__backend_of(ts[k]);
            if (!b) b = tb;
            if (tb != b || !tb->iface->launch) return 0;
        }
    }
    return b != NULL;
}

/* 1 when some tensor of the group is on a backend the host cannot read. */
static int any_off_host(const lt_coll_group *g, lt_tensor *const *in, lt_tensor *const *out) {
    for (int p = 0; p < g->size; p++)
        if ((in[g->ranks[p]] && !lt__on_host(in[g->ranks[p]])) ||
            (out[g->ranks[p]] && !lt__on_host(out[g->ranks[p]])))
            return 1;
    return 0;
}

/* A group that mixes backends with device memory: refused, by name. */
static lt_status k_mixed(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                         lt_tensor *const *out) {
    (void)ctx, (void)in, (void)out;
    return lt__err_code(
        LT_UNSUPPORTED, LT_ERR_NOT_YET,
        "not supported yet: a collective (group %d) whose shards lie on different backends, "
        "one of them off the host",
        g->index);
}

const char *lt__engine_kernels_name(void) { return kernels_iface.name; }

lt_coll_fn lt__engine_kernels_fn(const lt_engine_i *eng, lt_coll_fn fn, const lt_coll_group *g,
                                 lt_tensor *const *in, lt_tensor *const *out) {
    (void)eng; /* by function: an engine built from the in-process table (a test's) too */
    const lt_engine_i *ip = lt_engine_inproc();
    const lt_coll_fn from[] = {ip->all_gather, ip->all_reduce, ip->reduce_scatter,
                               ip->all_to_all, ip->broadcast,  ip->scatter,
                               ip->gather,     ip->reduce,     ip->permute};
    const lt_coll_fn to[] = {
        kernels_iface.all_gather, kernels_iface.all_reduce, kernels_iface.reduce_scatter,
        kernels_iface.all_to_all, kernels_iface.broadcast,  kernels_iface.scatter,
        kernels_iface.gather,     kernels_iface.reduce,     kernels_iface.permute};
    for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
        if (fn != from[i]) continue;
        if (on_kernels(g, in, out)) return to[i];
        return any_off_host(g, in, out) ? k_mixed : fn;
    }
    return fn; /* another engine's own function: it moves its shards itself */
}
