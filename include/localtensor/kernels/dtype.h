/* kernels/dtype.h — element types, reduce ops, and scalar conversion.
 *
 * bf16 and f16 are stored as 16-bit words and computed in f32: every kernel
 * widens them with lt_dtype_load and rounds once with lt_dtype_store
 * (round-to-nearest-even).
 */
#ifndef LT_DTYPE_H
#define LT_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "localtensor/kernels/export.h"
#include "localtensor/kernels/status.h"

/* XX(enum suffix, name users type, bytes per element, is floating) */
#define LT_DTYPE_MAP(XX)        \
    XX(F32,  "f32",  4, 1)      \
    XX(F64,  "f64",  8, 1)      \
    XX(BF16, "bf16", 2, 1)      \
    XX(F16,  "f16",  2, 1)      \
    XX(I32,  "i32",  4, 0)      \
    XX(I64,  "i64",  8, 0)      \
    XX(BOOL, "bool", 1, 0)

typedef enum {
#define LT__XX(e, s, sz, fl) LT_##e,
    LT_DTYPE_MAP(LT__XX)
#undef LT__XX
    LT_DTYPE_COUNT
} lt_dtype;

/* Reduction ops of Partial placements and of reducing collectives.
 * XX(enum suffix, name) */
#define LT_REDOP_MAP(XX)     \
    XX(SUM,     "sum")       \
    XX(AVG,     "avg")       \
    XX(MAX,     "max")       \
    XX(MIN,     "min")       \
    XX(PRODUCT, "product")

typedef enum {
#define LT__XX(e, s) LT_REDOP_##e,
    LT_REDOP_MAP(LT__XX)
#undef LT__XX
    LT_REDOP_COUNT
} lt_redop;

LT_API size_t lt_dtype_size(lt_dtype dt);
LT_API const char *lt_dtype_name(lt_dtype dt);
LT_API int lt_dtype_is_float(lt_dtype dt);
/* Parses "f32", "float32", "bf16", ... Returns LT_INVALID with a message
 * naming the text and the accepted names. */
LT_API lt_status lt_dtype_parse(const char *s, lt_dtype *out);

LT_API const char *lt_redop_name(lt_redop op);
/* Parses "sum", "avg", "max", "min", "product" (also "prod"). */
LT_API lt_status lt_redop_parse(const char *s, lt_redop *out);

/* Scalar load/store through double. Integers round toward zero on store and
 * saturate at the type's range; bool stores v != 0. */
LT_API double lt_dtype_load(lt_dtype dt, const void *p);
LT_API void lt_dtype_store(lt_dtype dt, void *p, double v);

/* 16-bit float conversion (round to nearest even, NaN kept). */
LT_API float lt_bf16_to_f32(uint16_t h);
LT_API uint16_t lt_f32_to_bf16(float f);
LT_API float lt_f16_to_f32(uint16_t h);
LT_API uint16_t lt_f32_to_f16(float f);

/* Default comparison tolerances for a dtype (rtol, atol), as in
 * torch.testing.assert_close. Integers and bool: 0, 0. */
LT_API void lt_dtype_default_tol(lt_dtype dt, double *rtol, double *atol);

#endif
