/* test/test_ragged.c — RaggedShard (docs/SEMANTICS.md §11.10): spellings, the
 * worked examples of the docs, and sweeps of distribute, from_local,
 * full_tensor and redistribute against an oracle written here from the
 * definition, not from localtensor/ragged.c: each rank's shard is a list
 * of global flat indices, cut mesh dim after mesh dim as that placement
 * cuts the rank's current local tensor (torch.chunk for Shard, the pieces
 * of docs/SEMANTICS.md §4 for StridedShard, runs of rows proportional to the units for
 * RaggedShard, whose local tensor then has the shape (rows, *shape[k:])).
 * A redistribute's plan is checked against the oracle's lower bound (each
 * rank's needed-but-not-held elements) and, for pairs the view can write,
 * against the planner's plan of the same pair spelled here directly as
 * explicit-sizes placements on the view shape. */
#include <stdlib.h>
#include <string.h>

#include "localtensor/localtensor.h"
#include "localtensor/ragged.h"
#include "test/testutil.h"
#include "test/planner_bruteforce.h"
#include "test/redistribute_testutil.h"

/* ---- the oracle ------------------------------------------------------------ */

#define OR_MAX 4096 /* elements of a swept tensor, at most */

typedef struct oshard {
    int nd;
    int64_t shp[LT_MAX_DIMS];
    int64_t n;
    int64_t g[OR_MAX];      /* (n) global flat index of each local element, row-major */
    int k;                  /* 0 until a RaggedShard flattened dims 0..k-1 */
    double div;             /* what P(sum) dims divide the value by */
} oshard;

/* The local dim that tensor dim d is in o (after a RaggedShard: d - k + 1). */
static int odim(const oshard *o, int d) { return o->k ? (d < o->k ? 0 : d - o->k + 1) : d; }

/* Keeps positions pos[cnt] along local dim ld of o. */
static void okeep(oshard *o, int ld, const int64_t *pos, int64_t cnt) {
    int64_t outer = 1, inner = 1, n = o->shp[ld], w = 0;
    static int64_t tmp[OR_MAX];
    for (int d = 0; d < ld; d++) outer *= o->shp[d];
    for (int d = ld + 1; d < o->nd; d++) inner *= o->shp[d];
    for (int64_t a = 0; a < outer; a++)
        for (int64_t p = 0; p < cnt; p++)
            for (int64_t i = 0; i < inner; i++) tmp[w++] = o->g[(a * n + pos[p]) * inner + i];
    memcpy(o->g, tmp, sizeof(int64_t) * (size_t)w);
    o->n = w;
    o->shp[ld] = cnt;
}

/* torch.chunk's piece c of m over n: [*lo, *lo + *len). */
static void ochunk(int64_t n, int m, int c, int64_t *lo, int64_t *len) {
    int64_t full = (n + m - 1) / m, a = full * c, b = full * (c + 1);
    if (b > n) b = n;
    *lo = a;
    *len = a >= n ? 0 : b - a;
}

/* Shard(d) (sf = 0) or StridedShard(d, sf) over m, member c. */
static void oshard_dim(oshard *o, int d, int sf, int m, int c) {
    int ld = odim(o, d);
    int64_t n = o->shp[ld], pos[OR_MAX], cnt = 0, lo, len;
    if (!sf) {
        ochunk(n, m, c, &lo, &len);
        for (int64_t j = 0; j < len; j++) pos[cnt++] = lo + j;
    } else {   /* sf chunk-rule pieces, member c's chunk of each, concatenated */
        for (int j = 0; j < sf; j++) {
            int64_t plo, plen;
            ochunk(n, sf, j, &plo, &plen);
            ochunk(plen, m, c, &lo, &len);
            for (int64_t q = 0; q < len; q++) pos[cnt++] = plo + lo + q;
        }
    }
    okeep(o, ld, pos, cnt);
}

/* RaggedShard(k, units[m]) member c: rows [pre*F/U, (pre+u_c)*F/U) of the
 * local tensor with dims 0..k-1 flattened. 0 when F % U != 0. */
static int oragged(oshard *o, int k, const int64_t *units, int m, int c) {
    int64_t F = 1, R = 1, U = 0, pre = 0;
    for (int d = 0; d < k; d++) F *= o->shp[d];
    for (int d = k; d < o->nd; d++) R *= o->shp[d];
    for (int j = 0; j < m; j++) U += units[j];
    for (int j = 0; j < c; j++) pre += units[j];
    if (F % U) return 0;
    int64_t r0 = pre * (F / U), nr = units[c] * (F / U);
    memmove(o->g, o->g + r0 * R, sizeof(int64_t) * (size_t)(nr * R));
    o->n = nr * R;
    o->shp[0] = nr;
    for (int d = k; d < o->nd; d++) o->shp[d - k + 1] = o->shp[d];
    o->nd = o->nd - k + 1;
    o->k = k;
    return 1;
}

/* One placement of the sweeps. */
typedef struct opl {
    char kind;              /* 'R', 'P' (sum), 'S', 'T' (StridedShard sf 2), 'G' (ragged) */
    int d;                  /* S, T: tensor dim; G: k */
    int64_t units[8];       /* G */
} opl;

/* 1 when the placements are ones we support (docs/SEMANTICS.md §11.10): at
 * most one RaggedShard; with one of k dims, no Shard of a dim < k, except
 * when k = 1: Shard(0)/StridedShard(0) on a later mesh dim, Shard(0) on an
 * earlier one (whose chunks the oracle requires equal). */
static int osupported(const opl *p, int np) {
    int g = -1;
    for (int i = 0; i < np; i++)
        if (p[i].kind == 'G') {
            if (g >= 0) return 0;
            g = i;
        }
    for (int i = 0; g >= 0 && i < np; i++)
        if ((p[i].kind == 'S' || p[i].kind == 'T') && p[i].d < p[g].d &&
            (p[g].d > 1 || (i < g && p[i].kind == 'T')))
            return 0;
    return 1;
}

/* Rank r's shard into o; 0 when a RaggedShard's rows are not a multiple of
 * its units (the layout is refused). */
static int oracle(const int *mshape, int mnd, int r, int nd, const int64_t *shape, const opl *p,
                  oshard *o) {
    int coord[8];
    for (int i = mnd - 1, x = r; i >= 0; i--) {
        coord[i] = x % mshape[i];
        x /= mshape[i];
    }
    o->nd = nd;
    o->k = 0;
    o->div = 1;
    o->n = 1;
    for (int d = 0; d < nd; d++) o->shp[d] = shape[d], o->n *= shape[d];
    for (int64_t j = 0; j < o->n; j++) o->g[j] = j;
    int g = -1;   /* the RaggedShard's mesh dim (-1: none) */
    for (int i = 0; i < mnd; i++)
        if (p[i].kind == 'G') g = i;
    for (int i = 0; i < mnd; i++) {
        int m = mshape[i], c = coord[i];
        /* a Shard(0) before the RaggedShard: list order, every chunk the same
         * rows (torch.chunk's pieces are equal exactly when m divides them) */
        if (p[i].kind == 'S' && p[i].d == 0 && i < g && o->shp[0] % m) return 0;
        if (p[i].kind == 'P') o->div *= m;
        else if (p[i].kind == 'S') oshard_dim(o, p[i].d, 0, m, c);
        else if (p[i].kind == 'T') oshard_dim(o, p[i].d, 2, m, c);
        else if (p[i].kind == 'G' && !oragged(o, p[i].d, p[i].units, m, c)) return 0;
    }
    return 1;
}

