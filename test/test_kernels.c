/* test/test_kernels.c — unit tests for kernels/: tensors, copy/cast,
 * accumulate, compare, structured errors, the memo cache (views, cat and
 * index sets: test/test_views.c).
 *
 * Expected values are hand-computed (in the comments) or come from a
 * brute-force loop written here from the semantics (element by element
 * through lt_get/lt_set and plain C arithmetic), never from the fast paths
 * under test.
 */
#include "test/kernels_testutil.h"
#include "kernels/cache_impl.h"
#include "kernels/status_impl.h"
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_new_and_queries(void **state) {
    (void)state;
    int64_t shape[] = {2, 3};
    lt_tensor *t;
    LT_CHECK(lt_tensor_new(LT_F32, 2, shape, &t));
    assert_int_equal(lt_numel(t), 6);
    assert_int_equal(lt_nbytes(t), 24);
    assert_int_equal(t->strides[0], 3);
    assert_int_equal(t->strides[1], 1);
    assert_true(lt_is_contiguous(t));
    for (int i = 0; i < 6; i++) assert_true(lt_get_flat(t, i) == 0.0); /* zero-filled */
    char buf[64];
    assert_string_equal(lt_shape_format(2, shape, buf, sizeof buf), "(2, 3)");
    assert_string_equal(lt_shape_format(0, shape, buf, sizeof buf), "()");
    char tiny[4];
    assert_string_equal(lt_shape_format(2, shape, tiny, sizeof tiny),
                        "(2,"); /* truncated, terminated */
    int64_t idx[] = {1, 2};
    lt_set(t, idx, 7.5);
    assert_true(lt_get_flat(t, 5) == 7.5);
    lt_tensor *ht = lt_test_host_copy(t); /* the raw bytes, on the host */
    assert_true(((float *)lt_data(ht))[5] == 7.5f);
    lt_tensor_free(ht);
    int64_t bad[] = {2, 0};
    assert_true(isnan(lt_get(t, bad))); /* out of range reads NaN, writes nothing */
    lt_set(t, bad, 1.0);
    assert_true(isnan(lt_get_flat(t, 6)));
    lt_tensor *like;
    LT_CHECK(lt_tensor_new_like(t, &like));
    assert_true(lt_same_shape(t, like));
    assert_true(lt_get_flat(like, 5) == 0.0);
    lt_tensor_free(like);
    lt_tensor_free(t);
    lt_tensor_free(NULL);

    /* 0-d: one element */
    LT_CHECK(lt_tensor_new(LT_I64, 0, NULL, &t));
    assert_int_equal(lt_numel(t), 1);
    lt_set_flat(t, 0, 42);
    assert_true(lt_get(t, NULL) == 42);
    lt_tensor_free(t);

    /* zero-size dims: valid strides, no elements */
    int64_t z[] = {0, 3};
    LT_CHECK(lt_tensor_new(LT_F32, 2, z, &t));
    assert_int_equal(lt_numel(t), 0);
    assert_int_equal(lt_nbytes(t), 0);
    assert_int_equal(t->strides[0], 3);
    assert_true(lt_is_contiguous(t));
    LT_CHECK(lt_fill(t, 1.0));
    lt_tensor_free(t);
}

static void test_shape_errors(void **state) {
    (void)state;
    lt_tensor *t = (lt_tensor *)&t; /* must come back NULL */
    int64_t big[] = {INT64_MAX / 2, 4};
    LT_EXPECT_STATUS(lt_tensor_new(LT_F32, 2, big, &t), LT_OVERFLOW);
    assert_null(t);
    expect_msg_contains("(4611686018427387903, 4)");
    int64_t bytes[] = {INT64_MAX / 4};          /* the count fits, the bytes do not */
    LT_EXPECT_STATUS(lt_tensor_new(LT_F64, 1, bytes, &t), LT_OVERFLOW);
    int64_t neg[] = {2, -1};
    LT_EXPECT_STATUS(lt_tensor_new(LT_F32, 2, neg, &t), LT_INVALID);
    expect_msg_contains("negative");
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    LT_EXPECT_STATUS(lt_tensor_new(LT_F32, 9, nine, &t), LT_INVALID);
    LT_EXPECT_STATUS(lt_tensor_new(LT_F32, -1, nine, &t), LT_INVALID);
    LT_EXPECT_STATUS(lt_tensor_new((lt_dtype)99, 1, nine, &t), LT_INVALID);
    int64_t zbig[] = {0, INT64_MAX, INT64_MAX};  /* no elements, but strides overflow */
    LT_EXPECT_STATUS(lt_tensor_new(LT_F32, 3, zbig, &t), LT_OVERFLOW);
    /* strides (2^40, 2^40, 1) fit: dim 0's size never enters a stride */
    int64_t zfit[] = {(int64_t)1 << 40, 0, (int64_t)1 << 40};
    LT_CHECK(lt_tensor_new(LT_F32, 3, zfit, &t));
    assert_int_equal(lt_numel(t), 0);
    assert_true(t->strides[0] == ((int64_t)1 << 40) && t->strides[1] == ((int64_t)1 << 40));
    lt_tensor_free(t);
    t = NULL;
    double v[] = {1, 2, 3};
    int64_t s2[] = {2};
    LT_EXPECT_STATUS(lt_tensor_from_doubles(LT_F32, 1, s2, v, 3, &t), LT_SHAPE);
    expect_msg_contains("3 values");
    assert_null(t);
    LT_EXPECT_STATUS(lt_tensor_placeholder(LT_F32, 2, big, &t), LT_OVERFLOW);
}

static void test_from_doubles_every_dtype(void **state) {
    (void)state;
    int64_t s[] = {2, 2};
    double v[] = {0, 1, -2, 5};
    double vb[] = {0, 1, 1, 1};
    for (int i = 0; i < N_(all_dtypes); i++) {
        lt_tensor *t = mk(all_dtypes[i], 2, s, v);
        lt_test_expect_values(t, 2, s, all_dtypes[i] == LT_BOOL ? vb : v,
                              lt_dtype_name(all_dtypes[i]));
        double out[4];
        lt_to_doubles(t, out);
        for (int j = 0; j < 4; j++) assert_true(out[j] == (all_dtypes[i] == LT_BOOL ? vb : v)[j]);
        lt_tensor_free(t);
    }
}

