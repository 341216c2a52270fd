/* test/fault/fault_program.c — the per-rank program workload of the
 * fault-injection driver (fault_main.c): lt_program_run with every
 * collective of collectives_sim/program.h and a send/recv swap on a 2x2
 * mesh, then the three would-hang kinds (mismatch, missing, cycle; and a
 * missing send) with their reports formatted,
 * and a few library calls no other workload makes (greedy planner, plan
 * printing, split-rule views).
 *
 * A rank whose collective fails with LT_NOMEM returns that status, so the
 * run must end in LT_NOMEM with an "out of memory" message and no report
 * left behind; the other ranks' calls are cancelled and they free what they
 * hold. Results are checked against values computed here by hand: rank r
 * starts with x_r[i] = 10 r + i (4 f32). */
#include <stdio.h>
#include <string.h>

#include "kernels/alloc.h"
#include "localtensor/localtensor.h"
#include "test/fault/fault.h"

typedef struct prog_state {
    int broken;            /* a rank saw a wrong value */
    char what[160];
} prog_state;

static void mark_broken(prog_state *s, const char *fmt, int r, int i, double got, double want) {
    if (s->broken) return;
    s->broken = 1;
    snprintf(s->what, sizeof s->what, fmt, r, i, got, want);
}

/* Every element of t against want(i). */
#define CHECK_VALUES(s, t, n, r, expr)                                                             \
    do {                                                                                           \
        for (int i = 0; i < (n); i++) {                                                            \
            int64_t ix_[1] = {i};                                                                  \
            double got_ = lt_get((t), ix_), want_ = (expr);                                        \
            if (got_ != want_)                                                                     \
                mark_broken((s), "rank %d: [%d] = %g, expected %g", (r), i, got_, want_);          \
        }                                                                                          \
    } while (0)

/* Every collective once. Mesh 2x2 (dp, tp); rank r = 2 dp + tp. */
static lt_status all_kinds(lt_proc *p, void *ud) {
    prog_state *s = ud;
    int r = lt_proc_rank(p), dp = lt_proc_coord(p, 0), tp = lt_proc_coord(p, 1);
    int64_t n4[1] = {4};
    lt_tensor *x = NULL, *ar = NULL, *ag = NULL, *rs = NULL, *a2a = NULL, *bc = NULL, *sc = NULL,
              *ga = NULL, *rd = NULL, *pp = NULL;
    lt_status st = lt_tensor_new(LT_F32, 1, n4, &x);
    if (st) return st;
    for (int i = 0; i < 4; i++) {
        int64_t ix[1] = {i};
        lt_set(x, ix, 10.0 * r + i);
    }
    /* all_reduce(sum) over dp: ranks tp and tp + 2 */
    if ((st = lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &ar))) goto out;
    CHECK_VALUES(s, ar, 4, r, 10.0 * tp + i + 10.0 * (tp + 2) + i);
    /* all_gather over tp on dim 0: (8) */
    if ((st = lt_proc_all_gather(p, 1, x, 0, &ag))) goto out;
    CHECK_VALUES(s, ag, 8, r, 10.0 * (2 * dp + i / 4) + i % 4);
    /* reduce_scatter(sum) over tp on dim 0: piece tp of the sum, (2) */
    if ((st = lt_proc_reduce_scatter(p, 1, x, LT_REDOP_SUM, 0, NULL, &rs))) goto out;
    CHECK_VALUES(s, rs, 2, r, 10.0 * (2 * dp) + 10.0 * (2 * dp + 1) + 2.0 * (2 * tp + i));
    /* all_to_all over dp, split and concat dim 0: piece dp of every member */
    if ((st = lt_proc_all_to_all(p, 0, x, 0, 0, NULL, &a2a))) goto out;
    CHECK_VALUES(s, a2a, 4, r, 10.0 * (2 * (i / 2) + tp) + 2 * dp + i % 2);
    /* broadcast over tp from root 1 */
    if ((st = lt_proc_broadcast(p, 1, tp == 1 ? x : NULL, 1, &bc))) goto out;
    CHECK_VALUES(s, bc, 4, r, 10.0 * (2 * dp + 1) + i);
    /* scatter over dp from root 0 on dim 0: (2) */
    if ((st = lt_proc_scatter(p, 0, dp == 0 ? x : NULL, 0, 0, NULL, &sc))) goto out;
    CHECK_VALUES(s, sc, 2, r, 10.0 * tp + 2 * dp + i);
    /* gather over tp to root 0 on dim 0 */
    if ((st = lt_proc_gather(p, 1, x, 0, 0, &ga))) goto out;
    if (tp == 0) CHECK_VALUES(s, ga, 8, r, 10.0 * (2 * dp + i / 4) + i % 4);
    /* reduce(max) over dp to root 1 */
    if ((st = lt_proc_reduce(p, 0, x, 1, LT_REDOP_MAX, &rd))) goto out;
    if (dp == 1) CHECK_VALUES(s, rd, 4, r, 10.0 * (tp + 2) + i);
    /* tp partners swap x by send and recv (tp 0 sends first): x of rank r ^ 1 */
    if (tp == 0 && (st = lt_proc_send(p, x, r + 1))) goto out;
    if ((st = lt_proc_recv(p, tp ? r - 1 : r + 1, &pp))) goto out;
    if (tp == 1 && (st = lt_proc_send(p, x, r - 1))) goto out;
    CHECK_VALUES(s, pp, 4, r, 10.0 * (r ^ 1) + i);
    st = lt_proc_barrier(p, 1);
