/* test/test_layout.c — layout math against docs/SEMANTICS.md examples (§3, §4, §6, §9)
 * and against a brute-force reference that splits index lists step by step,
 * written separately from localtensor/layout.c. */
#include <stdlib.h>
#include <string.h>

#include "localtensor/localtensor.h"
#include "test/testutil.h"

/* ---- brute-force reference ------------------------------------------------ */

typedef struct ilist {
    int64_t n;
    int64_t v[64];
} ilist;

/* sizes of n over k pieces, from docs/SEMANTICS.md §2 / §11.1, written out directly;
 * returns 0 when the rule rejects the split */
static int ref_sizes(const lt_split_rule *r, int64_t n, int k, int64_t *s) {
    if (r->kind == LT_SPLIT_CHUNK) {
        int64_t c = (n + k - 1) / k;
        for (int j = 0; j < k; j++) {
            int64_t lo = j * c, hi = (j + 1) * c;
            if (hi > n) hi = n;
            s[j] = lo >= n ? 0 : hi - lo;
        }
        return 1;
    }
    if (r->kind == LT_SPLIT_BALANCED) {
        for (int j = 0; j < k; j++) s[j] = n / k + (j < n % k);
        return 1;
    }
    if (r->kind == LT_SPLIT_LAST) {
        if (n < k) return 0;
        int64_t c = (n + k - 1) / k;
        if (!((k - 1) * c < n)) c = n / k;
        for (int j = 0; j < k - 1; j++) s[j] = c;
        s[k - 1] = n - (k - 1) * c;
        return 1;
    }
    int64_t sum = 0;
    for (int j = 0; j < k; j++) { s[j] = r->sizes[j]; sum += s[j]; }
    return sum == n;
}

/* list[lo, hi) */
static ilist slice(const ilist *l, int64_t lo, int64_t hi) {
    ilist o;
    o.n = 0;
    for (int64_t i = lo; i < hi; i++) o.v[o.n++] = l->v[i];
    return o;
}

/* chunk-rule piece j of k of a list */
static ilist chunk_piece(const ilist *l, int k, int j) {
    int64_t s[64];
    lt_split_rule ch = lt_split_chunk();
    ref_sizes(&ch, l->n, k, s);
    int64_t off = 0;
    for (int q = 0; q < j; q++) off += s[q];
    return slice(l, off, off + s[j]);
}

/* returns 0 when the layout is rejected for this rank */
static int ref_layout(const lt_mesh *m, int ndim, const int64_t *g, const lt_placement *pl,
                      int rank, ilist *lists) {
    int c[8];
    lt_mesh_coord(m, rank, c);
    for (int d = 0; d < ndim; d++) {
        lists[d].n = g[d];
        for (int64_t i = 0; i < g[d]; i++) lists[d].v[i] = i;
    }
    for (int i = 0; i < m->ndim; i++) {
        const lt_placement *p = &pl[i];
        int k = m->shape[i];
        if (p->kind == LT_PL_SHARD) {
            int64_t s[64];
            if (!ref_sizes(&p->rule, lists[p->dim].n, k, s)) return 0;
            int64_t off = 0;
            for (int q = 0; q < c[i]; q++) off += s[q];
            lists[p->dim] = slice(&lists[p->dim], off, off + s[c[i]]);
        } else if (p->kind == LT_PL_STRIDED) {
            ilist out;
            out.n = 0;
            for (int j = 0; j < p->split_factor; j++) {
                ilist piece = chunk_piece(&lists[p->dim], p->split_factor, j);
                ilist part = chunk_piece(&piece, k, c[i]);
                for (int64_t q = 0; q < part.n; q++) out.v[out.n++] = part.v[q];
            }
            lists[p->dim] = out;
        }
    }
    return 1;
}

/* ---- enumeration -------------------------------------------------------------- */

#define MAXOPT 24

/* every placement a mesh dim of size k can take for a tensor of ndim dims */
static int options(int k, int ndim, const int64_t *g, lt_placement *o) {
    int n = 0;
    o[n++] = lt_replicate();
    o[n++] = lt_partial(LT_REDOP_SUM);
    o[n++] = lt_partial(LT_REDOP_MAX);
    for (int d = 0; d < ndim; d++) {
        lt_split_rule r = lt_split_chunk();
        o[n++] = lt_shard_rule(d, r);
        r.kind = LT_SPLIT_BALANCED;
        o[n++] = lt_shard_rule(d, r);
        r.kind = LT_SPLIT_LAST;
        o[n++] = lt_shard_rule(d, r);
        /* explicit: the first rank gets nothing, the rest share the global size */
        int64_t left = g[d], sz[LT_SPLIT_MAX_EXPLICIT];
        for (int j = 0; j < k; j++) {
            sz[j] = j == 0 && k > 1 ? 0 : (j == k - 1 ? left : left / k);
            left -= sz[j];
        }
        LT_CHECK(lt_split_explicit(sz, k, &r));
        o[n++] = lt_shard_rule(d, r);
        o[n++] = lt_strided(d, 1);
        o[n++] = lt_strided(d, 2);
        o[n++] = lt_strided(d, 3);
    }
    return n;
}