static void test_placeholder(void **state) {
    (void)state;
    int64_t s[] = {4, 3};
    lt_tensor *p;
    LT_CHECK(lt_tensor_placeholder(LT_BF16, 2, s, &p));
    assert_true(p->placeholder);
    assert_int_equal(p->logical_ndim, 2);
    assert_int_equal(p->logical[0], 4);
    assert_int_equal(p->logical[1], 3);
    assert_int_equal(p->ndim, 2);
    assert_int_equal(p->shape[0], 0);
    assert_int_equal(p->shape[1], 3);
    assert_int_equal(lt_numel(p), 0);
    assert_int_equal(p->dtype, LT_BF16);
    lt_tensor *c;
    LT_CHECK(lt_clone(p, &c)); /* a copy stands for the same */
    assert_true(c->placeholder && c->logical[0] == 4);
    lt_tensor_free(c);
    lt_tensor *n;
    LT_CHECK(lt_narrow(p, 1, 0, 2, &n)); /* a reshaped view does not */
    assert_false(n->placeholder);
    lt_tensor_free(n);
    lt_tensor_free(p);
    LT_CHECK(lt_tensor_placeholder(LT_F32, 0, NULL, &p));
    assert_int_equal(p->ndim, 1);
    assert_int_equal(p->shape[0], 0);
    assert_int_equal(p->logical_ndim, 0);
    lt_tensor_free(p);
}

static void test_refcount_view_outlives_base(void **state) {
    (void)state;
    int64_t s[] = {3, 4};
    lt_tensor *base = mk_arange(LT_F32, 2, s);
    lt_tensor *row, *col, *v;
    LT_CHECK(lt_select(base, 0, 1, &row));   /* 4 5 6 7 */
    LT_CHECK(lt_select(base, 1, 2, &col));   /* 2 6 10 */
    LT_CHECK(lt_tensor_view(base, &v));
    assert_int_equal(base->storage->refcount, 4);
    lt_tensor_free(base);
    lt_tensor_free(v);
    assert_int_equal(row->storage->refcount, 2);
    int64_t s4[] = {4};
    lt_test_expect_values(row, 1, s4, (double[]){4, 5, 6, 7}, "row after base freed");
    lt_tensor *n;
    LT_CHECK(lt_narrow(col, 0, 1, 2, &n));   /* a view of a view */
    lt_tensor_free(col);
    lt_test_expect_values(n, 1, (int64_t[]){2}, (double[]){6, 10}, "view of a view");
    lt_tensor_free(row);
    lt_test_expect_values(n, 1, (int64_t[]){2}, (double[]){6, 10}, "last view");
    lt_tensor_free(n);
}

/* ---- a backend whose allocations fail on demand (fault injection) ---------------- */

static int fail_allocs_after = -1; /* -1: never fail */
static int live_allocs;

static void *fail_alloc(void *ctx, size_t nbytes) {
    (void)ctx;
    if (fail_allocs_after == 0) return NULL;
    if (fail_allocs_after > 0) fail_allocs_after--;
    live_allocs++;
    return malloc(nbytes ? nbytes : 1);
}
static void fail_free(void *ctx, void *p) {
    (void)ctx;
    if (p) live_allocs--;
    free(p);
}
static void fail_memcpy(void *ctx, void *d, const void *s, size_t n) {
    (void)ctx;
    memcpy(d, s, n);
}
static const lt_backend_i fail_iface = {
    /* .version    = */ LT_BACKEND_API_VERSION,
    /* .name       = */ "failing",
    /* .alloc      = */ fail_alloc,
    /* .free       = */ fail_free,
    /* .memcpy     = */ fail_memcpy,
    /* .accumulate = */ NULL,     /* exercises the host loop */
    /* .gemm       = */ NULL,
    /* .launch     = */ NULL,
    /* .to_host    = */ NULL,     /* host memory */
    /* .from_host  = */ NULL,
};
static const lt_backend fail_backend = {&fail_iface, NULL};

static void test_alloc_failures(void **state) {
    (void)state;
    int64_t s[] = {4, 5};
    lt_tensor *a, *b, *out = NULL;
    fail_allocs_after = -1;
    LT_CHECK(lt_tensor_new_on(&fail_backend, LT_F32, 2, s, &a));
    LT_CHECK(lt_arange_fill(a));
    LT_CHECK(lt_transpose(a, 0, 1, &b)); /* non-contiguous: reshape must copy */
    fail_allocs_after = 0;
    LT_EXPECT_STATUS(lt_tensor_new_on(&fail_backend, LT_F32, 2, s, &out), LT_NOMEM);
    expect_msg_contains("failing");
    LT_EXPECT_STATUS(lt_clone(a, &out), LT_NOMEM);
    assert_null(out);
    LT_EXPECT_STATUS(lt_contiguous(b, &out), LT_NOMEM);
    LT_EXPECT_STATUS(lt_cast(a, LT_F64, &out), LT_NOMEM);
    LT_EXPECT_STATUS(lt_reshape(b, 1, (int64_t[]){20}, &out), LT_NOMEM);
    expect_msg_contains("reshape");
    const lt_tensor *in[] = {a, a};
    LT_EXPECT_STATUS(lt_cat(in, 2, 0, &out), LT_NOMEM);
    LT_EXPECT_STATUS(lt_index_select(a, 1, (int64_t[]){0, 2}, 2, &out), LT_NOMEM);
    LT_EXPECT_STATUS(lt_gather_index_sets(a, NULL, NULL, &out), LT_NOMEM);
    /* scatter of a non-contiguous source stages it through a copy */
    lt_tensor *dst;
    fail_allocs_after = -1;
    LT_CHECK(lt_tensor_new_on(&fail_backend, LT_F32, 2, (int64_t[]){5, 4}, &dst));
    fail_allocs_after = 0;
    LT_EXPECT_STATUS(lt_scatter_index_sets(dst, NULL, b, 0, LT_REDOP_SUM), LT_NOMEM);
    assert_null(out);
    fail_allocs_after = -1;
    /* the host accumulate loop (the backend has none) */
    lt_tensor *c;
    LT_CHECK(lt_clone(a, &c));
    LT_CHECK(lt_accumulate(c, a, LT_REDOP_SUM));
    for (int i = 0; i < 20; i++) assert_true(lt_get_flat(c, i) == 2.0 * i);
    lt_tensor_free(c);
    lt_tensor_free(dst);
    lt_tensor_free(b);
    lt_tensor_free(a);
    assert_int_equal(live_allocs, 0);
}

/* ---- fill, copy, cast ------------------------------------------------------------------ */

