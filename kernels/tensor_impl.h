/* kernels/tensor_impl.h — kernels-internal helpers shared by the tensor files.
 *
 * Why it exists: copy, fill, accumulate, scale and compare all want the same
 * walk — visit one or more same-shape strided tensors as a sequence of 1-D
 * rows, with size-1 dims dropped and adjacent dims merged wherever every
 * operand's memory allows, so that the inner loop is long, typed, and a
 * single memcpy when the data is dense. Keeping that walk (and the typed row
 * conversions) in one place keeps each kernel file small.
 *
 * Only the kernels/ sources include this header; nothing here is public API.
 * Host loops dereference storage only of tensors on the host
 * (lt__on_host); the others go through the host copies below.
 */
#ifndef LT_TENSOR_IMPL_H
#define LT_TENSOR_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "localtensor/kernels/backend.h"
#include "localtensor/kernels/tensor.h"

/* ---- the row walk ---------------------------------------------------------- */

#define LT__WALK_MAX_OPS 3

/* Invariant: rows_left * n == numel of every operand. Outer strides are in
 * bytes (for pointer steps), the inner step in elements (for typed loops). */
typedef struct lt__walk {
    int nops;
    int ndim;                                       /* collapsed dims, >= 1 */
    int64_t shape[LT_MAX_DIMS];                     /* collapsed shape */
    int64_t bstride[LT__WALK_MAX_OPS][LT_MAX_DIMS]; /* byte strides per operand */
    int64_t pos[LT_MAX_DIMS];                       /* odometer over dims 0..ndim-2 */
    char *row[LT__WALK_MAX_OPS];                    /* first byte of the next row */
    int64_t rows_left;
    int64_t n;                                      /* elements per row */
    int64_t step[LT__WALK_MAX_OPS];                 /* inner stride, in elements */
} lt__walk;

/* Prepares a row-major walk over nops (1..3) tensors that share ts[0]'s
 * shape (the caller has checked). Row order is row-major order, so counting
 * elements row by row gives the row-major flat index. Cannot fail. */
void lt__walk_init(lt__walk *w, int nops, const lt_tensor *const *ts);
/* Stores the first byte of the next row of each operand into ptrs[nops] and
 * returns 1, or returns 0 when the walk is done. */
int lt__walk_next(lt__walk *w, char **ptrs);

/* Regroups a walk with ndim >= 2 into 2-D planes (its last two collapsed
 * dims): lt__walk_next then yields each plane's first byte. A plane has
 * *rows rows of w->n elements; row r of operand k starts rbstride[k] * r
 * bytes further; inner steps stay in w->step. For cache-blocked loops. */
void lt__walk_planes(lt__walk *w, int64_t *rows, int64_t *rbstride);

/* ---- typed rows ---------------------------------------------------------------- */

/* Elements per chunk when a row goes through a double buffer on the stack. */
#define LT__CHUNK 512

/* out[i] = lt_dtype_load(dt, p + i*step elements), for i < n. */
void lt__load_f64(lt_dtype dt, const char *p, int64_t step, int64_t n, double *out);
/* lt_dtype_store(dt, p + i*step elements, in[i]), for i < n (same rounding). */
void lt__store_f64(lt_dtype dt, char *p, int64_t step, int64_t n, const double *in);
/* Copies n elements of esize bytes; steps in elements; memcpy when both are 1.
 * The ranges must not overlap. */
void lt__copy_elems(size_t esize, char *d, int64_t dstep, const char *s, int64_t sstep,
                    int64_t n);
/* Copies n elements converting sdt -> ddt (lt_dtype_load/store semantics). */
void lt__convert_elems(lt_dtype ddt, char *d, int64_t dstep, lt_dtype sdt, const char *s,
                       int64_t sstep, int64_t n);

/* d[i] = d[i] op s[i] for n elements of dt (steps in elements). Dense runs go
 * to backend b's accumulate when b is non-NULL and has one; the host loop
 * handles the rest (AVG as SUM; bf16/f16 in f32; integers wrap; bool: sum and
 * max are or, product and min are and). Returns the backend's error if it
 * fails with anything but LT_UNSUPPORTED. */
lt_status lt__accumulate_run(const lt_backend *b, lt_dtype dt, char *d, int64_t dstep,
                             const char *s, int64_t sstep, int64_t n, lt_redop op);

