# Thin wrapper over CMake (as neovim does). On a fresh Debian machine as root:
#   make demo   installs what is missing, builds, mounts a demo, shows the scheduler at work
#   make test   installs what is missing, builds, runs every test suite (unit, sim, integration)
# Other targets: build, install (PREFIX, DESTDIR), bench, asan, tsan, fuzz (FUZZ_SECONDS), clean.

BUILD    ?= build
TYPE     ?= RelWithDebInfo
PREFIX   ?= /usr/local
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE    ?= cmake
CTEST_ARGS ?=

.PHONY: all deps deps-test deps-bench deps-fuzz build test demo install bench asan tsan fuzz clean help

all: build

help:
	@sed -n '1,4p' Makefile

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

test: deps-test $(BUILD)/CMakeCache.txt
	$(CMAKE) --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) $(CTEST_ARGS)

demo: deps-bench build
	bash scripts/demo.sh $(BUILD)/fs/cfqfs

# Re-configures with PREFIX so paths computed at configure time (SYSCONFDIR) follow it.
install: build
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	$(CMAKE) --install $(BUILD)

bench: deps-bench build
	@echo "benchmarks: see bench/README.md (e.g. bench/overhead, $(BUILD)/bench/sched_micro)"

# Sanitizer builds run the whole suite in their own build trees.
asan: deps-test
	$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DENABLE_ASAN=ON
	$(CMAKE) --build build-asan -j$(JOBS)
	cd build-asan && ctest --output-on-failure -j$(JOBS) $(CTEST_ARGS)

# Criterion cannot start under TSan (its shared arena clashes with TSan's memory layout), so the
# TSan job builds the daemon with TSan and runs the integration suites of the normal build
# against it; a data race makes the daemon exit non-zero, which fails the test that mounted it.
tsan: test
	$(CMAKE) -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DENABLE_TSAN=ON -DCFQFS_TESTS=OFF \
		-DCFQFS_BENCH=OFF
	$(CMAKE) --build build-tsan -j$(JOBS) --target cfqfs
	cd $(BUILD) && CFQFS_TEST_BIN=$(CURDIR)/build-tsan/fs/cfqfs \
		TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" \
		ctest -L integration --output-on-failure $(CTEST_ARGS)

# libFuzzer targets (tests/fuzz): a clang build tree of their own; each target runs for
# FUZZ_SECONDS on its seed corpus; new inputs go to build-fuzz/corpus/<target> (the kept seeds
# in tests/fuzz/corpus are only read). A crash stops the run and leaves
# crash-* in build-fuzz/artifacts/<target>/. Known third-party leaks: tests/fuzz/lsan.supp.
FUZZ_SECONDS ?= 30
FUZZ_TARGETS ?= cgroup_parse stat_parse weight_parse rules config ctl_write
fuzz: deps-fuzz
	CC=clang $(CMAKE) -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCFQFS_FUZZ=ON \
		-DCFQFS_BENCH=OFF
	$(CMAKE) --build build-fuzz -j$(JOBS) --target fuzz_all
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p build-fuzz/corpus/$$t build-fuzz/artifacts/$$t; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		LSAN_OPTIONS=suppressions=$(CURDIR)/tests/fuzz/lsan.supp \
		build-fuzz/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=build-fuzz/artifacts/$$t/ \
			build-fuzz/corpus/$$t tests/fuzz/corpus/$$t; \
	done

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
