/* localtensor/plan/plan_impl.h — internals of the min-cost planner and of the
 * executor of its steps. Not installed.
 *
 * Why a second representation: the rule table of plan.h names the
 * single steps PyTorch takes between placement lists, and it misses steps
 * that nested, strided or uneven layouts allow (one all_gather turns
 * [SS(0,2), S(0)] into [R, S(0)] on a 2x2 mesh). Min-cost judges a step on
 * what every rank actually holds instead: a layout is, per rank, the block
 * of global indices it holds (one sorted set per tensor dim, kept as runs so
 * any tensor size costs the same), and a step is legal when one collective
 * along one mesh dim (--moves all: or over the product group of adjacent
 * mesh dims, lt__move.span), or local work, turns the source's blocks into
 * the target's (localtensor/plan.h has the exact move set).
 *
 *   plan_runs.c    runs, lists, layouts of placement lists
 *   plan_space.c   the candidate placements that spell states, split rules
 *   plan_moves.c   the moves: what each collective leaves on every rank,
 *                  its bytes, and which state (if any) that is
 *   plan_search.c  the search (A* on bytes, then steps) and the plan
 *   plan_exec.c    runs one move on the shards
 */
#ifndef LT_PLAN_IMPL_H
#define LT_PLAN_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/split_impl.h"
#include "kernels/status_impl.h"
#include "localtensor/redistribute.h"
#include "localtensor/spec.h"

/* ---- the rule table's single steps (plan_rules.c) --------------------------------- */

/* What one single step of the rule table does (localtensor/plan.h;
 * plan_rules.c). */
#define LT__STEP_MAP(XX)                                               \
    XX(ILLEGAL,        0, LT_COLL_BARRIER,        "")                  \
    XX(SLICE,          0, LT_COLL_BARRIER,        "slice")             \
    XX(STRIDED_SLICE,  0, LT_COLL_BARRIER,        "strided_slice")     \
    XX(PARTITION,      0, LT_COLL_BARRIER,        "partition")         \
    XX(ALL_GATHER,     1, LT_COLL_ALL_GATHER,     "")                  \
    XX(GATHER_STRIDED, 1, LT_COLL_ALL_GATHER,     "index_select")      \
    XX(ALL_REDUCE,     1, LT_COLL_ALL_REDUCE,     "")                  \
    XX(REDUCE_SCATTER, 1, LT_COLL_REDUCE_SCATTER, "")                  \
    XX(ALL_TO_ALL,     1, LT_COLL_ALL_TO_ALL,     "")                  \
    XX(ZERO_FILL,      0, LT_COLL_BARRIER,        "zero_fill")

typedef enum {
#define LT__XX(e, comm, coll, local) LT__STEP_##e,
    LT__STEP_MAP(LT__XX)
#undef LT__XX
    LT__STEP_COUNT
} lt__step_kind;

/* The kind of the single step that changes mesh dim i of state cur[] to *to
 * (LT__STEP_ILLEGAL when it is not one step). Pure; no message. */
lt__step_kind lt__step_kind_of(const lt_mesh *mesh, const lt_placement *cur, int i,
                               const lt_placement *to);
int lt__step_kind_comm(lt__step_kind k);
lt_coll lt__step_kind_coll(lt__step_kind k);
const char *lt__step_kind_local(lt__step_kind k);

/* ---- memory of a run (redistribute.c) --------------------------------------------- */

/* The most bytes lt_redistribute allocates at once while running `plan`
 * (with verification when `verify`), on top of the source's shards: a
 * step's output and its input (from step 2 on), what a collective step
 * received, a strided gather's temporary, and the verifier's owner tables
 * and shards. States count their unique bytes (replicas share a buffer:
 * lt_spec_unique_bytes). *step: the plan step (0-based) of that peak, -1
 * for a plan without steps. Saturates at UINT64_MAX. Errors: the layout
 * errors of the plan's states (none for a plan lt_plan_redistribute
 * returned). */
lt_status lt__plan_peak_bytes(const lt_plan *plan, int verify, uint64_t *bytes, int *step);
/* The same, counting every rank's shard when `unique` is 0 (a source whose
 * replicas hold buffers of their own: the steps copy them rank by rank);
 * cache 0: the process-wide cache of states' bytes is neither read nor
 * filled (a redistribute with no_cache). */
lt_status lt__plan_peak_bytes_ex(const lt_plan *plan, int verify, int unique, int cache,
                                 uint64_t *bytes, int *step);
/* LT_NOMEM with the message of lt_check_memory (naming the peak step) when
 * that peak, plus the source's shards when with_source (a caller that has
 * not built the source yet), does not fit in memory; LT_OK otherwise.
 * _ex: unique as above. */
lt_status lt__plan_check_memory_ex(const lt_plan *plan, int verify, int with_source, int unique,
                                   int cache);
lt_status lt__plan_check_memory(const lt_plan *plan, int verify, int with_source);

/* ---- layouts and bytes of the rule table (plan_rules.c), planning (plan.c) ---------- */

/* Per-rank local shapes of placement list pl (checked, normalized) into
 * shapes[world * ndim], without index lists. Returns 0, or -1 when the layout
 * is not computable (a `last` split of fewer elements than ranks, explicit
 * sizes that do not sum to the split size); no message is set. */
