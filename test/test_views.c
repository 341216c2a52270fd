/* test/test_views.c — unit tests for kernels/ views, split/cat and index
 * sets (gather/scatter).
 *
 * Expected values are hand-computed (in the comments) or come from a
 * brute-force loop written here from the semantics, never from the fast
 * paths under test.
 */
#include "test/kernels_testutil.h"

/* ---- views ---------------------------------------------------------------------------------- */

static void test_views_by_hand(void **state) {
    (void)state;
    lt_tensor *x = mk_arange(LT_F64, 3, (int64_t[]){2, 3, 4}), *v, *w;
    LT_CHECK(lt_narrow(x, 2, 1, 2, &v)); /* x[:, :, 1:3] */
    lt_test_expect_values(v, 3, (int64_t[]){2, 3, 2},
                          (double[]){1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22}, "narrow");
    double got[12], want[] = {1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22};
    lt_to_doubles(v, got);
    for (int i = 0; i < 12; i++) assert_true(got[i] == want[i]);
    LT_CHECK(lt_select(v, 1, 2, &w)); /* x[:, 2, 1:3] */
    lt_test_expect_values(w, 2, (int64_t[]){2, 2}, (double[]){9, 10, 21, 22}, "select");
    lt_tensor_free(w);
    lt_tensor_free(v);
    LT_CHECK(lt_permute(x, (int[]){2, 0, 1}, &v)); /* v[k, i, j] = x[i, j, k] */
    assert_int_equal(v->shape[0], 4);
    int64_t ix[3] = {3, 1, 2};
    assert_true(lt_get(v, ix) == 1 * 12 + 2 * 4 + 3);
    LT_CHECK(lt_transpose(v, 0, 2, &w)); /* w[j, i, k] = x[i, j, k] */
    int64_t jx[3] = {2, 1, 3};
    assert_true(lt_get(w, jx) == 23);
    lt_tensor_free(w);
    lt_tensor_free(v);
    LT_CHECK(lt_unsqueeze(x, 1, &v));
    assert_int_equal(v->ndim, 4);
    assert_int_equal(v->shape[1], 1);
    assert_int_equal(v->strides[1], 12);
    LT_CHECK(lt_squeeze(v, 1, &w));
    assert_true(lt_same_shape(w, x));
    lt_test_expect_values(w, 3, x->shape,
                          (double[]){0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                     12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23},
                          "squeeze");
    lt_tensor_free(w);
    LT_EXPECT_STATUS(lt_squeeze(x, 1, &w), LT_INVALID);
    expect_msg_contains("size 3");
    assert_null(w);
    lt_tensor_free(v);
    LT_CHECK(lt_unsqueeze(x, 3, &v));
    assert_int_equal(v->strides[3], 1);
    lt_tensor_free(v);
    /* errors */
    LT_EXPECT_STATUS(lt_narrow(x, 2, 3, 2, &v), LT_INVALID);
    expect_msg_contains("dim 2 of size 4");
    LT_EXPECT_STATUS(lt_narrow(x, 3, 0, 1, &v), LT_INVALID);
    LT_EXPECT_STATUS(lt_select(x, 0, 2, &v), LT_INVALID);
    LT_EXPECT_STATUS(lt_permute(x, (int[]){0, 0, 1}, &v), LT_INVALID);
    LT_EXPECT_STATUS(lt_transpose(x, 0, 5, &v), LT_INVALID);
    LT_EXPECT_STATUS(lt_unsqueeze(x, 4, &v), LT_INVALID);
    assert_null(v);
    lt_tensor_free(x);
}

