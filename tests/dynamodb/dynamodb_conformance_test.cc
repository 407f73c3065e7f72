// The conformance suite on the DynamoDB backend, against one dynalite per
// test binary (started on first use), with a fresh table prefix per test so
// that tests never see each other's tables; dynalite is in-memory and its
// tables die with it. Also: the dynamodb:// URI and credential resolution.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "aws/credentials.h"
#include "leasehold/clock.h"
#include "leasehold/random.h"
#include "store/dynamodb/dynamodb_store.h"
#include "testing/temp_dir.h"
#include "tests/conformance/queue_conformance.h"
#include "tests/conformance/store_conformance.h"
#include "tests/dynamodb/dynalite_fixture.h"
#include "tests/dynamodb/fault_proxy.h"
#include "tests/fleet/liveness_fixture.h"

namespace leasehold::conformance {

using fleet::testing::FleetLiveness;

namespace {

using namespace std::chrono_literals;
using aws::Credentials;
using store::dynamodb::DynamoDbOptions;

// Cases skipped on this backend, each with its reason: only a limitation of
// dynalite, the local stand-in, never a difference in meaning.
const std::map<std::string, std::string>& skipped_cases() {
  static const std::map<std::string, std::string> kSkipped{
      {"EnsureTableAddsAnIndexCoveringExistingItems",
       "dynalite limitation: it accepts UpdateTable GlobalSecondaryIndexUpdates Create but never "
       "creates the index (actions/updateTable.js only handles throughput)"},
  };
  return kSkipped;
}

const testing::Dynalite* shared_dynalite() {
  static const std::unique_ptr<testing::Dynalite> dynalite = [] {
    auto started = testing::Dynalite::start();
    if (!started.ok()) {
      ADD_FAILURE() << "dynalite: " << started.status().to_string();
      return std::unique_ptr<testing::Dynalite>();
    }
    return std::move(started).value();
  }();
  return dynalite.get();
}

DynamoDbOptions dynalite_options(const testing::Dynalite& dynalite) {
  static std::atomic<int> next_prefix{0};
  DynamoDbOptions options;
  options.region = "us-east-1";
  options.table_prefix = "t" + std::to_string(next_prefix++) + "_";
  options.endpoint = dynalite.endpoint();
  options.credentials = {"AKIDDYNALITE", "dynalite-does-not-check-secrets", ""};
  options.table_active_timeout = 5s;
  return options;
}

void skip_if_listed(const std::string& test_name) {
  for (const auto& [name, reason] : skipped_cases()) {
    if (test_name.find(name) != std::string::npos) GTEST_SKIP() << reason;
  }
}

Result<std::unique_ptr<ItemStore>> make_dynamodb() {
  // Called from SetUp(): a skip recorded here stops the test body.
  skip_if_listed(::testing::UnitTest::GetInstance()->current_test_info()->name());
  const testing::Dynalite* dynalite = shared_dynalite();
  if (dynalite == nullptr) return unavailable("dynalite did not start");
  return store::dynamodb::open_dynamodb_store(dynalite_options(*dynalite));
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(DynamoDb, StoreConformance,
                         ::testing::Values(StoreFactory{"dynamodb", make_dynamodb}), factory_name);
INSTANTIATE_TEST_SUITE_P(DynamoDb, LeaseConformance,
                         ::testing::Values(StoreFactory{"dynamodb", make_dynamodb}), factory_name);
INSTANTIATE_TEST_SUITE_P(DynamoDb, RenewerConformance,
                         ::testing::Values(StoreFactory{"dynamodb", make_dynamodb}), factory_name);
INSTANTIATE_TEST_SUITE_P(DynamoDb, StoreQueueConformance,
                         ::testing::Values(StoreFactory{"dynamodb", make_dynamodb}), factory_name);
INSTANTIATE_TEST_SUITE_P(DynamoDb, FleetLiveness,
                         ::testing::Values(StoreFactory{"dynamodb", make_dynamodb}), factory_name);
INSTANTIATE_TEST_SUITE_P(DynamoDb, QueueConformance,
                         ::testing::Values(store_queue_backend({"dynamodb", make_dynamodb})),
                         queue_backend_name);

namespace {

// ---------------------------------------------------------------- URIs

TEST(DynamoDbUri, MalformedUrisAreInvalidArgument) {
  for (const char* uri :
       {"dynamodb:", "dynamodb:us-east-1/p", "dynamodb://us-east-1", "dynamodb://us-east-1/",
        "dynamodb:///prefix", "dynamodb://US EAST/p", "dynamodb://us-east-1/bad prefix",
        "dynamodb://us-east-1/p/q",
        "dynamodb://us-east-1/p?endpoint=", "dynamodb://us-east-1/p?other=1",
        "dynamodb://us-east-1/p?", "dynamodb://us-east-1/p?table_wait=5",
        "dynamodb://us-east-1/p?table_wait=", "dynamodb://us-east-1/p?table_wait=1m&table_wait=2m",
        "dynamodb://us-east-1/p?endpoint=http://127.0.0.1:1&endpoint=http://127.0.0.1:2",
        "dynamodb://us-east-1/p?endpoint=ftp://x",
        "dynamodb://us-east-1/p?endpoint=http://10.1.2.3:8000",
        "dynamodb://us-east-1/p?endpoint=http://127.0.0.1:1/path"}) {
    EXPECT_EQ(open_store(uri).status().code(), Code::kInvalidArgument) << uri;
  }
}

TEST(DynamoDbUri, ParametersAreParsed) {
  auto options = store::dynamodb::parse_dynamodb_uri(
      "//eu-west-1/prod_?endpoint=http://127.0.0.1:8000&table_wait=90s");
  ASSERT_TRUE(options.ok()) << options.status().to_string();
  EXPECT_EQ(options->region, "eu-west-1");
  EXPECT_EQ(options->table_prefix, "prod_");
  EXPECT_EQ(options->endpoint, "http://127.0.0.1:8000");
  EXPECT_EQ(options->table_active_timeout, Duration(std::chrono::seconds(90)));
  options = store::dynamodb::parse_dynamodb_uri("//eu-west-1/prod_?table_wait=20m");
  ASSERT_TRUE(options.ok()) << options.status().to_string();
  EXPECT_EQ(options->endpoint, "");
  EXPECT_EQ(options->table_active_timeout, Duration(std::chrono::minutes(20)));
}

TEST(DynamoDbUri, WellFormedUriOpensAndTalksToDynalite) {
  const testing::Dynalite* dynalite = shared_dynalite();
  ASSERT_NE(dynalite, nullptr);
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDDYNALITE", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "dynalite-does-not-check-secrets", 1);
  auto store = open_store("dynamodb://us-east-1/uri_test.?endpoint=" + dynalite->endpoint());
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  EXPECT_EQ((*store)->backend_name(), "dynamodb");
  ASSERT_TRUE((*store)->ensure_table({"tbl", "k", "", {}}).ok());
  ASSERT_TRUE((*store)->put("tbl", {{"k", "a"}, {"v", int64_t{7}}}, {}).ok());
  auto item = (*store)->get("tbl", {"a", ""}, true);
  ASSERT_TRUE(item.ok()) << item.status().to_string();
  EXPECT_EQ(item->at("v"), Value(int64_t{7}));
}

// A second store (another process, as far as the schema cache knows) uses a
// table it never ensured, indexes included.
TEST(DynamoDbStore, TablesMadeElsewhereAreDescribedOnFirstUse) {
  const testing::Dynalite* dynalite = shared_dynalite();
  ASSERT_NE(dynalite, nullptr);
  DynamoDbOptions options = dynalite_options(*dynalite);
  auto first = store::dynamodb::open_dynamodb_store(options);
  auto second = store::dynamodb::open_dynamodb_store(options);
  ASSERT_TRUE(first.ok() && second.ok());
  const TableSpec spec{"shared", "pk", "sk", {{"by-g", "g", "n", AttrType::kInt}}};
  ASSERT_TRUE((*first)->ensure_table(spec).ok());
  ASSERT_TRUE(
      (*first)->put("shared", {{"pk", "a"}, {"sk", "1"}, {"g", "G"}, {"n", int64_t{3}}}, {}).ok());
  auto page = (*second)->query_index("shared", "by-g", "G", KeyRange::ge(int64_t{3}), {});
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ((*second)->get("shared", {"a", ""}, true).status().code(), Code::kInvalidArgument);
  EXPECT_EQ((*second)->ensure_table({"shared", "pk", "", {}}).code(), Code::kInvalidArgument);
}

// A server that is down: nothing was sent, so the error is kUnavailable.
TEST(DynamoDbStore, ServerDownIsUnavailable) {
  DynamoDbOptions options;
  options.region = "us-east-1";
  options.table_prefix = "down_";
  options.endpoint = "http://127.0.0.1:1";
  options.credentials = {"AKID", "secret-never-shown", ""};
  options.attempts_max = 2;
  auto store = store::dynamodb::open_dynamodb_store(options);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  const Status status = (*store)->get("t", {"a", ""}, true).status();
  EXPECT_EQ(status.code(), Code::kUnavailable) << status.to_string();
  EXPECT_EQ(status.message().find("secret-never-shown"), std::string::npos);
}

// The IDs of this process's threads.
std::set<std::string> thread_ids() {
  std::set<std::string> ids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    ids.insert(entry.path().filename().string());
  }
  return ids;
}

// update_each() starts no thread per call, and the store's threads are the
// ones dynamodb_store.h counts: once the first batch has started the
// writers, the process keeps the very same threads through more batches,
// single writes and reads. A host name adds its resolver thread.
TEST(DynamoDbStore, NoCallStartsAThread) {
  const testing::Dynalite* dynalite = shared_dynalite();
  ASSERT_NE(dynalite, nullptr);
  for (const bool by_name : {false, true}) {
    SCOPED_TRACE(by_name ? "localhost" : "127.0.0.1");
    const std::set<std::string> before = thread_ids();
    DynamoDbOptions options = dynalite_options(*dynalite);
    if (by_name) options.endpoint = "http://localhost:" + std::to_string(dynalite->port());
    options.parallel_writes = 6;
    auto store = store::dynamodb::open_dynamodb_store(options);
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    ItemStore& s = **store;
    ASSERT_TRUE(s.ensure_table({"threads", "k", "", {}}).ok());
    std::vector<UpdateRequest> requests;
    for (int i = 0; i < 30; ++i) {
      requests.push_back({{"k" + std::to_string(i), ""}, Update().add("n", 1), {}});
    }
    for (const auto& r : s.update_each("threads", requests))
      ASSERT_TRUE(r.ok()) << r.status().to_string();
    const std::set<std::string> running = thread_ids();
    EXPECT_EQ(running.size(), before.size() + 5 + (by_name ? 1 : 0));
    for (int round = 0; round < 10; ++round) {
      for (const auto& r : s.update_each("threads", requests)) ASSERT_TRUE(r.ok());
      ASSERT_TRUE(s.update("threads", {"k0", ""}, Update().add("n", 1), {}).ok());
      ASSERT_TRUE(s.get("threads", {"k1", ""}, true).ok());
    }
    EXPECT_EQ(thread_ids(), running);
    auto item = s.get("threads", {"k29", ""}, true);
    ASSERT_TRUE(item.ok());
    EXPECT_EQ(item->at("n"), Value(int64_t{11}));
  }
}

// ---------------------------------------------------------------- faults

// A loopback HTTP server that answers from a script: each request takes the
// next reply, or has its connection dropped after it was read (the outcome
// is unknown to the client), or gets no reply for as long as the server
// lives. One thread per connection.
class ScriptedServer {
 public:
  struct Reply {
    int status = 200;
    std::string body = "{}";
    bool drop = false;
    bool hold = false;  // no reply until the server stops, then dropped
  };

  explicit ScriptedServer(std::deque<Reply> script) : script_(std::move(script)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(::listen(listen_fd_, 16), 0);
    EXPECT_EQ(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] {
      for (int fd; (fd = ::accept(listen_fd_, nullptr, nullptr)) >= 0;) {
        std::lock_guard lock(mu_);
        fds_.push_back(fd);
        threads_.emplace_back([this, fd] { serve(fd); });
      }
    });
  }

  ~ScriptedServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    accept_thread_.join();
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    held_.notify_all();
    for (auto& t : threads_) t.join();
    ::close(listen_fd_);
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> targets() {
    std::lock_guard lock(mu_);
    return targets_;
  }

  // From now on, each request's reply waits until `count` requests have been
  // in flight at once, or until `max_wait` after the first such request.
  void hold_replies_until_in_flight(size_t count, Duration max_wait) {
    std::lock_guard lock(mu_);
    hold_count_ = count;
    hold_max_wait_ = max_wait;
  }
  size_t most_in_flight() {
    std::lock_guard lock(mu_);
    return most_in_flight_;
  }

 private:
  // Reads one request; returns its X-Amz-Target, lower-cased, without
  // DynamoDB's prefix ("getitem", "dynamodbstreams_20120810.getrecords"),
  // or nullopt at EOF.
  static std::optional<std::string> read_request(int fd, std::string& pending) {
    char chunk[4096];
    size_t end;
    while ((end = pending.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
      if (n <= 0) return std::nullopt;
      pending.append(chunk, static_cast<size_t>(n));
    }
    std::string head = pending.substr(0, end);
    std::transform(head.begin(), head.end(), head.begin(), ::tolower);
    const size_t at = head.find("content-length:");
    const size_t length = at == std::string::npos ? 0 : std::stoul(head.substr(at + 15));
    while (pending.size() < end + 4 + length) {
      const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
      if (n <= 0) return std::nullopt;
      pending.append(chunk, static_cast<size_t>(n));
    }
    constexpr std::string_view kField = "x-amz-target: ", kDynamoDb = "dynamodb_20120810.";
    const size_t t = head.find(kField);
    std::string target =
        t == std::string::npos
            ? ""
            : head.substr(t + kField.size(), head.find("\r\n", t) - t - kField.size());
    if (target.starts_with(kDynamoDb)) target.erase(0, kDynamoDb.size());
    pending.erase(0, end + 4 + length);
    return target;
  }

  void serve(int fd) {
    std::string pending;
    while (auto target = read_request(fd, pending)) {
      Reply reply;
      {
        std::unique_lock lock(mu_);
        targets_.push_back(*target);
        if (!script_.empty()) {
          reply = script_.front();
          script_.pop_front();
        }
        most_in_flight_ = std::max(most_in_flight_, ++in_flight_);
        if (hold_count_ > 0) {
          if (!hold_deadline_) hold_deadline_ = std::chrono::steady_clock::now() + hold_max_wait_;
          held_.notify_all();
          held_.wait_until(lock, *hold_deadline_, [&] { return most_in_flight_ >= hold_count_; });
        }
        if (reply.hold) held_.wait(lock, [&] { return stopping_; });
        --in_flight_;
      }
      if (reply.drop || reply.hold) break;
      const std::string response =
          "HTTP/1.1 " + std::to_string(reply.status) +
          " X\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: " +
          std::to_string(reply.body.size()) + "\r\n\r\n" + reply.body;
      if (::send(fd, response.data(), response.size(), MSG_NOSIGNAL) < 0) break;
    }
    ::shutdown(fd, SHUT_RDWR);
  }

  std::mutex mu_;
  std::condition_variable held_;
  size_t in_flight_ = 0, most_in_flight_ = 0, hold_count_ = 0;
  bool stopping_ = false;
  Duration hold_max_wait_{};
  std::optional<std::chrono::steady_clock::time_point> hold_deadline_;
  std::deque<Reply> script_;
  std::vector<std::string> targets_;
  std::vector<int> fds_;
  std::vector<std::thread> threads_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread accept_thread_;
};

const char* kDescribed = R"({"Table":{"TableName":"f_t","TableStatus":"ACTIVE",)"
                         R"("AttributeDefinitions":[{"AttributeName":"k","AttributeType":"S"}],)"
                         R"("KeySchema":[{"AttributeName":"k","KeyType":"HASH"}]}})";

ScriptedServer::Reply error_reply(int status, const std::string& type) {
  return {status,
          R"({"__type":"com.amazonaws.dynamodb.v20120810#)" + type + R"(","message":"scripted"})"};
}

DynamoDbOptions scripted_options(const ScriptedServer& server, std::vector<Duration>* pauses) {
  DynamoDbOptions options;
  options.region = "us-east-1";
  options.table_prefix = "f_";
  options.endpoint = server.endpoint();
  options.credentials = {"AKID", "secret-never-shown", ""};
  options.sleep = [pauses](Duration d) { pauses->push_back(d); };  // tests never sleep
  return options;
}

std::unique_ptr<ItemStore> open_scripted(DynamoDbOptions options) {
  auto store = store::dynamodb::open_dynamodb_store(std::move(options));
  EXPECT_TRUE(store.ok()) << store.status().to_string();
  return store.ok() ? std::move(store).value() : nullptr;
}

std::unique_ptr<ItemStore> store_for(const ScriptedServer& server, std::vector<Duration>* pauses) {
  return open_scripted(scripted_options(server, pauses));
}

size_t count_of(const std::vector<std::string>& targets, std::string_view target) {
  return static_cast<size_t>(std::count(targets.begin(), targets.end(), target));
}

TEST(DynamoDbFaults, ThrottlingAnd5xxAreRetriedWithCappedJitteredBackoff) {
  ScriptedServer server({{200, kDescribed},
                         error_reply(400, "ThrottlingException"),
                         error_reply(400, "ProvisionedThroughputExceededException"),
                         error_reply(500, "InternalServerError"),
                         {200, R"({"Item":{"k":{"S":"a"},"v":{"N":"5"}}})"}});
  std::vector<Duration> pauses;
  auto store = store_for(server, &pauses);
  ASSERT_NE(store, nullptr);
  auto item = store->get("t", {"a", ""}, true);
  ASSERT_TRUE(item.ok()) << item.status().to_string();
  EXPECT_EQ(item->at("v"), Value(int64_t{5}));
  EXPECT_EQ(server.targets(), (std::vector<std::string>{"describetable", "getitem", "getitem",
                                                        "getitem", "getitem"}));
  ASSERT_EQ(pauses.size(), 3u);
  for (Duration d : pauses) EXPECT_LE(d, Duration(800ms));
}

// A read is sent again after a 5xx, a write only after throttling; either
// way attempts_max bounds it, and giving up is kUnavailable. (Until writes
// stopped being resent after a 5xx, this put was answered 503.)
TEST(DynamoDbFaults, RetriesAreBoundedAndEndUnavailable) {
  for (const bool write : {false, true}) {
    SCOPED_TRACE(write ? "PutItem throttled" : "GetItem answered 503");
    std::deque<ScriptedServer::Reply> script{{200, kDescribed}};
    for (int i = 0; i < 10; ++i) {
      script.push_back(write ? error_reply(400, "ProvisionedThroughputExceededException")
                             : error_reply(503, "ServiceUnavailable"));
    }
    ScriptedServer server(std::move(script));
    std::vector<Duration> pauses;
    auto store = store_for(server, &pauses);
    ASSERT_NE(store, nullptr);
    const Status status =
        write ? store->put("t", {{"k", "a"}}, {}) : store->get("t", {"a", ""}, true).status();
    EXPECT_EQ(status.code(), Code::kUnavailable) << status.to_string();
    EXPECT_NE(status.message().find("5 attempts"), std::string::npos) << status.to_string();
    EXPECT_EQ(server.targets().size(), 1u + 5u);  // DescribeTable + attempts_max
  }
}

// Every row of the store's error table, seen from outside: for one error
// reply, what a read (GetItem) and a write (UpdateItem) return, and whether
// it was sent again (attempts_max is 2 and the second attempt succeeds, so
// kOk means "sent again"). A write is sent again only when the reply
// promises that nothing was applied; after an answer that may have followed
// the write, or one the store does not know, it is kUnknownOutcome.
struct ErrorRow {
  int status;
  std::string type;  // "" sends a body that is not JSON
  Code read;
  Code write;
};

const std::vector<ErrorRow>& error_rows() {
  using C = Code;
  static const std::vector<ErrorRow> kRows = {
      {400, "ConditionalCheckFailedException", C::kConditionFailed, C::kConditionFailed},
      {400, "ResourceNotFoundException", C::kNotFound, C::kNotFound},
      {400, "ValidationException", C::kInvalidArgument, C::kInvalidArgument},
      {400, "SerializationException", C::kInvalidArgument, C::kInvalidArgument},
      {400, "ResourceInUseException", C::kAlreadyExists, C::kAlreadyExists},
      {400, "ExpiredIteratorException", C::kFailedPrecondition, C::kFailedPrecondition},
      {400, "TrimmedDataAccessException", C::kNotFound, C::kNotFound},
      {400, "UnrecognizedClientException", C::kUnavailable, C::kUnavailable},
      {403, "InvalidSignatureException", C::kUnavailable, C::kUnavailable},
      {403, "MissingAuthenticationToken", C::kUnavailable, C::kUnavailable},
      {403, "MissingAuthenticationTokenException", C::kUnavailable, C::kUnavailable},
      {400, "AccessDeniedException", C::kUnavailable, C::kUnavailable},
      {400, "ExpiredTokenException", C::kUnavailable, C::kUnavailable},
      {403, "IncompleteSignatureException", C::kUnavailable, C::kUnavailable},
      {403, "InvalidClientTokenId", C::kUnavailable, C::kUnavailable},
      {403, "SignatureDoesNotMatch", C::kUnavailable, C::kUnavailable},
      {400, "ProvisionedThroughputExceededException", C::kOk, C::kOk},
      {400, "ThrottlingException", C::kOk, C::kOk},
      {400, "RequestLimitExceeded", C::kOk, C::kOk},
      {400, "LimitExceededException", C::kOk, C::kOk},
      {500, "InternalServerError", C::kOk, C::kUnknownOutcome},
      {503, "ServiceUnavailable", C::kOk, C::kUnknownOutcome},
      {502, "", C::kOk, C::kUnknownOutcome},  // a load balancer's page
      {504, "NewServerSideException", C::kOk, C::kUnknownOutcome},
      {400, "NewClientSideException", C::kInvalidArgument, C::kUnknownOutcome},
      {413, "", C::kInvalidArgument, C::kUnknownOutcome},
      {200, "", C::kInternal, C::kUnknownOutcome},  // a success whose body is not JSON
  };
  return kRows;
}

// The code a read or write got after `error` then a success, and how many
// times it was sent.
std::pair<Code, size_t> outcome_after(const ScriptedServer::Reply& error, bool write) {
  const ScriptedServer::Reply success{200, write ? "{}" : R"({"Item":{"k":{"S":"a"}}})"};
  ScriptedServer server({{200, kDescribed}, error, success});
  std::vector<Duration> pauses;
  DynamoDbOptions options = scripted_options(server, &pauses);
  options.attempts_max = 2;
  auto store = open_scripted(std::move(options));
  if (store == nullptr) return {Code::kInternal, 0};
  const Status status =
      write ? store->update("t", {"a", ""}, Update().set("n", int64_t{1}), {}).status()
            : store->get("t", {"a", ""}, true).status();
  return {status.code(), count_of(server.targets(), write ? "updateitem" : "getitem")};
}

TEST(DynamoDbFaults, EveryErrorReplyIsRetriedOrReturnedAsTheErrorTableSays) {
  for (const ErrorRow& row : error_rows()) {
    SCOPED_TRACE(std::to_string(row.status) + " " + (row.type.empty() ? "(not JSON)" : row.type));
    const ScriptedServer::Reply error = row.type.empty()
                                            ? ScriptedServer::Reply{row.status, "<html>busy</html>"}
                                            : error_reply(row.status, row.type);
    const auto [read, reads_sent] = outcome_after(error, false);
    EXPECT_EQ(code_name(read), code_name(row.read)) << "GetItem";
    EXPECT_EQ(reads_sent, row.read == Code::kOk ? 2u : 1u) << "GetItem";
    const auto [write, writes_sent] = outcome_after(error, true);
    EXPECT_EQ(code_name(write), code_name(row.write)) << "UpdateItem";
    EXPECT_EQ(writes_sent, row.write == Code::kOk ? 2u : 1u) << "UpdateItem";
  }
}

// A write that applied and was then answered 5xx is kUnknownOutcome, applied
// once: sent again, as it used to be, an add() counts twice.
TEST(DynamoDbFaults, AnAddAppliedThenAnswered5xxIsUnknownAndCountsOnce) {
  const testing::Dynalite* dynalite = shared_dynalite();
  ASSERT_NE(dynalite, nullptr);
  auto proxy = testing::FaultProxy::start(dynalite->port());
  ASSERT_TRUE(proxy.ok()) << proxy.status().to_string();
  DynamoDbOptions options = dynalite_options(*dynalite);
  options.endpoint = (*proxy)->endpoint();
  auto store = store::dynamodb::open_dynamodb_store(options);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  ItemStore& s = **store;
  ASSERT_TRUE(s.ensure_table({"counters", "k", "", {}}).ok());
  ASSERT_TRUE(s.update("counters", {"a", ""}, Update().add("n", 1), {}).ok());
  for (const auto& [status, type] : std::vector<std::pair<int, std::string>>{
           {500, "InternalServerError"}, {503, "ServiceUnavailable"}, {503, ""}}) {
    SCOPED_TRACE(std::to_string(status) + " " + type);
    const Result<Item> before = s.get("counters", {"a", ""}, true);
    ASSERT_TRUE(before.ok()) << before.status().to_string();
    testing::FaultRule rule;
    rule.operation = "UpdateItem";
    rule.action = testing::FaultAction::kForwardThenError;
    rule.status = status;
    rule.error_type = type;
    (*proxy)->clear_log();
    (*proxy)->add_rule(rule);
    const Result<Item> added = s.update("counters", {"a", ""}, Update().add("n", 1), {});
    EXPECT_EQ(code_name(added.status().code()), code_name(Code::kUnknownOutcome))
        << added.status().to_string();
    EXPECT_EQ((*proxy)->count("UpdateItem"), 1) << (*proxy)->log();
    const Result<Item> after = s.get("counters", {"a", ""}, true);
    ASSERT_TRUE(after.ok()) << after.status().to_string();
    EXPECT_EQ(std::get<int64_t>(after->at("n")), std::get<int64_t>(before->at("n")) + 1);
  }
}

TEST(DynamoDbFaults, ConditionFailureIsNeverRetried) {
  ScriptedServer server({{200, kDescribed}, error_reply(400, "ConditionalCheckFailedException")});
  std::vector<Duration> pauses;
  auto store = store_for(server, &pauses);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->put("t", {{"k", "a"}}, cond::not_exists("k")).code(), Code::kConditionFailed);
  EXPECT_EQ(server.targets().size(), 2u);
  EXPECT_TRUE(pauses.empty());
}

TEST(DynamoDbFaults, AWriteWhoseReplyIsLostIsUnknownAndNotResent) {
  ScriptedServer server({{200, kDescribed}, {0, "", true}});
  std::vector<Duration> pauses;
  auto store = store_for(server, &pauses);
  ASSERT_NE(store, nullptr);
  const Status status = store->update("t", {"a", ""}, Update().add("n", 1), {}).status();
  EXPECT_EQ(status.code(), Code::kUnknownOutcome) << status.to_string();
  EXPECT_EQ(server.targets(), (std::vector<std::string>{"describetable", "updateitem"}));
}

// DynamoDB has no conditional batch write: update_each() overlaps its
// writes, so a heartbeat round costs a few round trips, not one per lease.
// The server holds every reply until four writes are in flight at once; one
// write at a time would never get there (and would wait out the deadline).
TEST(DynamoDbStore, UpdateEachSendsItsWritesConcurrently) {
  ScriptedServer server({{200, kDescribed}});
  std::vector<Duration> pauses;
  auto store = store_for(server, &pauses);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->get("t", {"warm", ""}, true).status().code() == Code::kNotFound);
  server.hold_replies_until_in_flight(4, std::chrono::seconds(10));
  std::vector<UpdateRequest> requests;
  for (int i = 0; i < 8; ++i) {
    requests.push_back({{"k" + std::to_string(i), ""}, Update().set("n", int64_t{i}), {}});
  }
  const std::vector<Result<Item>> results = store->update_each("t", requests);
  ASSERT_EQ(results.size(), requests.size());
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << i << ": " << results[i].status().to_string();
    EXPECT_EQ(results[i]->at("k"), Value("k" + std::to_string(i))) << "results keep their order";
  }
  EXPECT_GE(server.most_in_flight(), 4u);
}

// update_each() bounds the whole call by its timeout, because a heartbeat
// that lands after its lease's deadline is worthless: a write sent without a
// reply by then is kUnknownOutcome, and a write not yet sent stays unsent and
// kUnavailable. The server holds every write's reply; two writers send the
// first two writes. Without the bound each round of writes waited out the
// whole request_timeout (5 s here).
TEST(DynamoDbStore, UpdateEachReturnsByItsTimeoutWhenRepliesAreHeld) {
  std::deque<ScriptedServer::Reply> script{{200, kDescribed}, {200, "{}"}};
  for (int i = 0; i < 10; ++i) script.push_back({.hold = true});
  ScriptedServer server(std::move(script));
  std::vector<Duration> pauses;
  DynamoDbOptions options = scripted_options(server, &pauses);
  options.request_timeout = 5s;
  options.parallel_writes = 2;
  auto store = open_scripted(std::move(options));
  ASSERT_NE(store, nullptr);
  // Caches the table's schema, so that only writes meet the held replies.
  ASSERT_EQ(store->get("t", {"warm", ""}, true).status().code(), Code::kNotFound);
  std::vector<UpdateRequest> requests;
  for (int i = 0; i < 5; ++i) {
    requests.push_back({{"k" + std::to_string(i), ""}, Update().set("n", int64_t{i}), {}});
  }
  const auto started = std::chrono::steady_clock::now();
  const std::vector<Result<Item>> results = store->update_each("t", requests, 300ms);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, 3s) << "request_timeout is 5 s";
  ASSERT_EQ(results.size(), requests.size());
  size_t unknown = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const Status& status = results[i].status();
    if (status.code() == Code::kUnknownOutcome) ++unknown;
    // The first write goes out at once; at most two are in flight, and
    // neither is answered, so the last three are never sent.
    if (i == 0 || i >= 2) {
      EXPECT_EQ(code_name(status.code()),
                code_name(i == 0 ? Code::kUnknownOutcome : Code::kUnavailable))
          << i << ": " << status.to_string();
    }
    if (status.code() == Code::kUnavailable) {
      EXPECT_NE(status.message().find("not sent before the deadline"), std::string::npos)
          << status.to_string();
    }
  }
  EXPECT_EQ(count_of(server.targets(), "updateitem"), unknown) << "only sent writes are unknown";
}

