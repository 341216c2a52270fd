/* tools/scenario/scenario_load.c — a node tree to scenarios and cases.
 *
 * Validates everything that can be known before running: keys (unknown ones
 * are errors), types, tensor names defined before use and of the right kind,
 * rank numbers against the mesh, value counts against shapes, and sweep
 * variables. What the library decides (is this placement valid for this
 * tensor on this mesh?) is left to run time so that expect_error can test it.
 * A sweep is expanded here: each case is the scenario's tree with the sweep
 * variables substituted, parsed like any scenario.
 */
#include "kernels/alloc.h"
#include "kernels/backend.h"
#include "kernels/pool_impl.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "localtensor/suggest_impl.h"
#include "tools/scenario/scenario_impl.h"
#include "kernels/status_impl.h"

/* ---- the step table ---------------------------------------------------------- */

static const sc_step_type step_types[] = {
#define LT__XX(nm, chk) {#nm, chk, lt__sc_parse_##nm, lt__sc_run_##nm},
    LT_SC_STEP_MAP(LT__XX)
#undef LT__XX
};
#define NSTEP_TYPES ((int)(sizeof step_types / sizeof step_types[0]))

const sc_step_type *lt__sc_step_type(const char *name) {
    for (int i = 0; i < NSTEP_TYPES; i++)
        if (!strcmp(step_types[i].name, name)) return &step_types[i];
    return NULL;
}

const char *lt__sc_step_names(void) {
    static char buf[512];
    if (!buf[0]) {
        size_t used = 0;
        for (int i = 0; i < NSTEP_TYPES; i++)
            used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? ", " : "",
                                     step_types[i].name);
    }
    return buf;
}

/* `ranks: [0, 2]` or `when: "tp == 0"` beside a per-rank step: the ranks that run it. */
lt_status lt__sc_parse_selection(sc_parse_ctx *pc, const sc_step_type *t, const sc_node *sel, const sc_node *v,
                                 sc_step *st) {
    if (!lt__sc_step_is_per_rank(t))
        return lt__sc_err(sel, LT_INVALID,
                          "%s: '%s' runs on every rank together and cannot be limited to some ranks (%s: applies to "
                          "to_local, local_tensor, local_op, collective, show, expect_local; docs/SEMANTICS.md §12)",
                          sel->str, t->name, sel->str);
    int W = pc->mesh->world;
    unsigned char *m = lt__sc_alloc(pc->arena, (size_t)W);
    if (!m) return LT_NOMEM;
    if (!strcmp(sel->str, "ranks")) {
        if (v->kind != SC_SEQ)
            return lt__sc_err(v, LT_INVALID, "ranks: expected a list of ranks, got %s", lt__sc_kind_name(v));
        for (int i = 0; i < v->n; i++) {
            int r;
            LT_TRY(lt__sc_rank(pc, v->kids[i], &r));
            if (m[r]) return lt__sc_err(v->kids[i], LT_INVALID, "ranks: rank %d is listed twice", r);
            m[r] = 1;
        }
    } else {
        sc_expr *e;
        LT_TRY(lt__sc_expr_parse(pc->arena, v, pc->mesh, 0, "when", &e));
        for (int r = 0; r < W; r++) {
            sc_env env;
            double x;
            lt__sc_env_rank(pc->mesh, r, &env);
            LT_TRY(lt__sc_expr_eval(e, &env, &x));
            m[r] = x != 0;
        }
    }
    st->mask = m;
    return LT_OK;
}

lt_status lt__sc_parse_step(sc_parse_ctx *pc, const sc_node *item, sc_step *st) {
    const sc_node *key, *body = NULL, *sel = NULL, *sel_val = NULL;
    if (item->kind == SC_SCALAR && !lt__sc_is_null(item)) {
        key = item;                       /* "- mark_comm": a step with no body */
    } else if (item->kind == SC_MAP && item->n >= 1) {
        /* the step's key, plus optionally `ranks:` or `when:` beside it */
        key = NULL;
        for (int i = 0; i < item->n; i++) {
            const char *k = item->kids[2 * i]->str;
            if (!strcmp(k, "ranks") || !strcmp(k, "when")) {
                if (sel)
                    return lt__sc_err(item->kids[2 * i], LT_INVALID, "a step takes either ranks: or when:, not both");
                sel = item->kids[2 * i];
                sel_val = item->kids[2 * i + 1];
            } else if (key) {
                return lt__sc_err(item->kids[2 * i], LT_INVALID,
                                  "a step is a mapping with one key, the step's name (plus ranks: or when:); got a mapping with several keys: '%s' is a second one (first: '%s')",
                                  k, key->str);
            } else {
                key = item->kids[2 * i];
                body = item->kids[2 * i + 1];
            }
        }
        if (!key) return lt__sc_err(item, LT_INVALID, "a step needs its name as a key beside %s:", sel->str);
    } else {
        return lt__sc_err(item, LT_INVALID, "a step is a mapping with one key, the step's name (one of: %s); got %s",
                          lt__sc_step_names(),
                          item->kind == SC_MAP ? "a mapping with several keys" : lt__sc_kind_name(item));
    }
    const sc_step_type *t = lt__sc_step_type(key->str);
    if (!t) {
        const char *names[NSTEP_TYPES];
        for (int i = 0; i < NSTEP_TYPES; i++) names[i] = step_types[i].name;
        const char *guess = lt__suggest(key->str, names, NSTEP_TYPES);
        return lt__sc_err(key, LT_INVALID, "unknown step '%s' (expected one of: %s)%s%s%s", key->str,
                          lt__sc_step_names(), guess ? "; did you mean '" : "", guess ? guess : "", guess ? "'?" : "");
    }
    st->type = t;
    st->pos.file = key->file;
    st->pos.line = key->line;
    st->pos.col = key->col;
    st->data = NULL;
    st->mask = NULL;
    if (sel) LT_TRY(lt__sc_parse_selection(pc, t, sel, sel_val, st));
    return t->parse(pc, body ? body : key, st);
}

