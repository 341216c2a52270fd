/* localtensor/random.c — Philox4x32-10 and index-keyed initialisers.
 *
 * The generator itself is kernels/cuda/kern.h's (one source for the host,
 * the cuda-emu backend and the device); a shard on a backend that launches
 * kernels is filled there, one thread per element. */
#include "localtensor/random.h"
#include "kernels/cuda/kern.h"
#include "kernels/tensor_impl.h"
#include "kernels/status_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const init_names[] = {
#define LT__XX(e, s, seeded) s,
    LT_INIT_MAP(LT__XX)
#undef LT__XX
};
/* The spellings users type: NAME, or NAME:SEED for the seeded ones. */
static const char *const init_forms[] = {
#define LT__XX(e, s, seeded) seeded ? s ":SEED" : s,
    LT_INIT_MAP(LT__XX)
#undef LT__XX
};
static const int init_seeded[] = {
#define LT__XX(e, s, seeded) seeded,
    LT_INIT_MAP(LT__XX)
#undef LT__XX
};

lt_status lt_init_parse(const char *s, lt_init *out) {
    memset(out, 0, sizeof *out);
    const char *colon = strchr(s, ':');
    size_t nlen = colon ? (size_t)(colon - s) : strlen(s);
    for (int i = 0; i < LT_INIT_COUNT; i++) {
        if (strlen(init_names[i]) != nlen || strncmp(s, init_names[i], nlen) != 0) continue;
        out->kind = (lt_init_kind)i;
        if (init_seeded[i]) {
            if (!colon || !colon[1])
                return lt__err(LT_INVALID, "init '%s': %s needs a seed, e.g. %s:0", s,
                               init_names[i], init_names[i]);
            char *end;
            errno = 0;
            unsigned long long v = strtoull(colon + 1, &end, 10);
            if (*end || errno || colon[1] == '-')
                return lt__err(LT_INVALID, "init '%s': seed '%s' is not a non-negative integer", s,
                               colon + 1);
            out->seed = v;
        } else if (colon) {
            return lt__err(LT_INVALID, "init '%s': %s takes no seed", s, init_names[i]);
        }
        return LT_OK;
    }
    char list[128];
    return lt__err(LT_INVALID, "init '%s': unknown (expected %s)", s,
                   lt__name_join_or(init_forms, LT_INIT_COUNT, list, sizeof list));
}

char *lt_init_format(const lt_init *in, char *buf, size_t n) {
    if ((unsigned)in->kind < LT_INIT_COUNT && init_seeded[in->kind])
        snprintf(buf, n, "%s:%" PRIu64, init_names[in->kind], in->seed);
    else
        snprintf(buf, n, "%s", init_names[in->kind]);
    return buf;
}

void lt_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    for (int i = 0; i < 4; i++) out[i] = ctr[i];
    lt__k_philox(out, key[0], key[1]);
}

double lt_rand_uniform(uint64_t seed, uint64_t index) { return lt__k_uniform(seed, index); }

double lt_rand_normal(uint64_t seed, uint64_t index) { return lt__k_normal(seed, index); }

double lt_init_value(const lt_init *in, uint64_t index) {
    switch (in->kind) {
    case LT_INIT_ARANGE: return (double)index;
    case LT_INIT_ZEROS: return 0.0;
    case LT_INIT_ONES: return 1.0;
    case LT_INIT_RANDOM: return lt_rand_uniform(in->seed, index);
    case LT_INIT_RANDN: return lt_rand_normal(in->seed, index);
    default: return 0.0;
    }
}

double lt_init_value_dt(const lt_init *in, uint64_t index, lt_dtype dt) {
    double v = lt_init_value(in, index);
    if (lt_dtype_is_float(dt) || (in->kind != LT_INIT_RANDOM && in->kind != LT_INIT_RANDN))
        return v;
    if (dt == LT_BOOL) return in->kind == LT_INIT_RANDOM ? (v < 0.5) : (v > 0);
    return in->kind == LT_INIT_RANDOM ? floor(v * 1000.0) : round(v * 100.0);
}