/* p[np] in the library's spelling (parsed: the parser is tested too). */
static void ospell(const opl *p, int np, const int *mshape, lt_placement *out) {
    for (int i = 0; i < np; i++) {
        char s[256];
        int u = 0;
        switch (p[i].kind) {
        case 'R': snprintf(s, sizeof s, "R"); break;
        case 'P': snprintf(s, sizeof s, "P(sum)"); break;
        case 'S': snprintf(s, sizeof s, "S(%d)", p[i].d); break;
        case 'T': snprintf(s, sizeof s, "SS(%d,2)", p[i].d); break;
        default:
            u = snprintf(s, sizeof s, "RaggedShard(dims=(");
            for (int d = 0; d < p[i].d; d++) u += snprintf(s + u, sizeof s - (size_t)u, "%d, ", d);
            u += snprintf(s + u, sizeof s - (size_t)u, "), local_units=(");
            for (int c = 0; c < mshape[i]; c++)
                u += snprintf(s + u, sizeof s - (size_t)u, "%lld, ", (long long)p[i].units[c]);
            snprintf(s + u, sizeof s - (size_t)u, "))");
        }
        LT_CHECK(lt_placement_parse(s, &out[i]));
    }
}

/* Elements of dt's global tensor. */
static int64_t numel_of(const lt_dtensor *dt) {
    int64_t n = 1;
    for (int d = 0; d < dt->ndim; d++) n *= dt->shape[d];
    return n;
}

/* ---- comparing ---------------------------------------------------------------- */

/* The value of global flat index g in the swept full tensors: a multiple of
 * 120 so that every P(sum) division of the sweeps (by 2..5, 2x2x2) is exact. */
static double oval(int64_t g) { return (double)(g + 1) * 120.0; }

/* A new f64 tensor of shape with oval values. */
static lt_tensor *ofull(int nd, const int64_t *shape) {
    lt_tensor *t;
    LT_CHECK(lt_tensor_new(LT_F64, nd, shape, &t));
    for (int64_t j = 0; j < lt_numel(t); j++) lt_set_flat(t, j, oval(j));
    return t;
}

/* 0 when t is o's shard exactly (shape and values); else a message in why. */
static int oshard_diff(const lt_tensor *t, const oshard *o, char *why, size_t n) {
    if (t->ndim != o->nd) return snprintf(why, n, "ndim %d, oracle %d", t->ndim, o->nd), 1;
    for (int d = 0; d < o->nd; d++)
        if (t->shape[d] != o->shp[d])
            return snprintf(why, n, "dim %d size %lld, oracle %lld", d, (long long)t->shape[d],
                            (long long)o->shp[d]), 1;
    for (int64_t j = 0; j < o->n; j++)
        if (lt_get_flat(t, j) != oval(o->g[j]) / o->div)
            return snprintf(why, n, "local element %lld is %g, oracle %g (global %lld)",
                            (long long)j, lt_get_flat(t, j), oval(o->g[j]) / o->div,
                            (long long)o->g[j]), 1;
    return 0;
}

/* 0 when t has shape[nd] and the oval values. */
static int full_diff(const lt_tensor *t, int nd, const int64_t *shape) {
    if (t->ndim != nd) return 1;
    for (int d = 0; d < nd; d++)
        if (t->shape[d] != shape[d]) return 1;
    for (int64_t j = 0; j < lt_numel(t); j++)
        if (lt_get_flat(t, j) != oval(j)) return 1;
    return 0;
}

/* "mesh M, shape S, [placements]" into buf[n], for messages. */
static void describe(const lt_mesh *m, const lt_placement *pl, int nd, const int64_t *shape,
                     char *buf, size_t n) {
    char a[64], b[512], c[64];
    lt_mesh_format(m, a, sizeof a);
    lt_placements_format(pl, m->ndim, b, sizeof b);
    snprintf(buf, n, "mesh %s, shape %s, %s", a, lt_shape_format(nd, shape, c, sizeof c), b);
}

/* ---- the sweeps --------------------------------------------------------------- */

typedef struct sweep_mesh {
    int nd;
    int shape[3];
} sweep_mesh;

static const sweep_mesh MESHES[] = {
    {1, {1}},       {1, {2}},       {1, {3}},       {1, {4}},       {1, {5}},
    {2, {1, 2}},    {2, {2, 1}},    {2, {2, 2}},    {2, {2, 3}},    {2, {3, 2}},
    {3, {2, 2, 2}}, {3, {1, 2, 2}},
};
#define NMESHES ((int)(sizeof MESHES / sizeof MESHES[0]))

typedef struct sweep_shape {
    int nd;
    int64_t s[3];
} sweep_shape;

static const sweep_shape SHAPES[] = {
    {1, {0}},       {1, {1}},       {1, {4}},       {1, {6}},       {1, {12}},
    {2, {0, 3}},    {2, {1, 2}},    {2, {4, 1}},    {2, {6, 2}},    {2, {3, 4}},
    {2, {2, 0}},    {2, {12, 3}},   {3, {2, 3, 2}}, {3, {1, 4, 2}}, {3, {2, 0, 3}},
    {3, {4, 1, 3}}, {3, {3, 2, 1}}, {3, {2, 2, 4}},
};
#define NSHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

/* The non-ragged placements a mesh dim takes in the sweeps for an nd-d
 * tensor: R, P(sum), S(d), SS(d,2); option j of them into *p. */
static int other_count(int nd) { return 2 + 2 * nd; }
static void other_of(int j, opl *p) {
    memset(p, 0, sizeof *p);
    p->kind = j == 0 ? 'R' : j == 1 ? 'P' : (j - 2) % 2 ? 'T' : 'S';
    p->d = j < 2 ? 0 : (j - 2) / 2;
}

/* Units vector number j (base 3 digits, 0..2 each) of m ranks into u; 0 when
 * they sum to 0. */
static int units_of(int j, int m, int64_t *u) {
    int64_t sum = 0;
    for (int c = 0; c < m; c++, j /= 3) sum += u[c] = j % 3;
    return sum > 0;
}

/* 3^m. */
static int ipow3(int m) { int v = 1; while (m--) v *= 3; return v; }

typedef struct tally {
    long layouts, refused, from_local, ranks;
} tally;

static void check_from_local(const lt_mesh *m, const lt_dtensor *dt, const opl *p, int nd,
                             const int64_t *shape, const char *what, tally *t) {
    int k = 1;
    lt_dtensor *fl = NULL;
    lt_tensor *f = NULL;
    for (int i = 0; i < m->ndim; i++)
        if (p[i].kind == 'G') k = p[i].d;
    lt_tensor *const *sh = dt->local->shards;
    if (k > 1) {   /* the shards do not say the global shape: refused, then given */
        if (lt_from_local(m, sh, dt->placements, m->ndim, 1, &fl) != LT_INVALID)
            fail_msg("%s: from_local without the shape was not refused", what);
        LT_CHECK(lt_ragged_from_local(m, sh, dt->placements, m->ndim, nd, shape, 1, &fl));
    } else {
        LT_CHECK(lt_from_local(m, sh, dt->placements, m->ndim, 1, &fl));
    }
    LT_CHECK(lt_full_tensor_direct(fl, &f));
    if (full_diff(f, nd, shape)) fail_msg("%s: from_local's full tensor differs", what);
    lt_tensor_free(f);
    lt_dtensor_free(fl);
    t->from_local++;
}

