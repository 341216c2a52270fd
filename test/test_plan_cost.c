/* test/test_plan_cost.c — the cost options of the planner (localtensor/plan.h,
 * localtensor/plan/plan_cost.c) and of `redistribute` (tools/cli/
 * cli_plan_cost.c): the presets' numbers, a step's time worked out by hand
 * from docs/SEMANTICS.md §7, and every bad input refused with a message.
 * That each objective's plans are minimal is test_planner.c's brute force.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/testutil.h"

#include "localtensor/plan/plan_impl.h"
#include "tools/cli/cli_plan_cost.h"

static void test_presets_and_names(void **state) {
    (void)state;
    lt_topology t;
    LT_CHECK(lt_topology_preset("uniform", 3, &t));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(t.alpha_ps[i], 5000000);   /* 5 us */
        assert_int_equal(t.beta_bpus[i], 25000);    /* 25 GB/s = 25,000 bytes per us */
    }
    LT_CHECK(lt_topology_preset("nvlink-ib", 2, &t));
    assert_int_equal(t.alpha_ps[0], 5000000);
    assert_int_equal(t.alpha_ps[1], 2000000);
    assert_int_equal(t.beta_bpus[1], 300000);
    assert_int_equal(lt_topology_preset("fast", 2, &t), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "'fast'"));
    lt_objective o;
    lt_moveset m;
    LT_CHECK(lt_objective_parse("max-rank-bytes", &o));
    assert_int_equal(o, LT_OBJECTIVE_MAX_RANK_BYTES);
    assert_int_equal(lt_objective_parse("speed", &o), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "bytes, max-rank-bytes or time"));
    LT_CHECK(lt_moveset_parse("dtensor", &m));
    assert_int_equal(m, LT_MOVES_DTENSOR);
    assert_int_equal(lt_moveset_parse("p2p", &m), LT_INVALID);
}

/* [S(0)] -> [R] of 10 f32 on a mesh of 4 (chunks 3, 3, 3, 1): one
 * all_gather; the busiest rank (the one holding 1) receives 9 elements = 36
 * B. Ring: 3 rounds x 5 us + 36 B / 25 GB/s (1.44 ns) = 15,001,440 ps. And
 * [P(sum)] -> [R] of 8 f32 on 2: an all_reduce, 2 rounds x 5 us + 32 B
 * (each rank receives the other half twice: 2 x 4 elements) / 25 GB/s
 * (1.28 ns) = 10,001,280 ps. */
static void test_step_time_by_hand(void **state) {
    (void)state;
    lt_topology t;
    LT_CHECK(lt_topology_preset("uniform", 1, &t));
    lt_mesh m4, m2;
    LT_CHECK(lt_mesh_parse("4", &m4));
    LT_CHECK(lt_mesh_parse("2", &m2));
    const int64_t s10[] = {10}, s8[] = {8};
    lt_placement s = lt_shard(0), r = lt_replicate(), p = lt_partial(LT_REDOP_SUM);
    lt_plan *pl;
    LT_CHECK(lt_plan_redistribute(&m4, LT_F32, 1, s10, &s, &r, 1, NULL, &pl));
    assert_int_equal(pl->nsteps, 1);
    assert_int_equal(pl->steps[0].bytes_per_rank, 36);
    assert_int_equal(lt_plan_step_time_ps(pl, 0, &t), 15001440u);
    assert_int_equal(lt_plan_time_ps(pl, &t), 15001440u);
    assert_int_equal(lt_plan_max_rank_bytes(pl), 36);
    lt_plan_free(pl);
    LT_CHECK(lt_plan_redistribute(&m2, LT_F32, 1, s8, &p, &r, 1, NULL, &pl));
    assert_int_equal(pl->steps[0].coll, LT_COLL_ALL_REDUCE);
    assert_int_equal(lt_plan_time_ps(pl, &t), 10001280u);
    lt_plan_free(pl);
}

/* Runs take + parse on a command line (argv[0] included); the status. */
static lt_status cli_cost(int argc, const char **argv, lt_cli_cost *c, int *kept) {
    char *k[16];
    memset(c, 0, sizeof *c);
    int n = lt_cli_cost_take(c, argc, (char **)argv, k);
    if (kept) *kept = n;
    if (n < 0) return LT_INVALID;
    return lt_cli_cost_parse(c, n, k);
}

