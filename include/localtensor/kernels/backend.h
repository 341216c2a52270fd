/* kernels/backend.h — the backend function table (model: ggml-backend).
 *
 * A backend owns memory and runs kernels on it. Three exist:
 *   cpu       always; host memory, host loops, OpenBLAS gemm;
 *   cuda-emu  always; host memory, but every elementwise kernel runs the
 *             CUDA backend's kernel bodies (kernels/cuda/kern.h) through a
 *             host loop over the launch grid: the device code, tested on
 *             machines without a GPU;
 *   cuda      with `make CUDA=1` and a CUDA device; the same kernel bodies
 *             launched on the device, gemm through cuBLAS.
 * Entries marked optional may be NULL: the public wrappers in
 * kernels/tensor.h and kernels/math.h then fall back to the host loop.
 */
#ifndef LT_BACKEND_H
#define LT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "localtensor/kernels/export.h"
#include "localtensor/kernels/tensor.h"

#define LT_BACKEND_API_VERSION 3

struct lt__kargs; /* one kernel launch (kernels-internal: kernels/cuda/kern.h) */

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
     * f32 (dt == LT_F32) or f64; dt bf16/f16 (a backend that launches
     * kernels): A and B in dt, C in f32, products and sums in f32 (mixed
     * precision). lda/ldb/ldc in elements. LT_UNSUPPORTED: the caller casts
     * or loops on the host. */
    lt_status (*gemm)(void *ctx, lt_dtype dt, int trans_a, int trans_b, int64_t m, int64_t n,
                      int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                      int64_t ldb, double beta, void *c, int64_t ldc);
    /* optional (version 2): runs one kernel of kernels/cuda/kern.h over its
     * grid (elementwise copy/cast, fill, arange, scale, accumulate, unary,
     * binary, binary scalar, reductions, softmax, gather of index sets,
     * embedding) on buffers of this backend; its results are readable by
     * the caller when it returns (through to_host where the backend has
     * it: a backend may return early if its to_host, memcpy, launch, gemm
     * and free act in the order they were called, as the CUDA backend's
     * one stream does). LT_UNSUPPORTED: the caller runs its host loop
     * instead. */
    lt_status (*launch)(void *ctx, const struct lt__kargs *args);
    /* optional (version 3): explicit copies between this backend's memory
     * and host memory. NULL (the CPU backend): the host reads and writes
     * this backend's memory in place. A backend that has them has a launch
     * too (zero fills run as its fill kernel); the host never dereferences
     * its buffers: every host reader copies (kernels/host.c). */
    lt_status (*to_host)(void *ctx, void *host_dst, const void *src, size_t nbytes);
    lt_status (*from_host)(void *ctx, void *dst, const void *host_src, size_t nbytes);
} lt_backend_i;

struct lt_backend {
    const lt_backend_i *iface;
    void *ctx;
};

/* The process-wide CPU backend (static; never freed). */
LT_API const lt_backend *lt_backend_cpu(void);
/* Frees the blocks kept for reuse (the CPU backend's storage cache and the
 * library's block cache) to the C library, which gives the system back what
 * it does not keep itself (glibc keeps freed blocks below its mmap threshold
 * in its heap). */
LT_API void lt_backend_cpu_trim(void);
/* The backend new tensors go to when none is named: the CPU backend unless
 * lt_backend_select chose another. */
LT_API const lt_backend *lt_backend_default(void);
/* The cuda-emu backend (static; never freed): see above. */
LT_API const lt_backend *lt_backend_cuda_emu(void);
/* The CUDA backend in *out. LT_UNSUPPORTED ("not supported yet: ...") when
 * the library was built without CUDA, ("no CUDA device: ...") when no device
 * can be used. */
LT_API lt_status lt_backend_cuda(const lt_backend **out);
/* Looks a backend up by name ("cpu", "cuda-emu", "cuda") into *out; an
 * unknown name is LT_INVALID naming the accepted ones. */
LT_API lt_status lt_backend_by_name(const char *name, const lt_backend **out);
/* Makes backend `name` the default for tensors created from now on (call it
 * before creating any; tensors already made stay where they are). Errors as
 * lt_backend_by_name and lt_backend_cuda. */
LT_API lt_status lt_backend_select(const char *name);

/* Storage: refcounted bytes from a backend (kernels-internal, used by tensor.c). */
struct lt_storage {
    int refcount;
    size_t nbytes;
    void *data;
    const lt_backend *backend;
};

#endif
