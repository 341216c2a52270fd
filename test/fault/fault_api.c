/* test/fault/fault_api.c — the C API workload of the fault-injection
 * driver (fault_main.c): distribute, redistribute with verification (twice:
 * the second plan comes from the cache), Partial -> Replicate, full_tensor,
 * the collectives (fresh and preallocated outputs), ops with and without
 * the reference check, from_local, rand, planning from scratch, and a
 * scenario loaded from memory and run from a file.
 *
 * Every result is checked against values computed here by hand from the
 * definitions (arange tensors, sums, products), so a path that swallows a
 * failure and goes on with a wrong answer is caught too; every failed call
 * must keep the contract of fault_failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/alloc.h"
#include "localtensor/localtensor.h"
#include "test/fault/fault.h"
#include "tools/scenario/scenario.h"

/* An address that no allocation returns: outputs are preset to it so a
 * failed call that leaves them untouched is told apart from a half-built one. */
static char sentinel;
#define SENT ((void *)&sentinel)
#define CHANGED ((void *)(&sentinel + 1))

/* fault_failed, with the sentinel counted as untouched */
static int failed(const char *what, lt_status st, int nouts, void *const *outs) {
    void *o[8];
    for (int i = 0; i < nouts && i < 8; i++) o[i] = outs[i] == SENT ? NULL : outs[i];
    return fault_failed(what, st, nouts < 8 ? nouts : 8, o);
}

/* Runs one call whose single output is `out` (preset to the sentinel). On
 * failure resets it to NULL and leaves with the failure's exit code. */
#define CALL(what, out, expr)                                                         \
    do {                                                                              \
        (out) = SENT;                                                                 \
        lt_status st_ = (expr);                                                       \
        if (st_ != LT_OK) {                                                           \
            void *o_[1] = {(void *)(out)};                                            \
            (out) = NULL;                                                             \
            rc = failed(what, st_, 1, o_);                                            \
            goto done;                                                                \
        }                                                                             \
    } while (0)

/* Same for a collective filling outs[0..n): NULL entries are allocated by
 * the call, others are preallocated outputs it writes into. On failure the
 * fresh ones must be NULL again and the preallocated ones the same tensors. */
#define CALL_N(what, outs, n, expr)                                                   \
    do {                                                                              \
        void *b_[8];                                                                  \
        for (int i_ = 0; i_ < (n); i_++) b_[i_] = (void *)(outs)[i_];                 \
        lt_status st_ = (expr);                                                       \
        if (st_ != LT_OK) {                                                           \
            void *o_[8];                                                              \
            for (int i_ = 0; i_ < (n); i_++)                                          \
                o_[i_] = (void *)(outs)[i_] == b_[i_] ? NULL : CHANGED;                \
            rc = failed(what, st_, (n), o_);                                          \
            goto done;                                                                \
        }                                                                             \
    } while (0)

/* t must have shape (d0, d1) (d1 == 0: 1-d of d0) and t[a][b] == f(a, b). */
typedef double (*val_fn)(int a, int b, const void *ctx);

static int expect(const char *what, const lt_tensor *t, int64_t d0, int64_t d1, val_fn f,
                  const void *ctx) {
    int nd = d1 ? 2 : 1;
    if (!t || t->ndim != nd || t->shape[0] != d0 || (d1 && t->shape[1] != d1)) {
        return fault_broken(what, "wrong shape");
    }
    for (int a = 0; a < d0; a++)
        for (int b = 0; b < (d1 ? d1 : 1); b++) {
            int64_t idx[2] = {a, b};
            if (lt_get(t, idx) != f(a, b, ctx)) {
                return fault_broken(what, "wrong value at [%d, %d]: %g, expected %g", a, b,
                                    lt_get(t, idx), f(a, b, ctx));
            }
        }
    return FAULT_DONE;
}

#define EXPECT(what, t, d0, d1, f, ctx)                                               \
    do {                                                                              \
        if ((rc = expect(what, t, d0, d1, f, ctx)) != FAULT_DONE) goto done;           \
    } while (0)