static void test_fill_and_arange(void **state) {
    (void)state;
    int64_t s[] = {3, 4};
    for (int i = 0; i < N_(all_dtypes); i++) {
        lt_tensor *t = mk_arange(all_dtypes[i], 2, s), *tr;
        for (int j = 0; j < 12; j++)
            assert_true(lt_get_flat(t, j) == (all_dtypes[i] == LT_BOOL ? (j != 0) : j));
        LT_CHECK(lt_transpose(t, 0, 1, &tr)); /* strided fill: only the view's elements */
        lt_tensor *col;
        LT_CHECK(lt_select(tr, 0, 1, &col));  /* column 1 of t: flat 1, 5, 9 */
        LT_CHECK(lt_fill(col, -3));
        for (int j = 0; j < 12; j++) {
            double want = (j % 4 == 1) ? -3 : j;
            if (all_dtypes[i] == LT_BOOL) want = want != 0;
            assert_true(lt_get_flat(t, j) == want);
        }
        lt_tensor_free(col);
        lt_tensor_free(tr);
        lt_tensor_free(t);
    }
}

/* f16 and bf16 rounding, by hand */
static void test_cast_rounding_by_hand(void **state) {
    (void)state;
    int64_t s[] = {12};
    double in[] = {1.0 / 3, 65504, 65519, 65520, 1e-7, 2.9802322387695312e-08, INFINITY,
                   -INFINITY, NAN, 2049, 2051, -0.0};
    /* f16: 1/3 -> 0x3555 = 0.333251953125; 65504 is the max; 65519 rounds down to
     * it, 65520 to inf; 1e-7 -> 2 * 2^-24 (subnormal); 2^-25 is a tie -> 0;
     * 2049 ties to 2048 (even), 2051 ties to 2052. */
    double want16[] = {0.333251953125, 65504, 65504, INFINITY, 1.1920928955078125e-07, 0,
                       INFINITY, -INFINITY, NAN, 2048, 2052, -0.0};
    lt_tensor *t = mk(LT_F64, 1, s, in), *h;
    LT_CHECK(lt_cast(t, LT_F16, &h));
    for (int i = 0; i < 12; i++) {
        double g = lt_get_flat(h, i);
        if (isnan(want16[i])) assert_true(isnan(g));
        else if (g != want16[i]) fail_msg("f16(%.17g) = %.17g, wanted %.17g", in[i], g, want16[i]);
    }
    assert_true(signbit(lt_get_flat(h, 11)));
    lt_tensor_free(h);
    /* bf16 (from f32): 1/3 = 0x3EAAAAAB -> 0x3EAB = 0.333984375; 1 + 2^-8 ties to 1;
     * 1 + 3*2^-8 ties to 1 + 2^-6; 257 ties to 256; 3.3895314e38 (max bf16) stays. */
    double inb[] = {1.0 / 3, 1 + 1.0 / 256, 1 + 3.0 / 256, 257, 3.3895313892515355e38, NAN};
    double wantb[] = {0.333984375, 1, 1.015625, 256, 3.3895313892515355e38, NAN};
    lt_tensor *f = mk(LT_F32, 1, (int64_t[]){6}, inb), *b;
    LT_CHECK(lt_cast(f, LT_BF16, &b));
    for (int i = 0; i < 6; i++) {
        double g = lt_get_flat(b, i);
        if (isnan(wantb[i])) assert_true(isnan(g));
        else if (g != wantb[i]) fail_msg("bf16(%.17g) = %.17g, wanted %.17g", inb[i], g, wantb[i]);
    }
    lt_tensor_free(b);
    lt_tensor_free(f);
    /* integers truncate toward zero and saturate; NaN -> 0; bool is v != 0 */
    double ini[] = {-1.7, 1.7, 3e9, -3e9, NAN, 0.25};
    lt_tensor *x = mk(LT_F64, 1, (int64_t[]){6}, ini), *i32, *i64, *bo;
    LT_CHECK(lt_cast(x, LT_I32, &i32));
    LT_CHECK(lt_cast(x, LT_I64, &i64));
    LT_CHECK(lt_cast(x, LT_BOOL, &bo));
    lt_test_expect_values(i32, 1, (int64_t[]){6},
                          (double[]){-1, 1, 2147483647, -2147483648.0, 0, 0}, "i32");
    lt_test_expect_values(i64, 1, (int64_t[]){6}, (double[]){-1, 1, 3e9, -3e9, 0, 0}, "i64");
    lt_test_expect_values(bo, 1, (int64_t[]){6}, (double[]){1, 1, 1, 1, 1, 1}, "bool");
    lt_tensor_free(i32);
    lt_tensor_free(i64);
    lt_tensor_free(bo);
    lt_tensor_free(x);
    lt_tensor_free(t);
}

/* Independent reference: round a float to the nearest bf16/f16 value in
 * double arithmetic (ties to even via nearbyint), from the formats' layout. */
static double ref_round(double x, int mant_bits, int emin, double maxfinite, double overflow_at) {
    if (isnan(x) || isinf(x) || x == 0) return x;
    double a = fabs(x);
    int e;
    frexp(a, &e);              /* a = m * 2^e, m in [0.5, 1) */
    e -= 1;                    /* a in [2^e, 2^(e+1)) */
    if (e < emin) e = emin;    /* subnormals share the smallest exponent's spacing */
    double ulp = ldexp(1.0, e - mant_bits);
    double r = nearbyint(a / ulp) * ulp;
    if (r >= overflow_at) r = INFINITY;
    else if (r > maxfinite) r = maxfinite;
    return copysign(r, x);
}