static long n_checked, n_rejected;

static void check_layout_vs_ref(const lt_mesh *m, int ndim, const int64_t *g,
                                const lt_placement *pl) {
    char txt[256], ms[64], gs[64];
    lt_placements_format(pl, m->ndim, txt, sizeof txt);
    lt_mesh_format(m, ms, sizeof ms);
    lt_shape_format(ndim, g, gs, sizeof gs);
    int ref_ok = 1;
    for (int r = 0; r < m->world && ref_ok; r++) {
        ilist lists[2];
        ref_ok = ref_layout(m, ndim, g, pl, r, lists);
    }
    lt_status st = lt_layout_check(m, ndim, g, pl);
    if (!ref_ok) {
        if (st != LT_INVALID)
            fail_msg("mesh %s shape %s %s: reference rejects, layout gives %s", ms, gs, txt,
                     lt_status_name(st));
        n_rejected++;
        return;
    }
    if (st) fail_msg("mesh %s shape %s %s: layout rejects: %s", ms, gs, txt, lt_errmsg());
    for (int r = 0; r < m->world; r++) {
        ilist lists[2];
        ref_layout(m, ndim, g, pl, r, lists);
        lt_rank_layout l;
        LT_CHECK(lt_layout_rank(m, ndim, g, pl, r, &l));
        int64_t ls[2], go[2];   /* the list-free path must agree with the reference too */
        LT_CHECK(lt_local_shape_and_offset(m, ndim, g, pl, r, ls, go));
        int empty = 0;
        for (int d = 0; d < ndim; d++) empty |= g[d] == 0;
        assert_int_equal(l.lists, !empty);
        for (int d = 0; d < ndim; d++) {
            if (ls[d] != lists[d].n || l.global_offset[d] != go[d])
                fail_msg("mesh %s shape %s %s rank %d dim %d: local_shape_and_offset gives (%lld, "
                         "%lld), the layout (%lld, %lld)",
                         ms, gs, txt, r, d, (long long)ls[d], (long long)go[d],
                         (long long)l.local_shape[d], (long long)l.global_offset[d]);
            int consecutive = 1;
            for (int64_t i = 1; i < lists[d].n; i++)
                consecutive &= lists[d].v[i] == lists[d].v[i - 1] + 1;
            if (l.contiguous[d] != consecutive)
                fail_msg("mesh %s shape %s %s rank %d dim %d: contiguous %d, reference %d", ms, gs,
                         txt, r, d, l.contiguous[d], consecutive);
            if (empty && l.idx[d])
                fail_msg("mesh %s shape %s %s: a list was built for an empty tensor", ms, gs, txt);
            if (l.local_shape[d] != lists[d].n)
                fail_msg("mesh %s shape %s %s rank %d dim %d: local size %lld, reference %lld", ms,
                         gs, txt, r, d, (long long)l.local_shape[d], (long long)lists[d].n);
            int sharded = 0;
            for (int i = 0; i < m->ndim; i++)
                sharded |= lt_placement_is_shard_like(&pl[i]) && pl[i].dim == d;
            int64_t want_off = !sharded ? 0 : (lists[d].n ? lists[d].v[0] : g[d]);
            if (l.global_offset[d] != want_off)
                fail_msg("mesh %s shape %s %s rank %d dim %d: offset %lld, reference %lld", ms, gs,
                         txt, r, d, (long long)l.global_offset[d], (long long)want_off);
            for (int64_t i = 0; !empty && i < lists[d].n; i++) {
                int64_t got = l.idx[d] ? l.idx[d][i] : i;
                if (got != lists[d].v[i])
                    fail_msg("mesh %s shape %s %s rank %d dim %d: local %lld is global %lld, "
                             "reference %lld",
                             ms, gs, txt, r, d, (long long)i, (long long)got,
                             (long long)lists[d].v[i]);
            }
        }
        lt_rank_layout_free(&l);
    }
    n_checked++;
}

