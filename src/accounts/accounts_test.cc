// Accounts on the memory store and on an SQLite file: users, tokens,
// sessions, the sign-in limit, and what reaches the store. Argon2 runs at a
// lowered cost.
#include "accounts/accounts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "accounts/secrets.h"
#include "store/memory/memory_store.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store_wrapper.h"
#include "testing/faulty_store.h"
#include "testing/temp_dir.h"

namespace leasehold::accounts {
namespace {

namespace fs = std::filesystem;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr std::string_view kPassword = "correct horse battery";
constexpr std::string_view kAddress = "192.0.2.7";

// Counts the calls that reach the store and keeps every key written, so a
// test can list the whole table (the store has no scan) and see what went
// in. Single-threaded, as the tests are.
class WatchingStore final : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;

  int calls = 0;
  int writes = 0;
  int batch_gets = 0;
  // The next get() of this key (or batch_get() that asks for it) finds
  // nothing.
  std::string hide_once;
  // Runs once, right after the next get() of this key (or batch_get() that
  // asks for it): another process's write between a read and the write that
  // follows it.
  std::string after_get_key;
  std::function<void()> after_get;
  // False: the store says nothing of its changes (as DynamoDB), so every
  // check reads.
  bool stamps = true;

  std::optional<ChangeStamp> change_stamp() const override {
    return stamps ? StoreWrapper::change_stamp() : std::nullopt;
  }

  Result<Item> get(std::string_view table, const Key& key, bool consistent) override {
    ++calls;
    if (!hide_once.empty() && key.pk == hide_once) {
      hide_once.clear();
      return not_found("hidden by the test");
    }
    auto item = StoreWrapper::get(table, key, consistent);
    if (after_get && key.pk == after_get_key) std::exchange(after_get, nullptr)();
    return item;
  }
  Result<std::vector<Item>> batch_get(std::string_view table, std::span<const Key> keys) override {
    ++calls;
    ++batch_gets;
    auto items = StoreWrapper::batch_get(table, keys);
    const auto asks_for = [&](const std::string& pk) {
      return std::ranges::any_of(keys, [&](const Key& key) { return key.pk == pk; });
    };
    if (items.ok() && !hide_once.empty() && asks_for(hide_once)) {
      std::erase_if(*items, [&](const Item& item) {
        return std::get<std::string>(item.at("pk")) == hide_once;
      });
      hide_once.clear();
    }
    if (after_get && asks_for(after_get_key)) std::exchange(after_get, nullptr)();
    return items;
  }
  Status put(std::string_view table, const Item& item, const Condition& condition) override {
    count_write(Key{std::get<std::string>(item.at("pk")), ""});
    return StoreWrapper::put(table, item, condition);
  }
  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override {
    count_write(key);
    return StoreWrapper::update(table, key, update, condition);
  }
  Status remove(std::string_view table, const Key& key, const Condition& condition) override {
    count_write(key);
    return StoreWrapper::remove(table, key, condition);
  }
  Result<Page> query_index(std::string_view table, std::string_view index,
                           std::string_view hash_value, const KeyRange& range,
                           const QueryOptions& options) override {
    ++calls;
    return StoreWrapper::query_index(table, index, hash_value, range, options);
  }

  // Every item in `table` now, by key.
  std::map<std::string, Item> items(std::string_view table) {
    std::map<std::string, Item> out;
    for (const std::string& pk : keys_) {
      auto item = inner().get(table, Key{pk, ""}, true);
      if (item.ok()) out.emplace(pk, *item);
    }
    return out;
  }

 private:
  void count_write(const Key& key) {
    ++calls;
    ++writes;
    keys_.insert(key.pk);
  }
  std::set<std::string> keys_;
};

std::string text_of(const Item& item) {
  std::ostringstream out;
  for (const auto& [attr, value] : item) out << attr << "=" << describe(value) << ";";
  return out.str();
}

enum class Backend { kMemory, kSqlite };

class AccountsTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kSqlite) {
      tmp_.emplace("leasehold-accounts-test-");
      dir_ = tmp_->string();
      store::SqliteOptions sqlite;
      sqlite.path = db_path();
      auto opened = store::open_sqlite_store(sqlite);
      ASSERT_TRUE(opened.ok()) << opened.status().to_string();
      backend_ = std::move(*opened);
    } else {
      backend_ = store::make_memory_store();
    }
    faulty_ = std::make_unique<store::FaultyStore>(*backend_, fault_random_);
    store_ = std::make_unique<WatchingStore>(*faulty_);
    ASSERT_TRUE(store_->ensure_table(Accounts::table_spec()).ok());
    accounts_ = std::make_unique<Accounts>(*store_, clock_, random_, options());
  }
  void TearDown() override {
    accounts_.reset();
    store_.reset();
    faulty_.reset();
    backend_.reset();
    tmp_.reset();
  }

  std::string db_path() const { return dir_ + "/accounts.db"; }

  static AccountsOptions options() {
    AccountsOptions o;
    o.argon2_memory_kib = 64;
    o.argon2_passes = 1;
    o.session_ttl = minutes(10);
    o.slide_every = minutes(1);
    return o;
  }

  // Adds a user that must not exist yet; its first token.
  std::string add(const std::string& name, std::optional<std::string> password = std::nullopt,
                  bool admin = false) {
    auto added = accounts_->add_user(NewUser{name, "User " + name, admin, std::move(password)});
    EXPECT_TRUE(added.ok()) << added.status().to_string();
    return added.ok() ? added->token : "";
  }

  // A sign-in that must succeed; its session.
  Session sign_in(std::string_view name, std::string_view password = kPassword,
                  std::string_view address = kAddress) {
    SignIn result = accounts_->sign_in(name, password, address);
    EXPECT_TRUE(result.status.ok()) << result.status.to_string();
    EXPECT_TRUE(result.session.has_value());
    return result.session.value_or(Session{});
  }

  std::map<std::string, Item> items() { return store_->items("accounts"); }

  Code token_code(std::string_view token) {
    return accounts_->authenticate_token(token).status().code();
  }
  Code session_code(std::string_view id) {
    return accounts_->authenticate_session(id).status().code();
  }

  SimulatedClock clock_;
  SeededRandom random_{7};
  SeededRandom fault_random_{8};
  std::optional<leasehold::testing::TempDir> tmp_;  // for SQLite
  std::string dir_;
  std::unique_ptr<ItemStore> backend_;
  std::unique_ptr<store::FaultyStore> faulty_;
  std::unique_ptr<WatchingStore> store_;
  std::unique_ptr<Accounts> accounts_;
};

