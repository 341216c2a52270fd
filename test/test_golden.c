/* test/test_golden.c — replays what real PyTorch DTensor did, without PyTorch.
 *
 * The files under test/golden/ were written by tools/torch/gen_golden.py running
 * PyTorch's DTensor under LocalTensorMode (every rank in one process, the
 * fake process group); each file names the torch version. For every case
 * this test runs the same thing here and compares:
 *   layouts.json        distribute_tensor: every rank's shape and values;
 *   redistributes.json  redistribute: placements and every rank's values;
 *   ops.json            ops: the output placements, whether each input was
 *                       redistributed, and the values (every rank's when the
 *                       placements agree, the global tensor otherwise).
 * Values must agree wherever both run; where PyTorch raises and we do not
 * (or the other way round) the case is counted and listed by reason.
 * Placement agreement of ops is reported per op family (docs/SEMANTICS.md
 * §11.9 lists where and why the rules differ). Every op PyTorch refuses
 * must be refused here too, or noted in the plan (lt_op_plan.pytorch_refuses),
 * or be of a kind `replaced` lists (a PyTorch bug: the correct result here).
 * LT_GOLDEN_VERBOSE=1 lists every differing case, LT_GOLDEN_ONLY=N runs op
 * case N alone. Plain malloc: test code. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "localtensor/ops.h"
#include "localtensor/pytorch_bugs.h"
#include "test/testutil.h"

/* ---- reading ------------------------------------------------------------------ */

/* The golden file `name` under test/golden/ (or $LT_GOLDEN_DIR: files
 * regenerated elsewhere, replayed before they are committed). */
static cJSON *load(const char *name, const char *kind) {
    char path[1024];
    const char *dir = getenv("LT_GOLDEN_DIR");
    snprintf(path, sizeof path, "%s/%s", dir && dir[0] ? dir : "test/golden", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: cannot open (run from the repository root)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n)
        fail_msg("%s: short read", path);
    fclose(f);
    buf[n] = '\0';
    cJSON *doc = cJSON_ParseWithLengthOpts(buf, (size_t)n, NULL, 0);
    free(buf);
    if (!doc)
        fail_msg("%s: not JSON", path);
    cJSON *k = cJSON_GetObjectItem(doc, "kind"), *v = cJSON_GetObjectItem(doc, "torch");
    if (!cJSON_IsString(k) || strcmp(k->valuestring, kind) || !cJSON_IsString(v))
        fail_msg("%s: not a golden file of kind %s with a torch version", path, kind);
    print_message("%s: %d cases from torch %s\n", path,
                  cJSON_GetArraySize(cJSON_GetObjectItem(doc, "cases")), v->valuestring);
    return doc;
}

static lt_mesh mesh_of(const cJSON *c) {
    char s[64] = "";
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItem(c, "mesh")) {
        size_t l = strlen(s);
        snprintf(s + l, sizeof s - l, "%s%d", l ? "x" : "", d->valueint);
    }
    lt_mesh m;
    LT_CHECK(lt_mesh_parse(s, &m));
    return m;
}

static int shape_of(const cJSON *a, int64_t *shape) {
    int n = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, a) shape[n++] = (int64_t)d->valuedouble;
    return n;
}

/* A list of placement spellings into pl; the joined text into txt. */
static int pls_of(const cJSON *a, lt_placement *pl, char *txt, size_t cap) {
    txt[0] = '\0';
    const cJSON *p;
    cJSON_ArrayForEach(p, a) {
        size_t l = strlen(txt);
        snprintf(txt + l, cap - l, "%s%s", l ? "," : "", p->valuestring);
    }
    int n = 0;
    if (lt_placements_parse(txt, pl, LT_MESH_MAX_DIMS, &n))
        fail_msg("golden: placements '%s': %s", txt, lt_errmsg());
    return n;
}

static double val_of(const cJSON *v) {
    if (cJSON_IsNumber(v))
        return v->valuedouble;
    if (!strcmp(v->valuestring, "nan"))
        return NAN;
    return strcmp(v->valuestring, "inf") ? -INFINITY : INFINITY;
}

static int close_to(double a, double b, double rtol, double atol) {
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b))
        return a == b;
    return fabs(a - b) <= atol + rtol * fabs(b);
}

