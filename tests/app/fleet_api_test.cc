// The fleet API (app/fleet_api.h) through real sockets, on a memory store:
// who may call what (401, 403), each route's answers and errors, the
// redacted URL for users who are not admins, the lease fields as a worker
// wrote them (through the lease layer, as a worker does), the workers'
// membership, a removed connection's ID refused until its worker lets go,
// and bad input that changes nothing.
#include "app/fleet_api.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <memory>

#include "../server/test_client.h"
#include "app/app.h"
#include "fleet/connections.h"
#include "fleet/members.h"
#include "fleet/schema.h"
#include "leasehold/lease.h"
#include "server/server.h"
#include "store/store_wrapper.h"
#include "testing/capturing_logger.h"
#include "testing/eventually.h"

namespace leasehold::app {
namespace {

namespace json = boost::json;
using server::testing::Client;
using server::testing::HttpResponse;

constexpr char kSecretUrl[] = "wss://feed.example.com/s/{next_seq}?key=hunter2-secret&from=1";

class FleetApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::RuntimeOptions options;
    options.store_uri = "memory:";
    options.metrics = &registry_;
    auto rt = runtime::Runtime::open(options);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    runtime_ = std::move(rt).value();
    ItemStore& store = runtime_->store();
    for (const TableSpec& spec : {accounts::Accounts::table_spec(), fleet::connections_table_spec(),
                                  fleet::workers_table_spec()}) {
      ASSERT_TRUE(store.ensure_table(spec).ok()) << spec.name;
    }
    accounts::AccountsOptions cheap;
    cheap.argon2_memory_kib = 64;
    cheap.argon2_passes = 1;
    accounts_ =
        std::make_unique<accounts::Accounts>(store, runtime_->clock(), runtime_->random(), cheap);
    app_ = std::make_unique<App>(*runtime_, *accounts_, registry_, log_, AppOptions{});
    add_fleet_routes(app_->router(), fleet_store(), fleet_clock(), log_);
    server::ServerOptions server_options;
    server_options.port = 0;
    server_options.threads = 2;
    auto started = server::Server::start(server_options, app_->router(), app_->hooks());
    ASSERT_TRUE(started.ok()) << started.status().to_string();
    server_ = std::move(started).value();
    admin_ = bearer(add_user("ann", true));
    user_ = bearer(add_user("bob", false));
  }
  void TearDown() override {
    if (server_) server_->stop();
  }
  // The store and clock the fleet's routes use.
  virtual ItemStore& fleet_store() { return runtime_->store(); }
  virtual Clock& fleet_clock() { return runtime_->clock(); }

  std::string add_user(std::string name, bool admin) {
    auto added = accounts_->add_user({name, name, admin, "a long enough password"});
    EXPECT_TRUE(added.ok()) << added.status().to_string();
    return added.ok() ? added->token : "";
  }
  static std::string bearer(const std::string& token) {
    return "Authorization: Bearer " + token + "\r\n";
  }

  // One request on a new connection; a body is sent as application/json
  // unless `headers` names another Content-Type.
  HttpResponse call(std::string_view method, std::string_view target, std::string_view headers,
                    std::string_view body = "") {
    std::string all(headers);
    if (!body.empty() && headers.find("Content-Type") == std::string_view::npos) {
      all += "Content-Type: application/json\r\n";
    }
    auto response = server::testing::exchange(server_->port(), method, target, all, body);
    EXPECT_TRUE(response.has_value()) << method << " " << target;
    return response.value_or(HttpResponse{});
  }

  // The body of a 2xx answer, parsed; fails the test for anything else.
  json::object ok_body(const HttpResponse& r, int status = 200) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.header("content-type"), "application/json");
    if (r.status != status) return {};
    return json::parse(r.body).as_object();
  }
  // The error's code and message; fails the test unless the status is `status`.
  std::pair<std::string, std::string> error_of(const HttpResponse& r, int status) {
    EXPECT_EQ(r.status, status) << r.body;
    const json::value body = json::parse(r.body);
    const json::object& error = body.at("error").as_object();
    return {std::string(error.at("code").as_string()),
            std::string(error.at("message").as_string())};
  }

  json::array listed(const std::string& who = "") {
    return ok_body(call("GET", "/api/fleet/connections", who.empty() ? admin_ : who))
        .at("connections")
        .as_array();
  }

  HttpResponse add(std::string_view body) {
    return call("POST", "/api/fleet/connections", admin_, body);
  }

  // Takes the connection's lease as a worker does when it reconciles.
  Lease take(std::string_view id, std::string owner, Duration ttl = std::chrono::seconds(30)) {
    LeaseConfig config;
    config.table = fleet::kConnectionsTable;
    LeaseManager leases(runtime_->store(), runtime_->clock(), runtime_->random(), config);
    AcquireOptions o;
    o.owner = std::move(owner);
    o.ttl = ttl;
    auto lease = leases.acquire(fleet::connection_key(id), o);
    EXPECT_TRUE(lease.ok()) << lease.status().to_string();
    return lease.ok() ? *lease : Lease{};
  }

  // Worker `id` joins as a worker does, its figures saying `owned` and
  // `streams`; its membership lease.
  Lease join_worker(const std::string& id, int64_t owned, const fleet::StreamCounts& streams) {
    LeaseConfig config;
    config.table = fleet::kWorkersTable;
    LeaseManager leases(runtime_->store(), runtime_->clock(), runtime_->random(), config);
    AcquireOptions o;
    o.owner = id;
    o.ttl = std::chrono::seconds(30);
    o.extra_update.set("kind", std::string(fleet::kWorkerKind))
        .append(fleet::member_figures(owned, 50, 0, 0, to_unix_ms(runtime_->clock().wall_now())))
        .append(fleet::stream_figures(streams));
    Result<Lease> member = leases.acquire(fleet::worker_key(id), o);
    EXPECT_TRUE(member.ok()) << member.status().to_string();
    return member.ok() ? *member : Lease{};
  }

  metrics::Registry registry_;
  CapturingLogger log_{LogLevel::kWarn};
  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<accounts::Accounts> accounts_;
  std::unique_ptr<App> app_;
  std::unique_ptr<server::Server> server_;
  std::string admin_, user_;
};

