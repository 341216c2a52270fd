/* tools/picture/picture_impl.h — what the run pictures (run_html.c,
 * timeline.c) share: walking a run's JSON report case by case, with the
 * mesh and declared shapes the report itself does not carry. Internal to
 * tools/picture/. */
#ifndef LT_PICTURE_IMPL_H
#define LT_PICTURE_IMPL_H

#include "tools/picture/picture.h"

/* One case of a report, as the walk hands it over (everything borrowed
 * from the report and info). */
typedef struct lt__pic_case {
    const char *path;     /* its file */
    const char *scenario; /* its scenario's name */
    const cJSON *c;       /* the case object of the report */
    int index;            /* the case's number in the walk, from 0 */
    int has_mesh;         /* mesh known (from info) */
    lt_mesh mesh;
    int world;            /* ranks: the mesh's, else the trace's byte arrays', else 1 */
    const cJSON *tensors; /* {NAME: [shape]} from info, or NULL */
} lt__pic_case;

/* Calls fn on every case of report in order; stops at the first non-OK
 * status and returns it. LT_INVALID when report has no "files" array. */
lt_status lt__pic_walk(const cJSON *report, const cJSON *info,
                       lt_status (*fn)(const lt__pic_case *pc, void *ctx), void *ctx);

/* The string member `key` of o, or "" (never NULL). */
const char *lt__pic_str(const cJSON *o, const char *key);

/* 1 when failure object x is a first-divergence report. */
int lt__pic_is_divergence(const cJSON *x);

/* Where failure x happened among the case's traced steps, by the line its
 * message names ("... at FILE:LINE:COL", else its own line): the index of
 * the traced step at that line (*exact 1), else of the first traced step
 * after it, or the number of traced steps (*exact 0). -1 when no line is known. */
int lt__pic_failure_step(const cJSON *c, const cJSON *x, int *exact);

/* Bars of bytes received per rank (v: (world)), at most LT_PIC_MAX_BARS,
 * as an inline SVG (html.c). */
void lt__pic_bars(FILE *f, const size_t *v, int world);

#endif
