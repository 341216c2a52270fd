/* tools/scenario/scenario_load.c — a node tree to scenarios and cases.
 *
 * Validates everything that can be known before running: keys (unknown ones
 * are errors), types, tensor names defined before use and of the right kind,
 * rank numbers against the mesh, value counts against shapes, and sweep
 * variables. What the library decides (is this placement valid for this
 * tensor on this mesh?) is left to run time so that expect_error can test it.
 * A sweep's case is the scenario's tree with the sweep variables
 * substituted, parsed like any scenario (the sweep's cases are made from
 * their index: scenario_sweep.c).
 */
#include "kernels/alloc.h"
#include "localtensor/kernels/backend.h"
#include "kernels/pool_impl.h"
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
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
    {"repeat", 0, lt__sc_parse_repeat, lt__sc_run_repeat},   /* scenario_loop.c */
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
lt_status lt__sc_parse_selection(sc_parse_ctx *pc, const sc_step_type *t, const sc_node *sel,
                                 const sc_node *v, sc_step *st) {
    if (!lt__sc_step_is_per_rank(t))
        return lt__sc_err(sel, LT_INVALID,
                          "%s: '%s' runs on every rank together and cannot be limited to some "
                          "ranks (%s: applies to "
                          "to_local, local_tensor, local_op, collective, send, recv, show, "
                          "expect_local; "
                          "docs/SEMANTICS.md §12)",
                          sel->str, t->name, sel->str);
    int W = pc->mesh->world;
    unsigned char *m = lt__sc_alloc(pc->arena, (size_t)W);
    if (!m) return LT_NOMEM;
    if (!strcmp(sel->str, "ranks")) {
        if (v->kind != SC_SEQ)
            return lt__sc_err(v, LT_INVALID, "ranks: expected a list of ranks, got %s",
                              lt__sc_kind_name(v));
        for (int i = 0; i < v->n; i++) {
            int r;
            LT_TRY(lt__sc_rank(pc, v->kids[i], &r));
            if (m[r])
                return lt__sc_err(v->kids[i], LT_INVALID, "ranks: rank %d is listed twice", r);
            m[r] = 1;
        }
    } else {
        sc_expr *e;
        LT_TRY(lt__sc_expr_parse_pc(pc, v, 0, "when", &e));
        /* a condition on shard sizes is evaluated when the step runs */
        if (lt__sc_expr_reads_values(e)) return lt__sc_when_wrap(pc, t, e, st);
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
                    return lt__sc_err(item->kids[2 * i], LT_INVALID,
                                      "a step takes either ranks: or when:, not both");
                sel = item->kids[2 * i];
                sel_val = item->kids[2 * i + 1];
            } else if (key) {
                return lt__sc_err(
                    item->kids[2 * i], LT_INVALID,
                    "a step is a mapping with one key, the step's name (plus ranks: or when:); got "
                    "a mapping with several keys: '%s' is a second one (first: '%s')",
                    k, key->str);
            } else {
                key = item->kids[2 * i];
                body = item->kids[2 * i + 1];
            }
        }
        if (!key)
            return lt__sc_err(item, LT_INVALID,
                              "a step needs its name as a key beside %s:", sel->str);
    } else {
        return lt__sc_err(item, LT_INVALID,
                          "a step is a mapping with one key, the step's name (one of: %s); got %s",
                          lt__sc_step_names(),
                          item->kind == SC_MAP ? "a mapping with several keys"
                                               : lt__sc_kind_name(item));
    }
    const sc_step_type *t = lt__sc_step_type(key->str);
    if (!t) {
        const char *names[NSTEP_TYPES];
        for (int i = 0; i < NSTEP_TYPES; i++) names[i] = step_types[i].name;
        const char *guess = lt__suggest(key->str, names, NSTEP_TYPES);
        return lt__sc_err(key, LT_INVALID, "unknown step '%s' (expected one of: %s)%s%s%s",
                          key->str, lt__sc_step_names(), guess ? "; did you mean '" : "",
                          guess ? guess : "", guess ? "'?" : "");
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

/* The names a case defines are pc->syms in order, a later entry hiding an
 * earlier one. Finding one probes an index instead of scanning them, so a
 * case of LT_SC_MAX_UNROLLED steps loads in linear time (it took minutes).
 *
 * The index lives in the block that holds the entries, before syms[0] (the
 * parse context needs no field for it), and is freed with them
 * (lt__sc_scope_free). It maps a name to its latest entry; each entry
 * chains to the entry its name had before (prev), so that dropping entries
 * from the end, last first, gives back what they hid.
 *
 * Entries change behind its back in one place: at the end of a loop's
 * iteration (scenario_loop.c, end_iteration) the entries from the loop's
 * start on are compacted in place (names kept in order, some dropped),
 * pc->nsyms goes down, and every entry it rewrites gets dims -1. So the
 * index stores the "unknown" dims of the entries it adds as SYM_UNKNOWN
 * (-2): when pc->nsyms went down since its last use (sym_sync), the run of
 * -1 entries just below the new end is exactly what was rewritten, and only
 * that part is dropped and indexed again. Both read as -1 (unknown) to
 * callers. */
#define SYM_REWRITTEN (-1)
#define SYM_UNKNOWN (-2)

typedef struct sym_entry {
    const char *name;         /* borrowed: the entry's name when it was indexed */
    uint32_t hash;
    int prev;                 /* the name's entry before this one, -1: none */
} sym_entry;

typedef struct sym_index {
    sym_entry *ent;           /* (pc->cap) malloc'd */
    uint32_t *slot;           /* (mask + 1) malloc'd: 1 + the latest entry of a name, 0: free */
    uint32_t mask;
    int n;                    /* entries indexed: syms[0..n) */
} sym_index;

typedef struct sym_block {
    sym_index ix;
    sc_sym syms[];            /* pc->syms */
} sym_block;

static sym_block *sym_block_of(const sc_parse_ctx *pc) {
    return pc->syms ? (sym_block *)(void *)((char *)pc->syms - offsetof(sym_block, syms)) : NULL;
}

static uint32_t name_hash(const char *s) {   /* FNV-1a */
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The slot holding `name`'s latest entry, or the free slot where it would go. */
static uint32_t *sym_slot(const sym_index *ix, const char *name, uint32_t h) {
    for (uint32_t i = h & ix->mask;; i = (i + 1) & ix->mask) {
        uint32_t e = ix->slot[i];
        if (!e) return &ix->slot[i];
        const sym_entry *x = &ix->ent[e - 1];
        if (x->hash == h && (x->name == name || !strcmp(x->name, name))) return &ix->slot[i];
    }
}

/* Indexes syms[ix->n] (the table has room: twice as many slots as entries). */
static void sym_index_push(sym_index *ix, const sc_sym *syms) {
    int i = ix->n++;
    sym_entry *x = &ix->ent[i];
    x->name = syms[i].name;
    x->hash = name_hash(x->name);
    uint32_t *s = sym_slot(ix, x->name, x->hash);
    x->prev = (int)*s - 1;
    *s = (uint32_t)i + 1;
}

/* Drops the last indexed entry: its name's slot goes back to the entry it
 * hid, or is emptied (linear probing: later entries of its cluster that
 * may not stay behind the hole move into it). */
static void sym_index_pop(sym_index *ix) {
    const sym_entry *x = &ix->ent[--ix->n];
    uint32_t *s = sym_slot(ix, x->name, x->hash);
    if (x->prev >= 0) {
        *s = (uint32_t)x->prev + 1;
        return;
    }
    uint32_t hole = (uint32_t)(s - ix->slot);
    for (uint32_t j = (hole + 1) & ix->mask; ix->slot[j]; j = (j + 1) & ix->mask) {
        uint32_t home = ix->ent[ix->slot[j] - 1].hash & ix->mask;
        if (((j - home) & ix->mask) < ((j - hole) & ix->mask))
            continue; /* home lies between hole and j */
        ix->slot[hole] = ix->slot[j];
        hole = j;
    }
    ix->slot[hole] = 0;
}

/* Brings the index up to date with pc->syms after a loop's iteration
 * changed them (see above). */
static void sym_sync(const sc_parse_ctx *pc) {
    sym_block *b = sym_block_of(pc);
    if (!b || b->ix.n <= pc->nsyms) return;
    int *nd = lt__sc_scope((sc_parse_ctx *)pc)->ndims, from = pc->nsyms;
    while (from > 0 && nd[from - 1] == SYM_REWRITTEN) from--;
    while (b->ix.n > from) sym_index_pop(&b->ix);
    for (int i = from; i < pc->nsyms; i++) {
        nd[i] = SYM_UNKNOWN;
        sym_index_push(&b->ix, b->syms);
    }
}

/* Room for cap entries: the block, the index's entries and dims, and a
 * slot table of twice as many slots (filled anew). LT_NOMEM leaves the
 * old ones as they were. */
static lt_status sym_grow(sc_parse_ctx *pc, int cap) {
    sc_parse_scope *sc = lt__sc_scope(pc);
    sym_block *b = sym_block_of(pc);
    uint32_t nslot = 64;
    while (nslot < 2u * (uint32_t)cap) nslot *= 2;
    uint32_t *slot = lt__calloc(nslot, sizeof *slot);
    sym_block *nb = slot ? lt__realloc(b, sizeof *b + sizeof *nb->syms * (size_t)cap) : NULL;
    if (nb && !b) memset(&nb->ix, 0, sizeof nb->ix);
    if (nb) pc->syms = nb->syms;
    sym_entry *ent = nb ? lt__realloc(nb->ix.ent, sizeof *ent * (size_t)cap) : NULL;
    if (ent) nb->ix.ent = ent;
    int *nd = ent ? lt__realloc(sc->ndims, sizeof *nd * (size_t)cap) : NULL;
    if (!nd) {
        lt__free(slot);
        return lt__err(LT_NOMEM, "out of memory");
    }
    sc->ndims = nd;
    lt__free(nb->ix.slot);
    nb->ix.slot = slot;
    nb->ix.mask = nslot - 1;
    for (int i = 0; i < nb->ix.n; i++)
        *sym_slot(&nb->ix, ent[i].name, ent[i].hash) = (uint32_t)i + 1;
    pc->cap = cap;
    return LT_OK;
}

lt_status lt__sc_sym_add(sc_parse_ctx *pc, const char *name, int kind, int ndim) {
    sym_sync(pc);
    if (pc->nsyms == pc->cap) LT_TRY(sym_grow(pc, pc->cap ? pc->cap * 2 : 16));
    pc->syms[pc->nsyms].name = name;
    pc->syms[pc->nsyms].kind = kind;
    lt__sc_scope(pc)->ndims[pc->nsyms] = ndim < 0 ? SYM_UNKNOWN : ndim;
    pc->nsyms++;
    sym_index_push(&sym_block_of(pc)->ix, pc->syms);
    return LT_OK;
}

/* Test-only (test/test_scenario_load.c): while lt__sc_sym_crosscheck is
 * set, every lookup is made a second time by scanning the entries from the
 * last, and each one on which the two disagree is counted in
 * lt__sc_sym_disagree: the check that the index follows what
 * scenario_loop.c does to the entries. */
int lt__sc_sym_crosscheck;
atomic_long lt__sc_sym_disagree;

/* The latest entry of `name` by scanning, -1: none. */
static int sym_scan(const sc_parse_ctx *pc, const char *name) {
    int i = pc->nsyms - 1;
    while (i >= 0 && strcmp(pc->syms[i].name, name)) i--;
    return i;
}

int lt__sc_sym_find(const sc_parse_ctx *pc, const char *name, int *ndim) {
    sym_sync(pc);
    sym_block *b = sym_block_of(pc);
    int e = (b ? (int)*sym_slot(&b->ix, name, name_hash(name)) : 0) - 1;
    if (lt__sc_sym_crosscheck && e != sym_scan(pc, name)) atomic_fetch_add(&lt__sc_sym_disagree, 1);
    if (e < 0) return 0;
    int nd = lt__sc_scope((sc_parse_ctx *)pc)->ndims[e];
    if (ndim) *ndim = nd < 0 ? -1 : nd;
    return pc->syms[e].kind;
}

/* Each name once, where it was first defined. */
void lt__sc_sym_list(const sc_parse_ctx *pc, char *list, size_t n) {
    size_t used = 0;
    list[0] = '\0';
    sym_sync(pc);
    const sym_block *b = sym_block_of(pc);
    for (int i = 0; b && i < pc->nsyms && used + 8 < n; i++)
        if (b->ix.ent[i].prev < 0)
            used +=
                (size_t)snprintf(list + used, n - used, "%s%s", used ? ", " : "", pc->syms[i].name);
}

void lt__sc_scope_free(sc_parse_scope *s) {
    sym_block *b = sym_block_of(&s->pc);
    if (b) {
        lt__free(b->ix.ent);
        lt__free(b->ix.slot);
        lt__free(b);
    }
    lt__free(s->ndims);
    s->pc.syms = NULL;
    s->ndims = NULL;
    s->pc.nsyms = s->pc.cap = 0;
}

/* The dims of what step `what` (body map) puts under its `as`, where the
 * step keeps its input's dims or gives them in the body; -1: unknown. (What
 * shape(x, d) is checked against at load.) */
static int defined_ndim(const sc_parse_ctx *pc, const char *what, const sc_node *map) {
    static const char *const same[] = {"to_local",    "distribute", "redistribute",
                                       "full_tensor", "collective", NULL};
    const sc_node *n;
    if (!strcmp(what, "local_tensor") && (n = lt__sc_get(map, "shape")))
        return n->kind == SC_SEQ ? n->n : 1;
    for (int i = 0; same[i]; i++) {
        int nd = -1;
        if (strcmp(what, same[i]) || !(n = lt__sc_get(map, "tensor")) || n->kind != SC_SCALAR)
            continue;
        return lt__sc_sym_find(pc, n->str, &nd) ? nd : -1;
    }
    return -1;
}

lt_status lt__sc_use(sc_parse_ctx *pc, const sc_node *map, const char *what, const char *key,
                     int kinds, const char **out) {
    const sc_node *v;
    const char *name;
    LT_TRY(lt__sc_need(map, what, key, &v));
    LT_TRY(lt__sc_ident(v, what, &name));
    int found = lt__sc_sym_find(pc, name, NULL);
    if (found && !(found & kinds)) {
        char want[128] = "";
        size_t used = 0;
        for (int k = SC_FULL; k <= SC_LOCAL; k <<= 1)
            if (kinds & k)
                used += (size_t)snprintf(want + used, sizeof want - used, "%s%s",
                                         used ? " or " : "", kind_str(k));
        return lt__sc_err(v, LT_INVALID, "%s: '%s' is %s, but %s needs %s", what, name,
                          kind_str(found), what, want);
    }
    if (found) {
        *out = name;
        return LT_OK;
    }
    char list[400], hint[300];
    lt__sc_sym_list(pc, list, sizeof list);
    lt__sc_dropped_hint(pc, name, hint, sizeof hint);
    return lt__sc_err(v, LT_INVALID, "%s: tensor '%s' is not defined%s%s%s%s", what, name,
                      pc->nsyms ? " (defined so far: " : " (nothing is defined yet)", list,
                      pc->nsyms ? ")" : "", hint);
}

lt_status lt__sc_define(sc_parse_ctx *pc, const sc_node *map, const char *what, int kind,
                        const char **out) {
    const sc_node *v;
    LT_TRY(lt__sc_need(map, what, "as", &v));
    LT_TRY(lt__sc_ident(v, what, out));
    if (pc->in_expect_error) return LT_OK;   /* the step must fail: nothing is defined */
    return lt__sc_sym_add(pc, *out, kind, defined_ndim(pc, what, map));
}

lt_status lt__sc_rank(const sc_parse_ctx *pc, const sc_node *key, int *rank) {
    int64_t r;
    LT_TRY(lt__sc_i64(key, "rank", INT64_MIN, INT64_MAX, &r));
    if (pc->mesh->permuted) {   /* a rank id; its shards sit at its mesh position */
        int pos = r < 0 || r > INT32_MAX ? -1 : lt_mesh_pos_of(pc->mesh, (int)r);
        char m[LT_MESH_MAX_IDS * 8];
        if (pos < 0)
            return lt__sc_err(key, LT_INVALID, "rank %lld is not on mesh %s", (long long)r,
                              lt_mesh_format(pc->mesh, m, sizeof m));
        *rank = pos;
        return LT_OK;
    }
    if (r < 0 || r >= pc->mesh->world) {
        char m[64];
        lt_mesh_format(pc->mesh, m, sizeof m);
        return lt__sc_err(key, LT_INVALID, "rank %lld is not on mesh %s (ranks 0..%d)",
                          (long long)r, m, pc->mesh->world - 1);
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
            return lt__sc_err(n, LT_INVALID,
                              "%s: a list gives one entry per rank: %d rank%s, got %d entr%s (a "
                              "mapping {rank: ...} can list some)",
                              what, W, W == 1 ? "" : "s", n->n, n->n == 1 ? "y" : "ies");
        /* entry i is the i-th rank id of the mesh (ascending): on a permuted mesh
         * its shard sits at that rank's position */
        for (int i = 0, id = 0; i < W; i++, id++) {
            while (pc->mesh->permuted && lt_mesh_pos_of(pc->mesh, id) < 0) id++;
            v[pc->mesh->permuted ? lt_mesh_pos_of(pc->mesh, id) : i] = n->kids[i];
        }
    } else if (n->kind == SC_MAP) {
        for (int i = 0; i < n->n; i++) {
            int r;
            LT_TRY(lt__sc_rank(pc, n->kids[2 * i], &r));
            if (v[r])
                return lt__sc_err(n->kids[2 * i], LT_INVALID, "%s: rank %d is given twice", what,
                                  lt_mesh_rank_id(pc->mesh, r));
            v[r] = n->kids[2 * i + 1];
        }
    } else {
        return lt__sc_err(
            n, LT_INVALID,
            "%s: expected a mapping {rank: ...} or a list with one entry per rank, got %s", what,
            lt__sc_kind_name(n));
    }
    if (need_all)
        for (int r = 0; r < W; r++)
            if (!v[r])
                return lt__sc_err(n, LT_INVALID,
                                  "%s: rank %d is missing (every rank needs an entry)", what,
                                  lt_mesh_rank_id(pc->mesh, r));
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
    if (shape)
        LT_TRY(lt__sc_shape_max(shape, what, pc->sampled && !vals ? INT64_MAX : LT_SC_MAX_ELEMS,
                                &t->ndim, t->shape));
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
                return lt__sc_err(vals, LT_SHAPE,
                                  "%s: values have shape %s (%lld values) but the tensor's shape "
                                  "is %s (%lld elements)",
                                  what, lt_shape_format(lit.ndim, lit.shape, a, sizeof a),
                                  (long long)lit.n, lt_shape_format(t->ndim, t->shape, b, sizeof b),
                                  (long long)numel);
            }
        }
        t->has_values = 1;
        t->values = lit.v;
        return LT_OK;
    }
    if (!shape)
        return lt__sc_err(body, LT_INVALID, "%s: missing required key 'shape' (or give values)",
                          what);
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

