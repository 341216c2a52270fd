/* tools/bench/bench_collectives.c — collectives at 8 ranks against memcpy.
 *
 * For every collective, on mesh 8 (dim 0) and 2x4 (dims 0 and 1), at totals
 * of 4 KiB .. 256 MiB WRITTEN (the sum of all ranks' outputs), with even and
 * uneven shards (uneven: per-member weights 3,0,1,2,... so some members hold
 * nothing), f32, outputs preallocated (the fast path), tracing on; gather,
 * reduce and permute (not bandwidth targets) up to 1 MiB only. Each rep
 * times the collective and then a memcpy of the same number of bytes between
 * two pre-touched buffers; the row reports the medians. Reductions read
 * n times what they write, so memcpy of the bytes written is a demanding
 * baseline for them (reduce_scatter especially).
 *
 * Also: per-call overhead of all_reduce and all_gather on 8 ranks of
 * 1-element shards, tracing on and off (no baseline).
 *
 * Threads (kernels/pool.h): the rows above run on lt_threads() threads (the
 * default: one per core). The "N threads vs 1" rows time the 64 MiB even
 * collectives with lt_set_threads(1) and lt_set_threads(N), reps
 * interleaved: the "1 thread" row's baseline is memcpy as above, the
 * "N threads vs 1" row's baseline is the 1-thread GB/s, so its ratio is the
 * speed-up (2 threads: target >= 1.6). reduce_scatter also gets these rows
 * "along dim 1" (inputs of 1024 columns: each member's piece is a range of
 * every row).
 *
 * The machine's own ceiling for those rows: "memcpy 64M" and "add f32 64M"
 * (c = a + b over 16 Mi floats) split into N equal halves on the same pool
 * (lt__parallel_for), buffers pre-touched, 1 thread against N, reps
 * interleaved, as above: the "N threads vs 1" ratio is what the hardware
 * gives a copy and an elementwise reduction of that size, against which
 * each collective's ratio reads.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/collectives_sim/collectives.h"
#include "localtensor/kernels/pool.h"
#include "kernels/pool_impl.h"
#include "tools/bench/bench.h"
#include "localtensor/collectives_sim/trace.h"

enum { AG, RS, AR, A2A, BC, SC, GA, RE, PE, NKIND };
static const char *const kind_names[NKIND] = {
    "all_gather",       "reduce_scatter(sum)", "all_reduce(sum)",
    "all_to_all(0->1)", "broadcast",           "scatter",
    "gather",           "reduce(sum)",         "permute(ring)"};

typedef struct setup {
    lt_mesh m;
    lt_comm *c;
    int kind, md, n, W;
    lt_tensor *in[8], *out[8];
    lt_split_rule rule;
    int perm[8];
} setup;

static void check(lt_status st, const char *what) {
    if (st == LT_OK) return;
    fprintf(stderr, "bench: %s: %s: %s\n", what, lt_status_name(st), lt_errmsg());
    exit(2);
}

static int rs_dim; /* the dim reduce_scatter scatters along (1: the "along dim 1" rows) */

static lt_status call(setup *s) {
    switch (s->kind) {
    case AG: return lt_all_gather(s->c, s->md, s->in, 0, s->out);
    case RS: return lt_reduce_scatter(s->c, s->md, s->in, LT_REDOP_SUM, rs_dim, &s->rule, s->out);
    case AR: return lt_all_reduce(s->c, s->md, s->in, LT_REDOP_SUM, s->out);
    case A2A: return lt_all_to_all(s->c, s->md, s->in, 0, 1, &s->rule, s->out);
    case BC: return lt_broadcast(s->c, s->md, s->in, 0, s->out);
    case SC: return lt_scatter(s->c, s->md, s->in, 0, 0, &s->rule, s->out);
    case GA: return lt_gather(s->c, s->md, s->in, 0, 0, s->out);
    case RE: return lt_reduce_ranks(s->c, s->md, s->in, 0, LT_REDOP_SUM, s->out);
    default: return lt_permute_ranks(s->c, s->md, s->in, s->perm, s->out);
    }
}

