/* test/mpi/mesh_ids.c — the MPI engine on meshes in any rank order
 * (docs/SEMANTICS.md §1.1, docs/engines.md): processes hold blocks of rank
 * ids, not of mesh positions, and every collective's owned results equal
 * the in-process engine's, byte for byte.
 *
 * Run by tools/run-mpi-tests.sh as `mpirun -np P build/mpi_mesh_ids` (P =
 * 1, 2, 4). The owner of each position is worked out here from the rule
 * (process p holds rank ids [p*W/P, (p+1)*W/P), lt_mpi_block's blocks),
 * not read from the engine; a mesh where one
 * process would hold members of a group that are not adjacent is refused
 * with "not supported yet" on every process, which this test predicts the
 * same way.
 */
#include <mpi.h>
#include <string.h>

#include "localtensor/collectives_sim/collectives.h"
#include "localtensor/collectives_sim/engine_mpi.h"
#include "test/testutil.h"

static int NP, ME;

/* The process of mesh position q: the block of rank ids [p*W/P, (p+1)*W/P)
 * that holds its id (P: the processes that hold ranks). */
static int owner_of(const lt_mesh *m, int q) {
    int nown = NP < m->world ? NP : m->world, id = lt_mesh_rank_id(m, q);
    for (int p = 0; p < nown; p++)
        if (id >= p * m->world / nown && id < (p + 1) * m->world / nown) return p;
    return -1;
}

/* Would a group hold one process's members apart? (then the engine refuses) */
static int split_runs(const lt_mesh *m) {
    int pos[64];
    for (int d = 0; d < m->ndim; d++)
        for (int g = 0; g < lt_mesh_ngroups(m, d); g++) {
            lt_mesh_group(m, d, g, pos);
            for (int a = 0; a < m->shape[d]; a++)
                for (int b = a + 2; b < m->shape[d]; b++)
                    if (owner_of(m, pos[a]) == owner_of(m, pos[b]) &&
                        owner_of(m, pos[a + 1]) != owner_of(m, pos[a]))
                        return 1;
        }
    return 0;
}

static lt_tensor *input(int q, int rows) {
    lt_tensor *t = NULL;
    LT_CHECK(lt_tensor_new(LT_F32, 2, (int64_t[]){rows, 2}, &t));
    for (int64_t i = 0; i < lt_numel(t); i++) lt_set_flat(t, i, 100.0 * q + (double)i);
    return t;
}

static void free_all(lt_tensor **a, int n) {
    for (int r = 0; r < n; r++) {
        lt_tensor_free(a[r]);
        a[r] = NULL;
    }
}

/* One collective k on mesh dim md through both communicators; the owned
 * results compared. */
static void one(lt_comm *ref, lt_comm *mc, const lt_mesh *m, int k, int md) {
    lt_tensor *in[64], *a[64] = {0}, *b[64] = {0};
    for (int q = 0; q < m->world; q++) in[q] = input(q, k == 0 ? q % 3 : 5);
    for (int pass = 0; pass < 2; pass++) {
        lt_comm *c = pass ? mc : ref;
        lt_tensor **o = pass ? b : a;
        if (k == 0) LT_CHECK(lt_all_gather(c, md, in, 0, o));
        else if (k == 1) LT_CHECK(lt_all_reduce(c, md, in, LT_REDOP_SUM, o));
        else if (k == 2) LT_CHECK(lt_reduce_scatter(c, md, in, LT_REDOP_SUM, 0, NULL, o));
        else LT_CHECK(lt_broadcast(c, md, in, 1, o));
    }
    for (int q = 0; q < m->world; q++) {
        assert_int_equal(lt_comm_owner(mc, q), owner_of(m, q));
        if (owner_of(m, q) != ME) continue;
        int same = lt_same_shape(a[q], b[q]);
        for (int64_t i = 0; same && i < lt_numel(a[q]); i++)
            same = lt_get_flat(a[q], i) == lt_get_flat(b[q], i);
        if (!same)
            fail_msg("collective %d, mesh dim %d, position %d (rank %d), P=%d: differs", k, md, q,
                     lt_mesh_rank_id(m, q), NP);
    }
    free_all(in, m->world);
    free_all(a, m->world);
    free_all(b, m->world);
}

static void mesh_case(const char *text) {
    lt_mesh m;
    LT_CHECK(lt_mesh_parse(text, &m));
    lt_comm *ref = NULL, *mc = NULL;
    LT_CHECK(lt_comm_new(&m, &ref));
    lt_status st = lt_comm_new_engine(&m, lt_engine_mpi(), &mc);
    if (split_runs(&m)) {
        assert_int_equal(st, LT_UNSUPPORTED);
        assert_non_null(strstr(lt_errmsg(), "not supported yet: mpi engine: mesh dim"));
        lt_comm_free(ref);
        return;
    }
    LT_CHECK(st);
    for (int k = 0; k < 4; k++)
        for (int md = 0; md < m.ndim; md++) one(ref, mc, &m, k, md);
    lt_comm_free(ref);
    lt_comm_free(mc);
}

static void test_permuted_meshes(void **state) {
    (void)state;
    mesh_case("dp=2,tp=2:[[0,2],[1,3]]");
    mesh_case("dp=2,tp=2:[[3,2],[1,0]]");   /* groups whose processes come in falling order */
    mesh_case("2x4:[[0,1,4,5],[2,3,6,7]]");
    mesh_case("[0,2,1,3]");                  /* at P = 2: process 0 holds members 0 and 2 */
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    lt_engine_mpi_polite_wait();
    MPI_Comm_size(MPI_COMM_WORLD, &NP);
    MPI_Comm_rank(MPI_COMM_WORLD, &ME);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_permuted_meshes),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    lt_engine_mpi_release();
    MPI_Finalize();
    return rc;
}
