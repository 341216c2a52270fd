/* kernels/tensor.h — the dense strided tensor and every kernel on one buffer.
 *
 * An lt_tensor is a view: dtype, shape, strides and offset (both in elements)
 * over refcounted storage that a backend allocated. Views share storage; the
 * storage is released when its last view is freed. kernels/ knows nothing of
 * ranks or placements.
 *
 * Ownership: every `lt_tensor **out` receives a NEW tensor the caller frees
 * with lt_tensor_free (even when it is a view sharing storage). Inputs are
 * borrowed. On error *out is left NULL (where it is a single tensor) and the
 * thread's lt_errmsg() says what was wrong.
 *
 * Zero-size dims work everywhere: a tensor with a 0 in its shape has no
 * elements, valid strides, and copies/cats/compares as empty.
 *
 * Placeholders (docs/SEMANTICS.md §11.3): a rank that receives nothing from a rooted
 * collective holds a zero-element tensor whose `placeholder` flag is set and
 * whose `logical` shape records what it stands for. Its real shape is the
 * logical shape with dim 0 set to 0 (a 0-d logical shape becomes shape (0)).
 */
#ifndef LT_TENSOR_H
#define LT_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "localtensor/kernels/dtype.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/split.h"
#include "localtensor/kernels/status.h"

#define LT_MAX_DIMS 8

typedef struct lt_backend lt_backend;
typedef struct lt_storage lt_storage;

typedef struct lt_tensor {
    lt_dtype dtype;
    int ndim;                              /* 0..LT_MAX_DIMS */
    int64_t shape[LT_MAX_DIMS];
    int64_t strides[LT_MAX_DIMS];          /* in elements */
    int64_t offset;                        /* in elements, into storage */
    lt_storage *storage;                   /* refcounted, never NULL */
    int placeholder;                       /* 1: stands for `logical` */
    int logical_ndim;
    int64_t logical[LT_MAX_DIMS];
    int absent;                            /* 1: shape only; the values live in another
                                            * process (lt_tensor_absent) */
} lt_tensor;

/* ---- creation and lifetime ------------------------------------------- */

/* New contiguous zero-filled tensor on the default (CPU) backend. Checks the
 * shape (ndim <= 8, sizes >= 0, element count and bytes without overflow). */
LT_API lt_status lt_tensor_new(lt_dtype dt, int ndim, const int64_t *shape, lt_tensor **out);
/* Same, on backend b (NULL: the default backend). */
LT_API lt_status lt_tensor_new_on(const lt_backend *b, lt_dtype dt, int ndim, const int64_t *shape,
                                  lt_tensor **out);
/* New contiguous tensor whose contents are UNINITIALISED: for outputs that
 * are overwritten whole (collective results, copies). Same checks. */
LT_API lt_status lt_tensor_empty(lt_dtype dt, int ndim, const int64_t *shape, lt_tensor **out);
/* New contiguous zero-filled tensor with t's dtype and shape. */
LT_API lt_status lt_tensor_new_like(const lt_tensor *t, lt_tensor **out);
/* New tensor from row-major values (converted to dt). n must equal the numel. */
LT_API lt_status lt_tensor_from_doubles(lt_dtype dt, int ndim, const int64_t *shape,
                                        const double *vals, int64_t n, lt_tensor **out);
/* A placeholder for logical shape (ndim, shape), dtype dt (see above). */
LT_API lt_status lt_tensor_placeholder(lt_dtype dt, int ndim, const int64_t *shape,
                                       lt_tensor **out);
/* A stand-in for a shard held by another process (collectives_sim/engine.h
 * `holds`): dtype dt and shape (ndim, shape) with no values (its storage has
 * no bytes, so no kernel may read or write it; the collectives read only
 * its shape, and their results for a rank this process does not hold are
 * such stand-ins too). The caller frees *out with lt_tensor_free. Errors:
 * the shape checks of lt_tensor_new; LT_NOMEM. */
