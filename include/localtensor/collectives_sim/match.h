/* collectives_sim/match.h — pairing per-rank collective calls, and "would
 * hang" detection (docs/SEMANTICS.md §12).
 *
 * A real runtime pairs the k-th collective a rank issues on a group with the
 * k-th collective of every other member of that group, whatever those calls
 * are. This module does that bookkeeping for a program in which every rank
 * issues its own calls (a per-rank C function, or scenario steps limited to
 * some ranks): it decides when a group's next call is complete and
 * consistent, and, when the program can go no further, says why — as a
 * structured report and as text. It moves no data: the caller runs the
 * collective (collectives_sim/program.c does, with collectives.h).
 *
 * A group is (mesh dim, group index along it); calls on different groups
 * never pair. A rank has at most one call in flight (collectives block).
 *
 * Point-to-point calls (send to a rank, recv from a rank) pair too: the
 * k-th send from rank s to rank d with the k-th recv of d from s (MPI's
 * non-overtaking order). A send blocks until its recv is posted (a
 * rendezvous, as MPI's standard mode may do, so a program that needs
 * buffering to finish is reported), and a recv until its send is; the
 * pair then completes together. See lt_match_call_p2p.
 *
 * Protocol:
 *   lt_match_new            every rank starts "running";
 *   lt_match_post           a running rank issues a call and waits; when it
 *                           is the last member of its group to arrive and
 *                           every member's call agrees, *ready is set: the
 *                           caller runs the collective, then
 *   lt_match_done           puts the members back to running;
 *   lt_match_finish/_fail   a rank's program ended (well / with an error);
 *   lt_match_check          when no rank runs any more: LT_OK if every rank
 *                           finished, else a report.
 * A group whose members have all arrived but disagree is never ready: its
 * members stay waiting, and lt_match_check reports the mismatch. Deciding
 * only once nothing can run keeps the report independent of the order in
 * which the caller ran the ranks: the set of calls waiting at that point is
 * the same for every order (each rank's calls depend only on its results).
 *
 * Reports pick, in this order: the lowest rank that failed; else the first
 * group (by mesh dim, then group index) whose waiting calls disagree, then
 * the lowest sending rank whose send and recv are posted but disagree; else
 * the first group with a waiting call that some member can no longer make
 * because it ended ("missing"), then the lowest rank waiting in a send or
 * recv whose peer ended; else a cycle of waits, found by starting at the
 * lowest waiting rank and following each rank to the lowest-numbered member
 * its group still waits for (a send or recv: to its peer).
 *
 * Not thread-safe: one thread drives a matcher.
 */
#ifndef LT_MATCH_H
#define LT_MATCH_H

#include <stdint.h>
#include <stdio.h>

#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/collectives_sim/trace.h"
#include "localtensor/kernels/export.h"
#include "localtensor/kernels/split.h"
#include "localtensor/kernels/tensor.h"

/* What a call is: a collective (`kind`), or one side of a point-to-point
 * transfer. */
typedef enum { LT_P2P_NONE = 0, LT_P2P_SEND, LT_P2P_RECV } lt_p2p;

/* One collective call of one rank: what a real runtime would have to agree
 * on. Fields that do not apply to the kind are ignored (set them to -1 /
 * NULL by starting from lt_match_call_init or lt_match_call_p2p). */
typedef struct lt_match_call {
    lt_coll kind;               /* LT_COLL_PERMUTE is not supported as a collective; a
                                 * point-to-point call carries LT_COLL_PERMUTE (see p2p) */
    int mesh_dim;
    int op;                     /* lt_redop: all_reduce, reduce, reduce_scatter; else -1 */
    int root; /* position in the group: broadcast, scatter, gather, reduce; else -1 */
    int has_tensor; /* 1: dtype/ndim/shape describe this rank's input; 0: none
                     * (barrier; the non-roots of broadcast and scatter may pass none) */
    lt_dtype dtype;
    int ndim;
    int64_t shape[LT_MAX_DIMS]; /* (ndim) */
    int dim;                    /* all_gather, gather, reduce_scatter, scatter: the tensor dim;
                                 * all_to_all: the split dim; else -1 */
    int concat_dim;             /* all_to_all; else -1 */
    const lt_split_rule *rule;  /* reduce_scatter, scatter, all_to_all; NULL = chunk. Borrowed
                                 * until the call completes (lt_match_done) or the run ends */
    const char *file;           /* source position of the call: borrowed, may be NULL */
    int line;
    const char *label;          /* optional name of the call; borrowed, may be NULL */
    int p2p;                    /* lt_p2p: LT_P2P_NONE for a collective */
    int peer;                   /* send: the rank sent to; recv: the rank received from (rank
                                 * ids, mesh.h); -1 for a collective. mesh_dim is -1. A send's
                                 * tensor is what it sends; a recv's, when has_tensor, the dtype
                                 * and shape it declares (the matched send's must equal them) */
} lt_match_call;

