/* tools/cli/cli_redistribute.c — `localtensor redistribute`: plan, run and verify
 * a redistribute, and show the plan and every rank's result. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "localtensor/localtensor.h"
#include "localtensor/redistribute.h"
#include "tools/cli/cli.h"
#include "tools/cli/cli_plan_cost.h"
#include "tools/render/json_alloc.h"
#include "tools/render/render.h"
#include "tools/picture/picture.h"
#include "kernels/status_impl.h"
#include "localtensor/plan/plan_impl.h"
#include "kernels/alloc.h"

/* One line per known PyTorch bug (localtensor/pytorch_bugs.h) this
 * redistribute matches, after the plan. */
static void print_pytorch_bugs(FILE *f, const lt_plan *p) {
    lt_spec src = lt__plan_spec(p, p->src);
    uint32_t hits = lt_pytorch_bugs_redistribute(&src, p->dst);
    for (int b = 0; b < LT_PYTORCH_BUG_COUNT; b++) {
        char line[768];
        if (!(hits >> b & 1)) continue;
        lt_pytorch_bug_format((lt_pytorch_bug)b, line, sizeof line);
        fprintf(f, "%s\n", line);
    }
}

/* --objective, --topology, --moves, --compare of the command running
 * (cli_plan_cost.h); this thread's planner reads .cost while it runs. */
static lt_cli_cost cli_cost;

/* The plan table, then its known-PyTorch-bug warnings. */

static lt_status print_plan(const lt_plan *p) {
    lt_status st = lt_plan_print(p, stdout);
    if (!st) st = lt_cli_cost_print(stdout, &cli_cost, p);
    if (!st) print_pytorch_bugs(stdout, p);
    return st;
}

/* The same warnings as a JSON array of strings (for --json). */
static cJSON *json_pytorch_bugs(const lt_plan *p) {
    lt_spec src = lt__plan_spec(p, p->src);
    uint32_t hits = lt_pytorch_bugs_redistribute(&src, p->dst);
    cJSON *a = cJSON_CreateArray();
    for (int b = 0; a && b < LT_PYTORCH_BUG_COUNT; b++) {
        char line[768];
        if (!(hits >> b & 1)) continue;
        lt_pytorch_bug_format((lt_pytorch_bug)b, line, sizeof line);
        lt__json_push(a, cJSON_CreateString(line + strlen("warning: ")));
    }
    return a;
}