int lt__layout_shapes(const lt_mesh *mesh, int ndim, const int64_t *gshape,
                      const lt_placement *pl, int64_t *shapes);

/* 1 when the Partial ops of pl[M] may stand together (one op, or sum and avg). */
int lt__partials_ok(const lt_placement *pl, int M);

/* An intermediate state as a plan shows it (into out[mesh->ndim]): the
 * planner's effective state eff, with each size-1 mesh dim showing the
 * source's placement, or the destination's, or R: the first choice whose
 * Partial ops go together and whose layout every rank can compute (a `last`
 * or explicit-sizes rule kept on a size-1 mesh dim may not fit what a rank
 * holds there in between). R always does. */
void lt__plan_display_state(const lt_mesh *mesh, int ndim, const int64_t *shape,
                            const lt_placement *usrc, const lt_placement *udst,
                            const lt_placement *eff, lt_placement *out);

/* Per-rank bytes received by the step of kind k on mesh dim i, given the
 * per-rank shapes before and after (world * ndim each): recv[world] (may be
 * NULL); returns the total. esize: bytes per element. */
size_t lt__step_bytes(const lt_mesh *mesh, int ndim, size_t esize, lt__step_kind k, int i,
                      const lt_placement *from, const lt_placement *to,
                      const int64_t *before, const int64_t *after, size_t *recv);

/* Plans without the cache: `from` is a checked spec (localtensor/spec.h,
 * borrowed for the call), dst[from->mesh->ndim] the destination placements,
 * normalized and checked against the same tensor; the pair is not rejected.
 * Nothing is re-validated. *out is a new plan (refcount 1). */
/* The spec of plan p's tensor in placements pl, one of the plan's states
 * (source, a step's after, destination: the planner only produces checked
 * states). Borrows p's mesh: valid while p is. */
static inline lt_spec lt__plan_spec(const lt_plan *p, const lt_placement *pl) {
    lt_spec s = {0};
    s.mesh = &p->mesh;
    s.dtype = p->dtype;
    s.ndim = p->ndim;
    for (int d = 0; d < p->ndim; d++) s.shape[d] = p->shape[d];
    for (int i = 0; i < p->mesh.ndim; i++) s.placements[i] = pl[i];
    return s;
}

/* lt_plan_redistribute from a checked source spec (a DTensor's): only the
 * destination list dst[np] (any spelling) is checked, with the messages of
 * lt_plan_redistribute. */
lt_status lt__plan_redistribute_from(const lt_spec *src, const lt_placement *dst, int np,
                                     const lt_redistribute_opts *opts, lt_plan **out);

/* shared: the min-cost search may use the shared search space (plan_memo.c;
 * the plan is the same either way). */
lt_status lt__plan_build(const lt_spec *from, const lt_placement *dst, lt_planner planner,
                         int shared, lt_plan **out);

/* Shard(d) -> Partial(sum) by zero fill (plan_zero_fill.c). The zero-fill
 * dims of a pair are the mesh dims of size > 1 whose source is a plain S(d)
 * and whose destination is P(sum). With none, *out is NULL and nothing is
 * done. Otherwise *out receives a NEW plan of three parts: the plan to the
 * source with every later mesh dim that shards a zero-fill dim's tensor dim
 * (and is not itself zero-filled) gathered to R, one ZERO_FILL step per
 * zero-fill dim (last mesh dim first), then the plan from there to dst (the
 * zero-filled dims are kept partials). lt__plan_x_of(plan)->zf_first / zf_end give the
 * range of the zero-fill steps. Errors: those of lt__plan_build. */
lt_status lt__plan_zero_fill(const lt_spec *from, const lt_placement *dst, lt_planner planner,
                             int shared, lt_plan **out);
/* Runs one ZERO_FILL step from state `from` (plan_zero_fill.c): out[r]
 * receives a new tensor for every rank not absent in in[]. */
lt_status lt__zero_fill_run(const lt_spec *from, const lt_plan_step *ps, lt_tensor *const *in,
                            lt_tensor **out);

/* ---- runs and lists (plan_runs.c) ------------------------------------------------ */

/* Global indices lo .. lo+n-1. */
typedef struct lt__run {
    int64_t lo, n;
} lt__run;

/* A list of global indices: runs r[0..nr), len indices in all. Canonical
 * (what layouts hold): runs sorted, disjoint and not touching. The runs are
 * borrowed from an arena. */
typedef struct lt__list {
    const lt__run *r;
    int64_t nr, len;
} lt__list;

/* Chunked storage of runs: a run never moves once written, so lists may
 * point into it; reset to a mark drops everything written after it. */
typedef struct lt__ablk lt__ablk;
typedef struct lt__arena {
    lt__ablk *first, *cur;
} lt__arena;
typedef struct lt__amark {
    lt__ablk *blk;
    size_t used;
} lt__amark;

/* Room for n runs at the end (NULL: out of memory); lt__arena_take(a, k)
 * then keeps the first k of them. */