TEST_F(FleetApiTest, WithoutCredentialsEveryRouteIs401) {
  ASSERT_EQ(add(R"({"id":"a","url":"ws://h/"})").status, 201);
  for (const auto& [method, target] :
       std::vector<std::pair<std::string, std::string>>{{"GET", "/api/fleet/connections"},
                                                        {"POST", "/api/fleet/connections"},
                                                        {"POST", "/api/fleet/connections/a/start"},
                                                        {"POST", "/api/fleet/connections/a/stop"},
                                                        {"DELETE", "/api/fleet/connections/a"},
                                                        {"GET", "/api/fleet/workers"},
                                                        {"GET", "/api/fleet/summary"}}) {
    const std::string body =
        method == "POST" && target.ends_with("connections") ? R"({"id":"b","url":"ws://h/"})" : "";
    EXPECT_EQ(error_of(call(method, target, "", body), 401).first, "unauthenticated")
        << method << " " << target;
    EXPECT_EQ(call(method, target, bearer(std::string(64, 'f')), body).status, 401);
  }
  const json::array now = listed();
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].at("desired_state"), "STARTED");
}

TEST_F(FleetApiTest, UsersWhoAreNotAdminsMayReadButNotWrite) {
  ASSERT_EQ(add(R"({"id":"a","url":"ws://h/"})").status, 201);
  EXPECT_EQ(call("GET", "/api/fleet/connections", user_).status, 200);
  EXPECT_EQ(call("GET", "/api/fleet/workers", user_).status, 200);
  const std::string new_one = R"({"id":"b","url":"ws://h/"})";
  EXPECT_EQ(error_of(call("POST", "/api/fleet/connections", user_, new_one), 403).first,
            "forbidden");
  EXPECT_EQ(call("POST", "/api/fleet/connections/a/stop", user_).status, 403);
  EXPECT_EQ(call("POST", "/api/fleet/connections/a/start", user_).status, 403);
  EXPECT_EQ(call("DELETE", "/api/fleet/connections/a", user_).status, 403);
  const json::array now = listed();
  ASSERT_EQ(now.size(), 1u) << "b was not added, a was not removed";
  EXPECT_EQ(now[0].at("id"), "a");
  EXPECT_EQ(now[0].at("desired_state"), "STARTED") << "a was not stopped";
}

TEST_F(FleetApiTest, AnAdminAddsStopsStartsAndRemovesAConnection) {
  const json::object added =
      ok_body(add(R"({"id":"feed-1","url":"wss://feed.example.com/s?from={next_seq}",
                      "seq_field":"data.seq","stopped":true})"),
              201);
  EXPECT_EQ(added.at("id"), "feed-1");
  EXPECT_EQ(added.at("desired_state"), "STOPPED");
  EXPECT_EQ(added.at("ws_url"), "wss://feed.example.com/s?from={next_seq}");
  EXPECT_EQ(added.at("owner"), "");
  EXPECT_EQ(added.at("expires_at_ms"), 0);
  EXPECT_EQ(added.at("last_seq"), 0);
  EXPECT_EQ(added.at("epoch"), 0);
  EXPECT_FALSE(added.contains("token"));
  auto stored = fleet::Connections(runtime_->store(), runtime_->clock()).get("feed-1");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->seq_field, "data.seq");

  ok_body(add(R"({"id":"feed-0","url":"ws://10.0.0.7:9000/s/{last_seq}"})"), 201);
  const json::array both = listed();
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].at("id"), "feed-0") << "sorted by id";
  EXPECT_EQ(both[0].at("desired_state"), "STARTED") << "started unless asked otherwise";
  EXPECT_EQ(both[1].at("id"), "feed-1");

  const json::object started = ok_body(call("POST", "/api/fleet/connections/feed-1/start", admin_));
  EXPECT_EQ(started.at("desired_state"), "STARTED");
  EXPECT_EQ(listed()[1].at("desired_state"), "STARTED");
  const json::object stopped = ok_body(call("POST", "/api/fleet/connections/feed-1/stop", admin_));
  EXPECT_EQ(stopped.at("desired_state"), "STOPPED");
  EXPECT_EQ(ok_body(call("POST", "/api/fleet/connections/feed-1/stop", admin_)).at("desired_state"),
            "STOPPED")
      << "stopping a stopped connection succeeds";

  const json::object removed = ok_body(call("DELETE", "/api/fleet/connections/feed-1", admin_));
  EXPECT_EQ(json::value(removed), json::parse(R"({"id":"feed-1","removed":true})"));
  const json::array left = listed();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].at("id"), "feed-0");
}