static void redist_usage(FILE *f) {
    fprintf(
        f,
        "usage: localtensor redistribute --mesh M --shape S --from P --to P [--dtype D]\n"
        "                                [--init I] [--planner greedy|min-cost] [--explain]\n"
        "                                [--no-verify] [--json] [--numerics full|sample:K|none]\n"
        "                                [--quiet] [--plan-only] [--html FILE]\n"
        "                                [--objective O] [--topology T] [--moves M]\n"
        "                                [--compare]\n"
        "\n"
        "Distributes a tensor with --from placements, plans the redistribute to --to,\n"
        "runs it through the simulated collectives and checks the result (and every\n"
        "intermediate layout) against an independent direct reshard.\n"
        "\n"
        "  --mesh M            8, 2x4, 2x2x2 or named dp=2,tp=4\n"
        "  --shape S           5, 5,7 or 0,3\n"
        "  --from P, --to P    placements, one per mesh dim (see `localtensor show --help`)\n"
        "  --dtype D           f32 (default), f64, bf16, f16, i32, i64, bool\n"
        "  --init I            arange (default), zeros, ones, random:SEED, randn:SEED\n"
        "  --planner P         min-cost (default: least --objective cost over plans of steps\n"
        "                      of one collective along one mesh dim or local work,\n"
        "                      docs/SEMANTICS.md §7) or greedy (PyTorch's order)\n"
        "  --explain           show every intermediate layout\n"
        "  --no-verify         skip the check against the direct reshard\n"
        "  --json              machine-readable output; each plan step also lists the bytes\n"
        "                      every rank sends and receives (bytes_sent, bytes_recv)\n"
        "  --numerics N        full (default): every rank's values; sample:K: values for K\n"
        "                      ranks only (the first, the last and evenly spaced between;\n"
        "                      `sample` is sample:4), computed without the other ranks'\n"
        "                      shards; none: no values. Plan, shapes, offsets and every\n"
        "                      rank's bytes are the same in every mode\n"
        "  --quiet             the plan and the verdict; every rank's table replaced by one\n"
        "                      line per local shape (for big meshes)\n"
        "  --plan-only         print the plan and stop: no tensor is built or moved\n"
        "  --html FILE         also write a self-contained HTML page: the plan as a diagram\n"
        "                      (the layout after each step, bytes per rank as bars)\n"
        "  --objective O       what min-cost minimises: time (default: the estimated time on\n"
        "                      --topology, summed over steps; a step takes rounds x latency\n"
        "                      + the busiest rank's bytes / bandwidth), bytes (received,\n"
        "                      summed over ranks and steps) or max-rank-bytes (per step the\n"
        "                      busiest rank's bytes, summed); ties: fewer total bytes, then\n"
        "                      fewer steps; docs/SEMANTICS.md §7\n"
        "  --topology T        uniform (default: every mesh dim 5 us, 25 GB/s), nvlink-ib\n"
        "                      (the last mesh dim 2 us, 300 GB/s) or a JSON file\n"
        "                      {\"dims\": [{\"alpha_us\": 5, \"beta_GBps\": 25}, ...]}\n"
        "                      (an entry may add \"algorithms\": {\"all_reduce\": \"tree\"}:\n"
        "                      ring, tree, direct or default per collective)\n"
        "  --moves M           collectives (default: every collective) or dtensor (only what\n"
        "                      PyTorch DTensor issues: no gather, scatter, reduce, permute);\n"
        "                      all: flattened groups, whole-mesh permute\n"
        "  --compare           the plan of every objective, side by side\n"
        "                      (any of these four adds the estimated times and PyTorch's\n"
        "                      greedy order against this plan after the plan table)\n"
        "\n"
        "The plan table: steps are numbered from 1; `collective` names the collective and any\n"
        "local work after it, or `local ...` for a step without communication. bytes/rank is\n"
        "the most bytes any one rank receives from other ranks in that step (a rank's own data\n"
        "never counts; all_reduce counts its reduce_scatter and all_gather halves); bytes total\n"
        "sums what every rank receives. min-cost minimises the plan's --objective (time by\n"
        "default), then its total bytes, then the number of steps.\n"
        "\n"
        "Exit codes: 0 ok, 1 verification failed, 2 bad input or unsupported transition.\n");
}

/* "localtensor redistribute: verification failed: ..." on stderr. */
static void verify_failed(const lt_verify_report *rep) {
    char msg[sizeof rep->message + 2100];
    snprintf(msg, sizeof msg, "verification failed: %s",
             rep->message[0] ? rep->message : lt_errmsg());
    lt_cli_print(stderr, "redistribute", msg);
}

/* The plan's total bytes, its costs (cli_plan_cost.h) and its
 * known-PyTorch-bug warnings, into o. */
static void add_totals(cJSON *o, const lt_plan *plan) {
    cJSON_AddNumberToObject(o, "total_bytes", (double)plan->total_bytes);
    lt__json_put(o, "cost", lt_cli_cost_json(&cli_cost, plan));
    lt__json_put(o, "pytorch_bugs", json_pytorch_bugs(plan));
}

/* --explain: every intermediate layout, as the direct reshard computes it
 * (verification has checked the executed intermediates equal these). */
