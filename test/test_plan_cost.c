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
    /* nothing given: time on uniform, over the collectives, no lines shown */
    const char *a0[] = {"redistribute", "--mesh", "2x3"};
    LT_CHECK(cli_cost(3, a0, &c, NULL));
    assert_int_equal(c.cost.objective, LT_OBJECTIVE_TIME);
    assert_int_equal(c.cost.moves, LT_MOVES_COLLECTIVES);
    assert_int_equal(c.cost.topo.alpha_ps[1], 5000000);
    assert_false(c.shown);
    const char *a2[] = {"redistribute", "--moves"};
    assert_int_equal(cli_cost(2, a2, &c, NULL), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "--moves needs a value"));
    const char *a3[] = {"redistribute", "--moves", "all"};
    LT_CHECK(cli_cost(3, a3, &c, NULL));
    assert_int_equal(c.cost.moves, LT_MOVES_ALL);
    assert_true(c.shown);
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

/* A topology file's algorithms, and their rounds worked out by hand. */
static void test_cli_algorithms(void **state) {
    (void)state;
    lt_cli_cost c;
    char path[] = "/tmp/lt_topo_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    const char *a5[] = {"redistribute", "--mesh", "2x2", "--topology", path};
    FILE *f;
    /* algorithms: read per dim and collective; unknown names refused */
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"dims\": [{\"alpha_us\": 5, \"beta_GBps\": 25, \"algorithms\": "
          "{\"all_reduce\": \"tree\", \"all_to_all\": \"direct\"}}, "
          "{\"alpha_us\": 1, \"beta_GBps\": 50}]}",
          f);
    fclose(f);
    LT_CHECK(cli_cost(5, a5, &c, NULL));
    assert_int_equal(c.cost.topo.algo[0][LT_COLL_ALL_REDUCE], LT_ALGO_TREE);
    assert_int_equal(c.cost.topo.algo[0][LT_COLL_ALL_TO_ALL], LT_ALGO_DIRECT);
    assert_int_equal(c.cost.topo.algo[1][LT_COLL_ALL_REDUCE], LT_ALGO_DEFAULT);
    /* all_reduce of 8 f32 on 8 ranks by tree: 2 x 3 rounds of 5 us, and
     * each rank receives 7 x 4 + 28 = 56 B at 25 GB/s (2,240 ps) */
    lt_topology t8;
    LT_CHECK(lt_topology_preset("uniform", 1, &t8));
    t8.algo[0][LT_COLL_ALL_REDUCE] = LT_ALGO_TREE;
    assert_int_equal(lt__time_ps(&t8, 0, LT_COLL_ALL_REDUCE, 8, 56, 1), 30002240u);
    t8.algo[0][LT_COLL_ALL_REDUCE] = LT_ALGO_DIRECT;
    assert_int_equal(lt__time_ps(&t8, 0, LT_COLL_ALL_REDUCE, 8, 56, 1), 10002240u);
    t8.algo[0][LT_COLL_ALL_REDUCE] = LT_ALGO_RING;
    assert_int_equal(lt__time_ps(&t8, 0, LT_COLL_ALL_REDUCE, 8, 56, 1), 70002240u);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"dims\": [{\"alpha_us\": 5, \"beta_GBps\": 25, \"algorithms\": "
          "{\"broadcast\": \"tree\"}}, {\"alpha_us\": 1, \"beta_GBps\": 50}]}",
          f);
    fclose(f);
    assert_int_equal(cli_cost(5, a5, &c, NULL), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "dims[0].algorithms.broadcast: not a step"));
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
    /* per rank, by hand: the all_gather along dp brings each rank its
     * partner's 5 rows of its tp columns (3, 3, 1: 60, 60, 20 B); the
     * all_to_all along tp splits the 10 rows 4, 4, 2, and a rank receives
     * its rows of the other two members' columns (4 x 4, 4 x 4, 2 x 6
     * floats: 64, 64, 48 B) */
    assert_non_null(strstr(buf, "  step 1: 60 60 20 60 60 20\n  step 2: 64 64 48 64 64 48\n"));
    /* --json's costs: the same numbers */
    cJSON *j = lt_cli_cost_json(&c, p);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "objective")->valuestring, "time");
    assert_true(cJSON_GetObjectItem(j, "time_ps")->valuedouble == 15004960.0);
    assert_true(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "step_time_ps"), 1)->valuedouble ==
                10002560.0);
    assert_true(cJSON_GetObjectItem(j, "max_rank_bytes")->valuedouble == 124.0);
    assert_true(cJSON_GetObjectItem(j, "total_bytes")->valuedouble == 632.0);
    cJSON_Delete(j);
    lt_plan_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets_and_names),
        cmocka_unit_test(test_step_time_by_hand),
        cmocka_unit_test(test_cli_options),
        cmocka_unit_test(test_cli_algorithms),
        cmocka_unit_test(test_cli_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