lt__run *lt__arena_room(lt__arena *a, size_t n);
void lt__arena_take(lt__arena *a, size_t k);
lt__amark lt__arena_mark(const lt__arena *a);
void lt__arena_reset(lt__arena *a, lt__amark m);
void lt__arena_free(lt__arena *a);

/* Pieces of a split rule: lt__split_piece_quiet (kernels/split_impl.h), the
 * one place the uneven rules are written. */

/* Set relations on canonical lists. */
int lt__list_eq(const lt__list *a, const lt__list *b);
int lt__list_subset(const lt__list *a, const lt__list *b);        /* a within b */
int64_t lt__list_common(const lt__list *a, const lt__list *b);    /* |a and b| */
/* Positions pos..pos+cnt-1 of l, into *out (1; -1 out of memory). */
int lt__list_sub(lt__arena *a, const lt__list *l, int64_t pos, int64_t cnt, lt__list *out);
/* The canonical form of the concatenation of k lists (any order): 1, 0 when
 * an index repeats, -1 out of memory. */
int lt__list_concat(lt__arena *a, const lt__list *const *ls, int k, lt__list *out);
/* Union of k canonical lists (repeats allowed): 1, -1 out of memory. */
int lt__list_union(lt__arena *a, const lt__list *const *ls, int k, lt__list *out);

/* ---- layouts ---------------------------------------------------------------------- */

/* The level structure shared by every layout of one search: level j holds
 * the blocks after mesh dims 0..j-1, one per tuple of their coordinates
 * (T[j] tuples, row-major, so level M is the ranks), ndim lists each. */
typedef struct lt__geo {
    const lt_mesh *mesh;
    int M, ndim, W;
    const int64_t *shape;
    int T[LT_MESH_MAX_DIMS + 1];
    size_t off[LT_MESH_MAX_DIMS + 2];    /* first list of level j; off[M + 1] lists in all */
    size_t toff[LT_MESH_MAX_DIMS + 2];   /* first tuple of level j (T[0] + ... + T[j-1]) */
} lt__geo;

void lt__geo_init(lt__geo *g, const lt_mesh *mesh, int ndim, const int64_t *shape);

/* The children of block `par` (ndim lists) under placement p on a mesh dim
 * of size m, coordinate c, into out (ndim lists). 1; 0 when the split is
 * rejected (layout not computable); -1 out of memory. */
int lt__apply(lt__arena *a, int ndim, const lt_placement *p, int m, int c, const lt__list *par,
              lt__list *out);
/* Every level of placement list pl into t (off[M + 1] lists); the same
 * results. Size-1 mesh dims split nothing. */
int lt__layout_build(lt__arena *a, const lt__geo *g, const lt_placement *pl, lt__list *t);
/* How many of a list of n indices member c of m keeps under
 * StridedShard(sf) (kernels/split.c's rule), in O(min(sf, n)). */
int64_t lt__strided_len(int64_t n, int sf, int m, int c);
/* Elements of a block of ndim lists (0 when any list is empty). */
int64_t lt__block_numel(const lt__list *b, int ndim);
/* lt__block_numel(b, ndim) == 0, without the product. */
static inline int lt__block_empty(const lt__list *b, int ndim) {
    for (int d = 0; d < ndim; d++)
        if (b[d].len == 0) return 1;
    return 0;
}

/* ---- moves ------------------------------------------------------------------------ */

/* XX(enum suffix, collective (LT_COLL_BARRIER: none)) */
#define LT__MV_MAP(XX)                         \
    XX(LOCAL,          LT_COLL_BARRIER)        \
    XX(PARTITION,      LT_COLL_BARRIER)        \
    XX(ALL_GATHER,     LT_COLL_ALL_GATHER)     \
    XX(GATHER,         LT_COLL_GATHER)         \
    XX(ALL_TO_ALL,     LT_COLL_ALL_TO_ALL)     \
    XX(SCATTER,        LT_COLL_SCATTER)        \
    XX(PERMUTE,        LT_COLL_PERMUTE)        \
    XX(ALL_REDUCE,     LT_COLL_ALL_REDUCE)     \
    XX(REDUCE_SCATTER, LT_COLL_REDUCE_SCATTER) \
    XX(REDUCE,         LT_COLL_REDUCE)

typedef enum {
#define LT__XX(e, coll) LT__MV_##e,
    LT__MV_MAP(LT__XX)
#undef LT__XX
    LT__MV_COUNT
} lt__mv_kind;

lt_coll lt__mv_coll(lt__mv_kind k);   /* LT_COLL_BARRIER for local work */

/* One step of a min-cost plan: a collective along mesh_dim with its
 * arguments, then local work that turns what each rank received into the
 * next state's shard (reordering, or picking for LOCAL). */
typedef struct lt__move {
    lt__mv_kind kind;
    int mesh_dim;
    int dim;              /* all_gather, gather: concat dim; all_to_all, scatter,
                           * reduce_scatter: split dim */
    int cdim;             /* all_to_all: concat dim */
    int root;             /* gather, scatter, reduce: position in the group */
    lt_redop op;          /* reductions and partition */
    lt_split_rule rule;   /* all_to_all, scatter, reduce_scatter */
    const int *perm;      /* permute: member c's shard goes to member perm[c] (mesh dim
                           * size entries; owned by the plan) */
    int ndim;             /* the tensor (for layout math; shape owned by the plan) */
    const int64_t *shape;
    int span;             /* mesh dims of the group: 0 or 1 mesh_dim alone; k >= 2 the
                           * product group of mesh dims mesh_dim .. mesh_dim + k - 1
                           * (--moves all; lt__group_size) */
} lt__move;

