/* test/mpi/engine.c — the MPI engine (collectives_sim/engine_mpi.h) under
 * mpirun, against the in-process engine, byte for byte.
 *
 * Run by tools/run-mpi-tests.sh as `mpirun -np P build/mpi_engine` for
 * P = 1, 2, 4, 8 (and 3, which splits meshes unevenly). Every process builds
 * every rank's inputs (deterministic, uneven shapes, every dtype), computes
 * the in-process result through the public wrappers, then runs the MPI
 * engine's table directly on arrays that hold ONLY its own ranks (the other
 * entries are NULL, as in a distributed run) and compares the bytes of each
 * owned result. The in-process engine is the reference: it is tested on its
 * own against a brute-force model (test/test_collectives.c).
 * Also: the ownership blocks, the wrappers on the MPI engine with the other
 * ranks' inputs poisoned (never read), too many processes for a mesh, a
 * process that ends its unit of work early (the others' calls fail, none
 * waits), --cross-check's planted bug (found when groups span
 * processes), and point to point (lt_send_recv).
 */
#include <mpi.h>
#include <string.h>

#include "localtensor/collectives_sim/collectives.h"
#include "localtensor/collectives_sim/engine_mpi.h"
#include "kernels/alloc.h"
#include "localtensor/kernels/backend.h"
#include "test/testutil.h"

static int NP, ME;

typedef enum { C_AG, C_AR, C_RS, C_A2A, C_BC, C_SC, C_GA, C_RE, C_PE } ckind;
static const char *const cnames[] = {"all_gather", "all_reduce", "reduce_scatter",
                                     "all_to_all", "broadcast",  "scatter",
                                     "gather",     "reduce",     "permute"};

/* Deterministic input of rank r: shape depends on the collective (uneven
 * where the collective allows it), values on r, the element and the dtype. */
static lt_tensor *make_input(ckind k, lt_dtype dt, int r, int variant) {
    int64_t sh[3];
    int nd = 2;
    switch (k) {
    case C_AG: case C_GA: /* uneven along the gathered dim (0 or 1 by variant) */
        sh[0] = variant ? 2 : (r * 5) % 4;
        sh[1] = variant ? (r * 3) % 5 : 3;
        break;
    case C_A2A: /* uneven rows (concat dim 0), split dim 1 */
        sh[0] = (r * 7) % 3 + (variant ? 0 : 1);
        sh[1] = 7;
        break;
    case C_PE:
        sh[0] = r % 3;
        sh[1] = 2;
        break;
    default: /* same shape everywhere; 7 rows split unevenly */
        sh[0] = 7;
        sh[1] = 3;
        break;
    }
    lt_tensor *t = NULL;
    LT_CHECK(lt_tensor_new(dt, nd, sh, &t));
    int64_t n = lt_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (dt == LT_BOOL) v = (r + i) % 3 == 0;
        else if (dt == LT_I32 || dt == LT_I64) v = (double)((r * 37 + i * 11) % 23 - 9);
        else v = ((r * 37 + i * 11) % 23 - 9) * 0.37 + 1.0 / (r + 3);
        lt_set_flat(t, i, v);
    }
    return t;
}

/* Runs the public wrapper of kind k on comm c (in-process reference or the
 * MPI engine through the wrappers). */
static lt_status run_wrapper(lt_comm *c, ckind k, int md, lt_tensor **in, lt_redop op, int dim,
                             lt_tensor **out) {
    switch (k) {
    case C_AG: return lt_all_gather(c, md, in, dim, out);
    case C_AR: return lt_all_reduce(c, md, in, op, out);
    case C_RS: return lt_reduce_scatter(c, md, in, op, 0, NULL, out);
    case C_A2A: return lt_all_to_all(c, md, in, 1, 0, NULL, out);
    case C_BC: return lt_broadcast(c, md, in, 1 % lt_comm_mesh(c)->shape[md], out);
    case C_SC: return lt_scatter(c, md, in, 0, 0, NULL, out);
    case C_GA: return lt_gather(c, md, in, lt_comm_mesh(c)->shape[md] - 1, dim, out);
    case C_RE: return lt_reduce_ranks(c, md, in, 0, op, out);
    case C_PE: {
        int perm[64], n = lt_comm_mesh(c)->shape[md];
        for (int i = 0; i < n; i++) perm[i] = (i + 1) % n;
        return lt_permute_ranks(c, md, in, perm, out);
    }
    }
    return LT_INVALID;
}