// ---------------------------------------------------------------- users and tokens

TEST_P(AccountsTest, AddUserReturnsTheUserAndATokenThatAuthenticatesIt) {
  auto added = accounts_->add_user(NewUser{"ann", "Ann Smith", true, std::string(kPassword)});
  ASSERT_TRUE(added.ok()) << added.status().to_string();
  const User ann{"ann", "Ann Smith", true, true};
  EXPECT_EQ(added->user, ann);
  EXPECT_TRUE(is_secret(added->token)) << added->token;
  auto user = accounts_->authenticate_token(added->token);
  ASSERT_TRUE(user.ok()) << user.status().to_string();
  EXPECT_EQ(*user, ann);
  EXPECT_EQ(*accounts_->get_user("ann"), ann);
}

TEST_P(AccountsTest, NewTokenGivesAnotherTokenAndTheFirstKeepsWorking) {
  const std::string first = add("bob");
  auto second = accounts_->new_token("bob");
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_NE(*second, first);
  EXPECT_EQ(accounts_->authenticate_token(*second)->name, "bob");
  EXPECT_EQ(accounts_->authenticate_token(first)->name, "bob");
  EXPECT_EQ(accounts_->new_token("nobody").status().code(), Code::kNotFound);
}

TEST_P(AccountsTest, ATakenNameIsAlreadyExistsAndChangesNothing) {
  const std::string token = add("ann", std::string(kPassword));
  const auto before = items();
  const int writes = store_->writes;
  auto again = accounts_->add_user(NewUser{"ann", "Another Ann", true, "other password"});
  EXPECT_EQ(again.status().code(), Code::kAlreadyExists);
  EXPECT_NE(again.status().message().find("'ann'"), std::string::npos) << again.status().message();
  EXPECT_EQ(store_->writes, writes);
  EXPECT_EQ(items(), before);
  EXPECT_EQ(accounts_->get_user("ann")->display_name, "User ann");
  EXPECT_EQ(accounts_->authenticate_token(token)->name, "ann");
  sign_in("ann");
}

TEST_P(AccountsTest, ARaceForANameLeavesOneUserAndNoStrayToken) {
  add("ann");
  const auto before = items();
  ASSERT_EQ(before.size(), 2u);  // the user and its token
  // Another process adds the name between this one's check and its write.
  store_->hide_once = "USER#ann";
  auto added = accounts_->add_user(NewUser{"ann", "Second", false, std::nullopt});
  EXPECT_EQ(added.status().code(), Code::kAlreadyExists);
  EXPECT_EQ(items(), before);
}

struct BadUser {
  std::string what;
  NewUser user;
};

std::vector<BadUser> bad_users() {
  const auto with = [](std::string name, std::string display, std::optional<std::string> pw) {
    return NewUser{std::move(name), std::move(display), false, std::move(pw)};
  };
  return {
      {"empty name", with("", "X", std::nullopt)},
      {"upper case", with("Ann", "X", std::nullopt)},
      {"leading dash", with("-ann", "X", std::nullopt)},
      {"leading dot", with(".ann", "X", std::nullopt)},
      {"space", with("a b", "X", std::nullopt)},
      {"slash", with("a/b", "X", std::nullopt)},
      {"unicode name", with("ännа", "X", std::nullopt)},
      {"newline", with("ann\n", "X", std::nullopt)},
      {"65 characters", with(std::string(65, 'a'), "X", std::nullopt)},
      {"empty display name", with("ann", "", std::nullopt)},
      {"long display name", with("ann", std::string(101, 'x'), std::nullopt)},
      {"control character", with("ann", "A\x01nn", std::nullopt)},
      {"tab", with("ann", "A\tnn", std::nullopt)},
      {"C1 control", with("ann", "A\xc2\x85nn", std::nullopt)},
      {"bad UTF-8", with("ann", "A\xffnn", std::nullopt)},
      {"overlong UTF-8", with("ann", "A\xc0\xafnn", std::nullopt)},
      {"surrogate", with("ann", "A\xed\xa0\x80nn", std::nullopt)},
      {"truncated UTF-8", with("ann", "Ann\xe2\x82", std::nullopt)},
      {"short password", with("ann", "Ann", "seven77")},
      {"empty password", with("ann", "Ann", "")},
      {"long password", with("ann", "Ann", std::string(1025, 'p'))},
  };
}

