/* test/test_share.c — shared replica storage: which shards share one buffer
 * (distribute, the collectives, redistribute), copy-on-write isolation
 * through every write path, unique-bytes accounting, and the verifier on
 * shared and unshared wrong shards. Expected sharing follows the rule "ranks
 * that hold the same bytes because of a Replicate placement, or because a
 * collective gave a group one result, share"; expected values are computed
 * by hand from arange. */
#include <stdlib.h>
#include <string.h>

#include "localtensor/localtensor.h"
#include "localtensor/redistribute.h"
#include "test/testutil.h"

static int shares(const lt_dtensor *d, int a, int b) {
    return d->local->shards[a]->storage == d->local->shards[b]->storage;
}

/* distribute: ranks that differ only on Replicate mesh dims share. On 2x2
 * with [S(0), R]: ranks 0,1 (row 0) share, 2,3 share, the rows do not. */
static void test_distribute_shares_replicas(void **state) {
    (void)state;
    lt_mesh m;
    int64_t shape[2] = {4, 3};
    lt_dtensor *d = lt_test_arange("2x2", "S(0),R", 2, shape, &m);
    assert_true(shares(d, 0, 1));
    assert_true(shares(d, 2, 3));
    assert_false(shares(d, 0, 2));
    lt_test_expect_values(lt_to_local(d, 3), 2, (int64_t[]){2, 3}, (double[]){6, 7, 8, 9, 10, 11},
                          "rank 3");
    lt_dtensor_free(d);
    /* Partial(sum) is not shared (each rank's part is its own to change) */
    d = lt_test_arange("2", "P(sum)", 2, shape, &m);
    assert_false(shares(d, 0, 1));
    lt_dtensor_free(d);
}

/* Writing one replica through lt_tensor_make_writable never changes another. */
static void test_cow_isolation(void **state) {
    (void)state;
    lt_mesh m;
    int64_t n = 4;
    lt_dtensor *d = lt_test_arange("4", "R", 1, &n, &m);
    for (int r = 1; r < 4; r++) assert_true(shares(d, 0, r));
    lt_tensor *t2 = d->local->shards[2];
    assert_true(lt_tensor_is_shared(t2));
    LT_CHECK(lt_tensor_make_writable(t2));
    assert_false(lt_tensor_is_shared(t2));
    lt_set_flat(t2, 1, 100);
    lt_test_expect_values(t2, 1, &n, (double[]){0, 100, 2, 3}, "rank 2 (written)");
    for (int r = 0; r < 4; r++)
        if (r != 2)
            lt_test_expect_values(d->local->shards[r], 1, &n, (double[]){0, 1, 2, 3},
                                  "an untouched replica");
    assert_true(shares(d, 0, 3));   /* the others still share */
    LT_CHECK(lt_tensor_make_writable(t2));   /* unshared: a no-op */
    lt_test_expect_values(t2, 1, &n, (double[]){0, 100, 2, 3}, "rank 2 again");
    /* a strided view of a shared buffer becomes a contiguous private copy */
    lt_tensor *v = NULL;
    LT_CHECK(lt_narrow(d->local->shards[0], 0, 1, 2, &v));
    LT_CHECK(lt_tensor_make_writable(v));
    lt_set_flat(v, 0, -1);
    lt_test_expect_values(v, 1, (int64_t[]){2}, (double[]){-1, 2}, "the view");
    lt_test_expect_values(d->local->shards[0], 1, &n, (double[]){0, 1, 2, 3}, "rank 0");
    lt_tensor_free(v);
    lt_dtensor_free(d);
}

/* A collective writing into preallocated outputs that are shared replicas
 * writes private copies: the tensors sharing the old buffer keep it. */