/* Does rank r's shard x equal PyTorch's [shape, values]? why: the first
 * difference. */
static int shard_equal(const lt_tensor *x, const cJSON *rank, double rtol, double atol, char *why,
                       size_t n) {
    int64_t shape[LT_MAX_DIMS];
    int nd = shape_of(cJSON_GetArrayItem(rank, 0), shape);
    if (nd != x->ndim || memcmp(shape, x->shape, sizeof(int64_t) * (size_t)nd)) {
        char a[64], b[64];
        snprintf(why, n, "shape %s, PyTorch %s", lt_shape_format(x->ndim, x->shape, a, 64),
                 lt_shape_format(nd, shape, b, 64));
        return 0;
    }
    int64_t i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetArrayItem(rank, 1)) {
        double want = val_of(v), got = lt_get_flat(x, i);
        if (!close_to(got, want, rtol, atol)) {
            snprintf(why, n, "element %lld is %.9g, PyTorch %.9g", (long long)i, got, want);
            return 0;
        }
        i++;
    }
    return 1;
}

/* Every rank of dt against PyTorch's ranks list; why: the first difference. */
static int ranks_equal(const lt_dtensor *dt, const cJSON *ranks, double rtol, double atol,
                       char *why, size_t n) {
    int r = 0;
    const cJSON *rk;
    cJSON_ArrayForEach(rk, ranks) {
        char w[200];
        if (!shard_equal(dt->local->shards[r], rk, rtol, atol, w, sizeof w)) {
            snprintf(why, n, "rank %d: %s", r, w);
            return 0;
        }
        r++;
    }
    return 1;
}

/* ---- layouts and redistributes ------------------------------------------------ */

typedef struct tally {
    int cases, both, agree, we_refuse, torch_refuses, both_refuse, skipped;
    int ss, ss_agree; /* layouts with a _StridedShard; the uneven_strided check agreeing */
} tally;

/* The uneven_strided entry of localtensor/pytorch_bugs.h against what
 * PyTorch did with a _StridedShard layout: it raised a bare AssertionError
 * exactly where the check fires. */
static void strided_check(const lt_mesh *m, int nd, const int64_t *shape, const lt_placement *pl,
                          int np, const cJSON *err, tally *t, const char *txt) {
    lt_spec s;
    if (!strstr(txt, "SS(") || lt_spec_init(m, LT_F32, nd, shape, pl, np, &s))
        return;
    int hit = (int)(lt_pytorch_bugs_layout(&s) >> LT_PYTORCH_BUG_UNEVEN_STRIDED & 1);
    int raised = err && strstr(err->valuestring, "AssertionError") != NULL;
    t->ss++;
    if (hit == raised)
        t->ss_agree++;
    else
        print_message("  layout [%s]: uneven_strided %s, PyTorch %s\n", txt,
                      hit ? "fires" : "does not fire",
                      raised ? "raised AssertionError" : "did not");
}

static void report(const char *what, const tally *t) {
    print_message(
        "%s: %d cases; both run %d, agree %d; PyTorch refuses %d (we refuse too: %d); we refuse "
        "where PyTorch runs %d; inputs PyTorch could not build %d\n",
        what, t->cases, t->both, t->agree, t->torch_refuses, t->both_refuse, t->we_refuse,
        t->skipped);
}

/* One layout case: distribute arange with the placements. */
static void layout_case(const cJSON *c, tally *t, int idx) {
    lt_mesh m = mesh_of(c);
    int64_t shape[LT_MAX_DIMS];
    int nd = shape_of(cJSON_GetObjectItem(c, "shape"), shape);
    lt_placement pl[LT_MESH_MAX_DIMS];
    char txt[256], why[300];
    int np = pls_of(cJSON_GetObjectItem(c, "pl"), pl, txt, sizeof txt);
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_dtensor *d = NULL;
    lt_status st = lt_dtensor_new(&m, LT_F32, nd, shape, pl, np, &init, &d);
    const cJSON *err = cJSON_GetObjectItem(c, "error");
    t->cases++;
    strided_check(&m, nd, shape, pl, np, err, t, txt);
    if (err) {
        t->torch_refuses++;
        t->both_refuse += st != LT_OK;
        if (!st && t->torch_refuses - t->both_refuse <= 12)
            print_message("  layout %d [%s]: PyTorch refuses (%s); we distribute it\n", idx, txt,
                          err->valuestring);
    } else if (st) {
        t->we_refuse++;
        print_message("  layout %d [%s]: we refuse: %s\n", idx, txt, lt_errmsg());
    } else {
        t->both++;
        if (ranks_equal(d, cJSON_GetObjectItem(c, "ranks"), 1e-7, 0, why, sizeof why))
            t->agree++;
        else
            print_message("  layout %d [%s] shape %d-d: differs: %s\n", idx, txt, nd, why);
    }
    lt_dtensor_free(d);
}

