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
