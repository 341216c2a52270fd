/* test/test_collectives.c — every collective against a brute-force reference.
 *
 * The reference is written separately from collectives_sim: its own group
 * enumeration (from docs/SEMANTICS.md §1 coordinates), its own split rules (docs/SEMANTICS.md
 * §2 and §11.1) and plain index loops over double arrays. Inputs hold small
 * integers, so every dtype and every reduction order gives exact results
 * (avg is compared with the dtype's tolerance). Each case runs twice: into
 * fresh outputs, then again into those outputs as preallocated buffers.
 */
#include "localtensor/collectives_sim/collectives.h"
#include "localtensor/collectives_sim/engine.h"
#include "tools/render/render.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/testutil.h"

/* ---- reference ---------------------------------------------------------------- */

typedef struct arr {
    int nd;
    int64_t sh[LT_MAX_DIMS];
    double *v;        /* row-major */
    int ph;           /* placeholder standing for sh */
} arr;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static int rnd(int n) { /* 0..n-1 */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (int)(rng_state % (uint64_t)n);
}

static int64_t numel_of(int nd, const int64_t *sh) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= sh[i];
    return n;
}

/* groups along mesh dim d, from coordinates: grp[g*n + c] */
static int ref_groups(const lt_mesh *m, int d, int *grp) {
    int ng = 0, n = m->shape[d];
    for (int r = 0; r < m->world; r++) {
        int c[LT_MESH_MAX_DIMS], rem = r;
        for (int i = m->ndim - 1; i >= 0; i--) { c[i] = rem % m->shape[i]; rem /= m->shape[i]; }
        if (c[d] != 0) continue;
        for (int k = 0; k < n; k++) {
            c[d] = k;
            int rr = 0;
            for (int i = 0; i < m->ndim; i++) rr = rr * m->shape[i] + c[i];
            grp[ng * n + k] = rr;
        }
        ng++;
    }
    return ng;
}

static void ref_split(const lt_split_rule *rule, int64_t n, int k, int64_t *sz) {
    lt_split_kind kind = rule ? rule->kind : LT_SPLIT_CHUNK;
    int64_t c = (n + k - 1) / k;
    for (int j = 0; j < k; j++) {
        switch (kind) {
        case LT_SPLIT_CHUNK: sz[j] = n - j * c < 0 ? 0 : (n - j * c > c ? c : n - j * c); break;
        case LT_SPLIT_BALANCED: sz[j] = n / k + (j < n % k); break;
        case LT_SPLIT_LAST: {
            int64_t cc = (k - 1) * c < n ? c : n / k;
            sz[j] = j < k - 1 ? cc : n - (k - 1) * cc;
            break;
        }
        default: sz[j] = rule->sizes[j]; break;
        }
    }
}

/* row-major multi-index of linear i */
static void unflat(int nd, const int64_t *sh, int64_t i, int64_t *idx) {
    for (int d = nd - 1; d >= 0; d--) { idx[d] = sh[d] ? i % sh[d] : 0; i = sh[d] ? i / sh[d] : 0; }
}
static int64_t flat(int nd, const int64_t *sh, const int64_t *idx) {
    int64_t i = 0;
    for (int d = 0; d < nd; d++) i = i * sh[d] + idx[d];
    return i;
}

static arr arr_new(int nd, const int64_t *sh) {
    arr a = {.nd = nd};
    memcpy(a.sh, sh, (size_t)nd * sizeof *sh);
    a.v = calloc((size_t)numel_of(nd, sh) + 1, sizeof(double));
    return a;
}

static arr arr_of(const lt_tensor *t) {
    arr a = arr_new(t->ndim, t->shape);
    lt_to_doubles(t, a.v);
    return a;
}

/* a[dim in start..start+len) */
static arr ref_narrow(const arr *a, int dim, int64_t start, int64_t len) {
    int64_t sh[LT_MAX_DIMS], idx[LT_MAX_DIMS];
    memcpy(sh, a->sh, sizeof sh);
    sh[dim] = len;
    arr o = arr_new(a->nd, sh);
    for (int64_t i = 0; i < numel_of(o.nd, sh); i++) {
        unflat(o.nd, sh, i, idx);
        idx[dim] += start;
        o.v[i] = a->v[flat(a->nd, a->sh, idx)];
    }
    return o;
}

/* concatenation of ps[0..n) along dim */
static arr ref_cat(const arr *ps, int n, int dim) {
    int64_t sh[LT_MAX_DIMS], idx[LT_MAX_DIMS];
    memcpy(sh, ps[0].sh, sizeof sh);
    sh[dim] = 0;
    for (int p = 0; p < n; p++) sh[dim] += ps[p].sh[dim];
    arr o = arr_new(ps[0].nd, sh);
    for (int64_t i = 0; i < numel_of(o.nd, sh); i++) {
        unflat(o.nd, sh, i, idx);
        int p = 0;
        while (idx[dim] >= ps[p].sh[dim]) { idx[dim] -= ps[p].sh[dim]; p++; }
        o.v[i] = ps[p].v[flat(ps[p].nd, ps[p].sh, idx)];
    }
    return o;
}

static double quantize(lt_dtype dt, double v) {
    unsigned char buf[8];
    lt_dtype_store(dt, buf, v);
    return lt_dtype_load(dt, buf);
}

/* elementwise op over ps[0..n) (same shapes) */
static arr ref_reduce(const arr *ps, int n, lt_redop op, lt_dtype dt) {
    arr o = arr_new(ps[0].nd, ps[0].sh);
    for (int64_t i = 0; i < numel_of(o.nd, o.sh); i++) {
        double s = 0, pr = 1, mx = -INFINITY, mn = INFINITY;
        for (int p = 0; p < n; p++) {
            double x = ps[p].v[i];
            s += x; pr *= x; mx = x > mx ? x : mx; mn = x < mn ? x : mn;
        }
        double v = op == LT_REDOP_SUM ? s : op == LT_REDOP_PRODUCT ? pr : op == LT_REDOP_MAX ? mx
                 : op == LT_REDOP_MIN ? mn : lt_dtype_is_float(dt) ? s / n : trunc(s / n);
        if (dt == LT_BOOL) v = (op == LT_REDOP_SUM || op == LT_REDOP_MAX) ? mx : mn;
        o.v[i] = quantize(dt, v);
    }
    return o;
}

