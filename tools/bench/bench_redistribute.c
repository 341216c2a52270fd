/* tools/bench/bench_redistribute.c — redistribute at 8 ranks against memcpy, and
 * the planner's cost.
 *
 * Data rows: a 64 MiB f32 global tensor (4096 x 4096 even; 4099 x 4093
 * uneven: every split leaves a short last piece) redistributed with a warm
 * plan cache, no verification, tracing on. "bytes" is what the plan WRITES:
 * every rank's shard of every state after a step (one step: the output),
 * so the ratio compares that with memcpy of the same bytes between
 * pre-touched buffers. Outputs are fresh allocations each call (as a real
 * redistribute), so page faults are part of the cost.
 *
 * Each data row has a "verify vs run" row: the verification alone (the
 * same redistribute with opts.verify minus without, reps interleaved), its
 * baseline the run's own GB/s, so a ratio >= 1 means verifying costs no
 * more than the redistribute it checks. Its "compare floor vs run" row is
 * the least any verification reads: memcmp of the unique bytes of every
 * state a step makes (each step is verified) against as many equal bytes (pre-touched), cut into
 * even pieces on the same threads, against the run (baseline: the run's GB/s). Where that ratio is
 * below 1, verification at 1x the run is beyond this machine for that row: comparing reads twice
 * the bytes the run writes (with streaming stores). Rows with Partial sources read every
 * contribution too, so there the floor is a lower bound only.
 *
 * Planner rows (no baseline): a warm-cache lookup, and cold min-cost and
 * greedy plans of 3-D mesh pairs (cache bypassed); per objective (bytes,
 * max-rank-bytes, time on uniform) and move set (collectives; all, whose
 * rows say "moves all"), a cold min-cost plan of 2x2x2, 4x4x4 and 8x8x8
 * pairs with every cache cleared first.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/kernels/pool.h"
#include "kernels/pool_impl.h"
#include "localtensor/localtensor.h"
#include "tools/bench/bench.h"

static void check(lt_status st, const char *what) {
    if (st == LT_OK) return;
    fprintf(stderr, "bench: %s: %s: %s\n", what, lt_status_name(st), lt_errmsg());
    exit(2);
}

/* Bytes the plan writes: every rank's shard after every step. */
static size_t plan_written(const lt_plan *p) {
    size_t total = 0;
    for (int s = 0; s < p->nsteps; s++)
        for (int r = 0; r < p->mesh.world; r++) {
            int64_t ls[LT_MAX_DIMS], n = 1;
            check(lt_local_shape_and_offset(&p->mesh, p->ndim, p->shape, p->steps[s].after, r, ls,
                                            NULL),
                  "layout");
            for (int d = 0; d < p->ndim; d++) n *= ls[d];
            total += (size_t)n * lt_dtype_size(p->dtype);
        }
    return total;
}

/* The unique bytes of every state after a step: what a verification of
 * every step reads at least once. */
static uint64_t plan_unique(const lt_plan *p) {
    uint64_t total = 0;
    for (int s = 0; s < p->nsteps; s++) {
        lt_spec sp;
        uint64_t u;
        check(lt_spec_init(&p->mesh, p->dtype, p->ndim, p->shape, p->steps[s].after, p->mesh.ndim,
                           &sp),
              "spec");
        check(lt_spec_unique_bytes(&sp, &u), "unique bytes");
        total += u;
    }
    return total;
}

/* memcmp of two equal buffers of n bytes (pre-touched), cut into even
 * pieces on the pool: the compare floor (see the opening comment). */
typedef struct floor_ctx {
    const unsigned char *a, *b;   /* (n) each */
    size_t n;
    int pieces;
    int differ;                   /* set by a piece: never, the bytes are equal */
} floor_ctx;

static int (*volatile bench_memcmp)(const void *, const void *, size_t) = memcmp;