static void sweep_mesh(const char *mesh_s, int ndim, const int64_t *g) {
    lt_mesh m;
    LT_CHECK(lt_mesh_parse(mesh_s, &m));
    lt_placement opts[LT_MESH_MAX_DIMS][MAXOPT];
    int nopt[LT_MESH_MAX_DIMS];
    for (int i = 0; i < m.ndim; i++) nopt[i] = options(m.shape[i], ndim, g, opts[i]);
    int idx[LT_MESH_MAX_DIMS] = {0};
    for (;;) {
        lt_placement pl[LT_MESH_MAX_DIMS];
        int npartial_ops = 0, bad_mix = 0;
        lt_redop first = LT_REDOP_SUM;
        for (int i = 0; i < m.ndim; i++) {
            pl[i] = opts[i][idx[i]];
            if (pl[i].kind == LT_PL_PARTIAL) {
                if (npartial_ops++ && pl[i].op != first) bad_mix = 1;
                first = pl[i].op;
            }
        }
        if (!bad_mix) check_layout_vs_ref(&m, ndim, g, pl);
        int i = m.ndim - 1;
        while (i >= 0 && ++idx[i] == nopt[i]) idx[i--] = 0;
        if (i < 0) break;
    }
}

static void test_brute_force(void **state) {
    (void)state;
    const char *meshes[] = {"1", "2", "3", "4", "5", "6", "7", "8", "2x2", "2x3", "4x2", "2x2x2"};
    const int64_t sizes1[] = {0, 1, 2, 3, 5, 8, 9, 13};
    const int64_t shapes2[][2] = {{0, 3}, {5, 7}, {3, 2}, {1, 1}, {9, 4}, {0, 13}, {6, 0}};
    for (size_t mi = 0; mi < sizeof meshes / sizeof meshes[0]; mi++) {
        for (size_t s = 0; s < sizeof sizes1 / sizeof sizes1[0]; s++)
            sweep_mesh(meshes[mi], 1, &sizes1[s]);
        int three = strchr(meshes[mi], 'x') && strchr(strchr(meshes[mi], 'x') + 1, 'x');
        for (size_t s = 0; s < sizeof shapes2 / sizeof shapes2[0]; s++)
            if (!three || s < 2) sweep_mesh(meshes[mi], 2, shapes2[s]);
    }
    print_message("layout vs reference: %ld layouts checked, %ld rejected by both\n", n_checked,
                  n_rejected);
    assert_true(n_checked > 10000);
    assert_true(n_rejected > 100);
}

/* layout.c keeps each thread's answers for the last few (mesh, shape,
 * placements) per rank. Specs that differ in one part of that key only
 * (a mesh size, a shape, a dim, a split factor, a rule, Partial against
 * Replicate, explicit sizes), asked rank by rank in turn, more of them than
 * it keeps (so entries are taken over), against the reference: an answer
 * kept for one spec and given for another would show here. */
