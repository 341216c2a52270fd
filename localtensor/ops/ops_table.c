/* localtensor/ops/ops_table.c — the op names and arities of LT_OP_MAP
 * (localtensor/ops.h), in their own file so that the rules, the kernels and
 * the reference can name an op without depending on the dispatcher.
 */
#include <string.h>

#include "localtensor/ops/ops_impl.h"

static const char *const op_names[] = {
#define LT__XX(e, s, n, fam, pr) s,
    LT_OP_MAP(LT__XX)
#undef LT__XX
};
static const int op_arity[] = {
#define LT__XX(e, s, n, fam, pr) n,
    LT_OP_MAP(LT__XX)
#undef LT__XX
};

const char *lt_op_name(lt_op_kind op) { return lt__name_of(op_names, LT_OP_COUNT, (int)op); }
int lt_op_arity(lt_op_kind op) { return (unsigned)op < LT_OP_COUNT ? op_arity[op] : 0; }

lt_status lt_op_parse(const char *s, lt_op_kind *out) {
    int i = lt__name_find(op_names, LT_OP_COUNT, s);
    if (i >= 0) return *out = (lt_op_kind)i, LT_OK;
    if (!strcmp(s, "amax")) return *out = LT_OP_AMAX, LT_OK;
    if (!strcmp(s, "amin")) return *out = LT_OP_AMIN, LT_OK;
    char list[1024];
    return lt__err(LT_INVALID, "unknown op '%s' (known: %s)", s,
                   lt__name_join(op_names, LT_OP_COUNT, list, sizeof list));
}

/* ---- rule sets (ops.h) ---- */

static const char *const rules_names[] = {"default", "pytorch", "min-comm"};
/* the selected set; atomic because worker threads read it while running ops */
static int rules_selected = LT_OP_RULES_PYTORCH;

const char *lt_op_rules_name(lt_op_rules r) {
    return lt__name_of(rules_names, LT_OP_RULES_COUNT, (int)r);
}

lt_status lt_op_rules_parse(const char *s, lt_op_rules *out) {
    if (s && !strcmp(s, "pytorch")) return *out = LT_OP_RULES_PYTORCH, LT_OK;
    if (s && !strcmp(s, "min-comm")) return *out = LT_OP_RULES_MIN_COMM, LT_OK;
    return lt__err(LT_INVALID, "unknown rule set '%s' (known: pytorch, min-comm)", s ? s : "");
}

void lt_op_rules_select(lt_op_rules r) {
    int v = r == LT_OP_RULES_MIN_COMM ? LT_OP_RULES_MIN_COMM : LT_OP_RULES_PYTORCH;
    __atomic_store_n(&rules_selected, v, __ATOMIC_RELAXED);
}

lt_op_rules lt_op_rules_selected(void) {
    return (lt_op_rules)__atomic_load_n(&rules_selected, __ATOMIC_RELAXED);
}
