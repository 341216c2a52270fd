/* localtensor/suggest.c — closest-name suggestions for error messages
 * (see suggest_impl.h). Pure functions over short strings: a bounded
 * optimal-string-alignment distance on the stack, no allocation. */
#include "localtensor/suggest_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define SUGGEST_MAX 64

/* Case-insensitive optimal string alignment distance of a[la] and b[lb]
 * (both < SUGGEST_MAX). */
static int distance(const char *a, size_t la, const char *b, size_t lb) {
    int d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

const char *lt__suggest(const char *word, const char *const *names, int n) {
    if (!word || !names) return NULL;
    size_t lw = strlen(word);
    if (lw == 0 || lw >= SUGGEST_MAX) return NULL;
    const char *best = NULL;
    int bd = 1 << 30;
    for (int i = 0; i < n; i++) {
        if (!names[i]) continue;
        size_t ln = strlen(names[i]);
        if (ln >= SUGGEST_MAX) continue;
        int dd = distance(word, lw, names[i], ln);
        if (dd < bd) bd = dd, best = names[i];
    }
    if (!best) return NULL;
    if (bd == 0) return strcmp(best, word) ? best : NULL; /* case only; identical: nothing to say */
    return bd <= 2 && 2 * (size_t)bd <= lw ? best : NULL;
}

char *lt__suggest_hint(const char *word, const char *const *names, int n, char *buf, size_t cap) {
    if (!cap) return buf;
    const char *s = lt__suggest(word, names, n);
    if (s) snprintf(buf, cap, " (did you mean '%s'?)", s);
    else buf[0] = '\0';
    return buf;
}
