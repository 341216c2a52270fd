/* tools/render/render.c — per-rank tables, ownership pictures and JSON of a DTensor. */
#include "tools/render/render.h"
#include "tools/render/json_alloc.h"
#include "kernels/alloc.h"
#include "kernels/memlimit_impl.h"
#include "localtensor/ragged_impl.h"

#include <stdlib.h>
#include <string.h>

void lt_render_values(FILE *f, const lt_tensor *t, int64_t max) {
    int64_t n = lt_numel(t);
    fputc('[', f);
    for (int64_t i = 0; i < n && i < max; i++) fprintf(f, "%s%g", i ? ", " : "", lt_get_flat(t, i));
    if (n > max) fprintf(f, ", ... (%lld elements)", (long long)n);
    fputc(']', f);
}

void lt_render_header(FILE *f, const lt_dtensor *dt) {
    char mesh[128], shape[128], pl[512];
    lt_mesh_format(lt_dtensor_mesh(dt), mesh, sizeof mesh);
    lt_shape_format(dt->ndim, dt->shape, shape, sizeof shape);
    lt_placements_format(dt->placements, lt_dtensor_mesh(dt)->ndim, pl, sizeof pl);
    fprintf(f, "mesh %s (%d rank%s), global shape %s, %s, placements %s\n", mesh,
            lt_dtensor_mesh(dt)->world, lt_dtensor_mesh(dt)->world == 1 ? "" : "s", shape,
            lt_dtype_name(dt->dtype), pl);
}

lt_status lt_render_layout(const lt_dtensor *dt, lt_dtensor *buf, const lt_dtensor **v) {
    *v = dt;
    if (!lt_placements_have_ragged(dt->placements, lt_dtensor_mesh(dt)->ndim)) return LT_OK;
    LT_TRY(lt__ragged_as_view(dt, buf));
    *v = buf;
    return LT_OK;
}

/* The RaggedShard's view note under a table (picture 0) or above a
 * picture (1) of dt, when it flattens 2 or more dims (k = 1: the view is
 * the tensor itself). */
static void ragged_note(FILE *f, const lt_dtensor *dt, const lt_dtensor *v, int picture) {
    char s[128];
    if (v == dt || v->ndim == dt->ndim) return;
    int k = dt->ndim - v->ndim + 1;
    lt_shape_format(v->ndim, v->shape, s, sizeof s);
    if (picture)
        fprintf(f, "(the picture of the view %s: row i is flattened row i of dims 0..%d)\n", s,
                k - 1);
    else
        fprintf(f,
                "RaggedShard: dims 0..%d are flattened into %lld rows; shapes and offsets are "
                "those of the view %s\n",
                k - 1, (long long)v->shape[0], s);
}

static void coord_str(const lt_mesh *m, int rank, char *buf, size_t n) {
    int c[LT_MESH_MAX_DIMS];
    lt_mesh_coord(m, rank, c);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->ndim && used < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%d", i ? "," : "(", c[i]);
        if (w < 0) return;
        used += (size_t)w;
    }
    if (used + 1 < n) strcat(buf, ")");
}

/* Values of t row by row, nested as the shape nests ("[[0, 1],\n [10, 11]]"),
 * every row after the first indented to column `indent`; at most max values
 * in all, then "... (N elements)" and the brackets closed. */
static void render_nested(FILE *f, const lt_tensor *t, int64_t max, int indent) {
    int nd = t->ndim, depth = 0;
    int64_t n = lt_numel(t), shown = 0;
    int64_t row = t->shape[nd - 1], nrows = n / row;   /* n > 0: row > 0 */
    for (int64_t rr = 0; rr < nrows; rr++) {
        /* brackets that open before this row: one per trailing zero of its index */
        int open = 1;
        int64_t q = rr;
        for (int d = nd - 2; d >= 0 && q % t->shape[d] == 0; d--) open++, q /= t->shape[d];
        if (rr) fprintf(f, ",\n%*s", indent + depth, "");
        for (int k = 0; k < open; k++) fputc('[', f);
        depth += open;
        for (int64_t j = 0; j < row; j++, shown++) {
            if (shown == max) {
                fprintf(f, "%s... (%lld elements)", j ? ", " : "", (long long)n);
                for (; depth > 0; depth--) fputc(']', f);
                return;
            }
            fprintf(f, "%s%g", j ? ", " : "", lt_get_flat(t, rr * row + j));
        }
        int close = 1;
        q = rr + 1;
        for (int d = nd - 2; d >= 0 && q % t->shape[d] == 0; d--) close++, q /= t->shape[d];
        for (int k = 0; k < close; k++) fputc(']', f);
        depth -= close;
    }
}

