/* tools/scenario/scenario_sweep.c — a sweep's cases, made from their index.
 *
 * A sweep is the cartesian product of its variables (mesh, shape, dtype,
 * and from/to placement lists or pairs): tens of thousands of cases. The
 * load keeps a table of its (mesh, shape) blocks, each with the placement
 * lists that fit it, and nothing per case: case i is found by its block and
 * its place there, and its name, variables and steps are made when it is
 * asked for (lt__sc_case_at, lt__sc_case_build). So what a loaded sweep
 * holds does not grow with its number of cases. The load still parses every
 * case once, on the pool's threads, so that a bad case is a load error with
 * file:line:col (the first bad case in case order).
 *
 * Case order: meshes, then shapes, then dtypes, then placement choices
 * (from-major for from/to lists; the listed order for pairs).
 */
#include "kernels/alloc.h"
#include "kernels/pool_impl.h"
#include <stdio.h>
#include <string.h>

#include "tools/scenario/scenario_impl.h"
#include "kernels/status_impl.h"

typedef struct sweep_var {
    int n;
    const sc_node **vals;     /* (n) the list's items */
} sweep_var;

/* Placement list choices for one mesh (and shape, when known). */
typedef struct pl_choices {
    int n;
    const sc_node **nodes;    /* (n) the value to substitute */
    const char **labels;      /* (n) short spelling for the case name */
} pl_choices;

/* One entry of `pairs`, read once. */
typedef struct sw_pair {
    const sc_node *from, *to;
    int nf, nt;               /* placement counts */
    const char *label;        /* "S(0)->R" */
} sw_pair;

/* The cases of one (mesh, shape): ndtypes * npl of them. */
typedef struct sw_block {
    int first, ncases;        /* its cases are [first, first + ncases) */
    const sc_node *mesh_node; /* the sweep's mesh value (NULL: the scenario's own `mesh`) */
    const lt_mesh *mesh;      /* parsed once, in the file's arena; its cases point at it */
    const sc_node *shape;     /* the sweep's shape value, or NULL */
    const char *mlabel, *slabel; /* "mesh=2x2", "shape=5,7"; "" when not a variable */
    int npl;                  /* placement choices per dtype */
    pl_choices from, to;      /* from/to lists (npl = from.n * to.n, or one of them) */
    const int *pairs;         /* (npl) with pairs: the indices of the pairs that fit the mesh */
} sw_block;

struct sc_sweep {
    const sc_node *map;       /* the scenario */
    const sc_node *node;      /* its `sweep` */
    const char *name;         /* the scenario's name */
    const char *backend;      /* its `backend:` (a literal: the load parses every case), or NULL */
    sweep_var mesh, shape, dtype;
    const char **dlabels;     /* (dtype.n) "dtype=f32" */
    const sc_node *from, *to, *pairs;
    sw_pair *pair;            /* (pairs->n) */
    int nblocks;
    sw_block *blocks;         /* (nblocks) in case order; only blocks that have cases */
    int ncases;
};

/* ---- placement choices ------------------------------------------------------------------ */

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
 * mesh (and the shape when ndim >= 0), as choices (arena a). */
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
            return lt__sc_err(each, LT_OVERFLOW,
                              "sweep: each: %d^%d placement lists are more than %d cases", k, nd,
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
static lt_status explicit_lists(sc_arena *a, const sc_node *list, const lt_mesh *mesh,
                                pl_choices *out) {
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
            return lt__sc_err(each, LT_INVALID,
                              "sweep: each: expected a list of placements, got %s",
                              lt__sc_kind_name(each));
        return expand_each(a, each, mesh, ndim, shape, out);
    }
    return explicit_lists(a, spec, mesh, out);
}

/* ---- the sweep's table ------------------------------------------------------------------ */

static lt_status sweep_list(const sc_node *sweep, const char *key, sweep_var *v) {
    const sc_node *n = lt__sc_get(sweep, key);
    v->n = 0;
    if (!n) return LT_OK;
    if (n->kind != SC_SEQ || n->n == 0)
        return lt__sc_err(n, LT_INVALID, "sweep: %s: expected a non-empty list, got %s", key,
                          n->kind == SC_SEQ ? "an empty list" : lt__sc_kind_name(n));
    v->n = n->n;
    v->vals = (const sc_node **)n->kids;
    return LT_OK;
}