static lt_coll_fn fn_of(const lt_engine_i *e, ckind k) {
    lt_coll_fn f[] = {e->all_gather, e->all_reduce, e->reduce_scatter, e->all_to_all, e->broadcast,
                      e->scatter, e->gather, e->reduce, e->permute};
    return f[k];
}

static void free_all(lt_tensor **a, int n) {
    for (int r = 0; r < n; r++) {
        lt_tensor_free(a[r]);
        a[r] = NULL;
    }
}

/* ranks of a mesh smaller than the world of processes go to the first ones */
static int owned(const lt_mesh *m, int r) {
    return lt_mpi_owner(m->world, NP < m->world ? NP : m->world, r) == ME;
}

/* Compares the owned results of `got` with `ref` (bytes; placeholders by
 * their logical shape). */
static void compare(const lt_mesh *m, lt_tensor **got, lt_tensor **ref, const char *what) {
    for (int r = 0; r < m->world; r++) {
        if (!owned(m, r)) continue;
        const lt_tensor *a = got[r], *b = ref[r];
        if (!a) fail_msg("%s: rank %d has no result", what, r);
        if (a->placeholder != b->placeholder || !lt_same_shape(a, b) || a->dtype != b->dtype)
            fail_msg("%s: rank %d's result has another shape or dtype", what, r);
        if (b->placeholder) continue;
        const unsigned char *x = lt_data(a), *y = lt_data(b);
        size_t nb = lt_nbytes(b);
        for (size_t i = 0; i < nb; i++)
            if (x[i] != y[i])
                fail_msg("%s: rank %d differs from the in-process engine at byte %zu (%u vs %u)",
                         what, r, i, x[i], y[i]);
    }
}

/* One case: the reference in-process, then the MPI engine's table on the
 * owned ranks only. Returns 0 when the reference rejects the case (avg on
 * bool), 1 when it ran. */
static int one_case(const lt_mesh *m, ckind k, lt_dtype dt, lt_redop op, int variant) {
    int W = m->world;
    lt_tensor *in[64] = {0}, *ref[64] = {0}, *sparse[64] = {0}, *out[64] = {0};
    char what[256], ms[64];
    lt_mesh_format(m, ms, sizeof ms);
    for (int r = 0; r < W; r++) in[r] = make_input(k, dt, r, variant);
    lt_comm *c = NULL;
    LT_CHECK(lt_comm_new(m, &c));
    int ran = 1;
    for (int md = 0; md < m->ndim && ran; md++) {
        snprintf(what, sizeof what, "%s %s %s variant %d on mesh %s dim %d (P=%d)", cnames[k],
                 lt_dtype_name(dt), lt_redop_name(op), variant, ms, md, NP);
        int dim = (k == C_AG || k == C_GA) ? variant : 0;
        lt_status st = run_wrapper(c, k, md, in, op, dim, ref);
        if (st == LT_UNSUPPORTED && dt == LT_BOOL && op == LT_REDOP_AVG) {
            ran = 0;
            break;
        }
        if (st) fail_msg("%s: reference: %s", what, lt_errmsg());
        /* the MPI engine on owned ranks only */
        const lt_engine_i *e = lt_engine_mpi();
        void *ctx = NULL;
        LT_CHECK(e->init(m, &ctx));
        for (int r = 0; r < W; r++) {
            sparse[r] = owned(m, r) ? in[r] : NULL;
            out[r] = NULL;
            if (!owned(m, r)) continue;
            const lt_tensor *b = ref[r];
            if (b->placeholder)
                LT_CHECK(lt_tensor_placeholder(dt, b->logical_ndim, b->logical, &out[r]));
            else LT_CHECK(lt_tensor_empty(dt, b->ndim, b->shape, &out[r]));
        }
        int n = m->shape[md], ranks[64], perm[64];
        int64_t sizes[64 * 64];
        lt_split_rule chunk = lt_split_chunk();
        for (int i = 0; i < n; i++) perm[i] = (i + 1) % n;
        for (int g = 0; g < lt_mesh_ngroups(m, md); g++) {
            lt_mesh_group(m, md, g, ranks);
            lt_coll_group cg;
            memset(&cg, 0, sizeof cg);
            cg.mesh = m;
            cg.mesh_dim = md;
            cg.index = g;
            cg.size = n;
            cg.ranks = ranks;
            cg.op = op;
            cg.perm = perm;
            cg.dim = dim;
            cg.root = k == C_BC ? 1 % n : k == C_GA ? n - 1 : 0;
            if (k == C_RS || k == C_SC)
                LT_CHECK(lt_split_sizes(&chunk, in[ranks[0]]->shape[0], n, sizes));
            if (k == C_A2A) {
                cg.dim = 1;
                cg.concat_dim = 0;
                for (int i = 0; i < n; i++)
                    LT_CHECK(lt_split_sizes(&chunk, in[ranks[i]]->shape[1], n, sizes + i * n));
            }
            cg.sizes = sizes;
            st = fn_of(e, k)(ctx, &cg, sparse, out);
            if (st) fail_msg("%s: mpi engine: %s", what, lt_errmsg());
        }
        e->free(ctx);
        compare(m, out, ref, what);
        free_all(out, W);
        free_all(ref, W);
    }
    lt_comm_free(c);
    free_all(in, W);
    return ran;
}

