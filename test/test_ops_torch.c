/* test/test_ops_torch.c — ops whose expected results are taken from what
 * PyTorch documents, not from our rules or our reference:
 *   - torch.squeeze: with no dim every size-1 dim goes; with dim (or a tuple
 *     of dims) only the named dims of size 1 go, a named dim of another size
 *     stays; the element order is unchanged (it is a view). Sizes are the
 *     GLOBAL ones: a shard whose slice of a size-3 dim holds 1 row keeps it;
 *     a sharded dim of global size 1 is replicated before it goes (rank 1
 *     of S(d) over 2 holds none of it).
 *   - 0-d tensors: dims wrap over a 0-d tensor as over a 1-d one, so dim 0
 *     and -1 are accepted by sum/mean/max/min, squeeze and transpose, and
 *     each gives the tensor itself (keepdim or not); dim 1 is out of range,
 *     and dims (0, -1) name the same dim twice.
 *   - operands whose layouts cannot be combined directly (a non-chunk split
 *     on mesh dim 1 that would have to nest under another operand's S of
 *     the same dim on mesh dim 0) still give the plain elementwise, matmul
 *     and cat results.
 * Expected values come from loops written here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/ops.h"
#include "test/testutil.h"

static lt_mesh mesh(const char *s) {
    lt_mesh m;
    LT_CHECK(lt_mesh_parse(s, &m));
    return m;
}

/* A tensor whose element i is scale * i + shift. */
static lt_tensor *ramp(int nd, const int64_t *shape, double scale, double shift) {
    lt_tensor *t = NULL;
    LT_CHECK(lt_tensor_new(LT_F32, nd, shape, &t));
    int64_t n = lt_numel(t);
    for (int64_t i = 0; i < n; i++) lt_set_flat(t, i, scale * (double)i + shift);
    return t;
}

/* Runs op with the reference check on (an extra check: the expected values
 * below are computed here). */
static lt_dtensor *run(lt_op_kind op, const lt_dtensor *const *in, int nin, const lt_op_args *a) {
    lt_op_opts o;
    memset(&o, 0, sizeof o);
    o.check_reference = 1;
    lt_dtensor *y = NULL;
    lt_status st = lt_op(op, in, nin, a, &o, &y, 1, NULL);
    if (st) fail_msg("%s: %s: %s", lt_op_name(op), lt_status_name(st), lt_errmsg());
    return y;
}

static void expect_pl(const lt_dtensor *y, const char *want, const char *what) {
    char buf[256];
    lt_placements_format(y->placements, lt_dtensor_mesh(y)->ndim, buf, sizeof buf);
    if (strcmp(buf, want)) fail_msg("%s: placements %s, wanted %s", what, buf, want);
}

/* y's global shape is shape[nd] and its element i is want[i] (or i when want is NULL). */
static void expect_full(const lt_dtensor *y, int nd, const int64_t *shape, const double *want,
                        const char *what) {
    if (y->ndim != nd) fail_msg("%s: %d dims, wanted %d", what, y->ndim, nd);
    for (int d = 0; d < nd; d++)
        if (y->shape[d] != shape[d])
            fail_msg("%s: dim %d has size %lld, wanted %lld", what, d, (long long)y->shape[d],
                     (long long)shape[d]);
    lt_tensor *f = NULL;
    LT_CHECK(lt_full_tensor_direct(y, &f));
    int64_t n = lt_numel(f);
    for (int64_t i = 0; i < n; i++) {
        double w = want ? want[i] : (double)i, g = lt_get_flat(f, i);
        if (!(fabs(g - w) <= 1e-4 * (1 + fabs(w))))
            fail_msg("%s: element %lld is %g, wanted %g", what, (long long)i, g, w);
    }
    lt_tensor_free(f);
}

