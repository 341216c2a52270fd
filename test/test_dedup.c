/* test/test_dedup.c — replica dedup in op dispatch (localtensor/ops/ops.c).
 *
 * A rank whose input shards are another rank's very views (replicas share
 * storage) takes a view of that rank's results instead of running the kernel
 * again. What must hold: the results are bit-identical to computing on every
 * rank (dedup on vs off, lt__op_set_dedup), the twins share one buffer and
 * the other ranks do not, a write to one replica (copy-on-write, also from a
 * per-rank program) never changes another, a kernel with a per-rank
 * parameter (dropout's mask) is never shared, and every allocation of the
 * new path (the replica table of a world over 64 ranks, the twins' views)
 * can fail cleanly. Expected values are computed by hand from arange.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "localtensor/collectives_sim/program.h"
#include "localtensor/localtensor.h"
#include "localtensor/ops.h"
#include "localtensor/ops/ops_impl.h"
#include "test/testutil.h"

static int shares(const lt_dtensor *d, int a, int b) {
    return d->local->shards[a]->storage == d->local->shards[b]->storage;
}

/* 1 when a and b hold the same bytes on every rank (both contiguous). */
static int same_bytes(const lt_dtensor *a, const lt_dtensor *b) {
    int W = a->local->mesh.world;
    for (int r = 0; r < W; r++) {
        const lt_tensor *x = a->local->shards[r], *y = b->local->shards[r];
        if (!lt_same_shape(x, y) || x->dtype != y->dtype) return 0;
        if (memcmp(lt_data(x), lt_data(y), lt_nbytes(x)) != 0) return 0;
    }
    return 1;
}

static lt_dtensor *random_dt(const lt_mesh *m, const char *pls, int64_t r, int64_t c,
                             uint64_t seed) {
    lt_placement pl[LT_MESH_MAX_DIMS];
    int np;
    LT_CHECK(lt_placements_parse(pls, pl, LT_MESH_MAX_DIMS, &np));
    lt_init init = {LT_INIT_RANDOM, seed};
    lt_dtensor *d = NULL;
    LT_CHECK(lt_dtensor_new(m, LT_F32, 2, (int64_t[]){r, c}, pl, np, &init, &d));
    return d;
}

/* mul of x [R, S(1)] by itself on 2x4: ranks (0, j) and (1, j) share their
 * result's buffer; ranks of another column do not; values are i * i. */
static void test_twins_share_result(void **state) {
    (void)state;
    lt__op_set_dedup(1);
    lt_mesh m;
    int64_t shape[2] = {2, 8};
    lt_dtensor *x = lt_test_arange("2x4", "R,S(1)", 2, shape, &m), *y = NULL;
    LT_CHECK(lt_dtensor_binary(LT_BINARY_MUL, x, x, &y));
    for (int j = 0; j < 4; j++) {
        assert_true(shares(y, j, 4 + j));
        for (int k = 0; k < 4; k++)
            if (k != j) assert_false(shares(y, j, k));
    }
    /* rank 5 = (1, 1) holds columns 2..3: elements 2, 3, 10, 11 squared */
    lt_test_expect_values(y->local->shards[5], 2, (int64_t[]){2, 2},
                          (double[]){4, 9, 100, 121}, "rank 5");
    lt_dtensor_free(y);
    lt_dtensor_free(x);
    lt__op_set_dedup(-1);
}