/* rows[n] summing to R: even R/n each, or by weights 3,0,1,2,3,0,1,2 */
static void row_split(int64_t R, int n, int uneven, int64_t *rows) {
    int64_t wsum = 0, used = 0;
    for (int p = 0; p < n; p++) wsum += uneven ? (p * 5 + 3) % 4 : 1;
    for (int p = 0; p < n; p++) {
        rows[p] = R * (uneven ? (p * 5 + 3) % 4 : 1) / wsum;
        used += rows[p];
    }
    rows[0] += R - used;
}

static lt_tensor *filled(int ndim, const int64_t *shape) {
    lt_tensor *t;
    check(lt_tensor_new(LT_F32, ndim, shape, &t), "tensor");
    if (lt_numel(t)) check(lt_fill(t, 1.0), "fill");
    return t;
}

/* Builds inputs so that the call writes about `total` bytes, runs it once
 * (creating the outputs, which later calls reuse) and returns the exact
 * bytes written. */
static size_t build(setup *s, int kind, const char *mesh, int md, size_t total, int uneven) {
    memset(s, 0, sizeof *s);
    check(lt_mesh_parse(mesh, &s->m), "mesh");
    check(lt_comm_new(&s->m, &s->c), "comm");
    s->kind = kind;
    s->md = md;
    s->n = s->m.shape[md];
    s->W = s->m.world;
    int n = s->n, G = s->W / n;
    /* bytes per rank input (or per group for rooted/reduce-scatter sources) */
    size_t per = kind == RS || kind == SC || kind == GA || kind == RE ? total / (size_t)G
                                                                      : total / (size_t)s->W;
    int64_t elems = (int64_t)(per / 4);
    int64_t C = elems / (16 * n);
    C = C < 1 ? 1 : C > 1024 ? 1024 : C;
    int64_t R = elems / C / n * n;
    if (R < n) R = n;
    int64_t rows[8] = {0};
    row_split(R, n, uneven, rows);
    s->rule = lt_split_chunk();
    if (uneven && lt_split_explicit(rows, n, &s->rule)) s->rule = lt_split_chunk();
    for (int i = 0; i < n; i++) s->perm[i] = (i + 1) % n;
    for (int r = 0; r < s->W; r++) {
        int pos;
        lt_mesh_group_of(&s->m, md, r, &pos);
        int64_t shape[2] = {R, C};
        switch (kind) {
        case AG:
        case GA: shape[0] = rows[pos]; break;
        case AR: {
            int64_t e = R * C - (uneven ? 3 : 0);
            s->in[r] = filled(1, &e);
            continue;
        }
        case BC:
        case SC: if (pos != 0) continue; break; /* non-roots: no input */
        default: break;
        }
        s->in[r] = filled(2, shape);
    }
    check(call(s), kind_names[kind]);
    size_t written = 0;
    for (int r = 0; r < s->W; r++) written += lt_nbytes(s->out[r]);
    return written;
}

static void teardown(setup *s) {
    for (int r = 0; r < s->W; r++) {
        lt_tensor_free(s->in[r]);
        lt_tensor_free(s->out[r]);
    }
    lt_comm_free(s->c);
}

/* Interleaves reps of the collective and of memcpy of the same bytes. */
static void measure(lt_bench *b, const char *name, setup *s, size_t written) {
    int reps = written >= (32u << 20) ? 5 : 9;
    int batch = written >= (32u << 20) ? 1 : written >= (512u << 10) ? 8 : 400;
    double tc[9], tm[9];
    for (int i = 0; i < reps; i++) {
        lt_trace_clear(lt_comm_trace(s->c));
        double t = lt_bench_now();
        for (int k = 0; k < batch; k++) check(call(s), name);
        tc[i] = (lt_bench_now() - t) / batch;
        double m = 0;
        for (int k = 0; k < batch; k++) m += lt_bench_memcpy_once(b, written);
        tm[i] = m / batch;
    }
    double c = lt_bench_median(tc, reps), m = lt_bench_median(tm, reps);
    lt_bench_add(b, name, written, c, (double)written / m / 1e9);
}

