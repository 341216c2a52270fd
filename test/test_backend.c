/* test/test_backend.c — the CUDA backend's kernels against the CPU backend.
 *
 * Every kernel body of kernels/cuda/kern.h runs here through the cuda-emu
 * backend (the host loop over the launch grid) on every dtype, on dense,
 * transposed, narrowed and broadcast operands, and must give the CPU
 * backend's bytes exactly; matmul (cuda-emu's gemm is the host BLAS, as
 * the device's is cuBLAS) within the dtype's default tolerance. cuda-emu
 * memory is not host-addressable (a dereference crashes): every read here
 * goes through an explicit copy. The same comparisons then run on
 * the real device when the build has CUDA and a device is present (the
 * transcendental unary ops and gemm within tolerance, the rest exactly);
 * otherwise that test prints "skipped: no CUDA device: ..." and is counted
 * as skipped by cmocka and by tools/run-tests.sh, never as passed.
 */
#include "test/kernels_testutil.h"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "localtensor/kernels/math.h"
#include "kernels/tensor_impl.h"
#include "kernels/cuda/kern.h"
#include "localtensor/kernels/pool.h"
#include "kernels/pool_impl.h"

/* 24 values with the awkward ones: signed zeros, NaN, infinities, values
 * that round differently in bf16/f16, overflow f16 or the integers. */
static const double vals_a[24] = {0,    -0.0,  1.5,     -2.25, 3,     1e-3,   100.7, -7.5,
                                  NAN,  INFINITY, -INFINITY, 65504, 1e-8, 2.5e9, -3e9, 0.5,
                                  7,    -1,    0.3333,  42.125, -0.75, 1e30,  -65519.9, 2};
static const double vals_b[24] = {2,    -3,    0.25,   NAN,    -0.0,  5,      -100.5, 8,
                                  1,    -1,    4e9,    -2.5,   3,     0.125,  -0.5,   -65536,
                                  9.75, 1e-6,  -7,     INFINITY, 1,   -2,     33.3,   0};

/* t (CPU) copied into a new tensor on backend b (host loop: mixed backends). */
static lt_tensor *on(const lt_backend *b, const lt_tensor *t) {
    lt_tensor *o = NULL;
    LT_CHECK(lt_tensor_new_on(b, t->dtype, t->ndim, t->shape, &o));
    LT_CHECK(lt_copy(o, t));
    return o;
}

/* ---- the cases: one op on inputs x, y (4, 6) of one backend ------------------------ */

enum { C_CAST, C_COPY, C_FILL, C_ARANGE, C_SCALE, C_ACC, C_UNARY, C_BINARY, C_SCALAR,
       C_REDUCE, C_SOFTMAX, C_GATHER, C_EMBED, C_SCATTER, C_COUNT };
static const int case_subs[C_COUNT] = {LT_DTYPE_COUNT,
                                       1,
                                       4,
                                       1,
                                       3,
                                       LT_REDOP_COUNT,
                                       LT_UNARY_COUNT,
                                       LT_BINARY_COUNT,
                                       LT_BINARY_COUNT * 4,
                                       LT_REDUCE_COUNT * 3,
                                       4,
                                       3,
                                       4,
                                       8};
static const char *const case_names[C_COUNT] = {
    "cast",   "copy",          "fill",   "arange",  "scale",  "accumulate", "unary",
    "binary", "binary_scalar", "reduce", "softmax", "gather", "embedding",  "scatter"};
#define N_VARIANTS 4

/* Views of x and y for variant v: 0 as is, 1 transposed, 2 narrowed (4, 4)
 * non-contiguous, 3 broadcast operands (y a row, x a column). New views in
 * *vx, *vy. */
static void views(int v, const lt_tensor *x, const lt_tensor *y, lt_tensor **vx, lt_tensor **vy) {
    switch (v) {
    case 0: LT_CHECK(lt_tensor_view(x, vx)); LT_CHECK(lt_tensor_view(y, vy)); break;
    case 1: LT_CHECK(lt_transpose(x, 0, 1, vx)); LT_CHECK(lt_transpose(y, 0, 1, vy)); break;
    case 2: LT_CHECK(lt_narrow(x, 1, 1, 4, vx)); LT_CHECK(lt_narrow(y, 1, 2, 4, vy)); break;
    default: LT_CHECK(lt_narrow(x, 1, 2, 1, vx)); LT_CHECK(lt_select(y, 0, 1, vy)); break;
    }
}

/* Runs case (c, sub, variant) on x, y of backend b; *out: the result (new). */
/* The cases that write into a tensor of their own (*base: new), given
 * the views vx, vy of x and y (variant v). */