static void expect_arr(const lt_tensor *t, const arr *e, lt_dtype dt, const char *what, int rank) {
    if (!t) fail_msg("%s: rank %d has no output", what, rank);
    if (t->placeholder != e->ph)
        fail_msg("%s: rank %d placeholder flag %d, wanted %d", what, rank, t->placeholder, e->ph);
    if (e->ph) {
        if (t->logical_ndim != e->nd || lt_numel(t) != 0 || t->ndim < 1 || t->shape[0] != 0)
            fail_msg("%s: rank %d placeholder has the wrong shape", what, rank);
        for (int i = 0; i < e->nd; i++)
            if (t->logical[i] != e->sh[i])
                fail_msg("%s: rank %d placeholder logical dim %d", what, rank, i);
        return;
    }
    if (t->ndim != e->nd) fail_msg("%s: rank %d ndim %d, wanted %d", what, rank, t->ndim, e->nd);
    for (int i = 0; i < e->nd; i++)
        if (t->shape[i] != e->sh[i])
            fail_msg("%s: rank %d dim %d is %lld, wanted %lld", what, rank, i,
                     (long long)t->shape[i], (long long)e->sh[i]);
    if (t->dtype != dt) fail_msg("%s: rank %d dtype %s", what, rank, lt_dtype_name(t->dtype));
    double rtol, atol;
    lt_dtype_default_tol(dt, &rtol, &atol);
    for (int64_t i = 0; i < numel_of(e->nd, e->sh); i++) {
        double a = lt_get_flat(t, i), w = e->v[i];
        if (!(fabs(a - w) <= atol + rtol * fabs(w)))
            fail_msg("%s: rank %d element %lld is %g, wanted %g", what, rank, (long long)i, a, w);
    }
}

/* ---- the sweep ---------------------------------------------------------------- */

typedef struct sweep {
    const lt_mesh *m;
    lt_comm *c;
    int md, n, ng;
    int grp[64];
    lt_tensor *in[8], *out[8];
    arr ain[8], want[8];
} sweep;

