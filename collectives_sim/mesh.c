/* collectives_sim/mesh.c — mesh construction, parsing, rank <-> coordinate,
 * groups along a mesh dim; the rank ids of a mesh in any rank order, and
 * flattened and sliced meshes (mesh_ids.c). */
#include "localtensor/collectives_sim/mesh.h"
#include "kernels/status_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

lt_status lt_mesh_init(lt_mesh *m, int ndim, const int *shape, const char *const *names) {
    if (ndim < 1 || ndim > LT_MESH_MAX_DIMS)
        return lt__err(LT_INVALID, "mesh must have 1 to %d dims, got %d", LT_MESH_MAX_DIMS, ndim);
    memset(m, 0, sizeof *m);
    m->ndim = ndim;
    int64_t world = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1)
            return lt__err(LT_INVALID, "mesh dim %d has size %d; sizes must be >= 1", i, shape[i]);
        world *= shape[i];
        if (world > LT_MESH_MAX_WORLD)
            return lt__err(LT_INVALID, "mesh has more than %d ranks", LT_MESH_MAX_WORLD);
        m->shape[i] = shape[i];
        const char *nm = names ? names[i] : NULL;
        if (nm && nm[0]) {
            if (strlen(nm) >= LT_MESH_NAME_MAX)
                return lt__err(LT_INVALID, "mesh dim name '%s' is longer than %d characters", nm,
                               LT_MESH_NAME_MAX - 1);
            for (int j = 0; j < i; j++)
                if (strcmp(m->names[j], nm) == 0)
                    return lt__err(LT_INVALID, "mesh dim name '%s' is used twice", nm);
            strcpy(m->names[i], nm);
        }
    }
    m->world = (int)world;
    m->world_size = (int)world;
    return LT_OK;
}

static int parse_size(const char *p, const char *end, int *out) {
    if (p == end) return 1;
    long long v = 0;
    for (const char *q = p; q < end; q++) {
        if (!isdigit((unsigned char)*q)) return 1;
        v = v * 10 + (*q - '0');
        if (v > LT_MESH_MAX_WORLD) return 2;
    }
    *out = (int)v;
    return 0;
}

static lt_status parse_shape(const char *s, lt_mesh *m);

/* "SHAPE", "[[0,2],[1,3]]" or "SHAPE:[[0,2],[1,3]]" (mesh_ids.c). */
lt_status lt_mesh_parse(const char *s, lt_mesh *m) {
    const char *colon = strchr(s, ':');
    if (s[0] == '[') return lt_mesh_parse_ranks(s, NULL, m);
    if (!colon) return parse_shape(s, m);
    size_t n = (size_t)(colon - s);
    char head[LT_MESH_MAX_DIMS * (LT_MESH_NAME_MAX + 8)];
    if (n >= sizeof head) return lt__err(LT_INVALID, "mesh '%s': too long before ':'", s);
    memcpy(head, s, n);
    head[n] = '\0';
    lt_mesh names;
    LT_TRY(parse_shape(head, &names));
    return lt_mesh_parse_ranks(colon + 1, &names, m);
}

static lt_status parse_shape(const char *s, lt_mesh *m) {
    int shape[LT_MESH_MAX_DIMS];
    char names[LT_MESH_MAX_DIMS][LT_MESH_NAME_MAX];
    const char *name_ptrs[LT_MESH_MAX_DIMS];
    int n = 0;
    int named = strchr(s, '=') != NULL;
    char sep = named ? ',' : 'x';
    const char *p = s;
    if (!*s) return lt__err(LT_INVALID, "mesh '': empty (expected e.g. 8, 2x4 or dp=2,tp=4)");
    for (;;) {
        const char *end = strchr(p, sep);
        if (!end) end = p + strlen(p);
        if (n == LT_MESH_MAX_DIMS)
            return lt__err(LT_INVALID, "mesh '%s': more than %d dims", s, LT_MESH_MAX_DIMS);
        const char *num = p;
        names[n][0] = '\0';
        if (named) {
            const char *eq = memchr(p, '=', (size_t)(end - p));
            if (!eq || eq == p)
                return lt__err(LT_INVALID, "mesh '%s': entry '%.*s' is not name=size", s,
                               (int)(end - p), p);
            if (eq - p >= LT_MESH_NAME_MAX)
                return lt__err(LT_INVALID, "mesh '%s': dim name too long", s);
            for (const char *q = p; q < eq; q++)
                if (!isalnum((unsigned char)*q) && *q != '_')
                    return lt__err(LT_INVALID,
                                   "mesh '%s': dim name '%.*s' must be letters, digits or _", s,
                                   (int)(eq - p), p);
            memcpy(names[n], p, (size_t)(eq - p));
            names[n][eq - p] = '\0';
            num = eq + 1;
        }
        int rc = parse_size(num, end, &shape[n]);
        if (rc == 1)
            return lt__err(
                LT_INVALID,
                "mesh '%s': '%.*s' is not a positive integer (expected e.g. 8, 2x4 or dp=2,tp=4)",
                s, (int)(end - num), num);
        if (rc == 2)
            return lt__err(LT_INVALID, "mesh '%s': more than %d ranks", s, LT_MESH_MAX_WORLD);
        if (shape[n] < 1)
            return lt__err(LT_INVALID, "mesh '%s': dim %d has size 0; sizes must be >= 1", s, n);
        name_ptrs[n] = names[n];
        n++;
        if (!*end) break;
        p = end + 1;
    }
    lt_status st = lt_mesh_init(m, n, shape, name_ptrs);
    if (st) return lt__err_ctx(st, "mesh '%s'", s);
    return LT_OK;
}