LT_API lt_status lt_tensor_absent(lt_dtype dt, int ndim, const int64_t *shape, lt_tensor **out);
/* Releases the view and, with the last view, the storage. NULL is a no-op. */
LT_API void lt_tensor_free(lt_tensor *t);
/* A new view of the same elements (shares storage). */
LT_API lt_status lt_tensor_view(const lt_tensor *t, lt_tensor **out);

/* ---- copy-on-write -------------------------------------------------------- */

/* Shards that hold the same bytes share one storage (replicas, a collective's
 * result on every member of a group). 1 when another tensor refers to t's
 * storage too. */
LT_API int lt_tensor_is_shared(const lt_tensor *t);
/* 1 when a and b are views of exactly the same elements (same storage,
 * offset, dtype, shape and strides): equal without reading a byte. */
LT_API int lt_tensor_same_view(const lt_tensor *a, const lt_tensor *b);
/* Call before writing into t's elements: when t's storage is shared, t gets a
 * private contiguous copy of its elements (its storage, offset and strides
 * change; the other tensors keep the old buffer), so a write never changes
 * another tensor. A no-op on an unshared tensor. LT_NOMEM leaves t as it was. */
LT_API lt_status lt_tensor_make_writable(lt_tensor *t);

/* ---- queries ------------------------------------------------------------- */

LT_API int64_t lt_numel(const lt_tensor *t);
LT_API size_t lt_nbytes(const lt_tensor *t);              /* numel * element size */
LT_API int lt_is_contiguous(const lt_tensor *t); /* row-major dense (size-1 dims ignored) */
/* Address of element 0 (storage + offset). On a backend whose memory the host
 * cannot read (cuda, cuda-emu: kernels/backend.h) it is that backend's
 * address: read values with lt_get / lt_to_doubles, or lt_copy into a
 * tensor made with lt_tensor_new_on(lt_backend_cpu(), ...). */
LT_API void *lt_data(const lt_tensor *t);
LT_API int lt_same_shape(const lt_tensor *a, const lt_tensor *b);
/* Writes "(2, 3)" into buf; returns buf. */
LT_API char *lt_shape_format(int ndim, const int64_t *shape, char *buf, size_t n);

/* Element access by multi-index or by row-major linear index, through double. */
LT_API double lt_get(const lt_tensor *t, const int64_t *idx);
LT_API void lt_set(lt_tensor *t, const int64_t *idx, double v);
LT_API double lt_get_flat(const lt_tensor *t, int64_t i);
LT_API void lt_set_flat(lt_tensor *t, int64_t i, double v);
/* All elements in row-major order as doubles into out[numel]. */
LT_API void lt_to_doubles(const lt_tensor *t, double *out);

/* ---- fill, copy, cast ---------------------------------------------------- */

LT_API lt_status lt_fill(lt_tensor *t, double v);
/* Row-major 0, 1, 2, ... */
LT_API lt_status lt_arange_fill(lt_tensor *t);
/* Copies src into dst element-wise; shapes must be equal; converts dtype when
 * they differ. Contiguous runs are copied with memcpy. Overlap is not allowed. */
LT_API lt_status lt_copy(lt_tensor *dst, const lt_tensor *src);
/* A new contiguous copy. */
LT_API lt_status lt_clone(const lt_tensor *src, lt_tensor **out);
/* A view when already contiguous, else a contiguous copy. */
LT_API lt_status lt_contiguous(const lt_tensor *src, lt_tensor **out);
/* A new contiguous tensor of dtype dt. */
LT_API lt_status lt_cast(const lt_tensor *src, lt_dtype dt, lt_tensor **out);

/* ---- views (all share storage) ------------------------------------------- */

/* Negative dims are NOT normalized here; callers pass 0 <= dim < ndim. */
LT_API lt_status lt_narrow(const lt_tensor *t, int dim, int64_t start, int64_t len,
                           lt_tensor **out);
