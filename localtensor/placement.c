/* localtensor/placement.c — placement constructors, spellings and list checks.
 *
 * The parser reads NAME or NAME(ARG, ARG, ...) where an ARG is `key=value` or a
 * value: an integer, a word, a quoted word, or a [list of integers]. Every
 * name PyTorch prints for a placement (str() and repr()) is accepted, so a
 * placement copied from a log pastes as is; a name that is none of them gets
 * the closest one as a suggestion. */
#include "localtensor/placement.h"
#include "kernels/alloc.h"
#include "localtensor/spec_impl.h"
#include "localtensor/suggest_impl.h"
#include "kernels/status_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

lt_placement lt_replicate(void) {
    lt_placement p;
    memset(&p, 0, sizeof p);
    p.kind = LT_PL_REPLICATE;
    p.rule = lt_split_chunk();
    return p;
}

lt_placement lt_shard(int dim) {
    lt_placement p = lt_replicate();
    p.kind = LT_PL_SHARD;
    p.dim = dim;
    return p;
}

lt_placement lt_shard_rule(int dim, lt_split_rule rule) {
    lt_placement p = lt_shard(dim);
    p.rule = rule;
    return p;
}

lt_placement lt_strided(int dim, int split_factor) {
    lt_placement p = lt_replicate();
    p.kind = LT_PL_STRIDED;
    p.dim = dim;
    p.split_factor = split_factor;
    return p;
}

lt_placement lt_partial(lt_redop op) {
    lt_placement p = lt_replicate();
    p.kind = LT_PL_PARTIAL;
    p.op = op;
    return p;
}

lt_status lt_ragged(int ndims, const int64_t *units, int n, lt_placement *out) {
    int64_t sum = 0;
    if (ndims < 1)
        return lt__err(LT_INVALID, "RaggedShard: dims must be a non-empty prefix (0, ..., k-1), "
                                   "got %d dims", ndims);
    if (n < 1 || n > LT_SPLIT_MAX_EXPLICIT || !units)
        return lt__err(LT_INVALID, "RaggedShard: %d local_units; 1..%d are supported", n,
                       LT_SPLIT_MAX_EXPLICIT);
    for (int c = 0; c < n; c++) {
        if (units[c] < 0)
            return lt__err(LT_INVALID, "RaggedShard: local_units[%d] = %lld is negative", c,
                           (long long)units[c]);
        if (units[c] > ((int64_t)1 << 40))
            return lt__err(LT_INVALID, "RaggedShard: local_units[%d] = %lld is too large (at "
                           "most 2^40)", c, (long long)units[c]);
        sum += units[c];
    }
    if (sum <= 0) return lt__err(LT_INVALID, "RaggedShard: local_units must have a positive sum");
    lt_placement p = lt_replicate();
    p.kind = LT_PL_RAGGED;
    p.dim = ndims;
    LT_TRY(lt_split_explicit(units, n, &p.rule));
    *out = p;
    return LT_OK;
}

/* ---- parsing ------------------------------------------------------------ */

#define MAX_ARGS 4
#define TOK_MAX 64

typedef struct arg {
    char key[TOK_MAX];           /* "" when positional */
    char word[TOK_MAX];          /* the value as text (quotes stripped) */
    int is_list;
    int nlist;
    int64_t list[LT_SPLIT_MAX_EXPLICIT];
} arg;

static const char *skip_ws(const char *p) {
    while (*p && isspace((unsigned char)*p)) p++;
    return p;
}

