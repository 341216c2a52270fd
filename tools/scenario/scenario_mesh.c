/* tools/scenario/scenario_mesh.c — a scenario's `mesh:` written as a
 * mapping: a shape or a rank array (torch's DeviceMesh(device, ranks)),
 * dim names, the world it lives in, and the meshes torch derives from one:
 * a flattened dim (mesh[dims]._flatten(as)) and a slice (mesh[dims] as
 * seen by one rank). scenarios/README.md lists the keys;
 * docs/SEMANTICS.md §1.1 the rules (collectives_sim/mesh_ids.c). */
#include <string.h>

#include "kernels/status_impl.h"
#include "tools/scenario/scenario_impl.h"

/* The nested lists of `ranks:` into ids (row-major); shape[nd] is the
 * shape its first rows set (ranks_shape). Every row of a level has one
 * length. */
static lt_status ranks_walk(const sc_node *n, int lv, const int *shape, int nd, int *ids,
                            int *nids) {
    if (n->kind != SC_SEQ || n->n < 1)
        return lt__sc_err(n, LT_INVALID, "mesh ranks: expected a non-empty list (of rank ids or "
                          "of lists), got %s", n->kind == SC_SEQ ? "[]" : lt__sc_kind_name(n));
    if (n->n != shape[lv])
        return lt__sc_err(n, LT_INVALID, "mesh ranks: rows of %d and %d ranks (every row of one "
                          "length)", shape[lv], n->n);
    for (int i = 0; i < n->n; i++) {
        if (lv + 1 < nd) {
            LT_TRY(ranks_walk(n->kids[i], lv + 1, shape, nd, ids, nids));
            continue;
        }
        if (*nids == LT_MESH_MAX_IDS)
            return lt__sc_err(n, LT_INVALID, "mesh ranks: more than %d ranks", LT_MESH_MAX_IDS);
        LT_TRY(lt__sc_int(n->kids[i], "mesh rank id", 0, LT_MESH_MAX_WORLD - 1, &ids[(*nids)++]));
    }
    return LT_OK;
}

/* The shape of a rank array, read down its first rows, into shape[*nd]. */
static lt_status ranks_shape(const sc_node *n, int *shape, int *nd) {
    *nd = 0;
    for (; n->kind == SC_SEQ && n->n >= 1; n = n->kids[0]) {
        if (*nd == LT_MESH_MAX_DIMS)
            return lt__sc_err(n, LT_INVALID, "mesh ranks: more than %d nested lists",
                              LT_MESH_MAX_DIMS);
        shape[(*nd)++] = n->n;
    }
    if (*nd == 0)
        return lt__sc_err(n, LT_INVALID, "mesh ranks: expected a list such as [[0, 2], [1, 3]]");
    return LT_OK;
}

/* `dims: [dp, cp]` of a flatten or slice map into dims; returns the count. */
static lt_status dims_of(const sc_node *map, const char *what, const lt_mesh *m, int *dims,
                         int *n) {
    const sc_node *d;
    LT_TRY(lt__sc_need(map, what, "dims", &d));
    if (d->kind != SC_SEQ || d->n < 1 || d->n > m->ndim)
        return lt__sc_err(d, LT_INVALID, "%s: dims: expected a list of 1 to %d mesh dims", what,
                          m->ndim);
    for (int i = 0; i < d->n; i++) {
        const sc_node *k = d->kids[i];
        int v = -1;
        if (k->kind == SC_SCALAR) v = lt_mesh_dim_by_name(m, k->str);
        if (v < 0) {
            lt_status st = lt__sc_int(k, "mesh dim", 0, m->ndim - 1, &v);
            if (st) return lt__sc_err(k, LT_INVALID, "%s: '%s' is not a dim of the mesh", what,
                                      k->kind == SC_SCALAR ? k->str : "?");
        }
        dims[i] = v;
    }
    *n = d->n;
    return LT_OK;
}

lt_status lt__sc_mesh_flatten(const sc_node *f, lt_mesh *m) {
    static const char *const keys[] = {"dims", "as", NULL};
    if (f->kind != SC_MAP)
        return lt__sc_err(f, LT_INVALID, "mesh flatten: expected {dims: [dp, cp], as: dp_cp} "
                          "(as: defaults to the names joined by '_')");
    LT_TRY(lt__sc_keys(f, "mesh flatten", keys));
    int dims[LT_MESH_MAX_DIMS], n;
    const char *as = NULL;
    const sc_node *a = lt__sc_get(f, "as");
    LT_TRY(dims_of(f, "mesh flatten", m, dims, &n));
    char joined[LT_MESH_NAME_MAX] = "";   /* torch's default: the names joined by '_' */
    for (int i = 0; !a && i < n && m->names[dims[i]][0]; i++) {
        size_t used = strlen(joined), len = strlen(m->names[dims[i]]);
        if (used + len + 2 > sizeof joined) break;
        if (used) joined[used++] = '_';
        memcpy(joined + used, m->names[dims[i]], len + 1);
        if (i + 1 == n) as = joined;
    }
    if (a) LT_TRY(lt__sc_ident(a, "mesh flatten as", &as));
    lt_mesh out;
    lt_status st = lt_mesh_flatten(m, dims, n, as, &out);
    if (st) return lt__sc_err_at(f, st);
    *m = out;
    return LT_OK;
}

