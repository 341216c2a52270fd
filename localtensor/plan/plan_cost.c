/* localtensor/plan/plan_cost.c — what a plan costs beyond its bytes: the
 * objectives min-cost can minimise, the move sets it may draw from, and a
 * topology's time per step (localtensor/plan.h has the model,
 * docs/SEMANTICS.md §7 the formulas).
 *
 * Why a file of its own: the search (plan_search.c) and the tables that show
 * a plan both price steps, and the brute force of the tests checks the
 * search against the formulas written here in words. Times are integers
 * (picoseconds) so that every comparison of costs is exact: the search's
 * step cost rounds up, its lower bound rounds down, and neither overstates.
 */
#include <string.h>

#include "collectives_sim/cost.h"
#include "kernels/status_impl.h"
#include "localtensor/plan/plan_impl.h"

_Thread_local const lt_plan_cost *lt__plan_cost_cur;

static const char *const objective_names[LT_OBJECTIVE_COUNT] = {
#define LT__XX(e, s) s,
    LT_OBJECTIVE_MAP(LT__XX)
#undef LT__XX
};

static const char *const moveset_names[LT_MOVES_COUNT] = {
#define LT__XX(e, s) s,
    LT_MOVESET_MAP(LT__XX)
#undef LT__XX
};

const char *lt_objective_name(lt_objective o) {
    return lt__name_of(objective_names, LT_OBJECTIVE_COUNT, (int)o);
}

static const char *const algo_names[LT_ALGO_COUNT] = {
#define LT__XX(e, s) s,
    LT_ALGO_MAP(LT__XX)
#undef LT__XX
};

const char *lt_algo_name(lt_algo a) { return lt__name_of(algo_names, LT_ALGO_COUNT, (int)a); }

lt_status lt_algo_parse(const char *s, lt_algo *out) {
    int i = lt__name_find(algo_names, LT_ALGO_COUNT, s);
    if (i >= 0) {
        *out = (lt_algo)i;
        return LT_OK;
    }
    char list[96];
    return lt__err(LT_INVALID, "algorithm '%s': expected %s", s,
                   lt__name_join_or(algo_names, LT_ALGO_COUNT, list, sizeof list));
}

const char *lt_moveset_name(lt_moveset m) {
    return lt__name_of(moveset_names, LT_MOVES_COUNT, (int)m);
}

lt_status lt_objective_parse(const char *s, lt_objective *out) {
    int i = lt__name_find(objective_names, LT_OBJECTIVE_COUNT, s);
    if (i >= 0) {
        *out = (lt_objective)i;
        return LT_OK;
    }
    char list[96];
    return lt__err(LT_INVALID, "objective '%s': expected %s", s,
                   lt__name_join_or(objective_names, LT_OBJECTIVE_COUNT, list, sizeof list));
}

lt_status lt_moveset_parse(const char *s, lt_moveset *out) {
    int i = lt__name_find(moveset_names, LT_MOVES_COUNT, s);
    if (i >= 0) {
        *out = (lt_moveset)i;
        return LT_OK;
    }
    char list[96];
    return lt__err(LT_INVALID, "moves '%s': expected %s", s,
                   lt__name_join_or(moveset_names, LT_MOVES_COUNT, list, sizeof list));
}

/* The presets' links (plan.h states them). */
#define IB_ALPHA_PS 5000000ull /* 5 us */
#define IB_BETA     25000ull   /* 25 GB/s in bytes per us */
#define NV_ALPHA_PS 2000000ull /* 2 us */
#define NV_BETA     300000ull  /* 300 GB/s */

lt_status lt_topology_preset(const char *name, int mesh_ndim, lt_topology *out) {
    int nv = !strcmp(name, "nvlink-ib");
    if (!nv && strcmp(name, "uniform"))
        return lt__err(LT_INVALID, "topology '%s': expected uniform, nvlink-ib or a JSON file",
                       name);
    memset(out, 0, sizeof *out);
    for (int i = 0; i < LT_MESH_MAX_DIMS; i++) {
        int fast = nv && i == mesh_ndim - 1;
        out->alpha_ps[i] = fast ? NV_ALPHA_PS : IB_ALPHA_PS;
        out->beta_bpus[i] = fast ? NV_BETA : IB_BETA;
    }
    return LT_OK;
}