// Under endless throttling, update_each() gives up at its timeout, with
// kUnavailable (nothing applied), instead of after attempts_max attempts: no
// pause runs past the deadline. The store's clock moves only when it pauses.
TEST(DynamoDbStore, UpdateEachUnderEndlessThrottlingIsUnavailableByItsTimeout) {
  constexpr int kAttemptsMax = 100;
  std::deque<ScriptedServer::Reply> script{{200, kDescribed}};
  for (int i = 0; i < kAttemptsMax; ++i) script.push_back(error_reply(400, "ThrottlingException"));
  ScriptedServer server(std::move(script));
  SimulatedClock clock;
  SeededRandom random(42);
  std::vector<Duration> pauses;
  DynamoDbOptions options = scripted_options(server, &pauses);
  options.clock = &clock;
  options.random = &random;
  options.attempts_max = kAttemptsMax;
  options.backoff_base = 50ms;
  options.backoff_max = 200ms;
  options.sleep = [&](Duration d) {
    pauses.push_back(d);
    clock.advance(d);
  };
  auto store = open_scripted(std::move(options));
  ASSERT_NE(store, nullptr);
  const std::vector<UpdateRequest> requests{{{"a", ""}, Update().set("n", int64_t{1}), {}}};
  const std::vector<Result<Item>> results = store->update_each("t", requests, 300ms);
  ASSERT_EQ(results.size(), 1u);
  const Status& status = results[0].status();
  EXPECT_EQ(code_name(status.code()), code_name(Code::kUnavailable)) << status.to_string();
  EXPECT_NE(status.message().find("deadline"), std::string::npos) << status.to_string();
  Duration paused{};
  for (Duration d : pauses) paused += d;
  EXPECT_LT(paused, Duration(300ms));
  EXPECT_LT(count_of(server.targets(), "updateitem"), static_cast<size_t>(kAttemptsMax));
}

