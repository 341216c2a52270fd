/* tools/scenario/scenario_yaml.c — YAML text to a node tree that remembers positions.
 *
 * libyaml's event parser feeds an explicit stack (no recursion), so nesting
 * depth, node count and file size are all bounded before anything is
 * allocated for them: a 10,000-deep list is an error at its 65th level, not a
 * stack overflow. Every node keeps file:line:col for messages. Aliases are
 * expanded by copying (counted against the node budget: no billion laughs).
 */
#include "kernels/alloc.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "localtensor/suggest_impl.h"
#include "tools/scenario/scenario_impl.h"
#include "kernels/status_impl.h"

/* ---- arena ---------------------------------------------------------------- */

typedef struct sc_block {
    struct sc_block *next;
    size_t used, cap;
    max_align_t data[];
} sc_block;

struct sc_arena {
    sc_block *head;
};

sc_arena *lt__sc_arena_new(void) {
    sc_arena *a = lt__calloc(1, sizeof *a);
    if (!a) lt__err(LT_NOMEM, "out of memory");
    return a;
}

void lt__sc_arena_free(sc_arena *a) {
    if (!a) return;
    for (sc_block *b = a->head, *nx; b; b = nx) {
        nx = b->next;
        lt__free(b);
    }
    lt__free(a);
}

size_t lt__sc_arena_used(const sc_arena *a) {
    size_t n = 0;
    for (const sc_block *b = a ? a->head : NULL; b; b = b->next) n += b->used;
    return n;
}