static lt_status explain(FILE *f, const lt_dtensor *src, const lt_plan *p) {
    char pl[512];
    for (int s = 0; s < p->nsteps; s++) {
        const lt_plan_step *st = &p->steps[s];
        char a[256], b[256];
        lt_placement_format(&st->from, a, sizeof a);
        lt_placement_format(&st->to, b, sizeof b);
        char act[128];
        lt_placements_format(st->after, p->mesh.ndim, pl, sizeof pl);
        char md[32];   /* a flattened group (--moves all): "mesh dims 0..1" */
        if (st->mesh_span > 1)
            snprintf(md, sizeof md, "mesh dims %d..%d", st->mesh_dim,
                     st->mesh_dim + st->mesh_span - 1);
        else snprintf(md, sizeof md, "mesh dim %d", st->mesh_dim);
        fprintf(f, "\n-- after step %d: %s %s -> %s (%s) => %s\n", s + 1, md, a, b,
                lt_plan_step_action(st, act, sizeof act), pl);
        lt_dtensor *mid = NULL;
        LT_TRY(lt_reshard_direct(src, st->after, p->mesh.ndim, &mid, NULL));
        lt_status rs = lt_render_ranks(f, mid, 32);
        lt_dtensor_free(mid);
        LT_TRY(rs);
    }
    return LT_OK;
}

/* The result in --numerics sample or none mode: the plan as in full mode,
 * values for the sampled ranks only (localtensor/numerics.h), every rank's
 * bytes from lt_plan_trace. Returns the exit code. */
/* --quiet: the result as one line per local shape. */
static lt_status quiet_result(FILE *f, const lt_plan *p, const char *why) {
    lt_pic_layout lay = {&p->mesh, p->ndim, p->shape, p->dst};
    fprintf(f, "\nresult (%s: ranks grouped by local shape):\n", why);
    return lt_picture_shard_summary(f, &lay, 12);
}

/* "verified: yes (...)" or "NO", green or red on a terminal (NO_COLOR unset). */
static void print_verified(int ok, const char *why) {
    int c = lt_cli_use_color(stdout);
    printf("\nverified: %s%s%s%s%s\n", c ? (ok ? "\033[32m" : "\033[31m") : "", ok ? "yes (" : "NO",
           ok ? why : "", ok ? ")" : "", c ? "\033[0m" : "");
}

/* --explain: the source's table, then every intermediate layout. */
static lt_status explain_source(FILE *f, const lt_dtensor *in, const lt_plan *p, const char *pl) {
    fprintf(f, "\n-- source %s\n", pl);
    LT_TRY(lt_render_ranks(f, in, 32));
    return explain(f, in, p);
}

/* The result of a run: every rank's table and the picture; with --quiet, or
 * over 16 ranks on a terminal, one line per local shape instead. */
static lt_status result_text(FILE *f, const lt_plan *p, const lt_dtensor *out, int quiet) {
    if (quiet) return quiet_result(f, p, "--quiet");
    if (!out) return LT_OK;
    if (isatty(fileno(f)) && p->mesh.world > 16)
        return quiet_result(f, p, "over 16 ranks on a terminal; piped or --json: every rank");
    fprintf(f, "\nresult:\n");
    LT_TRY(lt_render_ranks(f, out, 64));
    fprintf(f, "\n");
    return lt_render_picture(f, out);
}

/* A sampled run's results, for its reports. */
typedef struct sampled_out {
    const lt_cli_layout *lay;
    lt_planner planner;
    const int *ranks;          /* (n) the sampled ranks */
    int n, verify;
    const char *nms, *rs;      /* the numerics and the ranks, as text */
    const lt_plan *plan;
    const lt_dtensor *out;     /* the sampled ranks' shards, or NULL */
    const lt_trace *trace;     /* the plan's comm trace, or NULL */
    lt_status st;              /* the redistribute's: LT_OK or LT_MISMATCH */
    const lt_verify_report *rep;
} sampled_out;