/* Every rank's shard of dt against the oracle, and lt_ragged_local_shape. */
static void check_shards(const lt_mesh *m, const int *ms, const lt_dtensor *dt, const opl *p,
                         int nd, const int64_t *shape, const char *what, tally *t) {
    static oshard o;
    for (int r = 0; r < m->world; r++) {
        char why[200];
        int lnd;
        int64_t ls[LT_MAX_DIMS], first;
        if (!oracle(ms, m->ndim, r, nd, shape, p, &o)) fail_msg("%s: oracle refused", what);
        if (oshard_diff(lt_to_local(dt, r), &o, why, sizeof why))
            fail_msg("%s: rank %d: %s", what, r, why);
        LT_CHECK(lt_ragged_local_shape(m, nd, shape, dt->placements, m->ndim, r, &lnd, ls, NULL,
                                       &first));
        if (lnd != o.nd || memcmp(ls, o.shp, sizeof(int64_t) * (size_t)lnd) ||
            first != (o.n ? o.g[0] : -1))
            fail_msg("%s: rank %d: lt_ragged_local_shape differs (first %lld, oracle %lld)",
                     what, r, (long long)first, (long long)(o.n ? o.g[0] : -1));
        t->ranks++;
    }
}

/* lt_dtensor_new with the arange initialiser (element g is g) builds the
 * layout in place: every shard holds the oracle's elements, each valued its
 * flat index (divided as the oracle says for P(sum)). */
static void check_new(const lt_mesh *m, const int *ms, const opl *p, int nd,
                      const int64_t *shape, const lt_placement *pl, const char *what) {
    static oshard o;
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_dtensor *dt = NULL;
    if (lt_dtensor_new(m, LT_F64, nd, shape, pl, m->ndim, &init, &dt))
        fail_msg("%s: dtensor_new: %s", what, lt_errmsg());
    for (int r = 0; r < m->world; r++) {
        const lt_tensor *t = lt_to_local(dt, r);
        oracle(ms, m->ndim, r, nd, shape, p, &o);
        int ok = t->ndim == o.nd;
        for (int d = 0; ok && d < o.nd; d++) ok = t->shape[d] == o.shp[d];
        for (int64_t j = 0; ok && j < o.n; j++) ok = lt_get_flat(t, j) == (double)o.g[j] / o.div;
        if (!ok) fail_msg("%s: dtensor_new: rank %d differs from the oracle", what, r);
    }
    lt_dtensor_free(dt);
}

/* x + x keeps x's layout, every shard twice x's; the sum of every element
 * is the sum of the oval values (docs/SEMANTICS.md §11.10: elementwise ops
 * and full reductions take a RaggedShard). */
static void check_ops(const lt_dtensor *dt, const char *what) {
    const lt_dtensor *in[2] = {dt, dt};
    lt_dtensor *out[1] = {NULL};
    lt_tensor *f = NULL;
    LT_CHECK(lt_op(LT_OP_ADD, in, 2, NULL, NULL, out, 1, NULL));
    if (!lt_placements_equal(out[0]->placements, dt->placements, lt_dtensor_mesh(dt)->ndim))
        fail_msg("%s: add changed the placements", what);
    LT_CHECK(lt_full_tensor(out[0], &f));
    for (int64_t j = 0; j < lt_numel(f); j++)
        if (lt_get_flat(f, j) != 2 * oval(j)) fail_msg("%s: add: element %lld", what, (long long)j);
    lt_tensor_free(f);
    lt_dtensor_free(out[0]);
    LT_CHECK(lt_op(LT_OP_SUM, in, 1, NULL, NULL, out, 1, NULL));
    LT_CHECK(lt_full_tensor(out[0], &f));
    double want = 0;
    for (int64_t j = 0; j < numel_of(dt); j++) want += oval(j);
    if (f->ndim != 0 || lt_get_flat(f, 0) != want)
        fail_msg("%s: sum is %g, want %g", what, lt_get_flat(f, 0), want);
    lt_tensor_free(f);
    lt_dtensor_free(out[0]);
}

/* One layout: refused exactly when the oracle refuses it, else every shard,
 * both full tensors and from_local as the oracle says. */
static void check_layout(const lt_mesh *m, const int *ms, int nd, const int64_t *shape,
                         const opl *p, const lt_tensor *full, tally *t) {
    static oshard o;
    lt_placement pl[LT_MESH_MAX_DIMS];
    char what[600];
    ospell(p, m->ndim, ms, pl);
    describe(m, pl, nd, shape, what, sizeof what);
    int ok = osupported(p, m->ndim) && oracle(ms, m->ndim, 0, nd, shape, p, &o);
    lt_dtensor *dt = NULL;
    lt_status st = lt_distribute(m, full, pl, m->ndim, &dt);
    if (!ok) {
        if (st != LT_INVALID && st != LT_UNSUPPORTED)
            fail_msg("%s: not refused (%s)", what, lt_status_name(st));
        t->refused++;
        return;
    }
    if (st) fail_msg("%s: %s", what, lt_errmsg());
    check_shards(m, ms, dt, p, nd, shape, what, t);
    check_new(m, ms, p, nd, shape, pl, what);
    lt_tensor *f = NULL;
    LT_CHECK(lt_full_tensor(dt, &f));
    if (full_diff(f, nd, shape)) fail_msg("%s: full_tensor differs", what);
    lt_tensor_free(f);
    LT_CHECK(lt_full_tensor_direct(dt, &f));
    if (full_diff(f, nd, shape)) fail_msg("%s: full_tensor_direct differs", what);
    lt_tensor_free(f);
    check_from_local(m, dt, p, nd, shape, what, t);
    if (t->layouts % 3 == 0) check_ops(dt, what);
    lt_dtensor_free(dt);
    t->layouts++;
}

/* Calls fn on every swept layout of (mesh mi, shape si) with one
 * RaggedShard, taking one in `every` (by count). */
typedef void (*layout_fn)(const lt_mesh *m, const int *ms, const sweep_shape *sh, const opl *p,
                          void *ctx);
static void each_layout(int mi, int si, int every, layout_fn fn, void *ctx) {
    const sweep_mesh *M = &MESHES[mi];
    const sweep_shape *S = &SHAPES[si];
    lt_mesh m;
    LT_CHECK(lt_mesh_init(&m, M->nd, M->shape, NULL));
    int no = other_count(S->nd), nother = 1;
    for (int i = 1; i < M->nd; i++) nother *= no;
    long count = 0;
    for (int q = 0; q < M->nd; q++)
        for (int k = 1; k <= S->nd; k++)
            for (int uj = 0; uj < ipow3(M->shape[q]); uj++)
                for (int oj = 0; oj < nother; oj++) {
                    opl p[3];
                    memset(p, 0, sizeof p);
                    if (!units_of(uj, M->shape[q], p[q].units) || count++ % every) continue;
                    p[q].kind = 'G';
                    p[q].d = k;
                    for (int i = 0, x = oj; i < M->nd; i++)
                        if (i != q) {
                            other_of(x % no, &p[i]);
                            x /= no;
                        }
                    fn(&m, M->shape, S, p, ctx);
                }
}

typedef struct layout_ctx {
    const lt_tensor *full;
    tally *t;
} layout_ctx;

/* each_layout's visitor of the layout sweep. */
static void layout_visit(const lt_mesh *m, const int *ms, const sweep_shape *sh, const opl *p,
                         void *ctx) {
    layout_ctx *c = ctx;
    check_layout(m, ms, sh->nd, sh->s, p, c->full, c->t);
}

/* Every mesh, shape, k, units vector and other placements (sampled where
 * there are many, all under a sanitizer's fewer): >= 10,000 layouts. */