void *lt__sc_alloc(sc_arena *a, size_t n) {
    const size_t al = sizeof(max_align_t);
    if (n > SIZE_MAX / 2) {
        lt__err(LT_NOMEM, "out of memory");
        return NULL;
    }
    n = (n + al - 1) / al * al;
    if (n == 0) n = al;
    sc_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = lt__malloc(sizeof *b + cap);
        if (!b) {
            lt__err(LT_NOMEM, "out of memory");
            return NULL;
        }
        b->used = 0;
        b->cap = cap;
        if (a->head && n > 65536) {   /* a big one-off: keep the current block current */
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *lt__sc_strdup(sc_arena *a, const char *s) {
    size_t n = strlen(s);
    char *p = lt__sc_alloc(a, n + 1);
    if (p) memcpy(p, s, n + 1);
    return p;
}

char *lt__sc_printf(sc_arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    char *p = lt__sc_alloc(a, (size_t)n + 1);
    if (!p) return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

/* ---- errors ---------------------------------------------------------------- */

lt_status lt__sc_err(const sc_node *at, lt_status st, const char *fmt, ...) {
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (at) return lt__err_at(st, at->file, at->line, at->col, "%s", msg);
    return lt__err(st, "%s", msg);
}

lt_status lt__sc_err_at(const sc_node *at, lt_status st) {
    char msg[1536];
    snprintf(msg, sizeof msg, "%s", lt_errmsg());
    return lt__sc_err(at, st, "%s", msg);
}

/* ---- the parser ------------------------------------------------------------ */

typedef struct frame {
    sc_node *node;
    sc_node **kids;     /* (n, cap) malloc'd while the collection is open */
    int n, cap;
    int anchor;         /* the collection's anchor (index in builder.anchors), -1: none */
} frame;

typedef struct anchor {
    char *name;         /* malloc'd */
    sc_node *node;
    int depth;          /* height of the anchored subtree */
} anchor;

typedef struct builder {
    sc_arena *a;
    const char *file;
    const char *text;
    size_t len;
    frame stack[LT_SC_MAX_DEPTH + 1];
    int depth;
    sc_node *root;
    long nodes;
    anchor *anchors;
    int nanchors, capanchors;
    uint32_t *aslot;            /* (amask + 1) malloc'd: 1 + the latest anchor of a name, 0: free */
    uint32_t amask;
    yaml_mark_t alias_mark;     /* the alias being expanded, for messages */
} builder;

static sc_node *new_node(builder *b, sc_kind k, yaml_mark_t m) {
    if (++b->nodes > LT_SC_MAX_NODES) {
        lt__err(LT_INVALID, "%s:%zu:%zu: more than %d YAML nodes (the loader's limit)", b->file,
                m.line + 1, m.column + 1, LT_SC_MAX_NODES);
        return NULL;
    }
    sc_node *n = lt__sc_alloc(b->a, sizeof *n);
    if (!n) return NULL;
    memset(n, 0, sizeof *n);
    n->kind = k;
    n->line = (int)(m.line + 1 > INT32_MAX ? INT32_MAX : m.line + 1);
    n->col = (int)(m.column + 1 > INT32_MAX ? INT32_MAX : m.column + 1);
    n->file = b->file;
    return n;
}

/* Height of a subtree (1 for a scalar); bounded by construction. */
static int height(const sc_node *n) {
    int h = 0;
    if (n->kind != SC_SCALAR)
        for (int i = 0; i < (n->kind == SC_MAP ? 2 * n->n : n->n); i++) {
            int k = height(n->kids[i]);
            if (k > h) h = k;
        }
    return h + 1;
}

/* Copy for an alias (depth-bounded recursion: a tree of height <= 64). */
static sc_node *copy_tree(builder *b, const sc_node *n) {
    if (++b->nodes > LT_SC_MAX_NODES) {
        lt__err(LT_INVALID,
                "%s:%zu:%zu: more than %d YAML nodes once aliases are expanded (alias of the node "
                "at line %d, column %d)",
                b->file, b->alias_mark.line + 1, b->alias_mark.column + 1, LT_SC_MAX_NODES, n->line,
                n->col);
        return NULL;
    }
    sc_node *c = lt__sc_alloc(b->a, sizeof *c);
    if (!c) return NULL;
    *c = *n;
    if (n->kind != SC_SCALAR && n->n > 0) {
        int k = n->kind == SC_MAP ? 2 * n->n : n->n;
        c->kids = lt__sc_alloc(b->a, sizeof(sc_node *) * (size_t)k);
        if (!c->kids) return NULL;
        for (int i = 0; i < k; i++)
            if (!(c->kids[i] = copy_tree(b, n->kids[i]))) return NULL;
    }
    return c;
}

static lt_status attach(builder *b, sc_node *n) {
    if (b->depth == 0) {
        b->root = n;
        return LT_OK;
    }
    frame *f = &b->stack[b->depth - 1];
    if (f->node->kind == SC_MAP && f->n % 2 == 0 && n->kind != SC_SCALAR)
        return lt__sc_err(n, LT_INVALID, "a mapping key must be plain text, not %s",
                          lt__sc_kind_name(n));
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 8;
        sc_node **k = lt__realloc(f->kids, sizeof *k * (size_t)cap);
        if (!k) return lt__err(LT_NOMEM, "out of memory");
        f->kids = k;
        f->cap = cap;
    }
    f->kids[f->n++] = n;
    return LT_OK;
}

/* Anchors by name: an alias finds its anchor with a probe, not a scan (a
 * file of 100,000 aliases took minutes). FNV-1a; open addressing with at
 * least twice as many slots as anchors. */
static uint32_t anchor_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The slot of `name`'s latest anchor, or the free slot where it would go. */
static uint32_t *anchor_slot(const builder *b, const char *name) {
    for (uint32_t i = anchor_hash(name) & b->amask;; i = (i + 1) & b->amask) {
        uint32_t e = b->aslot[i];
        if (!e || !strcmp(b->anchors[e - 1].name, name)) return &b->aslot[i];
    }
}

/* The latest anchor named `name`, or NULL. */
static const anchor *find_anchor(const builder *b, const char *name) {
    uint32_t e = b->aslot ? *anchor_slot(b, name) : 0;
    return e ? &b->anchors[e - 1] : NULL;
}

/* Makes b->anchors[b->nanchors - 1] the latest of its name, first growing
 * the slots (filled anew) when they would be more than half full. */
static lt_status index_anchor(builder *b) {
    if (!b->aslot || (uint32_t)b->nanchors * 2 > b->amask + 1) {
        uint32_t cap = b->aslot ? 2 * (b->amask + 1) : 64;
        uint32_t *s = lt__calloc(cap, sizeof *s);
        if (!s) return lt__err(LT_NOMEM, "out of memory");
        lt__free(b->aslot);
        b->aslot = s;
        b->amask = cap - 1;
        for (int i = 0; i < b->nanchors - 1; i++)
            *anchor_slot(b, b->anchors[i].name) = (uint32_t)i + 1;
    }
    *anchor_slot(b, b->anchors[b->nanchors - 1].name) = (uint32_t)b->nanchors;
    return LT_OK;
}

static lt_status add_anchor(builder *b, const yaml_char_t *name, sc_node *n, int depth) {
    if (!name) return LT_OK;
    if (b->nanchors == b->capanchors) {
        int cap = b->capanchors ? b->capanchors * 2 : 8;
        anchor *an = lt__realloc(b->anchors, sizeof *an * (size_t)cap);
        if (!an) return lt__err(LT_NOMEM, "out of memory");
        b->anchors = an;
        b->capanchors = cap;
    }
    char *s = lt__malloc(strlen((const char *)name) + 1);
    if (!s) return lt__err(LT_NOMEM, "out of memory");
    strcpy(s, (const char *)name);
    b->anchors[b->nanchors].name = s;
    b->anchors[b->nanchors].node = n;
    b->anchors[b->nanchors].depth = depth;
    b->nanchors++;
    return index_anchor(b);
}

static int keycmp(const void *x, const void *y) {
    const sc_node *a = *(const sc_node *const *)x, *c = *(const sc_node *const *)y;
    return strcmp(a->str, c->str);
}

static lt_status close_frame(builder *b) {
    frame *f = &b->stack[b->depth - 1];
    sc_node *n = f->node;
    if (n->kind == SC_MAP) {
        n->n = f->n / 2;
        if (n->n > 1) {   /* duplicate keys: sort a copy (n log n even for huge maps) */
            const sc_node **keys = lt__malloc(sizeof *keys * (size_t)n->n);
            if (!keys) return lt__err(LT_NOMEM, "out of memory");
            for (int i = 0; i < n->n; i++) keys[i] = f->kids[2 * i];
            qsort(keys, (size_t)n->n, sizeof *keys, keycmp);
            for (int i = 1; i < n->n; i++)
                if (!strcmp(keys[i]->str, keys[i - 1]->str)) {
                    const sc_node *second = keys[i]->line > keys[i - 1]->line ||
                                                    (keys[i]->line == keys[i - 1]->line &&
                                                     keys[i]->col > keys[i - 1]->col)
                                                ? keys[i] : keys[i - 1];
                    const sc_node *first = second == keys[i] ? keys[i - 1] : keys[i];
                    lt_status st = lt__sc_err(second, LT_INVALID,
                                              "duplicate key '%s' (first at line %d, column %d)",
                                              second->str, first->line, first->col);
                    lt__free(keys);
                    return st;
                }
            lt__free(keys);
        }
    } else {
        n->n = f->n;
    }
    if (f->n) {
        n->kids = lt__sc_alloc(b->a, sizeof(sc_node *) * (size_t)f->n);
        if (!n->kids) return LT_NOMEM;
        memcpy(n->kids, f->kids, sizeof(sc_node *) * (size_t)f->n);
    }
    lt__free(f->kids);
    f->kids = NULL;
    b->depth--;
    return LT_OK;
}

static lt_status open_frame(builder *b, sc_node *n, const yaml_char_t *anchor_name) {
    LT_TRY(attach(b, n));
    if (b->depth >= LT_SC_MAX_DEPTH)
        return lt__sc_err(n, LT_INVALID, "nesting deeper than %d levels (the loader's limit)",
                          LT_SC_MAX_DEPTH);
    frame *f = &b->stack[b->depth++];
    f->node = n;
    f->kids = NULL;
    f->n = f->cap = 0;
    f->anchor = -1;
    /* the anchor is registered when the collection closes (an alias inside
     * its own anchored collection is a recursive structure: refused) */
    (void)anchor_name;
    return LT_OK;
}

/* Line/column of a byte offset (for reader errors, which have no mark). */
static void offset_pos(const builder *b, size_t off, int *line, int *col) {
    int l = 1, c = 1;
    for (size_t i = 0; i < off && i < b->len; i++) {
        if (b->text[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

/* A hint for libyaml's raw messages about the two mistakes people make most
 * in scenario files: a tab in the indentation, and a placement with a comma
 * or bracket left unquoted in a flow list ([S(0,[1,3]), R]). "" when none. */
static const char *syntax_hint(const builder *b, const yaml_parser_t *p) {
    size_t at = p->problem_mark.index < b->len ? p->problem_mark.index : b->len;
    size_t ls = at;
    while (ls > 0 && b->text[ls - 1] != '\n') ls--;
    size_t le = at;
    while (le < b->len && b->text[le] != '\n') le++;
    int tab = (at < b->len && b->text[at] == '\t') || (p->problem && strstr(p->problem, "tab"));
    for (size_t i = ls; i < le && (b->text[i] == ' ' || b->text[i] == '\t'); i++)
        tab |= b->text[i] == '\t';
    if (tab)
        return "; hint: this line is indented with a tab: YAML does not allow tabs in indentation, "
               "indent with spaces";
    int flow = p->context && strstr(p->context, "flow");
    int paren = 0;
    for (size_t i = ls; i < le; i++) paren |= b->text[i] == '(';
    if (flow && paren)
        return "; hint: inside [ ] or { } a comma or bracket ends the item, so quote placements "
               "that contain "
               "them: ['S(0,[1,3])', R], ['SS(0,2)', 'S(0)'], or write the list as one string "
               "\"SS(0,2),S(0)\"";
    return "";
}

static lt_status parser_error(builder *b, const yaml_parser_t *p) {
    const char *problem = p->problem ? p->problem : "malformed YAML";
    if (p->error == YAML_READER_ERROR) {
        int line, col;
        offset_pos(b, p->problem_offset, &line, &col);
        if (p->problem_value != -1)
            return lt__err_at(LT_INVALID, b->file, line, col,
                              "%s (byte #x%02X): is this a text file?", problem,
                              (unsigned)p->problem_value & 0xFFu);
        return lt__err_at(LT_INVALID, b->file, line, col, "%s", problem);
    }
    const char *hint = syntax_hint(b, p);
    if (p->context)
        return lt__err(LT_INVALID, "%s:%zu:%zu: %s (line %zu, column %zu): %s%s", b->file,
                       p->problem_mark.line + 1, p->problem_mark.column + 1, p->context,
                       p->context_mark.line + 1, p->context_mark.column + 1, problem, hint);
    return lt__err(LT_INVALID, "%s:%zu:%zu: %s%s", b->file, p->problem_mark.line + 1,
                   p->problem_mark.column + 1, problem, hint);
}

/* An alias: a copy of the tree its anchor names, at the alias's place. */
static lt_status on_alias(builder *b, yaml_event_t *ev) {
    yaml_mark_t m = ev->start_mark;
    const char *name = (const char *)ev->data.alias.anchor;
    const anchor *an = find_anchor(b, name);
    int line = (int)m.line + 1, col = (int)m.column + 1;
    if (!an)
        return lt__err_at(LT_INVALID, b->file, line, col,
                          "alias *%s names no anchor defined before it", name);
    if (an->depth < 0)
        return lt__err_at(LT_INVALID, b->file, line, col,
                          "alias *%s refers to a collection that contains it", name);
    if (b->depth + an->depth > LT_SC_MAX_DEPTH)
        return lt__err_at(LT_INVALID, b->file, line, col, "alias *%s nests deeper than %d levels",
                          name, LT_SC_MAX_DEPTH);
    b->alias_mark = m;
    sc_node *n = copy_tree(b, an->node);
    if (!n) return LT_INVALID;
    n->line = line;
    n->col = col;
    return attach(b, n);
}

/* A scalar: its text (no NUL, no tag), whether it is written plainly and
 * verbatim, and its anchor. */
static lt_status on_scalar(builder *b, yaml_event_t *ev) {
    yaml_mark_t m = ev->start_mark;
    sc_node *n = new_node(b, SC_SCALAR, m);
    if (!n) return LT_INVALID;
    if (ev->data.scalar.tag)
        return lt__sc_err(n, LT_INVALID, "YAML tags (%s) are not part of the scenario format",
                          (const char *)ev->data.scalar.tag);
    size_t len = ev->data.scalar.length;
    if (memchr(ev->data.scalar.value, 0, len))
        return lt__sc_err(n, LT_INVALID, "text holds a NUL character");
    char *s = lt__sc_alloc(b->a, len + 1);
    if (!s) return LT_NOMEM;
    memcpy(s, ev->data.scalar.value, len);
    n->str = s;
    n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    int quoted = ev->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                 ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    n->verbatim = (n->plain || quoted) && ev->end_mark.line == m.line &&
                  ev->end_mark.index - m.index == len + (quoted ? 2 : 0);
    LT_TRY(attach(b, n));
    return add_anchor(b, ev->data.scalar.anchor, n, 1);
}

/* The start of a sequence or mapping: a frame for its items. Its anchor is
 * registered now with depth -1 (not usable: an alias inside the collection
 * would be recursive); the frame remembers it and its close sets the depth. */
static lt_status on_open(builder *b, yaml_event_t *ev) {
    int seq = ev->type == YAML_SEQUENCE_START_EVENT;
    sc_node *n = new_node(b, seq ? SC_SEQ : SC_MAP, ev->start_mark);
    if (!n) return LT_INVALID;
    const yaml_char_t *tag = seq ? ev->data.sequence_start.tag : ev->data.mapping_start.tag;
    if (tag)
        return lt__sc_err(n, LT_INVALID, "YAML tags (%s) are not part of the scenario format",
                          (const char *)tag);
    LT_TRY(open_frame(b, n, NULL));
    const yaml_char_t *an = seq ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor;
    if (!an) return LT_OK;
    LT_TRY(add_anchor(b, an, n, -1));
    b->stack[b->depth - 1].anchor = b->nanchors - 1;
    return LT_OK;
}

/* The end of a sequence or mapping: its frame closes, its anchor usable. */
static lt_status on_close(builder *b) {
    sc_node *closing = b->stack[b->depth - 1].node;
    int an = b->stack[b->depth - 1].anchor;
    LT_TRY(close_frame(b));
    if (an >= 0) b->anchors[an].depth = height(closing);
    return LT_OK;
}

static lt_status handle(builder *b, yaml_event_t *ev, int *docs, int *done) {
    yaml_mark_t m = ev->start_mark;
    switch (ev->type) {
    case YAML_STREAM_END_EVENT: *done = 1; return LT_OK;
    case YAML_DOCUMENT_START_EVENT:
        if (++*docs > 1)
            return lt__err_at(
                LT_INVALID, b->file, (int)m.line + 1, (int)m.column + 1,
                "a second YAML document: a file holds one scenario or one list of scenarios");
        return LT_OK;
    case YAML_ALIAS_EVENT: return on_alias(b, ev);
    case YAML_SCALAR_EVENT: return on_scalar(b, ev);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: return on_open(b, ev);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: return on_close(b);
    default: return LT_OK;   /* stream start, document end, no event */
    }
}

lt_status lt__sc_yaml_parse(sc_arena *a, const char *file, const char *text, size_t len,
                            sc_node **root) {
    *root = NULL;
    builder b;
    memset(&b, 0, sizeof b);
    b.a = a;
    b.file = file;
    b.text = text;
    b.len = len;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) return lt__err(LT_NOMEM, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    lt_status st = LT_OK;
    int docs = 0, done = 0;
    while (!done && !st) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            st = parser_error(&b, &p);
            break;
        }
        st = handle(&b, &ev, &docs, &done);
        yaml_event_delete(&ev);
    }
    /* an alias to a collection still open (a recursive structure) */
    for (int i = 0; i < b.nanchors; i++) lt__free(b.anchors[i].name);
    lt__free(b.anchors);
    lt__free(b.aslot);
    while (b.depth > 0) lt__free(b.stack[--b.depth].kids);
    yaml_parser_delete(&p);
    if (st) return st;
    *root = b.root;
    return LT_OK;
}

/* ---- accessors -------------------------------------------------------------- */

const char *lt__sc_kind_name(const sc_node *n) {
    if (!n) return "nothing";
    if (n->kind == SC_SEQ) return "a list";
    if (n->kind == SC_MAP) return "a mapping";
    if (lt__sc_is_null(n)) return "nothing";
    return "text";
}

int lt__sc_is_null(const sc_node *n) {
    if (!n) return 1;
    if (n->kind != SC_SCALAR || !n->plain) return 0;
    return !n->str[0] || !strcmp(n->str, "~") || !strcmp(n->str, "null") ||
           !strcmp(n->str, "Null") || !strcmp(n->str, "NULL");
}

const sc_node *lt__sc_get(const sc_node *map, const char *key) {
    if (!map || map->kind != SC_MAP) return NULL;
    /* the first letters first: most keys differ there, and a step looks up
     * several absent optional keys (a strcmp call each, 140,000-step files) */
    for (int i = 0; i < map->n; i++) {
        const char *k = map->kids[2 * i]->str;
        if (k[0] == key[0] && !strcmp(k, key)) return map->kids[2 * i + 1];
    }
    return NULL;
}

lt_status lt__sc_keys(const sc_node *n, const char *what, const char *const *allowed) {
    if (!n || n->kind != SC_MAP)
        return lt__sc_err(n, LT_INVALID, "%s: expected a mapping, got %s", what,
                          lt__sc_kind_name(n));
    for (int i = 0; i < n->n; i++) {
        const sc_node *k = n->kids[2 * i];
        int ok = 0;
        for (int j = 0; allowed[j] && !ok; j++)   /* first letters first, as lt__sc_get */
            ok = allowed[j][0] == k->str[0] && !strcmp(allowed[j], k->str);
        if (ok) continue;
        char list[512];
        size_t used = 0;
        list[0] = '\0';
        for (int j = 0; allowed[j] && used < sizeof list; j++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", j ? ", " : "",
                                     allowed[j]);
        int na = 0;
        while (allowed[na]) na++;
        const char *guess = lt__suggest(k->str, allowed, na);
        return lt__sc_err(k, LT_INVALID, "unknown key '%s' in %s (expected one of: %s)%s%s%s",
                          k->str, what, list, guess ? "; did you mean '" : "", guess ? guess : "",
                          guess ? "'?" : "");
    }
    return LT_OK;
}

lt_status lt__sc_need(const sc_node *map, const char *what, const char *key, const sc_node **out) {
    const sc_node *v = lt__sc_get(map, key);
    if (!v) return lt__sc_err(map, LT_INVALID, "%s: missing required key '%s'", what, key);
    *out = v;
    return LT_OK;
}

lt_status lt__sc_str(const sc_node *n, const char *what, const char **out) {
    if (!n || n->kind != SC_SCALAR || lt__sc_is_null(n))
        return lt__sc_err(n, LT_INVALID, "%s: expected text, got %s", what, lt__sc_kind_name(n));
    *out = n->str;
    return LT_OK;
}

lt_status lt__sc_i64(const sc_node *n, const char *what, int64_t lo, int64_t hi, int64_t *out) {
    const char *s;
    LT_TRY(lt__sc_str(n, what, &s));
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    if (!*p) return lt__sc_err(n, LT_INVALID, "%s: '%s' is not an integer", what, s);
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9')
            return lt__sc_err(n, LT_INVALID, "%s: '%s' is not an integer", what, s);
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return lt__sc_err(n, LT_OVERFLOW, "%s: %s does not fit in 64 bits", what, s);
    if (v < lo || v > hi)
        return lt__sc_err(n, v < 0 && lo >= 0 ? LT_INVALID : LT_OVERFLOW,
                          "%s: %s is out of range (%lld..%lld)", what, s, (long long)lo,
                          (long long)hi);
    *out = v;
    return LT_OK;
}

lt_status lt__sc_int(const sc_node *n, const char *what, int lo, int hi, int *out) {
    int64_t v;
    LT_TRY(lt__sc_i64(n, what, lo, hi, &v));
    *out = (int)v;
    return LT_OK;
}

lt_status lt__sc_f64(const sc_node *n, const char *what, double *out) {
    const char *s;
    if (n && n->kind == SC_SCALAR && n->plain) {
        if (!strcmp(n->str, "true")) { *out = 1; return LT_OK; }
        if (!strcmp(n->str, "false")) { *out = 0; return LT_OK; }
    }
    LT_TRY(lt__sc_str(n, what, &s));
    const char *p = s;
    int neg = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    if (*p == '.') {   /* YAML .inf / .nan */
        if (!strcmp(p, ".inf") || !strcmp(p, ".Inf") || !strcmp(p, ".INF")) {
            *out = neg ? -HUGE_VAL : HUGE_VAL;
            return LT_OK;
        }
        if (!neg && (!strcmp(p, ".nan") || !strcmp(p, ".NaN") || !strcmp(p, ".NAN"))) {
            *out = NAN;
            return LT_OK;
        }
    }
    if (!strcmp(p, "inf") || !strcmp(p, "Infinity")) {
        *out = neg ? -HUGE_VAL : HUGE_VAL;
        return LT_OK;
    }
    if (!neg && !strcmp(p, "nan")) {
        *out = NAN;
        return LT_OK;
    }
    /* digits, one '.', an exponent: nothing else (no hex, no "infinity" spellings) */
    int digits = 0;
    const char *q = p;
    while (*q >= '0' && *q <= '9') q++, digits++;
    if (*q == '.') {
        q++;
        while (*q >= '0' && *q <= '9') q++, digits++;
    }
    if (digits && (*q == 'e' || *q == 'E')) {
        q++;
        if (*q == '+' || *q == '-') q++;
        if (!(*q >= '0' && *q <= '9')) digits = 0;
        while (*q >= '0' && *q <= '9') q++;
    }
    if (!digits || *q) return lt__sc_err(n, LT_INVALID, "%s: '%s' is not a number", what, s);
    errno = 0;
    double v = strtod(s, NULL);
    if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL))
        return lt__sc_err(n, LT_OVERFLOW, "%s: %s is too large for a double", what, s);
    *out = v;
    return LT_OK;
}

lt_status lt__sc_bool(const sc_node *n, const char *what, int *out) {
    const char *s;
    LT_TRY(lt__sc_str(n, what, &s));
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "yes")) *out = 1;
    else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "no")) *out = 0;
    else return lt__sc_err(n, LT_INVALID, "%s: expected true or false, got '%s'", what, s);
    return LT_OK;
}

