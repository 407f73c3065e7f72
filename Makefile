# The two entry points of the README. Both install what is missing first.
#   make run    build, then run `leasehold demo`: the stream fleet and its dashboard on a
#               throwaway SQLite store (Ctrl-C stops it); `make serve` serves the web app alone
#   make test   build, then run every test: the system tests on the optimised build, the unit
#               tests under ASan+UBSan
#   make nemesis  build, then run the system under faults for NEMESIS_SECONDS
#               (default 600) on SQLite and on DynamoDB Local, and check it
#   make bench  build, then run the lease benchmarks on SQLite and dynalite, `bench http`,
#               the stream fleet's (bench/fleet_bench.py), the tracer's (bench/tracer_bench.cc)
#               and `bench movies`
#   make fuzz   build the fuzz targets (fuzz/: clang 14, libFuzzer, ASan+UBSan) and run each
#               for FUZZ_SECONDS (default 180); FUZZ_TARGETS="a b" picks some, FUZZ_MERGE=1
#               merges new inputs into fuzz/corpus/, FUZZ_PARALLEL=2 runs two at once
#               (scripts/fuzz.sh; docs/reliability.md)

JOBS ?= $(shell nproc)

.PHONY: all setup build run serve test test-system test-unit bench nemesis fuzz clean

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

# Each test binary is built once (LEASEHOLD_TESTS, cmake/test_binary.cmake):
# the system tests (processes of the real binary, the server and the app
# through sockets, browsers, other implementations, the installed package,
# lint) against the optimised build that ships, and the unit tests (the
# libraries' tests, the conformance suites, the simulation, the DynamoDB
# backend against dynalite, the SQS queue and the S3 client against fauxqs) under
# ASan+UBSan.
test-system: build
	ctest --preset default -j $(JOBS)

test-unit: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS) --target test_binaries
	ctest --preset asan -j $(JOBS)

# Both, with the sanitized build and the lint checks beside the build and
# the system tests at the lowest CPU priority (scripts/test.sh).
test: setup
	@JOBS=$(JOBS) scripts/test.sh

# The fleet's throughput baseline and the tracer benchmark are built only here:
# the tests do not need them.
bench: build
	@cmake --build --preset default -j $(JOBS) --target bare_ws_reader tracer_bench frames_bench
	@scripts/bench.sh

# The whole system under a seeded random schedule of faults, then a checker
# over what it wrote (scripts/nemesis.sh: NEMESIS_SECONDS, NEMESIS_STORES,
# NEMESIS_SEED, NEMESIS_SKEW_MS, NEMESIS_PLANT; docs/reliability.md).
nemesis: build
	@scripts/nemesis.sh

# Each fuzz target runs in turn, from its corpus; any finding makes it fail,
# with the input's path in the output. The unit tests replay the corpora.
fuzz: setup
	@scripts/fuzz.sh

clean:
	rm -rf build build-asan build-fuzz