/* x[r][c] = 4r + c, the 4x4 arange tensor the workload starts from. */
static double v_x(int a, int b, const void *c) { (void)c; return 4 * a + b; }
static double v_2x(int a, int b, const void *c) { (void)c; return 2 * (4 * a + b); }
static double v_xt(int a, int b, const void *c) { (void)c; return 4 * b + a; }
static double v_flat(int a, int b, const void *c) { (void)c; (void)b; return a; }
static double v_rowsum(int a, int b, const void *c) { (void)c; (void)b; return 16 * a + 6; }
static double v_xx(int a, int b, const void *c) {
    (void)c;
    double s = 0;
    for (int k = 0; k < 4; k++) s += (4 * a + k) * (4 * k + b);
    return s;
}
/* per-rank expectations on the 2x2 mesh: ctx points to the rank's coord */
static double v_s0s1(int a, int b, const void *c) {         /* [S(0), S(1)] */
    const int *k = c;
    return 4 * (2 * k[0] + a) + 2 * k[1] + b;
}
static double v_rs0(int a, int b, const void *c) {          /* [R, S(0)] */
    const int *k = c;
    return 4 * (2 * k[1] + a) + b;
}
static double v_ar0(int a, int b, const void *c) { /* all_reduce over mesh dim 0 of [S0,S1] */
    const int *k = c;
    return 8 + 8 * a + 4 * k[1] + 2 * b;
}
static double v_ag1(int a, int b, const void *c) { /* all_gather on mesh dim 1, tensor dim 1 */
    const int *k = c;
    return 4 * (2 * k[0] + a) + b;
}
static double v_rsc0(int a, int b, const void *c) { /* reduce_scatter mesh dim 0, tensor dim 0 */
    const int *k = c;
    (void)a;
    return 8 + 8 * k[0] + 4 * k[1] + 2 * b;
}
static double v_a2a1(int a, int b, const void *c) { /* all_to_all mesh dim 1, split 0, concat 1 */
    const int *k = c;
    (void)a;
    return 4 * (2 * k[0] + k[1]) + b;
}
static double v_bc0(int a, int b, const void *c) {         /* broadcast mesh dim 0 from root 1 */
    const int *k = c;
    return 4 * (2 + a) + 2 * k[1] + b;
}

static const char scen_text[] =
    "name: fault_api\n"
    "mesh: {shape: [2, 2], names: [dp, tp]}\n"
    "tensors:\n"
    "  x: {shape: [4, 2], init: arange}\n"
    "steps:\n"
    "  - distribute: {tensor: x, placements: [R, \"S(0)\"], as: xd}\n"
    "  - expect_local:\n"
    "      tensor: xd\n"
    "      ranks: {0: [[0, 1], [2, 3]], 1: [[4, 5], [6, 7]], 2: [[0, 1], [2, 3]], 3: [[4, 5], [6, "
    "7]]}\n"
    "      offsets: [[0, 0], [2, 0], [0, 0], [2, 0]]\n"
    "  - redistribute: {tensor: xd, to: [\"S(0)\", R], as: yd, verify: true}\n"
    "  - expect_full: {tensor: yd, equals: x}\n"
    "  - op: {op: add, inputs: [yd, yd], as: zd}\n"
    "  - expect_full: {tensor: zd, values: [[0, 2], [4, 6], [8, 10], [12, 14]]}\n";

/* The workload; returns the child's exit code. Frees everything it made on
 * every path. */
/* What the workload holds between its parts (freed by api_free). */
typedef struct api_state {
    lt_mesh mesh;
    lt_tensor *x, *full, *outs[4];
    lt_dtensor *dA, *dB, *dC, *dP, *d1, *d2;
    lt_comm *comm;
    lt_plan *plan;
    lt_sc_file *sf;
    FILE *sink, *errsink;
    int64_t shape[2];
    lt_placement s0s1[2], rs0[2], rs1[2], s0r[2], ps0[2], rr[2];
} api_state;