static void test_views_zero_size(void **state) {
    (void)state;
    lt_tensor *x, *v, *outs[4];
    LT_CHECK(lt_tensor_new(LT_F32, 2, (int64_t[]){0, 3}, &x));
    LT_CHECK(lt_transpose(x, 0, 1, &v));
    assert_int_equal(v->shape[0], 3);
    assert_int_equal(v->shape[1], 0);
    lt_tensor_free(v);
    LT_CHECK(lt_narrow(x, 1, 1, 2, &v));
    assert_int_equal(lt_numel(v), 0);
    lt_tensor_free(v);
    LT_CHECK(lt_narrow(x, 0, 0, 0, &v));
    lt_tensor_free(v);
    LT_CHECK(lt_reshape(x, 2, (int64_t[]){3, 0}, &v));
    assert_int_equal(v->shape[0], 3);
    assert_int_equal(v->strides[0], 1); /* contiguous strides, max(size, 1) */
    lt_tensor_free(v);
    LT_CHECK(lt_reshape(x, 2, (int64_t[]){-1, 5}, &v));
    assert_int_equal(v->shape[0], 0);
    lt_tensor_free(v);
    LT_EXPECT_STATUS(lt_reshape(x, 2, (int64_t[]){-1, 0}, &v), LT_INVALID);
    /* chunk of 0 elements into 4: four empty pieces of shape (0, 3) */
    LT_CHECK(lt_chunk(x, 0, 4, outs));
    for (int j = 0; j < 4; j++) {
        assert_int_equal(outs[j]->shape[0], 0);
        assert_int_equal(outs[j]->shape[1], 3);
        lt_tensor_free(outs[j]);
    }
    LT_CHECK(lt_select(x, 1, 2, &v)); /* shape (0) */
    assert_int_equal(v->ndim, 1);
    assert_int_equal(v->shape[0], 0);
    lt_tensor_free(v);
    LT_EXPECT_STATUS(lt_select(x, 0, 0, &v), LT_INVALID);
    lt_tensor_free(x);
    /* a 0-d tensor has dim 0 as torch sees it: transpose(0, 0) and
     * squeeze(0) give the tensor itself (a view); dim 1 is out of range */
    LT_CHECK(lt_tensor_new(LT_F32, 0, NULL, &x));
    lt_set_flat(x, 0, 4.5);
    LT_CHECK(lt_transpose(x, 0, 0, &v));
    assert_int_equal(v->ndim, 0);
    lt_set_flat(v, 0, 5.5); /* shares storage */
    assert_true(lt_get_flat(x, 0) == 5.5);
    lt_tensor_free(v);
    LT_CHECK(lt_squeeze(x, 0, &v));
    assert_int_equal(v->ndim, 0);
    assert_true(lt_get_flat(v, 0) == 5.5);
    lt_tensor_free(v);
    LT_EXPECT_STATUS(lt_transpose(x, 0, 1, &v), LT_INVALID);
    LT_EXPECT_STATUS(lt_squeeze(x, 1, &v), LT_INVALID);
    assert_null(v);
    lt_tensor_free(x);
}

