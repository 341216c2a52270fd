/* collectives_sim/match_text.c — would-hang reports and calls as text
 * (match.h). Kept apart from the matcher: only wording lives here.
 *
 * Every writer appends to a bounded buffer and counts what it wanted, so
 * lt_match_report_format has snprintf's contract and never allocates.
 */
#include "localtensor/collectives_sim/match.h"
#include "kernels/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/kernels/dtype.h"
#include "kernels/status_impl.h"

#define MAX_GROUPS 16     /* stuck groups written out in full */
#define MAX_LINES 8       /* distinct positions listed per group */
#define MAX_RANKS 12      /* ranks listed in one rank list */
#define LINE_CAP 1024

/* ---- calls -------------------------------------------------------------------------- */

static const char *op_name(int op) {
    return op >= 0 && op < LT_REDOP_COUNT ? lt_redop_name((lt_redop)op) : "?";
}

size_t lt_match_call_desc(const lt_match_call *c, char *buf, size_t cap) {
    lt__sbuf o = {buf, cap, 0};
    if (c->p2p == LT_P2P_SEND || c->p2p == LT_P2P_RECV)
        lt__sb_printf(&o, c->p2p == LT_P2P_SEND ? "send(to=%d)" : "recv(from=%d)", c->peer);
    else
        lt__sb_printf(&o, "%s", lt_coll_name(c->kind));
    char rule[256] = "";
    if (c->rule && c->rule->kind != LT_SPLIT_CHUNK) {
        char rs[240];
        lt_split_rule_format(c->rule, rs, sizeof rs);
        snprintf(rule, sizeof rule, ", rule=%s", rs);
    }
    switch (c->p2p ? LT_COLL_COUNT : c->kind) {
    case LT_COLL_ALL_REDUCE: lt__sb_printf(&o, "(op=%s)", op_name(c->op)); break;
    case LT_COLL_REDUCE: lt__sb_printf(&o, "(op=%s, root=%d)", op_name(c->op), c->root); break;
    case LT_COLL_REDUCE_SCATTER:
        lt__sb_printf(&o, "(op=%s, dim=%d%s)", op_name(c->op), c->dim, rule);
        break;
    case LT_COLL_ALL_GATHER: lt__sb_printf(&o, "(dim=%d)", c->dim); break;
    case LT_COLL_GATHER: lt__sb_printf(&o, "(root=%d, dim=%d)", c->root, c->dim); break;
    case LT_COLL_SCATTER: lt__sb_printf(&o, "(root=%d, dim=%d%s)", c->root, c->dim, rule); break;
    case LT_COLL_BROADCAST: lt__sb_printf(&o, "(root=%d)", c->root); break;
    case LT_COLL_ALL_TO_ALL:
        lt__sb_printf(&o, "(split_dim=%d, concat_dim=%d%s)", c->dim, c->concat_dim, rule);
        break;
    default: break;
    }
    if (c->has_tensor) {
        char ss[128];
        lt__sb_printf(&o, " %s %s", lt_dtype_name(c->dtype),
                      lt_shape_format(c->ndim, c->shape, ss, sizeof ss));
    }
    if (c->label && c->label[0]) lt__sb_printf(&o, " \"%s\"", c->label);
    return lt__sb_finish(&o);
}

/* ---- pieces ------------------------------------------------------------------------- */

/* "mesh dim 1 (tp), group 2 [4,5,6,7]" (long groups elided in the middle) */
static void put_group(lt__sbuf *o, const lt_mesh *m, int d, int g) {
    lt__sb_printf(o, "mesh dim %d", d);
    if (m->names[d][0]) lt__sb_printf(o, " (%s)", m->names[d]);
    lt__sb_printf(o, ", group %d [", g);
    int n = m->shape[d], st = 1;
    for (int j = d + 1; j < m->ndim; j++) st *= m->shape[j];
    int base = (g / st) * n * st + g % st; /* lt_mesh_group's numbering, without an n-rank buffer */
    for (int p = 0; p < n; p++) {
        if (n > 12 && p == 8) {
            lt__sb_printf(o, ",...");
            p = n - 3;
        }
        lt__sb_printf(o, "%s%d", p ? "," : "", lt_mesh_rank_id(m, base + p * st));
    }
    lt__sb_printf(o, "]");
}