/* The workload's distribute, and what each rank holds. FAULT_DONE, or the outcome that ended it. */
static int api_distribute(api_state *S) {
    int rc = FAULT_DONE;
    /* distribute, and what each rank holds */
    CALL("distribute [S(0), S(1)]", S->dA, lt_distribute(&S->mesh, S->x, S->s0s1, 2, &S->dA));
    for (int r = 0; r < 4; r++) {
        int k[2];
        lt_mesh_coord(&S->mesh, r, k);
        EXPECT("distribute [S(0), S(1)]", lt_to_local(S->dA, r), 2, 2, v_s0s1, k);
    }
    CALL("distribute [R, S(1)]", S->dB, lt_distribute(&S->mesh, S->x, S->rs1, 2, &S->dB));
    CALL("distribute [S(0), R]", S->dC, lt_distribute(&S->mesh, S->x, S->s0r, 2, &S->dC));

    goto done;
done:
    return rc;
}

/* The workload's redistribute with verification, twice (the second plan from the cache);
 * Partial(sum) summed back; full_tensor. FAULT_DONE, or the outcome that ended it. */
static int api_redistribute(api_state *S) {
    int rc = FAULT_DONE;
    /* redistribute with verification, twice (the second plan comes from the cache) */
    CALL("comm_new", S->comm, lt_comm_new(&S->mesh, &S->comm));
    lt_verify_report rep;
    lt_redistribute_opts ro = {.verify = 1, .name = "a", .comm = S->comm, .report = &rep};
    for (int pass = 0; pass < 2; pass++) {
        CALL("redistribute -> [R, S(0)]", S->d1,
             lt_redistribute(S->dA, S->rs0, 2, &ro, &S->d1, &S->plan));
        for (int r = 0; r < 4; r++) {
            int k[2];
            lt_mesh_coord(&S->mesh, r, k);
            EXPECT("redistribute -> [R, S(0)]", lt_to_local(S->d1, r), 2, 4, v_rs0, k);
        }
        char buf[2048];
        lt_plan_format(S->plan, buf, sizeof buf);
        lt_plan_free(S->plan);
        S->plan = NULL;
        lt_dtensor_free(S->d1);
        S->d1 = NULL;
    }
    /* Partial(sum): distribute splits the value, redistribute to R sums it back */
    CALL("distribute [P(sum), S(0)]", S->dP, lt_distribute(&S->mesh, S->x, S->ps0, 2, &S->dP));
    CALL("redistribute P -> [R, R]", S->d1, lt_redistribute(S->dP, S->rr, 2, &ro, &S->d1, NULL));
    EXPECT("redistribute P -> [R, R]", lt_to_local(S->d1, 3), 4, 4, v_x, NULL);
    lt_dtensor_free(S->d1);
    S->d1 = NULL;
    CALL("full_tensor", S->full, lt_full_tensor(S->dA, &S->full));
    EXPECT("full_tensor", S->full, 4, 4, v_x, NULL);
    lt_tensor_free(S->full);
    S->full = NULL;

    goto done;
done:
    return rc;
}

