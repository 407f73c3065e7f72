// `leasehold bench movies`: the latency of polling a movie's metadata (GET
// /api/movies/{id}, as every open page does) by many viewers at once, while a
// trace of that movie runs, against the same polling while nothing runs, in the
// same run.
//
// Everything runs in this process on 127.0.0.1: the server of `leasehold serve`
// (app::Serving, with one in-process trace worker) on a fresh SQLite file in a
// temporary directory unless a store is given, a synthetic movie
// (tracer/synthetic_movie.h) probed into it, a user added for the run, and the
// load generator (bench/cli/http_load.h, paced) on the calling thread. Rounds
// alternate, idle then tracing, so that a change in the machine's speed hits
// both alike; during a tracing round a thread keeps a trace of the movie
// running (a new one as soon as one ends). One JSON line on stdout.
//
// The flags are validated by the caller (bench_command.cc); run_bench_movies()
// returns the process exit code (cli/common.h): 1 if any reply was wrong or no
// trace ran.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "leasehold/logger.h"

namespace leasehold::bench {

inline constexpr size_t kBenchViewersMax = 1000;

struct BenchMoviesOptions {
  std::string store_uri;        // empty: a fresh SQLite file in a temporary directory
  size_t viewers = 100;         // 1..kBenchViewersMax keep-alive connections
  std::string every = "250ms";  // each viewer's polling period
  int64_t seconds = 10;         // timed, per kind of round (two rounds each): 2..kBenchSecondsMax
  int trace_nice = 10;          // the trace worker's nice value, as under `serve`: 0..19
};

int run_bench_movies(const BenchMoviesOptions& options, Logger& logger);

}  // namespace leasehold::bench