/* ---- names ------------------------------------------------------------------- */

static const char *kind_str(int kind) {
    switch (kind) {
    case SC_FULL: return "a full tensor";
    case SC_DTENSOR: return "a DTensor";
    case SC_LOCAL: return "a per-rank LocalTensor";
    default: return "a value";
    }
}

static lt_status add_sym(sc_parse_ctx *pc, const char *name, int kind) {
    if (pc->nsyms == pc->cap) {
        int cap = pc->cap ? pc->cap * 2 : 16;
        sc_sym *s = lt__realloc(pc->syms, sizeof *s * (size_t)cap);
        if (!s) return lt__err(LT_NOMEM, "out of memory");
        pc->syms = s;
        pc->cap = cap;
    }
    pc->syms[pc->nsyms].name = name;
    pc->syms[pc->nsyms].kind = kind;
    pc->nsyms++;
    return LT_OK;
}

lt_status lt__sc_use(sc_parse_ctx *pc, const sc_node *map, const char *what, const char *key,
                     int kinds, const char **out) {
    const sc_node *v;
    const char *name;
    LT_TRY(lt__sc_need(map, what, key, &v));
    LT_TRY(lt__sc_ident(v, what, &name));
    for (int i = pc->nsyms - 1; i >= 0; i--) {
        if (strcmp(pc->syms[i].name, name)) continue;
        if (!(pc->syms[i].kind & kinds)) {
            char want[128] = "";
            size_t used = 0;
            for (int k = SC_FULL; k <= SC_LOCAL; k <<= 1)
                if (kinds & k)
                    used += (size_t)snprintf(want + used, sizeof want - used, "%s%s", used ? " or " : "",
                                             kind_str(k));
            return lt__sc_err(v, LT_INVALID, "%s: '%s' is %s, but %s needs %s", what, name,
                              kind_str(pc->syms[i].kind), what, want);
        }
        *out = name;
        return LT_OK;
    }
    char list[400] = "";
    size_t used = 0;
    for (int i = 0; i < pc->nsyms && used < sizeof list - 8; i++) {
        int dup = 0;
        for (int j = 0; j < i && !dup; j++) dup = !strcmp(pc->syms[j].name, pc->syms[i].name);
        if (!dup) used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", pc->syms[i].name);
    }
    return lt__sc_err(v, LT_INVALID, "%s: tensor '%s' is not defined%s%s%s", what, name,
                      pc->nsyms ? " (defined so far: " : " (nothing is defined yet)", list,
                      pc->nsyms ? ")" : "");
}

lt_status lt__sc_define(sc_parse_ctx *pc, const sc_node *map, const char *what, int kind,
                        const char **out) {
    const sc_node *v;
    LT_TRY(lt__sc_need(map, what, "as", &v));
    LT_TRY(lt__sc_ident(v, what, out));
    if (pc->in_expect_error) return LT_OK;   /* the step must fail: nothing is defined */
    return add_sym(pc, *out, kind);
}

lt_status lt__sc_rank(const sc_parse_ctx *pc, const sc_node *key, int *rank) {
    int64_t r;
    LT_TRY(lt__sc_i64(key, "rank", INT64_MIN, INT64_MAX, &r));
    if (r < 0 || r >= pc->mesh->world) {
        char m[64];
        lt_mesh_str(pc->mesh, m, sizeof m);
        return lt__sc_err(key, LT_INVALID, "rank %lld is not on the %s mesh (ranks 0..%d)", (long long)r, m,
                          pc->mesh->world - 1);
    }
    *rank = (int)r;
    return LT_OK;
}

lt_status lt__sc_per_rank(sc_parse_ctx *pc, const sc_node *n, const char *what, int need_all,
                          const sc_node ***nodes) {
    int W = pc->mesh->world;
    const sc_node **v = lt__sc_alloc(pc->arena, sizeof *v * (size_t)W);
    if (!v) return LT_NOMEM;
    if (n->kind == SC_SEQ) {
        if (n->n != W)
            return lt__sc_err(n, LT_INVALID, "%s: a list gives one entry per rank: %d rank%s, got %d entr%s (a mapping {rank: ...} can list some)",
                              what, W, W == 1 ? "" : "s", n->n, n->n == 1 ? "y" : "ies");
        for (int i = 0; i < W; i++) v[i] = n->kids[i];
    } else if (n->kind == SC_MAP) {
        for (int i = 0; i < n->n; i++) {
            int r;
            LT_TRY(lt__sc_rank(pc, n->kids[2 * i], &r));
            if (v[r])
                return lt__sc_err(n->kids[2 * i], LT_INVALID, "%s: rank %d is given twice", what, r);
            v[r] = n->kids[2 * i + 1];
        }
    } else {
        return lt__sc_err(n, LT_INVALID, "%s: expected a mapping {rank: ...} or a list with one entry per rank, got %s",
                          what, lt__sc_kind_name(n));
    }
    if (need_all)
        for (int r = 0; r < W; r++)
            if (!v[r]) return lt__sc_err(n, LT_INVALID, "%s: rank %d is missing (every rank needs an entry)", what, r);
    *nodes = v;
    return LT_OK;
}

/* ---- tensors -------------------------------------------------------------------- */

