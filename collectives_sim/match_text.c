/* collectives_sim/match_text.c — would-hang reports and calls as text
 * (match.h). Kept apart from the matcher: only wording lives here.
 *
 * Every writer appends to a bounded buffer and counts what it wanted, so
 * lt_match_report_format has snprintf's contract and never allocates.
 */
#include "collectives_sim/match.h"
#include "kernels/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"

#define MAX_GROUPS 16     /* stuck groups written out in full */
#define MAX_LINES 8       /* distinct positions listed per group */
#define MAX_RANKS 12      /* ranks listed in one rank list */
#define LINE_CAP 1024

typedef struct out {
    char *buf;
    size_t cap, len;      /* len: what the full text needs so far */
} out;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(out *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int w = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (w > 0) o->len += (size_t)w;
}

static size_t finish(out *o) {
    if (o->cap) o->buf[o->len < o->cap ? o->len : o->cap - 1] = '\0';
    return o->len;
}

/* ---- calls -------------------------------------------------------------------------- */

static const char *op_name(int op) { return op >= 0 && op < LT_REDOP_COUNT ? lt_redop_name((lt_redop)op) : "?"; }

size_t lt_match_call_desc(const lt_match_call *c, char *buf, size_t cap) {
    out o = {buf, cap, 0};
    put(&o, "%s", lt_coll_name(c->kind));
    char rule[256] = "";
    if (c->rule && c->rule->kind != LT_SPLIT_CHUNK) {
        char rs[240];
        lt_split_rule_format(c->rule, rs, sizeof rs);
        snprintf(rule, sizeof rule, ", rule=%s", rs);
    }
    switch (c->kind) {
    case LT_COLL_ALL_REDUCE: put(&o, "(op=%s)", op_name(c->op)); break;
    case LT_COLL_REDUCE: put(&o, "(op=%s, root=%d)", op_name(c->op), c->root); break;
    case LT_COLL_REDUCE_SCATTER: put(&o, "(op=%s, dim=%d%s)", op_name(c->op), c->dim, rule); break;
    case LT_COLL_ALL_GATHER: put(&o, "(dim=%d)", c->dim); break;
    case LT_COLL_GATHER: put(&o, "(root=%d, dim=%d)", c->root, c->dim); break;
    case LT_COLL_SCATTER: put(&o, "(root=%d, dim=%d%s)", c->root, c->dim, rule); break;
    case LT_COLL_BROADCAST: put(&o, "(root=%d)", c->root); break;
    case LT_COLL_ALL_TO_ALL: put(&o, "(split_dim=%d, concat_dim=%d%s)", c->dim, c->concat_dim, rule); break;
    default: break;
    }
    if (c->has_tensor) {
        char ss[128];
        put(&o, " %s %s", lt_dtype_name(c->dtype), lt_shape_str(c->ndim, c->shape, ss, sizeof ss));
    }
    if (c->label && c->label[0]) put(&o, " \"%s\"", c->label);
    return finish(&o);
}

/* ---- pieces ------------------------------------------------------------------------- */

/* "mesh dim 1 (tp), group 2 [4,5,6,7]" (long groups elided in the middle) */
static void put_group(out *o, const lt_mesh *m, int d, int g) {
    put(o, "mesh dim %d", d);
    if (m->names[d][0]) put(o, " (%s)", m->names[d]);
    put(o, ", group %d [", g);
    int n = m->shape[d], st = 1;
    for (int j = d + 1; j < m->ndim; j++) st *= m->shape[j];
    int base = (g / st) * n * st + g % st; /* lt_mesh_group's numbering, without an n-rank buffer */
    for (int p = 0; p < n; p++) {
        if (n > 12 && p == 8) {
            put(o, ",...");
            p = n - 3;
        }
        put(o, "%s%d", p ? "," : "", base + p * st);
    }
    put(o, "]");
}

static void put_at(out *o, const lt_match_call *c) {
    if (c->file) put(o, " at %s:%d", c->file, c->line);
}

/* "rank 3" / "ranks 0-3, 6" of the ranks r[0..n) (ascending), the first
 * MAX_RANKS runs written out */