static const char *const scenario_keys[] = {"name",    "description", "mesh",  "backend",
                                            "tensors", "steps",       "sweep", "numerics",
                                            "rules",   NULL};

lt_status lt__sc_parse_case(sc_arena *a, const sc_node *map, const sc_node *sweep_mesh,
                            sc_case *c) {
    const sc_node *mesh = lt__sc_get(map, "mesh");
    if (!mesh) mesh = sweep_mesh;
    if (!mesh)
        return lt__sc_err(map, LT_INVALID, "scenario '%s': missing required key 'mesh'", c->name);
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
        lt_numerics key;
        lt_status ns = lt_numerics_parse(s, &key);
        if (ns) return lt__sc_err_at(nm, ns);
        if (!c->numerics_set) c->numerics = key;   /* --numerics overrides the key */
    }
    const sc_node *bn = lt__sc_get(map, "backend");
    if (bn) { /* where the case's tensors live: a name kernels/backend.h knows, usable here */
        const lt_backend *b;
        LT_TRY(lt__sc_str(bn, "backend", &c->backend));
        lt_status bst = lt_backend_by_name(c->backend, &b);
        if (bst) return lt__sc_err_at(bn, lt__err_ctx(bst, "backend"));
    }
    const sc_node *rn = lt__sc_get(map, "rules");
    if (rn) { /* the ops' rule set (localtensor/ops.h): pytorch or min-comm */
        const char *s;
        LT_TRY(lt__sc_str(rn, "rules", &s));
        lt_status rs = lt_op_rules_parse(s, &c->rules);
        if (rs) return lt__sc_err_at(rn, lt__err_ctx(rs, "rules"));
    }
    sc_parse_scope
        scope; /* scope.pc: the steps' parse context (lt__sc_scope finds scope from it) */
    memset(&scope, 0, sizeof scope);
    scope.pc.arena = a;
    scope.pc.mesh = c->mesh;
    scope.pc.sampled = c->numerics.kind != LT_NUMERICS_FULL || g_unbuilt_init;
    lt_status st = LT_OK;
    const sc_node *tensors = lt__sc_get(map, "tensors"), *steps;
    if (tensors && !lt__sc_is_null(tensors)) {
        if (tensors->kind != SC_MAP) {
            st = lt__sc_err(
                tensors, LT_INVALID,
                "tensors: expected a mapping name: {shape, dtype, init | values}, got %s",
                lt__sc_kind_name(tensors));
            goto out;
        }
        c->ntensors = tensors->n;
        c->tensors = lt__sc_alloc(a, sizeof *c->tensors * (size_t)(tensors->n ? tensors->n : 1));
        if (!c->tensors) { st = LT_NOMEM; goto out; }
        for (int i = 0; i < tensors->n && !st; i++) {
            st = parse_tensor(&scope.pc, tensors->kids[2 * i], tensors->kids[2 * i + 1],
                              &c->tensors[i]);
            if (!st)
                st = lt__sc_sym_add(&scope.pc, c->tensors[i].name, SC_FULL, c->tensors[i].ndim);
        }
        if (st) goto out;
    }
    if ((st = lt__sc_need(map, "scenario", "steps", &steps))) goto out;
    if (steps->kind != SC_SEQ || steps->n == 0) {
        st = lt__sc_err(steps, LT_INVALID, "steps: expected a non-empty list of steps, got %s",
                        steps->kind == SC_SEQ ? "an empty list" : lt__sc_kind_name(steps));
        goto out;
    }
    st = lt__sc_parse_steps(&scope.pc, steps, &c->steps, &c->nsteps);   /* loops unrolled */
