/* tools/render/json_alloc.c — cJSON's allocations through kernels/alloc.h, with a
 * failure flag (why: tools/render/json_alloc.h). */
#include "tools/render/json_alloc.h"

#include "kernels/alloc.h"

static _Thread_local int json_failed;   /* per thread, like lt_errmsg() */

static void *json_malloc(size_t n) {
    void *p = lt__malloc(n);
    if (!p) json_failed = 1;
    return p;
}

void lt__json_begin(void) {
    static cJSON_Hooks hooks = {json_malloc, lt__free};
    cJSON_InitHooks(&hooks);
    json_failed = 0;
}

int lt__json_failed(void) { return json_failed; }

void lt__json_put(cJSON *obj, const char *key, cJSON *item) {
    if (item && obj && cJSON_AddItemToObjectCS(obj, key, item)) return;
    cJSON_Delete(item);
    json_failed = 1;
}

void lt__json_push(cJSON *arr, cJSON *item) {
    if (item && arr && cJSON_AddItemToArray(arr, item)) return;
    cJSON_Delete(item);
    json_failed = 1;
}