static lt_status sampled_json(const sampled_out *so) {
    const lt_mesh *mesh = &so->lay->mesh;
    if (so->out) LT_TRY(lt_json_ranks_check(so->out));
    lt__json_begin();
    cJSON *o = cJSON_CreateObject();
    lt__json_put(o, "mesh", lt_json_mesh(mesh));
    lt__json_put(o, "global_shape", lt_json_i64_array(so->lay->shape, so->lay->ndim));
    cJSON_AddStringToObject(o, "dtype", lt_dtype_name(so->lay->dtype));
    lt__json_put(o, "from", lt_json_placements(so->plan->src, mesh->ndim));
    lt__json_put(o, "to", lt_json_placements(so->plan->dst, mesh->ndim));
    cJSON_AddStringToObject(o, "planner", lt_planner_name(so->planner));
    cJSON_AddBoolToObject(o, "search_truncated", so->plan->search_truncated);
    cJSON_AddStringToObject(o, "numerics", so->nms);
    cJSON *sr = cJSON_AddArrayToObject(o, "sampled_ranks");
    for (int i = 0; i < so->n; i++) lt__json_push(sr, cJSON_CreateNumber(so->ranks[i]));
    lt__json_put(o, "plan", lt_json_plan(so->plan, so->trace, 0));
    add_totals(o, so->plan);
    if (so->verify) cJSON_AddBoolToObject(o, "verified", so->st == LT_OK);
    else cJSON_AddNullToObject(o, "verified");
    if (so->st == LT_MISMATCH)
        cJSON_AddStringToObject(o, "error", so->rep->message[0] ? so->rep->message : lt_errmsg());
    if (so->out) lt__json_put(o, "ranks", lt_json_ranks(so->out));
    lt_status js = lt_json_print(stdout, o);
    cJSON_Delete(o);
    return js;
}

static lt_status sampled_text(const sampled_out *so, int quiet) {
    const lt_cli_layout *lay = so->lay;
    const lt_mesh *mesh = &lay->mesh;
    char a[512], b[512], ms[128], ss[128];
    lt_placements_format(so->plan->src, mesh->ndim, a, sizeof a);
    lt_placements_format(so->plan->dst, mesh->ndim, b, sizeof b);
    printf("redistribute %s -> %s on mesh %s (%d rank%s), global shape %s, %s, planner %s\n", a, b,
           lt_mesh_format(mesh, ms, sizeof ms), mesh->world, mesh->world == 1 ? "" : "s",
           lt_shape_format(lay->ndim, lay->shape, ss, sizeof ss), lt_dtype_name(lay->dtype),
           lt_planner_name(so->planner));
    if (so->n && so->n >= mesh->world)
        printf("numerics %s: values for every rank (%s)\n", so->nms, so->rs);
    else if (so->n)
        printf("numerics %s: values for rank%s %s; the other ranks: layout only\n", so->nms,
               so->n == 1 ? "" : "s", so->rs);
    else printf("numerics none: no values, layout and bytes only\n");
    printf("\nplan:\n");
    lt_status ps = print_plan(so->plan);
    if (!ps && quiet) {
        ps = quiet_result(stdout, so->plan, "--quiet");
    } else if (!ps && so->out) {
        printf("\nresult:\n");
        ps = lt_render_ranks(stdout, so->out, 64);
        printf("\n");
        if (!ps) ps = lt_render_picture(stdout, so->out);
    }
    if (!ps && so->verify)
        print_verified(so->st == LT_OK, "the sampled ranks match the direct definition");
    return ps;
}

/* --numerics sample/none: the sampled ranks' values only (the others'
 * layouts; the bytes from the plan's trace). Returns the exit code. */
