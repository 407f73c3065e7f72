#include "bench/cli/bench_util.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace leasehold::bench {

Result<std::unique_ptr<BenchDir>> BenchDir::make() {
  std::string pattern = (std::filesystem::temp_directory_path() / "leasehold-bench-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return unavailable("cannot create a temporary directory for the benchmark");
  }
  return std::unique_ptr<BenchDir>(new BenchDir(std::move(pattern)));
}

BenchDir::~BenchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

double percentile_us(std::vector<int64_t>& latencies_ns, double p) {
  if (latencies_ns.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(p / 100 * latencies_ns.size()));
  const size_t index = std::clamp<size_t>(rank, 1, latencies_ns.size()) - 1;
  std::nth_element(latencies_ns.begin(), latencies_ns.begin() + index, latencies_ns.end());
  return static_cast<double>(latencies_ns[index]) / 1000.0;
}

}  // namespace leasehold::bench