lt_status lt__sc_ident(const sc_node *n, const char *what, const char **out) {
    const char *s;
    LT_TRY(lt__sc_str(n, what, &s));
    int ok = (s[0] < '0' || s[0] > '9') && strlen(s) <= 64;
    for (const char *p = s; *p && ok; p++)
        ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
             *p == '_';
    if (!ok)
        return lt__sc_err(
            n, LT_INVALID,
            "%s: '%s' is not a name (letters, digits and _, at most 64, not starting with a digit)",
            what, s);
    *out = s;
    return LT_OK;
}

lt_status lt__sc_shape(const sc_node *n, const char *what, int *ndim, int64_t *shape) {
    return lt__sc_shape_max(n, what, LT_SC_MAX_ELEMS, ndim, shape);
}

lt_status lt__sc_shape_max(const sc_node *n, const char *what, int64_t max_elems, int *ndim,
                           int64_t *shape) {
    int nd = 0;
    if (n && n->kind == SC_SEQ) {
        if (n->n > LT_MAX_DIMS)
            return lt__sc_err(n, LT_INVALID, "%s: %d dims; at most %d are supported", what, n->n,
                              LT_MAX_DIMS);
        for (int i = 0; i < n->n; i++) {
            int64_t v;
            LT_TRY(lt__sc_i64(n->kids[i], what, INT64_MIN, INT64_MAX, &v));
            if (v < 0)
                return lt__sc_err(n->kids[i], LT_INVALID, "%s: size %lld is negative", what,
                                  (long long)v);
            shape[nd++] = v;
        }
    } else {
        const char *s;
        LT_TRY(lt__sc_str(n, what, &s));
        const char *p = s;
        for (;;) {
            while (*p == ' ') p++;
            if (nd == LT_MAX_DIMS)
                return lt__sc_err(n, LT_INVALID, "%s: '%s' has more than %d dims", what, s,
                                  LT_MAX_DIMS);
            const char *start = p;
            if (*p == '-')
                return lt__sc_err(n, LT_INVALID, "%s: '%s': sizes must be >= 0", what, s);
            int64_t v = 0;
            while (*p >= '0' && *p <= '9') {
                if (v > (INT64_MAX - 9) / 10)
                    return lt__sc_err(n, LT_OVERFLOW, "%s: '%s': a size overflows 64 bits", what,
                                      s);
                v = v * 10 + (*p++ - '0');
            }
            if (p == start)
                return lt__sc_err(n, LT_INVALID,
                                  "%s: '%s' is not a shape (expected e.g. [5, 7] or \"5,7\")", what,
                                  s);
            shape[nd++] = v;
            while (*p == ' ') p++;
            if (!*p) break;
            if (*p != ',')
                return lt__sc_err(n, LT_INVALID,
                                  "%s: '%s' is not a shape (expected e.g. [5, 7] or \"5,7\")", what,
                                  s);
            p++;
        }
    }
    int64_t numel;
    lt_status st = lt__numel_checked(nd, shape, 8, &numel);
    if (st) return lt__sc_err_at(n, st);
    if (numel > max_elems)
        return lt__sc_err(n, LT_OVERFLOW,
                          "%s: %lld elements; scenario tensors are limited to %lld%s", what,
                          (long long)numel, (long long)max_elems,
                          max_elems == LT_SC_MAX_ELEMS
                              ? " (init: tensors of any size under numerics: sample or none)"
                              : "");
    *ndim = nd;
    return LT_OK;
}

