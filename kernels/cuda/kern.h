/* kernels/cuda/kern.h — the shard kernels of the CUDA backend, written once
 * for two compilers.
 *
 * Why it exists: the CUDA backend (kernels/cuda/backend_cuda.cu, `make
 * CUDA=1`) needs a device version of every elementwise kernel, and those
 * must be tested on machines without a GPU. So each kernel body here is a
 * `__host__ __device__` inline function of one element index: nvcc launches
 * it over a grid (one thread per element, grid-stride), and the "cuda-emu"
 * backend (kernels/backend_emu.c, built by the host C compiler) runs the
 * same body through a host loop over the same (block, thread) grid. The
 * tests compare the emulated kernels with the CPU backend bit for bit.
 *
 * The semantics match the CPU kernels exactly (kernels/copy.c, accumulate.c,
 * unary.c, binary.c): compute domains f32 (f32, bf16, f16; rounded once on
 * store), f64 and int64 (i32, i64, wrapping); conversions through double as
 * lt_dtype_load / lt_dtype_store do; 16-bit floats round to nearest even.
 * Device math (expf, tanhf, erff, ...) may differ from the host libm in the
 * last bits; the device tests compare with each dtype's default tolerance.
 *
 * Nothing here allocates or frees; the bodies only read and write the
 * operand pointers of the lt__kargs they are given.
 */
#ifndef LT_CUDA_KERN_H
#define LT_CUDA_KERN_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "localtensor/kernels/dtype.h"
#include "localtensor/kernels/math.h"
#include "localtensor/kernels/tensor.h"

#if defined(__CUDACC__)
#define LT_HD __host__ __device__ static inline
#else
#define LT_HD static inline
#endif

/* Threads per block of every launch (and of the emulated grid). */
#define LT__KTHREADS 256
/* At most this many blocks; larger tensors loop (grid-stride). */
#define LT__KMAX_BLOCKS 65535

/* Kernel names; every backend that runs the bodies below supports them. */
typedef enum {
    LT__K_COPY,        /* op[0] = cast(op[1]) */
    LT__K_FILL,        /* op[0] = s */
    LT__K_ARANGE,      /* op[0] = row-major index */
    LT__K_SCALE,       /* op[0] *= s */
    LT__K_ACCUMULATE,  /* op[0] = op[0] redop op[1] */
    LT__K_UNARY,       /* op[0] = f(op[1]) */
    LT__K_BINARY,      /* op[0] = op[1] f op[2] (broadcast by stride 0) */
    LT__K_SCALAR,      /* op[0] = op[1] f s, or s f op[1] when rev */
    LT__K_REDUCE,      /* op[0][i] = reduce of row i (k elements) of dense op[1]; mean / s */
    LT__K_SOFTMAX,     /* dense op[0] = (log_)softmax of dense op[1]: rows of m, stride k */
    LT__K_GATHER,      /* op[0] (dense, launch shape) = op[1] at the index lists ix[] */
    LT__K_EMBED,       /* op[0] (n/nn, nn) = rows ix64[i] - p0 of op[1] (m rows), 0 outside */
    LT__K_INIT,        /* op[0] = initialiser op (LT__KINIT_*) at the global index; seed p0 */
    LT__K_DROPOUT,     /* op[0] = uniform >= s ? op[1] * alpha : 0, at the global index; seed p0 */
    LT__K_COLL_REDUCE, /* op[0] (2-D launch) = redop over srcs[0..nsrc) at p0 + strides o[1].st */
    LT__K_SCATTER,     /* op[0] at the index lists ix[] = (rev: op[0] redop) dense op[1]; lists
                        * without repeats (one thread per target element) */
    LT__K_COUNT
} lt__kernel;

/* One operand: first element and element strides over the launch shape. */
typedef struct lt__kop {
    char *p;
    int dt;                               /* lt_dtype */
    int64_t st[LT_MAX_DIMS];              /* in elements; 0 on broadcast dims */
} lt__kop;

