/* kernels/split.h — how a dimension of n elements is cut into k pieces.
 *
 * The uneven rules of docs/SEMANTICS.md §11.1 live here, at the bottom floor, because
 * both collectives (reduce_scatter, scatter, all_to_all) and placements need
 * them. A rule is a small value; lt_split_sizes (and lt_split_piece, its
 * one-piece form) are the only places sizes are computed.
 *
 * An explicit rule does not carry its sizes inline: it points at an
 * immutable, interned list (lt_split_explicit), so rules, placements and
 * everything built from them stay small and cheap to copy and hash, and
 * equal lists share one copy for the life of the process.
 */
#ifndef LT_SPLIT_H
#define LT_SPLIT_H

#include <stdint.h>

#include "localtensor/kernels/export.h"
#include "localtensor/kernels/status.h"

/* Most explicit per-rank sizes one rule can carry (one per member of a group). */
#define LT_SPLIT_MAX_EXPLICIT 64

/* XX(enum suffix, name users type) */
#define LT_SPLIT_MAP(XX)          \
    XX(CHUNK,    "chunk")         \
    XX(BALANCED, "balanced")      \
    XX(LAST,     "last")          \
    XX(EXPLICIT, "explicit")

typedef enum {
#define LT__XX(e, s) LT_SPLIT_##e,
    LT_SPLIT_MAP(LT__XX)
#undef LT__XX
    LT_SPLIT_COUNT
} lt_split_kind;

typedef struct lt_split_rule {
    lt_split_kind kind;
    int nsizes;                               /* EXPLICIT only: number of sizes */
    const int64_t *sizes;                     /* EXPLICIT only: (nsizes) size of piece j;
                                               * interned by lt_split_explicit, never freed */
} lt_split_rule;

/* The default rule (torch.chunk). */
LT_API lt_split_rule lt_split_chunk(void);

/* An explicit rule with sizes[n] (copied; the values are checked where the
 * rule is used, by lt_split_sizes). The copy is interned: immutable, shared
 * with every equal list, valid until the process exits. Errors: LT_INVALID
 * when n is outside 0..LT_SPLIT_MAX_EXPLICIT or sizes is NULL with n > 0,
 * LT_NOMEM. */
LT_API lt_status lt_split_explicit(const int64_t *sizes, int n, lt_split_rule *out);

/* "chunk", ...; "?" when out of range. */
LT_API const char *lt_split_kind_name(lt_split_kind k);
/* Parses a rule named by a word: "chunk", "balanced" or "last" (the kinds
 * before LT_SPLIT_EXPLICIT, whose sizes are written as a list). LT_INVALID
 * naming the text and the words otherwise. */
LT_API lt_status lt_split_kind_parse(const char *s, lt_split_kind *out);

/* Sizes of the k pieces of a dim of n elements under `rule`, into sizes[k].
 * Errors (LT_INVALID, message says which): k < 1, n < 0, `last` with n < k,
 * explicit sizes whose count != k, a negative size, or sizes not summing to n. */
LT_API lt_status lt_split_sizes(const lt_split_rule *rule, int64_t n, int k, int64_t *sizes);

/* Size and offset of piece j alone, in O(1) for chunk/balanced/last (callers
 * that want one rank's piece of a large group must not build all k sizes).
 * Same errors as lt_split_sizes, plus j outside 0..k-1 (LT_INVALID). */
LT_API lt_status lt_split_piece(const lt_split_rule *rule, int64_t n, int k, int j, int64_t *size,
                                int64_t *offset);

/* Same, also writes offsets[k] (prefix sums). Either array may be NULL. */
LT_API lt_status lt_split_sizes_offsets(const lt_split_rule *rule, int64_t n, int k,
                                        int64_t *sizes, int64_t *offsets);

/* StridedShard(sf) over k members (docs/SEMANTICS.md §4): the positions, in a list
 * of n, that member c keeps, in local order — chunk c (chunk rule over k) of
 * each of the sf chunk-rule pieces of the list. Writes them into pos (room
 * for n; pos may be NULL to only count) and returns how many there are. */
LT_API int64_t lt_split_strided_positions(int64_t n, int sf, int k, int c, int64_t *pos);

LT_API int lt_split_rule_equal(const lt_split_rule *a, const lt_split_rule *b);

/* Writes the user spelling ("chunk", "balanced", "last", "[3,1,0,2]") into
 * buf (always NUL-terminated); returns the length it wanted. */
LT_API int lt_split_rule_format(const lt_split_rule *r, char *buf, size_t n);

#endif
