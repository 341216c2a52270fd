/* test/test_spmd_random.c — random per-rank scenario programs against an
 * independent simulator of per-rank call sequences (docs/SEMANTICS.md §12).
 *
 * Each program: a LocalTensor a = [rank, rank + 1], then steps on random
 * rank subsets: all_reduce (sum or max), all_gather and barrier along a
 * random mesh dim, and `a = a + 1`; three times in five a collective step is
 * followed by the same call on the other ranks (a rank-dependent branch).
 * The simulator here knows nothing of the scenario engine: every rank runs
 * its own list of steps; a group's next call fires when every member's next
 * call is on that group and all agree (kind and op); local steps run at
 * once. Its outcome is either every rank finished, with the value of every
 * call, or stuck, with the kind the rules name (mismatch, then missing,
 * then cycle). Each program is written as a scenario, with those values as
 * expect_local checks when it finishes, and run through `localtensor run`:
 * a finishing program's case must pass, a stuck one's must fail with the
 * would-hang report of that kind. The same programs then run as C functions
 * under lt_program_run (collectives_sim/program.h): the same values, or
 * LT_MISMATCH with a report of the same kind. Both run again on meshes in
 * a random rank order (docs/SEMANTICS.md §1.1): the simulator places rank
 * id[q] at mesh position q (row-major) and forms its groups from those
 * coordinates; the scenarios and C programs get the same rank array.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "localtensor/collectives_sim/program.h"
#include "test/testutil.h"
#include "tools/scenario/scenario.h"

enum { MAXW = 12, MAXM = 3, MAXS = 16 };
enum { K_AR_SUM, K_AR_MAX, K_AG, K_BARRIER, K_ADD };

typedef struct {
    int kind, md;
    unsigned char mask[MAXW];
} step;

typedef struct {
    int M, shape[MAXM], W;
    int id[MAXW], pos[MAXW];   /* rank id at each mesh position, and its inverse */
    int nsteps;
    step s[MAXS];
} prog;

static uint64_t lcg(uint64_t *x) {
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 33;
}

/* The coordinate of mesh position q. */
static void coord_of(const prog *p, int q, int *c) {
    int r = q;
    for (int i = p->M - 1; i >= 0; i--) {
        c[i] = r % p->shape[i];
        r /= p->shape[i];
    }
}

/* The members (rank ids) of rank r's group along md, in coordinate order
 * (positions ascending); returns how many. */
static int group(const prog *p, int r, int md, int *mem) {
    int c[MAXM], n = 0;
    coord_of(p, p->pos[r], c);
    for (int q = 0; q < p->W; q++) {
        int d[MAXM], same = 1;
        coord_of(p, q, d);
        for (int i = 0; i < p->M; i++)
            if (i != md && d[i] != c[i]) same = 0;
        if (same) mem[n++] = p->id[q];
    }
    return n;
}

typedef struct {
    int done;                  /* every rank finished */
    const char *hang;          /* else the kind */
    double val[MAXS][MAXW][2 * MAXW]; /* value of step k's call on rank r */
    int len[MAXS][MAXW];
} outcome;