/* Everything one launch needs, passed by value to the device. */
typedef struct lt__kargs {
    int kernel;                           /* lt__kernel */
    int op;                               /* unary / binary / reduce op */
    int rev;                              /* LT__K_SCALAR: scalar on the left */
    int ndim;
    int64_t shape[LT_MAX_DIMS];           /* launch shape (of op[0]) */
    int64_t n;                            /* elements = threads of work */
    double s;                             /* scalar (fill, scale, binary scalar) */
    double alpha;                         /* dropout: the scale of kept elements */
    int64_t m, nn, k; /* reduce: k = row length; softmax:
                       * m = row length, k = its stride; embed: m rows, nn cols */
    int64_t p0;                           /* embed: the row offset */
    const int64_t *ix[LT_MAX_DIMS];       /* gather, init, dropout: index list per dim (NULL: all,
                                           * host memory: a device backend copies them);
                                           * embed: ix[0], i64 on the backend */
    const char *const *srcs;              /* coll reduce: (nsrc) member inputs (host array of
                                           * backend pointers: a device backend copies it) */
    int nsrc;
    lt__kop o[3];
} lt__kargs;

/* ---- scalar conversions (kernels/dtype.c's lt_f32_to_f16 and the rest are these) */

LT_HD float lt__k_bf16_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

LT_HD uint16_t lt__k_f32_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

LT_HD float lt__k_f16_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else {
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

LT_HD uint16_t lt__k_f32_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u, absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (absu >= 0x47800000u) return (uint16_t)(sign | 0x7c00u);
    if (absu < 0x38800000u) {
        if (absu < 0x33000000u) return (uint16_t)sign;
        uint32_t e = absu >> 23, m = (absu & 0x7fffffu) | 0x800000u, shift = 126 - e;
        uint32_t res = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (res & 1u))) res++;
        return (uint16_t)(sign | res);
    }
    uint32_t r = absu + 0xfffu + ((absu >> 13) & 1u);
    r -= (uint32_t)(127 - 15) << 23;
    if (r >= 0x0f800000u) return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | (r >> 13));
}

LT_HD double lt__k_load_f64(int dt, const char *p) {
    switch (dt) {
    case LT_F32: { float v; memcpy(&v, p, 4); return v; }
    case LT_F64: { double v; memcpy(&v, p, 8); return v; }
    case LT_BF16: { uint16_t v; memcpy(&v, p, 2); return lt__k_bf16_f32(v); }
    case LT_F16: { uint16_t v; memcpy(&v, p, 2); return lt__k_f16_f32(v); }
    case LT_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case LT_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case LT_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    default: return 0.0;
    }
}

LT_HD double lt__k_clamp_trunc(double v, double lo, double hi) {
    if (v != v) return 0.0;
    v = trunc(v);
    return v < lo ? lo : v > hi ? hi : v;
}

LT_HD void lt__k_store_f64(int dt, char *p, double v) {
    switch (dt) {
    case LT_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case LT_F64: memcpy(p, &v, 8); break;
    case LT_BF16: { uint16_t h = lt__k_f32_bf16((float)v); memcpy(p, &h, 2); break; }
    case LT_F16: { uint16_t h = lt__k_f32_f16((float)v); memcpy(p, &h, 2); break; }
    case LT_I32: {
        int32_t i = (int32_t)lt__k_clamp_trunc(v, -2147483648.0, 2147483647.0);
        memcpy(p, &i, 4);
        break;
    }
    case LT_I64: {
        int64_t i = (int64_t)lt__k_clamp_trunc(v, -9223372036854775808.0, 9223372036854774784.0);
        memcpy(p, &i, 8);
        break;
    }
    case LT_BOOL: *(uint8_t *)p = (uint8_t)(v != 0.0); break;
    default: break;
    }
}

/* The f32 domain (f32, bf16, f16), as lt__load_f32 / lt__store_f32. */
LT_HD float lt__k_load_f32(int dt, const char *p) {
    uint16_t h;
    switch (dt) {
    case LT_F32: { float v; memcpy(&v, p, 4); return v; }
    case LT_BF16: memcpy(&h, p, 2); return lt__k_bf16_f32(h);
    case LT_F16: memcpy(&h, p, 2); return lt__k_f16_f32(h);
    default: return (float)lt__k_load_f64(dt, p);
    }
}