/* ---- kernels on a backend (kernels/launch.c) ----------------------------------------- */

/* Runs kernel (an lt__kernel of kernels/cuda/kern.h) with op, scalar s and
 * rev over ts[0]'s shape on the backend of ts[0] (nops operands, 1..3, each
 * with ts[0]'s shape; broadcast operands carry stride 0). LT_UNSUPPORTED
 * when that backend has no launch or an operand lives elsewhere: the caller
 * runs its host loop. Other errors come from the backend (a failed launch). */
lt_status lt__klaunch(int kernel, int op, double s, int rev, int nops, const lt_tensor *const *ts);
/* The calling thread's default-backend override (kernels/backend.c): while
 * set, lt_backend_default() answers it on this thread (and on the pool's
 * workers running this thread's parallel sections). Set returns the
 * previous override; NULL clears it. */
const lt_backend *lt__backend_thread(void);
const lt_backend *lt__backend_set_thread(const lt_backend *b);
/* Runs the launch *a (filled by the caller) on backend b; LT_UNSUPPORTED
 * when b has no launch. */
lt_status lt__klaunch_raw(const lt_backend *b, struct lt__kargs *a);
/* Launches the cuda-emu backend has run (kernels/backend_emu.c), for tests. */
int64_t lt__emu_launches(void);

/* ---- host copies (kernels/host.c) ------------------------------------------------ */

/* 1 when the host may dereference t's storage: its backend has no to_host
 * entry (the CPU backend). */
int lt__on_host(const lt_tensor *t);

/* A host loop over up to 4 tensors: t[k] is orig[k] itself when it is on the
 * host, else h[k], a CPU-backend copy (same geometry) of the bytes it spans.
 * Outputs come first so lt__host_end can copy them back. */
typedef struct lt__hostrun {
    int n;
    int copied;                 /* 1: some operand was copied to the host */
    const lt_tensor *orig[4];
    const lt_tensor *t[4];      /* what the host loop reads and writes */
    lt_tensor *h[4];            /* owned copies, NULL where none was made */
} lt__hostrun;
/* Fills *r for ts[0..n) (NULL entries stay NULL). On error nothing is left
 * to free. */
lt_status lt__host_begin(lt__hostrun *r, int n, const lt_tensor *const *ts);
/* When st is LT_OK, copies the host copies of the first nout operands back
 * into their tensors; frees every copy either way. Returns st, or the
 * error of a copy back. */
lt_status lt__host_end(lt__hostrun *r, int nout, lt_status st);
/* Copies the bytes host copy h (from lt__host_begin of t) spans back into t. */
lt_status lt__host_writeback(const lt_tensor *t, const lt_tensor *h);
/* A host-readable tensor with t's values in *out (caller frees): an alias of
 * t when t is on the host, else a host copy. */
lt_status lt__host_copy_out(const lt_tensor *t, lt_tensor **out);
/* nbytes from / to t's storage at element offset elem_off (an explicit copy
 * on backends with to_host/from_host, memcpy on the host). */
lt_status lt__to_host_bytes(const lt_tensor *t, int64_t elem_off, void *dst, size_t nbytes);
lt_status lt__from_host_bytes(const lt_tensor *t, int64_t elem_off, const void *src, size_t nbytes);

/* ---- geometry ------------------------------------------------------------------- */

/* Row-major strides for shape, taking max(size, 1) as PyTorch does so that
 * zero-size dims still get valid strides. Returns 1 on overflow. */
int lt__contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
/* lt_tensor_new_on without the zero fill, for results every element of
 * which is written before they are returned (clone, cast, cat, gather). */
lt_status lt__tensor_new_uninit(const lt_backend *b, lt_dtype dt, int ndim, const int64_t *shape,
                                lt_tensor **out);
/* A new tensor struct sharing t's storage (refcount + 1) with the same
 * geometry, placeholder flag cleared. The caller edits the geometry. */
lt_status lt__alias(const lt_tensor *t, lt_tensor **out);
/* The backend of t's storage. */
const lt_backend *lt__backend_of(const lt_tensor *t);
/* 1 when the element ranges of a and b can share bytes. */
int lt__may_overlap(const lt_tensor *a, const lt_tensor *b);

#endif
