# Abacus — plain Makefile.
#   make                 library (static and shared), CLI and allocator tracker (build/release)
#   make check           unit + integration tests, fuzz corpus replay
#   make check SANITIZE=1  the same under AddressSanitizer + UndefinedBehaviorSanitizer (build/sanitize)
#   make check-tsan      the threaded test cases under ThreadSanitizer (build/tsan)
#   make fuzz            libFuzzer targets (clang), FUZZ_SECONDS each (default 60)
#   make bench           load/shape/cost timing of the largest zoo graph
#   make install PREFIX=/usr/local
# Objects live per build mode, so a sanitized build never mixes with a release one.

CC      ?= cc
PREFIX  ?= /usr/local
ONNX_PROTO ?= /usr/include/onnx/onnx.proto

ifeq ($(SANITIZE),1)
MODE    := sanitize
OPT     := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDSAN   := -fsanitize=address,undefined
else ifeq ($(SANITIZE),thread)
MODE    := tsan
OPT     := -O1 -g -fsanitize=thread
LDSAN   := -fsanitize=thread
else
MODE    := release
OPT     := -O2 -g
LDSAN   :=
endif

B       := build/$(MODE)
GEN     := build/gen
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith \
           -Wno-unused-parameter -Wformat=2 -Wvla
CFLAGS_ALL := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(OPT) $(WARN) -Iinclude -Isrc -I$(GEN) $(CFLAGS)
LIBS    := -lprotobuf-c -lxgboost -lm

