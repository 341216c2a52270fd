/* tools/cli/cli_mpi.c — the MPI side of `localtensor run --engine mpi`:
 * MPI_Init/Finalize, the MPI engine's options, and the agreements that make
 * every process end a case, and the run, with the same outcome.
 *
 * Linked into the CLI only in builds with MPI (the Makefile's MPI=1, the
 * default where mpicc exists), so liblocaltensor-tools stays free of libmpi;
 * main() points lt_cli_mpi_hooks (tools/cli/cli.h) here.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "localtensor/collectives_sim/engine_mpi.h"
#include "kernels/memlimit_impl.h"
#include "tools/cli/cli.h"
#include "tools/scenario/scenario_impl.h"

static int mpi_step_note(int status, int *kind, char *msg, size_t cap, int *from);

static int mpi_begin(int cross_check, int owned, FILE *err, int *proc, int *nproc) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fprintf(err, "localtensor run: --engine mpi: MPI_Init failed\n");
        return 2;
    }
    MPI_Comm_size(MPI_COMM_WORLD, nproc);
    MPI_Comm_rank(MPI_COMM_WORLD, proc);
    lt_mpi_options o;
    memset(&o, 0, sizeof o);
    o.cross_check = cross_check;
    o.shadow = !owned; /* --shards all: the scenario engine's tensors hold every rank's shard */
    o.idle_extra = 1;  /* small meshes run on the first processes */
    lt_engine_mpi_set_options(&o);
    lt_engine_mpi_polite_wait();   /* yields that sleep when other programs share the cores */
    lt__sc_set_step_note(owned ? NULL : mpi_step_note);
    /* the processes on this machine share its memory: each checks against its part */
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        int local = 1;
        MPI_Comm_size(node, &local);
        lt__mem_set_share(local);
        MPI_Comm_free(&node);
    }
    return -1;
}

static int mpi_agree_exit(int code) {
    int worst = code;
    MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

static void mpi_end(void) {
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin) return;
    lt_engine_mpi_release();
    MPI_Finalize();
}

/* --shards all: this process's own error in the current case (kind 2: it
 * refused the step; 0: another error), which may end the case here while
 * other processes go on into a collective; st == 0: none. */
static struct {
    int st, kind;
    char msg[1024];
} g_stop;

/* lt__sc_set_step_note (tools/scenario/scenario_impl.h), --shards all:
 * called on this process alone after a step that failed. A call of the
 * step that failed because another process had already ended the case
 * (lt_engine_mpi_echo) takes that process's outcome as a refusal (kind 2:
 * the case stops here too, as an error, whatever an expect_error expects);
 * this process's own error is kept for the engine to answer the others'
 * calls with (mpi_case_agree). */
static int mpi_step_note(int status, int *kind, char *msg, size_t cap, int *from) {
    lt_status st = LT_OK;
    char other[1024];
    *from = lt_engine_mpi_echo(&st, NULL, other, sizeof other);
    if (*from >= 0) {
        *kind = 2;
        snprintf(msg, cap, "%s", other);
        return (int)st;
    }
    if (status && *kind != 1) {
        g_stop.st = status;
        g_stop.kind = *kind;
        snprintf(g_stop.msg, sizeof g_stop.msg, "%s", msg);
    }
    return status;
}

/* Worst status over the processes (statuses order NOTRUN < PASS < FAIL <
 * ERROR); the lowest process with it sends its failure line to all. First
 * every process reaches the end of the case: one that ended it early (an
 * error before a collective) answers the others' calls with its error
 * until they end it too (lt_engine_mpi_end_unit). */
static int mpi_case_agree(int status, const char *failure, int *from, char *other, size_t cap) {
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int r[2] = {-status, status}; /* the worst and the best status, agreed at the end of the case */
    if (g_stop.st) lt_engine_mpi_end_unit((lt_status)g_stop.st, g_stop.kind, g_stop.msg, r);
    else lt_engine_mpi_end_unit(status == LT_SC_ERROR ? LT_INVALID : LT_OK, 0, failure, r);
    memset(&g_stop, 0, sizeof g_stop);
    int worst = -r[0], best = r[1];
    if (worst == best) return worst; /* all agree */
    int cand = status == worst ? me : np, first = np;
    MPI_Allreduce(&cand, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", me == first ? failure : "");
    MPI_Bcast(buf, (int)sizeof buf, MPI_CHAR, first, MPI_COMM_WORLD);
    *from = first;
    snprintf(other, cap, "%s", buf);
    return worst;
}

/* lt_sc_options.step_agree (tools/scenario/scenario.h): outcomes rank
 * success 0 < a failed check 1 < an error or a refusal 2; the lowest
 * process with the worst sends its status, kind and message to all. */
static int mpi_step_agree(int status, int *kind, char *msg, size_t cap, int *from) {
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int rank = status == 0 ? 0 : *kind == 1 ? 1 : 2, worst = 0;
    MPI_Allreduce(&rank, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    *from = -1;
    if (worst == 0) return 0;
    int cand = rank == worst ? me : np, first = np;
    MPI_Allreduce(&cand, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int hdr[2] = {status, *kind};
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", me == first ? msg : "");
    MPI_Bcast(hdr, 2, MPI_INT, first, MPI_COMM_WORLD);
    MPI_Bcast(buf, (int)sizeof buf, MPI_CHAR, first, MPI_COMM_WORLD);
    if (first == me) return status;
    *kind = hdr[1];
    snprintf(msg, cap, "%s", buf);
    *from = first;
    return hdr[0];
}

static const lt_engine_i *mpi_engine(void) { return lt_engine_mpi(); }

static const lt_cli_mpi hooks = {
    /* .begin      = */ mpi_begin,
    /* .agree_exit = */ mpi_agree_exit,
    /* .end        = */ mpi_end,
    /* .engine     = */ mpi_engine,
    /* .case_agree = */ mpi_case_agree,
    /* .step_agree = */ mpi_step_agree,
};

const lt_cli_mpi *lt_cli_mpi_impl(void) { return &hooks; }
