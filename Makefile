# DoseTap — the two commands of the README:
#   make run    build and run the agent in the foreground
#   make test   run every test (unit, property, store, CLI, hardware fixtures under umockdev)
SWIFT ?= swift
ARGS ?=

.PHONY: run test build release deps deps-test bench clean

deps:
	@scripts/install-deps.sh run

deps-test:
	@scripts/install-deps.sh test

build: deps
	$(SWIFT) build --product dosetap

release: deps
	$(SWIFT) build -c release --static-swift-stdlib --product dosetap

run: build
	.build/debug/dosetap agent $(ARGS)

test: deps-test
	scripts/run-tests.sh

bench: release deps-test
	Benchmarks/cli-latency.sh
	Benchmarks/idle-footprint.sh

clean:
	rm -rf .build