lt_status lt_render_ranks(FILE *f, const lt_dtensor *dt, int max_values) {
    const lt_mesh *m = lt_dtensor_mesh(dt);
    const lt_dtensor *tensor = dt;
    lt_dtensor vbuf;
    int any_strided = 0;
    LT_TRY(lt_render_layout(tensor, &vbuf, &dt));   /* from here on, what layout math knows */
    fprintf(f, "%-5s %-10s %-14s %-15s %s\n", "rank", "coord", "local_shape", "global_offset",
            "values");
    for (int r = 0; r < m->world; r++) {
        lt_rank_layout l;
        LT_TRY(lt_spec_layout_rank(lt_dtensor_spec(dt), r, &l));
        int strided = 0;
        for (int d = 0; d < dt->ndim; d++) strided |= !l.contiguous[d];
        any_strided |= strided;
        char c[64], s1[96], s2[100];
        coord_str(m, r, c, sizeof c);
        lt_shape_format(dt->ndim, l.global_offset, s2, sizeof s2);
        if (strided) strcat(s2, "*");
        fprintf(f, "%-5d %-10s %-14s %-15s ", lt_mesh_rank_id(m, r), c,   /* the rank id */
                lt_shape_format(dt->ndim, l.local_shape, s1, sizeof s1), s2);
        lt_rank_layout_free(&l);
        const lt_tensor *t = lt_to_local(dt, r);
        if (!t)
            fprintf(f, "(absent: values not held here)");
        else if (lt_numel(t) == 0)
            fprintf(f, "[] (empty)");
        else if (t->ndim >= 2)
            render_nested(f, t, max_values, 5 + 1 + 10 + 1 + 14 + 1 + 15 + 1);
        else
            lt_render_values(f, t, max_values);
        fputc('\n', f);
    }
    if (any_strided)
        fprintf(
            f, "* strided shard: along some dim the rank's indices are not one contiguous run, so\n"
               "  global_offset is only the first index it holds there\n");
    ragged_note(f, tensor, dt, 0);
    return LT_OK;
}

#define PIC_MAX 24

static int global_nonempty(const lt_dtensor *dt) {
    for (int d = 0; d < dt->ndim; d++)
        if (dt->shape[d] == 0) return 0;
    return 1;
}

/* Labels of the ranks holding each picture cell. cells[nr*nc] of rank lists. */
typedef struct cell {
    int n;
    int *ranks;   /* (n) */
} cell;

static void label(const cell *c, int world, char *buf, size_t n) {
    if (c->n == 0) {
        snprintf(buf, n, ".");
        return;
    }
    if (c->n == world && world > 1) {
        snprintf(buf, n, "all");
        return;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < c->n && used < n; i++) {
        /* compress runs a-b */
        int j = i;
        while (j + 1 < c->n && c->ranks[j + 1] == c->ranks[j] + 1) j++;
        int w = j > i + 1 ? snprintf(buf + used, n - used, "%s%d-%d", i ? "," : "", c->ranks[i],
                                     c->ranks[j])
                          : snprintf(buf + used, n - used, "%s%d", i ? "," : "", c->ranks[i]);
        if (w < 0) return;
        used += (size_t)w;
        if (j > i + 1) i = j;
    }
}

/* The owners grid of a 1-D or 2-D DTensor: nr x nc cells, every rstep-th
 * row and cstep-th column of the tensor. */
typedef struct owners {
    const lt_dtensor *dt;
    int64_t rstep, cstep;
    int nr, nc;
    cell *cells;   /* (nr, nc) */
    int *pool;     /* (nr, nc, world) each cell's ranks */
} owners;