static lt_status run_into_base(int c, int sub, int v, const lt_backend *b, const lt_tensor *x,
                               const lt_tensor *y, lt_tensor *vx, lt_tensor *vy, lt_tensor **base) {
    static const double fills[4] = {2.5, -1e10, NAN, 70000.0};
    static const double scales[3] = {0.37, -3.0, 1e-40};
    lt_status st = LT_OK;
    switch (c) {
    case C_COPY: { /* into a transposed destination */
        lt_tensor *dt_ = NULL;
        LT_CHECK(lt_tensor_new_on(b, x->dtype, 2, (int64_t[]){vx->shape[1], vx->shape[0]}, base));
        LT_CHECK(lt_transpose(*base, 0, 1, &dt_));
        st = lt_copy(dt_, vx);
        lt_tensor_free(dt_);
        break;
    }
    case C_FILL: case C_ARANGE: { /* a strided view of a fresh tensor */
        lt_tensor *w = NULL;
        LT_CHECK(lt_tensor_new_on(b, x->dtype, 2, (int64_t[]){4, 6}, base));
        LT_CHECK(lt_narrow(*base, 1, 1, 4, &w));
        st = c == C_FILL ? lt_fill(w, fills[sub]) : lt_arange_fill(w);
        lt_tensor_free(w);
        break;
    }
    case C_SCALE: {
        lt_tensor *w = NULL;
        LT_CHECK(lt_clone(x, base));
        LT_CHECK(lt_transpose(*base, 0, 1, &w));
        st = lt_scale(w, scales[sub]);
        lt_tensor_free(w);
        break;
    }
    case C_ACC: { /* dst a view of a clone of x; src y's view of the same shape */
        lt_tensor *w = NULL, *s = NULL;
        LT_CHECK(lt_clone(x, base));
        views(v == 3 ? 0 : v, *base, y, &w, &s);
        lt_tensor_free(s);
        lt_tensor *yv = NULL, *xv = NULL;
        views(v == 3 ? 0 : v, y, x, &yv, &xv);
        lt_tensor_free(xv);
        st = lt_accumulate(w, yv, (lt_redop)sub);
        lt_tensor_free(w);
        lt_tensor_free(yv);
        break;
    }
    case C_SCATTER: { /* a (2, 3) block of vy's values into a clone of x at index lists with
                       * (sub >= 4) or without repeats; copy or accumulate sum/max/product */
        static const lt_redop ops[4] = {LT_REDOP_SUM, LT_REDOP_SUM, LT_REDOP_MAX, LT_REDOP_PRODUCT};
        int64_t r[2] = {3, 1}, cu[3] = {4, 0, 2}, cr[3] = {2, 0, 2};
        int64_t *ix[2] = {r, sub >= 4 ? cr : cu};
        lt_tensor *blk = NULL, *w = NULL;
        LT_CHECK(lt_clone(x, base));
        LT_CHECK(lt_narrow(v == 3 ? y : vy, 0, 0, 2, &w)); /* variant 3's vy is 1-D */
        LT_CHECK(lt_narrow(w, 1, 0, 3, &blk));
        st = lt_scatter_index_sets(*base, ix, blk, sub % 4 != 0, ops[sub % 4]);
        lt_tensor_free(blk);
        lt_tensor_free(w);
        break;
    }
    default: break;
    }
    return st;
}

/* The cases that make a new result (*out), given the views vx, vy. */
static lt_status run_to_out(int c, int sub, const lt_backend *b, lt_tensor *vx, lt_tensor *vy,
                            lt_tensor **out) {
    static const double scalars[2] = {2.0, -3.0};
    lt_status st = LT_OK;
    switch (c) {
    case C_CAST: st = lt_cast(vx, (lt_dtype)sub, out); break;
    case C_REDUCE: { /* over dim 1, dim 0, everything; mean with its own count and a divisor */
        int dims[1] = {sub % 3 == 0 ? 1 : 0};
        lt_reduce_op op = (lt_reduce_op)(sub / 3);
        st = lt_reduce_ex(op, vx, sub % 3 == 2 ? 0 : 1, dims, sub % 3 == 1,
                          sub % 3 == 2 ? 7.0 : 0.0, out);
        break;
    }
    case C_SOFTMAX: st = lt_softmax(vx, sub % 2 ? -1 : 0, sub / 2, out); break;
    case C_GATHER: { /* rows and columns in any order, repeats included; or all of a dim */
        int64_t r[3] = {3, 0, 3}, cidx[5] = {1, 1, 0, 2, 0};
        int64_t *ix[2] = {sub == 1 ? NULL : r, sub == 2 ? NULL : cidx};
        int64_t lens[2] = {3, 3};
        st = lt_gather_index_sets(vx, ix, lens, out);
        break;
    }
    case C_EMBED: { /* weight vx; indices (2, 3) of i32 or i64, in range or not, masked or not */
        static const double in_range[6] = {0, 3, 1, 1, 2, 0}, outside[6] = {5, 3, -1, 4, 2, 6};
        lt_tensor *ih =
            mk(sub == 1 ? LT_I32 : LT_I64, 2, (int64_t[]){2, 3}, sub == 0 ? in_range : outside);
        lt_tensor *ib = on(b, ih);
        st = lt_embedding(vx, ib, sub == 2 ? 2 : 0, sub == 1 || sub == 2, out);
        lt_tensor_free(ib);
        lt_tensor_free(ih);
        break;
    }
    case C_UNARY: st = lt_unary((lt_unary_op)sub, vx, out); break;
    case C_BINARY: st = lt_binary((lt_binary_op)sub, vx, vy, out); break;
    default: {
        int op = sub / 4, rev = (sub / 2) % 2;
        st = lt_binary_scalar((lt_binary_op)op, vy, scalars[sub % 2], rev, out);
        break;
    }
    }
    return st;
}