static const char *const MESHES[] = {"8", "2x4", "4x2", "2x2x2", "3x2", "5"};

static void test_blocks(void **state) {
    (void)state;
    /* hand-computed: 8 ranks over 3 processes -> [0,2) [2,5) [5,8) */
    int first, count;
    lt_mpi_block(8, 3, 0, &first, &count);
    assert_int_equal(first, 0);
    assert_int_equal(count, 2);
    lt_mpi_block(8, 3, 1, &first, &count);
    assert_int_equal(first, 2);
    assert_int_equal(count, 3);
    lt_mpi_block(8, 3, 2, &first, &count);
    assert_int_equal(first, 5);
    assert_int_equal(count, 3);
    int want[8] = {0, 0, 1, 1, 1, 2, 2, 2};
    for (int r = 0; r < 8; r++) assert_int_equal(lt_mpi_owner(8, 3, r), want[r]);
    /* every (world, nproc) pair: owner agrees with the blocks */
    for (int w = 1; w <= 40; w++)
        for (int p = 1; p <= w; p++)
            for (int q = 0; q < p; q++) {
                lt_mpi_block(w, p, q, &first, &count);
                assert_true(count >= 1);
                for (int r = first; r < first + count; r++)
                    assert_int_equal(lt_mpi_owner(w, p, r), q);
            }
}

static void test_every_collective(void **state) {
    (void)state;
    static const lt_dtype dts[] = {LT_F32, LT_F64, LT_BF16, LT_F16, LT_I32, LT_I64, LT_BOOL};
    int cases = 0;
    /* every block this test allocates through kernels/alloc.h is freed again
     * (Open MPI's own allocations are not counted: the sanitizer builds turn
     * LeakSanitizer off under mpirun, as it cannot tell them from ours) */
    lt_engine_mpi_release();
    lt__fault_arm(0, 0);
    for (size_t mi = 0; mi < sizeof MESHES / sizeof *MESHES; mi++) {
        lt_mesh m;
        LT_CHECK(lt_mesh_parse(MESHES[mi], &m));
        if (m.world < NP) continue; /* test_too_many_processes covers these */
        for (int k = C_AG; k <= C_PE; k++)
            for (size_t di = 0; di < sizeof dts / sizeof *dts; di++) {
                int reduces = k == C_AR || k == C_RS || k == C_RE;
                for (int op = 0; op < (reduces ? LT_REDOP_COUNT : 1); op++)
                    for (int variant = 0; variant < 2; variant++)
                        cases += one_case(&m, (ckind)k, dts[di], (lt_redop)op, variant);
            }
    }
    lt_engine_mpi_release();
    int64_t live = lt__fault_live();
    lt__fault_disarm();
    assert_int_equal(live, 0);
    assert_true(cases > 500);
}

/* Every collective through the public wrappers on an MPI communicator
 * (2x4, both mesh dims), the other processes' ranks given as `absent` says:
 * 0, poisoned (a different tensor of the same shape); 1, absent stand-ins
 * (lt_tensor_absent: a shape, no bytes). The owned results equal the
 * in-process ones; the others are stand-ins of the result's shape (or
 * placeholders, which have no bytes either). */