static void test_sweep_layouts(void **state) {
    (void)state;
    tally t = {0, 0, 0, 0};
    for (int mi = 0; mi < NMESHES; mi++)
        for (int si = 0; si < NSHAPES; si++) {
            lt_tensor *full = ofull(SHAPES[si].nd, SHAPES[si].s);
            layout_ctx c = {full, &t};
            int every = MESHES[mi].nd == 1 ? 1 : MESHES[mi].nd == 2 ? 3 : 23;
            every *= SANITIZED ? 8 : 1;
            each_layout(mi, si, every, layout_visit, &c);
            lt_tensor_free(full);
        }
    printf("ragged layouts: %ld checked against the oracle (%ld rank shards, %ld from_local), "
           "%ld refused as the oracle refuses, 0 mismatches\n",
           t.layouts, t.ranks, t.from_local, t.refused);
    if (!SANITIZED && t.layouts < 10000) fail_msg("only %ld layouts", t.layouts);
}

/* ---- redistribute ------------------------------------------------------------- */

#define POOL 24

typedef struct pool {
    int n, seen;
    opl p[POOL][3];
} pool;

/* each_layout's visitor that collects supported layouts into a pool. */
static void pool_visit(const lt_mesh *m, const int *ms, const sweep_shape *sh, const opl *p,
                       void *ctx) {
    static oshard o;
    pool *pl = ctx;
    if (pl->n == POOL || !osupported(p, m->ndim) || !oracle(ms, m->ndim, 0, sh->nd, sh->s, p, &o))
        return;
    memcpy(pl->p[pl->n++], p, sizeof(opl) * 3);
}

/* Elements rank r's destination shard holds that its source shard does not. */
static int64_t missing(const oshard *src, const oshard *dst) {
    static unsigned char have[OR_MAX];
    int64_t n = 0;
    memset(have, 0, sizeof have);
    for (int64_t j = 0; j < src->n; j++) have[src->g[j]] = 1;
    for (int64_t j = 0; j < dst->n; j++) n += !have[dst->g[j]];
    return n;
}

/* 1 when one of p[np] is of kind k. */
static int has_kind(const opl *p, int np, char k) {
    for (int i = 0; i < np; i++)
        if (p[i].kind == k) return 1;
    return 0;
}

/* The exchange's bytes in comm's trace since `since` and in the route's
 * plan p (no Partial on either side): each rank receives exactly the
 * elements of its destination shard its source lacks, which every plan
 * must bring it at least once (docs/SEMANTICS.md §11.10): the plan's one
 * step, its bytes total and its busiest rank equal that lower bound, summed
 * and maxed over the ranks by the oracle. */
static void check_bytes(lt_comm *comm, size_t since, const int *ms, const lt_mesh *m,
                        const sweep_shape *sh, const opl *a, const opl *b, const lt_plan *p,
                        const char *what) {
    static oshard os, od;
    lt_trace *tr = lt_comm_trace(comm);
    lt_trace_event ev;
    int found = 0;
    for (size_t e = since; e < lt_trace_count(tr); e++) {
        LT_CHECK(lt_trace_get(tr, e, &ev));
        /* one group of every rank, recorded on mesh dim 0 as a flattened collective */
        if (ev.coll == LT_COLL_ALL_TO_ALL && ev.mesh_dim == 0 && ev.ngroups == 1 &&
            ev.group_size == m->world)
            found = 1;
        if (found) break;
    }
    if (!found) fail_msg("%s: no whole-mesh exchange in the trace", what);
    size_t bound = 0, busiest = 0;
    for (int r = 0; r < m->world; r++) {
        oracle(ms, m->ndim, r, sh->nd, sh->s, a, &os);
        oracle(ms, m->ndim, r, sh->nd, sh->s, b, &od);
        size_t lack = (size_t)missing(&os, &od) * sizeof(double);
        if (ev.recv[r] != lack)
            fail_msg("%s: rank %d received %zu bytes, oracle %zu", what, r, ev.recv[r], lack);
        bound += lack;
        busiest = lack > busiest ? lack : busiest;
    }
    if (!p || p->nsteps != 1 || p->ncomm != 1 || p->steps[0].coll != LT_COLL_ALL_TO_ALL)
        fail_msg("%s: the route's plan is not its one exchange step", what);
    if (p->total_bytes != bound || p->steps[0].bytes_total != bound ||
        p->steps[0].bytes_per_rank != busiest || lt_plan_max_rank_bytes(p) != busiest)
        fail_msg("%s: plan bytes %zu (busiest rank %zu), the lower bound %zu (%zu)", what,
                 p->total_bytes, p->steps[0].bytes_per_rank, bound, busiest);
    if (p->steps[0].mesh_dim != 0 || (m->ndim > 1 && p->steps[0].mesh_span != m->ndim))
        fail_msg("%s: the exchange step is not over the whole mesh", what);
}

/* The largest k of the RaggedShards of a[np] and b[np] (1 when none). */
static int ocommon_k(const opl *a, const opl *b, int np) {
    int k = 1;
    for (int i = 0; i < np; i++) {
        if (a[i].kind == 'G' && a[i].d > k) k = a[i].d;
        if (b[i].kind == 'G' && b[i].d > k) k = b[i].d;
    }
    return k;
}

/* p[np] written in the view of shape (F, shape[k:]) (F = shape[0]*...*
 * shape[k-1]) into out, from the definition (docs/SEMANTICS.md §11.10):
 * R and P stay, S(d)/SS(d,2) with d >= k are of view dim d - k + 1, with
 * k = 1 S(0)/SS(0) stay, and the RaggedShard is the explicit-sizes S(0)
 * of u_c * rows / U rows per rank, rows = F divided by the earlier S(0)s'
 * mesh sizes (k = 1). 0 when p cannot be written so (a shard of a
 * flattened dim when k > 1). */
static int oview(const opl *p, int np, const int *ms, int k, const int64_t *shape,
                 lt_placement *out) {
    int64_t F = 1;
    for (int d = 0; d < k; d++) F *= shape[d];
    for (int i = 0; i < np; i++) {
        char s[256];
        if ((p[i].kind == 'S' || p[i].kind == 'T') && p[i].d < k && k > 1) return 0;
        int vd = p[i].d >= k ? p[i].d - k + 1 : 0;
        if (p[i].kind == 'R') snprintf(s, sizeof s, "R");
        else if (p[i].kind == 'P') snprintf(s, sizeof s, "P(sum)");
        else if (p[i].kind == 'S') snprintf(s, sizeof s, "S(%d)", vd);
        else if (p[i].kind == 'T') snprintf(s, sizeof s, "SS(%d,2)", vd);
        else {
            int64_t rows = F, U = 0;
            for (int j = 0; j < i; j++)
                if (p[j].kind == 'S' && p[j].d == 0) rows /= ms[j];
            for (int c = 0; c < ms[i]; c++) U += p[i].units[c];
            int u = snprintf(s, sizeof s, "S(0,[");
            for (int c = 0; c < ms[i]; c++)
                u += snprintf(s + u, sizeof s - (size_t)u, "%s%lld", c ? "," : "",
                              (long long)(p[i].units[c] * (rows / U)));
            snprintf(s + u, sizeof s - (size_t)u, "])");
        }
        LT_CHECK(lt_placement_parse(s, &out[i]));
    }
    return 1;
}

/* 1 when the planner takes the pair va -> vb on the view of shape sh with
 * dims 0..k-1 flattened (it rejects some, such as SS(d) -> P(sum)). */