static int run_sampled(const lt_cli_layout *lay, const lt_placement *src, int nsrc,
                       const lt_placement *dst, int ndst, const lt_numerics *nm, lt_planner planner,
                       int verify, int json, int quiet, const char *html) {
    const char *cmd = "redistribute";
    const lt_mesh *mesh = &lay->mesh;
    lt_placement norm[LT_MESH_MAX_DIMS];
    lt_spec spec;
    lt_status st = lt_placements_check(mesh, lay->ndim, src, nsrc, norm);
    if (!st) st = lt_spec_init(mesh, lay->dtype, lay->ndim, lay->shape, norm, nsrc, &spec);
    if (st) return lt__err_ctx(st, "--from"), lt_cli_fail(cmd, st);
    int cap = lt_numerics_count(nm, mesh->world);
    int *ranks = lt__malloc(sizeof(int) * (size_t)(cap > 0 ? cap : 1));
    if (!ranks) return lt_cli_fail(cmd, lt__err(LT_NOMEM, "out of memory"));
    int n = lt_numerics_ranks(nm, mesh->world, ranks);
    lt_verify_report rep;
    memset(&rep, 0, sizeof rep);
    lt_redistribute_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.planner = planner;
    opts.verify = verify && n > 0;
    opts.report = &rep;
    lt_dtensor *out = NULL;
    lt_plan *plan = NULL;
    lt_trace *trace = NULL;
    char nms[32], rs[512];
    lt_numerics_format(nm, nms, sizeof nms);
    lt_numerics_ranks_format(ranks, n, 16, rs, sizeof rs);
    st = lt_redistribute_ranks(&spec, &lay->init, dst, ndst, ranks, n, &opts, &out, &plan);
    lt_status fs = st && st != LT_MISMATCH ? st : LT_OK;
    if (!fs && (json || html)) fs = lt_trace_new(mesh->world, &trace);
    if (!fs && (json || html)) fs = lt_plan_trace(plan, trace);
    if (!fs && html)
        fs = lt_picture_redistribute_file(html, plan, trace,
                                          "bytes per rank from the plan's comm trace "
                                          "(--numerics sample or none)");
    sampled_out so = {lay, planner, ranks, n, opts.verify, nms, rs, plan, out, trace, st, &rep};
    if (!fs) fs = json ? sampled_json(&so) : sampled_text(&so, quiet);
    int rc = fs ? lt_cli_fail(cmd, fs) : 0;
    if (!fs && st == LT_MISMATCH) {
        verify_failed(&rep);
        rc = 1;
    }
    lt_trace_free(trace);
    lt_plan_free(plan);
    lt_dtensor_free(out);
    lt__free(ranks);
    return rc;
}

/* --plan-only: the plan, printed (or as --json, or drawn with --html),
 * without building or moving any tensor. Returns the exit code. */
static int plan_only_main(const lt_cli_layout *lay, const lt_placement *src,
                          const lt_placement *dst, int ndst, lt_planner planner, int json,
                          const char *html) {
    const char *cmd = "redistribute";
    lt_redistribute_opts popts;
    memset(&popts, 0, sizeof popts);
    popts.planner = planner;
    lt_plan *plan = NULL;
    lt_trace *trace = NULL;
    lt_status st = lt_plan_redistribute(&lay->mesh, lay->dtype, lay->ndim, lay->shape, src, dst,
                                        ndst, &popts, &plan);
    if (!st) st = lt_trace_new(lay->mesh.world, &trace);
    if (!st) st = lt_plan_trace(plan, trace);
    if (!st && html)
        st = lt_picture_redistribute_file(html, plan, trace, "--plan-only: nothing was run");
    if (!st && json) {
        lt__json_begin();
        cJSON *o = cJSON_CreateObject();
        lt__json_put(o, "mesh", lt_json_mesh(&lay->mesh));
        lt__json_put(o, "global_shape", lt_json_i64_array(lay->shape, lay->ndim));
        lt__json_put(o, "from", lt_json_placements(plan->src, lay->mesh.ndim));
        lt__json_put(o, "to", lt_json_placements(plan->dst, lay->mesh.ndim));
        lt__json_put(o, "plan", lt_json_plan(plan, trace, 0));
        add_totals(o, plan);
        st = lt_json_print(stdout, o);
        cJSON_Delete(o);
    } else if (!st) {
        char a[512], b[512], ms[128], ss[128];
        lt_placements_format(plan->src, lay->mesh.ndim, a, sizeof a);
        lt_placements_format(plan->dst, lay->mesh.ndim, b, sizeof b);
        printf("redistribute %s -> %s on mesh %s (%d rank%s), global shape %s, %s, planner %s\n",
               a, b, lt_mesh_format(&lay->mesh, ms, sizeof ms), lay->mesh.world,
               lay->mesh.world == 1 ? "" : "s",
               lt_shape_format(lay->ndim, lay->shape, ss, sizeof ss), lt_dtype_name(lay->dtype),
               lt_planner_name(planner));
        printf("\nplan (--plan-only: nothing was run):\n");
        st = print_plan(plan);
    }
    lt_trace_free(trace);
    lt_plan_free(plan);
    return st ? lt_cli_fail(cmd, st) : 0;
}