/* A call of `kind` on mesh_dim with no tensor and every optional field -1/NULL. */
LT_API lt_match_call lt_match_call_init(lt_coll kind, int mesh_dim, const char *file, int line);
/* A send (to = peer) or recv (from = peer) with no tensor (set it with
 * lt_match_call_set_tensor: a send's data, a recv's declared dtype and
 * shape). dir LT_P2P_NONE gives a call that lt_match_validate refuses. */
LT_API lt_match_call lt_match_call_p2p(lt_p2p dir, int peer, const char *file, int line);
/* Describes t (dtype, shape; a placeholder by its real zero-size shape) as
 * the call's input. t NULL: no tensor. */
LT_API void lt_match_call_set_tensor(lt_match_call *c, const lt_tensor *t);

/* Checks one call on its own, as its rank issues it on mesh m: a supported
 * kind, mesh dim in range, op and root where needed and in range, a tensor
 * where one is needed, dims in range of its shape, a split rule that can cut
 * this rank's dim into the group's pieces. Errors (LT_INVALID, or the split
 * rule's) say "FILE:LINE: rank R: KIND on mesh dim D: ...". These are the
 * caller's own mistakes, not disagreements between ranks. A point-to-point
 * call needs a peer that is a rank of the mesh other than `rank`, and a send
 * a tensor ("FILE:LINE: rank R: send(to=P): ..."). */
LT_API lt_status lt_match_validate(const lt_mesh *m, int rank, const lt_match_call *c);

/* ---- the matcher ------------------------------------------------------------ */

typedef struct lt_match lt_match;

/* A matcher for a program on mesh m (copied); every rank running. Free with
 * lt_match_free. LT_NOMEM. */
LT_API lt_status lt_match_new(const lt_mesh *m, lt_match **out);
LT_API void lt_match_free(lt_match *mt);
LT_API const lt_mesh *lt_match_mesh(const lt_match *mt);

/* Rank `rank` (running) issues call c (validated with lt_match_validate;
 * copied, its borrowed pointers kept) and waits. *ready is 1 when this
 * completes the group's next call and every member agrees: then *group is
 * its group index along c->mesh_dim and the caller runs the collective and
 * calls lt_match_done(mt, c->mesh_dim, *group). For a point-to-point call,
 * *ready is 1 when the peer already waits in the matching call and the two
 * agree: *group is then the peer's position and the caller moves the data
 * and calls lt_match_done_p2p(mt, sender, receiver) (positions). Errors:
 * LT_INVALID for a rank out of range or not running (nothing changes), or
 * the validation's. */
LT_API lt_status lt_match_post(lt_match *mt, int rank, const lt_match_call *c, int *ready,
                               int *group);
/* The group's next call ran: its members run again. LT_INVALID unless the
 * group was ready. */
LT_API lt_status lt_match_done(lt_match *mt, int mesh_dim, int group);
/* The pair (src sending, dst receiving; positions) completed: both run
 * again. LT_INVALID unless that pair was ready. */
LT_API lt_status lt_match_done_p2p(lt_match *mt, int src, int dst);
/* The call rank waits in (borrowed, valid until lt_match_done), or NULL. */
LT_API const lt_match_call *lt_match_pending(const lt_match *mt, int rank);
/* How many calls of group g along mesh_dim have completed. */
LT_API int64_t lt_match_calls_done(const lt_match *mt, int mesh_dim, int group);

/* Rank `rank` (running) ended its program: well (finish), or with status
 * st != LT_OK and message msg (fail; msg copied, may be NULL). LT_INVALID
 * for a rank out of range or not running; LT_NOMEM (fail only: the rank is
 * then marked failed without its message). A finished rank's report says
 * where it was last seen: finish_at's file:line, the last step its program
 * ran (file borrowed like a call's: until lt_match_check); with finish, or
 * file NULL, its last completed call (none: nothing is said). */
LT_API lt_status lt_match_finish(lt_match *mt, int rank);
LT_API lt_status lt_match_finish_at(lt_match *mt, int rank, const char *file, int line);
LT_API lt_status lt_match_fail(lt_match *mt, int rank, lt_status st, const char *msg);

/* ---- reports ------------------------------------------------------------------ */

/* XX(enum suffix, name) — the name is what scenarios and messages use. */
#define LT_HANG_MAP(XX)                 \
    XX(MISMATCH,    "mismatch")         \
    XX(MISSING,     "missing")          \
    XX(CYCLE,       "cycle")            \
    XX(RANK_FAILED, "rank_failed")

typedef enum {
#define LT__XX(e, s) LT_HANG_##e,
    LT_HANG_MAP(LT__XX)
#undef LT__XX
    LT_HANG_COUNT
} lt_hang_kind;

LT_API const char *lt_hang_kind_name(lt_hang_kind k);   /* "?" when out of range */
/* LT_INVALID naming the text and the known names otherwise. */
LT_API lt_status lt_hang_kind_parse(const char *s, lt_hang_kind *out);