static void simulate(const prog *p, outcome *o) {
    int list[MAXW][MAXS], n[MAXW], pc[MAXW] = {0}, inc[MAXW] = {0};
    memset(o, 0, sizeof *o);
    for (int r = 0; r < p->W; r++) {
        n[r] = 0;
        for (int k = 0; k < p->nsteps; k++)
            if (p->s[k].mask[r]) list[r][n[r]++] = k;
    }
#define HEAD(r) (pc[r] < n[r] ? &p->s[list[r][pc[r]]] : NULL)
    for (int fired = 1; fired;) {
        fired = 0;
        for (int r = 0; r < p->W; r++)
            while (HEAD(r) && HEAD(r)->kind == K_ADD) inc[r]++, pc[r]++;
        for (int r = 0; r < p->W; r++) {
            const step *h = HEAD(r);
            if (!h || h->kind == K_ADD) continue;
            int mem[MAXW], g = group(p, r, h->md, mem), ok = 1;
            for (int q = 0; q < g && ok; q++) {
                const step *hq = HEAD(mem[q]);
                ok = hq && hq->kind != K_ADD && hq->md == h->md && hq->kind == h->kind;
            }
            if (!ok) continue;
            for (int q = 0; q < g; q++) {
                int k = list[mem[q]][pc[mem[q]]], m = mem[q];
                double *v = o->val[k][m];
                if (h->kind == K_AG) {
                    for (int j = 0; j < g; j++)
                        v[2 * j] = mem[j] + inc[mem[j]], v[2 * j + 1] = mem[j] + 1 + inc[mem[j]];
                    o->len[k][m] = 2 * g;
                } else if (h->kind != K_BARRIER) {
                    for (int e = 0; e < 2; e++) {
                        double acc = h->kind == K_AR_SUM ? 0 : -1e300;
                        for (int j = 0; j < g; j++) {
                            double x = mem[j] + e + inc[mem[j]];
                            acc = h->kind == K_AR_SUM ? acc + x : (x > acc ? x : acc);
                        }
                        v[e] = acc;
                    }
                    o->len[k][m] = 2;
                }
            }
            for (int q = 0; q < g; q++) pc[mem[q]]++;
            fired = 1;
        }
    }
    o->done = 1;
    for (int r = 0; r < p->W; r++)
        if (pc[r] < n[r]) o->done = 0;
    if (o->done) return;
    /* stuck: a group whose waiting members disagree; else one with a member
     * that finished; else the waits close a cycle */
    const char *kind = "cycle";
    for (int r = 0; r < p->W; r++) {
        const step *h = HEAD(r);
        if (!h) continue;
        int mem[MAXW], g = group(p, r, h->md, mem);
        for (int q = 0; q < g; q++) {
            const step *hq = HEAD(mem[q]);
            if (hq && hq->md == h->md && hq->kind != h->kind) {
                o->hang = "mismatch";
                return;
            }
            if (!hq) kind = "missing";
        }
    }
    o->hang = kind;
#undef HEAD
}

/* permute: the ranks in a random order over the mesh (else row-major) */
static void random_prog(prog *p, uint64_t *seed, int permute) {
    static const int meshes[][MAXM + 1] = {{1, 4},    {2, 2, 2},    {2, 2, 3},
                                           {2, 3, 2}, {3, 2, 2, 2}, {2, 3, 3}};
    const int *ms = meshes[lcg(seed) % 6];
    memset(p, 0, sizeof *p);
    p->M = ms[0];
    p->W = 1;
    for (int i = 0; i < p->M; i++) p->shape[i] = ms[i + 1], p->W *= ms[i + 1];
    for (int q = 0; q < p->W; q++) p->id[q] = q;
    for (int q = p->W - 1; permute && q > 0; q--) {   /* Fisher-Yates */
        int j = (int)(lcg(seed) % (uint64_t)(q + 1)), t = p->id[q];
        p->id[q] = p->id[j], p->id[j] = t;
    }
    for (int q = 0; q < p->W; q++) p->pos[p->id[q]] = q;
    int want = 2 + (int)(lcg(seed) % 7);
    while (p->nsteps < want && p->nsteps < MAXS - 1) {
        step *s = &p->s[p->nsteps++];
        s->kind = (int)(lcg(seed) % 5);
        s->md = (int)(lcg(seed) % (uint64_t)p->M);
        int all = lcg(seed) % 3 == 0, any = 0;
        for (int r = 0; r < p->W; r++) any += s->mask[r] = (unsigned char)(all || lcg(seed) % 2);
        if (!any) s->mask[lcg(seed) % (uint64_t)p->W] = 1, any = 1;
        if (s->kind != K_ADD && any < p->W && lcg(seed) % 5 < 3) {   /* the other branch */
            step *t = &p->s[p->nsteps++];
            *t = *s;
            for (int r = 0; r < p->W; r++) t->mask[r] = !s->mask[r];
        }
    }
}