static void test_layout_memo_interleaved(void **state) {
    (void)state;
    typedef struct spec_ {
        const char *mesh, *pls;
        int64_t g[2];
    } spec_;
    static const spec_ specs[] = {
        {"2x2x2", "S(0),S(1),SS(0,2)", {9, 13}}, {"2x2x2", "S(0),S(1),SS(0,3)", {9, 13}},
        {"2x2x2", "S(0),S(1),SS(1,2)", {9, 13}}, {"2x2x2", "S(0),S(1),SS(0,2)", {9, 12}},
        {"2x2x2", "S(0),S(1),SS(0,2)", {8, 13}}, {"2x2x2", "S(0,balanced),S(1),SS(0,2)", {9, 13}},
        {"2x2x2", "S(0,last),S(1),SS(0,2)", {9, 13}}, {"2x2x2", "S(0,[0,9]),S(1),SS(0,2)", {9, 13}},
        {"2x2x2", "S(0,[1,8]),S(1),SS(0,2)", {9, 13}}, {"2x2x2", "R,S(1),SS(0,2)", {9, 13}},
        {"2x2x2", "P(sum),S(1),SS(0,2)", {9, 13}}, {"2x3", "S(0),SS(0,2)", {9, 13}},
        {"3x2", "S(0),SS(0,2)", {9, 13}},          {"2x2x2", "S(1),S(0),SS(0,2)", {9, 13}},
    };
    enum { NS = sizeof specs / sizeof specs[0] };
    lt_mesh m[NS];
    lt_placement pl[NS][8];
    for (int x = 0; x < NS; x++) {
        int np;
        LT_CHECK(lt_mesh_parse(specs[x].mesh, &m[x]));
        LT_CHECK(lt_placements_parse(specs[x].pls, pl[x], 8, &np));
        LT_CHECK(lt_placements_check(&m[x], 2, pl[x], np, pl[x]));
    }
    long checked = 0;
    for (int round = 0; round < 3; round++)
        for (int r = 0; r < 8; r++)
            for (int y = 0; y < NS; y++) {
                int x = round == 1   ? NS - 1 - y
                        : round == 2 ? (y * 5) % NS
                                     : y; /* 5 and NS are coprime */
                if (r >= m[x].world) continue;
                ilist lists[2];
                assert_true(ref_layout(&m[x], 2, specs[x].g, pl[x], r, lists));
                int64_t ls[2], go[2];
                LT_CHECK(lt_local_shape_and_offset(&m[x], 2, specs[x].g, pl[x], r, ls, go));
                lt_rank_layout l;
                LT_CHECK(lt_layout_rank(&m[x], 2, specs[x].g, pl[x], r, &l));
                for (int d = 0; d < 2; d++) {
                    int64_t want_off = lists[d].n ? lists[d].v[0] : 0;
                    int sharded = 0;
                    for (int i = 0; i < m[x].ndim; i++)
                        sharded |= lt_placement_is_shard_like(&pl[x][i]) && pl[x][i].dim == d;
                    if (sharded && !lists[d].n) want_off = specs[x].g[d];
                    if (!sharded) want_off = 0;
                    if (ls[d] != lists[d].n || go[d] != want_off ||
                        l.local_shape[d] != lists[d].n || l.global_offset[d] != want_off)
                        fail_msg("round %d, %s on %s (%lld, %lld), rank %d dim %d: (%lld, %lld) "
                                 "and (%lld, %lld), "
                                 "reference (%lld, %lld)",
                                 round, specs[x].pls, specs[x].mesh, (long long)specs[x].g[0],
                                 (long long)specs[x].g[1], r, d, (long long)ls[d], (long long)go[d],
                                 (long long)l.local_shape[d], (long long)l.global_offset[d],
                                 (long long)lists[d].n, (long long)want_off);
                    for (int64_t i = 0; i < lists[d].n; i++)
                        assert_int_equal(l.idx[d] ? l.idx[d][i] : i, lists[d].v[i]);
                }
                lt_rank_layout_free(&l);
                checked++;
            }
    assert_int_equal(checked, 3 * (12 * 8 + 2 * 6));
}

/* A mesh of more ranks than are kept per layout-memo entry: answered
 * directly; the lists of a dim too big to share one allocation with the
 * others (and of one that does), against a reference that splits by hand. */
static void test_layout_memo_big_mesh(void **state) {
    (void)state;
    lt_mesh big;
    lt_placement bp[3];
    int np;
    LT_CHECK(lt_mesh_parse("4x4x8", &big));
    LT_CHECK(lt_placements_parse("S(0),SS(0,3),S(0)", bp, 3, &np));
    const int64_t g1s[] = {300, 2000};
    for (int s = 0; s < 2; s++) {
        const int64_t *g1 = &g1s[s];
        for (int r = 0; r < big.world; r += 7) {
            int64_t ls, go, *ref = malloc(sizeof(int64_t) * (size_t)*g1);
            assert_non_null(ref);
            for (int64_t i = 0; i < *g1; i++)
                ref[i] = i; /* the reference's splits, on a list this long */
            int64_t n = *g1, c[3];
            int cc[3];
            lt_mesh_coord(&big, r, cc);
            for (int i = 0; i < 3; i++) c[i] = cc[i];
            for (int i = 0; i < 3; i++) {
                int64_t k = big.shape[i], out = 0;
                if (bp[i].kind == LT_PL_SHARD) {
                    int64_t ch = (n + k - 1) / k, lo = c[i] * ch, hi = lo + ch < n ? lo + ch : n;
                    for (int64_t q = lo; q < hi; q++) ref[out++] = ref[q];
                } else {
                    int64_t sf = bp[i].split_factor, pc = (n + sf - 1) / sf;
                    for (int64_t j = 0; j < sf; j++) {
                        int64_t plo = j * pc, phi = plo + pc < n ? plo + pc : n;
                        if (plo >= n) break;
                        int64_t pn = phi - plo, ch = (pn + k - 1) / k, lo = c[i] * ch,
                                hi = lo + ch < pn ? lo + ch : pn;
                        for (int64_t q = lo; q < hi; q++)
                            ref[out++] = ref[plo + q]; /* out <= plo + q: in place */
                    }
                }
                n = out;
            }
            LT_CHECK(lt_local_shape_and_offset(&big, 1, g1, bp, r, &ls, &go));
            assert_int_equal(ls, n);
            assert_int_equal(go, n ? ref[0] : *g1);
            lt_rank_layout l;
            LT_CHECK(lt_layout_rank(&big, 1, g1, bp, r, &l));
            assert_int_equal(l.local_shape[0], n);
            for (int64_t i = 0; i < n; i++) assert_int_equal(l.idx[0][i], ref[i]);
            lt_rank_layout_free(&l);
            free(ref);
        }
    }
}

