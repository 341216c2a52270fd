/* kernels/dtype.c — dtype tables and scalar conversions (incl. bf16/f16). */
#include "localtensor/kernels/dtype.h"
#include "kernels/cuda/kern.h"
#include "kernels/status_impl.h"

#include <math.h>
#include <string.h>

static const char *const dtype_names[] = {
#define LT__XX(e, s, sz, fl) s,
    LT_DTYPE_MAP(LT__XX)
#undef LT__XX
};
static const struct {
    size_t size;
    int is_float;
} dtype_table[] = {
#define LT__XX(e, s, sz, fl) {sz, fl},
    LT_DTYPE_MAP(LT__XX)
#undef LT__XX
};

static const char *const redop_names[] = {
#define LT__XX(e, s) s,
    LT_REDOP_MAP(LT__XX)
#undef LT__XX
};

size_t lt_dtype_size(lt_dtype dt) { return dtype_table[dt].size; }
const char *lt_dtype_name(lt_dtype dt) { return lt__name_of(dtype_names, LT_DTYPE_COUNT, (int)dt); }
int lt_dtype_is_float(lt_dtype dt) { return dtype_table[dt].is_float; }

lt_status lt_dtype_parse(const char *s, lt_dtype *out) {
    static const struct { const char *alias; lt_dtype dt; } aliases[] = {
        {"float32", LT_F32}, {"float", LT_F32}, {"float64", LT_F64}, {"double", LT_F64},
        {"bfloat16", LT_BF16}, {"float16", LT_F16}, {"half", LT_F16},
        {"int32", LT_I32}, {"int", LT_I32}, {"int64", LT_I64}, {"long", LT_I64},
    };
    int i = lt__name_find(dtype_names, LT_DTYPE_COUNT, s);
    if (i >= 0) { *out = (lt_dtype)i; return LT_OK; }
    for (size_t k = 0; k < sizeof aliases / sizeof aliases[0]; k++)
        if (strcmp(s, aliases[k].alias) == 0) { *out = aliases[k].dt; return LT_OK; }
    char list[128];
    return lt__err(LT_INVALID, "unknown dtype '%s' (expected one of %s)", s,
                   lt__name_join(dtype_names, LT_DTYPE_COUNT, list, sizeof list));
}

const char *lt_redop_name(lt_redop op) { return lt__name_of(redop_names, LT_REDOP_COUNT, (int)op); }

lt_status lt_redop_parse(const char *s, lt_redop *out) {
    int i = lt__name_find(redop_names, LT_REDOP_COUNT, s);
    if (i >= 0) { *out = (lt_redop)i; return LT_OK; }
    if (strcmp(s, "prod") == 0) { *out = LT_REDOP_PRODUCT; return LT_OK; }
    char list[128];
    return lt__err(LT_INVALID, "unknown reduce op '%s' (expected %s)", s,
                   lt__name_join_or(redop_names, LT_REDOP_COUNT, list, sizeof list));
}

/* The scalar conversions are the kernel bodies' (kernels/cuda/kern.h), so
 * host loops, the emulated and the device kernels round the same way. */
float lt_bf16_to_f32(uint16_t h) { return lt__k_bf16_f32(h); }
uint16_t lt_f32_to_bf16(float f) { return lt__k_f32_bf16(f); }
float lt_f16_to_f32(uint16_t h) { return lt__k_f16_f32(h); }
uint16_t lt_f32_to_f16(float f) { return lt__k_f32_f16(f); }

double lt_dtype_load(lt_dtype dt, const void *p) {
    switch (dt) {
    case LT_F32: { float v; memcpy(&v, p, 4); return v; }
    case LT_F64: { double v; memcpy(&v, p, 8); return v; }
    case LT_BF16: { uint16_t v; memcpy(&v, p, 2); return lt_bf16_to_f32(v); }
    case LT_F16: { uint16_t v; memcpy(&v, p, 2); return lt_f16_to_f32(v); }
    case LT_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case LT_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case LT_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    default: return 0.0;
    }
}

static double clamp_trunc(double v, double lo, double hi) {
    if (isnan(v)) return 0.0;
    v = trunc(v);
    if (v < lo) return lo;
    if (v > hi) return hi;
    return v;
}

void lt_dtype_store(lt_dtype dt, void *p, double v) {
    switch (dt) {
    case LT_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case LT_F64: memcpy(p, &v, 8); break;
    case LT_BF16: { uint16_t h = lt_f32_to_bf16((float)v); memcpy(p, &h, 2); break; }
    case LT_F16: { uint16_t h = lt_f32_to_f16((float)v); memcpy(p, &h, 2); break; }
    case LT_I32: {
        int32_t i = (int32_t)clamp_trunc(v, -2147483648.0, 2147483647.0);
        memcpy(p, &i, 4);
        break;
    }
    case LT_I64: {
        double c = clamp_trunc(v, -9223372036854775808.0, 9223372036854774784.0);
        int64_t i = (int64_t)c;
        memcpy(p, &i, 8);
        break;
    }
    case LT_BOOL: *(uint8_t *)p = (v != 0.0); break;
    default: break;
    }
}

void lt_dtype_default_tol(lt_dtype dt, double *rtol, double *atol) {
    switch (dt) {
    case LT_F32: *rtol = 1.3e-6; *atol = 1e-5; break;
    case LT_F64: *rtol = 1e-7; *atol = 1e-7; break;
    case LT_BF16: *rtol = 1.6e-2; *atol = 1e-5; break;
    case LT_F16: *rtol = 1e-3; *atol = 1e-5; break;
    default: *rtol = 0; *atol = 0; break;
    }
}