TEST_F(FleetApiTest, UnknownAndMalformedIdsAre404And400) {
  for (const char* action : {"start", "stop"}) {
    const std::string path = std::string("/api/fleet/connections/nope/") + action;
    const auto [code, message] = error_of(call("POST", path, admin_), 404);
    EXPECT_EQ(code, "not_found");
    EXPECT_NE(message.find("no connection named 'nope'"), std::string::npos) << message;
    EXPECT_EQ(
        error_of(call("POST", std::string("/api/fleet/connections/a%20b/") + action, admin_), 400)
            .first,
        "bad_request");
  }
  EXPECT_EQ(error_of(call("DELETE", "/api/fleet/connections/nope", admin_), 404).first,
            "not_found");
  EXPECT_EQ(error_of(call("DELETE", "/api/fleet/connections/%7Bx%7D", admin_), 400).first,
            "bad_request");
  EXPECT_EQ(call("DELETE", "/api/fleet/connections/..", admin_).status / 100, 4);
  EXPECT_TRUE(listed().empty()) << "nothing was created by the refused calls";
}

TEST_F(FleetApiTest, BadInputIsRefusedWithTheFieldNamedAndAddsNothing) {
  ASSERT_EQ(add(R"({"id":"taken","url":"ws://h/first"})").status, 201);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"id":"a","url":"http://h/"})", "url: "},
      {R"({"id":"a","url":"wss://h/?from={next}"})", "url: "},
      {R"({"id":"a","url":""})", "url: "},
      {R"({"id":"a"})", "url: missing"},
      {R"({"id":"a","url":7})", "url: expected a string"},
      {R"({"url":"ws://h/"})", "id: missing"},
      {R"({"id":"a b","url":"ws://h/"})", "id: "},
      {R"({"id":"","url":"ws://h/"})", "id: "},
      {R"({"id":"a","url":"ws://h/","seq_field":"a..b"})", "seq_field: "},
      {R"({"id":"a","url":"ws://h/","seq_field":null})", "seq_field: expected a string"},
      {R"({"id":"a","url":"ws://h/","stopped":"yes"})", "stopped: "},
      {R"({"id":"a","url":"ws://h/","owner":"me"})", "unknown field 'owner'"},
      {R"(["id","a"])", "JSON object"},
      {R"({"id":"a","url":)", "not valid JSON"},
  };
  for (const auto& [body, says] : cases) {
    const auto [code, message] = error_of(add(body), 400);
    EXPECT_EQ(code, "bad_request") << body;
    EXPECT_NE(message.find(says), std::string::npos) << body << " answered " << message;
  }
  // The URL may carry a credential: a message about it never quotes it.
  const auto [code, message] = error_of(add(R"({"id":"a","url":"https://h/?key=hunter2"})"), 400);
  EXPECT_EQ(message.find("hunter2"), std::string::npos) << message;

  const auto [conflict, says] = error_of(add(R"({"id":"taken","url":"ws://h/second"})"), 409);
  EXPECT_EQ(conflict, "conflict");
  EXPECT_NE(says.find("already exists"), std::string::npos) << says;

  EXPECT_EQ(error_of(call("POST", "/api/fleet/connections", admin_ + "Content-Type: text/plain\r\n",
                          R"({"id":"a","url":"ws://h/"})"),
                     415)
                .first,
            "unsupported_media_type");
  const std::string big =
      R"({"id":"a","url":"ws://h/","pad":")" + std::string(server::kJsonBodyBytesMax, 'x') + "\"}";
  EXPECT_EQ(error_of(add(big), 413).first, "payload_too_large");

  const json::array now = listed();
  ASSERT_EQ(now.size(), 1u) << "nothing was added";
  EXPECT_EQ(now[0].at("ws_url"), "ws://h/first") << "the taken ID kept its URL";
}

TEST_F(FleetApiTest, ARemovedIdIs409UntilItsWorkerLetsGoThenAddedUnderAHigherEpoch) {
  ASSERT_EQ(add(R"({"id":"feed","url":"ws://h/first"})").status, 201);
  const Lease held = take("feed", "worker-a");
  // DELETE answers at once, while worker-a still holds the connection.
  const json::object removed = ok_body(call("DELETE", "/api/fleet/connections/feed", admin_));
  EXPECT_EQ(json::value(removed), json::parse(R"({"id":"feed","removed":true})"));
  EXPECT_TRUE(listed().empty());
  EXPECT_EQ(error_of(call("DELETE", "/api/fleet/connections/feed", admin_), 404).first,
            "not_found");
  EXPECT_EQ(error_of(call("POST", "/api/fleet/connections/feed/start", admin_), 404).first,
            "not_found");

  const auto [conflict, says] = error_of(add(R"({"id":"feed","url":"ws://h/second"})"), 409);
  EXPECT_EQ(conflict, "conflict");
  EXPECT_EQ(says,
            "connection 'feed' was removed and worker worker-a still holds it (its lease "
            "ends by " +
                fleet::format_utc_ms(held.expires_at_ms) + "); add it again once it has let go");
  EXPECT_TRUE(listed().empty()) << "nothing was added";

  LeaseConfig config;
  config.table = fleet::kConnectionsTable;
  LeaseManager leases(runtime_->store(), runtime_->clock(), runtime_->random(), config);
  ASSERT_TRUE(leases.release(held, ReleaseMode::kExpire).ok());
  const json::object added = ok_body(add(R"({"id":"feed","url":"ws://h/second"})"), 201);
  EXPECT_EQ(added.at("ws_url"), "ws://h/second");
  EXPECT_EQ(added.at("owner"), "");
  EXPECT_EQ(added.at("epoch"), held.epoch) << "kept for the next holder";
  EXPECT_EQ(take("feed", "worker-b").epoch, held.epoch + 1);
}

TEST_F(FleetApiTest, UsersWhoAreNotAdminsGetTheUrlWithoutItsQuery) {
  const json::value body = json::value{{"id", "secret"}, {"url", kSecretUrl}};
  ASSERT_EQ(add(json::serialize(body)).status, 201);
  ASSERT_EQ(add(R"({"id":"plain","url":"ws://h/s/{next_seq}"})").status, 201);
  take("secret", "worker-a");

  const HttpResponse as_user = call("GET", "/api/fleet/connections", user_);
  EXPECT_EQ(as_user.body.find("hunter2"), std::string::npos) << as_user.body;
  const json::array for_user = ok_body(as_user).at("connections").as_array();
  ASSERT_EQ(for_user.size(), 2u);
  EXPECT_EQ(for_user[0].at("ws_url"), "ws://h/s/{next_seq}") << "no query, nothing to hide";
  EXPECT_EQ(for_user[1].at("ws_url"), "wss://feed.example.com/s/{next_seq}?\u2026");
  EXPECT_EQ(for_user[1].at("owner"), "worker-a");

  EXPECT_EQ(listed()[1].at("ws_url"), kSecretUrl) << "admins see the whole URL";

  // Starting or stopping answers with the connection too: the same rule.
  ok_body(call("POST", "/api/fleet/connections/secret/stop", admin_));
  EXPECT_EQ(redact_url_query("ws://h/?"), "ws://h/?\u2026");
  EXPECT_EQ(redact_url_query("ws://h/p"), "ws://h/p");
}

TEST_F(FleetApiTest, TheListShowsTheLeaseAsWorkersWroteItAndTheServersTime) {
  ASSERT_EQ(add(R"({"id":"feed","url":"ws://h/"})").status, 201);
  const Lease first = take("feed", "worker-a");
  LeaseConfig config;
  config.table = fleet::kConnectionsTable;
  LeaseManager leases(runtime_->store(), runtime_->clock(), runtime_->random(), config);
  Update checkpoint;
  checkpoint.set(fleet::kLastSeqAttr, int64_t{1042})
      .set(fleet::kLastErrorAttr, std::string("upstream closed the connection"))
      .set(fleet::kLastErrorAtMsAttr, int64_t{1700000000000})
      .set(fleet::kMessagesAttr, int64_t{1040})
      .set(fleet::kReconnectsAttr, int64_t{2})
      .set(fleet::kLastMessageAtMsAttr, int64_t{1700000001000});
  ASSERT_TRUE(leases.fenced_write(first, checkpoint).ok());

  const int64_t before_ms = to_unix_ms(runtime_->clock().wall_now());
  const HttpResponse answer = call("GET", "/api/fleet/connections", admin_);
  const int64_t after_ms = to_unix_ms(runtime_->clock().wall_now());
  const json::object body = ok_body(answer);
  EXPECT_GE(body.at("now_ms").as_int64(), before_ms);
  EXPECT_LE(body.at("now_ms").as_int64(), after_ms);
  const json::object& c = body.at("connections").as_array().at(0).as_object();
  EXPECT_EQ(c.at("owner"), "worker-a");
  EXPECT_EQ(c.at("epoch"), first.epoch);
  EXPECT_EQ(c.at("expires_at_ms"), first.expires_at_ms);
  EXPECT_GT(c.at("heartbeat_at_ms").as_int64(), 0);
  EXPECT_EQ(c.at("last_seq"), 1042);
  EXPECT_EQ(c.at("last_error"), "upstream closed the connection");
  EXPECT_EQ(c.at("last_error_at_ms"), 1700000000000);
  EXPECT_EQ(c.at("messages"), 1040);
  EXPECT_EQ(c.at("reconnects"), 2);
  EXPECT_EQ(c.at("last_message_at_ms"), 1700000001000);
  EXPECT_EQ(answer.body.find(first.token), std::string::npos) << "never the lease token";
  EXPECT_EQ(c.size(), 13u) << answer.body;

  // Released, as a stopping worker does: the owner stays, the lease expires.
  ASSERT_TRUE(leases.release(first, ReleaseMode::kExpire).ok());
  const Lease second = take("feed", "worker-b");
  const json::array after = listed();
  const json::object& now = after[0].as_object();
  EXPECT_EQ(now.at("owner"), "worker-b");
  EXPECT_EQ(now.at("epoch"), first.epoch + 1);
  EXPECT_EQ(now.at("last_seq"), 1042) << "the checkpoint carries over to the new owner";
  EXPECT_EQ(json::serialize(now).find(second.token), std::string::npos);
}

TEST_F(FleetApiTest, WorkersAreListedAliveOrNotWithTheirFigures) {
  EXPECT_TRUE(ok_body(call("GET", "/api/fleet/workers", user_)).at("workers").as_array().empty());
  LeaseConfig config;
  config.table = fleet::kWorkersTable;
  LeaseManager leases(runtime_->store(), runtime_->clock(), runtime_->random(), config);
  const int64_t now_ms = to_unix_ms(runtime_->clock().wall_now());
  for (const auto& [id, owned] : {std::pair<std::string, int64_t>{"w2", 3}, {"w1", 7}}) {
    AcquireOptions o;
    o.owner = id;
    o.ttl = std::chrono::seconds(30);
    o.extra_update.set("kind", std::string(fleet::kWorkerKind))
        .set("started_at_ms", now_ms - 5000)
        .set("session_ttl_ms", int64_t{3000})
        .set(fleet::kPreviousSessionsAttr, std::string(32, 'f'))
        .append(fleet::member_figures(owned, 50, 1000 * owned, 12.5, now_ms));
    auto lease = leases.acquire(fleet::worker_key(id), o);
    ASSERT_TRUE(lease.ok()) << lease.status().to_string();
    if (id == "w1") {
      ASSERT_TRUE(leases.release(*lease, ReleaseMode::kExpire).ok());  // it left
    }
  }
  const json::object body = ok_body(call("GET", "/api/fleet/workers", user_));
  EXPECT_GE(body.at("now_ms").as_int64(), now_ms);
  const json::array& workers = body.at("workers").as_array();
  ASSERT_EQ(workers.size(), 2u);
  const json::object& w1 = workers[0].as_object();
  EXPECT_EQ(w1.at("id"), "w1");
  EXPECT_EQ(w1.at("alive"), false);
  EXPECT_EQ(w1.at("expires_at_ms"), 0);
  const json::object& w2 = workers[1].as_object();
  EXPECT_EQ(w2.at("id"), "w2");
  EXPECT_EQ(w2.at("alive"), true);
  EXPECT_GT(w2.at("expires_at_ms").as_int64(), now_ms);
  EXPECT_EQ(w2.at("owned"), 3);
  EXPECT_EQ(w2.at("capacity"), 50);
  EXPECT_EQ(w2.at("messages"), 3000);
  EXPECT_DOUBLE_EQ(w2.at("messages_per_s").to_number<double>(), 12.5);
  EXPECT_EQ(w2.at("started_at_ms"), now_ms - 5000);
  EXPECT_EQ(w2.at("updated_at_ms"), now_ms);
  EXPECT_GE(w2.at("heartbeat_at_ms").as_int64(), now_ms);
  EXPECT_EQ(w2.at("session_number"), 1);
  EXPECT_EQ(w2.at("session_ttl_ms"), 3000);
  EXPECT_EQ(w2.size(), 12u);
  // A session's token is its holder's capability: never shown.
  EXPECT_EQ(json::serialize(body).find(std::string(32, 'f')), std::string::npos);
}

// The summary: counts by desired state (counted afresh by the server,
// since no leader ever counted them), the live workers' streams, the free
// connections; the same answer is 304 to a poll that names its tag, and a
// change gives a new one.
TEST_F(FleetApiTest, TheSummaryCountsTheFleetAndAnswers304WhileNothingChanges) {
  ASSERT_EQ(add(R"({"id":"a","url":"ws://h/"})").status, 201);
  ASSERT_EQ(add(R"({"id":"b","url":"ws://h/"})").status, 201);
  ASSERT_EQ(add(R"({"id":"c","url":"ws://h/","stopped":true})").status, 201);
  join_worker("w1", 1, {1, 0, 0, 0});
  take("a", "w1");

  const HttpResponse first = call("GET", "/api/fleet/summary", user_);
  const json::object body = ok_body(first);
  const json::object& connections = body.at("connections").as_object();
  EXPECT_EQ(connections.at("total"), 3);
  EXPECT_EQ(connections.at("started"), 2);
  EXPECT_EQ(connections.at("stopped"), 1);
  EXPECT_GT(connections.at("counted_at_ms").as_int64(), 0) << "counted by the server";
  EXPECT_EQ(connections.at("owned"), 1);
  EXPECT_EQ(connections.at("streaming"), 1);
  EXPECT_EQ(connections.at("not_streaming"), 1);
  EXPECT_EQ(connections.at("streams_known"), true);
  const json::array& workers = body.at("workers").as_array();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].at("id"), "w1");
  EXPECT_EQ(workers[0].at("alive"), true);
  EXPECT_EQ(workers[0].at("streaming"), 1);
  const json::array& free = body.at("free").as_array();
  ASSERT_EQ(free.size(), 1u);
  EXPECT_EQ(free[0].at("id"), "b");
  EXPECT_EQ(body.at("more_free"), false);

  const std::string tag = first.header("etag");
  ASSERT_FALSE(tag.empty());
  const HttpResponse again =
      call("GET", "/api/fleet/summary", user_ + "If-None-Match: " + tag + "\r\n");
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());

  ASSERT_EQ(call("POST", "/api/fleet/connections/b/stop", admin_).status, 200);
  HttpResponse changed;
  ASSERT_TRUE(testing::eventually(
      [&] {
        changed = call("GET", "/api/fleet/summary", user_ + "If-None-Match: " + tag + "\r\n");
        return changed.status != 304;
      },
      std::chrono::seconds(5)));
  const json::object after = ok_body(changed);
  EXPECT_EQ(after.at("connections").at("started"), 1);
  EXPECT_EQ(after.at("connections").at("stopped"), 2);
  EXPECT_TRUE(after.at("free").as_array().empty());
  EXPECT_NE(changed.header("etag"), tag);
}

// What needs attention: the connections no live worker holds, and those a
// live worker names in its attention item (written in its session), in the
// summary and as a list of their own.
TEST_F(FleetApiTest, WhatNeedsAttentionIsInTheSummaryAndListedOnItsOwn) {
  for (const char* id : {"a", "b", "c"}) {
    ASSERT_EQ(add(std::string(R"({"id":")") + id + R"(","url":"ws://h/"})").status, 201);
  }
  const Lease member = join_worker("w1", 2, {1, 1, 0, 1});
  take("a", "w1");
  take("b", "w1");
  const Item attention{{"Pk", fleet::attention_key("w1").pk},
                       {"session", member.token},
                       {"attention", fleet::format_troubles({{"b", "not_streaming", 1234}})}};
  ASSERT_TRUE(runtime_->store().put(fleet::kWorkersTable, attention, Condition()).ok());

  const json::object summary = ok_body(call("GET", "/api/fleet/summary", user_));
  const json::array& troubled = summary.at("attention").as_array();
  ASSERT_EQ(troubled.size(), 1u);
  EXPECT_EQ(troubled[0].at("id"), "b");
  EXPECT_EQ(troubled[0].at("owner"), "w1");
  EXPECT_EQ(troubled[0].at("reason"), "not_streaming");
  EXPECT_EQ(troubled[0].at("since_ms"), 1234);
  EXPECT_EQ(summary.at("free").as_array().size(), 1u);  // c

  const json::object listed = ok_body(call("GET", "/api/fleet/connections?attention=1", user_));
  std::vector<std::string> ids;
  for (const json::value& c : listed.at("connections").as_array()) {
    ids.emplace_back(c.at("id").as_string());
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"c", "b"})) << "the free first, then the held";
  EXPECT_EQ(error_of(call("GET", "/api/fleet/connections?attention=yes", user_), 400).second,
            "attention: expected 1");
}

// Pages of the list: by ID, filtered, with a Link to the next; a poll of
// an unchanged page is 304; bad parameters are 400 naming them.
TEST_F(FleetApiTest, TheListComesInPagesByIdFilteredAnd304WhileUnchanged) {
  for (const char* id : {"b1", "a1", "b3", "b2"}) {
    ASSERT_EQ(add(std::string(R"({"id":")") + id + R"(","url":"ws://h/"})").status, 201);
  }
  ASSERT_EQ(add(R"({"id":"c1","url":"ws://h/","stopped":true})").status, 201);
  const auto ids = [](const json::object& body) {
    std::vector<std::string> out;
    for (const json::value& c : body.at("connections").as_array()) {
      out.emplace_back(c.at("id").as_string());
    }
    return out;
  };
  const HttpResponse first = call("GET", "/api/fleet/connections?limit=2", user_);
  const json::object page1 = ok_body(first);
  EXPECT_EQ(ids(page1), (std::vector<std::string>{"a1", "b1"}));
  EXPECT_EQ(page1.at("next_after"), "b1");
  EXPECT_FALSE(page1.contains("now_ms")) << "a tagged page carries no clock";
  EXPECT_EQ(first.header("link"), "</api/fleet/connections?limit=2&after=b1>; rel=\"next\"");
  const json::object page3 = ok_body(call("GET", "/api/fleet/connections?limit=2&after=b3", user_));
  EXPECT_EQ(ids(page3), (std::vector<std::string>{"c1"}));
  EXPECT_EQ(page3.at("next_after"), "");

  EXPECT_EQ(ids(ok_body(call("GET", "/api/fleet/connections?state=STOPPED", user_))),
            (std::vector<std::string>{"c1"}));
  const HttpResponse prefixed =
      call("GET", "/api/fleet/connections?prefix=b&limit=2&after=b1", user_);
  EXPECT_EQ(ids(ok_body(prefixed)), (std::vector<std::string>{"b2", "b3"}));
  take("b2", "w1");
  EXPECT_TRUE(ids(ok_body(call("GET", "/api/fleet/connections?owner=w1", user_))).empty())
      << "w1 is no member: nothing is held in its sessions";

  const std::string tag = first.header("etag");
  ASSERT_FALSE(tag.empty());
  EXPECT_EQ(call("GET", "/api/fleet/connections?limit=2", user_ + "If-None-Match: " + tag + "\r\n")
                .status,
            304);
  ASSERT_EQ(call("POST", "/api/fleet/connections/a1/stop", admin_).status, 200);
  EXPECT_EQ(call("GET", "/api/fleet/connections?limit=2", user_ + "If-None-Match: " + tag + "\r\n")
                .status,
            200);

  for (const auto& [query, named] :
       std::vector<std::pair<std::string, std::string>>{{"limit=0", "limit"},
                                                        {"limit=501", "limit"},
                                                        {"limit=x", "limit"},
                                                        {"state=REMOVED", "state"},
                                                        {"prefix=a%20b", "prefix"},
                                                        {"owner=%2F", "owner"},
                                                        {"after=", "after"}}) {
    const auto [code, message] =
        error_of(call("GET", "/api/fleet/connections?" + query, user_), 400);
    EXPECT_EQ(code, "bad_request") << query;
    EXPECT_TRUE(message.starts_with(named)) << query << ": " << message;
  }
}

TEST_F(FleetApiTest, ACookieWriteNeedsTheServersOrigin) {
  const HttpResponse signed_in =
      call("POST", "/api/session",
           "Origin: http://127.0.0.1:" + std::to_string(server_->port()) + "\r\n",
           R"({"name":"ann","password":"a long enough password"})");
  ASSERT_EQ(signed_in.status, 200) << signed_in.body;
  const std::string set = signed_in.header("set-cookie");
  const std::string cookie = "Cookie: " + set.substr(0, set.find(';')) + "\r\n";
  EXPECT_EQ(call("POST", "/api/fleet/connections", cookie + "Origin: http://evil.example\r\n",
                 R"({"id":"a","url":"ws://h/"})")
                .status,
            403);
  EXPECT_EQ(call("POST", "/api/fleet/connections",
                 cookie + "Origin: http://127.0.0.1:" + std::to_string(server_->port()) + "\r\n",
                 R"({"id":"a","url":"ws://h/"})")
                .status,
            201);
}

// A store that bills reads as DynamoDB does: its reads are not local, and
// each read costs `units_per_read` read units, which it reports.
class BilledStore final : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;

  std::atomic<int> reads{0};
  std::atomic<double> units_per_read{0.5};

  bool reads_are_local() const override { return false; }
  std::vector<CapacityUse> consumed_capacity() const override {
    return {CapacityUse{"connections", "", units_.load(), 0}};
  }
  Result<Item> get(std::string_view table, const Key& key, bool consistent) override {
    bill();
    return StoreWrapper::get(table, key, consistent);
  }
  Result<std::vector<Item>> batch_get(std::string_view table, std::span<const Key> keys) override {
    bill();
    return StoreWrapper::batch_get(table, keys);
  }
  Result<Page> query(std::string_view table, std::string_view pk, const KeyRange& range,
                     const QueryOptions& options) override {
    bill();
    return StoreWrapper::query(table, pk, range, options);
  }
  Result<Page> query_index(std::string_view table, std::string_view index,
                           std::string_view hash_value, const KeyRange& range,
                           const QueryOptions& options) override {
    bill();
    return StoreWrapper::query_index(table, index, hash_value, range, options);
  }

 private:
  void bill() {
    ++reads;
    units_.fetch_add(units_per_read.load());
  }
  std::atomic<double> units_{0};
};

// The fleet's routes on a store that bills reads, on a clock the test moves.
class FleetApiOnABilledStoreTest : public FleetApiTest {
 protected:
  ItemStore& fleet_store() override {
    if (!billed_) billed_ = std::make_unique<BilledStore>(runtime_->store());
    return *billed_;
  }
  Clock& fleet_clock() override { return clock_; }

  // The owner a page of ten shows for connection `id`.
  std::string owner_shown(std::string_view id) {
    const json::object page = ok_body(call("GET", "/api/fleet/connections?limit=10", user_));
    for (const json::value& c : page.at("connections").as_array()) {
      if (c.at("id").as_string() == id) return std::string(c.at("owner").as_string());
    }
    ADD_FAILURE() << id << " not on the page";
    return "";
  }

  std::unique_ptr<BilledStore> billed_;
  SimulatedClock clock_;
};

// A page stands at least 5 s, and long enough that reading it again costs
// at most 24 read units a minute; a change made through the API is read
// at once.
TEST_F(FleetApiOnABilledStoreTest, APageIsReadAgainAsItsCostAllowsOrAfterAChangeHere) {
  for (const char* id : {"a1", "a2", "a3"}) {
    ASSERT_EQ(add(fmt::format(R"({{"id":"{}","url":"wss://h/s/{}"}})", id, id)).status, 201);
  }
  EXPECT_EQ(owner_shown("a1"), "");
  const int reads = billed_->reads;
  take("a1", "w1");
  EXPECT_EQ(owner_shown("a1"), "");  // as read a moment ago
  EXPECT_EQ(billed_->reads, reads);
  // Each answer says when the store was read, a 304 too.
  const auto read_at = [&](std::string_view headers = "") {
    return call("GET", "/api/fleet/connections?limit=10", user_ + std::string(headers))
        .header("leasehold-read-at-ms");
  };
  const std::string first_read_at = read_at();
  EXPECT_EQ(first_read_at, std::to_string(to_unix_ms(clock_.wall_now())));
  const std::string etag = call("GET", "/api/fleet/connections?limit=10", user_).header("etag");
  ASSERT_FALSE(etag.empty());
  EXPECT_EQ(read_at("If-None-Match: " + etag + "\r\n"), first_read_at);
  clock_.advance(std::chrono::seconds(5));
  EXPECT_EQ(owner_shown("a1"), "w1");
  EXPECT_EQ(read_at(), std::to_string(to_unix_ms(clock_.wall_now())));
  const int read_cost = billed_->reads - reads;
  ASSERT_GT(read_cost, 0);

  // Reads that cost 24 units each: the page stands a minute per read it took.
  billed_->units_per_read = 24;
  clock_.advance(std::chrono::seconds(5));
  take("a2", "w2");
  EXPECT_EQ(owner_shown("a2"), "w2");
  const Duration paced = std::chrono::minutes(read_cost);
  take("a3", "w3");
  clock_.advance(paced - std::chrono::seconds(1));
  EXPECT_EQ(owner_shown("a3"), "");
  clock_.advance(std::chrono::seconds(1));
  EXPECT_EQ(owner_shown("a3"), "w3");

  // An admin's change through the API: the next poll reads.
  ASSERT_EQ(call("POST", "/api/fleet/connections/a1/stop", admin_).status, 200);
  EXPECT_EQ(ok_body(call("GET", "/api/fleet/connections?limit=10&state=STOPPED", user_))
                .at("connections")
                .as_array()
                .size(),
            1u);
}

// The workers are answered from the summary's read, which stands at least
// 2 s (here, where reads are free, no longer): polling both costs what
// polling the summary does.
TEST_F(FleetApiOnABilledStoreTest, TheWorkersComeFromTheSummarysRead) {
  billed_->units_per_read = 0;
  ASSERT_EQ(ok_body(call("GET", "/api/fleet/summary", user_)).at("workers").as_array().size(), 0u);
  const int reads = billed_->reads;
  const json::object workers = ok_body(call("GET", "/api/fleet/workers", user_));
  EXPECT_TRUE(workers.at("workers").as_array().empty());
  EXPECT_TRUE(workers.contains("now_ms"));
  EXPECT_EQ(ok_body(call("GET", "/api/fleet/summary", user_)).at("workers").as_array().size(), 0u);
  EXPECT_EQ(billed_->reads, reads);
  clock_.advance(std::chrono::seconds(2));
  (void)ok_body(call("GET", "/api/fleet/workers", user_));
  EXPECT_GT(billed_->reads, reads);
}

}  // namespace
}  // namespace leasehold::app