static void put_ranks(out *o, const int *r, int n) {
    put(o, "%s ", n == 1 ? "rank" : "ranks");
    int runs = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && r[j + 1] == r[j] + 1) j++;
        if (runs == MAX_RANKS) {
            put(o, ", ... (%d ranks in all)", n);
            return;
        }
        put(o, "%s%d", runs ? ", " : "", r[i]);
        if (j > i) put(o, "%s%d", j == i + 1 ? ", " : "-", r[j]);
        runs++;
        i = j + 1;
    }
}

static int waits_in(const lt_match_report *r, int q, const lt_match_stuck *s) {
    const lt_match_where *w = &r->ranks[q];
    return w->state == LT_RANK_WAITING && w->call.mesh_dim == s->mesh_dim && w->group == s->group;
}

/* where rank q is, seen from stuck group s */
static void put_where(out *o, const lt_match_report *r, int q, const lt_match_stuck *s) {
    const lt_match_where *w = &r->ranks[q];
    switch (w->state) {
    case LT_RANK_FINISHED: put(o, "finished"); return;
    case LT_RANK_FAILED: put(o, "failed (%s)", lt_status_str(w->status)); return;
    case LT_RANK_RUNNING: put(o, "running"); return;
    default: break;
    }
    if (s && waits_in(r, q, s)) {
        put(o, "waiting in %s", w->desc ? w->desc : "?");
        put_at(o, &w->call);
        return;
    }
    put(o, "waiting elsewhere, in %s on ", w->desc ? w->desc : "?");
    put_group(o, &r->mesh, w->call.mesh_dim, w->group);
    put_at(o, &w->call);
}

/* members of s that wait in it (want 1) or that ended (want 0) */
static int collect(const lt_match_report *r, const lt_match_stuck *s, int want, int *dst) {
    int n = 0;
    for (int p = 0; p < s->size; p++) {
        int q = s->members[p];
        const lt_match_where *w = &r->ranks[q];
        int ended = w->state == LT_RANK_FINISHED || w->state == LT_RANK_FAILED;
        if (want ? waits_in(r, q, s) : ended) dst[n++] = q;
    }
    return n;
}

/* ---- headline ------------------------------------------------------------------------ */

static void headline(out *o, const lt_match_report *r) {
    const lt_match_stuck *s = r->focus >= 0 && r->focus < r->nstuck ? &r->stuck[r->focus] : NULL;
    const lt_match_where *a = &r->ranks[r->rank_a], *b = &r->ranks[r->rank_b];
    switch (r->kind) {
    case LT_HANG_RANK_FAILED:
        put(o, "rank %d failed (%s)%s%s", r->rank_a, lt_status_str(a->status),
            r->failed_msg && r->failed_msg[0] ? ": " : "", r->failed_msg ? r->failed_msg : "");
        return;
    case LT_HANG_MISMATCH:
        put(o, "would hang (mismatch): on ");
        put_group(o, &r->mesh, s->mesh_dim, s->group);
        put(o, ", call #%lld: rank %d calls %s", (long long)s->seq + 1, r->rank_a, a->desc);
        put_at(o, &a->call);
        put(o, " but rank %d calls %s", r->rank_b, b->desc);
        put_at(o, &b->call);
        put(o, ": %s", r->what);
        break;
    case LT_HANG_MISSING: {
        put(o, "would hang (missing): on ");
        put_group(o, &r->mesh, s->mesh_dim, s->group);
        put(o, ", call #%lld: rank %d waits in %s", (long long)s->seq + 1, r->rank_a, a->desc);
        put_at(o, &a->call);
        put(o, ", but rank %d %s without making that call", r->rank_b,
            b->state == LT_RANK_FAILED ? "failed" : "finished");
        int *tmp = lt__malloc((size_t)s->size * sizeof *tmp);
        if (tmp) {
            put(o, " (waiting: ");
            put_ranks(o, tmp, collect(r, s, 1, tmp));
            put(o, "; ended: ");
            put_ranks(o, tmp, collect(r, s, 0, tmp));
            put(o, ")");
            lt__free(tmp);
        }
        break;
    }
    case LT_HANG_CYCLE:
        put(o, "would hang (cycle): every rank waits for another: ");
        for (int i = 0; i < r->ncycle; i++) {
            const lt_match_where *w = &r->ranks[r->cycle[i]];
            put(o, "%srank %d waits in %s", i ? "; " : "", r->cycle[i], w->desc);
            put_at(o, &w->call);
            put(o, " on ");
            put_group(o, &r->mesh, w->call.mesh_dim, w->group);
            put(o, " for rank %d", r->cycle[(i + 1) % r->ncycle]);
        }
        break;
    default: put(o, "?"); return;
    }
    put(o, " (docs/SEMANTICS.md §12)");
}