static lt_tensor *rand_tensor(lt_dtype dt, int nd, const int64_t *sh) {
    int64_t n = numel_of(nd, sh);
    double *v = calloc((size_t)n + 1, sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = dt == LT_BOOL ? rnd(2) : rnd(7) - 3;
    lt_tensor *t = NULL;
    LT_CHECK(lt_tensor_from_doubles(dt, nd, sh, v, n, &t));
    free(v);
    return t;
}

static void sweep_free(sweep *s) {
    for (int r = 0; r < s->m->world; r++) {
        lt_tensor_free(s->in[r]);
        lt_tensor_free(s->out[r]);
        free(s->ain[r].v);
        free(s->want[r].v);
        s->in[r] = s->out[r] = NULL;
        s->ain[r].v = s->want[r].v = NULL;
    }
}

static lt_split_rule make_rule(int kind, int n, int64_t total) {
    lt_split_rule r = lt_split_chunk();
    r.kind = (lt_split_kind)kind;
    if (kind == LT_SPLIT_EXPLICIT) { /* random sizes summing to total, zeros likely */
        int64_t sz[LT_SPLIT_MAX_EXPLICIT] = {0};
        for (int64_t e = 0; e < total; e++) sz[rnd(n)]++;
        LT_CHECK(lt_split_explicit(sz, n, &r));
    }
    return r;
}

enum { AG, GA, AR, RE, RS, A2A, BC, SC, PE, NCOLL };
static const char *const coll_names[NCOLL] = {"all_gather", "gather", "all_reduce", "reduce",
    "reduce_scatter", "all_to_all", "broadcast", "scatter", "permute"};

static lt_status call_coll(sweep *s, int which, int dim, int dim2, int root, lt_redop op,
                           const lt_split_rule *rule, const int *perm) {
    switch (which) {
    case AG: return lt_all_gather(s->c, s->md, s->in, dim, s->out);
    case GA: return lt_gather(s->c, s->md, s->in, root, dim, s->out);
    case AR: return lt_all_reduce(s->c, s->md, s->in, op, s->out);
    case RE: return lt_reduce_ranks(s->c, s->md, s->in, root, op, s->out);
    case RS: return lt_reduce_scatter(s->c, s->md, s->in, op, dim, rule, s->out);
    case A2A: return lt_all_to_all(s->c, s->md, s->in, dim, dim2, rule, s->out);
    case BC: return lt_broadcast(s->c, s->md, s->in, root, s->out);
    case SC: return lt_scatter(s->c, s->md, s->in, root, dim, rule, s->out);
    default: return lt_permute_ranks(s->c, s->md, s->in, perm, s->out);
    }
}

/* The reference result of member j of a group (inputs ps[n]) for
 * collective `which` (the brute-force model, written from the rules). */
static arr ref_member(int which, arr *ps, int n, int j, int dim, int dim2, int root, lt_redop op,
                      lt_dtype dt, const lt_split_rule *rule) {
    arr w = {0};
    int64_t sz[8], off = 0;
    switch (which) {
    case AG: w = ref_cat(ps, n, dim); break;
    case GA: w = ref_cat(ps, n, dim); w.ph = j != root; break;
    case AR: w = ref_reduce(ps, n, op, dt); break;
    case RE: w = ref_reduce(ps, n, op, dt); w.ph = j != root; break;
    case RS: {
        arr red = ref_reduce(ps, n, op, dt);
        ref_split(rule, red.sh[dim], n, sz);
        for (int k = 0; k < j; k++) off += sz[k];
        w = ref_narrow(&red, dim, off, sz[j]);
        free(red.v);
        break;
    }
    case A2A: {
        arr pieces[8];
        for (int i = 0; i < n; i++) {
            ref_split(rule, ps[i].sh[dim], n, sz);
            off = 0;
            for (int k = 0; k < j; k++) off += sz[k];
            pieces[i] = ref_narrow(&ps[i], dim, off, sz[j]);
        }
        w = ref_cat(pieces, n, dim2);
        for (int i = 0; i < n; i++) free(pieces[i].v);
        break;
    }
    case BC: w = ref_narrow(&ps[root], 0, 0, ps[root].nd ? ps[root].sh[0] : 0); break;
    case SC:
        ref_split(rule, ps[root].sh[dim], n, sz);
        for (int k = 0; k < j; k++) off += sz[k];
        w = ref_narrow(&ps[root], dim, off, sz[j]);
        break;
    default: break;
    }
    return w;
}

/* One random case of collective `which`. */
static void run_case(sweep *s, int which, lt_dtype dt, lt_redop op, int rule_kind) {
    int n = s->n, nd = 1 + rnd(3);
    int dim = rnd(nd), dim2 = rnd(nd), root = rnd(n);
    int64_t base[LT_MAX_DIMS];
    for (int i = 0; i < nd; i++) base[i] = rnd(4);
    int perm[8];
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = rnd(i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    /* the split dim must fit the rule */
    int split_coll = which == RS || which == A2A || which == SC;
    int64_t splitn = rnd(3 * n + 1);
    if (rule_kind == LT_SPLIT_LAST && splitn < n) splitn = n + rnd(n + 1);
    lt_split_rule rule = make_rule(rule_kind, n, splitn);
    if (split_coll) base[dim] = splitn;
    for (int g = 0; g < s->ng; g++) {
        for (int p = 0; p < n; p++) {
            int r = s->grp[g * n + p];
            int64_t sh[LT_MAX_DIMS];
            memcpy(sh, base, sizeof sh);
            if (which == AG || which == GA) sh[dim] = rnd(4);              /* uneven, zeros */
            if (which == A2A && (dim2 != dim || rule_kind == LT_SPLIT_CHUNK)) sh[dim2] = rnd(5);
            if (which == A2A && dim2 == dim && rule_kind == LT_SPLIT_LAST) sh[dim] = n + rnd(3);
            if (which == PE) for (int i = 0; i < nd; i++) sh[i] = rnd(4);
            if ((which == BC || which == SC) && p != root && rnd(2)) continue; /* ignored: NULL */
            s->in[r] = rand_tensor(dt, nd, sh);
            s->ain[r] = arr_of(s->in[r]);
        }
    }
    char what[160];
    snprintf(what, sizeof what, "%s mesh dim %d dtype %s op %s rule %s dims %d,%d root %d",
             coll_names[which], s->md, lt_dtype_name(dt), lt_redop_name(op),
             lt_split_kind_name((lt_split_kind)rule_kind), dim, dim2, root);
    /* the reference */
    for (int g = 0; g < s->ng; g++) {
        const int *rk = &s->grp[g * n];
        arr ps[8];
        for (int p = 0; p < n; p++) ps[p] = s->ain[rk[p]];
        for (int j = 0; j < n; j++) {
            s->want[rk[j]] = ref_member(which, ps, n, j, dim, dim2, root, op, dt, &rule);
        }
        if (which == PE)
            for (int i = 0; i < n; i++)
                s->want[rk[perm[i]]] = ref_narrow(&ps[i], 0, 0, ps[i].sh[0]);
    }
    for (int pass = 0; pass < 2; pass++) { /* fresh outputs, then the same ones preallocated */
        if (pass == 1)
            for (int r = 0; r < s->m->world; r++)
                if (s->out[r] && lt_numel(s->out[r])) LT_CHECK(lt_fill(s->out[r], 1));
        lt_status st = call_coll(s, which, dim, dim2, root, op, &rule, perm);
        if (st) fail_msg("%s: %s: %s", what, lt_status_name(st), lt_errmsg());
        for (int r = 0; r < s->m->world; r++) expect_arr(s->out[r], &s->want[r], dt, what, r);
    }
    sweep_free(s);
}

static const char *const sweep_meshes[] = {"1", "2", "3", "4", "5", "6", "7", "8",
                                           "2x2", "2x3", "4x2", "2x2x2"};

static void test_sweep(void **state) {
    (void)state;
    for (size_t mi = 0; mi < sizeof sweep_meshes / sizeof *sweep_meshes; mi++) {
        lt_mesh m;
        LT_CHECK(lt_mesh_parse(sweep_meshes[mi], &m));
        sweep s;
        memset(&s, 0, sizeof s);
        s.m = &m;
        LT_CHECK(lt_comm_new(&m, &s.c));
        for (s.md = 0; s.md < m.ndim; s.md++) {
            s.n = m.shape[s.md];
            s.ng = ref_groups(&m, s.md, s.grp);
            for (int dt = 0; dt < LT_DTYPE_COUNT; dt++) {
                for (int which = 0; which < NCOLL; which++) {
                    int red = which == AR || which == RE || which == RS;
                    int rules = which == RS || which == A2A || which == SC;
                    for (int op = 0; op < (red ? LT_REDOP_COUNT : 1); op++) {
                        if (dt == LT_BOOL && op == LT_REDOP_AVG) continue;
                        for (int rk = 0; rk < (rules ? LT_SPLIT_COUNT : 1); rk++)
                            for (int trial = 0; trial < 2; trial++)
                                run_case(&s, which, (lt_dtype)dt, (lt_redop)op, rk);
                    }
                }
            }
        }
        lt_comm_free(s.c);
    }
}

/* ---- hand-checked cases ---------------------------------------------------------- */

static lt_tensor *vec(lt_dtype dt, int64_t n, const double *v) {
    lt_tensor *t = NULL;
    LT_CHECK(lt_tensor_from_doubles(dt, 1, &n, v, n, &t));
    return t;
}

static void free_all(lt_tensor **ts, int n) {
    for (int i = 0; i < n; i++) { lt_tensor_free(ts[i]); ts[i] = NULL; }
}

static void test_reduction_order_and_rounding(void **state) {
    (void)state;
    lt_mesh m;
    lt_comm *c;
    LT_CHECK(lt_mesh_parse("3", &m));
    LT_CHECK(lt_comm_new(&m, &c));
    lt_tensor *in[3], *out[3] = {0};
    /* f32 in group order: (1e8 + 1) rounds to 1e8, then - 1e8 gives 0 */
    in[0] = vec(LT_F32, 1, (double[]){1e8});
    in[1] = vec(LT_F32, 1, (double[]){1});
    in[2] = vec(LT_F32, 1, (double[]){-1e8});
    LT_CHECK(lt_all_reduce(c, 0, in, LT_REDOP_SUM, out));
    for (int r = 0; r < 3; r++) assert_true(lt_get_flat(out[r], 0) == 0.0);
    free_all(in, 3);
    free_all(out, 3);
    /* bf16 accumulates in f32 and rounds once: 256 + 1 + 1 = 258 (per-step
     * bf16 rounding would give 256) */
    in[0] = vec(LT_BF16, 1, (double[]){256});
    in[1] = vec(LT_BF16, 1, (double[]){1});
    in[2] = vec(LT_BF16, 1, (double[]){1});
    LT_CHECK(lt_all_reduce(c, 0, in, LT_REDOP_SUM, out));
    assert_true(lt_get_flat(out[2], 0) == 258.0);
    free_all(out, 3);
    LT_CHECK(lt_all_reduce(c, 0, in, LT_REDOP_AVG, out));
    assert_true(lt_get_flat(out[0], 0) == 86.0);
    free_all(in, 3);
    free_all(out, 3);
    /* integer avg truncates toward zero: (-7 + 0 + 0) / 3 = -2 */
    in[0] = vec(LT_I32, 1, (double[]){-7});
    in[1] = vec(LT_I32, 1, (double[]){0});
    in[2] = vec(LT_I32, 1, (double[]){0});
    LT_CHECK(lt_all_reduce(c, 0, in, LT_REDOP_AVG, out));
    assert_true(lt_get_flat(out[1], 0) == -2.0);
    free_all(in, 3);
    free_all(out, 3);
    /* bool: sum saturates (or), avg is rejected */
    in[0] = vec(LT_BOOL, 2, (double[]){1, 0});
    in[1] = vec(LT_BOOL, 2, (double[]){1, 0});
    in[2] = vec(LT_BOOL, 2, (double[]){1, 1});
    LT_CHECK(lt_all_reduce(c, 0, in, LT_REDOP_SUM, out));
    assert_true(lt_get_flat(out[0], 0) == 1.0 && lt_get_flat(out[0], 1) == 1.0);
    free_all(out, 3);
    LT_EXPECT_STATUS(lt_all_reduce(c, 0, in, LT_REDOP_AVG, out), LT_UNSUPPORTED);
    assert_non_null(strstr(lt_errmsg(), "bool"));
    for (int r = 0; r < 3; r++) assert_null(out[r]);
    free_all(in, 3);
    lt_comm_free(c);
}

/* in place, overlapping buffers, strided inputs */
static void test_aliasing_and_strides(void **state) {
    (void)state;
    lt_mesh m;
    lt_comm *c;
    LT_CHECK(lt_mesh_parse("2", &m));
    LT_CHECK(lt_comm_new(&m, &c));
    lt_tensor *in[2], *out[2];
    in[0] = vec(LT_F32, 3, (double[]){1, 2, 3});
    in[1] = vec(LT_F32, 3, (double[]){10, 20, 30});
    out[0] = in[0];
    out[1] = in[1];
    LT_CHECK(lt_all_reduce(c, 0, in, LT_REDOP_SUM, out)); /* in place */
    lt_test_expect_values(in[0], 1, (int64_t[]){3}, (double[]){11, 22, 33}, "in-place rank 0");
    lt_test_expect_values(in[1], 1, (int64_t[]){3}, (double[]){11, 22, 33}, "in-place rank 1");
    /* crossed buffers: out[0] is in[1] and out[1] is in[0]; identity perm swaps them */
    LT_CHECK(lt_fill(in[1], 5));
    out[0] = in[1];
    out[1] = in[0];
    LT_CHECK(lt_permute_ranks(c, 0, in, (int[]){0, 1}, out));
    lt_test_expect_values(in[1], 1, (int64_t[]){3}, (double[]){11, 22, 33}, "crossed rank 0");
    lt_test_expect_values(in[0], 1, (int64_t[]){3}, (double[]){5, 5, 5}, "crossed rank 1");
    /* two outputs sharing memory are an error */
    out[0] = out[1] = in[0];
    LT_EXPECT_STATUS(lt_all_reduce(c, 0, in, LT_REDOP_SUM, out), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "ranks 0 and 1 overlap"));
    free_all(in, 2);
    /* all_gather into a buffer whose slice is the input (all_gather_into_tensor) */
    lt_tensor *big[2];
    for (int r = 0; r < 2; r++) {
        LT_CHECK(lt_tensor_new(LT_I64, 1, (int64_t[]){4}, &big[r]));
        LT_CHECK(lt_narrow(big[r], 0, 2 * r, 2, &in[r]));
        LT_CHECK(lt_fill(in[r], r + 1));
    }
    LT_CHECK(lt_all_gather(c, 0, in, 0, big));
    for (int r = 0; r < 2; r++)
        lt_test_expect_values(big[r], 1, (int64_t[]){4}, (double[]){1, 1, 2, 2}, "gather into");
    free_all(in, 2);
    free_all(big, 2);
    /* strided (transposed) inputs */
    lt_tensor *base[2];
    for (int r = 0; r < 2; r++) {
        double v[6] = {0, 1, 2, 3, 4, 5};
        for (int i = 0; i < 6; i++) v[i] += 10 * r;
        LT_CHECK(lt_tensor_from_doubles(LT_F64, 2, (int64_t[]){3, 2}, v, 6, &base[r]));
        LT_CHECK(lt_transpose(base[r], 0, 1, &in[r])); /* (2, 3): rows 0 2 4 / 1 3 5 */
        out[r] = NULL;
    }
    LT_CHECK(lt_all_gather(c, 0, in, 1, out));
    lt_test_expect_values(out[1], 2, (int64_t[]){2, 6},
                          (double[]){0, 2, 4, 10, 12, 14, 1, 3, 5, 11, 13, 15},
                          "strided all_gather");
    free_all(out, 2);
    LT_CHECK(lt_all_reduce(c, 0, in, LT_REDOP_MAX, out));
    lt_test_expect_values(out[0], 2, (int64_t[]){2, 3}, (double[]){10, 12, 14, 11, 13, 15},
                          "strided max");
    free_all(out, 2);
    LT_CHECK(lt_reduce_scatter(c, 0, in, LT_REDOP_SUM, 1, NULL, out));
    lt_test_expect_values(out[0], 2, (int64_t[]){2, 2}, (double[]){10, 14, 12, 16}, "strided rs 0");
    lt_test_expect_values(out[1], 2, (int64_t[]){2, 1}, (double[]){18, 20}, "strided rs 1");
    free_all(out, 2);
    LT_CHECK(lt_all_to_all(c, 0, in, 1, 0, NULL, out));
    lt_test_expect_values(out[1], 2, (int64_t[]){4, 1}, (double[]){4, 5, 14, 15}, "strided a2a");
    free_all(out, 2);
    free_all(in, 2);
    free_all(base, 2);
    lt_comm_free(c);
}

static void expect_msg(const char *const *needles) {
    for (; *needles; needles++)
        if (!strstr(lt_errmsg(), *needles))
            fail_msg("message '%s' lacks '%s'", lt_errmsg(), *needles);
}

/* test_errors' split rules on a 2x2 comm with (2, 3) f32 inputs: explicit
 * sizes that do not fit the dim or the group fail and name both; zero sizes
 * and the `last` rule run. Frees every output it makes. */
static void split_rule_errors(lt_comm *c, lt_tensor **in, lt_tensor **out) {
    lt_split_rule rule;
    LT_CHECK(lt_split_explicit((int64_t[]){1, 1}, 2, &rule));
    LT_EXPECT_STATUS(lt_reduce_scatter(c, 1, in, LT_REDOP_SUM, 1, &rule, out), LT_INVALID);
    expect_msg(
        (const char *[]){"reduce_scatter on mesh dim 1, group [0,1]", "dim 1", "sum to 2", NULL});
    LT_CHECK(lt_split_explicit((int64_t[]){1, 1, 1}, 3, &rule));
    LT_EXPECT_STATUS(lt_scatter(c, 0, in, 1, 1, &rule, out), LT_INVALID);
    expect_msg((const char *[]){"scatter on mesh dim 0", "3 sizes", NULL});
    LT_CHECK(lt_split_explicit((int64_t[]){3, 0}, 2, &rule)); /* zeros are fine */
    LT_CHECK(lt_all_to_all(c, 0, in, 1, 0, &rule, out));
    assert_int_equal(out[2]->shape[0], 0 + 4);
    assert_int_equal(out[3]->shape[1], 0);
    free_all(out, 4);
    rule.kind = LT_SPLIT_LAST;
    LT_CHECK(lt_reduce_scatter(c, 0, in, LT_REDOP_SUM, 0, &rule, out));
    free_all(out, 4);
}

static void test_errors(void **state) {
    (void)state;
    lt_mesh m;
    lt_comm *c;
    LT_CHECK(lt_mesh_parse("2x2", &m));
    LT_CHECK(lt_comm_new(&m, &c));
    lt_tensor *in[4], *out[4] = {0};
    for (int r = 0; r < 4; r++)
        LT_CHECK(lt_tensor_new(LT_F32, 2, (int64_t[]){2, r == 3 ? 4 : 3}, &in[r]));
    /* shape mismatch in the second group: the first group's outputs are freed again */
    LT_EXPECT_STATUS(lt_all_reduce(c, 1, in, LT_REDOP_SUM, out), LT_SHAPE);
    expect_msg((const char *[]){"all_reduce on mesh dim 1, group [2,3]: rank 3 has shape (2, 4) "
                                "but rank 2 has shape (2, 3)",
                                NULL});
    for (int r = 0; r < 4; r++) assert_null(out[r]);
    LT_EXPECT_STATUS(lt_all_gather(c, 0, in, 0, out), LT_SHAPE);
    expect_msg((const char *[]){"mesh dim 0", "group [1,3]", "rank 3", "(2, 4)",
                                "all dims but dim 0", NULL});
    LT_CHECK(lt_all_gather(c, 0, in, 1, out)); /* dim 1 may differ */
    free_all(out, 4);
    lt_tensor_free(in[3]);
    LT_CHECK(lt_tensor_new(LT_I32, 2, (int64_t[]){2, 3}, &in[3]));
    LT_EXPECT_STATUS(lt_reduce_ranks(c, 0, in, 0, LT_REDOP_MAX, out), LT_DTYPE);
    expect_msg((const char *[]){"reduce on mesh dim 0, group [1,3]", "rank 3 has dtype i32",
                                "rank 1 has dtype f32", NULL});
    lt_tensor_free(in[3]);
    LT_CHECK(lt_tensor_new(LT_F32, 2, (int64_t[]){2, 3}, &in[3]));
    split_rule_errors(c, in, out);
    /* rooted, perm, mesh dim, dims, NULL inputs */
    LT_EXPECT_STATUS(lt_broadcast(c, 1, in, 2, out), LT_INVALID);
    expect_msg((const char *[]){"broadcast on mesh dim 1", "root 2", NULL});
    LT_EXPECT_STATUS(lt_gather(c, 0, in, -1, 0, out), LT_INVALID);
    LT_EXPECT_STATUS(lt_permute_ranks(c, 0, in, (int[]){0, 0}, out), LT_INVALID);
    expect_msg((const char *[]){"permute on mesh dim 0", "not a permutation", NULL});
    LT_EXPECT_STATUS(lt_permute_ranks(c, 0, in, (int[]){0, 2}, out), LT_INVALID);
    expect_msg((const char *[]){"perm[1] = 2", NULL});
    LT_EXPECT_STATUS(lt_all_gather(c, 2, in, 0, out), LT_INVALID);
    expect_msg((const char *[]){"mesh dim 2 is out of range for mesh 2x2", NULL});
    LT_EXPECT_STATUS(lt_barrier(c, -1), LT_INVALID);
    LT_EXPECT_STATUS(lt_all_gather(c, 0, in, 2, out), LT_INVALID);
    expect_msg((const char *[]){"dim 2 is out of range for rank 0's shape (2, 3)", NULL});
    LT_EXPECT_STATUS(lt_all_to_all(c, 0, in, 0, -1, NULL, out), LT_INVALID);
    lt_tensor *keep = in[1];
    in[1] = NULL;
    LT_EXPECT_STATUS(lt_all_reduce(c, 1, in, LT_REDOP_SUM, out), LT_INVALID);
    expect_msg((const char *[]){"group [0,1]: rank 1 has no input", NULL});
    LT_CHECK(lt_broadcast(c, 1, in, 0, out)); /* non-root inputs are ignored */
    free_all(out, 4);
    /* a placeholder input is named as such */
    LT_CHECK(lt_tensor_placeholder(LT_F32, 2, (int64_t[]){2, 3}, &in[1]));
    LT_EXPECT_STATUS(lt_all_reduce(c, 1, in, LT_REDOP_SUM, out), LT_SHAPE);
    expect_msg((const char *[]){"rank 1 has a placeholder for (2, 3)", NULL});
    lt_tensor_free(in[1]);
    in[1] = keep;
    /* preallocated outputs of the wrong shape or dtype */
    LT_CHECK(lt_tensor_new(LT_F32, 2, (int64_t[]){2, 3}, &out[2]));
    LT_EXPECT_STATUS(lt_all_gather(c, 0, in, 0, out), LT_SHAPE);
    expect_msg((const char *[]){
        "preallocated output of rank 2 has shape (2, 3) f32 but the result is (4, 3) f32", NULL});
    for (int r = 0; r < 4; r++) if (r != 2) assert_null(out[r]);
    assert_non_null(out[2]);
    LT_EXPECT_STATUS(lt_gather(c, 0, in, 0, 0, out), LT_SHAPE);
    expect_msg((const char *[]){"a placeholder for (4, 3)", NULL});
    free_all(out, 4);
    assert_int_equal(lt_trace_count(lt_comm_trace(c)), 4); /* failed calls record nothing */
    free_all(in, 4);
    lt_comm_free(c);
    LT_EXPECT_STATUS(lt_all_reduce(NULL, 0, in, LT_REDOP_SUM, out), LT_INVALID);
}

static void test_placeholders(void **state) {
    (void)state;
    lt_mesh m;
    lt_comm *c;
    LT_CHECK(lt_mesh_parse("3", &m));
    LT_CHECK(lt_comm_new(&m, &c));
    lt_tensor *in[3], *out[3] = {0};
    for (int r = 0; r < 3; r++) LT_CHECK(lt_tensor_new(LT_F16, 2, (int64_t[]){r, 2}, &in[r]));
    LT_CHECK(lt_gather(c, 0, in, 1, 0, out));
    for (int r = 0; r < 3; r++) {
        assert_int_equal(out[r]->placeholder, r != 1);
        assert_int_equal(out[r]->dtype, LT_F16);
        if (r == 1) continue;
        assert_int_equal(out[r]->logical_ndim, 2);
        assert_int_equal(out[r]->logical[0], 3);
        assert_int_equal(out[r]->logical[1], 2);
        assert_int_equal(lt_numel(out[r]), 0);
    }
    assert_int_equal(out[1]->shape[0], 3);
    free_all(out, 3);
    free_all(in, 3);
    for (int r = 0; r < 3; r++) LT_CHECK(lt_tensor_new(LT_I64, 0, NULL, &in[r])); /* 0-d */
    LT_CHECK(lt_reduce_ranks(c, 0, in, 2, LT_REDOP_SUM, out));
    assert_int_equal(out[0]->placeholder, 1);
    assert_int_equal(out[0]->logical_ndim, 0);
    assert_int_equal(out[0]->ndim, 1);
    assert_int_equal(out[0]->shape[0], 0);
    assert_int_equal(out[2]->ndim, 0);
    LT_CHECK(lt_reduce_ranks(c, 0, in, 2, LT_REDOP_SUM, out)); /* placeholders preallocated */
    free_all(out, 3);
    free_all(in, 3);
    lt_comm_free(c);
}

static void expect_sizes(const size_t *got, const size_t *want, int n, const char *what) {
    for (int i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: rank %d has %zu, wanted %zu", what, i, got[i], want[i]);
}

/* test_trace's events (from mark on: five of them) as text and JSON, then
 * a disabled trace recording nothing and a cleared one recording again. */
static void check_trace_outputs(lt_trace *t, lt_comm *c, size_t mark) {
    /* text and JSON */
    FILE *f = tmpfile();
    lt_trace_print(t, f, 0);
    rewind(f);
    char buf[4096] = "";
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    buf[got] = '\0';
    fclose(f);
    assert_non_null(strstr(buf, "all_gather"));
    assert_non_null(strstr(buf, "step A"));
    assert_non_null(strstr(buf, "op=sum"));
    cJSON *j = lt_trace_to_json(t, mark);
    assert_non_null(j);
    cJSON *evs = cJSON_GetObjectItem(j, "events");
    assert_int_equal(cJSON_GetArraySize(evs), 5);
    cJSON *e0 = cJSON_GetArrayItem(evs, 0);
    assert_string_equal(cJSON_GetObjectItem(e0, "collective")->valuestring, "all_reduce");
    assert_true(cJSON_GetObjectItem(e0, "busbw_factor")->valuedouble == 1.5);
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(e0, "bytes_recv"), 0)->valueint, 36);
    assert_true(cJSON_GetObjectItem(j, "total_bytes_sent")->valuedouble == 280);
    cJSON_Delete(j);
    /* disabled: nothing recorded; clear keeps working */
    assert_int_equal(lt_trace_enable(t, 0), 1);
    LT_CHECK(lt_barrier(c, 0));
    assert_int_equal(lt_trace_count(t), 6);
    lt_trace_enable(t, 1);
    lt_trace_clear(t);
    assert_int_equal(lt_trace_count(t), 0);
    LT_CHECK(lt_barrier(c, 0));
    assert_int_equal(lt_trace_count(t), 1);
    assert_true(lt_coll_busbw_factor(LT_COLL_BROADCAST, 8) == 1.0);
    assert_true(lt_coll_busbw_factor(LT_COLL_ALL_GATHER, 8) == 7.0 / 8.0);
    assert_true(lt_coll_busbw_factor(LT_COLL_BARRIER, 8) == 0.0);
}

