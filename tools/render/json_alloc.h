/* tools/render/json_alloc.h — cJSON on the project's allocator.
 *
 * cJSON allocates through hooks; these route it through kernels/alloc.h so
 * its allocations can be made to fail like ours, and remember a failure:
 * cJSON's Add/Create calls return NULL or silently drop the item when an
 * allocation fails, so a document built without checking every call could
 * come out incomplete. A builder calls lt__json_begin() first and checks
 * lt__json_failed() before it uses the document (LT_NOMEM if set). One
 * document at a time per thread. */
#ifndef LT_TOOLS_JSON_ALLOC_H
#define LT_TOOLS_JSON_ALLOC_H

#include <cJSON.h>

/* Installs the hooks (idempotent) and clears the failure flag. */
void lt__json_begin(void);
/* 1 when a cJSON allocation failed since lt__json_begin. */
int lt__json_failed(void);

/* cJSON_AddItemToObjectCS / cJSON_AddItemToArray that own `item` either
 * way: when it cannot be added (a NULL item, container or key copy) it is
 * deleted and the failure flag is set. `key` must outlive obj (a literal). */
void lt__json_put(cJSON *obj, const char *key, cJSON *item);
void lt__json_push(cJSON *arr, cJSON *item);

#endif
