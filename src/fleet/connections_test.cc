// Connections on the memory store: the input rules, URL templates, reading
// items, and add / set / set_desired / remove / get / list, with what reaches
// the store and what a lease on a connection looks like through them, and
// the tombstone a removal leaves: what it keeps, and when its ID may be
// added again.
#include "fleet/connections.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <span>
#include <thread>

#include "fleet/members.h"
#include "fleet/schema.h"
#include "fleet/summary.h"
#include "leasehold/lease.h"
#include "leasehold/random.h"
#include "store/memory/memory_store.h"
#include "store/store_wrapper.h"

namespace leasehold::fleet {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kSecret[] = "s3cr3t-api-key";

bool mentions(const Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

// ---------------------------------------------------------------- input rules

TEST(ValidateConnectionId, AcceptsUrlSafeCharacters) {
  for (const std::string& id : std::vector<std::string>{"a", "feed-1", "A.b_c~d-9", "...", ".a",
                                                        "~", std::string(128, 'x')}) {
    EXPECT_TRUE(validate_connection_id(id).ok()) << id;
  }
}

TEST(ValidateConnectionId, RefusesOthersNamingTheId) {
  for (const std::string id :
       {".", "..", "a b", "a/b", "a#b", "a%20", "a?b", "a:b", "été", "a\tb", "{x}"}) {
    const Status s = validate_connection_id(id);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << id;
  }
  EXPECT_TRUE(mentions(validate_connection_id("a/b"), "'a/b'"));
  EXPECT_TRUE(mentions(validate_connection_id("a/b"), "byte 1 ('/')"));
  EXPECT_TRUE(mentions(validate_connection_id(""), "empty"));
  const Status long_id = validate_connection_id(std::string(129, 'x'));
  EXPECT_EQ(long_id.code(), Code::kInvalidArgument);
  EXPECT_TRUE(mentions(long_id, "129 bytes")) << long_id.message();
  // A control character is not echoed.
  EXPECT_FALSE(mentions(validate_connection_id("a\x1b[2Jb"), "\x1b")) << "escape echoed";
}

TEST(ValidateUrlTemplate, AcceptsWebSocketUrlsWithKnownPlaceholders) {
  for (const char* url : {"ws://127.0.0.1:9000/stream", "wss://feed.example.com/s?from={next_seq}",
                          "ws://h/s/{last_seq}/x?after={last_seq}&next={next_seq}",
                          "ws://[::1]:8080/?k=%7Bliteral%7D", "wss://h"}) {
    EXPECT_TRUE(validate_url_template(url).ok())
        << url << ": " << validate_url_template(url).message();
  }
}

TEST(ValidateUrlTemplate, RefusesOtherPlaceholdersAndStrayBraces) {
  const Status unknown = validate_url_template("ws://h/s?from={next}");
  EXPECT_EQ(unknown.code(), Code::kInvalidArgument);
  EXPECT_TRUE(mentions(unknown, "unknown placeholder {next}")) << unknown.message();
  for (const char* url : {"ws://h/{}", "ws://h/{NEXT_SEQ}", "ws://h/{next_seq", "ws://h/next_seq}",
                          "ws://h/{{next_seq}}", "ws://h/{a{next_seq}", "ws://h/{ next_seq}"}) {
    EXPECT_EQ(validate_url_template(url).code(), Code::kInvalidArgument) << url;
  }
}

TEST(ValidateUrlTemplate, RefusesWhatParseWsUrlRefuses) {
  for (const char* url : {"", "http://h/s", "h/s", "ws://", "ws://user:pw@h/s", "ws://h/s#frag",
                          "ws://h:0/", "ws://h:70000/", "ws://h/a b", "ws://h/\xc3\xa9"}) {
    EXPECT_EQ(validate_url_template(url).code(), Code::kInvalidArgument) << url;
  }
}

TEST(ValidateUrlTemplate, LeavesRoomForTheLongestSequenceNumbers) {
  const std::string base = "ws://h/";
  // Fits as it is, but not once {next_seq} (10 bytes) becomes 19 digits.
  const std::string url = base + std::string(2048 - base.size() - 15, 'a') + "{next_seq}";
  ASSERT_LE(url.size(), 2048u);
  const Status s = validate_url_template(url);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_TRUE(mentions(s, "too long")) << s.message();
  EXPECT_TRUE(
      validate_url_template(base + std::string(2048 - base.size() - 19, 'a') + "{last_seq}").ok());
  EXPECT_EQ(validate_url_template(base + std::string(2048, 'a')).code(), Code::kInvalidArgument);
}

TEST(ValidateUrlTemplate, NeverQuotesTheUrl) {
  for (const std::string& url : std::vector<std::string>{
           "ws://h/s?key=" + std::string(kSecret) + "&from={nxt}",
           "http://h/s?key=" + std::string(kSecret), "ws://u:" + std::string(kSecret) + "@h/",
           "ws://h/?key={" + std::string(kSecret) + "}",
           "ws://h/?key=" + std::string(kSecret) + "}"}) {
    const Status s = validate_url_template(url);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << url;
    EXPECT_FALSE(mentions(s, kSecret)) << s.message();
  }
}

TEST(ValidateSeqField, AcceptsDottedPaths) {
  for (const std::string& f : std::vector<std::string>{
           "seq", "data.seq", "a-b_c.D9", "a.b.c.d.e.f.g.h", std::string(256, 's'),
           std::string(127, 'a') + "." + std::string(128, 'b')}) {
    EXPECT_TRUE(validate_seq_field(f).ok()) << f;
  }
}

TEST(ValidateSeqField, RefusesOthers) {
  for (const std::string& f :
       std::vector<std::string>{"", ".seq", "seq.", "a..b", "a b", "a/b", "a[0]", "séq",
                                "a.b.c.d.e.f.g.h.i", std::string(257, 's')}) {
    EXPECT_EQ(validate_seq_field(f).code(), Code::kInvalidArgument) << f;
  }
  EXPECT_TRUE(mentions(validate_seq_field("a[0]"), "'a[0]'"));
  EXPECT_TRUE(mentions(validate_seq_field("a.b.c.d.e.f.g.h.i"), "9 names"));
}

TEST(ExpandUrl, SubstitutesBothPlaceholdersEverywhere) {
  EXPECT_EQ(expand_url("ws://h/s?from={next_seq}", 0), "ws://h/s?from=1");
  EXPECT_EQ(expand_url("ws://h/{last_seq}/{next_seq}?a={last_seq}", 41), "ws://h/41/42?a=41");
  EXPECT_EQ(expand_url("ws://h/plain", 7), "ws://h/plain");
  EXPECT_EQ(expand_url("ws://h/%7Bnext_seq%7D", 7), "ws://h/%7Bnext_seq%7D");
  EXPECT_EQ(expand_url("ws://h/{next_seq}", INT64_MAX - 1), "ws://h/9223372036854775807");
}

// ---------------------------------------------------------------- items

Item connection_item(std::string_view id) {
  return Item{{"Pk", connection_key(id).pk},
              {"desired_state", std::string("STARTED")},
              {"ws_url", std::string("ws://h/s")}};
}

TEST(ParseConnection, ReadsAMinimalItemWithDefaults) {
  auto c = parse_connection(connection_item("a"));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  Connection expected;
  expected.id = "a";
  expected.ws_url = "ws://h/s";
  EXPECT_EQ(*c, expected);
  EXPECT_EQ(c->seq_field, "seq");
}

TEST(ParseConnection, ReadsEveryField) {
  Item item = connection_item("feed.1");
  item["desired_state"] = std::string("STOPPED");
  item["seq_field"] = std::string("data.seq");
  item["lease_owner"] = std::string("w1");
  item["lease_token"] = std::string(32, 'a');
  item["lease_epoch"] = int64_t{3};
  item["lease_expires_at_ms"] = int64_t{1000};
  item["lease_heartbeat_at_ms"] = int64_t{900};
  item["last_seq"] = int64_t{77};
  item["last_error"] = std::string("upstream closed");
  item["last_error_at_ms"] = int64_t{950};
  item["created_at_ms"] = int64_t{5};
  item["removed_at_ms"] = int64_t{6};
  auto c = parse_connection(item);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(*c,
            (Connection{"feed.1", DesiredState::kStopped, "ws://h/s", "data.seq", "w1",
                        std::string(32, 'a'), "", 3, 1000, 900, 77, "upstream closed", 950, 5, 6}));
}

TEST(ParseConnection, ReadsATombstone) {
  Item item = connection_item("a");
  item["desired_state"] = std::string("REMOVED");
  item["removed_at_ms"] = int64_t{1234};
  auto c = parse_connection(item);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->desired_state, DesiredState::kRemoved);
  EXPECT_EQ(c->removed_at_ms, 1234);
  EXPECT_EQ(desired_state_name(DesiredState::kRemoved), "REMOVED");
}

TEST(FormatUtcMs, IsUtcWithMilliseconds) {
  EXPECT_EQ(format_utc_ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_utc_ms(1796110627714), "2026-12-01T07:37:07.714Z");
  EXPECT_EQ(format_utc_ms(1796110627005), "2026-12-01T07:37:07.005Z");
}

TEST(ParseConnection, RefusesItemsThatAreNotConnections) {
  const auto refused = [](const std::function<void(Item&)>& change) {
    Item item = connection_item("a");
    change(item);
    return parse_connection(item).status().code() == Code::kInvalidArgument;
  };
  EXPECT_TRUE(refused([](Item& i) { i.erase("Pk"); }));
  EXPECT_TRUE(refused([](Item& i) { i["Pk"] = std::string("a"); }));
  EXPECT_TRUE(refused([](Item& i) { i["Pk"] = std::string("USER#a"); }));
  EXPECT_TRUE(refused([](Item& i) { i["Pk"] = std::string("CONN#"); }));
  EXPECT_TRUE(refused([](Item& i) { i["Pk"] = std::string("CONN#a/b"); }));
  EXPECT_TRUE(refused([](Item& i) { i["Pk"] = int64_t{1}; }));
  EXPECT_TRUE(refused([](Item& i) { i.erase("desired_state"); }));
  EXPECT_TRUE(refused([](Item& i) { i["desired_state"] = std::string("started"); }));
  EXPECT_TRUE(refused([](Item& i) { i.erase("ws_url"); }));
  EXPECT_TRUE(refused([](Item& i) { i["ws_url"] = true; }));
  EXPECT_TRUE(refused([](Item& i) { i["last_seq"] = std::string("7"); }));
  EXPECT_TRUE(refused([](Item& i) { i["last_seq"] = int64_t{-1}; }));
  EXPECT_TRUE(refused([](Item& i) { i["last_seq"] = INT64_MAX; }));
  EXPECT_TRUE(refused([](Item& i) { i["lease_owner"] = int64_t{1}; }));
  EXPECT_TRUE(refused([](Item& i) { i["lease_epoch"] = std::string("1"); }));
  EXPECT_TRUE(refused([](Item& i) { i["created_at_ms"] = true; }));
  EXPECT_TRUE(refused([](Item& i) { i["removed_at_ms"] = std::string("1"); }));
  EXPECT_TRUE(refused([](Item& i) { i["desired_state"] = std::string("removed"); }));
  EXPECT_FALSE(refused([](Item& i) { i["last_seq"] = INT64_MAX - 1; }));
  EXPECT_FALSE(refused([](Item& i) { i["something_else"] = true; }));
}

// ---------------------------------------------------------------- Connections

// Counts the writes that reach the store, and can run something once, right
// after the next index query for a given hash value (another process acting
// while a listing pages). Single-threaded, as the tests that use it are.
class WatchingStore final : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;

