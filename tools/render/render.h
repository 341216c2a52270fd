/* tools/render/render.h — how the CLI and the scenario engine show a DTensor:
 * a per-rank table, a picture of who owns which block, and JSON. */
#ifndef LT_RENDER_H
#define LT_RENDER_H

#include <stdio.h>

#include <cJSON.h>

#include "localtensor/localtensor.h"

/* What layout math can describe of dt: *v = dt, or for a RaggedShard
 * layout its view (localtensor/ragged.h; shape (F, *shape[k:]), the
 * RaggedShard an explicit-sizes Shard(0)) kept in *buf, which borrows dt's
 * shards (never free it; valid while dt is). The tables, pictures and JSON
 * below show a RaggedShard through it. */
lt_status lt_render_layout(const lt_dtensor *dt, lt_dtensor *buf, const lt_dtensor **v);

/* Per-rank table: rank, coordinate, local shape, global offset, values (at
 * most max_values of them; a 2-D or higher shard prints as nested rows, one
 * row per line). The global offset is the first index a rank holds; a
 * strided shard (indices not one contiguous run along some dim) is marked
 * with '*' and a note under the table. */
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
/* {"rank", "coord", "local_shape", "global_offset", "strided", "values"} for
 * every rank ("strided": the shard's indices are not one contiguous run
 * along some dim, so global_offset is only its first index). A RaggedShard
 * layout: shapes and offsets of its view (lt_render_layout), plus
 * "first_element", the flat index of the shard's first element (-1 when
 * empty). */
cJSON *lt_json_ranks(const lt_dtensor *dt);
/* LT_OK when the JSON document of lt_json_ranks(dt) (about
 * LT_JSON_BYTES_PER_VALUE bytes per value: a cJSON node, its allocation and
 * its printed text) fits in memory; otherwise LT_NOMEM with the "needs X
 * ... more than this machine's Y" message, before anything is built. */
#define LT_JSON_BYTES_PER_VALUE 192
lt_status lt_json_ranks_check(const lt_dtensor *dt);

/* The steps of plan p: [{"step" (from 1), "mesh_dim", "from", "to",
 * "collective", "local"?, "action" (lt_plan_step_action), "bytes_per_rank"
 * (the most any one rank receives), "bytes_total", "bytes_sent": [world],
 * "bytes_recv": [world], "placements_after"}]. The per-rank arrays come
 * from the comm trace the plan ran on: its events from index `since` on are
 * matched to the plan's collectives in order (local steps: zeros). Without
 * a trace (NULL) they are left out. A new array the caller frees. */
cJSON *lt_json_plan(const lt_plan *p, const lt_trace *trace, size_t since);

/* Writes a cJSON tree to f followed by a newline; frees nothing. */
lt_status lt_json_print(FILE *f, const cJSON *j);

/* {"events": [{"collective", "mesh_dim", "groups", "group_size", "dtype"?,
 * "op"?, "root"?, "dim"?, "concat_dim"?, "label", "bytes_sent": [world],
 * "bytes_recv": [world], "total_bytes_sent", "total_bytes_recv",
 * "busbw_factor"}...], "total_bytes_sent", "total_bytes_recv"} for events
 * [since, count). A new object the caller frees with cJSON_Delete; NULL when
 * out of memory. (tools/render/trace_json.c) */
cJSON *lt_trace_to_json(const lt_trace *t, size_t since);

#endif