static void overhead(lt_bench *b, int kind, int trace_on) {
    char name[120];
    snprintf(name, sizeof name, "per-call %s 8 ranks x 1 f32, trace %s",
             kind == AR ? "all_reduce" : "all_gather", trace_on ? "on" : "off");
    if (!lt_bench_want(name)) return;
    setup s;
    memset(&s, 0, sizeof s);
    check(lt_mesh_parse("8", &s.m), "mesh");
    check(lt_comm_new(&s.m, &s.c), "comm");
    s.kind = kind;
    s.n = s.W = 8;
    s.rule = lt_split_chunk();
    for (int r = 0; r < 8; r++) s.in[r] = filled(1, (int64_t[]){1});
    check(call(&s), "overhead");
    lt_trace_enable(lt_comm_trace(s.c), trace_on);
    enum { CALLS = 1000, REPS = 41 }; /* short reps: the median shrugs off interference */
    double t[REPS];
    for (int i = 0; i < REPS; i++) {
        lt_trace_clear(lt_comm_trace(s.c));
        double t0 = lt_bench_now();
        for (int k = 0; k < CALLS; k++) check(call(&s), "overhead");
        t[i] = (lt_bench_now() - t0) / CALLS;
    }
    size_t written = 0;
    for (int r = 0; r < 8; r++) written += lt_nbytes(s.out[r]);
    lt_bench_add(b, name, written, lt_bench_median(t, REPS), NAN);
    teardown(&s);
}

/* 1 thread against `nthreads` on one 64 MiB collective (see the opening
 * comment). */
static void threads_rows(lt_bench *b, int kind, const char *mesh, int md, int nthreads) {
    char n1[120], nn[120];
    const char *along = rs_dim ? " along dim 1" : "";
    snprintf(n1, sizeof n1, "%s%s %s/%d 64M even, 1 thread", kind_names[kind], along, mesh, md);
    snprintf(nn, sizeof nn, "%s%s %s/%d 64M even, %d threads vs 1", kind_names[kind], along, mesh,
             md, nthreads);
    if (!lt_bench_want(n1) && !lt_bench_want(nn)) return;
    int before = lt_threads();
    setup s;
    size_t w = build(&s, kind, mesh, md, 64u << 20, 0);
    enum { REPS = 7 };
    double t1[REPS], tn[REPS], tm[REPS];
    for (int i = 0; i < REPS; i++) {
        lt_set_threads(1);
        double t = lt_bench_now();
        check(call(&s), n1);
        t1[i] = lt_bench_now() - t;
        lt_set_threads(nthreads);
        t = lt_bench_now();
        check(call(&s), nn);
        tn[i] = lt_bench_now() - t;
        tm[i] = lt_bench_memcpy_once(b, w);
        lt_trace_clear(lt_comm_trace(s.c));
    }
    lt_set_threads(before);
    double c1 = lt_bench_median(t1, REPS), cn = lt_bench_median(tn, REPS),
           m = lt_bench_median(tm, REPS);
    lt_bench_add(b, n1, w, c1, (double)w / m / 1e9);
    lt_bench_add(b, nn, w, cn, (double)w / c1 / 1e9);
    teardown(&s);
}

typedef struct ceil_ctx {
    int add;            /* 0: c = a (memcpy); 1: c = a + b */
    float *a, *b, *c;   /* (n) each, pre-touched */
    size_t n;
    int pieces;
} ceil_ctx;

/* Piece i of pieces: an equal range of the elements. */
static lt_status ceil_piece(void *ctx, int64_t i) {
    ceil_ctx *x = ctx;
    size_t lo = x->n * (size_t)i / (size_t)x->pieces,
           hi = x->n * (size_t)(i + 1) / (size_t)x->pieces;
    if (!x->add) memcpy(x->c + lo, x->a + lo, (hi - lo) * sizeof(float));
    else
        for (size_t j = lo; j < hi; j++) x->c[j] = x->a[j] + x->b[j];
    return LT_OK;
}

