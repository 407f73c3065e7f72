// Runtime: the services one leasehold process runs on, wired the same way
// for every entry point (each CLI command, `lease hold`, the benchmarks, and
// later `serve` and the workers).
//
// Runtime::open() builds them in order: the real clock and random source,
// the store named by a URI (open_store), and a LeaseManager over it; the
// caller's Logger is handed to the library code that logs (the manager, and
// every Renewer made here), and the bounded pool on which event-loop code
// calls the store (include/leasehold/store.h says why). The runtime owns all
// of it except the logger and the metrics registry. Given a registry, it
// wraps the store in a MeteredStore (runtime/metered_store.h) before anything
// uses it, so that every store call the process makes is timed and counted;
// without one (the CLI's commands, the benchmarks) the store is the bare one.
// Tables are the caller's business: each entry point ensures or requires
// the ones it uses.
//
// Entry points take their RealClock and SystemRandom from here; the code
// below receives a Clock&, a Random& and a Logger*. Tests that need
// simulated time or faults build those pieces themselves.
//
// Thread-safe: the accessors return objects that are safe for concurrent
// use, and the runtime itself is not modified after open().
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/lease.h"
#include "leasehold/logger.h"
#include "leasehold/random.h"
#include "leasehold/renewer.h"
#include "leasehold/status.h"
#include "leasehold/store.h"
#include "runtime/blocking_pool.h"

namespace leasehold::metrics {
class Registry;
}

namespace leasehold::runtime {

class MeteredStore;

struct RuntimeOptions {
  std::string store_uri;  // sqlite:PATH, dynamodb://REGION/PREFIX, memory:
  // Where library code logs. Not owned; must outlive the runtime. Null logs
  // nothing.
  Logger* logger = nullptr;
  // The lease manager's settings; its info_log is set to `logger`.
  LeaseConfig lease;
  // The pool on which event-loop code calls the store (blocking_pool()).
  BlockingPoolOptions blocking;
  // Where the store's metrics go (runtime/metered_store.h), and the count of
  // the AWS requests the process sent, by IAM action, once it is limited to
  // its role's (leasehold_aws_requests_total; aws/actions.h). Not owned; must
  // outlive the runtime. Null: the store is not wrapped, and costs nothing.
  metrics::Registry* metrics = nullptr;
};

class Runtime {
 public:
  // Opens the store and builds the lease manager. kInvalidArgument for a
  // malformed URI (nothing is created); the store's error otherwise, with
  // the URI in the message.
  static Result<std::unique_ptr<Runtime>> open(RuntimeOptions options);

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  ~Runtime();

  Clock& clock() { return clock_; }
  Random& random() { return random_; }
  // The logger given to open(), or one that writes nothing.
  Logger& logger() { return *logger_; }
  // The store every caller uses: the opened one, or a MeteredStore over it
  // when the options named a registry.
  ItemStore& store() { return *store_; }
  LeaseManager& leases() { return *leases_; }
  // The registry given to open(), or null.
  metrics::Registry* metrics() { return metrics_; }

  // A Renewer over leases() on this runtime's clock and random source, which
  // logs to logger() unless `options.info_log` is set. It must be destroyed
  // before the runtime.
  std::unique_ptr<Renewer> make_renewer(RenewerOptions options = {});

  // Where code on an event loop makes its store calls (blocking_pool.h):
  // its threads start with the first job, so entry points that never use
  // it (the CLI's commands) have none.
  BlockingPool& blocking_pool() { return *blocking_; }

 private:
  Runtime(Logger* logger, metrics::Registry* metrics, BlockingPoolOptions blocking);

  RealClock clock_;
  SystemRandom random_;
  NullLogger no_logger_;
  Logger* const logger_;              // the caller's, or &no_logger_
  metrics::Registry* const metrics_;  // the caller's, or null
  // Collects leasehold_aws_requests_total into metrics_ while the runtime
  // lives (0: no metrics).
  uint64_t aws_requests_collector_ = 0;
  // Declared after what they refer to, so they are destroyed first.
  std::unique_ptr<ItemStore> opened_;      // what open_store() gave
  std::unique_ptr<MeteredStore> metered_;  // over opened_, with metrics only
  ItemStore* store_ = nullptr;             // metered_ or opened_
  std::unique_ptr<LeaseManager> leases_;
  // Last: its jobs use the store, so it finishes them before the store goes.
  std::unique_ptr<BlockingPool> blocking_;
};

}  // namespace leasehold::runtime