static int oview_plans(const lt_mesh *m, const sweep_shape *sh, int k, const lt_placement *va,
                       const lt_placement *vb) {
    int64_t vs[LT_MAX_DIMS] = {1};
    for (int d = 0; d < k; d++) vs[0] *= sh->s[d];
    for (int d = k; d < sh->nd; d++) vs[d - k + 1] = sh->s[d];
    lt_plan *q = NULL;
    lt_status st = lt_plan_redistribute(m, LT_F64, sh->nd - k + 1, vs, va, vb, m->ndim, NULL, &q);
    lt_plan_free(q);
    if (st && st != LT_UNSUPPORTED) fail_msg("planning the view: %s", lt_errmsg());
    return !st;
}

static long g_view_pairs, g_exchange_pairs, g_exchange_cheaper, g_view_no_partial, g_bf_pairs;

/* Every 8th view-planned pair with a Partial (64th under sanitizers), whose
 * bytes no lower bound pins: the independent brute force of
 * test/planner_bruteforce.h on the view spelling (bytes over the
 * collectives, the planner's default; with zero-fill dims its fixed middle,
 * as test_planner) finds no cheaper plan, nor one as cheap in fewer steps. */
static void check_view_brute_force(const lt_mesh *m, int nd, const int64_t *vs,
                                   const lt_placement *va, const lt_placement *vb,
                                   const lt_plan *p, const char *what) {
    static long seen;
    if (++seen % (SANITIZED ? 64 : 8)) return;
    if (nd > BF_MAXD) return;
    for (int d = 0; d < nd; d++)
        if (vs[d] > 64) return;
    bf_result bf = expect_zero_fill(m, va, vb)
                       ? bf_solve_zero_fill(m, nd, vs, sizeof(double), 1, va, vb)
                       : bf_solve(m, nd, vs, sizeof(double), 1, va, vb);
    g_bf_pairs++;
    if (bf.bytes == (int64_t)p->total_bytes && bf.steps == p->nsteps) return;
    fail_msg("%s: plan %zu bytes in %d steps, the brute force %lld in %d (%s)", what,
             p->total_bytes, p->nsteps, (long long)bf.bytes, bf.steps, bf.path);
}

/* A pair both sides of which the view of dims 0..k-1 writes (va, vb), with
 * the plan p of its redistribute: the planner's plan for the same pair
 * spelled directly as explicit-sizes placements on the view shape (whose
 * min-cost plans test_planner's brute force covers) is the route's, its
 * bytes and steps; except without Partial when that plan's bytes exceed the
 * oracle's lower bound (each rank's needed-but-not-held elements): the
 * exchange is then taken, at the bound (check_bytes). */
static void check_view_bytes(lt_comm *comm, size_t since, const lt_mesh *m, const int *ms,
                             const sweep_shape *sh, const opl *a, const opl *b, int k,
                             const lt_placement *va, const lt_placement *vb, const lt_plan *p,
                             const char *what) {
    static oshard os, od;
    int64_t vs[LT_MAX_DIMS] = {1};
    for (int d = 0; d < k; d++) vs[0] *= sh->s[d];
    for (int d = k; d < sh->nd; d++) vs[d - k + 1] = sh->s[d];
    lt_plan *q = NULL;
    LT_CHECK(lt_plan_redistribute(m, LT_F64, sh->nd - k + 1, vs, va, vb, m->ndim, NULL, &q));
    size_t qb = q->total_bytes, bound = 0;
    int qn = q->nsteps, partial = has_kind(a, m->ndim, 'P') || has_kind(b, m->ndim, 'P');
    lt_plan_free(q);
    for (int r = 0; !partial && r < m->world; r++) {
        oracle(ms, m->ndim, r, sh->nd, sh->s, a, &os);
        oracle(ms, m->ndim, r, sh->nd, sh->s, b, &od);
        bound += (size_t)missing(&os, &od) * sizeof(double);
    }
    if (!partial && qb < bound)
        fail_msg("%s: the view's plan %zu bytes, under the lower bound %zu", what, qb, bound);
    if (!partial && qb > bound) {
        g_exchange_cheaper++;
        check_bytes(comm, since, ms, m, sh, a, b, p, what);
        return;
    }
    if (p->total_bytes != qb || p->nsteps != qn)
        fail_msg("%s: plan %zu bytes in %d steps, the view's own plan %zu in %d", what,
                 p->total_bytes, p->nsteps, qb, qn);
    if (partial) check_view_brute_force(m, sh->nd - k + 1, vs, va, vb, p, what);
    g_view_pairs++;
    g_view_no_partial += !partial;
}

static long g_verify_every;   /* check_redist's count: which redistributes verify */

/* Source a to destination b on mesh m: the result's shards against the
 * oracle (a Partial destination: its full tensor only). */
static void check_redist(const lt_mesh *m, const int *ms, const sweep_shape *sh, const opl *a,
                         const opl *b, const lt_tensor *full, lt_comm *comm) {
    static oshard o;
    lt_placement pa[3], pb[3];
    char what[1200], w2[600];
    ospell(a, m->ndim, ms, pa);
    ospell(b, m->ndim, ms, pb);
    describe(m, pa, sh->nd, sh->s, what, sizeof what);
    describe(m, pb, sh->nd, sh->s, w2, sizeof w2);
    strncat(what, " -> ", sizeof what - strlen(what) - 1);
    strncat(what, w2, sizeof what - strlen(what) - 1);
    lt_dtensor *src = NULL, *dst = NULL;
    LT_CHECK(lt_distribute(m, full, pa, m->ndim, &src));
    lt_redistribute_opts opts;
    lt_verify_report rep;
    lt_plan *plan = NULL;
    memset(&opts, 0, sizeof opts);
    memset(&rep, 0xff, sizeof rep);
    opts.comm = comm;
    opts.report = &rep;
    opts.verify = ++g_verify_every % 4 != 0;   /* 3 in 4 verified, 1 in 4 not */
    size_t since = lt_trace_count(lt_comm_trace(comm));
    if (lt_redistribute(src, pb, m->ndim, &opts, &dst, &plan))
        fail_msg("%s: %s", what, lt_errmsg());
    if (rep.checked != opts.verify || (opts.verify && !rep.ok))
        fail_msg("%s: report checked %d ok %d (verify %d)", what, rep.checked, rep.ok, opts.verify);
    if (!plan || !lt_placements_equal(plan->dst, dst->placements, m->ndim))
        fail_msg("%s: no plan, or its destination is not the result's placements", what);
    for (int r = 0; !has_kind(b, m->ndim, 'P') && r < m->world; r++) {
        char why[200];
        oracle(ms, m->ndim, r, sh->nd, sh->s, b, &o);
        if (oshard_diff(lt_to_local(dst, r), &o, why, sizeof why))
            fail_msg("%s: rank %d: %s", what, r, why);
    }
    int k = ocommon_k(a, b, m->ndim);
    lt_placement va[3], vb[3];
    if (oview(a, m->ndim, ms, k, sh->s, va) && oview(b, m->ndim, ms, k, sh->s, vb) &&
        oview_plans(m, sh, k, va, vb)) {
        check_view_bytes(comm, since, m, ms, sh, a, b, k, va, vb, plan, what);
    } else {
        g_exchange_pairs++;
        if (!has_kind(a, m->ndim, 'P') && !has_kind(b, m->ndim, 'P'))
            check_bytes(comm, since, ms, m, sh, a, b, plan, what);
    }
    lt_plan_free(plan);
    lt_tensor *f = NULL;
    LT_CHECK(lt_full_tensor(dst, &f));
    if (full_diff(f, sh->nd, sh->s)) fail_msg("%s: full tensor differs", what);
    lt_tensor_free(f);
    lt_dtensor_free(src);
    lt_dtensor_free(dst);
}

