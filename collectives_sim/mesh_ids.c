/* collectives_sim/mesh_ids.c — meshes in any rank order (torch's
 * DeviceMesh(device, ranks)), over a subset of the world, and the meshes
 * torch makes from one: mesh[dims] (a slice) and mesh[dims]._flatten().
 * Positions stay row-major (mesh.h); only the rank id at each position is
 * new, so the layout math, groups and plans of collectives_sim/mesh.c and
 * above are the same for every rank order (docs/SEMANTICS.md §1.1). */
#include "localtensor/collectives_sim/mesh.h"
#include "kernels/alloc.h"
#include "kernels/status_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sets the ids of m (m->world of them in ids) and its world size (0: the
 * largest id + 1); a permutation of 0..world-1 over a world of that size is
 * the plain mesh (permuted 0). */
static lt_status set_ids(lt_mesh *m, const int *ids, int world_size) {
    int W = m->world, top = -1, arange = 1;
    for (int p = 0; p < W; p++) {
        if (ids[p] < 0 || ids[p] >= LT_MESH_MAX_WORLD)
            return lt__err(LT_INVALID, "mesh rank %d at position %d: rank ids must be in 0..%d",
                           ids[p], p, LT_MESH_MAX_WORLD - 1);
        if (ids[p] > top) top = ids[p];
        if (ids[p] != p) arange = 0;
    }
    if (world_size == 0) world_size = top + 1;
    if (world_size > LT_MESH_MAX_WORLD)
        return lt__err(LT_INVALID, "mesh world of %d ranks: at most %d", world_size,
                       LT_MESH_MAX_WORLD);
    if (top >= world_size)
        return lt__err(LT_INVALID, "mesh rank %d is not in a world of %d ranks (0..%d)", top,
                       world_size, world_size - 1);
    if (arange && world_size == W) {
        m->permuted = 0;
        m->world_size = W;
        memset(m->ids, 0, sizeof m->ids);
        return LT_OK;
    }
    if (W > LT_MESH_MAX_IDS)
        return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                            "not supported yet: a mesh of %d positions in an order other than "
                            "0..%d (at most %d)", W, W - 1, LT_MESH_MAX_IDS);
    unsigned char *seen = lt__calloc((size_t)world_size, 1);
    if (!seen) return lt__err(LT_NOMEM, "mesh: out of memory for %d rank ids", world_size);
    for (int p = 0; p < W; p++) {
        if (seen[ids[p]]) {
            lt__free(seen);
            return lt__err(LT_INVALID, "mesh rank %d appears twice (again at position %d)",
                           ids[p], p);
        }
        seen[ids[p]] = 1;
    }
    lt__free(seen);
    m->permuted = 1;
    m->world_size = world_size;
    memset(m->ids, 0, sizeof m->ids);
    for (int p = 0; p < W; p++) m->ids[p] = (uint16_t)ids[p];
    return LT_OK;
}

/* Nothing allocated is kept. */
lt_status lt_mesh_init_ranks(lt_mesh *m, int ndim, const int *shape, const int *ranks,
                             int world_size, const char *const *names) {
    LT_TRY(lt_mesh_init(m, ndim, shape, names));
    if (world_size < 0)
        return lt__err(LT_INVALID, "mesh world size %d: must be >= 0 (0: the largest id + 1)",
                       world_size);
    return set_ids(m, ranks, world_size);
}

int lt_mesh_pos_of(const lt_mesh *m, int id) {
    if (!m->permuted) return id >= 0 && id < m->world ? id : -1;
    for (int p = 0; p < m->world; p++)
        if (m->ids[p] == id) return p;
    return -1;
}

int lt_mesh_world_size(const lt_mesh *m) { return m->permuted ? m->world_size : m->world; }

/* ---- the text of a rank array ---------------------------------------------------------- */

typedef struct {
    const char *s, *p;
    int depth, shape[LT_MESH_MAX_DIMS], seen[LT_MESH_MAX_DIMS], n;
    int ids[LT_MESH_MAX_IDS];
} ids_text;

