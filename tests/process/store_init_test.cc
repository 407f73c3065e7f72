// `leasehold store init`: creates every table, is idempotent, and leaves a
// store the other commands use as it is; `leasehold store schema` says
// exactly what it makes.
#include <fstream>
#include <set>

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

// On DynamoDB Local, after `store init` (BackendTest::SetUp), botocore
// describes each table and tests/process/schema_check.py compares it with
// what `store schema --json` says: keys, types, indexes, projections,
// stream, billing. The same check on a schema with one index less must fail.
class StoreSchemaTest : public BackendTest {
 protected:
  int check(const boost::json::object& schema, std::string* out) {
    const std::string uri = store_uri();  // dynamodb://us-east-1/PREFIX?endpoint=URL
    const size_t prefix_at = uri.find('/', std::string("dynamodb://").size()) + 1;
    const size_t query_at = uri.find('?');
    const std::string prefix = uri.substr(prefix_at, query_at - prefix_at);
    const std::string endpoint = uri.substr(uri.find("endpoint=") + 9);
    const auto file = dir() / "schema.json";
    std::ofstream(file) << boost::json::serialize(schema);
    const RunResult r =
        run({PYTHON3, std::string(LEASEHOLD_SOURCE_DIR) + "/tests/process/schema_check.py",
             endpoint, prefix, file.string()});
    *out = r.out + r.err;
    return r.exit_code;
  }
};

TEST_P(StoreSchemaTest, SaysExactlyWhatStoreInitMadeAndTheCheckFailsOnAPlantedDifference) {
  const RunResult r = lh({"store", "schema", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  boost::json::object schema = parse_object(r.out);
  ASSERT_EQ(schema.at("tables").as_array().size(), 9u);
  std::string out;
  EXPECT_EQ(check(schema, &out), 0) << out;

  // A planted difference: the connections table without its last index.
  boost::json::array& tables = schema.at("tables").as_array();
  for (boost::json::value& table : tables) {
    if (table.at("TableName") == "connections") {
      table.at("GlobalSecondaryIndexes").as_array().pop_back();
    }
  }
  EXPECT_EQ(check(schema, &out), 1) << out;
  EXPECT_NE(out.find("connections: indexes"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Local, StoreSchemaTest, ::testing::Values(Backend::kDynamoDbLocal),
                         backend_name);

TEST_F(ProcessTest, StoreSchemaListsEachRolesActionsAndOpensNoStore) {
  const RunResult r = run(
      {leasehold_bin(), "--store", "sqlite:/proc/no/such/dir/x.db", "store", "schema", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const boost::json::object schema = parse_object(r.out);
  const auto actions_of = [&](const char* process) {
    std::set<std::string> out;
    for (const auto& p : schema.at("processes").at(process).as_array()) {
      out.insert(std::string(p.at("action").as_string()) + " on " +
                 std::string(p.at("on").as_string()));
    }
    return out;
  };
  // The fleet's worker reads the connections table's stream and sends
  // nothing to SQS or S3; the movie service's processes do the reverse.
  EXPECT_TRUE(actions_of("worker").contains("dynamodb:GetRecords on streams"));
  EXPECT_TRUE(actions_of("worker").contains("dynamodb:Query on indexes"));
  for (const std::string& a : actions_of("worker")) EXPECT_EQ(a.rfind("dynamodb:", 0), 0u) << a;
  for (const char* movies : {"serve", "trace-worker"}) {
    EXPECT_TRUE(actions_of(movies).contains("sqs:ReceiveMessage on queues")) << movies;
    EXPECT_TRUE(actions_of(movies).contains("s3:ListBucket on bucket")) << movies;
    EXPECT_FALSE(actions_of(movies).contains("dynamodb:GetRecords on streams")) << movies;
  }
  // No role creates tables: `serve` does only where they are missing.
  for (const char* process : {"worker", "serve", "trace-worker"}) {
    EXPECT_FALSE(actions_of(process).contains("dynamodb:CreateTable on tables")) << process;
  }
  EXPECT_EQ(schema.at("processes_if_missing").at("serve").as_array().size(), 3u);

  const RunResult text = lh({"store", "schema"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("table connections: Pk (partition)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  stream NEW_AND_OLD_IMAGES"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace leasehold::process_test