static lt_status parse_tensor(sc_parse_ctx *pc, const sc_node *key, const sc_node *body,
                              sc_tensor_decl *t) {
    static const char *const keys[] = {"shape", "dtype", "init", "values", NULL};
    char what[128];
    LT_TRY(lt__sc_ident(key, "tensors", &t->name));
    snprintf(what, sizeof what, "tensor '%s'", t->name);
    LT_TRY(lt__sc_keys(body, what, keys));
    t->pos = (sc_pos){key->file, key->line, key->col};
    t->dtype = LT_F32;
    const sc_node *n;
    if ((n = lt__sc_get(body, "dtype"))) LT_TRY(lt__sc_dtype(n, what, &t->dtype));
    const sc_node *shape = lt__sc_get(body, "shape"), *vals = lt__sc_get(body, "values"),
                  *init = lt__sc_get(body, "init");
    /* numerics sample/none never build an init: tensor: only the layout math limits it */
    if (shape) LT_TRY(lt__sc_shape_max(shape, what, pc->sampled && !vals ? INT64_MAX : LT_SC_MAX_ELEMS, &t->ndim, t->shape));
    if (vals && init)
        return lt__sc_err(init, LT_INVALID, "%s: give either init or values, not both", what);
    if (vals) {
        sc_literal lit;
        LT_TRY(lt__sc_literal(pc->arena, vals, what, &lit));
        LT_TRY(lt__sc_values_fit(vals, t->dtype, what));
        if (!shape) {
            t->ndim = lit.ndim;
            memcpy(t->shape, lit.shape, sizeof lit.shape);
        } else {
            int64_t numel;
            LT_TRY(lt__numel_checked(t->ndim, t->shape, 8, &numel));
            int same = lit.ndim == t->ndim;
            for (int d = 0; same && d < t->ndim; d++) same = lit.shape[d] == t->shape[d];
            if (!same && !(lit.ndim == 1 && lit.n == numel)) {
                char a[96], b[96];
                return lt__sc_err(vals, LT_SHAPE, "%s: values have shape %s (%lld values) but the tensor's shape is %s (%lld elements)",
                                  what, lt_shape_str(lit.ndim, lit.shape, a, sizeof a), (long long)lit.n,
                                  lt_shape_str(t->ndim, t->shape, b, sizeof b), (long long)numel);
            }
        }
        t->has_values = 1;
        t->values = lit.v;
        return LT_OK;
    }
    if (!shape) return lt__sc_err(body, LT_INVALID, "%s: missing required key 'shape' (or give values)", what);
    t->init.kind = LT_INIT_ARANGE;
    if (init) {
        const char *s;
        LT_TRY(lt__sc_str(init, what, &s));
        lt_status st = lt_init_parse(s, &t->init);
        if (st) return lt__sc_err_at(init, st);
    }
    return LT_OK;
}

/* ---- one case ---------------------------------------------------------------------- */

/* --shards owned (tools/scenario/scenario.h): init: tensors are never built whole */
static int g_unbuilt_init;
void lt__sc_load_unbuilt_init(int on) { g_unbuilt_init = on; }

static const char *const scenario_keys[] = {"name", "description", "mesh", "backend", "tensors", "steps", "sweep", "numerics", NULL};

/* Parses mesh, tensors and steps of a scenario map (variables already
 * substituted); sweep_mesh stands in for a missing `mesh`. */
static lt_status parse_case(sc_arena *a, const sc_node *map, const sc_node *sweep_mesh, sc_case *c) {
    const sc_node *mesh = lt__sc_get(map, "mesh");
    if (!mesh) mesh = sweep_mesh;
    if (!mesh) return lt__sc_err(map, LT_INVALID, "scenario '%s': missing required key 'mesh'", c->name);
    lt_mesh parsed;
    LT_TRY(lt__sc_mesh(mesh, "mesh", &parsed));
    if (!c->mesh || !lt_mesh_equal(c->mesh, &parsed)) {   /* a sweep case's mesh is set already */
        lt_mesh *m = lt__sc_alloc(a, sizeof *m);
        if (!m) return LT_NOMEM;
        *m = parsed;
        c->mesh = m;
    }
    const sc_node *nm = lt__sc_get(map, "numerics");
    if (nm) {
        const char *s;
        LT_TRY(lt__sc_str(nm, "numerics", &s));
        lt_status ns = lt_numerics_parse(s, &c->numerics);
        if (ns) return lt__sc_err_at(nm, ns);
    }
    const sc_node *bn = lt__sc_get(map, "backend");
    if (bn) { /* where the case's tensors live: a name kernels/backend.h knows, usable here */
        const lt_backend *b;
        LT_TRY(lt__sc_str(bn, "backend", &c->backend));
        lt_status bst = lt_backend_by_name(c->backend, &b);
        if (bst) return lt__sc_err_at(bn, lt__err_ctx(bst, "backend"));
    }
    sc_parse_ctx pc;
    memset(&pc, 0, sizeof pc);
    pc.arena = a;
    pc.mesh = c->mesh;
    pc.sampled = c->numerics.kind != LT_NUMERICS_FULL || g_unbuilt_init;
    lt_status st = LT_OK;
    const sc_node *tensors = lt__sc_get(map, "tensors"), *steps;
    if (tensors && !lt__sc_is_null(tensors)) {
        if (tensors->kind != SC_MAP) {
            st = lt__sc_err(tensors, LT_INVALID, "tensors: expected a mapping name: {shape, dtype, init | values}, got %s",
                            lt__sc_kind_name(tensors));
            goto out;
        }
        c->ntensors = tensors->n;
        c->tensors = lt__sc_alloc(a, sizeof *c->tensors * (size_t)(tensors->n ? tensors->n : 1));
        if (!c->tensors) { st = LT_NOMEM; goto out; }
        for (int i = 0; i < tensors->n && !st; i++) {
            st = parse_tensor(&pc, tensors->kids[2 * i], tensors->kids[2 * i + 1], &c->tensors[i]);
            if (!st) st = add_sym(&pc, c->tensors[i].name, SC_FULL);
        }
        if (st) goto out;
    }
    if ((st = lt__sc_need(map, "scenario", "steps", &steps))) goto out;
    if (steps->kind != SC_SEQ || steps->n == 0) {
        st = lt__sc_err(steps, LT_INVALID, "steps: expected a non-empty list of steps, got %s",
                        steps->kind == SC_SEQ ? "an empty list" : lt__sc_kind_name(steps));
        goto out;
    }
    c->nsteps = steps->n;
    c->steps = lt__sc_alloc(a, sizeof *c->steps * (size_t)steps->n);
    if (!c->steps) { st = LT_NOMEM; goto out; }
    for (int i = 0; i < steps->n && !st; i++) st = lt__sc_parse_step(&pc, steps->kids[i], &c->steps[i]);
out:
    lt__free(pc.syms);
    return st;
}