TEST(DynamoDbFaults, RefusedCredentialsAreUnavailableAndSecretFree) {
  ScriptedServer server({{200, kDescribed}, error_reply(400, "UnrecognizedClientException")});
  std::vector<Duration> pauses;
  auto store = store_for(server, &pauses);
  ASSERT_NE(store, nullptr);
  const Status status = store->get("t", {"a", ""}, true).status();
  EXPECT_EQ(status.code(), Code::kUnavailable);
  EXPECT_NE(status.message().find("credentials"), std::string::npos) << status.to_string();
  EXPECT_EQ(status.message().find("secret-never-shown"), std::string::npos);
}

TEST(DynamoDbFaults, MissingTableIsNotFound) {
  ScriptedServer server({error_reply(400, "ResourceNotFoundException")});
  std::vector<Duration> pauses;
  auto store = store_for(server, &pauses);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->get("t", {"a", ""}, true).status().code(), Code::kNotFound);
}

// ---------------------------------------------------------------- change feeds

// dynalite has no DynamoDB Streams: it drops CreateTable's
// StreamSpecification and answers the Streams API with
// UnknownOperationException. A table that asks for a change feed is made
// all the same, and made again (ensure_table() finds that there is no
// stream to turn on, rather than failing UpdateTable), and has no feed.
// DynamoDB Local has one (dynamodb_local_feed_test.cc).
TEST(DynamoDbFeed, DynaliteKeepsNoFeed) {
  const testing::Dynalite* dynalite = shared_dynalite();
  ASSERT_NE(dynalite, nullptr);
  const DynamoDbOptions options = dynalite_options(*dynalite);
  TableSpec spec{"fed", "k", "", {}};
  spec.change_feed = true;
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "created" : "a store that finds it made");
    auto store = store::dynamodb::open_dynamodb_store(options);
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    const Status ensured = (*store)->ensure_table(spec);
    ASSERT_TRUE(ensured.ok()) << ensured.to_string();
    ASSERT_TRUE((*store)->ensure_table(spec).ok());
    EXPECT_EQ((*store)->change_feed("fed"), nullptr);
    ASSERT_TRUE((*store)->put("fed", {{"k", "a"}}, {}).ok());
  }
}

