/* test/test_op_dtypes.c — the dtype table of docs/c-api.md §2 (Ops) is
 * what the code accepts. Every op of LT_OP_MAP runs on every dtype of
 * LT_DTYPE_MAP (small DTensors on a mesh of 2, the first input sharded on
 * dim 0); LT_OK counts as supported, LT_UNSUPPORTED / LT_DTYPE as not, any
 * other status fails the test. The table must list every op once
 * with exactly that answer per dtype. LT_PRINT_DTYPE_TABLE=1 prints the
 * table the code gives (to regenerate the documented one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/ops.h"
#include "test/testutil.h"

#define TABLE_DOC "docs/c-api.md"

static const lt_dtype dtypes[] = {
#define LT__XX(e, s, sz, fl) LT_##e,
    LT_DTYPE_MAP(LT__XX)
#undef LT__XX
};
#define NDT ((int)(sizeof dtypes / sizeof dtypes[0]))

static lt_tensor *filled(lt_dtype dt, int nd, const int64_t *shape, int index_range) {
    lt_tensor *t = NULL;
    LT_CHECK(lt_tensor_new(dt, nd, shape, &t));
    int64_t n = lt_numel(t);
    for (int64_t i = 0; i < n; i++) /* positive and small: log, sqrt, div and indices are defined */
        lt_set_flat(t, i,
                    dt == LT_BOOL ? (double)(i % 2)
                                  : (double)(index_range ? i % index_range : i % 5 + 1));
    return t;
}

/* 1: op ran on dtype dt; 0: it said the dtype is not supported. */
static int accepts(lt_op_kind op, lt_dtype dt) {
    lt_mesh m;
    int two = 2;
    LT_CHECK(lt_mesh_init(&m, 1, &two, NULL));
    int64_t s53[2] = {4, 3}, s34[2] = {3, 4}, s4[1] = {4}, s253[3] = {2, 4, 3}, s234[3] = {2, 3, 4},
            s5[1] = {5};
    int64_t s74[2] = {7, 4};
    lt_op_args a;
    memset(&a, 0, sizeof a);
    lt_tensor *full[3] = {0};
    lt_dtype in_dt[3] = {dt, dt, dt};
    int nin = lt_op_arity(op);
    switch (op) {
    case LT_OP_MATMUL:
    case LT_OP_MM:
        full[0] = filled(dt, 2, s53, 0), full[1] = filled(dt, 2, s34, 0);
        break;
    case LT_OP_BMM: full[0] = filled(dt, 3, s253, 0), full[1] = filled(dt, 3, s234, 0); break;
    case LT_OP_ADDMM:
        full[0] = filled(dt, 1, s4, 0), full[1] = filled(dt, 2, s53, 0),
        full[2] = filled(dt, 2, s34, 0);
        break;
    case LT_OP_EMBEDDING: /* the dtype is the weight's; indices are i64 */
        full[0] = filled(dt, 2, s74, 0), full[1] = filled(LT_I64, 1, s5, 7), in_dt[1] = LT_I64;
        break;
    case LT_OP_CAT: nin = 2; /* fall through */
    default:
        for (int k = 0; k < nin; k++) full[k] = filled(dt, 2, s53, 0);
    }
    a.scalar = 2, a.dim = 1, a.dim2 = 0, a.chunks = 2, a.split_size = 2;
    if (op == LT_OP_DROPOUT) a.scalar = 0.5;
    if (op == LT_OP_PERMUTE) a.ndims = 2, a.dims[0] = 1, a.dims[1] = 0;
    if (op == LT_OP_RESHAPE || op == LT_OP_VIEW) a.shape_ndim = 1, a.shape[0] = 12;
    if (op == LT_OP_FLATTEN) a.dim = 0;
    if (op == LT_OP_RAND || op == LT_OP_RANDN) {
        a.mesh = &m, a.dtype = dt, a.shape_ndim = 2, a.shape[0] = 4, a.shape[1] = 3, a.np = 1;
        a.placements[0] = lt_shard(0);
    }
    lt_dtensor *in[3] = {0}, *out[LT_OP_MAX_OUTPUTS] = {0};
    for (int k = 0; k < nin; k++) {
        lt_placement p = k == 0 ? lt_shard(0) : lt_replicate();
        LT_CHECK(lt_distribute(&m, full[k], &p, 1, &in[k]));
        assert_int_equal(in[k]->dtype, in_dt[k]);
    }
    int nout = 0;
    lt_status st =
        lt_op(op, (const lt_dtensor *const *)in, nin, &a, NULL, out, LT_OP_MAX_OUTPUTS, &nout);
    if (st && st != LT_UNSUPPORTED && st != LT_DTYPE)
        fail_msg("%s on %s: %s: %s", lt_op_name(op), lt_dtype_name(dt), lt_status_name(st),
                 lt_errmsg());
    for (int j = 0; j < nout; j++) assert_int_equal(out[j]->dtype, dt); /* no op promotes */
    for (int j = 0; j < LT_OP_MAX_OUTPUTS; j++) lt_dtensor_free(out[j]);
    for (int k = 0; k < 3; k++) lt_dtensor_free(in[k]), lt_tensor_free(full[k]);
    return st == LT_OK;
}

