/* test/test_math.c — kernels/math.h against naive loops written here
 * (never against the code under test): elementwise with broadcasting and
 * strided views, reductions, softmax, matmul family through the backend
 * gemm (f32, f64, bf16), embedding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/kernels/math.h"
#include "test/testutil.h"

static lt_tensor *mk(lt_dtype dt, int nd, const int64_t *shape, double (*f)(int64_t)) {
    lt_tensor *t = NULL;
    LT_CHECK(lt_tensor_new(dt, nd, shape, &t));
    int64_t n = lt_numel(t);
    for (int64_t i = 0; i < n; i++) lt_set_flat(t, i, f(i));
    return t;
}

static double v_signed(int64_t i) { return (double)((i * 37 + 11) % 23) / 4.0 - 2.5; }
static double v_pos(int64_t i) { return (double)((i * 13 + 5) % 17) / 3.0 + 0.25; }
static double v_int(int64_t i) { return (double)((i * 7 + 3) % 11) - 5.0; }

static void near(double got, double want, double tol, const char *what, int64_t i) {
    if (isnan(want) && isnan(got)) return;
    if (!(fabs(got - want) <= tol * (1 + fabs(want))))
        fail_msg("%s: element %lld is %.9g, wanted %.9g", what, (long long)i, got, want);
}

/* ---- elementwise ---------------------------------------------------------------------- */

static double ref_unary(lt_unary_op op, double x) {
    switch (op) {
    case LT_UNARY_NEG: return -x;
    case LT_UNARY_ABS: return fabs(x);
    case LT_UNARY_EXP: return exp(x);
    case LT_UNARY_LOG: return log(x);
    case LT_UNARY_SQRT: return sqrt(x);
    case LT_UNARY_TANH: return tanh(x);
    case LT_UNARY_RELU: return x > 0 ? x : 0;
    case LT_UNARY_GELU: return x * 0.5 * (1 + erf(x / sqrt(2.0)));
    default: return 1 / (1 + exp(-x));
    }
}

static void test_unary(void **state) {
    (void)state;
    int64_t s[2] = {3, 5};
    lt_dtype dts[3] = {LT_F32, LT_F64, LT_BF16};
    double tols[3] = {2e-6, 1e-13, 1e-2};
    for (int k = 0; k < 3; k++)
        for (int op = 0; op < LT_UNARY_COUNT; op++) {
            int pos = op == LT_UNARY_LOG || op == LT_UNARY_SQRT;
            lt_tensor *x = mk(dts[k], 2, s, pos ? v_pos : v_signed), *xt = NULL, *y = NULL;
            LT_CHECK(lt_transpose(x, 0, 1, &xt)); /* strided input */
            LT_CHECK(lt_unary((lt_unary_op)op, xt, &y));
            assert_int_equal(y->dtype, dts[k]);
            assert_int_equal(y->shape[0], 5);
            for (int64_t i = 0; i < 5; i++)
                for (int64_t j = 0; j < 3; j++) {
                    int64_t ij[2] = {i, j}, ji[2] = {j, i};
                    near(lt_get(y, ij), ref_unary((lt_unary_op)op, lt_get(x, ji)), tols[k],
                         lt_unary_name((lt_unary_op)op), i * 3 + j);
                }
            lt_tensor_free(x);
            lt_tensor_free(xt);
            lt_tensor_free(y);
        }
    /* integers: neg/abs/relu exact; others unsupported */
    lt_tensor *xi = mk(LT_I32, 2, s, v_int), *y = NULL;
    LT_CHECK(lt_unary(LT_UNARY_RELU, xi, &y));
    for (int64_t i = 0; i < 15; i++)
        assert_true(lt_get_flat(y, i) == (v_int(i) > 0 ? v_int(i) : 0));
    lt_tensor_free(y);
    LT_EXPECT_STATUS(lt_unary(LT_UNARY_EXP, xi, &y), LT_UNSUPPORTED);
    assert_non_null(strstr(lt_errmsg(), "not supported yet"));
    assert_null(y);
    lt_tensor_free(xi);
}

