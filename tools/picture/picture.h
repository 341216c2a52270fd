/* tools/picture/picture.h — pictures of layouts, plans and per-rank programs
 * for people who would rather look than read: SVG of one layout (`show
 * --svg`), one self-contained HTML page (`show/redistribute/run --html`:
 * inline SVG, CSS and a little JS, nothing fetched) and the Chrome Trace
 * Event JSON that Perfetto and chrome://tracing open (`run --timeline`).
 *
 * Who holds what comes from the library's layout math (lt_layout_rank), never
 * from values, so a picture costs the same whatever the dtype or the numerics
 * mode. A run's pictures are drawn from the run's own JSON report (the
 * document `run --json --trace` writes, tools/scenario/report.c): the HTML and
 * the timeline show what the report says and nothing recomputed beside it.
 *
 * Everything drawn is capped (blocks per tensor dim, legend rows, lanes,
 * bars); what was left out is said in the picture. Errors are statuses with
 * messages (kernels/status.h); a write error on the FILE is the caller's to
 * check (ferror), as for the other renderers.
 */
#ifndef LT_PICTURE_H
#define LT_PICTURE_H

#include <stdio.h>

#include <cJSON.h>

#include "localtensor/localtensor.h"

/* Caps on what one picture draws. */
#define LT_PIC_MAX_BLOCKS 32  /* blocks along one tensor dim; more are sampled */
#define LT_PIC_MAX_LEGEND 16  /* legend rows; the rest summed up in one line */
#define LT_PIC_MAX_LANES  64  /* timeline lanes (ranks) drawn in HTML */
#define LT_PIC_MAX_BARS   512 /* bars of one bytes-per-rank chart */
/* the index lists of all ranks one picture may build (elements): beyond it a
 * picture is the summary only */
#define LT_PIC_MAX_LIST_ELEMS ((int64_t)1 << 26)

/* One layout: the mesh, the global shape and checked placements (one per
 * mesh dim; borrowed). */
typedef struct lt_pic_layout {
    const lt_mesh *mesh;
    int ndim;
    const int64_t *shape;   /* (ndim) */
    const lt_placement *pl; /* (mesh->ndim) */
} lt_pic_layout;

/* Writes the layout as an SVG element to f: for 1-D and 2-D tensors the
 * tensor as a grid of blocks, each coloured by the set of ranks holding it
 * and labelled with them (mesh coordinates for a single holder), Partial
 * hatched with its reduce op, a legend and the empty shards listed; for 3-D+
 * tensors and meshes over 64 ranks one strip per mesh dim (the ranks along
 * it from rank 0's group) and a table of who holds what fraction instead of
 * a wall. standalone: 1 writes an XML prolog and the SVG namespace (a file
 * of its own), 0 an element to inline in HTML. Every coloured block carries
 * class "lt-block"; the legend's rows class "lt-legend". A RaggedShard
 * layout is drawn as its view (shape (F, *shape[k:]); localtensor/ragged.h).
 * Errors: the layout errors of lt_layout_rank (and lt_ragged_view_of),
 * LT_NOMEM. */
lt_status lt_picture_svg(FILE *f, const lt_pic_layout *lay, const char *title, int standalone);

/* The opening of a self-contained HTML page (doctype, inline CSS and the
 * script that checks the page on load) titled `title` (escaped), and its
 * end. Between them, sections written with the functions below. */
void lt_picture_html_begin(FILE *f, const char *title);
void lt_picture_html_end(FILE *f);

/* Writes a file whole or not at all: fn(f, ctx) into "path.tmp", then
 * renamed over path. Errors: fn's status, or LT_IO naming `what` (the
 * option, "--svg") and the path when the file cannot be written. */
lt_status lt_picture_write_file(const char *path, const char *what,
                                lt_status (*fn)(FILE *f, void *ctx), void *ctx);

