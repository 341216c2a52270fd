/* tools/render.h — how the CLI and the scenario engine show a DTensor:
 * a per-rank table, a picture of who owns which block, and JSON. */
#ifndef LT_RENDER_H
#define LT_RENDER_H

#include <stdio.h>

#include <cJSON.h>

#include "localtensor/localtensor.h"

/* Per-rank table: rank, coordinate, local shape, global offset, values (when
 * a shard has at most max_values elements). */
lt_status lt_render_ranks(FILE *f, const lt_dtensor *dt, int max_values);

/* For 1-D and 2-D tensors: which ranks hold each index (or block of indices
 * when a dim is longer than 24), Partial dims and empty shards called out.
 * Other ranks: a one-line note. */
lt_status lt_render_picture(FILE *f, const lt_dtensor *dt);

/* Header lines: mesh, global shape, dtype, placements. */
void lt_render_header(FILE *f, const lt_dtensor *dt);

/* Values of a tensor as "[0, 1, 2]" (flat, row-major) into f; at most max
 * elements, then "...". */
void lt_render_values(FILE *f, const lt_tensor *t, int64_t max);

/* JSON pieces (new cJSON objects; caller owns them). */
cJSON *lt_json_i64_array(const int64_t *v, int n);
cJSON *lt_json_mesh(const lt_mesh *m);
cJSON *lt_json_placements(const lt_placement *pl, int n);
/* {"rank", "coord", "local_shape", "global_offset", "values"} for every rank. */
cJSON *lt_json_ranks(const lt_dtensor *dt);

/* Writes a cJSON tree to f followed by a newline; frees nothing. */
lt_status lt_json_print(FILE *f, const cJSON *j);

#endif
