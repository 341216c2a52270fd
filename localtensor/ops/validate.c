/* localtensor/ops/validate.c — the rule validator: every op, every input
 * placement combination, 1-D meshes of 2-4 ranks and a 2x2 mesh, even and
 * uneven shapes, each result compared with the unsharded run.
 *
 * Partial inputs are adversarial (lt_distribute_adversarial): their per-rank
 * contributions differ from rank to rank (offsets that cancel for sum/avg,
 * values pushed away from the extreme for max/min, with the rank holding
 * the extreme varying by element). With distribute's own Partial (every
 * rank holding x / n, or x itself for max) a wrong rule such as
 * "P(max) + P(max) stays P(max)" would pass unnoticed.
 */
#include "kernels/alloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/layout.h"
#include "localtensor/ops.h"
#include "kernels/status_impl.h"
#include "localtensor/validate.h"
#include "localtensor/rank_map.h"

/* ---- adversarial Partial inputs ------------------------------------------------------ */

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* One Partial mesh dim applied to a value v of global element g held at
 * coordinate c of a group of m. */
static double perturb(double v, lt_redop op, int isf, uint64_t h, int c, int m) {
    int win = (int)(h % (uint64_t)m);
    double k = (double)(1 + (h >> 16) % 3);
    switch (op) {
    case LT_REDOP_SUM:
        if (!isf) return c == 0 ? v - (m - 1) * k : k;
        return v / m +
               ((double)((h >> 8) % 4 + 1) * 0.25 * ((h >> 4) & 1 ? 1 : -1)) * (c - (m - 1) / 2.0);
    case LT_REDOP_AVG:
        if (!isf) return v;
        return v +
               ((double)((h >> 8) % 4 + 1) * 0.25 * ((h >> 4) & 1 ? 1 : -1)) * (c - (m - 1) / 2.0);
    case LT_REDOP_MAX: return c == win ? v : v - k;
    case LT_REDOP_MIN: return c == win ? v : v + k;
    default: return c == win ? v : 1.0;
    }
}

lt_status lt_distribute_adversarial(const lt_mesh *mesh, const lt_tensor *full,
                                    const lt_placement *pl, int np, uint64_t salt,
                                    lt_dtensor **out) {
    lt_placement norm[LT_MESH_MAX_DIMS], base[LT_MESH_MAX_DIMS];
    *out = NULL;
    LT_TRY(lt_placements_check(mesh, full->ndim, pl, np, norm));
    int any = 0;
    for (int i = 0; i < mesh->ndim; i++) {
        base[i] = norm[i].kind == LT_PL_PARTIAL ? lt_replicate() : norm[i];
        any |= norm[i].kind == LT_PL_PARTIAL;
    }
    /* distribute checks the Partial mix and ops; run it on the real list first */
    lt_dtensor *d = NULL;
    if (any && lt_dtype_is_float(full->dtype)) {
        LT_TRY(lt_distribute(mesh, full, norm, np, &d));
        lt_dtensor_free(d);
        d = NULL;
    }
    LT_TRY(lt_distribute(mesh, full, base, np, &d));
    if (!any) return *out = d, LT_OK;
    int isf = lt_dtype_is_float(full->dtype), nd = full->ndim;
    int64_t gstride[LT_MAX_DIMS];
    lt_contiguous_strides(nd, full->shape, gstride);
    for (int r = 0; r < mesh->world; r++) {
        lt_tensor *t = d->local->shards[r];
        lt_rank_layout l;
        int coord[LT_MESH_MAX_DIMS];
        lt_mesh_coord(mesh, r, coord);
        /* replicas of base share a buffer; each rank perturbs its own copy */
        lt_status st = lt_tensor_make_writable(t);
        if (!st) st = lt_spec_layout_rank(lt_dtensor_spec(d), r, &l); /* d: base */
        if (st) {
            lt_dtensor_free(d);
            return st;
        }
        int64_t n = lt_numel(t), idx[LT_MAX_DIMS] = {0};
        for (int64_t e = 0; e < n; e++) {
            uint64_t g = 0;
            for (int k = 0; k < nd; k++)
                g += (uint64_t)((l.idx[k] ? l.idx[k][idx[k]] : idx[k]) * gstride[k]);
            double v = lt_get_flat(t, e);
            for (int i = 0; i < mesh->ndim; i++)
                if (norm[i].kind == LT_PL_PARTIAL)
                    v = perturb(v, norm[i].op, isf, mix64(g * 131 + (uint64_t)i * 7 + salt),
                                coord[i], mesh->shape[i]);
            lt_set_flat(t, e, v);
            for (int k = nd - 1; k >= 0; k--) {
                if (++idx[k] < t->shape[k]) break;
                idx[k] = 0;
            }
        }
        lt_rank_layout_free(&l);
    }
    memcpy(d->placements, norm, sizeof(lt_placement) * (size_t)mesh->ndim);
    *out = d;
    return LT_OK;
}