static void test_cow_collective_outputs(void **state) {
    (void)state;
    lt_mesh m;
    int64_t n = 2;
    lt_dtensor *src = lt_test_arange("2", "S(0)", 1, &n, &m);     /* rank r holds [r] */
    int64_t two = 2;
    lt_dtensor *dst = NULL;
    lt_placement rp = lt_replicate();
    lt_init zeros = {LT_INIT_ZEROS, 0};
    LT_CHECK(lt_dtensor_new(&m, LT_F32, 1, &two, &rp, 1, &zeros, &dst));
    assert_true(shares(dst, 0, 1));
    lt_tensor *keep = NULL;   /* a third holder of the zero buffer */
    LT_CHECK(lt_tensor_view(dst->local->shards[0], &keep));
    lt_comm *c;
    LT_CHECK(lt_comm_new(&m, &c));
    LT_CHECK(lt_all_gather(c, 0, src->local->shards, 0, dst->local->shards));
    lt_test_expect_values(dst->local->shards[0], 1, &two, (double[]){0, 1}, "rank 0's output");
    lt_test_expect_values(dst->local->shards[1], 1, &two, (double[]){0, 1}, "rank 1's output");
    lt_test_expect_values(keep, 1, &two, (double[]){0, 0}, "the old buffer");
    lt_tensor_free(keep);
    lt_comm_free(c);
    lt_dtensor_free(dst);
    lt_dtensor_free(src);
}

/* all_gather, all_reduce and broadcast give a group one result; groups
 * whose inputs are the same buffers share it too (a tensor replicated on
 * mesh dim 1, all_gathered along mesh dim 0: 2x2, groups {0,2} and {1,3}). */
static void test_collective_results_shared(void **state) {
    (void)state;
    lt_mesh m;
    int64_t shape[1] = {4};
    lt_dtensor *d = lt_test_arange("2x2", "S(0),R", 1, shape, &m);
    lt_comm *c;
    LT_CHECK(lt_comm_new(&m, &c));
    lt_tensor *out[4] = {0};
    LT_CHECK(lt_all_gather(c, 0, d->local->shards, 0, out));
    for (int r = 1; r < 4; r++) assert_ptr_equal(out[r]->storage, out[0]->storage);
    for (int r = 0; r < 4; r++)
        lt_test_expect_values(out[r], 1, shape, (double[]){0, 1, 2, 3}, "gathered");
    for (int r = 0; r < 4; r++) lt_tensor_free(out[r]), out[r] = NULL;
    /* all_to_all along mesh dim 0: members differ, but the groups {0,2} and
     * {1,3} have the same inputs (rank 1 = rank 0's buffer, 3 = 2's) */
    lt_split_rule chunk = lt_split_chunk();
    LT_CHECK(lt_all_to_all(c, 0, d->local->shards, 0, 0, &chunk, out));
    assert_ptr_equal(out[1]->storage, out[0]->storage);
    assert_ptr_equal(out[3]->storage, out[2]->storage);
    assert_ptr_not_equal(out[2]->storage, out[0]->storage);
    lt_test_expect_values(out[0], 1, (int64_t[]){2}, (double[]){0, 2}, "rank 0's pieces");
    lt_test_expect_values(out[2], 1, (int64_t[]){2}, (double[]){1, 3}, "rank 2's pieces");
    for (int r = 0; r < 4; r++) lt_tensor_free(out[r]), out[r] = NULL;
    /* unshared inputs: every group computes its own */
    lt_dtensor *e = lt_test_arange("2x2", "S(0),S(0)", 1, shape, &m);
    LT_CHECK(lt_all_reduce(c, 0, e->local->shards, LT_REDOP_SUM, out));
    assert_ptr_equal(out[2]->storage, out[0]->storage);   /* group {0,2} */
    assert_ptr_not_equal(out[1]->storage, out[0]->storage);
    lt_test_expect_values(out[0], 1, (int64_t[]){1}, (double[]){0 + 2}, "group {0,2}");
    lt_test_expect_values(out[1], 1, (int64_t[]){1}, (double[]){1 + 3}, "group {1,3}");
    for (int r = 0; r < 4; r++) lt_tensor_free(out[r]);
    lt_dtensor_free(e);
    lt_comm_free(c);
    lt_dtensor_free(d);
}