static void test_layouts(void **state) {
    (void)state;
    cJSON *doc = load("layouts.json", "layouts");
    tally t = {0};
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) layout_case(c, &t, i++);
    report("layouts", &t);
    print_message("layouts with a _StridedShard: %d; PyTorch's AssertionError exactly where the "
                  "uneven_strided "
                  "check fires: %d\n",
                  t.ss, t.ss_agree);
    cJSON_Delete(doc);
    assert_true(t.cases >= 500);
    assert_int_equal(t.ss, t.ss_agree);
    if (t.agree != t.both || t.we_refuse)
        fail_msg("layouts: %d of %d differ, %d refused", t.both - t.agree, t.both, t.we_refuse);
}

/* One redistribute case: distribute arange with src, redistribute to dst. */
static void redistribute_case(const cJSON *c, tally *t, int idx) {
    lt_mesh m = mesh_of(c);
    int64_t shape[LT_MAX_DIMS];
    int nd = shape_of(cJSON_GetObjectItem(c, "shape"), shape);
    lt_placement sp[LT_MESH_MAX_DIMS], dp[LT_MESH_MAX_DIMS];
    char a[256], b[256], why[300];
    int np = pls_of(cJSON_GetObjectItem(c, "src"), sp, a, sizeof a);
    pls_of(cJSON_GetObjectItem(c, "dst"), dp, b, sizeof b);
    t->cases++;
    if (cJSON_GetObjectItem(c, "src_error")) {
        t->skipped++;
        return;
    }
    lt_init init = {LT_INIT_ARANGE, 0};
    lt_dtensor *d = NULL, *out = NULL;
    lt_redistribute_opts o = {0};
    o.verify = 1;
    lt_status st = lt_dtensor_new(&m, LT_F32, nd, shape, sp, np, &init, &d);
    if (!st)
        st = lt_redistribute(d, dp, np, &o, &out, NULL);
    const cJSON *err = cJSON_GetObjectItem(c, "error");
    if (err) {
        t->torch_refuses++;
        t->both_refuse += st != LT_OK;
        if (!st && t->torch_refuses - t->both_refuse <= 12)
            print_message("  redistribute %d [%s] -> [%s]: PyTorch refuses (%s); we run it\n", idx,
                          a, b, err->valuestring);
    } else if (st) {
        t->we_refuse++;
        print_message("  redistribute %d [%s] -> [%s]: we refuse: %s\n", idx, a, b, lt_errmsg());
    } else {
        t->both++;
        if (ranks_equal(out, cJSON_GetObjectItem(c, "ranks"), 1e-6, 1e-6, why, sizeof why))
            t->agree++;
        else
            print_message("  redistribute %d [%s] -> [%s] on %d-d: differs: %s\n", idx, a, b, nd,
                          why);
    }
    lt_dtensor_free(out);
    lt_dtensor_free(d);
}

static void test_redistributes(void **state) {
    (void)state;
    cJSON *doc = load("redistributes.json", "redistributes");
    tally t = {0};
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) redistribute_case(c, &t, i++);
    report("redistributes", &t);
    cJSON_Delete(doc);
    assert_true(t.cases >= 500);
    if (t.agree != t.both)
        fail_msg("redistributes: %d of %d differ", t.both - t.agree, t.both);
}

/* ---- ops ------------------------------------------------------------------------ */

#define LT__XX(e, s, n, fam, pr) #fam,
static const char *const op_family[] = {LT_OP_MAP(LT__XX)};
#undef LT__XX
#define NFAM 11
static const char *const families[NFAM] = {"POINTWISE", "BINARY",    "MATMUL",  "REDUCE",
                                           "SOFTMAX",   "VIEW",      "PERMUTE", "CAT",
                                           "SPLIT",     "EMBEDDING", "RANDOM"};