/* '(' minus ')' in s. */
static int paren_balance(const char *s) {
    int b = 0;
    for (; *s; s++) b += (*s == '(') - (*s == ')');
    return b;
}

/* An unquoted `[SS(0,2), S(0)]` reaches us as the items "SS(0", "2)", "S(0)":
 * YAML split the placement at its comma. Say so, and show the list written
 * as it should be (split items put back together and quoted), instead of
 * the placement parser's complaint about "SS(0". */
static lt_status split_hint(const sc_node *list, int i, const char *what) {
    char joined[256], fixed[512];
    size_t uj = 0, uf = 0;
    int bal = 0;
    joined[0] = '\0';
    for (int k = i; k < list->n && list->kids[k]->kind == SC_SCALAR; k++) {
        const char *t = list->kids[k]->str;
        int w = snprintf(joined + uj, sizeof joined - uj, "%s%s", k > i ? "," : "", t);
        if (w > 0) uj += (size_t)w < sizeof joined - uj ? (size_t)w : sizeof joined - uj - 1;
        if ((bal += paren_balance(t)) <= 0) break;
    }
    /* the whole list, each placement whole again; ones with a comma quoted */
    fixed[uf++] = '[';
    fixed[uf] = '\0';
    char one[256];
    size_t uo = 0;
    int open = 0, first = 1;
    for (int k = 0; k < list->n && uf + 1 < sizeof fixed; k++) {
        const char *t = list->kids[k]->kind == SC_SCALAR ? list->kids[k]->str : "?";
        int w = snprintf(one + uo, sizeof one - uo, "%s%s", open > 0 ? "," : "", t);
        if (w > 0) uo += (size_t)w < sizeof one - uo ? (size_t)w : sizeof one - uo - 1;
        if ((open += paren_balance(t)) > 0 && k + 1 < list->n) continue;
        int q = strchr(one, ',') != NULL;
        w = snprintf(fixed + uf, sizeof fixed - uf, "%s%s%s%s", first ? "" : ", ", q ? "'" : "",
                     one, q ? "'" : "");
        if (w > 0) uf += (size_t)w < sizeof fixed - uf ? (size_t)w : sizeof fixed - uf - 1;
        first = 0, open = 0, uo = 0;
        one[0] = '\0';
    }
    if (uf + 1 < sizeof fixed) fixed[uf++] = ']', fixed[uf] = '\0';
    return lt__sc_err(
        list->kids[i], LT_INVALID,
        "%s: '%s' is not a placement: YAML split '%s' at the comma inside it; quote placements "
        "that contain commas: %s",
        what, list->kids[i]->str, joined, fixed);
}

