# DoseTap — the two commands of the README:
#   make run    build and run the agent in the foreground
#   make test   run every test (unit, property, store, CLI, hardware fixtures under umockdev, a short fuzz run)
# and, for hardening: make fuzz (10^7 executions per fuzz target), make sanitize (ASan, TSan).
SWIFT ?= swift
ARGS ?=

.PHONY: run test build release deps deps-test deps-bench bench fuzz sanitize clean

deps:
	@scripts/install-deps.sh run

deps-test:
	@scripts/install-deps.sh test

deps-bench:
	@scripts/install-deps.sh bench

build: deps
	$(SWIFT) build --product dosetap

release: deps
	$(SWIFT) build -c release --static-swift-stdlib --product dosetap

run: build
	.build/debug/dosetap agent $(ARGS)

test: deps-test
	scripts/run-tests.sh

bench: release deps-bench
	Benchmarks/cli-latency.sh
	Benchmarks/idle-footprint.sh

# Every fuzz target (Fuzz/, libFuzzer) to 10^7 executions; counts and exec/s in docs/performance.md.
fuzz: deps-test
	scripts/fuzz.sh $(or $(RUNS),10000000)

# The whole suite under AddressSanitizer, then under ThreadSanitizer (docs/performance.md, "Sanitizers").
sanitize: deps-test
	scripts/sanitize.sh address thread

clean:
	rm -rf .build .build-fuzz .build-asan .build-tsan
