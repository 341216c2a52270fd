/* tools/bench/bench_program.c — the per-rank program runner (collectives_sim/program.h):
 * what one rendezvous costs.
 *
 * A program of 8 ranks where every rank issues CALLS collectives in a row on
 * mesh dim 0; the whole run (setup included, spread over 8 * CALLS calls) is
 * timed and reported as seconds per rank per collective: the switches into
 * and out of the rank, the matching, and the collective itself. Rows: a
 * barrier; an all_reduce of one f32 into a preallocated output; the same
 * into a fresh output the rank frees (two allocations more per rank); on
 * 2x4, all_reduce along tp then dp. Also a run that issues nothing: the
 * fixed cost of lt_program_run for 8 ranks (stacks, matcher, communicators).
 * The target is at most 1 us per rank per collective. No baseline.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "localtensor/collectives_sim/program.h"
#include "tools/bench/bench.h"

enum { BARRIER, AR_PRE, AR_FRESH, AR_2D, NOTHING };

typedef struct job {
    int kind, calls;
} job;

static lt_status body(lt_proc *p, void *ud) {
    const job *j = ud;
    int64_t one = 1;
    lt_tensor *x = NULL, *o = NULL;
    lt_status st = LT_OK;
    if (j->kind != BARRIER && j->kind != NOTHING) {
        st = lt_tensor_empty(LT_F32, 1, &one, &x);
        if (!st && j->kind != AR_FRESH) st = lt_tensor_empty(LT_F32, 1, &one, &o);
    }
    for (int k = 0; k < j->calls && !st && j->kind != NOTHING; k++) {
        switch (j->kind) {
        case BARRIER: st = lt_proc_barrier(p, 0); break;
        case AR_PRE: st = lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o); break;
        case AR_FRESH:
            st = lt_proc_all_reduce(p, 0, x, LT_REDOP_SUM, &o);
            lt_tensor_free(o);
            o = NULL;
            break;
        default: st = lt_proc_all_reduce(p, k % 2, x, LT_REDOP_SUM, &o); break;
        }
    }
    lt_tensor_free(x);
    lt_tensor_free(o);
    return st;
}

static void row(lt_bench *b, const char *name, const char *mesh, int kind, int calls) {
    if (!lt_bench_want(name)) return;
    lt_mesh m;
    job j = {kind, calls};
    if (lt_mesh_parse(mesh, &m)) {
        fprintf(stderr, "bench: %s\n", lt_errmsg());
        exit(2);
    }
    enum { REPS = 15 };
    double t[REPS];
    for (int i = 0; i < REPS; i++) {
        double t0 = lt_bench_now();
        lt_status st = lt_program_run(&m, body, &j, NULL, NULL);
        t[i] = lt_bench_now() - t0;
        if (st) {
            fprintf(stderr, "bench: %s: %s: %s\n", name, lt_status_name(st), lt_errmsg());
            exit(2);
        }
        if (calls) t[i] /= (double)calls * m.world;
    }
    size_t bytes =
        kind == BARRIER || kind == NOTHING ? 0 : 4; /* one f32 written per rank and call */
    lt_bench_add(b, name, bytes, lt_bench_median(t, REPS), NAN);
}

void lt_bench_program(lt_bench *b) {
    enum { CALLS = 20000 };
    row(b, "program 8 ranks: barrier, /rank/collective", "8", BARRIER, CALLS);
    row(b, "program 8 ranks: all_reduce 1 f32, /rank/collective", "8", AR_PRE, CALLS);
    row(b, "program 8 ranks: all_reduce fresh out, /rank/coll.", "8", AR_FRESH, CALLS);
    row(b, "program 2x4: all_reduce tp,dp, /rank/collective", "2x4", AR_2D, CALLS);
    row(b, "program 8 ranks: whole run, no collective", "8", NOTHING, 0);
}