/* A thread's memo of placement lists spelled as one string: a sweep's
 * cases spell the same few dozen lists, once at load and once when each
 * case runs. Direct-mapped on the string's hash; only what parsed is kept,
 * so every error comes from lt_placements_parse itself. */
#define PL_MEMO 64
#define PL_MEMO_TEXT 96
typedef struct pl_memo {
    char text[PL_MEMO_TEXT];          /* "" : empty slot */
    int np;
    lt_placement pl[LT_MESH_MAX_DIMS];
} pl_memo;

static lt_status placements_parse_memo(const char *s, lt_placement *pl, int *np) {
    static _Thread_local pl_memo memo[PL_MEMO];
    size_t len = strlen(s);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    pl_memo *m = &memo[h % PL_MEMO];
    if (len == 0 || len >= PL_MEMO_TEXT) return lt_placements_parse(s, pl, LT_MESH_MAX_DIMS, np);
    if (!strcmp(m->text, s)) {
        memcpy(pl, m->pl, sizeof(lt_placement) * (size_t)m->np);
        *np = m->np;
        return LT_OK;
    }
    LT_TRY(lt_placements_parse(s, pl, LT_MESH_MAX_DIMS, np));
    memcpy(m->text, s, len + 1);
    memcpy(m->pl, pl, sizeof(lt_placement) * (size_t)*np);
    m->np = *np;
    return LT_OK;
}