/* Members of a group of `span` mesh dims from mesh dim i (0 or 1: mesh dim i
 * alone; more: the product group, ranked as lt_mesh_flatten ranks them). */
static inline int lt__group_size(const lt_mesh *mesh, int i, int span) {
    int n = 1;
    for (int j = i; j < i + (span > 1 ? span : 1); j++) n *= mesh->shape[j];
    return n;
}

/* ---- what a plan keeps besides its public fields ------------------------------------ */

/* Every lt_plan is allocated as one of these (the public struct first), so a
 * plan the API hands out converts back with lt__plan_x; users never see the
 * rest. Freed by lt_plan_free when refs drops to 0. */
typedef struct lt__plan_x {
    lt_plan pub;
    int refs;
    lt_placement *states;    /* (nsteps + 1, mesh ndim) */
    lt__move *moves;         /* min-cost: (nsteps) */
    int *perms;              /* min-cost: permutations of permute steps */
    double search_work;      /* min-cost: the work its search charged (test_plan_memo) */
    lt_plan *parts[2];       /* zero fill: the plans before and after the zero-fill
                              * steps (their moves) */
    int zf_first, zf_end;    /* zero fill: steps [first, end) */
} lt__plan_x;

static inline lt__plan_x *lt__plan_x_of(const lt_plan *p) { return (lt__plan_x *)(uintptr_t)p; }

/* What every plan records of its tensor and its ends (lt__plan_new). */
typedef struct lt__plan_head {
    const lt_mesh *mesh;
    lt_dtype dtype;
    int ndim;
    const int64_t *shape;                 /* (ndim) global */
    const lt_placement *src, *dst;        /* (mesh->ndim) each */
    lt_planner planner;
} lt__plan_head;

/* The one constructor of plans (plan_cache.c): a plan of n steps with h's
 * header, refs 1, steps (n) zeroed, states (n + 1, mesh ndim) zeroed but
 * the first row (h->src); with `moves`, also moves (n) zeroed and perms
 * (nperm) for the min-cost search's permute steps. NULL when out of memory
 * (said, naming `what`). The caller frees it with lt_plan_free. */
lt_plan *lt__plan_new(const lt__plan_head *h, int n, int moves, size_t nperm, const char *what);

/* ---- the search (plan_moves.c, plan_search.c) -------------------------------------- */

#define LT__MAXC 48    /* candidate placements per mesh dim (keys keep 8 bits per dim) */
#define LT__SS_EVERY 16 /* tensor dims this short get SS(d, k) for every k (plan_space.c) */
#define LT__MAXR 24    /* split rules tried by the collectives that split */

/* A move while searching: small, with the rule and the permutation as
 * indices into the search context. */
typedef struct lt__mv {
    signed char kind, mesh_dim, dim, cdim, op, rule;
    int root;
    int perm;          /* permute: offset in lt__mc.perms */
    signed char span;  /* 0: mesh_dim alone; k >= 2: mesh dims mesh_dim .. + k - 1 flattened */
} lt__mv;

typedef struct lt__node {
    uint64_t key;      /* candidate index per mesh dim, 8 bits each */
    lt__list *lay;     /* layout (geo.off[M + 1] lists), lt__malloc'ed when expanded; NULL before */
    uint64_t g, h;     /* cost from the source; lower bound to the destination (the
                        * objective's: bytes, busiest-rank bytes or time) */
    uint64_t g2, h2;   /* objectives other than bytes: total bytes, their bound */
    int steps, prev;
    lt__mv mv;         /* the move from prev */
    unsigned char done;
    unsigned char lay_shared;   /* lay is the shared space's (lt__ms_layout_get): not freed here */
} lt__node;

/* ---- search bookkeeping of both planners (plan_frontier.c) ------------------------ */

/* The planners' priority queue: a binary min-heap of
 * entries ordered by k[0], then k[1], then k[2], then node. The A* of
 * plan_search.c puts in k: f (bytes so far + the lower bound), fs (steps so
 * far + 1 unless it is the destination: a lower bound of the steps), then h
 * (nearer the destination first; any order is exact here); the search of
 * plan.c: bytes, steps, 0. */
typedef struct lt__pq_item {
    uint64_t k[3];
    int node;
} lt__pq_item;

typedef struct lt__pq {
    lt__pq_item *v;     /* (cap) lt__realloc; n used */
    int n, cap;
} lt__pq;

/* LT_NOMEM ("out of memory while planning") when it cannot grow. */
lt_status lt__pq_push(lt__pq *q, lt__pq_item it);
/* The least entry, removed; q->n must be > 0. */
lt__pq_item lt__pq_pop(lt__pq *q);
/* Frees the entries; q is empty and reusable after. */
void lt__pq_free(lt__pq *q);

