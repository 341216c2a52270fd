/* tools/scenario/scenario_checkpoint.c — the steps save: and load:, a
 * DTensor through a real safetensors checkpoint and back.
 *
 * Why it exists: saving on one layout and loading on another is where
 * sharded checkpoints go wrong (uneven, strided, empty shards); these steps
 * let a scenario guard that path through the files themselves, in the
 * formats of tools/checkpoint/checkpoint.h:
 *   - save: {tensor: D, dir: PATH, format: dcp|hf}  D a DTensor; PATH a new
 *     or empty directory (used as given); dcp (default) writes each rank's
 *     block, hf the whole tensor; Partial is refused (reduce first);
 *   - load: {dir: PATH, name: N, placements: P, as: X}  tensor N of the
 *     checkpoint (which must verify), distributed on the case's mesh with P
 *     (Partial refused) as DTensor X.
 */
#include <string.h>

#include "kernels/status_impl.h"
#include "tools/checkpoint/checkpoint.h"
#include "tools/scenario/scenario_impl.h"

typedef struct {
    const char *tensor, *dir;
    lt_ck_format fmt;
} save_data;

typedef struct {
    const char *dir, *name, *as;
    lt_placement *pl; /* (np) */
    int np;
} load_data;

/* A string key into the arena. */
static lt_status arena_str(sc_parse_ctx *pc, const sc_node *body, const char *what, const char *key,
                           const char **out) {
    const sc_node *n;
    const char *s;
    LT_TRY(lt__sc_need(body, what, key, &n));
    LT_TRY(lt__sc_str(n, what, &s));
    return (*out = lt__sc_strdup(pc->arena, s)) ? LT_OK : LT_NOMEM;
}

lt_status lt__sc_parse_save(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"tensor", "dir", "format", NULL};
    LT_TRY(lt__sc_keys(body, "save", keys));
    LT__SC_NEW_DATA(save_data, d);
    LT_TRY(lt__sc_use(pc, body, "save", "tensor", SC_DTENSOR, &d->tensor));
    LT_TRY(arena_str(pc, body, "save", "dir", &d->dir));
    const sc_node *f = lt__sc_get(body, "format");
    const char *fs = "dcp";
    if (f) LT_TRY(lt__sc_str(f, "save: format", &fs));
    if (strcmp(fs, "dcp") && strcmp(fs, "hf"))
        return lt__err(LT_INVALID, "save: format '%s': expected dcp or hf", fs);
    d->fmt = strcmp(fs, "hf") ? LT_CK_DCP : LT_CK_HF;
    return LT_OK;
}

lt_status lt__sc_run_save(sc_run_ctx *rc, const sc_step *st) {
    const save_data *d = st->data;
    if (rc->nranks >= 0) return lt__sc_numerics_refuse(rc, "save");
    sc_value *v = lt__sc_value(rc, d->tensor);
    lt_status s = lt__ck_save_dtensor(v->dt, d->tensor, d->dir, d->fmt);
    return s ? lt__err_ctx_in(s, "save", " of '%s' to %s", d->tensor, d->dir) : LT_OK;
}

lt_status lt__sc_parse_load(sc_parse_ctx *pc, const sc_node *body, sc_step *st) {
    static const char *const keys[] = {"dir", "name", "placements", "as", NULL};
    const sc_node *n;
    LT_TRY(lt__sc_keys(body, "load", keys));
    LT__SC_NEW_DATA(load_data, d);
    LT_TRY(arena_str(pc, body, "load", "dir", &d->dir));
    LT_TRY(arena_str(pc, body, "load", "name", &d->name));
    LT_TRY(lt__sc_need(body, "load", "placements", &n));
    LT_TRY(lt__sc_placements_new(pc->arena, n, "load: placements", &d->pl, &d->np));
    for (int i = 0; i < d->np; i++)
        if (d->pl[i].kind == LT_PL_PARTIAL)
            return lt__err(LT_INVALID,
                           "load: placements: Partial on mesh dim %d: a checkpoint "
                           "holds values, not partial sums",
                           i);
    return lt__sc_define(pc, body, "load", SC_DTENSOR, &d->as);
}

lt_status lt__sc_run_load(sc_run_ctx *rc, const sc_step *st) {
    const load_data *d = st->data;
    if (rc->nranks >= 0) return lt__sc_numerics_refuse(rc, "load");
    lt_tensor *full = NULL;
    lt_dtensor *dt = NULL;
    lt_status s = lt__ck_load_tensor(d->dir, d->name, &full);
    if (!s) s = lt_distribute(rc->c->mesh, full, d->pl, d->np, &dt);
    lt_tensor_free(full);
    if (s) return lt__err_ctx_in(s, "load", " of '%s' from %s", d->name, d->dir);
    return lt__sc_put_dtensor(rc, d->as, dt, NULL);
}