TEST_P(AccountsTest, BadInputIsInvalidArgumentAndWritesNothing) {
  for (const BadUser& bad : bad_users()) {
    auto added = accounts_->add_user(bad.user);
    EXPECT_EQ(added.status().code(), Code::kInvalidArgument) << bad.what;
    if (bad.user.password && !bad.user.password->empty()) {
      EXPECT_EQ(added.status().message().find(*bad.user.password), std::string::npos)
          << "the password was echoed: " << added.status().message();
    }
  }
  EXPECT_EQ(store_->writes, 0);
  EXPECT_EQ(store_->calls, 0) << "bad input must be refused before the store is asked";
  EXPECT_TRUE(accounts_->list_users()->empty());
}

TEST_P(AccountsTest, NamesAndDisplayNamesAtTheLimitsAreAccepted) {
  const std::string longest(64, 'z');
  add(longest);
  add("0.a_b-c");
  ASSERT_TRUE(accounts_->add_user(NewUser{"eve", std::string(100, 'e'), false, std::nullopt}).ok());
  ASSERT_TRUE(accounts_->add_user(NewUser{"zoe", "Zoë 東京 🎬", false, std::string(8, 'p')}).ok());
  EXPECT_EQ(accounts_->get_user("zoe")->display_name, "Zoë 東京 🎬");
  EXPECT_TRUE(accounts_->get_user(longest).ok());
}