/* Non-ragged layouts of the pool: the other placements on every mesh dim. */
static void pool_plain(const sweep_mesh *M, const sweep_shape *S, pool *pl) {
    int no = other_count(S->nd), total = 1;
    for (int i = 0; i < M->nd; i++) total *= no;
    for (int j = 0; j < total && pl->n < POOL; j += 1 + total / 6) {
        opl p[3];
        for (int i = 0, x = j; i < M->nd; i++, x /= no) other_of(x % no, &p[i]);
        memcpy(pl->p[pl->n++], p, sizeof p);
    }
}

/* Pairs of swept layouts (one side ragged at least) on every mesh and
 * shape: >= 10,000 redistributes against the oracle. */
static void test_sweep_redistribute(void **state) {
    (void)state;
    long count = 0, both = 0;
    for (int mi = 0; mi < NMESHES; mi++) {
        lt_mesh m;
        lt_comm *comm;
        LT_CHECK(lt_mesh_init(&m, MESHES[mi].nd, MESHES[mi].shape, NULL));
        LT_CHECK(lt_comm_new(&m, &comm));
        lt_trace_enable(lt_comm_trace(comm), 1);
        for (int si = 0; si < NSHAPES; si++) {
            static pool pl;
            memset(&pl, 0, sizeof pl);
            pool_plain(&MESHES[mi], &SHAPES[si], &pl);
            each_layout(mi, si, MESHES[mi].nd == 1 ? 1 : 7, pool_visit, &pl);
            lt_tensor *full = ofull(SHAPES[si].nd, SHAPES[si].s);
            for (int i = 0; i < pl.n; i++)
                for (int j = 0; j < pl.n; j += SANITIZED ? 5 : 1) {
                    if (!has_kind(pl.p[i], m.ndim, 'G') && !has_kind(pl.p[j], m.ndim, 'G'))
                        continue;
                    check_redist(&m, MESHES[mi].shape, &SHAPES[si], pl.p[i], pl.p[j], full, comm);
                    count++;
                    both += has_kind(pl.p[i], m.ndim, 'G') && has_kind(pl.p[j], m.ndim, 'G');
                }
            lt_trace_clear(lt_comm_trace(comm));
            lt_tensor_free(full);
        }
        lt_comm_free(comm);
    }
    printf("ragged redistributes: %ld checked against the oracle (%ld RaggedShard to "
           "RaggedShard), 0 mismatches\n", count, both);
    printf("ragged redistributes: %ld planned in the view (plans equal to the view's own "
           "explicit-sizes plans; the %ld without Partial at the lower bound), %ld by the "
           "exchange (%ld of them cheaper than the view's plan)\n", g_view_pairs,
           g_view_no_partial, g_exchange_pairs + g_exchange_cheaper, g_exchange_cheaper);
    printf("ragged redistributes: %ld view plans with a Partial equal to the brute force's "
           "(test/planner_bruteforce.h)\n",
           g_bf_pairs);
    if (!SANITIZED && count < 10000) fail_msg("only %ld redistributes", count);
    if (!SANITIZED && g_bf_pairs < 1000)
        fail_msg("only %ld pairs against the brute force", g_bf_pairs);
}

/* ---- spellings, checks and the worked examples -------------------------------------- */

static void test_spellings(void **state) {
    (void)state;
    static const char *const same[] = {
        "RS(dims=(0,1), units=(2,3,0,5))", "RS((0,1),(2,3,0,5))",
        "RaggedShard(dims=(0, 1), local_units=(2, 3, 0, 5))", "RS(dims=[0,1], units=[2,3,0,5])",
        "RS(units=(2,3,0,5), dims=(0,1,))"};
    lt_placement a, b;
    char txt[128];
    LT_CHECK(lt_placement_parse(same[0], &a));
    for (int i = 1; i < 5; i++) {
        LT_CHECK(lt_placement_parse(same[i], &b));
        if (!lt_placement_equal(&a, &b)) fail_msg("'%s' differs from '%s'", same[i], same[0]);
    }
    lt_placement_format(&a, txt, sizeof txt);
    assert_string_equal(txt, "RS(dims=(0,1),units=(2,3,0,5))");
    LT_CHECK(lt_placement_parse(txt, &b));
    assert_true(lt_placement_equal(&a, &b));
    LT_CHECK(lt_placement_parse("RS((0,),(1,2,1,1))", &b));
    lt_placement_format(&b, txt, sizeof txt);
    assert_string_equal(txt, "RS(dims=(0,),units=(1,2,1,1))");
    assert_false(lt_placement_equal(&a, &b));
    int64_t u[] = {2, 3, 0, 5};
    LT_CHECK(lt_ragged(2, u, 4, &b));
    assert_true(lt_placement_equal(&a, &b));
    lt_placement l[3];
    int n;
    LT_CHECK(lt_placements_parse("[RS((0,),(1,2)), S(1)]", l, 3, &n));
    assert_int_equal(n, 2);
    assert_int_equal(l[0].kind, LT_PL_RAGGED);
    assert_int_equal(l[1].kind, LT_PL_SHARD);
}

/* text must be refused with a message containing want. */
static void refused_parse(const char *text, const char *want) {
    lt_placement p;
    LT_EXPECT_STATUS(lt_placement_parse(text, &p), LT_INVALID);
    if (!strstr(lt_errmsg(), want)) fail_msg("'%s': message '%s' lacks '%s'", text, lt_errmsg(),
                                             want);
}

static void test_bad_spellings(void **state) {
    (void)state;
    refused_parse("RS(dims=(1,), units=(1,1))", "dims must be the prefix");
    refused_parse("RS(dims=(0,), units=(1,-1))", "list value -1 is negative");
    refused_parse("RS(dims=(0,), units=(0,0))", "positive sum");
    refused_parse("RS(dims=(0,))", "needs dims and units");
    refused_parse("RS(dims=(), units=(1,))", "non-empty prefix");
    refused_parse("RS(dims=(0,), unit=(1,))", "unknown argument 'unit'");
    refused_parse("RS(0, (1,2))", "dims must be a tuple");
    /* at most 64 units: a bigger mesh dim is refused by name */
    int64_t u[65];
    lt_placement p;
    for (int c = 0; c < 65; c++) u[c] = 1;
    LT_EXPECT_STATUS(lt_ragged(1, u, 65, &p), LT_INVALID);
    if (!strstr(lt_errmsg(), "65 local_units; 1..64 are supported")) fail_msg("%s", lt_errmsg());
    LT_CHECK(lt_ragged(1, u, 64, &p));
}

/* placements pls for an nd-d tensor on mesh ms must be refused with st
 * and a message containing want (checked through distribute). */
static void refused_layout(const char *ms, const char *pls, int nd, const int64_t *shape,
                           lt_status st, const char *want) {
    lt_mesh m;
    lt_placement pl[3];
    int np;
    lt_dtensor *dt = NULL;
    lt_tensor *full = ofull(nd, shape);
    LT_CHECK(lt_mesh_parse(ms, &m));
    LT_CHECK(lt_placements_parse(pls, pl, 3, &np));
    LT_EXPECT_STATUS(lt_distribute(&m, full, pl, np, &dt), st);
    if (!strstr(lt_errmsg(), want)) fail_msg("%s: message '%s' lacks '%s'", pls, lt_errmsg(), want);
    lt_tensor_free(full);
}