LT_HD void lt__k_store_f32(int dt, char *p, float v) {
    uint16_t h;
    switch (dt) {
    case LT_F32: memcpy(p, &v, 4); return;
    case LT_BF16: h = lt__k_f32_bf16(v); memcpy(p, &h, 2); return;
    case LT_F16: h = lt__k_f32_f16(v); memcpy(p, &h, 2); return;
    default: lt__k_store_f64(dt, p, v); return;
    }
}

/* The int64 domain (i32, i64), as lt__load_i64 / lt__store_i64 (i32 wraps). */
LT_HD int64_t lt__k_load_i64(int dt, const char *p) {
    if (dt == LT_I64) { int64_t v; memcpy(&v, p, 8); return v; }
    if (dt == LT_I32) { int32_t v; memcpy(&v, p, 4); return v; }
    return (int64_t)lt__k_load_f64(dt, p);
}

LT_HD void lt__k_store_i64(int dt, char *p, int64_t v) {
    if (dt == LT_I64) { memcpy(p, &v, 8); return; }
    if (dt == LT_I32) { int32_t w = (int32_t)(uint32_t)(uint64_t)v; memcpy(p, &w, 4); return; }
    lt__k_store_f64(dt, p, (double)v);
}

LT_HD int lt__k_size(int dt) {
    switch (dt) {
    case LT_F64: case LT_I64: return 8;
    case LT_F32: case LT_I32: return 4;
    case LT_BF16: case LT_F16: return 2;
    default: return 1;
    }
}

/* Byte addresses of element i (row-major over a->shape) of the first nops operands. */
LT_HD void lt__k_addr(const lt__kargs *a, int nops, int64_t i, char **p) {
    int64_t off[3] = {0, 0, 0};
    for (int d = a->ndim - 1; d >= 0; d--) {
        int64_t x = i % a->shape[d];
        i /= a->shape[d];
        for (int k = 0; k < nops; k++) off[k] += x * a->o[k].st[d];
    }
    for (int k = 0; k < nops; k++) p[k] = a->o[k].p + off[k] * lt__k_size(a->o[k].dt);
}

/* ---- the element ops (same formulas as the CPU loops) ------------------------- */

LT_HD float lt__k_unary_f32(int op, float v) {
    switch (op) {
    case LT_UNARY_NEG: return -v;
    case LT_UNARY_ABS: return fabsf(v);
    case LT_UNARY_EXP: return expf(v);
    case LT_UNARY_LOG: return logf(v);
    case LT_UNARY_SQRT: return sqrtf(v);
    case LT_UNARY_TANH: return tanhf(v);
    case LT_UNARY_RELU: return v < 0.0f ? 0.0f : v;
    case LT_UNARY_GELU: return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case LT_UNARY_SIGMOID: return 1.0f / (1.0f + expf(-v));
    default: return v;
    }
}

LT_HD double lt__k_unary_f64(int op, double v) {
    switch (op) {
    case LT_UNARY_NEG: return -v;
    case LT_UNARY_ABS: return fabs(v);
    case LT_UNARY_EXP: return exp(v);
    case LT_UNARY_LOG: return log(v);
    case LT_UNARY_SQRT: return sqrt(v);
    case LT_UNARY_TANH: return tanh(v);
    case LT_UNARY_RELU: return v < 0.0 ? 0.0 : v;
    case LT_UNARY_GELU: return 0.5 * v * (1.0 + erf(v * 0.70710678118654752440));
    case LT_UNARY_SIGMOID: return 1.0 / (1.0 + exp(-v));
    default: return v;
    }
}

LT_HD int64_t lt__k_unary_i64(int op, int64_t v) {
    switch (op) {
    case LT_UNARY_NEG: return (int64_t)(0u - (uint64_t)v);
    case LT_UNARY_ABS: return v < 0 ? (int64_t)(0u - (uint64_t)v) : v;
    case LT_UNARY_RELU: return v < 0 ? 0 : v;
    default: return v;
    }
}