/* ---- docs/SEMANTICS.md examples ----------------------------------------------- */

static void expect_rank_indices(const char *mesh_s, int64_t n, const char *pls, int ranks,
                                const int64_t *const *want, const int64_t *want_n) {
    lt_mesh m;
    lt_placement pl[8];
    int np;
    LT_CHECK(lt_mesh_parse(mesh_s, &m));
    LT_CHECK(lt_placements_parse(pls, pl, 8, &np));
    LT_CHECK(lt_placements_check(&m, 1, pl, np, pl));
    for (int r = 0; r < ranks; r++) {
        lt_rank_layout l;
        LT_CHECK(lt_layout_rank(&m, 1, &n, pl, r, &l));
        if (l.local_shape[0] != want_n[r])
            fail_msg("%s on %s rank %d: %lld indices, wanted %lld", pls, mesh_s, r,
                     (long long)l.local_shape[0], (long long)want_n[r]);
        for (int64_t i = 0; i < want_n[r]; i++)
            if (l.idx[0][i] != want[r][i])
                fail_msg("%s on %s rank %d: index %lld is %lld, wanted %lld", pls, mesh_s, r,
                         (long long)i, (long long)l.idx[0][i], (long long)want[r][i]);
        lt_rank_layout_free(&l);
    }
}

static void test_strided_examples(void **state) {
    (void)state;
    /* seed: arange(5) on (DP=2, TP=2) with [SS(0,2), S(0)] */
    expect_rank_indices(
        "dp=2,tp=2", 5, "SS(0,2),S(0)", 4,
        (const int64_t *const[]){(int64_t[]){0, 1}, (int64_t[]){3}, (int64_t[]){2}, (int64_t[]){4}},
        (int64_t[]){2, 1, 1, 1});
    /* arange(9), SS(0,2) on 4 ranks */
    expect_rank_indices("4", 9, "SS(0,2)", 4,
                        (const int64_t *const[]){(int64_t[]){0, 1, 5}, (int64_t[]){2, 3, 6},
                                                 (int64_t[]){4, 7}, (int64_t[]){8}},
                        (int64_t[]){3, 3, 2, 1});
    /* arange(8), SS(0,2) on 4 ranks */
    expect_rank_indices("4", 8, "SS(0,2)", 4,
                        (const int64_t *const[]){(int64_t[]){0, 4}, (int64_t[]){1, 5},
                                                 (int64_t[]){2, 6}, (int64_t[]){3, 7}},
                        (int64_t[]){2, 2, 2, 2});
    /* uneven: arange(9) on 4x2 with [SS(0,2), S(0)]: rank (3,0) = [8], (3,1) = [] */
    expect_rank_indices("4x2", 9, "SS(0,2),S(0)", 8,
                        (const int64_t *const[]){(int64_t[]){0, 1}, (int64_t[]){5},
                                                 (int64_t[]){2, 3}, (int64_t[]){6}, (int64_t[]){4},
                                                 (int64_t[]){7}, (int64_t[]){8}, (int64_t[]){0}},
                        (int64_t[]){2, 1, 2, 1, 1, 1, 1, 0});
    /* SS(d,1) equals S(d) */
    expect_rank_indices("4", 5, "SS(0,1)", 4,
                        (const int64_t *const[]){(int64_t[]){0, 1}, (int64_t[]){2, 3},
                                                 (int64_t[]){4}, (int64_t[]){0}},
                        (int64_t[]){2, 2, 1, 0});
}

static void test_row_blocks_8x8(void **state) {
    (void)state;
    /* 8x8 on 2x2: [S0,S0] row blocks 0,1,2,3; [SS(0,2),S0] row blocks 0,2,1,3 (blocks of 2 rows) */
    lt_mesh m;
    lt_placement pl[2];
    int np;
    int64_t g[2] = {8, 8};
    LT_CHECK(lt_mesh_parse("2x2", &m));
    const char *pls[] = {"S(0),S(0)", "SS(0,2),S(0)"};
    const int blocks[2][4] = {{0, 1, 2, 3}, {0, 2, 1, 3}};
    for (int t = 0; t < 2; t++) {
        LT_CHECK(lt_placements_parse(pls[t], pl, 2, &np));
        for (int r = 0; r < 4; r++) {
            lt_rank_layout l;
            LT_CHECK(lt_layout_rank(&m, 2, g, pl, r, &l));
            assert_int_equal(l.local_shape[0], 2);
            assert_int_equal(l.local_shape[1], 8);
            assert_int_equal(l.idx[0][0], 2 * blocks[t][r]);
            assert_int_equal(l.idx[0][1], 2 * blocks[t][r] + 1);
            lt_rank_layout_free(&l);
        }
    }
}

