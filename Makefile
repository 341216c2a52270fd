# localtensor — build, test, run, install.
#   make            build/liblocaltensor.a, build/liblocaltensor.so (the library:
#                   kernels/, collectives_sim/, localtensor/), build/liblocaltensor-
#                   tools.a (tools/cli, tools/scenario, tools/render) and
#                   build/localtensor, linked from both
#   make deps       install the missing Debian packages (the one step that does;
#                   run and test take it first)
#   make run        install missing Debian packages, build, run the scenario library
#   make test       install missing Debian packages, build, run unit tests + scenarios
#                   (and the rest of tools/run-tests.sh: MPI, fuzz replays, install)
#   make check      the edit-compile-test loop: the unit tests and the scenario
#                   library on the CPU backend only (no cuda-emu reruns, MPI, fuzz
#                   replays or install check); T=NAME[,NAME...] only those unit
#                   tests (test/test_NAME.c), K=PATTERN only their tests whose name
#                   contains PATTERN (the binaries' -k; test/README.md)
#   make test-mpi-full  the MPI engine's whole suite, its long sweeps too (the
#                   sweep files at -np 4 and on 8 processes: `make test` leaves
#                   them out); CI runs it
#   make asan       the build under AddressSanitizer + UBSan, in build-asan/ (with
#                   CC=clang, build-asan-clang/)
#   make asan test  that build, then the tests on it
#   make fuzz       the libFuzzer harnesses of test/fuzz/ (clang, ASan + UBSan,
#                   build-fuzz/), FUZZ_SECONDS (60) each; fails on a finding
#   make fault      allocation fault injection over the C API and the scenario
#                   library under ASan (build-asan/): every OOM path is clean
#   make valgrind   the unit tests under valgrind (build-vg/, no -march=native)
#   make bench      benchmarks (ratios against memcpy / one cblas call); with
#                   MPI also the MPI engine vs in-process rows and mpirun
#                   start-up (tools/bench/run-mpi-bench.sh)
#   make MPI=1      also the MPI engine (collectives_sim/engine_mpi*.c) in
#                   build/liblocaltensor-mpi.a, linked into the CLI (run
#                   --engine mpi) and the MPI tests; the default wherever
#                   mpicc is on PATH (MPI=0 turns it off). liblocaltensor
#                   itself never links libmpi.
#   make CUDA=1 ... the same targets with the CUDA backend built in (nvcc,
#                   cuBLAS; build-cuda/, build-bench-cuda/)
#   make install    PREFIX=/usr/local (DESTDIR honoured): headers under
#                   include/localtensor/, libs, localtensor.pc and
#                   localtensor-static.pc, the CLI, docs in share/doc/localtensor/;
#                   with MPI also liblocaltensor-mpi.a, engine_mpi.h and
#                   localtensor-mpi.pc

PREFIX  ?= /usr/local
CC      ?= cc
# The library needs OpenBLAS only; libcjson and libyaml are the tools' (CLI,
# scenario engine, reports), cmocka the tests'.
LIB_PKGS  := openblas
TOOL_PKGS := libcjson yaml-0.1
WERROR  ?=
OPT     ?= -O2
CFLAGS_BASE := -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Wshadow \
               -Wstrict-prototypes -fPIC -g -Iinclude -I. \
               $(shell pkg-config --cflags $(LIB_PKGS) $(TOOL_PKGS) cmocka 2>/dev/null)