/* ---- the cases ----------------------------------------------------------------------------- */

enum { V_SIGNED, V_POSITIVE, V_INDEX };

typedef struct vcase {
    lt_op_kind op;
    int quick;                   /* also in quick mode */
    int nin;
    int ndim[3];
    int64_t shape[3][4];
    int vals[3];                 /* V_* per input */
    int dim, dim2, ndims, dims[3], keepdim, shape_ndim;
    int64_t tshape[4];
    int64_t split_size;
    int nsizes;
    int64_t sizes[3];
    int chunks;
    double scalar;
} vcase;                         /* squeeze: keepdim 1 means dim_set (only `dim`) */

#define IN1(n, ...) 1, {n}, {{__VA_ARGS__}}
#define U(op, q, n, ...)                                                                           \
    { op, q, IN1(n, __VA_ARGS__), {V_SIGNED}, 0, 0, 0, {0}, 0, 0, {0}, 0, 0, {0}, 0, 0 }
#define US(op, q, s, n, ...)                                                                       \
    { op, q, IN1(n, __VA_ARGS__), {V_SIGNED}, 0, 0, 0, {0}, 0, 0, {0}, 0, 0, {0}, 0, s }
#define UP(op, q, n, ...)                                                                          \
    { op, q, IN1(n, __VA_ARGS__), {V_POSITIVE}, 0, 0, 0, {0}, 0, 0, {0}, 0, 0, {0}, 0, 0 }

