#!/usr/bin/env bash
# tools/check-install.sh BUILD — what a user gets from `make install`, checked
# the way a user would use it.
#
# Installs BUILD's libraries with `make install DESTDIR=SCRATCH PREFIX=/usr/local`,
# then checks that:
#   - the installed include/localtensor/ is a byte-identical copy of the
#     repository's include/localtensor/ (install rewrites nothing);
#   - every header is under include/localtensor/ and nothing else is in
#     include/ (no top-level kernels/ or collectives_sim/ on a user's path);
#     no internal header (*_impl.h, kernels/alloc.h) is installed;
#   - the shared library exports no internal (lt__) symbol, and the library
#     needs neither cJSON nor libyaml (those are the tools'): not in what
#     liblocaltensor.so links, not in what either .pc file asks for;
#   - each installed header compiles on its own with only the Cflags of
#     localtensor.pc (so no header includes one that is not installed);
#   - the C example of README.md ("From C") builds with the README's two
#     pkg-config lines: shared (it must need liblocaltensor.so and run with
#     LD_LIBRARY_PATH) and static (it must not need liblocaltensor.so and run
#     without it), and prints exactly the output the README shows;
#   - the documentation is installed under share/doc/localtensor/;
#   - a build with MPI (BUILD/liblocaltensor-mpi.a) also installs the MPI
#     engine: liblocaltensor-mpi.a, collectives_sim/engine_mpi.h and
#     localtensor-mpi.pc, with which a small program builds and, run as one
#     process (no mpirun needed), all-gathers over a 2-rank mesh on the engine.
# The installed .pc files are used as installed, with only their prefix line
# pointed at the scratch tree. A sanitizer build (make asan) is detected from
# the library's symbols and the example is built with the same sanitizers;
# CC, when set, is the compiler (default: the one that built BUILD).
# Prints one summary line; the details of a failure go to stderr.
# Exit status: 0 all good, 1 a check failed, 2 bad usage.
set -u
export LC_ALL=C