LIB_LDLIBS  := $(shell pkg-config --libs $(LIB_PKGS) 2>/dev/null) -lm -lpthread
TOOL_LDLIBS := $(shell pkg-config --libs $(TOOL_PKGS) 2>/dev/null)
# CUDA=1 adds the CUDA backend (kernels/cuda/*.cu, nvcc, cuBLAS) in its own
# folder, build-cuda, so its objects never mix with a plain build's.
BUILD   ?= $(if $(filter 1,$(CUDA)),build-cuda,build)
SAN     ?=
EXTRA   ?=
# Open MPI's compile and link flags come from its wrapper (mpicc --showme),
# so any CC (gcc, clang, the sanitizer builds) compiles the MPI engine.
MPI ?= $(if $(shell command -v mpicc 2>/dev/null),1,0)
ifeq ($(MPI),1)
MPI_CFLAGS := $(patsubst -I%,-isystem %,$(shell mpicc --showme:compile 2>/dev/null))
MPI_LDLIBS := $(shell mpicc --showme:link 2>/dev/null)
ifeq ($(strip $(MPI_LDLIBS)),)
$(error make MPI=1: mpicc was not found (Debian: apt-get install openmpi-bin libopenmpi-dev; make deps installs them))
endif
endif

# The sanitizer build (AddressSanitizer + UBSan) lives in its own folder,
# build-asan (build-asan-clang with CC=clang, so gcc and clang objects never
# mix). `make asan` builds it; given with other goals (`make asan test`,
# `make asan install`) it also points them at that folder and those flags,
# decided before any path below is computed, and the goals run one after
# the other (each one's compiling still runs in parallel).
ASAN_BUILD := build-asan$(if $(findstring clang,$(notdir $(CC))),-clang)
ASAN_SAN   := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ifneq ($(filter asan,$(MAKECMDGOALS)),)
BUILD := $(ASAN_BUILD)
SAN   := $(ASAN_SAN)
OPT   := -O1
.NOTPARALLEL:
endif
CFLAGS  := $(CFLAGS_BASE) $(OPT) $(SAN) $(WERROR) $(EXTRA)

