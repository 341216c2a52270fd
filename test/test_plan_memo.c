/* test/test_plan_memo.c — the search space shared by min-cost searches
 * (localtensor/plan/plan_memo.c) changes nothing but time: for every pair of
 * sweep-like sets on 2x2x2 and 2x4 meshes (R, Shard, balanced Shard, SS and
 * Partial; shapes that divide, that do not, and with empty blocks) the plan
 * searched with the shared records is byte for byte the plan searched
 * without them (printed text, JSON, states explored, work charged), whether the records
 * are cold, warm from the pairs before, or warm from the same pairs in the
 * reverse order; on 4x4x4 pairs, some of which run out of the search
 * budget, the budget runs out on the same pairs with and without them.
 * The key maps searches hand on to the next come back empty. */
#include "kernels/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "localtensor/plan/plan_impl.h"
#include "test/redistribute_testutil.h"
#include "tools/render/render.h"


/* Everything a plan shows: its text, its JSON, the states it explored and
 * whether the search ran out of budget, and the work its search charged
 * (every shortcut of the shared records must charge the same), into buf (a new string the caller
 * frees; NULL: the pair has no plan, with the status in *st). */
static char *plan_text(const lt_mesh *m, int ndim, const int64_t *shape, const lt_placement *sp,
                       const lt_placement *dp, int shared, lt_status *st) {
    lt_spec s;
    LT_CHECK(lt_spec_init(m, LT_F32, ndim, shape, sp, m->ndim, &s));
    lt_plan *p = NULL;
    *st = lt__plan_build(&s, dp, LT_PLANNER_MIN_COST, shared, &p);
    if (*st) return NULL;
    char text[8192];
    int n = lt_plan_format(p, text, sizeof text);
    assert_true(n > 0 && (size_t)n < sizeof text);
    cJSON *j = lt_json_plan(p, NULL, 0);
    char *js = cJSON_PrintUnformatted(j);
    assert_non_null(js);
    size_t cap = strlen(text) + strlen(js) + 128;
    char *out = malloc(cap);
    assert_non_null(out);
    snprintf(out, cap, "%s\n%s\nexplored %d truncated %d planner %d work %.17g", text, js,
             p->states_explored, (int)p->search_truncated, (int)p->planner,
             lt__plan_x_of(p)->search_work);
    free(js);
    cJSON_Delete(j);
    lt_plan_free(p);
    return out;
}

typedef struct tally {
    long pairs, rejected, truncated, differ;
} tally;

/* Plans pair (sp, dp) unshared, then shared, then shared with dec's replay
 * scanning every candidate; any difference fails (the first few are
 * printed): the work charged is compared between the two shared ones. */
static void compare_pair(const lt_mesh *m, int ndim, const int64_t *shape, const lt_placement *sp,
                         const lt_placement *dp, tally *t) {
    lt_placement tmp[LT_MESH_MAX_DIMS];
    if (lt_placements_check(m, ndim, sp, m->ndim, tmp) || lt_layout_check(m, ndim, shape, sp) ||
        lt_placements_check(m, ndim, dp, m->ndim, tmp) || lt_layout_check(m, ndim, shape, dp) ||
        expect_reject(m, sp, dp)) {
        t->rejected++;
        return;
    }
    lt_status s0, s1, s2;
    char *a = plan_text(m, ndim, shape, sp, dp, 0, &s0);
    char *b = plan_text(m, ndim, shape, sp, dp, 1, &s1);
    /* dec's replay by bit sets (the default) against its scan of every
     * candidate: the same records, so the very same work too */
    lt__ms_dec_sets = 0;
    char *c = plan_text(m, ndim, shape, sp, dp, 1, &s2);
    lt__ms_dec_sets = 1;
    t->pairs++;
    if (a && strstr(a, "truncated 1")) t->truncated++;
    /* the work charged may differ between shared and unshared searches
     * (plan_memo.c: the same outcome against the budget, not the same sum) */
    if (a && b && c) *strstr(a, " work ") = '\0';
    int differ = s0 != s1 || s1 != s2 || !a != !b || !b != !c;
    if (!differ && a)
        differ = strncmp(a, b, strlen(a)) || strncmp(b + strlen(a), " work ", 6) || strcmp(b, c);
    if (differ) {
        char x[256], y[256], ms[64];
        if (t->differ++ < 5)
            print_message("DIFFER on %s: %s -> %s\nunshared (%s):\n%s\nshared (%s):\n%s\nshared, "
                          "scanning (%s):\n%s\n",
                          lt_mesh_format(m, ms, sizeof ms), fmt_pl(sp, m->ndim, x, 256),
                          fmt_pl(dp, m->ndim, y, 256), lt_status_name(s0), a ? a : "-",
                          lt_status_name(s1), b ? b : "-", lt_status_name(s2), c ? c : "-");
    }
    free(a);
    free(b);
    free(c);
}

/* Every `every`-th pair of lists of options o[nopt] (37 times fewer under a
 * sanitizer), in order or reversed. */
static void sweep(const char *mesh_s, int ndim, const int64_t *shape, const lt_placement *o,
                  int nopt, int reverse, long every, tally *t) {
    lt_mesh m = mk_mesh(mesh_s);
    lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
    long nlist = 1;
    for (int i = 0; i < m.ndim; i++) nlist *= nopt;
    long npairs = nlist * nlist, step = SANITIZED ? 37 * every : every;
    for (long q = 0; q < npairs; q += step) {
        long pair = reverse ? npairs - 1 - q : q;
        decode_list(pair / nlist, o, nopt, m.ndim, sp);
        decode_list(pair % nlist, o, nopt, m.ndim, dp);
        compare_pair(&m, ndim, shape, sp, dp, t);
    }
}