/* Rank r's shard has shape shapes[r * nd ...]. */
static void expect_local(const lt_dtensor *y, int nd, const int64_t *shapes, const char *what) {
    const lt_mesh *m = lt_dtensor_mesh(y);
    for (int r = 0; r < m->world; r++) {
        const lt_tensor *t = y->local->shards[r];
        if (t->ndim != nd)
            fail_msg("%s: rank %d's shard has %d dims, wanted %d", what, r, t->ndim, nd);
        for (int d = 0; d < nd; d++)
            if (t->shape[d] != shapes[r * nd + d])
                fail_msg("%s: rank %d's dim %d is %lld, wanted %lld", what, r, d,
                         (long long)t->shape[d], (long long)shapes[r * nd + d]);
    }
}

static lt_op_args squeeze_args(int dim_set, int dim, int ndims, const int *dims) {
    lt_op_args a;
    memset(&a, 0, sizeof a);
    a.dim_set = dim_set, a.dim = dim, a.ndims = ndims;
    for (int i = 0; i < ndims; i++) a.dims[i] = dims[i];
    return a;
}

/* ---- squeeze -------------------------------------------------------------------------------- */

static void test_squeeze_every_size1_dim(void **state) {
    (void)state;
    lt_mesh m2 = mesh("2"), m4 = mesh("4");
    lt_op_args all = squeeze_args(0, 0, 0, NULL);
    /* (2,1,3,1) S(0) over 2 -> (2,3), still S(0): one row of 3 per rank */
    int64_t s1[4] = {2, 1, 3, 1}, w1[2] = {2, 3}, l1[4] = {1, 3, 1, 3};
    lt_tensor *x1 = ramp(4, s1, 1, 0);
    lt_dtensor *d1 = lt_test_distribute(&m2, x1, "S(0)");
    lt_dtensor *y = run(LT_OP_SQUEEZE, (const lt_dtensor *const *)&d1, 1, &all);
    expect_full(y, 2, w1, NULL, "(2,1,3,1).squeeze()");
    expect_pl(y, "[S(0)]", "(2,1,3,1) S(0) squeeze()");
    expect_local(y, 2, l1, "(2,1,3,1) S(0) squeeze()");
    lt_dtensor_free(y);
    /* (1,4,1) S(2) over 2 -> (4): dim 2 (size 1) was sharded, so it is replicated first */
    int64_t s2[3] = {1, 4, 1}, w2[1] = {4}, l2[2] = {4, 4};
    lt_tensor *x2 = ramp(3, s2, 1, 0);
    lt_dtensor *d2 = lt_test_distribute(&m2, x2, "S(2)");
    y = run(LT_OP_SQUEEZE, (const lt_dtensor *const *)&d2, 1, &all);
    expect_full(y, 1, w2, NULL, "(1,4,1).squeeze()");
    expect_pl(y, "[R]", "(1,4,1) S(2) squeeze()");
    expect_local(y, 1, l2, "(1,4,1) S(2) squeeze()");
    lt_dtensor_free(y);
    /* uneven: (3,1,5) S(0) over 4 holds 1,1,1,0 rows; the global dim 0 has 3, so it stays */
    int64_t s3[3] = {3, 1, 5}, w3[2] = {3, 5}, l3[8] = {1, 5, 1, 5, 1, 5, 0, 5};
    lt_tensor *x3 = ramp(3, s3, 1, 0);
    lt_dtensor *d3 = lt_test_distribute(&m4, x3, "S(0)");
    y = run(LT_OP_SQUEEZE, (const lt_dtensor *const *)&d3, 1, &all);
    expect_full(y, 2, w3, NULL, "(3,1,5).squeeze()");
    expect_pl(y, "[S(0)]", "(3,1,5) S(0) over 4 squeeze()");
    expect_local(y, 2, l3, "(3,1,5) S(0) over 4 squeeze()");
    lt_dtensor_free(y);
    /* (5,1) S(0) over 4: rows 2,2,1,0 -> (5) with 2,2,1,0 elements */
    int64_t s4[2] = {5, 1}, w4[1] = {5}, l4[4] = {2, 2, 1, 0};
    lt_tensor *x4 = ramp(2, s4, 1, 0);
    lt_dtensor *d4 = lt_test_distribute(&m4, x4, "S(0)");
    y = run(LT_OP_SQUEEZE, (const lt_dtensor *const *)&d4, 1, &all);
    expect_full(y, 1, w4, NULL, "(5,1).squeeze()");
    expect_pl(y, "[S(0)]", "(5,1) S(0) over 4 squeeze()");
    expect_local(y, 1, l4, "(5,1) S(0) over 4 squeeze()");
    lt_dtensor_free(y);
    /* (1,1) S(0) over 2: every dim goes -> a 0-d tensor, replicated */
    int64_t s5[2] = {1, 1};
    lt_tensor *x5 = ramp(2, s5, 1, 7);
    lt_dtensor *d5 = lt_test_distribute(&m2, x5, "S(0)");
    double seven = 7;
    y = run(LT_OP_SQUEEZE, (const lt_dtensor *const *)&d5, 1, &all);
    expect_full(y, 0, NULL, &seven, "(1,1).squeeze()");
    expect_pl(y, "[R]", "(1,1) S(0) squeeze()");
    lt_dtensor_free(y);
    lt_dtensor_free(d1), lt_dtensor_free(d2), lt_dtensor_free(d3), lt_dtensor_free(d4),
        lt_dtensor_free(d5);
    lt_tensor_free(x1), lt_tensor_free(x2), lt_tensor_free(x3), lt_tensor_free(x4),
        lt_tensor_free(x5);
    lt_op_cache_clear();
}