/* redistribute's result: [S(0), S(1), R] -> [R, S(0), S(1)] on 2x2x2; ranks
 * that differ only on mesh dim 0 (r and r + 4) share, the others do not;
 * the result equals the direct reshard. */
static void test_redistribute_result_shared(void **state) {
    (void)state;
    lt_mesh m;
    int64_t shape[2] = {8, 8};
    lt_dtensor *d = lt_test_arange("2x2x2", "S(0),S(1),R", 2, shape, &m);
    assert_true(shares(d, 0, 1));
    lt_placement to[3];
    int np;
    LT_CHECK(lt_placements_parse("R,S(0),S(1)", to, 3, &np));
    lt_redistribute_opts o;
    memset(&o, 0, sizeof o);
    o.verify = 1;
    lt_dtensor *out = NULL;
    LT_CHECK(lt_redistribute(d, to, 3, &o, &out, NULL));
    for (int r = 0; r < 4; r++) {
        assert_true(shares(out, r, r + 4));
        for (int q = 0; q < 4; q++)
            if (q != r) assert_false(shares(out, r, q));
    }
    /* rank 5 = coord (1, 0, 1): rows 0..3, columns 4..7 */
    lt_test_expect_values(lt_to_local(out, 5), 2, (int64_t[]){4, 4},
                          (double[]){4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31},
                          "rank 5");
    lt_dtensor_free(out);
    lt_dtensor_free(d);
}

/* Unique bytes: replicas count once. (8, 8) f32 = 256 bytes. */
static void test_unique_bytes(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement pl[3];
    int np;
    int64_t shape[2] = {8, 8};
    LT_CHECK(lt_mesh_parse("2x2x2", &m));
    const struct {
        const char *pl;
        uint64_t unique, total;
    } cases[] = {
        {"R,R,R", 256, 8 * 256},
        {"S(0),S(1),R", 256, 2 * 256},
        {"S(0),R,R", 256, 4 * 256},
        {"P(sum),R,S(1)", 2 * 256, 4 * 256},   /* the Partial parts differ */
        {"S(0),S(0),S(1)", 256, 256},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        LT_CHECK(lt_placements_parse(cases[i].pl, pl, 3, &np));
        lt_spec s;
        LT_CHECK(lt_spec_init(&m, LT_F32, 2, shape, pl, np, &s));
        uint64_t u, t;
        LT_CHECK(lt_spec_unique_bytes(&s, &u));
        LT_CHECK(lt_spec_total_bytes(&s, &t));
        if (u != cases[i].unique || t != cases[i].total)
            fail_msg("%s: unique %llu total %llu, wanted %llu and %llu", cases[i].pl,
                     (unsigned long long)u, (unsigned long long)t,
                     (unsigned long long)cases[i].unique, (unsigned long long)cases[i].total);
    }
}