static void test_chunk_and_split(void **state) {
    (void)state;
    lt_tensor *x = mk_arange(LT_F32, 2, (int64_t[]){5, 2}), *outs[6];
    LT_CHECK(lt_chunk(x, 0, 4, outs)); /* 5/4 -> 2, 2, 1, 0 */
    int64_t want[] = {2, 2, 1, 0};
    double first[] = {0, 4, 8};
    for (int j = 0; j < 4; j++) {
        assert_int_equal(outs[j]->shape[0], want[j]);
        assert_int_equal(outs[j]->shape[1], 2);
        if (want[j]) assert_true(lt_get_flat(outs[j], 0) == first[j]);
        assert_ptr_equal(outs[j]->storage, x->storage);
    }
    for (int j = 0; j < 4; j++) lt_tensor_free(outs[j]);
    lt_split_rule r = lt_split_chunk();
    r.kind = LT_SPLIT_LAST; /* 5/4 -> 1, 1, 1, 2 */
    LT_CHECK(lt_split_rule_views(x, 0, &r, 4, outs));
    assert_int_equal(outs[3]->shape[0], 2);
    assert_true(lt_get_flat(outs[3], 0) == 6);
    for (int j = 0; j < 4; j++) lt_tensor_free(outs[j]);
    LT_CHECK(lt_split_explicit((int64_t[]){0, 4, 1}, 3, &r));
    LT_CHECK(lt_split_rule_views(x, 0, &r, 3, outs));
    assert_int_equal(outs[0]->shape[0], 0);
    lt_test_expect_values(outs[2], 2, (int64_t[]){1, 2}, (double[]){8, 9}, "explicit piece 2");
    for (int j = 0; j < 3; j++) lt_tensor_free(outs[j]);
    LT_CHECK(lt_split_explicit((int64_t[]){0, 4, 2}, 3, &r)); /* sums to 6 */
    outs[0] = outs[1] = outs[2] = (lt_tensor *)x;
    LT_EXPECT_STATUS(lt_split_rule_views(x, 0, &r, 3, outs), LT_INVALID);
    assert_null(outs[0]);
    assert_null(outs[2]);
    LT_CHECK(lt_split_rule_views(x, 1, NULL, 3, outs)); /* chunk 2/3 -> 1, 1, 0 */
    assert_int_equal(outs[2]->shape[1], 0);
    lt_test_expect_values(outs[1], 2, (int64_t[]){5, 1}, (double[]){1, 3, 5, 7, 9}, "column 1");
    for (int j = 0; j < 3; j++) lt_tensor_free(outs[j]);
    LT_CHECK(lt_split_sizes_views(x, 0, 2, (int64_t[]){3, 2}, outs));
    lt_test_expect_values(outs[1], 2, (int64_t[]){2, 2}, (double[]){6, 7, 8, 9}, "sizes piece 1");
    lt_tensor_free(outs[0]);
    lt_tensor_free(outs[1]);
    LT_EXPECT_STATUS(lt_split_sizes_views(x, 0, 2, (int64_t[]){3, 3}, outs), LT_INVALID);
    expect_msg_contains("sum to 6");
    assert_null(outs[0]);
    LT_EXPECT_STATUS(lt_chunk(x, 0, 0, outs), LT_INVALID);
    lt_tensor_free(x);
}

static void test_reshape(void **state) {
    (void)state;
    lt_tensor *x = mk_arange(LT_F32, 2, (int64_t[]){4, 6}), *v, *t, *n;
    LT_CHECK(lt_reshape(x, 3, (int64_t[]){2, -1, 3}, &v)); /* contiguous: a view */
    assert_ptr_equal(v->storage, x->storage);
    assert_int_equal(v->shape[1], 4);
    int64_t ix[] = {1, 2, 1};
    assert_true(lt_get(v, ix) == 12 + 6 + 1);
    lt_tensor_free(v);
    /* x[:, 0:3] has strides (6, 1): (4, 3) -> (2, 2, 3) is a view, (12) is not */
    LT_CHECK(lt_narrow(x, 1, 0, 3, &n));
    LT_CHECK(lt_reshape(n, 3, (int64_t[]){2, 2, 3}, &v));
    assert_ptr_equal(v->storage, x->storage);
    assert_int_equal(v->strides[0], 12);
    assert_int_equal(v->strides[1], 6);
    lt_tensor_free(v);
    LT_CHECK(lt_reshape(n, 1, (int64_t[]){12}, &v));
    assert_ptr_not_equal(v->storage, x->storage);
    lt_test_expect_values(v, 1, (int64_t[]){12},
                          (double[]){0, 1, 2, 6, 7, 8, 12, 13, 14, 18, 19, 20}, "reshape copy");
    lt_tensor_free(v);
    /* transposed: splitting a dim is a view, flattening is a copy */
    LT_CHECK(lt_transpose(x, 0, 1, &t)); /* (6, 4), strides (1, 6) */
    LT_CHECK(lt_reshape(t, 3, (int64_t[]){2, 3, 4}, &v));
    assert_ptr_equal(v->storage, x->storage);
    assert_int_equal(v->strides[0], 3);
    assert_int_equal(v->strides[1], 1);
    assert_int_equal(v->strides[2], 6);
    lt_tensor_free(v);
    LT_CHECK(lt_reshape(t, 2, (int64_t[]){4, 6}, &v));
    assert_ptr_not_equal(v->storage, x->storage);
    assert_true(lt_get(v, (int64_t[]){0, 1}) == 6); /* t's row-major order: t[0,1] = x[1,0] */
    lt_tensor_free(v);
    LT_CHECK(lt_reshape(t, 4, (int64_t[]){1, 6, 1, 4}, &v)); /* size-1 dims: view */
    assert_ptr_equal(v->storage, x->storage);
    lt_tensor_free(v);
    /* errors */
    LT_EXPECT_STATUS(lt_reshape(x, 2, (int64_t[]){5, 5}, &v), LT_SHAPE);
    expect_msg_contains("(4, 6)");
    expect_msg_contains("(5, 5)");
    LT_EXPECT_STATUS(lt_reshape(x, 2, (int64_t[]){-1, 5}, &v), LT_SHAPE);
    LT_EXPECT_STATUS(lt_reshape(x, 2, (int64_t[]){-1, -1}, &v), LT_INVALID);
    LT_EXPECT_STATUS(lt_reshape(x, 2, (int64_t[]){-2, 12}, &v), LT_INVALID);
    LT_EXPECT_STATUS(lt_reshape(x, 3, (int64_t[]){INT64_MAX, 4, 2}, &v), LT_SHAPE);
    assert_null(v);
    /* 0-d <-> (1, 1) */
    lt_tensor *s0, *s11, *back;
    LT_CHECK(lt_tensor_new(LT_F32, 0, NULL, &s0));
    LT_CHECK(lt_reshape(s0, 2, (int64_t[]){1, 1}, &s11));
    LT_CHECK(lt_reshape(s11, 0, NULL, &back));
    assert_int_equal(back->ndim, 0);
    assert_ptr_equal(back->storage, s0->storage);
    lt_tensor_free(back);
    lt_tensor_free(s11);
    lt_tensor_free(s0);
    lt_tensor_free(t);
    lt_tensor_free(n);
    lt_tensor_free(x);
}