/* The example of torch.squeeze's documentation: x of shape (2,1,2,1,2). */
static void test_squeeze_documented_example(void **state) {
    (void)state;
    lt_mesh m22 = mesh("2x2");
    int64_t s[5] = {2, 1, 2, 1, 2};
    lt_tensor *x = ramp(5, s, 1, 0);
    static const char *const layouts[] = {"S(0),S(4)", "S(2),R", "R,S(1)", "S(3),S(0)"};
    int d1[1] = {1}, d123[3] = {1, 2, 3}, dm[2] = {-2, -4};
    struct {
        lt_op_args a;
        int nd;
        int64_t want[5];
        const char *what;
    } cases[] = {
        {squeeze_args(0, 0, 0, NULL), 3, {2, 2, 2}, "squeeze(x)"},
        {squeeze_args(1, 0, 0, NULL), 5, {2, 1, 2, 1, 2}, "squeeze(x, 0)"},
        {squeeze_args(1, 1, 0, NULL), 4, {2, 2, 1, 2}, "squeeze(x, 1)"},
        {squeeze_args(0, 0, 3, d123), 3, {2, 2, 2}, "squeeze(x, (1, 2, 3))"},
        {squeeze_args(0, 0, 1, d1), 4, {2, 2, 1, 2}, "squeeze(x, (1,))"},
        {squeeze_args(1, -2, 0, NULL), 4, {2, 1, 2, 2}, "squeeze(x, -2)"},
        {squeeze_args(0, 0, 2, dm), 3, {2, 2, 2}, "squeeze(x, (-2, -4))"},
    };
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
        lt_dtensor *d = lt_test_distribute(&m22, x, layouts[l]);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            char what[128];
            snprintf(what, sizeof what, "%s with [%s]", cases[c].what, layouts[l]);
            lt_dtensor *y = run(LT_OP_SQUEEZE, (const lt_dtensor *const *)&d, 1, &cases[c].a);
            expect_full(y, cases[c].nd, cases[c].want, NULL, what);
            lt_dtensor_free(y);
        }
        lt_dtensor_free(d);
    }
    /* a dim named twice, dim and dims together, a dim out of range */
    lt_dtensor *d = lt_test_distribute(&m22, x, "R,R"), *y = NULL;
    int twice[2] = {1, -4};
    lt_op_args a = squeeze_args(0, 0, 2, twice);
    LT_EXPECT_STATUS(lt_op(LT_OP_SQUEEZE, (const lt_dtensor *const *)&d, 1, &a, NULL, &y, 1, NULL),
                     LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "listed twice"));
    a = squeeze_args(1, 1, 1, d1);
    LT_EXPECT_STATUS(lt_op(LT_OP_SQUEEZE, (const lt_dtensor *const *)&d, 1, &a, NULL, &y, 1, NULL),
                     LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "not both"));
    a = squeeze_args(1, 5, 0, NULL);
    LT_EXPECT_STATUS(lt_op(LT_OP_SQUEEZE, (const lt_dtensor *const *)&d, 1, &a, NULL, &y, 1, NULL),
                     LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "dim 5 is out of range"));
    lt_dtensor_free(d);
    lt_tensor_free(x);
    lt_op_cache_clear();
}

