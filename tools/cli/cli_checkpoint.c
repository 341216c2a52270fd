/* tools/cli/cli_checkpoint.c — `localtensor checkpoint inspect|verify|reshard`:
 * sharded safetensors checkpoints (PyTorch DCP per-rank files, Hugging Face
 * sharded files with their index) read, proved and resharded. The work is
 * tools/checkpoint/; this file is arguments and printing. */
#include <string.h>

#include "kernels/status_impl.h"
#include "localtensor/localtensor.h"
#include "tools/checkpoint/checkpoint.h"
#include "tools/cli/cli.h"
#include "tools/render/json_alloc.h"
#include "tools/render/render.h"

static void ck_usage(FILE *f) {
    fprintf(
        f,
        "usage: localtensor checkpoint inspect DIR [--json]\n"
        "       localtensor checkpoint verify DIR\n"
        "       localtensor checkpoint reshard DIR --mesh M --placements P [--out OUT]\n"
        "                                          [--format dcp|hf]\n"
        "\n"
        "DIR is a checkpoint of safetensors files: PyTorch DCP's per-rank files (its Hugging Face\n"
        "storage writer; every piece's global offsets in __metadata__) or a Hugging Face sharded\n"
        "checkpoint (model-0000k-of-0000n.safetensors with model.safetensors.index.json).\n"
        "\n"
        "  inspect   tensors, global shapes, dtypes, each piece's file and byte range, and the\n"
        "            layout (placements on a mesh) that explains the pieces when one does\n"
        "  verify    every tensor covered exactly once (gaps and overlaps by global index box\n"
        "            and file), index and headers consistent; exit 1 listing each problem\n"
        "  reshard   the read plan of every target rank (file byte ranges, bytes, files opened);\n"
        "            with --out, writes the target checkpoint (--format dcp, the default: one\n"
        "            file per rank; hf: whole tensors and an index), then verifies it and\n"
        "            compares it element by element with DIR. Streams: memory stays a few MiB.\n"
        "  --mesh M          8, 2x4 or dp=2,tp=4\n"
        "  --placements P    one per mesh dim, for every tensor: R, S(0), Shard(1), ...\n"
        "\n"
        "Exit codes: 0 ok, 1 a problem found (verify) or the written checkpoint differs,\n"
        "2 bad input or usage.\n");
}

/* Opens DIR, or prints why and returns the exit code in *rc. */
static lt_ckpt *open_dir(const char *cmd, const char *dir, int *rc) {
    lt_ckpt *ck = NULL;
    lt_status st = lt__ck_open(dir, &ck);
    if (st) *rc = lt_cli_fail(cmd, st);
    return ck;
}

static cJSON *json_piece(const lt_ckpt *ck, const lt_ck_tensor *t, const lt_ck_piece *p) {
    const lt_st_entry *e = lt__ck_entry(ck, p);
    const lt_st_file *f = ck->files[p->file];
    cJSON *o = cJSON_CreateObject();
    lt__json_put(o, "file", cJSON_CreateString(ck->fname[p->file]));
    lt__json_put(o, "offset", lt_json_i64_array(p->off, t->ndim));
    lt__json_put(o, "shape", lt_json_i64_array(e->shape, t->ndim));
    int64_t br[2] = {(int64_t)(f->data_start + e->begin), (int64_t)(f->data_start + e->end)};
    lt__json_put(o, "bytes", lt_json_i64_array(br, 2));
    if (ck->frank[p->file] >= 0) lt__json_put(o, "rank", cJSON_CreateNumber(ck->frank[p->file]));
    return o;
}

