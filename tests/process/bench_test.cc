// `leasehold bench leases` end to end: each backend reports the library's
// figures and its baselines, measured in the same run on the same leases.
// Figures are only checked for presence and sanity here; their values are
// the business of docs/benchmarks.md.
#include "process_util.h"

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

class DynamoDbBenchTest : public BackendTest {};

INSTANTIATE_TEST_SUITE_P(Backends, DynamoDbBenchTest, ::testing::Values(Backend::kDynamoDb),
                         backend_name);

TEST_P(DynamoDbBenchTest, ReportsTheBareHttpAndSdkBaselines) {
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

TEST_P(DynamoDbBenchTest, WithoutTheSdkScriptOnlyTheBareBaselineRuns) {
  const RunResult r = lh({"bench", "leases", "--leases", "5", "--seconds", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const boost::json::object report = parse_object(r.out);
  expect_positive(report, "raw_update_per_s");
  EXPECT_TRUE(report.at("sdk_update_per_s").is_null());
}

}  // namespace
}  // namespace leasehold::process_test