typedef enum { LT_RANK_RUNNING, LT_RANK_WAITING, LT_RANK_FINISHED, LT_RANK_FAILED } lt_rank_state;

/* Where one rank is. */
typedef struct lt_match_where {
    lt_rank_state state;
    lt_match_call call;         /* WAITING: its call; file and label point into the report,
                                 * rule is NULL (see desc) */
    int group;                  /* WAITING: group index along call.mesh_dim; -1 for a
                                 * point-to-point call */
    int64_t seq;                /* WAITING: which call of that group (0 = its first); point to
                                 * point: which transfer between the two ranks this way */
    const char *desc;           /* WAITING: "all_reduce(op=sum) f32 (4)"; owned by the report */
    lt_status status;           /* FAILED: the rank's status */
    const char *last_file;      /* FINISHED: where it was last seen (owned by the report): the last
                                 * step it ran (last_is_step), else its last completed call; NULL:
                                 * neither is known */
    int last_line;
    int last_is_step;
} lt_match_where;

/* A group with waiting members whose next call cannot complete. */
typedef struct lt_match_stuck {
    int mesh_dim, group;
    int64_t seq;                /* the call they wait in (0 = the group's first) */
    int size;
    const int *members;         /* (size) ranks in group order; owned by the report */
} lt_match_stuck;

typedef struct lt_match_report {
    lt_hang_kind kind;
    lt_mesh mesh;
    int world;
    lt_match_where *ranks;      /* (world) every rank */
    int nstuck;
    lt_match_stuck *stuck;      /* (nstuck) by mesh dim, then group index */
    int focus;                  /* index into stuck of the group the report is about (CYCLE: the
                                 * one cycle[0] waits in); -1 for RANK_FAILED */
    int rank_a, rank_b;         /* MISMATCH: the member compared against and the first one that
                                 * differs; MISSING: the first waiting member and the first ended
                                 * one; RANK_FAILED: the failed rank (both) */
    const char *what;           /* MISMATCH: "the reduce op differs (sum vs max)"; else "" */
    const char *failed_msg;     /* RANK_FAILED: the rank's message ("" when none) */
    int ncycle;
    int *cycle;                 /* CYCLE: (ncycle) ranks; cycle[i] waits for cycle[i + 1] and the
                                 * last for cycle[0] */
    int on_pair;                /* MISMATCH, MISSING: 1 when the report is about a point-to-point
                                 * call (focus is -1): MISMATCH: rank_a sends, rank_b receives;
                                 * MISSING: rank_a waits for rank_b, which ended */
    char *pool;                 /* (internal) the report's strings */
    size_t pool_len, pool_cap;
    int *members_;              /* (internal) the block the stuck groups' members live in */
} lt_match_report;

/* When no rank of the program runs any more: LT_OK and *out NULL when every
 * rank finished. Otherwise a report in *out (free with
 * lt_match_report_free), with lt_errmsg() set to its headline, and the
 * status: the failed rank's status for RANK_FAILED, LT_MISMATCH for the
 * hang kinds. LT_INVALID (no report) while a rank still runs or a ready
 * group awaits lt_match_done; LT_NOMEM. */
LT_API lt_status lt_match_check(const lt_match *mt, lt_match_report **out);
LT_API void lt_match_report_free(lt_match_report *r);

/* The report as text: a headline ("would hang (missing): ...", with the
 * citation) and, for each stuck group (the headline's first, at most 16),
 * where each member is ("waiting in CALL at F:L", "waiting elsewhere, in
 * CALL on GROUP at F:L", "finished after its last step at F:L" / "... call
 * at F:L" / "finished", "failed (STATUS)"; ranks with the same position
 * merged). At most `cap` bytes go to buf (NUL-terminated when cap > 0);
 * returns the length the full text needs, as snprintf does. */
LT_API size_t lt_match_report_format(const lt_match_report *r, char *buf, size_t cap);
/* The whole text (lt_match_report_format's) into *out, owned by the caller
 * (free with lt_match_text_free); LT_NOMEM and *out NULL when any part of it
 * could not be made. */
LT_API lt_status lt_match_report_text(const lt_match_report *r, char **out);
LT_API void lt_match_text_free(char *text);
/* The same to f. */
LT_API void lt_match_report_print(const lt_match_report *r, FILE *f);
/* The headline alone into buf (as lt_match_report_format). */
LT_API size_t lt_match_report_headline(const lt_match_report *r, char *buf, size_t cap);

/* "all_reduce(op=sum) f32 (4)", "barrier", "all_to_all(split_dim=0,
 * concat_dim=1, rule=balanced) f32 (8, 2)", "send(to=1) f32 (4)",
 * "recv(from=0)" (+ ' "label"') into buf; returns the length it wanted. */
LT_API size_t lt_match_call_desc(const lt_match_call *c, char *buf, size_t cap);

#endif