static lt_status run_case(int c, int sub, int v, const lt_backend *b, const lt_tensor *x,
                          const lt_tensor *y, lt_tensor **out) {
    lt_tensor *vx = NULL, *vy = NULL, *base = NULL;
    *out = NULL;
    views(v, x, y, &vx, &vy);
    int into =
        c == C_COPY || c == C_FILL || c == C_ARANGE || c == C_SCALE || c == C_ACC || c == C_SCATTER;
    lt_status st = into ? run_into_base(c, sub, v, b, x, y, vx, vy, &base)
                        : run_to_out(c, sub, b, vx, vy, out);
    if (base) {
        if (st == LT_OK) *out = base;
        else lt_tensor_free(base);
    }
    lt_tensor_free(vx);
    lt_tensor_free(vy);
    return st;
}

/* Is case c's result allowed to differ in the last bits on a real device?
 * (device libm for exp/log/tanh/erf/sqrt.) The emulation is always exact. */
static int device_tolerant(int c, int sub) {
    if (c == C_SOFTMAX) return 1;
    return c == C_UNARY && sub != LT_UNARY_NEG && sub != LT_UNARY_ABS && sub != LT_UNARY_RELU;
}

/* got (any backend) equals want (CPU): same shape and dtype, and the same
 * bytes (exact) or within the dtype's default tolerance, NaN equal to NaN.
 * The result is brought to the host by an explicit copy first. */
static void expect_same(const lt_tensor *got, const lt_tensor *want, int exact, const char *what) {
    if (!lt_same_shape(got, want) || got->dtype != want->dtype)
        fail_msg("%s: shape/dtype differ from the CPU result", what);
    lt_tensor *h = NULL, *w = NULL;
    LT_CHECK(lt_tensor_new_on(lt_backend_cpu(), got->dtype, got->ndim, got->shape, &h));
    LT_CHECK(lt_copy(h, got));
    LT_CHECK(lt_contiguous(want, &w));
    if (exact) {
        if (memcmp(lt_data(h), lt_data(w), lt_nbytes(w)) != 0) {
            for (int64_t i = 0; i < lt_numel(w); i++)
                if (memcmp((char *)lt_data(h) + (size_t)i * lt_dtype_size(w->dtype),
                           (char *)lt_data(w) + (size_t)i * lt_dtype_size(w->dtype),
                           lt_dtype_size(w->dtype)) &&
                    !(isnan(lt_get_flat(h, i)) &&
                      isnan(lt_get_flat(w, i)))) /* a device's NaN bits differ */
                    fail_msg("%s: element %lld is %.17g, the CPU backend gives %.17g", what,
                             (long long)i, lt_get_flat(h, i), lt_get_flat(w, i));
        }
    } else {
        double rtol, atol;
        lt_compare_result r;
        lt_dtype_default_tol(w->dtype, &rtol, &atol);
        LT_CHECK(lt_compare(h, w, rtol, atol, &r));
        if (!r.equal)
            fail_msg("%s: %lld elements differ (first at %lld: %.17g vs CPU %.17g)", what,
                     (long long)r.ndiff, (long long)r.first_flat, r.actual, r.expected);
    }
    lt_tensor_free(h);
    lt_tensor_free(w);
}

/* Every case, dtype and variant on backend b against the CPU backend.
 * Returns the number of comparisons made. */
static int compare_elementwise(const lt_backend *b, int on_device) {
    const lt_backend *cpu = lt_backend_cpu();
    int checked = 0;
    for (int di = 0; di < N_(all_dtypes); di++) {
        lt_dtype dt = all_dtypes[di];
        lt_tensor *x = mk(dt, 2, (int64_t[]){4, 6}, vals_a),
                  *y = mk(dt, 2, (int64_t[]){4, 6}, vals_b);
        lt_tensor *bx = on(b, x), *by = on(b, y);
        for (int c = 0; c < C_COUNT; c++)
            for (int sub = 0; sub < case_subs[c]; sub++)
                for (int v = 0; v < N_VARIANTS; v++) {
                    char what[160];
                    snprintf(what, sizeof what, "%s %s sub %d variant %d on %s", case_names[c],
                             lt_dtype_name(dt), sub, v, b->iface->name);
                    lt_tensor *want = NULL, *got = NULL;
                    lt_status sw = run_case(c, sub, v, cpu, x, y, &want);
                    lt_status sg = run_case(c, sub, v, b, bx, by, &got);
                    if (sw != sg)
                        fail_msg("%s: status %s, the CPU backend gives %s", what,
                                 lt_status_name(sg), lt_status_name(sw));
                    if (sw == LT_OK) {
                        expect_same(got, want, !(on_device && device_tolerant(c, sub)), what);
                        checked++;
                    }
                    lt_tensor_free(want);
                    lt_tensor_free(got);
                }
        lt_tensor_free(bx);
        lt_tensor_free(by);
        lt_tensor_free(x);
        lt_tensor_free(y);
    }
    return checked;
}