/* Parses one ARG at *pp up to ',' or ')'. */
static lt_status parse_arg(const char *whole, const char **pp, arg *a) {
    const char *p = skip_ws(*pp);
    memset(a, 0, sizeof *a);
    /* key= ? */
    const char *q = p;
    while (*q && (isalnum((unsigned char)*q) || *q == '_')) q++;
    const char *r = skip_ws(q);
    if (q > p && *r == '=') {
        if (q - p >= TOK_MAX)
            return lt__err(LT_INVALID, "placement '%s': argument name too long", whole);
        memcpy(a->key, p, (size_t)(q - p));
        p = skip_ws(r + 1);
    }
    if (*p == '[' || *p == '(') {   /* a list, or a Python tuple (RaggedShard's) */
        char close = *p == '[' ? ']' : ')';
        a->is_list = 1;
        p = skip_ws(p + 1);
        if (*p == close) { p++; goto done; }
        for (;;) {
            char *end;
            p = skip_ws(p);
            if (!isdigit((unsigned char)*p) && *p != '-')
                return lt__err(LT_INVALID,
                               "placement '%s': expected an integer in the size list at '%s'",
                               whole, p);
            errno = 0;
            long long v = strtoll(p, &end, 10);
            if (end == p) return lt__err(LT_INVALID, "placement '%s': bad size list", whole);
            if (errno == ERANGE)
                return lt__err(LT_INVALID, "placement '%s': explicit size '%.*s' overflows 64 bits",
                               whole, (int)(end - p), p);
            if (a->nlist == LT_SPLIT_MAX_EXPLICIT)
                return lt__err(LT_INVALID, "placement '%s': more than %d entries in a list", whole,
                               LT_SPLIT_MAX_EXPLICIT);
            if (v < 0)
                return lt__err(LT_INVALID, "placement '%s': %s %lld is negative", whole,
                               close == ']' ? "explicit size" : "list value", v);
            a->list[a->nlist++] = v;
            p = skip_ws(end);
            if (*p == ',' && close == ')' && *skip_ws(p + 1) == ')') p = skip_ws(p + 1); /* (0,) */
            if (*p == ',') { p++; continue; }
            if (*p == close) { p++; break; }
            return lt__err(LT_INVALID, "placement '%s': expected ',' or '%c' in the list", whole,
                           close);
        }
    } else if (*p == '"' || *p == '\'') {
        char quote = *p++;
        const char *e = strchr(p, quote);
        if (!e) return lt__err(LT_INVALID, "placement '%s': unterminated quote", whole);
        if (e - p >= TOK_MAX)
            return lt__err(LT_INVALID, "placement '%s': argument too long", whole);
        memcpy(a->word, p, (size_t)(e - p));
        p = e + 1;
    } else {
        const char *s = p;
        if (*p == '-' || *p == '+') p++;
        while (*p && (isalnum((unsigned char)*p) || *p == '_')) p++;
        if (p == s)
            return lt__err(LT_INVALID, "placement '%s': expected an argument at '%s'", whole, s);
        if (p - s >= TOK_MAX)
            return lt__err(LT_INVALID, "placement '%s': argument too long", whole);
        memcpy(a->word, s, (size_t)(p - s));
    }
done:
    *pp = skip_ws(p);
    return LT_OK;
}

static lt_status parse_int_arg(const char *whole, const arg *a, const char *what, int *out) {
    char *end;
    if (a->is_list || !a->word[0])
        return lt__err(LT_INVALID, "placement '%s': %s must be an integer", whole, what);
    long v = strtol(a->word, &end, 10);
    if (*end)
        return lt__err(LT_INVALID, "placement '%s': %s '%s' is not an integer", whole, what,
                       a->word);
    if (v < -1000000 || v > 1000000)
        return lt__err(LT_INVALID, "placement '%s': %s %s is out of range (-1000000..1000000)",
                       whole, what, a->word);
    *out = (int)v;
    return LT_OK;
}

/* Every placement name the parser knows, with its kind: ours (as
 * LT_PLACEMENT_KIND_MAP spells them), then PyTorch's str() and repr() names
 * (Shard: S / Shard, _StridedShard: _S / _StridedShard, Replicate: R /
 * Replicate, Partial: P / Partial, and the old _Partial). In this order for
 * the did-you-mean hint, which prefers the first of equally close names. */
#define LT__PL_SPELLING_MAP(XX)                                              \
    XX(REPLICATE, "R") XX(REPLICATE, "Replicate")                            \
    XX(PARTIAL, "P") XX(PARTIAL, "Partial") XX(PARTIAL, "_Partial")          \
    XX(SHARD, "S") XX(SHARD, "Shard")                                        \
    XX(STRIDED, "SS") XX(STRIDED, "_S") XX(STRIDED, "_StridedShard")         \
    XX(STRIDED, "StridedShard") XX(RAGGED, "RS") XX(RAGGED, "RaggedShard")

static const char *const spell_names[] = {
#define LT__XX(k, s) s,
    LT__PL_SPELLING_MAP(LT__XX)
#undef LT__XX
};
static const lt_placement_kind spell_kinds[] = {
#define LT__XX(k, s) LT_PL_##k,
    LT__PL_SPELLING_MAP(LT__XX)
#undef LT__XX
};
#define NAMES_N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The kind spelled nm, or LT_PL_COUNT when nm is no placement name. */
static lt_placement_kind spelled_kind(const char *nm) {
    int i = lt__name_find(spell_names, NAMES_N(spell_names), nm);
    return i < 0 ? LT_PL_COUNT : spell_kinds[i];
}

