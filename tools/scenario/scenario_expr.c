/* tools/scenario/scenario_expr.c — the small expressions of per-rank steps.
 *
 * A per-rank value, shape, scalar or condition may be written as an
 * expression over who the rank is: `rank * 100 + i`, `[dp + 1, 4]`,
 * `tp == 0`. Grammar (a recursive-descent parser, lowest precedence first):
 *
 *   or      := and ('||' and)*
 *   and     := cmp ('&&' cmp)*
 *   cmp     := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum)?
 *   sum     := product (('+' | '-') product)*
 *   product := unary (('*' | '/' | '%') unary)*
 *   unary   := ('-' | '!') unary | atom
 *   atom    := NUMBER | NAME | ('min' | 'max') '(' or (',' or)* ')' | '(' or ')'
 *
 * Names: `rank`, `world` (ranks in the mesh), `i` (the element's flat
 * row-major index, only where values are computed), each mesh dim's name
 * (`dp`: the rank's coordinate along it) and `d0`, `d1`, ... (the same by
 * position), and `dp_size` / `d0_size` (the size of that mesh dim: the
 * group size of a collective along it). Numbers are doubles; comparisons,
 * `&&`, `||` and `!` give 1 or 0; `%` takes the sign of the divisor (Python's
 * rule, so `(rank - 1) % 4` stays in 0..3); `/` is true division. Division
 * or remainder by zero is an error naming the expression's position and the
 * rank. Parse errors name file:line:col of the offending character.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/status_impl.h"
#include "tools/scenario/scenario_impl.h"

enum { E_NUM, E_RANK, E_WORLD, E_I, E_COORD, E_SIZE, E_NEG, E_NOT, E_BIN, E_MIN, E_MAX };

struct sc_expr {
    int kind;
    int op;                   /* E_BIN: '+', '-', '*', '/', '%', '<', '>', 'l' (<=), 'g' (>=), '=', '!', '&', '|' */
    double num;               /* E_NUM */
    int dim;                  /* E_COORD, E_SIZE */
    int line, col;
    const char *file;
    int nkids;
    struct sc_expr **kids;
};

typedef struct {
    sc_arena *a;
    const sc_node *at;
    const char *s, *p;
    const lt_mesh *mesh;
    int allow_i;
    int depth;
    int base_col;             /* column of s[0] */
    int verbatim;             /* 1: s[k] is at column base_col + k; 0: positions are the
                               * expression's start (a block or escaped scalar) */
} eparser;

/* The column of `where` in the source (the expression's start when unknown). */
static int col_of(const eparser *ps, const char *where) {
    return ps->verbatim ? ps->base_col + (int)(where - ps->s) : ps->base_col;
}

static lt_status perr(eparser *ps, const char *where, const char *fmt, const char *arg) {
    char msg[700], text[400];
    snprintf(msg, sizeof msg, fmt, arg);
    /* the expression on one line: line breaks (a block scalar) and tabs as spaces */
    size_t n = 0;
    for (const char *c = ps->s; *c && n + 1 < sizeof text; c++) text[n++] = *c == '\n' || *c == '\r' || *c == '\t' ? ' ' : *c;
    while (n > 0 && text[n - 1] == ' ') n--;
    text[n] = '\0';
    lt__err(LT_INVALID, "%s:%d:%d: expression '%s': %s", ps->at->file, ps->at->line, col_of(ps, where), text, msg);
    lt__err_mark_pos();
    return LT_INVALID;
}

static void skip(eparser *ps) {
    while (*ps->p == ' ' || *ps->p == '\t') ps->p++;
}

static sc_expr *node(eparser *ps, int kind, const char *where) {
    sc_expr *e = lt__sc_alloc(ps->a, sizeof *e);
    if (!e) return NULL;
    e->kind = kind;
    e->file = ps->at->file;
    e->line = ps->at->line;
    e->col = col_of(ps, where);
    return e;
}

static lt_status bin(eparser *ps, int op, const char *where, sc_expr *l, sc_expr *r, sc_expr **out) {
    sc_expr *e = node(ps, E_BIN, where);
    sc_expr **k = lt__sc_alloc(ps->a, 2 * sizeof *k);
    if (!e || !k) return LT_NOMEM;
    e->op = op;
    k[0] = l, k[1] = r;
    e->kids = k;
    e->nkids = 2;
    *out = e;
    return LT_OK;
}

