// `leasehold bench leases` end to end: each backend reports the library's
// figures and its baselines, measured in the same run on the same leases.
// Figures are only checked for presence and sanity here; their values are
// the business of docs/benchmarks.md.
#include <cstdlib>
#include <memory>

#include "process_util.h"
#include "tests/dynamodb/dynalite_fixture.h"

namespace leasehold::process_test {
namespace {

void expect_positive(const boost::json::object& report, const char* field) {
  ASSERT_TRUE(report.contains(field)) << field;
  ASSERT_TRUE(report.at(field).is_number()) << field << " = " << report.at(field);
  EXPECT_GT(report.at(field).to_number<double>(), 0) << field;
}

TEST_F(ProcessTest, BenchLeasesOnSqliteReportsTheCApiBaseline) {
  const RunResult r = lh({"bench", "leases", "--leases", "20", "--seconds", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const boost::json::object report = parse_object(r.out);
  EXPECT_EQ(report.at("backend"), "sqlite");
  EXPECT_EQ(report.at("renew_failures"), 0);
  for (const char* field : {"acquire_per_s", "renew_per_s", "release_per_s", "raw_update_per_s",
                            "renew_vs_raw"}) {
    expect_positive(report, field);
  }
  EXPECT_TRUE(report.at("sdk_update_per_s").is_null());
  // The benchmark leaves no lease behind.
  EXPECT_EQ(lh({"lease", "list"}).out, "");
}

class DynamoDbBenchTest : public ProcessTest {
 protected:
  void SetUp() override {
    auto started = testing::Dynalite::start();
    ASSERT_TRUE(started.ok()) << started.status().to_string();
    dynalite_ = std::move(started).value();
    setenv("AWS_ACCESS_KEY_ID", "AKIDBENCH", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "bench-secret", 1);
  }
  std::string store_uri() const override {
    return "dynamodb://us-east-1/bench_?endpoint=" + dynalite_->endpoint();
  }
  std::unique_ptr<testing::Dynalite> dynalite_;
};

TEST_F(DynamoDbBenchTest, ReportsTheBareHttpAndSdkBaselines) {
  const RunResult r = lh({"bench", "leases", "--leases", "20", "--seconds", "2", "--sdk-baseline",
                          LEASEHOLD_SOURCE_DIR "/bench/sdk_renew_loop.mjs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const boost::json::object report = parse_object(r.out);
  EXPECT_EQ(report.at("backend"), "dynamodb");
  EXPECT_EQ(report.at("renew_failures"), 0);
  for (const char* field : {"renew_per_s", "raw_update_per_s", "renew_vs_raw",
                            "sdk_update_per_s", "renew_vs_sdk", "raw_vs_sdk"}) {
    expect_positive(report, field);
  }
}

TEST_F(DynamoDbBenchTest, WithoutTheSdkScriptOnlyTheBareBaselineRuns) {
  const RunResult r = lh({"bench", "leases", "--leases", "5", "--seconds", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const boost::json::object report = parse_object(r.out);
  expect_positive(report, "raw_update_per_s");
  EXPECT_TRUE(report.at("sdk_update_per_s").is_null());
}

}  // namespace
}  // namespace leasehold::process_test