static void test_trace(void **state) {
    (void)state;
    lt_mesh m;
    lt_comm *c;
    LT_CHECK(lt_mesh_parse("4", &m));
    LT_CHECK(lt_comm_new(&m, &c));
    lt_trace *t = lt_comm_trace(c);
    lt_tensor *in[4], *out[4] = {0};
    int64_t rows[4] = {2, 1, 0, 3};
    for (int r = 0; r < 4; r++) LT_CHECK(lt_tensor_new(LT_F32, 1, &rows[r], &in[r]));
    LT_CHECK(lt_trace_set_label(t, "step A"));
    /* all_gather: shard bytes 8, 4, 0, 12 (24 in all) */
    LT_CHECK(lt_all_gather(c, 0, in, 0, out));
    free_all(out, 4);
    lt_trace_event ev;
    LT_CHECK(lt_trace_get(t, 0, &ev));
    assert_int_equal(ev.coll, LT_COLL_ALL_GATHER);
    assert_int_equal(ev.ngroups, 1);
    assert_int_equal(ev.group_size, 4);
    assert_string_equal(ev.label, "step A");
    expect_sizes(ev.recv, (size_t[]){16, 20, 24, 12}, 4, "all_gather recv");
    expect_sizes(ev.sent, (size_t[]){24, 12, 0, 36}, 4, "all_gather sent");
    assert_int_equal(ev.total_recv, 72);
    size_t mark = lt_trace_marker(t);
    LT_CHECK(lt_trace_set_label(t, NULL));
    free_all(in, 4);
    /* all_reduce of 5 f32 (20 bytes) over 4: pieces 2,1,1,1 elements = 8,4,4,4
     * bytes; each rank 3*piece + (20 - piece) */
    for (int r = 0; r < 4; r++) LT_CHECK(lt_tensor_new(LT_F32, 1, (int64_t[]){5}, &in[r]));
    LT_CHECK(lt_all_reduce(c, 0, in, LT_REDOP_SUM, out));
    LT_CHECK(lt_trace_get(t, 1, &ev));
    expect_sizes(ev.recv, (size_t[]){36, 28, 28, 28}, 4, "all_reduce recv");
    expect_sizes(ev.sent, (size_t[]){36, 28, 28, 28}, 4, "all_reduce sent");
    assert_int_equal(ev.total_sent, 2 * 3 * 20);
    assert_string_equal(ev.label, "");
    assert_int_equal(ev.op, LT_REDOP_SUM);
    /* reduce_scatter of the same: pieces by chunk 2,2,1,0 elements */
    free_all(out, 4);
    LT_CHECK(lt_reduce_scatter(c, 0, in, LT_REDOP_SUM, 0, NULL, out));
    free_all(out, 4);
    LT_CHECK(lt_trace_get(t, 2, &ev));
    expect_sizes(ev.recv, (size_t[]){24, 24, 12, 0}, 4, "reduce_scatter recv");
    expect_sizes(ev.sent, (size_t[]){12, 12, 16, 20}, 4, "reduce_scatter sent");
    LT_CHECK(lt_broadcast(c, 0, in, 3, out));
    free_all(out, 4);
    LT_CHECK(lt_trace_get(t, 3, &ev));
    expect_sizes(ev.recv, (size_t[]){20, 20, 20, 0}, 4, "broadcast recv");
    expect_sizes(ev.sent, (size_t[]){0, 0, 0, 60}, 4, "broadcast sent");
    assert_int_equal(ev.root, 3);
    LT_CHECK(lt_permute_ranks(c, 0, in, (int[]){1, 0, 2, 3}, out));
    free_all(out, 4);
    LT_CHECK(lt_trace_get(t, 4, &ev));
    expect_sizes(ev.recv, (size_t[]){20, 20, 0, 0}, 4, "permute recv");
    LT_CHECK(lt_barrier(c, 0));
    lt_trace_totals tot;
    lt_trace_totals_since(t, mark, &tot);
    assert_int_equal(tot.events, 5);
    assert_int_equal(tot.per_coll[LT_COLL_BARRIER], 1);
    assert_int_equal(tot.bytes_sent, 120 + 60 + 60 + 40);
    assert_int_equal(tot.bytes_recv, tot.bytes_sent);
    check_trace_outputs(t, c, mark);
    free_all(in, 4);
    lt_comm_free(c);
}