/* A state's key -> its node index (open addressing, at most half full). A
 * slot is in use when its gen is the map's: emptying the map is a new gen
 * (so a table is reused without clearing it). */
typedef struct lt__keymap_slot {
    uint64_t key;
    int idx1;           /* node index + 1 */
    uint32_t gen;
} lt__keymap_slot;

typedef struct lt__keymap {
    lt__keymap_slot *slot;   /* (cap) lt__calloc'ed, or taken from lt__spare_take */
    size_t n, cap;
    uint32_t gen;            /* 0 until the table is made */
} lt__keymap;

/* Tables that searches empty and the next search reuses (a process-wide
 * pool of a few, each up to LT__SPARE_MAX bytes, behind a spin lock), kinds
 * LT__SPARE_KEYMAP and LT__SPARE_MEMO. Entries carry a generation: a table
 * is empty for generation *gen when no entry has it. _take: *p (NULL: none
 * spare) with its *cap entries of esize bytes and the generation to use;
 * ownership passes to the caller. _give: takes ownership of p (cap entries
 * of esize bytes, entries of generations up to gen): kept for the next
 * search, emptied (a new generation, or zeroed when the generations wrap),
 * or freed when the pool is full or p is too big. _clear frees the pool
 * (lt_plan_cache_clear). */
#define LT__SPARE_KEYMAP 0
#define LT__SPARE_MEMO 1
#define LT__SPARE_MAX (16u << 10)
void lt__spare_take(int kind, void **p, size_t *cap, uint32_t *gen);
void lt__spare_give(int kind, void *p, size_t cap, size_t esize, uint32_t gen);
void lt__spare_clear(void);

/* *idx = the node of key; when absent, key gets index `next` (the caller
 * then creates that node) and *added = 1. LT_NOMEM ("out of memory while
 * planning") when the map cannot grow. */
lt_status lt__keymap_get(lt__keymap *m, uint64_t key, int next, int *idx, int *added);
/* Empties the map, keeping its memory. */
void lt__keymap_clear(lt__keymap *m);
void lt__keymap_free(lt__keymap *m);

/* The search space shared by searches of one tensor (plan_memo.c): */
typedef struct lt__ms lt__ms;     /* one (mesh, shape, element size) */
typedef struct lt__mst lt__mst;   /* one state (layout), its moves' results */
typedef struct lt__msg lt__msg;   /* one result (what each rank holds), its matching */

/* What find_state answered for one result (by two hashes of it). */
typedef struct lt__memo {
    uint64_t h1, h2, key;
    uint32_t gen;       /* in use when it is the search's memogen */
    unsigned char found;
} lt__memo;