static lt_status floor_piece(void *ctx, int64_t i) {
    floor_ctx *x = ctx;
    size_t lo = x->n / (size_t)x->pieces * (size_t)i,
           hi = i + 1 == x->pieces ? x->n : lo + x->n / (size_t)x->pieces;
    if (bench_memcmp(x->a + lo, x->b + lo, hi - lo)) x->differ = 1;
    return LT_OK;
}

enum { DATA_REPS = 9 };

/* One data row's runs: the redistribute (unverified), a memcpy of the bytes
 * it writes, the floor's compare (want_floor) and the verified run
 * (want_ver), DATA_REPS times each; their times into tr, tm, tf, tv. */
typedef struct data_run {
    lt_bench *b;
    const lt_dtensor *src;
    const lt_placement *dp;
    int nd, want_floor, want_ver;
    lt_comm *c;
    size_t written;
    floor_ctx *fx;
    const char *name, *vname, *fname;
    double tr[DATA_REPS], tm[DATA_REPS], tv[DATA_REPS], tf[DATA_REPS];
} data_run;

static void data_reps(data_run *d) {
    lt_redistribute_opts o = {0};
    o.comm = d->c;
    lt_dtensor *out;
    for (int i = 0; i < DATA_REPS; i++) {
        lt_trace_clear(lt_comm_trace(d->c));
        o.verify = 0;
        double t = lt_bench_now();
        check(lt_redistribute(d->src, d->dp, d->nd, &o, &out, NULL), d->name);
        d->tr[i] = lt_bench_now() - t;
        lt_dtensor_free(out);
        d->tm[i] = lt_bench_memcpy_once(d->b, d->written);
        if (d->want_floor) {
            t = lt_bench_now();
            check(lt__parallel_for(d->fx->pieces, floor_piece, d->fx), d->fname);
            d->tf[i] = lt_bench_now() - t;
        }
        if (!d->want_ver) continue;
        lt_trace_clear(lt_comm_trace(d->c));
        o.verify = 1;
        t = lt_bench_now();
        check(lt_redistribute(d->src, d->dp, d->nd, &o, &out, NULL), d->vname);
        d->tv[i] = lt_bench_now() - t - d->tr[i];
        lt_dtensor_free(out);
    }
}

/* The floor's two equal, pre-touched buffers of fx->n bytes (freed by the
 * caller). */
static void floor_bufs(floor_ctx *fx, unsigned char **fa, unsigned char **fb) {
    *fa = malloc(fx->n ? fx->n : 1);
    *fb = malloc(fx->n ? fx->n : 1);
    if (!*fa || !*fb) {
        fprintf(stderr, "bench: out of memory\n");
        exit(2);
    }
    memset(*fa, 3, fx->n);
    memset(*fb, 3, fx->n);
    fx->a = *fa;
    fx->b = *fb;
}

/* The mesh and the two placement lists of a row (exits on bad text). */
static void parse_pair(const char *mesh_s, const char *from, const char *to, lt_mesh *m,
                       lt_placement *sp, lt_placement *dp, int *ns, int *nd) {
    check(lt_mesh_parse(mesh_s, m), "mesh");
    check(lt_placements_parse(from, sp, LT_MESH_MAX_DIMS, ns), "placements");
    check(lt_placements_parse(to, dp, LT_MESH_MAX_DIMS, nd), "placements");
}