static void wrappers_case(lt_comm *ref, lt_comm *mc, const lt_mesh *m, int absent) {
    for (int k = C_AG; k <= C_PE; k++) {
        lt_tensor *in[8], *pin[8], *a[8] = {0}, *b[8] = {0};
        for (int r = 0; r < 8; r++) {
            in[r] = make_input((ckind)k, LT_F32, r, 0);
            pin[r] = in[r];
            if (owned(m, r)) continue;
            if (absent) {
                LT_CHECK(lt_tensor_absent(in[r]->dtype, in[r]->ndim, in[r]->shape, &pin[r]));
            } else {
                LT_CHECK(lt_tensor_new_like(in[r], &pin[r]));
                LT_CHECK(lt_fill(pin[r], 777.0));
            }
        }
        for (int md = 0; md < 2; md++) {
            LT_CHECK(run_wrapper(ref, (ckind)k, md, in, LT_REDOP_SUM, 0, a));
            LT_CHECK(run_wrapper(mc, (ckind)k, md, pin, LT_REDOP_SUM, 0, b));
            char what[96];
            snprintf(what, sizeof what, "wrapper %s mesh dim %d (P=%d%s)", cnames[k], md, NP,
                     absent ? ", absent" : "");
            compare(m, b, a, what);
            for (int r = 0; r < 8; r++) {
                if (owned(m, r)) {
                    assert_false(b[r]->absent);
                    continue;
                }
                assert_true(b[r]->absent ||
                            b[r]->placeholder); /* never a buffer for another process's rank */
                assert_int_equal(b[r]->placeholder, a[r]->placeholder);
                if (!b[r]->placeholder) assert_true(lt_same_shape(b[r], a[r]));
                assert_int_equal(b[r]->storage->nbytes, 0);
            }
            free_all(a, 8);
            free_all(b, 8);
        }
        for (int r = 0; r < 8; r++)
            if (pin[r] != in[r]) lt_tensor_free(pin[r]);
        free_all(in, 8);
    }
}

/* Mesh 2x4, an in-process communicator on it and an MPI one. */
static void two_comms(lt_mesh *m, lt_comm **ref, lt_comm **mc) {
    LT_CHECK(lt_mesh_parse("2x4", m));
    LT_CHECK(lt_comm_new(m, ref));
    LT_CHECK(lt_comm_new_engine(m, lt_engine_mpi(), mc));
}

static void test_wrappers_poisoned(void **state) {
    (void)state;
    lt_mesh m;
    lt_comm *ref = NULL, *mc = NULL;
    two_comms(&m, &ref, &mc);
    assert_string_equal(lt_comm_engine_name(mc), "mpi");
    wrappers_case(ref, mc, &m, 0);
    lt_comm_free(ref);
    lt_comm_free(mc);
}

/* The same with stand-ins; which ranks the communicator holds; and an
 * absent input of an owned rank fails the call on every process. */
static void test_wrappers_absent(void **state) {
    (void)state;
    lt_mesh m;
    lt_comm *ref = NULL, *mc = NULL;
    two_comms(&m, &ref, &mc);
    int held = 0;
    for (int r = 0; r < 8; r++) {
        assert_int_equal(lt_comm_holds(mc, r), owned(&m, r));
        assert_int_equal(lt_comm_owner(mc, r), lt_mpi_owner(8, NP < 8 ? NP : 8, r));
        held += owned(&m, r);
    }
    assert_int_equal(lt_comm_nheld(mc), held);
    wrappers_case(ref, mc, &m, 1);
    /* rank 0's input absent on the process that holds it */
    lt_tensor *in[8], *out[8] = {0};
    for (int r = 0; r < 8; r++) {
        in[r] = make_input(C_AG, LT_F32, r, 0);
        if (r == 0 && owned(&m, 0)) {
            lt_tensor *t = in[0];
            LT_CHECK(lt_tensor_absent(t->dtype, t->ndim, t->shape, &in[0]));
            lt_tensor_free(t);
        }
    }
    lt_status st = lt_all_gather(mc, 0, in, 0, out);
    assert_int_equal(st, LT_INVALID);
    if (owned(&m, 0))
        assert_non_null(strstr(
            lt_errmsg(),
            "rank 0's input is absent (a shape without values), but this process holds rank 0"));
    else assert_non_null(strstr(lt_errmsg(), "(on process 0)"));
    for (int r = 0; r < 8; r++) assert_null(out[r]);
    free_all(in, 8);
    lt_comm_free(ref);
    lt_comm_free(mc);
}