/* ---- 0-d tensors ---------------------------------------------------------------------------- */

static void test_zero_d_dims(void **state) {
    (void)state;
    lt_mesh m2 = mesh("2");
    lt_tensor *x = ramp(0, NULL, 0, 2.5); /* the 0-d tensor 2.5 */
    double v = 2.5;
    static const lt_op_kind reds[] = {LT_OP_SUM, LT_OP_MEAN, LT_OP_AMAX, LT_OP_AMIN};
    static const char *const pls[] = {"R", "P(sum)", "P(max)"};
    for (size_t p = 0; p < sizeof pls / sizeof pls[0]; p++) {
        lt_dtensor *d = lt_test_distribute(&m2, x, pls[p]);
        for (size_t r = 0; r < sizeof reds / sizeof reds[0]; r++)
            for (int dim = -1; dim <= 0; dim++)
                for (int keep = 0; keep <= 1; keep++) {
                    lt_op_args a;
                    memset(&a, 0, sizeof a);
                    a.ndims = 1, a.dims[0] = dim, a.keepdim = keep;
                    char what[96];
                    snprintf(what, sizeof what, "%s(0-d [%s], dim=%d, keepdim=%d)",
                             lt_op_name(reds[r]), pls[p], dim, keep);
                    lt_dtensor *y = run(reds[r], (const lt_dtensor *const *)&d, 1, &a);
                    expect_full(y, 0, NULL, &v, what);
                    lt_dtensor_free(y);
                }
        lt_op_args sq[3] = {squeeze_args(0, 0, 0, NULL), squeeze_args(1, 0, 0, NULL),
                            squeeze_args(1, -1, 0, NULL)};
        for (int i = 0; i < 3; i++) {
            lt_dtensor *y = run(LT_OP_SQUEEZE, (const lt_dtensor *const *)&d, 1, &sq[i]);
            expect_full(y, 0, NULL, &v, "squeeze of a 0-d tensor");
            lt_dtensor_free(y);
        }
        for (int d0 = -1; d0 <= 0; d0++)
            for (int d1 = -1; d1 <= 0; d1++) {
                lt_op_args a;
                memset(&a, 0, sizeof a);
                a.dim = d0, a.dim2 = d1;
                lt_dtensor *y = run(LT_OP_TRANSPOSE, (const lt_dtensor *const *)&d, 1, &a);
                expect_full(y, 0, NULL, &v, "transpose of a 0-d tensor");
                lt_dtensor_free(y);
            }
        lt_dtensor_free(d);
    }
    /* out of range stays an error: dim 1, -2; and (0, -1) is one dim twice */
    lt_dtensor *d = lt_test_distribute(&m2, x, "R"), *y = NULL;
    lt_op_args a;
    memset(&a, 0, sizeof a);
    a.ndims = 1, a.dims[0] = 1;
    LT_EXPECT_STATUS(lt_op(LT_OP_SUM, (const lt_dtensor *const *)&d, 1, &a, NULL, &y, 1, NULL),
                     LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "0-d"));
    a.ndims = 2, a.dims[0] = 0, a.dims[1] = -1;
    LT_EXPECT_STATUS(lt_op(LT_OP_MEAN, (const lt_dtensor *const *)&d, 1, &a, NULL, &y, 1, NULL),
                     LT_INVALID);
    memset(&a, 0, sizeof a);
    a.dim = 0, a.dim2 = -2;
    LT_EXPECT_STATUS(
        lt_op(LT_OP_TRANSPOSE, (const lt_dtensor *const *)&d, 1, &a, NULL, &y, 1, NULL),
        LT_INVALID);
    a = squeeze_args(1, 1, 0, NULL);
    LT_EXPECT_STATUS(lt_op(LT_OP_SQUEEZE, (const lt_dtensor *const *)&d, 1, &a, NULL, &y, 1, NULL),
                     LT_INVALID);
    lt_dtensor_free(d);
    lt_tensor_free(x);
    lt_op_cache_clear();
}

