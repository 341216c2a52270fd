/* localtensor/pytorch_bugs.h — known PyTorch DTensor bugs, as data, and the
 * checks that say when a step of a program matches one.
 *
 * localtensor computes the correct result everywhere; users run PyTorch. When
 * a step (a distribute, a redistribute, an op) matches the pattern of a bug
 * that PyTorch is known to have, the CLI and the traces print the entry's
 * warning, so the user learns where their real job will differ from the
 * simulation. Each entry names the PyTorch versions it affects and the issue
 * or pull request that describes it; scenarios/pytorch_bugs/ holds one
 * scenario per entry showing the correct result (docs/SEMANTICS.md §10).
 */
#ifndef LT_PYTORCH_BUGS_H
#define LT_PYTORCH_BUGS_H

#include <stddef.h>
#include <stdint.h>

#include "localtensor/kernels/export.h"
#include "localtensor/ops.h"
#include "localtensor/spec.h"

/* XX(enum suffix, name) — one line per entry; the table itself is in
 * pytorch_bugs.c. */
#define LT_PYTORCH_BUG_MAP(XX)                                                                     \
    XX(UNEVEN_STRIDED, "uneven_strided")                                                           \
    XX(STRIDED_REDISTRIBUTE, "strided_redistribute")                                               \
    XX(NONCHUNK_SIZES, "nonchunk_sizes")                                                           \
    XX(EMPTY_SHARD_OFFSET, "empty_shard_offset")                                                   \
    XX(MAX_EMPTY_SHARD, "max_empty_shard")                                                         \
    XX(MEAN_UNEVEN, "mean_uneven")

typedef enum {
#define LT__XX(e, s) LT_PYTORCH_BUG_##e,
    LT_PYTORCH_BUG_MAP(LT__XX)
#undef LT__XX
        LT_PYTORCH_BUG_COUNT
} lt_pytorch_bug;

/* One entry of the table (static data). */
typedef struct lt_pytorch_bug_info {
    const char *name;      /* "uneven_strided" */
    const char *versions;  /* the PyTorch versions affected, in words */
    const char *reference; /* "pytorch issue 168134" */
    const char *pattern;   /* what the check matches, in words */
    const char *warning;   /* what PyTorch does there and what to do instead */
} lt_pytorch_bug_info;

/* The entry of bug b (NULL when out of range). */
LT_API const lt_pytorch_bug_info *lt_pytorch_bug_get(lt_pytorch_bug b);

/* The checks. Each returns a bit set: bit b set when the step matches entry
 * b. They read checked specs (lt_spec_init or a DTensor's) and never fail. */
/* A layout (distribute_tensor, from_local, a state shown by `show`). */
LT_API uint32_t lt_pytorch_bugs_layout(const lt_spec *s);
/* A redistribute of src to dst (dst: mesh ndim checked placements); the
 * layouts of both count too. */
LT_API uint32_t lt_pytorch_bugs_redistribute(const lt_spec *src, const lt_placement *dst);
/* An op on inputs in[nin] with args (NULL: all zero): the op's own patterns
 * (the inputs' layouts are checked where they were made). */
LT_API uint32_t lt_pytorch_bugs_op(lt_op_kind op, const lt_spec *const *in, int nin,
                                   const lt_op_args *args);

/* "warning: PyTorch ...: <warning> (<reference>; <versions>)" for bug b,
 * into buf (snprintf semantics; returns the length it wanted). */
LT_API int lt_pytorch_bug_format(lt_pytorch_bug b, char *buf, size_t n);

#endif