/* PyTorch refusals that localtensor replaces by the correct result on
 * purpose, one row per kind: the op family (NULL: any), text of PyTorch's
 * message, whether some input must be empty, and why (docs/SEMANTICS.md
 * §11.9). Every other refusal must be reproduced. */
static const struct {
    const char *family, *text;
    int empty_input;
    const char *why;
} replaced[] = {
    {"REDUCE", "Expected reduction dim", 0,
     "max/min with an empty shard on a rank (pytorch_bugs.h max_empty_shard)"},
    {"SPLIT", "Strategy length", 0, "split of a dim of size 0 (an internal check fails)"},
    {"EMBEDDING", "index_select(): self indexing axis dim", 0,
     "a vocabulary shard that is empty on some rank (its local lookup fails)"},
    {NULL, "", 1, "a view or squeeze of an empty tensor (its shape map fails or never ends)"},
    {NULL, "is invalid for input of size", 0,
     "a view of nested uneven shards (its local reshape of a rank's shard fails)"},
};
#define NREPLACED (int)(sizeof replaced / sizeof *replaced)

typedef struct op_tally {
    tally t;
    int replaced[NREPLACED]; /* PyTorch refuses, we give the correct result: per kind */
    int pl_agree, redist_agree;
    int torch_inconsistent; /* no global result from PyTorch (its ranks disagree, or its
                             * full_tensor failed under LocalTensorMode): not compared */
    int torch_full_wrong;   /* every rank agrees, PyTorch's full_tensor does not */
    int unexplained;        /* PyTorch refuses, we run it, and no kind of `replaced` says why */
} op_tally;

static int family_index(lt_op_kind op) {
    for (int f = 0; f < NFAM; f++)
        if (!strcmp(op_family[op], families[f]))
            return f;
    return 0;
}

/* Input k of a case, as the generator built it: (i % 11) * 0.25 + 0.5 +
 * 0.125 k, or for i64 indices (7 i) % vocab; distributed with its
 * placements. */
static lt_status make_input(const lt_mesh *m, const cJSON *in, int k, lt_dtensor **out) {
    int64_t shape[LT_MAX_DIMS];
    int nd = shape_of(cJSON_GetObjectItem(in, "shape"), shape);
    lt_placement pl[LT_MESH_MAX_DIMS];
    char txt[256];
    int np = pls_of(cJSON_GetObjectItem(in, "pl"), pl, txt, sizeof txt);
    const cJSON *vocab = cJSON_GetObjectItem(in, "vocab");
    lt_tensor *full = NULL;
    lt_status st = lt_tensor_new(vocab ? LT_I64 : LT_F32, nd, shape, &full);
    if (st)
        return st;
    for (int64_t i = 0; i < lt_numel(full); i++)
        lt_set_flat(full, i,
                    vocab ? (double)(7 * i % vocab->valueint)
                          : (double)(i % 11) * 0.25 + 0.5 + 0.125 * k);
    st = lt_distribute(m, full, pl, np, out);
    lt_tensor_free(full);
    return st;
}

/* The op's arguments from the case's "args" (the keys of the scenario op step). */
static void args_of(const cJSON *a, lt_op_args *x) {
    memset(x, 0, sizeof *x);
    const cJSON *v;
    if ((v = cJSON_GetObjectItem(a, "dim")))
        x->dim = v->valueint, x->dim_set = 1;
    if ((v = cJSON_GetObjectItem(a, "dim2")))
        x->dim2 = v->valueint, x->flatten_end_set = 1;
    if ((v = cJSON_GetObjectItem(a, "keepdim")))
        x->keepdim = v->valueint;
    if ((v = cJSON_GetObjectItem(a, "scalar")))
        x->scalar = v->valuedouble;
    if ((v = cJSON_GetObjectItem(a, "split_size")))
        x->split_size = (int64_t)v->valuedouble;
    if ((v = cJSON_GetObjectItem(a, "chunks")))
        x->chunks = v->valueint;
    const cJSON *d;
    if ((v = cJSON_GetObjectItem(a, "dims")))
        cJSON_ArrayForEach(d, v) x->dims[x->ndims++] = d->valueint;
    if ((v = cJSON_GetObjectItem(a, "shape")))
        cJSON_ArrayForEach(d, v) x->shape[x->shape_ndim++] = (int64_t)d->valuedouble;
    if ((v = cJSON_GetObjectItem(a, "sizes")))
        cJSON_ArrayForEach(d, v) x->sizes[x->nsizes++] = (int64_t)d->valuedouble;
}

