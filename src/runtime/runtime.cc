#include "runtime/runtime.h"

#include "aws/actions.h"
#include "metrics/registry.h"
#include "runtime/metered_store.h"

namespace leasehold::runtime {

Runtime::Runtime(Logger* logger, metrics::Registry* metrics, BlockingPoolOptions blocking)
    : logger_(logger != nullptr ? logger : &no_logger_),
      metrics_(metrics),
      blocking_(std::make_unique<BlockingPool>(blocking)) {}

namespace {

metrics::Collected& aws_requests(metrics::Registry& registry) {
  return registry.collected(/*counter=*/true, "leasehold_aws_requests_total",
                            "AWS requests sent, by the IAM action that authorises them (in a "
                            "process limited to its role's actions: worker, serve, trace-worker)",
                            {"action"});
}

}  // namespace

Runtime::~Runtime() {
  if (aws_requests_collector_ != 0) aws_requests(*metrics_).remove(aws_requests_collector_);
}

Result<std::unique_ptr<Runtime>> Runtime::open(RuntimeOptions options) {
  // Not make_unique: the constructor is private, so that open() is the only
  // way to get a runtime, and every runtime has its store and manager.
  std::unique_ptr<Runtime> runtime(new Runtime(options.logger, options.metrics, options.blocking));
  auto store = open_store(options.store_uri);
  if (!store.ok()) {
    return store.status().with_context("cannot open store '" + options.store_uri + "'");
  }
  runtime->opened_ = std::move(store).value();
  runtime->store_ = runtime->opened_.get();
  if (runtime->metrics_ != nullptr) {
    runtime->metered_ =
        std::make_unique<MeteredStore>(*runtime->opened_, *runtime->metrics_, runtime->clock_);
    runtime->store_ = runtime->metered_.get();
    runtime->aws_requests_collector_ =
        aws_requests(*runtime->metrics_).add([](std::vector<metrics::Collected::Sample>& out) {
          for (auto& [action, sent] : aws::actions_sent()) {
            if (sent > 0) out.push_back({{std::move(action)}, static_cast<double>(sent)});
          }
        });
  }
  options.lease.info_log = runtime->logger_;
  runtime->leases_ = std::make_unique<LeaseManager>(*runtime->store_, runtime->clock_,
                                                    runtime->random_, std::move(options.lease));
  return runtime;
}

std::unique_ptr<Renewer> Runtime::make_renewer(RenewerOptions options) {
  if (options.info_log == nullptr) options.info_log = logger_;
  return std::make_unique<Renewer>(*leases_, clock_, random_, options);
}

}  // namespace leasehold::runtime