static lt_status unknown_key(const char *whole, const char *key, const char *const *keys, int n) {
    char hint[96];
    lt__suggest_hint(key, keys, n, hint, sizeof hint);
    return lt__err(LT_INVALID, "placement '%s': unknown argument '%s'%s", whole, key, hint);
}

/* The name and the arguments of placement text s: nm[TOK_MAX], args
 * (MAX_ARGS), *nargs; *has_parens when an argument list was written. */
static lt_status pl_tokens(const char *s, char *nm, arg *args, int *nargs, int *has_parens) {
    const char *p = skip_ws(s), *name = p;
    while (*p && (isalnum((unsigned char)*p) || *p == '_')) p++;
    size_t nlen = (size_t)(p - name);
    if (nlen == 0 || nlen >= TOK_MAX)
        return lt__err(LT_INVALID, "placement '%s': expected R, S(d), SS(d,k) or P(op)", s);
    memcpy(nm, name, nlen);
    nm[nlen] = '\0';
    p = skip_ws(p);
    *nargs = *has_parens = 0;
    if (*p == '(') {
        *has_parens = 1;
        p = skip_ws(p + 1);
        for (int more = *p != ')'; more;) {   /* "S(0,)": an argument after every comma */
            if (*nargs == MAX_ARGS)
                return lt__err(LT_INVALID, "placement '%s': too many arguments", s);
            LT_TRY(parse_arg(s, &p, &args[*nargs]));
            (*nargs)++;
            more = *p == ',';
            if (more) p++;
            else if (*p != ')')
                return lt__err(LT_INVALID, "placement '%s': expected ',' or ')' at '%s'", s, p);
        }
        p = skip_ws(p + 1);
    }
    if (*p)
        return lt__err(LT_INVALID, "placement '%s': unexpected text '%s' after the placement", s,
                       p);
    return LT_OK;
}

/* Partial's arguments: at most one reduce op, a word (default sum). */
static lt_status pl_partial(const char *s, const arg *args, int nargs, lt_placement *out) {
    static const char *const pkeys[] = {"reduce_op", "op"};
    lt_redop op = LT_REDOP_SUM;
    if (nargs > 1) return lt__err(LT_INVALID, "placement '%s': Partial takes one reduce op", s);
    if (nargs == 1) {
        if (args[0].key[0] && lt__name_find(pkeys, NAMES_N(pkeys), args[0].key) < 0)
            return unknown_key(s, args[0].key, pkeys, NAMES_N(pkeys));
        if (args[0].is_list)
            return lt__err(LT_INVALID, "placement '%s': reduce op must be a word", s);
        lt_status st = lt_redop_parse(args[0].word, &op);
        if (st) return lt__err_ctx(st, "placement '%s'", s);
    }
    *out = lt_partial(op);
    return LT_OK;
}

/* A Shard's uneven rule argument a: a size list or a rule's name. */
static lt_status pl_rule(const char *s, const arg *a, lt_split_rule *rule) {
    if (a->is_list) {
        if (a->nlist == 0)
            return lt__err(LT_INVALID, "placement '%s': explicit size list is empty", s);
        return lt_split_explicit(a->list, a->nlist, rule);
    }
    if (lt_split_kind_parse(a->word, &rule->kind) == LT_OK) return LT_OK;
    const char *rules[LT_SPLIT_EXPLICIT]; /* the rules named by a word */
    for (int k = 0; k < LT_SPLIT_EXPLICIT; k++) rules[k] = lt_split_kind_name((lt_split_kind)k);
    char hint[96], list[64];
    lt__suggest_hint(a->word, rules, LT_SPLIT_EXPLICIT, hint, sizeof hint);
    return lt__err(LT_INVALID,
                   "placement '%s': unknown uneven rule '%s'%s (expected %s or [sizes])", s,
                   a->word, hint, lt__name_join(rules, LT_SPLIT_EXPLICIT, list, sizeof list));
}

/* Shard's or _StridedShard's arguments (by position: dim, then rule or
 * split_factor; or by key), each at most once; the dim is required. */