static void test_refusals(void **state) {
    (void)state;
    int64_t s2[] = {10, 3}, s9[] = {9, 3}, s1[] = {8};
    refused_layout("4", "RS((0,),(1,2,1))", 2, s2, LT_INVALID,
                   "has 3 local_units but the mesh dim has 4 ranks");
    refused_layout("4", "RS((0,1,2),(1,2,1,1))", 2, s2, LT_INVALID, "flattens 3 leading dims");
    refused_layout("4", "RS((0,),(1,2,1,1))", 2, s9, LT_INVALID,
                   "the 9 rows of dims 0..0 of shape (9, 3) are not a multiple of the "
                   "local_units' sum 5");
    refused_layout("2x2", "RS((0,),(1,1)), RS((0,),(1,1))", 1, s1, LT_UNSUPPORTED,
                   "not supported yet: RaggedShard on two mesh dims");
    /* Shard(0) before: 8 rows in chunks of 4; units (1,1,1) would need 3 | 4.
     * A chunk rule that cuts 7 rows 4 + 3 leaves no one row count; a
     * _StridedShard(0) before does not compose yet */
    int64_t s7[] = {7};
    refused_layout("2x3", "S(0), RS((0,),(1,1,1))", 1, s1, LT_INVALID,
                   "the 4 rows of each earlier Shard(0)'s chunk (of the 8 of shape (8)) are not a "
                   "multiple of the local_units' sum 3");
    refused_layout("2x2", "S(0), RS((0,),(1,1))", 1, s7, LT_UNSUPPORTED,
                   "not supported yet: a Shard(0) on mesh dim 0 before the RaggedShard on mesh "
                   "dim 1 cuts its 7 rows into chunks of different sizes (4 and 3)");
    refused_layout("2x2", "SS(0,2), RS((0,),(1,1))", 1, s1, LT_UNSUPPORTED, "not supported yet");
    refused_layout("2x2", "RS((0,1),(1,1)), S(1)", 2, s2, LT_UNSUPPORTED, "not supported yet");
    /* from_local: 4 rows over units (1,3) are 1 + 3, not the 2 + 2 given */
    lt_mesh m;
    lt_tensor *sh[2];
    lt_placement rs;
    lt_dtensor *dt = NULL;
    int64_t two[] = {2};
    LT_CHECK(lt_mesh_parse("2", &m));
    LT_CHECK(lt_placement_parse("RS((0,),(1,3))", &rs));
    for (int r = 0; r < 2; r++) LT_CHECK(lt_tensor_new(LT_F32, 1, two, &sh[r]));
    LT_EXPECT_STATUS(lt_from_local(&m, sh, &rs, 1, 0, &dt), LT_SHAPE);
    if (!strstr(lt_errmsg(), "from_local: rank 0 holds a shard of shape (2) but its RaggedShard "
                             "(mesh dim 0, 4 rows, units summing to 4) gives (1)"))
        fail_msg("from_local: %s", lt_errmsg());
    for (int r = 0; r < 2; r++) lt_tensor_free(sh[r]);
}

/* Rank r of dt holds shape (a, b) (b < 0: 1-d) with values first.. in order. */
static void expect_rows(const lt_dtensor *dt, int r, int64_t a, int64_t b, double first) {
    const lt_tensor *t = lt_to_local(dt, r);
    int nd = b < 0 ? 1 : 2;
    int64_t shape[2] = {a, b}, n = b < 0 ? a : a * b;
    double v[64];
    for (int64_t j = 0; j < n; j++) v[j] = first + (double)j;
    char what[32];
    snprintf(what, sizeof what, "rank %d", r);
    lt_test_expect_values(t, nd, shape, v, what);
}

/* A new f32 arange tensor of shape[nd] distributed with pls on mesh ms. */
static lt_dtensor *arange_dt(const char *ms, const char *pls, int nd, const int64_t *shape,
                             lt_mesh *m) {
    lt_tensor *full;
    LT_CHECK(lt_mesh_parse(ms, m));
    LT_CHECK(lt_tensor_new(LT_F32, nd, shape, &full));
    LT_CHECK(lt_arange_fill(full));
    lt_dtensor *dt = lt_test_distribute(m, full, pls);
    lt_tensor_free(full);
    return dt;
}

/* docs/SEMANTICS.md §11.10's examples, by hand. */
static void test_docs_examples(void **state) {
    (void)state;
    lt_mesh m;
    int64_t s[] = {10, 3}, z[] = {5, 2}, k2[] = {2, 3, 2}, e[] = {8};
    lt_dtensor *dt = arange_dt("4", "RS(dims=(0,), units=(1,2,1,1))", 2, s, &m);
    expect_rows(dt, 0, 2, 3, 0);    /* rows 0-1 */
    expect_rows(dt, 1, 4, 3, 6);    /* rows 2-5 */
    expect_rows(dt, 2, 2, 3, 18);   /* rows 6-7 */
    expect_rows(dt, 3, 2, 3, 24);   /* rows 8-9 */
    int64_t off[2], first;
    LT_CHECK(lt_ragged_local_shape(&m, 2, s, dt->placements, 1, 1, NULL, NULL, off, &first));
    assert_int_equal(off[0], 2);
    assert_int_equal(first, 6);
    lt_dtensor_free(dt);
    dt = arange_dt("3", "RS((0,),(2,0,3))", 2, z, &m);   /* a zero unit: an empty shard */
    expect_rows(dt, 0, 2, 2, 0);
    expect_rows(dt, 1, 0, 2, 0);
    expect_rows(dt, 2, 3, 2, 4);
    LT_CHECK(lt_ragged_local_shape(&m, 2, z, dt->placements, 1, 1, NULL, NULL, off, &first));
    assert_int_equal(off[0], 5);
    assert_int_equal(first, -1);
    lt_dtensor_free(dt);
    dt = arange_dt("2", "RS((0,1),(1,2))", 3, k2, &m);   /* k = 2: 6 rows of 2 */
    expect_rows(dt, 0, 2, 2, 0);
    expect_rows(dt, 1, 4, 2, 4);
    lt_tensor *f;
    LT_CHECK(lt_full_tensor(dt, &f));
    assert_int_equal(f->ndim, 3);
    assert_int_equal(f->shape[1], 3);
    lt_tensor_free(f);
    lt_dtensor_free(dt);
    dt = arange_dt("2x2", "RS((0,),(1,3)), S(0)", 1, e, &m);   /* then Shard(0) of each run */
    expect_rows(dt, 0, 1, -1, 0);
    expect_rows(dt, 1, 1, -1, 1);
    expect_rows(dt, 2, 3, -1, 2);
    expect_rows(dt, 3, 3, -1, 5);
    lt_dtensor_free(dt);
    /* Shard(0) first: rows 0-3 and 4-7; the RaggedShard cuts each chunk 1 + 3 */
    dt = arange_dt("2x2", "S(0), RS((0,),(1,3))", 1, e, &m);
    expect_rows(dt, 0, 1, -1, 0);
    expect_rows(dt, 1, 3, -1, 1);
    expect_rows(dt, 2, 1, -1, 4);
    expect_rows(dt, 3, 3, -1, 5);
    LT_CHECK(lt_ragged_local_shape(&m, 1, e, dt->placements, 2, 3, NULL, NULL, off, &first));
    assert_int_equal(off[0], 5);
    assert_int_equal(first, 5);
    lt_dtensor_free(dt);
}