/* matmul in every float dtype: plain, transposed operand, batched with a
 * broadcast batch dim, and addmm; within the dtype's tolerance. */
static void compare_matmul(const lt_backend *b) {
    const lt_dtype dts[] = {LT_F32, LT_F64, LT_BF16, LT_F16};
    for (int di = 0; di < N_(dts); di++) {
        lt_tensor *a = NULL, *m = NULL, *bias = NULL;
        LT_CHECK(lt_tensor_new(dts[di], 3, (int64_t[]){2, 5, 7}, &a));
        LT_CHECK(lt_tensor_new(dts[di], 2, (int64_t[]){7, 3}, &m));
        LT_CHECK(lt_tensor_new(dts[di], 1, (int64_t[]){3}, &bias));
        for (int64_t i = 0; i < 70; i++) lt_set_flat(a, i, (double)((i * 37) % 19) / 8.0 - 1.0);
        for (int64_t i = 0; i < 21; i++) lt_set_flat(m, i, (double)((i * 11) % 13) / 4.0 - 1.5);
        for (int64_t i = 0; i < 3; i++) lt_set_flat(bias, i, 0.5 * (double)i - 0.25);
        lt_tensor *ba = on(b, a), *bm = on(b, m), *bb = on(b, bias);
        for (int k = 0; k < 4; k++) {
            lt_tensor *want = NULL, *got = NULL;
            if (k == 0) { /* batched, broadcast batch */
                LT_CHECK(lt_matmul(a, m, &want));
                LT_CHECK(lt_matmul(ba, bm, &got));
            } else { /* 2-D: row 0 of the batch, its transpose, addmm */
                lt_tensor *a0, *ba0, *mt, *bmt, *mtt, *bmtt;
                LT_CHECK(lt_select(a, 0, 1, &a0));
                LT_CHECK(lt_select(ba, 0, 1, &ba0));
                LT_CHECK(lt_transpose(m, 0, 1, &mt));
                LT_CHECK(lt_transpose(bm, 0, 1, &bmt));
                LT_CHECK(
                    lt_contiguous(mt, &mtt)); /* (3, 7) dense: transposed again, a BLAS layout */
                LT_CHECK(lt_contiguous(bmt, &bmtt));
                lt_tensor_free(mt);
                lt_tensor_free(bmt);
                LT_CHECK(lt_transpose(mtt, 0, 1, &mt));
                LT_CHECK(lt_transpose(bmtt, 0, 1, &bmt));
                if (k == 1) { LT_CHECK(lt_mm(a0, m, &want)); LT_CHECK(lt_mm(ba0, bm, &got)); }
                if (k == 2) { LT_CHECK(lt_mm(a0, mt, &want)); LT_CHECK(lt_mm(ba0, bmt, &got)); }
                if (k == 3) {
                    LT_CHECK(lt_addmm(bias, a0, mt, 0.5, -2.0, &want));
                    LT_CHECK(lt_addmm(bb, ba0, bmt, 0.5, -2.0, &got));
                }
                lt_tensor_free(a0); lt_tensor_free(ba0); lt_tensor_free(mt);
                lt_tensor_free(bmt); lt_tensor_free(mtt); lt_tensor_free(bmtt);
            }
            char what[96];
            snprintf(what, sizeof what, "matmul %s form %d on %s", lt_dtype_name(dts[di]), k,
                     b->iface->name);
            expect_same(got, want, 0, what);
            lt_tensor_free(want);
            lt_tensor_free(got);
        }
        lt_tensor_free(ba); lt_tensor_free(bm); lt_tensor_free(bb);
        lt_tensor_free(a); lt_tensor_free(m); lt_tensor_free(bias);
    }
}

/* Random initialisers and dropout on 2x2-rank DTensors (uneven shards,
 * Shard(0) x Shard(1) and a strided Shard), every dtype, made on backend
 * `name` (selected as the default) against the same made on the CPU: each
 * rank's shard. Uniform draws are exact everywhere; on a device, normal
 * draws (log, cos) and dropout's scaling within tolerance. */