static lt_status pl_shard(const char *s, int is_strided, const arg *args, int nargs,
                          lt_placement *out) {
    int dim = 0, have_dim = 0, sf = 0, have_sf = 0, have_rule = 0;
    lt_split_rule rule = lt_split_chunk();
    for (int i = 0; i < nargs; i++) {
        const arg *a = &args[i];
        const char *key = a->key[0] ? a->key
                          : i == 0  ? "dim"
                                    : (is_strided ? "split_factor" : "rule");
        if (!strcmp(key, "dim")) {
            if (have_dim++) return lt__err(LT_INVALID, "placement '%s': dim given twice", s);
            LT_TRY(parse_int_arg(s, a, "dim", &dim));
        } else if (is_strided && (!strcmp(key, "split_factor") || !strcmp(key, "sf"))) {
            if (have_sf++)
                return lt__err(LT_INVALID, "placement '%s': split_factor given twice", s);
            LT_TRY(parse_int_arg(s, a, "split_factor", &sf));
        } else if (!is_strided && !strcmp(key, "rule")) {
            if (have_rule++) return lt__err(LT_INVALID, "placement '%s': rule given twice", s);
            LT_TRY(pl_rule(s, a, &rule));
        } else {
            static const char *const skeys[] = {"dim", "rule"}, *const sskeys[] = {
                                                                    "dim", "split_factor", "sf"};
            return is_strided ? unknown_key(s, key, sskeys, NAMES_N(sskeys))
                              : unknown_key(s, key, skeys, NAMES_N(skeys));
        }
    }
    if (!have_dim) return lt__err(LT_INVALID, "placement '%s': missing the tensor dim", s);
    if (!is_strided) {
        *out = lt_shard_rule(dim, rule);
        return LT_OK;
    }
    if (!have_sf) return lt__err(LT_INVALID, "placement '%s': _StridedShard needs split_factor", s);
    if (sf < 1)
        return lt__err(LT_INVALID, "placement '%s': split_factor must be >= 1, got %d", s, sf);
    *out = lt_strided(dim, sf);
    return LT_OK;
}

/* RaggedShard's arguments: dims and units (local_units), each a tuple or a
 * list, by position or key; dims must be the prefix (0, ..., k-1). */
static lt_status pl_ragged(const char *s, const arg *args, int nargs, lt_placement *out) {
    static const char *const rkeys[] = {"dims", "units", "local_units"};
    const arg *dims = NULL, *units = NULL;
    for (int i = 0; i < nargs; i++) {
        const arg *a = &args[i];
        const char *key = a->key[0] ? a->key : i == 0 ? "dims" : "units";
        int which = lt__name_find(rkeys, NAMES_N(rkeys), key);
        if (which < 0 || i > 1) return unknown_key(s, key, rkeys, NAMES_N(rkeys));
        const arg **slot = which == 0 ? &dims : &units;
        if (*slot) return lt__err(LT_INVALID, "placement '%s': %s given twice", s, key);
        if (!a->is_list)
            return lt__err(LT_INVALID, "placement '%s': %s must be a tuple such as (0, 1)", s,
                           key);
        *slot = a;
    }
    if (!dims || !units)
        return lt__err(LT_INVALID,
                       "placement '%s': RaggedShard needs dims and units, e.g. "
                       "RS(dims=(0,), units=(1,2,1,1))", s);
    for (int j = 0; j < dims->nlist; j++)
        if (dims->list[j] != j)
            return lt__err(LT_INVALID,
                           "placement '%s': RaggedShard dims must be the prefix (0, ..., k-1); "
                           "dims[%d] is %lld", s, j, (long long)dims->list[j]);
    lt_status st = lt_ragged(dims->nlist, units->list, units->nlist, out);
    return st ? lt__err_ctx(st, "placement '%s'", s) : LT_OK;
}

lt_status lt_placement_parse(const char *s, lt_placement *out) {
    char nm[TOK_MAX];
    arg args[MAX_ARGS];
    int nargs = 0, has_parens = 0;
    LT_TRY(pl_tokens(s, nm, args, &nargs, &has_parens));
    lt_placement_kind kind = spelled_kind(nm);
    if (kind == LT_PL_REPLICATE) {
        if (nargs) return lt__err(LT_INVALID, "placement '%s': Replicate takes no arguments", s);
        *out = lt_replicate();
        return LT_OK;
    }
    if (kind == LT_PL_PARTIAL) return pl_partial(s, args, nargs, out);
    if (kind == LT_PL_RAGGED) return pl_ragged(s, args, nargs, out);
    if (kind != LT_PL_SHARD && kind != LT_PL_STRIDED) {
        char hint[96];
        lt__suggest_hint(nm, spell_names, NAMES_N(spell_names), hint, sizeof hint);
        return lt__err(
            LT_INVALID,
            "placement '%s': unknown placement '%s'%s (expected R, S(d), SS(d,k) or P(op), "
            "RS(dims, units), or a PyTorch spelling such as Shard(dim=0) or "
            "_StridedShard(dim=0, sf=2))",
            s, nm, hint);
    }
    if (!has_parens || nargs == 0)
        return lt__err(LT_INVALID, "placement '%s': %s needs a tensor dim, e.g. %s(0)", s, nm, nm);
    return pl_shard(s, kind == LT_PL_STRIDED, args, nargs, out);
}