static lt_status p_or(eparser *ps, sc_expr **out);

static lt_status p_atom(eparser *ps, sc_expr **out) {
    skip(ps);
    const char *at = ps->p;
    if (*at == '(') {
        ps->p++;
        LT_TRY(p_or(ps, out));
        skip(ps);
        if (*ps->p != ')') return perr(ps, ps->p, "expected ')'%s", *ps->p ? "" : " before the end");
        ps->p++;
        return LT_OK;
    }
    if ((*at >= '0' && *at <= '9') || *at == '.') {
        char *end;
        double v = strtod(at, &end);
        if (end == at || !isfinite(v)) return perr(ps, at, "%s", "bad number");
        if (*end == '_' || (*end >= 'a' && *end <= 'z') || (*end >= 'A' && *end <= 'Z'))
            return perr(ps, end, "%s", "unexpected letter after a number");
        sc_expr *e = node(ps, E_NUM, at);
        if (!e) return LT_NOMEM;
        e->num = v;
        ps->p = end;
        *out = e;
        return LT_OK;
    }
    if (*at == '_' || (*at >= 'a' && *at <= 'z') || (*at >= 'A' && *at <= 'Z')) {
        const char *q = at;
        while (*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9')) q++;
        char name[LT_MESH_NAME_MAX + 16];
        size_t n = (size_t)(q - at);
        if (n >= sizeof name) return perr(ps, at, "%s", "name too long");
        memcpy(name, at, n);
        name[n] = '\0';
        ps->p = q;
        if (!strcmp(name, "min") || !strcmp(name, "max")) {
            skip(ps);
            if (*ps->p != '(') return perr(ps, ps->p, "expected '(' after %s", name);
            ps->p++;
            sc_expr *e = node(ps, name[1] == 'i' ? E_MIN : E_MAX, at);
            sc_expr **k = lt__sc_alloc(ps->a, 8 * sizeof *k);
            if (!e || !k) return LT_NOMEM;
            e->kids = k;
            for (;;) {
                if (e->nkids == 8) return perr(ps, ps->p, "%s takes at most 8 arguments", name);
                LT_TRY(p_or(ps, &k[e->nkids++]));
                skip(ps);
                if (*ps->p == ',') { ps->p++; continue; }
                if (*ps->p == ')') { ps->p++; break; }
                return perr(ps, ps->p, "expected ',' or ')' in %s(...)", name);
            }
            *out = e;
            return LT_OK;
        }
        sc_expr *e = node(ps, E_NUM, at);
        if (!e) return LT_NOMEM;
        int d = -1, is_size = 0;
        size_t len = strlen(name);
        if (len > 5 && !strcmp(name + len - 5, "_size")) {
            is_size = 1;
            name[len - 5] = '\0';
        }
        if (!is_size && !strcmp(name, "rank")) e->kind = E_RANK;
        else if (!is_size && !strcmp(name, "world")) e->kind = E_WORLD;
        else if (!is_size && !strcmp(name, "i")) {
            if (!ps->allow_i) return perr(ps, at, "%s", "'i' (the element index) is only defined where values are computed");
            e->kind = E_I;
        } else {
            d = lt_mesh_dim_by_name(ps->mesh, name);
            if (d < 0 && name[0] == 'd' && name[1] >= '0' && name[1] <= '9' && !name[2] && name[1] - '0' < ps->mesh->ndim)
                d = name[1] - '0';
            if (d < 0) {
                char known[400] = "rank, world";
                size_t u = strlen(known);
                if (ps->allow_i) u += (size_t)snprintf(known + u, sizeof known - u, ", i");
                for (int k = 0; k < ps->mesh->ndim && u < sizeof known; k++) {
                    const char *nm = ps->mesh->names[k];
                    if (nm[0]) u += (size_t)snprintf(known + u, sizeof known - u, ", %s, %s_size", nm, nm);
                    if (u < sizeof known) u += (size_t)snprintf(known + u, sizeof known - u, ", d%d, d%d_size", k, k);
                }
                char msg[600];
                snprintf(msg, sizeof msg, "unknown name '%s%s' (known: %s, min, max)", name, is_size ? "_size" : "", known);
                return perr(ps, at, "%s", msg);
            }
            e->kind = is_size ? E_SIZE : E_COORD;
            e->dim = d;
        }
        *out = e;
        return LT_OK;
    }
    if (!*at) return perr(ps, at, "%s", "expected a number, a name or '(' before the end");
    char c[2] = {*at, 0};
    return perr(ps, at, "unexpected '%s'", c);
}

static lt_status p_unary(eparser *ps, sc_expr **out) {
    skip(ps);
    const char *at = ps->p;
    if ((*at == '-' || *at == '!') && at[1] != '=') {
        if (++ps->depth > 64) return perr(ps, at, "%s", "nested too deeply");
        ps->p++;
        sc_expr *k = NULL;
        LT_TRY(p_unary(ps, &k));
        ps->depth--;
        sc_expr *e = node(ps, *at == '-' ? E_NEG : E_NOT, at);
        sc_expr **kk = lt__sc_alloc(ps->a, sizeof *kk);
        if (!e || !kk) return LT_NOMEM;
        kk[0] = k;
        e->kids = kk;
        e->nkids = 1;
        *out = e;
        return LT_OK;
    }
    if (*at == '+') {
        ps->p++;
        return p_unary(ps, out);
    }
    return p_atom(ps, out);
}

static lt_status p_product(eparser *ps, sc_expr **out) {
    sc_expr *l;
    LT_TRY(p_unary(ps, &l));
    for (;;) {
        skip(ps);
        const char *at = ps->p;
        if (*at != '*' && *at != '/' && *at != '%') break;
        ps->p++;
        sc_expr *r;
        LT_TRY(p_unary(ps, &r));
        LT_TRY(bin(ps, *at, at, l, r, &l));
    }
    *out = l;
    return LT_OK;
}

static lt_status p_sum(eparser *ps, sc_expr **out) {
    sc_expr *l;
    LT_TRY(p_product(ps, &l));
    for (;;) {
        skip(ps);
        const char *at = ps->p;
        if (*at != '+' && *at != '-') break;
        ps->p++;
        sc_expr *r;
        LT_TRY(p_product(ps, &r));
        LT_TRY(bin(ps, *at, at, l, r, &l));
    }
    *out = l;
    return LT_OK;
}

static lt_status p_cmp(eparser *ps, sc_expr **out) {
    sc_expr *l;
    LT_TRY(p_sum(ps, &l));
    skip(ps);
    const char *at = ps->p;
    int op = 0, len = 1;
    if (at[0] == '=' && at[1] == '=') op = '=', len = 2;
    else if (at[0] == '!' && at[1] == '=') op = '!', len = 2;
    else if (at[0] == '<' && at[1] == '=') op = 'l', len = 2;
    else if (at[0] == '>' && at[1] == '=') op = 'g', len = 2;
    else if (at[0] == '<' || at[0] == '>') op = at[0];
    else if (at[0] == '=') return perr(ps, at, "%s", "'=' is not an operator (did you mean '=='?)");
    if (!op) {
        *out = l;
        return LT_OK;
    }
    ps->p += len;
    sc_expr *r;
    LT_TRY(p_sum(ps, &r));
    return bin(ps, op, at, l, r, out);
}

static lt_status p_and(eparser *ps, sc_expr **out) {
    sc_expr *l;
    LT_TRY(p_cmp(ps, &l));
    for (;;) {
        skip(ps);
        const char *at = ps->p;
        if (!(at[0] == '&' && at[1] == '&')) break;
        ps->p += 2;
        sc_expr *r;
        LT_TRY(p_cmp(ps, &r));
        LT_TRY(bin(ps, '&', at, l, r, &l));
    }
    *out = l;
    return LT_OK;
}

static lt_status p_or(eparser *ps, sc_expr **out) {
    if (++ps->depth > 64) return perr(ps, ps->p, "%s", "nested too deeply");
    sc_expr *l;
    LT_TRY(p_and(ps, &l));
    for (;;) {
        skip(ps);
        const char *at = ps->p;
        if (!(at[0] == '|' && at[1] == '|')) break;
        ps->p += 2;
        sc_expr *r;
        LT_TRY(p_and(ps, &r));
        LT_TRY(bin(ps, '|', at, l, r, &l));
    }
    ps->depth--;
    *out = l;
    return LT_OK;
}

lt_status lt__sc_expr_parse(sc_arena *a, const sc_node *at, const lt_mesh *mesh, int allow_i, const char *what,
                            sc_expr **out) {
    if (at->kind != SC_SCALAR)
        return lt__sc_err(at, LT_INVALID, "%s: expected a number or an expression, got %s", what, lt__sc_kind_name(at));
    eparser ps;
    memset(&ps, 0, sizeof ps);
    ps.a = a;
    ps.at = at;
    ps.s = ps.p = at->str;
    ps.mesh = mesh;
    ps.allow_i = allow_i;
    ps.verbatim = at->verbatim;
    ps.base_col = at->col + (at->plain || !at->verbatim ? 0 : 1);
    LT_TRY(p_or(&ps, out));
    skip(&ps);
    if (*ps.p) {
        char c[2] = {*ps.p, 0};
        return perr(&ps, ps.p, "unexpected '%s' after the expression", c);
    }
    return LT_OK;
}

void lt__sc_env_rank(const lt_mesh *mesh, int rank, sc_env *env) {
    memset(env, 0, sizeof *env);
    env->mesh = mesh;
    env->rank = rank;
    lt_mesh_coord(mesh, rank, env->coord);
}

static lt_status eval(const sc_expr *e, const sc_env *env, double *out) {
    double a = 0, b = 0;
    switch (e->kind) {
    case E_NUM: *out = e->num; return LT_OK;
    case E_RANK: *out = env->rank; return LT_OK;
    case E_WORLD: *out = env->mesh->world; return LT_OK;
    case E_I: *out = (double)env->i; return LT_OK;
    case E_COORD: *out = env->coord[e->dim]; return LT_OK;
    case E_SIZE: *out = env->mesh->shape[e->dim]; return LT_OK;
    case E_NEG: LT_TRY(eval(e->kids[0], env, &a)); *out = -a; return LT_OK;
    case E_NOT: LT_TRY(eval(e->kids[0], env, &a)); *out = a == 0; return LT_OK;
    case E_MIN:
    case E_MAX:
        LT_TRY(eval(e->kids[0], env, out));
        for (int k = 1; k < e->nkids; k++) {
            LT_TRY(eval(e->kids[k], env, &a));
            if (e->kind == E_MIN ? a < *out : a > *out) *out = a;
        }
        return LT_OK;
    default: break;
    }
    LT_TRY(eval(e->kids[0], env, &a));
    LT_TRY(eval(e->kids[1], env, &b));
    switch (e->op) {
    case '+': *out = a + b; break;
    case '-': *out = a - b; break;
    case '*': *out = a * b; break;
    case '/':
    case '%':
        if (b == 0) {
            lt__err(LT_INVALID, "%s:%d:%d: %s by zero on rank %d", e->file, e->line, e->col,
                    e->op == '/' ? "division" : "remainder", env->rank);
            lt__err_mark_pos();
            return LT_INVALID;
        }
        if (e->op == '/') *out = a / b;
        else {
            double r = fmod(a, b);
            if (r != 0 && ((r < 0) != (b < 0))) r += b;
            *out = r;
        }
        break;
    case '<': *out = a < b; break;
    case '>': *out = a > b; break;
    case 'l': *out = a <= b; break;
    case 'g': *out = a >= b; break;
    case '=': *out = a == b; break;
    case '!': *out = a != b; break;
    case '&': *out = a != 0 && b != 0; break;
    default: *out = a != 0 || b != 0; break;
    }
    return LT_OK;
}

lt_status lt__sc_expr_eval(const sc_expr *e, const sc_env *env, double *out) { return eval(e, env, out); }

lt_status lt__sc_expr_int(const sc_expr *e, const sc_env *env, const char *what, int64_t lo, int64_t hi,
                          int64_t *out) {
    double v;
    LT_TRY(eval(e, env, &v));
    if (v != floor(v) || v < (double)lo || v > (double)hi) {
        char b[48];
        lt__err(LT_INVALID, "%s:%d:%d: %s is %s on rank %d; expected an integer in %lld..%lld", e->file,
                e->line, e->col, what, lt__sc_fmt_num(v, b, sizeof b), env->rank, (long long)lo, (long long)hi);
        lt__err_mark_pos();
        return LT_INVALID;
    }
    *out = (int64_t)v;
    return LT_OK;
}
