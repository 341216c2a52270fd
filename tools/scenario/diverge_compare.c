/* tools/scenario/diverge_compare.c — the comparison of the single-device
 * check (docs/SEMANTICS.md §11.8): the ranks' values against the part of
 * the single-device value their layout says they hold, under the tolerance
 * model, and the diagnoses that name a bug class where the values make it
 * certain.
 *
 * A Partial mesh dim is compared after its reduction: the members of each
 * group (ranks that differ only along Partial dims) are reduced element by
 * element, and the result is compared at the group's first rank. Every other
 * rank is compared on its own, so replicas that disagree are seen.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/alloc.h"
#include "kernels/status_impl.h"
#include "localtensor/layout.h"
#include "tools/scenario/diverge_impl.h"

/* 1 when got is within tolerance of ref; *allowed gets the bound used. */
static int close_enough(const dv_tol *t, double got, double ref, double mag, int64_t len,
                        double *allowed) {
    *allowed = 0;
    if (isnan(got) || isnan(ref)) return isnan(got) && isnan(ref);
    if (t->exact || isinf(got) || isinf(ref)) return got == ref;
    double diff = fabs(got - ref);
    *allowed = t->atol + t->rtol * fabs(ref) + (double)(len - 1) * t->eps * mag;
    if (diff <= *allowed) return 1;
    int ex = ref == 0 ? t->emin : ilogb(ref);
    if (ex < t->emin) ex = t->emin;
    return diff <= t->ulps * ldexp(t->eps, ex);
}

static void fmt_shape(int nd, const int64_t *s, char *b, size_t n) {
    size_t u = (size_t)snprintf(b, n, "(");
    for (int d = 0; d < nd && u < n; d++)
        u += (size_t)snprintf(b + u, n - u, "%s%lld", d ? ", " : "", (long long)s[d]);
    if (u < n) snprintf(b + u, n - u, ")");
}

static void note(dv_hit *h, int rank, const int64_t *li, const int64_t *gi, int nd, double got,
                 double ref, double allowed) {
    if (!h->found++) {
        h->rank = rank;
        lt__sc_fmt_index(nd, li, h->local, sizeof h->local);
        lt__sc_fmt_index(nd, gi, h->global, sizeof h->global);
        h->got = got, h->ref = ref, h->allowed = allowed;
    }
    h->ndiff++;
}

/* Rank q's shard must have the layout's local shape. */
static int shape_ok(const lt_tensor *sh, const lt_rank_layout *l, const lt_tensor *ref, int q,
                    dv_hit *h) {
    char a[96], b[96];
    if (!sh || sh->placeholder) {
        snprintf(h->shape_msg, sizeof h->shape_msg, "rank %d holds no value", q);
    } else if (sh->ndim != ref->ndim ||
               memcmp(sh->shape, l->local_shape, sizeof(int64_t) * (size_t)sh->ndim)) {
        fmt_shape(sh->ndim, sh->shape, a, sizeof a);
        fmt_shape(ref->ndim, l->local_shape, b, sizeof b);
        snprintf(h->shape_msg, sizeof h->shape_msg,
                 "rank %d holds shape %s where its part of the single-device value has shape %s", q,
                 a, b);
    } else {
        return 1;
    }
    h->found = h->shape = 1, h->rank = q, h->ndiff = 1;
    return 0;
}

static double reduce(lt_redop op, const double *v, int n) {
    double acc = v[0];
    for (int i = 1; i < n; i++) {
        switch (op) {
        case LT_REDOP_MAX: acc = v[i] > acc || isnan(v[i]) ? v[i] : acc; break;
        case LT_REDOP_MIN: acc = v[i] < acc || isnan(v[i]) ? v[i] : acc; break;
        case LT_REDOP_PRODUCT: acc *= v[i]; break;
        default: acc += v[i]; break;
        }
    }
    return op == LT_REDOP_AVG ? acc / n : acc;
}

/* The members of rank r's group: ranks with r's coordinates on every dim but the Partial ones. */
static int group_of(const lt_mesh *m, const int *partial, int r, int *mem) {
    int c[LT_MESH_MAX_DIMS], q[LT_MESH_MAX_DIMS], n = 0;
    lt_mesh_coord(m, r, c);
    for (int k = 0; k < m->world; k++) {
        lt_mesh_coord(m, k, q);
        int same = 1;
        for (int d = 0; d < m->ndim && same; d++) same = partial[d] || q[d] == c[d];
        if (same) mem[n++] = k;
    }
    return n;
}