static void test_cast_rounding_brute_force(void **state) {
    (void)state;
    enum { N = 200000 };
    double *v = malloc(sizeof *v * N);
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)rnd();
        if (i % 2) /* half of them in [2^-26, 2^18), around the f16 range */
            u = (u & 0x807fffffu) | (uint32_t)(101 + rnd_below(44)) << 23;
        float f;
        memcpy(&f, &u, 4);
        v[i] = isnan(f) ? 1.0 : f;
    }
    lt_tensor *t = mk(LT_F32, 1, (int64_t[]){N}, v), *h, *b, *back;
    LT_CHECK(lt_cast(t, LT_F16, &h));
    LT_CHECK(lt_cast(t, LT_BF16, &b));
    for (int i = 0; i < N; i++) {
        double w16 = ref_round(v[i], 10, -14, 65504.0, 65520.0);
        double wb = ref_round(v[i], 7, -126, 3.3895313892515355e38, 3.3961775292304282e38);
        double g16 = lt_get_flat(h, i), gb = lt_get_flat(b, i);
        if (g16 != w16) fail_msg("f16(%a) = %a, wanted %a", v[i], g16, w16);
        if (gb != wb) fail_msg("bf16(%a) = %a, wanted %a", v[i], gb, wb);
    }
    /* and back: widening is exact */
    LT_CHECK(lt_cast(h, LT_F32, &back));
    for (int i = 0; i < N; i += 97) assert_true(lt_get_flat(back, i) == lt_get_flat(h, i));
    lt_tensor_free(back);
    /* every f16 bit pattern survives f16 -> f32 -> f16 */
    lt_tensor *all, *hall, *hrt;
    LT_CHECK(lt_tensor_new_on(lt_backend_cpu(), LT_F16, 1, (int64_t[]){65536}, &hall));
    uint16_t *p = lt_data(hall); /* written on the host, then copied where the test runs */
    for (int i = 0; i < 65536; i++) p[i] = (uint16_t)i;
    LT_CHECK(lt_tensor_new(LT_F16, 1, (int64_t[]){65536}, &all));
    LT_CHECK(lt_copy(all, hall));
    lt_tensor_free(hall);
    lt_tensor *w, *rt;
    LT_CHECK(lt_cast(all, LT_F32, &w));
    LT_CHECK(lt_cast(w, LT_F16, &rt));
    hrt = lt_test_host_copy(rt);
    uint16_t *q = lt_data(hrt);
    for (int i = 0; i < 65536; i++) {
        int nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff);
        if (nan) assert_true((q[i] & 0x7c00) == 0x7c00 && (q[i] & 0x3ff));
        else if (q[i] != i) fail_msg("f16 0x%04x came back as 0x%04x", i, q[i]);
    }
    lt_tensor_free(rt);
    lt_tensor_free(hrt);
    lt_tensor_free(w);
    lt_tensor_free(all);
    lt_tensor_free(h);
    lt_tensor_free(b);
    lt_tensor_free(t);
    free(v);
}

static void test_cast_round_trip_every_pair(void **state) {
    (void)state;
    int64_t s[] = {2, 3};
    double v[] = {0, 1, -2, 3, 100, -7};
    for (int i = 0; i < N_(all_dtypes); i++)
        for (int j = 0; j < N_(all_dtypes); j++) {
            lt_dtype a = all_dtypes[i], b = all_dtypes[j];
            lt_tensor *t = mk(a, 2, s, v), *c, *back, *tr, *ctr;
            LT_CHECK(lt_cast(t, b, &c));
            LT_CHECK(lt_cast(c, a, &back));
            assert_int_equal(c->dtype, b);
            int lossy = a == LT_BOOL || b == LT_BOOL;
            for (int k = 0; k < 6; k++) {
                double want = lossy ? (v[k] != 0) : v[k];
                if (lt_get_flat(back, k) != want)
                    fail_msg("%s -> %s -> %s: element %d is %g, wanted %g", lt_dtype_name(a),
                             lt_dtype_name(b), lt_dtype_name(a), k, lt_get_flat(back, k), want);
            }
            /* strided source: the transposed values, converted */
            LT_CHECK(lt_transpose(t, 0, 1, &tr));
            LT_CHECK(lt_cast(tr, b, &ctr));
            int64_t ix[2] = {0, 0};
            int64_t k = 0;
            do {
                double want = lt_get(tr, ix);
                if (b == LT_BOOL) want = want != 0;
                assert_true(lt_get_flat(ctr, k++) == want);
            } while (next_index(2, ctr->shape, ix));
            lt_tensor_free(ctr);
            lt_tensor_free(tr);
            lt_tensor_free(back);
            lt_tensor_free(c);
            lt_tensor_free(t);
        }
}


static void test_copy_strided_brute_force(void **state) {
    (void)state;
    for (int iter = 0; iter < 300; iter++) {
        int ndim = 1 + (int)rnd_below(4);
        int64_t shape[LT_MAX_DIMS];
        for (int d = 0; d < ndim; d++) shape[d] = rnd_below(5) + (iter % 7 == 0 ? 0 : 1);
        lt_dtype sdt = all_dtypes[rnd_below(N_(all_dtypes))];
        lt_dtype ddt = iter % 2 ? sdt : all_dtypes[rnd_below(N_(all_dtypes))];
        lt_tensor *sb, *db;
        lt_tensor *src = random_view(sdt, ndim, shape, &sb);
        lt_tensor *dst = random_view(ddt, ndim, shape, &db);
        const double sentinel = 77;
        LT_CHECK(lt_fill(db, sentinel));
        LT_CHECK(lt_copy(dst, src));
        /* every element of dst equals src's (stored once in ddt); then it is
         * reset to the sentinel, and all of db must read the sentinel */
        int64_t ix[LT_MAX_DIMS] = {0};
        if (lt_numel(src) > 0) do {
            double want = lt_get(src, ix);
            if (ddt == LT_BOOL) want = want != 0;
            else if (ddt == LT_BF16) want = lt_bf16_to_f32(lt_f32_to_bf16((float)want));
            else if (ddt == LT_F16) want = lt_f16_to_f32(lt_f32_to_f16((float)want));
            if (lt_get(dst, ix) != want)
                fail_msg("copy %s -> %s iter %d: got %g, wanted %g", lt_dtype_name(sdt),
                         lt_dtype_name(ddt), iter, lt_get(dst, ix), want);
            lt_set(dst, ix, sentinel);
        } while (next_index(ndim, shape, ix));
        int64_t nb = lt_numel(db);
        for (int64_t i = 0; i < nb; i++)
            if (lt_get_flat(db, i) != (ddt == LT_BOOL ? 1 : sentinel))
                fail_msg("copy iter %d wrote outside dst, at base element %lld", iter,
                         (long long)i);
        lt_tensor_free(src);
        lt_tensor_free(dst);
        lt_tensor_free(sb);
        lt_tensor_free(db);
    }
}

/* Transposes large enough to cross the copy's cache tiles (64 x 64). */
static void test_copy_transposed_tiles(void **state) {
    (void)state;
    int64_t s3[] = {3, 130, 67};
    lt_dtype dts[] = {LT_F32, LT_BF16, LT_F64, LT_BOOL};
    for (int i = 0; i < 4; i++) {
        lt_tensor *x = mk_arange(dts[i], 3, s3), *p, *c;
        LT_CHECK(lt_permute(x, (int[]){2, 0, 1}, &p)); /* (67, 3, 130) */
        LT_CHECK(lt_clone(p, &c));
        int64_t ix[3] = {0, 0, 0}, k = 0;
        do {
            double want = lt_get(x, (int64_t[]){ix[1], ix[2], ix[0]});
            if (lt_get_flat(c, k) != want)
                fail_msg("%s: element %lld is %g, wanted %g", lt_dtype_name(dts[i]), (long long)k,
                         lt_get_flat(c, k), want);
            k++;
        } while (next_index(3, p->shape, ix));
        /* and the other way: a contiguous source into a transposed destination */
        lt_tensor *d, *dt;
        LT_CHECK(lt_tensor_new(dts[i], 3, s3, &d));
        LT_CHECK(lt_permute(d, (int[]){2, 0, 1}, &dt));
        LT_CHECK(lt_copy(dt, c));
        lt_compare_result r;
        LT_CHECK(lt_compare(d, x, 0, 0, &r));
        if (!r.equal)
            fail_msg("%s: copy into a transposed view: %lld differ", lt_dtype_name(dts[i]),
                     (long long)r.ndiff);
        lt_tensor_free(dt);
        lt_tensor_free(d);
        lt_tensor_free(c);
        lt_tensor_free(p);
        lt_tensor_free(x);
    }
}

