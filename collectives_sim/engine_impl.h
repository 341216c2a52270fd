/* collectives_sim/engine_impl.h — engine internals shared inside
 * collectives_sim/ (not installed).
 *
 * The kernel path of the in-process engine (engine_kernels.c): collectives.c
 * asks it, group by group, which function moves the data.
 */
#ifndef LT_ENGINE_IMPL_H
#define LT_ENGINE_IMPL_H

#include "collectives_sim/engine.h"

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

#endif