out:
    lt_tensor_free(pp);
    lt_tensor_free(rd);
    lt_tensor_free(ga);
    lt_tensor_free(sc);
    lt_tensor_free(bc);
    lt_tensor_free(a2a);
    lt_tensor_free(rs);
    lt_tensor_free(ag);
    lt_tensor_free(ar);
    lt_tensor_free(x);
    return st;
}

/* The three hangs of docs/SEMANTICS.md §12. */
static lt_status hang_mismatch(lt_proc *p, void *ud) {
    (void)ud;
    int64_t n2[1] = {2};
    lt_tensor *x = NULL, *y = NULL;
    lt_status st = lt_tensor_new(LT_F32, 1, n2, &x);
    if (st) return st;
    st = lt_proc_all_reduce(p, 0, x, lt_proc_rank(p) == 0 ? LT_REDOP_SUM : LT_REDOP_MAX, &y);
    lt_tensor_free(y);
    lt_tensor_free(x);
    return st;
}

static lt_status hang_missing(lt_proc *p, void *ud) {
    (void)ud;
    if (lt_proc_rank(p) == 3) return LT_OK;   /* skips the barrier the others wait in */
    return lt_proc_barrier(p, 1);
}

/* Rank 2 receives from rank 3, which returns without sending. */
static lt_status hang_p2p_missing(lt_proc *p, void *ud) {
    (void)ud;
    lt_tensor *y = NULL;
    lt_status st = lt_proc_rank(p) == 2 ? lt_proc_recv(p, 3, &y) : LT_OK;
    lt_tensor_free(y);
    return st;
}

/* (dp + tp) even: dp then tp, odd: tp then dp — rank 0 waits for 2 on dp,
 * 2 for 3 on tp, 3 for 1 on dp, 1 for 0 on tp. */
static lt_status hang_cycle(lt_proc *p, void *ud) {
    (void)ud;
    lt_status st;
    int first = (lt_proc_coord(p, 0) + lt_proc_coord(p, 1)) % 2;
    lt_proc_set_label(p, first ? "tp first" : "dp first");
    if ((st = lt_proc_barrier(p, first))) return st;
    return lt_proc_barrier(p, 1 - first);
}

/* One run that must end in a hang report of kind `kind`. A rank whose own
 * allocation fails ends the run with LT_NOMEM instead (its report, of kind
 * rank_failed, is freed here). */
static int expect_hang(const char *what, const lt_mesh *mesh, lt_proc_fn fn, lt_hang_kind kind) {
    lt_match_report *rep = NULL;
    lt_status st = lt_program_run(mesh, fn, NULL, NULL, &rep);
    if (st == LT_NOMEM) {
        lt_match_report_free(rep);
        return fault_failed(what, st, 0, NULL);
    }
    if (st != LT_MISMATCH || !rep) {
        lt_match_report_free(rep);
        return fault_broken(what, "status %s, expected a would-hang report: %s", lt_status_name(st),
                            lt_errmsg());
    }
    int rc = FAULT_DONE;
    if (rep->kind != kind)
        rc = fault_broken(what, "hang kind %s, expected %s", lt_hang_kind_name(rep->kind),
                          lt_hang_kind_name(kind));
    char buf[4096];
    size_t n = lt_match_report_format(rep, buf, sizeof buf);
    if (rc == FAULT_DONE && (n == 0 || !strstr(buf, "would hang")))
        rc = fault_broken(what, "report without a headline: %s", buf);
    FILE *devnull = fopen("/dev/null", "w");
    if (devnull) {
        lt_match_report_print(rep, devnull);
        fclose(devnull);
    }
    lt_match_report_free(rep);
    return rc;
}