static void test_copy_overlap_and_errors(void **state) {
    (void)state;
    lt_tensor *x = mk_arange(LT_F32, 1, (int64_t[]){6}), *a, *b;
    LT_CHECK(lt_narrow(x, 0, 0, 5, &a)); /* x[0:5] = x[1:6]: overlapping, staged */
    LT_CHECK(lt_narrow(x, 0, 1, 5, &b));
    LT_CHECK(lt_copy(a, b));
    lt_test_expect_values(x, 1, (int64_t[]){6}, (double[]){1, 2, 3, 4, 5, 5}, "shift left");
    LT_CHECK(lt_copy(x, x));
    lt_tensor *y = mk_arange(LT_F32, 1, (int64_t[]){5});
    LT_EXPECT_STATUS(lt_copy(x, y), LT_SHAPE);
    expect_msg_contains("(6)");
    expect_msg_contains("(5)");
    LT_EXPECT_STATUS(lt_copy(NULL, y), LT_INVALID);
    lt_tensor_free(y);
    lt_tensor_free(a);
    lt_tensor_free(b);
    lt_tensor_free(x);
}

static void test_clone_contiguous(void **state) {
    (void)state;
    lt_tensor *x = mk_arange(LT_I32, 2, (int64_t[]){2, 3}), *t, *c, *v;
    LT_CHECK(lt_contiguous(x, &v));
    assert_ptr_equal(v->storage, x->storage); /* already contiguous: a view */
    LT_CHECK(lt_transpose(x, 0, 1, &t));
    assert_false(lt_is_contiguous(t));
    LT_CHECK(lt_contiguous(t, &c));
    assert_ptr_not_equal(c->storage, x->storage);
    assert_true(lt_is_contiguous(c));
    lt_test_expect_values(c, 2, (int64_t[]){3, 2}, (double[]){0, 3, 1, 4, 2, 5}, "transposed");
    lt_tensor_free(c);
    lt_tensor_free(t);
    lt_tensor_free(v);
    lt_tensor_free(x);
}

static void test_accumulate_every_op_and_dtype(void **state) {
    (void)state;
    int64_t s[] = {4};
    double a[] = {1, -2, 3, 0.5}, b[] = {4, 5, -6, 0.25};
    /* hand-computed, floats: */
    double fsum[] = {5, 3, -3, 0.75}, fmax[] = {4, 5, 3, 0.5}, fmin[] = {1, -2, -6, 0.25},
           fprod[] = {4, -10, -18, 0.125};
    /* integers see a = {1, -2, 3, 0}, b = {4, 5, -6, 0} */
    double isum[] = {5, 3, -3, 0}, imax[] = {4, 5, 3, 0}, imin[] = {1, -2, -6, 0},
           iprod[] = {4, -10, -18, 0};
    double ba[] = {1, 0, 1, 0}, bb[] = {1, 1, 0, 0}, bor[] = {1, 1, 1, 0}, band[] = {1, 0, 0, 0};
    for (int i = 0; i < N_(all_dtypes); i++) {
        lt_dtype dt = all_dtypes[i];
        int isint = dt == LT_I32 || dt == LT_I64;
        for (int op = 0; op < LT_REDOP_COUNT; op++) {
            const double *want;
            if (dt == LT_BOOL) want = (op == LT_REDOP_MIN || op == LT_REDOP_PRODUCT) ? band : bor;
            else if (op == LT_REDOP_SUM || op == LT_REDOP_AVG) want = isint ? isum : fsum;
            else if (op == LT_REDOP_MAX) want = isint ? imax : fmax;
            else if (op == LT_REDOP_MIN) want = isint ? imin : fmin;
            else want = isint ? iprod : fprod;
            lt_tensor *d = mk(dt, 1, s, dt == LT_BOOL ? ba : a);
            lt_tensor *x = mk(dt, 1, s, dt == LT_BOOL ? bb : b);
            LT_CHECK(lt_accumulate(d, x, (lt_redop)op));
            char what[64];
            snprintf(what, sizeof what, "%s %s", lt_dtype_name(dt), lt_redop_name((lt_redop)op));
            lt_test_expect_values(d, 1, s, want, what);
            lt_tensor_free(d);
            lt_tensor_free(x);
        }
    }
}