/* The workload's the collectives on dA's shards. FAULT_DONE, or the outcome that ended it. */
static int api_collectives(api_state *S) {
    int rc = FAULT_DONE;
    /* the collectives on dA's shards */
    lt_tensor *const *sh = S->dA->local->shards;
    struct {
        const char *what;
        int64_t d0, d1;
        val_fn f;
    } colls[6] = {{"all_reduce", 2, 2, v_ar0},      {"all_gather", 2, 4, v_ag1},
                  {"reduce_scatter", 1, 2, v_rsc0}, {"all_to_all", 1, 4, v_a2a1},
                  {"broadcast", 2, 2, v_bc0},       {"all_reduce (preallocated)", 2, 2, v_ar0}};
    for (int c = 0; c < 6; c++) {
        switch (c) {
        case 5: {
            static const int64_t s22[2] = {2, 2};
            for (int r = 0; r < 4; r++)
                CALL("tensor_new", S->outs[r], lt_tensor_new(LT_F32, 2, s22, &S->outs[r]));
            CALL_N("all_reduce (preallocated)", S->outs, 4,
                   lt_all_reduce(S->comm, 0, sh, LT_REDOP_SUM, S->outs));
            break;
        }
        case 0:
            CALL_N("all_reduce", S->outs, 4, lt_all_reduce(S->comm, 0, sh, LT_REDOP_SUM, S->outs));
            break;
        case 1: CALL_N("all_gather", S->outs, 4, lt_all_gather(S->comm, 1, sh, 1, S->outs)); break;
        case 2:
            CALL_N("reduce_scatter", S->outs, 4,
                   lt_reduce_scatter(S->comm, 0, sh, LT_REDOP_SUM, 0, NULL, S->outs));
            break;
        case 3:
            CALL_N("all_to_all", S->outs, 4, lt_all_to_all(S->comm, 1, sh, 0, 1, NULL, S->outs));
            break;
        default: CALL_N("broadcast", S->outs, 4, lt_broadcast(S->comm, 0, sh, 1, S->outs)); break;
        }
        for (int r = 0; r < 4; r++) {
            int k[2];
            lt_mesh_coord(&S->mesh, r, k);
            EXPECT(colls[c].what, S->outs[r], colls[c].d0, colls[c].d1, colls[c].f, k);
        }
        for (int r = 0; r < 4; r++) {
            lt_tensor_free(S->outs[r]);
            S->outs[r] = NULL;
        }
    }

    goto done;
done:
    return rc;
}

/* The workload's ops, each checked on the reassembled result. FAULT_DONE, or the outcome that ended
 * it. */
static int api_ops(api_state *S) {
    int rc = FAULT_DONE;
    /* ops, each checked on the reassembled result */
    struct {
        const char *what;
        int64_t d0, d1;
        val_fn f;
    } ops[7] = {{"add", 4, 4, v_2x},
                {"matmul", 4, 4, v_xx},
                {"sum(dim 1)", 4, 0, v_rowsum},
                {"transpose", 4, 4, v_xt},
                {"reshape", 16, 0, v_flat},
                {"add of replicas (computed once, shared)", 4, 4, v_2x},
                {"add (reference check)", 4, 4, v_2x}};
    for (int o = 0; o < 7; o++) {
        static const int dim1[1] = {1};
        static const int64_t flat[1] = {16};
        switch (o) {
        case 0: CALL("add", S->d2, lt_dtensor_binary(LT_BINARY_ADD, S->dA, S->dA, &S->d2)); break;
        case 1: CALL("matmul", S->d2, lt_dtensor_matmul(S->dC, S->dB, &S->d2)); break;
        case 2:
            CALL("sum", S->d2, lt_dtensor_reduce(LT_REDUCE_SUM, S->dA, 1, dim1, 0, &S->d2));
            break;
        case 3: CALL("transpose", S->d2, lt_dtensor_transpose(S->dA, 0, 1, &S->d2)); break;
        case 4: CALL("reshape", S->d2, lt_dtensor_reshape(S->dA, 1, flat, &S->d2)); break;
        case 5: /* [R, S(1)]: ranks (0, j) and (1, j) hold one buffer, added once */
            CALL("add of replicas", S->d2,
                 lt_dtensor_binary(LT_BINARY_ADD, S->dB, S->dB, &S->d2));
            break;
        default: {
            const lt_dtensor *in[2] = {S->dA, S->dB};
            lt_op_opts oo = {.check_reference = 1, .name = "a+b"};
            lt_op_args args;
            memset(&args, 0, sizeof args);
            CALL("op add with reference check", S->d2,
                 lt_op(LT_OP_ADD, in, 2, &args, &oo, &S->d2, 1, NULL));
        }
        }
        CALL(ops[o].what, S->full, lt_full_tensor(S->d2, &S->full));
        EXPECT(ops[o].what, S->full, ops[o].d0, ops[o].d1, ops[o].f, NULL);
        lt_tensor_free(S->full);
        S->full = NULL;
        lt_dtensor_free(S->d2);
        S->d2 = NULL;
    }

    goto done;
done:
    return rc;
}

