/* test/test_align_random.c — brute force of the alignment check of
 * elementwise binary ops with a from_local operand (docs/SEMANTICS.md
 * §11.6), written apart from the code under test.
 *
 * Random small cases: a 1-D mesh of 2..4 ranks, a 1-D tensor; one operand
 * distributed from a random full tensor, the other built by from_local from
 * random per-rank values, each with a placement drawn from {R, S(0),
 * P(sum), P(avg), P(max), P(min)} (from_local S(0) shards take the chunk
 * sizes half the time, random sizes otherwise), in either input order; the
 * op one of add, sub, mul, maximum, minimum. The operands' full values come
 * from this file's own reduction of the per-rank values (never the
 * library's full_tensor), and so does the result's, from its shards. The
 * one case that must fail is the bug class itself: both operands S(0) and
 * the from_local sizes not the chunk sizes (PyTorch would combine the
 * shards rank-locally); it must be LT_INVALID with LT_ERR_MISALIGNED.
 * Every other case must succeed with op(full a, full b) elementwise.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test/testutil.h"

enum { MAXW = 4, MAXN = 12, NPL = 6, TRIALS = 3000 };
enum { PL_R, PL_S, PL_PSUM, PL_PAVG, PL_PMAX, PL_PMIN };
static const char *const pl_names[NPL] = {"R", "S(0)", "P(sum)", "P(avg)", "P(max)", "P(min)"};
static const lt_op_kind ops[] = {LT_OP_ADD, LT_OP_SUB, LT_OP_MUL, LT_OP_MAXIMUM, LT_OP_MINIMUM};

static uint64_t rng = 0x9e3779b97f4a7c15u;
static int rnd(int n) { /* uniform in [0, n): xorshift64* */
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (int)((rng * 2685821657736338717u >> 33) % (uint64_t)n);
}

