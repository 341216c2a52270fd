/* kernels/blas.c — the BLAS library's own threads (kernels/blas_impl.h). */
#include "kernels/blas_impl.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int lt__blas_workers_capped(void) {
    int n = openblas_get_num_threads();
    struct rlimit rl;
    if (n <= 1 || getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
    return (unsigned long long)rl.rlim_cur <
           (unsigned long long)n * LT__BLAS_VA_PER_THREAD + LT__BLAS_VA_BASE;
}

void lt__blas_reexec_if_capped(char **argv) {
    if (!lt__blas_workers_capped()) return;
    const char *v = getenv("OPENBLAS_NUM_THREADS");
    if (v && !strcmp(v, "1")) return;   /* loaded with it already: executing again would not help */
    if (setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0) return;
    execv("/proc/self/exe", argv);      /* returns only when it failed */
}
