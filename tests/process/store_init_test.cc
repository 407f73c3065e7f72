// `leasehold store init`: creates every table, is idempotent, and leaves a
// store the other commands use as it is.
#include "process_util.h"

namespace leasehold::process_test {
namespace {

TEST_F(ProcessTest, StoreInitCreatesEveryTableAndIsIdempotent) {
  for (int run = 0; run < 2; ++run) {
    const RunResult r = lh({"store", "init"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), 9u) << r.out;
    EXPECT_EQ(parse_object(lines[0]).at("table"), "leases");
    EXPECT_EQ(parse_object(lines[1]).at("table"), "connections");
    EXPECT_EQ(parse_object(lines[2]).at("table"), "fleet_workers");
    EXPECT_EQ(parse_object(lines[3]).at("table"), "accounts");
    EXPECT_EQ(parse_object(lines[3]).at("indexes"), 2);
    EXPECT_EQ(parse_object(lines[4]).at("table"), "queue_messages");
    EXPECT_EQ(parse_object(lines[4]).at("indexes"), 1);
    EXPECT_EQ(parse_object(lines[5]).at("table"), "movies");
    EXPECT_EQ(parse_object(lines[5]).at("indexes"), 2);
    EXPECT_EQ(parse_object(lines[6]).at("table"), "movie_frames");
    EXPECT_EQ(parse_object(lines[7]).at("table"), "movie_times");
    EXPECT_EQ(parse_object(lines[8]).at("table"), "movie_audit");
    for (const auto& line : lines) EXPECT_EQ(parse_object(line).at("status"), "ready");
  }
  acquire("k", "w");
  EXPECT_EQ(lines_of(lh({"lease", "list"}).out).size(), 1u);
  EXPECT_EQ(lh({"store", "init"}).exit_code, 0);
  EXPECT_EQ(lines_of(lh({"lease", "list"}).out).size(), 1u) << "init must keep what is there";
}

TEST_F(ProcessTest, StoreInitOnAStoreThatCannotBeOpenedExitsOne) {
  const RunResult r =
      run({leasehold_bin(), "--store", "sqlite:/proc/no/such/dir/x.db", "store", "init"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot open store"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace leasehold::process_test