/* The ceiling rows (see the opening comment). */
static void ceiling_rows(int add, int nthreads, lt_bench *b) {
    const char *what = add ? "add f32" : "memcpy";
    char n1[120], nn[120];
    snprintf(n1, sizeof n1, "%s 64M, 1 thread", what);
    snprintf(nn, sizeof nn, "%s 64M, %d threads vs 1", what, nthreads);
    if (!lt_bench_want(n1) && !lt_bench_want(nn)) return;
    ceil_ctx x = {add, NULL, NULL, NULL, (64u << 20) / sizeof(float), nthreads};
    x.a = malloc(x.n * sizeof(float));
    x.b = malloc(x.n * sizeof(float));
    x.c = malloc(x.n * sizeof(float));
    if (!x.a || !x.b || !x.c) {
        fprintf(stderr, "bench: out of memory\n");
        exit(2);
    }
    for (size_t j = 0; j < x.n; j++) x.a[j] = x.b[j] = x.c[j] = (float)(j & 1023);
    int before = lt_threads();
    size_t w = x.n * sizeof(float);
    enum { REPS = 7 };
    double t1[REPS], tn[REPS], tm[REPS];
    for (int i = 0; i < REPS; i++) {
        lt_set_threads(1);
        double t = lt_bench_now();
        check(lt__parallel_for(x.pieces, ceil_piece, &x), n1);
        t1[i] = lt_bench_now() - t;
        lt_set_threads(nthreads);
        t = lt_bench_now();
        check(lt__parallel_for(x.pieces, ceil_piece, &x), nn);
        tn[i] = lt_bench_now() - t;
        tm[i] = lt_bench_memcpy_once(b, w);
    }
    lt_set_threads(before);
    double c1 = lt_bench_median(t1, REPS), cn = lt_bench_median(tn, REPS),
           m = lt_bench_median(tm, REPS);
    lt_bench_add(b, n1, w, c1, (double)w / m / 1e9);
    lt_bench_add(b, nn, w, cn, (double)w / c1 / 1e9);
    free(x.a);
    free(x.b);
    free(x.c);
}

void lt_bench_collectives(lt_bench *b) {
    static const struct { const char *mesh; int md; } meshes[] = {{"8", 0}, {"2x4", 0}, {"2x4", 1}};
    static const struct { const char *label; size_t bytes; } sizes[] = {
        {"4K", 4u << 10}, {"1M", 1u << 20}, {"64M", 64u << 20}, {"256M", 256u << 20}};
    for (int kind = 0; kind < NKIND; kind++) {
        int extra = kind >= GA; /* not in the bandwidth targets: fewer sizes */
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            if (extra && sizes[si].bytes > (1u << 20)) continue;
            for (size_t mi = 0; mi < sizeof meshes / sizeof *meshes; mi++) {
                for (int uneven = 0; uneven < 2; uneven++) {
                    if (kind == BC && uneven) continue; /* one source: nothing to be uneven */
                    char name[120];
                    snprintf(name, sizeof name, "%s %s/%d %s %s", kind_names[kind], meshes[mi].mesh,
                             meshes[mi].md, sizes[si].label, uneven ? "uneven" : "even");
                    if (!lt_bench_want(name)) continue;
                    setup s;
                    size_t w =
                        build(&s, kind, meshes[mi].mesh, meshes[mi].md, sizes[si].bytes, uneven);
                    measure(b, name, &s, w);
                    teardown(&s);
                }
            }
        }
    }
    ceiling_rows(0, 2, b);
    ceiling_rows(1, 2, b);
    static const int tkinds[] = {AG, RS, AR, A2A, BC};
    for (size_t i = 0; i < sizeof tkinds / sizeof *tkinds; i++) {
        threads_rows(b, tkinds[i], "8", 0, 2);
        threads_rows(b, tkinds[i], "2x4", 1, 2);
    }
    rs_dim = 1; /* a piece of every row per member: 1024 columns, 128 per member on mesh 8 */
    threads_rows(b, RS, "8", 0, 2);
    threads_rows(b, RS, "2x4", 1, 2);
    rs_dim = 0;
    overhead(b, AR, 1);
    overhead(b, AR, 0);
    overhead(b, AG, 1);
    overhead(b, AG, 0);
}
