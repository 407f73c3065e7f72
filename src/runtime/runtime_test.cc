// Runtime: what open() builds, and that the logger given to it reaches the
// library code it wires (the lease manager and the renewers it makes).
#include "runtime/runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "metrics/registry.h"
#include "runtime/metered_store.h"
#include "testing/capturing_logger.h"
#include "testing/eventually.h"

namespace leasehold::runtime {
namespace {

// Options on `store_uri`, logging to `logger`.
RuntimeOptions options_for(std::string store_uri, Logger* logger = nullptr) {
  RuntimeOptions options;
  options.store_uri = std::move(store_uri);
  options.logger = logger;
  return options;
}

TEST(RuntimeTest, OpensTheStoreAndAManagerOverIt) {
  auto runtime = Runtime::open(options_for("memory:"));
  ASSERT_TRUE(runtime.ok()) << runtime.status().to_string();
  Runtime& rt = **runtime;
  EXPECT_EQ(rt.store().backend_name(), "memory");
  EXPECT_EQ(&rt.leases().store(), &rt.store());
  EXPECT_EQ(&rt.leases().clock(), &rt.clock());
  EXPECT_FALSE(rt.logger().enabled(LogLevel::kError)) << "no logger given: nothing is logged";
}

TEST(RuntimeTest, AMalformedUriNamesItself) {
  auto runtime = Runtime::open(options_for("nosuch:x"));
  ASSERT_EQ(runtime.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(runtime.status().message().starts_with("cannot open store 'nosuch:x': "))
      << runtime.status().message();
}

TEST(RuntimeTest, TheLeaseConfigIsKeptAndItsLoggerIsTheRuntimes) {
  CapturingLogger log;
  RuntimeOptions options = options_for("memory:", &log);
  options.lease.table = "elsewhere";
  auto runtime = Runtime::open(options);
  ASSERT_TRUE(runtime.ok()) << runtime.status().to_string();
  EXPECT_EQ((*runtime)->leases().config().table, "elsewhere");
  EXPECT_EQ((*runtime)->leases().config().info_log, &log);
  EXPECT_EQ(&(*runtime)->logger(), &log);
}

// A renewer made by the runtime logs to the runtime's logger: here the loss
// of a lease whose item was removed under it.
TEST(RuntimeTest, RenewersItMakesLogToItsLogger) {
  CapturingLogger log;
  auto runtime = Runtime::open(options_for("memory:", &log));
  ASSERT_TRUE(runtime.ok()) << runtime.status().to_string();
  Runtime& rt = **runtime;
  ASSERT_TRUE(rt.store().ensure_table(TableSpec{"leases", "pk", "", {}}).ok());
  AcquireOptions acquire;
  acquire.owner = "me";
  auto lease = rt.leases().acquire({"k", ""}, acquire);
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  ASSERT_TRUE(rt.store().remove("leases", lease->key, {}).ok());

  RenewerOptions options;
  options.renew_every = std::chrono::milliseconds(1);  // due at once
  std::unique_ptr<Renewer> renewer = rt.make_renewer(options);
  renewer->add(*lease, nullptr);
  renewer->start();
  // The runtime's clock is real: wait for the renewal, with a deadline.
  testing::eventually([&] { return renewer->stats().lost != 0; }, std::chrono::seconds(5),
                      std::chrono::milliseconds(1));
  renewer->stop();
  EXPECT_EQ(renewer->stats().lost, 1u);
  EXPECT_NE(log.find("lease on 'k' (slot lease, epoch 1, owner me) lost"), "") << "not logged";
}

// Event-loop code calls the store on the runtime's pool, whose size the
// options set and whose threads wait for the first job.
TEST(RuntimeTest, StoreCallsRunOnTheBlockingPool) {
  RuntimeOptions options = options_for("memory:");
  options.blocking.threads = 2;
  auto runtime = Runtime::open(options);
  ASSERT_TRUE(runtime.ok()) << runtime.status().to_string();
  Runtime& rt = **runtime;
  EXPECT_EQ(rt.blocking_pool().threads_started(), 0u);
  ASSERT_TRUE(rt.store().ensure_table({"t", "pk", "", {}}).ok());

  std::promise<Status> put;
  ASSERT_TRUE(rt.blocking_pool().submit([&] {
    put.set_value(rt.store().put("t", Item{{"pk", std::string("a")}}, Condition()));
  }));
  auto done = put.get_future();
  ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(done.get().ok());
  EXPECT_EQ(rt.blocking_pool().threads_started(), 2u);
  EXPECT_TRUE(rt.store().get("t", {"a", ""}, true).ok());
}

// Without a registry the store is the bare one, as the CLI and the
// benchmarks want it; with one, every caller (the lease manager too) goes
// through a MeteredStore that records into it.
TEST(RuntimeTest, TheStoreIsMeteredOnlyWhenAskedTo) {
  auto bare = Runtime::open(options_for("memory:"));
  ASSERT_TRUE(bare.ok()) << bare.status().to_string();
  EXPECT_EQ((*bare)->metrics(), nullptr);
  EXPECT_EQ(dynamic_cast<MeteredStore*>(&(*bare)->store()), nullptr);

  metrics::Registry registry;
  RuntimeOptions options = options_for("memory:");
  options.metrics = &registry;
  auto metered = Runtime::open(options);
  ASSERT_TRUE(metered.ok()) << metered.status().to_string();
  Runtime& rt = **metered;
  EXPECT_EQ(rt.metrics(), &registry);
  ASSERT_NE(dynamic_cast<MeteredStore*>(&rt.store()), nullptr);
  EXPECT_EQ(&rt.leases().store(), &rt.store());
  EXPECT_EQ(rt.store().backend_name(), "memory");
  ASSERT_TRUE(rt.store().ensure_table(TableSpec{"leases", "pk", "", {}}).ok());
  AcquireOptions acquire;
  acquire.owner = "me";
  ASSERT_TRUE(rt.leases().acquire({"k", ""}, acquire).ok());
  const std::string text = registry.render();
  EXPECT_NE(text.find("leasehold_store_operation_seconds_count{backend=\"memory\","
                      "operation=\"update\"} 1\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace leasehold::runtime