typedef struct lt__mc {
    lt__geo g;
    size_t esize;
    int is_float;
    lt_placement src[LT_MESH_MAX_DIMS], dst[LT_MESH_MAX_DIMS];   /* size-1 mesh dims are R */
    int frozen[LT_MESH_MAX_DIMS];
    int nc[LT_MESH_MAX_DIMS];
    lt_placement cand[LT_MESH_MAX_DIMS][LT__MAXC];
    int nrules;
    lt_split_rule rules[LT__MAXR];
    lt__arena nar, tar;          /* runs of node layouts; scratch runs */
    lt__arena uar;               /* runs of the unions of ugr (plan_memo.c) */
    double work, budget;         /* list operations done; the most allowed */
    lt_objective obj;            /* what the search minimises (plan.h) */
    lt_moveset moves;            /* which moves it may take */
    lt_topology topo;            /* the time objective's */
    /* the time objective's latencies, per search (plan_search.c's lat_init):
     * lat1[i][w] a step along mesh dim i (min_rounds' which w times alpha);
     * latf[i][sp][red] a step over flattened mesh dims i .. i + sp - 1 (sp >= 2,
     * flat_alpha's red) */
    uint64_t lat1[LT_MESH_MAX_DIMS][3];
    uint64_t latf[LT_MESH_MAX_DIMS][LT_MESH_MAX_DIMS + 1][3];
    /* the time bound of one state (plan_search.c's cover_pair; meshes of at most
     * LT__COVK_W ranks): per (holder h, rank r), the elements of r's destination
     * block that h's block holds, valid where covstamp is covgen */
#define LT__COVK_W 16
    uint32_t covgen;
    uint32_t covstamp[LT__COVK_W * LT__COVK_W];
    uint64_t covk[LT__COVK_W * LT__COVK_W];
    /* scratch, sized once */
    lt__list *G;                 /* (W, ndim) what each rank holds after a move */
    unsigned char *Gempty;       /* (W) */
    signed char gpop[LT_MESH_MAX_DIMS];   /* Partial op per mesh dim after the move, -1: none */
    lt__list *U;                 /* (off[M + 1]) unions of G per level */
    unsigned char *Uempty;       /* (T[0] + ... + T[M]) */
    unsigned char uempty_any[LT_MESH_MAX_DIMS + 1];   /* level j of U has an empty block */
    const lt__msg *ugr;          /* the shared record whose unions c->U holds (runs in
                                  * uar), NULL: none; lt__mc_unions resets it */
    lt__list *B;                 /* (off[M + 1]) the layout being matched */
    lt__list *L;                 /* (off[M + 1]) the layout a local move picks */
    uint64_t lwhash[LT_MESH_MAX_DIMS][LT__MAXC]; /* local picks: blocks each candidate gives */
    unsigned char lwvalid[LT_MESH_MAX_DIMS][LT__MAXC];  /* (per level, in the walk) */
    lt__list *Q;                 /* (max mesh dim size, ndim) pieces received by one rank */
    const lt__list **ptrs;       /* (max mesh dim size) lists being concatenated or united */
    const lt__list **mptrs;      /* (max mesh dim size) the blocks of a group's members */
    const lt__list **qptrs;      /* (max mesh dim size) the pieces one member receives */
    uint64_t *recv;              /* (W) bytes each rank receives in a move */
    unsigned char *lacks;        /* (W) the state being bounded: rank lacks part of its
                                  * destination block (plan_search.c) */
    int *iscr;                   /* (2 x max mesh dim size) */
    int *perms;                  /* permutations of permute moves */
    lt__memo *memo;              /* open addressing on h1 */
    size_t nmemo, capmemo;
    uint32_t memogen;            /* the generation of memo's entries in use */
    int pooled;                  /* 1: map and memo go back to the spare tables (lt__spare_give) */
    size_t nperms, capperms;
    /* nodes */
    lt__node *nodes;
    int nnodes, capnodes;
    lt__keymap map;              /* key -> index into nodes */
    lt__pq queue;
    int expanded;
    uint64_t goal;
    const lt__list *dlay;        /* the destination's layout (for h) */
    /* the shared search space (plan_memo.c); NULL: everything computed here */
    lt__ms *ms;                  /* one reference */
    lt__mst *mstate;             /* the state being expanded, NULL: none or not shared */
    unsigned char creg[LT_MESH_MAX_DIMS][LT__MAXC];   /* candidate -> index in ms's registry */
    int msdst;                   /* dst's index in ms's destination registry, -1: none */
    signed char cpop[LT_MESH_MAX_DIMS]
                    [LT__MAXC]; /* candidate's Partial op, -1: none (set with creg) */
    /* set with creg, for the replays of dec and the local walk (plan_memo.c):
     * per mesh dim and Partial op + 1, the registry indices of the
     * candidates with that op (a bit each: the registry has 64 entries);
     * per registry index, its candidate and that candidate's place among
     * those with its op */
    uint64_t cregmask[LT_MESH_MAX_DIMS][LT_REDOP_COUNT + 1];
    unsigned char rcand[LT_MESH_MAX_DIMS][64], rpos[LT_MESH_MAX_DIMS][64];
    double *rec;                 /* while set, spend() writes its amounts here */
    int nrec;
    int recording;               /* 1: try_move appends to scr (plan_memo.c) */
    void *scr;                   /* (capscr) the moves recorded; lt__realloc */
    int nscr, capscr;
} lt__mc;

/* The candidates and split rules of c (mesh, shape, src, dst and frozen
 * set; plan_space.c). memo: read and fill the process-wide memo of level
 * prunings (shared searches). LT_OK or LT_NOMEM (message set). */
lt_status lt__mc_space(lt__mc *c, int memo);

/* Empties the memo of level prunings (lt_plan_cache_clear). */
void lt__mc_space_clear(void);
/* Empties the cache of every rank's layout of a state that lt__move_run
 * keeps (plan_exec.c; lt_plan_cache_clear). */
void lt__move_layouts_clear(void);
/* Empties the cache of states' bytes of the memory estimate
 * (redistribute.c; lt_plan_cache_clear). */
void lt__state_bytes_clear(void);

/* Key of placement list pl (candidate indices); pl from the candidates. */
uint64_t lt__mc_key(const lt__mc *c, const lt_placement *pl);
void lt__mc_placements(const lt__mc *c, uint64_t key, lt_placement *pl);
/* The canonical key of the state holding exactly what layout `lay` holds
 * with Partial ops pop (the first candidate list, in candidate order, whose
 * layout matches): 1 found, 0 none, -1 out of memory, -2 over budget. */
int lt__mc_canon(lt__mc *c, const lt__list *lay, const signed char *pop, uint64_t *key);
/* Every move from node `from`: calls lt__mc_relax for each state it
 * reaches. LT_OK, LT_NOMEM (message set) or LT_OVERFLOW (budget; no
 * message). */
lt_status lt__mc_expand(lt__mc *c, int from);
/* Edge from node `from` to the state of key, whose ranks hold rk (W x ndim
 * lists, read before anything else is allocated); the move receives bytes
 * in all, most on its busiest rank. A move the search's move set leaves
 * out is not an edge. */
lt_status lt__mc_relax(lt__mc *c, int from, uint64_t key, uint64_t bytes, uint64_t most,
                       const lt__mv *mv, const lt__list *rk);
/* lt__mc_relax of a shared record g's state (rk: g's blocks): a new node's
 * lower bound is read from g when this destination's is known there, else
 * computed and kept there (lt__ms_lb_slot). */