/* Random strided tensors into random shapes of the same numel: the row-major
 * values never change, and a contiguous source always gives a view. */
static void test_reshape_random(void **state) {
    (void)state;
    for (int iter = 0; iter < 500; iter++) {
        int ndim = 1 + (int)rnd_below(4);
        int64_t shape[LT_MAX_DIMS], ns[LT_MAX_DIMS];
        for (int d = 0; d < ndim; d++) shape[d] = 1 + rnd_below(4);
        lt_tensor *base, *src = random_view(LT_F32, ndim, shape, &base), *r;
        /* a new shape: split numel into prime factors, deal them into dims */
        int64_t n = lt_numel(src), rest = n;
        int nd = 1 + (int)rnd_below(5);
        for (int d = 0; d < nd; d++) ns[d] = 1;
        for (int64_t f = 2; rest > 1;) {
            if (rest % f) { f++; continue; }
            ns[rnd_below(nd)] *= f;
            rest /= f;
        }
        if (iter % 3 == 0) ns[rnd_below(nd)] = -1;
        LT_CHECK(lt_reshape(src, nd, ns, &r));
        assert_int_equal(lt_numel(r), n);
        double *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
        lt_to_doubles(src, a);
        lt_to_doubles(r, b);
        for (int64_t i = 0; i < n; i++)
            if (a[i] != b[i]) fail_msg("reshape iter %d: element %lld changed", iter, (long long)i);
        if (lt_is_contiguous(src)) assert_ptr_equal(r->storage, src->storage);
        free(a);
        free(b);
        lt_tensor_free(r);
        lt_tensor_free(src);
        lt_tensor_free(base);
    }
}

/* ---- cat, index_select ------------------------------------------------------------------- */