/* Our output y against PyTorch's o: every rank when the placements agree
 * and hold no Partial (a Partial's per-rank terms are one split of many),
 * and always the global tensor (PyTorch's full_tensor). 1 when equal, 0
 * when not (why: the first difference), FULL_WRONG when every rank's values
 * agree but PyTorch's own full_tensor of them differs (PyTorch's error). */
#define FULL_WRONG 2
static int values_equal(const lt_dtensor *y, const cJSON *o, int same_pl, char *why, size_t n) {
    const double rtol = 1e-4, atol = 1e-5;
    const cJSON *full = cJSON_GetObjectItem(o, "full");
    if (!full)
        return 1; /* dropout: random values */
    int partial = 0;
    for (int i = 0; i < lt_dtensor_mesh(y)->ndim; i++)
        partial |= y->placements[i].kind == LT_PL_PARTIAL;
    int by_rank = same_pl && !partial;
    if (by_rank && !ranks_equal(y, cJSON_GetObjectItem(o, "ranks"), rtol, atol, why, n))
        return 0;
    lt_tensor *a = NULL;
    lt_status st = lt_full_tensor_direct(y, &a);
    if (st) {
        snprintf(why, n, "cannot reassemble: %s", lt_errmsg());
        return 0;
    }
    int ok = lt_numel(a) == cJSON_GetArraySize(full);
    if (!ok)
        snprintf(why, n, "%lld elements, PyTorch %d", (long long)lt_numel(a),
                 cJSON_GetArraySize(full));
    int64_t i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, full) {
        if (!ok)
            break;
        double got = lt_get_flat(a, i), want = val_of(v);
        if (!close_to(got, want, rtol, atol)) {
            snprintf(why, n, "global element %lld is %.9g, PyTorch %.9g", (long long)i, got, want);
            ok = 0;
        }
        i++;
    }
    lt_tensor_free(a);
    return ok ? 1 : by_rank ? FULL_WRONG : 0;
}

typedef struct op_run {
    lt_dtensor *in[3], *out[LT_OP_MAX_OUTPUTS];
    int nin, nout;
    lt_op_plan *plan;
} op_run;

static void op_run_free(op_run *r) {
    for (int k = 0; k < r->nin; k++)
        lt_dtensor_free(r->in[k]);
    for (int k = 0; k < r->nout; k++)
        lt_dtensor_free(r->out[k]);
    lt_op_plan_free(r->plan);
}

/* Appends piece to buf (cap bytes) when it fits. */
static void append(char *buf, size_t cap, const char *piece) {
    size_t l = strlen(buf), n = strlen(piece);
    if (l + n < cap) memcpy(buf + l, piece, n + 1);
}

/* LT_GOLDEN_VERBOSE=1: one line per op case whose placements or input
 * redistributes differ from PyTorch's (the inputs, both choices). */
