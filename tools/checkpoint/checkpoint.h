/* tools/checkpoint/checkpoint.h — a sharded checkpoint directory: its files,
 * its tensors and the pieces that hold them.
 *
 * Why it exists: `localtensor checkpoint` (tools/cli/cli_checkpoint.c) reads
 * two kinds of directory and must prove, before anyone loads one, that every
 * element of every tensor is held exactly once:
 *   - DCP: per-rank files as PyTorch DCP's Hugging Face storage writer writes
 *     them (shard-RRRRR-model-00001-of-00001.safetensors, RRRRR = rank + 1),
 *     each piece's global offsets in __metadata__.DCP_SHARDING_INFO as
 *     {name: {"saved_offsets": [...]}}; the global shape is not stored: it is
 *     the bounding box of the non-empty pieces (what DCP's reader computes);
 *   - HF: whole tensors in model-0000k-of-0000n.safetensors, usually with
 *     model.safetensors.index.json ({"metadata": {"total_size": B},
 *     "weight_map": {name: file}}).
 * Opening collects every problem it meets (a file that does not parse, an
 * index entry without its file, ...) as text in ck->prob instead of failing,
 * so `verify` lists them all; lt__ck_verify adds the coverage problems.
 * Files stay mapped while the checkpoint is open; no data is read until a
 * reshard asks for it.
 */
#ifndef LT_TOOLS_CHECKPOINT_H
#define LT_TOOLS_CHECKPOINT_H

#include <stdint.h>
#include <stdio.h>

#include "localtensor/collectives_sim/mesh.h"
#include "localtensor/dtensor.h"
#include "localtensor/placement.h"
#include "tools/checkpoint/safetensors.h"

typedef enum { LT_CK_DCP, LT_CK_HF } lt_ck_format;

#define LT_CK_INDEX "model.safetensors.index.json"

typedef struct lt_ck_piece {
    int file; /* index into ck->files */
    int entry; /* entry of that file */
    int64_t off[LT_MAX_DIMS]; /* global offset of its first element */
} lt_ck_piece;

typedef struct lt_ck_tensor {
    char *name; /* owned */
    lt_dtype dtype; /* of its first piece */
    int ndim;
    int64_t shape[LT_MAX_DIMS]; /* global shape */
    int n, cap;
    lt_ck_piece *p; /* (n) owned */
} lt_ck_tensor;

typedef struct lt_ckpt {
    char *dir; /* owned */
    lt_ck_format format;
    int nfiles;
    char **fname; /* (nfiles) names inside dir, sorted, owned */
    lt_st_file **files; /* (nfiles) NULL where the file did not parse */
    int *frank; /* (nfiles) DCP: the rank its name says, else -1 */
    int world_hint; /* DCP: highest rank named + 1, else 0 */
    int nt;
    lt_ck_tensor *t; /* (nt) sorted by name, owned */
    int has_index;
    uint64_t index_total; /* the index's metadata.total_size */
    int nprob, capprob;
    char **prob; /* (nprob) problems found, owned */
    int nomem; /* a problem could not be recorded: out of memory */
} lt_ckpt;

/* Opens directory dir: lists its *.safetensors files and index, parses them,
 * groups the pieces by tensor. *out receives a new checkpoint the caller
 * releases with lt__ck_close. Errors (*out NULL): LT_IO when dir cannot be
 * read, LT_INVALID when it holds no safetensors file, LT_NOMEM. A broken file
 * or index is not an error here: it is a problem in (*out)->prob. */
lt_status lt__ck_open(const char *dir, lt_ckpt **out);
void lt__ck_close(lt_ckpt *ck);