TEST_P(AccountsTest, SetPasswordAndLookupsRefuseBadInputWithoutWriting) {
  add("ann", std::string(kPassword));
  const auto before = items();
  const int writes = store_->writes;
  const Status short_pw = accounts_->set_password("ann", "1234567");
  EXPECT_EQ(short_pw.code(), Code::kInvalidArgument);
  EXPECT_EQ(short_pw.message().find("1234567"), std::string::npos) << short_pw.message();
  EXPECT_EQ(accounts_->set_password("Ann", "long enough").code(), Code::kInvalidArgument);
  EXPECT_EQ(accounts_->set_password("nobody", "long enough").code(), Code::kNotFound);
  EXPECT_EQ(accounts_->get_user("").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(accounts_->new_token("a b").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(accounts_->remove_user("A").code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->writes, writes);
  EXPECT_EQ(items(), before);
  sign_in("ann");
}

TEST_P(AccountsTest, ListUsersGivesEveryUserByNameWithoutSecrets) {
  add("carol");
  add("alice", std::string(kPassword), /*admin=*/true);
  add("bob");
  auto users = accounts_->list_users();
  ASSERT_TRUE(users.ok()) << users.status().to_string();
  ASSERT_EQ(users->size(), 3u);
  EXPECT_EQ((*users)[0], (User{"alice", "User alice", true, true}));
  EXPECT_EQ((*users)[1], (User{"bob", "User bob", false, false}));
  EXPECT_EQ((*users)[2].name, "carol");
}

TEST_P(AccountsTest, MalformedAndUnknownTokensAreUnauthenticated) {
  const std::string token = add("ann");
  EXPECT_EQ(token_code(""), Code::kUnauthenticated);
  EXPECT_EQ(token_code("not a token"), Code::kUnauthenticated);
  EXPECT_EQ(token_code(token.substr(1)), Code::kUnauthenticated);
  std::string upper = token;
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(token_code(upper), Code::kUnauthenticated);
  EXPECT_EQ(token_code(std::string(64, '0')), Code::kUnauthenticated);
  const Status unknown = accounts_->authenticate_token(std::string(64, 'a')).status();
  EXPECT_EQ(unknown.message().find(std::string(64, 'a')), std::string::npos) << unknown.message();
}

TEST_P(AccountsTest, ARevokedTokenStopsWorkingAtOnce) {
  const std::string token = add("ann");
  const std::string kept = *accounts_->new_token("ann");
  ASSERT_EQ(token_code(token), Code::kOk);
  // Another process removes the token's item: no cache keeps it alive.
  ASSERT_TRUE(backend_->remove("accounts", Key{"TOKEN#" + sha256_hex(token), ""}, {}).ok());
  EXPECT_EQ(token_code(token), Code::kUnauthenticated);
  EXPECT_EQ(token_code(kept), Code::kOk);
}

TEST_P(AccountsTest, AfterTheFirstCheckATokenAndItsUserAreReadInOneBatch) {
  store_->stamps = false;
  const std::string token = add("ann");
  ASSERT_EQ(token_code(token), Code::kOk);
  const int calls = store_->calls;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(token_code(token), Code::kOk);
  EXPECT_EQ(store_->calls - calls, 3);
  EXPECT_EQ(store_->batch_gets, 3);
}

// On a store with change stamps, a check stands until anything is written
// (here, by another process, to an item that has nothing to do with it).
TEST_P(AccountsTest, WhileTheStoreIsUnchangedATokenCheckReadsNothing) {
  const std::string token = add("ann");
  ASSERT_TRUE(backend_->change_stamp().has_value()) << "memory and SQLite have stamps";
  ASSERT_EQ(token_code(token), Code::kOk);
  int calls = store_->calls;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(token_code(token), Code::kOk);
  EXPECT_EQ(store_->calls - calls, 0);

  ASSERT_TRUE(backend_->put("accounts", Item{{"pk", "OTHER#1"}}, {}).ok());
  calls = store_->calls;
  const int batch_gets = store_->batch_gets;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(token_code(token), Code::kOk);
  EXPECT_EQ(store_->calls - calls, 1);
  EXPECT_EQ(store_->batch_gets - batch_gets, 1);
  EXPECT_EQ(accounts_->authenticate_token(token)->name, "ann");
}

// A revocation that lands while a check reads: that check may still pass
// (the two were concurrent), but what it found is not kept, because the
// stamp it keeps was taken before its read.
// On a store without change stamps (DynamoDB), a check for a request that
// only reads stands for recent_check_for; a check for a write always reads.
TEST_P(AccountsTest, WithoutStampsAReadersCheckStandsForRecentCheckForAndNoLonger) {
  store_->stamps = false;
  const std::string token = add("ann");
  const auto recent = [&] {
    return accounts_->authenticate_token(token, Recency::kRecent).status().code();
  };
  ASSERT_EQ(recent(), Code::kOk);
  int calls = store_->calls;
  clock_.advance(options().recent_check_for - seconds(1));
  for (int i = 0; i < 3; ++i) ASSERT_EQ(recent(), Code::kOk);
  EXPECT_EQ(store_->calls - calls, 0);
  ASSERT_EQ(token_code(token), Code::kOk);  // Recency::kExact
  EXPECT_EQ(store_->calls - calls, 1);

  // The exact check renewed it: it stands for another recent_check_for.
  calls = store_->calls;
  clock_.advance(options().recent_check_for - seconds(1));
  ASSERT_EQ(recent(), Code::kOk);
  EXPECT_EQ(store_->calls - calls, 0);
  clock_.advance(seconds(1));
  ASSERT_EQ(recent(), Code::kOk);
  EXPECT_EQ(store_->calls - calls, 1);
}

// What another process revokes counts for writes at once, and for reads
// once the recent check lapses or a check for a write has found it.
TEST_P(AccountsTest, WithoutStampsARevocationElsewhereCountsForReadsWithinRecentCheckFor) {
  store_->stamps = false;
  const std::string token = add("ann");
  const std::string other_token = add("bob");
  ASSERT_EQ(accounts_->authenticate_token(token, Recency::kRecent).status().code(), Code::kOk);
  ASSERT_EQ(accounts_->authenticate_token(other_token, Recency::kRecent).status().code(),
            Code::kOk);
  Accounts elsewhere(*store_, clock_, random_, options());
  ASSERT_TRUE(elsewhere.remove_user("ann").ok());
  ASSERT_TRUE(elsewhere.remove_user("bob").ok());

  EXPECT_EQ(accounts_->authenticate_token(token, Recency::kRecent).status().code(), Code::kOk);
  EXPECT_EQ(token_code(token), Code::kUnauthenticated);
  // That failure is not forgotten by the next read.
  EXPECT_EQ(accounts_->authenticate_token(token, Recency::kRecent).status().code(),
            Code::kUnauthenticated);
  clock_.advance(options().recent_check_for);
  EXPECT_EQ(accounts_->authenticate_token(other_token, Recency::kRecent).status().code(),
            Code::kUnauthenticated);
}

// What this process does counts for reads at once.
TEST_P(AccountsTest, WithoutStampsSignOutAndRemoveUserHereEndRecentChecksAtOnce) {
  store_->stamps = false;
  const std::string token = add("ann", std::string(kPassword));
  const Session session = sign_in("ann");
  const Session other = sign_in("ann");
  const auto recent_session = [&](const Session& s) {
    return accounts_->authenticate_session(s.id, Recency::kRecent).status().code();
  };
  ASSERT_EQ(recent_session(session), Code::kOk);
  ASSERT_EQ(recent_session(other), Code::kOk);
  ASSERT_EQ(accounts_->authenticate_token(token, Recency::kRecent).status().code(), Code::kOk);
  ASSERT_TRUE(accounts_->sign_out(session.id).ok());
  EXPECT_EQ(recent_session(session), Code::kUnauthenticated);
  EXPECT_EQ(recent_session(other), Code::kOk);
  ASSERT_TRUE(accounts_->remove_user("ann").ok());
  EXPECT_EQ(recent_session(other), Code::kUnauthenticated);
  EXPECT_EQ(accounts_->authenticate_token(token, Recency::kRecent).status().code(),
            Code::kUnauthenticated);
}

// A session's recent check never stands past the expiry it read.
TEST_P(AccountsTest, WithoutStampsARecentSessionCheckEndsWithTheSessionsExpiry) {
  store_->stamps = false;
  add("ann", std::string(kPassword));
  const Session session = sign_in("ann");
  clock_.advance(options().session_ttl - seconds(2));
  // This check slides the expiry, and keeps the one it read.
  ASSERT_EQ(accounts_->authenticate_session(session.id, Recency::kRecent).status().code(),
            Code::kOk);
  const int calls = store_->calls;
  clock_.advance(seconds(1));
  ASSERT_EQ(accounts_->authenticate_session(session.id, Recency::kRecent).status().code(),
            Code::kOk);
  EXPECT_EQ(store_->calls - calls, 0);
  clock_.advance(seconds(1));  // past the expiry it read (it was slid meanwhile)
  ASSERT_EQ(accounts_->authenticate_session(session.id, Recency::kRecent).status().code(),
            Code::kOk);
  EXPECT_GT(store_->calls - calls, 0);
}

TEST_P(AccountsTest, ATokenRevokedDuringACheckIsRefusedByTheNextOne) {
  const std::string token = add("ann");
  ASSERT_EQ(token_code(token), Code::kOk);  // its owner is known: one batch from here
  ASSERT_TRUE(backend_->put("accounts", Item{{"pk", "OTHER#1"}}, {}).ok());  // no check stands
  const std::string pk = "TOKEN#" + sha256_hex(token);
  store_->after_get_key = pk;
  store_->after_get = [&] { ASSERT_TRUE(backend_->remove("accounts", Key{pk, ""}, {}).ok()); };
  ASSERT_EQ(token_code(token), Code::kOk);
  ASSERT_FALSE(store_->after_get) << "the check read the store";
  EXPECT_EQ(token_code(token), Code::kUnauthenticated);
}

// What a process remembers of a token or session (its user's name) keeps
// nothing alive: every change another process makes counts at the next
// check.
TEST_P(AccountsTest, ChecksAfterTheFirstSeeEveryChangeAtOnce) {
  const std::string token = add("ann", std::string(kPassword), /*admin=*/true);
  const std::string revoked = *accounts_->new_token("ann");
  const Session session = sign_in("ann");
  ASSERT_EQ(accounts_->authenticate_token(token)->admin, true);
  ASSERT_EQ(token_code(revoked), Code::kOk);
  ASSERT_EQ(session_code(session.id), Code::kOk);

  // Demoted.
  Update demote;
  demote.set("admin", false);
  ASSERT_TRUE(backend_->update("accounts", Key{"USER#ann", ""}, demote, {}).ok());
  auto user = accounts_->authenticate_token(token);
  ASSERT_TRUE(user.ok()) << user.status().to_string();
  EXPECT_FALSE(user->admin);
  EXPECT_FALSE(accounts_->authenticate_session(session.id)->admin);

  // One token revoked.
  ASSERT_TRUE(backend_->remove("accounts", Key{"TOKEN#" + sha256_hex(revoked), ""}, {}).ok());
  EXPECT_EQ(token_code(revoked), Code::kUnauthenticated);
  EXPECT_EQ(token_code(token), Code::kOk);

  // The password changed: the session ends, the token stays.
  Accounts other(*store_, clock_, random_, options());
  ASSERT_TRUE(other.set_password("ann", "a new passphrase").ok());
  EXPECT_EQ(session_code(session.id), Code::kUnauthenticated);
  EXPECT_EQ(token_code(token), Code::kOk);

  // Removed, and the name taken again (a new generation), with the old
  // token's item put back as a cleanup that lagged would leave it.
  const Session second = sign_in("ann", "a new passphrase");
  ASSERT_EQ(session_code(second.id), Code::kOk);
  const Key key{"TOKEN#" + sha256_hex(token), ""};
  const Item stale = *backend_->get("accounts", key, true);
  ASSERT_TRUE(other.remove_user("ann").ok());
  EXPECT_EQ(token_code(token), Code::kUnauthenticated);
  EXPECT_EQ(session_code(second.id), Code::kUnauthenticated);
  ASSERT_TRUE(backend_->put("accounts", stale, {}).ok());
  ASSERT_TRUE(other.add_user(NewUser{"ann", "Ann again", true, std::nullopt}).ok());
  EXPECT_EQ(token_code(token), Code::kUnauthenticated);
}

TEST_P(AccountsTest, RemoveUserEndsItsTokensAndSessionsAtOnce) {
  const std::string token = add("ann", std::string(kPassword));
  const std::string other_token = add("bob", std::string(kPassword));
  const Session session = sign_in("ann");
  const Session other_session = sign_in("bob");
  // Removed through another instance, as another process would.
  Accounts other(*store_, clock_, random_, options());
  ASSERT_TRUE(other.remove_user("ann").ok());
  EXPECT_EQ(token_code(token), Code::kUnauthenticated);
  EXPECT_EQ(session_code(session.id), Code::kUnauthenticated);
  EXPECT_EQ(accounts_->get_user("ann").status().code(), Code::kNotFound);
  EXPECT_EQ(accounts_->remove_user("ann").code(), Code::kNotFound);
  EXPECT_EQ(accounts_->sign_in("ann", kPassword, kAddress).status.code(), Code::kUnauthenticated);
  // Nothing of ann is left; bob is untouched.
  for (const auto& [pk, item] : items()) {
    EXPECT_NE(text_of(item).find("=\"bob\""), std::string::npos) << pk << ": " << text_of(item);
  }
  EXPECT_EQ(token_code(other_token), Code::kOk);
  EXPECT_EQ(session_code(other_session.id), Code::kOk);
}

TEST_P(AccountsTest, AUserAddedAgainDoesNotInheritWhatTheOldOneLeft) {
  const std::string token = add("ann", std::string(kPassword));
  const Key key{"TOKEN#" + sha256_hex(token), ""};
  const Item stale = *backend_->get("accounts", key, true);
  ASSERT_TRUE(accounts_->remove_user("ann").ok());
  // The cleanup missed the token (an index that lagged), and the name is
  // taken again.
  ASSERT_TRUE(backend_->put("accounts", stale, {}).ok());
  add("ann", std::string(kPassword));
  EXPECT_EQ(token_code(token), Code::kUnauthenticated);
}

TEST_P(AccountsTest, AddUserWhoseReplyWasLostFindsItWasAdded) {
  faulty_->inject_next(store::Fault::kNone);       // the check for the name
  faulty_->inject_next(store::Fault::kNone);       // the token
  faulty_->inject_next(store::Fault::kDropReply);  // the user: applied, reply lost
  auto added = accounts_->add_user(NewUser{"ann", "Ann", false, std::nullopt});
  ASSERT_TRUE(added.ok()) << added.status().to_string();
  EXPECT_EQ(token_code(added->token), Code::kOk);
}

// ---------------------------------------------------------------- passwords and sessions

TEST_P(AccountsTest, WrongPasswordUnknownUserAndNoPasswordGetTheSameAnswer) {
  add("ann", std::string(kPassword));
  add("bob");  // tokens only
  std::set<std::string> messages;
  for (const auto& [name, password] :
       std::vector<std::pair<std::string, std::string>>{{"ann", "wrong password"},
                                                        {"ann", std::string(kPassword) + " "},
                                                        {"nobody", std::string(kPassword)},
                                                        {"bob", std::string(kPassword)},
                                                        {"Bad Name", std::string(kPassword)},
                                                        {"ann", ""}}) {
    const SignIn r = accounts_->sign_in(name, password, kAddress);
    EXPECT_EQ(r.status.code(), Code::kUnauthenticated) << name;
    EXPECT_FALSE(r.session.has_value());
    messages.insert(r.status.message());
    if (!password.empty()) {
      EXPECT_EQ(r.status.message().find(password), std::string::npos);
    }
  }
  EXPECT_EQ(messages.size(), 1u);
  sign_in("ann");
}

TEST_P(AccountsTest, SignInOpensASessionForTheUser) {
  add("ann", std::string(kPassword), /*admin=*/true);
  const Session session = sign_in("ann");
  EXPECT_TRUE(is_secret(session.id));
  EXPECT_EQ(session.user, (User{"ann", "User ann", true, true}));
  EXPECT_EQ(session.expires_at, clock_.wall_now() + minutes(10));
  auto user = accounts_->authenticate_session(session.id);
  ASSERT_TRUE(user.ok()) << user.status().to_string();
  EXPECT_EQ(*user, session.user);
  EXPECT_NE(sign_in("ann").id, session.id);
  EXPECT_EQ(session_code("nonsense"), Code::kUnauthenticated);
  EXPECT_EQ(session_code(std::string(64, 'f')), Code::kUnauthenticated);
}

TEST_P(AccountsTest, ASessionExpiresAfterItsTtlWithoutUse) {
  add("ann", std::string(kPassword));
  const Session used = sign_in("ann");
  const Session session = sign_in("ann");
  clock_.advance(minutes(10) - seconds(1));
  EXPECT_EQ(session_code(used.id), Code::kOk);  // and so slides
  clock_.advance(seconds(1));
  EXPECT_EQ(session_code(session.id), Code::kUnauthenticated);
  EXPECT_EQ(session_code(used.id), Code::kOk);
  // An expired session is cleared away when it is found.
  EXPECT_FALSE(items().contains("SESSION#" + sha256_hex(session.id)));
}

TEST_P(AccountsTest, ASessionInUseSlidesWritingAtMostOncePerSlideEvery) {
  add("ann", std::string(kPassword));
  const Session session = sign_in("ann");
  const std::string pk = "SESSION#" + sha256_hex(session.id);
  const int64_t signed_in_ms = to_unix_ms(clock_.wall_now());
  // Used every 10 s for 20 minutes: twice the ttl.
  int writes_before = store_->writes;
  for (int i = 0; i < 120; ++i) {
    clock_.advance(seconds(10));
    ASSERT_EQ(session_code(session.id), Code::kOk) << "after " << (i + 1) * 10 << " s";
  }
  const int slides = store_->writes - writes_before;
  EXPECT_GE(slides, 18);
  EXPECT_LE(slides, 20);  // one per minute at most
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const int64_t expires_ms = std::get<int64_t>(items().at(pk).at("expires_at_ms"));
  EXPECT_GT(expires_ms, signed_in_ms + 10 * 60'000);
  EXPECT_GE(expires_ms, now_ms + 9 * 60'000);
  EXPECT_LE(expires_ms, now_ms + 10 * 60'000);
  // Then idle: it expires ttl after its last slide.
  clock_.advance(std::chrono::milliseconds(expires_ms - now_ms));
  EXPECT_EQ(session_code(session.id), Code::kUnauthenticated);
}

TEST_P(AccountsTest, SignOutEndsTheSessionAndIsIdempotent) {
  add("ann", std::string(kPassword));
  const Session session = sign_in("ann");
  const Session other = sign_in("ann");
  ASSERT_TRUE(accounts_->sign_out(session.id).ok());
  EXPECT_EQ(session_code(session.id), Code::kUnauthenticated);
  EXPECT_EQ(session_code(other.id), Code::kOk);
  EXPECT_TRUE(accounts_->sign_out(session.id).ok());
  EXPECT_TRUE(accounts_->sign_out("not a session").ok());
}

TEST_P(AccountsTest, ASlideRacingASignOutDoesNotBringTheSessionBack) {
  add("ann", std::string(kPassword));
  const Session session = sign_in("ann");
  const std::string pk = "SESSION#" + sha256_hex(session.id);
  clock_.advance(minutes(2));  // due to slide
  // Another process signs the session out after this one has read it.
  store_->after_get_key = pk;
  store_->after_get = [&] { ASSERT_TRUE(backend_->remove("accounts", Key{pk, ""}, {}).ok()); };
  (void)accounts_->authenticate_session(session.id);
  EXPECT_FALSE(items().contains(pk));
  EXPECT_EQ(session_code(session.id), Code::kUnauthenticated);
}

TEST_P(AccountsTest, SetPasswordSignsEverySessionOutAndReplacesThePassword) {
  const std::string token = add("ann", std::string(kPassword));
  const Session first = sign_in("ann");
  const Session second = sign_in("ann");
  ASSERT_TRUE(accounts_->set_password("ann", "a new passphrase").ok());
  EXPECT_EQ(session_code(first.id), Code::kUnauthenticated);
  EXPECT_EQ(session_code(second.id), Code::kUnauthenticated);
  EXPECT_FALSE(items().contains("SESSION#" + sha256_hex(first.id)));
  EXPECT_EQ(token_code(token), Code::kOk) << "API tokens are not sessions";
  EXPECT_EQ(accounts_->sign_in("ann", kPassword, kAddress).status.code(), Code::kUnauthenticated);
  const Session third = sign_in("ann", "a new passphrase");
  EXPECT_EQ(session_code(third.id), Code::kOk);
}

TEST_P(AccountsTest, ASessionLeftBehindBySetPasswordIsRefused) {
  add("ann", std::string(kPassword));
  const Session session = sign_in("ann");
  const Key key{"SESSION#" + sha256_hex(session.id), ""};
  const Item stale = *backend_->get("accounts", key, true);
  ASSERT_TRUE(accounts_->set_password("ann", "a new passphrase").ok());
  ASSERT_TRUE(backend_->put("accounts", stale, {}).ok());  // the cleanup missed it
  EXPECT_EQ(session_code(session.id), Code::kUnauthenticated);
}

TEST_P(AccountsTest, AUserWithoutAPasswordGetsOneWithSetPassword) {
  add("bob");
  EXPECT_FALSE(accounts_->get_user("bob")->has_password);
  ASSERT_TRUE(accounts_->set_password("bob", std::string(kPassword)).ok());
  EXPECT_TRUE(accounts_->get_user("bob")->has_password);
  sign_in("bob");
}

// ---------------------------------------------------------------- the sign-in limit

TEST_P(AccountsTest, FailuresPerNameAreLimitedAndARefusalDoesNotTouchTheStore) {
  add("ann", std::string(kPassword));
  for (int i = 0; i < 5; ++i) {
    clock_.advance(seconds(1));
    EXPECT_EQ(accounts_->sign_in("ann", "wrong password", kAddress).status.code(),
              Code::kUnauthenticated);
  }
  // The right password from another address is refused too: the name is
  // locked, not the address.
  const int calls = store_->calls;
  const SignIn refused = accounts_->sign_in("ann", kPassword, "198.51.100.1");
  EXPECT_EQ(refused.status.code(), Code::kResourceExhausted);
  EXPECT_FALSE(refused.session.has_value());
  EXPECT_EQ(store_->calls, calls) << "a refused attempt must not reach the store";
  // The first failure ages out of the window 56 s from now.
  EXPECT_EQ(refused.retry_after, seconds(56));
  EXPECT_NE(refused.status.message().find("56 s"), std::string::npos) << refused.status.message();
  clock_.advance(seconds(55));
  EXPECT_EQ(accounts_->sign_in("ann", kPassword, kAddress).status.code(), Code::kResourceExhausted);
  clock_.advance(seconds(1));
  sign_in("ann");
  // Other names were never limited.
  add("bob", std::string(kPassword));
  sign_in("bob");
}

TEST_P(AccountsTest, FailuresPerAddressAreLimitedAcrossNames) {
  add("ann", std::string(kPassword));
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(accounts_->sign_in("guess" + std::to_string(i), "whatever1", kAddress).status.code(),
              Code::kUnauthenticated);
  }
  const SignIn refused = accounts_->sign_in("ann", kPassword, kAddress);
  EXPECT_EQ(refused.status.code(), Code::kResourceExhausted);
  EXPECT_EQ(refused.retry_after, minutes(1));
  sign_in("ann", kPassword, "198.51.100.1");  // another address is not limited
  clock_.advance(minutes(1));
  sign_in("ann", kPassword, kAddress);
}

TEST_P(AccountsTest, ASuccessClearsTheNameButNotTheAddress) {
  add("ann", std::string(kPassword));
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(accounts_->sign_in("ann", "wrong password", kAddress).status.code(),
                Code::kUnauthenticated);
    }
    sign_in("ann");
  }
  // 12 failures from kAddress so far; 8 more on other names fill its count.
  for (int i = 0; i < 8; ++i)
    (void)accounts_->sign_in("x" + std::to_string(i), "whatever1", kAddress);
  EXPECT_EQ(accounts_->sign_in("ann", kPassword, kAddress).status.code(), Code::kResourceExhausted);
}

TEST_P(AccountsTest, AStoreFailureDuringSignInIsNotCountedAsAFailure) {
  add("ann", std::string(kPassword));
  for (int i = 0; i < 10; ++i) {
    faulty_->inject_next(store::Fault::kUnavailable);
    EXPECT_EQ(accounts_->sign_in("ann", kPassword, kAddress).status.code(), Code::kUnavailable);
  }
  sign_in("ann");
}

// ---------------------------------------------------------------- what is stored

TEST_P(AccountsTest, StoredItemsHoldNoTokenSessionIdOrPassword) {
  const std::string new_password = "a new passphrase";
  std::vector<std::string> secrets = {std::string(kPassword), new_password};
  secrets.push_back(add("ann", std::string(kPassword)));
  secrets.push_back(*accounts_->new_token("ann"));
  secrets.push_back(sign_in("ann").id);
  ASSERT_TRUE(accounts_->set_password("ann", new_password).ok());
  secrets.push_back(sign_in("ann", new_password).id);
  clock_.advance(minutes(2));
  ASSERT_EQ(session_code(secrets.back()), Code::kOk);  // slid: written again

  const auto all = items();
  ASSERT_EQ(all.size(), 4u);  // the user, two tokens, one live session
  for (const auto& [pk, item] : all) {
    const std::string text = pk + " " + text_of(item);
    for (const std::string& secret : secrets) {
      EXPECT_EQ(text.find(secret), std::string::npos) << text;
    }
  }
  const std::string hash = std::get<std::string>(all.at("USER#ann").at("password_hash"));
  EXPECT_TRUE(hash.starts_with("$argon2id$v=19$m=64,t=1,p=1$")) << hash;
  if (GetParam() == Backend::kSqlite) {
    backend_.reset();  // closed, so that the WAL is checkpointed into the file
    faulty_.reset();
    store_.reset();
    accounts_.reset();
    for (const char* suffix : {"", "-wal"}) {
      std::ifstream file(db_path() + suffix, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(file)), {});
      for (const std::string& secret : secrets) {
        EXPECT_EQ(bytes.find(secret), std::string::npos) << "in accounts.db" << suffix;
      }
    }
  }
}

TEST_P(AccountsTest, TableSpecHasTheTwoIndexes) {
  const TableSpec spec = Accounts::table_spec("acc");
  EXPECT_EQ(spec.name, "acc");
  EXPECT_EQ(spec.pk_attr, "pk");
  EXPECT_EQ(spec.sk_attr, "");
  ASSERT_EQ(spec.indexes.size(), 2u);
  EXPECT_EQ(spec.indexes[0].hash_attr, "user");
  EXPECT_EQ(spec.indexes[1].hash_attr, "kind");
}

INSTANTIATE_TEST_SUITE_P(Backends, AccountsTest,
                         ::testing::Values(Backend::kMemory, Backend::kSqlite),
                         [](const auto& info) {
                           return info.param == Backend::kMemory ? "Memory" : "Sqlite";
                         });

// ---------------------------------------------------------------- the cryptography

TEST(SecretsTest, Sha256MatchesTheStandardVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(SecretsTest, SecretsAre64HexDigitsAndDiffer) {
  SeededRandom random(1);
  const std::string a = new_secret(random);
  const std::string b = new_secret(random);
  EXPECT_TRUE(is_secret(a));
  EXPECT_NE(a, b);
  EXPECT_FALSE(is_secret(a.substr(1)));
  EXPECT_FALSE(is_secret(a + "0"));
  EXPECT_FALSE(is_secret(std::string(63, 'a') + "g"));
}

TEST(SecretsTest, PasswordHashesVerifyOnlyTheirPasswordAndCarryTheirSalt) {
  const std::array<std::byte, kSaltBytes> salt1{std::byte{1}};
  const std::array<std::byte, kSaltBytes> salt2{std::byte{2}};
  const Argon2Cost cost{64, 1};
  const std::string h1 = *hash_password("hunter22", salt1, cost);
  EXPECT_NE(h1, *hash_password("hunter22", salt2, cost));
  EXPECT_EQ(verify_password(h1, "hunter22").value(), true);
  EXPECT_EQ(verify_password(h1, "hunter23").value(), false);
  EXPECT_EQ(verify_password(h1, "").value(), false);
  EXPECT_EQ(verify_password("not a hash", "hunter22").status().code(), Code::kInternal);
}

}  // namespace
}  // namespace leasehold::accounts