/* Text escaped for HTML and SVG (& < > " ') into f. */
void lt_picture_escape(FILE *f, const char *s);

/* A redistribute's plan as a diagram: one column per state (the source,
 * then the layout after each step), each with its picture, and under each
 * step the bytes every rank received as bars. bytes_recv: (nsteps) arrays
 * of (mesh->world) bytes, or NULL to draw the plan's own bytes_per_rank.
 * Errors: as lt_picture_svg. */
lt_status lt_picture_plan_html(FILE *f, const lt_plan *p, const size_t *const *bytes_recv);

/* `redistribute --html FILE`: a page with the redistribute's title, its plan
 * diagram (bytes per rank read off trace: its events from the first on,
 * matched in order to the plan's collectives; NULL: the plan's own
 * bytes_per_rank) and `note` (escaped; NULL: none), written whole or not at
 * all. Errors: as lt_picture_write_file. */
lt_status lt_picture_redistribute_file(const char *path, const lt_plan *p, const lt_trace *trace,
                                       const char *note);

/* Compact per-shard view for the terminal: ranks grouped by local shape,
 * one line a group ("ranks 0-63 (64): local shape (128, 8192), 1.5625% of
 * the tensor each"), at most max_lines groups, then how many were left out.
 * A RaggedShard layout: its view's local shapes (the shards' own). Errors:
 * the layout errors of lt_local_shape_and_offset (and lt_ragged_view_of). */
lt_status lt_picture_shard_summary(FILE *f, const lt_pic_layout *lay, int max_lines);

/* A run's pictures are drawn from its JSON report (`run --json` with
 * --trace; borrowed) and `info`: an object mapping "FILE\tCASE" to
 * {"mesh": as lt_json_mesh writes it, "tensors": {NAME: [shape]}}, what the
 * report leaves out (borrowed; may be NULL or miss a case: then lanes come
 * from the byte arrays and no layout is drawn). */

/* The HTML page of a whole run: counts, failures first with links to their
 * cases, then per case its redistribute plans (steps as columns, the layout
 * after each when the tensor's shape is known, bytes per rank as bars), its
 * steps and collectives as a timeline (one lane per rank, matched calls
 * joined, at most LT_PIC_MAX_LANES lanes), a would-hang report drawn (who
 * waits where, who finished) and the first divergence marked. Errors:
 * LT_INVALID when the report is not one; the layout errors. */
lt_status lt_picture_run_html(FILE *f, const cJSON *report, const cJSON *info);

/* The same run as Chrome Trace Event JSON: {"traceEvents": [...],
 * "displayTimeUnit": "ms", "otherData": {...}}. One pid per (case, rank)
 * with process_name metadata; a complete ("X") event per step on every rank
 * (collectives named after the call, with the bytes in args); flow events
 * ("s", "t", "f" with one id per matched group call) joining a collective's
 * ranks; instant ("i") events for a would-hang report's waiting and finished
 * ranks and for a divergence. Timestamps are the steps' order (10 us a
 * step), not measured time: the simulator runs the ranks one after another.
 * A new object the caller frees with cJSON_Delete; NULL when out of memory
 * or when report is not one (lt_errmsg says). */
cJSON *lt_picture_timeline(const cJSON *report, const cJSON *info);

/* `run --html FILE` / `run --timeline FILE` (either may be NULL): runs the
 * scenario files of paths once more with opt's selection (-k, --world,
 * --numerics, --single-device), quietly, tracing, its JSON report into
 * "FILE.json.tmp" (removed after), and draws that report, with the meshes
 * and declared shapes of the files' scenarios (sweeps: none). Each file is
 * written whole or not at all. Errors: the report or a file that cannot be
 * written (LT_IO, naming the option), LT_NOMEM. (tools/picture/run_files.c) */
struct lt_sc_options;
lt_status lt_picture_run(const char *const *paths, int npaths, const struct lt_sc_options *opt,
                         const char *html, const char *timeline);

#endif