lt_status lt__sc_placements(const sc_node *n, const char *what, lt_placement *pl, int *np) {
    lt_status st;
    if (n && n->kind == SC_SEQ) {
        if (n->n > LT_MESH_MAX_DIMS)
            return lt__sc_err(n, LT_INVALID, "%s: %d placements; a mesh has at most %d dims", what,
                              n->n, LT_MESH_MAX_DIMS);
        for (int i = 0; i < n->n; i++) {
            const char *s;
            LT_TRY(lt__sc_str(n->kids[i], what, &s));
            if ((st = lt_placement_parse(s, &pl[i]))) {
                if (n->kids[i]->plain && paren_balance(s) > 0) return split_hint(n, i, what);
                return lt__sc_err_at(n->kids[i], st);
            }
        }
        *np = n->n;
        return LT_OK;
    }
    const char *s;
    if (n && n->kind == SC_SCALAR && lt__sc_is_null(n))
        return lt__sc_err(n, LT_INVALID, "%s: expected placements like [S(0), R], got nothing",
                          what);
    if (!n || n->kind != SC_SCALAR)
        return lt__sc_err(n, LT_INVALID,
                          "%s: expected placements like [S(0), R] or \"S(0),R\", got %s", what,
                          lt__sc_kind_name(n));
    LT_TRY(lt__sc_str(n, what, &s));
    if ((st = placements_parse_memo(s, pl, np))) return lt__sc_err_at(n, st);
    return LT_OK;
}