out:
    lt__sc_scope_free(&scope);
    return st;
}

static lt_status parse_scenario(sc_arena *a, const sc_node *map, sc_scenario *s) {
    LT_TRY(lt__sc_keys(map, "a scenario", scenario_keys));
    const sc_node *n;
    LT_TRY(lt__sc_need(map, "scenario", "name", &n));
    LT_TRY(lt__sc_str(n, "name", &s->name));
    for (const char *p = s->name; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '[' || *p == ']')
            return lt__sc_err(n, LT_INVALID, "name: '%s' may not hold control characters or [ ]",
                              s->name);
    s->pos = (sc_pos){map->file, map->line, map->col};
    if ((n = lt__sc_get(map, "description"))) LT_TRY(lt__sc_str(n, "description", &s->description));
    const sc_node *sweep = lt__sc_get(map, "sweep");
    if (sweep) return lt__sc_parse_sweep(a, map, sweep, s);
    /* not a sweep: no $variables allowed */
    for (int i = 0; i < map->n; i++) LT_TRY(lt__sc_copy(NULL, map->kids[2 * i + 1], NULL, NULL));
    s->ncases = 1;
    s->cases = lt__sc_alloc(a, sizeof *s->cases);
    if (!s->cases) return LT_NOMEM;
    s->cases[0].name = s->name;
    s->cases[0].pos = s->pos;
    lt_status st = lt__sc_parse_case(a, map, NULL, &s->cases[0]);
    if (st) return st;
    return LT_OK;
}