/* `pairs`: each entry's from and to, placement counts and label. */
static lt_status read_pairs(sc_arena *a, sc_sweep *sw) {
    int n = sw->pairs->n;
    if (!(sw->pair = lt__sc_alloc(a, sizeof *sw->pair * (size_t)n))) return LT_NOMEM;
    for (int i = 0; i < n; i++) {
        const sc_node *pr = sw->pairs->kids[i];
        sw_pair *p = &sw->pair[i];
        if (pr->kind == SC_SEQ && pr->n == 2) {
            p->from = pr->kids[0];
            p->to = pr->kids[1];
        } else if (pr->kind == SC_MAP) {
            static const char *const keys[] = {"from", "to", NULL};
            LT_TRY(lt__sc_keys(pr, "sweep: pairs", keys));
            LT_TRY(lt__sc_need(pr, "sweep: pairs", "from", &p->from));
            LT_TRY(lt__sc_need(pr, "sweep: pairs", "to", &p->to));
        } else {
            return lt__sc_err(pr, LT_INVALID,
                              "sweep: pairs: expected [from, to] or {from: ..., to: ...}, got %s",
                              lt__sc_kind_name(pr));
        }
        lt_placement pf[LT_MESH_MAX_DIMS], pt[LT_MESH_MAX_DIMS];
        LT_TRY(lt__sc_placements(p->from, "sweep: pairs: from", pf, &p->nf));
        LT_TRY(lt__sc_placements(p->to, "sweep: pairs: to", pt, &p->nt));
        char lf[200], lt2[200], label[512];
        pl_label(pf, p->nf, lf, sizeof lf);
        pl_label(pt, p->nt, lt2, sizeof lt2);
        snprintf(label, sizeof label, "%s->%s", lf, lt2);
        if (!(p->label = lt__sc_strdup(a, label))) return LT_NOMEM;
    }
    return LT_OK;
}

/* Sweep mesh im: its node (NULL when the scenario's own `mesh` is used),
 * parsed once into the arena (the blocks on it share it), and its label
 * ("mesh=2x2", or "" when the mesh is not a variable). */
static lt_status read_mesh(sc_arena *a, const sc_sweep *sw, int im, const sc_node **node,
                           const lt_mesh **mesh, const char **label) {
    const sc_node *mesh_node = sw->mesh.n ? sw->mesh.vals[im] : lt__sc_get(sw->map, "mesh");
    if (!mesh_node)
        return lt__sc_err(sw->map, LT_INVALID,
                          "scenario '%s': missing required key 'mesh' (or sweep: mesh)", sw->name);
    lt_mesh *m = lt__sc_alloc(a, sizeof *m);
    if (!m) return LT_NOMEM;
    LT_TRY(lt__sc_mesh(mesh_node, "mesh", m));
    char mlabel[96] = "";
    if (sw->mesh.n) {
        char ms[64];
        snprintf(mlabel, sizeof mlabel, "mesh=%s", lt_mesh_format(m, ms, sizeof ms));
    }
    if (!(*label = lt__sc_strdup(a, mlabel))) return LT_NOMEM;
    *node = sw->mesh.n ? mesh_node : NULL;
    *mesh = m;
    return LT_OK;
}

/* The block of a mesh (read_mesh) and shape is (its placement choices;
 * npl 0 when none fits). Marks the pairs that fit in used[]. */
static lt_status make_block(sc_arena *a, sc_sweep *sw, const sc_node *mesh_node,
                            const lt_mesh *mesh, const char *mlabel, int is, int *used,
                            sw_block *b) {
    memset(b, 0, sizeof *b);
    b->mesh = mesh;
    b->mesh_node = mesh_node;
    b->mlabel = mlabel;
    char slabel[128] = "";
    int ndim = -1;
    int64_t shape[LT_MAX_DIMS];
    if (sw->shape.n) {
        b->shape = sw->shape.vals[is];
        LT_TRY(lt__sc_shape(b->shape, "sweep: shape", &ndim, shape));
        char tmp[96];
        lt_shape_format(ndim, shape, tmp, sizeof tmp);
        /* "(5, 7)" -> "shape=5,7"; "(5)" -> "shape=5" */
        size_t j = 6;
        memcpy(slabel, "shape=", 6);
        for (const char *p = tmp; *p && j + 1 < sizeof slabel; p++)
            if (*p != ' ' && *p != '(' && *p != ')') slabel[j++] = *p;
        slabel[j] = '\0';
    }
    if (!(b->slabel = lt__sc_strdup(a, slabel))) return LT_NOMEM;
    if (sw->from) LT_TRY(placement_choices(a, sw->from, mesh, ndim, shape, &b->from));
    if (sw->to) LT_TRY(placement_choices(a, sw->to, mesh, ndim, shape, &b->to));
    if (sw->pairs) {
        int *fit = lt__sc_alloc(a, sizeof *fit * (size_t)sw->pairs->n);
        if (!fit) return LT_NOMEM;
        for (int i = 0; i < sw->pairs->n; i++)
            if (sw->pair[i].nf == mesh->ndim && sw->pair[i].nt == mesh->ndim)
                fit[b->npl++] = i, used[i] = 1;
        b->pairs = fit;
    } else if (sw->from && sw->to) {
        b->npl = b->from.n * b->to.n;
    } else if (sw->from) {
        b->npl = b->from.n;
    } else if (sw->to) {
        b->npl = b->to.n;
    } else {
        b->npl = 1;
    }
    return LT_OK;
}

