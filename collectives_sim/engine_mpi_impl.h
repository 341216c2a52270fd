/* collectives_sim/engine_mpi_impl.h — what the two halves of the MPI engine
 * share (not installed): engine_mpi.c (the communicators of every group,
 * agreement between processes, dispatch) and engine_mpi_paths.c (the
 * collectives' MPI paths and the cross-check). See collectives_sim/engine_mpi.h.
 */
#ifndef LT_ENGINE_MPI_IMPL_H
#define LT_ENGINE_MPI_IMPL_H

#include <mpi.h>

#include "localtensor/collectives_sim/engine_mpi.h"

#define SHW (1 + LT_MAX_DIMS) /* a shape row: ndim (-1: absent), then the dims */

typedef struct grp_info {
    MPI_Comm comm;     /* MPI_COMM_NULL when the group lies in one process or not here */
    int nproc;         /* processes owning members */
    int me;            /* my rank in comm, -1 when I own no member */
    int *lo, *cnt;     /* (nproc) first member position and member count per comm rank */
    int mine_lo, mine_cnt;
} grp_info;

typedef struct mpi_ctx {
    lt_mesh mesh;
    int nproc, proc;
    int nown;                            /* processes that own ranks: min(nproc, world) */
    grp_info **gi;                       /* the comm_set's (borrowed) */
    const lt_engine_i *ip;
    void *ipctx;
    lt_mpi_options opt;
    int *ids;                            /* (world) 0..world-1: ranks of the local fake groups */
    lt_tensor **tin, **tout;             /* (world) scratch arrays of the local fake groups */
    lt_tensor **eout;                    /* (world) shadow mode: where MPI writes owned results */
    lt_tensor **scr;                     /* (world) shadow mode: those scratch results */
    MPI_Datatype types[4];               /* contiguous 1, 2, 4, 8 bytes */
    lt_status pending;                   /* the caller's own status for the next path's first
                                          * agreement (one agreement, not two; LT_OK: none) */
} mpi_ctx;

/* The collective a call runs. */
typedef enum { K_AG, K_AR, K_RS, K_A2A, K_BC, K_SC, K_GA, K_RE, K_PE } kind;

/* 1 when the last error of lt__mpi_agree only echoes another process's
 * (world agreement then names the process that failed first). */
extern int lt__mpi_echo;
/* How many agreements (over the world, and within a group before its data
 * moves) this process has been through: what the test suite's hang
 * detector reads (tools/run-mpi-tests.sh, through gdb) to tell a slow run
 * from a stuck one. */
extern long lt__mpi_progress;

/* All processes of group gi agree: LT_OK when every one had st == LT_OK;
 * else this process's own error, or an error saying another failed.
 * Collective over gi->comm. */
lt_status lt__mpi_agree(const grp_info *gi, lt_status st);
/* The in-process engine's entry for collective k. */
lt_coll_fn lt__mpi_ip_fn(const lt_engine_i *ip, kind k);

/* The MPI path of collective k for a group that spans processes: my
 * members' results in out (caller-owned, already shaped by the wrapper);
 * in is borrowed. Agrees over the group before data moves, folding
 * c->pending (a failure of the caller's own preparation) into that first
 * agreement and resetting it. In shadow mode (c->opt.shadow: every process
 * holds every member's input) the members' shapes are read locally instead
 * of exchanged. */
lt_status lt__mpi_path(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g, lt_tensor *const *in,
                       lt_tensor *const *out, kind k);
/* Every member's input gathered here, the group run by the in-process
 * engine, and my members' results compared byte for byte with what MPI
 * produced (LT_INVALID naming the rank). Allocates and frees its own
 * scratch; collective over the group. */
lt_status lt__mpi_cross_check(mpi_ctx *c, const grp_info *gi, const lt_coll_group *g,
                              lt_tensor *const *in, lt_tensor *const *out, kind k);

#endif
