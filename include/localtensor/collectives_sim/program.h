/* collectives_sim/program.h — run a C function once per simulated rank, with
 * collectives as rendezvous points (docs/SEMANTICS.md §12).
 *
 * lt_program_run calls fn(proc, user_data) once for every rank of a mesh.
 * The ranks run one at a time, cooperatively, each on its own small stack:
 * a rank runs until it calls a collective (or returns), then the next
 * runnable rank runs, in a fixed order — so a run is deterministic and
 * needs no locks. Inside fn a rank asks who it is (lt_proc_rank,
 * lt_proc_coord, ...) and calls collectives on its own tensors
 * (lt_proc_all_reduce, ...), written like the per-process calls of a real
 * SPMD program; each records the source position of the call.
 *
 * A collective completes when every member of the rank's group along that
 * mesh dim has issued its next call on the group and the calls agree
 * (collectives_sim/match.h has the rules): the data then moves with the
 * collectives of collectives.h and every member resumes with its result.
 * When the calls disagree, when a rank ends while others wait for it, or
 * when the waits form a cycle across groups, the run stops — on a cluster
 * it would hang — and lt_program_run returns LT_MISMATCH with a report
 * saying which ranks wait in which call (file:line) and where the others
 * are. A rank whose fn returns an error stops the run too.
 *
 * When the run stops, every rank still waiting resumes with its call
 * failing (LT_MISMATCH, "... cancelled: ..."), and so does every later
 * collective it calls, so that fn can release what it holds and return:
 * fn must return once its collectives fail. The report is fixed before
 * that, and is the same whatever order the ranks ran in.
 *
 * Inside fn:
 * - lt_errmsg() is shared by all ranks of the run (one thread): read it
 *   right after the call that failed, before the next collective.
 * - Tensors may be shared between ranks (e.g. read-only inputs set up
 *   before the run); a rank must not free what another rank still uses.
 * - Stacks are small (LT_PROGRAM_STACK by default): keep big arrays on the
 *   heap. The collectives themselves run on the caller's stack.
 * - A handle `proc` is valid only inside its own rank's fn, during the run.
 *
 * Outputs of the collectives: `*out` NULL on entry receives a NEW tensor the
 * rank owns (free with lt_tensor_free); a non-NULL `*out` is a preallocated
 * contiguous tensor of exactly the result's dtype and shape, overwritten
 * (collectives.h). gather and reduce give the non-roots a placeholder
 * (kernels/tensor.h). On error `*out` is as it was on entry. Inputs are
 * borrowed for the duration of the call.
 */
#ifndef LT_PROGRAM_H
#define LT_PROGRAM_H

#include <stddef.h>

#include "localtensor/collectives_sim/match.h"
#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/split.h"
#include "localtensor/kernels/tensor.h"

/* Default stack per rank (bytes); under AddressSanitizer four times more. */
#define LT_PROGRAM_STACK (256u * 1024u)

typedef struct lt_proc lt_proc;

/* A rank's program. Returns LT_OK, or an error status that stops the run
 * (its lt_errmsg() goes into the report). */
typedef lt_status (*lt_proc_fn)(lt_proc *proc, void *user_data);

typedef struct lt_program_options {
    size_t stack_size;        /* bytes of stack per rank; 0: LT_PROGRAM_STACK */
} lt_program_options;

/* Runs fn once per rank of mesh (opt may be NULL). Returns:
 *   LT_OK        every rank's fn returned LT_OK; *report = NULL;
 *   LT_MISMATCH  the program would hang (kind mismatch, missing or cycle);
 *   another      a rank's fn returned that status (kind rank_failed; the
 *                lowest such rank is reported);
 * in these two cases *report (when report is not NULL) receives the report
 * (free with lt_match_report_free) and lt_errmsg() its headline. Setup
 * errors (LT_INVALID for a NULL fn or a bad mesh, LT_NOMEM, LT_OVERFLOW for
 * stacks that do not fit) return with *report NULL and nothing run. */
LT_API lt_status lt_program_run(const lt_mesh *mesh, lt_proc_fn fn, void *user_data,
                                const lt_program_options *opt, lt_match_report **report);

/* ---- inside fn: who am I --------------------------------------------------- */

/* The rank id (its mesh position on an arange mesh; mesh.h's rank ids otherwise). */
LT_API int lt_proc_rank(const lt_proc *p);
LT_API int lt_proc_world(const lt_proc *p);
LT_API const lt_mesh *lt_proc_mesh(const lt_proc *p);
/* The rank's coordinate along mesh_dim (= its position in its group along
 * it), its group's index and its group's size; -1 for a mesh dim out of range. */
LT_API int lt_proc_coord(const lt_proc *p, int mesh_dim);
LT_API int lt_proc_group(const lt_proc *p, int mesh_dim);
LT_API int lt_proc_group_size(const lt_proc *p, int mesh_dim);
/* Names this rank's next collectives in reports ("grad sync"); NULL: none.
 * Borrowed: the text must outlive the run (a string literal does). */
LT_API void lt_proc_set_label(lt_proc *p, const char *label);

/* ---- inside fn: collectives -------------------------------------------------- */
/* Each waits until its group's call completes. Argument errors that need no
 * other rank (mesh dim, op, root, dims out of range; a NULL input; a split
 * rule that cannot cut this rank's dim) fail at once (LT_INVALID,
 * "FILE:LINE: rank R: ..."), issuing nothing. The macros record the caller's
 * file and line; the _at functions take them (file borrowed like labels). */