build=${1:-}
root=$(cd "$(dirname "$0")/.." && pwd)
make_build=$build                     # as make knows it (relative to the repository)
case $build in /*) ;; *) build="$root/$build" ;; esac
if [ -z "$make_build" ] || [ ! -f "$build/liblocaltensor.a" ]; then
  echo "usage: tools/check-install.sh BUILD (a build folder of the repository holding" \
       "liblocaltensor.a: run make first)" >&2
  exit 2
fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
prefix=$dest/usr/local
fails=0
fail() { echo "check-install: $*" >&2; fails=$((fails+1)); }

# ---- the compiler and sanitizers BUILD was made with ------------------------
cc=${CC:-}
if [ -z "$cc" ]; then
  if readelf -p .comment "$build/liblocaltensor.a" 2>/dev/null | grep -q 'clang version'; then cc=clang; else cc=cc; fi
fi
san=()
goals=(install)
if nm "$build/liblocaltensor.a" 2>/dev/null | grep -q '__asan_report'; then
  san=(-fsanitize=address,undefined -fno-omit-frame-pointer)
  goals=(asan install)
fi
# a CUDA build (make CUDA=1) installs with its CUDA libraries in the .pc files
ar t "$build/liblocaltensor.a" 2>/dev/null | grep -qx 'backend_cuda.o' && goals=(CUDA=1 "${goals[@]}")

# ---- install ----------------------------------------------------------------
# (a plain sub-make: the parent's jobserver is not ours to use)
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$root" --no-print-directory \
      BUILD="$make_build" DESTDIR="$dest" PREFIX=/usr/local "${goals[@]}" > "$tmp/install.log" 2>&1; then
  tail -20 "$tmp/install.log" >&2
  fail "make install DESTDIR=... PREFIX=/usr/local failed"
  echo "FAILED ($fails problems)"
  exit 1
fi

# ---- layout -----------------------------------------------------------------
for f in include/localtensor/localtensor.h include/localtensor/kernels/tensor.h \
         include/localtensor/collectives_sim/mesh.h lib/liblocaltensor.a lib/liblocaltensor.so \
         lib/pkgconfig/localtensor.pc lib/pkgconfig/localtensor-static.pc bin/localtensor \
         share/doc/localtensor/README.md share/doc/localtensor/docs/SEMANTICS.md \
         share/doc/localtensor/docs/DESIGN.md share/doc/localtensor/scenarios/README.md; do
  [ -f "$prefix/$f" ] || fail "PREFIX/$f was not installed"
done
others=$(cd "$prefix/include" && ls -A | grep -vx localtensor)
[ -z "$others" ] && [ ! -e "$prefix/include/localtensor/localtensor/" ] ||
  fail "include/ holds more than localtensor/: $(cd "$prefix/include" && find . -maxdepth 2 | tr '\n' ' ')"
mapfile -t headers < <(cd "$prefix/include" && find localtensor -name '*.h' | sort)
[ ${#headers[@]} -ge 10 ] || fail "only ${#headers[@]} headers installed"
internal=$(printf '%s\n' "${headers[@]}" | grep -E '_impl\.h$|/kernels/alloc\.h$')
[ -z "$internal" ] || fail "internal headers were installed: $(echo $internal)"
# install is a copy: the installed tree equals the repository's include/
# localtensor/ file for file and byte for byte (the MPI engine's header only
# in a build with MPI)
want=$(cd "$root/include" && find localtensor -name '*.h' | sort)
ar t "$build/liblocaltensor-mpi.a" >/dev/null 2>&1 ||
  want=$(printf '%s\n' "$want" | grep -vx 'localtensor/collectives_sim/engine_mpi.h')
[ "$want" = "$(printf '%s\n' "${headers[@]}")" ] ||
  fail "installed headers differ from include/localtensor/: $(diff <(echo "$want") <(printf '%s\n' "${headers[@]}") | grep '^[<>]' | head -5 | tr '\n' ' ')"
for h in "${headers[@]}"; do
  cmp -s "$root/include/$h" "$prefix/include/$h" || fail "include/$h was changed on install"
done
# the shared library's interface is its lt_ functions only
exported=$(nm -D --defined-only "$prefix/lib/liblocaltensor.so" 2>/dev/null | awk '$3 ~ /^lt__/ {print $3}')
[ -z "$exported" ] || fail "liblocaltensor.so exports $(echo "$exported" | wc -l) internal symbols: $(echo $exported | cut -c1-200)"
# versioned libtool-style: liblocaltensor.so -> liblocaltensor.so.MAJOR ->
# liblocaltensor.so.VERSION (the file), whose SONAME is liblocaltensor.so.MAJOR;
# VERSION is what the installed CLI and localtensor.pc report
version=$("$prefix/bin/localtensor" --version 2>/dev/null | awk '{print $2}')
major=${version%%.*}
[ -n "$version" ] && [ -f "$prefix/lib/liblocaltensor.so.$version" ] && [ ! -L "$prefix/lib/liblocaltensor.so.$version" ] ||
  fail "lib/liblocaltensor.so.$version (the library file of version '$version') was not installed"
[ "$(readlink "$prefix/lib/liblocaltensor.so")" = "liblocaltensor.so.$major" ] &&
  [ "$(readlink "$prefix/lib/liblocaltensor.so.$major")" = "liblocaltensor.so.$version" ] ||
  fail "lib/liblocaltensor.so and lib/liblocaltensor.so.$major are not the links to liblocaltensor.so.$version"
readelf -d "$prefix/lib/liblocaltensor.so" | grep -q "SONAME.*\[liblocaltensor\.so\.$major\]" ||
  fail "liblocaltensor.so's SONAME is not liblocaltensor.so.$major: $(readelf -d "$prefix/lib/liblocaltensor.so" | grep SONAME)"
grep -qx "Version: $version" "$prefix/lib/pkgconfig/localtensor.pc" ||
  fail "localtensor.pc does not say Version: $version"
readelf -d "$prefix/lib/liblocaltensor.so" | grep -E 'NEEDED.*(cjson|yaml)' &&
  fail "liblocaltensor.so links cJSON or libyaml (the tools' dependencies, not the library's)"
# every quoted include of an installed header must name an installed header
for h in "${headers[@]}"; do
  grep -o '^#include "[^"]*"' "$prefix/include/$h" | sed 's/^#include "//; s/"$//' | while read -r inc; do
    [ -f "$prefix/include/$inc" ] || echo "$h includes \"$inc\", which is not installed"
  done
done > "$tmp/includes.log"
[ -s "$tmp/includes.log" ] && fail "$(cat "$tmp/includes.log")"

# ---- pkg-config, as installed (only the prefix line moved) -------------------
mkdir -p "$tmp/pc"
for pc in localtensor localtensor-static; do
  grep -qx 'prefix=/usr/local' "$prefix/lib/pkgconfig/$pc.pc" ||
    fail "$pc.pc does not say prefix=/usr/local"
  sed "s|^prefix=.*|prefix=$prefix|" "$prefix/lib/pkgconfig/$pc.pc" > "$tmp/pc/$pc.pc"
done
export PKG_CONFIG_PATH=$tmp/pc
cflags=$(pkg-config --cflags localtensor) || fail "pkg-config --cflags localtensor failed"
for pc in localtensor localtensor-static; do
  libs=$(pkg-config --libs --static "$pc") || fail "pkg-config --libs --static $pc failed"
  case " $libs " in *-lcjson*|*-lyaml*) fail "$pc.pc asks for cJSON or libyaml: $libs" ;; esac
done
case " $cflags " in *" -I$prefix/include "*) ;; *) fail "localtensor.pc Cflags ($cflags) lack -I PREFIX/include" ;; esac
case " $cflags " in *"/include/localtensor "*) fail "localtensor.pc puts include/localtensor itself on the path: $cflags" ;; esac

cd "$tmp" || exit 2
for h in "${headers[@]}"; do
  printf '#include "%s"\nint lt_check_install_tu;\n' "$h" > one.c
  # shellcheck disable=SC2086
  "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only $cflags one.c 2> one.log ||
    fail "installed $h does not compile on its own with pkg-config --cflags localtensor: $(head -5 one.log)"
done

# ---- the README's C example, both ways ----------------------------------------
awk '/^## From C/ { on = 1 } on && /^```c$/ { code = 1; next } code && /^```$/ { exit } code' \
  "$root/README.md" > example.c
awk '/^## From C/ { on = 1 } on && /^```console$/ { c = 1; next } c && /^\$ / { out = 1; next }
     out && /^```$/ { exit } out' "$root/README.md" > expected.txt
grep -q 'localtensor/localtensor.h' example.c || fail "README.md has no C example under 'From C'"
[ -s expected.txt ] || fail "README.md shows no output of the C example"
grep -q 'pkg-config --cflags --libs localtensor)' "$root/README.md" ||
  fail "README.md does not show the shared pkg-config line this script checks"
grep -q 'pkg-config --cflags --libs --static localtensor-static)' "$root/README.md" ||
  fail "README.md does not show the static pkg-config line this script checks"

# shellcheck disable=SC2046
if "$cc" -std=c11 "${san[@]}" example.c $(pkg-config --cflags --libs localtensor) -o ex_shared 2> cc.log; then
  readelf -d ex_shared | grep -q "NEEDED.*\[liblocaltensor\.so\.$major\]" ||
    fail "the shared build does not need liblocaltensor.so.$major (the SONAME)"
  LD_LIBRARY_PATH=$prefix/lib ./ex_shared > shared.txt 2>&1 || fail "the shared example exited $?: $(head -5 shared.txt)"
  diff -u expected.txt shared.txt > diff.txt || fail "the shared example's output differs from README.md:
$(cat diff.txt)"
else
  fail "the shared build failed: $(head -10 cc.log)"
fi
# shellcheck disable=SC2046
if "$cc" -std=c11 "${san[@]}" example.c $(pkg-config --cflags --libs --static localtensor-static) -o ex_static 2> cc.log; then
  ! readelf -d ex_static | grep -q 'liblocaltensor' ||
    fail "the static build still needs liblocaltensor.so"
  env -u LD_LIBRARY_PATH ./ex_static > static.txt 2>&1 || fail "the static example exited $?: $(head -5 static.txt)"
  diff -u expected.txt static.txt > diff.txt || fail "the static example's output differs from README.md:
$(cat diff.txt)"
else
  fail "the static build failed: $(head -10 cc.log)"
fi

# ---- the MPI engine, when BUILD has it --------------------------------------------
mpi_note=""
if [ -f "$build/liblocaltensor-mpi.a" ]; then
  for f in lib/liblocaltensor-mpi.a lib/pkgconfig/localtensor-mpi.pc include/localtensor/collectives_sim/engine_mpi.h; do
    [ -f "$prefix/$f" ] || fail "PREFIX/$f was not installed (a build with MPI)"
  done
  sed "s|^prefix=.*|prefix=$prefix|" "$prefix/lib/pkgconfig/localtensor-mpi.pc" > "$tmp/pc/localtensor-mpi.pc"
  cat > mpi_ex.c <<'CEOF'
#include <mpi.h>
#include <stdio.h>
#include "localtensor/localtensor.h"
#include "localtensor/collectives_sim/engine_mpi.h"
int main(void) {
    MPI_Init(NULL, NULL);
    lt_mesh m;
    lt_comm *c = NULL;
    lt_tensor *in[2] = {0}, *out[2] = {0};
    int64_t n = 2;
    double v[2][2] = {{1, 2}, {3, 4}};
    int ok = lt_mesh_parse("2", &m) == LT_OK && lt_comm_new_engine(&m, lt_engine_mpi(), &c) == LT_OK;
    for (int r = 0; ok && r < 2; r++) ok = lt_tensor_from_doubles(LT_F32, 1, &n, v[r], 2, &in[r]) == LT_OK;
    ok = ok && lt_all_gather(c, 0, in, 0, out) == LT_OK;
    if (ok) {
        const float *f = lt_data(out[1]);
        printf("engine %s: %g %g %g %g\n", lt_comm_engine_name(c), f[0], f[1], f[2], f[3]);
    } else {
        printf("error: %s\n", lt_errmsg());
    }
    for (int r = 0; r < 2; r++) lt_tensor_free(in[r]), lt_tensor_free(out[r]);
    lt_comm_free(c);
    lt_engine_mpi_release();
    MPI_Finalize();
    return ok ? 0 : 1;
}
CEOF
  mflags=$(pkg-config --cflags --libs --static localtensor-mpi) || fail "pkg-config --libs --static localtensor-mpi failed"
  # shellcheck disable=SC2086
  if "$cc" -std=c11 "${san[@]}" mpi_ex.c $(pkg-config --cflags ompi-c 2>/dev/null) $mflags -o mpi_ex 2> cc.log; then
    out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader \
          ASAN_OPTIONS=detect_leaks=0 timeout 60 ./mpi_ex 2>&1)
    [ "$out" = "engine mpi: 1 2 3 4" ] || fail "the MPI engine example printed '$out', expected 'engine mpi: 1 2 3 4'"
    mpi_note=", the MPI engine (localtensor-mpi.pc)"
  else
    fail "the MPI engine example did not build with localtensor-mpi.pc: $(head -10 cc.log)"
  fi
fi

if [ $fails -eq 0 ]; then
  echo "${#headers[@]} headers under include/localtensor/, README example shared + static$mpi_note"
else
  echo "FAILED ($fails problems)"
  exit 1
fi