lt_status lt__mc_relax_g(lt__mc *c, int from, uint64_t key, uint64_t bytes, uint64_t most,
                         const lt__mv *mv, const lt__list *rk, lt__msg *g);
/* Builds node idx's layout when it has none yet. LT_OK or LT_NOMEM. */
lt_status lt__mc_layout(lt__mc *c, int idx);
/* Re-evaluates move mv from node `from`: bytes per rank into c->recv,
 * returns the total; *reorder: the received order differs from the
 * target's (a local index_select follows). -1 when it is not a move. */
int64_t lt__mc_move_bytes(lt__mc *c, int from, const lt__mv *mv, int *reorder);

/* Pieces of plan_moves.c that plan_memo.c replays (the same code, so the
 * same answers and the same work): */
double lt__mc_runs(const lt__list *l, size_t n);   /* runs past the first */
/* Charges n list operations; 1 when past the budget. While c->rec is set
 * the amounts are also written there (plan_memo.c learns what a move
 * costs; room for a few). Inline: the replays charge tens of millions of
 * times per sweep. */
static inline int lt__mc_spend(lt__mc *c, double n) {
    if (c->rec) c->rec[c->nrec++] = n;
    return (c->work += n) > c->budget;
}
int lt__mc_unions(lt__mc *c);                        /* c->U from c->G: 1, -1, -2 */
int lt__mc_unions_in(lt__mc *c, lt__arena *a);       /* the same, new runs in a */
int lt__mc_pops_ok(const lt__mc *c);
void lt__mc_g_hash(const lt__mc *c, uint64_t *h1, uint64_t *h2);
/* The work one candidate of level j costs dec (c->B holds level j). */
double lt__mc_dec_cost(const lt__mc *c, int j);
/* Candidate b of mesh dim j against the unions, on c->B's level j: 1
 * matches (level j + 1 of c->B written, runs in c->tar), 0 no, -1 out of
 * memory. No work is charged. */
int lt__mc_dec_try(lt__mc *c, int j, int b);
/* local_walk's check of candidate b of mesh dim j on c->L's level j: every
 * rank's block within a's (or empty; *empty then). 1 (level j + 1 of c->L
 * written), 0 no, -1 out of memory. No work is charged. */
int lt__mc_local_try(lt__mc *c, const lt__list *a, int j, int b, int *empty);
/* find_state after its charge and hash: the memo, then (gr, or the shared
 * space, when set) the matching. 1 found (*key), 0 none, -1, -2. */
int lt__mc_find_hashed(lt__mc *c, uint64_t h1, uint64_t h2, lt__msg *gr, uint64_t *key);
/* What collective, partition or reduction mv leaves (c->G, c->Gempty,
 * c->gpop, c->recv) from layout a with Partial ops apop: 1, 0 not a move,
 * -1, -2; *bytes its cost. */
int lt__mc_result(lt__mc *c, const lt__list *a, const signed char *apop, const lt__mv *mv,
                  uint64_t *bytes, int *reorder);

/* ---- the shared search space (plan_memo.c, plan_memo_local.c) --------------------- */

/* Attaches c (its space built, not yet searched) to the shared space of its
 * tensor: sets c->ms and c->creg, or leaves c->ms NULL (explicit split
 * sizes, too many candidates, no memory: the search runs unshared, with the
 * same result). */
void lt__ms_attach(lt__mc *c);
/* Drops c's reference (c->ms NULL after). */
void lt__ms_detach(lt__mc *c);
/* Sets c->mstate to the shared record of node idx's state (layout built),
 * NULL when not shared. */
void lt__ms_enter(lt__mc *c, int idx);
/* The moves along mesh dim i but permutes and partition (plan_moves.c's
 * dim_moves) from node `from`, replayed from the shared records: *done 1
 * (the status as dim_moves would return it), or 0: the caller runs
 * dim_moves, which is recorded, then calls lt__ms_script_end (complete: it
 * returned LT_OK). */
lt_status lt__ms_script(lt__mc *c, int from, uint64_t akey, int i, int *done);
void lt__ms_script_end(lt__mc *c, int i, int complete);
/* try_move through the shared records: *done 0 when the caller must
 * compute it (nothing charged then); else the status try_move returns. */
lt_status lt__ms_try_move(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                          uint64_t akey, const lt__mv *mv, int *done);
/* local_walk from node `from` (layout a) through the shared records: *done
 * 0 when the caller must walk (nothing charged or relaxed then). */
lt_status lt__ms_local_walk(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                            uint64_t akey, int *done);
/* A permute's sigma for candidate b of mesh dim i from the state being
 * expanded: 1 a permute (sigma[mesh dim size] set), 0 none, -3 unknown;
 * _put records what perm_sigma found (r 1 or 0). */
int lt__ms_sigma_get(lt__mc *c, int i, int b, int *sigma);
void lt__ms_sigma_put(lt__mc *c, int i, int b, int r, const int *sigma);
/* 1 when the state being expanded knows the permute of every candidate of
 * mesh dim i that is not Partial (*cands: those that are permutes, bit b
 * for candidate b); 0 otherwise, or when lt__ms_dec_sets is 0. */