/* `redistribute`'s command line, read and checked. */
typedef struct redist_cmd {
    const char *mesh_s, *shape_s, *from_s, *to_s, *dtype_s, *init_s, *planner_s, *numerics_s,
        *html_s;
    int json, explain, verify, quiet, plan_only;
    lt_cli_layout lay;
    lt_placement src[LT_MESH_MAX_DIMS], dst[LT_MESH_MAX_DIMS];
    int nsrc, ndst;
    lt_planner planner;
    lt_numerics nm;
} redist_cmd;

/* Parses the layout, both placement lists (checked against it: the
 * planner takes one count for both), the planner and the numerics.
 * Returns -1, or the exit code (said). */
static int redist_parse(redist_cmd *c) {
    const char *cmd = "redistribute";
    char e[LT_CLI_ECHO_BUF];
    lt_placement chk[LT_MESH_MAX_DIMS];
    lt_status st;
    if ((st = lt_cli_parse_layout(c->mesh_s, c->shape_s, c->dtype_s, c->init_s, &c->lay)))
        return lt_cli_fail(cmd, st);
    if ((st = lt_placements_parse(c->from_s, c->src, LT_MESH_MAX_DIMS, &c->nsrc)))
        return lt__err_ctx(st, "--from"), lt_cli_fail(cmd, st);
    if ((st = lt_placements_parse(c->to_s, c->dst, LT_MESH_MAX_DIMS, &c->ndst)))
        return lt__err_ctx(st, "--to"), lt_cli_fail(cmd, st);
    if ((st = lt_planner_parse(c->planner_s, &c->planner)))
        return lt__err_ctx(st, "--planner"), lt_cli_fail(cmd, st);
    if ((st = lt_numerics_parse(c->numerics_s, &c->nm)))
        return lt__err_ctx(st, "--numerics"), lt_cli_fail(cmd, st);
    if (c->nm.kind != LT_NUMERICS_FULL && c->explain) {
        char nms[32];
        return lt_cli_fail(
            cmd, lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                              "not supported yet: --explain in --numerics %s mode (it shows every "
                              "rank's intermediate values)",
                              lt_numerics_format(&c->nm, nms, sizeof nms)));
    }
    if ((st = lt_placements_check(&c->lay.mesh, c->lay.ndim, c->src, c->nsrc, chk)))
        return lt__err_ctx(st, "--from %s", lt_cli_echo(c->from_s, e)), lt_cli_fail(cmd, st);
    if ((st = lt_placements_check(&c->lay.mesh, c->lay.ndim, c->dst, c->ndst, chk)))
        return lt__err_ctx(st, "--to %s", lt_cli_echo(c->to_s, e)), lt_cli_fail(cmd, st);
    return -1;
}

/* The --json report of a run (st: the redistribute's status, LT_OK or
 * LT_MISMATCH). */