static void skip_ws(ids_text *t) {
    while (isspace((unsigned char)*t->p)) t->p++;
}

/* One list at nesting level lv (its items lists, or numbers at the deepest
 * level, which the first list down fixes). */
static lt_status list_at(ids_text *t, int lv) {
    if (lv >= LT_MESH_MAX_DIMS)
        return lt__err(LT_INVALID, "mesh ranks '%s': more than %d nested lists", t->s,
                       LT_MESH_MAX_DIMS);
    if (*t->p != '[')
        return lt__err(LT_INVALID, "mesh ranks '%s': expected '[' at offset %d", t->s,
                       (int)(t->p - t->s));
    t->p++;
    skip_ws(t);
    int count = 0;
    while (*t->p != ']') {
        if (count) {
            if (*t->p != ',')
                return lt__err(LT_INVALID, "mesh ranks '%s': expected ',' or ']' at offset %d",
                               t->s, (int)(t->p - t->s));
            t->p++;
            skip_ws(t);
        }
        if (*t->p == '[') {
            if (t->depth && lv + 1 >= t->depth)
                return lt__err(LT_INVALID, "mesh ranks '%s': rows nested unevenly", t->s);
            LT_TRY(list_at(t, lv + 1));
        } else {
            if (!t->depth) t->depth = lv + 1;
            if (lv + 1 != t->depth)
                return lt__err(LT_INVALID, "mesh ranks '%s': rows nested unevenly", t->s);
            if (!isdigit((unsigned char)*t->p))
                return lt__err(LT_INVALID, "mesh ranks '%s': expected a rank id at offset %d",
                               t->s, (int)(t->p - t->s));
            char *end;
            long v = strtol(t->p, &end, 10);
            if (t->n == LT_MESH_MAX_IDS)
                return lt__err(LT_INVALID, "mesh ranks '%s': more than %d ranks", t->s,
                               LT_MESH_MAX_IDS);
            if (v >= LT_MESH_MAX_WORLD)
                return lt__err(LT_INVALID, "mesh ranks '%s': rank id '%.*s' is over %d", t->s,
                               (int)(end - t->p), t->p, LT_MESH_MAX_WORLD - 1);
            t->ids[t->n++] = (int)v;
            t->p = end;
        }
        count++;
        skip_ws(t);
    }
    t->p++;
    skip_ws(t);
    if (count == 0) return lt__err(LT_INVALID, "mesh ranks '%s': an empty list", t->s);
    if (t->seen[lv] && t->shape[lv] != count)
        return lt__err(LT_INVALID, "mesh ranks '%s': rows of %d and %d ranks (every row of one "
                       "length)", t->s, t->shape[lv], count);
    t->seen[lv] = 1;
    t->shape[lv] = count;
    return LT_OK;
}

/* t is large (the ids): on the heap; freed here. */
lt_status lt_mesh_parse_ranks(const char *s, const lt_mesh *names, lt_mesh *m) {
    ids_text *t = lt__calloc(1, sizeof *t);
    if (!t) return lt__err(LT_NOMEM, "mesh ranks: out of memory");
    t->s = t->p = s;
    skip_ws(t);
    lt_status st = list_at(t, 0);
    long world = 0;
    if (!st && strncmp(t->p, "of", 2) == 0 && isspace((unsigned char)t->p[2])) {
        char *end;
        world = strtol(t->p + 2, &end, 10);
        if (end == t->p + 2 || world < 1 || world > LT_MESH_MAX_WORLD)
            st = lt__err(LT_INVALID, "mesh ranks '%s': 'of' takes a world size 1..%d", s,
                         LT_MESH_MAX_WORLD);
        t->p = end;
        skip_ws(t);
    }
    if (!st && *t->p)
        st = lt__err(LT_INVALID, "mesh ranks '%s': text after the rank array at offset %d", s,
                     (int)(t->p - s));
    if (!st && names && names->ndim != t->depth)
        st = lt__err(LT_INVALID, "mesh ranks '%s': %d dims, but the mesh names %d", s, t->depth,
                     names->ndim);
    for (int i = 0; !st && names && i < t->depth; i++)
        if (names->shape[i] != t->shape[i])
            st = lt__err(LT_INVALID, "mesh ranks '%s': dim %d has %d ranks, the mesh says %d", s,
                         i, t->shape[i], names->shape[i]);
    if (!st) {
        const char *nm[LT_MESH_MAX_DIMS];
        for (int i = 0; i < t->depth; i++) nm[i] = names ? names->names[i] : NULL;
        st = lt_mesh_init_ranks(m, t->depth, t->shape, t->ids, (int)world, nm);
        if (st) st = lt__err_ctx(st, "mesh ranks '%s'", s);
    }
    lt__free(t);
    return st;
}