lt_status lt_init_fill(lt_tensor *t, const lt_init *in) {
    return lt_init_fill_indexed(t, in, NULL, t->shape);
}

lt_status lt_init_fill_indexed(lt_tensor *t, const lt_init *in, int64_t *const *idx,
                               const int64_t *gshape) {
    int nd = t->ndim;
    int64_t n = lt_numel(t);
    if (n == 0) return LT_OK;
    if (in->kind == LT_INIT_ZEROS || in->kind == LT_INIT_ONES)
        return lt_fill(t, in->kind == LT_INIT_ONES ? 1.0 : 0.0);
    int64_t gstr[LT_MAX_DIMS];
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) { gstr[d] = s; s *= gshape[d] > 0 ? gshape[d] : 1; }
    lt__kargs ka; /* a backend's kernel: one thread per element */
    memset(&ka, 0, sizeof ka);
    ka.kernel = LT__K_INIT;
    ka.op = in->kind == LT_INIT_ARANGE   ? LT__KINIT_ARANGE
            : in->kind == LT_INIT_RANDOM ? LT__KINIT_UNIFORM
                                         : LT__KINIT_NORMAL;
    ka.p0 = (int64_t)in->seed;
    ka.ndim = nd;
    ka.n = n;
    ka.o[0].p = lt_data(t);
    ka.o[0].dt = (int)t->dtype;
    for (int d = 0; d < nd; d++) {
        ka.shape[d] = t->shape[d];
        ka.o[0].st[d] = t->strides[d];
        ka.o[2].st[d] = gstr[d];
        ka.ix[d] = idx ? idx[d] : NULL;
    }
    lt_status st = lt__klaunch_raw(lt__backend_of(t), &ka);
    if (st != LT_UNSUPPORTED) return st;
    if (!lt__on_host(t)) { /* no kernel there: the host loop on an explicit host copy */
        lt__hostrun hr;
        const lt_tensor *tc = t;
        LT_TRY(lt__host_begin(&hr, 1, &tc));
        return lt__host_end(&hr, 1,
                            lt_init_fill_indexed((lt_tensor *)(uintptr_t)hr.t[0], in, idx, gshape));
    }
    int64_t pos[LT_MAX_DIMS] = {0};
    size_t es = lt_dtype_size(t->dtype);
    char *base = lt_data(t);
    if (in->kind == LT_INIT_ARANGE && t->dtype == LT_F32 && nd > 0 && lt_is_contiguous(t)) {
        /* the common case, a row at a time: value = global row-major index */
        int last = nd - 1;
        int64_t len = t->shape[last];
        const int64_t *gl = idx ? idx[last] : NULL;
        float *p = (float *)base;   /* (numel) row-major */
        for (int64_t row = 0; row < n / len; row++) {
            int64_t g = 0;
            for (int d = 0; d < last; d++) g += (idx && idx[d] ? idx[d][pos[d]] : pos[d]) * gstr[d];
            if (gl)
                for (int64_t j = 0; j < len; j++) p[j] = (float)(double)(g + gl[j] * gstr[last]);
            else
                for (int64_t j = 0; j < len; j++) p[j] = (float)(double)(g + j * gstr[last]);
            p += len;
            for (int d = last - 1; d >= 0; d--) {
                if (++pos[d] < t->shape[d]) break;
                pos[d] = 0;
            }
        }
        return LT_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t g = 0, off = 0;
        for (int d = 0; d < nd; d++) {
            int64_t gi = idx && idx[d] ? idx[d][pos[d]] : pos[d];
            g += gi * gstr[d];
            off += pos[d] * t->strides[d];
        }
        lt_dtype_store(t->dtype, base + off * (int64_t)es,
                       lt_init_value_dt(in, (uint64_t)g, t->dtype));
        for (int d = nd - 1; d >= 0; d--) {
            if (++pos[d] < t->shape[d]) break;
            pos[d] = 0;
        }
    }
    return LT_OK;
}