static const vcase cases[] = {
    /* pointwise */
    U(LT_OP_NEG, 1, 2, 5, 3),
    U(LT_OP_NEG, 0, 2, 6, 4),
    U(LT_OP_ABS, 1, 2, 5, 3),
    U(LT_OP_ABS, 0, 1, 7),
    U(LT_OP_EXP, 1, 2, 5, 3),
    U(LT_OP_EXP, 0, 2, 6, 4),
    UP(LT_OP_LOG, 1, 2, 5, 3),
    UP(LT_OP_LOG, 0, 1, 7),
    UP(LT_OP_SQRT, 1, 2, 5, 3),
    U(LT_OP_TANH, 1, 2, 5, 3),
    U(LT_OP_TANH, 0, 1, 7),
    U(LT_OP_RELU, 1, 2, 5, 3),
    U(LT_OP_RELU, 0, 2, 6, 4),
    U(LT_OP_GELU, 1, 2, 5, 3),
    U(LT_OP_SIGMOID, 1, 2, 5, 3),
    U(LT_OP_SIGMOID, 0, 2, 0, 3),
    US(LT_OP_ADD_SCALAR, 1, 1.5, 2, 5, 3),
    US(LT_OP_SUB_SCALAR, 1, 0.75, 2, 5, 3),
    US(LT_OP_RSUB_SCALAR, 1, 1.0, 2, 5, 3),
    US(LT_OP_MUL_SCALAR, 1, -2.0, 2, 5, 3),
    US(LT_OP_MUL_SCALAR, 0, 3.0, 1, 7),
    US(LT_OP_DIV_SCALAR, 1, -0.5, 2, 5, 3),
    US(LT_OP_MAXIMUM_SCALAR, 1, 0.3, 2, 5, 3),
    US(LT_OP_MINIMUM_SCALAR, 1, -0.2, 2, 5, 3),
    US(LT_OP_DROPOUT, 1, 0.4, 2, 5, 3),
    US(LT_OP_DROPOUT, 0, 0.25, 2, 6, 4),
/* binary */
#define B(op, q, na, a0, a1, nb, b0, b1, vb)                                                       \
    {                                                                                              \
        op, q, 2, {na, nb}, {{a0, a1}, {b0, b1}}, {V_SIGNED, vb}, 0, 0, 0, {0}, 0, 0, {0}, 0, 0,   \
            {0}, 0, 0                                                                              \
    }
#define BIN(op, vb) B(op, 1, 2, 5, 3, 2, 5, 3, vb), B(op, 0, 2, 6, 4, 2, 6, 4, vb), \
    B(op, 1, 2, 5, 3, 1, 3, 0, vb), B(op, 0, 2, 5, 1, 2, 1, 3, vb), B(op, 0, 2, 6, 4, 2, 1, 4, vb)
    BIN(LT_OP_ADD, V_SIGNED),
    BIN(LT_OP_SUB, V_SIGNED),
    BIN(LT_OP_MUL, V_SIGNED),
    BIN(LT_OP_DIV, V_POSITIVE),
    BIN(LT_OP_MAXIMUM, V_SIGNED),
    BIN(LT_OP_MINIMUM, V_SIGNED),
    /* matmul family */
#define M2(op, q, na, a0, a1, a2, nb, b0, b1, b2)                                                  \
    {                                                                                              \
        op, q, 2, {na, nb}, {{a0, a1, a2}, {b0, b1, b2}}, {V_SIGNED, V_SIGNED}, 0, 0, 0, {0}, 0,   \
            0, {0}, 0, 0, {0}, 0, 0                                                                \
    }
    M2(LT_OP_MM, 1, 2, 5, 3, 0, 2, 3, 4, 0),
    M2(LT_OP_MM, 0, 2, 6, 4, 0, 2, 4, 6, 0),
    M2(LT_OP_MATMUL, 1, 1, 3, 0, 0, 2, 3, 5, 0),
    M2(LT_OP_MATMUL, 0, 2, 5, 3, 0, 1, 3, 0, 0),
    M2(LT_OP_MATMUL, 0, 1, 4, 0, 0, 1, 4, 0, 0),
    M2(LT_OP_MATMUL, 1, 3, 2, 5, 3, 2, 3, 4, 0),
    M2(LT_OP_BMM, 1, 3, 2, 5, 3, 3, 2, 3, 4),
    M2(LT_OP_BMM, 0, 3, 3, 4, 2, 3, 3, 2, 5),
#define AMM(q, nbias, c0, c1)                                                                      \
    {                                                                                              \
        LT_OP_ADDMM, q, 3, {nbias, 2, 2}, {{c0, c1}, {5, 3}, {3, 4}},                              \
            {V_SIGNED, V_SIGNED, V_SIGNED}, 0, 0, 0, {0}, 0, 0, {0}, 0, 0, {0}, 0, 0               \
    }
    AMM(1, 1, 4, 0),
    AMM(0, 2, 5, 4),
    /* reductions */
#define RD(op, q, n, s0, s1, nd, d0, d1, kd) \
    {op, q, IN1(n, s0, s1), {V_SIGNED}, 0, 0, nd, {d0, d1}, kd, 0, {0}, 0, 0, {0}, 0, 0}
#define RED(op)                                                                                    \
    RD(op, 1, 2, 5, 3, 1, 0, 0, 0), RD(op, 1, 2, 5, 3, 1, 1, 0, 1),                                \
        RD(op, 1, 2, 5, 3, 0, 0, 0, 0), RD(op, 0, 2, 6, 4, 2, 0, 1, 0),                            \
        RD(op, 0, 2, 6, 4, 1, -1, 0, 0), RD(op, 0, 2, 5, 3, 2, 1, 0, 1),                           \
        RD(op, 0, 1, 7, 0, 1, 0, 0, 0)
    RED(LT_OP_SUM),
    RED(LT_OP_MEAN),
    RED(LT_OP_AMAX),
    RED(LT_OP_AMIN),
/* 0-d: dim 0 and -1 are the whole tensor (keepdim or not) */
#define RED0(op)                                                                                   \
    RD(op, 1, 0, 0, 0, 1, 0, 0, 0), RD(op, 0, 0, 0, 0, 1, -1, 0, 1), RD(op, 0, 0, 0, 0, 0, 0, 0, 0)
    RED0(LT_OP_SUM),
    RED0(LT_OP_MEAN),
    RED0(LT_OP_AMAX),
    RED0(LT_OP_AMIN),
/* 3-D: a shard of a dim after the reduced ones moves down when keepdim is false */
#define RD3(op, q, nd, d0, d1, kd) \
    {op, q, IN1(3, 3, 5, 4), {V_SIGNED}, 0, 0, nd, {d0, d1}, kd, 0, {0}, 0, 0, {0}, 0, 0}
#define RED3(op) RD3(op, 1, 1, 1, 0, 0), RD3(op, 0, 2, 0, -2, 0), RD3(op, 0, 1, -1, 0, 1)
    RED3(LT_OP_SUM),
    RED3(LT_OP_MEAN),
    RED3(LT_OP_AMAX),
    RED3(LT_OP_AMIN),
    /* softmax */
#define SM(op, q, s0, s1, d)                                                                       \
    { op, q, IN1(2, s0, s1), {V_SIGNED}, d, 0, 0, {0}, 0, 0, {0}, 0, 0, {0}, 0, 0 }
    SM(LT_OP_SOFTMAX, 1, 5, 3, 0),
    SM(LT_OP_SOFTMAX, 1, 5, 3, 1),
    SM(LT_OP_SOFTMAX, 0, 6, 4, -1),
    SM(LT_OP_LOG_SOFTMAX, 1, 5, 3, 1),
    SM(LT_OP_LOG_SOFTMAX, 0, 5, 3, 0),
    {LT_OP_SOFTMAX, 0, IN1(3, 3, 5, 4), {V_SIGNED}, 1, 0, 0, {0}, 0, 0, {0}, 0, 0, {0}, 0, 0},
/* views */
#define RS(op, q, n, s0, s1, s2, tn, t0, t1, t2) \
    {op, q, IN1(n, s0, s1, s2), {V_SIGNED}, 0, 0, 0, {0}, 0, tn, {t0, t1, t2}, 0, 0, {0}, 0, 0}
    RS(LT_OP_RESHAPE, 1, 2, 6, 4, 0, 1, 24, 0, 0),
    RS(LT_OP_RESHAPE, 1, 2, 6, 4, 0, 2, 4, 6, 0),
    RS(LT_OP_RESHAPE, 1, 2, 6, 4, 0, 3, 2, 3, 4),
    RS(LT_OP_RESHAPE, 0, 2, 6, 4, 0, 2, 3, 8, 0),
    RS(LT_OP_RESHAPE, 1, 2, 5, 3, 0, 1, 15, 0, 0),
    RS(LT_OP_RESHAPE, 0, 2, 5, 3, 0, 2, 3, 5, 0),
    RS(LT_OP_RESHAPE, 1, 2, 12, 8, 0, 2, 16, 6, 0),
    RS(LT_OP_RESHAPE, 1, 2, 6, 4, 0, 1, -1, 0, 0),
    RS(LT_OP_RESHAPE, 0, 3, 2, 3, 4, 2, 6, 4, 0),
    RS(LT_OP_RESHAPE, 1, 3, 2, 3, 4, 2, 2, 12, 0),
    RS(LT_OP_RESHAPE, 0, 2, 4, 6, 0, 3, 2, 2, 6),
    RS(LT_OP_RESHAPE, 1, 3, 5, 1, 3, 2, 5, 3, 0),
    RS(LT_OP_RESHAPE, 0, 2, 1, 15, 0, 2, 3, 5, 0),
    RS(LT_OP_RESHAPE, 0, 2, 0, 3, 0, 2, 3, 0, 0),
    RS(LT_OP_RESHAPE, 0, 2, 8, 3, 0, 3, 2, 4, 3),
    RS(LT_OP_RESHAPE, 0, 2, 9, 2, 0, 2, 3, 6, 0),
    RS(LT_OP_VIEW, 1, 2, 6, 4, 0, 3, 2, 3, 4),
    RS(LT_OP_VIEW, 0, 2, 5, 3, 0, 1, 15, 0, 0),
#define FL(q, n, s0, s1, s2, st, en)                                                               \
    { LT_OP_FLATTEN, q, IN1(n, s0, s1, s2), {V_SIGNED}, st, en, 0, {0}, 0, 0, {0}, 0, 0, {0}, 0, 0 }
    FL(1, 3, 2, 3, 4, 0, 1),
    FL(1, 3, 2, 3, 4, 1, 2),
    FL(0, 3, 2, 3, 4, 0, -1),
    FL(0, 2, 5, 3, 0, 0, -1),
#define PV(op, q, n, s0, s1, s2, d, d2, nd, p0, p1, p2) \
    {op, q, IN1(n, s0, s1, s2), {V_SIGNED}, d, d2, nd, {p0, p1, p2}, 0, 0, {0}, 0, 0, {0}, 0, 0}
    PV(LT_OP_TRANSPOSE, 1, 2, 5, 3, 0, 0, 1, 0, 0, 0, 0),
    PV(LT_OP_TRANSPOSE, 0, 3, 2, 3, 4, 0, 2, 0, 0, 0, 0),
    PV(LT_OP_PERMUTE, 1, 3, 2, 3, 4, 0, 0, 3, 2, 0, 1),
    PV(LT_OP_PERMUTE, 0, 3, 2, 3, 4, 0, 0, 3, 1, 2, 0),
    PV(LT_OP_UNSQUEEZE, 1, 2, 5, 3, 0, 1, 0, 0, 0, 0, 0),
    PV(LT_OP_UNSQUEEZE, 0, 2, 5, 3, 0, 0, 0, 0, 0, 0, 0),
    PV(LT_OP_UNSQUEEZE, 0, 2, 5, 3, 0, -1, 0, 0, 0, 0, 0),
    PV(LT_OP_TRANSPOSE, 1, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0),
    /* squeeze: no dim (every size-1 dim), one dim (dim_set), a list of dims */
#define SQ(q, n, s0, s1, s2, ds, d, nd, p0, p1)                                                    \
    {                                                                                              \
        LT_OP_SQUEEZE, q, IN1(n, s0, s1, s2), {V_SIGNED}, d, 0, nd, {p0, p1}, ds, 0, {0}, 0, 0,    \
            {0}, 0, 0                                                                              \
    }
    SQ(1, 3, 5, 1, 3, 1, 1, 0, 0, 0),
    SQ(1, 2, 1, 3, 0, 1, 0, 0, 0, 0),
    SQ(0, 2, 5, 3, 0, 1, 0, 0, 0, 0),
    SQ(1, 3, 5, 1, 3, 0, 0, 0, 0, 0),
    SQ(1, 3, 1, 4, 1, 0, 0, 0, 0, 0),
    SQ(0, 3, 5, 1, 1, 0, 0, 0, 0, 0),
    SQ(0, 3, 1, 5, 1, 0, 0, 2, 2, 1),
    SQ(0, 3, 3, 1, 1, 0, 0, 1, -1, 0),
    SQ(0, 2, 1, 1, 0, 0, 0, 0, 0, 0),
    SQ(1, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    SQ(0, 0, 0, 0, 0, 1, -1, 0, 0, 0),
    /* cat, split, chunk */
#define CT(q, a0, a1, b0, b1, d)                                                                   \
    {                                                                                              \
        LT_OP_CAT, q, 2, {2, 2}, {{a0, a1}, {b0, b1}}, {V_SIGNED, V_SIGNED}, d, 0, 0, {0}, 0, 0,   \
            {0}, 0, 0, {0}, 0, 0                                                                   \
    }
    CT(1, 5, 3, 2, 3, 0),
    CT(1, 5, 3, 5, 2, 1),
    CT(0, 4, 3, 4, 3, 0),
#define SP(op, q, s0, s1, d, ss, ns, z0, z1, ch) \
    {op, q, IN1(2, s0, s1), {V_SIGNED}, d, 0, 0, {0}, 0, 0, {0}, ss, ns, {z0, z1}, ch, 0}
    SP(LT_OP_SPLIT, 1, 5, 3, 0, 2, 0, 0, 0, 0),
    SP(LT_OP_SPLIT, 1, 5, 3, 0, 0, 2, 1, 4, 0),
    SP(LT_OP_SPLIT, 0, 5, 3, 1, 2, 0, 0, 0, 0),
    SP(LT_OP_CHUNK, 1, 5, 3, 0, 0, 0, 0, 0, 2),
    SP(LT_OP_CHUNK, 0, 5, 3, 1, 0, 0, 0, 0, 3),
    SP(LT_OP_CHUNK, 0, 6, 4, 0, 0, 0, 0, 0, 4),
    /* embedding */
    {LT_OP_EMBEDDING,
     1,
     2,
     {2, 1},
     {{7, 4}, {5}},
     {V_SIGNED, V_INDEX},
     0,
     0,
     0,
     {0},
     0,
     0,
     {0},
     0,
     0,
     {0},
     0,
     0},
    {LT_OP_EMBEDDING,
     0,
     2,
     {2, 2},
     {{6, 3}, {2, 3}},
     {V_SIGNED, V_INDEX},
     0,
     0,
     0,
     {0},
     0,
     0,
     {0},
     0,
     0,
     {0},
     0,
     0},
    /* creation: the output's placements are enumerated */
    {LT_OP_RAND, 1, 0, {2}, {{5, 3}}, {0}, 0, 0, 0, {0}, 0, 0, {0}, 0, 0, {0}, 0, 0},
    {LT_OP_RAND, 0, 0, {1}, {{7}}, {0}, 0, 0, 0, {0}, 0, 0, {0}, 0, 0, {0}, 0, 0},
    {LT_OP_RANDN, 1, 0, {2}, {{6, 4}}, {0}, 0, 0, 0, {0}, 0, 0, {0}, 0, 0, {0}, 0, 0},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* ---- running -------------------------------------------------------------------------------- */

#define MAX_CAND 16

/* Explicit sizes that put the whole dim on the last two ranks (zeros first). */
static lt_placement explicit_last_two(int dim, int64_t n, int k) {
    int64_t sz[LT_SPLIT_MAX_EXPLICIT] = {0};
    lt_split_rule e;
    sz[k - 1] = n / 2;
    sz[k - 2] = n - n / 2;
    if (lt_split_explicit(sz, k, &e)) return lt_replicate();   /* out of memory: a case less */
    return lt_shard_rule(dim, e);
}

/* An explicit split of n over 2 that is not the chunk split: (n - 1, 1). */
static lt_placement explicit_pair(int dim, int64_t n) {
    int64_t sz[2] = {n > 0 ? n - 1 : 0, n > 0 ? 1 : 0};
    lt_split_rule e;
    if (lt_split_explicit(sz, 2, &e)) return lt_replicate();   /* out of memory: a case less */
    return lt_shard_rule(dim, e);
}

/* Candidate placements of mesh dim `md` (of a mesh of `mesh_ndim` dims, this
 * one of mesh_k ranks) for a tensor of shape[ndim]. On mesh dim 1 of the 2x2
 * mesh the non-chunk rules of dim 0 are candidates too: under an S(0) on
 * mesh dim 0 they nest in its pieces — or, when they do not fit there, a
 * rule that follows another operand's S(0) must not ask for them. */
static int candidates(int ndim, const int64_t *shape, int full, int index, int mesh_ndim, int md,
                      int mesh_k, lt_placement *c) {
    int n = 0, mesh_1d = mesh_ndim == 1;
    c[n++] = lt_replicate();
    if (!index) {
        c[n++] = lt_partial(LT_REDOP_SUM);
        c[n++] = lt_partial(LT_REDOP_MAX);
        if (full) c[n++] = lt_partial(LT_REDOP_AVG); /* on 2x2: the {sum, avg} mix */
        if (full && mesh_1d) c[n++] = lt_partial(LT_REDOP_MIN);
    }
    for (int d = 0; d < ndim; d++) c[n++] = lt_shard(d);
    if (full && !mesh_1d && ndim > 0) c[n++] = lt_strided(0, 2); /* [SS(0,2), S(0)]: FSDP + TP */
    if (mesh_1d && ndim > 0) {
        lt_split_rule r = {LT_SPLIT_BALANCED, 0, NULL};
        c[n++] = lt_shard_rule(0, r);
        if (full) {
            c[n++] = lt_strided(0, 2);
            if (mesh_k > 2) c[n++] = explicit_last_two(ndim - 1, shape[ndim - 1], mesh_k);
        }
    }
    if (!mesh_1d && md == 1 && mesh_k == 2 && ndim > 0) { /* nested under mesh dim 0 */
        c[n++] = explicit_pair(0, shape[0]);            /* fits the whole dim */
        if (full) {
            lt_split_rule bal = {LT_SPLIT_BALANCED, 0, NULL}, last = {LT_SPLIT_LAST, 0, NULL};
            c[n++] = lt_shard_rule(0, bal);
            c[n++] = lt_shard_rule(0, last);
            c[n++] = explicit_pair(0, (shape[0] + 1) / 2); /* fits the first chunk piece */
        }
    }
    return n;
}

static lt_status make_full(const vcase *c, int k, uint64_t salt, lt_tensor **out) {
    lt_dtype dt = c->vals[k] == V_INDEX ? LT_I64 : LT_F32;
    LT_TRY(lt_tensor_new(dt, c->ndim[k], c->shape[k], out));
    int64_t n = lt_numel(*out);
    for (int64_t i = 0; i < n; i++) {
        uint64_t h = mix64((uint64_t)i * 977 + (uint64_t)k * 31 + salt);
        double v = ((double)(h % 2001) - 1000.0) / 250.0;
        if (c->vals[k] == V_POSITIVE) v = (v < 0 ? -v : v) + 0.5;
        if (c->vals[k] == V_INDEX) v = (double)(h % (uint64_t)c->shape[0][0]);
        lt_set_flat(*out, i, v);
    }
    return LT_OK;
}

static void set_args(const vcase *c, const lt_mesh *m, lt_op_args *a) {
    memset(a, 0, sizeof *a);
    a->dim = c->dim, a->dim2 = c->dim2, a->ndims = c->ndims, a->keepdim = c->keepdim;
    for (int i = 0; i < c->ndims; i++) a->dims[i] = c->dims[i];
    a->flatten_end_set = c->op == LT_OP_FLATTEN;
    if (c->op == LT_OP_SQUEEZE) a->dim_set = c->keepdim, a->keepdim = 0;
    a->shape_ndim = c->shape_ndim;
    for (int i = 0; i < c->shape_ndim; i++) a->shape[i] = c->tshape[i];
    a->split_size = c->split_size, a->nsizes = c->nsizes, a->chunks = c->chunks;
    for (int i = 0; i < c->nsizes; i++) a->sizes[i] = c->sizes[i];
    a->scalar = c->scalar, a->seed = 1234;
    if (c->nin == 0) {
        a->mesh = m, a->dtype = LT_F32, a->shape_ndim = c->ndim[0], a->np = m->ndim;
        for (int i = 0; i < c->ndim[0]; i++) a->shape[i] = c->shape[0][i];
    }
}

static void describe_case(const vcase *c, const lt_mesh *m, lt_placement (*pl)[LT_MESH_MAX_DIMS],
                          int nt, char *buf, size_t n) {
    char ms[64], s[160], p[200];
    size_t used =
        (size_t)snprintf(buf, n, "%s mesh %s", lt_op_name(c->op), lt_mesh_format(m, ms, sizeof ms));
    for (int k = 0; k < nt && used < n; k++) {
        lt_shape_format(c->ndim[k], c->shape[k], s, sizeof s);
        lt_placements_format(pl[k], m->ndim, p, sizeof p);
        int w = snprintf(buf + used, n - used, "%s %s %s", k ? "," : ":", s, p);
        if (w < 0) return;
        used += (size_t)w;
    }
}

typedef struct vrun {
    const lt_validate_opts *o;
    lt_validate_report *rep;
    FILE *log;
    int printed[LT_OP_COUNT];
} vrun;

static void note(vrun *v, const vcase *c, const lt_mesh *m, lt_placement (*pl)[LT_MESH_MAX_DIMS],
                 int nt, const char *what, char *first) {
    int maxr = v->o && v->o->max_report > 0 ? v->o->max_report : 5;
    char d[400];
    describe_case(c, m, pl, nt, d, sizeof d);
    if (first && !first[0]) snprintf(first, 512, "%s: %s", d, lt_errmsg());
    if ((v->o && v->o->verbose) || v->printed[c->op] < maxr) {
        fprintf(v->log, "  %s %s: %s\n", what, d, lt_errmsg());
        v->printed[c->op]++;
    }
}

/* Runs one placement combination. */
static void run_one(vrun *v, const vcase *c, const lt_mesh *m, lt_tensor **full,
                    lt_placement (*pl)[LT_MESH_MAX_DIMS], uint64_t salt) {
    lt_validate_op_result *r = &v->rep->per_op[c->op];
    lt_dtensor *in[3] = {0}, *out[LT_OP_MAX_OUTPUTS] = {0};
    lt_op_args *a = lt__calloc(1, sizeof *a);
    int nt = c->nin ? c->nin : 1, bad = !a;
    for (int k = 0; k < c->nin && !bad; k++)
        bad = lt_distribute_adversarial(m, full[k], pl[k], m->ndim, salt + (uint64_t)k, &in[k]) !=
              LT_OK;
    if (!bad) {
        set_args(c, m, a);
        if (c->nin == 0) memcpy(a->placements, pl[0], sizeof(lt_placement) * (size_t)m->ndim);
        if (c->nin ==
            0) { /* rand of a layout that does not exist, or P(product): no spec, not a rule */
            lt_spec s;
            bad = lt_spec_init(m, a->dtype, c->ndim[0], c->shape[0], pl[0], m->ndim, &s) != LT_OK;
            for (int i = 0; i < m->ndim && !bad; i++)
                bad = pl[0][i].kind == LT_PL_PARTIAL && pl[0][i].op == LT_REDOP_PRODUCT;
        }
    }
    r->cases++, v->rep->cases++;
    if (bad) {
        r->invalid++, v->rep->invalid++;
    } else {
        lt_op_opts opts;
        memset(&opts, 0, sizeof opts);
        opts.check_reference = 1;
        int nout = 0;
        lt_status st = lt_op(c->op, (const lt_dtensor *const *)in, c->nin, a, &opts, out,
                             LT_OP_MAX_OUTPUTS, &nout);
        for (int j = 0; j < nout && !st; j++) st = lt_dtensor_check_replicas(out[j]);
        if (!st) {
            r->ok++, v->rep->ok++;
        } else if (st == LT_MISMATCH) {
            r->wrong++, v->rep->wrong++;
            note(v, c, m, pl, nt, "WRONG", v->rep->first_wrong);
        } else if (st == LT_UNSUPPORTED && lt_errinfo()->code == LT_ERR_NOT_YET) {
            /* (a rule that emits a layout that cannot exist, LT_ERR_NO_LAYOUT,
             * is wrong, not missing) */
            r->missing++, v->rep->missing++;
            if (v->o && v->o->verbose) note(v, c, m, pl, nt, "missing", NULL);
        } else {
            r->errors++, v->rep->errors++;
            note(v, c, m, pl, nt, "ERROR", v->rep->first_error);
        }
        for (int j = 0; j < LT_OP_MAX_OUTPUTS; j++) lt_dtensor_free(out[j]);
    }
    for (int k = 0; k < 3; k++) lt_dtensor_free(in[k]);
    lt__free(a);
    lt__err_clear();
}

static int selected(const lt_validate_opts *o, lt_op_kind op) {
    if (!o || !o->ops) return 1;
    for (int i = 0; i < o->nops; i++)
        if (o->ops[i] == op) return 1;
    return 0;
}

static void run_case(vrun *v, const vcase *c, const lt_mesh *m, int quick) {
    int nt = c->nin ? c->nin : 1, npos = nt * m->ndim, full_mode = !quick;
    lt_placement cand[3 * LT_MESH_MAX_DIMS][MAX_CAND];
    int ncand[3 * LT_MESH_MAX_DIMS], pos[3 * LT_MESH_MAX_DIMS] = {0};
    if (nt == 3 && m->ndim > 1) full_mode = 0; /* addmm on 2x2: R, P(sum), S only */
    for (int k = 0; k < nt; k++)
        for (int i = 0; i < m->ndim; i++) {
            int p = k * m->ndim + i;
            ncand[p] =
                candidates(c->ndim[k], c->shape[k], full_mode, c->nin && c->vals[k] == V_INDEX,
                           m->ndim, i, m->shape[i], cand[p]);
            if (nt == 3 && m->ndim > 1) /* drop P(max): keep the combination count small */
                for (int j = 0; j < ncand[p]; j++)
                    if (cand[p][j].kind == LT_PL_PARTIAL && cand[p][j].op == LT_REDOP_MAX)
                        cand[p][j] = cand[p][--ncand[p]];
        }
    lt_tensor *full[3] = {0};
    uint64_t salt = (uint64_t)(c - cases) * 7919u;
    for (int k = 0; k < c->nin; k++)
        if (make_full(c, k, salt, &full[k])) goto done;
    for (;;) {
        lt_placement pl[3][LT_MESH_MAX_DIMS];
        for (int p = 0; p < npos; p++) pl[p / m->ndim][p % m->ndim] = cand[p][pos[p]];
        run_one(v, c, m, full, pl, salt);
        int p = npos - 1;
        while (p >= 0 && ++pos[p] == ncand[p]) pos[p--] = 0;
        if (p < 0) break;
    }
done:
    for (int k = 0; k < 3; k++) lt_tensor_free(full[k]);
}

lt_status lt_rules_validate(const lt_validate_opts *o, lt_validate_report *rep) {
    memset(rep, 0, sizeof *rep);
    vrun v;
    memset(&v, 0, sizeof v);
    v.o = o, v.rep = rep, v.log = o && o->log ? (FILE *)o->log : stderr;
    int quick = o && o->quick;
    lt_mesh meshes[4];
    int s2 = 2, s3 = 3, s4 = 4, s22[2] = {2, 2};
    LT_TRY(lt_mesh_init(&meshes[0], 1, &s2, NULL));
    LT_TRY(lt_mesh_init(&meshes[1], 1, &s3, NULL));
    LT_TRY(lt_mesh_init(&meshes[2], 1, &s4, NULL));
    LT_TRY(lt_mesh_init(&meshes[3], 2, s22, NULL));
    for (int ci = 0; ci < NCASES; ci++) {
        const vcase *c = &cases[ci];
        if (!selected(o, c->op) || (quick && !c->quick)) continue;
        for (int mi = 0; mi < 4; mi++) {
            if (quick && mi == 2 && c->nin > 1) continue; /* 4 ranks: single-input ops only */
            run_case(&v, c, &meshes[mi], quick);
        }
    }
    lt_op_cache_clear();
    return LT_OK;
}