/* a op b in the float domains (NaN propagates through maximum / minimum). */
#define LT__K_BIN_FLOAT(name, T)                                                 \
    LT_HD T name(int op, T a, T b) {                                             \
        switch (op) {                                                            \
        case LT_BINARY_ADD: return a + b;                                        \
        case LT_BINARY_SUB: return a - b;                                        \
        case LT_BINARY_MUL: return a * b;                                        \
        case LT_BINARY_DIV: return a / b;                                        \
        case LT_BINARY_MAXIMUM: return (a > b || a != a) ? a : b;                \
        case LT_BINARY_MINIMUM: return (a < b || a != a) ? a : b;                \
        default: return a;                                                       \
        }                                                                        \
    }
LT__K_BIN_FLOAT(lt__k_bin_f32, float)
LT__K_BIN_FLOAT(lt__k_bin_f64, double)
#undef LT__K_BIN_FLOAT

LT_HD int64_t lt__k_bin_i64(int op, int64_t a, int64_t b) {
    switch (op) {
    case LT_BINARY_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case LT_BINARY_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
    case LT_BINARY_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case LT_BINARY_MAXIMUM: return b > a ? b : a;
    case LT_BINARY_MINIMUM: return b < a ? b : a;
    default: return a;
    }
}

/* Reduce ops of accumulate (avg accumulates as sum; NaN propagates). */
#define LT__K_RED_FLOAT(name, T)                                                 \
    LT_HD T name(int op, T d, T s) {                                             \
        switch (op) {                                                            \
        case LT_REDOP_MAX: return (s > d || s != s) ? s : d;                     \
        case LT_REDOP_MIN: return (s < d || s != s) ? s : d;                     \
        case LT_REDOP_PRODUCT: return d * s;                                     \
        default: return d + s;                                                   \
        }                                                                        \
    }
LT__K_RED_FLOAT(lt__k_red_f32, float)
LT__K_RED_FLOAT(lt__k_red_f64, double)
#undef LT__K_RED_FLOAT

LT_HD int64_t lt__k_red_i64(int op, int64_t d, int64_t s, int bits32) {
    uint64_t r;
    switch (op) {
    case LT_REDOP_MAX: return s > d ? s : d;
    case LT_REDOP_MIN: return s < d ? s : d;
    case LT_REDOP_PRODUCT: r = (uint64_t)d * (uint64_t)s; break;
    default: r = (uint64_t)d + (uint64_t)s; break;
    }
    return bits32 ? (int64_t)(int32_t)(uint32_t)r : (int64_t)r;
}

/* ---- kernel bodies: one element index each ------------------------------------ */

LT_HD void lt__k_copy(const lt__kargs *a, int64_t i) {
    char *p[3];
    lt__k_addr(a, 2, i, p);
    int dd = a->o[0].dt, sd = a->o[1].dt;
    if (dd == sd) {
        memcpy(p[0], p[1], (size_t)lt__k_size(dd));
        return;
    }
    lt__k_store_f64(dd, p[0], lt__k_load_f64(sd, p[1]));
}

LT_HD void lt__k_fill(const lt__kargs *a, int64_t i) {
    char *p[3];
    lt__k_addr(a, 1, i, p);
    lt__k_store_f64(a->o[0].dt, p[0], a->s);
}

LT_HD void lt__k_arange(const lt__kargs *a, int64_t i) {
    char *p[3];
    lt__k_addr(a, 1, i, p);
    lt__k_store_f64(a->o[0].dt, p[0], (double)i);
}

LT_HD void lt__k_scale(const lt__kargs *a, int64_t i) {
    char *p[3];
    lt__k_addr(a, 1, i, p);
    int dt = a->o[0].dt;
    lt__k_store_f64(dt, p[0], lt__k_load_f64(dt, p[0]) * a->s);
}

/* *d = *d op *s for one element of dt (lt__accumulate_run's semantics). */
LT_HD void lt__k_acc_elem(int dt, int op, char *d, const char *s) {
    switch (dt) {
    case LT_F64: {
        double x, y;
        memcpy(&x, d, 8);
        memcpy(&y, s, 8);
        x = lt__k_red_f64(op, x, y);
        memcpy(d, &x, 8);
        return;
    }
    case LT_F32: case LT_BF16: case LT_F16:
        lt__k_store_f32(dt, d, lt__k_red_f32(op, lt__k_load_f32(dt, d), lt__k_load_f32(dt, s)));
        return;
    case LT_I32: case LT_I64:
        lt__k_store_i64(
            dt, d, lt__k_red_i64(op, lt__k_load_i64(dt, d), lt__k_load_i64(dt, s), dt == LT_I32));
        return;
    case LT_BOOL: {
        uint8_t x = *(uint8_t *)d, y = *(const uint8_t *)s;
        int both = op == LT_REDOP_PRODUCT || op == LT_REDOP_MIN;
        *(uint8_t *)d = (uint8_t)(both ? (x && y) : (x || y));
        return;
    }
    default: return;
    }
}