LIB_SRC := $(sort $(wildcard src/*.c))
CLI_SRC := $(sort $(wildcard cli/*.c cli/profile/*.c))
TEST_SRC := $(sort $(wildcard tests/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o) $(B)/gen/onnx.pb-c.o
CLI_OBJ := $(CLI_SRC:%.c=$(B)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(B)/%.o)
FUZZ_TARGETS ?= onnx csv bundle cli machine
REPLAYS := $(FUZZ_TARGETS:%=$(B)/replay_%)

.PHONY: fuzz-merge all check check-tsan check-collector check-python fuzz bench clean install
all: $(B)/abacus $(B)/libabacus.so $(B)/libabacus_tracker.so

# protobuf-c code is generated from Debian's onnx.proto (libonnx-dev), never committed.
# One rule makes both files (grouped target, GNU Make 4.3): with a plain two-target rule `make -j2` ran it
# twice at once on a fresh tree and one cp failed.
$(GEN)/onnx.pb-c.c $(GEN)/onnx.pb-c.h &: $(ONNX_PROTO)
	@mkdir -p $(GEN)
	cp $(ONNX_PROTO) $(GEN)/onnx.proto
	cd $(GEN) && protoc-c --c_out=. onnx.proto

$(B)/gen/onnx.pb-c.o: $(GEN)/onnx.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) -I$(GEN) -c $< -o $@

$(B)/%.o: %.c $(GEN)/onnx.pb-c.h $(wildcard include/*.h src/*.h cli/*.h cli/profile/*.h tests/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(B)/libabacus.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

# The shared library (the Python package's binding loads it with ctypes): its own position-independent
# objects, and only the public abacus_* symbols exported (src/libabacus.map), so that the library's internal
# ab_* helpers never clash with a host program's.
PIC_OBJ := $(LIB_SRC:%.c=$(B)/pic/%.o) $(B)/pic/gen/onnx.pb-c.o
$(B)/pic/gen/onnx.pb-c.o: $(GEN)/onnx.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) -fPIC -I$(GEN) -c $< -o $@
$(B)/pic/%.o: %.c $(GEN)/onnx.pb-c.h $(wildcard include/*.h src/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -fPIC -c $< -o $@
$(B)/libabacus.so: $(PIC_OBJ) src/libabacus.map
	$(CC) $(LDSAN) -shared -Wl,-soname,libabacus.so.0 -Wl,--version-script=src/libabacus.map -o $@ $(PIC_OBJ) $(LIBS)

$(B)/abacus: $(CLI_OBJ) $(B)/libabacus.a
	$(CC) $(LDSAN) -o $@ $(CLI_OBJ) $(B)/libabacus.a $(LIBS)

# The tests link the CLI's helpers too (all of cli/ but main.c), so that its parsers are tested directly.
CLI_LIB_OBJ := $(filter-out $(B)/cli/main.o,$(CLI_OBJ))
$(B)/test_abacus: $(TEST_OBJ) $(CLI_LIB_OBJ) $(B)/libabacus.a
	$(CC) $(LDSAN) -o $@ $(TEST_OBJ) $(CLI_LIB_OBJ) $(B)/libabacus.a $(LIBS)

$(B)/example: docs/example.c $(B)/libabacus.a
	$(CC) $(CFLAGS_ALL) $(LDSAN) -o $@ $< $(B)/libabacus.a $(LIBS)

check: $(B)/abacus $(B)/test_abacus $(B)/example $(REPLAYS)
	$(B)/test_abacus
	@for t in $(FUZZ_TARGETS); do printf "fuzz corpus %s: " $$t; $(B)/replay_$$t fuzz/corpus/$$t/* || exit 1; done
	ABACUS=$(B)/abacus sh tests/cli_test.sh
	sh tests/boundary_test.sh
	$(B)/abacus train tests/data/small.csv --out $(B)/small.abacus --rounds 40
	$(B)/example $(B)/small.abacus tests/data/graphs/resnet18-64.onnx 256

# The test cases that run threads (every name containing "threads": the shared large-block cache, one graph
# analysed by four threads) under ThreadSanitizer, which reports any data race and fails the run.
check-tsan:
	$(MAKE) SANITIZE=thread build/tsan/test_abacus
	TSAN_OPTIONS=halt_on_error=1:exitcode=66 build/tsan/test_abacus threads

# The CLI integration tests under valgrind: no invalid access, no definite or indirect leak.
check-valgrind: $(B)/abacus
	ABACUS="valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --quiet $(B)/abacus" \
		sh tests/cli_test.sh

# The allocator tracker (collector/tracker.c) is preloaded into Python workers, so it is never built with
# the sanitizers (an ASan runtime cannot be LD_PRELOADed behind python3), whatever the mode.
TRACKER_FLAGS := -std=c11 -O2 -g -fPIC $(WARN) $(CFLAGS)
$(B)/libabacus_tracker.so: collector/tracker.c
	@mkdir -p $(dir $@)
	$(CC) $(TRACKER_FLAGS) -shared -o $@ $< -ldl

# The collector end to end (PyTorch workers; about 2-3 minutes on 2 cores) and the architecture generator
# (collector/generator.py: deterministic, exports, Abacus counts its parameters; about 10 s). Needs Debian's
# python3-torch, python3-torchvision and python3-onnx.
check-collector: $(B)/abacus $(B)/libabacus_tracker.so
	ABACUS=$(B)/abacus /usr/bin/python3 tests/collector_test.py
	ABACUS=$(B)/abacus /usr/bin/python3 tests/generator_test.py
	ABACUS=$(B)/abacus /usr/bin/python3 tests/tf_collector_test.py
	ABACUS=$(B)/abacus /usr/bin/python3 tests/tf_export_test.py

# The Python package (python/) as a user installs it: `pip install ./python` into a fresh virtual environment
# that sees Debian's torch and torchvision, then its pytest suite, run from outside the checkout so that it
# imports the installed package (which compares itself with this build's CLI).
PYVENV := build/venv-python
check-python: $(B)/abacus
	rm -rf $(PYVENV)
	/usr/bin/python3 -m venv --system-site-packages $(PYVENV)
	$(PYVENV)/bin/pip install --quiet --disable-pip-version-check ./python
	cd build && ABACUS=$(CURDIR)/$(B)/abacus OMP_NUM_THREADS=1 $(CURDIR)/$(PYVENV)/bin/python -m pytest -q \
		-p no:cacheprovider $(CURDIR)/python/tests

# libFuzzer targets (clang): one per reader. Objects are rebuilt with coverage instrumentation.
# `make fuzz` runs each for FUZZ_SECONDS (or only FUZZ_TARGETS=...); new inputs go to
# build/fuzz/corpus-<target>, the committed seeds in fuzz/corpus/<target> are read, never written.
FUZZ_SECONDS ?= 60
FZ      := build/fuzz
FZ_FLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O1 -g -fsanitize=fuzzer,address,undefined \
            -fno-sanitize-recover=all -Iinclude -Isrc -Icli -I$(GEN)
FZ_CLI_SRC := $(filter-out cli/main.c,$(CLI_SRC))
$(FZ)/fuzz_%: fuzz/fuzz_%.c $(LIB_SRC) $(GEN)/onnx.pb-c.c
	@mkdir -p $(FZ)
	clang $(FZ_FLAGS) -o $@ $< $(LIB_SRC) $(GEN)/onnx.pb-c.c $(LIBS)
$(FZ)/fuzz_cli: fuzz/fuzz_cli.c $(LIB_SRC) $(CLI_SRC) $(GEN)/onnx.pb-c.c
	@mkdir -p $(FZ)
	clang $(FZ_FLAGS) -DABACUS_NO_MAIN -o $@ $< $(LIB_SRC) $(CLI_SRC) $(GEN)/onnx.pb-c.c $(LIBS)

# The log of each run (final statistics: executions, coverage, peak RSS) goes to build/fuzz/<target>.log.
fuzz: $(FUZZ_TARGETS:%=$(FZ)/fuzz_%)
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FZ)/corpus-$$t fuzz/corpus/$$t; \
		echo "== fuzz_$$t for $(FUZZ_SECONDS) s (log: $(FZ)/$$t.log)"; \
		$(FZ)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
			-print_final_stats=1 -artifact_prefix=$(FZ)/$$t- \
			$(FZ)/corpus-$$t fuzz/corpus/$$t > $(FZ)/$$t.log 2>&1 || { tail -40 $(FZ)/$$t.log; exit 1; }; \
		grep -E "^#[0-9]+.*DONE|^stat::" $(FZ)/$$t.log; \
	done

# Folds what `make fuzz` found into the committed corpora, keeping only inputs that add coverage
# (libFuzzer -merge=1), so that `make check` replays them quickly.
fuzz-merge: $(FUZZ_TARGETS:%=$(FZ)/fuzz_%)
	@for t in $(FUZZ_TARGETS); do \
		$(FZ)/fuzz_$$t -merge=1 -max_len=65536 fuzz/corpus/$$t $(FZ)/corpus-$$t 2>&1 | grep -E "MERGE-OUTER: [0-9]+ new files"; \
	done

# Corpus replay without libFuzzer: every committed input (and former crash) is a plain test.
$(B)/replay_%: fuzz/fuzz_%.c fuzz/replay.c $(B)/libabacus.a
	$(CC) $(CFLAGS_ALL) $(LDSAN) -o $@ $< fuzz/replay.c $(B)/libabacus.a $(LIBS)
$(B)/cli/main_nomain.o: cli/main.c $(GEN)/onnx.pb-c.h $(wildcard include/*.h cli/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -DABACUS_NO_MAIN -c $< -o $@
$(B)/replay_cli: fuzz/fuzz_cli.c fuzz/replay.c $(B)/libabacus.a $(filter-out $(B)/cli/main.o,$(CLI_OBJ)) $(B)/cli/main_nomain.o
	$(CC) $(CFLAGS_ALL) -Icli $(LDSAN) -o $@ fuzz/fuzz_cli.c fuzz/replay.c $(filter-out $(B)/cli/main.o,$(CLI_OBJ)) \
		$(B)/cli/main_nomain.o $(B)/libabacus.a $(LIBS)

$(B)/bench_abacus: $(B)/bench/bench.o $(B)/libabacus.a
	$(CC) $(LDSAN) -o $@ $< $(B)/libabacus.a $(LIBS)

BENCH_MODEL ?= data/predictor.abacus
bench: $(B)/bench_abacus $(B)/abacus
	$(B)/bench_abacus data/graphs 21 $(wildcard $(BENCH_MODEL))
	@if [ -f $(BENCH_MODEL) ]; then \
		s=$$(date +%s%N); for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do \
			$(B)/abacus predict data/graphs/resnet50-224.onnx --batch 32 --model $(BENCH_MODEL) >/dev/null || exit 1; done; \
		e=$$(date +%s%N); echo "abacus predict as a whole process: $$(( (e - s) / 20000000 )) ms (mean of 20 runs; target <= 50 ms)"; fi

clean:
	rm -rf build

# make install PREFIX=/usr/local: the CLI, the static library, the header, a pkg-config file, the man
# page and the bundled predictor (found by `abacus predict` through PREFIX/share/abacus).
install: $(B)/abacus $(B)/libabacus.a $(B)/libabacus.so
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include \
		$(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/abacus
	install -m 755 $(B)/abacus $(DESTDIR)$(PREFIX)/bin/abacus
	install -m 644 $(B)/libabacus.a $(DESTDIR)$(PREFIX)/lib/libabacus.a
	install -m 755 $(B)/libabacus.so $(DESTDIR)$(PREFIX)/lib/libabacus.so.0
	ln -sf libabacus.so.0 $(DESTDIR)$(PREFIX)/lib/libabacus.so
	install -m 644 include/abacus.h $(DESTDIR)$(PREFIX)/include/abacus.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(shell sed -n 's/^#define ABACUS_VERSION "\(.*\)"/\1/p' include/abacus.h)|' \
		docs/abacus.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/abacus.pc
	install -m 644 docs/man/abacus.1 $(DESTDIR)$(PREFIX)/share/man/man1/abacus.1
	if [ -f data/predictor.abacus ]; then install -m 644 data/predictor.abacus $(DESTDIR)$(PREFIX)/share/abacus/; fi