/* The workload's from_local on dA's shards, and rand giving the same values whatever the layout.
 * FAULT_DONE, or the outcome that ended it. */
static int api_from_local_rand(api_state *S) {
    int rc = FAULT_DONE;
    /* from_local on dA's shards (views are kept), with the replica check */
    CALL("from_local", S->d2, lt_from_local(&S->mesh, S->dA->local->shards, S->s0s1, 2, 1, &S->d2));
    CALL("full_tensor of from_local", S->full, lt_full_tensor_direct(S->d2, &S->full));
    EXPECT("from_local", S->full, 4, 4, v_x, NULL);
    lt_tensor_free(S->full);
    S->full = NULL;
    lt_dtensor_free(S->d2);
    S->d2 = NULL;

    /* rand: the same values whatever the layout */
    CALL("rand [S(0), R]", S->d1,
         lt_dtensor_rand(&S->mesh, LT_F32, 2, S->shape, S->s0r, 2, 7, 0, &S->d1));
    CALL("rand [R, S(1)]", S->d2,
         lt_dtensor_rand(&S->mesh, LT_F32, 2, S->shape, S->rs1, 2, 7, 0, &S->d2));
    {
        lt_tensor *f1 = NULL, *f2 = NULL;
        CALL("full_tensor of rand", f1, lt_full_tensor(S->d1, &f1));
        S->full = f1;
        CALL("full_tensor of rand", f2, lt_full_tensor(S->d2, &f2));
        for (int64_t i = 0; i < 16; i++)
            if (lt_get_flat(f1, i) != lt_get_flat(f2, i)) {
                rc = fault_broken("rand", "the values depend on the layout");
            }
        lt_tensor_free(f2);
        if (rc) goto done;
    }
    lt_tensor_free(S->full);
    S->full = NULL;
    lt_dtensor_free(S->d1);
    lt_dtensor_free(S->d2);
    S->d1 = S->d2 = NULL;

    goto done;
done:
    return rc;
}

/* The workload's planning from scratch. FAULT_DONE, or the outcome that ended it. */
static int api_plan(api_state *S) {
    int rc = FAULT_DONE;
    /* planning from scratch: [S(0), S(1)] -> [R, R] gathers 12 of 16 f32
     * elements on each of 4 ranks: 48 bytes per rank, 192 in all */
    lt_redistribute_opts po = {.no_cache = 1};
    CALL("plan_redistribute", S->plan,
         lt_plan_redistribute(&S->mesh, LT_F32, 2, S->shape, S->s0s1, S->rr, 2, &po, &S->plan));
    if (S->plan->total_bytes != 192) {
        rc = fault_broken("plan", "total bytes %zu, expected 192", S->plan->total_bytes);
        goto done;
    }
    lt_plan_free(S->plan);
    S->plan = NULL;

    goto done;
done:
    return rc;
}

/* The workload's scenarios: load from memory, then load and run from a file (tmp: a path prefix for
 * the files). FAULT_DONE, or the outcome that ended it. */