/* ---- layouts that cannot nest --------------------------------------------------------------- */

/* (3,4) [R, S(0)] on 2x2 reshaped to (12) is [R, S(0,[8,4])] (rows 0-1 and
 * row 2 of mesh dim 1); an operand [S(0), R] would make a rule ask for
 * S(0,[8,4]) inside pieces of 6. */
static lt_dtensor *nested_12(const lt_mesh *m22, lt_tensor **full, int nd, const int64_t *shape) {
    int64_t s34[2] = {3, 4};
    *full = ramp(2, s34, 1, 0);
    lt_dtensor *x = lt_test_distribute(m22, *full, "R,S(0)"), *r = NULL;
    LT_CHECK(lt_dtensor_reshape(x, nd, shape, &r));
    expect_pl(r, "[R, S(0,[8,4])]", "(3,4) [R, S(0)] reshaped");
    lt_dtensor_free(x);
    return r;
}

/* test_nested_split_operands: the six binary ops of r = x (x[i] = i, [R,
 * S(0,[8,4])]) and yd (y[i] = 10 i + 1, [S(0), R]), both ways round, against
 * the values computed here. Frees what it makes. */
static void expect_binary_ops(const lt_dtensor *r, const lt_dtensor *yd, const int64_t *s12) {
    static const lt_op_kind bins[] = {LT_OP_ADD, LT_OP_SUB,     LT_OP_MUL,
                                      LT_OP_DIV, LT_OP_MAXIMUM, LT_OP_MINIMUM};
    for (size_t b = 0; b < sizeof bins / sizeof bins[0]; b++)
        for (int swap = 0; swap <= 1; swap++) {
            const lt_dtensor *in[2] = {swap ? yd : r, swap ? r : yd};
            double want[12];
            for (int i = 0; i < 12; i++) {
                double p = swap ? 10.0 * i + 1 : i, q = swap ? i : 10.0 * i + 1;
                switch (bins[b]) {
                case LT_OP_ADD: want[i] = p + q; break;
                case LT_OP_SUB: want[i] = p - q; break;
                case LT_OP_MUL: want[i] = p * q; break;
                case LT_OP_DIV: want[i] = p / q; break;
                case LT_OP_MAXIMUM: want[i] = p > q ? p : q; break;
                default: want[i] = p < q ? p : q; break;
                }
            }
            if (bins[b] == LT_OP_DIV && swap) continue; /* x has a 0 */
            char what[64];
            snprintf(what, sizeof what, "%s of [R, S(0,[8,4])] and [S(0), R]%s",
                     lt_op_name(bins[b]), swap ? " (swapped)" : "");
            lt_dtensor *y = run(bins[b], in, 2, NULL);
            expect_full(y, 1, s12, want, what);
            lt_dtensor_free(y);
        }
}