# The library: the three floors, nothing of tools/.
MPI_SRC   := $(wildcard collectives_sim/engine_mpi*.c)
LIB_SRC   := $(filter-out $(MPI_SRC),$(wildcard kernels/*.c collectives_sim/*.c localtensor/*.c localtensor/*/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
# The CUDA backend: nvcc from PATH (or NVCC=), the toolkit's cudart and
# cuBLAS; device code for CUDA_ARCH: machine code for Ampere (sm_80) and
# Hopper (sm_90), and sm_90's PTX, which the driver compiles for newer GPUs
# (about 1.5 s at a process's start when its cache is cold).
# WERROR=-Werror makes nvcc's and the host compiler's warnings errors too.
ifeq ($(CUDA),1)
NVCC      ?= nvcc
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC) 2>/dev/null))
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90
CU_SRC    := $(wildcard kernels/cuda/*.cu)
CU_OBJ    := $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
LIB_OBJ   += $(CU_OBJ)
CFLAGS      += -DLT_HAVE_CUDA=1
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart -lstdc++
LIB_LDLIBS  += $(CUDA_LIBS)
NVCCFLAGS := -std=c++17 $(CUDA_ARCH) -O2 -g -Iinclude -I. -DLT_HAVE_CUDA=1 --fmad=false \
             -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra \
             $(if $(WERROR),-Werror all-warnings -Xcompiler -Werror)
$(BUILD)/obj/%.o: %.cu Makefile
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@
-include $(CU_OBJ:%.o=%.d)
endif
# The shared library exports only what public headers mark LT_API
# (kernels/export.h); lt__ internals stay inside it.
$(LIB_OBJ): CFLAGS += -fvisibility=hidden
# The tools built on it (a static library the CLI and the tests link):
# the CLI's subcommands, the scenario engine, the renderers and reports.
TOOLS_SRC := $(filter-out tools/cli/main.c tools/cli/cli_mpi.c, $(wildcard tools/cli/*.c tools/scenario/*.c tools/render/*.c tools/picture/*.c tools/checkpoint/*.c))
TOOLS_OBJ := $(TOOLS_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC  := $(wildcard test/test_*.c)
TEST_BIN  := $(TEST_SRC:test/%.c=$(BUILD)/%)
BENCH_SRC := $(wildcard tools/bench/*.c)
FAULT_SRC := $(wildcard test/fault/*.c)
LIBS      := $(BUILD)/liblocaltensor-tools.a $(BUILD)/liblocaltensor.a
LDLIBS    := $(TOOL_LDLIBS) $(LIB_LDLIBS)
# The MPI engine: its own archive, linked (with libmpi) only into the CLI and
# the MPI tests (test/mpi/), which run under mpirun (tools/run-mpi-tests.sh).
# The CLI's `run` knows --engine mpi when LT_HAVE_MPI is defined.
MPI_OBJ   := $(MPI_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/tools/cli/cli_mpi.o
MPI_TEST_SRC := $(wildcard test/mpi/*.c)
MPI_TEST_BIN := $(MPI_TEST_SRC:test/mpi/%.c=$(BUILD)/mpi_%)
ifeq ($(MPI),1)
CLI_MPI_LIBS := $(BUILD)/liblocaltensor-mpi.a
CLI_MPI_LDLIBS := $(MPI_LDLIBS)
$(MPI_OBJ) $(MPI_TEST_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/tools/bench/mpi/bench_mpi.o: CFLAGS += $(MPI_CFLAGS)
$(BUILD)/obj/tools/cli/main.o: CFLAGS += -DLT_HAVE_MPI
endif
# test/fuzz/fuzz_<name>.c: libFuzzer harnesses; replay_<name> is the same
# harness with a plain main that `make test` runs over seeds and regressions.
FUZZ_NAMES := $(patsubst test/fuzz/fuzz_%.c,%,$(wildcard test/fuzz/fuzz_*.c))
REPLAY_BIN := $(FUZZ_NAMES:%=$(BUILD)/replay_%)
FUZZ_BUILD ?= build-fuzz
FUZZ_CC    ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SAN   := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
              -fno-sanitize-recover=undefined
# lower loader limits (tools/scenario/scenario.h; loops: scenario_impl.h) so one fuzz input runs in milliseconds
FUZZ_CAPS  := -DLT_SC_MAX_NODES=20000 -DLT_SC_MAX_ELEMS=65536 -DLT_SC_MAX_CASES=64 \
              -DLT_SC_MAX_UNROLLED=4096 -DLT_SC_MAX_LOOP_ITERS=4096

.PHONY: all deps run test check check-bins test-mpi-full unit scenarios asan valgrind bench install clean fuzz fault test-browser

all: $(BUILD)/liblocaltensor.a $(BUILD)/liblocaltensor.so $(BUILD)/localtensor $(if $(CLI_MPI_LIBS),$(MPI_TEST_BIN))

# Installing the Debian packages the build needs is this one step; `make
# run` and `make test` take it first, other targets only check that the
# packages are there.
deps:
	@bash tools/install-deps.sh

CHECK_DEPS = @pkg-config --exists $(LIB_PKGS) $(TOOL_PKGS) cmocka 2>/dev/null || \
    { echo "make $@: the build dependencies are missing; run 'make deps' first" >&2; exit 2; }

# Header dependencies come from the compiler (-MMD -MP: one .d file next to
# each object, read back below); the Makefile itself rebuilds everything.
$(BUILD)/obj/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

ALL_SRC := $(LIB_SRC) $(MPI_SRC) tools/cli/cli_mpi.c tools/bench/mpi/bench_mpi.c $(MPI_TEST_SRC) $(TOOLS_SRC) tools/cli/main.c $(TEST_SRC) $(BENCH_SRC) $(FAULT_SRC) \
           $(wildcard test/fuzz/*.c)
-include $(ALL_SRC:%.c=$(BUILD)/obj/%.d)

$(BUILD)/liblocaltensor.a: $(LIB_OBJ)
	@mkdir -p $(BUILD)
	rm -f $@ && ar rcs $@ $^

# The shared library is versioned libtool-style: the file
# liblocaltensor.so.VERSION carries the SONAME liblocaltensor.so.MAJOR (what a
# program linked against it asks for at run time), and the links
# liblocaltensor.so.MAJOR and liblocaltensor.so (what -llocaltensor finds)
# point at it. VERSION is the one in tools/cli/cli.h (LT_CLI_VERSION); MAJOR
# changes when the library's interface does.
VERSION  := $(shell sed -n 's/^\#define LT_CLI_VERSION "\([0-9.]*\)"$$/\1/p' tools/cli/cli.h)
SO_MAJOR := $(firstword $(subst ., ,$(VERSION)))
SONAME   := liblocaltensor.so.$(SO_MAJOR)

$(BUILD)/liblocaltensor.so.$(VERSION): $(LIB_OBJ)
	$(CC) $(SAN) -shared -Wl,-soname,$(SONAME) -o $@ $^ $(LIB_LDLIBS)

$(BUILD)/liblocaltensor.so: $(BUILD)/liblocaltensor.so.$(VERSION)
	ln -sf liblocaltensor.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

$(BUILD)/liblocaltensor-tools.a: $(TOOLS_OBJ)
	@mkdir -p $(BUILD)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/liblocaltensor-mpi.a: $(MPI_OBJ)
	@mkdir -p $(BUILD)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/localtensor: $(BUILD)/obj/tools/cli/main.o $(LIBS) $(CLI_MPI_LIBS)
	$(CC) $(CFLAGS) -o $@ $< $(CLI_MPI_LIBS) $(LIBS) $(LDLIBS) $(CLI_MPI_LDLIBS)

$(BUILD)/mpi_%: $(BUILD)/obj/test/mpi/%.o $(LIBS) $(CLI_MPI_LIBS)
	$(CC) $(CFLAGS) -o $@ $< $(CLI_MPI_LIBS) $(LIBS) $(LDLIBS) $(CLI_MPI_LDLIBS) -lcmocka

$(BUILD)/test_%: $(BUILD)/obj/test/test_%.o $(LIBS)
	$(CC) $(CFLAGS) -o $@ $< $(LIBS) $(LDLIBS) -lcmocka

$(BUILD)/bench: $(BENCH_SRC:%.c=$(BUILD)/obj/%.o) $(LIBS)
	$(CC) $(CFLAGS) -o $@ $(BENCH_SRC:%.c=$(BUILD)/obj/%.o) $(LIBS) $(LDLIBS)

$(BUILD)/replay_%: $(BUILD)/obj/test/fuzz/fuzz_%.o $(BUILD)/obj/test/fuzz/replay_main.o $(LIBS)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/obj/test/fuzz/replay_main.o $(LIBS) $(LDLIBS)

$(BUILD)/fuzz_%: $(BUILD)/obj/test/fuzz/fuzz_%.o $(LIBS)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(LIBS) $(LDLIBS)

# The two commands of the README: each does all setup first.
SUBMAKE = $(MAKE) --no-print-directory BUILD=$(BUILD) OPT="$(OPT)" SAN="$(SAN)" WERROR="$(WERROR)" CUDA="$(CUDA)"

run: deps
	@+$(SUBMAKE) all
	@bash tools/run-library.sh $(BUILD)/localtensor

test: deps
	@+$(SUBMAKE) all $(TEST_BIN) $(REPLAY_BIN)
	@SAN="$(SAN)" bash tools/run-tests.sh $(BUILD) $(TEST_BIN)

# The edit-compile-test loop (tools/run-tests.sh --check); T and K pick
# tests by name (--units: the unit tests alone).
T ?=
K ?=
comma := ,
CHECK_BIN := $(if $(T),$(patsubst %,$(BUILD)/test_%,$(patsubst test_%,%,$(subst $(comma), ,$(T)))),$(TEST_BIN))
check:
	$(CHECK_DEPS)
	@+$(SUBMAKE) check-bins
	@bash tools/run-tests.sh $(BUILD) $(if $(T)$(K),--units,--check) $(if $(K),-k '$(K)') $(CHECK_BIN)

check-bins: $(BUILD)/localtensor $(CHECK_BIN)
	@:

# The MPI engine's whole suite (tools/run-mpi-tests.sh --full), the sweeps
# on 4 and 8 processes included.
test-mpi-full: deps
	@test "$(MPI)" = 1 || { echo "make test-mpi-full: needs the MPI build (mpicc; make deps installs Open MPI)" >&2; exit 2; }
	@+$(SUBMAKE) all
	@bash tools/run-mpi-tests.sh $(BUILD) --full

asan: $(if $(filter test run,$(MAKECMDGOALS)),deps)
	$(CHECK_DEPS)
	@+$(SUBMAKE) all

# The harnesses under libFuzzer for FUZZ_SECONDS each (test/fuzz/run-fuzz.sh);
# exits non-zero when one finds a crash, leak, UB, timeout or broken invariant.
fuzz:
	$(CHECK_DEPS)
	@command -v $(FUZZ_CC) >/dev/null || { echo "make fuzz: needs $(FUZZ_CC) with libFuzzer (Debian: apt-get install clang)" >&2; exit 2; }
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) OPT=-O1 SAN="$(FUZZ_SAN)" \
	    WERROR="$(WERROR)" EXTRA="$(EXTRA) $(FUZZ_CAPS)" $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%)
	@bash test/fuzz/run-fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_NAMES)

# Allocation fault injection under ASan + UBSan with leak checks (FAULT_BUILD,
# the folder of `make asan`; tools/fault-check.sh): every allocation of a C API
# workload fails in turn (test/fault/), then of each scenario file run in
# process (every N up to FAULT_MAXALL allocations per file, else the 1st, 2nd
# and last of every call site), then of a few real CLI processes. Each must
# end in a clean "out of memory" error (exit 2 from the CLI) with nothing
# leaked and no half-built object. The sweep files are replaced by the small
# test/fault/sweep.yaml: they repeat the other files' cases at scale (hours
# under ASan), and what only they reach is the sweep expansion.
FAULT_BUILD ?= $(ASAN_BUILD)
FAULT_MAXALL ?= 400
FAULT_FILES ?= $(filter-out scenarios/sweeps/% scenarios/ops/sweep.yaml,$(sort $(wildcard scenarios/*/*.yaml))) \
               test/fault/sweep.yaml