LT_HD void lt__k_accumulate(const lt__kargs *a, int64_t i) {
    char *p[3];
    lt__k_addr(a, 2, i, p);
    lt__k_acc_elem(a->o[0].dt, a->op, p[0], p[1]);
}

LT_HD void lt__k_unary(const lt__kargs *a, int64_t i) {
    char *p[3];
    lt__k_addr(a, 2, i, p);
    int dt = a->o[0].dt;
    if (dt == LT_F64) lt__k_store_f64(dt, p[0], lt__k_unary_f64(a->op, lt__k_load_f64(dt, p[1])));
    else if (dt == LT_F32 || dt == LT_BF16 || dt == LT_F16)
        lt__k_store_f32(dt, p[0], lt__k_unary_f32(a->op, lt__k_load_f32(dt, p[1])));
    else lt__k_store_i64(dt, p[0], lt__k_unary_i64(a->op, lt__k_load_i64(dt, p[1])));
}

LT_HD void lt__k_binary(const lt__kargs *a, int64_t i) {
    char *p[3];
    lt__k_addr(a, 3, i, p);
    int dt = a->o[0].dt;
    if (dt == LT_F64)
        lt__k_store_f64(dt, p[0],
                        lt__k_bin_f64(a->op, lt__k_load_f64(dt, p[1]), lt__k_load_f64(dt, p[2])));
    else if (dt == LT_F32 || dt == LT_BF16 || dt == LT_F16)
        lt__k_store_f32(dt, p[0],
                        lt__k_bin_f32(a->op, lt__k_load_f32(dt, p[1]), lt__k_load_f32(dt, p[2])));
    else
        lt__k_store_i64(dt, p[0],
                        lt__k_bin_i64(a->op, lt__k_load_i64(dt, p[1]), lt__k_load_i64(dt, p[2])));
}

LT_HD void lt__k_scalar(const lt__kargs *a, int64_t i) {
    char *p[3];
    lt__k_addr(a, 2, i, p);
    int dt = a->o[0].dt, r = a->rev;
    if (dt == LT_F64) {
        double x = lt__k_load_f64(dt, p[1]), s = a->s;
        lt__k_store_f64(dt, p[0], r ? lt__k_bin_f64(a->op, s, x) : lt__k_bin_f64(a->op, x, s));
    } else if (dt == LT_F32 || dt == LT_BF16 || dt == LT_F16) {
        float x = lt__k_load_f32(dt, p[1]), s = (float)a->s;
        lt__k_store_f32(dt, p[0], r ? lt__k_bin_f32(a->op, s, x) : lt__k_bin_f32(a->op, x, s));
    } else {
        int64_t x = lt__k_load_i64(dt, p[1]), s = (int64_t)a->s;
        lt__k_store_i64(dt, p[0], r ? lt__k_bin_i64(a->op, s, x) : lt__k_bin_i64(a->op, x, s));
    }
}

/* Row i of a dense (rows, k) tensor reduced in f64 (floats) or int64
 * (integers, wrapping), as kernels/reduce.c: the same order, the same NaN
 * rules (max/min stop at the end of the 512-element chunk holding a NaN). */
