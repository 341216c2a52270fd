/* tools/render/trace_json.c — the comm trace as JSON (lt_trace_to_json,
 * tools/render/render.h). It lives with the tools, not in collectives_sim/,
 * so that the library does not depend on cJSON; it reads the trace through
 * its public accessors only.
 */
#include <cJSON.h>

#include "localtensor/collectives_sim/trace.h"
#include "tools/render/render.h"

static cJSON *size_array(const size_t *v, int n) {
    cJSON *a = cJSON_CreateArray();
    if (!a) return NULL;
    for (int i = 0; i < n; i++) {
        cJSON *x = cJSON_CreateNumber((double)v[i]);
        if (!x) { cJSON_Delete(a); return NULL; }
        cJSON_AddItemToArray(a, x);
    }
    return a;
}

static cJSON *event_json(const lt_trace_event *ev) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    int ok = cJSON_AddStringToObject(o, "collective", lt_coll_name(ev->coll)) &&
             cJSON_AddNumberToObject(o, "mesh_dim", ev->mesh_dim) &&
             cJSON_AddNumberToObject(o, "groups", ev->ngroups) &&
             cJSON_AddNumberToObject(o, "group_size", ev->group_size);
    if (ok && ev->coll != LT_COLL_BARRIER)
        ok = cJSON_AddStringToObject(o, "dtype", lt_dtype_name(ev->dtype)) != NULL;
    if (ok && ev->op >= 0)
        ok = cJSON_AddStringToObject(o, "op", lt_redop_name((lt_redop)ev->op)) != NULL;
    if (ok && ev->root >= 0) ok = cJSON_AddNumberToObject(o, "root", ev->root) != NULL;
    if (ok && ev->dim >= 0) ok = cJSON_AddNumberToObject(o, "dim", ev->dim) != NULL;
    if (ok && ev->concat_dim >= 0)
        ok = cJSON_AddNumberToObject(o, "concat_dim", ev->concat_dim) != NULL;
    if (ok) ok = cJSON_AddStringToObject(o, "label", ev->label) != NULL;
    if (ok) {
        cJSON *s = size_array(ev->sent, ev->world);
        if (s) cJSON_AddItemToObject(o, "bytes_sent", s);
        cJSON *r = s ? size_array(ev->recv, ev->world) : NULL;
        if (r) cJSON_AddItemToObject(o, "bytes_recv", r);
        ok = s && r;
    }
    if (ok)
        ok = cJSON_AddNumberToObject(o, "total_bytes_sent", (double)ev->total_sent) &&
             cJSON_AddNumberToObject(o, "total_bytes_recv", (double)ev->total_recv) &&
             cJSON_AddNumberToObject(o, "busbw_factor",
                                     lt_coll_busbw_factor(ev->coll, ev->group_size));
    if (!ok) { cJSON_Delete(o); return NULL; }
    return o;
}

cJSON *lt_trace_to_json(const lt_trace *t, size_t since) {
    cJSON *root = cJSON_CreateObject();
    cJSON *evs = root ? cJSON_AddArrayToObject(root, "events") : NULL;
    if (!evs) { cJSON_Delete(root); return NULL; }
    lt_trace_event ev;
    for (size_t i = since, n = lt_trace_count(t); i < n; i++) {
        lt_trace_get(t, i, &ev);
        cJSON *o = event_json(&ev);
        if (!o) { cJSON_Delete(root); return NULL; }
        cJSON_AddItemToArray(evs, o);
    }
    lt_trace_totals tot;
    lt_trace_totals_since(t, since, &tot);
    if (!cJSON_AddNumberToObject(root, "total_bytes_sent", (double)tot.bytes_sent) ||
        !cJSON_AddNumberToObject(root, "total_bytes_recv", (double)tot.bytes_recv)) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}