$(BUILD)/fault_driver: $(FAULT_SRC:%.c=$(BUILD)/obj/%.o) $(LIBS)
	$(CC) $(CFLAGS) -o $@ $(FAULT_SRC:%.c=$(BUILD)/obj/%.o) $(LIBS) $(LDLIBS)

fault:
	$(CHECK_DEPS)
	@$(MAKE) --no-print-directory BUILD=$(FAULT_BUILD) OPT=-O1 WERROR="$(WERROR)" \
	    SAN="$(ASAN_SAN)" all $(FAULT_BUILD)/fault_driver
	@bash tools/fault-check.sh $(FAULT_BUILD) $(FAULT_MAXALL) $(FAULT_FILES)

# The HTML pictures in headless chromium (tools/test-browser.sh): screenshots
# into $(BUILD)/*.png, counts read off each page's DOM; a SKIPPED line (not a
# pass) without chromium. Not part of `make test`.
test-browser:
	$(CHECK_DEPS)
	@+$(SUBMAKE) $(BUILD)/localtensor
	@bash tools/test-browser.sh $(BUILD)

valgrind:
	$(CHECK_DEPS)
	@$(MAKE) --no-print-directory BUILD=build-vg OPT=-O1 all test-bins-vg
	@bash tools/run-tests.sh build-vg --valgrind $(TEST_SRC:test/%.c=build-vg/%)