// A DescribeTable reply for a table with a change feed's stream.
const char* kDescribedWithStream =
    R"({"Table":{"TableName":"f_t","TableStatus":"ACTIVE",)"
    R"("AttributeDefinitions":[{"AttributeName":"k","AttributeType":"S"}],)"
    R"("KeySchema":[{"AttributeName":"k","KeyType":"HASH"}],)"
    R"("StreamSpecification":{"StreamEnabled":true,"StreamViewType":"NEW_AND_OLD_IMAGES"},)"
    R"("LatestStreamArn":"arn:aws:dynamodb:us-east-1:1:table/f_t/stream/s"}})";

// The feed's requests go to the Streams API; DescribeStream is read to its
// last page, and the shards come parents first, closed ones marked, a
// parent no longer listed (trimmed) forgotten.
TEST(DynamoDbFeed, ShardsArePagedAndParentsComeFirst) {
  ScriptedServer server(
      {{200, kDescribedWithStream},
       {200, R"({"StreamDescription":{"Shards":[)"
             R"({"ShardId":"child","ParentShardId":"parent",)"
             R"("SequenceNumberRange":{"StartingSequenceNumber":"5"}},)"
             R"({"ShardId":"orphan","ParentShardId":"trimmed",)"
             R"("SequenceNumberRange":{"StartingSequenceNumber":"1"}}],)"
             R"("LastEvaluatedShardId":"orphan"}})"},
       {200,
        R"({"StreamDescription":{"Shards":[{"ShardId":"parent",)"
        R"("SequenceNumberRange":{"StartingSequenceNumber":"1","EndingSequenceNumber":"4"}}]}})"}});
  std::vector<Duration> pauses;
  auto store = store_for(server, &pauses);
  ASSERT_NE(store, nullptr);
  ChangeFeed* feed = store->change_feed("t");
  ASSERT_NE(feed, nullptr);
  const Result<std::vector<FeedShard>> shards = feed->shards();
  ASSERT_TRUE(shards.ok()) << shards.status().to_string();
  ASSERT_EQ(shards->size(), 3u);
  EXPECT_EQ((*shards)[0].id, "parent");
  EXPECT_TRUE((*shards)[0].closed);
  EXPECT_EQ((*shards)[1].id, "child");
  EXPECT_EQ((*shards)[1].parent_id, "parent");
  EXPECT_FALSE((*shards)[1].closed);
  EXPECT_EQ((*shards)[2].id, "orphan");
  EXPECT_EQ((*shards)[2].parent_id, "");
  EXPECT_EQ(server.targets(),
            (std::vector<std::string>{"describetable", "dynamodbstreams_20120810.describestream",
                                      "dynamodbstreams_20120810.describestream"}));
}