static void compare_random(const char *name, int on_device) {
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x2", &m));
    const lt_placement pls[2][2] = {{lt_shard(0), lt_shard(1)}, {lt_shard(1), lt_replicate()}};
    const char *inits[3] = {"arange", "random:7", "randn:11"};
    for (int di = 0; di < N_(all_dtypes); di++)
        for (int pi = 0; pi < 2; pi++)
            for (int ii = 0; ii < 3; ii++)
                for (int drop = 0; drop < 2; drop++) {
                    lt_dtensor *x[2] = {NULL, NULL}, *y[2] = {NULL, NULL};
                    lt_init in;
                    LT_CHECK(lt_init_parse(inits[ii], &in));
                    for (int k = 0; k < 2; k++) {
                        LT_CHECK(lt_backend_select(k ? name : "cpu"));
                        LT_CHECK(lt_dtensor_new(&m, all_dtypes[di], 2, (int64_t[]){5, 7}, pls[pi],
                                                 2, &in, &x[k]));
                        if (drop) {
                            lt_status st = lt_dtensor_dropout(x[k], 0.3, 5, &y[k]);
                            if (!lt_dtype_is_float(all_dtypes[di])) { /* both refuse */
                                assert_int_equal(st, LT_UNSUPPORTED);
                                continue;
                            }
                            LT_CHECK(st);
                        }
                    }
                    LT_CHECK(lt_backend_select("cpu"));
                    for (int r = 0; r < 4 && (!drop || y[0]); r++) {
                        char what[128];
                        snprintf(what, sizeof what, "%s %s placements %d%s rank %d on %s",
                                 inits[ii], lt_dtype_name(all_dtypes[di]), pi,
                                 drop ? " dropout" : "", r, name);
                        const lt_tensor *got = lt_to_local(drop ? y[1] : x[1], r);
                        assert_string_equal(got->storage->backend->iface->name, name);
                        expect_same(got, lt_to_local(drop ? y[0] : x[0], r),
                                    !(on_device && (ii == 2 || drop)), what);
                    }
                    for (int k = 0; k < 2; k++) {
                        lt_dtensor_free(x[k]);
                        lt_dtensor_free(y[k]);
                    }
                }
}

/* Every collective on a 2x3 mesh (groups of 2 and of 3), every dtype and
 * reduce op, dense and transposed shards, run with shards and outputs on
 * backend `name` against the same on the CPU: each rank's output. The
 * collectives go through the engine's kernel path there
 * (collectives_sim/engine_kernels.c); the reductions are exact everywhere
 * (same order, same accumulator types). */
static void compare_collectives(const char *name) {
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x3", &m));
    enum { W = 6, NCOLL = 9 };
    for (int di = 0; di < N_(all_dtypes); di++)
        for (int tr = 0; tr < 2; tr++)
            for (int md = 0; md < 2; md++)
                for (int coll = 0; coll < NCOLL; coll++)
                    for (int op = 0;
                         op < (coll == 1 || coll == 2 || coll == 7 ? LT_REDOP_COUNT : 1); op++) {
                        lt_tensor *out[2][W] = {{0}}, *in[2][W] = {{0}};
                        lt_status st[2];
                        for (int k = 0; k < 2; k++) {
                            LT_CHECK(lt_backend_select(k ? name : "cpu"));
                            lt_comm *c;
                            LT_CHECK(lt_comm_new(&m, &c));
                            for (int r = 0; r < W; r++) {
                                double v[42];
                                for (int i = 0; i < 42; i++)
                                    v[i] = (i + r) % 3 ? vals_a[(i * 7 + r * 5) % 24]
                                                       : vals_b[(i + r) % 24];
                                lt_tensor *t = mk(all_dtypes[di], 2, (int64_t[]){6, 7}, v),
                                          *b = NULL;
                                lt_tensor *tb = on(lt_backend_default(), t);
                                if (tr) LT_CHECK(lt_transpose(tb, 0, 1, &b)); /* (7, 6) strided */
                                else LT_CHECK(lt_tensor_view(tb, &b));
                                in[k][r] = b;
                                lt_tensor_free(tb);
                                lt_tensor_free(t);
                            }
                            int perm[3] = {2, 0, 1}, perm2[2] = {1, 0};
                            lt_redop rop = (lt_redop)op;
                            switch (coll) {
                            case 0: st[k] = lt_all_gather(c, md, in[k], 0, out[k]); break;
                            case 1: st[k] = lt_all_reduce(c, md, in[k], rop, out[k]); break;
                            case 2:
                                st[k] = lt_reduce_scatter(c, md, in[k], rop, 1, NULL, out[k]);
                                break;
                            case 3: st[k] = lt_all_to_all(c, md, in[k], 1, 0, NULL, out[k]); break;
                            case 4: st[k] = lt_broadcast(c, md, in[k], 1, out[k]); break;
                            case 5: st[k] = lt_scatter(c, md, in[k], 0, 1, NULL, out[k]); break;
                            case 6: st[k] = lt_gather(c, md, in[k], 1, 0, out[k]); break;
                            case 7: st[k] = lt_reduce_ranks(c, md, in[k], 0, rop, out[k]); break;
                            default:
                                st[k] = lt_permute_ranks(c, md, in[k], md ? perm : perm2, out[k]);
                                break;
                            }
                            lt_comm_free(c);
                        }
                        LT_CHECK(lt_backend_select("cpu"));
                        char what[128];
                        snprintf(what, sizeof what, "collective %d op %d %s mesh dim %d%s on %s",
                                 coll, op, lt_dtype_name(all_dtypes[di]), md,
                                 tr ? " transposed" : "", name);
                        if (st[0] != st[1])
                            fail_msg("%s: status %s, the CPU gives %s", what, lt_status_name(st[1]),
                                     lt_status_name(st[0]));
                        for (int r = 0; r < W; r++) {
                            if (st[0] == LT_OK) {
                                assert_int_equal(out[0][r]->placeholder, out[1][r]->placeholder);
                                expect_same(out[1][r], out[0][r], 1, what);
                            }
                            for (int k = 0; k < 2; k++) {
                                lt_tensor_free(out[k][r]);
                                lt_tensor_free(in[k][r]);
                            }
                        }
                    }
}