/* 1 when p[0] opens a bracket that closes exactly at p[len-1]. */
static int wraps_all(const char *p, size_t len) {
    if (len < 2 || !((p[0] == '[' && p[len - 1] == ']') || (p[0] == '(' && p[len - 1] == ')')))
        return 0;
    int depth = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '(' || p[i] == '[') depth++;
        else if (p[i] == ')' || p[i] == ']') depth--;
        if (depth == 0 && i + 1 < len) return 0;
    }
    return depth == 0;
}

lt_status lt_placements_parse(const char *s, lt_placement *out, int max, int *n) {
    const char *p = skip_ws(s);
    size_t len = strlen(p);
    while (len && isspace((unsigned char)p[len - 1])) len--;
    /* a Python list or tuple as PyTorch prints it: [S(0), R] or
     * (Shard(dim=0), Replicate()), where a one-entry tuple ends in a comma */
    int wrapped = wraps_all(p, len);
    if (wrapped) { p++; len -= 2; }
    char *buf = lt__malloc(len + 1);
    if (!buf) return lt__err(LT_NOMEM, "out of memory");
    memcpy(buf, p, len);
    buf[len] = '\0';
    int count = 0, depth = 0;
    char *start = buf;
    lt_status st = LT_OK;
    if (!*skip_ws(buf)) {
        st = lt__err(LT_INVALID, "placements '%s': empty list", s);
        goto out;
    }
    for (char *q = buf;; q++) {
        if (*q == '(' || *q == '[') depth++;
        else if (*q == ')' || *q == ']') depth--;
        if ((*q == ',' && depth == 0) || *q == '\0') {
            char save = *q;
            *q = '\0';
            if (count == max) {
                st = lt__err(LT_INVALID, "placements '%s': more than %d entries", s, max);
                goto out;
            }
            if (!*skip_ws(start)) {
                if (save == '\0' && wrapped && count > 0) break;   /* (Shard(dim=0),) */
                st = lt__err(LT_INVALID, "placements '%s': empty entry %d", s, count);
                goto out;
            }
            st = lt_placement_parse(start, &out[count]);
            if (st) {
                st = lt__err_ctx(st, "placements '%s', entry %d", s, count);
                goto out;
            }
            count++;
            if (save == '\0') break;
            start = q + 1;
        }
    }
    *n = count;
out:
    lt__free(buf);
    return st;
}

/* "RS(dims=(0,1),units=(2,3,0,5))" into buf[n]; the length it wanted. */
static int ragged_format(const lt_placement *p, char *buf, size_t n) {
    char t[LT_SPLIT_MAX_EXPLICIT * 22 + 64];
    size_t u = 0;
    u += (size_t)snprintf(t + u, sizeof t - u, "RS(dims=(");
    for (int j = 0; j < p->dim && u < sizeof t - 32; j++)
        u += (size_t)snprintf(t + u, sizeof t - u, j ? ",%d" : "%d", j);
    u += (size_t)snprintf(t + u, sizeof t - u, "%s),units=(", p->dim == 1 ? "," : "");
    for (int c = 0; c < p->rule.nsizes && p->rule.sizes && u < sizeof t - 32; c++)
        u += (size_t)snprintf(t + u, sizeof t - u, c ? ",%lld" : "%lld",
                              (long long)p->rule.sizes[c]);
    snprintf(t + u, sizeof t - u, "%s))", p->rule.nsizes == 1 ? "," : "");
    return snprintf(buf, n, "%s", t);
}

int lt_placement_format(const lt_placement *p, char *buf, size_t n) {
    switch (p->kind) {
    case LT_PL_REPLICATE: return snprintf(buf, n, "R");
    case LT_PL_PARTIAL: return snprintf(buf, n, "P(%s)", lt_redop_name(p->op));
    case LT_PL_STRIDED: return snprintf(buf, n, "SS(%d,%d)", p->dim, p->split_factor);
    case LT_PL_RAGGED: return ragged_format(p, buf, n);
    case LT_PL_SHARD:
        if (p->rule.kind == LT_SPLIT_CHUNK) return snprintf(buf, n, "S(%d)", p->dim);
        else {
            char r[LT_SPLIT_MAX_EXPLICIT * 22 + 4];
            lt_split_rule_format(&p->rule, r, sizeof r);
            return snprintf(buf, n, "S(%d,%s)", p->dim, r);
        }
    default: return snprintf(buf, n, "?");
    }
}