/* Records one problem (printf format). */
void lt__ck_problem(lt_ckpt *ck, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Checks every tensor's pieces: one dtype and rank, global shape, zero-size
 * pieces' offsets, overlaps and gaps (named by global index box and file),
 * adding each to ck->prob. LT_NOMEM only. */
lt_status lt__ck_verify(lt_ckpt *ck);

/* The entry a piece names. Borrowed. */
const lt_st_entry *lt__ck_entry(const lt_ckpt *ck, const lt_ck_piece *p);

/* "[2:4, 0:6]" for the box off[nd] + len[nd] into buf[cap]; returns buf. */
char *lt__ck_box(int nd, const int64_t *off, const int64_t *len, char *buf, size_t cap);

/* A layout explaining tensor t's pieces: a mesh and placements under which
 * every rank's block is a piece (the one in the rank's own file, for DCP)
 * and every non-empty piece is some rank's block (layout math of
 * localtensor/layout.h). Writes "[S(0), S(1)] on 2x4, uneven: ranks 3, 7
 * empty" (or "whole tensor, one piece") into buf[cap]; returns 1 when found,
 * 0 when no mesh explains it (tried: the world DCP's file names give, up to
 * 4096 ranks, then 2 to 16 ranks; buf ""), -1 when out of
 * memory (LT_NOMEM message set). */
int lt__ck_explain(const lt_ckpt *ck, const lt_ck_tensor *t, char *buf, size_t cap);

/* Bytes of one element of t times its element count (global). */
uint64_t lt__ck_tensor_bytes(const lt_ck_tensor *t);

/* The placements layout math takes for tensor t of a target pl (checked
 * for t) into out[m->ndim]: pl, with a RaggedShard over dims (0,) as its
 * explicit-sizes Shard(0) of t's rows (localtensor/ragged.h). A
 * RaggedShard over k > 1 dims: LT_UNSUPPORTED, "not supported yet". */
lt_status lt__ck_target_pl(const lt_mesh *m, const lt_ck_tensor *t, const lt_placement *pl,
                           lt_placement *out);

/* The reshard of a checkpoint onto a mesh and placements (one list for every
 * tensor; Shard dims a tensor lacks, Partial and _StridedShard are refused;
 * a RaggedShard over dims (0,) is taken as lt__ck_target_pl says).
 * Prints the read plan to out (every target rank: each piece it reads, the
 * file and byte range, bytes, files opened; then totals). With outdir, also
 * writes the target checkpoint there (format DCP: one file per rank that
 * holds a piece, replicas written once; HF: whole tensors in one file and
 * an index), streaming through a buffer of at most LT_CK_BUF bytes, then
 * reopens it, verifies it and compares it element by element with the
 * source; *compared receives the number of elements compared. LT_MISMATCH
 * when the written checkpoint differs or does not verify (message says
 * where), LT_INVALID for a target that does not apply, LT_IO, LT_NOMEM. */
#define LT_CK_BUF ((size_t)4 << 20)
lt_status lt__ck_reshard(const lt_ckpt *ck, const lt_mesh *mesh, const lt_placement *pl, int np,
                         FILE *out, const char *outdir, lt_ck_format fmt, uint64_t *compared);

/* Saves DTensor dt as tensor `name` into directory dir (made; refused when it
 * already holds safetensors files): DCP, one file per rank with a block no
 * lower rank holds; HF, the whole tensor in model.safetensors. Partial is
 * refused (LT_INVALID: reduce first), a _StridedShard block that is not one
 * box or a shard not held here is "not supported yet"; LT_IO, LT_NOMEM. A
 * RaggedShard over dims (0,) saves each rank's rows as the box rows
 * [lo, hi) x the rest (an empty shard writes nothing, as any empty block);
 * over k > 1 dims it is "not supported yet" in DCP (a run of flattened rows
 * is not one box) and saved whole in HF. */
lt_status lt__ck_save_dtensor(const lt_dtensor *dt, const char *name, const char *dir,
                              lt_ck_format fmt);
/* Tensor `name` of checkpoint dir, whole, into a new host tensor *out (the
 * caller frees), after the checkpoint verifies (LT_INVALID naming the first
 * problem otherwise, or a missing name). */
lt_status lt__ck_load_tensor(const char *dir, const char *name, lt_tensor **out);

/* ---- between the files of tools/checkpoint/ ---- */

/* outdir made, or there without safetensors files (LT_INVALID then). */
lt_status lt__ck_prepare_dir(const char *outdir);
/* Every element of tensor t read from its pieces into mem (row-major, the
 * whole tensor). */
lt_status lt__ck_read_piece_into(const lt_ckpt *ck, const lt_ck_tensor *t, void *mem);
/* Moves (w) or compares (df, de) every element of target piece (doff, ds)
 * from t's pieces, through buf (and buf2), LT_CK_BUF bytes each; *diff_at:
 * first differing byte + 1, 0 when equal. */
lt_status lt__ck_move_piece(const lt_ckpt *ck, const lt_ck_tensor *t, const int64_t *doff,
                            const int64_t *ds, lt_st_writer *w, const lt_st_file *df,
                            const lt_st_entry *de, unsigned char *buf, unsigned char *buf2,
                            uint64_t *diff_at);
/* The target checkpoint of a reshard, written into outdir (ck_write.c). */
lt_status lt__ck_write_target(const lt_ckpt *ck, const lt_mesh *m, const lt_placement *pl,
                              const char *outdir, lt_ck_format fmt);
/* Every piece of dst compared with src's elements at the same indices. */
lt_status lt__ck_compare(const lt_ckpt *src, const lt_ckpt *dst, uint64_t *compared);

#endif