static void test_cat(void **state) {
    (void)state;
    lt_tensor *a = mk_arange(LT_F32, 2, (int64_t[]){2, 3}), *e, *b, *o, *bt;
    LT_CHECK(lt_tensor_new(LT_F32, 2, (int64_t[]){0, 3}, &e));
    b = mk(LT_F32, 2, (int64_t[]){1, 3}, (double[]){10, 11, 12});
    const lt_tensor *in0[] = {e, a, e, b, e};
    LT_CHECK(lt_cat(in0, 5, 0, &o));
    lt_test_expect_values(o, 2, (int64_t[]){3, 3}, (double[]){0, 1, 2, 3, 4, 5, 10, 11, 12},
                          "cat 0");
    lt_tensor_free(o);
    const lt_tensor *only_empty[] = {e, e};
    LT_CHECK(lt_cat(only_empty, 2, 0, &o));
    assert_int_equal(o->shape[0], 0);
    lt_tensor_free(o);
    /* along dim 1, with a strided input: a and b^T-shaped pieces */
    lt_tensor *c = mk(LT_F32, 2, (int64_t[]){3, 2}, (double[]){20, 21, 22, 23, 24, 25}), *e2;
    LT_CHECK(lt_transpose(c, 0, 1, &bt)); /* (2, 3): 20 22 24 / 21 23 25 */
    LT_CHECK(lt_tensor_new(LT_F32, 2, (int64_t[]){2, 0}, &e2));
    const lt_tensor *in1[] = {a, e2, bt};
    LT_CHECK(lt_cat(in1, 3, 1, &o));
    lt_test_expect_values(o, 2, (int64_t[]){2, 6},
                          (double[]){0, 1, 2, 20, 22, 24, 3, 4, 5, 21, 23, 25}, "cat 1");
    lt_tensor_free(o);
    /* errors */
    const lt_tensor *bad[] = {a, b};
    LT_EXPECT_STATUS(lt_cat(bad, 2, 1, &o), LT_SHAPE);
    expect_msg_contains("input 1");
    assert_null(o);
    lt_tensor *d = mk(LT_F64, 2, (int64_t[]){1, 3}, (double[]){1, 2, 3});
    const lt_tensor *bad2[] = {a, d};
    LT_EXPECT_STATUS(lt_cat(bad2, 2, 0, &o), LT_DTYPE);
    LT_EXPECT_STATUS(lt_cat(bad2, 2, 2, &o), LT_INVALID);
    LT_EXPECT_STATUS(lt_cat(bad2, 0, 0, &o), LT_INVALID);
    lt_tensor_free(d);
    lt_tensor_free(e2);
    lt_tensor_free(c);
    lt_tensor_free(bt);
    lt_tensor_free(a);
    lt_tensor_free(b);
    lt_tensor_free(e);
}

static void test_index_select(void **state) {
    (void)state;
    lt_tensor *x = mk_arange(LT_I64, 2, (int64_t[]){3, 4}), *o;
    LT_CHECK(lt_index_select(x, 1, (int64_t[]){3, 0, 0, 1, 2}, 5, &o));
    lt_test_expect_values(o, 2, (int64_t[]){3, 5},
                          (double[]){3, 0, 0, 1, 2, 7, 4, 4, 5, 6, 11, 8, 8, 9, 10}, "cols");
    lt_tensor_free(o);
    LT_CHECK(lt_index_select(x, 0, (int64_t[]){2, 1}, 2, &o));
    lt_test_expect_values(o, 2, (int64_t[]){2, 4}, (double[]){8, 9, 10, 11, 4, 5, 6, 7}, "rows");
    lt_tensor_free(o);
    LT_CHECK(lt_index_select(x, 0, NULL, 0, &o));
    assert_int_equal(o->shape[0], 0);
    assert_int_equal(o->shape[1], 4);
    lt_tensor_free(o);
    LT_EXPECT_STATUS(lt_index_select(x, 1, (int64_t[]){1, 4}, 2, &o), LT_INVALID);
    expect_msg_contains("index 4 at position 1 of dim 1");
    assert_null(o);
    lt_tensor_free(x);
}

/* ---- gather / scatter index sets vs brute force ---------------------------------------------- */