static void put_at(lt__sbuf *o, const lt_match_call *c) {
    if (c->file) lt__sb_printf(o, " at %s:%d", c->file, c->line);
}

/* "rank 3" / "ranks 0-3, 6" of the ranks r[0..n) (positions, ascending),
 * the first MAX_RANKS runs written out; on a permuted mesh r becomes the
 * rank ids, ascending (r is scratch) */
static void put_ranks(lt__sbuf *o, const lt_mesh *m, int *r, int n) {
    for (int i = 0; m->permuted && i < n; i++) {   /* ids, by insertion: n is one group */
        int v = lt_mesh_rank_id(m, r[i]), j = i;
        for (; j > 0 && r[j - 1] > v; j--) r[j] = r[j - 1];
        r[j] = v;
    }
    lt__sb_printf(o, "%s ", n == 1 ? "rank" : "ranks");
    int runs = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && r[j + 1] == r[j] + 1) j++;
        if (runs == MAX_RANKS) {
            lt__sb_printf(o, ", ... (%d ranks in all)", n);
            return;
        }
        lt__sb_printf(o, "%s%d", runs ? ", " : "", r[i]);
        if (j > i) lt__sb_printf(o, "%s%d", j == i + 1 ? ", " : "-", r[j]);
        runs++;
        i = j + 1;
    }
}

static int waits_in(const lt_match_report *r, int q, const lt_match_stuck *s) {
    const lt_match_where *w = &r->ranks[q];
    return w->state == LT_RANK_WAITING && !w->call.p2p && w->call.mesh_dim == s->mesh_dim &&
           w->group == s->group;
}