/* ---- the tests ------------------------------------------------------------------------- */

static void test_emu_elementwise_matches_cpu(void **state) {
    (void)state;
    int64_t before = lt__emu_launches();
    int checked = compare_elementwise(lt_backend_cuda_emu(), 0);
    /* the kernels did run (not the host loops): at least one launch per result */
    assert_true(lt__emu_launches() - before >= checked);
    assert_true(checked > 1000);
}

static void test_emu_matmul_within_tolerance(void **state) {
    (void)state;
    int64_t before = lt__emu_launches();
    compare_matmul(lt_backend_cuda_emu());
    assert_true(lt__emu_launches() > before);
}

/* An element each launch thread owns: the grid covers [0, n) exactly once,
 * also past LT__KMAX_BLOCKS blocks (grid-stride). */
static void test_emu_random_matches_cpu(void **state) {
    (void)state;
    int64_t before = lt__emu_launches();
    compare_random("cuda-emu", 0);
    assert_true(lt__emu_launches() > before);
}

static void test_emu_collectives_match_cpu(void **state) {
    (void)state;
    int64_t before = lt__emu_launches();
    compare_collectives("cuda-emu");
    assert_true(lt__emu_launches() > before);
}

static void test_emu_grid_covers_large_tensors(void **state) {
    (void)state;
    int64_t n = (int64_t)LT__KMAX_BLOCKS * LT__KTHREADS + 1000; /* needs the stride loop */
    lt_tensor *t = NULL;
    LT_CHECK(lt_tensor_new_on(lt_backend_cuda_emu(), LT_I32, 1, &n, &t));
    LT_CHECK(lt_fill(t, 1));
    LT_CHECK(lt_accumulate(t, t, LT_REDOP_SUM)); /* in place: every element exactly once */
    lt_tensor *h = NULL; /* read through an explicit host copy */
    LT_CHECK(lt__host_copy_out(t, &h));
    const int32_t *p = lt_data(h);
    for (int64_t i = 0; i < n; i++)
        if (p[i] != 2) fail_msg("element %lld is %d after fill 1 + itself", (long long)i, p[i]);
    lt_tensor_free(h);
    lt_tensor_free(t);
}

/* cuda-emu memory is as unreadable to the host as device memory: a child
 * process that dereferences a shard in place dies (SIGSEGV; under a
 * sanitizer, its error exit) instead of reading it. */
static void test_emu_memory_not_host_addressable(void **state) {
    (void)state;
    lt_tensor *t = NULL;
    LT_CHECK(lt_tensor_new_on(lt_backend_cuda_emu(), LT_F32, 1, (int64_t[]){16}, &t));
    assert_false(lt__on_host(t));
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        volatile float v = *(const float *)lt_data(t); /* must not work */
        (void)v;
        _exit(0);
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) fail_msg("the host read cuda-emu memory in place");
    lt_tensor_free(t);
}

/* The host paths on cuda-emu shards, through explicit copies, against hand
 * computed values: element access, to/from doubles, compare, scatter with a
 * repeated index, matmul and addmm with an empty inner dim, embedding's
 * out-of-range error. */