/* Fills o's cells with the ranks holding each sampled index. */
static lt_status owners_fill(owners *o) {
    const lt_dtensor *dt = o->dt;
    int world = lt_dtensor_mesh(dt)->world, last = dt->ndim - 1;
    o->cells = lt__calloc((size_t)o->nr * (size_t)o->nc, sizeof(cell));
    o->pool = lt__calloc((size_t)o->nr * (size_t)o->nc * (size_t)world, sizeof(int));
    if (!o->cells || !o->pool) return lt__err(LT_NOMEM, "out of memory");
    for (int i = 0; i < o->nr * o->nc; i++) o->cells[i].ranks = o->pool + (size_t)i * (size_t)world;
    for (int r = 0; r < world; r++) {
        lt_rank_layout l;
        LT_TRY(lt_spec_layout_rank(lt_dtensor_spec(dt), r, &l));
        int64_t n0 = dt->ndim == 2 ? l.local_shape[0] : 1, n1 = l.local_shape[last];
        for (int64_t a = 0; a < n0; a++) {
            int64_t gr = dt->ndim == 2 ? (l.idx[0] ? l.idx[0][a] : a) : 0;
            if (gr % o->rstep) continue;
            for (int64_t b = 0; b < n1; b++) {
                int64_t gc = l.idx[last] ? l.idx[last][b] : b;
                if (gc % o->cstep) continue;
                cell *c = &o->cells[(gr / o->rstep) * o->nc + gc / o->cstep];
                int id = lt_mesh_rank_id(lt_dtensor_mesh(dt), r), k = c->n++;
                for (; k > 0 && c->ranks[k - 1] > id; k--) c->ranks[k] = c->ranks[k - 1];
                c->ranks[k] = id;   /* rank ids, ascending (positions are, on an arange mesh) */
            }
        }
        lt_rank_layout_free(&l);
    }
    return LT_OK;
}

/* Prints o's grid: a header of column indices, then a row per sampled
 * row (labelled with its index for 2-D tensors). */
static void owners_print(FILE *f, const owners *o) {
    int world = lt_dtensor_mesh(o->dt)->world, width = 1, two = o->dt->ndim == 2;
    char buf[64];
    for (int i = 0; i < o->nr * o->nc; i++) {
        label(&o->cells[i], world, buf, sizeof buf);
        int w = (int)strlen(buf);
        if (w > width) width = w;
    }
    fprintf(f, "owners (ranks holding each %s%s):\n", two ? "element" : "index",
            o->rstep > 1 || o->cstep > 1 ? ", sampled every few indices" : "");
    fprintf(f, "%6s", "");
    for (int j = 0; j < o->nc; j++) fprintf(f, " %*lld", width, (long long)(j * o->cstep));
    fputc('\n', f);
    for (int i = 0; i < o->nr; i++) {
        if (two) fprintf(f, "%5lld ", (long long)(i * o->rstep));
        else fprintf(f, "%6s", "");
        for (int j = 0; j < o->nc; j++) {
            label(&o->cells[i * o->nc + j], world, buf, sizeof buf);
            fprintf(f, " %*s", width, buf);
        }
        fputc('\n', f);
    }
}

/* The Partial mesh dims and the empty shards, a line each. */
static void picture_notes(FILE *f, const lt_dtensor *dt) {
    const lt_mesh *m = lt_dtensor_mesh(dt);
    for (int i = 0; i < m->ndim; i++)
        if (dt->placements[i].kind == LT_PL_PARTIAL)
            fprintf(f,
                    "partial: mesh dim %d is P(%s): ranks along it hold contributions; the value "
                    "is their %s\n",
                    i, lt_redop_name(dt->placements[i].op), lt_redop_name(dt->placements[i].op));
    int nempty = 0;
    for (int r = 0; r < m->world; r++) {
        const lt_tensor *t = lt_to_local(dt, r);
        if (t && lt_numel(t) == 0 && global_nonempty(dt)) {
            if (!nempty) fprintf(f, "empty shards (zero-size):");
            fprintf(f, " %d", r);
            nempty++;
        }
    }
    if (nempty) fputc('\n', f);
}

