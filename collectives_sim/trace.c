/* collectives_sim/trace.c — the comm trace (see trace.h for the bytes model).
 *
 * Storage: events in one array; their per-rank byte arrays in one pool of
 * size_t (2 * world entries per event: sent then recv), addressed by offset
 * so the pool can grow by realloc; labels interned in one char pool. All
 * three grow geometrically and keep their capacity across lt_trace_clear, so
 * a steady-state record is a memset and a few stores.
 */
#include "collectives_sim/cost.h"
#include "collectives_sim/trace_impl.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct trace_ev {
    lt_coll coll;
    int mesh_dim, ngroups, group_size;
    lt_dtype dtype;
    int op, root, dim, concat_dim;
    size_t pool_off;            /* sent at pool[pool_off], recv at pool[pool_off + world] */
    size_t label_off;           /* into labels; NO_LABEL when none */
    size_t total_sent, total_recv;
} trace_ev;

#define NO_LABEL ((size_t)-1)

struct lt_trace {
    int world;
    int enabled;
    trace_ev *ev;               /* (n) */
    size_t n, cap;
    size_t *pool;               /* (pool_cap) */
    size_t pool_len, pool_cap;
    char *labels;               /* (labels_cap) NUL-separated */
    size_t labels_len, labels_cap;
    size_t cur_label;           /* offset of the current label, or NO_LABEL */
};

static const struct {
    int a, b, c, d;
} coll_table[] = {
#define LT__XX(e, s, a, b, c, d) {a, b, c, d},
    LT_COLL_MAP(LT__XX)
#undef LT__XX
};

double lt_coll_busbw_factor(lt_coll c, int n) {
    if ((int)c < 0 || c >= LT_COLL_COUNT || n < 1) return 0.0;
    double num = (double)coll_table[c].a * n + coll_table[c].b;
    double den = (double)coll_table[c].c * n + coll_table[c].d;
    return num / den;
}

lt_status lt_trace_new(int world, lt_trace **out) {
    *out = NULL;
    if (world < 1) return lt__err(LT_INVALID, "trace: world size %d must be >= 1", world);
    lt_trace *t = lt__calloc(1, sizeof *t);
    if (!t) return lt__err(LT_NOMEM, "trace: out of memory");
    t->world = world;
    t->enabled = 1;
    t->cur_label = NO_LABEL;
    *out = t;
    return LT_OK;
}

void lt_trace_free(lt_trace *t) {
    if (!t) return;
    lt__free(t->ev);
    lt__free(t->pool);
    lt__free(t->labels);
    lt__free(t);
}

int lt_trace_enable(lt_trace *t, int on) {
    int old = t->enabled;
    t->enabled = on != 0;
    return old;
}

int lt_trace_enabled(const lt_trace *t) { return t->enabled; }

void lt_trace_clear(lt_trace *t) {
    t->n = 0;
    t->pool_len = 0;
    if (t->cur_label != NO_LABEL) {
        size_t len = strlen(t->labels + t->cur_label) + 1;
        memmove(t->labels, t->labels + t->cur_label, len);
        t->labels_len = len;
        t->cur_label = 0;
    } else {
        t->labels_len = 0;
    }
}

size_t lt_trace_count(const lt_trace *t) { return t->n; }
size_t lt_trace_marker(const lt_trace *t) { return t->n; }

lt_status lt_trace_get(const lt_trace *t, size_t i, lt_trace_event *ev) {
    if (i >= t->n)
        return lt__err(LT_INVALID, "trace: event %zu out of range (%zu events)", i, t->n);
    const trace_ev *e = &t->ev[i];
    ev->coll = e->coll;
    ev->mesh_dim = e->mesh_dim;
    ev->ngroups = e->ngroups;
    ev->group_size = e->group_size;
    ev->dtype = e->dtype;
    ev->op = e->op;
    ev->root = e->root;
    ev->dim = e->dim;
    ev->concat_dim = e->concat_dim;
    ev->world = t->world;
    ev->sent = t->pool + e->pool_off;
    ev->recv = t->pool + e->pool_off + (size_t)t->world;
    ev->total_sent = e->total_sent;
    ev->total_recv = e->total_recv;
    ev->label = e->label_off == NO_LABEL ? "" : t->labels + e->label_off;
    return LT_OK;
}

void lt_trace_totals_since(const lt_trace *t, size_t since, lt_trace_totals *out) {
    memset(out, 0, sizeof *out);
    for (size_t i = since; i < t->n; i++) {
        out->events++;
        out->bytes_sent += t->ev[i].total_sent;
        out->bytes_recv += t->ev[i].total_recv;
        out->per_coll[t->ev[i].coll]++;
    }
}

