#include "testing/eventually.h"

#include <thread>

namespace leasehold::testing {

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds deadline,
                std::chrono::milliseconds poll_every) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(poll_every);
  }
  return true;
}

}  // namespace leasehold::testing
