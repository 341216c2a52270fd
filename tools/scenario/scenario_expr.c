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
 *            | ('numel' | 'rows') '(' TENSOR ')' | 'shape' '(' TENSOR ',' or ')'
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
 *
 * Parsed with a step's context (lt__sc_expr_parse_pc), an expression also
 * knows the variables of the loops around the step (`as:` of `repeat`,
 * folded to the iteration's number: each iteration is parsed on its own)
 * and three functions of a rank's own shard: numel(x), shape(x, d) (d may
 * be negative, counted from the end) and rows(x) = shape(x, 0), where x is
 * a DTensor (the rank's local shard) or a LocalTensor. They read values, so
 * such an expression is evaluated when its step runs (lt__sc_expr_eval_rc),
 * on what the rank holds then; rows of a 0-d value is an error, as len() of
 * a 0-d tensor is in PyTorch. x must be defined before the step, and a dim
 * out of range for x's known dims is refused at load.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/status_impl.h"
#include "localtensor/layout.h"
#include "localtensor/suggest_impl.h"
#include "tools/scenario/scenario_impl.h"

enum {
    E_NUM,
    E_RANK,
    E_WORLD,
    E_I,
    E_COORD,
    E_SIZE,
    E_NEG,
    E_NOT,
    E_BIN,
    E_MIN,
    E_MAX,
    E_NUMEL,
    E_SHAPE,
    E_ROWS
};

static const char *const fn_names[] = {"min", "max", "numel", "shape", "rows"};

struct sc_expr {
    int kind;
    int op; /* E_BIN: '+', '-', '*', '/', '%', '<', '>', 'l' (<=), 'g' (>=), '=', '!', '&', '|' */
    double num;               /* E_NUM */
    int dim;                  /* E_COORD, E_SIZE */
    const char *tensor;       /* E_NUMEL, E_SHAPE (kids[0]: the dim), E_ROWS: the name (arena) */
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
    sc_parse_ctx *pc;         /* the step's context, or NULL: no loop variables, no functions */
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
    char msg[1200], text[400];
    snprintf(msg, sizeof msg, fmt, arg);
    /* the expression on one line: line breaks (a block scalar) and tabs as spaces */
    size_t n = 0;
    for (const char *c = ps->s; *c && n + 1 < sizeof text; c++)
        text[n++] = *c == '\n' || *c == '\r' || *c == '\t' ? ' ' : *c;
    while (n > 0 && text[n - 1] == ' ') n--;
    text[n] = '\0';
    return lt__err_at(LT_INVALID, ps->at->file, ps->at->line, col_of(ps, where),
                      "expression '%s': %s", text, msg);
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

static lt_status bin(eparser *ps, int op, const char *where, sc_expr *l, sc_expr *r,
                     sc_expr **out) {
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
static lt_status eval(const sc_expr *e, const sc_env *env, sc_run_ctx *rc, double *out);

/* The innermost loop variable called name, or NULL. */
static const sc_loop_var *loop_var(const eparser *ps, const char *name) {
    if (!ps->pc) return NULL;
    const sc_parse_scope *sc = lt__sc_scope(ps->pc);
    for (int k = sc->nvars - 1; k >= 0; k--)
        if (!strcmp(sc->vars[k].name, name)) return &sc->vars[k];
    return NULL;
}

/* 1 when e's value may differ by rank or read values (not foldable at load). */
static int varies(const sc_expr *e) {
    if (e->kind == E_RANK || e->kind == E_COORD || e->kind == E_I || e->kind >= E_NUMEL) return 1;
    for (int k = 0; k < e->nkids; k++)
        if (varies(e->kids[k])) return 1;
    return 0;
}

/* The tensor argument of fn at ps->p: a DTensor or LocalTensor defined so
 * far (into e->tensor); *ndim its dims (-1: unknown). */
static lt_status fn_tensor(eparser *ps, const char *fn, sc_expr *e, int *ndim) {
    skip(ps);
    const char *ta = ps->p, *q = ta;
    while (*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
           (*q >= '0' && *q <= '9'))
        q++;
    if (q == ta || (*ta >= '0' && *ta <= '9'))
        return perr(ps, ta, "%s: expected the name of a DTensor or LocalTensor", fn);
    char name[72];
    if (q - ta >= (long)sizeof name) return perr(ps, ta, "%s", "name too long");
    memcpy(name, ta, (size_t)(q - ta));
    name[q - ta] = '\0';
    ps->p = q;
    if (!ps->pc)
        return perr(ps, ta, "%s(...) reads a rank's shard, which this expression cannot", fn);
    char msg[1200];
    int kind = lt__sc_sym_find(ps->pc, name, ndim);
    if (!kind) {
        char list[400], hint[300];
        lt__sc_sym_list(ps->pc, list, sizeof list);
        lt__sc_dropped_hint(ps->pc, name, hint, sizeof hint);
        snprintf(msg, sizeof msg, "%s: tensor '%s' is not defined%s%s%s%s", fn, name,
                 list[0] ? " (defined so far: " : " (nothing is defined yet)", list,
                 list[0] ? ")" : "", hint);
        return perr(ps, ta, "%s", msg);
    }
    if (kind == SC_FULL) {
        snprintf(msg, sizeof msg,
                 "%s: '%s' is a full tensor; %s reads a rank's shard of a DTensor or a per-rank "
                 "LocalTensor",
                 fn, name, fn);
        return perr(ps, ta, "%s", msg);
    }
    e->tensor = lt__sc_strdup(ps->a, name);
    return e->tensor ? LT_OK : LT_NOMEM;
}

/* shape(x, d)'s d when it is the same on every rank: refused at load when
 * out of range for x's dims (ndim, -1: unknown, then only past the most
 * any tensor has). */
static lt_status fn_dim_check(eparser *ps, const char *where, const sc_expr *d, const char *x,
                              int ndim) {
    if (varies(d)) return LT_OK;
    sc_env env;
    double v;
    lt__sc_env_rank(ps->mesh, 0, &env);
    if (eval(d, &env, NULL, &v)) { /* division by zero: told when it runs */
        lt__err_clear();
        return LT_OK;
    }
    char b[48], msg[300];
    lt__sc_fmt_num(v, b, sizeof b);
    if (v != floor(v)) return perr(ps, where, "shape: dim %s is not a whole number", b);
    if (ndim == 0) snprintf(msg, sizeof msg, "shape: '%s' is 0-d: it has no dim %s", x, b);
    else if (ndim > 0 && (v < -ndim || v >= ndim))
        snprintf(msg, sizeof msg, "shape: dim %s is out of range for '%s' (%d dims: %d..%d)", b, x,
                 ndim, -ndim, ndim - 1);
    else if (ndim < 0 && (v <= -LT_MAX_DIMS - 1 || v >= LT_MAX_DIMS))
        snprintf(msg, sizeof msg, "shape: dim %s is out of range (a tensor has at most %d dims)", b,
                 LT_MAX_DIMS);
    else return LT_OK;
    return perr(ps, where, "%s", msg);
}

/* numel(x), rows(x), shape(x, d): fn was read at `at`. */
static lt_status p_fn(eparser *ps, const char *at, const char *fn, sc_expr **out) {
    skip(ps);
    if (*ps->p != '(') return perr(ps, ps->p, "expected '(' after %s", fn);
    ps->p++;
    sc_expr *e = node(ps, fn[0] == 'n' ? E_NUMEL : fn[0] == 's' ? E_SHAPE : E_ROWS, at);
    if (!e) return LT_NOMEM;
    int ndim = -1;
    LT_TRY(fn_tensor(ps, fn, e, &ndim));
    skip(ps);
    if (e->kind == E_SHAPE) {
        if (*ps->p != ',') return perr(ps, ps->p, "%s", "expected ',' and a dim in shape(x, d)");
        ps->p++;
        skip(ps);
        const char *where = ps->p;
        e->kids = lt__sc_alloc(ps->a, sizeof *e->kids);
        if (!e->kids) return LT_NOMEM;
        e->nkids = 1;
        LT_TRY(p_or(ps, &e->kids[0]));
        LT_TRY(fn_dim_check(ps, where, e->kids[0], e->tensor, ndim));
        skip(ps);
    } else if (e->kind == E_ROWS && ndim == 0) {
        return perr(ps, at, "rows: '%s' is 0-d: it has no rows (as len() of a 0-d tensor)",
                    e->tensor);
    }
    if (*ps->p != ')') return perr(ps, ps->p, "expected ')' to close %s(...)", fn);
    ps->p++;
    *out = e;
    return LT_OK;
}

static int is_name_start(char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* "(" expr ")" at ps->p. */
static lt_status p_paren(eparser *ps, sc_expr **out) {
    ps->p++;
    LT_TRY(p_or(ps, out));
    skip(ps);
    if (*ps->p != ')') return perr(ps, ps->p, "expected ')'%s", *ps->p ? "" : " before the end");
    ps->p++;
    return LT_OK;
}

/* A number at `at`, not glued to a name. */
static lt_status p_number(eparser *ps, const char *at, sc_expr **out) {
    char *end;
    double v = strtod(at, &end);
    if (end == at || !isfinite(v)) return perr(ps, at, "%s", "bad number");
    if (is_name_start(*end)) return perr(ps, end, "%s", "unexpected letter after a number");
    sc_expr *e = node(ps, E_NUM, at);
    if (!e) return LT_NOMEM;
    e->num = v;
    ps->p = end;
    *out = e;
    return LT_OK;
}

/* min(...) or max(...) (name) at `at`, ps->p after the name: up to 8
 * arguments. */
static lt_status p_minmax(eparser *ps, const char *at, const char *name, sc_expr **out) {
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
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == ')') break;
        return perr(ps, ps->p, "expected ',' or ')' in %s(...)", name);
    }
    ps->p++;
    *out = e;
    return LT_OK;
}

/* The error for a name nothing defines, listing the names that are. */
static lt_status unknown_name(eparser *ps, const char *at, const char *name, int is_size) {
    char known[400] = "rank, world";
    size_t u = strlen(known);
    if (ps->allow_i) u += (size_t)snprintf(known + u, sizeof known - u, ", i");
    for (int k = 0; ps->pc && k < lt__sc_scope(ps->pc)->nvars && u < sizeof known; k++)
        u += (size_t)snprintf(known + u, sizeof known - u, ", %s",
                              lt__sc_scope(ps->pc)->vars[k].name);
    for (int k = 0; k < ps->mesh->ndim && u < sizeof known; k++) {
        const char *nm = ps->mesh->names[k];
        if (nm[0]) u += (size_t)snprintf(known + u, sizeof known - u, ", %s, %s_size", nm, nm);
        if (u < sizeof known)
            u += (size_t)snprintf(known + u, sizeof known - u, ", d%d, d%d_size", k, k);
    }
    char msg[600];
    snprintf(msg, sizeof msg, "unknown name '%s%s' (known: %s, min, max)", name,
             is_size ? "_size" : "", known);
    return perr(ps, at, "%s", msg);
}

/* A variable (name, at `at`) into e: a loop's variable, rank, world, i,
 * a mesh dim's coordinate (its name or dK) or size (..._size). */
static lt_status p_var(eparser *ps, const char *at, char *name, sc_expr *e) {
    const sc_loop_var *lv = loop_var(ps, name);
    if (lv) {
        if (ps->allow_i && !strcmp(name, "i"))
            return perr(ps, at, "%s",
                        "'i' is both the element index and the variable of a loop around this "
                        "step; name the loop variable otherwise (as: k)");
        e->num = (double)lv->value;
        return LT_OK;
    }
    int is_size = 0;
    size_t len = strlen(name);
    if (len > 5 && !strcmp(name + len - 5, "_size")) {
        is_size = 1;
        name[len - 5] = '\0';
    }
    if (!is_size && !strcmp(name, "rank")) e->kind = E_RANK;
    else if (!is_size && !strcmp(name, "world")) e->kind = E_WORLD;
    else if (!is_size && !strcmp(name, "i") && !ps->allow_i)
        return perr(ps, at, "%s",
                    "'i' (the element index) is only defined where values are computed");
    else if (!is_size && !strcmp(name, "i")) e->kind = E_I;
    if (e->kind != E_NUM) return LT_OK;
    int d = lt_mesh_dim_by_name(ps->mesh, name);
    if (d < 0 && name[0] == 'd' && name[1] >= '0' && name[1] <= '9' && !name[2] &&
        name[1] - '0' < ps->mesh->ndim)
        d = name[1] - '0';
    if (d < 0) return unknown_name(ps, at, name, is_size);
    e->kind = is_size ? E_SIZE : E_COORD;
    e->dim = d;
    return LT_OK;
}

/* A name at `at`: min/max(...), numel/shape/rows(...), or a variable. */
static lt_status p_name(eparser *ps, const char *at, sc_expr **out) {
    const char *q = at;
    while (is_name_start(*q) || (*q >= '0' && *q <= '9')) q++;
    char name[80];
    size_t n = (size_t)(q - at);
    if (n >= sizeof name) return perr(ps, at, "%s", "name too long");
    memcpy(name, at, n);
    name[n] = '\0';
    ps->p = q;
    if (!strcmp(name, "min") || !strcmp(name, "max")) return p_minmax(ps, at, name, out);
    if (!strcmp(name, "numel") || !strcmp(name, "shape") || !strcmp(name, "rows"))
        return p_fn(ps, at, name, out);
    const char *after = q;
    while (*after == ' ' || *after == '\t') after++;
    if (*after == '(') {
        char hint[96], msg[300];
        lt__suggest_hint(name, fn_names, 5, hint, sizeof hint);
        snprintf(msg, sizeof msg, "unknown function '%s' (known: min, max, numel, shape, rows)%s",
                 name, hint);
        return perr(ps, at, "%s", msg);
    }
    sc_expr *e = node(ps, E_NUM, at);
    if (!e) return LT_NOMEM;
    LT_TRY(p_var(ps, at, name, e));
    *out = e;
    return LT_OK;
}

static lt_status p_atom(eparser *ps, sc_expr **out) {
    skip(ps);
    const char *at = ps->p;
    if (*at == '(') return p_paren(ps, out);
    if ((*at >= '0' && *at <= '9') || *at == '.') return p_number(ps, at, out);
    if (is_name_start(*at)) return p_name(ps, at, out);
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

static lt_status parse(sc_arena *a, const sc_node *at, const lt_mesh *mesh, sc_parse_ctx *pc,
                       int allow_i, const char *what, sc_expr **out) {
    if (at->kind != SC_SCALAR)
        return lt__sc_err(at, LT_INVALID, "%s: expected a number or an expression, got %s", what,
                          lt__sc_kind_name(at));
    eparser ps;
    memset(&ps, 0, sizeof ps);
    ps.a = a;
    ps.at = at;
    ps.s = ps.p = at->str;
    ps.mesh = mesh;
    ps.pc = pc;
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

lt_status lt__sc_expr_parse(sc_arena *a, const sc_node *at, const lt_mesh *mesh, int allow_i,
                            const char *what, sc_expr **out) {
    return parse(a, at, mesh, NULL, allow_i, what, out);
}

lt_status lt__sc_expr_parse_pc(sc_parse_ctx *pc, const sc_node *at, int allow_i, const char *what,
                               sc_expr **out) {
    return parse(pc->arena, at, pc->mesh, pc, allow_i, what, out);
}

int lt__sc_expr_reads_values(const sc_expr *e) {
    if (e->kind >= E_NUMEL) return 1;
    for (int k = 0; k < e->nkids; k++)
        if (lt__sc_expr_reads_values(e->kids[k])) return 1;
    return 0;
}

void lt__sc_env_rank(const lt_mesh *mesh, int rank, sc_env *env) {
    memset(env, 0, sizeof *env);
    env->mesh = mesh;
    env->rank = rank;
    lt_mesh_coord(mesh, rank, env->coord);
}

static const char *fn_name(const sc_expr *e) {
    return e->kind == E_NUMEL ? "numel" : e->kind == E_SHAPE ? "shape" : "rows";
}

static lt_status fn_err(const sc_expr *e, const sc_env *env, const char *fmt, const char *arg) {
    char msg[400];
    snprintf(msg, sizeof msg, fmt, arg);
    return lt__err_at(LT_INVALID, e->file, e->line, e->col, "%s(%s) on rank %d: %s", fn_name(e),
                      e->tensor, env->rank, msg);
}

/* The dims of rank env->rank's shard of e->tensor, as rc holds it now. A
 * DTensor's shard has the layout's shape even where this process computes
 * no values (numerics sample, --shards owned). */
static lt_status shard_dims(const sc_expr *e, const sc_env *env, sc_run_ctx *rc, int *ndim,
                            int64_t *shape) {
    if (!rc)
        return fn_err(e, env, "%s",
                      "a rank's shard is only known when the step runs (not in this expression)");
    if (env->reference) {   /* the single-device program: the whole value */
        const lt_tensor *w = lt__sc_diverge_ref(rc, e->tensor);
        if (!w) return fn_err(e, env, "'%s' has no single-device value", e->tensor);
        *ndim = w->ndim;
        memcpy(shape, w->shape, sizeof(int64_t) * (size_t)w->ndim);
        return LT_OK;
    }
    sc_value *v = lt__sc_value(rc, e->tensor);
    int r = env->rank;
    const lt_tensor *t = NULL;
    if (v && v->kind == SC_LOCAL && v->local) t = v->local->shards[r];
    if (v && v->kind == SC_DTENSOR && v->dt) t = v->dt->local->shards[r];
    if (t && !t->placeholder) {
        *ndim = t->ndim;
        memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
        return LT_OK;
    }
    if (v && v->kind == SC_DTENSOR && v->dt) {
        *ndim = v->dt->ndim;
        return lt_local_shape_and_offset(env->mesh, v->dt->ndim, v->dt->shape, v->dt->placements, r,
                                         shape, NULL);
    }
    if (!v) return fn_err(e, env, "'%s' holds no value yet (its step has not run)", e->tensor);
    return fn_err(
        e, env,
        "'%s' holds no value on this rank (a placeholder: the rank skipped the step that made it, "
        "or is not the root of a gather/reduce)",
        e->tensor);
}

static lt_status eval_fn(const sc_expr *e, const sc_env *env, sc_run_ctx *rc, double *out) {
    int nd = 0;
    int64_t shape[LT_MAX_DIMS];
    LT_TRY(shard_dims(e, env, rc, &nd, shape));
    if (e->kind == E_NUMEL) {
        double n = 1;
        for (int k = 0; k < nd; k++) n *= (double)shape[k];
        *out = n;
        return LT_OK;
    }
    double d = 0;
    char b[48], msg[200];
    if (e->kind == E_SHAPE) LT_TRY(eval(e->kids[0], env, rc, &d));
    if (e->kind == E_ROWS && nd == 0)
        return fn_err(e, env, "%s", "the shard is 0-d: it has no rows (as len() of a 0-d tensor)");
    if (d != floor(d) || d < -nd || d >= nd) {
        snprintf(msg, sizeof msg, "dim %s is out of range for the shard's %d dims (%d..%d)",
                 lt__sc_fmt_num(d, b, sizeof b), nd, -nd, nd - 1);
        return fn_err(e, env, "%s", msg);
    }
    *out = (double)shape[d < 0 ? (int)d + nd : (int)d];
    return LT_OK;
}

static lt_status eval(const sc_expr *e, const sc_env *env, sc_run_ctx *rc, double *out) {
    double a = 0, b = 0;
    switch (e->kind) {
    case E_NUM: *out = e->num; return LT_OK;
    case E_RANK: *out = lt_mesh_rank_id(env->mesh, env->rank); return LT_OK;   /* the id */
    case E_WORLD: *out = env->mesh->world; return LT_OK;
    case E_I: *out = (double)env->i; return LT_OK;
    case E_COORD: *out = env->coord[e->dim]; return LT_OK;
    case E_SIZE: *out = env->mesh->shape[e->dim]; return LT_OK;
    case E_NEG: LT_TRY(eval(e->kids[0], env, rc, &a)); *out = -a; return LT_OK;
    case E_NOT: LT_TRY(eval(e->kids[0], env, rc, &a)); *out = a == 0; return LT_OK;
    case E_NUMEL:
    case E_SHAPE:
    case E_ROWS: return eval_fn(e, env, rc, out);
    case E_MIN:
    case E_MAX:
        LT_TRY(eval(e->kids[0], env, rc, out));
        for (int k = 1; k < e->nkids; k++) {
            LT_TRY(eval(e->kids[k], env, rc, &a));
            if (e->kind == E_MIN ? a < *out : a > *out) *out = a;
        }
        return LT_OK;
    default: break;
    }
    LT_TRY(eval(e->kids[0], env, rc, &a));
    LT_TRY(eval(e->kids[1], env, rc, &b));
    switch (e->op) {
    case '+': *out = a + b; break;
    case '-': *out = a - b; break;
    case '*': *out = a * b; break;
    case '/':
    case '%':
        if (b == 0) {
            return lt__err_at(LT_INVALID, e->file, e->line, e->col, "%s by zero on rank %d",
                              e->op == '/' ? "division" : "remainder", env->rank);
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

lt_status lt__sc_expr_eval(const sc_expr *e, const sc_env *env, double *out) {
    return eval(e, env, NULL, out);
}

lt_status lt__sc_expr_eval_rc(const sc_expr *e, const sc_env *env, sc_run_ctx *rc, double *out) {
    return eval(e, env, rc, out);
}

lt_status lt__sc_expr_int(const sc_expr *e, const sc_env *env, const char *what, int64_t lo,
                          int64_t hi, int64_t *out) {
    return lt__sc_expr_int_rc(e, env, NULL, what, lo, hi, out);
}

lt_status lt__sc_expr_int_rc(const sc_expr *e, const sc_env *env, sc_run_ctx *rc, const char *what,
                             int64_t lo, int64_t hi, int64_t *out) {
    double v;
    LT_TRY(eval(e, env, rc, &v));
    if (v != floor(v) || v < (double)lo || v > (double)hi) {
        char b[48];
        return lt__err_at(LT_INVALID, e->file, e->line, e->col,
                          "%s is %s on rank %d; expected an integer in %lld..%lld", what,
                          lt__sc_fmt_num(v, b, sizeof b), env->rank, (long long)lo, (long long)hi);
    }
    *out = (int64_t)v;
    return LT_OK;
}