static void test_accumulate_special(void **state) {
    (void)state;
    int64_t s[] = {3};
    /* NaN propagates through max/min on every float dtype */
    lt_dtype fl[] = {LT_F32, LT_F64, LT_BF16, LT_F16};
    for (int i = 0; i < 4; i++) {
        for (int op = LT_REDOP_MAX; op <= LT_REDOP_MIN; op++) {
            lt_tensor *d = mk(fl[i], 1, s, (double[]){NAN, 1, 2});
            lt_tensor *x = mk(fl[i], 1, s, (double[]){1, NAN, 2});
            LT_CHECK(lt_accumulate(d, x, (lt_redop)op));
            assert_true(isnan(lt_get_flat(d, 0)));
            assert_true(isnan(lt_get_flat(d, 1)));
            assert_true(lt_get_flat(d, 2) == 2);
            lt_tensor_free(d);
            lt_tensor_free(x);
        }
    }
    /* bf16 rounds once: 256 + 1 = 257 ties to 256; f16: 2048 + 1 ties to 2048, + 3 -> 2052 */
    lt_tensor *d = mk(LT_BF16, 1, s, (double[]){256, 256, 1});
    lt_tensor *x = mk(LT_BF16, 1, s, (double[]){1, 3, 0.0078125});
    LT_CHECK(lt_accumulate(d, x, LT_REDOP_SUM));
    lt_test_expect_values(d, 1, s, (double[]){256, 260, 1.0078125}, "bf16 sum");
    lt_tensor_free(d);
    lt_tensor_free(x);
    d = mk(LT_F16, 1, s, (double[]){2048, 2048, 65504});
    x = mk(LT_F16, 1, s, (double[]){1, 3, 32});
    LT_CHECK(lt_accumulate(d, x, LT_REDOP_SUM));
    lt_test_expect_values(d, 1, s, (double[]){2048, 2052, INFINITY}, "f16 sum");
    lt_tensor_free(d);
    lt_tensor_free(x);
    /* integers wrap */
    d = mk(LT_I32, 1, s, (double[]){2147483647, -2147483648.0, 65536});
    x = mk(LT_I32, 1, s, (double[]){1, -1, 65536});
    LT_CHECK(lt_accumulate(d, x, LT_REDOP_SUM));
    lt_test_expect_values(d, 1, s, (double[]){-2147483648.0, 2147483647, 131072}, "i32 wrap");
    LT_CHECK(lt_accumulate(d, x, LT_REDOP_PRODUCT));
    assert_true(lt_get_flat(d, 2) == 0); /* 131072 * 65536 = 2^33 wraps to 0 */
    lt_tensor_free(d);
    lt_tensor_free(x);
    /* strided operands vs brute force */
    lt_tensor *base = mk_arange(LT_F32, 2, (int64_t[]){5, 7}), *t, *dst;
    LT_CHECK(lt_transpose(base, 0, 1, &t)); /* (7, 5) */
    LT_CHECK(lt_tensor_new(LT_F32, 2, (int64_t[]){7, 5}, &dst));
    LT_CHECK(lt_fill(dst, 0.5));
    for (int op = 0; op < LT_REDOP_COUNT; op++) {
        lt_tensor *ref;
        LT_CHECK(lt_clone(dst, &ref));
        LT_CHECK(lt_accumulate(dst, t, (lt_redop)op));
        int64_t ix[2] = {0, 0};
        do {
            double a = lt_get(ref, ix), b = lt_get(t, ix), r;
            r = op == LT_REDOP_MAX ? fmax(a, b) : op == LT_REDOP_MIN ? fmin(a, b)
              : op == LT_REDOP_PRODUCT ? (double)(float)(a * b) : (double)(float)(a + b);
            if (lt_get(dst, ix) != r)
                fail_msg("strided %s: got %g wanted %g", lt_redop_name((lt_redop)op),
                         lt_get(dst, ix), r);
        } while (next_index(2, t->shape, ix));
        lt_tensor_free(ref);
    }
    /* errors */
    LT_EXPECT_STATUS(lt_accumulate(dst, base, LT_REDOP_SUM), LT_SHAPE);
    expect_msg_contains("(7, 5)");
    lt_tensor *f64;
    LT_CHECK(lt_cast(t, LT_F64, &f64));
    LT_EXPECT_STATUS(lt_accumulate(dst, f64, LT_REDOP_SUM), LT_DTYPE);
    LT_EXPECT_STATUS(lt_accumulate(dst, t, (lt_redop)42), LT_INVALID);
    lt_tensor_free(f64);
    lt_tensor_free(dst);
    lt_tensor_free(t);
    lt_tensor_free(base);
}

static void test_scale(void **state) {
    (void)state;
    int64_t s[] = {4};
    double v[] = {7, -7, 3, 1};
    lt_tensor *f = mk(LT_F32, 1, s, v), *i = mk(LT_I32, 1, s, v), *b = mk(LT_BF16, 1, s, v);
    LT_CHECK(lt_scale(f, 0.5));
    LT_CHECK(lt_scale(i, 0.5));
    LT_CHECK(lt_scale(b, 0.25));
    lt_test_expect_values(f, 1, s, (double[]){3.5, -3.5, 1.5, 0.5}, "f32 scale");
    lt_test_expect_values(i, 1, s, (double[]){3, -3, 1, 0}, "i32 scale truncates");
    lt_test_expect_values(b, 1, s, (double[]){1.75, -1.75, 0.75, 0.25}, "bf16 scale");
    lt_tensor *t;
    lt_tensor *m = mk_arange(LT_F64, 2, (int64_t[]){2, 3});
    LT_CHECK(lt_transpose(m, 0, 1, &t));
    LT_CHECK(lt_scale(t, 2));
    lt_test_expect_values(m, 2, (int64_t[]){2, 3}, (double[]){0, 2, 4, 6, 8, 10}, "strided scale");
    lt_tensor_free(t);
    lt_tensor_free(m);
    lt_tensor_free(f);
    lt_tensor_free(i);
    lt_tensor_free(b);
}

/* ---- compare ------------------------------------------------------------------------------- */

static void test_compare(void **state) {
    (void)state;
    int64_t s[] = {2, 3};
    lt_tensor *e = mk(LT_F64, 2, s, (double[]){1, 2, 3, NAN, INFINITY, 100});
    lt_tensor *a = mk(LT_F32, 2, s, (double[]){1, 2, 3, NAN, INFINITY, 100});
    lt_compare_result r;
    LT_CHECK(lt_compare(a, e, 0, 0, &r));
    assert_true(r.equal);
    assert_int_equal(r.ndiff, 0);
    assert_int_equal(r.first_flat, -1);
    assert_true(r.max_abs_diff == 0);
    lt_tensor_free(a);
    a = mk(LT_F32, 2, s, (double[]){1, 2.5, 3, 4, -INFINITY, 101});
    LT_CHECK(lt_compare(a, e, 0.01, 0, &r)); /* 101 vs 100: |1| <= 0.01 * 100: close */
    assert_false(r.equal);
    assert_int_equal(r.ndiff, 3);            /* 2.5 vs 2, 4 vs NaN, -inf vs inf */
    assert_int_equal(r.first_flat, 1);
    assert_int_equal(r.first_idx[0], 0);
    assert_int_equal(r.first_idx[1], 1);
    assert_true(r.actual == 2.5 && r.expected == 2);
    assert_true(isinf(r.max_abs_diff));
    LT_CHECK(lt_compare(a, e, 0.005, 0, &r)); /* now 101 vs 100 differs too */
    assert_int_equal(r.ndiff, 4);
    /* atol boundary: |a - b| <= atol + rtol * |b| is inclusive */
    lt_tensor *x = mk(LT_F64, 1, (int64_t[]){2}, (double[]){1.5, 10});
    lt_tensor *y = mk(LT_F64, 1, (int64_t[]){2}, (double[]){1.0, 10});
    LT_CHECK(lt_compare(x, y, 0, 0.5, &r));
    assert_true(r.equal);
    assert_true(r.max_abs_diff == 0.5);
    LT_CHECK(lt_compare(x, y, 0, 0.4999, &r));
    assert_int_equal(r.ndiff, 1);
    assert_int_equal(r.first_idx[0], 0);
    /* strided actual: the first difference in row-major order of the view */
    lt_tensor *m = mk_arange(LT_F32, 2, (int64_t[]){3, 3}), *mt, *want;
    LT_CHECK(lt_transpose(m, 0, 1, &mt));
    want = mk(LT_F32, 2, (int64_t[]){3, 3}, (double[]){0, 3, 6, 1, 4, 7, 2, 5, 0});
    LT_CHECK(lt_compare(mt, want, 0, 0, &r));
    assert_int_equal(r.ndiff, 1);
    assert_int_equal(r.first_flat, 8);
    assert_int_equal(r.first_idx[0], 2);
    assert_int_equal(r.first_idx[1], 2);
    assert_true(r.actual == 8 && r.expected == 0);
    /* errors */
    LT_EXPECT_STATUS(lt_compare(m, x, 0, 0, &r), LT_SHAPE);
    expect_msg_contains("(3, 3)");
    expect_msg_contains("(2)");
    LT_EXPECT_STATUS(lt_compare(x, y, -1, 0, &r), LT_INVALID);
    LT_EXPECT_STATUS(lt_compare(x, y, 0, 0, NULL), LT_INVALID);
    /* empty tensors compare equal */
    lt_tensor *z1, *z2;
    LT_CHECK(lt_tensor_new(LT_F32, 2, (int64_t[]){0, 3}, &z1));
    LT_CHECK(lt_tensor_new(LT_I64, 2, (int64_t[]){0, 3}, &z2));
    LT_CHECK(lt_compare(z1, z2, 0, 0, &r));
    assert_true(r.equal);
    lt_tensor_free(z1);
    lt_tensor_free(z2);
    lt_tensor_free(want);
    lt_tensor_free(mt);
    lt_tensor_free(m);
    lt_tensor_free(x);
    lt_tensor_free(y);
    lt_tensor_free(a);
    lt_tensor_free(e);
}