static void data_row(lt_bench *b, const char *mesh_s, const char *from, const char *to,
                     int uneven) {
    char name[120], vname[140], fname[160];
    snprintf(name, sizeof name, "redistribute %s %s->%s 64M %s", mesh_s, from, to,
             uneven ? "uneven" : "even");
    snprintf(vname, sizeof vname, "%s: verify vs run", name);
    snprintf(fname, sizeof fname, "%s: compare floor vs run", name);
    int want_run = lt_bench_want(name), want_ver = lt_bench_want(vname),
        want_floor = lt_bench_want(fname);
    if (!want_run && !want_ver && !want_floor) return;
    lt_mesh m;
    lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
    int ns, nd;
    parse_pair(mesh_s, from, to, &m, sp, dp, &ns, &nd);
    int64_t shape[2] = {uneven ? 4099 : 4096, uneven ? 4093 : 4096};
    lt_init init = {LT_INIT_ONES, 0};
    lt_dtensor *src, *out;
    check(lt_dtensor_new(&m, LT_F32, 2, shape, sp, ns, &init, &src), "init");
    lt_comm *c;
    check(lt_comm_new(&m, &c), "comm");
    lt_redistribute_opts o = {0};
    o.comm = c;
    lt_plan *plan;
    check(lt_redistribute(src, dp, nd, &o, &out, &plan), name);   /* warms the cache */
    lt_dtensor_free(out);
    floor_ctx fx = {NULL, NULL, (size_t)plan_unique(plan), 2 * lt_threads(), 0};
    unsigned char *fa = NULL, *fb = NULL;
    if (want_floor) floor_bufs(&fx, &fa, &fb);
    data_run d = {b,   src,  dp,    nd,    want_floor, want_ver, c,   plan_written(plan),
                  &fx, name, vname, fname, {0},        {0},      {0}, {0}};
    data_reps(&d);
    double sr = lt_bench_median(d.tr, DATA_REPS), sm = lt_bench_median(d.tm, DATA_REPS);
    if (want_run) lt_bench_add(b, name, d.written, sr, (double)d.written / sm / 1e9);
    if (want_ver) {
        double sv = lt_bench_median(d.tv, DATA_REPS);
        lt_bench_add(b, vname, d.written, sv > 0 ? sv : 0, (double)d.written / sr / 1e9);
    }
    if (want_floor && fx.differ) {
        fprintf(stderr, "bench: %s: equal buffers compared unequal\n", fname);
        exit(2);
    }
    if (want_floor)
        lt_bench_add(b, fname, d.written, lt_bench_median(d.tf, DATA_REPS),
                     (double)d.written / sr / 1e9);
    free(fa);
    free(fb);
    lt_plan_free(plan);
    lt_comm_free(c);
    lt_dtensor_free(src);
}

static void plan_row(lt_bench *b, const char *mesh_s, int ndim, const int64_t *shape,
                     const char *from, const char *to, lt_planner planner, int cold) {
    char name[120];
    snprintf(name, sizeof name, "plan %s %s %s %s->%s", cold ? "cold" : "warm",
             lt_planner_name(planner), mesh_s, from, to);
    if (!lt_bench_want(name)) return;
    lt_mesh m;
    lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
    int ns, nd;
    parse_pair(mesh_s, from, to, &m, sp, dp, &ns, &nd);
    lt_redistribute_opts o = {0};
    o.planner = planner;
    o.no_cache = cold;
    lt_plan *p;
    check(lt_plan_redistribute(&m, LT_F32, ndim, shape, sp, dp, ns, &o, &p), name);
    lt_plan_free(p);
    int calls = cold ? 200 : 200000;
    enum { REPS = 5 };
    double t[REPS];
    for (int i = 0; i < REPS; i++) {
        double t0 = lt_bench_now();
        for (int k = 0; k < calls; k++) {
            lt_plan_redistribute(&m, LT_F32, ndim, shape, sp, dp, ns, &o, &p);
            lt_plan_free(p);
        }
        t[i] = (lt_bench_now() - t0) / calls;
    }
    lt_bench_add(b, name, 0, lt_bench_median(t, REPS), NAN);
}

/* A cold min-cost plan under objective o and move set mv
 * (lt_plan_redistribute_cost on the uniform topology: never cached), per
 * objective; rows of --moves all say so ("moves all"). */