  int writes = 0;
  int page_limit_max = kQueryLimitMax;
  int update_each_calls = 0;
  Status fail_update_each;
  std::string after_query_of;
  std::function<void()> after_query;

  Status put(std::string_view table, const Item& item, const Condition& condition) override {
    ++writes;
    return StoreWrapper::put(table, item, condition);
  }
  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override {
    ++writes;
    return StoreWrapper::update(table, key, update, condition);
  }
  Status remove(std::string_view table, const Key& key, const Condition& condition) override {
    ++writes;
    return StoreWrapper::remove(table, key, condition);
  }
  // Each write of update_each() counts; with fail_update_each set, every
  // write fails with it (none is applied).
  using StoreWrapper::update_each;
  std::vector<Result<Item>> update_each(std::string_view table,
                                        std::span<const UpdateRequest> requests,
                                        Duration timeout) override {
    writes += static_cast<int>(requests.size());
    ++update_each_calls;
    if (!fail_update_each.ok()) {
      return std::vector<Result<Item>>(requests.size(), Result<Item>(fail_update_each));
    }
    return StoreWrapper::update_each(table, requests, timeout);
  }
  Result<Page> query_index(std::string_view table, std::string_view index,
                           std::string_view hash_value, const KeyRange& range,
                           const QueryOptions& options) override {
    QueryOptions limited = options;
    limited.limit = std::min(options.limit, page_limit_max);
    auto page = StoreWrapper::query_index(table, index, hash_value, range, limited);
    if (after_query && hash_value == after_query_of) std::exchange(after_query, nullptr)();
    return page;
  }
};

class ConnectionsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(connections_.ensure_table().ok()); }

  // Two threads add `id` at once: one succeeds, the other is told it exists.
  void two_adds_race(const std::string& id) {
    std::atomic<int> added{0}, refused{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        auto c = connections_.add(NewConnection{id, "ws://h/" + std::to_string(t)});
        (c.ok() ? added : refused)++;
        if (!c.ok()) {
          EXPECT_EQ(c.status().code(), Code::kAlreadyExists);
          EXPECT_TRUE(mentions(c.status(), "already exists")) << c.status().message();
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(added.load(), 1) << id;
    EXPECT_EQ(refused.load(), 1) << id;
  }

  Connection add(const std::string& id, const std::string& url = "ws://h/s?from={next_seq}",
                 bool stopped = false) {
    auto c = connections_.add(NewConnection{id, url, "seq", stopped});
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? *c : Connection{};
  }

  // The connection's item as stored now; an empty item if there is none.
  Item stored(std::string_view id) {
    auto item = memory_->get(kConnectionsTable, connection_key(id), true);
    return item.ok() ? *item : Item{};
  }

  // A worker's lease on connection `id`, which must be free.
  // `session`: the token of the worker's session it belongs to, if any.
  Lease lease_to(LeaseManager& leases, std::string_view id, const std::string& owner,
                 Duration ttl = seconds(20), const std::string& session = "") {
    AcquireOptions options;
    options.owner = owner;
    options.ttl = ttl;
    options.session = session;
    auto lease = leases.acquire(connection_key(id), options);
    EXPECT_TRUE(lease.ok()) << lease.status().to_string();
    return lease.ok() ? *lease : Lease{};
  }

  LeaseConfig connections_lease_config() {
    LeaseConfig config;
    config.table = kConnectionsTable;
    return config;
  }

  std::vector<std::string> listed_ids() {
    auto all = connections_.list();
    EXPECT_TRUE(all.ok()) << all.status().to_string();
    std::vector<std::string> ids;
    if (all.ok()) {
      for (const Connection& c : *all) ids.push_back(c.id);
    }
    return ids;
  }

  SimulatedClock clock_;
  SeededRandom random_{7};
  std::unique_ptr<ItemStore> memory_ = store::make_memory_store();
  WatchingStore store_{*memory_};
  Connections connections_{store_, clock_};
};

TEST_F(ConnectionsTest, AddWritesTheReferenceItem) {
  const Connection added = add("feed-1", "ws://h/s?from={next_seq}");
  auto item = memory_->get(kConnectionsTable, Key{"CONN#feed-1", ""}, true);
  ASSERT_TRUE(item.ok()) << item.status().to_string();
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  EXPECT_EQ(*item, (Item{{"Pk", std::string("CONN#feed-1")},
                         {"desired_state", std::string("STARTED")},
                         {"ws_url", std::string("ws://h/s?from={next_seq}")},
                         {"seq_field", std::string("seq")},
                         {"lease_expires_at_ms", int64_t{0}},
                         {"last_seq", int64_t{0}},
                         {"created_at_ms", now_ms}}));
  Connection expected;
  expected.id = "feed-1";
  expected.ws_url = "ws://h/s?from={next_seq}";
  expected.created_at_ms = now_ms;
  EXPECT_EQ(added, expected);
  auto got = connections_.get("feed-1");
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(*got, added);
}

TEST_F(ConnectionsTest, ANewStartedConnectionIsAnOrphanAtOnce) {
  add("a");
  add("b", "ws://h/b", /*stopped=*/true);
  // The query a worker's reconcile makes: STARTED, lease expired.
  auto page = memory_->query_index(kConnectionsTable, kOrphanIndex, "STARTED",
                                   KeyRange::lt(to_unix_ms(clock_.wall_now())), {});
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(std::get<std::string>(page->items[0].at("Pk")), "CONN#a");
}

TEST_F(ConnectionsTest, AddingATakenIdIsAlreadyExistsAndChangesNothing) {
  const Connection first = add("a", "ws://h/first");
  clock_.advance(seconds(5));
  auto again = connections_.add(NewConnection{"a", "ws://h/second", "other", true});
  EXPECT_EQ(again.status().code(), Code::kAlreadyExists);
  EXPECT_TRUE(mentions(again.status(), "'a'")) << again.status().message();
  auto got = connections_.get("a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, first);
}

TEST_F(ConnectionsTest, BadInputIsInvalidArgumentAndWritesNothing) {
  const std::vector<NewConnection> bad = {
      {"", "ws://h/", "seq", false},    {"a b", "ws://h/", "seq", false},
      {"a", "http://h/", "seq", false}, {"a", "ws://h/{seq}", "seq", false},
      {"a", "ws://h/", "", false},      {"a", "ws://h/", "a..b", false},
  };
  for (const NewConnection& c : bad) {
    EXPECT_EQ(connections_.add(c).status().code(), Code::kInvalidArgument) << c.id << " " << c.url;
  }
  EXPECT_EQ(connections_.set_desired("a/b", DesiredState::kStopped).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(connections_.remove("").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(connections_.set("a/b", ConnectionChange{"ws://h/", std::nullopt}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(connections_.set("a", ConnectionChange{}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(connections_.set("a", ConnectionChange{"http://h/", std::nullopt}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(connections_.set("a", ConnectionChange{"ws://h/", "a..b"}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(connections_.inspect("..").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(connections_.get("a b").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_.writes, 0);
  EXPECT_TRUE(listed_ids().empty());
}

TEST_F(ConnectionsTest, SetDesiredChangesOnlyTheDesiredStateAndIsIdempotent) {
  add("a");
  // A worker holds the lease and has checkpointed.
  LeaseConfig config;
  config.table = kConnectionsTable;
  LeaseManager leases(store_, clock_, random_, config);
  AcquireOptions options;
  options.owner = "worker-1";
  auto lease = leases.acquire(connection_key("a"), options);
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  ASSERT_TRUE(leases.fenced_write(*lease, Update().set("last_seq", int64_t{12})).ok());
  const Item before = *memory_->get(kConnectionsTable, connection_key("a"), true);

  for (const DesiredState state :
       {DesiredState::kStopped, DesiredState::kStopped, DesiredState::kStarted}) {
    auto c = connections_.set_desired("a", state);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->desired_state, state);
    EXPECT_EQ(c->owner, "worker-1");
    EXPECT_EQ(c->epoch, 1);
    EXPECT_EQ(c->last_seq, 12);
    Item expected = before;
    expected["desired_state"] = std::string(desired_state_name(state));
    EXPECT_EQ(*memory_->get(kConnectionsTable, connection_key("a"), true), expected);
  }
  // The lease is untouched: its holder renews as before.
  EXPECT_TRUE(leases.renew(*lease).ok());
}

TEST_F(ConnectionsTest, UnknownIdsAreNotFoundAndWriteNothing) {
  add("a");
  const int writes = store_.writes;
  EXPECT_EQ(connections_.set_desired("b", DesiredState::kStopped).status().code(), Code::kNotFound);
  const Status removed = connections_.remove("b").status();
  EXPECT_EQ(removed.code(), Code::kNotFound);
  EXPECT_TRUE(mentions(removed, "no connection named 'b'")) << removed.message();
  EXPECT_EQ(connections_.set("b", ConnectionChange{"ws://h/", std::nullopt}).status().code(),
            Code::kNotFound);
  EXPECT_EQ(connections_.get("b").status().code(), Code::kNotFound);
  EXPECT_EQ(connections_.inspect("b").status().code(), Code::kNotFound);
  // set's conditional write, refused; set_desired and remove read the
  // state first, and find nothing to write.
  EXPECT_EQ(store_.writes, writes + 1);
  EXPECT_EQ(listed_ids(), std::vector<std::string>{"a"});
  EXPECT_FALSE(memory_->get(kConnectionsTable, connection_key("b"), true).ok());
}

TEST_F(ConnectionsTest, SetChangesOnlyTheUrlAndTheSeqField) {
  add("a", "ws://h/old?from={next_seq}");
  LeaseManager leases(store_, clock_, random_, connections_lease_config());
  const Lease lease = lease_to(leases, "a", "worker-1");
  ASSERT_TRUE(leases.fenced_write(lease, Update().set("last_seq", int64_t{12})).ok());
  Item expected = stored("a");
  clock_.advance(seconds(1));

  auto c = connections_.set("a", ConnectionChange{"wss://h/new/{last_seq}", std::nullopt});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  expected["ws_url"] = std::string("wss://h/new/{last_seq}");
  EXPECT_EQ(stored("a"), expected);
  EXPECT_EQ(c->ws_url, "wss://h/new/{last_seq}");
  EXPECT_EQ(c->seq_field, "seq");
  EXPECT_EQ(c->last_seq, 12);  // resumes from its checkpoint at the new URL
  EXPECT_EQ(c->owner, "worker-1");

  c = connections_.set("a", ConnectionChange{std::nullopt, "data.seq"});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  expected["seq_field"] = std::string("data.seq");
  EXPECT_EQ(stored("a"), expected);

  c = connections_.set("a", ConnectionChange{"ws://h/third", "n"});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  expected["ws_url"] = std::string("ws://h/third");
  expected["seq_field"] = std::string("n");
  EXPECT_EQ(stored("a"), expected);
  EXPECT_EQ(*c, *parse_connection(expected));
  EXPECT_TRUE(leases.renew(lease).ok()) << "the lease is its holder's still";

  // Bad input changes nothing, even with a good field beside it.
  EXPECT_EQ(connections_.set("a", ConnectionChange{"ws://h/fourth", ""}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(stored("a")["ws_url"], Value(std::string("ws://h/third")));
}

TEST_F(ConnectionsTest, RemoveLeavesATombstoneThatOnlyAddSees) {
  add("a");
  add("b");
  LeaseManager leases(store_, clock_, random_, connections_lease_config());
  const Lease lease = lease_to(leases, "a", "worker-1");
  ASSERT_TRUE(leases.fenced_write(lease, Update().set("last_seq", int64_t{12})).ok());
  const Item before = stored("a");
  clock_.advance(seconds(1));

  auto tombstone = connections_.remove("a");
  ASSERT_TRUE(tombstone.ok()) << tombstone.status().to_string();
  const int64_t removed_at_ms = to_unix_ms(clock_.wall_now());
  Item expected = before;
  expected["desired_state"] = std::string("REMOVED");
  expected["removed_at_ms"] = removed_at_ms;
  EXPECT_EQ(stored("a"), expected) << "only the state and the time of removal change";
  EXPECT_EQ(tombstone->desired_state, DesiredState::kRemoved);
  EXPECT_EQ(tombstone->removed_at_ms, removed_at_ms);
  EXPECT_EQ(tombstone->owner, "worker-1");  // who still holds it
  EXPECT_EQ(tombstone->expires_at_ms, lease.expires_at_ms);
  EXPECT_TRUE(lease_held(*tombstone, removed_at_ms));
  EXPECT_EQ(tombstone->epoch, 1);
  EXPECT_EQ(tombstone->last_seq, 12);

  // Missing to everything but add() and inspect(); nothing is written.
  for (const Status& s :
       {connections_.get("a").status(), connections_.remove("a").status(),
        connections_.set_desired("a", DesiredState::kStarted).status(),
        connections_.set_desired("a", DesiredState::kStopped).status(),
        connections_.set("a", ConnectionChange{"ws://h/x", std::nullopt}).status()}) {
    EXPECT_EQ(s.code(), Code::kNotFound) << s.to_string();
    EXPECT_TRUE(mentions(s, "no connection named 'a'")) << s.message();
  }
  EXPECT_EQ(stored("a"), expected);
  EXPECT_EQ(listed_ids(), std::vector<std::string>{"b"});
  auto inspected = connections_.inspect("a");
  ASSERT_TRUE(inspected.ok()) << inspected.status().to_string();
  EXPECT_EQ(*inspected, *tombstone);
  // No worker takes it: it is not among the STARTED orphans, even expired.
  clock_.advance(seconds(60));
  auto orphans = memory_->query_index(kConnectionsTable, kOrphanIndex, "STARTED",
                                      KeyRange::lt(to_unix_ms(clock_.wall_now())), {});
  ASSERT_TRUE(orphans.ok());
  ASSERT_EQ(orphans->items.size(), 1u);
  EXPECT_EQ(orphans->items[0].at("Pk"), Value(std::string("CONN#b")));
}

TEST_F(ConnectionsTest, TheHolderOfARemovedConnectionCanStillLetGo) {
  add("a");
  LeaseManager leases(store_, clock_, random_, connections_lease_config());
  const Lease lease = lease_to(leases, "a", "worker-1");
  ASSERT_TRUE(connections_.remove("a").ok());
  EXPECT_TRUE(leases.renew(lease).ok());
  // Its final checkpoint lands on the tombstone with the release: harmless.
  ASSERT_TRUE(
      leases.release(lease, ReleaseMode::kExpire, Update().set("last_seq", int64_t{20})).ok());
  auto tombstone = connections_.inspect("a");
  ASSERT_TRUE(tombstone.ok());
  EXPECT_EQ(tombstone->desired_state, DesiredState::kRemoved);
  EXPECT_EQ(tombstone->expires_at_ms, 0);
  EXPECT_EQ(tombstone->last_seq, 20);
  EXPECT_FALSE(lease_held(*tombstone, to_unix_ms(clock_.wall_now())));
}

TEST_F(ConnectionsTest, AddingARemovedIdIsRefusedWhileItsHolderHoldsIt) {
  add("a");
  LeaseManager leases(store_, clock_, random_, connections_lease_config());
  const Lease lease = lease_to(leases, "a", "worker-1", seconds(20));
  ASSERT_TRUE(connections_.remove("a").ok());
  const Item tombstone = stored("a");
  // Up to and including the instant the lease ends by this clock.
  for (const int64_t advance_s : {0, 10, 10}) {
    clock_.advance(seconds(advance_s));
    auto again = connections_.add(NewConnection{"a", "ws://h/again"});
    EXPECT_EQ(again.status().code(), Code::kAlreadyExists);
    EXPECT_EQ(again.status().message(),
              "connection 'a' was removed and worker worker-1 still holds it (its lease ends by " +
                  format_utc_ms(lease.expires_at_ms) + "); add it again once it has let go");
    EXPECT_EQ(stored("a"), tombstone) << "nothing written";
  }
  // Once the lease has expired, unreleased (its holder crashed), the ID is
  // free again, as it would be to a worker taking the lease over.
  clock_.advance(milliseconds(1));
  auto added = connections_.add(NewConnection{"a", "ws://h/again"});
  ASSERT_TRUE(added.ok()) << added.status().to_string();
  EXPECT_EQ(lease_to(leases, "a", "worker-2").epoch, 2);
}

// The bug this tombstone fixes: an ID removed and added again started a new
// item, and its lease's epoch began again at 1.
TEST_F(ConnectionsTest, AnIdAddedAgainAfterItsHolderLetGoStartsAfreshUnderAHigherEpoch) {
  add("a", "ws://h/first", /*stopped=*/false);
  LeaseManager leases(store_, clock_, random_, connections_lease_config());
  // Taken in a session: its token goes with the old connection too.
  const Lease old = lease_to(leases, "a", "worker-1", seconds(20), std::string(32, 'e'));
  ASSERT_TRUE(leases
                  .fenced_write(old, Update()
                                         .set("last_seq", int64_t{12})
                                         .set("last_error", std::string("reset"))
                                         .set("last_error_at_ms", int64_t{5})
                                         .set(kMessagesAttr, int64_t{12})
                                         .set(kReconnectsAttr, int64_t{1})
                                         .set(kLastMessageAtMsAttr, int64_t{6}))
                  .ok());
  ASSERT_TRUE(connections_.remove("a").ok());
  EXPECT_TRUE(leases.release(old, ReleaseMode::kExpire).ok()) << "the holder lets go";
  clock_.advance(seconds(1));

  auto added = connections_.add(NewConnection{"a", "ws://h/second", "data.seq"});
  ASSERT_TRUE(added.ok()) << added.status().to_string();
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const Item expected{{"Pk", std::string("CONN#a")},
                      {"desired_state", std::string("STARTED")},
                      {"ws_url", std::string("ws://h/second")},
                      {"seq_field", std::string("data.seq")},
                      {"lease_expires_at_ms", int64_t{0}},
                      {"last_seq", int64_t{0}},
                      {"created_at_ms", now_ms},
                      {"lease_epoch", int64_t{1}}};
  EXPECT_EQ(stored("a"), expected) << "only the epoch is left of the old connection";
  EXPECT_EQ(*added, *parse_connection(expected));
  EXPECT_EQ(added->owner, "");
  EXPECT_EQ(added->token, "");
  EXPECT_EQ(added->last_error, "");
  auto got = connections_.get("a");
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(*got, *added);
  EXPECT_EQ(listed_ids(), std::vector<std::string>{"a"});

  // A late checkpoint of the old holder, conditioned on its owner and token,
  // does not land on the new connection.
  EXPECT_EQ(leases.fenced_write(old, Update().set("last_seq", int64_t{13})).status().code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(stored("a"), expected);

  EXPECT_EQ(lease_to(leases, "a", "worker-2").epoch, old.epoch + 1) << "the epoch went back";
}

TEST_F(ConnectionsTest, AnIdAddedAgainIsLiveAndRefusedAsTakenByTheNextAdd) {
  add("a");
  ASSERT_TRUE(connections_.remove("a").ok());  // never leased: free at once
  const Connection again = add("a", "ws://h/again");
  EXPECT_EQ(again.desired_state, DesiredState::kStarted);
  auto third = connections_.add(NewConnection{"a", "ws://h/third"});
  EXPECT_EQ(third.status().code(), Code::kAlreadyExists);
  EXPECT_EQ(third.status().message(), "a connection named 'a' already exists");
  EXPECT_EQ(*connections_.get("a"), again);
}

TEST_F(ConnectionsTest, ListIsSortedByIdAcrossStatesAndPages) {
  store_.page_limit_max = 2;  // several pages per state
  for (const std::string id : {"m", "b", "z", "a", "k", "c", "B"}) {
    add(id, "ws://h/" + id, /*stopped=*/id == "k" || id == "a" || id == "z");
    clock_.advance(seconds(1));
  }
  EXPECT_EQ(listed_ids(), (std::vector<std::string>{"B", "a", "b", "c", "k", "m", "z"}));
  auto all = connections_.list();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)[1].desired_state, DesiredState::kStopped);
  EXPECT_EQ((*all)[1].ws_url, "ws://h/a");
  EXPECT_EQ((*all)[2].desired_state, DesiredState::kStarted);
}

TEST_F(ConnectionsTest, ListShowsLeasesCheckpointsAndErrors) {
  add("a");
  add("b");
  LeaseConfig config;
  config.table = kConnectionsTable;
  LeaseManager leases(store_, clock_, random_, config);
  AcquireOptions options;
  options.owner = "worker-1";
  options.ttl = seconds(20);
  auto lease = leases.acquire(connection_key("b"), options);
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(leases
                  .fenced_write(*lease, Update()
                                            .set("last_seq", int64_t{9})
                                            .set("last_error", std::string("reset by peer"))
                                            .set("last_error_at_ms", int64_t{123}))
                  .ok());
  auto all = connections_.list();
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].owner, "");
  EXPECT_EQ((*all)[0].epoch, 0);
  const Connection& b = (*all)[1];
  EXPECT_EQ(b.owner, "worker-1");
  EXPECT_EQ(b.token, lease->token);
  EXPECT_EQ(b.epoch, 1);
  EXPECT_EQ(b.expires_at_ms, lease->expires_at_ms);
  EXPECT_EQ(b.heartbeat_at_ms, lease->heartbeat_at_ms);
  EXPECT_EQ(b.last_seq, 9);
  EXPECT_EQ(b.last_error, "reset by peer");
  EXPECT_EQ(b.last_error_at_ms, 123);
}

TEST_F(ConnectionsTest, AConnectionStoppedDuringTheListingIsListedOnce) {
  add("a");
  add("b");
  store_.after_query_of = "STARTED";
  store_.after_query = [&] {
    ASSERT_TRUE(connections_.set_desired("a", DesiredState::kStopped).ok());
  };
  auto all = connections_.list();
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, "a");
  EXPECT_EQ((*all)[0].desired_state, DesiredState::kStopped);  // the later read
  EXPECT_EQ((*all)[1].id, "b");
}

TEST_F(ConnectionsTest, ListRefusesAnItemThatIsNotAConnectionNamingIt) {
  add("a");
  Item odd{{"Pk", std::string("OTHER#x")},
           {"desired_state", std::string("STARTED")},
           {"lease_expires_at_ms", int64_t{0}}};
  ASSERT_TRUE(memory_->put(kConnectionsTable, odd, {}).ok());
  auto all = connections_.list();
  EXPECT_EQ(all.status().code(), Code::kInternal);
  EXPECT_TRUE(mentions(all.status(), "OTHER#x")) << all.status().message();
}

TEST_F(ConnectionsTest, OnlyOneOfTwoConcurrentAddsOfAnIdSucceeds) {
  for (int round = 0; round < 20; ++round) two_adds_race("c" + std::to_string(round));
}

TEST_F(ConnectionsTest, OnlyOneOfTwoConcurrentAddsOfARemovedIdSucceeds) {
  for (int round = 0; round < 20; ++round) {
    const std::string id = "r" + std::to_string(round);
    add(id);
    ASSERT_TRUE(connections_.remove(id).ok());
    two_adds_race(id);
  }
}

// ---------------------------------------------------------------- add_many

class AddManyTest : public ConnectionsTest {
 protected:
  void SetUp() override {
    ConnectionsTest::SetUp();
    ASSERT_TRUE(memory_->ensure_table(workers_table_spec()).ok());
  }

  // `n` connections, n0, n1, ...; every third STOPPED.
  static std::vector<NewConnection> numbered(size_t n) {
    std::vector<NewConnection> out;
    for (size_t i = 0; i < n; ++i) {
      const std::string id = "n" + std::to_string(i);
      out.push_back({id, "ws://h/" + id + "?from={next_seq}", "seq", i % 3 == 2});
    }
    return out;
  }

  AddedConnections add_many(std::span<const NewConnection> connections) {
    Result<AddedConnections> added = connections_.add_many(connections);
    EXPECT_TRUE(added.ok()) << added.status().to_string();
    return added.ok() ? *std::move(added) : AddedConnections{};
  }

  ConnectionCounts counts() {
    Result<ConnectionCounts> c = read_counts(*memory_, /*consistent=*/true);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? *c : ConnectionCounts{};
  }
};

TEST_F(AddManyTest, AddsEveryConnectionAsAddDoesAndCountsThemInOneWrite) {
  const std::vector<NewConnection> wanted = numbered(2 * kAddManyChunk + 50);
  const AddedConnections added = add_many(wanted);
  ASSERT_EQ(added.results.size(), wanted.size());
  for (const Status& s : added.results) EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(added.added, wanted.size());
  EXPECT_EQ(added.existing, 0u);
  EXPECT_EQ(store_.update_each_calls, 3) << "a chunk at a time";
  EXPECT_EQ(store_.writes, static_cast<int>(wanted.size()) + 1) << "the counts once";

  // The item add() writes, field for field.
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  EXPECT_EQ(stored("n2"), (Item{{"Pk", std::string("CONN#n2")},
                                {"desired_state", std::string("STOPPED")},
                                {"ws_url", std::string("ws://h/n2?from={next_seq}")},
                                {"seq_field", std::string("seq")},
                                {"lease_expires_at_ms", int64_t{0}},
                                {"last_seq", int64_t{0}},
                                {"created_at_ms", now_ms}}));
  auto via_add = connections_.add(NewConnection{"single", "ws://h/n0?from={next_seq}"});
  ASSERT_TRUE(via_add.ok()) << via_add.status().to_string();
  Item expected = stored("single");
  expected["Pk"] = std::string("CONN#n0");
  EXPECT_EQ(stored("n0"), expected);

  const ConnectionCounts c = counts();
  EXPECT_EQ(c.stopped, static_cast<int64_t>(wanted.size() / 3));
  EXPECT_EQ(c.started + c.stopped, static_cast<int64_t>(wanted.size()) + 1);
  EXPECT_EQ(c.gen, 2) << "one change of the counts for the bulk add, one for add()";
  EXPECT_EQ(listed_ids().size(), wanted.size() + 1);

  // Nothing to add: nothing written, the counts untouched.
  const int writes = store_.writes;
  const AddedConnections none = add_many({});
  EXPECT_TRUE(none.results.empty());
  EXPECT_EQ(store_.writes, writes);
}

TEST_F(AddManyTest, AnIdAlreadyThereIsReportedAndLeftAsItWas) {
  const Connection b = add("n1", "ws://h/first");
  const Item before = stored("n1");
  clock_.advance(seconds(5));
  const AddedConnections added = add_many(numbered(3));
  ASSERT_EQ(added.results.size(), 3u);
  EXPECT_TRUE(added.results[0].ok());
  EXPECT_EQ(added.results[1].code(), Code::kAlreadyExists);
  EXPECT_EQ(added.results[1].message(), "a connection named 'n1' already exists");
  EXPECT_TRUE(added.results[2].ok());
  EXPECT_EQ(added.added, 2u);
  EXPECT_EQ(added.existing, 1u);
  EXPECT_EQ(stored("n1"), before) << "not overwritten";
  EXPECT_EQ(*connections_.get("n1"), b);
  const ConnectionCounts c = counts();
  EXPECT_EQ(c.started, 2) << "add()'s and n0";
  EXPECT_EQ(c.stopped, 1) << "n2";

  // All there already: all reported, and the counts are not written.
  const int64_t gen = c.gen;
  const AddedConnections again = add_many(numbered(3));
  EXPECT_EQ(again.added, 0u);
  EXPECT_EQ(again.existing, 3u);
  EXPECT_EQ(counts().gen, gen);
}

TEST_F(AddManyTest, ABadConnectionAnywhereIsInvalidArgumentNamingItAndWritesNothing) {
  const std::vector<NewConnection> good = numbered(2 * kAddManyChunk);
  const std::vector<std::pair<NewConnection, std::string>> bad = {
      {{"a b", "ws://h/", "seq", false}, "'a b'"},
      {{"bad-url", "http://h/", "seq", false}, "connection 'bad-url'"},
      {{"bad-seq", "ws://h/", "a..b", false}, "connection 'bad-seq'"},
      {{"n7", "ws://h/twice", "seq", false}, "connection 'n7' is given more than once"},
  };
  for (const auto& [connection, said] : bad) {
    std::vector<NewConnection> batch = good;
    // Last, after two chunks' worth of good ones: checked before any is written.
    batch.push_back(connection);
    const Result<AddedConnections> added = connections_.add_many(batch);
    EXPECT_EQ(added.status().code(), Code::kInvalidArgument) << connection.id;
    EXPECT_TRUE(mentions(added.status(), said)) << added.status().message();
  }
  EXPECT_EQ(store_.writes, 0);
  EXPECT_TRUE(listed_ids().empty());
  EXPECT_EQ(counts().gen, 0);
}

TEST_F(AddManyTest, ARemovedIdIsTakenOverAsAddTakesItOver) {
  LeaseManager leases(store_, clock_, random_, connections_lease_config());
  // n0: removed while its holder holds it. n1: removed, and let go.
  add("n0");
  add("n1");
  const Lease held = lease_to(leases, "n0", "worker-1", seconds(20));
  const Lease old = lease_to(leases, "n1", "worker-1", seconds(20), std::string(32, 'e'));
  ASSERT_TRUE(leases.fenced_write(old, Update().set("last_seq", int64_t{12})).ok());
  ASSERT_TRUE(connections_.remove("n0").ok());
  ASSERT_TRUE(connections_.remove("n1").ok());
  ASSERT_TRUE(leases.release(old, ReleaseMode::kExpire).ok());
  const Item tombstone = stored("n0");
  clock_.advance(seconds(1));
  const int64_t gen = counts().gen;

  const AddedConnections added = add_many(numbered(2));
  ASSERT_EQ(added.results.size(), 2u);
  EXPECT_EQ(added.results[0].code(), Code::kAlreadyExists);
  EXPECT_EQ(added.results[0].message(),
            "connection 'n0' was removed and worker worker-1 still holds it (its lease ends by " +
                format_utc_ms(held.expires_at_ms) + "); add it again once it has let go");
  EXPECT_EQ(stored("n0"), tombstone) << "nothing written";
  ASSERT_TRUE(added.results[1].ok()) << added.results[1].to_string();
  EXPECT_EQ(stored("n1"), (Item{{"Pk", std::string("CONN#n1")},
                                {"desired_state", std::string("STARTED")},
                                {"ws_url", std::string("ws://h/n1?from={next_seq}")},
                                {"seq_field", std::string("seq")},
                                {"lease_expires_at_ms", int64_t{0}},
                                {"last_seq", int64_t{0}},
                                {"created_at_ms", to_unix_ms(clock_.wall_now())},
                                {"lease_epoch", int64_t{1}}}))
      << "only the epoch is left of the old connection";
  EXPECT_EQ(leases.fenced_write(old, Update().set("last_seq", int64_t{13})).status().code(),
            Code::kFailedPrecondition)
      << "the old holder's late write does not land";
  EXPECT_EQ(counts().gen, gen + 1);
  EXPECT_EQ(lease_to(leases, "n1", "worker-2").epoch, old.epoch + 1);

  // Once the held lease has expired, the next bulk add takes n0 over too.
  clock_.advance(seconds(20));
  const AddedConnections later = add_many(numbered(2));
  EXPECT_TRUE(later.results[0].ok()) << later.results[0].to_string();
  EXPECT_EQ(later.results[1].code(), Code::kAlreadyExists);
  EXPECT_EQ(lease_to(leases, "n0", "worker-2").epoch, held.epoch + 1);
}

TEST_F(AddManyTest, AStoreThatFailsAWriteIsNotGivenTheChunksAfterIt) {
  store_.fail_update_each = unavailable("the store is down");
  const std::vector<NewConnection> wanted = numbered(2 * kAddManyChunk + 1);
  const AddedConnections added = add_many(wanted);
  ASSERT_EQ(added.results.size(), wanted.size());
  EXPECT_EQ(added.added, 0u);
  EXPECT_EQ(store_.update_each_calls, 1);
  EXPECT_EQ(added.results[0].code(), Code::kUnavailable);
  EXPECT_EQ(added.results[0].message(), "cannot add connection 'n0': the store is down");
  const Status& unsent = added.results[kAddManyChunk];
  EXPECT_EQ(unsent.code(), Code::kUnavailable);
  EXPECT_TRUE(mentions(unsent, "'n" + std::to_string(kAddManyChunk) + "' was not added"))
      << unsent.message();
  EXPECT_EQ(added.results.back().code(), Code::kUnavailable);
  EXPECT_EQ(counts().gen, 0);

  // Written again once the store is back: all added.
  store_.fail_update_each = Status::ok_status();
  EXPECT_EQ(add_many(wanted).added, wanted.size());
}

TEST(ConnectionsWithoutTable, EveryCallSaysNotFoundUntilTheTableIsMade) {
  SimulatedClock clock;
  std::unique_ptr<ItemStore> store = store::make_memory_store();
  Connections connections(*store, clock);
  EXPECT_EQ(connections.get("a").status().code(), Code::kNotFound);
  EXPECT_EQ(connections.set_desired("a", DesiredState::kStarted).status().code(), Code::kNotFound);
  EXPECT_EQ(connections.remove("a").status().code(), Code::kNotFound);
  EXPECT_EQ(connections.set("a", ConnectionChange{"ws://h/", std::nullopt}).status().code(),
            Code::kNotFound);
  EXPECT_EQ(connections.inspect("a").status().code(), Code::kNotFound);
  EXPECT_EQ(connections.list().status().code(), Code::kNotFound);
  EXPECT_EQ(connections.add(NewConnection{"a", "ws://h/"}).status().code(), Code::kNotFound);
  ASSERT_TRUE(connections.ensure_table().ok());
  auto all = connections.list();
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

// ---------------------------------------------------------------- list pages

class ConnectionPagesTest : public ConnectionsTest {
 protected:
  std::vector<std::string> page_ids(const ListQuery& q, std::string* next_after = nullptr) {
    Result<ConnectionPage> page = connections_.list_page(q);
    EXPECT_TRUE(page.ok()) << page.status().to_string();
    std::vector<std::string> ids;
    if (!page.ok()) return ids;
    for (const Connection& c : page->items) ids.push_back(c.id);
    if (next_after != nullptr) *next_after = page->next_after;
    return ids;
  }
};

TEST_F(ConnectionPagesTest, PagesGoByIdAcrossBothStatesWithNoGapAndNoRepeat) {
  for (const char* id : {"e", "a", "c"}) add(id);
  for (const char* id : {"d", "b"}) add(id, "ws://h/", /*stopped=*/true);
  add("f");
  ASSERT_TRUE(connections_.remove("f").ok());  // a tombstone is not listed
  ListQuery q;
  q.limit = 2;
  std::string next;
  EXPECT_EQ(page_ids(q, &next), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(next, "b");
  q.after = next;
  EXPECT_EQ(page_ids(q, &next), (std::vector<std::string>{"c", "d"}));
  q.after = next;
  EXPECT_EQ(page_ids(q, &next), (std::vector<std::string>{"e"}));
  EXPECT_EQ(next, "") << "the last page";
  q = ListQuery{};
  q.state = DesiredState::kStopped;
  EXPECT_EQ(page_ids(q), (std::vector<std::string>{"b", "d"}));
}

TEST_F(ConnectionPagesTest, APrefixFindsItsIdsFromWhereverThePageBegins) {
  for (const char* id : {"a1", "b1", "b2", "b3", "c1"}) add(id);
  ListQuery q;
  q.prefix = "b";
  q.limit = 2;
  std::string next;
  EXPECT_EQ(page_ids(q, &next), (std::vector<std::string>{"b1", "b2"}));
  q.after = next;
  EXPECT_EQ(page_ids(q, &next), (std::vector<std::string>{"b3"}));
  EXPECT_EQ(next, "");
  q.after = "a9";  // before the prefix
  EXPECT_EQ(page_ids(q), (std::vector<std::string>{"b1", "b2"}));
  q.after = "c";  // after it
  EXPECT_TRUE(page_ids(q).empty());
  q = ListQuery{};
  q.prefix = "b2";
  EXPECT_EQ(page_ids(q), (std::vector<std::string>{"b2"}));
}

TEST_F(ConnectionPagesTest, AnOwnerFindsWhatItsSessionsHold) {
  ASSERT_TRUE(store_.ensure_table(workers_table_spec()).ok());
  for (const char* id : {"a", "b", "c", "d"}) add(id);
  LeaseConfig members_config;
  members_config.table = kWorkersTable;
  LeaseManager members(store_, clock_, random_, members_config);
  AcquireOptions joined;
  joined.owner = "w1";
  joined.ttl = seconds(30);
  joined.extra_update.set("kind", std::string(kWorkerKind));
  Result<Lease> session = members.acquire(worker_key("w1"), joined);
  ASSERT_TRUE(session.ok());
  LeaseManager leases(store_, clock_, random_, connections_lease_config());
  lease_to(leases, "c", "w1", seconds(600), session->token);
  lease_to(leases, "a", "w1", seconds(600), session->token);
  lease_to(leases, "b", "w2");  // another's, without a session
  ListQuery q;
  q.owner = "w1";
  EXPECT_EQ(page_ids(q), (std::vector<std::string>{"a", "c"}));
  q.limit = 1;
  std::string next;
  EXPECT_EQ(page_ids(q, &next), (std::vector<std::string>{"a"}));
  EXPECT_EQ(next, "a");
  q.owner = "nobody";
  EXPECT_TRUE(page_ids(q).empty());
}

TEST_F(ConnectionPagesTest, BadQueriesAreRefusedNamingTheParameter) {
  ListQuery q;
  q.limit = 0;
  EXPECT_TRUE(mentions(connections_.list_page(q).status(), "limit"));
  q.limit = kListPageMax + 1;
  EXPECT_EQ(connections_.list_page(q).status().code(), Code::kInvalidArgument);
  q = ListQuery{};
  q.prefix = "a b";
  EXPECT_TRUE(mentions(connections_.list_page(q).status(), "prefix"));
  q = ListQuery{};
  q.after = std::string(129, 'x');
  EXPECT_TRUE(mentions(connections_.list_page(q).status(), "after"));
  q = ListQuery{};
  q.state = DesiredState::kRemoved;
  EXPECT_TRUE(mentions(connections_.list_page(q).status(), "state"));
}

}  // namespace
}  // namespace leasehold::fleet