/* The same chain of ops, dedup on and off: byte-equal on every rank. */
static lt_dtensor *chain(const lt_mesh *m) {
    lt_dtensor *x = random_dt(m, "R,R", 16, 32, 3), *w1 = random_dt(m, "R,S(1)", 32, 64, 5);
    lt_dtensor *w2 = random_dt(m, "R,S(0)", 64, 24, 7), *h = NULL, *a = NULL, *p = NULL;
    lt_dtensor *s = NULL, *t = NULL, *y = NULL;
    LT_CHECK(lt_dtensor_matmul(x, w1, &h));          /* [R, S(1)] */
    LT_CHECK(lt_dtensor_unary(LT_UNARY_GELU, h, &a));
    LT_CHECK(lt_dtensor_matmul(a, w2, &p));          /* [R, P]: dp replicas' products */
    LT_CHECK(lt_dtensor_binary(LT_BINARY_ADD, p, p, &s));
    LT_CHECK(lt_dtensor_transpose(s, 0, 1, &t));
    lt_placement rr[2] = {lt_replicate(), lt_replicate()};
    lt_redistribute_opts o = {0};
    LT_CHECK(lt_redistribute(t, rr, 2, &o, &y, NULL));
    lt_dtensor *d[] = {x, w1, w2, h, a, p, s, t};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) lt_dtensor_free(d[i]);
    return y;
}

static void test_bit_identical_on_off(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x4", &m));
    lt__op_set_dedup(0);
    lt_dtensor *off = chain(&m);
    lt__op_set_dedup(1);
    lt_dtensor *on = chain(&m);
    lt__op_set_dedup(-1);
    assert_true(same_bytes(on, off));
    lt_dtensor_free(on);
    lt_dtensor_free(off);
}

/* Dedup off: no op result shares a buffer between ranks. */
static void test_off_shares_nothing(void **state) {
    (void)state;
    lt__op_set_dedup(0);
    lt_mesh m;
    int64_t shape[2] = {2, 8};
    lt_dtensor *x = lt_test_arange("2x4", "R,S(1)", 2, shape, &m), *y = NULL;
    LT_CHECK(lt_dtensor_unary(LT_UNARY_NEG, x, &y));
    for (int r = 1; r < 8; r++) assert_false(shares(y, 0, r));
    lt_dtensor_free(y);
    lt_dtensor_free(x);
    lt__op_set_dedup(-1);
}

/* Writing rank 6's replica of a shared result changes no other rank. */
static void test_write_one_replica(void **state) {
    (void)state;
    lt__op_set_dedup(1);
    lt_mesh m;
    int64_t shape[2] = {2, 4};
    lt_dtensor *x = lt_test_arange("2x4", "R,R", 2, shape, &m), *y = NULL;
    LT_CHECK(lt_dtensor_binary(LT_BINARY_ADD, x, x, &y));   /* 2 * i on all 8 ranks */
    for (int r = 1; r < 8; r++) assert_true(shares(y, 0, r));
    LT_CHECK(lt_tensor_make_writable(y->local->shards[6]));
    lt_set_flat(y->local->shards[6], 0, -1.0);
    const double want[8] = {0, 2, 4, 6, 8, 10, 12, 14};
    for (int r = 0; r < 8; r++)
        if (r != 6) lt_test_expect_values(y->local->shards[r], 2, shape, want, "untouched rank");
    assert_true(lt_get_flat(y->local->shards[6], 0) == -1.0);
    lt_dtensor_free(y);
    lt_dtensor_free(x);
    lt__op_set_dedup(-1);
}

/* A per-rank program in which rank 3 writes its replica of a shared op
 * result (copying it first) and every rank reads its own back. */
typedef struct prog_state {
    lt_dtensor *y;
    double seen[8];   /* element 1 of each rank's shard after rank 3's write */
} prog_state;

static lt_status write_then_read(lt_proc *p, void *user) {
    prog_state *s = user;
    int r = lt_proc_rank(p);
    lt_tensor *t = s->y->local->shards[r];
    if (r == 3) {
        LT_TRY(lt_tensor_make_writable(t));
        lt_set_flat(t, 1, 100.0);
    }
    lt_tensor *one = NULL;
    LT_TRY(lt_tensor_new(LT_F32, 1, (int64_t[]){1}, &one));
    lt_tensor *sum = NULL;
    lt_status st = lt_proc_all_reduce(p, 0, one, LT_REDOP_SUM, &sum);   /* a step between */
    lt_tensor_free(one);
    lt_tensor_free(sum);
    s->seen[r] = lt_get_flat(t, 1);
    return st;
}