/* Appends the ids of positions [p0, p0 + prod(shape[d..])) as nested lists. */
static void put_ids(const lt_mesh *m, int d, int p0, lt__sbuf *o) {
    int step = 1;
    for (int j = d + 1; j < m->ndim; j++) step *= m->shape[j];
    lt__sb_printf(o, "[");
    for (int c = 0; c < m->shape[d]; c++) {
        if (c) lt__sb_printf(o, ",");
        if (d + 1 < m->ndim) put_ids(m, d + 1, p0 + c * step, o);
        else lt__sb_printf(o, "%d", lt_mesh_rank_id(m, p0 + c));
    }
    lt__sb_printf(o, "]");
}

char *lt_mesh_format_ranks(const lt_mesh *m, char *buf, size_t n) {
    lt__sbuf o = {buf, n, 0};
    put_ids(m, 0, 0, &o);
    if (lt_mesh_world_size(m) != m->world) lt__sb_printf(&o, " of %d", lt_mesh_world_size(m));
    lt__sb_finish(&o);
    return buf;
}

/* ---- slices and flattened dims ---------------------------------------------------------- */

/* dims[n] valid, distinct and ascending. */
static lt_status check_dims(const lt_mesh *m, const int *dims, int n, const char *what) {
    if (n < 1 || n > m->ndim)
        return lt__err(LT_INVALID, "%s: %d mesh dims of a %d-dim mesh", what, n, m->ndim);
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0 || dims[i] >= m->ndim)
            return lt__err(LT_INVALID, "%s: mesh dim %d is not in 0..%d", what, dims[i],
                           m->ndim - 1);
        if (i && dims[i] <= dims[i - 1])
            return lt__err(LT_INVALID, "%s: mesh dims must be distinct and in mesh order (as "
                           "torch's mesh[...]), got %d after %d", what, dims[i], dims[i - 1]);
    }
    return LT_OK;
}

/* What a position of the result is made of: for each result dim, the
 * source dims (row-major) it spans; the source position of result
 * position q. */
typedef struct {
    int ndim, nsrc[LT_MESH_MAX_DIMS], src[LT_MESH_MAX_DIMS][LT_MESH_MAX_DIMS];
    int fixed[LT_MESH_MAX_DIMS];   /* source coordinate of dims no result dim spans, else -1 */
} mesh_map;

static int map_source(const lt_mesh *m, const mesh_map *mm, const lt_mesh *out, int q) {
    int oc[LT_MESH_MAX_DIMS], c[LT_MESH_MAX_DIMS];
    lt_mesh_coord(out, q, oc);
    for (int i = 0; i < m->ndim; i++) c[i] = mm->fixed[i];
    for (int d = 0; d < mm->ndim; d++) {
        int v = oc[d];
        for (int k = mm->nsrc[d] - 1; k >= 0; k--) {
            int s = mm->src[d][k];
            c[s] = v % m->shape[s];
            v /= m->shape[s];
        }
    }
    return lt_mesh_rank(m, c);
}