static lt_status redist_json(const redist_cmd *c, const lt_dtensor *in, const lt_dtensor *out,
                             const lt_plan *plan, lt_comm *comm, lt_status st,
                             const lt_verify_report *rep) {
    const lt_cli_layout *lay = &c->lay;
    if (out) LT_TRY(lt_json_ranks_check(out));
    lt__json_begin();
    cJSON *o = cJSON_CreateObject();
    lt__json_put(o, "mesh", lt_json_mesh(&lay->mesh));
    lt__json_put(o, "global_shape", lt_json_i64_array(lay->shape, lay->ndim));
    cJSON_AddStringToObject(o, "dtype", lt_dtype_name(lay->dtype));
    lt__json_put(o, "from", lt_json_placements(in->placements, lay->mesh.ndim));
    lt__json_put(o, "to", lt_json_placements(plan->dst, lay->mesh.ndim));
    cJSON_AddStringToObject(o, "planner", lt_planner_name(c->planner));
    cJSON_AddBoolToObject(o, "search_truncated", plan->search_truncated);
    lt__json_put(o, "plan", lt_json_plan(plan, comm ? lt_comm_trace(comm) : NULL, 0));
    add_totals(o, plan);
    if (c->verify) cJSON_AddBoolToObject(o, "verified", st == LT_OK);
    else cJSON_AddNullToObject(o, "verified");
    if (st == LT_MISMATCH)
        cJSON_AddStringToObject(o, "error", rep->message[0] ? rep->message : lt_errmsg());
    if (out) lt__json_put(o, "ranks", lt_json_ranks(out));
    lt_status js = lt_json_print(stdout, o);
    cJSON_Delete(o);
    return js;
}

/* The text report of a run: the header, the plan, the intermediate
 * layouts (--explain), the result and the verdict. */
static lt_status redist_text(const redist_cmd *c, const lt_dtensor *in, const lt_dtensor *out,
                             const lt_plan *plan, lt_status st) {
    const lt_cli_layout *lay = &c->lay;
    const lt_mesh *mesh = &lay->mesh;
    char a[512], b[512], ms[128], ss[128];
    lt_placements_format(in->placements, mesh->ndim, a, sizeof a);
    lt_placements_format(plan->dst, mesh->ndim, b, sizeof b);
    printf("redistribute %s -> %s on mesh %s (%d rank%s), global shape %s, %s, planner %s\n", a, b,
           lt_mesh_format(mesh, ms, sizeof ms), mesh->world, mesh->world == 1 ? "" : "s",
           lt_shape_format(lay->ndim, lay->shape, ss, sizeof ss), lt_dtype_name(lay->dtype),
           lt_planner_name(c->planner));
    printf("\nplan:\n");
    LT_TRY(print_plan(plan));
    lt_status ts = c->quiet || !c->explain ? LT_OK : explain_source(stdout, in, plan, a);
    if (!ts) ts = result_text(stdout, plan, out, c->quiet);
    if (!ts && c->verify) print_verified(st == LT_OK, "every step matches the direct reshard");
    return ts;
}

/* Every rank's values: refused up front what would not fit in memory,
 * then the source built, redistributed (verified), reported. Returns the
 * exit code. */
static int redist_full(const redist_cmd *c) {
    const char *cmd = "redistribute";
    char e[LT_CLI_ECHO_BUF];
    const lt_cli_layout *lay = &c->lay;
    lt_dtensor *in = NULL, *out = NULL;
    lt_plan *plan = NULL;
    lt_comm *comm = NULL;   /* ours, so that --json can read the per-rank bytes off its trace */
    lt_redistribute_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.planner = c->planner;
    lt_status st = lt_plan_redistribute(&lay->mesh, lay->dtype, lay->ndim, lay->shape, c->src,
                                        c->dst, c->ndst, &opts, &plan);
    if (!st) st = lt__plan_check_memory(plan, c->verify, 1);
    lt_plan_free(plan);
    plan = NULL;
    if (st == LT_NOMEM) return lt_cli_fail(cmd, st);
    if ((st = lt_dtensor_new(&lay->mesh, lay->dtype, lay->ndim, lay->shape, c->src, c->nsrc,
                              &lay->init, &in)))
        return lt__err_ctx(st, "--from %s", lt_cli_echo(c->from_s, e)), lt_cli_fail(cmd, st);
    if ((c->json || c->html_s) && (st = lt_comm_new(&lay->mesh, &comm))) {
        lt_dtensor_free(in);
        return lt_cli_fail(cmd, st);
    }
    lt_verify_report rep;
    memset(&rep, 0, sizeof rep);
    opts.verify = c->verify;
    opts.report = &rep;
    opts.comm = comm;
    st = lt_redistribute(in, c->dst, c->ndst, &opts, &out, &plan);
    lt_status rs = st && st != LT_MISMATCH ? st : LT_OK;
    if (!rs)
        rs = c->json ? redist_json(c, in, out, plan, comm, st, &rep)
                     : redist_text(c, in, out, plan, st);
    const char *note = st == LT_MISMATCH ? "verification FAILED" : NULL;
    if (!rs && c->html_s)
        rs = lt_picture_redistribute_file(c->html_s, plan, lt_comm_trace(comm), note);
    int rc = rs ? lt_cli_fail(cmd, rs) : 0;
    if (!rs && st == LT_MISMATCH) {
        verify_failed(&rep);
        rc = 1;
    }
    lt_comm_free(comm);
    lt_plan_free(plan);
    lt_dtensor_free(out);
    lt_dtensor_free(in);
    return rc;
}