static void print_diff(const cJSON *c, const op_run *r, int idx, const char *name) {
    const cJSON *outs = cJSON_GetObjectItem(c, "outs"), *rd = cJSON_GetObjectItem(c, "redist");
    char txt[256];
    char ins[1024] = "", ours[256], tin[1024] = "";
    const cJSON *in;
    cJSON_ArrayForEach(in, cJSON_GetObjectItem(c, "inputs")) {
        lt_placement ip[LT_MESH_MAX_DIMS];
        char one[256], sh[64];
        int64_t shape[LT_MAX_DIMS];
        int nd = shape_of(cJSON_GetObjectItem(in, "shape"), shape);
        pls_of(cJSON_GetObjectItem(in, "pl"), ip, one, sizeof one);
        char piece[400];
        snprintf(piece, sizeof piece, " %s[%s]", lt_shape_format(nd, shape, sh, sizeof sh), one);
        append(ins, sizeof ins, piece);
    }
    for (int k = 0; k < r->nin; k++) {
        const cJSON *t2 = cJSON_GetArrayItem(cJSON_GetArrayItem(rd, k), 1);
        char one[256] = "-";
        if (cJSON_IsArray(t2)) {
            lt_placement ip[LT_MESH_MAX_DIMS];
            pls_of(t2, ip, one, sizeof one);
        }
        char mine[256] = "-";
        if (r->plan->in_redistribute[k])
            lt_placements_format(r->plan->in_target[k], lt_dtensor_mesh(r->out[0])->ndim, mine,
                                 sizeof mine);
        char piece[600];
        snprintf(piece, sizeof piece, " in%d torch %s ours %s;", k, one, mine);
        append(tin, sizeof tin, piece);
    }
    lt_placements_format(r->out[0]->placements, lt_dtensor_mesh(r->out[0])->ndim, ours,
                         sizeof ours);
    pls_of(cJSON_GetObjectItem(cJSON_GetArrayItem(outs, 0), "pl"),
           (lt_placement[LT_MESH_MAX_DIMS]){0}, txt, sizeof txt);
    print_message("  DIFF %d %s%s: out torch [%s] ours %s;%s\n", idx, name, ins, txt, ours,
                  tin);
}

/* Compares a run that both sides completed: placements, redistributes, values. */
static void op_compare(const cJSON *c, op_run *r, op_tally *t, int idx, const char *name) {
    const cJSON *outs = cJSON_GetObjectItem(c, "outs"), *rd = cJSON_GetObjectItem(c, "redist"), *o;
    cJSON_ArrayForEach(o, outs) {
        const cJSON *fe = cJSON_GetObjectItem(o, "full_error");
        if (!cJSON_GetObjectItem(o, "full_differs_by_rank") && !fe)
            continue;
        t->torch_inconsistent++;
        print_message("  op %d %s: no global result from PyTorch to compare: %s\n", idx, name,
                      fe ? fe->valuestring : "its ranks disagree on it");
        return;
    }
    int same_pl = cJSON_GetArraySize(outs) == r->nout, same_rd = 1, vals = 1;
    char why[300] = "", txt[256];
    for (int k = 0; k < r->nout && same_pl; k++) {
        lt_placement pl[LT_MESH_MAX_DIMS];
        int np =
            pls_of(cJSON_GetObjectItem(cJSON_GetArrayItem(outs, k), "pl"), pl, txt, sizeof txt);
        same_pl = lt_placements_equal(pl, r->out[k]->placements, np);
    }
    for (int k = 0; k < r->nin; k++)
        same_rd &= cJSON_GetArrayItem(cJSON_GetArrayItem(rd, k), 0)->valueint ==
                   r->plan->in_redistribute[k];
    for (int k = 0; k < r->nout && k < cJSON_GetArraySize(outs) && vals == 1; k++)
        vals = values_equal(r->out[k], cJSON_GetArrayItem(outs, k), same_pl, why, sizeof why);
    if (cJSON_GetArraySize(outs) != r->nout) {
        vals = 0;
        snprintf(why, sizeof why, "%d outputs, PyTorch %d", r->nout, cJSON_GetArraySize(outs));
    }
    if ((!same_pl || !same_rd) && getenv("LT_GOLDEN_VERBOSE"))
        print_diff(c, r, idx, name);
    t->t.both++;
    t->pl_agree += same_pl;
    t->redist_agree += same_rd;
    t->t.agree += vals != 0;
    if (vals == FULL_WRONG) {
        t->torch_full_wrong++;
        print_message("  op %d %s: every rank agrees with PyTorch, but PyTorch's full_tensor "
                      "differs: %s\n", idx, name, why);
    } else if (!vals) {
        print_message("  op %d %s: values differ: %s\n", idx, name, why);
    }
}

/* A PyTorch refusal we do not reproduce: counted under its kind of
 * `replaced`, or as unexplained (kind -1) when none matches. max/min must
 * also match the max_empty_shard check. */
