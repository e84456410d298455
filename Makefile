# Thin wrapper over CMake (as neovim does). On a fresh Debian machine as root:
#   make demo   installs what is missing, builds, mounts a demo, shows the scheduler at work
#   make test   installs what is missing, builds, runs every test suite (unit, sim, integration),
#               then the sanitizer stage (ASan+UBSan, TSan, a short fuzz run; see test-san)
# Other targets: build, install (PREFIX, DESTDIR), bench, asan, tsan, fuzz (FUZZ_SECONDS), clean.

BUILD    ?= build
TYPE     ?= RelWithDebInfo
PREFIX   ?= /usr/local
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE    ?= cmake
CTEST_ARGS ?=

.PHONY: all deps deps-test deps-bench deps-fuzz build test test-normal test-san demo install bench \
	asan tsan tsan-only fuzz clean help

all: build

help:
	@sed -n '1,5p' Makefile

deps:
	@sh scripts/install-deps.sh build
deps-test:
	@sh scripts/install-deps.sh test
deps-bench:
	@sh scripts/install-deps.sh bench
deps-fuzz:
	@sh scripts/install-deps.sh fuzz

$(BUILD)/CMakeCache.txt:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(TYPE) -DCMAKE_INSTALL_PREFIX=$(PREFIX)

build: deps $(BUILD)/CMakeCache.txt
	$(CMAKE) --build $(BUILD) -j$(JOBS)

test: test-normal test-san

# Re-configures first: a tree configured by `make build` before Criterion was installed has no
# test suites until CMake looks again.
test-normal: deps-test $(BUILD)/CMakeCache.txt
	$(CMAKE) -S . -B $(BUILD) >/dev/null
	$(CMAKE) --build $(BUILD) -j$(JOBS)
	rm -rf $(BUILD)/Testing/skipped
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) $(CTEST_ARGS); rc=$$?; \
	sh $(CURDIR)/scripts/list-skips.sh Testing/skipped; exit $$rc

demo: deps-bench build
	bash scripts/demo.sh $(BUILD)/fs/cfqfs

# Re-configures with PREFIX so paths computed at configure time (SYSCONFDIR) follow it.
install: build
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	$(CMAKE) --install $(BUILD)

bench: deps-bench build
	@echo "benchmarks: see bench/README.md (e.g. bench/overhead, $(BUILD)/bench/sched_micro)"

# Sanitizer builds run the whole suite in their own build trees. A report fails the run twice
# over: every UBSan check is fatal (cmake/Sanitizers.cmake) and a process that ASan,
# LeakSanitizer (at its exit) or TSan reports on exits non-zero, which fails the test that
# mounted the daemon (mnt_cr_finish); and reports go to files in <tree>/san-reports, which
# fail the run after ctest even where no test looked at the process's exit status.
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:log_path=$(CURDIR)/build-asan/san-reports/asan \
	UBSAN_OPTIONS=print_stacktrace=1:log_path=$(CURDIR)/build-asan/san-reports/ubsan
TSAN_ENV = TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 \
	log_path=$(CURDIR)/build-tsan/san-reports/tsan"
ASAN_LABELS ?= .
TSAN_LABELS ?= integration
# $(call san_run,TREE,COMMAND): empties TREE/san-reports, runs COMMAND, prints every report
# there; fails if COMMAND failed or a report exists.
san_run = r=$(CURDIR)/$(1)/san-reports; rm -rf $$r && mkdir -p $$r && { ($(2)); rc=$$?; \
	if [ -n "$$(ls $$r)" ]; then cat $$r/*; echo "sanitizer reports in $$r" >&2; rc=1; fi; \
	exit $$rc; }

asan: deps-test
	$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DENABLE_ASAN=ON
	$(CMAKE) --build build-asan -j$(JOBS)
	$(call san_run,build-asan,cd build-asan && $(ASAN_ENV) ctest -L '$(ASAN_LABELS)' \
		--output-on-failure -j$(JOBS) $(CTEST_ARGS))

# Criterion cannot start under TSan (its shared arena clashes with TSan's memory layout), so the
# TSan job builds the daemon with TSan and runs the integration suites of the normal build
# against it (tsan-only: without running the normal suites first).
tsan: test-normal
	$(MAKE) --no-print-directory tsan-only
tsan-only: build
	$(CMAKE) -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DENABLE_TSAN=ON -DCFQFS_TESTS=OFF \
		-DCFQFS_BENCH=OFF
	$(CMAKE) --build build-tsan -j$(JOBS) --target cfqfs
	$(call san_run,build-tsan,cd $(BUILD) && CFQFS_TEST_BIN=$(CURDIR)/build-tsan/fs/cfqfs \
		$(TSAN_ENV) ctest -L '$(TSAN_LABELS)' --output-on-failure $(CTEST_ARGS))

# The sanitizer stage of `make test` (what CI runs), sized to ~5 min on 2 cores: the ASan+UBSan
# build runs unit, sim and the integration suites labelled `sanitizer` (all but the fair_*
# throughput measurements, see tests/CMakeLists.txt; test_kill among them, so LeakSanitizer
# sees the daemon after SIGKILLed clients); the TSan daemon runs the same integration suites;
# every fuzz target runs CI_FUZZ_SECONDS over its kept corpus and replays its kept crashes.
CI_FUZZ_SECONDS ?= 5
test-san: test-normal
	$(MAKE) --no-print-directory asan ASAN_LABELS='unit|sim|sanitizer'
	$(MAKE) --no-print-directory tsan-only TSAN_LABELS=sanitizer
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(CI_FUZZ_SECONDS)

# libFuzzer targets (tests/fuzz): a clang build tree of their own; each target first replays
# the inputs kept in tests/fuzz/crashes/<target>-* (fixed or suppressed findings), then runs for
# FUZZ_SECONDS on its seed corpus; new inputs go to build-fuzz/corpus/<target> (the kept seeds
# in tests/fuzz/corpus are only read). A crash stops the run and leaves
# crash-* in build-fuzz/artifacts/<target>/. Known third-party leaks: tests/fuzz/lsan.supp.
FUZZ_SECONDS ?= 30
FUZZ_TARGETS ?= cgroup_parse stat_parse weight_parse rules config ctl_write
fuzz: deps-fuzz
	CC=clang $(CMAKE) -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCFQFS_FUZZ=ON \
		-DCFQFS_BENCH=OFF
	$(CMAKE) --build build-fuzz -j$(JOBS) --target fuzz_all
	@set -e; export LSAN_OPTIONS=suppressions=$(CURDIR)/tests/fuzz/lsan.supp; \
	for t in $(FUZZ_TARGETS); do \
		mkdir -p build-fuzz/corpus/$$t build-fuzz/artifacts/$$t; \
		kept=$$(ls tests/fuzz/crashes/$$t-* 2>/dev/null || true); \
		if [ -n "$$kept" ]; then \
			echo "fuzz: $$t replays" $$kept; \
			build-fuzz/tests/fuzz/fuzz_$$t $$kept >build-fuzz/artifacts/$$t/replay.log 2>&1 \
				|| { cat build-fuzz/artifacts/$$t/replay.log; exit 1; }; \
		fi; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		build-fuzz/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=build-fuzz/artifacts/$$t/ \
			build-fuzz/corpus/$$t tests/fuzz/corpus/$$t; \
	done

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