lt_status lt_render_picture(FILE *f, const lt_dtensor *dt) {
    const lt_dtensor *tensor = dt;
    lt_dtensor vbuf;
    LT_TRY(lt_render_layout(tensor, &vbuf, &dt));   /* a RaggedShard's: its view's picture */
    ragged_note(f, tensor, dt, 1);
    if (dt->ndim < 1 || dt->ndim > 2) {
        fprintf(f, "(picture: only for 1-D and 2-D tensors)\n");
        return LT_OK;
    }
    owners o = {dt, 1, 1, 0, 0, NULL, NULL};
    int64_t rows = dt->ndim == 2 ? dt->shape[0] : 1;
    int64_t cols = dt->ndim == 2 ? dt->shape[1] : dt->shape[0];
    /* rounded-up quotients written so that dims near INT64_MAX cannot wrap */
    if (rows > PIC_MAX) o.rstep = rows / PIC_MAX + (rows % PIC_MAX != 0);
    if (cols > PIC_MAX) o.cstep = cols / PIC_MAX + (cols % PIC_MAX != 0);
    o.nr = (int)(rows / o.rstep + (rows % o.rstep != 0));
    o.nc = (int)(cols / o.cstep + (cols % o.cstep != 0));
    if (rows == 0 || cols == 0) {
        fprintf(f, "(picture: the tensor has no elements)\n");
    } else {
        lt_status st = owners_fill(&o);
        if (!st) owners_print(f, &o);
        lt__free(o.cells);
        lt__free(o.pool);
        if (st) return st;
    }
    picture_notes(f, dt);
    return LT_OK;
}

cJSON *lt_json_i64_array(const int64_t *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) lt__json_push(a, cJSON_CreateNumber((double)v[i]));
    return a;
}

cJSON *lt_json_mesh(const lt_mesh *m) {
    cJSON *o = cJSON_CreateObject();
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    cJSON *names = cJSON_AddArrayToObject(o, "names");
    for (int i = 0; i < m->ndim; i++) {
        lt__json_push(shape, cJSON_CreateNumber(m->shape[i]));
        lt__json_push(names, m->names[i][0] ? cJSON_CreateString(m->names[i]) : cJSON_CreateNull());
    }
    if (m->permuted) {   /* the rank id at each position, row-major (docs/SEMANTICS.md §1.1) */
        cJSON *ids = cJSON_AddArrayToObject(o, "ranks");
        for (int p = 0; ids && p < m->world; p++)
            lt__json_push(ids, cJSON_CreateNumber(lt_mesh_rank_id(m, p)));
        cJSON_AddNumberToObject(o, "world_size", lt_mesh_world_size(m));
    }
    return o;
}

cJSON *lt_json_placements(const lt_placement *pl, int n) {
    cJSON *a = cJSON_CreateArray();
    char buf[1024];
    for (int i = 0; i < n; i++) {
        lt_placement_format(&pl[i], buf, sizeof buf);
        lt__json_push(a, cJSON_CreateString(buf));
    }
    return a;
}

lt_status lt_json_ranks_check(const lt_dtensor *dt) {
    const lt_mesh *m = lt_dtensor_mesh(dt);
    uint64_t bytes = 0;
    for (int r = 0; r < m->world; r++) {
        const lt_tensor *t = lt_to_local(dt, r);
        uint64_t n = t ? (uint64_t)lt_numel(t) : 0;   /* absent: no values */
        bytes = lt__add_sat(bytes, n > UINT64_MAX / LT_JSON_BYTES_PER_VALUE
                                       ? UINT64_MAX
                                       : n * LT_JSON_BYTES_PER_VALUE);
    }
    lt_status st = lt__mem_check(bytes, m->world, "the --json document");
    return st ? lt__err_ctx(st, "--json") : LT_OK;
}