LT_HD void lt__k_reduce(const lt__kargs *a, int64_t i) {
    int dt = a->o[1].dt, es = lt__k_size(dt), op = a->op;
    int64_t r = a->k;
    const char *row = a->o[1].p + (r > 0 ? i * r * es : 0);
    char *po = a->o[0].p + i * es;
    if (dt == LT_F32 || dt == LT_F64 || dt == LT_BF16 || dt == LT_F16) {
        double acc = op == LT_REDUCE_MAX ? -INFINITY : op == LT_REDUCE_MIN ? INFINITY : 0.0;
        for (int64_t j = 0; j < r; j++) {
            double v = lt__k_load_f64(dt, row + j * es);
            if (op == LT_REDUCE_SUM || op == LT_REDUCE_MEAN) acc += v;
            else if (op == LT_REDUCE_MAX ? (v > acc || v != v) : (v < acc || v != v)) acc = v;
            if (acc != acc && op != LT_REDUCE_SUM && op != LT_REDUCE_MEAN && (j + 1) % 512 == 0)
                break;
        }
        if (op == LT_REDUCE_MEAN) acc /= a->s;
        lt__k_store_f64(dt, po, acc);
    } else {
        int64_t acc = op == LT_REDUCE_MAX ? INT64_MIN : op == LT_REDUCE_MIN ? INT64_MAX : 0;
        for (int64_t j = 0; j < r; j++) {
            int64_t v = lt__k_load_i64(dt, row + j * es);
            if (op == LT_REDUCE_SUM) acc = (int64_t)((uint64_t)acc + (uint64_t)v);
            else if (op == LT_REDUCE_MAX ? v > acc : v < acc) acc = v;
        }
        lt__k_store_i64(dt, po, acc);
    }
}

/* One softmax row (i = outer * k + inner), in f64 as kernels/reduce.c. */
LT_HD void lt__k_softmax(const lt__kargs *a, int64_t i) {
    int dt = a->o[1].dt, es = lt__k_size(dt);
    int64_t n = a->m, inner = a->k, outer = i / inner, b = i % inner;
    int64_t off = (outer * n * inner + b) * es, step = inner * es;
    const char *src = a->o[1].p + off;
    char *dst = a->o[0].p + off;
    double mx = -INFINITY, s = 0;
    for (int64_t j = 0; j < n; j++) {
        double v = lt__k_load_f64(dt, src + j * step);
        if (v > mx || v != v) mx = v;
    }
    if (mx == -INFINITY) mx = 0;
    for (int64_t j = 0; j < n; j++) s += exp(lt__k_load_f64(dt, src + j * step) - mx);
    double ls = mx + log(s);
    for (int64_t j = 0; j < n; j++) {
        double v = lt__k_load_f64(dt, src + j * step);
        lt__k_store_f64(dt, dst + j * step, a->rev ? v - ls : exp(v - mx) / s);
    }
}

LT_HD void lt__k_gather(const lt__kargs *a, int64_t i) {
    int es = lt__k_size(a->o[0].dt);
    int64_t off = 0, rest = i;
    for (int d = a->ndim - 1; d >= 0; d--) {
        int64_t x = rest % a->shape[d];
        rest /= a->shape[d];
        off += (a->ix[d] ? a->ix[d][x] : x) * a->o[1].st[d];
    }
    memcpy(a->o[0].p + i * es, a->o[1].p + off * es, (size_t)es);
}

LT_HD void lt__k_scatter(const lt__kargs *a, int64_t i) {
    int es = lt__k_size(a->o[0].dt);
    int64_t off = 0, rest = i;
    for (int d = a->ndim - 1; d >= 0; d--) {
        int64_t x = rest % a->shape[d];
        rest /= a->shape[d];
        off += (a->ix[d] ? a->ix[d][x] : x) * a->o[0].st[d];
    }
    char *t = a->o[0].p + off * es;
    const char *s = a->o[1].p + i * es;
    if (a->rev) lt__k_acc_elem(a->o[0].dt, a->op, t, s);
    else memcpy(t, s, (size_t)es);
}

LT_HD void lt__k_embed(const lt__kargs *a, int64_t i) {
    int es = lt__k_size(a->o[0].dt);
    int64_t row = i / a->nn, col = i % a->nn, r = a->ix[0][row] - a->p0;
    char *d = a->o[0].p + i * es;
    if (r < 0 || r >= a->m) memset(d, 0, (size_t)es);
    else memcpy(d, a->o[1].p + (r * a->o[1].st[0] + col * a->o[1].st[1]) * es, (size_t)es);
}

/* ---- counter-based random numbers (the values of localtensor/random.h) ------- */