/* More processes than ranks: every process gets the same clear error. */
static void test_too_many_processes(void **state) {
    (void)state;
    lt_mesh m;
    int two = 2;
    LT_CHECK(lt_mesh_init(&m, 1, &two, NULL));
    lt_comm *c = NULL;
    lt_status st = lt_comm_new_engine(&m, lt_engine_mpi(), &c);
    if (NP <= 2) {
        LT_CHECK(st);
        lt_comm_free(c);
        return;
    }
    assert_int_equal(st, LT_INVALID);
    assert_null(c);
    char want[128];
    snprintf(want, sizeof want,
             "mpi engine: %d processes but mesh 2 has only 2 ranks (run with 1 to 2 processes)",
             NP);
    assert_string_equal(lt_errmsg(), want);
}

/* A process that ends its unit of work early (lt_engine_mpi_end_unit with
 * its error) while the others go on into collective calls and a new
 * communicator: each of their calls fails there at once with its status
 * and message, "(on process 1)", lt_engine_mpi_echo says who and with what
 * tag, and every process leaves the end of the unit together, the values
 * it carries agreed (their minimum). No process waits for a call another
 * never makes. */
static void test_end_unit_answers_calls(void **state) {
    (void)state;
    if (NP < 2) return;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("8", &m));
    lt_comm *c = NULL;
    LT_CHECK(lt_comm_new_engine(&m, lt_engine_mpi(), &c));
    lt_tensor *in[8], *out[8] = {0};
    for (int r = 0; r < 8; r++) in[r] = make_input(C_AG, LT_F32, r, 0);
    int vals[2] = {10 + ME, -ME};
    if (ME == 1) {
        lt_engine_mpi_end_unit(LT_NOMEM, 2, "refused here", vals);
    } else {
        for (int i = 0; i < 2; i++) {   /* two calls the stopped process never makes */
            lt_status st = lt_all_gather(c, 0, in, 0, out);
            assert_int_equal(st, LT_NOMEM);
            assert_string_equal(lt_errmsg(), "refused here (on process 1)");
            lt_status est = LT_OK;
            int tag = -1;
            char msg[64];
            assert_int_equal(lt_engine_mpi_echo(&est, &tag, msg, sizeof msg), 1);
            assert_int_equal(est, LT_NOMEM);
            assert_int_equal(tag, 2);
            assert_string_equal(msg, "refused here");
            assert_int_equal(lt_engine_mpi_echo(NULL, NULL, NULL, 0), -1);   /* asked once */
        }
        lt_comm *c2 = NULL;   /* a communicator made meanwhile fails too */
        assert_int_equal(lt_comm_new_engine(&m, lt_engine_mpi(), &c2), LT_NOMEM);
        assert_null(c2);
        lt_engine_mpi_end_unit(LT_OK, 0, NULL, vals);
    }
    assert_int_equal(vals[0], 10);
    assert_int_equal(vals[1], -(NP - 1));
    /* the next unit: calls work again everywhere */
    LT_CHECK(lt_all_gather(c, 0, in, 0, out));
    lt_engine_mpi_end_unit(LT_OK, 0, NULL, NULL);
    free_all(out, 8);
    free_all(in, 8);
    lt_comm_free(c);
}

/* all_gather on mesh 8 with the planted swap: wrong bytes when the group
 * spans processes; --cross-check turns that into an error naming the rank
 * on every process. Without the plant, cross-check passes. */
