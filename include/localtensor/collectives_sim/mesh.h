/* collectives_sim/mesh.h — the N-D device mesh and its groups.
 *
 * A mesh is an N-D array of ranks, row-major (docs/SEMANTICS.md §1): rank r has
 * coordinate c_i = (r / prod_{j>i} m_j) % m_i. A group "along mesh dim d" is
 * a fiber: the ranks that share every coordinate but c_d, listed in order of
 * c_d. Group g of dim d is the g-th such fiber in rank order of its first
 * member. Meshes are small values; copy them freely.
 *
 * Rank ids. A mesh may also hold any arrangement of rank ids, as PyTorch's
 * DeviceMesh does (docs/SEMANTICS.md §1.1): `ids[p]` is the rank at mesh
 * position p (p = the row-major index of a coordinate), and the ids may
 * leave ranks of the world out. Everything the library keeps per rank
 * (shards, groups, layouts, plans) stays indexed by mesh position, so the
 * numbering "rank r" of this header and of every array is the position;
 * lt_mesh_rank_id turns a position into the rank id that messages, comm
 * tables, hang reports and the MPI engine's blocks name. An arange mesh
 * (permuted == 0) has id == position.
 */
#ifndef LT_MESH_H
#define LT_MESH_H

#include <stdint.h>

#include "localtensor/kernels/export.h"
#include "localtensor/kernels/status.h"

#define LT_MESH_MAX_DIMS 8
#define LT_MESH_MAX_WORLD 65536
#define LT_MESH_NAME_MAX 32
#define LT_MESH_MAX_IDS 64 /* positions of a mesh with rank ids other than arange */

typedef struct lt_mesh {
    int ndim;                                      /* >= 1 */
    int shape[LT_MESH_MAX_DIMS];                   /* each >= 1 */
    char names[LT_MESH_MAX_DIMS][LT_MESH_NAME_MAX];/* "" when unnamed */
    int world;                                     /* product of shape: positions */
    int permuted;        /* 0: position p is rank p; 1: ids[] and world_size say */
    int world_size;      /* ranks of the world (> every id); == world when !permuted */
    uint16_t ids[LT_MESH_MAX_IDS];                 /* rank id at each position, when permuted */
} lt_mesh;

/* Builds a mesh. names may be NULL or hold NULL/"" entries (unnamed). Errors:
 * ndim out of 1..8, a size < 1, world > LT_MESH_MAX_WORLD, duplicate or
 * too-long names. */
LT_API lt_status lt_mesh_init(lt_mesh *m, int ndim, const int *shape, const char *const *names);
/* Parses "8", "2x4", "2x2x2", "dp=2,tp=4", and a mesh in any rank order:
 * a rank array "[[0,2],[1,3]]" (unnamed), "dp=2,tp=2:[[0,2],[1,3]]" (names
 * and shape before the ':'), each optionally followed by " of N" (a world
 * of N ranks, some left out: "[0,2] of 4"); lt_mesh_parse_ranks. Errors
 * name the text. */
LT_API lt_status lt_mesh_parse(const char *s, lt_mesh *m);
/* "2x4" or "dp=2,tp=4" into buf, with ":" and the rank array (lt_mesh_format_ranks)
 * after it for a mesh in another rank order; returns buf. */
LT_API char *lt_mesh_format(const lt_mesh *m, char *buf, size_t n);
LT_API int lt_mesh_equal(const lt_mesh *a, const lt_mesh *b);

/* A mesh of shape[ndim] whose position p (row-major) holds rank id
 * ranks[p], as torch DeviceMesh(device, ranks): ids distinct, in
 * 0..world_size-1; world_size 0 means max id + 1, and ranks of the world
 * not in ranks[] hold nothing and take part in nothing. ranks in arange
 * order over the whole world give the plain mesh (permuted 0). Errors: as
 * lt_mesh_init, a negative, repeated or too large id, more than
 * LT_MESH_MAX_IDS positions when the order is not arange. */
LT_API lt_status lt_mesh_init_ranks(lt_mesh *m, int ndim, const int *shape, const int *ranks,
                                    int world_size, const char *const *names);
/* Parses a rank array "[[0,2],[1,3]]" (nested lists, every row of one
 * length), optionally followed by " of N" (the world size), into a mesh;
 * names (NULL or a mesh from lt_mesh_parse whose shape must equal the
 * array's) gives the dim names. Errors name the text. */
LT_API lt_status lt_mesh_parse_ranks(const char *s, const lt_mesh *names, lt_mesh *m);
/* The rank id at position pos (pos itself on an arange mesh, and for a pos
 * out of 0..world-1, such as -1 for none). */
static inline int lt_mesh_rank_id(const lt_mesh *m, int pos) {
    return m->permuted && pos >= 0 && pos < m->world ? (int)m->ids[pos] : pos;
}
/* The position holding rank id `id`, or -1 when the mesh leaves it out. */
LT_API int lt_mesh_pos_of(const lt_mesh *m, int id);
/* Ranks of the world the mesh lives in (world, or more when ranks are left out). */
LT_API int lt_mesh_world_size(const lt_mesh *m);
/* The rank array as text, "[[0,2],[1,3]]" (world_size appended as
 * " of 8" when ranks are left out), into buf; returns buf. */
LT_API char *lt_mesh_format_ranks(const lt_mesh *m, char *buf, size_t n);
/* torch's mesh[dims]._flatten(name): the dims dims[n] (ascending, n >= 1)
 * become one dim named `name` (NULL/"" unnamed; names joined with '_' by
 * default is the caller's business), at the place of dims[0]; its groups
 * are the product groups, members in row-major order of those dims. The
 * other dims keep their order. Adjacent dims keep every position (a
 * DTensor's shards are the same array on both meshes); others permute the
 * positions (out is a permuted mesh). Errors: bad or repeated dims, a name
 * in use by a dim that stays. */
LT_API lt_status lt_mesh_flatten(const lt_mesh *m, const int *dims, int n, const char *name,
                                 lt_mesh *out);
/* torch's mesh[names]: the sub-mesh over dims dims[n] (ascending) that
 * holds rank id `rank`; its ids are the world's rank ids and its world
 * size the mesh's. Errors: bad or repeated dims, a rank not in the mesh. */
LT_API lt_status lt_mesh_slice(const lt_mesh *m, const int *dims, int n, int rank, lt_mesh *out);
/* The dims of a comma-separated list of dim names or indices ("dp,cp")
 * into dims (at most LT_MESH_MAX_DIMS); returns their count, or -1 with
 * the error set (an unknown name, a repeat, not ascending). */
LT_API int lt_mesh_dims_parse(const lt_mesh *m, const char *list, int *dims);

/* Coordinate of rank r (coord[ndim]). */
LT_API void lt_mesh_coord(const lt_mesh *m, int rank, int *coord);
LT_API int lt_mesh_rank(const lt_mesh *m, const int *coord);
/* Index of a mesh dim by name, or -1. */
LT_API int lt_mesh_dim_by_name(const lt_mesh *m, const char *name);

/* Number of groups along dim d (world / shape[d]). */
LT_API int lt_mesh_ngroups(const lt_mesh *m, int d);
/* Ranks of group g along dim d, in coordinate order, into ranks[shape[d]]. */
LT_API void lt_mesh_group(const lt_mesh *m, int d, int g, int *ranks);
/* The group (along dim d) that rank belongs to; *pos gets its position in it
 * (its coordinate c_d). pos may be NULL. */
LT_API int lt_mesh_group_of(const lt_mesh *m, int d, int rank, int *pos);

#endif