static void replaced_refusal(const cJSON *c, const op_run *r, op_tally *t, const char *err,
                             int idx, lt_op_kind op) {
    int empty = 0, kind = -1;
    const lt_spec *in[3];
    for (int k = 0; k < r->nin; k++) {
        in[k] = lt_dtensor_spec(r->in[k]);
        for (int d = 0; d < in[k]->ndim; d++)
            empty |= in[k]->shape[d] == 0;
    }
    for (int j = 0; j < NREPLACED && kind < 0; j++)
        if ((!replaced[j].family || !strcmp(replaced[j].family, op_family[op])) &&
            strstr(err, replaced[j].text) && (!replaced[j].empty_input || empty))
            kind = j;
    lt_op_args a;
    args_of(cJSON_GetObjectItem(c, "args"), &a);
    uint32_t bugs = lt_pytorch_bugs_op(op, in, r->nin, &a);
    if (kind == 0 && !(bugs >> LT_PYTORCH_BUG_MAX_EMPTY_SHARD & 1))
        kind = -1;
    if (kind >= 0)
        t->replaced[kind]++;
    else
        t->unexplained++;
    if (kind < 0 || getenv("LT_GOLDEN_VERBOSE"))
        print_message("  op %d %s: PyTorch refuses (%s); we run it: %s\n", idx, lt_op_name(op),
                      err, kind >= 0 ? replaced[kind].why : "NOT EXPLAINED");
}

static void op_case(const cJSON *c, op_tally *tal, int idx, lt_op_rules rules) {
    lt_mesh m = mesh_of(c);
    const cJSON *opn = cJSON_GetObjectItem(c, "op"), *in;
    lt_op_kind op;
    LT_CHECK(lt_op_parse(opn->valuestring, &op));
    op_tally *t = &tal[family_index(op)];
    t->t.cases++;
    if (cJSON_GetObjectItem(c, "src_error")) {
        t->t.skipped++;
        return;
    }
    op_run r = {0};
    lt_status st = LT_OK;
    cJSON_ArrayForEach(in, cJSON_GetObjectItem(c, "inputs")) {
        if (!st)
            st = make_input(&m, in, r.nin, &r.in[r.nin]);
        r.nin++;
    }
    lt_op_args a;
    args_of(cJSON_GetObjectItem(c, "args"), &a);
    lt_op_opts o = {0};
    o.plan = &r.plan;
    o.rules = rules;
    if (!st)
        st = lt_op(op, (const lt_dtensor *const *)r.in, r.nin, &a, &o, r.out, LT_OP_MAX_OUTPUTS,
                   &r.nout);
    if (st)
        r.nout = 0;
    const cJSON *err = cJSON_GetObjectItem(c, "error");
    if (err) { /* reproduced: we refuse too, or the plan notes PyTorch's refusal */
        int noted = !st && r.plan && r.plan->pytorch_refuses[0];
        t->t.torch_refuses++;
        t->t.both_refuse += st != LT_OK || noted;
        if (!st && !noted && rules == LT_OP_RULES_PYTORCH)
            replaced_refusal(c, &r, t, err->valuestring, idx, op);
    } else if (st) {
        t->t.we_refuse++;
        print_message("  op %d %s: we refuse: %s\n", idx, opn->valuestring, lt_errmsg());
    } else {
        op_compare(c, &r, t, idx, opn->valuestring);
    }
    op_run_free(&r);
}

/* What a replay of ops.json under one rule set reached. */
typedef struct op_totals {
    int total, both, agree, pl, rd;
    int refused, reproduced, replaced, unexplained;
} op_totals;

