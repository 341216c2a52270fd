/* collectives_sim/engine_impl.h — engine internals shared inside
 * collectives_sim/ (not installed).
 *
 * The kernel path of the in-process engine (engine_kernels.c): collectives.c
 * asks it, group by group, which function moves the data. And the size of
 * the pieces the in-process engine splits a call into (collectives.c reads
 * it to choose between running groups at the same time and splitting each).
 */
#ifndef LT_ENGINE_IMPL_H
#define LT_ENGINE_IMPL_H

#include <stddef.h>

#include "localtensor/collectives_sim/engine.h"

/* fn itself, or, when fn is one of the in-process engine's functions (its
 * engine, or one built from its table) and every tensor of the group lives on
 * one backend that launches kernels (cuda, cuda-emu), the same collective
 * done with that backend's kernels; a group mixing backends with one off the
 * host gets a function that refuses it ("not supported yet"). */
lt_coll_fn lt__engine_kernels_fn(const lt_engine_i *eng, lt_coll_fn fn, const lt_coll_group *g,
                                 lt_tensor *const *in, lt_tensor *const *out);
/* The name errors give for collectives done by the kernel path:
 * "inproc-kernels". */
const char *lt__engine_kernels_name(void);

/* The in-process engine splits one group's call across the pool's threads
 * into element ranges of about this many bytes (read and written), from two
 * such pieces on: a sixteenth of lt__par_min_bytes(), 1 MiB by default.
 * Handing a section to the workers costs about 10 microseconds, a tenth of
 * what copying 1 MiB takes, so smaller calls stay on one thread. */
#define LT__INPROC_PIECE_DIV 16
size_t lt__inproc_piece_bytes(void);

/* Most pieces per thread of such a split: the pieces are handed out one by
 * one, so a thread that started late (a busy machine) takes fewer. */
#define LT__INPROC_PIECES_PER_THREAD 8

/* Results shared between groups whose members' inputs are the same buffers
 * (collectives.c) are, by default, only shared between groups this process
 * holds whole: a group that spans processes is computed on each of them, so
 * every process makes the same MPI calls. With on = 1, groups with absent
 * members (lt_tensor_absent) share too: the caller promises that on every
 * process two members' inputs are the same views exactly when the shards
 * are replicas held by the same process (lt_redistribute's stand-ins are
 * made so), so every process decides alike. */
void lt__comm_share_absent(lt_comm *c, int on);
/* Every process of c's engine ends with the same outcome (engine.h `agree`;
 * st: this process's): for work between collectives that may fail on one
 * process only, so that none enters a collective the others skip. st as it
 * is without an `agree` entry (one process). */
lt_status lt__comm_agree(lt_comm *c, lt_status st);
/* *out: a communicator over c's mesh with the adjacent mesh dims first ..
 * first + span - 1 (span >= 2) flattened into mesh dim `first`
 * (lt_mesh_flatten: the same positions; each group the product group,
 * members in row-major order), on c's engine, recording into c's trace
 * (its events: mesh dim `first`, the product group's size). Borrowed from
 * c: made on first use (on every process of the engine alike), freed with
 * c. Errors: bad dims (LT_INVALID, "internal: ..."), those of
 * lt_comm_new_engine. */
lt_status lt__comm_flat(lt_comm *c, int first, int span, lt_comm **out);

#endif