/* "| `add`, `sub` | yes | - | ... |": the op names of the first cell into
 * names[*nn] and the answer per dtype into yes[NDT]; 0 when the line is
 * not a row of the table. */
static int parse_row(const char *line, char (*names)[32], int *nn, int *yes) {
    if (strncmp(line, "| `", 3)) return 0;
    const char *end = strchr(line + 1, '|'), *p = line + 1;
    *nn = 0;
    while (end && (p = strchr(p, '`')) && p < end) {
        const char *q = strchr(p + 1, '`');
        if (!q || q - p - 1 >= 32 || *nn == LT_OP_COUNT) return 0;
        memcpy(names[*nn], p + 1, (size_t)(q - p - 1));
        names[(*nn)++][q - p - 1] = 0;
        p = q + 1;
    }
    p = end;
    for (int c = 0; c < NDT; c++) {
        if (!p) return 0;
        p++;
        while (*p == ' ') p++;
        if (!strncmp(p, "yes", 3)) yes[c] = 1;
        else if (*p == '-') yes[c] = 0;
        else return 0;
        p = strchr(p, '|');
    }
    return *nn > 0;
}

/* The table the code gives: ops with the same answers share a row. */
static void print_table(int (*got)[NDT]) {
    printf("| op |");
    for (int c = 0; c < NDT; c++) printf(" %s |", lt_dtype_name(dtypes[c]));
    printf("\n|---|");
    for (int c = 0; c < NDT; c++) printf("---|");
    printf("\n");
    int done[LT_OP_COUNT] = {0};
    for (int op = 0; op < LT_OP_COUNT; op++) {
        if (done[op]) continue;
        printf("|");
        for (int o = op; o < LT_OP_COUNT; o++)
            if (!done[o] && !memcmp(got[o], got[op], sizeof got[op]))
                printf("%s `%s`", o == op ? "" : ",", lt_op_name((lt_op_kind)o)), done[o] = 1;
        printf(" |");
        for (int c = 0; c < NDT; c++) printf(" %s |", got[op][c] ? "yes" : "-");
        printf("\n");
    }
}

static void test_readme_table(void **state) {
    (void)state;
    int got[LT_OP_COUNT][NDT];
    for (int op = 0; op < LT_OP_COUNT; op++)
        for (int c = 0; c < NDT; c++) got[op][c] = accepts((lt_op_kind)op, dtypes[c]);
    lt_op_cache_clear();
    const char *pr = getenv("LT_PRINT_DTYPE_TABLE");
    if (pr && pr[0] == '1') print_table(got);
    FILE *f = fopen(TABLE_DOC, "r");
    if (!f) fail_msg("cannot open %s (run the test from the repository root)", TABLE_DOC);
    char line[1024], names[LT_OP_COUNT][32];
    int seen[LT_OP_COUNT] = {0}, bad = 0, nn = 0;
    while (fgets(line, sizeof line, f)) {
        int yes[NDT];
        if (!parse_row(line, names, &nn, yes)) continue;
        for (int i = 0; i < nn; i++) {
            lt_op_kind op;
            if (lt_op_parse(names[i], &op) || strcmp(lt_op_name(op), names[i])) {
                printf(TABLE_DOC ": `%s` is not an op\n", names[i]);
                bad++;
                continue;
            }
            if (seen[op]++) printf(TABLE_DOC ": `%s` is listed twice\n", names[i]), bad++;
            for (int c = 0; c < NDT; c++)
                if (yes[c] != got[op][c])
                    printf(TABLE_DOC ": `%s` on %s says %s, the code %s it\n", names[i],
                           lt_dtype_name(dtypes[c]), yes[c] ? "yes" : "no",
                           got[op][c] ? "accepts" : "rejects"),
                        bad++;
        }
    }
    fclose(f);
    for (int op = 0; op < LT_OP_COUNT; op++)
        if (!seen[op]) printf(TABLE_DOC ": no row for `%s`\n", lt_op_name((lt_op_kind)op)), bad++;
    if (bad)
        fail_msg("%d differences between the dtype table of " TABLE_DOC
                 " and the code (LT_PRINT_DTYPE_TABLE=1 prints it)",
                 bad);
}

int main(void) {
    lt_test_backend_from_env();
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_readme_table)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