/* Grows *buf (elements of esize) to hold at least `need`, doubling. */
static int grow(void **buf, size_t *cap, size_t need, size_t esize) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / esize) return 1;
        nc *= 2;
    }
    void *p = lt__realloc(*buf, nc * esize);
    if (!p) return 1;
    *buf = p;
    *cap = nc;
    return 0;
}

lt_status lt_trace_set_label(lt_trace *t, const char *label) {
    if (!label || !label[0]) {
        t->cur_label = NO_LABEL;
        return LT_OK;
    }
    if (t->cur_label != NO_LABEL && strcmp(t->labels + t->cur_label, label) == 0) return LT_OK;
    size_t len = strlen(label) + 1;
    void *buf = t->labels;
    if (grow(&buf, &t->labels_cap, t->labels_len + len, 1))
        return lt__err(LT_NOMEM, "trace: out of memory for label");
    t->labels = buf;
    memcpy(t->labels + t->labels_len, label, len);
    t->cur_label = t->labels_len;
    t->labels_len += len;
    return LT_OK;
}

lt_status lt__trace_reserve(lt_trace *t) {
    if (!t->enabled) return LT_OK;
    void *e = t->ev, *p = t->pool;
    if (grow(&e, &t->cap, t->n + 1, sizeof(trace_ev)))
        return lt__err(LT_NOMEM, "trace: out of memory (%zu events)", t->n);
    t->ev = e;
    if (grow(&p, &t->pool_cap, t->pool_len + 2 * (size_t)t->world, sizeof(size_t)))
        return lt__err(LT_NOMEM, "trace: out of memory (%zu events)", t->n);
    t->pool = p;
    return LT_OK;
}

int lt__trace_record(lt_trace *t, lt_coll coll, int mesh_dim, int ngroups, int group_size,
                     lt_dtype dt, size_t **sent, size_t **recv) {
    if (!t->enabled) return 0;
    LT_ASSERT(t->n < t->cap && t->pool_len + 2 * (size_t)t->world <= t->pool_cap);
    trace_ev *e = &t->ev[t->n++];
    e->coll = coll;
    e->mesh_dim = mesh_dim;
    e->ngroups = ngroups;
    e->group_size = group_size;
    e->dtype = dt;
    e->op = e->root = e->dim = e->concat_dim = -1;
    e->pool_off = t->pool_len;
    e->label_off = t->cur_label;
    e->total_sent = e->total_recv = 0;
    size_t *s = t->pool + t->pool_len;
    t->pool_len += 2 * (size_t)t->world;
    memset(s, 0, 2 * (size_t)t->world * sizeof *s);
    *sent = s;
    *recv = s + t->world;
    return 1;
}

void lt__trace_set_args(lt_trace *t, int op, int root, int dim, int concat_dim) {
    if (!t->enabled || t->n == 0) return;
    trace_ev *e = &t->ev[t->n - 1];
    e->op = op;
    e->root = root;
    e->dim = dim;
    e->concat_dim = concat_dim;
}

static size_t nbytes_or0(const lt_tensor *t) { return t ? lt_nbytes(t) : 0; }

/* Member p's part (collectives_sim/cost.h) of one group's call, from the
 * inputs and the arguments only: a trace on paper (localtensor/plan/
 * plan_trace.c) hands outputs that carry the right shape only where a split
 * rule cuts (reduce_scatter, scatter). */
typedef struct group_call {
    lt_coll coll;
    int n, root, dim;
    const int *rk;
    lt_tensor *const *in, *const *out;
    const int64_t *sizes;
    size_t total; /* all_gather, gather: the members' input bytes, summed */
    size_t in0;   /* reductions: member 0's input bytes (the members' inputs share a shape) */
    const size_t *rows; /* all_to_all: (n) bytes of one row along dim of each member's
                         * input, or NULL (then computed per use) */
    const size_t *ib;   /* (n) each member's input bytes, or NULL (then computed per use) */
} group_call;

/* Member i's input bytes (0 where it has none). */
static size_t in_bytes(const group_call *g, int i) {
    return g->ib ? g->ib[i] : nbytes_or0(g->in[g->rk[i]]);
}

/* Bytes of one row along dim of x (all_to_all's unit). */
static size_t row_bytes(const lt_tensor *x, int dim) {
    return x->shape[dim] ? (size_t)(lt_numel(x) / x->shape[dim]) * lt_dtype_size(x->dtype) : 0;
}

/* src: the member whose shard member p receives in a permute (else p).
 * Not for all_reduce, scatter and broadcast (lt__trace_group_bytes has
 * their shortcuts). */