static int api_scenarios(api_state *S, const char *tmp) {
    int rc = FAULT_DONE;
    /* scenarios: load from memory, then load and run from a file */
    CALL("sc_load_string", S->sf,
         lt_sc_load_string("fault.yaml", scen_text, sizeof scen_text - 1, &S->sf));
    if (lt_sc_file_cases(S->sf) != 1) {
        rc = fault_broken("sc_load_string", "%d cases, expected 1", lt_sc_file_cases(S->sf));
        goto done;
    }
    lt_sc_file_free(S->sf);
    S->sf = NULL;
    char scen_path[512], out_path[512];
    snprintf(scen_path, sizeof scen_path, "%s.yaml", tmp);
    snprintf(out_path, sizeof out_path, "%s.out", tmp);
    FILE *sf_out = fopen(scen_path, "w");
    if (!sf_out || fwrite(scen_text, 1, sizeof scen_text - 1, sf_out) != sizeof scen_text - 1) {
        if (sf_out) fclose(sf_out);
        rc = fault_broken("scenario", "cannot write %s", scen_path);
        goto done;
    }
    fclose(sf_out);
    S->sink = fopen(out_path, "w+");
    S->errsink = fopen("/dev/null", "w");
    if (!S->sink || !S->errsink) {
        rc = fault_broken("scenario", "cannot open %s", out_path);
        goto done;
    }
    {
        const char *paths[1] = {scen_path};
        lt_sc_options so;
        memset(&so, 0, sizeof so);
        so.out = S->sink;
        so.err = S->sink;
        int code = lt_sc_run_paths(paths, 1, &so);
        char text[4096];
        fflush(S->sink);
        rewind(S->sink);
        size_t n = fread(text, 1, sizeof text - 1, S->sink);
        text[n] = 0;
        if (code == 0 && strstr(text, "1 passed, 0 failed, 0 errors")) {
            /* ran */
        } else if (code == 2 && lt__fault_fired() && strstr(text, "out of memory")) {
            if (fault_verbose)
                fprintf(stderr, "  run_paths: exit 2, %s", strstr(text, "out of memory"));
            rc = FAULT_OOM;
            goto done;
        } else {
            rc = fault_broken("run_paths", "exit %d:\n%s", code, text);
            goto done;
        }
    }

    goto done;
done:
    return rc;
}

/* The mesh and the 4x4 arange tensor x. */
static int api_setup(api_state *S) {
    int rc = FAULT_DONE;
    static const int mshape[2] = {2, 2};
    static const char *const mnames[2] = {"dp", "tp"};
    S->shape[0] = S->shape[1] = 4;
    S->s0s1[0] = lt_shard(0), S->s0s1[1] = lt_shard(1);
    S->rs0[0] = lt_replicate(), S->rs0[1] = lt_shard(0);
    S->rs1[0] = lt_replicate(), S->rs1[1] = lt_shard(1);
    S->s0r[0] = lt_shard(0), S->s0r[1] = lt_replicate();
    S->ps0[0] = lt_partial(LT_REDOP_SUM), S->ps0[1] = lt_shard(0);
    S->rr[0] = lt_replicate(), S->rr[1] = lt_replicate();
    if (lt_mesh_init(&S->mesh, 2, mshape, mnames) != LT_OK) {
        return fault_broken("mesh", "%s", lt_errmsg());
    }
    CALL("tensor_new", S->x, lt_tensor_new(LT_F32, 2, S->shape, &S->x));
    if (lt_arange_fill(S->x) != LT_OK) {
        rc = fault_broken("arange_fill", "%s", lt_errmsg());
        goto done;
    }

    goto done;
done:
    return rc;
}

/* Frees what S holds. */
static void api_free(api_state *S) {
    if (S->sink) fclose(S->sink);
    if (S->errsink) fclose(S->errsink);
    lt_sc_file_free(S->sf);
    lt_plan_free(S->plan);
    for (int r = 0; r < 4; r++) lt_tensor_free(S->outs[r]);
    lt_tensor_free(S->full);
    lt_dtensor_free(S->d2);
    lt_dtensor_free(S->d1);
    lt_dtensor_free(S->dP);
    lt_dtensor_free(S->dC);
    lt_dtensor_free(S->dB);
    lt_dtensor_free(S->dA);
    lt_comm_free(S->comm);
    lt_tensor_free(S->x);
}

int fault_api_workload(void *ctx, const char *tmp) {
    (void)ctx;
    api_state *S = calloc(1, sizeof *S);
    if (!S) return fault_broken("workload", "out of memory for its state");
    int rc = api_setup(S);
    if (rc == FAULT_DONE) rc = api_distribute(S);
    if (rc == FAULT_DONE) rc = api_redistribute(S);
    if (rc == FAULT_DONE) rc = api_collectives(S);
    if (rc == FAULT_DONE) rc = api_ops(S);
    if (rc == FAULT_DONE) rc = api_from_local_rand(S);
    if (rc == FAULT_DONE) rc = api_plan(S);
    if (rc == FAULT_DONE) rc = api_scenarios(S, tmp);
    api_free(S);
    free(S);
    return rc;
}

