# localtensor — build, test, run, install.
#   make            build/liblocaltensor.a, build/liblocaltensor.so, build/localtensor
#   make run        install missing Debian packages, build, run the scenario library
#   make test       install missing Debian packages, build, run unit tests + scenarios
#   make asan test  the same under AddressSanitizer + UBSan (build-asan/)
#   make valgrind   the unit tests under valgrind (build-vg/, no -march=native)
#   make bench      benchmarks (ratios against memcpy / one cblas call)
#   make install    PREFIX=/usr/local: headers, libs, localtensor.pc, the CLI

PREFIX  ?= /usr/local
CC      ?= cc
PKGS    := openblas libcjson yaml-0.1
WERROR  ?=
OPT     ?= -O2
CFLAGS_BASE := -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Wshadow \
               -Wstrict-prototypes -fPIC -g -I. $(shell pkg-config --cflags $(PKGS) cmocka 2>/dev/null)
LDLIBS  := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -lpthread
BUILD   ?= build
SAN     ?=
EXTRA   ?=
ifeq ($(CUDA),1)
$(error not supported yet: the CUDA backend (make CUDA=1); kernels/backend.h has the table it will fill)
endif

# `make asan test`: the build goes to build-asan with sanitizers (decided
# before any path below is computed).
ifneq ($(filter asan,$(MAKECMDGOALS)),)
BUILD := build-asan
SAN   := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT   := -O1
endif
CFLAGS  := $(CFLAGS_BASE) $(OPT) $(SAN) $(WERROR) $(EXTRA)

LIB_SRC  := $(wildcard kernels/*.c collectives_sim/*.c localtensor/*.c) \
            $(filter-out tools/main.c tools/bench%.c, $(wildcard tools/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(wildcard test/test_*.c)
TEST_BIN := $(TEST_SRC:test/%.c=$(BUILD)/%)
BENCH_SRC := $(wildcard tools/bench*.c)
HEADERS  := $(wildcard kernels/*.h collectives_sim/*.h localtensor/*.h)

.PHONY: all deps run test unit scenarios asan valgrind bench install clean

all: $(BUILD)/liblocaltensor.a $(BUILD)/liblocaltensor.so $(BUILD)/localtensor

deps:
	@bash tools/install-deps.sh

$(BUILD)/obj/%.o: %.c $(HEADERS) $(wildcard tools/*.h) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/liblocaltensor.a: $(LIB_OBJ)
	@mkdir -p $(BUILD)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/liblocaltensor.so: $(LIB_OBJ)
	$(CC) $(SAN) -shared -o $@ $^ $(LDLIBS)

$(BUILD)/localtensor: tools/main.c $(BUILD)/liblocaltensor.a
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/liblocaltensor.a $(LDLIBS)

$(BUILD)/test_%: test/test_%.c test/testutil.h test/kernels_testutil.h test/redistribute_testutil.h $(BUILD)/liblocaltensor.a
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/liblocaltensor.a $(LDLIBS) -lcmocka

$(BUILD)/bench: $(BENCH_SRC) $(BUILD)/liblocaltensor.a
	$(CC) $(CFLAGS) -O3 -o $@ $(BENCH_SRC) $(BUILD)/liblocaltensor.a $(LDLIBS)

# The two commands of the README: each does all setup first.
SUBMAKE = $(MAKE) --no-print-directory BUILD=$(BUILD) OPT="$(OPT)" SAN="$(SAN)" WERROR="$(WERROR)"

run: deps
	@$(SUBMAKE) all
	@bash tools/run-library.sh $(BUILD)/localtensor

test: deps
	@$(SUBMAKE) all $(TEST_BIN)
	@bash tools/run-tests.sh $(BUILD) $(TEST_BIN)

asan:
	@true

valgrind: deps
	@$(MAKE) --no-print-directory BUILD=build-vg OPT=-O1 all test-bins-vg
	@bash tools/run-tests.sh build-vg --valgrind $(TEST_SRC:test/%.c=build-vg/%)

test-bins-vg: $(TEST_BIN)

bench: deps
	@$(MAKE) --no-print-directory OPT="-O3 -march=native" BUILD=build-bench all build-bench/bench
	@./build-bench/bench $(BUILD)/bench.json

install: all
	install -d $(DESTDIR)$(PREFIX)/include/localtensor/kernels $(DESTDIR)$(PREFIX)/include/localtensor/collectives_sim \
	           $(DESTDIR)$(PREFIX)/include/localtensor/localtensor $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(filter-out %_impl.h,$(wildcard kernels/*.h)) $(DESTDIR)$(PREFIX)/include/localtensor/kernels/
	install -m 644 $(filter-out %_impl.h,$(wildcard collectives_sim/*.h)) $(DESTDIR)$(PREFIX)/include/localtensor/collectives_sim/
	install -m 644 $(filter-out %_impl.h,$(wildcard localtensor/*.h)) $(DESTDIR)$(PREFIX)/include/localtensor/localtensor/
	install -m 644 $(BUILD)/liblocaltensor.a $(BUILD)/liblocaltensor.so $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/localtensor $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@PREFIX@|$(PREFIX)|g' tools/localtensor.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/localtensor.pc

clean:
	rm -rf build build-asan build-vg build-bench