/* ---- sweeps ---------------------------------------------------------------------------- */

typedef struct sweep_var {
    const char *name;        /* "mesh", "shape", "dtype", "from", "to" */
    int n;
    const sc_node **vals;
} sweep_var;

/* Placement list choices for one mesh (and shape, when known). */
typedef struct pl_choices {
    int n;
    const sc_node **nodes;   /* the value to substitute */
    const char **labels;     /* short spelling for the case name */
} pl_choices;

static void pl_label(const lt_placement *pl, int np, char *buf, size_t n) {
    char tmp[256];
    lt_placements_format(pl, np, tmp, sizeof tmp);
    size_t j = 0;
    const char *s = tmp;
    if (np == 1 && tmp[0] == '[') s = tmp + 1;
    for (; *s && j + 1 < n; s++)
        if (*s != ' ' && !(np == 1 && *s == ']' && s[1] == '\0')) buf[j++] = *s;
    buf[j] = '\0';
}

/* Every list of mesh->ndim entries drawn from each[] that is valid for the
 * mesh (and the shape when ndim >= 0), as choices. */
static lt_status expand_each(sc_arena *a, const sc_node *each, const lt_mesh *mesh, int ndim,
                             const int64_t *shape, pl_choices *out) {
    int k = each->n, nd = mesh->ndim;
    lt_placement opts[64];
    if (k < 1 || k > 64)
        return lt__sc_err(each, LT_INVALID, "sweep: each: expected 1 to 64 placements, got %d", k);
    for (int i = 0; i < k; i++) {
        const char *s;
        LT_TRY(lt__sc_str(each->kids[i], "sweep: each", &s));
        lt_status st = lt_placement_parse(s, &opts[i]);
        if (st) return lt__sc_err_at(each->kids[i], st);
    }
    int64_t total = 1;
    for (int d = 0; d < nd; d++)
        if (lt__mul_i64(total, k, &total) || total > LT_SC_MAX_CASES)
            return lt__sc_err(each, LT_OVERFLOW, "sweep: each: %d^%d placement lists are more than %d cases", k, nd,
                              LT_SC_MAX_CASES);
    out->nodes = lt__sc_alloc(a, sizeof *out->nodes * (size_t)total);
    out->labels = lt__sc_alloc(a, sizeof *out->labels * (size_t)total);
    if (!out->nodes || !out->labels) return LT_NOMEM;
    out->n = 0;
    for (int64_t c = 0; c < total; c++) {
        lt_placement pl[LT_MESH_MAX_DIMS], norm[LT_MESH_MAX_DIMS];
        int64_t rest = c;
        for (int d = nd - 1; d >= 0; d--) {
            pl[d] = opts[rest % k];
            rest /= k;
        }
        if (ndim >= 0) {
            if (lt_placements_check(mesh, ndim, pl, nd, norm)) continue;
            if (lt_layout_check(mesh, ndim, shape, norm)) continue;
        }
        char text[256], label[256];
        lt_placements_format(pl, nd, text, sizeof text);
        pl_label(pl, nd, label, sizeof label);
        sc_node *node = lt__sc_scalar(a, each, text);
        char *lab = lt__sc_strdup(a, label);
        if (!node || !lab) return LT_NOMEM;
        out->nodes[out->n] = node;
        out->labels[out->n++] = lab;
    }
    lt__err_clear();
    return LT_OK;
}

/* Explicit placement lists: those with one entry per mesh dim. */
static lt_status explicit_lists(sc_arena *a, const sc_node *list, const lt_mesh *mesh, pl_choices *out) {
    out->nodes = lt__sc_alloc(a, sizeof *out->nodes * (size_t)list->n);
    out->labels = lt__sc_alloc(a, sizeof *out->labels * (size_t)list->n);
    if (!out->nodes || !out->labels) return LT_NOMEM;
    out->n = 0;
    for (int i = 0; i < list->n; i++) {
        lt_placement pl[LT_MESH_MAX_DIMS];
        int np;
        LT_TRY(lt__sc_placements(list->kids[i], "sweep", pl, &np));
        if (np != mesh->ndim) continue;
        char label[256];
        pl_label(pl, np, label, sizeof label);
        out->nodes[out->n] = list->kids[i];
        if (!(out->labels[out->n++] = lt__sc_strdup(a, label))) return LT_NOMEM;
    }
    return LT_OK;
}

static lt_status placement_choices(sc_arena *a, const sc_node *spec, const lt_mesh *mesh, int ndim,
                                   const int64_t *shape, pl_choices *out) {
    if (spec->kind == SC_MAP) {
        static const char *const keys[] = {"each", NULL};
        const sc_node *each;
        LT_TRY(lt__sc_keys(spec, "sweep placements", keys));
        LT_TRY(lt__sc_need(spec, "sweep placements", "each", &each));
        if (each->kind != SC_SEQ)
            return lt__sc_err(each, LT_INVALID, "sweep: each: expected a list of placements, got %s",
                              lt__sc_kind_name(each));
        return expand_each(a, each, mesh, ndim, shape, out);
    }
    return explicit_lists(a, spec, mesh, out);
}