test-bins-vg: $(TEST_BIN)

BENCH_BUILD := $(if $(filter 1,$(CUDA)),build-bench-cuda,build-bench)
bench:
	$(CHECK_DEPS)
	@$(MAKE) --no-print-directory OPT="-O3 -march=native" BUILD=$(BENCH_BUILD) all $(BENCH_BUILD)/bench
	@./$(BENCH_BUILD)/bench $(BUILD)/bench.json
ifeq ($(MPI),1)
	@$(MAKE) --no-print-directory OPT="-O3 -march=native" BUILD=$(BENCH_BUILD) $(BENCH_BUILD)/bench_mpi
	@bash tools/bench/run-mpi-bench.sh $(BENCH_BUILD)
endif

# the MPI rows of `make bench` (tools/bench/mpi/, run under mpirun)
$(BUILD)/bench_mpi: $(BUILD)/obj/tools/bench/mpi/bench_mpi.o $(LIBS) $(CLI_MPI_LIBS)
	$(CC) $(CFLAGS) -o $@ $< $(CLI_MPI_LIBS) $(LIBS) $(LDLIBS) $(CLI_MPI_LDLIBS)

# Everything a user includes lives under include/localtensor/, laid out exactly
# as installed: the umbrella header localtensor/localtensor.h and the API at its
# top, the lower floors in its kernels/ and collectives_sim/. Sources include
# them by the same names (-Iinclude), so install is a plain copy and
# -I PREFIX/include (what localtensor.pc says) is all a user needs. Private
# headers (*_impl.h, kernels/alloc.h) stay beside their .c files and are not
# installed. tools/check-install.sh (run by `make test`) installs into a
# scratch DESTDIR, checks the copy is byte-identical and builds the README's C
# example against it, shared and static. The MPI engine's header
# (collectives_sim/engine_mpi.h) is copied only by a build with MPI (MPI=1),
# which also ships liblocaltensor-mpi.a and localtensor-mpi.pc (static: the
# engine, liblocaltensor.a and libmpi).
INSTALL_HEADERS := $(shell cd include && find localtensor -name '*.h' | sort)
ifneq ($(MPI),1)
INSTALL_HEADERS := $(filter-out localtensor/collectives_sim/engine_mpi.h,$(INSTALL_HEADERS))
endif
INSTALL_DOCS    := README.md $(wildcard docs/*.md docs/*.svg) scenarios/README.md
INSTALL_INC      = $(DESTDIR)$(PREFIX)/include
INSTALL_DOC      = $(DESTDIR)$(PREFIX)/share/doc/localtensor

install: all
	install -d $(INSTALL_INC)/localtensor/kernels $(INSTALL_INC)/localtensor/collectives_sim \
	           $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin $(INSTALL_DOC)/docs $(INSTALL_DOC)/scenarios
	@for h in $(INSTALL_HEADERS); do echo "install -m 644 include/$$h $(INSTALL_INC)/$$h"; \
	    install -m 644 include/$$h $(INSTALL_INC)/$$h || exit 1; done
	install -m 644 $(BUILD)/liblocaltensor.a $(BUILD)/liblocaltensor.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/
	ln -sf liblocaltensor.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/liblocaltensor.so
	install -m 755 $(BUILD)/localtensor $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@LIB_PKGS@|$(LIB_PKGS)|g' -e 's|-lm -lpthread|-lm -lpthread $(CUDA_LIBS)|' tools/localtensor.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/localtensor.pc
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@LIB_PKGS@|$(LIB_PKGS)|g' -e 's|-lm -lpthread|-lm -lpthread $(CUDA_LIBS)|' tools/localtensor-static.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/localtensor-static.pc
	@for d in $(INSTALL_DOCS); do echo "install -m 644 $$d $(INSTALL_DOC)/$$d"; \
	    install -m 644 $$d $(INSTALL_DOC)/$$d || exit 1; done
ifeq ($(MPI),1)
	install -m 644 $(BUILD)/liblocaltensor-mpi.a $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@MPI_LIBS@|$(MPI_LDLIBS)|g' tools/localtensor-mpi.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/localtensor-mpi.pc
endif

clean:
	rm -rf build build-asan build-asan-clang build-vg build-bench build-fuzz build-cuda build-bench-cuda