/* Large enough for several reduction blocks and for the streaming-store
 * path (a group writing >= 16 MiB); values checked in bulk. */
static void test_large(void **state) {
    (void)state;
    lt_mesh m;
    lt_comm *c;
    LT_CHECK(lt_mesh_parse("2", &m));
    LT_CHECK(lt_comm_new(&m, &c));
    int64_t E = (1 << 21) + 5; /* 8 MiB + 20 bytes of f32 per rank */
    lt_tensor *in[2], *out[2] = {0};
    for (int r = 0; r < 2; r++) {
        LT_CHECK(lt_tensor_new(LT_F32, 1, &E, &in[r]));
        LT_CHECK(lt_arange_fill(in[r]));
    }
    double *v = malloc((size_t)(4 * E) * sizeof *v);
    assert_non_null(v);
    LT_CHECK(lt_all_reduce(c, 0, in, LT_REDOP_SUM, out));
    for (int r = 0; r < 2; r++) {
        lt_to_doubles(out[r], v);
        for (int64_t i = 0; i < E; i += 1 + (i & 7))
            if (v[i] != (double)((float)i + (float)i))
                fail_msg("all_reduce rank %d element %lld: %g", r, (long long)i, v[i]);
        assert_true(v[E - 1] == 2.0 * (double)(float)(E - 1));
    }
    free_all(out, 2);
    LT_CHECK(lt_all_gather(c, 0, in, 0, out));
    lt_to_doubles(out[1], v);
    for (int64_t i = 0; i < 2 * E; i += 1 + (i & 7))
        if (v[i] != (double)(float)(i % E))
            fail_msg("all_gather element %lld: %g", (long long)i, v[i]);
    free_all(out, 2);
    /* bf16 reduce_scatter: staged blocks, uneven pieces */
    lt_tensor *h[2];
    for (int r = 0; r < 2; r++) {
        LT_CHECK(lt_tensor_new(LT_BF16, 1, &E, &h[r]));
        LT_CHECK(lt_fill(h[r], r + 1));
    }
    lt_tensor *big[2] = {0};
    int64_t twice = 4 * E;
    for (int r = 0; r < 2; r++) { /* make each group write >= 16 MiB: f32 all_gather */
        LT_CHECK(lt_tensor_new(LT_F32, 1, &twice, &big[r]));
        LT_CHECK(lt_fill(big[r], 0.5));
    }
    LT_CHECK(lt_reduce_scatter(c, 0, h, LT_REDOP_MAX, 0, NULL, out));
    assert_int_equal(out[0]->shape[0] + out[1]->shape[0], E);
    lt_to_doubles(out[1], v);
    for (int64_t i = 0; i < out[1]->shape[0]; i++)
        if (v[i] != 2.0) fail_msg("reduce_scatter element %lld: %g", (long long)i, v[i]);
    free_all(out, 2);
    LT_CHECK(lt_broadcast(c, 0, big, 1, out));
    lt_to_doubles(out[0], v);
    assert_true(v[0] == 0.5 && v[twice - 1] == 0.5);
    free_all(out, 2);
    free_all(big, 2);
    free_all(h, 2);
    free_all(in, 2);
    free(v);
    lt_comm_free(c);
}