int lt_placements_format(const lt_placement *p, int np, char *buf, size_t n) {
    size_t used = 0;
    int want = 0;
    char one[LT_SPLIT_MAX_EXPLICIT * 22 + 16];
    if (n) buf[0] = '\0';
    for (int i = -1; i <= np; i++) {
        int w;
        if (i < 0) w = snprintf(one, sizeof one, "[");
        else if (i == np) w = snprintf(one, sizeof one, "]");
        else {
            char pl[sizeof one - 4];
            lt_placement_format(&p[i], pl, sizeof pl);
            w = snprintf(one, sizeof one, "%s%s", i ? ", " : "", pl);
        }
        if (w < 0) continue;
        if (used + (size_t)w < n) {
            memcpy(buf + used, one, (size_t)w + 1);
            used += (size_t)w;
        }
        want += w;
    }
    return want;
}

int lt_placement_equal(const lt_placement *a, const lt_placement *b) {
    if (a->kind != b->kind) return 0;
    switch (a->kind) {
    case LT_PL_REPLICATE: return 1;
    case LT_PL_PARTIAL: return a->op == b->op;
    case LT_PL_STRIDED: return a->dim == b->dim && a->split_factor == b->split_factor;
    case LT_PL_RAGGED: return a->dim == b->dim && lt_split_rule_equal(&a->rule, &b->rule);
    case LT_PL_SHARD: return a->dim == b->dim && lt_split_rule_equal(&a->rule, &b->rule);
    default: return 0;
    }
}

int lt_placements_equal(const lt_placement *a, const lt_placement *b, int n) {
    for (int i = 0; i < n; i++)
        if (!lt_placement_equal(&a[i], &b[i])) return 0;
    return 1;
}

int lt_placement_is_shard_like(const lt_placement *p) {
    return p->kind == LT_PL_SHARD || p->kind == LT_PL_STRIDED;
}

/* pl's spelling in buf (returned): made only for an error message, since
 * lt_placements_check runs on every op. */
static const char *spelled(const lt_placement *pl, char *buf, size_t n) {
    lt_placement_format(pl, buf, n);
    return buf;
}

/* The checks of RaggedShard pl[i] alone (docs/SEMANTICS.md §11.10): a placement
 * built by lt_ragged (an explicit units list), k dims that exist, one unit
 * per rank of mesh dim i, units >= 0 summing to > 0. */
static lt_status ragged_check(const lt_mesh *mesh, int ndim, const lt_placement *pl, int i) {
    char txt[LT_SPLIT_MAX_EXPLICIT * 22 + 64];
    const lt_placement *p = &pl[i];
    int64_t sum = 0;
    if (p->rule.kind != LT_SPLIT_EXPLICIT || p->rule.nsizes < 1 ||
        p->rule.nsizes > LT_SPLIT_MAX_EXPLICIT || !p->rule.sizes)
        return lt__err(LT_INVALID, "mesh dim %d: not a RaggedShard (no units list): build it "
                       "with lt_ragged() or lt_placement_parse()", i);
    spelled(p, txt, sizeof txt);
    if (ndim == 0) return lt__err(LT_INVALID, "mesh dim %d: %s cannot shard a 0-d tensor", i, txt);
    if (p->dim < 1 || p->dim > ndim)
        return lt__err(LT_INVALID, "mesh dim %d: %s flattens %d leading dims but the tensor has "
                       "%d (need 1..%d)", i, txt, p->dim, ndim, ndim);
    if (p->rule.nsizes != mesh->shape[i])
        return lt__err(LT_INVALID, "mesh dim %d: %s has %d local_units but the mesh dim has %d "
                       "rank%s", i, txt, p->rule.nsizes, mesh->shape[i],
                       mesh->shape[i] == 1 ? "" : "s");
    for (int c = 0; c < p->rule.nsizes; c++) {
        if (p->rule.sizes[c] < 0 || p->rule.sizes[c] > ((int64_t)1 << 40))
            return lt__err(LT_INVALID, "mesh dim %d: %s: local_units[%d] is out of range "
                           "(0..2^40)", i, txt, c);
        sum += p->rule.sizes[c];
    }
    if (sum <= 0)
        return lt__err(LT_INVALID, "mesh dim %d: %s: local_units must have a positive sum", i, txt);
    /* what does not compose yet (docs/SEMANTICS.md §11.10) */
    for (int j = 0; j < mesh->ndim; j++) {
        if (j == i) continue;
        if (pl[j].kind == LT_PL_RAGGED)
            return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET, "not supported yet: RaggedShard "
                                "on two mesh dims (%d and %d)", j < i ? j : i, j < i ? i : j);
        if (!lt_placement_is_shard_like(&pl[j])) continue;
        int d = pl[j].dim < 0 ? pl[j].dim + ndim : pl[j].dim;
        if (d < 0 || d >= p->dim) continue;   /* out of range: the caller's loop says so */
        if (p->dim > 1 || (j < i && pl[j].kind != LT_PL_SHARD))
            return lt__err_code(LT_UNSUPPORTED, LT_ERR_NOT_YET,
                                "not supported yet: RaggedShard on mesh dim %d with a Shard of "
                                "its flattened dim %d on mesh dim %d (only a RaggedShard of "
                                "dims=(0,) composes: with a Shard(0) before it, a Shard(0) or "
                                "_StridedShard(0) after it)", i, d, j);
    }
    return LT_OK;
}