static lt__member group_member(const group_call *g, int p, int src) {
    lt_coll coll = g->coll;
    int n = g->n, root = g->root, dim = g->dim;
    const int *rk = g->rk;
    lt_tensor *const *in = g->in, *const *out = g->out;
    int reduces = coll == LT_COLL_ALL_REDUCE || coll == LT_COLL_REDUCE_SCATTER ||
                  coll == LT_COLL_REDUCE;
    size_t N = (size_t)n, mine = reduces ? g->in0 : in_bytes(g, p);
    lt__member m = {mine, 0, 0};
    switch (coll) {
    case LT_COLL_ALL_GATHER:
    case LT_COLL_GATHER:
        if (coll == LT_COLL_GATHER && p != root) break;
        m.out = g->total;
        m.kept = mine;
        break;
    case LT_COLL_ALL_REDUCE:
    case LT_COLL_REDUCE_SCATTER:
    case LT_COLL_REDUCE: /* the members' inputs have one shape: member 0's */
        m.in = g->in0;
        m.out = coll == LT_COLL_REDUCE_SCATTER ? lt_nbytes(out[rk[p]]) : m.in;
        break;
    case LT_COLL_ALL_TO_ALL:
        for (size_t i = 0; i < N; i++) { /* piece p of every member, rows of its shape */
            size_t row = g->rows ? g->rows[i] : row_bytes(in[rk[i]], dim);
            size_t b = (size_t)g->sizes[i * N + (size_t)p] * row;
            m.out += b;
            if (i == (size_t)p) m.kept = b;
        }
        break;
    case LT_COLL_PERMUTE:
        m.out = in_bytes(g, src);
        m.kept = src == p ? m.out : 0;
        break;
    default: /* barrier: nothing moves; scatter, broadcast: from_root_bytes */
        break;
    }
    return m;
}

/* scatter and broadcast (only the root sends): member p gets its output
 * (scatter) or the root's input (broadcast), the root keeping its own;
 * the root sends what the others receive. */
static void from_root_bytes(const group_call *g, uint64_t es, size_t *sent, size_t *recv) {
    int n = g->n, root = g->root;
    const int *rk = g->rk;
    size_t b = g->coll == LT_COLL_BROADCAST && root >= 0 && root < n
                   ? nbytes_or0(g->in[rk[root]]) : 0;
    uint64_t others = 0;
    lt__member mr = {0, 0, 0};
    for (int p = 0; p < n; p++) {
        size_t o = g->coll == LT_COLL_SCATTER ? nbytes_or0(g->out[rk[p]]) : b;
        lt__member m = {0, o, p == root ? o : 0};
        recv[rk[p]] = (size_t)lt__coll_recv(g->coll, n, p, root, m, es);
        sent[rk[p]] = 0;
        if (p != root) others += recv[rk[p]];
        else mr = m;
    }
    if (root >= 0 && root < n)
        sent[rk[root]] = (size_t)lt__coll_sent(g->coll, n, root, root, mr, es, others);
}

void lt__trace_group_bytes(lt_trace *t, lt_coll coll, int n, const int *rk,
                           lt_tensor *const *in, lt_tensor *const *out, int root, int dim,
                           const int64_t *sizes, const int *perm) {
    if (!t->enabled || t->n == 0 || n <= 0 || coll == LT_COLL_BARRIER) return; /* nothing moves */
    size_t *sent = t->pool + t->ev[t->n - 1].pool_off, *recv = sent + t->world;
    const lt_tensor *t0 = in[rk[0]];
    uint64_t es = t0 ? lt_dtype_size(t0->dtype) : 1;
    group_call g = {coll, n, root, dim, rk, in, out, sizes, 0, nbytes_or0(t0), NULL, NULL};
    if (coll == LT_COLL_ALL_REDUCE) { /* every member's part is the same but its ring piece */
        lt__member m = {g.in0, g.in0, 0};
        for (int p = 0; p < n; p++)
            recv[rk[p]] = sent[rk[p]] = (size_t)lt__coll_recv(coll, n, p, root, m, es);
        return;
    }
    if (coll == LT_COLL_SCATTER || coll == LT_COLL_BROADCAST) {
        from_root_bytes(&g, es, sent, recv);
        return;
    }
    size_t stack_ib[64], *ib = NULL;   /* each member's input bytes, once */
    if (coll != LT_COLL_REDUCE_SCATTER && coll != LT_COLL_REDUCE) {
        ib = n <= 64 ? stack_ib : lt__malloc(sizeof(size_t) * (size_t)n);
        for (int i = 0; ib && i < n; i++) ib[i] = nbytes_or0(in[rk[i]]);
        g.ib = ib;   /* NULL when out of memory: computed per use instead */
    }
    if (coll == LT_COLL_ALL_GATHER || coll == LT_COLL_GATHER)
        for (int p = 0; p < n; p++) g.total += in_bytes(&g, p);
    size_t stack_rows[64], *rows = NULL;   /* all_to_all: each member's row bytes, once */
    if (coll == LT_COLL_ALL_TO_ALL) {
        rows = n <= 64 ? stack_rows : lt__malloc(sizeof(size_t) * (size_t)n);
        for (int i = 0; rows && i < n; i++) rows[i] = row_bytes(in[rk[i]], dim);
        g.rows = rows;   /* NULL when out of memory: computed per use instead */
    }
    for (int s = 0; s < n; s++) { /* s sends to p (a permute's perm[s], else itself) */
        int p = coll == LT_COLL_PERMUTE ? perm[s] : s;
        lt__member m = group_member(&g, p, s);
        recv[rk[p]] = (size_t)lt__coll_recv(coll, n, p, root, m, es);
        sent[rk[p]] = (size_t)lt__coll_sent(coll, n, p, root, m, es, 0);
    }
    if (rows != stack_rows) lt__free(rows);
    if (ib != stack_ib) lt__free(ib);
}