typedef struct sweep_ctx {
    sc_arena *a;
    const sc_node *map;          /* the scenario */
    const sc_node *sweep;
    const char *name;
    sweep_var mesh, shape, dtype;
    const sc_node *from, *to, *pairs;
    int counting;                /* first pass: only count the cases */
    sc_case *cases;              /* (ncases of the first pass) in the arena, filled by the second */
    int ncases;
    int *pair_used;              /* (pairs->n) */
    const char **names;          /* (nnames) the last case's variable names (arena), shared */
    int nnames;
} sweep_ctx;

/* mesh: the case's parsed mesh, in the file's arena (shared by the cases on it). */
static lt_status add_case(sweep_ctx *sw, const sc_subst *s, const char *label, const sc_node *mesh_node,
                          const lt_mesh *mesh) {
    if (sw->ncases == LT_SC_MAX_CASES)
        return lt__sc_err(sw->sweep, LT_OVERFLOW, "sweep: more than %d cases", LT_SC_MAX_CASES);
    if (sw->counting) {
        sw->ncases++;
        return LT_OK;
    }
    sc_case *c = &sw->cases[sw->ncases];
    memset(c, 0, sizeof *c);
    const sc_node *m = sw->map;
    size_t nn = strlen(sw->name), nl = strlen(label);   /* the name: "<scenario>[<label>]" */
    char *name = lt__sc_alloc(sw->a, nn + nl + 3);
    sc_recipe *r = lt__sc_alloc(sw->a, sizeof *r + sizeof r->vals[0] * (size_t)s->n);
    if (!name || !r) return LT_NOMEM;
    if (!sw->names || sw->nnames != s->n || memcmp(sw->names, s->names, sizeof s->names[0] * (size_t)s->n)) {
        const char **names = lt__sc_alloc(sw->a, sizeof s->names[0] * (size_t)(s->n ? s->n : 1));
        if (!names) return LT_NOMEM;
        memcpy(names, s->names, sizeof s->names[0] * (size_t)s->n);
        sw->names = names;
        sw->nnames = s->n;
    }
    memcpy(name, sw->name, nn);
    name[nn] = '[';
    memcpy(name + nn + 1, label, nl);
    memcpy(name + nn + 1 + nl, "]", 2);
    c->name = name;
    c->mesh = mesh;
    c->pos = (sc_pos){m->file, m->line, m->col};
    r->map = m;
    r->mesh_node = mesh_node;
    r->names = sw->names;
    r->n = s->n;
    memcpy(r->vals, s->vals, sizeof r->vals[0] * (size_t)s->n);
    c->recipe = r;
    sw->ncases++;
    return LT_OK;
}

/* Parses case i once, into a scratch arena, so that a bad case is a load
 * error with its position (it is parsed again when it runs). Writes only
 * case i: the cases are checked on the pool's threads. */
static lt_status check_case(void *ctx, int64_t i) {
    sc_case *c = &((sweep_ctx *)ctx)->cases[i];
    const lt_mesh *mesh = c->mesh;
    sc_arena *scratch = lt__sc_arena_new();
    if (!scratch) return LT_NOMEM;
    lt_status st = lt__sc_case_build(c, scratch);
    lt__sc_case_drop(c);
    c->mesh = mesh;   /* never a pointer into scratch */
    lt__sc_arena_free(scratch);
    if (st) return lt__err_ctx(st, "in sweep case %s", c->name);
    return LT_OK;
}

lt_status lt__sc_case_build(sc_case *c, sc_arena *a) {
    const sc_recipe *r = c->recipe;
    if (!r) return LT_OK;
    sc_subst subst;
    subst.n = r->n;
    memcpy(subst.names, r->names, sizeof subst.names[0] * (size_t)r->n);
    memcpy(subst.vals, r->vals, sizeof subst.vals[0] * (size_t)r->n);
    /* copy the scenario without its name, description and sweep */
    const sc_node *m = r->map;
    sc_node *copy = lt__sc_alloc(a, sizeof *copy);
    if (!copy) return LT_NOMEM;
    *copy = *m;
    copy->kids = lt__sc_alloc(a, sizeof(sc_node *) * (size_t)(2 * m->n));
    if (!copy->kids) return LT_NOMEM;
    copy->n = 0;
    for (int i = 0; i < m->n; i++) {
        const char *k = m->kids[2 * i]->str;
        if (!strcmp(k, "name") || !strcmp(k, "description") || !strcmp(k, "sweep")) continue;
        copy->kids[2 * copy->n] = m->kids[2 * i];
        LT_TRY(lt__sc_copy(a, m->kids[2 * i + 1], &subst, &copy->kids[2 * copy->n + 1]));
        copy->n++;
    }
    c->ntensors = 0;
    c->nsteps = 0;
    return parse_case(a, copy, r->mesh_node, c);
}

void lt__sc_case_drop(sc_case *c) {
    if (!c->recipe) return;
    c->ntensors = 0;
    c->tensors = NULL;
    c->nsteps = 0;
    c->steps = NULL;
}

static lt_status sweep_list(const sc_node *sweep, const char *key, sweep_var *v) {
    const sc_node *n = lt__sc_get(sweep, key);
    v->name = key;
    v->n = 0;
    if (!n) return LT_OK;
    if (n->kind != SC_SEQ || n->n == 0)
        return lt__sc_err(n, LT_INVALID, "sweep: %s: expected a non-empty list, got %s", key,
                          n->kind == SC_SEQ ? "an empty list" : lt__sc_kind_name(n));
    v->n = n->n;
    v->vals = (const sc_node **)n->kids;
    return LT_OK;
}

