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
  for (const char* field :
       {"acquire_per_s", "renew_per_s", "release_per_s", "raw_update_per_s", "renew_vs_raw"}) {
    expect_positive(report, field);
  }
  EXPECT_TRUE(report.at("sdk_update_per_s").is_null());
  // The benchmark leaves no lease behind.
  EXPECT_EQ(lh({"lease", "list"}).out, "");
}

// Fields every `bench http` line carries, and their kind.
constexpr const char* kHttpRates[] = {
    "requests_per_s",  "p50_us",          "p99_us",     "baseline_requests_per_s",
    "baseline_p50_us", "baseline_p99_us", "vs_baseline"};

TEST_F(ProcessTest, BenchHttpReportsEachLevelAgainstTheBaseline) {
  const RunResult r = lh({"bench", "http", "--seconds", "1", "--connections", "1,4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  const int64_t levels[] = {1, 4};
  for (size_t i = 0; i < lines.size(); ++i) {
    const boost::json::object report = parse_object(lines[i]);
    EXPECT_EQ(report.at("bench"), "http");
    EXPECT_EQ(report.at("route"), "GET /api/me");
    EXPECT_EQ(report.at("connections"), levels[i]);
    EXPECT_EQ(report.at("seconds"), 1);
    EXPECT_EQ(report.at("failures"), 0);
    for (const char* field : kHttpRates) expect_positive(report, field);
    expect_positive(report, "server_threads");
    EXPECT_EQ(report.size(), 13u) << lines[i];
  }
  // The run's user is gone with the run.
  EXPECT_EQ(lh({"user", "list"}).out, "");
}

TEST_F(ProcessTest, BenchHttpRefusesBadFlagsBeforeOpeningTheStore) {
  for (const std::vector<std::string>& flags :
       std::vector<std::vector<std::string>>{{"--connections", "0"},
                                             {"--connections", "257"},
                                             {"--connections", "1,,4"},
                                             {"--connections", "1,4,"},
                                             {"--connections", "sixteen"},
                                             {"--connections", ""},
                                             {"--connections", "1,2,3,4,5,6,7,8,9"},
                                             {"--seconds", "0"},
                                             {"--seconds", "3601"}}) {
    std::vector<std::string> args = {"bench", "http"};
    args.insert(args.end(), flags.begin(), flags.end());
    const RunResult r = lh(args);
    EXPECT_EQ(r.exit_code, 2) << flags[0] << " " << flags[1];
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(flags[0]), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db_path()));
}

TEST_F(ProcessTest, BenchMoviesReportsPollingWhileTracingAgainstIdle) {
  const RunResult r =
      lh({"bench", "movies", "--seconds", "2", "--viewers", "8", "--every", "50ms"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const boost::json::object report = parse_object(lines[0]);
  EXPECT_EQ(report.at("bench"), "movies_poll");
  EXPECT_EQ(report.at("viewers"), 8);
  EXPECT_EQ(report.at("every_ms"), 50);
  EXPECT_EQ(report.at("failures"), 0);
  for (const char* field :
       {"idle_requests_per_s", "idle_p50_us", "idle_p99_us", "tracing_requests_per_s",
        "tracing_p50_us", "tracing_p99_us", "p99_vs_idle", "traced_frames_per_s", "traces"}) {
    expect_positive(report, field);
  }
  // 8 viewers every 50 ms: about 160 requests a second in either kind of round.
  EXPECT_NEAR(report.at("idle_requests_per_s").to_number<double>(), 160, 40);
  EXPECT_EQ(lh({"user", "list"}).out, "");
}

TEST_F(ProcessTest, BenchMoviesRefusesBadFlags) {
  for (const std::vector<std::string>& flags :
       std::vector<std::vector<std::string>>{{"--viewers", "0"},
                                             {"--viewers", "1001"},
                                             {"--every", "5ms"},
                                             {"--every", "often"},
                                             {"--seconds", "1"},
                                             {"--trace-nice", "20"}}) {
    std::vector<std::string> args = {"bench", "movies"};
    args.insert(args.end(), flags.begin(), flags.end());
    const RunResult r = lh(args);
    EXPECT_EQ(r.exit_code, 2) << flags[0] << " " << flags[1];
    EXPECT_NE(r.err.find(flags[0]), std::string::npos) << r.err;
  }
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
  for (const char* field : {"renew_per_s", "raw_update_per_s", "renew_vs_raw", "sdk_update_per_s",
                            "renew_vs_sdk", "raw_vs_sdk"}) {
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