static void test_shared_equals_unshared(void **state) {
    (void)state;
    lt_split_rule bal = lt_split_chunk();
    bal.kind = LT_SPLIT_BALANCED;
    /* the sweep's own options, then Partial and balanced splits */
    const lt_placement o3[5] = {lt_replicate(), lt_shard(0), lt_shard(1), lt_strided(0, 2),
                                lt_strided(1, 2)};
    const lt_placement o2[7] = {lt_replicate(),          lt_shard(0),      lt_shard(1),
                                lt_strided(0, 2),        lt_strided(1, 2), lt_shard_rule(1, bal),
                                lt_partial(LT_REDOP_SUM)};
    const int64_t s3[][2] = {{5, 7}, {3, 3}, {0, 4}};
    const int64_t s2[][2] = {{8, 8}, {9, 13}, {7, 1}, {1, 9}};
    tally t = {0};
    lt_plan_cache_clear();   /* cold records */
    for (int s = 0; s < 3; s++) sweep("2x2x2", 2, s3[s], o3, 5, 0, s ? 3 : 1, &t);
    for (int s = 0; s < 4; s++) sweep("2x4", 2, s2[s], o2, 7, 0, 1, &t);
    /* warm records, filled in the other order; cold ones, in the other order */
    for (int s = 0; s < 2; s++) sweep("2x4", 2, s2[s], o2, 7, 1, 1, &t);
    lt_plan_cache_clear();
    sweep("2x2x2", 2, s3[0], o3, 5, 1, 4, &t);
    print_message("shared = unshared on %ld pairs (%ld rejected or invalid); %ld differ\n", t.pairs,
                  t.rejected, t.differ);
    assert_int_equal(t.differ, 0);
    assert_true(t.pairs > (SANITIZED ? 500 : 30000));
}

/* On 4x4x4 some searches run out of budget: the same ones, with the same
 * fallback plan, shared or not, cold or warm. */
/* A key map handed to the spare pool comes back empty: keys put before
 * are absent after (a new generation), also when the generations wrap
 * (the table is zeroed). */
static void test_spare_tables_empty(void **state) {
    (void)state;
    lt__spare_clear();
    for (int wrap = 0; wrap < 2; wrap++) {
        lt__keymap m = {0};
        int idx, added;
        for (int k = 0; k < 100; k++) {
            LT_CHECK(lt__keymap_get(&m, (uint64_t)k * 977, k, &idx, &added));
            assert_int_equal(added, 1);
        }
        LT_CHECK(lt__keymap_get(&m, 5 * 977, 100, &idx, &added));
        assert_int_equal(added, 0);
        assert_int_equal(idx, 5);
        if (wrap) {   /* every slot in use stamped with the last generation */
            for (size_t q = 0; q < m.cap; q++)
                if (m.slot[q].gen == m.gen) m.slot[q].gen = UINT32_MAX;
            m.gen = UINT32_MAX;
        }
        lt__spare_give(LT__SPARE_KEYMAP, m.slot, m.cap, sizeof *m.slot, m.gen);
        lt__keymap t = {0};
        void *p;
        lt__spare_take(LT__SPARE_KEYMAP, &p, &t.cap, &t.gen);
        t.slot = p;
        assert_ptr_equal(t.slot, m.slot);
        assert_int_equal(t.gen, wrap ? 1 : m.gen + 1);
        for (int k = 0; k < 100; k++) {
            LT_CHECK(lt__keymap_get(&t, (uint64_t)k * 977, 1000 + k, &idx, &added));
            if (!added || idx != 1000 + k)
                fail_msg("key %d was still in the reused table (index %d)", k, idx);
        }
        lt__keymap_free(&t);
    }
    lt__spare_clear();
}

static void test_budget_same(void **state) {
    (void)state;
    const char *pairs[][2] = {
        {"S(0),S(0),S(1)", "S(1),S(1),S(0)"},   /* within the budget */
        {"S(0),S(1),SS(0,2)", "S(1),SS(1,2),S(0)"},   /* past it */
        {"SS(0,2),S(1),R", "S(1),S(0),SS(1,2)"},
        {"R,S(0),S(1)", "S(1),R,S(0)"},
    };
    int np = SANITIZED ? 2 : 4;
    lt_mesh m = mk_mesh("4x4x4");
    const int64_t shape[2] = {13, 17};
    tally t = {0};
    lt_plan_cache_clear();
    for (int pass = 0; pass < 2; pass++)
        for (int q = 0; q < np; q++) {
            lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
            parse_pl(pairs[pass ? np - 1 - q : q][0], sp);
            parse_pl(pairs[pass ? np - 1 - q : q][1], dp);
            compare_pair(&m, 2, shape, sp, dp, &t);
        }
    print_message("4x4x4: %ld pairs, %ld of them past the budget; %ld differ\n", t.pairs,
                  t.truncated, t.differ);
    assert_int_equal(t.differ, 0);
    assert_true(t.truncated > 0 && t.truncated < t.pairs);
}

static int teardown(void **state) {
    (void)state;
    lt_plan_cache_clear();
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_equals_unshared),
        cmocka_unit_test(test_budget_same),
        cmocka_unit_test(test_spare_tables_empty),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