// GetRecords is a read: sent again after throttling and a 5xx. The errors
// of the Streams API map to the feed's codes, named by the operation and
// AWS's error code; a shard read to its end has no next position.
TEST(DynamoDbFeed, ReadsAreRetriedAndStreamsErrorsMapped) {
  ScriptedServer server(
      {{200, kDescribedWithStream},
       error_reply(400, "LimitExceededException"),
       error_reply(500, "InternalServerError"),
       {200, R"({"Records":[{"eventName":"MODIFY","dynamodb":{"Keys":{"k":{"S":"a"}},)"
             R"("OldImage":{"k":{"S":"a"},"n":{"N":"1"}},"NewImage":{"k":{"S":"a"},"n":{"N":"2"}},)"
             R"("SequenceNumber":"100"}}]})"},
       error_reply(400, "ExpiredIteratorException"),
       error_reply(400, "TrimmedDataAccessException"),
       error_reply(400, "ResourceNotFoundException"),
       error_reply(400, "ValidationException")});
  std::vector<Duration> pauses;
  auto store = store_for(server, &pauses);
  ASSERT_NE(store, nullptr);
  ChangeFeed* feed = store->change_feed("t");
  ASSERT_NE(feed, nullptr);
  const Result<FeedPage> page = feed->read("iterator", 10);
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  EXPECT_EQ(pauses.size(), 2u);
  ASSERT_EQ(page->records.size(), 1u);
  EXPECT_EQ(page->records[0].sequence, "100");
  EXPECT_EQ(page->records[0].key, (Key{"a", ""}));
  EXPECT_EQ(page->records[0].old_image, (Item{{"k", "a"}, {"n", int64_t{1}}}));
  EXPECT_EQ(page->records[0].new_image, (Item{{"k", "a"}, {"n", int64_t{2}}}));
  EXPECT_EQ(page->next, "") << "no NextShardIterator: read to its end";
  for (const auto& [code, type] : std::vector<std::pair<Code, std::string>>{
           {Code::kFailedPrecondition, "ExpiredIteratorException"},
           {Code::kNotFound, "TrimmedDataAccessException"},
           {Code::kNotFound, "ResourceNotFoundException"},
           {Code::kInvalidArgument, "ValidationException"}}) {
    const Status status = feed->read("iterator", 10).status();
    EXPECT_EQ(code_name(status.code()), code_name(code)) << type;
    EXPECT_EQ(status.message(), "GetRecords: " + type + ": scripted");
  }
  EXPECT_EQ(count_of(server.targets(), "dynamodbstreams_20120810.getrecords"), 7u);
}