void lt__trace_commit(lt_trace *t) {
    if (!t->enabled || t->n == 0) return;
    trace_ev *e = &t->ev[t->n - 1];
    const size_t *s = t->pool + e->pool_off, *r = s + t->world;
    size_t ts = 0, tr = 0;
    for (int i = 0; i < t->world; i++) {
        ts += s[i];
        tr += r[i];
    }
    e->total_sent = ts;
    e->total_recv = tr;
}

/* ---- text table ---------------------------------------------------------- */

enum { COLS = 9, CELL = 96 };

static void fill_row(const lt_trace_event *ev, size_t idx, char cells[COLS][CELL]) {
    size_t maxr = 0;
    for (int r = 0; r < ev->world; r++)
        if (ev->recv[r] > maxr) maxr = ev->recv[r];
    snprintf(cells[0], CELL, "%zu", idx);
    snprintf(cells[1], CELL, "%s", lt_coll_name(ev->coll));
    snprintf(cells[2], CELL, "%d", ev->mesh_dim);
    snprintf(cells[3], CELL, "%dx%d", ev->ngroups, ev->group_size);
    snprintf(cells[4], CELL, "%s", ev->coll == LT_COLL_BARRIER ? "-" : lt_dtype_name(ev->dtype));
    char args[CELL] = "";
    size_t used = 0;
    if (ev->op >= 0)
        used +=
            (size_t)snprintf(args + used, CELL - used, "op=%s ", lt_redop_name((lt_redop)ev->op));
    if (ev->root >= 0 && used < CELL)
        used += (size_t)snprintf(args + used, CELL - used, "root=%d ", ev->root);
    if (ev->dim >= 0 && used < CELL)
        used += (size_t)snprintf(args + used, CELL - used, "dim=%d ", ev->dim);
    if (ev->concat_dim >= 0 && used < CELL)
        used += (size_t)snprintf(args + used, CELL - used, "concat=%d ", ev->concat_dim);
    if (used > 0 && used < CELL) args[used - 1] = '\0';
    snprintf(cells[5], CELL, "%s", args[0] ? args : "-");
    snprintf(cells[6], CELL, "%zu", ev->total_sent);
    snprintf(cells[7], CELL, "%zu", maxr);
    snprintf(cells[8], CELL, "%s", ev->label);
}

void lt_trace_print(const lt_trace *t, FILE *f, size_t since) {
    static const char *const head[COLS] = {"#", "collective", "mesh dim", "groups", "dtype",
                                           "args", "bytes moved", "max recv/rank", "label"};
    static const int right[COLS] = {1, 0, 1, 1, 0, 0, 1, 1, 0};
    int w[COLS];
    char cells[COLS][CELL];
    lt_trace_event ev;
    for (int c = 0; c < COLS; c++) w[c] = (int)strlen(head[c]);
    for (size_t i = since; i < t->n; i++) {
        lt_trace_get(t, i, &ev);
        fill_row(&ev, i, cells);
        for (int c = 0; c < COLS; c++)
            if ((int)strlen(cells[c]) > w[c]) w[c] = (int)strlen(cells[c]);
    }
    for (int c = 0; c < COLS; c++)
        fprintf(f, "%s%*s", c ? "  " : "", c == COLS - 1 ? 0 : right[c] ? w[c] : -w[c], head[c]);
    fputc('\n', f);
    for (size_t i = since; i < t->n; i++) {
        lt_trace_get(t, i, &ev);
        fill_row(&ev, i, cells);
        for (int c = 0; c < COLS; c++) {
            if (c == COLS - 1 && !cells[c][0]) break;
            fprintf(f, "%s%*s", c ? "  " : "",
                    c == COLS - 1 ? 0
                    : right[c]    ? w[c]
                                  : -w[c],
                    cells[c]);
        }
        fputc('\n', f);
    }
    lt_trace_totals tot;
    lt_trace_totals_since(t, since, &tot);
    fprintf(f, "%zu events, %zu bytes moved between ranks\n", tot.events, tot.bytes_sent);
}
