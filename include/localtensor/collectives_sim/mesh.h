/* collectives_sim/mesh.h — the N-D device mesh and its groups.
 *
 * A mesh is an N-D array of ranks, row-major (docs/SEMANTICS.md §1): rank r has
 * coordinate c_i = (r / prod_{j>i} m_j) % m_i. A group "along mesh dim d" is
 * a fiber: the ranks that share every coordinate but c_d, listed in order of
 * c_d. Group g of dim d is the g-th such fiber in rank order of its first
 * member. Meshes are small values; copy them freely.
 */
#ifndef LT_MESH_H
#define LT_MESH_H

#include <stdint.h>

#include "localtensor/kernels/export.h"
#include "localtensor/kernels/status.h"

#define LT_MESH_MAX_DIMS 8
#define LT_MESH_MAX_WORLD 65536
#define LT_MESH_NAME_MAX 32

typedef struct lt_mesh {
    int ndim;                                      /* >= 1 */
    int shape[LT_MESH_MAX_DIMS];                   /* each >= 1 */
    char names[LT_MESH_MAX_DIMS][LT_MESH_NAME_MAX];/* "" when unnamed */
    int world;                                     /* product of shape */
} lt_mesh;

/* Builds a mesh. names may be NULL or hold NULL/"" entries (unnamed). Errors:
 * ndim out of 1..8, a size < 1, world > LT_MESH_MAX_WORLD, duplicate or
 * too-long names. */
LT_API lt_status lt_mesh_init(lt_mesh *m, int ndim, const int *shape, const char *const *names);
/* Parses "8", "2x4", "2x2x2", "dp=2,tp=4". Errors name the text. */
LT_API lt_status lt_mesh_parse(const char *s, lt_mesh *m);
/* "2x4" or "dp=2,tp=4" into buf; returns buf. */
LT_API char *lt_mesh_format(const lt_mesh *m, char *buf, size_t n);
LT_API int lt_mesh_equal(const lt_mesh *a, const lt_mesh *b);

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