/* One group (one rank when nothing is Partial) against its part of ref. */
static lt_status compare_group(const lt_mesh *m, lt_tensor *const *shards, const lt_placement *base,
                               const int *partial, lt_redop pop, int r, const lt_tensor *ref,
                               const lt_tensor *mag, int64_t len, const dv_tol *t, dv_hit *h,
                               lt_tensor *assembled, int *mem, double *vals) {
    lt_rank_layout l;
    LT_TRY(lt_layout_rank(m, ref->ndim, ref->shape, base, r, &l));
    int nm = group_of(m, partial, r, mem), nd = ref->ndim;
    for (int i = 0; i < nm; i++)
        if (!shape_ok(shards[mem[i]], &l, ref, mem[i], h)) {
            lt_rank_layout_free(&l);
            return LT_OK;
        }
    int64_t li[LT_MAX_DIMS], gi[LT_MAX_DIMS], numel = 1;
    for (int d = 0; d < nd; d++) numel *= l.local_shape[d];
    for (int64_t f = 0; f < numel && l.lists; f++) {
        int64_t rem = f;
        for (int d = nd - 1; d >= 0; d--) li[d] = rem % l.local_shape[d], rem /= l.local_shape[d];
        for (int d = 0; d < nd; d++) gi[d] = l.idx[d] ? l.idx[d][li[d]] : li[d];
        for (int i = 0; i < nm; i++) vals[i] = lt_get(shards[mem[i]], li);
        double a = reduce(pop, vals, nm), e = lt_get(ref, gi), al;
        if (assembled) lt_set(assembled, gi, a);
        if (!close_enough(t, a, e, mag ? lt_get(mag, gi) : fabs(e), len, &al))
            note(h, r, li, gi, nd, a, e, al);
    }
    if (h->found && nm > 1 && !h->group[0]) {
        size_t u = (size_t)snprintf(h->group, sizeof h->group, "%s over ranks", lt_redop_name(pop));
        for (int i = 0; i < nm && i < 8 && u < sizeof h->group; i++)
            u +=
                (size_t)snprintf(h->group + u, sizeof h->group - u, "%s%d", i ? ", " : " ", mem[i]);
        if (nm > 8 && u < sizeof h->group) snprintf(h->group + u, sizeof h->group - u, ", ...");
    }
    lt_rank_layout_free(&l);
    return LT_OK;
}

lt_status lt__dv_compare(const lt_mesh *mesh, lt_tensor *const *shards, const lt_placement *pl,
                         const lt_tensor *ref, const lt_tensor *mag, int64_t len, const dv_tol *t,
                         dv_hit *h, lt_tensor **asm_out, char *why, size_t n) {
    memset(h, 0, sizeof *h);
    h->rank = -1;
    if (asm_out) *asm_out = NULL;
    lt_placement base[LT_MESH_MAX_DIMS];
    int partial[LT_MESH_MAX_DIMS] = {0}, np = 0;
    lt_redop pop = LT_REDOP_SUM;
    for (int d = 0; d < mesh->ndim; d++) {
        base[d] = pl[d];
        if (pl[d].kind != LT_PL_PARTIAL) continue;
        if (np++ && pl[d].op != pop) {
            snprintf(why, n, "Partial mesh dims with different reduce ops");
            return LT_UNSUPPORTED;
        }
        pop = pl[d].op;
        partial[d] = 1;
        base[d] = lt_replicate();
    }
    lt_tensor *as = NULL;
    if (asm_out) LT_TRY(lt_tensor_new(ref->dtype, ref->ndim, ref->shape, &as));
    int *mem = lt__malloc(sizeof *mem * (size_t)mesh->world);
    double *vals = lt__malloc(sizeof *vals * (size_t)mesh->world);
    lt_status s = mem && vals ? LT_OK : lt__err(LT_NOMEM, "out of memory");
    int c[LT_MESH_MAX_DIMS];
    for (int r = 0; r < mesh->world && !s && !h->shape; r++) {
        lt_mesh_coord(mesh, r, c);
        int first = 1;   /* the group's first rank */
        for (int d = 0; d < mesh->ndim; d++) first &= !partial[d] || c[d] == 0;
        if (first)
            s = compare_group(mesh, shards, base, partial, pop, r, ref, mag, len, t, h, as, mem,
                              vals);
    }
    lt__free(mem);
    lt__free(vals);
    if (!s && !h->found && asm_out) *asm_out = as;
    else lt_tensor_free(as);
    return s;
}

