/* localtensor/suggest_impl.h — "did you mean ...?" for mistyped names (not
 * installed).
 *
 * A user who types `Shad(0)` or `tensr:` should be told the name that was
 * probably meant, not only the list of valid ones. The match is the smallest
 * case-insensitive edit distance (insert, delete, substitute, swap of two
 * neighbours), accepted only when it is small next to the word's length so
 * that `X` does not "mean" `R`.
 */
#ifndef LT_SUGGEST_IMPL_H
#define LT_SUGGEST_IMPL_H

#include <stddef.h>

/* The entry of names[n] (NULL entries are skipped) closest to `word`, or NULL
 * when none is close enough: distance <= 2 and at most half the word's length
 * (a difference of letter case alone always counts as close). Returns a
 * pointer into names (borrowed). Words longer than 63 characters get NULL. */
const char *lt__suggest(const char *word, const char *const *names, int n);

/* " (did you mean 'X'?)" into buf when a suggestion exists, else "". Always
 * NUL-terminates; returns buf. */
char *lt__suggest_hint(const char *word, const char *const *names, int n, char *buf, size_t cap);

#endif