/* ---- files ---------------------------------------------------------------------------- */

/* The scenario names of a file so far, for the duplicate check: an open
 * addressing table of 1 + scenario index (a file may hold 100,000 of them;
 * comparing every pair took seconds). */
typedef struct name_set {
    uint32_t *slot;           /* (mask + 1) malloc'd; 0: free */
    uint32_t mask;
} name_set;

/* Room for n names (twice as many slots). LT_NOMEM. */
static lt_status name_table(name_set *t, int n) {
    uint32_t cap = 64;
    while (cap < 2u * (uint32_t)n) cap *= 2;
    if (!(t->slot = lt__calloc(cap, sizeof *t->slot))) return lt__err(LT_NOMEM, "out of memory");
    t->mask = cap - 1;
    return LT_OK;
}

/* The scenario before s[i] with s[i]'s name, or -1 (then s[i] is added). */
static int name_seen(name_set *t, const sc_scenario *s, int i) {
    for (uint32_t k = name_hash(s[i].name) & t->mask;; k = (k + 1) & t->mask) {
        if (!t->slot[k]) {
            t->slot[k] = (uint32_t)i + 1;
            return -1;
        }
        if (!strcmp(s[t->slot[k] - 1].name, s[i].name)) return (int)t->slot[k] - 1;
    }
}