static lt_status no_init(const lt_mesh *m, void **ctx) {
    (void)m;
    *ctx = NULL;
    return LT_OK;
}
static void no_free(void *ctx) { (void)ctx; }
static lt_status fake_coll(void *ctx, const lt_coll_group *g, lt_tensor *const *in,
                           lt_tensor *const *out) {
    (void)ctx; (void)in;
    for (int p = 0; p < g->size; p++) /* marks every output with its group index + 1 */
        if (lt_numel(out[g->ranks[p]])) LT_CHECK(lt_fill(out[g->ranks[p]], g->index + 1));
    return LT_OK;
}

/* the engine table: a minimal engine, a missing optional entry, bad tables */
static void test_engine_table(void **state) {
    (void)state;
    lt_engine_i e = {0};
    e.version = LT_ENGINE_API_VERSION;
    e.name = "fake";
    e.init = no_init;
    e.free = no_free;
    e.all_gather = e.all_reduce = e.reduce_scatter = e.all_to_all = e.broadcast = fake_coll;
    lt_mesh m;
    lt_comm *c;
    LT_CHECK(lt_mesh_parse("2x2", &m));
    LT_CHECK(lt_comm_new_engine(&m, &e, &c));
    assert_string_equal(lt_comm_engine_name(c), "fake");
    lt_tensor *in[4], *out[4] = {0};
    for (int r = 0; r < 4; r++) LT_CHECK(lt_tensor_new(LT_I32, 1, (int64_t[]){2}, &in[r]));
    LT_CHECK(lt_all_reduce(c, 0, in, LT_REDOP_SUM, out)); /* groups [0,2] and [1,3] */
    assert_true(lt_get_flat(out[2], 0) == 1.0 && lt_get_flat(out[3], 1) == 2.0);
    free_all(out, 4);
    LT_EXPECT_STATUS(lt_scatter(c, 0, in, 0, 0, NULL, out), LT_UNSUPPORTED);
    expect_msg((const char *[]){"engine 'fake'", "scatter", NULL});
    for (int r = 0; r < 4; r++) assert_null(out[r]);
    LT_CHECK(lt_barrier(c, 1)); /* no barrier entry: a no-op */
    free_all(in, 4);
    lt_comm_free(c);
    e.version = LT_ENGINE_API_VERSION + 1;
    LT_EXPECT_STATUS(lt_comm_new_engine(&m, &e, &c), LT_INVALID);
    assert_null(c);
    e.version = LT_ENGINE_API_VERSION;
    e.broadcast = NULL;
    LT_EXPECT_STATUS(lt_comm_new_engine(&m, &e, &c), LT_INVALID);
    assert_null(c);
}