static void test_emu_host_paths(void **state) {
    (void)state;
    const lt_backend *emu = lt_backend_cuda_emu();
    const lt_backend *prev = lt__backend_set_thread(emu); /* new tensors go to cuda-emu */
    lt_tensor *t = mk(LT_F32, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6});
    assert_ptr_equal(lt__backend_of(t), emu);
    assert_true(lt_get(t, (int64_t[]){1, 2}) == 6.0);
    lt_set(t, (int64_t[]){0, 1}, 9.5);
    assert_true(lt_get_flat(t, 1) == 9.5);
    double got[6];
    lt_to_doubles(t, got);
    const double want[6] = {1, 9.5, 3, 4, 5, 6};
    for (int i = 0; i < 6; i++) assert_true(got[i] == want[i]);
    lt_tensor *cpu = NULL;
    LT_CHECK(lt_tensor_new_on(lt_backend_cpu(), LT_F32, 2, (int64_t[]){2, 3}, &cpu));
    LT_CHECK(lt_copy(cpu, t)); /* emu -> host: an explicit copy */
    lt_compare_result r;
    LT_CHECK(lt_compare(t, cpu, 0, 0, &r));
    assert_true(r.equal);
    lt_set_flat(cpu, 4, -5);
    LT_CHECK(lt_compare(t, cpu, 0, 0, &r));
    assert_int_equal(r.ndiff, 1);
    assert_int_equal(r.first_flat, 4);
    assert_true(r.actual == 5.0 && r.expected == -5.0);

    /* scatter-add with index 1 twice: the host walk, on a host copy */
    lt_tensor *dst = NULL, *src = mk(LT_F32, 1, (int64_t[]){3}, (double[]){1, 2, 3});
    LT_CHECK(lt_tensor_new(LT_F32, 1, (int64_t[]){4}, &dst));
    int64_t ix[] = {1, 1, 3};
    int64_t *ixs[1] = {ix};
    LT_CHECK(lt_scatter_index_sets(dst, ixs, src, 1, LT_REDOP_SUM));
    lt_test_expect_values(dst, 1, (int64_t[]){4}, (double[]){0, 3, 0, 3},
                          "scatter-add, repeated index");

    /* empty inner dim: a @ b is zeros; addmm is beta * bias */
    lt_tensor *a = NULL, *b = NULL, *mm = NULL, *am = NULL;
    LT_CHECK(lt_tensor_new(LT_F32, 2, (int64_t[]){2, 0}, &a));
    LT_CHECK(lt_tensor_new(LT_F32, 2, (int64_t[]){0, 3}, &b));
    lt_tensor *bias = mk(LT_F32, 1, (int64_t[]){3}, (double[]){1, 2, 3});
    LT_CHECK(lt_mm(a, b, &mm));
    lt_test_expect_values(mm, 2, (int64_t[]){2, 3}, (double[]){0, 0, 0, 0, 0, 0}, "mm, k = 0");
    LT_CHECK(lt_addmm(bias, a, b, 2.0, 1.0, &am));
    lt_test_expect_values(am, 2, (int64_t[]){2, 3}, (double[]){2, 4, 6, 2, 4, 6}, "addmm, k = 0");
    assert_ptr_equal(lt__backend_of(mm), emu);

    /* embedding: an index out of range is named (the host loop, on copies) */
    lt_tensor *w = mk(LT_F32, 2, (int64_t[]){3, 2}, (double[]){1, 2, 3, 4, 5, 6}), *idx = NULL,
              *e = NULL;
    idx = mk(LT_I64, 1, (int64_t[]){2}, (double[]){2, 5});
    LT_EXPECT_STATUS(lt_embedding(w, idx, 0, 0, &e), LT_INVALID);
    expect_msg_contains("index 5 (element 1) is out of range for 3 rows");
    lt_set_flat(idx, 1, 0);
    LT_CHECK(lt_embedding(w, idx, 0, 0, &e));
    lt_test_expect_values(e, 2, (int64_t[]){2, 2}, (double[]){5, 6, 1, 2}, "embedding");

    lt__backend_set_thread(prev);
    lt_tensor_free(t); lt_tensor_free(cpu); lt_tensor_free(dst); lt_tensor_free(src);
    lt_tensor_free(a);
    lt_tensor_free(b);
    lt_tensor_free(bias);
    lt_tensor_free(mm);
    lt_tensor_free(am);
    lt_tensor_free(w); lt_tensor_free(idx); lt_tensor_free(e);
}

/* bf16/f16 matmul on cuda-emu goes to the backend's mixed-precision gemm as
 * it is: three launches (the zero fill of the f32 C, the gemm on the bf16
 * inputs, the cast of C), where the cast-first path would also launch two
 * input casts (five). Its values: f32 products and sums, rounded once —
 * on cuda-emu (the host BLAS on the exactly widened inputs) the CPU
 * backend's result bit for bit. */
static void test_emu_half_gemm_mixed_precision(void **state) {
    (void)state;
    const lt_dtype dts[] = {LT_BF16, LT_F16};
    for (int di = 0; di < 2; di++) {
        lt_dtype dt = dts[di];
        double av[12], bv[8];
        for (int i = 0; i < 12; i++) av[i] = (double)((i * 7) % 11) / 3.0 - 1.5;
        for (int i = 0; i < 8; i++) bv[i] = (double)((i * 5) % 9) / 7.0 - 0.5;
        lt_tensor *a = mk(dt, 2, (int64_t[]){3, 4}, av), *b = mk(dt, 2, (int64_t[]){4, 2}, bv);
        lt_tensor *ea = NULL, *eb = NULL, *c = NULL, *want = NULL;
        LT_CHECK(lt_tensor_new_on(lt_backend_cuda_emu(), dt, 2, a->shape, &ea));
        LT_CHECK(lt_tensor_new_on(lt_backend_cuda_emu(), dt, 2, b->shape, &eb));
        LT_CHECK(lt_copy(ea, a));
        LT_CHECK(lt_copy(eb, b));
        int64_t before = lt__emu_launches();
        LT_CHECK(lt_mm(ea, eb, &c));
        assert_int_equal(lt__emu_launches() - before, 3);
        LT_CHECK(lt_mm(a, b, &want)); /* the CPU backend */
        char what[64];
        snprintf(what, sizeof what, "%s mm on cuda-emu", lt_dtype_name(dt));
        expect_same(c, want, 1, what);
        /* and what "f32 products and sums, rounded once" means, by hand for one element */
        float s = 0;
        for (int q = 0; q < 4; q++)
            s += (float)lt_get_flat(a, 4 + q) * (float)lt_get_flat(b, q * 2 + 1);
        char one[2];
        lt_dtype_store(dt, one, (double)s);
        assert_true(lt_get_flat(c, 3) == lt_dtype_load(dt, one));
        lt_tensor_free(a);
        lt_tensor_free(b);
        lt_tensor_free(ea);
        lt_tensor_free(eb);
        lt_tensor_free(c);
        lt_tensor_free(want);
    }
}