lt_status lt_sc_load_string(const char *name, const char *text, size_t len, lt_sc_file **out) {
    *out = NULL;
    lt__err_clear();   /* a bare LT_NOMEM below must not inherit an older failure's position */
    sc_arena *a = lt__sc_arena_new();
    if (!a) return LT_NOMEM;
    lt_sc_file *f = lt__sc_alloc(a, sizeof *f);
    lt_status st = LT_OK;
    name_set names = {NULL, 0};   /* the scenario names so far */
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
        st = lt__err_at(LT_INVALID, name, root ? root->line : 1, root ? root->col : 1,
                        "file holds no scenario (expected a mapping with name, mesh and steps, or "
                        "a list of them)");
        goto fail;
    }
    int n = root->kind == SC_SEQ ? root->n : 1;
    if (root->kind == SC_SCALAR) {
        st = lt__sc_err(root, LT_INVALID,
                        "expected a scenario (a mapping with name, mesh and steps) or a list of "
                        "them, got text");
        goto fail;
    }
    if (n == 0) {
        st = lt__sc_err(root, LT_INVALID, "the list of scenarios is empty");
        goto fail;
    }
    f->scen = lt__sc_alloc(a, sizeof *f->scen * (size_t)n);
    if (!f->scen || name_table(&names, n)) { st = LT_NOMEM; goto fail; }
    for (int i = 0; i < n; i++) {
        const sc_node *m = root->kind == SC_SEQ ? root->kids[i] : root;
        if (m->kind != SC_MAP) {
            st = lt__sc_err(m, LT_INVALID,
                            "expected a scenario (a mapping with name, mesh and steps), got %s",
                            lt__sc_kind_name(m));
            goto fail;
        }
        if ((st = parse_scenario(a, m, &f->scen[i]))) goto fail;
        int j = name_seen(&names, f->scen, i);
        if (j >= 0) {
            st = lt__sc_err(lt__sc_get(m, "name"), LT_INVALID,
                            "scenario name '%s' is used twice in this file (first at line %d)",
                            f->scen[i].name, f->scen[j].pos.line);
            goto fail;
        }
        f->nscen = i + 1;
    }
    lt__free(names.slot);
    *out = f;
    return LT_OK;
fail:
    lt__free(names.slot);
    if (st == LT_NOMEM && !lt_errinfo()->position.line)
        lt__err_at(LT_NOMEM, name, 1, 1, "out of memory");
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
            st = lt__err(LT_INVALID, "%s:1:1: file is larger than %u bytes (the loader's limit)",
                         path, LT_SC_MAX_FILE_BYTES);
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