static lt_status apply_slice(const sc_node *s, lt_mesh *m) {
    static const char *const keys[] = {"dims", "rank", NULL};
    if (s->kind != SC_MAP)
        return lt__sc_err(s, LT_INVALID, "mesh slice: expected {dims: [tp], rank: 0}");
    LT_TRY(lt__sc_keys(s, "mesh slice", keys));
    int dims[LT_MESH_MAX_DIMS], n, rank;
    const sc_node *r;
    LT_TRY(dims_of(s, "mesh slice", m, dims, &n));
    LT_TRY(lt__sc_need(s, "mesh slice", "rank", &r));
    LT_TRY(lt__sc_int(r, "mesh slice rank", 0, LT_MESH_MAX_WORLD - 1, &rank));
    lt_mesh out;
    lt_status st = lt_mesh_slice(m, dims, n, rank, &out);
    if (st) return lt__sc_err_at(s, st);
    *m = out;
    return LT_OK;
}

/* shape: a list or one number, into shape[*nd]. */
static lt_status shape_of(const sc_node *sh, const char *what, int *shape, int *nd) {
    *nd = 0;
    if (sh->kind == SC_SEQ) {
        if (sh->n < 1 || sh->n > LT_MESH_MAX_DIMS)
            return lt__sc_err(sh, LT_INVALID, "%s: shape: a mesh has 1 to %d dims, got %d", what,
                              LT_MESH_MAX_DIMS, sh->n);
        for (int i = 0; i < sh->n; i++)
            LT_TRY(lt__sc_int(sh->kids[i], "mesh shape", 1, LT_MESH_MAX_WORLD, &shape[(*nd)++]));
        return LT_OK;
    }
    LT_TRY(lt__sc_int(sh, "mesh shape", 1, LT_MESH_MAX_WORLD, &shape[0]));
    *nd = 1;
    return LT_OK;
}

/* ids: a scratch of LT_MESH_MAX_IDS ints (on the caller's stack). */
static lt_status base_mesh(const sc_node *n, const char *what, int *ids, lt_mesh *out) {
    const sc_node *sh = lt__sc_get(n, "shape"), *rk = lt__sc_get(n, "ranks");
    const sc_node *nm = lt__sc_get(n, "names"), *wo = lt__sc_get(n, "world");
    int shape[LT_MESH_MAX_DIMS], nd = 0, rshape[LT_MESH_MAX_DIMS], rnd = 0, nids = 0, world = 0;
    const char *names[LT_MESH_MAX_DIMS] = {0};
    if (!sh && !rk)
        return lt__sc_err(n, LT_INVALID, "%s: give shape (e.g. [2, 2]) or ranks (e.g. "
                          "[[0, 2], [1, 3]])", what);
    if (sh) LT_TRY(shape_of(sh, what, shape, &nd));
    if (rk) {
        LT_TRY(ranks_shape(rk, rshape, &rnd));
        LT_TRY(ranks_walk(rk, 0, rshape, rnd, ids, &nids));
        if (sh && (rnd != nd || memcmp(rshape, shape, (size_t)nd * sizeof *shape)))
            return lt__sc_err(rk, LT_INVALID, "%s: ranks: the rank array's shape is not the "
                              "mesh shape", what);
        nd = rnd;
        memcpy(shape, rshape, sizeof shape);
    }
    if (wo) LT_TRY(lt__sc_int(wo, "mesh world", 1, LT_MESH_MAX_WORLD, &world));
    if (wo && !rk) return lt__sc_err(wo, LT_INVALID, "%s: world: goes with ranks", what);
    if (nm) {
        if (nm->kind != SC_SEQ || nm->n != nd)
            return lt__sc_err(nm, LT_INVALID, "%s: names: expected a list of %d name%s, got %s",
                              what, nd, nd == 1 ? "" : "s",
                              nm->kind == SC_SEQ ? "a list of another length"
                                                 : lt__sc_kind_name(nm));
        for (int i = 0; i < nd; i++) LT_TRY(lt__sc_ident(nm->kids[i], "mesh names", &names[i]));
    }
    lt_status st = rk ? lt_mesh_init_ranks(out, nd, shape, ids, world, names)
                      : lt_mesh_init(out, nd, shape, names);
    if (st) return lt__sc_err_at(rk ? rk : n, st);
    return LT_OK;
}

lt_status lt__sc_mesh_map(const sc_node *n, const char *what, lt_mesh *out) {
    static const char *const keys[] = {"shape", "names", "ranks", "world", "flatten", "slice",
                                       NULL};
    LT_TRY(lt__sc_keys(n, what, keys));
    int ids[LT_MESH_MAX_IDS];
    LT_TRY(base_mesh(n, what, ids, out));
    const sc_node *f = lt__sc_get(n, "flatten"), *s = lt__sc_get(n, "slice");
    if (f) LT_TRY(lt__sc_mesh_flatten(f, out));
    if (s) LT_TRY(apply_slice(s, out));
    return LT_OK;
}
