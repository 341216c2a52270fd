/* kernels/backend.c — choosing the backend: by name, and the process default.
 *
 * The default backend is where lt_tensor_new and every kernel result that
 * has no other operand's backend to follow go; the CLI sets it from
 * `--backend NAME` or LT_BACKEND before it creates any tensor. Without CUDA
 * in the build (`make` without CUDA=1) lt_backend_cuda says so here.
 */
#include "localtensor/kernels/backend.h"
#include "kernels/status_impl.h"

#include <string.h>

static const lt_backend *default_backend; /* NULL: the CPU backend */
/* This thread's override (a scenario's `backend:` key), handed to the pool's
 * workers for the sections this thread starts; NULL: none. */
static _Thread_local const lt_backend *thread_backend;

const lt_backend *lt_backend_default(void) {
    if (thread_backend) return thread_backend;
    const lt_backend *b = __atomic_load_n(&default_backend, __ATOMIC_ACQUIRE);
    return b ? b : lt_backend_cpu();
}

const lt_backend *lt__backend_thread(void) { return thread_backend; }

const lt_backend *lt__backend_set_thread(const lt_backend *b) {
    const lt_backend *prev = thread_backend;
    thread_backend = b;
    return prev;
}

#if !defined(LT_HAVE_CUDA)
lt_status lt_backend_cuda(const lt_backend **out) {
    if (out) *out = NULL;
    return lt__err_code(
        LT_UNSUPPORTED, LT_ERR_NOT_YET,
        "not supported yet: backend 'cuda' in this build (rebuild with make CUDA=1; "
        "'cuda-emu' runs its kernels on the host)");
}
#endif

lt_status lt_backend_by_name(const char *name, const lt_backend **out) {
    if (!out) return lt__err(LT_INVALID, "backend: out is NULL");
    *out = NULL;
    if (!name) return lt__err(LT_INVALID, "backend: name is NULL");
    if (!strcmp(name, "cpu")) { *out = lt_backend_cpu(); return LT_OK; }
    if (!strcmp(name, "cuda-emu")) { *out = lt_backend_cuda_emu(); return LT_OK; }
    if (!strcmp(name, "cuda")) return lt_backend_cuda(out);
    return lt__err(LT_INVALID, "unknown backend '%s' (expected cpu, cuda or cuda-emu)", name);
}

lt_status lt_backend_select(const char *name) {
    const lt_backend *b;
    LT_TRY(lt_backend_by_name(name, &b));
    __atomic_store_n(&default_backend, b, __ATOMIC_RELEASE);
    return LT_OK;
}