/* Initialisers of LT__K_INIT (localtensor/random.c maps its kinds here). */
enum { LT__KINIT_ARANGE, LT__KINIT_UNIFORM, LT__KINIT_NORMAL };

/* Philox4x32-10 on (ctr, key); c is replaced by the output. */
LT_HD void lt__k_philox(uint32_t c[4], uint32_t k0, uint32_t k1) {
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1, n3 = (uint32_t)p0;
        c[0] = n0; c[1] = n1; c[2] = n2; c[3] = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

LT_HD void lt__k_draw(uint64_t seed, uint64_t index, uint32_t o[4]) {
    o[0] = (uint32_t)index; o[1] = (uint32_t)(index >> 32); o[2] = 0; o[3] = 0;
    lt__k_philox(o, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* Uniform [0, 1) with 24 random bits. */
LT_HD double lt__k_uniform(uint64_t seed, uint64_t index) {
    uint32_t o[4];
    lt__k_draw(seed, index, o);
    return (double)(o[0] >> 8) * (1.0 / 16777216.0);
}

/* Standard normal: Box-Muller on two draws of the same counter. */
LT_HD double lt__k_normal(uint64_t seed, uint64_t index) {
    uint32_t o[4];
    lt__k_draw(seed, index, o);
    double u1 = ((double)(o[0] >> 8) + 1.0) * (1.0 / 16777217.0);
    double u2 = (double)(o[1] >> 8) * (1.0 / 16777216.0);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* An initialiser's value at a global index for a dtype-dt tensor (integers:
 * floor(1000 u) / round(100 n); bool: u < 0.5 / n > 0). */
LT_HD double lt__k_init_value(int kind, uint64_t seed, uint64_t index, int dt) {
    if (kind == LT__KINIT_ARANGE) return (double)index;
    double v = kind == LT__KINIT_UNIFORM ? lt__k_uniform(seed, index) : lt__k_normal(seed, index);
    if (dt == LT_F32 || dt == LT_F64 || dt == LT_BF16 || dt == LT_F16) return v;
    if (dt == LT_BOOL) return kind == LT__KINIT_UNIFORM ? (v < 0.5) : (v > 0);
    return kind == LT__KINIT_UNIFORM ? floor(v * 1000.0) : round(v * 100.0);
}

/* Element i of the launch shape: its global linear index (index lists ix,
 * global strides o[2].st) and element offsets in o[0] and o[1]. */
LT_HD uint64_t lt__k_global(const lt__kargs *a, int64_t i, int64_t *off0, int64_t *off1) {
    uint64_t g = 0;
    int64_t o0 = 0, o1 = 0;
    for (int d = a->ndim - 1; d >= 0; d--) {
        int64_t x = i % a->shape[d];
        i /= a->shape[d];
        g += (uint64_t)((a->ix[d] ? a->ix[d][x] : x) * a->o[2].st[d]);
        o0 += x * a->o[0].st[d];
        o1 += x * a->o[1].st[d];
    }
    *off0 = o0;
    *off1 = o1;
    return g;
}

LT_HD void lt__k_init(const lt__kargs *a, int64_t i) {
    int64_t o0, o1;
    uint64_t g = lt__k_global(a, i, &o0, &o1);
    int dt = a->o[0].dt;
    lt__k_store_f64(dt, a->o[0].p + o0 * lt__k_size(dt),
                    lt__k_init_value(a->op, (uint64_t)a->p0, g, dt));
}

LT_HD void lt__k_dropout(const lt__kargs *a, int64_t i) {
    int64_t o0, o1;
    uint64_t g = lt__k_global(a, i, &o0, &o1);
    int dt = a->o[0].dt, xt = a->o[1].dt;
    double v = lt__k_uniform((uint64_t)a->p0, g) >= a->s
                   ? lt__k_load_f64(xt, a->o[1].p + o1 * lt__k_size(xt)) * a->alpha : 0.0;
    lt__k_store_f64(dt, a->o[0].p + o0 * lt__k_size(dt), v);
}

/* One element of a reducing collective, with the in-process engine's
 * semantics (collectives_sim/engine_inproc.c): member order; f32, bf16 and
 * f16 accumulate in f32 and round once; f64 in f64; i32 in int64 (sums
 * exact, products wrapped to 32 bits), i64 wrapping; avg divides the sum by
 * the member count (integers truncating); bool: sum/max or, product/min and. */
LT_HD void lt__k_coll_reduce(const lt__kargs *a, int64_t i) {
    int64_t r = i / a->shape[1], c = i % a->shape[1];
    int dt = a->o[0].dt, es = lt__k_size(dt), op = a->op, n = a->nsrc, avg = op == LT_REDOP_AVG;
    int64_t so = (a->p0 + r * a->o[1].st[0] + c * a->o[1].st[1]) * es;
    char *d = a->o[0].p + (r * a->o[0].st[0] + c * a->o[0].st[1]) * es;
    switch (dt) {
    case LT_F32: case LT_BF16: case LT_F16: {
        float acc = lt__k_load_f32(dt, a->srcs[0] + so);
        for (int p = 1; p < n; p++)
            acc = lt__k_red_f32(op, acc, lt__k_load_f32(dt, a->srcs[p] + so));
        lt__k_store_f32(dt, d, avg ? acc / (float)n : acc);
        return;
    }
    case LT_F64: {
        double acc, v;
        memcpy(&acc, a->srcs[0] + so, 8);
        for (int p = 1; p < n; p++) {
            memcpy(&v, a->srcs[p] + so, 8);
            acc = lt__k_red_f64(op, acc, v);
        }
        if (avg) acc /= (double)n;
        memcpy(d, &acc, 8);
        return;
    }
    case LT_I32: {
        int32_t x;
        memcpy(&x, a->srcs[0] + so, 4);
        int64_t acc = x;
        for (int p = 1; p < n; p++) {
            memcpy(&x, a->srcs[p] + so, 4);
            if (op == LT_REDOP_SUM || avg) acc += x;
            else if (op == LT_REDOP_MAX) acc = x > acc ? x : acc;
            else if (op == LT_REDOP_MIN) acc = x < acc ? x : acc;
            else acc = (int64_t)(uint32_t)((uint64_t)acc * (uint64_t)(int64_t)x);
        }
        if (avg) acc /= n;
        uint32_t w = (uint32_t)(uint64_t)acc;
        memcpy(d, &w, 4);
        return;
    }
    case LT_I64: {
        uint64_t acc;
        int64_t x;
        memcpy(&acc, a->srcs[0] + so, 8);
        for (int p = 1; p < n; p++) {
            memcpy(&x, a->srcs[p] + so, 8);
            if (op == LT_REDOP_SUM || avg) acc += (uint64_t)x;
            else if (op == LT_REDOP_MAX) { if (x > (int64_t)acc) acc = (uint64_t)x; }
            else if (op == LT_REDOP_MIN) { if (x < (int64_t)acc) acc = (uint64_t)x; }
            else acc *= (uint64_t)x;
        }
        if (avg) {
            int64_t v;
            memcpy(&v, &acc, 8);
            v /= n;
            memcpy(&acc, &v, 8);
        }
        memcpy(d, &acc, 8);
        return;
    }
    case LT_BOOL: {
        uint8_t acc = a->srcs[0][so] != 0;
        int any = op == LT_REDOP_SUM || op == LT_REDOP_MAX;
        for (int p = 1; p < n; p++)
            acc = any ? (uint8_t)(acc | (a->srcs[p][so] != 0))
                      : (uint8_t)(acc & (a->srcs[p][so] != 0));
        *(uint8_t *)d = acc;
        return;
    }
    default: return;
    }
}

/* Runs body over elements [0, n) as the launch grid would: `blocks` blocks
 * of LT__KTHREADS threads, each thread striding by the grid size. */
#define LT__K_GRID_LOOP(i, n, block, thread, nblocks)                              \
    for (int64_t i = (int64_t)(block) * LT__KTHREADS + (thread); i < (n);           \
         i += (int64_t)(nblocks) * LT__KTHREADS)

LT_HD int64_t lt__k_blocks(int64_t n) {
    int64_t b = (n + LT__KTHREADS - 1) / LT__KTHREADS;
    return b < 1 ? 1 : b > LT__KMAX_BLOCKS ? LT__KMAX_BLOCKS : b;
}

#endif