static int inspect_json(const lt_ckpt *ck) {
    lt__json_begin();
    cJSON *o = cJSON_CreateObject(), *ts = cJSON_CreateArray();
    lt__json_put(o, "format", cJSON_CreateString(ck->format == LT_CK_DCP ? "dcp" : "hf"));
    lt__json_put(o, "files", cJSON_CreateNumber(ck->nfiles));
    for (int i = 0; i < ck->nt; i++) {
        const lt_ck_tensor *t = &ck->t[i];
        cJSON *j = cJSON_CreateObject(), *ps = cJSON_CreateArray();
        char lay[256];
        lt__json_put(j, "name", cJSON_CreateString(t->name));
        lt__json_put(j, "dtype", cJSON_CreateString(lt__st_dtype_name(t->dtype)));
        lt__json_put(j, "shape", lt_json_i64_array(t->shape, t->ndim));
        int ex = lt__ck_explain(ck, t, lay, sizeof lay);
        if (ex < 0) {
            cJSON_Delete(j), cJSON_Delete(ps), cJSON_Delete(o), cJSON_Delete(ts);
            return lt_cli_fail("checkpoint inspect", LT_NOMEM);
        }
        lt__json_put(j, "layout", ex ? cJSON_CreateString(lay) : cJSON_CreateNull());
        for (int k = 0; k < t->n; k++) lt__json_push(ps, json_piece(ck, t, &t->p[k]));
        lt__json_put(j, "pieces", ps);
        lt__json_push(ts, j);
    }
    lt__json_put(o, "tensors", ts);
    cJSON *pr = cJSON_CreateArray();
    for (int i = 0; i < ck->nprob; i++) lt__json_push(pr, cJSON_CreateString(ck->prob[i]));
    lt__json_put(o, "problems_reading", pr);
    lt_status st = lt__json_failed() ? lt__err(LT_NOMEM, "out of memory building JSON")
                                     : lt_json_print(stdout, o);
    cJSON_Delete(o);
    return st ? lt_cli_fail("checkpoint inspect", st) : 0;
}

static int inspect_text(const lt_ckpt *ck) {
    char de[LT_CLI_ECHO_BUF], ne[LT_CLI_ECHO_BUF], fe[LT_CLI_ECHO_BUF];
    printf("%s: %s checkpoint, %d file%s, %d tensor%s\n", lt_cli_echo(ck->dir, de),
           ck->format == LT_CK_DCP ? "PyTorch DCP (per-rank safetensors)"
                                   : "Hugging Face safetensors",
           ck->nfiles, ck->nfiles == 1 ? "" : "s", ck->nt, ck->nt == 1 ? "" : "s");
    for (int i = 0; i < ck->nt; i++) {
        const lt_ck_tensor *t = &ck->t[i];
        char lay[256], b[256];
        printf("\n%s  %s  shape (", lt_cli_echo(t->name, ne), lt__st_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++) printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
        printf(")  %d piece%s\n", t->n, t->n == 1 ? "" : "s");
        int ex = lt__ck_explain(ck, t, lay, sizeof lay);
        if (ex < 0) return lt_cli_fail("checkpoint inspect", LT_NOMEM);
        printf("  layout: %s\n", ex ? lay : "(no mesh explains these pieces)");
        for (int k = 0; k < t->n; k++) {
            const lt_st_entry *e = lt__ck_entry(ck, &t->p[k]);
            const lt_st_file *f = ck->files[t->p[k].file];
            printf("  %-22s %s  bytes %llu..%llu\n",
                   lt__ck_box(t->ndim, t->p[k].off, e->shape, b, sizeof b),
                   lt_cli_echo(ck->fname[t->p[k].file], fe),
                   (unsigned long long)(f->data_start + e->begin),
                   (unsigned long long)(f->data_start + e->end));
        }
    }
    if (ck->nprob)
        printf("\n%d problem%s while reading (run `checkpoint verify`)\n", ck->nprob,
               ck->nprob == 1 ? "" : "s");
    return 0;
}

static int cmd_inspect(const char *dir, int argc, char **argv) {
    int json = 0, rc = 0;
    const lt_cli_option opts[] = {{"--json", NULL, &json, 1}, {NULL, NULL, NULL, 0}};
    if ((rc = lt_cli_parse_args("checkpoint inspect", argc, argv, opts, ck_usage)) >= 0) return rc;
    rc = 0;
    lt_ckpt *ck = open_dir("checkpoint inspect", dir, &rc);
    if (!ck) return rc;
    if (json)
        rc = inspect_json(ck);
    else
        rc = inspect_text(ck);
    lt__ck_close(ck);
    return rc;
}

static int cmd_verify(const char *dir, int argc, char **argv) {
    int rc = 0;
    const lt_cli_option opts[] = {{NULL, NULL, NULL, 0}};
    if ((rc = lt_cli_parse_args("checkpoint verify", argc, argv, opts, ck_usage)) >= 0) return rc;
    rc = 0;
    lt_ckpt *ck = open_dir("checkpoint verify", dir, &rc);
    if (!ck) return rc;
    lt_status st = lt__ck_verify(ck);
    char de[LT_CLI_ECHO_BUF];
    if (st)
        rc = lt_cli_fail("checkpoint verify", st);
    else if (ck->nprob) {
        printf("%s: %d problem%s\n", lt_cli_echo(ck->dir, de), ck->nprob,
               ck->nprob == 1 ? "" : "s");
        for (int i = 0; i < ck->nprob; i++) {
            fputs("  ", stdout);
            lt__fputs_echo(ck->prob[i], 0, stdout);
            fputc('\n', stdout);
        }
        rc = 1;
    } else {
        uint64_t bytes = 0;
        for (int i = 0; i < ck->nt; i++) bytes += lt__ck_tensor_bytes(&ck->t[i]);
        printf("%s: sound: %d tensor%s, %llu bytes, every element in exactly one piece\n",
               lt_cli_echo(ck->dir, de), ck->nt, ck->nt == 1 ? "" : "s", (unsigned long long)bytes);
    }
    lt__ck_close(ck);
    return rc;
}