lt_status lt_placements_check(const lt_mesh *mesh, int ndim, const lt_placement *pl, int np,
                              lt_placement *out) {
    char txt[256];
    if (np != mesh->ndim) {
        lt_placements_format(pl, np, txt, sizeof txt);
        return lt__err(
            LT_INVALID,
            "placements %s: %d placement%s for a mesh of %d dim%s (need one per mesh dim)", txt, np,
            np == 1 ? "" : "s", mesh->ndim, mesh->ndim == 1 ? "" : "s");
    }
    int have_partial = 0;
    lt_redop first_op = LT_REDOP_SUM;
    lt_placement tmp[LT_MESH_MAX_DIMS];
    for (int i = 0; i < np; i++) {
        lt_placement p = pl[i];
        /* a value built in C rather than parsed: its enums and counts may be anything */
        if ((unsigned)p.kind >= LT_PL_COUNT ||
            (p.kind == LT_PL_PARTIAL && (unsigned)p.op >= LT_REDOP_COUNT) ||
            (p.kind == LT_PL_SHARD &&
             ((unsigned)p.rule.kind >= LT_SPLIT_COUNT ||
              (p.rule.kind == LT_SPLIT_EXPLICIT &&
               (p.rule.nsizes < 0 || p.rule.nsizes > LT_SPLIT_MAX_EXPLICIT ||
                (!p.rule.sizes && p.rule.nsizes > 0))))))
            return lt__err(
                LT_INVALID,
                "mesh dim %d: not a placement (kind %u, op %u, split rule %u): "
                "build placements with lt_shard(), lt_replicate(), ... or lt_placement_parse()",
                i, (unsigned)p.kind, (unsigned)p.op, (unsigned)p.rule.kind);
        if (lt_placement_is_shard_like(&p)) {
            if (ndim == 0)
                return lt__err(LT_INVALID, "mesh dim %d: %s cannot shard a 0-d tensor", i,
                               spelled(&pl[i], txt, sizeof txt));
            if (p.dim < -ndim || p.dim >= ndim)
                return lt__err(LT_INVALID,
                               "mesh dim %d: %s: tensor dim %d is out of range for a %d-d tensor "
                               "(valid: %d..%d)",
                               i, spelled(&pl[i], txt, sizeof txt), p.dim, ndim, -ndim, ndim - 1);
            if (p.dim < 0) p.dim += ndim;
            if (p.kind == LT_PL_STRIDED && p.split_factor < 1)
                return lt__err(LT_INVALID, "mesh dim %d: %s: split_factor must be >= 1", i,
                               spelled(&pl[i], txt, sizeof txt));
            if (p.kind == LT_PL_SHARD && p.rule.kind == LT_SPLIT_EXPLICIT &&
                p.rule.nsizes != mesh->shape[i])
                return lt__err(
                    LT_INVALID,
                    "mesh dim %d: %s has %d explicit size%s but the mesh dim has %d rank%s", i,
                    spelled(&pl[i], txt, sizeof txt), p.rule.nsizes, p.rule.nsizes == 1 ? "" : "s",
                    mesh->shape[i], mesh->shape[i] == 1 ? "" : "s");
        } else if (p.kind == LT_PL_RAGGED) {
            LT_TRY(ragged_check(mesh, ndim, pl, i));
        } else if (p.kind == LT_PL_PARTIAL) {
            if (!have_partial) {
                have_partial = 1;
                first_op = p.op;
            } else if (p.op != first_op) {
                int sumavg = (p.op == LT_REDOP_SUM || p.op == LT_REDOP_AVG) &&
                             (first_op == LT_REDOP_SUM || first_op == LT_REDOP_AVG);
                if (!sumavg)
                    return lt__err(LT_INVALID,
                                   "mesh dim %d: %s mixed with P(%s): Partial ops may only be "
                                   "mixed as sum with avg "
                                   "(another mix's value depends on the order of the reductions; "
                                   "docs/SEMANTICS.md §5)",
                                   i, spelled(&pl[i], txt, sizeof txt), lt_redop_name(first_op));
            }
        }
        tmp[i] = p;
    }
    memcpy(out, tmp, sizeof(lt_placement) * (size_t)np);
    return LT_OK;
}

