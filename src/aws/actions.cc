#include "aws/actions.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <memory>

namespace leasehold::aws {
namespace {

struct Allowed {
  std::string action;
  std::atomic<uint64_t> sent{0};
};

// Sorted by action; set once by limit_actions() and never changed after,
// so that check_action() reads it without a lock.
struct Limit {
  std::unique_ptr<Allowed[]> actions;
  size_t size = 0;
};

std::atomic<const Limit*> g_limit{nullptr};

}  // namespace

std::string iam_action(std::string_view service, std::string_view op) {
  constexpr std::string_view kBatch = "Batch";
  if (service == "sqs" && op.ends_with(kBatch)) op.remove_suffix(kBatch.size());
  std::string out(service);
  out += ':';
  out += op;
  return out;
}

void limit_actions(std::vector<std::string> allowed) {
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  // Never freed: check_action() may run on any thread until the process ends.
  auto* limit = new Limit{std::make_unique<Allowed[]>(allowed.size()), allowed.size()};
  for (size_t i = 0; i < allowed.size(); ++i) limit->actions[i].action = std::move(allowed[i]);
  [[maybe_unused]] const Limit* before = g_limit.exchange(limit, std::memory_order_acq_rel);
  assert(before == nullptr && "limit_actions() is called once");
}

namespace internal {

void forget_limit_for_test() { delete g_limit.exchange(nullptr, std::memory_order_acq_rel); }

}  // namespace internal

Status check_action(std::string_view action) {
  const Limit* limit = g_limit.load(std::memory_order_acquire);
  if (limit == nullptr) return {};
  Allowed* end = limit->actions.get() + limit->size;
  Allowed* found =
      std::lower_bound(limit->actions.get(), end, action,
                       [](const Allowed& a, std::string_view b) { return a.action < b; });
  if (found == end || found->action != action) {
    return permission_denied("leasehold was about to send " + std::string(action) +
                             ", which this process's list of AWS actions lacks "
                             "(src/cli/permissions.cc): a bug in leasehold; nothing was sent");
  }
  found->sent.fetch_add(1, std::memory_order_relaxed);
  return {};
}

std::vector<std::pair<std::string, uint64_t>> actions_sent() {
  std::vector<std::pair<std::string, uint64_t>> out;
  const Limit* limit = g_limit.load(std::memory_order_acquire);
  if (limit == nullptr) return out;
  for (size_t i = 0; i < limit->size; ++i) {
    out.emplace_back(limit->actions[i].action,
                     limit->actions[i].sent.load(std::memory_order_relaxed));
  }
  return out;
}

}  // namespace leasehold::aws