/* a, sep and b joined into buf (n > 0 bytes), cut as snprintf cuts: a
 * sweep names tens of thousands of cases, and printf is most of that work. */
static void join_label(char *buf, size_t n, const char *a, const char *sep, const char *b) {
    const char *part[3] = {a, sep, b};
    size_t used = 0;
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(part[i]);
        if (k > n - 1 - used) k = n - 1 - used;
        memcpy(buf + used, part[i], k);
        used += k;
    }
    buf[used] = '\0';
}

static void append_label(char *buf, size_t n, const char *part) {
    size_t len = strlen(buf);
    join_label(buf + len, n - len, len ? "," : "", "", part);
}

static lt_status expand_sweep(sweep_ctx *sw) {
    const sc_node *one_mesh = lt__sc_get(sw->map, "mesh");
    int nm = sw->mesh.n ? sw->mesh.n : 1, ns = sw->shape.n ? sw->shape.n : 1, nd = sw->dtype.n ? sw->dtype.n : 1;
    if (sw->pairs) {
        sw->pair_used = lt__calloc((size_t)sw->pairs->n, sizeof(int));
        if (!sw->pair_used) return lt__err(LT_NOMEM, "out of memory");
    }
    lt_status st = LT_OK;
    for (int im = 0; im < nm && !st; im++) {
        const sc_node *mesh_node = sw->mesh.n ? sw->mesh.vals[im] : one_mesh;
        lt_mesh mesh;
        if (!mesh_node) {   /* not a return: pair_used is freed below */
            st = lt__sc_err(sw->map, LT_INVALID, "scenario '%s': missing required key 'mesh' (or sweep: mesh)", sw->name);
            break;
        }
        if ((st = lt__sc_mesh(mesh_node, "mesh", &mesh))) break;
        lt_mesh *shared = NULL;   /* the cases' copy (second pass) */
        if (!sw->counting) {
            if (!(shared = lt__sc_alloc(sw->a, sizeof *shared))) {
                st = LT_NOMEM;
                break;
            }
            *shared = mesh;
        }
        char mlabel[96] = "";
        if (sw->mesh.n) {
            char ms[64];
            snprintf(mlabel, sizeof mlabel, "mesh=%s", lt_mesh_str(&mesh, ms, sizeof ms));
        }
        for (int is = 0; is < ns && !st; is++) {
            int ndim = -1;
            int64_t shape[LT_MAX_DIMS];
            char slabel[128] = "";
            if (sw->shape.n) {
                if ((st = lt__sc_shape(sw->shape.vals[is], "sweep: shape", &ndim, shape))) break;
                char tmp[96];
                lt_shape_str(ndim, shape, tmp, sizeof tmp);
                /* "(5, 7)" -> "5,7"; "(5)" -> "5" */
                size_t j = 0;
                for (const char *p = tmp; *p && j + 1 < sizeof tmp; p++)
                    if (*p != ' ' && *p != '(' && *p != ')') slabel[j++] = *p;
                slabel[j] = '\0';
                memmove(slabel + 6, slabel, j + 1);
                memcpy(slabel, "shape=", 6);
            }
            pl_choices from = {0}, to = {0};
            if (sw->from && (st = placement_choices(sw->a, sw->from, &mesh, ndim, shape, &from))) break;
            if (sw->to && (st = placement_choices(sw->a, sw->to, &mesh, ndim, shape, &to))) break;
            int npl = 1;
            if (sw->pairs) npl = sw->pairs->n;
            else if (sw->from && sw->to) npl = from.n * to.n;
            else if (sw->from) npl = from.n;
            else if (sw->to) npl = to.n;
            if ((int64_t)sw->ncases + (int64_t)nd * npl > LT_SC_MAX_CASES) {
                st = lt__sc_err(sw->sweep, LT_OVERFLOW, "sweep: more than %d cases", LT_SC_MAX_CASES);
                break;
            }
            for (int id = 0; id < nd && !st; id++) {
                char dlabel[64] = "";
                if (sw->dtype.n) {
                    const char *ds;
                    if ((st = lt__sc_str(sw->dtype.vals[id], "sweep: dtype", &ds))) break;
                    snprintf(dlabel, sizeof dlabel, "dtype=%s", ds);
                }
                for (int ip = 0; ip < npl && !st; ip++) {
                    sc_subst s = {0};
                    char label[768] = "", plabel[512] = "";
                    if (sw->mesh.n) s.names[s.n] = "mesh", s.vals[s.n++] = mesh_node;
                    if (sw->shape.n) s.names[s.n] = "shape", s.vals[s.n++] = sw->shape.vals[is];
                    if (sw->dtype.n) s.names[s.n] = "dtype", s.vals[s.n++] = sw->dtype.vals[id];
                    if (sw->pairs) {
                        const sc_node *pr = sw->pairs->kids[ip], *f, *t;
                        if (pr->kind == SC_SEQ && pr->n == 2) {
                            f = pr->kids[0];
                            t = pr->kids[1];
                        } else if (pr->kind == SC_MAP) {
                            static const char *const keys[] = {"from", "to", NULL};
                            if ((st = lt__sc_keys(pr, "sweep: pairs", keys))) break;
                            if ((st = lt__sc_need(pr, "sweep: pairs", "from", &f))) break;
                            if ((st = lt__sc_need(pr, "sweep: pairs", "to", &t))) break;
                        } else {
                            st = lt__sc_err(pr, LT_INVALID, "sweep: pairs: expected [from, to] or {from: ..., to: ...}, got %s",
                                            lt__sc_kind_name(pr));
                            break;
                        }
                        lt_placement pf[LT_MESH_MAX_DIMS], pt[LT_MESH_MAX_DIMS];
                        int nf, nt;
                        if ((st = lt__sc_placements(f, "sweep: pairs: from", pf, &nf))) break;
                        if ((st = lt__sc_placements(t, "sweep: pairs: to", pt, &nt))) break;
                        if (nf != mesh.ndim || nt != mesh.ndim) continue;
                        sw->pair_used[ip] = 1;
                        char lf[200], lt2[200];
                        pl_label(pf, nf, lf, sizeof lf);
                        pl_label(pt, nt, lt2, sizeof lt2);
                        join_label(plabel, sizeof plabel, lf, "->", lt2);
                        s.names[s.n] = "from", s.vals[s.n++] = f;
                        s.names[s.n] = "to", s.vals[s.n++] = t;
                    } else if (sw->from && sw->to) {
                        int i = ip / to.n, j = ip % to.n;
                        join_label(plabel, sizeof plabel, from.labels[i], "->", to.labels[j]);
                        s.names[s.n] = "from", s.vals[s.n++] = from.nodes[i];
                        s.names[s.n] = "to", s.vals[s.n++] = to.nodes[j];
                    } else if (sw->from) {
                        snprintf(plabel, sizeof plabel, "from=%s", from.labels[ip]);
                        s.names[s.n] = "from", s.vals[s.n++] = from.nodes[ip];
                    } else if (sw->to) {
                        snprintf(plabel, sizeof plabel, "to=%s", to.labels[ip]);
                        s.names[s.n] = "to", s.vals[s.n++] = to.nodes[ip];
                    }
                    if (mlabel[0]) append_label(label, sizeof label, mlabel);
                    if (slabel[0]) append_label(label, sizeof label, slabel);
                    if (dlabel[0]) append_label(label, sizeof label, dlabel);
                    if (plabel[0]) append_label(label, sizeof label, plabel);
                    st = add_case(sw, &s, label, sw->mesh.n ? mesh_node : NULL, shared);
                }
            }
        }
    }
    /* every case expanded is checked (the counting pass has already
     * reported any error of the expansion itself); the error is the first
     * bad case's in case order */
    if (!sw->counting) {
        lt_status cst = lt__parallel_for(sw->ncases, check_case, sw);
        if (cst) st = cst;
    }
    if (!st && sw->pairs)
        for (int i = 0; i < sw->pairs->n; i++)
            if (!sw->pair_used[i]) {
                st = lt__sc_err(sw->pairs->kids[i], LT_INVALID,
                                "sweep: pairs: this pair's placement counts match none of the sweep's meshes");
                break;
            }
    if (!st && sw->ncases == 0)
        st = lt__sc_err(sw->sweep, LT_INVALID, "sweep: expands to no cases (no placement list fits the meshes and shapes)");
    lt__free(sw->pair_used);
    return st;
}