/* The error as data: each part a field, set, kept or reset as
 * kernels/status.h says, and the text exactly what the parts spell (the
 * expected texts written out by hand). */
static void test_structured_errors(void **state) {
    (void)state;
    int is_while = -1;
    assert_int_equal(lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET, "not supported yet: %s", "x"),
                     LT_UNSUPPORTED);
    assert_int_equal(lt_errinfo()->code, LT_ERR_NOT_YET);
    assert_int_equal(lt_errinfo()->status, LT_UNSUPPORTED);
    lt__err_ctx(LT_UNSUPPORTED, "matmul"); /* context keeps the sub-code and the problem */
    assert_string_equal(lt_errmsg(), "matmul: not supported yet: x");
    assert_int_equal(lt_errinfo()->code, LT_ERR_NOT_YET);
    assert_string_equal(lt_errinfo()->problem, "not supported yet: x");
    assert_int_equal(lt_errinfo()->ncontext, 1);
    lt__err_in(LT_INVALID, "from_local", ": rank %d has no shard", 3);
    assert_string_equal(lt_errmsg(), "from_local: rank 3 has no shard");
    assert_string_equal(lt_errinfo()->subject, "from_local");
    assert_string_equal(lt_errinfo()->problem, ": rank 3 has no shard");
    assert_int_equal(lt_errinfo()->ncontext, 0);           /* a new failure resets every part */
    assert_int_equal(lt_errinfo()->code, LT_ERR_NONE);
    assert_string_equal(lt_error_lead(lt_errinfo(), &is_while), "from_local");
    assert_false(is_while);
    lt__err_while(LT_INVALID, "planning %s", "w");
    assert_string_equal(lt_errmsg(), "while planning w: from_local: rank 3 has no shard");
    assert_string_equal(lt_error_lead(lt_errinfo(), &is_while), "");   /* opens with the "while" */
    assert_true(is_while);
    assert_string_equal(lt_errinfo()->subject, "from_local");          /* the problem's own */
    lt__err_ctx_in(LT_INVALID, "distribute", " of '%s'", "x");
    assert_string_equal(lt_error_lead(lt_errinfo(), &is_while), "distribute");
    assert_false(is_while);
    assert_string_equal(lt_errmsg(),
                        "distribute of 'x': while planning w: from_local: rank 3 has no shard");
    lt_error copy = *lt_errinfo();                         /* a failure handed on as data */
    lt__err_at(LT_NOMEM, "f.yaml", 3, 5, "out of memory");
    lt__err_ctx(LT_NOMEM, "loading");
    assert_string_equal(lt_errmsg(), "loading: f.yaml:3:5: out of memory");
    assert_string_equal(lt_errinfo()->position.file, "f.yaml");
    assert_int_equal(lt_errinfo()->position.line, 3);
    assert_int_equal(lt_errinfo()->position.col, 5);
    assert_string_equal(lt_errinfo()->problem, "out of memory");
    char small[20];
    size_t len = lt_error_format(lt_errinfo(), small, sizeof small);
    assert_int_equal(len, strlen("loading: f.yaml:3:5: out of memory"));
    assert_string_equal(small, "loading ...  memory");   /* its first and last 7 bytes */
    lt__err_restore(LT_INVALID, NULL, &copy);
    assert_string_equal(lt_errmsg(),
                        "distribute of 'x': while planning w: from_local: rank 3 has no shard");
    assert_int_equal(lt_errinfo()->status, LT_INVALID);
    assert_int_equal(lt_errinfo()->position.line, 0);
    lt__err(LT_INVALID, "bad"); /* more contexts than slots: the text stays whole */
    for (int i = 0; i < LT_ERR_CONTEXT_MAX + 2; i++) lt__err_ctx(LT_INVALID, "c%d", i);
    assert_string_equal(lt_errmsg(), "c5: c4: c3: c2: c1: c0: bad");
    assert_int_equal(lt_errinfo()->ncontext, LT_ERR_CONTEXT_MAX);
    lt__err_clear();
    assert_string_equal(lt_errmsg(), "");
    assert_int_equal(lt_errinfo()->status, LT_OK);
    assert_int_equal(lt_errinfo()->position.line, 0);
    assert_string_equal(lt_errcode_name(LT_ERR_WOULD_HANG), "would hang");
}

static int cache_refs[8];
static void cref(void *v) { cache_refs[(int *)v - cache_refs]++; }
static void crelease(void *v) { cache_refs[(int *)v - cache_refs]--; }

/* The cache holds one reference per entry, hands out new ones, refuses a
 * second put of the same key, and empties itself when full. */