cJSON *lt_json_ranks(const lt_dtensor *dt) {
    const lt_mesh *m = lt_dtensor_mesh(dt);
    const lt_dtensor *tensor = dt;
    lt_dtensor vbuf;
    if (lt_render_layout(tensor, &vbuf, &dt)) return NULL;
    cJSON *a = cJSON_CreateArray();
    for (int r = 0; r < m->world; r++) {
        int64_t c64[LT_MESH_MAX_DIMS];
        int c[LT_MESH_MAX_DIMS];
        lt_rank_layout l;
        if (lt_spec_layout_rank(lt_dtensor_spec(dt), r, &l)) {
            cJSON_Delete(a);
            return NULL;
        }
        int strided = 0;
        for (int d = 0; d < dt->ndim; d++) strided |= !l.contiguous[d];
        lt_mesh_coord(m, r, c);
        for (int i = 0; i < m->ndim; i++) c64[i] = c[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "rank", lt_mesh_rank_id(m, r));
        lt__json_put(o, "coord", lt_json_i64_array(c64, m->ndim));
        lt__json_put(o, "local_shape", lt_json_i64_array(l.local_shape, dt->ndim));
        lt__json_put(o, "global_offset", lt_json_i64_array(l.global_offset, dt->ndim));
        cJSON_AddBoolToObject(o, "strided", strided);
        if (dt != tensor) {   /* RaggedShard: the flat index of the first element, -1 empty */
            int64_t st[LT_MAX_DIMS], first = 0;
            lt_contiguous_strides(dt->ndim, dt->shape, st);
            for (int d = 0; d < dt->ndim; d++) first += l.global_offset[d] * st[d];
            cJSON_AddNumberToObject(o, "first_element",
                                    lt__numel_sat(dt->ndim, l.local_shape) ? (double)first : -1);
        }
        lt_rank_layout_free(&l);
        const lt_tensor *t = lt_to_local(dt, r);
        if (!t) { /* absent (not held here): "values": null */
            cJSON_AddNullToObject(o, "values");
            lt__json_push(a, o);
            continue;
        }
        cJSON *vals = cJSON_AddArrayToObject(o, "values");
        int64_t n = lt_numel(t);
        for (int64_t i = 0; i < n; i++) lt__json_push(vals, cJSON_CreateNumber(lt_get_flat(t, i)));
        lt__json_push(a, o);
    }
    return a;
}

lt_status lt_json_print(FILE *f, const cJSON *j) {
    if (lt__json_failed()) return lt__err(LT_NOMEM, "out of memory while building the JSON output");
    char *s = cJSON_Print(j);
    if (!s) return lt__err(LT_NOMEM, "out of memory while printing JSON");
    fprintf(f, "%s\n", s);
    cJSON_free(s);
    return LT_OK;
}

/* The trace event of plan step s: the next unused event [*next, count) of
 * its collective and mesh dim. NULL when the trace has none (not recorded). */
static int step_event(const lt_trace *tr, size_t *next, const lt_plan_step *ps,
                      lt_trace_event *ev) {
    size_t n = lt_trace_count(tr);
    for (size_t i = *next; i < n; i++) {
        if (lt_trace_get(tr, i, ev)) return 0;
        if (ev->coll == ps->coll && ev->mesh_dim == ps->mesh_dim) {
            *next = i + 1;
            return 1;
        }
    }
    return 0;
}

static cJSON *size_array(const size_t *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) lt__json_push(a, cJSON_CreateNumber(v ? (double)v[i] : 0));
    return a;
}

cJSON *lt_json_plan(const lt_plan *p, const lt_trace *trace, size_t since) {
    cJSON *a = cJSON_CreateArray();
    char f[1024], t[1024], act[128];
    size_t next = since;
    for (int s = 0; a && s < p->nsteps; s++) {
        const lt_plan_step *st = &p->steps[s];
        lt_placement_format(&st->from, f, sizeof f);
        lt_placement_format(&st->to, t, sizeof t);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "step", s + 1);
        cJSON_AddNumberToObject(o, "mesh_dim", st->mesh_dim);
        if (st->mesh_span > 1)   /* a flattened group (--moves all): its mesh dims */
            cJSON_AddNumberToObject(o, "mesh_span", st->mesh_span);
        cJSON_AddStringToObject(o, "from", f);
        cJSON_AddStringToObject(o, "to", t);
        cJSON_AddStringToObject(o, "collective", st->collective);
        if (st->local_op && st->local_op[0]) cJSON_AddStringToObject(o, "local", st->local_op);
        cJSON_AddStringToObject(o, "action", lt_plan_step_action(st, act, sizeof act));
        cJSON_AddNumberToObject(o, "bytes_per_rank", (double)st->bytes_per_rank);
        cJSON_AddNumberToObject(o, "bytes_total", (double)st->bytes_total);
        lt_trace_event ev;
        if (trace && !st->comm) {
            lt__json_put(o, "bytes_sent", size_array(NULL, p->mesh.world));
            lt__json_put(o, "bytes_recv", size_array(NULL, p->mesh.world));
        } else if (trace && step_event(trace, &next, st, &ev) && ev.world == p->mesh.world) {
            lt__json_put(o, "bytes_sent", size_array(ev.sent, ev.world));
            lt__json_put(o, "bytes_recv", size_array(ev.recv, ev.world));
        }
        lt__json_put(o, "placements_after", lt_json_placements(st->after, p->mesh.ndim));
        lt__json_push(a, o);
    }
    return a;
}