/* The program as a scenario (text appended to buf). */
static void write_case(const prog *p, const outcome *o, int id, char *buf, size_t cap) {
    size_t at = strlen(buf);
#define PUT(...) at += (size_t)snprintf(buf + at, at < cap ? cap - at : 0, __VA_ARGS__)
    PUT("- name: p%d\n  mesh: \"", id);
    for (int i = 0; i < p->M; i++) PUT("%s%d", i ? "x" : "", p->shape[i]);
    PUT(":");   /* the rank array, nested row-major: "2x2:[[0,2],[1,3]]" */
    for (int q = 0; q < p->W; q++) {
        for (int i = p->M - 1, span = 1; i >= 0; i--)
            if (q % (span *= p->shape[i]) == 0) PUT("[");
        PUT("%d", p->id[q]);
        for (int i = p->M - 1, span = 1; i >= 0; i--)
            if ((q + 1) % (span *= p->shape[i]) == 0) PUT("]");
        if (q + 1 < p->W) PUT(",");
    }
    PUT("\"\n  steps:\n    - local_tensor: {shape: [2], values: \"rank + i\", as: a}\n");
    static const char *const names[] = {"all_reduce", "all_reduce", "all_gather", "barrier"};
    for (int k = 0; k < p->nsteps; k++) {
        const step *s = &p->s[k];
        if (s->kind == K_ADD)
            PUT("    - local_op: {op: add_scalar, inputs: a, scalar: 1, as: a}\n");
        else if (s->kind == K_BARRIER)
            PUT("    - collective: {kind: barrier, mesh_dim: %d}\n", s->md);
        else
            PUT("    - collective: {kind: %s, mesh_dim: %d, tensor: a, as: s%d%s}\n",
                names[s->kind], s->md, k, s->kind == K_AR_MAX ? ", op: max" : "");
        PUT("      ranks: [");
        for (int r = 0, first = 1; r < p->W; r++)
            if (s->mask[r]) PUT("%s%d", first ? "" : ", ", r), first = 0;
        PUT("]\n");
    }
    if (!o->done) return;   /* the case fails with the would-hang report */
    for (int k = 0; k < p->nsteps; k++) {
        const step *s = &p->s[k];
        if (s->kind == K_ADD || s->kind == K_BARRIER) continue;
        PUT("    - expect_local: {tensor: s%d, ranks: {", k);
        for (int r = 0, first = 1; r < p->W; r++) {
            if (!s->mask[r]) continue;
            PUT("%s%d: [", first ? "" : ", ", r);
            for (int e = 0; e < o->len[k][r]; e++) PUT("%s%g", e ? ", " : "", o->val[k][r][e]);
            PUT("]");
            first = 0;
        }
        PUT("}}\n");
    }
#undef PUT
    if (at >= cap) fail_msg("scenario text over %zu bytes", cap);
}

static char g_dir[512];

/* The output block of case `name` ("ok    FILE: name (...)" or "FAIL  ...",
 * then its indented lines) copied into buf; 0 when there is none. */
static int case_block(const char *out, const char *name, char *buf, size_t cap) {
    char key[64];
    snprintf(key, sizeof key, ": %s (", name);
    const char *at = strstr(out, key);
    if (!at) return 0;
    while (at > out && at[-1] != '\n') at--;
    const char *end = strchr(at, '\n');
    while (end && end[1] == ' ') end = strchr(end + 1, '\n');
    size_t n = end ? (size_t)(end - at) : strlen(at);
    if (n >= cap) n = cap - 1;
    memcpy(buf, at, n);
    buf[n] = '\0';
    return 1;
}

static void random_programs(uint64_t seed, int permute) {
    enum { N = 400 };
    size_t cap = (size_t)N * 6000;
    char *text = calloc(1, cap), path[600], *out, *err, block[4096];
    static outcome o[N];
    assert_non_null(text);
    int done = 0, mismatch = 0, missing = 0, cycle = 0;
    for (int i = 0; i < N; i++) {
        prog p;
        random_prog(&p, &seed, permute);
        simulate(&p, &o[i]);
        if (o[i].done) done++;
        else if (!strcmp(o[i].hang, "mismatch")) mismatch++;
        else if (!strcmp(o[i].hang, "missing")) missing++;
        else cycle++;
        write_case(&p, &o[i], i, text, cap);
    }
    snprintf(path, sizeof path, "%s/programs.yaml", g_dir);
    lt_test_write_file(path, text);
    const char *args[] = {path};
    int rc = lt_test_run_sc(args, 1, &out, &err);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        char name[16], want[64];
        snprintf(name, sizeof name, "p%d", i);
        snprintf(want, sizeof want, "would hang (%s)", o[i].done ? "" : o[i].hang);
        int found = case_block(out, name, block, sizeof block);
        int ok = found && (o[i].done ? !strncmp(block, "ok ", 3)
                                     : !strncmp(block, "FAIL ", 5) && strstr(block, want));
        if (!ok && bad++ < 5)
            print_message("case %s: the simulator says %s; the run says:\n%s\n", name,
                          o[i].done ? "it finishes" : want, found ? block : "(no line)");
    }
    if (bad) fail_msg("%d of %d programs differ from the simulator (exit %d; %s)", bad, N, rc, err);
    print_message("%d random programs%s agree with the simulator: %d finish, %d mismatch, %d "
                  "missing, %d cycle\n",
                  N, permute ? " on permuted meshes" : "", done, mismatch, missing, cycle);
    /* each outcome is exercised */
    assert_true(done > N / 5 && mismatch > 10 && missing > 10 && cycle > 10);
    free(out);
    free(err);
    free(text);
    remove(path);
}