size_t lt_match_report_headline(const lt_match_report *r, char *buf, size_t cap) {
    out o = {buf, cap, 0};
    if (r) headline(&o, r);
    return finish(&o);
}

/* ---- details ----------------------------------------------------------------------------- */

/* One stuck group: members with the same position merged into one line. */
static void put_stuck(out *o, const lt_match_report *r, const lt_match_stuck *s, int *which, int *list) {
    char text[MAX_LINES][LINE_CAP], line[LINE_CAP];
    int nd = 0, others = 0;
    put(o, "\n  ");
    put_group(o, &r->mesh, s->mesh_dim, s->group);
    put(o, ", call #%lld:", (long long)s->seq + 1);
    for (int p = 0; p < s->size; p++) {
        out lo = {line, sizeof line, 0};
        put_where(&lo, r, s->members[p], s);
        finish(&lo);
        which[p] = -1;
        for (int k = 0; k < nd && which[p] < 0; k++)
            if (strcmp(text[k], line) == 0) which[p] = k;
        if (which[p] < 0 && nd < MAX_LINES) {
            memcpy(text[nd], line, sizeof line);
            which[p] = nd++;
        }
        if (which[p] < 0) others++;
    }
    for (int k = 0; k < nd; k++) {
        int n = 0;
        for (int p = 0; p < s->size; p++)
            if (which[p] == k) list[n++] = s->members[p];
        put(o, "\n    ");
        put_ranks(o, list, n);
        put(o, ": %s", text[k]);
    }
    if (others) put(o, "\n    ... and %d more rank%s elsewhere", others, others == 1 ? "" : "s");
}

size_t lt_match_report_format(const lt_match_report *r, char *buf, size_t cap) {
    out o = {buf, cap, 0};
    if (!r) return finish(&o);
    headline(&o, r);
    int biggest = 1;
    for (int i = 0; i < r->nstuck; i++)
        if (r->stuck[i].size > biggest) biggest = r->stuck[i].size;
    int *which = lt__malloc((size_t)biggest * sizeof *which), *list = lt__malloc((size_t)biggest * sizeof *list);
    if (!which || !list) {
        put(&o, "\n  (out of memory for the details)");
    } else {
        /* the group the headline is about first, then the others in order */
        if (r->focus >= 0 && r->focus < r->nstuck) put_stuck(&o, r, &r->stuck[r->focus], which, list);
        for (int i = 0, shown = r->focus >= 0; i < r->nstuck && shown < MAX_GROUPS; i++)
            if (i != r->focus) {
                put_stuck(&o, r, &r->stuck[i], which, list);
                shown++;
            }
        if (r->nstuck > MAX_GROUPS) put(&o, "\n  ... and %d more groups that wait", r->nstuck - MAX_GROUPS);
    }
    lt__free(which);
    lt__free(list);
    put(&o, "\n");
    return finish(&o);
}

void lt_match_report_print(const lt_match_report *r, FILE *f) {
    char small[4096];
    size_t need = lt_match_report_format(r, small, sizeof small);
    if (need < sizeof small) {
        fputs(small, f);
        return;
    }
    char *big = lt__malloc(need + 1);
    if (!big) {
        fputs(small, f);
        fputs("\n(report cut: out of memory)\n", f);
        return;
    }
    lt_match_report_format(r, big, need + 1);
    fputs(big, f);
    lt__free(big);
}