int lt__ms_permute_set(lt__mc *c, int i, uint64_t *cands);
/* try_move of permute mv (candidate b of its mesh dim, whose sigma the
 * space knows) through the shared records; *done as lt__ms_try_move. */
lt_status lt__ms_permute(lt__mc *c, int from, const lt__list *a, const signed char *apop,
                         uint64_t akey, int b, const lt__mv *mv, int *done);
/* The record of c->G (hashes h1, h2), made when new; NULL when not shared. */
lt__msg *lt__ms_g_get(lt__mc *c, uint64_t h1, uint64_t h2);
/* Unions and dec replayed from gr: the same answer and the same work
 * charged; -3 when the record cannot answer (nothing charged). */
int lt__ms_dec(lt__mc *c, lt__msg *gr, uint64_t *key);
/* The shared space's layout of the placement list of c's key (read-only,
 * alive while c holds the space), or NULL: not recorded, or not shared. */
const lt__list *lt__ms_layout_get(lt__mc *c, uint64_t key);
/* Records layout lay (off[M + 1] lists; copied) of the list of key, unless
 * known, full or out of memory. */
void lt__ms_layout_put(lt__mc *c, uint64_t key, const lt__list *lay);
/* Loads gr's blocks into c->G, c->Gempty, c->gpop. */
void lt__ms_g_load(lt__mc *c, const lt__msg *gr);
/* Where g keeps the lower bound of c's destination (the search's bound of
 * a state holding g's blocks) plus 1, 0 while unknown (bounds of 2^32 - 1
 * bytes or more are not kept); read and written
 * with relaxed atomics (every search computes the same value). NULL: not
 * kept (not shared, the space's destination registry is full, no memory). */
uint32_t *lt__ms_lb_slot(lt__mc *c, lt__msg *g);
/* Empties the shared spaces (lt_plan_cache_clear). */
void lt__ms_clear(void);
/* 1 (the default): the replays of dec and of the local walk take the
 * matching candidates from the records' bit sets; 0: they scan the
 * candidates one by one. Both charge the same and answer the same
 * (test_plan_memo compares them). */
extern int lt__ms_dec_sets;

/* ---- costs (plan_cost.c) ------------------------------------------------------------ */

/* The cost options of the plan being built on this thread (set by
 * lt_plan_redistribute_cost for the call; NULL: bytes over the collectives). */
extern _Thread_local const lt_plan_cost *lt__plan_cost_cur;
/* 1 when lt__plan_cost_cur is NULL or bytes over the collectives: the plan
 * cache may serve and keep plans (it keys no cost options). */
int lt__plan_cost_plain(void);
/* Sets this thread's cost options (borrowed; NULL: the default) and
 * returns the previous ones: a tool planning every redistribute of a run
 * under other options (the CLI's --objective, --moves) brackets it. */
const lt_plan_cost *lt__plan_cost_swap(const lt_plan_cost *c);
/* Latency rounds of a collective: lt__coll_rounds (collectives_sim/cost.h). */
/* rounds * alpha[i] + bytes / beta[i] in picoseconds, the division rounded
 * up (up 1) or down (up 0: lower bounds); saturates. */
uint64_t lt__time_ps(const lt_topology *t, int i, lt_coll k, int n, uint64_t bytes, int up);
/* lt__time_ps of a step over the group of `span` mesh dims from mesh dim i
 * (lt__group_size; 0 or 1: mesh dim i alone): a flattened group's messages
 * cross its slowest link (the largest alpha, the smallest beta of its dims
 * of size > 1) and use the algorithm those dims name for k when they all
 * name the same one, else the default. */
uint64_t lt__time_ps_group(const lt_topology *t, const lt_mesh *mesh, int i, int span, lt_coll k,
                           uint64_t bytes, int up);
/* 1 when moveset m allows move kind k. */
int lt__moves_allow(lt_moveset m, lt__mv_kind k);

/* Min-cost plan of a redistribute (lists normalized, checked, not rejected;
 * the arguments of lt__plan_build). *out: a new plan. LT_OVERFLOW (no
 * message) when the search ran out of its work budget: the caller falls
 * back on greedy. */
lt_status lt__plan_mincost(const lt_spec *from, const lt_placement *dst, int shared, lt_plan **out);

/* Runs step ps (a min-cost step: ps->move_ set) on the shards `in` of the checked
 * state `from` (borrowed), into out[world] (new tensors; all NULL on error). The
 * local work is derived from the index lists of layout math. cache 0: the
 * process-wide cache of states' layouts is neither read nor filled (a
 * redistribute with no_cache). */
lt_status lt__move_run(lt_comm *comm, const lt_spec *from, const lt_plan_step *ps,
                       lt_tensor *const *in, lt_tensor **out, int cache);

/* The plan's byte model against what running it recorded: every step that
 * issues a collective matches the next event of trace from index since on
 * (its collective, mesh dim, bytes received in total and on the busiest
 * rank), and no event is left over. LT_OK, or LT_INVALID with an
 * "internal: ..." message naming the first step that differs
 * (localtensor/plan/plan_trace.c; the scenario engine checks every redistribute
 * it runs). */
lt_status lt__plan_check_trace(const lt_plan *p, const lt_trace *trace, size_t since);

#endif