static void test_cache(void **state) {
    (void)state;
    static lt__cache c = LT__CACHE_INIT(cref, crelease, 4);
    static lt__cache_key k;
    for (int i = 0; i < 8; i++) cache_refs[i] = 1;   /* the caller's own reference */
    k.n = 0;
    lt__key_put(&k, 7);
    lt__key_put(&k, 9);
    uint64_t h = lt__cache_key_hash(&k);
    assert_null(lt__cache_get(&c, &k, h, 1));
    lt__cache_put(&c, &k, h, &cache_refs[0]);
    lt__cache_put(&c, &k, h, &cache_refs[1]);            /* present: skipped */
    assert_int_equal(cache_refs[0], 2);
    assert_int_equal(cache_refs[1], 1);
    assert_ptr_equal(lt__cache_get(&c, &k, h, 1), &cache_refs[0]);
    assert_int_equal(cache_refs[0], 3);
    k.w[1] = 10;                                            /* another key, maybe the same hash */
    assert_null(lt__cache_get(&c, &k, lt__cache_key_hash(&k), 0));
    size_t hits, misses, n;
    lt__cache_stats(&c, &hits, &misses, &n);
    assert_int_equal(hits, 1);
    assert_int_equal(misses, 1);                            /* the second miss was not counted */
    assert_int_equal(n, 1);
    for (int i = 1; i < 8; i++) {                           /* 4 entries at most */
        k.w[1] = 100 + (uint64_t)i;
        lt__cache_put(&c, &k, lt__cache_key_hash(&k), &cache_refs[i]);
    }
    lt__cache_stats(&c, NULL, NULL, &n);
    assert_true(n <= 4);
    lt__cache_clear(&c);
    for (int i = 0; i < 8; i++) assert_int_equal(cache_refs[i], i == 0 ? 2 : 1);
    k.n = LT__CACHE_KEY_MAX + 1;                            /* too long: never stored */
    lt__cache_put(&c, &k, 1, &cache_refs[0]);
    lt__cache_stats(&c, NULL, NULL, &n);
    assert_int_equal(n, 0);
}

/* A thread's memo: a hit through it takes a reference without the table,
 * a different key is not served from it, a clear drops it (the value goes
 * back to the caller's reference alone), and a thread that exits drops
 * its memos. */
static void *memo_thread(void *arg) {
    lt__cache *c = arg;
    static _Thread_local lt__cache_memo m;
    static _Thread_local lt__cache_key k;
    uint64_t h;
    k.n = 0;
    lt__key_put(&k, 1);
    void *v = lt__cache_lookup(c, &m, &k, &h);   /* a hit, memoised */
    if (v) crelease(v);
    return v;
}

static int memo_filled, memo_release;
static void *memo_thread_wait(void *arg) {
    (void)memo_thread(arg);
    __atomic_store_n(&memo_filled, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&memo_release, __ATOMIC_ACQUIRE)) sched_yield();
    return NULL;
}

static void test_cache_memo(void **state) {
    (void)state;
    static lt__cache c = LT__CACHE_INIT(cref, crelease, 16);
    static _Thread_local lt__cache_memo m;
    static lt__cache_key k;
    for (int i = 0; i < 8; i++) cache_refs[i] = 1;
    uint64_t h = 0;
    k.n = 0;
    lt__key_put(&k, 1);
    assert_null(lt__cache_lookup(&c, &m, &k, &h));          /* miss: h is the hash */
    assert_int_equal(h, lt__cache_key_hash(&k));
    lt__cache_put(&c, &k, h, &cache_refs[0]);               /* refs: caller + table */
    assert_ptr_equal(lt__cache_lookup(&c, &m, &k, &h), &cache_refs[0]);
    assert_int_equal(cache_refs[0], 4);                     /* + memo + returned */
    crelease(&cache_refs[0]);
    assert_ptr_equal(lt__cache_lookup(&c, &m, &k, &h), &cache_refs[0]); /* through the memo */
    assert_int_equal(cache_refs[0], 4);
    crelease(&cache_refs[0]);
    size_t hits, misses;
    lt__cache_stats(&c, &hits, &misses, NULL);
    assert_int_equal(hits, 2);
    assert_int_equal(misses, 1);
    k.w[0] = 2;                                             /* same length, other key */
    assert_null(lt__cache_lookup(&c, &m, &k, &h));
    pthread_t t; /* another thread memoises, then exits */
    assert_int_equal(pthread_create(&t, NULL, memo_thread, &c), 0);
    void *got;
    assert_int_equal(pthread_join(t, &got), 0);
    assert_ptr_equal(got, &cache_refs[0]);
    assert_int_equal(cache_refs[0], 3);                     /* its memo's reference is gone */
    /* a thread that is alive at a fork: the child (which has no such
     * thread) drops its memo's reference */
    pthread_t t2;
    assert_int_equal(pthread_create(&t2, NULL, memo_thread_wait, &c), 0);
    while (!__atomic_load_n(&memo_filled, __ATOMIC_ACQUIRE)) sched_yield();
    assert_int_equal(cache_refs[0], 4); /* table + this memo + caller + t2's memo */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(cache_refs[0] == 3 ? 0 : 1);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    __atomic_store_n(&memo_release, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(t2, NULL), 0);
    assert_int_equal(cache_refs[0], 3);                     /* t2 exited: its memo is gone */
    lt__cache_clear(&c);                                    /* drops the table's and this memo's */
    assert_int_equal(cache_refs[0], 1);
    k.w[0] = 1;
    assert_null(lt__cache_lookup(&c, &m, &k, &h));          /* cleared: not served from the memo */
}

int main(void) {
    lt_test_backend_from_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_and_queries),
        cmocka_unit_test(test_structured_errors),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_cache_memo),
        cmocka_unit_test(test_shape_errors),
        cmocka_unit_test(test_from_doubles_every_dtype),
        cmocka_unit_test(test_placeholder),
        cmocka_unit_test(test_refcount_view_outlives_base),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_fill_and_arange),
        cmocka_unit_test(test_cast_rounding_by_hand),
        cmocka_unit_test(test_cast_rounding_brute_force),
        cmocka_unit_test(test_cast_round_trip_every_pair),
        cmocka_unit_test(test_copy_strided_brute_force),
        cmocka_unit_test(test_copy_transposed_tiles),
        cmocka_unit_test(test_copy_overlap_and_errors),
        cmocka_unit_test(test_clone_contiguous),
        cmocka_unit_test(test_accumulate_every_op_and_dtype),
        cmocka_unit_test(test_accumulate_special),
        cmocka_unit_test(test_scale),
        cmocka_unit_test(test_compare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
