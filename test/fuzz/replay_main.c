/* test/fuzz/replay_main.c — runs a fuzz harness without libFuzzer.
 *
 * `replay_<name> PATH...` feeds every regular file under each PATH (files,
 * or directories walked recursively in sorted order) to the harness's
 * LLVMFuzzerTestOneInput, one at a time, naming each on stderr first so a
 * crash points at its input. This is how `make test` replays the seed
 * corpus and test/fuzz/regressions/ with the normal compiler (gcc, ASan,
 * valgrind) where libFuzzer is not available. Exit status: 0 when every
 * input ran, 2 when a path could not be read (a harness that finds a broken
 * invariant aborts the process instead).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LT_FUZZ_REPLAY_MAIN
#include "test/fuzz/fuzz.h"

static int nrun;

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return 2;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            fprintf(stderr, "replay: %s: out of memory\n", path);
            return 2;
        }
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        uint8_t *nb = realloc(buf, cap * 2);
        if (!nb) free(buf);
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        fprintf(stderr, "replay: %s: read error\n", path);
        return 2;
    }
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
    /* an exact-size copy, so ASan sees a read past the input */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return 2;
    }
    if (len) memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    nrun++;
    return 0;
}

static int run_path(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return 2;
    }
    if (!S_ISDIR(sb.st_mode)) return S_ISREG(sb.st_mode) ? run_file(path) : 0;
    struct dirent **ents;
    int n = scandir(path, &ents, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *nm = ents[i]->d_name;
        if (nm[0] != '.' && !rc) {
            size_t len = strlen(path) + strlen(nm) + 2;
            char *sub = malloc(len);
            if (!sub) rc = 2;
            else {
                snprintf(sub, len, "%s/%s", path, nm);
                rc = run_path(sub);
                free(sub);
            }
        }
        free(ents[i]);
    }
    free(ents);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) rc = run_path(argv[i]);
    fprintf(stderr, "replay: %d inputs\n", nrun);
    return rc;
}