static lt_status parse_sweep_scenario(sc_arena *a, const sc_node *map, const sc_node *sweep, sc_scenario *s) {
    static const char *const keys[] = {"mesh", "shape", "dtype", "from", "to", "pairs", NULL};
    LT_TRY(lt__sc_keys(sweep, "sweep", keys));
    sweep_ctx sw;
    memset(&sw, 0, sizeof sw);
    sw.a = a;
    sw.map = map;
    sw.sweep = sweep;
    sw.name = s->name;
    LT_TRY(sweep_list(sweep, "mesh", &sw.mesh));
    LT_TRY(sweep_list(sweep, "shape", &sw.shape));
    LT_TRY(sweep_list(sweep, "dtype", &sw.dtype));
    sw.from = lt__sc_get(sweep, "from");
    sw.to = lt__sc_get(sweep, "to");
    sw.pairs = lt__sc_get(sweep, "pairs");
    if (sw.pairs && (sw.from || sw.to))
        return lt__sc_err(sw.pairs, LT_INVALID, "sweep: give either pairs or from/to, not both");
    const sc_node *lists[3] = {sw.from, sw.to, sw.pairs};
    for (int i = 0; i < 3; i++) {
        const sc_node *l = lists[i];
        if (!l) continue;
        if (!(l->kind == SC_SEQ && l->n > 0) && !(i < 2 && l->kind == SC_MAP))
            return lt__sc_err(l, LT_INVALID, "sweep: %s: expected a non-empty list%s, got %s",
                              i == 0 ? "from" : i == 1 ? "to" : "pairs", i < 2 ? " or {each: [...]}" : "",
                              l->kind == SC_SEQ ? "an empty list" : lt__sc_kind_name(l));
    }
    if (!sw.mesh.n && !sw.shape.n && !sw.dtype.n && !sw.from && !sw.to && !sw.pairs)
        return lt__sc_err(sweep, LT_INVALID, "sweep: defines no variables (mesh, shape, dtype, from, to, pairs)");
    /* two passes: count, then fill an array of exactly that many cases */
    sw.counting = 1;
    lt_status st = expand_sweep(&sw);
    if (!st) {
        s->is_sweep = 1;
        s->ncases = sw.ncases;
        s->cases = sw.cases = lt__sc_alloc(a, sizeof *s->cases * (size_t)sw.ncases);
        if (!s->cases) st = LT_NOMEM;
    }
    if (!st) {
        sw.counting = 0;
        sw.ncases = 0;
        st = expand_sweep(&sw);
    }
    return st;
}

