/* localtensor/ops/ops_rules_pytorch.c — the choices of the rule set PYTORCH
 * (localtensor/ops.h) that differ from MIN_COMM by more than a table row:
 * PyTorch 2.15's shardability filter (an input sharded over more ranks than
 * its dim has elements is replicated first) and its way of resolving a
 * Partial input an op cannot keep (a reduce-scatter onto a free tensor dim
 * rather than an all-reduce). The families call these only under PYTORCH,
 * so MIN_COMM keeps its choices exactly. Invariant: every choice made here
 * is a layout the rule family then treats as the input's own, so the
 * result stays correct whatever PyTorch's cost model would have picked.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "localtensor/ops/ops_impl.h"

/* Ranks that share tensor dim d of pl[nmesh]: the product of the sizes of
 * the mesh dims that shard d. */
static int64_t shards_on(const lt_mesh *m, const lt_placement *pl, int d) {
    int64_t n = 1;
    for (int i = 0; i < m->ndim; i++)
        if (lt_placement_is_shard_like(&pl[i]) && pl[i].dim == d) n *= m->shape[i];
    return n;
}

/* Does a _StridedShard of pl[nmesh] split tensor dim d? */
static int strided_on(const lt_mesh *m, const lt_placement *pl, int d) {
    for (int i = 0; i < m->ndim; i++)
        if (pl[i].kind == LT_PL_STRIDED && pl[i].dim == d) return 1;
    return 0;
}