/* ---- sizes that do not fit ------------------------------------------------------ */

/* Two (0, 2^62) inputs hold nothing, but gathering or concatenating them
 * along dim 1 would need a size of 2^63: an error, not a wrapped size. */
static void test_summed_sizes_overflow(void **state) {
    (void)state;
    lt_mesh m;
    lt_comm *c;
    LT_CHECK(lt_mesh_parse("2", &m));
    LT_CHECK(lt_comm_new(&m, &c));
    int64_t sh[2] = {0, (int64_t)1 << 62};
    lt_tensor *in[2], *out[2] = {0};
    for (int r = 0; r < 2; r++) LT_CHECK(lt_tensor_new(LT_F32, 2, sh, &in[r]));
    LT_EXPECT_STATUS(lt_all_gather(c, 0, in, 1, out), LT_OVERFLOW);
    assert_non_null(
        strstr(lt_errmsg(),
               "all_gather on mesh dim 0, group [0,1]: the gathered size of dim 1 overflows"));
    LT_EXPECT_STATUS(lt_gather(c, 0, in, 1, 1, out), LT_OVERFLOW);
    LT_EXPECT_STATUS(lt_all_to_all(c, 0, in, 0, 1, NULL, out), LT_OVERFLOW);
    assert_non_null(strstr(lt_errmsg(), "the concatenated size of dim 1 overflows"));
    assert_null(out[0]);
    assert_null(out[1]);
    /* along dim 0 the sum is fine: (0, 2^62) each */
    LT_CHECK(lt_all_gather(c, 0, in, 0, out));
    assert_int_equal(out[1]->shape[0], 0);
    assert_int_equal(out[1]->shape[1], sh[1]);
    free_all(out, 2);
    free_all(in, 2);
    lt_comm_free(c);
}