lt_status lt__sc_placements_new(sc_arena *a, const sc_node *n, const char *what, lt_placement **pl,
                                int *np) {
    lt_placement tmp[LT_MESH_MAX_DIMS];
    LT_TRY(lt__sc_placements(n, what, tmp, np));
    *pl = lt__sc_alloc(a, sizeof *tmp * (size_t)(*np ? *np : 1));
    if (!*pl) return LT_NOMEM;
    memcpy(*pl, tmp, sizeof *tmp * (size_t)*np);
    return LT_OK;
}

lt_status lt__sc_rule(const sc_node *n, const char *what, lt_split_rule *out) {
    memset(out, 0, sizeof *out);
    if (n && n->kind == SC_SEQ) {
        if (n->n > LT_SPLIT_MAX_EXPLICIT)
            return lt__sc_err(n, LT_INVALID, "%s: %d sizes; at most %d", what, n->n,
                              LT_SPLIT_MAX_EXPLICIT);
        int64_t sz[LT_SPLIT_MAX_EXPLICIT];
        for (int i = 0; i < n->n; i++)
            LT_TRY(lt__sc_i64(n->kids[i], what, 0, INT64_MAX, &sz[i]));
        return lt_split_explicit(sz, n->n, out);
    }
    const char *s;
    LT_TRY(lt__sc_str(n, what, &s));
    if (lt_split_kind_parse(s, &out->kind) == LT_OK) return LT_OK;
    const char *rules[LT_SPLIT_EXPLICIT]; /* the rules named by a word */
    for (int k = 0; k < LT_SPLIT_EXPLICIT; k++) rules[k] = lt_split_kind_name((lt_split_kind)k);
    char list[64];
    return lt__sc_err(n, LT_INVALID, "%s: '%s' is not a split rule (%s, or a list of sizes)", what,
                      s, lt__name_join(rules, LT_SPLIT_EXPLICIT, list, sizeof list));
}