static void test_nested_18(void **state) {
    (void)state;
    /* (18, 3) on 4x2 with (S0, S0): dp chunks 5,5,5,3, tp chunks 3,2 | 3,2 | 3,2 | 2,1 */
    lt_mesh m;
    lt_placement pl[2];
    int np;
    int64_t g[2] = {18, 3};
    LT_CHECK(lt_mesh_parse("4x2", &m));
    LT_CHECK(lt_placements_parse("S(0),S(0)", pl, 2, &np));
    const int64_t want[8] = {3, 2, 3, 2, 3, 2, 2, 1};
    const int64_t off[8] = {0, 3, 5, 8, 10, 13, 15, 17};
    for (int r = 0; r < 8; r++) {
        int64_t ls[2], go[2];
        LT_CHECK(lt_local_shape_and_offset(&m, 2, g, pl, r, ls, go));
        assert_int_equal(ls[0], want[r]);
        assert_int_equal(ls[1], 3);
        assert_int_equal(go[0], off[r]);
        assert_int_equal(go[1], 0);
    }
}

static void test_offsets_table(void **state) {
    (void)state;
    /* docs/SEMANTICS.md §6 docstring: (2,5) on (DP=2,TP=2) with (S(1),S(1)) */
    lt_mesh m;
    lt_placement pl[2];
    int np;
    int64_t g[2] = {2, 5};
    LT_CHECK(lt_mesh_parse("dp=2,tp=2", &m));
    LT_CHECK(lt_placements_parse("S(1),S(1)", pl, 2, &np));
    const int64_t ls_want[4][2] = {{2, 2}, {2, 1}, {2, 1}, {2, 1}};
    const int64_t off_want[4][2] = {{0, 0}, {0, 2}, {0, 3}, {0, 4}};
    for (int r = 0; r < 4; r++) {
        int64_t ls[2], go[2];
        LT_CHECK(lt_local_shape_and_offset(&m, 2, g, pl, r, ls, go));
        assert_int_equal(ls[0], ls_want[r][0]);
        assert_int_equal(ls[1], ls_want[r][1]);
        assert_int_equal(go[0], off_want[r][0]);
        assert_int_equal(go[1], off_want[r][1]);
    }
    /* (8,4) on 2x4 with [S0,S0]: rank r is (1,4) at (r,0) */
    int64_t g2[2] = {8, 4};
    LT_CHECK(lt_mesh_parse("2x4", &m));
    LT_CHECK(lt_placements_parse("S(0),S(0)", pl, 2, &np));
    for (int r = 0; r < 8; r++) {
        int64_t ls[2], go[2];
        LT_CHECK(lt_local_shape_and_offset(&m, 2, g2, pl, r, ls, go));
        assert_int_equal(ls[0], 1);
        assert_int_equal(ls[1], 4);
        assert_int_equal(go[0], r);
        assert_int_equal(go[1], 0);
    }
    /* (2,) on 8 ranks: ranks 0, 1 hold (1,) at 0 and 1; the rest (0,) at 2 */
    int64_t g3 = 2;
    LT_CHECK(lt_mesh_parse("8", &m));
    LT_CHECK(lt_placements_parse("S(0)", pl, 1, &np));
    for (int r = 0; r < 8; r++) {
        int64_t ls, go;
        LT_CHECK(lt_local_shape_and_offset(&m, 1, &g3, pl, r, &ls, &go));
        assert_int_equal(ls, r < 2 ? 1 : 0);
        assert_int_equal(go, r < 2 ? r : 2);
    }
}