void lt__dv_compare_full(const lt_tensor *got, const lt_tensor *ref, const lt_tensor *mag,
                         int64_t len, const dv_tol *t, dv_hit *h) {
    memset(h, 0, sizeof *h);
    h->rank = -1;
    if (got->ndim != ref->ndim ||
        memcmp(got->shape, ref->shape, sizeof(int64_t) * (size_t)got->ndim)) {
        char a[96], b[96];
        fmt_shape(got->ndim, got->shape, a, sizeof a);
        fmt_shape(ref->ndim, ref->shape, b, sizeof b);
        snprintf(h->shape_msg, sizeof h->shape_msg,
                 "shape %s where the single-device value has shape %s", a, b);
        h->found = h->shape = 1, h->ndiff = 1;
        return;
    }
    int64_t gi[LT_MAX_DIMS], numel = lt_numel(ref);
    for (int64_t f = 0; f < numel; f++) {
        int64_t rem = f;
        for (int d = ref->ndim - 1; d >= 0; d--) gi[d] = rem % ref->shape[d], rem /= ref->shape[d];
        double a = lt_get(got, gi), e = lt_get(ref, gi), al;
        if (!close_enough(t, a, e, mag ? lt_get(mag, gi) : fabs(e), len, &al))
            note(h, -1, gi, gi, ref->ndim, a, e, al);
    }
}

/* ---- diagnoses
 * ----------------------------------------------------------------------------------- */

static size_t add(char *buf, size_t n, size_t u, const char *text) {
    if (u < n) u += (size_t)snprintf(buf + u, n - u, "%s%s", u ? "; " : "", text);
    return u;
}

/* 1 when some rank's shard differs from another's along mesh dim d (same
 * coordinates elsewhere): the ranks hold different values there. */
static int differ_along(const lt_mesh *m, lt_tensor *const *shards, int d) {
    int c[LT_MESH_MAX_DIMS];
    for (int r = 0; r < m->world; r++) {
        lt_mesh_coord(m, r, c);
        const lt_tensor *a = shards[r];
        c[d] = 0;
        const lt_tensor *b = shards[lt_mesh_rank(m, c)];
        if (!a || !b || a->placeholder || b->placeholder) continue;
        if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim))
            return 1;
        for (int64_t i = 0, n = lt_numel(a); i < n; i++)
            if (lt_get_flat(a, i) != lt_get_flat(b, i)) return 1;
    }
    return 0;
}

/* "divided by 2" when every value is the single-device value scaled by an
 * integer factor k (h: the first difference), k the size of a mesh dim or
 * the world; "" otherwise. */
static lt_status scale_diagnosis(const lt_mesh *mesh, lt_tensor *const *shards,
                                 const lt_placement *pl, const lt_tensor *ref, const dv_tol *t,
                                 const dv_hit *h, char *text, size_t n) {
    text[0] = 0;
    if (h->shape || h->got == 0 || h->ref == 0 || !isfinite(h->got) || !isfinite(h->ref))
        return LT_OK;
    double r = h->ref / h->got, k = r >= 1 ? r : 1 / r;
    if (k < 1.5 || fabs(k - nearbyint(k)) > 1e-6 * k) return LT_OK;
    int ik = (int)nearbyint(k), dims = 0;
    char which[160] = "";
    size_t u = 0;
    for (int d = 0; d < mesh->ndim; d++)
        if (mesh->shape[d] == ik && u < sizeof which) {
            char md[64];
            lt__dv_mesh_dim_name(mesh, d, md, sizeof md);
            u += (size_t)snprintf(which + u, sizeof which - u, "%s%s",
                                  dims++ ? " or " : "the size of ", md);
        }
    if (!dims && mesh->world == ik) snprintf(which, sizeof which, "the number of ranks");
    if (!which[0]) return LT_OK;
    lt_tensor *scaled = NULL;
    lt_status s = lt_contiguous(ref, &scaled);   /* a view of ref when contiguous: */
    if (!s) s = lt_tensor_make_writable(scaled);  /* then copied before it is written */
    dv_hit h2;
    char why[128];
    if (!s) {
        for (int64_t i = 0, m = lt_numel(scaled); i < m; i++)
            lt_set_flat(scaled, i, lt_get_flat(scaled, i) / r);
        s = lt__dv_compare(mesh, shards, pl, scaled, NULL, 1, t, &h2, NULL, why, sizeof why);
    }
    lt_tensor_free(scaled);
    if (s == LT_UNSUPPORTED) return lt__err_clear(), LT_OK;
    if (s) return s;
    if (!h2.found)
        snprintf(text, n, "every value is the single-device value %s %d (%s): a %s",
                 r > 1 ? "divided by" : "times", ik, which,
                 r > 1 ? "count or group size it should not be divided by?"
                       : "sum over ranks that hold the same value?");
    return LT_OK;
}

