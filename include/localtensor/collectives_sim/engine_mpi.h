/* collectives_sim/engine_mpi.h — the MPI engine: the engine table
 * (collectives_sim/engine.h) filled with Open MPI, so the simulated ranks of
 * a mesh are spread over real processes.
 *
 * Built only where `mpicc` exists (make MPI=1, or by default when mpicc is
 * on PATH) into its own archive, build/liblocaltensor-mpi.a: liblocaltensor
 * itself never needs libmpi. The caller initialises MPI (MPI_Init) before
 * creating a communicator on this engine and finalises it after freeing the
 * last one.
 *
 * Ownership: with P processes and a mesh of W ranks (1 <= P <= W), process p
 * owns the contiguous block of ranks [floor(p*W/P), floor((p+1)*W/P)). In
 * every collective the engine reads in[r] and writes out[r] only for the
 * ranks r this process owns; the other entries are never touched (they may
 * be NULL). A group whose members all live in this process is computed by
 * the in-process engine; a group that spans processes runs on an MPI
 * communicator made once per (mesh shape, mesh dim, group), when the first
 * communicator of that mesh shape is created, and kept until
 * lt_engine_mpi_release. lt_comm_new_engine is collective over
 * MPI_COMM_WORLD: every process must create the same communicators, and
 * call the same collectives on them, in the same order.
 *
 * MPI mapping (counts in elements of the dtype, so uneven shards are the
 * general case): all_gather = MPI_Allgatherv; gather = MPI_Gatherv;
 * broadcast = MPI_Bcast; scatter = MPI_Scatterv; all_to_all, reduce_scatter
 * and permute = MPI_Alltoallv; all_reduce = MPI_Allgatherv then a local
 * reduction; reduce = MPI_Gatherv then a local reduction at the root.
 * Reductions are not given to MPI's own ops: MPI may reduce in any order
 * (and has no bf16/f16), while the simulator reduces in group order with
 * bf16/f16 accumulated in f32 and rounded once. Moving the pieces with MPI
 * and reducing them with the in-process engine's kernel gives results
 * bit-identical to an in-process run, for every op and dtype.
 *
 * Errors: every process of a group agrees on success before data moves,
 * and through the wrappers (collectives_sim/collectives.h) every process of
 * the world agrees before a call (the wrapper's own checks and outputs)
 * and after its last group (engine.h `agree`): a failure on one process
 * (out of memory, a cross-check difference) fails the same call on every
 * process, with the failing process's message, so no process is left
 * waiting in a collective the others never reach. A process that ends its
 * unit of work before a call the others make answers that call with its
 * own outcome (lt_engine_mpi_end_unit). Called directly, the
 * table's collectives agree within a spanning group only. Messages larger than 2^31-1 elements
 * are LT_UNSUPPORTED ("not supported yet").
 */
#ifndef LT_ENGINE_MPI_H
#define LT_ENGINE_MPI_H

#include "localtensor/collectives_sim/engine.h"
#include "localtensor/kernels/export.h"

/* The MPI engine's table (name "mpi"). */
LT_API const lt_engine_i *lt_engine_mpi(void);

/* The process owning simulated rank r when a mesh of `world` ranks is
 * spread over `nproc` processes. */
LT_API int lt_mpi_owner(int world, int nproc, int r);
/* The block of process p: first rank and count. */
LT_API void lt_mpi_block(int world, int nproc, int p, int *first, int *count);

typedef struct lt_mpi_options {
    /* 1: every collective of a group that spans processes is also run by
     * the in-process engine on the members' inputs (gathered to every
     * member's process), and any byte of an owned result that differs is an
     * LT_INVALID error naming the rank (the wrapper adds the collective and
     * the group). */
    int cross_check;
    /* test only: 1 swaps the pieces of group members 0 and 1 when
     * all_gather's MPI path unpacks (a planted bug --cross-check must
     * find). Also set by the environment variable LT_MPI_PLANT_SWAP=1. */
    int plant_swap;
    /* 1: every process holds every rank's shards (the scenario runner's
     * mode until distributed tensors can leave other ranks' shards out):
     * owned results still come from MPI, the other ranks' results are
     * computed in-process, so every later step finds the shards it needs.
     * With cross_check, the in-process results of owned ranks are compared
     * with MPI's at no extra communication. */
    int shadow;
    /* 1: a mesh with fewer ranks than processes runs on the first `world`
     * processes (the others own no rank); 0: that is an LT_INVALID error */
    int idle_extra;
} lt_mpi_options;

/* Frees the MPI communicators kept for every mesh shape seen so far
 * (lt_comm_new_engine makes one per group of a shape the first time, then
 * reuses them). Collective: every process calls it, after freeing its
 * communicators and before MPI_Finalize. */
LT_API void lt_engine_mpi_release(void);

/* Options for the communicators created from now on in this process
 * (process-wide, as MPI's own state is). */
LT_API void lt_engine_mpi_set_options(const lt_mpi_options *o);

/* A process that ends a unit of work early (a scenario case: an error
 * before a collective the others still call, e.g. a memory refusal under
 * its own budget) would leave the others waiting in that collective. Every
 * process calls lt_engine_mpi_end_unit at the end of every unit, before any
 * other communication over MPI_COMM_WORLD; st, tag and msg: this process's
 * stop (LT_OK: it ran the unit to its end; tag: carried as it is). Until
 * every process has called it, each communicator made and each collective
 * call another process makes fails there with the status and message of the
 * lowest process that stopped, "(on process P)" appended, so they too reach
 * the end of the unit. vals (NULL: none): two ints of the caller's,
 * replaced by their minimum over every process (an agreement of the
 * caller's own at the end of the unit, at no extra communication).
 * Collective over MPI_COMM_WORLD; a no-op on one process. */
LT_API void lt_engine_mpi_end_unit(lt_status st, int tag, const char *msg, int *vals);
/* Makes this program's waits in MPI polite when the cores are shared:
 * Open MPI, oversubscribed (mpi_yield_when_idle), yields the core after
 * each poll that found nothing, and a yield hands it to any other program
 * running for a whole time slice; from this call on, a process whose yield
 * took over 1 ms sleeps a few microseconds instead of yielding for the
 * next 10 ms. Calling it links in a replacement of sched_yield for the
 * whole program (collectives_sim/engine_mpi_yield.c), the system call
 * until then. The CLI calls it for --engine mpi. */
LT_API void lt_engine_mpi_polite_wait(void);

/* After a call failed that way: the process that stopped (its status, tag
 * and message into *st, *tag, msg[cap]), and forgets it; -1 when the last
 * such failure has been asked for already or there was none. */
LT_API int lt_engine_mpi_echo(lt_status *st, int *tag, char *msg, size_t cap);

#endif
