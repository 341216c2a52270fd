/* tools/checkpoint/safetensors.h — one safetensors file, read and written.
 *
 * Why it exists: checkpoints (tools/checkpoint/checkpoint.h) are made of
 * safetensors files, and a file from a disk is hostile input. The format: an
 * 8-byte little-endian header length N, N bytes of JSON
 * `{name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}`,
 * then the data section, whose bytes [begin, end) are the tensor, row-major.
 *
 * Invariant of a parsed file: every entry has a known dtype, a shape of at
 * most LT_MAX_DIMS non-negative sizes, and numel * element size == end -
 * begin <= the data section's size; the entries do not overlap, and no two
 * share a name. Anything else is refused (LT_INVALID) with a message naming
 * the file, the entry and the rule broken; no size computation overflows.
 * Files are mapped (mmap), never read whole: the length and header are
 * mapped and parsed, data is read through pread by whoever needs it
 * (lt__st_read), so memory does not grow with a file's size.
 */
#ifndef LT_TOOLS_SAFETENSORS_H
#define LT_TOOLS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "localtensor/kernels/dtype.h"
#include "localtensor/kernels/status.h"
#include "localtensor/kernels/tensor.h"

/* Largest header accepted (the safetensors package's own limit, 100 MB). */
#define LT_ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)

typedef struct lt_st_entry {
    char *name; /* owned */
    lt_dtype dtype;
    int ndim;
    int64_t shape[LT_MAX_DIMS];
    uint64_t begin, end; /* data_offsets: bytes of the data section */
} lt_st_entry;

typedef struct lt_st_file {
    char *path; /* owned, as given to lt__st_open */
    int fd; /* -1 when parsed from memory */
    const unsigned char *map; /* (map_len) the file's first bytes: length and header */
    uint64_t map_len; /* 8 + the header length, at most the file's size */
    uint64_t size; /* bytes of the file */
    uint64_t data_start; /* 8 + header length */
    int n;
    lt_st_entry *e; /* (n) in header order, owned */
    char **meta_keys, **meta_vals; /* (nmeta) __metadata__ strings, owned */
    int nmeta;
} lt_st_file;

/* Opens and maps path, parses and checks its header. *out receives a new file
 * the caller releases with lt__st_close; NULL on error (LT_INVALID with
 * "PATH: ..." naming the broken rule, LT_IO when it cannot be opened,
 * LT_NOMEM). */
lt_status lt__st_open(const char *path, lt_st_file **out);

/* Parses a whole file image buf[len] (the fuzz harness's entry; `what` names
 * it in messages). Same checks and ownership as lt__st_open; the result
 * borrows buf (its map) and reads no data. */
lt_status lt__st_parse_mem(const unsigned char *buf, size_t len, const char *what,
                           lt_st_file **out);

void lt__st_close(lt_st_file *f);

/* The __metadata__ value of key, or NULL. Borrowed from f. */
const char *lt__st_meta(const lt_st_file *f, const char *key);

/* Entry index of name, or -1. */
int lt__st_find(const lt_st_file *f, const char *name);

/* Reads n bytes at byte `at` of entry e's data into buf (pread). LT_IO naming
 * the file when it fails or the file is shorter now. */
lt_status lt__st_read(const lt_st_file *f, const lt_st_entry *e, uint64_t at, void *buf, size_t n);

/* "F32", "BF16", ...: the safetensors spelling of a dtype. */
const char *lt__st_dtype_name(lt_dtype dt);

/* A file being written: the header is written first (every entry's shape and
 * dtype are known up front), then each entry's bytes through lt__st_write_at,
 * in any order. */
typedef struct lt_st_writer {
    int fd;
    char *path; /* owned */
    uint64_t data_start;
} lt_st_writer;

/* Creates path with a header for n entries (names, dtypes, shapes, laid out
 * in this order) and __metadata__ (nmeta pairs, may be 0); the data section
 * is sized (ftruncate) but not written. *out receives a writer the caller
 * ends with lt__st_writer_close. Errors: LT_IO naming the path, LT_NOMEM,
 * LT_OVERFLOW. entries' begin/end are set here. */
lt_status lt__st_create(const char *path, lt_st_entry *e, int n, const char *const *meta_keys,
                        const char *const *meta_vals, int nmeta, lt_st_writer **out);
/* Writes n bytes at byte `at` of entry e's data (pwrite). */
lt_status lt__st_write_at(lt_st_writer *w, const lt_st_entry *e, uint64_t at, const void *buf,
                          size_t n);
/* Closes (fsync not asked); LT_IO when the close fails. Frees w. */
lt_status lt__st_writer_close(lt_st_writer *w);

#endif