int lt__plan_cost_plain(void) {
    const lt_plan_cost *c = lt__plan_cost_cur;
    return !c || (c->objective == LT_OBJECTIVE_BYTES && c->moves == LT_MOVES_COLLECTIVES);
}

const lt_plan_cost *lt__plan_cost_swap(const lt_plan_cost *c) {
    const lt_plan_cost *was = lt__plan_cost_cur;
    lt__plan_cost_cur = c;
    return was;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static uint64_t sat_mul(uint64_t a, uint64_t b) {
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

uint64_t lt__time_ps(const lt_topology *t, int i, lt_coll k, int n, uint64_t bytes, int up) {
    uint64_t beta = t->beta_bpus[i] ? t->beta_bpus[i] : 1;
    /* bytes / (beta bytes per us) in ps: bytes * 1e6 / beta */
    uint64_t num = sat_mul(bytes, 1000000ull);
    uint64_t x = num / beta + (up && num % beta ? 1 : 0);
    uint64_t rounds = lt__coll_rounds_algo(k, n, (unsigned)k < LT_COLL_COUNT ? t->algo[i][k] : 0);
    return sat_add(sat_mul(rounds, t->alpha_ps[i]), x);
}

uint64_t lt__time_ps_group(const lt_topology *t, const lt_mesh *mesh, int i, int span, lt_coll k,
                           uint64_t bytes, int up) {
    if (span <= 1) return lt__time_ps(t, i, k, mesh->shape[i], bytes, up);
    lt_topology g;   /* the group's link as mesh dim 0 of a topology of its own */
    memset(&g, 0, sizeof g);
    g.beta_bpus[0] = UINT64_MAX;
    int same = 1;
    for (int j = i; j < i + span; j++) {
        if (mesh->shape[j] == 1) continue;   /* no link along it */
        if (t->alpha_ps[j] > g.alpha_ps[0]) g.alpha_ps[0] = t->alpha_ps[j];
        if (t->beta_bpus[j] < g.beta_bpus[0]) g.beta_bpus[0] = t->beta_bpus[j];
        same &= (unsigned)k < LT_COLL_COUNT && t->algo[j][k] == t->algo[i][k];
    }
    if (same && (unsigned)k < LT_COLL_COUNT) g.algo[0][k] = t->algo[i][k];
    return lt__time_ps(&g, 0, k, lt__group_size(mesh, i, span), bytes, up);
}

int lt__moves_allow(lt_moveset m, lt__mv_kind k) {
    if (m != LT_MOVES_DTENSOR) return 1;
    return k == LT__MV_LOCAL || k == LT__MV_PARTITION || k == LT__MV_ALL_GATHER ||
           k == LT__MV_ALL_TO_ALL || k == LT__MV_ALL_REDUCE || k == LT__MV_REDUCE_SCATTER;
}

uint64_t lt_plan_step_time_ps(const lt_plan *p, int s, const lt_topology *t) {
    if (!p || !t || s < 0 || s >= p->nsteps || !p->steps[s].comm) return 0;
    const lt_plan_step *st = &p->steps[s];
    return lt__time_ps_group(t, &p->mesh, st->mesh_dim, st->mesh_span, st->coll,
                             st->bytes_per_rank, 1);
}

uint64_t lt_plan_time_ps(const lt_plan *p, const lt_topology *t) {
    uint64_t sum = 0;
    for (int s = 0; p && s < p->nsteps; s++) sum = sat_add(sum, lt_plan_step_time_ps(p, s, t));
    return sum;
}

size_t lt_plan_max_rank_bytes(const lt_plan *p) {
    size_t sum = 0;
    for (int s = 0; p && s < p->nsteps; s++) sum += p->steps[s].bytes_per_rank;
    return sum;
}