static void test_global_info(void **state) {
    (void)state;
    /* docs/SEMANTICS.md §9 examples */
    lt_mesh m;
    lt_placement pl[3];
    int np;
    int64_t gs[3], gst[3];
    LT_CHECK(lt_mesh_parse("2", &m));
    LT_CHECK(lt_placements_parse("S(2)", pl, 3, &np));
    LT_CHECK(lt_compute_global_tensor_info(&m, 3, (int64_t[]){4, 8, 2}, (int64_t[]){16, 1, 8}, pl,
                                           gs, gst));
    assert_int_equal(gs[0], 4); assert_int_equal(gs[1], 8); assert_int_equal(gs[2], 4);
    assert_int_equal(gst[0], 32); assert_int_equal(gst[1], 1); assert_int_equal(gst[2], 8);
    LT_CHECK(lt_mesh_parse("2x3x4", &m));
    LT_CHECK(lt_placements_parse("S(0),S(1),S(2)", pl, 3, &np));
    LT_CHECK(lt_compute_global_tensor_info(&m, 3, (int64_t[]){2, 3, 1}, (int64_t[]){3, 1, 1}, pl,
                                           gs, gst));
    assert_int_equal(gs[0], 4); assert_int_equal(gs[1], 9); assert_int_equal(gs[2], 4);
    assert_int_equal(gst[0], 36); assert_int_equal(gst[1], 1); assert_int_equal(gst[2], 3);
    LT_CHECK(lt_placements_parse("S(3),R,R", pl, 3, &np));
    LT_EXPECT_STATUS(lt_compute_global_tensor_info(&m, 3, (int64_t[]){2, 3, 1},
                                                   (int64_t[]){3, 1, 1}, pl, gs, gst),
                     LT_INVALID);
}

static void test_chunk_size_and_offset(void **state) {
    (void)state;
    /* docs/SEMANTICS.md §2: 5 over 4 -> (2,0) (2,2) (1,4) (0,5); even 8 over 4 -> (2, 2r) */
    const int64_t want[4][2] = {{2, 0}, {2, 2}, {1, 4}, {0, 5}};
    for (int r = 0; r < 4; r++) {
        int64_t sz, off;
        lt_chunk_size_and_offset(5, 4, r, &sz, &off);
        assert_int_equal(sz, want[r][0]);
        assert_int_equal(off, want[r][1]);
        lt_chunk_size_and_offset(8, 4, r, &sz, &off);
        assert_int_equal(sz, 2);
        assert_int_equal(off, 2 * r);
    }
    /* 9 over 4: full 3, rank 3 starts at 9 = curr -> (0, 9) */
    int64_t sz, off;
    lt_chunk_size_and_offset(9, 4, 3, &sz, &off);
    assert_int_equal(sz, 0);
    assert_int_equal(off, 9);
}

static void test_layout_errors(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement pl[2];
    int np;
    int64_t g = 3;
    LT_CHECK(lt_mesh_parse("4", &m));
    LT_CHECK(lt_placements_parse("S(0,last)", pl, 2, &np));
    LT_EXPECT_STATUS(lt_layout_check(&m, 1, &g, pl), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "mesh dim 0"));
    assert_non_null(strstr(lt_errmsg(), "S(0,last)"));
    /* nested explicit sizes that fit the outer split but not an inner piece */
    int64_t g2 = 6;
    LT_CHECK(lt_mesh_parse("2x2", &m));
    LT_CHECK(lt_placements_parse("S(0,[4,2]),S(0,[2,2])", pl, 2, &np));
    LT_EXPECT_STATUS(lt_layout_check(&m, 1, &g2, pl), LT_INVALID);
    assert_non_null(strstr(lt_errmsg(), "rank 2"));
}

/* ---- tensors without elements, huge dims ---------------------------------------- */

#define P61 ((int64_t)1 << 61)
#define P62 ((int64_t)1 << 62)

static void expect_rank(const char *mesh_s, const char *pls, int64_t g1, int rank, int64_t want_len,
                        int64_t want_off, int want_contig) {
    lt_mesh m;
    lt_placement pl[4];
    int np;
    int64_t g[2] = {0, g1};
    LT_CHECK(lt_mesh_parse(mesh_s, &m));
    LT_CHECK(lt_placements_parse(pls, pl, 4, &np));
    LT_CHECK(lt_placements_check(&m, 2, pl, np, pl));
    lt_rank_layout l;
    LT_CHECK(lt_layout_rank(&m, 2, g, pl, rank, &l));
    if (l.lists || l.idx[0] || l.idx[1])
        fail_msg("%s on %s: index lists built for a tensor without elements", pls, mesh_s);
    if (l.local_shape[0] != 0 || l.local_shape[1] != want_len || l.global_offset[1] != want_off ||
        l.contiguous[1] != want_contig)
        fail_msg("%s on %s rank %d: (%lld, %lld) at offset %lld, contiguous %d; wanted (0, %lld) "
                 "at %lld, %d",
                 pls, mesh_s, rank, (long long)l.local_shape[0], (long long)l.local_shape[1],
                 (long long)l.global_offset[1], l.contiguous[1], (long long)want_len,
                 (long long)want_off, want_contig);
    lt_rank_layout_free(&l);
    int64_t ls[2], go[2];
    LT_CHECK(lt_local_shape_and_offset(&m, 2, g, pl, rank, ls, go));
    assert_int_equal(ls[1], want_len);
    assert_int_equal(go[1], want_off);
}