static void test_cross_check_finds_plant(void **state) {
    (void)state;
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("8", &m));
    lt_tensor *in[8], *ref[8] = {0}, *got[8] = {0};
    for (int r = 0; r < 8; r++)
        in[r] = make_input(C_AR, LT_F32, r, 0); /* equal shapes: the swap applies */
    lt_comm *c = NULL;
    LT_CHECK(lt_comm_new(&m, &c));
    LT_CHECK(lt_all_gather(c, 0, in, 0, ref));
    lt_comm_free(c);
    for (int mode = 0; mode < 3; mode++) { /* 0: check, no plant; 1: plant only; 2: plant + check */
        lt_mpi_options o = {mode != 1, mode != 0, 0, 0};
        lt_engine_mpi_set_options(&o);
        LT_CHECK(lt_comm_new_engine(&m, lt_engine_mpi(), &c));
        lt_status st = lt_all_gather(c, 0, in, 0, got);
        lt_comm_free(c);
        if (mode == 0 || NP == 1) { /* one process: an in-process copy, no MPI path to plant in */
            LT_CHECK(st);
            compare(&m, got, ref, "cross-checked all_gather");
        } else if (mode == 1) {
            LT_CHECK(st);
            int differs = 0;
            for (int r = 0; r < 8; r++)
                if (owned(&m, r))
                    differs |= memcmp(lt_data(got[r]), lt_data(ref[r]), lt_nbytes(ref[r])) != 0;
            assert_true(differs); /* the plant is real */
        } else {
            /* every process fails the call; each finds the swap in its own
             * first rank's result (every member's result holds the swapped
             * pieces), so each keeps its own message */
            assert_int_equal(st, LT_INVALID);
            char want[256];
            int first;
            lt_mpi_block(8, NP, ME, &first, NULL);
            snprintf(
                want, sizeof want,
                "all_gather on mesh dim 0, group [0,1,2,3,4,5,6,7]: engine 'mpi': "
                "cross-check: rank %d's result differs from the in-process engine's at element 0",
                first);
            assert_string_equal(lt_errmsg(), want);
        }
        free_all(got, 8);
    }
    lt_engine_mpi_set_options(NULL);
    free_all(ref, 8);
    free_all(in, 8);
}

/* Shadow mode (every process holds every rank): all results, owned or
 * not, equal the in-process ones; under cross-check the planted swap is an
 * error on every process; a 2-rank mesh runs with extra processes idle. */
static void test_shadow(void **state) {
    (void)state;
    for (int mi = 0; mi < 3; mi++) {
        lt_mesh m;
        LT_CHECK(lt_mesh_parse(mi == 0 ? "2x4" : mi == 1 ? "8" : "2", &m));
        for (int mode = 0; mode < 2; mode++) { /* 0: plain; 1: cross-check + plant */
            lt_mpi_options o = {mode, mode, 1, 1};
            lt_engine_mpi_set_options(&o);
            lt_comm *ref = NULL, *mc = NULL;
            LT_CHECK(lt_comm_new(&m, &ref));
            LT_CHECK(lt_comm_new_engine(&m, lt_engine_mpi(), &mc));
            int planted_fail = 0;
            for (int k = C_AG; k <= C_PE; k++) {
                lt_tensor *in[8], *a[8] = {0}, *b[8] = {0};
                for (int r = 0; r < m.world; r++)
                    in[r] = make_input(k == C_AG ? C_AR : (ckind)k, LT_BF16, r, 0);
                for (int md = 0; md < m.ndim; md++) {
                    LT_CHECK(run_wrapper(ref, (ckind)k, md, in, LT_REDOP_AVG, 0, a));
                    lt_status st = run_wrapper(mc, (ckind)k, md, in, LT_REDOP_AVG, 0, b);
                    if (st) {
                        /* only the planted all_gather on a group that spans processes */
                        assert_int_equal(mode, 1);
                        assert_int_equal(k, C_AG);
                        assert_non_null(strstr(lt_errmsg(), "cross-check: rank "));
                        planted_fail = 1;
                    } else {
                        for (int r = 0; r < m.world; r++) {
                            if (a[r]->placeholder) continue;
                            if (memcmp(lt_data(a[r]), lt_data(b[r]), lt_nbytes(a[r])))
                                fail_msg("shadow %s on mesh dim %d: rank %d differs (P=%d)",
                                         cnames[k], md, r, NP);
                        }
                    }
                    free_all(a, m.world);
                    free_all(b, m.world);
                }
                free_all(in, m.world);
            }
            /* the plant fires wherever an all_gather group spans processes */
            int spans = NP > 1;
            if (mode == 1) assert_int_equal(planted_fail, spans);
            lt_comm_free(ref);
            lt_comm_free(mc);
        }
    }
    lt_engine_mpi_set_options(NULL);
}