/* where rank q is, seen from stuck group s */
static void put_where(lt__sbuf *o, const lt_match_report *r, int q, const lt_match_stuck *s) {
    const lt_match_where *w = &r->ranks[q];
    switch (w->state) {
    case LT_RANK_FINISHED:
        lt__sb_printf(o, "finished");
        if (w->last_file)   /* where it was last seen (match.h) */
            lt__sb_printf(o, " after its last %s at %s:%d", w->last_is_step ? "step" : "call",
                          w->last_file, w->last_line);
        return;
    case LT_RANK_FAILED: lt__sb_printf(o, "failed (%s)", lt_status_name(w->status)); return;
    case LT_RANK_RUNNING: lt__sb_printf(o, "running"); return;
    default: break;
    }
    if ((s && waits_in(r, q, s)) || (!s && w->call.p2p)) {
        lt__sb_printf(o, "waiting in %s", w->desc ? w->desc : "?");
        put_at(o, &w->call);
        return;
    }
    if (w->call.p2p) {   /* a send or recv: no group */
        lt__sb_printf(o, "waiting elsewhere, in %s", w->desc ? w->desc : "?");
        put_at(o, &w->call);
        return;
    }
    lt__sb_printf(o, "waiting elsewhere, in %s on ", w->desc ? w->desc : "?");
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

/* The headline of a report about a send or recv (r->on_pair), without the
 * citation. */
static void pair_headline(lt__sbuf *o, const lt_match_report *r) {
    const lt_match_where *a = &r->ranks[r->rank_a], *b = &r->ranks[r->rank_b];
    int ida = lt_mesh_rank_id(&r->mesh, r->rank_a), idb = lt_mesh_rank_id(&r->mesh, r->rank_b);
    if (r->kind == LT_HANG_MISMATCH) {
        lt__sb_printf(o, "would hang (mismatch): rank %d calls %s", ida, a->desc);
        put_at(o, &a->call);
        lt__sb_printf(o, " but rank %d calls %s", idb, b->desc);
        put_at(o, &b->call);
        lt__sb_printf(o, ": %s", r->what);
        return;
    }
    lt__sb_printf(o, "would hang (missing): rank %d waits in %s", ida, a->desc);
    put_at(o, &a->call);
    lt__sb_printf(o, "; rank %d finished without %s rank %d", idb,
                  a->call.p2p == LT_P2P_RECV ? "sending to" : "receiving from", ida);
    if (b->last_file)
        lt__sb_printf(o, " (after its last %s at %s:%d)", b->last_is_step ? "step" : "call",
                      b->last_file, b->last_line);
}

/* nomem (when given): set to 1 when a part was left out for want of memory */
static void headline(lt__sbuf *o, const lt_match_report *r, int *nomem) {
    const lt_match_stuck *s = r->focus >= 0 && r->focus < r->nstuck ? &r->stuck[r->focus] : NULL;
    const lt_match_where *a = &r->ranks[r->rank_a], *b = &r->ranks[r->rank_b];
    int ida = lt_mesh_rank_id(&r->mesh, r->rank_a), idb = lt_mesh_rank_id(&r->mesh, r->rank_b);
    switch (r->kind) {
    case LT_HANG_RANK_FAILED:
        lt__sb_printf(o, "rank %d failed (%s)%s%s", ida, lt_status_name(a->status),
            r->failed_msg && r->failed_msg[0] ? ": " : "", r->failed_msg ? r->failed_msg : "");
        return;
    case LT_HANG_MISMATCH:
    case LT_HANG_MISSING:
        if (!r->on_pair) break;
        pair_headline(o, r);
        lt__sb_printf(o, " (docs/SEMANTICS.md §12)");
        return;
    default: break;
    }
    switch (r->kind) {
    case LT_HANG_MISMATCH:
        lt__sb_printf(o, "would hang (mismatch): on ");
        put_group(o, &r->mesh, s->mesh_dim, s->group);
        lt__sb_printf(o, ", call #%lld: rank %d calls %s", (long long)s->seq + 1, ida,
                      a->desc);
        put_at(o, &a->call);
        lt__sb_printf(o, " but rank %d calls %s", idb, b->desc);
        put_at(o, &b->call);
        lt__sb_printf(o, ": %s", r->what);
        break;
    case LT_HANG_MISSING: {
        lt__sb_printf(o, "would hang (missing): on ");
        put_group(o, &r->mesh, s->mesh_dim, s->group);
        lt__sb_printf(o, ", call #%lld: rank %d waits in %s", (long long)s->seq + 1, ida,
                      a->desc);
        put_at(o, &a->call);
        lt__sb_printf(o, ", but rank %d %s without making that call", idb,
            b->state == LT_RANK_FAILED ? "failed" : "finished");
        int *tmp = lt__malloc((size_t)s->size * sizeof *tmp);
        if (tmp) {
            lt__sb_printf(o, " (waiting: ");
            put_ranks(o, &r->mesh, tmp, collect(r, s, 1, tmp));
            lt__sb_printf(o, "; ended: ");
            put_ranks(o, &r->mesh, tmp, collect(r, s, 0, tmp));
            lt__sb_printf(o, ")");
            lt__free(tmp);
        } else if (nomem) {
            *nomem = 1;
        }
        break;
    }
    case LT_HANG_CYCLE:
        lt__sb_printf(o, "would hang (cycle): every rank waits for another: ");
        for (int i = 0; i < r->ncycle; i++) {
            const lt_match_where *w = &r->ranks[r->cycle[i]];
            lt__sb_printf(o, "%srank %d waits in %s", i ? "; " : "",
                          lt_mesh_rank_id(&r->mesh, r->cycle[i]), w->desc);
            put_at(o, &w->call);
            if (!w->call.p2p) {
                lt__sb_printf(o, " on ");
                put_group(o, &r->mesh, w->call.mesh_dim, w->group);
            }
            lt__sb_printf(o, " for rank %d",
                          lt_mesh_rank_id(&r->mesh, r->cycle[(i + 1) % r->ncycle]));
        }
        break;
    default: lt__sb_printf(o, "?"); return;
    }
    lt__sb_printf(o, " (docs/SEMANTICS.md §12)");
}

size_t lt_match_report_headline(const lt_match_report *r, char *buf, size_t cap) {
    lt__sbuf o = {buf, cap, 0};
    if (r) headline(&o, r, NULL);
    return lt__sb_finish(&o);
}

/* ---- details ----------------------------------------------------------------------------- */

/* One stuck group: members with the same position merged into one line. */
static void put_stuck(lt__sbuf *o, const lt_match_report *r, const lt_match_stuck *s, int *which,
                      int *list) {
    char text[MAX_LINES][LINE_CAP], line[LINE_CAP];
    int nd = 0, others = 0;
    lt__sb_printf(o, "\n  ");
    put_group(o, &r->mesh, s->mesh_dim, s->group);
    lt__sb_printf(o, ", call #%lld:", (long long)s->seq + 1);
    for (int p = 0; p < s->size; p++) {
        lt__sbuf lo = {line, sizeof line, 0};
        put_where(&lo, r, s->members[p], s);
        lt__sb_finish(&lo);
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
        lt__sb_printf(o, "\n    ");
        put_ranks(o, &r->mesh, list, n);
        lt__sb_printf(o, ": %s", text[k]);
    }
    if (others)
        lt__sb_printf(o, "\n    ... and %d more rank%s elsewhere", others, others == 1 ? "" : "s");
}

/* Every rank waiting in a send or recv (at most MAX_GROUPS * MAX_LINES),
 * each with where its peer is. */
static void put_p2p(lt__sbuf *o, const lt_match_report *r) {
    int shown = 0, more = 0;
    for (int q = 0; q < r->world; q++) {
        const lt_match_where *w = &r->ranks[q];
        if (w->state != LT_RANK_WAITING || !w->call.p2p) continue;
        int peer = lt_mesh_pos_of(&r->mesh, w->call.peer);
        const lt_match_where *pw = peer >= 0 ? &r->ranks[peer] : NULL;
        if (pw && peer < q && pw->state == LT_RANK_WAITING && pw->call.p2p &&
            pw->call.peer == lt_mesh_rank_id(&r->mesh, q))
            continue;   /* the pair's line is its peer's */
        if (shown == MAX_GROUPS * MAX_LINES) {
            more++;
            continue;
        }
        if (!shown++) lt__sb_printf(o, "\n  point to point:");
        lt__sb_printf(o, "\n    rank %d: ", lt_mesh_rank_id(&r->mesh, q));
        put_where(o, r, q, NULL);
        if (peer < 0) continue;
        lt__sb_printf(o, "; rank %d: ", w->call.peer);
        put_where(o, r, peer, NULL);
    }
    if (more) lt__sb_printf(o, "\n    ... and %d more ranks in a send or recv", more);
}

/* As lt_match_report_format; *nomem (when given) set to 1 when the details
 * could not be written for want of memory. */
static size_t format(const lt_match_report *r, char *buf, size_t cap, int *nomem) {
    lt__sbuf o = {buf, cap, 0};
    if (!r) return lt__sb_finish(&o);
    headline(&o, r, nomem);
    int biggest = 1;
    for (int i = 0; i < r->nstuck; i++)
        if (r->stuck[i].size > biggest) biggest = r->stuck[i].size;
    int *which = lt__malloc((size_t)biggest * sizeof *which),
        *list = lt__malloc((size_t)biggest * sizeof *list);
    if (!which || !list) {
        if (nomem) *nomem = 1;
        lt__sb_printf(&o, "\n  (out of memory for the details)");
    } else {
        /* the group the headline is about first, then the others in order */
        if (r->focus >= 0 && r->focus < r->nstuck)
            put_stuck(&o, r, &r->stuck[r->focus], which, list);
        for (int i = 0, shown = r->focus >= 0; i < r->nstuck && shown < MAX_GROUPS; i++)
            if (i != r->focus) {
                put_stuck(&o, r, &r->stuck[i], which, list);
                shown++;
            }
        if (r->nstuck > MAX_GROUPS)
            lt__sb_printf(&o, "\n  ... and %d more groups that wait", r->nstuck - MAX_GROUPS);
        put_p2p(&o, r);
    }
    lt__free(which);
    lt__free(list);
    lt__sb_printf(&o, "\n");
    return lt__sb_finish(&o);
}

size_t lt_match_report_format(const lt_match_report *r, char *buf, size_t cap) {
    return format(r, buf, cap, NULL);
}

lt_status lt_match_report_text(const lt_match_report *r, char **out) {
    int nomem = 0;
    size_t need = format(r, NULL, 0, &nomem);
    char *t = nomem || need == SIZE_MAX ? NULL : lt__malloc(need + 1);
    if (t) format(r, t, need + 1, &nomem);
    if (!t || nomem) {
        lt__free(t);
        *out = NULL;
        return lt__err(LT_NOMEM, "out of memory");
    }
    *out = t;
    return LT_OK;
}

void lt_match_text_free(char *text) { lt__free(text); }

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