static void cost_row(lt_bench *b, const char *mesh_s, int ndim, const int64_t *shape,
                     const char *from, const char *to, lt_objective o, lt_moveset mv) {
    char name[160];
    snprintf(name, sizeof name, "plan cold min-cost %s%s %s %s->%s", lt_objective_name(o),
             mv == LT_MOVES_ALL ? " moves all" : "", mesh_s, from, to);
    if (!lt_bench_want(name)) return;
    lt_mesh m;
    lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
    int ns, nd;
    parse_pair(mesh_s, from, to, &m, sp, dp, &ns, &nd);
    lt_spec a, d;
    check(lt_spec_init(&m, LT_F32, ndim, shape, sp, ns, &a), name);
    check(lt_spec_init(&m, LT_F32, ndim, shape, dp, nd, &d), name);
    lt_plan_cost pc = {0};
    pc.objective = o;
    pc.moves = mv;
    check(lt_topology_preset("uniform", m.ndim, &pc.topo), name);
    enum { REPS = 5 };
    int calls = m.world >= 512 ? 3 : m.world >= 64 ? 20 : 200;
    double t[REPS];
    for (int i = 0; i < REPS; i++) {
        double t0 = lt_bench_now();
        for (int k = 0; k < calls; k++) {
            lt_plan *p;
            lt_plan_cache_clear();
            check(lt_plan_redistribute_cost(&a, &d, &pc, &p), name);
            lt_plan_free(p);
        }
        t[i] = (lt_bench_now() - t0) / calls;
    }
    lt_bench_add(b, name, 0, lt_bench_median(t, REPS), NAN);
}

void lt_bench_redistribute(lt_bench *b) {
    static const char *const cases[][3] = {
        {"8", "S(0)", "R"},         {"8", "R", "S(0)"},           {"8", "S(0)", "S(1)"},
        {"8", "P(sum)", "R"},       {"8", "P(sum)", "S(0)"},      {"2x4", "S(0),S(1)", "S(1),S(0)"},
    };
    for (size_t q = 0; q < sizeof cases / sizeof *cases; q++)
        for (int uneven = 0; uneven < 2; uneven++)
            data_row(b, cases[q][0], cases[q][1], cases[q][2], uneven);
    const int64_t s3[] = {8, 8, 8}, s2[] = {4096, 4096};
    plan_row(b, "2x2x2", 3, s3, "S(0),S(0),S(0)", "S(1),S(1),S(1)", LT_PLANNER_MIN_COST, 0);
    plan_row(b, "2x2x2", 3, s3, "S(0),S(0),S(0)", "S(1),S(1),S(1)", LT_PLANNER_MIN_COST, 1);
    plan_row(b, "2x2x2", 3, s3, "S(0),S(0),S(0)", "S(1),S(1),S(1)", LT_PLANNER_GREEDY, 1);
    plan_row(b, "2x2x2", 2, s2, "S(0),P(sum),S(1,balanced)", "SS(0,2),S(1),R", LT_PLANNER_MIN_COST,
             1);
    plan_row(b, "4x4x4", 3, s3, "S(0),S(1),S(2)", "S(2),S(1),S(0)", LT_PLANNER_MIN_COST, 1);
    const int64_t s64[] = {64, 64, 64};
    for (int o = 0; o < LT_OBJECTIVE_COUNT; o++)
        for (int mv = 0; mv < 2; mv++) {
            lt_moveset ms = mv ? LT_MOVES_ALL : LT_MOVES_COLLECTIVES;
            cost_row(b, "2x2x2", 3, s3, "S(0),S(0),S(0)", "S(1),S(1),S(1)", (lt_objective)o, ms);
            cost_row(b, "4x4x4", 3, s3, "S(0),S(1),S(2)", "S(2),S(1),S(0)", (lt_objective)o, ms);
            cost_row(b, "8x8x8", 3, s64, "S(0),S(1),S(2)", "S(2),S(1),S(0)", (lt_objective)o, ms);
        }
}
