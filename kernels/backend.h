/* kernels/backend.h — the backend function table (model: ggml-backend).
 *
 * A backend owns memory and runs kernels on it. The CPU backend (OpenBLAS for
 * gemm) is always present; a CUDA backend (`make CUDA=1`, later) fills the same
 * table. Entries marked optional may be NULL: the public wrappers in
 * kernels/tensor.h then fall back to the host loop.
 */
#ifndef LT_BACKEND_H
#define LT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/export.h"
#include "kernels/tensor.h"

#define LT_BACKEND_API_VERSION 1

typedef struct lt_backend_i {
    int version;                                                       /* LT_BACKEND_API_VERSION */
    const char *name;
    /* required: nbytes may be 0 (must still return a freeable pointer) */
    void *(*alloc)(void *ctx, size_t nbytes);
    void (*free)(void *ctx, void *ptr);
    /* required: plain byte copy between two buffers of this backend */
    void (*memcpy)(void *ctx, void *dst, const void *src, size_t nbytes);
    /* optional: dst = dst op src on n contiguous elements of dtype dt */
    lt_status (*accumulate)(void *ctx, lt_dtype dt, void *dst, const void *src, int64_t n,
                            lt_redop op);
    /* optional: row-major C[m,n] = alpha * op(A)[m,k] op(B)[k,n] + beta * C,
     * f32 (dt == LT_F32) or f64; lda/ldb/ldc in elements. */
    lt_status (*gemm)(void *ctx, lt_dtype dt, int trans_a, int trans_b, int64_t m, int64_t n,
                      int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                      int64_t ldb, double beta, void *c, int64_t ldc);
} lt_backend_i;

struct lt_backend {
    const lt_backend_i *iface;
    void *ctx;
};

/* The process-wide CPU backend (static; never freed). */
LT_API const lt_backend *lt_backend_cpu(void);
/* Returns the CPU backend's cached large blocks to the system. */
LT_API void lt_backend_cpu_trim(void);
/* The backend new tensors go to when none is named (the CPU backend). */
LT_API const lt_backend *lt_backend_default(void);

/* Storage: refcounted bytes from a backend (kernels-internal, used by tensor.c). */
struct lt_storage {
    int refcount;
    size_t nbytes;
    void *data;
    const lt_backend *backend;
};

#endif