/* A random index list for a dim of size n: runs, repeats, any order. */
static int64_t random_list(int64_t n, int64_t *out, int64_t cap) {
    int64_t len = 0;
    int mode = (int)rnd_below(3);
    if (mode == 0) { /* a few runs */
        while (len < cap && rnd_below(4)) {
            int64_t s = rnd_below(n), l = 1 + rnd_below(n - s);
            for (int64_t j = 0; j < l && len < cap; j++) out[len++] = s + j;
        }
    } else if (mode == 1) { /* random points */
        int64_t l = rnd_below(cap + 1);
        for (int64_t j = 0; j < l; j++) out[len++] = rnd_below(n);
    } else { /* a permutation-like set without repeats */
        for (int64_t j = 0; j < n && len < cap; j++)
            if (rnd_below(2)) out[len++] = j;
    }
    return len;
}

static void test_gather_scatter_brute_force(void **state) {
    (void)state;
    for (int iter = 0; iter < 400; iter++) {
        int ndim = 1 + (int)rnd_below(4);
        int64_t shape[LT_MAX_DIMS], lists[LT_MAX_DIMS][16], lens[LT_MAX_DIMS], olen[LT_MAX_DIMS];
        int64_t *idx[LT_MAX_DIMS];
        for (int d = 0; d < ndim; d++) {
            shape[d] = 1 + rnd_below(6);
            if (rnd_below(3) == 0) {
                idx[d] = NULL;
                lens[d] = -7; /* ignored */
                olen[d] = shape[d];
            } else {
                idx[d] = lists[d];
                lens[d] = olen[d] = random_list(shape[d], lists[d], 16);
            }
        }
        lt_dtype dt = iter % 3 ? LT_F64 : LT_I32;
        lt_tensor *base, *src = iter % 2 ? random_view(dt, ndim, shape, &base) : NULL, *o;
        if (!src) {
            base = mk_arange(dt, ndim, shape);
            LT_CHECK(lt_tensor_view(base, &src));
        }
        LT_CHECK(lt_gather_index_sets(src, idx, lens, &o));
        assert_true(lt_is_contiguous(o));
        int64_t oi[LT_MAX_DIMS] = {0}, si[LT_MAX_DIMS];
        int64_t on = 1;
        for (int d = 0; d < ndim; d++) {
            assert_int_equal(o->shape[d], olen[d]);
            on *= olen[d];
        }
        if (on > 0) do {
            for (int d = 0; d < ndim; d++) si[d] = idx[d] ? idx[d][oi[d]] : oi[d];
            if (lt_get(o, oi) != lt_get(src, si)) fail_msg("gather iter %d: mismatch", iter);
        } while (next_index(ndim, olen, oi));

        /* scatter o (made distinct) back into a copy of src, for each mode */
        lt_tensor *vals;
        LT_CHECK(lt_clone(o, &vals));
        for (int64_t i = 0; i < on; i++) lt_set_flat(vals, i, (double)(i % 5) - 1.5 * (i % 3));
        for (int mode = -1; mode < LT_REDOP_COUNT; mode++) {
            if (dt == LT_I32 && mode == LT_REDOP_PRODUCT) continue; /* may wrap */
            lt_tensor *dst, *ref;
            LT_CHECK(lt_clone(src, &dst));
            LT_CHECK(lt_clone(src, &ref));
            LT_CHECK(lt_scatter_index_sets(dst, idx, vals, mode >= 0,
                                           mode >= 0 ? (lt_redop)mode : LT_REDOP_SUM));
            memset(oi, 0, sizeof oi);
            if (on > 0) do { /* brute force, row-major order: later duplicates win / combine */
                for (int d = 0; d < ndim; d++) si[d] = idx[d] ? idx[d][oi[d]] : oi[d];
                double s = lt_get(vals, oi), d0 = lt_get(ref, si), r;
                switch (mode) {
                case -1: r = s; break;
                case LT_REDOP_MAX: r = s > d0 ? s : d0; break;
                case LT_REDOP_MIN: r = s < d0 ? s : d0; break;
                case LT_REDOP_PRODUCT: r = d0 * s; break;
                default: r = d0 + s; break;
                }
                lt_set(ref, si, r);
            } while (next_index(ndim, olen, oi));
            lt_compare_result cr;
            LT_CHECK(lt_compare(dst, ref, 0, 0, &cr));
            if (!cr.equal)
                fail_msg("scatter iter %d mode %d: %lld differ, first at %lld (%g vs %g)", iter,
                         mode, (long long)cr.ndiff, (long long)cr.first_flat, cr.actual,
                         cr.expected);
            lt_tensor_free(dst);
            lt_tensor_free(ref);
        }
        lt_tensor_free(vals);
        lt_tensor_free(o);
        lt_tensor_free(src);
        lt_tensor_free(base);
    }
}

