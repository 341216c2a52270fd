/* test/fuzz/fuzz_parsers.c — the text parsers, each with a round trip.
 *
 * The input, as a C string, goes to every parser a user's text reaches:
 * one placement, a placement list, a mesh, a shape (the CLI's), a dtype, an
 * init, a reduce op, an op name. Whatever parses must format to text that
 * parses back to the same value, and formatting that value again must give
 * the same text (parse o format o parse == parse). Errors must carry a
 * message. Any violation aborts with both texts.
 */
#include "test/fuzz/fuzz.h"

#include "localtensor/kernels/tensor.h"
#include "localtensor/localtensor.h"
#include "tools/cli/cli.h"
#include "kernels/status_impl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    return 0;
}

/* A failed parse must say why. */
static void need_message(const char *parser, const char *s) {
    if (!lt_errmsg()[0]) fuzz_fail("%s('%s') failed without a message", parser, s);
}

/* Room for the longest formatted list: 8 placements of 64 explicit sizes. */
#define TXT_MAX 16384

static void placement_round_trip(const char *s, char *t1, char *t2) {
    lt_placement a, b;
    lt__err_clear();
    if (lt_placement_parse(s, &a)) {
        need_message("lt_placement_parse", s);
        return;
    }
    int w = lt_placement_format(&a, t1, TXT_MAX);
    if (w < 0 || w >= TXT_MAX) fuzz_fail("lt_placement_format('%s') wanted %d bytes", s, w);
    if (lt_placement_parse(t1, &b))
        fuzz_fail("'%s' formats as '%s', which does not parse: %s", s, t1, lt_errmsg());
    if (!lt_placement_equal(&a, &b)) fuzz_fail("'%s' -> '%s' parses to another placement", s, t1);
    lt_placement_format(&b, t2, TXT_MAX);
    if (strcmp(t1, t2)) fuzz_fail("'%s' formats as '%s', then as '%s'", s, t1, t2);
}

static void placements_round_trip(const char *s, char *t1, char *t2) {
    lt_placement a[LT_MESH_MAX_DIMS], b[LT_MESH_MAX_DIMS];
    int na = -1, nb = -1;
    lt__err_clear();
    if (lt_placements_parse(s, a, LT_MESH_MAX_DIMS, &na)) {
        need_message("lt_placements_parse", s);
        return;
    }
    if (na < 1 || na > LT_MESH_MAX_DIMS)
        fuzz_fail("lt_placements_parse('%s') gave %d entries", s, na);
    int w = lt_placements_format(a, na, t1, TXT_MAX);
    if (w < 0 || w >= TXT_MAX) fuzz_fail("lt_placements_format('%s') wanted %d bytes", s, w);
    if (lt_placements_parse(t1, b, LT_MESH_MAX_DIMS, &nb))
        fuzz_fail("'%s' formats as '%s', which does not parse: %s", s, t1, lt_errmsg());
    if (na != nb || !lt_placements_equal(a, b, na))
        fuzz_fail("'%s' -> '%s' parses to other placements", s, t1);
    lt_placements_format(b, nb, t2, TXT_MAX);
    if (strcmp(t1, t2)) fuzz_fail("'%s' formats as '%s', then as '%s'", s, t1, t2);
    /* the checks against a mesh must not crash whatever the list holds */
    lt_mesh m;
    int shape[LT_MESH_MAX_DIMS];
    for (int i = 0; i < na; i++) shape[i] = 1 + i % 3;
    if (!lt_mesh_init(&m, na, shape, NULL)) {
        lt_placement norm[LT_MESH_MAX_DIMS];
        for (int nd = 0; nd <= 3; nd++) {
            lt__err_clear();
            if (lt_placements_check(&m, nd, a, na, norm)) {
                need_message("lt_placements_check", s);
                continue;
            }
            lt_order_entry ord[LT_MESH_MAX_DIMS];
            int nord;
            lt__err_clear();
            if (lt_explicit_order(shape, na, norm, na, ord, &nord))
                need_message("lt_explicit_order", s);
        }
    }
}

