/* tools/bench/mpi/bench_mpi.c — the MPI engine against the in-process one:
 * all_gather, reduce_scatter and all_to_all on 8 ranks of f32 whose global
 * tensor is 64 MiB, under `mpirun -np 8` (one rank per process, the MPI
 * engine's table called on the owned rank only, as in a distributed run)
 * and `mpirun -np 1` (the in-process engine through the public wrappers,
 * all 8 ranks in one process, outputs preallocated). `--startup` only
 * initialises and finalises MPI (mpirun start-up is timed around it).
 *
 * Prints one line per collective, "ROW <name> <median seconds> <bytes
 * written by all ranks per call>", read by tools/bench/run-mpi-bench.sh,
 * which prints the two runs side by side. Built and run by `make bench`
 * when the build has MPI.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/collectives_sim/collectives.h"
#include "localtensor/collectives_sim/engine_mpi.h"

#define W 8
#define REPS 5
#define GLOBAL_ELEMS ((int64_t)16 << 20) /* 64 MiB of f32 */

static void check(lt_status st, const char *what) {
    if (st == LT_OK) return;
    fprintf(stderr, "bench_mpi: %s: %s\n", what, lt_errmsg());
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const char *const names[3] = {"all_gather", "reduce_scatter(sum)", "all_to_all"};

/* Collective k's inputs and outputs on the ranks this process holds (all
 * of them on one process): all_gather (per) -> (GLOBAL); reduce_scatter
 * (GLOBAL) -> (per); all_to_all (W, per/W) split dim 1, concat dim 0 ->
 * (W*W, per/W/W). */
static void make_buffers(int k, int np, int me, int64_t per, lt_tensor **in, lt_tensor **out) {
    int64_t ish[2], osh[2];
    int nd = 1;
    if (k == 0) ish[0] = per, osh[0] = GLOBAL_ELEMS;
    else if (k == 1) ish[0] = GLOBAL_ELEMS, osh[0] = per;
    else nd = 2, ish[0] = W, ish[1] = per / W, osh[0] = W * W, osh[1] = per / W / W;
    for (int r = 0; r < W; r++) {
        if (np == W && r != me) continue; /* owned ranks only */
        check(lt_tensor_new(LT_F32, nd, ish, &in[r]), "input");
        check(lt_fill(in[r], 1.0 + r), "fill");
        check(lt_tensor_empty(LT_F32, nd, osh, &out[r]), "output");
        if (lt_numel(out[r])) check(lt_fill(out[r], 0.0), "touch");
    }
}

/* One timed call of collective k: through the in-process communicator c
 * (one process) or the MPI engine (ctx, group g). */
static void call_once(int k, int np, lt_comm *c, const lt_engine_i *e, void *ctx,
                      const lt_coll_group *g, lt_tensor **in, lt_tensor **out) {
    lt_status st;
    if (np == 1) {
        if (k == 0) st = lt_all_gather(c, 0, in, 0, out);
        else if (k == 1) st = lt_reduce_scatter(c, 0, in, LT_REDOP_SUM, 0, NULL, out);
        else st = lt_all_to_all(c, 0, in, 1, 0, NULL, out);
    } else {
        st = (k == 0 ? e->all_gather : k == 1 ? e->reduce_scatter : e->all_to_all)(ctx, g, in, out);
    }
    check(st, names[k]);
}

/* Collective k: REPS timed calls after a warm-up; process 0 prints the
 * median as a ROW line. */
static void bench_one(int k, int np, int me, const lt_mesh *m, int *ranks) {
    int64_t per = GLOBAL_ELEMS / W, sizes[W * W];
    lt_tensor *in[W] = {0}, *out[W] = {0};
    make_buffers(k, np, me, per, in, out);
    lt_comm *c = NULL;
    const lt_engine_i *e = lt_engine_mpi();
    void *ctx = NULL;
    if (np == 1) check(lt_comm_new(m, &c), "comm");
    else check(e->init(m, &ctx), "mpi engine");
    lt_coll_group g;
    memset(&g, 0, sizeof g);
    g.mesh = m;
    g.size = W;
    g.ranks = ranks;
    g.op = LT_REDOP_SUM;
    g.sizes = sizes;
    /* reduce_scatter: (GLOBAL) in W pieces of `per`; all_to_all: dim 1
     * (per/W) of every member in W pieces */
    for (int i = 0; i < W * W; i++) sizes[i] = k == 1 ? per : per / W / W;
    if (k == 2) g.dim = 1, g.concat_dim = 0;
    double t[REPS + 1];
    for (int rep = 0; rep <= REPS; rep++) { /* rep 0 warms up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        call_once(k, np, c, e, ctx, &g, in, out);
        MPI_Barrier(MPI_COMM_WORLD);
        t[rep] = MPI_Wtime() - t0;
    }
    qsort(t + 1, REPS, sizeof *t, cmp);
    size_t bytes = (size_t)W * (size_t)(k == 0 ? GLOBAL_ELEMS : per) * 4;
    if (me == 0) printf("ROW %s %.6f %zu\n", names[k], t[1 + REPS / 2], bytes);
    fflush(stdout);
    if (ctx) e->free(ctx);
    lt_comm_free(c);
    for (int r = 0; r < W; r++) {
        lt_tensor_free(in[r]);
        lt_tensor_free(out[r]);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int np, me;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (argc > 1 && !strcmp(argv[1], "--startup")) {
        MPI_Finalize();
        return 0;
    }
    if (np != 1 && np != W) {
        if (me == 0) fprintf(stderr, "bench_mpi: run with mpirun -np 1 or -np %d\n", W);
        MPI_Finalize();
        return 2;
    }
    lt_mesh m;
    int w = W;
    check(lt_mesh_init(&m, 1, &w, NULL), "mesh");
    int ranks[W];
    lt_mesh_group(&m, 0, 0, ranks);
    for (int k = 0; k < 3; k++) bench_one(k, np, me, &m, ranks);
    lt_engine_mpi_release();
    MPI_Finalize();
    return 0;
}