lt_status lt__sc_mesh(const sc_node *n, const char *what, lt_mesh *out) {
    lt_status st;
    if (n && n->kind == SC_MAP) return lt__sc_mesh_map(n, what, out);   /* scenario_mesh.c */
    const char *s;
    LT_TRY(lt__sc_str(n, what, &s));
    if ((st = lt_mesh_parse(s, out))) return lt__sc_err_at(n, st);
    return LT_OK;
}

lt_status lt__sc_dtype(const sc_node *n, const char *what, lt_dtype *out) {
    const char *s;
    LT_TRY(lt__sc_str(n, what, &s));
    lt_status st = lt_dtype_parse(s, out);
    if (st) return lt__sc_err_at(n, st);
    return LT_OK;
}

/* ---- copies with sweep variables ---------------------------------------------- */

sc_node *lt__sc_scalar(sc_arena *a, const sc_node *at, const char *text) {
    sc_node *n = lt__sc_alloc(a, sizeof *n);
    if (!n) return NULL;
    memset(n, 0, sizeof *n);
    n->kind = SC_SCALAR;
    n->line = at->line;
    n->col = at->col;
    n->file = at->file;
    n->plain = 0;
    n->str = lt__sc_strdup(a, text);
    return n->str ? n : NULL;
}

/* "$name": a sweep variable reference */
static int is_var(const char *s) {
    if (s[0] != '$' ||
        !((s[1] >= 'a' && s[1] <= 'z') || (s[1] >= 'A' && s[1] <= 'Z') || s[1] == '_'))
        return 0;
    for (const char *p = s + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return 0;
    return 1;
}

static lt_status copy_rec(sc_arena *a, const sc_node *n, const sc_subst *s, sc_node **out,
                          int depth) {
    if (depth > LT_SC_MAX_DEPTH + 8) return lt__sc_err(n, LT_INVALID, "nesting too deep");
    if (n->kind == SC_SCALAR && is_var(n->str)) {
        for (int i = 0; i < s->n; i++)
            if (!strcmp(s->names[i], n->str + 1)) return copy_rec(a, s->vals[i], s, out, depth + 1);
        char list[256] = "";
        size_t used = 0;
        for (int i = 0; i < s->n && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s$%s", i ? ", " : "",
                                     s->names[i]);
        if (!s->n)
            return lt__sc_err(n, LT_INVALID,
                              "'%s' is a sweep variable, but this scenario has no sweep", n->str);
        return lt__sc_err(n, LT_INVALID, "'%s' is not a variable of this sweep (it defines %s)",
                          n->str, list);
    }
    if (n->kind == SC_SCALAR) {
        if (out) *out = (sc_node *)n;        /* shared: nothing to substitute */
        return LT_OK;
    }
    /* a collection is copied only when something below it changes */
    int k = n->kind == SC_MAP ? 2 * n->n : n->n;
    sc_node **kids = NULL;
    for (int i = 0; i < k; i++) {
        if (n->kind == SC_MAP && i % 2 == 0) continue;   /* keys are never variables */
        sc_node *c = NULL;
        LT_TRY(copy_rec(a, n->kids[i], s, a ? &c : NULL, depth + 1));
        if (!a || c == n->kids[i]) continue;
        if (!kids) {
            if (!(kids = lt__sc_alloc(a, sizeof(sc_node *) * (size_t)k))) return LT_NOMEM;
            memcpy(kids, n->kids, sizeof(sc_node *) * (size_t)k);
        }
        kids[i] = c;
    }
    if (!a) return LT_OK;
    if (!kids) {
        *out = (sc_node *)n;
        return LT_OK;
    }
    sc_node *c = lt__sc_alloc(a, sizeof *c);
    if (!c) return LT_NOMEM;
    *c = *n;
    c->kids = kids;
    *out = c;
    return LT_OK;
}

lt_status lt__sc_copy(sc_arena *a, const sc_node *n, const sc_subst *s, sc_node **out) {
    static const sc_subst none = {0};
    return copy_rec(a, n, s ? s : &none, out, 0);
}
