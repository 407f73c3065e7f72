// Pieces the HTTP benchmarks (bench http, bench movies) share: a temporary directory for a run's
// store and files, and latency percentiles.
//
// Not synchronised; one benchmark, one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "leasehold/status.h"

namespace leasehold::bench {

// A directory of its own under the system's temporary directory, removed
// with what it holds.
class BenchDir {
 public:
  // kUnavailable if it cannot be made.
  static Result<std::unique_ptr<BenchDir>> make();
  ~BenchDir();
  BenchDir(const BenchDir&) = delete;
  BenchDir& operator=(const BenchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  explicit BenchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The nearest-rank percentile `p` (0..100) of `latencies_ns`, in
// microseconds; 0 if there are none. Reorders the vector.
double percentile_us(std::vector<int64_t>& latencies_ns, double p);

}  // namespace leasehold::bench