static double ref_bin(lt_binary_op op, double a, double b) {
    switch (op) {
    case LT_BINARY_ADD: return a + b;
    case LT_BINARY_SUB: return a - b;
    case LT_BINARY_MUL: return a * b;
    case LT_BINARY_DIV: return a / b;
    case LT_BINARY_MAXIMUM: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

static void test_binary_broadcast(void **state) {
    (void)state;
    /* (2, 1, 4) op (3, 1): result (2, 3, 4); a[i,0,k], b[j,0] */
    int64_t sa[3] = {2, 1, 4}, sb[2] = {3, 1};
    lt_dtype dts[2] = {LT_F32, LT_F64};
    for (int k = 0; k < 2; k++)
        for (int op = 0; op < LT_BINARY_COUNT; op++) {
            lt_tensor *a = mk(dts[k], 3, sa, v_signed), *b = mk(dts[k], 2, sb, v_pos), *y = NULL,
                      *y2 = NULL;
            LT_CHECK(lt_binary((lt_binary_op)op, a, b, &y));
            LT_CHECK(lt_binary((lt_binary_op)op, b, a, &y2));
            assert_int_equal(y->ndim, 3);
            assert_int_equal(y->shape[1], 3);
            for (int64_t i = 0; i < 2; i++)
                for (int64_t j = 0; j < 3; j++)
                    for (int64_t l = 0; l < 4; l++) {
                        int64_t idx[3] = {i, j, l};
                        double av = v_signed(i * 4 + l), bv = v_pos(j);
                        if (dts[k] == LT_F32) av = (float)av, bv = (float)bv;
                        near(lt_get(y, idx), ref_bin((lt_binary_op)op, av, bv), 1e-6, "a op b", i);
                        near(lt_get(y2, idx), ref_bin((lt_binary_op)op, bv, av), 1e-6, "b op a", i);
                    }
            lt_tensor_free(a);
            lt_tensor_free(b);
            lt_tensor_free(y);
            lt_tensor_free(y2);
        }
    /* scalar forms, reverse */
    int64_t s[1] = {6};
    lt_tensor *x = mk(LT_F32, 1, s, v_signed), *y = NULL;
    LT_CHECK(lt_binary_scalar(LT_BINARY_SUB, x, 1.5, 1, &y));
    for (int64_t i = 0; i < 6; i++)
        near(lt_get_flat(y, i), 1.5 - (float)v_signed(i), 1e-6, "rsub", i);
    lt_tensor_free(y);
    LT_CHECK(lt_binary_scalar(LT_BINARY_MAXIMUM, x, 0.0, 0, &y));
    for (int64_t i = 0; i < 6; i++)
        near(lt_get_flat(y, i), fmax((float)v_signed(i), 0), 0, "maximum 0", i);
    lt_tensor_free(y);
    /* NaN propagates through maximum */
    lt_set_flat(x, 2, NAN);
    LT_CHECK(lt_binary_scalar(LT_BINARY_MAXIMUM, x, 100.0, 0, &y));
    assert_true(isnan(lt_get_flat(y, 2)));
    assert_true(lt_get_flat(y, 1) == 100.0);
    lt_tensor_free(y);
    /* errors */
    int64_t s3[1] = {3};
    lt_tensor *z = mk(LT_F32, 1, s3, v_pos), *zi = mk(LT_I64, 1, s3, v_int);
    LT_EXPECT_STATUS(lt_binary(LT_BINARY_ADD, x, z, &y), LT_SHAPE);
    LT_EXPECT_STATUS(lt_binary(LT_BINARY_ADD, z, zi, &y), LT_DTYPE);
    LT_EXPECT_STATUS(lt_binary(LT_BINARY_DIV, zi, zi, &y), LT_UNSUPPORTED);
    LT_CHECK(lt_binary(LT_BINARY_MUL, zi, zi, &y));
    for (int64_t i = 0; i < 3; i++) assert_true(lt_get_flat(y, i) == v_int(i) * v_int(i));
    lt_tensor_free(y);
    /* zero-size */
    int64_t s0[2] = {0, 3};
    lt_tensor *e = mk(LT_F32, 2, s0, v_pos);
    LT_CHECK(lt_binary(LT_BINARY_ADD, e, z, &y));
    assert_int_equal(y->shape[0], 0);
    assert_int_equal(y->shape[1], 3);
    lt_tensor_free(y);
    lt_tensor_free(e);
    lt_tensor_free(x);
    lt_tensor_free(z);
    lt_tensor_free(zi);
}

/* ---- reductions ------------------------------------------------------------------------- */

static void test_reduce(void **state) {
    (void)state;
    int64_t s[3] = {2, 3, 4};
    lt_tensor *x = mk(LT_F32, 3, s, v_signed);
    int sets[5][3] = {{0}, {1}, {2}, {0, 2}, {0, 1, 2}};
    int nsets[5] = {1, 1, 1, 2, 0};
    for (int op = 0; op < LT_REDUCE_COUNT; op++)
        for (int si = 0; si < 5; si++)
            for (int kd = 0; kd < 2; kd++) {
                lt_tensor *y = NULL;
                LT_CHECK(lt_reduce((lt_reduce_op)op, x, nsets[si], sets[si], kd, &y));
                int red[3] = {0, 0, 0};
                for (int j = 0; j < nsets[si]; j++) red[sets[si][j]] = 1;
                if (nsets[si] == 0) red[0] = red[1] = red[2] = 1;
                int want_nd = kd ? 3 : 3 - red[0] - red[1] - red[2];
                assert_int_equal(y->ndim, want_nd);
                /* naive: for every output cell, loop over all inputs that map to it */
                int64_t n = lt_numel(y);
                for (int64_t o = 0; o < n; o++) {
                    double acc = op == LT_REDUCE_MAX   ? -INFINITY
                                 : op == LT_REDUCE_MIN ? INFINITY
                                                       : 0;
                    int cnt = 0;
                    for (int64_t i = 0; i < 2; i++)
                        for (int64_t j = 0; j < 3; j++)
                            for (int64_t l = 0; l < 4; l++) {
                                int64_t kept[3] = {i, j, l}, lin = 0, mul = 1;
                                for (int d = 2; d >= 0; d--)
                                    if (!red[d]) lin += kept[d] * mul, mul *= s[d];
                                if (lin != o) continue;
                                double v = (float)v_signed(i * 12 + j * 4 + l);
                                cnt++;
                                if (op == LT_REDUCE_MAX) acc = fmax(acc, v);
                                else if (op == LT_REDUCE_MIN) acc = fmin(acc, v);
                                else acc += v;
                            }
                    if (op == LT_REDUCE_MEAN) acc /= cnt;
                    near(lt_get_flat(y, o), acc, 1e-6, lt_reduce_name((lt_reduce_op)op), o);
                }
                lt_tensor_free(y);
            }
    /* mean with the global divisor; empty reductions give identities */
    lt_tensor *y = NULL;
    int d0 = 0;
    LT_CHECK(lt_reduce_ex(LT_REDUCE_MEAN, x, 1, &d0, 0, 10.0, &y));
    near(lt_get_flat(y, 0), ((float)v_signed(0) + (float)v_signed(12)) / 10.0, 1e-6, "mean/10", 0);
    lt_tensor_free(y);
    int64_t s0[2] = {0, 2};
    lt_tensor *e = mk(LT_F32, 2, s0, v_signed);
    LT_CHECK(lt_reduce(LT_REDUCE_MAX, e, 1, &d0, 0, &y));
    assert_true(lt_get_flat(y, 1) == -INFINITY);
    lt_tensor_free(y);
    LT_CHECK(lt_reduce(LT_REDUCE_SUM, e, 1, &d0, 0, &y));
    assert_true(lt_get_flat(y, 0) == 0);
    lt_tensor_free(y);
    LT_CHECK(lt_reduce(LT_REDUCE_MEAN, e, 1, &d0, 0, &y));
    assert_true(isnan(lt_get_flat(y, 0)));
    lt_tensor_free(y);
    int bad[2] = {1, -1};
    LT_EXPECT_STATUS(lt_reduce(LT_REDUCE_SUM, x, 2, (int[]){1, -2}, 0, &y),
                     LT_INVALID); /* dim twice */
    LT_EXPECT_STATUS(lt_reduce(LT_REDUCE_SUM, x, 1, (int[]){3}, 0, &y), LT_INVALID);
    (void)bad;
    lt_tensor *xi = mk(LT_I64, 3, s, v_int);
    LT_CHECK(lt_reduce(LT_REDUCE_SUM, xi, 0, NULL, 0, &y));
    double tot = 0;
    for (int64_t i = 0; i < 24; i++) tot += v_int(i);
    assert_true(lt_get_flat(y, 0) == tot);
    lt_tensor_free(y);
    LT_EXPECT_STATUS(lt_reduce(LT_REDUCE_MEAN, xi, 0, NULL, 0, &y), LT_UNSUPPORTED);
    lt_tensor_free(xi);
    lt_tensor_free(e);
    lt_tensor_free(x);
}

/* torch wraps dims over a 0-d tensor as over a 1-d one: sum/mean/amax/amin
 * of a 0-d x over dim 0 or -1 is x, keepdim or not (still 0-d); dim 1 or
 * -2 is out of range, and (0, -1) names one dim twice. */
static void test_reduce_zero_d(void **state) {
    (void)state;
    lt_tensor *x = NULL, *y = NULL;
    LT_CHECK(lt_tensor_new(LT_F64, 0, NULL, &x));
    lt_set_flat(x, 0, -3.25);
    for (int op = 0; op < LT_REDUCE_COUNT; op++)
        for (int dim = -1; dim <= 0; dim++)
            for (int kd = 0; kd < 2; kd++) {
                LT_CHECK(lt_reduce((lt_reduce_op)op, x, 1, &dim, kd, &y));
                assert_int_equal(y->ndim, 0);
                assert_true(lt_get_flat(y, 0) == -3.25);
                lt_tensor_free(y);
            }
    LT_EXPECT_STATUS(lt_reduce(LT_REDUCE_SUM, x, 1, (int[]){1}, 0, &y), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "0-d"));
    LT_EXPECT_STATUS(lt_reduce(LT_REDUCE_MAX, x, 1, (int[]){-2}, 0, &y), LT_INVALID);
    LT_EXPECT_STATUS(lt_reduce(LT_REDUCE_MIN, x, 2, (int[]){0, -1}, 0, &y), LT_INVALID);
    assert_null(y);
    lt_tensor_free(x);
}

static void test_softmax(void **state) {
    (void)state;
    int64_t s[3] = {2, 3, 4};
    lt_tensor *x = mk(LT_F64, 3, s, v_signed);
    for (int dim = -1; dim < 3; dim++)
        for (int lg = 0; lg < 2; lg++) {
            lt_tensor *y = NULL;
            LT_CHECK(lt_softmax(x, dim, lg, &y));
            int d = dim < 0 ? 2 : dim;
            for (int64_t i = 0; i < 24; i++) {
                int64_t idx[3] = {i / 12, (i / 4) % 3, i % 4}, jdx[3];
                memcpy(jdx, idx, sizeof idx);
                double den = 0;
                for (int64_t j = 0; j < s[d]; j++) {
                    jdx[d] = j;
                    den += exp(lt_get(x, jdx));
                }
                double want = exp(lt_get(x, idx)) / den;
                near(lt_get(y, idx), lg ? log(want) : want, 1e-12, "softmax", i);
            }
            lt_tensor_free(y);
        }
    lt_tensor_free(x);
}

/* ---- matmul ------------------------------------------------------------------------------ */

/* naive c[i,j] = sum_p a[i,p] b[p,j] over element access */
static void check_mm(const lt_tensor *a, const lt_tensor *b, const lt_tensor *c, double tol) {
    for (int64_t i = 0; i < a->shape[0]; i++)
        for (int64_t j = 0; j < b->shape[1]; j++) {
            double s = 0;
            for (int64_t p = 0; p < a->shape[1]; p++) {
                int64_t ia[2] = {i, p}, ib[2] = {p, j};
                s += lt_get(a, ia) * lt_get(b, ib);
            }
            int64_t ic[2] = {i, j};
            near(lt_get(c, ic), s, tol, "mm", i * 100 + j);
        }
}

static void test_mm(void **state) {
    (void)state;
    lt_dtype dts[4] = {LT_F32, LT_F64, LT_BF16, LT_F16};
    double tols[4] = {1e-5, 1e-12, 2e-2, 4e-3};
    for (int k = 0; k < 4; k++) {
        int64_t sa[2] = {5, 7}, sb[2] = {7, 3}, sbt[2] = {3, 7};
        lt_tensor *a = mk(dts[k], 2, sa, v_signed), *b = mk(dts[k], 2, sb, v_pos),
                  *bt0 = mk(dts[k], 2, sbt, v_pos);
        lt_tensor *bt = NULL, *c = NULL, *c2 = NULL;
        LT_CHECK(lt_transpose(bt0, 0, 1, &bt)); /* column-major operand: gemm with trans */
        LT_CHECK(lt_mm(a, b, &c));
        check_mm(a, b, c, tols[k]);
        assert_int_equal(c->dtype, dts[k]);
        LT_CHECK(lt_mm(a, bt, &c2));
        check_mm(a, bt, c2, tols[k]);
        lt_tensor_free(c);
        lt_tensor_free(c2);
        lt_tensor_free(a);
        lt_tensor_free(b);
        lt_tensor_free(bt);
        lt_tensor_free(bt0);
    }
    /* k == 0 gives zeros; m == 0 gives an empty result */
    int64_t z1[2] = {3, 0}, z2[2] = {0, 2}, z3[2] = {0, 4}, z4[2] = {4, 2};
    lt_tensor *a = mk(LT_F32, 2, z1, v_pos), *b = mk(LT_F32, 2, z2, v_pos), *c = NULL;
    LT_CHECK(lt_mm(a, b, &c));
    assert_int_equal(c->shape[0], 3);
    for (int64_t i = 0; i < 6; i++) assert_true(lt_get_flat(c, i) == 0);
    lt_tensor_free(c);
    lt_tensor_free(a);
    lt_tensor_free(b);
    a = mk(LT_F32, 2, z3, v_pos), b = mk(LT_F32, 2, z4, v_pos);
    LT_CHECK(lt_mm(a, b, &c));
    assert_int_equal(c->shape[0], 0);
    lt_tensor_free(c);
    LT_EXPECT_STATUS(lt_mm(b, b, &c), LT_SHAPE);
    lt_tensor_free(a);
    lt_tensor_free(b);
    int64_t si[2] = {2, 2};
    lt_tensor *ai = mk(LT_I32, 2, si, v_int);
    LT_EXPECT_STATUS(lt_mm(ai, ai, &c), LT_UNSUPPORTED);
    lt_tensor_free(ai);
}

static void test_matmul_shapes(void **state) {
    (void)state;
    /* batched with broadcasting: (2, 1, 3, 4) @ (5, 4, 2) -> (2, 5, 3, 2) */
    int64_t sa[4] = {2, 1, 3, 4}, sb[3] = {5, 4, 2};
    lt_tensor *a = mk(LT_F32, 4, sa, v_signed), *b = mk(LT_F32, 3, sb, v_pos), *c = NULL;
    LT_CHECK(lt_matmul(a, b, &c));
    int64_t want[4] = {2, 5, 3, 2};
    assert_int_equal(c->ndim, 4);
    for (int d = 0; d < 4; d++) assert_int_equal(c->shape[d], want[d]);
    for (int64_t i = 0; i < 2; i++)
        for (int64_t q = 0; q < 5; q++)
            for (int64_t m = 0; m < 3; m++)
                for (int64_t n = 0; n < 2; n++) {
                    double s = 0;
                    for (int64_t p = 0; p < 4; p++)
                        s += (float)v_signed(i * 12 + m * 4 + p) * (float)v_pos(q * 8 + p * 2 + n);
                    int64_t ic[4] = {i, q, m, n};
                    near(lt_get(c, ic), s, 1e-5, "batched matmul", i);
                }
    lt_tensor_free(c);
    lt_tensor_free(a);
    lt_tensor_free(b);
    /* 1-D cases */
    int64_t sv[1] = {4}, sm[2] = {4, 3}, sm2[2] = {3, 4};
    lt_tensor *v = mk(LT_F64, 1, sv, v_signed), *m = mk(LT_F64, 2, sm, v_pos),
              *m2 = mk(LT_F64, 2, sm2, v_pos);
    LT_CHECK(lt_matmul(v, v, &c));
    assert_int_equal(c->ndim, 0);
    double dot = 0;
    for (int64_t i = 0; i < 4; i++) dot += v_signed(i) * v_signed(i);
    near(lt_get_flat(c, 0), dot, 1e-12, "dot", 0);
    lt_tensor_free(c);
    LT_CHECK(lt_matmul(v, m, &c)); /* (4) @ (4, 3) -> (3) */
    assert_int_equal(c->ndim, 1);
    for (int64_t j = 0; j < 3; j++) {
        double s = 0;
        for (int64_t p = 0; p < 4; p++) s += v_signed(p) * v_pos(p * 3 + j);
        near(lt_get_flat(c, j), s, 1e-12, "vm", j);
    }
    lt_tensor_free(c);
    LT_CHECK(lt_matmul(m2, v, &c)); /* (3, 4) @ (4) -> (3) */
    for (int64_t i = 0; i < 3; i++) {
        double s = 0;
        for (int64_t p = 0; p < 4; p++) s += v_pos(i * 4 + p) * v_signed(p);
        near(lt_get_flat(c, i), s, 1e-12, "mv", i);
    }
    lt_tensor_free(c);
    /* bmm */
    int64_t b1[3] = {2, 3, 4}, b2[3] = {2, 4, 5};
    lt_tensor *x = mk(LT_F64, 3, b1, v_signed), *y = mk(LT_F64, 3, b2, v_pos);
    LT_CHECK(lt_bmm(x, y, &c));
    for (int64_t q = 0; q < 2; q++)
        for (int64_t i = 0; i < 3; i++)
            for (int64_t j = 0; j < 5; j++) {
                double s = 0;
                for (int64_t p = 0; p < 4; p++)
                    s += v_signed(q * 12 + i * 4 + p) * v_pos(q * 20 + p * 5 + j);
                int64_t ic[3] = {q, i, j};
                near(lt_get(c, ic), s, 1e-12, "bmm", i);
            }
    lt_tensor_free(c);
    LT_EXPECT_STATUS(lt_bmm(x, x, &c), LT_SHAPE);
    lt_tensor_free(x);
    lt_tensor_free(y);
    lt_tensor_free(v);
    lt_tensor_free(m);
    lt_tensor_free(m2);
}

static void test_addmm(void **state) {
    (void)state;
    int64_t sa[2] = {3, 4}, sb[2] = {4, 2}, sbias[1] = {2}, sbias2[2] = {3, 1};
    lt_tensor *a = mk(LT_F32, 2, sa, v_signed), *b = mk(LT_F32, 2, sb, v_pos);
    lt_tensor *bias = mk(LT_F32, 1, sbias, v_signed), *bias2 = mk(LT_F32, 2, sbias2, v_pos),
              *c = NULL;
    for (int which = 0; which < 2; which++) {
        LT_CHECK(lt_addmm(which ? bias2 : bias, a, b, 0.5, 2.0, &c));
        for (int64_t i = 0; i < 3; i++)
            for (int64_t j = 0; j < 2; j++) {
                double s = 0;
                for (int64_t p = 0; p < 4; p++)
                    s += (float)v_signed(i * 4 + p) * (float)v_pos(p * 2 + j);
                double bv = which ? (float)v_pos(i) : (float)v_signed(j);
                int64_t ic[2] = {i, j};
                near(lt_get(c, ic), 0.5 * bv + 2.0 * s, 1e-5, "addmm", i * 2 + j);
            }
        lt_tensor_free(c);
    }
    /* beta == 0 ignores NaN in bias */
    lt_set_flat(bias, 0, NAN);
    LT_CHECK(lt_addmm(bias, a, b, 0.0, 1.0, &c));
    assert_false(isnan(lt_get_flat(c, 0)));
    lt_tensor_free(c);
    LT_EXPECT_STATUS(lt_addmm(a, a, b, 1.0, 1.0, &c), LT_SHAPE);
    lt_tensor_free(a);
    lt_tensor_free(b);
    lt_tensor_free(bias);
    lt_tensor_free(bias2);
}

static void test_embedding(void **state) {
    (void)state;
    int64_t sw[2] = {5, 3}, si[2] = {2, 2};
    lt_tensor *w = mk(LT_F32, 2, sw, v_signed), *idx = NULL, *o = NULL;
    double iv[4] = {4, 0, 2, 4};
    LT_CHECK(lt_tensor_from_doubles(LT_I64, 2, si, iv, 4, &idx));
    LT_CHECK(lt_embedding(w, idx, 0, 0, &o));
    assert_int_equal(o->ndim, 3);
    for (int64_t i = 0; i < 4; i++)
        for (int64_t j = 0; j < 3; j++)
            near(lt_get_flat(o, i * 3 + j), (float)v_signed((int64_t)iv[i] * 3 + j), 0, "lookup",
                 i);
    lt_tensor_free(o);
    /* masked: rows 2..4 of the table live here as rows 0..2 */
    lt_tensor *w3 = NULL;
    LT_CHECK(lt_narrow(w, 0, 2, 3, &w3));
    LT_CHECK(lt_embedding(w3, idx, 2, 1, &o));
    for (int64_t i = 0; i < 4; i++)
        for (int64_t j = 0; j < 3; j++)
            near(lt_get_flat(o, i * 3 + j),
                 iv[i] >= 2 ? (float)v_signed((int64_t)iv[i] * 3 + j) : 0.0, 0, "masked", i);
    lt_tensor_free(o);
    LT_EXPECT_STATUS(lt_embedding(w3, idx, 2, 0, &o), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "out of range"));
    lt_tensor_free(w3);
    lt_tensor_free(idx);
    lt_tensor_free(w);
}

int main(void) {
    lt_test_backend_from_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary),           cmocka_unit_test(test_binary_broadcast),
        cmocka_unit_test(test_reduce),          cmocka_unit_test(test_reduce_zero_d),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_mm),              cmocka_unit_test(test_matmul_shapes),
        cmocka_unit_test(test_addmm),           cmocka_unit_test(test_embedding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