// A record whose image holds what leasehold cannot read (another tool's
// binary attribute) comes back with that image left out, not as a failed
// page: a reader would otherwise be stuck at that record for good.
TEST(DynamoDbFeed, AnImageItCannotReadIsLeftOutAndTheReadGoesOn) {
  ScriptedServer server(
      {{200, kDescribedWithStream},
       {200,
        R"({"Records":[{"eventName":"MODIFY","dynamodb":{"Keys":{"k":{"S":"a"}},)"
        R"("OldImage":{"k":{"S":"a"},"n":{"N":"1"}},"NewImage":{"k":{"S":"a"},"b":{"B":"AA=="}},)"
        R"("SequenceNumber":"100"}},{"eventName":"MODIFY","dynamodb":{"Keys":{"k":{"S":"b"}},)"
        R"("NewImage":{"k":{"S":"b"}},"SequenceNumber":"101"}}],"NextShardIterator":"on"})"}});
  auto store = store_for(server, nullptr);
  ASSERT_NE(store, nullptr);
  ChangeFeed* feed = store->change_feed("t");
  ASSERT_NE(feed, nullptr);
  const Result<FeedPage> page = feed->read("iterator", 10);
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  ASSERT_EQ(page->records.size(), 2u);
  EXPECT_EQ(page->records[0].old_image, (Item{{"k", "a"}, {"n", int64_t{1}}}));
  EXPECT_FALSE(page->records[0].new_image.has_value());
  EXPECT_EQ(page->records[1].new_image, (Item{{"k", "b"}}));
  EXPECT_EQ(page->next, "on");
}

