/* kernels/launch.c — hands a whole-tensor kernel to a backend that runs the
 * kernel bodies of kernels/cuda/kern.h (cuda, cuda-emu).
 *
 * Why it exists: the kernel files (copy.c, accumulate.c, unary.c, binary.c)
 * each ask "can the tensors' backend run this?" before their host loops.
 * Turning tensors into one launch's arguments (data pointers, element
 * strides, the launch shape) is the same for all of them, so it lives here.
 */
#include "kernels/tensor_impl.h"
#include "kernels/cuda/kern.h"

#include <string.h>

lt_status lt__klaunch(int kernel, int op, double s, int rev, int nops, const lt_tensor *const *ts) {
    const lt_backend *b = lt__backend_of(ts[0]);
    if (!b->iface->launch) return LT_UNSUPPORTED;
    for (int k = 1; k < nops; k++)
        if (lt__backend_of(ts[k]) != b) return LT_UNSUPPORTED; /* mixed: the host loop */
    lt__kargs a;
    memset(&a, 0, sizeof a);
    a.kernel = kernel;
    a.op = op;
    a.rev = rev;
    a.s = s;
    a.ndim = ts[0]->ndim;
    a.n = lt_numel(ts[0]);
    if (a.n == 0) return LT_OK;
    for (int d = 0; d < a.ndim; d++) a.shape[d] = ts[0]->shape[d];
    for (int k = 0; k < nops; k++) {
        a.o[k].p = lt_data(ts[k]);
        a.o[k].dt = (int)ts[k]->dtype;
        for (int d = 0; d < a.ndim; d++) a.o[k].st[d] = ts[k]->strides[d];
    }
    return b->iface->launch(b->ctx, &a);
}

lt_status lt__klaunch_raw(const lt_backend *b, struct lt__kargs *a) {
    if (!b->iface->launch) return LT_UNSUPPORTED;
    if (a->n == 0) return LT_OK;
    return b->iface->launch(b->ctx, a);
}

void lt__kargs_gemm(struct lt__kargs *a, lt_dtype dt, int trans_a, int trans_b, int64_t m, int64_t n,
                    int64_t k, double alpha, const void *pa, int64_t lda, const void *pb, int64_t ldb,
                    double beta, void *pc, int64_t ldc) {
    memset(a, 0, sizeof *a);
    a->kernel = LT__K_GEMM;
    a->n = m * n;
    a->m = m;
    a->nn = n;
    a->k = k;
    a->alpha = alpha;
    a->beta = beta;
    a->ndim = 1;
    a->shape[0] = m * n;
    a->o[0] = (lt__kop){(char *)pc, (int)dt, {ldc, 1}};
    /* row-major (rows, cols) element strides; a transposed operand swaps them */
    a->o[1] = (lt__kop){(char *)(uintptr_t)pa, (int)dt, {trans_a ? 1 : lda, trans_a ? lda : 1}};
    a->o[2] = (lt__kop){(char *)(uintptr_t)pb, (int)dt, {trans_b ? 1 : ldb, trans_b ? ldb : 1}};
}