static void test_backend_names(void **state) {
    (void)state;
    const lt_backend *b = NULL;
    LT_CHECK(lt_backend_by_name("cpu", &b));
    assert_ptr_equal(b, lt_backend_cpu());
    LT_CHECK(lt_backend_by_name("cuda-emu", &b));
    assert_ptr_equal(b, lt_backend_cuda_emu());
    LT_EXPECT_STATUS(lt_backend_by_name("gpu", &b), LT_INVALID);
    expect_msg_contains("unknown backend 'gpu'");
    lt_status st = lt_backend_by_name("cuda", &b);
#if defined(LT_HAVE_CUDA)
    if (st != LT_OK) expect_msg_contains("no CUDA device");
#else
    assert_int_equal(st, LT_UNSUPPORTED);
    expect_msg_contains("not supported yet");
#endif
    /* the default follows lt_backend_select */
    LT_CHECK(lt_backend_select("cuda-emu"));
    lt_tensor *t = NULL, *u = NULL;
    LT_CHECK(lt_tensor_new(LT_F32, 1, (int64_t[]){3}, &t));
    LT_CHECK(lt_unary(LT_UNARY_EXP, t, &u));
    assert_string_equal(t->storage->backend->iface->name, "cuda-emu");
    assert_string_equal(u->storage->backend->iface->name, "cuda-emu");
    LT_CHECK(lt_backend_select("cpu"));
    lt_tensor_free(t);
    lt_tensor_free(u);
    LT_CHECK(lt_tensor_new(LT_F32, 1, (int64_t[]){3}, &t));
    assert_ptr_equal(t->storage->backend, lt_backend_cpu());
    lt_tensor_free(t);
}

/* A thread's override (a scenario's `backend:` key) is its own, reaches the
 * pool's workers in the sections it starts, and leaves the process default
 * alone. */
static int on_workers; /* tasks a pool worker ran (slot > 0) */

static lt_status see_backend(void *ctx, int64_t i) {
    (void)i;
    struct timespec ts = {0, 200000}; /* 0.2 ms: long enough for the workers to take tasks */
    nanosleep(&ts, NULL);
    if (lt__pool_slot() > 0) __atomic_add_fetch(&on_workers, 1, __ATOMIC_RELAXED);
    if (lt_backend_default() != lt_backend_cuda_emu())
        __atomic_add_fetch((int *)ctx, 1, __ATOMIC_RELAXED);
    return LT_OK;
}

static void test_thread_override(void **state) {
    (void)state;
    lt_set_threads(4);
    int wrong = 0;
    assert_ptr_equal(lt__backend_set_thread(lt_backend_cuda_emu()), NULL);
    assert_ptr_equal(lt_backend_default(), lt_backend_cuda_emu());
    LT_CHECK(lt__parallel_for(256, see_backend, &wrong));
    assert_int_equal(wrong, 0);
    assert_true(on_workers > 0); /* the workers did take part */
    assert_ptr_equal(lt__backend_set_thread(NULL), lt_backend_cuda_emu());
    assert_ptr_equal(lt_backend_default(), lt_backend_cpu());
    LT_CHECK(
        lt__parallel_for(256, see_backend, &wrong)); /* no override: the cpu default everywhere */
    assert_int_equal(wrong, 256);
    lt_set_threads(0);
}

/* The device itself: the same comparisons, when there is one. */
static void test_device_matches_cpu(void **state) {
    (void)state;
    const lt_backend *b = NULL;
    if (lt_backend_cuda(&b) != LT_OK) {
        const char *why = lt_errmsg();
        if (!strncmp(why, "no CUDA device: ", 16)) why += 16; /* said once */
        printf("skipped: no CUDA device: %s\n", why);
        skip();
    }
    assert_true(compare_elementwise(b, 1) > 1000);
    compare_matmul(b);
    compare_random("cuda", 1);
    compare_collectives("cuda");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_emu_elementwise_matches_cpu),
        cmocka_unit_test(test_emu_matmul_within_tolerance),
        cmocka_unit_test(test_emu_random_matches_cpu),
        cmocka_unit_test(test_emu_collectives_match_cpu),
        cmocka_unit_test(test_emu_grid_covers_large_tensors),
        cmocka_unit_test(test_emu_memory_not_host_addressable),
        cmocka_unit_test(test_emu_host_paths),
        cmocka_unit_test(test_emu_half_gemm_mixed_precision),
        cmocka_unit_test(test_backend_names),
        cmocka_unit_test(test_thread_override),
        cmocka_unit_test(test_device_matches_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
