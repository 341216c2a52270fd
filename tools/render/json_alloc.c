/* tools/render/json_alloc.c — cJSON's allocations through kernels/alloc.h, with a
 * failure flag (why: tools/render/json_alloc.h). */
#include "tools/render/json_alloc.h"

#include "kernels/alloc.h"

#include <pthread.h>

static _Thread_local int json_failed;   /* per thread, like lt_errmsg() */

static void *json_malloc(size_t n) {
    void *p = lt__malloc(n);
    if (!p) json_failed = 1;
    return p;
}

static void init_hooks(void) {
    static cJSON_Hooks hooks = {json_malloc, lt__free};
    cJSON_InitHooks(&hooks);
}

/* The hooks are process-wide (cJSON keeps them in globals): set once, so
 * that builders on several threads (sweep cases, kernels/pool.h) do not
 * write them at the same time; the failure flag is this thread's. */
void lt__json_begin(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_hooks);
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