/* Library calls no other workload makes: the greedy planner, a plan
 * printed, views by a split rule. */
static int misc_api(const lt_mesh *mesh) {
    int rc = FAULT_DONE;
    int64_t shape[2] = {6, 4};
    lt_placement src[2] = {lt_shard(0), lt_shard(1)}, dst[2] = {lt_replicate(), lt_shard(0)};
    lt_redistribute_opts po;
    memset(&po, 0, sizeof po);
    po.planner = LT_PLANNER_GREEDY;
    po.no_cache = 1;
    lt_plan *plan = NULL;
    lt_tensor *t = NULL, *views[3] = {NULL, NULL, NULL};
    lt_status st = lt_plan_redistribute(mesh, LT_F32, 2, shape, src, dst, 2, &po, &plan);
    if (st) {
        void *o[1] = {plan};
        return fault_failed("greedy plan", st, 1, o);
    }
    FILE *devnull = fopen("/dev/null", "w");
    if (!devnull) {
        lt_plan_free(plan);
        return fault_broken("plan_print", "cannot open /dev/null");
    }
    st = lt_plan_print(plan, devnull);
    fclose(devnull);
    lt_plan_free(plan);
    if (st) return fault_failed("plan_print", st, 0, NULL);

    int64_t n7[1] = {7};
    if ((st = lt_tensor_new(LT_F32, 1, n7, &t))) return fault_failed("tensor_new", st, 0, NULL);
    lt_split_rule bal = lt_split_chunk();
    bal.kind = LT_SPLIT_BALANCED;   /* 7 in 3: 3, 2, 2 */
    st = lt_split_rule_views(t, 0, &bal, 3, views);
    if (st) {
        void *o[3] = {views[0], views[1], views[2]};
        rc = fault_failed("split_rule_views", st, 3, o);
    } else if (views[0]->shape[0] + views[1]->shape[0] + views[2]->shape[0] != 7 ||
               views[2]->shape[0] != 2) {
        rc = fault_broken("split_rule_views", "balanced pieces of 7 in 3: %lld, %lld, %lld",
                          (long long)views[0]->shape[0], (long long)views[1]->shape[0],
                          (long long)views[2]->shape[0]);
    }
    for (int i = 0; i < 3; i++) lt_tensor_free(views[i]);
    lt_tensor_free(t);
    return rc;
}

int fault_program_workload(void *ctx, const char *tmp) {
    (void)ctx, (void)tmp;
    lt_mesh mesh;
    static const int mshape[2] = {2, 2};
    static const char *const mnames[2] = {"dp", "tp"};
    if (lt_mesh_init(&mesh, 2, mshape, mnames) != LT_OK)
        return fault_broken("mesh", "%s", lt_errmsg());

    prog_state s;
    memset(&s, 0, sizeof s);
    lt_match_report *rep = NULL;
    lt_status st = lt_program_run(&mesh, all_kinds, &s, NULL, &rep);
    if (st != LT_OK) {
        /* a rank's LT_NOMEM stops the run; its report names that rank */
        lt_match_report_free(rep);
        return fault_failed("program", st, 0, NULL);
    }
    if (rep) {
        lt_match_report_free(rep);
        return fault_broken("program", "a report after a clean run");
    }
    if (s.broken) return fault_broken("program", "%s", s.what);

    int rc;
    if ((rc = expect_hang("would hang (mismatch)", &mesh, hang_mismatch, LT_HANG_MISMATCH)) !=
        FAULT_DONE)
        return rc;
    if ((rc = expect_hang("would hang (missing)", &mesh, hang_missing, LT_HANG_MISSING)) !=
        FAULT_DONE)
        return rc;
    if ((rc = expect_hang("would hang (cycle)", &mesh, hang_cycle, LT_HANG_CYCLE)) != FAULT_DONE)
        return rc;
    if ((rc = expect_hang("would hang (missing send)", &mesh, hang_p2p_missing,
                          LT_HANG_MISSING)) != FAULT_DONE)
        return rc;
    /* a report too long for the printer's stack buffer: 128 ranks, rank 3 missing */
    lt_mesh big;
    static const int bshape[2] = {2, 64};
    if (lt_mesh_init(&big, 2, bshape, mnames) != LT_OK)
        return fault_broken("mesh", "%s", lt_errmsg());
    if ((rc = expect_hang("would hang (missing, 128 ranks)", &big, hang_missing,
                          LT_HANG_MISSING)) != FAULT_DONE)
        return rc;
    return misc_api(&mesh);
}
