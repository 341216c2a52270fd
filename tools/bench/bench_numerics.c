/* tools/bench/bench_numerics.c — sampled numerics at scale, in absolute seconds.
 *
 * The target of --numerics sample (localtensor/numerics.h): a 256x256 mesh
 * (65,536 ranks), a (65536, 65536) f32 tensor (16 GiB logical),
 * [S(0),S(1)] -> [S(1),S(0)], values for 8 ranks. A full-mode run needs the
 * 16 GiB source plus its replicated intermediates, so there is no in-process
 * baseline: rows give absolute seconds per call (median of REPS), no ratio.
 *   plan+values   lt_redistribute_ranks with a cold plan (cache bypassed)
 *                 and verification of the 8 sampled shards;
 *   none          the same without values (plan and layout only);
 *   per-rank bytes  lt_plan_trace of that plan: every rank's bytes of every
 *                 step, what --json reports.
 * "bytes" is what the sampled shards hold (8 x 256 KiB).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "localtensor/localtensor.h"
#include "tools/bench/bench.h"

#define REPS 5

static void check(lt_status st, const char *what) {
    if (st == LT_OK) return;
    fprintf(stderr, "bench: %s: %s: %s\n", what, lt_status_name(st), lt_errmsg());
    exit(2);
}

void lt_bench_numerics(lt_bench *b) {
    const char *names[3] = {
        "numerics sample:8 256x256 (65536,65536) f32 [S(0),S(1)]->[S(1),S(0)] plan+values s",
        "numerics none 256x256 (65536,65536) f32 [S(0),S(1)]->[S(1),S(0)] plan s",
        "numerics 256x256 (65536,65536) [S(0),S(1)]->[S(1),S(0)] per-rank bytes (plan trace) s"};
    if (!lt_bench_want(names[0]) && !lt_bench_want(names[1]) && !lt_bench_want(names[2])) return;
    lt_mesh m;
    lt_placement sp[2], dp[2];
    int np;
    check(lt_mesh_parse("256x256", &m), "mesh");
    check(lt_placements_parse("S(0),S(1)", sp, 2, &np), "placements");
    check(lt_placements_parse("S(1),S(0)", dp, 2, &np), "placements");
    int64_t shape[2] = {65536, 65536};
    lt_spec spec;
    check(lt_spec_init(&m, LT_F32, 2, shape, sp, 2, &spec), "spec");
    lt_init init = {LT_INIT_RANDOM, 1};
    lt_numerics nm = {LT_NUMERICS_SAMPLE, 8};
    int ranks[8];
    int n = lt_numerics_ranks(&nm, m.world, ranks);
    lt_redistribute_opts o = {0};
    o.verify = 1;
    o.no_cache = 1;
    for (int row = 0; row < 2; row++) {
        if (!lt_bench_want(names[row])) continue;
        double t[REPS];
        for (int i = 0; i < REPS; i++) {
            lt_dtensor *out;
            lt_plan *p;
            double t0 = lt_bench_now();
            check(lt_redistribute_ranks(&spec, &init, dp, 2, ranks, row ? 0 : n, &o, &out, &p),
                  "sampled redistribute");
            t[i] = lt_bench_now() - t0;
            lt_dtensor_free(out);
            lt_plan_free(p);
        }
        lt_bench_add(b, names[row], row ? 0 : (size_t)n * 256 * 256 * sizeof(float),
                     lt_bench_median(t, REPS), NAN);
    }
    if (lt_bench_want(names[2])) {
        lt_plan *p;
        check(lt_plan_redistribute(&m, LT_F32, 2, shape, sp, dp, 2, NULL, &p), "plan");
        double t[REPS];
        for (int i = 0; i < REPS; i++) {
            lt_trace *tr;
            check(lt_trace_new(m.world, &tr), "trace");
            double t0 = lt_bench_now();
            check(lt_plan_trace(p, tr), "plan trace");
            t[i] = lt_bench_now() - t0;
            lt_trace_free(tr);
        }
        lt_bench_add(b, names[2], 0, lt_bench_median(t, REPS), NAN);
        lt_plan_free(p);
    }
}