/* Results that together exceed the memory budget are refused before any
 * is allocated. The budget comes from LOCALTENSOR_MEMORY_LIMIT and the sizes
 * are small, so even a broken check could not eat memory here: 64 ranks
 * gathering 1024 f32 each share one result of 64 * 4 KiB = 256 KiB. */
static void test_results_must_fit(void **state) {
    (void)state;
    lt_mesh m;
    lt_comm *c;
    LT_CHECK(lt_mesh_parse("64", &m));
    LT_CHECK(lt_comm_new(&m, &c));
    int64_t n = 1024;
    lt_tensor *in[64], *out[64] = {0};
    for (int r = 0; r < 64; r++) LT_CHECK(lt_tensor_new(LT_F32, 1, &n, &in[r]));
    setenv("LOCALTENSOR_MEMORY_LIMIT", "128K", 1);
    LT_EXPECT_STATUS(lt_all_gather(c, 0, in, 0, out), LT_NOMEM);
    if (!strstr(lt_errmsg(), "all_gather on mesh dim 0 needs 256.0 KiB for the shards of all 64 "
                             "ranks, more than this machine's 128.0 KiB"))
        fail_msg("%s", lt_errmsg());
    for (int r = 0; r < 64; r++) assert_null(out[r]);
    assert_int_equal(lt_trace_count(lt_comm_trace(c)), 0);
    /* all_reduce's members share one result of 4 KiB */
    LT_CHECK(lt_all_reduce(c, 0, in, LT_REDOP_SUM, out));
    for (int r = 1; r < 64; r++) assert_ptr_equal(out[r]->storage, out[0]->storage);
    free_all(out, 64);
    /* gather needs only its root's 256 KiB */
    LT_EXPECT_STATUS(lt_gather(c, 0, in, 0, 0, out), LT_NOMEM);
    setenv("LOCALTENSOR_MEMORY_LIMIT", "256K", 1);
    LT_CHECK(lt_gather(c, 0, in, 0, 0, out));
    free_all(out, 64);
    /* preallocated outputs need nothing new */
    setenv("LOCALTENSOR_MEMORY_LIMIT", "16M", 1);
    LT_CHECK(lt_all_gather(c, 0, in, 0, out));
    setenv("LOCALTENSOR_MEMORY_LIMIT", "0", 1);
    LT_CHECK(lt_all_gather(c, 0, in, 0, out));
    setenv("LOCALTENSOR_MEMORY_LIMIT", "lots", 1);
    lt_tensor *fresh[64] = {0};
    LT_EXPECT_STATUS(lt_all_gather(c, 0, in, 0, fresh), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "LOCALTENSOR_MEMORY_LIMIT: 'lots' is not a size"));
    unsetenv("LOCALTENSOR_MEMORY_LIMIT");
    free_all(out, 64);
    free_all(in, 64);
    lt_comm_free(c);
}

int main(void) {
    lt_test_backend_from_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_reduction_order_and_rounding),
        cmocka_unit_test(test_aliasing_and_strides),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_placeholders),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_engine_table),
        cmocka_unit_test(test_summed_sizes_overflow),
        cmocka_unit_test(test_results_must_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
