/* test/mpi/flat.c — collectives over flattened groups of adjacent mesh dims
 * (collectives_sim/engine_impl.h lt__comm_flat, what the planner's --moves
 * all steps run on) on the MPI engine: every owned result equals the
 * in-process engine's over the same flattened mesh, byte for byte, and the
 * events land in the parent communicator's trace with the product group's
 * size.
 *
 * Run by tools/run-mpi-tests.sh as `mpirun -np P build/mpi_flat` (P = 1, 2,
 * 4). Meshes 2x2 and 2x2x2, every run of two or more adjacent dims; a
 * permute (member q to q + 1), an all_gather and an all_reduce each.
 */
#include <mpi.h>
#include <string.h>

#include "collectives_sim/engine_impl.h"
#include "localtensor/collectives_sim/collectives.h"
#include "localtensor/collectives_sim/engine_mpi.h"
#include "localtensor/collectives_sim/trace.h"
#include "test/testutil.h"

/* Collective k (0 permute, 1 all_gather, 2 all_reduce) along mesh dim i of
 * c into out[] (new tensors). */
static lt_status run_one(lt_comm *c, int k, int i, lt_tensor *const *in, lt_tensor **out) {
    int n = lt_comm_mesh(c)->shape[i], perm[64];
    for (int q = 0; q < n; q++) perm[q] = (q + 1) % n;
    if (k == 0) return lt_permute_ranks(c, i, in, perm, out);
    if (k == 1) return lt_all_gather(c, i, in, 0, out);
    return lt_all_reduce(c, i, in, LT_REDOP_SUM, out);
}

/* Every collective of run_one over mesh dims first .. first + span - 1 of
 * mc (MPI) and ref (in-process): the owned results agree. */
static void check_run(lt_comm *mc, lt_comm *ref, int first, int span) {
    lt_comm *fc, *fr;
    LT_CHECK(lt__comm_flat(mc, first, span, &fc));
    LT_CHECK(lt__comm_flat(ref, first, span, &fr));
    assert_int_equal(lt_comm_mesh(fc)->shape[first], lt_comm_mesh(fr)->shape[first]);
    int W = lt_comm_mesh(mc)->world;
    lt_tensor *in[64], *rin[64], *out[64] = {0}, *rout[64] = {0};
    for (int r = 0; r < W; r++) {
        int64_t sh[1] = {2};
        LT_CHECK(lt_tensor_empty(LT_F32, 1, sh, &rin[r]));
        float *d = lt_data(rin[r]);
        d[0] = (float)(10 * r);
        d[1] = (float)(10 * r + 1);
        in[r] = rin[r];
        if (!lt_comm_holds(mc, r)) LT_CHECK(lt_tensor_absent(LT_F32, 1, sh, &in[r]));
    }
    for (int k = 0; k < 3; k++) {
        LT_CHECK(run_one(fc, k, first, in, out));
        LT_CHECK(run_one(fr, k, first, rin, rout));
        for (int r = 0; r < W; r++) {
            if (lt_comm_holds(mc, r)) {
                lt_compare_result res;
                assert_true(lt_same_shape(out[r], rout[r]));
                LT_CHECK(lt_compare(out[r], rout[r], 0, 0, &res));
                if (!res.equal)
                    fail_msg("collective %d over mesh dims %d..%d: rank %d differs", k, first,
                             first + span - 1, r);
            }
            lt_tensor_free(out[r]);
            lt_tensor_free(rout[r]);
            out[r] = rout[r] = NULL;
        }
    }
    for (int r = 0; r < W; r++) {
        if (in[r] != rin[r]) lt_tensor_free(in[r]);
        lt_tensor_free(rin[r]);
    }
}

static void test_flattened_groups(void **state) {
    (void)state;
    const char *meshes[2] = {"2x2", "2x2x2"};
    for (int q = 0; q < 2; q++) {
        lt_mesh m;
        LT_CHECK(lt_mesh_parse(meshes[q], &m));
        lt_comm *mc, *ref;
        LT_CHECK(lt_comm_new_engine(&m, lt_engine_mpi(), &mc));
        LT_CHECK(lt_comm_new(&m, &ref));
        for (int first = 0; first + 2 <= m.ndim; first++)
            for (int span = 2; first + span <= m.ndim; span++) check_run(mc, ref, first, span);
        /* every event in the parent's trace, as the in-process run's */
        lt_trace *t = lt_comm_trace(mc), *tr = lt_comm_trace(ref);
        assert_int_equal(lt_trace_count(t), lt_trace_count(tr));
        assert_int_equal(lt_trace_count(tr), m.ndim == 2 ? 3 : 9);   /* runs x 3 */
        for (size_t e = 0; e < lt_trace_count(tr); e++) {
            lt_trace_event a, b;
            LT_CHECK(lt_trace_get(t, e, &a));
            LT_CHECK(lt_trace_get(tr, e, &b));
            assert_int_equal(a.group_size, b.group_size);
            assert_int_equal(a.mesh_dim, b.mesh_dim);
            assert_int_equal(a.total_recv, b.total_recv);
        }
        lt_trace_event e0;
        LT_CHECK(lt_trace_get(tr, 0, &e0));
        assert_int_equal(e0.group_size, 4);   /* mesh dims 0 and 1: 2 x 2 */
        lt_comm_free(mc);
        lt_comm_free(ref);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    lt_engine_mpi_polite_wait();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flattened_groups),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    lt_engine_mpi_release();
    MPI_Finalize();
    return rc;
}