static lt_status parse_scenario(sc_arena *a, const sc_node *map, sc_scenario *s) {
    LT_TRY(lt__sc_keys(map, "a scenario", scenario_keys));
    const sc_node *n;
    LT_TRY(lt__sc_need(map, "scenario", "name", &n));
    LT_TRY(lt__sc_str(n, "name", &s->name));
    for (const char *p = s->name; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '[' || *p == ']')
            return lt__sc_err(n, LT_INVALID, "name: '%s' may not hold control characters or [ ]", s->name);
    s->pos = (sc_pos){map->file, map->line, map->col};
    if ((n = lt__sc_get(map, "description"))) LT_TRY(lt__sc_str(n, "description", &s->description));
    const sc_node *sweep = lt__sc_get(map, "sweep");
    if (sweep) return parse_sweep_scenario(a, map, sweep, s);
    /* not a sweep: no $variables allowed */
    for (int i = 0; i < map->n; i++) LT_TRY(lt__sc_copy(NULL, map->kids[2 * i + 1], NULL, NULL));
    s->ncases = 1;
    s->cases = lt__sc_alloc(a, sizeof *s->cases);
    if (!s->cases) return LT_NOMEM;
    s->cases[0].name = s->name;
    s->cases[0].pos = s->pos;
    lt_status st = parse_case(a, map, NULL, &s->cases[0]);
    if (st) return st;
    return LT_OK;
}

/* ---- files ---------------------------------------------------------------------------- */

lt_status lt_sc_load_string(const char *name, const char *text, size_t len, lt_sc_file **out) {
    *out = NULL;
    lt__err_clear();   /* a bare LT_NOMEM below must not inherit an older failure's position */
    sc_arena *a = lt__sc_arena_new();
    if (!a) return LT_NOMEM;
    lt_sc_file *f = lt__sc_alloc(a, sizeof *f);
    lt_status st = LT_OK;
    if (!f || !(f->path = lt__sc_strdup(a, name))) {
        lt__sc_arena_free(a);
        return LT_NOMEM;
    }
    f->arena = a;
    if (len > LT_SC_MAX_FILE_BYTES) {
        st = lt__err(LT_INVALID, "%s:1:1: file is %zu bytes; the loader's limit is %u", name, len,
                     LT_SC_MAX_FILE_BYTES);
        goto fail;
    }
    sc_node *root;
    if ((st = lt__sc_yaml_parse(a, f->path, text, len, &root))) goto fail;
    if (lt__sc_is_null(root)) {
        st = lt__err(LT_INVALID, "%s:%d:%d: file holds no scenario (expected a mapping with name, mesh and steps, or a list of them)",
                     name, root ? root->line : 1, root ? root->col : 1);
        goto fail;
    }
    int n = root->kind == SC_SEQ ? root->n : 1;
    if (root->kind == SC_SCALAR) {
        st = lt__sc_err(root, LT_INVALID, "expected a scenario (a mapping with name, mesh and steps) or a list of them, got text");
        goto fail;
    }
    if (n == 0) {
        st = lt__sc_err(root, LT_INVALID, "the list of scenarios is empty");
        goto fail;
    }
    f->scen = lt__sc_alloc(a, sizeof *f->scen * (size_t)n);
    if (!f->scen) { st = LT_NOMEM; goto fail; }
    for (int i = 0; i < n; i++) {
        const sc_node *m = root->kind == SC_SEQ ? root->kids[i] : root;
        if (m->kind != SC_MAP) {
            st = lt__sc_err(m, LT_INVALID, "expected a scenario (a mapping with name, mesh and steps), got %s",
                            lt__sc_kind_name(m));
            goto fail;
        }
        if ((st = parse_scenario(a, m, &f->scen[i]))) goto fail;
        for (int j = 0; j < i; j++)
            if (!strcmp(f->scen[j].name, f->scen[i].name)) {
                st = lt__sc_err(lt__sc_get(m, "name"), LT_INVALID, "scenario name '%s' is used twice in this file (first at line %d)",
                                f->scen[i].name, f->scen[j].pos.line);
                goto fail;
            }
        f->nscen = i + 1;
    }
    *out = f;
    return LT_OK;
fail:
    if (st == LT_NOMEM && !lt_errinfo()->at_pos) {
        lt__err(LT_NOMEM, "%s:1:1: out of memory", name);
        lt__err_mark_pos();
    }
    lt__sc_arena_free(a);
    return st;
}

lt_status lt_sc_load(const char *path, lt_sc_file **out) {
    *out = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) return lt__err(LT_IO, "%s:1:1: cannot open: %s", path, strerror(errno));
    size_t cap = 65536, len = 0;
    char *buf = lt__malloc(cap);
    lt_status st = LT_OK;
    if (!buf) {
        fclose(fp);
        return lt__err(LT_NOMEM, "%s:1:1: out of memory", path);
    }
    for (;;) {
        if (len > LT_SC_MAX_FILE_BYTES) {   /* refused without reading the rest */
            st = lt__err(LT_INVALID, "%s:1:1: file is larger than %u bytes (the loader's limit)", path,
                         LT_SC_MAX_FILE_BYTES);
            break;
        }
        if (len == cap) {
            char *nb = lt__realloc(buf, cap * 2);
            if (!nb) { st = lt__err(LT_NOMEM, "%s:1:1: out of memory", path); break; }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, fp);
        len += got;
        if (got == 0) {
            if (ferror(fp)) st = lt__err(LT_IO, "%s:1:1: read error (is it a directory?)", path);
            break;
        }
    }
    fclose(fp);
    if (!st) st = lt_sc_load_string(path, buf, len, out);
    lt__free(buf);
    return st;
}

void lt_sc_file_free(lt_sc_file *f) {
    if (f) lt__sc_arena_free(f->arena);
}

int lt_sc_file_scenarios(const lt_sc_file *f) { return f ? f->nscen : 0; }

int lt_sc_file_cases(const lt_sc_file *f) {
    int n = 0;
    for (int i = 0; f && i < f->nscen; i++) n += f->scen[i].ncases;
    return n;
}
