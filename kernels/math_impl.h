/* kernels/math_impl.h — helpers the dense kernels share (kernels/unary.c,
 * binary.c, reduce.c, matmul.c, ...; internal: not installed).
 *
 * Dim normalisation, result allocation on the input's backend, the
 * "unsupported dtype" message and the dtype conversions every elementwise
 * loop goes through, kept in one place so the kernels agree.
 */
#ifndef LT_MATH_IMPL_H
#define LT_MATH_IMPL_H

#include <stdint.h>

#include "localtensor/kernels/math.h"
#include "kernels/status_impl.h"

/* A dim in -ndim..ndim-1 normalized into *out (LT_INVALID with fn's name). */
lt_status lt__norm_dim(const char *fn, int dim, int ndim, int *out);
/* A new contiguous result tensor on like's backend whose contents the caller
 * overwrites whole (uninitialised on the default backend). */
lt_status lt__math_out(const lt_tensor *like, lt_dtype dt, int ndim, const int64_t *shape,
                       lt_tensor **out);
/* The LT_UNSUPPORTED error for op on dtype dt. */
lt_status lt__math_unsupported(const char *op, lt_dtype dt);
/* n elements of dt at p (step in elements) to/from f32. */
void lt__load_f32(lt_dtype dt, const char *p, int64_t step, int64_t n, float *out);
void lt__store_f32(lt_dtype dt, char *p, int64_t step, int64_t n, const float *in);
/* n elements of an integer dtype to/from int64 (stores wrap as C casts do). */
void lt__load_i64(lt_dtype dt, const char *p, int64_t step, int64_t n, int64_t *out);
void lt__store_i64(lt_dtype dt, char *p, int64_t step, int64_t n, const int64_t *in);

#endif