/* What does not take a RaggedShard yet says so. */
static void test_not_yet(void **state) {
    (void)state;
    lt_mesh m;
    int64_t s[] = {4, 2};
    lt_dtensor *dt = arange_dt("2", "RS((0,),(1,1))", 2, s, &m), *out[1] = {NULL};
    lt_dtensor *o = arange_dt("2", "RS((0,),(1,3))", 2, s, &m);
    const lt_dtensor *in[2] = {dt, o};
    LT_EXPECT_STATUS(lt_op(LT_OP_ADD, in, 2, NULL, NULL, out, 1, NULL), LT_UNSUPPORTED);
    if (!strstr(lt_errmsg(), "not supported yet: RaggedShard in add with inputs 0 and 1"))
        fail_msg("add: %s", lt_errmsg());
    lt_op_args a;
    memset(&a, 0, sizeof a);
    a.dim = 0;
    a.dim2 = 1;
    LT_EXPECT_STATUS(lt_op(LT_OP_TRANSPOSE, in, 1, &a, NULL, out, 1, NULL), LT_UNSUPPORTED);
    if (!strstr(lt_errmsg(), "not supported yet: RaggedShard in transpose"))
        fail_msg("transpose: %s", lt_errmsg());
    a.ndims = 1;
    LT_EXPECT_STATUS(lt_op(LT_OP_SUM, in, 1, &a, NULL, out, 1, NULL), LT_UNSUPPORTED);
    LT_EXPECT_STATUS(lt_op_propagate(LT_OP_NEG, (const lt_spec *const[]){&dt->spec}, 1, NULL,
                                     &(lt_op_plan *){NULL}), LT_UNSUPPORTED);
    lt_dtensor_free(o);
    lt_placement src, dst = lt_replicate();
    LT_CHECK(lt_placement_parse("RS((0,),(1,1))", &src));
    lt_plan *plan = NULL;
    if (lt_plan_redistribute(&m, LT_F32, 2, s, &src, &dst, 1, NULL, &plan) == LT_OK)
        fail_msg("the planner took a RaggedShard");
    if (!strstr(lt_errmsg(), "not supported yet")) fail_msg("planner: %s", lt_errmsg());
    lt_dtensor *c = NULL;
    LT_CHECK(lt_dtensor_clone(dt, &c));
    assert_int_equal(lt_to_local(c, 1)->shape[0], 2);
    lt_dtensor_free(c);
    lt_dtensor_free(dt);
}

/* P(sum) -> RS(dims=(0,),units=(1,2,1,0)) on a mesh of 4, shape (8,3) f32:
 * in the view it is P(sum) -> S(0,[2,4,2,0]) (F = 8, U = 4, 2 rows a
 * unit), one reduce_scatter with those sizes. Each rank receives its rows'
 * partial sums from the 3 others: 3 x (2, 4, 2, 0) rows x 3 elements x
 * 4 bytes = 72, 144, 72, 0 bytes: 288 in all, 144 the busiest. */
static void test_partial_reduce_scatter(void **state) {
    (void)state;
    lt_mesh m;
    int64_t s[] = {8, 3};
    lt_dtensor *src = arange_dt("4", "[P(sum)]", 2, s, &m), *out = NULL;
    lt_placement rs;
    LT_CHECK(lt_placement_parse("RS(dims=(0,),units=(1,2,1,0))", &rs));
    lt_comm *comm;
    LT_CHECK(lt_comm_new(&m, &comm));
    lt_trace_enable(lt_comm_trace(comm), 1);
    lt_redistribute_opts o;
    lt_verify_report rep;
    lt_plan *p = NULL;
    memset(&o, 0, sizeof o);
    o.verify = 1;
    o.report = &rep;
    o.comm = comm;
    LT_CHECK(lt_redistribute(src, &rs, 1, &o, &out, &p));
    assert_true(rep.checked && rep.ok);
    assert_int_equal(p->nsteps, 1);
    assert_int_equal(p->steps[0].coll, LT_COLL_REDUCE_SCATTER);
    assert_int_equal(p->total_bytes, 288);
    assert_int_equal(p->steps[0].bytes_per_rank, 144);
    assert_true(lt_placement_equal(&p->steps[0].to, &rs));   /* spelled as the tensor's */
    assert_true(lt_placement_equal(&p->dst[0], &rs));
    lt_trace *tr = lt_comm_trace(comm);
    lt_trace_event ev;
    assert_int_equal(lt_trace_count(tr), 1);
    LT_CHECK(lt_trace_get(tr, 0, &ev));
    assert_int_equal(ev.coll, LT_COLL_REDUCE_SCATTER);
    static const size_t want[4] = {72, 144, 72, 0};
    static const int64_t rows[4][2] = {{0, 2}, {2, 6}, {6, 8}, {8, 8}};
    for (int r = 0; r < 4; r++) {
        assert_int_equal(ev.recv[r], want[r]);
        const lt_tensor *t = lt_to_local(out, r);
        assert_int_equal(t->shape[0], rows[r][1] - rows[r][0]);
        for (int64_t j = 0; j < lt_numel(t); j++)   /* arange: rows [a, b) hold 3a .. 3b - 1 */
            assert_true(lt_get_flat(t, j) == (double)(rows[r][0] * 3 + j));
    }
    lt_plan_free(p);
    lt_comm_free(comm);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
}

/* Verification on the RaggedShard route: the report says it ran and
 * passed; a source whose replicas disagree is caught before the exchange
 * is trusted (step -1, the source), as on every other route. */
static void test_route_verify(void **state) {
    (void)state;
    lt_mesh m;
    int64_t s[] = {4, 2};
    lt_placement r = lt_replicate(), rs;
    LT_CHECK(lt_mesh_parse("2", &m));
    LT_CHECK(lt_placement_parse("RS((0,),(1,3))", &rs));
    lt_tensor *a, *b;
    LT_CHECK(lt_tensor_new(LT_F32, 2, s, &a));
    LT_CHECK(lt_arange_fill(a));
    LT_CHECK(lt_clone(a, &b));
    lt_dtensor *src = NULL, *out = NULL;
    lt_tensor *shards[2] = {a, b};
    LT_CHECK(lt_from_local(&m, shards, &r, 1, 0, &src));
    lt_redistribute_opts o;
    lt_verify_report rep;
    memset(&o, 0, sizeof o);
    o.verify = 1;
    o.report = &rep;
    LT_CHECK(lt_redistribute(src, &rs, 1, &o, &out, NULL));
    assert_true(rep.checked && rep.ok);
    lt_dtensor_free(out);
    lt_dtensor_free(src);
    lt_set_flat(b, 5, 99);   /* rank 1's replica: element (2, 1) differs */
    LT_CHECK(lt_from_local(&m, shards, &r, 1, 0, &src));
    LT_EXPECT_STATUS(lt_redistribute(src, &rs, 1, &o, &out, NULL), LT_MISMATCH);
    assert_null(out);
    assert_true(rep.checked && !rep.ok);
    assert_int_equal(rep.step, -1);
    if (!strstr(rep.message, "RaggedShard route")) fail_msg("report: %s", rep.message);
    lt_dtensor_free(src);
    lt_tensor_free(a);
    lt_tensor_free(b);
}

int main(void) {
    lt_test_backend_from_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spellings),     cmocka_unit_test(test_bad_spellings),
        cmocka_unit_test(test_refusals),      cmocka_unit_test(test_docs_examples),
        cmocka_unit_test(test_not_yet),       cmocka_unit_test(test_sweep_layouts),
        cmocka_unit_test(test_sweep_redistribute), cmocka_unit_test(test_route_verify),
        cmocka_unit_test(test_partial_reduce_scatter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