static void test_program_writes_one_replica(void **state) {
    (void)state;
    lt__op_set_dedup(1);
    lt_mesh m;
    int64_t shape[2] = {2, 4};
    lt_dtensor *x = lt_test_arange("2x4", "R,R", 2, shape, &m);
    prog_state s = {NULL, {0}};
    LT_CHECK(lt_dtensor_unary(LT_UNARY_ABS, x, &s.y));   /* i on all 8 ranks, one buffer */
    assert_true(shares(s.y, 0, 3));
    lt_match_report *rep = NULL;
    LT_CHECK(lt_program_run(&m, write_then_read, &s, NULL, &rep));
    for (int r = 0; r < 8; r++) assert_true(s.seen[r] == (r == 3 ? 100.0 : 1.0));
    assert_false(shares(s.y, 0, 3));
    lt_dtensor_free(s.y);
    lt_dtensor_free(x);
    lt__op_set_dedup(-1);
}

/* Dropout has a per-rank parameter: never shared, yet (a mask drawn per
 * global index) every replica holds the same values. */
static void test_dropout_not_shared(void **state) {
    (void)state;
    lt__op_set_dedup(1);
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x4", &m));
    lt_dtensor *x = random_dt(&m, "R,R", 8, 8, 11), *y = NULL;
    lt_op_args a;
    memset(&a, 0, sizeof a);
    a.scalar = 0.5;
    a.seed = 9;
    LT_CHECK(lt_op(LT_OP_DROPOUT, (const lt_dtensor *const[]){x}, 1, &a, NULL, &y, 1, NULL));
    for (int r = 1; r < 8; r++) {
        assert_false(shares(y, 0, r));
        assert_memory_equal(lt_data(y->local->shards[0]), lt_data(y->local->shards[r]),
                            lt_nbytes(y->local->shards[0]));
    }
    lt_dtensor_free(y);
    lt_dtensor_free(x);
    lt__op_set_dedup(-1);
}

/* 128 ranks (the replica table on the heap): every allocation of the op
 * made to fail in turn gives LT_NOMEM and leaks nothing; then it succeeds
 * with one buffer for all ranks. */
static void test_fault_walk_large_world(void **state) {
    (void)state;
    lt__op_set_dedup(1);
    lt_mesh m;
    int64_t shape[2] = {2, 3};
    lt_dtensor *x = lt_test_arange("2x64", "R,R", 2, shape, &m), *y = NULL;
    const lt_dtensor *in[2] = {x, x};
    lt_dtensor *warm = NULL;   /* the plan is cached: the walk sees the run only */
    LT_CHECK(lt_op(LT_OP_ADD, in, 2, NULL, NULL, &warm, 1, NULL));
    lt_dtensor_free(warm);
    int64_t n = 1;
    for (;; n++) {
        lt__fault_arm(n, 0);
        lt_status st = lt_op(LT_OP_ADD, in, 2, NULL, NULL, &y, 1, NULL);
        int fired = lt__fault_fired() > 0;
        if (!fired) {
            lt__fault_disarm();
            LT_CHECK(st);
            break;
        }
        assert_int_equal(st, LT_NOMEM);
        assert_null(y);
        assert_int_equal(lt__fault_live(), 0);
        lt__fault_disarm();
    }
    assert_true(n > 3);   /* the table, the kernel's result and the twins' views */
    for (int r = 1; r < 128; r++) assert_true(shares(y, 0, r));
    lt_test_expect_values(y->local->shards[127], 2, shape, (double[]){0, 2, 4, 6, 8, 10},
                          "rank 127");
    lt_dtensor_free(y);
    lt_dtensor_free(x);
    lt__op_set_dedup(-1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_twins_share_result),
        cmocka_unit_test(test_bit_identical_on_off),
        cmocka_unit_test(test_off_shares_nothing),
        cmocka_unit_test(test_write_one_replica),
        cmocka_unit_test(test_program_writes_one_replica),
        cmocka_unit_test(test_dropout_not_shared),
        cmocka_unit_test(test_fault_walk_large_world),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