/* Replays every op case under `rules` and prints the agreement per family. */
static op_totals replay_ops(lt_op_rules rules) {
    cJSON *doc = load("ops.json", "ops");
    op_tally t[NFAM];
    memset(t, 0, sizeof t);
    int i = 0, fw = 0, inc = 0;
    op_totals s = {0};
    const cJSON *c;
    const char *only = getenv("LT_GOLDEN_ONLY"); /* one op case by index, for a look */
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
        if (!only || atoi(only) == i) op_case(c, t, i, rules);
        i++;
    }
    cJSON_Delete(doc);
    /* torch!: PyTorch raises; we!: we refuse where PyTorch runs; torch~: no global result
     * from PyTorch (not compared); both: both run; values, placed, redist: agree */
    print_message("rule set %s\n", lt_op_rules_name(rules));
    print_message("%-10s %6s %6s %6s %6s %6s %7s %7s %7s %7s\n", "family", "cases", "torch!",
                  "both!", "we!", "torch~", "both", "values", "placed", "redist");
    for (int f = 0; f < NFAM; f++) {
        if (!t[f].t.cases)
            continue;
        print_message("%-10s %6d %6d %6d %6d %6d %7d %7d %7d %7d\n", families[f], t[f].t.cases,
                      t[f].t.torch_refuses, t[f].t.both_refuse, t[f].t.we_refuse,
                      t[f].torch_inconsistent, t[f].t.both, t[f].t.agree, t[f].pl_agree,
                      t[f].redist_agree);
        s.total += t[f].t.cases, s.both += t[f].t.both, s.agree += t[f].t.agree;
        s.pl += t[f].pl_agree, s.rd += t[f].redist_agree;
        fw += t[f].torch_full_wrong, inc += t[f].torch_inconsistent;
        s.refused += t[f].t.torch_refuses, s.reproduced += t[f].t.both_refuse;
        s.unexplained += t[f].unexplained;
    }
    for (int j = 0; j < NREPLACED && rules == LT_OP_RULES_PYTORCH; j++) {
        int n = 0;
        for (int f = 0; f < NFAM; f++) n += t[f].replaced[j];
        s.replaced += n;
        print_message("PyTorch refuses, we give the correct result: %3d  %s\n", n, replaced[j].why);
    }
    print_message("PyTorch refusals: %d; reproduced %d; replaced by the correct result %d; "
                  "unexplained %d\n", s.refused, s.reproduced, s.replaced, s.unexplained);
    print_message("PyTorch's own full_tensor wrong while every rank agrees: %d; no global result "
                  "from PyTorch: %d\n", fw, inc);
    print_message("ops (%s): %d cases, both run %d: values agree %d, output placements agree %d "
                  "(%.1f%%), input redistributes agree %d (%.1f%%)\n", lt_op_rules_name(rules),
                  s.total, s.both, s.agree, s.pl, 100.0 * s.pl / (s.both ? s.both : 1), s.rd,
                  100.0 * s.rd / (s.both ? s.both : 1));
    return s;
}

static void test_ops(void **state) {
    (void)state;
    op_totals s = replay_ops(LT_OP_RULES_PYTORCH);
    assert_true(s.total >= 3000);
    if (s.agree != s.both)
        fail_msg("ops: values differ in %d of %d cases", s.both - s.agree, s.both);
    if (s.unexplained || s.reproduced + s.replaced != s.refused)
        fail_msg("ops: %d PyTorch refusals neither reproduced nor replaced by a known kind",
                 s.refused - s.reproduced - s.replaced);
    /* floors at what the pytorch rules reach on the committed files (2,861 and 2,848 of
     * 2,866; 83 of PyTorch's 129 refusals noted): a change that moves the choices away
     * from PyTorch's fails here. The cases left and why: docs/SEMANTICS.md §11.9. */
    if (s.pl < 2861)
        fail_msg("ops: output placements agree in %d of %d cases, under 2861", s.pl, s.both);
    if (s.rd < 2848)
        fail_msg("ops: input redistributes agree in %d of %d cases, under 2848", s.rd, s.both);
    if (s.reproduced < 83)
        fail_msg("ops: %d of PyTorch's refusals reproduced, under 83", s.reproduced);
}

/* min-comm keeps the choices made before rule sets existed: the same agreement
 * with PyTorch as they had, neither more nor less. On the files before this
 * regeneration that was 2,229 placements and 2,334 redistributes of 2,866; the
 * regenerated files (the same cases) record the inputs PyTorch redistributed
 * correctly (an input given as S(-1) was missed, and of two operands alike the
 * wrong one could be named), which moves the redistribute count to 2,340. */
static void test_ops_min_comm(void **state) {
    (void)state;
    op_totals s = replay_ops(LT_OP_RULES_MIN_COMM);
    if (s.agree != s.both)
        fail_msg("ops (min-comm): values differ in %d of %d cases", s.both - s.agree, s.both);
    assert_int_equal(s.both, 2866);
    assert_int_equal(s.pl, 2229);
    assert_int_equal(s.rd, 2340);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_redistributes),
        cmocka_unit_test(test_ops),
        cmocka_unit_test(test_ops_min_comm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