/* Checks case i: parses it once into a scratch arena. Touches nothing
 * shared: the cases are checked on the pool's threads. */
static lt_status check_case(void *ctx, int64_t i) {
    sc_scenario *s = ctx;
    sc_arena *scratch = lt__sc_arena_new();
    if (!scratch) return LT_NOMEM;
    sc_case slot;
    sc_case *c = lt__sc_case_at(s, (int)i, &slot, scratch);
    lt_status st = c ? lt__sc_case_build(c, scratch) : LT_NOMEM;
    if (st && c) st = lt__err_ctx(st, "in sweep case %s", c->name);
    lt__sc_arena_free(scratch);
    return st;
}

/* The sweep's variables read from its node (sw: zeroed, in the arena):
 * the lists, their shapes checked, the dtype labels, the pairs. */
static lt_status sweep_vars(sc_arena *a, const sc_node *map, const sc_node *sweep, sc_sweep *sw) {
    const sc_node *bn = lt__sc_get(map, "backend");
    if (bn && bn->kind == SC_SCALAR) sw->backend = bn->str;
    LT_TRY(sweep_list(sweep, "mesh", &sw->mesh));
    LT_TRY(sweep_list(sweep, "shape", &sw->shape));
    LT_TRY(sweep_list(sweep, "dtype", &sw->dtype));
    sw->from = lt__sc_get(sweep, "from");
    sw->to = lt__sc_get(sweep, "to");
    sw->pairs = lt__sc_get(sweep, "pairs");
    if (sw->pairs && (sw->from || sw->to))
        return lt__sc_err(sw->pairs, LT_INVALID, "sweep: give either pairs or from/to, not both");
    const sc_node *lists[3] = {sw->from, sw->to, sw->pairs};
    for (int i = 0; i < 3; i++) {
        const sc_node *l = lists[i];
        if (!l || (l->kind == SC_SEQ && l->n > 0) || (i < 2 && l->kind == SC_MAP)) continue;
        return lt__sc_err(l, LT_INVALID, "sweep: %s: expected a non-empty list%s, got %s",
                          i == 0   ? "from"
                          : i == 1 ? "to"
                                   : "pairs",
                          i < 2 ? " or {each: [...]}" : "",
                          l->kind == SC_SEQ ? "an empty list" : lt__sc_kind_name(l));
    }
    if (!sw->mesh.n && !sw->shape.n && !sw->dtype.n && !sw->from && !sw->to && !sw->pairs)
        return lt__sc_err(sweep, LT_INVALID,
                          "sweep: defines no variables (mesh, shape, dtype, from, to, pairs)");
    int nd = sw->dtype.n;
    if (nd && !(sw->dlabels = lt__sc_alloc(a, sizeof *sw->dlabels * (size_t)nd))) return LT_NOMEM;
    for (int id = 0; id < nd; id++) {
        const char *ds;
        char lab[64];
        LT_TRY(lt__sc_str(sw->dtype.vals[id], "sweep: dtype", &ds));
        snprintf(lab, sizeof lab, "dtype=%s", ds);
        if (!(sw->dlabels[id] = lt__sc_strdup(a, lab))) return LT_NOMEM;
    }
    return sw->pairs ? read_pairs(a, sw) : LT_OK;
}

/* The blocks of cases (one per mesh and shape with cases), into *blocks
 * (heap, the caller frees) and *nblocks; used: (pairs) which pair some
 * block took. */