LT_API lt_status lt_proc_all_reduce_at(lt_proc *p, const char *file, int line, int mesh_dim,
                                       const lt_tensor *in, lt_redop op, lt_tensor **out);
LT_API lt_status lt_proc_all_gather_at(lt_proc *p, const char *file, int line, int mesh_dim,
                                       const lt_tensor *in, int dim, lt_tensor **out);
/* rule NULL: chunk */
LT_API lt_status lt_proc_reduce_scatter_at(lt_proc *p, const char *file, int line, int mesh_dim,
                                           const lt_tensor *in, lt_redop op, int dim,
                                           const lt_split_rule *rule, lt_tensor **out);
LT_API lt_status lt_proc_all_to_all_at(lt_proc *p, const char *file, int line, int mesh_dim,
                                       const lt_tensor *in, int split_dim, int concat_dim,
                                       const lt_split_rule *rule, lt_tensor **out);
/* `in` is read on the root only; other ranks may pass NULL (when they pass a
 * tensor, its dtype and shape must be the root's). */
LT_API lt_status lt_proc_broadcast_at(lt_proc *p, const char *file, int line, int mesh_dim,
                                      const lt_tensor *in, int root, lt_tensor **out);
/* `in` is read on the root only; other ranks may pass NULL. */
LT_API lt_status lt_proc_scatter_at(lt_proc *p, const char *file, int line, int mesh_dim,
                                    const lt_tensor *in, int root, int dim,
                                    const lt_split_rule *rule, lt_tensor **out);
LT_API lt_status lt_proc_gather_at(lt_proc *p, const char *file, int line, int mesh_dim,
                                   const lt_tensor *in, int root, int dim, lt_tensor **out);
LT_API lt_status lt_proc_reduce_at(lt_proc *p, const char *file, int line, int mesh_dim,
                                   const lt_tensor *in, int root, lt_redop op, lt_tensor **out);
LT_API lt_status lt_proc_barrier_at(lt_proc *p, const char *file, int line, int mesh_dim);

/* ---- inside fn: point to point (docs/SEMANTICS.md §12) ------------------------ */
/* lt_proc_send sends t (borrowed until it returns) to rank `to`, a rank id
 * as lt_proc_rank gives; lt_proc_recv receives from rank `from`. The k-th
 * send from one rank to another pairs with the other's k-th recv from it
 * (MPI's non-overtaking order). Both block until the pair is posted: a
 * send waits for its recv (a rendezvous, which MPI's standard-mode send is
 * allowed to be), so a program that would need the send buffered — every
 * rank of a ring sending first — is reported as a cycle. On the recv,
 * `*out` NULL on entry receives a NEW tensor (free with lt_tensor_free):
 * a copy of what was sent; a non-NULL `*out` is a contiguous tensor that
 * declares the dtype and shape expected: a matched send whose tensor
 * differs stops the run with a mismatch report; otherwise the data is
 * copied into it. A peer that is not a rank of the mesh, or the rank
 * itself, fails at once (LT_INVALID, "FILE:LINE: rank R: send(to=P): ...").
 * While a rank waits in a send or recv, it waits for that one peer. */
LT_API lt_status lt_proc_send_at(lt_proc *p, const char *file, int line, const lt_tensor *t,
                                 int to);
LT_API lt_status lt_proc_recv_at(lt_proc *p, const char *file, int line, int from,
                                 lt_tensor **out);

#define lt_proc_send(p, t, to) lt_proc_send_at((p), __FILE__, __LINE__, (t), (to))
#define lt_proc_recv(p, from, out) lt_proc_recv_at((p), __FILE__, __LINE__, (from), (out))

#define lt_proc_all_reduce(p, md, in, op, out)                                                     \
    lt_proc_all_reduce_at((p), __FILE__, __LINE__, (md), (in), (op), (out))
#define lt_proc_all_gather(p, md, in, dim, out)                                                    \
    lt_proc_all_gather_at((p), __FILE__, __LINE__, (md), (in), (dim), (out))
#define lt_proc_reduce_scatter(p, md, in, op, dim, rule, out) \
    lt_proc_reduce_scatter_at((p), __FILE__, __LINE__, (md), (in), (op), (dim), (rule), (out))
#define lt_proc_all_to_all(p, md, in, sd, cd, rule, out) \
    lt_proc_all_to_all_at((p), __FILE__, __LINE__, (md), (in), (sd), (cd), (rule), (out))
#define lt_proc_broadcast(p, md, in, root, out)                                                    \
    lt_proc_broadcast_at((p), __FILE__, __LINE__, (md), (in), (root), (out))
#define lt_proc_scatter(p, md, in, root, dim, rule, out) \
    lt_proc_scatter_at((p), __FILE__, __LINE__, (md), (in), (root), (dim), (rule), (out))
#define lt_proc_gather(p, md, in, root, dim, out)                                                  \
    lt_proc_gather_at((p), __FILE__, __LINE__, (md), (in), (root), (dim), (out))
#define lt_proc_reduce(p, md, in, root, op, out)                                                   \
    lt_proc_reduce_at((p), __FILE__, __LINE__, (md), (in), (root), (op), (out))
#define lt_proc_barrier(p, md) lt_proc_barrier_at((p), __FILE__, __LINE__, (md))

#endif
