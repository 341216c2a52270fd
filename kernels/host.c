/* kernels/host.c — host copies of tensors whose memory the host cannot read.
 *
 * Why it exists: a backend with to_host/from_host entries (cuda: device
 * memory; cuda-emu: addresses the host cannot dereference) keeps shards
 * where a host loop must not touch them. Every host reader — a kernel's host
 * loop when the backend has no device version, element access, compare,
 * the verifier, reports — goes through these helpers: an explicit copy of the
 * bytes a tensor spans to host memory, the loop on that copy, and (for
 * outputs) an explicit copy back. For tensors on the CPU backend nothing is
 * copied: the helpers hand back the tensor itself.
 */
#include "kernels/tensor_impl.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"

#include <string.h>

int lt__on_host(const lt_tensor *t) { return lt__backend_of(t)->iface->to_host == NULL; }

/* Element range [*lo, *hi) of t's storage that t's elements lie in (empty
 * when t has no elements). */
static void span_of(const lt_tensor *t, int64_t *lo, int64_t *hi) {
    int64_t a = t->offset, b = t->offset;
    if (lt_numel(t) == 0) {
        *lo = *hi = t->offset;
        return;
    }
    for (int d = 0; d < t->ndim; d++) {
        int64_t ext = (t->shape[d] - 1) * t->strides[d];
        if (ext < 0) a += ext;
        else b += ext;
    }
    *lo = a;
    *hi = b + 1;
}

/* A CPU-backend tensor with t's geometry holding a copy of the bytes t
 * spans. The caller frees *out. */
static lt_status mirror(const lt_tensor *t, lt_tensor **out) {
    const lt_backend *b = lt__backend_of(t);
    int64_t lo, hi;
    span_of(t, &lo, &hi);
    size_t es = lt_dtype_size(t->dtype), nb = (size_t)(hi - lo) * es;
    int64_t n = hi - lo;
    lt_tensor *h = NULL;
    LT_TRY(lt__tensor_new_uninit(lt_backend_cpu(), t->dtype, 1, &n, &h));
    lt_storage *keep = h->storage;
    *h = *t; /* t's geometry, h's storage */
    h->storage = keep;
    h->offset = t->offset - lo;
    if (nb) {
        lt_status st = b->iface->to_host(b->ctx, keep->data,
                                         (const char *)t->storage->data + lo * (int64_t)es, nb);
        if (st != LT_OK) {
            lt_tensor_free(h);
            return lt__err_ctx(st, "copying %zu bytes from backend '%s' to the host", nb,
                               b->iface->name);
        }
    }
    *out = h;
    return LT_OK;
}

lt_status lt__host_begin(lt__hostrun *r, int n, const lt_tensor *const *ts) {
    memset(r, 0, sizeof *r);
    r->n = n;
    for (int k = 0; k < n; k++) {
        r->orig[k] = ts[k];
        r->t[k] = ts[k];
        if (!ts[k] || lt__on_host(ts[k])) continue;
        lt_status st = mirror(ts[k], &r->h[k]);
        if (st != LT_OK) {
            lt__host_end(r, 0, st);
            return st;
        }
        r->t[k] = r->h[k];
        r->copied = 1;
    }
    return LT_OK;
}

lt_status lt__host_writeback(const lt_tensor *t, const lt_tensor *h) {
    if (h == t || h->storage == t->storage) return LT_OK;
    const lt_backend *b = lt__backend_of(t);
    int64_t lo, hi;
    span_of(t, &lo, &hi);
    size_t es = lt_dtype_size(t->dtype), nb = (size_t)(hi - lo) * es;
    if (!nb) return LT_OK;
    lt_status st = b->iface->from_host(b->ctx, (char *)t->storage->data + lo * (int64_t)es,
                                       h->storage->data, nb);
    return st ? lt__err_ctx(st, "copying %zu bytes from the host to backend '%s'", nb,
                            b->iface->name)
              : LT_OK;
}

lt_status lt__host_end(lt__hostrun *r, int nout, lt_status st) {
    for (int k = 0; k < nout && st == LT_OK; k++)
        if (r->h[k]) st = lt__host_writeback(r->orig[k], r->h[k]);
    for (int k = 0; k < r->n; k++) {
        lt_tensor_free(r->h[k]);
        r->h[k] = NULL;
    }
    return st;
}

lt_status lt__host_copy_out(const lt_tensor *t, lt_tensor **out) {
    *out = NULL;
    if (lt__on_host(t)) return lt__alias(t, out);
    return mirror(t, out);
}

lt_status lt__to_host_bytes(const lt_tensor *t, int64_t elem_off, void *dst, size_t nbytes) {
    const lt_backend *b = lt__backend_of(t);
    const char *src = (const char *)t->storage->data + elem_off * (int64_t)lt_dtype_size(t->dtype);
    if (!b->iface->to_host) {
        memcpy(dst, src, nbytes);
        return LT_OK;
    }
    return b->iface->to_host(b->ctx, dst, src, nbytes);
}

lt_status lt__from_host_bytes(const lt_tensor *t, int64_t elem_off, const void *src,
                              size_t nbytes) {
    const lt_backend *b = lt__backend_of(t);
    char *dst = (char *)t->storage->data + elem_off * (int64_t)lt_dtype_size(t->dtype);
    if (!b->iface->from_host) {
        memcpy(dst, src, nbytes);
        return LT_OK;
    }
    return b->iface->from_host(b->ctx, dst, src, nbytes);
}