/* Point to point (lt_send_recv, engine.h `send_recv`) on mesh 8, owned
 * (each process holds only its ranks: the bytes cross processes through
 * MPI) and shadow with --cross-check (every process holds every rank): the
 * receiver gets the sender's tensor (a transposed view of it, for one
 * pair), a rank not held gets an absent stand-in, and a preallocated output
 * of another shape is refused on every process alike. */
static void send_recv_case(lt_comm *mc, const lt_mesh *m, int src, int dst, lt_dtype dt,
                           int view) {
    lt_tensor *x = make_input(C_AR, dt, src, 0), *in = x, *want = NULL, *got = NULL;
    if (view) LT_CHECK(lt_transpose(x, 0, 1, &in));
    LT_CHECK(lt_contiguous(in, &want));
    if (!lt_comm_holds(mc, src)) LT_CHECK(lt_tensor_absent(dt, in->ndim, in->shape, &in));
    LT_CHECK(lt_send_recv(mc, src, dst, in, &got));
    if (!lt_comm_holds(mc, dst)) {
        assert_true(got->absent);
    } else {
        assert_false(got->absent);
        if (got->ndim != want->ndim || memcmp(lt_data(got), lt_data(want), lt_nbytes(want)))
            fail_msg("send_recv %d -> %d (%s%s): rank %d got other bytes (P=%d)", src, dst,
                     lt_dtype_name(dt), view ? ", a view" : "", dst, NP);
    }
    if (in != x) lt_tensor_free(in);
    lt_tensor_free(x);
    lt_tensor_free(want);
    lt_tensor_free(got);
    (void)m;
}

static void test_send_recv(void **state) {
    (void)state;
    static const int pairs[][2] = {{0, 7}, {7, 0}, {2, 3}, {5, 1}};
    static const lt_dtype dts[] = {LT_F32, LT_BF16, LT_I64, LT_BOOL};
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("8", &m));
    for (int shadow = 0; shadow < 2; shadow++) {
        lt_mpi_options o = {shadow, 0, shadow, 1};
        lt_engine_mpi_set_options(shadow ? &o : NULL);
        lt_comm *mc = NULL;
        LT_CHECK(lt_comm_new_engine(&m, lt_engine_mpi(), &mc));
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 4; k++)
                send_recv_case(mc, &m, pairs[i][0], pairs[i][1], dts[k], i == 1 && k == 0);
        /* a preallocated output of another shape: refused everywhere, the other
         * processes naming the one that refused */
        int64_t sh[2] = {1, 1};
        lt_tensor *x = make_input(C_AR, LT_F32, 0, 0), *bad = NULL, *in = x;
        LT_CHECK(lt_tensor_new(LT_F32, 2, sh, &bad));
        if (!lt_comm_holds(mc, 0)) LT_CHECK(lt_tensor_absent(LT_F32, 2, x->shape, &in));
        lt_tensor *out = bad;
        lt_status st = lt_send_recv(mc, 0, 7, in, &out);
        assert_int_equal(st, LT_INVALID);
        assert_ptr_equal(out, bad);
        if (in != x) lt_tensor_free(in);
        lt_tensor_free(x);
        lt_tensor_free(bad);
        lt_comm_free(mc);
    }
    lt_engine_mpi_set_options(NULL);
}

/* Every allocation site of the engine (engine_mpi*.c) and of the public
 * wrappers before it (collectives.c: outputs, temporaries, scratch) fails
 * in turn (its 1st and 2nd allocation there) on process 1 only, inside each
 * collective: every process ends the call with the same status (an error
 * where the site was reached), nothing is left allocated, and no process
 * waits for another (the wrappers agree through the engine's `agree`). */
static const char *const fault_files[] = {"collectives_sim/engine_mpi.c",
                                          "collectives_sim/engine_mpi_paths.c",
                                          "collectives_sim/collectives.c", "kernels/tensor.c"};