static double apply(lt_op_kind op, double a, double b) {
    switch (op) {
    case LT_OP_ADD: return a + b;
    case LT_OP_SUB: return a - b;
    case LT_OP_MUL: return a * b;
    case LT_OP_MAXIMUM: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

/* torch.chunk sizes of n over W (docs/SEMANTICS.md §2) into sz[W]. */
static void chunk_sizes(int n, int W, int *sz) {
    int c = (n + W - 1) / W;
    for (int r = 0; r < W; r++) {
        int left = n - r * c;
        sz[r] = left < 0 ? 0 : left < c ? left : c;
    }
}

/* full[n] from per-rank values v[W][MAXN] of sizes sz[W] under placement
 * kind pk on a 1-D mesh: R rank 0's, S(0) the shards in rank order, P the
 * reduction over ranks. */
static void reduce_ranks(int pk, int W, int n, const int *sz, double v[][MAXN], double *full) {
    int at = 0;
    for (int r = 0; r < W && pk == PL_S; r++)
        for (int i = 0; i < sz[r]; i++) full[at++] = v[r][i];
    for (int i = 0; i < n && pk != PL_S; i++) {
        double acc = v[0][i];
        for (int r = 1; r < W && pk != PL_R; r++) {
            double x = v[r][i];
            acc = pk == PL_PMAX   ? (x > acc ? x : acc)
                  : pk == PL_PMIN ? (x < acc ? x : acc)
                                  : acc + x;
        }
        full[i] = pk == PL_PAVG ? acc / W : acc;
    }
}

/* The placement kind of y's only mesh dim, as this file names it (S(0) with
 * any rule counts as S). */
static int kind_of(const lt_placement *p) {
    if (p->kind == LT_PL_REPLICATE) return PL_R;
    if (p->kind == LT_PL_SHARD && p->dim == 0) return PL_S;
    if (p->kind == LT_PL_PARTIAL && p->op == LT_REDOP_SUM) return PL_PSUM;
    if (p->kind == LT_PL_PARTIAL && p->op == LT_REDOP_AVG) return PL_PAVG;
    if (p->kind == LT_PL_PARTIAL && p->op == LT_REDOP_MAX) return PL_PMAX;
    if (p->kind == LT_PL_PARTIAL && p->op == LT_REDOP_MIN) return PL_PMIN;
    return -1;
}

/* y's full value (n elements) from its shards, reduced here. Borrows y. */
static void full_of(const lt_dtensor *y, int W, int n, double *full, const char *what) {
    double v[MAXW][MAXN];
    int sz[MAXW];
    int pk = kind_of(&y->placements[0]);
    if (pk < 0) fail_msg("%s: unexpected output placement", what);
    for (int r = 0; r < W; r++) {
        const lt_tensor *t = lt_to_local(y, r);
        assert_non_null(t);
        sz[r] = (int)t->shape[0];
        if (sz[r] > MAXN) fail_msg("%s: rank %d holds %d elements", what, r, sz[r]);
        for (int i = 0; i < sz[r]; i++) v[r][i] = lt_get_flat(t, i);
    }
    reduce_ranks(pk, W, n, sz, v, full);
}

/* One case; returns 1 when it was the misaligned class (expected error). */
static int one_case(int trial) {
    int W = 2 + rnd(3), pf = rnd(NPL), pd = rnd(NPL), first_is_fl = rnd(2);
    lt_op_kind op = ops[rnd(5)];
    int sz[MAXW], csz[MAXW], n = 0, uneven = 0;
    int random_sizes = pf == PL_S && rnd(2);
    while (random_sizes && n == 0) /* random shard sizes, n their sum */
        for (int r = 0; r < W; r++) sz[r] = rnd(4), n += sz[r];
    if (!random_sizes) n = 1 + rnd(8);
    chunk_sizes(n, W, csz);
    for (int r = 0; r < W; r++) {
        if (!random_sizes) sz[r] = pf == PL_S ? csz[r] : n;
        uneven |= sz[r] != csz[r] && pf == PL_S;
    }
    /* the from_local operand: per-rank values (R: the same replica everywhere) */
    double fv[MAXW][MAXN], ffull[MAXN], dfull[MAXN], want[MAXN], got[MAXN];
    for (int r = 0; r < W; r++)
        for (int i = 0; i < sz[r]; i++)
            fv[r][i] = pf == PL_R && r ? fv[0][i] : (double)(rnd(9) - 4);
    reduce_ranks(pf, W, n, sz, fv, ffull);
    for (int i = 0; i < n; i++) dfull[i] = (double)(rnd(9) - 4);
    char what[160];
    snprintf(what, sizeof what,
             "trial %d: %s of from_local %s%s and distributed %s (%s first) on %d ranks, n %d",
             trial, lt_op_name(op), pl_names[pf], uneven ? " (uneven)" : "", pl_names[pd],
             first_is_fl ? "from_local" : "distributed", W, n);
    lt_mesh m;
    int shape = W;
    LT_CHECK(lt_mesh_init(&m, 1, &shape, NULL));
    lt_tensor *sh[MAXW], *full = NULL;
    for (int r = 0; r < W; r++) {
        int64_t s = sz[r];
        LT_CHECK(lt_tensor_from_doubles(LT_F64, 1, &s, fv[r], s, &sh[r]));
    }
    int64_t n64 = n;
    LT_CHECK(lt_tensor_from_doubles(LT_F64, 1, &n64, dfull, n, &full));
    lt_placement plf, pld;
    LT_CHECK(lt_placement_parse(pl_names[pf], &plf));
    LT_CHECK(lt_placement_parse(pl_names[pd], &pld));
    lt_dtensor *f = NULL, *d = NULL, *y = NULL;
    LT_CHECK(lt_from_local(&m, sh, &plf, 1, 0, &f));
    LT_CHECK(lt_distribute(&m, full, &pld, 1, &d));
    const lt_dtensor *in[2] = {first_is_fl ? f : d, first_is_fl ? d : f};
    lt_status st = lt_op(op, in, 2, NULL, NULL, &y, 1, NULL);
    int misaligned = uneven && pd == PL_S;
    if (misaligned) {
        if (st != LT_INVALID || lt_errinfo()->code != LT_ERR_MISALIGNED)
            fail_msg("%s: %s, wanted the misaligned error: %s", what, lt_status_name(st),
                     lt_errmsg());
    } else {
        if (st != LT_OK) fail_msg("%s: %s: %s", what, lt_status_name(st), lt_errmsg());
        full_of(y, W, n, got, what);
        for (int i = 0; i < n; i++) {
            want[i] = first_is_fl ? apply(op, ffull[i], dfull[i]) : apply(op, dfull[i], ffull[i]);
            if (fabs(got[i] - want[i]) > 1e-9 * (1 + fabs(want[i])))
                fail_msg("%s: element %d is %g, wanted %g", what, i, got[i], want[i]);
        }
    }
    lt_dtensor_free(y);
    lt_dtensor_free(f);
    lt_dtensor_free(d);
    lt_tensor_free(full);
    for (int r = 0; r < W; r++) lt_tensor_free(sh[r]);
    return misaligned;
}

static void test_random_cases(void **state) {
    (void)state;
    int misaligned = 0;
    for (int t = 0; t < TRIALS; t++) misaligned += one_case(t);
    /* both classes were drawn */
    assert_true(misaligned > 0);
    assert_true(misaligned < TRIALS);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_cases)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