static void test_nested_split_operands(void **state) {
    (void)state;
    lt_mesh m22 = mesh("2x2");
    int64_t s12[1] = {12}, s121[2] = {12, 1}, w122[2] = {12, 2};
    lt_tensor *xf = NULL, *yf = ramp(1, s12, 10, 1); /* y[i] = 10 i + 1 */
    lt_dtensor *r = nested_12(&m22, &xf, 1, s12), *yd = lt_test_distribute(&m22, yf, "S(0),R");
    expect_binary_ops(r, yd, s12);
    /* matmul (12) @ (12, 2): out[j] = sum_k x[k] w[k][j], w[k][j] = 2k + j + 1 */
    int64_t sw[2] = {12, 2}, s2[1] = {2};
    lt_tensor *wf = ramp(2, sw, 1, 1);
    lt_dtensor *wd = lt_test_distribute(&m22, wf, "S(0),R");
    const lt_dtensor *mm_in[2] = {r, wd};
    double mwant[2] = {0, 0};
    for (int k = 0; k < 12; k++)
        for (int j = 0; j < 2; j++) mwant[j] += k * (2.0 * k + j + 1);
    lt_dtensor *y = run(LT_OP_MATMUL, mm_in, 2, NULL);
    expect_full(y, 1, s2, mwant, "matmul of [R, S(0,[8,4])] (12) and [S(0), R] (12, 2)");
    lt_dtensor_free(y);
    /* mm (2, 12) @ (12, 2): a (2,3,4) [R, S(1)] reshaped to (2, 12) has the nested split on dim 1
     */
    int64_t s234[3] = {2, 3, 4}, s2x12[2] = {2, 12}, s22[2] = {2, 2};
    lt_tensor *af = ramp(3, s234, 1, 0);
    lt_dtensor *ad = lt_test_distribute(&m22, af, "R,S(1)"), *a2 = NULL;
    LT_CHECK(lt_dtensor_reshape(ad, 2, s2x12, &a2));
    expect_pl(a2, "[R, S(1,[8,4])]", "(2,3,4) [R, S(1)] reshaped");
    const lt_dtensor *mm2[2] = {a2, wd};
    double w2[4] = {0, 0, 0, 0};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 12; k++) w2[i * 2 + j] += (12.0 * i + k) * (2.0 * k + j + 1);
    y = run(LT_OP_MM, mm2, 2, NULL);
    expect_full(y, 2, s22, w2, "mm of [R, S(1,[8,4])] (2, 12) and [S(0), R] (12, 2)");
    lt_dtensor_free(y);
    /* addmm: bias (2) + the same product */
    lt_tensor *bf = ramp(1, s2, 1, 100);
    lt_dtensor *bd = lt_test_distribute(&m22, bf, "R,R");
    const lt_dtensor *am[3] = {bd, a2, wd};
    for (int i = 0; i < 4; i++) w2[i] += 100 + i % 2;
    y = run(LT_OP_ADDMM, am, 3, NULL);
    expect_full(y, 2, s22, w2, "addmm with a [R, S(1,[8,4])] operand");
    lt_dtensor_free(y);
    /* cat along dim 1 of (12,1) [R, S(0,[8,4])] and (12,1) [S(0), R]: column 0 = x, column 1 = y */
    lt_tensor *xf2 = NULL, *yf2 = ramp(2, s121, 10, 1);
    lt_dtensor *r2 = nested_12(&m22, &xf2, 2, s121), *y2 = lt_test_distribute(&m22, yf2, "S(0),R");
    const lt_dtensor *cin[2] = {r2, y2};
    lt_op_args ca;
    memset(&ca, 0, sizeof ca);
    ca.dim = 1;
    double cw[24];
    for (int i = 0; i < 12; i++) cw[2 * i] = i, cw[2 * i + 1] = 10.0 * i + 1;
    y = run(LT_OP_CAT, cin, 2, &ca);
    expect_full(y, 2, w122, cw, "cat of [R, S(0,[8,4])] and [S(0), R] along dim 1");
    lt_dtensor_free(y);
    lt_dtensor_free(r), lt_dtensor_free(yd), lt_dtensor_free(wd), lt_dtensor_free(ad),
        lt_dtensor_free(a2);
    lt_dtensor_free(bd), lt_dtensor_free(r2), lt_dtensor_free(y2);
    lt_tensor_free(xf), lt_tensor_free(yf), lt_tensor_free(wf), lt_tensor_free(af),
        lt_tensor_free(bf);
    lt_tensor_free(xf2), lt_tensor_free(yf2);
    lt_op_cache_clear();
}

int main(void) {
    lt_test_backend_from_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_squeeze_every_size1_dim),
        cmocka_unit_test(test_squeeze_documented_example),
        cmocka_unit_test(test_zero_d_dims),
        cmocka_unit_test(test_nested_split_operands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