lt_status lt_explicit_order(const int *mesh_shape, int mesh_ndim, const lt_placement *pl, int np,
                            lt_order_entry *out, int *n) {
    if (np != mesh_ndim)
        return lt__err(LT_INVALID,
                       "expected one placement per mesh dim: %d placement%s for %d mesh dim%s", np,
                       np == 1 ? "" : "s", mesh_ndim, mesh_ndim == 1 ? "" : "s");
    int count = 0;
    int deferred[LT_MESH_MAX_DIMS]; /* mesh dims of pending SS, per tensor dim via pl */
    int ndeferred = 0;
    int ended[64] = {0};            /* tensor dims whose strided part ended */
    for (int i = 0; i < np; i++) {
        const lt_placement *p = &pl[i];
        if (p->kind == LT_PL_STRIDED) {
            deferred[ndeferred++] = i;
            continue;
        }
        if (p->kind == LT_PL_SHARD) {
            int d = p->dim;
            if (d >= 0 && d < 64 && ended[d])
                return lt__err(LT_UNSUPPORTED,
                               "Strided sharding does not allow Shard() to appear after the "
                               "strided part has ended (Shard(%d) on mesh dim %d)",
                               d, i);
            out[count].mesh_dim = i;
            out[count].placement = *p;
            count++;
            int aggregate = mesh_shape[i];
            int any = 0;
            for (int j = ndeferred - 1; j >= 0; j--) {
                int md = deferred[j];
                if (md < 0 || pl[md].dim != d) continue;
                if (pl[md].split_factor != aggregate)
                    return lt__err(LT_INVALID,
                                   "Can only convert _StridedShard to ordered Shard if "
                                   "split_factor(%d) == aggregate mesh size (%d) (mesh dim %d)",
                                   pl[md].split_factor, aggregate, md);
                out[count].mesh_dim = md;
                out[count].placement = lt_shard(d);
                count++;
                aggregate *= mesh_shape[md];
                deferred[j] = -1;
                any = 1;
            }
            if (any && d >= 0 && d < 64) ended[d] = 1;
            continue;
        }
        out[count].mesh_dim = i;
        out[count].placement = *p;
        count++;
    }
    for (int j = 0; j < ndeferred; j++)
        if (deferred[j] >= 0)
            return lt__err(LT_UNSUPPORTED,
                           "SS(%d,%d) on mesh dim %d has no later Shard(%d) to pair with (PyTorch "
                           "silently drops it; we refuse)",
                           pl[deferred[j]].dim, pl[deferred[j]].split_factor, deferred[j],
                           pl[deferred[j]].dim);
    *n = count;
    return LT_OK;
}

void lt__key_placement(lt__cache_key *k, const lt_placement *p) {
    uint64_t v = (uint64_t)p->kind;
    if (p->kind == LT_PL_SHARD || p->kind == LT_PL_STRIDED || p->kind == LT_PL_RAGGED)
        v |= (uint64_t)(uint32_t)p->dim << 8;
    if (p->kind == LT_PL_STRIDED) v |= (uint64_t)(uint32_t)p->split_factor << 32;
    if (p->kind == LT_PL_PARTIAL) v |= (uint64_t)p->op << 8;
    if (p->kind == LT_PL_SHARD) v |= (uint64_t)p->rule.kind << 40;
    lt__key_put(k, v);
    if ((p->kind == LT_PL_SHARD || p->kind == LT_PL_RAGGED) && p->rule.kind == LT_SPLIT_EXPLICIT) {
        lt__key_put(k, (uint64_t)p->rule.nsizes);
        for (int j = 0; j < p->rule.nsizes; j++) lt__key_put(k, (uint64_t)p->rule.sizes[j]);
    }
}