static void test_random_programs(void **state) {
    (void)state;
    random_programs(0x5eed5eedULL, 0);
}

static void test_random_programs_permuted(void **state) {
    (void)state;
    random_programs(0xfeedbeefULL, 1);
}

/* ---- the same programs as C functions ---------------------------------------------------- */

typedef struct {
    const prog *p;
    outcome got;               /* what each call returned (val, len) */
} crun;

/* One rank's program: its steps of p, in order; collectives through its proc. */
static lt_status interp(lt_proc *proc, void *user) {
    crun *c = user;
    const prog *p = c->p;
    int r = lt_proc_rank(proc);
    lt_tensor *a = NULL;
    lt_status st = lt_tensor_new(LT_F32, 1, (int64_t[]){2}, &a);
    if (st) return st;
    lt_set_flat(a, 0, r);
    lt_set_flat(a, 1, r + 1);
    for (int k = 0; k < p->nsteps && !st; k++) {
        const step *s = &p->s[k];
        if (!s->mask[r]) continue;
        lt_tensor *out = NULL;
        switch (s->kind) {
        case K_ADD:
            for (int e = 0; e < 2; e++) lt_set_flat(a, e, lt_get_flat(a, e) + 1);
            break;
        case K_AR_SUM:
        case K_AR_MAX:
            st = lt_proc_all_reduce_at(proc, "prog", k + 1, s->md, a,
                                       s->kind == K_AR_SUM ? LT_REDOP_SUM : LT_REDOP_MAX, &out);
            break;
        case K_AG: st = lt_proc_all_gather_at(proc, "prog", k + 1, s->md, a, 0, &out); break;
        default: st = lt_proc_barrier_at(proc, "prog", k + 1, s->md); break;
        }
        if (!st && out) {
            int64_t n = lt_numel(out);
            c->got.len[k][r] = (int)n;
            for (int64_t e = 0; e < n && e < 2 * MAXW; e++)
                c->got.val[k][r][e] = lt_get_flat(out, e);
        }
        lt_tensor_free(out);
    }
    lt_tensor_free(a);
    return st;
}

static void random_c_programs(uint64_t seed, int permute) {
    enum { N = 400 };
    static outcome want;
    static crun c;
    int bad = 0;
    for (int i = 0; i < N; i++) {
        prog p;
        random_prog(&p, &seed, permute);
        simulate(&p, &want);
        lt_mesh m;
        LT_CHECK(lt_mesh_init_ranks(&m, p.M, p.shape, p.id, 0, NULL));
        memset(&c, 0, sizeof c);
        c.p = &p;
        lt_match_report *rep = NULL;
        lt_status st = lt_program_run(&m, interp, &c, NULL, &rep);
        int ok;
        if (want.done) {
            ok = st == LT_OK;
            for (int k = 0; k < p.nsteps && ok; k++)
                for (int r = 0; r < p.W && ok; r++) {
                    if (!p.s[k].mask[r] || p.s[k].kind == K_ADD || p.s[k].kind == K_BARRIER)
                        continue;
                    ok = c.got.len[k][r] == want.len[k][r] &&
                         !memcmp(c.got.val[k][r], want.val[k][r],
                                 sizeof(double) * (size_t)want.len[k][r]);
                }
        } else {
            ok = st == LT_MISMATCH && rep && !strcmp(lt_hang_kind_name(rep->kind), want.hang);
        }
        if (!ok && bad++ < 5)
            print_message("program %d: the simulator says %s; lt_program_run gives %s (%s)\n", i,
                          want.done ? "it finishes" : want.hang, lt_status_name(st),
                          rep ? lt_hang_kind_name(rep->kind) : "no report");
        lt_match_report_free(rep);
    }
    if (bad) fail_msg("%d of %d C programs differ from the simulator", bad, N);
}

static void test_random_c_programs(void **state) {
    (void)state;
    random_c_programs(0x5eed5eedULL, 0);   /* the scenario test's programs */
}

static void test_random_c_programs_permuted(void **state) {
    (void)state;
    random_c_programs(0xfeedbeefULL, 1);
}

int main(int argc, char **argv) {
    (void)argc;
    lt_test_tmpdir(g_dir, sizeof g_dir, argv[0], "spmd_random.tmp");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_programs),
        cmocka_unit_test(test_random_c_programs),
        cmocka_unit_test(test_random_programs_permuted),
        cmocka_unit_test(test_random_c_programs_permuted),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(g_dir);
    return rc;
}