lt_status lt__dv_diagnose(const lt_mesh *mesh, lt_tensor *const *shards, const lt_placement *pl,
                          const lt_tensor *ref, const lt_tensor *mag, int64_t len, const dv_tol *t,
                          const dv_meaning *m, const dv_hit *hit, char *buf, size_t n) {
    size_t u = 0;
    char text[512], a[64], b[64];
    buf[0] = 0;
    /* "replicas" that differ and add up to the value: they are its terms */
    for (int d = 0; shards && d < mesh->ndim; d++) {
        if (pl[d].kind != LT_PL_REPLICATE || mesh->shape[d] < 2 || !differ_along(mesh, shards, d))
            continue;
        lt_placement p2[LT_MESH_MAX_DIMS];
        memcpy(p2, pl, sizeof p2);
        p2[d] = lt_partial(LT_REDOP_SUM);
        dv_hit h;
        char why[128];
        lt_status s = lt__dv_compare(mesh, shards, p2, ref, mag, len + mesh->shape[d], t, &h, NULL,
                                     why, sizeof why);
        if (s == LT_UNSUPPORTED) lt__err_clear();   /* mixed Partial ops: nothing to say */
        else if (s) return s;
        if (s || h.found) continue;
        lt__dv_mesh_dim_name(mesh, d, a, sizeof a);
        snprintf(text, sizeof text,
                 "the ranks' values along %s sum to the single-device value: an unreduced "
                 "Partial(sum) along %s "
                 "(a missing all_reduce over it, or a placement that should say P(sum))",
                 a, a);
        u = add(buf, n, u, text);
    }
    if (shards && hit && !u && !(m && (m->summed_md >= 0 || m->mean_md >= 0))) {
        LT_TRY(scale_diagnosis(mesh, shards, pl, ref, t, hit, text, sizeof text));
        if (text[0]) u = add(buf, n, u, text);
    }
    if (m && m->summed_md >= 0) {
        lt__dv_mesh_dim_name(mesh, m->summed_md, a, sizeof a);
        snprintf(text, sizeof text,
                 "the all_reduce(sum) along %s added values that were replicated along it (every "
                 "rank got %d times "
                 "its value)",
                 a, mesh->shape[m->summed_md]);
        u = add(buf, n, u, text);
        if (m->partial_md >= 0) {
            lt__dv_mesh_dim_name(mesh, m->partial_md, b, sizeof b);
            snprintf(text, sizeof text,
                     "the value was Partial(sum) along %s: a collective on the wrong mesh dim? "
                     "(reduce along %s instead)",
                     b, b);
            u = add(buf, n, u, text);
        }
    }
    if (m && m->mixed[0]) u = add(buf, n, u, m->mixed);
    if (m && m->mean_md >= 0) {
        lt__dv_mesh_dim_name(mesh, m->mean_md, a, sizeof a);
        snprintf(text, sizeof text,
                 "an average of per-rank means over shards of different sizes (%s along %s): "
                 "weight each mean by "
                 "its shard's size (all_reduce the sums and the counts)",
                 m->mean_sizes, a);
        u = add(buf, n, u, text);
    }
    return LT_OK;
}