void lt__pytorch_refuse(lt__rule_io *io, const char *fmt, ...) {
    if (io->pt_refuses[0]) return;
    int n = snprintf(io->pt_refuses, sizeof io->pt_refuses, "PyTorch 2.15 refuses this: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(io->pt_refuses + n, sizeof io->pt_refuses - (size_t)n, fmt, ap);
    va_end(ap);
}

void lt__pytorch_shardable(lt__rule_io *io, int k) {
    const lt_mesh *m = io->mesh;
    const lt_spec *s = io->in[k];
    lt_placement *t = io->tgt[k];
    for (int i = m->ndim - 1; i >= 0; i--) {
        if (!lt_placement_is_shard_like(&t[i]) || t[i].dim >= s->ndim) continue;
        if (s->shape[t[i].dim] < shards_on(m, t, t[i].dim)) t[i] = lt_replicate();
    }
}

int lt__pytorch_scatter_dim(const lt__rule_io *io, int k, int i) {
    const lt_mesh *m = io->mesh;
    const lt_spec *s = io->in[k];
    const lt_placement *t = io->tgt[k];
    int sharded = 0;
    for (int j = 0; j < m->ndim; j++)
        sharded |= j != i && lt_placement_is_shard_like(&s->placements[j]);
    if (!sharded) return -1; /* an all-reduce costs PyTorch no more here */
    for (int d = 0; d < s->ndim; d++) {
        int bad = 0;
        for (int j = 0; j < m->ndim && !bad; j++) {
            const lt_placement *a = &s->placements[j];
            int on_d = lt_placement_is_shard_like(&t[j]) && t[j].dim == d;
            /* gathered from d on another mesh dim, or nested after this one */
            bad = (j != i && lt_placement_is_shard_like(a) && a->dim == d && !on_d) ||
                  (j > i && on_d);
        }
        if (!bad && s->shape[d] >= shards_on(m, t, d) * m->shape[i]) return d;
    }
    return -1;
}

/* ---- PyTorch's strategy selection ----------------------------------------------------
 * PyTorch 2.15 lists, for one mesh dim, the placements an op accepts
 * (output, then each input: lt__pt_rule); it takes every combination over
 * the mesh dims, drops those with a mixed Partial or with an input that
 * would have to move to a layout one of its dims is too small for (an input
 * kept as it is may stay uneven), prices each by its redistribute cost, and
 * picks: a combination that moves nothing, else the first free one, else
 * the first cheapest. Costs follow its model for a host of one device per
 * mesh dim (every mesh dim counts as inter-host there: 2.7 us a hop,
 * 87.7 * 0.22 GB/s).
 */

#define PT_LAT 2.7
#define PT_BW (87.7 * 0.22)
#define PT_INF HUGE_VAL /* inf + inf stays inf, as in PyTorch's sums */

static double pt_coll(double gb, int64_t n, int hops_factor) {
    double hops = (double)(hops_factor * (n - 1));
    return 6.6 + hops * PT_LAT + (gb * hops / (double)n) / PT_BW * 1e6;
}

static int pt_is_shard(const lt_placement *p) { return p->kind == LT_PL_SHARD; }

/* Equal as PyTorch sees placements: a Shard's split rule is not part of it
 * (PyTorch knows only torch.chunk's sizes). */
static int pt_same(const lt_placement *a, const lt_placement *b) {
    if (a->kind == LT_PL_SHARD && b->kind == LT_PL_SHARD) return a->dim == b->dim;
    return lt_placements_equal(a, b, 1);
}

static int pt_same_list(const lt_placement *a, const lt_placement *b, int n) {
    for (int i = 0; i < n; i++)
        if (!pt_same(&a[i], &b[i])) return 0;
    return 1;
}

/* Does placement p shard tensor dim d (PyTorch's is_shard(d))? */
static int pt_shards(const lt_placement *p, int d) {
    return lt_placement_is_shard_like(p) && p->dim == d;
}

/* Do cur and tgt shard tensor dim d on the same mesh dims left of mesh dim
 * i? (Otherwise the shard at i nests differently and must come off first.) */
static int pt_aligned(const lt_placement *cur, const lt_placement *tgt, int i, int d) {
    for (int j = 0; j < i; j++)
        if (pt_shards(&cur[j], d) != pt_shards(&tgt[j], d)) return 0;
    return 1;
}

/* The cost of one mesh dim's step x -> y (PyTorch's
 * _compute_placement_transition_cost), updating the bytes *gb. */
static double pt_step(const lt_placement *x, const lt_placement *y, int64_t n, double *gb) {
    int xs = lt_placement_is_shard_like(x), ys = lt_placement_is_shard_like(y);
    int xp = x->kind == LT_PL_PARTIAL, yp = y->kind == LT_PL_PARTIAL;
    if (pt_same(x, y)) return 0;
    if ((xs || xp) && yp) return PT_INF;
    if (xs && !ys) return *gb *= (double)n, pt_coll(*gb, n, 1);
    if (xs) return pt_coll(*gb, n, 1) + 1.0;
    if (xp && !ys) return pt_coll(*gb, n, 2);
    if (xp) {
        double c = pt_coll(*gb, n, 1);
        *gb /= (double)n;
        return c;
    }
    if (ys) *gb /= (double)n;
    return 0;
}

/* PyTorch's redistribute cost of input k from its placements to tgt, over
 * the steps of its greedy plan (generate_greedy_transform_infos): a 1-d mesh
 * steps directly; a sharded input steps every mesh dim right to left (to
 * Replicate where the target shard would nest differently), then left to
 * right whatever is still not the target. The bytes each step moves depend
 * on the steps before it. */
static double pt_cost(const lt__rule_io *io, int k, const lt_placement *tgt) {
    const lt_mesh *m = io->mesh;
    const lt_spec *s = io->in[k];
    int repl = 1;
    for (int i = 0; i < m->ndim; i++) repl &= s->placements[i].kind == LT_PL_REPLICATE;
    if (repl || pt_same_list(s->placements, tgt, m->ndim)) return 0;
    for (int i = 0; i < m->ndim; i++) /* no shard order PyTorch can plan from */
        if (s->placements[i].kind == LT_PL_STRIDED || tgt[i].kind == LT_PL_STRIDED) return PT_INF;
    double gb = (double)lt_dtype_size(s->dtype) / (1024.0 * 1024.0 * 1024.0), cost = 0;
    int64_t nshards = 1;
    for (int d = 0; d < s->ndim; d++) gb *= (double)s->shape[d];
    for (int i = 0; i < m->ndim; i++)
        if (pt_is_shard(&s->placements[i])) nshards *= m->shape[i];
    gb /= (double)nshards;
    lt_placement cur[LT_MESH_MAX_DIMS];
    memcpy(cur, s->placements, sizeof(lt_placement) * (size_t)m->ndim);
    for (int i = m->ndim - 1; i >= 0 && m->ndim > 1 && nshards > 1 && cost < PT_INF; i--) {
        lt_placement t = tgt[i];
        if (lt_placement_is_shard_like(&t) && !pt_aligned(cur, tgt, i, t.dim)) t = lt_replicate();
        cost += pt_step(&cur[i], &t, m->shape[i], &gb);
        cur[i] = t;
    }
    for (int i = 0; i < m->ndim && cost < PT_INF; i++)
        cost += pt_step(&cur[i], &tgt[i], m->shape[i], &gb);
    return cost;
}

/* PyTorch's is_tensor_shardable: no dim split over more ranks than it has. */
static int pt_shardable(const lt__rule_io *io, int k, const lt_placement *tgt) {
    const lt_spec *s = io->in[k];
    for (int d = 0; d < s->ndim; d++) {
        int64_t n = shards_on(io->mesh, tgt, d);
        if (n > 1 && s->shape[d] < n) return 0; /* a dim no mesh dim shards is never checked */
    }
    return 1;
}

/* A Partial mix PyTorch drops: two reduce ops other than {sum, avg}. */
static int pt_mixed(const lt_placement *const *col, int nmesh) {
    int first = -1;
    for (int i = 0; i < nmesh; i++) {
        const lt_placement *p = col[i];
        if (p->kind != LT_PL_PARTIAL) continue;
        if (first < 0) first = (int)p->op;
        int sa = p->op == LT_REDOP_SUM || p->op == LT_REDOP_AVG;
        int sf = first == LT_REDOP_SUM || first == LT_REDOP_AVG;
        if ((int)p->op != first && !(sa && sf)) return 1;
    }
    return 0;
}

/* Scores combination `pick` (one rule index per mesh dim): *cost and
 * *moves; 0 when PyTorch drops it. */
static int pt_score(const lt__rule_io *io, const lt__pt_rule *rules, const int *pick, int uneven,
                    const int *even, double *cost, int *moves) {
    const lt_mesh *m = io->mesh;
    *cost = 0, *moves = 0;
    for (int k = -1; k < io->nin; k++) {
        lt_placement t[LT_MESH_MAX_DIMS];
        const lt_placement *col[LT_MESH_MAX_DIMS];
        for (int i = 0; i < m->ndim; i++) t[i] = rules[pick[i]].p[k + 1], col[i] = &t[i];
        if (pt_mixed(col, m->ndim)) return 0;
        if (k < 0) continue;
        int same = pt_same_list(t, io->in[k]->placements, m->ndim);
        if (!(same && uneven) && !pt_shardable(io, k, t)) return 0;
        for (int d = 0; k == 0 && even && d < io->in[0]->ndim; d++)
            if (even[d] && (io->in[0]->shape[d] % shards_on(m, t, d) || strided_on(m, t, d)))
                return 0; /* a strided split of an even dim may still give unequal counts */
        *moves += !same;
        *cost += pt_cost(io, k, t);
    }
    return 1;
}

int lt__pytorch_has_strided(const lt__rule_io *io) {
    for (int k = 0; k < io->nin; k++)
        for (int i = 0; i < io->mesh->ndim; i++)
            if (io->in[k]->placements[i].kind == LT_PL_STRIDED) return 1;
    return 0;
}

int lt__pytorch_any_shard(const lt__rule_io *io) {
    for (int k = 0; k < io->nin; k++)
        for (int i = 0; i < io->mesh->ndim; i++)
            if (lt_placement_is_shard_like(&io->in[k]->placements[i])) return 1;
    return 0;
}

#define PT_MAX_KINDS 4 /* Shard and up to three _StridedShard split factors */
#define PT_MAX_ROWS 64

/* PyTorch's shard builders: Shard when some input has a Shard, and one
 * _StridedShard per split factor the inputs use (as kinds[n] placements of
 * dim 0). */
static int pt_shard_kinds(const lt__rule_io *io, lt_placement *kinds) {
    int n = 0, plain = 0;
    for (int k = 0; k < io->nin; k++)
        for (int i = 0; i < io->mesh->ndim; i++) {
            const lt_placement *p = &io->in[k]->placements[i];
            plain |= p->kind == LT_PL_SHARD;
            if (p->kind != LT_PL_STRIDED) continue;
            int seen = 0;
            for (int j = 0; j < n; j++) seen |= kinds[j].split_factor == p->split_factor;
            if (!seen && n < PT_MAX_KINDS - 1) kinds[n++] = lt_strided(0, p->split_factor);
        }
    if (plain || !n) { /* no shard at all: rows naming a Shard keep it (embedding's) */
        memmove(kinds + 1, kinds, sizeof *kinds * (size_t)n);
        kinds[0] = lt_shard(0), n++;
    }
    return n;
}

/* The rows with their shard placeholders filled by every shard kind the
 * inputs use (PyTorch's _fill_single_dim_strategy_placeholders), into
 * ex[PT_MAX_ROWS]; returns how many. */
static int pt_expand(const lt__rule_io *io, const lt__pt_rule *rules, int nrules,
                     lt__pt_rule *ex) {
    lt_placement kinds[PT_MAX_KINDS];
    int nk = pt_shard_kinds(io, kinds), n = 0;
    for (int r = 0; r < nrules; r++) {
        int sharded = 0;
        for (int q = 0; q <= io->nin; q++) sharded |= rules[r].p[q].kind == LT_PL_SHARD;
        for (int b = 0; b < (sharded ? nk : 1) && n < PT_MAX_ROWS; b++, n++) {
            ex[n] = rules[r];
            for (int q = 0; q <= io->nin && sharded; q++)
                if (ex[n].p[q].kind == LT_PL_SHARD)
                    ex[n].p[q] = lt__pl_with_dim(&kinds[b], rules[r].p[q].dim);
        }
    }
    return n;
}

/* Sets mesh dim i of the outputs and targets from row r. PyTorch ignores
 * split rules; here the first input that keeps its shard leads (its rule),
 * and the others and the output take the same rule on their own dims, so
 * the operands still map the same global indices. */
static void pt_apply(lt__rule_io *io, const lt__pt_rule *r, int i) {
    const lt_placement *lead = NULL;
    for (int k = 0; k < io->nin && !lead; k++)
        if (r->p[k + 1].kind == LT_PL_SHARD && pt_same(&r->p[k + 1], &io->in[k]->placements[i]))
            lead = &io->in[k]->placements[i];
    io->out[i] = r->p[0];
    if (lead && r->p[0].kind == LT_PL_SHARD) io->out[i] = lt__pl_with_dim(lead, r->p[0].dim);
    for (int k = 0; k < io->nin; k++) {
        const lt_placement *own = &io->in[k]->placements[i], *want = &r->p[k + 1];
        io->tgt[k][i] = *want;
        if (want->kind != LT_PL_SHARD) continue;
        lt_placement t = lead ? lt__pl_with_dim(lead, want->dim) : *want;
        io->tgt[k][i] = pt_same(want, own) && lt__pl_same_shard(&t, own) ? *own : t;
    }
}

int lt__pytorch_choose(lt__rule_io *io, const lt__pt_rule *given, int ngiven, int uneven,
                       const int *even) {
    const lt_mesh *m = io->mesh;
    for (int k = 0; k < io->nin; k++) /* a split rule PyTorch has no layout for: min-comm */
        for (int i = 0; i < m->ndim; i++)
            if (io->in[k]->placements[i].kind == LT_PL_SHARD &&
                io->in[k]->placements[i].rule.kind != LT_SPLIT_CHUNK)
                return 0;
    lt__pt_rule rules[PT_MAX_ROWS];
    int nrules = pt_expand(io, given, ngiven, rules);
    int pick[LT_MESH_MAX_DIMS] = {0}, best[LT_MESH_MAX_DIMS], keep = 0, free_ = 0, cheap = 0;
    int keep_at[LT_MESH_MAX_DIMS], free_at[LT_MESH_MAX_DIMS];
    double best_cost = PT_INF;
    for (;;) {
        double c;
        int moves;
        if (pt_score(io, rules, pick, uneven, even, &c, &moves)) {
            if (c == 0 && !moves) keep = 1, memcpy(keep_at, pick, sizeof pick);
            else if (c == 0 && !free_) free_ = 1, memcpy(free_at, pick, sizeof pick);
            if (!cheap || c < best_cost) cheap = 1, best_cost = c, memcpy(best, pick, sizeof pick);
        }
        int i = m->ndim - 1; /* next combination: the last mesh dim varies fastest */
        while (i >= 0 && ++pick[i] == nrules) pick[i--] = 0;
        if (i < 0) break;
    }
    const int *use = keep ? keep_at : free_ ? free_at : cheap ? best : NULL;
    if (!use) return 0;
    for (int i = 0; i < m->ndim; i++) pt_apply(io, &rules[use[i]], i);
    return 1;
}
