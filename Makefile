# The two entry points of the README. Both install what is missing first.
#   make run    build, then run `leasehold demo`: the stream fleet and its dashboard on a
#               throwaway SQLite store (Ctrl-C stops it); `make serve` serves the web app alone
#   make test   build, then run every test (and the in-process ones under ASan+UBSan)
#   make bench  build, then run the lease benchmarks on SQLite and dynalite, `bench http`,
#               the stream fleet's (bench/fleet_bench.py), the tracer's (bench/tracer_bench.cc)
#               and `bench movies`

JOBS ?= $(shell nproc)

.PHONY: all setup build run serve test test-fast test-asan bench clean

all: build

setup:
	@scripts/setup.sh

build: setup
	@cmake --preset default >/dev/null
	@cmake --build --preset default -j $(JOBS)

run: build
	@build/bin/leasehold demo --listen 127.0.0.1:$${PORT:-8080}

serve: build
	@scripts/serve.sh

test-fast: build
	ctest --preset default -j $(JOBS)

# The in-process tests under ASan+UBSan: the unit, conformance and simulation
# tests, and the DynamoDB store and HTTP client against dynalite.
test-asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS) --target unit_tests movie_unit_tests conformance_tests \
	  sim_tests dynamodb_tests
	ctest --preset asan -j $(JOBS) -L 'unit|dynamodb' -E 'sigv4_matches_botocore|dynamodb_sdk_interop'

test: test-fast test-asan

# The fleet's throughput baseline and the tracer benchmark are built only here:
# the tests do not need them.
bench: build
	@cmake --build --preset default -j $(JOBS) --target bare_ws_reader tracer_bench
	@scripts/bench.sh

clean:
	rm -rf build build-asan