static void test_cli_options(void **state) {
    (void)state;
    lt_cli_cost c;
    int kept;
    const char *a1[] = {"redistribute",     "--mesh",     "2x3",
                        "--objective=time", "--topology", "nvlink-ib",
                        "--compare",        "--shape",    "4"};
    LT_CHECK(cli_cost(9, a1, &c, &kept));
    assert_int_equal(kept, 5);   /* redistribute --mesh 2x3 --shape 4 */
    assert_int_equal(c.cost.objective, LT_OBJECTIVE_TIME);
    assert_true(c.compare && c.shown);
    assert_int_equal(c.cost.topo.alpha_ps[1], 2000000);   /* the last of 2 mesh dims */
    const char *a2[] = {"redistribute", "--moves"};
    assert_int_equal(cli_cost(2, a2, &c, NULL), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "--moves needs a value"));
    const char *a3[] = {"redistribute", "--moves", "all"};
    assert_int_equal(cli_cost(3, a3, &c, NULL), LT_UNSUPPORTED);
    assert_non_null(strstr(lt_errmsg(), "not supported yet"));
    const char *a4[] = {"redistribute", "--topology", "/nonexistent/topo.json"};
    assert_int_equal(cli_cost(3, a4, &c, NULL), LT_INVALID);
    /* a file: two dims, the second 1.5 us at 100 GB/s */
    char path[] = "/tmp/lt_topo_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *js = "{\"dims\": [{\"alpha_us\": 4, \"beta_GBps\": 50}, "
                     "{\"alpha_us\": 1.5, \"beta_GBps\": 100}]}";
    assert_int_equal(write(fd, js, strlen(js)), (ssize_t)strlen(js));
    close(fd);
    const char *a5[] = {"redistribute", "--mesh", "2x2", "--topology", path};
    LT_CHECK(cli_cost(5, a5, &c, NULL));
    assert_int_equal(c.cost.topo.alpha_ps[0], 4000000);
    assert_int_equal(c.cost.topo.beta_bpus[0], 50000);
    assert_int_equal(c.cost.topo.alpha_ps[1], 1500000);
    assert_int_equal(c.cost.topo.beta_bpus[1], 100000);
    const char *a6[] = {"redistribute", "--mesh", "2x2x2", "--topology",
                        path}; /* 2 entries, 3 dims */
    assert_int_equal(cli_cost(5, a6, &c, NULL), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "3 entries"));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(
        "{\"dims\": [{\"alpha_us\": -1, \"beta_GBps\": 50}, {\"alpha_us\": 1, \"beta_GBps\": 0}]}",
        f);
    fclose(f);
    assert_int_equal(cli_cost(5, a5, &c, NULL), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "dims[0]"));
    unlink(path);
}

/* The lines after the plan table: nothing without the options; with them
 * the 2x3 case's times (uniform: 5.002 + 10.003 us for all_gather then
 * all_to_all, hand-computed in test_planner.c), greedy's line, and with
 * --compare one line per objective. */
static void test_cli_lines(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x3", &m));
    const int64_t sh[] = {10, 7};
    lt_placement sp[2], dp[2];
    int n;
    LT_CHECK(lt_placements_parse("S(0),S(1)", sp, 2, &n));
    LT_CHECK(lt_placements_parse("R,S(0)", dp, 2, &n));
    lt_spec a, b;
    LT_CHECK(lt_spec_init(&m, LT_F32, 2, sh, sp, 2, &a));
    LT_CHECK(lt_spec_init(&m, LT_F32, 2, sh, dp, 2, &b));
    lt_cli_cost c;
    const char *args[] = {"redistribute", "--mesh", "2x3", "--objective", "time", "--compare"};
    LT_CHECK(cli_cost(6, args, &c, NULL));
    lt_plan *p;
    LT_CHECK(lt_plan_redistribute_cost(&a, &b, &c.cost, &p));
    char buf[4096] = {0};
    FILE *f = tmpfile();
    assert_non_null(f);
    lt_cli_cost off;
    memset(&off, 0, sizeof off);
    LT_CHECK(lt_cli_cost_print(f, &off, p));
    assert_int_equal(ftell(f), 0);
    LT_CHECK(lt_cli_cost_print(f, &c, p));
    rewind(f);
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    assert_true(got > 0);
    assert_non_null(strstr(buf, "step 1 5.002 us; step 2 10.003 us; total 15.005 us"));
    assert_non_null(strstr(buf, "PyTorch's order (greedy):"));
    assert_non_null(strstr(buf, "this plan: 632 B in all, 124 B on the busiest rank"));
    assert_non_null(strstr(buf, "bytes          gather(0), all_to_all(1), all_gather(0): 596 B"));
    assert_non_null(strstr(buf, "max-rank-bytes all_gather(0), all_to_all(1): 632 B"));
    lt_plan_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets_and_names),
        cmocka_unit_test(test_step_time_by_hand),
        cmocka_unit_test(test_cli_options),
        cmocka_unit_test(test_cli_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