static lt_status sweep_blocks(sc_arena *a, const sc_node *sweep, sc_sweep *sw, int *used,
                              sw_block **blocks, int *nblocks) {
    int nm = sw->mesh.n ? sw->mesh.n : 1, ns = sw->shape.n ? sw->shape.n : 1,
        nd = sw->dtype.n ? sw->dtype.n : 1;
    int cap = 0;
    for (int im = 0; im < nm; im++) {
        const sc_node *mesh_node = NULL;
        const lt_mesh *mesh = NULL;
        const char *mlabel = "";
        LT_TRY(read_mesh(a, sw, im, &mesh_node, &mesh, &mlabel));
        for (int is = 0; is < ns; is++) {
            sw_block b;
            LT_TRY(make_block(a, sw, mesh_node, mesh, mlabel, is, used, &b));
            if ((int64_t)sw->ncases + (int64_t)nd * b.npl > LT_SC_MAX_CASES)
                return lt__sc_err(sweep, LT_OVERFLOW, "sweep: more than %d cases", LT_SC_MAX_CASES);
            if (b.npl == 0) continue;
            if (*nblocks == cap) {
                int ncap = cap ? 2 * cap : 16;
                sw_block *nb = lt__realloc(*blocks, sizeof *nb * (size_t)ncap);
                if (!nb) return lt__err(LT_NOMEM, "out of memory");
                *blocks = nb;
                cap = ncap;
            }
            b.first = sw->ncases;
            b.ncases = nd * b.npl;
            sw->ncases += b.ncases;
            (*blocks)[(*nblocks)++] = b;
        }
    }
    for (int i = 0; sw->pairs && i < sw->pairs->n; i++)
        if (!used[i])
            return lt__sc_err(
                sw->pairs->kids[i], LT_INVALID,
                "sweep: pairs: this pair's placement counts match none of the sweep's meshes");
    if (sw->ncases == 0)
        return lt__sc_err(
            sweep, LT_INVALID,
            "sweep: expands to no cases (no placement list fits the meshes and shapes)");
    return LT_OK;
}

lt_status lt__sc_parse_sweep(sc_arena *a, const sc_node *map, const sc_node *sweep,
                             sc_scenario *s) {
    static const char *const keys[] = {"mesh", "shape", "dtype", "from", "to", "pairs", NULL};
    LT_TRY(lt__sc_keys(sweep, "sweep", keys));
    sc_sweep *sw = lt__sc_alloc(a, sizeof *sw);
    if (!sw) return LT_NOMEM;
    memset(sw, 0, sizeof *sw);
    sw->map = map;
    sw->node = sweep;
    sw->name = s->name;
    LT_TRY(sweep_vars(a, map, sweep, sw));
    /* the blocks (those with cases), grown on the heap, then kept in the arena */
    int *used = sw->pairs ? lt__calloc((size_t)sw->pairs->n, sizeof *used) : NULL;
    sw_block *blocks = NULL;
    int nblocks = 0;
    lt_status st = sw->pairs && !used ? lt__err(LT_NOMEM, "out of memory") : LT_OK;
    if (!st) st = sweep_blocks(a, sweep, sw, used, &blocks, &nblocks);
    if (!st && !(sw->blocks = lt__sc_alloc(a, sizeof *sw->blocks * (size_t)nblocks))) st = LT_NOMEM;
    if (!st) memcpy(sw->blocks, blocks, sizeof *blocks * (size_t)nblocks);
    lt__free(blocks);
    lt__free(used);
    if (st) return st;
    sw->nblocks = nblocks;
    s->is_sweep = 1;
    s->sweep = sw;
    s->ncases = sw->ncases;
    s->cases = NULL;
    /* every case parsed once; the error is the first bad case's in case order */
    return lt__parallel_for(sw->ncases, check_case, s);
}

/* ---- one case ------------------------------------------------------------------------------ */

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
    if (!part[0]) return;
    size_t len = strlen(buf);
    join_label(buf + len, n - len, len ? "," : "", "", part);
}

/* What case i is made of: its block, variables and label ("mesh=2x2,S(0)->R"). */
typedef struct sw_case {
    const sw_block *b;
    sc_subst subst;
    char label[768];
} sw_case;

/* The block holding case i: the last whose first case is i or before. */
static const sw_block *block_of(const sc_sweep *sw, int i) {
    int lo = 0, hi = sw->nblocks - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (sw->blocks[mid].first <= i) lo = mid;
        else hi = mid - 1;
    }
    return &sw->blocks[lo];
}