static void test_gather_scatter_errors(void **state) {
    (void)state;
    lt_tensor *x = mk_arange(LT_F32, 2, (int64_t[]){3, 4}), *o, *v;
    int64_t l0[] = {0, 3};
    int64_t *idx[] = {l0, NULL};
    LT_EXPECT_STATUS(lt_gather_index_sets(x, idx, (int64_t[]){2, 0}, &o), LT_INVALID);
    expect_msg_contains("index 3 at position 1 of dim 0 is out of range for size 3");
    assert_null(o);
    LT_EXPECT_STATUS(lt_gather_index_sets(x, idx, NULL, &o), LT_INVALID);
    LT_CHECK(lt_gather_index_sets(x, NULL, NULL, &o)); /* everything: a plain copy */
    assert_ptr_not_equal(o->storage, x->storage);
    lt_test_expect_values(o, 2, (int64_t[]){3, 4}, (double[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
                          "all");
    v = mk(LT_F32, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6});
    l0[1] = 2;
    LT_EXPECT_STATUS(lt_scatter_index_sets(x, idx, v, 0, LT_REDOP_SUM), LT_SHAPE);
    expect_msg_contains("(2, 3)");
    lt_tensor *w = mk(LT_F64, 2, (int64_t[]){2, 4}, (double[]){1, 2, 3, 4, 5, 6, 7, 8});
    LT_EXPECT_STATUS(lt_scatter_index_sets(x, idx, w, 0, LT_REDOP_SUM), LT_DTYPE);
    lt_tensor *w32;
    LT_CHECK(lt_cast(w, LT_F32, &w32));
    LT_CHECK(lt_scatter_index_sets(x, idx, w32, 1, LT_REDOP_AVG)); /* avg accumulates as sum */
    lt_test_expect_values(x, 2, (int64_t[]){3, 4},
                          (double[]){1, 3, 5, 7, 4, 5, 6, 7, 13, 15, 17, 19}, "scatter avg");
    /* 0-d: one element each way */
    lt_tensor *s0 = mk(LT_I64, 0, NULL, (double[]){41}), *g, *one;
    LT_CHECK(lt_gather_index_sets(s0, NULL, NULL, &g));
    assert_int_equal(g->ndim, 0);
    assert_true(lt_get(g, NULL) == 41);
    one = mk(LT_I64, 0, NULL, (double[]){1});
    LT_CHECK(lt_scatter_index_sets(s0, NULL, one, 1, LT_REDOP_SUM));
    assert_true(lt_get(s0, NULL) == 42);
    lt_tensor_free(one);
    lt_tensor_free(g);
    lt_tensor_free(s0);
    lt_tensor_free(w32);
    lt_tensor_free(w);
    lt_tensor_free(v);
    lt_tensor_free(o);
    lt_tensor_free(x);
}

/* ---- accumulate, scale --------------------------------------------------------------------- */


int main(void) {
    lt_test_backend_from_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_views_by_hand),
        cmocka_unit_test(test_views_zero_size),
        cmocka_unit_test(test_chunk_and_split),
        cmocka_unit_test(test_reshape),
        cmocka_unit_test(test_reshape_random),
        cmocka_unit_test(test_cat),
        cmocka_unit_test(test_index_select),
        cmocka_unit_test(test_gather_scatter_brute_force),
        cmocka_unit_test(test_gather_scatter_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