/* A (0, 2^62) tensor holds nothing, so no layout of it may build index lists
 * sized by dim 1 (8 * 2^61 bytes wraps to 0 in size_t). Expected values by
 * hand from the split rules: chunk halves 2^62 into 2^61 + 2^61; SS(1,2)
 * over 2 cuts 2^62 into two pieces of 2^61 and gives member c the c-th
 * half (2^60) of each, so it is not one run; a later S(1) over 2 then keeps
 * one of those halves, a single run again (the row blocks 0, 2, 1, 3 of
 * docs/SEMANTICS.md §4, scaled to 2^60). */
static void test_empty_huge_dims(void **state) {
    (void)state;
    expect_rank("2", "S(1)", P62, 0, P61, 0, 1);
    expect_rank("2", "S(1)", P62, 1, P61, P61, 1);
    expect_rank("2", "SS(1,2)", P62, 0, P61, 0, 0);
    expect_rank("2", "SS(1,2)", P62, 1, P61, P61 / 2, 0);
    for (int r = 0; r < 4; r++) {
        int a = r / 2, b = r % 2;
        expect_rank("2x2", "SS(1,2),S(1)", P62, r, P61 / 2, b * P61 + a * (P61 / 2), 1);
    }
    /* an empty piece: global_offset is the global size of the dim */
    expect_rank("3", "S(1,[0,1,2])", 3, 0, 0, 3, 1);
    lt_mesh m;
    lt_placement pl[2];
    int np;
    int64_t g[2] = {0, P62};
    uint64_t bytes = 1;
    LT_CHECK(lt_mesh_parse("2x2", &m));
    LT_CHECK(lt_placements_parse("SS(1,2),S(1)", pl, 2, &np));
    LT_CHECK(lt_layout_check(&m, 2, g, pl));
    LT_CHECK(lt_layout_total_bytes(&m, 2, g, pl, 8, &bytes));
    assert_int_equal(bytes, 0);
}

/* The index list of a huge dim of a tensor that has elements cannot be
 * built: refused with LT_OVERFLOW before any allocation, not wrapped. */
static void test_index_list_too_big(void **state) {
    (void)state;
    lt_mesh m;
    lt_placement pl[1];
    int np;
    int64_t g = P62;
    LT_CHECK(lt_mesh_parse("2", &m));
    LT_CHECK(lt_placements_parse("S(0)", pl, 1, &np));
    lt_rank_layout l;
    LT_EXPECT_STATUS(lt_layout_rank(&m, 1, &g, pl, 1, &l), LT_OVERFLOW);
    assert_non_null(strstr(lt_errmsg(), "index list of dim 0"));
    for (int d = 0; d < LT_MAX_DIMS; d++) assert_null(l.idx[d]);
    int64_t ls, go;   /* sizes alone are fine */
    LT_CHECK(lt_local_shape_and_offset(&m, 1, &g, pl, 1, &ls, &go));
    assert_int_equal(ls, P61);
    assert_int_equal(go, P61);
}

/* Strides of a shape without elements can overflow; the last product (of
 * dim 0) is never needed. */
static void test_contiguous_strides_overflow(void **state) {
    (void)state;
    int64_t st[3];
    assert_int_equal(lt_contiguous_strides(3, (int64_t[]){0, P62, 4}, st), 1);
    assert_int_equal(
        lt_contiguous_strides(3, (int64_t[]){(int64_t)1 << 40, 0, (int64_t)1 << 40}, st), 0);
    assert_int_equal(st[0], (int64_t)1 << 40);
    assert_int_equal(st[1], (int64_t)1 << 40);
    assert_int_equal(st[2], 1);
    assert_int_equal(lt_contiguous_strides(2, (int64_t[]){0, P62}, st), 0);
    assert_int_equal(st[0], P62);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strided_examples), cmocka_unit_test(test_row_blocks_8x8),
        cmocka_unit_test(test_nested_18),        cmocka_unit_test(test_offsets_table),
        cmocka_unit_test(test_global_info),      cmocka_unit_test(test_layout_errors),
        cmocka_unit_test(test_chunk_size_and_offset),
        cmocka_unit_test(test_brute_force),      cmocka_unit_test(test_layout_memo_interleaved),
        cmocka_unit_test(test_layout_memo_big_mesh),
        cmocka_unit_test(test_empty_huge_dims),  cmocka_unit_test(test_index_list_too_big),
        cmocka_unit_test(test_contiguous_strides_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