static void mesh_round_trip(const char *s, char *t1, char *t2) {
    lt_mesh a, b;
    lt__err_clear();
    if (lt_mesh_parse(s, &a)) {
        need_message("lt_mesh_parse", s);
        return;
    }
    int64_t world = 1;
    for (int i = 0; i < a.ndim; i++) world *= a.shape[i];
    if (a.ndim < 1 || a.ndim > LT_MESH_MAX_DIMS || world != a.world || world > LT_MESH_MAX_WORLD)
        fuzz_fail("lt_mesh_parse('%s') gave %d dims, world %d", s, a.ndim, a.world);
    lt_mesh_format(&a, t1, TXT_MAX);
    if (lt_mesh_parse(t1, &b))
        fuzz_fail("mesh '%s' formats as '%s', which does not parse: %s", s, t1, lt_errmsg());
    if (!lt_mesh_equal(&a, &b)) fuzz_fail("mesh '%s' -> '%s' parses to another mesh", s, t1);
    lt_mesh_format(&b, t2, TXT_MAX);
    if (strcmp(t1, t2)) fuzz_fail("mesh '%s' formats as '%s', then as '%s'", s, t1, t2);
    /* every rank's coordinate maps back to it, and groups hold it */
    for (int r = 0; r < a.world && r < 4096; r++) {
        int c[LT_MESH_MAX_DIMS];
        lt_mesh_coord(&a, r, c);
        if (lt_mesh_rank(&a, c) != r)
            fuzz_fail("mesh '%s': rank %d does not round-trip its coordinate", s, r);
        for (int d = 0; d < a.ndim; d++) {
            int pos, g = lt_mesh_group_of(&a, d, r, &pos);
            if (g < 0 || g >= lt_mesh_ngroups(&a, d) || pos != c[d])
                fuzz_fail("mesh '%s': rank %d: group %d pos %d along dim %d", s, r, g, pos, d);
        }
    }
}

static void shape_round_trip(const char *s, char *t1, char *t2) {
    int na = -1, nb = -1;
    int64_t a[LT_MAX_DIMS], b[LT_MAX_DIMS];
    lt__err_clear();
    if (lt_cli_parse_shape(s, &na, a)) {
        need_message("lt_cli_parse_shape", s);
        return;
    }
    if (na < 0 || na > LT_MAX_DIMS) fuzz_fail("shape '%s' gave %d dims", s, na);
    for (int d = 0; d < na; d++)
        if (a[d] < 0) fuzz_fail("shape '%s' gave a negative size", s);
    lt_shape_format(na, a, t1, TXT_MAX);
    if (lt_cli_parse_shape(t1, &nb, b))
        fuzz_fail("shape '%s' formats as '%s', which does not parse: %s", s, t1, lt_errmsg());
    if (na != nb || memcmp(a, b, sizeof(int64_t) * (size_t)na))
        fuzz_fail("shape '%s' -> '%s' parses to another shape", s, t1);
    lt_shape_format(nb, b, t2, TXT_MAX);
    if (strcmp(t1, t2)) fuzz_fail("shape '%s' formats as '%s', then as '%s'", s, t1, t2);
}

/* Names with a one-to-one spelling: parse, name, parse gives the same value. */
static void names_round_trip(const char *s, char *t1) {
    lt_dtype dt, dt2;
    lt__err_clear();
    if (!lt_dtype_parse(s, &dt)) {
        if (lt_dtype_parse(lt_dtype_name(dt), &dt2) || dt != dt2)
            fuzz_fail("dtype '%s' does not round-trip", s);
    } else {
        need_message("lt_dtype_parse", s);
    }
    lt_redop op, op2;
    lt__err_clear();
    if (!lt_redop_parse(s, &op)) {
        if (lt_redop_parse(lt_redop_name(op), &op2) || op != op2)
            fuzz_fail("reduce op '%s' does not round-trip", s);
    } else {
        need_message("lt_redop_parse", s);
    }
    lt_op_kind k, k2;
    lt__err_clear();
    if (!lt_op_parse(s, &k)) {
        if (lt_op_parse(lt_op_name(k), &k2) || k != k2) fuzz_fail("op '%s' does not round-trip", s);
    } else {
        need_message("lt_op_parse", s);
    }
    lt_init in, in2;
    lt__err_clear();
    if (!lt_init_parse(s, &in)) {
        lt_init_format(&in, t1, TXT_MAX);
        if (lt_init_parse(t1, &in2) || in.kind != in2.kind || in.seed != in2.seed)
            fuzz_fail("init '%s' -> '%s' does not round-trip", s, t1);
    } else {
        need_message("lt_init_parse", s);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = fuzz_cstr(data, size);
    char *t1 = malloc(TXT_MAX), *t2 = malloc(TXT_MAX);
    if (s && t1 && t2) {
        fuzz_paint_stack();
        placement_round_trip(s, t1, t2);
        placements_round_trip(s, t1, t2);
        mesh_round_trip(s, t1, t2);
        shape_round_trip(s, t1, t2);
        names_round_trip(s, t1);
    }
    free(s);
    free(t1);
    free(t2);
    return 0;
}