/* The verifier names a planted wrong shard, shared or not. */
static void test_verifier_catches(void **state) {
    (void)state;
    lt_mesh m;
    int64_t shape[2] = {4, 4};
    lt_dtensor *src = lt_test_arange("2x2", "S(0),S(1)", 2, shape, &m);
    lt_placement to[2];
    int np;
    LT_CHECK(lt_placements_parse("R,S(1)", to, 2, &np));
    lt_dtensor *out = NULL;
    LT_CHECK(lt_redistribute(src, to, 2, NULL, &out, NULL));
    assert_true(shares(out, 0, 2));   /* coords (0,0), (1,0) */
    lt_verify_report rep;
    LT_CHECK(lt_verify_reshard(src, out, 0, &rep));
    /* rank 2's private copy is wrong: rank 2 is named, rank 0 is fine */
    LT_CHECK(lt_tensor_make_writable(out->local->shards[2]));
    lt_set_flat(out->local->shards[2], 3, 99);   /* local (1, 1) = global (1, 1) = 5 */
    LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
    assert_int_equal(rep.rank, 2);
    assert_int_equal(rep.local_index[0], 1);
    assert_int_equal(rep.local_index[1], 1);
    assert_int_equal(rep.global_index[1], 1);
    assert_true(rep.expected == 5 && rep.actual == 99);
    lt_dtensor_free(out);
    /* a wrong buffer shared by ranks 1 and 3: the first of them is named */
    LT_CHECK(lt_redistribute(src, to, 2, NULL, &out, NULL));
    assert_true(shares(out, 1, 3));
    lt_set_flat(out->local->shards[3], 0, -7);   /* local (0, 0) = global (0, 2) = 2 */
    LT_EXPECT_STATUS(lt_verify_reshard(src, out, 0, &rep), LT_MISMATCH);
    assert_int_equal(rep.rank, 1);
    assert_int_equal(rep.global_index[0], 0);
    assert_int_equal(rep.global_index[1], 2);
    assert_true(rep.expected == 2 && rep.actual == -7);
    lt_dtensor_free(out);
    /* a source whose replicas disagree (unshared buffers) is named too */
    lt_dtensor *r = lt_test_arange("2", "R", 2, shape, &m);
    LT_CHECK(lt_tensor_make_writable(r->local->shards[1]));
    lt_set_flat(r->local->shards[1], 15, 0);
    lt_placement s0 = lt_shard(0);
    LT_EXPECT_STATUS(lt_redistribute(r, &s0, 1, &(lt_redistribute_opts){.verify = 1}, &out, NULL),
                     LT_MISMATCH);
    if (!strstr(lt_errmsg(), "the source's replicas disagree: rank 1, local index [3, 3]"))
        fail_msg("%s", lt_errmsg());
    lt_dtensor_free(r);
    lt_dtensor_free(src);
}

/* The up-front estimate counts unique bytes for a source whose replicas
 * share (init) and every rank's bytes for one whose replicas hold their own
 * buffers (from_local). (64, 64) f32 = 16 KiB on 2x2, [R, R] -> [S(0), R]:
 * one min-cost step (a local slice), counted as what it works from plus its
 * result, each 2 unique halves of 8 KiB (32 KiB in all), or 4 private ones
 * (64 KiB). Under a 48 KiB budget the first runs, the second is refused. */
static void test_estimate_private_replicas(void **state) {
    (void)state;
    lt_mesh m;
    int64_t shape[2] = {64, 64};
    lt_dtensor *shared = lt_test_arange("2x2", "R,R", 2, shape, &m);
    lt_tensor *own[4];
    for (int r = 0; r < 4; r++) LT_CHECK(lt_clone(shared->local->shards[r], &own[r]));
    lt_placement rr[2] = {lt_replicate(), lt_replicate()}, to[2] = {lt_shard(0), lt_replicate()};
    lt_dtensor *priv = NULL, *out = NULL;
    LT_CHECK(lt_from_local(&m, own, rr, 2, 0, &priv));
    assert_false(shares(priv, 0, 1));
    setenv("LOCALTENSOR_MEMORY_LIMIT", "48K", 1);
    lt_status a = lt_redistribute(shared, to, 2, NULL, &out, NULL);
    lt_dtensor_free(out);
    out = NULL;
    lt_status b = lt_redistribute(priv, to, 2, NULL, &out, NULL);
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    LT_CHECK(a);
    LT_EXPECT_STATUS(b, LT_NOMEM);
    if (!strstr(lt_errmsg(),
                "needs 64.0 KiB for the shards of all 4 ranks, more than this machine's 48.0 KiB"))
        fail_msg("%s", lt_errmsg());
    assert_null(out);
    for (int r = 0; r < 4; r++) lt_tensor_free(own[r]);
    lt_dtensor_free(priv);
    lt_dtensor_free(shared);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distribute_shares_replicas),
        cmocka_unit_test(test_cow_isolation),
        cmocka_unit_test(test_cow_collective_outputs),
        cmocka_unit_test(test_collective_results_shared),
        cmocka_unit_test(test_redistribute_result_shared),
        cmocka_unit_test(test_unique_bytes),
        cmocka_unit_test(test_verifier_catches),
        cmocka_unit_test(test_estimate_private_replicas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