static int cmd_reshard(const char *dir, int argc, char **argv) {
    const char *mesh_s = NULL, *pl_s = NULL, *out = NULL, *fmt_s = "dcp";
    int rc = 0;
    const lt_cli_option opts[] = {
        {"--mesh", &mesh_s, NULL, 0}, {"--placements", &pl_s, NULL, 0},
        {"--out", &out, NULL, 0},     {"--format", &fmt_s, NULL, 0},
        {NULL, NULL, NULL, 0},
    };
    if ((rc = lt_cli_parse_args("checkpoint reshard", argc, argv, opts, ck_usage)) >= 0) return rc;
    rc = 0;
    if (!mesh_s || !pl_s) {
        fprintf(stderr, "localtensor checkpoint reshard: --mesh and --placements are required\n\n");
        ck_usage(stderr);
        return 2;
    }
    char e[LT_CLI_ECHO_BUF];
    if (strcmp(fmt_s, "dcp") && strcmp(fmt_s, "hf")) {
        fprintf(stderr, "localtensor checkpoint reshard: --format '%s': expected dcp or hf\n",
                lt_cli_echo(fmt_s, e));
        return 2;
    }
    lt_mesh mesh;
    lt_placement pl[LT_MESH_MAX_DIMS];
    int np;
    lt_status st = lt_mesh_parse(mesh_s, &mesh);
    if (st) return lt__err_ctx(st, "--mesh"), lt_cli_fail("checkpoint reshard", st);
    if ((st = lt_placements_parse(pl_s, pl, LT_MESH_MAX_DIMS, &np)))
        return lt__err_ctx(st, "--placements"), lt_cli_fail("checkpoint reshard", st);
    lt_ckpt *ck = open_dir("checkpoint reshard", dir, &rc);
    if (!ck) return rc;
    if (!(st = lt__ck_verify(ck)) && ck->nprob) {
        char msg[1536];
        snprintf(msg, sizeof msg, "%s does not verify (%d problem%s); first: %s",
                 lt_cli_echo(dir, e), ck->nprob, ck->nprob == 1 ? "" : "s", ck->prob[0]);
        lt_cli_print(stderr, "checkpoint reshard", msg);
        lt__ck_close(ck);
        return 2;
    }
    uint64_t compared = 0;
    if (!st)
        st = lt__ck_reshard(ck, &mesh, pl, np, stdout, out,
                            strcmp(fmt_s, "hf") ? LT_CK_DCP : LT_CK_HF, &compared);
    if (!st && out)
        printf("\nwrote %s (%s), verified: sound, %llu elements equal to the source\n",
               lt_cli_echo(out, e), fmt_s, (unsigned long long)compared);
    lt__ck_close(ck);
    return st ? lt_cli_fail("checkpoint reshard", st) : 0;
}

int lt_cli_checkpoint(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        ck_usage(stdout);
        return 0;
    }
    if (argc < 3 || argv[2][0] == '-') {
        fprintf(stderr, "localtensor checkpoint: %s\n\n",
                argc < 2 ? "needs a subcommand and a directory"
                         : "needs a directory after the subcommand");
        ck_usage(stderr);
        return 2;
    }
    const char *sub = argv[1], *dir = argv[2];
    if (!strcmp(sub, "inspect")) return cmd_inspect(dir, argc - 2, argv + 2);
    if (!strcmp(sub, "verify")) return cmd_verify(dir, argc - 2, argv + 2);
    if (!strcmp(sub, "reshard")) return cmd_reshard(dir, argc - 2, argv + 2);
    char e[LT_CLI_ECHO_BUF];
    fprintf(stderr,
            "localtensor checkpoint: unknown subcommand '%s' (inspect, verify or reshard)\n\n",
            lt_cli_echo(sub, e));
    ck_usage(stderr);
    return 2;
}
