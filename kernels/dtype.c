/* kernels/dtype.c — dtype tables and scalar conversions (incl. bf16/f16). */
#include "kernels/dtype.h"
#include "kernels/status_impl.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
    int is_float;
} dtype_table[] = {
#define LT__XX(e, s, sz, fl) {s, sz, fl},
    LT_DTYPE_MAP(LT__XX)
#undef LT__XX
};

static const char *const redop_names[] = {
#define LT__XX(e, s) s,
    LT_REDOP_MAP(LT__XX)
#undef LT__XX
};

size_t lt_dtype_size(lt_dtype dt) { return dtype_table[dt].size; }
const char *lt_dtype_name(lt_dtype dt) {
    if ((int)dt < 0 || dt >= LT_DTYPE_COUNT) return "?";
    return dtype_table[dt].name;
}
int lt_dtype_is_float(lt_dtype dt) { return dtype_table[dt].is_float; }

lt_status lt_dtype_parse(const char *s, lt_dtype *out) {
    static const struct { const char *alias; lt_dtype dt; } aliases[] = {
        {"float32", LT_F32}, {"float", LT_F32}, {"float64", LT_F64}, {"double", LT_F64},
        {"bfloat16", LT_BF16}, {"float16", LT_F16}, {"half", LT_F16},
        {"int32", LT_I32}, {"int", LT_I32}, {"int64", LT_I64}, {"long", LT_I64},
    };
    for (int i = 0; i < LT_DTYPE_COUNT; i++)
        if (strcmp(s, dtype_table[i].name) == 0) { *out = (lt_dtype)i; return LT_OK; }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(s, aliases[i].alias) == 0) { *out = aliases[i].dt; return LT_OK; }
    return lt__err(LT_INVALID, "unknown dtype '%s' (expected one of f32, f64, bf16, f16, i32, i64, bool)", s);
}

const char *lt_redop_name(lt_redop op) {
    if ((int)op < 0 || op >= LT_REDOP_COUNT) return "?";
    return redop_names[op];
}

lt_status lt_redop_parse(const char *s, lt_redop *out) {
    for (int i = 0; i < LT_REDOP_COUNT; i++)
        if (strcmp(s, redop_names[i]) == 0) { *out = (lt_redop)i; return LT_OK; }
    if (strcmp(s, "prod") == 0) { *out = LT_REDOP_PRODUCT; return LT_OK; }
    return lt__err(LT_INVALID, "unknown reduce op '%s' (expected sum, avg, max, min or product)", s);
}

float lt_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t lt_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float lt_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while ((man & 0x400u) == 0);
            man &= 0x3ffu;
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | (man << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t lt_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);   /* NaN */
    if (absu >= 0x47800000u) {                                    /* >= 65536: inf (or rounds there) */
        if (absu == 0x7f800000u) return (uint16_t)(sign | 0x7c00u);
        /* values in [65520, 65536) round to inf; above too */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (absu < 0x38800000u) { /* below smallest normal 2^-14: subnormal or zero */
        if (absu < 0x33000000u) return (uint16_t)sign;            /* < 2^-25 rounds to 0 */
        uint32_t e = absu >> 23;
        uint32_t m = (absu & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e;                                 /* 14 - (e - 127) + 13 - 1 ... */
        /* value = m * 2^(e-150); subnormal unit 2^-24 -> result = m >> (126 - e) */
        uint32_t res = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (res & 1u))) res++;
        return (uint16_t)(sign | res);
    }
    uint32_t r = absu + 0xfffu + ((absu >> 13) & 1u);             /* round mantissa to 10 bits */
    r -= (uint32_t)(127 - 15) << 23;
    if (r >= 0x0f800000u) return (uint16_t)(sign | 0x7c00u);      /* overflowed into inf */
    return (uint16_t)(sign | (r >> 13));
}

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
    case LT_I32: { int32_t i = (int32_t)clamp_trunc(v, -2147483648.0, 2147483647.0); memcpy(p, &i, 4); break; }
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