LT_API lt_status lt_select(const lt_tensor *t, int dim, int64_t i, lt_tensor **out);
LT_API lt_status lt_transpose(const lt_tensor *t, int d0, int d1, lt_tensor **out);
LT_API lt_status lt_permute(const lt_tensor *t, const int *perm, lt_tensor **out);
/* A view when the strides allow it, else a contiguous copy with the new shape.
 * One entry of shape may be -1 (inferred). */
LT_API lt_status lt_reshape(const lt_tensor *t, int ndim, const int64_t *shape, lt_tensor **out);
LT_API lt_status lt_unsqueeze(const lt_tensor *t, int dim, lt_tensor **out);
/* Removes dim (must have size 1). */
LT_API lt_status lt_squeeze(const lt_tensor *t, int dim, lt_tensor **out);

/* ---- split and join ------------------------------------------------------ */

/* k views along dim by the rule (chunk rule: trailing pieces may be empty).
 * outs[k] receive new views; on error none are left allocated. */
LT_API lt_status lt_split_rule_views(const lt_tensor *t, int dim, const lt_split_rule *rule, int k,
                                     lt_tensor **outs);
/* torch.chunk-like: the chunk rule into k pieces (empty pieces included). */
LT_API lt_status lt_chunk(const lt_tensor *t, int dim, int k, lt_tensor **outs);
/* Views of the given sizes along dim (must sum to the dim size). */
LT_API lt_status lt_split_sizes_views(const lt_tensor *t, int dim, int k, const int64_t *sizes,
                                      lt_tensor **outs);
/* New contiguous concatenation of n tensors along dim. All must share dtype,
 * ndim and every other dim's size; zero-size inputs are fine. n >= 1. */
LT_API lt_status lt_cat(const lt_tensor *const *ts, int n, int dim, lt_tensor **out);
/* New contiguous tensor: src with dim restricted to idx[0..n) (any order,
 * repeats allowed; each 0 <= idx < size). */
LT_API lt_status lt_index_select(const lt_tensor *src, int dim, const int64_t *idx, int64_t n,
                                 lt_tensor **out);
/* Gathers src at the cartesian product of per-dim index lists:
 * out[i0,...] = src[idx[0][i0], ...]. A NULL idx[d] means "all of dim d".
 * lens[d] is the length of idx[d] (ignored when idx[d] is NULL). New
 * contiguous tensor. Contiguous index runs are copied as blocks. */
LT_API lt_status lt_gather_index_sets(const lt_tensor *src, int64_t *const *idx,
                                      const int64_t *lens, lt_tensor **out);
/* The inverse: dst[idx[0][i0], ...] = src[i0, ...] (copy, or reduce with op
 * when accumulate is non-zero: dst = dst op src, sum/max/min/product). */
LT_API lt_status lt_scatter_index_sets(lt_tensor *dst, int64_t *const *idx, const lt_tensor *src,
                                       int accumulate, lt_redop op);

/* ---- math ---------------------------------------------------------------- */

/* dst = dst op src element-wise (same shape, same dtype). AVG accumulates as
 * SUM (divide afterwards with lt_scale). bf16/f16: computed in f32. */
LT_API lt_status lt_accumulate(lt_tensor *dst, const lt_tensor *src, lt_redop op);
/* dst *= s (floats; integers: truncating). */
LT_API lt_status lt_scale(lt_tensor *t, double s);

/* ---- compare ------------------------------------------------------------- */

typedef struct lt_compare_result {
    int equal;                     /* 1: all elements within tolerance */
    int64_t ndiff;                 /* number of elements outside tolerance */
    int64_t first_flat;            /* row-major index of the first difference, -1 if none */
    int64_t first_idx[LT_MAX_DIMS];/* its multi-index */
    double expected, actual;       /* values there (a = actual, b = expected) */
    double max_abs_diff;
} lt_compare_result;

/* allclose: |a - b| <= atol + rtol * |b|, NaN equal to NaN. Shapes must be
 * equal (LT_SHAPE with both shapes in the message); dtypes may differ. */
LT_API lt_status lt_compare(const lt_tensor *actual, const lt_tensor *expected, double rtol,
                            double atol, lt_compare_result *res);

#endif