static void case_parts(const sc_sweep *sw, int i, sw_case *out) {
    const sw_block *b = block_of(sw, i);
    int r = i - b->first, id = r / b->npl, ip = r % b->npl;
    sc_subst *s = &out->subst;
    char plabel[512] = "";
    out->b = b;
    s->n = 0;
    if (sw->mesh.n) s->names[s->n] = "mesh", s->vals[s->n++] = b->mesh_node;
    if (sw->shape.n) s->names[s->n] = "shape", s->vals[s->n++] = b->shape;
    if (sw->dtype.n) s->names[s->n] = "dtype", s->vals[s->n++] = sw->dtype.vals[id];
    if (sw->pairs) {
        const sw_pair *p = &sw->pair[b->pairs[ip]];
        join_label(plabel, sizeof plabel, p->label, "", "");
        s->names[s->n] = "from", s->vals[s->n++] = p->from;
        s->names[s->n] = "to", s->vals[s->n++] = p->to;
    } else if (sw->from && sw->to) {
        int f = ip / b->to.n, t = ip % b->to.n;
        join_label(plabel, sizeof plabel, b->from.labels[f], "->", b->to.labels[t]);
        s->names[s->n] = "from", s->vals[s->n++] = b->from.nodes[f];
        s->names[s->n] = "to", s->vals[s->n++] = b->to.nodes[t];
    } else if (sw->from) {
        join_label(plabel, sizeof plabel, "from=", "", b->from.labels[ip]);
        s->names[s->n] = "from", s->vals[s->n++] = b->from.nodes[ip];
    } else if (sw->to) {
        join_label(plabel, sizeof plabel, "to=", "", b->to.labels[ip]);
        s->names[s->n] = "to", s->vals[s->n++] = b->to.nodes[ip];
    }
    out->label[0] = '\0';
    append_label(out->label, sizeof out->label, b->mlabel);
    append_label(out->label, sizeof out->label, b->slabel);
    if (sw->dtype.n) append_label(out->label, sizeof out->label, sw->dlabels[id]);
    append_label(out->label, sizeof out->label, plabel);
}

size_t lt__sc_case_name(const sc_scenario *s, int i, char *buf, size_t cap, const lt_mesh **mesh) {
    if (!s->sweep) {
        if (mesh) *mesh = s->cases[i].mesh;
        return (size_t)snprintf(buf, cap, "%s", s->cases[i].name);
    }
    sw_case k;
    case_parts(s->sweep, i, &k);
    if (mesh) *mesh = k.b->mesh;
    return (size_t)snprintf(buf, cap, "%s[%s]", s->name, k.label);
}

const lt_mesh *lt__sc_case_mesh(const sc_scenario *s, int i) {
    return s->sweep ? block_of(s->sweep, i)->mesh : s->cases[i].mesh;
}

sc_case *lt__sc_case_at(sc_scenario *s, int i, sc_case *slot, sc_arena *a) {
    if (!s->sweep) return &s->cases[i];
    sw_case k;
    case_parts(s->sweep, i, &k);
    size_t nn = strlen(s->name), nl = strlen(k.label);   /* "<scenario>[<label>]" */
    char *name = lt__sc_alloc(a, nn + nl + 3);
    if (!name) return NULL;
    memcpy(name, s->name, nn);
    name[nn] = '[';
    memcpy(name + nn + 1, k.label, nl);
    memcpy(name + nn + 1 + nl, "]", 2);
    memset(slot, 0, sizeof *slot);
    slot->name = name;
    slot->sweep = s->sweep;
    slot->index = i;
    slot->mesh = k.b->mesh;
    slot->backend = s->sweep->backend;   /* the case runs there from its first step */
    slot->pos = (sc_pos){s->sweep->map->file, s->sweep->map->line, s->sweep->map->col};
    return slot;
}

lt_status lt__sc_case_build(sc_case *c, sc_arena *a) {
    const sc_sweep *sw = c->sweep;
    if (!sw) return LT_OK;
    sw_case k;
    case_parts(sw, c->index, &k);
    /* copy the scenario without its name, description and sweep */
    const sc_node *m = sw->map;
    sc_node *copy = lt__sc_alloc(a, sizeof *copy);
    if (!copy) return LT_NOMEM;
    *copy = *m;
    copy->kids = lt__sc_alloc(a, sizeof(sc_node *) * (size_t)(2 * m->n));
    if (!copy->kids) return LT_NOMEM;
    copy->n = 0;
    for (int i = 0; i < m->n; i++) {
        const char *key = m->kids[2 * i]->str;
        if (!strcmp(key, "name") || !strcmp(key, "description") || !strcmp(key, "sweep")) continue;
        copy->kids[2 * copy->n] = m->kids[2 * i];
        LT_TRY(lt__sc_copy(a, m->kids[2 * i + 1], &k.subst, &copy->kids[2 * copy->n + 1]));
        copy->n++;
    }
    c->ntensors = 0;
    c->nsteps = 0;
    return lt__sc_parse_case(a, copy, k.b->mesh_node, c);
}

void lt__sc_case_drop(sc_case *c) {
    if (!c->sweep) return;
    c->ntensors = 0;
    c->tensors = NULL;
    c->nsteps = 0;
    c->steps = NULL;
}