/* out (its shape and names set) gets the ids of m through mm. */
static lt_status map_ids(const lt_mesh *m, const mesh_map *mm, lt_mesh *out) {
    int *ids = lt__malloc((size_t)out->world * sizeof *ids);
    if (!ids) return lt__err(LT_NOMEM, "mesh: out of memory for %d rank ids", out->world);
    for (int q = 0; q < out->world; q++) ids[q] = lt_mesh_rank_id(m, map_source(m, mm, out, q));
    lt_status st = set_ids(out, ids, lt_mesh_world_size(m));
    lt__free(ids);
    return st;
}

/* Builds out from mm's result dims (sizes the products of their sources). */
static lt_status map_mesh(const lt_mesh *m, const mesh_map *mm, const char *const *names,
                          lt_mesh *out) {
    int shape[LT_MESH_MAX_DIMS];
    for (int d = 0; d < mm->ndim; d++) {
        shape[d] = 1;
        for (int k = 0; k < mm->nsrc[d]; k++) shape[d] *= m->shape[mm->src[d][k]];
    }
    LT_TRY(lt_mesh_init(out, mm->ndim, shape, names));
    return map_ids(m, mm, out);
}

lt_status lt_mesh_flatten(const lt_mesh *m, const int *dims, int n, const char *name,
                          lt_mesh *out) {
    LT_TRY(check_dims(m, dims, n, "flatten"));
    mesh_map mm = {0};
    const char *names[LT_MESH_MAX_DIMS];
    for (int i = 0; i < m->ndim; i++) mm.fixed[i] = -1;
    for (int i = 0, k = 0; i < m->ndim; i++) {
        int in = k < n && dims[k] == i;
        if (in) k++;
        if (in && i != dims[0]) continue;
        int d = mm.ndim++;
        if (in) {
            for (int j = 0; j < n; j++) mm.src[d][j] = dims[j];
            mm.nsrc[d] = n;
            names[d] = name;
        } else {
            mm.src[d][0] = i;
            mm.nsrc[d] = 1;
            names[d] = m->names[i];
        }
    }
    lt_status st = map_mesh(m, &mm, names, out);
    if (st) return lt__err_ctx(st, "flatten of %d mesh dims as '%s'", n, name ? name : "");
    return LT_OK;
}

lt_status lt_mesh_slice(const lt_mesh *m, const int *dims, int n, int rank, lt_mesh *out) {
    LT_TRY(check_dims(m, dims, n, "mesh slice"));
    int pos = lt_mesh_pos_of(m, rank);
    if (pos < 0)
        return lt__err(LT_INVALID, "mesh slice: rank %d is not in the mesh", rank);
    mesh_map mm = {0};
    const char *names[LT_MESH_MAX_DIMS];
    lt_mesh_coord(m, pos, mm.fixed);
    for (int k = 0; k < n; k++) {
        mm.fixed[dims[k]] = -1;
        mm.src[k][0] = dims[k];
        mm.nsrc[k] = 1;
        names[k] = m->names[dims[k]];
    }
    mm.ndim = n;
    return map_mesh(m, &mm, names, out);
}

int lt_mesh_dims_parse(const lt_mesh *m, const char *list, int *dims) {
    int n = 0;
    const char *p = list;
    for (;;) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && t[-1] == ' ') t--;
        char nm[LT_MESH_NAME_MAX];
        if (t == p || t - p >= LT_MESH_NAME_MAX || n == LT_MESH_MAX_DIMS) {
            lt__err(LT_INVALID, "mesh dims '%s': expected names or indices split by ','", list);
            return -1;
        }
        memcpy(nm, p, (size_t)(t - p));
        nm[t - p] = '\0';
        int d = lt_mesh_dim_by_name(m, nm);
        if (d < 0 && isdigit((unsigned char)nm[0]) && strspn(nm, "0123456789") == strlen(nm))
            d = atoi(nm);
        if (d < 0 || d >= m->ndim) {
            lt__err(LT_INVALID, "mesh dims '%s': '%s' is not a dim of the mesh", list, nm);
            return -1;
        }
        dims[n++] = d;
        if (!*e) break;
        p = e + 1;
    }
    if (check_dims(m, dims, n, list)) return -1;
    return n;
}