char *lt_mesh_format(const lt_mesh *m, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->ndim && used < n; i++) {
        int w;
        if (m->names[i][0])
            w = snprintf(buf + used, n - used, "%s%s=%d", i ? "," : "", m->names[i], m->shape[i]);
        else
            w = snprintf(buf + used, n - used, "%s%d", i ? "x" : "", m->shape[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (m->permuted && used + 1 < n) {   /* the rank ids: "dp=2,tp=2:[[0,2],[1,3]]" */
        buf[used++] = ':';
        lt_mesh_format_ranks(m, buf + used, n - used);
    }
    return buf;
}

int lt_mesh_equal(const lt_mesh *a, const lt_mesh *b) {
    if (a->ndim != b->ndim || a->permuted != b->permuted) return 0;
    if (a->permuted && (a->world_size != b->world_size ||
                        memcmp(a->ids, b->ids, (size_t)a->world * sizeof *a->ids) != 0))
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i] || a->names[i][0] != b->names[i][0] ||
            (a->names[i][0] && strcmp(a->names[i], b->names[i]) != 0))
            return 0;
    return 1;
}

/* Called for every rank of every layout: a power-of-two size (the usual
 * mesh) takes a mask and a shift instead of a division, the same digits
 * for rank >= 0 (a negative rank keeps the division's). */
void lt_mesh_coord(const lt_mesh *m, int rank, int *coord) {
    for (int i = m->ndim - 1; i >= 0; i--) {
        unsigned s = (unsigned)m->shape[i];
        if (rank >= 0 && s && (s & (s - 1)) == 0) {
            coord[i] = (int)((unsigned)rank & (s - 1));
            rank = (int)((unsigned)rank >> __builtin_ctz(s));
        } else {
            coord[i] = rank % m->shape[i];
            rank /= m->shape[i];
        }
    }
}

int lt_mesh_rank(const lt_mesh *m, const int *coord) {
    int r = 0;
    for (int i = 0; i < m->ndim; i++) r = r * m->shape[i] + coord[i];
    return r;
}

int lt_mesh_dim_by_name(const lt_mesh *m, const char *name) {
    for (int i = 0; i < m->ndim; i++)
        if (m->names[i][0] && strcmp(m->names[i], name) == 0) return i;
    return -1;
}

/* stride of mesh dim d in rank numbering */
static int dim_stride(const lt_mesh *m, int d) {
    int s = 1;
    for (int j = d + 1; j < m->ndim; j++) s *= m->shape[j];
    return s;
}

int lt_mesh_ngroups(const lt_mesh *m, int d) { return m->world / m->shape[d]; }

void lt_mesh_group(const lt_mesh *m, int d, int g, int *ranks) {
    int st = dim_stride(m, d);
    /* g enumerates (outer, inner) pairs: outer over dims before d, inner over dims after */
    int outer = g / st, inner = g % st;
    int base = outer * m->shape[d] * st + inner;
    for (int c = 0; c < m->shape[d]; c++) ranks[c] = base + c * st;
}

int lt_mesh_group_of(const lt_mesh *m, int d, int rank, int *pos) {
    int st = dim_stride(m, d);
    int inner = rank % st;
    int c = (rank / st) % m->shape[d];
    int outer = rank / (st * m->shape[d]);
    if (pos) *pos = c;
    return outer * st + inner;
}