#define NFAULT_FILES 4 /* the last two: the wrappers' sites (tensor.c: the outputs they create) */
static void test_allocation_failures(void **state) {
    (void)state;
    if (NP < 2) return; /* no group spans processes: the MPI paths are not reached */
    lt_mesh m;
    LT_CHECK(lt_mesh_parse("2x4", &m));
    lt_comm *mc = NULL;
    LT_CHECK(lt_comm_new_engine(&m, lt_engine_mpi(), &mc));
    int fired_total = 0, fired_wrapper = 0;
    for (int shadow = 0; shadow < 2; shadow++) {
        lt_mpi_options o = {1, 0, shadow, 0}; /* with cross-check: its paths too */
        lt_engine_mpi_set_options(&o);
        lt_comm_free(mc);
        LT_CHECK(lt_comm_new_engine(&m, lt_engine_mpi(), &mc));
        for (int k = C_AG; k <= C_PE; k++) {
            lt_tensor *in[8], *out[8] = {0};
            for (int r = 0; r < 8; r++) in[r] = make_input((ckind)k, LT_F32, r, 0);
            /* the engine's sites this collective reaches (counted, nothing fails) */
            int files[64], lines[64], ns = 0;   /* (ns) index into fault_files, line */
            lt__fault_arm(0, 0);
            LT_CHECK(run_wrapper(mc, (ckind)k, 0, in, LT_REDOP_SUM, 0, out));
            free_all(out, 8);
            for (int i = 0; i < lt__fault_nsites() && ns < 64; i++) {
                const char *f;
                int line;
                lt__fault_site(i, &f, &line, NULL);
                for (int q = 0; q < NFAULT_FILES; q++)
                    if (!strcmp(f, fault_files[q])) { files[ns] = q; lines[ns++] = line; }
            }
            lt__fault_disarm();
            /* the same list everywhere: take process 1's */
            int n1 = ns;
            MPI_Bcast(&n1, 1, MPI_INT, 1, MPI_COMM_WORLD);
            MPI_Bcast(lines, 64, MPI_INT, 1, MPI_COMM_WORLD);
            MPI_Bcast(files, 64, MPI_INT, 1, MPI_COMM_WORLD);
            for (int s = 0; s < n1; s++)
                for (int nth = 1; nth <= 2; nth++) {
                    if (ME == 1)
                        assert_int_equal(
                            lt__fault_arm_site(fault_files[files[s]], lines[s], nth, 0), 0);
                    else lt__fault_arm(0, 0);
                    lt_status st = run_wrapper(mc, (ckind)k, 0, in, LT_REDOP_SUM, 0, out);
                    free_all(out, 8);
                    int64_t live = lt__fault_live(), fired = lt__fault_fired();
                    lt__fault_disarm();
                    if (live != 0)
                        fail_msg("%s, site line %d #%d: %lld blocks left allocated", cnames[k],
                                 lines[s], nth, (long long)live);
                    int v[2] = {(int)st, -(int)st}, r[2];
                    MPI_Allreduce(v, r, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
                    if (r[0] != -r[1])
                        fail_msg("%s, site line %d #%d: statuses differ across processes",
                                 cnames[k], lines[s], nth);
                    if (fired && st != LT_NOMEM)
                        fail_msg("%s, site line %d #%d: %s", cnames[k], lines[s], nth, lt_errmsg());
                    fired_total += (int)fired;
                    if (fired && files[s] >= 2) fired_wrapper++;
                }
            free_all(in, 8);
        }
    }
    lt_comm_free(mc);
    lt_engine_mpi_set_options(NULL);
    if (ME == 1) assert_true(fired_total > 20);
    if (ME == 1) assert_true(fired_wrapper > 5);   /* the wrappers' own sites were reached */
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    lt_engine_mpi_polite_wait();   /* as the CLI does */
    MPI_Comm_size(MPI_COMM_WORLD, &NP);
    MPI_Comm_rank(MPI_COMM_WORLD, &ME);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_every_collective),
        cmocka_unit_test(test_wrappers_poisoned),
        cmocka_unit_test(test_wrappers_absent),
        cmocka_unit_test(test_too_many_processes),
        cmocka_unit_test(test_end_unit_answers_calls),
        cmocka_unit_test(test_cross_check_finds_plant),
        cmocka_unit_test(test_shadow),
        cmocka_unit_test(test_send_recv),
        cmocka_unit_test(test_allocation_failures),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    lt_engine_mpi_release();
    MPI_Finalize();
    return rc;
}
