# The two entry points of the README. Both install what is missing first.
#   make run    build, then serve the web app on an embedded SQLite store (Ctrl-C stops it)
#   make test   build, then run every test (and the in-process ones under ASan+UBSan)
#   make bench  build, then run the lease benchmarks on SQLite and dynalite

JOBS ?= $(shell nproc)

.PHONY: all setup build run test test-fast test-asan bench clean

all: build

setup:
	@scripts/setup.sh

build: setup
	@cmake --preset default >/dev/null
	@cmake --build --preset default -j $(JOBS)

run: build
	@scripts/serve.sh

test-fast: build
	ctest --preset default -j $(JOBS)

# The in-process tests under ASan+UBSan: the unit, conformance and simulation
# tests, and the DynamoDB store and HTTP client against dynalite.
test-asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS) --target unit_tests conformance_tests sim_tests dynamodb_tests
	ctest --preset asan -j $(JOBS) -L 'unit|dynamodb' -E 'sigv4_matches_botocore|dynamodb_sdk_interop'

test: test-fast test-asan

bench: build
	@scripts/bench.sh

clean:
	rm -rf build build-asan