static int redistribute_main(int argc, char **argv) {
    redist_cmd c;
    memset(&c, 0, sizeof c);
    c.dtype_s = "f32";
    c.init_s = "arange";
    c.planner_s = "min-cost";
    c.numerics_s = "full";
    c.verify = 1;
    const lt_cli_option args[] = {
        {"--quiet", NULL, &c.quiet, 1},       {"--plan-only", NULL, &c.plan_only, 1},
        {"--html", &c.html_s, NULL, 0},       {"--mesh", &c.mesh_s, NULL, 0},
        {"--shape", &c.shape_s, NULL, 0},     {"--from", &c.from_s, NULL, 0},
        {"--to", &c.to_s, NULL, 0},           {"--dtype", &c.dtype_s, NULL, 0},
        {"--init", &c.init_s, NULL, 0},       {"--planner", &c.planner_s, NULL, 0},
        {"--json", NULL, &c.json, 1},         {"--explain", NULL, &c.explain, 1},
        {"--no-verify", NULL, &c.verify, 0},  {"--numerics", &c.numerics_s, NULL, 0},
        {NULL, NULL, NULL, 0},
    };
    int prc = lt_cli_parse_args("redistribute", argc, argv, args, redist_usage);
    if (prc >= 0) return prc;
    if (!c.mesh_s || !c.shape_s || !c.from_s || !c.to_s) {
        fprintf(stderr,
                "localtensor redistribute: --mesh, --shape, --from and --to are required\n\n");
        redist_usage(stderr);
        return 2;
    }
    if ((prc = redist_parse(&c)) >= 0) return prc;
    if (c.plan_only)
        return plan_only_main(&c.lay, c.src, c.dst, c.ndst, c.planner, c.json, c.html_s);
    if (c.nm.kind != LT_NUMERICS_FULL)
        return run_sampled(&c.lay, c.src, c.nsrc, c.dst, c.ndst, &c.nm, c.planner, c.verify, c.json,
                           c.quiet, c.html_s);
    return redist_full(&c);
}

/* The cost options are taken out of argv first (cli_plan_cost.c) and set
 * for every plan of the command; the rest is redistribute_main's. */
int lt_cli_redistribute(int argc, char **argv) {
    memset(&cli_cost, 0, sizeof cli_cost);
    char **kept = lt__malloc(sizeof(char *) * ((size_t)argc + 1));
    if (!kept) return lt_cli_fail("redistribute", lt__err(LT_NOMEM, "out of memory"));
    int n = lt_cli_cost_take(&cli_cost, argc, argv, kept), rc = 2;
    lt_status st = n < 0 ? LT_INVALID : lt_cli_cost_parse(&cli_cost, n, kept);
    if (st) rc = lt_cli_fail("redistribute", st);
    const lt_plan_cost *was = lt__plan_cost_swap(st ? NULL : &cli_cost.cost);
    if (!st) rc = redistribute_main(n, kept);
    lt__plan_cost_swap(was);
    lt__free(kept);
    return rc;
}
