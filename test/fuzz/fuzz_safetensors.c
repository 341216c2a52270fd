/* test/fuzz/fuzz_safetensors.c — the safetensors header parser
 * (tools/checkpoint/safetensors.c) on hostile file images.
 *
 * The input is a whole file: 8-byte length, header, data. Whatever parses
 * must keep the invariant of tools/checkpoint/safetensors.h (every entry's
 * bytes inside the data section, exactly its shape times its dtype's size,
 * no two entries sharing bytes or a name); whatever is refused must say
 * why. Any violation aborts with the entry it concerns.
 */
#include "test/fuzz/fuzz.h"

#include "kernels/status_impl.h"
#include "tools/checkpoint/safetensors.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    return 0;
}

static void check_entry(const lt_st_file *f, int i) {
    const lt_st_entry *e = &f->e[i];
    uint64_t data = f->size - f->data_start, n = 1;
    if (f->data_start > f->size)
        fuzz_fail("header ends at %llu, past the file's %llu bytes",
                  (unsigned long long)f->data_start, (unsigned long long)f->size);
    if (e->begin > e->end || e->end > data)
        fuzz_fail("'%s' [%llu, %llu] outside %llu data bytes", e->name,
                  (unsigned long long)e->begin, (unsigned long long)e->end,
                  (unsigned long long)data);
    if (e->ndim < 0 || e->ndim > LT_MAX_DIMS) fuzz_fail("'%s' has %d dims", e->name, e->ndim);
    for (int d = 0; d < e->ndim; d++) {
        if (e->shape[d] < 0) fuzz_fail("'%s' has a negative size", e->name);
        n *= (uint64_t)e->shape[d];
    }
    if (n * lt_dtype_size(e->dtype) != e->end - e->begin)
        fuzz_fail("'%s': shape and span disagree", e->name);
    for (int j = 0; j < i; j++) {
        const lt_st_entry *o = &f->e[j];
        if (!strcmp(o->name, e->name)) fuzz_fail("'%s' twice", e->name);
        if (e->begin < e->end && o->begin < o->end && e->begin < o->end && o->begin < e->end)
            fuzz_fail("'%s' and '%s' overlap", o->name, e->name);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lt_st_file *f = NULL;
    lt__err_clear();
    lt_status st = lt__st_parse_mem(data, size, "fuzz.safetensors", &f);
    if (st) {
        if (f) fuzz_fail("an error (%d) left a file", st);
        if (!lt_errmsg()[0]) fuzz_fail("refused without a message");
        return 0;
    }
    for (int i = 0; i < f->n; i++) check_entry(f, i);
    for (int i = 0; i < f->nmeta; i++)
        if (lt__st_meta(f, f->meta_keys[i]) == NULL)
            fuzz_fail("metadata key '%s' not found", f->meta_keys[i]);
    lt__st_close(f);
    return 0;
}