// ---------------------------------------------------------------- credentials

aws::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(DynamoDbCredentials, EnvironmentComesFirst) {
  auto c = aws::load_credentials(env_of({{"AWS_ACCESS_KEY_ID", "AKID"},
                                         {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                                         {"AWS_SESSION_TOKEN", "TOKEN"},
                                         {"AWS_SHARED_CREDENTIALS_FILE", "/nope"}}));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->access_key_id, "AKID");
  EXPECT_EQ(c->secret_access_key, "SECRET");
  EXPECT_EQ(c->session_token, "TOKEN");
  auto half = aws::load_credentials(env_of({{"AWS_ACCESS_KEY_ID", "AKID"}}));
  EXPECT_EQ(half.status().code(), Code::kInvalidArgument);
}

TEST(DynamoDbCredentials, SharedFileAndProfile) {
  const testing::TempDir dir("leasehold-creds-");
  const auto path = dir.path() / "credentials";
  {
    std::ofstream out(path);
    out << "# comment\n[default]\naws_access_key_id = DEF\naws_secret_access_key=DEFSECRET\n\n"
           "[work]\n  aws_access_key_id = WORK \naws_secret_access_key = WORKSECRET\r\n"
           "aws_session_token = WT\n[broken]\naws_access_key_id = X\n";
  }
  const std::string file = path.string();
  auto def = aws::load_credentials(env_of({{"AWS_SHARED_CREDENTIALS_FILE", file}}));
  ASSERT_TRUE(def.ok()) << def.status().to_string();
  EXPECT_EQ(def->access_key_id, "DEF");
  EXPECT_EQ(def->secret_access_key, "DEFSECRET");
  EXPECT_TRUE(def->session_token.empty());
  auto work = aws::load_credentials(
      env_of({{"AWS_SHARED_CREDENTIALS_FILE", file}, {"AWS_PROFILE", "work"}}));
  ASSERT_TRUE(work.ok()) << work.status().to_string();
  EXPECT_EQ(work->access_key_id, "WORK");
  EXPECT_EQ(work->secret_access_key, "WORKSECRET");
  EXPECT_EQ(work->session_token, "WT");
  for (const char* profile : {"broken", "missing"}) {
    auto bad = aws::load_credentials(
        env_of({{"AWS_SHARED_CREDENTIALS_FILE", file}, {"AWS_PROFILE", profile}}));
    EXPECT_EQ(bad.status().code(), Code::kUnavailable) << profile;
    EXPECT_EQ(bad.status().message().find("SECRET"), std::string::npos);
  }
  auto home = aws::load_credentials(env_of({{"HOME", "/nonexistent-home"}}));
  EXPECT_EQ(home.status().code(), Code::kUnavailable);
}

}  // namespace
}  // namespace leasehold::conformance
